"""JL002: print inside a jitted function runs once, while tracing."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import jit


@jax.jit
def loss(w, x):
    print("loss", w)  # expect: JL002 col 5
    return jnp.sum((w * x) ** 2)


@jit
def step(x):
    y = x + 1
    if True:
        print(y)  # expect: JL002 col 9
    return y


@partial(jax.jit, static_argnums=0)
def power(n, x):
    print("n =", n)  # expect: JL002 col 5
    return x ** n


def update(w, g):
    print("update")  # expect: JL002 col 5
    return w - 0.1 * g


update_jit = jax.jit(update)
show = jax.jit(lambda x: print(x) or x)  # expect: JL002 col 26
