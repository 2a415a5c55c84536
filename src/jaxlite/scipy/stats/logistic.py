"""The logistic distribution (``jax.scipy.stats.logistic``)."""
from __future__ import annotations

from ... import lax
from .. import special
from ._common import c, promote


def _z(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return scale, lax.div(lax.sub(x, loc), scale)


def logpdf(x, loc=0, scale=1):
    """``-|z| - 2 log1p(exp(-|z|)) - log(scale)``, symmetric so neither tail overflows
    (``jax.scipy.stats.logistic.logpdf``)."""
    scale, z = _z("logistic.logpdf", x, loc, scale)
    az = lax.abs(z)
    return lax.sub(lax.sub(lax.neg(az), lax.mul(c(z, 2), lax.log1p(lax.exp(lax.neg(az))))),
                   lax.log(scale))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.logistic.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``expit(z)`` (``jax.scipy.stats.logistic.cdf``)."""
    return special.expit(_z("logistic.cdf", x, loc, scale)[1])


def sf(x, loc=0, scale=1):
    """``expit(-z)`` (``jax.scipy.stats.logistic.sf``)."""
    return special.expit(lax.neg(_z("logistic.sf", x, loc, scale)[1]))


def ppf(x, loc=0, scale=1):
    """``loc + scale * logit(q)`` (``jax.scipy.stats.logistic.ppf``)."""
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return lax.add(lax.mul(special.logit(x), scale), loc)


def isf(x, loc=0, scale=1):
    """``loc - scale * logit(q)`` (``jax.scipy.stats.logistic.isf``)."""
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return lax.sub(loc, lax.mul(special.logit(x), scale))
