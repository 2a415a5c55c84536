"""Several processes: the data-parallel digits training over 2 processes x 2 devices

The same training as ``sharded_training.py`` (batch 256 sharded over a 4-device mesh axis,
parameters replicated, ONE all-reduce of the gradients per step), but the 4 devices belong
to two processes started by MPI: each process holds only its half of every batch, runs the
per-device program for its own 2 devices, and the all-reduce combines its devices locally,
then crosses processes in one MPI call.  Every process prints the losses, which equal one
process's with 4 devices (``sharded_training.py``) to float32 rounding.

Run it: ``python -m jaxlite launch -n 2 examples/multiprocess_training.py`` (needs
``pip install 'jaxlite[mpi]'``).  Each output line starts with its process's rank.  Run
directly (``python examples/multiprocess_training.py``, as ``make demo`` does), it launches
itself that way.
"""
from __future__ import annotations

import os
import subprocess
import sys

LAUNCHED = "PMI_RANK" in os.environ         # a rank of an MPI job (mpiexec sets it)
if LAUNCHED:
    os.environ.setdefault("JAX_NUM_CPU_DEVICES", "2")      # 2 devices in each process

import numpy as np  # noqa: E402

import jaxlite as jax  # noqa: E402
from jaxlite import lax  # noqa: E402
from jaxlite.data import load_digits  # noqa: E402
from jaxlite.experimental import multihost_utils  # noqa: E402
from jaxlite.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the model and its step, as sharded_training.py trains it on 4 devices of one process
from sharded_training import (BATCH, HIDDEN, STEPS, init_params, loss_fn,  # noqa: E402
                              sgd)


def train() -> list:
    """STEPS data-parallel steps over every process's devices; returns the losses."""
    me, n_proc = jax.process_index(), jax.process_count()
    mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    x_all, y_all = load_digits()
    x_all = (x_all.reshape(len(x_all), -1) / 16.0).astype(np.float32)
    y_all = y_all.astype(np.int32)
    rng = np.random.default_rng(0)          # the same batches in every process
    params = jax.device_put(init_params(jax.random.key(0), x_all.shape[1], HIDDEN, 10),
                            NamedSharding(mesh, P()))

    def local_step(params, x, y):
        loss, grads = jax.value_and_grad(
            lambda p: lax.pmean(loss_fn(p, x, y), "batch"))(params)
        return sgd(params, grads), loss

    step = jax.jit(jax.shard_map(local_step, mesh=mesh,
                                 in_specs=(P(), P("batch"), P("batch")),
                                 out_specs=(P(), P())))
    rows = NamedSharding(mesh, P("batch"))
    per = BATCH // n_proc
    losses = []
    for _ in range(STEPS):
        idx = rng.choice(len(x_all), BATCH, replace=False)
        mine = idx[me * per:(me + 1) * per]     # this process's half of the batch
        xb = jax.make_array_from_process_local_data(rows, x_all[mine])
        yb = jax.make_array_from_process_local_data(rows, y_all[mine])
        params, loss = step(params, xb, yb)
        losses.append(float(loss))              # replicated: every process reads it
    return losses


def main():
    jax.distributed.initialize()
    me = jax.process_index()
    print(f"process {me} of {jax.process_count()}: devices {jax.local_devices()} of "
          f"{jax.devices()}")
    losses = train()
    print(f"process {me}: loss over {STEPS} steps on {jax.device_count()} devices "
          f"({jax.process_count()} processes): {losses[0]:.6f} -> {losses[-1]:.6f}")
    # every process computed the same losses (an all-gather of them across processes)
    every = multihost_utils.process_allgather(np.array(losses, np.float32))
    assert (every == every[0]).all(), every
    if me == 0 and len(sys.argv) > 1:           # tests: where to write the losses
        np.save(sys.argv[1], np.array(losses))
    jax.distributed.shutdown()


def launch_self() -> int:
    """Runs this program as 2 MPI processes (``python -m jaxlite launch``) and prints what
    they print; says what to install when MPI is missing."""
    import importlib.util
    if importlib.util.find_spec("mpi4py") is None:
        print("skipped: several processes need MPI: pip install 'jaxlite[mpi]'")
        return 0
    child = subprocess.run([sys.executable, "-m", "jaxlite", "launch", "-n", "2",
                            "--timeout", "300", os.path.abspath(__file__)],
                           capture_output=True, text=True, timeout=400)
    print(child.stdout, end="")
    if child.returncode:
        print(child.stderr, end="", file=sys.stderr)
    return child.returncode


if __name__ == "__main__":
    if LAUNCHED:
        main()
    else:
        raise SystemExit(launch_self())
