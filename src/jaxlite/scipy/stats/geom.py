"""The geometric distribution on {1, 2, ...} with success probability ``p``
(``jax.scipy.stats.geom``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from .. import special
from ._common import c, promote, where


def logpmf(k, p, loc=0):
    """``xlog1py(y - 1, -p) + log(p)`` with ``y = k - loc`` >= 1, -inf below
    (``jax.scipy.stats.geom.logpmf``)."""
    k, p, loc = promote("geom.logpmf", k, p, loc)
    y = lax.sub(k, loc)
    val = lax.add(special.xlog1py(lax.sub(y, c(y, 1)), lax.neg(p)), lax.log(p))
    return where(lax.le(y, c(y, 0)), c(y, -np.inf), val)


def pmf(k, p, loc=0):
    """``exp(logpmf(k, p, loc))`` (``jax.scipy.stats.geom.pmf``)."""
    return lax.exp(logpmf(k, p, loc))
