"""Several devices of a PJRT platform (the XLA:CPU plugin's, 4 by default): sharded Arrays
whose shards are PJRT buffers, jit over a mesh lowered to ONE StableHLO module with its
shardings and partitioned by XLA, sharding constraints as XLA annotations, and the bad
input of meshes (two platforms, more partitions than devices).  Values against NumPy,
shardings against what the CPU platform gives for the same program.

``test_multidevice_suite_on_xla_cpu`` (slow tier) runs the CPU platform's sharding tests
(tests/multidevice, against real JAX) on 8 XLA:CPU devices in a process of their own and
reports per-file counts; every failure must be a known one (``KNOWN``, with its reason).
"""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

from jaxlite.backends.pjrt import _spmd  # noqa: E402
from jaxlite.backends.pjrt.client import PjrtBuffer, partitioned_compile_options  # noqa: E402
from jaxlite.backends.pjrt.lowering import hlo_sharding  # noqa: E402


@pytest.fixture(scope="module")
def xdevs():
    devs = jaxlite.devices("xla_cpu")
    assert len(devs) >= 4
    return devs[:4]


@pytest.fixture(scope="module")
def mesh(xdevs):
    return Mesh(np.array(xdevs).reshape(2, 2), ("x", "y"))


@pytest.fixture
def modules(monkeypatch):
    """The StableHLO text of every partitioned module compiled while the test runs."""
    seen = []
    init = _spmd.PartitionedExecutable.__init__

    def record(self, *a, **k):
        init(self, *a, **k)
        seen.append(self.text)
    monkeypatch.setattr(_spmd.PartitionedExecutable, "__init__", record)
    return seen


X = np.arange(32, dtype=np.float32).reshape(8, 4)


def _natives(arr):
    return [type(s.data._buf.data) for s in arr.addressable_shards]


@pytest.mark.parametrize("spec", [P("x", "y"), P("x"), P(None, "y"), P(("x", "y")), P(),
                                  P("y", "x")])
def test_device_put_makes_one_pjrt_buffer_per_device(mesh, xdevs, spec):
    before = [d.memory_stats()["bytes_in_use"] for d in xdevs]
    jaxlite.transfer_stats(reset=True)
    y = jaxlite.device_put(X, NamedSharding(mesh, spec))
    assert y.sharding == NamedSharding(mesh, spec)
    stats = jaxlite.transfer_stats(reset=True)
    assert _natives(y) == [PjrtBuffer] * 4
    idx = y.sharding.devices_indices_map(X.shape)
    blocks = {d: X[idx[d]].nbytes for d in xdevs}
    # memory per device: exactly its shard; one counted host-to-device copy per shard
    after = [d.memory_stats()["bytes_in_use"] for d in xdevs]
    assert [a - b for a, b in zip(after, before)] == [blocks[d] for d in xdevs]
    assert stats == {("host", str(d)): {"count": 1, "bytes": blocks[d]} for d in xdevs}
    for s in y.addressable_shards:
        assert s.index == idx[s.device]
        np.testing.assert_array_equal(np.asarray(s.data), X[s.index])
        assert s.data.dtype == np.float32 and s.data.devices() == {s.device}
    jaxlite.transfer_stats(reset=True)
    # reading it back gathers each distinct block once (counted device-to-host copies)
    got = np.asarray(y)
    np.testing.assert_array_equal(got, X)
    assert got.dtype == np.float32
    n_blocks = len({tuple((i.start, i.stop) for i in v) for v in idx.values()})
    stats = jaxlite.transfer_stats(reset=True)
    assert sum(v["count"] for v in stats.values()) == n_blocks
    assert sum(v["bytes"] for v in stats.values()) == X.nbytes
    y.block_until_ready()
    y.delete()
    assert y.is_deleted()
    assert [d.memory_stats()["bytes_in_use"] for d in xdevs] == before
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(y)


def test_reshard_gather_and_single_device(mesh, xdevs):
    y = jaxlite.device_put(jnp.asarray(X, device=xdevs[0]), NamedSharding(mesh, P("x", "y")))
    z = jaxlite.device_put(y, NamedSharding(mesh, P(None, "x")))
    assert z.sharding.spec == P(None, "x") and _natives(z) == [PjrtBuffer] * 4
    assert [s.data.shape for s in z.addressable_shards] == [(8, 2)] * 4
    np.testing.assert_array_equal(np.asarray(z), X)
    g = jaxlite.device_put(y, xdevs[2])
    assert g.devices() == {xdevs[2]} and type(g._buf.data) is PjrtBuffer
    np.testing.assert_array_equal(np.asarray(g), X)
    rows = list(y)
    assert len(rows) == 8 and rows[3].dtype == np.float32
    np.testing.assert_array_equal(np.asarray(rows[3]), X[3])
    w = jaxlite.make_array_from_callback(X.shape, NamedSharding(mesh, P("y")),
                                         lambda i: X[i])
    assert _natives(w) == [PjrtBuffer] * 4
    np.testing.assert_array_equal(np.asarray(w), X)
    s = jaxlite.make_array_from_callback(X.shape, SingleDeviceSharding(xdevs[1]),
                                         lambda i: X[i])
    assert s.devices() == {xdevs[1]} and type(s._buf.data) is PjrtBuffer
    # an eager operation on a sharded array: its result's shards are PJRT buffers too
    e = y * 2 + 1
    assert _natives(e) == [PjrtBuffer] * 4 and e.sharding.spec == P("x", "y")
    np.testing.assert_array_equal(np.asarray(e), X * 2 + 1)


def test_hlo_sharding_text(mesh, xdevs):
    devs = list(mesh.devices.flat)
    assert hlo_sharding(NamedSharding(mesh, P()), 2, devs) == "{replicated}"
    assert hlo_sharding(NamedSharding(mesh, P("x", "y")), 2, devs) == \
        "{devices=[2,2]0,1,2,3}"
    assert hlo_sharding(NamedSharding(mesh, P("y", "x")), 2, devs) == \
        "{devices=[2,2]0,2,1,3}"
    assert hlo_sharding(NamedSharding(mesh, P("x")), 2, devs) == \
        "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"
    assert hlo_sharding(NamedSharding(mesh, P(None, "x")), 2, devs) == \
        "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"
    assert hlo_sharding(NamedSharding(mesh, P(("y", "x"))), 1, devs) == \
        "{devices=[4]0,2,1,3}"
    # partitions are positions in the program's device order, not device ids
    assert hlo_sharding(NamedSharding(mesh, P("x", "y")), 2, devs[::-1]) == \
        "{devices=[2,2]3,2,1,0}"
    with pytest.raises(ValueError, match="outside the program's partitions"):
        hlo_sharding(NamedSharding(mesh, P("x")), 1, devs[:2])


def test_partitioned_compile_options_bytes():
    # CompileOptionsProto{executable_build_options{num_replicas 1, num_partitions 4,
    # use_spmd_partitioning true, device_assignment{1, 4, [[3], [1], [0], [2]]}}}
    assert partitioned_compile_options([3, 1, 0, 2]).hex() == \
        "1a1c2001280430014a14080110041a0208031a0208011a0208001a020802"
    for bad in ([], [1, 1], [-1]):
        with pytest.raises(ValueError, match="distinct non-negative"):
            partitioned_compile_options(bad)


def test_jit_over_a_mesh_is_one_module_partitioned_by_xla(mesh, xdevs, modules):
    y = jaxlite.device_put(X, NamedSharding(mesh, P("x", "y")))
    v = jaxlite.device_put(X[:, 0], NamedSharding(mesh, P("x")))

    def f(a, b, s):
        return a @ a.T, a.sum(0), jnp.sin(a).T * s, (a.T * b).max(1)
    jaxlite.transfer_stats(reset=True)
    outs = jaxlite.jit(f)(y, v, 3.0)
    want = (X @ X.T, X.sum(0), np.sin(X).T * 3.0, (X.T * X[:, 0]).max(1))
    for o, w in zip(outs, want):
        assert o.dtype == np.float32 and o.shape == w.shape
        assert _natives(o) == [PjrtBuffer] * 4
        assert {s.device for s in o.addressable_shards} == set(xdevs)
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-5)
    # the placements the CPU platform's propagation gives the same program
    assert [o.sharding.spec for o in outs] == [P("x"), P("y"), P("y", "x"), P("y")]
    assert len(modules) == 1
    text = modules[0]
    assert "mhlo.num_partitions = 4 : i32" in text and "mhlo.num_replicas = 1" in text
    assert '%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,2]0,1,2,3}"}' in text
    assert '%arg2: tensor<f32> {mhlo.sharding = "{replicated}"}' in text
    assert 'tensor<4x8xf32> {mhlo.sharding = "{devices=[2,2]0,2,1,3}"}' in text
    # a second call reuses the module; it reads nothing back to the host (the scalar
    # goes to every device, replicated)
    jaxlite.transfer_stats(reset=True)
    again = jaxlite.jit(f)(y, v, 3.0)
    stats = jaxlite.transfer_stats(reset=True)
    assert stats == {("host", str(d)): {"count": 1, "bytes": 4} for d in xdevs}
    np.testing.assert_allclose(np.asarray(again[0]), want[0], rtol=1e-5)
    assert len(modules) == 1


def test_jit_out_in_shardings_and_constraints(mesh, xdevs, modules):
    y = jaxlite.device_put(X, NamedSharding(mesh, P("x", "y")))
    want = NamedSharding(mesh, P(None, "x"))
    o = jaxlite.jit(lambda a: a + 1, out_shardings=want)(y)
    assert o.sharding == want and _natives(o) == [PjrtBuffer] * 4
    np.testing.assert_array_equal(np.asarray(o), X + 1)
    # in_shardings places a host argument first
    f = jaxlite.jit(lambda a: a * 2, in_shardings=NamedSharding(mesh, P("y")))
    o = f(X)
    assert o.sharding.spec == P("y")
    np.testing.assert_array_equal(np.asarray(o), X * 2)
    # an output placed on one device of the mesh
    o = jaxlite.jit(lambda a: a - 1, out_shardings=SingleDeviceSharding(xdevs[3]))(y)
    assert o.devices() == {xdevs[3]} and type(o._buf.data) is PjrtBuffer
    np.testing.assert_array_equal(np.asarray(o), X - 1)
    # with_sharding_constraint: XLA's annotation, custom_call @Sharding
    modules.clear()
    g = jaxlite.jit(lambda a: jaxlite.lax.with_sharding_constraint(
        a * 3, NamedSharding(mesh, P("y"))).sum(1))
    o = g(y)
    np.testing.assert_allclose(np.asarray(o), (X * 3).sum(1), rtol=1e-6)
    assert o.sharding.spec == P("y")
    assert len(modules) == 1
    assert '"stablehlo.custom_call"' in modules[0] and 'call_target_name = "Sharding"' in \
        modules[0] and 'mhlo.sharding = "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"' \
        in modules[0]


def test_shard_map_values_on_pjrt_devices(mesh):
    y = jaxlite.device_put(X, NamedSharding(mesh, P("x", "y")))
    f = jaxlite.shard_map(lambda b: jaxlite.lax.psum(b.sum(0), "x"), mesh=mesh,
                          in_specs=P("x", "y"), out_specs=P("y"))
    for fn in (f, jaxlite.jit(f)):
        o = fn(y)
        assert o.sharding.spec == P("y") and _natives(o) == [PjrtBuffer] * 4
        np.testing.assert_allclose(np.asarray(o), X.sum(0), rtol=1e-6)


def test_mesh_of_two_platforms_is_refused(xdevs):
    cpu = jaxlite.devices("cpu")[0]
    mixed = Mesh(np.array([cpu, xdevs[0]]), ("x",))
    sh = NamedSharding(mixed, P("x"))
    live = [d.memory_stats()["bytes_in_use"] for d in (cpu, xdevs[0])]
    with pytest.raises(ValueError, match=r"mixes devices of the platforms \['cpu', "
                                         r"'xla_cpu'\]"):
        jaxlite.device_put(np.ones(8, np.float32), sh)
    with pytest.raises(ValueError, match="mixes devices"):
        jaxlite.jit(lambda a: a + 1, out_shardings=sh)(np.ones(8, np.float32))
    # nothing was placed
    assert [d.memory_stats()["bytes_in_use"] for d in (cpu, xdevs[0])] == live


def test_more_partitions_than_devices_is_refused(xdevs):
    n = len(jaxlite.devices("xla_cpu"))
    with pytest.raises(ValueError, match=f"Number of devices {n} must be >="):
        jaxlite.make_mesh((2 * n,), ("x",), devices=jaxlite.devices("xla_cpu"))
    twice = Mesh(np.array(list(xdevs) * 2), ("x",))
    live = [d.memory_stats()["bytes_in_use"] for d in xdevs]
    with pytest.raises(ValueError, match="8 positions but 4 distinct devices"):
        jaxlite.device_put(np.ones(8, np.float32), NamedSharding(twice, P("x")))
    y = jaxlite.device_put(np.ones(8, np.float32), NamedSharding(
        Mesh(np.array(xdevs), ("x",)), P("x")))
    live = [d.memory_stats()["bytes_in_use"] for d in xdevs]
    with pytest.raises(ValueError, match="8 positions but 4 distinct devices"):
        jaxlite.jit(lambda a: a + 1, out_shardings=NamedSharding(twice, P("x")))(y)
    assert [d.memory_stats()["bytes_in_use"] for d in xdevs] == live


# ---- the CPU platform's sharding tests, on the XLA:CPU plugin's devices -----------------

# a sample of tests/multidevice run in the fast tier (about 20 s of tests); the whole
# directory runs in the slow tier
FAST_FILES = ("test_collectives_shard_map.py", "test_run_seam_mesh.py", "test_pmap.py",
              "test_trust_errors_multi.py", "test_sharding_api_gaps.py",
              "test_set_mesh_placement.py")


def _run_multidevice(tmp_path, files, marker):
    """Runs ``files`` of tests/multidevice (all of it for None) in a pytest process of
    its own on 8 XLA:CPU devices (JAXLITE_MULTIDEVICE_PLATFORM, JAX_NUM_CPU_DEVICES; real
    JAX, the oracle, on 8 CPU devices); returns {file: Counter(passed/failed/skipped)}
    and the ids of the failed tests with their messages."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.dirname(os.path.dirname(os.path.abspath(jaxlite.__file__)))
    here = os.path.join(root, "tests", "multidevice")
    targets = [here] if files is None else [os.path.join(here, f) for f in files]
    xml = tmp_path / "multidevice.xml"
    env = dict(os.environ, JAXLITE_MULTIDEVICE_PLATFORM="xla_cpu", JAX_NUM_CPU_DEVICES="8",
               JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
           "--timeout=600", f"--junitxml={xml}", *(["-m", marker] if marker else []),
           *targets]
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                       timeout=3000)
    assert xml.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    counts = collections.defaultdict(collections.Counter)
    failed = {}
    for tc in ET.parse(xml).iter("testcase"):
        name = tc.get("classname").rsplit(".", 1)[-1] + ".py"
        state = "passed"
        for child in tc:
            if child.tag in ("failure", "error"):
                state = "failed"
                failed[f"{name}::{tc.get('name')}"] = (child.get("message") or "")[:300]
            elif child.tag == "skipped":
                state = "skipped"
                assert "needs 8 CPU devices" not in (child.get("message") or ""), \
                    "the XLA:CPU plugin did not get 8 devices (cpu_device_count)"
        counts[name][state] += 1
    table = "\n".join(f"  {f:40s} {c['passed']:5d} passed {c['failed']:3d} failed "
                      f"{c['skipped']:3d} skipped" for f, c in sorted(counts.items()))
    print(f"tests/multidevice on xla_cpu (8 devices):\n{table}")
    return counts, failed


def test_multidevice_sample_on_xla_cpu(tmp_path):
    counts, failed = _run_multidevice(tmp_path, FAST_FILES, "not slow")
    assert sorted(counts) == sorted(FAST_FILES)
    assert not failed, failed
    assert all(c["passed"] for c in counts.values()), counts


@pytest.mark.slow
def test_multidevice_suite_on_xla_cpu(tmp_path):
    counts, failed = _run_multidevice(tmp_path, None, None)
    assert len(counts) >= 20, sorted(counts)
    assert not failed, failed
    assert sum(c["passed"] for c in counts.values()) > 1800


# ---- shard_map lowered as manual code with XLA's collectives ------------------------------

def _blocks(a, n):
    return np.split(a, n)


COLLECTIVES = {
    # name: (body, out_spec, the module's collective, expected from the 4 row blocks)
    "psum": (lambda v: jaxlite.lax.psum(v, "i"), P(), "stablehlo.all_reduce",
             lambda b: sum(b)),
    "pmax": (lambda v: jaxlite.lax.pmax(v, "i"), P(), "stablehlo.all_reduce",
             lambda b: np.maximum.reduce(b)),
    "pmean": (lambda v: jaxlite.lax.pmean(v, "i"), P(), "stablehlo.all_reduce",
              lambda b: sum(b) / 4),
    "all_gather": (lambda v: jaxlite.lax.all_gather(v, "i"), P(), "stablehlo.all_gather",
                   lambda b: np.stack(b)),
    "all_gather tiled": (lambda v: jaxlite.lax.all_gather(v, "i", tiled=True), P(),
                         "stablehlo.all_gather", lambda b: np.concatenate(b)),
    "psum_scatter": (lambda v: jaxlite.lax.psum_scatter(v, "i", tiled=True), P("i"),
                     "stablehlo.reduce_scatter", lambda b: sum(b)),
    "all_to_all": (lambda v: jaxlite.lax.all_to_all(v, "i", 0, 0, tiled=True), P("i"),
                   "stablehlo.all_to_all",
                   lambda b: np.concatenate([np.concatenate([np.split(x, 4)[k] for x in b])
                                             for k in range(4)])),
    "ppermute": (lambda v: jaxlite.lax.ppermute(v, "i", [(k, (k + 1) % 4) for k in range(4)]),
                 P("i"), "stablehlo.collective_permute",
                 lambda b: np.concatenate([b[3], b[0], b[1], b[2]])),
    "axis_index": (lambda v: v * jaxlite.lax.axis_index("i"), P("i"), "stablehlo.partition_id",
                   lambda b: np.concatenate([x * k for k, x in enumerate(b)])),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_jitted_shard_map_is_manual_code_with_xla_collectives(xdevs, modules, name):
    body, out_spec, op, want = COLLECTIVES[name]
    mesh1 = Mesh(np.array(xdevs), ("i",))
    a = np.arange(64, dtype=np.float32).reshape(16, 4) - 20.0
    x = jaxlite.device_put(a, NamedSharding(mesh1, P("i")))
    f = jaxlite.jit(jaxlite.shard_map(body, mesh=mesh1, in_specs=P("i"), out_specs=out_spec))
    out = f(x)
    expect = want(_blocks(a, 4))
    assert out.shape == expect.shape and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), expect, rtol=1e-6)
    assert _natives(out) == [PjrtBuffer] * 4
    (text,) = modules
    assert 'call_target_name = "SPMDFullToShardShape", mhlo.sharding = "{manual}"' in text
    assert 'call_target_name = "SPMDShardToFullShape"' in text
    assert f'"{op}"' in text
    if op != "stablehlo.partition_id":
        assert "replica_groups = dense<[[0, 1, 2, 3]]>" in text or \
            "source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]>" in text


def test_manual_collectives_over_one_axis_of_two(mesh, modules):
    """Replica groups over one axis of a 2x2 mesh: the partitions sharing the other."""
    y = jaxlite.device_put(X, NamedSharding(mesh, P("x", "y")))
    f = jaxlite.jit(jaxlite.shard_map(
        lambda b: (jaxlite.lax.psum(b, "x"), jaxlite.lax.all_gather(b, "y", axis=1,
                                                                     tiled=True)),
        mesh=mesh, in_specs=P("x", "y"), out_specs=(P(None, "y"), P("x"))))
    s, g = f(y)
    np.testing.assert_allclose(np.asarray(s), X[:4] + X[4:], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g), X, rtol=1e-6)
    assert s.sharding.spec == P(None, "y") and g.sharding.spec == P("x")
    (text,) = modules
    assert "replica_groups = dense<[[0, 2], [1, 3]]>" in text       # over 'x'
    assert "replica_groups = dense<[[0, 1], [2, 3]]>" in text       # over 'y'


def test_collective_outside_a_shard_map_does_not_lower():
    from jaxlite.backends.pjrt.lowering import lower_module
    from jaxlite.core.avals import ShapedArray
    from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
    from jaxlite.primitives.collectives import psum_p
    a = ShapedArray((3,), np.dtype(np.float32))
    x, y = Var(a), Var(a)
    closed = ClosedJaxpr(Jaxpr([], [x], [JaxprEqn(psum_p, [x], [y], {"axes": ("i",)})],
                               [y]), [])
    with pytest.raises(NotImplementedError, match="psum.*unbound axis"):
        lower_module(closed, platform="xla_cpu")


def test_eager_shard_map_and_pmap_run_as_manual_modules(xdevs, mesh, modules):
    y = jaxlite.device_put(X, NamedSharding(mesh, P("x", "y")))
    out = jaxlite.shard_map(lambda b: jaxlite.lax.pmean(b, "y"), mesh=mesh,
                            in_specs=P("x", "y"), out_specs=P("x"))(y)
    halves = np.split(X, 2, axis=1)
    np.testing.assert_allclose(np.asarray(out), (halves[0] + halves[1]) / 2, rtol=1e-6)
    assert out.sharding == NamedSharding(mesh, P("x")) and _natives(out) == [PjrtBuffer] * 4
    assert len(modules) == 1 and '"stablehlo.all_reduce"' in modules[0]
    # pmap over the plugin's devices: one manual module, the psum XLA's all-reduce
    modules.clear()
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    r = jaxlite.pmap(lambda v: v - jaxlite.lax.psum(v, "i") / 4, axis_name="i",
                     devices=xdevs)(a)
    np.testing.assert_allclose(np.asarray(r), a - a.mean(0), rtol=1e-6)
    assert r.shape == (4, 3) and r.dtype == np.float32
    assert {s.device for s in r.addressable_shards} == set(xdevs)
    assert _natives(r) == [PjrtBuffer] * 4
    assert len(modules) == 1 and '"stablehlo.all_reduce"' in modules[0]
    assert "SPMDFullToShardShape" in modules[0]


def test_host_callback_and_donation_over_a_mesh(mesh, modules, capsys):
    y = jaxlite.device_put(X, NamedSharding(mesh, P("x", "y")))

    def f(a):
        jaxlite.debug.print("sum {s}", s=a.sum())
        return a * 2
    o = jaxlite.jit(f)(y)
    # a program with a host callback runs once (in pieces), its result placed as asked
    assert capsys.readouterr().out == "sum 496.0\n"
    assert o.sharding.spec == P("x", "y") and _natives(o) == [PjrtBuffer] * 4
    np.testing.assert_array_equal(np.asarray(o), X * 2)
    assert modules == []
    d = jaxlite.jit(lambda a: a + 1, donate_argnums=0)(y)
    assert y.is_deleted()
    np.testing.assert_array_equal(np.asarray(d), X + 1)
