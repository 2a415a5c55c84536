"""Errors as JAX shows them over several devices (issue 33): a device-to-device transfer
the guard refuses raises JAX's ``JaxRuntimeError``; a NamedSharding that does not divide a
dimension raises the class JAX raises at each entry point (a plain ValueError from
``device_put`` onto Explicit mesh axes, ``IndivisibleError`` elsewhere); an error through
``shard_map`` or ``pmap`` over the 8 devices has the user's frames only."""
from __future__ import annotations

import os
import traceback

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp


def _raise(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the exception is what is compared
        return e
    raise AssertionError("no exception raised")


@pytest.mark.parametrize("level", ["disallow", "disallow_explicit"])
def test_implicit_device_to_device_transfer_raises_jax_runtime_error(rjax8, level):
    def case(jax):
        d = jax.devices()
        x = jax.numpy.ones(3)                       # uncommitted, on device 0
        y = jax.device_put(jax.numpy.ones(3), d[1])
        with jax.transfer_guard(level):
            return _raise(lambda: x + y)
    e, want = case(jaxlite), case(rjax8)
    assert type(e) is jaxlite.errors.JaxRuntimeError, type(e)
    assert type(want) is rjax8.errors.JaxRuntimeError
    for err in (e, want):
        assert str(err).startswith("INVALID_ARGUMENT: Disallowed device-to-device transfer")
        assert "float32[3]" in str(err)
    assert "CpuDevice(id=0)" in str(e) and "CpuDevice(id=1)" in str(e)


def test_explicit_device_to_device_transfer_under_disallow_explicit(rjax8):
    def case(jax):
        y = jax.device_put(jax.numpy.ones(3), jax.devices()[1])
        with jax.transfer_guard("disallow_explicit"):
            return _raise(lambda: jax.device_put(y, jax.devices()[0]))
    e, want = case(jaxlite), case(rjax8)
    assert type(e).__name__ == type(want).__name__ == "JaxRuntimeError"
    assert "device-to-device" in str(e) and "explicit" in str(e)


def _sharding(jax, spec, axis_type="Explicit"):
    types = getattr(jax.sharding.AxisType, axis_type)
    mesh = jax.make_mesh((8,), ("x",), axis_types=(types,))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))


@pytest.mark.parametrize("shape,spec", [((3,), ("x",)), ((4, 3), (None, "x")),
                                        ((12, 2), ("x",))])
def test_device_put_indivisible_explicit_axis_raises_value_error(rjax8, shape, spec):
    """JAX's own class, ``ValueError`` itself (printed so), naming the spec's axes, the
    array axis, how many parts and the dimension's size, and the shape."""
    e = _raise(lambda: jaxlite.device_put(ljnp.ones(shape), _sharding(jaxlite, spec)))
    want = _raise(lambda: rjax8.device_put(rjax8.numpy.ones(shape), _sharding(rjax8, spec)))
    assert type(e) is ValueError and type(want) is ValueError, (type(e), type(want))
    dim = spec.index("x")
    for err in (e, want):
        msg = str(err)
        assert "('x',)" in msg and f"array axis {dim}" in msg and "8 times" in msg, msg
        assert f"dimension size {shape[dim]}" in msg and f"{shape}" in msg, msg


@pytest.mark.parametrize("entry", ["device_put_auto", "jit_in_shardings",
                                   "jit_out_shardings", "shard_shape"])
def test_indivisible_error_where_jax_raises_it(rjax8, entry):
    """Elsewhere (an Auto mesh axis, jit's shardings, ``shard_shape``) JAX raises its
    ``IndivisibleError`` (a ValueError): jaxlite raises its class of that name."""
    def case(jax):
        s = _sharding(jax, ("x",), "Auto" if entry == "device_put_auto" else "Explicit")
        x = jax.numpy.ones(3)
        return _raise({
            "device_put_auto": lambda: jax.device_put(x, s),
            "jit_in_shardings": lambda: jax.jit(lambda a: a, in_shardings=s)(x),
            "jit_out_shardings": lambda: jax.jit(lambda a: a, out_shardings=s)(x),
            "shard_shape": lambda: s.shard_shape((3,)),
        }[entry])
    e, want = case(jaxlite), case(rjax8)
    assert type(e).__name__ == type(want).__name__ == "IndivisibleError"
    assert isinstance(e, ValueError)
    assert "dimension size is 3" in str(e) and "(3,)" in str(e)
    np.testing.assert_array_equal(np.asarray(jaxlite.device_put(ljnp.ones(8),
                                                                _sharding(jaxlite, ("x",)))),
                                  np.ones(8))


# ---- tracebacks through shard_map and pmap over several devices -------------------------

HERE = os.path.abspath(__file__)
PKG = os.path.dirname(os.path.abspath(jaxlite.__file__)) + os.sep


def _user(jax, x):
    return jax.numpy.dot(x, jax.numpy.ones(4))


def _sm(jax, f, spec):
    P = jax.sharding.PartitionSpec
    return jax.shard_map(f, mesh=jax.make_mesh((8,), ("x",)), in_specs=P(*spec),
                         out_specs=P(*spec))


MULTI_CASES = {
    "shard_map_body": lambda jax: _sm(jax, lambda v: _user(jax, v), ("x",))(
        jax.numpy.ones((8, 3))),
    "shard_map_indivisible": lambda jax: _sm(jax, lambda v: v, ("x",))(jax.numpy.ones(12)),
    "pmap_body": lambda jax: jax.pmap(lambda v: _user(jax, v))(jax.numpy.ones((8, 3))),
    "pmap_sizes": lambda jax: jax.pmap(lambda a, b: a)(jax.numpy.ones((8, 3)),
                                                       jax.numpy.ones((4, 3))),
}


@pytest.mark.parametrize("case", sorted(MULTI_CASES))
def test_shard_map_and_pmap_tracebacks_hold_the_users_frames(rjax8, case):
    """The error is JAX's class (a ValueError where jaxlite's is the IndivisibleError
    subclass); its traceback holds this file's frames (JAX's ones) and at most one public
    entry frame, with the note; under 'off' jaxlite's frames are there."""
    def frames(e):
        return [(os.path.abspath(f.filename), f.name)
                for f in traceback.extract_tb(e.__traceback__)]
    e = _raise(lambda: MULTI_CASES[case](jaxlite))
    want = _raise(lambda: MULTI_CASES[case](rjax8))
    assert isinstance(e, type(want)) or type(e).__name__ == type(want).__name__, (e, want)
    got = frames(e)
    others = [f for f in got if f[0] != HERE]
    assert len(others) <= 1 and all(path.startswith(PKG) for path, _ in others), got
    assert any("JAX_TRACEBACK_FILTERING=off" in n for n in getattr(e, "__notes__", ())), got
    mine = [name for path, name in got if path == HERE]
    assert mine == [name for path, name in frames(want) if path == HERE], got
    with jaxlite.config._override("jax_traceback_filtering", "off"):
        whole = frames(_raise(lambda: MULTI_CASES[case](jaxlite)))
    assert sum(path.startswith(PKG) for path, _ in whole) >= 2, whole
