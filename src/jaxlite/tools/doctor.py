"""``jaxlite doctor SCRIPT [ARGS...]`` (also ``python -m jaxlite doctor``): runs a program
with jaxlite instrumented, then reports what cost time and memory, and the chapter's
pitfalls (section 3.5) it fell into, each with its source line and the fix:

- ``.at[]`` results freed without ever being read (R5.1: the update was lost);
- functions run eagerly, op by op, on every step, and host data copied implicitly on every
  use (R5.2: jit the function, ``device_put`` the data once);
- jitted functions compiling again and again, with the argument that changed and the
  padding buckets that would have bounded the compiles (R5.3);
- Python loops whose every iteration allocates arrays that stay alive (R2.4).

It also tabulates, per source line, eager operations, transfers (per device pair and
direction) and allocations, peak memory per device, and each jitted function's calls,
compiles and cache misses.  ``--json FILE`` writes the report as JSON, ``--html FILE`` as
one self-contained page (memory over time per device, a compile timeline, transfers per
device pair).

Layer: tools.  The program runs in this process (``runpy``, with ``sys.argv`` set) so that
jaxlite's ``monitoring`` events reach the doctor's listener; with no listener registered
those events are never built (one list test at each producer).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import runpy
import sys
import time
import traceback

from . import _doctor_record, _doctor_report

HELP = "run a Python program with jaxlite instrumented and report its pitfalls and costs"


def add_arguments(parser) -> None:
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    parser.add_argument("--html", metavar="FILE",
                        help="also write the report as one self-contained HTML page")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only the findings, not the tables")
    parser.add_argument("script", help="the Python program to run")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments passed to the program (its sys.argv[1:])")


def _run_script(path: str, argv: list) -> dict:
    """Runs ``path`` as ``__main__`` with ``sys.argv = [path] + argv`` and its directory
    first on ``sys.path``; returns the status (never raises for the program's errors)."""
    status = {"ok": True, "exit_code": 0, "error": None, "error_summary": ""}
    old_argv, old_path0 = sys.argv, list(sys.path)
    sys.argv = [path] + list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code not in (None, 0):
            status.update(ok=False, exit_code=code if isinstance(code, int) else 1,
                          error=f"SystemExit({code!r})", error_summary=f"exit {code!r}")
    except BaseException as e:  # noqa: BLE001 -- report it; KeyboardInterrupt included
        if isinstance(e, KeyboardInterrupt):
            status["interrupted"] = True
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        status.update(ok=False, exit_code=1, error=tb,
                      error_summary=f"{type(e).__name__}: {e}".splitlines()[0][:200])
        e.__traceback__ = None   # free the program's frames (and its arrays)
        del e
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path0
    return status


def diagnose(script: str, argv=(), *, stream=None) -> dict:
    """Runs ``script`` (a path) with ``argv`` under the doctor and returns the report dict.

    The program's output goes to ``sys.stdout`` as usual; a traceback of an error it
    raised to ``stream`` (default ``sys.stderr``).  Keys of the report: ``script``,
    ``argv``, ``status`` (``ok``, ``exit_code``, ``error``), ``seconds``, ``findings``
    (each: ``requirement``, ``code``, ``file``, ``line``, ``source``, ``message``,
    ``fix``, ``count``), ``jit``, ``compile_timeline``, ``transfers``, ``eager``,
    ``memory`` (``devices``, ``lines``, ``loops``, ``timeline``), ``at``,
    ``annotations`` (``jaxlite.profiler`` annotations: ``kind``, ``name``, ``count``,
    ``seconds``, ``steps``, ``file``, ``line``), ``internal_errors``.

    Raises:
      FileNotFoundError: ``script`` does not exist.
    """
    import jaxlite
    from jaxlite import monitoring

    if not os.path.isfile(script):
        raise FileNotFoundError(f"jaxlite doctor: no such file: {script}")
    stream = sys.stderr if stream is None else stream
    gc.collect()
    devices = jaxlite.devices()
    for d in devices:
        d.reset_peak_memory()
    allocs0 = {str(d): d.memory_stats()["num_allocs"] for d in devices}
    rec = _doctor_record.Recorder(stop_code=_run_script.__code__)
    rec.sample_memory()
    monitoring.register_listener(rec)
    t0 = time.perf_counter()
    try:
        status = _run_script(script, argv)
        seconds = time.perf_counter() - t0
        gc.collect()   # frees the program's arrays: unread .at[] results are noticed here
    finally:
        monitoring.unregister_listener(rec)
    rec.sample_memory()
    still_alive = rec.close()
    mem_end = {}
    for d in devices:
        st = d.memory_stats()
        mem_end[str(d)] = {"peak_bytes_in_use": st["peak_bytes_in_use"],
                           "bytes_in_use": st["bytes_in_use"],
                           "num_allocs": st["num_allocs"] - allocs0[str(d)]}
    if status["error"]:
        stream.write(status["error"])
    return _doctor_report.build_report(rec, script=script, argv=list(argv), status=status,
                                       seconds=seconds, mem_end=mem_end,
                                       still_alive=still_alive)


def write_json(report: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, default=str)
        fh.write("\n")


def findings_text(report: dict) -> str:
    """Only the findings part of the text report."""
    text = _doctor_report.format_text(report)
    return text.split("\njitted functions:")[0] + "\n"


def demo_report(path, out=None) -> dict:
    """Runs ``path`` under the doctor with its own output hidden and prints the findings
    (how ``python -m jaxlite demo`` ends: the doctor on the chapter's pitfalls program).
    Returns the report."""
    import contextlib
    import io

    out = sys.stdout if out is None else out
    with contextlib.redirect_stdout(io.StringIO()):
        report = diagnose(str(path), stream=io.StringIO())
    rel = _doctor_report.rel(str(path))
    out.write(f"\n== jaxlite doctor {rel}  (the pitfalls it finds, each with its fix; run "
              f"`python -m jaxlite doctor {rel}` for the whole report, --html for a page)\n")
    for line in findings_text(report).splitlines()[1:]:
        out.write(("    " + line).rstrip() + "\n")
    return report


def run(args) -> int:
    """Runs the program, prints the report; exit status 2 for a missing script, else the
    program's own status (1 when it raised)."""
    try:
        report = diagnose(args.script, args.args)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    sys.stdout.flush()
    print("", file=sys.stdout)
    print("=" * 78)
    text = (findings_text(report) if getattr(args, "quiet", False)
            else _doctor_report.format_text(report))
    sys.stdout.write(text)
    if args.json:
        write_json(report, args.json)
        print(f"report written as JSON to {args.json}")
    if getattr(args, "html", None):
        from ._doctor_html import write_html
        write_html(report, args.html)
        print(f"report written as HTML to {args.html}")
    return int(report["status"]["exit_code"] or 0)
