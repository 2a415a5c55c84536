"""Accelerator workloads T0-T8 (issue 32): jaxlite and real JAX on one PJRT device, back to
back, one process at a time (one process may hold a TPU chip).

    python bench/_workloads_tpu.py [--platform tpu] [--quick] [--write] [--libs jaxlite,jax]

Each library runs its workloads in a subprocess of its own (``--worker LIB``, one JSON
line), with ``JAX_PLATFORMS=<platform>,cpu``; T0 runs in two more fresh processes per
library, the first with an empty persistent compilation cache and the second with the
cache the first filled.  The driver prints a Markdown table of medians and ratios and,
with ``--write``, puts it in bench/RESULTS.md as the section "Accelerator (T0-T8)"
(replacing the previous one; ``bench/run.py`` keeps it when it rewrites the file).
Definitions (bench/README.md keeps them too):

- open: seconds from the first ``jax.devices()`` call of a fresh process (the plugin
  loaded, the client created, the chip opened) to its return.
- T0: the first result of a fresh jitted function, the chip already open: the W6 40-op
  function on float32[512, 512] with its own constant (so no two are the same program),
  from the call to the value on the host; cold (empty cache) and warm (the persistent
  cache the cold process filled); 5 functions per process, the median.
- T1: jit dispatch of the chapter's 3.3 function (``dot(x, y) + sum(x)``, float32[3]):
  pipelined (1000 calls, waiting for the last) and synced (``block_until_ready`` each).
- T8: eager ``x + 1`` on float32[3], waited for each time.
- T2: W2's fused elementwise chain on float32[1e8]; T3: W3's row softmax 2048x4096; T4:
  W4's MLP step (784-512-512-10, batch 256); T5: W5's 1000-step scan RNN (hidden 64).
- T4b: one SGD step of an MLP of three 4096x4096 bfloat16 layers (ReLU, squared-error
  loss) at batch 4096; TFLOP/s counts 6 * batch * 4096^2 per layer.
- T7: an 8192^3 bfloat16 matmul; TFLOP/s counts 2 * 8192^3.
- H2D / D2H: ``device_put`` of a 256 MiB float32 host array, and ``np.asarray`` of a
  256 MiB array freshly put on the device; GiB/s.

Every result is waited for (``block_until_ready``) inside the timed region.  Checksums of
each result are compared between the libraries (relative tolerance 1e-2: the two
libraries' programs differ, and a TPU rounds float32 matmuls through bfloat16 passes).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _sections  # noqa: E402  (bench/ is on the path from here on)

FULL = {"t0_functions": 5, "t1_inner": 1000, "t1_repeats": 7, "t1_sync_inner": 200,
        "t8_inner": 200, "t8_repeats": 7, "w2_n": 100_000_000, "w3_shape": (2048, 4096),
        "w4_sizes": (784, 512, 512, 10), "w4_batch": 256, "w5_steps": 1000,
        "w5_hidden": 64, "repeats": 20, "t4b_width": 4096, "t4b_layers": 3,
        "t4b_batch": 4096, "t7_n": 8192, "copy_mib": 256, "copy_repeats": 7, "warmup": 2}
QUICK = {"t0_functions": 2, "t1_inner": 50, "t1_repeats": 3, "t1_sync_inner": 20,
         "t8_inner": 20, "t8_repeats": 3, "w2_n": 100_000, "w3_shape": (128, 256),
         "w4_sizes": (64, 32, 32, 10), "w4_batch": 16, "w5_steps": 50, "w5_hidden": 16,
         "repeats": 3, "t4b_width": 128, "t4b_layers": 3, "t4b_batch": 64, "t7_n": 256,
         "copy_mib": 4, "copy_repeats": 3, "warmup": 1}

# key, title, unit, goal (jaxlite / JAX: a time ratio at most this; for "rate" rows the
# rate ratio at least this), kind ("time" or "rate")
ROWS = [
    ("open", "open the chip: first jax.devices() of a fresh process", "s", None, "time"),
    ("T0_cold", "first result of a fresh jitted function, chip open, empty cache", "ms",
     1.0, "time"),
    ("T0_warm", "first result of a fresh jitted function, warm persistent cache", "ms",
     None, "time"),
    ("T1", "jit dispatch, pipelined: dot(x, y) + sum(x), float32[3]", "us", 1.0, "time"),
    ("T1_sync", "jit dispatch, block_until_ready each call", "us", 1.0, "time"),
    ("T8", "eager x + 1 on float32[3], waited for", "us", 1.0, "time"),
    ("T2", "fused elementwise, float32[1e8]", "ms", 1.05, "time"),
    ("T3", "row softmax, float32[2048, 4096]", "ms", 1.05, "time"),
    ("T4", "MLP step 784-512-512-10, batch 256", "ms", 1.05, "time"),
    ("T4b", "MLP step, 3 x 4096^2 bfloat16 layers, batch 4096", "TFLOP/s", 0.95, "rate"),
    ("T5", "lax.scan tanh RNN, 1000 steps, hidden 64", "ms", 1.05, "time"),
    ("T7", "matmul 8192^3 bfloat16", "TFLOP/s", 0.95, "rate"),
    ("H2D", "device_put of 256 MiB float32", "GiB/s", 0.95, "rate"),
    ("D2H", "np.asarray of 256 MiB float32 on the device", "GiB/s", 0.95, "rate"),
]
SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


def _import(lib):
    if lib == "jaxlite":
        import jaxlite as jax
        import jaxlite.numpy as jnp
    else:
        import jax
        import jax.numpy as jnp
    return jax, jnp


def _median_of(fn, repeats, warmup, inner=1):
    from run import _samples
    return statistics.median(_samples(fn, repeats, warmup, inner))


def _f40(jnp, x, c):
    """W6's 40-operation function with its own constant ``c``."""
    from _workloads_fresh import f40
    return f40(jnp, x) * c


# ---- T0: one fresh process per cache state ------------------------------------------------

def worker_t0(lib: str, cfg: dict) -> dict:
    import numpy as np
    jax, jnp = _import(lib)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if lib == "jax":
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.devices()
    x = jax.device_put(np.linspace(-1.0, 1.0, 512 * 512, dtype=np.float32)
                       .reshape(512, 512))
    x.block_until_ready()
    times, checks = [], []
    for i in range(cfg["t0_functions"]):
        c = np.float32(1.0 + i / 8)
        fn = jax.jit(lambda a, c=c: _f40(jnp, a, c))
        t0 = time.perf_counter()
        out = np.asarray(fn(x))
        times.append(time.perf_counter() - t0)
        checks.append(float(out.astype(np.float64).sum()))
    return {"median_s": statistics.median(times), "samples": times,
            "check": float(sum(checks))}


# ---- the rest: one process ------------------------------------------------------------------

def worker(lib: str, cfg: dict) -> dict:
    import numpy as np
    t_open = time.perf_counter()
    jax, jnp = _import(lib)
    devices = jax.devices()
    res = {"open": {"median_s": time.perf_counter() - t_open},
           "device": str(devices[0]), "platform": devices[0].platform}
    from run import (_inputs, _w4_check, _w4_inputs, _w5_check, _w5_inputs, programs)
    reps, warm = cfg["repeats"], cfg["warmup"]

    def timed(fn, repeats=reps, inner=1):
        return _median_of(fn, repeats, warm, inner)

    # T1: jit dispatch, pipelined and synced
    @jax.jit
    def f(x, y):
        return jnp.dot(x, y) + jnp.sum(x)
    x = jax.device_put(np.array([1.0, 2.0, 3.0], np.float32))
    y = jax.device_put(np.array([4.0, 5.0, 6.0], np.float32))
    f(x, y).block_until_ready()
    n = cfg["t1_inner"]

    def pipelined():
        for _ in range(n):
            out = f(x, y)
        out.block_until_ready()
    res["T1"] = {"median_s": _median_of(pipelined, cfg["t1_repeats"], warm) / n,
                 "check": float(f(x, y))}
    res["T1_sync"] = {"median_s": timed(lambda: f(x, y).block_until_ready(),
                                        cfg["t1_repeats"], cfg["t1_sync_inner"])}

    # T8: eager x + 1
    res["T8"] = {"median_s": timed(lambda: (x + 1).block_until_ready(), cfg["t8_repeats"],
                                   cfg["t8_inner"]),
                 "check": float(np.asarray(x + 1).sum())}

    progs = programs(jax, jnp)
    w2_host, w3_host = _inputs(cfg)
    for key, host, weight in (("T2", w2_host, None),
                              ("T3", w3_host, np.arange(w3_host.shape[1]))):
        fn = jax.jit(progs["W2" if key == "T2" else "W3"])
        xd = jax.device_put(host)
        res[key] = {"median_s": timed(lambda: fn(xd).block_until_ready())}
        out = np.asarray(fn(xd), dtype=np.float64)
        res[key]["check"] = float((out * weight).sum() if weight is not None else out.sum())
        del xd, out

    params_h, xb_h, yb_h = _w4_inputs(cfg)
    step = jax.jit(progs["W4"])
    params, xb, yb = jax.device_put(params_h), jax.device_put(xb_h), jax.device_put(yb_h)
    res["T4"] = {"median_s": timed(lambda: jax.block_until_ready(step(params, xb, yb)))}
    new, loss = step(params, xb, yb)
    res["T4"]["check"] = _w4_check(params_h, new, loss)

    rnn = jax.jit(progs["W5"])
    args = [jax.device_put(a) for a in _w5_inputs(cfg)]
    res["T5"] = {"median_s": timed(lambda: jax.block_until_ready(rnn(*args)))}
    res["T5"]["check"] = _w5_check(*rnn(*args))
    del args

    # T4b: a wide bfloat16 MLP step
    width, layers, batch = cfg["t4b_width"], cfg["t4b_layers"], cfg["t4b_batch"]
    rng = np.random.default_rng(4)
    bf16 = jnp.bfloat16
    ws = [jax.device_put((rng.standard_normal((width, width), dtype=np.float32)
                          / np.float32(np.sqrt(width))).astype(bf16)) for _ in range(layers)]
    xw = jax.device_put(rng.standard_normal((batch, width), dtype=np.float32).astype(bf16))

    def wide_loss(ws, x):
        h = x
        for w in ws:
            h = jnp.maximum(jnp.dot(h, w), 0)
        return jnp.mean(jnp.square(h.astype(jnp.float32) - 1.0))

    @jax.jit
    def wide_step(ws, x):
        loss, gs = jax.value_and_grad(wide_loss)(ws, x)
        return [w - (0.01 * g).astype(w.dtype) for w, g in zip(ws, gs)], loss
    t = timed(lambda: jax.block_until_ready(wide_step(ws, xw)))
    flops = 6.0 * batch * width * width * layers
    res["T4b"] = {"median_s": t, "rate": flops / t / 1e12,
                  "check": float(wide_step(ws, xw)[1])}
    del ws, xw

    # T7: a large bfloat16 matmul
    nn = cfg["t7_n"]
    a = jax.device_put(rng.standard_normal((nn, nn), dtype=np.float32).astype(bf16))
    b = jax.device_put(rng.standard_normal((nn, nn), dtype=np.float32).astype(bf16))
    mm = jax.jit(jnp.matmul)
    t = timed(lambda: mm(a, b).block_until_ready())
    res["T7"] = {"median_s": t, "rate": 2.0 * nn ** 3 / t / 1e12,
                 "check": float(np.asarray(mm(a, b)[:64, :64], dtype=np.float64).sum())}
    del a, b

    # H2D / D2H of 256 MiB
    nbytes = cfg["copy_mib"] << 20
    host = np.random.default_rng(5).standard_normal(nbytes // 4, dtype=np.float32)
    res["H2D"] = {"median_s": timed(lambda: jax.device_put(host).block_until_ready(),
                                    cfg["copy_repeats"])}
    samples = []
    for _ in range(cfg["copy_repeats"] + warm):
        dev = jax.device_put(host)
        dev.block_until_ready()
        t0 = time.perf_counter()
        back = np.asarray(dev)
        samples.append(time.perf_counter() - t0)
        assert back.shape == host.shape
        del dev, back
    res["D2H"] = {"median_s": statistics.median(samples[warm:]),
                  "check": float(host[:1000].sum())}
    for key in ("H2D", "D2H"):
        res[key]["rate"] = nbytes / res[key]["median_s"] / 2 ** 30
    return res


# ---- driver ---------------------------------------------------------------------------------

def _run(args, env, timeout) -> dict:
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args],
                       capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(lines[-1])


def run_lib(lib: str, platform: str, quick: bool, timeout: float) -> dict:
    """One library's results: the main worker, then T0 cold and warm in fresh processes
    sharing one new cache directory."""
    env = dict(os.environ, JAX_PLATFORMS=f"{platform},cpu", PYTHONUNBUFFERED="1")
    flag = ["--quick"] if quick else []
    res = _run(["--worker", lib, *flag], env, timeout)
    cache = tempfile.mkdtemp(prefix=f"t0-{lib}-")
    try:
        cenv = dict(env, JAX_COMPILATION_CACHE_DIR=cache, JAXLITE_CACHE_DIR=cache)
        for state in ("cold", "warm"):
            r = _run(["--worker-t0", lib, *flag], cenv, timeout)
            res[f"T0_{state}"] = r
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return res


def _value(r: dict, unit: str):
    if not isinstance(r, dict) or "median_s" not in r:
        return None
    if unit in SCALE:
        return r["median_s"] * SCALE[unit]
    return r.get("rate")


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def report(runs: dict, platform: str, when: str, quick: bool) -> str:
    lite, jx = runs.get("jaxlite", {}), runs.get("jax", {})
    dev = lite.get("device") or jx.get("device") or platform
    out = ["## Accelerator (T0-T8)", "",
           f"Generated by `python bench/_workloads_tpu.py --platform {platform}` on {when}"
           f"{' (quick sizes)' if quick else ''}; device {dev}.  Each library ran in its "
           "own processes, one after another (definitions: bench/_workloads_tpu.py and "
           "bench/README.md).  Ratios: jaxlite / JAX (times: lower is better; rates: "
           "higher is better).", "",
           "| workload | unit | jaxlite | JAX | jaxlite / JAX | goal | met | agree |",
           "|---|---|---|---|---|---|---|---|"]
    for key, title, unit, goal, kind in ROWS:
        a, b = _value(lite.get(key), unit), _value(jx.get(key), unit)
        ratio = a / b if a is not None and b else None
        if goal is None or ratio is None:
            met = "-" if goal is None else "n/a"
        elif kind == "time":
            met = "yes" if ratio <= goal else "NO"
        else:
            met = "yes" if ratio >= goal else "NO"
        goal_s = "-" if goal is None else (f"<= {goal}x" if kind == "time" else f">= {goal}x")
        ca, cb = (lite.get(key) or {}).get("check"), (jx.get(key) or {}).get("check")
        agree = "-" if ca is None or cb is None else \
            ("yes" if abs(ca - cb) <= 1e-2 * max(1.0, abs(cb)) else f"NO ({ca:.6g} vs {cb:.6g})")
        label = title if key == "open" else f"{key} {title}"
        out.append(f"| {label} | {unit} | {_fmt(a)} | {_fmt(b)} | "
                   f"{'n/a' if ratio is None else f'{ratio:.2f}x'} | {goal_s} | {met} | "
                   f"{agree} |")
    cold = _value(lite.get("T0_cold"), "ms")
    warm = _value(lite.get("T0_warm"), "ms")
    if cold and warm:
        out += ["", f"jaxlite's warm-cache first result is {warm / cold:.2f}x its cold one "
                    "(goal: at most 0.5x)."]
    for lib, r in runs.items():
        errs = {k: v["error"] for k, v in r.items() if isinstance(v, dict) and "error" in v}
        if "error" in r:
            errs["worker"] = r["error"]
        for k, e in errs.items():
            out.append(f"\n{lib} {k}: error: {e}")
    return "\n".join(out) + "\n"


def write_section(text: str, path: Path = HERE / "RESULTS.md") -> None:
    """Puts ``text`` (the "Accelerator" section) in ``path`` (bench/_sections.py)."""
    _sections.write_section(text, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default="tpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write", action="store_true",
                    help="put the table in bench/RESULTS.md (section 'Accelerator (T0-T8)')")
    ap.add_argument("--libs", default="jaxlite,jax")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--out", help="also write the JSON results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-t0", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.worker:
        print(json.dumps(worker(args.worker, cfg)))
        return 0
    if args.worker_t0:
        print(json.dumps(worker_t0(args.worker_t0, cfg)))
        return 0
    import datetime as dt
    runs = {}
    for lib in [s for s in args.libs.split(",") if s]:
        print(f"measuring {lib} on {args.platform} ...", file=sys.stderr, flush=True)
        runs[lib] = run_lib(lib, args.platform, args.quick, args.timeout)
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = report(runs, args.platform, when, args.quick)
    print(text)
    if args.out:
        Path(args.out).write_text(json.dumps(runs, indent=1), encoding="utf-8")
    if args.write and not args.quick:
        write_section(text)
        print(f"wrote {HERE / 'RESULTS.md'}", file=sys.stderr)
    return 1 if any("error" in json.dumps(r) for r in runs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
