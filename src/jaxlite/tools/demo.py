"""``python -m jaxlite demo``: runs the chapter's example programs (``examples/section_*.py``)
one section at a time, prints their output, and after each section what happened
underneath: compiles and why, transfers, eager operations, memory, warnings.

Layer: tools.  It watches jaxlite only through public means: ``jaxlite.monitoring`` events
("compile", "transfer", "eager_op"), ``jaxlite.transfer_stats()``, ``Device.memory_stats()``
and ``jaxlite.live_arrays()``.  Examples run in this process (``runpy``), so that their
events reach the listener.
"""
from __future__ import annotations

import ast
import contextlib
import gc
import io
import platform
import re
import runpy
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

HELP = "run the chapter's example programs and show what happened underneath"

_SECTION_RE = re.compile(r"section_(\d+)_(\d+)_\w*\.py$")
# Programs beyond the chapter's sections, run after them when the examples directory has
# them: (name for --section, file name).
_EXTRA_PROGRAMS = (("scan", "loop_vs_scan.py"), ("digits", "train_digits.py"),
                   ("sharding", "sharded_training.py"),
                   ("processes", "multiprocess_training.py"))
_INDENT = "    "
_LABEL_W = 11


def add_arguments(parser) -> None:
    parser.add_argument("--section", "-s", action="append", metavar="N.M",
                        help="run only this section (e.g. 3.3, or scan, digits, sharding, "
                             "processes for the loop vs lax.scan, digits-training, "
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
    """What one example did: its events, transfers, memory, warnings and outcome."""

    def __init__(self):
        self.ok = True
        self.error = ""
        self.seconds = 0.0
        self.events: list = []
        self.warnings: list = []
        self.transfers: dict = {}
        self.memory: list = []   # (device, stats at end, peak, allocs, in use after cleanup)
        self.live_arrays = 0
        self.skipped: list[str] = []

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)


def _transfer_delta(before: dict, after: dict) -> dict:
    out = {}
    for pair, s in after.items():
        b = before.get(pair, {"count": 0, "bytes": 0})
        if s["count"] != b["count"]:
            out[pair] = {"count": s["count"] - b["count"], "bytes": s["bytes"] - b["bytes"]}
    return out


def run_section(path: Path, out) -> SectionResult:
    """Runs one example program in this process, its output indented on ``out``, and
    records what happened underneath.  Never raises for an error of the example: the
    traceback is printed and ``ok`` is False."""
    import jaxlite
    from jaxlite import monitoring

    res = SectionResult()
    devices = jaxlite.devices()
    for d in devices:
        d.reset_peak_memory()
    mem0 = {d: d.memory_stats() for d in devices}
    xfer0 = jaxlite.transfer_stats()
    stream = _Prefixed(out, _INDENT + "| ")
    globs = {}
    old_argv = sys.argv
    sys.argv = [str(path)]
    t0 = time.perf_counter()
    try:
        with monitoring.record() as events, \
                warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(stream):
            warnings.simplefilter("always")
            try:
                globs = runpy.run_path(str(path), run_name="__main__")
            except (Exception, SystemExit) as e:  # report it, go on with the next section
                if not (isinstance(e, SystemExit) and e.code in (None, 0)):
                    res.ok = False
                    res.error = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    finally:
        sys.argv = old_argv
    res.seconds = time.perf_counter() - t0
    stream.finish()
    res.events = list(events)
    res.warnings = list(caught)
    res.skipped = [ln.strip()[len("skipped:"):].strip() for ln in stream.lines
                   if ln.strip().startswith("skipped:")]
    res.transfers = _transfer_delta(xfer0, jaxlite.transfer_stats())
    res.live_arrays = len(jaxlite.live_arrays())
    at_end = {d: d.memory_stats() for d in devices}
    del globs
    gc.collect()
    for d in devices:
        s0, s1 = mem0[d], at_end[d]
        res.memory.append((d, s1, s1["peak_bytes_in_use"], s1["num_allocs"] - s0["num_allocs"],
                           d.memory_stats()["bytes_in_use"]))
    return res


def underneath(res: SectionResult) -> list[str]:
    """The "what happened underneath" lines of one section."""
    lines = [f"{_INDENT}underneath ({fmt_ms(res.seconds)}):"]

    # memory, per device that did anything
    for d, end, peak, allocs, after in res.memory:
        if allocs == 0 and end["bytes_in_use"] == after:
            continue
        lines.append(_row("memory", f"{d!r}: peak {fmt_bytes(peak)}; at the end "
                                    f"{fmt_bytes(end['bytes_in_use'])} in use "
                                    f"({_plural(res.live_arrays, 'live array')}); "
                                    f"{_plural(allocs, 'buffer')} allocated"))
        lines.append(_cont(f"{fmt_bytes(after)} in use once the program's variables "
                           f"are dropped"))

    # compiles, each with its reason
    compiles = [d for k, d in res.events if k == "compile"]
    if not compiles:
        lines.append(_row("compiles", "none"))
    width = max((len(_compile_name(c)) for c in compiles), default=0)
    for i, c in enumerate(compiles):
        text = (f"{_compile_name(c):<{width}}  {c['reason']}  (trace "
                f"{fmt_ms(c['trace_seconds'])}, compile {fmt_ms(c['compile_seconds'])})")
        lines.append(_row("compiles", text) if i == 0 else _cont(text))

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
    for w in res.warnings:
        key = (w.category, str(w.message))
        if key in seen:
            continue
        seen.add(key)
        text = f"{w.category.__name__} ({Path(w.filename).name}:{w.lineno}): {w.message}"
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
    n_xfer = sum(s["count"] for r in results for s in r.transfers.values())
    xfer_bytes = sum(s["bytes"] for r in results for s in r.transfers.values())
    peak = max((p for r in results for _, _, p, _, _ in r.memory), default=0)
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
    pitfalls = [p for s, _, p in sections if s == "3.5"]
    if pitfalls:   # end with what `jaxlite doctor` says about the chapter's pitfalls
        from .doctor import demo_report
        demo_report(pitfalls[0])
    return 0 if n_ok == len(results) else 1
