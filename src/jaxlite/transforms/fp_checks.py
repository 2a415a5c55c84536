"""``jax_debug_nans`` / ``jax_debug_infs`` for jitted programs: when a compiled program's
outputs hold a NaN (an infinity), its traced program is run again operation by operation,
eagerly, so that the first primitive producing one raises FloatingPointError naming it (the
eager check of core/eager.py), as JAX re-runs the de-optimised function.

Layer: transforms.  Nested calls (``jit``, ``custom_jvp``/``custom_vjp`` calls, checkpoint)
are entered, so the error names the primitive inside them; loops and branches run as one
operation each.
"""
from __future__ import annotations

import logging

from ..core import eager as _eager
from ..ir.interpret import _evaluate

logger = logging.getLogger("jaxlite")

_ENTERED = ("jit", "custom_jvp_call", "custom_vjp_call", "checkpoint")


def _apply(eqn, vals):
    prim = eqn.primitive
    closed = eqn.params.get("jaxpr")
    if prim.name in _ENTERED and closed is not None:
        return _evaluate(closed.jaxpr, closed.consts, vals, _apply)
    return prim.bind(*vals, **eqn.params)


def check_jit_outputs(compiled, leaves, outs) -> None:
    """Raises FloatingPointError when ``outs`` (the Arrays a run of ``compiled`` on
    ``leaves`` returned) hold a value the enabled checks forbid.

    The program is run again op by op first, so the error names the primitive ("invalid
    value (nan) encountered in log"); when the op-by-op run produces no such value (the
    compiled program alone did), the error names the jitted function and says so.
    Does nothing when the checks are off or the outputs are clean.
    """
    what = _eager.fp_problem(outs)
    if what is None:
        return
    name = compiled._fun_name
    logger.warning("Invalid %s value encountered in the output of jit(%s). Running it "
                   "again operation by operation to find the operation.", what, name)
    closed = compiled._lowered.closed_jaxpr
    _evaluate(closed.jaxpr, closed.consts, list(leaves), _apply)   # raises, naming it
    raise FloatingPointError(
        f"invalid value ({what}) encountered in jit({name}). With jax_debug_nans or "
        f"jax_debug_infs on, the function was run again without jit, operation by "
        f"operation, to find the operation that produced it, but that run produced no "
        f"invalid value: only the compiled program did (its optimisations may compute in "
        f"another order or precision). Run it with jax.disable_jit() to debug it eagerly.")
