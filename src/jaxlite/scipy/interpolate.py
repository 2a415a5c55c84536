"""``jaxlite.scipy.interpolate`` (``jax.scipy.interpolate``): ``RegularGridInterpolator``,
linear or nearest-neighbour interpolation on a rectilinear grid.

Layer: scipy (searchsorted, gathers and arithmetic of jaxlite.numpy: differentiable in the
values and the query points, jit-able).
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import _traceback
from .. import numpy as jnp
from ..numpy._util import check_arraylike, ensure_array, promote_dtypes_inexact


class RegularGridInterpolator:
    """Interpolation of ``values`` (shape ``(n_1, ..., n_d, ...)``) given on the grid
    ``points`` (d increasing 1-d arrays) (``jax.scipy.interpolate.RegularGridInterpolator``).

    ``method`` 'linear' or 'nearest'. Outside the grid the result is ``fill_value``
    (default NaN), or extrapolated when it is None. ``bounds_error=True`` raises
    NotImplementedError (as JAX: the check cannot run under jit); another method
    ValueError; a grid that does not fit ``values`` ValueError."""

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=np.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        self.method = method
        self.bounds_error = bounds_error
        check_arraylike("RegularGridInterpolator", values)
        v = ensure_array(values)
        if v.dtype.kind in "iub":
            (v,) = promote_dtypes_inexact(v)
            v = ensure_array(v)
        if len(points) > v.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has {v.ndim} "
                             f"dimensions")
        grid = []
        for i, p in enumerate(points):
            g = jnp.asarray(p)
            if g.ndim != 1 or g.shape[0] != v.shape[i]:
                raise ValueError(f"there are {g.shape} points and {v.shape[i]} values in "
                                 f"dimension {i}")
            grid.append(g)
        self.grid = tuple(grid)
        self.values = v
        self.fill_value = fill_value

    @_traceback.api_boundary    # a traceback boundary (jaxlite/_traceback.py)
    def __call__(self, xi, method=None):
        """The interpolated values at the points ``xi`` (shape ``(..., d)``): shape
        ``(...,) + values.shape[d:]``. Raises ValueError for a wrong last dimension or
        an unknown method."""
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        d = len(self.grid)
        x = jnp.asarray(xi)
        if x.ndim == 1:
            # a 1-d xi: the points of a 1-d grid, or one point of a d-dimensional one
            x = x[:, None] if d == 1 else x[None, :]
        if x.ndim == 0 or x.shape[-1] != d:
            raise ValueError(f"the requested sample points xi have dimension {x.shape[-1:]}, "
                             f"but this RegularGridInterpolator has dimension {d}")
        lead = x.shape[:-1]
        x = x.reshape(-1, d).astype(jnp.result_type(x.dtype, self.values.dtype))
        idx, frac, outside = [], [], jnp.zeros(x.shape[0], bool)
        for k, g in enumerate(self.grid):
            c = x[:, k]
            i = jnp.clip(jnp.searchsorted(g, c) - 1, 0, max(g.shape[0] - 2, 0))
            lo, hi = g[i], g[jnp.minimum(i + 1, g.shape[0] - 1)]
            span = jnp.where(hi == lo, 1, hi - lo)
            idx.append(i)
            frac.append((c - lo) / span)
            outside = outside | (c < g[0]) | (c > g[-1])
        trail = (1,) * (self.values.ndim - d)
        if method == "nearest":
            near = tuple(jnp.where(t <= 0.5, i, jnp.minimum(i + 1, g.shape[0] - 1))
                         for i, t, g in zip(idx, frac, self.grid))
            out = self.values[near]
        else:
            out = 0
            for corner in itertools.product((0, 1), repeat=d):
                w = 1
                ii = []
                for b, i, t, g in zip(corner, idx, frac, self.grid):
                    ii.append(jnp.minimum(i + b, g.shape[0] - 1))
                    w = w * (t if b else 1 - t)
                out = out + self.values[tuple(ii)] * w.reshape(w.shape + trail)
        if self.fill_value is not None:
            out = jnp.where(outside.reshape(outside.shape + trail),
                            jnp.asarray(self.fill_value, dtype=out.dtype), out)
        return out.reshape(lead + tuple(self.values.shape[d:]))


__all__ = ["RegularGridInterpolator"]
