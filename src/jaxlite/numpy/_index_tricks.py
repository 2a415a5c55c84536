"""Index construction (``jax.numpy``): ``indices``, ``ix_``, ``unravel_index``,
``ravel_multi_index``, and the index-expression objects ``mgrid``, ``ogrid``, ``r_``,
``c_``, ``s_`` and ``index_exp``.

Layer: numpy (compositions of other jaxlite.numpy functions and lax ops).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes, errors, lax
from ..core.trace import Tracer
from ._util import check_arraylike, ensure_array, int_tuple, public_names


def _jnp():
    from .. import numpy as jnp
    return jnp


def indices(dimensions, dtype=None, sparse: bool = False):
    """The index grid of an array of shape ``dimensions`` (``jax.numpy.indices``).

    Returns an int32 (or ``dtype``) array of shape ``(len(dimensions), *dimensions)``
    whose ``i``-th slice holds the ``i``-th index of each position; with ``sparse=True``,
    a tuple of arrays of shape ``(1, ..., d_i, ..., 1)`` that broadcast to it.
    Raises TypeError for non-integer dimensions."""
    dims = tuple(operator.index(d) for d in dimensions)
    dt = dtypes.canonicalize_dtype(np.int64 if dtype is None else dtype)
    out = []
    for i, d in enumerate(dims):
        shape = (1,) * i + (d,) + (1,) * (len(dims) - i - 1)
        idx = lax.broadcasted_iota(dt, shape, i)
        out.append(idx if sparse else lax.broadcast_in_dim(idx, dims, tuple(range(len(dims)))))
    if sparse:
        return tuple(out)
    if not out:
        return _jnp().zeros((0,), dt)
    return _jnp().stack(out)


def ix_(*args):
    """An open mesh from 1-d index sequences (``jax.numpy.ix_``): the ``k``-th result has
    the ``k``-th argument along axis ``k`` and size 1 elsewhere, so that ``x[ix_(a, b)]``
    selects the cross product.

    Raises TypeError for a non-array argument (a list), ValueError for one that is not
    1-d, and NotImplementedError for a boolean one (as JAX)."""
    check_arraylike("ix", *args)
    n = len(args)
    out = []
    for k, a in enumerate(args):
        a = ensure_array(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{tuple(a.shape)}")
        if a.dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not "
                                      "implemented")
        shape = (1,) * k + (a.shape[0],) + (1,) * (n - k - 1)
        out.append(lax.reshape(a, shape))
    return tuple(out)


def unravel_index(indices, shape):
    """Flat indices to a tuple of coordinate arrays in an array of ``shape``
    (``jax.numpy.unravel_index``, C order).

    As in JAX, a negative index in ``[-size, 0)`` counts from the end, and indices out of
    range are clipped to the first or last element (NumPy raises). Each result has the
    shape and dtype of ``indices``."""
    check_arraylike("unravel_index", indices)
    jnp = _jnp()
    idx = ensure_array(indices)
    dims = int_tuple(shape)
    size = int(np.prod(dims, dtype=np.int64))
    if size:
        idx = jnp.where(idx < 0, idx + size, idx)
        idx = jnp.clip(idx, 0, size - 1)
    out = []
    for d in reversed(dims):
        out.append(idx % d if d else idx)
        idx = idx // d if d else idx
    return tuple(reversed(out))


_MODES = ("raise", "wrap", "clip", "ignore")


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """A tuple of coordinate arrays to flat indices into an array of shape ``dims``
    (``jax.numpy.ravel_multi_index``).

    ``mode`` ('raise', 'wrap', 'clip' or 'ignore': no check) treats coordinates out of
    range; 'raise' needs concrete coordinates (under jit: ConcretizationTypeError, use
    'wrap' or 'clip') and raises ValueError on an invalid one. ``order`` is 'C' or 'F'.
    The result has the promoted dtype of the coordinates. Raises ValueError for
    non-integer coordinates, and AssertionError (JAX's type) when
    ``len(multi_index) != len(dims)``."""
    jnp = _jnp()
    dims = int_tuple(dims)
    multi_index = tuple(multi_index)
    check_arraylike("ravel_multi_index", *multi_index)
    if len(multi_index) != len(dims):
        # JAX's type for this error (an assertion there)
        raise AssertionError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                             f"len(dims)={len(dims)}")
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         f"'ignore'.")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F'; got {order!r}")
    arrs = [ensure_array(i) for i in multi_index]
    for a in arrs:
        if a.dtype.kind not in "iu":
            raise ValueError(f"ravel_multi_index: dtype={a.dtype!r} is not an integer type.")
    dt = dtypes.result_type(*arrs) if arrs else np.dtype(np.int32)
    arrs = [lax.convert_element_type(a, dt) for a in arrs]
    fixed = []
    for a, d in zip(arrs, dims):
        if mode == "raise":
            v = a.to_concrete_value() if isinstance(a, Tracer) else a
            if v is None:
                raise errors.ConcretizationTypeError(
                    a, "The error occurred because ravel_multi_index was jit-compiled with "
                    "mode='raise'. Use mode='wrap' or mode='clip' instead.")
            v = np.asarray(v)
            if v.size and (v.min() < 0 or v.max() >= d):
                raise ValueError("invalid entry in coordinates array")
        elif mode == "clip":
            a = jnp.clip(a, 0, d - 1)
        elif mode == "wrap":
            a = a % d if d else a
        fixed.append(a)
    order_dims = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat = None
    for k in order_dims:
        flat = fixed[k] if flat is None else flat * dims[k] + fixed[k]
    if flat is None:
        return ensure_array(np.zeros((), dt))
    return jnp.asarray(flat, dtype=dt)


# ---- index expressions -----------------------------------------------------------------

def _slice_range(s: slice):
    """The 1-d array a slice stands for in mgrid/ogrid/r_: an arange, or a linspace of
    ``abs(step)`` points (endpoint included) when the step is imaginary."""
    jnp = _jnp()
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex) or np.iscomplexobj(step):
        return jnp.linspace(start, s.stop, int(abs(step)), endpoint=True)
    return jnp.arange(start, s.stop, step)


class _Grid:
    """``mgrid`` (dense) and ``ogrid`` (sparse): ``grid[a:b:c, ...]`` is the meshgrid
    (``indexing='ij'``) of the slices' ranges, promoted to one dtype."""

    def __init__(self, sparse: bool, name: str):
        self.sparse, self._name = sparse, name

    def __getitem__(self, key):
        jnp = _jnp()
        if isinstance(key, slice):
            return _slice_range(key)
        ranges = [_slice_range(k) for k in key]
        if not ranges:
            return jnp.zeros((0,)) if not self.sparse else []
        dt = dtypes.result_type(*ranges)
        ranges = [lax.convert_element_type(r, dt) for r in ranges]
        grids = jnp.meshgrid(*ranges, indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else jnp.stack(grids)

    def __repr__(self):
        return f"jaxlite.numpy.{self._name}"


class _Concatenator:
    """``r_`` and ``c_``: concatenation by index syntax. Items are arrays, scalars and
    slices (ranges as in mgrid); a leading string ``'axis[,ndmin[,trans1d]]'`` sets the
    axis, the minimum rank and where 1-d items' axis goes, and ``'r'``/``'c'`` make a
    row or column matrix."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self._name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        jnp = _jnp()
        items = key if isinstance(key, tuple) else (key,)
        if not items:
            raise IndexError(f"{self._name}[()]: nothing to concatenate")
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = directive
            else:
                try:
                    parts = [int(p) for p in directive.split(",")]
                except ValueError:
                    raise ValueError(f"could not understand directive {directive!r}") \
                        from None
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
        arrays = []
        for item in items:
            if isinstance(item, slice):
                a = _slice_range(item)
            else:
                if isinstance(item, (list, tuple)):
                    item = jnp.array(item)
                check_arraylike(self._name, item)
                a = ensure_array(item)
                if a.ndim == 0:
                    a = lax.reshape(a, (1,))
            if a.ndim < ndmin:
                a = self._raise_rank(a, ndmin, trans1d)
            arrays.append(a)
        out = jnp.concatenate(arrays, axis=axis)
        if matrix is not None and out.ndim == 1:
            # a row matrix, or with 'c' a column one
            out = lax.reshape(out, (1, out.shape[0]) if matrix == "r" else (out.shape[0], 1))
        return out

    @staticmethod
    def _raise_rank(a, ndmin, trans1d):
        """``a`` with leading axes of size 1 up to rank ``ndmin``; unless ``trans1d`` is
        -1, the axes are then rotated left so that ``a``'s own axes start at ``trans1d``
        (JAX's rule; for a 1-d item it is NumPy's)."""
        b = lax.reshape(a, (1,) * (ndmin - a.ndim) + tuple(a.shape))
        if trans1d == -1:
            return b
        shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
        axes = tuple(range(ndmin))
        return lax.transpose(b, axes[shift:] + axes[:shift])

    def __len__(self):
        return 0

    def __repr__(self):
        return f"jaxlite.numpy.{self._name}"


mgrid = _Grid(sparse=False, name="mgrid")
ogrid = _Grid(sparse=True, name="ogrid")
r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")
s_ = np.s_
index_exp = np.index_exp

__all__ = public_names(globals()) + ["mgrid", "ogrid", "r_", "c_", "s_", "index_exp"]
