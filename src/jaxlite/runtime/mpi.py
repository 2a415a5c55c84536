"""Several processes over MPI: the process world and checked collectives on host buffers.

Layer: runtime (knows nothing of tracing or programs: it moves NumPy buffers between
processes).  ``distributed.initialize()`` calls ``init``; from then on ``world()`` is the
``World`` of this job (this process's ``rank``, the ``size`` of the job, how many devices
each process has), and the cross-process primitives (primitives/cross_process.py) call
``allreduce``, ``allgather`` and ``broadcast`` here with the ranks of the processes that
take part.

Each collective is checked before any data moves: every taking part process contributes a
64-bit signature of what it is about to run (kind, dtype, shape, the program and the
Python line that asked for it, and how many collectives this process ran before) to a
small all-gather.  Equal signatures: the data moves, directly from and into the NumPy
buffers (``Iallreduce``/``Iallgather``/``Ibcast``, no copy).  Different ones: every
process raises ``CollectiveMismatchError`` naming, for each rank, the collective it runs,
instead of all of them waiting forever in calls that never match.  Each wait is bounded
by ``timeout()`` (config ``jaxlite_collective_timeout``, seconds): a process that never
arrives (stuck, or dead without ending the job) makes the others raise
``CollectiveTimeoutError`` naming the collective, and under ``python -m mpi4py`` (what
``python -m jaxlite launch`` runs) the uncaught error ends the whole job.

Sums go through MPI's own reduction where MPI has the dtype (float32/64, complex, ints);
max/min, and dtypes MPI lacks (bool, float16, bfloat16), all-gather the operands and
reduce them in rank order on every process (max/min that way also propagate NaN as
``jnp.maximum`` does, which MPI's MAX does not promise).
"""
from __future__ import annotations

import hashlib
import time

import numpy as np

from ..config import config
from ..errors import JaxRuntimeError


class CollectiveMismatchError(JaxRuntimeError):
    """Processes of one job ran different collectives at the same point (a divergence of
    the SPMD program: a branch on ``process_index()``, different shapes per process ...).
    Raised on every process taking part, naming what each rank ran."""


class CollectiveTimeoutError(JaxRuntimeError):
    """A collective waited longer than ``jaxlite_collective_timeout`` seconds for the other
    processes (one is stuck, or died without ending the job)."""


class World:
    """This job's processes: ``rank`` (this process, ``jax.process_index()``), ``size``
    (``jax.process_count()``), ``local_counts`` (devices per process, by rank) and the
    MPI communicator jaxlite's collectives use (a duplicate of ``COMM_WORLD``, so user
    code calling MPI directly never matches jaxlite's messages)."""

    def __init__(self, comm, local_counts):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.local_counts = tuple(local_counts)
        self.seq = 0                 # collectives this process has run (the signature's)
        self._groups = {}            # ranks tuple -> communicator over them

    def group(self, ranks: tuple):
        """The communicator over ``ranks`` (in that order; rank k of it is ranks[k]),
        created on first use by the processes in it (MPI_Comm_create_group is collective
        over them only)."""
        if ranks == tuple(range(self.size)):
            return self.comm
        c = self._groups.get(ranks)
        if c is None:
            grp = self.comm.Get_group().Incl(list(ranks))
            c = self._groups[ranks] = self.comm.Create_group(grp, tag=_tag(ranks))
        return c


def _tag(ranks) -> int:
    return int.from_bytes(hashlib.blake2b(repr(ranks).encode(), digest_size=3).digest(),
                          "little")


_world: World | None = None


def world() -> World | None:
    """The World once ``distributed.initialize()`` ran, else None (one process)."""
    return _world


def mpi_module():
    """``mpi4py.MPI``; ImportError saying how to install it when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "jaxlite runs several processes over MPI, which needs mpi4py and an MPI "
            "library: pip install 'jaxlite[mpi]' (installs mpi4py and mpich), then start "
            "the processes with: python -m jaxlite launch -n 2 script.py") from e
    return MPI


def init(local_count: int) -> World:
    """Joins the MPI job: this process has ``local_count`` devices; returns the World
    (every process learns every other's device count)."""
    global _world
    MPI = mpi_module()
    comm = MPI.COMM_WORLD.Dup()
    counts = comm.allgather(int(local_count))
    _world = World(comm, counts)
    return _world


def shutdown() -> None:
    """Leaves the job: waits for every process (a barrier bounded by the timeout), then
    frees jaxlite's communicators.  MPI itself stays initialised (mpi4py finalises it at
    exit)."""
    global _world
    w = _world
    if w is None:
        return
    barrier(tuple(range(w.size)), "distributed.shutdown()")
    for c in w._groups.values():
        c.Free()
    w.comm.Free()
    _world = None


def timeout() -> float:
    """Seconds any collective waits for the other processes before it raises."""
    return float(config.jaxlite_collective_timeout)


def _wait(req, what: str, ranks) -> None:
    """Waits for the nonblocking request ``req``; CollectiveTimeoutError after
    ``timeout()`` seconds (spins for the first ~200 us, then sleeps a little)."""
    if req.Test():
        return
    start = time.perf_counter()
    limit = timeout()
    spin_until = start + 2e-4
    pause = 1e-5
    while not req.Test():
        now = time.perf_counter()
        if now - start > limit:
            raise CollectiveTimeoutError(
                f"process {_world.rank} waited {limit:g} s for the processes {list(ranks)} at "
                f"{what}, and at least one of them never arrived (it is stuck, runs "
                f"another program, or died). Every process must run the same "
                f"collectives in the same order; the limit is the config option "
                f"jaxlite_collective_timeout (JAXLITE_COLLECTIVE_TIMEOUT).")
        if now > spin_until:
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


def _check(comm, ranks, desc: str) -> None:
    """The signature exchange (see the module docstring); raises CollectiveMismatchError
    on every process when they differ."""
    w = _world
    w.seq += 1
    h = hashlib.blake2b(f"{w.seq}|{desc}".encode(), digest_size=8).digest()
    mine = np.frombuffer(h, np.int64).copy()
    sigs = np.empty(len(ranks), np.int64)
    _wait(comm.Iallgather(mine, sigs), f"collective #{w.seq}: {desc}", ranks)
    if (sigs == sigs[0]).all():
        return
    descs = comm.allgather(f"collective #{w.seq}: {desc}")
    lines = "\n".join(f"  process {r}: {d}" for r, d in zip(ranks, descs))
    raise CollectiveMismatchError(
        f"the processes diverged: they ran different collectives at the same point of "
        f"the program, which would hang or mix up data:\n{lines}\nEvery process must run "
        f"the same jitted programs, shard_maps and multihost_utils calls, on arrays of the "
        f"same shapes, in the same order (look for code that depends on "
        f"jax.process_index()).")


_MPI_SUM_KINDS = "fciu"


def _mpi_sums(dtype) -> bool:
    dt = np.dtype(dtype)
    return dt.kind in _MPI_SUM_KINDS and dt.itemsize >= 4 and dt.type.__module__ == "numpy"


def allreduce(x: np.ndarray, op: str, ranks: tuple, where: str) -> np.ndarray:
    """The elementwise ``op`` ("sum", "max", "min") of ``x`` over the processes ``ranks``
    (each passes its own ``x``, same shape and dtype); the same new array on each."""
    comm = _world.group(ranks)
    x = np.asarray(x, order="C")
    desc = f"all-reduce {op} of {x.dtype}{list(x.shape)} ({where})"
    _check(comm, ranks, desc)
    if op == "sum" and _mpi_sums(x.dtype):
        MPI = mpi_module()
        out = np.empty_like(x)
        _wait(comm.Iallreduce(x, out, MPI.SUM), desc, ranks)
        return out
    parts = _gather_raw(comm, x, desc, ranks)
    fn = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]
    out = parts[0].copy()
    for p in parts[1:]:
        fn(out, p, out=out)
    return out


def _gather_raw(comm, x, desc, ranks) -> np.ndarray:
    """``x`` of every process stacked in front, in rank order (as bytes, so any dtype)."""
    n = len(ranks)
    out = np.empty((n,) + x.shape, x.dtype)
    send = x.reshape(-1).view(np.uint8)
    recv = out.reshape(-1).view(np.uint8)
    _wait(comm.Iallgather(send, recv), desc, ranks)
    return out


def allgather(x: np.ndarray, ranks: tuple, where: str) -> np.ndarray:
    """``x`` of every process in ``ranks``, stacked along a new leading axis in the order
    of ``ranks``."""
    comm = _world.group(ranks)
    x = np.asarray(x, order="C")
    desc = f"all-gather of {x.dtype}{list(x.shape)} ({where})"
    _check(comm, ranks, desc)
    return _gather_raw(comm, x, desc, ranks)


def broadcast(x: np.ndarray, root: int, ranks: tuple, where: str) -> np.ndarray:
    """The ``x`` of process ``ranks[root]`` on every process of ``ranks`` (each passes an
    array of the same shape and dtype)."""
    comm = _world.group(ranks)
    x = np.array(x, copy=True, order="C")
    desc = f"broadcast from process {ranks[root]} of {x.dtype}{list(x.shape)} ({where})"
    _check(comm, ranks, desc)
    buf = x.reshape(-1).view(np.uint8)
    _wait(comm.Ibcast(buf, root=root), desc, ranks)
    return x


def barrier(ranks: tuple, where: str) -> None:
    """Waits until every process of ``ranks`` arrives here (checked and bounded as any
    collective)."""
    comm = _world.group(ranks)
    _check(comm, ranks, f"barrier ({where})")
    _wait(comm.Ibarrier(), f"barrier ({where})", ranks)


def gather_objects(obj, where: str) -> list:
    """Every process's picklable ``obj``, in rank order (a checked all-gather of their
    pickled sizes, then of the bytes)."""
    import pickle
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    ranks = tuple(range(_world.size))
    sizes = allgather(np.array([data.size], np.int64), ranks, where)[:, 0]
    width = int(sizes.max())
    padded = np.zeros(width, np.uint8)
    padded[:data.size] = data
    rows = allgather(padded, ranks, where)
    return [pickle.loads(rows[k, :sizes[k]].tobytes()) for k in range(len(ranks))]
