"""Programs run on an accelerator platform, each written once for any JAX-like module.

``PROGRAMS`` maps a name to ``(fn, inputs, rtol)``: ``fn(jax, jnp, lax, *arrays)`` returns
an array or a tuple of arrays, ``inputs()`` the NumPy operands (fixed seeds), ``rtol`` the
relative tolerance a float result is compared with (0: bit for bit; integer and boolean
results always are).  The same program runs

- under jaxlite on a PJRT platform, against jaxlite's own CPU platform in the same process
  (tests/accelerator/test_programs.py, in CI on the XLA:CPU plugin), and
- on a TPU: under real JAX first (reference.py writes its results), then under jaxlite on
  the same chip, compared with those (``make test-accelerator``).

They cover the chapter's programs (arrays, jit, grad, vmap, scan, random numbers, the MLP
step) and each family of primitives a lowering has to get right.
"""
from __future__ import annotations

import numpy as np


def _rng(seed=0):
    return np.random.default_rng(seed)


def _f32(*shape, seed=0):
    return _rng(seed).standard_normal(shape).astype(np.float32)


def chapter_3_3(jax, jnp, lax, x, y):
    return jax.jit(lambda x, y: jnp.dot(x, y) + jnp.sum(x))(x, y)


def elementwise(jax, jnp, lax, x):
    f = jax.jit(lambda x: jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) / (1.0 + jnp.abs(x)))
    return f(x)


def eager_ops(jax, jnp, lax, x):
    y = x + 1.0
    z = jnp.maximum(y * 2.0, 0.5)
    return z, jnp.sum(z), jnp.argmax(z)


def softmax_rows(jax, jnp, lax, x):
    @jax.jit
    def f(x):
        m = jnp.max(x, axis=1, keepdims=True)
        e = jnp.exp(x - m)
        return e / jnp.sum(e, axis=1, keepdims=True)
    return f(x)


def _mlp_params():
    r = _rng(3)
    sizes = [(784, 512), (512, 512), (512, 10)]
    return [(r.standard_normal(s).astype(np.float32) * 0.05,
             np.zeros(s[1], np.float32)) for s in sizes]


def mlp_step(jax, jnp, lax, x, labels):
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in _mlp_params()]

    def loss(params, x, labels):
        h = x
        for w, b in params[:-1]:
            h = jnp.maximum(jnp.dot(h, w, precision=lax.Precision.HIGHEST) + b, 0.0)
        w, b = params[-1]
        logits = jnp.dot(h, w, precision=lax.Precision.HIGHEST) + b
        logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(labels, 10), axis=1))

    @jax.jit
    def step(params, x, labels):
        l, g = jax.value_and_grad(loss)(params, x, labels)
        return l, [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]

    l, new = step(params, x, labels)
    return (l, new[0][0], new[-1][1])


def scan_rnn(jax, jnp, lax, w, xs):
    @jax.jit
    def run(w, xs):
        def cell(h, x):
            h = jnp.tanh(jnp.dot(w, h, precision=lax.Precision.HIGHEST) + x)
            return h, jnp.sum(h)
        return lax.scan(cell, jnp.zeros(w.shape[0], w.dtype), xs)
    return run(w, xs)


def while_and_cond(jax, jnp, lax, x):
    @jax.jit
    def f(x):
        def body(c):
            i, v = c
            v = lax.cond(i % 2 == 0, lambda v: v * 1.5, lambda v: v - 1.0, v)
            return i + 1, v
        return lax.while_loop(lambda c: c[0] < 7, body, (0, x))[1]
    return f(x)


def fori_sum(jax, jnp, lax, x):
    return jax.jit(lambda x: lax.fori_loop(0, 10, lambda i, a: a + i * x, jnp.zeros_like(x)))(x)


def vmap_grad(jax, jnp, lax, xs):
    f = lambda x: jnp.sum(jnp.sin(x) ** 2) + jnp.prod(jnp.cos(x))  # noqa: E731
    return jax.jit(jax.vmap(jax.grad(f)))(xs)


def random_bits(jax, jnp, lax):
    key = jax.random.PRNGKey(42)
    k1, k2 = jax.random.split(key)
    return (jax.random.uniform(k1, (1000,)), jax.random.randint(k1, (50,), 0, 100),
            jax.random.bits(k2, (16,)), jax.random.permutation(k2, 20))


def random_normal(jax, jnp, lax):
    # the bits are the same everywhere; erf_inv's float math rounds differently (on a TPU
    # jaxlite's and JAX's lowerings of erf_inv differ by up to ~5e-6 relative)
    key = jax.random.PRNGKey(7)
    return jax.random.normal(key, (4, 5)), jax.jit(lambda k: jax.random.normal(k, (3, 7)))(key)


def integer_ops(jax, jnp, lax, a, b):
    @jax.jit
    def f(a, b):
        return (a // b, a % b, a << 3, a >> 2, a & b, a | b, a ^ b, jnp.abs(a),
                lax.population_count(a), a * b, jnp.minimum(a, b))
    return f(a, b)


def comparisons(jax, jnp, lax, x, y):
    return jax.jit(lambda x, y: (x < y, x == y, jnp.where(x > y, x, y),
                                 jnp.isfinite(x / y)))(x, y)


def reductions(jax, jnp, lax, x):
    return jax.jit(lambda x: (jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x),
                              jnp.prod(x[:3, :3]), jnp.argmin(x, axis=0),
                              jnp.mean(x), jnp.any(x > 2.0)))(x)


def cumulative_and_sort(jax, jnp, lax, x):
    return jax.jit(lambda x: (jnp.cumsum(x, axis=1), jnp.sort(x, axis=1),
                              jnp.argsort(x[0]), jnp.cumprod(x[:, :4] * 0.5, axis=0)))(x)


def indexing(jax, jnp, lax, x, idx):
    @jax.jit
    def f(x, idx):
        return x[idx], x[1:5, ::2], x.at[idx].add(1.0), x.at[0, 2].set(-7.0), x[:, idx[:2]]
    return f(x, idx)


def shapes(jax, jnp, lax, x):
    @jax.jit
    def f(x):
        return (x.T, x.reshape(4, -1), jnp.concatenate([x, x * 2], axis=0),
                jnp.pad(x, ((1, 0), (0, 2))), jnp.flip(x, 1), x[None, :, 2],
                jnp.broadcast_to(x[:, :1], x.shape),
                lax.dynamic_slice(x, (1, 2), (2, 3)),
                lax.dynamic_update_slice(x, jnp.ones((2, 2), x.dtype), (3, 1)))
    return f(x)


def matmul_bf16(jax, jnp, lax, a, b):
    return jax.jit(lambda a, b: jnp.dot(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16),
                                        preferred_element_type=jnp.float32))(a, b)


def dot_general_batched(jax, jnp, lax, a, b):
    return jax.jit(lambda a, b: jnp.einsum("bij,bjk->bik", a, b,
                                           precision=lax.Precision.HIGHEST))(a, b)


def conv2d(jax, jnp, lax, x, w):
    return jax.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", precision=lax.Precision.HIGHEST))(x, w)


def dtypes_and_casts(jax, jnp, lax, x):
    @jax.jit
    def f(x):
        return (x.astype(jnp.int32), x.astype(jnp.bfloat16).astype(jnp.float32),
                x.astype(jnp.float16), (x > 0).astype(jnp.int8), jnp.round(x * 3.0),
                jnp.floor(x), jnp.sign(x))
    return f(x)


def linalg(jax, jnp, lax, a, b):
    spd = a @ a.T + 8.0 * np.eye(a.shape[0], dtype=np.float32)
    f = jax.jit(lambda m, b: (jnp.linalg.cholesky(m), jnp.linalg.solve(m, b),
                              jax.scipy.linalg.solve_triangular(jnp.tril(m), b, lower=True)))
    return f(spd, b)


PROGRAMS = {
    "chapter_3_3": (chapter_3_3, lambda: (np.array([1., 2., 3.], np.float32),
                                          np.array([4., 5., 6.], np.float32)), 0),
    "elementwise": (elementwise, lambda: (_f32(1000),), 2e-6),
    "eager_ops": (eager_ops, lambda: (_f32(64, seed=1),), 0),
    "softmax_rows": (softmax_rows, lambda: (_f32(64, 128, seed=2),), 2e-6),
    "mlp_step": (mlp_step, lambda: (_f32(32, 784, seed=4),
                                    _rng(5).integers(0, 10, 32).astype(np.int32)), 1e-4),
    "scan_rnn": (scan_rnn, lambda: (_f32(16, 16, seed=6) * 0.3, _f32(100, 16, seed=7)), 1e-4),
    "while_and_cond": (while_and_cond, lambda: (_f32(10, seed=8),), 0),
    "fori_sum": (fori_sum, lambda: (_f32(10, seed=9),), 1e-6),
    "vmap_grad": (vmap_grad, lambda: (_f32(8, 5, seed=10),), 2e-6),
    "random_bits": (random_bits, lambda: (), 0),
    "random_normal": (random_normal, lambda: (), 2e-5),
    "integer_ops": (integer_ops, lambda: (_rng(11).integers(-1000, 1000, 50).astype(np.int32),
                                          _rng(12).integers(1, 50, 50).astype(np.int32)), 0),
    "comparisons": (comparisons, lambda: (_f32(30, seed=13), _f32(30, seed=14)), 0),
    "reductions": (reductions, lambda: (_f32(6, 9, seed=15),), 2e-6),
    "cumulative_and_sort": (cumulative_and_sort, lambda: (_f32(5, 8, seed=16),), 2e-6),
    "indexing": (indexing, lambda: (_f32(6, 7, seed=17), np.array([4, 0, 5, 0], np.int32)), 0),
    "shapes": (shapes, lambda: (_f32(6, 4, seed=18),), 0),
    "matmul_bf16": (matmul_bf16, lambda: (_f32(64, 128, seed=19), _f32(128, 32, seed=20)),
                    1e-2),
    "dot_general_batched": (dot_general_batched, lambda: (_f32(3, 8, 16, seed=21),
                                                          _f32(3, 16, 4, seed=22)), 1e-5),
    "conv2d": (conv2d, lambda: (_f32(2, 3, 9, 9, seed=23), _f32(4, 3, 3, 3, seed=24)), 1e-5),
    "dtypes_and_casts": (dtypes_and_casts, lambda: (_f32(40, seed=25) * 5,), 0),
    "linalg": (linalg, lambda: (_f32(6, 6, seed=26), _f32(6, 2, seed=27)), 1e-4),
}


def flat(out):
    """The program's results as a list of NumPy arrays (a tuple/list result flattened)."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in flat(o)]
    return [np.asarray(out)]


def mismatch(name: str, got, want) -> str | None:
    """Why result ``got`` of program ``name`` differs from ``want`` (None: it agrees).  Same
    shape and dtype always; integers and booleans exactly; floats within the program's
    ``rtol`` relative to each element and to the result's largest magnitude (so elements
    near zero in a result of large ones are not held to their own relative error)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} where {want.dtype}{list(want.shape)} is expected"
    rtol = PROGRAMS[name][2]
    if got.dtype.kind in "biuSU" or rtol == 0:
        same = np.array_equal(got, want, equal_nan=got.dtype.kind in "fc")
        return None if same else f"differs bit for bit at {np.argwhere(got != want)[:5]}"
    g, w = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), \
        want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
    if not g.size:
        return None
    scale = np.max(np.abs(w[np.isfinite(w)]), initial=0.0)
    err = np.abs(g - w)
    bad = ~((err <= rtol * (np.abs(w) + scale)) | ((g == w) | (np.isnan(g) & np.isnan(w))))
    if bad.any():
        i = np.argwhere(bad)[0]
        return (f"{int(bad.sum())} of {g.size} elements beyond rtol {rtol}, e.g. at "
                f"{tuple(i)}: {got[tuple(i)]} vs {want[tuple(i)]}")
    return None
