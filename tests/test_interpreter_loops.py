"""The interpreter backend generates loops: a ``scan``/``while`` equation (and a ``cond``)
becomes a Python loop in the program's generated source, its body a generated function of
its own (nested loops too), instead of the primitive's implementation interpreting the
body equation by equation at every step.

Checked against real JAX: values, dtypes, shapes (float32/int32/bool/float16 carries,
reverse, several xs, length 0, ``length`` alone, while with 0 and many steps, fori_loop,
nested loops, closed-over constants, grad and vmap through scan); the caller's arrays are
never written and the returned carries own their memory; the executable's text shows the
body functions and the loops; the primitives' implementations are not called.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.backends.interpreter import InterpretedExecutable
from jaxlite.primitives.control_flow import cond_p, scan_p, while_p
from jaxlite.tree_util import tree_flatten

from oracle import assert_like_jax

F32, F16, I32 = np.float32, np.float16, np.int32


@pytest.fixture(autouse=True)
def _interpreter_backend():
    with jaxlite.config._override("jaxlite_backend", "interpreter"):
        yield


@pytest.fixture
def no_impls(monkeypatch):
    """The loop and branch primitives' implementations raise: a jitted program must run
    its generated loops, never them."""
    def boom(*a, **k):
        raise AssertionError("the primitive's implementation ran")
    for p in (scan_p, while_p, cond_p):
        monkeypatch.setattr(p, "impl", boom)


def _leaves_like_jax(got, want, rtol=1e-6, atol=1e-6):
    g, gt = tree_flatten(got)
    w, wt = tree_flatten(want)
    assert gt == wt, f"structure {gt} != jax {wt}"
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert_like_jax(a, b, rtol=rtol, atol=atol)


def _check(rjax, make, *args, rtol=1e-6, atol=1e-6):
    """``make(lax, jnp)`` run jitted by jaxlite (interpreter) and by real JAX."""
    import jax.numpy as rjnp
    from jax import lax as rlax
    got = jax.jit(make(lax, jnp))(*[jnp.asarray(a) for a in args])
    want = rjax.jit(make(rlax, rjnp))(*args)
    _leaves_like_jax(got, want, rtol, atol)
    return got


def _text(fn, *args) -> str:
    return jax.jit(fn).lower(*args).compile().as_text()


# ---- scan ----------------------------------------------------------------------------------

def test_scan_carries_of_every_dtype(rjax, no_impls):
    def make(L, N):
        def body(c, x):
            f, i, b, h = c
            f = f * 0.5 + x
            i = i + N.int32(3)
            b = N.logical_not(b)
            h = h * N.float16(1.5) - N.float16(0.25)
            return (f, i, b, h), (N.sum(f), i * 2, b, h[0])
        return lambda xs, f0, h0: L.scan(body, (f0, N.int32(7), N.bool_(True), h0), xs)
    xs = np.linspace(-2, 2, 30, dtype=F32).reshape(10, 3)
    got = _check(rjax, make, xs, np.ones(3, F32), np.array([0.5, -1, 2], F16),
                 rtol=2e-3, atol=2e-3)
    (f, i, b, h), (fs, i2, bs, h0s) = got
    assert (i.dtype, b.dtype, h.dtype, bs.dtype) == (I32, np.bool_, F16, np.bool_)
    assert int(i) == 7 + 30


def test_scan_reverse_several_xs(rjax, no_impls):
    def make(L, N):
        def body(c, x):
            a, (b, k) = x["a"], x["bk"]
            c = c * 0.9 + a * N.sum(b) - k.astype(N.float32)
            return c, {"c": c, "k": k * 2, "b": b[::-1]}
        return lambda a, b, k: L.scan(body, N.zeros(2, N.float32),
                                      {"a": a, "bk": (b, k)}, reverse=True)
    a = np.arange(12, dtype=F32).reshape(6, 2) / 7
    b = np.linspace(0, 1, 18, dtype=F32).reshape(6, 3)
    k = np.arange(6, dtype=I32)
    _check(rjax, make, a, b, k, rtol=1e-5)


def test_scan_of_length_zero(rjax, no_impls):
    def make(L, N):
        return lambda c, xs: L.scan(lambda c, x: (c + x, (c * x, N.sum(x))), c, xs)
    c0 = np.arange(3, dtype=F32)
    got = _check(rjax, make, c0, np.zeros((0, 3), F32))
    assert got[1][0].shape == (0, 3) and got[1][1].shape == (0,)
    np.testing.assert_array_equal(np.asarray(got[0]), c0)


def test_scan_length_without_xs(rjax, no_impls):
    def make(L, N):
        return lambda c: L.scan(lambda c, _: (c * 2 + 1, (c, c > 20)), c, None, length=7)
    _check(rjax, make, np.int32(1))
    _check(rjax, lambda L, N: lambda c: L.scan(lambda c, _: (c, None), c, None, length=0),
           np.float32(3))


def test_scan_unroll_same_values(rjax, no_impls):
    def make(unroll):
        return lambda L, N: lambda xs: L.scan(lambda c, x: (N.sin(c) + x, c * x), F32(0.5),
                                              xs, unroll=unroll)
    xs = np.linspace(0, 3, 9, dtype=F32)
    for u in (1, 2, 4, True):
        _check(rjax, make(u), xs, rtol=1e-6)


def test_scan_body_closes_over_constants(rjax, no_impls):
    w = np.linspace(-1, 1, 12, dtype=F32).reshape(3, 4)
    bias = np.arange(4, dtype=F32)

    def make(L, N):
        W, B = N.asarray(w), N.asarray(bias)

        def body(c, x):
            h = N.tanh(c @ W + B + x)
            return h[:3], h
        return lambda c, xs: L.scan(body, c, xs)
    _check(rjax, make, np.ones(3, F32), np.linspace(0, 1, 20, dtype=F32).reshape(5, 4),
           rtol=1e-5, atol=1e-6)


def test_scan_body_returning_constants_and_passing_carries_through(rjax, no_impls):
    def make(L, N):
        return lambda c, d, xs: L.scan(lambda c, x: ((d, c[0]), (N.float32(2.5), x)),
                                       (c, d), xs)
    _check(rjax, make, np.ones(3, F32), np.zeros(3, F32),
           np.arange(8, dtype=F32).reshape(4, 2))


def test_nested_scan_and_cond_in_scan(rjax, no_impls):
    def make(L, N):
        def inner(c, x):
            return c + x, c * x

        def outer(c, xrow):
            c2, ys = L.scan(inner, c, xrow)
            c2 = L.cond(c2 > 10, lambda v: v / 2, lambda v: v + 1, c2)
            return c2, ys[::-1]
        return lambda xs: L.scan(outer, F32(0), xs)
    got = _check(rjax, make, np.linspace(0, 5, 24, dtype=F32).reshape(6, 4), rtol=1e-6)
    assert got[1].shape == (6, 4)


def test_switch_inside_scan(rjax, no_impls):
    def make(L, N):
        def body(c, i):
            c = L.switch(i, [lambda v: v + 1, lambda v: v * 3, lambda v: -v], c)
            return c, c
        return lambda idx: L.scan(body, N.int32(1), idx)
    _check(rjax, make, np.array([0, 1, 2, 5, -3, 1], I32))


# ---- while, fori_loop ---------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 700])
def test_while_loop_zero_and_many_iterations(rjax, no_impls, n):
    def make(L, N):
        def cond(s):
            return s[0] < n

        def body(s):
            i, x, acc = s
            return i + 1, x * 0.999 + 0.001, acc + N.sum(x)
        return lambda x: L.while_loop(cond, body, (N.int32(0), x, N.float32(0)))
    _check(rjax, make, np.linspace(0, 1, 5, dtype=F32), rtol=1e-5)


@pytest.mark.parametrize("static", [True, False])
def test_fori_loop(rjax, no_impls, static):
    def make(L, N):
        def f(x, n):
            hi = 40 if static else n
            return L.fori_loop(0, hi, lambda i, c: (c[0] * 1.01 + i, c[1] + i), (x, 0))
        return f
    _check(rjax, make, np.ones(4, F32), np.int32(40), rtol=1e-5)


def test_scan_inside_while(rjax, no_impls):
    def make(L, N):
        def body(s):
            k, c = s
            c, _ = L.scan(lambda c, x: (c * x + 1, None), c, N.arange(1., 4.))
            return k + 1, c / 10
        return lambda c: L.while_loop(lambda s: s[0] < 5, body, (0, c))
    _check(rjax, make, np.array([0.5, 2.0], F32), rtol=1e-6)


# ---- transformations through the loop ------------------------------------------------------

def test_grad_through_scan(rjax, no_impls):
    def make(L, N):
        def loss(w, xs):
            def body(c, x):
                c = N.tanh(c * w + x)
                return c, c * c
            c, ys = L.scan(body, N.zeros(3, N.float32), xs)
            return N.sum(ys) + N.sum(c * w)
        return loss
    import jax.numpy as rjnp
    from jax import lax as rlax
    w = np.array([0.5, -0.3, 1.2], F32)
    xs = np.linspace(-1, 1, 24, dtype=F32).reshape(8, 3)
    got = jax.jit(jax.grad(make(lax, jnp)))(jnp.asarray(w), jnp.asarray(xs))
    want = rjax.jit(rjax.grad(make(rlax, rjnp)))(w, xs)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-6)


def test_vmap_of_scan(rjax, no_impls):
    def make(L, N):
        def f(c, xs):
            return L.scan(lambda c, x: (c * x + 1, c - x), c, xs)
        return lambda c, xs: __import__("jax" if L is not lax else "jaxlite").vmap(f)(c, xs)
    _check(rjax, make, np.arange(4, dtype=F32),
           np.linspace(0, 1, 20, dtype=F32).reshape(4, 5), rtol=1e-6)


# ---- ownership -----------------------------------------------------------------------------

def test_arguments_are_never_written_and_results_own_their_memory():
    # every body operation could run in place (elementwise, same shape and dtype) if the
    # body took its parameters for its own buffers
    def f(c, k, xs):
        def body(c, x):
            c2 = (c + x) * 2.0 - k
            return c2, x * 3.0
        c, ys = lax.scan(body, c, xs)
        d = lax.while_loop(lambda d: d[0] < 100, lambda d: d * 2.0 + 1.0, c)
        return c, ys, d
    c0 = np.arange(4, dtype=F32)
    k0 = np.full(4, 0.5, F32)
    xs0 = np.linspace(0, 1, 12, dtype=F32).reshape(3, 4)
    args = [jnp.asarray(a) for a in (c0, k0, xs0)]
    views = [np.asarray(a) for a in args]
    outs = jax.jit(f)(*args)
    for v, a in zip(views, (c0, k0, xs0)):
        np.testing.assert_array_equal(v, a)
    for o in outs:
        for v in views:
            assert not np.shares_memory(np.asarray(o), v)
    c_ref = c0.copy()
    for x in xs0:
        c_ref = (c_ref + x) * F32(2) - k0
    np.testing.assert_allclose(np.asarray(outs[0]), c_ref, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(outs[1]), xs0 * 3, rtol=1e-6)


def test_carries_passed_through_or_zero_steps_do_not_alias_operands():
    init = np.arange(3, dtype=F32)
    xs = np.ones((4, 3), F32)
    xs0 = np.ones((0, 3), F32)
    for x in (xs, xs0):
        closed = jax.make_jaxpr(lambda c, xs: lax.scan(lambda c, x: (c, x), c, xs))(init, x)
        c, ys = InterpretedExecutable(closed, "f").run([init, x])
        assert type(c) is np.ndarray and c.dtype == F32
        assert not np.shares_memory(c, init) and not np.shares_memory(ys, x)
        np.testing.assert_array_equal(c, init)
        np.testing.assert_array_equal(ys, x)
    closed = jax.make_jaxpr(lambda c: lax.while_loop(lambda c: c[0] > 5, lambda c: c, c))(init)
    (c,) = InterpretedExecutable(closed, "g").run([init])
    assert c is not init and not np.shares_memory(c, init)
    # a scanned slice becoming the carry: a view of the operand, copied out
    closed = jax.make_jaxpr(lambda c, xs: lax.scan(lambda c, x: (x, None), c, xs))(init, xs)
    (c,) = InterpretedExecutable(closed, "h").run([init, xs])
    assert c.flags.owndata and not np.shares_memory(c, xs)


@pytest.mark.parametrize("dtype", [F32, I32, np.bool_, F16])
def test_scalar_carries_are_arrays_of_the_declared_dtype(dtype):
    def f(c, xs):
        def body(c, x):
            if dtype is np.bool_:
                return c ^ x, c
            return c + x, c * x
        return lax.scan(body, c, xs)
    init = np.ones((), dtype)
    xs = (np.arange(5) % 2).astype(dtype)
    for x in (xs, xs[:0]):
        c, ys = InterpretedExecutable(jax.make_jaxpr(f)(init, x), "f").run([init, x])
        assert type(c) is np.ndarray and c.dtype == dtype and c.shape == ()
        assert ys.dtype == dtype and ys.shape == x.shape
        want = init.copy()
        for v in x:
            want = want ^ v if dtype is np.bool_ else (want + v).astype(dtype)
        np.testing.assert_array_equal(c, want)


def test_donated_carry():
    f = jax.jit(lambda c, xs: lax.scan(lambda c, x: (c * 2.0 + x, c), c, xs),
                donate_argnums=0)
    c, ys = f(jnp.ones(1000), jnp.ones((3, 1000)))
    np.testing.assert_array_equal(np.asarray(c), np.full(1000, 15.0, F32))
    np.testing.assert_array_equal(np.asarray(ys)[:, 0], [1, 3, 7])


def test_program_named_like_a_generated_global():
    # the generated globals are f0, u1, lit3, dt_v0, ...: a function of the same name
    # must not replace one of them
    def f0(x):
        return lax.scan(lambda c, x: (c * 2 + x, c), x[0], x)
    got = jax.jit(f0)(jnp.arange(3.))
    assert float(got[0]) == 4.0 and got[1].tolist() == [0.0, 0.0, 1.0]


# ---- the generated text --------------------------------------------------------------------

def test_text_shows_the_generated_loops(rjax):
    def make(L, N):
        def run(x):
            def body(c, _):
                c2, _ = L.scan(lambda d, y: (d + y, None), c, N.ones((2, 3)))
                return c2 * 0.5, N.sum(c2)
            c, ys = L.scan(body, x, None, length=4, reverse=True)
            return L.while_loop(lambda c: c[0] < 10, lambda c: c + 1, c), ys
        return run
    text = _text(make(lax, jnp), jnp.zeros(3))
    assert "def run_scan0(" in text           # the outer body
    assert "def run_scan0_scan1(" in text     # the nested scan's body (its equation 1)
    assert "for _i0 in range(3, -1, -1):" in text     # reverse
    assert "for _i1 in range(2):" in text
    assert "def run_while1_cond(" in text and "def run_while1_body(" in text
    assert "while run_while1_cond(" in text
    # callees come before their caller; the program's own function is last
    assert text.index("def run_scan0_scan1(") < text.index("def run_scan0(") < \
        text.index("def run(")
    got = _check(rjax, make, np.zeros(3, F32))
    assert got[0].tolist() == [10.875] * 3      # (c + 2) / 2 four times, then + 1 to 10


def test_bodies_with_constants_of_their_own():
    # a body ClosedJaxpr that keeps constants (not hoisted into operands): they are globals
    # of the body's generated function; a carry that is one of them is copied out
    from jaxlite.core.avals import ShapedArray
    from jaxlite.core.staging import trace_to_jaxpr
    w = jnp.asarray(np.arange(3, dtype=F32))
    f3 = ShapedArray((3,), np.dtype(F32))
    body = trace_to_jaxpr(lambda c, x: [c * w + x, c - w], [f3, f3])
    passthrough = trace_to_jaxpr(lambda c, x: [w, x], [f3, f3])
    assert body.consts and passthrough.consts
    init = np.ones(3, F32)
    xs = np.arange(12, dtype=F32).reshape(4, 3)
    for b in (body, passthrough):
        closed = jax.make_jaxpr(lambda c, xs: scan_p.bind(
            c, xs, jaxpr=b, num_consts=0, num_carry=1, length=4, reverse=False,
            unroll=1))(init, xs)
        ex = InterpretedExecutable(closed, "f")
        got = ex.run([init, xs])
        want = scan_p.impl(init, xs, jaxpr=b, num_consts=0, num_carry=1, length=4,
                           reverse=False, unroll=1)
        for g, v in zip(got, want):
            assert g.dtype == v.dtype
            np.testing.assert_array_equal(g, v)
        assert "s0_k0" in ex.as_text()
        assert not np.shares_memory(got[0], np.asarray(w))
