"""Folding a sum over a ``dot_general``'s batch dimension into its contraction.

``sum_b dot(A_b, B_b)`` is one ``dot_general`` that contracts over ``b`` as well as over
the dimensions it already contracts: the same sum of products, one matmul of depth
``b * k`` instead of ``b`` matmuls of depth ``k`` and a sum of their results.  This is
what a data-parallel gradient becomes under ``jit(shard_map(...))`` (the per-device body
runs batched over the devices, and ``psum`` is the batching rule's sum over the device
dimension, ``collectives._add_chain``), and under ``jit(vmap(...))`` followed by a sum.

Recognised (each intermediate read by nothing else, so the batched product disappears):

- ``reduce_sum(D, axes)`` and ``x_0 + x_1 + ... + x_{n-1}`` in any grouping (``add`` or
  ``add_any``), where ``x_i`` is ``D``'s slice ``i`` along one dimension with that
  dimension dropped (``slice`` then ``reshape``, or ``squeeze``), every slice once;
- ``D`` a ``dot_general`` whose summed dimensions are batch dimensions, possibly seen
  through a ``transpose``.

The result is the new ``dot_general`` (operands swapped when that gives the transposed
order directly), then a ``transpose`` when still needed.  Exact in integer arithmetic
(wrapping sums are associative); floating results change only by the order of rounding,
as XLA's algebraic simplifier's rewrite of a reduce of a batched dot.  Programs without
this pattern are returned unchanged (the same object).
"""
from __future__ import annotations

import numpy as np

from ...ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from ...primitives.elementwise import add_any_p, add_p
from ...primitives.linalg import dot_general_p
from ...primitives.reduction import reduce_sum_p
from ...primitives.shape import reshape_p, slice_p, squeeze_p, transpose_p


def fold_batch_dot_sums(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Rewrites each sum over batch dimensions of a batched ``dot_general`` (module
    docstring) into one ``dot_general`` contracting over them.  The replaced equations
    are left for ``dce`` to drop; returns ``closed`` itself when nothing matched."""
    jaxpr = closed.jaxpr
    producer, uses = {}, {}
    for k, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if not isinstance(v, Literal):
                uses[v] = uses.get(v, 0) + 1
        for v in eqn.outvars:
            producer[v] = eqn
    for v in jaxpr.outvars:
        if not isinstance(v, Literal):
            uses[v] = uses.get(v, 0) + 2       # a program output is always kept
    ctx = (producer, uses)
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        new = _rewrite(eqn, ctx)
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return closed
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars),
                       closed.consts)


def _only_use(v, ctx, n=1) -> bool:
    return isinstance(v, Var) and ctx[1].get(v, 0) == n


def _rewrite(eqn, ctx):
    """The equations replacing ``eqn`` (a sum over batch dimensions of a batched dot), or
    None when it is not one."""
    prim = eqn.primitive
    if prim is reduce_sum_p:
        (t,), axes = eqn.invars, tuple(eqn.params["axes"])
        if not axes or not _only_use(t, ctx):
            return None
    elif prim is add_p or prim is add_any_p:
        found = _add_tree(eqn, ctx)
        if found is None:
            return None
        t, d = found
        axes = (d,)
    else:
        return None
    out = eqn.outvars[0]
    return _fold(t, axes, out, ctx)


def _add_tree(eqn, ctx):
    """``(T, d)`` when ``eqn`` adds up every slice of ``T`` along ``d`` exactly once
    (through adds read only by this sum), else None."""
    leaves = []
    stack = list(eqn.invars)
    prim = eqn.primitive
    while stack:
        v = stack.pop()
        if not _only_use(v, ctx):
            return None
        src = ctx[0].get(v)
        if src is None:
            return None
        if src.primitive is prim:
            stack.extend(src.invars)
        else:
            leaves.append(src)
            if len(leaves) > 64:
                return None
    source, dim, seen = None, None, set()
    for leaf in leaves:
        piece = _piece(leaf, ctx)
        if piece is None:
            return None
        t, d, i = piece
        if source is None:
            source, dim = t, d
        elif t is not source or d != dim:
            return None
        if i in seen:
            return None
        seen.add(i)
    n = source.aval.shape[dim]
    if seen != set(range(n)) or not _only_use(source, ctx, n):
        return None
    if eqn.outvars[0].aval.shape != tuple(s for k, s in enumerate(source.aval.shape)
                                          if k != dim):
        return None
    return source, dim


def _piece(eqn, ctx):
    """``(T, d, i)`` when ``eqn`` gives slice ``i`` of ``T`` along ``d`` with ``d``
    dropped (``squeeze``, or ``reshape`` of a one-wide ``slice``), else None."""
    if eqn.primitive is squeeze_p:
        dims = tuple(int(k) for k in eqn.params["dimensions"])
    elif eqn.primitive is reshape_p and eqn.params.get("dimensions") is None:
        dims = None
    else:
        return None
    (s,) = eqn.invars
    if not _only_use(s, ctx):
        return None
    sl = ctx[0].get(s)
    if sl is None or sl.primitive is not slice_p:
        return None
    (t,) = sl.invars
    if not isinstance(t, Var):
        return None
    strides = sl.params.get("strides")
    if strides is not None and any(int(k) != 1 for k in strides):
        return None
    shape = t.aval.shape
    start = tuple(int(k) for k in sl.params["start_indices"])
    limit = tuple(int(k) for k in sl.params["limit_indices"])
    cut = [k for k in range(len(shape)) if (start[k], limit[k]) != (0, shape[k])]
    if len(cut) != 1:           # exactly one dimension narrowed
        return None
    d = cut[0]
    if limit[d] != start[d] + 1:
        return None
    if dims is None and tuple(eqn.params["new_sizes"]) != shape[:d] + shape[d + 1:]:
        return None
    if dims is not None and tuple(k % len(shape) for k in dims) != (d,):
        return None
    return t, d, start[d]


def _fold(t, axes, out, ctx):
    """Equations computing ``out`` = ``t`` summed over ``axes`` as one dot_general, when
    ``t`` is (a transpose of) a dot_general whose ``axes`` are batch dimensions."""
    producer = ctx[0]
    src = producer.get(t)
    perm = tuple(range(t.aval.ndim))
    if src is not None and src.primitive is transpose_p:
        perm = tuple(src.params["permutation"])
        t = src.invars[0]
        if not _only_use(t, ctx):
            return None
        src = producer.get(t)
    if src is None or src.primitive is not dot_general_p or \
            src.params.get("out_sharding") is not None:
        return None
    if t.aval.dtype == np.bool_:
        return None
    (lc, rc), (lb, rb) = src.params["dimension_numbers"]
    lc, rc, lb, rb = (tuple(int(k) for k in x) for x in (lc, rc, lb, rb))
    nb = len(lb)
    summed = sorted({perm[a % len(perm)] for a in axes})
    if len(summed) != len(axes) or any(j >= nb for j in summed):
        return None
    keep = [j for j in range(nb) if j not in summed]
    new_lc = tuple(lb[j] for j in summed) + lc
    new_rc = tuple(rb[j] for j in summed) + rc
    new_lb, new_rb = tuple(lb[j] for j in keep), tuple(rb[j] for j in keep)
    # the new dot's dimensions: D's minus the summed ones, in D's order
    rest = [p for p in perm if p not in summed]
    rest = [p - sum(1 for s in summed if s < p) for p in rest]
    lhs, rhs = src.invars
    nk = len(keep)
    nl = lhs.aval.ndim - len(lc) - nb
    nr = rhs.aval.ndim - len(rc) - nb
    ident = list(range(len(rest)))
    swapped = list(range(nk)) + [nk + nl + k for k in range(nr)] + \
        [nk + k for k in range(nl)]
    params = dict(src.params)
    if rest != ident and rest == swapped:
        lhs, rhs = rhs, lhs
        dn = ((new_rc, new_lc), (new_rb, new_lb))
        rest = ident
    else:
        dn = ((new_lc, new_rc), (new_lb, new_rb))
    params["dimension_numbers"] = dn
    try:
        aval = dot_general_p.abstract_eval(lhs.aval, rhs.aval, **params)
    except (TypeError, ValueError):
        return None
    shape_after = tuple(aval.shape[p] for p in rest)
    if (shape_after, aval.dtype, aval.weak_type) != \
            (out.aval.shape, out.aval.dtype, out.aval.weak_type):
        return None
    if rest == ident:
        return [JaxprEqn(dot_general_p, [lhs, rhs], [out], params, src.source)]
    mid = Var(aval)
    return [JaxprEqn(dot_general_p, [lhs, rhs], [mid], params, src.source),
            JaxprEqn(transpose_p, [mid], [out], {"permutation": tuple(rest)}, src.source)]
