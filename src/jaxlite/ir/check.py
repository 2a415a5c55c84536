"""Type-checking a jaxpr: is it a well-formed program whose recorded types are the ones its
primitives derive?

Layer: ir.  ``check_jaxpr`` walks a program once, in order: every variable read is
defined before (as a constvar, an invar, or an earlier equation's output), none is defined
twice, every literal is a scalar of its declared dtype, and every equation's output types
are derived again from its primitive's abstract-evaluation rule and compared with the ones
recorded on its output variables.  Programs carried by an equation (control-flow bodies,
nested jit, custom-derivative rules, fused kernels' scalar bodies) are checked the same
way, each in a scope of its own.  The compiler pipeline runs it on the traced program and
after every pass when ``jax_enable_checks`` is on (compiler/pipeline.py), naming the pass
whose output is ill-typed.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..errors import JaxprTypeError
from .jaxpr import (ClosedJaxpr, Jaxpr, Literal, Var, _eqn_doc, _layout, _Names,
                    _unused_outputs, pp_jaxpr)

__all__ = ["check_jaxpr", "JaxprTypeError"]


def check_jaxpr(jaxpr) -> None:
    """Checks that ``jaxpr`` is a well-typed program (``jax.extend.core.check_jaxpr``).

    Args:
      jaxpr: a ``Jaxpr`` or a ``ClosedJaxpr`` (then also: one constant per constvar).

    Checks, recursively through every program an equation carries (each in its own scope):
    each variable is defined (constvar, invar or an earlier equation's output) before it is
    read and defined only once; each literal is a scalar (shape ``()``) holding a value of
    its declared dtype; each equation's outputs have exactly the shapes, dtypes and weak
    types its primitive's abstract-evaluation rule gives for its operands' types and its
    parameters (and as many of them as the rule gives); the program's outputs are defined.
    Weak types are compared (a pass that changed one would change a jitted result's weak
    type; JAX's checker ignores them), except in fused kernels' scalar bodies, which the
    fusion pass types strongly by design.

    Returns:
      None.

    Raises:
      JaxprTypeError (a TypeError): the first violation found, naming the equation by its
        index and printed form (and, inside a nested program, the path of equations
        leading to it).
      TypeError: ``jaxpr`` is neither a Jaxpr nor a ClosedJaxpr.

    Example::

        >>> closed = jaxlite.make_jaxpr(lambda x: x * 2)(1.0)
        >>> check_jaxpr(closed)          # returns None: well typed
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise JaxprTypeError(
                f"ClosedJaxpr has {len(jaxpr.consts)} constants for "
                f"{len(jaxpr.jaxpr.constvars)} constvars")
        jaxpr = jaxpr.jaxpr
    if not isinstance(jaxpr, Jaxpr):
        raise TypeError(f"check_jaxpr takes a Jaxpr or a ClosedJaxpr, got "
                        f"{type(jaxpr).__name__}")
    _check(jaxpr, (), {}, True)


def _programs(params):
    """``(param name, Jaxpr, weak types compared?)`` of every program an equation's
    parameters carry: a Jaxpr or ClosedJaxpr, a tuple of them (cond's branches), or a fused
    kernel's scalar body.  A kernel body's variables are strongly typed by construction
    (the fusion pass drops weak types there: nothing is promoted in a loop body any more,
    and its kernels then compare equal whatever the weak types were), so there the weak
    type is not compared."""
    for k, v in params.items():
        items = v if type(v) is tuple else (v,)
        for i, p in enumerate(items):
            label = k if len(items) == 1 else f"{k}[{i}]"
            if isinstance(p, ClosedJaxpr):
                yield label, p.jaxpr, True
            elif isinstance(p, Jaxpr):
                yield label, p, True
            else:
                body = getattr(p, "body", None)
                if isinstance(body, Jaxpr):
                    yield f"{label}.body", body, False


def _aval_str(a) -> str:
    if isinstance(a, ShapedArray):
        return f"{a.str_short()}{' (weak type)' if a.weak_type else ''}"
    return repr(a)


def _same_aval(a, b, weak: bool) -> bool:
    if isinstance(a, ShapedArray) and isinstance(b, ShapedArray):
        return (a.shape == b.shape and a.dtype == b.dtype
                and (not weak or a.weak_type == b.weak_type))
    return a == b


def _check(jaxpr: Jaxpr, path: tuple, checked: dict, weak: bool) -> None:
    if id(jaxpr) in checked:           # a program carried twice (shared) is checked once
        return
    checked[id(jaxpr)] = jaxpr
    defined = set()

    def fail(msg, i=None):
        _raise(jaxpr, path, msg, i)

    def define(v, what, i=None):
        if not isinstance(v, Var):
            fail(f"{what} is a {type(v).__name__}, not a Var", i)
        if v in defined:
            fail(f"{what} defines a variable that is already defined", i)
        defined.add(v)

    def read(v, what, i=None):
        if isinstance(v, Literal):
            _check_literal(v, what, fail, i)
        elif not isinstance(v, Var):
            fail(f"{what} is a {type(v).__name__}, neither a Var nor a Literal", i)
        elif v not in defined:
            fail(f"{what} reads a variable of type {_aval_str(v.aval)} that is not defined "
                 f"before it", i)

    for n, v in enumerate(jaxpr.constvars):
        define(v, f"constvar {n}")
    for n, v in enumerate(jaxpr.invars):
        define(v, f"invar {n}")
    for i, eqn in enumerate(jaxpr.eqns):
        for n, v in enumerate(eqn.invars):
            read(v, f"operand {n}", i)
        for label, sub, sub_weak in _programs(eqn.params):
            _check(sub, path + ((jaxpr, i, label),), checked, weak and sub_weak)
        _check_types(eqn, fail, i, weak)
        for n, v in enumerate(eqn.outvars):
            define(v, f"output {n}", i)
    for n, v in enumerate(jaxpr.outvars):
        read(v, f"the program's output {n}")


def _check_literal(lit: Literal, what: str, fail, i) -> None:
    aval = lit.aval
    if not isinstance(aval, ShapedArray):
        fail(f"{what}: a literal's type is {aval!r}, not a ShapedArray", i)
    if aval.shape != ():
        fail(f"{what}: a literal must be a scalar, its type is {_aval_str(aval)}", i)
    val = np.asarray(lit.val)
    if val.shape != ():
        fail(f"{what}: a literal holds a value of shape {val.shape}, not a scalar", i)
    if val.dtype != aval.dtype:
        fail(f"{what}: a literal of type {_aval_str(aval)} holds a {val.dtype} value", i)


def _check_types(eqn, fail, i, weak: bool) -> None:
    prim = eqn.primitive
    in_avals = tuple(v.aval for v in eqn.invars)
    try:
        out = prim.abstract_eval_cached(in_avals, eqn.params)
    except Exception as e:           # noqa: BLE001 -- the rule rejects the operands
        fail(f"the abstract-evaluation rule of {prim.name} rejects the operands "
             f"({', '.join(_aval_str(a) for a in in_avals)}): {type(e).__name__}: {e}", i)
    outs = list(out) if prim.multiple_results else [out]
    if len(outs) != len(eqn.outvars):
        fail(f"{prim.name} gives {len(outs)} output(s) for these operands; the equation "
             f"binds {len(eqn.outvars)}", i)
    for n, (want, v) in enumerate(zip(outs, eqn.outvars)):
        got = getattr(v, "aval", None)
        if not _same_aval(want, got, weak):
            fail(f"output {n} is recorded as {_aval_str(got)}, but {prim.name}'s "
                 f"abstract-evaluation rule gives {_aval_str(want)}", i)


def _raise(jaxpr: Jaxpr, path: tuple, msg: str, i) -> None:
    top = path[0][0] if path else jaxpr
    names = _Names(_unused_outputs(top))
    program = _pp(top, names)
    where = [f"in program {label} of equation {j} ({_eqn_head(outer.eqns[j], names)})"
             for outer, j, label in path]
    if i is not None:
        where.append(f"equation {i} ({_eqn_text(jaxpr.eqns[i], names)})")
    prefix = ", ".join(where)
    text = f"{prefix}: {msg}" if prefix else msg
    raise JaxprTypeError(f"{text}\nin the program:\n{program}")


def _pp(jaxpr: Jaxpr, names) -> str:
    try:
        return pp_jaxpr(jaxpr, names=names)
    except Exception:              # noqa: BLE001 -- the program may be too broken to print
        return "<unprintable>"


def _eqn_text(eqn, names) -> str:
    """One equation on one line, its variables named as in the printed program."""
    try:
        text = _layout(_eqn_doc(eqn, names))
    except Exception:              # noqa: BLE001
        text = f"{eqn.primitive.name} of {len(eqn.invars)} operand(s)"
    return " ".join(text.split())


def _eqn_head(eqn, names) -> str:
    """An equation that carries programs, without its parameters: ``c:f32[] = scan[...] a``."""
    try:
        outs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in eqn.outvars)
        ins = " ".join(names(v) for v in eqn.invars)
        return f"{outs} = {eqn.primitive.name}[...] {ins}".strip()
    except Exception:              # noqa: BLE001
        return eqn.primitive.name
