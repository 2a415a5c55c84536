"""JL003: Python control flow on a traced (non-static) argument of a jitted function."""
from functools import partial

import jaxlite as jax
import jaxlite.numpy as jnp


@jax.jit
def relu(x):
    if x > 0:  # expect: JL003 col 8
        return x
    return 0.0 * x


@jax.jit
def halve_until_small(x):
    while x > 1.0:  # expect: JL003 col 11
        x = x / 2
    return x


@partial(jax.jit, static_argnums=(0,))
def repeat_add(n, x, k):
    for i in range(k):  # expect: JL003 col 14
        x = x + n
    return x


@jax.jit
def sign_flip(x):
    s = jnp.sum(x)
    return x if s > 0 else -x  # expect: JL003 col 17


def step(x, n_iter):
    while n_iter and jnp.any(x > 1):  # expect: JL003 col 11
        x = x / 2
    return x


step_jit = jax.jit(step)
