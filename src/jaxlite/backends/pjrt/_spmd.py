"""jit over a mesh of PJRT devices: one module, partitioned by XLA.

Layer: backends (pjrt).  ``PjrtBackend.run_compiled`` hands a call placed over a mesh
(``Placement.sharded``) here.  Where the CPU platform runs jaxlite's own SPMD partition
(core/run.py), a PJRT platform lowers the whole traced program ONCE to a StableHLO module
whose arguments and results carry their shardings (``mhlo.sharding``, XLA's HloSharding
text), compiles it for ``N`` partitions (the mesh's devices, in mesh order) with XLA's
SPMD partitioner, and runs it with one argument list per device: each argument's shards
go in as they lie, each result comes back as one buffer per device, a ShardedArray.

The results' shardings are the placement's (``out_shardings`` given to jit, else what
jaxlite's sharding propagation found: the same the CPU platform gives), written into the
module as the results' shardings, which XLA's partitioner honours.  Arguments that are
not sharded over the mesh (host values, one-device Arrays) are first placed replicated on
it.  A program that must run once (a host callback in it) runs as the default runs it
(once on one device, its results placed by their shardings).
"""
from __future__ import annotations

import numpy as np

from ...runtime.backend import Backend, Placement
from ...runtime.buffer import out_of_memory
from ._capi import PjrtError, PjrtOutOfMemory
from .backend import module_name


class PartitionedExecutable:
    """A jitted program compiled by XLA for the partitions of one placement.

    Attributes: ``devices`` (the mesh's devices, partition ``k`` on ``devices[k]``),
    ``in_shardings`` / ``out_shardings`` (per flat argument / result: the Sharding it is
    laid out by), ``text`` (the StableHLO module), ``loaded`` (the plugin's executable).
    """

    def __init__(self, backend, closed, name, mesh, in_shardings, out_shardings,
                 manual=None):
        from .backend import _compile_error
        from .lowering import hlo_sharding, lower_module
        self.devices = list(mesh.devices.flat)
        self.in_shardings = list(in_shardings)
        self.out_shardings = list(out_shardings)
        self.manual = manual is not None
        if manual is None:
            jaxpr = closed.jaxpr
            self.in_avals = [v.aval for v in jaxpr.invars]
            self.out_avals = [v.aval for v in jaxpr.outvars]
        else:
            self.in_avals = [v.aval for v in closed.jaxpr.invars]
            self.out_avals = [v.aval for v in closed.jaxpr.outvars]
        arg_text = [hlo_sharding(s, a.ndim, self.devices, mesh)
                    for s, a in zip(self.in_shardings, self.in_avals)]
        res_text = [hlo_sharding(s, a.ndim, self.devices, mesh)
                    for s, a in zip(self.out_shardings, self.out_avals)]
        if manual is None:
            lowered = lower_module(closed, name=module_name(name), platform=backend.platform,
                                   num_partitions=len(self.devices), devices=self.devices,
                                   mesh=mesh, arg_shardings=arg_text,
                                   result_shardings=res_text)
        else:
            lowered = lower_manual(manual, self.in_avals, self.out_avals, module_name(name),
                                   backend.platform, mesh, arg_text, res_text)
        self.text = lowered.text
        self.name = name
        client = backend.client
        try:
            self.loaded = client.compile_partitioned(self.text,
                                                     [d.info for d in self.devices])
        except PjrtError as e:
            raise _compile_error(e, self.text, name) from None
        # per partition, the (shape, dtype) of each output shard
        from ...core.sharded import shard_indices
        self._out_shapes = []
        for s, a in zip(self.out_shardings, self.out_avals):
            idx = {d: i for d, i, _ in shard_indices(s, a.shape)}
            shapes = {d: tuple(len(range(*sl.indices(n))) for sl, n in zip(idx[d], a.shape))
                      for d in self.devices}
            self._out_shapes.append(shapes)
        self._shapes = [[(self._out_shapes[i][d], a.dtype)
                         for i, a in enumerate(self.out_avals)] for d in self.devices]

    def run(self, arg_lists) -> list:
        """Runs on ``arg_lists`` (per partition, its PjrtBuffer of each argument); returns
        per output the list of its shards' PjrtBuffers in ``devices`` order."""
        outs = self.loaded.execute_partitioned(arg_lists, self._shapes)
        return [[outs[k][i] for k in range(len(self.devices))]
                for i in range(len(self.out_avals))]

    def as_text(self) -> str:
        return self.text


def lower_manual(manual, in_avals, out_avals, name, platform, mesh, arg_text, res_text):
    """The module of a jitted shard_map whose per-device program is ``manual``
    (``(closed, in_axes, out_axes)``, transforms/shard_map.py ``per_device``): each
    argument (global, laid out by ``arg_text``) is annotated with its in_spec's sharding
    and cut to this partition's shard (``SPMDFullToShardShape``, manual), the body runs on
    the shards with its collectives as XLA's (the collectives' lowering rules), and each
    result is assembled from the partitions' shards by its out_spec
    (``SPMDShardToFullShape``), laid out by ``res_text``."""
    from ...core.sharded import to_pspec
    from ...sharding import NamedSharding
    from .lowering import LoweringContext, Value, _module, _quote, hlo_sharding
    closed, in_axes, out_axes = manual
    devices = list(mesh.devices.flat)
    ctx = LoweringContext(platform, len(devices), devices, mesh)
    args = [Value(f"%arg{i}", a) for i, a in enumerate(in_avals)]
    manual_text = _quote("{manual}")
    shards = []
    for a, axes, v in zip(args, in_axes, closed.jaxpr.invars):
        spec = hlo_sharding(NamedSharding(mesh, to_pspec(axes)), a.aval.ndim, devices, mesh)
        a = ctx.op("stablehlo.custom_call", [a], a.aval,
                   {"call_target_name": '"Sharding"', "mhlo.sharding": _quote(spec)})
        shards.append(ctx.op("stablehlo.custom_call", [a], v.aval,
                             {"call_target_name": '"SPMDFullToShardShape"',
                              "mhlo.sharding": manual_text}))
    outs = ctx.lower_jaxpr(closed.jaxpr, closed.consts, shards)
    full = []
    for o, axes, g in zip(outs, out_axes, out_avals):
        spec = hlo_sharding(NamedSharding(mesh, to_pspec(axes)), g.ndim, devices, mesh)
        o = ctx.op("stablehlo.custom_call", [o], o.aval,
                   {"call_target_name": '"Sharding"', "mhlo.sharding": manual_text})
        full.append(ctx.op("stablehlo.custom_call", [o], g,
                           {"call_target_name": '"SPMDShardToFullShape"',
                            "mhlo.sharding": _quote(spec)}))
    return _module(ctx, name, args, full, list(out_avals), len(devices), arg_text, res_text)


def run_partitioned(backend, compiled, args, placement) -> list:
    """One call of jitted program ``compiled`` on ``args`` placed over ``placement.mesh``
    (a mesh of ``backend``'s devices), partitioned by XLA (see the module docstring);
    returns its flat outputs as Arrays placed by ``placement.out_shardings``.

    Raises ValueError for a mesh mixing platforms or holding a device twice
    (core/sharded.py ``check_mesh_devices``), and what the default run raises."""
    from ...core.array import ArrayImpl
    from ...core.placement import device_put
    from ...core.sharded import (ShardedArray, check_mesh_devices, check_shardable,
                                 from_natives)
    from ...sharding import NamedSharding, PartitionSpec, SingleDeviceSharding
    from .pieces import holds_callback
    mesh, what = placement.mesh, placement.what
    devices = list(mesh.devices.flat)
    check_mesh_devices(mesh, what)
    closed = compiled._lowered.closed_jaxpr
    for t, v in zip(placement.out_shardings, closed.jaxpr.outvars):
        if isinstance(t, NamedSharding):
            check_shardable(t, v.aval, f"the outputs of {what}")
    if holds_callback(closed.jaxpr):
        # it must run once (host callbacks in order): the default's one-device run
        once = Placement.sharded(
            placement.device, what, placement.check, out_shardings=placement.out_shardings,
            mesh=mesh, across=False, spmd=None, key=placement.key, cache=placement.cache,
            names=placement.names, delete_after=placement.delete_after)
        return Backend.run_compiled(backend, compiled, args, once)
    replicated = NamedSharding(mesh, PartitionSpec())
    dev_set = set(devices)
    leaves = []
    in_sh = []
    for x in args:
        if type(x) is ShardedArray and set(x.sharding._device_assignment) == dev_set:
            in_sh.append(x.sharding)
        else:       # host values, one-device Arrays, shards over other devices
            x = device_put(x, replicated)
            in_sh.append(replicated)
        leaves.append(x)
    targets = list(placement.out_shardings)
    out_sh = []
    for t in targets:
        if isinstance(t, NamedSharding) and set(t._device_assignment) == dev_set:
            out_sh.append(t)
        else:       # placed elsewhere afterwards (device_put from the replicated result)
            out_sh.append(replicated)
    # the placement's key says the arguments' and results' shardings, which decide the
    # module (kept in the cache jit hands over, as the CPU keeps its partitioned program)
    key = placement.key if placement.key is not None else \
        ("pjrt-spmd", tuple(in_sh), tuple(out_sh))
    cache = placement.cache if placement.cache is not None else {}
    ex = cache.get(key)
    if ex is None:
        manual = None
        if placement.manual is not None:
            # a jitted shard_map: its body as manual code with XLA's collectives, where
            # it is one per-device program over the whole mesh (else its expansion,
            # partitioned by XLA like any program)
            try:
                manual = placement.manual()
            except NotImplementedError:
                manual = None
        ex = cache[key] = PartitionedExecutable(backend, closed, compiled._fun_name,
                                                mesh, in_sh, out_sh, manual)
    arg_lists = [[] for _ in devices]
    pos = {d: k for k, d in enumerate(devices)}
    for x in leaves:
        for d, b in zip(x.sharding._device_assignment, x._shards):
            if b.data is None:
                from ...core.array import deleted_error
                raise deleted_error(x.aval)
            arg_lists[pos[d]].append(b.data)
    try:
        outs = ex.run(arg_lists)
    except PjrtOutOfMemory as e:
        raise out_of_memory(None, device=devices[0], what=f"{what}: {e}") from None
    result = []
    for bufs, a, s, t in zip(outs, ex.out_avals, out_sh, targets):
        order = [bufs[pos[d]] for d in s._device_assignment]
        arr = from_natives(order, a, s)
        if t is not s:
            if isinstance(t, SingleDeviceSharding) and t._device in dev_set:
                arr = ArrayImpl(arr._shards[list(s._device_assignment).index(t._device)],
                                a, True)
            elif t is not None:
                arr = device_put(arr, t)
        result.append(arr)
    for x in placement.delete_after:
        x.delete()
    if placement.check is not None:
        placement.check(args, result)
    return result
