"""The Poisson distribution with mean ``mu`` (``jax.scipy.stats.poisson``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def logpmf(k, mu, loc=0):
    """``xlogy(y, mu) - gammaln(y + 1) - mu`` with ``y = k - loc`` a non-negative
    integer, -inf elsewhere (``jax.scipy.stats.poisson.logpmf``)."""
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    y = lax.sub(k, loc)
    val = lax.sub(lax.sub(special.xlogy(y, mu), lax.lgamma(lax.add(y, c(y, 1)))), mu)
    ok = lax.bitwise_and(lax.ge(y, c(y, 0)), lax.eq(y, lax.floor(y)))
    return where(ok, val, c(y, -np.inf))


def pmf(k, mu, loc=0):
    """``exp(logpmf(k, mu, loc))`` (``jax.scipy.stats.poisson.pmf``)."""
    return lax.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """``gammaincc(floor(y) + 1, mu)`` for y = k - loc >= 0, 0 below
    (``jax.scipy.stats.poisson.cdf``)."""
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    y = lax.sub(k, loc)
    p = special.gammaincc(lax.add(lax.floor(y), c(y, 1)), mu)
    return where(lax.lt(y, c(y, 0)), c(y, 0), p)
