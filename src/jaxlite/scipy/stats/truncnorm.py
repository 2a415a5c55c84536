"""The normal distribution truncated to ``[a, b]`` (in standard units: the support is
``[loc + a scale, loc + b scale]``) (``jax.scipy.stats.truncnorm``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special
from . import norm
from ._common import c, promote, where


def _log_diff_exp(p, q):
    """``log(exp(p) - exp(q))`` for p >= q."""
    return lax.add(p, lax.log1p(lax.neg(lax.exp(lax.sub(q, p)))))


def _log_mass(lo, hi):
    """``log(ndtr(hi) - ndtr(lo))`` for lo <= hi, from whichever tail keeps the digits:
    both below 0 (left tail), both above 0 (mirrored), else around the middle."""
    left = _log_diff_exp(special.log_ndtr(hi), special.log_ndtr(lo))
    right = _log_diff_exp(special.log_ndtr(lax.neg(lo)), special.log_ndtr(lax.neg(hi)))
    mid = lax.log1p(lax.neg(lax.add(special.ndtr(lo), special.ndtr(lax.neg(hi)))))
    return where(lax.le(hi, c(hi, 0)), left, where(lax.gt(lo, c(lo, 0)), right, mid))


def _args(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return jnp.asarray(lax.div(lax.sub(x, loc), scale)), a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    """``norm.logpdf(z) - log(scale) - log(ndtr(b) - ndtr(a))`` inside ``[a, b]``, -inf
    outside (``jax.scipy.stats.truncnorm.logpdf``)."""
    z, a, b, scale = _args("truncnorm.logpdf", x, a, b, loc, scale)
    val = lax.sub(lax.sub(norm.logpdf(z), lax.log(scale)), _log_mass(a, b))
    outside = lax.bitwise_or(lax.lt(z, a), lax.gt(z, b))     # NaN stays NaN
    return where(outside, c(z, -np.inf), val)


def pdf(x, a, b, loc=0, scale=1):
    """``exp(logpdf(x, a, b, loc, scale))`` (``jax.scipy.stats.truncnorm.pdf``)."""
    return lax.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """``log(ndtr(z) - ndtr(a)) - log(ndtr(b) - ndtr(a))``: -inf below ``a``, 0 above
    ``b`` (``jax.scipy.stats.truncnorm.logcdf``)."""
    z, a, b, scale = _args("truncnorm.logcdf", x, a, b, loc, scale)
    zc = jnp.clip(z, a, b)
    val = lax.sub(_log_mass(a, zc), _log_mass(a, b))
    # a NaN x gives 0, as JAX
    return where(lax.lt(z, a), c(z, -np.inf), where(lax.le(z, b), val, c(z, 0)))


def cdf(x, a, b, loc=0, scale=1):
    """``exp(logcdf(x, a, b, loc, scale))`` (``jax.scipy.stats.truncnorm.cdf``)."""
    return lax.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """``log(ndtr(b) - ndtr(z)) - log(ndtr(b) - ndtr(a))``: 0 below ``a``, -inf above
    ``b`` (``jax.scipy.stats.truncnorm.logsf``)."""
    z, a, b, scale = _args("truncnorm.logsf", x, a, b, loc, scale)
    zc = jnp.clip(z, a, b)
    val = lax.sub(_log_mass(zc, b), _log_mass(a, b))
    # a NaN x gives 0, as JAX
    return where(lax.gt(z, b), c(z, -np.inf), where(lax.ge(z, a), val, c(z, 0)))


def sf(x, a, b, loc=0, scale=1):
    """``exp(logsf(x, a, b, loc, scale))`` (``jax.scipy.stats.truncnorm.sf``)."""
    return lax.exp(logsf(x, a, b, loc, scale))
