"""compiler/passes/dot_transpose.py: a transpose of a batch-free dot_general result
becomes the dot_general with its operands swapped (the same values; no transposed view
for the next kernel to read through strides)."""
import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.compiler.passes import swap_transposed_dots
from jaxlite.compiler.pipeline import compile_jaxpr, optimize


def _prims(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def _run(closed, *args, fusion=True):
    outs = compile_jaxpr(closed, fusion=fusion).executable.run([np.asarray(a) for a in args])
    return [np.asarray(o) for o in outs]


def test_weight_gradient_is_one_swapped_product():
    h = jnp.asarray(np.linspace(-1, 1, 35, dtype=np.float32).reshape(5, 7))
    w = jnp.asarray(np.linspace(-2, 2, 21, dtype=np.float32).reshape(7, 3))
    g = jax.grad(lambda w, h: jnp.sum(jnp.tanh(h @ w)))
    closed = jax.make_jaxpr(g)(w, h)
    assert "transpose" in _prims(closed)
    new = swap_transposed_dots(closed)
    assert "transpose" not in _prims(new)
    assert _prims(new).count("dot_general") == _prims(closed).count("dot_general")
    want = np.asarray(g(w, h))
    got = _run(optimize(closed)[0], w, h)[0]
    assert got.dtype == np.float32 and got.shape == (7, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    hn, wn = np.asarray(h, np.float64), np.asarray(w, np.float64)
    np.testing.assert_allclose(got, hn.T @ (1 - np.tanh(hn @ wn) ** 2), rtol=1e-5,
                               atol=1e-6)


def test_explicit_pattern_and_what_is_left_alone():
    a = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    b = jnp.asarray(np.arange(8, dtype=np.float32).reshape(4, 2) - 3)
    f = lambda a, b: (a @ b).T                                  # noqa: E731
    closed = jax.make_jaxpr(f)(a, b)
    new = swap_transposed_dots(closed)
    assert _prims(new) == ["dot_general"]
    (e,) = new.jaxpr.eqns
    assert e.invars == closed.jaxpr.invars[::-1]
    np.testing.assert_array_equal(_run(new, a, b, fusion=False)[0],
                                  (np.asarray(a) @ np.asarray(b)).T)
    # the product read elsewhere too, or a program output: unchanged (same object)
    def out_too(a, b):
        p = a @ b
        return p.T, p

    def read_twice(a, b):
        p = a @ b
        return p.T + p.sum()
    for g in (out_too, read_twice):
        c = jax.make_jaxpr(g)(a, b)
        assert swap_transposed_dots(c) is c
    # a batched product: unchanged
    x = jnp.ones((2, 3, 4))
    y = jnp.ones((2, 4, 5))
    c = jax.make_jaxpr(lambda x, y: jnp.swapaxes(jnp.matmul(x, y), 1, 2))(x, y)
    assert swap_transposed_dots(c) is c
    # a 3-D product whose transpose is not the block swap: unchanged
    p = jnp.ones((2, 3, 4))
    q = jnp.ones((4, 5))
    c = jax.make_jaxpr(lambda p, q: jnp.transpose(jnp.dot(p, q), (1, 0, 2)))(p, q)
    assert swap_transposed_dots(c) is c
    c = jax.make_jaxpr(lambda p, q: jnp.transpose(jnp.dot(p, q), (2, 0, 1)))(p, q)
    new = swap_transposed_dots(c)
    assert "transpose" not in _prims(new)
    np.testing.assert_allclose(_run(new, p, q, fusion=False)[0],
                               np.transpose(np.ones((2, 3, 4)) @ np.ones((4, 5)), (2, 0, 1)))
