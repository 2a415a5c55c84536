"""Several devices: data-parallel training over 4 devices, and a 2x2 tensor-parallel matmul

The chapter ends with distributed computation built on arrays, device memory and jit.  This
program runs on 4 CPU devices (it restarts itself with ``JAX_NUM_CPU_DEVICES=4`` when the
process has fewer):

1. Data-parallel training of the digits MLP: the batch is sharded over a 4-device mesh
   axis ``'batch'``, the parameters are replicated, and each device differentiates the
   mean loss of the whole batch (``lax.pmean`` of its shard's loss, inside ``shard_map``):
   the gradient of the shared parameters is the sum of every device's part, ONE
   all-reduce per step.  The losses equal one device's to float32 rounding.
2. A tensor-parallel matmul on a 2x2 mesh: ``x @ w`` with ``x``'s rows sharded over
   ``'x'`` and ``w``'s columns over ``'y'`` needs no communication; sharding the
   contraction dimension instead needs one ``psum`` of the partial products, which the
   compiler's SPMD partitioner also inserts by itself for a plain ``jit`` of ``x @ w``.

For each it prints the bytes each device holds and the bytes each collective moves.

Run it: ``python examples/sharded_training.py``.
"""
from __future__ import annotations

import os
import subprocess
import sys

N_DEVICES = 4

if __name__ == "__main__" and os.environ.get("JAX_NUM_CPU_DEVICES") != str(N_DEVICES):
    import jaxlite as _jl
    if len(_jl.devices()) < N_DEVICES:
        # the device count is fixed once a process has made its devices: run in a new one
        env = dict(os.environ, JAX_NUM_CPU_DEVICES=str(N_DEVICES))
        child = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                               capture_output=True, text=True, timeout=600)
        print(child.stdout, end="")
        if child.returncode:
            print(child.stderr, end="", file=sys.stderr)
            raise SystemExit(child.returncode)
        raise SystemExit(0)

import numpy as np  # noqa: E402

import jaxlite as jax  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite import lax  # noqa: E402
from jaxlite.data import load_digits  # noqa: E402
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

HIDDEN = 128
BATCH = 256
STEPS = 20
LEARNING_RATE = 0.1


def device_bytes(devs) -> list:
    return [d.memory_stats()["bytes_in_use"] for d in devs]


def show_memory(label, devs, before):
    now = device_bytes(devs)
    cells = ", ".join(f"{d}: {n - b:>7,d} B" for d, n, b in zip(devs, now, before))
    print(f"  {label:<34} {cells}")


def counted(compiled):
    """``(collectives, bytes per device)`` a compiled program's ``cost_analysis`` counts
    (jaxlite counts a jitted shard_map body's), or None where it does not (real JAX)."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    if "collectives" not in cost:
        return None
    return int(cost["collectives"]), int(cost["collective bytes"])


def tree_bytes(tree) -> int:
    return sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree))


# ---- 1. data parallelism ---------------------------------------------------------------

def init_params(key, n_in, n_hidden, n_out):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (n_in, n_hidden), jnp.float32) * n_in ** -0.5,
            "b1": jnp.zeros((n_hidden,), jnp.float32),
            "w2": jax.random.normal(k2, (n_hidden, n_out), jnp.float32) * n_hidden ** -0.5,
            "b2": jnp.zeros((n_out,), jnp.float32)}


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def sgd(params, grads):
    return jax.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def data_parallel():
    """Trains STEPS steps data-parallel over 4 devices; prints memory and losses and returns
    the losses (checked against the same steps on one device)."""
    devs = jax.devices()[:N_DEVICES]
    mesh = Mesh(np.array(devs), ("batch",))
    x_all, y_all = load_digits()
    x_all = (x_all.reshape(len(x_all), -1) / 16.0).astype(np.float32)
    y_all = y_all.astype(np.int32)
    rng = np.random.default_rng(0)
    params0 = init_params(jax.random.key(0), x_all.shape[1], HIDDEN, 10)

    def global_loss(params, x, y):
        # each device's quarter of the batch; pmean: the mean over all 256 examples
        return lax.pmean(loss_fn(params, x, y), "batch")

    def local_step(params, x, y):
        # runs on each device; the parameters are shared by all devices, so the gradient
        # reverse mode gives them is the sum of every device's part: one all-reduce
        loss, grads = jax.value_and_grad(global_loss)(params, x, y)
        return sgd(params, grads), loss

    step = jax.jit(jax.shard_map(local_step, mesh=mesh,
                                 in_specs=(P(), P("batch"), P("batch")),
                                 out_specs=(P(), P())))
    one_device_step = jax.jit(lambda p, x, y: (lambda lg: (sgd(p, lg[1]), lg[0]))(
        jax.value_and_grad(loss_fn)(p, x, y)))

    before = device_bytes(devs)
    params = jax.device_put(params0, NamedSharding(mesh, P()))
    show_memory("parameters (replicated)", devs, before)
    batches = [rng.choice(len(x_all), BATCH, replace=False) for _ in range(STEPS)]
    before = device_bytes(devs)
    xb = jax.device_put(x_all[batches[0]], NamedSharding(mesh, P("batch")))
    show_memory(f"one batch {xb.shape} (sharded)", devs, before)
    del xb
    # what the jitted step's shard_map body communicates, as its compiled program counts
    # it (one all-reduce per parameter's gradient, and the loss's pmean)
    cost = counted(step.lower(params, x_all[batches[0]], y_all[batches[0]]).compile())
    print(f"  all-reduce per step: the gradients' sum, {tree_bytes(params0):,d} B "
          f"(+4 B of loss) from each of {N_DEVICES} devices" + (
              f"; the compiled step counts {cost[0]} all-reduces of {cost[1]:,d} B in all"
              if cost else ""))

    p_ref = params0
    losses, ref_losses = [], []
    for idx in batches:
        xb = jax.device_put(x_all[idx], NamedSharding(mesh, P("batch")))
        yb = jax.device_put(y_all[idx], NamedSharding(mesh, P("batch")))
        params, loss = step(params, xb, yb)
        p_ref, ref = one_device_step(p_ref, x_all[idx], y_all[idx])
        losses.append(float(loss))
        ref_losses.append(float(ref))
    print(f"  loss over {STEPS} steps on {N_DEVICES} devices: {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}")
    worst = max(abs(a - b) for a, b in zip(losses, ref_losses))
    print(f"  the same steps on one device:        {ref_losses[0]:.4f} -> "
          f"{ref_losses[-1]:.4f} (largest difference {worst:.1e})")
    assert worst < 1e-4, worst
    print(f"  parameters after training: {params['w1'].sharding}")
    return losses


# ---- 2. tensor parallelism -------------------------------------------------------------

def tensor_parallel():
    devs = jax.devices()[:N_DEVICES]
    mesh = Mesh(np.array(devs).reshape(2, 2), ("x", "y"))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((512, 256)).astype(np.float32)
    w = rng.standard_normal((256, 128)).astype(np.float32)
    expected = x @ w

    before = device_bytes(devs)
    xs = jax.device_put(x, NamedSharding(mesh, P("x", None)))
    ws = jax.device_put(w, NamedSharding(mesh, P(None, "y")))
    show_memory("x rows over 'x', w cols over 'y'", devs, before)
    mm = jax.shard_map(lambda a, b: a @ b, mesh=mesh, in_specs=(P("x", None), P(None, "y")),
                       out_specs=P("x", "y"))
    before = device_bytes(devs)
    out = mm(xs, ws)
    show_memory("x @ w, blocks over 'x' and 'y'", devs, before)
    print(f"  no collective; result {out.shape} {out.sharding.spec}, max error "
          f"{np.abs(np.asarray(out) - expected).max():.1e}")

    # the contraction dimension sharded: each device multiplies a slice of k, then psum
    xk = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
    wk = jax.device_put(w, NamedSharding(mesh, P("y", None)))
    mk = jax.shard_map(lambda a, b: lax.psum(a @ b, "y"), mesh=mesh,
                       in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    out2 = mk(xk, wk)
    partial = (x.shape[0] // 2) * w.shape[1] * 4
    cost = counted(jax.jit(mk).lower(xk, wk).compile())
    print(f"  k sharded over 'y': one psum over 'y' of {partial:,d} B per device"
          + (f" (the compiled program counts {cost[0]} of {cost[1]:,d} B)" if cost else "")
          + f"; result {out2.sharding.spec}, max error "
          f"{np.abs(np.asarray(out2) - expected).max():.1e}")

    # the same product as a plain jit on those shards: the compiler partitions it into a
    # per-device program and inserts that psum itself (lower().compile().as_text() shows it)
    jm = jax.jit(lambda a, b: a @ b)
    out3 = jm(xk, wk)
    cost = jm.lower(xk, wk).compile().cost_analysis()
    print(f"  plain jit on those shards: the compiler inserts {int(cost['collectives'])} "
          f"collective of {int(cost['collective bytes']):,d} B per device; result "
          f"{out3.sharding.spec}, max error {np.abs(np.asarray(out3) - expected).max():.1e}")


if __name__ == "__main__":
    print(f"{len(jax.devices())} CPU devices")
    print("1. data-parallel training of the digits MLP (batch 256 over 4 devices):")
    data_parallel()
    print("2. tensor-parallel matmul on a 2x2 mesh:")
    tensor_parallel()
