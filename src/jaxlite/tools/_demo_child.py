"""What each process of the demo's several-device and several-process programs runs:
``python _demo_child.py REPORT SCRIPT`` (under ``jaxlite launch`` for several processes).

It runs SCRIPT as the demo runs a program in its own process (``demo.run_section``: as
``__main__``, recording compiles, transfers, eager operations, collectives, memory and
warnings), its output unindented on standard output, and writes what it recorded as JSON
to ``REPORT.json``, or ``REPORT.<rank>.json`` in an MPI job (the rank from ``PMI_RANK``),
for the demo to read and print.  When SCRIPT fails, its traceback goes to standard error
and the process exits with status 1 (in an MPI job it aborts the job, so that the other
processes do not wait for it in a collective).

Layer: tools.  Run by path, as ``jaxlite launch`` runs a script; never imported.
"""
import json
import os
import sys
from pathlib import Path


def main() -> int:
    report, script = sys.argv[1], sys.argv[2]
    sys.path[0] = os.path.dirname(os.path.abspath(script))   # as `python SCRIPT` has it
    from jaxlite.tools.demo import run_section

    rank = os.environ.get("PMI_RANK")
    # a rank's program makes its devices itself (jax.distributed.initialize() first)
    res = run_section(Path(script), sys.stdout, prefix="", fresh=rank is not None)
    sys.stdout.flush()
    name = f"{report}.json" if rank is None else f"{report}.{rank}.json"
    with open(name + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(res.to_json(), fh, default=str)
    os.replace(name + ".tmp", name)
    if res.ok:
        return 0
    sys.stderr.write(res.error)
    sys.stderr.flush()
    if rank is not None:
        from mpi4py import MPI
        MPI.COMM_WORLD.Abort(1)
    return 1


if __name__ == "__main__":
    sys.exit(main())
