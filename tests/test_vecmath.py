"""Accuracy of backends/cpu/_vecmath.py: ulps against NumPy's float64 functions rounded to
float32, over random bit patterns (the whole float32 range), a dense grid and special
values; the documented MAX_ULP of each function is what is checked."""
import numpy as np
import pytest
from numba import njit

from jaxlite.backends.cpu import _vecmath as vm

_REF = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "tanh": np.tanh,
        "logistic": lambda x: 1 / (1 + np.exp(-x)), "sin": np.sin, "cos": np.cos}

_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38,
                     1.17549435e-38, 3.4028235e38, -3.4028235e38, 88.72283, 88.72284,
                     -87.33654, -103.27893, -103.97208, -104.0, 1.0, -1.0, 0.5, 2.0,
                     1e-8, -1e-8, 1.2e-4, 9.0, 10.0, -10.0, np.pi, -np.pi, np.pi / 2,
                     np.pi / 4, 65536.0, -65536.0, 1e4, 12345.678], np.float32)


def _args():
    rng = np.random.default_rng(1234)
    bits = rng.integers(0, 2 ** 32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits.view(np.float32), _SPECIAL,
                           np.linspace(-110, 110, 300_001, dtype=np.float32),
                           np.geomspace(1e-38, 1e38, 100_001).astype(np.float32)])


_ARGS = _args()
_APPLY = {}


def _apply(name):
    if name not in _APPLY:
        f = vm.FUNCTIONS[name]

        @njit(error_model="numpy")
        def app(x, out):
            for i in range(x.shape[0]):
                out[i] = f(x[i])
        _APPLY[name] = app
    return _APPLY[name]


def _ordered(a):
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulps(got, want):
    """ulp distance per element (NaN == NaN is 0; NaN vs a number is huge)."""
    d = np.abs(_ordered(got) - _ordered(want))
    gn, wn = np.isnan(got), np.isnan(want)
    d = np.where(gn & wn, 0, d)
    return np.where(gn != wn, 1 << 40, d)


@pytest.mark.parametrize("name", sorted(vm.FUNCTIONS))
def test_max_ulp_over_float32_range(name):
    x = _ARGS
    if name in ("sin", "cos"):
        x = x[~(np.abs(x) > vm.SIN_COS_LIMIT)]      # keeps NaN, drops +-inf and big
        x = np.concatenate([x, np.array([np.inf, -np.inf], np.float32)])
    out = np.empty_like(x)
    _apply(name)(x, out)
    with np.errstate(all="ignore"):
        want = _REF[name](x.astype(np.float64)).astype(np.float32)
    d = ulps(out, want)
    worst = int(np.argmax(d))
    assert d[worst] <= vm.MAX_ULP[name], (name, x[worst], out[worst], want[worst])


@pytest.mark.parametrize("name", ["sin", "tanh", "expm1"])
def test_odd_functions_keep_negative_zero(name):
    x = np.array([-0.0, 0.0], np.float32)
    out = np.empty_like(x)
    _apply(name)(x, out)
    assert np.signbit(out).tolist() == [True, False]


def test_special_values():
    x = np.array([np.inf, -np.inf, 0.0, -1.0, np.nan], np.float32)
    res = {}
    for name in ("exp", "log", "tanh", "logistic", "sin", "cos"):
        out = np.empty_like(x)
        _apply(name)(x, out)
        res[name] = out
    np.testing.assert_array_equal(res["exp"], np.float32([np.inf, 0, 1, np.exp(-1), np.nan]))
    np.testing.assert_array_equal(res["log"], np.float32([np.inf, np.nan, -np.inf, np.nan,
                                                          np.nan]))
    np.testing.assert_array_equal(res["tanh"][:2], [1, -1])
    np.testing.assert_array_equal(res["logistic"][:2], [1, 0])
    assert np.isnan(res["sin"][[0, 1, 4]]).all() and np.isnan(res["cos"][[0, 1, 4]]).all()


def test_trig_out_of_range_flag():
    @njit
    def flags(x, out):
        for i in range(x.shape[0]):
            out[i] = vm.trig_out_of_range(x[i])
    x = np.array([0, 65536, 65537, -1e6, np.inf, np.nan, 3e38], np.float32)
    out = np.empty(x.shape, np.int64)
    flags(x, out)
    assert out.tolist() == [0, 0, 1, 1, 0, 0, 1]
