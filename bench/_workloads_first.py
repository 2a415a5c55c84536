"""The first-call workloads, W13-W15: each sample is a fresh Python process.

``python bench/_workloads_first.py W13|W14|W15 LIB [--quick]`` runs one measurement in
this new process and prints one JSON line.  bench/run.py starts it once per sample, with
an empty persistent-cache directory (``BENCH_CACHE_DIR``; JAX keeps its default: no
persistent cache), so each program is as new as in a user's first run.

- W13 "first calls": W2, W3, W4 and W5's programs (bench/run.py ``programs``) jitted
  afresh; the total time of each one's first 20 calls, trace and compile included, each
  call waited for.  run.py also runs it beside a CPU-heavy process (``BENCH_BUSY``: a
  process spinning on one core), as on a busy machine.
- W14: a fresh 1000-step ``lax.scan`` over a float32[256] state (body: tanh, products,
  a sum) called once: trace, compile and run.
- W15: the chapter's pitfall-2 step (``w - 0.1 * tanh(w) * g`` on float32[1000]), jitted
  fresh right after another jitted function on a large array (W6's 40-op function on
  float32[1024, 1024]) has run twice (so that, in jaxlite, its native build is in
  flight): the total time of the step's calls 2 to 21.

The workload definitions live in bench/README.md; keep them and this code in step.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

W13_CALLS = 20
W14_STEPS, W14_N = 1000, 256
W15_N, W15_BIG = 1000, (1024, 1024)


def _import(lib):
    if lib == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        return jax, jnp
    sys.path.insert(0, str(ROOT / "src"))
    cache = os.environ.get("BENCH_CACHE_DIR")
    if cache:
        os.environ["JAXLITE_CACHE_DIR"] = cache
    import jaxlite
    import jaxlite.numpy as jnp
    return jaxlite, jnp


def w13(jax, jnp, quick: bool) -> dict:
    import run
    cfg = run.QUICK if quick else run.FULL
    progs = run.programs(jax, jnp)
    args = run.program_args(jax, cfg)
    totals = {}
    for name in ("W2", "W3", "W4", "W5"):
        f = jax.jit(progs[name])
        t0 = time.perf_counter()
        for _ in range(W13_CALLS):
            out = jax.block_until_ready(f(*args[name]))
        totals[name] = time.perf_counter() - t0
        del out
    return {"seconds": sum(totals.values()), "parts": totals}


def w14(jax, jnp) -> dict:
    import numpy as np
    x0 = jax.device_put(np.linspace(-1, 1, W14_N, dtype=np.float32))

    def run(x):
        def body(c, _):
            c = jnp.tanh(c * 0.9 + 0.1) - 0.01 * c * c
            return c, jnp.sum(c)
        return jax.lax.scan(body, x, None, length=W14_STEPS)
    t0 = time.perf_counter()
    c, ys = jax.jit(run)(x0)
    jax.block_until_ready((c, ys))
    dt = time.perf_counter() - t0
    return {"seconds": dt, "check": float(np.asarray(ys, dtype=np.float64).sum())}


def w15(jax, jnp) -> dict:
    import numpy as np
    from _workloads_fresh import f40
    big = jax.jit(lambda x: f40(jnp, x))
    xb = jax.device_put(np.linspace(-2, 2, W15_BIG[0] * W15_BIG[1],
                                    dtype=np.float32).reshape(W15_BIG))
    big(xb).block_until_ready()
    big(xb).block_until_ready()

    def update(w, g):
        return w - 0.1 * jnp.tanh(w) * g
    w = jax.device_put(np.ones(W15_N, np.float32))
    g = jax.device_put(np.full(W15_N, 0.5, np.float32))
    step = jax.jit(update)
    w = step(w, g).block_until_ready()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        w = step(w, g)
        w.block_until_ready()
        times.append(time.perf_counter() - t0)
    return {"seconds": sum(times), "max_call_s": max(times),
            "check": float(np.asarray(w, dtype=np.float64).sum())}


def main() -> None:
    which, lib = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv
    jax, jnp = _import(lib)
    if which == "W13":
        r = w13(jax, jnp, quick)
    elif which == "W14":
        r = w14(jax, jnp)
    elif which == "W15":
        r = w15(jax, jnp)
    else:
        raise SystemExit(f"unknown workload {which!r}")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
