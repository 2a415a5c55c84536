"""The negative binomial distribution (``jax.scipy.stats.nbinom``): failures before the
``n``-th success with success probability ``p``."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def logpmf(k, n, p, loc=0):
    """``gammaln(n+y) - gammaln(y+1) - gammaln(n) + n log(p) + xlog1py(y, -p)`` with
    ``y = k - loc``; -inf for y < 0 (``jax.scipy.stats.nbinom.logpmf``)."""
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = lax.sub(k, loc)
    comb = lax.sub(lax.sub(lax.lgamma(lax.add(n, y)), lax.lgamma(lax.add(y, c(y, 1)))),
                   lax.lgamma(n))
    val = lax.add(comb, lax.add(special.xlogy(n, p), special.xlog1py(y, lax.neg(p))))
    return where(lax.lt(y, c(y, 0)), c(y, -np.inf), val)


def pmf(k, n, p, loc=0):
    """``exp(logpmf(k, n, p, loc))`` (``jax.scipy.stats.nbinom.pmf``)."""
    return lax.exp(logpmf(k, n, p, loc))
