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

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ...primitives.shape import broadcast_in_dim_p


def compose_broadcasts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Rewrites each ``broadcast_in_dim`` of a ``broadcast_in_dim`` result into one
    broadcast of the inner operand (module docstring); returns ``closed`` itself when
    nothing matched."""
    jaxpr = closed.jaxpr
    inner = {}          # outvar of a broadcast_in_dim -> (its operand, its dimensions)
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        if eqn.primitive is broadcast_in_dim_p:
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
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars),
                       closed.consts)
