"""Windowed primitives: ``conv_general_dilated`` (N-d convolution with strides, padding,
lhs/rhs dilation and feature/batch groups) and ``reduce_window_{sum,max,min}`` (pooling).

Params are canonical and explicit (the public wrappers in ``lax._conv`` resolve strings):
``dimension_numbers`` is a ``ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)`` whose specs
list, for the canonical order (batch, feature, spatial...), the operand's axis holding each;
``padding`` is one ``(low, high)`` pair per spatial (or window) dimension, negatives cut.
The NumPy implementations gather windows through a strided view (no Python loop over
positions); conv is then one batched matmul per group (im2col).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import _dtype_name, check_dtypes, upcast_half
from .linalg import _computes_in_preferred

_HALF = dtypes.UPCAST     # float16, bfloat16, the narrow types: computed wider


class ConvDimensionNumbers(NamedTuple):
    """Where the canonical dimensions of a convolution live (``jax.lax.ConvDimensionNumbers``).

    ``lhs_spec = (batch, feature, spatial...)``, ``rhs_spec = (out feature, in feature,
    spatial...)``, ``out_spec = (batch, feature, spatial...)``: axis numbers of each operand.
    """
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


def _window_out(n: int, pad, window: int, stride: int, dilation: int, base: int = 1) -> int:
    """Positions of a (dilated) window over a dimension of size n after base dilation and
    padding, with stride: ``(padded - window) // stride + 1``, at least 0 (0 when the
    window does not fit, for a positive stride).  The stride is not checked here: the
    primitives check theirs first, ``lax.conv_shape_tuple`` passes the caller's as given."""
    padded = _dilate(n, base) + pad[0] + pad[1]
    k = _dilate(window, dilation)
    return max(0, (padded - k) // stride + 1)


def _check_positive(name, what, values, exc=TypeError):
    if any(int(v) <= 0 for v in values):
        raise exc(f"{name} {what} must have every element be strictly positive, got "
                        f"{tuple(values)}.")


# ---- conv_general_dilated ----------------------------------------------------------------

def _conv_aval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision=None,
               preferred_element_type=None, out_sharding=None):
    name = "conv_general_dilated"
    if lhs.ndim != rhs.ndim:
        raise ValueError(f"{name} lhs and rhs must have the same number of dimensions, but "
                         f"got {lhs.shape} and {rhs.shape}.")
    if lhs.ndim < 2:
        raise TypeError(f"{name} requires operands of rank >= 2, got shapes {lhs.shape} and "
                        f"{rhs.shape}.")
    check_dtypes(name, (lhs, rhs), "fciub")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"lax.{name}: lhs and rhs must share one dtype, but they are "
                        f"{_dtype_name(lhs.dtype)}, {_dtype_name(rhs.dtype)}")
    ls, rs, os_ = dimension_numbers
    nsp = lhs.ndim - 2
    for what, v in (("window_strides", window_strides), ("padding", padding),
                    ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise ValueError(f"{name} {what} must have one entry per spatial dimension "
                             f"({nsp}), got {tuple(v)}.")
    _check_positive(name, "window_strides", window_strides, ValueError)
    _check_positive(name, "lhs_dilation", lhs_dilation, ValueError)
    _check_positive(name, "rhs_dilation", rhs_dilation, ValueError)
    fgc, bgc = feature_group_count, batch_group_count
    if fgc < 1 or bgc < 1:
        raise ValueError(f"{name} feature_group_count and batch_group_count must be positive "
                         f"integers, got {fgc} and {bgc}.")
    if fgc > 1 and bgc > 1:
        raise ValueError(f"{name}: at most one of batch_group_count ({bgc}) and "
                         f"feature_group_count ({fgc}) may be > 1.")
    n, c = lhs.shape[ls[0]], lhs.shape[ls[1]]
    o, i = rhs.shape[rs[0]], rhs.shape[rs[1]]
    if c % fgc:
        raise ValueError(f"{name} feature_group_count={fgc} must divide the lhs feature "
                         f"dimension size {c} (lhs shape {lhs.shape}).")
    if c // fgc != i:
        raise ValueError(f"{name}: the rhs has {i} input features but the lhs has {c} "
                         f"features in {fgc} group(s), {c} // {fgc} != {i} (lhs shape "
                         f"{lhs.shape}, rhs shape {rhs.shape}).")
    if o % fgc:
        raise ValueError(f"{name}: feature_group_count={fgc} does not divide the rhs "
                         f"output feature size {o}.")
    if n % bgc:
        raise ValueError(f"{name} batch_group_count={bgc} must divide the lhs batch dimension "
                         f"size {n} (lhs shape {lhs.shape}).")
    if o % bgc:
        raise ValueError(f"{name}: batch_group_count={bgc} does not divide the rhs "
                         f"output feature size {o}.")
    spatial = []
    for d in range(nsp):
        size = lhs.shape[ls[2 + d]]
        lo, hi = padding[d]
        if _dilate(size, lhs_dilation[d]) + lo + hi < 0:
            raise ValueError(f"{name}: negative padding {tuple(padding[d])} is larger than "
                             f"spatial dimension {d} of size {size} (lhs shape {lhs.shape}).")
        spatial.append(_window_out(size, (lo, hi), rhs.shape[rs[2 + d]], window_strides[d],
                                   rhs_dilation[d], lhs_dilation[d]))
    canonical = (n // bgc, o) + tuple(spatial)
    shape = [0] * lhs.ndim
    for k, ax in enumerate(os_):
        shape[ax] = canonical[k]
    dt = lhs.dtype
    if preferred_element_type is not None:
        dt = np.dtype(preferred_element_type)
        check_preferred_element_type(lhs.dtype, dt)
    return ShapedArray(tuple(shape), dt, lhs.weak_type and rhs.weak_type)


def check_preferred_element_type(input_dtype, preferred_element_type):
    """JAX's rule for a convolution's ``preferred_element_type`` (dot_general has its own,
    ``linalg.dot_result_dtype``): integer operands may give any integer of their signedness
    (unsigned ones: any integer) or any floating type; floating operands a floating type;
    complex a complex one; never a narrower type (in bytes).  TypeError otherwise."""
    kin, kout = dtypes.kind(input_dtype), dtypes.kind(preferred_element_type)
    if not (kin in "iu" and kout == "f"):
        if kin in "iu" and kout not in "iu" or kin in "fc" and kout != kin:
            raise TypeError(f"Input type is incompatible with `preferred_element_type`: "
                            f"{_dtype_name(input_dtype)} operands cannot give "
                            f"{_dtype_name(preferred_element_type)}; the compatible "
                            f"combinations of (input_type, preferred_element_type) are "
                            f"(integral, integral), (integral, floating), "
                            f"(floating, floating), (complex, complex).")
        if kin == "i" and kout != "i":
            raise TypeError(f"`preferred_element_type` must have the same signedness as the "
                            f"original type: {_dtype_name(input_dtype)} operands cannot "
                            f"give {_dtype_name(preferred_element_type)}.")
    if np.dtype(preferred_element_type).itemsize < np.dtype(input_dtype).itemsize:
        raise TypeError(f"`preferred_element_type` must not be narrower than the original "
                        f"type: {_dtype_name(input_dtype)} operands cannot give "
                        f"{_dtype_name(preferred_element_type)}.")


def _dilate_pad(x, first_axis, dilation, padding, fill):
    """``x`` with its axes from ``first_axis`` on interior-dilated (``fill`` between
    elements) and padded with ``fill`` (negative padding cuts)."""
    nd = len(dilation)
    if any(d > 1 for d in dilation):
        shape = x.shape[:first_axis] + tuple(_dilate(x.shape[first_axis + k], dilation[k])
                                             for k in range(nd))
        out = np.full(shape, fill, x.dtype)
        out[(slice(None),) * first_axis + tuple(slice(None, None, d) for d in dilation)] = x
        x = out
    if any(lo != 0 or hi != 0 for lo, hi in padding):
        grow = [(0, 0)] * first_axis + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
        if any(g != (0, 0) for g in grow):
            x = np.pad(x, grow, constant_values=fill)
        cut = (slice(None),) * first_axis + tuple(
            slice(max(-lo, 0), x.shape[first_axis + k] - max(-hi, 0))
            for k, (lo, hi) in enumerate(padding))
        x = x[cut]
    return x


def _windows(x, first_axis, window, strides, dilation):
    """A strided view of ``x`` (axes from ``first_axis`` on are windowed) of shape
    ``x.shape[:first_axis] + out_positions + window``."""
    nd = len(window)
    axes = tuple(range(first_axis, first_axis + nd))
    k = tuple(_dilate(w, d) for w, d in zip(window, dilation))
    view = sliding_window_view(x, k, axis=axes)
    index = (slice(None),) * first_axis + tuple(slice(None, None, s) for s in strides) + \
        tuple(slice(None, None, d) for d in dilation)
    return view[index]


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision=None,
               preferred_element_type=None, out_sharding=None):
    out_aval = _conv_aval(
        ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, rhs.dtype),
        window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
        feature_group_count=feature_group_count, batch_group_count=batch_group_count,
        preferred_element_type=preferred_element_type)
    ls, rs, os_ = dimension_numbers
    out_dtype = out_aval.dtype
    if out_aval.size == 0:
        return np.zeros(out_aval.shape, out_dtype)
    x, w = np.transpose(lhs, ls), np.transpose(rhs, rs)
    round_to = None
    if preferred_element_type is not None and x.dtype != np.bool_ and out_dtype != x.dtype:
        # dot_general's arithmetic: a wider preferred type accumulates (int8 x int8 ->
        # int32 sums); otherwise the result is rounded to the operands' type, then converted
        if _computes_in_preferred(x.dtype, out_dtype):
            x, w = x.astype(out_dtype), w.astype(out_dtype)
        else:
            round_to = x.dtype
    if x.dtype in _HALF:
        x, w = upcast_half(x, w)
    if x.dtype == np.bool_:
        x, w = x.astype(np.int32), w.astype(np.int32)
    nsp = x.ndim - 2
    x = _dilate_pad(x, 2, lhs_dilation, padding, 0)
    patches = _windows(x, 2, w.shape[2:], window_strides, rhs_dilation)  # N C out.. k..
    n, c = x.shape[:2]
    out_sp = patches.shape[2:2 + nsp]
    o = w.shape[0]
    fgc, bgc = feature_group_count, batch_group_count
    groups, nb, cg = fgc * bgc, n // bgc, c // fgc
    og = o // groups
    ksize, psize = math.prod(w.shape[2:]), math.prod(out_sp)
    sp = tuple(range(4, 4 + nsp))
    p = patches.reshape((bgc, nb, fgc, cg) + out_sp + w.shape[2:])
    p = p.transpose((0, 2, 1) + sp + (3,) + tuple(range(4 + nsp, 4 + 2 * nsp)))
    p = p.reshape(groups, nb * psize, cg * ksize)
    wm = w.reshape(groups, og, cg * ksize).transpose(0, 2, 1)
    r = np.matmul(p, wm)                                   # groups, nb*P, og
    r = r.reshape((bgc, fgc, nb) + out_sp + (og,))
    r = r.transpose((2, 0, 1, 3 + nsp) + tuple(range(3, 3 + nsp)))
    r = r.reshape((nb, o) + out_sp)
    out = np.transpose(r, np.argsort(os_))
    if round_to is not None:
        out = out.astype(round_to)
    if out_dtype == np.bool_:
        return out != 0
    return np.ascontiguousarray(out.astype(out_dtype, copy=False))


def _conv_flops(lhs, rhs, *, dimension_numbers, **params):
    out = _conv_aval(lhs, rhs, dimension_numbers=dimension_numbers, **params)
    rs = dimension_numbers.rhs_spec
    per_out = math.prod(rhs.shape[a] for a in rs[1:])
    return 2 * out.size * per_out


conv_general_dilated_p = Primitive("conv_general_dilated", abstract_eval=_conv_aval,
                                   impl=_conv_impl, flops=_conv_flops, kind="dot")


class _Spelled:
    """A parameter value printed as the given text."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def _conv_pp_params(params):
    # as JAX prints them: the dimension numbers as their named tuple, and the result's
    # sharding (none here)
    shown = dict(params)
    dn = shown.get("dimension_numbers")
    if isinstance(dn, ConvDimensionNumbers):
        shown["dimension_numbers"] = _Spelled(repr(ConvDimensionNumbers(
            *(tuple(int(d) for d in spec) for spec in dn))))
    shown.setdefault("out_sharding", None)
    return shown


conv_general_dilated_p.pp_params = _conv_pp_params


# ---- reduce_window_{sum,max,min} ---------------------------------------------------------

def identity_of(kind: str, dt) -> object:
    """The identity of ``kind`` ("sum", "max", "min") for dtype ``dt`` (a NumPy scalar)."""
    dt = np.dtype(dt)
    if kind == "sum":
        return dt.type(0)
    if dt == np.bool_:
        return np.bool_(kind == "min")
    if dtypes.is_float(dt):
        return dt.type(dtypes.float_bounds(dt)[0 if kind == "max" else 1])
    info = dtypes.iinfo(dt)
    return dt.type(info.min if kind == "max" else info.max)


def _rw_aval(kind):
    name = f"reduce_window_{kind}"
    allowed = "fciu" if kind == "sum" else "fiub"

    def rule(x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        check_dtypes(name, (x,), allowed)
        nd = x.ndim
        for what, v in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("padding", padding),
                        ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
            if len(v) != nd:
                raise TypeError(f"{name} got {len(v)} {what} {tuple(v)} for operand of shape "
                                f"{x.shape}; give one per dimension.")
        for what, v in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
            _check_positive(name, what, v)
        shape = []
        for d in range(nd):
            if _dilate(x.shape[d], base_dilation[d]) + padding[d][0] + padding[d][1] < 0:
                raise ValueError(f"{name}: negative padding {tuple(padding[d])} is larger "
                                 f"than dimension {d} of operand shape {x.shape}.")
            shape.append(_window_out(x.shape[d], padding[d], window_dimensions[d],
                                     window_strides[d], window_dilation[d], base_dilation[d]))
        return ShapedArray(tuple(shape), x.dtype, x.weak_type)
    return rule


_RW_UFUNC = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _rw_impl(kind):
    aval_rule = _rw_aval(kind)
    ufunc = _RW_UFUNC[kind]

    def impl(x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        out_aval = aval_rule(ShapedArray(x.shape, x.dtype), window_dimensions=window_dimensions,
                             window_strides=window_strides, padding=padding,
                             base_dilation=base_dilation, window_dilation=window_dilation)
        if out_aval.size == 0:
            return np.zeros(out_aval.shape, x.dtype)
        xx = upcast_half(x)[0] if x.dtype in _HALF else x
        fill = identity_of(kind, x.dtype)
        xx = _dilate_pad(xx, 0, base_dilation, padding, fill)
        view = _windows(xx, 0, window_dimensions, window_strides, window_dilation)
        nd = x.ndim
        out = ufunc.reduce(view, axis=tuple(range(nd, 2 * nd))) if nd else view
        return np.asarray(out).astype(x.dtype, copy=False)
    return impl


def _rw_flops(x, *, window_dimensions, **params):
    out = _rw_aval("sum")(ShapedArray(x.shape, np.dtype(np.float32)),
                          window_dimensions=window_dimensions, **params)
    return out.size * math.prod(window_dimensions)


def _reduce_window_primitive(kind):
    return Primitive(f"reduce_window_{kind}", abstract_eval=_rw_aval(kind),
                     impl=_rw_impl(kind), flops=_rw_flops, kind="reduction")


reduce_window_sum_p = _reduce_window_primitive("sum")
reduce_window_max_p = _reduce_window_primitive("max")
reduce_window_min_p = _reduce_window_primitive("min")


# ---- sharding rules ----------------------------------------------------------------------
# conv: the lhs batch dimension and the rhs output-feature dimension keep their sharding
# (they map to the result's batch and feature dimensions; without grouping each output
# element reads one batch entry and one filter); the spatial and input-feature dimensions,
# whose windows cross shard boundaries, are gathered.  reduce_window: a dimension whose
# window is one element (no stride, padding or dilation) keeps its sharding, the others
# are gathered.  Both slice a gathered dimension of the result back to the operand's
# sharding where it divides (``reslice``, as GSPMD does).

from ..core import sharding_rules as _sr  # noqa: E402


def _conv_sharding(in_specs, in_avals, axis_sizes, *, dimension_numbers,
                   feature_group_count, batch_group_count, **params):
    ls, rs, os_ = dimension_numbers
    lhs, rhs = in_avals
    claim = _sr.Claim(len(os_))
    if batch_group_count == 1:
        claim.offer(os_[0], tuple(in_specs[0][ls[0]]))
    if feature_group_count == 1 and batch_group_count == 1:
        # (grouped, a device's block of output features would pair with other groups)
        claim.offer(os_[1], tuple(in_specs[1][rs[0]]))
    out = claim.result()
    lop, rop = [()] * lhs.ndim, [()] * rhs.ndim
    lop[ls[0]], rop[rs[0]] = out[os_[0]], out[os_[1]]
    ops = [tuple(lop), tuple(rop)]
    notes = _sr.reshard_notes(in_specs, ops, "conv needs its spatial and input-feature "
                                              "dimensions whole")
    # the result's spatial dimensions are sliced back to the lhs's sharding (as GSPMD)
    hint = list(out)
    for i in range(2, len(ls)):
        hint[os_[i]] = tuple(in_specs[0][ls[i]])
    hint = tuple(hint)
    return _sr.ShardingRule(ops, [out], (), _sr.describe(notes),
                            reslice=[hint] if hint != out else None)


def _rw_sharding(in_specs, in_avals, axis_sizes, *, window_dimensions, window_strides,
                 padding, base_dilation, window_dilation):
    whole = [d for d in range(in_avals[0].ndim)
             if (window_dimensions[d], window_strides[d], tuple(padding[d]), base_dilation[d],
                 window_dilation[d]) != (1, 1, (0, 0), 1, 1)]
    s = tuple(in_specs[0])
    op = _sr.gather_dims(s, whole)
    note = None if op == s else (f"operand 0 {_sr.fmt(s)} -> {_sr.fmt(op)}: a window "
                                 f"crosses shard boundaries")
    # the result is sliced back to the operand's sharding where it divides (as GSPMD)
    return _sr.ShardingRule([op], [op], (), note, reslice=[s] if op != s else None)


conv_general_dilated_p.sharding = _conv_sharding
for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _p.sharding = _rw_sharding


# ---- transformation rules ---------------------------------------------------------------

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402


def _bind_conv(lhs, rhs, **params):
    return conv_general_dilated_p.bind(lhs, rhs, **params)


def _to_dtype(x, dtype):
    from .elementwise import convert_element_type_p
    if get_aval(x).dtype == dtype:
        return x
    return convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _reshape(x, shape):
    from .shape import reshape_p
    shape = tuple(shape)
    if get_aval(x).shape == shape:
        return x
    return reshape_p.bind(x, new_sizes=shape, dimensions=None, sharding=None)


def _permute(x, perm):
    from .shape import transpose_p
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(len(perm))):
        return x
    return transpose_p.bind(x, permutation=perm)


ad.defjvp(conv_general_dilated_p,
          lambda g, lhs, rhs, **p: _bind_conv(g, rhs, **p),
          lambda g, lhs, rhs, **p: _bind_conv(lhs, g, **p))


def _conv_transpose_lhs(ct, rhs, lhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision=None, preferred_element_type=None,
                        out_sharding=None):
    """Cotangent of the lhs: the cotangent, dilated by the strides, convolved with the
    spatially flipped kernel whose feature axes swap roles, at stride ``lhs_dilation``.
    Groups regroup the kernel (feature groups stay feature groups; batch groups become
    feature groups whose output is unshuffled into the batch)."""
    from .shape import rev_p
    ls, rs, os_ = dimension_numbers
    nsp = len(ls) - 2
    ct = _to_dtype(ct, get_aval(rhs).dtype)
    rhs_aval = get_aval(rhs)
    w = _permute(rhs, rs)                            # canonical O, I, K...
    o, i = rhs_aval.shape[rs[0]], rhs_aval.shape[rs[1]]
    ksp = tuple(rhs_aval.shape[a] for a in rs[2:])
    groups = feature_group_count * batch_group_count
    og = o // groups
    # kernel of the transposed conv: out features = (group, I), in features = O per group
    w = _reshape(w, (groups, og, i) + ksp)
    w = _permute(w, (0, 2, 1) + tuple(range(3, 3 + nsp)))
    w = _reshape(w, (groups * i, og) + ksp)
    w = rev_p.bind(w, dimensions=tuple(range(2, 2 + nsp)))
    n_sp = tuple(lhs_aval.shape[a] for a in ls[2:])
    out_sp = tuple(get_aval(ct).shape[a] for a in os_[2:])
    pads = []
    for d in range(nsp):
        keff = _dilate(ksp[d], rhs_dilation[d])
        lo = padding[d][0]
        span = _dilate(out_sp[d], window_strides[d])
        pads.append((keff - 1 - lo, _dilate(n_sp[d], lhs_dilation[d]) + lo - span))
    iota = tuple(range(nsp + 2))
    bgc = batch_group_count
    dn = ConvDimensionNumbers(tuple(os_), iota, tuple(ls) if bgc == 1 else iota)
    out = _bind_conv(ct, w, window_strides=tuple(lhs_dilation), padding=tuple(pads),
                     lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
                     dimension_numbers=dn, feature_group_count=groups, batch_group_count=1,
                     precision=precision, preferred_element_type=None)
    if bgc > 1:
        # canonical (Nb, bgc * C, S...) -> (bgc * Nb, C, S...) -> lhs layout
        nb, c = lhs_aval.shape[ls[0]] // bgc, lhs_aval.shape[ls[1]]
        out = _reshape(out, (nb, bgc, c) + n_sp)
        out = _permute(out, (1, 0) + tuple(range(2, 3 + nsp)))
        out = _reshape(out, (bgc * nb, c) + n_sp)
        out = _permute(out, np.argsort(ls))
    return _to_dtype(out, lhs_aval.dtype)


def _conv_transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision=None, preferred_element_type=None,
                        out_sharding=None):
    """Cotangent of the kernel: the lhs (features as batch, batch as features) convolved
    with the cotangent as kernel (its batch as in features), at stride ``rhs_dilation``
    and kernel dilation ``window_strides``; feature and batch groups swap roles."""
    ls, rs, os_ = dimension_numbers
    nsp = len(ls) - 2
    lhs_aval = get_aval(lhs)
    ct = _to_dtype(ct, lhs_aval.dtype)
    n_sp = tuple(lhs_aval.shape[a] for a in ls[2:])
    out_sp = tuple(get_aval(ct).shape[a] for a in os_[2:])
    ksp = tuple(rhs_aval.shape[a] for a in rs[2:])
    pads = []
    for d in range(nsp):
        lo = padding[d][0]
        hi = (_dilate(ksp[d], rhs_dilation[d]) - 1 + _dilate(out_sp[d], window_strides[d])
              - _dilate(n_sp[d], lhs_dilation[d]) - lo)
        pads.append((lo, hi))
    dn = ConvDimensionNumbers((ls[1], ls[0]) + tuple(ls[2:]), (os_[1], os_[0]) + tuple(os_[2:]),
                              (rs[1], rs[0]) + tuple(rs[2:]))
    out = _bind_conv(lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
                     lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
                     dimension_numbers=dn, feature_group_count=batch_group_count,
                     batch_group_count=feature_group_count, precision=precision,
                     preferred_element_type=None)
    return _to_dtype(out, rhs_aval.dtype)


def _conv_transpose(ct, lhs, rhs, **params):
    if ad.is_undefined(lhs) and ad.is_undefined(rhs):
        raise ValueError("conv_general_dilated is bilinear, not linear in both operands at "
                         "once")
    if 0 in get_aval(ct).shape:
        # an empty output: the operand's cotangent is zero (the transposed convolution's
        # paddings would be negative beyond its size)
        aval = lhs.aval if ad.is_undefined(lhs) else rhs.aval
        zero = ad.zeros(ShapedArray(aval.shape, aval.dtype))
        return [zero, None] if ad.is_undefined(lhs) else [None, zero]
    if ad.is_undefined(lhs):
        return [_conv_transpose_lhs(ct, rhs, lhs.aval, **params), None]
    return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]


conv_general_dilated_p.transpose = _conv_transpose


def _fold_in(x, axis: int, groups: int):
    """``x`` with its mapped axis 0 (size B) folded into ``axis`` (numbered without the
    mapped axis) of size ``groups * rest``: the merged axis is ordered (groups, B, rest)."""
    shape = get_aval(x).shape
    b, rest = shape[0], shape[1:]
    n = rest[axis]
    x = _reshape(x, (b,) + rest[:axis] + (groups, n // groups) + rest[axis + 1:])
    perm = list(range(1, len(rest) + 2))
    perm.insert(axis + 1, 0)
    x = _permute(x, perm)
    return _reshape(x, rest[:axis] + (groups * b * (n // groups),) + rest[axis + 1:])


def _fold_out(y, axis: int, groups: int, b: int):
    """Inverse of ``_fold_in``: axis ``axis`` ordered (groups, B, rest) is split and B
    becomes a new leading axis."""
    shape = get_aval(y).shape
    n = shape[axis]
    rest = n // (groups * b)
    y = _reshape(y, shape[:axis] + (groups, b, rest) + shape[axis + 1:])
    perm = [axis + 1] + [i for i in range(len(shape) + 2) if i != axis + 1]
    y = _permute(y, perm)
    return _reshape(y, (b,) + shape[:axis] + (groups * rest,) + shape[axis + 1:])


def _conv_batch(args, dims, *, dimension_numbers, feature_group_count, batch_group_count,
                **params):
    """vmap of a convolution without a loop: a mapped lhs folds into the batch dimension,
    a mapped kernel into the output features; both mapped fold into feature groups (or
    into batch groups when those are in use)."""
    (lhs, rhs), (dl, dr) = args, dims
    ls, rs, os_ = dimension_numbers
    b = batching.size_of(args, dims)
    fgc, bgc = feature_group_count, batch_group_count
    p = dict(params, dimension_numbers=dimension_numbers)
    if dl is not None and dr is not None:
        lhs, rhs = batching.moveaxis(lhs, dl, 0), batching.moveaxis(rhs, dr, 0)
        if bgc > 1:
            lhs = _fold_in(lhs, ls[0], 1)
            rhs = _fold_in(rhs, rs[0], 1)
            out = _bind_conv(lhs, rhs, feature_group_count=fgc, batch_group_count=b * bgc, **p)
        else:
            lhs = _fold_in(lhs, ls[1], 1)
            rhs = _fold_in(rhs, rs[0], 1)
            out = _bind_conv(lhs, rhs, feature_group_count=b * fgc, batch_group_count=bgc, **p)
        return _fold_out(out, os_[1], 1, b), 0
    if dl is not None:
        lhs = _fold_in(batching.moveaxis(lhs, dl, 0), ls[0], bgc)
        out = _bind_conv(lhs, rhs, feature_group_count=fgc, batch_group_count=bgc, **p)
        return _fold_out(out, os_[0], 1, b), 0
    rhs = _fold_in(batching.moveaxis(rhs, dr, 0), rs[0], fgc * bgc)
    out = _bind_conv(lhs, rhs, feature_group_count=fgc, batch_group_count=bgc, **p)
    return _fold_out(out, os_[1], fgc * bgc, b), 0


conv_general_dilated_p.batch = _conv_batch


def _rw_sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation):
    """Every input element gets the sum of the cotangents of the windows it is in: a
    windowed sum over the stride-dilated cotangent, read at stride ``base_dilation``."""
    shape = x.aval.shape
    ct_shape = get_aval(ct).shape
    pads = []
    for d in range(len(shape)):
        keff = _dilate(window_dimensions[d], window_dilation[d])
        lo = padding[d][0]
        span = _dilate(ct_shape[d], window_strides[d])
        pads.append((keff - 1 - lo, _dilate(shape[d], base_dilation[d]) + lo - span))
    out = reduce_window_sum_p.bind(ct, window_dimensions=tuple(window_dimensions),
                                   window_strides=tuple(base_dilation), padding=tuple(pads),
                                   base_dilation=tuple(window_strides),
                                   window_dilation=tuple(window_dilation))
    return [out]


ad.deflinear(reduce_window_sum_p, _rw_sum_transpose)


def _rw_chooser_jvp(prim, kind):
    """max/min pooling: the tangent of the element each window picks.  The window is
    scanned in order keeping the first best element (so ties and NaNs pick what XLA's
    select-and-scatter picks), with one strided slice of the padded operand per window
    offset."""
    from .elementwise import ge_p, le_p, select_n_p
    from .shape import broadcast_in_dim_p, pad_p, slice_p
    keep_p = ge_p if kind == "max" else le_p

    def rule(primals, tangents, *, window_dimensions, window_strides, padding,
             base_dilation, window_dilation):
        (x,), (g,) = primals, tangents
        params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                      padding=padding, base_dilation=base_dilation,
                      window_dilation=window_dilation)
        ans = prim.bind(x, **params)
        if g is None:
            return ans, None
        aval = get_aval(x)
        out_shape = get_aval(ans).shape
        cfg = tuple((lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation))
        ident = identity_of(kind, aval.dtype)
        xp = pad_p.bind(x, ident, padding_config=cfg)
        gp = pad_p.bind(g, np.zeros((), get_aval(g).dtype), padding_config=cfg)
        best = broadcast_in_dim_p.bind(ident, shape=out_shape, broadcast_dimensions=())
        t = ad.zeros(ShapedArray(out_shape, get_aval(g).dtype))
        for offset in np.ndindex(*window_dimensions):
            start = tuple(k * wd for k, wd in zip(offset, window_dilation))
            limit = tuple(s + (n - 1) * st + 1 if n else s
                          for s, n, st in zip(start, out_shape, window_strides))
            sl = dict(start_indices=start, limit_indices=limit,
                      strides=tuple(window_strides))
            xs = slice_p.bind(xp, **sl)
            keep = keep_p.bind(best, xs)
            best = select_n_p.bind(keep, xs, best)
            t = select_n_p.bind(keep, slice_p.bind(gp, **sl), t)
        return ans, t
    prim.jvp = rule


_rw_chooser_jvp(reduce_window_max_p, "max")
_rw_chooser_jvp(reduce_window_min_p, "min")


def _rw_batch(prim):
    def rule(args, dims, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        d = dims[0]

        def ins(t, v):
            return tuple(t[:d]) + (v,) + tuple(t[d:])
        return prim.bind(args[0], window_dimensions=ins(window_dimensions, 1),
                         window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)),
                         base_dilation=ins(base_dilation, 1),
                         window_dilation=ins(window_dilation, 1)), d
    prim.batch = rule


for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _rw_batch(_p)


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------

from . import _lowering as _lo  # noqa: E402


def _conv_dnums_text(ctx, dimension_numbers) -> str:
    ls, rs, os_ = dimension_numbers
    return ("#stablehlo.conv<raw "
            f"input_batch_dimension = {ls[0]}, input_feature_dimension = {ls[1]}, "
            f"input_spatial_dimensions = {ctx.dims(ls[2:])}, "
            f"kernel_input_feature_dimension = {rs[1]}, "
            f"kernel_output_feature_dimension = {rs[0]}, "
            f"kernel_spatial_dimensions = {ctx.dims(rs[2:])}, "
            f"output_batch_dimension = {os_[0]}, output_feature_dimension = {os_[1]}, "
            f"output_spatial_dimensions = {ctx.dims(os_[2:])}>")


def _conv_lower(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision=None,
                preferred_element_type=None, out_sharding=None):
    # the implementation's types: half precision in float32, a wider preferred type
    # accumulates, bool in int32; the result converted to the equation's type
    from .linalg import _precision_attr, _bit_width
    from .elementwise import _convert_lower
    out = ctx.avals_out[0]
    if out.size == 0:
        return ctx.full(0, out)
    # (narrow operands stay as they are, the accumulation type the result's: exact, as
    # in dot_general's rule)
    cdt = lhs.aval.dtype
    round_to = None
    if preferred_element_type is not None and cdt != np.bool_ and out.dtype != cdt:
        if _computes_in_preferred(cdt, out.dtype):
            if _bit_width(cdt) == _bit_width(out.dtype):
                lhs = _convert_lower(ctx, lhs, out.dtype)
                rhs = _convert_lower(ctx, rhs, out.dtype)
            cdt = out.dtype
        else:
            round_to = cdt
    if cdt in _HALF:
        cdt = np.dtype(np.float32)
    if cdt == np.bool_:
        cdt = np.dtype(np.int32)
        lhs, rhs = ctx.convert(lhs, cdt), ctx.convert(rhs, cdt)
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        # XLA:CPU's convolution reads outside its input for a negative padding (real JAX
        # 0.10.2's jit of a conv with padding (-1, 1) returned 6.3e30): the input is
        # dilated and cut by a stablehlo.pad first, the convolution then has neither
        lhs = _dilate_pad_lower(ctx, lhs, dimension_numbers[0][2:], lhs_dilation, padding)
        padding = [(0, 0)] * len(padding)
        lhs_dilation = (1,) * len(lhs_dilation)
    r = ctx.op("stablehlo.convolution", [lhs, rhs], ctx.aval(out.shape, cdt), {
        "window_strides": ctx.i64s(window_strides),
        "padding": ctx.dense_i64_2d(padding),
        "lhs_dilation": ctx.i64s(lhs_dilation),
        "rhs_dilation": ctx.i64s(rhs_dilation),
        "dimension_numbers": _conv_dnums_text(ctx, dimension_numbers),
        "feature_group_count": ctx.i64(feature_group_count),
        "batch_group_count": ctx.i64(batch_group_count),
        "precision_config": _precision_attr(precision)})
    if round_to is not None:
        r = _convert_lower(ctx, r, round_to)
    return _convert_lower(ctx, r, out.dtype)


def _dilate_pad_lower(ctx, x, axes, dilation, padding):
    """``x`` with its ``axes`` interior-dilated and padded with zeros (negative padding
    cuts): one ``stablehlo.pad``, as ``_dilate_pad`` does on the host."""
    lo, hi, interior = [0] * x.aval.ndim, [0] * x.aval.ndim, [0] * x.aval.ndim
    shape = list(x.aval.shape)
    for a, d, (l, h) in zip(axes, dilation, padding):
        lo[a], hi[a], interior[a] = l, h, d - 1
        shape[a] = _dilate(shape[a], d) + l + h
    zero = ctx.constant(np.zeros((), x.aval.dtype), x.aval.dtype)
    return ctx.op("stablehlo.pad", [x, zero], ctx.aval(tuple(shape), x.aval.dtype),
                  {"edge_padding_low": ctx.i64s(lo), "edge_padding_high": ctx.i64s(hi),
                   "interior_padding": ctx.i64s(interior)})


def _rw_lowering(kind):
    def rule(ctx, x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        out = ctx.avals_out[0]
        if out.size == 0:
            return ctx.full(0, out)
        dt = x.aval.dtype
        cdt = np.dtype(np.float32) if dt in _HALF else dt
        x = ctx.convert(x, cdt)
        init = ctx.constant(np.asarray(identity_of(kind, dt)).astype(cdt), cdt)
        if kind == "sum":
            region = ctx.scalar_region([cdt], lambda a, b: ctx.binary("add", a, b))
        elif kind == "max":
            region = ctx.scalar_region([cdt], lambda a, b: _lo.maximum(ctx, a, b))
        else:
            region = ctx.scalar_region([cdt], lambda a, b: _lo.minimum(ctx, a, b))
        r = ctx.op("stablehlo.reduce_window", [x, init], ctx.aval(out.shape, cdt), {
            "window_dimensions": ctx.i64s(window_dimensions),
            "window_strides": ctx.i64s(window_strides),
            "base_dilations": ctx.i64s(base_dilation),
            "window_dilations": ctx.i64s(window_dilation),
            "padding": ctx.dense_i64_2d(padding)}, regions=[region])
        return ctx.convert(r, dt)
    return rule


conv_general_dilated_p.lowering = _conv_lower
reduce_window_sum_p.lowering = _rw_lowering("sum")
reduce_window_max_p.lowering = _rw_lowering("max")
reduce_window_min_p.lowering = _rw_lowering("min")
