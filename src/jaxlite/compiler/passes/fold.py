"""Constant folding: an equation whose inputs are all literals or constants is evaluated
at compile time (with the primitive's reference implementation) when its result is small
and its primitive is ``foldable`` (a fact of its declaration).  Generators (iota,
broadcasts) and copies are not: materialising them would only cost memory; nor are loops,
branches and calls, which are not run at compile time."""
from __future__ import annotations

import numpy as np

from ...core.avals import ShapedArray
from ...core.eager import host_value
from ...ir.interpret import exact
from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ._rewrite import Renamer

MAX_FOLD_ELEMENTS = 1 << 16


def fold_constants(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Evaluates constant subexpressions; scalar results become literals, others new
    constants."""
    jaxpr = closed.jaxpr
    known = {cv: host_value(c) for cv, c in zip(jaxpr.constvars, closed.consts)}
    consts_v, consts = list(jaxpr.constvars), list(closed.consts)
    rename = Renamer()
    eqns = []

    def value(v):
        if isinstance(v, Literal):
            return np.asarray(v.val)
        return known.get(v)

    for eqn in jaxpr.eqns:
        invars = [rename(v) for v in eqn.invars]
        vals = [value(v) for v in invars]
        p = eqn.primitive
        foldable = (invars and all(v is not None for v in vals) and p.foldable
                    and not p.effectful
                    and all(o.aval.size <= MAX_FOLD_ELEMENTS for o in eqn.outvars))
        if not foldable:
            eqns.append(eqn.replace(invars=invars))
            continue
        with np.errstate(all="ignore"):
            out = p.impl(*vals, **eqn.params)
        outs = out if p.multiple_results else [out]
        for ov, x in zip(eqn.outvars, outs):
            x = exact(x, ov.aval.dtype)
            if ov.aval.shape == ():
                rename.set(ov, Literal(x, ov.aval))
            else:
                nv = Var(ShapedArray(ov.aval.shape, ov.aval.dtype, ov.aval.weak_type))
                x = np.array(x)
                x.flags.writeable = False
                consts_v.append(nv)
                consts.append(x)
                known[nv] = x
                rename.set(ov, nv)
    new = Jaxpr(consts_v, jaxpr.invars, eqns, [rename(v) for v in jaxpr.outvars])
    return ClosedJaxpr(new, consts)
