"""The benchmark workloads that need a fresh Python process: W6 and W7.

``python bench/_workloads_fresh.py W6|W7 LIB [--quick]`` runs one measurement in this new
process and prints one JSON line.  bench/run.py starts it once per sample (and, for W6,
once per cache state), so that nothing compiled, cached or allocated by an earlier
workload can help or hurt the measurement.

- W6: time to the first result of a 40-op elementwise + reduction function (``f40``):
  from just before the first call to its result being ready, after the imports and after
  the input was placed on the device.  The persistent compilation cache is pointed at the
  directory given in ``BENCH_CACHE_DIR`` (JAX: ``jax_compilation_cache_dir`` with no
  minimum compile time or entry size; jaxlite: ``JAXLITE_CACHE_DIR`` and the same config
  name if it is known); an empty directory is the cold case, a directory filled by an
  earlier process the warm case.
- W7: the peak memory while a jitted 10-op elementwise chain (``chain10``) runs once on
  float32[N]: the input plus the highest memory the call adds on top of what was in use
  just before it.  jaxlite: ``Device.memory_stats()``; JAX: the device's memory_stats if
  it has them, else the process's resident-set high-water mark (``/proc/self/status``
  VmHWM, reset through ``/proc/self/clear_refs``; where that cannot be reset, VmRSS sampled
  by a thread during the call); NumPy: ``tracemalloc``.  The function is
  compiled ahead of time (``lower().compile()``) so compilation is not counted.

The workload definitions live in bench/README.md; keep them and this code in step.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

W6_SHAPE = {"full": (512, 512), "quick": (64, 64)}
W7_N = {"full": 50_000_000, "quick": 1_000_000}


def f40(jnp, x):
    """W6's function: 40 primitive operations in JAX's jaxpr (elementwise ops, row means,
    a sum and a max), float32[R, C] -> float32[]."""
    y = x
    for _ in range(3):
        y = jnp.sin(y * 1.5) + 0.25
        y = jnp.tanh(y) * jnp.exp(-y * y)
        y = y - jnp.mean(y, axis=1, keepdims=True)
    return jnp.sum(y * y) + jnp.max(y)


def chain10(jnp, x):
    """W7's function: 10 elementwise operations in JAX's jaxpr, float32[N] -> float32[N]."""
    y = x * 1.5
    y = y + 0.5
    y = jnp.sin(y)
    y = y * y
    y = y - x
    y = jnp.exp(-y)
    y = y + x
    y = jnp.tanh(y)
    return y * 2.0


def _w6_input(np, size):
    rows, cols = W6_SHAPE[size]
    return np.linspace(-2.0, 2.0, rows * cols, dtype=np.float32).reshape(rows, cols)


def _w7_input(np, size):
    return np.linspace(-3.0, 3.0, W7_N[size], dtype=np.float32)


def _import(lib):
    """(jax-like module or None, numpy-like module) after setting up the cache dir."""
    cache = os.environ.get("BENCH_CACHE_DIR")
    if lib == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        if cache:
            jax.config.update("jax_compilation_cache_dir", cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        return jax, jnp
    if lib == "jaxlite":
        if cache:
            os.environ["JAXLITE_CACHE_DIR"] = cache
        sys.path.insert(0, str(ROOT / "src"))
        import jaxlite
        import jaxlite.numpy as jnp
        if cache:
            try:  # a jaxlite without a persistent cache does not know the option
                jaxlite.config.update("jax_compilation_cache_dir", cache)
            except (AttributeError, KeyError, ValueError, TypeError):
                pass
        return jaxlite, jnp
    if lib == "numpy":
        import numpy
        return None, numpy
    raise ValueError(f"unknown library {lib!r}")


def w6(lib: str, size: str) -> dict:
    t_start = time.perf_counter()
    jax, jnp = _import(lib)
    import numpy as np
    t_imported = time.perf_counter()
    host = _w6_input(np, size)
    if jax is None:
        t0 = time.perf_counter()
        out = f40(np, host)
        t1 = time.perf_counter()
    else:
        x = jax.device_put(host)
        x.block_until_ready()
        f = jax.jit(lambda x: f40(jnp, x))
        t0 = time.perf_counter()
        out = f(x)
        out.block_until_ready()
        t1 = time.perf_counter()
        if os.environ.get("BENCH_FILL") and lib == "jaxlite":
            # the process that fills the cache for the warm ones: its native build (in
            # the build process, which this process would not wait for) is written
            from jaxlite.backends.cpu import _tiered
            _tiered.wait_all(300)
    return {"first_result_s": t1 - t0, "import_s": t_imported - t_start,
            "check": float(np.asarray(out, dtype=np.float64))}


def _rss_hwm() -> int | None:
    """Bytes of this process's resident-set high-water mark (VmHWM), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _rss_now() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_rss_hwm() -> bool:
    """Sets VmHWM back to the current RSS (Linux >= 4.0); False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class _RssSampler:
    """Fallback where VmHWM cannot be reset: a thread reading VmRSS every 0.2 ms while the
    call runs (the call releases the GIL for its kernels); the highest reading."""

    def __init__(self):
        import threading
        self.peak = _rss_now() or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_now() or 0)
            time.sleep(0.0002)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_now() or 0)


def w7(lib: str, size: str) -> dict:
    jax, jnp = _import(lib)
    import numpy as np
    host = _w7_input(np, size)
    in_bytes = host.nbytes
    res = {"input_bytes": in_bytes}
    if jax is None:
        import tracemalloc
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = chain10(np, host)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        res.update(method="tracemalloc", added_bytes=peak - before)
    else:
        x = jax.device_put(host)
        x.block_until_ready()
        del host
        compiled = jax.jit(lambda x: chain10(jnp, x)).lower(x).compile()
        dev = jax.devices()[0]
        stats = dev.memory_stats()
        rss_ok = _reset_rss_hwm()
        rss0 = _rss_now()
        if stats is not None:
            before = stats["bytes_in_use"]
            if hasattr(dev, "reset_peak_memory"):
                dev.reset_peak_memory()
        if rss_ok or rss0 is None:
            out = compiled(x)
            out.block_until_ready()
            rss_added = _rss_hwm() - rss0 if rss_ok and rss0 is not None else None
            rss_method = "RSS high-water mark"
        else:
            with _RssSampler() as sampler:
                out = compiled(x)
                out.block_until_ready()
            rss_added, rss_method = sampler.peak - rss0, "RSS sampled every 0.2 ms"
        if stats is not None:
            peak = dev.memory_stats()["peak_bytes_in_use"]
            res.update(method="Device.memory_stats", added_bytes=peak - before)
            if rss_added is not None:
                res["rss_added_bytes"] = rss_added
        elif rss_added is not None:
            res.update(method=rss_method, added_bytes=rss_added)
        else:
            res.update(method="none", error="no memory statistics on this machine")
    if "added_bytes" in res:
        res["peak_bytes"] = in_bytes + res["added_bytes"]
    res["check"] = float(np.asarray(out[::997], dtype=np.float64).sum())
    return res


def main(argv) -> int:
    which, lib = argv[0], argv[1]
    size = "quick" if "--quick" in argv[2:] else "full"
    fn = {"W6": w6, "W7": w7}[which]
    print(json.dumps(fn(lib, size)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
