"""The Laplace distribution (``jax.scipy.stats.laplace``)."""
from __future__ import annotations

import math

from ... import lax
from ._common import c, promote, where


def logpdf(x, loc=0, scale=1):
    """``-log(2 scale) - |x - loc| / scale`` (``jax.scipy.stats.laplace.logpdf``)."""
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    z = lax.div(lax.abs(lax.sub(x, loc)), scale)
    return lax.neg(lax.add(lax.add(c(x, math.log(2)), lax.log(scale)), z))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.laplace.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``exp(z)/2`` below ``loc``, ``1 - exp(-z)/2`` above
    (``jax.scipy.stats.laplace.cdf``)."""
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    lo = lax.mul(c(z, 0.5), lax.exp(z))
    hi = lax.sub(c(z, 1), lax.mul(c(z, 0.5), lax.exp(lax.neg(z))))
    return where(lax.le(z, c(z, 0)), lo, hi)
