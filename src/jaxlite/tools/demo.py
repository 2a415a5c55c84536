"""``python -m jaxlite demo``: runs the chapter's example programs (``examples/section_*.py``)
one section at a time, prints their output, and after each section what happened
underneath: compiles and why, transfers, eager operations, memory, warnings.

Layer: tools.  It watches jaxlite only through public means: ``jaxlite.monitoring`` events
("compile", "jit_call", "transfer", "eager_op", "collective"), ``jaxlite.transfer_stats()``,
``Device.memory_stats()`` and ``jaxlite.live_arrays()``.  Examples run in this process, as
module ``__main__``, so that their events reach the listener; once one has run, its
module's variables are dropped (its globals cleared, as Python does at exit) and what is
still in use is measured.  The two programs that need other processes run in them: the
several-device one in a Python with 4 CPU devices, the several-process one under
``jaxlite launch`` as 2 MPI processes; each process runs ``_demo_child.py``, which records
the program as here and writes what it saw as JSON for this process to read and print.
"""
from __future__ import annotations

import ast
import contextlib
import gc
import importlib.util
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
import types
import warnings
from collections import Counter
from pathlib import Path

HELP = "run the chapter's example programs and show what happened underneath"

_SECTION_RE = re.compile(r"section_(\d+)_(\d+)_\w*\.py$")
# Programs beyond the chapter's sections, run after them when the examples directory has
# them: (name for --section, file name).
_EXTRA_PROGRAMS = (("lessons", "device_lessons.py"), ("scan", "loop_vs_scan.py"),
                   ("digits", "train_digits.py"),
                   ("sharding", "sharded_training.py"),
                   ("processes", "multiprocess_training.py"))
# Programs that run in other processes (see the module docstring): file name -> (how,
# processes, CPU devices of each), as each program restarts or launches itself (the
# device count is read when jaxlite is imported, which the recording child does first)
_CHILD_RUNS = {"sharded_training.py": ("devices", 1, 4),
               "multiprocess_training.py": ("processes", 2, 2)}
_CHILD_SCRIPT = Path(__file__).resolve().with_name("_demo_child.py")
_CHILD_TIMEOUT = 300     # seconds: a child program (minutes at most on a slow machine)
_INDENT = "    "
_LABEL_W = 11


def add_arguments(parser) -> None:
    parser.add_argument("--section", "-s", action="append", metavar="N.M",
                        help="run only this section (e.g. 3.3, or lessons, scan, digits, "
                             "sharding, processes for the timed lessons on the default "
                             "device, the loop vs lax.scan, digits-training, "
                             "several-device and several-process programs); may be "
                             "repeated")
    parser.add_argument("--examples", metavar="DIR",
                        help="directory holding section_*.py (default: the repository's "
                             "examples/)")


# ---- finding the examples -------------------------------------------------------------

def find_examples_dir(explicit: str | None = None) -> Path:
    """The directory of the example programs: ``explicit``, else ``examples/`` of the
    source checkout this module lives in, else ``./examples``.

    Raises:
      FileNotFoundError: none of these holds a ``section_*.py``.
    """
    if explicit:
        candidates = [Path(explicit)]
    else:
        # src/jaxlite/tools/demo.py -> the repository root is three levels above tools/
        candidates = [Path(__file__).resolve().parents[3] / "examples",
                      Path.cwd() / "examples"]
    for c in candidates:
        if c.is_dir() and any(c.glob("section_*.py")):
            return c
    raise FileNotFoundError(
        "no example programs (section_*.py) in " + " or ".join(str(c) for c in candidates) +
        "; run from a jaxlite checkout or pass --examples DIR")


def discover(examples_dir: Path) -> list[tuple[str, str, Path]]:
    """``[(section, title, path)]`` for every ``section_<a>_<b>_*.py``, in section order,
    then the extra programs (``loop_vs_scan.py``, ``train_digits.py``) present there; the
    title is the first line of the program's docstring."""
    found = []
    for path in examples_dir.glob("section_*.py"):
        m = _SECTION_RE.search(path.name)
        if not m:
            continue
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        except SyntaxError:
            doc = ""
        title = doc.strip().splitlines()[0] if doc.strip() else path.stem
        found.append(((int(m.group(1)), int(m.group(2))), title, path))
    found.sort()
    extras = [(name, _title(examples_dir / file), examples_dir / file)
              for name, file in _EXTRA_PROGRAMS if (examples_dir / file).is_file()]
    return [(f"{a}.{b}", title, path) for (a, b), title, path in found] + extras


def _title(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        doc = ""
    return doc.strip().splitlines()[0] if doc.strip() else path.stem


# ---- formatting helpers ---------------------------------------------------------------

def fmt_bytes(n: int) -> str:
    """``1536`` -> ``'1.5 KB'`` (decimal units, as memory tools print them)."""
    n = int(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


class _Prefixed(io.TextIOBase):
    """A text stream writing through to ``out`` with ``prefix`` at the start of each line;
    keeps the lines it wrote (for spotting "skipped:" notes)."""

    def __init__(self, out, prefix: str):
        self._out = out
        self._prefix = prefix
        self._at_line_start = True
        self._current = []
        self.lines: list[str] = []

    def writable(self):
        return True

    def write(self, s: str) -> int:
        for piece in s.splitlines(keepends=True):
            if self._at_line_start:
                self._out.write(self._prefix)
            self._out.write(piece)
            self._current.append(piece)
            self._at_line_start = piece.endswith("\n")
            if self._at_line_start:
                self.lines.append("".join(self._current).rstrip("\n"))
                self._current = []
        return len(s)

    def flush(self):
        self._out.flush()

    def finish(self):
        if not self._at_line_start:
            self._out.write("\n")
            self.lines.append("".join(self._current))
            self._current = []
            self._at_line_start = True


def _row(label: str, text: str) -> str:
    return f"{_INDENT}{label:<{_LABEL_W}} {text}"


def _cont(text: str) -> str:
    return f"{_INDENT}{'':<{_LABEL_W}} {text}"


# ---- one section ----------------------------------------------------------------------

class SectionResult:
    """What one example did: its events, transfers, memory, warnings and outcome.  A
    program run as several processes has one result per process in ``parts``, each
    with its label (``"process 0"``, ...).

    ``events``: ``(kind, dict)`` of the kinds the demo prints ("compile", with the number
    of ``calls`` of that program and its ``collectives``; "transfer"; "eager_op";
    "collective": one across processes), plain values only (JSON can carry them).
    ``warnings``: ``(category name, message, file, line)``.  ``memory``: per device,
    ``(device, stats at the end, peak bytes, buffers allocated, bytes in use once the
    program's variables are dropped)``; ``live_after``: the arrays still alive then."""

    def __init__(self):
        self.ok = True
        self.error = ""
        self.seconds = 0.0
        self.events: list = []
        self.warnings: list = []
        self.transfers: dict = {}
        self.memory: list = []
        self.live_arrays = 0
        self.live_after = 0
        self.skipped: list[str] = []
        self.parts: list = []          # [(label, SectionResult)] of several processes

    def each(self) -> list:
        """This result's own processes' results: itself, or its parts."""
        return [r for _, r in self.parts] if self.parts else [self]

    def count(self, kind: str) -> int:
        return sum(1 for r in self.each() for k, _ in r.events if k == kind)

    def to_json(self) -> dict:
        return {"ok": self.ok, "error": self.error, "seconds": self.seconds,
                "events": self.events, "warnings": self.warnings,
                "transfers": [[src, dst, s["count"], s["bytes"]]
                              for (src, dst), s in self.transfers.items()],
                "memory": [[repr(d) if not isinstance(d, str) else d, end, peak, allocs,
                            after] for d, end, peak, allocs, after in self.memory],
                "live_arrays": self.live_arrays, "live_after": self.live_after,
                "skipped": self.skipped}

    @classmethod
    def from_json(cls, data: dict) -> "SectionResult":
        res = cls()
        for name in ("ok", "error", "seconds", "live_arrays", "live_after", "skipped"):
            setattr(res, name, data[name])
        res.events = [(k, d) for k, d in data["events"]]
        res.warnings = [tuple(w) for w in data["warnings"]]
        res.transfers = {(src, dst): {"count": n, "bytes": b}
                         for src, dst, n, b in data["transfers"]}
        res.memory = [tuple(m) for m in data["memory"]]
        return res


def _digest(events: list) -> list:
    """The events the demo prints, as plain values: the "compile" events with how often
    each program ran (its "jit_call" events) and the collectives its body calls, the
    "transfer", "eager_op" and "collective" events with the fields printed."""
    calls = Counter((d.get("fun_id"), d.get("key")) for k, d in events if k == "jit_call")
    out = []
    for kind, d in events:
        if kind == "compile":
            out.append((kind, {
                "fun": d["fun"], "signature": d["signature"], "reason": d["reason"],
                "statics": d.get("statics", "[]"), "trace_seconds": d["trace_seconds"],
                "compile_seconds": d["compile_seconds"],
                "calls": calls.get((d.get("fun_id"), d.get("key")), 0),
                "collectives": [list(c) for c in d.get("collectives", ())]}))
        elif kind == "transfer":
            out.append((kind, {"src": d["src"], "dst": d["dst"],
                               "explicit": bool(d["explicit"])}))
        elif kind == "eager_op":
            out.append((kind, {"primitive": d["primitive"]}))
        elif kind == "collective":
            out.append((kind, {"kind": d["kind"], "bytes": int(d["bytes"]),
                               "processes": int(d["processes"])}))
    return out


def _transfer_delta(before: dict, after: dict) -> dict:
    out = {}
    for pair, s in after.items():
        b = before.get(pair, {"count": 0, "bytes": 0})
        if s["count"] != b["count"]:
            out[pair] = {"count": s["count"] - b["count"], "bytes": s["bytes"] - b["bytes"]}
    return out


def _exec_program(path: Path, module: types.ModuleType) -> None:
    """Runs the Python file ``path`` in ``module`` (named ``__main__``), as ``python path``
    runs it (``doctor.exec_main``)."""
    from .doctor import exec_main
    exec_main(str(path.resolve()), module)


def run_section(path: Path, out, prefix: str = _INDENT + "| ",
                fresh: bool = False) -> SectionResult:
    """Runs one example program in this process, its output on ``out`` with ``prefix``
    before each line, and records what happened underneath.  Never raises for an error
    of the example: the traceback is printed and ``ok`` is False.

    Then drops the program's variables (clears its module's globals: a function of it
    that something still holds, e.g. a compiled program's cache entry, would otherwise
    keep them all alive) and measures the memory still in use and the arrays alive.

    ``fresh``: this process has run nothing yet and the program must make the devices
    itself (``jax.distributed.initialize()`` comes first): they are not asked for before
    it runs, and its counts start from zero."""
    import jaxlite
    from jaxlite import monitoring

    res = SectionResult()
    gc.collect()
    devices = [] if fresh else jaxlite.devices()
    for d in devices:
        d.reset_peak_memory()
    mem0 = {d: d.memory_stats() for d in devices}
    xfer0 = {} if fresh else jaxlite.transfer_stats()
    stream = _Prefixed(out, prefix)
    module = types.ModuleType("__main__")
    old_argv = sys.argv
    sys.argv = [str(path)]
    t0 = time.perf_counter()
    try:
        with monitoring.record() as events, \
                warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(stream):
            warnings.simplefilter("always")
            try:
                _exec_program(path, module)
            except (Exception, SystemExit) as e:  # report it, go on with the next section
                if not (isinstance(e, SystemExit) and e.code in (None, 0)):
                    res.ok = False
                    res.error = "".join(traceback.format_exception(type(e), e, e.__traceback__))
                e.__traceback__ = None   # its frames hold the program's arrays
                del e
    finally:
        sys.argv = old_argv
    res.seconds = time.perf_counter() - t0
    stream.finish()
    res.events = _digest(events)
    del events
    res.warnings = [(w.category.__name__, str(w.message), str(w.filename), w.lineno)
                    for w in caught]
    del caught
    res.skipped = [ln.strip()[len("skipped:"):].strip() for ln in stream.lines
                   if ln.strip().startswith("skipped:")]
    res.transfers = _transfer_delta(xfer0, jaxlite.transfer_stats())
    res.live_arrays = len(jaxlite.live_arrays())
    if fresh:   # every process's devices: other processes' allocate nothing here (after
        devices = jaxlite.devices()     # distributed.shutdown() this is process 0 again)
    at_end = {d: d.memory_stats() for d in devices}
    module.__dict__.clear()      # the program's variables, dropped
    del module
    gc.collect()
    res.live_after = len(jaxlite.live_arrays())
    for d in devices:
        s0, s1 = mem0.get(d, {"num_allocs": 0}), at_end[d]
        res.memory.append((d, s1, s1["peak_bytes_in_use"], s1["num_allocs"] - s0["num_allocs"],
                           d.memory_stats()["bytes_in_use"]))
    return res


def _child_env(extra: dict) -> dict:
    """This environment for a child process, with this jaxlite importable first."""
    import jaxlite
    src = str(Path(jaxlite.__file__).resolve().parents[1])
    paths = [src] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths), **extra)


def run_section_in_child(path: Path, how: tuple, out) -> SectionResult | None:
    """Runs ``path`` in other processes (``how``: ``("devices", 1, k)``, one process with
    k CPU devices; ``("processes", n, k)``, n MPI processes of k CPU devices each under
    ``jaxlite launch``), its output indented on ``out``; each process records the
    program (``run_section``) and writes its result as JSON, read back here.  Returns
    None where the processes cannot be started (no MPI): the program then runs in this
    process (and says what is missing)."""
    from . import launch

    kind, n, n_devices = how
    with tempfile.TemporaryDirectory(prefix="jaxlite-demo-") as tmp:
        report = os.path.join(tmp, "report")
        child = [str(_CHILD_SCRIPT), report, str(path)]
        # the programs shard over virtual CPU devices; and an accelerator this process
        # holds cannot be opened by another (libtpu's lockfile)
        env = _child_env({"JAX_NUM_CPU_DEVICES": str(n_devices), "JAX_PLATFORMS": "cpu"})
        if kind == "devices":
            cmd = [sys.executable, *child]
        else:
            if importlib.util.find_spec("mpi4py") is None or launch.find_mpiexec() is None:
                return None
            cmd = [sys.executable, "-m", "jaxlite", "launch", "-n", str(n), "--timeout",
                   str(_CHILD_TIMEOUT), *child]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=_CHILD_TIMEOUT + 60)
            stdout, stderr, status = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
            stderr, status = f"timed out after {e.timeout} s\n", None
        seconds = time.perf_counter() - t0
        stream = _Prefixed(out, _INDENT + "| ")
        stream.write(stdout)
        stream.finish()
        names = [f"{report}.json"] if kind == "devices" else \
            [f"{report}.{rank}.json" for rank in range(n)]
        parts = []
        for name in names:
            try:
                with open(name, encoding="utf-8") as fh:
                    parts.append(SectionResult.from_json(json.load(fh)))
            except (OSError, ValueError, KeyError):
                parts.append(None)
    res = parts[0] if kind == "devices" and parts[0] is not None else SectionResult()
    if kind == "processes":
        res.parts = [(f"process {rank}", r) for rank, r in enumerate(parts)
                     if r is not None]
        res.skipped = [s for _, r in res.parts for s in r.skipped]
    res.seconds = seconds
    bad = [r for r in parts if r is None or not r.ok]
    if status != 0 or bad:
        res.ok = False
        errors = [r.error for r in parts if r is not None and r.error]
        res.error = errors[0] if errors else (
            f"the program's processes ended with status {status}:\n{stderr[-4000:]}")
    return res


def underneath(res: SectionResult) -> list[str]:
    """The "what happened underneath" lines of one section (of each of its processes,
    for a program run as several)."""
    lines = [f"{_INDENT}underneath ({fmt_ms(res.seconds)}):"]
    if not res.parts:
        return lines + _rows(res)
    for label, part in res.parts:
        lines.append(f"{_INDENT}{label}:")
        lines += _rows(part)
    return lines


def _rows(res: SectionResult) -> list[str]:
    lines = []
    # memory, per device that did anything
    for d, end, peak, allocs, after in res.memory:
        if allocs == 0 and end["bytes_in_use"] == after:
            continue
        name = d if isinstance(d, str) else repr(d)
        lines.append(_row("memory", f"{name}: peak {fmt_bytes(peak)}; at the end "
                                    f"{fmt_bytes(end['bytes_in_use'])} in use "
                                    f"({_plural(res.live_arrays, 'live array')}); "
                                    f"{_plural(allocs, 'buffer')} allocated"))
        lines.append(_cont(f"{fmt_bytes(after)} in use once the program's variables "
                           f"are dropped ({_plural(res.live_after, 'live array')})"))

    # compiles, each with its reason
    compiles = [d for k, d in res.events if k == "compile"]
    if not compiles:
        lines.append(_row("compiles", "none"))
    width = max((len(_compile_name(c)) for c in compiles), default=0)
    for i, c in enumerate(compiles):
        text = (f"{_compile_name(c):<{width}}  {c['reason']}  (trace "
                f"{fmt_ms(c['trace_seconds'])}, compile {fmt_ms(c['compile_seconds'])})")
        lines.append(_row("compiles", text) if i == 0 else _cont(text))

    # collectives: those the compiled programs call (on every call), those that crossed
    # processes (each one MPI exchange)
    texts = []
    for c in compiles:
        if c.get("collectives") and c.get("calls"):
            kinds = Counter(kind for kind, _ in c["collectives"])
            per_call = sum(b for _, b in c["collectives"])
            texts.append(f"{c['fun']}: {_plural(c['calls'], 'call')} x "
                         f"{len(c['collectives'])} ("
                         + ", ".join(f"{k} x{n}" for k, n in kinds.most_common())
                         + f"), {fmt_bytes(per_call)} per device per call")
    crossing = [d for k, d in res.events if k == "collective"]
    if crossing:
        kinds = Counter(d["kind"] for d in crossing)
        texts.append(f"across {crossing[0]['processes']} processes: {len(crossing)} ("
                     + ", ".join(f"{k} x{n}" for k, n in kinds.most_common())
                     + f"), {fmt_bytes(sum(d['bytes'] for d in crossing))} from this "
                       f"process")
    for i, text in enumerate(texts or ["none"]):
        lines.append(_row("collectives", text) if i == 0 else _cont(text))

    # transfers: totals from transfer_stats(), explicit/implicit from the events
    if not res.transfers:
        lines.append(_row("transfers", "none"))
    kinds = Counter((e["src"], e["dst"], e["explicit"]) for k, e in res.events
                    if k == "transfer")
    for i, ((src, dst), s) in enumerate(sorted(res.transfers.items())):
        n_exp, n_imp = kinds[(src, dst, True)], kinds[(src, dst, False)]
        split = []
        if n_exp:
            split.append(f"{n_exp} explicit")
        if n_imp:
            split.append(f"{n_imp} implicit")
        text = (f"{src} -> {dst}: {s['count']} ({', '.join(split) or 'untracked'}), "
                f"{fmt_bytes(s['bytes'])}")
        lines.append(_row("transfers", text) if i == 0 else _cont(text))

    # eager (unjitted) operations, most frequent first
    ops = Counter(e["primitive"] for k, e in res.events if k == "eager_op")
    if ops:
        top = ", ".join(f"{name} x{n}" for name, n in ops.most_common(6))
        more = "" if len(ops) <= 6 else f", ... ({len(ops) - 6} more kinds)"
        lines.append(_row("eager ops", f"{sum(ops.values())} dispatched one by one: "
                                       f"{top}{more}"))
    else:
        lines.append(_row("eager ops", "none"))

    seen = set()
    for category, message, filename, lineno in res.warnings:
        key = (category, message)
        if key in seen:
            continue
        seen.add(key)
        text = f"{category} ({Path(filename).name}:{lineno}): {message}"
        lines.append(_row("warnings", text) if len(seen) == 1 else _cont(text))

    for i, s in enumerate(res.skipped):
        lines.append(_row("pending", s) if i == 0 else _cont(s))
    return lines


def _compile_name(c: dict) -> str:
    statics = c.get("statics", "[]")
    extra = "" if statics in ("[]", "", None) else f"; static {statics}"
    return f"{c['fun']}({c['signature']}{extra})"


# ---- the command ----------------------------------------------------------------------

def run(args) -> int:
    """Runs the selected sections; returns 0 when every program ran without error."""
    import numpy as np
    import jaxlite

    out = sys.stdout
    try:
        examples_dir = find_examples_dir(getattr(args, "examples", None))
    except FileNotFoundError as e:
        print(f"jaxlite demo: {e}", file=sys.stderr)
        return 2
    sections = discover(examples_dir)
    wanted = getattr(args, "section", None)
    if wanted:
        unknown = sorted(set(wanted) - {s for s, _, _ in sections})
        if unknown:
            print(f"jaxlite demo: unknown section(s) {', '.join(unknown)}; available: "
                  f"{', '.join(s for s, _, _ in sections)}", file=sys.stderr)
            return 2
        sections = [s for s in sections if s[0] in wanted]

    print(f"jaxlite {jaxlite.__version__} demo -- chapter 3: jnp.array, device memory, jit")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}; backend "
          f"{jaxlite.default_backend()}; devices {jaxlite.devices()}")
    print(f"examples: {examples_dir} ({_plural(len(sections), 'program')})")

    results = []
    for section, title, path in sections:
        print()
        print(f"== {title}")
        print(f"{_INDENT}({path.name})")
        how = _CHILD_RUNS.get(path.name)
        res = run_section_in_child(path, how, out) if how else None
        if res is None:
            res = run_section(path, out)
        results.append(res)
        if not res.ok:
            print(_INDENT + "FAILED:")
            for ln in res.error.rstrip().splitlines():
                print(_INDENT + "  " + ln)
        for ln in underneath(res):
            print(ln)
        out.flush()

    n_ok = sum(r.ok for r in results)
    n_compiles = sum(r.count("compile") for r in results)
    n_ops = sum(r.count("eager_op") for r in results)
    each = [p for r in results for p in r.each()]
    n_xfer = sum(s["count"] for r in each for s in r.transfers.values())
    xfer_bytes = sum(s["bytes"] for r in each for s in r.transfers.values())
    peak = max((p for r in each for _, _, p, _, _ in r.memory), default=0)
    print()
    print(f"== summary: {n_ok} of {_plural(len(results), 'program')} ran; "
          f"{_plural(n_compiles, 'compile')}, {_plural(n_xfer, 'transfer')} "
          f"({fmt_bytes(xfer_bytes)}), {_plural(n_ops, 'eager op')}, "
          f"peak memory {fmt_bytes(peak)}")
    pending = [s for r in results for s in r.skipped]
    if pending:
        print(f"{_INDENT}{len(pending)} part(s) skipped until jaxlite has what they need "
              f"(see 'pending' above)")
    if jaxlite.config.jaxlite_backend == "cpu":
        # hot programs finish their native build, so the next demo run loads them
        from ..backends.cpu import _tiered
        print(_INDENT + _tiered.summary(timeout=300))
    pjrt_cache = sys.modules.get("jaxlite.backends.pjrt._cache")
    if pjrt_cache is not None and any(pjrt_cache.stats().values()):
        # programs ran on a PJRT device: compiled here vs loaded from the persistent cache
        print(_INDENT + pjrt_cache.summary())
    pitfalls = [p for s, _, p in sections if s == "3.5"]
    if pitfalls:   # end with what `jaxlite doctor` says about the chapter's pitfalls
        from .doctor import demo_report
        demo_report(pitfalls[0])
    return 0 if n_ok == len(results) else 1
