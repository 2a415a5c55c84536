"""The Dirichlet distribution with concentrations ``alpha`` (``jax.scipy.stats.dirichlet``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special
from ._common import promote


def logpdf(x, alpha):
    """``sum_i (alpha_i - 1) log x_i + gammaln(sum alpha) - sum gammaln(alpha)`` over axis 0
    of ``x`` (shape ``(K, ...)``, or ``(K - 1, ...)`` with the last coordinate implied);
    -inf off the open simplex (a zero coordinate included, as JAX)
    (``jax.scipy.stats.dirichlet.logpdf``).

    Raises ValueError when ``alpha`` is not one-dimensional or ``x``'s first dimension is
    neither K nor K - 1, as JAX.
    """
    x, alpha = jnp.asarray(x), jnp.asarray(alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"`x` must have either the same number of entries as `alpha` or "
                         f"one entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    (x,) = promote("dirichlet.logpdf", x)
    (alpha,) = promote("dirichlet.logpdf", alpha)
    dt = jnp.result_type(x, alpha)
    x, alpha = jnp.asarray(x, dt), jnp.asarray(alpha, dt)
    if x.shape[0] == k - 1:
        x = jnp.concatenate([x, (1 - jnp.sum(x, axis=0))[None]], axis=0)
    a = alpha.reshape((k,) + (1,) * (x.ndim - 1))
    norm = special.gammaln(jnp.sum(alpha)) - jnp.sum(special.gammaln(alpha))
    val = jnp.sum(special.xlogy(a - 1, x), axis=0) + norm
    on_simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return jnp.where(on_simplex, val, np.array(-np.inf, dt))


def pdf(x, alpha):
    """``exp(logpdf(x, alpha))`` (``jax.scipy.stats.dirichlet.pdf``)."""
    return lax.exp(logpdf(x, alpha))
