"""The normal distribution (``jax.scipy.stats.norm``): ``loc`` the mean, ``scale`` the
standard deviation."""
from __future__ import annotations

import math

from ... import lax
from .. import special
from ._common import c, promote


def logpdf(x, loc=0, scale=1):
    """``log N(x; loc, scale**2)`` elementwise; arguments promote to one inexact dtype and
    broadcast (``jax.scipy.stats.norm.logpdf``)."""
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    log_norm = lax.add(lax.log(scale), c(x, 0.5 * math.log(2 * math.pi)))
    return lax.neg(lax.add(log_norm, lax.mul(c(x, 0.5), lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.norm.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def _z(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return lax.div(lax.sub(x, loc), scale)


def cdf(x, loc=0, scale=1):
    """``ndtr((x - loc) / scale)`` (``jax.scipy.stats.norm.cdf``)."""
    return special.ndtr(_z("norm.cdf", x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """``log_ndtr((x - loc) / scale)``, accurate in the left tail
    (``jax.scipy.stats.norm.logcdf``)."""
    return special.log_ndtr(_z("norm.logcdf", x, loc, scale))


def sf(x, loc=0, scale=1):
    """The survival function ``1 - cdf`` as ``ndtr(-z)``, accurate in the right tail
    (``jax.scipy.stats.norm.sf``)."""
    return special.ndtr(lax.neg(_z("norm.sf", x, loc, scale)))


def logsf(x, loc=0, scale=1):
    """``log_ndtr(-z)`` (``jax.scipy.stats.norm.logsf``)."""
    return special.log_ndtr(lax.neg(_z("norm.logsf", x, loc, scale)))


def ppf(q, loc=0, scale=1):
    """The quantile ``loc + scale * ndtri(q)``: NaN outside [0, 1]
    (``jax.scipy.stats.norm.ppf``)."""
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return lax.add(lax.mul(special.ndtri(q), scale), loc)


def isf(q, loc=0, scale=1):
    """The inverse survival function ``ppf(1 - q)`` (``jax.scipy.stats.norm.isf``)."""
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return ppf(lax.sub(c(q, 1), q), loc, scale)
