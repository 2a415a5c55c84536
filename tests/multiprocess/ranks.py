"""One rank of the multi-process tests (tests/multiprocess/test_*.py start it with
``mpiexec -n 2 python -m mpi4py ranks.py <scenario> <outdir>``; 2 CPU devices each).

Each scenario records what this rank saw in a dict (NumPy values, strings, error types and
messages) and pickles it to ``<outdir>/rank<r>.pkl``; the tests assert on both ranks'
files.  The error scenarios (divergence, hang, death) end the job on purpose.
"""
from __future__ import annotations

import os
import pickle
import sys
import time
import traceback

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import multihost_utils as mh
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P

OUT: dict = {}


def record(name, fn):
    """Runs ``fn()``; records its value (NumPy-converted leaves) or its error."""
    try:
        v = fn()
        OUT[name] = ("ok", jax.tree_util.tree_map(
            lambda a: np.asarray(a) if isinstance(a, (jax.Array, np.ndarray, np.generic))
            else a, v))
    except Exception as e:        # noqa: BLE001 - the tests assert on the error
        OUT[name] = ("error", type(e).__name__, str(e), traceback.format_exc())


def shards(a):
    return [(d.id, tuple((s.start, s.stop) for s in idx), np.asarray(x))
            for d, idx, x in ((s.device, s.index, s.data) for s in a.addressable_shards)]


def local_rows(pid, n=4):
    """This process's rows of the global arange(8 * 3).reshape(8, 3) (float32)."""
    g = np.arange(24, dtype=np.float32).reshape(8, 3)
    return g[pid * n:(pid + 1) * n]


def api(pid):
    record("devices", lambda: ([d.id for d in jax.devices()],
                               [d.process_index for d in jax.devices()],
                               [d.id for d in jax.local_devices()],
                               jax.process_index(), jax.process_count(),
                               jax.device_count(), jax.local_device_count(),
                               jax.distributed.is_initialized()))
    mesh = jax.make_mesh((4,), ("x",))
    row = NamedSharding(mesh, P("x"))
    a = jax.make_array_from_process_local_data(row, local_rows(pid))
    record("local_data", lambda: (a.shape, str(a.dtype), a.is_fully_addressable,
                                  shards(a)))
    record("read", lambda: np.asarray(a))
    record("repr", lambda: (repr(a), str(a)))
    record("global_shards", lambda: [(s.device.id, s.data is None) for s in a.global_shards])
    record("allgather_tiled", lambda: mh.process_allgather(a, tiled=True))
    record("allgather_global_untiled", lambda: mh.process_allgather(a))
    record("allgather_host", lambda: (mh.process_allgather(np.float32(pid)),
                                      mh.process_allgather(np.ones((2, 3)) * pid),
                                      mh.process_allgather(np.ones((2, 3)) * pid,
                                                           tiled=True)))
    record("broadcast", lambda: mh.broadcast_one_to_all({"a": np.array([pid, 5]),
                                                         "b": np.float32(pid + 1)}))
    record("broadcast_src1", lambda: mh.broadcast_one_to_all(np.array([pid]),
                                                             is_source=pid == 1))
    record("sync", lambda: mh.sync_global_devices("step"))
    record("assert_equal_ok", lambda: mh.assert_equal(np.arange(3)))
    record("assert_equal_bad", lambda: mh.assert_equal(np.arange(3) + pid, "differ!"))
    g = np.arange(24, dtype=np.float32).reshape(8, 3)
    record("callback", lambda: shards(jax.make_array_from_callback(
        (8, 3), row, lambda idx: g[idx])))
    record("single_device", lambda: shards(jax.make_array_from_single_device_arrays(
        (8, 3), row, [jax.device_put(np.full((2, 3), d.id, np.float32), d)
                      for d in jax.local_devices()])))
    record("device_put_host", lambda: shards(jax.device_put(g, row)))
    record("replicate", lambda: np.asarray(jax.device_put(a, NamedSharding(mesh, P()))))
    record("put_global_on_local", lambda: jax.device_put(a, jax.local_devices()[0]))
    record("put_replicated_on_local", lambda: np.asarray(jax.device_put(
        jax.device_put(a, NamedSharding(mesh, P())), jax.local_devices()[1])))
    # jit over the global array, eager ops on it
    record("jit_sum", lambda: np.asarray(jax.jit(lambda v: v.sum())(a)))
    record("jit_scale", lambda: (str(jax.jit(lambda v: v * 2)(a).sharding.spec),
                                 shards(jax.jit(lambda v: v * 2)(a))))
    record("eager_add", lambda: shards(a + 1))
    record("eager_mean", lambda: np.asarray(jnp.mean(a, axis=0)))
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    record("jit_matmul", lambda: mh.process_allgather(jax.jit(lambda v, m: v @ m)(a, w),
                                                      tiled=True))
    col = jax.make_array_from_process_local_data(NamedSharding(mesh, P(None, "x")),
                                                 np.ones((3, 2), np.float32) * (pid + 1))
    record("contract_sharded", lambda: np.asarray(jax.jit(lambda c: c.sum(axis=1))(col)))

    def loss(p, x):
        return jnp.mean((x @ p) ** 2)
    record("jit_grad", lambda: np.asarray(jax.jit(jax.grad(loss))(w, a)))


def collectives(pid):
    mesh = jax.make_mesh((4,), ("x",))
    a = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                               local_rows(pid))

    def sm(body, out=P()):
        return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=out)

    def get(v):
        return mh.process_allgather(v, tiled=True)
    record("psum", lambda: get(sm(lambda v: jax.lax.psum(v, "x"))(a)))
    record("pmax", lambda: get(sm(lambda v: jax.lax.pmax(v, "x"))(a)))
    record("pmin", lambda: get(sm(lambda v: jax.lax.pmin(v, "x"))(a)))
    record("pmean", lambda: get(sm(lambda v: jax.lax.pmean(v, "x"))(a)))
    record("psum_jit", lambda: get(jax.jit(sm(lambda v: jax.lax.psum(v, "x")))(a)))
    record("all_gather", lambda: get(sm(lambda v: jax.lax.all_gather(v, "x"))(a)))
    # edges: empty operands, NaN, booleans, integer wrap-around
    record("psum_empty", lambda: get(sm(lambda v: jax.lax.psum(v[:0], "x"))(a)))
    rows = local_rows(pid).copy()
    if pid == 1:
        rows[1, 1] = np.nan             # device 2's block, row 1
    nan = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), rows)
    record("pmax_nan", lambda: get(sm(lambda v: jax.lax.pmax(v, "x"))(nan)))
    record("pmin_nan", lambda: get(sm(lambda v: jax.lax.pmin(v, "x"))(nan)))
    record("psum_bool", lambda: get(sm(lambda v: jax.lax.psum(v > 10, "x"))(a)))
    record("psum_int8_wraps", lambda: get(sm(
        lambda v: jax.lax.psum((v * 0 + 100).astype(jnp.int8), "x"))(a)))
    record("all_gather_tiled", lambda: get(sm(
        lambda v: jax.lax.all_gather(v, "x", tiled=True))(a)))
    record("axis_index", lambda: get(sm(lambda v: v * 0 + jax.lax.axis_index("x"),
                                        P("x"))(a)))
    record("ppermute", lambda: get(sm(lambda v: jax.lax.ppermute(
        v, "x", [(i, (i + 1) % 4) for i in range(4)]), P("x"))(a)))
    record("ppermute_partial", lambda: get(sm(lambda v: jax.lax.ppermute(
        v, "x", [(0, 3), (2, 1)]), P("x"))(a)))
    b = jax.make_array_from_process_local_data(
        NamedSharding(mesh, P("x")),
        np.arange(32, dtype=np.float32).reshape(8, 4)[pid * 4:(pid + 1) * 4])
    record("psum_scatter", lambda: get(sm(
        lambda v: jax.lax.psum_scatter(v, "x", scatter_dimension=1, tiled=True),
        P("x"))(b)))
    record("psum_scatter_untiled", lambda: get(sm(
        lambda v: jax.lax.psum_scatter(v.T, "x"), P("x"))(b)))
    record("all_to_all", lambda: get(jax.shard_map(
        lambda v: jax.lax.all_to_all(v, "x", 1, 0, tiled=True), mesh=mesh,
        in_specs=P("x"), out_specs=P("x"))(b)))
    # a 2-d mesh: 'a' spans the processes, 'b' each process's own devices
    m2 = jax.make_mesh((2, 2), ("a", "b"))
    c = jax.make_array_from_process_local_data(NamedSharding(m2, P("a", "b")),
                                               local_rows(pid).reshape(2, 6))

    def sm2(body, out=P()):
        return jax.shard_map(body, mesh=m2, in_specs=P("a", "b"), out_specs=out)
    record("mesh2_psum_a", lambda: get(sm2(lambda v: jax.lax.psum(v, "a"), P(None, "b"))(c)))
    record("mesh2_psum_b", lambda: get(sm2(lambda v: jax.lax.psum(v, "b"), P("a"))(c)))
    record("mesh2_psum_ab", lambda: get(sm2(lambda v: jax.lax.psum(v, ("a", "b")))(c)))
    record("mesh2_index", lambda: get(sm2(
        lambda v: v * 0 + jax.lax.axis_index(("a", "b")), P("a", "b"))(c)))
    scaled = jax.jit(jax.shard_map(lambda s, v: v * s, mesh=mesh, in_specs=(None, P("x")),
                                   out_specs=P("x")))
    record("passed_as_is", lambda: (get(scaled(2.0, a)), get(scaled(3.0, a))))
    record("pmap_loop", lambda: np.asarray(jax.pmap(lambda v: jax.lax.fori_loop(
        0, 1, lambda i, c: c + jax.lax.psum(v, "i"), v * 0), axis_name="i")(
            np.arange(2.0) + 10 * pid)))
    record("pmap", lambda: np.asarray(jax.pmap(lambda v: jax.lax.psum(v, "i"),
                                               axis_name="i")(np.arange(2.0) + 10 * pid)))

    # data parallel: each device's gradient of its rows, averaged over all devices
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10

    def step(p, x):
        g = jax.grad(lambda q: jnp.mean((x @ q) ** 2))(p)
        return jax.lax.pmean(g, "x")
    record("dp_grad", lambda: np.asarray(jax.jit(jax.shard_map(
        step, mesh=mesh, in_specs=(P(), P("x")), out_specs=P()))(w, a)))
    record("grad_outside_jit", lambda: jax.jit(jax.grad(lambda p, y: jax.shard_map(
        lambda q, x: jax.lax.psum(jnp.sum(x @ q), "x"), mesh=mesh, in_specs=(P(), P("x")),
        out_specs=P())(p, y)))(w, a))
    record("grad_outside", lambda: jax.grad(lambda p: jax.shard_map(
        lambda q, x: jax.lax.psum(jnp.sum(x @ q), "x"), mesh=mesh, in_specs=(P(), P("x")),
        out_specs=P())(p, a))(w))


G2 = np.arange(4 * 8 * 6, dtype=np.float32).reshape(4, 8, 6)


def mesh2_ops(get):
    """Collectives over both axes of a 2x2 mesh (('a', 'b'); over two processes 'a' spans
    them), on an array every process builds the same way: the same code runs in one
    process with 4 devices (the ``oracle`` scenario), which the tests compare with."""
    m2 = jax.make_mesh((2, 2), ("a", "b"))
    sh = NamedSharding(m2, P("a", "b"))
    z = jax.make_array_from_callback(G2.shape, sh, lambda idx: G2[idx])

    def sm(body, out=P("a", "b")):
        return jax.jit(jax.shard_map(body, mesh=m2, in_specs=P("a", "b"), out_specs=out))
    ops = {
        "perm_a": sm(lambda v: jax.lax.ppermute(v, "a", [(0, 1), (1, 0)])),
        "perm_b": sm(lambda v: jax.lax.ppermute(v, "b", [(0, 1)])),
        "a2a_a": sm(lambda v: jax.lax.all_to_all(v, "a", 2, 0, tiled=True)),
        "a2a_b": sm(lambda v: jax.lax.all_to_all(v, "b", 0, 2, tiled=True)),
        "a2a_a_untiled": sm(lambda v: jax.lax.all_to_all(v[:, :, :2], "a", 2, 2)),
        "scatter_a": sm(lambda v: jax.lax.psum_scatter(v, "a", scatter_dimension=2,
                                                        tiled=True)),
        "scatter_ab": sm(lambda v: jax.lax.psum_scatter(v, ("a", "b"), scatter_dimension=1,
                                                         tiled=True)),
        "gather_a": sm(lambda v: jax.lax.all_gather(v, "a", axis=1, tiled=True)),
        "pmax_ab": sm(lambda v: jax.lax.pmax(v, ("a", "b")), P()),
        "vmapped_psum": sm(lambda v: jax.vmap(lambda r: jax.lax.psum(r, "a"))(v),
                           P(None, "b")),
        "grad_in_body": sm(lambda v: jax.lax.psum(jax.grad(
            lambda w: jnp.sum(jnp.sin(w * v)))(1.0), ("a", "b")), P()),
        "jit_reduce": jax.jit(lambda v: jnp.sin(v).sum(axis=0)),
        # collectives inside control flow (the body batched by the loop's own rule)
        "loop_psum_a": sm(lambda v: jax.lax.fori_loop(
            0, 2, lambda i, c: c + jax.lax.psum(v, "a"), jnp.zeros_like(v))),
        "cond_psum_a": sm(lambda v: jax.lax.cond(
            jnp.sum(v) > 100.0, lambda u: jax.lax.psum(u, "a"), lambda u: u * 0.5, v)),
        "scan_gather_a": sm(lambda v: jax.lax.scan(
            lambda c, _: (c + jax.lax.all_gather(v, "a", tiled=True).sum(0), None),
            jnp.zeros(v.shape[1:], v.dtype), None, length=2)[0], P("b")),
        "loop_ppermute_a": sm(lambda v: jax.lax.fori_loop(
            0, 3, lambda i, c: jax.lax.ppermute(c, "a", [(0, 1), (1, 0)]) + 1.0, v)),
        "checkpoint_pmax_ab": sm(lambda v: jax.checkpoint(
            lambda u: jax.lax.pmax(u, ("a", "b")))(v), P()),
        "pmax_scalar": sm(lambda v: jax.lax.pmax(v.max(), ("a", "b")), P()),
        "eager_max": lambda v: v.max(),
        "eager_ptp": lambda v: jnp.ptp(v),
        "jit_min_int": jax.jit(lambda v: v.astype(jnp.int32).min()),
    }
    for name, f in ops.items():
        record(name, lambda f=f: get(f(z)))


def oracle(pid):
    """One process with 4 devices: the values mesh2_ops must give."""
    mesh2_ops(np.asarray)


def mesh2(pid):
    mesh2_ops(lambda v: mh.process_allgather(v, tiled=True))


def errors(pid):
    record("initialize_twice", lambda: jax.distributed.initialize())
    record("put_on_remote_device", lambda: jax.device_put(np.ones(3),
                                                          jax.devices()[2 - 2 * pid]))
    mesh = jax.make_mesh((4,), ("x",))
    record("wrong_local_shape", lambda: jax.make_array_from_process_local_data(
        NamedSharding(mesh, P("x")), np.ones(4 + 2 * pid, np.float32)))
    record("global_shape_mismatch", lambda: jax.make_array_from_process_local_data(
        NamedSharding(mesh, P("x")), np.ones(4, np.float32), global_shape=(6,)))
    mine = Mesh(np.array(jax.devices()[:2]), ("x",))     # process 0's devices only
    record("mesh_missing_process", lambda: jax.jit(lambda v: v * 2)(
        jax.device_put(np.ones(4, np.float32), NamedSharding(mine, P("x")))))
    a = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                               np.ones(4, np.float32))
    # a program that differs per process: every rank must raise, none hang
    if pid == 0:
        record("diverge", lambda: np.asarray(jax.jit(lambda v: v.sum())(a)))
    else:
        record("diverge", lambda: mh.process_allgather(jax.shard_map(
            lambda v: jax.lax.all_gather(v, "x"), mesh=mesh, in_specs=P("x"),
            out_specs=P())(a), tiled=True))
    record("after_diverge_sync", lambda: mh.sync_global_devices("after"))
    record("shutdown", lambda: (jax.distributed.shutdown(),
                                jax.distributed.is_initialized()))


def hang(pid):
    mesh = jax.make_mesh((4,), ("x",))
    a = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                               np.ones(4, np.float32))
    if pid == 1:
        time.sleep(600)             # never arrives: rank 0 must time out and end the job
    print(np.asarray(jax.jit(lambda v: v.sum())(a)), flush=True)


def die(pid):
    mesh = jax.make_mesh((4,), ("x",))
    a = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                               np.ones(4, np.float32))
    if pid == 1:
        raise ValueError("planted failure on rank 1")
    print(np.asarray(jax.jit(lambda v: v.sum())(a)), flush=True)


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    if scenario == "errors":        # a launch of 2 processes said to be something else
        rank = int(os.environ["PMI_RANK"])
        record("count_mismatch", lambda: jax.distributed.initialize(num_processes=3))
        record("id_mismatch", lambda: jax.distributed.initialize(process_id=1 - rank))
    if scenario != "oracle":
        jax.distributed.initialize()
    pid = jax.process_index()
    globals()[scenario](pid)
    with open(os.path.join(outdir, f"rank{pid}.pkl"), "wb") as f:
        pickle.dump(OUT, f)


if __name__ == "__main__":
    main()
