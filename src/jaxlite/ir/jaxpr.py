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

import enum
import re

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
        # JAX's text
        return f"Var(id={id(self)}):{self.aval._type_str()}"


class Literal:
    """A scalar constant written inline in an equation (``2.0:f32[]``).  ``shown``: the
    Python float it was made from, if any, which the printer writes as Python does
    (``0.1:f32[]``, as JAX prints a Python scalar it has not converted), while ``val``
    holds the value in the literal's dtype."""

    __slots__ = ("val", "aval", "shown")

    def __init__(self, val, aval: ShapedArray, shown=None):
        self.val = val
        self.aval = aval
        self.shown = shown

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

    def __str__(self):
        """The equation alone, its variables named afresh (``a:f32[] = sin b``), as
        JAX prints one."""
        return _layout(_eqn_doc(self, _Names()))

    __repr__ = __str__


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

    def pretty_print(self, *, source_info=False, print_shapes=True, custom_pp_eqn_rules=True,
                     name_stack=False, print_effects=False, use_color=False) -> str:
        """The printed program (``jax.core.Jaxpr.pretty_print``): ``print_shapes=False``
        leaves the types off the binders; ``custom_pp_eqn_rules=False`` prints every
        parameter as stored.  Raises NotImplementedError for ``source_info``,
        ``name_stack``, ``print_effects`` or ``use_color`` true (jaxlite's printer has
        none of them)."""
        return _pretty_print(self, source_info, print_shapes, custom_pp_eqn_rules,
                             name_stack, print_effects, use_color)


class ClosedJaxpr:
    """A jaxpr with the values of its constvars (``consts``: Arrays or NumPy arrays).
    ``collectives``: the communications its shard_map bodies make, recorded while it was
    traced (their equations are expanded over the devices), for reports only."""

    __slots__ = ("jaxpr", "consts", "collectives")

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.collectives = ()

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, *, source_info=False, print_shapes=True, custom_pp_eqn_rules=True,
                     name_stack=False, print_effects=False, use_color=False) -> str:
        """``self.jaxpr.pretty_print(...)`` (``jax.core.ClosedJaxpr.pretty_print``)."""
        return _pretty_print(self.jaxpr, source_info, print_shapes, custom_pp_eqn_rules,
                             name_stack, print_effects, use_color)


def _pretty_print(jaxpr, source_info, print_shapes, custom_rules, name_stack, effects,
                  use_color):
    for opt, v in (("source_info", source_info), ("name_stack", name_stack),
                   ("print_effects", effects), ("use_color", use_color)):
        if v:
            raise NotImplementedError(f"Jaxpr.pretty_print({opt}=True): jaxlite's printer "
                                      f"shows no {opt.replace('_', ' ')}")
    names = _Names(_unused_outputs(jaxpr))
    names.print_shapes = bool(print_shapes)
    names.custom_rules = bool(custom_rules)
    return pp_jaxpr(jaxpr, names=names)


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
#
# The layout is JAX's (0.10): a document of text, optional line breaks, indentation and
# groups, laid out at 80 columns by the "strictly pretty" rule -- a group is printed on one
# line when it fits from the current column, else each of its own breaks starts a new line.
# Variables are named a, b, ..., z, ba, ... in printing order, continuously through nested
# programs; a nested jit's program reuses the names of the operands and results it is bound
# to; outputs nobody reads are printed ``_`` at top level; parameters are sorted (a call's
# ``name`` first), as the primitive's ``pp_params`` gives them (JAX leaves some out at
# their defaults or spells them its own way); a nested program with more than 10
# equations, or one used twice, is printed once before the top-level program as
# ``let name = { ... } in``.

_WIDTH = 80


def _text(s):
    return ("t", s)


def _brk(s=" "):
    return ("b", s)


def _nest(n, doc):
    return ("n", n, doc)


def _group(doc):
    return ("g", doc)


def _cat(*docs):
    return ("c", docs)


def _join(sep, docs):
    out = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return ("c", tuple(out))


def _flat_width(doc, limit):
    """Width of ``doc`` on one line, counting no further than ``limit``."""
    total, stack = 0, [doc]
    while stack and total <= limit:
        d = stack.pop()
        k = d[0]
        if k == "t" or k == "b":
            total += len(d[1])
        elif k == "c":
            stack.extend(reversed(d[1]))
        elif k == "n":
            stack.append(d[2])
        else:
            stack.append(d[1])
    return total


def _layout(doc, width=_WIDTH) -> str:
    out, col = [], 0
    stack = [(0, False, doc)]               # (indent, flat, doc)
    while stack:
        indent, flat, d = stack.pop()
        k = d[0]
        if k == "t":
            out.append(d[1])
            col += len(d[1])
        elif k == "b":
            if flat:
                out.append(d[1])
                col += len(d[1])
            else:
                out.append("\n" + " " * indent)
                col = indent
        elif k == "c":
            stack.extend((indent, flat, c) for c in reversed(d[1]))
        elif k == "n":
            stack.append((indent + d[1], flat, d[2]))
        else:
            fits = flat or col + _flat_width(d[1], width - col) <= width
            stack.append((indent, fits, d[1]))
    return "".join(out)


def _name(i: int) -> str:
    s = ""
    while True:
        s = chr(ord("a") + i % 26) + s
        i //= 26
        if i == 0:
            return s


class _Names:
    """Variable names in order of first appearance; names of shared programs are skipped."""

    def __init__(self, preset=None):
        self.names = dict(preset or {})
        self.count = 0
        self.reserved = set()
        self.shared = {}                    # id(Jaxpr) -> its name
        self.print_shapes = True            # binders typed (``a:f32[3]``)
        self.custom_rules = True            # parameters as the primitives show them

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return pp_literal(v)
        n = self.names.get(v)
        if n is None:
            while True:
                n = _name(self.count)
                self.count += 1
                if n not in self.reserved:
                    break
            self.names[v] = n
        return n

    def suggest(self, for_vars, like_vars):
        """Name each of ``for_vars`` (a nested program's variables) after the matching one
        of ``like_vars`` (what it is bound to outside), unless named already or that outer
        variable was given to an earlier one."""
        if len(for_vars) != len(like_vars):
            return
        used = set()
        for v, like in zip(for_vars, like_vars):
            if (isinstance(v, Var) and isinstance(like, Var) and like not in used
                    and v not in self.names):
                used.add(like)
                self.names[v] = self(like)


def pp_literal(lit: Literal) -> str:
    v = np.asarray(lit.val)
    if type(lit.shown) is float and dtypes.is_float(v.dtype):
        s = repr(lit.shown)
    elif v.dtype == np.bool_:
        s = str(bool(v))
    elif dtypes.is_float(v.dtype):
        s = repr(float(v))
    else:
        s = str(v.item())
    return f"{s}:{lit.aval.str_short()}"


def _pp_value(v) -> str:
    if isinstance(v, np.dtype):
        return "bfloat16" if v == dtypes._BF16 else v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, tuple):
        inner = ", ".join(_pp_item(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_pp_item(x) for x in v) + "]"
    if isinstance(v, frozenset):
        return "frozenset({" + ", ".join(repr(e) for e in sorted(v)) + "})"
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)), str(v))


def _pp_item(v) -> str:
    # inside a tuple or list JAX's text is the element's repr: ``Precision.HIGHEST``,
    # ``np.int64(1)`` (which JAX's batching leaves in reductions' axes)
    return repr(v) if isinstance(v, (enum.Enum, np.generic)) else _pp_value(v)


def pp_param(v, names, indent=0) -> str:
    """The printed form of one equation parameter (a nested program included)."""
    return _layout(_param_doc(v, names if isinstance(names, _Names) else _Names()))


def _is_program(v):
    return isinstance(v, (Jaxpr, ClosedJaxpr))


def _param_doc(v, names):
    if _is_program(v):
        return _jaxpr_doc(v.jaxpr if isinstance(v, ClosedJaxpr) else v, names)
    if type(v) is tuple and v and all(_is_program(j) for j in v):
        docs = [_jaxpr_doc(j.jaxpr if isinstance(j, ClosedJaxpr) else j, names) for j in v]
        return _group(_cat(_nest(2, _cat(_text("("), _brk(""), _join(_brk(), docs))),
                           _brk(""), _text(")")))
    return _text(_pp_value(v))


def _vars_doc(vs, names, sep="", shapes=False):
    shapes = shapes and names.print_shapes
    items = [_text(f"{names(v)}:{v.aval.str_short()}" if shapes else names(v)) for v in vs]
    return _nest(2, _group(_join(_cat(_text(sep), _group(_brk())), items)))


def _eqn_doc(eqn: JaxprEqn, names):
    params = {k: p for k, p in eqn.params.items() if not k.startswith("_")}
    # A primitive may declare ``pp_params(params) -> params``: the parameters as JAX prints
    # them (some left out at their defaults or implied by the result type, some in JAX's
    # own spelling).
    shown = getattr(eqn.primitive, "pp_params", None)
    if shown is not None and names.custom_rules:
        params = shown(params)
    order = sorted(params)
    if "name" in params:
        # JAX prints a call's name first, to make the equation easy to scan
        order.remove("name")
        order.insert(0, "name")
    if eqn.primitive.name == "jit":
        inner = params.get("jaxpr")
        inner = inner.jaxpr if isinstance(inner, ClosedJaxpr) else inner
        if isinstance(inner, Jaxpr) and id(inner) not in names.shared:
            names.suggest(inner.invars, eqn.invars)
            names.suggest(inner.outvars, eqn.outvars)
    lhs = _vars_doc(eqn.outvars, names, shapes=True)
    rhs = [_text(eqn.primitive.name)]
    if order:
        pairs = [_cat(_text(f"{k}="), _param_doc(params[k], names)) for k in order]
        rhs.append(_group(_cat(_nest(2, _cat(_text("["), _brk(""), _join(_brk(), pairs))),
                               _brk(""), _text("]"))))
    rhs.append(_cat(_text(" "), _vars_doc(eqn.invars, names)))
    if eqn.outvars:
        return _cat(lhs, _text(" = "), *rhs)
    return _cat(*rhs)


def _jaxpr_doc(jaxpr: Jaxpr, names):
    shared = names.shared.get(id(jaxpr))
    if shared is not None:
        return _text(shared)
    consts = _vars_doc(jaxpr.constvars, names, shapes=True)
    ins = _vars_doc(jaxpr.invars, names, shapes=True)
    eqns = _join(_brk("; "), [_eqn_doc(e, names) for e in jaxpr.eqns])
    outs = _cat(_text("("), _vars_doc(jaxpr.outvars, names, sep=","),
                _text(",)" if len(jaxpr.outvars) == 1 else ")"))
    return _group(_cat(_nest(2, _cat(
        _text("{ lambda "), consts, _text("; "), ins, _text(". let"),
        _nest(2, _cat(_brk(), eqns)), _brk(), _text("in "), outs)), _text(" }")))


def _programs_in(params):
    for v in params.values():
        for j in (v if type(v) is tuple else (v,)):
            if isinstance(j, ClosedJaxpr):
                yield j.jaxpr
            elif isinstance(j, Jaxpr):
                yield j


def _unused_outputs(jaxpr: Jaxpr):
    """The top-level equations' outputs that nothing reads (printed ``_``)."""
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    unused = {}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in used:
                unused[v] = "_"
        used.update(v for v in eqn.invars if isinstance(v, Var))
    return unused


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, names=None) -> str:
    """JAX's textual form of ``jaxpr`` (``{ lambda consts ; args. let eqns in (outs) }``),
    as ``str(jax.make_jaxpr(f)(x))`` prints it.  ``indent`` shifts every line right."""
    names = names if isinstance(names, _Names) else _Names(_unused_outputs(jaxpr))
    # Nested programs used more than once, or longer than 10 equations, are printed once,
    # first, under the name of the equation that carries them ("jaxpr" when it has none).
    counts, labels, order = {}, {}, []
    queue = [jaxpr]
    while queue:
        j = queue.pop(0)
        if id(j) not in counts:
            counts[id(j)] = 0
            order.append(j)
        counts[id(j)] += 1 + (j is not jaxpr and len(j.eqns) > 10)
        for eqn in j.eqns:
            # a jit's program is named after the function, any other "jaxpr" (as JAX's)
            label = eqn.params.get("name") if eqn.primitive.name == "jit" else None
            for sub in _programs_in(eqn.params):
                queue.append(sub)
                if isinstance(label, str):
                    labels.setdefault(id(sub), label.strip("<>"))
    taken, shared = {}, []
    for j in order:
        if counts[id(j)] < 2:
            continue
        label = labels.get(id(j), "jaxpr")
        n = taken.get(label, 0)
        taken[label] = n + 1
        if n:
            label += str(n)
            taken[label] = taken.get(label, 0) + 1
        names.reserved.add(label)
        names.shared[id(j)] = label
        shared.append(j)
    docs = []
    for j in shared:
        # every shared program is referred to by its name, also in one printed before it
        # (as JAX's); its own definition prints it in full
        label = names.shared.pop(id(j))
        body = _jaxpr_doc(j, names)
        names.shared[id(j)] = label
        docs.append(_cat(_text(f"let {label} = "), body, _text(" in"), _brk()))
    docs.append(_jaxpr_doc(jaxpr, names))
    text = _layout(_cat(*docs))
    if indent:
        text = "\n".join(" " * indent + line for line in text.split("\n"))
    return text
