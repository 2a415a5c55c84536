"""Several processes over MPI: the process world and checked collectives on host buffers.

Layer: runtime (knows nothing of tracing or programs: it moves NumPy buffers between
processes).  ``distributed.initialize()`` calls ``init``; from then on ``world()`` is the
``World`` of this job (this process's ``rank``, the ``size`` of the job, how many devices
each process has), and the cross-process primitives (primitives/cross_process.py) call
``allreduce``, ``allgather``, ``reduce_scatter``, ``all_to_all`` and ``permute`` here
with the ranks of the processes that take part (multihost_utils: ``broadcast``,
``barrier``).

Each collective is checked before any data moves: every taking part process contributes a
signature of what it is about to run (a 64-bit hash of kind, dtype, shape, the program
and the Python line that asked for it; and how many collectives this process ran before)
to one all-gather of a fixed size, the same for every collective, so that processes
running different ones still meet in it.  Up to 64 bytes of data travel in it too: a small
all-reduce or all-gather is that one MPI call.  Equal signatures: the data moves, directly
from and into the NumPy buffers (``Iallreduce``, ``Iallgather``, ``Ireduce_scatter_block``,
``Ialltoall``, ``Isend``/``Irecv``, ``Ibcast``; results in recycled buffers).  Different
ones: every
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

from .. import monitoring
from ..config import config
from ..errors import JaxRuntimeError
from .buffer import pool_empty


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
        self.all = tuple(range(self.size))

    def group(self, ranks: tuple):
        """The communicator over ``ranks`` (in that order; rank k of it is ranks[k]),
        created on first use by the processes in it (MPI_Comm_create_group is collective
        over them only)."""
        if ranks == self.all:
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


def _wait(req, what, ranks) -> None:
    """Waits for the nonblocking request ``req``; CollectiveTimeoutError after
    ``timeout()`` seconds.  Spins for the first 5 ms (a sleep costs ~60 us of timer
    slack, more than a small all-reduce takes), then sleeps a little longer each time."""
    if req.Test():
        return
    if not isinstance(what, str):       # (description, collective number)
        what = f"collective #{what[1]}: {what[0]}"
    start = time.perf_counter()
    limit = timeout()
    spin_until = start + 5e-3
    pause = 5e-5
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


def _signature(desc: str) -> np.ndarray:
    """This process's signature of its next collective: the hash of ``desc`` and the
    collective's number (counting from 1)."""
    w = _world
    w.seq += 1
    h = _HASHES.get(desc)
    if h is None:
        if len(_HASHES) > 4096:
            _HASHES.clear()
        h = _HASHES[desc] = int.from_bytes(
            hashlib.blake2b(desc.encode(), digest_size=8).digest(), "little", signed=True)
    return np.array([h, w.seq], np.int64)


def _check(comm, ranks, desc: str, inline=None, nbytes: int = 0):
    """The signature exchange (see the module docstring); raises CollectiveMismatchError
    on every process when they differ.  Every exchange moves the same number of bytes
    (16 of signature, then ``_INLINE`` of payload), whatever the collective, so that
    processes running different ones still meet in it.  ``inline``: this process's data
    when it fits in the payload (bytes, a uint8 array): the rows of every process's are
    returned (n, len), so a small collective takes one MPI call in all.  ``nbytes``: the
    bytes this process contributes, for the "collective" monitoring event (the kind is
    the first word of ``desc``)."""
    n = len(ranks)
    if monitoring._listeners:
        monitoring.emit("collective", kind=desc.split(" ", 1)[0], bytes=int(nbytes),
                        processes=n, desc=desc)
    bufs = _EXCHANGE.get(n)
    if bufs is None:        # reused: each call copies out what it returns
        send = np.zeros(16 + _INLINE, np.uint8)
        bufs = _EXCHANGE[n] = (send, send[:16].view(np.int64),
                               np.empty((n, 16 + _INLINE), np.uint8))
    send, sig, recv = bufs
    sig[:] = _signature(desc)
    if inline is not None:
        send[16:16 + len(inline)] = inline
    _wait(comm.Iallgather(send, recv), (desc, _world.seq), ranks)
    got = recv[:, :16].tobytes()
    if got != got[:16] * n:
        _compare(comm, ranks, desc, np.ascontiguousarray(recv[:, :16]).view(np.int64))
    if inline is not None:
        return recv[:, 16:16 + len(inline)].copy()
    return None


def _compare(comm, ranks, desc: str, sigs: np.ndarray) -> None:
    """Raises CollectiveMismatchError on every process when the gathered signatures
    ``sigs`` (one row per process) differ."""
    if (sigs == sigs[0]).all():
        return
    w = _world
    descs = comm.allgather(f"collective #{w.seq}: {desc}")
    lines = "\n".join(f"  process {r}: {d}" for r, d in zip(ranks, descs))
    raise CollectiveMismatchError(
        f"the processes diverged: they ran different collectives at the same point of "
        f"the program, which would hang or mix up data:\n{lines}\nEvery process must run "
        f"the same jitted programs, shard_maps and multihost_utils calls, on arrays of the "
        f"same shapes, in the same order (look for code that depends on "
        f"jax.process_index()).")


_HASHES: dict = {}      # description -> its 64-bit hash (the signature's first half)
_DESCS: dict = {}       # (op, dtype, shape, where) -> an all-reduce's description
# bytes of data that travel with the signature (a small collective: one MPI call)
_INLINE = 64
_EXCHANGE: dict = {}    # processes taking part -> (send, its signature view, receive)
_MPI_SUM_KINDS = "fciu"


def _mpi_sums(dtype) -> bool:
    dt = np.dtype(dtype)
    return dt.kind in _MPI_SUM_KINDS and dt.itemsize >= 4 and dt.type.__module__ == "numpy"


def allreduce(x: np.ndarray, op: str, ranks: tuple, where: str) -> np.ndarray:
    """The elementwise ``op`` ("sum", "max", "min") of ``x`` over the processes ``ranks``
    (each passes its own ``x``, same shape and dtype); the same new array on each."""
    comm = _world.group(ranks)
    x = np.asarray(x, order="C")
    key = (op, x.dtype, x.shape, where)
    desc = _DESCS.get(key)
    if desc is None:
        desc = _DESCS[key] = f"all-reduce {op} of {x.dtype}{list(x.shape)} ({where})"
    if x.nbytes <= _INLINE:
        # small: the data travels with the signature (one all-gather), reduced here in
        # rank order
        rows = _check(comm, ranks, desc, x.reshape(-1).view(np.uint8), x.nbytes)
        parts = rows.view(x.dtype).reshape((len(ranks),) + x.shape)
        if len(ranks) == 2 and op == "sum":
            return np.asarray(parts[0] + parts[1])
        return _reduce_rows(parts, op)
    _check(comm, ranks, desc, nbytes=x.nbytes)
    if op == "sum" and _mpi_sums(x.dtype):
        MPI = mpi_module()
        out = pool_empty(x.shape, x.dtype)      # recycled: no page faults per call
        _wait(comm.Iallreduce(x, out, MPI.SUM), desc, ranks)
        return out
    return _reduce_rows(_gather_raw(comm, x, desc, ranks), op)


def _reduce_rows(parts: np.ndarray, op: str) -> np.ndarray:
    """``op`` over the leading axis of ``parts`` (one row per process), in rank order."""
    fn = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]
    out = np.array(parts[0], copy=True)         # an array also for 0-d rows
    for p in parts[1:]:
        fn(out, p, out=out)
    return out


def _gather_raw(comm, x, desc, ranks) -> np.ndarray:
    """``x`` of every process stacked in front, in rank order (as bytes, so any dtype)."""
    n = len(ranks)
    out = pool_empty((n,) + x.shape, x.dtype)
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
    if x.nbytes <= _INLINE:
        rows = _check(comm, ranks, desc, x.reshape(-1).view(np.uint8), x.nbytes)
        return rows.view(x.dtype).reshape((len(ranks),) + x.shape)
    _check(comm, ranks, desc, nbytes=x.nbytes)
    return _gather_raw(comm, x, desc, ranks)


def broadcast(x: np.ndarray, root: int, ranks: tuple, where: str) -> np.ndarray:
    """The ``x`` of process ``ranks[root]`` on every process of ``ranks`` (each passes an
    array of the same shape and dtype)."""
    comm = _world.group(ranks)
    x = np.array(x, copy=True, order="C")
    desc = f"broadcast from process {ranks[root]} of {x.dtype}{list(x.shape)} ({where})"
    _check(comm, ranks, desc, nbytes=x.nbytes)
    buf = x.reshape(-1).view(np.uint8)
    _wait(comm.Ibcast(buf, root=root), desc, ranks)
    return x


def barrier(ranks: tuple, where: str) -> None:
    """Waits until every process of ``ranks`` arrives here (checked and bounded as any
    collective): the signature exchange is itself an all-gather, which completes only
    once every process has joined it."""
    _check(_world.group(ranks), ranks, f"barrier ({where})")


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


def _wait_all(reqs, desc: str, ranks) -> None:
    """Waits for every request of ``reqs`` (bounded as ``_wait``)."""
    if not reqs:
        return
    MPI = mpi_module()

    class _All:
        def Test(self):
            return MPI.Request.Testall(reqs)
    _wait(_All(), desc, ranks)


def reduce_scatter(x: np.ndarray, axis: int, ranks: tuple, where: str) -> np.ndarray:
    """The sum of ``x`` over the processes ``ranks``, of which each keeps its block of
    ``axis`` (split into ``len(ranks)`` equal blocks, block k for ``ranks[k]``):
    ``MPI_Reduce_scatter_block`` where MPI has the dtype."""
    comm = _world.group(ranks)
    n = len(ranks)
    y = np.ascontiguousarray(np.moveaxis(np.asarray(x), axis, 0))
    desc = f"reduce-scatter sum of {y.dtype}{list(x.shape)} along {axis} ({where})"
    _check(comm, ranks, desc, nbytes=y.nbytes)
    m = y.shape[0] // n
    if _mpi_sums(y.dtype) and y.size:
        MPI = mpi_module()
        out = pool_empty((m,) + y.shape[1:], y.dtype)
        _wait(comm.Ireduce_scatter_block(y, out, MPI.SUM), desc, ranks)
    else:
        total = _reduce_rows(_gather_raw(comm, y, desc, ranks), "sum")
        me = ranks.index(_world.rank)
        out = np.ascontiguousarray(total[me * m:(me + 1) * m])
    return np.moveaxis(out, 0, axis)


def all_to_all(x: np.ndarray, axis: int, ranks: tuple, where: str) -> np.ndarray:
    """``MPI_Alltoall`` along ``axis``: it is split into ``len(ranks)`` equal blocks,
    block k sent to ``ranks[k]``; the result's block k is what ``ranks[k]`` sent here."""
    comm = _world.group(ranks)
    y = np.ascontiguousarray(np.moveaxis(np.asarray(x), axis, 0))
    desc = f"all-to-all of {y.dtype}{list(x.shape)} along {axis} ({where})"
    _check(comm, ranks, desc, nbytes=y.nbytes)
    out = pool_empty(y.shape, y.dtype)
    if y.size:
        _wait(comm.Ialltoall(y.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8)),
              desc, ranks)
    return np.moveaxis(out, 0, axis)


def permute(x: np.ndarray, pairs: tuple, ranks: tuple, block: int,
            where: str) -> np.ndarray:
    """A permutation of the devices along a mesh axis over the processes ``ranks``, each
    holding ``block`` consecutive devices: ``x[j]`` is this process's device j's value
    (device ``k * block + j`` of the axis, ``k`` its block); for each ``(src, dst)`` of
    ``pairs`` device dst receives device src's value (zeros where none is sent).  Only
    the values that change process move: one send or receive per such pair."""
    comm = _world.group(ranks)
    x = np.asarray(x)
    desc = f"collective-permute of {x.dtype}{list(x.shape)} {list(pairs)} ({where})"
    _check(comm, ranks, desc, nbytes=x.nbytes)
    me = ranks.index(_world.rank)
    out = np.zeros_like(x, order="C")
    reqs = []
    for src, dst in pairs:
        sp, dp = src // block, dst // block
        if sp == me and dp == me:
            out[dst % block] = x[src % block]
        elif sp == me:
            reqs.append(comm.Isend(np.ascontiguousarray(x[src % block]), dest=dp, tag=dst))
        elif dp == me:
            reqs.append(comm.Irecv(out[dst % block], source=sp, tag=dst))
    _wait_all(reqs, desc, ranks)
    return out
