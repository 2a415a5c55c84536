"""Vectorisation (vmap) as a trace.

Layer: core.  A ``BatchTracer`` is a value with one extra *mapped* axis ``bdim`` (or
``None``: the same value for every example).  ``BatchTrace`` sends each primitive to its
batching rule, which maps the batched operands to a batched result in one go; the rule
contract is in ``primitives``' docstring helpers below.
"""
from __future__ import annotations

import contextvars
import threading
from typing import NamedTuple

import numpy as np

from .trace import Trace, Tracer, get_aval

not_mapped = None


class BatchTracer(Tracer):
    """A batched value: ``val`` holds every example along axis ``bdim`` (None: unmapped)."""

    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    def __repr__(self):
        return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"

    @property
    def aval(self):
        aval = get_aval(self.val)
        if self.bdim is None:
            return aval
        shape = aval.shape[:self.bdim] + aval.shape[self.bdim + 1:]
        return aval.update(shape=shape)

    def full_lower(self):
        if self.bdim is None:
            from .trace import full_lower
            return full_lower(self.val)
        return self


class BatchAxis:
    """What a vmap maps over: ``size`` and ``name`` (kept for collectives).  ``spmd``: the
    axis is a mesh axis of a ``shard_map`` that checks replication (check_vma), whose
    devices share the values that are not mapped along it (see ``spmd_cotangent``)."""

    __slots__ = ("size", "name", "spmd", "split")

    def __init__(self, size, name=None, spmd=False, split=None):
        self.size = size
        self.name = name
        self.spmd = spmd
        # a mesh axis whose devices belong to several processes (jaxlite.distributed):
        # this process batches only its ``size`` devices along it; ``split`` is the
        # AxisSplit saying where they sit along the whole axis and which processes hold
        # the rest (collectives over the axis combine locally, then across them)
        self.split = split

    @property
    def global_size(self) -> int:
        """The size of the whole axis (``lax.axis_size``): ``size``, or over several
        processes, the devices of all of them along it."""
        return self.size if self.split is None else self.split.size


class AxisSplit(NamedTuple):
    """A mesh axis over several processes, as one process sees it: the axis has ``size``
    devices in all; this process's devices along it start at ``offset``; ``ranks`` are
    the processes that hold the other blocks of the axis (each block as long as this
    one), in the order of their blocks, and ``where`` names the program for errors."""
    size: int
    offset: int
    ranks: tuple
    where: str


class BatchTrace(Trace):
    """Applies batching rules; ``main.payload`` is the BatchAxis."""

    def pure(self, val):
        return BatchTracer(self, val, None)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        vals = [t.val for t in tracers]
        dims = [t.bdim for t in tracers]
        if all(d is None for d in dims) and primitive.kind != "collective" and vals and \
                primitive.kind in ("call", "control") and \
                _uses_axis(params, self.main.payload.name):
            # a program with a collective over this axis: its examples differ even though
            # no operand does, so it is batched (one operand made mapped) instead of run
            vals[0], dims[0] = broadcast_front(vals[0], self.main.payload.size), 0
        if all(d is None for d in dims) and primitive.kind != "collective":
            out = primitive.bind(*vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, None) for o in out]
            return BatchTracer(self, out, None)
        rule = primitive.batch
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
        if primitive.kind == "collective":
            # a collective this level resolves: a shard_map body's communication (what
            # jit's cost_analysis and as_text report; primitives/collectives.py)
            from ..primitives.collectives import note_manual
            note_manual(primitive, self.main.payload.name, params, vals, dims)
        token = _axis.set(self.main.payload)
        try:
            out, out_dims = rule(vals, dims, **params)
        finally:
            _axis.reset(token)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dims)]
        return BatchTracer(self, out, out_dims)


def _uses_axis(params, name) -> bool:
    """Whether a program among ``params`` (a call's or a control primitive's jaxprs, at
    any depth) has a collective over axis ``name``."""
    if name is None:
        return False
    from ..ir.jaxpr import ClosedJaxpr, Jaxpr
    for v in params.values():
        for p in (v if type(v) is tuple else (v,)):
            jaxpr = p.jaxpr if isinstance(p, ClosedJaxpr) else p
            if not isinstance(jaxpr, Jaxpr):
                continue
            for eqn in jaxpr.eqns:
                q = eqn.params
                if eqn.primitive.kind == "collective":
                    names = q.get("axes", ()) + (q["axis_name"],) if "axis_name" in q \
                        else q.get("axes", ())
                    if name in names:
                        return True
                elif _uses_axis(q, name):
                    return True
    return False


# The BatchAxis of the batching rule now running on this thread (None outside any).
_axis: contextvars.ContextVar = contextvars.ContextVar("jaxlite_batch_axis", default=None)


def current_axis():
    """The BatchAxis whose batching rule is running (rules that batch a program with
    ``batch_jaxpr`` keep its name, so collectives inside still find their axis)."""
    return _axis.get()


def find_axis(name):
    """The innermost enclosing vmap's main trace whose ``axis_name`` is ``name``; NameError
    ("unbound axis name") when there is none, as JAX."""
    from .trace import current_main
    main = current_main()        # this thread's stack, innermost first
    while main is not None:
        if main.trace_type is BatchTrace and main.alive and main.payload.name == name:
            return main
        main = main.parent
    raise NameError(f"unbound axis name: {name}. No enclosing vmap has axis_name={name!r}.")


def batched_along(x, name) -> bool:
    """Whether ``x`` varies along the enclosing vmap (or shard_map mesh axis) named
    ``name``: its batching tracer at that level has a mapped axis."""
    while isinstance(x, BatchTracer):
        if x._trace.main.payload.name == name:
            return x.bdim is not None
        x = x.val
    return False


# Mesh axes of shard_maps (with check_vma) open in any thread: while none is, the
# cotangent rule below costs one integer test.
spmd_levels = 0


class _ManualTracing(threading.local):
    """``depth`` > 0 while a shard_map's body is traced as its per-device program (the
    body of a manually partitioned module, transforms/shard_map.py ``per_device``): its
    collectives stay equations, ``lax.axis_index`` becomes one (a ``shard_slice`` of the
    positions) instead of the vmap's index; ``vma`` is set when the body checks
    replication (check_vma), whose reverse-mode rule for shared values needs the
    batched expansion (``spmd_cotangent`` then refuses: NotImplementedError)."""
    depth = 0
    vma = False


manual_tracing = _ManualTracing()


class ManualUnsupported(NotImplementedError):
    """A shard_map body that cannot be traced as one per-device program."""


def spmd_cotangent(primal, ct):
    """The cotangent of ``primal`` as a shard_map with check_vma defines it: a value the
    devices along a mesh axis share (``primal`` not mapped along it) has ONE cotangent,
    the sum of every device's contribution, so a ``ct`` that varies along such an axis is
    summed over it (``psum``), as JAX transposes its implicit broadcast (pvary) to a psum.
    Plain vmap axes are left alone (per-example gradients)."""
    if not spmd_levels or ct is None:
        return ct
    if manual_tracing.depth and manual_tracing.vma:
        raise ManualUnsupported("reverse-mode differentiation of values shared by the "
                                "devices inside a replication-checking shard_map body")
    from .staging import JaxprTrace
    from .trace import current_main
    names = []
    staged = None       # a program being staged inside the shard_map (a loop body ...)
    main = current_main()
    while main is not None:
        if main.trace_type is BatchTrace and main.alive and main.payload.spmd:
            if staged is not None:
                raise NotImplementedError(
                    f"reverse-mode differentiation inside a staged body (lax.scan, "
                    f"lax.cond, lax.while_loop, fori_loop, checkpoint) inside a shard_map "
                    f"over mesh axis {main.payload.name!r}: jaxlite cannot tell there which "
                    f"values are shared by the devices, whose gradients JAX sums over them. "
                    f"Take the gradient outside that body, or call the shard_map with "
                    f"check_vma=False (each device's own gradient).")
            a = main.payload.name
            if batched_along(ct, a) and not batched_along(primal, a):
                names.append(a)
        elif staged is None and isinstance(main.trace_type, type) and \
                issubclass(main.trace_type, JaxprTrace):
            staged = main
        main = main.parent
    if not names:
        return ct
    from ..primitives.collectives import bind_collective, psum_p
    return bind_collective(psum_p, ct, names[::-1])


def _has_collective(params) -> bool:
    from ..ir.jaxpr import ClosedJaxpr, Jaxpr
    todo = [v for v in params.values()]
    while todo:
        v = todo.pop()
        if isinstance(v, (tuple, list)):
            todo.extend(v)
        elif isinstance(v, (ClosedJaxpr, Jaxpr)):
            for eqn in getattr(v, "jaxpr", v).eqns:
                if eqn.primitive.kind == "collective":
                    return True
                todo.extend(eqn.params.values())
    return False


def lift_for_collectives(args, params):
    """``args`` (raw values: unmapped operands of the enclosing vmaps) lifted into the
    innermost named vmap when the programs in ``params`` apply a collective (the examples
    of that vmap then differ: the program is batched over it, not run once); None when no
    named vmap encloses this or no collective is in the programs."""
    env = axis_env()
    if not env or not _has_collective(params):
        return None
    main = find_axis(env[0][0])
    return [BatchTracer(BatchTrace(main), a, None) for a in args]


def axis_env() -> tuple:
    """``((name, size), ...)`` of the enclosing named vmaps, innermost first (with the
    AxisSplit third for a mesh axis over several processes): what a
    program traced here may depend on through its collectives (a trace cache keyed on
    the operands alone would reuse a program built for other axis sizes)."""
    from .trace import current_main
    out, main = [], current_main()
    while main is not None:
        if main.trace_type is BatchTrace and main.alive and main.payload.name is not None:
            p = main.payload
            out.append((p.name, p.size) if p.split is None else (p.name, p.size, p.split))
        main = main.parent
    return tuple(out)


# ---- helpers for rules ----------------------------------------------------------------

def moveaxis(x, src: int, dst: int):
    """``x`` with axis ``src`` moved to position ``dst`` (a transpose, or ``x`` itself)."""
    from ..primitives.shape import transpose_p
    nd = get_aval(x).ndim
    src, dst = src % nd, dst % nd
    if src == dst:
        return x
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return transpose_p.bind(x, permutation=tuple(perm))


def broadcast_front(x, size: int):
    """``x`` with a new leading axis of ``size`` (every example the same)."""
    from ..primitives.shape import broadcast_in_dim_p
    aval = get_aval(x)
    return broadcast_in_dim_p.bind(x, shape=(size,) + tuple(aval.shape),
                                   broadcast_dimensions=tuple(range(1, aval.ndim + 1)))


def to_front(x, d, size: int):
    """Moves mapped axis ``d`` to 0; an unmapped ``x`` (``d`` None) is broadcast to a
    leading axis of ``size``."""
    if d is None:
        return broadcast_front(x, size)
    return moveaxis(x, d, 0)


def size_of(args, dims) -> int:
    for x, d in zip(args, dims):
        if d is not None:
            return get_aval(x).shape[d]
    raise ValueError("no mapped operand")


def elementwise_batcher(prim):
    """Batching rule of an elementwise primitive (rank-0 operands and size-1 dimensions
    broadcast), as JAX's: when every operand that is not rank 0 is mapped at one axis with
    one shape, the primitive runs on them as they are; otherwise mapped operands move their
    axis to 0 and unmapped ones gain a leading axis of size 1 (the primitive broadcasts
    it), and a mapped operand of lower rank than the others gains trailing size-1 axes.
    Unmapped rank-0 operands stay as they are."""
    def rule(args, dims, **params):
        avals = [get_aval(x) for x in args]
        mapped = [(a, d) for a, d in zip(avals, dims) if d is not None]
        shape, d0 = mapped[0][0].shape, mapped[0][1]
        if all(a.shape == shape and d == d0 for a, d in zip(avals, dims) if a.ndim):
            return prim.bind(*args, **params), d0
        from ..primitives.shape import broadcast_in_dim_p
        new = []
        for x, a, d in zip(args, avals, dims):
            if d is None and a.ndim:
                # (np.int64 dimensions: JAX's batching prints them so)
                x = broadcast_in_dim_p.bind(
                    x, shape=(1,) + tuple(a.shape),
                    broadcast_dimensions=tuple(np.int64(i) for i in range(1, a.ndim + 1)))
            elif d is not None:
                x = moveaxis(x, d, 0)
            new.append(x)
        nd = max(get_aval(x).ndim for x in new)
        for i, (x, d) in enumerate(zip(new, dims)):
            r = get_aval(x).ndim
            if d is not None and r != nd:
                shp = tuple(get_aval(x).shape) + (1,) * (nd - r)
                new[i] = broadcast_in_dim_p.bind(x, shape=shp,
                                                 broadcast_dimensions=tuple(range(r)))
        return prim.bind(*new, **params), 0
    prim.batch = rule
    return rule


def same_shape_batcher(prim):
    """Batching rule of an elementwise primitive whose operands have one shape except
    rank-0 ones (``select_n``, ``clamp``: no size-1 broadcasting): mapped operands move
    their axis to 0; unmapped operands keep rank 0 or are broadcast along the new axis, a
    mapped operand that is rank 0 per example along the others too."""
    def rule(args, dims, **params):
        size = size_of(args, dims)
        shape = ()
        for x, d in zip(args, dims):
            s = get_aval(x).shape
            if d is not None:
                s = s[:d] + s[d + 1:]
            if s:
                shape = s
        ds = {d for d in dims if d is not None}
        if len(ds) == 1:
            (d0,) = ds
            if all((d is None and get_aval(x).ndim == 0) or
                   (d is not None and get_aval(x).ndim == len(shape) + 1)
                   for x, d in zip(args, dims)):
                return prim.bind(*args, **params), d0
        from ..primitives.shape import broadcast_in_dim_p
        new = []
        for x, d in zip(args, dims):
            aval = get_aval(x)
            if d is None:
                new.append(x if aval.ndim == 0 else broadcast_front(x, size))
            else:
                x = moveaxis(x, d, 0)
                if aval.ndim - 1 != len(shape):      # a mapped rank-0 operand
                    x = broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                                broadcast_dimensions=(0,))
                new.append(x)
        return prim.bind(*new, **params), 0
    prim.batch = rule
    return rule


def vectorized_batcher(prim):
    """Batching rule of a one-operand primitive that acts per element: the result is
    mapped where the operand is."""
    def rule(args, dims, **params):
        return prim.bind(*args, **params), dims[0]
    prim.batch = rule
    return rule


def _split_of(axis_name, size):
    """The AxisSplit of the axis whose rule is batching a program (a control-flow body, a
    custom rule) when that program is batched along the same axis: a mesh axis over
    several processes stays one inside it, so its collectives still cross processes."""
    cur = current_axis()
    if cur is not None and cur.name == axis_name and cur.size == size:
        return cur.split
    return None


def batch_jaxpr(closed, dims, size: int, axis_name=None, out_front=True):
    """The batched version of ``closed`` as a new ClosedJaxpr.

    ``dims[i]`` is input i's mapped axis or None.  Every mapped output is moved to axis 0
    when ``out_front`` (a bool, or a list per output forcing those outputs to be mapped at
    0).  Returns ``(batched_closed, out_dims)``.
    """
    from .staging import trace_to_jaxpr
    from .trace import new_main
    from ..ir.interpret import eval_jaxpr
    if axis_name is None and current_axis() is not None:
        axis_name = current_axis().name
    split = _split_of(axis_name, size)
    in_avals = []
    for a, d in zip(closed.in_avals, dims):
        in_avals.append(a if d is None else
                        a.update(shape=a.shape[:d] + (size,) + a.shape[d:]))
    store = []

    def fun(*args):
        with new_main(BatchTrace, BatchAxis(size, axis_name, split=split)) as main:
            trace = BatchTrace(main)
            ins = [BatchTracer(trace, x, d) for x, d in zip(args, dims)]
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
            outs = [trace.full_raise(o) for o in outs]
            force = out_front if isinstance(out_front, (list, tuple)) else \
                [False] * len(outs)
            vals, odims = [], []
            for o, f in zip(outs, force):
                if o.bdim is None and not f:
                    vals.append(o.val)
                    odims.append(None)
                else:
                    vals.append(to_front(o.val, o.bdim, size))
                    odims.append(0)
            store.append(odims)
            return vals

    return trace_to_jaxpr(fun, in_avals), store[0]


def batch_fun_flat(fn, args, dims, size: int, axis_name=None):
    """Runs ``fn(*args) -> list`` with ``args`` mapped along ``dims`` (None: unmapped);
    returns the outputs, each mapped at axis 0 (unmapped ones broadcast).  What rules use
    to batch a user callable (custom_jvp / custom_vjp rules)."""
    from .trace import new_main
    split = _split_of(axis_name, size)
    with new_main(BatchTrace, BatchAxis(size, axis_name, split=split)) as main:
        trace = BatchTrace(main)
        ins = [BatchTracer(trace, x, d) if d is not None else x for x, d in zip(args, dims)]
        outs = [trace.full_raise(o) for o in fn(*ins)]
        return [to_front(o.val, o.bdim, size) for o in outs]
