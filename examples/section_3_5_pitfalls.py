"""3.5 Three pitfalls: a discarded .at[] update, unjitted steps, new shapes

Each pitfall is shown, then fixed.

The chapter describes these in prose only; this program is written for the demo in the
chapter's style (``import jaxlite as jax``, ``import jaxlite.numpy as jnp``; for real JAX
write ``import jax`` / ``import jax.numpy as jnp``).

Run it: ``python examples/section_3_5_pitfalls.py`` (or ``python -m jaxlite demo``, which
also shows the eager ops, transfers and compiles underneath).
"""
import time
from functools import partial

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp

# ---- Pitfall 1: .at[] returns a new array; forgetting to assign it changes nothing ----
print("Pitfall 1: a discarded .at[] update")
x = jnp.zeros(5)
for i in range(5):
    x.at[i].set(i)  # BUG: the new array is thrown away  # noqa: JL001
print("  without assignment:", x)  # [0. 0. 0. 0. 0.]
for i in range(5):
    x = x.at[i].set(i)  # fix: assign the result back
print("  with assignment:   ", x)  # [0. 1. 2. 3. 4.]


# ---- Pitfall 2: data on the device, but the computation is not jitted ----
# Every unjitted operation is dispatched on its own, and host data mixed in (here a
# NumPy array) is copied to the device again on every step.  Fix: move the data once
# with device_put and jit the whole step: one dispatch per step and no copies.
print("Pitfall 2: unjitted steps with host data")
device = jax.devices()[0]


def update(w, g):
    return w - 0.1 * jnp.tanh(w) * g


STEPS, REPEATS = 50, 7
w0 = jax.device_put(jnp.ones(1000, dtype=jnp.float32), device)
g_host = np.full(1000, 0.5, dtype=np.float32)  # left on the host by mistake


def per_step(step, g):
    """Median over REPEATS runs of STEPS steps, after 3 warm-up steps (real JAX compiles
    on first use; jaxlite's jit starts its native build): seconds per step, and w."""
    w = w0
    for _ in range(3):
        w = step(w, g)
    jax.block_until_ready(w)
    times = []
    for _ in range(REPEATS):
        w = w0
        t0 = time.perf_counter()
        for _ in range(STEPS):
            w = step(w, g)  # unjitted: 4 separate ops per step, g_host copied every step
        w = jax.block_until_ready(w)
        times.append((time.perf_counter() - t0) / STEPS)
    return sorted(times)[REPEATS // 2], w


t_eager, w = per_step(update, g_host)
g_dev = jax.device_put(g_host, device)  # fix: move the data once...
update_jit = jax.jit(update)            # ...and compile the whole step
t_jit, w_jit = per_step(update_jit, g_dev)

print("  same result:", bool(np.allclose(w, w_jit, rtol=1e-6)))
print(f"  per step (timings vary): unjitted with host data {t_eager * 1e6:.0f} us, "
      f"jitted on device data {t_jit * 1e6:.0f} us")


# ---- Pitfall 3: every new input shape compiles again ----
print("Pitfall 3: a new shape every call recompiles every call")


@jax.jit
def total(x):
    # A Python print runs only while tracing, so it marks each compilation.
    print("  compiling total for shape", x.shape)  # noqa: JL002
    return jnp.sum(x * x)


for n in (3, 4, 5, 6):  # a "batch size" that changes every step
    total(jnp.ones(n))


# Fix 1: pad every input to one fixed size (zeros do not change a sum of squares).
def pad_to(x, size):
    return jnp.concatenate([x, jnp.zeros(size - x.shape[0], dtype=x.dtype)])


print("  padded to 8:")
results = [total(pad_to(jnp.ones(n), 8)) for n in (3, 4, 5, 6)]  # compiles once, for (8,)
print("  results:", [float(r) for r in results])  # [3.0, 4.0, 5.0, 6.0]


# Fix 2: static_argnums makes an argument a compile-time constant.  Its VALUE is part
# of the cache key: each new value compiles once, repeated values reuse the cache.
@partial(jax.jit, static_argnums=(0,))
def prefix_total(n, x):
    print("  compiling prefix_total for n =", n)  # noqa: JL002
    return jnp.sum(x[:n] * x[:n])


x8 = jnp.ones(8)
print("  static n:", [float(prefix_total(n, x8)) for n in (3, 4, 3, 4)])  # 2 compiles
