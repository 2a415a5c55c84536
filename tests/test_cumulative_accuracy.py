"""Accuracy of float cumulative sums and products (lax.cumsum/cumprod and the jax.numpy
wrappers built on them), on every path: eager, jit through the interpreter backend and jit
through the native CPU backend.  Real JAX is the oracle: the error against a float64
reference must be no larger than JAX's (a sequential float32 sum drifts to ~6e-6 relative
over 70,000 values; JAX's tree-shaped scan stays near 2.6e-7), the dtype and shape are
JAX's, and overflow to inf / underflow to 0 stays put as it does in JAX."""
import jax as ojax
import jax.numpy as ojnp
import ml_dtypes
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.config import config

N = 70_000
F32_HALF_ULP = 2.0 ** -24          # rounding once from float64: relative error bound


def _run(mode, f, *args):
    """``f(*args)`` eagerly, or jitted through the interpreter or the native backend."""
    if mode == "eager":
        return f(*args)
    backend = "interpreter" if mode == "jit-interpreter" else "cpu"
    with config._override("jaxlite_backend", backend), config._override("jaxlite_tiered",
                                                                       False):
        fj = jax.jit(f)
        out = fj(*args)
        if mode == "jit-native":
            text = fj.lower(*args).compile().as_text()
            assert "backend=cpu" in text and "native CPU program" in text, text
        return out


MODES = ["eager", "jit-interpreter", "jit-native"]


def _rel_err(got, ref):
    got = np.asarray(got).astype(np.complex128 if np.iscomplexobj(got) else np.float64)
    return np.max(np.abs(got - ref) / np.abs(ref))


def _same_type(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype, (got.dtype, want.dtype)
    assert np.shape(got) == np.shape(want)


def _equal_with_signs(got, want):
    got, want = np.asarray(got), np.asarray(want)
    _same_type(got, want)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        fin = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[fin]), np.signbit(want[fin]))


@pytest.fixture(scope="module")
def uniform():
    return np.random.default_rng(0).uniform(0, 1, N).astype(np.float32)


# ---- long float32 sums and products --------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_float32_cumsum_70k_as_accurate_as_jax(uniform, mode):
    ref = np.cumsum(uniform.astype(np.float64))
    want = ojnp.cumsum(uniform)
    got = _run(mode, jnp.cumsum, uniform)
    _same_type(got, want)
    jax_err, err = _rel_err(want, ref), _rel_err(got, ref)
    assert jax_err > 1e-7          # the oracle itself is not exact
    assert err <= jax_err and err <= F32_HALF_ULP * 1.01, (err, jax_err)


@pytest.mark.parametrize("mode", MODES)
def test_float32_cumsum_reverse_and_leading_axis(mode):
    x = np.random.default_rng(1).uniform(-1, 2, (20_000, 3)).astype(np.float32)
    ref = np.flip(np.cumsum(np.flip(x.astype(np.float64), 0), 0), 0)
    want = ojax.lax.cumsum(x, axis=0, reverse=True)
    got = _run(mode, lambda v: lax.cumsum(v, axis=0, reverse=True), x)
    _same_type(got, want)
    # sums of mixed signs cancel: bound the error by JAX's absolute error
    jax_err = np.max(np.abs(np.asarray(want, np.float64) - ref))
    err = np.max(np.abs(np.asarray(got, np.float64) - ref))
    assert err <= jax_err, (err, jax_err)
    assert err <= F32_HALF_ULP * np.max(np.abs(ref)) * 1.01


@pytest.mark.parametrize("mode", MODES)
def test_float32_cumprod_near_one(mode):
    rng = np.random.default_rng(2)
    x = (1 + rng.uniform(-1e-3, 1e-3, (3, N // 3))).astype(np.float32)
    ref = np.cumprod(x.astype(np.float64), axis=1)
    want = ojnp.cumprod(x, axis=1)
    got = _run(mode, lambda v: jnp.cumprod(v, axis=1), x)
    _same_type(got, want)
    jax_err, err = _rel_err(want, ref), _rel_err(got, ref)
    assert err <= jax_err and err <= F32_HALF_ULP * 1.01, (err, jax_err)
    # reversed
    refr = np.flip(np.cumprod(np.flip(x.astype(np.float64), 1), 1), 1)
    gotr = _run(mode, lambda v: lax.cumprod(v, axis=1, reverse=True), x)
    assert _rel_err(gotr, refr) <= min(_rel_err(ojax.lax.cumprod(x, 1, reverse=True), refr),
                                       F32_HALF_ULP * 1.01)


@pytest.mark.parametrize("mode", MODES)
def test_complex64_cumsum_and_cumprod(mode):
    rng = np.random.default_rng(3)
    z = (rng.uniform(0, 1, N) + 1j * rng.uniform(0, 1, N)).astype(np.complex64)
    ref = np.cumsum(z.astype(np.complex128))
    want, got = ojnp.cumsum(z), _run(mode, jnp.cumsum, z)
    _same_type(got, want)
    assert _rel_err(got, ref) <= min(_rel_err(want, ref), 2e-7)
    w = np.exp(1j * rng.uniform(-1e-2, 1e-2, 20_000)).astype(np.complex64)   # |w| ~ 1
    refp = np.cumprod(w.astype(np.complex128))
    wantp, gotp = ojnp.cumprod(w), _run(mode, jnp.cumprod, w)
    _same_type(gotp, wantp)
    assert _rel_err(gotp, refp) <= min(_rel_err(wantp, refp), 2e-7)


@pytest.mark.parametrize("dt, half_ulp", [(np.float16, 2.0 ** -11),
                                          (ml_dtypes.bfloat16, 2.0 ** -8)])
@pytest.mark.parametrize("mode", ["eager", "jit-native"])
def test_half_precision_rounds_once(dt, half_ulp, mode):
    x = np.random.default_rng(4).uniform(0, 1, 3000).astype(dt)
    ref = np.cumsum(x.astype(np.float64))
    want, got = ojnp.cumsum(x), _run(mode, jnp.cumsum, x)
    _same_type(got, want)
    assert _rel_err(got, ref) <= min(_rel_err(want, ref), half_ulp * 1.01)
    # integers past the precision: each count rounded once, at least as close as JAX's
    # (JAX's float16 counts are rounded once too; its bfloat16 ones drift: 4096 for 4113)
    ones = np.ones(5000, dt)
    got1, want1 = _run(mode, jnp.cumsum, ones), ojnp.cumsum(ones)
    exact = np.arange(1, 5001, dtype=np.float64)
    _equal_with_signs(got1, exact.astype(dt))
    assert np.all(np.abs(np.asarray(got1, np.float64) - exact) <=
                  np.abs(np.asarray(want1, np.float64) - exact))
    p = (1 + np.random.default_rng(5).uniform(-1e-2, 1e-2, 500)).astype(dt)
    refp = np.cumprod(p.astype(np.float64))
    gotp = _run(mode, jnp.cumprod, p)
    _same_type(gotp, ojnp.cumprod(p))
    assert _rel_err(gotp, refp) <= half_ulp * 1.01


# ---- the wrappers --------------------------------------------------------------------------

def test_numpy_wrappers_accuracy(uniform):
    ref = np.cumsum(uniform.astype(np.float64))
    bound = F32_HALF_ULP * 1.01
    for got, want in [(jnp.cumulative_sum(uniform), ojnp.cumulative_sum(uniform)),
                      (jnp.cumsum(uniform.reshape(700, 100)), ojnp.cumsum(
                          uniform.reshape(700, 100))),
                      (jnp.asarray(uniform).cumsum(), ojnp.asarray(uniform).cumsum())]:
        _same_type(got, want)
        assert _rel_err(got, ref) <= bound
    inc = jnp.cumulative_sum(uniform, include_initial=True)
    _same_type(inc, ojnp.cumulative_sum(uniform, include_initial=True))
    assert float(inc[0]) == 0.0 and _rel_err(inc[1:], ref) <= bound
    # nancumsum: NaNs count as 0
    xn = uniform.copy()
    xn[3::7] = np.nan
    refn = np.cumsum(np.where(np.isnan(xn), 0, xn).astype(np.float64))
    got, want = jnp.nancumsum(xn), ojnp.nancumsum(xn)
    _same_type(got, want)
    assert _rel_err(got, refn) <= min(_rel_err(want, refn), bound)
    # cumprod, nancumprod, cumulative_prod
    p = (1 + np.random.default_rng(6).uniform(-1e-3, 1e-3, N)).astype(np.float32)
    refp = np.cumprod(p.astype(np.float64))
    for got, want in [(jnp.cumprod(p), ojnp.cumprod(p)),
                      (jnp.nancumprod(p), ojnp.nancumprod(p)),
                      (jnp.cumulative_prod(p), ojnp.cumulative_prod(p))]:
        _same_type(got, want)
        assert _rel_err(got, refp) <= bound
    # a float32 input accumulated as requested in float16 is rounded once there
    got, want = jnp.cumsum(uniform[:3000], dtype=np.float16), ojnp.cumsum(uniform[:3000],
                                                                          dtype=np.float16)
    _same_type(got, want)
    ref16 = np.cumsum(uniform[:3000].astype(np.float16).astype(np.float64))
    assert _rel_err(got, ref16) <= min(_rel_err(want, ref16), 2.0 ** -11 * 1.01)


def test_associative_scan_add_is_tree_accurate(uniform):
    ref = np.cumsum(uniform.astype(np.float64))
    got = lax.associative_scan(lax.add, uniform)
    want = ojax.lax.associative_scan(ojax.lax.add, uniform)
    _same_type(got, want)
    assert _rel_err(got, ref) <= max(2 * _rel_err(want, ref), 1e-6)


# ---- transforms ----------------------------------------------------------------------------

def test_grad_is_an_accurate_reversed_cumsum(uniform):
    w = np.random.default_rng(7).uniform(0, 1, N).astype(np.float32)
    # d/dx sum(w * cumsum(x)) = reversed cumsum of w
    g = jax.grad(lambda v: jnp.sum(w * jnp.cumsum(v)))(uniform)
    og = ojax.grad(lambda v: ojnp.sum(w * ojnp.cumsum(v)))(uniform)
    _same_type(g, og)
    ref = np.flip(np.cumsum(np.flip(w.astype(np.float64))))
    assert _rel_err(g, ref) <= min(_rel_err(og, ref), F32_HALF_ULP * 1.01)
    gj = jax.jit(jax.grad(lambda v: jnp.sum(w * jnp.cumsum(v))))(uniform)
    assert _rel_err(gj, ref) <= F32_HALF_ULP * 1.01
    # cumprod's JVP/VJP agree with JAX's
    p = (1 + np.random.default_rng(8).uniform(-0.1, 0.1, 64)).astype(np.float32)
    gp = jax.grad(lambda v: jnp.sum(jnp.cumprod(v)))(p)
    ogp = ojax.grad(lambda v: ojnp.sum(ojnp.cumprod(v)))(p)
    _same_type(gp, ogp)
    np.testing.assert_allclose(np.asarray(gp), np.asarray(ogp), rtol=2e-5)


@pytest.mark.parametrize("mode", ["eager", "jit-native"])
def test_vmap_rows_are_accurate(uniform, mode):
    x = uniform.reshape(7, N // 7)
    f = jax.vmap(lambda r: jnp.cumsum(r))
    got = _run(mode, f, x)
    want = ojax.vmap(ojnp.cumsum)(x)
    _same_type(got, want)
    ref = np.cumsum(x.astype(np.float64), axis=1)
    assert _rel_err(got, ref) <= min(_rel_err(want, ref), F32_HALF_ULP * 1.01)
    gotp = jax.vmap(lambda r: jnp.cumprod(r), in_axes=1, out_axes=1)(x.T[:, :3] * 0 + 1.0001)
    _same_type(gotp, ojax.vmap(ojnp.cumprod, in_axes=1, out_axes=1)(x.T[:, :3] * 0 + 1.0001))


# ---- edges: overflow stays, special values, empty, integers --------------------------------

F32_EDGES = [
    [3e38, 3e38, -3e38, -3e38, 1.0],     # a sum past float32's max stays inf
    [-3e38, -3e38, 3e38, np.inf, 1.0],
    [1e30, 1e10, 1e-10, 0.5],            # a product past the max stays inf
    [1e30, 1e10, 0.0, 2.0],              # then inf * 0 is NaN
    [1e-30, -1e-20, 1e10, 1e10],         # a product that underflows to -0.0 stays there
    [1e-30, 1e-20, np.inf, 2.0],         # and 0 * inf is NaN
    [np.nan, 1.0, 2.0], [1.0, np.inf, -np.inf, 1.0],
    [-0.0, -0.0, 0.0], [-0.0, 1.0], [-0.0], [2.0, -2.0],   # JAX's sums of -0.0 are +0.0
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vals", F32_EDGES)
def test_float32_overflow_underflow_and_specials_match_jax(vals, mode):
    x = np.array(vals, np.float32)
    for name in ("cumsum", "cumprod"):
        got = _run(mode, getattr(jnp, name), x)
        _equal_with_signs(got, getattr(ojnp, name)(x))


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("vals", [[60000, 60000, -60000, 1.0], [1e-4, 1e-4, 1e4, 1e4],
                                  [300, 300, 0.01, 0.01], [3e38, 3e38, -3e38, 1.0],
                                  [1e-30, -1e-20, 1e10, 1e10]])
def test_half_overflow_and_underflow_stay_like_jax(dt, vals):
    with np.errstate(over="ignore"):
        x = np.array(vals, np.float32).astype(dt)
    for name in ("cumsum", "cumprod"):
        got, want = getattr(jnp, name)(x), getattr(ojnp, name)(x)
        if dt == ml_dtypes.bfloat16 and vals == [300, 300, 0.01, 0.01] and name == "cumprod":
            # JAX rounds each bfloat16 product: 904 and 9.0625; once-rounded 900 and 9 are
            # the nearest bfloat16 values of the exact products
            _same_type(got, want)
            exact = np.cumprod(x.astype(np.float64))
            assert np.all(np.abs(np.asarray(got, np.float64) - exact) <=
                          np.abs(np.asarray(want, np.float64) - exact))
            continue
        _equal_with_signs(got, want)


def test_complex64_overflow_stays_like_jax():
    # (not covered: a product whose real part overflows as inf - inf; XLA's complex multiply
    # gives -inf there, NumPy's NaN, with or without this accumulation)
    for vals in ([1e30 + 1e30j, 1e10, 1e-10, 0.5], [1e30 + 1e30j, 1e10j, 1e-20, 1.0],
                 [3e38 + 1j, 3e38, -3e38, 1.0], [np.inf + 1j, 1.0, 2.0]):
        z = np.array(vals, np.complex64)
        for name in ("cumsum", "cumprod"):
            got, want = getattr(jnp, name)(z), getattr(ojnp, name)(z)
            _same_type(got, want)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("mode", MODES)
def test_empty_and_size_one(mode):
    for shape, axis in [((0,), 0), ((3, 0), 1), ((0, 4), 0), ((0, 4), 1), ((1,), 0),
                        ((5, 1), 1), ((1, 5), 0)]:
        for dt in (np.float32, np.float16, np.complex64):
            x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape).astype(dt) + 1
            for name in ("cumsum", "cumprod"):
                for rev in (False, True):
                    f = lambda v: getattr(lax, name)(v, axis=axis, reverse=rev)  # noqa: E731
                    got = _run(mode, f, x)
                    _equal_with_signs(got, getattr(ojax.lax, name)(x, axis=axis, reverse=rev))


@pytest.mark.parametrize("mode", MODES)
def test_integers_and_bools_wrap_exactly_like_jax(mode):
    rng = np.random.default_rng(9)
    cases = [rng.integers(-2**31, 2**31 - 1, 5000, dtype=np.int64).astype(np.int32),
             rng.integers(0, 255, 500).astype(np.uint8),
             rng.integers(-128, 127, 500).astype(np.int8),
             rng.integers(-3, 4, 300).astype(np.int32)]
    for x in cases:
        for name in ("cumsum", "cumprod"):
            _equal_with_signs(_run(mode, getattr(jnp, name), x), getattr(ojnp, name)(x))
            f = lambda v: getattr(lax, name)(v, reverse=True)  # noqa: E731
            _equal_with_signs(_run(mode, f, x), getattr(ojax.lax, name)(x, reverse=True))
    b = rng.integers(0, 2, 1000).astype(bool)
    _equal_with_signs(_run(mode, jnp.cumsum, b), ojnp.cumsum(b))
    _equal_with_signs(_run(mode, jnp.cumprod, b), ojnp.cumprod(b))


def test_cummax_cummin_unchanged(uniform):
    for name in ("cummax", "cummin"):
        _equal_with_signs(getattr(lax, name)(uniform), getattr(ojax.lax, name)(uniform))
