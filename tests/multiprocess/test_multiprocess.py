"""Several processes over MPI: each test's job is ``mpiexec -n 2`` ranks of ranks.py (2 CPU
devices each, so meshes of 4 devices span both processes), started in a subprocess with a
timeout; the ranks pickle what they saw and these tests assert on it, against NumPy and
hand-checked values (and, for the printed forms and error types, what JAX 0.10.2 gives with
two processes, checked by hand).
"""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py")

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
MPIEXEC = shutil.which("mpiexec", path=BIN) or shutil.which("mpiexec")
if MPIEXEC is None:
    pytest.skip("no mpiexec (pip install 'jaxlite[mpi]')", allow_module_level=True)

G = np.arange(24, dtype=np.float32).reshape(8, 3)       # the global array of the ranks
W = np.arange(6, dtype=np.float32).reshape(3, 2) / 10


def run_job(scenario, tmp_path, timeout=120, env=None):
    """Runs ranks.py's ``scenario`` on 2 ranks; returns (exit status, output, elapsed s,
    [rank 0's record, rank 1's record] or None where a rank wrote none)."""
    e = dict(os.environ, JAX_NUM_CPU_DEVICES="2", JAXLITE_ASYNC="0",
             MPIEXEC_TIMEOUT=str(timeout))
    e.update(env or {})
    t = time.perf_counter()
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py",
                        os.path.join(HERE, "ranks.py"), scenario, str(tmp_path)],
                       env=e, capture_output=True, text=True, timeout=timeout + 30)
    elapsed = time.perf_counter() - t
    recs = []
    for r in range(2):
        f = tmp_path / f"rank{r}.pkl"
        recs.append(pickle.loads(f.read_bytes()) if f.exists() else None)
    return p.returncode, p.stdout + p.stderr, elapsed, recs


def ok(recs, name):
    """Both ranks' values of check ``name`` (failing with the rank's traceback)."""
    vals = []
    for r, rec in enumerate(recs):
        got = rec[name]
        assert got[0] == "ok", f"rank {r}: {name} raised {got[1]}: {got[2]}\n{got[3]}"
        vals.append(got[1])
    return vals


def err(recs, name, rank):
    got = recs[rank][name]
    assert got[0] == "error", f"rank {rank}: {name} did not raise: {got}"
    return got[1], got[2]


def _records(tmp_path_factory, scenario):
    rc, out, _, recs = run_job(scenario, tmp_path_factory.mktemp(scenario))
    assert rc == 0, out
    return recs


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    return _records(tmp_path_factory, "api")


@pytest.fixture(scope="module")
def coll(tmp_path_factory):
    return _records(tmp_path_factory, "collectives")


# ---- devices and global arrays ---------------------------------------------------------------

def test_devices_are_global_with_jax_ids(api):
    for r, v in enumerate(ok(api, "devices")):
        ids, procs, local, pid, count, ndev, nlocal, init = v
        assert ids == [0, 1, 2048, 2049]          # as JAX numbers them
        assert procs == [0, 0, 1, 1]
        assert local == [2048 * r, 2048 * r + 1]
        assert (pid, count, ndev, nlocal, init) == (r, 2, 4, 2, True)


def test_process_local_data_makes_the_global_array(api):
    for r, (shape, dtype, addressable, sh) in enumerate(ok(api, "local_data")):
        assert shape == (8, 3) and dtype == "float32" and addressable is False
        assert [s[0] for s in sh] == [2048 * r, 2048 * r + 1]
        for k, (_, idx, data) in enumerate(sh):
            lo = 4 * r + 2 * k
            assert idx[0] == (lo, lo + 2)
            np.testing.assert_array_equal(data, G[lo:lo + 2])


def test_reading_other_processes_shards_names_process_allgather(api):
    for r in range(2):
        typ, msg = err(api, "read", r)
        assert typ == "RuntimeError"
        assert "process_allgather" in msg and f"process {r}" in msg
    for v in ok(api, "repr"):
        assert v == ("Array(shape=(8, 3), dtype=float32)",) * 2     # as JAX prints it
    for r, v in enumerate(ok(api, "global_shards")):   # as JAX: others' data is None
        assert v == [(0, r == 1), (1, r == 1), (2048, r == 0), (2049, r == 0)]


def test_process_allgather(api):
    for v in ok(api, "allgather_tiled"):
        np.testing.assert_array_equal(v, G)
        assert v.dtype == np.float32
    for r in range(2):
        typ, msg = err(api, "allgather_global_untiled", r)
        assert typ == "ValueError" and "tiled=True" in msg
    for scalar, stacked, tiled in ok(api, "allgather_host"):
        np.testing.assert_array_equal(scalar, np.array([0, 1], np.float32))
        assert scalar.dtype == np.float32
        assert stacked.shape == (2, 2, 3) and tiled.shape == (4, 3)
        np.testing.assert_array_equal(tiled[2:], np.ones((2, 3)))


def test_broadcast_sync_assert_equal(api):
    for v in ok(api, "broadcast"):
        np.testing.assert_array_equal(v["a"], [0, 5])
        assert v["b"] == np.float32(1)
    for v in ok(api, "broadcast_src1"):
        np.testing.assert_array_equal(v, [1])
    assert ok(api, "sync") == [None, None]
    assert ok(api, "assert_equal_ok") == [None, None]
    for r in range(2):
        typ, msg = err(api, "assert_equal_bad", r)
        assert typ == "AssertionError" and "differ!" in msg


def test_other_constructors_hold_this_process_blocks(api):
    for r, sh in enumerate(ok(api, "callback")):
        for k, (_, idx, data) in enumerate(sh):
            np.testing.assert_array_equal(data, G[4 * r + 2 * k:4 * r + 2 * k + 2])
    for r, sh in enumerate(ok(api, "device_put_host")):
        for k, (_, idx, data) in enumerate(sh):
            np.testing.assert_array_equal(data, G[4 * r + 2 * k:4 * r + 2 * k + 2])
    for r, sh in enumerate(ok(api, "single_device")):
        assert [float(s[2][0, 0]) for s in sh] == [2048 * r, 2048 * r + 1]
    for v in ok(api, "replicate"):
        np.testing.assert_array_equal(v, G)
    for r in range(2):      # onto one device: only a value this process holds whole
        typ, msg = err(api, "put_global_on_local", r)
        assert typ == "RuntimeError" and "process_allgather" in msg
    for v in ok(api, "put_replicated_on_local"):
        np.testing.assert_array_equal(v, G)


# ---- programs over the global array -----------------------------------------------------------

def test_jit_and_eager_ops(api):
    for v in ok(api, "jit_sum"):
        assert float(v) == G.sum()
    for r, (spec, sh) in enumerate(ok(api, "jit_scale")):
        assert spec == "P('x',)" or spec == "P('x', None)"
        np.testing.assert_array_equal(sh[0][2], 2 * G[4 * r:4 * r + 2])
    for r, sh in enumerate(ok(api, "eager_add")):
        np.testing.assert_array_equal(sh[1][2], G[4 * r + 2:4 * r + 4] + 1)
    for v in ok(api, "eager_mean"):
        np.testing.assert_allclose(v, G.mean(0), rtol=1e-6)
    for v in ok(api, "jit_matmul"):
        np.testing.assert_allclose(v, G @ W, rtol=1e-6)
    col = np.concatenate([np.ones((3, 2)), 2 * np.ones((3, 2))], axis=1)
    for v in ok(api, "contract_sharded"):
        np.testing.assert_allclose(v, col.sum(1))
    want = 2 * G.T @ (G @ W) / (8 * 2)
    for v in ok(api, "jit_grad"):
        np.testing.assert_allclose(v, want, rtol=1e-5)


# ---- collectives across processes ---------------------------------------------------------------

def _blocks():
    return G.reshape(4, 2, 3)          # device k's block


def test_reductions(coll):
    b = _blocks()
    for name, want in [("psum", b.sum(0)), ("pmax", b.max(0)), ("pmin", b.min(0)),
                       ("pmean", b.mean(0)), ("psum_jit", b.sum(0))]:
        for v in ok(coll, name):
            np.testing.assert_allclose(v, want, rtol=1e-6, err_msg=name)
            assert v.dtype == np.float32


def test_reductions_at_the_edges(coll):
    b = _blocks()
    for v in ok(coll, "psum_empty"):
        assert v.shape == (0, 3) and v.dtype == np.float32
    for name in ("pmax_nan", "pmin_nan"):       # NaN propagates, as jnp.maximum/minimum
        for v in ok(coll, name):
            want = (b.max(0) if name == "pmax_nan" else b.min(0)).copy()
            want[1, 1] = np.nan
            np.testing.assert_array_equal(v, want)
    for v in ok(coll, "psum_bool"):             # a count, int32 (as JAX)
        np.testing.assert_array_equal(v, (b > 10).sum(0))
        assert v.dtype == np.int32
    for v in ok(coll, "psum_int8_wraps"):       # 4 x 100 in int8 wraps to -112
        assert v.dtype == np.int8 and (v == np.int8(-112)).all()


def test_gathers_scatters_permutes(coll):
    b = _blocks()
    for v in ok(coll, "all_gather"):
        np.testing.assert_array_equal(v, b)
    for v in ok(coll, "all_gather_tiled"):
        np.testing.assert_array_equal(v, G)
    for v in ok(coll, "axis_index"):
        np.testing.assert_array_equal(v, np.repeat(np.arange(4), 2)[:, None] * np.ones(3))
    for v in ok(coll, "ppermute"):
        np.testing.assert_array_equal(v, np.concatenate([b[3], b[0], b[1], b[2]]))
    for v in ok(coll, "ppermute_partial"):
        z = np.zeros((2, 3), np.float32)
        np.testing.assert_array_equal(v, np.concatenate([z, b[2], z, b[0]]))
    src = np.arange(32, dtype=np.float32).reshape(8, 4).reshape(4, 2, 4)
    # all_to_all(split 1, concat 0, tiled): device k gets column block k of every sender
    want = np.concatenate([np.concatenate([src[e][:, k:k + 1] for e in range(4)], 0)
                           for k in range(4)], 0)
    for v in ok(coll, "all_to_all"):
        np.testing.assert_array_equal(v, want)


def test_psum_scatter(coll):
    src = np.arange(32, dtype=np.float32).reshape(4, 2, 4)     # device k's block of b
    total = src.sum(0)                                           # (2, 4)
    for v in ok(coll, "psum_scatter"):      # device k keeps column k of the sum
        np.testing.assert_array_equal(v, np.concatenate([total[:, k:k + 1]
                                                         for k in range(4)], 0))
    for v in ok(coll, "psum_scatter_untiled"):      # row k of the summed transpose
        np.testing.assert_array_equal(v, total.T.reshape(-1))


def test_two_axis_mesh(coll):
    c = G.reshape(2, 2, 2, 3)      # (a, rows, b, cols): device (a, b) holds c[a, :, b, :]
    blocks = np.stack([np.stack([c[a, :, b, :] for b in range(2)]) for a in range(2)])
    for v in ok(coll, "mesh2_psum_a"):
        np.testing.assert_array_equal(v, np.concatenate(list(blocks.sum(0)), axis=1))
    for v in ok(coll, "mesh2_psum_b"):
        np.testing.assert_array_equal(v, np.concatenate(list(blocks.sum(1)), axis=0))
    for v in ok(coll, "mesh2_psum_ab"):
        np.testing.assert_array_equal(v, blocks.sum((0, 1)))
    for v in ok(coll, "mesh2_index"):
        idx = np.array([[0, 1], [2, 3]])
        want = np.repeat(np.repeat(idx, 2, 0), 3, 1).astype(np.float32)
        np.testing.assert_array_equal(v, want)


def test_arguments_passed_as_they_are_are_not_baked_in(coll):
    for two, three in ok(coll, "passed_as_is"):     # in_specs None, under jit, twice
        np.testing.assert_array_equal(two, 2 * G)
        np.testing.assert_array_equal(three, 3 * G)


def test_pmap_over_processes(coll):
    for v in ok(coll, "pmap"):
        np.testing.assert_array_equal(v, [22.0, 22.0])     # 0 + 1 + 10 + 11
    for v in ok(coll, "pmap_loop"):     # psum inside a loop still crosses processes
        np.testing.assert_array_equal(v, [22.0, 22.0])


def test_data_parallel_gradient(coll):
    b = _blocks()
    # as shard_map differentiates with check_vma (and JAX): the gradient of the shared
    # parameter is already summed over the devices, so pmean leaves that sum (the same
    # as one process with 4 devices gives: [[420, 621.6], ...])
    want = np.sum([2 * x.T @ (x @ W) / (2 * 2) for x in b], axis=0)
    for v in ok(coll, "dp_grad"):
        np.testing.assert_allclose(v, want, rtol=1e-5)
    for v in ok(coll, "grad_outside_jit"):      # one process with 4 devices gives this
        np.testing.assert_allclose(v, np.repeat(G.sum(0)[:, None], 2, 1), rtol=1e-6)
    for r in range(2):
        typ, msg = err(coll, "grad_outside", r)
        assert typ == "NotImplementedError" and "inside the shard_map body" in msg


def test_collectives_over_a_two_axis_mesh_equal_one_process(tmp_path):
    """ppermute, all_to_all, psum_scatter, all_gather, pmax over the process-spanning axis
    'a' and the local axis 'b' (and both), vmap and grad inside the body, a jitted
    einsum: equal to the same programs in one process with 4 devices."""
    rc, out, _, recs = run_job("mesh2", tmp_path, timeout=120)
    assert rc == 0, out
    e = dict(os.environ, JAX_NUM_CPU_DEVICES="4")
    p = subprocess.run([sys.executable, os.path.join(HERE, "ranks.py"), "oracle",
                        str(tmp_path)], env=e, capture_output=True, text=True, timeout=200)
    assert p.returncode == 0, p.stderr
    want = pickle.loads((tmp_path / "rank0.pkl").read_bytes())
    assert len(want) == 21
    for name, (status, *rest) in want.items():
        assert status == "ok", (name, rest)
        for v in ok(recs, name):
            np.testing.assert_allclose(v, rest[0], rtol=1e-6, err_msg=name)
            assert v.dtype == rest[0].dtype and v.shape == rest[0].shape, name


# ---- bad input, divergence, failures ----------------------------------------------------------

def test_errors_and_divergence(tmp_path):
    rc, out, elapsed, recs = run_job("errors", tmp_path, timeout=90)
    assert rc == 0, out
    for r in range(2):
        typ, msg = err(recs, "count_mismatch", r)
        assert typ == "ValueError" and "num_processes=3" in msg and "started 2" in msg
        typ, msg = err(recs, "id_mismatch", r)
        assert typ == "ValueError" and f"process_id={1 - r}" in msg and f"rank {r}" in msg
        typ, msg = err(recs, "initialize_twice", r)
        assert typ == "RuntimeError" and "only be called once" in msg
        typ, msg = err(recs, "put_on_remote_device", r)
        assert typ == "ValueError" and f"device of process {1 - r}" in msg
        typ, msg = err(recs, "wrong_local_shape", r)
        assert typ == "ValueError"
        assert "process 0 passed float32[4]" in msg and "process 1 passed float32[6]" in msg
        typ, msg = err(recs, "global_shape_mismatch", r)
        assert typ == "ValueError" and "(6,)" in msg and "(8,)" in msg
        typ, msg = err(recs, "diverge", r)
        assert typ == "CollectiveMismatchError"
        assert "process 0: collective" in msg and "process 1: collective" in msg
        assert "all-reduce sum" in msg and "all-gather" in msg and "ranks.py:" in msg
    typ, msg = err(recs, "mesh_missing_process", 1)
    assert typ == "ValueError" and "no device of processes [1]" in msg
    assert ok(recs, "after_diverge_sync") == [None, None]
    assert ok(recs, "shutdown") == [(None, False), (None, False)]


def test_a_rank_that_never_arrives_times_out(tmp_path):
    rc, out, elapsed, _ = run_job("hang", tmp_path, timeout=60,
                                  env={"JAXLITE_COLLECTIVE_TIMEOUT": "3"})
    assert rc != 0
    assert "CollectiveTimeoutError" in out and "waited 3 s" in out
    assert elapsed < 40, out


def test_a_rank_that_dies_ends_the_job(tmp_path):
    rc, out, elapsed, _ = run_job("die", tmp_path, timeout=60)
    assert rc != 0
    assert "planted failure on rank 1" in out
    assert elapsed < 40, out


# ---- the example: data-parallel training over 2 processes x 2 devices ----------------------

@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 minutes
def test_data_parallel_example_equals_one_process_with_four_devices(tmp_path):
    root = os.path.dirname(os.path.dirname(HERE))
    out = tmp_path / "losses.npy"
    p = subprocess.run([sys.executable, "-m", "jaxlite", "launch", "-n", "2", "--timeout",
                        "200", os.path.join(root, "examples", "multiprocess_training.py"),
                        str(out)], capture_output=True, text=True, timeout=260)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[0] process 0: loss over 20 steps on 4 devices (2 processes)" in p.stdout
    assert "[1] process 1: loss over 20 steps" in p.stdout
    two_procs = np.load(out)
    ref = subprocess.run(
        [sys.executable, "-c", "import sys, io, contextlib; sys.path.insert(0, 'examples');"
         "import sharded_training as st\n"
         "with contextlib.redirect_stdout(io.StringIO()): l = st.data_parallel()\n"
         "print(repr(l))"], cwd=root, capture_output=True, text=True, timeout=260,
        env=dict(os.environ, JAX_NUM_CPU_DEVICES="4"))
    assert ref.returncode == 0, ref.stderr
    one_proc = np.array(eval(ref.stdout.strip().splitlines()[-1]))
    assert two_procs.shape == (20,) and one_proc.shape == (20,)
    np.testing.assert_allclose(two_procs, one_proc, atol=1e-6, rtol=0)
    assert two_procs[-1] < two_procs[0] - 0.5          # it trains


def test_readme_multiprocess_script_runs_as_written(tmp_path):
    import re
    root = os.path.dirname(os.path.dirname(HERE))
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    part = text[text.index("## Several processes"):]
    script = re.search(r"```text\n(.*?)```", part, re.S).group(1)
    f = tmp_path / "two.py"
    f.write_text(script)
    p = subprocess.run([sys.executable, "-m", "jaxlite", "launch", "-n", "2", "--timeout",
                        "120", str(f)], capture_output=True, text=True, timeout=180,
                       env={k: v for k, v in os.environ.items()
                            if k != "JAX_NUM_CPU_DEVICES"})
    assert p.returncode == 0, p.stdout + p.stderr
    for r in range(2):
        lines = [ln[4:] for ln in p.stdout.splitlines() if ln.startswith(f"[{r}] ")]
        assert lines[0] == ("[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2048), "
                            "CpuDevice(id=2049)]")
        assert lines[1:] == ["(8, 2) False", "[4. 4.]", "[[2. 2.]", " [2. 2.]]",
                             "(8, 2)"], lines
