"""Primitives that carry programs or effects: ``jit`` (a nested compiled call) and
``debug_callback`` (``jaxlite.debug.print``)."""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import Primitive


# jit: a call of a closed jaxpr.  Staged as one equation (printed ``jit[name=f jaxpr={...}]``);
# the compiler inlines it; evaluated directly it runs the jaxpr.

def _jit_aval(*avals, jaxpr, name, **_):
    want = jaxpr.in_avals
    # weak types may differ: a weakly typed literal operand comes back strongly typed when
    # a program holding the call is evaluated again (eval_jaxpr reads literals as NumPy
    # values), with the same numbers
    if [(a.shape, a.dtype) for a in avals] != [(a.shape, a.dtype) for a in want]:
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
                             kind="effect", host_callback=True)


# ---- rules of jit: batching batches the program and keeps the call; differentiation of
# a staged call keeps it too (JAX's equations: the JVP is one jit of the JVP program;
# reverse mode splits it into a jit of the primal part, which also returns the residuals,
# and a jit of the tangent part, whose transpose is a jit of the transposed program).
# Evaluated now (no operand traced), the program is differentiated inline: the same
# values, each equation run as an eager operation (sharded operands included). ----------

from ..core import ad, batching  # noqa: E402
from ..core.trace import Tracer, get_aval  # noqa: E402
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Literal  # noqa: E402


def _jit_jvp(primals, tangents, jaxpr, name, **params):
    if not any(isinstance(p, Tracer) for p in primals):
        return None
    nonzeros = [t is not None for t in tangents]
    nz_tangents = [t for t in tangents if t is not None]
    if ad.is_linearizing(tangents):
        outs, out_nz, t_outs = _jit_linearize(primals, nz_tangents, jaxpr, nonzeros, name,
                                              params)
    else:
        jclosed, out_nz = ad.jvp_jaxpr(jaxpr, nonzeros)
        n_out = len(jaxpr.out_avals)
        both = jit_p.bind(*primals, *nz_tangents, jaxpr=jclosed, name=name, **params)
        outs, t_outs = both[:n_out], both[n_out:]
    it = iter(t_outs)
    return outs, [next(it) if nz else None for nz in out_nz]


def _jit_linearize(primals, nz_tangents, jaxpr, nonzeros, name, params):
    """Reverse mode's JVP of a staged jit: a jit of the primal part bound now (its outputs:
    the primal outputs that are not operands, then the residuals that are neither
    operands, constants nor primal outputs, which are passed as they are), and a jit of
    the tangent part (operands: the residuals, then the nonzero tangents) recorded into
    the linear program.  Returns ``(primal outputs, out_nz, tangent outputs)``."""
    primal, tangent, out_nz, num_res = ad.linearize_jaxpr(jaxpr, nonzeros)
    pj = primal.jaxpr
    n_out = len(pj.outvars) - num_res
    prim_vars, res_vars = pj.outvars[:n_out], pj.outvars[n_out:]
    known = {v: x for v, x in zip(pj.invars, primals)}
    consts = dict(zip(pj.constvars, primal.consts))
    kept = [v for v in prim_vars if isinstance(v, Literal) or v not in known]
    for v in res_vars:
        if not (isinstance(v, Literal) or v in known or v in consts or v in kept):
            kept.append(v)
    body = ClosedJaxpr(Jaxpr(pj.constvars, pj.invars, pj.eqns, kept), primal.consts)
    outs = jit_p.bind(*primals, jaxpr=body, name=name, **params)
    values = {**consts, **known}
    for v, x in zip(kept, outs):
        if not isinstance(v, Literal):
            values.setdefault(v, x)
    it = iter(outs)
    primals_out = [next(it) if isinstance(v, Literal) or v not in known else known[v]
                   for v in prim_vars]
    residuals = [v.val if isinstance(v, Literal) else values[v] for v in res_vars]
    t_outs = jit_p.bind(*residuals, *nz_tangents, jaxpr=tangent, name=name, **params)
    return primals_out, out_nz, t_outs


jit_p.jvp = _jit_jvp


def _jit_batch(args, dims, jaxpr, name, **params):
    size = batching.size_of(args, dims)
    batched, out_dims = batching.batch_jaxpr(jaxpr, dims, size)
    return jit_p.bind(*args, jaxpr=batched, name=name, **params), out_dims


jit_p.batch = _jit_batch


def _jit_transpose(cts, *args, jaxpr, name, **params):
    # linear in its undefined operands.  Staged (an operand or cotangent traced): one jit
    # of the transposed program, whose operands are the defined operands, then the
    # nonzero cotangents, and whose outputs are the undefined operands' cotangents (JAX's
    # equation).  Evaluated now: the program is transposed in place.
    known = [a for a in args if not ad.is_undefined(a)]
    nz_cts = [c for c in cts if c is not None]
    if not any(isinstance(x, Tracer) for x in known + nz_cts):
        return ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, list(args), list(cts))
    n_known = len(known)
    nonzero = []

    def transposed(*xs):
        # the program returns only the cotangents that are not identically zero
        it, ct_it = iter(xs[:n_known]), iter(xs[n_known:])
        full = [a if ad.is_undefined(a) else next(it) for a in args]
        cts_full = [None if c is None else next(ct_it) for c in cts]
        out = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full, cts_full)
        nonzero.extend(c is not None and ad.is_undefined(a) for c, a in zip(out, args))
        return [c for c, nz in zip(out, nonzero) if nz]

    from ..core.staging import trace_to_jaxpr
    tclosed = trace_to_jaxpr(transposed, [get_aval(x) for x in known + nz_cts])
    outs = iter(jit_p.bind(*known, *nz_cts, jaxpr=tclosed, name=name, **params))
    return [next(outs) if nz else None for nz in nonzero]


jit_p.transpose = _jit_transpose


def _debug_batch(args, dims, callback, **params):
    # each example printed/called in turn, as JAX's sequential debug callback does
    size = batching.size_of(args, dims)
    from .shape import squeeze_p, slice_p
    for i in range(size):
        ex = []
        for x, d in zip(args, dims):
            if d is None:
                ex.append(x)
                continue
            nd = get_aval(x).ndim
            lo = [0] * nd
            hi = list(get_aval(x).shape)
            lo[d], hi[d] = i, i + 1
            ex.append(squeeze_p.bind(slice_p.bind(x, start_indices=tuple(lo),
                                                  limit_indices=tuple(hi), strides=None),
                                     dimensions=(d,)))
        debug_callback_p.bind(*ex, callback=callback, **params)
    return [], []


debug_callback_p.batch = _debug_batch
debug_callback_p.jvp = lambda primals, tangents, **params: (
    debug_callback_p.bind(*primals, **params), [])


# ---- custom_vjp: the linear stand-in whose transpose runs the user's bwd ----------------

def _custom_lin_aval(*avals, num_res, bwd, out_avals, in_avals):
    return [a.strip_weak_type() for a in out_avals]


def _custom_lin_impl(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, in_avals):
    res = args[:num_res]
    # an integer (or key) output's cotangent is float0 zeros, as JAX hands it to bwd
    cts = [ad.instantiate(c, a.strip_weak_type()) if ad.is_differentiable(a) else
           ad.float0_zeros(a) for c, a in zip(cts, out_avals)]
    got = bwd(res, cts)
    out = [None] * num_res
    for g, a in zip(got, in_avals):
        if g is None or not ad.is_differentiable(a):
            out.append(None)
        elif get_aval(g).shape != a.shape:
            raise ValueError(f"custom_vjp bwd returned a cotangent of shape "
                             f"{get_aval(g).shape} for a primal input of shape {a.shape}; "
                             f"the shapes have to agree")
        else:
            out.append(g)
    return out


custom_lin_p = Primitive("custom_lin", abstract_eval=_custom_lin_aval, impl=_custom_lin_impl,
                         multiple_results=True, flops=lambda *a, **k: 0, kind="other")
custom_lin_p.transpose = _custom_lin_transpose
custom_lin_p.batch = lambda args, dims, **params: _custom_lin_impl()  # forward mode: error


# ---- checkpoint (remat): a program whose reverse mode recomputes it ----------------------

def _remat_aval(*avals, jaxpr, prevent_cse=True):
    return list(jaxpr.out_avals)


def _remat_impl(*args, jaxpr, prevent_cse=True):
    from ..ir.interpret import eval_jaxpr_impl
    return eval_jaxpr_impl(jaxpr.jaxpr, [], *args)


remat_p = Primitive("checkpoint", abstract_eval=_remat_aval, impl=_remat_impl,
                    multiple_results=True, flops=lambda *a, **k: 0, kind="other")


def _remat_jvp(primals, tangents, jaxpr, prevent_cse=True):
    out = remat_p.bind(*primals, jaxpr=jaxpr, prevent_cse=prevent_cse)
    if all(t is None for t in tangents):
        return out, [None] * len(out)
    ts = [ad.instantiate(t, get_aval(p).strip_weak_type()) if ad.is_differentiable(
        get_aval(p)) else ad.zeros(get_aval(p)) for p, t in zip(primals, tangents)]
    t_out = remat_jvp_p.bind(*primals, *ts, jaxpr=jaxpr)
    it = iter(t_out)
    return out, [next(it) if ad.is_differentiable(a) else None for a in jaxpr.out_avals]


remat_p.jvp = _remat_jvp


def _remat_batch(args, dims, jaxpr, prevent_cse=True):
    size = batching.size_of(args, dims)
    batched, out_dims = batching.batch_jaxpr(jaxpr, dims, size)
    return remat_p.bind(*args, jaxpr=batched, prevent_cse=prevent_cse), out_dims


remat_p.batch = _remat_batch


def _remat_jvp_aval(*avals, jaxpr):
    return [a.strip_weak_type() for a in jaxpr.out_avals if ad.is_differentiable(a)]


def _remat_jvp_impl(*args, jaxpr):
    from ..ir.interpret import eval_jaxpr_impl
    n = len(jaxpr.in_avals)
    jclosed, _ = ad.jvp_jaxpr(jaxpr, [True] * n, instantiate_out=True)
    outs = eval_jaxpr_impl(jclosed.jaxpr, jclosed.consts, *args)
    return outs[len(jaxpr.out_avals):]


def _remat_jvp_transpose(cts, *args, jaxpr):
    """The backward pass of a checkpointed program: linearise it again at its primal
    inputs (recomputing the forward pass), then transpose."""
    from ..ir.interpret import eval_jaxpr
    n = len(jaxpr.in_avals)
    primals = list(args[:n])
    lin = ad.linearize_flat(lambda *xs: eval_jaxpr(jaxpr.jaxpr, [], *xs), primals)
    diff_out = [ad.is_differentiable(a) for a in jaxpr.out_avals]
    it = iter(cts)
    full_cts = [next(it) if d else None for d in diff_out]
    lin_cts = [c for c, z in zip(full_cts, lin.out_zero) if not z]
    ins = [ad.UndefinedPrimal(a.strip_weak_type())
           for a, m in zip(lin.in_avals, lin.in_mask) if m]
    got = iter(ad.backward_pass(lin.jaxpr, lin.consts, ins, lin_cts))
    out = [None] * n
    for i, m in enumerate(lin.in_mask):
        g = next(got) if m else None
        out.append(g)
    return out


def _remat_jvp_batch(args, dims, jaxpr):
    size = batching.size_of(args, dims)
    n = len(jaxpr.in_avals)
    args = [batching.to_front(x, d, size) for x, d in zip(args, dims)]
    batched, _ = batching.batch_jaxpr(jaxpr, [0] * n, size,
                                      out_front=[True] * len(jaxpr.out_avals))
    outs = remat_jvp_p.bind(*args, jaxpr=batched)
    return outs, [0] * len(outs)


def _remat_jvp_jvp(primals, tangents, jaxpr):
    """Differentiating the tangent program again (jvp of jvp, grad of jvp): the tangent
    outputs of ``jaxpr``'s JVP program are themselves a checkpointed program of (primals,
    tangents), differentiated by ``checkpoint``'s own rule, so the reverse pass of a
    second derivative recomputes too."""
    from ..core.staging import trace_to_jaxpr
    from ..ir.interpret import eval_jaxpr
    from ..ir.jaxpr import hoist_consts
    n_out = len(jaxpr.out_avals)
    jclosed, _ = ad.jvp_jaxpr(jaxpr, [True] * len(jaxpr.in_avals), instantiate_out=True)
    tangent_part = trace_to_jaxpr(
        lambda *xs: list(eval_jaxpr(jclosed.jaxpr, jclosed.consts, *xs)[n_out:]),
        list(jclosed.in_avals))
    body, consts = hoist_consts(tangent_part)
    return _remat_jvp([*consts, *primals], [None] * len(consts) + list(tangents), body)


remat_jvp_p = Primitive("checkpoint_jvp", abstract_eval=_remat_jvp_aval, impl=_remat_jvp_impl,
                        multiple_results=True, flops=lambda *a, **k: 0, kind="other")
remat_jvp_p.transpose = _remat_jvp_transpose
remat_jvp_p.batch = _remat_jvp_batch
remat_jvp_p.jvp = _remat_jvp_jvp


# ---- custom_jvp / custom_vjp calls: a program plus the user's rule ------------------------
# Both are "call" primitives: evaluated (and inlined by the compiler) as their program
# ``jaxpr``, whose leading ``num_consts`` operands are hoisted closed-over values.  Their
# JVP rules call the user's rule on the non-constant operands.

def _custom_call_pp_params(params):
    # as JAX prints them: the program is ``call_jaxpr``, the rules by their function
    # names, no num_consts when there are none, and symbolic_zeros=False (jaxlite's rules
    # always receive instantiated zero tangents)
    shown = {k: v for k, v in params.items() if k != "jaxpr"}
    shown["call_jaxpr"] = params["jaxpr"]
    if not shown.get("num_consts"):
        shown.pop("num_consts", None)
    if shown.get("name") is None:
        shown.pop("name", None)
    shown["symbolic_zeros"] = False
    return shown


def _call_aval(*avals, jaxpr, num_consts, **_):
    return list(jaxpr.out_avals)


def _call_impl(*args, jaxpr, num_consts, **_):
    from ..ir.interpret import eval_jaxpr_impl
    return eval_jaxpr_impl(jaxpr.jaxpr, [], *args)


def _tangent_or_zero(t, x):
    aval = get_aval(x)
    if not ad.is_differentiable(aval):
        return ad.float0_zeros(aval)
    return ad.instantiate(t, aval.strip_weak_type())


def _check_no_closed_over_tangents(tangents, num_consts, what):
    """A custom rule sees only the explicit arguments: differentiating a value the
    function closes over would silently give zero, so it is an error (as in JAX)."""
    from .. import errors
    if any(t is not None for t in tangents[:num_consts]):
        raise errors.UnexpectedTracerError(
            f"a {what} function closes over a value that is being differentiated; its "
            f"rule cannot see that value's tangent. Pass the value as an explicit argument "
            f"of the function (or use jax.closure_convert).")


def _custom_jvp_call_jvp(primals, tangents, jaxpr, num_consts, jvp, name=None):
    _check_no_closed_over_tangents(tangents, num_consts, "custom_jvp")
    args = list(primals[num_consts:])
    ts = [_tangent_or_zero(t, x) for t, x in zip(tangents[num_consts:], args)]
    out, t_out = jvp(args, ts)
    return list(out), [t if ad.is_differentiable(get_aval(o)) else None
                       for o, t in zip(out, t_out)]


def _front_all(args, dims):
    size = batching.size_of(args, dims)
    return [batching.to_front(x, d, size) for x, d in zip(args, dims)], size


def _custom_jvp_call_batch(args, dims, jaxpr, num_consts, jvp, name=None):
    args, size = _front_all(args, dims)
    n_out = len(jaxpr.out_avals)
    batched, _ = batching.batch_jaxpr(jaxpr, [0] * len(args), size, out_front=[True] * n_out)

    def jvp_b(ps, ts):
        n = len(ps)

        def flat(*xs):
            out, t_out = jvp(list(xs[:n]), list(xs[n:]))
            return list(out) + list(t_out)
        outs = batching.batch_fun_flat(flat, list(ps) + list(ts), [0] * (2 * n), size)
        return outs[:n_out], outs[n_out:]

    jvp_b.__name__ = jvp.__name__
    outs = custom_jvp_call_p.bind(*args, jaxpr=batched, num_consts=num_consts, jvp=jvp_b,
                                  name=name)
    return outs, [0] * n_out


custom_jvp_call_p = Primitive("custom_jvp_call", abstract_eval=_call_aval, impl=_call_impl,
                              multiple_results=True, flops=lambda *a, **k: 0, kind="call")
custom_jvp_call_p.jvp = _custom_jvp_call_jvp
custom_jvp_call_p.batch = _custom_jvp_call_batch
custom_jvp_call_p.pp_params = _custom_call_pp_params


def _custom_vjp_call_jvp(primals, tangents, jaxpr, num_consts, fwd, bwd, name=None):
    _check_no_closed_over_tangents(tangents, num_consts, "custom_vjp")
    args = list(primals[num_consts:])
    ts = tangents[num_consts:]
    out, res = fwd(args)
    out, res = list(out), list(res)
    if all(t is None for t in ts):
        return out, [None] * len(out)
    in_avals = tuple(get_aval(x).strip_weak_type() for x in args)
    t_in = [ad.instantiate(t, a) if ad.is_differentiable(a) else
            ad.zeros(ShapedArray(a.shape, np.float32)) for t, a in zip(ts, in_avals)]
    out_avals = tuple(get_aval(o) for o in out)
    t_out = custom_lin_p.bind(*res, *t_in, num_res=len(res), bwd=bwd, out_avals=out_avals,
                              in_avals=in_avals)
    return out, [t if ad.is_differentiable(a) else None for t, a in zip(t_out, out_avals)]


def _custom_vjp_call_batch(args, dims, jaxpr, num_consts, fwd, bwd, name=None):
    args, size = _front_all(args, dims)
    n_out = len(jaxpr.out_avals)
    batched, _ = batching.batch_jaxpr(jaxpr, [0] * len(args), size, out_front=[True] * n_out)

    def fwd_b(ps):
        def flat(*xs):
            out, res = fwd(list(xs))
            return list(out) + list(res)
        outs = batching.batch_fun_flat(flat, list(ps), [0] * len(ps), size)
        return outs[:n_out], outs[n_out:]

    def bwd_b(res, cts):
        k = len(res)

        present = []

        def flat(*xs):
            got = list(bwd(list(xs[:k]), list(xs[k:])))
            present.extend(g is not None for g in got)
            return [g for g in got if g is not None]
        outs = iter(batching.batch_fun_flat(flat, list(res) + list(cts),
                                            [0] * (k + len(cts)), size))
        return [next(outs) if p else None for p in present]

    fwd_b.__name__, bwd_b.__name__ = fwd.__name__, bwd.__name__
    outs = custom_vjp_call_p.bind(*args, jaxpr=batched, num_consts=num_consts, fwd=fwd_b,
                                  bwd=bwd_b, name=name)
    return outs, [0] * n_out


custom_vjp_call_p = Primitive("custom_vjp_call", abstract_eval=_call_aval, impl=_call_impl,
                              multiple_results=True, flops=lambda *a, **k: 0, kind="call")
custom_vjp_call_p.jvp = _custom_vjp_call_jvp
custom_vjp_call_p.batch = _custom_vjp_call_batch
custom_vjp_call_p.pp_params = _custom_call_pp_params


# ---- sharding rules: a call's program is walked with its operands' specs
# (compiler.passes.sharding_propagation); a debug callback sees whole arrays --------------

from ..core import sharding_rules as _sr  # noqa: E402


def _call_sharding(in_specs, in_avals, axis_sizes, **params):
    from ..compiler.passes.sharding_propagation import call_rule
    return call_rule(in_specs, in_avals, axis_sizes, **params)


for _p in (jit_p, custom_jvp_call_p, custom_vjp_call_p, remat_p):
    _p.sharding = _call_sharding
debug_callback_p.sharding = _sr.replicate_rule(
    debug_callback_p, "a callback receives whole arrays: replicated")


# ---- lowering to StableHLO (backends/pjrt): calls are inlined -----------------------------

def _jit_lower(ctx, *args, jaxpr, name, **_):
    return ctx.lower_closed(jaxpr, *args)


def _call_lower(ctx, *args, jaxpr, **_):
    return ctx.lower_closed(jaxpr, *args)


def _remat_jvp_lower(ctx, *args, jaxpr):
    # as the implementation: the JVP program of ``jaxpr`` on (primals, tangents), its
    # tangent outputs
    jclosed, _ = ad.jvp_jaxpr(jaxpr, [True] * len(jaxpr.in_avals), instantiate_out=True)
    return ctx.lower_closed(jclosed, *args)[len(jaxpr.out_avals):]


jit_p.lowering = _jit_lower
custom_jvp_call_p.lowering = _call_lower
custom_vjp_call_p.lowering = _call_lower
remat_p.lowering = _call_lower
remat_jvp_p.lowering = _remat_jvp_lower
