"""The long fuzz run (``make fuzz``): random programs, native CPU backend vs interpreter.

Usage: python tests/run_fuzz.py [-n 10000] [--per-program 10] [--seed 0] [--jobs N]

``-n`` random expression DAGs (each an independent random program of tests/
fuzz_programs.py) are checked, ``--per-program`` of them batched into one compiled program
(one trace, one native compilation) to amortise Numba's compile time; program ``k`` is
``make_program(seed + k, per_program)`` (every ``--big-every``-th one a big program of two
DAGs over about a million elements, so parallel kernels run too); a failure prints the
call that rebuilds it:

    python -c "import sys; sys.path.insert(0, 'tests'); import fuzz_programs as f; \\
               p = f.make_program(SEED, PER, big=BIG); \\
               print(f.failure_report(p, f.check_program(p)))"

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


def _check_range(jobs):
    import fuzz_programs as fp
    out = []
    for s, per, big in jobs:
        try:
            prog = fp.make_program(s, per, big=big)
        except Exception as e:    # a generator bug: report it, do not hide it
            out.append(((s, per, big), f"generator failed: {type(e).__name__}: {e}"))
            continue
        try:
            errs = fp.check_program(prog)
        except Exception as e:
            errs = [f"raised {type(e).__name__}: {e}"]
        if errs:
            out.append(((s, per, big), fp.failure_report(prog, errs)))
    return len(jobs), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10_000, help="random programs (expression DAGs)")
    ap.add_argument("--per-program", type=int, default=10,
                    help="expression DAGs batched into one compiled program")
    ap.add_argument("--seed", type=int, default=0, help="first program seed")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--big-every", type=int, default=100,
                    help="every k-th compiled program is a big one (2 DAGs over about a "
                         "million elements: parallel kernels); 0: none")
    a = ap.parse_args(argv)
    os.environ.setdefault("JAXLITE_CACHE_DIR",
                          os.path.join(tempfile.gettempdir(), "jaxlite-fuzz-cache"))
    os.environ["JAXLITE_TIERED"] = "0"
    jobs, total = [], 0
    while total < a.n:
        k = len(jobs)
        big = bool(a.big_every) and k % a.big_every == a.big_every - 1
        jobs.append((a.seed + k, 2 if big else a.per_program, big))
        total += jobs[-1][1]
    n_prog = len(jobs)
    chunks = [jobs[i:i + 10] for i in range(0, len(jobs), 10)]
    t0 = time.perf_counter()
    done, failures = 0, []
    ctx = mp.get_context("spawn")
    with ctx.Pool(max(1, a.jobs)) as pool:
        for n, fails in pool.imap_unordered(_check_range, chunks):
            done += n
            for (s, per, big), report in fails:
                failures.append(s)
                print(f"=== FAILURE: make_program({s}, {per}, big={big})\n{report}\n",
                      flush=True)
            print(f"[fuzz] {done}/{n_prog} compiled programs, {len(failures)} failing, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    print(f"[fuzz] {total} random programs in {n_prog} compiled programs: "
          f"{len(failures)} failing {sorted(failures)}; {time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
