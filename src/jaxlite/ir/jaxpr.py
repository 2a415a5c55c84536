"""The IR: a typed, first-order program of primitive applications (JAX's jaxpr).

Layer: ir.  ``Jaxpr(constvars, invars, eqns, outvars)``; each ``JaxprEqn`` applies one
primitive to variables or literals and binds fresh output variables.  ``ClosedJaxpr``
pairs a jaxpr with the values of its constvars.  ``str(jaxpr)`` prints JAX's notation::

    { lambda ; a:f32[3] b:f32[3]. let
        c:f32[] = dot_general[dimension_numbers=(([0], [0]), ([], []))] a b
        d:f32[] = reduce_sum[axes=(0,)] a
        e:f32[] = add c d
      in (e,) }
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray


class Var:
    """A typed variable; identity is the variable."""

    __slots__ = ("aval", "hint")

    def __init__(self, aval: ShapedArray, hint: str = ""):
        self.aval = aval
        self.hint = hint

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation (``2.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val})"


class JaxprEqn:
    """``outvars = primitive[params] invars``; ``source`` is the user's file:line if known."""

    __slots__ = ("primitive", "invars", "outvars", "params", "source")

    def __init__(self, primitive, invars, outvars, params, source=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source = source

    def replace(self, **kw):
        d = dict(primitive=self.primitive, invars=self.invars, outvars=self.outvars,
                 params=self.params, source=self.source)
        d.update(kw)
        return JaxprEqn(**d)


class Jaxpr:
    """A program: ``constvars``, ``invars``, ``eqns`` in order, ``outvars`` (vars or literals)."""

    __slots__ = ("constvars", "invars", "eqns", "outvars")

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr with the values of its constvars (``consts``: Arrays or NumPy arrays)."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


def hoist_consts(closed: ClosedJaxpr):
    """``(closed', consts)``: the constvars of ``closed`` turned into leading invars, so
    that the constants (which may be tracers of an enclosing transformation) can be passed
    as operands of an equation that carries the program (every control-flow body, custom
    derivative and checkpoint program is stored this way)."""
    j = closed.jaxpr
    if not j.constvars:
        return closed, []
    return ClosedJaxpr(Jaxpr([], list(j.constvars) + list(j.invars), j.eqns, j.outvars),
                       []), list(closed.consts)


# ---- printer ----------------------------------------------------------------------------

def _name(i: int) -> str:
    s = ""
    while True:
        s = chr(ord("a") + i % 26) + s
        i //= 26
        if i == 0:
            return s


class _Names:
    def __init__(self):
        self.names = {}

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return pp_literal(v)
        n = self.names.get(id(v))
        if n is None:
            n = self.names[id(v)] = _name(len(self.names))
        return n


def pp_literal(lit: Literal) -> str:
    v = np.asarray(lit.val)
    if v.dtype == np.bool_:
        s = str(bool(v))
    elif dtypes.is_float(v.dtype):
        s = repr(float(v))
    else:
        s = str(v.item())
    return f"{s}:{lit.aval.str_short()}"


def pp_param(v, names, indent) -> str:
    if isinstance(v, ClosedJaxpr):
        v = v.jaxpr
    if isinstance(v, Jaxpr):
        inner = pp_jaxpr(v, indent + 4)
        return inner.lstrip()
    if isinstance(v, np.dtype):
        return "bfloat16" if v == dtypes._BF16 else v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, tuple):
        inner = ", ".join(pp_param(x, names, indent) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(pp_param(x, names, indent) for x in v) + "]"
    if callable(v):
        return getattr(v, "__name__", repr(v))
    return str(v)


def pp_eqn(eqn: JaxprEqn, names, indent: int) -> str:
    outs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in eqn.outvars) or "_"
    params = {k: p for k, p in eqn.params.items() if not k.startswith("_")}
    ps = ""
    if params:
        items = [f"{k}={pp_param(p, names, indent)}" for k, p in params.items()]
        one = " ".join(items)
        if len(one) <= 60 and "\n" not in one:
            ps = f"[{one}]"
        else:
            pad = " " * (indent + 2)
            ps = "[\n" + "".join(f"{pad}{i}\n" for i in items) + " " * indent + "]"
    args = " ".join(names(v) for v in eqn.invars)
    return f"{' ' * indent}{outs} = {eqn.primitive.name}{ps} {args}".rstrip()


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, names=None) -> str:
    """JAX's textual form of ``jaxpr`` (``{ lambda consts ; args. let eqns in (outs) }``)."""
    names = names or _Names()
    pad = " " * indent
    cvs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in jaxpr.constvars)
    ivs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in jaxpr.invars)
    head = f"{cvs}; {ivs}" if cvs else f"; {ivs}"
    lines = [f"{pad}{{ lambda {head}. let"]
    for e in jaxpr.eqns:
        lines.append(pp_eqn(e, names, indent + 4))
    outs = ", ".join(names(v) for v in jaxpr.outvars)
    lines.append(f"{pad}  in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}")
    return "\n".join(lines)
