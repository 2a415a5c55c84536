"""Control-flow primitives that carry programs: ``scan``, ``while`` and ``cond``.

Layer: primitives.  Each loop or branch is ONE equation holding its body as a ClosedJaxpr
(no constants: a body's closed-over values are hoisted into leading operands by
``hoist_consts``), so the IR and compile time do not grow with the number of steps.

Operands and parameters (the transformation rules are written against exactly these):
- ``scan_p.bind(*consts, *init_carry, *xs, jaxpr, num_consts, num_carry, length, reverse,
  unroll)`` -> ``carry_out + stacked ys``.  Body: ``consts + carry + x slices`` ->
  ``carry + y slices`` (an x slice is its operand without the leading axis of ``length``).
- ``while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr, cond_nconsts,
  body_nconsts)`` -> final carry.  ``cond_jaxpr``: ``cond_consts + carry`` -> ``bool[]``.
- ``cond_p.bind(index, *operands, branches)`` -> outputs of ``branches[clamp(index)]``;
  ``index`` is an int32 scalar; every branch takes all operands.

The implementations run the bodies with the primitives' NumPy implementations
(``eval_jaxpr_impl``); ``scan`` writes each y slice into a preallocated stacked output.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.eager import host_value
from ..core.primitive import Primitive
from ..ir.interpret import eval_jaxpr_impl, exact
from ..ir.jaxpr import ClosedJaxpr, Jaxpr

_BOOL_SCALAR = ShapedArray((), np.bool_)
_INT32_SCALAR = ShapedArray((), np.int32)


def hoist_consts(closed: ClosedJaxpr):
    """``(closed_without_consts, consts)``: the jaxpr's constvars become its leading invars
    and their values are returned, to be passed as leading operands.

    Used for every body a control-flow primitive carries: the consts of a traced body may
    be tracers of an enclosing transformation (a closed-over value), which must be operands
    of the equation so that the enclosing trace sees them.
    """
    jaxpr = closed.jaxpr
    if not jaxpr.constvars:
        return closed, []
    new = Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.eqns, jaxpr.outvars)
    return ClosedJaxpr(new, []), list(closed.consts)


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Shape and dtype agree (weak types may differ: a weak value is a valid operand of a
    strongly typed variable of the same dtype)."""
    return a.shape == b.shape and a.dtype == b.dtype


def _check_operands(name: str, what: str, got, want) -> None:
    if len(got) != len(want):
        raise TypeError(f"{name}: {what} expects {len(want)} operands, got {len(got)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if not _same_type(g, w):
            raise TypeError(f"{name}: {what} operand {i} has type {g.str_short()} but the "
                            f"program expects {w.str_short()}")


def _body_consts(closed: ClosedJaxpr):
    return [host_value(c) for c in closed.consts]


def _jaxpr_flops(jaxpr: Jaxpr) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.flops is not None:
            total += eqn.primitive.flops(*[v.aval for v in eqn.invars], **eqn.params)
    return total


def _fresh(x, dtype):
    """A result that owns its memory: loop carries may alias an operand or a body
    temporary."""
    x = exact(x, dtype)
    return x.copy() if x.base is not None or not x.flags.owndata else x


# ---- scan -------------------------------------------------------------------------------

def _scan_aval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    body_in = jaxpr.in_avals
    body_out = jaxpr.out_avals
    if len(avals) != len(body_in):
        raise TypeError(f"scan: got {len(avals)} operands, the body takes {len(body_in)}")
    n_fixed = num_consts + num_carry
    _check_operands("scan", "consts/carry", avals[:n_fixed], body_in[:n_fixed])
    for i, (a, b) in enumerate(zip(avals[n_fixed:], body_in[n_fixed:])):
        if a.shape[:1] != (length,) or a.shape[1:] != b.shape or a.dtype != b.dtype:
            raise TypeError(f"scan: scanned operand {i} has type {a.str_short()}, expected "
                            f"{b.dtype.name}{[length, *b.shape]} (length {length})")
    carry_in = body_in[num_consts:n_fixed]
    carry_out = body_out[:num_carry]
    for i, (a, b) in enumerate(zip(carry_in, carry_out)):
        if not _same_type(a, b):
            raise TypeError(f"scan: body carry {i} goes in as {a.str_short()} and comes out "
                            f"as {b.str_short()}")
    ys = [ShapedArray((length,) + a.shape, a.dtype, a.weak_type)
          for a in body_out[num_carry:]]
    return list(carry_out) + ys


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts = args[:num_consts]
    carry = list(args[num_consts:num_consts + num_carry])
    xs = args[num_consts + num_carry:]
    body, body_consts = jaxpr.jaxpr, _body_consts(jaxpr)
    out_avals = jaxpr.out_avals
    ys = [np.empty((length,) + a.shape, a.dtype) for a in out_avals[num_carry:]]
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = eval_jaxpr_impl(body, body_consts, *consts, *carry, *[x[i, ...] for x in xs])
        carry = outs[:num_carry]
        for y, o in zip(ys, outs[num_carry:]):
            y[i] = o
    return [_fresh(c, a.dtype) for c, a in zip(carry, out_avals)] + ys


def _scan_flops(*avals, jaxpr, length, **_):
    return length * _jaxpr_flops(jaxpr.jaxpr)


scan_p = Primitive("scan", abstract_eval=_scan_aval, impl=_scan_impl, multiple_results=True,
                   flops=_scan_flops, kind="control")


# ---- while ------------------------------------------------------------------------------

def _while_aval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    n_consts = cond_nconsts + body_nconsts
    carry = avals[n_consts:]
    _check_operands("while", "cond_jaxpr", avals[:cond_nconsts] + carry, cond_jaxpr.in_avals)
    _check_operands("while", "body_jaxpr", avals[cond_nconsts:], body_jaxpr.in_avals)
    outs = cond_jaxpr.out_avals
    if len(outs) != 1 or not _same_type(outs[0], _BOOL_SCALAR):
        raise TypeError(f"while: cond_jaxpr must return one bool[], got "
                        f"{[a.str_short() for a in outs]}")
    body_out = body_jaxpr.out_avals
    _check_operands("while", "body output as carry", body_out, list(carry))
    return list(body_out)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts = args[:cond_nconsts]
    bconsts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])
    cj, cj_consts = cond_jaxpr.jaxpr, _body_consts(cond_jaxpr)
    bj, bj_consts = body_jaxpr.jaxpr, _body_consts(body_jaxpr)
    while bool(eval_jaxpr_impl(cj, cj_consts, *cconsts, *carry)[0]):
        carry = eval_jaxpr_impl(bj, bj_consts, *bconsts, *carry)
    return [_fresh(c, a.dtype) for c, a in zip(carry, body_jaxpr.out_avals)]


def _while_flops(*avals, cond_jaxpr, body_jaxpr, **_):
    # the trip count is unknown: one iteration's worth
    return _jaxpr_flops(cond_jaxpr.jaxpr) + _jaxpr_flops(body_jaxpr.jaxpr)


while_p = Primitive("while", abstract_eval=_while_aval, impl=_while_impl,
                    multiple_results=True, flops=_while_flops, kind="control")


# ---- cond -------------------------------------------------------------------------------

def _cond_aval(index, *avals, branches):
    if not branches:
        raise ValueError("cond: needs at least one branch")
    if not _same_type(index, _INT32_SCALAR):
        raise TypeError(f"cond: the branch index must be an int32 scalar, got "
                        f"{index.str_short()}")
    first = branches[0].out_avals
    for k, br in enumerate(branches):
        _check_operands("cond", f"branch {k}", list(avals), br.in_avals)
        if br.out_avals != first:
            raise TypeError(f"cond: branch {k} returns "
                            f"{[a.str_short() for a in br.out_avals]}, branch 0 returns "
                            f"{[a.str_short() for a in first]}")
    return list(first)


def _cond_impl(index, *args, branches):
    k = min(max(int(index), 0), len(branches) - 1)
    br = branches[k]
    outs = eval_jaxpr_impl(br.jaxpr, _body_consts(br), *args)
    return [_fresh(o, a.dtype) for o, a in zip(outs, br.out_avals)]


def _cond_flops(*avals, branches):
    return max(_jaxpr_flops(b.jaxpr) for b in branches)


cond_p = Primitive("cond", abstract_eval=_cond_aval, impl=_cond_impl, multiple_results=True,
                   flops=_cond_flops, kind="control")
