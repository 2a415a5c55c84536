"""Asynchronous dispatch: big computations run on their device's worker thread.

Layer: runtime (knows nothing of tracing or programs: a job is a callable over NumPy
values that returns the result Buffers).  As in JAX, a call whose work is big returns its
Arrays at once; each holds a ``PendingBuffer`` until the device's worker has computed it.
Reading the values (``block_until_ready``, ``np.asarray``, ``float``, printing, using the
array in an inline computation) waits for it; an error the computation raised surfaces
there, naming the operation or program that failed.  Native kernels release the GIL
(Numba ``nogil=True``) and NumPy releases it in its loops, so the caller's Python code
runs meanwhile.

Inline or worker: the caller estimates the work (``cost``: roughly bytes moved plus
flops; for a jitted program the compiler's ``cost_analysis``, for an eager operation the
bytes of its operands and results) and dispatches to the worker only when it reaches
``min_cost()`` (config ``jaxlite_async_min_cost``, default 32,000,000).  A hand-off to
the worker and back costs about 30 us on a busy 2-core machine (measured: a 300,000-element
jitted ``x * 2 + 1``, cost 3e6, took 52 us inline and 83 us through the worker), and a
cost of 32e6 is a millisecond or more of memory-bound work, so the hand-off stays under a
few percent of what it overlaps.  Small work (``jit`` of a 3-vector function, eager
``x + 1`` on a small array, a 1000-step scan over 64-vectors: cost 1.7e7) runs inline and
pays nothing but the comparison.  Config ``jaxlite_async`` (``JAXLITE_ASYNC=0``) turns asynchronous
dispatch off: everything runs inline.

Order: one FIFO queue and one worker thread per device, so a computation runs after every
computation dispatched before it on that device; an argument still pending is passed as
its PendingBuffer and resolved on the worker (already computed when it came from the same
queue; waited for when it came from another device's).

Memory: a result's Buffer is created by the worker when the result exists, and counts
its bytes then; temporaries are charged while the job runs.  The device's counters are
updated by statements that call nothing (see ``Buffer`` and ``Device._alloc``), and
CPython switches threads only at calls and backward jumps, so the main thread and the
workers never lose an update: ``memory_stats`` stays exact.
"""
from __future__ import annotations

import atexit
import queue
import threading
import weakref

import numpy as np

from ..config import config
from . import buffer as _buffer

_INF = float("inf")
_min_cost = _INF          # refreshed from the config flags (see _on_config)


def min_cost() -> float:
    """The estimated cost from which a computation runs on the worker (infinite when
    asynchronous dispatch is off)."""
    return _min_cost


def _on_config(name, value):
    global _min_cost
    if name in ("jaxlite_async", "jaxlite_async_min_cost"):
        _min_cost = float(config.jaxlite_async_min_cost) if config.jaxlite_async else _INF


config._on_change(_on_config)
_on_config("jaxlite_async", None)


class AsyncComputationError(RuntimeError):
    """An asynchronously dispatched computation failed, and its exception could not be
    re-raised with its own type (the original is the ``__cause__``)."""


class _Job:
    """One dispatched computation: ``fn(values) -> [Buffer, ...]``."""

    __slots__ = ("fn", "args", "what", "event", "error", "owners", "pending")

    def __init__(self, fn, args, what):
        self.fn = fn
        self.args = args
        self.what = what
        self.event = threading.Event()
        self.error = None
        self.owners = ()     # weak references to the result Arrays
        self.pending = ()    # weak references to the result PendingBuffers

    def run(self):
        vals = outs = buf = pb = owner = None
        try:
            vals = [a.data if type(a) is PendingBuffer else a for a in self.args]
            with np.errstate(all="ignore"):   # JAX computes inf/nan without warnings
                outs = self.fn(vals)
            # each result goes to its PendingBuffer and its Array (which holds the Buffer
            # directly from now on); a result nobody holds any more is freed here
            for pref, ref, buf in zip(self.pending, self.owners, outs):
                pb = pref()
                if pb is not None:
                    pb._result = buf
                owner = ref()
                if owner is not None and owner._buf is pb:
                    owner._buf = buf
        except BaseException as e:   # surfaces at the next synchronisation point
            self.error = e
        finally:
            # nothing of the job's inputs or results stays referenced from here once the
            # waiting threads resume (their memory counts must not depend on timing)
            vals = outs = buf = pb = owner = None
            self.fn = self.args = None
            self.owners = self.pending = ()
            self.event.set()

    def failure(self) -> BaseException:
        e = self.error
        if isinstance(e, MemoryError):   # an allocation failed: JAX's RESOURCE_EXHAUSTED
            return _buffer.memory_error(e, what=f"{self.what} (dispatched asynchronously)")
        msg = f"{self.what} (dispatched asynchronously) failed: {type(e).__name__}: {e}"
        err = None
        # the error's own type, or the nearest base class that takes a message (NumPy's
        # allocation failure is a MemoryError whose constructor takes other arguments)
        for cls in type(e).__mro__:
            if cls in (BaseException, Exception, object):
                break
            try:
                err = cls(msg)
                break
            except Exception:  # noqa: BLE001 - an exception type with another constructor
                continue
        if err is None:
            err = AsyncComputationError(msg)
        err.__cause__ = e
        return err


class PendingBuffer:
    """The Buffer of an Array whose computation is dispatched and may still be running.

    Has a Buffer's interface: ``device`` at once; ``data`` and ``nbytes`` wait for the
    computation (and raise its error); ``delete()`` waits, then frees.
    """

    __slots__ = ("device", "_job", "_result", "_deleted", "__weakref__")

    def __init__(self, device, job: _Job):
        self.device = device
        self._job = job
        self._result = None
        self._deleted = False

    @property
    def ready(self) -> bool:
        """True once the computation has finished (successfully or not)."""
        return self._job.event.is_set()

    def result(self):
        """The Buffer, once computed (waits); raises the computation's error."""
        job = self._job
        if not job.event.is_set():
            if _in_worker_of(self.device) and not job.event.is_set():
                raise RuntimeError(f"{job.what}: a computation running on "
                                   f"{self.device}'s worker waited for a later one "
                                   f"(this would never finish)")
            job.event.wait()
        if job.error is not None:
            raise job.failure()
        return self._result

    @property
    def data(self):
        if self._deleted:
            return None
        return self.result().data

    @property
    def nbytes(self) -> int:
        return self.result().nbytes

    @property
    def is_deleted(self) -> bool:
        return self._deleted or self.result().data is None

    def delete(self) -> None:
        """Waits for the computation, then frees its result (a failed computation's
        array is simply marked deleted)."""
        self._deleted = True
        job = self._job
        job.event.wait()
        if job.error is None:
            self._result.delete()


class _Worker:
    """One device's FIFO queue and the daemon thread that drains it."""

    def __init__(self, device):
        self.queue = queue.SimpleQueue()
        self.submitted = 0     # jobs queued (by the dispatching threads)
        self.completed = 0     # jobs finished (by the worker)
        self.thread = threading.Thread(target=self._loop, name=f"jaxlite-dispatch-{device}",
                                       daemon=True)
        self.thread.start()

    def _loop(self):
        _tls.worker = self
        while True:
            job = self.queue.get()
            if job is None:
                return
            job.run()
            del job     # its results belong to their Arrays now, not to this thread
            self.completed += 1


_tls = threading.local()
_workers: dict = {}
_workers_lock = threading.Lock()


def _worker(device) -> _Worker:
    w = _workers.get(device)
    if w is None:
        with _workers_lock:
            w = _workers.get(device)
            if w is None:
                w = _workers[device] = _Worker(device)
    return w


def _in_worker_of(device) -> bool:
    w = getattr(_tls, "worker", None)
    return w is not None and _workers.get(device) is w


def submit(device, fn, args, what: str, owners) -> None:
    """Queues ``fn(values)`` on ``device``'s worker.

    Args:
      device: the Device whose worker runs it.
      fn: ``fn(list of NumPy values) -> list of Buffer``, one per owner.
      args: the operands: NumPy values, or PendingBuffers resolved on the worker.
      what: names the computation in its error (``"jit of f"``, ``"add"``).
      owners: the Arrays whose ``_buf`` are ``PendingBuffer``s of this job, index by
        index; each gets its Buffer when the job is done.
    The owners' PendingBuffers come from ``new_job``.

    Raises JaxRuntimeError (``RESOURCE_EXHAUSTED``) here, before anything is queued or
    counted, when a result has more bytes than the device can hold; the owners are then
    marked failed with that error.
    """
    job = owners[0]._buf._job if owners else _Job(fn, args, what)
    try:
        _buffer.check_fits([o.aval for o in owners], device, what)
    except Exception as e:
        job.error = e
        job.fn = job.args = None
        job.event.set()
        raise
    job.fn, job.args, job.what = fn, args, what
    job.owners = [weakref.ref(o) for o in owners]
    job.pending = [weakref.ref(o._buf) for o in owners]
    w = _worker(device)
    if getattr(_tls, "worker", None) is w:
        job.run()     # a callback on the worker dispatching again: run it now, in order
    else:
        w.submitted += 1
        w.queue.put(job)
    return job


def new_job(device, n: int, what: str) -> list:
    """``n`` PendingBuffers on ``device`` of one job not yet submitted (``submit`` it
    with Arrays holding them as owners)."""
    job = _Job(None, None, what)
    return [PendingBuffer(device, job) for _ in range(n)]


def pending_or_value(buf):
    """What a dispatched computation takes for an operand Buffer: its data if it is
    computed, its PendingBuffer (resolved on the worker) if not.  None: deleted."""
    if type(buf) is PendingBuffer:
        if buf._deleted:
            return None
        if not buf.ready:
            return buf
    return buf.data


def is_pending(buf) -> bool:
    """True for a PendingBuffer whose computation has not finished."""
    return type(buf) is PendingBuffer and not buf._job.event.is_set()


def wait_device(device) -> None:
    """Waits until every computation dispatched to ``device`` so far has finished (errors
    are not raised here: they surface where the results are used).  Costs nothing when
    the device's worker is idle."""
    w = _workers.get(device)
    if w is None or w.completed == w.submitted or getattr(_tls, "worker", None) is w:
        return
    barrier = _Job(lambda vals: [], [], "barrier")
    w.submitted += 1
    w.queue.put(barrier)
    barrier.event.wait()


def wait_all() -> None:
    """``wait_device`` for every device."""
    for d in list(_workers):
        wait_device(d)


atexit.register(wait_all)

__all__ = ["PendingBuffer", "AsyncComputationError", "submit", "new_job",
           "pending_or_value", "is_pending", "min_cost", "wait_device", "wait_all"]
