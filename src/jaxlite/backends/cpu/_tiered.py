"""Tiered compilation for the native CPU backend (the default backend).

Layer: backends.  ``compile_cpu(closed, name)`` is the "cpu" backend's compile function.
With config ``jaxlite_tiered`` on (the default; ``JAXLITE_TIERED=0`` turns it off) it
returns a ``TieredExecutable`` at once: its calls run the interpreter's executable (the
reference: same results), and Numba is not touched until the program is *hot*:

- tier-up policy: the background native build (one worker thread; Numba, or its
  persistent cache, see _cache.py) starts right after the program's
  ``jaxlite_tier_up_calls``-th call (``JAXLITE_TIER_UP_CALLS``, default 2) returns, so a
  process that calls a program once never imports or runs Numba for it;
- a program whose native code was built before (by this or an earlier process: a marker
  file in the persistent cache, checked with one ``os.path.exists``, no Numba import)
  starts its build right after its first call, and the build only loads machine code;
- a program in which native code cannot pay stays on the interpreter (``native_pays``):
  no native loop, and every fused kernel stands for a single array operation over fewer
  than ``NATIVE_MIN_ELEMENTS`` elements.  There a kernel call (about 2 us) costs more
  than the one NumPy call it replaces (W1's 3-element ``sum``);
- ``as_text`` and every native attribute (``fallbacks``, ``kernels``, ``report``) and
  ``wait`` start the build if it has not started and wait for it.

When the native code is ready the executable switches tier: its ``run`` and ``temp_bytes``
become the native executable's, and the ``jaxlite`` logger says so with the number of
kernels compiled and loaded from the persistent cache (a warning when ``jax_log_compiles``
is on, info otherwise).  The first result never waits for Numba.  If building native code
fails, the program stays on the interpreter and the log says why.

With ``jaxlite_tiered`` off, the native executable is built before ``compile_cpu``
returns (tests and benchmarks that measure native code).

At exit the process waits only for the build in progress (so its kernels reach the
persistent cache and no Numba work is cut off mid-way), at most ``EXIT_WAIT_SECONDS``, and
not at all when that build only loads from the persistent cache; builds still queued are
dropped.  So a short process never waits for Numba work it did not need.
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import os
import queue
import threading
import time
import weakref

import numpy as np

from ..base import Executable

logger = logging.getLogger("jaxlite")

NATIVE_MIN_ELEMENTS = 1 << 16
"""A kernel that stands for one array operation pays for native code from this many
elements on (see ``native_pays``)."""

EXIT_WAIT_SECONDS = 30.0
"""The longest the process waits at exit for the native build in progress."""

_QUEUE: "queue.Queue" = queue.Queue()
_WORKER = None
_WORKER_LOCK = threading.Lock()
_EXITING = threading.Event()
_CURRENT: list = [None]      # the job the worker is running
_EXIT_LOCK = threading.Lock()
_EXIT_ALLOWED: list = [None]  # at exit: the queued job an idle worker may still run
_SWITCHES = {"native": 0, "failed": 0, "dropped": 0}
_PROGRAMS: "weakref.WeakSet" = weakref.WeakSet()     # every TieredExecutable alive


def switches() -> dict:
    """How many programs switched to native code (``native``), stayed on the interpreter
    because native compilation failed (``failed``), or whose queued build was dropped at
    exit (``dropped``) in this process."""
    return dict(_SWITCHES)


def _work():
    while True:
        job = _QUEUE.get()
        with _EXIT_LOCK:
            run = not _EXITING.is_set() or job is _EXIT_ALLOWED[0]
            _CURRENT[0] = job if run else None
        try:
            if run:
                job()
            elif isinstance(job, TieredExecutable):
                job._drop()
        except BaseException:    # pragma: no cover - a job reports its own errors
            logger.exception("jaxlite: background native compilation failed")
        finally:
            _CURRENT[0] = None
            _QUEUE.task_done()


def _submit(job) -> None:
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None or not _WORKER.is_alive():
            _WORKER = threading.Thread(target=_work, name="jaxlite-native-compiler",
                                       daemon=True)
            _WORKER.start()
    _QUEUE.put(job)


def wait_all(timeout: float | None = None) -> bool:
    """Waits until every native build already started (queued) has finished; True when
    they have, False when ``timeout`` seconds passed first.  Programs that are not hot
    yet have no build to wait for."""
    end = None if timeout is None else time.monotonic() + timeout
    with _QUEUE.all_tasks_done:
        while _QUEUE.unfinished_tasks:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            _QUEUE.all_tasks_done.wait(left)
    return True


def _at_exit() -> None:
    # queued builds are dropped (the worker skips them); only the one in progress is
    # waited for, and not for long.  A build that only loads from the persistent cache
    # is not waited for: cutting it off loses nothing.
    with _EXIT_LOCK:
        _EXITING.set()
        job = _CURRENT[0]
        if job is None:     # an idle worker: the oldest queued build counts as started
            try:
                job = _EXIT_ALLOWED[0] = _QUEUE.queue[0]
            except IndexError:
                return
    if isinstance(job, TieredExecutable) and job.cached:
        return
    if _WORKER is not None and _WORKER.is_alive():
        if not wait_all(EXIT_WAIT_SECONDS):    # pragma: no cover - a very long build
            logger.info("jaxlite: exiting while a native build is still running")


atexit.register(_at_exit)


def _log(msg, *args):
    from ...config import config
    if config.jax_log_compiles:
        logger.warning(msg, *args)
    else:
        logger.info(msg, *args)


# ---- the "built before" marker: a cheap persistent-cache check ---------------------------

def _kernel_texts(jaxpr, out: list) -> None:
    from ...primitives.kernel import kernel_p
    for eqn in jaxpr.eqns:
        if eqn.primitive is kernel_p:
            out.append(eqn.params["kernel"].pretty())
        for p in eqn.params.values():
            inner = getattr(p, "jaxpr", p)
            if hasattr(inner, "eqns"):
                _kernel_texts(inner, out)


def program_key(closed) -> str:
    """A hash of an optimised program (its text, its fused kernels, its constants) and the
    jaxlite/Python versions: the name of its "native code built before" marker."""
    import sys
    from ... import __version__
    from ...core.eager import host_value
    h = hashlib.sha256()
    texts: list = []
    _kernel_texts(closed.jaxpr, texts)
    for part in [__version__, sys.version, str(closed)] + texts:
        h.update(part.encode())
        h.update(b"\0")
    for c in closed.consts:
        a = np.asarray(host_value(c))
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:32]


def _marker_path(closed) -> str | None:
    from ._cache import cache_dir
    d = cache_dir()
    if d is None:
        return None
    try:
        return os.path.join(d, "programs", program_key(closed))
    except Exception:        # pragma: no cover - an unhashable constant: no marker
        return None


def _mark_built(path: str | None) -> None:
    """Records that the program's native code is in the persistent cache."""
    if path is None or os.path.exists(path):
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="ascii"):
            pass
    except OSError:          # a read-only cache: the next process tiers up by calls
        pass


NATIVE_ATTRIBUTES = frozenset({"fallbacks", "kernels", "report"})
"""Attributes of the native executable a ``TieredExecutable`` gives (after building it)."""


def native_pays(closed) -> bool:
    """Whether the native tier can beat the interpreter on ``closed``: True when it has a
    ``scan`` or ``while`` (a native loop saves the interpreter's per-step dispatch), or a
    fused kernel that stands for two or more array operations (its body's equations plus
    its reductions: fusion saves a pass over memory and a NumPy call each) or iterates
    over at least ``NATIVE_MIN_ELEMENTS`` elements (vectorised maths)."""
    from ...primitives.control_flow import scan_p, while_p
    from ...primitives.kernel import kernel_p
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive is scan_p or eqn.primitive is while_p:
            return True
        if eqn.primitive is kernel_p:
            k = eqn.params["kernel"]
            ops = len(k.body.eqns) + sum(o.kind == "reduce" for o in k.outputs)
            if ops >= 2 or int(np.prod(k.shape, dtype=np.int64)) >= NATIVE_MIN_ELEMENTS:
                return True
    return False


class TieredExecutable(Executable):
    """Runs on the interpreter until the native executable is ready, then on it.

    ``tier`` is ``"interpreter"`` or ``"native"``; ``calls`` counts the calls run on the
    interpreter; ``tier_up_at`` is the call after which the native build starts (1 when
    the persistent cache holds the program's native code; None when native code would
    not pay, see ``native_pays``); ``started`` says whether it has started; ``wait(timeout)`` starts it if needed and blocks until it has finished (True)
    or the timeout passed (False).
    """

    backend = "cpu"

    def __init__(self, closed, name: str):
        from ...config import config
        from ..interpreter import InterpretedExecutable
        self.name = name
        interp = InterpretedExecutable(closed, name)
        self.interpreter = interp
        self.in_avals = interp.in_avals
        self.out_avals = interp.out_avals
        self.temp_bytes = interp.temp_bytes
        self.tier = "interpreter"
        self.native = None
        self.error = None
        self.calls = 0
        self.started = False
        self._closed = closed
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.pays = native_pays(closed)
        # a program kept on the interpreter needs no "built before" marker (its key
        # prints the program: about a millisecond of a first call)
        self._marker = _marker_path(closed) if self.pays else None
        self.cached = self._marker is not None and os.path.exists(self._marker)
        self.tier_up_at = (None if not self.pays else 1 if self.cached
                           else max(1, int(config.jaxlite_tier_up_calls)))
        self._created = time.perf_counter()
        # replaced on tier-up, then by the native run
        self.run = self._counting_run if self.pays else interp.run
        _PROGRAMS.add(self)

    def _counting_run(self, args, donated=None):
        outs = self.interpreter.run(args, donated)
        self.calls += 1
        if self.calls >= self.tier_up_at:
            self.start(f"call {self.calls}" + (" (in the persistent cache)" if self.cached
                                               else ""))
        return outs

    def start(self, why: str = "requested") -> None:
        """Queues the background native build (once; later calls do nothing)."""
        with self._lock:
            if self.started:
                return
            self.started = True
            if self.native is None:
                self.run = self.interpreter.run       # stop counting
        self._started_at = time.perf_counter()
        self._why = why
        _submit(self)

    def __call__(self):          # the worker's job
        self._build(self._closed)

    def _drop(self):
        self.error = RuntimeError("the process exited before the native build started")
        _SWITCHES["dropped"] += 1
        self._closed = None
        self._done.set()

    def _build(self, closed):
        from . import _cache
        from .native import CpuExecutable
        before = _cache.stats()
        t0 = time.perf_counter()
        try:
            native = CpuExecutable(closed, self.name)
        except Exception as e:
            self.error = e
            _SWITCHES["failed"] += 1
            _log("jaxlite: %s stays on the interpreter: native compilation failed "
                 "(%s: %s)", self.name, type(e).__name__, e)
            self._closed = None
            self._done.set()
            return
        after = _cache.stats()
        compiled = after["compiled"] - before["compiled"]
        self.native = native
        self.temp_bytes = native.temp_bytes
        self.run = native.run
        self.tier = "native"
        self._closed = None
        _SWITCHES["native"] += 1
        _mark_built(self._marker)
        _log("jaxlite: %s switched to native code (build started after %s, %.1f ms after "
             "compile): %d kernel(s) compiled, %d loaded from the persistent cache, "
             "%d reused; built in %.1f ms",
             self.name, self._why,
             (self._started_at - self._created) * 1e3, compiled,
             after["loaded"] - before["loaded"], after["memory"] - before["memory"],
             (time.perf_counter() - t0) * 1e3)
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        self.start("a request for native code")
        return self._done.wait(timeout)

    def _native_or_none(self):
        self.wait()
        return self.native

    def as_text(self) -> str:
        native = self._native_or_none()
        if native is None:
            return (f"# native compilation failed ({type(self.error).__name__}: "
                    f"{self.error}); the program runs on the interpreter\n"
                    f"{self.interpreter.as_text()}")
        return native.as_text()

    def __getattr__(self, name):
        # the native executable's own attributes: build and wait for them (only these, so
        # that a probe such as ``getattr(ex, "x", None)`` never starts a build)
        if name not in NATIVE_ATTRIBUTES:
            raise AttributeError(name)
        native = self._native_or_none()
        if native is None:
            raise AttributeError(f"{name} (native compilation failed: {self.error})")
        return getattr(native, name)


def summary(timeout: float | None = None) -> str:
    """One line on native code in this process, after waiting (at most ``timeout``
    seconds) for the builds already started: programs switched to native code, kernels
    compiled vs loaded from the persistent cache (and its directory), programs still on
    the interpreter because they were not called often enough to be worth compiling."""
    from . import _cache
    done = wait_all(timeout)
    progs = list(_PROGRAMS)
    cold = sum(1 for p in progs if not p.started and p.pays)
    small = sum(1 for p in progs if not p.started and not p.pays)
    st = _cache.stats()
    sw = switches()
    line = (f"native code: {sw['native']} program(s) switched to native code; "
            f"{st['compiled']} kernel(s) compiled, {st['loaded']} loaded from the "
            f"persistent cache ({_cache.cache_dir() or 'off'})")
    if cold:
        line += f"; {cold} program(s) called too few times to compile stay on the interpreter"
    if small:
        line += (f"; {small} program(s) too small for native code to pay stay on the "
                 f"interpreter")
    if sw["failed"]:
        line += f"; {sw['failed']} failed to compile (see the log)"
    if not done:
        line += "; some builds still running"
    return line


def compile_cpu(closed, name: str) -> Executable:
    """The "cpu" backend: tiered (see the module docstring) or native at once."""
    from ...config import config
    if config.jaxlite_tiered:
        return TieredExecutable(closed, name)
    from .native import CpuExecutable
    ex = CpuExecutable(closed, name)
    _mark_built(_marker_path(closed))
    return ex


__all__ = ["EXIT_WAIT_SECONDS", "NATIVE_ATTRIBUTES", "TieredExecutable", "compile_cpu",
           "program_key", "summary", "switches", "wait_all"]
