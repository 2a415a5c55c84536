"""JL003 fixed: static arguments, shape tests, and lax control flow."""
from functools import partial

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax


@jax.jit
def relu(x):
    return lax.cond(jnp.sum(x) > 0, lambda v: v, lambda v: 0.0 * v, x)


@jax.jit
def halve_until_small(x):
    return lax.while_loop(lambda v: v > 1.0, lambda v: v / 2, x)


@partial(jax.jit, static_argnums=(0, 2))
def repeat_add(n, x, k):
    for i in range(k):
        x = x + n
    return x


@partial(jax.jit, static_argnames="mode")
def reduce(x, mode):
    if mode == "sum":
        return jnp.sum(x)
    return jnp.mean(x)


@jax.jit
def by_shape(x, mask=None):
    n = x.shape[0]
    if mask is not None:
        x = x * mask
    if x.ndim == 2 and len(x) > 3 and x.dtype == jnp.float32:
        x = x.T
    for i in range(n):
        x = x + i
    if jnp.shape(x)[0] > 2 and isinstance(x, jax.Array):
        x = x * 2
    return x


@jax.jit
def with_default(x, training=True):
    if training:  # not passed: the default stays a Python bool
        return x * 0.5
    return x


@jax.jit
def tree_keys(params):
    out = {}
    for name, leaf in params.items():
        if name.startswith("b"):
            out[name] = leaf * 2
    return out
