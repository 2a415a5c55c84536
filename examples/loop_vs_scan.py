"""Python loop vs lax.scan: why memory climbed in the chapter, and what scan fixes

The chapter's story (section 3.2): "creating arrays in a Python loop made memory climb to
tens of GB; rewriting it with jax.lax.scan or jax.vmap fixed it".  Here is the same
computation written three ways, each measured with ``Device.memory_stats()`` (the peak of
``bytes_in_use`` above what was in use before) and the wall time of a warm run:

  (a) a Python loop that keeps every step's array in a list and reduces at the end, as
      one writes it first: memory grows with the number of steps (O(steps x state));
  (b) the same loop keeping only running sums: bounded memory, but one dispatch per
      operation per step;
  (c) ``lax.scan`` under ``jit``: the running sums are the carry, the loop is one compiled
      program: bounded memory (O(carry)) and no per-step dispatch.

The computation: a state float32[WIDTH] follows x <- x + dt * (tanh(x) - 0.1 x^3) for
STEPS steps; the result is the time average of x and of x^2 per component.
(``examples/section_3_2_devices.py`` shows the other half of the story: a scan that
*returns* the whole trajectory holds O(carry + stacked outputs), and vmap instead of a
per-row loop.)

Run it: ``python examples/loop_vs_scan.py [--steps N] [--width W]``; ``--backend jax``
runs it on real JAX (which reports no memory statistics for CPU devices).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp

DT = 0.01


def step(x):
    """One integration step of the toy dynamics (a few temporaries per step)."""
    return x + DT * (jnp.tanh(x) - 0.1 * x * x * x)


def averages_loop_keep(x0, steps):
    """(a) keeps every state, then reduces: the list holds steps x WIDTH floats."""
    history = []
    x = x0
    for _ in range(steps):
        x = step(x)
        history.append(x)  # noqa: JL005 (the slow variant, on purpose)
    xs = jnp.stack(history)                       # one more copy of the whole history
    return jnp.mean(xs, axis=0), jnp.mean(xs * xs, axis=0)


def averages_loop_running(x0, steps):
    """(b) running sums in a Python loop: bounded memory, dispatched op by op."""
    x, s, ss = x0, jnp.zeros_like(x0), jnp.zeros_like(x0)
    for _ in range(steps):
        x = step(x)
        s, ss = s + x, ss + x * x
    return s / steps, ss / steps


def _averages_scan(x0, steps):
    """(c) the running sums as the carry of lax.scan, compiled as one program."""
    def body(carry, _):
        x, s, ss = carry
        x = step(x)
        return (x, s + x, ss + x * x), None

    zeros = jnp.zeros_like(x0)
    (_, s, ss), _ = jax.lax.scan(body, (x0, zeros, zeros), None, length=steps)
    return s / steps, ss / steps


def make_averages_scan():
    return jax.jit(_averages_scan, static_argnums=1)


def measure(fn, repeat_warm=True):
    """Runs ``fn()`` once to warm up (compiles, caches), then once measured.  Returns
    (result, seconds, peak bytes above the bytes in use before or None, buffers allocated
    or None).  Real JAX reports no memory stats for CPU devices (None)."""
    if repeat_warm:
        jax.block_until_ready(fn())
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


def fmt_bytes(n):
    if n is None:
        return "n/a"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def compare(steps, width):
    """Runs the three variants; returns ``[(name, seconds, peak_bytes, allocs)]`` and
    checks they compute the same averages (raises AssertionError otherwise)."""
    x0 = jnp.linspace(-2.0, 2.0, width, dtype=jnp.float32)
    scan_fn = make_averages_scan()
    variants = [
        ("(a) Python loop, keeps every step", lambda: averages_loop_keep(x0, steps)),
        ("(b) Python loop, running sums", lambda: averages_loop_running(x0, steps)),
        ("(c) lax.scan under jit", lambda: scan_fn(x0, steps)),
    ]
    rows, results = [], []
    for name, fn in variants:
        out, secs, peak, allocs = measure(fn)
        rows.append((name, secs, peak, allocs))
        results.append([np.asarray(o) for o in out])
    for name, res in zip([v[0] for v in variants[1:]], results[1:]):
        for want, got in zip(results[0], res):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5,
                                       err_msg=f"{name} differs from the kept-history loop")
    return rows


def print_table(rows, steps, width):
    state = width * 4
    print(f"{steps} steps of a float32[{width}] state ({fmt_bytes(state)}); "
          f"the kept history alone is {fmt_bytes(steps * state)}")
    w = max(len(r[0]) for r in rows)
    print(f"  {'variant':<{w}}  {'time':>9}  {'peak memory':>11}  {'buffers':>7}")
    for name, secs, peak, allocs in rows:
        print(f"  {name:<{w}}  {secs * 1e3:6.1f} ms  {fmt_bytes(peak):>11}  "
              f"{'n/a' if allocs is None else allocs:>7}")
    peaks = {r[0][:3]: r[2] for r in rows}
    if peaks["(a)"] is not None and peaks["(c)"]:
        print(f"  lax.scan's peak is {peaks['(a)'] / peaks['(c)']:.0f}x smaller than the "
              f"kept-history loop's; the loop's grows with the number of steps, scan's "
              f"does not")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--backend", choices=("jaxlite", "jax"), default="jaxlite")
    args = p.parse_args(argv)
    if args.steps < 1 or args.width < 1:
        p.error(f"--steps and --width must be >= 1, got {args.steps}, {args.width}")
    return args


def use_backend(name):
    """Rebinds this module's ``jax``/``jnp`` (the only names the code above uses)."""
    global jax, jnp
    if name == "jax":
        import jax as real_jax
        import jax.numpy as real_jnp
        jax, jnp = real_jax, real_jnp
    else:
        import jaxlite
        import jaxlite.numpy
        jax, jnp = jaxlite, jaxlite.numpy


def main(argv=None):
    """Prints the comparison table; returns its rows (for tests)."""
    args = parse_args(argv)
    use_backend(args.backend)
    rows = compare(args.steps, args.width)
    print_table(rows, args.steps, args.width)
    print("same averages from all three: True")
    return rows


if __name__ == "__main__":
    main()
