"""``device_put``, ``device_get``, ``block_until_ready``, ``default_device``: moving data
between the host and devices explicitly (``jax.device_put`` ...).

Layer: core (re-exported at the top level).  Every copy goes through the transfer guard
(as an *explicit* transfer) and the transfer counters, and through the backends of the
devices involved (runtime/buffer.py ``native_copy``, core/eager.py ``put_host``).  A pytree
is checked whole before anything moves, so a refused transfer or a bad leaf leaves every
source untouched and creates nothing.  A traced value is placed by binding the sharding
primitives through lax's ``reshard``/``with_sharding_constraint``.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .array import ArrayImpl, deleted_error
from .avals import aval_of_value
from .sharded import ShardedArray, check_shardable, from_global, host_buffer, shard_indices
from .trace import Tracer
from .eager import put_host
from ..runtime import (Device, check_default_device, count_transfer, get_default_device,
                      guard_transfer)
from ..runtime.buffer import check_dtype, host_view, native_copy, new_buffer
from ..runtime.device import process_index
from ..runtime import device as _device_mod
from ..sharding import AxisType, NamedSharding, PartitionSpec, SingleDeviceSharding
from ..tree_util import data_flatten as tree_flatten, data_map as tree_map, tree_unflatten

_PY_SCALARS = (bool, int, float, complex)


class DeviceArgumentError(ValueError, TypeError):
    """A ``device`` argument that is not a Device or a Sharding.  JAX raises ValueError;
    it is a TypeError too (a wrong type of argument), so either ``except`` catches it."""


def _target_device(device):
    if device is None:
        return device
    if isinstance(device, SingleDeviceSharding):
        device = device._device
    if isinstance(device, Device):
        if device.process_index != process_index():
            raise ValueError(f"jaxlite.device_put onto {device!r}, a device of process "
                             f"{device.process_index}: this process (process "
                             f"{process_index()}) places arrays only on its own devices "
                             f"(jaxlite.local_devices()); to build an array over several "
                             f"processes' devices use a NamedSharding over a mesh of them, "
                             f"or jaxlite.make_array_from_process_local_data.")
        return device
    if _is_named(device):
        return device
    if _is_pspec(device):
        from ..sharding import _state
        mesh = _state().mesh        # the mesh of set_mesh (also read under jit)
        if mesh is None or getattr(mesh, "empty", False):
            raise ValueError(f"jaxlite.device_put got the PartitionSpec {device} but no mesh "
                             f"is set: use jaxlite.set_mesh(mesh) around the call, or pass "
                             f"NamedSharding(mesh, {device}).")
        return NamedSharding(mesh, device)
    raise DeviceArgumentError(
        f"jaxlite.device_put only accepts None, a Device (e.g. jaxlite.devices()[0]), a "
        f"SingleDeviceSharding, a NamedSharding, a PartitionSpec (under jaxlite.set_mesh), "
        f"or a pytree of these; got {device!r} of type "
        f"{type(device).__name__}.")


def _is_named(device) -> bool:
    return type(device) is NamedSharding or (
        device is not None and isinstance(device, NamedSharding))


def _is_pspec(device) -> bool:
    return isinstance(device, PartitionSpec)


def _is_device_spec(device) -> bool:
    return device is None or isinstance(device, (Device, SingleDeviceSharding)) or \
        _is_named(device) or _is_pspec(device)


def _check_rank(sharding, ndim: int) -> None:
    """Raises as JAX when the spec of the NamedSharding ``sharding`` is longer than the
    rank ``ndim`` of a leaf: AssertionError when it names an Explicit mesh axis past the
    rank (JAX's sharding type of the result cannot hold it), ValueError otherwise."""
    parts = sharding.spec.partitions
    if len(parts) <= ndim:
        return
    types = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types))

    def explicit(entry):
        names = () if entry is None or not isinstance(entry, (str, tuple)) else (
            entry if isinstance(entry, tuple) else (entry,))
        return tuple(n for n in names if types.get(n) is AxisType.Explicit)
    if any(explicit(e) for e in parts[ndim:]):
        shown = PartitionSpec(*[(e if len(e) > 1 else e[0]) if e else None
                                for e in map(explicit, parts)])
        raise AssertionError(
            f"({ndim}, {shown}): device_put's sharding {sharding} names the Explicit mesh "
            f"axes {[n for e in parts[ndim:] for n in explicit(e)]} past the rank {ndim} "
            f"of its argument; give a spec of at most {ndim} entries")
    raise ValueError(
        f"One of device_put args is incompatible with its sharding annotation {sharding}: "
        f"Sharding {sharding} is only valid for values of rank at least {len(parts)}, but "
        f"was applied to a value of rank {ndim}."
        + (" For scalars the PartitionSpec should be P()" if not ndim else ""))


def _plan(x, device, may_alias):
    """What putting leaf ``x`` on ``device`` takes; checks the leaf, moves nothing.

    Returns ``(kind, leaf, device, aval)`` with kind one of ``'keep'`` (return ``x``),
    ``'alias'`` (same buffer, now committed), ``'copy'`` (same device, new buffer),
    ``'d2d'`` or ``'h2d'``.
    """
    if isinstance(x, Tracer):
        if device is not None and _is_named(device):
            _check_rank(device, x.aval.ndim)
        if device is not None and _is_named(device) and \
                any(t is AxisType.Explicit for t in device.mesh.axis_types):
            return ("reshard", x, device, None)     # under jit, as JAX: a reshard
        if device is not None and _is_named(device) and hasattr(device.mesh, "_flat") and \
                all(t is AxisType.Auto for t in device.mesh.axis_types):
            # under jit on an Auto mesh, as JAX: the value goes to the mesh's devices with
            # every dimension left to the propagation (an unconstrained constraint)
            return ("place", x, device, None)
        return ("keep", x, None, None)
    if device is not None and _is_named(device):
        return _plan_shard(x, device, may_alias)
    if type(x) is ShardedArray:
        if x.is_deleted():
            raise deleted_error(x.aval)
        if device is None:
            return ("keep", x, None, x.aval)
        if not x._readable():       # over several processes: the others' shards too
            from .sharded import non_addressable_error
            raise non_addressable_error(x)
        return ("gather", x, device, x.aval)
    if type(x) is ArrayImpl:
        if x._buf.data is None:
            raise deleted_error(x.aval)
        if device is None:
            return ("keep", x, None, x.aval)
        if x._buf.device is device:
            return ("copy" if may_alias is False else "alias", x, device, x.aval)
        return ("d2d", x, device, x.aval)
    if type(x) in _PY_SCALARS or isinstance(x, (np.ndarray, np.generic)):
        # raises OverflowError for an int out of range, TypeError for a non-numeric dtype
        aval = aval_of_value(x)
    elif hasattr(x, "__jax_array__") or hasattr(x, "__array__"):
        x = np.asarray(x.__jax_array__() if hasattr(x, "__jax_array__") else x)
        aval = aval_of_value(x)
    else:
        raise TypeError(f"Argument {x!r} of type {type(x)} cannot be placed on a device: "
                        f"device_put accepts pytrees whose leaves are jaxlite or NumPy "
                        f"arrays or Python scalars.")
    return ("h2d", x, device, aval)


def _plan_shard(x, sharding, may_alias):
    """The plan of placing leaf ``x`` with a NamedSharding: checks the leaf and that the
    sharding can hold it (rank, divisibility); moves nothing."""
    if type(x) is ShardedArray:
        if x.is_deleted():
            raise deleted_error(x.aval)
        aval = x.aval
        if x.sharding == sharding and may_alias is not False:
            return ("keep", x, None, aval)
    elif type(x) is ArrayImpl:
        if x._buf.data is None:
            raise deleted_error(x.aval)
        aval = x.aval
    else:
        kind, x, _, aval = _plan(x, None, may_alias)
    _check_rank(sharding, aval.ndim)
    check_shardable(sharding, aval, "device_put args", typed=True)
    return ("shard", x, sharding, aval)


def _shard_moves(p):
    """``[(src, dst, nbytes)]``: the copies a 'shard' or 'gather' plan makes, one per
    destination shard ('host' as the source of host data)."""
    kind, x, dst, aval = p
    if kind == "gather":
        # (over several processes: this process's shards; the first copy of each here)
        seen, moves = set(), []
        for (d, idx, rid), b in zip(shard_indices(x.sharding, aval.shape), x._shards):
            key = tuple((i.start, i.stop) for i in idx)
            if b is not None and key not in seen:
                seen.add(key)
                if b.device is not dst:
                    moves.append((b.device, dst, b.nbytes))
        return moves
    if type(x) is ShardedArray:
        return _reshard_moves(x, dst, aval)
    itemsize = aval.dtype.itemsize
    moves = []
    me = process_index()
    for dev, idx, _ in shard_indices(dst, aval.shape):
        if dev.process_index != me:     # another process places its own shards
            continue
        n = itemsize
        for s, size in zip(idx, aval.shape):
            n *= len(range(*s.indices(size)))
        if type(x) is ArrayImpl:
            if x._buf.device is not dev:
                moves.append((x._buf.device, dev, n))
        else:
            moves.append(("host", dev, n))
    return moves


def _reshard_moves(x, dst, aval) -> list:
    """``[(src, dst, nbytes)]`` of resharding the ShardedArray ``x`` to ``dst``: each
    destination device fetches every part of its block that it does not hold yet, from
    the first device (in ``x``'s device order) holding that part."""
    shape, itemsize = aval.shape, aval.dtype.itemsize
    blocks: dict = {}
    for dev, idx, _ in shard_indices(x.sharding, shape):
        rng = tuple(s.indices(n)[:2] for s, n in zip(idx, shape))
        blocks.setdefault(rng, []).append(dev)
    moves = []
    for dev, idx, _ in shard_indices(dst, shape):
        want = [s.indices(n)[:2] for s, n in zip(idx, shape)]
        for have, holders in blocks.items():
            if dev in holders:
                continue
            n = itemsize
            for (w0, w1), (h0, h1) in zip(want, have):
                n *= max(0, min(w1, h1) - max(w0, h0))
            if n:
                moves.append((holders[0], dev, n))
    return moves


def _guard_plan(p):
    kind, x, device, aval = p
    if kind in ("shard", "gather"):
        for src, dst, n in _shard_moves(p):
            guard_transfer("host_to_device" if src == "host" else "device_to_device",
                           True, n, src, dst, aval)
        return
    if kind in ("copy", "d2d", "h2d"):     # a dtype the platform lacks: refused up front
        dst = device if device is not None else get_default_device()
        if not dst._host_memory:
            check_dtype(dst, aval.dtype)
    if kind == "d2d":
        guard_transfer("device_to_device", True, x._buf.nbytes, x._buf.device, device, aval)
    elif kind == "h2d":
        dst = device if device is not None else get_default_device()
        guard_transfer("host_to_device", True, aval.size * aval.dtype.itemsize, "host", dst,
                       aval)


def _run_plan(p):
    kind, x, device, aval = p
    if kind == "keep":
        return x
    if kind == "reshard":
        from ..lax._sharding_constraints import reshard
        return reshard(x, device)
    if kind == "place":
        from ..lax._sharding_constraints import with_sharding_constraint
        from ..sharding import NamedSharding, PartitionSpec, UNCONSTRAINED
        ndim = np.ndim(x)
        return with_sharding_constraint(
            x, NamedSharding(device.mesh, PartitionSpec(*[UNCONSTRAINED] * ndim)))
    if kind == "shard" and type(x) is ShardedArray and not x._readable():
        from .sharded import move_across     # over several processes
        return move_across(x, device)
    if kind in ("shard", "gather"):
        moves = _shard_moves(p)
        if kind == "gather":
            out = ArrayImpl(host_buffer(np.array(x._buf.data, copy=True), device), aval,
                            True)
        else:
            if type(x) in (ArrayImpl, ShardedArray):
                value = host_view(x._buf)     # read-only: the shards may view it
            else:
                with np.errstate(all="ignore"):
                    value = np.array(x, dtype=aval.dtype, copy=True, order="C")
            out = from_global(value, aval, device)
        for src, dst, n in moves:
            count_transfer("host_to_device" if src == "host" else "device_to_device",
                           True, n, src, dst, aval)
        return out
    if kind == "alias":
        return ArrayImpl(x._buf, aval, True)
    if kind == "copy":
        return ArrayImpl(new_buffer(native_copy(x._buf, device), device), aval, True)
    if kind == "d2d":
        src = x._buf
        buf = new_buffer(native_copy(src, device), device)
        count_transfer("device_to_device", True, src.nbytes, src.device, device, aval)
        return ArrayImpl(buf, aval, True)
    # h2d (guarded already)
    dst = device if device is not None else get_default_device()
    buf = put_host(x, aval.dtype, dst)
    count_transfer("host_to_device", True, aval.size * aval.dtype.itemsize, "host", dst,
                   aval)
    return ArrayImpl(buf, aval, device is not None)


def _per_leaf(device, x) -> list:
    """One entry of ``device`` per leaf of ``x``: ``device`` is a pytree prefix of ``x``
    whose leaves (None, Devices, Shardings, PartitionSpecs, freely mixed) each apply to
    every leaf of the matching subtree of ``x``, as JAX broadcasts it.  Raises
    DeviceArgumentError (a ValueError) when it is no prefix of ``x``."""
    specs, spec_tree = tree_flatten(device, is_leaf=_is_device_spec)
    try:
        subtrees = spec_tree.flatten_up_to(x)
    except (ValueError, TypeError):
        raise DeviceArgumentError(
            f"jaxlite.device_put: device must be None, a Device, a Sharding, a "
            f"PartitionSpec or a pytree prefix of x of these; got {device!r} for x of "
            f"structure {tree_flatten(x)[1]}") from None
    out: list = []
    for d, sub in zip(specs, subtrees):
        out.extend([d] * len(tree_flatten(sub)[0]))
    return out


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Places ``x`` (an Array, NumPy array, Python scalar, or a pytree of them) on
    ``device`` (``jax.device_put``).

    Args:
      x: the data.  NumPy float64/int64 data becomes float32/int32 unless x64 is on;
        Python scalars keep their weak type (``device_put(1.0)`` is
        ``Array(1., dtype=float32, weak_type=True)``).
      device: None, a Device, a ``SingleDeviceSharding``, a ``NamedSharding``, a
        ``PartitionSpec`` (on the mesh of ``set_mesh``), or a pytree prefix of ``x`` of
        these, freely mixed (each applies to every leaf of its subtree of ``x``).  With a
        device the result is *committed* to it: computations on it run there, and
        mixing it with data committed elsewhere raises ValueError.  With a
        NamedSharding the result is an Array split over the mesh's devices (one buffer
        and one counted transfer per device; resharding a sharded Array copies only the
        blocks a device lacks).  Without one, host data goes to the default device
        uncommitted and Arrays are returned as they are.
      src: accepted for compatibility; ignored.
      donate: accepted for compatibility; like JAX on CPU, the source stays valid.
      may_alias: False forces a copy even when ``x`` already is on ``device``; otherwise
        the result may share ``x``'s buffer (deleting one then deletes both, as in JAX).
    Returns:
      the same pytree with Arrays at the leaves.
    Raises:
      ValueError (also a TypeError): ``device`` is not a Device or a Sharding.
      TypeError: a leaf is not array-like (a string, an arbitrary object).
      OverflowError: a Python int out of the default integer dtype's range.
      RuntimeError: a leaf was deleted, or the transfer guard forbids an explicit transfer
        (level ``'disallow_explicit'``: JaxRuntimeError); nothing is transferred then.
      ValueError: a NamedSharding that cannot hold a leaf (a plain ValueError for a
        dimension its Explicit mesh axes do not divide, as JAX's; IndivisibleError where
        only its Auto axes do not; a spec longer than the rank), or a
        PartitionSpec with no mesh set; checked for every leaf before anything moves;
        ``device`` a pytree that is no prefix of ``x``.
      AssertionError: a spec naming an Explicit mesh axis past a leaf's rank (as JAX).

    Example::

        >>> d = jaxlite.devices()[0]
        >>> y = jaxlite.device_put(np.arange(3), d)
        >>> y.device is d, y.committed
        (True, True)
    """
    del src, donate
    leaves, treedef = tree_flatten(x)
    if _is_device_spec(device):
        devs = [_target_device(device)] * len(leaves)
    else:
        devs = [_target_device(d) for d in _per_leaf(device, x)]
    plans = [_plan(leaf, d, may_alias) for leaf, d in zip(leaves, devs)]
    for p in plans:   # every guard check before any copy: a refusal leaves nothing behind
        _guard_plan(p)
    return tree_unflatten(treedef, [_run_plan(p) for p in plans])


def device_get(x):
    """Copies the Arrays in ``x`` (any pytree) to the host as NumPy arrays
    (``jax.device_get``); other leaves pass through unchanged.

    The NumPy arrays are read-only.  Counted as explicit device-to-host transfers.

    Raises:
      RuntimeError: an Array was deleted.
    """
    def get(leaf):
        if isinstance(leaf, ArrayImpl):         # a ShardedArray too: its global value
            return leaf._host_value(explicit=True)
        return leaf
    return tree_map(get, x)


def block_until_ready(x):
    """Waits for every Array in the pytree ``x``; returns ``x`` (``jax.block_until_ready``).

    Raises RuntimeError for a deleted Array."""
    def wait(leaf):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        return leaf
    tree_map(wait, x)
    return x


@contextlib.contextmanager
def default_device(device):
    """Context manager: inside the block, new uncommitted data and computations on
    uncommitted data go to ``device`` (``jax.default_device``); per thread.

    Args:
      device: a Device, a platform name (``'cpu'``), or None (the ``jax_default_device``
        flag, else the first device).
    Raises:
      ValueError: ``device`` is none of these.
    """
    device = check_default_device(device)
    state = _device_mod._state
    old = state.default_device
    state.default_device = device
    try:
        yield
    finally:
        state.default_device = old

