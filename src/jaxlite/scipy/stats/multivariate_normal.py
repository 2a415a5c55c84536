"""The multivariate normal distribution (``jax.scipy.stats.multivariate_normal``)."""
from __future__ import annotations

import math

import numpy as np

from ... import lax
from ... import numpy as jnp
from ._common import c, promote_only


def logpdf(x, mean, cov, allow_singular=None):
    """``log N(x; mean, cov)`` over the last axis of ``x`` (shape ``(..., n)``), with
    ``mean`` of shape ``(n,)`` or batched ``(..., n)`` and ``cov`` a scalar (``cov * I``)
    or ``(..., n, n)`` positive definite (through its Cholesky factor); a rank-0 ``mean``
    makes the distribution univariate, elementwise in ``x``
    (``jax.scipy.stats.multivariate_normal.logpdf``).

    Raises NotImplementedError for ``allow_singular`` other than None and ValueError for a
    ``cov`` whose last two dimensions are not ``(n, n)``, as JAX.
    """
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_only("multivariate_normal.logpdf", x, mean, cov)
    x, mean, cov = jnp.asarray(x), jnp.asarray(mean), jnp.asarray(cov)
    log2pi = math.log(2 * math.pi)
    if mean.ndim == 0:
        y = lax.sub(x, mean)
        return lax.sub(lax.mul(c(x, -0.5), lax.div(lax.mul(y, y), cov)),
                       lax.mul(c(x, 0.5), lax.add(c(x, log2pi), lax.log(cov))))
    n = mean.shape[-1]
    y = x - mean
    if cov.ndim == 0:
        quad = jnp.sum(y * y, axis=-1) / cov
        return -0.5 * quad - n / 2 * (log2pi + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean "
                         f"{mean.shape} and cov {cov.shape} (cov must end in ({n}, {n}))")
    chol = jnp.linalg.cholesky(cov)
    batch = np.broadcast_shapes(y.shape[:-1], chol.shape[:-2])
    y = jnp.broadcast_to(y, batch + (n,))
    chol = jnp.broadcast_to(chol, batch + (n, n))
    z = lax.linalg.triangular_solve(chol, y[..., None], left_side=True, lower=True)[..., 0]
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(z * z, axis=-1) - log_det - n / 2 * log2pi


def pdf(x, mean, cov):
    """``exp(logpdf(x, mean, cov))`` (``jax.scipy.stats.multivariate_normal.pdf``)."""
    return lax.exp(logpdf(x, mean, cov))
