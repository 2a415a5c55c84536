"""Fusion: groups elementwise equations, broadcasts into their iteration space and
reductions over it into fused kernels (one ``kernel_p`` equation each; see
``primitives/kernel.py``).

Layer: compiler.  ``fuse(closed) -> closed`` is pure.  What may fuse:

- elementwise primitives (``elementwise`` with a ``scalar_op``: arithmetic, comparisons,
  ``select_n``, ``clamp``, ``integer_pow``, ``convert_element_type``, ...) whose output has
  the group's iteration space; rank-0 operands are read as broadcast inputs, literals and
  rank-0 constants become literals of the scalar body;
- ``broadcast_in_dim`` into the iteration space: its operand becomes a kernel input read
  through ``dims`` (the broadcast is never materialised); a group made only of broadcasts
  stays a plain equation; a broadcast of a rank-0 operand that several equations read is
  copied for each of them first (``_private_scalar_broadcasts``), so that no kernel
  writes a constant array out for another kernel to read;
- an identity of a value of the group (``stop_gradient``: a ``view`` that ``renames`` its
  operand to the same shape);
- a ``reduction`` whose monoid a kernel folds with (``reduce_sum/max/min/prod``) and whose
  operand has the iteration space: a "reduce" output (the elementwise chain feeding it is
  the reduction's prologue).  A reduced value is
  never read inside the kernel that reduces it: a consumer broadcasting it back over the
  same space (softmax's ``x - max(x)``) starts the next kernel.

Every other group becomes a kernel, a single equation too (the unit a native code
generator compiles), except one equation alone over a rank-0 space.

Never fused: effectful equations (and no group spans one), control flow and calls,
``dot_general``, gather/scatter, and any equation over an empty iteration space.  A group
value read outside the group becomes an extra "map" output.

Groups are chosen greedily in program order by an explicit score, ``fusion_score``: the
bytes of memory traffic the fused kernel saves against running its equations one by one
(intermediates that are no longer written and read back, broadcasts never materialised).
An equation joins the groups producing its operands (those of the same iteration space,
best gain first) when the merge gains bytes and keeps the program acyclic: a group may not
read, through any path leaving it, a value it produces.
"""
from __future__ import annotations

import heapq

from ...core.avals import ShapedArray
from ...core.eager import host_value
from ...ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from ...primitives.kernel import MONOIDS, Kernel, KernelInput, KernelOutput, kernel_p
from ...primitives.shape import broadcast_in_dim_p
from ._rewrite import has_effects
from .expand_broadcasts import check_elementwise_operands


def _monoid(eqn):
    """The monoid a kernel folds ``eqn`` with when it is a fusable reduction, else None."""
    r = eqn.primitive.reduction
    return r.monoid if r is not None and r.monoid in MONOIDS else None


def _is_identity(eqn) -> bool:
    """Whether ``eqn``'s result is its operand unchanged (a same-shape renaming view)."""
    p = eqn.primitive
    return (p.view and p.renames(eqn.params) and len(eqn.invars) == 1 and
            eqn.invars[0].aval.shape == eqn.outvars[0].aval.shape)


def _nbytes(aval) -> int:
    return aval.size * aval.dtype.itemsize


def iteration_space(eqn):
    """The iteration space (a shape) of a fusable equation, or None when it cannot fuse."""
    p = eqn.primitive
    if p.effectful or len(eqn.outvars) != 1 or p.multiple_results:
        return None
    if p.elementwise and p.scalar_op:
        shape = eqn.outvars[0].aval.shape
    elif p is broadcast_in_dim_p or _is_identity(eqn):
        shape = eqn.outvars[0].aval.shape
    elif _monoid(eqn) is not None:
        shape = eqn.invars[0].aval.shape
    else:
        return None
    for d in shape:
        if d == 0:
            return None
    return tuple(shape)


def _is_compute(eqn) -> bool:
    return not _is_identity(eqn) and eqn.primitive is not broadcast_in_dim_p


def _map_outvars(eqns):
    """Variables a group produces over its whole iteration space (readable inside it)."""
    return {e.outvars[0] for e in eqns if _monoid(e) is None}


class Group:
    """Equations fused into one kernel: ``eqns`` (program order) and ``escaping``, the
    values they produce that are read outside the group (or are program outputs)."""

    def __init__(self, eqns, escaping=()):
        self.eqns = list(eqns)
        self.escaping = set(escaping)

    @classmethod
    def of(cls, eqns, jaxpr: Jaxpr) -> "Group":
        """The group of ``eqns`` (equations of ``jaxpr``), its escaping values computed
        from the rest of ``jaxpr``."""
        members = set(map(id, eqns))
        outside = {v for e in jaxpr.eqns if id(e) not in members for v in e.invars
                   if not isinstance(v, Literal)}
        outside.update(v for v in jaxpr.outvars if not isinstance(v, Literal))
        produced = {v for e in eqns for v in e.outvars}
        return cls(eqns, produced & outside)

    def inputs(self):
        """Values the group reads from outside it (no literals), in first-use order."""
        made = _map_outvars(self.eqns)
        seen = {}
        for e in self.eqns:
            for v in e.invars:
                if not isinstance(v, Literal) and v not in made:
                    seen.setdefault(v, None)
        return list(seen)

    def unfused_bytes(self) -> int:
        """Memory traffic of the equations run one by one: every operand read, every
        result written."""
        return sum(sum(_nbytes(v.aval) for v in e.invars if not isinstance(v, Literal)) +
                   sum(_nbytes(v.aval) for v in e.outvars) for e in self.eqns)

    def fused_bytes(self) -> int:
        """Memory traffic of the fused kernel: its inputs read once, its outputs (escaping
        values and reductions) written once."""
        outs = sum(_nbytes(e.outvars[0].aval) for e in self.eqns
                   if _monoid(e) is not None or e.outvars[0] in self.escaping)
        return sum(_nbytes(v.aval) for v in self.inputs()) + outs


def fusion_score(group: Group) -> int:
    """Bytes of memory traffic saved by running ``group`` as one kernel instead of one
    equation at a time (``unfused_bytes - fused_bytes``; 0 for a single equation)."""
    return group.unfused_bytes() - group.fused_bytes()


# ---- grouping ---------------------------------------------------------------------------

class _Grouper:
    def __init__(self, jaxpr: Jaxpr):
        self.jaxpr = jaxpr
        self.consumers = {}
        for k, e in enumerate(jaxpr.eqns):
            for v in e.invars:
                if not isinstance(v, Literal):
                    self.consumers.setdefault(v, set()).add(k)
        self.program_outs = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
        self.parent = {}     # union-find over group ids
        self.members = {}    # root -> [eqn index]
        self.space = {}      # root -> iteration space
        self.epoch = {}      # root -> effect epoch at creation
        self.deps = {}       # root -> raw group ids its inputs come from (direct)
        self.group_of = {}   # eqn index -> raw group id
        self.producer = {}   # var -> eqn index
        self.vdeps = {}      # var (plain-equation result) -> raw group ids it depends on
        self.nmap = {}       # root -> set of map vars
        self.mset = {}       # root -> set of member indices
        self.ins = {}        # root -> values its members read from outside it
        self.first = {}      # root -> index of its first member
        self.last = {}       # root -> index of its last member

    def find(self, g):
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def var_groups(self, v):
        """Raw ids of the groups ``v`` depends on directly (its producer's group, or the
        groups feeding the plain equations that computed it)."""
        if isinstance(v, Literal):
            return ()
        k = self.producer.get(v)
        if k is None:
            return ()
        g = self.group_of.get(k)
        if g is not None:
            return (g,)
        return self.vdeps.get(v, ())

    def reaches(self, start, targets) -> bool:
        """True when a group in ``targets`` (roots) is among ``start`` or their ancestors
        (through kernels: a group depends on everything any of its members reads)."""
        seen = set()
        stack = [self.find(g) for g in start]
        while stack:
            g = stack.pop()
            if g in targets:
                return True
            if g in seen:
                continue
            seen.add(g)
            stack.extend(self.find(d) for d in self.deps[g] if self.find(d) != g)
        return False

    def legal(self, roots, k) -> bool:
        """May equation ``k`` and the groups ``roots`` fuse without a cycle (no value read
        by the merged group depends on it through a path leaving it)?"""
        targets = set(roots)
        eqn = self.jaxpr.eqns[k]
        made = set(self.nmap[roots[0]]) if len(roots) == 1 else set().union(
            *(self.nmap[r] for r in roots))
        reads = set(v for v in eqn.invars if not isinstance(v, Literal))
        for r in roots:
            reads |= self.ins[r]
        # direct map edges between merged groups are internal; all other sources count
        ext = set()
        for v in reads:
            if v not in made:
                ext.update(self.var_groups(v))
        return not self.reaches(ext, targets)

    def gain(self, r, k) -> int:
        """``fusion_score(G + E) - fusion_score(G) - fusion_score(E)`` for group ``r`` and
        equation ``k``, computed from what changes: the reads of ``E``'s operands that
        ``G`` produces or already reads, and the writes of ``G``'s values whose last
        outside reader was ``E``."""
        saved = 0
        members = self.mset[r]
        for v in set(v for v in self.jaxpr.eqns[k].invars if not isinstance(v, Literal)):
            if v in self.nmap[r]:
                saved += _nbytes(v.aval)
                if v not in self.program_outs and all(
                        c in members or c == k for c in self.consumers.get(v, ())):
                    saved += _nbytes(v.aval)
            elif v in self.ins[r]:
                saved += _nbytes(v.aval)
        return saved

    def run(self):
        epoch = 0
        for k, eqn in enumerate(self.jaxpr.eqns):
            for v in eqn.outvars:
                self.producer[v] = k
            if has_effects(eqn):
                epoch += 1
            space = iteration_space(eqn) if not has_effects(eqn) else None
            if space is None:
                vd = set()
                for v in eqn.invars:
                    vd.update(self.var_groups(v))
                for v in eqn.outvars:
                    self.vdeps[v] = tuple(vd)
                continue
            # candidate groups: producers of map operands over the same space
            cands = []
            for v in eqn.invars:
                if isinstance(v, Literal) or v.aval.shape != space:
                    continue
                j = self.producer.get(v)
                g = self.group_of.get(j) if j is not None else None
                if g is None:
                    continue
                r = self.find(g)
                if (r not in cands and self.space[r] == space and self.epoch[r] == epoch
                        and v in self.nmap[r]):
                    cands.append(r)
            chosen = []
            if cands:
                gains = sorted(((self.gain(r, k), n, r) for n, r in enumerate(cands)),
                               reverse=True)
                for gain, _, r in gains:
                    if gain > 0 and self.legal(chosen + [r], k):
                        chosen.append(r)
            if not chosen and _is_identity(eqn):
                vd = set()
                for v in eqn.invars:
                    vd.update(self.var_groups(v))
                self.vdeps[eqn.outvars[0]] = tuple(vd)
                continue
            if chosen:
                root = chosen[0]
                for r in chosen[1:]:
                    self.parent[r] = root
                    self.members[root] += self.members.pop(r)
                    self.mset[root] |= self.mset.pop(r)
                    self.deps[root] |= self.deps.pop(r)
                    self.nmap[root] |= self.nmap.pop(r)
                    self.ins[root] |= self.ins.pop(r)
                    self.first[root] = min(self.first[root], self.first.pop(r))
                    self.last.pop(r)
                self.ins[root] -= self.nmap[root]
            else:
                root = len(self.parent)
                self.parent[root] = root
                self.members[root] = []
                self.mset[root] = set()
                self.space[root] = space
                self.epoch[root] = epoch
                self.deps[root] = set()
                self.nmap[root] = set()
                self.ins[root] = set()
                self.first[root] = k
            self.members[root].append(k)
            self.mset[root].add(k)
            self.last[root] = k
            self.group_of[k] = root
            for v in eqn.invars:
                if not isinstance(v, Literal) and v not in self.nmap[root]:
                    self.ins[root].add(v)
                    self.deps[root].update(self.var_groups(v))
            if _monoid(eqn) is None:
                self.nmap[root].add(eqn.outvars[0])
        groups = {}
        for k in self.group_of:
            groups.setdefault(self.find(self.group_of[k]), []).append(k)
        return [sorted(m) for m in groups.values()]


# ---- building kernels -------------------------------------------------------------------

def _scalar(aval) -> ShapedArray:
    return ShapedArray((), aval.dtype, False)


def build_kernel(eqns, escaping, name: str, scalar_consts=None):
    """The ``kernel_p`` equation running ``eqns`` (one group, program order) as one loop
    nest; ``escaping`` are the values read outside the group (map outputs);
    ``scalar_consts`` maps rank-0 constant variables to their values (body literals)."""
    scalar_consts = scalar_consts or {}
    first = eqns[0]
    space = iteration_space(first)
    nd = len(space)
    env = {}
    inputs, in_vars, body_in = [], [], []
    in_index = {}
    body_eqns = []

    def read(v, dims):
        if isinstance(v, Literal):
            return Literal(v.val, _scalar(v.aval))
        if v in env:
            return env[v]
        if v in scalar_consts:
            return Literal(scalar_consts[v], _scalar(v.aval))
        if v.aval.ndim == 0:
            dims = ()
        key = (v, tuple(dims))
        if key not in in_index:
            bv = Var(_scalar(v.aval))
            in_index[key] = bv
            inputs.append(KernelInput(v.aval, dims))
            in_vars.append(v)
            body_in.append(bv)
        return in_index[key]

    ident = tuple(range(nd))
    outputs, outvars, body_out = [], [], []
    for e in eqns:
        ov = e.outvars[0]
        monoid = _monoid(e)
        if e.primitive is broadcast_in_dim_p:
            env[ov] = read(e.invars[0], e.params["broadcast_dimensions"])
        elif _is_identity(e):
            env[ov] = read(e.invars[0], ident)
        elif monoid is not None:
            val = read(e.invars[0], ident)
            axes = tuple(sorted(int(a) % nd for a in e.params["axes"]))
            outputs.append(KernelOutput("reduce", ov.aval, monoid, axes))
            outvars.append(ov)
            body_out.append(val)
            continue
        else:
            # operands rank 0 or of the space's shape (never an implicit size-1 broadcast)
            check_elementwise_operands(e, "the fusion pass")
            args = [read(v, ident if v.aval.ndim else ()) for v in e.invars]
            bo = Var(_scalar(ov.aval))
            body_eqns.append(JaxprEqn(e.primitive, args, [bo], e.params, e.source))
            env[ov] = bo
        if ov in escaping:
            outputs.append(KernelOutput("map", ov.aval))
            outvars.append(ov)
            body_out.append(env[ov])
    body = Jaxpr([], body_in, body_eqns, body_out)
    kernel = Kernel(space, inputs, body, outputs, name=name)
    return JaxprEqn(kernel_p, in_vars, outvars, {"kernel": kernel}, eqns[-1].source)


def _private_scalar_broadcasts(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` with every ``broadcast_in_dim`` of a rank-0 operand that several equations
    read replaced by one copy per reading equation, placed right before it (the original
    stays only where it is a program output).  Shared, such a broadcast joins one reader's
    kernel, which then writes the constant out as a full array for the other readers to
    read back (a ReLU's derivative wrote three 256 x 512 arrays of 1.0, 0.5 and 0.0 so);
    private, it is read inside every kernel as the scalar it is, or stays a broadcast view."""
    eqns = jaxpr.eqns
    readers = {}
    for e in eqns:
        for v in set(v for v in e.invars if not isinstance(v, Literal)):
            readers[v] = readers.get(v, 0) + 1
    outs = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    shared = {e.outvars[0]: e for e in eqns if e.primitive is broadcast_in_dim_p and
              e.invars[0].aval.shape == () and
              readers.get(e.outvars[0], 0) + (e.outvars[0] in outs) > 1}
    if not shared:
        return jaxpr
    new_eqns = []
    for e in eqns:
        if e.primitive is broadcast_in_dim_p and e.outvars[0] in shared:
            if e.outvars[0] in outs:
                new_eqns.append(e)
            continue
        own = {}
        for v in e.invars:
            if not isinstance(v, Literal) and v in shared and v not in own:
                own[v] = Var(v.aval, v.hint)
                new_eqns.append(shared[v].replace(outvars=[own[v]]))
        if own:
            e = e.replace(invars=[v if isinstance(v, Literal) else own.get(v, v)
                                  for v in e.invars])
        new_eqns.append(e)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, new_eqns, jaxpr.outvars)


def fuse(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Groups fusable equations of ``closed`` into ``kernel_p`` equations (see the module
    docstring); other equations are kept, in an order that respects every dependency and
    the order of effects."""
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    if not any(iteration_space(e) is not None for e in eqns):
        return closed
    jaxpr = _private_scalar_broadcasts(jaxpr)
    eqns = jaxpr.eqns
    # a kernel needs a computation; one equation alone over a scalar space stays as it is
    groups = [g for g in _Grouper(jaxpr).run()
              if any(_is_compute(eqns[k]) for k in g)
              and (len(g) > 1 or iteration_space(eqns[g[0]]) != ())]
    if not groups:
        return closed
    scalar_consts = {}
    for cv, c in zip(jaxpr.constvars, closed.consts):
        if cv.aval.ndim == 0:
            scalar_consts[cv] = host_value(c)
    # units: a kernel per group, every other equation alone
    unit_of = {}
    units = []
    for g in sorted(groups):
        for k in g:
            unit_of[k] = len(units)
        units.append(g)
    for k in range(len(eqns)):
        if k not in unit_of:
            unit_of[k] = len(units)
            units.append([k])
    producer = {}
    for k, e in enumerate(eqns):
        for v in e.outvars:
            producer[v] = unit_of[k]
    consumers = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if not isinstance(v, Literal):
                consumers.setdefault(v, set()).add(unit_of[k])
    outs = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    # dependencies between units (and a chain through effectful equations)
    succ = [set() for _ in units]
    npred = [0] * len(units)
    last_effect = None
    for u, members in enumerate(units):
        for k in members:
            for v in eqns[k].invars:
                p = producer.get(v) if not isinstance(v, Literal) else None
                if p is not None and p != u and u not in succ[p]:
                    succ[p].add(u)
                    npred[u] += 1
    for k, e in enumerate(eqns):
        if has_effects(e):
            u = unit_of[k]
            if last_effect is not None and u not in succ[last_effect] and u != last_effect:
                succ[last_effect].add(u)
                npred[u] += 1
            last_effect = u
    ready = [(units[u][0], u) for u in range(len(units)) if npred[u] == 0]
    heapq.heapify(ready)
    new_eqns = []
    counter = 0
    while ready:
        _, u = heapq.heappop(ready)
        members = units[u]
        if u >= len(groups):
            new_eqns.append(eqns[members[0]])
        else:
            idx = set(members)
            esc = set()
            for k in members:
                v = eqns[k].outvars[0]
                if v in outs or any(c != u for c in consumers.get(v, ())):
                    esc.add(v)
            new_eqns.append(build_kernel([eqns[k] for k in sorted(idx)], esc,
                                         f"fusion_{counter}", scalar_consts))
            counter += 1
        for w in succ[u]:
            npred[w] -= 1
            if npred[w] == 0:
                heapq.heappush(ready, (units[w][0], w))
    if len(new_eqns) != len(units):
        raise RuntimeError("fusion produced a cyclic program (a bug in the fusion pass)")
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, new_eqns, jaxpr.outvars),
                       closed.consts)
