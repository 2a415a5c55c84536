"""``shard_map`` and ``pmap``: one per-device program over the devices of a mesh.

Layer: transforms.  ``shard_map(f, mesh=, in_specs=, out_specs=)`` runs ``f`` once per
device on that device's shard of each argument; collectives inside (``lax.psum`` over a
mesh axis name, ``all_gather``, ``ppermute`` ...) combine the devices along that axis.

How it runs: the per-device program is executed for all devices of the mesh at once, as
one program batched over the mesh axes (nested ``vmap`` with ``axis_name`` set to each
manual mesh axis, outermost first).  Each argument is viewed as a stack of its shards
(reshape and transpose of the global value: the stacked axes come first, in mesh order),
and each collective is resolved by its batching rule into ordinary array operations over
the stacked axis: that batching rule *is* the collective's semantics across devices.  The
results are unstacked the same way and placed on the mesh's devices by ``out_specs``.
So ``shard_map`` is deterministic, cannot deadlock whatever the number of devices, and is
differentiable and batchable exactly as the batched program is.  Under ``jit``, ``grad``
or ``vmap`` the expansion is traced inline.

``pmap(f, axis_name)`` is ``shard_map`` over a one-axis mesh of the first ``n`` devices,
``f`` seeing each device's slice without the mapped axis.
"""
from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from .._traceback import api_boundary as _api_boundary
from .._traceback import user_stacklevel as _user_stacklevel
from ..core.array import ArrayImpl
from ..core.sharded import ShardedArray, from_global, spec_tuple
from ..core.trace import Tracer, is_tracing as _is_tracing
from ..runtime.buffer import host_view
from ..tree_util import (data_flatten as tree_flatten, data_structure as tree_structure,
                         tree_unflatten)


class _InferType:
    def __repr__(self):
        return "Infer"


Infer = _InferType()


def _entry_axes(entry) -> tuple:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _spec_axes(spec, ndim: int, what: str, k: int = 0) -> tuple:
    """The spec as one tuple of mesh axis names per dimension; ValueError for a spec
    longer than the rank."""
    entries = tuple(spec)
    if len(entries) > ndim:
        value = "argument" if what == "in_specs" else "output"
        hint = " (for a rank-0 value, use P())" if ndim == 0 else ""
        raise ValueError(f"shard_map was given an {what} entry which is too long for its "
                         f"value: {what} entry {spec} (for {value} {k}) has length "
                         f"{len(entries)}, but that {value} has rank {ndim}{hint}. A spec "
                         f"may have at most one entry per dimension.")
    return tuple(_entry_axes(e) for e in entries) + ((),) * (ndim - len(entries))


def _shape_of(x, k: int) -> tuple:
    """The shape of argument leaf ``k``; TypeError for a value that is not an array."""
    if isinstance(x, Tracer):
        return tuple(x.aval.shape)
    if isinstance(x, (ArrayImpl, np.ndarray, np.generic, bool, int, float, complex)):
        return tuple(np.shape(x))
    raise TypeError(f"shard_map argument {k} of type {type(x)} is not a valid jaxlite type "
                    f"(an array or a scalar).")


def _as_pspec(spec_axes: tuple):
    from ..sharding import PartitionSpec
    return PartitionSpec(*[None if not e else e[0] if len(e) == 1 else e for e in spec_axes])


def _check_devices(dyn, mesh) -> None:
    """Arguments committed elsewhere than the mesh's devices: ValueError, as JAX."""
    mesh_devs = list(mesh.devices.flat)
    ids = sorted(d.id for d in mesh_devs)
    for k, x in enumerate(dyn):
        if type(x) is ShardedArray:
            devs = sorted(d.id for d in x.sharding._device_assignment)
        elif type(x) is ArrayImpl and x._committed:
            devs = [x._buf.device.id]
        else:
            continue
        if devs != ids:
            raise ValueError(f"Received incompatible devices for shard_map: argument {k} "
                             f"of shape {x.aval.str_short()} is on devices {devs}, the mesh "
                             f"on devices {ids}.")


def _is_spec_leaf(x) -> bool:
    from ..sharding import PartitionSpec
    return x is None or isinstance(x, PartitionSpec)


def _prefix_leaves(specs, tree, what: str) -> list:
    """One spec per leaf of ``tree``: ``specs`` is a pytree prefix of it (a spec, or None,
    at a node applies to every leaf below; containers must be of the same type and
    length).  ValueError naming ``what`` when it is no prefix."""
    spec_leaves, spec_def = tree_flatten(specs, is_leaf=_is_spec_leaf)
    try:
        subtrees = spec_def.flatten_up_to(tree)
    except (ValueError, TypeError):
        raise ValueError(f"shard_map {what} is not a pytree prefix of the "
                         f"{'arguments' if what == 'in_specs' else 'outputs'}: {what} has "
                         f"structure {spec_def}, the value {tree_structure(tree)}.") from None
    out: list = []
    for s, sub in zip(spec_leaves, subtrees):
        out.extend([s] * len(tree_flatten(sub)[0]))
    return out


def _check_spec_tree(specs, manual, what: str) -> None:
    """Every leaf of ``specs`` is a PartitionSpec (TypeError) naming only manual mesh axes
    (ValueError), checked before ``f`` runs, as JAX."""
    from ..sharding import PartitionSpec
    leaves = tree_flatten(specs)[0]     # None leaves vanish: a None spec passes as is
    bad = [x for x in leaves if not isinstance(x, PartitionSpec)]
    if bad:
        raise TypeError(f"shard_map {what} must be a pytree of PartitionSpec instances (P() "
                        f"for a replicated value), but it holds {bad[0]!r} of type "
                        f"{type(bad[0]).__name__}.")
    from ..sharding import DuplicateSpecError
    for spec in leaves:
        used = [a for entry in spec for a in _entry_axes(entry) if isinstance(a, str)]
        dup = sorted({a for a in used if used.count(a) > 1})
        if dup:
            raise DuplicateSpecError(f"shard_map {what} entry {spec} names the mesh axis "
                                     f"{dup[0]!r} more than once: a mesh axis may split at "
                                     f"most one dimension.")
        for entry in spec:
            for a in _entry_axes(entry):
                if a is not None and a not in manual:
                    raise ValueError(f"shard_map {what} must refer to an axis marked as "
                                     f"manual ({sorted(manual)}), but {spec} refers to "
                                     f"{a!r}.")


def _type_spec(x, ndim: int) -> tuple:
    """The spec that is part of ``x``'s type: its sharding's entries over ``Explicit`` mesh
    axes (nothing for an unsharded value), one tuple of names per dimension."""
    from ..sharding import AxisType, NamedSharding
    sh = getattr(x, "sharding", None) if type(x) is ShardedArray else None
    if not isinstance(sh, NamedSharding):
        return ((),) * ndim
    types = dict(zip(sh.mesh.axis_names, sh.mesh.axis_types))
    return tuple(tuple(a for a in e if types.get(a) is AxisType.Explicit)
                 for e in sh.spec._normalized(ndim))


def _manual_part(x, ndim: int, manual):
    """``Infer``: the PartitionSpec of ``x``'s type restricted to the manual axes."""
    from ..sharding import PartitionSpec
    entries = []
    for names in _type_spec(x, ndim):
        kept = [a if a in manual else None for a in names]
        while kept and kept[-1] is None:
            kept.pop()
        if None in kept:    # a manual axis minor to a non-manual one: no shard layout
            raise ValueError(f"shard_map cannot infer in_specs from the spec "
                             f"{_as_pspec(_type_spec(x, ndim))}: it splits a dimension over "
                             f"the manual axes {[a for a in kept if a]} minor to a "
                             f"non-manual one (axis_names={sorted(manual)}).")
        entries.append(None if not kept else kept[0] if len(kept) == 1 else tuple(kept))
    return PartitionSpec(*entries)


class _ManualContext(threading.local):
    """While a shard_map body is traced: ``(mesh, manual axes, abstract mesh with those axes
    Manual)`` per enclosing shard_map, innermost last.  A nested shard_map defaults to that
    mesh, and (as in JAX) may not be given another one."""

    def __init__(self):
        self.stack: list = []
        # the runner of the latest eager call over several processes (_call_across)
        self.across_last = None


_context = _ManualContext()


def _check_spec(spec_axes, shape, mesh, manual, what: str, argname: str):
    sizes = mesh.shape
    seen = set()
    for d, axes in enumerate(spec_axes):
        n = 1
        for a in axes:
            if a not in sizes:
                raise ValueError(f"shard_map {what} for {argname} names the mesh axis {a!r}, "
                                 f"which is not in the mesh {tuple(mesh.axis_names)}.")
            if a not in manual:
                raise ValueError(f"shard_map {what} for {argname} names the mesh axis {a!r}, "
                                 f"which is not in axis_names {sorted(manual)}.")
            if a in seen:
                raise ValueError(f"shard_map {what} for {argname} uses the mesh axis {a!r} "
                                 f"twice.")
            seen.add(a)
            n *= sizes[a]
        if shape is not None and shape[d] % n:
            raise ValueError(
                f"shard_map was given arrays with axis sizes that are not evenly divisible "
                f"by the mesh axes splitting them: {argname} of shape {tuple(shape)} has "
                f"{what} {_as_pspec(spec_axes)}, which splits dimension {d} (of size "
                f"{shape[d]}) over the mesh axes {axes} (of total size {n}) of the mesh "
                f"{dict(sizes)}.")


def _to_stack(x, spec_axes, mesh_axes, sizes):
    """The global value ``x`` viewed as its shards stacked in front, one axis per mesh
    axis the spec names (in mesh order), then the local shape."""
    shape = _aval_of(x).shape
    if not any(spec_axes):
        return x
    split_shape, labels = [], []
    for d, axes in enumerate(spec_axes):
        n = 1
        for a in axes:
            split_shape.append(sizes[a])
            labels.append(a)
            n *= sizes[a]
        split_shape.append(shape[d] // n)
        labels.append(d)
    y = _reshape(x, tuple(split_shape))
    front = [labels.index(a) for a in mesh_axes if a in labels]
    rest = [i for i, lab in enumerate(labels) if not isinstance(lab, str)]
    perm = tuple(front + rest)
    return y if perm == tuple(range(len(perm))) else _transpose(y, perm)


def _from_stack(y, spec_axes, mesh_axes, sizes, local_ndim):
    """Inverse of ``_to_stack``: ``y`` has one leading axis per mesh axis the spec names (in
    mesh order), then the local shape; returns the global value."""
    if not any(spec_axes):
        return y
    named = [a for a in mesh_axes if any(a in axes for axes in spec_axes)]
    local = _aval_of(y).shape[len(named):]
    order, split_shape = [], []
    for d, axes in enumerate(spec_axes):
        for a in axes:
            order.append(named.index(a))
            split_shape.append(sizes[a])
        order.append(len(named) + d)
        split_shape.append(local[d])
    if tuple(order) != tuple(range(len(order))):
        y = _transpose(y, tuple(order))
    glob = []
    for d, axes in enumerate(spec_axes):
        n = 1
        for a in axes:
            n *= sizes[a]
        glob.append(local[d] * n)
    return _reshape(y, tuple(glob))


class _ShardMapped:
    """The callable ``shard_map`` returns (see ``shard_map``)."""

    def __init__(self, f, mesh, in_specs, out_specs, axis_names, check_vma):
        self.f = f
        self.mesh = mesh
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.axis_names = axis_names
        self.check_vma = check_vma
        functools.update_wrapper(self, f, updated=())
        self._jitted = {}

    def _setup(self):
        """``(mesh, manual axes, enclosing manual axes)``, checked as JAX does before it looks
        at the arguments (the mesh and its context, ``axis_names``, both specs' leaves)."""
        from ..sharding import AbstractMesh, AxisType, Mesh, get_abstract_mesh, _state
        outer = _context.stack[-1] if _context.stack else None
        mesh = self.mesh
        if mesh is None:
            if outer is not None:
                mesh = outer[0]
            else:
                mesh = _state().mesh
                if mesh.empty:
                    mesh = get_abstract_mesh()
                if mesh.empty:
                    raise ValueError("shard_map was given no mesh and the context mesh is "
                                     "empty: pass mesh=..., or call it under "
                                     "jaxlite.set_mesh(mesh).")
        else:
            ctx = outer[2] if outer is not None else get_abstract_mesh()
            if isinstance(mesh, (Mesh, AbstractMesh)) and not ctx.empty and \
                    mesh.abstract_mesh != ctx:
                raise ValueError(f"shard_map was given the mesh {mesh}, which does not match "
                                 f"the context mesh {ctx}: under set_mesh, or inside "
                                 f"another shard_map, the context mesh should match the "
                                 f"mesh passed to shard_map (or pass no mesh).")
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"shard_map's mesh must be a jaxlite.sharding.Mesh or "
                            f"AbstractMesh, got {mesh!r} of type {type(mesh)}.")
        if mesh.empty:
            raise ValueError(f"shard_map requires a non-empty mesh, got {mesh}.")
        names = self.axis_names
        if not isinstance(names, (set, frozenset)):
            raise TypeError(f"shard_map's axis_names must be a set or frozenset of mesh axis "
                            f"names, got type {type(names)}.")
        manual = frozenset(names) or frozenset(mesh.axis_names)
        if not manual <= frozenset(mesh.axis_names):
            raise ValueError(f"shard_map axis_names={set(manual)} must be a subset of the "
                             f"mesh's axis names {set(mesh.axis_names)}.")
        types = dict(zip(mesh.axis_names, mesh.axis_types))
        if self.in_specs is Infer and not all(types[a] is AxisType.Explicit
                                              for a in manual):
            raise TypeError(
                f"shard_map in_specs must be a pytree of PartitionSpecs: they can be "
                f"omitted (inferred from the arguments) only when every manual axis is "
                f"Explicit, but axis_names={set(manual)} are of type "
                f"{', '.join(str(types[a]) for a in sorted(manual))}.")
        if self.in_specs is not Infer and self.in_specs is not None:
            _check_spec_tree(self.in_specs, manual, "in_specs")
        _check_spec_tree(self.out_specs, manual, "out_specs")
        outer_manual = outer[1] if outer is not None else frozenset()
        return mesh, manual, outer_manual

    def per_device(self, in_tree, avals, mesh):
        """The per-device program of this shard_map called (jitted, outermost) on flat
        arguments of ``avals`` (``in_tree``: the jitted call's ``(args, kwargs)`` tree)
        over the concrete ``mesh``: ``(closed, in_axes, out_axes)``: the body traced on
        one device's shards with its collectives (and ``axis_index``) kept as equations,
        and each flat argument's and result's spec as one tuple of mesh axes per
        dimension.  What a platform that partitions programs itself lowers as manual
        code (backends/pjrt/_spmd.py); the same values the expansion computes.

        Raises NotImplementedError where the body is not one per-device program over the
        whole mesh: axes left automatic, inside another shard_map, specs inferred from the
        arguments or None (passed whole), keyword arguments, another mesh."""
        from ..core import batching as _batching
        from ..core.avals import ShapedArray
        from ..core.staging import trace_to_jaxpr
        from .vmap import vmap
        mesh0, manual, outer_manual = self._setup()
        if outer_manual or manual != frozenset(mesh.axis_names) or \
                self.in_specs is Infer or mesh0 != mesh:
            raise NotImplementedError("a shard_map that is not manual over its whole mesh")
        args, kwargs = tree_unflatten(in_tree, list(range(len(avals))))
        if kwargs:
            raise NotImplementedError("a shard_map called with keyword arguments")
        leaves, args_tree = tree_flatten(args)
        specs = _prefix_leaves(self.in_specs, args, "in_specs")
        if any(s is None for s in specs):
            raise NotImplementedError("a shard_map argument passed whole (spec None)")
        sizes = dict(mesh.shape)
        in_axes, local = [], []
        for k, (s, a) in enumerate(zip(specs, avals)):
            sa = _spec_axes(s, len(a.shape), "in_specs", k)
            _check_spec(sa, tuple(a.shape), mesh, manual, "in_specs", f"argument {k}")
            in_axes.append(sa)
            shape = tuple(n // int(np.prod([sizes[x] for x in e], dtype=np.int64))
                          for n, e in zip(a.shape, sa))
            local.append(ShapedArray(shape, a.dtype, a.weak_type))
        box = {}

        def body(*xs):
            out = self.f(*tree_unflatten(args_tree, list(xs)))
            outs, box["tree"] = tree_flatten(out)
            return outs

        def innermost(dummy):
            state = _batching.manual_tracing
            depth, vma = state.depth, state.vma
            state.depth, state.vma = depth + 1, bool(self.check_vma)
            if self.check_vma:
                _batching.spmd_levels += 1
            try:
                box["closed"] = trace_to_jaxpr(body, local)
            except _batching.ManualUnsupported:
                raise
            except Exception as e:      # noqa: BLE001 - the expansion then runs it,
                # and raises what the body raises there (its own errors are the user's)
                raise _batching.ManualUnsupported(
                    f"the body does not trace as one per-device program: {e!r}") from e
            finally:
                state.depth, state.vma = depth, vma
                if self.check_vma:
                    _batching.spmd_levels -= 1
            return dummy
        fn = innermost
        for name in reversed(mesh.axis_names):
            fn = vmap(fn, axis_name=name)
        fn(np.zeros(tuple(sizes[n] for n in mesh.axis_names), np.float32))
        closed = box["closed"]
        out_specs = _prefix_leaves(self.out_specs,
                                   tree_unflatten(box["tree"], list(range(len(
                                       closed.jaxpr.outvars)))), "out_specs")
        out_axes = [_spec_axes(s, len(v.aval.shape), "out_specs", k)
                    for k, (s, v) in enumerate(zip(out_specs, closed.jaxpr.outvars))]
        return closed, in_axes, out_axes

    @_api_boundary      # a traceback boundary (_traceback.py), as the transformations
    def __call__(self, *args):
        from ..sharding import AxisType, NamedSharding
        mesh, manual, outer_manual = self._setup()
        leaves, in_tree = tree_flatten(args)
        if self.in_specs is Infer:
            for k, x in enumerate(leaves):
                if isinstance(x, Tracer):
                    raise ValueError(
                        f"shard_map with in_specs omitted takes each argument's spec from "
                        f"its sharding, but argument {k} ({x.aval.str_short()}) is a traced "
                        f"value (under jit, grad, vjp, jvp or vmap), whose sharding jaxlite "
                        f"does not track: pass in_specs.")
            specs = [_manual_part(x, len(_shape_of(x, k)), manual)
                     for k, x in enumerate(leaves)]
        else:
            specs = _prefix_leaves(self.in_specs, args, "in_specs")
        types = dict(zip(mesh.axis_names, mesh.axis_types))
        typed = not outer_manual and manual == frozenset(mesh.axis_names) and \
            all(types[a] is AxisType.Explicit for a in manual)
        in_axes, statics = [], {}
        for k, (x, s) in enumerate(zip(leaves, specs)):
            if s is None:           # passed to f as it is, on every device
                statics[k] = x
                in_axes.append(None)
                continue
            shape = _shape_of(x, k)
            sa = _spec_axes(s, len(shape), "in_specs", k)
            _check_spec(sa, shape, mesh, manual, "in_specs", f"argument {k}")
            if typed and not isinstance(x, Tracer) and \
                    _type_spec(x, len(shape)) != s._normalized(len(shape)):
                raise ValueError(
                    f"shard_map in_specs {s} for argument {k} (shape {tuple(shape)}) does "
                    f"not match the specs of that input, "
                    f"{_as_pspec(_type_spec(x, len(shape)))}: over a mesh whose axes are all "
                    f"Explicit, in_specs must equal the arguments' shardings. Omit in_specs "
                    f"to take them from the arguments, or device_put the arguments with "
                    f"NamedSharding(mesh, {s}) first.")
            in_axes.append(sa)
        if outer_manual & manual:
            raise ValueError(f"shard_map over the mesh axes {sorted(outer_manual & manual)} "
                             f"inside a shard_map that is already manual over them: "
                             f"give the inner one axis_names among "
                             f"{sorted(set(mesh.axis_names) - outer_manual)}.")
        dyn = [x for k, x in enumerate(leaves) if k not in statics]
        # traced also when only f's closure is (a shard_map inside jit/grad/vmap over
        # arguments that are constants there)
        traced = any(isinstance(x, Tracer) for x in dyn) or _context.stack or \
            _is_tracing()
        if traced:
            # under jit/vmap/grad: the operands and results are constrained to the specs'
            # shardings (over a concrete mesh, outside other shard_maps), so the program's
            # results, batched results and cotangents are placed as JAX places them
            place = not _context.stack and isinstance(getattr(mesh, "devices", None),
                                                      np.ndarray)
            outs, out_tree, out_axes = self._expanded(mesh, manual, in_tree, in_axes,
                                                      statics, outer_manual,
                                                      place=place)(*dyn)
            return tree_unflatten(out_tree, outs)
        if not isinstance(getattr(mesh, "devices", None), np.ndarray):
            raise ValueError(f"shard_map called on concrete arguments needs a Mesh of "
                             f"devices to place its results, got the abstract mesh {mesh}.")
        _check_devices(dyn, mesh)
        from ..core.sharded import spans_processes
        if not statics and not outer_manual and self.in_specs is not Infer and \
                manual == frozenset(mesh.axis_names) and \
                not mesh.devices.flat[0]._host_memory:
            # a platform that partitions programs itself (a PJRT plugin's devices): the
            # arguments placed by in_specs, the body run as one manually partitioned
            # program (jit of this shard_map; backends/pjrt/_spmd.py)
            from ..core.placement import device_put
            from .jit import jit
            fn = self._jitted.get("partitioned")
            if fn is None:
                fn = self._jitted["partitioned"] = jit(self)
            placed = [device_put(x, NamedSharding(mesh, _as_pspec(sa)))
                      for x, sa in zip(dyn, in_axes)]
            outs = fn(*tree_unflatten(in_tree, placed))
            # as the eager call places them: by out_specs as spelled
            leaves_o, out_tree = tree_flatten(outs)
            specs = _prefix_leaves(self.out_specs, outs, "out_specs")
            return tree_unflatten(out_tree, [_relabel(o, NamedSharding(mesh, sp))
                                             for o, sp in zip(leaves_o, specs)])
        if spans_processes(mesh):
            return self._call_across(mesh, manual, outer_manual, in_tree, in_axes, statics,
                                     dyn)
        # eager: one jitted expansion per signature; the operands are read as global
        # values, the results placed on the mesh by out_specs
        vals = [ArrayImpl(_global_buffer(x), x.aval, False) if type(x) is ShardedArray
                else x for x in dyn]
        # the avals too: the output tree (and so its specs) may depend on the shapes
        key = (in_tree, tuple(in_axes), mesh, manual,
               tuple((_aval_of(x).shape, _aval_of(x).dtype, _aval_of(x).weak_type)
                     for x in vals))
        fn = self._jitted.get(key) if not statics else None
        if fn is None:
            from .jit import jit
            store = {}
            expand = self._expanded(mesh, manual, in_tree, in_axes, statics, outer_manual)

            def run(*xs):
                outs, out_tree, out_axes = expand(*xs)
                # recorded while tracing, once per signature: what the call places by
                store["tree"], store["axes"] = out_tree, out_axes  # noqa: JL006
                return outs
            fn = (jit(run), store)
            if not statics:
                self._jitted[key] = fn
        jitted, store = fn
        outs = jitted(*vals)
        out_tree, out_axes = store["tree"], store["axes"]
        auto = [a for a in mesh.axis_names if a not in manual | outer_manual]
        if auto and any(type(x) is ShardedArray and set(auto) & {
                n for e in spec_tuple(x.sharding, x.aval.ndim) for n in e} for x in dyn):
            out_axes = _with_auto_axes(jitted, vals, dyn, mesh, auto, out_axes)
        if auto and mesh.explicit_axes:     # typed results: specs as long as the rank
            from ..core.sharded import result_pspec
            out_axes = [result_pspec(mesh, _spec_axes(s, o.aval.ndim, "out_specs"))
                        for s, o in zip(out_axes, outs)]
        placed = []
        for o, spec in zip(outs, out_axes):
            placed.append(from_global(host_view(o._buf), o.aval, NamedSharding(mesh, spec)))
        return tree_unflatten(out_tree, placed)

    def _call_across(self, mesh, manual, outer_manual, in_tree, in_axes, statics, dyn):
        """The eager call over a mesh spanning several processes: this process runs the
        per-device program for its own devices, on its shards stacked (each argument
        moved to its in_specs layout first where it has another), its collectives
        crossing processes (see ``_expanded``'s ``box``); the results hold this
        process's shards.  The runner made for a signature is kept (``_across_last``
        holds the latest, which ``jit`` of this shard_map caches for its own calls)."""
        if outer_manual or manual != frozenset(mesh.axis_names):
            raise NotImplementedError(
                f"shard_map over some of the axes of a mesh spanning several processes "
                f"(axis_names={set(manual)} of {mesh.axis_names}): make every mesh axis "
                f"manual there.")
        key = ("across", in_tree, tuple(in_axes), mesh,
               tuple((_aval_of(x), getattr(x, "sharding", None)
                      if type(x) is ShardedArray else None) for x in dyn))
        runner = self._jitted.get(key) if not statics else None
        if runner is None:
            runner = self._across_runner(mesh, manual, outer_manual, in_tree, in_axes,
                                         statics, dyn)
            if not statics:
                self._jitted[key] = runner
        # (a runner with arguments passed as they are, in_specs None, holds their values:
        # never reused for other calls)
        _context.across_last = None if statics else runner
        return runner(dyn)

    def _across_runner(self, mesh, manual, outer_manual, in_tree, in_axes, statics, dyn):
        """``run(dyn leaves) -> outputs``: the call of ``_call_across`` for arguments like
        ``dyn`` (same avals and shardings), everything but the data worked out once."""
        from ..core.sharded import placer, process_box, stacker
        from ..sharding import NamedSharding
        from .jit import jit
        box = process_box(mesh)
        mesh_axes = [a for a in mesh.axis_names if a in manual]
        dyn_axes = [sa for sa in in_axes if sa is not None]
        stackers = [stacker(x, sa, mesh, box, mesh_axes) for x, sa in zip(dyn, dyn_axes)]
        stacks = [st(x) for st, x in zip(stackers, dyn)]
        store = {}
        args = ", ".join(_aval_of(x).str_short() for x in dyn)
        expand = self._expanded(mesh, manual, in_tree, in_axes, statics, outer_manual,
                                box=box, where=f"shard_map of "
                                f"{getattr(self.f, '__name__', 'a function')} on ({args})")

        def run(*xs):
            outs, out_tree, out_axes = expand(*xs)
            store["tree"], store["axes"] = out_tree, out_axes  # noqa: JL006
            return outs
        compiled = jit(run).lower(*stacks).compile()
        sizes = dict(mesh.shape)
        placing = []
        for o, spec in zip(compiled._lowered.closed_jaxpr.jaxpr.outvars, store["axes"]):
            in_spec = {a for e in spec for a in _entry_axes(e)}
            named = [a for a in mesh_axes if a in in_spec]     # the stacked axes of o
            sa = _spec_axes(spec, o.aval.ndim - len(named), "out_specs")
            block = o.aval.shape[len(named):]
            shape = tuple(n * int(np.prod([sizes[a] for a in e], dtype=np.int64))
                          for n, e in zip(block, sa))
            placing.append(placer(sa, o.aval.update(shape=shape), NamedSharding(mesh, spec),
                                  box, mesh_axes))
        out_tree = store["tree"]

        from ..core.eager import fp_ignore_begin, fp_ignore_end
        device = next(iter(box.coords))         # this process's first device of the mesh
        program = compiled._program

        def runner(xs):
            # the program's executable called directly on the stacked NumPy shards (the
            # placement and wrapping _run_compiled does are the stacks' and the results')
            vals = [st(x) for st, x in zip(stackers, xs)]
            ex = program.executable
            token = fp_ignore_begin()   # as every jitted program: no NumPy warnings
            try:
                outs = device._run_charged(ex.temp_bytes, lambda: ex.run(vals))
            finally:
                fp_ignore_end(token)
            return tree_unflatten(out_tree, [place(o) for o, place in zip(outs, placing)])
        return runner

    def _expanded(self, mesh, manual, in_tree, in_axes, statics, outer_manual, place=False,
                  box=None, where=None):
        """``fn(*dynamic leaves) -> (out leaves, out tree, out spec axes)``: the global
        computation (shards stacked, the per-device program batched over the manual mesh
        axes); ``statics`` maps leaf positions to values passed to ``f`` as they are.

        Over a mesh spanning several processes, ``box`` is this process's ProcessBox
        (core/sharded.py): the leaves are then already this process's shards stacked
        (``local_stack``), the batching runs over this process's devices only (each
        split axis an ``AxisSplit``, so collectives also cross processes), and the
        outputs are returned stacked the same way."""
        from ..sharding import AxisType, PartitionSpec
        from ..core.batching import AxisSplit
        mesh_axes = [a for a in mesh.axis_names if a in manual]
        sizes = dict(mesh.shape)
        if box is not None:
            where = where or f"shard_map of {getattr(self.f, '__name__', 'a function')}"
            splits = {a: AxisSplit(sizes[a], box.offset[a], box.ranks[a], where)
                      if len(box.ranks[a]) > 1 else None for a in mesh_axes}
            bsizes = {a: box.local[a] for a in mesh_axes}
        else:
            splits, bsizes = {a: None for a in mesh_axes}, sizes
        f, out_specs, check_vma = self.f, self.out_specs, self.check_vma
        n_leaves = len(in_axes)
        in_axes = [sa for sa in in_axes if sa is not None]
        inside = mesh.abstract_mesh.update_axis_types(
            {a: AxisType.Manual for a in manual | outer_manual})

        partial = bool(set(mesh.axis_names) - manual - outer_manual)

        def fn(*leaves):
            if place:
                leaves = [_constrain(x, mesh, sa, partial) for x, sa in zip(leaves, in_axes)]
            stacks = list(leaves) if box is not None else \
                [_to_stack(x, sa, mesh_axes, sizes) for x, sa in zip(leaves, in_axes)]
            info = {}

            def body(*local):
                it = iter(local)
                full = [statics[k] if k in statics else next(it) for k in range(n_leaves)]
                outs = f(*tree_unflatten(in_tree, full))
                o_leaves, o_tree = tree_flatten(outs)
                info["tree"] = o_tree
                info["leaves"] = [_aval_of(o) for o in o_leaves]
                o_specs = _prefix_leaves(out_specs, outs, "out_specs")
                for k, (o, sp) in enumerate(zip(o_leaves, o_specs)):
                    _spec_axes(PartitionSpec() if sp is None else sp, _aval_of(o).ndim,
                               "out_specs", k)
                    named = set(a for e in (sp or ()) for a in _entry_axes(e))
                    for a in mesh_axes:
                        if check_vma and a not in named and _batched_along(o, a):
                            raise ValueError(
                                f"shard_map out_specs for output {k} ({sp}) does not name "
                                f"the mesh axis {a!r}, but the output varies along it. "
                                f"Name {a!r} in that out_spec, reduce over it (lax.psum), "
                                f"or pass check_vma=False.")
                return o_leaves, [()] * len(o_leaves)

            # one batching level per manual mesh axis, outermost = first: each consumes
            # the leading stacked axis of the operands sharded along it
            present = [[a for a in mesh_axes if any(a in e for e in sa)] for sa in in_axes]

            def nest(level):
                if level == len(mesh_axes):
                    return body
                a = mesh_axes[level]
                inner = nest(level + 1)
                dims = [0 if a in p else None for p in present]
                return functools.partial(_batch_level, inner, dims, bsizes[a], a, check_vma,
                                         splits[a])
            runner = nest(0)
            from ..sharding import use_abstract_mesh
            _context.stack.append((mesh, manual | outer_manual, inside))
            _spmd_enter(check_vma)
            try:
                with use_abstract_mesh(inside):
                    outs, mapped = runner(*stacks)
            finally:
                _spmd_exit(check_vma)
                _context.stack.pop()
            o_tree = info["tree"]
            o_specs = _prefix_leaves(out_specs, tree_unflatten(o_tree, info["leaves"]),
                                     "out_specs")
            result, out_axes = [], []
            for k, (o, s) in enumerate(zip(outs, o_specs)):
                local_nd = info["leaves"][k].ndim
                sa = _spec_axes(PartitionSpec() if s is None else s, local_nd, "out_specs", k)
                _check_spec(sa, None, mesh, manual, "out_specs", f"output {k}")
                # o has one leading axis per manual mesh axis it varies along (in mesh
                # order): keep those the spec names, take device 0's value along the others
                # (check_vma=False), and repeat it along named axes it does not vary along
                named = set(a for e in sa for a in e)
                pos = 0
                for a, varies in zip(mesh_axes, mapped[k]):
                    if varies and a in named:
                        pos += 1
                    elif varies:
                        if splits[a] is not None:
                            raise NotImplementedError(
                                f"shard_map output {k} varies along the mesh axis {a!r}, "
                                f"which spans processes, but its out_specs do not name "
                                f"it (check_vma=False): name {a!r} in out_specs or psum "
                                f"over it.")
                        o = _device0_value(o, pos)
                    elif a in named:
                        o = _broadcast_at(o, pos, bsizes[a])
                        pos += 1
                if box is not None:             # this process's shards, stacked
                    result.append(o)
                    out_axes.append(PartitionSpec() if s is None else s)
                    continue
                r = _from_stack(o, sa, mesh_axes, sizes, local_nd)
                result.append(_constrain(r, mesh, sa, partial) if place else r)
                out_axes.append(PartitionSpec() if s is None else s)
            return result, o_tree, out_axes
        return fn


def _relabel(o, sharding):
    """Result ``o`` with ``sharding``: the same shards when it lays them out as ``o``'s
    sharding does (a spec spelled otherwise), else moved there (``device_put``)."""
    from ..core.placement import device_put
    from ..core.sharded import shard_indices
    if o.sharding == sharding:
        return o
    shape = o.aval.shape

    def layout(s):
        return [(d, tuple((i.start, i.stop) for i in idx))
                for d, idx, _ in shard_indices(s, shape)]
    if type(o) is ShardedArray and layout(o.sharding) == layout(sharding):
        return ShardedArray(o.aval, sharding, o._shards)
    return device_put(o, sharding)


def _global_buffer(x):
    """The global value of ShardedArray ``x`` as a buffer on its first device: a view of
    host memory there, else a copy made by that device's backend (the uncounted host
    view ``x._buf`` is no native value of such a device)."""
    dev = x._local_device()
    if dev._host_memory:
        return x._buf
    from ..core.sharded import host_buffer
    return host_buffer(np.array(x._buf.data), dev)


def _with_auto_axes(jitted, vals, dyn, mesh, auto, out_axes) -> list:
    """The out specs of a partial-manual shard_map called on arguments sharded over its
    other (auto) mesh axes: each output keeps, besides its out_spec's manual axes, the
    auto axes the compiler's sharding propagation carries to it through the expanded
    program, after them in each dimension (``P(('x', 'y'))`` for an output over manual
    ``x`` whose blocks stay split over ``y``), as JAX lays such results out."""
    from ..compiler.passes.sharding_propagation import propagate
    from ..core.sharded import to_pspec
    closed = jitted.lower(*vals).closed_jaxpr
    in_specs = [spec_tuple(x.sharding, x.aval.ndim) if type(x) is ShardedArray else
                ((),) * len(_aval_of(x).shape) for x in dyn]
    prop, _ = propagate(closed, in_specs, dict(mesh.shape))
    result = []
    for spec, got, v in zip(out_axes, prop, closed.jaxpr.outvars):
        ndim = len(v.aval.shape)
        mine = _spec_axes(spec, ndim, "out_specs")
        merged = tuple(tuple(m) + tuple(n for n in g if n in auto and n not in m)
                       for m, g in zip(mine, got))
        used = [n for e in merged for n in e]
        if len(used) != len(set(used)):
            merged = mine   # an auto axis the out_spec also names elsewhere: as given
        result.append(to_pspec(merged))
    return result


def _batch_level(inner, dims, size, name, spmd, split, *xs):
    """One batching level over mesh axis ``name``: runs ``inner(*xs)`` with ``xs`` mapped
    along ``dims`` (0 or None); returns ``(outs, mapped)``, each output with this axis in
    front where it varies along it, and per output a tuple of flags (this level's first)
    saying along which mesh axes it varies."""
    from ..core import batching
    from ..core.trace import full_lower, new_main
    with new_main(batching.BatchTrace, batching.BatchAxis(size, name, spmd, split)) as main:
        trace = batching.BatchTrace(main)
        ins = [batching.BatchTracer(trace, x, d) if d is not None else x
               for x, d in zip(xs, dims)]
        outs, flags = inner(*ins)
        res, mapped = [], []
        for o, fl in zip(outs, flags):
            t = trace.full_raise(o)
            if t.bdim is None:
                res.append(t.val)
                mapped.append((False,) + fl)
            else:
                res.append(batching.moveaxis(t.val, t.bdim, 0))
                mapped.append((True,) + fl)
    return [full_lower(r) for r in res], mapped


_spmd_lock = threading.Lock()


def _spmd_enter(on: bool) -> None:
    """Counts an open shard_map with check_vma (its reverse-mode cotangent rule applies;
    core/batching.py ``spmd_cotangent``)."""
    if on:
        from ..core import batching
        with _spmd_lock:
            batching.spmd_levels += 1


def _spmd_exit(on: bool) -> None:
    if on:
        from ..core import batching
        with _spmd_lock:
            batching.spmd_levels -= 1


def _broadcast_at(o, pos: int, n: int):
    """``o`` repeated ``n`` times along a new axis at ``pos``."""
    from ..primitives.shape import broadcast_in_dim_p
    shape = _aval_of(o).shape
    return broadcast_in_dim_p.bind(
        o, shape=shape[:pos] + (n,) + shape[pos:],
        broadcast_dimensions=tuple(i if i < pos else i + 1 for i in range(len(shape))))


def _constrain(x, mesh, spec_axes, partial=False):
    """``x`` (traced) placed at ``NamedSharding(mesh, spec)``: the value unchanged.  A
    reshard, not an asserting constraint: the specs define where shard_map's operands and
    results go, also on a mesh of Explicit axes (where a constraint asserts).  ``partial``
    (a shard_map manual over some of the mesh axes): dimensions the spec leaves whole
    stay unconstrained, so the other axes' layout carries through (as in JAX)."""
    from ..primitives.sharding_constraint import reshard_p, sharding_constraint_p
    from ..sharding import AxisType, NamedSharding, get_abstract_mesh
    free = frozenset(d for d, e in enumerate(spec_axes) if not e) if partial else \
        frozenset()
    if any(t is AxisType.Explicit for t in mesh.axis_types):
        sharding = NamedSharding(mesh, _as_pspec(spec_axes))
        return reshard_p.bind(x, dst_sharding=sharding, unconstrained_dims=free)
    # over Auto axes the spec is not part of a type: written as JAX prints it there,
    # trailing whole dimensions dropped (P('b',), not P('b', None))
    trimmed = list(spec_axes)
    while trimmed and not trimmed[-1]:
        trimmed.pop()
    sharding = NamedSharding(mesh, _as_pspec(tuple(trimmed)))
    return sharding_constraint_p.bind(x, sharding=sharding, layout=None,
                                      unconstrained_dims=free,
                                      context_mesh=get_abstract_mesh())


def _aval_of(x):
    from ..core.trace import get_aval
    return get_aval(x)


def _reshape(x, shape):
    from ..primitives.shape import reshape_p
    if _aval_of(x).shape == tuple(shape):
        return x
    return reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _transpose(x, perm):
    from ..primitives.shape import transpose_p
    return transpose_p.bind(x, permutation=tuple(perm))


def _device0_value(o, axis):
    """An output of ``check_vma=False`` that varies along a mesh axis its out_spec does
    not name (stacked along ``axis``): the value is device 0's, and, as JAX, its
    derivative is the mean over the devices (JAX's transpose gives every device the
    cotangent divided by the axis size), so gradients equal JAX's also when the output
    is not in fact replicated (a per-device loss missing its psum)."""
    from .autodiff import custom_jvp

    @custom_jvp
    def first(v):
        return _index0(v, axis)

    @first.defjvp
    def _(primals, tangents):
        from ..lax import div, reduce_sum
        (v,), (t,) = primals, tangents
        n = _aval_of(v).shape[axis]
        return _index0(v, axis), div(reduce_sum(t, (axis,)),
                                     np.asarray(n, _aval_of(t).dtype))
    return first(o)


def _index0(o, axis):
    """``o`` at index 0 of ``axis``, that axis removed."""
    from ..primitives.shape import slice_p
    shape = _aval_of(o).shape
    start = (0,) * len(shape)
    limit = tuple(1 if d == axis else n for d, n in enumerate(shape))
    piece = slice_p.bind(o, start_indices=start, limit_indices=limit, strides=None)
    return _reshape(piece, shape[:axis] + shape[axis + 1:])


def _batched_along(x, name) -> bool:
    """Whether traced value ``x`` varies along the vmap named ``name`` (its batching
    tracer at that level has a mapped axis)."""
    from ..core.batching import BatchTracer
    while isinstance(x, BatchTracer):
        if x._trace.main.payload.name == name:
            return x.bdim is not None
        x = x.val
    return False


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
    """Maps ``f`` over the shards of its arguments, one call per device (``jax.shard_map``).

    Args:
      f: the per-device function: it receives each argument's shard (the global shape
        divided along the dimensions its spec shards) and may call collectives
        (``lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
        ``ppermute``, ``all_to_all``, ``axis_index``) over the mesh's axis names.
      out_specs: a PartitionSpec per output (a pytree prefix of the outputs): how the
        per-device results form the global result; a mesh axis it does not name must be one
        the result does not vary along.
      in_specs: a PartitionSpec per argument (a pytree prefix of the arguments; ``P()``
        replicated); default: each argument's own sharding.
        A ``None`` leaf (or ``in_specs=None``) passes that argument to every device as
        it is.  Over a mesh whose axes are all Explicit, the specs must equal the
        arguments' own shardings.
      mesh: the Mesh (default: the context mesh: ``jaxlite.set_mesh``'s, or inside another
        shard_map that one's).
      axis_names: a set of the mesh axes ``f`` is manual over (default: all).
      check_vma: check that outputs are invariant along mesh axes their out_spec omits
        (jaxlite checks what each output actually varies along).
    Returns:
      the mapped function; called eagerly it returns Arrays with
      ``NamedSharding(mesh, out_spec)``.
    Raises:
      TypeError: spec leaves that are not PartitionSpecs, ``axis_names`` not a set, a mesh
        that is not a Mesh, in_specs omitted while a manual axis is not Explicit, an
        argument that is not an array.
      ValueError: no mesh, a mesh other than the context's, a spec naming an axis that is
        not manual, a spec longer than its value's rank, a dimension its mesh axes do not
        divide, specs that are no pytree prefix, Explicit in_specs that differ from the
        arguments' shardings, arguments committed to other devices, an output varying
        along an axis its out_spec omits.
      NameError: a collective over an axis name no enclosing shard_map or vmap binds.
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs,
                                 mesh=mesh, axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map needs a callable as its first argument, got {f!r}")
    return _ShardMapped(f, mesh, in_specs, out_specs, axis_names, check_vma)


def experimental_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
    """The old spelling ``jax.experimental.shard_map.shard_map`` (deprecated, as in JAX;
    the same signature): ``shard_map`` over every mesh axis, with positional mesh/specs
    and ``check_rep`` for ``check_vma``.  Warns DeprecationWarning."""
    warnings.warn("jaxlite.experimental.shard_map is deprecated: use jaxlite.shard_map "
                  "instead.", DeprecationWarning, stacklevel=_user_stacklevel())
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                     check_vma=check_rep)


_PMAP_AXIS = "_internal_pmap_axis_name"   # the mesh axis of a pmap with no axis_name


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
    """Maps ``fun`` over the leading (or ``in_axes``) axis of its arguments, one slice per
    device (``jax.pmap``).

    Built on ``shard_map``: a one-axis mesh of the first ``n`` devices (``devices``, else
    ``jaxlite.local_devices()``), each device's program seeing its slice without the mapped
    axis; collectives over ``axis_name`` combine the devices.

    Args:
      fun: the per-device function.
      axis_name: the name collectives use for the mapped axis.
      in_axes: an int, None (broadcast) or a pytree prefix of the positional arguments.
      out_axes: where the mapped axis goes in each output (int or None: the same value on
        every device, returned once).
      static_broadcasted_argnums: positional arguments passed as they are (hashable).
      devices: the devices to run on (at least ``n``).
      axis_size: the mapped size, checked against the arguments' (ValueError when they
        differ); as in JAX 0.10.2, at least one argument must still be mapped.
      backend: the platform whose local devices run it (None: the default); an absent
        one is a RuntimeError, as in JAX.
      donate_argnums: accepted; buffers are not donated (as JAX on CPU, where donation
        is unsupported and only warned about).
    Keyword arguments of the call are mapped along their axis 0.

    Returns:
      the mapped function; its results are Arrays with a ``NamedSharding`` over a one-axis
      mesh (Auto) of the devices used, named ``axis_name`` or ``_internal_pmap_axis_name``
      (as JAX 0.10.2, which also builds pmap on shard_map), split along ``out_axes``.
    Raises:
      ValueError: more slices than the given ``devices``, no mapped argument, a mapped
        Python scalar, an in_axes that is a list or no prefix of the arguments, a static
        argument that is not hashable, a mapped axis of size 0, a call under
        ``set_mesh`` or inside another pmap/shard_map (as JAX 0.10.2);
        ``IndivisibleError`` (a ValueError) for mapped sizes that differ or more slices
        than the local devices.
      IndexError: an in_axes entry beyond an argument's rank.
    """
    del donate_argnums
    if not callable(fun):
        raise TypeError(f"pmap needs a callable as its first argument, got {fun!r}")
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    name = axis_name if axis_name is not None else _PMAP_AXIS
    mapped_cache: dict = {}

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        from ..sharding import Mesh, PartitionSpec
        from ..runtime import local_devices
        n_args = len(args)
        st = tuple(i % n_args for i in statics if -n_args <= i < n_args)
        static_vals = {i: args[i] for i in st}
        for i, v in static_vals.items():
            try:
                hash(v)
            except TypeError:
                raise ValueError(f"pmap: static_broadcasted_argnums entry {i} must be "
                                 f"hashable, got {type(v).__name__}") from None
        dyn = tuple(a for i, a in enumerate(args) if i not in static_vals)
        if isinstance(in_axes, list):
            raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the "
                             f"function (a pytree prefix of the argument tuple), got the "
                             f"list {in_axes!r}.")
        if isinstance(in_axes, tuple):
            ia = tuple(in_axes)
            if len(ia) != n_args and len(ia) != len(dyn):
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries "
                                 f"corresponding to the positional arguments passed to the "
                                 f"function, but got len(in_axes)={len(ia)}, "
                                 f"len(args)={n_args}")
            if len(ia) == n_args:
                ia = tuple(a for i, a in enumerate(ia) if i not in static_vals)
        else:
            ia = in_axes
        leaves, tree = tree_flatten((dyn, kwargs))
        axes = _axes_leaves(ia, dyn) + [0] * len(tree_flatten(kwargs)[0])   # kwargs: axis 0
        n = None
        if all(type(x) in (bool, int, float, complex)
               for x, ax in zip(leaves, axes) if ax is not None):
            axes = [None] * len(axes)     # Python scalars have no axis: none is mapped
        for k, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                continue
            if type(x) in (bool, int, float, complex):
                raise ValueError(f"pmap argument {k} is the Python scalar {x!r}, which has "
                                 f"no axis {ax} to map (as JAX, a ValueError): pass it "
                                 f"with in_axes None, or as an array with a mapped axis.")
            shape = _aval_of(x).shape
            if not -len(shape) <= ax < len(shape):
                raise IndexError(f"pmap was requested to map its argument along axis {ax}, "
                                 f"which implies that its rank should be at least "
                                 f"{ax + 1 if ax >= 0 else -ax}, but is only {len(shape)} "
                                 f"(its shape is {shape})")
            size = shape[ax]
            if n is None:
                n = size
            elif size != n:
                from ..sharding import IndivisibleError
                raise IndivisibleError(f"pmap got inconsistent sizes for the mapped axes of "
                                       f"its arguments: {n} and {size} (the devices are "
                                       f"chosen by the first mapped argument; each needs "
                                       f"one slice)")
        if n is None:
            # (JAX 0.10.2 raises here even when axis_size is given)
            raise ValueError("pmap requires at least one argument with a mapped axis (an "
                             "in_axes entry that is not None).")
        if axis_size is not None and axis_size != n:
            raise ValueError(f"Specified axis_size {axis_size} doesn't match received "
                             f"axis_size {n}.")
        if n == 0:
            raise ValueError("pmap over a mapped axis of size 0: it needs one device per "
                             "slice, and at least one slice.")
        devs = list(devices) if devices is not None else local_devices(backend=backend)
        if n > len(devs) and devices is None:
            from ..sharding import IndivisibleError
            raise IndivisibleError(
                f"pmap maps an axis of size {n}, one slice per device, but only "
                f"{len(devs)} devices are available (as JAX, an IndivisibleError): map at "
                f"most {len(devs)} slices, e.g. reshape to ({len(devs)}, -1, ...) and "
                f"loop or vmap inside.")
        if n > len(devs):
            raise ValueError(f"compiling computation that requires {n} logical devices, "
                             f"but only {len(devs)} XLA devices are available "
                             f"(num_replicas={n})")
        mesh = Mesh(np.array(devs[:n], dtype=object), (name,))
        leaves = _check_pmap_placement(leaves, axes, mesh, name)
        moved = [x if ax is None else _move_front(x, ax % _aval_of(x).ndim)
                 for x, ax in zip(leaves, axes)]
        local_mesh = None
        from ..runtime import process_count
        if devices is None and process_count() > 1:
            # several processes (as JAX): each maps its own devices' slices; the program
            # and its collectives run over every process's devices
            from ..runtime import devices as _all_devices
            if n != len(devs):
                raise ValueError(f"pmap over several processes maps one slice per local "
                                 f"device: this process has {len(devs)} devices, but the "
                                 f"mapped axis has size {n}")
            local_mesh = mesh
            mesh = Mesh(np.array(_all_devices(), dtype=object), (name,))
            moved = [x if ax is None else _global_from_local(x, mesh, name)
                     for x, ax in zip(moved, axes)]
        specs = tuple(PartitionSpec() if ax is None else PartitionSpec(name) for ax in axes)
        key = (mesh, tree, tuple(a is None for a in axes), tuple(sorted(static_vals.items(),
                                                                          key=lambda t: t[0])))
        sm = mapped_cache.get(key)
        if sm is None:
            def body(*local):
                xs = [x if ax is None else _reshape(x, _aval_of(x).shape[1:])
                      for x, ax in zip(local, axes)]
                d, kw = tree_unflatten(tree, xs)
                d = list(d)
                full = []
                for i in range(n_args):
                    full.append(static_vals[i] if i in static_vals else d.pop(0))
                out = fun(*full, **kw)
                o_leaves, o_tree = tree_flatten(out)
                return tree_unflatten(o_tree, [_reshape(o, (1,) + _aval_of(o).shape)
                                               for o in o_leaves])
            sm = mapped_cache[key] = shard_map(body, mesh=mesh, in_specs=specs,
                                               out_specs=PartitionSpec(name),
                                               check_vma=False)
        out = sm(*moved)
        if local_mesh is not None:      # each process gets its own devices' slices
            o_leaves, o_tree = tree_flatten(out)
            out = tree_unflatten(o_tree, [_local_part(o, local_mesh, name)
                                          for o in o_leaves])
        if out_axes == 0:
            return out
        o_leaves, o_tree = tree_flatten(out)
        oa = _axes_leaves(out_axes, out)
        res = []
        for o, ax in zip(o_leaves, oa):
            nd = _aval_of(o).ndim
            if ax is not None and not -nd <= ax < nd:
                raise ValueError(f"pmap out_axes: axis {ax} is out of bounds for an output "
                                 f"of rank {nd} (with the mapped axis)")
            if ax is None:
                res.append(_index0(o, 0))
            elif ax % _aval_of(o).ndim != 0:
                res.append(_move_to(o, ax % _aval_of(o).ndim))
            else:
                res.append(o)
        return tree_unflatten(o_tree, res)
    return _api_boundary(mapped)


def _global_from_local(x, mesh, name):
    """A pmap argument's local slices (one per local device, stacked in front) as the
    array over every process's devices they are part of."""
    from .sharded_api import make_array_from_process_local_data
    from ..sharding import NamedSharding, PartitionSpec
    return make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec(name)),
                                              np.asarray(x))


def _local_part(o, local_mesh, name):
    """This process's slices of a pmap result over every process's devices, as an array
    over its own devices (what JAX's pmap returns there)."""
    from ..sharding import NamedSharding, PartitionSpec
    bufs = [b for b in o._shards if b is not None]
    shape = (len(bufs),) + tuple(o.aval.shape[1:])
    return ShardedArray(o.aval.update(shape=shape),
                        NamedSharding(local_mesh, PartitionSpec(name)), bufs)


def _check_pmap_placement(leaves, axes, mesh, name) -> list:
    """The leaves as pmap hands them on.  A committed argument (sharded, or put on one
    device) must already be split as pmap splits it: in as many blocks along its mapped
    axis (whatever devices hold them; they move to pmap's), or replicated when unmapped.
    ValueError otherwise, as JAX 0.10.2."""
    from ..sharding import NamedSharding, PartitionSpec
    out = []
    for k, (x, ax) in enumerate(zip(leaves, axes)):
        if not (type(x) is ShardedArray or (type(x) is ArrayImpl and x._committed)):
            out.append(x)
            continue
        nd = x.aval.ndim
        spec = PartitionSpec() if ax is None else \
            PartitionSpec(*([None] * (ax % nd) + [name]))
        want = NamedSharding(mesh, spec)
        if x.sharding._tiling(nd)[0] == want._tiling(nd)[0]:
            out.append(ArrayImpl(x._buf, x.aval, False))    # its value, moved by pmap
        else:
            raise ValueError(f"pmap argument {k} of shape {x.aval.str_short()} is committed "
                             f"to {x.sharding}, which does not match the sharding pmap "
                             f"gives it, {want}: pass an uncommitted array, or device_put "
                             f"it with that sharding.")
    return out


def _axes_leaves(axes, tree) -> list:
    """One axis (int or None) per leaf of ``tree`` from ``axes``, an int/None or a pytree
    prefix of it."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_flatten(tree)[0])
    out: list = []

    def walk(a, t):
        if a is None or isinstance(a, int):
            out.extend([a] * len(tree_flatten(t)[0]))
        elif isinstance(a, (tuple, list)) and type(a) is type(t) and \
                len(a) == len(t):
            for x, y in zip(a, t):
                walk(x, y)
        elif isinstance(a, dict) and isinstance(t, dict) and set(a) == set(t):
            for k in t:
                walk(a[k], t[k])
        else:
            raise ValueError(f"pmap in_axes/out_axes specification must be a tree prefix "
                             f"of the corresponding value, got {axes!r}")
    walk(axes, tree)
    return out


def _move_front(x, ax: int):
    if ax == 0:
        return x
    nd = _aval_of(x).ndim
    perm = [ax] + [i for i in range(nd) if i != ax]
    return _transpose(x, perm)


def _move_to(x, ax: int):
    nd = _aval_of(x).ndim
    perm = list(range(1, nd))
    perm.insert(ax, 0)
    return _transpose(x, perm)
