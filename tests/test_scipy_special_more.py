"""jaxlite.scipy.special's bessel_jn, sph_harm_y and wofz against real JAX 0.10.2: values
(float32 and float64), dtypes, weak types and shapes, edges (0, negative, large, +-inf,
NaN, |m| > n, clipped indices), errors, jit, vmap and grad.  Where JAX's float32
bessel_jn overflows to NaN (small |z|), jaxlite's value is checked against SciPy."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
import jaxlite.scipy.special as jss

from _tiers import half_slow
from oracle import assert_like_jax

INF, NAN = np.inf, np.nan


@pytest.fixture(scope="module")
def js(rjax):
    import jax.scipy.special as js
    return js


def test_signatures_match_jax(js):
    for name in ("bessel_jn", "sph_harm_y", "wofz"):
        got = inspect.signature(getattr(jss, name))
        want = inspect.signature(getattr(js, name))
        assert [(p.name, p.kind, p.default) for p in got.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in want.parameters.values()], name
    assert {"bessel_jn", "sph_harm_y", "wofz"} <= set(jss.__all__)


# ---- bessel_jn ----------------------------------------------------------------------------

def test_bessel_jn_against_jax_where_jax_is_finite(js):
    # float32 JAX is finite once |z| is large enough that the recurrence does not overflow
    z = np.array([[10.0, 12.5, -17.0], [20.0, 30.0, 45.0]], np.float32)
    got, want = jss.bessel_jn(z, v=4), js.bessel_jn(z, v=4)
    assert got.shape == (5, 2, 3)
    assert_like_jax(got, want, rtol=2e-5, atol=2e-6)


def test_bessel_jn_float64_against_jax(js, x64):
    z = np.array([1e-3, 0.1, 0.5, 1.5, 3.7, -2.5, 10.0, 25.0, 30.0])
    got, want = jss.bessel_jn(z, v=6), js.bessel_jn(z, v=6)
    assert_like_jax(got, want, rtol=1e-12, atol=1e-14)
    got, want = jss.bessel_jn(z, v=3, n_iter=120), js.bessel_jn(z, v=3, n_iter=120)
    ok = np.isfinite(np.asarray(want))      # JAX overflows even in float64 for small |z|
    assert ok.sum() > 10
    np.testing.assert_allclose(np.asarray(got)[ok], np.asarray(want)[ok], rtol=1e-12,
                               atol=1e-14)


def test_bessel_jn_float32_small_z_against_scipy():
    # JAX's float32 value is NaN here (its unscaled recurrence overflows): jaxlite rescales
    sp = pytest.importorskip("scipy.special")
    z = np.array([1e-3, 0.01, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, -4.2, 7.0, -9.0, 20.0],
                 np.float32)
    got = jss.bessel_jn(z, v=5)
    want = sp.jv(np.arange(6)[:, None], z.astype(np.float64))
    assert got.dtype == np.float32 and not got.weak_type
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=3e-7)


def test_bessel_jn_edges():
    got = np.asarray(jss.bessel_jn(np.array([0.0, -0.0, INF, -INF, NAN], np.float32), v=3))
    np.testing.assert_array_equal(got[:, :4], [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0],
                                               [0, 0, 0, 0]])
    assert np.isnan(got[:, 4]).all()


@pytest.mark.parametrize("z, kw", half_slow([
    (30.0, dict(v=3)), (np.float32(30.0), dict(v=0)), (np.array(30.0), dict(v=2)),
    (30.0, dict(v=-1)), (30.0, dict(v=60)), (np.zeros((0, 2), np.float32), dict(v=2)),
    (1.0, dict(v=2, n_iter=0)), (1.0, dict(v=2, n_iter=1)), (1.0, dict(v=2, n_iter=2.5)),
    (30, dict(v=1)), ([30.0, 40.0], dict(v=1)), (np.float64(30.0), dict(v=1)),
]))
def test_bessel_jn_shapes_and_dtypes(js, z, kw):
    assert_like_jax(jss.bessel_jn(z, **kw), js.bessel_jn(z, **kw), rtol=2e-5, atol=2e-6)


def test_bessel_jn_errors(js):
    for kw, err in [(dict(v=1.0), TypeError), (dict(v=2, n_iter=-1), IndexError),
                    (dict(v=2, n_iter=-3), TypeError)]:
        with pytest.raises(err):
            js.bessel_jn(1.0, **kw)
        with pytest.raises(err):
            jss.bessel_jn(1.0, **kw)
    with pytest.raises(TypeError):
        js.bessel_jn(1j, v=1)
    with pytest.raises(TypeError, match="complex"):
        jss.bessel_jn(1j, v=1)


def test_bessel_jn_jit_vmap(js):
    z = np.array([12.0, 21.0, 33.0], np.float32)
    f = lambda z: jss.bessel_jn(z, v=3)   # noqa: E731
    eager = f(z)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(f)(z)), np.asarray(eager), rtol=1e-6)
    got = jaxlite.vmap(f)(z)
    want = __import__("jax").vmap(lambda z: js.bessel_jn(z, v=3))(z)
    assert_like_jax(got, want, rtol=2e-5, atol=2e-6)
    with pytest.raises(TypeError):
        jaxlite.jit(lambda v: jss.bessel_jn(1.0, v=v))(2)


def test_bessel_jn_grad(js, rjax, x64):
    for order in (0, 1, 3):
        got = jaxlite.grad(lambda z: jss.bessel_jn(z, v=3)[order])(1.5)
        want = rjax.grad(lambda z: js.bessel_jn(z, v=3)[order])(1.5)
        assert_like_jax(got, want, rtol=1e-10, atol=1e-12)


def test_bessel_jn_grad_float32_is_the_derivative():
    # J_n' = (J_{n-1} - J_{n+1}) / 2 (JAX's float32 gradient is NaN here)
    z = np.float32(2.3)
    j = np.asarray(jss.bessel_jn(z, v=4))
    for order in (1, 2, 3):
        got = jaxlite.grad(lambda z: jss.bessel_jn(z, v=4)[order])(z)
        np.testing.assert_allclose(got, (j[order - 1] - j[order + 1]) / 2, rtol=1e-4)
    g0 = jaxlite.grad(lambda z: jss.bessel_jn(z, v=1)[0])(z)
    np.testing.assert_allclose(g0, -j[1], rtol=1e-4)


# ---- sph_harm_y ---------------------------------------------------------------------------

R = np.random.default_rng(3)
NN = R.integers(0, 7, 24)
MM = np.array([R.integers(-n, n + 1) for n in NN])
TH = R.uniform(0, np.pi, 24).astype(np.float32)
PH = R.uniform(0, 2 * np.pi, 24).astype(np.float32)


def test_sph_harm_y_against_jax(js):
    assert_like_jax(jss.sph_harm_y(NN, MM, TH, PH), js.sph_harm_y(NN, MM, TH, PH),
                    rtol=2e-5, atol=2e-6)


def test_sph_harm_y_float64_against_jax(js, x64):
    th, ph = TH.astype(np.float64), PH.astype(np.float64)
    assert_like_jax(jss.sph_harm_y(NN, MM, th, ph), js.sph_harm_y(NN, MM, th, ph),
                    rtol=1e-12, atol=1e-14)
    # mixed: float32 theta with float64 phi is complex128 too
    assert_like_jax(jss.sph_harm_y(NN, MM, TH, ph), js.sph_harm_y(NN, MM, TH, ph),
                    rtol=2e-6, atol=2e-7)


def test_sph_harm_y_against_scipy():
    sp = pytest.importorskip("scipy.special")
    got = jss.sph_harm_y(NN, MM, TH, PH)
    want = sp.sph_harm_y(NN, MM, TH.astype(np.float64), PH.astype(np.float64))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6)


N6 = np.array([0, 1, 2, 3, 3, 2])
M6 = np.array([0, -1, 2, -3, 4, 1])
T6 = np.array([0.3, 1.0, 2.0, 0.0, np.pi, 1.2], np.float32)
P6 = np.array([0.1, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)


@pytest.mark.parametrize("args, kw", half_slow([
    ((N6, M6, T6, P6), {}),                                   # |m| > n, poles
    ((list(N6), M6, T6, P6), {}),                             # a list n is accepted
    ((N6, M6, T6, P6), dict(n_max=2)),                        # clipped degrees
    ((N6, M6, T6, P6), dict(n_max=5)),
    ((N6, M6, np.float32(0.5), P6), {}),                      # one theta for all
    ((N6, M6, 0.5, P6), {}),
    ((N6, M6, T6[:2], P6), {}),                               # a short theta
    ((N6, M6, T6, np.float32(0.3)), {}),
    ((N6, M6, T6, np.ones((2, 6), np.float32)), {}),
    ((np.array([-1, 2]), np.array([1, 1]), T6[:2], P6[:2]), {}),   # negative n wraps
    ((np.array([0, 0]), np.array([0, 1]), T6[:2], P6[:2]), {}),    # n_max = 0
    ((np.array([1, 2]), np.array([1, 1]), np.array([1, 2]), P6[:2]), {}),
    ((np.array([1, 2]), np.array([1, 1]), T6[:2], np.array([1, 2])), {}),
    ((np.array([1, 2]), np.array([1, -1]), np.array([NAN, INF], np.float32), P6[:2]), {}),
    ((np.array([1, 2]), np.array([1, -2]), T6[:2].astype(np.float16), P6[:2]), {}),
]))
def test_sph_harm_y_edges_like_jax(js, args, kw):
    # a float16 theta keeps the Legendre table in float16 (both round differently there)
    tol = 2e-3 if np.asarray(args[2]).dtype == np.float16 else 2e-5
    assert_like_jax(jss.sph_harm_y(*args, **kw), js.sph_harm_y(*args, **kw), rtol=tol,
                    atol=tol / 10)


def test_sph_harm_y_errors(js, rjax):
    import jax.errors
    cases = [
        (lambda f: f(N6, M6, T6, P6, diff_n=0), NotImplementedError, NotImplementedError),
        (lambda f: f(2, 1, 0.5, 0.3), TypeError, TypeError),
        (lambda f: f(np.array([1.0, 2.0]), np.array([1, 1]), T6[:2], P6[:2]), TypeError,
         TypeError),
        (lambda f: f(np.zeros(0, int), np.zeros(0, int), np.zeros(0), np.zeros(0)),
         ValueError, ValueError),
        (lambda f: f([2], [1], [0.5], [0.3]), TypeError, TypeError),
        (lambda f: f(N6[:2], [1, 1], T6[:2], P6[:2]), TypeError, TypeError),
        (lambda f: f(N6[:2], M6[:2], T6[None, :2], P6[:2]), ValueError, ValueError),
    ]
    for call, ours, theirs in cases:
        with pytest.raises(theirs):
            call(js.sph_harm_y)
        with pytest.raises(ours):
            call(jss.sph_harm_y)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        rjax.jit(js.sph_harm_y)(N6, M6, T6, P6)
    with pytest.raises(jaxlite.errors.ConcretizationTypeError):
        jaxlite.jit(jss.sph_harm_y)(N6, M6, T6, P6)


def test_sph_harm_y_jit_vmap(js, rjax):
    f = jaxlite.jit(jss.sph_harm_y, static_argnames="n_max")
    assert_like_jax(f(N6, M6, T6, P6, n_max=3), js.sph_harm_y(N6, M6, T6, P6, n_max=3),
                    rtol=2e-5, atol=2e-6)
    ths = np.stack([T6, T6 + 0.1])
    got = jaxlite.vmap(lambda t: jss.sph_harm_y(N6, M6, t, P6, n_max=3))(ths)
    want = rjax.vmap(lambda t: js.sph_harm_y(N6, M6, t, P6, n_max=3))(ths)
    assert_like_jax(got, want, rtol=2e-5, atol=2e-6)


def test_sph_harm_y_grad(js, rjax):
    n, m = np.array([0, 1, 2, 3, 4]), np.array([0, -1, 2, 1, -3])
    th = np.array([0.3, 1.0, 2.0, 0.7, 1.4], np.float32)
    ph = np.array([0.1, 2.0, 3.0, 4.0, 5.0], np.float32)
    def mine(t, p):
        y = jss.sph_harm_y(n, m, t, p)
        return jnp.sum(jnp.real(y) + 2 * jnp.imag(y))

    def theirs(t, p):
        y = js.sph_harm_y(n, m, t, p)
        return rjax.numpy.sum(rjax.numpy.real(y) + 2 * rjax.numpy.imag(y))
    got = jaxlite.grad(mine, argnums=(0, 1))(th, ph)
    want = rjax.grad(theirs, argnums=(0, 1))(th, ph)
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=1e-4, atol=1e-5)


# ---- wofz -----------------------------------------------------------------------------------

ZW = np.array([0, 1, -1, 1 + 1j, 1 - 1j, -2 - 3j, 10j, -10j, 30, 1e5j, -30 - 30j, 3 - 20j,
               0.5 + 0.01j, -7 + 2j, 4.5 - 0.5j, 1e-4 - 1e-4j, INF, NAN, -INF, 1j * INF],
              np.complex64)


def test_wofz_against_jax(js):
    assert_like_jax(jss.wofz(ZW), js.wofz(ZW), rtol=2e-6, atol=1e-6)
    grid = (np.linspace(-6, 6, 13)[:, None] + 1j * np.linspace(-3, 6, 10)[None, :])
    grid = grid.astype(np.complex64)
    assert_like_jax(jss.wofz(grid), js.wofz(grid), rtol=2e-5, atol=1e-6)


def test_wofz_float64_against_jax_and_scipy(js, x64):
    z = ZW.astype(np.complex128)
    assert_like_jax(jss.wofz(z), js.wofz(z), rtol=1e-12, atol=1e-13)
    sp = pytest.importorskip("scipy.special")
    zz = np.array([0.3 + 0.2j, 2 + 1j, -1 + 4j, 0.5, 5j], np.complex128)
    np.testing.assert_allclose(np.asarray(jss.wofz(zz)), sp.wofz(zz), rtol=1e-12)


@pytest.mark.parametrize("z", half_slow([1.0, 1j, 2, True, np.float32(0.5),
                                           np.float64(0.5), np.float16(0.5),
                                           np.array([1, 2], np.int32),
                                           np.zeros((2, 0), np.float32)]))
def test_wofz_dtypes(js, z):
    assert_like_jax(jss.wofz(z), js.wofz(z), rtol=2e-6, atol=1e-6)


@pytest.mark.slow
def test_wofz_dtypes_x64(js, x64):
    for z in (1.0, np.float32(0.5), np.complex64(1 + 1j)):
        assert_like_jax(jss.wofz(z), js.wofz(z), rtol=2e-6, atol=1e-6)


def test_wofz_errors(js):
    with pytest.raises(TypeError):
        js.wofz([1.0, 2.0])
    with pytest.raises(TypeError):
        jss.wofz([1.0, 2.0])


def test_wofz_transforms(js, rjax):
    z = ZW[:6]
    np.testing.assert_allclose(np.asarray(jaxlite.jit(jss.wofz)(z)),
                               np.asarray(jss.wofz(z)), rtol=1e-6)
    assert_like_jax(jaxlite.vmap(jss.wofz)(z), rjax.vmap(js.wofz)(z), rtol=2e-6, atol=1e-6)
    got = jaxlite.grad(lambda x: jnp.real(jss.wofz(x)) + 2 * jnp.imag(jss.wofz(x)))(0.7)
    want = rjax.grad(lambda x: rjax.numpy.real(js.wofz(x)) + 2 * rjax.numpy.imag(js.wofz(x)))(0.7)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-6)
    # both half planes (the lower one through the reflection)
    zs = np.array([0.7 + 0.2j, 0.7 - 0.2j, -1.5 + 2j], np.complex64)
    got = jaxlite.vmap(jaxlite.grad(jss.wofz, holomorphic=True))(zs)
    want = rjax.vmap(rjax.grad(js.wofz, holomorphic=True))(zs)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-6)
