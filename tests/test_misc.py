"""Whole-array comparisons and small utilities of jaxlite.numpy against real JAX (values,
dtype, weak type, Python results, exception types), eagerly and under jit, with property
tests against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import errors
from oracle import assert_like_jax


def _compare(got, want):
    if isinstance(want, (bool, int, float, np.dtype)):
        assert type(got) is type(want) and got == want, (got, want)
    else:
        assert_like_jax(got, want)


def _eval(expr, mod, jnp_mod, args, jit):
    env = {"jnp": jnp_mod, "np": np, "jax": mod}
    if not jit:
        return eval(expr, {**env, **{k: jnp_mod.asarray(v) for k, v in args.items()}})
    fn = eval(f"lambda {', '.join(args)}: {expr}", env)
    return mod.jit(fn)(*args.values())


def check(expr, rjax, args=None, jit=False):
    import jax.numpy as rjnp
    args = args or {}
    try:
        want = _eval(expr, rjax, rjnp, args, jit)
    except Exception as e:  # noqa: BLE001  (the oracle's exception is the spec)
        with pytest.raises(getattr(errors, type(e).__name__, type(e))):
            _eval(expr, jaxlite, jnp, args, jit)
        return
    _compare(_eval(expr, jaxlite, jnp, args, jit), want)


X = np.array([1.0, 1.00001, 2.0, np.nan, np.inf, -np.inf], np.float32)
Y = np.array([1.0, 1.0, 2.1, np.nan, np.inf, np.inf], np.float32)
I = np.array([[0, 1, 2], [3, 0, 0]], np.int32)
C = np.array([1 + 1j, 2, 3j], np.complex64)
H = np.array([1.0, 2.0], np.float16)

ARRAY_CASES = [
    ("jnp.isclose(x, y)", dict(x=X, y=Y)), ("jnp.isclose(x, y, equal_nan=True)", dict(x=X, y=Y)),
    ("jnp.isclose(x, y, rtol=0.1)", dict(x=X, y=Y)),
    ("jnp.isclose(x, y, atol=0.2)", dict(x=X, y=Y)),
    ("jnp.isclose(x, x[:, None])", dict(x=X)), ("jnp.isclose(x, 1)", dict(x=I)),
    ("jnp.isclose(x, x + 1)", dict(x=I)), ("jnp.isclose(x, x * 1.0005)", dict(x=H)),
    ("jnp.isclose(x, x + 1e-7j)", dict(x=C)), ("jnp.isclose(x, x > 0)", dict(x=I > 0)),
    ("jnp.allclose(x, y)", dict(x=X, y=Y)), ("jnp.allclose(x, x, equal_nan=True)", dict(x=X)),
    ("jnp.allclose(x, x + 1e-7)", dict(x=Y[:3])), ("jnp.allclose(x, x[0])", dict(x=I)),
    ("jnp.array_equal(x, y)", dict(x=I, y=I)), ("jnp.array_equal(x, y)", dict(x=X, y=X)),
    ("jnp.array_equal(x, y, equal_nan=True)", dict(x=X, y=X)),
    ("jnp.array_equal(x, x.astype(jnp.float32))", dict(x=I)),
    ("jnp.array_equal(x, x[0])", dict(x=I)),
    ("jnp.array_equal(x, x.T)", dict(x=I)), ("jnp.array_equal(x, x + 1)", dict(x=I)),
    ("jnp.array_equiv(x, x[:1])", dict(x=np.ones((2, 3)))), ("jnp.array_equiv(x, x[0])", dict(x=I)),
    ("jnp.count_nonzero(x)", dict(x=I)), ("jnp.count_nonzero(x, axis=0)", dict(x=I)),
    ("jnp.count_nonzero(x, axis=1, keepdims=True)", dict(x=I)),
    ("jnp.count_nonzero(x, axis=(0, 1))", dict(x=I)), ("jnp.count_nonzero(x)", dict(x=X)),
    ("jnp.count_nonzero(x)", dict(x=I > 0)),
    ("jnp.iscomplex(x)", dict(x=C)), ("jnp.iscomplex(x)", dict(x=X)),
    ("jnp.isreal(x)", dict(x=C)), ("jnp.isreal(x)", dict(x=I)),
]


@pytest.mark.parametrize("expr,args", ARRAY_CASES)
def test_eager(expr, args, rjax):
    check(expr, rjax, args)


@pytest.mark.parametrize("expr,args", ARRAY_CASES)
def test_jit(expr, args, rjax):
    check(expr, rjax, args, jit=True)


CASES = [
    "jnp.isclose(1.0, 1.0 + 1e-9)", "jnp.allclose(1, 1)", "jnp.array_equal([1, 2], [1, 2])",
    "jnp.array_equal(jnp.array([1, 2]), [1, 2])", "jnp.array_equal(1, 1.0)",
    "jnp.array_equal(jnp.ones((2, 1)), jnp.ones((2,)))", "jnp.array_equiv([1, 2], [1, 2])",
    "jnp.count_nonzero(5)",
    "jnp.iscomplexobj(jnp.ones(2))", "jnp.iscomplexobj(jnp.ones(2, jnp.complex64))",
    "jnp.iscomplexobj(1j)", "jnp.iscomplexobj([1, 2j])", "jnp.iscomplexobj(None)",
    "jnp.iscomplexobj('a')", "jnp.iscomplexobj(np.complex64(1))", "jnp.isrealobj(jnp.ones(2))",
    "jnp.isrealobj(1j)", "jnp.isrealobj(3)",
    "jnp.isscalar(1)", "jnp.isscalar(1.0)", "jnp.isscalar(True)", "jnp.isscalar(np.float32(1))",
    "jnp.isscalar(np.array(1))", "jnp.isscalar(jnp.asarray(1))", "jnp.isscalar(jnp.ones(1))",
    "jnp.isscalar([1])", "jnp.isscalar('a')", "jnp.isscalar(None)",
    "jnp.can_cast(jnp.int8, jnp.int32)", "jnp.can_cast(jnp.int32, jnp.int8)",
    "jnp.can_cast(jnp.int32, jnp.int8, casting='unsafe')",
    "jnp.can_cast(jnp.float32, jnp.int32, casting='same_kind')",
    "jnp.can_cast(jnp.int32, jnp.float32, casting='same_kind')",
    "jnp.can_cast(jnp.ones(2), jnp.float16)", "jnp.can_cast(jnp.float64, jnp.float32)",
    "jnp.can_cast(jnp.bfloat16, jnp.float32)", "jnp.can_cast(jnp.float16, jnp.bfloat16)",
    "jnp.can_cast(np.dtype('uint8'), 'int16')", "jnp.can_cast(jnp.bool_, jnp.int8, 'no')",
    "jnp.isdtype(jnp.float32, 'real floating')",
    "jnp.isdtype(jnp.int32, ('integral', jnp.float32))",
    "jnp.isdtype(jnp.bool_, 'bool')", "jnp.isdtype(jnp.complex64, 'numeric')",
    "jnp.isdtype(jnp.bfloat16, 'real floating')", "jnp.isdtype(jnp.uint8, 'signed integer')",
    "jnp.isdtype(jnp.uint8, 'unsigned integer')", "jnp.isdtype(np.dtype('int8'), jnp.int8)",
    "jnp.isdtype(jnp.bool_, 'numeric')",
    # bad input
    "jnp.isclose(jnp.array([1.0, 2.0]), jnp.array([1.1, 2.0, 3.0]))", "jnp.isclose([1.0], [1.0])",
    "jnp.array_equiv(jnp.array([1, 2]), jnp.array([1, 2, 3]))", "jnp.count_nonzero([1, 0])",
    "jnp.count_nonzero(jnp.ones(3), axis=1)", "jnp.can_cast(1, jnp.int8)",
    "jnp.can_cast(jnp.int32, jnp.int8, casting='foo')", "jnp.isdtype(jnp.float32, 'foo')",
    "jnp.iscomplex([1j])",
]


@pytest.mark.parametrize("expr", CASES)
def test_misc(expr, rjax):
    check(expr, rjax)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e3, 1e3, width=32),
                          st.sampled_from([np.nan, np.inf, -np.inf])), min_size=1, max_size=6),
       st.floats(0, 0.5), st.floats(0, 0.5), st.booleans(), st.integers(0, 3))
def test_isclose_property(vals, rtol, atol, equal_nan, shift):
    a = np.array(vals, np.float32)
    b = np.roll(a, shift) * np.float32(1.001)
    got = np.asarray(jnp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    # float32 tolerances: NumPy computes the bound in float64, so allow disagreement only
    # where the two sides of the bound are within float32 rounding of each other
    want = np.isclose(a, b, rtol=np.float32(rtol), atol=np.float32(atol), equal_nan=equal_nan)
    with np.errstate(all="ignore"):
        margin = np.abs(np.abs(a - b) - (np.float32(atol) + np.float32(rtol) * np.abs(b)))
    edge = np.isfinite(margin) & (margin <= 1e-5 * (1 + np.abs(b)))
    np.testing.assert_array_equal(got[~edge], want[~edge])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=0, max_size=6), st.integers(0, 2))
def test_array_equal_property(vals, which):
    a = np.array(vals, np.int32)
    b = [a, a + (a == 0), a[:-1]][which]
    assert bool(jnp.array_equal(a, b)) == np.array_equal(a, b)
    assert bool(jnp.array_equiv(a, a[:1] if len(a) else a)) == np.array_equiv(a, a[:1])
