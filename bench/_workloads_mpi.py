"""Several-process workload W11 (issue 15): a jitted psum across 2 MPI processes, jaxlite
beside raw mpi4py (and JAX's own multi-process CPU collectives, when they start) in one run.

    python bench/_workloads_mpi.py [--quick] [--write]

The driver starts ``mpiexec -n 2`` ranks of this file (``--worker jaxlite``: 1 CPU device
per process) and, for JAX, two plain processes joined by ``jax.distributed.initialize``
over localhost (``--worker jax``); rank 0 of each prints one JSON line.  It prints a
Markdown table of medians and ratios and, with ``--write``, puts it in bench/RESULTS.md as
the section "Several processes" (replacing the previous one).  Definition (bench/README.md
keeps it too):

- W11: ``jit(shard_map(lambda v: lax.psum(v, 'x')))`` over a mesh of 2 devices, one per
  process, of a float32 buffer per device: 64 MiB (the rate: the buffer size over the
  time) and 8 bytes (the latency of a small all-reduce, end to end: from the call on a
  global array to the result).  The reference is mpi4py's ``Allreduce`` of the same NumPy
  buffer in the same processes and run.  Goals: 64 MiB within 1.25x of ``Allreduce``;
  8 bytes at most 50 us.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FULL = {"mib": 64, "repeats": 10, "small_repeats": 2000}
QUICK = {"mib": 1, "repeats": 3, "small_repeats": 50}


sys.path.insert(0, str(HERE))
from _workloads_multi import _median_time  # noqa: E402  (one timing loop for both)


def _worker_jaxlite(cfg) -> dict:
    import numpy as np
    from mpi4py import MPI
    import jaxlite as jax
    from jaxlite.sharding import NamedSharding, PartitionSpec as P
    jax.distributed.initialize()
    comm = MPI.COMM_WORLD
    mesh = jax.make_mesh((2,), ("x",))
    psum = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh,
                                 in_specs=P("x"), out_specs=P()))
    out = {}
    for label, n, reps in (("big", cfg["mib"] * (1 << 20) // 4, cfg["repeats"]),
                           ("small", 2, cfg["small_repeats"])):
        local = np.full(n, jax.process_index() + 1, np.float32)
        arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local)
        res = psum(arr)
        assert float(res.addressable_data(0)[0]) == 3.0
        recv = np.empty_like(local)
        comm.Barrier()
        out[f"mpi_{label}"] = _median_time(lambda: comm.Allreduce(local, recv), reps)
        comm.Barrier()
        out[f"jaxlite_{label}"] = _median_time(lambda: psum(arr).block_until_ready(), reps)
        comm.Barrier()
        # raw Allreduce again, after: the two runs bracket jaxlite's
        out[f"mpi2_{label}"] = _median_time(lambda: comm.Allreduce(local, recv), reps)
    out["bytes_big"] = cfg["mib"] * (1 << 20)
    return out if jax.process_index() == 0 else {}


def _worker_jax(cfg, pid: int, port: int) -> dict:
    import numpy as np
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=pid)
    mesh = jax.make_mesh((2,), ("x",))
    psum = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh,
                                 in_specs=P("x"), out_specs=P()))
    out = {}
    for label, n, reps in (("big", cfg["mib"] * (1 << 20) // 4, cfg["repeats"]),
                           ("small", 2, cfg["small_repeats"] // 4)):
        local = np.full(n, pid + 1, np.float32)
        arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local)
        out[f"jax_{label}"] = _median_time(lambda: psum(arr).block_until_ready(), reps)
    return out if pid == 0 else {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def run_jaxlite(cfg, quick: bool) -> dict:
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        raise RuntimeError("no mpiexec: pip install 'jaxlite[mpi]'")
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="1", MPIEXEC_TIMEOUT="300",
               PYTHONPATH=str(ROOT / "src"))
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "mpi4py", str(Path(__file__)),
           "--worker", "jaxlite"] + (["--quick"] if quick else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=360, env=env)
    if p.returncode:
        raise RuntimeError(p.stdout + p.stderr)
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])


def run_jax(cfg, quick: bool) -> dict | None:
    port = _free_port()
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="1")
    procs = [subprocess.Popen([sys.executable, str(Path(__file__)), "--worker", "jax",
                               "--pid", str(pid), "--port", str(port)] +
                              (["--quick"] if quick else []),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for pid in range(2)]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        return None
    if any(p.returncode for p in procs):
        return None
    return json.loads([ln for ln in outs[0][0].splitlines() if ln.startswith("{")][-1])


def table(r: dict, j: dict | None) -> str:
    mib = r["bytes_big"] / (1 << 20)
    mpi_big = min(r["mpi_big"], r["mpi2_big"])
    mpi_small = min(r["mpi_small"], r["mpi2_small"])
    rows = ["| W11 psum over 2 processes | jaxlite | mpi4py Allreduce | ratio | JAX (gloo) |",
            "|---|---|---|---|---|"]
    jb = f"{j['jax_big'] * 1e3:.1f} ms" if j else "n/a"
    js = f"{j['jax_small'] * 1e6:.0f} us" if j else "n/a"
    rows.append(f"| {mib:g} MiB float32 per device | {r['jaxlite_big'] * 1e3:.1f} ms "
                f"({mib / r['jaxlite_big'] / 1024:.2f} GiB/s) | {mpi_big * 1e3:.1f} ms | "
                f"{r['jaxlite_big'] / mpi_big:.2f}x | {jb} |")
    rows.append(f"| 8 bytes per device (latency) | {r['jaxlite_small'] * 1e6:.0f} us | "
                f"{mpi_small * 1e6:.1f} us | {r['jaxlite_small'] / mpi_small:.1f}x | {js} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--worker", choices=["jaxlite", "jax"])
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args(argv)
    cfg = QUICK if a.quick else FULL
    if a.worker == "jaxlite":
        out = _worker_jaxlite(cfg)
        if out:
            print(json.dumps(out), flush=True)
        return 0
    if a.worker == "jax":
        out = _worker_jax(cfg, a.pid, a.port)
        if out:
            print(json.dumps(out), flush=True)
        return 0
    r = run_jaxlite(cfg, a.quick)
    j = run_jax(cfg, a.quick)
    text = table(r, j)
    print(text)
    if a.write:
        res = ROOT / "bench" / "RESULTS.md"
        body = res.read_text() if res.exists() else ""
        head = "## Several processes (W11)"
        section = (f"{head}\n\n2 MPI processes (mpiexec, MPICH), 1 CPU device each, on "
                   f"this 2-core machine; medians of {cfg['repeats']} (64 MiB) and "
                   f"{cfg['small_repeats']} (8 B) calls.\n\n{text}\n")
        if head in body:
            start = body.index(head)
            end = body.find("\n## ", start + 1)
            body = body[:start] + section + ("" if end < 0 else body[end + 1:])
        else:
            body = body.rstrip() + "\n\n" + section
        res.write_text(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
