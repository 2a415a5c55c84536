"""The chi-squared distribution with ``df`` degrees of freedom (``jax.scipy.stats.chi2``):
the gamma distribution of shape ``df/2`` and scale 2."""
from __future__ import annotations

from ... import lax
from ... import numpy as jnp
from . import gamma as _gamma
from ._common import c, promote


def _args(name, x, df, loc, scale):
    x, df, loc, scale = promote(name, x, df, loc, scale)
    return x, lax.mul(c(df, 0.5), df), loc, lax.mul(c(scale, 2), scale)


def logpdf(x, df, loc=0, scale=1):
    """``gamma.logpdf(x, df/2, loc, 2 scale)``, NaN for a NaN ``x`` (where JAX's gamma
    gives -inf) (``jax.scipy.stats.chi2.logpdf``)."""
    x, a, loc, scale = _args("chi2.logpdf", x, df, loc, scale)
    out = _gamma.logpdf(x, a, loc, scale)
    return jnp.where(lax.ne(x, x), x, out)


def pdf(x, df, loc=0, scale=1):
    """``exp(logpdf(x, df, loc, scale))`` (``jax.scipy.stats.chi2.pdf``)."""
    return lax.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """``gammainc(df/2, (x - loc)/(2 scale))`` (``jax.scipy.stats.chi2.cdf``)."""
    return _gamma.cdf(*_args("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """``log(cdf)`` (``jax.scipy.stats.chi2.logcdf``)."""
    return _gamma.logcdf(*_args("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """``gammaincc(df/2, (x - loc)/(2 scale))`` (``jax.scipy.stats.chi2.sf``)."""
    return _gamma.sf(*_args("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """``log(sf)`` (``jax.scipy.stats.chi2.logsf``)."""
    return _gamma.logsf(*_args("chi2.logsf", x, df, loc, scale))
