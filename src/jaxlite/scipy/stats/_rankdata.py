"""``jax.scipy.stats.rankdata``: ranks of the elements of an array."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ... import vmap

_METHODS = ("average", "min", "max", "dense", "ordinal")


def _ranks_1d(a, method):
    n = a.shape[0]
    sorter = jnp.argsort(a, stable=True)
    srt = a[sorter]
    if method == "ordinal":
        ranks = jnp.zeros(n, jnp.int32).at[sorter].set(jnp.arange(1, n + 1, dtype=jnp.int32))
    elif method == "dense":
        new = jnp.concatenate([jnp.ones(1, bool), srt[1:] != srt[:-1]])
        dense = jnp.cumsum(new)
        ranks = jnp.zeros(n, dense.dtype).at[sorter].set(dense)
    else:
        lo = jnp.searchsorted(srt, a, side="left") + 1
        hi = jnp.searchsorted(srt, a, side="right")
        ranks = {"min": lo, "max": hi}.get(method)
        if ranks is None:
            ranks = (lo + hi) / 2
    out = jnp.asarray(ranks, jnp.result_type(float))
    # NaN propagates to every rank of the slice (nan_policy='propagate')
    return jnp.where(jnp.any(jnp.isnan(a)), np.nan, out) if jnp.issubdtype(
        a.dtype, jnp.inexact) else out


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks from 1 of the elements of ``a`` (``jax.scipy.stats.rankdata``), ties resolved
    by ``method``: ``average``, ``min``, ``max``, ``dense`` (consecutive ranks for the
    distinct values) or ``ordinal`` (order of appearance).  ``axis=None`` ranks the
    flattened array (a rank-0 ``a`` gives shape ``(1,)``); otherwise each 1-D slice along
    ``axis``.  The result has the default float dtype; a slice holding NaN ranks as all
    NaN.  Raises ValueError for an unknown method and NotImplementedError for a
    ``nan_policy`` other than ``'propagate'``, as JAX."""
    if method not in _METHODS:
        raise ValueError(f"unknown method '{method}'")
    if nan_policy == "omit":
        raise NotImplementedError("Logic for `nan_policy` of omit is not implemented")
    if nan_policy != "propagate":
        raise NotImplementedError("rankdata cannot check for NaNs under jit: check whether "
                                  "they exist outside rankdata (nan_policy='propagate' only)")
    a = jnp.asarray(a)
    if axis is None:
        return _ranks_1d(a.ravel(), method)
    moved = jnp.moveaxis(a, axis, -1)
    flat = moved.reshape((-1, moved.shape[-1]))
    ranks = vmap(lambda row: _ranks_1d(row, method))(flat)
    return jnp.moveaxis(ranks.reshape(moved.shape), -1, axis)
