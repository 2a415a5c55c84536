"""Primitives that carry programs or effects: ``jit`` (a nested compiled call) and
``debug_callback`` (``jaxlite.debug.print``)."""
from __future__ import annotations

from ..core.primitive import Primitive


# jit: a call of a closed jaxpr.  Staged as one equation (printed ``jit[name=f jaxpr={...}]``);
# the compiler inlines it; evaluated directly it runs the jaxpr.

def _jit_aval(*avals, jaxpr, name, **_):
    want = jaxpr.in_avals
    if list(avals) != list(want):
        raise TypeError(f"jit-call {name}: operand types {[a.str_short() for a in avals]} do not "
                        f"match the program's {[a.str_short() for a in want]}")
    return list(jaxpr.out_avals)


def _jit_impl(*args, jaxpr, name, **_):
    from ..core.eager import host_value
    from ..ir.interpret import eval_jaxpr_impl
    return eval_jaxpr_impl(jaxpr.jaxpr, [host_value(c) for c in jaxpr.consts], *args)


jit_p = Primitive("jit", abstract_eval=_jit_aval, impl=_jit_impl, multiple_results=True,
                  flops=lambda *a, **k: 0, kind="call")


# debug_callback: an effect.  Never removed by dead-code elimination, never folded.

def _debug_aval(*avals, callback, **_):
    return []


def _debug_impl(*args, callback, **_):
    callback(*args)
    return []


debug_callback_p = Primitive("debug_callback", abstract_eval=_debug_aval, impl=_debug_impl,
                             multiple_results=True, effectful=True, flops=lambda *a, **k: 0,
                             kind="effect")
