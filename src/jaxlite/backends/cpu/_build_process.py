"""The native build process: Numba compiles a program's kernels in another process.

Layer: backends (used by _tiered.py).  Compiling native code is mostly Python (Numba's
type inference and lowering) and holds the interpreter lock for a second or more per
program.  Run in a thread of the user's process, it starves the running program: each time
the program's thread gives up the lock (a NumPy call on a large enough array does), it
waits up to the switch interval (5 ms) to get it back, so a 10 us call can take 5 ms.  So
the tiered backend builds elsewhere:

- one build process per user process, started on the first native build, at a lower
  scheduling priority (``BUILD_NICENESS`` below the user's process), set by its first
  lines (``_build_boot.py``) before it imports anything; on a busy machine the running
  program keeps the cores;
- a job is the optimised program (a ``ClosedJaxpr`` with host constants, pickled; a
  primitive pickles by name) and where the persistent cache lives; the build process
  constructs the native executable, which compiles each kernel into the persistent cache
  (_cache.py), records the program's "built before" marker, and replies with what it
  compiled and which equations fell back to the interpreter.  The job carries the user's
  thresholds of the persistent cache (``CACHE_OPTIONS``); the kernels of a build they
  keep out of the cache come back in the reply instead (``unwritten``), and no marker is
  recorded;
- the user's process then constructs the same executable under ``_cache.load_only()``:
  every kernel's machine code is loaded from the cache or the reply (no compiling in this
  process; a kernel that is in neither runs on the interpreter).

The protocol is length-prefixed pickles over the build process's stdin/stdout (its own
prints go to stderr, which is discarded: it reports errors in its replies).  The program's
call that makes it hot pickles the job and writes it (``submit``; the build process reads
every job as it comes, so that write never waits for a build); the tiered backend's worker
thread reads the replies, in the order of the jobs (``result``), without the interpreter
lock.  When the persistent cache is off or unusable, a program does not pickle (a host
callback's Python function, say), or the build process cannot start or dies, the worker
thread builds in this process as before (``Unavailable``).  The build process ends when
the user's process closes its stdin (at exit, or ``shutdown()``), after finishing the job
in hand (or the oldest one sent) on idle CPU only (``_build_boot.idle_priority``: the
programs that run after it never share a core with it); the others are dropped.
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading

from . import _build_boot

BUILD_NICENESS = 10
"""How much lower the build process's scheduling priority is (``os.nice``)."""

CACHE_OPTIONS = ("jax_persistent_cache_min_compile_time_secs",
                 "jax_persistent_cache_min_entry_size_bytes")
"""The config options a job carries: the build process decides what it writes to the
persistent cache by the user's values."""

_HEADER = struct.Struct("<Q")
_LOCK = threading.Lock()
_PROC: list = [None]             # the running build process, or None
_FAILED: list = [None]           # why the build process cannot be used in this process


class Unavailable(Exception):
    """The build process cannot build this program (the caller builds in its thread)."""


def _send(f, data: bytes) -> None:
    f.write(_HEADER.pack(len(data)))
    f.write(data)
    f.flush()


def _recv(f):
    head = f.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError("the other side closed the pipe")
    (n,) = _HEADER.unpack(head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError("the other side closed the pipe mid-message")
    return pickle.loads(data)


def _child_env() -> dict:
    env = dict(os.environ)
    # not an MPI rank: the launcher's variables would make it look like one
    for k in list(env):
        if k.startswith(("PMI_", "PMIX_", "OMPI_", "MPICH_", "HYDRA_")):
            del env[k]
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"]
                               if env.get("PYTHONPATH") else "")
    if hasattr(os, "getpriority"):
        # the build process's priority, set before it imports anything (its imports take
        # about a second of CPU): this process's, lowered by BUILD_NICENESS
        env[_build_boot.PRIORITY_VAR] = str(min(19, os.getpriority(os.PRIO_PROCESS, 0) +
                                     BUILD_NICENESS))
    return env


def _command() -> list:
    """The build process's command line: ``_build_boot.py`` as a script (lowers the
    priority, then imports jaxlite and serves jobs: ``main``)."""
    return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "_build_boot.py")]


def _process():
    """The build process (started on first use), or raises Unavailable."""
    p = _PROC[0]
    if p is not None and p.poll() is None:
        return p
    if _FAILED[0] is not None:
        raise Unavailable(_FAILED[0])
    try:
        p = subprocess.Popen(_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=_child_env(), close_fds=True)
    except OSError as e:
        _FAILED[0] = f"the build process could not start ({e})"
        raise Unavailable(_FAILED[0]) from None
    _PROC[0] = p
    return p


def submit(closed, name: str, cache_base: str, marker: str | None) -> None:
    """Sends the job that builds ``closed``'s native code into the persistent cache at
    ``cache_base`` (starting the build process on first use).  Called by the program's call
    that makes it hot: pickling and starting a process are Python work, kept out of the
    worker thread, where they would hold the interpreter lock beside the running program;
    the build process reads every job as it comes, so the write does not wait for a
    build.  The replies come back in the order of the jobs: the caller reads each with
    ``result()`` (in the same order).  Raises ``Unavailable`` when the program does not
    pickle or the build process cannot be used."""
    from ...config import config
    from ...core.eager import host_value
    from ...ir.jaxpr import ClosedJaxpr
    import numpy as np
    try:
        program = ClosedJaxpr(closed.jaxpr, [np.asarray(host_value(c))
                                             for c in closed.consts])
        job = pickle.dumps({"program": program, "name": name, "cache": cache_base,
                            "marker": marker,
                            "options": {n: config.read(n) for n in CACHE_OPTIONS}},
                           protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise Unavailable(f"the program cannot be sent to the build process "
                          f"({type(e).__name__}: {e})") from None
    with _LOCK:
        p = _process()
        try:
            _send(p.stdin, job)
        except (OSError, ValueError) as e:
            _broken(p, e)


def _broken(p, e):
    try:              # its pipe closed: it has ended, or is about to
        code = p.wait(1.0)
    except subprocess.TimeoutExpired:
        code = None
    _PROC[0] = None
    _FAILED[0] = f"the build process ended (exit status {code}: {type(e).__name__}: {e})"
    raise Unavailable(_FAILED[0]) from None


def result() -> dict:
    """The reply to the oldest job not yet answered; blocks until it is built (reading a
    pipe, without the interpreter lock).

    Returns ``{"compiled": kernels compiled, "fallbacks": [equations left to the
    interpreter], "seconds": build time there, "persisted": whether its kernels are in
    the persistent cache, "unwritten": {key: {file name: bytes}} of those that are not,
    "why": why not (or None)}``.  Raises ``RuntimeError`` with the build
    process's message when building failed there, ``Unavailable`` when the build process
    died or was closed."""
    p = _PROC[0]
    if p is None:
        raise Unavailable(_FAILED[0] or "the build process was closed")
    try:
        reply = _recv(p.stdout)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError) as e:
        _broken(p, e)
    if not reply.get("ok"):
        raise RuntimeError(reply.get("error", "the build process failed"))
    return reply


def shutdown(timeout: float = 0.0) -> None:
    """Closes the build process's stdin (it exits after the job in hand); waits at most
    ``timeout`` seconds for it."""
    p = _PROC[0]
    _PROC[0] = None
    if p is None:
        return
    try:
        p.stdin.close()
    except OSError:
        pass
    if timeout:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


def pid() -> int | None:
    """The build process's pid while it runs (tests), else None."""
    p = _PROC[0]
    return p.pid if p is not None and p.poll() is None else None


# ---- the build process itself ------------------------------------------------------------

def _serve(inp, out) -> None:
    import queue
    import time
    from ...config import config
    from . import _cache
    from ._tiered import _mark_built
    from .native import CpuExecutable
    jobs: queue.Queue = queue.Queue()
    closed = threading.Event()

    def read():          # every job as it comes: the user's process never waits to write
        while True:
            try:
                jobs.put(_recv(inp))
            except (EOFError, OSError, pickle.UnpicklingError):
                closed.set()
                jobs.put(None)
                # the user's process has gone: the build in hand finishes on idle CPU
                # only, never beside the programs that run next
                _build_boot.idle_priority()
                return
    threading.Thread(target=read, daemon=True).start()
    while True:
        job = jobs.get()
        if job is None:
            return
        t0 = time.perf_counter()
        try:
            config.update("jax_compilation_cache_dir", job["cache"])
            for n, v in job.get("options", {}).items():
                config.update(n, v)
            before = _cache.stats()["compiled"]
            with _cache.program_build() as b:
                ex = CpuExecutable(job["program"], job["name"])
            if b.persisted:
                _mark_built(job["marker"])
            reply = {"ok": True, "compiled": _cache.stats()["compiled"] - before,
                     "fallbacks": ex.fallbacks, "seconds": time.perf_counter() - t0,
                     "persisted": b.persisted, "unwritten": b.unwritten, "why": b.why}
        except BaseException as e:          # reported to the user's process
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:              # pragma: no cover - an unpicklable message
            data = pickle.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"})
        try:
            _send(out, data)
        except OSError:          # the user's process has gone
            return
        if closed.is_set():      # the user's process closed: the rest is dropped
            return


def main() -> None:
    """Entry point of the build process: serves jobs from stdin until it closes."""
    _build_boot.lower_priority(BUILD_NICENESS)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())   # stray prints: not the protocol
    _serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()


__all__ = ["BUILD_NICENESS", "CACHE_OPTIONS", "Unavailable", "pid", "result", "shutdown",
           "submit"]
