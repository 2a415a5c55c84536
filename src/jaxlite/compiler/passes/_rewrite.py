"""A small helper for passes that rebuild a jaxpr equation by equation."""
from __future__ import annotations

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal


def has_effects(eqn) -> bool:
    """True when ``eqn`` has an effect: an effectful primitive, or a program it carries (a
    loop body, a branch, a nested call) containing one."""
    if eqn.primitive.effectful:
        return True
    for p in eqn.params.values():
        for j in (p if isinstance(p, tuple) else (p,)):
            if isinstance(j, ClosedJaxpr):
                j = j.jaxpr
            if isinstance(j, Jaxpr) and any(has_effects(e) for e in j.eqns):
                return True
    return False


class Renamer:
    """Maps old variables to their replacements (a Var or a Literal)."""

    def __init__(self):
        self.env = {}

    def __call__(self, v):
        if isinstance(v, Literal):
            return v
        return self.env.get(v, v)

    def set(self, old, new):
        self.env[old] = new
