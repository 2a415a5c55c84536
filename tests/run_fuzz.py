"""The long fuzz run (``make fuzz``): random programs, native CPU backend vs interpreter.

Usage: python tests/run_fuzz.py [-n 10000] [--per-program 10] [--seed 0] [--jobs N]

``-n`` random expression DAGs (each an independent random program of tests/
fuzz_programs.py) are checked, ``--per-program`` of them batched into one compiled program
(one trace, one native compilation) to amortise Numba's compile time; program ``k`` is
``make_program(seed + k, per_program)``, so a failure is reproduced by its seed alone:

    python -c "import sys; sys.path.insert(0, 'tests'); import fuzz_programs as f; \\
               p = f.make_program(SEED, PER); print(f.failure_report(p, f.check_program(p)))"

Kernels compiled by Numba go to the persistent cache (``JAXLITE_CACHE_DIR``, default here
a directory under the system's temporary directory), so a rerun of the same seeds compiles
little.  Each failure prints the program (its jaxpr) and its inputs; the exit status is 1
when any program failed.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _check_range(args):
    seeds, per = args
    import fuzz_programs as fp
    out = []
    for s in seeds:
        try:
            prog = fp.make_program(s, per)
        except Exception as e:    # a generator bug: report it, do not hide it
            out.append((s, f"generator failed: {type(e).__name__}: {e}"))
            continue
        try:
            errs = fp.check_program(prog)
        except Exception as e:
            errs = [f"raised {type(e).__name__}: {e}"]
        if errs:
            out.append((s, fp.failure_report(prog, errs)))
    return len(seeds), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10_000, help="random programs (expression DAGs)")
    ap.add_argument("--per-program", type=int, default=10,
                    help="expression DAGs batched into one compiled program")
    ap.add_argument("--seed", type=int, default=0, help="first program seed")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    os.environ.setdefault("JAXLITE_CACHE_DIR",
                          os.path.join(tempfile.gettempdir(), "jaxlite-fuzz-cache"))
    os.environ["JAXLITE_TIERED"] = "0"
    n_prog = -(-a.n // a.per_program)
    seeds = list(range(a.seed, a.seed + n_prog))
    chunks = [(seeds[i:i + 10], a.per_program) for i in range(0, len(seeds), 10)]
    t0 = time.perf_counter()
    done, failures = 0, []
    ctx = mp.get_context("spawn")
    with ctx.Pool(max(1, a.jobs)) as pool:
        for n, fails in pool.imap_unordered(_check_range, chunks):
            done += n
            for s, report in fails:
                failures.append(s)
                print(f"=== FAILURE seed={s} per_program={a.per_program}\n{report}\n",
                      flush=True)
            print(f"[fuzz] {done}/{n_prog} compiled programs ({done * a.per_program} "
                  f"random programs), {len(failures)} failing, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    total = n_prog * a.per_program
    print(f"[fuzz] {total} random programs in {n_prog} compiled programs: "
          f"{len(failures)} failing {sorted(failures)}; {time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
