"""``jaxlite doctor``, part 1: the recorder.  A ``jaxlite.monitoring`` listener that turns
the events of one run ("compile", "jit_call", "eager_op", "transfer", "alloc", "read",
"at_update", and "annotation" from ``jaxlite.profiler``) into per-source-line tallies, a
memory timeline, the ``.at[]`` results never read and the annotations' times.

Layer: tools.  A source line is the user's: the stack is walked out of jaxlite's own
frames (and the standard library's and installed packages'), innermost first, stopping
at the doctor's runner.  Nothing here runs unless the doctor registered the listener.
"""
from __future__ import annotations

import ast
import os
import sys
import sysconfig
import time
import weakref
from collections import defaultdict

import jaxlite

_JAXLITE_DIR = os.path.dirname(os.path.abspath(jaxlite.__file__)) + os.sep
_LIBRARY_DIRS = tuple(sorted({os.path.abspath(p) + os.sep for p in (
    sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    if p}))
_MAX_DEPTH = 8          # user frames kept per event (innermost first)
_MAX_SAMPLES = 200_000  # memory timeline samples kept (then every other one is dropped)


class Site:
    """One user frame of an event: file, line, the enclosing function and the call
    instruction (``lasti``) inside the line."""

    __slots__ = ("file", "line", "func", "func_line", "lasti", "frame_id", "new_call")

    def __init__(self, frame):
        code = frame.f_code
        self.file = code.co_filename
        self.line = frame.f_lineno
        self.func = getattr(code, "co_qualname", code.co_name)
        self.func_line = code.co_firstlineno
        self.lasti = frame.f_lasti
        self.frame_id = id(frame)
        self.new_call = True

    @property
    def key(self):
        return (self.file, self.line)


class Recorder:
    """Collects one run's events.  ``stop_code``: the code object of the runner frame;
    the stack walk stops there (frames outside it belong to whoever ran the doctor)."""

    def __init__(self, stop_code=None):
        self.t0 = time.perf_counter()
        self.stop_code = stop_code
        self._user_code: dict = {}
        self.internal_errors: list = []
        # jit
        self.compiles: list = []       # dicts: fun, reason, signature, statics, t, seconds, site
        self.jit_calls: dict = {}      # id(wrapped) -> dict(name, wrapped ref info, keys, sites)
        self._pending_compiles = defaultdict(list)
        # eager ops: (file, line) -> dict
        self.eager_lines: dict = {}
        self.eager_total = 0
        # transfers
        self.transfer_pairs: dict = {}     # (src, dst, kind) -> [explicit n, implicit n, bytes]
        self.transfer_lines: dict = {}     # (file, line, kind, explicit) -> dict
        # memory
        self.alloc_lines: dict = {}        # (file, line) -> [count, bytes]
        self.loop_allocs: dict = {}        # (loop file, loop line, file, line) -> dict
        self.timeline: dict = defaultdict(list)   # device str -> [(t, bytes_in_use)]
        self.devices: dict = {}            # device str -> Device
        # .at[] results
        self._at_pending: dict = {}        # id -> [info, finalizer]
        self.at_unused: list = []          # info dicts of results freed unread
        self.at_count = 0
        self._loops_by_file: dict = {}
        self._finalizers: list = []
        # jaxlite.profiler annotations: (kind, name) -> dict; the spans, in order
        self.annotations: dict = {}
        self.annotation_spans: list = []

    # ---- the listener ---------------------------------------------------------------
    def __call__(self, kind, data):
        try:
            handler = getattr(self, "_on_" + kind, None)
            if handler is not None:
                handler(data)
        except Exception as e:   # never break the user's program for a doctor bug
            if len(self.internal_errors) < 20:
                self.internal_errors.append(f"{kind}: {type(e).__name__}: {e}")

    def now(self) -> float:
        return time.perf_counter() - self.t0

    # ---- stacks -----------------------------------------------------------------------
    def _is_user(self, code) -> bool:
        u = self._user_code.get(code)
        if u is None:
            f = code.co_filename
            absf = os.path.abspath(f) if not f.startswith("<") else f
            u = not (absf.startswith(_JAXLITE_DIR) or absf.startswith(_LIBRARY_DIRS)
                     or f.startswith("<frozen"))
            self._user_code[code] = u
        return u

    def stack(self, depth: int = _MAX_DEPTH, mark: str = "") -> list:
        """The user frames of the current event as Sites, innermost first.

        ``mark`` (an event kind): also tell whether this is the first event of that kind
        from this call of the innermost user line (``Site.new_call``).  The frame that
        line called (a jaxlite function) is tagged on its first event; later events of
        the same call find the tag.  The tag lives in the frame's ``f_trace`` slot, which
        nothing reads while no tracer (debugger, coverage) is installed; with one
        installed, every event counts as a new call.
        """
        out = []
        f = sys._getframe(2)
        child = None
        stop = self.stop_code
        while f is not None and len(out) < depth:
            code = f.f_code
            if code is stop:
                break
            if self._is_user(code):
                site = Site(f)
                if not out and mark:
                    site.new_call = _tag_call(child, mark)
                out.append(site)
            elif not out:
                child = f
            f = f.f_back
        del child, f
        return out

    def site(self):
        s = self.stack(1)
        return s[0] if s else None

    # ---- profiler annotations ---------------------------------------------------------
    def _on_annotation(self, d):
        """A ``TraceAnnotation``/``StepTraceAnnotation`` block (or an annotated function's
        call) ended: tally its time per name, keep the span for the timeline."""
        kind, name = d.get("kind", "trace"), str(d.get("name", "?"))
        secs = float(d.get("seconds", 0.0))
        a = self.annotations.get((kind, name))
        if a is None:
            site = self.stack(1)
            a = self.annotations[(kind, name)] = {
                "kind": kind, "name": name, "count": 0, "seconds": 0.0, "max_seconds": 0.0,
                "steps": [], "scope": "/".join(d.get("scope", ())),
                "site": site[0] if site else None}
        a["count"] += 1
        a["seconds"] += secs
        a["max_seconds"] = max(a["max_seconds"], secs)
        if d.get("step_num") is not None and len(a["steps"]) < 1000:
            a["steps"].append(d["step_num"])
        if len(self.annotation_spans) < _MAX_SAMPLES:
            start = float(d.get("start", 0.0)) - self.t0
            self.annotation_spans.append((kind, name, max(0.0, start), secs))

    # ---- jit ------------------------------------------------------------------------
    def _on_compile(self, d):
        site = self.stack(1)
        c = {"fun": d.get("fun", "?"), "reason": d.get("reason", ""),
             "signature": d.get("signature", ""), "statics": d.get("statics", "[]"),
             "trace_seconds": float(d.get("trace_seconds", 0.0)),
             "compile_seconds": float(d.get("compile_seconds", 0.0)),
             "t": self.now(), "site": site[0] if site else None, "jit_id": None}
        # the compile event comes just before that call's "jit_call" event
        t_end = c["t"]
        c["t"] = max(0.0, t_end - c["trace_seconds"] - c["compile_seconds"])
        self.compiles.append(c)
        self._pending_compiles[c["fun"]].append(c)

    def _on_jit_call(self, d):
        fid = d.get("fun_id")
        rec = self.jit_calls.get(fid)
        if rec is None:
            code = d.get("code")
            rec = self.jit_calls[fid] = {
                "name": d.get("fun", "?"),
                "defined": (code.co_filename, code.co_firstlineno) if code else None,
                "calls": 0, "keys": [], "compiles": [], "sites": {}}
        rec["calls"] += 1
        rec["keys"].append(d.get("key"))
        for c in self._pending_compiles.pop(rec["name"], ()):
            c["jit_id"] = fid
            rec["compiles"].append(c)
        s = self.site()
        if s is not None:
            rec["sites"][s.key] = rec["sites"].get(s.key, 0) + 1
        self._mark_read(d.get("arg_ids", ()))

    # ---- eager operations ---------------------------------------------------------------
    def _on_eager_op(self, d):
        self.eager_total += 1
        self._mark_read(d.get("arg_ids", ()))
        stack = self.stack(2, mark="eager_op")
        if not stack:
            return
        s = stack[0]
        rec = self.eager_lines.get(s.key)
        if rec is None:
            rec = self.eager_lines[s.key] = {
                "file": s.file, "line": s.line, "func": s.func, "func_line": s.func_line,
                "count": 0, "prims": defaultdict(int), "sites": {},
                "callers": {}, "in_loop": False}
        rec["count"] += 1
        prim = d.get("primitive", "?")
        rec["prims"][prim] += 1
        if s.new_call:
            rec["sites"][s.lasti] = rec["sites"].get(s.lasti, 0) + 1
            if len(stack) > 1:
                c = (stack[1].file, stack[1].line)
                rec["callers"][c] = rec["callers"].get(c, 0) + 1
        if not rec["in_loop"]:
            rec["in_loop"] = any(self.loop_of(x.file, x.line) for x in self.stack())

    # ---- transfers ------------------------------------------------------------------------
    def _on_transfer(self, d):
        kind = d.get("kind", "?")
        explicit = bool(d.get("explicit"))
        nbytes = int(d.get("nbytes", 0))
        key = (d.get("src", "?"), d.get("dst", "?"), kind)
        p = self.transfer_pairs.setdefault(key, [0, 0, 0])
        p[0 if explicit else 1] += 1
        p[2] += nbytes
        s = self.site()
        if s is None:
            return
        lk = (s.file, s.line, kind, explicit)
        rec = self.transfer_lines.get(lk)
        if rec is None:
            rec = self.transfer_lines[lk] = {"file": s.file, "line": s.line, "kind": kind,
                                            "explicit": explicit, "count": 0, "bytes": 0,
                                            "src": key[0], "dst": key[1]}
        rec["count"] += 1
        rec["bytes"] += nbytes

    # ---- memory ---------------------------------------------------------------------------
    def _on_alloc(self, d):
        dev = d.get("device")
        nbytes = int(d.get("nbytes", 0))
        name = str(dev)
        self.devices[name] = dev
        in_use = getattr(dev, "_bytes_in_use", 0)
        tl = self.timeline[name]
        tl.append((self.now(), in_use))
        if len(tl) > _MAX_SAMPLES:
            del tl[1::2]
        stack = self.stack(mark="alloc")
        if not stack:
            return
        s = stack[0]
        a = self.alloc_lines.setdefault(s.key, [0, 0])
        a[0] += 1
        a[1] += nbytes
        for x in stack:
            loop = self.loop_of(x.file, x.line)
            if loop:
                k = (x.file, loop, s.file, s.line, name)
                rec = self.loop_allocs.get(k)
                if rec is None:
                    rec = self.loop_allocs[k] = {
                        "loop_file": x.file, "loop_line": loop, "file": s.file,
                        "line": s.line, "device": name, "count": 0, "bytes": 0,
                        "live": 0, "live_bytes": 0, "max_live": 0, "max_live_bytes": 0,
                        "calls": 0}
                rec["count"] += 1
                rec["calls"] += s.new_call
                rec["bytes"] += nbytes
                ref = d.get("buffer")
                buf = ref() if ref is not None else None
                if buf is not None:
                    rec["live"] += 1
                    rec["live_bytes"] += nbytes
                    if rec["live"] > rec["max_live"]:
                        rec["max_live"] = rec["live"]
                    if rec["live_bytes"] > rec["max_live_bytes"]:
                        rec["max_live_bytes"] = rec["live_bytes"]
                    fin = weakref.finalize(buf, _loop_freed, rec, nbytes)
                    del buf
                    fin.atexit = False
                    self._finalizers.append(fin)
                break

    def sample_memory(self):
        """A timeline sample of every device seen (at the start and the end of the run)."""
        for d in jaxlite.devices():
            self.devices[str(d)] = d
            self.timeline[str(d)].append((self.now(), d.memory_stats()["bytes_in_use"]))

    def loop_of(self, file: str, line: int):
        """The first line of the innermost loop (``for``/``while``/comprehension) of
        ``file`` holding ``line``, or None."""
        spans = self._loops_by_file.get(file)
        if spans is None:
            spans = self._loops_by_file[file] = _loop_spans(file)
        best = None
        for start, end in spans:
            if start <= line <= end and (best is None or start > best):
                best = start
        return best

    # ---- .at[] results ------------------------------------------------------------------
    def _on_at_update(self, d):
        ref = d.get("result")
        out = ref() if ref is not None else None
        if out is None:
            return
        self.at_count += 1
        s = self.site()
        info = {"file": s.file if s else "?", "line": s.line if s else 0,
                "method": d.get("method", "set"), "shape": tuple(out.shape),
                "dtype": str(out.dtype), "t": self.now()}
        key = id(out)
        fin = weakref.finalize(out, self._at_freed, key)
        fin.atexit = False
        self._at_pending[key] = [info, fin]

    def _at_freed(self, key):
        entry = self._at_pending.pop(key, None)
        if entry is not None:
            self.at_unused.append(entry[0])

    def _on_read(self, d):
        if self._at_pending:
            self._mark_read((d.get("array_id"),))

    def _mark_read(self, ids):
        """The arrays of ``ids`` (operands: alive now, so their ids are theirs) were read."""
        pend = self._at_pending
        if not pend:
            return
        for i in ids:
            entry = pend.pop(i, None)
            if entry is not None:
                entry[1].detach()

    def close(self):
        """Stops watching buffers and the ``.at[]`` results still alive; returns the
        latter's info (results still alive, never read)."""
        for fin in self._finalizers:
            fin.detach()
        self._finalizers.clear()
        for info, fin in self._at_pending.values():
            fin.detach()
        still = [info for info, _ in self._at_pending.values()]
        self._at_pending.clear()
        return still


class _CallTag:
    """Marks one call of a jaxlite function from a user line (see ``Recorder.stack``)."""

    __slots__ = ("kinds",)

    def __init__(self):
        self.kinds = set()

    def __call__(self, *args):   # called only if a tracer is installed: trace nothing
        return None


def _tag_call(frame, kind: str) -> bool:
    """True when ``frame`` (the callee of a user line) had no ``kind`` event yet: the
    first such event of a new call."""
    if frame is None or sys.gettrace() is not None:
        return True
    tag = frame.f_trace
    if tag is None:
        tag = frame.f_trace = _CallTag()
    elif type(tag) is not _CallTag:
        return True
    if kind in tag.kinds:
        return False
    tag.kinds.add(kind)
    return True


def executions(sites: dict) -> int:
    """The times the most frequent call of a line ran (``{lasti: calls}``)."""
    return max(sites.values(), default=0)


def _loop_freed(rec, nbytes):
    rec["live"] -= 1
    rec["live_bytes"] -= nbytes


def _loop_spans(file: str) -> list:
    """``[(first line, last line)]`` of the loops of a Python file (empty if unreadable)."""
    try:
        with open(file, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), file)
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp,
                             ast.DictComp, ast.GeneratorExp)):
            out.append((node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno))
    return out
