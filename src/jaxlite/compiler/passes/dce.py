"""Dead-code elimination: drop equations whose outputs nobody reads (effects stay)."""
from __future__ import annotations

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ._rewrite import has_effects


def dce(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Removes equations with no used outputs and no effect, then unused constants."""
    jaxpr = closed.jaxpr
    live = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if has_effects(eqn) or any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if not isinstance(v, Literal))
    kept.reverse()
    consts = [(cv, c) for cv, c in zip(jaxpr.constvars, closed.consts) if cv in live]
    new = Jaxpr([cv for cv, _ in consts], jaxpr.invars, kept, jaxpr.outvars)
    return ClosedJaxpr(new, [c for _, c in consts])
