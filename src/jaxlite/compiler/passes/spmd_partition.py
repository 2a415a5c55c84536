"""SPMD partitioning: a program over sharded inputs as ONE per-device program plus
explicit collectives.

Layer: compiler.  ``partition(closed, in_specs, out_specs, axis_sizes)`` walks the
program's equations (calls inlined first) with the spec each value has, asks each
primitive's ``sharding`` rule (``sharding_propagation.rule_for``) how it runs on shards,
and returns a ``Partition``: its ``per_device`` function computes, from one device's
shards of the inputs, that device's shards of the outputs.  Between the local equations it
puts the communication the rules imply, as primitives over the mesh axes:

- an operand whose spec differs from the one the rule needs is *resharded*: the mesh axes
  it holds beyond the shared prefix are gathered (``all_gather``, tiled, minor axis first)
  and the axes it lacks are cut locally (``shard_slice``: each device keeps its block, no
  communication);
- a rule's ``reduce`` becomes an all-reduction of the partial results: ``psum``, ``pmax``
  or ``pmin``; a product, and/or/xor gathers the partials (``all_gather``) and reduces
  them locally;
- the outputs are resharded to ``out_specs``.

Local equations run with parameters in local sizes (``reshape``, ``broadcast_in_dim``,
``slice``, ``dynamic_slice``, ``gather``, ``scatter`` rewritten; any other primitive keeps
its parameters, which its rule promises are size-free where it keeps a dimension sharded).
Each local equation is checked: its abstract evaluation on the local operand shapes must
give the local result shapes the rule announces.  An equation that fails that check, or
that carries programs (``cond``, ``scan``, ``while``), runs whole: its operands gathered,
its results replicated (listed in ``Partition.replicated``, never silent).

The per-device function runs under ``shard_map`` over the mesh (transforms/jit.py does
that), where every collective is resolved by its batching rule; ``per_device_jaxpr()``
traces it into the printable per-device program, and ``collectives`` lists every
communication with its bytes (per device, the bytes of the buffer each device
contributes).
"""
from __future__ import annotations

import threading

import numpy as np

from ...core import sharding_rules as sr
from ...core.trace import get_aval
from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ...primitives.collectives import CollectiveOp  # one type with shard_map's (noted there)
from .inline import inline_calls
from .sharding_propagation import rule_for

__all__ = ["partition", "Partition", "CollectiveOp", "partitionable", "local_shape"]


_staging = threading.local()      # set while per_device_jaxpr() traces (no mesh bound)

_SIZE_FREE_PARAMS = ("out_sharding", "sharding")


def local_shape(shape, spec, axis_sizes) -> tuple:
    """The shape of one device's shard of an array of ``shape`` laid out by ``spec``."""
    return tuple(n // sr.axes_size(e, axis_sizes) for n, e in zip(shape, spec))


def _sub_programs(params):
    for v in params.values():
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            yield v
        elif isinstance(v, (tuple, list)):
            for w in v:
                if isinstance(w, (ClosedJaxpr, Jaxpr)):
                    yield w


def _all_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in _sub_programs(eqn.params):
            yield from _all_eqns(getattr(sub, "jaxpr", sub))


def partitionable(closed) -> str | None:
    """None when ``closed`` can run as per-device programs; else why not (an equation
    with an effect or a host callback, which must run once, not once per device)."""
    for eqn in _all_eqns(closed.jaxpr):
        p = eqn.primitive
        if p.effectful or p.host_callback:
            return f"{p.name} has an effect or calls the host"
    return None


def _local_params(prim, params, rule, in_avals, out_avals, axis_sizes, local_outs):
    """``params`` for the equation run on local shards: sharding parameters dropped (a
    shard has no mesh), and the sizes the primitive's ``local_params`` rule names made the
    shards' (a reshape's ``new_sizes`` where the rule keeps a dimension sharded)."""
    p = {k: (None if k in _SIZE_FREE_PARAMS else v) for k, v in params.items()}
    if prim.local_params is None:
        return p
    l_in = [local_shape(a.shape, s, axis_sizes) for a, s in zip(in_avals, rule.operands)]
    l_out = [local_shape(a.shape, s, axis_sizes) for a, s in zip(out_avals, local_outs)]
    return prim.local_params(p, rule.operands, l_in, l_out)


_NARROW = ("float16", "bfloat16")


def _narrow_partials(prim, rule, ops, lparams, out_avals):
    """``(operands, params)`` computing ``prim``'s local partial sums in float32 when the
    rule all-reduces them with "add" and a result is float16/bfloat16 (its float16/bfloat16
    operands converted exactly to float32, a ``preferred_element_type`` made float32);
    None otherwise, or where the primitive does not type that way."""
    from ...primitives.elementwise import convert_element_type_p
    if not any(m == "add" for m, _ in rule.reduce) or \
            not any(str(a.dtype) in _NARROW for a in out_avals):
        return None
    wide = np.dtype("float32")
    narrow = [str(get_aval(x).dtype) in _NARROW for x in ops]
    avals = [get_aval(x).update(dtype=wide, weak_type=False) if n else get_aval(x)
             for x, n in zip(ops, narrow)]
    params = dict(lparams)
    if params.get("preferred_element_type") is not None:
        params["preferred_element_type"] = wide
    try:
        got = prim.abstract_eval(*avals, **params)
    except Exception:   # noqa: BLE001 - it does not type in float32: keep the narrow sum
        return None
    got = list(got) if prim.multiple_results else [got]
    if any(str(a.dtype) in _NARROW and g.dtype != wide for g, a in zip(got, out_avals)):
        return None
    return [convert_element_type_p.bind(x, new_dtype=wide, weak_type=False) if n else x
            for x, n in zip(ops, narrow)], params


def _same_avals(got, want) -> bool:
    if len(got) != len(want):
        return False
    return all(tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype
               for g, w in zip(got, want))


class Partition:
    """A program partitioned over a mesh of ``axis_sizes`` ({name: size}).

    ``in_specs``/``out_specs``: one spec per input/output (tuples of tuples of mesh axis
    names); ``per_device(*shards)``: one device's output shards from its input shards
    (run it under ``shard_map`` with those specs); ``collectives``: the ``CollectiveOp``s
    of the last run or trace; ``notes``: why the rules resharded operands;
    ``replicated``: notes on equations run whole."""

    def __init__(self, closed, in_specs, out_specs, axis_sizes):
        self.closed = inline_calls(closed)
        self.axis_sizes = dict(axis_sizes)
        self.in_specs = [tuple(tuple(e) for e in s) for s in in_specs]
        self.out_specs = [tuple(tuple(e) for e in s) for s in out_specs]
        self.collectives: list = []
        self.replicated: list = []
        self.notes: list = []
        self._memo: dict = {}
        self._jaxpr = None

    # ---- communication -------------------------------------------------------------

    def _note(self, kind, axes, x, where):
        a = get_aval(x)
        nbytes = int(np.prod(a.shape, dtype=np.int64)) * np.dtype(a.dtype).itemsize
        self.collectives.append(CollectiveOp(kind, tuple(axes), tuple(a.shape),
                                             str(np.dtype(a.dtype)), nbytes, where))

    def _gather(self, x, axis, dim, where):
        from ...primitives.collectives import all_gather_p, bind_named
        self._note("all-gather", (axis,), x, where)
        params = dict(axis_name=axis, all_gather_dimension=dim,
                      axis_size=self.axis_sizes[axis], tiled=True)
        if getattr(_staging, "on", False):
            return all_gather_p.bind(x, **params)
        return bind_named(all_gather_p, x, **params)

    def _stack(self, x, axis, where):
        from ...primitives.collectives import all_gather_p, bind_named
        self._note("all-gather", (axis,), x, where)
        params = dict(axis_name=axis, all_gather_dimension=0,
                      axis_size=self.axis_sizes[axis], tiled=False)
        if getattr(_staging, "on", False):
            return all_gather_p.bind(x, **params)
        return bind_named(all_gather_p, x, **params)

    def _cut(self, x, axis, dim):
        from ...primitives.collectives import bind_named
        from ...primitives.shard_slice import shard_slice_p
        params = dict(axis_name=axis, dimension=dim, axis_size=self.axis_sizes[axis])
        if getattr(_staging, "on", False):
            return shard_slice_p.bind(x, **params)
        return bind_named(shard_slice_p, x, **params)

    def _reshard(self, x, have, want, where):
        """``x`` (one device's shard laid out by ``have``) laid out by ``want``."""
        have, want = tuple(have), tuple(want)
        if have == want:
            return x
        key = (id(x), have, want)       # one value resharded once (its readers share it)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is x:
            return hit[1]
        src = x
        keep = []
        for d, (h, w) in enumerate(zip(have, want)):
            k = 0
            while k < min(len(h), len(w)) and h[k] == w[k]:
                k += 1
            keep.append(k)
            for a in reversed(h[k:]):            # minor axis first
                x = self._gather(x, a, d, where)
        for d, (w, k) in enumerate(zip(want, keep)):
            for a in w[k:]:                      # major axis first
                x = self._cut(x, a, d)
        self._memo[key] = (src, x)
        return x

    def _all_reduce(self, x, monoid, axes, where):
        from ...primitives import collectives as c, reduction as r
        dtype = np.dtype(get_aval(x).dtype)
        prim = {"add": c.psum_p, "max": c.pmax_p, "min": c.pmin_p}.get(monoid)
        if prim is not None and dtype != np.bool_:
            self._note(f"all-reduce {monoid}", axes, x, where)
            if getattr(_staging, "on", False):
                return prim.bind(x, axes=tuple(axes))
            return c.bind_collective(prim, x, tuple(axes))
        red = {"mul": r.reduce_prod_p, "and": r.reduce_and_p, "or": r.reduce_or_p,
               "xor": r.reduce_xor_p, "max": r.reduce_max_p, "min": r.reduce_min_p}.get(monoid)
        if red is None:
            raise NotImplementedError(f"{where}: no all-reduction for monoid {monoid!r} "
                                      f"of dtype {dtype}")
        for a in axes:
            x = self._stack(x, a, where)
        return red.bind(x, axes=tuple(range(len(axes))))

    # ---- the per-device program ----------------------------------------------------

    def per_device(self, *shards):
        """One device's output shards (a list) from its input shards (``in_specs``)."""
        from ...primitives.collectives import bind_named  # noqa: F401  (import cycle check)
        self.collectives, self.replicated, self.notes = [], [], []
        self._memo = {}
        jaxpr, axis_sizes = self.closed.jaxpr, self.axis_sizes
        env, held = {}, {}

        def read(v):
            if isinstance(v, Literal):
                return v.val, sr.replicated(len(v.aval.shape))
            return env[v], held[v]
        for v, c in zip(jaxpr.constvars, self.closed.consts):
            env[v], held[v] = c, sr.replicated(len(v.aval.shape))
        for v, x, s in zip(jaxpr.invars, shards, self.in_specs):
            env[v], held[v] = x, s
        for k, eqn in enumerate(jaxpr.eqns):
            prim, params = eqn.primitive, eqn.params
            vals, specs = zip(*[read(v) for v in eqn.invars]) if eqn.invars else ((), ())
            in_avals = [v.aval for v in eqn.invars]
            out_avals = [v.aval for v in eqn.outvars]
            where = f"equation {k} ({prim.name})"
            rule = rule_for(prim, specs, in_avals, out_avals, axis_sizes, params)
            if prim.constraint:
                if rule.note:   # a reshard it asks for, or a dimension it cannot split
                    self.notes.append(f"{where}: {rule.note}")
                out = self._reshard(vals[0], specs[0], rule.outputs[0], where)
                env[eqn.outvars[0]], held[eqn.outvars[0]] = out, rule.outputs[0]
                continue
            outs, out_specs = self._local(prim, params, rule, vals, specs, in_avals,
                                          out_avals, where)
            for v, o, s in zip(eqn.outvars, outs, out_specs):
                env[v], held[v] = o, s
        results = []
        for i, (v, want) in enumerate(zip(jaxpr.outvars, self.out_specs)):
            x, s = read(v)
            results.append(self._reshard(x, s, want, f"output {i}"))
        return results

    def _local(self, prim, params, rule, vals, specs, in_avals, out_avals, where):
        """The equation on local shards (its results and their specs), or run whole."""
        axis_sizes = self.axis_sizes
        local_outs = rule.local_outputs if rule.local_outputs is not None else rule.outputs
        ok = not any(True for _ in _sub_programs(params))
        if ok:
            lparams = _local_params(prim, params, rule, in_avals, out_avals, axis_sizes,
                                    local_outs)
            l_in = [a.update(shape=local_shape(a.shape, s, axis_sizes))
                    for a, s in zip(in_avals, rule.operands)]
            l_out = [a.update(shape=local_shape(a.shape, s, axis_sizes))
                     for a, s in zip(out_avals, local_outs)]
            try:
                got = prim.abstract_eval(*l_in, **lparams)
                got = list(got) if prim.multiple_results else [got]
                ok = _same_avals(got, l_out)
            except Exception:   # noqa: BLE001 - the local form does not type: run whole
                ok = False
        if not ok:
            if any(any(s) for s in specs) or any(any(s) for s in rule.outputs):
                self.replicated.append(f"{where}: run whole on every device (its operands "
                                       f"gathered)")
            ops = [self._reshard(x, s, sr.replicated(len(s)), where)
                   for x, s in zip(vals, specs)]
            res = prim.bind(*ops, **params)
            res = list(res) if prim.multiple_results else [res]
            return res, [sr.replicated(len(a.shape)) for a in out_avals]
        if rule.note and (any(tuple(s) != tuple(r) for s, r in zip(specs, rule.operands))
                          or rule.local_outputs is not None):
            self.notes.append(f"{where}: {rule.note}")
        ops = [self._reshard(x, s, r, where) for x, s, r in zip(vals, specs, rule.operands)]
        narrow = _narrow_partials(prim, rule, ops, lparams, out_avals)
        if narrow is not None:
            # partial sums of float16/bfloat16 results: each device sums in float32, the
            # all-reduce adds float32 partials, the total is rounded once (as XLA does, so
            # the result equals the one-device one)
            ops, lparams = narrow
        res = prim.bind(*ops, **lparams)
        res = list(res) if prim.multiple_results else [res]
        for monoid, axes in rule.reduce:
            res = [self._all_reduce(r, monoid, axes, where) for r in res]
        if narrow is not None:
            from ...primitives.elementwise import convert_element_type_p
            res = [convert_element_type_p.bind(r, new_dtype=a.dtype, weak_type=a.weak_type)
                   if get_aval(r).dtype != a.dtype else r for r, a in zip(res, out_avals)]
        if rule.local_outputs is not None:
            res = [self._reshard(r, lo, o, where)
                   for r, lo, o in zip(res, rule.local_outputs, rule.outputs)]
        return res, list(rule.outputs)

    # ---- printing ------------------------------------------------------------------

    def local_in_avals(self) -> list:
        return [v.aval.update(shape=local_shape(v.aval.shape, s, self.axis_sizes))
                for v, s in zip(self.closed.jaxpr.invars, self.in_specs)]

    def per_device_jaxpr(self) -> ClosedJaxpr:
        """The per-device program as a ClosedJaxpr (local shapes; its collectives name the
        mesh axes), traced from ``per_device``."""
        if self._jaxpr is None:
            from ...core.staging import trace_to_jaxpr
            _staging.on = True
            try:
                self._jaxpr = trace_to_jaxpr(lambda *a: self.per_device(*a),
                                             self.local_in_avals())
            finally:
                _staging.on = False
            self._traced = (list(self.collectives), list(self.replicated), list(self.notes))
        self.collectives, self.replicated, self.notes = map(list, self._traced)
        return self._jaxpr

    def summary(self) -> dict:
        """``{"collectives": count, "collective bytes": bytes}`` of the per-device program
        (local slices are not communication and are not counted)."""
        self.per_device_jaxpr()
        return {"collectives": float(len(self.collectives)),
                "collective bytes": float(sum(c.bytes for c in self.collectives))}

    def as_text(self) -> str:
        """The per-device program, then one line per collective with its bytes, and why
        operands were resharded or equations run whole."""
        closed = self.per_device_jaxpr()
        mesh = ", ".join(f"{a}={n}" for a, n in self.axis_sizes.items())
        lines = [f"# SPMD partitioned over mesh ({mesh}): the program every device runs "
                 f"on its shards",
                 "# inputs: " + ", ".join(sr.fmt(s) for s in self.in_specs),
                 "# outputs: " + ", ".join(sr.fmt(s) for s in self.out_specs),
                 str(closed),
                 f"# collectives: {len(self.collectives)}, "
                 f"{sum(c.bytes for c in self.collectives)} bytes per device"]
        for c in self.collectives:
            lines.append(f"#   {c.kind} over {c.axes}: {c.dtype}{list(c.shape)} "
                         f"({c.bytes} bytes) for {c.where}")
        for note in self.notes:
            lines.append(f"# why: {note}")
        for note in self.replicated:
            lines.append(f"# replicated: {note}")
        return "\n".join(lines)


def partition(closed, in_specs, out_specs, axis_sizes) -> Partition:
    """``closed`` (a ClosedJaxpr over global shapes) partitioned for inputs laid out by
    ``in_specs`` and outputs wanted as ``out_specs`` on a mesh of ``axis_sizes``.

    Raises ValueError for specs that do not fit their values (see ``check_spec``)."""
    jaxpr = closed.jaxpr
    for i, (v, s) in enumerate(zip(jaxpr.invars, in_specs)):
        sr.check_spec(s, v.aval.shape, axis_sizes, f"input {i} spec")
    for i, (v, s) in enumerate(zip(jaxpr.outvars, out_specs)):
        sr.check_spec(s, v.aval.shape, axis_sizes, f"output {i} spec")
    return Partition(closed, in_specs, out_specs, axis_sizes)
