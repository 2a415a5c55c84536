"""The Pareto distribution of shape ``b`` (``jax.scipy.stats.pareto``): support
``x >= loc + scale``."""
from __future__ import annotations

import numpy as np

from ... import lax
from ._common import c, promote, where


def _z(name, x, b, loc, scale):
    x, b, loc, scale = promote(name, x, b, loc, scale)
    return b, scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, b, loc=0, scale=1):
    """``log(b) - log(scale) - (b + 1) log(z)`` for z >= 1, -inf below
    (``jax.scipy.stats.pareto.logpdf``)."""
    b, scale, z = _z("pareto.logpdf", x, b, loc, scale)
    val = lax.sub(lax.sub(lax.log(b), lax.log(scale)),
                  lax.mul(lax.add(b, c(b, 1)), lax.log(z)))
    return where(lax.lt(z, c(z, 1)), c(z, -np.inf), val)


def pdf(x, b, loc=0, scale=1):
    """``exp(logpdf(x, b, loc, scale))`` (``jax.scipy.stats.pareto.pdf``)."""
    return lax.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    """``-b log(z)`` for z >= 1, 0 below (``jax.scipy.stats.pareto.logsf``)."""
    b, scale, z = _z("pareto.logsf", x, b, loc, scale)
    return where(lax.lt(z, c(z, 1)), c(z, 0), lax.neg(lax.mul(b, lax.log(z))))


def sf(x, b, loc=0, scale=1):
    """``z**-b`` for z >= 1, 1 below (``jax.scipy.stats.pareto.sf``)."""
    return lax.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """``1 - z**-b`` for z >= 1, 0 below (``jax.scipy.stats.pareto.cdf``)."""
    return lax.neg(lax.expm1(logsf(x, b, loc, scale)))


def logcdf(x, b, loc=0, scale=1):
    """``log1p(-z**-b)`` (``jax.scipy.stats.pareto.logcdf``)."""
    return lax.log1p(lax.neg(sf(x, b, loc, scale)))


def ppf(q, b, loc=0, scale=1):
    """``loc + scale (1 - q)**(-1/b)`` for q in [0, 1], NaN outside
    (``jax.scipy.stats.pareto.ppf``)."""
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    val = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(c(q, 1), q), lax.div(c(b, -1), b))))
    ok = lax.bitwise_and(lax.ge(q, c(q, 0)), lax.le(q, c(q, 1)))
    return where(ok, val, c(q, np.nan))
