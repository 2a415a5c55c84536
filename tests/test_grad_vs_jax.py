"""Every differentiable primitive's JVP and VJP against real JAX, through the public lax /
jax.numpy functions with the same names in both libraries (finite-difference checks of
the same primitives are in test_rules.py)."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

from oracle import assert_like_jax

R = np.random.default_rng(7)


def rnd(*shape, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


X = rnd(3, 4)
Y = rnd(3, 4)
POS = rnd(3, 4, lo=0.2, hi=2.0)
UNIT = rnd(3, 4, lo=-0.9, hi=0.9)
IDX = np.array([2, 0, 2], np.int32)

# name -> (function of (lax, numpy, jax), primal arguments)
CASES = {
    # elementwise, unary
    **{n: (lambda L, N, J, n=n: getattr(L, n), (X,)) for n in
       ("neg", "sin", "cos", "tanh", "exp", "exp2", "expm1", "logistic", "atan", "sinh",
        "cosh", "asinh", "erf", "erfc", "abs", "square", "sign", "floor", "ceil", "round",
        "cbrt")},
    **{n: (lambda L, N, J, n=n: getattr(L, n), (POS,)) for n in
       ("log", "log1p", "sqrt", "rsqrt", "lgamma", "digamma")},
    **{n: (lambda L, N, J, n=n: getattr(L, n), (UNIT,)) for n in
       ("asin", "acos", "atanh", "tan")},
    "acosh": (lambda L, N, J: L.acosh, (POS + 1.1,)),
    "integer_pow": (lambda L, N, J: lambda x: L.integer_pow(x, 3), (X,)),
    "convert_element_type": (lambda L, N, J: lambda x: L.convert_element_type(
        x, np.float64 if False else np.float16), (X,)),
    "stop_gradient": (lambda L, N, J: lambda x: x * L.stop_gradient(x), (X,)),
    # elementwise, binary and more
    **{n: (lambda L, N, J, n=n: getattr(L, n), (X, Y)) for n in
       ("add", "sub", "mul", "max", "min", "atan2")},
    "div": (lambda L, N, J: L.div, (X, POS)),
    "rem": (lambda L, N, J: L.rem, (X, POS)),
    "pow": (lambda L, N, J: L.pow, (POS, Y)),
    "complex": (lambda L, N, J: lambda a, b: N.abs(L.complex(a, b)) ** 2, (X, Y)),
    "select_n": (lambda L, N, J: lambda a, b: L.select_n(a > b, a, b * 2), (X, Y)),
    "clamp": (lambda L, N, J: lambda x: L.clamp(-0.5, x, 0.7), (X,)),
    # shapes
    "broadcast_in_dim": (lambda L, N, J: lambda x: L.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
                         (X,)),
    "reshape": (lambda L, N, J: lambda x: L.reshape(x, (4, 3)), (X,)),
    "transpose": (lambda L, N, J: lambda x: L.transpose(x, (1, 0)), (X,)),
    "squeeze": (lambda L, N, J: lambda x: L.squeeze(x[None], (0,)), (X,)),
    "concatenate": (lambda L, N, J: lambda a, b: L.concatenate([a, b * 2], 1), (X, Y)),
    "pad": (lambda L, N, J: lambda x, v: L.pad(x, v, ((1, -1, 1), (0, 2, 0))),
            (X, np.float32(0.5))),
    "rev": (lambda L, N, J: lambda x: L.rev(x, (0, 1)), (X,)),
    "slice": (lambda L, N, J: lambda x: L.slice(x, (0, 1), (3, 4), (2, 2)), (X,)),
    "dynamic_slice": (lambda L, N, J: lambda x: L.dynamic_slice(x, (1, 2), (2, 2)), (X,)),
    "dynamic_update_slice": (lambda L, N, J: lambda x, u: L.dynamic_update_slice(
        x, u, (1, 1)), (X, rnd(2, 2))),
    "copy": (lambda L, N, J: lambda x: N.copy(x) * 2, (X,)),
    # reductions and scans
    **{n: (lambda L, N, J, n=n: lambda x: getattr(L, n)(x, (1,)), (X,)) for n in
       ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")},
    **{n: (lambda L, N, J, n=n: lambda x: getattr(L, n)(x, axis=1), (X,)) for n in
       ("cumsum", "cumprod", "cummax", "cummin")},
    "sort": (lambda L, N, J: lambda x: L.sort(x, dimension=1), (X,)),
    "dot_general": (lambda L, N, J: lambda a, b: L.dot_general(a, b, (((1,), (1,)), ((), ()))),
                    (X, Y)),
    "svd": (lambda L, N, J: lambda x: N.linalg.svd(x, compute_uv=False), (X,)),
    # indexing
    "gather": (lambda L, N, J: lambda x: x[IDX, 1:] * x[..., 2], (X,)),
    "scatter": (lambda L, N, J: lambda x, u: x.at[IDX].add(u) + x.at[1, :2].set(u[0, :2]),
                (X, Y)),
    "scatter_max": (lambda L, N, J: lambda x, u: x.at[np.array([0, 2])].max(u[:2]), (X, Y)),
    # convolution and pooling
    "conv_general_dilated": (lambda L, N, J: lambda x, w: L.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (rnd(2, 5, 5, 2), rnd(3, 3, 2, 3))),
    "reduce_window_max": (lambda L, N, J: lambda x: L.reduce_window(
        x, -np.inf, L.max, (2, 2), (1, 1), "VALID"), (X,)),
    "reduce_window_sum": (lambda L, N, J: lambda x: L.reduce_window(
        x, 0.0, L.add, (2, 2), (1, 2), "SAME"), (X,)),
    # control flow and calls
    "scan": (lambda L, N, J: lambda c, xs: L.scan(
        lambda c, x: (N.tanh(c * x + 0.1), c * x), c, xs), (rnd(4), rnd(5, 4))),
    "cond": (lambda L, N, J: lambda p, x: L.cond(p > 0, lambda v: N.sin(v) * 2,
                                                 lambda v: v * v, x), (np.float32(1), X)),
    "jit": (lambda L, N, J: J.jit(lambda x: N.sin(x) * x), (X,)),
    "checkpoint": (lambda L, N, J: J.checkpoint(lambda x: N.sin(N.sin(x))), (X,)),
    "while": (lambda L, N, J: lambda x: L.while_loop(lambda c: c[0] < 3,
                                                     lambda c: (c[0] + 1, N.sin(c[1]) * 1.5),
                                                     (0, x))[1], (X,)),
    "complex_parts": (lambda L, N, J: lambda a, b: (
        L.real(L.conj(L.complex(a, b)) * L.complex(b, a)) + L.imag(L.complex(a, b * a))),
        (X, Y)),
    "reduce_window_min": (lambda L, N, J: lambda x: L.reduce_window(
        x, np.inf, L.min, (1, 2), (1, 1), "VALID"), (X,)),
    "custom_jvp_call": (lambda L, N, J: lambda x: J.nn.relu(x) * J.nn.relu6(x * 4), (X,)),
    "custom_vjp_call": (lambda L, N, J: _clip_grad(J, N), (X,)),
    "psum": (lambda L, N, J: J.vmap(lambda v: v * L.psum(v, "i"), axis_name="i"), (X,)),
    "debug_callback": (lambda L, N, J: _with_callback(J, N), (X,)),
}
# reverse mode does not apply (JAX raises for it too)
FORWARD_ONLY = {"while"}
# not differentiable in JAX either: bitcast_convert_type (a bit reinterpretation), pmax and
# pmin (no JAX derivative), so they are checked against finite differences only
# (test_rules.py)


def _clip_grad(J, N):
    @J.custom_vjp
    def f(x):
        return N.sin(x)

    def fwd(x):
        return N.sin(x), N.cos(x)

    def bwd(c, g):
        return (N.clip(g * c, -0.5, 0.5),)
    f.defvjp(fwd, bwd)
    return lambda x: f(x) * 2


def _with_callback(J, N):
    def f(x):
        J.debug.callback(lambda v: None, x)
        return N.sin(x) * x
    return f


def _lib(which, rjax):
    if which == "jaxlite":
        return jaxlite.lax, jaxlite.numpy, jaxlite
    return rjax.lax, rjax.numpy, rjax


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_and_vjp_match_jax(rjax, name):
    build, args = CASES[name]
    f_l = build(*_lib("jaxlite", rjax))
    f_j = build(*_lib("jax", rjax))
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    tangents = tuple(rng.standard_normal(np.shape(a)).astype(np.asarray(a).dtype)
                     for a in args)
    if name == "custom_vjp_call":     # forward mode of a custom_vjp function raises
        out_l, out_j = f_l(*args), f_j(*args)
        t_l = t_j = ()
    else:
        out_l, t_l = jaxlite.jvp(f_l, args, tangents)
        out_j, t_j = rjax.jvp(f_j, args, tangents)
    leaves = jaxlite.tree_util.tree_leaves
    for a, b in zip(leaves(out_l), rjax.tree_util.tree_leaves(out_j)):
        assert_like_jax(a, b, rtol=2e-5, atol=2e-5, check_weak=False)
    for a, b in zip(leaves(t_l), rjax.tree_util.tree_leaves(t_j)):
        assert_like_jax(a, b, rtol=2e-4, atol=2e-4, check_weak=False)
    if name in FORWARD_ONLY:
        return
    _, pull_l = jaxlite.vjp(f_l, *args)
    _, pull_j = rjax.vjp(f_j, *args)
    cts = rjax.tree_util.tree_map(
        lambda o: rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype), out_j)
    cts_l = jaxlite.tree_util.tree_unflatten(
        jaxlite.tree_util.tree_structure(out_l), rjax.tree_util.tree_leaves(cts))
    for a, b in zip(pull_l(cts_l), pull_j(cts)):
        assert_like_jax(a, b, rtol=2e-4, atol=2e-4, check_weak=False)
