"""Reductions (sum, prod, max, min, and, or, argmax, argmin), cumulative reductions and sort.

``axes`` are normalised, non-negative and unique; the rule raises ValueError otherwise.
"""
from __future__ import annotations

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray
from ..core import sharding_rules as _sr
from ..core.primitive import Primitive, Reduction
from ._rules import check_dtypes, normalize_axes, upcast_half


def _reduce_aval(name, allowed):
    def rule(x, axes, **sharding):
        _check_params(name, sharding)
        check_dtypes(name, (x,), allowed)
        axes = normalize_axes(axes, x.ndim, name)
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in axes), x.dtype,
                           x.weak_type)
    return rule


def _check_params(name, extra):
    # As in JAX, only reduce_sum carries an ``out_sharding`` parameter; the other
    # reductions take ``axes`` alone (and print that way).
    if extra and (name != "reduce_sum" or set(extra) != {"out_sharding"}):
        raise TypeError(f"{name} got unexpected parameters {sorted(extra)}")


def _reduce_flops(x, axes, **sharding):
    return x.size


def _reduction(name, np_fn, allowed, monoid, identity_ok=True):
    def impl(x, axes, **sharding):
        axes = tuple(axes)
        if not identity_ok and x.size == 0 and any(x.shape[a] == 0 for a in axes):
            # max/min of nothing: XLA returns the identity (-inf/+inf or the int limits).
            shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
            return np.full(shape, _identity(name, x.dtype), x.dtype)
        if x.dtype in _HALF:
            (x,) = upcast_half(x)
        return np_fn(x, axis=axes)

    def specialize(avals, axes, **sharding):
        # for a compiled program (static operand aval): the NumPy call alone, without the
        # per-call checks ``impl`` makes (half precision, an empty max/min)
        (x,) = avals
        axes = tuple(axes)
        if np.dtype(x.dtype) in _HALF or \
                (not identity_ok and any(x.shape[a] == 0 for a in axes)):
            return None
        if np_fn is _sum:
            return _sum_for(x, axes)
        return lambda x: np_fn(x, axis=axes)

    p = Primitive(name, abstract_eval=_reduce_aval(name, allowed), impl=impl,
                  flops=_reduce_flops, scalar_op=name, kind="reduction",
                  reduction=Reduction(monoid, _monoid_identity(monoid)),
                  sharding=_sr.reduction(monoid))
    p.specialize = specialize
    return p


def _monoid_identity(monoid):
    """``dtype -> scalar``: the identity of ``monoid`` (what reducing nothing gives)."""
    def identity(dt):
        dt = np.dtype(dt)
        if monoid in ("add", "or", "xor"):
            return dt.type(0)
        if monoid == "mul":
            return dt.type(1)
        if monoid == "and":      # every bit set
            return dt.type(True) if dt == np.bool_ else ~dt.type(0)
        return dt.type(_identity("reduce_" + monoid, dt))
    return identity


def _identity(name, dt):
    if dtypes.is_float(dt):
        return dtypes.float_bounds(dt)[0 if name == "reduce_max" else 1]
    if dt == np.bool_:
        return name == "reduce_min"
    info = dtypes.iinfo(dt)
    return info.min if name == "reduce_max" else info.max


_HALF = dtypes.UPCAST     # float16, bfloat16, the narrow types: computed wider

_WIDE = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _sum_for(aval, axes):
    """The float32-accurate sum over ``axes`` of operands like ``aval`` (its shape and
    dtype), as a callable of the operand: the choice made once.

    NumPy's pairwise summation only applies along the contiguous inner loop; over any
    other axis it adds row by row, and a float32 running sum stalls at 2**24 (XLA sums in
    a tree).  There the sum accumulates in double precision and is rounded back once.  A
    C-contiguous operand reduced over a trailing run of axes is one contiguous inner loop
    (pairwise, accurate) and keeps the plain reduction."""
    axes = tuple(axes)
    wide = _WIDE.get(np.dtype(aval.dtype))
    if wide is None:
        return lambda x: np.add.reduce(x, axis=axes)
    nd = len(aval.shape)
    if tuple(sorted(axes)) != tuple(range(nd - len(axes), nd)):
        return lambda x: np.add.reduce(x, axis=axes, dtype=wide).astype(x.dtype)
    return lambda x: np.add.reduce(x, axis=axes) if x.flags.c_contiguous else \
        np.add.reduce(x, axis=axes, dtype=wide).astype(x.dtype)


def _sum(x, axis):
    """``reduce_sum``'s eager implementation: ``_sum_for`` decided for ``x`` and run."""
    return _sum_for(x, axis)(x)


reduce_sum_p = _reduction("reduce_sum", _sum, "fciu", "add")
reduce_prod_p = _reduction("reduce_prod", np.multiply.reduce, "fciu", "mul")


def _zero_signed(fn, is_min):
    # XLA: the min of -0.0 and 0.0 is -0.0 and their max 0.0, in any order; NumPy's
    # reduction keeps whichever zero came first
    def reduce(x, axis):
        out = fn(x, axis=axis)
        if x.dtype.kind == "f" and out.size and (x == 0).any():
            z = (x == 0) & (np.signbit(x) if is_min else ~np.signbit(x))
            hit = np.logical_or.reduce(z, axis=axis)
            neg = hit if is_min else ~hit
            t = out.dtype.type
            out = np.where(out == 0, np.where(neg, t(-0.0), t(0.0)), out).astype(out.dtype)
        return out
    return reduce


_max = _zero_signed(np.maximum.reduce, False)
_min = _zero_signed(np.minimum.reduce, True)
reduce_max_p = _reduction("reduce_max", _max, "fciub", "max", identity_ok=False)
reduce_min_p = _reduction("reduce_min", _min, "fciub", "min", identity_ok=False)
reduce_and_p = _reduction("reduce_and", np.bitwise_and.reduce, "iub", "and")
reduce_or_p = _reduction("reduce_or", np.bitwise_or.reduce, "iub", "or")
reduce_xor_p = _reduction("reduce_xor", np.bitwise_xor.reduce, "iub", "xor")


# argmax / argmin ------------------------------------------------------------------------

def _arg_aval(name):
    def rule(x, axes, index_dtype):
        axes = normalize_axes(axes, x.ndim, name)
        if len(axes) != 1:
            raise ValueError(f"{name} takes exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name} of an empty axis: operand shape {x.shape}, axis {axes[0]}")
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i != axes[0]),
                           index_dtype, False)
    return rule


def _argmax_impl(x, axes, index_dtype):
    (xx,) = upcast_half(x)
    if xx.dtype.kind == "f":  # NaN wins, as in JAX
        nan = np.isnan(xx)
        out = np.argmax(np.where(nan, -np.inf, xx), axis=axes[0])
        first_nan = np.argmax(nan, axis=axes[0])
        return np.where(nan.any(axis=axes[0]), first_nan, out).astype(index_dtype)
    return np.argmax(xx, axis=axes[0]).astype(index_dtype)


def _argmin_impl(x, axes, index_dtype):
    (xx,) = upcast_half(x)
    if xx.dtype.kind == "f":
        nan = np.isnan(xx)
        out = np.argmin(np.where(nan, np.inf, xx), axis=axes[0])
        first_nan = np.argmax(nan, axis=axes[0])
        return np.where(nan.any(axis=axes[0]), first_nan, out).astype(index_dtype)
    return np.argmin(xx, axis=axes[0]).astype(index_dtype)


def _arg_sharding(in_specs, in_avals, axis_sizes, *, axes, index_dtype):
    # the position of an extremum is not a reduction of the shards' positions (they count
    # from each shard's start): the reduced dimension is gathered first
    s = tuple(in_specs[0])
    axes = {int(a) % len(s) for a in axes}
    op = _sr.gather_dims(s, axes)
    note = None if op == s else (f"operand 0 {_sr.fmt(s)} -> {_sr.fmt(op)}: an index of an "
                                 f"extremum needs its reduced dimension whole")
    return _sr.ShardingRule([op], [tuple(e for d, e in enumerate(op) if d not in axes)], (),
                            note)


argmax_p = Primitive("argmax", abstract_eval=_arg_aval("argmax"), impl=_argmax_impl,
                     flops=lambda x, **k: x.size, kind="reduction", sharding=_arg_sharding)
argmin_p = Primitive("argmin", abstract_eval=_arg_aval("argmin"), impl=_argmin_impl,
                     flops=lambda x, **k: x.size, kind="reduction", sharding=_arg_sharding)


# cumulative ---------------------------------------------------------------------------

def _cum_aval(name):
    def rule(x, axis, reverse=False):
        check_dtypes(name, (x,), "fciub" if name in ("cummax", "cummin") else "fciu")
        normalize_axes((axis,), x.ndim, name)
        return x
    return rule


def _signed_zeros(name, x, out, axis):
    """Zeros of a running max/min with XLA's sign: max(0.0, -0.0) is 0.0 and min(0.0, -0.0)
    is -0.0 in either order, where NumPy keeps the first.  A zero result means the prefix
    holds zeros: it is +0.0 for cummax (-0.0 for cummin) once a zero of that sign was seen.
    """
    want_neg = name == "cummin"
    seen = np.logical_or.accumulate((x == 0) & (np.signbit(x) == want_neg), axis=axis)
    zero = np.zeros((), out.dtype)
    return np.where((out == 0) & seen, -zero if want_neg else zero, out)


# float16/bfloat16/float32/complex64 sums and products accumulate in float64/complex128 and
# are rounded once (the error of a sequential float32 sum grows with the length: 6e-6
# relative over 70,000 values, where XLA's tree-shaped scan stays near 2e-7)
_WIDE_ACC = {np.dtype(np.float16): np.dtype(np.float64), dtypes._BF16: np.dtype(np.float64),
             np.dtype(np.float32): np.dtype(np.float64),
             np.dtype(np.complex64): np.dtype(np.complex128)}


def _wide_accumulate(name, ufunc, x, axis):
    """``ufunc.accumulate`` of ``x`` along ``axis`` computed in float64 (complex128) and
    rounded once to ``x.dtype``, keeping the narrow type's overflow and underflow: a
    running value that leaves the narrow range (inf, or a product that underflows to 0)
    stays there as the narrow chain would, not come back as the wide one can.  From the
    first such position of a row the row continues in the narrow type, from the last
    value that still fit."""
    out_dt = x.dtype
    wide = ufunc.accumulate(x, axis=axis, dtype=_WIDE_ACC[out_dt])
    if name == "cumsum" and x.shape[axis] > 1:
        wide += 0.0      # XLA adds each prefix to +0.0: a sum of -0.0s is +0.0
    out = wide.astype(out_dt)
    if out.size == 0 or (np.isfinite(out).all() and (name == "cumsum" or out.all())):
        return out
    lost = ~np.isfinite(out)
    if name == "cumprod":
        lost |= out == 0
    lost &= np.isfinite(wide) & (wide != 0)    # not an inf, NaN or zero of the inputs
    if not lost.any():
        return out
    n = x.shape[axis]
    hit = lost.any(axis=axis, keepdims=True)
    first = np.where(hit, np.argmax(lost, axis=axis, keepdims=True), n)
    pos = np.arange(n).reshape([n if d == axis else 1 for d in range(x.ndim)])
    # an identity before the last value that fit, then that value, then the inputs;
    # -0.0 is the additive identity that keeps a -0.0 as it is
    ident = np.array(-0.0 if name == "cumsum" else 1, out_dt)
    if out_dt.kind == "c" and name == "cumsum":
        ident = np.array(complex(-0.0, -0.0), out_dt)
    z = np.where(pos < first - 1, ident, np.where(pos == first - 1, out, x))
    narrow = ufunc.accumulate(z, axis=axis, dtype=out_dt)
    return np.where(pos >= first, narrow, out)


def _cumulative(name, ufunc):
    wide = name in ("cumsum", "cumprod")

    def impl(x, axis, reverse=False):
        if reverse:
            x = np.flip(x, axis)
        if wide and x.dtype in _WIDE_ACC:
            xx = x
        else:
            (xx,) = upcast_half(x)
        with np.errstate(all="ignore"):
            if name == "cumprod" and xx.dtype.kind == "c" and xx.shape[axis]:
                # XLA starts the product from the identity: 1 * x0 is a complex multiply,
                # which turns inf + 1j into inf + nanj (JAX's value); finite x0 is unchanged
                first = np.take(xx, [0], axis=axis) * xx.dtype.type(1)
                xx = np.concatenate([first, np.delete(xx, 0, axis=axis)], axis=axis)
            if wide and xx.dtype in _WIDE_ACC:
                out = _wide_accumulate(name, ufunc, xx, axis)
            else:
                out = ufunc.accumulate(xx, axis=axis, dtype=xx.dtype)
                if name == "cumsum" and xx.dtype.kind in "fc" and xx.shape[axis] > 1:
                    out += 0.0
        if name in ("cummax", "cummin") and xx.dtype.kind == "f":
            out = _signed_zeros(name, xx, out, axis)
        return np.flip(out, axis) if reverse else out
    return Primitive(name, abstract_eval=_cum_aval(name), impl=impl,
                     flops=lambda x, **k: x.size, kind="scan", sharding=_CUM_SHARDING)


# a running total crosses shard boundaries: the scanned axis is gathered
_CUM_SHARDING = _sr.whole_along(lambda avals, axis, reverse=False: (axis,),
                                "a cumulative op needs its axis whole")


cumsum_p = _cumulative("cumsum", np.add)
cumprod_p = _cumulative("cumprod", np.multiply)
cummax_p = _cumulative("cummax", np.maximum)
cummin_p = _cumulative("cummin", np.minimum)


# sort ---------------------------------------------------------------------------------

def _sort_aval(*xs, dimension, is_stable, num_keys):
    if not xs:
        raise TypeError("sort requires at least one operand")
    for x in xs:
        if x.shape != xs[0].shape:
            raise TypeError(f"sort operands must all have one shape, got "
                            f"{', '.join(str(x.shape) for x in xs)}")
    normalize_axes((dimension,), xs[0].ndim, "sort")
    if not 1 <= num_keys <= len(xs):
        raise ValueError(f"sort num_keys={num_keys} must be in [1, {len(xs)}]")
    return list(xs)


def _sort_key(x):
    if x.dtype.kind == "c":
        return [np.imag(x), np.real(x)]
    return [upcast_half(x)[0]]


def _sort_impl(*xs, dimension, is_stable, num_keys):
    keys = []
    for k in reversed(xs[:num_keys]):   # lexsort: last key is primary
        keys.extend(_sort_key(k))
    moved = [np.moveaxis(k, dimension, -1) for k in keys]
    if len(moved) == 1:
        order = np.argsort(moved[0], axis=-1, kind="stable")
    else:
        flat = [m.reshape(-1, m.shape[-1]) for m in moved]
        rows = [np.lexsort([f[r] for f in flat]) for r in range(flat[0].shape[0])]
        order = np.array(rows, dtype=np.intp).reshape(moved[0].shape)
    order = np.moveaxis(order, -1, dimension)
    return [np.take_along_axis(x, order, axis=dimension) for x in xs]


sort_p = Primitive("sort", abstract_eval=_sort_aval, impl=_sort_impl, multiple_results=True,
                   flops=lambda *xs, **k: xs[0].size, kind="other",
                   sharding=_sr.whole_along(lambda avals, dimension, **_: (dimension,),
                                            "sort needs its dimension whole", multi=True))


# top_k: the k largest entries along ``axis`` and their int32 positions --------------------
# (JAX 0.10's primitive; the order is IEEE total order, as XLA's: NaN above +inf, 0.0 above
# -0.0, a NaN with its sign bit set below -inf; equal entries keep the lower position first)

def _top_k_aval(x, k, axis):
    if x.ndim == 0 or not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    if np.dtype(x.dtype).kind == "c":
        raise ValueError("top_k is not compatible with complex inputs.")
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if k > x.shape[axis]:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with shape={list(x.shape)} and axis={axis}")
    shape = list(x.shape)
    shape[axis] = k
    return [ShapedArray(shape, x.dtype, x.weak_type),
            ShapedArray(shape, np.dtype(np.int32), x.weak_type)]


def _total_order_key(x):
    """Integers ordered as ``x`` is in IEEE total order (floats: the sign-magnitude bits
    read as a signed integer, the negative half flipped); other dtypes are their own key."""
    dt = np.dtype(x.dtype)
    if not dtypes.is_float(dt):
        return x
    ity = np.dtype(f"int{8 * dt.itemsize}")
    bits = x.view(ity)
    return np.where(bits < 0, bits ^ np.iinfo(ity).max, bits)


def _top_k_impl(x, k, axis):
    n = x.shape[axis]
    # a stable ascending sort of the reversed axis, reversed back: descending, and equal
    # entries keep their order
    order = np.flip(np.argsort(np.flip(_total_order_key(x), axis), axis=axis, kind="stable"),
                    axis)
    ids = np.take(n - 1 - order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, ids, axis=axis), ids.astype(np.int32)]


def _top_k_sharding(in_specs, in_avals, axis_sizes, k, axis):
    # the axis is read whole; both results keep the operand's other dimensions' sharding
    s = _sr.gather_dims(tuple(in_specs[0]), (axis,))
    notes = _sr.reshard_notes(in_specs, [s], "top_k needs its axis whole")
    return _sr.ShardingRule([s], [s, s], (), _sr.describe(notes))


top_k_p = Primitive("top_k", abstract_eval=_top_k_aval, impl=_top_k_impl,
                    multiple_results=True, flops=lambda x, **_: x.size, kind="other",
                    sharding=_top_k_sharding)


# ---- transformation rules ---------------------------------------------------------------

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402
from . import elementwise as _elementwise  # noqa: E402


def _kept_dims(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


def _expand(y, shape, axes):
    """``y`` (the reduction of an operand of ``shape`` over ``axes``) broadcast back."""
    from .shape import broadcast_in_dim_p
    if not axes:
        return y            # nothing was reduced (JAX's broadcast is then no equation)
    return broadcast_in_dim_p.bind(y, shape=tuple(shape),
                                   broadcast_dimensions=_kept_dims(len(shape), axes))


def _reduce_sum_transpose(ct, x, axes, out_sharding=None):
    return [_expand(ct, x.aval.shape, tuple(axes))]


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)


def _chooser_jvp(prim):
    """max/min: the tangent at the chosen elements, averaged over ties."""
    from .elementwise import convert_element_type_p, div_p, eq_p, mul_p

    def rule(primals, tangents, axes):
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if g is None:
            return ans, None
        shape = get_aval(x).shape
        hits = eq_p.bind(x, _expand(ans, shape, tuple(axes)))
        hits = convert_element_type_p.bind(hits, new_dtype=get_aval(g).dtype, weak_type=False)
        counts = reduce_sum_p.bind(hits, axes=axes, out_sharding=None)
        t = reduce_sum_p.bind(mul_p.bind(g, hits), axes=axes, out_sharding=None)
        return ans, div_p.bind(t, counts)
    prim.jvp = rule


_chooser_jvp(reduce_max_p)
_chooser_jvp(reduce_min_p)


def _reduce_prod_jvp(primals, tangents, axes):
    """d prod(x) = sum_j g_j * prod_{k != j} x_k, with the products of the others taken
    as exclusive prefix times exclusive suffix products (exact with zeros)."""
    from .shape import reshape_p, transpose_p, pad_p, slice_p
    from .elementwise import mul_p
    (x,), (g,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    if g is None:
        return ans, None
    aval = get_aval(x)
    axes = tuple(axes)
    kept = _kept_dims(aval.ndim, axes)
    perm = kept + axes
    n = 1
    for a in axes:
        n *= aval.shape[a]
    kshape = tuple(aval.shape[i] for i in kept)
    xt = reshape_p.bind(transpose_p.bind(x, permutation=perm), new_sizes=kshape + (n,),
                        dimensions=None)
    gt = reshape_p.bind(transpose_p.bind(g, permutation=perm), new_sizes=kshape + (n,),
                        dimensions=None)
    one = np.ones((), aval.dtype)
    last = len(kshape)
    cfg_lo = tuple((0, 0, 0) for _ in kshape) + ((1, 0, 0),)
    cfg_hi = tuple((0, 0, 0) for _ in kshape) + ((0, 1, 0),)
    # exclusive prefix products: cumprod of x shifted right by one (1 in front)
    pre = cumprod_p.bind(pad_p.bind(slice_p.bind(xt, start_indices=(0,) * (last + 1),
                                                 limit_indices=kshape + (n - 1,),
                                                 strides=None), one,
                                    padding_config=cfg_lo), axis=last, reverse=False) \
        if n > 0 else xt
    suf = cumprod_p.bind(pad_p.bind(slice_p.bind(xt, start_indices=(0,) * last + (min(1, n),),
                                                 limit_indices=kshape + (n,), strides=None),
                                    one, padding_config=cfg_hi), axis=last, reverse=True) \
        if n > 0 else xt
    t = reduce_sum_p.bind(mul_p.bind(gt, mul_p.bind(pre, suf)), axes=(last,), out_sharding=None)
    return ans, t


reduce_prod_p.jvp = _reduce_prod_jvp


def _reduce_batch(prim):
    def rule(args, dims, axes, **params):
        x = batching.moveaxis(args[0], dims[0], 0)
        # NumPy integers, as JAX's batching computes them (its programs print
        # ``axes=(np.int64(1),)``)
        return prim.bind(x, axes=tuple(np.int64(a) + 1 for a in axes), **params), 0
    prim.batch = rule


for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p,
           reduce_or_p, reduce_xor_p):
    _reduce_batch(_p)


def _arg_batch(prim):
    def rule(args, dims, axes, index_dtype):
        x = batching.moveaxis(args[0], dims[0], 0)
        return prim.bind(x, axes=tuple(np.int64(a) + 1 for a in axes),
                         index_dtype=index_dtype), 0
    prim.batch = rule


_arg_batch(argmax_p)
_arg_batch(argmin_p)

# cumulative: cumsum is linear; the others differentiate through their definition


def _cumsum_transpose(ct, x, axis, reverse=False):
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


ad.deflinear(cumsum_p, _cumsum_transpose)


def _cum_batch(prim):
    def rule(args, dims, axis, reverse=False):
        x = batching.moveaxis(args[0], dims[0], 0)
        return prim.bind(x, axis=axis + 1, reverse=reverse), 0
    prim.batch = rule


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p):
    _cum_batch(_p)


def _sort_batch(args, dims, dimension, is_stable, num_keys):
    size = batching.size_of(args, dims)
    xs = [batching.to_front(x, d, size) for x, d in zip(args, dims)]
    outs = sort_p.bind(*xs, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


sort_p.batch = _sort_batch


def _top_k_jvp(primals, tangents, k, axis):
    vals, ids = top_k_p.bind(*primals, k=k, axis=axis)
    (t,) = tangents
    return [vals, ids], [None if t is None else _take_along(t, ids, axis), None]


def _top_k_batch(args, dims, k, axis):
    (x,), (d,) = args, dims
    outs = top_k_p.bind(x, k=k, axis=axis + 1 if d <= axis else axis)
    return outs, [d, d]


top_k_p.jvp = _top_k_jvp
top_k_p.batch = _top_k_batch


# JVPs of sort, cummax/cummin and cumprod ------------------------------------------------------

def _take_along(t, idx, axis):
    """``t`` gathered along ``axis`` at the integer positions ``idx`` (same shape as ``t``),
    as a gather whose index arrays are iotas for the other axes (linear in ``t``)."""
    from .indexing import gather_p
    from .shape import iota_p
    shape = tuple(get_aval(t).shape)
    arrays = []
    for d, n in enumerate(shape):
        if d == axis:
            arrays.append(idx)
        else:
            s = [1] * len(shape)
            s[d] = n
            arrays.append(iota_p.bind(dtype=np.dtype(np.int32), shape=tuple(s), dimension=d))
    indexer = tuple(("array", k) for k in range(len(shape)))
    return gather_p.bind(t, *arrays, indexer=indexer, mode="promise_in_bounds",
                         fill_value=None)


def _sort_jvp(primals, tangents, dimension, is_stable, num_keys):
    """Sorts an iota alongside the operands to get the permutation, then applies it to the
    tangents."""
    from .shape import iota_p
    shape = tuple(get_aval(primals[0]).shape)
    iota = iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)
    perm = outs[-1]
    return list(outs[:-1]), [None if t is None else _take_along(t, perm, dimension)
                             for t in tangents]


sort_p.jvp = _sort_jvp


def _slice_axis(x, start, stop, stride, axis):
    from .shape import slice_p
    shape = tuple(get_aval(x).shape)
    st, li, sd = [0] * len(shape), list(shape), [1] * len(shape)
    st[axis], li[axis], sd[axis] = start, max(start, stop), stride
    return slice_p.bind(x, start_indices=tuple(st), limit_indices=tuple(li),
                        strides=tuple(sd))


def _interleave(even, odd, n, axis):
    """Positions 0, 2, ... from ``even`` and 1, 3, ... from ``odd`` (n in all)."""
    from .shape import concatenate_p, reshape_p
    ne, no = get_aval(even).shape[axis], get_aval(odd).shape[axis]
    if no < ne:     # odd n: pad odd with any slice, cut off below
        odd = concatenate_p.bind(odd, _slice_axis(even, 0, 1, 1, axis), dimension=axis)
    shape = tuple(get_aval(even).shape)
    pair = shape[:axis + 1] + (1,) + shape[axis + 1:]
    both = concatenate_p.bind(reshape_p.bind(even, new_sizes=pair, dimensions=None),
                              reshape_p.bind(odd, new_sizes=pair, dimensions=None),
                              dimension=axis + 1)
    full = shape[:axis] + (2 * ne,) + shape[axis + 1:]
    return _slice_axis(reshape_p.bind(both, new_sizes=full, dimensions=None), 0, n, 1, axis)


def _odd_even_prefix(xs, combine, axis):
    """Inclusive prefix combination of the arrays ``xs`` (a tuple, combined together) along
    ``axis`` by the odd/even recursion: pairs (0,1), (2,3), ... are combined, their prefix
    taken recursively, then each even position combines the prefix before it.  This is
    the order of ``lax.associative_scan`` (and of JAX's), which fixes how ties split."""
    n = get_aval(xs[0]).shape[axis]
    if n < 2:
        return xs
    odd = _odd_even_prefix(combine([_slice_axis(x, 0, n - 1, 2, axis) for x in xs],
                                   [_slice_axis(x, 1, n, 2, axis) for x in xs]),
                           combine, axis)
    n_tail = (n - 1) // 2
    heads = [_slice_axis(x, 0, 1, 1, axis) for x in xs]
    if n_tail:
        from .shape import concatenate_p
        tail = combine([_slice_axis(o, 0, n_tail, 1, axis) for o in odd],
                       [_slice_axis(x, 2, n, 2, axis) for x in xs])
        even = [concatenate_p.bind(h, t, dimension=axis) for h, t in zip(heads, tail)]
    else:
        even = heads
    return [_interleave(e, o, n, axis) for e, o in zip(even, odd)]


def _cum_chooser_jvp(prim, pair_prim):
    """cummax/cummin: the derivative of the running max/min computed as JAX computes it,
    by the odd/even prefix scan of ``max``/``min`` carrying tangents with max's tie rule
    (a tie splits the tangent in halves, level by level of the scan: cummax'([1, 3, 3])
    summed is [1, 1.5, 0.5] there, not the first or last occurrence)."""
    from .elementwise import _balanced_eq, add_p, mul_p
    from .shape import rev_p

    def combine(a, b):
        (x, tx), (y, ty) = a, b
        z = pair_prim.bind(x, y)
        t = add_p.bind(mul_p.bind(tx, _balanced_eq(x, z, y)),
                       mul_p.bind(ty, _balanced_eq(y, z, x)))
        return [z, t]

    def rule(primals, tangents, axis, reverse=False):
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        if g is None:
            return ans, None
        if reverse:
            x, g = rev_p.bind(x, dimensions=(axis,)), rev_p.bind(g, dimensions=(axis,))
        t = _odd_even_prefix([x, g], combine, axis)[1]
        if reverse:
            t = rev_p.bind(t, dimensions=(axis,))
        return ans, t
    prim.jvp = rule


_cum_chooser_jvp(cummax_p, _elementwise.max_p)
_cum_chooser_jvp(cummin_p, _elementwise.min_p)


def _shifted(y, k, fill, axis, reverse):
    """``y`` moved ``k`` places along ``axis`` in scan order, ``fill`` coming in."""
    from .shape import broadcast_in_dim_p, pad_p, slice_p
    aval = get_aval(y)
    shape = tuple(aval.shape)
    n = shape[axis]
    fv = np.array(fill, aval.dtype)
    if k >= n:
        return broadcast_in_dim_p.bind(fv, shape=shape, broadcast_dimensions=())
    start = [0] * len(shape)
    limit = list(shape)
    cfg = [(0, 0, 0)] * len(shape)
    if reverse:
        start[axis] = k
        cfg[axis] = (0, k, 0)
    else:
        limit[axis] = n - k
        cfg[axis] = (k, 0, 0)
    kept = slice_p.bind(y, start_indices=tuple(start), limit_indices=tuple(limit),
                        strides=None)
    return pad_p.bind(kept, fv, padding_config=tuple(cfg))


def _cumprod_jvp(primals, tangents, axis, reverse=False):
    """The forward derivative of a doubling (Hillis-Steele) prefix product: log2(n) steps
    of ``y <- y * shift(y)``, carried with their tangents (exact with zeros, and itself
    built of differentiable primitives)."""
    from .elementwise import add_p, mul_p
    (x,), (g,) = primals, tangents
    ans = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if g is None:
        return ans, None
    n = get_aval(x).shape[axis]
    y, t, k = x, g, 1
    while k < n:
        sy = _shifted(y, k, 1, axis, reverse)
        st = _shifted(t, k, 0, axis, reverse)
        t = add_p.bind(mul_p.bind(t, sy), mul_p.bind(y, st))
        y = mul_p.bind(y, sy)
        k *= 2
    return ans, t


cumprod_p.jvp = _cumprod_jvp


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------

from . import _lowering as _lo  # noqa: E402

_COMBINE = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum",
            "and": "and", "or": "or", "xor": "xor"}


def _lex_pick(ctx, a, b, is_max):
    """Of complex scalars ``a`` and ``b``: ``a`` when it is lexicographically greater
    (``is_max``) or smaller, else ``b`` (XLA's complex max/min)."""
    rt = ctx.aval(a.aval.shape, np.float64 if a.aval.dtype == np.complex128 else np.float32)
    ar, br = ctx.op("stablehlo.real", [a], rt), ctx.op("stablehlo.real", [b], rt)
    ai, bi = ctx.op("stablehlo.imag", [a], rt), ctx.op("stablehlo.imag", [b], rt)
    d = "GT" if is_max else "LT"
    pick = ctx.binary("or", ctx.compare(ar, br, d),
                      ctx.binary("and", ctx.compare(ar, br, "EQ"), ctx.compare(ai, bi, d)))
    return ctx.select(pick, a, b)


def _combiner(ctx, monoid, dt):
    """The region combining two scalars of ``dt`` with ``monoid``.  In a program XLA
    partitions (``ctx.num_partitions > 1``) a real max/min is XLA's own ``maximum`` /
    ``minimum``: its partitioner turns the reduction of a split dimension into an
    all-reduce only over a region it recognises (the spelled-out NaN and signed-zero
    rules of ``_lowering.maximum`` are then XLA's, as in JAX)."""
    if monoid in ("max", "min") and ctx.num_partitions > 1 and np.dtype(dt).kind == "f":
        return ctx.scalar_region([dt], lambda a, b: ctx.binary(_COMBINE[monoid], a, b))
    if monoid in ("max", "min") and np.dtype(dt).kind == "c":
        return ctx.scalar_region([dt], lambda a, b: _lex_pick(ctx, a, b, monoid == "max"))
    if monoid == "max":
        return ctx.scalar_region([dt], lambda a, b: _lo.maximum(ctx, a, b))
    if monoid == "min":
        return ctx.scalar_region([dt], lambda a, b: _lo.minimum(ctx, a, b))
    return ctx.scalar_region([dt], lambda a, b: ctx.binary(_COMBINE[monoid], a, b))


def _reduce_lowering(name):
    monoid = {"reduce_sum": "add", "reduce_prod": "mul", "reduce_max": "max",
              "reduce_min": "min", "reduce_and": "and", "reduce_or": "or",
              "reduce_xor": "xor"}[name]

    def rule(ctx, x, axes, **sharding):
        out = ctx.avals_out[0]
        dt = x.aval.dtype
        # half precision sums and products accumulate in float32, as the implementation
        wide = monoid in ("add", "mul") and dt in _HALF
        if wide:
            x = ctx.convert(x, np.float32)
        cdt = x.aval.dtype
        init = _monoid_identity(monoid)(dt)
        init_v = ctx.constant(np.asarray(init).astype(cdt), cdt)
        r = ctx.op("stablehlo.reduce", [x, init_v], ctx.aval(out.shape, cdt),
                   {"dimensions": ctx.i64s(sorted(int(a) for a in axes))},
                   regions=[_combiner(ctx, monoid, cdt)])
        return ctx.convert(r, out.dtype)
    return rule


for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p,
           reduce_or_p, reduce_xor_p):
    _p.lowering = _reduce_lowering(_p.name)


def _arg_lowering(is_max):
    def rule(ctx, x, axes, index_dtype):
        axis = int(axes[0])
        out = ctx.avals_out[0]
        dt = x.aval.dtype
        idt = np.dtype(index_dtype)
        idx = ctx.op("stablehlo.iota", [], ctx.aval(x.aval.shape, idt),
                     {"iota_dimension": ctx.i64(axis)})
        d = "GT" if is_max else "LT"

        def body(a, ia, b, ib):
            if dt.kind == "c":
                rt = np.float64 if dt == np.complex128 else np.float32
                sa = ctx.aval((), rt)
                ar, br = ctx.op("stablehlo.real", [a], sa), ctx.op("stablehlo.real", [b], sa)
                ai, bi = ctx.op("stablehlo.imag", [a], sa), ctx.op("stablehlo.imag", [b], sa)
                better = ctx.binary("or", ctx.compare(ar, br, d), ctx.binary(
                    "and", ctx.compare(ar, br, "EQ"), ctx.compare(ai, bi, d)))
                tie = ctx.binary("and", ctx.compare(ar, br, "EQ"), ctx.compare(ai, bi, "EQ"))
            else:
                better = ctx.compare(a, b, d)
                tie = ctx.compare(a, b, "EQ")
                if dtypes.is_float(dt):        # NaN wins; the first NaN of several
                    a_nan, b_nan = ctx.compare(a, a, "NE"), ctx.compare(b, b, "NE")
                    better = ctx.binary("or", better, ctx.binary(
                        "and", a_nan, ctx.unary("not", b_nan)))
                    tie = ctx.binary("or", tie, ctx.binary("and", a_nan, b_nan))
            pick_a = ctx.binary("or", better, ctx.binary("and", tie, ctx.compare(ia, ib, "LT")))
            return [ctx.select(pick_a, a, b), ctx.select(pick_a, ia, ib)]

        region = ctx.region([ctx.aval((), dt), ctx.aval((), idt)] * 2, body)
        if dtypes.is_float(dt):
            init = dtypes.float_bounds(dt)[0 if is_max else 1]
        elif dt.kind == "c":
            init = complex(-np.inf, -np.inf) if is_max else complex(np.inf, np.inf)
        else:
            init = _identity("reduce_max" if is_max else "reduce_min", dt)
        _, r = ctx.op("stablehlo.reduce", [x, idx, ctx.constant(init, dt),
                                           ctx.constant(0, idt)],
                      [ctx.aval(out.shape, dt), out], {"dimensions": ctx.i64s([axis])},
                      regions=[region])
        return r
    return rule


argmax_p.lowering = _arg_lowering(True)
argmin_p.lowering = _arg_lowering(False)


def _cum_lowering(name):
    monoid = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}[name]

    def rule(ctx, x, axis, reverse=False):
        dt = x.aval.dtype
        n = x.aval.shape[axis]
        wide = monoid in ("add", "mul") and dt in _HALF
        cdt = np.dtype(np.float32) if (wide or dt in _HALF) else dt
        x = ctx.convert(x, cdt)
        nd = x.aval.ndim
        window = [1] * nd
        window[axis] = max(n, 1)
        pad = [[0, 0] for _ in range(nd)]
        pad[axis] = [0, n - 1] if reverse else [n - 1, 0]
        if monoid in ("max", "min"):
            init = _monoid_identity(monoid)(dt)
        else:
            init = _monoid_identity(monoid)(cdt)
        r = ctx.op("stablehlo.reduce_window", [x, ctx.constant(np.asarray(init).astype(cdt),
                                                              cdt)],
                   x.aval, {"window_dimensions": ctx.i64s(window),
                            "window_strides": ctx.i64s([1] * nd),
                            "padding": ctx.dense_i64_2d(pad)},
                   regions=[_combiner(ctx, monoid, cdt)])
        return ctx.convert(r, dt)
    return rule


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p):
    _p.lowering = _cum_lowering(_p.name)


def _sort_lower(ctx, *xs, dimension, is_stable, num_keys):
    """``stablehlo.sort`` with the implementation's order: keys compared in turn (complex
    ones by real, then imaginary part), NaN after every number, equal keys (-0.0 and 0.0
    included) keeping their order (stable)."""
    dts = [x.aval.dtype for x in xs]

    def parts(v):
        if v.aval.dtype.kind == "c":
            rt = ctx.aval((), np.float64 if v.aval.dtype == np.complex128 else np.float32)
            return [ctx.op("stablehlo.real", [v], rt), ctx.op("stablehlo.imag", [v], rt)]
        return [v]

    def body(*args):
        lt = None
        eq = None
        for k in range(num_keys):
            for a, b in zip(parts(args[2 * k]), parts(args[2 * k + 1])):
                if dtypes.is_float(a.aval.dtype):
                    a_nan, b_nan = ctx.compare(a, a, "NE"), ctx.compare(b, b, "NE")
                    less = ctx.binary("or", ctx.compare(a, b, "LT"),
                                      ctx.binary("and", ctx.unary("not", a_nan), b_nan))
                    same = ctx.binary("or", ctx.compare(a, b, "EQ"),
                                      ctx.binary("and", a_nan, b_nan))
                else:
                    less, same = ctx.compare(a, b, "LT"), ctx.compare(a, b, "EQ")
                if lt is None:
                    lt, eq = less, same
                else:
                    lt = ctx.binary("or", lt, ctx.binary("and", eq, less))
                    eq = ctx.binary("and", eq, same)
        return [lt]

    region = ctx.region([ctx.aval((), d) for d in dts for _ in range(2)], body)
    return ctx.op("stablehlo.sort", list(xs), [x.aval for x in xs],
                  {"dimension": ctx.i64(dimension), "is_stable": "true"}, regions=[region])


sort_p.lowering = _sort_lower


def _top_k_composed(x, k, axis):
    """top_k written with sort (StableHLO has no top_k): the total-order key, a stable sort
    of the reversed axis carrying the values and an iota, reversed back and cut to k."""
    from .elementwise import bitcast_convert_type_p, lt_p, select_n_p, xor_p
    from .shape import broadcast_in_dim_p, iota_p, rev_p, slice_p
    aval = get_aval(x)
    shape = tuple(aval.shape)
    key = x
    if dtypes.is_float(aval.dtype):
        ity = np.dtype(f"int{8 * np.dtype(aval.dtype).itemsize}")
        bits = bitcast_convert_type_p.bind(x, new_dtype=ity)

        def full(v):
            return broadcast_in_dim_p.bind(np.asarray(v, ity), shape=shape,
                                           broadcast_dimensions=())
        flipped = xor_p.bind(bits, full(np.iinfo(ity).max))
        key = select_n_p.bind(lt_p.bind(bits, full(0)), bits, flipped)
    idx = iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=axis)
    rv = [rev_p.bind(v, dimensions=(axis,)) for v in (key, x, idx)]
    _, vals, ids = sort_p.bind(*rv, dimension=axis, is_stable=True, num_keys=1)
    hi = list(shape)
    hi[axis] = k
    return [slice_p.bind(rev_p.bind(v, dimensions=(axis,)), start_indices=(0,) * len(shape),
                         limit_indices=tuple(hi), strides=None) for v in (vals, ids)]


top_k_p.lowering = lambda ctx, x, k, axis: ctx.lower_fun(
    lambda v: _top_k_composed(v, k, axis), x, multiple_results=True)
