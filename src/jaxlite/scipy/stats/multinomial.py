"""The multinomial distribution (``jax.scipy.stats.multinomial``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special
from ._common import promote


def logpmf(x, n, p):
    """``gammaln(n+1) + sum(xlogy(x, p) - gammaln(x+1))`` over the last axis of integer
    counts ``x``, for integer ``n``; -inf unless the counts of the whole ``x`` (all its
    rows together, as JAX) sum to ``n`` (``jax.scipy.stats.multinomial.logpmf``).  Raises ValueError for non-integer
    ``x`` or ``n``, as JAX."""
    dx, dn = jnp.result_type(x), jnp.result_type(n)
    if not (jnp.issubdtype(dx, jnp.integer) and jnp.issubdtype(dn, jnp.integer)):
        raise ValueError(f"x and n must be of integer type; got x.dtype={np.dtype(dx).name},"
                         f" n.dtype={np.dtype(dn).name}")
    (p,) = promote("multinomial.logpmf", p)
    p = jnp.asarray(p)
    xf = jnp.asarray(x).astype(p.dtype)
    nf = jnp.asarray(n).astype(p.dtype)
    val = special.gammaln(nf + 1) + jnp.sum(special.xlogy(xf, p) - special.gammaln(xf + 1),
                                            axis=-1)
    return jnp.where(jnp.sum(x) == n, val, np.array(-np.inf, p.dtype))


def pmf(x, n, p):
    """``exp(logpmf(x, n, p))`` (``jax.scipy.stats.multinomial.pmf``)."""
    return lax.exp(logpmf(x, n, p))
