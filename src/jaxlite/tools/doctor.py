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

SCRIPT is a Python file, or a directory holding a ``__main__.py`` (run as ``python DIR``
runs it).  Before the program runs, SCRIPT must be a regular file (a named pipe or a device
is refused, never opened) and each output path must be writable (its directory exists and
is writable, the path is not a directory); otherwise the doctor prints an error naming the
path and exits with status 2, having run nothing.  When the program raises, its traceback
shows the program's frames only, as ``python SCRIPT`` shows it; the report is still
printed and written.  Exit status: the program's own (1 when it raised; ``sys.exit(N)``
gives N, ``sys.exit("message")`` prints the message and gives 1, as Python does), 2 for
those usage errors.

Layer: tools.  The program runs in this process (as ``__main__``, with ``sys.argv`` set) so that
jaxlite's ``monitoring`` events reach the doctor's listener; with no listener registered
those events are never built (one list test at each producer).
"""
from __future__ import annotations

import argparse
import builtins
import gc
import io
import json
import os
import stat
import sys
import time
import traceback
import types

from . import _doctor_record, _doctor_report, _paths

HELP = "run a Python program with jaxlite instrumented and report its pitfalls and costs"


def add_arguments(parser) -> None:
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    parser.add_argument("--html", metavar="FILE",
                        help="also write the report as one self-contained HTML page")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only the findings, not the tables")
    parser.add_argument("script", help="the Python program to run: a file, or a directory "
                                       "with a __main__.py")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments passed to the program (its sys.argv[1:])")
    parser.epilog = ("Exit status: the program's own (1 when it raised); 2 for usage errors, "
                     "found before the program runs: SCRIPT missing, not a regular file (a "
                     "named pipe, a device) or a directory without __main__.py, or a --json/"
                     "--html path that is a directory or whose directory does not exist or "
                     "is not writable.")


def _user_traceback(tb):
    """``tb`` without its leading frames from the doctor (the runner and ``exec_main``):
    the traceback starts at the program's first frame, as for ``python script.py``
    (None for an error raised before any of the program ran, e.g. a syntax error)."""
    while tb is not None and tb.tb_frame.f_globals.get("__name__") == __name__:
        tb = tb.tb_next
    return tb


def resolve_script(path: str) -> str:
    """Checks what ``path`` names, without opening it, and returns what to run: ``path``
    itself, a regular file or a directory whose ``__main__.py`` is one.

    Raises:
      FileNotFoundError: ``path`` does not exist.
      IsADirectoryError: ``path`` is a directory without ``__main__.py``.
      ValueError: ``path`` (or its ``__main__.py``) is a named pipe, a device or a socket.
      PermissionError: the file is not readable.
      OSError: ``path`` cannot be examined.
    """
    st = _paths.stat_or_error(path)
    if stat.S_ISDIR(st.st_mode):
        main = os.path.join(path, "__main__.py")
        try:
            _paths.check_readable_file(main)
        except FileNotFoundError:
            raise IsADirectoryError(f"{path} is a directory without __main__.py; give a "
                                    f"script or a directory with __main__.py") from None
        except IsADirectoryError:
            raise IsADirectoryError(f"{path} is a directory whose __main__.py is a "
                                    f"directory; give a script or a directory with a "
                                    f"__main__.py file") from None
        return path
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is {_paths.kind(st)}, not a regular file; give a Python "
                         f"script or a directory with __main__.py")
    _paths.check_readable_file(path)
    return path


def exec_main(filename: str, module: types.ModuleType | None = None) -> None:
    """Runs the Python file ``filename`` (absolute) as module ``__main__``, as ``python
    script.py`` does: ``__file__`` and the code's file name absolute (what tracebacks
    show), ``sys.argv`` left as the caller set it (``runpy.run_path`` would overwrite
    ``sys.argv[0]``), none of the caller's ``__future__`` flags inherited.  ``module``: the
    module to run it in (the demo keeps it, to clear its globals afterwards), by default
    a new one; it stands in for ``sys.modules["__main__"]`` while the file runs."""
    with io.open_code(filename) as fh:     # bytes: compile() honours a coding line
        source = fh.read()
    code = compile(source, filename, "exec", dont_inherit=True)
    if module is None:
        module = types.ModuleType("__main__")
    module.__dict__.update(__file__=filename, __cached__=None, __loader__=None,
                           __package__=None, __spec__=None, __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is None:
            del sys.modules["__main__"]
        else:
            sys.modules["__main__"] = saved


def _run_script(path: str, argv: list) -> dict:
    """Runs ``path`` as ``__main__`` with ``sys.argv = [path] + argv`` and its directory
    (for a directory: itself) first on ``sys.path``; returns the status (never raises for
    the program's errors; ``error`` holds the traceback of its frames only)."""
    status = {"ok": True, "exit_code": 0, "error": None, "error_summary": ""}
    old_argv, old_path0 = sys.argv, list(sys.path)
    sys.argv = [path] + list(argv)
    where = os.path.abspath(path)
    if os.path.isdir(where):   # `python DIR`: DIR first on sys.path, DIR/__main__.py runs
        sys.path.insert(0, where)
        where = os.path.join(where, "__main__.py")
    else:
        sys.path.insert(0, os.path.dirname(where))
    try:
        exec_main(where)
    except SystemExit as e:
        # as Python ends on it: None or 0 a success; a whole number the exit status,
        # printing nothing; anything else printed to stderr, and status 1
        code = e.code
        if code is not None and code is not False and code != 0:
            if isinstance(code, int):
                status.update(ok=False, exit_code=int(code), error_summary=f"exit {code!r}")
            else:
                status.update(ok=False, exit_code=1, error=str(code),
                              error_summary=f"exit {code!r}"[:200])
    except BaseException as e:  # noqa: BLE001 -- report it; KeyboardInterrupt included
        if isinstance(e, KeyboardInterrupt):
            status["interrupted"] = True
        tb = "".join(traceback.format_exception(type(e), e,
                                                _user_traceback(e.__traceback__)))
        status.update(ok=False, exit_code=1, error=tb,
                      error_summary=f"{type(e).__name__}: {e}".splitlines()[0][:200])
        e.__traceback__ = None   # free the program's frames (and its arrays)
        del e
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path0
    return status


def diagnose(script: str, argv=(), *, stream=None) -> dict:
    """Runs ``script`` (a path: a Python file, or a directory with a ``__main__.py``) with
    ``argv`` under the doctor and returns the report dict.

    The program's output goes to ``sys.stdout`` as usual; a traceback of an error it
    raised to ``stream`` (default ``sys.stderr``).  Keys of the report: ``script``,
    ``argv``, ``status`` (``ok``, ``exit_code``, ``error``), ``seconds``, ``findings``
    (each: ``requirement``, ``code``, ``file``, ``line``, ``source``, ``message``,
    ``fix``, ``count``), ``jit``, ``compile_timeline``, ``transfers``, ``eager``,
    ``memory`` (``devices``, ``lines``, ``loops``, ``timeline``), ``at``,
    ``annotations`` (``jaxlite.profiler`` annotations: ``kind``, ``name``, ``count``,
    ``seconds``, ``steps``, ``file``, ``line``), ``internal_errors``.

    Raises (before anything runs; see ``resolve_script``):
      FileNotFoundError: ``script`` does not exist.
      IsADirectoryError: ``script`` is a directory without ``__main__.py``.
      ValueError: ``script`` is a named pipe, a device or a socket (it is never opened).
      PermissionError: ``script`` is not readable.
    """
    import jaxlite
    from jaxlite import monitoring

    resolve_script(script)
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
        err = status["error"]
        stream.write(err if err.endswith("\n") else err + "\n")
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


def check_outputs(args) -> dict:
    """The report files asked for (``--json``, ``--html``), checked before the program runs:
    ``{option: absolute path}``.

    Raises:
      ValueError: a path is a directory, its directory does not exist or is not writable,
        an existing file is not writable, or two options name the same file.
    """
    outputs = {}
    for option, attr in (("--json", "json"), ("--html", "html")):
        path = getattr(args, attr, None)
        if path is not None:
            outputs[option] = _paths.check_output_path(path, option)
    if len(set(outputs.values())) < len(outputs):
        raise ValueError(f"--json and --html name the same file: {args.json}")
    return outputs


def run(args) -> int:
    """Checks the script and the output paths, runs the program, prints the report and
    writes the files asked for.  Exit status: 2 for a usage error found before the program
    runs (``resolve_script``, ``check_outputs``: the message names the path); else the
    program's own status (1 when it raised), or 1 when a report file could not be written
    after all."""
    try:
        resolve_script(args.script)
        outputs = check_outputs(args)
    except (OSError, ValueError) as e:
        print(f"jaxlite doctor: {e}", file=sys.stderr)
        return 2
    report = diagnose(args.script, args.args)
    status = int(report["status"]["exit_code"] or 0)
    sys.stdout.flush()
    print("", file=sys.stdout)
    print("=" * 78)
    text = (findings_text(report) if getattr(args, "quiet", False)
            else _doctor_report.format_text(report))
    sys.stdout.write(text)
    for option, path in outputs.items():
        shown = args.json if option == "--json" else args.html
        try:
            if option == "--json":
                write_json(report, path)
            else:
                from ._doctor_html import write_html
                write_html(report, path)
        except OSError as e:
            sys.stdout.flush()
            print(f"jaxlite doctor: cannot write the report ({option}) to {shown}: "
                  f"{e.strerror or e}", file=sys.stderr)
            status = status or 1
            continue
        print(f"report written as {option[2:].upper()} to {shown}")
    return status
