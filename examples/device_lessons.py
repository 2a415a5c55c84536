"""The chapter's lessons, timed on the default device (the accelerator, when there is one)

Three comparisons, each measured here rather than asserted: a step jitted against the same
step run operation by operation (3.3); a jitted step whose data stays on the device
against one whose input is copied from the host on every call (pitfall 2); a function
called with a new shape every time, which compiles every time, against the same calls
padded to one size, which compile once (pitfall 3).  On a TPU the differences are the
chip's: dispatch and transfer costs dominate small steps.  Timings vary from run to run;
the results and the compile counts do not.
"""
import statistics
import time

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp

device = jax.devices()[0]
print(f"default device: {device.platform} ({device.device_kind})")

N = 1_000_000
rng = np.random.default_rng(0)
x_host = rng.standard_normal(N, dtype=np.float32)
w0 = jax.device_put(np.zeros(N, dtype=np.float32), device)
x_dev = jax.device_put(x_host, device)


def step(w, x):
    """One update of a training-like loop: five elementwise operations on float32[N]."""
    return w - 0.01 * jnp.tanh(w * x + 0.5) * x


def per_call(fn, *args, calls=20, repeats=5):
    """Median seconds per call over ``repeats`` runs of ``calls`` calls (each run waited
    for), after one untimed run (compiles happen there)."""
    def run():
        out = None
        for _ in range(calls):
            out = fn(*args)
        return jax.block_until_ready(out)
    run()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def us(seconds):
    return f"{seconds * 1e6:,.0f} us"


# ---- 3.3: jit fuses the step into one program, dispatched once -------------------------
print("1. jitted against unjitted (data on the device)")
step_jit = jax.jit(step)
t_eager = per_call(step, w0, x_dev)
t_jit = per_call(step_jit, w0, x_dev)
same = np.allclose(np.asarray(step(w0, x_dev)), np.asarray(step_jit(w0, x_dev)),
                   rtol=1e-5, atol=1e-6)
print("   same result:", bool(same))
print(f"   per step (timings vary): unjitted {us(t_eager)}, jitted {us(t_jit)} "
      f"({t_eager / t_jit:.1f}x)")

# ---- pitfall 2: data kept on the device, or copied from the host on every call ---------
print("2. data kept on the device against copied from the host each step (both jitted)")
t_host = per_call(step_jit, w0, x_host)     # x_host (NumPy) is copied on every call
print(f"   each step copies {x_host.nbytes:,} bytes when the input stays on the host")
print(f"   per step (timings vary): host input {us(t_host)}, device input {us(t_jit)} "
      f"({t_host / t_jit:.1f}x)")

# ---- pitfall 3: a new shape compiles again; padding to one size compiles once ----------
print("3. a new shape every call against padding to one size")
traces = []


def total(v):
    traces.append(v.shape)  # runs only while tracing: one entry per compile  # noqa: JL006
    return jnp.sum(v * v)


lengths = [1000 + k for k in range(8)]
vectors = [jax.device_put(np.ones(n, np.float32), device) for n in lengths]
# the fix: pad on the host, where the data is prepared, to one size (zeros add nothing)
padded = [jax.device_put(np.pad(np.ones(n, np.float32), (0, 1024 - n)), device)
          for n in lengths]
total_new = jax.jit(total)
t0 = time.perf_counter()
sums_new = [float(total_new(v)) for v in vectors]
t_new = time.perf_counter() - t0
compiles_new = len(traces)

traces.clear()
total_padded = jax.jit(total)
t0 = time.perf_counter()
sums_pad = [float(total_padded(v)) for v in padded]
t_pad = time.perf_counter() - t0
print(f"   {len(lengths)} calls, lengths {lengths[0]}..{lengths[-1]}: "
      f"{compiles_new} compiles; padded to 1024: {len(traces)} compile(s)")
print("   same sums:", sums_new == sums_pad, sums_pad[:3])
print(f"   total (timings vary): new shapes {t_new * 1e3:,.1f} ms, padded "
      f"{t_pad * 1e3:,.1f} ms ({t_new / t_pad:.1f}x)")
