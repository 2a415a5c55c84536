"""Sharding rules: how a primitive runs on the shards of sharded operands.

Layer: core.  The basis of the SPMD partitioner (a jit over sharded inputs becomes one
program per device plus explicit collectives) and of the output shardings of eager ops and
of jit on sharded arrays.

Representation.  A *spec* says how an array of rank n is laid out over a device mesh: a
tuple with one entry per dimension, each entry a tuple of mesh axis names, major to minor
(empty: that dimension is whole on every device).  float32[8,4] split over mesh axis 'x'
along its rows is ``(('x',), ())``; a replicated one is ``((), ())``.  The mesh is
``axis_sizes``: a dict {axis name: size} in the mesh's axis order.  A dimension of size n
sharded over axes of sizes s1..sk holds n / (s1*...*sk) elements on each device (a valid
spec divides evenly and names each axis at most once).

A primitive's ``sharding`` rule is ``rule(in_specs, in_avals, axis_sizes, **params) ->
ShardingRule``.  The rule may only keep a dimension sharded when running the primitive on
each device's shards, then combining the results by the declared ``reduce``, gives exactly
the shards of the global result (never a silent wrong result).  A primitive without a rule
gets ``fallback`` (every operand gathered, every result replicated).

This module holds ``ShardingRule``, the spec helpers, and the rules shared by whole
families (elementwise, reductions, cumulative ops, batched matrix ops, shape ops); the
primitive modules set them where each primitive is declared.
"""
from __future__ import annotations

import math
from typing import NamedTuple


class ShardingRule(NamedTuple):
    """How one equation runs on shards.

    - ``operands``: the spec each operand must have for the local computation; where it
      differs from the operand's spec the operand is resharded first (gathered along a
      dimension the operation needs whole, or sliced further, which needs no communication);
    - ``outputs``: the spec of each result (a list, one entry per result) as the local
      computation leaves it, after ``reduce``;
    - ``reduce``: a tuple of ``(monoid, axes)`` pairs: the local results are partial and must
      be all-reduced with ``monoid`` ("add", "mul", "max", "min", "and", "or", "xor"; the
      names of ``Reduction.monoid``) over the mesh ``axes`` (a tuple of names): a dot_general
      or reduce_sum over a sharded contracting/reduced dimension gives ``(("add", axes),)``,
      reduce_max ``(("max", axes),)``; applies to every result; empty when none;
    - ``note``: why an operand was resharded or replicated (for the report), or None;
    - ``inner``: for a primitive that carries programs, ``(path, report entries)`` pairs:
      what the propagation found inside them (``path`` names the program, e.g.
      ``("body",)``); empty otherwise;
    - ``reslice``: a rule's hint, per result, of the spec to slice the result back to
      along dimensions the local computation leaves whole (the operand's sharding of a
      dimension that had to be gathered: GSPMD leaves a sort's or a cumsum's result
      sharded like its operand); None: no hint.  The propagation pass
      (``sharding_propagation.rule_for``) applies it where the mesh axes divide the
      result's dimension and no other dimension holds them, and then sets
      ``local_outputs``;
    - ``local_outputs``: set by ``rule_for`` when ``outputs`` cuts some dimensions finer
      than the local computation leaves them: the specs of the local results (after
      ``reduce``); each device then takes its block of them (a slice, no communication).
      None: the local results already have ``outputs``' specs.
    """
    operands: list
    outputs: list
    reduce: tuple = ()
    note: str | None = None
    inner: tuple = ()
    reslice: list | None = None
    local_outputs: list | None = None


# ---- spec helpers ------------------------------------------------------------------------

def replicated(ndim: int) -> tuple:
    """The spec of an array of rank ``ndim`` that every device holds whole."""
    return ((),) * ndim


def axes_size(axes, axis_sizes) -> int:
    """The number of shards ``axes`` (a tuple of mesh axis names) cut a dimension into."""
    return math.prod(axis_sizes[a] for a in axes)


def used_axes(spec) -> set:
    """Every mesh axis a spec names."""
    return {a for entry in spec for a in entry}


def check_spec(spec, shape, axis_sizes, what: str = "spec") -> tuple:
    """``spec`` as a tuple of tuples, checked against ``shape`` and the mesh (an entry may
    also be None, for whole, or one axis name).

    Raises ValueError naming the spec and the shape when it has the wrong length, names an
    axis the mesh lacks or twice, or cuts a dimension into pieces that do not divide it."""
    try:
        spec = tuple(() if e is None else (e,) if isinstance(e, str) else tuple(e)
                     for e in spec)
    except TypeError:
        raise ValueError(f"{what} {spec!r} is not a tuple of tuples of mesh axis "
                         f"names") from None
    if len(spec) != len(shape):
        raise ValueError(f"{what} {spec} has {len(spec)} entries for an array of shape "
                         f"{tuple(shape)}; it needs one per dimension")
    seen = set()
    for d, (entry, n) in enumerate(zip(spec, shape)):
        for a in entry:
            if a not in axis_sizes:
                raise ValueError(f"{what} {spec} names mesh axis {a!r}, which the mesh "
                                 f"{dict(axis_sizes)} lacks")
            if a in seen:
                raise ValueError(f"{what} {spec} names mesh axis {a!r} twice")
            seen.add(a)
        k = axes_size(entry, axis_sizes)
        if n % k:
            raise ValueError(f"{what} {spec} cuts dimension {d} of shape {tuple(shape)} "
                             f"into {k} pieces, which do not divide its size {n}")
    return spec


def fmt(spec) -> str:
    """A short printable form: ``('x', None, ('y', 'z'))``-like, as PartitionSpec reads."""
    parts = []
    for e in spec:
        parts.append("None" if not e else repr(e[0]) if len(e) == 1 else repr(tuple(e)))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def describe(changes) -> str | None:
    """The notes ``changes`` as one note (None when there are none)."""
    return "; ".join(changes) if changes else None


# ---- merging the specs of operands that share a shape ------------------------------------

class Claim:
    """Builds one spec from candidate entries per dimension, in priority order, keeping
    each mesh axis on one dimension: an entry naming an axis that another dimension holds
    already is passed over; an entry refines the chosen one when that one is a prefix of it
    (cutting a shard further needs no communication); entries that disagree otherwise leave
    the dimension whole (as GSPMD does for ``a + b`` over ``P('x')`` and ``P('y')``)."""

    def __init__(self, ndim):
        self.spec = [()] * ndim
        self.conflict = [False] * ndim

    def offer(self, d, entry) -> None:
        entry = tuple(entry)
        if not entry or self.conflict[d]:
            return
        taken = {a for i, e in enumerate(self.spec) if i != d for a in e}
        if taken.intersection(entry):
            return              # an axis another dimension holds already: not a candidate
        cur = self.spec[d]
        if entry[:len(cur)] == cur:
            self.spec[d] = entry
        elif cur[:len(entry)] != entry:
            self.conflict[d] = True
            self.spec[d] = ()

    def result(self) -> tuple:
        return tuple(self.spec)


def merge(specs, ndim, axis_sizes=None) -> tuple:
    """One spec for operands of one shape, as GSPMD merges them.  Per dimension: the finest
    of the operands' entries when each is a prefix of it (cutting a shard further needs no
    communication), whole when two disagree otherwise (``P('x')`` and ``P('y')``).  Then a
    mesh axis that two dimensions want goes to the one cut into more shards (by
    ``axis_sizes``; without them, by more axes; ties: the earlier operand's, then the
    earlier dimension); the other dimension stays whole."""
    specs = [tuple(tuple(e) for e in s) for s in specs]
    cand, first = [()] * ndim, [len(specs)] * ndim
    for d in range(ndim):
        conflict = False
        for k, s in enumerate(specs):
            e = s[d]
            if not e:
                continue
            first[d] = min(first[d], k)
            cur = cand[d]
            if e[:len(cur)] == cur:
                cand[d] = e
            elif cur[:len(e)] != e:
                conflict = True
        if conflict:
            cand[d] = ()
    def shards(e):
        return axes_size(e, axis_sizes) if axis_sizes is not None else len(e)
    order = sorted((d for d in range(ndim) if cand[d]),
                   key=lambda d: (-shards(cand[d]), first[d], d))
    out, taken = [()] * ndim, set()
    for d in order:
        if not taken.intersection(cand[d]):
            out[d] = cand[d]
            taken.update(cand[d])
    return tuple(out)


def reshard_notes(in_specs, operands, why: str) -> list:
    """One note per operand whose spec the rule changes: ``operand i (from) -> (to): why``."""
    notes = []
    for i, (a, b) in enumerate(zip(in_specs, operands)):
        if tuple(a) != tuple(b):
            notes.append(f"operand {i} {fmt(a)} -> {fmt(b)}: {why}")
    return notes


# ---- the fallback ------------------------------------------------------------------------

FALLBACK_NOTE = "no sharding rule: replicated"


def fallback(in_specs, in_avals, out_avals, note: str = FALLBACK_NOTE) -> ShardingRule:
    """Every operand gathered whole, every result replicated."""
    ops = [replicated(a.ndim) for a in in_avals]
    changed = any(tuple(s) != o for s, o in zip(in_specs, ops))
    return ShardingRule(ops, [replicated(a.ndim) for a in out_avals], (),
                        note if (changed or note != FALLBACK_NOTE) else None)


def out_avals(prim, in_avals, params) -> list:
    """The result avals of ``prim`` on ``in_avals`` (a list even for one result)."""
    out = prim.abstract_eval_cached(tuple(in_avals), params)
    return list(out) if prim.multiple_results else [out]


def replicate_rule(prim, note: str):
    """A rule for ``prim`` that gathers every operand and replicates every result, with
    ``note`` (for primitives that must see whole arrays: callbacks, opaque programs)."""
    def rule(in_specs, in_avals, axis_sizes, **params):
        ops = [replicated(a.ndim) for a in in_avals]
        changed = any(tuple(s) != o for s, o in zip(in_specs, ops))
        return ShardingRule(ops, [replicated(a.ndim) for a in out_avals(prim, in_avals, params)],
                            (), note if changed else None)
    return rule


# ---- elementwise -------------------------------------------------------------------------

def elementwise(in_specs, in_avals, axis_sizes, **params) -> ShardingRule:
    """Operands of one rank (rank-0 operands broadcast; a size-1 dimension broadcasts to
    the others' size): one common spec, chosen as GSPMD does (per dimension the finest
    agreeing sharding, the first operand's on a conflict of mesh axes, whole where operands
    disagree) from the operands that have the result's size there; every operand is
    resharded to it, except that a dimension an operand broadcasts from size 1 is whole."""
    ndim = max((a.ndim for a in in_avals), default=0)
    full = [a for a in in_avals if a.ndim == ndim]
    out_shape = tuple(max((a.shape[d] for a in full if a.shape[d] != 1), default=1)
                      for d in range(ndim))
    # a dimension broadcast from size 1 tells nothing of the result's sharding
    specs = [tuple(e if a.shape[d] == out_shape[d] else () for d, e in enumerate(s))
             for s, a in zip(in_specs, in_avals) if a.ndim == ndim]
    common = merge(specs, ndim, axis_sizes)
    ops = [tuple(e if a.shape[d] == out_shape[d] else () for d, e in enumerate(common))
           if a.ndim == ndim else replicated(a.ndim) for a in in_avals]
    notes = reshard_notes(in_specs, ops, "operands of an elementwise op share one sharding")
    return ShardingRule(ops, [common], (), describe(notes))


def unary_same(in_specs, in_avals, axis_sizes, **params) -> ShardingRule:
    """One operand, one result of its shape: the result keeps the operand's spec (other
    operands, if any, replicated)."""
    s = tuple(in_specs[0])
    ops = [s] + [replicated(a.ndim) for a in in_avals[1:]]
    notes = reshard_notes(in_specs, ops, "a parameter operand is read whole")
    return ShardingRule(ops, [s], (), describe(notes))


# ---- reductions --------------------------------------------------------------------------

def reduction(monoid: str):
    """The rule of a reduction over ``axes`` with an associative, commutative monoid: kept
    dimensions keep their sharding; a reduced sharded dimension leaves partial results,
    all-reduced with ``monoid`` over its mesh axes."""
    def rule(in_specs, in_avals, axis_sizes, *, axes, **params):
        s = tuple(in_specs[0])
        axes = {int(a) % max(len(s), 1) for a in axes}
        over = tuple(a for d in sorted(axes) for a in s[d])
        out = tuple(e for d, e in enumerate(s) if d not in axes)
        return ShardingRule([s], [out], ((monoid, over),) if over else (), None)
    return rule


def gather_dims(spec, dims) -> tuple:
    """``spec`` with ``dims`` whole (negative dimensions count from the end)."""
    dims = {int(d) % len(spec) for d in dims} if len(spec) else set()
    return tuple(() if d in dims else tuple(e) for d, e in enumerate(spec))


def whole_along(dims_of, why: str, multi: bool = False):
    """A rule for an op whose result has its operands' rank and whose dimensions map one to
    one, but which needs some dimensions whole (``dims_of(in_avals, **params)`` names them:
    a cumulative sum's axis, a sort's dimension, a slice's cut dimensions): those are
    gathered, the rest keep a common sharding of the operands of that rank (rank-0
    operands: whole); the result is then sliced back to the common sharding where it
    divides (``reslice``, as GSPMD).  ``multi``: one result per such operand (a sort of
    several operands), else one result."""
    def rule(in_specs, in_avals, axis_sizes, **params):
        ndim = in_avals[0].ndim
        dims = dims_of(in_avals, **params)
        merged = merge([s for s, a in zip(in_specs, in_avals) if a.ndim == ndim], ndim,
                       axis_sizes)
        common = gather_dims(merged, dims)
        ops = [common if a.ndim == ndim else replicated(a.ndim) for a in in_avals]
        notes = reshard_notes(in_specs, ops, why)
        n_out = sum(a.ndim == ndim for a in in_avals) if multi else 1
        return ShardingRule(ops, [common] * n_out, (), describe(notes),
                            reslice=[merged] * n_out if merged != common else None)
    return rule


def batched_core(prim, core, why: str = "the core dimensions of a matrix op are "
                                       "computed whole", reslice: bool = False):
    """Batched linear algebra (and FFT) ``prim``: the first operand has ``core`` trailing core
    dimensions; the leading (batch) dimensions keep their sharding on every operand and
    result (they all lead with the batch dimensions), every other dimension is whole.
    ``core`` may be a callable ``core(aval, **params) -> int``.  ``reslice``: a result of
    the first operand's rank is sliced back to that operand's sharding of the core
    dimensions where it divides (an FFT, whose result dimensions are its operand's, as
    GSPMD leaves it)."""
    def rule(in_specs, in_avals, axis_sizes, **params):
        outs = out_avals(prim, in_avals, params)
        k = core(in_avals[0], **params) if callable(core) else core
        nb = max(in_avals[0].ndim - k, 0)
        c = Claim(nb)
        for s, a in zip(in_specs, in_avals):
            if a.ndim >= nb:
                for d in range(nb):
                    c.offer(d, s[d])
        batch = c.result()

        def spec(ndim):
            return batch[:min(nb, ndim)] + replicated(max(ndim - nb, 0)) if ndim >= nb \
                else replicated(ndim)
        ops = [spec(a.ndim) for a in in_avals]
        notes = reshard_notes(in_specs, ops, why)
        hint = None
        if reslice and ops[0] != tuple(in_specs[0]):
            first = tuple(in_specs[0])
            hint = [batch[:nb] + first[nb:] if a.ndim == len(first) else spec(a.ndim)
                    for a in outs]
        return ShardingRule(ops, [spec(a.ndim) for a in outs], (), describe(notes),
                            reslice=hint)
    return rule


# ---- reshape -----------------------------------------------------------------------------

def _groups(in_shape, out_shape):
    """Pairs ``(in_dims, out_dims)`` of consecutive dimensions with equal products that
    partition both shapes (size-1 dimensions join a neighbouring group), or None."""
    groups, i, j = [], 0, 0
    n, m = len(in_shape), len(out_shape)
    while i < n or j < m:
        gi, gj = [], []
        pi = pj = 1
        if i < n:
            gi.append(i)
            pi *= in_shape[i]
            i += 1
        if j < m:
            gj.append(j)
            pj *= out_shape[j]
            j += 1
        while pi != pj:
            if pi < pj and i < n:
                gi.append(i)
                pi *= in_shape[i]
                i += 1
            elif j < m:
                gj.append(j)
                pj *= out_shape[j]
                j += 1
            elif i < n:
                gi.append(i)
                pi *= in_shape[i]
                i += 1
            else:
                return None
        # trailing size-1 dimensions join this group
        while i < n and in_shape[i] == 1 and (j >= m or out_shape[j] != 1):
            gi.append(i)
            i += 1
        while j < m and out_shape[j] == 1 and (i >= n or in_shape[i] != 1):
            gj.append(j)
            j += 1
        groups.append((gi, gj))
    return groups


def _merge_group(spec, shape, dims, axis_sizes):
    """The sharding of the flattened dimensions ``dims`` (row-major), and the dimensions
    that must be gathered for it: the major dimension's axes, then the next one's while the
    shard of every dimension so far holds one element along it."""
    axes, gathered, open_ = [], [], True
    for d in dims:
        e = tuple(spec[d])
        if not open_:
            if e:
                gathered.append(d)
            continue
        axes.extend(e)
        if shape[d] // axes_size(e, axis_sizes) != 1:
            open_ = False
    return tuple(axes), gathered


def _split_group(axes, sizes, axis_sizes):
    """Specs of the dimensions ``sizes`` that a flat dimension sharded over ``axes`` splits
    into (row-major), or None: the axes go to the major dimension while their product
    divides it; the next dimension takes the rest only when the major one is cut into
    one-element shards."""
    out, rem = [], list(axes)
    for n in sizes:
        take, p = [], 1
        while rem and n % (p * axis_sizes[rem[0]]) == 0:
            p *= axis_sizes[rem[0]]
            take.append(rem.pop(0))
        out.append(tuple(take))
        if rem and p != n:
            return None
    return out if not rem else None


def reshape(in_specs, in_avals, axis_sizes, *, new_sizes, dimensions=None, **params):
    """A dimension keeps its sharding where it maps whole to an output dimension, where
    dimensions merge with the sharded one major (and the others whole), or where it splits
    with the shards falling along the major part; otherwise it is gathered (noted)."""
    x = in_avals[0]
    spec = tuple(in_specs[0])
    shape = tuple(x.shape)
    perm = None if dimensions is None else tuple(dimensions)
    if perm is not None:
        spec = tuple(spec[p] for p in perm)
        shape = tuple(shape[p] for p in perm)
    new_sizes = tuple(int(n) for n in new_sizes)
    groups = _groups(shape, new_sizes)
    out = [()] * len(new_sizes)
    local = list(spec)                      # the operand's spec (permuted order)
    if groups is None:
        local = list(replicated(len(spec)))
    else:
        for gi, gj in groups:
            axes, gathered = _merge_group(spec, shape, gi, axis_sizes)
            split = _split_group(axes, [new_sizes[j] for j in gj], axis_sizes)
            if split is None:
                for d in gi:
                    local[d] = ()
                continue
            for d in gathered:
                local[d] = ()
            for j, e in zip(gj, split):
                out[j] = e
    if perm is not None:
        inv = [0] * len(perm)
        for k, p in enumerate(perm):
            inv[p] = k
        local = [local[inv[d]] for d in range(len(perm))]
    ops = [tuple(local)]
    notes = reshard_notes(in_specs, ops, "reshape keeps a sharded dimension only where it "
                                          "maps whole or splits/merges with the shards major")
    return ShardingRule(ops, [tuple(out)], (), describe(notes))


# ---- dot_general -------------------------------------------------------------------------

def dot_general(in_specs, in_avals, axis_sizes, *, dimension_numbers, **params):
    """Batch dimensions keep a common sharding; contracting dimensions sharded alike on
    both sides leave partial sums (all-reduced with "add" over their axes; a side sharded
    where the other is whole is cut to match); free dimensions keep theirs.  Priority on a
    mesh axis two dimensions want (fitted to GSPMD's choices: a sharded result before an
    all-reduce): the lhs free dimensions, the batch dimensions (whole where the two sides
    shard one differently), the rhs free dimensions, then the contracting ones."""
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in t) for t in (lc, rc, lb, rb))
    ls, rs = tuple(in_specs[0]), tuple(in_specs[1])
    ln, rn = in_avals[0].ndim, in_avals[1].ndim
    lf = [d for d in range(ln) if d not in lc and d not in lb]
    rf = [d for d in range(rn) if d not in rc and d not in rb]
    # one pseudo-dimension per batch pair, lhs free, contracting pair, rhs free
    keys = ([("b", i) for i in range(len(lb))] + [("lf", d) for d in lf]
            + [("c", i) for i in range(len(lc))] + [("rf", d) for d in rf])
    index = {k: n for n, k in enumerate(keys)}
    claim = Claim(len(keys))
    for d in lf:
        claim.offer(index["lf", d], ls[d])
    for i in range(len(lb)):
        claim.offer(index["b", i], merge([(ls[lb[i]],), (rs[rb[i]],)], 1)[0])
    for d in rf:
        claim.offer(index["rf", d], rs[d])
    for i in range(len(lc)):
        claim.offer(index["c", i], ls[lc[i]])
        claim.offer(index["c", i], rs[rc[i]])
    got = claim.result()
    lops, rops = [()] * ln, [()] * rn
    for i in range(len(lb)):
        lops[lb[i]] = rops[rb[i]] = got[index["b", i]]
    for i in range(len(lc)):
        lops[lc[i]] = rops[rc[i]] = got[index["c", i]]
    for d in lf:
        lops[d] = got[index["lf", d]]
    for d in rf:
        rops[d] = got[index["rf", d]]
    out = ([got[index["b", i]] for i in range(len(lb))] + [got[index["lf", d]] for d in lf]
           + [got[index["rf", d]] for d in rf])
    over = tuple(a for i in range(len(lc)) for a in got[index["c", i]])
    ops = [tuple(lops), tuple(rops)]
    notes = reshard_notes(in_specs, ops, "dot_general operands resharded to agree on "
                                          "batch/contracting dimensions and mesh axes")
    return ShardingRule(ops, [tuple(out)], (("add", over),) if over else (), describe(notes))


# ---- simple shape ops --------------------------------------------------------------------

def broadcast_in_dim(in_specs, in_avals, axis_sizes, *, shape, broadcast_dimensions,
                     **params):
    """Operand dimension i goes to result dimension ``broadcast_dimensions[i]`` with its
    sharding (a size-1 dimension broadcast to more is whole); new dimensions are whole."""
    x = in_avals[0]
    s = list(in_specs[0])
    out = [()] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] == shape[d]:
            out[d] = tuple(s[i])
        else:
            s[i] = ()
    ops = [tuple(s)] + [replicated(a.ndim) for a in in_avals[1:]]
    notes = reshard_notes(in_specs, ops, "a broadcast size-1 dimension is whole")
    return ShardingRule(ops, [tuple(out)], (), describe(notes))


def transpose(in_specs, in_avals, axis_sizes, *, permutation, **params):
    """The result's dimension k has the operand's dimension ``permutation[k]``'s spec."""
    s = tuple(in_specs[0])
    return ShardingRule([s], [tuple(s[p] for p in permutation)], (), None)


def squeeze(in_specs, in_avals, axis_sizes, *, dimensions, **params):
    """Squeezed (size-1, so whole) dimensions drop out of the spec."""
    s = tuple(in_specs[0])
    nd = len(s)
    drop = {int(d) % nd for d in dimensions}
    return ShardingRule([s], [tuple(e for d, e in enumerate(s) if d not in drop)], (), None)


def creation(in_specs, in_avals, axis_sizes, *, shape, **params) -> ShardingRule:
    """A result made from nothing (iota, of ``shape``): replicated."""
    return ShardingRule([replicated(a.ndim) for a in in_avals], [replicated(len(shape))],
                        (), None)


# ---- parameters of the local computation -------------------------------------------------
# A primitive's ``local_params`` rule (see core/primitive.py) rewrites the sizes its
# parameters hold for one device's shards.  The rules below serve the shape primitives.

def sized_by_result(param: str):
    """A ``local_params`` rule setting ``param`` to the local result's shape (a reshape's
    ``new_sizes``, a broadcast's ``shape``)."""
    def rule(params, operand_specs, local_in_shapes, local_out_shapes):
        return {**params, param: tuple(local_out_shapes[0])}
    return rule


def cut_to_operand(param: str):
    """A ``local_params`` rule for a slice: ``param`` (one size or limit per dimension of
    the first operand) becomes the local operand's size along the dimensions kept sharded
    (the sharding rule shards only dimensions the slice keeps whole)."""
    def rule(params, operand_specs, local_in_shapes, local_out_shapes):
        return {**params, param: tuple(m if e else k for m, e, k in
                                       zip(local_in_shapes[0], operand_specs[0],
                                           params[param]))}
    return rule
