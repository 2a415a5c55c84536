"""``custom_linear_solve``: a linear solve ``x = A^-1 b`` whose derivative is implicit.

Layer: primitives.  ``custom_linear_solve_p.bind(*matvec_consts, *vecmat_consts,
*solve_consts, *transpose_solve_consts, *b, jaxpr, const_lengths, jaxprs)`` -> the outputs
of ``solve`` (the leaves of ``x``, then those of any auxiliary output).

- ``jaxprs`` is a ``SolveJaxprs(matvec, vecmat, solve, transpose_solve)`` of ClosedJaxprs
  without constants (each takes its own hoisted constants, then the leaves of ``b``);
  ``vecmat`` and ``transpose_solve`` are None when no transpose solve was given.
  ``const_lengths`` counts each one's constants, in the same order.
- ``jaxpr`` is what the call runs: ``solve`` with every operand as an input (the other
  programs' constants unused), so the compiler inlines the equation as a "call" and the
  solver's loop runs natively under jit.

Rules: forward mode differentiates the linear system, not the solver: with ``A x = b``,
``dx = solve(db - dA x)`` (``dA x`` the JVP of ``matvec`` in its constants at fixed
``x``); the tangents of the solver's own constants do not matter.  The equation is linear
in ``b``; its transpose is the same primitive with ``matvec``/``vecmat`` and
``solve``/``transpose_solve`` swapped (TypeError when there is no transpose solve).
Batching batches all four programs with ``b`` mapped.
"""
from __future__ import annotations

from typing import NamedTuple

from ..core import ad, batching
from ..core.primitive import Primitive
from ..core.trace import get_aval
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Var


class SolveJaxprs(NamedTuple):
    """The four programs of a linear solve (or their constant counts)."""
    matvec: object
    vecmat: object
    solve: object
    transpose_solve: object

    def transpose(self) -> "SolveJaxprs":
        return SolveJaxprs(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split(args, const_lengths):
    """``(SolveJaxprs of constant lists, b leaves)``."""
    out, k = [], 0
    for n in const_lengths:
        out.append(list(args[k:k + n]))
        k += n
    return SolveJaxprs(*out), list(args[k:])


def _runner(jaxprs: SolveJaxprs, const_lengths: SolveJaxprs, b_avals) -> ClosedJaxpr:
    """``jaxprs.solve`` taking every operand of the equation (see module docstring)."""
    s = jaxprs.solve.jaxpr
    ns = const_lengths.solve

    def unused(name):
        j = getattr(jaxprs, name)
        return [Var(a) for a in j.in_avals[:getattr(const_lengths, name)]] if j is not None \
            else []
    invars = (unused("matvec") + unused("vecmat") + list(s.invars[:ns]) +
              unused("transpose_solve") + list(s.invars[ns:]))
    return ClosedJaxpr(Jaxpr(s.constvars, invars, s.eqns, s.outvars), jaxprs.solve.consts)


def bind_linear_solve(consts: SolveJaxprs, b, jaxprs: SolveJaxprs):
    """Binds the primitive on constant lists ``consts`` and right-hand side leaves ``b``."""
    const_lengths = SolveJaxprs(*[len(c) for c in consts])
    runner = _runner(jaxprs, const_lengths, [get_aval(x) for x in b])
    flat = [x for c in consts for x in c] + list(b)
    return custom_linear_solve_p.bind(*flat, jaxpr=runner, const_lengths=const_lengths,
                                      jaxprs=jaxprs)


def _aval(*avals, jaxpr, const_lengths, jaxprs):
    consts, b = _split(avals, const_lengths)
    for name in SolveJaxprs._fields:
        j = getattr(jaxprs, name)
        if j is None:
            continue
        want = j.in_avals
        got = list(getattr(consts, name)) + list(b)
        if len(got) != len(want) or any(g.shape != w.shape or g.dtype != w.dtype
                                         for g, w in zip(got, want)):
            raise TypeError(f"custom_linear_solve: operands {[a.str_short() for a in got]} "
                            f"do not match the {name} program's "
                            f"{[a.str_short() for a in want]}")
    return list(jaxprs.solve.out_avals)


def _impl(*args, jaxpr, const_lengths, jaxprs):
    from ..ir.interpret import eval_jaxpr_impl
    return eval_jaxpr_impl(jaxpr.jaxpr, jaxpr.consts, *args)


def _flops(*avals, jaxpr, **_):
    from .control_flow import _jaxpr_flops
    return _jaxpr_flops(jaxpr.jaxpr)


def _jvp(primals, tangents, jaxpr, const_lengths, jaxprs):
    from ..ir.interpret import eval_jaxpr
    from .elementwise import neg_p
    out = custom_linear_solve_p.bind(*primals, jaxpr=jaxpr, const_lengths=const_lengths,
                                     jaxprs=jaxprs)
    consts, b = _split(primals, const_lengths)
    dconsts, db = _split(tangents, const_lengths)
    nb = len(b)
    x = out[:nb]
    rhs = list(db)
    if any(t is not None for t in dconsts.matvec):
        # the change of A applied to the solution: the JVP of matvec in its constants
        mv = jaxprs.matvec.jaxpr
        _, dAx = ad.jvp_flat(lambda *cs: eval_jaxpr(mv, [], *cs, *x), consts.matvec,
                             dconsts.matvec)
        rhs = [ad.add_tangents(t, None if d is None else neg_p.bind(d))
               for t, d in zip(rhs, dAx)]
    if all(t is None for t in rhs):
        return out, [None] * len(out)
    rhs = [ad.instantiate(t, get_aval(v).strip_weak_type()) for t, v in zip(rhs, b)]
    dx = bind_linear_solve(consts, rhs, jaxprs)
    # auxiliary outputs are not differentiated
    return out, list(dx[:nb]) + [None] * (len(out) - nb)


def _transpose(cts, *args, jaxpr, const_lengths, jaxprs):
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    consts, b = _split(args, const_lengths)
    if any(ad.is_undefined(c) for cs in consts for c in cs):
        raise NotImplementedError("custom_linear_solve is linear in b only: its programs' "
                                  "constants cannot be transposed")
    nb = len(b)
    ct_x = [ad.instantiate(c, v.aval.strip_weak_type()) for c, v in
            zip(cts[:nb], b)]
    ct_b = bind_linear_solve(consts.transpose(), ct_x, jaxprs.transpose())
    return [None] * sum(const_lengths) + list(ct_b[:nb])


def _batch(args, dims, jaxpr, const_lengths, jaxprs):
    size = batching.size_of(args, dims)
    consts, b = _split(args, const_lengths)
    cdims, _ = _split(dims, const_lengths)
    nconst = sum(const_lengths)
    b = [batching.to_front(x, d, size) for x, d in zip(b, dims[nconst:])]
    new_consts, new_jaxprs = [], []
    for name in SolveJaxprs._fields:
        cs, ds = getattr(consts, name), getattr(cdims, name)
        cs = [batching.moveaxis(c, d, 0) if d is not None else c for c, d in zip(cs, ds)]
        new_consts.append(cs)
        j = getattr(jaxprs, name)
        if j is None:
            new_jaxprs.append(None)
            continue
        in_dims = [0 if d is not None else None for d in ds] + [0] * len(b)
        bj, _ = batching.batch_jaxpr(j, in_dims, size, out_front=[True] * len(j.out_avals))
        new_jaxprs.append(bj)
    outs = bind_linear_solve(SolveJaxprs(*new_consts), b, SolveJaxprs(*new_jaxprs))
    return outs, [0] * len(outs)


def _pp_params(params):
    # as JAX prints them (its tuple type is named _LinearSolveTuple); ``jaxpr`` is derived
    n = params["const_lengths"]
    counts = ", ".join(f"{k}={v}" for k, v in zip(SolveJaxprs._fields, n))
    return {"const_lengths": f"_LinearSolveTuple({counts})", "jaxprs": params["jaxprs"]}


custom_linear_solve_p = Primitive("custom_linear_solve", abstract_eval=_aval, impl=_impl,
                                  multiple_results=True, flops=_flops, kind="call")
custom_linear_solve_p.jvp = _jvp
custom_linear_solve_p.transpose = _transpose
custom_linear_solve_p.batch = _batch
custom_linear_solve_p.pp_params = _pp_params


# sharding: the solve program (which takes every operand) is walked with their specs
def _solve_sharding(in_specs, in_avals, axis_sizes, *, jaxpr, **params):
    from ..compiler.passes.sharding_propagation import call_rule
    return call_rule(in_specs, in_avals, axis_sizes, jaxpr=jaxpr)


custom_linear_solve_p.sharding = _solve_sharding


# ---- lowering to StableHLO (backends/pjrt): the solve's program, inlined ----------------

custom_linear_solve_p.lowering = lambda ctx, *args, jaxpr, **_: ctx.lower_closed(jaxpr, *args)
