"""The wrapped Cauchy distribution on ``[0, 2 pi]`` (``jax.scipy.stats.wrapcauchy``)."""
from __future__ import annotations

import math

import numpy as np

from ... import lax
from ._common import c as _k, promote, where


def logpdf(x, c):
    """``log((1 - c**2) / (2 pi (1 + c**2 - 2 c cos x)))`` for x in [0, 2 pi] and
    0 < c < 1, -inf / NaN outside (``jax.scipy.stats.wrapcauchy.logpdf``)."""
    x, cc = promote("wrapcauchy.logpdf", x, c)
    num = lax.sub(_k(cc, 1), lax.mul(cc, cc))
    den = lax.mul(_k(x, 2 * math.pi), lax.sub(lax.add(_k(cc, 1), lax.mul(cc, cc)),
                                             lax.mul(lax.mul(_k(cc, 2), cc), lax.cos(x))))
    val = lax.log(lax.div(num, den))
    inside = lax.bitwise_and(lax.ge(x, _k(x, 0)), lax.le(x, _k(x, 2 * math.pi)))
    ok_c = lax.bitwise_and(lax.gt(cc, _k(cc, 0)), lax.lt(cc, _k(cc, 1)))
    return where(ok_c, where(inside, val, _k(x, -np.inf)), _k(x, np.nan))


def pdf(x, c):
    """``exp(logpdf(x, c))`` (``jax.scipy.stats.wrapcauchy.pdf``)."""
    return lax.exp(logpdf(x, c))
