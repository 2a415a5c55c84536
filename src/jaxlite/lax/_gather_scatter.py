"""XLA-style gather and scatter (``jax.lax.gather``, ``jax.lax.scatter*``) with dimension
numbers, written over jaxlite's NumPy-style ``gather``/``scatter`` primitives.

Layer: lax (a composition; no primitive of its own).  An XLA gather picks, for every batch
position of ``start_indices``, a window of ``slice_sizes`` of the operand that starts at the
position's index vector; the window dimensions listed as collapsed (size 1) are dropped and
the others appear in the output at ``offset_dims``.  Here every output element's full
operand coordinate is computed as one integer array per operand dimension (start, clamped or
checked, plus the offset inside the window), and the element is read with an advanced index.
A scatter is the same coordinate computation run over the ``updates`` array, written with
``x.at[coordinates]``.  So both differentiate, batch and compile like the indexing
primitives.

Modes (``GatherScatterMode``): ``CLIP`` clamps each window's start so that the window lies
inside the operand; gather's ``FILL_OR_DROP`` fills windows that do not fit with
``fill_value``, scatter's drops their updates.  ``lax.gather``'s default is
``PROMISE_IN_BOUNDS`` (as JAX's, whatever ``GatherScatterMode.from_any(None)`` says): starts
clamped, and no derivative for a window that did not fit; the scatters' is
``FILL_OR_DROP``, and their ``PROMISE_IN_BOUNDS`` drops as it does.
"""
from __future__ import annotations

import builtins
import enum
from typing import NamedTuple, Sequence

import numpy as np

from .. import dtypes
from ..core.trace import get_aval


class GatherScatterMode(enum.Enum):
    """How out-of-bounds windows are handled (``jax.lax.GatherScatterMode``)."""
    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s):
        """The mode named by ``s``: a GatherScatterMode, 'clip', 'fill'/'drop'/None
        (FILL_OR_DROP), 'promise_in_bounds' or 'one_hot'; ValueError otherwise."""
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"Unknown gather mode {s!r}")


class GatherDimensionNumbers(NamedTuple):
    """The dimension numbers of an XLA gather (``jax.lax.GatherDimensionNumbers``).

    offset_dims: output dimensions that hold the window's uncollapsed dimensions, in
      operand order; collapsed_slice_dims: operand dimensions whose window size is 1 and
      which the output drops; start_index_map: for each entry of an index vector, the
      operand dimension it starts; operand_batching_dims / start_indices_batching_dims:
      paired dimensions of the operand and of the indices that are batched together."""
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """The dimension numbers of an XLA scatter (``jax.lax.ScatterDimensionNumbers``).

    update_window_dims: dimensions of ``updates`` that hold the window's dimensions, in
      operand order; inserted_window_dims: operand dimensions with window size 1 that
      ``updates`` lacks; scatter_dims_to_operand_dims: for each entry of an index vector,
      the operand dimension it starts; operand_batching_dims /
      scatter_indices_batching_dims: paired batched dimensions."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _ints(v) -> tuple:
    return tuple(int(i) for i in v)


def _coordinates(name, op_shape, idx, window_dims_out, window_sizes, dropped, index_map,
                 op_batch, idx_batch, out_shape, clamp):
    """One int32 array of ``out_shape`` per operand dimension (the operand coordinate of
    each output/update element), and the per-batch-position validity mask (True where the
    whole window fits), broadcast to ``out_shape``.

    ``idx``: the indices, index vector last; ``window_dims_out``: positions in
    ``out_shape`` of the window dimensions (the operand dimensions not in ``dropped``, in
    order); ``window_sizes``: the window size per operand dimension."""
    from .. import numpy as jnp
    from .. import lax
    nd_out = len(out_shape)
    batch_pos = [d for d in range(nd_out) if d not in window_dims_out]
    nb = len(batch_pos)
    idx_batch_shape = get_aval(idx).shape[:-1]
    if len(idx_batch_shape) != nb or tuple(out_shape[p] for p in batch_pos) != \
            tuple(idx_batch_shape):
        raise TypeError(f"{name}: the batch dimensions of the indices {tuple(idx_batch_shape)} "
                        f"do not match the output/updates shape {tuple(out_shape)} outside "
                        f"the window dimensions {tuple(window_dims_out)}")
    idx = idx.astype(np.int32) if get_aval(idx).dtype != np.int32 else idx

    def to_out(a):   # an array over the batch dims -> broadcastable to out_shape
        shape = [1] * nd_out
        for p, n in zip(batch_pos, idx_batch_shape):
            shape[p] = n
        return jnp.reshape(a, shape)

    valid = None
    coords = []
    win = iter(window_dims_out)
    for d, n in enumerate(op_shape):
        size = window_sizes[d]
        if d in index_map:
            start = to_out(idx[..., index_map.index(d)])
            hi = n - size
            ok = (start >= 0) & (start <= hi)
            valid = ok if valid is None else valid & ok
            if clamp:
                start = jnp.clip(start, 0, max(hi, 0))
        elif d in op_batch:
            axis = idx_batch[op_batch.index(d)]
            start = lax.broadcasted_iota(np.int32, out_shape, batch_pos[axis])
        else:
            start = np.int32(0)
        if d in dropped:
            c = start
        else:
            c = start + lax.broadcasted_iota(np.int32, out_shape, next(win))
        coords.append(jnp.broadcast_to(c, out_shape))
    if valid is None:
        valid = jnp.ones(out_shape, bool)
    return coords, jnp.broadcast_to(valid, out_shape)


def _check_dims(name, what, dims, rank, ordered=False):
    """TypeError, as JAX's shape rules, for dimension numbers ``dims`` outside
    ``[0, rank)``, repeated, or (``ordered``) not ascending."""
    for d in dims:
        if not 0 <= d < rank:
            raise TypeError(f"{name}: {what} {tuple(dims)} out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name}: {what} {tuple(dims)} repeats a dimension")
    if ordered and list(dims) != sorted(dims):
        raise TypeError(f"{name}: {what} {tuple(dims)} must be sorted")


def _check_disjoint(name, what, dims, batch):
    both = sorted(set(dims) & set(batch))
    if both:
        raise TypeError(f"{name}: {what} {tuple(dims)} and operand_batching_dims "
                        f"{tuple(batch)} must be disjoint; both hold {tuple(both)}")


def _default_fill(dtype):
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if np.issubdtype(dtype, np.signedinteger) else info.max


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """XLA's gather (``jax.lax.gather``): one window of ``slice_sizes`` per index vector.

    Args:
      operand: array of rank ``r``.
      start_indices: integer array whose last dimension is the index vector (its length is
        ``len(dimension_numbers.start_index_map)``); the other dimensions are batch
        dimensions.
      dimension_numbers: a ``GatherDimensionNumbers``.
      slice_sizes: ``r`` ints, the window size per operand dimension (1 for collapsed and
        operand-batching dimensions).
      mode: None/'promise_in_bounds' (default: starts clamped, and a window that did not
        fit gets no derivative, as in JAX), 'clip'/CLIP (starts clamped, derivatives
        too), 'fill'/FILL_OR_DROP (windows that do not fit are ``fill_value``: NaN for
        inexact dtypes, the minimum of a signed and the maximum of an unsigned integer
        dtype, True for bool).

    Returns:
      Array of ``operand``'s dtype, rank ``batch + window`` dims (window dims at
      ``offset_dims``).

    Raises:
      ValueError: non-integer indices;
      TypeError: dimension numbers out of range, repeated, unsorted (collapsed and
        batching dimensions) or overlapping, shapes that do not agree with them.
    """
    from .. import numpy as jnp
    dn = dimension_numbers
    if not isinstance(dn, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{type(dn).__name__}")
    mode = (GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
            else GatherScatterMode.from_any(mode))
    operand = jnp.asarray(operand)
    idx = jnp.asarray(start_indices)
    aval, iaval = get_aval(operand), get_aval(idx)
    if not dtypes.is_int(iaval.dtype):
        raise ValueError(f"gather: indices must have an integer type, got "
                         f"{iaval.dtype.name}")
    r = aval.ndim
    sizes = _ints(slice_sizes)
    offset, collapsed, index_map = _ints(dn.offset_dims), _ints(dn.collapsed_slice_dims), \
        _ints(dn.start_index_map)
    op_batch, idx_batch = _ints(dn.operand_batching_dims), _ints(dn.start_indices_batching_dims)
    if len(sizes) != r:
        raise TypeError(f"gather: slice_sizes {sizes} must have one entry per dimension of "
                        f"the operand of shape {aval.shape}")
    for d, (s, n) in enumerate(zip(sizes, aval.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"gather: slice_sizes {sizes} out of bounds for operand shape "
                            f"{aval.shape}")
        if (d in collapsed or d in op_batch) and s != 1:
            raise TypeError(f"gather: slice_sizes[{d}] must be 1 for a collapsed or batching "
                            f"dimension, got {s}")
    _check_dims("gather", "collapsed_slice_dims", collapsed, r, ordered=True)
    _check_dims("gather", "start_index_map", index_map, r)
    _check_dims("gather", "operand_batching_dims", op_batch, r, ordered=True)
    _check_disjoint("gather", "collapsed_slice_dims", collapsed, op_batch)
    if iaval.ndim == 0 or iaval.shape[-1] != len(index_map):
        raise TypeError(f"gather: the last dimension of start_indices {iaval.shape} must "
                        f"equal len(start_index_map) = {len(index_map)}")
    _check_dims("gather", "start_indices_batching_dims", idx_batch, iaval.ndim - 1)
    if len(op_batch) != len(idx_batch):
        raise TypeError("gather: operand_batching_dims and start_indices_batching_dims must "
                        "have the same length")
    dropped = set(collapsed) | set(op_batch)
    window = [sizes[d] for d in range(r) if d not in dropped]
    nd_out = iaval.ndim - 1 + len(window)
    _check_dims("gather", "offset_dims", offset, nd_out)
    if len(offset) != len(window):
        raise TypeError(f"gather: offset_dims {offset} must have one entry per uncollapsed "
                        f"window dimension ({len(window)})")
    offset = tuple(sorted(offset))
    out_shape, batch = [0] * nd_out, iter(iaval.shape[:-1])
    wit = iter(window)
    for p in range(nd_out):
        out_shape[p] = next(wit) if p in offset else next(batch)
    coords, valid = _coordinates("gather", aval.shape, idx, offset, sizes, dropped,
                                 index_map, op_batch, idx_batch, out_shape, clamp=True)
    out = operand[tuple(coords)] if coords else jnp.broadcast_to(operand, out_shape)
    if mode == GatherScatterMode.FILL_OR_DROP:
        fill = _default_fill(aval.dtype) if fill_value is None else fill_value
        out = jnp.where(valid, out, jnp.asarray(fill, aval.dtype))
    elif mode == GatherScatterMode.PROMISE_IN_BOUNDS:
        # clamped going forward; the derivative of a window that did not fit is dropped,
        # as the transposed scatter of XLA's unchecked gather drops it
        from . import stop_gradient
        out = jnp.where(valid, out, stop_gradient(out))
    return out


def _scatter(name, method, operand, scatter_indices, updates, dimension_numbers, mode,
             unique_indices, indices_are_sorted, **kw):
    from .. import numpy as jnp
    dn = dimension_numbers
    if not isinstance(dn, ScatterDimensionNumbers):
        raise TypeError(f"{name}: dimension_numbers must be a ScatterDimensionNumbers, got "
                        f"{type(dn).__name__}")
    mode = GatherScatterMode.from_any(mode)
    operand = jnp.asarray(operand)
    idx = jnp.asarray(scatter_indices)
    aval, iaval = get_aval(operand), get_aval(idx)
    if updates is None:
        upd_shape = tuple(kw.pop("update_shape"))
    else:
        updates = jnp.asarray(updates)
        upd_shape = get_aval(updates).shape
        if get_aval(updates).dtype != aval.dtype:
            raise TypeError(f"{name}: updates of dtype {get_aval(updates).dtype.name} do not "
                            f"match the operand's dtype {aval.dtype.name}; lax.scatter "
                            f"requires the same dtypes")
    if not dtypes.is_int(iaval.dtype):
        raise ValueError(f"{name}: indices must have an integer type, got "
                         f"{iaval.dtype.name}")
    r = aval.ndim
    uwd, inserted, index_map = _ints(dn.update_window_dims), \
        _ints(dn.inserted_window_dims), _ints(dn.scatter_dims_to_operand_dims)
    op_batch, idx_batch = _ints(dn.operand_batching_dims), \
        _ints(dn.scatter_indices_batching_dims)
    want_rank = builtins.max(iaval.ndim - 1, 0) + len(uwd)
    if len(upd_shape) != want_rank:
        raise TypeError(f"{name}: updates must be of rank {want_rank} (the indices' "
                        f"{builtins.max(iaval.ndim - 1, 0)} batch dimensions and "
                        f"{len(uwd)} update_window_dims); got shape {upd_shape}")
    _check_dims(name, "inserted_window_dims", inserted, r, ordered=True)
    _check_dims(name, "scatter_dims_to_operand_dims", index_map, r)
    _check_dims(name, "operand_batching_dims", op_batch, r, ordered=True)
    _check_disjoint(name, "inserted_window_dims", inserted, op_batch)
    _check_dims(name, "update_window_dims", uwd, len(upd_shape))
    if iaval.ndim == 0 or iaval.shape[-1] != len(index_map):
        raise TypeError(f"{name}: the last dimension of scatter_indices {iaval.shape} must "
                        f"equal len(scatter_dims_to_operand_dims) = {len(index_map)}")
    _check_dims(name, "scatter_indices_batching_dims", idx_batch, iaval.ndim - 1)
    dropped = set(inserted) | set(op_batch)
    win_dims = [d for d in range(r) if d not in dropped]
    if len(uwd) != len(win_dims):
        raise TypeError(f"{name}: update_window_dims {uwd} must have one entry per operand "
                        f"dimension that is neither inserted nor batched ({len(win_dims)})")
    uwd = tuple(sorted(uwd))
    sizes = [1] * r
    for d, p in zip(win_dims, uwd):
        sizes[d] = upd_shape[p]
        if sizes[d] > aval.shape[d]:
            raise TypeError(f"{name}: updates window size {sizes[d]} exceeds the operand's "
                            f"dimension {d} of size {aval.shape[d]} (operand shape "
                            f"{aval.shape}, updates shape {upd_shape})")
    clamp = mode == GatherScatterMode.CLIP
    coords, valid = _coordinates(name, aval.shape, idx, uwd, sizes, dropped, index_map,
                                 op_batch, idx_batch, upd_shape, clamp=clamp)
    if not clamp:   # a window that does not fit is dropped whole: point it past the end
        coords = [jnp.where(valid, c, np.int32(n)) for c, n in zip(coords, aval.shape)]
    ref = operand.at[tuple(coords)]
    extra = dict(mode="clip" if clamp else "drop", indices_are_sorted=indices_are_sorted,
                 unique_indices=unique_indices)
    if method == "apply":
        return ref.apply(kw["func"], **extra)
    if method == "sub":
        return ref.add(jnp.negative(updates), **extra)
    return getattr(ref, method)(updates, **extra)


def scatter(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
            unique_indices=False, mode=None):
    """XLA's scatter (``jax.lax.scatter``): ``updates``' windows replace the operand's.

    Args:
      operand: array of rank ``r``.
      scatter_indices: integer array, index vector last (length
        ``len(dimension_numbers.scatter_dims_to_operand_dims)``).
      updates: array of ``operand``'s dtype: the indices' batch dimensions plus the window
        dimensions at ``update_window_dims``.
      dimension_numbers: a ``ScatterDimensionNumbers``.
      mode: None/'drop'/FILL_OR_DROP (default: windows that do not fit are skipped),
        'clip'/CLIP (their starts are clamped), 'promise_in_bounds'.

    Returns:
      Array of ``operand``'s shape and dtype.  Where windows overlap, the last wins (XLA
      leaves the order unspecified).

    Raises:
      ValueError: non-integer indices;
      TypeError: dimension numbers out of range, repeated, unsorted (inserted and batching
        dimensions) or overlapping, updates of another rank or dtype than the dimension
        numbers and the operand ask for.
    """
    return _scatter("scatter", "set", operand, scatter_indices, updates, dimension_numbers,
                    mode, unique_indices, indices_are_sorted)


def _combining(method, doc):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        return _scatter(f"scatter_{method}", method, operand, scatter_indices, updates,
                        dimension_numbers, mode, unique_indices, indices_are_sorted)
    fn.__name__ = fn.__qualname__ = f"scatter_{method}"
    fn.__doc__ = (f"XLA's scatter combining with {doc} (``jax.lax.scatter_{method}``); "
                  f"arguments, modes and errors as ``scatter``.  Repeated locations "
                  f"combine one after another.")
    return fn


scatter_add = _combining("add", "addition")
scatter_sub = _combining("sub", "subtraction")
scatter_mul = _combining("mul", "multiplication")
scatter_min = _combining("min", "the minimum")
scatter_max = _combining("max", "the maximum")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """Applies the unary ``func`` to the operand's elements under every scattered window
    (``jax.lax.scatter_apply``): ``update_shape`` is the shape an ``updates`` array would
    have; an element hit twice gets ``func`` twice.  Arguments and errors as ``scatter``."""
    return _scatter("scatter_apply", "apply", operand, scatter_indices, None,
                    dimension_numbers, mode, unique_indices, indices_are_sorted,
                    update_shape=update_shape, func=func)


def index_take(src, idxs, axes: Sequence[int]):
    """``src[idxs[0], idxs[1], ...]`` along ``axes`` (``jax.lax.index_take``).

    ``idxs`` holds one integer array of shape ``[n]`` per axis (indices taken modulo the
    axis' size); the result is ``[n]`` followed by ``src``'s other dimensions in order."""
    from .. import numpy as jnp
    src = jnp.asarray(src)
    shape = get_aval(src).shape
    axes = _ints(axes)
    if len(idxs) != len(axes):
        raise TypeError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes {axes}")
    cols = [jnp.asarray(i) % shape[a] for i, a in zip(idxs, axes)]
    indices = jnp.stack(cols, axis=1) if cols else jnp.zeros((0, 0), np.int32)
    sizes = tuple(1 if d in axes else n for d, n in enumerate(shape))
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
                                collapsed_slice_dims=axes, start_index_map=axes)
    return gather(src, indices, dn, sizes)
