"""Building sharded arrays piece by piece, and looking at how an array is sharded.

``make_array_from_callback`` and ``make_array_from_single_device_arrays`` (top level, as
``jax.make_array_from_*``), ``visualize_array_sharding`` / ``visualize_sharding`` /
``inspect_array_sharding`` (``jaxlite.debug``), and the abstract value ``typeof`` gives
for a sharded array (``float32[8@x,4]``: the mesh axes of Explicit type that split each
dimension).

Layer: transforms (above core/sharded.py and core/placement.py; the sharding a traced value
would get comes from the staged program's sharding propagation, compiler/passes).
Everything is checked before anything is placed: a refused call leaves no new buffer on
any device.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..core.array import ArrayImpl
from ..core.avals import ShapedArray, ShardedShapedArray, aval_of_value
from ..core.sharded import ShardedArray, from_global, host_buffer, shard_indices
from ..core.trace import Tracer
from ..runtime import count_transfer, guard_transfer
from ..runtime.buffer import Buffer, new_buffer
from ..runtime.device import process_index
from ..runtime.dispatch import PendingBuffer
from ..sharding import NamedSharding, Sharding, SingleDeviceSharding

__all__ = ["make_array_from_callback", "make_array_from_single_device_arrays",
           "visualize_array_sharding", "visualize_sharding", "inspect_array_sharding"]


def _check_args(shape, sharding, who: str) -> tuple:
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} "
                        f"of type {type(sharding)} (in jaxlite.{who})")
    if not isinstance(shape, tuple) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
            for d in shape):
        raise TypeError(f"jaxlite.{who}: shape must be a tuple of non-negative ints; got "
                        f"{shape!r} of type {type(shape).__name__}")
    shape = tuple(int(d) for d in shape)
    # IndivisibleError (a ValueError) for a dimension the sharding cannot split evenly,
    # ValueError for a spec longer than the rank
    if isinstance(sharding, NamedSharding):
        sharding.check_compatible_aval(shape)
    return shape, sharding.shard_shape(shape)


def _shard_shape_error(want, got, aval, sharding) -> ValueError:
    return ValueError(f"Expected shard shape {tuple(want)} doesn't match the single device "
                      f"array shape {tuple(got)}. Shape of Array is {aval} with sharding "
                      f"{sharding}")


def _check_dtype(dtype, got, who: str):
    if dtype is not None and np.dtype(dtype) != got:
        raise ValueError(f"If `dtype` is provided to `jax.{who}`, it must match the dtype of "
                         f"the addressable shards. Got dtype={np.dtype(dtype).name} and "
                         f"shard dtype={got.name}.")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """An Array of ``shape`` placed by ``sharding``, each device's block given by
    ``data_callback(index)`` (``jax.make_array_from_callback``).

    Args:
      shape: the global shape, a tuple of ints.
      sharding: a ``NamedSharding`` or ``SingleDeviceSharding``.
      data_callback: called once per device, in the sharding's device order, with the
        tuple of slices of the global array that device holds (``slice(None)`` for a
        dimension not split); returns that block: a NumPy array, a NumPy or Python scalar,
        or an Array.  Data is converted to its canonical dtype (float64 -> float32 unless
        x64 is on); the result is never weakly typed.
      dtype: if given, the blocks' dtype must be this one.
    Returns:
      an Array committed to the sharding's devices (a one-device Array for a
      ``SingleDeviceSharding``).  One host-to-device transfer is counted per device, an
      implicit one as in JAX (the transfer guard's ``'disallow'`` refuses it).
    Raises:
      TypeError: ``sharding`` is not a Sharding; ``shape`` is not a tuple; a block is not
        array data (a list, a string, None).
      ValueError (IndivisibleError): the sharding does not divide ``shape`` evenly.
      ValueError: a block of the wrong shape, blocks of different dtypes, or a dtype other
        than ``dtype``.
      RuntimeError: the transfer guard refuses the transfers (nothing is placed).
    """
    shape, block = _check_args(shape, sharding, "make_array_from_callback")
    devices = tuple(sharding._device_assignment)
    idx_map = sharding.devices_indices_map(shape)
    pieces, srcs = [], []
    me = process_index()
    remote = [d.process_index != me for d in devices]
    if any(remote):     # several processes: the callback is asked for this one's blocks
        devices = tuple(d for d, r in zip(devices, remote) if not r)
    for k, dev in enumerate(devices):
        if k and sharding.is_fully_replicated:      # as JAX: one call, for every device
            pieces.append(pieces[0])
            srcs.append(srcs[0])
            continue
        piece = data_callback(idx_map[dev])
        if isinstance(piece, ArrayImpl):
            src = "host" if type(piece) is ShardedArray else piece._buf.device
            piece = np.asarray(piece)
        elif type(piece) in (bool, int, float, complex) or isinstance(
                piece, (np.ndarray, np.generic)):
            src = "host"
            if isinstance(piece, np.ndarray) and piece.dtype.kind in "OUSV":
                raise TypeError(f"Argument '{piece}' of type {type(piece)} is not a valid "
                                f"JAX type (returned by the data_callback of "
                                f"make_array_from_callback for index {idx_map[dev]}).")
            piece = np.asarray(piece, dtype=aval_of_value(piece).dtype)
        else:
            raise TypeError(f"Argument '{piece}' of type {type(piece)} is not a valid JAX "
                            f"type (returned by the data_callback of "
                            f"make_array_from_callback for index {idx_map[dev]}).")
        pieces.append(piece)
        srcs.append(src)
    dt = pieces[0].dtype if pieces else np.dtype(dtype or np.float32)
    aval = ShapedArray(shape, dt)
    for piece in pieces:
        if piece.shape != block:
            raise _shard_shape_error(block, piece.shape, aval, sharding)
        if piece.dtype != dt:
            raise ValueError(f"Input buffers to `Array` must have matching dtypes. Got "
                             f"{piece.dtype.name}, expected {dt.name} (blocks returned by "
                             f"the data_callback of make_array_from_callback)")
    _check_dtype(dtype, dt, "make_array_from_callback")
    moves = [(src, dev) for src, dev in zip(srcs, devices) if src is not dev]
    nbytes = math.prod(block) * dt.itemsize
    for src, dev in moves:        # every guard check before anything is placed
        # implicit transfers, as JAX counts them (refused under 'disallow')
        guard_transfer("host_to_device" if src == "host" else "device_to_device", False,
                       nbytes, src, dev, aval)
    if isinstance(sharding, SingleDeviceSharding):
        out = ArrayImpl(host_buffer(np.array(pieces[0], copy=True), devices[0]), aval,
                        True)
    elif any(remote):
        mine = iter(pieces)
        bufs = [None if r else host_buffer(np.array(next(mine), copy=True), d)
                for d, r in zip(sharding._device_assignment, remote)]
        out = ShardedArray(aval, sharding, bufs)
    else:
        value = np.empty(shape, dt)
        for (dev, idx, rid), piece in zip(shard_indices(sharding, shape), pieces):
            if rid == 0:
                value[idx] = piece
        out = from_global(value, aval, sharding)
    for src, dev in moves:
        count_transfer("host_to_device" if src == "host" else "device_to_device", False,
                       nbytes, src, dev, aval)
    return out


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """An Array of ``shape`` placed by ``sharding`` whose blocks are the given one-device
    Arrays, without copying them (``jax.make_array_from_single_device_arrays``).

    Args:
      shape: the global shape, a tuple of ints.
      sharding: a ``NamedSharding`` or ``SingleDeviceSharding``.
      arrays: one Array per device of the sharding, each on its own device, in any order
        (each is matched to its device's block), each of the sharding's block shape and all
        of one dtype.
      dtype: if given, the arrays' dtype must be this one; needed when ``arrays`` is empty.
    Returns:
      an Array sharing the arrays' buffers (deleting it deletes them, and deleting one of
      them deletes it, as in JAX); nothing is copied or transferred.  Never weakly typed.
    Raises:
      TypeError: ``sharding`` is not a Sharding; ``shape`` is not a tuple; an element of
        ``arrays`` is not an Array.
      ValueError: no arrays and no ``dtype``; an Array on several devices; as many arrays
        as devices missing; two arrays on one device; arrays on devices outside the
        sharding; a block of the wrong shape; differing dtypes or a dtype other than
        ``dtype``; a sharding that does not divide ``shape`` evenly (IndivisibleError).
      RuntimeError: one of the arrays was deleted.
    """
    who = "make_array_from_single_device_arrays"
    shape, block = _check_args(shape, sharding, who)
    arrays = list(arrays)
    for a in arrays:
        if isinstance(a, Tracer) or not isinstance(a, ArrayImpl):
            raise TypeError(f"Unsupported type for elements in `arrays`: {type(a)} (jaxlite."
                            f"{who} takes one-device jaxlite Arrays)")
    if not arrays and dtype is None:
        raise ValueError(f"If the Array has no addressable shards, `dtype` must be provided "
                         f"via the `dtype` argument to `jax.{who}`.")
    for a in arrays:
        if type(a) is ShardedArray:
            raise ValueError(f"When making an array from single-device arrays the input "
                             f"arrays must have one shard each. An argument array had "
                             f"{len(a._shards)} shard(s).")
        a._check_alive()
    me = process_index()
    devices = tuple(d for d in sharding._device_assignment if d.process_index == me)
    if len(arrays) != len(devices):
        raise ValueError(f"Expected {len(devices)} per-device arrays (this is how many "
                         f"devices are addressable by the sharding), but got {len(arrays)}")
    dt = arrays[0].dtype if arrays else np.dtype(dtype)
    for a in arrays:
        if a.dtype != dt:
            raise ValueError(f"Input buffers to `Array` must have matching dtypes. Got "
                             f"{a.dtype.name}, expected {dt.name} for buffer: {a}")
    _check_dtype(dtype, dt, who)
    aval = ShapedArray(shape, dt)
    for a in arrays:
        if a.shape != block:
            raise _shard_shape_error(block, a.shape, aval, sharding)
    ids = [a._buf.device.id for a in arrays]
    if len(set(ids)) != len(ids):
        raise ValueError(f"When making an array from single-device arrays, the input arrays "
                         f"must be from distinct devices, but got device IDs {ids}")
    by_device = {a._buf.device: a for a in arrays}
    missing = {d.id for d in devices} - set(ids)
    if missing:
        extra = set(ids) - {d.id for d in devices}
        raise ValueError(f"Addressable devices and per-device arrays devices do not match. "
                         f"Sharding contains devices {missing} that are not present in "
                         f"per-device arrays. Per-device arrays contain devices {extra} that "
                         f"are not present in the sharding.")
    bufs = [by_device[d]._buf if d.process_index == me else None
            for d in sharding._device_assignment]
    bufs = [b.result() if type(b) is PendingBuffer else b for b in bufs]
    if isinstance(sharding, SingleDeviceSharding):
        return ArrayImpl(bufs[0], aval, True)
    return ShardedArray(aval, sharding, bufs)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """An Array placed by ``sharding`` from the data of this process's devices
    (``jax.make_array_from_process_local_data``).

    With one process, ``local_data`` is the whole array (``device_put`` onto the
    sharding).  Over a mesh spanning several processes (jaxlite.distributed), each
    process passes the part of the global array its own devices hold: along a dimension
    split over mesh axes that cross processes, this process's consecutive blocks (so two
    processes each passing 4 rows of a dimension split over 4 devices, 2 per process, make
    8 rows); along the others, the whole dimension.

    Args:
      sharding: a NamedSharding.
      local_data: a NumPy array, scalar or Array (float64 becomes float32 unless x64).
      global_shape: the global shape; default: inferred as above.
    Raises:
      TypeError: ``sharding`` is not a NamedSharding.
      ValueError: ``global_shape`` differs from the one ``local_data`` implies, or the
        sharding does not divide it (naming this process and both shapes).
    """
    from ..core.sharded import process_box, spans_processes, spec_tuple
    from ..core.placement import device_put
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"make_array_from_process_local_data takes a NamedSharding, got "
                        f"{sharding!r}")
    if isinstance(local_data, ArrayImpl):
        local_data = np.asarray(local_data)
    data = np.asarray(local_data, dtype=aval_of_value(local_data).dtype)
    mesh = sharding.mesh
    spec = spec_tuple(sharding, data.ndim)
    if not spans_processes(mesh):
        if global_shape is not None and tuple(global_shape) != data.shape:
            raise ValueError(f"make_array_from_process_local_data: global_shape "
                             f"{tuple(global_shape)} differs from the shape {data.shape} of "
                             f"the data, which is all of it with one process")
        return device_put(data, sharding)
    box = process_box(mesh)
    sizes = dict(mesh.shape)
    inferred = tuple(n * math.prod(sizes[a] for a in e) // math.prod(box.local[a] for a in e)
                     for n, e in zip(data.shape, spec))
    if global_shape is not None and tuple(global_shape) != inferred:
        raise ValueError(f"make_array_from_process_local_data: process {process_index()} "
                         f"passed data of shape {data.shape}, which over {sharding} makes a "
                         f"global shape {inferred}, not the global_shape "
                         f"{tuple(global_shape)} given")
    from ..runtime import mpi
    ranks = tuple(range(mpi.world().size))
    shapes = mpi.gather_objects((data.shape, str(data.dtype), inferred),
                                "make_array_from_process_local_data")
    if len({s[2] for s in shapes}) != 1 or len({s[1] for s in shapes}) != 1:
        raise ValueError(
            "make_array_from_process_local_data: the processes' data make different "
            "global arrays over " + str(sharding) + ": " + "; ".join(
                f"process {r} passed {s[1]}{list(s[0])} (global shape {s[2]})"
                for r, s in zip(ranks, shapes)) + ". Every process must pass data of the "
            "same shape and dtype (its own devices' part).")
    aval = ShapedArray(inferred, data.dtype)
    from ..core.sharded import check_shardable
    check_shardable(sharding, aval, "make_array_from_process_local_data")
    idx_map = sharding.devices_indices_map(inferred)
    mine = [d for d in sharding._device_assignment if d in box.coords]
    starts = [min(idx_map[d][k].indices(n)[0] for d in mine)
              for k, n in enumerate(inferred)]
    bufs = []
    for d in sharding._device_assignment:
        if d not in box.coords:
            bufs.append(None)
            continue
        local = tuple(slice(i.indices(n)[0] - s0, i.indices(n)[1] - s0)
                      for i, n, s0 in zip(idx_map[d], inferred, starts))
        piece = np.array(data[local], copy=True, order="C")
        bufs.append(host_buffer(piece, d))
    return ShardedArray(aval, sharding, bufs)


# ---- looking at shardings ------------------------------------------------------------------

def inspect_array_sharding(value, *, callback) -> None:
    """Calls ``callback(sharding)`` with the sharding of each Array in the pytree
    ``value`` (``jax.debug.inspect_array_sharding``): now for concrete Arrays; inside
    ``jit`` (also under ``grad``) once per compilation, while tracing, with the sharding
    the compiler's sharding propagation gives that value over the jit's arguments: a
    NamedSharding over the arguments' mesh with Auto axes and the spec trimmed (as JAX
    reports the compiled layout), or a SingleDeviceSharding when they lie on one device
    (JAX: a replicated GSPMDSharding).

    Raises:
      AttributeError: a leaf that is no Array (a NumPy array, a Python scalar), as JAX.
      NotImplementedError: a value traced by ``vmap`` or inside ``shard_map``.
    """
    from ..tree_util import data_leaves as tree_leaves
    for leaf in tree_leaves(value):
        if isinstance(leaf, Tracer):
            callback(_traced_sharding(leaf))
            continue
        if not isinstance(leaf, ArrayImpl):
            raise AttributeError(f"'{type(leaf).__name__}' object has no attribute "
                                 f"'sharding' (inspect_array_sharding takes a pytree of "
                                 f"Arrays)")
        callback(leaf.sharding)


def _traced_sharding(x):
    """The sharding the compiler's propagation gives traced value ``x`` (see
    ``inspect_array_sharding``)."""
    from ..core.staging import DynamicJaxprTracer
    while type(x) is not DynamicJaxprTracer and hasattr(x, "primal"):
        x = x.primal        # under differentiation: the primal's layout
    if type(x) is not DynamicJaxprTracer:
        raise NotImplementedError(
            f"jaxlite.debug.inspect_array_sharding of a value traced by vmap or inside "
            f"shard_map ({x.aval.str_short()}) is not supported; inspect it outside the "
            f"vmap/shard_map, where it is one array.")
    builder = x._trace.main.payload
    from .stages import _resolved_mesh_types
    mt = _resolved_mesh_types(builder)
    if mt is None:
        from ..runtime import get_default_device
        return SingleDeviceSharding(get_default_device())
    mesh, in_specs, _ = mt
    from ..compiler.passes.sharding_propagation import propagate
    from ..core.sharded import to_pspec
    from ..ir.jaxpr import ClosedJaxpr, Jaxpr
    from ..sharding import AxisType, Mesh
    specs = [tuple(() if e is None else (e if isinstance(e, tuple) else (e,))
                   for e in tuple(s) + (None,) * (len(v.aval.shape) - len(tuple(s))))
             if s is not None else ((),) * len(v.aval.shape)
             for s, v in zip(in_specs, builder.invars)]
    jaxpr = Jaxpr(builder.constvars(), builder.invars, builder.eqns,
                  [x._var])
    out, _ = propagate(ClosedJaxpr(jaxpr, builder.const_values()), specs,
                       dict(mesh.shape))
    auto = Mesh(mesh.devices, mesh.axis_names,
                axis_types=(AxisType.Auto,) * len(mesh.axis_names))
    return NamedSharding(auto, to_pspec(out[0]))


def _chunk(slc, size: int) -> tuple:
    """(block index, block length) of one dimension's slice."""
    start, stop, _ = slc.indices(size)
    length = stop - start
    return (start // length if length else 0), length


def sharding_grid(shape, sharding) -> tuple:
    """``(rows, cols, cells)`` of the picture of an array of ``shape`` (rank 1 or 2) under
    ``sharding``: the block lengths along dimension 0 (rows; one row for rank 1, whose
    blocks are columns) and dimension 1 (columns), and ``{(row, col): sorted device ids}``.
    Raises ValueError for another rank."""
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 "
                         "dimensions.")
    rows, cols, cells = {}, {}, {}
    for dev, idx in sharding.devices_indices_map(shape).items():
        if len(shape) == 1:
            (c, w), (r, h) = _chunk(idx[0], shape[0]), (0, 1)
        else:
            (r, h), (c, w) = _chunk(idx[0], shape[0]), _chunk(idx[1], shape[1])
        rows[r], cols[c] = h, w
        cells.setdefault((r, c), set()).add(dev.id)
    return ([rows[i] for i in sorted(rows)], [cols[j] for j in sorted(cols)],
            {k: sorted(v) for k, v in cells.items()})


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.,
                       min_width: int = 9, max_width: int = 80, color_map=None) -> None:
    """Prints which devices hold which block of an array of ``shape`` (rank 1 or 2) under
    ``sharding`` (``jax.debug.visualize_sharding``), as a box-drawing text grid: rows are
    the blocks of dimension 0, columns those of dimension 1 (a rank-1 array is one row),
    each cell naming its devices (``CPU 0,1``).  Cell sizes follow the blocks' sizes,
    scaled by ``scale`` and bounded by ``min_width``/``max_width`` characters.

    ``use_color`` and ``color_map`` are accepted and ignored: the grid is plain text (JAX
    draws it with the ``rich`` package, in colour).

    Raises:
      ValueError: a shape of rank other than 1 or 2.
    """
    del use_color, color_map
    shape = tuple(shape)
    rows, cols, cells = sharding_grid(shape, sharding)
    kind = next(iter(sharding.device_set)).platform.upper()
    text = {k: f"{kind} " + ",".join(map(str, v)) for k, v in cells.items()}
    base_h = int(10 * scale)
    wide = shape[1] if len(shape) == 2 else 1
    base_w = base_h * wide / shape[0] if shape[0] else base_h
    widths = []
    for j, w in enumerate(cols):
        frac = w / shape[-1] if shape[-1] else 1.0
        want = min(max(int(frac * base_w * 2.5), min_width), max_width)
        need = max(len(text[i, j]) for i in range(len(rows))) + 2
        widths.append(max(want, need))
    heights = [1 if len(shape) == 1 else
               max(1, int((h / shape[0] if shape[0] else 1.0) * base_h) - 1) for h in rows]

    def rule(left, mid, right):
        return left + mid.join("─" * w for w in widths) + right

    lines = [rule("┌", "┬", "┐")]
    for i, h in enumerate(heights):
        mid_line = (h - 1) // 2
        for k in range(h):
            lines.append("│" + "│".join(
                (text[i, j] if k == mid_line else "").center(widths[j])
                for j in range(len(widths))) + "│")
        last = i + 1 == len(heights)
        lines.append(rule("└", "┴", "┘") if last else rule("├", "┼", "┤"))
    builtins.print("\n".join(lines) + "\n")


def visualize_array_sharding(arr, **kwargs) -> None:
    """Prints the devices holding each block of ``arr`` (rank 1 or 2), as
    ``visualize_sharding(arr.shape, arr.sharding, **kwargs)``
    (``jax.debug.visualize_array_sharding``).

    Raises:
      ValueError: ``arr`` of rank other than 1 or 2.
      AttributeError / NotImplementedError: as ``inspect_array_sharding``.
    """
    inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s,
                                                                      **kwargs))


# ---- typeof ---------------------------------------------------------------------------------

def sharded_typeof(x: ShardedArray) -> ShardedShapedArray:
    """The abstract value of a sharded Array, with its Explicit-axis sharding."""
    from ..core.sharded import spec_tuple, to_pspec
    sharding = x.sharding
    mesh = sharding.mesh
    explicit = set(mesh.explicit_axes)
    specs = tuple(tuple(n for n in e if n in explicit)
                  for e in spec_tuple(sharding, x.aval.ndim))
    pspec = to_pspec(specs)
    from ..sharding import P
    pspec = P(*(tuple(pspec) + (None,) * (x.aval.ndim - len(pspec))))
    a = x.aval
    return ShardedShapedArray(a.shape, a.dtype, a.weak_type,
                              NamedSharding(mesh.abstract_mesh, pspec), specs)
