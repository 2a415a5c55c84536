"""Common-subexpression elimination: an equation identical to an earlier one (same
primitive, same inputs, same params) reuses the earlier outputs."""
from __future__ import annotations

import numpy as np

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ._rewrite import Renamer, has_effects


def _operand_key(v):
    if isinstance(v, Literal):
        a = np.asarray(v.val)
        return ("lit", a.dtype.str, a.tobytes(), v.aval.weak_type)
    return ("var", id(v))


def cse(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Merges repeated pure computations.  Effectful equations are never merged."""
    jaxpr = closed.jaxpr
    rename = Renamer()
    seen = {}
    eqns = []
    for eqn in jaxpr.eqns:
        invars = [rename(v) for v in eqn.invars]
        if not has_effects(eqn):
            try:
                key = (eqn.primitive, tuple(_operand_key(v) for v in invars),
                       tuple(sorted(eqn.params.items())))
                hash(key)
            except TypeError:
                key = None
            if key is not None and key in seen:
                for old, new in zip(eqn.outvars, seen[key]):
                    rename.set(old, new)
                continue
            if key is not None:
                seen[key] = eqn.outvars
        eqns.append(eqn.replace(invars=invars))
    new = Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [rename(v) for v in jaxpr.outvars])
    return ClosedJaxpr(new, closed.consts)
