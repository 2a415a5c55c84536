"""jaxlite.numpy and jaxlite.nn at their edges, each case against real JAX 0.10: huge Python
ints in nn functions, diagflat's weak type, a boolean times a float, atan2's promotion,
out-of-range axes in reductions, quantiles of empty arrays and reshape of NumPy arrays
(value, dtype, shape, weak type, or the exception type JAX raises)."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import nn

from oracle import assert_like_jax


def _base(exc):
    """The builtin exception class ``exc`` derives from first (JAX raises subclasses)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def _call(fn, *args, **kwargs):
    try:
        return True, fn(*args, **kwargs)
    except Exception as e:      # noqa: BLE001 - compared with what JAX raised
        return False, e


def _check(got_fn, want_fn, *, exact=True):
    """jaxlite's ``got_fn()`` does what JAX's ``want_fn()`` does: the same value, dtype,
    shape and weak type, or an exception of the same builtin type."""
    wok, want = _call(want_fn)
    gok, got = _call(got_fn)
    if not wok:
        assert not gok, f"jaxlite returned {got!r}; JAX raised {want!r}"
        assert _base(got) is _base(want), f"jaxlite raised {got!r}; JAX raised {want!r}"
        return
    assert gok, f"jaxlite raised {got!r}; JAX returned {want!r}"
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w, exact)
    else:
        _same(got, want, exact)


def _same(got, want, exact):
    assert_like_jax(got, want)
    if exact:   # signs of zeros and NaN payload positions too
        g, w = np.asarray(got), np.asarray(want)
        if g.dtype.kind in "fc":
            for part in ((np.real, np.imag) if g.dtype.kind == "c" else (np.real,)):
                gp, wp = part(g).astype(np.float64), part(w).astype(np.float64)
                np.testing.assert_array_equal(np.isnan(gp), np.isnan(wp))
                np.testing.assert_array_equal(np.signbit(gp), np.signbit(wp))


# ---- nn: Python ints beyond the default int ---------------------------------------------

@pytest.mark.parametrize("x", [2**40, -2**40, 2**70, 2**200, 2**1100, 3])
@pytest.mark.parametrize("name,kwargs", [("gelu", {}), ("gelu", {"approximate": False}),
                                         ("logsumexp", {}), ("softmax", {}),
                                         ("sigmoid", {})])
def test_nn_python_big_int(rjax, name, kwargs, x):
    # gelu and logsumexp convert a Python int straight to the float dtype (2**40 works with
    # x64 off, 2**1100 overflows float); JAX's jitted ones (softmax, sigmoid) raise
    # OverflowError for anything past the default int
    _check(lambda: getattr(nn, name)(x, **kwargs),
           lambda: getattr(rjax.nn, name)(x, **kwargs))


def test_nn_python_big_int_x64(rjax, x64):
    _check(lambda: nn.gelu(2**70), lambda: rjax.nn.gelu(2**70))
    _check(lambda: nn.gelu(-2**40), lambda: rjax.nn.gelu(-2**40))
    _check(lambda: nn.logsumexp(np.array([1, 2], np.int8), b=2**70),
           lambda: rjax.nn.logsumexp(np.array([1, 2], np.int8), b=2**70))


def test_logsumexp_big_int_weight(rjax):
    a = np.array([1, 2], np.int8)
    _check(lambda: nn.logsumexp(a, b=2**40), lambda: rjax.nn.logsumexp(a, b=2**40))
    _check(lambda: nn.logsumexp(3, b=2**40), lambda: rjax.nn.logsumexp(3, b=2**40))


# ---- diagflat ---------------------------------------------------------------------------

@pytest.mark.parametrize("v", [3, -2, 2.5, 1j, True, np.float32(2)])
@pytest.mark.parametrize("k", [0, 1])
def test_diagflat_of_scalar_is_not_weak(rjnp, v, k):
    _check(lambda: jnp.diagflat(v, k), lambda: rjnp.diagflat(v, k))


def test_diagflat_of_weak_array_and_diag_keeps_weak(rjnp):
    _check(lambda: jnp.diagflat(jnp.asarray(2.5)), lambda: rjnp.diagflat(rjnp.asarray(2.5)))
    _check(lambda: jnp.diagflat(jnp.full((2,), 2.5), -1),
           lambda: rjnp.diagflat(rjnp.full((2,), 2.5), -1))
    # diag keeps a weak vector weak
    _check(lambda: jnp.diag(jnp.full((2,), 2.5)), lambda: rjnp.diag(rjnp.full((2,), 2.5)))


def test_diag_offset_x64(rjnp, x64):
    v = np.array([1.0, 2.0])
    _check(lambda: jnp.diag(v, 1), lambda: rjnp.diag(v, 1))
    _check(lambda: jnp.diagflat(2, -1), lambda: rjnp.diagflat(2, -1))


# ---- multiply with a boolean operand ------------------------------------------------------

_B = np.array([True, False, False, True])
_SPECIAL = [-2.5, -2.5, np.nan, -np.inf]


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16", "complex64", "int32"])
def test_multiply_bool_by_number(rjnp, dtype):
    # XLA turns convert(b) * y into a select: False * -2.5 is +0.0, False * nan is 0,
    # True * (-inf+0j) keeps its zero imaginary part; bfloat16 multiplies (IEEE)
    y = np.array(_SPECIAL if dtype != "int32" else [-2, -2, -3, -1]).astype(
        jaxlite.dtypes.canonicalize_dtype(dtype) if dtype == "bfloat16" else dtype)
    _check(lambda: jnp.multiply(_B, y), lambda: rjnp.multiply(_B, y))
    _check(lambda: jnp.multiply(y, _B), lambda: rjnp.multiply(y, _B))
    _check(lambda: jnp.asarray(y) * jnp.asarray(_B), lambda: rjnp.asarray(y) * rjnp.asarray(_B))


def test_multiply_bool_broadcast_and_scalars(rjax, rjnp):
    y = np.array(_SPECIAL, np.float32)
    c = np.array([complex(-np.inf, 1), complex(np.nan, 0), complex(-1, -np.inf), 0],
                 np.complex64)
    cases = [
        (_B[:, None], y[None, :]),              # the boolean is broadcast: IEEE product
        (_B, np.stack([y, y])),                 # rank promotion: IEEE product
        (False, y), (np.bool_(False), y),       # a scalar boolean is broadcast: IEEE
        (False, -2.5), (True, float("-inf")),   # two scalars: select
        (_B, float("nan")), (_B, -2.5),         # weak float result, select
        (np.bool_(False), np.float32(-2.5)), (_B, c),
    ]
    for a, b in cases:
        _check(lambda: jnp.multiply(a, b), lambda: rjnp.multiply(a, b))
    _check(lambda: jnp.asarray(np.float32(-2.5)) * False,
           lambda: rjnp.asarray(np.float32(-2.5)) * False)


def test_multiply_bool_under_transformations(rjax, rjnp):
    y = np.array([-1, -1, np.nan, 2], np.float32)
    _check(lambda: jaxlite.jit(jnp.multiply)(_B, y), lambda: rjax.jit(rjnp.multiply)(_B, y))
    _check(lambda: jaxlite.vmap(jnp.multiply)(_B, y), lambda: rjax.vmap(rjnp.multiply)(_B, y))
    _check(lambda: jaxlite.grad(lambda v: jnp.multiply(_B, v).sum())(y),
           lambda: rjax.grad(lambda v: rjnp.multiply(_B, v).sum())(y))


# ---- atan2: promote first, then to float ----------------------------------------------

_U8 = np.array([1, 2, 3], np.uint8)


@pytest.mark.parametrize("name", ["atan2", "arctan2", "add", "subtract", "multiply",
                                  "true_divide", "hypot", "power", "bitwise_xor",
                                  "maximum", "logaddexp", "copysign", "fmod", "nextafter",
                                  "ldexp", "heaviside", "float_power"])
def test_binary_uint8_with_out_of_range_python_int(rjnp, name):
    # JAX's atan2 promotes both operands (300 wraps to uint8 44) before arctan2 goes to
    # float; arctan2 itself converts 300 straight to float
    for args in ((_U8, 300), (300, _U8)):
        _check(lambda: getattr(jnp, name)(*args), lambda: getattr(rjnp, name)(*args),
               exact=False)


def test_atan2_other_promotions(rjnp):
    i8 = np.array([1, -2, 3], np.int8)
    for args in ((i8, 200), (i8, 2.5), (2, 3), (True, np.float32(2)),
                 (i8, np.array([1, 2, 3], np.int16))):
        _check(lambda: jnp.atan2(*args), lambda: rjnp.atan2(*args), exact=False)


# ---- reductions: out-of-range axes ------------------------------------------------------

_X = np.arange(6, dtype=np.float32).reshape(2, 3)
_AXES = [2, -3, (0, 2), (2,), (0, 0, 5), (5, 0, 0), (0, 0, -1), (0, 0), np.int64(2),
         [0, 2], 2.0, (0, 2.0)]


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin", "mean",
                                  "std", "var", "nanmean", "nanvar", "nanstd", "average",
                                  "sum", "max"])
def test_reduction_bad_axis_error_type(rjnp, name):
    # IndexError where JAX indexes the shape with the axis first (argmax/argmin, and
    # mean/var/std counting their elements without a mask), ValueError elsewhere
    for axis in _AXES:
        _check(lambda: getattr(jnp, name)(_X, axis=axis),
               lambda: getattr(rjnp, name)(_X, axis=axis))
    for a in (np.float32(1.5), 1.5, np.zeros((2, 0), np.float32), _X.astype(np.int32),
              _X.astype(bool)):
        _check(lambda: getattr(jnp, name)(a, axis=2), lambda: getattr(rjnp, name)(a, axis=2))
    _check(lambda: getattr(jnp, name)(_X, axis=2, keepdims=True),
           lambda: getattr(rjnp, name)(_X, axis=2, keepdims=True))


@pytest.mark.parametrize("name", ["mean", "var", "std", "nanmean", "nanvar", "nanstd"])
def test_reduction_bad_axis_with_where_or_dtype(rjnp, name):
    mask = np.ones((2, 3), bool)
    f, g = getattr(jnp, name), getattr(rjnp, name)
    _check(lambda: f(_X, axis=2, where=mask), lambda: g(_X, axis=2, where=mask))
    for dt in ("int32", "float32", "float16"):
        _check(lambda: f(_X, axis=2, dtype=dt), lambda: g(_X, axis=2, dtype=dt))
    xc = _X.astype(np.complex64)
    # a real dtype for complex values is refused (ValueError) before the axis is looked at
    _check(lambda: f(xc, axis=2, dtype="float32"), lambda: g(xc, axis=2, dtype="float32"))
    _check(lambda: f(xc, axis=0, dtype="float32"), lambda: g(xc, axis=0, dtype="float32"))


def test_argmax_checks_axis_before_dtype_and_emptiness(rjnp):
    xc = _X.astype(np.complex64)
    e = np.zeros((0, 2), np.float32)
    for f, g, a, axis in ((jnp.argmax, rjnp.argmax, xc, 2), (jnp.argmax, rjnp.argmax, xc, 1),
                          (jnp.argmin, rjnp.argmin, e, 5), (jnp.argmin, rjnp.argmin, e, 0),
                          (jnp.nanargmax, rjnp.nanargmax, e, -3)):
        _check(lambda: f(a, axis=axis), lambda: g(a, axis=axis))


def test_std_integer_dtype_is_refused(rjnp):
    for axis in (0, 2):
        _check(lambda: jnp.std(_X, axis=axis, dtype="int32"),
               lambda: rjnp.std(_X, axis=axis, dtype="int32"))


@pytest.mark.parametrize("axis", [2, -3, (0, 2), 0])
def test_standardize_bad_axis(rjax, axis):
    _check(lambda: nn.standardize(_X, axis=axis), lambda: rjax.nn.standardize(_X, axis=axis))


def test_standardize_scalars_and_given_statistics(rjax):
    _check(lambda: nn.standardize(np.float32(1)), lambda: rjax.nn.standardize(np.float32(1)))
    _check(lambda: nn.standardize(1.5), lambda: rjax.nn.standardize(1.5))
    m, v = np.zeros((2, 1), np.float32), np.ones((2, 1), np.float32)
    _check(lambda: nn.standardize(_X, axis=2, mean=m, variance=v),
           lambda: rjax.nn.standardize(_X, axis=2, mean=m, variance=v))


# ---- quantiles of empty arrays ------------------------------------------------------------

_E1 = np.zeros((0,), np.float32)
_E2 = np.zeros((2, 0), np.float32)
_E3 = np.zeros((0, 0), np.float32)
_E4 = np.zeros((0, 2, 0), np.float32)
_EMPTY_CASES = [
    (_E1, {}), (_E1, {"axis": 0}), (_E1, {"axis": -1}), (_E1, {"keepdims": True}),
    (_E2, {}), (_E2, {"axis": 0}), (_E2, {"axis": 1}), (_E2, {"axis": (0, 1)}),
    (_E2, {"axis": (1,)}), (_E3, {"axis": 0}), (_E3, {"axis": 0, "keepdims": True}),
    (_E3, {}), (_E4, {"axis": (0, 2)}), (_E4, {"axis": (0, 1)}), (_E4, {"axis": 2}),
    (np.zeros((0,), np.int32), {}),
]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_empty(rjnp, name):
    # quantile's gather refuses an empty slice (TypeError); nanquantile indexes instead:
    # IndexError for a full reduction to one value, an empty result when there are no
    # slices at all
    for a, kw in _EMPTY_CASES:
        _check(lambda: getattr(jnp, name)(a, **kw), lambda: getattr(rjnp, name)(a, **kw))


def test_nanquantile_of_empty(rjnp):
    q2 = np.array([0.5, 0.1])
    for a, q, kw in ((_E1, q2, {}), (_E3, q2, {"axis": 0}), (_E3, q2, {}),
                     (_E1, 0.5, {"method": "lower"}), (_E1, 0.5, {"method": "nearest"})):
        _check(lambda: jnp.nanquantile(a, q, **kw), lambda: rjnp.nanquantile(a, q, **kw))
    _check(lambda: jnp.nanpercentile(_E1, 50.0), lambda: rjnp.nanpercentile(_E1, 50.0))
    _check(lambda: jaxlite.jit(jnp.nanmedian)(_E1),
           lambda: __import__("jax").jit(rjnp.nanmedian)(_E1))


# ---- reshape of a NumPy array -------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4,), (-1, -1), (4, -1), (-1, 4), (-2, 3), (0, -1), (7,),
                                   (2, 3, 0), (3, -3), (), (3, 2)])
def test_reshape_numpy_array_follows_numpy(rjnp, shape):
    # JAX hands a NumPy array to its own reshape: ValueError for an impossible shape, any
    # negative entry inferred; a jax Array keeps JAX's TypeError
    x = np.arange(6, dtype=np.float32)
    for order in ("C", "F"):
        _check(lambda: jnp.reshape(x, shape, order=order),
               lambda: rjnp.reshape(x, shape, order=order))


@pytest.mark.parametrize("shape", [(4,), (-1, -1), (4, -1), (7,), (3, 2)])
def test_reshape_array_keeps_type_error(rjnp, shape):
    x = np.arange(6, dtype=np.float32)
    _check(lambda: jnp.asarray(x).reshape(shape), lambda: rjnp.asarray(x).reshape(shape))
    _check(lambda: jnp.reshape(jnp.asarray(x), shape),
           lambda: rjnp.reshape(rjnp.asarray(x), shape))


def test_reshape_empty_numpy_array(rjnp):
    z = np.zeros((0, 3), np.float32)
    for shape in ((-1,), (0, -1), (-1, 0), (5, -1), (-1, 2)):
        _check(lambda: jnp.reshape(z, shape), lambda: rjnp.reshape(z, shape))


# ---- complex max/min: XLA's order of reduction --------------------------------------------

def _complex_sample(shape, seed, dtype=np.complex64):
    """Small integers (many ties, signed zeros) with NaN real and imaginary parts."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    re = rng.integers(-2, 3, n).astype(float)
    im = rng.integers(-2, 3, n).astype(float)
    re[rng.random(n) < 0.15] = np.nan
    im[rng.random(n) < 0.08] = np.nan
    re[(re == 0) & (rng.random(n) < 0.5)] = -0.0
    im[(im == 0) & (rng.random(n) < 0.5)] = -0.0
    return (re + 1j * im).astype(dtype).reshape(shape)


def test_complex_max_min_small_cases(rjnp):
    nan, ni = np.nan, -np.inf
    for vals in ([1, nan, 0], [nan, 1, 0], [1, 0, nan], [complex(1, nan), 2, 0],
                 [2, complex(0, nan), 3], [1j, nan, 2j, -1j], [0.0, -0.0], [-0.0, 0.0],
                 [complex(0, 0.0), complex(0, -0.0)], [nan], [complex(ni, -1)],
                 [complex(ni, -1), complex(ni, -2)], [complex(np.inf, 1), complex(np.inf, 2)]):
        a = np.array(vals, np.complex64)
        for name in ("max", "min", "nanmax", "nanmin", "ptp"):
            _check(lambda: getattr(jnp, name)(a), lambda: getattr(rjnp, name)(a))


@pytest.mark.parametrize("shape,axis", [((3, 33), 1), ((65,), None), ((40, 5), None),
                                        ((2, 40, 3), (0, 1))])
def test_complex_max_min_order(rjnp, shape, axis):
    # a slice holding NaN gives what XLA's order gives: a sequential fold, in windows of
    # 32 along reduced dimensions longer than 32 (the padding split evenly), then over the
    # windows' results
    a = _complex_sample(shape, seed=len(shape) * 100 + shape[-1])
    for name in ("max", "min"):
        _check(lambda: getattr(jnp, name)(a, axis=axis), lambda: getattr(rjnp, name)(a, axis=axis))


@pytest.mark.slow
@pytest.mark.parametrize("shape,axis", [((1025,), None), ((33, 70), None), ((5, 40), None),
                                        ((3, 40, 40), (1, 2)), ((50, 3, 2), (0, 2)),
                                        ((100, 100), 0), ((1, 1), None), ((4, 5, 6), (0, 2))])
def test_complex_max_min_order_sweep(rjnp, shape, axis):
    for seed in range(3):
        a = _complex_sample(shape, seed)
        for name in ("max", "min"):
            _check(lambda: getattr(jnp, name)(a, axis=axis),
                   lambda: getattr(rjnp, name)(a, axis=axis))


def test_complex_max_min_where_initial_x64(rjax, rjnp, x64):
    a = _complex_sample((6, 40), seed=5, dtype=np.complex128)
    mask = np.random.default_rng(1).random((6, 40)) < 0.7
    for name in ("max", "min"):
        f, g = getattr(jnp, name), getattr(rjnp, name)
        _check(lambda: f(a, axis=1, keepdims=True), lambda: g(a, axis=1, keepdims=True))
        _check(lambda: f(a, axis=-1, where=mask, initial=-1 + 0j),
               lambda: g(a, axis=-1, where=mask, initial=-1 + 0j))
        _check(lambda: f(a, initial=complex(2, np.nan)), lambda: g(a, initial=complex(2, np.nan)))
        _check(lambda: jaxlite.jit(f)(a), lambda: rjax.jit(g)(a))
    _check(lambda: jnp.ptp(a, axis=0), lambda: rjnp.ptp(a, axis=0))


# ---- mean/var with an integer dtype: computed in that dtype --------------------------------

_XI = np.array([[-3, 1, 200], [5, -4, 100], [120, 7, -1]], np.int32)
_XF = np.array([[-3.7, 1.2, 2.9], [5.5, -4.1, 0.4], [12.5, 7.0, -1.0]], np.float32)
_MASK = np.array([[True, False, True]] * 3)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int8", "bool"])
def test_mean_var_integer_dtype(rjnp, dtype):
    # the sum wraps and divisions truncate in the integer dtype; var's result is then a
    # weakly typed float (NaN where the count minus ddof is not positive), nanvar's is
    # converted back to the dtype; a bool dtype fails in the division (TypeError)
    for a in (_XI, _XF):
        for name, kw in (("mean", {"axis": 0}), ("mean", {}),
                         ("mean", {"axis": 1, "where": _MASK}),
                         ("var", {"axis": 0}), ("var", {"axis": 1, "ddof": 1}),
                         ("var", {"axis": 1, "where": _MASK}),
                         ("var", {"axis": 0, "mean": np.array([[1.7, -2.2, 0.0]])}),
                         ("var", {"axis": 0, "ddof": 3}), ("var", {"keepdims": True}),
                         ("nanvar", {"axis": 0}), ("nanvar", {"axis": 1, "ddof": 3})):
            _check(lambda: getattr(jnp, name)(a, dtype=dtype, **kw),
                   lambda: getattr(rjnp, name)(a, dtype=dtype, **kw))


def test_var_integer_dtype_x64(rjnp, x64):
    _check(lambda: jnp.var(_XI, axis=0, dtype="int16"),
           lambda: rjnp.var(_XI, axis=0, dtype="int16"))
    _check(lambda: jnp.mean(_XI, dtype="int64"), lambda: rjnp.mean(_XI, dtype="int64"))


# ---- quantile: q's dtype ----------------------------------------------------------------------

def test_quantile_q_dtype(rjnp):
    # an integer or bool q is refused (TypeError: JAX promotes only a); the linear
    # interpolation runs in q's dtype and the result has a's inexact dtype
    u8 = np.array([1, 2, 4], np.uint8)
    a32 = np.array([1, 2, 4], np.float32)
    q16 = np.array([0.3], np.float16)
    for name in ("quantile", "nanquantile", "percentile"):
        f, g = getattr(jnp, name), getattr(rjnp, name)
        for a, q in ((u8, 300), (u8, 1), (u8, np.array([1, 0], np.int32)), (u8, True),
                     (a32, q16), (u8, q16), (a32.astype(np.float16), np.float32(0.3)),
                     (a32, 0.3)):
            _check(lambda: f(a, q), lambda: g(a, q))
        for method in ("lower", "nearest", "midpoint"):
            _check(lambda: f(a32, q16, method=method), lambda: g(a32, q16, method=method))


def test_quantile_q_dtype_x64(rjnp, x64):
    a16 = np.array([1, 2, 4], np.float16)
    for q in (0.3, np.array([0.3]), np.float32(0.3)):
        _check(lambda: jnp.quantile(a16, q), lambda: rjnp.quantile(a16, q))
