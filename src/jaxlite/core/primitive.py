"""Primitives: the operations every higher-level function is built from, and ``bind``.

Layer: core.  A primitive is declared once, with all of its rules:
- ``abstract_eval(*avals, **params)``: output abstract value(s); checks the operands and
  raises the JAX-type error (TypeError / ValueError) naming the offending shapes/dtypes;
- ``impl(*ndarrays, **params)``: the NumPy reference implementation (the interpreter and
  eager execution both run it: one semantics);
- ``jvp``, ``transpose`` (linear primitives), ``batch``: the transformation rules, filled in
  as the transformations land; a table test lists which ones each primitive has;
- ``scalar_op``: the name in the compiler's scalar-op table, for fusable elementwise ops;
- ``flops``: cost-model rule ``flops(*avals, **params) -> int``.
"""
from __future__ import annotations

import functools

from .eager import apply_primitive
from .trace import Tracer, _dynamic, find_top_trace, full_lower

_registry: dict[str, "Primitive"] = {}


class Primitive:
    """A primitive operation with its rules (see module docstring)."""

    def __init__(self, name: str, *, abstract_eval, impl, multiple_results: bool = False,
                 effectful: bool = False, jvp=None, transpose=None, batch=None,
                 scalar_op: str | None = None, flops=None, kind: str = "other"):
        self.name = name
        self.abstract_eval = abstract_eval
        self.impl = impl
        self.multiple_results = multiple_results
        self.effectful = effectful
        self.jvp = jvp
        self.transpose = transpose
        self.batch = batch
        self.scalar_op = scalar_op
        self.flops = flops
        self.kind = kind
        self.specialize = None    # (avals, **params) -> callable or None, see impl_for
        self._aval_cache: dict = {}
        if name in _registry:
            raise ValueError(f"primitive {name!r} declared twice")
        _registry[name] = self

    def __repr__(self):
        return self.name

    def impl_for(self, avals, params: dict):
        """The implementation as a callable of the operands alone, for a compiled program
        whose operand avals are static: the primitive's ``specialize`` rule may return a
        cheaper callable for these avals (e.g. no float16 check when no operand is half
        precision), otherwise ``impl`` with ``params`` bound.  Same results either way."""
        if self.specialize is not None:
            fn = self.specialize(avals, **params)
            if fn is not None:
                return fn
        return functools.partial(self.impl, **params) if params else self.impl

    def abstract_eval_cached(self, avals: tuple, params: dict):
        """``abstract_eval`` memoised on (avals, params) when the params are hashable."""
        try:
            key = (avals, tuple(params.items()))
            return self._aval_cache[key]
        except KeyError:
            out = self.abstract_eval(*avals, **params)
            if len(self._aval_cache) < 4096:
                self._aval_cache[key] = out
            return out
        except TypeError:
            return self.abstract_eval(*avals, **params)

    def bind(self, *args, **params):
        """Applies the primitive under the current trace (eager when none)."""
        if len(_dynamic) == 1:
            for a in args:
                if isinstance(a, Tracer):
                    break
            else:
                return apply_primitive(self, args, params)
        trace = find_top_trace(args)
        tracers = [trace.full_raise(a) for a in args]
        out = trace.process_primitive(self, tracers, params)
        if self.multiple_results:
            return [full_lower(o) for o in out]
        return full_lower(out)


def primitives() -> dict:
    """Every declared primitive by name."""
    return dict(_registry)
