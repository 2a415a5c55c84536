"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ._common import c, promote, where


def logpdf(x, loc=0, scale=1):
    """``-log(scale)`` inside ``[loc, loc + scale]``, -inf outside
    (``jax.scipy.stats.uniform.logpdf``)."""
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    # a NaN x is not outside: -log(scale), as JAX
    outside = lax.bitwise_or(lax.lt(x, loc), lax.gt(x, lax.add(loc, scale)))
    return where(outside, c(x, -np.inf), lax.neg(lax.log(scale)))


def pdf(x, loc=0, scale=1):
    """``exp(logpdf(x, loc, scale))`` (``jax.scipy.stats.uniform.pdf``)."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``(x - loc) / scale`` clipped to [0, 1] (``jax.scipy.stats.uniform.cdf``)."""
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    x = lax.convert_element_type(x, jnp.result_type(x))     # strongly typed, as JAX's
    z = lax.div(lax.sub(x, loc), scale)
    # a NaN x gives 0, as JAX
    return where(lax.ge(x, loc), where(lax.gt(z, c(z, 1)), c(x, 1), z), c(x, 0))


def ppf(q, loc=0, scale=1):
    """``loc + q * scale`` for q in [0, 1], NaN outside (``jax.scipy.stats.uniform.ppf``)."""
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    ok = lax.bitwise_and(lax.ge(q, c(q, 0)), lax.le(q, c(q, 1)))
    return where(ok, lax.add(loc, lax.mul(q, scale)), c(q, np.nan))
