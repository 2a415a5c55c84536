"""JL006 fixed: jitted functions return what they compute; containers are local."""
import jaxlite as jax
import jaxlite.numpy as jnp

seen = []


@jax.jit
def record(x):
    parts = []
    parts.append(x * 2)
    d = {}
    d["last"] = x
    return jnp.stack(parts), d


def outer(x):
    seen.append(x)  # not jitted: runs on every call
    return record(x)


for x in (jnp.ones(2), jnp.zeros(2)):
    y, d = record(x)
    seen.append(y)


@jax.jit
def unrolled_sum(x):
    total = 0.0
    count = 0

    def add(v):
        nonlocal total, count  # the jitted function's own locals, not outer state
        total = total + v
        count += 1

    for i in range(3):
        add(x[i])
    return total / count
