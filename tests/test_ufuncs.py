"""Elementwise functions of jaxlite.numpy against real JAX: values (edge values included:
inf, -inf, NaN, -0.0, integer extremes, division by zero), dtype, weak type and shape, for
every dtype JAX accepts and for Python-scalar operands; broadcasting; errors; jit; and
property tests.

The oracle is asked twice per case: ``jax.eval_shape`` gives the dtype, weak type and any
error exactly as eager JAX does (without compiling), and JAX run op by op under
``disable_jit`` gives the values (its per-primitive compile cache keeps this file fast).
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp

pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype")

DTYPES = ["bool", "int8", "uint8", "int32", "uint32", "float16", "bfloat16", "float32",
          "complex64"]
_F = [-np.inf, -2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.5, 3.0, np.inf, np.nan]


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def values(dt):
    """Edge values of dtype ``dt`` (a 1-D NumPy array)."""
    d = np_dtype(dt)
    if dt == "bool":
        return np.array([True, False])
    if d.kind == "i":
        i = np.iinfo(d)
        return np.array([i.min, -7, -3, -1, 0, 1, 2, 5, i.max], d)
    if d.kind == "u":
        return np.array([0, 1, 2, 3, 5, 7, 100, np.iinfo(d).max], d)
    if d.kind == "c":   # complex infinities are left out: XLA and NumPy disagree on them
        re = [-2.5, -0.5, 0.0, 0.5, 1.0, 3.0, np.nan]
        im = [0.0, -1.0, 2.0, 0.5, -0.0, 1.0, 0.0]
        return np.array([complex(a, b) for a, b in zip(re, im)], d)
    return np.array(_F, d)


def _tol(dt):
    if dt in (np.float16, ml_dtypes.bfloat16):
        return 1e-2, 1e-2
    return 2e-5, 1e-6


def _np(x):
    return np.asarray(x)


def compare(got, want_struct, want_val, zero_sign=True):
    """jaxlite result ``got`` against JAX's (abstract result and values)."""
    if isinstance(want_struct, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(want_struct)
        for g, s, w in zip(got, want_struct, want_val):
            compare(g, s, w, zero_sign)
        return
    assert isinstance(got, jaxlite.Array), f"not an Array: {type(got)}"
    assert got.shape == want_struct.shape, f"shape {got.shape} != jax {want_struct.shape}"
    assert got.dtype == want_struct.dtype, f"dtype {got.dtype} != jax {want_struct.dtype}"
    assert got.weak_type == want_struct.weak_type, \
        f"weak_type {got.weak_type} != jax {want_struct.weak_type}"
    g, w = _np(got), _np(want_val)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
        return
    rtol, atol = _tol(g.dtype.type)
    wide = np.complex128 if g.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=rtol, atol=atol,
                               equal_nan=True)
    if zero_sign and g.dtype.kind != "c":
        gz = g.astype(np.float64)
        wz = w.astype(np.float64)
        both = (gz == 0) & (wz == 0)
        np.testing.assert_array_equal(np.signbit(gz[both]), np.signbit(wz[both]),
                                      err_msg="sign of zero differs")


def jax_results(rjax, rjnp, calls, module=None):
    """Real JAX's results for many calls at once: ``calls`` maps a key to (name, args).

    Each result is (abstract result, values) or the exception JAX raises.  Names are
    looked up in ``module`` (default: ``jax.numpy``).  The abstract
    result (and any error) comes from tracing the call on concrete operands, exactly as an
    eager call sees them; the values of all calls come from ONE jitted program taking the
    arrays and Python floats as arguments (so XLA compiles once per group and folds no
    constants).
    """
    out, ok, arrays = {}, {}, []
    for key, (name, args, *kw) in calls.items():
        kw = kw[0] if kw else {}
        fn = functools.partial(getattr(module or rjnp, name), **kw)
        jargs = [rjnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        try:
            out[key] = rjax.eval_shape(lambda: fn(*jargs))  # noqa: B023 - called at once
        except Exception as e:  # noqa: BLE001 - the oracle's error is the expectation
            out[key] = e
            continue
        spec = []
        for a in jargs:
            # arrays and Python floats are arguments (a closed-over -0.0 would become 0.0);
            # Python ints stay concrete (static arguments such as round's decimals)
            if isinstance(a, (rjax.Array, float, complex)):
                spec.append((True, len(arrays)))
                arrays.append(a)
            else:
                spec.append((False, a))
        ok[key] = (fn, spec)

    keys = list(ok)

    def program(*arrs):
        return [ok[k][0](*[arrs[s] if is_arr else s for is_arr, s in ok[k][1]]) for k in keys]

    values = dict(zip(keys, rjax.jit(program)(*arrays))) if ok else {}
    return {key: (out[key], values[key]) if key in values else out[key] for key in calls}


def check_against(want, name, args, zero_sign=True, jit=False, kw=None, module=None):
    """jaxlite's ``name(*args, **kw)`` against JAX's result ``want`` (or its exception);
    ``name`` is looked up in ``module`` (default: ``jaxlite.numpy``)."""
    fn = functools.partial(getattr(module or jnp, name), **(kw or {}))
    lite_args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            fn(*lite_args)
        return
    compare(fn(*lite_args), *want, zero_sign=zero_sign)
    if jit:
        compare(jaxlite.jit(fn)(*lite_args), *want, zero_sign=zero_sign)


def check(rjax, rjnp, name, args, zero_sign=True, jit=False):
    want = jax_results(rjax, rjnp, {0: (name, args)})[0]
    check_against(want, name, args, zero_sign, jit)


class _Groups:
    """Oracle results of whole parametrised groups, computed on first use."""

    def __init__(self):
        self._cache = {}

    def get(self, rjax, rjnp, group, make_calls, module=None):
        if group not in self._cache:
            self._cache[group] = jax_results(rjax, rjnp, make_calls(), module)
        return self._cache[group]


GROUPS = _Groups()


UNARY = """negative positive reciprocal logical_not bitwise_not invert bitwise_invert exp exp2
expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh
arctanh asin acos atan asinh acosh atanh deg2rad rad2deg degrees radians floor ceil trunc rint
round around sqrt cbrt square abs absolute fabs sign signbit isnan isinf isfinite isposinf
isneginf nan_to_num real imag conj conjugate sinc frexp modf spacing bitwise_count""".split()

BINARY = """add subtract multiply divide true_divide floor_divide remainder mod fmod divmod
power pow float_power equal not_equal less less_equal greater greater_equal logical_and
logical_or logical_xor bitwise_and bitwise_or bitwise_xor left_shift right_shift
bitwise_left_shift bitwise_right_shift arctan2 atan2 maximum minimum fmax fmin hypot
logaddexp logaddexp2 copysign heaviside nextafter ldexp gcd lcm""".split()

# Where XLA's and NumPy's results legitimately differ in the last bits for huge integer
# arguments (range reduction of sin(2**31) ...), the integer extremes are left out.
_TRIG = {"sin", "cos", "tan", "sinc", "exp", "exp2", "expm1", "sinh", "cosh"}

# The sign of a zero result is not part of JAX's contract for these (XLA computes them by
# formulas whose zero signs differ from NumPy's libm).
_NO_ZERO_SIGN = {"arctan2", "atan2", "logaddexp", "logaddexp2", "hypot", "expm1"}


def test_every_ufunc_of_jax_numpy_exists(rjnp):
    missing = [n for n in UNARY + BINARY + ["clip", "where"] if not hasattr(jnp, n)]
    assert not missing
    np_ufuncs = [n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)]
    jax_has = []
    for n in np_ufuncs:
        try:
            getattr(rjnp, n)
            jax_has.append(n)
        except AttributeError:
            pass
    assert [n for n in jax_has if not hasattr(jnp, n)] == []


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(rjax, rjnp, name, dt):
    def args(n):
        x = values(dt)
        return [x[1:-1] if n in _TRIG and np_dtype(dt).kind in "iu" else x]
    want = GROUPS.get(rjax, rjnp, ("unary", dt),
                      lambda: {n: (n, args(n)) for n in UNARY})[name]
    check_against(want, name, args(name))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_all_pairs(rjax, rjnp, name, dt):
    """Every pair of edge values (an outer product, so broadcasting (n,1) with (1,m))."""
    def args(n):
        v = values(dt)
        if n in ("gcd", "lcm") and np_dtype(dt).kind == "i":
            v = v[1:]          # real JAX's gcd loops forever on INT_MIN (|INT_MIN| < 0)
        if n in ("power", "pow", "float_power") and dt == "float16":
            v = v[np.abs(v.astype(np.float32)) < 3]   # huge powers overflow f16 differently
        return [v[:, None], v[None, :]]
    want = GROUPS.get(rjax, rjnp, ("pairs", dt),
                      lambda: {n: (n, args(n)) for n in BINARY})[name]
    check_against(want, name, args(name), zero_sign=name not in _NO_ZERO_SIGN)


SCALARS = [True, 3, -2, 2.5, -0.0, 1j, 2 + 0.5j]


@pytest.mark.parametrize("s", SCALARS, ids=repr)
@pytest.mark.parametrize("name", UNARY)
def test_unary_python_scalar(rjax, rjnp, name, s):
    want = GROUPS.get(rjax, rjnp, ("scalar", type(s), s),
                      lambda: {n: (n, [s]) for n in UNARY})[name]
    check_against(want, name, [s])


_MIXED = [
    (np.arange(-3, 3, dtype=np.int8), 2), (np.arange(-3, 3, dtype=np.int8), 2.5),
    (2, np.arange(-3, 3, dtype=np.int8)), (np.array([1.5, -2.0, 0.0], np.float16), 2),
    (3.0, np.array([1.5, -2.0], ml_dtypes.bfloat16)), (np.array([1.5, -2.0], np.float16), 1j),
    (np.array([True, False]), 2), (np.array([True, False]), 2.0), (7, -2), (-7.5, 2),
    (3, 0.5j), (True, 2), (np.arange(4, dtype=np.int32), np.array([1, 2, 3, 4], np.float16)),
    (np.array([1.5, -2.5], np.float32), np.array([1 + 1j, 2j], np.complex64)),
    (np.float32(2.5), 3), (np.int8(3), 2.0), (np.array(2.5, np.float32), np.arange(3) + 1),
]


@pytest.mark.parametrize("case", range(len(_MIXED)))
@pytest.mark.parametrize("name", BINARY)
def test_binary_mixed_operands(rjax, rjnp, name, case):
    """Python scalars (weak), NumPy scalars (strong), and arrays of different dtypes."""
    args = list(_MIXED[case])
    want = GROUPS.get(rjax, rjnp, ("mixed", case),
                      lambda: {n: (n, args) for n in BINARY})[name]
    check_against(want, name, args)


def _weak_array(m):
    return m.arange(4) + 0.5          # int32 array + Python float: a weak float32 array


_WEAK_BIN = ["add", "multiply", "hypot", "heaviside", "arctan2", "maximum", "fmax",
             "copysign", "logaddexp", "power", "remainder", "floor_divide", "nextafter",
             "equal"]
_WEAK_OTHER = [2, 2.5, "weak0d", "f32", "weak"]


def _weak_operand(m, other):
    if other == "weak0d":
        return m.asarray(1.5)
    if other == "f32":
        return m.ones(4, np.float32)
    if other == "weak":
        return _weak_array(m)
    return other


def _weak_calls(m):
    calls = {}
    for name in _WEAK_BIN:
        for other in _WEAK_OTHER:
            calls[name, other, 1] = (name, [_weak_array(m), _weak_operand(m, other)])
            calls[name, other, 0] = (name, [m.asarray(2.5), _weak_operand(m, other)])
    for name in _WEAK_UN:
        for i, make in enumerate((_weak_array, lambda m: m.asarray(2.5),
                                  lambda m: m.asarray(-3))):
            calls[name, i] = (name, [make(m)])
    return calls


_WEAK_UN = ["sinc", "exp", "sqrt", "floor", "sign", "abs", "square", "rint", "round", "real",
            "imag", "nan_to_num", "isnan", "isinf", "isfinite", "signbit", "logical_not",
            "modf", "frexp", "log2", "deg2rad", "reciprocal", "negative"]


@pytest.mark.parametrize("name", _WEAK_BIN)
@pytest.mark.parametrize("other", _WEAK_OTHER)
def test_weak_array_operands(rjax, rjnp, name, other):
    """Weak arrays (rank 0 and rank 1) meeting Python scalars and strong arrays."""
    want = GROUPS.get(rjax, rjnp, ("weak",), lambda: _weak_calls(rjnp))
    lite = _weak_calls(jnp)
    for rank in (0, 1):
        key = (name, other, rank)
        compare(getattr(jnp, name)(*lite[key][1]), *want[key], zero_sign=False)


@pytest.mark.parametrize("name", _WEAK_UN)
def test_unary_weak_arrays(rjax, rjnp, name):
    want = GROUPS.get(rjax, rjnp, ("weak",), lambda: _weak_calls(rjnp))
    lite = _weak_calls(jnp)
    for i in range(3):
        compare(getattr(jnp, name)(*lite[name, i][1]), *want[name, i])


def test_weak_type_examples(rjnp):
    """The examples of the brief, against real JAX."""
    cases = [lambda m: m.arange(3) + 1.5, lambda m: m.float16(3.0) * 2,
             lambda m: 1 + m.array(2.0), lambda m: m.array(2.0) * 2,
             lambda m: m.int8(3) + 300 * 0 + 1, lambda m: m.arange(3, dtype=m.uint8) - 1,
             lambda m: m.float32(1) + 1j, lambda m: m.bfloat16(1.5) + m.float16(2.0),
             lambda m: m.asarray(2) ** 2, lambda m: 2 ** m.arange(3),
             lambda m: m.arange(3.0) // 2, lambda m: -m.asarray(3)]
    for f in cases:
        got, want = f(jnp), f(rjnp)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_allclose(_np(got).astype(np.complex128),
                                   _np(want).astype(np.complex128))


@pytest.mark.parametrize("name", ["add", "subtract", "true_divide", "floor_divide", "power",
                                  "maximum", "arctan2", "less", "remainder", "logaddexp",
                                  "bitwise_and", "right_shift", "where3"])
def test_numpy_operands(rjax, rjnp, name):
    """NumPy arrays and scalars as operands: strongly typed, results are Arrays."""
    a = np.arange(-3, 3, dtype=np.int16)
    b = np.array([2, 3, 1, -2, 5, 7], np.int16)
    if name == "where3":
        got = jnp.where(a > 0, a, np.float32(0.5))
        want = rjnp.where(a > 0, a, np.float32(0.5))
        compare(got, want, want)
        return
    check(rjax, rjnp, name, [a, b[::-1].copy()])
    want = getattr(rjnp, name)(a, b)
    compare(getattr(jnp, name)(a, b), want, want)       # raw NumPy in, Array out


SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 1, 3), (4, 1)),
          ((1,), (5,)), ((0,), (1,)), ((2, 0), (2, 1))]


_BCAST = ["add", "hypot", "where", "logical_and", "power", "gcd", "remainder", "copysign",
          "ldexp"]


def _bcast_args(name, shapes):
    rng = np.random.default_rng(1)
    s1, s2 = shapes
    if name == "where":
        return [rng.random(s1) > 0.5, rng.normal(size=s2).astype(np.float32), np.float32(2)]
    if name in ("gcd", "power", "ldexp"):
        return [rng.integers(-5, 9, s1).astype(np.int32), rng.integers(0, 4, s2).astype(np.int32)]
    return [rng.normal(size=s1).astype(np.float32), rng.normal(size=s2).astype(np.float32)]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", _BCAST)
def test_broadcasting(rjax, rjnp, name, shapes):
    want = GROUPS.get(rjax, rjnp, ("bcast",), lambda: {
        (n, sh): (n, _bcast_args(n, sh)) for n in _BCAST for sh in SHAPES})
    check_against(want[name, shapes], name, _bcast_args(name, shapes), jit=True)


@pytest.mark.parametrize("name", ["add", "floor_divide", "power", "hypot", "logaddexp",
                                  "sinc", "round", "frexp", "ldexp", "gcd", "nan_to_num",
                                  "heaviside", "where", "clip", "signbit", "spacing",
                                  "remainder", "fmax", "isinf"])
def test_under_jit_matches_eager(name):
    """The same function staged by jit gives the eager result (values, dtype, weak)."""
    x = jnp.asarray(np.array([-2.5, -0.0, 0.5, 3.0, np.inf, np.nan], np.float32))
    i = jnp.asarray(np.array([-4, 0, 3, 7, 2, -1], np.int32))
    args = {"frexp": (x,), "sinc": (x,), "round": (x,), "nan_to_num": (x,), "signbit": (x,),
            "spacing": (x,), "isinf": (x,), "ldexp": (x, i), "gcd": (i, 6),
            "where": (x > 0, x, 1.0), "clip": (x, -1, 2.0), "power": (i, i)}.get(name, (x, 2))
    fn = getattr(jnp, name)
    eager, staged = fn(*args), jaxlite.jit(fn)(*args)
    for e, s in zip(eager if isinstance(eager, tuple) else (eager,),
                    staged if isinstance(staged, tuple) else (staged,)):
        assert (e.dtype, e.weak_type, e.shape) == (s.dtype, s.weak_type, s.shape)
        if name == "logaddexp":   # native code's float32 exp/log: within a few ulps
            np.testing.assert_allclose(_np(e), _np(s), rtol=1e-6)
        else:
            np.testing.assert_array_equal(_np(e), _np(s))


@pytest.mark.parametrize("name", ["exp", "add", "divide", "floor_divide", "power", "hypot",
                                  "logaddexp", "remainder", "left_shift", "sign", "round",
                                  "frexp", "gcd"])
def test_x64(rjax, rjnp, x64, name):
    args2 = {"left_shift": [np.arange(5, dtype=np.int64), 3],
             "gcd": [np.arange(-4, 4, dtype=np.int64), np.int64(6)]}
    unary = name in ("exp", "sign", "round", "frexp")
    for args in ([np.array([-2.5, -0.0, 1.5, np.inf, 1e300], np.float64)] + ([] if unary
                                                                              else [2]),
                 [np.arange(-4, 4, dtype=np.int64)] + ([] if unary else [3]),
                 [np.arange(4, dtype=np.uint32)] + ([] if unary else [np.int64(2)]),
                 [7] + ([] if unary else [2.5])):
        check(rjax, rjnp, name, args2.get(name, args))


# ---- special arguments --------------------------------------------------------------


_DECIMALS = [-2, -1, 0, 1, 2, 3]
_ROUND_DTYPES = ["int8", "int32", "uint8", "float16", "bfloat16", "float32", "complex64"]


def _round_input(dt):
    x = np.array([-251, -150, -55, -5, 0, 5, 15, 25, 49, 50, 127], np.float64)
    if np_dtype(dt).kind == "f" or dt == "bfloat16":
        x = x / 37.0
    if dt == "uint8":
        x = np.abs(x)
    return x.astype(np_dtype(dt)) if dt != "complex64" else (x + 1j * x[::-1] / 7).astype(dt)


@pytest.mark.parametrize("decimals", _DECIMALS)
@pytest.mark.parametrize("dt", _ROUND_DTYPES)
def test_round_decimals(rjax, rjnp, dt, decimals):
    want = GROUPS.get(rjax, rjnp, ("round",), lambda: {
        (t, d): ("round", [_round_input(t), d]) for t in _ROUND_DTYPES for d in _DECIMALS})
    check_against(want[dt, decimals], "round", [_round_input(dt), decimals], zero_sign=False)


_NTN_KW = [dict(), dict(nan=1.5), dict(posinf=9.0, neginf=-9.0), dict(nan=-1, posinf=2)]
_NTN_DTYPES = ["float16", "bfloat16", "float32", "complex64", "int8"]


def _ntn_input(dt):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0], np.float64)
    if dt == "complex64":
        return (x + 1j * x[::-1]).astype(dt)
    return np.nan_to_num(x).astype(dt) if dt == "int8" else x.astype(np_dtype(dt))


@pytest.mark.parametrize("kw", range(len(_NTN_KW)))
@pytest.mark.parametrize("dt", _NTN_DTYPES)
def test_nan_to_num_args(rjax, rjnp, dt, kw):
    want = GROUPS.get(rjax, rjnp, ("nan_to_num",), lambda: {
        (t, k): ("nan_to_num", [_ntn_input(t)], _NTN_KW[k])
        for t in _NTN_DTYPES for k in range(len(_NTN_KW))})
    check_against(want[dt, kw], "nan_to_num", [_ntn_input(dt)], kw=_NTN_KW[kw])


_CLIP = [(np.arange(-3, 4), 0, 2), (np.arange(-3, 4), None, 1), (np.arange(-3, 4), -1.5, None),
         (np.arange(6, dtype=np.uint8), 2, 4),
         (np.array([np.nan, 1.0, -np.inf], np.float32), 0.0, 0.5),
         (np.arange(4.0), np.array([0.0, 1, 2, 3]), 2.5),
         (np.arange(3, dtype=np.float16), 0.5, 1)]


@pytest.mark.parametrize("case", range(len(_CLIP)))
def test_clip(rjax, rjnp, case):
    want = GROUPS.get(rjax, rjnp, ("clip",), lambda: {
        **{(i, 0): ("clip", list(c)) for i, c in enumerate(_CLIP)},
        **{(i, 1): ("clip", [c[0]], dict(max=c[2])) for i, c in enumerate(_CLIP)}})
    x, lo, hi = _CLIP[case]
    check_against(want[case, 0], "clip", [x, lo, hi])
    check_against(want[case, 1], "clip", [x], kw=dict(max=hi))


def test_clip_complex_raises(rjnp):
    with pytest.raises(ValueError):
        rjnp.clip(rjnp.ones(2, np.complex64), 0, 1)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        jnp.clip(jnp.ones(2, np.complex64), 0, 1)


@pytest.mark.parametrize("case", range(6))
def test_where(rjnp, case):
    c = np.array([True, False, True])
    cases = [(c, 1, 2.5), (c, np.arange(3, dtype=np.int8), 2), (np.arange(3), 1.0, -1.0),
             (c, np.float16(1), np.arange(3, dtype=np.uint8)), (True, 2, 3),
             (c[:, None], np.arange(3.0), np.zeros((3, 1), np.float32))]
    args = cases[case]
    want = rjnp.where(*[rjnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    got = jnp.where(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    compare(got, want, want)


def test_power_static_exponents(rjnp):
    x = np.array([-3, -1, 0, 2, 5], np.int32)
    f = np.array([-2.5, -0.0, 0.5, 3.0], np.float32)
    for base, e in [(x, 3), (x, 0), (x, np.int32(2)), (f, -2), (f, 0), (f, 7), (x, True),
                    (np.array([True, False]), 3), (f, np.array(2)), (x, np.uint8(1))]:
        want = rjnp.power(rjnp.asarray(base), e)
        compare(jnp.power(jnp.asarray(base), e), want, want)
    with pytest.raises(TypeError, match="negative"):
        jnp.power(jnp.asarray(x), -1)
    with pytest.raises(TypeError):
        rjnp.power(rjnp.asarray(x), -1)


def test_power_negative_integer_array_exponents(rjnp):
    x = np.array([3, -3, 2, 5, -1, 1, 0, -2, -1], np.int32)
    e = np.array([-1, -1, -1, -2, -3, -5, -1, -2, -4], np.int32)
    want = rjnp.power(rjnp.asarray(x), rjnp.asarray(e))
    compare(jnp.power(jnp.asarray(x), jnp.asarray(e)), want, want)


def test_integer_division_by_zero_and_overflow(rjnp):
    i8 = np.array([5, -5, 0, -128, 127, -128], np.int8)
    d8 = np.array([0, 0, 0, -1, 0, 1], np.int8)
    for name in ("floor_divide", "remainder", "fmod", "divmod", "true_divide"):
        want = getattr(rjnp, name)(rjnp.asarray(i8), rjnp.asarray(d8))
        compare(getattr(jnp, name)(jnp.asarray(i8), jnp.asarray(d8)), want, want)
    for name in ("div", "rem"):
        want = getattr(__import__("jax").lax, name)(rjnp.asarray(i8), rjnp.asarray(d8))
        compare(getattr(lax, name)(jnp.asarray(i8), jnp.asarray(d8)), want, want)


def test_bool_arithmetic(rjnp):
    b = np.array([True, False, True])
    for name in ("add", "multiply", "maximum", "power", "floor_divide", "square",
                 "left_shift", "fmod"):
        f, rf = getattr(jnp, name), getattr(rjnp, name)
        args = (b,) if name == "square" else (b, b[::-1].copy())
        want = rf(*[rjnp.asarray(a) for a in args])
        compare(f(*[jnp.asarray(a) for a in args]), want, want)


def test_scalar_types_make_arrays(rjnp):
    for name in ("float16", "bfloat16", "float32", "int8", "uint32", "bool_", "complex64",
                 "float64", "int64"):
        got, want = getattr(jnp, name)(3), getattr(rjnp, name)(3)
        compare(got, want, want)
        got, want = getattr(jnp, name)([1, 0]), getattr(rjnp, name)([1, 0])
        compare(got, want, want)
        assert getattr(jnp, name) == np.dtype(getattr(jnp, name)).type
        assert np.dtype(getattr(jnp, name)) == np.dtype(getattr(rjnp, name))
    assert jnp.ones(2, jnp.bfloat16).dtype == jnp.bfloat16
    assert {np.float32: 1}[jnp.float32] == 1
    x = jaxlite.jit(lambda v: jnp.float16(v) * 2)(jnp.arange(3.0))
    assert x.dtype == np.float16 and not x.weak_type


# ---- errors -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "multiply", "arctan2", "maximum", "logical_and",
                                  "power", "hypot", "where", "ldexp", "gcd", "heaviside"])
@pytest.mark.parametrize("bad", [[1, 2], "ab", None, {1: 2}], ids=repr)
@pytest.mark.parametrize("pos", [0, 1])
def test_non_array_arguments(name, bad, pos):
    args = [jnp.ones(2), jnp.ones(2)]
    if name == "where":
        args = [jnp.ones(2) > 0] + args
    args[pos] = bad
    with pytest.raises(TypeError, match=f"position {pos}|{type(bad).__name__}"):
        getattr(jnp, name)(*args)


@pytest.mark.parametrize("name", ["exp", "sin", "floor", "abs", "isnan", "sign", "frexp",
                                  "nan_to_num", "round", "logical_not", "bitwise_not"])
def test_non_array_argument_unary(name):
    with pytest.raises(TypeError, match="position 0"):
        getattr(jnp, name)([1.0, 2.0])


@pytest.mark.parametrize("name", ["add", "hypot", "logical_or", "power", "remainder",
                                  "where"])
def test_shape_mismatch(rjnp, name):
    for s1, s2, err in [((3,), (4,), TypeError), ((2, 3), (3, 2), TypeError),
                        ((2,), (3, 1, 4), ValueError)]:
        args = [np.ones(s1, np.float32), np.ones(s2, np.float32)]
        if name == "where":     # where broadcasts first: always ValueError
            args, err = [np.ones(s1, bool), args[1], 1.0], ValueError
        with pytest.raises(err):
            getattr(rjnp, name)(*args)
        with pytest.raises(err, match=r"\(3, 1, 4\)|\(4,\)|\(3, 2\)"):
            getattr(jnp, name)(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                 for a in args])


def test_lax_dtype_mismatch_names_both_dtypes():
    with pytest.raises(TypeError, match="int32.*float32"):
        lax.add(jnp.ones(2, np.int32), jnp.ones(2, np.float32))
    with pytest.raises(TypeError, match="float16.*bfloat16"):
        lax.mul(jnp.ones(2, np.float16), jnp.ones(2, jnp.bfloat16))
    with pytest.raises(TypeError, match=r"\(3,\).*\(4,\)"):
        lax.add(jnp.ones(3), jnp.ones(4))


@pytest.mark.parametrize("name", ["subtract", "negative"])
def test_bool_subtract_negative_raise(rjnp, name):
    b = np.array([True, False])
    args = (b,) if name == "negative" else (b, b)
    with pytest.raises(TypeError):
        getattr(rjnp, name)(*[rjnp.asarray(a) for a in args])
    with pytest.raises(TypeError, match="bool"):
        getattr(jnp, name)(*[jnp.asarray(a) for a in args])
    with pytest.raises(TypeError, match="bool"):
        jaxlite.jit(getattr(jnp, name))(*[jnp.asarray(a) for a in args])


def test_python_int_overflow(rjnp):
    with pytest.raises(OverflowError):
        rjnp.add(rjnp.ones(2), 2 ** 40)
    with pytest.raises(OverflowError):
        jnp.add(jnp.ones(2), 2 ** 40)


def test_operators_use_the_ufuncs(rjnp):
    x = np.array([-3, -1, 0, 2, 7], np.int32)
    for op in ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__",
               "__pow__", "__and__", "__lshift__", "__rshift__", "__lt__", "__eq__"):
        for other in (2, 2.5, np.int8(3)):
            if op in ("__and__", "__lshift__", "__rshift__") and isinstance(other, float):
                continue
            want = getattr(rjnp.asarray(x), op)(other)
            got = getattr(jnp.asarray(x), op)(other)
            compare(got, want, want)


# ---- properties ---------------------------------------------------------------------

_shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                            max_side=4)
_BIN_PROP = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "arctan2",
             "hypot", "logaddexp", "copysign", "floor_divide", "remainder", "less_equal",
             "fmax", "heaviside", "power"]


@settings(max_examples=40, deadline=None)
@given(shapes=_shapes, name=st.sampled_from(_BIN_PROP), data=st.data())
def test_binary_float_broadcast_property(shapes, name, data):
    """Random broadcasts of float32 operands against NumPy (same math, same shapes)."""
    s1, s2 = shapes.input_shapes
    elems = st.floats(-8, 8, width=32, allow_subnormal=False)
    a = data.draw(hnp.arrays(np.float32, s1, elements=elems))
    b = data.draw(hnp.arrays(np.float32, s2, elements=elems))
    got = getattr(jnp, name)(jnp.asarray(a), jnp.asarray(b))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(_np(got), want, rtol=1e-5, atol=1e-5, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(shapes=_shapes, name=st.sampled_from(["add", "multiply", "floor_divide", "remainder",
                                             "bitwise_xor", "maximum", "gcd", "lcm",
                                             "right_shift", "equal"]),
       dt=st.sampled_from([np.int8, np.int32, np.uint8, np.uint32]), data=st.data())
def test_binary_int_broadcast_property(shapes, name, dt, data):
    """Random broadcasts of integer operands against NumPy (nonzero divisors)."""
    s1, s2 = shapes.input_shapes
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    a = data.draw(hnp.arrays(dt, s1, elements=st.integers(lo, hi)))
    b = data.draw(hnp.arrays(dt, s2, elements=st.integers(1, min(hi, 7))))
    got = getattr(jnp, name)(jnp.asarray(a), jnp.asarray(b))
    want = getattr(np, name)(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(_np(got), want)


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["add", "multiply", "subtract", "maximum", "arctan2",
                             "true_divide", "less"]),
       da=st.sampled_from(DTYPES[1:]), db=st.sampled_from(DTYPES[1:]),
       shapes=_shapes)
def test_binary_mixed_dtype_property(rjnp, name, da, db, shapes):
    """Random dtype pairs and broadcasts: dtype and weak type from real JAX's promotion."""
    s1, s2 = shapes.input_shapes
    a = np.ones(s1, np_dtype(da))
    b = np.full(s2, 2, np_dtype(db))
    try:
        want = getattr(rjnp, name)(rjnp.asarray(a), rjnp.asarray(b))
    except TypeError:
        with pytest.raises(TypeError):
            getattr(jnp, name)(jnp.asarray(a), jnp.asarray(b))
        return
    compare(getattr(jnp, name)(jnp.asarray(a), jnp.asarray(b)), want, want)


# ---- lax-level edge semantics of the elementwise primitives -------------------------


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
def test_lax_convert_float_to_int_saturates(rjax, dt):
    big = 6e4 if dt == "float16" else 1e10
    x = np.array([np.nan, np.inf, -np.inf, big, -big, -3.7, 2.5, 255.9, -129], np_dtype(dt))
    for t in ("int8", "uint8", "int32", "uint32"):
        want = rjax.lax.convert_element_type(x, t)
        compare(lax.convert_element_type(jnp.asarray(x), t), want, want)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint32"])
def test_lax_shifts_out_of_range(rjax, dt):
    d = np_dtype(dt)
    info = np.iinfo(d)
    x = np.array([1, info.max, info.min, 5, info.max // 3, 1, 7, 2], d)
    s = np.array([0, 1, 7, 8, 31, 32, 100, 3] if d.kind == "u" else
                 [0, 1, 7, 8, 31, 32, -1, 3], np.int64).astype(d)
    for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        want = getattr(rjax.lax, name)(x, s)
        compare(getattr(lax, name)(jnp.asarray(x), jnp.asarray(s)), want, want)


def test_lax_max_min_signed_zero_and_nan(rjax):
    a = np.array([-0.0, 0.0, np.nan, 1.0, -0.0], np.float32)
    b = np.array([0.0, -0.0, 1.0, np.nan, -0.0], np.float32)
    for name in ("max", "min"):
        want = getattr(rjax.lax, name)(a, b)
        compare(getattr(lax, name)(jnp.asarray(a), jnp.asarray(b)), want, want)
    c = np.array([complex(np.nan, 1), 1, 1 + 1j, 1 + 2j], np.complex64)
    d = np.array([1, complex(np.nan, 1), 1 + 2j, 1 + 1j], np.complex64)
    for name in ("max", "min"):
        want = getattr(rjax.lax, name)(c, d)
        compare(getattr(lax, name)(jnp.asarray(c), jnp.asarray(d)), want, want)


def test_lax_round_and_sign(rjax):
    x = np.array([0.49999997, -0.5, 2.5, -0.3, 1.5, -0.0, np.inf, np.nan], np.float32)
    for method in (0, 1):
        want = rjax.lax.round(x, method)
        compare(lax.round(jnp.asarray(x), method), want, want)
    want = rjax.lax.sign(x)
    compare(lax.sign(jnp.asarray(x)), want, want)


def test_lax_bitcast_convert_type(rjax):
    x = np.array([1.0, -0.0, np.inf, np.nan], np.float32)
    for t in ("int32", "uint32"):
        want = rjax.lax.bitcast_convert_type(x, t)
        compare(lax.bitcast_convert_type(jnp.asarray(x), t), want, want)
    want = rjax.lax.bitcast_convert_type(x, np.uint8)
    compare(lax.bitcast_convert_type(jnp.asarray(x), np.uint8), want, want)
    y = np.arange(8, dtype=np.uint8).reshape(2, 4)
    want = rjax.lax.bitcast_convert_type(y, np.float32)
    compare(lax.bitcast_convert_type(jnp.asarray(y), np.float32), want, want)
    for lib in (lax, rjax.lax):     # JAX 0.10.2: ValueError for a last axis of 3 bytes
        with pytest.raises(ValueError):
            lib.bitcast_convert_type(np.ones(3, np.uint8), np.float32)


# ---- complex exp / expm1 / log / log1p at special values and near 0 (issue 10) --------

_C_RE = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 1e-8, -1e-8, 700.0, 100.0, -0.5]
_C_IM = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-8, np.pi, 0.866]


@pytest.mark.parametrize("name", ["exp", "expm1", "log", "log1p"])
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_special_values(name, dt, rjnp, request):
    """Each part NaN/inf/finite and signed zero as XLA: e.g. expm1(inf + 0j) = inf + 0j
    (NumPy: inf + nan j), exp(100 + 1e-8j) has a finite imaginary part, log(inf + nan j)
    is nan + nan j, log1p(1e-8 + 1e-8j) keeps its real part 1e-8 (NumPy: 0)."""
    if dt == "complex128":
        request.getfixturevalue("x64")
    z = np.array([complex(a, b) for a in _C_RE for b in _C_IM], dt)
    got = np.asarray(getattr(jnp, name)(z))
    want = np.asarray(getattr(rjnp, name)(z))
    assert got.dtype == want.dtype
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        np.testing.assert_allclose(g, w, rtol=3e-7 if dt == "complex64" else 1e-15, atol=0)
        zeros = (g == 0) & (w == 0)
        assert (np.signbit(g[zeros]) == np.signbit(w[zeros])).all(), z[zeros]


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_log1p_near_zero(dt, rjnp, request):
    """Near 0 and near the circle |1 + z| = 1, where log(1 + z) cancels, log1p keeps full
    relative accuracy in both parts, as JAX's."""
    if dt == "complex128":
        request.getfixturevalue("x64")
    rng = np.random.default_rng(3)
    th = rng.uniform(-3, 3, 100)
    circle = (1 + rng.normal(0, 1e-3, 100)) * np.exp(1j * th) - 1
    tiny = rng.normal(0, 1e-6, 100) + 1j * rng.normal(0, 1e-6, 100)
    z = np.concatenate([circle, tiny, [1e-20 + 1e-20j, -1e-7 + 0j, -1 + 1e-8j]]).astype(dt)
    got, want = np.asarray(jnp.log1p(z)), np.asarray(rjnp.log1p(z))
    tol = 3e-7 if dt == "complex64" else 1e-15
    np.testing.assert_allclose(got.real, want.real, rtol=tol)
    np.testing.assert_allclose(got.imag, want.imag, rtol=tol)


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint32"])
def test_bitwise_count_empty(shape, dt, rjnp):
    got = jnp.bitwise_count(np.zeros(shape, dt))
    want = rjnp.bitwise_count(np.zeros(shape, dt))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert lax.population_count(np.zeros(shape, dt)).shape == shape


@pytest.mark.parametrize("deg", [False, True])
@pytest.mark.parametrize("v", [np.array([1, -2, 0], np.int32), np.array([1, -2], np.float16),
                               np.array([True, False]), 1.0, -1, 0j,
                               np.array([1j, -1, 0j, -1 - 0j, 1 + 1j], np.complex64),
                               np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
def test_angle(v, deg, rjnp):
    """jnp.angle: default float for ints/bools, the real dtype for complex, never weak;
    -0.0 has angle pi."""
    from oracle import assert_like_jax
    assert_like_jax(jnp.angle(v, deg=deg), rjnp.angle(v, deg=deg), rtol=1e-3 if np.ndim(v) and
                    np.asarray(v).dtype == np.float16 else 1e-6)
