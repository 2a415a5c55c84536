"""jvp / linearize / vjp / grad / value_and_grad / jacfwd / jacrev / hessian /
stop_gradient / custom_jvp / custom_vjp / checkpoint against real JAX: values, output
structure, shapes, dtypes, weak types, and the exception types of bad uses."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp
from _both import raises_like_jax, run_both
from _transform_checks import check_grads

F0 = np.zeros((), dtype=jaxlite.dtypes.float0)
X3 = np.array([0.3, -1.2, 2.0], np.float32)
M23 = np.arange(6, dtype=np.float32).reshape(2, 3) / 5 - 0.4


def _f(n, x, y):
    return n.sum(n.sin(x) * y) + n.sum(y ** 2)


CASES = {
    # grad / value_and_grad
    "grad_vec": lambda m, n: m.grad(lambda x: n.sum(n.tanh(x) ** 2))(X3),
    "grad_pyfloat_weak": lambda m, n: m.grad(lambda x: x * x)(2.0),
    "grad_strong_scalar": lambda m, n: m.grad(lambda x: x * x)(np.float32(2.0)),
    "grad_weak_in_strong_out": lambda m, n: m.grad(lambda x: x * n.float32(2))(2.0),
    "grad_const_out": lambda m, n: m.grad(lambda x: n.float32(2.0))(3.0),
    "grad_argnums_tuple": lambda m, n: m.grad(lambda x, y: _f(n, x, y), argnums=(0, 1))(
        X3, M23),
    "grad_argnums_neg": lambda m, n: m.grad(lambda x, y: _f(n, x, y), argnums=-1)(X3, M23),
    "grad_argnums_1": lambda m, n: m.grad(lambda x, y: _f(n, x, y), argnums=1)(X3, M23),
    "grad_pytree": lambda m, n: m.grad(
        lambda p: n.sum(p["w"] @ p["b"][0]) * p["s"])(
        {"w": M23, "b": [X3, 1.0], "s": np.float32(1.5)}),
    "grad_list_in": lambda m, n: m.grad(lambda x: x[0] * x[1])([3.0, 2.0]),
    "value_and_grad": lambda m, n: m.value_and_grad(lambda x, y: _f(n, x, y),
                                                    argnums=(0, 1))(X3, M23),
    "grad_has_aux": lambda m, n: m.grad(lambda x: (n.sum(x ** 2), {"m": n.mean(x)}),
                                        has_aux=True)(X3),
    "value_and_grad_aux": lambda m, n: m.value_and_grad(
        lambda x: (n.sum(x ** 3), (x * 2, n.max(x))), has_aux=True)(X3),
    "grad_allow_int": lambda m, n: m.grad(lambda x, i: x * i, argnums=(0, 1),
                                          allow_int=True)(2.0, 3),
    "grad_holomorphic": lambda m, n: m.grad(lambda z: z * z + 3 * z,
                                            holomorphic=True)(np.complex64(1 + 2j)),
    "grad_kwargs": lambda m, n: m.grad(lambda x, scale=1.0: n.sum(x * scale))(X3, scale=3.0),
    "grad_grad": lambda m, n: m.grad(m.grad(lambda x: n.tanh(x) ** 3))(0.3),
    "grad_stop_gradient": lambda m, n: m.grad(lambda x: x * m.lax.stop_gradient(x * x))(3.0),
    "stop_gradient_tree": lambda m, n: m.lax.stop_gradient({"a": n.ones(2), "i": n.arange(3)}),
    "grad_int_index": lambda m, n: m.grad(lambda x: n.sum(x[n.array([2, 0])] ** 2))(X3),
    # jvp / linearize
    "jvp": lambda m, n: m.jvp(lambda x, y: _f(n, x, y), (X3, M23), (X3 * 2, M23 + 1)),
    "jvp_weak": lambda m, n: m.jvp(lambda x: x * 2, (2.0,), (n.float32(1.0),)),
    "jvp_pytree_out": lambda m, n: m.jvp(lambda x: {"a": n.sin(x), "b": (x * 2, n.sum(x))},
                                         (X3,), (n.ones(3),)),
    "jvp_float0": lambda m, n: m.jvp(lambda x, i: x * i, (1.5, 2), (1.0, F0)),
    "jvp_int_out": lambda m, n: m.jvp(lambda x: (x * 2, n.argmax(x)), (X3,), (X3,)),
    "jvp_has_aux": lambda m, n: m.jvp(lambda x: (n.sin(x), n.cos(x)), (X3,), (X3,),
                                      has_aux=True),
    "jvp_list_args": lambda m, n: m.jvp(lambda x: x * 3, [1.0], [2.0]),
    "linearize": lambda m, n: (lambda r: (r[0], r[1](X3 * 0.5)))(
        m.linearize(lambda x: n.sin(x) * x, X3)),
    "linearize_aux": lambda m, n: (lambda r: (r[0], r[1](n.ones(3)), r[2]))(
        m.linearize(lambda x: (n.exp(x), n.sum(x)), X3, has_aux=True)),
    # vjp
    "vjp": lambda m, n: (lambda r: (r[0], r[1](n.ones((2, 3)))))(
        m.vjp(lambda x, y: n.sin(x) * y, X3, M23)),
    "vjp_pytree": lambda m, n: (lambda r: r[1]({"a": n.ones(3), "b": 2.0}))(
        m.vjp(lambda p: {"a": p[0] * p[1], "b": n.sum(p[0])}, (X3, 2.0))),
    "vjp_int_arg": lambda m, n: (lambda r: r[1](n.ones(3)))(m.vjp(lambda x, i: x * i, X3, 2)),
    "vjp_int_out_ct": lambda m, n: (lambda r: r[1]((n.ones(3), F0)))(
        m.vjp(lambda x, i: (x * i, i), X3, 2)),
    "vjp_has_aux": lambda m, n: (lambda r: (r[1](n.ones(3)), r[2]))(
        m.vjp(lambda x: (x * 2, n.sum(x)), X3, has_aux=True)),
    "vjp_weak_ct": lambda m, n: (lambda r: r[1](1.0))(m.vjp(lambda x: x * n.float32(2), 2.0)),
    # jacobians, hessian
    "jacfwd_tree": lambda m, n: m.jacfwd(lambda x: {"a": x * 2, "b": n.sum(x)})(X3),
    "jacrev_tree": lambda m, n: m.jacrev(lambda x: {"a": x * 2, "b": n.sum(x)})(X3),
    "jacfwd_argnums": lambda m, n: m.jacfwd(lambda x, y: {"a": x * y, "b": n.sum(x)},
                                            argnums=(0, 1))(X3, M23),
    "jacrev_argnums": lambda m, n: m.jacrev(lambda x, y: {"a": x * y, "b": n.sum(x)},
                                            argnums=(0, 1))(X3, M23),
    "jacrev_dict_in": lambda m, n: m.jacrev(lambda p: p["a"] * p["b"])(
        {"a": X3, "b": np.float32(2.0)}),
    "jacfwd_scalar_weak": lambda m, n: m.jacfwd(lambda x: x * 2.0)(2.0),
    "jacrev_scalar_weak": lambda m, n: m.jacrev(lambda x: x * 2.0)(2.0),
    "jacrev_aux": lambda m, n: m.jacrev(lambda x: (n.sin(x), x.sum()), has_aux=True)(X3),
    "jacfwd_aux": lambda m, n: m.jacfwd(lambda x: (n.sin(x), x.sum()), has_aux=True)(X3),
    "jacrev_holo": lambda m, n: m.jacrev(lambda z: z * z, holomorphic=True)(
        np.array([1 + 1j, 2 - 1j], np.complex64)),
    "jacfwd_holo": lambda m, n: m.jacfwd(lambda z: z * z, holomorphic=True)(
        np.array([1 + 1j, 2 - 1j], np.complex64)),
    "hessian": lambda m, n: m.hessian(lambda x: n.sum(n.tanh(x) ** 3))(X3),
    "hessian_argnums": lambda m, n: m.hessian(lambda x, y: n.sum(n.sin(x) * y),
                                              argnums=(0, 1))(X3, M23),
    "hessian_dict": lambda m, n: m.hessian(lambda p: n.sum(p["a"] ** 2 * p["b"]))(
        {"a": X3[:2], "b": X3[1:]}),
    "hessian_aux": lambda m, n: m.hessian(lambda x: (n.sum(x ** 3), x), has_aux=True)(X3),
    # checkpoint
    "checkpoint_value": lambda m, n: m.checkpoint(lambda x: n.sin(n.sin(x)))(X3),
    "checkpoint_grad": lambda m, n: m.grad(m.checkpoint(lambda x: n.sum(n.sin(n.sin(x)))))(X3),
    "remat_grad_grad": lambda m, n: m.grad(m.grad(m.remat(lambda x: n.sin(n.sin(x)))))(1.0),
    "remat_pytree": lambda m, n: m.grad(m.remat(lambda p: p["a"] * p["b"]))(
        {"a": 1.0, "b": 2.0}),
    "checkpoint_jit_grad": lambda m, n: m.jit(m.grad(m.checkpoint(
        lambda x: n.sum(n.exp(n.sin(x))))))(X3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_jax(name, rjax):
    run_both(CASES[name], rjax)


def test_checkpoint_residuals_are_inputs():
    # under linearize, the staged (linear) program of a checkpointed function keeps only
    # the inputs as residuals; its value and derivative equal those without checkpoint
    f = lambda x: ljnp.sum(ljnp.sin(ljnp.sin(ljnp.sin(x))))   # noqa: E731
    x = ljnp.asarray(X3)
    from jaxlite.core import ad
    lin_plain = ad.linearize_flat(lambda x: [f(x)], [x])
    lin_ckpt = ad.linearize_flat(lambda x: [jaxlite.checkpoint(f)(x)], [x])
    assert len(lin_plain.consts) > 1
    res = [np.asarray(c) for c in lin_ckpt.consts if np.ndim(c) > 0]
    assert len(res) == 1 and np.array_equal(res[0], X3)
    np.testing.assert_allclose(jaxlite.grad(jaxlite.checkpoint(f))(x), jaxlite.grad(f)(x),
                               rtol=1e-6)


# ---- custom_jvp / custom_vjp ---------------------------------------------------------------

def _cjvp(m, n):
    @m.custom_jvp
    def f(x, y):
        return n.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        return f(x, y), 2.0 * n.cos(x) * y * tx + n.sin(x) * ty   # deliberately not the
    return f                                                      # true derivative


def _cjvp_nondiff(m, n):
    @functools.partial(m.custom_jvp, nondiff_argnums=(0,))
    def f(k, x):
        return x ** k

    @f.defjvp
    def f_jvp(k, primals, tangents):
        (x,), (tx,) = primals, tangents
        return f(k, x), 10.0 * k * tx
    return f


def _cjvps(m, n):
    f = m.custom_jvp(lambda x, y: x * y)
    f.defjvps(lambda g, ans, x, y: g * y * 3, lambda g, ans, x, y: g * x * 5)
    return f


def _cvjp(m, n):
    @m.custom_vjp
    def f(x, y):
        return n.sin(x) * y

    def fwd(x, y):
        return f(x, y), (n.cos(x), n.sin(x), y)

    def bwd(res, g):
        c, s, y = res
        return 3 * c * y * g, s * g
    f.defvjp(fwd, bwd)
    return f


def _cvjp_nondiff(m, n):
    @functools.partial(m.custom_vjp, nondiff_argnums=(0,))
    def f(k, x):
        return x * k

    def fwd(k, x):
        return f(k, x), None

    def bwd(k, res, g):
        return (g * k * 10,)
    f.defvjp(fwd, bwd)
    return f


XS = np.array([0.5, 1.0, -0.7], np.float32)
CUSTOM = {
    "cjvp_value": lambda m, n: _cjvp(m, n)(XS, 2.0),
    "cjvp_grad": lambda m, n: m.grad(_cjvp(m, n), argnums=(0, 1))(1.0, 2.0),
    "cjvp_jvp": lambda m, n: m.jvp(_cjvp(m, n), (XS, XS), (XS, XS * 0 + 1)),
    "cjvp_vmap": lambda m, n: m.vmap(_cjvp(m, n))(XS, XS),
    "cjvp_vmap_grad": lambda m, n: m.vmap(m.grad(_cjvp(m, n)))(XS, XS),
    "cjvp_grad_vmap": lambda m, n: m.grad(lambda x: n.sum(m.vmap(_cjvp(m, n))(x, XS)))(XS),
    "cjvp_jit_grad": lambda m, n: m.jit(m.grad(_cjvp(m, n)))(1.0, 2.0),
    "cjvp_grad_jit": lambda m, n: m.grad(m.jit(_cjvp(m, n)))(1.0, 2.0),
    "cjvp_grad_grad": lambda m, n: m.grad(m.grad(_cjvp(m, n)))(1.0, 2.0),
    "cjvp_nondiff": lambda m, n: m.grad(_cjvp_nondiff(m, n), argnums=1)(3, 2.0),
    "cjvp_nondiff_jit": lambda m, n: m.jit(m.grad(_cjvp_nondiff(m, n), argnums=1),
                                           static_argnums=0)(3, 2.0),
    "cjvp_defjvps": lambda m, n: m.grad(_cjvps(m, n), argnums=(0, 1))(2.0, 3.0),
    "cjvp_jacfwd": lambda m, n: m.jacfwd(_cjvp(m, n))(XS, XS),
    "cvjp_value": lambda m, n: _cvjp(m, n)(XS, 2.0),
    "cvjp_grad": lambda m, n: m.grad(_cvjp(m, n), argnums=(0, 1))(1.0, 2.0),
    "cvjp_vmap_grad": lambda m, n: m.vmap(m.grad(_cvjp(m, n)))(XS, XS),
    "cvjp_grad_vmap": lambda m, n: m.grad(lambda x: n.sum(m.vmap(_cvjp(m, n))(x, XS)))(XS),
    "cvjp_grad_vmap_unmapped": lambda m, n: m.grad(
        lambda y: n.sum(m.vmap(_cvjp(m, n), in_axes=(0, None))(XS, y)))(np.float32(2.0)),
    "cvjp_jit_grad": lambda m, n: m.jit(m.grad(_cvjp(m, n)))(1.0, 2.0),
    "cvjp_grad_jit": lambda m, n: m.grad(m.jit(_cvjp(m, n)))(1.0, 2.0),
    "cvjp_jacrev": lambda m, n: m.jacrev(_cvjp(m, n))(XS, XS),
    "cvjp_nondiff": lambda m, n: m.grad(_cvjp_nondiff(m, n), argnums=1)(3.0, 2.0),
    "cvjp_nondiff_vmap": lambda m, n: m.vmap(m.grad(_cvjp_nondiff(m, n), argnums=1),
                                             in_axes=(None, 0))(3.0, XS),
}


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_custom_like_jax(name, rjax):
    run_both(CUSTOM[name], rjax)


def test_custom_vjp_forward_mode_raises(rjax):
    raises_like_jax(lambda m, n: m.jvp(_cvjp(m, n), (1.0, 2.0), (1.0, 1.0)), rjax,
                    match="forward-mode")
    raises_like_jax(lambda m, n: m.jacfwd(_cvjp(m, n))(XS, 2.0), rjax, match="forward-mode")


# ---- derivatives against finite differences --------------------------------------------------

@pytest.mark.parametrize("f", [
    lambda x, y: ljnp.sum(ljnp.tanh(x @ y)),
    lambda x, y: ljnp.max(x, axis=0) * ljnp.sum(y),
    lambda x, y: ljnp.where(x > 0, x ** 2, ljnp.exp(x)).mean() + ljnp.linalg.norm(y),
])
def test_check_grads_order2(f):
    check_grads(f, (M23 + 0.05, M23.T * 2), order=2)


# ---- errors -----------------------------------------------------------------------------------

ERRORS = {
    "grad_nonscalar": (lambda m, n: m.grad(lambda x: x * 2)(X3), "scalar-output"),
    "grad_list_out": (lambda m, n: m.grad(lambda x: [x])(1.0), "scalar-output"),
    "grad_int_input": (lambda m, n: m.grad(lambda x: x * 1.0)(3), "int32.*allow_int"),
    "grad_int_output": (lambda m, n: m.grad(lambda x: (x > 0).astype(n.int32))(1.0),
                        "output.*int32"),
    "grad_bool_output": (lambda m, n: m.grad(lambda x: x > 0)(1.0), "bool"),
    "grad_complex_output": (lambda m, n: m.grad(lambda x: x * 1j)(1.0), "holomorphic"),
    "grad_holo_real_input": (lambda m, n: m.grad(lambda x: x, holomorphic=True)(1.0),
                             "complex inputs"),
    "grad_argnums_oob": (lambda m, n: m.grad(lambda x: x, argnums=1)(3.0), "argnums=1"),
    "grad_non_array_arg": (lambda m, n: m.grad(lambda x: 1.0)("a"), "cannot be used as an array"),
    "grad_non_array_out": (lambda m, n: m.grad(lambda x: "a")(1.0), "cannot be used as an array"),
    "grad_not_callable": (lambda m, n: m.grad(3)(1.0), "callable"),
    "grad_bad_aux": (lambda m, n: m.grad(lambda x: x, has_aux=True)(3.0), "pair"),
    "vjp_bad_aux": (lambda m, n: m.vjp(lambda x: x, 1.0, has_aux=True), "pair"),
    "jvp_not_tuple": (lambda m, n: m.jvp(lambda x: x, X3, X3), "tuples or lists"),
    "jvp_tree": (lambda m, n: m.jvp(lambda x: x, (X3,), ([X3],)), "tree structure"),
    "jvp_shape": (lambda m, n: m.jvp(lambda x: x, (X3,), (X3[:2],)), r"\(3,\).*\(2,\)"),
    "jvp_dtype": (lambda m, n: m.jvp(lambda x: x, (X3,), (n.ones(3, n.int32),)), "int32"),
    "jvp_int_primal_float_tangent": (lambda m, n: m.jvp(lambda x: x, (2,), (1.0,)), "float0"),
    "jvp_non_array": (lambda m, n: m.jvp(lambda x: x, ("a",), ("a",)),
                      "cannot be used as an array"),
    "vjp_ct_shape": (lambda m, n: m.vjp(lambda x: x * 2, X3)[1](n.ones(2)), r"\[2\].*\[3\]"),
    "vjp_ct_dtype": (lambda m, n: m.vjp(lambda x: x * 2, X3)[1](n.ones(3, n.int32)), "int32"),
    "vjp_ct_f16": (lambda m, n: m.vjp(lambda x: x * 2, X3)[1](n.ones(3, n.float16)),
                   "float16"),
    "vjp_ct_tree": (lambda m, n: m.vjp(lambda x: x * 2, X3)[1]((n.ones(3),)), "tree"),
    "vjp_ct_none": (lambda m, n: m.vjp(lambda x: (x, x), 1.0)[1]((1.0, None)), "tree"),
    "linearize_tangent_shape": (lambda m, n: m.linearize(lambda x: x * x, 1.0)[1](n.ones(3)),
                                "tangent"),
    "jacfwd_int_input": (lambda m, n: m.jacfwd(lambda x: x)(1), "inputs.*int32"),
    "jacfwd_complex_input": (lambda m, n: m.jacfwd(lambda x: x)(1j), "holomorphic"),
    "jacfwd_holo_real": (lambda m, n: m.jacfwd(lambda x: x, holomorphic=True)(1.0),
                         "complex inputs"),
    "jacrev_int_input": (lambda m, n: m.jacrev(lambda x: x)(1), "allow_int"),
    "jacrev_int_output": (lambda m, n: m.jacrev(lambda x: (x > 0).astype(n.int32))(1.0),
                          "outputs.*int32"),
    "jacrev_complex_output": (lambda m, n: m.jacrev(lambda x: x * 1j)(1.0), "holomorphic"),
    "jacrev_holo_real_output": (lambda m, n: m.jacrev(lambda x: x.real,
                                                      holomorphic=True)(1 + 1j),
                                "complex outputs"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_jax(name, rjax):
    case, match = ERRORS[name]
    raises_like_jax(case, rjax, match=match)
