"""lax.custom_linear_solve and lax.custom_root against real JAX: values, dtypes, weak types
and shapes; jvp / vjp / grad (against JAX and against finite differences); vmap; jit;
pytree right-hand sides; auxiliary outputs; the error cases."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

from _both import raises_like_jax
from oracle import assert_like_jax

RNG = np.random.default_rng(1)
A0 = (RNG.standard_normal((3, 3)) + 4 * np.eye(3)).astype(np.float32)
S0 = (A0 @ A0.T).astype(np.float32)
B0 = RNG.standard_normal(3).astype(np.float32)


def _problems(j, jnp_):
    """Functions of (A, b) built on the same API in jaxlite and in JAX."""
    L = j.lax

    def nonsym(A, b):
        return L.custom_linear_solve(lambda x: A @ x, b, lambda mv, r: jnp_.linalg.solve(A, r),
                                     lambda vm, r: jnp_.linalg.solve(A.T, r))

    def sym(A, b):
        S = A @ A.T
        return L.custom_linear_solve(lambda x: S @ x, b,
                                     lambda mv, r: jnp_.linalg.solve(S, r), symmetric=True)

    def iterative(A, b):
        # the solver is a while loop (never differentiated): Richardson iterations on the
        # diagonally dominant A, preconditioned by its diagonal
        def richardson(mv, r):
            d = jnp_.diagonal(A)

            def body(c):
                x, k = c
                return x + (r - mv(x)) / d, k + 1
            return j.lax.while_loop(lambda c: c[1] < 60, body, (jnp_.zeros_like(r), 0))[0]
        return L.custom_linear_solve(lambda x: A @ x, b, richardson,
                                     lambda vm, r: jnp_.linalg.solve(A.T, r))

    def tree(A, b):
        mv = lambda t: {"u": A @ t["u"], "v": 2.0 * t["v"]}      # noqa: E731
        sv = lambda m, t: {"u": jnp_.linalg.solve(A, t["u"]), "v": t["v"] / 2.0}  # noqa: E731
        tsv = lambda m, t: {"u": jnp_.linalg.solve(A.T, t["u"]), "v": t["v"] / 2.0}  # noqa
        out = L.custom_linear_solve(mv, {"u": b, "v": b[:2] * b[1]}, sv, tsv)
        return out["u"] * out["v"].sum()

    def aux(A, b):
        x, n = L.custom_linear_solve(lambda x: A @ x, b,
                                     lambda mv, r: (jnp_.linalg.solve(A, r), jnp_.sum(r)),
                                     lambda vm, r: (jnp_.linalg.solve(A.T, r), r[0]),
                                     has_aux=True)
        return x * n
    return {"nonsym": nonsym, "sym": sym, "iterative": iterative, "tree": tree, "aux": aux}


NAMES = ["nonsym", "sym", "iterative", "tree", "aux"]


def _both(rjax, rjnp, name):
    return _problems(jaxlite, jnp)[name], _problems(rjax, rjnp)[name]


def _close(got, want, tol=2e-4):
    gl, wl = jaxlite.tree_util.tree_leaves(got), [w for w in _jax_leaves(want)]
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert_like_jax(g, w, rtol=tol, atol=tol)


def _jax_leaves(x):
    import jax
    return jax.tree_util.tree_leaves(x)


def _each_raises_like_jax(cases, rjax):
    """``cases(m, mnp)`` (m, mnp: jaxlite or JAX and its numpy) gives a dict of calls; each
    must raise in JAX, and in jaxlite an exception of JAX's type."""
    for name in cases(jaxlite, jnp):
        try:
            raises_like_jax(lambda m, mnp: cases(m, mnp)[name](), rjax)
        except BaseException as e:
            e.add_note(f"error case {name!r}")
            raise


@pytest.mark.parametrize("name", NAMES)
def test_values_jvp_vjp_like_jax(name, rjax, rjnp):
    f, g = _both(rjax, rjnp, name)
    _close(f(A0, B0), g(A0, B0))
    tA = RNG.standard_normal((3, 3)).astype(np.float32)
    tb = RNG.standard_normal(3).astype(np.float32)
    _close(jaxlite.jvp(f, (A0, B0), (tA, tb)), rjax.jvp(g, (A0, B0), (tA, tb)))
    ct = RNG.standard_normal(3).astype(np.float32)
    _close(jaxlite.vjp(f, A0, B0)[1](ct), rjax.vjp(g, A0, B0)[1](ct))
    loss = lambda h: lambda A, b: (h(A, b) ** 2).sum()      # noqa: E731
    _close(jaxlite.grad(loss(f), argnums=(0, 1))(A0, B0),
           rjax.grad(loss(g), argnums=(0, 1))(A0, B0))


@pytest.mark.parametrize("name", ["nonsym", "sym", "tree"])
def test_derivatives_against_finite_differences(name):
    f = _problems(jaxlite, jnp)[name]
    A, b = A0.astype(np.float64), B0.astype(np.float64)
    tA = RNG.standard_normal((3, 3))
    tb = RNG.standard_normal(3)
    eps = 1e-3
    # central differences in float32 on the exact solution: the solve is direct
    fd = (np.asarray(f((A + eps * tA).astype(np.float32), (b + eps * tb).astype(np.float32)))
          - np.asarray(f((A - eps * tA).astype(np.float32),
                         (b - eps * tb).astype(np.float32)))) / (2 * eps)
    _, t = jaxlite.jvp(f, (A0, B0), (tA.astype(np.float32), tb.astype(np.float32)))
    np.testing.assert_allclose(np.asarray(t), fd, rtol=2e-2, atol=2e-3)
    # reverse mode agrees with forward mode: <ct, J t> == <J^T ct, t>
    ct = RNG.standard_normal(3).astype(np.float32)
    gA, gb = jaxlite.vjp(f, A0, B0)[1](ct)
    lhs = float(np.dot(ct, np.asarray(t)))
    rhs = float(np.sum(np.asarray(gA) * tA) + np.dot(np.asarray(gb), tb))
    assert abs(lhs - rhs) <= 1e-3 * max(1.0, abs(lhs))


@pytest.mark.parametrize("name", ["nonsym", "iterative", "aux"])
def test_vmap_and_jit_like_jax(name, rjax, rjnp):
    f, g = _both(rjax, rjnp, name)
    As = np.stack([A0, A0 + np.eye(3, dtype=np.float32)])
    Bs = np.stack([B0, 2 * B0])
    for axes, args in [((None, 0), (A0, Bs)), ((0, None), (As, B0)), ((0, 0), (As, Bs)),
                       ((0, 1), (As, Bs.T))]:
        _close(jaxlite.vmap(f, in_axes=axes)(*args), rjax.vmap(g, in_axes=axes)(*args))
    _close(jaxlite.jit(f)(A0, B0), rjax.jit(g)(A0, B0))
    gr = lambda h: lambda A, b: h(A, b).sum()       # noqa: E731
    _close(jaxlite.jit(jaxlite.grad(gr(f)))(A0, B0), rjax.jit(rjax.grad(gr(g)))(A0, B0))
    _close(jaxlite.vmap(jaxlite.grad(gr(f), argnums=1), in_axes=(None, 0))(A0, Bs),
           rjax.vmap(rjax.grad(gr(g), argnums=1), in_axes=(None, 0))(A0, Bs))


@pytest.mark.slow
def test_second_order_like_jax(rjax, rjnp):
    f, g = _both(rjax, rjnp, "nonsym")
    h = lambda k: lambda b: (k(A0, b) ** 3).sum()     # noqa: E731
    _close(jaxlite.hessian(h(f))(B0), rjax.hessian(h(g))(B0), tol=1e-3)
    _close(jaxlite.jacfwd(jaxlite.grad(lambda A: (f(A, B0) ** 2).sum()))(A0),
           rjax.jacfwd(rjax.grad(lambda A: (g(A, B0) ** 2).sum()))(A0), tol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float16])
def test_dtypes_and_weak_types_like_jax(dtype, rjax, rjnp):
    def make(j, jnp_):
        def f(b):
            return j.lax.custom_linear_solve(lambda x: 2 * x, b, lambda mv, r: r / 2,
                                             symmetric=True)
        return f
    b = (np.arange(3) + 1).astype(dtype)
    f, g = make(jaxlite, jnp), make(rjax, rjnp)
    assert_like_jax(f(b), g(b))
    assert_like_jax(jaxlite.jit(f)(b), rjax.jit(g)(b))
    # a weakly typed scalar right-hand side keeps its weak type
    assert_like_jax(f(jnp.asarray(3.0)), g(rjnp.asarray(3.0)))
    # an empty right-hand side
    e = np.zeros((0,), dtype)
    assert_like_jax(f(e), g(e))
    if dtype == np.float32:
        assert_like_jax(jaxlite.grad(lambda b: f(b).sum())(b),
                        rjax.grad(lambda b: g(b).sum())(b))
    # solve may return another dtype: the result has solve's dtype, as in JAX
    h = lambda j: j.lax.custom_linear_solve(      # noqa: E731
        lambda x: x, b, lambda mv, r: r.astype(np.float16))
    assert_like_jax(h(jaxlite), h(rjax))


def test_staged_as_one_equation():
    A = jnp.asarray(A0)
    jaxpr = jaxlite.make_jaxpr(lambda b: lax.custom_linear_solve(
        lambda x: A @ x, b, lambda mv, r: jnp.linalg.solve(A, r), symmetric=True))(B0)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["custom_linear_solve"]
    assert "custom_linear_solve" in str(jaxpr)


def test_errors_like_jax(rjax):
    def cases(j, jnp_):
        L = j.lax
        mv = lambda x: 2 * x                      # noqa: E731
        sv = lambda m, r: r / 2                   # noqa: E731
        b = jnp_.ones(3)
        return {
            # reverse mode needs a transpose solve
            "no transpose": lambda: j.grad(lambda b: L.custom_linear_solve(mv, b, sv).sum())(b),
            "matvec shape": lambda: L.custom_linear_solve(lambda x: x[:2], b, sv),
            "solve shape": lambda: L.custom_linear_solve(mv, b, lambda m, r: (r, r)),
            "solve tree": lambda: L.custom_linear_solve(mv, b, lambda m, r: [r]),
            "matvec tree": lambda: L.custom_linear_solve(lambda x: {"a": x}, b, sv),
            "aux missing": lambda: L.custom_linear_solve(mv, jnp_.ones(2), sv, has_aux=True),
            "transpose shape": lambda: L.custom_linear_solve(mv, b, sv, lambda m, r: r[:1]),
            "not an array": lambda: L.custom_linear_solve(mv, "b", sv),
        }
    _each_raises_like_jax(cases, rjax)
    # forward mode needs no transpose solve
    t = jaxlite.jvp(lambda b: lax.custom_linear_solve(lambda x: 2 * x, b, lambda m, r: r / 2),
                    (jnp.ones(3),), (jnp.ones(3),))[1]
    np.testing.assert_allclose(np.asarray(t), 0.5)


# ---- custom_root ------------------------------------------------------------------------

def _roots(j, jnp_):
    L = j.lax

    def newton(f, x0):
        return L.fori_loop(0, 25, lambda i, x: x - f(x) / j.grad(f)(x), x0)

    def scalar_tangent_solve(g, y):
        return y / g(1.0)

    def cbrt(a):
        return L.custom_root(lambda x: x ** 3 - a, 1.0, newton, scalar_tangent_solve)

    def vector(a):
        # root of x -> A x + x^3 / 3 - a, by Newton on the whole vector; the tangent system
        # by a (differentiable, transposable) custom_linear_solve of the Jacobian
        A = jnp_.asarray(A0)

        def f(x):
            return A @ x + x ** 3 / 3 - a

        def solve(f, x0):
            return L.fori_loop(0, 30, lambda i, x: x - jnp_.linalg.solve(j.jacfwd(f)(x),
                                                                        f(x)), x0)

        def tangent_solve(g, y):
            J = j.jacfwd(g)(y)
            return L.custom_linear_solve(g, y, lambda m, r: jnp_.linalg.solve(J, r),
                                         lambda m, r: jnp_.linalg.solve(J.T, r))
        return L.custom_root(f, jnp_.zeros(3), solve, tangent_solve)

    def with_aux(a):
        x, n = L.custom_root(lambda x: x ** 3 - a, 1.0,
                             lambda f, x0: (newton(f, x0), x0 * 0 + 25.0),
                             scalar_tangent_solve, has_aux=True)
        return x * n

    def tree(a):
        f = lambda t: {"u": t["u"] ** 2 - a, "v": 3 * t["v"] - a}    # noqa: E731

        def solve(f, t):
            return {"u": newton(lambda u: f({"u": u, "v": t["v"]})["u"], t["u"]),
                    "v": a / 3 + 0 * t["v"]}

        def tangent_solve(g, y):
            du = g({"u": 1.0, "v": 0.0})["u"]
            return {"u": y["u"] / du, "v": y["v"] / 3}
        r = L.custom_root(f, {"u": 1.0, "v": 1.0}, solve, tangent_solve)
        return r["u"] * r["v"]
    return {"cbrt": cbrt, "vector": vector, "aux": with_aux, "tree": tree}


@pytest.mark.parametrize("name", ["cbrt", pytest.param("vector", marks=pytest.mark.slow),
                                  "aux", "tree"])
def test_custom_root_like_jax(name, rjax, rjnp):
    f, g = _roots(jaxlite, jnp)[name], _roots(rjax, rjnp)[name]
    a = np.float32(2.0) if name != "vector" else B0
    tol = 1e-3
    _close(f(a), g(a), tol)
    ta = np.ones_like(a)
    _close(jaxlite.jvp(f, (a,), (ta,)), rjax.jvp(g, (a,), (ta,)), tol)
    loss = lambda h: lambda a: (h(a) ** 2).sum()      # noqa: E731
    _close(jaxlite.grad(loss(f))(a), rjax.grad(loss(g))(a), tol)
    _close(jaxlite.jit(jaxlite.grad(loss(f)))(a), rjax.jit(rjax.grad(loss(g)))(a), tol)
    # derivative against central differences
    eps = 1e-2
    fd = (np.asarray(loss(f)(a + eps * ta)) - np.asarray(loss(f)(a - eps * ta))) / (2 * eps)
    got = np.sum(np.asarray(jaxlite.grad(loss(f))(a)) * ta)
    np.testing.assert_allclose(got, fd, rtol=2e-2, atol=1e-3)
    if name != "vector":
        xs = np.array([1.5, 3.0], np.float32)
        _close(jaxlite.vmap(f)(xs), rjax.vmap(g)(xs), tol)
        _close(jaxlite.vmap(jaxlite.grad(f))(xs), rjax.vmap(rjax.grad(g))(xs), tol)


def test_custom_root_errors_like_jax(rjax):
    def cases(j, jnp_):
        L = j.lax
        ts = lambda g, y: y      # noqa: E731
        g = jnp_.ones(2)
        return {
            "f tree": lambda: L.custom_root(lambda x: [x], g, lambda f, x: x, ts),
            "solve tree": lambda: L.custom_root(lambda x: x, g, lambda f, x: (x, x), ts),
            "tangent_solve tree": lambda: L.custom_root(lambda x: x, g, lambda f, x: x,
                                                        lambda g, y: [y]),
            "aux not a pair": lambda: L.custom_root(lambda x: x, g, lambda f, x: (x, x, x),
                                                    ts, has_aux=True),
            "aux missing": lambda: L.custom_root(lambda x: x, g, lambda f, x: x, ts,
                                                 has_aux=True),
        }
    _each_raises_like_jax(cases, rjax)
    # outputs of another shape than the guess: JAX returns them unchecked (and its
    # derivative would be meaningless); jaxlite raises ValueError (README)
    ts = lambda g, y: y      # noqa: E731
    with pytest.raises(ValueError, match="f\\(\\) output shapes"):
        lax.custom_root(lambda x: x[:1], jnp.ones(2), lambda f, x: x, ts)
    with pytest.raises(ValueError, match="solve\\(\\) output shapes"):
        lax.custom_root(lambda x: x, jnp.ones(2), lambda f, x: x[:1], ts)
    with pytest.raises(ValueError, match="tangent_solve\\(\\) output shapes"):
        lax.custom_root(lambda x: x, jnp.ones(2), lambda f, x: x, lambda g, y: y[:1])
