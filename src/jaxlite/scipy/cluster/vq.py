"""``jaxlite.scipy.cluster.vq`` (``jax.scipy.cluster.vq``): vector quantisation."""
from __future__ import annotations

from ... import numpy as jnp
from ...numpy._util import check_arraylike, ensure_array, promote_dtypes_inexact


def vq(obs, code_book, check_finite: bool = True):
    """The nearest code of ``code_book`` (``(k, d)``, or ``(k,)`` for scalars) to each
    observation of ``obs`` (``(n, d)`` or ``(n,)``) and its Euclidean distance
    (``jax.scipy.cluster.vq.vq``): ``(codes int32[n], dists[n])``, ties to the first code.
    Raises TypeError when the observations and codes have different lengths ``d``."""
    check_arraylike("vq", obs, code_book)
    o, c = (ensure_array(x) for x in promote_dtypes_inexact(obs, code_book))
    if o.ndim != c.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if o.ndim == 1:
        o, c = o[:, None], c[:, None]
    d2 = jnp.sum((o[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    code = jnp.argmin(d2, axis=1).astype(jnp.int32)
    dist = jnp.sqrt(jnp.min(d2, axis=1))
    return code, dist


__all__ = ["vq"]
