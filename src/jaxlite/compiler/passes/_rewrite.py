"""A small helper for passes that rebuild a jaxpr equation by equation."""
from __future__ import annotations

from ...ir.jaxpr import Literal


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
