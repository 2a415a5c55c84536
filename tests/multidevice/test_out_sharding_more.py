"""``out_sharding=`` of the random samplers, jnp.reshape/ravel/repeat/broadcast_to/
bincount/percentile, lax.reshape/broadcast/broadcast_in_dim/broadcasted_iota/reduce_sum,
tensordot and ``.at[...]`` against JAX 0.10.2 on the same 8 CPU devices: values, dtype
and the printed sharding, eagerly and under ``jit``; and every function of jax.numpy,
jax.lax, jax.random and jax.nn that takes ``out_sharding`` takes it in jaxlite too.
"""
from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import jaxlite

H = np.arange(32, dtype=np.float32).reshape(8, 4)

CASES = {
    "normal": lambda L, P, k, xs: L.random.normal(k, (8, 4), out_sharding=P("x")),
    "uniform": lambda L, P, k, xs: L.random.uniform(k, (8, 4), out_sharding=P(None, "x")),
    "bernoulli": lambda L, P, k, xs: L.random.bernoulli(k, 0.3, (8, 4), out_sharding=P("x")),
    "randint": lambda L, P, k, xs: L.random.randint(k, (8,), 0, 10, out_sharding=P("x")),
    "gumbel": lambda L, P, k, xs: L.random.gumbel(k, (8, 4), out_sharding=P("x")),
    "truncated_normal": lambda L, P, k, xs:
        L.random.truncated_normal(k, -1., 1., (8, 4), out_sharding=P("x")),
    "permutation": lambda L, P, k, xs: L.random.permutation(k, 8, out_sharding=P("x")),
    "jnp.reshape": lambda L, P, k, xs: L.numpy.reshape(xs, (4, 8), out_sharding=P("x")),
    "jnp.reshape split": lambda L, P, k, xs:
        L.numpy.reshape(xs, (8, 2, 2), out_sharding=P("x")),
    "jnp.reshape whole": lambda L, P, k, xs: L.numpy.reshape(xs, (32,), out_sharding=P()),
    "jnp.ravel": lambda L, P, k, xs: L.numpy.ravel(xs, out_sharding=P("x")),
    "jnp.repeat": lambda L, P, k, xs: L.numpy.repeat(xs, 2, axis=1, out_sharding=P("x")),
    "jnp.broadcast_to": lambda L, P, k, xs:
        L.numpy.broadcast_to(L.numpy.arange(4.), (8, 4), out_sharding=P("x")),
    "lax.reshape": lambda L, P, k, xs: L.lax.reshape(xs, (4, 8), out_sharding=P(None, "x")),
    "lax.broadcast": lambda L, P, k, xs: L.lax.broadcast(xs, (4,), out_sharding=P("x")),
    "lax.broadcast_in_dim": lambda L, P, k, xs:
        L.lax.broadcast_in_dim(xs[:, 0], (8, 4), (0,), out_sharding=P(None, "x")),
    "lax.broadcasted_iota": lambda L, P, k, xs:
        L.lax.broadcasted_iota(L.numpy.int32, (8, 4), 0, out_sharding=P("x")),
    "lax.reduce_sum": lambda L, P, k, xs: L.lax.reduce_sum(xs, (1,), out_sharding=P("x")),
    # (out_sharding resolves a product sharded twice over one axis, as JAX's rule does)
    "tensordot": lambda L, P, k, xs:
        L.numpy.linalg.tensordot(xs, xs.T, axes=1, out_sharding=P("x")),
    "dot": lambda L, P, k, xs: L.numpy.dot(xs, xs.T, out_sharding=P(None, "x")),
    "einsum": lambda L, P, k, xs: L.numpy.einsum("ij,kj->ik", xs, xs, out_sharding=P("x")),
    "at get": lambda L, P, k, xs:
        xs.at[L.numpy.array([0, 2, 4, 6])].get(out_sharding=P("x")),
    "at set": lambda L, P, k, xs: xs.at[L.numpy.array([1, 3])].set(0., out_sharding=P("x")),
    "at add": lambda L, P, k, xs: xs.at[2].add(1., out_sharding=P(None, "x")),
}


def _run(lib, name, jitted):
    S = lib.sharding
    P = S.PartitionSpec
    m = lib.make_mesh((4,), ("x",), axis_types=(S.AxisType.Explicit,))
    with lib.set_mesh(m):
        k = lib.random.key(0)
        xs = lib.device_put(H, P("x"))
        fn = CASES[name]
        if jitted:
            r = lib.jit(lambda kk, b: fn(lib, P, kk, b))(k, xs)
        else:
            r = fn(lib, P, k, xs)
    return np.asarray(r), r.dtype, repr(r.sharding)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_sharding_like_jax(rjax8, name, jitted):
    got, want = _run(jaxlite, name, jitted), _run(rjax8, name, jitted)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:], (got[1:], want[1:])


def test_out_sharding_outside_set_mesh_errors_as_jax(rjax8):
    for lib in (jaxlite, rjax8):
        S = lib.sharding
        m = lib.make_mesh((4,), ("x",), axis_types=(S.AxisType.Explicit,))
        with pytest.raises(ValueError, match="not under a mesh context"):
            lib.random.normal(lib.random.key(0), (8,), out_sharding=S.PartitionSpec("x"))
        with pytest.raises(ValueError, match="Length of device assignment 1"):
            lib.random.normal(lib.random.key(0), (8,), out_sharding=S.NamedSharding(
                m, S.PartitionSpec("x")))
        with pytest.raises(TypeError):
            lib.lax.broadcasted_iota(lib.numpy.int32, (8,), 0, out_sharding="x")


def test_every_out_sharding_parameter_of_jax_exists():
    jax = pytest.importorskip("jax")
    missing = []
    for mod in ("numpy", "lax", "random", "nn", "numpy.linalg", "numpy.fft"):
        jm = importlib.import_module("jax." + mod)
        lm = importlib.import_module("jaxlite." + mod)
        for name in dir(jm):
            f = getattr(jm, name)
            try:
                has = callable(f) and "out_sharding" in inspect.signature(f).parameters
            except (TypeError, ValueError):
                continue
            if not has:
                continue
            g = getattr(lm, name, None)
            if g is None:
                continue    # a function jaxlite lacks altogether (test_api_names lists them)
            if "out_sharding" not in inspect.signature(g).parameters:
                missing.append(f"{mod}.{name}")
    assert not missing, missing
    del jax
