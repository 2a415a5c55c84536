"""Reductions (``jax.numpy``): sum, prod, max, min, mean, all, any, argmax, argmin.

``axis`` is None, an int or a tuple; ``keepdims`` keeps reduced axes as size 1; ``where``
masks elements out (they count as the reduction's identity); ``dtype`` sets the
accumulation dtype.  Sums of bool/small ints accumulate in the default int dtype, as JAX.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from ._util import canonicalize_axes, check_arraylike, convert, ensure_array, public_names


def _keep(out, shape, axes, keepdims):
    if not keepdims:
        return out
    return lax.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _sum_dtype(dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return dtypes.default_int_dtype()
    if dt.kind == "i" and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if dt.kind == "u" and dt.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return dt


def _where_fill(a, where, identity):
    if where is None:
        return a
    from ._ufuncs import where as _w
    return _w(where, a, identity)


def _reduce(name, prim_fn, a, axis, dtype, keepdims, where, identity, acc_dtype=None):
    check_arraylike(name, a)
    a = ensure_array(a)
    if dtype is not None:
        a = convert(a, dtypes.canonicalize_dtype(dtype))
    elif acc_dtype is not None:
        a = convert(a, acc_dtype(a.dtype), a.weak_type)
    axes = canonicalize_axes(axis, a.ndim)
    if where is not None:
        a = _where_fill(a, where, identity(a.dtype))
    out = prim_fn(a, axes)
    return _keep(out, a.shape, axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    """Sum over ``axis`` (``jax.numpy.sum``).  Bool and small-int inputs sum in the default
    int dtype."""
    r = _reduce("sum", lax.reduce_sum, a, axis, dtype, keepdims, where, lambda dt: 0,
                _sum_dtype if promote_integers else None)
    return r if initial is None else lax.add(r, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product over ``axis`` (``jax.numpy.prod``)."""
    r = _reduce("prod", lax.reduce_prod, a, axis, dtype, keepdims, where, lambda dt: 1,
                _sum_dtype if promote_integers else None)
    return r if initial is None else lax.mul(r, initial)


def _min_identity(dt):
    dt = np.dtype(dt)
    if dtypes.is_float(dt):
        return np.inf
    if dt == np.bool_:
        return True
    return np.iinfo(dt).max


def _max_identity(dt):
    dt = np.dtype(dt)
    if dtypes.is_float(dt):
        return -np.inf
    if dt == np.bool_:
        return False
    return np.iinfo(dt).min


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Largest element over ``axis`` (``jax.numpy.max``); NaN propagates.  Raises
    ValueError for an empty reduction without ``initial``."""
    a = ensure_array(a) if not hasattr(a, "aval") else a
    _check_nonempty("max", a, axis, initial, where)
    r = _reduce("max", lax.reduce_max, a, axis, None, keepdims, where, _max_identity)
    return r if initial is None else lax.max(r, convert(initial, r.dtype, r.weak_type))


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Smallest element over ``axis`` (``jax.numpy.min``); NaN propagates."""
    a = ensure_array(a) if not hasattr(a, "aval") else a
    _check_nonempty("min", a, axis, initial, where)
    r = _reduce("min", lax.reduce_min, a, axis, None, keepdims, where, _min_identity)
    return r if initial is None else lax.min(r, convert(initial, r.dtype, r.weak_type))


amax, amin = max, min


def _check_nonempty(name, a, axis, initial, where):
    if initial is not None or where is not None:
        return
    axes = canonicalize_axes(axis, a.ndim)
    if any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no "
                         f"identity (shape {a.shape}, axis {axis})")


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where every element over ``axis`` is nonzero (``jax.numpy.all``)."""
    a = ensure_array(a) if not hasattr(a, "aval") else a
    a = convert(a, np.bool_) if a.dtype != np.bool_ else a
    return _reduce("all", lax.reduce_and, a, axis, None, keepdims, where, lambda dt: True)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where some element over ``axis`` is nonzero (``jax.numpy.any``)."""
    a = ensure_array(a) if not hasattr(a, "aval") else a
    a = convert(a, np.bool_) if a.dtype != np.bool_ else a
    return _reduce("any", lax.reduce_or, a, axis, None, keepdims, where, lambda dt: False)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (``jax.numpy.mean``); integers average in the default
    float dtype."""
    check_arraylike("mean", a)
    a = ensure_array(a)
    axes = canonicalize_axes(axis, a.ndim)
    if dtype is None:
        dt = a.dtype if dtypes.is_inexact(a.dtype) else dtypes.default_float_dtype()
    else:
        dt = dtypes.canonicalize_dtype(dtype)
    a = convert(a, dt, a.weak_type)
    s = sum(a, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        n = 1
        for i in axes:
            n *= a.shape[i]
        return lax.div(s, lax.scalar_as(n, s.dtype, s.weak_type))
    from ._ufuncs import where as _w
    from ._util import broadcast_to_shape
    cnt = sum(broadcast_to_shape(convert(ensure_array(where), dt), a.shape), axis=axes,
              keepdims=keepdims)
    return lax.div(s, cnt)


def argmax(a, axis=None, out=None, keepdims=False):
    """Index of the largest element (flattened when ``axis`` is None)
    (``jax.numpy.argmax``).  Raises ValueError on an empty axis."""
    check_arraylike("argmax", a)
    a = ensure_array(a)
    if axis is None:
        from ._shape import ravel
        r = lax.argmax(ravel(a), 0, dtypes.default_int_dtype())
        return lax.reshape(r, (1,) * a.ndim) if keepdims else r
    ax = canonicalize_axes(axis, a.ndim)
    return _keep(lax.argmax(a, ax[0], dtypes.default_int_dtype()), a.shape, ax, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    """Index of the smallest element (flattened when ``axis`` is None)
    (``jax.numpy.argmin``)."""
    check_arraylike("argmin", a)
    a = ensure_array(a)
    if axis is None:
        from ._shape import ravel
        r = lax.argmin(ravel(a), 0, dtypes.default_int_dtype())
        return lax.reshape(r, (1,) * a.ndim) if keepdims else r
    ax = canonicalize_axes(axis, a.ndim)
    return _keep(lax.argmin(a, ax[0], dtypes.default_int_dtype()), a.shape, ax, keepdims)


__all__ = public_names(globals())
