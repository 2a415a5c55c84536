"""The right-skewed Gumbel distribution (``jax.scipy.stats.gumbel_r``)."""
from __future__ import annotations

from ... import lax
import numpy as np

from ._common import c, promote, where


def _z(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, loc=0, scale=1):
    """``-z - exp(-z) - log(scale)`` (``jax.scipy.stats.gumbel_r.logpdf``)."""
    scale, z = _z("gumbel_r.logpdf", x, loc, scale)
    return lax.sub(lax.sub(lax.neg(z), lax.exp(lax.neg(z))), lax.log(scale))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.gumbel_r.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``-exp(-z)`` (``jax.scipy.stats.gumbel_r.logcdf``)."""
    scale, z = _z("gumbel_r.logcdf", x, loc, scale)
    return lax.neg(lax.exp(lax.neg(z)))


def cdf(x, loc=0, scale=1):
    """``exp(-exp(-z))`` (``jax.scipy.stats.gumbel_r.cdf``)."""
    return lax.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """``1 - cdf`` as ``-expm1(-exp(-z))`` (``jax.scipy.stats.gumbel_r.sf``)."""
    return lax.neg(lax.expm1(logcdf(x, loc, scale)))


def logsf(x, loc=0, scale=1):
    """``log(sf)`` (``jax.scipy.stats.gumbel_r.logsf``)."""
    return lax.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """``loc - scale log(-log(q))`` (``jax.scipy.stats.gumbel_r.ppf``)."""
    q, loc, scale = promote("gumbel_r.ppf", q, loc, scale)
    val = lax.sub(loc, lax.mul(scale, lax.log(lax.neg(lax.log(q)))))
    # NaN unless 0 < q < 1 (also at the ends, as JAX)
    return where(lax.bitwise_and(lax.gt(q, c(q, 0)), lax.lt(q, c(q, 1))), val, c(q, np.nan))
