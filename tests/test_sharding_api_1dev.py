"""The ``jax.sharding`` API in an ordinary one-device process, against real JAX (the
oracle): a mesh of the one device, NamedSharding on it, the current mesh, and the errors
for a mesh larger than the devices.  The 8-device comparisons are in
tests/multidevice/test_sharding_api.py."""
from __future__ import annotations

import pytest

import jaxlite
import jaxlite.sharding as jls


@pytest.fixture(scope="module")
def rjax1(rjax):
    if len(rjax.devices()) != 1 or len(jaxlite.devices()) != 1:
        pytest.skip("a one-device process (JAX_NUM_CPU_DEVICES unset)")
    return rjax


def _err(f):
    try:
        return "ok", f()
    except Exception as e:  # noqa: BLE001  -- compared against JAX's
        return type(e).__name__, str(e)


@pytest.mark.parametrize("types", [None, "Auto", "Explicit"])
def test_one_device_mesh(rjax1, types):
    tj = None if types is None else (getattr(jls.AxisType, types),)
    tx = None if types is None else (getattr(rjax1.sharding.AxisType, types),)
    a, b = jaxlite.make_mesh((1,), ("x",), tj), rjax1.make_mesh((1,), ("x",), tx)
    assert repr(a) == repr(b) and str(a) == str(b)
    assert a.size == b.size == 1 and a.shape == b.shape
    assert [d.id for d in a.devices.flat] == [d.id for d in b.devices.flat] == [0]
    assert repr(a.abstract_mesh) == repr(b.abstract_mesh)
    for spec in [(), ("x",), (None, "x"), (("x",), None)]:
        sa, sb = jaxlite.NamedSharding(a, jaxlite.P(*spec)), rjax1.NamedSharding(b, rjax1.P(*spec))
        assert repr(sa) == repr(sb)
        assert sa.is_fully_replicated == sb.is_fully_replicated is True
        for shape in [(), (3,), (3, 5), (0, 2)]:
            ra = _err(lambda: sa.shard_shape(shape))
            rb = _err(lambda: sb.shard_shape(shape))
            assert ra == rb, (spec, shape)
            if rb[0] == "ok":
                ma = {d.id: i for d, i in sa.devices_indices_map(shape).items()}
                mb = {d.id: i for d, i in sb.devices_indices_map(shape).items()}
                assert ma == mb
        single_a = jls.SingleDeviceSharding(jaxlite.devices()[0])
        single_b = rjax1.sharding.SingleDeviceSharding(rjax1.devices()[0])
        assert sa.is_equivalent_to(single_a, 2) == sb.is_equivalent_to(single_b, 2)
        assert single_a.is_equivalent_to(sa, 2) == single_b.is_equivalent_to(sb, 2)
        assert (sa == single_a) == (sb == single_b)


@pytest.mark.parametrize("shape", [(2,), (1, 2), (4, 2)])
def test_mesh_larger_than_devices(rjax1, shape):
    names = ("x", "y")[:len(shape)]
    ra = _err(lambda: jaxlite.make_mesh(shape, names))
    rb = _err(lambda: rjax1.make_mesh(shape, names))
    assert ra == rb and ra[0] == "ValueError"


def test_set_mesh_one_device(rjax1):
    a, b = jaxlite.make_mesh((1,), ("x",)), rjax1.make_mesh((1,), ("x",))
    with jaxlite.set_mesh(a), rjax1.set_mesh(b):
        assert repr(jls.get_mesh()) == repr(rjax1.sharding.get_mesh())
        assert repr(jls.get_abstract_mesh()) == repr(rjax1.sharding.get_abstract_mesh())
    assert str(jls.get_mesh()) == str(rjax1.sharding.get_mesh()) == "Mesh()"
    assert jls.get_abstract_mesh().empty


def test_top_level_names(rjax1):
    for name in ["NamedSharding", "P", "make_mesh", "set_mesh"]:
        assert hasattr(rjax1, name)
        assert getattr(jaxlite, name) is getattr(jls, name)
    assert not hasattr(rjax1, "Mesh") and not hasattr(jaxlite, "Mesh")
    assert not hasattr(rjax1, "get_mesh") and not hasattr(jaxlite, "get_mesh")
