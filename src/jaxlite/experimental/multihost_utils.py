"""``jax.experimental.multihost_utils``: moving host values between the processes of a
job (jaxlite.distributed), through checked MPI collectives (runtime/mpi.py).

Layer: top.  With one process each function does what it would with a job of one process
(``process_allgather`` adds a leading axis of 1, the others return their input as NumPy).
"""
from __future__ import annotations

import numpy as np

from ..core.sharded import ShardedArray
from ..runtime import mpi as _mpi
from ..tree_util import data_flatten as tree_flatten, tree_unflatten

__all__ = ["process_allgather", "sync_global_devices", "broadcast_one_to_all",
           "assert_equal"]


def _ranks():
    return tuple(range(_mpi.world().size))


def process_allgather(in_tree, tiled: bool = False):
    """Every process's value of each leaf, as NumPy arrays on every process
    (``jax.experimental.multihost_utils.process_allgather``).

    A leaf that is an Array sharded over several processes' devices gives its global
    value (``tiled=True`` is then required, as in JAX).  Any other leaf (a NumPy array, a
    scalar, an Array of this process) is this process's value: stacked along a new
    leading axis in process order, or with ``tiled=True`` concatenated along axis 0.

    Raises:
      ValueError: a leaf sharded over several processes with ``tiled=False``; leaves of
        different shapes or dtypes on different processes (CollectiveMismatchError, a
        JaxRuntimeError, naming each process's shape).
    """
    leaves, tree = tree_flatten(in_tree)
    out = []
    for x in leaves:
        if type(x) is ShardedArray and not x.is_fully_addressable:
            if not tiled:
                raise ValueError("Gathering global non-fully-addressable arrays only "
                                 "supports tiled=True")
            out.append(np.array(_global_value(x)))
            continue
        v = np.asarray(x)
        if _mpi.world() is None:
            out.append(v if tiled else v[None])
            continue
        g = _mpi.allgather(v, _ranks(), "multihost_utils.process_allgather")
        if tiled and v.ndim:
            g = g.reshape((-1,) + v.shape[1:])
        out.append(g)
    return tree_unflatten(tree, out)


def _global_value(x) -> np.ndarray:
    """The value of an array sharded over several processes: replicated first (a jitted
    all-gather across them), then read."""
    from ..core.sharded import move_across
    from ..sharding import NamedSharding, PartitionSpec
    if x._readable():
        return np.asarray(x)
    return np.asarray(move_across(x, NamedSharding(x.sharding.mesh, PartitionSpec())))


def sync_global_devices(name: str) -> None:
    """Waits until every process reaches a ``sync_global_devices`` call with the same
    ``name`` (``jax.experimental.multihost_utils.sync_global_devices``).

    Raises CollectiveMismatchError (a JaxRuntimeError) on every process when they arrive
    with different names, naming each; CollectiveTimeoutError when one never arrives
    within ``jaxlite_collective_timeout`` seconds."""
    if _mpi.world() is None:
        return
    _mpi.barrier(_ranks(), f"sync_global_devices({name!r})")


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """The source process's value of each leaf, as NumPy arrays on every process
    (``jax.experimental.multihost_utils.broadcast_one_to_all``).

    Args:
      in_tree: a pytree of arrays or scalars, of the same structure, shapes and dtypes on
        every process.
      is_source: whether this process is the source; default: process 0 is.  Exactly
        one process should be (the first one that says so is used).
    Raises:
      ValueError: no process is the source.
      CollectiveMismatchError: the processes pass different structures or shapes.
    """
    leaves, tree = tree_flatten(in_tree)
    vals = [np.asarray(x) for x in leaves]
    w = _mpi.world()
    if w is None:
        return tree_unflatten(tree, vals)
    if is_source is None:
        is_source = w.rank == 0
    flags = _mpi.allgather(np.array([bool(is_source)]), _ranks(),
                           "multihost_utils.broadcast_one_to_all (which process is the "
                           "source)")[:, 0]
    if not flags.any():
        raise ValueError("broadcast_one_to_all: no process has is_source=True")
    root = int(np.argmax(flags))
    out = [_mpi.broadcast(v, root, _ranks(), "multihost_utils.broadcast_one_to_all")
           for v in vals]
    return tree_unflatten(tree, out)


def assert_equal(in_tree, fail_message: str = "") -> None:
    """Checks that every process passes equal values (``multihost_utils.assert_equal``).

    Raises AssertionError (with ``fail_message``) on every process when they differ."""
    leaves, _ = tree_flatten(in_tree)
    if _mpi.world() is None:
        return
    for x in leaves:
        v = np.asarray(x)
        g = _mpi.allgather(v, _ranks(), "multihost_utils.assert_equal")
        if not all(np.array_equal(g[0], g[k], equal_nan=v.dtype.kind in "fc")
                   for k in range(1, len(g))):
            raise AssertionError(f"{fail_message} Expected equal values on every process; "
                                 f"got {[g[k].tolist() for k in range(len(g))]}")
