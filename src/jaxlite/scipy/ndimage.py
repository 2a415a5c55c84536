"""``jaxlite.scipy.ndimage`` (``jax.scipy.ndimage``): ``map_coordinates``, interpolation
of an N-d array at fractional coordinates.

Layer: scipy (gathers and arithmetic of jaxlite.numpy: differentiable in the input and the
coordinates, batchable, jit-able).
"""
from __future__ import annotations

import itertools
import operator
import sys

import numpy as np

from .. import _traceback
from .. import numpy as jnp
from ..numpy._util import check_arraylike, ensure_array

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _index(i, n, mode):
    """Integer indices ``i`` along an axis of size ``n`` mapped inside it by ``mode``, and
    whether each was inside to begin with."""
    valid = (i >= 0) & (i < n)
    if mode == "constant":
        return jnp.clip(i, 0, n - 1), valid
    if mode == "nearest":
        return jnp.clip(i, 0, n - 1), valid
    if mode == "wrap":
        return i % n, valid
    if mode == "mirror":
        if n == 1:
            return jnp.zeros_like(i), valid
        p = 2 * (n - 1)
        k = i % p
        return jnp.where(k >= n, p - k, k), valid
    p = 2 * n                                   # reflect: the edge sample repeats
    k = i % p
    return jnp.where(k >= n, p - 1 - k, k), valid


def map_coordinates(input, coordinates, order, mode: str = "constant", cval=0.0):  # noqa: A002
    """The values of ``input`` at the points ``coordinates`` (one array per axis, all of
    the output's shape) (``jax.scipy.ndimage.map_coordinates``): ``order`` 0 takes the
    nearest sample (halves round up), 1 interpolates linearly. Outside the array ``mode``
    decides: 'constant' (``cval`` for every missing sample), 'nearest', 'wrap', 'mirror'
    or 'reflect'. Integer input gives integer output, rounded. Raises ValueError for the
    wrong number of coordinate arrays, NotImplementedError for ``order > 1`` or another
    mode."""
    check_arraylike("map_coordinates", input)
    x = ensure_array(input)
    coords = [jnp.asarray(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise ValueError(f"coordinates must be a sequence of length input.ndim, but "
                         f"{len(coords)} != {x.ndim}")
    order = operator.index(order)
    if order > 1:
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires "
                                  "order<=1")
    if mode not in _MODES:
        raise NotImplementedError(
            f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
            f"supported modes are {set(_MODES)}.")
    shape = np.broadcast_shapes(*[c.shape for c in coords]) if coords else ()
    coords = [jnp.broadcast_to(c, shape) for c in coords]
    per_axis = []
    for c, n in zip(coords, x.shape):
        if order == 0:
            i = jnp.floor(c + 0.5).astype(np.int32)
            per_axis.append([(i, None)])
        else:
            lo = jnp.floor(c)
            w = c - lo
            lo = lo.astype(np.int32)
            per_axis.append([(lo, 1 - w), (lo + 1, w)])
    out = None
    for corner in itertools.product(*per_axis):
        idx, ok, weight = [], None, None
        for (i, w), n in zip(corner, x.shape):
            j, valid = _index(i, n, mode)
            idx.append(j)
            ok = valid if ok is None else ok & valid
            if w is not None:
                weight = w if weight is None else weight * w
        val = x[tuple(idx)]
        if mode == "constant":
            val = jnp.where(ok, val, jnp.asarray(cval, dtype=val.dtype))
        term = val if weight is None else val * weight.astype(
            jnp.result_type(val.dtype, np.float32) if val.dtype.kind in "iub" else val.dtype)
        out = term if out is None else out + term
    if x.dtype.kind in "iu" and out.dtype != x.dtype:
        out = jnp.round(out).astype(x.dtype)
    return out


__all__ = ["map_coordinates"]


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
