"""The beta-binomial distribution (``jax.scipy.stats.betabinom``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def logpmf(k, n, a, b, loc=0):
    """``log C(n, y) + betaln(y + a, n - y + b) - betaln(a, b)`` with ``y = floor(k - loc)``
    in [0, n], -inf outside (``jax.scipy.stats.betabinom.logpmf``)."""
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = lax.floor(lax.sub(k, loc))       # JAX floors a non-integer count
    one = c(y, 1)
    comb = lax.sub(lax.sub(lax.lgamma(lax.add(n, one)), lax.lgamma(lax.add(y, one))),
                   lax.lgamma(lax.add(lax.sub(n, y), one)))
    val = lax.add(comb, lax.sub(special.betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)),
                                special.betaln(a, b)))
    outside = lax.bitwise_or(lax.lt(y, c(y, 0)), lax.gt(y, n))     # NaN stays NaN
    return where(outside, c(y, -np.inf), val)


def pmf(k, n, a, b, loc=0):
    """``exp(logpmf(k, n, a, b, loc))`` (``jax.scipy.stats.betabinom.pmf``)."""
    return lax.exp(logpmf(k, n, a, b, loc))
