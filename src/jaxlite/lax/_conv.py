"""Convolutions and windowed reductions (``jax.lax.conv_general_dilated``, ``conv``,
``conv_with_general_padding``, ``conv_transpose``, ``conv_dimension_numbers``,
``padtype_to_pads``, ``reduce_window``).

Layer: lax.  These wrappers resolve string dimension numbers and padding modes into the
explicit params of the primitives in ``primitives.conv`` and check what JAX checks up front.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes
from ..core.staging import trace_to_jaxpr
from ..core.trace import Tracer, get_aval
from ..primitives import conv as _cv
from ..primitives import elementwise as _e
from ..primitives import shape as _s
from ..primitives.conv import ConvDimensionNumbers

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "conv_transpose", "padtype_to_pads", "reduce_window"]


# ---- dimension numbers and padding ----------------------------------------------------

def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Canonical ``ConvDimensionNumbers`` for operands of shapes ``lhs_shape``/``rhs_shape``
    (``jax.lax.conv_dimension_numbers``).

    ``dimension_numbers`` is None (``('NCH..', 'OIH..', 'NCH..')``), a
    ``ConvDimensionNumbers`` (returned as is) or three strings such as
    ``('NHWC', 'HWIO', 'NHWC')``: 'N' batch, 'C' feature, 'O'/'I' kernel output/input
    features, any other distinct letters spatial dimensions, matched by letter; spatial
    dimensions are numbered in the order the kernel string lists them.

    Raises TypeError for ranks that differ (unless ``dimension_numbers`` is already a
    ``ConvDimensionNumbers``) or malformed strings (wrong length, missing N/C/O/I,
    duplicates, different spatial letters).
    """
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        # returned before any rank check, as JAX: two ranks then meet the primitive's
        # ValueError
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    nd = len(lhs_shape)
    if dimension_numbers is None:
        iota = tuple(range(nd))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (tuple, list)):
        raise TypeError(f"convolution dimension_numbers must be None, a ConvDimensionNumbers "
                        f"or a tuple of three strings, got {type(dimension_numbers).__name__}.")
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers must have three entries (lhs, rhs, "
                        f"out), got {dimension_numbers!r}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers entries must be strings, got "
                        f"{tuple(type(s).__name__ for s in dimension_numbers)}.")
    lhs_s, rhs_s, out_s = dimension_numbers
    for i, s in enumerate(dimension_numbers):
        if len(s) != nd:
            raise TypeError(f"convolution dimension_numbers[{i}] = {s!r} must have one letter "
                            f"per dimension of lhs and rhs (shapes {lhs_shape} and "
                            f"{rhs_shape}).")
        if len(set(s)) != len(s):
            raise TypeError(f"convolution dimension_numbers[{i}] = {s!r} repeats a letter.")
    for i, (s, a, b) in enumerate(((lhs_s, "N", "C"), (rhs_s, "O", "I"), (out_s, "N", "C"))):
        if a not in s or b not in s:
            raise TypeError(f"convolution dimension_numbers[{i}] = {s!r} must contain the "
                            f"letters {a!r} and {b!r}.")
    spatial = [c for c in rhs_s if c not in "OI"]
    if not (set(spatial) == set(lhs_s) - set("NC") == set(out_s) - set("NC")):
        raise TypeError(f"convolution dimension_numbers {tuple(dimension_numbers)} must use the "
                        f"same spatial letters in lhs, rhs and out.")
    return ConvDimensionNumbers(
        tuple(lhs_s.index(c) for c in ["N", "C"] + spatial),
        tuple(rhs_s.index(c) for c in ["O", "I"] + spatial),
        tuple(out_s.index(c) for c in ["N", "C"] + spatial))


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list:
    """Explicit ``(low, high)`` pads for padding mode ``padding`` ('SAME', 'SAME_LOWER' or
    'VALID', any case) of windows ``window_shape`` at ``window_strides`` over ``in_shape``
    (``jax.lax.padtype_to_pads``).  'SAME' keeps ``ceil(in / stride)`` positions, the odd
    pad element going high ('SAME_LOWER': low).

    Raises RuntimeError for an unknown mode, as JAX.
    """
    mode = padding.upper() if isinstance(padding, str) else padding
    if mode not in ("SAME", "SAME_LOWER", "VALID"):
        raise RuntimeError(f"unknown padding mode {padding!r}; the modes are VALID, SAME and "
                           f"SAME_LOWER (in any case)")
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        total = max((out - 1) * int(s) + int(k) - int(n), 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if mode == "SAME" else (big, small))
    return pads


def _explicit_pads(padding, count: int, what: str, count_exc=TypeError, form_exc=ValueError):
    try:
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        # JAX raises ValueError for the convolutions, TypeError for reduce_window
        raise form_exc(f"padding argument to {what} should be a string or a sequence of "
                       f"(low, high) integer pairs, got {padding!r}.") from None
    if len(pads) != count:
        raise count_exc(f"{what}: wrong number of explicit pads: expected {count}, got "
                        f"{len(pads)} ({padding!r}).")
    return pads


def _ints(v, what):
    return tuple(operator.index(i) for i in v)


def _canonical_pet(preferred_element_type):
    return None if preferred_element_type is None else \
        dtypes.explicit_dtype(preferred_element_type, "conv_general_dilated")


def _hashable_precision(precision):
    # checked and made a (lhs, rhs) pair of lax.Precision members, as dot_general's
    from ._precision import canonicalize_precision
    return canonicalize_precision(precision)


# ---- convolutions ----------------------------------------------------------------------

def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General N-d convolution (``jax.lax.conv_general_dilated``); no kernel flip
    (cross-correlation, as XLA).  ``out_sharding``: the result's sharding (as
    ``dot_general``'s).

    Args:
      lhs: input, rank ``n + 2`` (batch, feature and ``n`` spatial dims in the layout of
        ``dimension_numbers``; default NC + spatial).
      rhs: kernel of the same rank and dtype (out feature, in feature, spatial; default OI..).
      window_strides: ``n`` positive ints.
      padding: 'SAME', 'SAME_LOWER', 'VALID' or ``n`` (low, high) pairs (negatives cut).
      lhs_dilation, rhs_dilation: ``n`` positive ints (default 1s); lhs dilation is a
        transposed convolution's stride.
      dimension_numbers: see ``conv_dimension_numbers``.
      feature_group_count: grouped (depthwise) convolution: lhs features = groups * rhs in
        features; rhs out features are split into the groups.
      batch_group_count: the lhs batch is split into groups, each convolved with its share
        of the rhs out features (at most one of the two group counts may exceed 1).
      precision: accepted for compatibility (NumPy computes in the operand precision).
      preferred_element_type: result/accumulation dtype (e.g. int32 for int8 operands).

    Returns:
      Array of ``lhs``'s dtype (or ``preferred_element_type``) in ``out_spec`` layout, with
      spatial sizes ``(dilated_in + low + high - dilated_kernel) // stride + 1`` (at least 0).

    Raises:
      TypeError: mismatched ranks/dtypes, bad dimension numbers, wrong number of pads.
      ValueError: group counts that do not divide the feature/batch sizes, feature sizes that
        do not match, wrong number of strides/dilations, string padding with lhs dilation.
      RuntimeError: an unknown padding string.

    Example::

        >>> x = jnp.ones((1, 1, 4, 4)); k = jnp.ones((1, 1, 3, 3))
        >>> lax.conv_general_dilated(x, k, (1, 1), 'SAME')[0, 0, 0]   # [4., 6., 6., 4.]
    """
    if out_sharding is not None:
        from ._sharding_constraints import apply_out_sharding, out_sharding_of
        sh = out_sharding_of(out_sharding, "conv_general_dilated")
        return apply_out_sharding(conv_general_dilated(
            lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
            feature_group_count, batch_group_count, precision, preferred_element_type), sh)
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    dnums = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    nsp = lhs_aval.ndim - 2
    window_strides = _ints(window_strides, "window_strides")
    lhs_dilation = (1,) * nsp if lhs_dilation is None else _ints(lhs_dilation, "lhs_dilation")
    rhs_dilation = (1,) * nsp if rhs_dilation is None else _ints(rhs_dilation, "rhs_dilation")
    if len(window_strides) != nsp:
        raise ValueError(f"conv_general_dilated needs one window stride per spatial dimension "
                         f"({nsp}), got window_strides={window_strides}.")
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("conv_general_dilated: string padding is not supported with "
                             f"lhs_dilation={lhs_dilation}; give explicit (low, high) pads or "
                             "use conv_transpose.")
        in_sp = [lhs_aval.shape[a] for a in dnums.lhs_spec[2:]]
        k_sp = [(rhs_aval.shape[a] - 1) * d + 1
                for a, d in zip(dnums.rhs_spec[2:], rhs_dilation)]
        padding = padtype_to_pads(in_sp, k_sp, window_strides, padding)
    pads = _explicit_pads(padding, nsp, "conv_general_dilated")
    return _cv.conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=_hashable_precision(precision),
        preferred_element_type=_canonical_pet(preferred_element_type))


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` in NC.. / OI.. layout without dilation (``jax.lax.conv``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """``conv_general_dilated`` in NC.. / OI.. layout with dilations
    (``jax.lax.conv_with_general_padding``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_pads(k: int, s: int, padding):
    """(low, high) pads of the lhs-dilated convolution that transposes a forward conv with
    kernel extent ``k``, stride ``s`` and padding mode ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    elif isinstance(padding, tuple):
        low, total = k - padding[0] - 1, 2 * k - padding[0] - padding[1] - 2
    else:
        raise ValueError(f"conv_transpose: invalid padding mode {padding!r}")
    return low, total - low


_TRANSPOSE_DEFAULT_DN = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                         4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """Transposed ("deconvolution") N-d convolution: the lhs is dilated by ``strides``
    (``jax.lax.conv_transpose``, Keras Conv2DTranspose conventions).

    ``padding`` 'SAME'/'VALID' describes the forward convolution being transposed; explicit
    pairs are passed through as the lhs-dilated convolution's pads unless
    ``use_consistent_padding`` (then they are the forward conv's pads too).  Default
    layout is channels-last (``NHWC``, ``HWIO``).  ``transpose_kernel`` flips the spatial
    axes and swaps the kernel's feature axes (the gradient of ``conv_general_dilated``).

    Raises ValueError for operands of rank > 5 without ``dimension_numbers``; otherwise as
    ``conv_general_dilated``.
    """
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    nd = lhs_aval.ndim
    if dimension_numbers is None:
        if nd not in _TRANSPOSE_DEFAULT_DN:
            raise ValueError(f"conv_transpose has no default dimension_numbers for operands of "
                             f"rank {nd}; pass dimension_numbers.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DN[nd]
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    strides = _ints(strides, "strides")
    rhs_dilation = (1,) * (nd - 2) if rhs_dilation is None else _ints(rhs_dilation,
                                                                      "rhs_dilation")
    k_sp = [rhs_aval.shape[a] for a in dn.rhs_spec[2:]]
    if use_consistent_padding or padding in ("SAME", "VALID"):
        modes = [padding] * len(strides) if isinstance(padding, str) else \
            [tuple(p) for p in padding]
        pads = [_transpose_pads((k - 1) * d + 1, s, m)
                for k, d, s, m in zip(k_sp, rhs_dilation, strides, modes)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = _s.rev_p.bind(rhs, dimensions=tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        o, i = dn.rhs_spec[0], dn.rhs_spec[1]
        perm[o], perm[i] = perm[i], perm[o]
        rhs = _s.transpose_p.bind(rhs, permutation=tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# ---- reduce_window ---------------------------------------------------------------------

_MONOIDS = {"add": "sum", "max": "max", "min": "min"}
_MONOID_PRIM = {"sum": _e.add_p, "max": _e.max_p, "min": _e.min_p}
_RW_PRIM = {"sum": _cv.reduce_window_sum_p, "max": _cv.reduce_window_max_p,
            "min": _cv.reduce_window_min_p}


def _monoid_of(computation, dtype) -> str:
    """'sum', 'max' or 'min' when ``computation(a, b)`` is lax.add / max / min (found by
    tracing it on two scalars), else NotImplementedError naming it."""
    from .. import lax as _lax
    for fn, kind in ((_lax.add, "sum"), (_lax.max, "max"), (_lax.min, "min")):
        if computation is fn:
            return kind
    aval = get_aval(np.zeros((), dtype))
    try:
        jaxpr = trace_to_jaxpr(lambda a, b: [computation(a, b)], [aval, aval]).jaxpr
    except Exception:   # noqa: BLE001  (anything it fails on is "not recognised")
        jaxpr = None
    if jaxpr is not None and len(jaxpr.eqns) == 1 and not jaxpr.constvars:
        eqn = jaxpr.eqns[0]
        ins = set(map(id, jaxpr.invars))
        uses_both = len(eqn.invars) == 2 and set(map(id, eqn.invars)) == ins
        if uses_both and eqn.outvars[0] is jaxpr.outvars[0]:
            name = eqn.primitive.name
            if dtype == np.bool_:
                name = {"or": "max", "and": "min"}.get(name, name)
            if name in _MONOIDS:
                return _MONOIDS[name]
    what = getattr(computation, "__name__", repr(computation))
    raise NotImplementedError(f"lax.reduce_window: computation {what!r} is not supported; "
                              f"jaxlite implements reduce_window for lax.add, lax.max and "
                              f"lax.min only.")


def _generic_reduce_window(operands, init_values, computation, tree, wd, ws, pads, bd, wdil):
    """Any binary ``computation`` over the pytree ``tree`` of arrays (applied elementwise,
    as lax functions and lambdas over arrays are): each operand is padded and
    base-dilated with its init value, then the computation folds one strided slice per
    window offset into accumulators that start at the init values.  A composition of
    primitives, so it differentiates, batches and compiles like any other."""
    import itertools
    from .. import lax as _lax
    from ..tree_util import tree_flatten, tree_unflatten
    inits = []
    for x, init in zip(operands, init_values):
        aval = get_aval(x)
        # a Python scalar has its kind's default dtype, which has to be the operand's (JAX)
        if type(init) in (bool, int, float, complex) and \
                get_aval(init).dtype == aval.dtype:
            init = _lax.scalar_as(init, aval.dtype, aval.weak_type)
        if get_aval(init).shape != ():
            raise TypeError(f"reduce_window needs a scalar init_value, got shape "
                            f"{get_aval(init).shape}.")
        if get_aval(init).dtype != aval.dtype:
            raise TypeError(f"reduce_window: init_value must have the operand's dtype "
                            f"{aval.dtype.name}, not {get_aval(init).dtype.name}")
        inits.append(init)
    cfg = tuple((lo, hi, b - 1) for (lo, hi), b in zip(pads, bd))
    xs = [_s.pad_p.bind(x, i, padding_config=cfg) for x, i in zip(operands, inits)]
    shape = get_aval(xs[0]).shape
    span = [(w - 1) * d + 1 for w, d in zip(wd, wdil)]
    out_shape = [max(0, (n - sp) // st + 1) for n, sp, st in zip(shape, span, ws)]
    acc = [_s.broadcast_in_dim_p.bind(i, shape=tuple(out_shape), broadcast_dimensions=())
           for i in inits]
    if not all(out_shape):
        return acc
    for offs in itertools.product(*[range(w) for w in wd]):
        start = [o * d for o, d in zip(offs, wdil)]
        limit = [s0 + (m - 1) * st + 1 for s0, m, st in zip(start, out_shape, ws)]
        pieces = [_s.slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                                  strides=tuple(ws)) for x in xs]
        out = computation(tree_unflatten(tree, acc), tree_unflatten(tree, pieces))
        acc, otree = tree_flatten(out)
        if otree != tree:
            raise ValueError(f"reduce_window output must have the same tree structure as "
                             f"the operands {otree} vs. {tree}")
        for k, (r, x) in enumerate(zip(acc, xs)):
            if get_aval(r).dtype != get_aval(x).dtype or get_aval(r).shape != tuple(out_shape):
                raise TypeError(f"reduce_window: computation returned a value of type "
                                f"{get_aval(r).dtype.name}{list(get_aval(r).shape)} for "
                                f"operand {k} of type {get_aval(x).dtype.name}")
    return acc


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduces each window of ``operand`` with ``computation`` starting from ``init_value``
    (``jax.lax.reduce_window``, single operand): max pooling is ``computation=lax.max``
    with ``init_value=-inf``, sum/average pooling ``lax.add`` with 0.

    Args:
      operand: array of rank ``n``.
      init_value: scalar; combined once into every window's result (padding and the holes
        of ``base_dilation`` contribute nothing).
      computation: ``lax.add``, ``lax.max`` or ``lax.min`` (or a function that is just one
        of them, such as ``jnp.maximum``) run as windowed-reduction primitives; any other
        binary function of arrays (``lax.mul``, a lambda) is folded over the window
        offsets by composition.
      window_dimensions, window_strides (default 1s), base_dilation, window_dilation: ``n``
        positive ints each.
      padding: 'VALID' (default), 'SAME', 'SAME_LOWER' or ``n`` (low, high) pairs.

    Returns:
      Array of ``operand``'s dtype and weak type, ``n`` dims of size
      ``(dilated_in + low + high - dilated_window) // stride + 1`` (at least 0).

    Raises:
      TypeError: wrong number of window entries, non-positive window sizes/strides.
      RuntimeError: an unknown padding string.
    """
    from ..tree_util import tree_flatten, tree_unflatten
    flat, tree = tree_flatten(operand)
    flat_inits, itree = tree_flatten(init_value)
    if tree != itree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} "
                         f"vs. {itree}")
    variadic = tree_unflatten(tree, [0] * tree.num_leaves) != 0
    if variadic:
        from .. import numpy as _jnp
        flat = [_jnp.asarray(x) for x in flat]
        if not flat or len({get_aval(x).shape for x in flat}) > 1:
            raise ValueError(f"reduce_window: the operands must all have one shape, got "
                             f"{[get_aval(x).shape for x in flat]}")
        operand = flat[0]
    aval = get_aval(operand)
    nd = aval.ndim
    wd = _ints(window_dimensions, "window_dimensions")
    ws = (1,) * len(wd) if window_strides is None else _ints(window_strides, "window_strides")
    bd = (1,) * len(wd) if base_dilation is None else _ints(base_dilation, "base_dilation")
    wdil = (1,) * len(wd) if window_dilation is None else _ints(window_dilation,
                                                                "window_dilation")
    if len(wd) != nd:
        raise TypeError(f"reduce_window got {len(wd)} window_dimensions {wd} for operand of "
                        f"shape {aval.shape}; give one per dimension.")
    if len(ws) != len(wd):
        raise TypeError(f"reduce_window got window_strides {ws} and window_dimensions {wd} of "
                        f"different lengths.")
    for what, v in (("base_dilation", bd), ("window_dilation", wdil)):
        if len(v) != nd:
            raise TypeError(f"reduce_window got {len(v)} {what} {v} for operand of shape "
                            f"{aval.shape}; give one per dimension.")
    # checked here for every path: the composed one (variadic, or a computation that is no
    # monoid) has no primitive of its own to check them (a zero stride divided by zero, a
    # zero window gave the init value silently)
    from ..primitives.conv import _check_positive
    for what, v in (("window_dimensions", wd), ("window_strides", ws),
                    ("base_dilation", bd), ("window_dilation", wdil)):
        _check_positive("reduce_window", what, v)
    if isinstance(padding, str):
        padding = padtype_to_pads(aval.shape, [(w - 1) * d + 1 for w, d in zip(wd, wdil)], ws,
                                  padding)
    pads = _explicit_pads(padding, nd, "reduce_window", ValueError, TypeError)
    if variadic:
        return tree_unflatten(tree, _generic_reduce_window(flat, flat_inits, computation, tree,
                                                           wd, ws, pads, bd, wdil))
    try:
        kind = _monoid_of(computation, aval.dtype)
    except NotImplementedError:
        kind = None
    if kind is None:        # outside the except block: its errors have nothing chained
        return _generic_reduce_window([operand], [init_value], computation, tree, wd, ws,
                                      pads, bd, wdil)[0]
    out = _RW_PRIM[kind].bind(operand, window_dimensions=wd, window_strides=ws, padding=pads,
                              base_dilation=bd, window_dilation=wdil)
    init_aval = get_aval(init_value)
    if init_aval.shape != ():
        raise TypeError(f"reduce_window needs a scalar init_value, got shape "
                        f"{init_aval.shape}.")
    # As JAX: an init_value equal to the identity of its own dtype (0, -inf, ...) gives the
    # plain windowed reduction; any other must have the operand's dtype and is combined
    # once into every window.
    if not isinstance(init_value, Tracer):
        v = np.asarray(init_value)
        if v == _cv.identity_of(kind, init_aval.dtype):
            return out
    if init_aval.dtype != aval.dtype:
        raise TypeError(f"reduce_window: init_value must have the operand's dtype "
                        f"{aval.dtype.name}, not {init_aval.dtype.name}")
    init = init_value
    if type(init) in (bool, int, float, complex):
        from .. import lax as _lax
        init = _lax.scalar_as(init, aval.dtype, aval.weak_type)
    out_aval = get_aval(out)
    init = _s.broadcast_in_dim_p.bind(init, shape=out_aval.shape, broadcast_dimensions=(),
                                      sharding=None)
    return _MONOID_PRIM[kind].bind(out, init)
