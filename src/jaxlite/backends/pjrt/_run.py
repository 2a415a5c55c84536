"""One call of a jitted program with donated arguments on a PJRT device.

Layer: backends (pjrt).  ``PjrtBackend.run_compiled`` sends a call on one device with
donated arguments here (every other call runs as the runtime's default, core/run.py).
The donated Arrays that live on the call's device and that an output can take (one of
the same size in bytes, as on the CPU platform: runtime/buffer.py ``plan_donation``) are
consumed: their Buffers are deleted before the run (so the device's bytes never count
them twice, and reading one afterwards raises JAX's RuntimeError), and their PJRT
buffers are passed as donated, so that XLA may write an output into them
(``PjrtExecutable.run``).  A donated argument no output can take stays valid, with
JAX's warning once per compiled signature; one that must first be copied onto the
device (another device's, a NumPy array) is not donated.
"""
from __future__ import annotations

import warnings

from ..._traceback import user_stacklevel as _user_stacklevel
from ...core.array import ArrayImpl
from ...core.eager import backend_operands, wrap
from ...runtime import buffer as _buffer


def run_donating(backend, compiled, leaves, placement) -> list:
    """``compiled`` run once on ``leaves`` on ``placement.device`` (one device) with the
    donated positions ``placement.donate`` given to PJRT's donation where they can be.

    Raises RuntimeError (before anything is deleted) when a donated buffer is also passed
    at another position of the call; JaxRuntimeError (RESOURCE_EXHAUSTED) when an
    allocation fails; whatever the executable raises."""
    device, committed = placement.device, placement.committed
    program = compiled._program
    ex = program.executable_for(device)
    here = tuple(k for k in placement.donate
                 if type(leaves[k]) is ArrayImpl and leaves[k]._buf.device is device)
    plans = compiled.__dict__.setdefault("_pjrt_donation_plans", {})
    plan = plans.get(here)
    if plan is None:
        plan = plans[here] = _buffer.plan_donation(ex.in_avals, ex.out_avals, here)
        if plan[1]:
            warnings.warn(_buffer.unusable_donation_message(
                [ex.in_avals[k] for k in plan[1]]), UserWarning, stacklevel=_user_stacklevel())
    temps = []
    vals = backend_operands(leaves, device, temps)
    try:
        donated = _buffer.take_donated(leaves, vals, plan[0]) if plan[0] else None
        outs = device._run_charged(ex.temp_bytes, lambda: ex.run(vals, donated))
        outs = [wrap(o, a, device, committed, vals) for o, a in zip(outs, ex.out_avals)]
    except MemoryError as e:   # an allocation failed: JAX's RESOURCE_EXHAUSTED
        raise _buffer.memory_error(e, device, placement.what) from e
    finally:
        for t in temps:
            t.delete()
    if placement.check is not None:     # jax_debug_nans / jax_debug_infs
        placement.check(leaves, outs)
    return outs
