"""``Primitive.impl_for``: the implementation a compiled program binds for static operand
avals.  A primitive's ``specialize`` rule may pick a cheaper callable (elementwise ops
without half-precision operands skip the float16 check; a 1-D . 1-D dot is NumPy's dot);
the results must be those of ``impl`` bit for bit."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.core.avals import ShapedArray
from jaxlite.primitives import _f32, elementwise as ew
from jaxlite.primitives.linalg import dot_general_p


def _avals(*xs):
    return [ShapedArray(x.shape, x.dtype) for x in xs]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16", "bfloat16"])
@pytest.mark.parametrize("prim", [ew.add_p, ew.mul_p, ew.max_p, ew.sub_p])
def test_elementwise_impl_for_matches_impl(prim, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(7) * 10).astype(dtype)
    b = (rng.standard_normal(7) * 10).astype(dtype)
    fn = prim.impl_for(_avals(a, b), {})
    got, want = fn(a, b), prim.impl(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    half = dtype in ("float16", "bfloat16")
    assert (fn is prim.impl) == half       # half precision keeps the checking wrapper


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "float16"])
@pytest.mark.parametrize("name", ["tanh", "sin", "sqrt", "atanh", "abs"])
def test_complex_aware_impl_for_is_numpys_function_on_real_operands(name, dtype):
    # tanh, sin, ... check for complex operands per call; a compiled program on real
    # operands binds NumPy's function itself, on complex ones the checking wrapper
    prim = getattr(ew, f"{name}_p")
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.99, 3.0, 1e-30], dtype)
    if dtype == "complex64":
        with np.errstate(all="ignore"):
            x = x + np.array(1j, dtype) * x[::-1]
    fn = prim.impl_for(_avals(x), {})
    with np.errstate(all="ignore"):
        got, want = fn(x), prim.impl(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got.real), np.signbit(want.real))
    if dtype in ("float32", "float64"):
        # NumPy's ufunc, or the float32 transcendental (primitives/_f32.py) that runs
        # NumPy's ufunc for float64
        assert isinstance(fn, np.ufunc) or fn in _f32.FUNCTIONS.values()
    else:
        assert not isinstance(fn, np.ufunc)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float16"])
def test_vector_dot_impl_for_matches_impl(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(9) * 4).astype(dtype)
    b = (rng.standard_normal(9) * 4).astype(dtype)
    params = dict(dimension_numbers=(((0,), (0,)), ((), ())), precision=None,
                  preferred_element_type=None)
    fn = dot_general_p.impl_for(_avals(a, b), params)
    got, want = np.asarray(fn(a, b)), np.asarray(dot_general_p.impl(a, b, **params))
    assert got.dtype == want.dtype and got.shape == want.shape == ()
    np.testing.assert_array_equal(got, want)
    assert (fn is np.dot) == (dtype in ("float32", "int32"))


def test_plain_matrix_dot_is_numpys_dot_batched_and_wider_accumulation_are_not():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    params = dict(dimension_numbers=(((1,), (0,)), ((), ())), precision=None,
                  preferred_element_type=None)
    fn = dot_general_p.impl_for(_avals(a, a.T), params)
    assert fn is np.dot        # a plain 2-D contraction: one BLAS call
    np.testing.assert_array_equal(fn(a, a.T), dot_general_p.impl(a, a.T, **params))
    b = np.ones((4, 2, 3), np.float32)
    params = dict(dimension_numbers=(((2,), (1,)), ((0,), (0,))), precision=None,
                  preferred_element_type=None)
    assert dot_general_p.impl_for(_avals(b, np.swapaxes(b, 1, 2)), params) is not np.dot
    v = np.ones(3, np.int8)
    params = dict(dimension_numbers=(((0,), (0,)), ((), ())), precision=None,
                  preferred_element_type=np.int32)
    fn = dot_general_p.impl_for(_avals(v, v), params)
    assert fn is not np.dot and np.asarray(fn(v, v)).dtype == np.int32


def test_jitted_program_results_unchanged_on_the_interpreter():
    from jaxlite.config import config
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    y = jnp.array([4.0, 5.0, 6.0], dtype=jnp.float32)
    h = jnp.array([1.5, -2.0, 3.0], dtype=jnp.float16)
    with config._override("jaxlite_backend", "interpreter"):
        f = jax.jit(lambda a, b: jnp.dot(a, b) + jnp.sum(a))
        g = jax.jit(lambda a: a * a + a)
        out, outh = f(x, y), g(h)
    assert out.dtype == np.float32 and float(out) == 38.0
    assert outh.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(outh), np.array([3.75, 2.0, 12.0], np.float16))


_NAN, _INF = float("nan"), float("inf")


@pytest.mark.parametrize("lhs,rhs", [
    ((2, 0), (0, 3)),            # an empty contraction: zeros
    ((0,), (0,)),                # empty vectors: 0
    ((0, 4), (4,)),              # an empty result
    ((1, 1), (1, 5)),            # size-1 axes
    ((5,), (5, 1)),              # vector . matrix with one column
    ((3, 4), (4,)),              # matrix . vector
    ((4,), (4, 3)),              # vector . matrix
    ((3, 4), (4, 2))])           # matrix . matrix
@pytest.mark.parametrize("dtype", ["float32", "int32", "complex64"])
def test_plain_dots_match_jax_at_the_edges(rjax, lhs, rhs, dtype):
    """The plain contractions that now run as numpy.dot on the interpreter, against real
    JAX: empty and size-1 axes, integers, complex values, and nan/inf in float operands
    (the specialised call and impl agree bit for bit)."""
    from jaxlite.config import config
    rng = np.random.default_rng(1)
    a = (rng.integers(-3, 4, lhs) + (1j * rng.integers(-2, 3, lhs) if dtype == "complex64"
                                     else 0)).astype(dtype)
    b = (rng.integers(-3, 4, rhs) + (1j * rng.integers(-2, 3, rhs) if dtype == "complex64"
                                     else 0)).astype(dtype)
    if dtype == "float32" and a.size:
        a.reshape(-1)[0] = _NAN
        a.reshape(-1)[-1] = _INF
    want = rjax.jit(rjax.numpy.dot)(a, b)
    with config._override("jaxlite_backend", "interpreter"):
        got = jax.jit(jnp.dot)(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    dn = (((len(lhs) - 1,), (0,)), ((), ()))
    params = dict(dimension_numbers=dn, precision=None, preferred_element_type=None)
    fn = dot_general_p.impl_for(_avals(a, b), params)
    assert fn is np.dot
    with np.errstate(invalid="ignore"):       # inf * 0: nan, as in JAX (no warning there)
        np.testing.assert_array_equal(np.asarray(fn(a, b)),
                                      np.asarray(dot_general_p.impl(a, b, **params)))
