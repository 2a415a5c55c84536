"""Regression tests for defects found in review: float32 reduction accuracy, jit donation
argument validation, ``clear_caches`` and ``cost_analysis`` of control flow."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from oracle import assert_like_jax


# --- 1. reduce_sum accumulates float32 exactly enough off the contiguous axis ----------

def _stall_input(shape, axis, dtype=np.float32):
    # one element of 2**24 then ones: a float32 running sum never moves past 2**24
    x = np.ones(shape, dtype)
    idx = [slice(None)] * len(shape)
    idx[axis] = 0
    x[tuple(idx)] = 2.0 ** 24
    return x


@pytest.mark.parametrize("shape,axis", [((3000, 2), 0), ((3000, 3, 2), 0), ((2, 3000, 3), 1),
                                        ((2, 3000), 1), ((3000,), 0)])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_sum_float32_no_stall(rjnp, shape, axis, mode):
    x = _stall_input(shape, axis)
    f = (lambda a: jnp.sum(a, axis=axis))
    got = (jax.jit(f) if mode == "jit" else f)(jnp.asarray(x))
    want = rjnp.sum(rjnp.asarray(x), axis=axis)
    assert_like_jax(got, want, rtol=4e-6, atol=0)   # XLA's own tree rounding: ~2e-6
    ref = x.astype(np.float64).sum(axis=axis)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6)


def test_sum_transposed_and_multi_axis(rjnp):
    # float64 NumPy is the reference here: XLA itself loses the ones in the (0, 2) case
    x = _stall_input((3000, 4), 0)
    for f in (lambda m, a: m.sum(a.T, axis=1), lambda m, a: m.sum(a.reshape(1500, 2, 4), axis=(0, 2)),
              lambda m, a: m.sum(a.reshape(1500, 2, 4), axis=(0, 1))):
        got, want = f(jnp, jnp.asarray(x)), f(rjnp, rjnp.asarray(x))
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.weak_type == want.weak_type
        np.testing.assert_allclose(np.asarray(got), f(np, x.astype(np.float64)), rtol=1e-6)


def test_fused_kernel_reference_sum_no_stall():
    # the NumPy reference of a fused kernel (interpreter and native fallbacks) sums alike
    from jaxlite.compiler.pipeline import optimize
    from jaxlite.primitives.kernel import kernel_p, run_reference
    x = _stall_input((3000, 2), 0)
    opt, _ = optimize(jax.make_jaxpr(lambda a: (a * 1).sum(0))(x))
    (k,) = [e.params["kernel"] for e in opt.jaxpr.eqns if e.primitive is kernel_p]
    (got,) = run_reference(k, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, x.astype(np.float64).sum(0), rtol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_mean_axis0_accuracy(mode):
    rng = np.random.default_rng(0)
    x = rng.random((400_000, 8), dtype=np.float32)
    f = lambda a: jnp.mean(a, axis=0)
    got = (jax.jit(f) if mode == "jit" else f)(jnp.asarray(x))
    assert got.dtype == np.float32 and got.shape == (8,) and not got.weak_type
    np.testing.assert_allclose(np.asarray(got), x.astype(np.float64).mean(0), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16", np.complex64, np.int32])
def test_sum_axis0_dtypes_kept(rjnp, dtype):
    x = np.arange(60).reshape(20, 3).astype(dtype)
    assert_like_jax(jnp.sum(jnp.asarray(x), axis=0), rjnp.sum(rjnp.asarray(x), axis=0),
                    rtol=1e-2 if np.dtype(dtype).itemsize == 2 else 1e-6)


def test_reduce_sum_weak_type_kept(rjax):
    import jax.lax as rlax
    got = jax.jit(lambda: lax.reduce_sum(lax.broadcast(2.0, (70, 3)), axes=(0,)))()
    want = rjax.jit(lambda: rlax.reduce_sum(rlax.broadcast(2.0, (70, 3)), axes=(0,)))()
    assert_like_jax(got, want)
    assert got.weak_type


# --- 2. jit validates donate_argnums / donate_argnames against the signature -----------

def _two(x, y):
    return x + y


def _pos_only(x, /, y):
    return x + y


def _star(x, *args):
    return x


def _kw(x, **kwargs):
    return x


@pytest.mark.parametrize("fun,kw,bad", [
    (lambda x: x, dict(donate_argnums=3), "3"),
    (lambda x: x, dict(donate_argnums=-2), "-2"),
    (_two, dict(donate_argnums=(0, 2)), "2"),
    (lambda x: x, dict(donate_argnames="nope"), "nope"),
    (_two, dict(donate_argnames=("x", "z")), "z"),
    (_pos_only, dict(donate_argnames="x"), "x"),
    (_star, dict(donate_argnames="args"), "args"),
])
def test_jit_bad_donation_raises_like_jax(rjax, fun, kw, bad):
    with pytest.raises(ValueError):
        rjax.jit(fun, **kw)
    with pytest.raises(ValueError, match="donate_argn") as ours:
        jax.jit(fun, **kw)
    assert bad in str(ours.value)


@pytest.mark.parametrize("fun,kw", [
    (_star, dict(donate_argnums=(1, 4))), (_kw, dict(donate_argnames="anything")),
    (_two, dict(donate_argnums=-1)), (_two, dict(donate_argnames="y")),
])
def test_jit_valid_donation_accepted(rjax, fun, kw):
    rjax.jit(fun, **kw)
    jax.jit(fun, **kw)


# --- 3. jax.clear_caches ----------------------------------------------------------------

def test_clear_caches_empties_jit_caches(rjax):
    assert callable(rjax.clear_caches)
    f = jax.jit(lambda x: x * 2 + 1)
    g = jax.jit(lambda x, n: x ** n, static_argnums=1)
    x = jnp.arange(6.0)
    a, b = f(x), g(x, 2)
    assert f._cache_size() == 1 and g._cache_size() == 1
    pool = __import__("jaxlite.runtime.buffer", fromlist=["POOL"]).POOL
    assert jax.clear_caches() is None
    assert f._cache_size() == 0 and g._cache_size() == 0
    assert pool.clear() == 0          # the pool was already emptied
    assert all(not p._aval_cache for p in
               __import__("jaxlite.core.primitive", fromlist=["_registry"])._registry.values())
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(g(x, 2)), np.asarray(b))
    assert f._cache_size() == 1 and g._cache_size() == 1   # compiled again


# --- 4. cost_analysis: transcendentals, control-flow bodies -----------------------------

def _costs(mod, f, x):
    ca = mod.jit(f).lower(x).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, list) else ca
    return {k: float(ca.get(k) or 0.0) for k in ("flops", "transcendentals")}


_X = np.ones((100, 50), np.float32)


@pytest.mark.parametrize("name", ["tanh", "tanh_affine", "exp_affine", "sin", "sqrt", "pow",
                                  "sigmoid", "exp2", "w2"])
def test_cost_top_level_like_jax(rjax, name):
    import jax.numpy as rjnp
    progs = {
        "tanh": lambda m, n: lambda x: m.tanh(x),
        "tanh_affine": lambda m, n: lambda x: m.tanh(x * 2 + 1),
        "exp_affine": lambda m, n: lambda x: m.exp(x * 2 + 1),
        "sin": lambda m, n: lambda x: m.sin(x),
        "sqrt": lambda m, n: lambda x: m.sqrt(x),
        "pow": lambda m, n: lambda x: x ** 2.5,
        "sigmoid": lambda m, n: lambda x: n.sigmoid(x),
        "exp2": lambda m, n: lambda x: m.exp2(x),
        "w2": lambda m, n: lambda x: m.tanh(x) * 0.5 + m.exp(-x * x) * m.sin(x),
    }
    ours = _costs(jax, progs[name](jnp, jax.nn), jnp.asarray(_X))
    want = _costs(rjax, progs[name](rjnp, rjax.nn), rjnp.asarray(_X))
    assert ours == want


def test_cost_scan_counts_body_times_length():
    body = lambda c, r: (jnp.tanh(c + r), None)
    ca = _costs(jax, lambda x: lax.scan(body, jnp.zeros(50), x)[0], jnp.asarray(_X))
    assert ca == {"flops": 100 * 50, "transcendentals": 100 * 50}


def test_cost_fori_is_scan_times_trip_count():
    ca = _costs(jax, lambda x: lax.fori_loop(0, 10, lambda i, c: jnp.exp(c), x), jnp.asarray(_X))
    assert ca["transcendentals"] == 10 * 5000


def test_cost_while_counts_body_once():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 7, lambda c: (c[0] + 1, jnp.exp(c[1])), (0, x))[1]
    ca = _costs(jax, f, jnp.asarray(_X))
    assert ca["transcendentals"] == 5000
    assert ca["flops"] == 2           # the counter's add and the comparison


def test_cost_cond_takes_the_costliest_branch(rjax):
    import jax.lax as rlax
    import jax.numpy as rjnp
    mk = lambda m, l: lambda x: l.cond(x.sum() > 0, m.sin, lambda v: m.exp(v) * m.cos(v), x)
    ours = _costs(jax, mk(jnp, lax), jnp.asarray(_X))
    assert ours["transcendentals"] == 2 * 5000
    # the predicate's work outside, plus the costlier branch's multiply
    outside = _costs(jax, lambda x: lax.cond(x.sum() > 0, lambda v: v, lambda v: v, x),
                     jnp.asarray(_X))
    assert ours["flops"] == outside["flops"] + 5000
    same = _costs(jax, lambda x: lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x), jnp.asarray(_X))
    want = _costs(rjax, lambda x: rlax.cond(x.sum() > 0, rjnp.sin, rjnp.cos, x),
                  rjnp.asarray(_X))
    assert same["transcendentals"] == want["transcendentals"] == 5000
    # XLA counts a sum of n elements as n - 1 adds, jaxlite as n: one flop apart
    assert abs(same["flops"] - want["flops"]) <= 2


def test_cost_nested_jit_counted():
    inner = jax.jit(lambda v: jnp.tanh(v) + 1)
    ca = _costs(jax, lambda x: inner(x) * 2, jnp.asarray(_X))
    assert ca == {"flops": 2 * 5000, "transcendentals": 5000}
