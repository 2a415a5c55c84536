"""Evaluating a jaxpr: by binding each equation's primitive (``eval_jaxpr``, which
re-traces under any transformation, or runs eagerly when there is none), or by calling each
primitive's NumPy implementation directly (``eval_jaxpr_impl``, the interpreter's
semantics: no tracing, no devices).

Layer: ir.
"""
from __future__ import annotations

import numpy as np

from .jaxpr import Jaxpr, Literal


def last_uses(jaxpr: Jaxpr) -> dict:
    """Each variable an equation of ``jaxpr`` reads -> the index of the last equation that
    reads it (outputs not counted)."""
    last = {}
    for k, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if not isinstance(v, Literal):
                last[v] = k
    return last


def dead_after(jaxpr: Jaxpr):
    """For each equation of ``jaxpr``, the variables no later equation or output reads:
    an operand at its last use, and a result nobody reads.  Evaluators drop them right
    there, so host memory holds the live set, not every intermediate of the program (a
    loop body's thousands of whole-array temporaries otherwise all live to its end)."""
    last = last_uses(jaxpr)
    kept = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    dead = [[] for _ in jaxpr.eqns]
    for v, k in last.items():
        if v not in kept:
            dead[k].append(v)
    for k, eqn in enumerate(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in last and v not in kept:
                dead[k].append(v)
    return [tuple(d) for d in dead]


def literal_operand(lit: Literal):
    """The value a rebinding evaluation passes for ``lit``: its NumPy value, or, for a
    weakly typed literal (``x * 3`` records ``3.0:f32[]`` weak), a value that keeps the weak
    type so the re-run program types its results as the staged one did (JAX): a Python
    scalar where that is the literal's dtype by default, else a weak 0-d Array."""
    aval = lit.aval
    if not aval.weak_type:
        return lit.val
    from ..core.avals import scalar_aval
    py = lit.val.item()
    if scalar_aval(py) == aval:
        return py
    from ..core.array import ArrayImpl
    from ..core.eager import put_host
    from ..runtime import get_default_device
    # a constant of the program, not a transfer (as a Python scalar operand is)
    return ArrayImpl(put_host(lit.val, aval.dtype, get_default_device()), aval, False)


def _evaluate(jaxpr: Jaxpr, consts, args, apply, dead=None, literal=None):
    env = {}

    def read(v):
        if isinstance(v, Literal):
            return v.val if literal is None else literal(v)
        return env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    if dead is None:
        dead = dead_after(jaxpr)
    for eqn, gone in zip(jaxpr.eqns, dead):
        out = apply(eqn, [read(v) for v in eqn.invars])
        outs = out if eqn.primitive.multiple_results else [out]
        for v, x in zip(eqn.outvars, outs):
            env[v] = x
        del out, outs
        for v in gone:
            env.pop(v, None)
    return [read(v) for v in jaxpr.outvars]


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Evaluates ``jaxpr`` on ``consts`` and ``args`` by binding; returns the outputs."""
    return _evaluate(jaxpr, consts, args,
                     lambda eqn, vals: eqn.primitive.bind(*vals, **eqn.params),
                     literal=literal_operand)


def eval_jaxpr_impl(jaxpr: Jaxpr, consts, *args, dead=None):
    """Evaluates ``jaxpr`` on NumPy values with the primitives' reference implementations;
    each result is cast to exactly the dtype its variable declares.  ``dead``:
    ``dead_after(jaxpr)``, computed once by a caller that evaluates ``jaxpr`` many times
    (a loop body)."""
    def apply(eqn, vals):
        out = eqn.primitive.impl(*vals, **eqn.params)
        if eqn.primitive.multiple_results:
            return [exact(x, v.aval.dtype) for x, v in zip(out, eqn.outvars)]
        return exact(out, eqn.outvars[0].aval.dtype)
    return _evaluate(jaxpr, consts, args, apply, dead)


def exact(x, dtype):
    """``x`` as an ndarray of exactly ``dtype`` (implementations may widen)."""
    if type(x) is not np.ndarray or x.dtype != dtype:
        return np.asarray(x, dtype=dtype)
    return x
