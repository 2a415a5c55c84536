"""The beta distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.beta``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def _y(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return a, b, scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, a, b, loc=0, scale=1):
    """``xlogy(a-1, y) + xlog1py(b-1, -y) - betaln(a, b) - log(scale)`` for y in [0, 1],
    -inf outside (``jax.scipy.stats.beta.logpdf``)."""
    a, b, scale, y = _y("beta.logpdf", x, a, b, loc, scale)
    val = lax.add(special.xlogy(lax.sub(a, c(a, 1)), y),
                  special.xlog1py(lax.sub(b, c(b, 1)), lax.neg(y)))
    val = lax.sub(lax.sub(val, special.betaln(a, b)), lax.log(scale))
    outside = lax.bitwise_or(lax.lt(y, c(y, 0)), lax.gt(y, c(y, 1)))   # NaN stays NaN
    return where(outside, c(y, -np.inf), val)


def pdf(x, a, b, loc=0, scale=1):
    """``exp(logpdf(x, a, b, loc, scale))`` (``jax.scipy.stats.beta.pdf``)."""
    return lax.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """``betainc(a, b, y)`` with ``y`` clipped to [0, 1] (``jax.scipy.stats.beta.cdf``)."""
    a, b, scale, y = _y("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, lax.clamp(c(y, 0), y, c(y, 1)))


def logcdf(x, a, b, loc=0, scale=1):
    """``log(cdf)`` (``jax.scipy.stats.beta.logcdf``)."""
    return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """``betainc(b, a, 1 - y)`` with ``y`` clipped to [0, 1]
    (``jax.scipy.stats.beta.sf``)."""
    a, b, scale, y = _y("beta.sf", x, a, b, loc, scale)
    y = lax.clamp(c(y, 0), y, c(y, 1))
    return special.betainc(b, a, lax.sub(c(y, 1), y))


def logsf(x, a, b, loc=0, scale=1):
    """``log(sf)`` (``jax.scipy.stats.beta.logsf``)."""
    return lax.log(sf(x, a, b, loc, scale))
