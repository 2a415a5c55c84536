"""The exponential distribution (``jax.scipy.stats.expon``): rate ``1/scale``, shifted
by ``loc``."""
from __future__ import annotations

import numpy as np

from ... import lax
from ._common import c, promote, where


def _z(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return x, scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, loc=0, scale=1):
    """``-log(scale) - (x - loc)/scale`` for x >= loc, -inf below
    (``jax.scipy.stats.expon.logpdf``)."""
    x, scale, z = _z("expon.logpdf", x, loc, scale)
    return where(lax.lt(z, c(z, 0)), c(z, -np.inf), lax.neg(lax.add(z, lax.log(scale))))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.expon.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1 - exp(-z)`` (as ``-expm1(-z)``) for z >= 0, 0 below
    (``jax.scipy.stats.expon.cdf``)."""
    x, scale, z = _z("expon.cdf", x, loc, scale)
    return where(lax.lt(z, c(z, 0)), c(z, 0), lax.neg(lax.expm1(lax.neg(z))))


def logcdf(x, loc=0, scale=1):
    """``log1p(-exp(-z))`` for z >= 0 (-inf at 0 and where exp(-z) rounds to 1, as JAX),
    -inf below (``jax.scipy.stats.expon.logcdf``)."""
    x, scale, z = _z("expon.logcdf", x, loc, scale)
    return where(lax.lt(z, c(z, 0)), c(z, -np.inf), lax.log1p(lax.neg(lax.exp(lax.neg(z)))))


def sf(x, loc=0, scale=1):
    """``exp(-z)`` for z >= 0, 1 below (``jax.scipy.stats.expon.sf``)."""
    x, scale, z = _z("expon.sf", x, loc, scale)
    return where(lax.lt(z, c(z, 0)), c(z, 1), lax.exp(lax.neg(z)))


def logsf(x, loc=0, scale=1):
    """``-z`` for z >= 0, 0 below (``jax.scipy.stats.expon.logsf``)."""
    x, scale, z = _z("expon.logsf", x, loc, scale)
    return where(lax.lt(z, c(z, 0)), c(z, 0), lax.neg(z))


def ppf(q, loc=0, scale=1):
    """``loc - scale * log1p(-q)`` for q in [0, 1], NaN outside
    (``jax.scipy.stats.expon.ppf``)."""
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    ok = lax.bitwise_and(lax.ge(q, c(q, 0)), lax.le(q, c(q, 1)))
    return where(ok, lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))), c(q, np.nan))
