"""jaxlite's benchmark suite: jaxlite, real JAX and NumPy side by side in one run.

Usage:
    python bench/run.py                 # full sizes; writes bench/RESULTS.md
    python bench/run.py --quick         # smoke run: small sizes, few repeats, writes nothing
    python bench/run.py --quick --no-write --libs jaxlite,numpy

Each library runs in its own subprocess (``--worker LIB``, which prints one JSON line), one
after another, so that one library's threads, caches and imports do not disturb another's.
Every workload reports the median over its repeats; ratios are jaxlite's median time
divided by the other library's.  The workloads are defined in bench/README.md: keep those
definitions and this code in step.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LIBS = ("jaxlite", "jax", "numpy")
LIB_LABEL = {"jaxlite": "jaxlite", "jax": "JAX", "numpy": "NumPy"}

# Sizes and repeats.  "inner" = calls per timed sample for the microsecond workloads.
FULL = {
    "w1_inner": 2000, "w1_repeats": 15,
    "w2_n": 10_000_000, "w2_repeats": 10,
    "w3_shape": (2048, 4096), "w3_repeats": 10,
    "w8_inner": 2000, "w8_repeats": 15,
    "copy_n": 32 * 1024 * 1024, "copy_repeats": 10,
    "warmup": 2,
}
QUICK = {
    "w1_inner": 50, "w1_repeats": 3,
    "w2_n": 100_000, "w2_repeats": 3,
    "w3_shape": (128, 256), "w3_repeats": 3,
    "w8_inner": 50, "w8_repeats": 3,
    "copy_n": 1024 * 1024, "copy_repeats": 3,
    "warmup": 1,
}

# name, title, unit of the reported per-call time
WORKLOADS = [
    ("W1", "jit dispatch: dot(x, y) + sum(x) on float32[3]", "us"),
    ("W2", "fused elementwise: tanh(x)*0.5 + exp(-x*x)*sin(x), float32[N]", "ms"),
    ("W3", "row softmax, float32[R, C], jitted", "ms"),
    ("W8", "eager op latency: x + 1 on float32[3], not jitted", "us"),
]
UNIT_SCALE = {"us": 1e6, "ms": 1e3}


# ---- timing ---------------------------------------------------------------------------

def _samples(fn, repeats: int, warmup: int, inner: int = 1) -> list[float]:
    """Seconds per call of ``fn`` for each of ``repeats`` samples of ``inner`` calls,
    after ``warmup`` untimed samples."""
    for _ in range(warmup):
        for _ in range(inner):
            fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner)
    return out


def _result(samples, nbytes=None, first_call=None, check=None) -> dict:
    med = statistics.median(samples)
    r = {"median_s": med, "min_s": min(samples), "max_s": max(samples),
         "repeats": len(samples)}
    if nbytes is not None:
        r["bytes"] = nbytes
        r["gb_per_s"] = nbytes / med / 1e9
    if first_call is not None:
        r["first_call_s"] = first_call
    if check is not None:
        r["check"] = check
    return r


def _first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---- inputs (the same for every library) -----------------------------------------------

def _inputs(cfg):
    import numpy as np
    n = cfg["w2_n"]
    w2 = np.linspace(-3.0, 3.0, n, dtype=np.float32)
    rows, cols = cfg["w3_shape"]
    w3 = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    return w2, w3


# ---- workers ---------------------------------------------------------------------------

def work_jax_like(jax, jnp, cfg) -> dict:
    """W1, W2, W3, W8 written once against a (jax, jax.numpy)-like pair: real JAX and
    jaxlite run exactly this code."""
    import numpy as np
    w2_host, w3_host = _inputs(cfg)
    res = {}

    # W1: jit dispatch of the chapter's section 3.3 function on 3-vectors
    @jax.jit
    def f(x, y):
        return jnp.dot(x, y) + jnp.sum(x)
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    y = jnp.array([4.0, 5.0, 6.0], dtype=jnp.float32)
    first = _first_call(lambda: f(x, y).block_until_ready())
    s = _samples(lambda: f(x, y).block_until_ready(), cfg["w1_repeats"], cfg["warmup"],
                 cfg["w1_inner"])
    res["W1"] = _result(s, first_call=first, check=float(f(x, y)))

    # W2: fused elementwise chain over N float32
    @jax.jit
    def elementwise(x):
        return jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(x)
    xd = jax.device_put(w2_host)
    first = _first_call(lambda: elementwise(xd).block_until_ready())
    s = _samples(lambda: elementwise(xd).block_until_ready(), cfg["w2_repeats"],
                 cfg["warmup"])
    out = np.asarray(elementwise(xd), dtype=np.float64)
    res["W2"] = _result(s, nbytes=2 * w2_host.nbytes, first_call=first,
                        check=float(out.sum()))

    # W3: numerically stable softmax over each row
    @jax.jit
    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        return e / jnp.sum(e, axis=1, keepdims=True)
    xd = jax.device_put(w3_host)
    first = _first_call(lambda: softmax(xd).block_until_ready())
    s = _samples(lambda: softmax(xd).block_until_ready(), cfg["w3_repeats"], cfg["warmup"])
    out = np.asarray(softmax(xd), dtype=np.float64)
    res["W3"] = _result(s, nbytes=2 * w3_host.nbytes, first_call=first,
                        check=float((out * np.arange(out.shape[1])).sum()))

    # W8: one eager (unjitted) op on a 3-vector
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    first = _first_call(lambda: (x + 1).block_until_ready())
    s = _samples(lambda: (x + 1).block_until_ready(), cfg["w8_repeats"], cfg["warmup"],
                 cfg["w8_inner"])
    res["W8"] = _result(s, first_call=first, check=float(np.asarray(x + 1).sum()))
    return res


def work_numpy(cfg) -> dict:
    """The same workloads in plain NumPy (no jit, no fusion), plus the copy bandwidth."""
    import numpy as np
    w2_host, w3_host = _inputs(cfg)
    res = {}

    def f(x, y):
        return np.dot(x, y) + np.sum(x)
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    y = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    s = _samples(lambda: f(x, y), cfg["w1_repeats"], cfg["warmup"], cfg["w1_inner"])
    res["W1"] = _result(s, check=float(f(x, y)))

    def elementwise(x):
        return np.tanh(x) * 0.5 + np.exp(-x * x) * np.sin(x)
    s = _samples(lambda: elementwise(w2_host), cfg["w2_repeats"], cfg["warmup"])
    res["W2"] = _result(s, nbytes=2 * w2_host.nbytes,
                        check=float(elementwise(w2_host).astype(np.float64).sum()))

    def softmax(x):
        e = np.exp(x - np.max(x, axis=1, keepdims=True))
        return e / np.sum(e, axis=1, keepdims=True)
    s = _samples(lambda: softmax(w3_host), cfg["w3_repeats"], cfg["warmup"])
    out = softmax(w3_host).astype(np.float64)
    res["W3"] = _result(s, nbytes=2 * w3_host.nbytes,
                        check=float((out * np.arange(out.shape[1])).sum()))

    s = _samples(lambda: x + 1, cfg["w8_repeats"], cfg["warmup"], cfg["w8_inner"])
    res["W8"] = _result(s, check=float((x + 1).sum()))

    # machine copy bandwidth: one large float32 copy, read + write bytes counted
    src = np.ones(cfg["copy_n"], dtype=np.float32)
    dst = np.empty_like(src)
    s = _samples(lambda: np.copyto(dst, src), cfg["copy_repeats"], cfg["warmup"])
    res["copy"] = _result(s, nbytes=2 * src.nbytes)
    return res


def worker(lib: str, cfg: dict) -> dict:
    """Runs every workload for ``lib``; returns ``{"lib", "version", "results"}``."""
    if lib == "numpy":
        import numpy as np
        return {"lib": lib, "version": np.__version__, "results": work_numpy(cfg)}
    if lib == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        import jaxlib
        version = f"{jax.__version__} (jaxlib {jaxlib.__version__})"
        return {"lib": lib, "version": version, "results": work_jax_like(jax, jnp, cfg)}
    if lib == "jaxlite":
        sys.path.insert(0, str(ROOT / "src"))
        import jaxlite
        import jaxlite.numpy as jnp
        version = jaxlite.__version__ + _git_commit()
        return {"lib": lib, "version": version, "results": work_jax_like(jaxlite, jnp, cfg)}
    raise ValueError(f"unknown library {lib!r}; choose from {LIBS}")


# ---- the driver ------------------------------------------------------------------------

def _git_commit() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f" (git {rev}{', with local changes' if dirty else ''})" if rev else ""


def machine() -> dict:
    """CPU model, core counts, memory, OS and Python of this machine."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    mem = 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {"cpu": model, "logical_cores": os.cpu_count(), "usable_cores": usable,
            "memory_gb": mem / 1e9, "os": platform.platform(),
            "python": platform.python_version()}


def run_worker(lib: str, quick: bool, timeout: float) -> dict:
    """Runs one library's worker in a fresh interpreter; returns its JSON or an error."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", lib]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"lib": lib, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"lib": lib, "error": f"exit status {p.returncode}: {tail[0]}"}
    return json.loads(lines[-1])


def _fmt(x: float, digits: int = 3) -> str:
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def _check_agrees(a, b) -> bool:
    return abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b))


def report(runs: dict, mach: dict, cfg: dict, quick: bool, when: str) -> str:
    """The results as Markdown (also printed to the terminal)."""
    libs = [lib for lib in LIBS if lib in runs]
    ok = {lib: "results" in runs[lib] for lib in libs}
    out = ["# jaxlite benchmark results", ""]
    out.append(f"Generated by `python bench/run.py{' --quick' if quick else ''}` on {when}. "
               f"Workload definitions: `bench/README.md`.")
    if quick:
        out.append("")
        out.append("**QUICK smoke run: small sizes and few repeats; these numbers are not "
                   "comparable with a full run.**")
    out += ["", "## Machine", ""]
    out.append(f"- CPU: {mach['cpu']}; {mach['logical_cores']} logical cores, "
               f"{mach['usable_cores']} usable by this process")
    out.append(f"- Memory: {mach['memory_gb']:.1f} GB; OS: {mach['os']}")
    out.append(f"- Python {mach['python']}; " + "; ".join(
        f"{LIB_LABEL[lib]} {runs[lib].get('version', '?')}" for lib in libs))
    copy = runs.get("numpy", {}).get("results", {}).get("copy")
    if copy:
        out.append(f"- Copy bandwidth (NumPy copy of {copy['bytes'] // 2 / 1e6:.0f} MB, "
                   f"read + write counted): **{copy['gb_per_s']:.2f} GB/s**")
    for lib in libs:
        if not ok[lib]:
            out.append(f"- {LIB_LABEL[lib]}: NOT MEASURED ({runs[lib]['error']})")

    rows, cols = cfg["w3_shape"]
    sizes = {"W2": f"N = {cfg['w2_n']:,}", "W3": f"R x C = {rows} x {cols}"}
    out += ["", "## Time per call (median)", ""]
    head = "| workload | unit | " + " | ".join(LIB_LABEL[lib] for lib in libs)
    ratio_libs = [lib for lib in libs if lib != "jaxlite"] if "jaxlite" in libs else []
    head += "".join(f" | jaxlite / {LIB_LABEL[lib]}" for lib in ratio_libs) + " | agree |"
    out.append(head)
    out.append("|" + "---|" * (head.count("|") - 1))
    for name, title, unit in WORKLOADS:
        scale = UNIT_SCALE[unit]
        cells, checks, meds = [], [], {}
        for lib in libs:
            r = runs[lib].get("results", {}).get(name)
            if r is None:
                cells.append("n/a")
                continue
            meds[lib] = r["median_s"]
            cells.append(_fmt(r["median_s"] * scale))
            if "check" in r:
                checks.append(r["check"])
        ratios = []
        for lib in ratio_libs:
            if "jaxlite" in meds and lib in meds:
                ratios.append(f"{meds['jaxlite'] / meds[lib]:.2f}x")
            else:
                ratios.append("n/a")
        agree = "yes" if all(_check_agrees(checks[0], c) for c in checks[1:]) else "NO"
        label = f"{name} {title}" + (f" ({sizes[name]})" if name in sizes else "")
        out.append(f"| {label} | {unit} | " + " | ".join(cells) +
                   "".join(f" | {r}" for r in ratios) + f" | {agree} |")
    out.append("")
    out.append("Ratios above 1 mean jaxlite is slower.  \"agree\": every library computed the "
               "same checksum of its result (relative tolerance 1e-3).")

    out += ["", "## Effective bandwidth (input read + output written, per call)", ""]
    head = "| workload | " + " | ".join(f"{LIB_LABEL[lib]} GB/s" for lib in libs)
    if copy:
        head += " | " + " | ".join(f"{LIB_LABEL[lib]} % of copy" for lib in libs)
    head += " |"
    out.append(head)
    out.append("|" + "---|" * (head.count("|") - 1))
    for name in ("W2", "W3"):
        gbs = [runs[lib].get("results", {}).get(name, {}).get("gb_per_s") for lib in libs]
        line = f"| {name} | " + " | ".join("n/a" if g is None else f"{g:.2f}" for g in gbs)
        if copy:
            line += " | " + " | ".join(
                "n/a" if g is None else f"{100 * g / copy['gb_per_s']:.0f}%" for g in gbs)
        out.append(line + " |")

    jitted = [lib for lib in libs if lib != "numpy"]
    if jitted:
        out += ["", "## First call (trace + compile + run), for reference", ""]
        head = "| workload | " + " | ".join(f"{LIB_LABEL[lib]} ms" for lib in jitted) + " |"
        out.append(head)
        out.append("|" + "---|" * (head.count("|") - 1))
        for name, _, _ in WORKLOADS:
            vals = [runs[lib].get("results", {}).get(name, {}).get("first_call_s")
                    for lib in jitted]
            out.append(f"| {name} | " + " | ".join(
                "n/a" if v is None else _fmt(v * 1e3) for v in vals) + " |")
    out += ["", f"Repeats: W1 {cfg['w1_repeats']} x {cfg['w1_inner']} calls, W2 "
                f"{cfg['w2_repeats']}, W3 {cfg['w3_repeats']}, W8 {cfg['w8_repeats']} x "
                f"{cfg['w8_inner']} calls, after {cfg['warmup']} warm-up sample(s). Each "
                f"library ran in its own process, one after another.", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: small sizes, few repeats; writes no file unless --out")
    ap.add_argument("--no-write", action="store_true", help="print the results only")
    ap.add_argument("--out", metavar="PATH",
                    help="where to write the Markdown (default bench/RESULTS.md for a full "
                         "run)")
    ap.add_argument("--libs", default=",".join(LIBS),
                    help=f"comma-separated subset of {','.join(LIBS)}")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds allowed per library (default 60 quick, 900 full)")
    ap.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL

    if args.worker:
        print(json.dumps(worker(args.worker, cfg)))
        return 0

    libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    bad = [lib for lib in libs if lib not in LIBS]
    if bad:
        ap.error(f"unknown --libs {bad}; choose from {LIBS}")
    timeout = args.timeout or (60.0 if args.quick else 900.0)
    runs = {}
    for lib in libs:
        print(f"measuring {LIB_LABEL[lib]} ...", file=sys.stderr, flush=True)
        runs[lib] = run_worker(lib, args.quick, timeout)
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = report(runs, machine(), cfg, args.quick, when)
    print(text)
    out = args.out or (None if args.quick else str(HERE / "RESULTS.md"))
    if out and not args.no_write:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    failed = [lib for lib in libs if "error" in runs[lib]]
    # a library that is not installed is reported, not an error of the benchmark
    return 1 if any("No module named" not in runs[lib]["error"] for lib in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
