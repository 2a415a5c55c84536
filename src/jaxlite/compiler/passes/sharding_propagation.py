"""Sharding propagation: the specs of every value of a program over sharded inputs.

Layer: compiler.  ``propagate(closed_jaxpr, in_specs, axis_sizes)`` walks the equations
forward, asks each primitive's ``sharding`` rule (``core.sharding_rules``; the fallback,
everything replicated, for a primitive without one) how it runs on shards, and returns the
results' specs and a report of every resharding and every all-reduction it implies.  Calls
(``jit``, custom derivatives, ``checkpoint``) and control flow (``cond``, ``scan``,
``while``) are walked into by their rules.  The SPMD partitioner builds on ``analyze``,
which also returns the rule of each equation and the spec of each variable.

Specs are tuples with one entry per dimension, each a tuple of mesh axis names (see
``core.sharding_rules``); ``spec_of`` turns a ``PartitionSpec`` into one.
"""
from __future__ import annotations

from typing import NamedTuple

from ...core import sharding_rules as sr
from ...core.sharding_rules import ShardingRule
from ...ir.jaxpr import ClosedJaxpr, Literal

__all__ = ["propagate", "analyze", "spec_of", "rule_for", "ReportEntry", "Propagation"]


class ReportEntry(NamedTuple):
    """One equation whose operands were resharded or whose results are all-reduced.

    ``index``: the equation's position in its program; ``path``: the positions of the
    enclosing equations (empty at top level; ``(4, "body")``-like for a scan's body);
    ``primitive``: its name; ``resharded``: ``(operand number, spec it had, spec it needs)``
    triples; ``reduce``: the rule's ``(monoid, axes)`` all-reductions; ``note``: why."""
    index: int
    primitive: str
    resharded: tuple
    reduce: tuple
    note: str | None
    path: tuple = ()


class Propagation(NamedTuple):
    """What ``analyze`` finds: ``out_specs`` (one per program result), ``rules`` (the
    ``ShardingRule`` of each equation, in order), ``specs`` ({variable: spec} for every
    input, constant and equation result) and ``report`` (a list of ``ReportEntry``)."""
    out_specs: list
    rules: list
    specs: dict
    report: list


def spec_of(partition_spec, ndim: int) -> tuple:
    """The spec tuple (one tuple of mesh axis names per dimension) of ``partition_spec``
    for an array of rank ``ndim``: None is replicated; a ``PartitionSpec`` (or a tuple of
    entries, each None, an axis name or a tuple of names) is padded with whole dimensions.

    Raises ValueError when it has more entries than ``ndim``."""
    if partition_spec is None:
        return sr.replicated(ndim)
    norm = getattr(partition_spec, "_normalized", None)
    if norm is not None:
        return tuple(tuple(e) for e in norm(ndim))
    entries = tuple(partition_spec)
    if len(entries) > ndim:
        raise ValueError(f"partition spec {partition_spec} has {len(entries)} entries, more "
                         f"than the rank {ndim} of the array it shards")
    out = []
    for e in entries:
        if e is None:
            out.append(())
        elif isinstance(e, str):
            out.append((e,))
        else:
            out.append(tuple(e))
    return tuple(out) + sr.replicated(ndim - len(out))


def rule_for(prim, in_specs, in_avals, out_avals, axis_sizes, params) -> ShardingRule:
    """The primitive's rule applied (its fallback when it has none), checked: one spec per
    operand and result, each valid for its shape on the mesh (a bad rule raises
    AssertionError naming the primitive; it never passes a wrong layout on).  A rule's
    ``reslice`` hint is applied here: ``outputs`` are then the results' final specs and
    ``local_outputs`` the local computation's."""
    in_specs = [tuple(tuple(e) for e in s) for s in in_specs]
    if prim.sharding is None:
        rule = sr.fallback(in_specs, in_avals, out_avals)
    else:
        rule = prim.sharding(in_specs, list(in_avals), axis_sizes, **params)
    ops = [tuple(tuple(e) for e in s) for s in rule.operands]
    outs = [tuple(tuple(e) for e in s) for s in rule.outputs]
    if len(ops) != len(in_avals) or len(outs) != len(out_avals):
        raise AssertionError(f"sharding rule of {prim.name} gave {len(ops)} operand and "
                             f"{len(outs)} result specs for {len(in_avals)} operands and "
                             f"{len(out_avals)} results")
    for what, specs, avals in (("operand", ops, in_avals), ("result", outs, out_avals)):
        for i, (s, a) in enumerate(zip(specs, avals)):
            try:
                sr.check_spec(s, a.shape, axis_sizes, f"{prim.name} {what} {i} spec")
            except ValueError as e:
                raise AssertionError(f"sharding rule of {prim.name} is wrong: {e}") from None
    red = tuple((m, tuple(ax)) for m, ax in rule.reduce if ax)
    hint = rule.reslice
    rule = rule._replace(operands=ops, outputs=outs, reduce=red, reslice=None,
                         local_outputs=None)
    if hint is not None:
        rule = _apply_reslice(rule, hint, out_avals, axis_sizes)
    return rule


def _apply_reslice(rule, hint, out_avals, axis_sizes) -> ShardingRule:
    """``rule`` with each result cut further along the dimensions where its local spec is
    whole and ``hint`` shards it, when those mesh axes divide the dimension and no other
    dimension of that result holds them (a slice of a value each device holds whole)."""
    final, notes = [], []
    for k, (local, want, a) in enumerate(zip(rule.outputs, hint, out_avals)):
        spec = list(local)
        if want is not None and len(want) == len(spec):
            for d, axes in enumerate(want):
                axes = tuple(axes)
                if spec[d] or not axes:
                    continue
                held = {x for i, e in enumerate(spec) if i != d for x in e}
                if held.intersection(axes) or a.shape[d] % sr.axes_size(axes, axis_sizes):
                    continue
                spec[d] = axes
        spec = tuple(spec)
        if spec != local:
            notes.append(f"result {k} {sr.fmt(local)} sliced to {sr.fmt(spec)} (the operand's "
                         f"sharding, as GSPMD leaves it)")
        final.append(spec)
    if final == list(rule.outputs):
        return rule
    note = "; ".join(([rule.note] if rule.note else []) + notes)
    return rule._replace(outputs=final, local_outputs=list(rule.outputs), note=note)


def _spec_of_atom(v, specs):
    if isinstance(v, Literal):
        return sr.replicated(len(v.aval.shape))
    return specs[v]


def walk(jaxpr, in_specs, axis_sizes, consts_specs=None, path=()) -> Propagation:
    """``analyze`` of an open ``Jaxpr`` (constants replicated unless ``consts_specs``)."""
    specs = {}
    for v in jaxpr.constvars:
        specs[v] = sr.replicated(len(v.aval.shape))
    if consts_specs is not None:
        for v, s in zip(jaxpr.constvars, consts_specs):
            specs[v] = tuple(s)
    if len(in_specs) != len(jaxpr.invars):
        raise ValueError(f"got {len(in_specs)} input specs for a program of "
                         f"{len(jaxpr.invars)} inputs")
    for i, (v, s) in enumerate(zip(jaxpr.invars, in_specs)):
        specs[v] = sr.check_spec(s, v.aval.shape, axis_sizes, f"input {i} spec")
    rules, report = [], []
    for k, eqn in enumerate(jaxpr.eqns):
        ins = [_spec_of_atom(v, specs) for v in eqn.invars]
        in_avals = [v.aval for v in eqn.invars]
        out_avals = [v.aval for v in eqn.outvars]
        rule = rule_for(eqn.primitive, ins, in_avals, out_avals, axis_sizes, eqn.params)
        rules.append(rule)
        for v, s in zip(eqn.outvars, rule.outputs):
            specs[v] = s
        moved = tuple((i, a, b) for i, (a, b) in enumerate(zip(ins, rule.operands)) if a != b)
        if moved or rule.reduce or rule.note:
            report.append(ReportEntry(k, eqn.primitive.name, moved, rule.reduce, rule.note,
                                      tuple(path)))
        for sub_path, entries in rule.inner:
            report.extend(e._replace(path=tuple(path) + (k,) + tuple(sub_path) + e.path)
                          for e in entries)
    outs = [_spec_of_atom(v, specs) for v in jaxpr.outvars]
    return Propagation(outs, rules, specs, report)


def analyze(closed: ClosedJaxpr, in_specs, axis_sizes) -> Propagation:
    """Propagates ``in_specs`` (one spec per program input; None: replicated) through
    ``closed`` on a mesh of ``axis_sizes`` ({name: size}).  Raises ValueError for a spec that
    does not fit its input (wrong length, unknown or repeated axis, indivisible size)."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    in_specs = list(in_specs)
    if len(in_specs) != len(jaxpr.invars):
        raise ValueError(f"got {len(in_specs)} input specs for a program of "
                         f"{len(jaxpr.invars)} inputs")
    specs = [sr.replicated(len(v.aval.shape)) if s is None else s
             for v, s in zip(jaxpr.invars, in_specs)]
    return walk(jaxpr, specs, dict(axis_sizes))


def propagate(closed: ClosedJaxpr, in_specs, axis_sizes):
    """``(out_specs, report)``: the spec of each result of ``closed`` when its inputs have
    ``in_specs`` on a mesh of ``axis_sizes``, and the list of ``ReportEntry`` (what was
    resharded or replicated and why, which all-reductions were inserted)."""
    p = analyze(closed, in_specs, axis_sizes)
    return p.out_specs, p.report


# ---- rules of the primitives that carry programs (set in primitives/control*.py) ---------

def _inner_note(report) -> str | None:
    if not report:
        return None
    return f"{len(report)} equation(s) inside resharded or reduced (see the report)"


def call_rule(in_specs, in_avals, axis_sizes, *, jaxpr, **params) -> ShardingRule:
    """A call of the closed program ``jaxpr`` on all the operands: its equations are
    walked with the operands' specs (nothing is resharded at the call)."""
    p = walk(jaxpr.jaxpr, in_specs, axis_sizes)
    return ShardingRule(list(in_specs), p.out_specs, (), _inner_note(p.report),
                        (((), p.report),) if p.report else ())


def cond_rule(in_specs, in_avals, axis_sizes, *, branches, **params) -> ShardingRule:
    """Each branch walked with the operands' specs (the index is a scalar); a result on
    which the branches disagree is replicated (each branch gathers it before returning)."""
    args = list(in_specs[1:])
    walks = [walk(b.jaxpr, args, axis_sizes) for b in branches]
    outs, notes = [], []
    for i, ss in enumerate(zip(*[w.out_specs for w in walks])):
        if all(s == ss[0] for s in ss):
            outs.append(ss[0])
        else:
            outs.append(sr.replicated(len(ss[0])))
            notes.append(f"result {i}: the branches give {', '.join(sr.fmt(s) for s in ss)}, "
                         f"replicated")
    inner = tuple(((f"branch{j}",), w.report) for j, w in enumerate(walks) if w.report)
    note = "; ".join(notes + ([_inner_note([e for w in walks for e in w.report])]
                              if inner else [])) or None
    return ShardingRule(list(in_specs), outs, (), note, inner)


def _fixed_carry(body_walk, carry0, n_carry, axis_sizes, max_iter=4):
    """Carry specs stable under the body: start from the initial values' specs and merge
    in what the body returns until nothing changes (replicated if that does not settle).
    Returns ``(carry_specs, last walk)``."""
    carry = list(carry0)
    for _ in range(max_iter):
        w = body_walk(carry)
        new = [sr.merge([c, o], len(c), axis_sizes)
               for c, o in zip(carry, w.out_specs[:n_carry])]
        if new == carry:
            return carry, w
        carry = new
    carry = [sr.replicated(len(c)) for c in carry]
    return carry, body_walk(carry)


def scan_rule(in_specs, in_avals, axis_sizes, *, jaxpr, num_consts, num_carry, length,
              **params) -> ShardingRule:
    """The scanned operands are gathered along their leading (scanned) axis; the carry
    takes the specs that the initial values and the body agree on (the body's carry results
    are resharded to them); the stacked results lead with a whole axis."""
    consts = list(in_specs[:num_consts])
    init = list(in_specs[num_consts:num_consts + num_carry])
    xs = [((),) + tuple(s[1:]) for s in in_specs[num_consts + num_carry:]]

    def body(carry):
        return walk(jaxpr.jaxpr, consts + carry + [s[1:] for s in xs], axis_sizes)
    carry, w = _fixed_carry(body, init, num_carry, axis_sizes)
    ops = consts + carry + xs
    ys = [((),) + tuple(s) for s in w.out_specs[num_carry:]]
    notes = [f"operand {i} {sr.fmt(a)} -> {sr.fmt(b)}: "
             + ("scan reads one slice of its leading axis per step"
                if i >= num_consts + num_carry else "the loop carry's spec")
             for i, (a, b) in enumerate(zip(in_specs, ops)) if tuple(a) != tuple(b)]
    notes += [f"body carry result {i} {sr.fmt(o)} -> {sr.fmt(c)}"
              for i, (o, c) in enumerate(zip(w.out_specs[:num_carry], carry)) if o != c]
    if w.report:
        notes.append(_inner_note(w.report))
    return ShardingRule(ops, carry + ys, (), "; ".join(notes) or None,
                        ((("body",), w.report),) if w.report else ())


def while_rule(in_specs, in_avals, axis_sizes, *, cond_jaxpr, body_jaxpr, cond_nconsts,
               body_nconsts, **params) -> ShardingRule:
    """The carry takes the specs that the initial values and the body agree on; the
    predicate is a scalar (whole on every device)."""
    cc = list(in_specs[:cond_nconsts])
    bc = list(in_specs[cond_nconsts:cond_nconsts + body_nconsts])
    init = list(in_specs[cond_nconsts + body_nconsts:])

    def body(carry):
        return walk(body_jaxpr.jaxpr, bc + carry, axis_sizes)
    carry, w = _fixed_carry(body, init, len(init), axis_sizes)
    wc = walk(cond_jaxpr.jaxpr, cc + carry, axis_sizes)
    ops = cc + bc + carry
    notes = [f"operand {i} {sr.fmt(a)} -> {sr.fmt(b)}: the loop carry's spec"
             for i, (a, b) in enumerate(zip(in_specs, ops)) if tuple(a) != tuple(b)]
    notes += [f"body carry result {i} {sr.fmt(o)} -> {sr.fmt(c)}"
              for i, (o, c) in enumerate(zip(w.out_specs, carry)) if o != c]
    inner = tuple((name, x.report) for name, x in ((("cond",), wc), (("body",), w))
                  if x.report)
    if inner:
        notes.append(_inner_note(wc.report + w.report))
    return ShardingRule(ops, carry, (), "; ".join(notes) or None, inner)
