"""The Bernoulli distribution with success probability ``p``
(``jax.scipy.stats.bernoulli``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def logpmf(k, p, loc=0):
    """``xlogy(k, p) + xlog1py(1 - k, -p)`` for ``k - loc`` in [0, 1], -inf outside
    (``jax.scipy.stats.bernoulli.logpmf``)."""
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = lax.sub(k, loc)
    val = lax.add(special.xlogy(x, p), special.xlog1py(lax.sub(c(x, 1), x), lax.neg(p)))
    # only values outside [0, 1] are -inf (JAX does not ask for an integer; NaN stays)
    out = lax.bitwise_or(lax.lt(x, c(x, 0)), lax.gt(x, c(x, 1)))
    return where(out, c(x, -np.inf), val)


def pmf(k, p, loc=0):
    """``exp(logpmf(k, p, loc))`` (``jax.scipy.stats.bernoulli.pmf``)."""
    return lax.exp(logpmf(k, p, loc))


def cdf(k, p):
    """0 below 0, ``1 - p`` on [0, 1), 1 from 1; NaN for p outside [0, 1] and NaN ``k``
    (``jax.scipy.stats.bernoulli.cdf``)."""
    k, p = promote("bernoulli.cdf", k, p)
    out = where(lax.lt(k, c(k, 0)), c(k, 0),
                where(lax.lt(k, c(k, 1)), lax.sub(c(p, 1), p), c(k, 1)))
    bad = lax.bitwise_or(lax.bitwise_not(_in_unit(p)), lax.ne(k, k))
    return where(bad, c(k, np.nan), out)


def _in_unit(v):
    """0 <= v <= 1 (False for NaN)."""
    return lax.bitwise_and(lax.ge(v, c(v, 0)), lax.le(v, c(v, 1)))


def ppf(q, p):
    """The smallest k in {0, 1} with ``cdf(k) >= q``; NaN for q or p outside [0, 1]
    (``jax.scipy.stats.bernoulli.ppf``)."""
    q, p = promote("bernoulli.ppf", q, p)
    out = where(lax.le(q, lax.sub(c(p, 1), p)), c(q, 0), c(q, 1))
    ok = lax.bitwise_and(_in_unit(q), _in_unit(p))
    return where(ok, out, c(q, np.nan))
