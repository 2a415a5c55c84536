"""The von Mises distribution on the circle (``jax.scipy.stats.vonmises``)."""
from __future__ import annotations

import math

from ... import lax
from .. import special
from ._common import c, promote


def logpdf(x, kappa):
    """``kappa (cos(x) - 1) - log(2 pi i0e(kappa))``, periodic in ``x`` (no support
    cut, as JAX; NaN at +-inf) (``jax.scipy.stats.vonmises.logpdf``)."""
    x, kappa = promote("vonmises.logpdf", x, kappa)
    val = lax.sub(lax.mul(kappa, lax.sub(lax.cos(x), c(x, 1))),
                  lax.log(lax.mul(c(x, 2 * math.pi), special.i0e(kappa))))
    return val


def pdf(x, kappa):
    """``exp(logpdf(x, kappa))`` (``jax.scipy.stats.vonmises.pdf``)."""
    return lax.exp(logpdf(x, kappa))
