"""jaxlite.scipy.stats.gaussian_kde against real JAX 0.10.2's: the constructor (bandwidth
rules, weights, promotion), the pytree leaves and treedef, every method's values, dtypes
and shapes (1-d and d-dimensional data, weights), resampling with the same key, errors
for what JAX does not support, and jit / vmap / grad."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
import jaxlite.random as jrandom
import jaxlite.scipy.stats as jst

from _tiers import half_slow
from oracle import assert_like_jax

D1 = np.array([0.1, 0.5, 1.3, 2.2, -0.4, 0.9, 1.7], np.float32)
D2 = np.random.default_rng(0).normal(size=(2, 9)).astype(np.float32)
D3 = np.random.default_rng(1).normal(size=(3, 11)).astype(np.float32)
W1 = np.arange(1, 8).astype(np.float32)
W2 = np.random.default_rng(2).uniform(0.5, 2.0, 9).astype(np.float32)
FIELDS = ("neff", "dataset", "weights", "covariance", "inv_cov")


@pytest.fixture(scope="module")
def rst(rjax):
    import jax.scipy.stats as rst
    return rst


def _same_kde(got, want, rtol=2e-5, atol=1e-6):
    for f in FIELDS:
        assert_like_jax(getattr(got, f), getattr(want, f), rtol=rtol, atol=atol)
    assert (got.d, got.n) == (want.d, want.n)


def test_signature_and_methods_match_jax(rst):
    mine, theirs = jst.gaussian_kde, rst.gaussian_kde
    assert list(inspect.signature(mine).parameters) == \
        list(inspect.signature(theirs).parameters)
    public = {m for m in dir(theirs) if not m.startswith("_")}
    assert public <= set(dir(mine)), public - set(dir(mine))
    for m in public:
        if callable(getattr(theirs, m)) and m != "tree_unflatten":
            assert list(inspect.signature(getattr(mine, m)).parameters) == \
                list(inspect.signature(getattr(theirs, m)).parameters), m
    assert callable(mine(D1))


CONSTRUCT = {
    "1d": (D1, {}), "2d": (D2, {}), "3d": (D3, {}),
    "ints": (np.array([1, 2, 3, 5, 8]), {}),
    "float64_input": (D1.astype(np.float64), {}),
    "weights": (D1, dict(weights=W1)), "int_weights": (D1, dict(weights=np.arange(1, 8))),
    "weights_2d": (D2, dict(weights=W2)),
    "silverman": (D2, dict(bw_method="silverman")), "scott": (D1, dict(bw_method="scott")),
    "scalar_bw": (D1, dict(bw_method=0.5)), "array_bw": (D2, dict(bw_method=np.float32(0.3))),
    "one_row": (D1[None, :], {}), "two_points": (np.array([0.0, 1.0], np.float32), {}),
}


@pytest.mark.parametrize("name", half_slow(sorted(CONSTRUCT)))
def test_constructor_like_jax(rst, rjax, name):
    data, kw = CONSTRUCT[name]
    got, want = jst.gaussian_kde(data, **kw), rst.gaussian_kde(data, **kw)
    _same_kde(got, want)
    assert jaxlite.tree_util.tree_structure(got).num_leaves == 5
    for g, w in zip(jaxlite.tree_util.tree_leaves(got), rjax.tree_util.tree_leaves(want)):
        assert_like_jax(g, w, rtol=2e-5, atol=1e-6)


def test_callable_bandwidth_sees_the_estimator(rst):
    seen = []

    def bw(kde):
        seen.append((kde.d, kde.n, float(kde.neff)))
        return 0.25 * kde.neff ** 0.1
    got, want = jst.gaussian_kde(D2, bw_method=bw), rst.gaussian_kde(D2, bw_method=bw)
    _same_kde(got, want)
    assert seen[0][:2] == seen[1][:2] == (2, 9)
    assert seen[0][2] == pytest.approx(seen[1][2], rel=1e-6)


def test_constructor_x64(rst, x64):
    for data, kw, tol in [(D2.astype(np.float64), {}, 1e-12),
                          (D1, dict(weights=W1.astype(np.float64)), 1e-12),   # -> float64
                          (D1, {}, 2e-6)]:                                    # float32
        _same_kde(jst.gaussian_kde(data, **kw), rst.gaussian_kde(data, **kw), rtol=tol,
                  atol=tol / 100)


def test_constructor_errors(rst):
    cases = [
        ((np.array([1.0]),), {}, ValueError),
        ((np.array([1j, 2.0]),), {}, NotImplementedError),
        (([1.0, 2.0, 3.0],), {}, TypeError),
        ((D1,), dict(weights=np.ones((1, 7))), ValueError),
        ((D1,), dict(weights=np.ones(4)), ValueError),
        ((D1,), dict(weights=[1.0] * 7), TypeError),
        ((D1,), dict(bw_method="foo"), ValueError),
    ]
    for args, kw, err in cases:
        with pytest.raises(err):
            rst.gaussian_kde(*args, **kw)
        with pytest.raises(err):
            jst.gaussian_kde(*args, **kw)


def test_immutable_and_unsupported(rst):
    for mod in (jst, rst):
        kde = mod.gaussian_kde(D1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            kde.neff = 3.0
        with pytest.raises(NotImplementedError):
            kde.set_bandwidth("silverman")
        with pytest.raises(NotImplementedError):
            kde.integrate_box([0.0], [1.0])
        with pytest.raises(AttributeError):
            kde.factor          # JAX keeps no factor attribute
    assert repr(jst.gaussian_kde(D1)).startswith("gaussian_kde(neff=")


POINTS = {
    "1d_vector": (D1, None, np.array([-2.0, 0.0, 0.7, 1.0, 3.0, 60.0], np.float32)),
    "1d_scalar": (D1, None, np.float32(0.5)),
    "1d_pyfloat": (D1, None, 0.5),
    "1d_row": (D1, None, np.zeros((1, 3), np.float32)),
    "1d_ints": (D1, None, np.array([0, 1, 2])),
    "1d_weights": (D1, W1, np.linspace(-1, 3, 5).astype(np.float32)),
    "2d_grid": (D2, None, np.random.default_rng(5).normal(size=(2, 4)).astype(np.float32)),
    "2d_one_point": (D2, None, np.array([0.1, 0.2], np.float32)),
    "2d_weights": (D2, W2, np.random.default_rng(6).normal(size=(2, 3)).astype(np.float32)),
    "3d": (D3, None, np.random.default_rng(7).normal(size=(3, 5)).astype(np.float32)),
    "empty": (D2, None, np.zeros((2, 0), np.float32)),
}


@pytest.mark.parametrize("name", half_slow(sorted(POINTS)))
def test_evaluate_logpdf_like_jax(rst, name):
    data, w, pts = POINTS[name]
    got, want = jst.gaussian_kde(data, weights=w), rst.gaussian_kde(data, weights=w)
    assert_like_jax(got.evaluate(pts), want.evaluate(pts), rtol=2e-5, atol=1e-7)
    assert_like_jax(got(pts), want(pts), rtol=2e-5, atol=1e-7)
    assert_like_jax(got.pdf(pts), want.pdf(pts), rtol=2e-5, atol=1e-7)
    assert_like_jax(got.logpdf(pts), want.logpdf(pts), rtol=2e-5, atol=1e-5)


def test_logpdf_far_tail_is_finite(rst):
    got = jst.gaussian_kde(D1).logpdf(np.array([80.0, -200.0], np.float32))
    want = rst.gaussian_kde(D1).logpdf(np.array([80.0, -200.0], np.float32))
    assert np.isfinite(np.asarray(got)).all()
    assert_like_jax(got, want, rtol=2e-5)


def test_evaluate_x64(rst, x64):
    got, want = jst.gaussian_kde(D2), rst.gaussian_kde(D2)     # float32 data
    pts = np.random.default_rng(5).normal(size=(2, 4))           # float64 points
    assert_like_jax(got.evaluate(pts), want.evaluate(pts), rtol=2e-6, atol=1e-8)
    assert_like_jax(got.logpdf(pts), want.logpdf(pts), rtol=2e-6, atol=1e-7)


def test_points_errors(rst):
    for mod in (jst, rst):
        k2 = mod.gaussian_kde(D2)
        with pytest.raises(ValueError, match="dimension"):
            k2.evaluate(np.zeros((3, 4), np.float32))
        with pytest.raises(TypeError):
            k2.evaluate([[0.0], [1.0]])
        with pytest.raises(TypeError):
            k2.logpdf([[0.0], [1.0]])
        with pytest.raises(NotImplementedError):
            k2.evaluate(np.zeros((2, 2), np.complex64))


def test_integrals_like_jax(rst):
    k1, r1 = jst.gaussian_kde(D1, weights=W1), rst.gaussian_kde(D1, weights=W1)
    k2, r2 = jst.gaussian_kde(D2), rst.gaussian_kde(D2)
    k3, r3 = jst.gaussian_kde(D3), rst.gaussian_kde(D3)
    tol = dict(rtol=2e-5, atol=1e-7)
    for mean, cov in [(0.5, 2.0), (np.float32(-1.0), np.float32(0.3)), (np.array([0.2]),
                                                                      np.array([[1.5]]))]:
        assert_like_jax(k1.integrate_gaussian(mean, cov), r1.integrate_gaussian(mean, cov),
                        **tol)
    cov2 = np.array([[1.0, 0.3], [0.3, 0.5]], np.float32)
    assert_like_jax(k2.integrate_gaussian(np.zeros(2, np.float32), cov2),
                    r2.integrate_gaussian(np.zeros(2, np.float32), cov2), **tol)
    assert_like_jax(k3.integrate_gaussian(np.ones((3, 1), np.float32), np.eye(3)),
                    r3.integrate_gaussian(np.ones((3, 1), np.float32), np.eye(3)), **tol)
    for lo, hi in [(-1.0, 1.0), (np.float32(0.5), 0.5), (2.0, -1.0), (-np.inf, np.inf),
                   (0, 1)]:
        assert_like_jax(k1.integrate_box_1d(lo, hi), r1.integrate_box_1d(lo, hi), **tol)
    # integrate_kde: both orders (the smaller estimator is the outer sum), d = 1 and 2
    for a, b, ra, rb in [(k1, jst.gaussian_kde(D1[:3] + 0.2), r1,
                          rst.gaussian_kde(D1[:3] + 0.2))]:
        assert_like_jax(a.integrate_kde(b), ra.integrate_kde(rb), **tol)
        assert_like_jax(b.integrate_kde(a), rb.integrate_kde(ra), **tol)
    other, rother = jst.gaussian_kde(D2[:, :5] + 0.1, weights=W2[:5]), \
        rst.gaussian_kde(D2[:, :5] + 0.1, weights=W2[:5])
    assert_like_jax(k2.integrate_kde(other), r2.integrate_kde(rother), **tol)


def test_integrals_errors(rst):
    for mod in (jst, rst):
        k1, k2 = mod.gaussian_kde(D1), mod.gaussian_kde(D2)
        for call in (lambda: k2.integrate_box_1d(0.0, 1.0),
                     lambda: k1.integrate_box_1d(np.array([0.0, 1.0]), 1.0),
                     lambda: k1.integrate_box_1d(0.0, np.ones(1)),
                     lambda: k2.integrate_gaussian(np.zeros(3), np.eye(2)),
                     lambda: k2.integrate_gaussian(np.zeros(2), np.eye(3)),
                     lambda: k2.integrate_kde(k1)):
            with pytest.raises(ValueError):
                call()


@pytest.mark.parametrize("data, w, shape", half_slow([
    (D1, None, ()), (D1, W1, (4,)), (D2, W2, (3,)), (D2, None, (2, 2)), (D3, None, (5,)),
    (D1, None, (0,)),
]))
def test_resample_same_draws_as_jax(rst, rjax, data, w, shape):
    got = jst.gaussian_kde(data, weights=w).resample(jrandom.key(3), shape)
    want = rst.gaussian_kde(data, weights=w).resample(rjax.random.key(3), shape)
    assert_like_jax(got, want, rtol=2e-5, atol=2e-6)


def test_resample_incompatible_shape_like_jax(rst, rjax):
    # JAX reverses every axis of the noise: (d,) + (2, 3) data against (d, 3, 2) noise
    with pytest.raises(TypeError):
        rst.gaussian_kde(D2).resample(rjax.random.key(1), (2, 3))
    with pytest.raises(TypeError):
        jst.gaussian_kde(D2).resample(jrandom.key(1), (2, 3))


def test_pytree_through_jit_and_vmap(rst, rjax):
    kde, rkde = jst.gaussian_kde(D1, weights=W1), rst.gaussian_kde(D1, weights=W1)
    pts = np.array([0.0, 1.0, 2.5], np.float32)
    leaves = jaxlite.tree_util.tree_leaves(kde)
    rebuilt = jaxlite.tree_util.tree_unflatten(jaxlite.tree_util.tree_structure(kde), leaves)
    _same_kde(rebuilt, kde)
    got = jaxlite.jit(lambda k, x: k.evaluate(x))(kde, pts)
    assert_like_jax(got, rjax.jit(lambda k, x: k.evaluate(x))(rkde, pts), rtol=2e-5)
    got = jaxlite.jit(lambda k: k.integrate_box_1d(-1.0, 1.0))(kde)
    assert_like_jax(got, rkde.integrate_box_1d(-1.0, 1.0), rtol=2e-5)
    got = jaxlite.jit(lambda k, key: k.resample(key, (3,)))(kde, jrandom.key(0))
    assert_like_jax(got, rkde.resample(rjax.random.key(0), (3,)), rtol=2e-5, atol=2e-6)
    assert_like_jax(jaxlite.vmap(kde.evaluate)(pts), rjax.vmap(rkde.evaluate)(pts),
                    rtol=2e-5)
    assert_like_jax(jaxlite.vmap(kde.logpdf)(pts), rjax.vmap(rkde.logpdf)(pts), rtol=2e-5)
    # a batch of estimators: vmap over the leaves
    data = np.stack([D1, D1 + 1.0])
    got = jaxlite.vmap(lambda d: jst.gaussian_kde(d).evaluate(0.3))(data)
    want = rjax.vmap(lambda d: rst.gaussian_kde(d).evaluate(0.3))(data)
    assert_like_jax(got, want, rtol=2e-5)


def test_grad_like_jax(rst, rjax):
    kde, rkde = jst.gaussian_kde(D2), rst.gaussian_kde(D2)
    x = np.array([0.1, -0.2], np.float32)
    assert_like_jax(jaxlite.grad(lambda x: kde.evaluate(x)[0])(x),
                    rjax.grad(lambda x: rkde.evaluate(x)[0])(x), rtol=1e-4, atol=1e-6)
    assert_like_jax(jaxlite.grad(lambda x: kde.logpdf(x)[0])(x),
                    rjax.grad(lambda x: rkde.logpdf(x)[0])(x), rtol=1e-4, atol=1e-6)
    # through the constructor: the data and the weights
    got = jaxlite.grad(lambda d: jst.gaussian_kde(d).evaluate(0.3)[0])(D1)
    want = rjax.grad(lambda d: rst.gaussian_kde(d).evaluate(0.3)[0])(D1)
    assert_like_jax(got, want, rtol=1e-4, atol=1e-6)
    got = jaxlite.grad(lambda w: jst.gaussian_kde(D1, weights=w).integrate_box_1d(0., 1.))(W1)
    want = rjax.grad(lambda w: rst.gaussian_kde(D1, weights=w).integrate_box_1d(0., 1.))(W1)
    assert_like_jax(got, want, rtol=1e-4, atol=1e-6)
    got = jaxlite.grad(lambda m: kde.integrate_gaussian(m, np.eye(2)))(x)
    want = rjax.grad(lambda m: rkde.integrate_gaussian(m, np.eye(2)))(x)
    assert_like_jax(got, want, rtol=1e-4, atol=1e-6)


def test_exported_from_stats():
    assert jst.gaussian_kde.__module__.startswith("jaxlite.scipy.stats")
    kde = jst.gaussian_kde(jnp.asarray(D1))
    assert kde.dataset.shape == (1, 7) and kde.weights.shape == (7,)
