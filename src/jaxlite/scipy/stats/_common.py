"""Helpers shared by the distributions: promotion of the arguments, typed constants and
``where`` (layer: public API, compositions only)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..special import _inexact, _like  # noqa: F401  (re-exported for the distributions)


def promote(name, *args):
    """``args`` promoted to one inexact dtype (JAX's ``promote_args_inexact``) and
    broadcast."""
    return _inexact(name, *args)


def promote_only(name, *args):
    """``args`` promoted to one inexact dtype, not broadcast (for the distributions whose
    operands have different ranks)."""
    from ...numpy._ufuncs import _promote
    return _promote(name, list(args), "inexact")[0]


def where(c, x, y):
    return jnp.where(c, x, y)


def c(x, v):
    """The constant ``v`` in ``x``'s dtype and weak type."""
    return _like(x, v)


def log_or_neg_inf(ok, val, ref):
    """``val`` where ``ok``, -inf elsewhere."""
    return where(ok, val, c(ref, -np.inf))


def is_integer(k):
    return lax.eq(k, lax.floor(k))
