"""jaxlite.random's distributions against real JAX 0.10 (the oracle), sample by sample.

Each case draws from the same key in both libraries and compares: bit for bit where the
sampler is Threefry bits, float conversion and arithmetic that jaxlite rounds as XLA does
(log/log1p/fma), else within the ulp bound the function's docstring states (exp, tan, pow,
lgamma and the final steps of the gamma sampler).  Rejection samplers must take JAX's
accept/reject path: a different decision would give a different sample, far outside any
ulp bound.  Also: result dtypes and shapes, jit, vmap over keys, bad input (JAX's
exception types), and the fast tier keeps shapes small (JAX compiles each one).
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.random as jr

F32 = np.float32


@pytest.fixture(scope="module")
def rr(rjax):
    import jax.random
    return jax.random


def _ulps(a, b):
    """Largest distance in units in the last place between two float arrays (NaNs at the
    same places count as equal)."""
    it = {8: np.int64, 4: np.int32, 2: np.int16}[a.dtype.itemsize]
    ai = a.view(it).astype(np.int64)
    bi = b.view(it).astype(np.int64)
    m = np.int64(np.iinfo(it).max)
    ai = np.where(ai < 0, -(ai & m), ai)
    bi = np.where(bi < 0, -(bi & m), bi)
    d = np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ai - bi))
    return int(d.max(initial=0))


def _compare(got, want, bound, kind="ulp"):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if kind == "count":   # integers/float counts: at most ``bound`` elements differ
        same = (got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" \
            else got == want
        assert int((~same).sum()) <= bound, (got, want)
    elif kind == "abs":   # logarithms near 0: error relative to max(|x|, 1)
        eps = np.finfo(got.dtype).eps
        tol = bound * eps * np.maximum(np.abs(want), 1)
        assert np.all(np.abs(got.astype(np.float64) - want) <= tol), (got, want)
    elif got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        assert _ulps(got, want) <= bound, (_ulps(got, want), got, want)


A3 = np.array([0.5, 1.0, 3.0], F32)

# name, positional parameters after the key, keyword arguments, bound (float32), kind
CASES = [
    ("exponential", (), {}, 0, "ulp"),
    ("laplace", (), {}, 0, "ulp"),
    ("logistic", (), {}, 0, "ulp"),
    ("cauchy", (), {}, 4, "ulp"),
    ("rademacher", (), {}, 0, "ulp"),
    ("maxwell", (), {}, 2, "ulp"),
    ("double_sided_maxwell", (1.0, 2.0), {}, 8, "abs"),
    ("pareto", (3.0,), {}, 8, "ulp"),
    ("rayleigh", (2.0,), {}, 0, "ulp"),
    ("weibull_min", (2.0, 1.5), {}, 4, "ulp"),
    ("lognormal", (0.5,), {}, 4, "ulp"),
    ("wald", (1.5,), {}, 0, "ulp"),
    ("triangular", (0.0, 0.3, 1.0), {}, 0, "ulp"),
    ("geometric", (0.3,), {}, 0, "ulp"),
    ("gamma", (0.3,), {}, 16, "ulp"),
    ("gamma", (2.5,), {}, 16, "ulp"),
    ("loggamma", (0.3,), {}, 16, "abs"),
    ("loggamma", (4.0,), {}, 16, "abs"),
    ("beta", (0.5, 2.0), {}, 16, "ulp"),
    ("chisquare", (3.0,), {}, 16, "ulp"),
    ("f", (3.0, 5.0), {}, 32, "ulp"),
    ("t", (4.0,), {}, 16, "ulp"),
    ("generalized_normal", (1.5,), {}, 32, "ulp"),
    ("poisson", (3.0,), {}, 0, "ulp"),
    ("poisson", (40.0,), {}, 0, "count"),
    ("binomial", (10, 0.3), {}, 0, "count"),
    ("binomial", (200, 0.8), {}, 1, "count"),
]
FAST = {"exponential", "laplace", "logistic", "cauchy", "maxwell", "pareto", "wald",
        "triangular", "geometric", "gamma", "poisson", "binomial"}


def _draw(lib, name, seed, args, kwargs, shape):
    return getattr(lib, name)(lib.key(seed), *args, shape=shape, **kwargs)


def _case_id(c):
    return f"{c[0]}{c[1]}"


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in FAST and c[:2] not in (
    ("gamma", (0.3,)), ("binomial", (200, 0.8)), ("poisson", (40.0,)))], ids=_case_id)
def test_samples_like_jax(rr, case):
    name, args, kwargs, bound, kind = case
    _compare(_draw(jr, name, 3, args, kwargs, (6,)), _draw(rr, name, 3, args, kwargs, (6,)),
             bound, kind)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("seed", [0, 1, 2 ** 31 - 1])
def test_samples_like_jax_many(rr, case, seed):
    name, args, kwargs, bound, kind = case
    shape = (60,) if name in ("poisson", "binomial") else (200,)
    _compare(_draw(jr, name, seed, args, kwargs, shape),
             _draw(rr, name, seed, args, kwargs, shape), bound, kind)


@pytest.mark.slow
@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("dirichlet", (A3,), {}, (5,)),
    ("ball", (3,), {"p": 2}, (5,)),
    ("ball", (2,), {"p": 1.5}, (4,)),
    ("multinomial", (20.0, A3 / A3.sum()), {}, (4, 3)),
    ("poisson", (np.array([0.0, 2.0, 12.0, 1000.0], F32),), {}, None),
    ("binomial", (np.array([5.0, -1.0, np.nan, np.inf, 100.0], F32),
                  np.array([0.5, 0.5, 0.5, 0.5, np.nan], F32)), {}, None),
    ("gamma", (np.array([[0.1], [1.0], [30.0]], F32),), {}, (3, 2)),
])
def test_vector_parameters(rr, name, args, kwargs, shape):
    got = _draw(jr, name, 5, args, kwargs, shape)
    want = _draw(rr, name, 5, args, kwargs, shape)
    _compare(got, want, 0 if name in ("poisson", "binomial", "multinomial") else 16,
             "count" if name in ("poisson", "binomial", "multinomial") else "ulp")


SHAPE_DTYPE_CASES = [
    ("rademacher", (), {"shape": (2,), "dtype": np.float32}),
    ("rademacher", (), {"shape": (4,), "dtype": np.uint8}),     # -1 wraps to 255
    ("rademacher", (), {"shape": (2,), "dtype": bool}),
    ("geometric", (np.array([0.5, 0.25], F32),), {"dtype": np.int16}),
    ("exponential", (), {"shape": (2,), "dtype": np.float16}),
    pytest.param("gamma", (A3,), {}, marks=pytest.mark.slow),
    pytest.param("poisson", (np.float32(2.0),), {"shape": (2, 1), "dtype": np.uint8},
                 marks=pytest.mark.slow),
    pytest.param("double_sided_maxwell", (np.zeros(2, F32), 1.0), {"shape": (3,)},
                 marks=pytest.mark.slow),
    pytest.param("multinomial", (5.0, A3 / A3.sum()), {"dtype": np.int32},
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("fn,args,kw", SHAPE_DTYPE_CASES)
def test_shapes_and_dtypes(rr, fn, args, kw):
    """Default shapes come from the parameters; dtype arguments (float16, int16, uint8)."""
    got = getattr(jr, fn)(jr.key(0), *args, **kw)
    want = getattr(rr, fn)(rr.key(0), *args, **kw)
    _compare(got, want, 16, "count" if fn in ("poisson", "multinomial") else "ulp")


@pytest.mark.parametrize("fn,args", [("exponential", ()), ("poisson", (4.0,)),
                                     pytest.param("gamma", (2.0,), marks=pytest.mark.slow)])
def test_jit_and_vmap_over_keys(rr, fn, args):
    import jax
    keys = jr.split(jr.key(7), 3)
    rkeys = rr.split(rr.key(7), 3)
    got = jaxlite.jit(jaxlite.vmap(lambda kk: getattr(jr, fn)(kk, *args, shape=(4,))))(keys)
    want = jax.vmap(lambda kk: getattr(rr, fn)(kk, *args, shape=(4,)))(rkeys)
    _compare(got, want, 16)


@pytest.mark.parametrize("fn,args", [
    ("exponential", ()), ("geometric", (0.5,)),
    pytest.param("poisson", (3.0,), marks=pytest.mark.slow),
    pytest.param("binomial", (10.0, 0.5), marks=pytest.mark.slow),
    pytest.param("gamma", (1.5,), marks=pytest.mark.slow)])
def test_x64_dtypes(rr, x64, fn, args):
    """float64/int64 results; float64 values to 1e-12 (XLA's double log/log1p differ from
    NumPy's in the last bits)."""
    got = getattr(jr, fn)(jr.key(1), *args, shape=(3,))
    want = getattr(rr, fn)(rr.key(1), *args, shape=(3,))
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-12)


@pytest.mark.parametrize("call,exc", [
    (lambda r: r.exponential(r.key(0), (2,), np.int32), ValueError),
    (lambda r: r.gamma(r.key(0), 1.0, dtype=np.int32), ValueError),
    (lambda r: r.gamma(r.key(0), np.ones(3, F32), (2,)), ValueError),
    (lambda r: r.pareto(r.key(0), 1 + 1j), ValueError),
    (lambda r: r.geometric(r.key(0), 0.5, dtype=np.float32), ValueError),
    (lambda r: r.binomial(r.key(0), 3, 0.5, dtype=np.int32), ValueError),
    (lambda r: r.poisson(r.key(0), np.ones(3, F32), (2,)), ValueError),
    (lambda r: r.multinomial(r.key(0), 3.0, np.float32(0.5)), ValueError),
    (lambda r: r.dirichlet(r.key(0), 1.0), ValueError),
    (lambda r: r.exponential(r.split(r.key(0), 2), (2,)), ValueError),
    (lambda r: r.laplace([1, 2], (2,)), TypeError),
    (lambda r: r.gamma(r.key(0), [1.0, 2.0]), TypeError),
    (lambda r: r.beta(r.key(0), 1 + 1j, 1.0), ValueError),
    (lambda r: r.rademacher(r.key(0), (2,), "foo"), TypeError),
    (lambda r: r.orthogonal(r.key(0), -1), ValueError),
])
def test_bad_input(rr, call, exc):
    with pytest.raises(exc):
        call(rr)
    with pytest.raises(exc):
        call(jr)


@pytest.mark.parametrize("a", [pytest.param(0.5, marks=pytest.mark.slow), 2.0])
def test_gamma_gradient_like_jax(rr, a):
    """d sample / d a by the implicit (reparameterised) rule, as JAX; also under jit and
    through beta (two log-gamma draws)."""
    import jax
    got = jaxlite.grad(lambda x: jr.gamma(jr.key(0), x, (3,)).sum())(F32(a))
    want = jax.grad(lambda x: rr.gamma(rr.key(0), x, (3,)).sum())(F32(a))
    np.testing.assert_allclose(got, want, rtol=2e-5)
    if a != 0.5:
        return      # the jit-of-grad half runs in the slow tier
    got = jaxlite.jit(jaxlite.grad(lambda x: jr.loggamma(jr.key(1), x, (3,)).sum()))(F32(a))
    want = jax.grad(lambda x: rr.loggamma(rr.key(1), x, (3,)).sum())(F32(a))
    np.testing.assert_allclose(got, want, rtol=2e-5)


@pytest.mark.slow
def test_beta_gradient_like_jax(rr):
    import jax
    got = jaxlite.grad(lambda x: jr.beta(jr.key(2), x, 2.0))(F32(0.7))
    want = jax.grad(lambda x: rr.beta(rr.key(2), x, 2.0))(F32(0.7))
    np.testing.assert_allclose(got, want, rtol=1e-4)


COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]], F32)


@pytest.mark.parametrize("method", ["cholesky", pytest.param("eigh", marks=pytest.mark.slow),
                                    pytest.param("svd", marks=pytest.mark.slow)])
def test_multivariate_normal_like_jax(rr, method):
    mean = np.array([1.0, 2.0, 3.0], F32)
    got = jr.multivariate_normal(jr.key(0), mean, COV, (4,), method=method)
    want = rr.multivariate_normal(rr.key(0), mean, COV, (4,), method=method)
    assert got.dtype == want.dtype and got.shape == want.shape
    # the same normal draws through a LAPACK factor: equal to its rounding
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,m", [(3, None), pytest.param(2, 4, marks=pytest.mark.slow),
                                 pytest.param(4, 2, marks=pytest.mark.slow)])
def test_orthogonal_like_jax(rr, n, m):
    got = np.asarray(jr.orthogonal(jr.key(1), n, (2,), m=m))
    want = np.asarray(rr.orthogonal(rr.key(1), n, (2,), m=m))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-6)
    small = min(got.shape[-2:])
    gram = got @ np.swapaxes(got, -1, -2) if got.shape[-2] == small else \
        np.swapaxes(got, -1, -2) @ got
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-5)


def test_key_dtype(rr):
    assert str(jr.key_dtype()) == str(rr.key_dtype()) == "key<fry>"
    assert jr.key(0).dtype == jr.key_dtype("threefry2x32")
    for lib in (jr, rr):
        with pytest.raises(ValueError):
            lib.key_dtype("rbg2")


@pytest.mark.parametrize("call,exc", [
    (lambda r: r.orthogonal(r.key(0), 2.5), TypeError),
    (lambda r: r.multivariate_normal(r.key(0), np.zeros(2, F32), np.eye(3, dtype=F32)),
     ValueError),
    (lambda r: r.multivariate_normal(r.key(0), np.zeros(2, F32), np.eye(2, dtype=F32),
                                     method="qr"), ValueError),
    (lambda r: r.multivariate_normal(r.key(0), np.float32(0), np.eye(2, dtype=F32)),
     ValueError),
])
def test_bad_matrix_input(rr, call, exc):
    with pytest.raises(exc):
        call(rr)
    with pytest.raises(exc):
        call(jr)
