"""JL002 fixed: jax.debug.print under jit; plain print only outside jitted code."""
from functools import partial

import jax
import jax.numpy as jnp
from numba import jit as numba_jit


@jax.jit
def loss(w, x):
    jax.debug.print("loss {}", w)
    return jnp.sum((w * x) ** 2)


@partial(jax.jit, static_argnums=0)
def power(n, x):
    jax.debug.print("x = {}", x)
    return x ** n


def update(w, g):
    print("update (not jitted)")
    return w - 0.1 * g


@numba_jit
def numba_kernel(a):
    print(a)  # numba's jit, not JAX's
    return a


print("result:", loss(jnp.ones(3), jnp.ones(3)))
