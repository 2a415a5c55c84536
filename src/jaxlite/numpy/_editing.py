"""Building arrays from parts (``jax.numpy``): ``select``, ``piecewise``, ``extract``,
``delete``, ``insert``, ``place``, ``put``, ``put_along_axis``, ``fill_diagonal``,
``resize``, ``trim_zeros``.

NumPy's in-place forms cannot exist for immutable arrays: as in JAX, the functions that
would modify their argument take ``inplace=False`` and return the new array (the default
``inplace=True`` raises).

Layer: numpy (compositions of jaxlite.numpy and lax operations; indices are traced values
wherever JAX allows it).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import errors
from ..core.trace import Tracer
from ._util import canonicalize_axis, check_arraylike, ensure_array, public_names


def _jnp():
    from .. import numpy as jnp
    return jnp


def _immutable(name, inplace):
    if inplace:
        raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays "
                         f"are immutable. Pass inplace=False to instead return an updated "
                         f"array.")


def select(condlist, choicelist, default=0):
    """``choicelist[i]`` where ``condlist[i]`` is the first true condition, else
    ``default`` (``jax.numpy.select``). Conditions are truth-tested (nonzero is True); all
    arguments broadcast; the result has the promoted dtype of the choices and default.
    Raises ValueError for empty lists or lists of different lengths."""
    jnp = _jnp()
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist "
                         f"({len(condlist)} vs {len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        c = ensure_array(cond)
        if c.dtype != np.bool_:
            c = c != 0
        out = jnp.where(c, choice, out)
    return ensure_array(out)


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` (or the constant ``funclist[i]``) where ``condlist[i]`` holds,
    the last true condition winning; elsewhere ``funclist[len(condlist)]`` when given, else 0
    (``jax.numpy.piecewise``). ``condlist`` is converted to a boolean array whose first axis
    counts the conditions. The result has ``x``'s shape and dtype. Raises ValueError when
    ``len(funclist)`` is neither ``len(condlist)`` nor one more, TypeError for a scalar
    ``condlist``."""
    check_arraylike("piecewise", x)
    jnp = _jnp()
    xa = ensure_array(x)
    conds = jnp.asarray(condlist, dtype=bool)
    nc, nf = len(conds), len(funclist)
    if nf == nc + 1:
        otherwise, funcs = funclist[-1], funclist[:-1]
    elif nf == nc:
        otherwise, funcs = 0, funclist
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")

    def value(f):
        v = f(xa, *args, **kw) if callable(f) else f
        return jnp.broadcast_to(jnp.asarray(v).astype(xa.dtype), xa.shape)
    out = value(otherwise)
    for i, f in enumerate(funcs):
        out = jnp.where(jnp.broadcast_to(conds[i], xa.shape), value(f), out)
    return out


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of the flattened ``arr`` where the flattened ``condition`` is nonzero
    (``jax.numpy.extract``; a shorter condition covers the leading elements). ``size``
    (required under jit) fixes the length, padding with ``fill_value``; a ``size`` above
    ``arr``'s size raises ValueError."""
    check_arraylike("extract", condition, arr)
    jnp = _jnp()
    c = jnp.ravel(ensure_array(condition))
    a = jnp.ravel(ensure_array(arr))
    if c.dtype != np.bool_:
        c = c != 0
    if size is not None and operator.index(size) > a.shape[0]:
        raise ValueError(f"size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={a.shape[0]}")
    return jnp.compress(c, a, size=size, fill_value=fill_value)


def _int_obj(name, obj):
    """``obj`` (int, slice, or an integer/bool array; not a list) as a NumPy value or a
    traced array."""
    if isinstance(obj, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(obj)} at "
                        f"position 1.")
    return obj


def _along(arr, axis):
    """``arr`` as an Array and ``axis`` canonical; the flattened array along 0 when None."""
    a = ensure_array(arr)
    if axis is None:
        return _jnp().ravel(a), 0
    return a, canonicalize_axis(axis, a.ndim)


def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries ``obj`` (an int, a slice, or an integer or boolean
    array) along ``axis`` (the flattened array when None) (``jax.numpy.delete``).

    Negative indices count from the end. Traced indices need
    ``assume_unique_indices=True`` (the result's length is then static), else
    ConcretizationTypeError. Raises ValueError for a non-integer ``obj`` or an integer out
    of range, IndexError for an index array out of range, TypeError for a list."""
    check_arraylike("delete", arr)
    jnp = _jnp()
    obj = _int_obj("delete", obj)
    a, axis = _along(arr, axis)
    n = a.shape[axis]
    if isinstance(obj, slice):
        keep = np.ones(n, bool)
        keep[np.arange(n)[obj]] = False
        return jnp.take(a, np.flatnonzero(keep), axis=axis)
    if isinstance(obj, Tracer):
        if not assume_unique_indices:
            raise errors.ConcretizationTypeError(
                obj, "'obj' array argument of jnp.delete(): without "
                     "assume_unique_indices=True the result's size depends on its values.")
        idx = jnp.ravel(obj)
        idx = jnp.where(idx < 0, idx + n, idx)
        mask = jnp.ones(n, bool).at[idx].set(False)
        (keep,) = jnp.nonzero(mask, size=n - idx.shape[0])
        return jnp.take(a, keep, axis=axis)
    o = np.asarray(obj.to_concrete_value() if isinstance(obj, Tracer) else obj)
    if o.dtype == np.bool_:
        if o.shape != (n,):
            raise ValueError(f"np.delete(arr, obj): boolean obj of shape {o.shape} must have "
                             f"the length of the axis, {n}")
        return jnp.take(a, np.flatnonzero(~o), axis=axis)
    if o.dtype.kind not in "iu":
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={o.dtype}; must be integer or "
                         f"bool.")
    if o.ndim == 0:
        i = int(o)
        if not -n <= i < n:
            raise ValueError(f"axis {i} is out of bounds for array of dimension {n}")
        o = np.array([i])
    bad = o[(o >= n) | (o < -n)]
    if bad.size:
        raise IndexError(f"index {int(bad[0])} is out of bounds for axis {axis} with size {n}")
    keep = np.ones(n, bool)
    keep[o] = False
    return jnp.take(a, np.flatnonzero(keep), axis=axis)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the indices ``obj`` along ``axis`` (the
    flattened array when None) (``jax.numpy.insert``).

    ``obj``: an int (``values`` inserted there as a block), a slice, or an integer array
    (one value per index, in the order of the indices, equal indices in their given
    order); indices may be traced. Negative indices count from the end; out-of-range ones
    are clipped (NumPy raises). ``values`` are cast to ``arr``'s dtype. Raises TypeError for
    a list ``obj`` and ValueError for a non-integer one."""
    check_arraylike("insert", arr, values)
    jnp = _jnp()
    obj = _int_obj("insert", obj)
    a, axis = _along(arr, axis)
    n = a.shape[axis]
    vals = ensure_array(values).astype(a.dtype)
    if isinstance(obj, slice):
        idx = jnp.asarray(np.arange(n)[obj], dtype=np.int32)
        scalar = False
    else:
        idx = ensure_array(obj)
        if idx.dtype.kind not in "iu":
            raise ValueError(f"jnp.insert(): index array must be integer typed; got "
                             f"{idx.dtype}")
        scalar = idx.ndim == 0 or (idx.size == 1 and not isinstance(idx, Tracer))
    if scalar:
        # a block of values at one index: values gain leading axes up to arr's rank, and
        # for a 0-d index their first axis becomes ``axis``
        v = vals.reshape((1,) * max(a.ndim - vals.ndim, 0) + tuple(vals.shape))
        if idx.ndim == 0:
            v = jnp.moveaxis(v, 0, axis)
        k = v.shape[axis]
        idx = jnp.full((k,), jnp.ravel(idx)[0])
    else:
        idx = jnp.ravel(idx)
        k = idx.shape[0]
        v = vals
    shape = list(a.shape)
    shape[axis] = k
    v = jnp.moveaxis(jnp.broadcast_to(v, tuple(shape)), axis, 0)
    idx = jnp.where(idx < 0, idx + n, idx)
    idx = jnp.clip(idx, 0, n)
    order = jnp.argsort(idx, stable=True)
    sidx = idx[order]
    new_pos = sidx + jnp.arange(k, dtype=sidx.dtype)
    old_pos = jnp.arange(n, dtype=sidx.dtype) + jnp.searchsorted(
        sidx, jnp.arange(n, dtype=sidx.dtype), side="right").astype(sidx.dtype)
    am = jnp.moveaxis(a, axis, 0)
    out = jnp.zeros((n + k,) + tuple(am.shape[1:]), a.dtype)
    out = out.at[old_pos].set(am).at[new_pos].set(v[order])
    return jnp.moveaxis(out, 0, axis)


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with the positions where ``mask`` is true replaced, in order, by ``vals``
    (repeated cyclically) (``jax.numpy.place``). Needs ``inplace=False`` (ValueError
    otherwise)."""
    check_arraylike("place", arr, mask, vals)
    _immutable("place", inplace)
    jnp = _jnp()
    a = ensure_array(arr)
    m = jnp.ravel(ensure_array(mask)).astype(bool)
    v = jnp.ravel(ensure_array(vals)).astype(a.dtype)
    if v.shape[0] == 0:
        return a
    slot = jnp.cumsum(m.astype(np.int32)) - 1
    return jnp.where(m, v[slot % v.shape[0]], jnp.ravel(a)).reshape(a.shape)


def put(a, ind, v, mode=None, *, inplace: bool = True):
    """``a`` with the flat positions ``ind`` set to ``v`` (``jax.numpy.put``): ``v`` is
    flattened and repeated or cut to ``ind``'s size. ``mode``: None or 'clip' (negative
    indices count from the end, then clip), 'wrap' (modulo the size); 'raise' is not
    supported (NotImplementedError). Needs ``inplace=False`` (ValueError otherwise)."""
    check_arraylike("put", a, ind, v)
    _immutable("put", inplace)
    jnp = _jnp()
    arr = ensure_array(a)
    flat = jnp.ravel(arr)
    n = flat.shape[0]
    idx = jnp.ravel(ensure_array(ind))
    vals = jnp.ravel(ensure_array(v)).astype(arr.dtype)
    k = idx.shape[0]
    if k == 0 or n == 0:
        return arr
    if vals.shape[0] != k:
        vals = vals[np.arange(k) % vals.shape[0]] if vals.shape[0] else vals
    if mode in (None, "clip"):
        idx = jnp.clip(jnp.where(idx < 0, idx + n, idx), 0, n - 1)
    elif mode == "wrap":
        idx = idx % n
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode!r}")
    return flat.at[idx].set(vals).reshape(arr.shape)


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis``
    (``jax.numpy.put_along_axis``; the scatter counterpart of ``take_along_axis``).
    Negative indices count from the end; out-of-range ones are dropped (``mode='clip'``:
    clipped). Values are cast to ``arr``'s dtype. Needs ``inplace=False``."""
    check_arraylike("put_along_axis", arr, indices, values)
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because "
                         "JAX arrays are immutable. Pass inplace=False to instead return an "
                         "updated array.")
    jnp = _jnp()
    a = ensure_array(arr)
    idx = ensure_array(indices)
    if axis is None:
        flat = jnp.ravel(a)
        return flat.at[jnp.ravel(idx)].set(jnp.ravel(ensure_array(values)).astype(a.dtype),
                                           mode=mode).reshape(a.shape)
    axis = canonicalize_axis(axis, a.ndim)
    if idx.ndim != a.ndim:
        raise ValueError(f"put_along_axis: indices and arr must have the same number of "
                         f"dimensions; {idx.ndim} vs. {a.ndim}")
    shape = np.broadcast_shapes(
        tuple(1 if i == axis else d for i, d in enumerate(a.shape)),
        tuple(1 if i == axis else d for i, d in enumerate(idx.shape)))
    full = tuple(idx.shape[axis] if i == axis else d for i, d in enumerate(shape))
    idx = jnp.broadcast_to(idx, full)
    grids = jnp.indices(full, sparse=True)
    where = tuple(idx if i == axis else grids[i] for i in range(a.ndim))
    v = jnp.broadcast_to(ensure_array(values).astype(a.dtype), full)
    return a.at[where].set(v, mode="clip" if mode == "clip" else None)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """``a`` with its main diagonal (``a[i, i, ..., i]``) set to ``val``, flattened and
    repeated cyclically (``jax.numpy.fill_diagonal``). Needs ``inplace=False`` and
    ``wrap=False`` (NotImplementedError otherwise, as JAX); ``a`` of rank 2, or higher with
    equal dimensions (ValueError otherwise). ``val`` is cast to ``a``'s dtype."""
    check_arraylike("fill_diagonal", a, val)
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    jnp = _jnp()
    x = ensure_array(a)
    if x.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(x.shape)
    v = jnp.ravel(ensure_array(val)).astype(x.dtype)
    if n == 0 or v.shape[0] == 0:
        return x
    v = v[np.arange(n) % v.shape[0]]
    i = np.arange(n)
    return x.at[(i,) * x.ndim].set(v)


def resize(a, new_shape):
    """``a`` flattened and repeated (or cut) to fill ``new_shape``
    (``jax.numpy.resize``); an empty ``a`` fills with zeros. Raises ValueError for a
    negative size."""
    check_arraylike("resize", a)
    jnp = _jnp()
    x = ensure_array(a)
    shape = (operator.index(new_shape),) if np.ndim(new_shape) == 0 else \
        tuple(operator.index(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = int(np.prod(shape, dtype=np.int64))
    flat = jnp.ravel(x)
    if flat.shape[0] == 0:
        return jnp.zeros(shape, x.dtype)
    return flat[np.arange(total) % flat.shape[0]].reshape(shape)


def trim_zeros(filt, trim: str = "fb"):
    """The 1-d ``filt`` without its leading ('f' in ``trim``) and trailing ('b') zeros
    (``jax.numpy.trim_zeros``). Needs a concrete ``filt`` (ConcretizationTypeError under
    jit: the length depends on the values)."""
    check_arraylike("trim_zeros", filt)
    x = ensure_array(filt)
    v = x.to_concrete_value() if isinstance(x, Tracer) else x
    if v is None:
        raise errors.ConcretizationTypeError(
            x, "Error arose in the `filt` argument of trim_zeros(): the result's length "
               "depends on its values.")
    nz = np.flatnonzero(np.ravel(np.asarray(v)))
    if x.ndim == 0:
        return x
    if x.ndim != 1:
        raise ValueError(f"trim_zeros takes a 1-d array; got shape {tuple(x.shape)}")
    if nz.size == 0:
        return x[:0]
    start = int(nz[0]) if "f" in trim.lower() else 0
    stop = int(nz[-1]) + 1 if "b" in trim.lower() else x.shape[0]
    return x[start:stop]


__all__ = public_names(globals())
