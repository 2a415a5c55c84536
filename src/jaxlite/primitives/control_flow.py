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
from ..ir.interpret import dead_after, eval_jaxpr_impl, exact
from ..ir.jaxpr import ClosedJaxpr, Jaxpr

_BOOL_SCALAR = ShapedArray((), np.bool_)
_INT32_SCALAR = ShapedArray((), np.int32)


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
    dead = dead_after(body)
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = eval_jaxpr_impl(body, body_consts, *consts, *carry, *[x[i, ...] for x in xs],
                               dead=dead)
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
    c_dead, b_dead = dead_after(cj), dead_after(bj)
    while bool(eval_jaxpr_impl(cj, cj_consts, *cconsts, *carry, dead=c_dead)[0]):
        carry = eval_jaxpr_impl(bj, bj_consts, *bconsts, *carry, dead=b_dead)
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
        outs = br.out_avals
        if len(outs) != len(first) or not all(_same_type(a, b) for a, b in zip(outs, first)):
            raise TypeError(f"cond: branch {k} returns "
                            f"{[a.str_short() for a in br.out_avals]}, branch 0 returns "
                            f"{[a.str_short() for a in first]}")
    # the outputs have branch 0's types, weak types included (as JAX's cond: the branches
    # may differ in weak type only)
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


# ---- transformation rules ---------------------------------------------------------------
# Forward mode: one joint loop over (primal, tangent).  Reverse mode (the tangents are being
# staged by a linearisation): the body is linearised inside a "known" loop that runs now
# and stacks the residuals; the linear body becomes a second loop, staged, which the
# transpose rule runs backwards.

from ..core import ad, batching  # noqa: E402
from ..core.staging import trace_to_jaxpr  # noqa: E402
from ..core.trace import get_aval  # noqa: E402
from ..ir.interpret import eval_jaxpr  # noqa: E402


def _permute(closed: ClosedJaxpr, in_order, out_order) -> ClosedJaxpr:
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in in_order], j.eqns,
                             [j.outvars[i] for i in out_order]), closed.consts)


def _tangent_aval(a):
    return a.strip_weak_type()


def _inst(ts, primals):
    return [ad.instantiate(t, _tangent_aval(get_aval(p))) if t is not None or
            ad.is_differentiable(get_aval(p)) else None for t, p in zip(ts, primals)]


def _call(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# scan: JVP -----------------------------------------------------------------------------

def _scan_jvp(primals, tangents, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    if ad.is_linearizing(tangents):
        return _scan_linearize(primals, tangents, jaxpr, nc, ncar, length, reverse, unroll)
    nz = [t is not None for t in tangents]
    const_nz, carry_nz, xs_nz = nz[:nc], nz[nc:nc + ncar], nz[nc + ncar:]
    body_avals = jaxpr.in_avals
    carry_nz = [c and ad.is_differentiable(a) for c, a in
                zip(carry_nz, body_avals[nc:nc + ncar])]
    while True:       # carries whose tangent can become nonzero
        _, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                 instantiate_out=carry_nz + [False] * (len(jaxpr.out_avals)
                                                                       - ncar))
        new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
        if new == carry_nz:
            break
        carry_nz = new
    jclosed, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                   instantiate_out=carry_nz + [False] * (
                                       len(jaxpr.out_avals) - ncar))
    n_in = len(body_avals)
    nt_c, nt_car = sum(const_nz), sum(carry_nz)
    nt_x = sum(xs_nz)
    # jvp body inputs: [c, carry, x, tc, tcarry, tx] -> [c, tc, carry, tcarry, x, tx]
    c_i = list(range(nc))
    car_i = list(range(nc, nc + ncar))
    x_i = list(range(nc + ncar, n_in))
    tc_i = list(range(n_in, n_in + nt_c))
    tcar_i = list(range(n_in + nt_c, n_in + nt_c + nt_car))
    tx_i = list(range(n_in + nt_c + nt_car, n_in + nt_c + nt_car + nt_x))
    n_out = len(jaxpr.out_avals)
    ys_nz = out_nz[ncar:]
    tcar_o = list(range(n_out, n_out + nt_car))
    ty_o = list(range(n_out + nt_car, n_out + nt_car + sum(ys_nz)))
    body = _permute(jclosed, c_i + tc_i + car_i + tcar_i + x_i + tx_i,
                    list(range(ncar)) + tcar_o + list(range(ncar, n_out)) + ty_o)
    consts, carry, xs = primals[:nc], primals[nc:nc + ncar], primals[nc + ncar:]
    tcs = [t for t, m in zip(tangents[:nc], const_nz) if m]
    tcarry = [ad.instantiate(t, _tangent_aval(get_aval(p))) for t, p, m in
              zip(tangents[nc:nc + ncar], carry, carry_nz) if m]
    txs = [t for t, m in zip(tangents[nc + ncar:], xs_nz) if m]
    outs = scan_p.bind(*consts, *tcs, *carry, *tcarry, *xs, *txs, jaxpr=body,
                       num_consts=nc + nt_c, num_carry=ncar + nt_car, length=length,
                       reverse=reverse, unroll=unroll)
    carry_out = outs[:ncar]
    tcarry_out = iter(outs[ncar:ncar + nt_car])
    ys = outs[ncar + nt_car:ncar + nt_car + (n_out - ncar)]
    tys = iter(outs[ncar + nt_car + (n_out - ncar):])
    t_out = [next(tcarry_out) if m else None for m in carry_nz] + \
        [next(tys) if m else None for m in ys_nz]
    return list(carry_out) + list(ys), t_out


def _scan_linearize(primals, tangents, jaxpr, nc, ncar, length, reverse, unroll):
    """Reverse mode: a known scan (the primal body, linearised per step, stacking the
    residuals) runs now; the linear body becomes a staged scan over the tangents."""
    body_avals = jaxpr.in_avals
    n_in = len(body_avals)
    diff = [ad.is_differentiable(a) for a in body_avals]
    store = {}

    def known_body(*args):
        consts_k = args[:nc]
        lin = ad.linearize_flat(lambda *xs: _call(jaxpr, *xs), list(args))
        store["lin"] = lin
        # residuals that are the body's own loop-invariant operands pass as constants
        const_ids = {id(c): i for i, c in enumerate(consts_k)}
        fwd, stacked = [], []
        for r in lin.consts:
            if id(r) in const_ids:
                fwd.append(const_ids[id(r)])
            else:
                fwd.append(None)
                stacked.append(r)
        store["fwd"] = fwd
        return list(lin.primals_out) + stacked

    k_closed = trace_to_jaxpr(known_body, list(body_avals))
    lin, fwd = store["lin"], store["fwd"]
    n_out = len(jaxpr.out_avals)
    consts, carry, xs = primals[:nc], primals[nc:nc + ncar], primals[nc + ncar:]
    k_outs = scan_p.bind(*consts, *carry, *xs, jaxpr=k_closed, num_consts=nc,
                         num_carry=ncar, length=length, reverse=reverse, unroll=unroll)
    primal_out = k_outs[:n_out]
    stacked_res = k_outs[n_out:]
    # the linear body: [forwarded residuals, const tangents, carry tangents,
    #                   stacked residual slices, x tangents] -> [carry tangents, y tangents]
    res_avals = [v.aval for v in lin.jaxpr.constvars]
    fwd_idx = [i for i, f in enumerate(fwd) if f is not None]
    st_idx = [i for i, f in enumerate(fwd) if f is None]
    t_avals = [_tangent_aval(a) for a, d in zip(body_avals, diff) if d]
    t_c = [i for i in range(nc) if diff[i]]
    t_car = [i for i in range(nc, nc + ncar) if diff[i]]
    t_x = [i for i in range(nc + ncar, n_in) if diff[i]]
    out_diff = [ad.is_differentiable(a) for a in jaxpr.out_avals]
    lin_jaxpr = lin.jaxpr

    def lin_body(*args):
        k = 0
        f_res = args[k:k + len(fwd_idx)]
        k += len(fwd_idx)
        tc = args[k:k + len(t_c)]
        k += len(t_c)
        tcar = args[k:k + len(t_car)]
        k += len(t_car)
        s_res = args[k:k + len(st_idx)]
        k += len(st_idx)
        tx = args[k:]
        res = [None] * len(res_avals)
        for i, v in zip(fwd_idx, f_res):
            res[i] = v
        for i, v in zip(st_idx, s_res):
            res[i] = v
        outs = iter(eval_jaxpr(lin_jaxpr, res, *tc, *tcar, *tx))
        full = [None if z else next(outs) for z in lin.out_zero]
        return [ad.instantiate(t, _tangent_aval(a)) for t, a, d in
                zip(full, jaxpr.out_avals, out_diff) if d]

    tpos = {i: k for k, i in enumerate([i for i in range(n_in) if diff[i]])}
    l_avals = ([res_avals[i] for i in fwd_idx] + [t_avals[tpos[i]] for i in t_c] +
               [t_avals[tpos[i]] for i in t_car] + [res_avals[i] for i in st_idx] +
               [t_avals[tpos[i]] for i in t_x])
    l_closed = trace_to_jaxpr(lin_body, l_avals)
    ts = _inst(tangents, primals)
    f_vals = [consts[fwd[i]] for i in fwd_idx]
    lin_outs = scan_p.bind(*f_vals, *[ts[i] for i in t_c], *[ts[i] for i in t_car],
                           *stacked_res, *[ts[i] for i in t_x], jaxpr=l_closed,
                           num_consts=len(fwd_idx) + len(t_c), num_carry=len(t_car),
                           length=length, reverse=reverse, unroll=unroll)
    it = iter(lin_outs)
    t_out = [next(it) if d else None for d in out_diff]
    return list(primal_out), t_out


scan_p.jvp = _scan_jvp


# scan: transpose (of the linear scan staged above) -------------------------------------

def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    n_in = len(args)
    consts, carry, xs = args[:nc], args[nc:nc + ncar], args[nc + ncar:]
    c_lin = [ad.is_undefined(c) for c in consts]
    x_lin = [ad.is_undefined(x) for x in xs]
    body_avals = jaxpr.in_avals
    lin_mask = c_lin + [True] * ncar + x_lin
    ct_carry = [ad.instantiate(c, _tangent_aval(a)) for c, a in
                zip(cts[:ncar], jaxpr.out_avals[:ncar])]
    ct_ys = [ad.instantiate(c, ShapedArray((length,) + a.shape, a.dtype))
             for c, a in zip(cts[ncar:], jaxpr.out_avals[ncar:])]
    t_closed = ad.transpose_jaxpr(jaxpr, lin_mask)
    res_c = [c for c, m in zip(consts, c_lin) if not m]
    res_x = [x for x, m in zip(xs, x_lin) if not m]
    lin_c_avals = [_tangent_aval(body_avals[i]) for i in range(nc) if c_lin[i]]
    n_rc, n_rx = len(res_c), len(res_x)
    n_lc = len(lin_c_avals)
    n_ys = len(ct_ys)

    def body(*a):
        rc = a[:n_rc]
        acc = a[n_rc:n_rc + n_lc]
        ctc = a[n_rc + n_lc:n_rc + n_lc + ncar]
        rx = a[n_rc + n_lc + ncar:n_rc + n_lc + ncar + n_rx]
        cty = a[n_rc + n_lc + ncar + n_rx:]
        # transpose_jaxpr takes the non-linear inputs in body order (res consts, res xs)
        outs = _call(t_closed, *rc, *rx, *ctc, *cty)
        g_c, g_car, g_x = outs[:n_lc], outs[n_lc:n_lc + ncar], outs[n_lc + ncar:]
        return [ad.add_tangents(x, y) for x, y in zip(acc, g_c)] + list(g_car) + list(g_x)

    rx_avals = [body_avals[nc + ncar + i] for i, m in enumerate(x_lin) if not m]
    b_avals = ([get_aval(c) for c in res_c] + lin_c_avals +
               [_tangent_aval(a) for a in jaxpr.out_avals[:ncar]] + rx_avals +
               [_tangent_aval(a) for a in jaxpr.out_avals[ncar:]])
    b_closed = trace_to_jaxpr(body, b_avals)
    acc0 = [ad.zeros(a) for a in lin_c_avals]
    outs = scan_p.bind(*res_c, *acc0, *ct_carry, *res_x, *ct_ys, jaxpr=b_closed,
                       num_consts=n_rc, num_carry=n_lc + ncar, length=length,
                       reverse=not reverse, unroll=unroll)
    g_c = iter(outs[:n_lc])
    g_car = outs[n_lc:n_lc + ncar]
    g_x = iter(outs[n_lc + ncar:])
    res = [next(g_c) if m else None for m in c_lin]
    res += [g if ad.is_undefined(c) else None for g, c in zip(g_car, carry)]
    res += [next(g_x) if m else None for m in x_lin]
    del n_in, n_ys
    return res


scan_p.transpose = _scan_transpose


# scan: batching --------------------------------------------------------------------------

def _mapped_to(xs, dims, at):
    """Moves each mapped operand's axis to ``at``; returns the operands and their new
    dims (``at`` or None)."""
    moved = [batching.moveaxis(x, d, at) if d is not None else x for x, d in zip(xs, dims)]
    return moved, [at if d is not None else None for d in dims]


def _scan_batch(args, dims, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    size = batching.size_of(args, dims)
    consts, carry, xs = args[:nc], args[nc:nc + ncar], args[nc + ncar:]
    c_d, car_d, x_d = dims[:nc], dims[nc:nc + ncar], dims[nc + ncar:]
    consts, c_b = _mapped_to(consts, c_d, 0)
    xs, _ = _mapped_to(xs, x_d, 1)
    x_b = [0 if d is not None else None for d in x_d]    # a slice of xs: mapped at 0
    car_b = [d is not None for d in car_d]
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        _, out_dims = batching.batch_jaxpr(jaxpr, c_b + [0 if b else None for b in car_b] + x_b,
                                           size, out_front=car_b + [False] * n_ys)
        new = [b or (d is not None) for b, d in zip(car_b, out_dims[:ncar])]
        if new == car_b:
            break
        car_b = new
    body, out_dims = batching.batch_jaxpr(jaxpr, c_b + [0 if b else None for b in car_b] + x_b,
                                          size, out_front=car_b + [False] * n_ys)
    carry = [batching.to_front(c, d, size) if b else c
             for c, d, b in zip(carry, car_d, car_b)]
    outs = scan_p.bind(*consts, *carry, *xs, jaxpr=body, num_consts=nc, num_carry=ncar,
                       length=length, reverse=reverse, unroll=unroll)
    o_dims = [0 if b else None for b in car_b] + [1 if d is not None else None
                                                  for d in out_dims[ncar:]]
    return outs, o_dims


scan_p.batch = _scan_batch


# while: JVP (forward mode only, as in JAX) and batching ---------------------------------

_WHILE_REVERSE_ERROR = (
    "lax.while_loop (and lax.fori_loop with traced bounds) supports forward-mode "
    "differentiation only, not reverse mode: the trip count is unknown, so intermediate "
    "values cannot be stored. Use lax.scan, or fori_loop with static start/stop.")


def _add_unused_inputs(closed: ClosedJaxpr, avals, at: int) -> ClosedJaxpr:
    from ..ir.jaxpr import Var
    j = closed.jaxpr
    extra = [Var(a) for a in avals]
    inv = list(j.invars)
    inv[at:at] = extra
    return ClosedJaxpr(Jaxpr(j.constvars, inv, j.eqns, j.outvars), closed.consts)


def _while_jvp(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """One loop carrying primals and tangents.  Under linearisation (``jax.linearize``, and
    the first half of reverse mode) that loop is staged whole, the primal recomputed inside
    it, while the primal outputs come from the plain loop run now: a staged loop's
    tangents are linear in the tangent inputs, so ``linearize`` works (as in JAX); only
    transposing the loop (``grad``/``vjp``) is refused, by the transpose rule."""
    linearizing = ad.is_linearizing(tangents)
    cn, bn = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = primals[:cn], primals[cn:cn + bn], primals[cn + bn:]
    bc_nz = [t is not None for t in tangents[cn:cn + bn]]
    car_nz = [t is not None and ad.is_differentiable(get_aval(p))
              for t, p in zip(tangents[cn + bn:], carry)]
    while True:
        _, out_nz = ad.jvp_jaxpr(body_jaxpr, bc_nz + car_nz, instantiate_out=car_nz)
        new = [a or b for a, b in zip(car_nz, out_nz)]
        if new == car_nz:
            break
        car_nz = new
    jclosed, _ = ad.jvp_jaxpr(body_jaxpr, bc_nz + car_nz, instantiate_out=car_nz)
    nb, ncar = bn, len(carry)
    nt_b, nt_car = sum(bc_nz), sum(car_nz)
    n_in = nb + ncar
    order = (list(range(nb)) + list(range(n_in, n_in + nt_b)) + list(range(nb, n_in)) +
             list(range(n_in + nt_b, n_in + nt_b + nt_car)))
    body = _permute(jclosed, order, list(range(ncar + nt_car)))
    tcar_avals = [_tangent_aval(get_aval(c)) for c, m in zip(carry, car_nz) if m]
    cond = _add_unused_inputs(cond_jaxpr, tcar_avals, len(cond_jaxpr.in_avals))
    tb = [t for t, m in zip(tangents[cn:cn + bn], bc_nz) if m]
    tcar = [ad.instantiate(t, _tangent_aval(get_aval(c)))
            for t, c, m in zip(tangents[cn + bn:], carry, car_nz) if m]
    outs = while_p.bind(*cconsts, *bconsts, *tb, *carry, *tcar, cond_jaxpr=cond,
                        body_jaxpr=body, cond_nconsts=cn, body_nconsts=bn + nt_b)
    it = iter(outs[ncar:])
    t_out = [next(it) if m else None for m in car_nz]
    if linearizing:
        # the staged loop's primal outputs are staged values; the known ones are these
        primal_out = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond_jaxpr,
                                  body_jaxpr=body_jaxpr, cond_nconsts=cn, body_nconsts=bn)
        return list(primal_out), t_out
    return list(outs[:ncar]), t_out


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_REVERSE_ERROR)


while_p.jvp = _while_jvp
while_p.transpose = _while_transpose


def _while_batch(args, dims, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    from .elementwise import select_n_p
    from .reduction import reduce_or_p
    from .shape import broadcast_in_dim_p
    cn, bn = cond_nconsts, body_nconsts
    size = batching.size_of(args, dims)
    cconsts, bconsts, carry = args[:cn], args[cn:cn + bn], args[cn + bn:]
    cc_d, bc_d, car_d = dims[:cn], dims[cn:cn + bn], dims[cn + bn:]
    cconsts, cc_b = _mapped_to(cconsts, cc_d, 0)
    bconsts, bc_b = _mapped_to(bconsts, bc_d, 0)
    car_b = [d is not None for d in car_d]
    ncar = len(carry)
    while True:
        _, bo = batching.batch_jaxpr(body_jaxpr, bc_b + [0 if b else None for b in car_b],
                                     size, out_front=car_b)
        _, co = batching.batch_jaxpr(cond_jaxpr, cc_b + [0 if b else None for b in car_b],
                                     size)
        pred_batched = co[0] is not None
        new = [b or (d is not None) or pred_batched for b, d in zip(car_b, bo)]
        if new == car_b:
            break
        car_b = new
    car_dims = [0 if b else None for b in car_b]
    body_b, _ = batching.batch_jaxpr(body_jaxpr, bc_b + car_dims, size, out_front=car_b)
    cond_b, co = batching.batch_jaxpr(cond_jaxpr, cc_b + car_dims, size)
    carry = [batching.to_front(c, d, size) if b else c for c, d, b in zip(carry, car_d, car_b)]
    if co[0] is None:
        outs = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond_b, body_jaxpr=body_b,
                            cond_nconsts=cn, body_nconsts=bn)
        return outs, car_dims
    # a per-example predicate: loop while any example continues; finished examples keep
    # their carry (every carry is batched here)
    c_avals = cond_b.in_avals
    b_avals = body_b.in_avals

    def new_cond(*a):
        (pred,) = _call(cond_b, *a)
        return [reduce_or_p.bind(pred, axes=(0,))]

    def new_body(*a):
        cc, bc, car = a[:cn], a[cn:cn + bn], a[cn + bn:]
        (pred,) = _call(cond_b, *cc, *car)
        new = _call(body_b, *bc, *car)
        out = []
        for old, nw in zip(car, new):
            shape = get_aval(old).shape
            p = broadcast_in_dim_p.bind(pred, shape=shape, broadcast_dimensions=(0,))
            out.append(select_n_p.bind(p, old, nw))
        return out

    cond2 = trace_to_jaxpr(new_cond, list(c_avals))
    body2 = trace_to_jaxpr(new_body, list(c_avals[:cn]) + list(b_avals))
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, cond_jaxpr=cond2,
                        body_jaxpr=body2, cond_nconsts=cn, body_nconsts=cn + bn)
    del ncar
    return outs, car_dims


while_p.batch = _while_batch


# cond: JVP, transpose, batching ----------------------------------------------------------

def _cond_jvp(primals, tangents, branches):
    index, ops = primals[0], primals[1:]
    ts = tangents[1:]
    if ad.is_linearizing(ts):
        return _cond_linearize(index, ops, ts, branches)
    nz = [t is not None for t in ts]
    out_nz = [False] * len(branches[0].out_avals)
    for br in branches:
        _, o = ad.jvp_jaxpr(br, nz)
        out_nz = [a or b for a, b in zip(out_nz, o)]
    new = [ad.jvp_jaxpr(br, nz, instantiate_out=out_nz)[0] for br in branches]
    tin = [t for t in ts if t is not None]
    outs = cond_p.bind(index, *ops, *tin, branches=tuple(new))
    n = len(branches[0].out_avals)
    it = iter(outs[n:])
    return list(outs[:n]), [next(it) if m else None for m in out_nz]


def _cond_linearize(index, ops, ts, branches):
    in_avals = branches[0].in_avals
    out_avals = branches[0].out_avals
    diff = [ad.is_differentiable(a) for a in in_avals]
    out_diff = [ad.is_differentiable(a) for a in out_avals]
    lins, res_avals = [], []
    for br in branches:   # first pass: each branch's residual types
        store = {}

        def known(*args, br=br, store=store):
            lin = ad.linearize_flat(lambda *xs: _call(br, *xs), list(args))
            store["lin"] = lin
            return list(lin.primals_out) + list(lin.consts)

        trace_to_jaxpr(known, list(in_avals))
        lins.append(store["lin"])
        res_avals.append([v.aval for v in store["lin"].jaxpr.constvars])
    offsets = []
    total = 0
    for r in res_avals:
        offsets.append(total)
        total += len(r)
    all_res = [a for r in res_avals for a in r]

    def known_k(k):
        def fn(*args):
            lin = ad.linearize_flat(lambda *xs: _call(branches[k], *xs), list(args))
            res = [ad.zeros(a) for a in all_res]
            res[offsets[k]:offsets[k] + len(lin.consts)] = lin.consts
            return list(lin.primals_out) + res
        return fn

    known_brs = tuple(trace_to_jaxpr(known_k(k), list(in_avals)) for k in range(len(branches)))
    outs = cond_p.bind(index, *ops, branches=known_brs)
    n = len(out_avals)
    primal_out, res_vals = outs[:n], outs[n:]
    t_avals = [_tangent_aval(a) for a, d in zip(in_avals, diff) if d]

    def lin_k(k):
        lin = lins[k]

        def fn(*args):
            res = args[offsets[k]:offsets[k] + len(res_avals[k])]
            tin = args[total:]
            got = iter(eval_jaxpr(lin.jaxpr, list(res), *tin))
            full = [None if z else next(got) for z in lin.out_zero]
            return [ad.instantiate(t, _tangent_aval(a)) for t, a, d in
                    zip(full, out_avals, out_diff) if d]
        return fn

    lin_brs = tuple(trace_to_jaxpr(lin_k(k), all_res + t_avals) for k in range(len(branches)))
    tin = [t for t, d in zip(_inst(ts, ops), diff) if d]
    t_outs = cond_p.bind(index, *res_vals, *tin, branches=lin_brs)
    it = iter(t_outs)
    return list(primal_out), [next(it) if d else None for d in out_diff]


cond_p.jvp = _cond_jvp


def _cond_transpose(cts, index, *ops, branches):
    lin_mask = [ad.is_undefined(o) for o in ops]
    if ad.is_undefined(index):
        raise ValueError("cond is not linear in its branch index")
    out_avals = branches[0].out_avals
    cts = [ad.instantiate(c, _tangent_aval(a)) for c, a in zip(cts, out_avals)]
    new = tuple(ad.transpose_jaxpr(br, lin_mask) for br in branches)
    res = [o for o, m in zip(ops, lin_mask) if not m]
    outs = cond_p.bind(index, *res, *cts, branches=new)
    it = iter(outs)
    return [None] + [next(it) if m else None for m in lin_mask]


cond_p.transpose = _cond_transpose


def _cond_batch(args, dims, branches):
    from .elementwise import select_n_p, clamp_p, eq_p
    from .shape import broadcast_in_dim_p, stop_gradient_p
    size = batching.size_of(args, dims)
    index, ops = args[0], args[1:]
    i_d, o_d = dims[0], dims[1:]
    ops, in_b = _mapped_to(ops, o_d, 0)
    if i_d is None:
        out_b = [False] * len(branches[0].out_avals)
        for br in branches:
            _, od = batching.batch_jaxpr(br, in_b, size)
            out_b = [a or (d is not None) for a, d in zip(out_b, od)]
        new = tuple(batching.batch_jaxpr(br, in_b, size, out_front=out_b)[0]
                    for br in branches)
        outs = cond_p.bind(index, *ops, branches=new)
        return outs, [0 if b else None for b in out_b]
    # a per-example branch index: run every branch on the batch and select per example
    index = batching.moveaxis(index, i_d, 0)
    n = len(branches)
    index = clamp_p.bind(np.array(0, np.int32), index, np.array(n - 1, np.int32))
    # each branch sees its differentiable operands through select(index == k, stopped, x):
    # an example that takes another branch passes it no derivative, so a NaN or inf in a
    # branch not taken (sqrt of a negative) cannot reach the gradient as 0 * NaN (JAX)
    diff = [ad.is_differentiable(get_aval(x)) for x in ops]
    ops = [x if b is not None or not d else batching.broadcast_front(x, size)
           for x, b, d in zip(ops, in_b, diff)]
    in_b = [0 if d else b for b, d in zip(in_b, diff)]
    results = []
    for k, br in enumerate(branches):
        b, od = batching.batch_jaxpr(br, in_b, size, out_front=[True] * len(br.out_avals))
        taken = eq_p.bind(index, np.array(k, np.int32))
        results.append(_call(b, *[_select_front(taken, x, stop_gradient_p.bind(x), x) if d
                                  else x for x, d in zip(ops, diff)]))
    outs = []
    for k in range(len(branches[0].out_avals)):
        cases = [r[k] for r in results]
        shape = get_aval(cases[0]).shape
        sel = broadcast_in_dim_p.bind(index, shape=shape, broadcast_dimensions=(0,)) \
            if len(shape) > 1 else index
        outs.append(select_n_p.bind(sel, *cases) if n > 1 else cases[0])
    return outs, [0] * len(outs)


def _select_front(pred, x, on_false, on_true):
    """``select_n`` of two values shaped like ``x`` by ``pred`` of shape ``x.shape[:1]``."""
    from .elementwise import select_n_p
    from .shape import broadcast_in_dim_p
    shape = get_aval(x).shape
    if len(shape) > 1:
        pred = broadcast_in_dim_p.bind(pred, shape=shape, broadcast_dimensions=(0,))
    return select_n_p.bind(pred, on_false, on_true)


cond_p.batch = _cond_batch


# ---- sharding rules: the bodies are walked with the operands' specs, the loop carries
# settle on specs the body keeps (compiler.passes.sharding_propagation) -------------------

def _cond_sharding(*args, **params):
    from ..compiler.passes.sharding_propagation import cond_rule
    return cond_rule(*args, **params)


def _scan_sharding(*args, **params):
    from ..compiler.passes.sharding_propagation import scan_rule
    return scan_rule(*args, **params)


def _while_sharding(*args, **params):
    from ..compiler.passes.sharding_propagation import while_rule
    return while_rule(*args, **params)


cond_p.sharding = _cond_sharding
scan_p.sharding = _scan_sharding
while_p.sharding = _while_sharding


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# A loop is one ``stablehlo.while`` whose carried values hold everything its regions read
# (the bodies' constants and a scan's stacked operands included), so no region captures
# a value from outside; a cond is a ``stablehlo.case`` on the clamped index.

def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc = list(args[:cond_nconsts])
    bc = list(args[cond_nconsts:cond_nconsts + body_nconsts])
    n_fixed = cond_nconsts + body_nconsts
    avals = [a.aval for a in args]

    def cond(*vals):
        carry = vals[n_fixed:]
        return ctx.lower_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts,
                               list(vals[:cond_nconsts]) + list(carry))

    def body(*vals):
        fixed, carry = list(vals[:n_fixed]), list(vals[n_fixed:])
        outs = ctx.lower_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts,
                               fixed[cond_nconsts:] + carry)
        return fixed + list(outs)

    outs = ctx.op("stablehlo.while", cc + bc + list(args[n_fixed:]), avals,
                  regions=[ctx.region(avals, cond), ctx.region(avals, body)])
    return outs[n_fixed:]


def _scan_lower(ctx, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    y_avals = jaxpr.out_avals[num_carry:]
    if length == 0:          # no step: the carry as it came, empty stacked outputs
        return carry + [ctx.full(0, (0,) + a.shape, a.dtype) for a in y_avals]
    ys = [ctx.constant(np.zeros((), a.dtype), a.dtype, (length,) + a.shape) for a in y_avals]
    # the step counter: int32 as JAX's (a TPU has no 64-bit integer unit), int64 only for a
    # length it cannot count to
    it = np.int32 if length < 2 ** 31 - 1 else np.int64
    i0 = ctx.constant(0, it)
    init = [i0] + consts + carry + xs + ys
    avals = [v.aval for v in init]
    nc, nk, nx = len(consts), len(carry), len(xs)

    def cond(i, *rest):
        return ctx.compare(i, ctx.constant(length, it), "LT")

    def body(i, *rest):
        cs, cr = list(rest[:nc]), list(rest[nc:nc + nk])
        xv, yv = list(rest[nc + nk:nc + nk + nx]), list(rest[nc + nk + nx:])
        k = ctx.binary("subtract", ctx.constant(length - 1, it), i) if reverse else i
        zero = ctx.constant(0, it)
        slices = []
        for x in xv:
            shape = x.aval.shape
            s = ctx.op("stablehlo.dynamic_slice", [x, k] + [zero] * (len(shape) - 1),
                       ctx.aval((1,) + shape[1:], x.aval.dtype),
                       {"slice_sizes": ctx.i64s((1,) + shape[1:])})
            slices.append(ctx.reshape(s, shape[1:]))
        outs = ctx.lower_jaxpr(jaxpr.jaxpr, jaxpr.consts, cs + cr + slices)
        new_ys = []
        for y, o in zip(yv, outs[num_carry:]):
            upd = ctx.reshape(o, (1,) + o.aval.shape)
            new_ys.append(ctx.op("stablehlo.dynamic_update_slice",
                                 [y, upd, k] + [zero] * o.aval.ndim, y.aval))
        nxt = ctx.binary("add", i, ctx.constant(1, it))
        return [nxt] + cs + list(outs[:num_carry]) + xv + new_ys

    outs = ctx.op("stablehlo.while", init, avals,
                  regions=[ctx.region(avals, cond), ctx.region(avals, body)])
    return outs[1 + nc:1 + nc + nk] + outs[1 + nc + nk + nx:]


def _cond_lower(ctx, index, *args, branches):
    if len(branches) == 1:
        return ctx.lower_jaxpr(branches[0].jaxpr, branches[0].consts, list(args))
    # the implementation clamps the index (StableHLO runs the last branch for any index
    # out of range, a negative one included)
    lo = ctx.constant(0, np.int32)
    hi = ctx.constant(len(branches) - 1, np.int32)
    k = ctx.op("stablehlo.clamp", [lo, index, hi], index.aval)
    regions = [ctx.region([], lambda br=br: ctx.lower_jaxpr(br.jaxpr, br.consts, list(args)))
               for br in branches]
    return ctx.op("stablehlo.case", [k], list(ctx.avals_out), regions=regions)


scan_p.lowering = _scan_lower
while_p.lowering = _while_lower
cond_p.lowering = _cond_lower
