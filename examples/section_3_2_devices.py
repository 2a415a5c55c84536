"""3.2 Device memory management: where does the data live?

The chapter's program with the imports changed to jaxlite (``import jaxlite as jax``,
``import jaxlite.numpy as jnp``; for real JAX write ``import jax`` / ``import jax.numpy as
jnp``).  Lines marked "(added)" are not in the chapter.

The chapter assumes a GPU.  On a CPU-only machine ``jax.devices('gpu')`` raises
RuntimeError -- in real JAX and in jaxlite alike -- so the program shows that error and
continues on the CPU device.  Everything else runs unchanged.

Run it: ``python examples/section_3_2_devices.py`` (or ``python -m jaxlite demo``).
"""
import time

import numpy as np

import jaxlite as jax

print(jax.devices())
# Example output: [TFRT_CPU_0, TFRT_GPU_0]  (if there is a GPU)
# (jaxlite and today's JAX print the repr: [CpuDevice(id=0)] on a CPU-only machine)

import jaxlite.numpy as jnp

# Create an array; by default it lives on the default device (the first one)
x = jnp.array([1, 2, 3])

# Place it on the GPU explicitly (if there is one)
try:
    gpu_device = jax.devices('gpu')[0]
except RuntimeError as e:
    # (added) no GPU backend here: show JAX's error and continue on the CPU device
    print(f"RuntimeError: {e}")
    print("No GPU on this machine: continuing on the CPU device instead.")
    gpu_device = jax.devices('cpu')[0]
x_gpu = jax.device_put(x, gpu_device)

print(x_gpu.device())  # chapter's output: TFRT_GPU_0 (old JAX); here the CPU device: cpu:0
# ``x.device()`` is the old call form.  ``device`` is a property now: jaxlite still accepts
# the call (with a DeprecationWarning); real JAX raises TypeError for it.
print(x_gpu.device)     # (added) the current form
print(x_gpu.devices())  # (added) the set of devices holding the array

# (added) "JAX moves data between devices for you, at a cost": computations run where
# their operands live.  Mixing in host data (a NumPy array) is an implicit host-to-device
# transfer; jax.transfer_guard makes such hidden transfers visible or forbids them.
print(x_gpu + np.array([10, 20, 30]))  # [11 22 33]: np.array copied to the device first
with jax.transfer_guard("disallow"):
    try:
        x_gpu + np.array([10, 20, 30])
    except RuntimeError as e:
        print("transfer guard:", str(e).splitlines()[0])


# ---- Memory: "creating arrays in a Python loop made memory climb; use lax.scan or vmap" ----
# (added) What climbs: a Python loop that keeps every step's array alive (here to collect
# a trajectory) holds one buffer per step, and jnp.stack then copies them all once more.
# lax.scan writes each step's output into one stacked result and keeps only the carry;
# vmap runs the per-row function on the whole batch at once instead of row by row.

def step(x):
    return jnp.tanh(x) * 0.9 + 0.1


def trajectory_loop(x0, steps):
    xs = []
    x = x0
    for _ in range(steps):
        x = step(x)
        xs.append(x)  # keeps every step's array alive  # noqa: JL005
    return jnp.stack(xs)


def trajectory_scan(x0, steps):
    def body(carry, _):
        carry = step(carry)
        return carry, carry
    _, xs = jax.lax.scan(body, x0, None, length=steps)
    return xs


def measure(fn):
    """Runs fn(); returns (result, seconds, peak bytes above the start or None,
    buffers allocated or None).  Real JAX reports no memory stats for CPU devices."""
    dev = jax.devices()[0]
    stats = dev.memory_stats()
    if stats is not None and hasattr(dev, "reset_peak_memory"):
        dev.reset_peak_memory()
        stats = dev.memory_stats()
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    secs = time.perf_counter() - t0
    if stats is None:
        return out, secs, None, None
    after = dev.memory_stats()
    return (out, secs, after["peak_bytes_in_use"] - stats["bytes_in_use"],
            after["num_allocs"] - stats["num_allocs"])


def report(name, secs, peak, allocs):
    mem = "memory stats n/a" if peak is None else \
        f"peak +{peak / 1e6:.2f} MB, {allocs} buffers allocated"
    print(f"  {name:<12} {secs * 1e3:7.1f} ms, {mem}")


STEPS, WIDTH = 1000, 256
x0 = jnp.ones(WIDTH, dtype=jnp.float32)

if hasattr(jax.lax, "scan"):
    print(f"trajectory of {STEPS} steps of a float32[{WIDTH}] state:")
    ys_loop, secs, peak, allocs = measure(lambda: trajectory_loop(x0, STEPS))
    report("Python loop", secs, peak, allocs)
    ys_scan, secs, peak, allocs = measure(lambda: trajectory_scan(x0, STEPS))
    report("lax.scan", secs, peak, allocs)
    print("same trajectory:", bool(np.allclose(ys_loop, ys_scan, rtol=1e-6)))
else:
    print("skipped: the loop vs lax.scan memory comparison needs jax.lax.scan "
          "(not in jaxlite yet)")

if hasattr(jax, "vmap"):
    batch = jnp.ones((STEPS, WIDTH), dtype=jnp.float32)
    print(f"per-row function over a float32[{STEPS},{WIDTH}] batch:")
    rows_loop, secs, peak, allocs = measure(
        lambda: jnp.stack([step(batch[i]) for i in range(batch.shape[0])]))
    report("Python loop", secs, peak, allocs)
    rows_vmap, secs, peak, allocs = measure(lambda: jax.vmap(step)(batch))
    report("vmap", secs, peak, allocs)
    print("same rows:", bool(np.allclose(rows_loop, rows_vmap, rtol=1e-6)))
else:
    print("skipped: the loop vs vmap memory comparison needs jax.vmap (not in jaxlite yet)")
