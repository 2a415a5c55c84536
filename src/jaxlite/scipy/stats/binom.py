"""The binomial distribution of ``n`` trials with success probability ``p``
(``jax.scipy.stats.binom``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def logpmf(k, n, p, loc=0):
    """``log C(n, y) + xlogy(y, p) + xlog1py(n - y, -p)`` with ``y = k - loc`` in [0, n + 1), -inf
    outside (as JAX) (``jax.scipy.stats.binom.logpmf``)."""
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = lax.sub(k, loc)
    one = c(y, 1)
    comb = lax.sub(lax.sub(lax.lgamma(lax.add(n, one)), lax.lgamma(lax.add(y, one))),
                   lax.lgamma(lax.add(lax.sub(n, y), one)))
    val = lax.add(comb, lax.add(special.xlogy(y, p),
                                special.xlog1py(lax.sub(n, y), lax.neg(p))))
    # as JAX: y outside [0, n] (NaN included) is -inf; a non-integer y gets the formula
    inside = lax.bitwise_and(lax.ge(y, c(y, 0)), lax.lt(y, lax.add(n, c(n, 1))))
    return where(inside, val, c(y, -np.inf))


def pmf(k, n, p, loc=0):
    """``exp(logpmf(k, n, p, loc))`` (``jax.scipy.stats.binom.pmf``)."""
    return lax.exp(logpmf(k, n, p, loc))
