"""The generalized normal distribution of shape ``beta``
(``jax.scipy.stats.gennorm``)."""
from __future__ import annotations

import math

from ... import lax
from .. import special
from ._common import c, promote


def logpdf(x, beta):
    """``log(beta) - log(2) - gammaln(1/beta) - |x|**beta``
    (``jax.scipy.stats.gennorm.logpdf``)."""
    x, beta = promote("gennorm.logpdf", x, beta)
    norm = lax.sub(lax.sub(lax.log(beta), c(beta, math.log(2))),
                   lax.lgamma(lax.div(c(beta, 1), beta)))
    return lax.sub(norm, lax.pow(lax.abs(x), beta))


def pdf(x, beta):
    """``exp(logpdf(x, beta))`` (``jax.scipy.stats.gennorm.pdf``)."""
    return lax.exp(logpdf(x, beta))


def cdf(x, beta):
    """``1/2 + sign(x) gammainc(1/beta, |x|**beta) / 2``
    (``jax.scipy.stats.gennorm.cdf``)."""
    x, beta = promote("gennorm.cdf", x, beta)
    g = special.gammainc(lax.div(c(beta, 1), beta), lax.pow(lax.abs(x), beta))
    return lax.add(c(x, 0.5), lax.mul(lax.mul(c(x, 0.5), lax.sign(x)), g))
