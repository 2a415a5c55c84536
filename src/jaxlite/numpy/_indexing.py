"""Indexing: ``x[idx]`` and ``x.at[idx].set/add/...`` (``jax.numpy`` semantics).

An index (ints, slices, None, Ellipsis, integer arrays, boolean masks) is normalised into
the static ``indexer`` of the gather/scatter primitives plus the list of dynamic integer
index operands.  Boolean masks need concrete values (they decide the result's shape): under
jit they raise NonConcreteBooleanIndexError.
"""
from __future__ import annotations

import numpy as np

from .. import errors, lax
from ..core.array import ArrayImpl
from ..core.trace import Tracer
from ..primitives.indexing import indexed_shape
from ._util import PY_SCALARS, broadcast_to_shape, convert, ensure_array

_INT_TYPES = (int, np.integer)


def _is_int_array(x):
    return isinstance(x, (ArrayImpl, Tracer, np.ndarray)) and np.dtype(x.dtype).kind in "iu"


def _is_bool_array(x):
    return isinstance(x, (ArrayImpl, Tracer, np.ndarray)) and np.dtype(x.dtype) == np.bool_


def normalize_index(shape, idx):
    """Returns ``(indexer, idx_arrays)`` for ``x[idx]`` on an array of ``shape``.

    Raises IndexError for too many indices or out-of-range static integers, TypeError for
    unsupported index types (lists, floats, strings), NonConcreteBooleanIndexError for a
    traced boolean mask.
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    # expand boolean masks into integer index arrays (concrete values only)
    expanded = []
    for item in idx:
        if isinstance(item, (list,)):
            raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                            "allowed; use `arr[array(seq)]` instead of `arr[seq]`.")
        if isinstance(item, bool) or _is_bool_array(item):
            if isinstance(item, Tracer):
                raise errors.NonConcreteBooleanIndexError(item)
            mask = np.asarray(item)
            if mask.ndim == 0:
                raise TypeError("boolean scalar indices are not supported; use "
                                "jnp.where or an explicit index")
            expanded.extend(np.nonzero(mask))
            continue
        expanded.append(item)
    idx = expanded
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if used > len(shape):
        raise IndexError(f"Too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{used} were indexed (shape {shape}, index {tuple(idx)})")
    if n_ell:
        k = idx.index(Ellipsis)
        idx = idx[:k] + [slice(None)] * (len(shape) - used) + idx[k + 1:]
    indexer, arrays, dim = [], [], 0
    for item in idx:
        if item is None:
            indexer.append(("none",))
            continue
        n = shape[dim]
        if isinstance(item, slice):
            indexer.append(("slice",) + tuple(_slice_indices(item, n)))
        elif isinstance(item, _INT_TYPES) and not isinstance(item, bool):
            i = int(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            indexer.append(("int", i % n if n else 0))
        elif _is_int_array(item) or (isinstance(item, (ArrayImpl, Tracer)) and
                                     np.dtype(item.dtype).kind in "iu"):
            indexer.append(("array", len(arrays)))
            arrays.append(item)
        else:
            raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                            f"type {type(item).__name__}"
                            + (f" and dtype {item.dtype}" if hasattr(item, "dtype") else "")
                            + f" at position {dim}, indexer={item!r}")
        dim += 1
    return tuple(indexer), arrays


def _slice_indices(s: slice, n: int):
    for v in (s.start, s.stop, s.step):
        if isinstance(v, Tracer):
            raise IndexError("Array slice indices must have static start/stop/step to be "
                             "used with NumPy indexing syntax; use lax.dynamic_slice for "
                             "traced start indices.")
    start, stop, step = (None if v is None else int(v) for v in (s.start, s.stop, s.step))
    return slice(start, stop, step).indices(n)


def getitem(x, idx, mode=None, fill_value=None):
    """``x[idx]`` with NumPy's basic and advanced indexing (``jax.numpy`` semantics:
    out-of-bounds array indices are clamped unless ``mode='fill'``)."""
    x = ensure_array(x) if not isinstance(x, (ArrayImpl, Tracer)) else x
    indexer, arrays = normalize_index(x.shape, idx)
    arrays = [ensure_array(a) if isinstance(a, np.ndarray) else a for a in arrays]
    if mode is None:
        mode = "fill" if fill_value is not None else "clip"
    return lax.gather_indexed(x, indexer, arrays, mode=mode, fill_value=fill_value)


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates of ``x`` at ``idx``; each method returns a NEW
    array and leaves ``x`` unchanged."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None, out_sharding=None):
        """``x[idx]``; ``mode='fill'`` returns ``fill_value`` for out-of-bounds indices."""
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    def _scatter(self, values, op, mode):
        x = self.array
        indexer, arrays = normalize_index(x.shape, self.index)
        arrays = [ensure_array(a) if isinstance(a, np.ndarray) else a for a in arrays]
        shape = indexed_shape(x.shape, indexer, [a.shape for a in arrays])
        if not isinstance(values, (ArrayImpl, Tracer, np.ndarray, np.generic) + PY_SCALARS):
            values = np.asarray(values)
        vals = convert(values, x.dtype, x.weak_type)
        vals = broadcast_to_shape(ensure_array(vals) if isinstance(vals, PY_SCALARS + (
            np.ndarray, np.generic)) else vals, shape)
        if isinstance(vals, np.ndarray):
            vals = ensure_array(vals)
        return lax.scatter_indexed(x, vals, indexer, arrays, op=op,
                                   mode="drop" if mode is None else mode)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = values``, returned as a new array."""
        return self._scatter(values, "set", mode)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] += values``; repeated indices accumulate."""
        return self._scatter(values, "add", mode)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] -= values``; repeated indices accumulate."""
        from ._ufuncs import negative
        return self._scatter(negative(values), "add", mode)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] *= values``; repeated indices accumulate."""
        return self._scatter(values, "mul", mode)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] /= values``."""
        from ._ufuncs import divide
        cur = self.get(mode="clip")
        return self._scatter(divide(cur, values), "set", mode)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] **= values``."""
        from ._ufuncs import power
        cur = self.get(mode="clip")
        return self._scatter(power(cur, values), "set", mode)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = minimum(x[idx], values)``; repeated indices accumulate."""
        return self._scatter(values, "min", mode)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = maximum(x[idx], values)``; repeated indices accumulate."""
        return self._scatter(values, "max", mode)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = func(x[idx])`` for a unary function ``func``."""
        cur = self.get(mode="clip")
        return self._scatter(func(cur), "set", mode)


class IndexUpdateHelper:
    """The ``x.at`` property: ``x.at[idx]`` gives the update reference."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"

