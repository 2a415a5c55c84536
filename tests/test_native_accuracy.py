"""Native-backend correctness found by review: parallel kernels with several float32
sin/cos (one flag reduction per prange iteration; a Numba compile error is no corrupt
cache entry), and float32 sum/product reductions accumulated in float64 (as exact as the
interpreter and JAX, and the same value before and after tier-up)."""
import warnings

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import config
from jaxlite.backends.cpu import _cache
from jaxlite.backends.cpu.native import PARALLEL_MIN_ELEMENTS
from oracle import assert_like_jax


@pytest.fixture
def native(tmp_path):
    with config._override("jax_compilation_cache_dir", str(tmp_path / "c")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        yield


def _summary(f, *args):
    text = f.lower(*args).compile().as_text()
    return next(ln for ln in text.splitlines() if ln.startswith("# native CPU program"))


def test_parallel_sin_plus_cos_compiles_natively_without_warning(native):
    f = jax.jit(lambda x: jnp.sin(x) + jnp.cos(x))
    x = np.random.RandomState(0).uniform(-10, 10, (2048, 1024)).astype(np.float32)
    assert x.size >= PARALLEL_MIN_ELEMENTS
    x[3, 5] = 1e30            # beyond the vectorised range reduction: exact rerun
    x[100, 7] = -3e7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = _summary(f, x)
        got = np.asarray(f(x))
    assert "1 native kernel(s)" in s and "0 interpreter fallback(s)" in s, s
    want = np.sin(x) + np.cos(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    for ij in [(3, 5), (100, 7)]:
        assert got[ij] == want[ij]


def test_numba_compile_error_is_not_a_corrupt_cache_entry(tmp_path):
    # a prange body updating its reduction variable twice: Numba's parfor pass raises a
    # plain ValueError while compiling; no cache file exists, so no "corrupt" warning
    import numba
    from numba import prange, types
    src = ("def kern(a0, o0):\n    flag = 0\n    for i0 in prange(4096):\n"
           "        flag += np.int64(a0[i0] > 1)\n        flag += np.int64(a0[i0] > 2)\n"
           "        o0[i0] = a0[i0]\n    return flag")
    glb = {"np": np, "prange": prange}
    exec(compile(src, "<test kernel>", "exec"), glb)
    arr = types.Array(numba.float32, 1, "C")
    before = _cache.stats()["discarded"]
    with config._override("jax_compilation_cache_dir", str(tmp_path / "c")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(Exception) as ei:
                _cache.compile_kernel(src, glb, [arr, arr], True,
                                      dict(error_model="numpy", cache=False),
                                      "twice")
    assert not isinstance(ei.value, RuntimeWarning)
    assert _cache.stats()["discarded"] == before


def _rel(got, want):
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)))


def test_outer_product_sum_is_exact_and_matches_jax(native, rjax, rjnp):
    # 4e8 ones: a single float32 accumulator stalls at 2**24-ish steps (394092864)
    def fn(np_):
        return lambda x, y: (x[:, None] * y[None, :]).sum()
    x = np.ones(20000, np.float32)
    f = jax.jit(fn(jnp))
    assert "1 native kernel(s)" in _summary(f, x, x)
    got = f(x, x)
    assert_like_jax(got, rjax.jit(fn(rjnp))(x, x), rtol=0, atol=0)
    assert float(got) == 4e8


@pytest.mark.parametrize("shape", [(4000, 4000), (3, 1 << 19)])
def test_mean_of_squares_float32_rel_1e6(native, rjax, rjnp, shape):
    a = np.random.RandomState(1).rand(*shape).astype(np.float32)

    def fn(np_):
        return lambda a: np_.mean((a - .5) ** 2)
    got = jax.jit(fn(jnp))(a)
    assert_like_jax(got, rjax.jit(fn(rjnp))(a), rtol=1e-6, atol=0)
    want = np.mean((a.astype(np.float64) - .5) ** 2)
    assert _rel(got, want) < 1e-6


@pytest.mark.parametrize("axis", [0, 1, (0, 2), 2])
def test_axis_sums_accumulate_wide(native, rjax, rjnp, axis):
    # axis 0 / (0, 2): accumulated in an output-shaped float64 scratch array; 1 / 2: a
    # scalar float64 accumulator per output element
    a = np.random.RandomState(2).rand(64, 300, 60).astype(np.float32) + np.float32(1e3)
    f = jax.jit(lambda a: jnp.sum(a * 1.5, axis=axis))
    assert "1 native kernel(s)" in _summary(f, a)
    got = f(a)
    assert_like_jax(got, rjax.jit(lambda a: rjnp.sum(a * 1.5, axis=axis))(a),
                    rtol=1e-6, atol=0)
    want = (a.astype(np.float64) * 1.5).sum(axis)
    assert _rel(got, want) < 1e-6


@pytest.mark.parametrize("axis", [0, 1])
def test_products_accumulate_wide(native, axis):
    a = (np.random.RandomState(3).rand(40, 50).astype(np.float32) * np.float32(0.2) +
         np.float32(0.9))
    got = jax.jit(lambda a: jnp.prod(a + 0.0, axis=axis))(a)
    assert got.dtype == np.float32 and got.shape == (a.shape[1 - axis],)
    assert _rel(got, a.astype(np.float64).prod(axis)) < 1e-6


def test_value_is_the_same_before_and_after_tier_up(tmp_path):
    f = jax.jit(lambda x, y: (x[:, None] * y[None, :]).sum())
    x = np.ones(5000, np.float32)
    with config._override("jax_compilation_cache_dir", str(tmp_path / "c")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", True), \
            config._override("jaxlite_tier_up_calls", 1):
        from jaxlite.backends.cpu import _tiered
        first = float(f(x, x))            # the interpreter
        assert _tiered.wait_all(120)
        later = [float(f(x, x)) for _ in range(2)]
        text = f.lower(x, x).compile().as_text()
    assert "native CPU program" in text
    assert [first] + later == [25e6] * 3
