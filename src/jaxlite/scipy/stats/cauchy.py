"""The Cauchy distribution (``jax.scipy.stats.cauchy``)."""
from __future__ import annotations

import math

from ... import lax
from ._common import c, promote


def _z(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, loc=0, scale=1):
    """``-log(pi scale) - log1p(z**2)`` (``jax.scipy.stats.cauchy.logpdf``)."""
    scale, z = _z("cauchy.logpdf", x, loc, scale)
    return lax.neg(lax.add(lax.add(c(z, math.log(math.pi)), lax.log(scale)),
                           lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.cauchy.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1/2 + atan(z)/pi`` (``jax.scipy.stats.cauchy.cdf``)."""
    scale, z = _z("cauchy.cdf", x, loc, scale)
    return lax.add(c(z, 0.5), lax.div(lax.atan(z), c(z, math.pi)))


def logcdf(x, loc=0, scale=1):
    """``log(cdf)`` (``jax.scipy.stats.cauchy.logcdf``)."""
    return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """``cdf(-z)`` (``jax.scipy.stats.cauchy.sf``)."""
    scale, z = _z("cauchy.sf", x, loc, scale)
    return lax.add(c(z, 0.5), lax.div(lax.atan(lax.neg(z)), c(z, math.pi)))


def logsf(x, loc=0, scale=1):
    """``log(sf)`` (``jax.scipy.stats.cauchy.logsf``)."""
    return lax.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """``loc + scale * tan(pi q - pi/2)`` (``jax.scipy.stats.cauchy.ppf``)."""
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    t = lax.tan(lax.sub(lax.mul(c(q, math.pi), q), c(q, math.pi / 2)))
    return lax.add(lax.mul(t, scale), loc)


def isf(q, loc=0, scale=1):
    """``loc + scale * tan(pi/2 - pi q)`` (``jax.scipy.stats.cauchy.isf``)."""
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    t = lax.tan(lax.sub(c(q, math.pi / 2), lax.mul(c(q, math.pi), q)))
    return lax.add(lax.mul(t, scale), loc)
