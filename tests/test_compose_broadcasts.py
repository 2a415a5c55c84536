"""The compiler pass composing a broadcast of a broadcast into one broadcast
(compiler/passes/compose_broadcasts.py): on random chains of broadcast_in_dim (size-1
dimensions expanded at either step, dimensions placed anywhere, any dtype) the rewritten
program agrees with the program before the pass (the reference interpreter), with jit and
with NumPy's broadcasting; a broadcast read elsewhere stays; a program without the
pattern is returned as it is; under jit(vmap) a bias broadcast twice reaches the fused
kernel as itself."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.compiler import optimize
from jaxlite.compiler.passes import compose_broadcasts, dce
from jaxlite.ir import eval_jaxpr


def run(closed, *args):
    return [np.asarray(x) for x in eval_jaxpr(closed.jaxpr, closed.consts, *args)]


def names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


@st.composite
def broadcast(draw, shape):
    """A target shape and broadcast_dimensions for broadcasting an array of ``shape``:
    its dimensions kept in order among new ones, each size-1 one possibly expanded."""
    new = draw(st.integers(0, 2))
    n = len(shape) + new
    dims = sorted(draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=len(shape),
                                max_size=len(shape), unique=True))) if shape else []
    out = [draw(st.integers(1, 3)) for _ in range(n)]
    for d, s in zip(dims, shape):
        out[d] = s if s != 1 else draw(st.sampled_from([1, 2, 3]))
    return tuple(out), tuple(dims)


@st.composite
def chains(draw):
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=2)))
    s1, d1 = draw(broadcast(shape))
    s2, d2 = draw(broadcast(s1))
    dtype = draw(st.sampled_from([np.float32, np.int32, np.bool_]))
    return shape, (s1, d1), (s2, d2), dtype


@settings(max_examples=60, deadline=None)
@given(chains())
def test_composed_broadcast_agrees_with_interpreter_jit_and_numpy(case):
    shape, (s1, d1), (s2, d2), dtype = case
    x = (np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 5).astype(dtype)

    def f(x):
        return lax.broadcast_in_dim(lax.broadcast_in_dim(x, s1, d1), s2, d2)
    closed = jax.make_jaxpr(f)(x)
    after = dce(compose_broadcasts(closed))
    # one broadcast of x (none where lax drops identity broadcasts)
    assert names(after) in ([], ["broadcast_in_dim"]), names(after)
    assert all(e.invars[0] is closed.jaxpr.invars[0] for e in after.jaxpr.eqns)
    if s2 != s1 and s1 != shape:
        assert len(after.jaxpr.eqns) == 1 < len(closed.jaxpr.eqns)
    # NumPy: the value at each index reads x at the positions the two steps map it to
    want = np.empty(s2, dtype)
    for idx in np.ndindex(*s2):
        mid = [0] * len(s1)
        for k, d in enumerate(d2):
            mid[k] = idx[d] if s1[k] != 1 else 0
        src = tuple(mid[d] if shape[j] != 1 else 0 for j, d in enumerate(d1))
        want[idx] = x[src]
    for got in (run(closed, x)[0], run(after, x)[0], np.asarray(jax.jit(f)(x))):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_inner_broadcast_read_elsewhere_stays_and_unmatched_program_is_unchanged():
    def f(b):
        u = lax.broadcast_in_dim(b, (2, 3), (1,))
        return u * 2.0, lax.broadcast_in_dim(u, (4, 2, 3), (1, 2))
    b = np.array([1.0, -2.0, 0.5], np.float32)
    closed = jax.make_jaxpr(f)(b)
    after = dce(compose_broadcasts(closed))
    bcasts = [e for e in after.jaxpr.eqns if e.primitive.name == "broadcast_in_dim"]
    assert len(bcasts) == 2 and bcasts[1].invars[0] is closed.jaxpr.invars[0]
    assert bcasts[1].params["broadcast_dimensions"] == (2,)
    for g, w in zip(run(after, b), run(closed, b)):
        np.testing.assert_array_equal(g, w)
    plain = jax.make_jaxpr(lambda b: lax.broadcast_in_dim(b, (2, 3), (1,)) + 1.0)(b)
    assert compose_broadcasts(plain) is plain


def test_bias_under_jit_vmap_reaches_the_kernel_as_itself():
    # per example: rows @ w + b (b broadcast over the rows); vmap broadcasts that again
    # over the examples: the fused kernel reads b, not a stride-0 view of the first
    # broadcast
    w = np.arange(12.0, dtype=np.float32).reshape(4, 3) / 10
    b = np.array([1.0, -2.0, 0.5], np.float32)
    xs = np.arange(40.0, dtype=np.float32).reshape(2, 5, 4) / 7

    def f(xs, w, b):
        return jax.vmap(lambda x: jnp.tanh(x @ w + b))(xs)
    closed = jax.make_jaxpr(f)(xs, w, b)
    opt, _ = optimize(closed)
    kernel = [e for e in opt.jaxpr.eqns if e.primitive.name == "kernel"]
    assert kernel and any(v is opt.jaxpr.invars[2] for e in kernel for v in e.invars)
    assert "broadcast_in_dim" not in names(opt)
    got = np.asarray(jax.jit(f)(xs, w, b))
    np.testing.assert_allclose(got, np.tanh(xs @ w + b), rtol=1e-6)
    assert got.dtype == np.float32
