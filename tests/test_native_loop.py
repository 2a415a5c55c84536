"""Native scan loops (backends/cpu/_loop.py): a whole ``lax.scan`` compiled to one native
function agrees with the interpreter (floats within a dot's rounding, integers bit for bit,
same dtype, shape and weak type), including reverse scans, several and permuted carries,
pytrees, constants, literals, empty scans, integer carries, dots of every layout and the
indexing ops; unsupported bodies stay on the interpreter and say why; the loop goes
through the persistent compile cache.  Timings belong to bench/ (W5), not here."""
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.config import config


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    # a fresh persistent cache: every loop of this file really goes through Numba
    with config._override("jax_compilation_cache_dir",
                          str(tmp_path_factory.mktemp("loopcache"))):
        yield


def _both(f, *args):
    """(native results, interpreter results, the native program's text)."""
    with config._override("jaxlite_backend", "cpu"), config._override("jaxlite_tiered", False):
        fc = jax.jit(f)
        got = fc(*args)
        text = fc.lower(*args).compile().as_text()
    with config._override("jaxlite_backend", "interpreter"):
        want = jax.jit(f)(*args)
    return got, want, text


def _assert_same(got, want, rtol=1e-5, atol=1e-6):
    g_leaves, w_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(g_leaves, w_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        assert g.weak_type == w.weak_type
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _assert_native(text, n_scans=1):
    assert text.count("native scan loop:") >= 2 * n_scans, text   # report + source header
    assert "scan: interpreter fallback" not in text, text


rng = np.random.default_rng(0)
f32 = np.float32


def _normal(*shape):
    return rng.standard_normal(shape).astype(f32)


def _ints(lo, hi, *shape, dtype=np.int32):
    return rng.integers(lo, hi, shape).astype(dtype)


# ---- the benchmark's RNN (W5, smaller) and many bodies ---------------------------------

def rnn(h0, xs, wx, wh, b):
    def cell(h, x_t):
        h = jnp.tanh(jnp.dot(h, wh) + jnp.dot(x_t, wx) + b)
        return h, h
    return lax.scan(cell, h0, xs)


def test_w5_rnn_native_matches_interpreter_and_numpy():
    h, t = 64, 100
    scale = f32(0.5 / np.sqrt(h))
    args = (np.zeros(h, f32), _normal(t, h), _normal(h, h) * scale, _normal(h, h) * scale,
            np.full(h, 0.1, f32))
    got, want, text = _both(rnn, *args)
    _assert_same(got, want)
    _assert_native(text)
    assert "2 dot loop nest(s)" in text
    hh, ref = args[0], []
    for x in args[1]:
        hh = np.tanh(hh @ args[3] + x @ args[2] + args[4])
        ref.append(hh)
    np.testing.assert_allclose(np.asarray(got[1]), np.array(ref), rtol=1e-5, atol=2e-6)


def test_rnn_like_real_jax(rjax):
    from oracle import assert_like_jax
    args = (np.zeros(8, f32), _normal(5, 8), _normal(8, 8) * f32(0.3),
            _normal(8, 8) * f32(0.3), np.full(8, 0.1, f32))
    with config._override("jaxlite_backend", "cpu"), config._override("jaxlite_tiered", False):
        got = jax.jit(rnn)(*args)

    def rnn_j(h0, xs, wx, wh, b):
        jnp_ = rjax.numpy
        return rjax.lax.scan(lambda h, x: (jnp_.tanh(h @ wh + x @ wx + b),) * 2, h0, xs)
    want = rjax.jit(rnn_j)(*args)
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=1e-5, atol=1e-6)


def reverse_scan(c, xs):
    return lax.scan(lambda c, x: (c * 0.5 + x, c.sum()), c, xs, reverse=True)


def permuted_carries(a, b, n, xs):
    def body(carry, x):
        a, b, n = carry
        return (b, a + x, n + 1), (a * 2, n)
    return lax.scan(body, (a, b, n), xs)


def integer_carry(c, xs):
    return lax.scan(lambda c, x: (c * 3 + x ^ (c >> 2), c % 7), c, xs)


def int64_wrap(c, xs):
    # int64 arithmetic wraps in native code as in NumPy (x64 on for this case)
    return lax.scan(lambda c, x: (c * c + x, -c), c, xs)


def empty_scan(c, xs):
    return lax.scan(lambda c, x: (c + x, c), c, xs)


def pytree_scan(p, xs):
    def body(c, x):
        return ({"a": c["a"] + x["u"], "b": (c["b"][0] * x["v"].sum(),)},
                {"s": c["a"] @ x["m"]})
    return lax.scan(body, p, xs)


def dots_of_every_layout(h, xs, w):
    def body(h, x):
        y = jnp.tanh(x @ w + h.T @ w[:2])                  # matmul, transposed operand
        z = jnp.einsum("ij,kj->ik", x, w)                  # rhs contracted on its last axis
        v = jnp.dot(w[0], w[1]) + jnp.einsum("bi,bi->b", x, x).sum()   # dot products
        return h + v, jnp.sum(y, axis=0) + z[0]
    return lax.scan(body, h, xs)


def batched_dot(h, xs):
    return lax.scan(lambda h, x: (jnp.matmul(x, h) * 0.1, jnp.matmul(h, h)), h, xs)


def integer_dot(h, xs, w):
    return lax.scan(lambda h, x: ((w @ h + x) % 1000, h.sum()), h, xs)


def consts_and_literals(h, xs):
    k = np.arange(3, dtype=f32)
    return lax.scan(lambda h, x: (h * k + 2.0, (h[0], jnp.zeros(2), 7)), h, xs)


def indexing_ops(h, xs):
    def body(c, x):
        i, h = c
        a = jnp.concatenate([h[1:], h[:1]]) + x[::-1]
        b = lax.dynamic_slice(x, (i,), (2,))
        h2 = lax.dynamic_update_slice(a, b * 2, (i + 1,))
        m = jnp.broadcast_to(h2, (3, 4)).T.reshape(-1)[::3]
        return (i + 1, h2 + jnp.arange(4, dtype=jnp.float32) + m), b
    return lax.scan(body, (0, h), xs)


def scalar_carry_only(s, xs):
    return lax.scan(lambda s, x: (jnp.maximum(s, x) - 0.25, s < x), s, xs)


def fori(x):
    return lax.fori_loop(0, 10, lambda i, c: jnp.sin(c) * 1.5 + i, x)


def ys_from_x_and_consts(c, xs, w):
    return lax.scan(lambda c, x: (w, (x, c, w)), c, xs)


def cond_and_switch(h, xs):
    def body(c, x):
        h, i = c
        h = lax.cond(x[0] > 0, lambda a: a * 2, lambda a: jnp.tanh(a) - 1, h)
        # index i - 1 runs from -1 to 4: clamped to the first and last branch
        h = lax.switch(i - 1, [lambda a, b: a + b, lambda a, b: a * b,
                               lambda a, b: a - 1.0], h, x)
        return (h * 0.5, i + 1), lax.cond(i > 2, lambda: 1, lambda: 2)
    return lax.scan(body, (h, 0), xs)


def unsigned_indices_no_xs(x, i):
    # uint32 start indices (one far out of range: clamped, never wrapped); no scanned input
    def body(c, _):
        upd = lax.dynamic_slice(c, (i,), (2,)) + 1
        return lax.dynamic_update_slice(c, upd, (i + np.uint32(1),)), c[0]
    return lax.scan(body, x, None, length=3)


def control_flow_in_the_prepass(h, xs):
    # cond, scan and while over x slices only: all run in the prepass
    def body(h, x):
        a = lax.cond(x[0, 0] > 0, lambda v: v * 2, lambda v: v - 1, x)
        s = lax.scan(lambda c, r: (c + r, c.sum()), jnp.zeros(3), a)
        w = lax.while_loop(lambda c: c[0] < 5, lambda c: c + 1, x[0])
        return h + s[0] + w, s[1]
    return lax.scan(body, h, xs, reverse=True)


CASES = [
    (reverse_scan, lambda: (np.ones(3, f32), _normal(5, 3))),
    (permuted_carries, lambda: (np.ones(4, f32), np.zeros(4, f32), np.int32(0),
                                _normal(7, 4))),
    (integer_carry, lambda: (np.arange(5, dtype=np.int32), _ints(-100, 100, 9, 5))),
    (empty_scan, lambda: (np.ones(3, f32), np.zeros((0, 3), f32))),
    (pytree_scan, lambda: ({"a": np.ones(3, f32), "b": (f32(2.0),)},
                           {"u": _normal(4, 3), "v": _normal(4, 2), "m": _normal(4, 3, 5)})),
    (dots_of_every_layout, lambda: (np.ones((2, 3), f32), _normal(6, 3, 4), _normal(4, 4))),
    (batched_dot, lambda: (_normal(2, 3, 3), _normal(5, 2, 3, 3))),
    (integer_dot, lambda: (np.arange(4, dtype=np.int32), _ints(-9, 9, 6, 4),
                           _ints(-9, 9, 4, 4))),
    (consts_and_literals, lambda: (np.ones(3, f32), _normal(5, 3))),
    (indexing_ops, lambda: (np.ones(4, f32), _normal(6, 4))),
    (scalar_carry_only, lambda: (f32(0.0), _normal(8))),
    (fori, lambda: (np.ones(3, f32),)),
    (ys_from_x_and_consts, lambda: (np.zeros(2, f32), _normal(3, 2), _normal(2))),
    (cond_and_switch, lambda: (np.ones(3, f32), _normal(6, 3))),
    (control_flow_in_the_prepass, lambda: (np.ones(3, f32), _normal(4, 2, 3))),
    (unsigned_indices_no_xs, lambda: (np.arange(6, dtype=f32), np.uint32(3))),
    (unsigned_indices_no_xs, lambda: (np.arange(6, dtype=f32), np.uint32(4_000_000_000))),
]


@pytest.mark.parametrize("f,make_args", CASES, ids=[c[0].__name__ for c in CASES])
def test_native_scan_matches_interpreter(f, make_args):
    got, want, text = _both(f, *make_args())
    _assert_same(got, want)
    _assert_native(text)


def test_int64_carries_wrap_like_the_interpreter(x64):
    c = np.array([3, 2**40, -2**62, 2**63 - 1], np.int64)
    got, want, text = _both(int64_wrap, c, _ints(-2**62, 2**62, 6, 4, dtype=np.int64))
    _assert_same(got, want)
    _assert_native(text)


def test_large_sin_arguments_rerun_exactly():
    # beyond the vectorised sin's range the loop returns a flag and the scan reruns on the
    # interpreter: the results are the interpreter's exactly
    def f(h, xs):
        return lax.scan(lambda h, x: (jnp.sin(h * 1e6 + x), h), h, xs)
    got, want, text = _both(f, np.ones(4, f32), _normal(3, 4))
    _assert_native(text)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


# ---- what stays on the interpreter, visibly --------------------------------------------

def test_unsupported_op_falls_back_visibly():
    def f(h, xs):
        return lax.scan(lambda h, x: (jnp.sort(h + x), h), h, xs)
    got, want, text = _both(f, np.ones(4, f32), _normal(3, 4))
    _assert_same(got, want)
    assert "scan: interpreter fallback (sort in the scan body (no loop code generator))" in text


def nested_loops(h, xs):
    def body(h, x):
        inner_c, inner_ys = lax.scan(lambda a, b: (a * 0.5 + b, a.sum()), h, x, reverse=True)
        n = lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2 + 1, c[1] + 1),
                           (jnp.abs(inner_c[0]), 0))[1]
        return inner_c + n, inner_ys
    return lax.scan(body, h, xs)


def test_nested_scan_and_while_are_inner_loops():
    got, want, text = _both(nested_loops, np.ones(4, f32), _normal(3, 2, 4))
    _assert_same(got, want)
    _assert_native(text)
    src = text[text.index("def kern("):]
    assert src.count("for step in range(3):") == 1 and "while True:" in src


def test_float16_scan_falls_back_visibly():
    got, want, text = _both(empty_scan, np.ones(3, np.float16),
                            _normal(4, 3).astype(np.float16))
    _assert_same(got, want)
    assert "scan: interpreter fallback (a scan operand of dtype float16)" in text


def test_big_dot_stays_on_blas(monkeypatch):
    from jaxlite.backends.cpu import _loop as _cpu_loop
    monkeypatch.setattr(_cpu_loop, "DOT_MAX_MACS", 100)
    got, want, text = _both(integer_dot, np.arange(16, dtype=np.int32),
                            _ints(-9, 9, 3, 16), _ints(-9, 9, 16, 16))
    _assert_same(got, want)
    assert "scan: interpreter fallback (dot_general of 256 multiply-adds per step" in text


def test_generated_source_is_printed():
    _, _, text = _both(reverse_scan, np.ones(3, f32), _normal(2, 3))
    assert "scan body (optimised):" in text
    assert "def kern(" in text and "for step in range(2):" in text
    assert "ix = 1 - step" in text          # reversed


# ---- random bodies ---------------------------------------------------------------------

_UNARY = [jnp.tanh, jnp.sin, jnp.exp, lambda a: a * a, jnp.abs, lambda a: -a]
_BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.minimum,
           lambda a, b: jnp.where(a > b, a, b * 0.5)]
_INT_UNARY = [lambda a: a * 3, lambda a: a >> 1, jnp.abs, lambda a: -a, lambda a: a % 5]
_INT_BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.bitwise_xor,
               lambda a, b: jnp.where(a > b, a, b)]


@settings(max_examples=6, deadline=None)
@given(st.data())
def test_random_scan_bodies(data):
    """Random elementwise/dot/reduction bodies over a float32 and an int32 carry."""
    n = data.draw(st.integers(1, 5), label="n")
    length = data.draw(st.integers(0, 4), label="length")
    reverse = data.draw(st.booleans(), label="reverse")
    ops = data.draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5),
                                       st.integers(0, 3)), min_size=1, max_size=6),
                    label="ops")
    use_dot = data.draw(st.booleans(), label="dot")
    r = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    w = (r.standard_normal((n, n)) * 0.3).astype(f32)

    def body(carry, x):
        fc, ic = carry
        xf, xi = x
        fvals, ivals = [fc, xf, w[0]], [ic, xi]
        for a, b, kind in ops:
            if kind == 0:
                fvals.append(_UNARY[a % len(_UNARY)](fvals[b % len(fvals)] * 0.5))
            elif kind == 1:
                fvals.append(_BINARY[a % len(_BINARY)](fvals[a % len(fvals)],
                                                       fvals[b % len(fvals)]))
            elif kind == 2:
                ivals.append(_INT_UNARY[a % len(_INT_UNARY)](ivals[b % len(ivals)]))
            else:
                ivals.append(_INT_BINARY[a % len(_INT_BINARY)](ivals[a % len(ivals)],
                                                               ivals[b % len(ivals)]))
        new_f = jnp.tanh(fvals[-1] + (fvals[-2] @ w if use_dot else 0.0))
        new_i = (ivals[-1] + ivals[0]) % 1000
        return (new_f, new_i), (jnp.sum(fvals[-1]), ivals[-1])

    def f(fc, ic, xf, xi):
        return lax.scan(body, (fc, ic), (xf, xi), reverse=reverse)

    args = (r.standard_normal(n).astype(f32), r.integers(-50, 50, n).astype(np.int32),
            r.standard_normal((length, n)).astype(f32),
            r.integers(-50, 50, (length, n)).astype(np.int32))
    got, want, text = _both(f, *args)
    _assert_same(got, want, rtol=2e-5, atol=1e-5)
    _assert_native(text)


# ---- the persistent cache ----------------------------------------------------------------

_CHILD = """
import numpy as np, jaxlite as jax, jaxlite.numpy as jnp
from jaxlite.backends.cpu import _cache
@jax.jit
def f(h, xs):
    return jax.lax.scan(lambda h, x: (jnp.tanh(h * 0.5 + x), h), h, xs)
h, hs = f(np.ones(3, np.float32), np.ones((4, 3), np.float32))
print(_cache.stats()["compiled"], _cache.stats()["loaded"], float(np.asarray(hs).sum()))
print(f.lower(np.ones(3, np.float32), np.ones((4, 3), np.float32)).compile().as_text())
"""


def test_second_process_loads_the_loop_from_the_cache(tmp_path):
    import os
    env = dict(os.environ, JAXLITE_BACKEND="cpu", JAXLITE_TIERED="0",
               JAXLITE_CACHE_DIR=str(tmp_path))
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD)], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.splitlines())
    (c1, l1, s1), (c2, l2, s2) = (o[0].split() for o in outs)
    assert "native scan loop" in "\n".join(outs[0])
    assert int(c1) >= 1 and int(c2) == 0 and int(l2) >= 1 and s1 == s2


def test_loop_invariant_equations_run_once_before_the_loop():
    def f(h, xs, w):
        return lax.scan(lambda h, x: (jnp.tanh(h @ (jnp.exp(w) * 0.5) + x), h.sum()), h, xs)
    got, want, text = _both(f, np.ones(4, f32), _normal(5, 4), _normal(4, 4))
    _assert_same(got, want)
    _assert_native(text)
    assert re.search(r"[1-9]\d* hoisted out of the loop", text)
    src = text[text.index("def kern("):]
    assert src.index("_vm_exp(") < src.index("for step in range(5):")


# ---- while loops (lax.while_loop, fori_loop with traced bounds) -------------------------

def _assert_native_while(text):
    assert text.count("native while loop:") >= 2, text
    assert "while: interpreter fallback" not in text, text


def newton_sqrt(a):
    def cond(c):
        x, n = c
        return (jnp.max(jnp.abs(x * x - a)) > 1e-5) & (n < 50)

    def body(c):
        x, n = c
        return (0.5 * (x + a / x), n + 1)
    return lax.while_loop(cond, body, (a, 0))


def fori_traced_bounds(x, n, w):
    return lax.fori_loop(0, n, lambda i, c: jnp.tanh(w @ c) * 0.5 + jnp.sin(c) + i, x)


def zero_trips(x):
    return lax.while_loop(lambda c: c[0] > 100, lambda c: c * 2, x)


def permuted_while(a, b):
    return lax.while_loop(lambda c: c[2] < 5, lambda c: (c[1], c[0] + 1, c[2] + 1), (a, b, 0))


WHILE_CASES = [
    (newton_sqrt, lambda: (np.array([2.0, 9.0, 0.5], f32),)),
    (fori_traced_bounds, lambda: (np.ones(3, f32), np.int32(7), _normal(3, 3))),
    (zero_trips, lambda: (np.ones(3, f32),)),
    (permuted_while, lambda: (np.arange(3, dtype=np.int32), np.zeros(3, np.int32))),
]


@pytest.mark.parametrize("f,make_args", WHILE_CASES, ids=[c[0].__name__ for c in WHILE_CASES])
def test_native_while_matches_interpreter(f, make_args):
    got, want, text = _both(f, *make_args())
    _assert_same(got, want)
    _assert_native_while(text)


def test_while_with_large_sin_arguments_reruns_exactly():
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: jnp.sin(c * 1e6), x)
    got, want, text = _both(f, np.ones(3, f32), np.int32(3))
    _assert_native_while(text)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


_UNFUSED = [c for c in CASES if c[0].__name__ in ("reverse_scan", "pytree_scan",
                                                   "dots_of_every_layout")]


@pytest.mark.parametrize("f,make_args", _UNFUSED, ids=[c[0].__name__ for c in _UNFUSED])
def test_unfused_bodies_run_native(monkeypatch, f, make_args):
    # fusion off (JAXLITE_FUSION=0): the body's reductions and elementwise ops are single
    # equations, each its own loop nest
    with jax.config._override("jaxlite_fusion", False):
        got, want, text = _both(f, *make_args())
    _assert_same(got, want)
    _assert_native(text)
    assert "reduce_sum" in text and " 0 kernel(s)" in text


def test_carry_independent_work_runs_in_the_prepass():
    # W5's input projection x_t @ wx reads no carry: it runs for every step before the
    # step loop; the tanh kernel reads the projection back from the prepass buffer
    h, t = 8, 6
    args = (np.zeros(h, f32), _normal(t, h), _normal(h, h) * f32(0.3),
            _normal(h, h) * f32(0.3), np.full(h, 0.1, f32))
    got, want, text = _both(rnn, *args)
    _assert_same(got, want)
    _assert_native(text)
    assert "1 in the prepass" in text
    src = text[text.index("def kern("):]
    assert src.count("for step in range(6):") == 2

    def reverse_and_ys(c, xs):
        # prepass values used as ys and as carries, reversed, with a rename in between
        def body(c, x):
            u = jnp.sin(x) * 2
            return c + u.reshape(2, 2).sum(), (u, c)
        return lax.scan(body, c, xs, reverse=True)
    got, want, text = _both(reverse_and_ys, f32(0.0), _normal(5, 4))
    _assert_same(got, want)
    _assert_native(text)
    assert re.search(r"[1-9] in the prepass", text)
