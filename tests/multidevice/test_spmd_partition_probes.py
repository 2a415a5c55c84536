"""Probes of the SPMD partitioner (compiler/passes/spmd_partition.py): programs whose jit
over sharded arrays disagrees with the same jit on one device and with real JAX 0.10.2 on
the same mesh and shardings.  Each test was a defect found by probing (xfail(strict=True)
until fixed, now a regression test); open defects carry the marker."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.sharding import NamedSharding, PartitionSpec as P


def _auto_meshes(jax, shape=(2, 4), names=("x", "y")):
    lm = jaxlite.make_mesh(shape, names,
                           axis_types=(jaxlite.sharding.AxisType.Auto,) * len(shape))
    rm = jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(shape))
    return lm, rm


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_conv_batch_group_count_with_rhs_features_sharded(rjax8):
    jax = rjax8
    lm, rm = _auto_meshes(jax)
    x, w = _rand((4, 2, 8)), _rand((8, 2, 3), 1)

    def f(lax):
        return lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME",
                                                     batch_group_count=2)
    want = jax.jit(f(jax.lax))(x, jax.device_put(w, jax.sharding.NamedSharding(
        rm, jax.P("x"))))
    one = jaxlite.jit(f(jaxlite.lax))(x, w)
    got = jaxlite.jit(f(jaxlite.lax))(x, jaxlite.device_put(w, NamedSharding(lm, P("x"))))
    np.testing.assert_allclose(np.asarray(one), np.asarray(want), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["sum", "dot"])
def test_bfloat16_sum_over_sharded_dimension(rjax8, case):
    jax = rjax8
    lm, rm = _auto_meshes(jax)
    a, b = _rand((8, 8)), _rand((8, 8), 1)
    specs = {"sum": [("x", "y"), ("x", "y")], "dot": [(None, "y"), ("y", None)]}[case]

    def f(np_):
        if case == "sum":
            return lambda x, y: x.astype(np_.bfloat16).sum(0)
        return lambda x, y: x.astype(np_.bfloat16) @ y.astype(np_.bfloat16)
    want = jax.jit(f(jax.numpy))(*[jax.device_put(v, jax.sharding.NamedSharding(
        rm, jax.P(*s))) for v, s in zip((a, b), specs)])
    got = jaxlite.jit(f(jnp))(*[jaxlite.device_put(v, NamedSharding(lm, P(*s)))
                                for v, s in zip((a, b), specs)])
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               rtol=5e-2, atol=5e-2)


# gather/scatter local indexers once counted an ellipsis as no dimension: the slice after it
# was rewritten at an earlier, sharded dimension and the wrong columns were read/written


def test_scatter_with_ellipsis_then_slice(rjax8):
    jax = rjax8
    lm, rm = _auto_meshes(jax)
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    want = jax.jit(lambda x: x.at[..., 2:6].set(-1.0))(
        jax.device_put(a, jax.sharding.NamedSharding(rm, jax.P("x"))))
    got = jaxlite.jit(lambda x: x.at[..., 2:6].set(-1.0))(
        jaxlite.device_put(a, NamedSharding(lm, P("x"))))
    np.testing.assert_array_equal(np.asarray(want), np.where(
        (np.arange(8) >= 2) & (np.arange(8) < 6), -1.0, a))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_gather_with_index_ellipsis_slice(rjax8):
    jax = rjax8
    lm, rm = _auto_meshes(jax)
    a = np.arange(512, dtype=np.float32).reshape(8, 8, 8)
    i = np.array([3, 1, 0, 7], np.int32)
    want = jax.jit(lambda x, i: x[i, ..., 2:6])(
        jax.device_put(a, jax.sharding.NamedSharding(rm, jax.P(None, "x"))), i)
    got = jaxlite.jit(lambda x, i: x[i, ..., 2:6])(
        jaxlite.device_put(a, NamedSharding(lm, P(None, "x"))), i)
    np.testing.assert_array_equal(np.asarray(want), a[i, ..., 2:6])
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_jit_closing_over_a_sharded_array_reduces_it(rjax8):
    jax = rjax8
    lm, rm = _auto_meshes(jax)
    a, b = _rand((8, 8)), _rand((8, 8), 1)
    rb = jax.device_put(b, jax.sharding.NamedSharding(rm, jax.P("y", None)))
    lb = jaxlite.device_put(b, NamedSharding(lm, P("y", None)))
    ra = jax.device_put(a, jax.sharding.NamedSharding(rm, jax.P("x", "y")))
    la = jaxlite.device_put(a, NamedSharding(lm, P("x", "y")))
    want = jax.jit(lambda x: x + rb.sum(0))(ra)
    got = jaxlite.jit(lambda x: x + lb.sum(0))(la)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def _lowered_pair(jax):
    lm, rm = _auto_meshes(jax)
    a, b = _rand((8, 8)), _rand((8, 8), 1)
    la = jaxlite.device_put(a, NamedSharding(lm, P("x", "y")))
    lb = jaxlite.device_put(b, NamedSharding(lm, P(None, "x")))
    ra = jax.device_put(a, jax.sharding.NamedSharding(rm, jax.P("x", "y")))
    rb = jax.device_put(b, jax.sharding.NamedSharding(rm, jax.P(None, "x")))
    lc = jaxlite.jit(lambda x, y: x @ y).lower(la, lb).compile()
    rc = jax.jit(lambda x, y: x @ y).lower(ra, rb).compile()
    return (a, b), (la, lb, lc), (ra, rb, rc)


def test_compiled_called_with_other_shardings_raises(rjax8):
    _, (la, lb, lc), (ra, rb, rc) = _lowered_pair(rjax8)
    with pytest.raises(ValueError, match="compiled for input shardings"):
        rc(rb, ra)
    with pytest.raises(ValueError, match="compiled for input shardings"):
        lc(lb, la)


def test_compiled_called_with_host_arguments_keeps_its_shardings(rjax8):
    from _oracle import by_id
    (a, b), (_, _, lc), (_, _, rc) = _lowered_pair(rjax8)
    want, got = rc(a, b), lc(a, b)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    assert by_id(got.sharding, got.shape) == by_id(want.sharding, want.shape)


@pytest.mark.parametrize("case", ["bfloat16-sum", "float16-sum", "bfloat16-dot"])
def test_narrow_float_sum_over_sharded_dimension_matches_jax(rjax8, case):
    jax = rjax8
    lm, rm = _auto_meshes(jax)
    dt, op = case.split("-")
    a, b = _rand((64, 8), 3), _rand((64, 8), 4)

    def f(np_):
        t = getattr(np_, dt)
        if op == "sum":
            return lambda x, y: x.astype(t).sum(0)
        return lambda x, y: x.T.astype(t) @ y.astype(t)
    spec = P(("x", "y"))
    one = jax.jit(f(jax.numpy))(a, b)
    want = jax.jit(f(jax.numpy))(*[jax.device_put(v, jax.sharding.NamedSharding(
        rm, jax.P(("x", "y")))) for v in (a, b)])
    np.testing.assert_array_equal(np.asarray(want, np.float32), np.asarray(one, np.float32))
    got = jaxlite.jit(f(jnp))(*[jaxlite.device_put(v, NamedSharding(lm, spec))
                                for v in (a, b)])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))


@pytest.mark.parametrize("where", ["sharded", "one_device"])
def test_donated_unused_argument_stays_alive_as_jax(rjax8, where):
    jax = rjax8
    a, b = _rand((8, 8)), _rand((8, 8), 1)

    def run(lib):
        if where == "sharded":
            m = lib.make_mesh((2, 4), ("x", "y"),
                              axis_types=(lib.sharding.AxisType.Auto,) * 2)
            put = [lib.device_put(v, lib.sharding.NamedSharding(m, lib.sharding.PartitionSpec(
                "x"))) for v in (a, b)]
        else:
            put = [lib.device_put(v, lib.devices()[0]) for v in (a, b)]
        lib.jit(lambda x, y: x * 2, donate_argnums=1)(*put)
        kept = lib.jit(lambda x, y: x * 2, donate_argnums=1, keep_unused=True)
        put2 = [lib.device_put(v, put[0].sharding) for v in (a, b)]
        kept(*put2)
        return put[1].is_deleted(), put2[1].is_deleted()
    assert run(jax) == (False, True)
    assert run(jaxlite) == run(jax)
