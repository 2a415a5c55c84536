"""The gamma distribution of shape ``a`` (``jax.scipy.stats.gamma``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def _y(name, x, a, loc, scale):
    x, a, loc, scale = promote(name, x, a, loc, scale)
    return a, scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, a, loc=0, scale=1):
    """``xlogy(a - 1, y) - y - gammaln(a) - log(scale)`` with ``y = (x - loc)/scale``;
    -inf for y < 0 (``jax.scipy.stats.gamma.logpdf``)."""
    a, scale, y = _y("gamma.logpdf", x, a, loc, scale)
    val = lax.sub(lax.sub(lax.sub(special.xlogy(lax.sub(a, c(a, 1)), y), y), lax.lgamma(a)),
                  lax.log(scale))
    return where(lax.ge(y, c(y, 0)), val, c(y, -np.inf))     # NaN x gives -inf, as JAX


def pdf(x, a, loc=0, scale=1):
    """``exp(logpdf(x, a, loc, scale))`` (``jax.scipy.stats.gamma.pdf``)."""
    return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """``gammainc(a, max(y, 0))`` (``jax.scipy.stats.gamma.cdf``)."""
    a, scale, y = _y("gamma.cdf", x, a, loc, scale)
    return special.gammainc(a, lax.max(y, c(y, 0)))


def logcdf(x, a, loc=0, scale=1):
    """``log(cdf)`` (``jax.scipy.stats.gamma.logcdf``)."""
    return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """``gammaincc(a, max(y, 0))`` (``jax.scipy.stats.gamma.sf``)."""
    a, scale, y = _y("gamma.sf", x, a, loc, scale)
    return special.gammaincc(a, lax.max(y, c(y, 0)))


def logsf(x, a, loc=0, scale=1):
    """``log(sf)`` (``jax.scipy.stats.gamma.logsf``)."""
    return lax.log(sf(x, a, loc, scale))
