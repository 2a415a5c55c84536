"""``eval_jaxpr``: run a jaxpr by binding each equation's primitive.

Layer: ir.  Binding (not calling implementations) means the same function re-traces a
jaxpr under any transformation, or evaluates it eagerly when there is none.
"""
from __future__ import annotations

import numpy as np

from .jaxpr import Jaxpr, Literal


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Evaluates ``jaxpr`` on ``consts`` and ``args``; returns the list of outputs."""
    env = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        out = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        for v, x in zip(eqn.outvars, outs):
            env[v] = x
    return [read(v) for v in jaxpr.outvars]


def eval_jaxpr_impl(jaxpr: Jaxpr, consts, *args):
    """Evaluates ``jaxpr`` on NumPy values by calling each primitive's reference
    implementation directly (no tracing, no devices): the interpreter's semantics."""
    env = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        out = eqn.primitive.impl(*[read(v) for v in eqn.invars], **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        for v, x in zip(eqn.outvars, outs):
            env[v] = exact(x, v.aval.dtype)
    return [read(v) for v in jaxpr.outvars]


def exact(x, dtype):
    """``x`` as an ndarray of exactly ``dtype`` (implementations may widen)."""
    if type(x) is not np.ndarray or x.dtype != dtype:
        return np.asarray(x, dtype=dtype)
    return x
