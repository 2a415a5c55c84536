"""Collectives over a named vmap axis (``jax.lax.psum`` & co.)."""
from __future__ import annotations

import numpy as np

from ..core import batching
from ..core.trace import get_aval
from ..primitives import collectives as _col
from ..tree_util import tree_map


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _axis_size(names) -> int:
    n = 1
    for name in names:
        n *= batching.find_axis(name).payload.size
    return n


def _check(names):
    for name in names:
        batching.find_axis(name)      # NameError for an unbound name, as JAX


def psum(x, axis_name):
    """Sum of ``x`` over every example of the vmap(s) named ``axis_name`` (a name or a
    tuple of names), the same for each example (``jax.lax.psum``); ``x`` may be a pytree.
    Raises NameError when no enclosing vmap has that name."""
    names = _names(axis_name)
    _check(names)
    return tree_map(lambda v: _col.bind_collective(_col.psum_p, v, names), x)


def pmean(x, axis_name):
    """Mean over the named axis (``jax.lax.pmean``)."""
    names = _names(axis_name)
    n = _axis_size(names)

    def mean(v):
        s = _col.bind_collective(_col.psum_p, v, names)
        dt = get_aval(s).dtype
        if dt.kind in "iub":
            from .. import numpy as jnp
            return jnp.true_divide(s, n)
        from ..primitives.elementwise import div_p
        return div_p.bind(s, np.array(n, dt))
    return tree_map(mean, x)


def pmax(x, axis_name):
    """Maximum over the named axis (``jax.lax.pmax``)."""
    names = _names(axis_name)
    _check(names)
    return tree_map(lambda v: _col.bind_collective(_col.pmax_p, v, names), x)


def pmin(x, axis_name):
    """Minimum over the named axis (``jax.lax.pmin``)."""
    names = _names(axis_name)
    _check(names)
    return tree_map(lambda v: _col.bind_collective(_col.pmin_p, v, names), x)


def axis_index(axis_name):
    """This example's int32 position along the vmap named ``axis_name``
    (``jax.lax.axis_index``).  Raises NameError when no enclosing vmap has that name."""
    main = batching.find_axis(axis_name)
    trace = batching.BatchTrace(main)
    return batching.BatchTracer(trace, np.arange(main.payload.size, dtype=np.int32), 0)


__all__ = ["psum", "pmean", "pmax", "pmin", "axis_index"]
