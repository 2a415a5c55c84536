"""Automatic differentiation: forward mode (JVP) as a trace, reverse mode as the
transposition of the linear part.

Layer: core.  ``JVPTrace`` carries a (primal, tangent) pair per value and applies each
primitive's JVP rule.  Linearisation runs the JVP with tangents that are *staged*: a
non-dynamic staging trace sits above the JVP trace, so the primal computation happens
where it would have anyway (eagerly, or in an enclosing jit) while every operation that
touches a tangent is recorded into a jaxpr.  That jaxpr is linear in its inputs; its
constants are the residuals (the primal values the tangent computation needs).
``backward_pass`` transposes it equation by equation with the primitives' transpose rules.

A tangent of ``None`` is a symbolic zero.  Integer and boolean values always have zero
tangents (JAX's ``float0``).  The rule contract is in each helper's docstring.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from .staging import JaxprBuilder, JaxprTrace, DynamicJaxprTracer, trace_to_jaxpr
from .trace import Trace, Tracer, get_aval, new_main


# ---- helpers for rules ----------------------------------------------------------------

def is_differentiable(aval) -> bool:
    """Whether values of ``aval`` carry tangents (inexact dtypes only)."""
    return dtypes.is_inexact(aval.dtype)


def zeros(aval):
    """A zero array of ``aval``'s shape and dtype, bound under the current trace."""
    from ..primitives.shape import broadcast_in_dim_p
    z = np.zeros((), aval.dtype)
    if not aval.shape:
        # a constant (a literal in a traced program, as JAX's scalar zeros)
        from .eager import from_host
        return from_host(z, aval.dtype, aval.weak_type)
    return broadcast_in_dim_p.bind(z, shape=tuple(aval.shape), broadcast_dimensions=())


def instantiate(t, aval):
    """``t``, or zeros of ``aval`` when ``t`` is the symbolic zero ``None``."""
    return zeros(aval) if t is None else t


def add_tangents(a, b):
    """Sum of two tangents, either of which may be the symbolic zero ``None``, by
    ``add_any`` (which JAX's programs show where derivatives accumulate)."""
    if a is None:
        return b
    if b is None:
        return a
    from ..primitives.elementwise import add_any_p
    return add_any_p.bind(a, b)


class UndefinedPrimal:
    """Marks a linear operand in a transpose rule: only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


def defjvp(prim, *fns):
    """JVP rule from one function per operand: ``fn(g, *primals, **params)`` gives the
    output tangent contributed by that operand's tangent ``g``; ``None`` marks an operand
    that is not differentiable.  Contributions are summed."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = None
        for fn, g in zip(fns, tangents):
            if g is not None and fn is not None:
                total = add_tangents(total, fn(g, *primals, **params))
        return out, total
    prim.jvp = rule
    return rule


def defjvp2(prim, *fns):
    """Like ``defjvp``; each ``fn(g, ans, *primals, **params)`` also gets the output."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = None
        for fn, g in zip(fns, tangents):
            if g is not None and fn is not None:
                total = add_tangents(total, fn(g, out, *primals, **params))
        return out, total
    prim.jvp = rule
    return rule


def deflinear(prim, transpose_fn):
    """``prim`` is linear in every operand: its JVP applies it to the tangents (zeros
    instantiated for missing ones); ``transpose_fn(ct, *args, **params)``."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(t is None for t in tangents):
            return out, ([None] * len(out) if prim.multiple_results else None)
        ts = [instantiate(t, get_aval(p)) for t, p in zip(tangents, primals)]
        return out, prim.bind(*ts, **params)
    prim.jvp = rule
    prim.transpose = transpose_fn
    return rule


# ---- the JVP trace --------------------------------------------------------------------

class JVPTracer(Tracer):
    """A value under differentiation: its ``primal`` and its ``tangent`` (None = zero)."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def __repr__(self):
        t = self.tangent
        if t is None:
            t = f"Zero({self.aval.strip_weak_type()})"
        return f"JVPTracer(primal={self.primal}, tangent={t})"

    def to_concrete_value(self):
        p = self.primal
        return p.to_concrete_value() if isinstance(p, Tracer) else p


class JVPTrace(Trace):
    """Applies JVP rules: each primitive maps (primals, tangents) to (primal, tangent)."""

    tracer_type = JVPTracer

    def pure(self, val):
        return self.tracer_type(self, val, None)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(t is None for t in tangents):
            out = primitive.bind(*primals, **params)
            if primitive.multiple_results:
                return [self.tracer_type(self, o, None) for o in out]
            return self.tracer_type(self, out, None)
        rule = primitive.jvp
        if primitive.kind == "call":
            # a call's rule may keep the call (a staged jit stays one equation, as JAX
            # prints it) or answer None: its program is then differentiated inline
            res = rule(primals, tangents, **params) if rule is not None else None
            if res is None:
                from ..ir.interpret import eval_jaxpr
                from .sharded import checked_program
                closed = params["jaxpr"]
                with checked_program(closed, primals):
                    return eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
            out, t_out = res
            return [self.tracer_type(self, o, _keep(t, o)) for o, t in zip(out, t_out)]
        if rule is None:
            # a primitive with only integer/boolean outputs (comparisons, argmax, ...) has
            # zero tangents and needs no rule
            out = primitive.bind(*primals, **params)
            outs = out if primitive.multiple_results else [out]
            if not any(is_differentiable(get_aval(o)) for o in outs):
                if primitive.multiple_results:
                    return [self.tracer_type(self, o, None) for o in outs]
                return self.tracer_type(self, out, None)
            raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not "
                                      f"implemented")
        out, t_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [self.tracer_type(self, o, _keep(t, o)) for o, t in zip(out, t_out)]
        return self.tracer_type(self, out, _keep(t_out, out))


def process_custom_rule(trace: "JVPTrace", primitive, tracers, params, what: str):
    """Differentiates a ``custom_jvp``/``custom_vjp`` call with its primitive's JVP rule
    alone: the user's rule runs on the primal values, and the custom function itself is
    never traced (as in JAX: under ``grad`` only the JVP rule, or ``fwd``, runs).

    ``tracers`` are this trace's tracers of the call's operands.  While the rule runs this
    trace is closed, so a value of it that the rule closed over raises
    UnexpectedTracerError (its tangent would silently be lost).  Returns the JVPTracers of
    the outputs."""
    from .. import errors
    main = trace.main
    main.alive = False
    try:
        return trace.process_primitive(primitive, tracers, params)
    except errors.UnexpectedTracerError:
        raise errors.UnexpectedTracerError(
            f"a {what} function or its rule closes over a value that is being "
            f"differentiated; the rule cannot see that value's tangent. Pass the value as "
            f"an explicit argument of the function (or use jax.closure_convert).") from None
    finally:
        main.alive = True


class LinearizeTracer(JVPTracer):
    """A JVP tracer of reverse mode, whose tangent is being staged (JAX's name for it)."""

    __slots__ = ()

    def __repr__(self):
        t = self.aval.strip_weak_type() if self.tangent is None else self.tangent.aval
        return f"GradTracer(primal={self.primal}, typeof(tangent)={t.str_short()})"


class LinearizeTrace(JVPTrace):
    """The JVP trace under a linearisation (``grad``, ``vjp``, ``linearize``)."""

    tracer_type = LinearizeTracer


def _keep(t, primal):
    """Tangents of integer/boolean values are always the symbolic zero."""
    if t is None or not is_differentiable(get_aval(primal)):
        return None
    return t


def jvp_flat(fun, primals, tangents):
    """Runs ``fun(*tracers) -> list`` under a new JVP trace.  ``tangents`` entries may be
    None.  Returns ``(primals_out, tangents_out)`` (tangents None where zero)."""
    with new_main(JVPTrace) as main:
        trace = JVPTrace(main)
        ins = [JVPTracer(trace, p, _keep(t, p)) for p, t in zip(primals, tangents)]
        outs = fun(*ins)
        outs = [trace.full_raise(o) for o in outs]
        return [o.primal for o in outs], [o.tangent for o in outs]


# ---- linearisation: the tangent computation staged into a linear jaxpr ----------------

class LinearizeResult:
    """What ``linearize_flat`` returns: the primal outputs and the linear program.

    ``jaxpr`` maps the differentiable inputs' tangents (``in_mask`` True) to the outputs'
    tangents; its constants ``consts`` are the residuals.  ``out_zero[i]`` is True when
    output ``i``'s tangent is identically zero.
    """

    def __init__(self, primals_out, jaxpr, consts, in_mask, in_avals, out_avals, out_zero):
        self.primals_out = primals_out
        self.jaxpr = jaxpr
        self.consts = consts
        self.in_mask = in_mask
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.out_zero = out_zero


class LinearTrace(JaxprTrace):
    """The staging trace of a linearisation: it records the tangent computation.  JVP
    rules of control flow test for it (``is_linearizing``) to split their program into a
    primal part run now and a linear part staged."""


def is_linearizing(tangents) -> bool:
    """Whether any of ``tangents`` is being staged by a linearisation (reverse mode)."""
    return any(isinstance(t, Tracer) and isinstance(t._trace, LinearTrace) for t in tangents)


def linearize_flat(fun, primals, in_mask=None) -> LinearizeResult:
    """Evaluates ``fun(*primals) -> list`` and stages its JVP's tangent part.
    ``in_mask``: the inputs that get tangents (default: every differentiable one)."""
    builder = JaxprBuilder()
    in_avals = [get_aval(p) for p in primals]
    if in_mask is None:
        in_mask = [is_differentiable(a) for a in in_avals]
    with new_main(LinearizeTrace) as jmain:
        jtrace = LinearizeTrace(jmain)
        with new_main(LinearTrace, builder) as smain:
            strace = LinearTrace(smain)
            t_in = [DynamicJaxprTracer(strace, a.strip_weak_type(), Var(a.strip_weak_type()))
                    if m else None for a, m in zip(in_avals, in_mask)]
            ins = [LinearizeTracer(jtrace, p, t) for p, t in zip(primals, t_in)]
            outs = fun(*ins)
            outs = [jtrace.full_raise(o) for o in outs]
            primals_out = [o.primal for o in outs]
            out_avals = [get_aval(p) for p in primals_out]
            t_out = [o.tangent for o in outs]
            out_zero = [t is None for t in t_out]
            t_out = [strace.full_raise(t) for t in t_out if t is not None]
    for p in primals_out:
        if isinstance(p, Tracer) and p._trace.main is smain:
            raise AssertionError("a primal output depends on a tangent: a JVP rule is wrong")
    consts = builder.const_values()
    constvars = builder.constvars()
    jaxpr = Jaxpr(constvars, [t._var for t in t_in if t is not None], builder.eqns,
                  [t._var for t in t_out])
    return LinearizeResult(primals_out, jaxpr, consts, in_mask, in_avals, out_avals, out_zero)


def linearize_jaxpr(closed: ClosedJaxpr, nonzeros):
    """Splits the JVP of ``closed`` into a primal and a tangent program (reverse mode's
    view of a nested call, JAX's ``linearize_jaxpr``).

    ``nonzeros[i]``: input ``i`` has a tangent.  Returns ``(primal, tangent, out_nz,
    num_res)``: ``primal`` takes the primal inputs and returns the primal outputs, then
    ``num_res`` residuals; ``tangent`` takes the residuals, then the nonzero tangents, and
    returns the tangents of the outputs with ``out_nz[j]`` True.  Nested calls split the
    same way, so each becomes a call in either program."""
    from ..ir.interpret import eval_jaxpr
    store = []

    def primal_fun(*primals):
        lin = linearize_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                             list(primals), list(nonzeros))
        store.append(lin)
        return list(lin.primals_out) + list(lin.consts)

    primal = trace_to_jaxpr(primal_fun, list(closed.in_avals))
    lin = store[0]
    lj = lin.jaxpr
    tangent = ClosedJaxpr(Jaxpr([], list(lj.constvars) + list(lj.invars), lj.eqns,
                                lj.outvars), [])
    return primal, tangent, [not z for z in lin.out_zero], len(lin.consts)


# ---- transposition ----------------------------------------------------------------------

def backward_pass(jaxpr: Jaxpr, consts, args, cts_out):
    """Transposes ``jaxpr`` with respect to its linear inputs.

    ``args`` has one entry per invar: ``UndefinedPrimal`` for a linear input, a value for a
    non-linear one.  ``cts_out`` has one cotangent per outvar (None = zero).  Equations that
    touch no linear value are evaluated forward first (by ``bind``); the others are
    transposed in reverse order.  Returns one cotangent per invar (None = zero).
    """
    env = {}
    linear = set()

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            linear.add(v)
        else:
            env[v] = a
    lin_eqns = []
    for eqn in jaxpr.eqns:
        if any(not isinstance(v, Literal) and v in linear for v in eqn.invars):
            lin_eqns.append(eqn)
            linear.update(eqn.outvars)
        else:
            out = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
            outs = out if eqn.primitive.multiple_results else [out]
            for v, x in zip(eqn.outvars, outs):
                env[v] = x
    ct_env: dict = {}

    def put(v, ct):
        if ct is None or isinstance(v, Literal) or v not in linear:
            return
        ct_env[v] = add_tangents(ct_env.get(v), ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        put(v, ct)
    for eqn in reversed(lin_eqns):
        cts = [ct_env.pop(v, None) for v in eqn.outvars]
        if all(c is None for c in cts):
            continue
        prim = eqn.primitive
        if prim.transpose is None:
            raise NotImplementedError(f"primitive '{prim.name}' has no transpose rule, so "
                                      f"reverse-mode differentiation cannot pass through it")
        invals = [UndefinedPrimal(v.aval) if (not isinstance(v, Literal) and v in linear)
                  else read(v) for v in eqn.invars]
        ct = cts if prim.multiple_results else cts[0]
        cts_in = prim.transpose(ct, *invals, **eqn.params)
        for v, c in zip(eqn.invars, cts_in):
            put(v, c)
    return [ct_env.get(v) if v in linear else None for v in jaxpr.invars]


# ---- jaxpr-level transformations (used by rules of program-carrying primitives) ---------

def jvp_jaxpr(closed: ClosedJaxpr, nonzeros, instantiate_out=False):
    """The JVP of ``closed`` as a new ClosedJaxpr.

    Inputs: the primals, then a tangent for each input with ``nonzeros[i]`` True.  Outputs:
    the primal outputs, then a tangent for each output that is not identically zero (all
    of them when ``instantiate_out`` is True, or for the outputs it marks when a list).
    Returns ``(jvp_closed, out_nonzeros)``.
    """
    from ..ir.interpret import eval_jaxpr
    in_avals = closed.in_avals
    n = len(in_avals)
    t_avals = [a.strip_weak_type() for a, nz in zip(in_avals, nonzeros) if nz]
    store = []

    def fun(*args):
        primals, ts = list(args[:n]), iter(args[n:])
        tangents = [next(ts) if nz else None for nz in nonzeros]
        p_out, t_out = jvp_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                primals, tangents)
        inst = instantiate_out if isinstance(instantiate_out, (list, tuple)) else \
            [instantiate_out] * len(p_out)
        out_nz = []
        res = []
        for p, t, i in zip(p_out, t_out, inst):
            aval = get_aval(p)
            if t is None and i and is_differentiable(aval):
                t = zeros(aval.strip_weak_type())
            out_nz.append(t is not None)
            if t is not None:
                res.append(t)
        store.append(out_nz)
        return list(p_out) + res

    jclosed = trace_to_jaxpr(fun, list(in_avals) + t_avals)
    return jclosed, store[0]


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate=False):
    """Splits ``closed`` into a known and an unknown part.

    ``unknowns[i]`` marks the inputs not known now.  An equation is unknown when any of its
    inputs is.  Returns ``(known, unknown, out_unknowns, num_res)``:
    ``known`` takes the known inputs and returns the known outputs followed by the
    residuals; ``unknown`` takes the residuals followed by the unknown inputs and returns
    the unknown outputs.  ``instantiate`` (bool or list per output) forces outputs to be
    unknown (a known value then passes through as a residual).
    """
    jaxpr = closed.jaxpr
    unknown_vars = set(v for v, u in zip(jaxpr.invars, unknowns) if u)
    known_eqns, unknown_eqns = [], []
    for eqn in jaxpr.eqns:
        if any(not isinstance(v, Literal) and v in unknown_vars for v in eqn.invars):
            unknown_eqns.append(eqn)
            unknown_vars.update(eqn.outvars)
        else:
            known_eqns.append(eqn)
    inst = instantiate if isinstance(instantiate, (list, tuple)) else \
        [instantiate] * len(jaxpr.outvars)
    out_unknowns = [(not isinstance(v, Literal) and v in unknown_vars) or bool(i)
                    for v, i in zip(jaxpr.outvars, inst)]
    # residuals: known vars read by unknown equations or returned as instantiated outputs
    known_defined = set(jaxpr.constvars) | set(v for v, u in zip(jaxpr.invars, unknowns)
                                              if not u)
    for eqn in known_eqns:
        known_defined.update(eqn.outvars)
    residuals = []
    seen = set()

    def need(v):
        if isinstance(v, Literal) or v in unknown_vars or v in seen:
            return
        seen.add(v)
        residuals.append(v)

    for eqn in unknown_eqns:
        for v in eqn.invars:
            need(v)
    for v, u in zip(jaxpr.outvars, out_unknowns):
        if u:
            need(v)
    known_out = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = Jaxpr(jaxpr.constvars, [v for v, u in zip(jaxpr.invars, unknowns) if not u],
                  known_eqns, known_out + residuals)
    # the unknown jaxpr reads the residuals as inputs: fresh vars, renamed in its eqns
    res_vars = [Var(v.aval) for v in residuals]
    rename = dict(zip(residuals, res_vars))

    def rn(v):
        return v if isinstance(v, Literal) else rename.get(v, v)

    u_eqns = [e.replace(invars=[rn(v) for v in e.invars]) for e in unknown_eqns]
    unknown = Jaxpr([], res_vars + [v for v, u in zip(jaxpr.invars, unknowns) if u], u_eqns,
                    [rn(v) for v, u in zip(jaxpr.outvars, out_unknowns) if u])
    return (ClosedJaxpr(known, closed.consts), ClosedJaxpr(unknown, []), out_unknowns,
            len(residuals))


def transpose_jaxpr(closed: ClosedJaxpr, linear_mask, ct_avals=None):
    """A ClosedJaxpr computing the transpose of ``closed``: it takes the non-linear inputs
    (``linear_mask[i]`` False) followed by one cotangent per output, and returns one
    cotangent per linear input (zeros instantiated)."""
    in_avals = closed.in_avals
    nonlin = [a for a, m in zip(in_avals, linear_mask) if not m]
    cts = ct_avals or [a.strip_weak_type() for a in closed.out_avals]

    def fun(*args):
        res, cts_in = args[:len(nonlin)], args[len(nonlin):]
        it = iter(res)
        full = [UndefinedPrimal(a) if m else next(it) for a, m in zip(in_avals, linear_mask)]
        out = backward_pass(closed.jaxpr, closed.consts, full, list(cts_in))
        return [instantiate(c, a.strip_weak_type())
                for c, a, m in zip(out, in_avals, linear_mask) if m]

    return trace_to_jaxpr(fun, list(nonlin) + list(cts))


def float0_zeros(aval):
    """The tangent JAX returns for an integer/boolean value: zeros of dtype float0."""
    return np.zeros(aval.shape, dtypes.float0)
