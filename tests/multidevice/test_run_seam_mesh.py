"""The run seam over a mesh: a jit over sharded arrays places the call (mesh, output
shardings) and makes one ``Backend.run_compiled`` call on the backend of the mesh's
devices; the partitioned program is built once per placement and kept in the cache jit
hands over (core/run.py).  Values against NumPy, shardings against the ones asked for.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.backends.cpu import CpuBackend
from jaxlite.sharding import NamedSharding, PartitionSpec as P


@pytest.fixture
def placements(monkeypatch):
    # the backend of the tests' devices: the CPU's, or a PJRT plugin's under
    # JAXLITE_MULTIDEVICE_PLATFORM (whose run over a mesh is XLA's partitioned module)
    cls = type(jaxlite.devices()[0].backend)
    assert cls is CpuBackend or cls.__name__ == "PjrtBackend"
    seen = []
    real = cls.run_compiled

    def spy(backend, compiled, args, placement):
        seen.append(placement)
        return real(backend, compiled, args, placement)
    monkeypatch.setattr(cls, "run_compiled", spy)
    return seen


@pytest.fixture(scope="module")
def mesh():
    auto = jaxlite.sharding.AxisType.Auto
    return jaxlite.make_mesh((2, 4), ("x", "y"), axis_types=(auto, auto))


def test_sharded_call_is_one_mesh_placement(placements, mesh):
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = jaxlite.device_put(a, NamedSharding(mesh, P("x", "y")))
    out_sh = NamedSharding(mesh, P("x", None))
    f = jaxlite.jit(lambda v: jnp.sin(v) * 2.0, out_shardings=out_sh)
    out = f(x)
    outer = [p for p in placements if p.out_shardings is not None]
    assert len(outer) == 1
    p = outer[0]
    assert p.mesh is mesh and p.out_shardings == [out_sh] and p.across is False
    assert p.spmd is not None and p.what == "jit of <lambda>"
    runner = p.cache[p.key]         # the partitioned program, kept for this placement
    assert runner is not None
    np.testing.assert_allclose(np.asarray(out), np.sin(a) * 2.0, rtol=1e-6)
    assert out.dtype == np.float32 and out.shape == (8, 4) and out.sharding == out_sh
    placements.clear()
    out2 = f(x)                     # the same placement: the kept program runs again
    (p2,) = [q for q in placements if q.out_shardings is not None]
    assert p2.cache[p2.key] is runner
    np.testing.assert_array_equal(np.asarray(out2), np.asarray(out))


def test_donated_sharded_argument_is_deleted_after_the_run(placements, mesh):
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    x = jaxlite.device_put(a, NamedSharding(mesh, P("x", "y")))
    out = jaxlite.jit(lambda v: v + 1, donate_argnums=0)(x)
    (p,) = [q for q in placements if q.out_shardings is not None]
    assert p.delete_after == [x]
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), a + 1)
    assert out.sharding.spec == P("x", "y")
