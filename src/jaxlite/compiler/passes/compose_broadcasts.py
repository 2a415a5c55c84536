"""Composing a broadcast of a broadcast into one broadcast of the first operand.

``broadcast_in_dim(broadcast_in_dim(x, s1, d1), s2, d2)`` is
``broadcast_in_dim(x, s2, [d2[i] for i in d1])``: each dimension of ``x`` lands where the
inner broadcast put it, then where the outer one put that.  The sizes always agree (a
dimension of ``x`` is 1 or equal to the inner result's, which is 1 or equal to the outer
result's), so the rewrite is exact.

Why: a value broadcast inside a per-device program and broadcast again over the devices
(a bias ``b`` added to the rows of each device's batch under ``jit(shard_map(...))`` or
``jit(vmap(...))``) otherwise reaches a fused kernel as a stride-0 view of the inner
result, which the kernel indexes through a non-contiguous layout it cannot vectorise;
composed, the kernel reads ``b`` itself.  The inner equation is left for ``dce`` to drop
when nothing else reads it.  Programs without the pattern are returned unchanged (the
same object).  Only the top level is rewritten (as ``batch_dot_sum``).
"""
from __future__ import annotations

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ...primitives.shape import broadcast_in_dim_p, reshape_p


def _unit_dims_only(eqn) -> bool:
    """Whether a ``broadcast_in_dim`` only inserts size-1 dimensions (``keepdims``'s
    ``f32[3] -> f32[3,1]``): a reshape in effect."""
    x = eqn.invars[0]
    out = eqn.outvars[0].aval.shape
    dims = tuple(eqn.params["broadcast_dimensions"])
    return (list(dims) == sorted(dims) and tuple(out[d] for d in dims) == x.aval.shape
            and all(out[i] == 1 for i in range(len(out)) if i not in dims))


def compose_broadcasts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Rewrites each ``broadcast_in_dim`` of a ``broadcast_in_dim`` result into one
    broadcast of the inner operand (module docstring), and reads the operand of a
    size-1-dimension broadcast where a reshape takes it back to its own shape (a
    ``keepdims`` reduction squeezed again for a broadcast); returns ``closed`` itself when
    nothing matched."""
    jaxpr = closed.jaxpr
    inner = {}          # outvar of a broadcast_in_dim -> (its operand, its dimensions)
    unit = {}           # outvar of a size-1-dimension broadcast -> its operand
    alias = {}          # outvar of a reshape undoing such a broadcast -> that operand
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        if alias and any(isinstance(v, Var) and v in alias for v in eqn.invars):
            eqn = eqn.replace(invars=[alias.get(v, v) if isinstance(v, Var) else v
                                      for v in eqn.invars])
            changed = True
        if (eqn.primitive is reshape_p and isinstance(eqn.invars[0], Var)
                and eqn.invars[0] in unit
                and eqn.outvars[0].aval.shape == unit[eqn.invars[0]].aval.shape
                and eqn.params.get("dimensions") is None):
            alias[eqn.outvars[0]] = unit[eqn.invars[0]]
        if eqn.primitive is broadcast_in_dim_p:
            if not isinstance(eqn.invars[0], Literal) and _unit_dims_only(eqn):
                unit[eqn.outvars[0]] = eqn.invars[0]
            x = eqn.invars[0]
            dims = tuple(eqn.params["broadcast_dimensions"])
            if not isinstance(x, Literal) and x in inner:
                src, d1 = inner[x]
                dims = tuple(dims[i] for i in d1)
                eqn = eqn.replace(invars=[src], params={**eqn.params,
                                                        "broadcast_dimensions": dims})
                changed = True
            inner[eqn.outvars[0]] = (eqn.invars[0], dims)
        eqns.append(eqn)
    if not changed:
        return closed
    outvars = [alias.get(v, v) if isinstance(v, Var) else v for v in jaxpr.outvars]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars), closed.consts)
