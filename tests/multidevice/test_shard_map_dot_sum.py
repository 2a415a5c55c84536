"""A data-parallel training step (bench W9's shape, smaller) under jit(shard_map) over 8
devices, against real JAX: the weight gradients' per-device products and their psum are
one dot_general each after the compiler's batch_dot_sum pass
(compiler/passes/batch_dot_sum.py), and the values agree with JAX's."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
from jaxlite.compiler import optimize

SIZES = (24, 16, 16, 5)
BATCH = 32


def _data(dtype=np.float32):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((a, b)).astype(dtype) * a ** -0.5,
               rng.standard_normal(b).astype(dtype) * 0.1)
              for a, b in zip(SIZES[:-1], SIZES[1:])]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(dtype)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    return params, x, y


def _step(lib, n_dev, mean_loss=True):
    jnp, P = lib.numpy, lib.sharding.PartitionSpec
    mesh = lib.sharding.Mesh(np.array(lib.devices()[:n_dev]), ("batch",))

    def loss_fn(ps, x, y):
        h = x
        for w, b in ps[:-1]:
            h = jnp.tanh(h @ w + b)
        logp = lib.nn.log_softmax(h @ ps[-1][0] + ps[-1][1])
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def local(ps, xb, yb):
        loss, g = lib.value_and_grad(loss_fn)(ps, xb, yb)
        g = lib.lax.pmean(g, "batch")
        new = lib.tree_util.tree_map(lambda p, d: p - 0.01 * d, ps, g)
        return new, g, lib.lax.pmean(loss, "batch")
    return lib.jit(lib.shard_map(local, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                                 out_specs=(P(), P(), P())))


@pytest.mark.parametrize("n_dev", [2, 4, 8])
def test_data_parallel_step_matches_jax(rjax8, n_dev):
    params, x, y = _data()
    want = _step(rjax8, n_dev)(params, x, y)
    got = _step(jaxlite, n_dev)(params, x, y)
    wl = rjax8.tree_util.tree_leaves(want)
    gl = jaxlite.tree_util.tree_leaves(got)
    assert len(wl) == len(gl) == 2 * 2 * 3 + 1
    for w, g in zip(wl, gl):
        w, g = np.asarray(w), np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("n_dev", [2, 4, 8])
def test_weight_gradients_are_one_dot_each(n_dev):
    params, x, y = _data()
    closed = jaxlite.make_jaxpr(_step(jaxlite, n_dev))(params, x, y)
    before, _ = optimize(closed, fusion=False)
    dots = [e for e in before.jaxpr.eqns if e.primitive.name == "dot_general"]
    # 3 forward products, 2 input cotangents (the first layer's is not needed) and 3
    # weight gradients, none batched over the devices any more
    assert len(dots) == 8, before
    for e in dots:
        assert e.params["dimension_numbers"][1] == ((), ()), e
    weight = [e for e in dots if len(e.params["dimension_numbers"][0][0]) == 2]
    assert sorted(e.outvars[0].aval.shape for e in weight) == \
        sorted((a, b) for a, b in zip(SIZES[:-1], SIZES[1:]))
    # the unfolded program (the pipeline without the pass) gives the same values
    from jaxlite.compiler import pipeline
    from jaxlite.ir import eval_jaxpr
    leaves = jaxlite.tree_util.tree_leaves((params, x, y))
    folded = eval_jaxpr(before.jaxpr, before.consts, *leaves)
    plain = eval_jaxpr(closed.jaxpr, closed.consts, *leaves)
    assert len(folded) == len(plain)
    for a, b in zip(folded, plain):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
    assert "batch_dot_sum" in [n for n, _ in pipeline.PASSES]


def test_int_and_float64_gradient_sums_match_jax(rjax8):
    # sum over devices of x_d^T y_d, written as psum of a per-device product
    def f(lib, a, b):
        P = lib.sharding.PartitionSpec
        mesh = lib.sharding.Mesh(np.array(lib.devices()[:8]), ("i",))
        return lib.jit(lib.shard_map(lambda a, b: lib.lax.psum(a.T @ b, "i"), mesh=mesh,
                                     in_specs=(P("i"), P("i")), out_specs=P()))(a, b)
    rng = np.random.default_rng(1)
    for dtype in (np.int32, np.float32):
        a = rng.integers(-50, 50, (16, 3)).astype(dtype)
        b = rng.integers(-50, 50, (16, 4)).astype(dtype)
        want, got = np.asarray(f(rjax8, a, b)), np.asarray(f(jaxlite, a, b))
        assert got.dtype == want.dtype and got.shape == want.shape == (3, 4)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, (a.T.astype(np.float64) @ b).astype(dtype))
