"""The rest of ``jax.lax``'s array functions, as compositions of jaxlite's primitives:
creation and shape helpers, bit counting and high-half products, ``reduce_precision``,
``reduce`` with any computation, approximate top-k (exact on CPU, as JAX's), ragged dots,
and the shape arithmetic of convolutions and windowed reductions.

Layer: lax.  Nothing here declares a primitive; every function differentiates, batches and
compiles through the primitives it is made of.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import dtypes
from ..core.trace import Tracer, get_aval
from ..primitives.conv import _window_out
from ..primitives.precision import reduce_precision_p


def _lax():
    from .. import lax
    return lax


def _jnp():
    from .. import numpy as jnp
    return jnp


# ---- creation and shapes --------------------------------------------------------------

def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (``jax.lax.full``); its
    dtype is ``dtype``, else ``fill_value``'s (a Python scalar gives a weakly typed
    result).  ``sharding`` (a Sharding or a Device) places the result there, as
    ``jnp.full(..., device=sharding)``.  Raises TypeError for a non-scalar ``fill_value``."""
    lax = _lax()
    shape = tuple(int(d) for d in (shape if np.ndim(shape) else (shape,)))
    if np.ndim(fill_value) != 0 and get_aval(fill_value).shape != ():
        raise TypeError(f"full must be called with scalar fill_value, got "
                        f"fill_value.shape {get_aval(fill_value).shape}.")
    if dtype is None:
        fill = fill_value if isinstance(fill_value, Tracer) else _jnp().asarray(fill_value)
    else:
        fill = lax.convert_element_type(fill_value, dtypes.canonicalize_dtype(dtype))
    out = lax.broadcast(fill, shape)
    if sharding is not None:
        from ..numpy._creation import _place
        if out.weak_type and not isinstance(out, Tracer):
            out = lax._convert(out, out.dtype, False)    # eager JAX: placed = strong type
        out = _place(out, sharding)
    return out


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` (``jax.lax.empty``); its contents are zeros.
    ``out_sharding``: as ``jnp.zeros``'s (JAX's errors, naming ``lax.empty``)."""
    if out_sharding is None:
        return full(shape, 0, dtype)
    from ._sharding_constraints import apply_out_sharding, out_sharding_of
    sh = out_sharding_of(out_sharding, "lax.empty")
    return apply_out_sharding(full(shape, 0, dtype), sh, "lax.empty")


def tile(operand, reps: Sequence[int]):
    """``operand`` repeated ``reps[i]`` times along each dimension ``i``
    (``jax.lax.tile``); TypeError unless ``len(reps) == operand.ndim``."""
    jnp = _jnp()
    operand = jnp.asarray(operand)
    reps = tuple(int(r) for r in reps)
    nd = get_aval(operand).ndim
    if len(reps) != nd:
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)="
                        f"{len(reps)} and x.ndim={nd}.")
    return jnp.tile(operand, reps)


def stack(operands, axis: int = 0):
    """The operands (equal shapes and dtypes) stacked along a new ``axis``
    (``jax.lax.stack``): one ``stack`` equation.  ValueError for no operands, differing
    shapes or an out-of-range axis; TypeError for differing dtypes."""
    from ..primitives.shape import stack_p
    operands = list(operands)
    if not operands:
        raise ValueError("stack expects at least one operand, got 0.")
    nd = get_aval(operands[0]).ndim
    axis = _axis(axis, nd + 1, "stack")
    return stack_p.bind(*operands, axis=axis)


def unstack(x, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple (``jax.lax.unstack``): one
    ``unstack`` equation.  ValueError for a 0-d ``x`` or an out-of-range axis."""
    from ..primitives.shape import unstack_p
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError(f"unstack requires arrays with rank > 0, however a scalar array of "
                         f"shape {aval.shape} was passed.")
    axis = _axis(axis, aval.ndim, "unstack")
    return tuple(unstack_p.bind(x, axis=axis))


def split(operand, sizes: Sequence[int], axis: int = 0):
    """``operand`` cut along ``axis`` into pieces of ``sizes`` (``jax.lax.split``), a list:
    one ``split`` equation.  ValueError unless the sizes (each >= 0) add up to the
    dimension."""
    from ..primitives.shape import split_p
    aval = get_aval(operand)
    axis = _axis(axis, aval.ndim, "split")
    return list(split_p.bind(operand, sizes=tuple(sizes), axis=axis))


def _axis(axis, nd, name):
    axis = int(axis)
    if not -nd <= axis < nd:
        raise ValueError(f"{name}: axis {axis} is out of bounds for rank {nd}")
    return axis % nd


def reciprocal(x):
    """``1 / x`` elementwise (``jax.lax.reciprocal``): ``integer_pow(x, -1)``, so integer
    operands raise TypeError as in JAX."""
    return _lax().integer_pow(x, -1)


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """``operand`` with dimensions ``[start_dimension, stop_dimension)`` merged into one
    (``jax.lax.collapse``; ``stop_dimension`` None: to the end)."""
    lax = _lax()
    shape = get_aval(operand).shape
    nd = len(shape)
    lo = int(start_dimension) % nd if nd else 0
    hi = nd if stop_dimension is None else int(stop_dimension)
    hi = hi + nd if hi < 0 else hi
    if not 0 <= lo <= hi <= nd:
        raise ValueError(f"collapse: dimensions [{start_dimension}, {stop_dimension}) out "
                         f"of range for shape {shape}")
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return lax.reshape(operand, shape[:lo] + (size,) + shape[hi:])


def dtype(x):
    """The canonical dtype of ``x`` (``jax.lax.dtype``): an array's, or a Python or NumPy
    scalar's or type's under the current x64 setting."""
    if isinstance(x, type) or isinstance(x, (str, np.dtype)):
        return dtypes.canonicalize_dtype(x)
    return dtypes.canonicalize_dtype(get_aval(x).dtype)


def broadcast_like(arr, like_arr):
    """``arr`` broadcast to ``like_arr``'s shape (``jax.lax.broadcast_like``)."""
    return _jnp().broadcast_to(arr, get_aval(like_arr).shape)


def broadcast_shapes(*shapes):
    """The NumPy broadcast of ``shapes`` (``jax.lax.broadcast_shapes``), a tuple; ValueError
    when they do not broadcast."""
    return tuple(_jnp().broadcast_shapes(*shapes))


def broadcast_to_rank(x, rank: int):
    """``x`` with leading size-1 dimensions added up to ``rank``
    (``jax.lax.broadcast_to_rank``); unchanged when it already has that many."""
    lax = _lax()
    nd = get_aval(x).ndim
    if nd >= rank:
        return _jnp().asarray(x)
    return lax.expand_dims(x, tuple(range(rank - nd)))


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product (``jax.lax.batch_matmul``): ``[..., m, k] @ [..., k, n]`` with
    equal batch dimensions; ValueError for different ranks or ranks below 2, TypeError
    (from ``dot_general``) for different batch or contracting dimensions."""
    lax = _lax()
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {la.ndim}, "
                         f"{ra.ndim}")
    if la.ndim < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {la.ndim}, "
                         f"{ra.ndim}")
    batch = tuple(range(la.ndim - 2))
    return lax.dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)),
                           precision=precision)


# ---- bits -----------------------------------------------------------------------------

def _unsigned(dt):
    return np.dtype(f"uint{np.dtype(dt).itemsize * 8}")


def _check_int(name, *xs):
    for x in xs:
        dt = get_aval(x).dtype
        if not dtypes.is_int(dt) or dt == np.bool_:
            raise TypeError(f"{name} does not accept dtype {np.dtype(dt).name}. Accepted "
                            f"dtypes are subtypes of integer.")


def clz(x):
    """The number of leading zero bits of each element (``jax.lax.clz``), in ``x``'s
    integer dtype and weak type (a Python int gives a weakly typed int32, as JAX's); the bit
    width for 0.  Raises TypeError for non-integer dtypes."""
    lax, jnp = _lax(), _jnp()
    x = jnp.asarray(x)
    _check_int("clz", x)
    dt = get_aval(x).dtype
    ut = _unsigned(dt)
    width = ut.itemsize * 8
    y = lax.bitcast_convert_type(x, ut) if dt != ut else x
    count = jnp.zeros(get_aval(y).shape, ut)
    step = width // 2
    while step:
        top_clear = lax.shift_right_logical(y, ut.type(width - step)) == 0
        count = jnp.where(top_clear, count + ut.type(step), count)
        y = jnp.where(top_clear, lax.shift_left(y, ut.type(step)), y)
        step //= 2
    count = jnp.where(y == 0, ut.type(width), count)
    count = lax.bitcast_convert_type(count, dt) if dt != ut else count
    # one elementwise op in JAX: a weakly typed operand (a Python int) gives a weak result
    from ..primitives.elementwise import convert_element_type_p
    return convert_element_type_p.bind(count, new_dtype=dt, weak_type=get_aval(x).weak_type)


def mulhi(x, y, /):
    """The high half of the double-width product of two integer arrays (``jax.lax.mulhi``):
    ``(x * y) >> bits`` computed exactly, signed or unsigned as the dtype is.  Raises
    TypeError for non-integer or different dtypes."""
    lax, jnp = _lax(), _jnp()
    x, y = jnp.asarray(x), jnp.asarray(y)
    _check_int("mulhi", x, y)
    dt = get_aval(x).dtype
    if get_aval(y).dtype != dt:
        raise TypeError(f"mulhi requires arguments to have the same dtypes, got "
                        f"{np.dtype(dt).name}, {get_aval(y).dtype.name}.")
    ut = _unsigned(dt)
    half = ut.itemsize * 4
    a = lax.bitcast_convert_type(x, ut) if dt != ut else x
    b = lax.bitcast_convert_type(y, ut) if dt != ut else y
    a, b = jnp.broadcast_arrays(a, b)
    mask, sh = ut.type((1 << half) - 1), ut.type(half)
    a_lo, a_hi = a & mask, lax.shift_right_logical(a, sh)
    b_lo, b_hi = b & mask, lax.shift_right_logical(b, sh)
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    cross = lax.shift_right_logical(lo_lo, sh) + (hi_lo & mask) + lo_hi
    hi = a_hi * b_hi + lax.shift_right_logical(hi_lo, sh) + lax.shift_right_logical(cross, sh)
    if dt != ut:   # two's complement: subtract the other operand where one is negative
        zero = ut.type(0)
        hi = hi - jnp.where(x < 0, b, zero) - jnp.where(y < 0, a, zero)
        hi = lax.bitcast_convert_type(hi, dt)
    # one binary op in JAX: weakly typed when both operands are (Python ints)
    from ..primitives.elementwise import convert_element_type_p
    return convert_element_type_p.bind(
        hi, new_dtype=dt, weak_type=get_aval(x).weak_type and get_aval(y).weak_type)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """``operand`` rounded to a float format with ``exponent_bits`` and ``mantissa_bits``
    and back (``jax.lax.reduce_precision``): mantissas round to nearest, ties to even;
    values beyond the format's range become signed infinities, values below its smallest
    normal signed zeros; NaN stays NaN.  Keeps the dtype and weak type; its derivative
    rounds the tangent the same way.  Float dtypes only (TypeError otherwise);
    ``exponent_bits >= 1`` and ``mantissa_bits >= 0`` (ValueError otherwise)."""
    lax = _lax()
    x = lax._as_array(operand)   # a Python float stays weakly typed
    aval = get_aval(x)
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"reduce_precision does not accept dtype {np.dtype(aval.dtype).name}. "
                        f"Accepted dtypes are subtypes of floating.")
    eb, mb = int(exponent_bits), int(mantissa_bits)
    if eb < 1 or mb < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits "
                         f">= 0, got {eb} and {mb}")
    return reduce_precision_p.bind(x, exponent_bits=eb, mantissa_bits=mb)


# ---- reduce ---------------------------------------------------------------------------

_MONOID_REDUCERS = {"add": "reduce_sum", "mul": "reduce_prod", "max": "reduce_max",
                    "min": "reduce_min", "and": "reduce_and", "or": "reduce_or",
                    "xor": "reduce_xor"}


def _identity(name, dt):
    """The identity of the monoid ``name`` over ``dt``, or None where it has none (the
    complex ``max``/``min``: no greatest complex number)."""
    dt = np.dtype(dt)
    if name == "add" or name == "or" or name == "xor":
        return np.zeros((), dt)
    if name == "mul":
        return np.ones((), dt)
    if name == "and":
        return np.array(True if dt == np.bool_ else -1).astype(dt)
    big = name == "min"
    if dtypes.is_float(dt):
        return np.array(np.inf if big else -np.inf, dt)
    if dt == np.bool_:
        return np.array(big)
    if dt.kind == "c":
        return None
    info = np.iinfo(dt)
    return np.array(info.max if big else info.min, dt)


def _single_primitive(computation, aval):
    """The name of the one binary primitive ``computation`` applies to its two scalar
    arguments, or None."""
    from ..core.staging import trace_to_jaxpr
    try:
        jaxpr = trace_to_jaxpr(lambda a, b: [computation(a, b)], [aval, aval]).jaxpr
    except Exception:   # noqa: BLE001  (anything it fails on is "not a monoid")
        return None
    if len(jaxpr.eqns) != 1 or jaxpr.constvars:
        return None
    eqn = jaxpr.eqns[0]
    if (len(eqn.invars) == 2 and set(map(id, eqn.invars)) == set(map(id, jaxpr.invars))
            and eqn.outvars[0] is jaxpr.outvars[0]):
        return eqn.primitive.name
    return None


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
    """Reduces ``operands`` over ``dimensions`` with ``computation`` (``jax.lax.reduce``).

    ``operands`` and ``init_values`` are matching pytrees of arrays and scalars;
    ``computation(acc, x)`` takes and returns such pytrees of (scalar) values and must be
    associative (the elements are combined pairwise in a tree, neighbours first).  A
    computation that is a single ``add``/``mul``/``max``/``min``/``and``/``or``/``xor``
    with its identity as the init value runs as that reduction primitive.

    Returns the reduced pytree: each array without ``dimensions``.

    ``out_sharding``: each result's sharding (as ``dot_general``'s).

    Raises:
      TypeError: operand and init pytrees that differ, or operands of different shapes.
      ValueError: a dimension out of range or repeated.
    """
    from ..tree_util import tree_flatten, tree_map, tree_unflatten
    if out_sharding is not None:
        from ._sharding_constraints import apply_out_sharding, out_sharding_of
        sh = out_sharding_of(out_sharding, "reduce")     # checked before any work
        return tree_map(lambda r: apply_out_sharding(r, sh),
                        reduce(operands, init_values, computation, dimensions))
    lax, jnp = _lax(), _jnp()
    xs, tree = tree_flatten(operands)
    inits, itree = tree_flatten(init_values)
    if tree != itree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} "
                         f"vs. {itree}")
    xs = [jnp.asarray(x) for x in xs]
    shapes = {get_aval(x).shape for x in xs}
    if len(shapes) > 1:
        raise ValueError(f"reduce: operands must have the same shape, got {sorted(shapes)}")
    if any(get_aval(i).shape != () for i in inits):
        raise ValueError(f"reduce found non-scalar initial value: "
                         f"{[get_aval(i).shape for i in inits]}")
    given = inits
    shape = get_aval(xs[0]).shape if xs else ()
    nd = len(shape)
    dims = tuple(int(d) for d in dimensions)
    if any(not 0 <= d < nd for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"reduce: dimensions {dims} out of range or repeated for operand "
                         f"shape {shape}")
    inits = [lax.convert_element_type(i, get_aval(x).dtype) if not isinstance(i, Tracer)
             and type(i) in (bool, int, float, complex) else i for i, x in zip(inits, xs)]
    if len(xs) == 1:
        aval = get_aval(np.zeros((), get_aval(xs[0]).dtype))
        name = _single_primitive(lambda a, b: computation(
            tree_unflatten(tree, [a]), tree_unflatten(tree, [b])), aval)
        name = {"max": "or", "min": "and"}.get(name, name) if aval.dtype == np.bool_ \
            and name in ("and", "or") else name
        if name in _MONOID_REDUCERS and not isinstance(inits[0], Tracer):
            ident = _identity(name, aval.dtype)
            if ident is not None and np.asarray(inits[0]).astype(aval.dtype) == ident:
                out = getattr(lax, _MONOID_REDUCERS[name])(xs[0], dims)
                return tree_unflatten(tree, [out])
    # the general case: reduced dims last and flattened, then pairwise halving.  Each init
    # value has its operand's dtype (a Python scalar its kind's default one), as in JAX
    for i, x in zip(given, xs):
        if get_aval(i).dtype != get_aval(x).dtype:
            raise TypeError(f"reduce operand dtypes should match corresponding initial value "
                            f"dtypes, got operand {get_aval(x).dtype.name} and initial value "
                            f"{get_aval(i).dtype.name}")
    keep = [d for d in range(nd) if d not in dims]
    n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    kept_shape = tuple(shape[d] for d in keep)
    flat = [lax.reshape(lax.transpose(x, tuple(keep) + dims), kept_shape + (n,)) for x in xs]

    def combine(a, b):
        out = computation(tree_unflatten(tree, a), tree_unflatten(tree, b))
        # only the leaves count, as in JAX: a list of operands may come back as a tuple
        leaves, otree = tree_flatten(out)
        if len(leaves) != len(xs):
            raise ValueError(f"reduce: computation returned {otree}, expected {tree}")
        for k, (r, x) in enumerate(zip(leaves, xs)):
            if get_aval(r).dtype != get_aval(x).dtype:
                raise ValueError(f"reduce: computation returned {get_aval(r).dtype.name} for "
                                 f"operand {k} of dtype {get_aval(x).dtype.name}")
        return leaves

    last = len(kept_shape)
    while n > 1:
        h = n // 2
        even = [lax.slice_in_dim(x, 0, 2 * h, 2, last) for x in flat]
        odd = [lax.slice_in_dim(x, 1, 2 * h, 2, last) for x in flat]
        merged = combine(even, odd)
        if n % 2:
            merged = [lax.concatenate([m, lax.slice_in_dim(x, n - 1, n, 1, last)], last)
                      for m, x in zip(merged, flat)]
        flat, n = merged, h + n % 2
    init_b = [jnp.broadcast_to(i, kept_shape) for i in inits]
    if n == 0:
        return tree_unflatten(tree, [jnp.asarray(i).astype(get_aval(x).dtype)
                                     for i, x in zip(init_b, xs)])
    return tree_unflatten(tree, combine(init_b, [lax.index_in_dim(x, 0, last, False)
                                                 for x in flat]))


# ---- approximate top-k (exact on CPU) -------------------------------------------------

def _approx_k(name, largest, operand, k, reduction_dimension, recall_target,
              reduction_input_size_override, aggregate_to_topk):
    lax, jnp = _lax(), _jnp()
    x = jnp.asarray(operand)
    aval = get_aval(x)
    if not dtypes.is_float(aval.dtype):
        raise ValueError(f"{name}: operand must be a floating type, got "
                         f"{np.dtype(aval.dtype).name}")
    dim = _axis(reduction_dimension, aval.ndim, name)
    k = int(k)
    if not 0 <= k <= aval.shape[dim]:
        raise ValueError(f"{name}: k={k} must be in [0, {aval.shape[dim]}] (the size of "
                         f"dimension {dim} of shape {aval.shape})")
    moved = jnp.moveaxis(x, dim, -1)
    if largest:
        vals, idx = lax.top_k(moved, k)
    else:
        # the k smallest, ascending, lowest index first among equal values (NaN last)
        order = jnp.argsort(moved, axis=-1, stable=True)[..., :k]
        idx = order.astype(np.int32)
        vals = jnp.take_along_axis(moved, order, axis=-1)
    return [jnp.moveaxis(vals, -1, dim), jnp.moveaxis(idx, -1, dim)]


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """``[values, indices]``: the ``k`` largest values along ``reduction_dimension`` and
    their int32 indices, descending (``jax.lax.approx_max_k``); exact on CPU, as JAX's CPU fallback is.  Float
    operands only (ValueError otherwise, and for ``k`` beyond the dimension)."""
    return _approx_k("approx_max_k", True, operand, k, reduction_dimension, recall_target,
                     reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """``[values, indices]``: the ``k`` smallest values along ``reduction_dimension`` and
    their int32 indices, ascending (``jax.lax.approx_min_k``); exact on CPU."""
    return _approx_k("approx_min_k", False, operand, k, reduction_dimension, recall_target,
                     reduction_input_size_override, aggregate_to_topk)


# ---- ragged dot -----------------------------------------------------------------------

def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """Grouped matrix product (``jax.lax.ragged_dot``): ``lhs [m, k]``'s rows come in
    consecutive groups of ``group_sizes [g]`` rows, and group ``i`` multiplies
    ``rhs[i]`` (``rhs [g, k, n]``); rows past ``sum(group_sizes)`` give zeros.  Returns
    ``[m, n]``; ``out_sharding`` its sharding (as ``dot_general``'s).  Raises TypeError
    for other ranks or mismatched sizes, NotImplementedError for ``group_offset`` (as JAX
    on CPU)."""
    lax, jnp = _lax(), _jnp()
    if group_offset is not None:
        raise NotImplementedError("ragged_dot: group_offset is not supported")
    la, ra, ga = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    if la.ndim != 2 or ra.ndim != 3 or ga.ndim != 1:
        raise TypeError(f"ragged_dot expects lhs [m, k], rhs [g, k, n] and group_sizes [g], "
                        f"got shapes {la.shape}, {ra.shape} and {ga.shape}")
    if la.shape[1] != ra.shape[1] or ra.shape[0] != ga.shape[0]:
        raise TypeError(f"ragged_dot: shapes {la.shape}, {ra.shape} and group_sizes "
                        f"{ga.shape} do not agree")
    ends = jnp.cumsum(group_sizes)
    row = jnp.arange(la.shape[0])
    group = jnp.sum(row[None, :] >= ends[:, None], axis=0)         # [m], g past the end
    member = (group[None, :] == jnp.arange(ra.shape[0])[:, None])   # [g, m]
    dt = jnp.result_type(lhs, rhs)
    masked = jnp.where(member[:, :, None], jnp.asarray(lhs, dt)[None], jnp.zeros((), dt))
    return lax.dot_general(masked, jnp.asarray(rhs, dt), (((0, 2), (0, 1)), ((), ())),
                           precision=precision, preferred_element_type=preferred_element_type,
                           out_sharding=out_sharding)


class RaggedDotDimensionNumbers:
    """The dimensions of a ``ragged_dot_general`` (``jax.lax.RaggedDotDimensionNumbers``):
    ``dot_dimension_numbers`` as ``dot_general``'s, the one ``lhs_ragged_dimensions`` of
    ``lhs`` whose entries come in groups, and the ``rhs_group_dimensions`` of ``rhs`` (one
    when the ragged dimension is a free one, none when it is contracting or batch).
    Immutable and hashable."""

    __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        (lc, rc), (lb, rb) = dot_dimension_numbers
        dn = tuple(tuple(tuple(int(i) for i in d) for d in pair)
                   for pair in ((lc, rc), (lb, rb)))
        object.__setattr__(self, "dot_dimension_numbers", dn)
        object.__setattr__(self, "lhs_ragged_dimensions",
                           tuple(int(i) for i in lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions",
                           tuple(int(i) for i in rhs_group_dimensions))

    def __setattr__(self, name, value):
        raise AttributeError(f"RaggedDotDimensionNumbers is immutable (setting {name!r})")

    def _key(self):
        return (self.dot_dimension_numbers, self.lhs_ragged_dimensions,
                self.rhs_group_dimensions)

    def __eq__(self, other):
        return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"RaggedDotDimensionNumbers(dot_dimension_numbers="
                f"{self.dot_dimension_numbers}, lhs_ragged_dimensions="
                f"{self.lhs_ragged_dimensions}, rhs_group_dimensions="
                f"{self.rhs_group_dimensions})")


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """``dot_general`` with one ragged dimension of ``lhs`` cut into consecutive groups of
    ``group_sizes [g]`` entries (``jax.lax.ragged_dot_general``).  Three modes, by the kind
    of ``lhs``'s ragged dimension:

    - a free dimension ``m``: group ``i``'s entries multiply ``rhs``'s slice ``i`` along its
      one group dimension; entries past ``sum(group_sizes)`` give zeros; the result is
      ``dot_general``'s without the group dimension.
    - a contracting dimension ``k``: group ``i`` contracts only its own entries; the result
      has a leading dimension of size ``g``.
    - a batch dimension: the groups change nothing, the result is ``dot_general``'s.

    Dtypes, ``precision`` and ``preferred_element_type`` as ``dot_general``'s.  Raises
    TypeError for other than one ragged dimension or a wrong number of rhs group
    dimensions (as JAX), NotImplementedError for ``group_offset`` and for ``group_sizes``
    of more than one dimension.
    """
    lax, jnp = _lax(), _jnp()
    rdn = ragged_dot_dimension_numbers
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported")
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if len(rdn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension, got "
                        f"{rdn.lhs_ragged_dimensions}.")
    (rag,) = rdn.lhs_ragged_dimensions
    la, ra, ga = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    if not 0 <= rag < la.ndim:
        raise TypeError(f"ragged_dot_general: lhs ragged dimension {rag} is out of range for "
                        f"lhs of shape {la.shape}")
    free = rag not in lc and rag not in lb
    if free and len(rdn.rhs_group_dimensions) != 1:
        raise TypeError("ragged_dot_general requires exactly one rhs group dimension when "
                        "lhs ragged dimension is noncontracting.")
    if not free and rdn.rhs_group_dimensions:
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when "
                        "lhs ragged dimension is contracting or batch.")
    if ga.ndim != 1:
        raise NotImplementedError(f"ragged_dot_general: group_sizes of shape {ga.shape}; "
                                  f"only one dimension [g] is supported")
    g = ga.shape[0]
    if free and ra.shape[rdn.rhs_group_dimensions[0]] != g:
        raise TypeError(f"ragged_dot_general: rhs group dimension of size "
                        f"{ra.shape[rdn.rhs_group_dimensions[0]]} for {g} groups")
    if rag in lb:
        return lax.dot_general(lhs, rhs, rdn.dot_dimension_numbers, precision,
                               preferred_element_type, out_sharding=out_sharding)
    # member[i, j]: entry j of the ragged dimension is in group i (none past the last)
    ends = jnp.cumsum(group_sizes)
    pos = jnp.arange(la.shape[rag])
    group = jnp.sum(pos[None, :] >= ends[:, None], axis=0)
    member = group[None, :] == jnp.arange(g)[:, None]                       # [g, n]
    shape = [g] + [1] * la.ndim
    shape[rag + 1] = la.shape[rag]
    x = jnp.asarray(lhs)
    masked = jnp.where(member.reshape(shape), x[None], jnp.zeros((), x.dtype))   # [g, ...]
    up = lambda t: tuple(i + 1 for i in t)  # noqa: E731
    if free:
        # the group dimension is contracted against rhs's
        (gd,) = rdn.rhs_group_dimensions
        dn = (((0,) + up(lc), (gd,) + tuple(rc)), (up(lb), tuple(rb)))
        return lax.dot_general(masked, rhs, dn, precision, preferred_element_type,
                               out_sharding=out_sharding)
    # contracting: one product per group, the groups a leading batch dimension
    y = jnp.broadcast_to(jnp.asarray(rhs)[None], (g,) + tuple(ra.shape))
    dn = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
    return lax.dot_general(masked, y, dn, precision, preferred_element_type,
                           out_sharding=out_sharding)


# ---- shape arithmetic ------------------------------------------------------------------

def _pads(in_sp, win_sp, strides, padding):
    if isinstance(padding, str):
        return [tuple(p) for p in _lax().padtype_to_pads(in_sp, win_sp, strides, padding)]
    return [tuple(int(v) for v in p) for p in padding]


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution of ``lhs_shape`` (N, C, spatial...) with
    ``rhs_shape`` (O, I, spatial...) (``jax.lax.conv_shape_tuple``): ``pads`` is a padding
    string or (low, high) pairs; each spatial size is ``(in + low + high - window) //
    stride + 1`` (at least 0).  TypeError for mismatched lengths."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"conv_shape_tuple: lhs {lhs_shape} and rhs {rhs_shape} must have the "
                        f"same rank")
    sp_in, sp_win = lhs_shape[2:], rhs_shape[2:]
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(sp_in):
        raise TypeError(f"conv_shape_tuple: {len(strides)} strides for {len(sp_in)} spatial "
                        f"dimensions")
    pads = _pads(sp_in, sp_win, strides, pads)
    if len(pads) != len(sp_in):
        raise TypeError(f"conv_shape_tuple: {len(pads)} padding pairs for {len(sp_in)} "
                        f"spatial dimensions")
    out = [_window_out(n, p, w, s, 1) for n, w, s, p in zip(sp_in, sp_win, strides, pads)]
    return (lhs_shape[0] // int(batch_group_count), rhs_shape[0]) + tuple(out)


def conv_general_permutations(dimension_numbers):
    """The permutations (lhs, rhs, out) that bring ``dimension_numbers``' layout strings
    (such as ``('NHWC', 'HWIO', 'NHWC')``) to N, C / O, I / N, C first, spatial dimensions
    in the order of the rhs string (``jax.lax.conv_general_permutations``).  TypeError for
    strings lacking the batch/feature letters."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    for i, (spec, a, b) in enumerate(((lhs_spec, "N", "C"), (rhs_spec, "O", "I"),
                                      (out_spec, "N", "C"))):
        if not isinstance(spec, str) or spec.count(a) != 1 or spec.count(b) != 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not len(lhs_spec) == len(rhs_spec) == len(out_spec):
        raise TypeError(f"convolution dimension_numbers must have the same length, got "
                        f"{dimension_numbers}")
    spatial = [c for c in rhs_spec if c not in "OI"]
    if sorted(spatial) != sorted(c for c in lhs_spec if c not in "NC") or \
            sorted(spatial) != sorted(c for c in out_spec if c not in "NC"):
        raise TypeError(f"convolution dimension_numbers' spatial letters must agree, got "
                        f"{dimension_numbers}")
    lhs = (lhs_spec.index("N"), lhs_spec.index("C")) + tuple(lhs_spec.index(c) for c in spatial)
    rhs = (rhs_spec.index("O"), rhs_spec.index("I")) + tuple(rhs_spec.index(c) for c in spatial)
    out = (out_spec.index("N"), out_spec.index("C")) + tuple(out_spec.index(c) for c in spatial)
    return lhs, rhs, out


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """``conv_shape_tuple`` for shapes in the layouts of ``dimension_numbers`` (strings)
    (``jax.lax.conv_general_shape_tuple``); the result is in the output layout."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lhs = tuple(lhs_shape[i] for i in lp)
    rhs = tuple(rhs_shape[i] for i in rp)
    out = conv_shape_tuple(lhs, rhs, window_strides, padding)
    return tuple(out[op.index(i)] for i in range(len(out)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of ``conv_transpose`` (``jax.lax.conv_transpose_shape_tuple``): each
    spatial size is ``(in - 1) * stride + 2 - window + low + high``, the pads from a string
    as ``conv_transpose`` computes them; the feature size is the rhs's 'O'."""
    from ._conv import _transpose_pads
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lhs = tuple(lhs_shape[i] for i in lp)
    rhs = tuple(rhs_shape[i] for i in rp)
    strides = tuple(int(s) for s in window_strides)
    if isinstance(padding, str):
        pads = [tuple(_transpose_pads(k, s, padding)) for k, s in zip(rhs[2:], strides)]
    else:
        pads = [tuple(int(v) for v in p) for p in padding]
    sp = [(n - 1) * s + 2 - k + lo + hi for n, k, s, (lo, hi)
          in zip(lhs[2:], rhs[2:], strides, pads)]
    out = (lhs[0], rhs[0]) + tuple(sp)
    return tuple(out[op.index(i)] for i in range(len(out)))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of ``reduce_window`` (``jax.lax.reduce_window_shape_tuple``):
    ``padding`` is (low, high) pairs; each size is ``(dilated_in + low + high -
    dilated_window) // stride + 1`` (at least 0)."""
    n = len(operand_shape)
    bd = base_dilation or (1,) * n
    wd = window_dilation or (1,) * n
    out = []
    for size, w, s, (lo, hi), b, d in zip(operand_shape, window_dimensions, window_strides,
                                           padding, bd, wd):
        span_in = (size - 1) * b + 1 if size else 0
        span_w = (w - 1) * d + 1
        out.append(max(0, (span_in + lo + hi - span_w) // s + 1))
    return tuple(out)


# ---- convolution patches and locally connected convolutions ----------------------------

def conv_general_dilated_patches(lhs, filter_shape: Sequence[int], window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                                 precision=None, preferred_element_type=None):
    """The receptive fields of a convolution as features
    (``jax.lax.conv_general_dilated_patches``): for ``lhs`` with ``C`` features, the
    result has ``C * prod(filter_shape)`` features (feature-major, then the window
    positions in row-major order) and the spatial size a convolution with a kernel of
    ``filter_shape`` would give.  Computed as that convolution with a 0/1 kernel, one group
    per input feature (so an inf or NaN in a window spreads to its neighbours' features,
    as in JAX).  Arguments and errors as ``conv_general_dilated``."""
    lax, jnp = _lax(), _jnp()
    lhs = jnp.asarray(lhs)
    aval = get_aval(lhs)
    filter_shape = tuple(int(f) for f in filter_shape)
    nsp = aval.ndim - 2
    if len(filter_shape) != nsp:
        raise ValueError(f"conv_general_dilated_patches: filter_shape {filter_shape} must have "
                         f"one entry per spatial dimension of lhs {aval.shape}")
    dn = lax.conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    c = aval.shape[dn.lhs_spec[1]]
    k = int(np.prod(filter_shape, dtype=np.int64))
    eye = np.eye(k, dtype=np.dtype(aval.dtype)).reshape((k, 1) + filter_shape)
    kernel_oihw = np.tile(eye, (c,) + (1,) * (nsp + 1))          # [c*k, 1, *filter]
    kernel = np.transpose(kernel_oihw, np.argsort(dn.rhs_spec))  # into the rhs layout
    return lax.conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                                    rhs_dilation, dn, feature_group_count=c,
                                    precision=precision,
                                    preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape: Sequence[int],
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """A locally connected (unshared) convolution (``jax.lax.conv_general_dilated_local``):
    every output position has its own kernel.  ``rhs`` holds, in the rhs layout of
    ``dimension_numbers``, out features ``O``, input features ``C * prod(filter_shape)``
    (ordered as ``conv_general_dilated_patches`` gives them) and the output's spatial
    sizes.  Returns the output in the out layout.  TypeError/ValueError for shapes that
    do not agree."""
    lax, jnp = _lax(), _jnp()
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    filter_shape = tuple(int(f) for f in filter_shape)
    dn = lax.conv_dimension_numbers(la.shape, (1, 1) + filter_shape, dimension_numbers)
    # the patches come out N, C*k, spatial... (the identity layouts), the kernel O, I, spatial
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
        type(dn)(dn.lhs_spec, tuple(range(la.ndim)), tuple(range(la.ndim))),
        precision=precision)
    kernel = jnp.transpose(rhs, dn.rhs_spec)
    pa, ka = get_aval(patches), get_aval(kernel)
    if ka.shape[1] != pa.shape[1] or ka.shape[2:] != pa.shape[2:]:
        raise ValueError(f"conv_general_dilated_local: rhs shape {ra.shape} must hold "
                         f"{pa.shape[1]} input features (C * prod(filter_shape)) and the "
                         f"output's spatial shape {pa.shape[2:]}")
    nsp = la.ndim - 2
    sp = tuple(range(2, 2 + nsp))
    # out[n, o, s] = sum_i patches[n, i, s] * kernel[o, i, s]: spatial dims batched
    out = lax.dot_general(patches, kernel, (((1,), (1,)), (sp, sp)), precision=precision)
    out = jnp.moveaxis(out, (nsp, nsp + 1), (0, 1))                  # N, O, spatial...
    return jnp.transpose(out, np.argsort(dn.out_spec))
