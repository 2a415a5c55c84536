"""``jax.scipy.stats.sem``: the standard error of the mean."""
from __future__ import annotations

from ... import numpy as jnp
from ._common import promote


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean, ``std(a, ddof) / sqrt(n)`` along ``axis`` (all
    elements for None) (``jax.scipy.stats.sem``).  ``nan_policy='omit'`` skips NaNs (``n``
    counts the others); ``'propagate'`` lets them through.  Integers promote to the default
    float dtype.  Raises ValueError for another ``nan_policy``."""
    if nan_policy not in ("propagate", "omit"):
        raise ValueError(f"nan_policy {nan_policy!r} is not supported (use 'propagate' or "
                         f"'omit')")
    (a,) = promote("sem", a)
    a = jnp.asarray(a)
    if nan_policy == "omit":
        n = jnp.sum(~jnp.isnan(a), axis=axis, keepdims=keepdims).astype(a.dtype)
        return jnp.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n)
    n = a.size if axis is None else a.shape[axis]
    return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(
        jnp.asarray(n, a.dtype))
