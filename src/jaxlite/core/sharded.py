"""Arrays spread over several devices: one buffer per device that holds a shard.

Layer: core (beside array.py).  A ``ShardedArray`` is an Array whose ``sharding`` (a
``NamedSharding``, jaxlite/sharding.py) says which index of the global array each device
holds; it keeps one counted Buffer per device of the sharding, in the sharding's device
order, so each device's ``memory_stats`` holds exactly its shards' bytes (``nbytes / n``
per device along a sharded dimension, ``nbytes`` where replicated).

On devices whose memory is host memory (the CPU platform) a shard along dimension 0 is a
view of one host array (no copy); a replicated shard shares the host array too: the
accounting says what each device holds, not how the host stores it.  On another platform
(a PJRT plugin's devices) each shard is a native buffer of the device's backend (a
``DeviceBuffer``), made and read through that backend only.

Reading the whole array (``np.asarray``, printing, a computation without a sharding rule)
assembles the global value once from the shards and keeps it (the array is immutable).
Operations on sharded arrays (``apply_sharded``) compute on the global value and place the
result by the primitive's sharding rule (replicated where it has none): values are always
the global computation's; only the placement of the result follows the rules.
"""
from __future__ import annotations

import contextlib
import math
import threading
import weakref

import numpy as np

from .. import monitoring
from ..runtime import mpi as _mpi, transfer as _transfer
from ..runtime.buffer import Buffer, DeviceBuffer, host_view
from ..runtime.dispatch import PendingBuffer as _PendingBuffer
from .array import ArrayImpl, Shard, deleted_error


class _MeshContext(threading.local):
    """This thread's concrete mesh of ``set_mesh`` (``mesh``; None when none is set or it
    has no devices), kept here for the eager path and jit: as in JAX, operations and jit
    calls over operands on no mesh place their results on it (``apply_in_mesh``)."""
    mesh = None


mesh_context = _MeshContext()


class ShardedArray(ArrayImpl):
    """An Array held as shards on several devices (``jax.Array`` with a NamedSharding).

    Args:
      aval: the global abstract value (shape, dtype, weak type).
      sharding: a ``NamedSharding`` (or any sharding with ``_device_assignment`` and
        ``devices_indices_map``).
      bufs: one counted Buffer per device of ``sharding._device_assignment``, in that
        order, each holding that device's index of the global array; None for a device
        of another process (several processes, see jaxlite.distributed): this process
        holds only its own devices' shards.
      global_value: the global host array the buffers are views of, if there is one.
    """

    __slots__ = ("_shards", "_sharding", "_gbuf")

    def __init__(self, aval, sharding, bufs, global_value=None):
        self.aval = aval
        self._sharding = sharding
        self._shards = tuple(b.result() if type(b) is _PendingBuffer else b for b in bufs)
        self._committed = True
        self._key = None
        self._gbuf = None if global_value is None else _view_buffer(
            global_value, next(b for b in self._shards if b is not None).device)

    # ---- the global value --------------------------------------------------------------
    @property
    def _buf(self):
        """The global value as one uncounted buffer on the first device (assembled from
        the shards on first use).  Code written for one device reads values through it."""
        for b in self._shards:      # a shard may share its buffer with another Array
            if b is not None and b.data is None:
                raise deleted_error(self.aval)
        g = self._gbuf
        if g is None:
            value = np.empty(self.aval.shape, self.aval.dtype)
            remote = None in self._shards
            have = set()
            for (dev, idx, rid), b in zip(shard_indices(self._sharding, self.aval.shape),
                                          self._shards):
                key = tuple((i.start, i.stop) for i in idx)
                if b is not None and key not in have:
                    value[idx] = host_view(b)
                    have.add(key)
            if remote and not _covers(have, self._sharding, self.aval.shape):
                raise non_addressable_error(self)
            g = self._gbuf = _view_buffer(value, self._local_device())
        return g

    def _local_device(self):
        return next(b for b in self._shards if b is not None).device

    def _readable(self) -> bool:
        """Whether this process can read the global value (it holds every distinct
        shard: always with one process)."""
        if None not in self._shards:
            return True
        have = {tuple((i.start, i.stop) for i in idx) for (_, idx, _), b in
                zip(shard_indices(self._sharding, self.aval.shape), self._shards)
                if b is not None}
        return _covers(have, self._sharding, self.aval.shape)

    def __repr__(self):
        if not self._readable():        # as JAX: no values of other processes' shards
            return f"Array(shape={self.aval.shape}, dtype={self.aval.dtype.name})"
        return ArrayImpl.__repr__(self)

    def __str__(self):
        if not self._readable():
            return self.__repr__()
        return ArrayImpl.__str__(self)

    def _host_value(self, explicit: bool = False) -> np.ndarray:
        """The global value, read-only, counted as one device-to-host transfer per
        distinct shard (replica 0 of each block)."""
        value = self._buf.data          # raises RuntimeError when deleted
        if monitoring._listeners:
            monitoring.emit("read", array_id=id(self))
        for (dev, _, rid), b in zip(shard_indices(self._sharding, self.aval.shape),
                                    self._shards):
            if rid == 0 and b is not None:
                _transfer.count("device_to_host", explicit, b.nbytes, dev, "host",
                                self.aval)
        return value

    # ---- placement ---------------------------------------------------------------------
    @property
    def sharding(self):
        return self._sharding

    @property
    def device(self):
        """The device when the array lives on one; otherwise its sharding (as JAX)."""
        devs = self._sharding._device_assignment
        return devs[0] if len(devs) == 1 else self._sharding

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every shard (False over several processes'
        devices)."""
        return None not in self._shards

    def devices(self) -> set:
        return set(self._sharding._device_assignment)

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    @property
    def addressable_shards(self) -> list:
        """One ``Shard`` per device of this process (``device``, ``index`` into the global
        array, ``replica_id``, ``data``: a one-device Array sharing the device's
        buffer)."""
        from .avals import ShapedArray
        out = []
        for (dev, idx, rid), b in zip(shard_indices(self._sharding, self.aval.shape),
                                      self._shards):
            if b is None:
                continue
            if b.data is None:
                raise deleted_error(self.aval)
            aval = ShapedArray(b.data.shape, self.aval.dtype, self.aval.weak_type)
            out.append(Shard(dev, idx, rid, ArrayImpl(b, aval, True)))
        return out

    @property
    def global_shards(self) -> list:
        """Every device's Shard; over several processes' devices, as JAX, the other
        processes' shards have ``data`` None (their values live there)."""
        if None not in self._shards:
            return self.addressable_shards
        mine = iter(self.addressable_shards)
        return [next(mine) if b is not None else Shard(dev, idx, rid, None)
                for (dev, idx, rid), b in zip(shard_indices(self._sharding, self.aval.shape),
                                              self._shards)]

    def addressable_data(self, index: int):
        """The one-device Array of addressable shard ``index``."""
        return self.addressable_shards[index].data

    # ---- lifetime ----------------------------------------------------------------------
    def block_until_ready(self):
        if any(b is not None and b.data is None for b in self._shards):
            raise deleted_error(self.aval)
        for b in self._shards:      # a platform whose results come back before computed
            if type(b) is DeviceBuffer:
                b.device.backend.block_until_ready(b.data, b.device)
        return self

    def copy_to_host_async(self) -> None:
        self.block_until_ready()

    def delete(self) -> None:
        """Frees every shard (``jax.Array.delete``)."""
        for b in self._shards:
            if b is not None:
                b.delete()
        self._gbuf = None

    def is_deleted(self) -> bool:
        return any(b is not None and b.data is None for b in self._shards)

    def _check_alive(self):
        if self.is_deleted():
            raise deleted_error(self.aval)

    def on_device_size_in_bytes(self) -> int:
        """Bytes of all the shards together, replicas included (as JAX reports it: a
        float32[8,4] array is 128 bytes split 8 ways, 1024 bytes replicated on 8 devices).
        Raises RuntimeError once deleted."""
        self._check_alive()
        return sum(b.nbytes for b in self._shards if b is not None)

    def unsafe_buffer_pointer(self) -> int:
        """Refused, as JAX: a sharded array has no single buffer (JaxRuntimeError)."""
        from ..errors import JaxRuntimeError
        raise JaxRuntimeError("INVALID_ARGUMENT: UnsafeBufferPointer() is supported only "
                              "for unsharded arrays; use x.addressable_data(i)."
                              "unsafe_buffer_pointer() for one shard's.")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Refused, as JAX: DLPack describes memory on one device (BufferError)."""
        raise BufferError(f"to_dlpack can only pack a dlpack tensor from an array on a "
                          f"singular device, but an array with a Sharding over "
                          f"{len(self._shards)} devices was provided; export "
                          f"x.addressable_data(i) or jaxlite.device_put(x, device).")

    def _rows(self):
        # as JAX: the rows of a sharded array are uncommitted arrays on its first device
        from .avals import ShapedArray
        a = self.aval
        row = ShapedArray(a.shape[1:], a.dtype, a.weak_type)
        dev = self._local_device()
        for i in range(a.shape[0]):
            yield ArrayImpl(host_buffer(np.array(self._buf.data[i]), dev), row, False)

    def __copy__(self):
        """A new sharded array with the same sharding and buffers of its own."""
        self._check_alive()
        return from_global(np.array(self._buf.data, copy=True), self.aval, self._sharding)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        # as JAX: the values travel, and land on the default device, uncommitted
        from .array import _reconstruct
        return (_reconstruct, (np.array(self._host_value()), self.aval.weak_type))


def non_addressable_error(x) -> RuntimeError:
    """Reading the value of an array some of whose shards only other processes hold."""
    procs = sorted({d.process_index for d in x._sharding._device_assignment})
    return RuntimeError(
        f"cannot read the value of this {x.aval.str_short()} array here: it is sharded "
        f"over the devices of processes {procs} ({x._sharding}) and this process "
        f"(process {_process_index()}) holds only its own shards. Gather it on every "
        f"process with jaxlite.experimental.multihost_utils.process_allgather(x, "
        f"tiled=True), or read this process's pieces from x.addressable_shards.  (A "
        f"jitted function that closes over such an array reads it as a constant: pass it "
        f"as an argument instead.)")


def _process_index() -> int:
    w = _mpi._world
    return 0 if w is None else w.rank


def _covers(have: set, sharding, shape) -> bool:
    """Whether the distinct indices in ``have`` are every distinct index of ``sharding``."""
    return have >= {tuple((i.start, i.stop) for i in idx)
                    for _, idx, _ in shard_indices(sharding, shape)}


def _view_buffer(value: np.ndarray, device) -> Buffer:
    """An uncounted Buffer of ``value`` (a view of memory the shards account for)."""
    b = Buffer.__new__(Buffer)
    value.setflags(write=False)
    b.data, b.device, b.nbytes = value, device, 0
    return b


_SHARD_INDICES: dict = {}


def shard_indices(sharding, shape) -> tuple:
    """``((device, index, replica_id), ...)`` in the sharding's device order: the tuple of
    slices each device holds, and which copy of that index it is (0 for the first device
    holding it, 1 for the next, ...).  Memoised per (sharding, shape): every sharded
    result of a jit call is laid out by it."""
    key = (sharding, tuple(shape))
    try:
        out = _SHARD_INDICES.get(key)
    except TypeError:           # an unhashable sharding: computed every time
        key = out = None
    if out is not None:
        return out
    out = tuple(_shard_indices(sharding, shape))
    if key is None:
        return out
    if len(_SHARD_INDICES) >= 1024:
        _SHARD_INDICES.clear()
    _SHARD_INDICES[key] = out
    return out


def _shard_indices(sharding, shape) -> list:
    idx_map = sharding.devices_indices_map(tuple(shape))
    seen: dict = {}
    out = []
    for dev in sharding._device_assignment:
        idx = idx_map[dev]
        key = tuple((s.start, s.stop, s.step) for s in idx)
        rid = seen.get(key, 0)
        seen[key] = rid + 1
        out.append((dev, idx, rid))
    return out


def check_shardable(sharding, aval, what: str = "array", typed: bool = False) -> None:
    """Raises ValueError when ``sharding`` cannot hold an array of ``aval``: a spec longer
    than the rank, or a dimension its mesh axes do not divide (IndivisibleError, naming
    both); checked before anything is placed.

    ``typed``: the result gets ``sharding`` as its type (``device_put``), which JAX checks
    first: a dimension that the spec's Explicit mesh axes alone do not divide raises a
    plain ValueError naming the shape, the axes and the dimension."""
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return
    check_mesh_devices(sharding.mesh, what)
    shape = aval.shape
    if len(spec) > len(shape):
        raise ValueError(
            f"One of {what} is incompatible with its sharding annotation {sharding}: "
            f"Sharding {sharding} is only valid for values of rank at least {len(spec)}, "
            f"but was applied to a value of rank {len(shape)}")
    sizes = sharding.mesh.shape
    if typed:
        explicit = set(getattr(sharding.mesh, "explicit_axes", ()))
        for d, entry in enumerate(spec):
            names = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
            names = tuple(a for a in names if a in explicit)
            n = math.prod(sizes[a] for a in names)
            if shape[d] % n:
                # worded as reshard's same check (_sharding_constraints._check_fits)
                raise ValueError(
                    f"Sharding spec {names} implies that array axis {d} is partitioned {n} "
                    f"times, but does not evenly divide the dimension size {shape[d]}. Got "
                    f"shape: {tuple(shape)} and sharding {sharding}")
    for d, entry in enumerate(spec):
        names = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
        n = 1
        for a in names:
            n *= sizes[a]
        if n > 1 and shape[d] % n:
            from ..sharding import IndivisibleError
            tiling = [1] * len(shape)
            tiling[d] = n
            raise IndivisibleError(
                f"Sharding {sharding} implies that array axis {d} is partitioned {n} "
                f"times, but the dimension size is {shape[d]} (full shape: {tuple(shape)}, "
                f"per-dimension tiling factors: {tiling} should evenly divide the shape)")


_MESHES_CHECKED: dict = {}


def check_mesh_devices(mesh, what: str = "array") -> None:
    """Raises ValueError when the concrete ``mesh`` cannot hold arrays: it mixes devices
    of several platforms (a program runs on one platform's devices), or holds a device
    more than once (more partitions than the platform has devices: one shard per device).
    Checked once per mesh; an abstract mesh passes."""
    devs = getattr(mesh, "devices", None)
    if not isinstance(devs, np.ndarray):
        return
    key = id(mesh)
    if _MESHES_CHECKED.get(key) is mesh:
        return
    flat = list(devs.flat)
    platforms = {}
    for d in flat:
        platforms.setdefault(d.platform if d.backend is None else d.backend.platform,
                             []).append(d)
    if len(platforms) > 1:
        raise ValueError(
            f"{what}: the mesh {dict(mesh.shape)} mixes devices of the platforms "
            f"{sorted(platforms)} ({', '.join(f'{p}: {v}' for p, v in platforms.items())}); "
            f"the devices of a mesh must be of one platform: build it from "
            f"jaxlite.devices(platform).")
    if len(set(flat)) != len(flat):
        twice = sorted({repr(d) for d in flat if flat.count(d) > 1})
        (platform, have), = platforms.items()
        n_plat = len(have[0].backend.devices()) if have[0].backend is not None else None
        raise ValueError(
            f"{what}: the mesh {dict(mesh.shape)} has {len(flat)} positions but "
            f"{len(set(flat))} distinct devices (it holds {', '.join(twice)} more than "
            f"once): a sharding over it needs {len(flat)} partitions, one per device, and "
            f"platform {platform!r} has {n_plat} devices. Build the mesh from distinct "
            f"devices (jaxlite.make_mesh).")
    if len(_MESHES_CHECKED) > 256:
        _MESHES_CHECKED.clear()
    _MESHES_CHECKED[key] = mesh


def from_global(value: np.ndarray, aval, sharding) -> ShardedArray:
    """A ShardedArray of the global host array ``value`` (owned: read-only from now on,
    of ``aval``'s dtype and shape): on host memory each device's buffer is a view of its
    index (a copy where the view is not contiguous); on another platform each device gets
    its index copied into a native buffer by its backend (``from_host``), and the global
    value is not kept.  Counts no transfer."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"from_global takes a host NumPy array, got {type(value).__name__}")
    value.setflags(write=False)
    bufs = []
    me = _process_index()
    host = True
    for dev, idx, _ in shard_indices(sharding, aval.shape):
        if dev.process_index != me:        # another process's device: its own shard
            bufs.append(None)
            continue
        piece = value[tuple(idx) + (Ellipsis,)]     # an ndarray view, also for rank 0
        if not piece.flags.c_contiguous:
            piece = np.ascontiguousarray(piece)
        if dev._host_memory:
            bufs.append(Buffer(piece, dev))
        else:
            host = False
            bufs.append(DeviceBuffer(dev.backend.from_host(piece, dev), dev))
    if None in bufs or not host:
        value = None
    return ShardedArray(aval, sharding, bufs, value)


def from_natives(natives, aval, sharding) -> ShardedArray:
    """A ShardedArray of ``aval`` over ``sharding`` whose shards are the native values
    ``natives`` (one per device of ``sharding._device_assignment``, in that order, each
    made by that device's backend: a partitioned program's per-device results).  Each is
    counted on its device.  Counts no transfer."""
    devs = sharding._device_assignment
    if len(natives) != len(devs):
        raise ValueError(f"from_natives: {len(natives)} shards for the {len(devs)} devices "
                         f"of {sharding}")
    from ..runtime.buffer import new_buffer
    return ShardedArray(aval, sharding, [new_buffer(n, d) for n, d in zip(natives, devs)])


def host_buffer(value: np.ndarray, device):
    """A counted buffer on ``device`` holding host array ``value`` (owned): the array
    itself on host memory, a copy made by the device's backend otherwise."""
    if device._host_memory:
        return Buffer(value, device)
    return DeviceBuffer(device.backend.from_host(np.asarray(value, order="C"), device),
                        device)


def is_sharded(x) -> bool:
    return type(x) is ShardedArray


def spec_tuple(sharding, ndim: int) -> tuple:
    """The sharding's spec as one tuple of mesh axis names per dimension."""
    spec = tuple(getattr(sharding, "spec", ())) + (None,) * ndim
    return tuple(() if e is None else (e if isinstance(e, tuple) else (e,))
                 for e in spec[:ndim])


def to_pspec(spec: tuple):
    """A PartitionSpec from one tuple of axis names per dimension (trailing unsharded
    dimensions dropped, as JAX prints propagated specs)."""
    from ..sharding import PartitionSpec
    entries = [None if not e else (e[0] if len(e) == 1 else tuple(e)) for e in spec]
    while entries and entries[-1] is None:
        entries.pop()
    return PartitionSpec(*entries)


def result_pspec(mesh, spec: tuple):
    """The PartitionSpec JAX gives a computed result of per-dimension axis names ``spec``
    on ``mesh``: as long as the rank when the mesh has Explicit axes and the result uses
    none of its Auto axes (the sharding then comes from the result's type); otherwise
    trailing unsplit dimensions dropped (as the compiler reports it)."""
    pspec = to_pspec(spec)
    auto = set(mesh.auto_axes)
    if mesh.explicit_axes and not any(n in auto for e in spec for n in e):
        from ..sharding import PartitionSpec
        pspec = PartitionSpec(*pspec, *[None] * (len(spec) - len(pspec)))
    return pspec


def as_input_shardings(shardings, args, out_avals) -> list:
    """``shardings`` (one per result) with each NamedSharding that lays its result out
    as an argument's sharding lays that argument out (same mesh, rank and per-dimension
    axes) replaced by that argument's sharding object, the first such in argument order:
    as JAX, a result keeps the spelling of its input's spec (``P('x', None)`` stays so
    rather than becoming ``P('x',)``).  Not over Explicit axes, where the result's type
    says its spec."""
    ins = [(a.sharding, a.aval.ndim) for a in args
           if type(a) is ShardedArray and not a.sharding.mesh.explicit_axes]
    if not ins:
        return shardings
    out = []
    for sh, av in zip(shardings, out_avals):
        spec = getattr(sh, "spec", None)
        if spec is not None:
            nd = len(av.shape)
            mine = spec_tuple(sh, nd)
            for s, k in ins:
                if k == nd and s.mesh is sh.mesh and s is not sh and \
                        spec_tuple(s, nd) == mine:
                    sh = s
                    break
        out.append(sh)
    return out


def output_shardings(prim, args, avals, out_avals, params, sharding0) -> list:
    """The shardings of ``prim``'s results over sharded operands: from the primitive's
    sharding rule when it has one; otherwise an elementwise primitive keeps the common
    sharding of its same-shaped operands; anything else is replicated over the mesh."""
    from ..sharding import NamedSharding
    mesh = sharding0.mesh
    axis_sizes = dict(mesh.shape)
    in_specs = [spec_tuple(a.sharding, av.ndim) if type(a) is ShardedArray else
                ((),) * av.ndim for a, av in zip(args, avals)]
    rule = getattr(prim, "sharding", None)
    specs = None
    if rule is not None:
        try:
            specs = list(rule(in_specs, list(avals), axis_sizes, **params).outputs)
        except NotImplementedError:
            specs = None
    if specs is None:
        specs = [((),) * o.ndim for o in out_avals]
        if prim.kind == "elementwise" and len(out_avals) == 1:
            shaped = [s for a, av, s in zip(args, avals, in_specs)
                      if type(a) is ShardedArray and av.shape == out_avals[0].shape]
            if shaped and all(s == shaped[0] for s in shaped):
                specs = [shaped[0]]
    return [NamedSharding(mesh, result_pspec(mesh, s)) for s in specs]


def _own(val, aval, inputs) -> np.ndarray:
    """``val`` as an ndarray of ``aval``'s dtype that shares no memory with ``inputs``."""
    if type(val) is not np.ndarray or val.dtype != aval.dtype:
        val = np.asarray(val, dtype=aval.dtype)
    if val.shape != aval.shape:
        raise AssertionError(f"implementation returned shape {val.shape}, expected {aval}")
    if val.base is not None or any(val is v for v in inputs):
        val = np.array(val, copy=True)
    return val


def mesh_devices_check(args, what: str):
    """The sharding of the first sharded operand; raises ValueError when sharded operands
    live on different device sets, or a committed one-device operand is elsewhere."""
    sharded = [(i, a) for i, a in enumerate(args) if type(a) is ShardedArray]
    i0, a0 = sharded[0]
    devs0 = a0.sharding._device_assignment
    for i, a in sharded[1:]:
        if a.sharding._device_assignment != devs0:
            raise ValueError(
                f"Received incompatible devices for {what}: argument {i0} of shape "
                f"{a0.aval.str_short()} is sharded over devices "
                f"{[d.id for d in devs0]} (mesh {dict(a0.sharding.mesh.shape)}), "
                f"argument {i} of shape {a.aval.str_short()} over devices "
                f"{[d.id for d in a.sharding._device_assignment]} (mesh "
                f"{dict(a.sharding.mesh.shape)}). Use jaxlite.device_put to put them on "
                f"one mesh.")
        m0, m = a0.sharding.mesh, a.sharding.mesh
        if m is not m0 and (m0.explicit_axes or m.explicit_axes):
            # as JAX: with Explicit axes the mesh is part of the type; Auto meshes over
            # the same devices mix
            raise ValueError(
                f"Mesh for all inputs should be equal. Got one mesh: {m0.abstract_mesh} "
                f"(argument {i0} of {what}) and another mesh: {m.abstract_mesh} (argument "
                f"{i}). Use jaxlite.device_put to put them on one mesh.")
    for i, a in enumerate(args):
        if type(a) is ArrayImpl and a._committed and len(devs0) > 1:
            raise ValueError(
                f"Received incompatible devices for {what}: argument {i} of shape "
                f"{a.aval.str_short()} is committed to {a._buf.device!r}, argument {i0} of "
                f"shape {a0.aval.str_short()} is sharded over devices "
                f"{[d.id for d in devs0]}. Use jaxlite.device_put to put them on one mesh.")
    return a0.sharding


def check_explicit_eager(prim, args, avals, out_avals, params, mesh) -> list:
    """Raises ShardingTypeError (``core.sharding_types``) where JAX's typing rule of Explicit
    sharding refuses ``prim`` on ``args`` eagerly: a ShardedArray over ``mesh``'s Explicit
    axes is typed by its spec, any other operand carries no mesh.  Returns the results'
    types (``Ty``, or None where no typing rule decides one)."""
    from .batching import BatchTrace
    from .sharding_types import Ty, check_eqn, project
    from .trace import trace_stack
    if getattr(_checked_program, "depth", 0):
        # an equation of a program checked whole (``checked_program``)
        return None
    names = set(mesh.axis_names)
    if any(m.trace_type is BatchTrace and getattr(m.payload, "name", None) in names
           for m in trace_stack()):
        # inside shard_map's expansion (a batching level per mesh axis): the per-device
        # program runs over Manual axes, which JAX does not type
        return None
    explicit = frozenset(mesh.explicit_axes)
    # an operand that is not a ShardedArray carries no mesh, nor does a result of such
    # operands under set_mesh (``on_mesh``; JAX's library functions give their constants
    # their operands' sharding; jaxlite's do not)
    tys = [None if _tag_of(a) == "untyped" else
           Ty(project(spec_tuple(a.sharding, av.ndim), explicit), True)
           if on_mesh(a) and a.sharding.mesh.explicit_axes
           else Ty(((),) * av.ndim, False) for a, av in zip(args, avals)]
    return check_eqn(prim, tys, avals, out_avals, params, dict(mesh.shape), explicit,
                     of_broadcast=bool(args) and _tag_of(args[0]) == "broadcast")


_checked_program = threading.local()


@contextlib.contextmanager
def checked_program(closed, args):
    """Context for evaluating the equations of ``closed`` (a ClosedJaxpr staged by jit)
    one by one on ``args`` (its flat operands; a differentiation evaluates a jit's program
    this way): the program is first type-checked whole against JAX's rules of Explicit
    sharding, as jit checks it, with the ShardedArray operands over Explicit axes typed by
    their specs, and the per-equation eager check is off while its equations run (they
    include shard_map's expansion, whose slices of the stacked devices are not user
    operations).  Raises ShardingTypeError where JAX's jit does.  Nested programs are
    checked as part of the outermost one."""
    from .sharding_types import Ty, check_jaxpr, project
    depth = getattr(_checked_program, "depth", 0)
    mesh = None
    if not depth:
        for a in args:
            if on_mesh(a) and a.sharding.mesh.explicit_axes:
                mesh = a.sharding.mesh
                break
    if mesh is not None:
        explicit = frozenset(mesh.explicit_axes)
        tys = []
        for a, v in zip(args, closed.jaxpr.invars):
            ndim = len(v.aval.shape)
            on = on_mesh(a) and a.sharding.mesh is mesh
            tys.append(Ty(project(spec_tuple(a.sharding, ndim), explicit), True) if on
                       else Ty(((),) * ndim, False))
        check_jaxpr(closed, tys, dict(mesh.shape), explicit)
    _checked_program.depth = depth + 1
    try:
        yield
    finally:
        _checked_program.depth = depth


# Eager results whose sharding type the checker could not decide ("untyped": their
# placement came from the sharding rules, which JAX's type may not share, so later ops
# do not check against it) and results of a broadcast_in_dim that added dimensions
# ("broadcast": a reshape of them is how jaxlite builds ops such as tile).  Keyed by id,
# each entry dropped with its array (Arrays are unhashable).
_TAGS: dict = {}


def _tag(arr, tag) -> None:
    key = id(arr)

    def drop(ref, key=key):
        if _TAGS.get(key, (None,))[0] is ref:
            del _TAGS[key]
    _TAGS[key] = (weakref.ref(arr, drop), tag)


def on_mesh(x) -> bool:
    """Whether ``x`` is typed by its mesh in JAX's Explicit-sharding check: a ShardedArray,
    except a result under ``set_mesh`` of operands on no mesh (tagged "context"), read as
    carrying no mesh like the constants jaxlite's library functions make (JAX gives
    those their operands' sharding; see ``check_explicit_eager``)."""
    return type(x) is ShardedArray and _tag_of(x) != "context"


def _tag_of(arr):
    entry = _TAGS.get(id(arr))
    if entry is None or entry[0]() is not arr:
        return None
    return entry[1]


def typed_sharding(mesh, ty, aval):
    """The NamedSharding JAX gives a result of sharding type ``ty`` on ``mesh`` when every
    axis of ``mesh`` is Explicit (the type then says the whole layout), else None (a mixed
    mesh, an unknown type, or a spec its dimensions cannot hold)."""
    if ty is None or mesh.auto_axes or mesh.manual_axes or len(ty.spec) != aval.ndim:
        return None
    sizes = mesh.shape
    for n, e in zip(aval.shape, ty.spec):
        k = 1
        for a in e:
            k *= sizes[a]
        if n % k:
            return None
    from ..sharding import NamedSharding
    return NamedSharding(mesh, result_pspec(mesh, ty.spec))


def context_devices_check(mesh, args, what: str, names=None) -> None:
    """Under ``set_mesh(mesh)``: raises ValueError (as JAX) for an operand committed to
    devices other than the mesh's, naming it, its devices and the mesh's."""
    devs = set(mesh._flat_devices) if hasattr(mesh, "_flat_devices") else \
        set(mesh.devices.flat)
    for i, a in enumerate(args):
        if type(a) is ShardedArray:
            have = list(a.sharding._device_assignment)
        elif type(a) is ArrayImpl and a._committed:
            have = [a._buf.device]
        else:
            continue
        if set(have) != devs:
            n = names[i] if names else f"argument {i}"
            raise ValueError(
                f"Received incompatible devices for {what}: {n} with shape "
                f"{a.aval.str_short()} lives on device ids {[d.id for d in have]} and the "
                f"context mesh of set_mesh has device ids "
                f"{[d.id for d in mesh.devices.flat]}. Move it onto the mesh with "
                f"jaxlite.device_put(x, NamedSharding(mesh, P(...))) or leave set_mesh.")


def apply_in_mesh(prim, args, params, mesh):
    """Runs ``prim`` eagerly under ``set_mesh(mesh)`` on operands on no mesh (host values,
    uncommitted Arrays): as JAX, the results live on the mesh, replicated (``P()`` over
    Auto axes; over Explicit ones typed, ``P(None, ...)``).  Raises ValueError for an
    operand committed elsewhere (``context_devices_check``)."""
    from ..sharding import NamedSharding, PartitionSpec
    context_devices_check(mesh, args, prim.name)
    return apply_sharded(prim, args, params, NamedSharding(mesh, PartitionSpec()))


def apply_sharded(prim, args, params, sharding0=None):
    """Runs ``prim`` eagerly where an operand is a ShardedArray (or under ``set_mesh``
    with ``sharding0``, the mesh replicated): the global values are computed on the host
    and the results placed by ``output_shardings``.

    Raises ValueError for operands on different meshes (see ``mesh_devices_check``), or
    off the mesh of ``set_mesh``."""
    from .eager import fp_ignore_begin, fp_ignore_end, value_on
    from .trace import get_aval
    context = sharding0 is not None
    if sharding0 is None:
        sharding0 = mesh_devices_check(args, prim.name)
        if mesh_context.mesh is not None:
            context_devices_check(mesh_context.mesh, args, prim.name)
    if _mpi._world is not None and spans_processes(sharding0.mesh):
        return apply_across(prim, args, params)
    dev0 = sharding0._device_assignment[0]
    avals = [get_aval(a) for a in args]
    out = prim.abstract_eval_cached(tuple(avals), params)
    out_avals = list(out) if prim.multiple_results else [out]
    typed = None
    if sharding0.mesh.explicit_axes:
        typed = check_explicit_eager(prim, args, avals, out_avals, params, sharding0.mesh)
    vals = [a._buf.data if type(a) is ShardedArray else value_on(a, dev0) for a in args]
    if not dev0._host_memory:      # the global computation runs on the host
        vals = [v if isinstance(v, (np.ndarray, np.generic)) else
                dev0.backend.to_host(v, dev0) for v in vals]
    token = fp_ignore_begin()
    try:
        res = prim.impl(*vals, **params)
    finally:
        fp_ignore_end(token)
    res = list(res) if prim.multiple_results else [res]
    shardings = output_shardings(prim, args, avals, out_avals, params, sharding0)
    if typed is not None:
        shardings = [typed_sharding(sharding0.mesh, t, a) or s
                     for t, a, s in zip(typed, out_avals, shardings)]
    shardings = as_input_shardings(shardings, args, out_avals)
    outs = [from_global(_own(v, a, vals), a, s)
            for v, a, s in zip(res, out_avals, shardings)]
    if context:
        for o in outs:
            _tag(o, "context")
    elif sharding0.mesh.explicit_axes:
        for k, o in enumerate(outs):
            if typed is None or typed[k] is None:
                _tag(o, "untyped")
            elif prim.name == "broadcast_in_dim" and o.aval.ndim > avals[0].ndim:
                _tag(o, "broadcast")
    return outs if prim.multiple_results else outs[0]


# ---- several processes (jaxlite.distributed) ---------------------------------------------

class ProcessBox:
    """Where this process's devices sit in a mesh spanning several processes.  They must
    form a box (a contiguous block along every axis, as ``make_mesh`` and a reshape of
    ``jax.devices()`` give), every process's box of the same sizes: ``local[a]`` devices
    along axis ``a`` starting at ``offset[a]``; ``ranks[a]`` are the processes holding
    the blocks along ``a`` that share this process's position on the other axes, in
    block order; ``coords`` maps each of this process's devices to its mesh position."""

    __slots__ = ("local", "offset", "ranks", "coords")

    def __init__(self, local, offset, ranks, coords):
        self.local, self.offset, self.ranks, self.coords = local, offset, ranks, coords


_BOXES: dict = {}


def spans_processes(mesh) -> bool:
    """Whether ``mesh`` (a concrete Mesh) holds devices of other processes."""
    w = _mpi._world
    if w is None:
        return False
    devs = getattr(mesh, "devices", None)
    if not isinstance(devs, np.ndarray):
        return False
    return any(d.process_index != w.rank for d in devs.flat)


def process_box(mesh) -> ProcessBox:
    """This process's ``ProcessBox`` in ``mesh`` (memoised per mesh).

    Raises ValueError when the mesh leaves out a process (every process must take part
    in a program over the mesh), or the processes' devices do not form equal boxes."""
    box = _BOXES.get(mesh)
    if box is not None:
        return box
    w = _mpi._world
    names = tuple(mesh.axis_names)
    devs = mesh.devices
    procs = np.array([d.process_index for d in devs.flat]).reshape(devs.shape)
    missing = sorted(set(range(w.size)) - set(procs.ravel().tolist()))
    if missing:
        raise ValueError(f"the mesh {dict(mesh.shape)} has no device of processes "
                         f"{missing}: a mesh over several processes must include devices "
                         f"of every process (of {w.size}), since each runs the programs "
                         f"over it; build it from jaxlite.devices() (all processes' "
                         f"devices), e.g. jaxlite.make_mesh(...).")
    blocks = {}
    for p in range(w.size):
        at = np.argwhere(procs == p)
        lo, hi = at.min(0), at.max(0) + 1
        if int(np.prod(hi - lo)) != len(at):
            raise ValueError(f"the devices of process {p} do not form a block of the mesh "
                             f"{dict(mesh.shape)} (their positions: {at.tolist()}); order "
                             f"the mesh's devices by process (as jaxlite.make_mesh does).")
        blocks[p] = (tuple(lo.tolist()), tuple((hi - lo).tolist()))
    sizes = {b[1] for b in blocks.values()}
    if len(sizes) != 1:
        raise ValueError(f"the processes hold blocks of different sizes of the mesh "
                         f"{dict(mesh.shape)}: {sorted(sizes)}; give every process the "
                         f"same number of devices (JAX_NUM_CPU_DEVICES).")
    lo, size = blocks[w.rank]
    local, offset, ranks = {}, {}, {}
    for i, a in enumerate(names):
        local[a], offset[a] = size[i], lo[i]
        along = [p for p, (plo, _) in blocks.items()
                 if all(plo[j] == lo[j] for j in range(len(names)) if j != i)]
        ranks[a] = tuple(sorted(along, key=lambda p: blocks[p][0][i]))
    coords = {devs[c]: c for c in np.ndindex(*devs.shape) if procs[c] == w.rank}
    box = _BOXES[mesh] = ProcessBox(local, offset, ranks, coords)
    return box


def local_stack(x, spec_axes, mesh, box, mesh_axes) -> np.ndarray:
    """This process's shards of ``x`` laid out by ``spec_axes`` (one tuple of mesh axes
    per dimension) over ``mesh``, stacked in front: one axis per axis of ``mesh_axes``
    the spec names (in that order, this process's devices along it), then the shard's
    shape.  ``x`` is a ShardedArray (moved to that layout first when it has another
    one), or a value every process holds whole (a host array, a one-device Array)."""
    from ..sharding import NamedSharding
    from .trace import get_aval
    aval = get_aval(x)
    sharding = NamedSharding(mesh, to_pspec(spec_axes))
    named = [a for a in mesh_axes if any(a in e for e in spec_axes)]
    sizes = dict(mesh.shape)
    block = []
    for d, e in enumerate(spec_axes):
        n = 1
        for a in e:
            n *= sizes[a]
        block.append(aval.shape[d] // n)
    if type(x) is ShardedArray:
        if not (x.sharding.mesh == mesh and
                spec_tuple(x.sharding, aval.ndim) == tuple(spec_axes)):
            if x._readable():
                x = x._buf.data
            else:
                x = move_across(x, sharding)
    shape = [box.local[a] for a in named] + block
    if type(x) is ShardedArray:
        pieces = {dev: b.data for dev, b in zip(x.sharding._device_assignment, x._shards)
                  if b is not None}
        if len(box.coords) == 1:        # one device here: its shard is the stack (a view)
            return pieces[next(iter(box.coords))].reshape(shape)
    out = np.empty(shape, aval.dtype)
    if type(x) is ShardedArray:
        for dev, c in box.coords.items():
            out[tuple(c[mesh.axis_names.index(a)] - box.offset[a] for a in named)] = \
                pieces[dev]
        return out
    value = np.asarray(x._buf.data if isinstance(x, ArrayImpl) else x, aval.dtype)
    for dev, idx, _ in shard_indices(sharding, aval.shape):
        c = box.coords.get(dev)
        if c is not None:
            out[tuple(c[mesh.axis_names.index(a)] - box.offset[a] for a in named)] = \
                value[tuple(idx)]
    return out


# Set by transforms/jit.py (core does not import the transforms): ``jitted(fun,
# out_shardings)`` is ``jit(fun, out_shardings=...)``, how work on arrays spanning several
# processes runs (each process its own shards, the partitioner's collectives across them).
jitted = None
_IDENTITY = {}
_ACROSS: dict = {}


def stacker(x, spec_axes, mesh, box, mesh_axes):
    """``local_stack`` specialised for arguments like ``x``: ``f(y)`` gives ``y``'s stack;
    an array with ``x``'s sharding (the common case: already laid out by ``spec_axes``)
    takes its buffers directly (with one device here, a view of that shard)."""
    from .trace import get_aval
    aval = get_aval(x)

    def slow(y):
        return local_stack(y, spec_axes, mesh, box, mesh_axes)
    if not (type(x) is ShardedArray and x.sharding.mesh == mesh and
            spec_tuple(x.sharding, aval.ndim) == tuple(spec_axes)):
        return slow
    want = x.sharding
    named = [a for a in mesh_axes if any(a in e for e in spec_axes)]
    sizes = dict(mesh.shape)
    block = [n // int(np.prod([sizes[a] for a in e], dtype=np.int64))
             for n, e in zip(aval.shape, spec_axes)]
    shape = tuple([box.local[a] for a in named] + block)
    names = tuple(mesh.axis_names)
    where = [(k, tuple(box.coords[d][names.index(a)] - box.offset[a] for a in named))
             for k, d in enumerate(want._device_assignment) if d in box.coords]

    def fast(y):
        if type(y) is not ShardedArray or not (y._sharding is want or y._sharding == want):
            return slow(y)
        if len(where) == 1:
            data = y._shards[where[0][0]].data
            if data is None:
                raise deleted_error(y.aval)
            return data.reshape(shape)
        out = np.empty(shape, aval.dtype)
        for k, pos in where:
            data = y._shards[k].data
            if data is None:
                raise deleted_error(y.aval)
            out[pos] = data
        return out
    return fast


def move_across(x, sharding):
    """``x`` laid out by ``sharding`` over processes (a jitted identity: the partitioner's
    gathers and slices, across processes where they must)."""
    fn = _IDENTITY.get(sharding)
    if fn is None:
        fn = _IDENTITY[sharding] = jitted(_moved, sharding)
    return fn(x)


def _moved(v):
    return v


_moved.__name__ = "device_put"      # what the messages of the program it runs call it




def apply_across(prim, args, params):
    """Runs ``prim`` eagerly on operands over a mesh spanning several processes: as a
    jitted program (one per primitive and parameters), as JAX runs eager operations on
    such arrays."""
    import functools
    try:
        key = (prim, tuple(sorted(params.items())))
        hash(key)
    except TypeError:
        key = None
    if _across_state.depth:
        # the jitted call ran its body eagerly (inside a transformation of a shard_map)
        raise NotImplementedError(
            f"{prim.name} on arrays over a mesh spanning several processes, evaluated "
            f"inside a transformation of a shard_map or pmap (grad, jvp or vmap applied "
            f"outside it) that is not jitted: take the gradient inside the shard_map body "
            f"(then psum it), or jit the whole computation (passing such arrays as arguments).")
    fn = _ACROSS.get(key) if key is not None else None
    if fn is None:
        body = functools.partial(_bind, prim, params)
        body.__name__ = prim.name       # what the program's messages call it
        fn = jitted(body, None)
        if key is not None:
            _ACROSS[key] = fn
    _across_state.depth += 1
    try:
        return fn(*args)
    finally:
        _across_state.depth -= 1


class _AcrossState(threading.local):
    depth = 0


_across_state = _AcrossState()


def _bind(prim, params, *args):
    return prim.bind(*args, **params)


def placer(spec_axes, aval, sharding, box, mesh_axes):
    """``f(stack)``: the ShardedArray of ``aval`` over ``sharding`` (its mesh spanning
    processes) whose shards on this process's devices are the blocks of ``stack`` (the
    layout ``local_stack`` makes; None for the other processes' devices), the positions
    of this process's devices worked out once."""
    mesh = sharding.mesh
    named = [a for a in mesh_axes if any(a in e for e in spec_axes)]
    names = tuple(mesh.axis_names)
    where = [None if d not in box.coords else
             tuple(box.coords[d][names.index(a)] - box.offset[a] for a in named)
             for d in sharding._device_assignment]
    devs = sharding._device_assignment
    dtype = aval.dtype

    def place(stack):
        stack = np.asarray(stack)
        if stack.dtype != dtype:
            stack = stack.astype(dtype)
        stack.setflags(write=False)
        bufs = []
        for d, pos in zip(devs, where):
            if pos is None:
                bufs.append(None)
                continue
            piece = stack[pos]
            if not piece.flags.c_contiguous:
                piece = np.ascontiguousarray(piece)
            bufs.append(Buffer(piece, d))
        return ShardedArray(aval, sharding, bufs)
    return place


def from_local_stack(stack, spec_axes, aval, sharding, box, mesh_axes) -> ShardedArray:
    """The ShardedArray (over ``sharding``'s mesh, spanning processes) whose shards on
    this process's devices are the blocks of ``stack`` (the layout ``local_stack``
    makes); the other processes' devices get None (their own shards).  ``placer`` is the
    same for many calls."""
    return placer(spec_axes, aval, sharding, box, mesh_axes)(stack)