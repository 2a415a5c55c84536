"""``jaxlite.profiler``: traces of a region of a program and named annotations (mirrors
``jax.profiler``'s ``trace``, ``start_trace``/``stop_trace``, ``TraceAnnotation``,
``StepTraceAnnotation`` and ``annotate_function``).

Layer: tools.  JAX writes a TensorBoard/Perfetto trace of XLA's device activity; jaxlite
has no such profiler, so a trace here is a ``jaxlite doctor`` recording of the region:
compiles and their reasons, jitted calls, eager operations, transfers, allocations and
peak memory per device, and the annotations' times.  ``stop_trace`` writes it under
``log_dir/plugins/profile/<date_time>/`` (the directory layout JAX uses) as
``jaxlite_doctor.json`` and ``jaxlite_doctor.txt``.  Annotations are events of
``jaxlite.monitoring``: they cost one list test when nothing records, and ``jaxlite
doctor`` (which records a whole program) reports them too.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
import time

from . import monitoring

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function"]

_lock = threading.Lock()
_active: dict = {}     # the one trace running: recorder, log_dir, start time, memory state


def start_trace(log_dir, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options=None) -> None:
    """Starts recording (``jax.profiler.start_trace``); ``stop_trace`` ends it and writes
    the report under ``log_dir``.  ``create_perfetto_link``/``create_perfetto_trace`` and
    ``profiler_options`` are accepted for compatibility; there is no Perfetto trace.

    Raises:
      RuntimeError: a trace is already running (one at a time, as in JAX).
    """
    from .runtime import devices
    from .tools import _doctor_record
    with _lock:
        if _active:
            raise RuntimeError("Profile has already been started. Only one profile may be "
                               "run at a time.")
        devs = devices()
        for d in devs:
            d.reset_peak_memory()
        rec = _doctor_record.Recorder()
        rec.sample_memory()
        _active.update(recorder=rec, log_dir=os.fspath(log_dir), t0=time.perf_counter(),
                       allocs0={str(d): d.memory_stats()["num_allocs"] for d in devs})
        monitoring.register_listener(rec)


def stop_trace() -> None:
    """Stops the running trace and writes its report (``jax.profiler.stop_trace``):
    ``log_dir/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/jaxlite_doctor.json`` (the doctor's
    JSON report, with an ``annotations`` section) and ``jaxlite_doctor.txt`` (its text).

    Raises:
      RuntimeError: no trace is running ("No profile started").
    """
    from .runtime import devices
    from .tools import _doctor_report, doctor
    with _lock:
        if not _active:
            raise RuntimeError("No profile started")
        state = dict(_active)
        _active.clear()
        rec = state["recorder"]
        monitoring.unregister_listener(rec)
    seconds = time.perf_counter() - state["t0"]
    rec.sample_memory()
    still_alive = rec.close()
    mem_end = {}
    for d in devices():
        st = d.memory_stats()
        mem_end[str(d)] = {"peak_bytes_in_use": st["peak_bytes_in_use"],
                           "bytes_in_use": st["bytes_in_use"],
                           "num_allocs": st["num_allocs"] - state["allocs0"].get(str(d), 0)}
    status = {"ok": True, "exit_code": 0, "error": None, "error_summary": ""}
    report = _doctor_report.build_report(rec, script="<jaxlite.profiler trace>", argv=[],
                                         status=status, seconds=seconds, mem_end=mem_end,
                                         still_alive=still_alive)
    out_dir = os.path.join(state["log_dir"], "plugins", "profile",
                           time.strftime("%Y_%m_%d_%H_%M_%S"))
    os.makedirs(out_dir, exist_ok=True)
    doctor.write_json(report, os.path.join(out_dir, "jaxlite_doctor.json"))
    with open(os.path.join(out_dir, "jaxlite_doctor.txt"), "w", encoding="utf-8") as fh:
        fh.write(_doctor_report.format_text(report))


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options=None):
    """Context manager (or decorator) recording its block (``jax.profiler.trace``):
    ``start_trace`` on entry, ``stop_trace`` on exit (also when the block raises).
    Arguments as ``start_trace``."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """Context manager naming a span of host time (``jax.profiler.TraceAnnotation``).

    While a trace (``start_trace``) or ``jaxlite doctor`` records, each block's duration
    is tallied under ``name`` (count, total, mean) with the source line of its first
    use and the enclosing ``named_scope``s.  ``kwargs`` are accepted as metadata.
    Otherwise it costs a clock read.
    """

    _kind = "trace"

    def __init__(self, name: str, **kwargs):
        self.name = name
        self.kwargs = kwargs
        self._start = None

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if monitoring._listeners:
            from .transforms.scopes import current_name_stack
            end = time.perf_counter()
            monitoring.emit("annotation", kind=self._kind, name=self.name,
                            start=self._start, seconds=end - self._start,
                            step_num=self.kwargs.get("step_num"),
                            scope=current_name_stack(), metadata=dict(self.kwargs))
        return False


class StepTraceAnnotation(TraceAnnotation):
    """A ``TraceAnnotation`` marking one step of a training loop
    (``jax.profiler.StepTraceAnnotation``); pass ``step_num=`` to number it.  The report
    lists the step numbers seen per name."""

    _kind = "step"

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)


def annotate_function(func, name: str | None = None, **decorator_kwargs):
    """``func`` wrapped so that each call is a ``TraceAnnotation`` named ``name``
    (default: the function's qualified name), mirroring ``jax.profiler.annotate_function``.
    The wrapper keeps ``func``'s name and docstring; results are unchanged."""
    label = name if name is not None else getattr(func, "__qualname__", None) or \
        getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def annotated(*args, **kwargs):
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)
    return annotated
