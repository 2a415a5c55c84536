"""pitfalls.py with each pitfall fixed: ``jaxlite doctor`` reports no finding."""
import sys

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import pad_to_bucket

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12

# Pitfall 1 fixed: assign the result of .at[]
x = jnp.zeros(5)
for i in range(5):
    x = x.at[i].set(i)
print("x:", x)


# Pitfall 2 fixed: data moved to the device once, the step jitted
@jax.jit
def update(w, g):
    return w - 0.1 * jnp.tanh(w) * g


w = jax.device_put(jnp.ones(256, dtype=jnp.float32))
g = jax.device_put(np.full(256, 0.5, dtype=np.float32))
for _ in range(STEPS):
    w = update(w, g)
print("w[0]:", float(w[0]))


# Pitfall 3 fixed: pad the batch to a bucket and mask the padding
@jax.jit
def total(batch, mask):
    return jnp.sum(jnp.where(mask[:, None], batch * batch, 0.0))


for n in (3, 5, 6, 7, 9, 12):
    total(*pad_to_bucket(jnp.ones((n, 4)), 0, (16,)))


# Section 3.2 fixed: lax.scan builds the stacked result in one program
def body(carry, k):
    return carry, jnp.full((64,), 1.0) * k


_, history = jax.jit(lambda ks: jax.lax.scan(body, 0.0, ks))(jnp.arange(STEPS, dtype=jnp.float32))
print("sum:", float(jnp.sum(history)))
