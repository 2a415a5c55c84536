"""Lifetimes (issue 33): no cache keeps a user's function, its closed-over arrays or their
device bytes alive once the user drops the function, as in JAX; ``clear_caches`` frees
what the caches hold.

Each case runs the same code on jaxlite and, as the oracle, on real JAX, and checks that
both let everything go: weak references to the functions and arrays are dead after
``gc.collect()``, ``live_arrays()`` and (jaxlite) ``memory_stats()['bytes_in_use']`` are
back at their values before the loop.
"""
from __future__ import annotations

import functools
import gc
import os
import weakref

import jax as rjax
import jax.numpy as rjnp
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax


def _usage(api):
    """(number of live arrays, bytes in use on the default device or None)."""
    gc.collect()
    stats = api.devices()[0].memory_stats()
    return len(api.live_arrays()), (stats or {}).get("bytes_in_use")


def _rss() -> int:
    """This process's resident set size in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# ---- the issue's example ---------------------------------------------------------------

def _twenty_closures(api, np_api, shape):
    """The issue's loop: 20 jitted closures over a big array each, every one called once
    and dropped.  Returns (usage before, usage after, refs still alive, results)."""
    x = np_api.ones(shape)
    before = _usage(api)
    refs, results = [], []
    for i in range(20):
        big = np_api.ones(shape) * i
        fun = lambda x: x + big    # noqa: E731 - the issue's closure
        f = api.jit(fun)
        results.append(float(f(x)[0, 0]))
        refs += [weakref.ref(f), weakref.ref(fun), weakref.ref(big)]
        del f, fun, big
    after = _usage(api)
    del x
    return before, after, [r for r in refs if r() is not None], results


def test_issue_twenty_jitted_closures_are_freed():
    before, after, alive, results = _twenty_closures(jax, jnp, (1000, 1000))
    assert results == [1.0 + i for i in range(20)]
    assert alive == []
    assert after == before      # live arrays and bytes in use (80 MB before the fix)
    # real JAX frees them all too
    r_before, r_after, r_alive, r_results = _twenty_closures(rjax, rjnp, (1000, 1000))
    assert r_results == results
    assert r_alive == [] and r_after[0] == r_before[0]


# ---- the same for every transformation and control-flow primitive -----------------------

def _cases(api, np_api, lax_mod):
    x = np_api.ones((8,))

    def jit_(big):
        f = lambda x: x + big   # noqa: E731
        return f, lambda: api.jit(f)(x)

    def grad_(big):
        f = lambda x: (x * big).sum()   # noqa: E731
        return f, lambda: api.grad(f)(x)

    def jit_grad(big):
        f = lambda x: (np_api.sin(x) * big).sum()   # noqa: E731
        return f, lambda: api.jit(api.grad(f))(x)

    def vmap_(big):
        f = lambda v: v * big[0]    # noqa: E731
        return f, lambda: (api.vmap(f)(x), api.jit(api.vmap(f))(x))

    def scan_(big):
        f = lambda c, y: (c + y * big[0], c)    # noqa: E731
        return f, lambda: (lax_mod.scan(f, 0.0, x),
                           api.jit(lambda x: lax_mod.scan(f, 0.0, x))(x))

    def cond_(big):
        f = lambda v: v + big   # noqa: E731
        return f, lambda: (lax_mod.cond(True, f, lambda v: v, x),
                           api.jit(lambda p, v: lax_mod.cond(p, f, lambda v: v, v))(True, x))

    def while_(big):
        f = lambda c: c + big[0]    # noqa: E731
        return f, lambda: api.jit(lambda: lax_mod.while_loop(lambda c: c < 10.0, f, 0.0))()

    def custom_jvp_(big):
        @api.custom_jvp
        def f(v):
            return v * big

        f.defjvp(lambda p, t: (p[0] * big, t[0] * big))
        return f, lambda: (api.grad(lambda v: f(v).sum())(x), api.jit(f)(x),
                           api.jit(api.grad(lambda v: f(v).sum()))(x))

    def custom_vjp_(big):
        @api.custom_vjp
        def f(v):
            return v * big

        f.defvjp(lambda v: (v * big, None), lambda r, g: (g * big,))
        return f, lambda: (api.grad(lambda v: f(v).sum())(x), api.jit(f)(x),
                           api.jit(api.grad(lambda v: f(v).sum()))(x))

    def nested_jit(big):
        f = lambda v: v + big   # noqa: E731
        return f, lambda: api.jit(lambda v: api.jit(f)(v) * 2)(x)

    def pure_callback_(big):
        host = np.asarray(big)
        f = lambda v: np.asarray(v) + host  # noqa: E731
        sds = api.ShapeDtypeStruct(x.shape, x.dtype)
        return f, lambda: api.jit(lambda v: api.pure_callback(f, sds, v))(x)

    def bound_method(big):
        class Model:
            def __init__(self, w):
                self.w = w

            def apply(self, v):
                return v * self.w
        m = Model(big)
        return m, lambda: api.jit(m.apply)(x)

    def partial_(big):
        f = functools.partial(lambda b, v: v + b, big)
        return f, lambda: api.jit(f)(x)

    cases = (jit_, grad_, jit_grad, vmap_, scan_, cond_, while_, custom_jvp_, custom_vjp_,
             nested_jit, pure_callback_, bound_method, partial_)
    return {c.__name__: c for c in cases}


CASES = sorted(_cases(jax, jnp, lax))


def _leaks(api, np_api, lax_mod, case):
    """Runs ``case`` five times over fresh closures; the refs still alive after gc, and
    the live arrays/bytes added."""
    make = _cases(api, np_api, lax_mod)[case]
    before = _usage(api)
    refs = []
    for i in range(5):
        big = np_api.ones((8,)) * (i + 2)
        owner, run = make(big)
        run()
        refs += [weakref.ref(owner), weakref.ref(big)]
        del owner, run, big
    after = _usage(api)
    return [r for r in refs if r() is not None], before, after


# make test runs five kinds of closure (jit, jit of grad, custom_vjp, scan, a bound
# method); make test-slow (CI runs it) the other eight, about 40 s
_FAST_CASES = {"jit_", "jit_grad", "custom_vjp_", "scan_", "bound_method"}


@pytest.mark.parametrize("case", [c if c in _FAST_CASES else pytest.param(
    c, marks=pytest.mark.slow) for c in CASES])
def test_transformed_closures_are_freed(case):
    alive, before, after = _leaks(jax, jnp, lax, case)
    assert alive == [], f"{case}: {len(alive)} functions/arrays kept alive"
    assert after == before
    r_alive, r_before, r_after = _leaks(rjax, rjnp, rjax.lax, case)
    assert r_alive == [] and r_after[0] == r_before[0]      # as in JAX


def _models(api, np_api):
    """Five models, each jitting its own bound method, a lambda over itself and a grad
    in its constructor (cycles through the model), called once and dropped."""
    class Model:
        def __init__(self, i):
            self.w = np_api.ones((100,)) * i
            self.step = api.jit(self.apply)
            self.scaled = api.jit(lambda v: self.apply(v) * 2)
            self.grad = api.jit(api.grad(lambda v: np_api.sum(self.apply(v))))

        def apply(self, v):
            return v * self.w

    x = np_api.ones((100,))
    before = _usage(api)
    refs = []
    for i in range(5):
        m = Model(i)
        assert float(m.step(x)[0]) == i and float(m.scaled(x)[0]) == 2 * i
        assert float(m.grad(x)[0]) == i
        refs += [weakref.ref(m), weakref.ref(m.w)]
        del m
    after = _usage(api)     # (collects the cycles first)
    return [r for r in refs if r() is not None], before, after


def test_models_jitting_their_own_methods_are_freed():
    alive, before, after = _models(jax, jnp)
    assert alive == [] and after == before
    r_alive, r_before, r_after = _models(rjax, rjnp)
    assert r_alive == [] and r_after[0] == r_before[0]      # as in JAX


def test_shared_cache_of_one_function_still_shared():
    """Two wrappers of one function share its compiled programs (as in JAX), also when the
    first wrapper is gone: the cache holds the function weakly, not the wrapper."""
    def f(v):
        return v * 3.0

    x = jnp.arange(4.0)
    g = jax.jit(f)
    g(x)
    assert g._cache_size() == 1
    del g
    gc.collect()
    h = jax.jit(f)
    assert h._cache_size() == 1       # found without tracing again
    np.testing.assert_array_equal(np.asarray(h(x)), [0.0, 3.0, 6.0, 9.0])
    assert h._cache_size() == 1
    ref = weakref.ref(f)
    del f, h
    gc.collect()
    assert ref() is None


def test_no_primitive_memo_keeps_a_program():
    """Abstract evaluation is memoised only on parameters compared by value: an equation
    holding a program or a function (a nested jit, a callback) is not kept by it."""
    from jaxlite.core.primitive import _registry
    from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr
    x = jnp.ones((4,))
    big = jnp.ones((4,)) * 5
    sds = jax.ShapeDtypeStruct((4,), np.float32)
    jax.jit(lambda v: jax.jit(lambda u: u + big)(v))(x)
    jax.jit(lambda v: jax.pure_callback(lambda u: np.asarray(u) * 2, sds, v))(x)
    jax.grad(lambda v: lax.scan(lambda c, y: (c + y * big[0], c), 0.0, v)[0])(x)

    def held(v):
        if isinstance(v, (tuple, frozenset)):
            return any(held(e) for e in v)
        return isinstance(v, (ClosedJaxpr, Jaxpr)) or callable(v) and not isinstance(v, type)

    kept = [(prim, v) for prim in _registry.values() for key in prim._aval_cache
            for _, v in key[1] if held(v)]
    assert kept == []


# ---- clear_caches --------------------------------------------------------------------

C = np.arange(1000.0)


def _with_constant(v):
    # the program's constant (the device_put of C) is held by the compiled program alone
    return v + jax.device_put(C)


def test_clear_caches_frees_programs_of_dropped_wrappers():
    """A function that lives on (here a module-level one) keeps its compiled programs for
    the next ``jit`` of it; ``clear_caches`` frees them and their constants, and the
    function compiles and runs again afterwards."""
    x = jnp.ones((1000,))
    jax.clear_caches()
    before = _usage(jax)
    np.testing.assert_array_equal(np.asarray(jax.jit(_with_constant)(x)), 1.0 + C)
    held = _usage(jax)
    assert held == (before[0] + 1, before[1] + 4 * C.size)    # its float32 constant
    jax.clear_caches()
    assert _usage(jax) == before
    np.testing.assert_array_equal(np.asarray(jax.jit(_with_constant)(x)), 1.0 + C)
    jax.clear_caches()
    assert _usage(jax) == before


def test_clear_caches_empties_every_cache_and_programs_work_again():
    from jaxlite.core.primitive import _registry
    from jaxlite.numpy import _methods
    x = jnp.arange(3.0)
    f = jax.jit(lambda v: v * 2.0)
    np.testing.assert_array_equal(np.asarray(f(x)), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(x + 1.0), [1.0, 2.0, 3.0])
    assert f._cache_size() == 1
    jax.clear_caches()
    assert f._cache_size() == 0
    assert all(not m for m in _methods._OP_CACHES)
    assert all(not p._aval_cache for p in _registry.values())
    out = f(x)
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])
    assert out.dtype == np.float32 and f._cache_size() == 1
    y = x + 1.0
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0, 3.0])
    assert y.dtype == np.float32 and not y.weak_type


# ---- many closures ---------------------------------------------------------------------

def _many_closures(n):
    """Builds ``n`` jitted closures over a fresh 4 KB array each, calls each once and drops
    it; (rss, live arrays) after gc at the half and at the end."""
    x = jnp.ones((3,), jnp.float32)
    marks = []
    for i in range(n):
        c = jnp.full((1000,), float(i), jnp.float32)
        f = jax.jit(lambda v: v + c[:3])
        out = f(x)
        del f, c
        if i in (n // 2 - 1, n - 1):
            assert float(out[0]) == 1.0 + i
            gc.collect()
            marks.append((_rss(), len(jax.live_arrays())))
    return marks


def test_ten_thousand_jitted_closures_stay_flat():
    base = _usage(jax)[0]
    (rss_half, live_half), (rss_end, live_end) = _many_closures(10_000)
    assert live_half == live_end == base + 2      # x and the last result alone
    # before the fix: 40 MB of closed-over arrays (and their wrappers) over the second half
    assert rss_end - rss_half < 4 * 2 ** 20
