"""Student's t distribution (``jax.scipy.stats.t``)."""
from __future__ import annotations

import math

from ... import lax
from ._common import c, promote


def logpdf(x, df, loc=0, scale=1):
    """``log Gamma((df+1)/2) - log Gamma(df/2) - log(pi df)/2 - log(scale)
    - (df+1)/2 log1p(z**2/df)`` (``jax.scipy.stats.t.logpdf``)."""
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    half = lax.mul(c(df, 0.5), lax.add(df, c(df, 1)))
    norm = lax.sub(lax.lgamma(half), lax.lgamma(lax.mul(c(df, 0.5), df)))
    norm = lax.sub(norm, lax.mul(c(df, 0.5), lax.log(lax.mul(c(df, math.pi), df))))
    norm = lax.sub(norm, lax.log(scale))
    return lax.sub(norm, lax.mul(half, lax.log1p(lax.div(lax.mul(z, z), df))))


def pdf(x, df, loc=0, scale=1):
    """``exp(logpdf(x, df, loc, scale))`` (``jax.scipy.stats.t.pdf``)."""
    return lax.exp(logpdf(x, df, loc, scale))
