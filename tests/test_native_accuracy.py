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
from jaxlite.backends import _cache
from jaxlite.backends.cpu import PARALLEL_MIN_ELEMENTS


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
