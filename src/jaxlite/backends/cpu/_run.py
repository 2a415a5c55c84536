"""One call of a jitted program on a CPU device: the CPU platform's ``run_compiled``.

Layer: backends (cpu).  ``jit`` hands over the compiled program, the call's flat
arguments and its placement (runtime/backend.py ``Placement``); here the arguments become
host values (implicit transfers counted), donated buffers an output can take are consumed,
and the program runs inline with its temporaries charged to the device, or, when its
estimated work reaches ``jaxlite_async_min_cost``, on the device's worker thread, its
outputs returned at once as pending Arrays (runtime/dispatch.py).
"""
from __future__ import annotations

import warnings

from ... import monitoring
from ..._traceback import user_stacklevel as _user_stacklevel
from ...core.array import ArrayImpl
from ...core.eager import dispatch_program, fp_ignore_begin, fp_ignore_end, value_on, wrap
from ...runtime import buffer as _buffer
from ...runtime import dispatch as _dispatch
from ...runtime.backend import Backend as _Backend


def run_compiled(backend, compiled, leaves, placement) -> list:
    """``CpuBackend.run_compiled`` (see runtime/backend.py ``Backend.run_compiled``):
    ``compiled`` run once on ``leaves`` on ``placement.device``; a call over a mesh
    (``placement.out_shardings`` given) as the runtime's default runs it (core/run.py)."""
    if placement.out_shardings is not None:
        return _Backend.run_compiled(backend, compiled, leaves, placement)
    device, committed, donate = placement.device, placement.committed, placement.donate
    program = compiled._program
    ex = program.executable if device.backend is program.backend else \
        program.executable_for(device)
    if not donate and not monitoring._listeners and \
            program.dispatch_cost() >= _dispatch._min_cost:
        # big work: on the device's worker; pending arguments on this device are passed
        # as futures (the worker's queue is FIFO), others are read (waited for) now
        vals = [_dispatch.pending_or_value(x._buf) if type(x) is ArrayImpl and
                _dispatch.is_pending(x._buf) and x._buf.device is device
                else value_on(x, device) for x in leaves]
        return dispatch_program(program, vals, device, committed, ex.out_avals)
    vals = [value_on(x, device) for x in leaves]
    donated = _donate_for_run(compiled, ex, leaves, vals, donate) if donate else None

    def run():
        outs = ex.run(vals, donated) if donated else ex.run(vals)
        return [wrap(o, a, device, committed, vals) for o, a in zip(outs, ex.out_avals)]
    token = fp_ignore_begin()   # JAX computes inf/nan (and casts) without warnings
    try:
        outs = device._run_charged(ex.temp_bytes, run)
    except MemoryError as e:   # an allocation failed: JAX's RESOURCE_EXHAUSTED
        raise _buffer.memory_error(e, device, placement.what) from e
    finally:
        fp_ignore_end(token)
    if placement.check is not None:     # jax_debug_nans / jax_debug_infs
        placement.check(leaves, outs)
    return outs


def _donate_for_run(compiled, ex, leaves, vals, donate):
    """Consumes the donated leaves an output can take (deleted before the run, so the
    device's bytes never count them twice) and returns the positions whose buffers the
    executable may write into; warns once per compiled signature about donated leaves no
    output can take (they stay valid, as in JAX)."""
    plans = compiled.__dict__.setdefault("_donation_plans", {})
    plan = plans.get(donate)
    if plan is None:
        plan = plans[donate] = _buffer.plan_donation(ex.in_avals, ex.out_avals, donate)
        if plan[1]:
            warnings.warn(_buffer.unusable_donation_message(
                [ex.in_avals[k] for k in plan[1]]), UserWarning, stacklevel=_user_stacklevel())
    return _buffer.take_donated(leaves, vals, plan[0]) if plan[0] else None
