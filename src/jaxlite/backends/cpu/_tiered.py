"""Tiered compilation for the native CPU backend (the default backend).

Layer: backends.  ``compile_cpu(closed, name)`` is the "cpu" backend's compile function.
With config ``jaxlite_tiered`` on (the default; ``JAXLITE_TIERED=0`` turns it off) it
returns a ``TieredExecutable`` at once: its calls run the interpreter's executable (the
reference: same results), and Numba is not touched until the program is *hot*:

- tier-up policy: the native build starts right after the program's
  ``jaxlite_tier_up_calls``-th call (``JAXLITE_TIER_UP_CALLS``, default 2) returns, so a
  process that calls a program once never imports or runs Numba for it;
- where: Numba compiles in the native build process (_build_process.py: a separate,
  lower-priority process, so the build never holds this process's interpreter lock nor
  its cores' priority); this process's worker thread only waits for the reply, and the
  program's next call (or a ``wait``) loads the machine code from the persistent cache.
  Loading is Python work too (about 0.3 s for the first program of a process: Numba's
  import and set-up; milliseconds after that), so it runs in the program's own call,
  never beside it in a thread.  When the build process cannot be used (config
  ``jaxlite_build_process`` off, the persistent cache off or unusable, a program that
  does not pickle, a build process that died) the worker thread builds as before;
- a program whose native code was built before (by this or an earlier process: a marker
  file in the persistent cache, checked with one ``os.path.exists``, no Numba import) is
  loaded before its first call returns, which already runs native code, when Numba is set
  up in this process (a load then takes milliseconds).  The first load of a process also
  sets Numba up (about 0.3 s, more than most first calls): that program's first call runs
  on the interpreter and its second call loads.  A stale marker (the kernels gone from the
  cache): built as usual;
- a program in which native code cannot pay stays on the interpreter (``native_pays``):
  no native loop, and every fused kernel stands for a single array operation over fewer
  than ``NATIVE_MIN_ELEMENTS`` elements or for several over fewer than
  ``NATIVE_FUSED_MIN_ELEMENTS``.  There a kernel call costs about as much as the NumPy
  calls it replaces (W1's 3-element ``sum``, the chapter's 1000-float SGD step);
- ``as_text`` and every native attribute (``fallbacks``, ``kernels``, ``report``) and
  ``wait`` start the build if it has not started and wait for it.

When the native code is ready the executable switches tier: its ``run`` and ``temp_bytes``
become the native executable's, and the ``jaxlite`` logger says so with the number of
kernels compiled and loaded from the persistent cache (a warning when ``jax_log_compiles``
is on, info otherwise).  Only a persistent-cache hit makes a first call wait for Numba.
If building native code fails, the program stays on the interpreter and the log says why.

With ``jaxlite_tiered`` off, the native executable is built before ``compile_cpu``
returns (tests and benchmarks that measure native code).

At exit builds still queued are dropped.  The build process finishes the build in hand
(its kernels reach the persistent cache) and ends after the user's process has gone, which
does not wait for it.  A build in this process's thread is waited for (so no Numba work is
cut off mid-way), at most ``EXIT_WAIT_SECONDS``.  So a short process never waits for Numba
work.
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import os
import queue
import sys
import threading
import time
import weakref

import numpy as np

from ..base import Executable

logger = logging.getLogger("jaxlite")

NATIVE_MIN_ELEMENTS = 1 << 16
"""A kernel that stands for one array operation pays for native code from this many
elements on (see ``native_pays``)."""

NATIVE_FUSED_MIN_ELEMENTS = 1 << 14
"""A kernel that stands for several array operations pays from this many elements on.
Below it a native call saves at most about 2 us and as often loses: its fixed cost
(about 5 us against 2.5 us for the interpreter's generated code) and the transcendental
functions (NumPy's SIMD loops are about twice as fast per element as a kernel's scalar
ones) outweigh the NumPy calls fusion saves.  Measured on the bench machine: a jitted
``w - 0.1 * tanh(w) * g`` takes 5.3 us on the interpreter and 6.3 us native at 1000
elements, ``sum(w * g)`` 7.8 us and 6.1 us at 10,000."""

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
_ORDER_LOCK = threading.Lock()   # jobs sent to the build process and queued: one order


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
    # what the build process compiled is loaded by the program's next call: load it now
    for p in list(_PROGRAMS) if not _EXITING.is_set() else ():
        if p._ready.is_set() and not p._done.is_set():
            p._load()
    return True


def _at_exit() -> None:
    # queued builds are dropped (the worker skips them).  A build in this process's
    # worker thread in progress is waited for, and not for long; one the build process
    # has, or one that only loads from the persistent cache, is not.
    _build_process = sys.modules.get(__package__ + "._build_process")

    def shutdown():       # the build process, when this process started one
        if _build_process is not None:
            _build_process.shutdown()

    def elsewhere(job):   # loads only, or the build process has it: no waiting
        return isinstance(job, TieredExecutable) and (job.cached or job._sent)
    with _EXIT_LOCK:
        _EXITING.set()
        job = _CURRENT[0]
        if job is None:     # an idle worker: the oldest queued build counts as started
            try:
                job = _QUEUE.queue[0]
            except IndexError:
                job = None
            if job is not None and not elsewhere(job):
                _EXIT_ALLOWED[0] = job
    if job is None or elsewhere(job):
        # the build process finishes the build in hand after this process has gone (its
        # kernels reach the persistent cache) and then ends: nothing to wait for here
        shutdown()
        return
    if _WORKER is not None and _WORKER.is_alive():
        if not wait_all(EXIT_WAIT_SECONDS):    # pragma: no cover - a very long build
            logger.info("jaxlite: exiting while a native build is still running")
    shutdown()


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
    from ...version import __version__
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
    from ._paths import cache_dir
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
    its reductions: fusion saves a pass over memory and a NumPy call each) over at least
    ``NATIVE_FUSED_MIN_ELEMENTS`` elements, or one operation over at least
    ``NATIVE_MIN_ELEMENTS`` (vectorised maths)."""
    from ...primitives.control_flow import scan_p, while_p
    from ...primitives.kernel import kernel_p
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive is scan_p or eqn.primitive is while_p:
            return True
        if eqn.primitive is kernel_p:
            k = eqn.params["kernel"]
            ops = len(k.body.eqns) + sum(o.kind == "reduce" for o in k.outputs)
            size = int(np.prod(k.shape, dtype=np.int64))
            if size >= NATIVE_MIN_ELEMENTS or \
                    (ops >= 2 and size >= NATIVE_FUSED_MIN_ELEMENTS):
                return True
    return False


# ---- the tier-up decision from cost ---------------------------------------------------
# Rough figures of this backend on one core (measured with bench/: a NumPy call through
# the interpreter's generated code, a fused native kernel, a cold native build in the
# build process).  They only have to tell a program that runs for seconds from one that
# runs for milliseconds; the README's known differences say what they cost when wrong.
DISPATCH_SECONDS = 1.5e-6
"""The interpreter's cost of one equation run: a NumPy call and its dtype check."""
ELEMENT_SECONDS = 1e-9
"""The interpreter's cost per element an equation produces (a NumPy loop)."""
FLOP_SECONDS = 2.5e-10
"""The cost of one flop of a matrix product (BLAS, in either tier)."""
NATIVE_ELEMENT_SECONDS = 3e-10
"""The native tier's cost per element: fused, no temporaries, no dispatch."""
BUILD_SECONDS = 1.0
"""A cold native build's fixed cost (the build process's start and Numba's set-up)..."""
KERNEL_BUILD_SECONDS = 0.5
"""... plus this much per kernel or native loop."""
WHILE_TRIPS = 1
"""A while loop's trip count is unknown before it runs: its body counts once."""


def estimate(jaxpr) -> tuple:
    """``(interpreter seconds, native seconds, kernels)`` of one call of the (expanded)
    program ``jaxpr``: every equation run on the interpreter costs a dispatch and its
    result's elements; a loop multiplies its body by its trip count (``scan``'s length;
    ``WHILE_TRIPS`` for ``while``); a matrix product costs its flops.  The native tier
    pays per element only, in kernels the fusion pass builds (counted here as one per
    elementwise run of equations or loop)."""
    from ...primitives.control_flow import cond_p, scan_p, while_p
    from ...primitives.linalg import dot_general_p
    interp = native = 0.0
    kernels = 0
    run = False                       # inside a run of equations one kernel covers
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        inner = [getattr(p, "jaxpr", p) for p in eqn.params.values()]
        inner = [j for j in inner if hasattr(j, "eqns")]
        if prim is scan_p or prim is while_p:
            trips = eqn.params["length"] if prim is scan_p else WHILE_TRIPS
            parts = [estimate(j) for j in inner]
            interp += trips * sum(p[0] for p in parts)
            native += trips * sum(p[1] for p in parts)
            kernels += 1
            run = False
            continue
        if prim is cond_p:
            parts = [estimate(b.jaxpr) for b in eqn.params["branches"]]
            interp += DISPATCH_SECONDS + max(p[0] for p in parts)
            native += max(p[1] for p in parts)
            kernels += max(p[2] for p in parts)
            continue
        if inner:                     # a call: its body's equations
            for j in inner:
                i, n, k = estimate(j)
                interp, native, kernels = interp + i, native + n, kernels + k
            continue
        size = sum(int(np.prod(v.aval.shape, dtype=np.int64)) for v in eqn.outvars
                   if hasattr(v.aval, "shape"))
        if prim is dot_general_p:
            flops = prim.flops(*[v.aval for v in eqn.invars], **eqn.params)
            interp += DISPATCH_SECONDS + flops * FLOP_SECONDS
            native += flops * FLOP_SECONDS
            run = False
            continue
        interp += DISPATCH_SECONDS + size * ELEMENT_SECONDS
        native += size * NATIVE_ELEMENT_SECONDS
        if not run:
            kernels += 1
            run = True
    return interp, native, kernels


def numba_ready() -> bool:
    """Whether this process has set Numba up (compiled or loaded a kernel): loading a
    program's machine code then takes milliseconds, not the first load's 0.3 s."""
    _cache = sys.modules.get(__package__ + "._cache")
    if _cache is None:       # never imported: nothing compiled or loaded (and a first
        return False         # call is spared the import, about 5 ms)
    st = _cache.stats()
    return st["compiled"] + st["loaded"] + st["memory"] > 0


class TieredExecutable(Executable):
    """Runs on the interpreter until the native executable is ready, then on it.

    ``tier`` is ``"interpreter"`` or ``"native"``; ``calls`` counts the calls run on the
    interpreter; ``tier_up_at`` is the call after which the native build starts (1 when
    the persistent cache holds the program's native code, ``cached``, known once
    ``_resolve`` has looked it up; None when native code would not pay, see
    ``native_pays``); ``started`` says whether it has started; ``wait(timeout)`` starts
    it if needed and blocks until it has finished (True) or the timeout passed (False).
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
        self._done = threading.Event()      # switched to native code, or failed
        self._ready = threading.Event()     # ... or the build process compiled it
        self._built = ""                    # what the build process did
        self._received = None               # kernels it did not write to the cache
        self._persisted = True              # ... and whether it wrote them all
        self._sent = False                  # the build process has the job
        self._unavailable = None            # why it could not take it
        self._lock = threading.Lock()
        self.pays = native_pays(closed)
        # the "built before" marker (``_resolve``): its key prints the program, 1-2 ms of
        # a first call, so it is looked up only once a call could use it.  A program kept
        # on the interpreter needs none.
        self._marker = None
        self.cached = False
        self._resolved = not self.pays
        self.tier_up_at = max(1, int(config.jaxlite_tier_up_calls)) if self.pays else None
        # from cost: a program whose one interpreter call would take longer than building
        # its native code and running it is built before its first call runs
        self.at_once, self.costs = False, None
        if self.pays:
            interp_s, native_s, kernels = estimate(interp._jaxpr)
            build_s = BUILD_SECONDS + KERNEL_BUILD_SECONDS * kernels
            self.costs = {"interpreter_s": interp_s, "native_s": native_s,
                          "build_s": build_s}
            self.at_once = interp_s > build_s + native_s
            if self.at_once:
                self.tier_up_at = 0
            if self.at_once or numba_ready():
                # the first call may build or load: it needs the marker
                self._resolve()
        self._created = time.perf_counter()
        # replaced on tier-up, then by the native run
        self.run = self._counting_run if self.pays else interp.run
        _PROGRAMS.add(self)

    def _resolve(self) -> None:
        """Looks up the program's "built before" marker (once): ``cached`` when the
        persistent cache holds its native code, which is then loaded after its first
        call (``tier_up_at`` 1), not built.  Done by the first call that could load or
        build: the first call itself when Numba is set up in this process or the program
        is built at once, else the second (the first runs on the interpreter in any case,
        so that the first result never waits for Numba's import), or ``start``."""
        if self._resolved:
            return
        closed = self._closed
        marker = _marker_path(closed) if closed is not None else None
        cached = marker is not None and os.path.exists(marker)
        self._marker, self.cached = marker, cached
        if cached:
            self.tier_up_at, self.at_once = 1, False    # loaded, not built
        self._resolved = True

    def _counting_run(self, args, donated=None):
        if not self._resolved and self.calls:
            # the second call (the first interprets whatever the marker says: until
            # ``_resolve``, ``cached`` and ``at_once`` are False): a program built before
            # loads now
            self._resolve()
            if self.cached and not self.started:
                self.start("the persistent-cache lookup at call 2")
                return self.run(args, donated)
        if self.cached and not self.started:
            # in the persistent cache: loaded before the first call returns when Numba is
            # set up in this process (milliseconds); otherwise setting it up (about 0.3 s)
            # would cost more than the call: this call interprets, the next one loads
            self.start("its first call (in the persistent cache)")
            if numba_ready():
                return self.run(args, donated)
            self.calls += 1
            return self.interpreter.run(args, donated)
        if self.at_once and not self.started:
            c = self.costs
            self.wait(why=f"its cost (one call: about {c['interpreter_s']:.1f} s on the "
                          f"interpreter, {c['build_s'] + c['native_s']:.1f} s to build "
                          f"and run native code)")
            return self.run(args, donated)
        outs = self.interpreter.run(args, donated)
        self.calls += 1
        if self.calls >= self.tier_up_at:
            self.start(f"call {self.calls}" + (" (in the persistent cache)" if self.cached
                                               else ""))
        return outs

    def start(self, why: str = "requested") -> None:
        """Queues the background native build (once; later calls do nothing)."""
        self._resolve()
        with self._lock:
            if self.started:
                return
            self.started = True
            if self.native is None:
                self.run = self.interpreter.run       # stop counting
        self._started_at = time.perf_counter()
        self._why = why
        if self.cached:          # loaded by the next call (or a wait), in its thread
            self._built = "in the persistent cache"
            self.run = self._load_then_run
            self._ready.set()
            return
        self._send_and_queue()

    def _send_and_queue(self) -> None:
        """Sends the job to the build process, in the calling thread (``_sent``; when it
        cannot take it, ``_unavailable`` says why and the worker thread builds here), and
        queues the build for the worker thread, which reads the reply: one lock keeps the
        jobs sent and the queue in the same order."""
        from . import _build_process, _cache
        self._sent, self._unavailable = False, None
        with _ORDER_LOCK:
            if self._use_build_process():
                try:
                    _build_process.submit(self._closed, self.name,
                                          os.path.dirname(_cache.usable_dir()),
                                          self._marker)
                    self._sent, self._sent_at = True, time.perf_counter()
                except _build_process.Unavailable as e:
                    self._unavailable = e
            _submit(self)

    def __call__(self):          # the worker's job
        self._build(self._closed)

    def _drop(self):
        self.error = RuntimeError("the process exited before the native build started")
        _SWITCHES["dropped"] += 1
        self._closed = None
        self._done.set()
        self._ready.set()

    def _build(self, closed):
        """The worker's job: the native executable, compiled by the build process (then
        loaded by the program's next call, see ``_load``) or, when that cannot be used,
        built in this thread."""
        if self._unavailable is not None:
            _log("jaxlite: %s builds its native code in this process: %s", self.name,
                 self._unavailable)
        if self._sent:
            from . import _build_process
            try:
                reply = _build_process.result()
            except _build_process.Unavailable as e:
                if _EXITING.is_set():    # the build process was closed at exit
                    self._drop()
                    return
                _log("jaxlite: %s builds its native code in this process: %s",
                     self.name, e)
            except Exception as e:
                self._fail(e)
                return
            else:
                self._received = reply.get("unwritten")
                self._persisted = reply.get("persisted", True)
                self._built = (f"compiled by the build process: {reply['compiled']} "
                               f"kernel(s) in {reply['seconds'] * 1e3:.0f} ms, "
                               f"{(time.perf_counter() - self._sent_at) * 1e3:.0f} ms "
                               f"after it was sent")
                if reply.get("why"):
                    self._built += f"; not written to the persistent cache: {reply['why']}"
                _log("jaxlite: %s: native code %s; its next call loads it", self.name,
                     self._built)
                # the next call (or a wait) loads it: loading is Python work that would
                # hold the interpreter lock here, beside the running program
                self.run = self._load_then_run
                self._ready.set()
                return
        self._switch(closed, load_only=False, where="built in a background thread")

    def _switch(self, closed, load_only: bool, where: str,
                require_all: bool = False) -> bool:
        """Constructs the native executable in this thread (``load_only``: its kernels
        only loaded from the persistent cache) and switches to it; on failure the program
        stays on the interpreter.  ``require_all``: when a kernel is not in the cache (a
        stale marker), neither switch nor fail (the caller builds as usual).  True when
        it switched."""
        from . import _cache
        from .native import CpuExecutable
        before = _cache.stats()
        t0 = time.perf_counter()
        try:
            if load_only:
                with _cache.load_only(self._received) as seen:
                    native = CpuExecutable(closed, self.name)
                self._received = None
                if require_all and seen.missing:
                    _log("jaxlite: %s: %d kernel(s) not in the persistent cache after "
                         "all; built as usual", self.name, seen.missing)
                    self.cached = False
                    return False
                persisted = self._persisted
            else:
                with _cache.program_build() as b:
                    native = CpuExecutable(closed, self.name)
                persisted = b.persisted
                if b.why:
                    where += f"; not written to the persistent cache: {b.why}"
        except Exception as e:
            self._fail(e)
            return False
        after = _cache.stats()
        self.native = native
        self.temp_bytes = native.temp_bytes
        self.run = native.run
        self.tier = "native"
        self._closed = None
        _SWITCHES["native"] += 1
        if persisted:           # its kernels are in the persistent cache
            _mark_built(self._marker)
        _log("jaxlite: %s switched to native code (build started after %s, %.1f ms after "
             "compile; %s): %d kernel(s) compiled here, %d loaded from the persistent "
             "cache, %d reused; %.1f ms in this thread",
             self.name, self._why, (self._started_at - self._created) * 1e3, where,
             after["compiled"] - before["compiled"], after["loaded"] - before["loaded"],
             after["memory"] - before["memory"], (time.perf_counter() - t0) * 1e3)
        self._done.set()
        self._ready.set()
        return True

    def _fail(self, e: Exception) -> None:
        self.error = e
        self.run = self.interpreter.run
        _SWITCHES["failed"] += 1
        _log("jaxlite: %s stays on the interpreter: native compilation failed (%s: %s)",
             self.name, type(e).__name__, e)
        self._closed = None
        self._done.set()
        self._ready.set()

    def _load(self) -> None:
        """Loads the native code the build process compiled (in the calling thread: the
        program's own call, or a wait); once."""
        with self._lock:
            if self._done.is_set() or self._closed is None:
                return
            if self._switch(self._closed, load_only=True, where=self._built,
                            require_all=self.cached) or self._done.is_set():
                return
            # a stale marker (its kernels gone from the cache): built as usual
            self._ready.clear()
            self.run = self.interpreter.run
        self._send_and_queue()

    def _load_then_run(self, args, donated=None):
        self._load()
        return self.run(args, donated)

    def _use_build_process(self) -> bool:
        from ...config import config
        from . import _cache
        return bool(config.jaxlite_build_process) and _cache.usable_dir() is not None

    def wait(self, timeout: float | None = None, why: str = "a request for native code"
             ) -> bool:
        self.start(why)
        if self._ready.wait(timeout):
            self._load()         # what the build process compiled, loaded here
        return self._done.is_set()

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
    from . import _cache
    from .native import CpuExecutable
    with _cache.program_build() as b:
        ex = CpuExecutable(closed, name)
    if b.persisted:
        _mark_built(_marker_path(closed))
    return ex


__all__ = ["EXIT_WAIT_SECONDS", "NATIVE_ATTRIBUTES", "TieredExecutable", "compile_cpu",
           "program_key", "summary", "switches", "wait_all"]
