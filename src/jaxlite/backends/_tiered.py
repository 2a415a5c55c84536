"""Tiered compilation for the native CPU backend.

Layer: backends.  ``compile_cpu(closed, name)`` is the "cpu" backend's compile function.
With config ``jaxlite_tiered`` on (the default; ``JAXLITE_TIERED=0`` turns it off) it
returns a ``TieredExecutable`` at once: its calls run the interpreter's executable (the
reference: same results) while one background worker thread builds the native
``CpuExecutable`` (Numba, or its persistent cache, see _cache.py).  When the native code is
ready the executable switches tier: its ``run`` and ``temp_bytes`` become the native
executable's, and the ``jaxlite`` logger says so (a warning when ``jax_log_compiles`` is
on, info otherwise).  The first result never waits for Numba.

With ``jaxlite_tiered`` off, the native executable is built before ``compile_cpu``
returns (tests and benchmarks that measure native code).  ``as_text`` and every native
attribute (``fallbacks``, ``kernels``, ``report``) wait for the native tier.  If building
native code fails, the program stays on the interpreter and the log says why.

At exit the interpreter waits for the programs already queued to finish compiling (so
their kernels reach the persistent cache and no Numba work is cut off mid-way).
"""
from __future__ import annotations

import atexit
import logging
import queue
import threading
import time

from .base import Executable

logger = logging.getLogger("jaxlite")

_QUEUE: "queue.Queue" = queue.Queue()
_WORKER = None
_WORKER_LOCK = threading.Lock()
_SWITCHES = {"native": 0, "failed": 0}


def switches() -> dict:
    """How many programs switched to native code (``native``) or stayed on the
    interpreter because native compilation failed (``failed``) in this process."""
    return dict(_SWITCHES)


def _work():
    while True:
        job = _QUEUE.get()
        try:
            job()
        except BaseException:    # pragma: no cover - a job reports its own errors
            logger.exception("jaxlite: background native compilation failed")
        finally:
            _QUEUE.task_done()


def _submit(job) -> None:
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None or not _WORKER.is_alive():
            _WORKER = threading.Thread(target=_work, name="jaxlite-native-compiler",
                                       daemon=True)
            _WORKER.start()
    _QUEUE.put(job)


def wait_all() -> None:
    """Waits until every queued native compilation has finished."""
    if _WORKER is not None:
        _QUEUE.join()


atexit.register(wait_all)


def _log(msg, *args):
    from ..config import config
    if config.jax_log_compiles:
        logger.warning(msg, *args)
    else:
        logger.info(msg, *args)


class TieredExecutable(Executable):
    """Runs on the interpreter until the native executable is ready, then on it.

    ``tier`` is ``"interpreter"`` or ``"native"``; ``wait(timeout)`` blocks until the
    background build has finished (True) or the timeout passed (False).
    """

    backend = "cpu"

    def __init__(self, closed, name: str):
        from .interpreter import InterpretedExecutable
        self.name = name
        interp = InterpretedExecutable(closed, name)
        self.interpreter = interp
        self.in_avals = interp.in_avals
        self.out_avals = interp.out_avals
        self.temp_bytes = interp.temp_bytes
        self.run = interp.run            # replaced by the native run when ready
        self.tier = "interpreter"
        self.native = None
        self.error = None
        self._done = threading.Event()
        self._started = time.perf_counter()
        _submit(lambda: self._build(closed))

    def _build(self, closed):
        from . import _cache
        from .cpu import CpuExecutable
        before = _cache.stats()
        t0 = time.perf_counter()
        try:
            native = CpuExecutable(closed, self.name)
        except Exception as e:
            self.error = e
            _SWITCHES["failed"] += 1
            _log("jaxlite: %s stays on the interpreter: native compilation failed "
                 "(%s: %s)", self.name, type(e).__name__, e)
            self._done.set()
            return
        after = _cache.stats()
        self.native = native
        self.temp_bytes = native.temp_bytes
        self.run = native.run
        self.tier = "native"
        _SWITCHES["native"] += 1
        _log("jaxlite: %s switched to native code after %.1f ms (%d kernel(s) compiled, "
             "%d loaded from the persistent cache, %d reused; built in %.1f ms)",
             self.name, (time.perf_counter() - self._started) * 1e3,
             after["compiled"] - before["compiled"], after["loaded"] - before["loaded"],
             after["memory"] - before["memory"], (time.perf_counter() - t0) * 1e3)
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _native_or_none(self):
        self._done.wait()
        return self.native

    def as_text(self) -> str:
        native = self._native_or_none()
        if native is None:
            return (f"# native compilation failed ({type(self.error).__name__}: "
                    f"{self.error}); the program runs on the interpreter\n"
                    f"{self.interpreter.as_text()}")
        return native.as_text()

    def __getattr__(self, name):
        # native attributes (fallbacks, kernels, report, ...): wait for the native tier
        if name.startswith("__") or name in ("native", "_done", "interpreter"):
            raise AttributeError(name)
        native = self._native_or_none()
        if native is None:
            raise AttributeError(f"{name} (native compilation failed: {self.error})")
        return getattr(native, name)


def compile_cpu(closed, name: str) -> Executable:
    """The "cpu" backend: tiered (see the module docstring) or native at once."""
    from ..config import config
    if config.jaxlite_tiered:
        return TieredExecutable(closed, name)
    from .cpu import CpuExecutable
    return CpuExecutable(closed, name)


__all__ = ["TieredExecutable", "compile_cpu", "switches", "wait_all"]
