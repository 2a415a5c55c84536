"""Inlining: a nested call (``jit``, ``custom_jvp_call``, ``custom_vjp_call``: every
primitive of kind "call", whose ``jaxpr`` param is the program it runs) becomes the
equations of its program."""
from __future__ import annotations

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Var
from ._rewrite import Renamer


def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Replaces every call equation by its body (recursively), with fresh variables;
    the inner program's constants join the outer ones."""
    consts_v, consts = list(closed.jaxpr.constvars), list(closed.consts)
    eqns = []
    rename = Renamer()
    _inline_into(closed.jaxpr, rename, eqns, consts_v, consts)
    jaxpr = closed.jaxpr
    new = Jaxpr(consts_v, jaxpr.invars, eqns, [rename(v) for v in jaxpr.outvars])
    return ClosedJaxpr(new, consts)


def _inline_into(jaxpr, rename, eqns, consts_v, consts):
    for eqn in jaxpr.eqns:
        invars = [rename(v) for v in eqn.invars]
        if eqn.primitive.kind == "call":
            inner: ClosedJaxpr = eqn.params["jaxpr"]
            sub = Renamer()
            for cv, c in zip(inner.jaxpr.constvars, inner.consts):
                nv = Var(cv.aval)
                consts_v.append(nv)
                consts.append(c)
                sub.set(cv, nv)
            for iv, x in zip(inner.jaxpr.invars, invars):
                sub.set(iv, x)
            # fresh names for the inner equations' outputs
            for e in inner.jaxpr.eqns:
                for ov in e.outvars:
                    sub.set(ov, Var(ov.aval))
            body = _renamed(inner.jaxpr, sub)
            inner_rename = _inline_into(body, Renamer(), eqns, consts_v, consts)
            for ov, res in zip(eqn.outvars, body.outvars):
                rename.set(ov, inner_rename(res))
        else:
            eqns.append(eqn.replace(invars=invars))
    return rename


def _renamed(jaxpr, sub):
    eqns = [e.replace(invars=[sub(v) for v in e.invars], outvars=[sub(v) for v in e.outvars])
            for e in jaxpr.eqns]
    return Jaxpr([], [], eqns, [sub(v) for v in jaxpr.outvars])
