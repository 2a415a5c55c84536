"""Sorting and searching of ``jax.numpy``: sort, argsort, lexsort, partition, searchsorted,
nonzero / argwhere / flatnonzero, unique.

Layer: numpy (compositions of ``jaxlite.lax``).  Sorts are stable by default and put NaNs
last (descending sorts put them first, as JAX).  Functions whose result size depends on
values (nonzero, argwhere, flatnonzero, unique) need concrete input, or a static ``size=``
under jit; without one they raise ``ConcretizationTypeError`` inside a transformation.
Index results are in the default int dtype.
"""
from __future__ import annotations

import collections

import numpy as np

from .. import dtypes, errors, lax
from ..core.trace import Tracer
from ._named_jit import named_jit
from ._util import (canonicalize_axis, check_arraylike, concrete_or_none, convert,
                    ensure_array, promote_dtypes, public_names)


def _arr(name, a):
    check_arraylike(name, a)
    return ensure_array(a)


def _int():
    return dtypes.default_int_dtype()


def _flatten(a):
    return lax.reshape(a, (a.size,))


def _scalar(value, dtype):
    return lax.scalar_as(value, dtype, False)


def _fill(shape, value, dtype):
    v = _scalar(value, dtype)
    return lax.broadcast_in_dim(v, tuple(shape), ()) if shape else ensure_array(v)


def _sort_axis(a, axis):
    """(array, axis) with ``axis=None`` meaning the flattened array."""
    if axis is None:
        return _flatten(a), 0
    return a, canonicalize_axis(axis, a.ndim)


# ---- sort / argsort / lexsort -------------------------------------------------------------

@named_jit("sort", static_argnames=("axis", "kind", "order", "stable", "descending"))
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (flattened when None) (``jax.numpy.sort``).

    NaNs go last (first when ``descending``); dtype and weak type are kept.  Raises
    ValueError for a bad axis (a 0-d input has none); TypeError for ``kind`` or ``order``
    (NumPy's options, refused as JAX does).
    """
    a = _arr("sort", a)
    # NumPy's sort options: JAX refuses both with a TypeError (stability is ``stable``)
    if kind is not None:
        raise TypeError("'kind' argument to sort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to sort is not supported.")
    a, ax = _sort_axis(a, axis)
    out = lax.sort(a, dimension=ax, is_stable=stable)
    return lax.rev(out, (ax,)) if descending else out


def _argsort_ascending(a, ax, stable=True):
    idx = lax.broadcasted_iota(_int(), a.shape, ax)
    return lax.sort((a, idx), dimension=ax, is_stable=stable, num_keys=1)[1]


@named_jit("argsort", static_argnames=("axis", "kind", "order", "stable", "descending",
                                       "dtype"))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort ``a`` along ``axis`` (``jax.numpy.argsort``).

    Stable: equal elements keep their order, also when ``descending`` (then NaNs come
    first).  ``dtype`` is the index dtype (default int).  Raises ValueError for a bad axis,
    TypeError for ``kind`` or ``order`` (as JAX).
    """
    a = _arr("argsort", a)
    # NumPy's sort options: JAX refuses both with a TypeError (stability is ``stable``)
    if kind is not None:
        raise TypeError("'kind' argument to argsort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to argsort is not supported.")
    a, ax = _sort_axis(a, axis)
    if not descending:
        out = _argsort_ascending(a, ax, stable)
    else:
        # sort the reversed array with its reversed indices ascending (stable), then
        # reverse: equal elements keep their original order (JAX's decomposition)
        idx = lax.broadcasted_iota(_int(), a.shape, ax)
        out = lax.sort((lax.rev(a, (ax,)), lax.rev(idx, (ax,))), dimension=ax,
                       is_stable=stable, num_keys=1)[1]
        out = lax.rev(out, (ax,))
    if dtype is not None:
        out = convert(out, dtypes.canonicalize_dtype(dtype))
    return out


def lexsort(keys, axis=-1):
    """Indirect stable sort by several keys; the LAST key is the primary one
    (``jax.numpy.lexsort``).

    Args: ``keys`` a sequence of arrays of one shape (or a 2-D array: its rows).
    Raises TypeError for no keys, ValueError for keys of different shapes or a bad axis.
    """
    if isinstance(keys, (tuple, list)):
        keys = [_arr("lexsort", k) for k in keys]
    else:
        k = _arr("lexsort", keys)
        keys = [lax.index_in_dim(k, i, 0, keepdims=False) for i in range(k.shape[0])] \
            if k.ndim else [k]
    if not keys:
        raise TypeError("lexsort: keys is empty; give at least one key")
    shape = keys[0].shape
    if any(k.shape != shape for k in keys):
        raise ValueError(f"all keys need to be the same shape, got "
                         f"{', '.join(str(k.shape) for k in keys)}")
    if not shape:
        return ensure_array(_scalar(0, _int()))
    ax = canonicalize_axis(axis, len(shape))
    idx = lax.broadcasted_iota(_int(), shape, ax)
    ops = list(reversed(keys)) + [idx]
    return lax.sort(tuple(ops), dimension=ax, is_stable=True, num_keys=len(keys))[-1]


def sort_complex(a):
    """``a`` sorted along its last axis and cast to complex (``jax.numpy.sort_complex``)."""
    a = sort(_arr("sort_complex", a))
    if a.dtype.kind == "c":
        return a
    return convert(a, dtypes.result_type(a.dtype, dtypes.default_complex_dtype()))


# ---- partition ----------------------------------------------------------------------------

def _partition_args(name, a, kth, axis):
    a = _arr(name, a)
    if a.dtype.kind == "c":
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    ax = canonicalize_axis(axis, a.ndim)
    k = canonicalize_axis(kth, a.shape[ax], "kth")
    return a, ax, k


def partition(a, kth, axis=-1):
    """``a`` rearranged along ``axis`` so that position ``kth`` holds the value a full sort
    would put there, smaller values before it and larger after (``jax.numpy.partition``).
    As in JAX, the first ``kth + 1`` come out ascending and the rest descending.

    Raises ValueError for a bad axis or ``kth``; NotImplementedError for complex input.
    """
    a, ax, k = _partition_args("partition", a, kth, axis)
    n = a.shape[ax]
    s = lax.sort(a, dimension=ax)
    low = lax.slice_in_dim(s, 0, k + 1, axis=ax)
    high = lax.rev(lax.slice_in_dim(s, k + 1, n, axis=ax), (ax,))
    return lax.concatenate([low, high], ax)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` (``jax.numpy.argpartition``): the indices of the
    ``kth + 1`` smallest values (ascending by value), then the others in index order, as
    JAX returns them.  Errors as ``partition``."""
    a, ax, k = _partition_args("argpartition", a, kth, axis)
    n = a.shape[ax]
    order = _argsort_ascending(a, ax)
    low = lax.slice_in_dim(order, 0, k + 1, axis=ax)
    rank = _argsort_ascending(order, ax)               # inverse permutation
    in_low = convert(lax.le(rank, _fill(rank.shape, k, _int())), _int())
    rest = _argsort_ascending(in_low, ax)              # not-in-low first, in index order
    high = lax.slice_in_dim(rest, 0, n - k - 1, axis=ax)
    return lax.concatenate([low, high], ax)


# ---- searchsorted -------------------------------------------------------------------------

def _less(x, y):
    """``x < y`` in sort order: NaN after every number; complex lexicographic."""
    if x.dtype.kind == "c":
        xr, yr = lax.real(x), lax.real(y)
        return lax.bitwise_or(lax.lt(xr, yr), lax.bitwise_and(lax.eq(xr, yr),
                                                              lax.lt(lax.imag(x), lax.imag(y))))
    if dtypes.is_inexact(x.dtype):
        return lax.bitwise_or(lax.lt(x, y),
                              lax.bitwise_and(lax.eq(x, x), lax.ne(y, y)))
    if x.dtype == np.bool_:
        return lax.bitwise_and(lax.bitwise_not(x), y)
    return lax.lt(x, y)


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion indices of ``v`` into the sorted 1-D ``a`` (``jax.numpy.searchsorted``).

    ``side='left'``: first index ``i`` with ``v <= a[i]``; ``'right'``: first with
    ``v < a[i]``.  ``sorter`` sorts ``a`` first.  NaNs sort after every number.  Returns the
    default int dtype with ``v``'s shape (a binary search: about log2(len(a)) gathers).
    Raises ValueError for a non-1-D ``a``, a bad ``side`` or ``method``.
    """
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"method={method!r} not recognized; expected one of 'scan', "
                         f"'scan_unrolled', 'sort', 'compare_all'")
    a = ensure_array(a)
    if a.ndim != 1:
        raise ValueError(f"a should be 1-dimensional, got shape {a.shape}")
    if sorter is not None:
        check_arraylike("searchsorted", sorter)
        s = ensure_array(sorter)
        a = lax.gather_indexed(a, (("array", 0),), [s], mode="clip")
    a, v = promote_dtypes(a, v)
    a, v = ensure_array(a), ensure_array(v)
    n = a.shape[0]
    vf = _flatten(v)
    m = vf.shape[0]
    it = _int()
    lo = _fill((m,), 0, it)
    hi = _fill((m,), n, it)
    two = _fill((m,), 2, it)
    one = _fill((m,), 1, it)
    for _ in range(n.bit_length()):
        active = lax.lt(lo, hi)
        mid = lax.div(lax.add(lo, hi), two)
        am = lax.gather_indexed(a, (("array", 0),), [mid], mode="clip")
        if side == "left":
            go_right = _less(am, vf)                  # a[mid] < v
        else:
            go_right = lax.bitwise_not(_less(vf, am))  # not v < a[mid]
        lo = lax.select(lax.bitwise_and(active, go_right), lax.add(mid, one), lo)
        hi = lax.select(lax.bitwise_and(active, lax.bitwise_not(go_right)), mid, hi)
    return lax.reshape(lo, v.shape)


# ---- nonzero / argwhere -------------------------------------------------------------------

def _concrete_size(count, name):
    """The Python int value of a count, or the JAX concretization error under a trace."""
    value = concrete_or_none(count)
    if value is None:
        raise errors.ConcretizationTypeError(
            count, f"The size argument of jnp.{name} must be statically specified to use "
                   f"jnp.{name} within JAX transformations.")
    return int(value)


def _nonzero_flat(mask, size):
    """Flat positions (default int, shape ``(size,)``) of the first ``size`` True entries
    of the 1-D bool ``mask``, and the number of True entries.  Slots past the count are 0."""
    it = _int()
    n = mask.shape[0]
    m = convert(mask, it)
    count = lax.reduce_sum(m, (0,))
    if n == 0:
        return _fill((size,), 0, it), count
    slot = lax.sub(lax.cumsum(m, 0), _fill((n,), 1, it))
    target = lax.select(mask, slot, _fill((n,), size, it))    # past the end: dropped
    base = _fill((size,), 0, it)
    pos = lax.scatter_indexed(base, lax.iota(it, n), (("array", 0),), [target], op="set",
                              mode="drop")
    return pos, count


def _nonzero_mask(name, a):
    a = _arr(name, a)
    return a if a.dtype == np.bool_ else lax.ne(a, _fill(a.shape, 0, a.dtype)), a


def _fill_values(fill_value, ndim, name):
    if fill_value is None:
        return (0,) * ndim
    if isinstance(fill_value, (tuple, list)):
        if len(fill_value) != ndim:
            raise ValueError(f"{name}: fill_value {fill_value!r} has the wrong length; give a "
                             f"scalar or a tuple with one entry per dimension ({ndim})")
        return tuple(fill_value)
    return (fill_value,) * ndim


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of ``a``, one default-int array per dimension
    (``jax.numpy.nonzero``).

    ``size`` (static int) fixes the length: extra slots hold ``fill_value`` (a scalar or a
    tuple per dimension; default 0), surplus elements are cut.  Raises ValueError for 0-d
    input; ConcretizationTypeError under jit without ``size``.
    """
    mask, a = _nonzero_mask("nonzero", a)
    if a.ndim == 0:
        raise ValueError("nonzero does not take 0-d arrays; apply it to "
                         "jnp.atleast_1d(x) instead.")
    fills = _fill_values(fill_value, a.ndim, "nonzero")
    flat = _flatten(mask)
    if size is None:
        count = lax.reduce_sum(convert(flat, _int()), (0,))
        size = _concrete_size(count, "nonzero")
    size = int(size)
    pos, count = _nonzero_flat(flat, size)
    it = _int()
    valid = lax.lt(lax.iota(it, size), lax.broadcast_in_dim(count, (size,), ()))
    out, stride = [], 1
    for d in reversed(range(a.ndim)):
        idx = pos
        if stride != 1:
            idx = lax.div(idx, _fill((size,), stride, it))
        if d != 0:
            idx = lax.rem(idx, _fill((size,), a.shape[d], it))
        stride *= a.shape[d]
        fv = fills[d]
        check_arraylike("nonzero", fv)
        fv = convert(ensure_array(fv), it)
        fv = lax.broadcast_in_dim(fv, (size,), ()) if fv.ndim == 0 else fv
        out.append(lax.select(valid, idx, fv))
    return tuple(reversed(out))


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened ``a`` (``jax.numpy.flatnonzero``);
    ``size``/``fill_value`` as in ``nonzero``."""
    a = _arr("flatnonzero", a)
    return nonzero(_flatten(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements as a ``(count, a.ndim)`` array
    (``jax.numpy.argwhere``); ``size``/``fill_value`` as in ``nonzero``."""
    a = _arr("argwhere", a)
    if a.ndim == 0:
        cols = nonzero(lax.reshape(a, (1,)), size=size, fill_value=fill_value)
        return lax.slice(lax.reshape(cols[0], (cols[0].shape[0], 1)), (0, 0),
                         (cols[0].shape[0], 0))
    cols = nonzero(a, size=size, fill_value=fill_value)
    k = cols[0].shape[0]
    return lax.concatenate([lax.reshape(c, (k, 1)) for c in cols], 1)


# ---- unique -------------------------------------------------------------------------------

_UniqueAllResult = collections.namedtuple("UniqueAllResult",
                                         ["values", "indices", "inverse_indices", "counts"])
_UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
_UniqueInverseResult = collections.namedtuple("UniqueInverseResult",
                                             ["values", "inverse_indices"])


def _differs(x, y, equal_nan):
    """``x != y`` elementwise, with NaN equal to NaN when ``equal_nan``."""
    ne = lax.ne(x, y)
    if equal_nan and dtypes.is_inexact(x.dtype):
        both = lax.bitwise_and(lax.ne(x, x), lax.ne(y, y))
        ne = lax.bitwise_and(ne, lax.bitwise_not(both))
    return ne


def _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
            fill_value):
    a = _arr("unique", ar)
    orig_shape = a.shape
    it = _int()
    if axis is None:
        rows = lax.reshape(a, (a.size, 1))
    else:
        ax = canonicalize_axis(axis, a.ndim)
        moved = lax.transpose(a, [ax] + [i for i in range(a.ndim) if i != ax])
        rows = lax.reshape(moved, (a.shape[ax], int(np.prod(moved.shape[1:], dtype=int))))
    n, width = rows.shape
    cols = [lax.index_in_dim(rows, j, 1, keepdims=False) for j in range(width)]
    idx = lax.iota(it, n)
    # sort rows lexicographically (first column most significant), carrying row indices
    srt = lax.sort(tuple(cols) + (idx,), dimension=0, is_stable=True, num_keys=width) \
        if width else (idx,)
    perm = srt[-1]
    scols = list(srt[:-1])
    # mask: True where a sorted row differs from the one before (the first row always)
    if n == 0:
        mask = _fill((0,), False, np.bool_)
    else:
        diff = _fill((n - 1,), False, np.bool_)
        for c in scols:
            d = _differs(lax.slice(c, (1,), (n,)), lax.slice(c, (0,), (n - 1,)), equal_nan)
            diff = lax.bitwise_or(diff, d)
        mask = lax.concatenate([_fill((1,), True, np.bool_), diff], 0)
    if size is None:
        count = lax.reduce_sum(convert(mask, it), (0,))
        if isinstance(count, Tracer):
            # even a concrete count under grad: JAX's unique there drops the derivative
            # (zeros), which jaxlite does not copy silently
            raise errors.ConcretizationTypeError(
                count, "The error arose in jnp.unique(). When using jnp.unique() within JAX "
                       "transformations, pass a static size= argument.")
        size = int(count)
    size = int(size)
    pos, count = _nonzero_flat(mask, size)
    if width and n:
        sorted_rows = lax.concatenate([lax.reshape(c, (n, 1)) for c in scols], 1)
        vals = lax.gather_indexed(sorted_rows, (("array", 0),), [pos], mode="clip")
    else:
        vals = _fill((size, width), 0, a.dtype)
    if fill_value is not None and size:
        check_arraylike("unique", fill_value)
        valid = lax.lt(lax.iota(it, size), lax.broadcast_in_dim(count, (size,), ()))
        fv = convert(ensure_array(fill_value), a.dtype)
        vals = lax.select(lax.broadcast_in_dim(valid, vals.shape, (0,)), vals,
                          lax.broadcast_in_dim(fv, vals.shape, ()))
    if axis is None:
        values = lax.reshape(vals, (size,))
    else:
        rest = [moved.shape[i] for i in range(1, moved.ndim)]
        values = lax.reshape(vals, [size] + rest)
        values = lax.transpose(values, _inverse_perm([ax] + [i for i in range(a.ndim)
                                                             if i != ax]))
    # a weakly typed real input (a Python int or float) gives weakly typed values, as in
    # JAX; complex values are strong there
    values = lax._convert(values, values.dtype, a.weak_type and a.dtype.kind != "c")
    out = [values]
    if return_index:
        out.append(lax.gather_indexed(perm, (("array", 0),), [pos], mode="clip") if n
                   else _fill((size,), 0, it))
    if return_inverse or return_counts:
        group = lax.sub(lax.cumsum(convert(mask, it), 0), _fill((n,), 1, it)) if n \
            else _fill((0,), 0, it)
        if return_inverse:
            inv = lax.scatter_indexed(_fill((n,), 0, it), group, (("array", 0),), [perm],
                                      op="set", mode="drop") if n else _fill((0,), 0, it)
            out.append(lax.reshape(inv, orig_shape) if axis is None else inv)
        if return_counts:
            ones = _fill((n,), 1, it)
            counts = lax.scatter_indexed(_fill((size,), 0, it), ones, (("array", 0),),
                                         [group], op="add", mode="drop") if n \
                else _fill((size,), 0, it)
            out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def _inverse_perm(p):
    inv = [0] * len(p)
    for i, j in enumerate(p):
        inv[j] = i
    return inv


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique elements of ``ar`` (rows/slices along ``axis`` when given)
    (``jax.numpy.unique``).

    Optionally also: ``return_index`` (first occurrence of each), ``return_inverse``
    (indices rebuilding ``ar``; ``ar``'s shape when ``axis`` is None), ``return_counts``.
    NaNs count as one value when ``equal_nan``.  ``size`` fixes the number of values
    (padding with ``fill_value``, default the smallest value; counts pad with 0) and is
    required under jit, else ConcretizationTypeError.
    """
    return _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
                   fill_value)


def unique_values(x, /, *, size=None, fill_value=None):
    """Array-API unique values, sorted (``jax.numpy.unique_values``).  Unlike ``unique``'s
    default, every NaN counts as a distinct value.  ``size``/``fill_value`` as in
    ``unique``."""
    return _unique(x, False, False, False, None, False, size, fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    """Array-API ``(values, counts)`` namedtuple (``jax.numpy.unique_counts``); NaNs are
    distinct."""
    return _UniqueCountsResult(*_unique(x, False, False, True, None, False, size, fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
    """Array-API ``(values, inverse_indices)`` namedtuple (``jax.numpy.unique_inverse``);
    ``inverse_indices`` has ``x``'s shape; NaNs are distinct."""
    return _UniqueInverseResult(*_unique(x, False, True, False, None, False, size, fill_value))


def unique_all(x, /, *, size=None, fill_value=None):
    """Array-API ``(values, indices, inverse_indices, counts)`` namedtuple
    (``jax.numpy.unique_all``); NaNs are distinct."""
    return _UniqueAllResult(*_unique(x, True, True, True, None, False, size, fill_value))


__all__ = public_names(globals())
