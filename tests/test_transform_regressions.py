"""Cases a new-user review found differing from JAX, each compared with real JAX."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax

from oracle import assert_like_jax

X3 = np.array([1.0, 2.0, 3.0], np.float32)


def _both(rjax, f):
    return f(jax, jnp, lax), f(rjax, rjax.numpy, rjax.lax)


@pytest.mark.parametrize("case", ["cond", "closure", "switch", "in_scan"])
def test_grad_through_cond_of_python_scalars(rjax, case):
    # branches whose residuals differ only in weak type
    fs = {
        "cond": lambda J, N, L: J.grad(lambda x: L.cond(x > 2, lambda x: x ** 2,
                                                        lambda x: N.sin(x), x))(3.),
        "closure": lambda J, N, L: J.grad(lambda w: L.cond(w > 2, lambda: w ** 2,
                                                           lambda: N.sin(w)))(1.),
        "switch": lambda J, N, L: J.grad(lambda x: L.switch(
            1, [lambda x: x, lambda x: x ** 2, lambda x: x * 3], x))(3.),
        "in_scan": lambda J, N, L: J.grad(lambda w: L.scan(
            lambda c, x: (L.cond(x > 1.5, lambda c: c * w, lambda c: c + w, c), None), 1.,
            N.array([1., 2., 3.]))[0])(0.5),
    }
    got, want = _both(rjax, fs[case])
    assert_like_jax(got, want, rtol=1e-6)


@pytest.mark.parametrize("bad", ["shape", "dtype"])
def test_custom_jvp_rule_with_wrong_tangent_type_raises(bad):
    @jax.custom_jvp
    def f(x):
        return x * 2

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        wrong = jnp.ones(3) if bad == "shape" else jnp.ones((), jnp.int32)
        return f(x), wrong

    # JAX's text
    want = r"Custom JVP rule must produce .* Expected float32\[\] \(tangent type of float32\[\]\)"
    with pytest.raises(TypeError, match=want):
        jax.jvp(f, (1.0,), (1.0,))
    with pytest.raises(TypeError, match=want):
        jax.grad(f)(1.0)


@pytest.mark.parametrize("kind", ["vjp", "jvp"])
def test_custom_rule_closing_over_a_differentiated_value_raises(kind):
    def outer(w):
        if kind == "vjp":
            @jax.custom_vjp
            def f(x):
                return jnp.sin(x) * w
            f.defvjp(lambda x: (jnp.sin(x) * w, x), lambda x, g: (jnp.cos(x) * w * g,))
        else:
            @jax.custom_jvp
            def f(x):
                return jnp.sin(x) * w
            f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * w * t[0]))
        return jnp.sum(f(X3))
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(outer)(2.0)


def test_abs_derivative_at_zero_is_one(rjax):
    x = np.array([-1.0, 0.0, -0.0, 2.0], np.float32)
    got, want = _both(rjax, lambda J, N, L: J.grad(lambda v: N.sum(N.abs(v)))(x))
    assert_like_jax(got, want)


@pytest.mark.parametrize("idx", [[0, 5], [0, -5], [2, 2, 7]])
def test_out_of_bounds_index_array_drops_its_cotangent(rjax, idx):
    idx = np.array(idx)
    got, want = _both(rjax, lambda J, N, L: J.grad(lambda v: N.sum(v[idx] * 2))(X3))
    assert_like_jax(got, want)
    got, want = _both(rjax, lambda J, N, L: J.jit(J.grad(
        lambda v, i: N.sum(v[i])))(X3, idx))
    assert_like_jax(got, want)


@pytest.mark.parametrize("index", [lambda v: v[5], lambda v: v[-7, 1], lambda v: v[..., 9],
                                   lambda v: v[np.array([1, 5]), 2:]])
def test_static_out_of_bounds_index_gradient(rjax, index):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    got, want = _both(rjax, lambda J, N, L: J.grad(lambda v: N.sum(index(v)))(x))
    assert_like_jax(got, want)


def test_at_multiply_gradients_with_static_indices(rjax):
    got, want = _both(rjax, lambda J, N, L: J.grad(
        lambda x: N.sum(x.at[1].multiply(x[2])))(X3))
    assert_like_jax(got, want)
    got, want = _both(rjax, lambda J, N, L: J.grad(
        lambda v: N.sum(N.asarray(X3).at[0:2].multiply(v)))(np.float32(2.0)))
    assert_like_jax(got, want)


def test_at_multiply_gradient_wrt_updates_with_index_array_is_refused():
    with pytest.raises(NotImplementedError, match="unique"):
        jax.grad(lambda v: jnp.sum(jnp.asarray(X3).at[np.array([0, 0])].multiply(v)))(2.0)


def test_pow_with_integer_exponent(rjax):
    got, want = _both(rjax, lambda J, N, L: (L.pow(np.float32(2.0), np.int32(3)),
                                             J.grad(lambda x: L.pow(x, np.int32(3)))(2.0)))
    assert_like_jax(got[0], want[0])
    # (the gradient's weak type follows the input here; JAX's follows the computation)
    assert_like_jax(got[1], want[1], check_weak=False)


def test_grad_with_repeated_argnums_raises():
    with pytest.raises(TypeError, match="more than once"):
        jax.grad(lambda x, y: x * y, argnums=(0, 0))(1.0, 2.0)


def test_jacfwd_of_integer_output_is_integer_zeros(rjax):
    got, want = _both(rjax, lambda J, N, L: J.jacfwd(lambda x: (x * 2).astype(N.int32))(X3))
    assert_like_jax(got, want)


@pytest.mark.parametrize("case", ["vmap", "grad", "jit", "vmap_arr", "jacrev"])
def test_jit_closing_over_a_transformed_value(rjax, case):
    # the inner jit's program closes over a tracer of the enclosing transformation
    x = np.arange(1.0, 4.0, dtype=np.float32)
    fs = {
        "vmap": lambda J, N: J.vmap(lambda v: J.jit(lambda y: y * v)(2.0))(x),
        "grad": lambda J, N: J.grad(lambda v: J.jit(lambda y: N.sin(y * v))(2.0))(1.5),
        "jit": lambda J, N: J.jit(lambda v: J.jit(lambda y: y * v)(2.0))(1.5),
        "vmap_arr": lambda J, N: J.vmap(lambda v: J.jit(lambda y: y * v)(N.ones(2)))(x),
        "jacrev": lambda J, N: J.jacrev(lambda v: J.jit(lambda y: y * v ** 2)(x))(x),
    }
    got, want = fs[case](jax, jnp), fs[case](rjax, rjax.numpy)
    assert_like_jax(got, want, rtol=1e-6)


def test_jit_under_a_transformation_with_concrete_operands_compiles_once():
    f = jax.jit(lambda y: y * 2)
    out = jax.vmap(lambda v: f(3.0) + v)(X3)
    np.testing.assert_allclose(np.asarray(out), X3 + 6)
    jax.vmap(lambda v: f(3.0) + v)(X3)
    assert f._cache_size() == 1
