"""Making the size-1 broadcasting of elementwise equations explicit.

The elementwise primitives broadcast, as JAX's do: a rank-0 operand everywhere, and the
size-1 dimensions of an operand of the result's rank (``sub f32[2,3] f32[2,1]``, what
``x - x.max(1, keepdims=True)`` stages).  This pass gives every such operand of rank >= 1
its own ``broadcast_in_dim`` to the result's shape, so that each later pass and every code
generator sees elementwise equations whose operands are rank 0 or of the result's shape,
nothing else (the invariant the fusion pass, the native loops and the interpreter's
in-place buffer reuse are written for).  ``compose_broadcasts`` then folds a broadcast of
a broadcast (``f32[2] -> f32[2,1] -> f32[2,3]``) into one, and fusion reads the operand
through the broadcast (never materialised), so the optimised program is the one an
explicitly broadcasting front end would have produced.

Layer: compiler.  Pure; a program without such operands is returned unchanged (the same
object).  Only the top level is rewritten, as the other passes: the backends optimise
loop bodies and branches through the whole pipeline (``base.optimize_body``).
"""
from __future__ import annotations

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from ...primitives.shape import broadcast_in_dim_p


def _broadcast_operands(eqn):
    """The operands of elementwise ``eqn`` that broadcast size-1 dimensions (their
    positions), or () when none does."""
    p = eqn.primitive
    if not p.elementwise or p.multiple_results or len(eqn.outvars) != 1:
        return ()
    out = eqn.outvars[0].aval.shape
    return tuple(i for i, v in enumerate(eqn.invars)
                 if v.aval.ndim and tuple(v.aval.shape) != tuple(out))


def check_elementwise_operands(eqn, where: str) -> None:
    """Raises RuntimeError (an internal error) when an operand of elementwise ``eqn`` is
    neither rank 0 nor of its result's shape: what code generators after this pass rely
    on (``where`` names the caller)."""
    if _broadcast_operands(eqn):
        shapes = [tuple(v.aval.shape) for v in eqn.invars]
        raise RuntimeError(f"internal error in {where}: {eqn.primitive.name} of operand "
                           f"shapes {shapes} -> {tuple(eqn.outvars[0].aval.shape)} reached "
                           f"it with implicit size-1 broadcasting (the expand_broadcasts "
                           f"pass makes it explicit)")


def expand_size1_broadcasts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with a ``broadcast_in_dim`` before every elementwise operand that
    broadcasts size-1 dimensions (module docstring); ``closed`` itself when there is
    none."""
    jaxpr = closed.jaxpr
    if not any(_broadcast_operands(e) for e in jaxpr.eqns):
        return closed
    eqns = []
    for eqn in jaxpr.eqns:
        positions = _broadcast_operands(eqn)
        if not positions:
            eqns.append(eqn)
            continue
        out = eqn.outvars[0].aval
        invars = list(eqn.invars)
        for i in positions:
            v = invars[i]
            if len(v.aval.shape) != len(out.shape) or any(
                    a not in (1, b) for a, b in zip(v.aval.shape, out.shape)):
                raise RuntimeError(f"internal error: {eqn.primitive.name} operand "
                                   f"{v.aval.str_short()} cannot broadcast to "
                                   f"{out.str_short()}")
            wide = Var(v.aval.update(shape=tuple(out.shape)))
            eqns.append(JaxprEqn(broadcast_in_dim_p, [v], [wide],
                                 {"shape": tuple(out.shape),
                                  "broadcast_dimensions": tuple(range(out.ndim)),
                                  "sharding": None}, eqn.source))
            invars[i] = wide
        eqns.append(eqn.replace(invars=invars))
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars),
                       closed.consts)
