"""The left-skewed Gumbel distribution (``jax.scipy.stats.gumbel_l``)."""
from __future__ import annotations

from ... import lax
import numpy as np

from ._common import c, promote, where


def _z(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, loc=0, scale=1):
    """``z - exp(z) - log(scale)`` (``jax.scipy.stats.gumbel_l.logpdf``)."""
    scale, z = _z("gumbel_l.logpdf", x, loc, scale)
    return lax.sub(lax.sub(z, lax.exp(z)), lax.log(scale))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.gumbel_l.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """``-exp(z)`` (``jax.scipy.stats.gumbel_l.logsf``)."""
    scale, z = _z("gumbel_l.logsf", x, loc, scale)
    return lax.neg(lax.exp(z))


def sf(x, loc=0, scale=1):
    """``exp(-exp(z))`` (``jax.scipy.stats.gumbel_l.sf``)."""
    return lax.exp(logsf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``-expm1(-exp(z))`` (``jax.scipy.stats.gumbel_l.cdf``)."""
    return lax.neg(lax.expm1(logsf(x, loc, scale)))


def logcdf(x, loc=0, scale=1):
    """``log(cdf)`` (``jax.scipy.stats.gumbel_l.logcdf``)."""
    return lax.log(cdf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """``loc + scale log(-log1p(-q))`` (``jax.scipy.stats.gumbel_l.ppf``)."""
    q, loc, scale = promote("gumbel_l.ppf", q, loc, scale)
    val = lax.add(loc, lax.mul(scale, lax.log(lax.neg(lax.log1p(lax.neg(q))))))
    # NaN unless 0 < q < 1 (also at the ends, as JAX)
    return where(lax.bitwise_and(lax.gt(q, c(q, 0)), lax.lt(q, c(q, 1))), val, c(q, np.nan))
