"""Trace state is per thread: several threads tracing, differentiating, vmapping and
running jitted functions at the same time get the results one thread gets alone.

Each thread repeats a round of work: fresh functions (so ``jit``, ``grad``, ``jvp``,
``vjp``, ``vmap`` and ``make_jaxpr`` really trace while the other threads trace too) and
shared jitted functions (so the jit caches are read and filled concurrently).  A barrier
starts every round in all threads at once and a tiny switch interval makes the
interpreter switch threads inside tracing.  Every result is compared with the
single-threaded one, which is itself checked against real JAX.
"""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

jax = pytest.importorskip("jax")
rjnp = jax.numpy
rlax = jax.lax

N_THREADS = 4
ROUNDS = 12          # distinct rounds of work (each checked single-threaded first)
REPEATS = 2          # each thread runs every round this many times


def _shared(np_, lax_, jax_):
    """Functions every thread calls through one jit wrapper (the cache is shared)."""
    def poly(x):
        return np_.tanh(x) * 3.0 + x * x

    def loop(x):
        return lax_.fori_loop(0, 3, lambda i, c: c * 0.5 + np_.sin(c), x)

    return jax_.jit(poly), jax_.jit(loop), jax_.jit(jax_.grad(lambda x: np_.sum(poly(x))))


_SHARED = _shared(jnp, lax, jaxlite)


def _round(j, np_, lax_, jax_, shared, seed):
    """One round of work; returns a flat list of results (NumPy arrays)."""
    c = 0.25 + 0.125 * (seed % 5)           # a fresh closure each round: nothing cached
    x = np_.linspace(-1.0, 1.0, 5) + 0.01 * seed
    s = np_.float32(0.3 + 0.05 * seed)

    def f(v):
        return np_.sin(v) * c + v * v * v

    def g(v):
        return np_.sum(np_.exp(v * c) * np_.cos(v))

    def h(v, w):
        return lax_.cond(v > 0.0, lambda a: a * w, lambda a: a - w, v) + np_.log1p(v * v)

    def body(carry, v):
        return carry * c + v, carry + np_.tanh(v)

    out = []
    out.append(jax_.jit(f)(x))                                 # fresh trace + compile
    out.append(jax_.grad(g)(x))                                # reverse mode
    out.append(jax_.grad(jax_.grad(lambda v: f(v)))(s))        # second order
    out.append(jax_.jacfwd(jax_.grad(g))(x))                   # forward over reverse
    p, t = jax_.jvp(f, (x,), (np_.ones_like(x),))              # forward mode
    out += [p, t]
    y, pull = jax_.vjp(f, x)
    out += [y, pull(np_.ones_like(x))[0]]
    out.append(jax_.vmap(jax_.grad(h), in_axes=(0, None))(x, s))   # vmap of grad of cond
    out.append(jax_.jit(jax_.vmap(jax_.grad(lambda v: f(v))))(x))
    out.append(jax_.vmap(lambda r: lax_.scan(body, np_.float32(0.0), r)[1])(
        np_.stack([x, x * 2.0])))
    out.append(jax_.jit(lambda v: jax_.grad(g)(v) * c)(x))    # grad inside jit
    poly, loop, gpoly = shared                                 # shared jit caches
    out += [poly(x), loop(x), gpoly(x), poly(s), jax_.grad(poly)(s),
            jax_.vmap(poly)(x), jax_.jit(jax_.vmap(loop))(x)]
    jp = jax_.make_jaxpr(f)(x)
    out.append(np.array(len(jp.jaxpr.eqns)))
    return [np.asarray(o) for o in out]


def _expected(seed):
    return _round(0, jnp, lax, jaxlite, _SHARED, seed)


@pytest.fixture(scope="module")
def baseline():
    """The single-threaded results of each round, checked against real JAX once."""
    want = {seed: _expected(seed) for seed in range(ROUNDS)}
    ref = _round(0, rjnp, rlax, jax, _shared(rjnp, rlax, jax), 3)
    for k, (a, b) in enumerate(zip(want[3], ref)):
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.dtype, b.dtype)
        if k == len(ref) - 1:
            continue     # the equation count of make_jaxpr differs from JAX's by design
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"result {k}")
    return want


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _run_threads(worker):
    barrier = threading.Barrier(N_THREADS)
    errors = []

    def run(i):
        try:
            worker(i, barrier)
        except BaseException as e:           # noqa: BLE001 - reported by the main thread
            errors.append((i, e))
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        i, e = errors[0]
        raise AssertionError(f"thread {i} failed: {type(e).__name__}: {e}") from e


def test_threads_trace_differentiate_and_jit_concurrently(baseline, fast_switching):
    def worker(i, barrier):
        for r in range(ROUNDS * REPEATS):
            seed = (r + i) % ROUNDS            # the threads do different work at once
            barrier.wait(60)
            got = _round(i, jnp, lax, jaxlite, _SHARED, seed)
            for k, (a, b) in enumerate(zip(got, baseline[seed])):
                assert a.shape == b.shape and a.dtype == b.dtype, (r, k, a.dtype, b.dtype)
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7,
                                           err_msg=f"thread {i} round {r} result {k}")
    _run_threads(worker)
    # afterwards the main thread is still at top level: eager, nothing traced
    assert not jaxlite.core.is_tracing()
    assert isinstance(jnp.sin(1.0), jaxlite.Array)


def test_each_thread_starts_outside_any_trace(fast_switching):
    """A thread started while another one traces begins at top level (eager), as in JAX:
    values it computes are concrete, and it sees none of the other thread's tracers."""
    seen = []

    def f(x):
        def child():
            seen.append((jaxlite.core.is_tracing(), float(jnp.sin(1.0))))
        t = threading.Thread(target=child)
        t.start()
        t.join()
        return x * 2.0

    jaxlite.jit(f)(1.0)
    jaxlite.grad(f)(1.0)
    assert seen == [(False, pytest.approx(np.sin(1.0)))] * 2


def test_trace_in_one_thread_while_another_runs_eagerly(fast_switching):
    """One thread sits inside a trace (blocked in the traced function) while another
    thread runs eager operations and jitted calls: the latter stay concrete."""
    inside, release = threading.Event(), threading.Event()
    results = {}

    def traced(x):
        inside.set()
        release.wait(30)
        return jnp.cos(x) + 1.0

    def tracer_thread():
        results["jit"] = np.asarray(jaxlite.jit(traced)(jnp.arange(3.0)))

    t = threading.Thread(target=tracer_thread)
    t.start()
    assert inside.wait(30)
    try:
        assert not jaxlite.core.is_tracing()
        y = jnp.exp(jnp.arange(3.0))          # eager here, though the other thread traces
        assert isinstance(y, jaxlite.Array)
        assert float(y[1]) == pytest.approx(np.e, rel=1e-6)
        assert float(jaxlite.jit(lambda v: v * 3.0)(2.0)) == 6.0
        assert float(jaxlite.grad(jnp.sin)(0.0)) == 1.0
    finally:
        release.set()
        t.join(60)
    np.testing.assert_allclose(results["jit"], np.cos(np.arange(3.0)) + 1.0, rtol=1e-6)


def test_tracer_from_another_thread_is_not_mistaken_for_a_constant():
    """A tracer leaked from a trace of another thread raises, as a leaked tracer does."""
    leaked = []

    def f(x):
        leaked.append(x)
        return x

    t = threading.Thread(target=lambda: jaxlite.jit(f)(1.0))
    t.start()
    t.join()
    with pytest.raises(jaxlite.errors.UnexpectedTracerError):
        jnp.sin(leaked[0])


@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
def test_tracer_of_a_running_trace_in_another_thread_raises(transform):
    """A tracer taken from a trace that is still running in another thread raises
    UnexpectedTracerError when used here, as in JAX (it is never staged into the other
    thread's program, nor lifted into this thread's trace)."""
    def attempt(jx, np_):
        inside, release = threading.Event(), threading.Event()
        box = []

        def f(x):
            box.append(x)
            inside.set()
            release.wait(30)
            return (x * 2.0).sum()

        arg = np_.ones(3) if transform == "vmap" else np_.ones(())
        t = threading.Thread(target=lambda: getattr(jx, transform)(f)(arg))
        t.start()
        assert inside.wait(30)
        try:
            with pytest.raises(jx.errors.UnexpectedTracerError):
                np_.sin(box[0])
            with pytest.raises(jx.errors.UnexpectedTracerError):
                jx.jit(lambda v: v + 1.0)(box[0])
        finally:
            release.set()
            t.join(60)

    attempt(jax, rjnp)
    attempt(jaxlite, jnp)
