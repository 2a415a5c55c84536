"""Several-device workloads W9 and W10 (issue 14), jaxlite beside JAX and NumPy in one run.

    python bench/_workloads_multi.py [--quick] [--write]

Each library runs in its own subprocess with ``JAX_NUM_CPU_DEVICES=4`` (``--worker LIB``
prints one JSON line); the driver prints a Markdown table of medians and ratios and, with
``--write``, puts it in bench/RESULTS.md as the section "Several devices" (replacing the
previous one).  Definitions (bench/README.md keeps them too):

- W9: one data-parallel training step of the MLP 784-512-512-10 (tanh, softmax
  cross-entropy, SGD), batch 256 sharded over 4 devices, parameters replicated, the
  gradient averaged by one ``pmean`` inside ``shard_map`` under ``jit``; beside the same
  step on 1 device (plain ``jit(value_and_grad)``).  JAX's results are waited for after
  every step (``block_until_ready``; left unwaited, JAX's CPU devices can stall on 2 cores).
- W10: ``psum`` over 4 devices of a float32 buffer per device, 64 MiB and 8 bytes, as
  ``jit(shard_map(psum))``; the rate is the per-device buffer size over the time.  NumPy's
  row is the local limit: the sum of the 4 shards with ``np.add``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _sections  # noqa: E402  (bench/ is on the path from here on)

N_DEV = 4
FULL = {"w9_sizes": (784, 512, 512, 10), "w9_batch": 256, "w9_repeats": 20,
        "w10_mib": 64, "w10_repeats": 10, "w10_small_repeats": 200}
QUICK = {"w9_sizes": (64, 32, 32, 10), "w9_batch": 16, "w9_repeats": 3,
         "w10_mib": 1, "w10_repeats": 3, "w10_small_repeats": 10}


def _median_time(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _mlp(jax, jnp, cfg):
    import numpy as np
    sizes, batch = cfg["w9_sizes"], cfg["w9_batch"]
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((a, b)).astype(np.float32) * a ** -0.5,
               np.zeros(b, np.float32)) for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch).astype(np.int32)

    def loss_fn(ps, x, y):
        h = x
        for w, b in ps[:-1]:
            h = jnp.tanh(h @ w + b)
        logits = h @ ps[-1][0] + ps[-1][1]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
    return params, x, y, loss_fn


def work_w9(jax, jnp, cfg, lib) -> dict:
    import numpy as np
    from jax_like import P, NamedSharding, Mesh  # noqa: F401 (set by the worker)
    params, x, y, loss_fn = _mlp(jax, jnp, cfg)
    mesh = Mesh(np.array(jax.devices()[:N_DEV]), ("batch",))

    def sgd(ps, gs):
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, ps, gs)

    def local(ps, xb, yb):
        loss, g = jax.value_and_grad(loss_fn)(ps, xb, yb)
        return sgd(ps, jax.lax.pmean(g, "batch")), jax.lax.pmean(loss, "batch")
    step4 = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                                  out_specs=(P(), P())))

    def one(ps, xb, yb):
        loss, g = jax.value_and_grad(loss_fn)(ps, xb, yb)
        return sgd(ps, g), loss
    step1 = jax.jit(one)
    p4 = jax.device_put(params, NamedSharding(mesh, P()))
    x4 = jax.device_put(x, NamedSharding(mesh, P("batch")))
    y4 = jax.device_put(y, NamedSharding(mesh, P("batch")))
    p1 = jax.device_put(params, jax.devices()[0])
    x1, y1 = jax.device_put(x, jax.devices()[0]), jax.device_put(y, jax.devices()[0])
    state = {"p4": p4, "p1": p1}

    def run4():
        state["p4"], loss = step4(state["p4"], x4, y4)
        jax.block_until_ready((state["p4"], loss))
        state["l4"] = loss

    def run1():
        state["p1"], loss = step1(state["p1"], x1, y1)
        jax.block_until_ready((state["p1"], loss))
        state["l1"] = loss
    reps = cfg["w9_repeats"]
    t4, t1 = [], []
    for _ in range(3):        # interleaved, so that a slow phase of the machine hits both
        t4.append(_median_time(run4, reps))
        t1.append(_median_time(run1, reps))
    return {"W9": {"median_s": min(t4), "one_device_s": min(t1),
                   "loss_4": float(state["l4"]), "loss_1": float(state["l1"])}}


def work_w10(jax, jnp, cfg) -> dict:
    import numpy as np
    from jax_like import P, NamedSharding, Mesh  # noqa: F401
    mesh = Mesh(np.array(jax.devices()[:N_DEV]), ("x",))
    out = {}
    for key, n, reps in (("W10_64M", cfg["w10_mib"] * 2 ** 20 // 4, cfg["w10_repeats"]),
                         ("W10_8B", 2, cfg["w10_small_repeats"])):
        host = np.arange(N_DEV * n, dtype=np.float32) % 7
        x = jax.device_put(host, NamedSharding(mesh, P("x")))
        f = jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh,
                                  in_specs=P("x"), out_specs=P()))

        def run():
            jax.block_until_ready(f(x))
        t = _median_time(run, reps)
        want = host.reshape(N_DEV, n).sum(0)
        got = np.asarray(f(x))
        out[key] = {"median_s": t, "bytes": n * 4, "gb_s": n * 4 / t / 1e9,
                    "agree": bool(np.allclose(got, want))}
    return out


def work_numpy(cfg) -> dict:
    import numpy as np
    out = {}
    for key, n, reps in (("W10_64M", cfg["w10_mib"] * 2 ** 20 // 4, cfg["w10_repeats"]),
                         ("W10_8B", 2, cfg["w10_small_repeats"])):
        shards = [np.arange(n, dtype=np.float32) % 7 for _ in range(N_DEV)]

        def run():
            acc = shards[0] + shards[1]
            for s in shards[2:]:
                np.add(acc, s, out=acc)
            return acc
        t = _median_time(run, reps)
        out[key] = {"median_s": t, "bytes": n * 4, "gb_s": n * 4 / t / 1e9, "agree": True}
    return out


def worker(lib: str, cfg: dict) -> dict:
    if lib == "numpy":
        import numpy as np
        return {"lib": lib, "version": np.__version__, "results": work_numpy(cfg)}
    if lib == "jax":
        import jax
        import jax.numpy as jnp
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        version = jax.__version__
    else:
        sys.path.insert(0, str(ROOT / "src"))
        import jaxlite as jax
        import jaxlite.numpy as jnp
        from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec
        version = jax.__version__
    mod = type(sys)("jax_like")
    mod.P, mod.NamedSharding, mod.Mesh = PartitionSpec, NamedSharding, Mesh
    sys.modules["jax_like"] = mod
    assert len(jax.devices()) == N_DEV, jax.devices()
    res = {**work_w9(jax, jnp, cfg, lib), **work_w10(jax, jnp, cfg)}
    return {"lib": lib, "version": version, "results": res}


def run_worker(lib: str, quick: bool) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", lib]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(N_DEV))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    except subprocess.TimeoutExpired:
        return {"lib": lib, "error": "timed out after 900 s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"lib": lib, "error": f"exit status {p.returncode}: {tail[0]}"}
    return json.loads(lines[-1])


def _ms(r, key, field="median_s"):
    v = r.get("results", {}).get(key, {}).get(field)
    return None if v is None else v * 1e3


def report(runs: dict, cfg: dict, when: str) -> str:
    lite, jx, npy = runs.get("jaxlite", {}), runs.get("jax", {}), runs.get("numpy", {})
    lines = ["## Several devices (W9, W10)", "",
             f"Generated by `python bench/_workloads_multi.py --write` on {when}, "
             f"{N_DEV} CPU devices (`JAX_NUM_CPU_DEVICES={N_DEV}`) on this machine; "
             f"jaxlite {lite.get('version', '?')}, JAX {jx.get('version', '?')}, NumPy "
             f"{npy.get('version', '?')}. Definitions: bench/_workloads_multi.py.", ""]
    for name, r in runs.items():
        if "error" in r:
            lines.append(f"- {name}: {r['error']}")
    lines += ["| workload | unit | jaxlite | JAX | NumPy | jaxlite / JAX | jaxlite / NumPy |",
              "|---|---|---|---|---|---|---|"]

    def row(label, key, unit="ms"):
        a, b, c = _ms(lite, key), _ms(jx, key), _ms(npy, key)
        f = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
        ra = "-" if a is None or not b else f"{a / b:.2f}x"
        rc = "-" if a is None or not c else f"{a / c:.2f}x"
        lines.append(f"| {label} | {unit} | {f(a)} | {f(b)} | {f(c)} | {ra} | {rc} |")
    sizes = "-".join(map(str, cfg["w9_sizes"]))
    row(f"W9 data-parallel MLP step ({sizes}, batch {cfg['w9_batch']}) on {N_DEV} devices",
        "W9")
    a1, b1 = _ms(lite, "W9", "one_device_s"), _ms(jx, "W9", "one_device_s")
    lines.append(f"| W9 the same step on 1 device (plain jit) | ms | "
                 f"{'-' if a1 is None else f'{a1:.3g}'} | {'-' if b1 is None else f'{b1:.3g}'}"
                 f" | - | - | - |")
    row(f"W10 psum of {cfg['w10_mib']} MiB float32 per device over {N_DEV} devices",
        "W10_64M")
    row(f"W10 psum of 8 bytes per device over {N_DEV} devices", "W10_8B")
    lines.append("")
    notes = []
    a4 = _ms(lite, "W9")
    if a4 and a1:
        notes.append(f"W9: jaxlite's 4-device step is {a4 / a1:.2f}x its 1-device step "
                     f"(goal: at most 1.3x)" + (f"; JAX's is {_ms(jx, 'W9') / b1:.2f}x"
                                               if b1 and _ms(jx, 'W9') else ""))
    for key in ("W10_64M", "W10_8B"):
        parts = []
        for name, r in (("jaxlite", lite), ("JAX", jx), ("NumPy", npy)):
            g = r.get("results", {}).get(key, {}).get("gb_s")
            if g is not None:
                parts.append(f"{name} {g:.3g} GB/s")
        if parts:
            notes.append(f"{key}: " + ", ".join(parts) + " (per-device buffer / time)")
    lines += [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write", action="store_true",
                    help="put the table in bench/RESULTS.md (section 'Several devices')")
    ap.add_argument("--libs", default="jaxlite,jax,numpy")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.worker:
        print(json.dumps(worker(args.worker, cfg)))
        return 0
    import datetime as dt
    runs = {}
    for lib in [s for s in args.libs.split(",") if s]:
        print(f"measuring {lib} ...", file=sys.stderr, flush=True)
        runs[lib] = run_worker(lib, args.quick)
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = report(runs, cfg, when)
    print(text)
    if args.write and not args.quick:
        path = HERE / "RESULTS.md"
        _sections.write_section(text, path)
        print(f"wrote {path}", file=sys.stderr)
    return 1 if any("error" in r for r in runs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
