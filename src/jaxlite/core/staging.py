"""Staging: trace a Python function into a jaxpr (what ``jit`` and ``make_jaxpr`` do).

Layer: core (records into ``ir``).  The staging trace is *dynamic*: while it is on top,
every ``bind`` is recorded, even of operations on constants, so the jaxpr holds the whole
computation.  Concrete Arrays met during tracing become constvars; Python scalars become
literals.
"""
from __future__ import annotations

import numpy as np

from ..config import config
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from .array import ArrayImpl
from .avals import ShapedArray
from .trace import Trace, Tracer, check_leaks, get_aval, new_main


class DynamicJaxprTracer(Tracer):
    """A traced value inside a staging trace: its abstract value and its IR variable."""

    __slots__ = ("aval", "_var")

    def __init__(self, trace, aval: ShapedArray, var):
        self._trace = trace
        self.aval = aval
        self._var = var

    def __repr__(self):
        return f"JitTracer({self.aval})"


class JaxprBuilder:
    """Collects equations and constants while a function is traced."""

    def __init__(self, mesh_types=None):
        self.eqns: list[JaxprEqn] = []
        # id(value) -> (the constant: value, or a NumPy array's copy; constvar; value)
        self.consts: dict[int, tuple] = {}
        self.invars: list = []
        self.collectives: list = []     # a shard_map body's (primitives/collectives.py)
        # (mesh, in_specs, meshed) when the inputs lie on a mesh: what ``typeof`` of a
        # tracer types the equations staged so far by (``lax/_introspect.py typeof``)
        self.mesh_types = mesh_types

    def const_values(self) -> list:
        """The constants, in the order of ``constvars()``."""
        return [c[0] for c in self.consts.values()]

    def constvars(self) -> list:
        """The constvars, one per constant met while tracing."""
        return [c[1] for c in self.consts.values()]

    def const_var(self, val) -> Var:
        """The constvar of ``val`` (one per object).  A NumPy array is taken as a copy made
        now, as JAX copies a closed-over array when it traces: the program computes with
        the values at trace time, whatever the user writes into the array afterwards (the
        original is kept alive meanwhile, so its id names no other object)."""
        hit = self.consts.get(id(val))
        if hit is None:
            kept = val
            if type(val) is not np.ndarray and isinstance(val, np.ndarray):
                val = np.asarray(val)         # a subclass (np.matrix, a masked array)
            if isinstance(val, np.ndarray):
                kept, val = (kept, val.copy())
                val.flags.writeable = False
            hit = self.consts[id(kept)] = (val, Var(get_aval(val)), kept)
        return hit[1]


def _host_scalar(val) -> bool:
    """Whether the 0-d Array ``val`` can be read now without a device transfer: in host
    memory, of a NumPy dtype (not a PRNG key's), not deleted."""
    dev = getattr(val._buf, "device", None)
    return (dev is not None and dev._host_memory and isinstance(val.aval.dtype, np.dtype)
            and val._buf.data is not None)


class JaxprTrace(Trace):
    """Records every primitive applied to its tracers as an equation."""

    def pure(self, val):
        if isinstance(val, (bool, int, float, complex)):
            aval = get_aval(val)
            if type(val) is float:
                # the printer shows the Python value, as JAX does; a value beyond the
                # dtype's range becomes inf without NumPy's overflow warning
                with np.errstate(over="ignore"):
                    v = np.asarray(val, aval.dtype)
                return DynamicJaxprTracer(self, aval, Literal(v, aval, val))
            return DynamicJaxprTracer(self, aval, Literal(np.asarray(val, aval.dtype), aval))
        if isinstance(val, (np.ndarray, np.generic)) and np.ndim(val) == 0:
            aval = get_aval(val)
            # a copy: a 0-d NumPy array may be written to after the trace
            return DynamicJaxprTracer(self, aval, Literal(np.array(val, aval.dtype), aval))
        if type(val) is ArrayImpl and not val.aval.shape and _host_scalar(val):
            # a scalar Array is written inline as a literal, as JAX inlines scalar
            # constants (``max -inf:f32[] x``), its weak type kept
            return DynamicJaxprTracer(self, val.aval, Literal(np.asarray(val), val.aval))
        if isinstance(val, (ArrayImpl, np.ndarray, np.generic)):   # sharded ones too
            builder = self.main.payload
            var = builder.const_var(val)
            return DynamicJaxprTracer(self, var.aval, var)
        raise TypeError(f"Value {val!r} of type {type(val).__name__} cannot be used as an array")

    def lift(self, val):
        """A tracer of an enclosing transformation met while staging (a closed-over value,
        or a residual during linearisation) becomes a constvar whose value is that tracer;
        whoever evaluates the jaxpr evaluates it under that transformation."""
        if isinstance(val, Tracer):
            var = self.main.payload.const_var(val)
            return DynamicJaxprTracer(self, var.aval, var)
        return self.pure(val)

    def process_primitive(self, primitive, tracers, params):
        avals = tuple([t.aval for t in tracers])
        out_aval = primitive.abstract_eval_cached(avals, params)
        out_avals = out_aval if primitive.multiple_results else [out_aval]
        outs = [DynamicJaxprTracer(self, a, Var(a)) for a in out_avals]
        self.main.payload.eqns.append(
            JaxprEqn(primitive, [t._var for t in tracers], [o._var for o in outs], params))
        return outs if primitive.multiple_results else outs[0]


def trace_to_jaxpr(fun, in_avals, mesh_types=None) -> ClosedJaxpr:
    """Traces ``fun(*tracers) -> list of outputs`` into a ClosedJaxpr.

    ``fun`` takes and returns flat lists.  ``mesh_types``: optional ``(mesh, in_specs,
    meshed)`` of inputs laid out on a mesh (see ``JaxprBuilder``).  Raises TypeError when
    an output is not a valid JAX type; errors raised by ``fun`` propagate unchanged.
    """
    builder = JaxprBuilder(mesh_types)
    with new_main(JaxprTrace, builder, dynamic=True) as main:
        trace = JaxprTrace(main)
        in_tracers = [DynamicJaxprTracer(trace, a, Var(a)) for a in in_avals]
        builder.invars = [t._var for t in in_tracers]
        outs = fun(*in_tracers)
        out_tracers = [trace.full_raise(o) for o in outs]
    consts = builder.const_values()
    constvars = builder.constvars()
    jaxpr = Jaxpr(constvars, [t._var for t in in_tracers], builder.eqns,
                  [t._var for t in out_tracers])
    closed = ClosedJaxpr(jaxpr, consts)
    closed.collectives = tuple(builder.collectives)
    if config.jax_check_tracer_leaks:
        # this frame's own references go first: any tracer left is held from outside
        trace = in_tracers = outs = out_tracers = None
        check_leaks(main)
    return closed
