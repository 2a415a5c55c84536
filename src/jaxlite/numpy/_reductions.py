"""Reductions of ``jax.numpy``: sums, extrema, statistics, cumulative ops, quantiles.

Layer: numpy (compositions of ``jaxlite.lax``; they run eagerly, under jit and later under
the other transformations alike).

Common arguments: ``axis`` is None (all axes), an int (negative counts from the end) or a
tuple of ints; ``keepdims`` keeps reduced axes as size 1; ``where`` (a bool array that
broadcasts to the input) masks elements out, which then count as the reduction's identity;
``dtype`` sets the accumulation/result dtype; ``initial`` is an extra element of every
reduction.  Results are never weakly typed (as in JAX).  Axis errors are ValueErrors.
Dtype rules (checked against JAX): sums/products of bool and of ints narrower than the
default int accumulate in the default int (unsigned: default uint); means, variances and
quantiles of bools/ints are in the default float dtype; extrema keep the input dtype.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import dtypes, errors, lax
from ._named_jit import named_jit
from ._util import (broadcast_to_shape, canonicalize_axis, check_arraylike, check_out,
                    convert, ensure_array, promote_dtypes_inexact, public_names)


# ---- helpers ------------------------------------------------------------------------------

def _arr(name, a):
    check_arraylike(name, a)
    return ensure_array(a)


def _strong(x):
    """``x`` without its weak type (reductions return strongly typed results)."""
    return lax._convert(x, x.dtype, False) if x.weak_type else x


def _keep(out, shape, axes, keepdims):
    if not keepdims:
        return out
    # a broadcast that inserts the size-1 dimensions (lax.expand_dims), as JAX's keepdims
    return lax.expand_dims(out, tuple(axes))


def _axis_ints(axis):
    """The entries of ``axis`` (an int or a tuple/list of them) as Python ints.  A traced
    axis raises ConcretizationTypeError (as JAX's reductions do: the axis decides the
    result's shape, so it must be static), a traced entry of a tuple of axes
    TracerIntegerConversionError (as JAX, which indexes the entries); any other
    non-integer TypeError."""
    seq = isinstance(axis, (tuple, list))
    items = tuple(axis) if seq else (axis,)
    try:
        return tuple(operator.index(a) for a in items)
    except errors.TracerIntegerConversionError:
        if seq:
            raise
        raise errors.ConcretizationTypeError(
            axis, "It arose in the axis argument of a reduction: the axis must be "
                  "static.") from None
    except TypeError:
        raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}") \
            from None


def _axes(axis, ndim):
    """Normalised tuple of reduced axes.  Raises TypeError for a non-integer axis and
    ValueError for an out-of-range or repeated one."""
    if axis is None:
        return tuple(range(ndim))
    items = _axis_ints(axis)
    out = tuple(canonicalize_axis(a, ndim) for a in items)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis': {items}")
    return out


def _indexed_axes(axis, ndim):
    """``_axes`` for the reductions that index the shape with each axis before anything
    else (argmax/argmin, and mean/var/std without ``where``, which count the reduced
    elements first): there an out-of-range axis raises IndexError, as in JAX, ahead of
    the ValueError for a repeated one."""
    if axis is None:
        return tuple(range(ndim))
    items = _axis_ints(axis)
    for a in items:
        if not -ndim <= a < ndim:
            raise IndexError(f"axis {a} is out of range for an array of dimension {ndim}")
    return _axes(items, ndim)


def _count(shape, axes):
    n = 1
    for i in axes:
        n *= shape[i]
    return n


def _sum_dtype(dt):
    """Accumulation dtype of sum/prod: bool and narrow ints widen to the default int."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return dtypes.default_int_dtype()
    if dt.kind == "i" and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if dt.kind == "u" and dt.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return dt


def _inexact_dtype(dt):
    return dtypes.to_inexact_dtype(dt)


def _upcast_half(dt):
    """float16/bfloat16 statistics are computed in float32 (as JAX) and rounded at the end."""
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dtypes.is_float(dt) and dt.itemsize == 2 else dt


def _real_dtype(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    return dt


def _full(shape, value, like):
    """``value`` broadcast to ``shape`` with the dtype/weak type of array ``like``."""
    v = lax.scalar_as(value, like.dtype, like.weak_type)
    if not shape:
        return v
    return lax.broadcast_in_dim(v, tuple(shape), ())


def _isnan(x):
    return lax.ne(x, x)


def _where_mask(name, where, shape):
    """``where`` as a bool array of ``shape``.  Raises ValueError for a non-bool mask."""
    check_arraylike(name, where)
    w = ensure_array(where)
    if w.dtype != np.bool_:
        raise ValueError(f"jnp.{name}: the where mask must have dtype bool (or be None), "
                         f"not {w.dtype!r}")
    return broadcast_to_shape(w, shape)


def _select(mask, a, fill):
    """``a`` where ``mask`` else the scalar ``fill`` (in ``a``'s dtype)."""
    return lax.select(mask, a, _full(a.shape, fill, a))


# ---- sum / prod ---------------------------------------------------------------------------

def _check_initial(name, initial):
    """``initial`` is one array-like scalar: TypeError for a list or other non-array,
    ValueError for an array of another shape (as JAX; NumPy would broadcast it)."""
    check_arraylike(name, initial)
    if np.ndim(initial) != 0:
        raise ValueError(f"{name}: initial value must be a scalar; got an array of shape "
                         f"{np.shape(initial)}")


def _sum_like(name, prim, identity, combine, a, axis, dtype, keepdims, initial, where,
              promote_integers):
    a = _arr(name, a)
    axes = _axes(axis, a.ndim)
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
    elif promote_integers or a.dtype == np.bool_:
        dt = _sum_dtype(a.dtype)
    else:
        dt = a.dtype
    if dt == np.bool_:
        # bool accumulation: sum is "any", product is "all" (XLA's add/mul on pred)
        prim = lax.reduce_or if name == "sum" else lax.reduce_and
        identity = name != "sum"
    if a.dtype == np.bool_ and dt != np.bool_:
        # bools count as the default integer first, as JAX converts them (to int32, then
        # to a float dtype: its printed program shows both)
        a = convert(a, dtypes.canonicalize_dtype(np.int64))
    # strongly typed before reducing, as JAX converts (its printed program shows it there)
    a = _strong(convert(a, dt))
    if where is not None:
        # jnp.where (a named jit where a program is traced, as JAX's reductions use it)
        from ._ufuncs import where as _where
        a = _where(_where_mask(name, where, a.shape), a, np.array(identity, a.dtype))
    out = _strong(prim(a, axes))
    if initial is not None:
        _check_initial(name, initial)
        out = combine(convert(ensure_array(initial), dt), out)     # JAX's operand order
    return _keep(out, a.shape, axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    """Sum of elements over ``axis`` (``jax.numpy.sum``).

    Args: ``a`` array-like of any numeric/bool dtype; ``axis`` None/int/tuple; ``dtype``
    result dtype; ``initial`` added to every sum; ``where`` bool mask (masked elements count
    as 0); ``promote_integers`` (default True) sums bool/narrow ints in the default int.
    Returns: the reduced array (strongly typed).
    Raises: ValueError for an out-of-range or repeated axis or a non-bool ``where``.

    >>> import jaxlite.numpy as jnp
    >>> jnp.sum(jnp.arange(6).reshape(2, 3), axis=0)
    Array([3, 5, 7], dtype=int32)
    """
    check_out("sum", out)
    return _sum_like("sum", lax.reduce_sum, 0, lax.add, a, axis, dtype, keepdims, initial,
                     where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product of elements over ``axis`` (``jax.numpy.prod``); masked elements count as 1.
    Same arguments, dtype rules and errors as ``sum``."""
    check_out("prod", out)
    return _sum_like("prod", lax.reduce_prod, 1, lax.mul, a, axis, dtype, keepdims, initial,
                     where, promote_integers)


# ---- extrema ------------------------------------------------------------------------------

def _min_identity(dt):
    dt = np.dtype(dt)
    if dtypes.is_float(dt):
        return dtypes.float_bounds(dt)[1]      # finite for float8_e4m3fn and kin
    if dtypes.is_inexact(dt):
        return np.inf
    if dt == np.bool_:
        return True
    return int(dtypes.iinfo(dt).max)


def _max_identity(dt):
    dt = np.dtype(dt)
    if dtypes.is_float(dt):
        return dtypes.float_bounds(dt)[0]
    if dtypes.is_inexact(dt):
        return -np.inf
    if dt == np.bool_:
        return False
    return int(dtypes.iinfo(dt).min)


# ---- complex max/min in XLA's order ------------------------------------------------------
# JAX's complex max (min) reduces with x if x > acc else acc... precisely: acc stays only if
# acc > x lexicographically (real part, then imaginary part), where every comparison with a
# NaN part is False; so a NaN is taken and then replaced by the next element, and of equal
# elements the last one wins.  The result depends on the order of the reduction, which is
# XLA's on CPU: a sequential fold from the identity over the reduced elements in row-major
# order, except that a reduction with some reduced dimension above 32 first reduces windows
# of 32 along each such dimension (the whole extent along the others), placed with the
# padding split evenly before and after (padding is skipped), then reduces the windows'
# results the same way.  A reduction of a single element returns it unchanged.

_XLA_WINDOW = 32


def _complex_fold(x, valid, init, is_max):
    """The sequential fold over the last axis of complex ``x`` (``valid``: bool mask of
    the elements taking part, None for all), starting from ``init``; vectorised: after the
    last element with a NaN real part the fold is a lexicographic extremum, ties and NaN
    imaginary parts among the elements with the extreme real part resolved the same way."""
    lead, m = x.shape[:-1], x.shape[-1]
    col = lead + (1,)
    x = lax.concatenate([_full(col, init, x), x], len(lead))
    ok = lax.broadcast_in_dim(lax.scalar_as(True, np.bool_, False), x.shape, ()) \
        if valid is None else lax.concatenate([_full(col, True, valid), valid], len(lead))
    shape = x.shape
    last = len(lead)
    it = dtypes.default_int_dtype()
    pos = lax.broadcasted_iota(it, shape, last)
    none = _full(shape, -1, pos)
    re, im = lax.real(x), lax.imag(x)

    def last_where(mask):       # index of the last True along the axis (-1 if none)
        return lax.reduce_max(lax.select(mask, pos, none), (last,))

    def spread(v):              # a per-row value broadcast along the axis
        return lax.broadcast_in_dim(v, shape, tuple(range(last)))

    extreme, worst = (lax.reduce_max, -np.inf) if is_max else (lax.reduce_min, np.inf)
    nan_re = lax.bitwise_and(ok, _isnan(re))
    l_nan = last_where(nan_re)
    l_ok = last_where(ok)
    tail = lax.bitwise_and(ok, lax.gt(pos, spread(l_nan)))
    r = extreme(lax.select(tail, re, _full(shape, worst, re)), (last,))
    ties = lax.bitwise_and(tail, lax.eq(re, spread(r)))
    nan_im = lax.bitwise_and(ties, _isnan(im))
    l_nan_im = last_where(nan_im)
    l_tie = last_where(ties)
    rest = lax.bitwise_and(ties, lax.gt(pos, spread(l_nan_im)))
    i = extreme(lax.select(rest, im, _full(shape, worst, im)), (last,))
    pick = last_where(lax.bitwise_and(rest, lax.eq(im, spread(i))))
    idx = lax.select(lax.eq(l_nan, l_ok), l_nan, lax.select(lax.eq(l_nan_im, l_tie), l_tie,
                                                            pick))
    nb = _count(lead, range(len(lead)))
    flat = lax.reshape(x, (nb, m + 1))
    rows = lax.broadcasted_iota(it, (nb,), 0)
    out = lax.gather_indexed(flat, (("array", 0), ("array", 1)),
                             [rows, lax.reshape(idx, (nb,))], mode="clip")
    return lax.reshape(out, lead)


def _complex_extremum(a, axes, is_max):
    """``max``/``min`` of complex ``a`` over ``axes`` as XLA computes it (see above)."""
    kept = [d for d in range(a.ndim) if d not in axes]
    kshape = tuple(a.shape[d] for d in kept)
    dims = [a.shape[d] for d in sorted(axes)]
    x = lax.transpose(a, tuple(kept) + tuple(sorted(axes))) if axes else a
    n = _count(dims, range(len(dims)))
    init = complex(-np.inf if is_max else np.inf, 0)
    if n == 0:
        return _full(kshape, init, a)
    if n == 1:
        return lax.reshape(x, kshape)
    valid = None
    k = len(kshape)
    while builtins.any(d > _XLA_WINDOW for d in dims):
        win = [_XLA_WINDOW if d > _XLA_WINDOW else d for d in dims]
        nw = [-(-d // w) for d, w in zip(dims, win)]
        pads = [w * c - d for d, w, c in zip(dims, win, nw)]
        config = [(0, 0, 0)] * k + [(p // 2, p - p // 2, 0) for p in pads]
        if builtins.any(pads):
            if valid is None:
                valid = _full(x.shape, True, ensure_array(np.bool_(True)))
            x = lax.pad(x, lax.scalar_as(0, x.dtype, False), config)
            valid = lax.pad(valid, np.bool_(False), config)
        split = kshape + tuple(v for c, w in zip(nw, win) for v in (c, w))
        order = tuple(range(k)) + tuple(k + 2 * j for j in range(len(dims))) + \
            tuple(k + 2 * j + 1 for j in range(len(dims)))
        grouped = kshape + tuple(nw) + (_count(win, range(len(win))),)

        def windows(v):
            return lax.reshape(lax.transpose(lax.reshape(v, split), order), grouped)

        x = _complex_fold(windows(x), None if valid is None else windows(valid), init,
                          is_max)
        valid, dims = None, nw
    x = lax.reshape(x, kshape + (_count(dims, range(len(dims))),))
    return _complex_fold(x, valid, init, is_max)


def _extremum(name, prim, combine, identity, a, axis, keepdims, initial, where):
    a = _arr(name, a)
    axes = _axes(axis, a.ndim)
    if where is not None and initial is None:
        raise ValueError(f"{name} has no identity element: a where mask needs an explicit "
                         f"'initial' value")
    if initial is None and builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no "
                         f"identity (shape {a.shape}, axis {axis})")
    a = _strong(a)         # strongly typed before reducing, as JAX converts
    if where is not None:
        from ._ufuncs import where as _where      # (a named jit, as in _sum_like)
        a = _where(_where_mask(name, where, a.shape), a, np.array(identity(a.dtype),
                                                                  a.dtype))
    if a.dtype.kind == "c":
        out = _strong(_complex_extremum(a, axes, prim is lax.reduce_max))
    else:
        out = _strong(prim(a, axes))
    if initial is not None:
        _check_initial(name, initial)
        init = convert(ensure_array(initial), out.dtype)
        if out.dtype.kind == "c":
            # as JAX: initial if initial > result (lexicographic, NaN compares False)
            # else the result
            first = prim is lax.reduce_max
            init = lax.broadcast_in_dim(init, out.shape, ()) if out.shape else init
            cmp = lax.gt if first else lax.lt
            re0, re1, im0, im1 = lax.real(init), lax.real(out), lax.imag(init), lax.imag(out)
            wins = lax.bitwise_or(cmp(re0, re1), lax.bitwise_and(lax.eq(re0, re1),
                                                                 cmp(im0, im1)))
            out = lax.select(wins, init, out)
        else:
            out = combine(init, out)         # JAX's operand order
    return _keep(out, a.shape, axes, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Largest element over ``axis`` (``jax.numpy.max``); NaN propagates.

    Returns the input dtype.  Raises ValueError for an empty reduction without ``initial``
    and for ``where`` without ``initial`` (as JAX), and for a bad axis.
    """
    check_out("max", out)
    return _extremum("max", lax.reduce_max, lax.max, _max_identity, a, axis, keepdims,
                     initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Smallest element over ``axis`` (``jax.numpy.min``); see ``max``."""
    check_out("min", out)
    return _extremum("min", lax.reduce_min, lax.min, _min_identity, a, axis, keepdims,
                     initial, where)


amax, amin = max, min


def ptp(a, axis=None, out=None, keepdims=False):
    """``max - min`` over ``axis`` (``jax.numpy.ptp``).  Raises TypeError for bool input
    (subtraction of bools), ValueError for an empty reduction."""
    check_out("ptp", out)
    a = _arr("ptp", a)
    if a.dtype == np.bool_:
        raise TypeError("jnp.ptp does not accept boolean arguments (max - min of bools).")
    return _ptp(a, axis=tuple(axis) if isinstance(axis, list) else axis,
                keepdims=bool(keepdims))


@named_jit("_ptp", static_argnames=("axis", "keepdims"))
def _ptp(a, axis, keepdims):
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


# ---- logical ------------------------------------------------------------------------------

def _logical(name, prim, identity, a, axis, keepdims, where):
    a = _arr(name, a)
    axes = _axes(axis, a.ndim)
    if a.dtype != np.bool_:
        a = lax.convert_element_type(a, np.bool_)     # nonzero, as JAX converts
    if where is not None:
        a = _select(_where_mask(name, where, a.shape), a, identity)
    return _keep(_strong(prim(a, axes)), a.shape, axes, keepdims)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where every element over ``axis`` is nonzero (``jax.numpy.all``); bool
    result; True for an empty reduction."""
    check_out("all", out)
    return _logical("all", lax.reduce_and, True, a, axis, keepdims, where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where some element over ``axis`` is nonzero (``jax.numpy.any``); bool result;
    False for an empty reduction."""
    check_out("any", out)
    return _logical("any", lax.reduce_or, False, a, axis, keepdims, where)


@named_jit("count_nonzero", static_argnames=("axis", "keepdims"))
def count_nonzero(a, axis=None, keepdims=False):
    """Number of nonzero elements over ``axis`` in the default int dtype
    (``jax.numpy.count_nonzero``)."""
    a = _arr("count_nonzero", a)
    nz = a if a.dtype == np.bool_ else lax.ne(a, _full((), 0, a))
    return sum(nz, axis=axis, keepdims=keepdims, dtype=dtypes.default_int_dtype())


# ---- mean / var / std ---------------------------------------------------------------------

def _mean_dtype(a, dtype):
    if dtype is not None:
        return dtypes.canonicalize_dtype(dtype)
    return _inexact_dtype(a.dtype)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (``jax.numpy.mean``).

    Bools/ints average in the default float dtype; ``dtype`` overrides.  With ``where``, the
    mean of the selected elements (NaN where none is selected).  The mean of an empty
    reduction is NaN.  Raises ValueError for a bad axis.
    """
    check_out("mean", out)
    a = _arr("mean", a)
    axes = _axes(axis, a.ndim) if where is not None else _indexed_axes(axis, a.ndim)
    dt = _mean_dtype(a, dtype)
    if not dtypes.is_inexact(dt):
        return _int_mean(a, axes, dt, keepdims, where)
    acc = _upcast_half(_inexact_dtype(dt))
    if dtype is not None and a.dtype != dt:
        # as JAX: the values are cast to the requested dtype first (a float32 input asked
        # for a float16 mean is rounded to float16), then summed in the wider dtype
        a = convert(a, dt)
    s = sum(a, axis=axes, dtype=acc, keepdims=keepdims, where=where)
    if where is None:
        n = lax.scalar_as(_count(a.shape, axes), s.dtype, False)
        out = lax.div(s, n)
    else:
        cnt = sum(_where_mask("mean", where, a.shape), axis=axes, keepdims=keepdims,
                  dtype=s.dtype if s.dtype.kind != "c" else _real_dtype(s.dtype))
        out = lax.div(s, convert(cnt, s.dtype))
    return convert(out, dt)


def _int_mean(a, axes, dt, keepdims, where):
    """``mean`` with an integer (or bool) ``dtype``: as JAX, computed in that dtype, so the
    sum wraps and the division by the count truncates toward zero (bool: TypeError from
    the division, as JAX)."""
    s = sum(a, axis=axes, dtype=dt, keepdims=keepdims, where=where)
    if where is None:
        with np.errstate(all="ignore"):
            n = np.asarray(_count(a.shape, axes)).astype(dt)[()]
    else:
        n = sum(_where_mask("mean", where, a.shape), axis=axes, keepdims=keepdims, dtype=dt)
    return lax.div(s, n)


def _int_var(name, a, axes, dt, ddof, keepdims, where, mean_):
    """``var`` with an integer (or bool) ``dtype``, as JAX computes it: the mean, the
    deviations, their squares and sum all in that dtype (wrapping, truncating), then a
    weakly typed default-float result that is NaN where the count minus ``ddof`` is not
    positive (JAX selects against a Python NaN there)."""
    x = convert(a, dt)
    if mean_ is None:
        m = _int_mean(x, axes, dt, True, where)
    else:
        check_arraylike(name, mean_)
        m = convert(ensure_array(mean_), dt)
    centered = lax.sub(x, broadcast_to_shape(m, x.shape) if np.ndim(m) else m)
    sq = lax.mul(centered, centered)
    if where is None:
        with np.errstate(all="ignore"):
            n = ensure_array(np.asarray(_count(a.shape, axes)).astype(dt))
    else:
        n = sum(_where_mask(name, where, a.shape), axis=axes, keepdims=keepdims, dtype=dt)
    with np.errstate(all="ignore"):
        n = lax.sub(n, ensure_array(np.asarray(ddof).astype(dt)))
    total = sum(sq, axis=axes, dtype=dt, keepdims=keepdims, where=where)
    n = broadcast_to_shape(n, total.shape) if np.ndim(n) != np.ndim(total) else n
    ok = lax.gt(n, _full(n.shape, 0, n))
    # a count of 0 divides by 1 instead: its result is replaced by NaN anyway
    safe = lax.select(lax.eq(n, _full(n.shape, 0, n)), _full(n.shape, 1, n), n)
    fdt = dtypes.default_float_dtype()
    out = convert(lax.div(total, safe), fdt, True)
    return lax.select(ok, out, _full(out.shape, np.nan, out))


def _int_nanvar(name, a, axes, dt, ddof, keepdims, where, mean_):
    """``nanvar`` with an integer (or bool) ``dtype``, as JAX computes it: mean and squared
    deviations in that dtype, their sum in the default integer accumulation, then a float
    division by the count minus ``ddof`` converted back to ``dtype``."""
    x = convert(a, dt)
    if mean_ is None:
        m = _int_mean(x, axes, dt, True, where)
    else:
        check_arraylike(name, mean_)
        m = convert(ensure_array(mean_), dt)
    centered = lax.sub(x, broadcast_to_shape(m, x.shape) if np.ndim(m) else m)
    total = sum(lax.mul(centered, centered), axis=axes, keepdims=keepdims, where=where)
    cnt = sum(_full(x.shape, True, ensure_array(np.bool_(True))), axis=axes,
              keepdims=keepdims, where=where)
    cnt = lax.sub(cnt, lax.scalar_as(ddof, cnt.dtype, False))
    bad = lax.le(cnt, _full(cnt.shape, 0, cnt))
    fdt = dtypes.default_float_dtype()
    tot = convert(total, fdt, True)
    tot = lax.select(bad, _full(tot.shape, np.nan, tot), tot)
    div = convert(lax.select(bad, _full(cnt.shape, 1, cnt), cnt), fdt, True)
    return convert(lax.div(tot, div), dt)


def _ddof(ddof, correction, name):
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: pass ddof or correction, not both (ddof={ddof}, "
                         f"correction={correction})")
    return correction


def _var(name, a, axis, dtype, ddof, keepdims, where, mean_, nan):
    a = _arr(name, a)
    if dtype is not None:
        out_dt = dtypes.canonicalize_dtype(dtype)
        if a.dtype.kind == "c" and np.dtype(out_dt).kind != "c":
            raise ValueError(f"jnp.{name}: a real dtype ({np.dtype(out_dt).name}) for the "
                             f"variance of complex values is not supported (as in JAX); "
                             f"take the variance in a complex dtype, or of abs(x)")
        comp = _upcast_half(_inexact_dtype(out_dt))
    else:
        comp = _inexact_dtype(a.dtype)
        out_dt = _real_dtype(comp)
        comp = _upcast_half(comp)
    if dtype is not None and not dtypes.is_inexact(out_dt):
        axes = _axes(axis, a.ndim) if where is not None else _indexed_axes(axis, a.ndim)
        if nan:
            return _int_nanvar(name, a, axes, out_dt, ddof, keepdims, where, mean_)
        return _int_var(name, a, axes, out_dt, ddof, keepdims, where, mean_)
    # as JAX: without a mask (no where, and no NaN mask of nanvar's inexact computation)
    # the reduced elements are counted first, by indexing the shape (IndexError)
    # (nanvar's computation dtype is an explicit integer ``dtype`` unchanged: no NaN mask)
    counted = where is None and not (nan and dtypes.is_inexact(
        out_dt if dtype is not None else comp))
    axes = _indexed_axes(axis, a.ndim) if counted else _axes(axis, a.ndim)
    x = convert(a, comp)
    mask = None if where is None else _where_mask(name, where, a.shape)
    if nan and dtypes.is_inexact(x.dtype):
        ok = lax.bitwise_not(_isnan(x))
        mask = ok if mask is None else lax.bitwise_and(mask, ok)
    if mean_ is None:
        m = mean(x, axes, keepdims=True, where=mask)
    else:
        check_arraylike(name, mean_)
        m = convert(ensure_array(mean_), comp)
        m = broadcast_to_shape(m, _keep_shape(a.shape, axes)) if m.ndim else m
    centered = lax.sub(x, m)        # (the keepdims mean's size-1 dimensions broadcast)
    if mask is not None:
        # masked-out (and NaN) deviations are zeroed before squaring, not after: a square
        # of NaN would send NaN back through the select in reverse mode (grad(nanvar) of
        # an array holding one NaN was all NaN; JAX gives 0 there and the true gradient
        # elsewhere)
        centered = _select(mask, centered, 0)
    if centered.dtype.kind == "c":
        sq = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        sq = lax.mul(centered, centered)
    rdt = sq.dtype
    total = _strong(lax.reduce_sum(sq, axes))
    if mask is None:
        count = _count(a.shape, axes) - ddof
        n = lax.scalar_as(count, rdt, False)
        if count > 0:
            return _keep(convert(lax.div(total, n), out_dt), a.shape, axes, keepdims)
    else:
        n = lax.reduce_sum(convert(mask, rdt), axes)
        if ddof:
            n = lax.sub(n, lax.scalar_as(ddof, rdt, False))
    # N - ddof <= 0 gives NaN, as JAX (dividing gave inf).  As in JAX, var/std still
    # divide by it (their gradient there is NaN), nanvar/nanstd divide by 1 instead (0).
    ok = lax.gt(n, lax.scalar_as(0, rdt, False))
    nan_out = _full(total.shape, np.nan, total)
    if nan:
        total = lax.select(_bcast(ok, total), total, nan_out)
        n = lax.select(ok, n, lax.scalar_as(1, rdt, False) if not np.ndim(n) else
                       _full(n.shape, 1, n))
        out = lax.div(total, n)
    else:
        out = lax.select(_bcast(ok, total), lax.div(total, n), nan_out)
    return _keep(convert(out, out_dt), a.shape, axes, keepdims)


def _bcast(pred, like):
    """A rank-0 predicate broadcast to ``like``'s shape (array predicates already are)."""
    if np.ndim(pred) == np.ndim(like):
        return pred
    return broadcast_to_shape(ensure_array(pred), like.shape)


def _keep_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Variance ``sum(|x - mean|**2) / (N - ddof)`` over ``axis`` (``jax.numpy.var``).

    ``correction`` is the Array-API name of ``ddof``.  Ints/bools compute in the default
    float dtype; complex inputs give a real result.  ``mean`` supplies a precomputed mean
    (broadcastable with keepdims=True shape).  Raises ValueError when both ``ddof`` and
    ``correction`` are given.
    """
    check_out("var", out)
    ddof = _ddof(ddof, correction, "var")
    return _var("var", a, axis, dtype, ddof, keepdims, where, mean, nan=False)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Standard deviation, ``sqrt(var(...))`` (``jax.numpy.std``); see ``var``."""
    check_out("std", out)
    ddof = _ddof(ddof, correction, "std")
    if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
        raise ValueError(f"jnp.std: dtype must be inexact (a square root is taken); got "
                         f"{np.dtype(dtypes.canonicalize_dtype(dtype)).name}")
    return lax.sqrt(_var("std", a, axis, dtype, ddof, keepdims, where, mean, nan=False))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted mean over ``axis`` (``jax.numpy.average``).

    ``weights`` has ``a``'s shape, or, with ``axis`` given (an int or a tuple), the shape of
    ``a`` along those axes in the order they are named (``a.shape[axis[0]], ...``), as in
    JAX.  With ``returned``, also returns the sum of weights broadcast to the result's
    shape.  Raises TypeError for a non-array ``a`` or ``weights`` and ValueError when the
    weights' shape fits neither rule, when ``axis`` is missing for weights of another
    shape, or for an out-of-range or repeated axis.
    """
    if weights is None:
        a = _arr("average", a)
        _axes(axis, a.ndim)     # a bad axis is a ValueError here (mean's is an IndexError)
        # promoted to inexact first, as JAX (a bool converts to float32 directly)
        avg = mean(promote_dtypes_inexact(a)[0], axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = _axes(axis, a.ndim)
        cnt = lax.scalar_as(_count(a.shape, axes), avg.dtype, False)
        return avg, broadcast_to_shape(ensure_array(cnt), avg.shape)
    check_arraylike("average", a, weights)
    a, w = promote_dtypes_inexact(a, weights)
    a, w = ensure_array(a), ensure_array(w)
    axes = _axes(axis, a.ndim)
    if w.shape != a.shape:
        if axis is None:
            raise ValueError(f"average: weights of shape {w.shape} differ from a's shape "
                             f"{a.shape}, so an axis is required")
        along = tuple(a.shape[ax] for ax in axes)
        if w.shape != along:
            raise ValueError(f"average: weights of shape {w.shape} do not fit a of shape "
                             f"{a.shape} along axis {axis}: they have to be a's shape or "
                             f"{along}")
        # weights' axes follow ``axis``'s order; broadcast_in_dim wants them ascending
        order = sorted(range(len(axes)), key=lambda k: axes[k])
        if order != list(range(len(axes))):
            w = lax.transpose(w, tuple(order))
        w = lax.broadcast_in_dim(w, a.shape, tuple(sorted(axes)))
    wsum = sum(w, axis=axes, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, w), axis=axes, keepdims=keepdims), wsum)
    if returned:
        return avg, broadcast_to_shape(wsum, avg.shape)
    return avg


# ---- argmax / argmin ----------------------------------------------------------------------

def _arg(name, prim, a, axis, keepdims):
    a = _arr(name, a)
    if axis is not None:    # a bad axis first (IndexError), as in JAX
        _indexed_axes(operator.index(axis), a.ndim)
    if a.dtype.kind == "c":
        raise TypeError(f"jnp.{name} does not accept dtype {a.dtype} (complex numbers are "
                        f"not ordered)")
    if axis is None:
        if a.size == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        flat = lax.reshape(a, (a.size,))
        r = prim(flat, 0, dtypes.default_int_dtype())
        return lax.reshape(r, (1,) * a.ndim) if keepdims else r
    (ax,) = _indexed_axes(operator.index(axis), a.ndim)
    if a.shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    r = prim(a, ax, dtypes.default_int_dtype())
    return _keep(r, a.shape, (ax,), keepdims)


def argmax(a, axis=None, out=None, keepdims=None):
    """Index (default int dtype) of the first largest element along ``axis``, of the
    flattened array when ``axis`` is None (``jax.numpy.argmax``); NaN counts as largest.
    Raises ValueError for an empty axis or a bad axis, TypeError for complex input."""
    check_out("argmax", out)
    return _arg("argmax", lax.argmax, a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
    """Index of the first smallest element (``jax.numpy.argmin``); see ``argmax``."""
    check_out("argmin", out)
    return _arg("argmin", lax.argmin, a, axis, keepdims)


# ---- NaN-ignoring reductions --------------------------------------------------------------

def _select_true(mask, value, a):
    return lax.select(mask, _full(a.shape, value, a), a)


def _replace_nan(name, a, fill):
    from ._ufuncs import where
    a = _arr(name, a)
    if not dtypes.is_inexact(a.dtype):
        return a
    # jnp.where with a scalar fill of a's type, as JAX (a nested _where jit when staged)
    return where(_isnan(a), lax.scalar_as(fill, a.dtype, a.weak_type), a)


@named_jit("nansum", static_argnames=("axis", "dtype", "keepdims"))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``sum`` treating NaN as 0 (``jax.numpy.nansum``)."""
    check_out("nansum", out)
    return sum(_replace_nan("nansum", a, 0), axis, dtype, keepdims=keepdims, initial=initial,
               where=where)


@named_jit("nanprod", static_argnames=("axis", "dtype", "keepdims"))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``prod`` treating NaN as 1 (``jax.numpy.nanprod``)."""
    check_out("nanprod", out)
    return prod(_replace_nan("nanprod", a, 1), axis, dtype, keepdims=keepdims,
                initial=initial, where=where)


def _nan_extremum(name, fn, fill, a, axis, keepdims, initial, where):
    a = _arr(name, a)
    if not dtypes.is_inexact(a.dtype):
        return fn(a, axis, keepdims=keepdims, initial=initial, where=where)
    nan = _isnan(a)
    out = fn(_select_true(nan, fill, a), axis, keepdims=keepdims, initial=initial,
             where=where)
    # a slice with no non-NaN (selected) element gives NaN
    valid = lax.bitwise_not(nan)
    if where is not None:
        valid = lax.bitwise_and(valid, _where_mask(name, where, a.shape))
    some = any(valid, axis, keepdims=keepdims)
    if initial is not None:
        return out
    return lax.select(some, out, _full(out.shape, np.nan, out))


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``max`` ignoring NaN; NaN where a slice is all-NaN (``jax.numpy.nanmax``).  Raises
    ValueError for an empty reduction without ``initial``."""
    check_out("nanmax", out)
    return _nan_extremum("nanmax", max, -np.inf, a, axis, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``min`` ignoring NaN (``jax.numpy.nanmin``); see ``nanmax``."""
    check_out("nanmin", out)
    return _nan_extremum("nanmin", min, np.inf, a, axis, keepdims, initial, where)


def _nan_arg(name, fn, fill, a, axis, keepdims):
    a = _arr(name, a)
    if not dtypes.is_inexact(a.dtype):
        return fn(a, axis, keepdims=keepdims)
    nan = _isnan(a)
    idx = fn(_select_true(nan, fill, a), axis, keepdims=keepdims)
    all_nan = all(nan, axis, keepdims=keepdims)
    return lax.select(all_nan, _full(idx.shape, -1, idx), idx)


def nanargmax(a, axis=None, out=None, keepdims=None):
    """``argmax`` ignoring NaN; -1 where a slice is all-NaN (``jax.numpy.nanargmax``)."""
    check_out("nanargmax", out)
    return _nan_arg("nanargmax", argmax, -np.inf, a, axis, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    """``argmin`` ignoring NaN; -1 where a slice is all-NaN (``jax.numpy.nanargmin``)."""
    check_out("nanargmin", out)
    return _nan_arg("nanargmin", argmin, np.inf, a, axis, keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Mean of the non-NaN elements (``jax.numpy.nanmean``); NaN for an all-NaN slice."""
    check_out("nanmean", out)
    a = _arr("nanmean", a)
    if not dtypes.is_inexact(a.dtype):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    valid = lax.bitwise_not(_isnan(a))
    if where is not None:
        valid = lax.bitwise_and(valid, _where_mask("nanmean", where, a.shape))
    dt = a.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    if not dtypes.is_inexact(dt):
        return mean(a, axis, dtype, keepdims=keepdims, where=valid)
    # as JAX: the NaN-free sum and the count, each in the result dtype, divided in it (a
    # float16 mean is rounded once more than ``mean``'s, which divides in float32)
    axes = _axes(axis, a.ndim)
    total = nansum(a, axis=axes, dtype=dt, keepdims=keepdims, where=valid)
    count = sum(valid, axis=axes, dtype=dt, keepdims=keepdims)
    return lax.div(total, count)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Variance of the non-NaN elements (``jax.numpy.nanvar``); see ``var``."""
    check_out("nanvar", out)
    return _var("nanvar", a, axis, dtype, ddof, keepdims, where, mean, nan=True)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Standard deviation of the non-NaN elements (``jax.numpy.nanstd``)."""
    check_out("nanstd", out)
    return lax.sqrt(_var("nanstd", a, axis, dtype, ddof, keepdims, where, mean, nan=True))


# ---- cumulative ---------------------------------------------------------------------------

def _cum_dtype(a, dtype):
    if dtype is not None:
        return dtypes.canonicalize_dtype(dtype)
    if a.dtype == np.bool_:
        return dtypes.default_int_dtype()
    return a.dtype


def _cumulative(name, prim, a, axis, dtype):
    a = _arr(name, a)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = canonicalize_axis(axis, a.ndim)
    a = _strong(convert(a, _cum_dtype(a, dtype)))
    if a.dtype == np.bool_:   # an explicit dtype=bool: accumulate as ints, then back
        return lax.ne(prim(convert(a, dtypes.default_int_dtype()), ax), 0)
    return prim(a, ax)


@named_jit("cumsum", static_argnames=("axis", "dtype"))
def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened when None) (``jax.numpy.cumsum``).  Bools
    accumulate in the default int dtype; other dtypes are kept.  Raises ValueError for a
    bad axis."""
    check_out("cumsum", out)
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype)


@named_jit("cumprod", static_argnames=("axis", "dtype"))
def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (``jax.numpy.cumprod``); see ``cumsum``."""
    check_out("cumprod", out)
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``cumsum`` treating NaN as 0 (``jax.numpy.nancumsum``)."""
    check_out("nancumsum", out)
    return cumsum(_replace_nan("nancumsum", a, 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``cumprod`` treating NaN as 1 (``jax.numpy.nancumprod``)."""
    check_out("nancumprod", out)
    return cumprod(_replace_nan("nancumprod", a, 1), axis, dtype)


def _cumulative_api(name, fn, identity, x, axis, dtype, include_initial, promote):
    x = _arr(name, x)
    if x.ndim == 0:
        raise ValueError(f"cumulative {name[11:]} needs an input of rank >= 1, got shape "
                         f"{x.shape}.")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: pass axis explicitly for an input of rank {x.ndim}; "
                             f"it may be left out only for 1-d inputs.")
        axis = 0
    ax = canonicalize_axis(axis, x.ndim)
    if dtype is None and promote:
        dtype = _sum_dtype(x.dtype)
    out = fn(x, ax, dtype)
    if include_initial:
        shape = list(out.shape)
        shape[ax] = 1
        first = _full(tuple(shape), identity, out)
        out = lax.concatenate([first, out], ax)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative sum (``jax.numpy.cumulative_sum``): ``axis`` may be omitted only
    for 1-D input; ``include_initial`` prepends a 0.  Bool/narrow ints accumulate in the
    default int (unlike ``cumsum``).  Raises ValueError otherwise."""
    return _cumulative_api("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial, True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative product (``jax.numpy.cumulative_prod``); see
    ``cumulative_sum`` (the initial element is 1)."""
    return _cumulative_api("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial,
                           False)


# ---- quantiles ----------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile_weights(name, a, weights, axis, method):
    """``a`` and ``weights`` promoted together (JAX), the weights broadcast to ``a``'s
    shape.  ValueError for complex weights or a shape that is neither ``a``'s nor that of
    the reduced axes; NotImplementedError for a method other than inverted_cdf."""
    check_arraylike(name, weights)
    weights = ensure_array(weights)
    if weights.dtype.kind == "c":
        raise ValueError("Weights cannot be complex types.")
    if method != "inverted_cdf":
        raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                  f"'inverted_cdf' supports weights.")
    a, weights = promote_dtypes_inexact(ensure_array(a), weights)
    if weights.shape != a.shape:
        if axis is None:
            raise ValueError("Weights shape must match 'a' shape when axis is None.")
        axes = tuple(canonicalize_axis(ax, a.ndim) for ax in
                     (axis if isinstance(axis, (tuple, list)) else (axis,)))
        want = tuple(a.shape[ax] for ax in axes)
        if weights.shape != want:
            raise ValueError(f"Weights shape {weights.shape} must match reduction axes "
                             f"{want}")
        weights = lax.broadcast_in_dim(weights, a.shape, axes)
    return a, weights


def _inverted_cdf(x, wx, qv, cnt, nan_skip):
    """The inverted-CDF quantile of each row of sorted ``x`` (nb, n) with weights ``wx``
    (sorted with it) at fractions ``qv`` (nq,): the first value whose cumulative weight
    reaches ``q`` times the row's total, as JAX picks it (negative or NaN weights and NaN
    values weigh nothing; the caller makes such rows NaN).  Returns (nq, nb)."""
    nb, n = x.shape
    nq = qv.shape[0]
    zero_w = _full(wx.shape, 0, wx)
    bad_w = lax.bitwise_or(lax.lt(wx, zero_w), _isnan(wx))
    clean = lax.select(lax.bitwise_or(bad_w, _isnan(x)), zero_w, wx)
    cum = convert(lax.cumsum(clean, 1), qv.dtype)                          # (nb, n)
    total = lax.slice_in_dim(cum, n - 1, n, 1, 1)                         # (nb, 1)
    target = lax.mul(lax.broadcast_in_dim(qv, (nq, nb, 1), (0,)),
                     lax.broadcast_in_dim(total, (nq, nb, 1), (1, 2)))
    less = lax.lt(lax.broadcast_in_dim(cum, (nq, nb, n), (1, 2)),
                  lax.broadcast_in_dim(target, (nq, nb, n), (0, 1, 2)))
    it = dtypes.default_int_dtype()
    idx = lax.reduce_sum(convert(less, it), (2,))                          # (nq, nb)
    valid = cnt if nan_skip else _full((nb,), n, cnt)
    limit = lax.broadcast_in_dim(convert(lax.sub(valid, _full((nb,), 1, valid)), it),
                                 (nq, nb), (1,))
    idx = lax.max(_full((nq, nb), 0, idx), lax.min(idx, limit))
    rows = lax.broadcasted_iota(it, (nq, nb), 1)
    res = lax.gather_indexed(x, (("array", 0), ("array", 1)), [rows, idx], mode="clip")
    any_bad = lax.broadcast_in_dim(lax.reduce_or(bad_w, (1,)), (nq, nb), (1,))
    return lax.select(any_bad, _full((nq, nb), np.nan, res), res)


def _quantile(name, a, q, axis, method, keepdims, nan_skip, weights=None):
    check_arraylike(name, a, q)
    if method not in _METHODS:
        raise ValueError(f"{name}: unknown method {method!r}; choose one of "
                         f"{', '.join(_METHODS)}")
    if weights is not None:
        a, weights = _quantile_weights(name, a, weights, axis, method)
    qdt = dtypes.dtype_and_weak(q)[0]
    if not dtypes.is_inexact(qdt):
        # JAX promotes only ``a``; an integer or bool q fails in its floor/arithmetic
        raise TypeError(f"jnp.{name}: q must be floating point (a fraction in [0, 1]), got "
                        f"dtype {np.dtype(qdt).name}; write e.g. 0.5, not an integer")
    # as JAX: the result has a's inexact dtype; positions and weights are computed in q's
    (a,) = promote_dtypes_inexact(ensure_array(a))
    a, q = ensure_array(a), ensure_array(q)
    if a.dtype.kind == "c":
        raise ValueError("quantile: complex inputs have no ordering, so they have no "
                         "quantiles.")
    if q.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
    if isinstance(axis, (tuple, list)):
        axes = _axes(tuple(axis), a.ndim)
    else:
        axes = _axes(axis, a.ndim)
    out_shape = tuple(d for i, d in enumerate(a.shape) if i not in axes)
    # as JAX: a 0-d input counts as 1-d for keepdims (its result keeps one axis)
    kept_shape = _keep_shape(a.shape, axes) if a.ndim else (1,)
    # move the reduced axes last and merge them: x is (batch..., n)
    rest = [i for i in range(a.ndim) if i not in axes]
    n = _count(a.shape, axes)
    x = lax.reshape(lax.transpose(a, rest + list(axes)), out_shape + (n,))
    if n == 0:
        # as JAX: quantile's gather rejects the empty slice (TypeError); nanquantile indexes
        # the sorted values instead, which gives an empty result when there are no slices,
        # and IndexError for the one 0-d index of a full reduction (0-d q, no keepdims)
        final = kept_shape if keepdims else out_shape
        if nan_skip and _count(out_shape, range(len(out_shape))) == 0:
            return _strong(_full(q.shape + final, 0, a))
        if nan_skip and not q.ndim and not keepdims and not out_shape:
            raise IndexError(f"jnp.{name} of an empty array (shape {a.shape}, axis {axis}): "
                             f"index 0 is out of bounds for its size-0 axis")
        raise TypeError(f"jnp.{name} of an empty reduction (shape {a.shape}, axis {axis}) "
                        f"has no value")
    nb = _count(out_shape, range(len(out_shape)))
    x = lax.reshape(x, (nb, n))
    nan_in = _isnan(x)
    wx = None
    if method == "inverted_cdf":
        wx = _full((nb, n), 1, x) if weights is None else lax.reshape(
            lax.transpose(weights, rest + list(axes)), (nb, n))
        x, wx = lax.sort((x, wx), 1, num_keys=1)     # NaNs sort last, weights with them
    else:
        x = lax.sort(x, 1)
    if nan_skip:
        cnt = lax.reduce_sum(convert(lax.bitwise_not(nan_in), q.dtype), (1,))  # (nb,)
    else:
        cnt = _full((nb,), n, q)
    qv = lax.reshape(q, (q.size,))                                   # (nq,)
    nq = q.size
    qb = lax.broadcast_in_dim(qv, (nq, nb), (0,))
    cb = lax.broadcast_in_dim(_strong(cnt), (nq, nb), (1,))
    zero = _full((nq, nb), 0, qb)
    if wx is not None:
        res = _inverted_cdf(x, wx, qv, _strong(cnt), nan_skip)
        return _quantile_result(res, cb, zero, nan_in, nan_skip, q, nq, nb,
                                kept_shape if keepdims else out_shape)
    one = _full((nq, nb), 1, qb)
    top = lax.sub(cb, one)
    pos = lax.mul(qb, top)
    lo, hi = lax.floor(pos), lax.ceil(pos)
    lo_c = lax.max(zero, lax.min(lo, lax.max(top, zero)))
    hi_c = lax.max(zero, lax.min(hi, lax.max(top, zero)))
    w_hi = lax.sub(pos, lo)
    w_lo = lax.sub(one, w_hi)
    it = dtypes.default_int_dtype()
    rows = lax.broadcasted_iota(it, (nq, nb), 1)
    index = (("array", 0), ("array", 1))
    lo_v = lax.gather_indexed(x, index, [rows, convert(lo_c, it)], mode="clip")
    hi_v = lax.gather_indexed(x, index, [rows, convert(hi_c, it)], mode="clip")
    if method == "linear":
        # as JAX: the interpolation runs in q's dtype, then the result is in a's dtype
        qd, w_lo, w_hi = w_lo.dtype, _strong(w_lo), _strong(w_hi)
        res = lax.add(lax.mul(convert(lo_v, qd), w_lo), lax.mul(convert(hi_v, qd), w_hi))
        res = convert(res, x.dtype)
    elif method == "lower":
        res = lo_v
    elif method == "higher":
        res = hi_v
    elif method == "midpoint":
        res = lax.mul(lax.add(lo_v, hi_v), _full((nq, nb), 0.5, lo_v))
    else:  # nearest: the lower neighbour on ties at .5, as JAX
        res = lax.select(lax.le(w_hi, _full((nq, nb), 0.5, w_hi)), lo_v, hi_v)
    return _quantile_result(res, cb, zero, nan_in, nan_skip, q, nq, nb,
                            kept_shape if keepdims else out_shape)


def _quantile_result(res, cb, zero, nan_in, nan_skip, q, nq, nb, final):
    """``res`` (nq, nb) with NaN where a row has no value (nanquantile: no non-NaN one;
    quantile: any NaN), shaped ``q.shape + final``."""
    if nan_skip:
        empty = lax.eq(cb, zero)
        res = lax.select(empty, _full((nq, nb), np.nan, res), res)
    else:
        bad = lax.broadcast_in_dim(lax.reduce_or(nan_in, (1,)), (nq, nb), (1,))
        res = lax.select(bad, _full((nq, nb), np.nan, res), res)
    return _strong(lax.reshape(res, q.shape + final))


def _check_quantile_args(name, out, overwrite_input):
    """The quantile family refuses ``out`` and ``overwrite_input=True`` with a ValueError,
    as JAX does (its arrays are immutable: nothing can be written into or overwritten)."""
    if out is not None or overwrite_input:
        raise ValueError(f"jnp.{name} does not support overwrite_input=True or out != None")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """``q``-th quantiles (``q`` in [0, 1], scalar or 1-D) over ``axis``
    (``jax.numpy.quantile``).

    Result shape ``q.shape + reduced shape``; dtype: the inexact promotion of ``a`` (and
    of ``weights``).  Methods linear/lower/higher/midpoint/nearest/inverted_cdf; only
    inverted_cdf takes ``weights`` (shaped like ``a`` or like its reduced axes; a negative
    or NaN weight makes its slice NaN).  NaN where a slice has a NaN.  Raises ValueError
    for an unknown method, complex input or weights, mismatched weights or ``q`` of rank
    > 1, TypeError for an empty reduction (as JAX); NotImplementedError for ``weights``
    with another method.
    """
    _check_quantile_args("quantile", out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, nan_skip=False,
                     weights=weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """``quantile`` ignoring NaNs (``jax.numpy.nanquantile``); NaN for all-NaN slices."""
    _check_quantile_args("nanquantile", out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, nan_skip=True,
                     weights=weights)


def _pct(q):
    check_arraylike("percentile", q)
    q = ensure_array(q)
    (q,) = promote_dtypes_inexact(q)
    return lax.div(q, lax.scalar_as(100, q.dtype, q.weak_type))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """``quantile(a, q / 100, ...)`` (``jax.numpy.percentile``)."""
    _check_quantile_args("percentile", out, overwrite_input)
    return quantile(a, _pct(q), axis, method=method, keepdims=keepdims, weights=weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """``nanquantile(a, q / 100, ...)`` (``jax.numpy.nanpercentile``)."""
    _check_quantile_args("nanpercentile", out, overwrite_input)
    return nanquantile(a, _pct(q), axis, method=method, keepdims=keepdims, weights=weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median over ``axis`` (``jax.numpy.median``): the 0.5 quantile, midpoint method."""
    _check_quantile_args("median", out, overwrite_input)
    return quantile(a, 0.5, axis, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaNs (``jax.numpy.nanmedian``)."""
    _check_quantile_args("nanmedian", out, overwrite_input)
    return nanquantile(a, 0.5, axis, method="midpoint", keepdims=keepdims)


__all__ = public_names(globals())
