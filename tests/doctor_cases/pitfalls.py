"""The chapter's three pitfalls (section 3.5), planted, plus the loop that piles up arrays
(section 3.2).  ``jaxlite doctor`` must report each one with its line; see fixed.py."""
import sys

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12

# Pitfall 1 (R5.1): the result of .at[] is thrown away
x = jnp.zeros(5)
for i in range(5):
    x.at[i].set(i)  # PLANTED: at-result-unused
print("x:", x)


# Pitfall 2 (R5.2): the step is not jitted and its data is left on the host
def update(w, g):
    return w - 0.1 * jnp.tanh(w) * g  # PLANTED: eager-function, repeated-transfer


w = jax.device_put(jnp.ones(256, dtype=jnp.float32))
g_host = np.full(256, 0.5, dtype=np.float32)
for _ in range(STEPS):
    w = update(w, g_host)
print("w[0]:", float(w[0]))


# Pitfall 3 (R5.3): a new batch size every call compiles every call
@jax.jit
def total(batch):
    return jnp.sum(batch * batch)


for n in (3, 5, 6, 7, 9, 12):
    total(jnp.ones((n, 4)))  # PLANTED: recompiles


# Section 3.2 (R2.4): every iteration keeps a new array alive
history = []
for k in range(STEPS):
    history.append(jnp.full((64,), float(k)))  # PLANTED: loop-allocations
print("sum:", float(jnp.sum(jnp.stack(history))))
