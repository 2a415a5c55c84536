"""Explicit sharding as part of the type: the checks JAX makes on Explicit mesh axes.

Layer: core.  On a mesh whose axes are ``AxisType.Explicit`` JAX treats an array's sharding
as part of its type: each primitive has a typing rule that gives its result's sharding from
its operands' and raises ``ShardingTypeError`` where that result would be ambiguous or need
communication the program did not ask for (``x @ y`` over a sharded contracting dimension,
``a + b`` over ``P('x')`` and ``P('y')``, a reshape that cannot keep a sharded dimension, a
cumulative sum along a sharded axis ...).  Auto axes never raise: they are not part of the
type (on a mesh mixing both, only the Explicit axes are).

This module holds the error, the per-primitive typing rules (behaviour of JAX 0.10.2,
checked against it in tests/multidevice/test_sharding_types.py) and a walker over a Jaxpr.
``check_eqn`` checks one primitive application (eager ops, core/sharded.py);
``compiler.passes.sharding_types.check_explicit`` a whole program (jit).

Types.  A value's type is a ``Ty``: ``spec`` (one tuple of Explicit mesh axis names per
dimension, the Auto axes dropped) and ``meshed`` (False for a value that carries no mesh:
a constant, a literal, a host or one-device array; JAX leaves those out of the checks that
compare operands' shardings, and reads their spec as whole).  ``None`` stands for a type
the walker does not know (a primitive without a typing rule here whose operands are
sharded): no check is made on it, so a rule this module lacks can never raise a false
error; it only leaves that case unchecked.
"""
from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["ShardingTypeError", "Ty", "check_eqn", "check_jaxpr", "project"]


class ShardingTypeError(Exception):
    """A primitive applied to arrays sharded over Explicit mesh axes whose result sharding
    is ambiguous or would need a collective (``jax._src.core.ShardingTypeError``).

    Raised by jit and by eager operations on arrays placed with a ``NamedSharding`` over a
    mesh with Explicit axes; the message names the primitive, the operands' shapes and
    specs and the mesh axis.  Fix: reshard an operand (``jaxlite.sharding.reshard``) or
    work on a mesh with Auto axes."""


class Ty(NamedTuple):
    """The sharding type of one value: ``spec`` over the Explicit axes, ``meshed``."""
    spec: tuple
    meshed: bool = True


def project(spec, explicit) -> tuple:
    """``spec`` (one entry per dimension: None, an axis name or a tuple of names) with only
    the mesh axes in ``explicit``, as a tuple of tuples."""
    out = []
    for e in spec:
        names = () if e is None else (e,) if isinstance(e, str) else tuple(e)
        out.append(tuple(a for a in names if a in explicit))
    return tuple(out)


class _Ctx(NamedTuple):
    axis_sizes: dict
    explicit: frozenset
    mesh_context: bool      # a mesh with Explicit axes is set (set_mesh): constants are meshed


# ---- messages ----------------------------------------------------------------------------

def _dim_str(n, entry) -> str:
    if not entry:
        return str(n)
    return f"{n}@{entry[0]}" if len(entry) == 1 else f"{n}@({','.join(entry)})"


def _ty_str(aval, spec) -> str:
    """``f32[8@x,8]``: the aval with each sharded dimension's mesh axes."""
    head = aval.str_short().split("[", 1)[0]
    spec = tuple(spec) if spec is not None else ((),) * len(aval.shape)
    return f"{head}[{','.join(_dim_str(n, e) for n, e in zip(aval.shape, spec))}]"


def _entry_str(e) -> str:
    return "None" if not e else repr(e[0]) if len(e) == 1 else repr(tuple(e))


def _spec_str(spec) -> str:
    return "P(" + ", ".join(_entry_str(e) for e in spec) + ")"


def _operands_str(tys, avals) -> str:
    return ", ".join(_ty_str(a, t.spec) for t, a in zip(tys, avals))


def _fail(msg: str):
    raise ShardingTypeError(msg)


# ---- helpers -----------------------------------------------------------------------------

def _whole(ndim) -> tuple:
    return ((),) * ndim


def _size(entry, ctx) -> int:
    return math.prod(ctx.axis_sizes[a] for a in entry)


def _result(prim, tys, avals, spec, out_aval, meshed) -> Ty:
    """``Ty(spec)`` after JAX's check that no mesh axis shards two result dimensions."""
    seen = set()
    for e in spec:
        for a in e:
            if a in seen:
                _fail(f"{prim.name}: operands {_operands_str(tys, avals)} give a result "
                      f"sharded twice over mesh axis {a!r}: {_ty_str(out_aval, spec)}; "
                      f"reshard an operand so that axis {a!r} shards one dimension")
            seen.add(a)
    return Ty(tuple(spec), meshed)


def _meshed(tys) -> bool:
    return any(t.meshed for t in tys)


def _same_ty(prim, tys, avals, out_avals, params, ctx):
    """Every result takes the first operand's type (ops that keep their layout)."""
    return [Ty(tys[0].spec, tys[0].meshed)] * len(out_avals)


# ---- elementwise -------------------------------------------------------------------------

def _nary(prim, tys, avals, out_avals, params, ctx):
    """Operands of one rank (rank-0 operands broadcast and are left out): per dimension,
    the operands' common entry; a size-1 unsharded dimension defers to the others; two
    different non-empty entries raise (no prefix refinement: ``P(('x','y'))`` and
    ``P('x')`` disagree, as in JAX)."""
    ranked = [(t, a) for t, a in zip(tys, avals) if a.ndim]
    if not ranked:
        return [Ty((), _meshed(tys))]
    ndim = ranked[0][1].ndim
    if any(a.ndim != ndim for _, a in ranked):
        return None
    out = []
    for d in range(ndim):
        entries = [t.spec[d] for t, _ in ranked]
        if all(e == entries[0] for e in entries):
            out.append(entries[0])
            continue
        kept = [t.spec[d] for t, a in ranked if not (a.shape[d] == 1 and not t.spec[d])]
        if not kept:
            out.append(())
        elif all(e == kept[0] for e in kept):
            out.append(kept[0])
        else:
            chosen = ()
            for e in entries:
                if e and chosen and e != chosen:
                    specs = ", ".join(_spec_str(t.spec) for t, _ in ranked)
                    _fail(f"{prim.name}: operands {_operands_str(*zip(*ranked))} are "
                          f"sharded differently along dimension {d} ({_entry_str(chosen)} "
                          f"and {_entry_str(e)}; specs {specs}), so the result's sharding "
                          f"is ambiguous; reshard one operand to the other's sharding")
                if e and not chosen:
                    chosen = e
            out.append(chosen)
    return [_result(prim, tys, avals, out, out_avals[0], _meshed(tys))]


def _select_n(prim, tys, avals, out_avals, params, ctx):
    """The cases must have one sharding (cases without a mesh left out); a non-scalar
    predicate must have it too."""
    cases = [(t, a) for t, a in zip(tys[1:], avals[1:]) if t.meshed]
    if not cases:
        if avals[0].ndim and tys[0].meshed:
            # JAX's jnp.where broadcasts constant cases to the predicate's sharding
            return [Ty(tys[0].spec, True)]
        return [Ty(_whole(out_avals[0].ndim), _meshed(tys))]
    first = cases[0][0].spec
    for t, a in cases[1:]:
        if t.spec != first:
            _fail(f"select_n: the cases {_operands_str(tys[1:], avals[1:])} must have one "
                  f"sharding, got {_spec_str(first)} and {_spec_str(t.spec)}")
    if avals[0].ndim and tys[0].meshed and tys[0].spec != first:
        _fail(f"select_n: the predicate {_ty_str(avals[0], tys[0].spec)} must be a scalar "
              f"or sharded like the cases ({_spec_str(first)}), got "
              f"{_spec_str(tys[0].spec)}")
    return [Ty(first, True)]


def _clamp(prim, tys, avals, out_avals, params, ctx):
    return [Ty(tys[1].spec, _meshed(tys))]


# ---- shape ops ---------------------------------------------------------------------------

def _broadcast_in_dim(prim, tys, avals, out_avals, params, ctx):
    if params.get("sharding") is not None:
        return None
    out = [()] * out_avals[0].ndim
    for i, d in enumerate(params["broadcast_dimensions"]):
        out[d] = tys[0].spec[i]
    return [Ty(tuple(out), tys[0].meshed)]


def _transpose(prim, tys, avals, out_avals, params, ctx):
    s = tys[0].spec
    return [Ty(tuple(s[p] for p in params["permutation"]), tys[0].meshed)]


def _squeeze(prim, tys, avals, out_avals, params, ctx):
    nd = avals[0].ndim
    drop = {int(d) % nd for d in params["dimensions"]}
    return [Ty(tuple(e for d, e in enumerate(tys[0].spec) if d not in drop), tys[0].meshed)]


def _reduce(prim, tys, avals, out_avals, params, ctx):
    if params.get("out_sharding") is not None:
        return None
    nd = avals[0].ndim
    axes = {int(a) % nd for a in params["axes"]} if nd else set()
    return [Ty(tuple(e for d, e in enumerate(tys[0].spec) if d not in axes), tys[0].meshed)]


def _varying_shape(what):
    """slice, dynamic_slice, pad, reduce_window: a sharded dimension whose size changes
    must keep a size its mesh axes divide; the result keeps the operand's spec."""
    def rule(prim, tys, avals, out_avals, params, ctx):
        t, a, o = tys[0], avals[0], out_avals[0]
        for d, (n, m, e) in enumerate(zip(a.shape, o.shape, t.spec)):
            if n != m and e and m % _size(e, ctx):
                _fail(f"{what or prim.name}: dimension {d} of {_ty_str(a, t.spec)} is "
                      f"sharded over mesh axes {e} ({_size(e, ctx)} shards) and the result "
                      f"{o.str_short()} gives it size {m}, which they do not divide; "
                      f"reshard the operand to leave dimension {d} whole")
        return [Ty(t.spec, t.meshed)]
    return rule


def _dynamic_update_slice(prim, tys, avals, out_avals, params, ctx):
    t, u = tys[0], tys[1]
    if t.meshed and u.meshed and t.spec != u.spec:
        _fail(f"dynamic_update_slice: the operand {_ty_str(avals[0], t.spec)} and the "
              f"update {_ty_str(avals[1], u.spec)} must have one sharding")
    return [Ty(t.spec if t.meshed or not u.meshed else u.spec, t.meshed or u.meshed)]


def _concatenate(prim, tys, avals, out_avals, params, ctx):
    meshed = [t for t in tys if t.meshed]
    if not meshed:
        return [Ty(_whole(out_avals[0].ndim), False)]
    for t in meshed[1:]:
        if t.spec != meshed[0].spec:
            _fail(f"concatenate: every operand must have one sharding, got "
                  f"{_operands_str(tys, avals)} ({', '.join(_spec_str(x.spec) for x in tys)})"
                  f"; reshard them to one spec first")
    return [Ty(meshed[0].spec, True)]


def _stack(prim, tys, avals, out_avals, params, ctx):
    # concatenate's rule, and the new dimension is whole
    (t,) = _concatenate(prim, tys, avals, out_avals, params, ctx)
    spec = list(t.spec)
    spec.insert(int(params["axis"]), ())
    return [Ty(tuple(spec), t.meshed)]


def _unstack(prim, tys, avals, out_avals, params, ctx):
    t, axis = tys[0], int(params["axis"])
    if t.spec[axis]:
        _fail(f"unstack: the operand {_ty_str(avals[0], t.spec)} is sharded over mesh axes "
              f"{t.spec[axis]} along axis {axis}, the axis it unstacks; reshard it to "
              f"leave axis {axis} whole")
    spec = tuple(e for d, e in enumerate(t.spec) if d != axis)
    return [Ty(spec, t.meshed)] * len(out_avals)


def _split(prim, tys, avals, out_avals, params, ctx):
    # each piece as a slice of the operand
    one = _varying_shape("split")
    return [one(prim, tys, avals, [o], params, ctx)[0] for o in out_avals]


def _cumulative(prim, tys, avals, out_avals, params, ctx):
    t, axis = tys[0], int(params["axis"]) % max(avals[0].ndim, 1)
    if t.spec[axis]:
        _fail(f"{prim.name}: the operand {_ty_str(avals[0], t.spec)} is sharded over mesh "
              f"axes {t.spec[axis]} along axis {axis}, the axis it accumulates along; "
              f"reshard it to leave axis {axis} whole")
    return [Ty(t.spec, t.meshed)]


def _sort(prim, tys, avals, out_avals, params, ctx):
    d = int(params["dimension"]) % max(avals[0].ndim, 1)
    meshed = [(t, a) for t, a in zip(tys, avals) if t.meshed]
    for t, a in meshed:
        if t.spec[d]:
            _fail(f"sort: the operand {_ty_str(a, t.spec)} is sharded over mesh axes "
                  f"{t.spec[d]} along dimension {d}, the dimension it sorts; reshard it "
                  f"to leave dimension {d} whole")
        if t.spec != meshed[0][0].spec:
            _fail(f"sort: the operands {_operands_str(tys, avals)} must have one sharding")
    if not meshed:
        return [Ty(t.spec, False) for t in tys]
    # JAX's callers build the extra operands (argsort's iota) with the keys' sharding
    return [Ty(meshed[0][0].spec, True) for _ in tys]


def _core_unsharded(prim, tys, avals, out_avals, params, ctx):
    """Matrix decompositions (lu, qr, svd, cholesky, eigh ...): the two trailing (matrix)
    dimensions of every operand must be whole and the leading (batch) ones sharded alike;
    results keep the batch dimensions' sharding."""
    batches = []
    for k, (t, a) in enumerate(zip(tys, avals)):
        nb = a.ndim - 2
        if any(t.spec[nb:]):
            _fail(f"{prim.name}: operand {k} {_ty_str(a, t.spec)} is sharded along its "
                  f"matrix dimensions ({_spec_str(t.spec)}); they must be whole (only the "
                  f"leading batch dimensions may be sharded)")
        batches.append(t.spec[:nb])
    for b in batches[1:]:
        if b != batches[0]:
            _fail(f"{prim.name}: the operands {_operands_str(tys, avals)} must have one "
                  f"batch sharding")
    t, a = tys[0], avals[0]
    nb = a.ndim - 2
    batch = t.spec[:nb]
    return [Ty(batch[:min(nb, o.ndim)] + _whole(max(o.ndim - nb, 0)) if o.ndim >= nb
               else _whole(o.ndim), t.meshed) for o in out_avals]


def _fft(prim, tys, avals, out_avals, params, ctx):
    """The result keeps the operand's spec (also along the transformed dimensions, as
    JAX); unknown where a result dimension is not divisible by it (JAX fails there)."""
    t, o = tys[0], out_avals[0]
    if any(n % _size(e, ctx) for n, e in zip(o.shape, t.spec)):
        return None
    return [Ty(t.spec, t.meshed)]


def _triangular_solve(prim, tys, avals, out_avals, params, ctx):
    """``a`` (the triangular matrix) and ``b`` share their batch sharding; neither may be
    sharded along the dimension the solve contracts."""
    (ta, tb), (aa, ab) = tys, avals
    left, trans = bool(params["left_side"]), bool(params["transpose_a"])
    ba, sa = ta.spec[:-2], ta.spec[-2:]
    bb, sb = tb.spec[:-2], tb.spec[-2:]
    if ba != bb:
        _fail(f"triangular_solve: the operands {_operands_str(tys, avals)} must have one "
              f"batch sharding")
    if sa[left ^ trans]:
        _fail(f"triangular_solve: the matrix {_ty_str(aa, ta.spec)} is sharded over mesh "
              f"axes {sa[left ^ trans]} along the dimension the solve contracts "
              f"(left_side={left}, transpose_a={trans}); leave it whole")
    if sb[not left]:
        _fail(f"triangular_solve: the right-hand side {_ty_str(ab, tb.spec)} is sharded "
              f"over mesh axes {sb[not left]} along the dimension the solve contracts "
              f"(left_side={left}); leave it whole")
    out = (sa[trans], sb[1]) if left else (sb[0], sa[not trans])
    return [_result(prim, tys, avals, ba + out, out_avals[0], _meshed(tys))]


def _conv(prim, tys, avals, out_avals, params, ctx):
    """Only an unsharded kernel and an input whose feature dimension is whole: the result
    keeps the input's spec (its spatial dimensions as slices do)."""
    tl, tr = tys
    dn = params["dimension_numbers"]
    feature = dn.lhs_spec[1] if hasattr(dn, "lhs_spec") else dn[0][1]
    if (tr.meshed and any(tr.spec)) or tl.spec[feature]:
        _fail(f"conv_general_dilated: {_operands_str(tys, avals)}: the kernel must be "
              f"unsharded and the input's feature dimension whole for the result's "
              f"sharding to follow the input's; reshard them")
    return _varying_shape("conv_general_dilated")(prim, tys[:1], avals[:1], out_avals,
                                                  params, ctx)


def _indexed_dims(prim, t, a, indexer, what):
    """The operand dimensions an index reads part of (an int, an index array, a partial
    slice): JAX's gather and scatter rules need them whole.  Raises for a sharded one;
    returns ``(entries, advanced_first)`` of the expanded indexer."""
    from ..primitives.indexing import expand_indexer
    entries, advanced_first = expand_indexer(a.shape, indexer)
    d = 0
    for e in entries:
        if e[0] == "none":
            continue
        n = a.shape[d]
        partial = e[0] in ("int", "array") or (e[0] == "slice" and len(range(*e[1:])) != n)
        if partial and t.spec[d] and n != 1:
            how = {"int": "an integer", "array": "an index array"}.get(e[0], "a partial slice")
            _fail(f"{prim.name}: {what} {_ty_str(a, t.spec)} is indexed along dimension {d} "
                  f"by {how}, but that dimension is sharded over mesh axes {t.spec[d]}; "
                  f"reshard it to leave dimension {d} whole (JAX: .at[...].get/set with "
                  f"out_sharding=)")
        d += 1
    return entries, advanced_first


def _gather(prim, tys, avals, out_avals, params, ctx):
    """``x[index]`` with at most one index array (NumPy-style indexing, ``jnp.take``):
    every dimension the index reads part of must be whole; the others keep their
    sharding, the index array's dimensions are whole.  Several index arrays (jaxlite's
    compositions, which JAX builds with batching dimensions) are left unchecked."""
    indexer = params["indexer"]
    if sum(e[0] == "array" for e in indexer) > 1 or any(t is None for t in tys):
        return None
    t, a = tys[0], avals[0]
    if any(x.meshed and any(x.spec) for x in tys[1:]):
        return None                     # a sharded index array: left unchecked
    entries, advanced_first = _indexed_dims(prim, t, a, indexer, "the operand")
    out, adv_at, d = [], None, 0
    n_adv = sum(a_.ndim for a_ in avals[1:])
    for e in entries:
        if e[0] == "none":
            out.append(())
            continue
        if e[0] == "slice":
            out.append(t.spec[d])
        elif e[0] == "array" and adv_at is None:
            adv_at = len(out)
        elif e[0] == "int" and adv_at is None and n_adv:
            adv_at = len(out)
        d += 1
    if n_adv:
        at = 0 if advanced_first else adv_at
        out[at:at] = [()] * avals[1].ndim
    if len(out) != out_avals[0].ndim:
        return None
    return [Ty(tuple(out), _meshed(tys))]


def _scatter(prim, tys, avals, out_avals, params, ctx):
    """``x.at[index].op(updates)`` with at most one index array: every dimension of ``x``
    the index reads part of must be whole; the result keeps ``x``'s sharding."""
    indexer = params["indexer"]
    if sum(e[0] == "array" for e in indexer) > 1 or tys[0] is None:
        return None
    t = tys[0]
    if not t.meshed:
        return [Ty(t.spec, _meshed(tys))]
    _indexed_dims(prim, t, avals[0], indexer, "the operand")
    return [Ty(t.spec, True)]


# ---- reshape -----------------------------------------------------------------------------

class _NoRule(Exception):
    """JAX's reshape rule has no answer (it fails with an internal error there): unchecked."""


def _split_one_dim(src, dst):
    """``dst`` read as ``src`` with one dimension split into consecutive ones: per ``src``
    dimension its size, or the list of ``dst`` sizes it splits into.  None when ``dst`` is
    not such a split; raises ``_Ambiguous`` when two dimensions would split (JAX's walk:
    matching sizes pair up, the first mismatch absorbs following sizes until their product
    is the dimension and any size-1 dimensions after it)."""
    if len(dst) <= len(src):
        return None
    n_src = len(src)
    ones = 0
    while src and dst and src[-1] == 1 and dst[-1] == 1:
        ones += 1
        src, dst = src[:-1], dst[:-1]
    i = j = 0
    splits = 0
    out = []
    while j < len(dst):
        if i >= len(src):
            raise _NoRule
        if src[i] == dst[j]:
            out.append(src[i])
        else:
            splits += 1
            if splits > 1:
                raise _Ambiguous
            group = [dst[j]]
            nj, ni = j + 1, i + 1
            while math.prod(group) != src[i] or (nj < len(dst) and dst[nj] == 1):
                p = math.prod(group)
                if p > src[i]:
                    return None
                if p == src[i] and ni < len(src) and dst[nj] == src[ni]:
                    break
                j += 1
                if j >= len(dst):
                    return None
                group.append(dst[j])
                nj += 1
            out.append(group)
        i += 1
        j += 1
    out.extend([1] * ones)
    if len(out) != n_src:
        raise _NoRule
    return out


class _Ambiguous(Exception):
    pass


def _split_axes(axes, sizes, ctx, bad):
    """The mesh axes ``axes`` (major first) dealt out to dimensions of ``sizes``: each
    takes axes while it is larger than 1 and they divide it (``bad()`` when one does not)."""
    rest = list(axes)
    out = []
    for n in sizes:
        took = []
        while n > 1 and rest:
            a = rest.pop(0)
            n, r = divmod(n, ctx.axis_sizes[a])
            if r:
                bad()
            took.append(a)
        out.append(tuple(took))
    if rest:
        raise _NoRule
    return out


def _reshape_of_broadcast(t, a, params, ctx):
    """A reshape of a broadcast that added dimensions: jaxlite builds ops JAX has
    primitives for this way (``tile``, ``repeat``), so JAX's reshape rule does not apply:
    the sharding is kept where the reshape can keep it without communication; where it
    cannot, a sharded dimension is merged under a repeated one (``tile`` along a sharded
    dimension), which JAX's ``tile`` refuses too."""
    from . import sharding_rules as sr
    rule = sr.reshape([t.spec], [a], dict(ctx.axis_sizes), **params)
    if tuple(tuple(e) for e in rule.operands[0]) != tuple(t.spec):
        _fail(f"reshape: {_ty_str(a, t.spec)} to shape {tuple(params['new_sizes'])} "
              f"repeats a sharded dimension (a broadcast merged above it, as jnp.tile "
              f"along a sharded dimension does); reshard the operand to leave that "
              f"dimension whole first")
    return [Ty(tuple(tuple(e) for e in rule.outputs[0]), t.meshed)]


def _reshape(prim, tys, avals, out_avals, params, ctx, of_broadcast=False):
    if params.get("sharding") is not None:
        return None
    if of_broadcast and any(tys[0].spec):
        return _reshape_of_broadcast(tys[0], avals[0], params, ctx)
    t, a = tys[0], avals[0]
    new = tuple(int(n) for n in params["new_sizes"])
    spec, shape = t.spec, tuple(a.shape)
    if not any(spec):
        return [Ty(_whole(len(new)), t.meshed)]

    def bad():
        _fail(f"reshape: {_ty_str(a, spec)} to shape {new} cannot keep its sharding "
              f"({_spec_str(spec)}): a sharded dimension must map whole to one result "
              f"dimension, split with its mesh axes dividing the major parts, or merge "
              f"as the major one of the merged dimensions; reshard the operand first")

    if [n for n in shape if n != 1] == [n for n in new if n != 1]:
        kept = iter(e for n, e in zip(shape, spec) if n != 1)
        return [Ty(tuple(() if n == 1 else next(kept) for n in new), t.meshed)]
    dims = params.get("dimensions")
    try:
        split = _split_one_dim(shape, new)
        if split is not None:
            out = []
            for part, e in zip(split, spec):
                if not isinstance(part, list):
                    out.append(e)
                elif not e:
                    out.extend([()] * len(part))
                elif dims is None:
                    out.extend(_split_axes(e, part, ctx, bad))
                else:
                    bad()
            return [Ty(tuple(out), t.meshed)]
        merge = _split_one_dim(new, shape) if len(new) < len(shape) else None
        if merge is not None:
            out, k = [], 0
            for n, part in zip(new, merge):
                if not isinstance(part, list):
                    out.append(spec[k])
                    k += 1
                    continue
                group = spec[k:k + len(part)]
                k += len(part)
                if not any(group):
                    out.append(())
                    continue
                if dims is not None:
                    bad()
                flat = [a_ for e in group for a_ in (e if e else (None,))]
                while flat and flat[-1] is None:
                    flat.pop()
                if None in flat:
                    bad()
                out.extend(_split_axes(flat, [n], ctx, bad))
            return [Ty(tuple(out), t.meshed)]
    except _Ambiguous:
        pass                # bad() below, outside the except block: nothing chained
    except _NoRule:
        return None
    bad()


# ---- dot_general -------------------------------------------------------------------------

def _out_sharding_requested() -> bool:
    """Whether this eager dot_general runs inside a public product called with
    ``out_sharding=`` (jaxlite computes the product, then reshards it; JAX's typing rule
    takes the given sharding and checks nothing)."""
    import sys
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod in ("jaxlite.lax", "jaxlite.numpy._linalg") and \
                f.f_code.co_name in ("dot_general", "dot", "matmul", "tensordot", "einsum",
                                     "vdot", "inner", "outer"):
            if f.f_locals.get("out_sharding") is not None:
                return True
        f = f.f_back
    return False


def _dot_general(prim, tys, avals, out_avals, params, ctx, out_sharding_given=False):
    if out_sharding_given:
        return None     # the result is resharded to the out_sharding the caller gave
    try:
        return _dot_general_ty(prim, tys, avals, out_avals, params, ctx)
    except ShardingTypeError:
        if _out_sharding_requested():
            return None     # JAX's rule takes the given sharding and checks nothing
        raise


def _dot_general_ty(prim, tys, avals, out_avals, params, ctx):
    if "out_sharding" in params:
        # bound by jaxlite itself (a transpose, JVP or batching rule): JAX gives those
        # products the primal's type (its transpose passes out_sharding) and checks none
        s = params["out_sharding"]
        spec = getattr(s, "spec", None)
        if spec is None or not hasattr(s, "mesh"):
            return None
        return [Ty(project(tuple(spec) + (None,) * (out_avals[0].ndim - len(spec)),
                           ctx.explicit), True)]
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    ls, rs = tys[0].spec, tys[1].spec
    lbs, rbs = tuple(ls[int(d)] for d in lb), tuple(rs[int(d)] for d in rb)
    lcs, rcs = tuple(ls[int(d)] for d in lc), tuple(rs[int(d)] for d in rc)
    ops = _operands_str(tys, avals)
    for x, y in zip(lbs, rbs):
        if x and y and x != y:
            _fail(f"dot_general: the batch dimensions of {ops} are sharded differently "
                  f"({_entry_str(x)} and {_entry_str(y)}); reshard one side to match")
    for x, y in zip(lcs, rcs):
        if x and y and x != y:
            _fail(f"dot_general: the contracting dimensions of {ops} are sharded "
                  f"differently ({_entry_str(x)} and {_entry_str(y)}); reshard one side "
                  f"to match")
    for x, y in zip(lcs, rcs):
        if x and y:
            _fail(f"dot_general: {ops} are both sharded over mesh axes {x} along a "
                  f"contracting dimension, so the result would be a partial sum whose "
                  f"sharding is ambiguous; reshard an operand to leave that dimension "
                  f"whole, or reshard the result explicitly")
    skip_l = {int(d) for d in tuple(lc) + tuple(lb)}
    skip_r = {int(d) for d in tuple(rc) + tuple(rb)}
    out = (lbs + tuple(e for d, e in enumerate(ls) if d not in skip_l)
           + tuple(e for d, e in enumerate(rs) if d not in skip_r))
    return [_result(prim, tys, avals, out, out_avals[0], _meshed(tys))]


# ---- the table ---------------------------------------------------------------------------

_KEEP = ("convert_element_type", "reduce_precision", "copy", "stop_gradient", "rev",
         "real", "imag", "conj")

_RULES = {
    "select_n": _select_n,
    "clamp": _clamp,
    "broadcast_in_dim": _broadcast_in_dim,
    "transpose": _transpose,
    "squeeze": _squeeze,
    "reshape": _reshape,
    "dot_general": _dot_general,
    "concatenate": _concatenate,
    "stack": _stack,
    "unstack": _unstack,
    "split": _split,
    "dynamic_update_slice": _dynamic_update_slice,
    "slice": _varying_shape("slice"),
    "dynamic_slice": _varying_shape("dynamic_slice"),
    "pad": _varying_shape("pad"),
    "reduce_window_sum": _varying_shape(None),
    "reduce_window_max": _varying_shape(None),
    "reduce_window_min": _varying_shape(None),
    "sort": _sort,
    "fft": _fft,
    "triangular_solve": _triangular_solve,
    "conv_general_dilated": _conv,
    "gather": _gather,
    "scatter": _scatter,
}
for _n in ("lu", "qr", "svd", "cholesky", "eigh", "eig", "schur", "hessenberg", "geqrf",
           "tridiagonal"):
    _RULES[_n] = _core_unsharded
for _n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    _RULES[_n] = _cumulative
for _n in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
           "reduce_or", "reduce_xor", "argmax", "argmin"):
    _RULES[_n] = _reduce
for _n in _KEEP:
    _RULES[_n] = _same_ty


def _rule_of(prim):
    r = _RULES.get(prim.name)
    if r is not None:
        return r
    from . import sharding_rules as sr
    if prim.kind == "elementwise" or prim.sharding is sr.elementwise:
        return _nary
    return None


# ---- programs ----------------------------------------------------------------------------

def _inner(closed):
    jaxpr = getattr(closed, "jaxpr", closed)
    consts = getattr(closed, "consts", None)
    return jaxpr, consts


def _const_ty(value, aval, ctx) -> Ty:
    sh = getattr(value, "sharding", None)
    mesh = getattr(sh, "mesh", None)
    if mesh is not None and getattr(sh, "spec", None) is not None and \
            getattr(mesh, "explicit_axes", ()) and len(sh._device_assignment) > 1:
        from .sharded import spec_tuple
        return Ty(project(spec_tuple(sh, len(aval.shape)), ctx.explicit), True)
    return Ty(_whole(len(aval.shape)), ctx.mesh_context)


def _walk(jaxpr, in_tys, ctx, consts=None, env=None) -> list:
    from ..ir.jaxpr import Literal
    env = {} if env is None else env
    for k, v in enumerate(jaxpr.constvars):
        val = consts[k] if consts is not None and k < len(consts) else None
        env[v] = _const_ty(val, v.aval, ctx)
    for v, t in zip(jaxpr.invars, in_tys):
        env[v] = t

    def read(x):
        if isinstance(x, Literal):
            return Ty(_whole(len(x.aval.shape)), ctx.mesh_context)
        return env.get(x)

    only_resharded = _only_resharded(jaxpr)
    resharded = {}          # var -> the reshard equation's target spec
    broadcast = set()       # vars made by a broadcast_in_dim that adds dimensions
    for eqn in jaxpr.eqns:
        tys = [read(x) for x in eqn.invars]
        avals = [x.aval for x in eqn.invars]
        outs = [v.aval for v in eqn.outvars]
        if _stacks_shards(eqn, resharded, ctx):
            res = [None] * len(outs)
        else:
            res = _apply(eqn.primitive, tys, avals, outs, eqn.params, ctx,
                         of_broadcast=bool(eqn.invars) and eqn.invars[0] in broadcast,
                         resharded_after=eqn.outvars[0] in only_resharded
                         if eqn.outvars else False)
        if eqn.primitive.name == "broadcast_in_dim" and outs[0].ndim > avals[0].ndim:
            broadcast.add(eqn.outvars[0])
        if eqn.primitive.name == "reshard" and res and res[0] is not None:
            resharded[eqn.outvars[0]] = res[0].spec
        for v, t in zip(eqn.outvars, res):
            env[v] = t
    return [read(x) for x in jaxpr.outvars]


def _only_resharded(jaxpr) -> set:
    """The variables whose every use is a ``reshard`` equation, directly or through
    layout-only unary ops (transpose, reshape, convert_element_type, copy) whose results
    are used so too (and that are not program outputs): how jaxlite lowers the
    ``out_sharding=`` of a product (compute, then reshard)."""
    uses: dict = {}
    for eqn in jaxpr.eqns:
        for x in eqn.invars:
            if hasattr(x, "hint"):          # a Var, not a Literal
                uses.setdefault(x, []).append(eqn)
    outs = {x for x in jaxpr.outvars if hasattr(x, "hint")}
    layout = ("transpose", "reshape", "convert_element_type", "copy", "squeeze")
    found: set = set()
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            us = uses.get(v)
            if not us or v in outs:
                continue
            if all(u.primitive.name == "reshard" or
                   (u.primitive.name in layout and len(u.invars) == 1 and
                    u.outvars[0] in found) for u in us):
                found.add(v)
    return found


def _stacks_shards(eqn, resharded, ctx) -> bool:
    """Whether ``eqn`` views a value just resharded to a spec as the stack of its shards
    (one axis per mesh axis, then the local shape): how ``shard_map`` expands under jit
    (transforms/shard_map.py).  Its per-device program runs over Manual axes, which JAX
    does not type; the stacked values are left unknown until shard_map's results are
    resharded to its ``out_specs``."""
    if eqn.primitive.name != "reshape" or not eqn.invars or \
            eqn.invars[0] not in resharded:
        return False
    spec = resharded[eqn.invars[0]]
    shape = eqn.invars[0].aval.shape
    if not any(spec) or len(spec) != len(shape):
        return False
    want = tuple(int(n) for n in eqn.params.get("new_sizes", ()))
    # a shard_map manual over some axes stacks only the dimensions its spec names; the
    # others keep their layout (left free by the reshard): try each choice
    sharded = [d for d, axes in enumerate(spec) if axes]
    for mask in range(1, 2 ** len(sharded)):
        stacked = {d for i, d in enumerate(sharded) if mask >> i & 1}
        split = []
        for d, (n, axes) in enumerate(zip(shape, spec)):
            if d in stacked:
                split.extend(ctx.axis_sizes[a] for a in axes)
                split.append(n // _size(axes, ctx))
            else:
                split.append(n)
        if want == tuple(split):
            return True
    return False


def _calls(prim, tys, avals, out_avals, params, ctx):
    jaxpr, consts = _inner(params["jaxpr"])
    return _walk(jaxpr, tys, ctx, consts)


def _cond(prim, tys, avals, out_avals, params, ctx):
    outs = []
    for branch in params["branches"]:
        jaxpr, consts = _inner(branch)
        outs.append(_walk(jaxpr, tys[1:], ctx, consts))
    return [o[0] if all(x == o[0] for x in o) else None for o in zip(*outs)]


def _loop_body(jaxpr, consts_tys, carry_tys, xs_tys, ctx, consts):
    return _walk(jaxpr, list(consts_tys) + list(carry_tys) + list(xs_tys), ctx, consts)


def _scan(prim, tys, avals, out_avals, params, ctx):
    nc, nk = params["num_consts"], params["num_carry"]
    xs = []
    for t in tys[nc + nk:]:
        if t is not None and t.meshed and t.spec and t.spec[0]:
            # as JAX: scanning splits dimension 0, which must then be whole
            entries = ", ".join("None" if not e else repr(e[0]) if len(e) == 1 else
                                repr(tuple(e)) for e in t.spec)
            raise ValueError(f"0th dimension of all xs should be replicated. Got "
                             f"P({entries}): reshard the scanned operand to leave "
                             f"dimension 0 whole")
        xs.append(None if t is None or t.spec[0] else Ty(t.spec[1:], t.meshed))
    jaxpr, consts = _inner(params["jaxpr"])
    body = _loop_body(jaxpr, tys[:nc], tys[nc:nc + nk], xs, ctx, consts)
    ys = [None if t is None else Ty(((),) + t.spec, t.meshed) for t in body[nk:]]
    return list(tys[nc:nc + nk]) + ys


def _while(prim, tys, avals, out_avals, params, ctx):
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    carry = tys[cn + bn:]
    cj, cc = _inner(params["cond_jaxpr"])
    bj, bc = _inner(params["body_jaxpr"])
    _walk(cj, list(tys[:cn]) + list(carry), ctx, cc)
    _walk(bj, list(tys[cn:cn + bn]) + list(carry), ctx, bc)
    return list(carry)


_PROGRAM_RULES = {"jit": _calls, "custom_jvp_call": _calls, "custom_vjp_call": _calls,
                  "checkpoint": _calls, "cond": _cond, "scan": _scan, "while": _while}


def _constraint(prim, tys, avals, out_avals, params, ctx):
    """sharding_constraint, reshard and their tangent forms: the result has the spec the
    primitive's sharding rule gives (its target), on the mesh."""
    rule = prim.sharding
    specs = [None if t is None else t.spec for t in tys]
    if prim.name in ("reshard", "sharding_constraint") and specs and specs[0] is None:
        if params.get("unconstrained_dims"):
            return None     # free dimensions keep the unknown operand's layout
        specs[0] = _whole(avals[0].ndim)     # the target alone gives the result's type
    if rule is None or any(s is None for s in specs):
        return None
    try:
        r = rule(specs, list(avals), dict(ctx.axis_sizes), **params)
    except Exception:       # noqa: BLE001 - an unreadable target: leave it unchecked
        return None
    return [Ty(project(s, ctx.explicit), True) for s in r.outputs]


for _n in ("sharding_constraint", "reshard", "reshard_tangent", "reshard_like"):
    _PROGRAM_RULES[_n] = _constraint


def _apply(prim, tys, avals, out_avals, params, ctx, of_broadcast: bool = False,
           resharded_after: bool = False) -> list:
    """The result types of one equation (None entries: unknown); raises
    ShardingTypeError where JAX's typing rule does.  ``of_broadcast``: the first operand
    was made by a broadcast_in_dim that added dimensions; ``resharded_after``: every use
    of the result is a reshard (how jaxlite's ``out_sharding=`` arguments lower)."""
    n = len(out_avals)
    rule = _PROGRAM_RULES.get(prim.name)
    if rule is None and any(t is None for t in tys):
        return [None] * n
    if rule is None and not _meshed(tys):
        return [Ty(_whole(o.ndim), False) for o in out_avals]
    if rule is None:
        rule = _rule_of(prim)
    if rule is _reshape:
        res = _reshape(prim, tys, avals, out_avals, params, ctx, of_broadcast)
    elif rule is _dot_general:
        res = _dot_general(prim, tys, avals, out_avals, params, ctx, resharded_after)
    else:
        res = None if rule is None else rule(prim, tys, avals, out_avals, params, ctx)
    if res is None:
        if all(t is not None and not any(t.spec) for t in tys):
            # no rule here, every operand whole: JAX's rules leave the results whole
            return [Ty(_whole(o.ndim), _meshed(tys)) for o in out_avals]
        return [None] * n
    return list(res) + [None] * (n - len(res))


def check_jaxpr(jaxpr, in_tys, axis_sizes, explicit, consts=None,
                mesh_context: bool = False, env: dict | None = None) -> list:
    """The result ``Ty`` of each output of ``jaxpr`` (a Jaxpr or ClosedJaxpr) whose inputs
    have ``in_tys`` on a mesh of ``axis_sizes`` whose Explicit axes are ``explicit``; raises
    ShardingTypeError at the first equation JAX's typing rules refuse.  ``env``: a dict
    that receives the ``Ty`` (or None) of every variable of the top-level program."""
    jaxpr, c = _inner(jaxpr)
    ctx = _Ctx(dict(axis_sizes), frozenset(explicit), bool(mesh_context))
    return _walk(jaxpr, list(in_tys), ctx, consts if consts is not None else c, env)


def check_eqn(prim, in_tys, in_avals, out_avals, params, axis_sizes, explicit,
              mesh_context: bool = False, of_broadcast: bool = False) -> list:
    """``_apply`` of one primitive (an eager op): the result ``Ty``s, or raises
    ShardingTypeError naming the primitive, the operands' types and the mesh axis.
    ``of_broadcast``: the first operand came from a broadcast_in_dim adding dimensions."""
    ctx = _Ctx(dict(axis_sizes), frozenset(explicit), bool(mesh_context))
    return _apply(prim, list(in_tys), list(in_avals), list(out_avals), params, ctx,
                  of_broadcast)
