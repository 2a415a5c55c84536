"""``jax.distributed``: one jaxlite process per rank of an MPI job.

Start the processes with ``python -m jaxlite launch -n 2 script.py`` (or ``mpiexec -n 2
python -m mpi4py script.py``) and call ``jaxlite.distributed.initialize()`` first thing in
the script.  From then on ``jaxlite.devices()`` lists every process's devices (process p's
k-th CPU device has id ``p * 2048 + k``, as JAX numbers them), ``process_index()`` is the
MPI rank, and arrays sharded over a mesh of those devices hold only this process's shards;
jit, shard_map and pmap programs over such meshes run in every process, their collectives
crossing processes through MPI (runtime/mpi.py).  Each process's own device count is
``jax_num_cpu_devices`` (``JAX_NUM_CPU_DEVICES``), as with one process.
"""
from __future__ import annotations

import os
import sys

from .runtime import mpi as _mpi

__all__ = ["initialize", "shutdown", "is_initialized"]

# environment variables an MPI launcher sets in each rank
_LAUNCH_ENV = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
               "MPI_LOCALRANKID", "HYDRA_CONTROL_FD")


def _launched_by_mpi() -> bool:
    return any(k in os.environ for k in _LAUNCH_ENV) or "mpi4py.MPI" in sys.modules


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               cluster_detection_method: str | None = None,
               initialization_timeout: int = 300, coordinator_bind_address: str | None = None,
               **kwargs) -> None:
    """Joins this process to the MPI job it was started in (``jax.distributed.initialize``).

    With no arguments it detects the launch (``python -m jaxlite launch``, ``mpiexec``).
    ``num_processes`` and ``process_id``, when given, must equal the job's size and this
    process's rank.  ``coordinator_address`` and ``coordinator_bind_address`` are accepted
    and unused: MPI's launcher already connects the processes.  ``initialization_timeout``
    (seconds) bounds the wait for the other processes here.

    Raises:
      RuntimeError: called twice, or after jaxlite already created its devices (as JAX:
        call it before any computation, ``devices()`` or ``device_put``).
      ValueError: not started by an MPI launcher (with one process, nothing needs
        initialising), or ``num_processes``/``process_id`` that differ from the launch.
      ImportError: mpi4py is not installed (``pip install 'jaxlite[mpi]'``).
      NotImplementedError: ``local_device_ids`` (each process's device count is
        ``JAX_NUM_CPU_DEVICES``).
    """
    from .runtime import backend as _backend
    from .runtime.device import num_cpu_devices, _forget_default
    from .config import config
    if _mpi.world() is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    cpu = _backend.get("cpu")
    if cpu is not None and cpu._devices is not None:
        raise RuntimeError("jaxlite.distributed.initialize() must be called before any "
                           "jaxlite calls that create the devices: any computation, "
                           "jaxlite.devices(), jaxlite.device_put, and others. Call it "
                           "first thing in the script.")
    if local_device_ids is not None:
        raise NotImplementedError("distributed.initialize(local_device_ids=...): each "
                                  "process has JAX_NUM_CPU_DEVICES CPU devices; set that "
                                  "instead.")
    if cluster_detection_method not in (None, "mpi4py", "mpi"):
        raise ValueError(f"distributed.initialize: jaxlite detects MPI launches only; "
                         f"got cluster_detection_method={cluster_detection_method!r}")
    if not _launched_by_mpi():
        raise ValueError(
            "distributed.initialize() found no MPI launch (no PMI_RANK/PMI_SIZE in the "
            "environment): start the processes with `python -m jaxlite launch -n 2 "
            "script.py` (or `mpiexec -n 2 python -m mpi4py script.py`). A single process "
            "needs no initialize().")
    MPI = _mpi.mpi_module()
    size, rank = MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()
    if num_processes is not None and int(num_processes) != size:
        raise ValueError(f"distributed.initialize(num_processes={num_processes}) on process "
                         f"{rank}, but the MPI launch started {size} processes")
    if process_id is not None and int(process_id) != rank:
        raise ValueError(f"distributed.initialize(process_id={process_id}), but this "
                         f"process is rank {rank} of the MPI launch")
    previous = config.jaxlite_collective_timeout
    config.update("jaxlite_collective_timeout", float(initialization_timeout))
    try:
        _mpi.init(num_cpu_devices())
    finally:
        config.update("jaxlite_collective_timeout", previous)
    # programs over several processes run inline, in program order on every process (a
    # device worker thread would let MPI calls of different programs interleave)
    config.update("jaxlite_async", False)
    _forget_default()


def shutdown() -> None:
    """Leaves the MPI job (``jax.distributed.shutdown``): waits for every process, then
    frees jaxlite's communicators.  Does nothing when ``initialize`` did not run.  Arrays
    over other processes' devices cannot be used after it."""
    _mpi.shutdown()


def is_initialized() -> bool:
    """Whether ``initialize()`` ran (``jax.distributed.is_initialized``)."""
    return _mpi.world() is not None
