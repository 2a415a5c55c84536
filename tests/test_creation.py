"""Array creation in jaxlite.numpy against real JAX: values, shape, dtype and weak type,
eagerly and under jit, plus the exception types for bad input and traced sizes.

Each case is one expression evaluated twice, with ``jnp``/``jax`` bound to jaxlite and to
real JAX.  Cases with array arguments (``x``, ``y``) also run inside ``jit``.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import errors
from oracle import assert_like_jax


def _tree_compare(got, want, rtol=1e-6, atol=1e-6):
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _tree_compare(g, w, rtol, atol)
    elif isinstance(want, (bool, int, float, np.dtype)):
        assert type(got) is type(want) and got == want, (got, want)
    else:
        assert_like_jax(got, want, rtol=rtol, atol=atol)


def _eval(expr, mod, jnp_mod, args, jit):
    env = {"jnp": jnp_mod, "np": np, "jax": mod}
    if not jit:
        return eval(expr, {**env, **{k: jnp_mod.asarray(v) for k, v in args.items()}})
    names = list(args)
    fn = eval(f"lambda {', '.join(names)}: {expr}", env)
    return mod.jit(fn)(*args.values())


def _lite_exc(e):
    """jaxlite's class for a JAX exception (its tracer errors have the same names)."""
    return getattr(errors, type(e).__name__, type(e))


def check(expr, rjax, args=None, jit=False, rtol=1e-6, atol=1e-6):
    """``expr`` gives the same result (or raises the same exception type) in both."""
    import jax.numpy as rjnp
    args = args or {}
    try:
        want = _eval(expr, rjax, rjnp, args, jit)
    except Exception as e:  # noqa: BLE001  (the oracle's exception is the spec)
        with pytest.raises(_lite_exc(e)):
            _eval(expr, jaxlite, jnp, args, jit)
        return
    got = _eval(expr, jaxlite, jnp, args, jit)
    _tree_compare(got, want, rtol, atol)


# ---- array / asarray -----------------------------------------------------------------

ARRAY_CASES = [
    "jnp.array(1)", "jnp.array(1.0)", "jnp.array(True)", "jnp.array(1j)", "jnp.asarray(1)",
    "jnp.array([1, 2.0])", "jnp.array([True, 2])", "jnp.array([True, False])",
    "jnp.array([1, 2j])", "jnp.array((1, 2))", "jnp.array([[1, 2], [3, 4]])",
    "jnp.array([[1, 2], (3, 4)])", "jnp.array([])", "jnp.array([[]])", "jnp.array(())",
    "jnp.array([], dtype=jnp.int32)", "jnp.array([1.0])",
    "jnp.array([np.int8(1), 2])", "jnp.array([np.float16(1), 2.0])",
    "jnp.array([np.float64(1), 2])", "jnp.array([np.uint8(1), np.int8(2)])",
    "jnp.array([np.int16(1), 2.0])", "jnp.array([[np.int16(1)], [np.int16(2)]])",
    "jnp.array([np.int32(1), np.int64(2)])",
    "jnp.array(np.ones(3))", "jnp.array(np.ones(3, np.uint64))",
    "jnp.array(np.ones(3, np.float16))", "jnp.array(np.ones(2, jnp.bfloat16))",
    "jnp.array(np.arange(4, dtype=np.int8).reshape(2, 2))",
    "jnp.array(np.array([1, 2], np.int64))", "jnp.array(np.float64(2))",
    "jnp.array(np.int8(2))", "jnp.array(np.complex128(1j))", "jnp.array(np.bool_(True))",
    "jnp.array([np.ones(2), np.ones(2)])",
    "jnp.array(3, ndmin=2)", "jnp.array([1, 2], ndmin=3)",
    "jnp.array([[1, 2], [3, 4]], ndmin=1)", "jnp.array(jnp.asarray(1.0), ndmin=1)",
    "jnp.array([1.7, -2.7], dtype=jnp.int32)", "jnp.array(1, dtype=jnp.float32)",
    "jnp.array(1, dtype=jnp.float64)", "jnp.array(1.5, dtype=jnp.int32)",
    "jnp.array([1, 2], dtype=float)", "jnp.array([1, 2], dtype=int)",
    "jnp.array([1, 2], dtype='float16')", "jnp.array([1, 2], dtype=complex)",
    "jnp.array([0, 2], dtype=bool)", "jnp.array([1.5, 2], dtype=jnp.bfloat16)",
    "jnp.array([1, 2], copy=False)", "jnp.array([[1, 2], [3, 4]], order='K')",
    "jnp.array(jnp.asarray(1.0))", "jnp.asarray(jnp.asarray(1.0))",
    "jnp.array(jnp.asarray(1.0), dtype=jnp.float32)",
    "jnp.array([jnp.ones(2), jnp.zeros(2)])", "jnp.array([jnp.ones(2), [1, 2]])",
    "jnp.array([jnp.ones(2, jnp.int32), [1.5, 2]])", "jnp.array([jnp.asarray(1.0), 2])",
    "jnp.array([jnp.asarray(1, jnp.int8), 2])", "jnp.array([jnp.asarray(1, jnp.int8), 2.5])",
    "jnp.array([jnp.asarray(1.0), jnp.asarray(2, jnp.int8)])",
    "jnp.array([[jnp.ones(2)], [jnp.zeros(2)]])", "jnp.array((jnp.arange(3), jnp.arange(3)))",
    "jnp.asarray([1, 2], jnp.float16)", "jnp.asarray(np.array(3.0))",
    "jnp.asarray(np.float32(3.0))", "jnp.asarray(jnp.asarray(1.0), jnp.float32)",
    "jnp.asarray(jnp.arange(3), dtype=jnp.float32)", "jnp.asarray(2.5)",
    "jnp.asarray(jnp.ones(2), copy=True)",
    "jnp.copy(jnp.asarray(1.0))", "jnp.copy(3)", "jnp.copy(jnp.arange(3))",
    "jnp.copy(np.arange(3))",
    # bad input
    "jnp.array([[1], [1, 2]])", "jnp.array('a')", "jnp.array(None)", "jnp.array([1, None])",
    "jnp.array({})", "jnp.array(2**40)", "jnp.array([2**40])",
    "jnp.array(300, dtype=jnp.uint8)", "jnp.array([300], dtype=jnp.uint8)",
    "jnp.array(-1, dtype=jnp.uint32)", "jnp.array(2.5j, dtype=jnp.float32)",
    "jnp.array([[1, 2], [3, 4]], order='F')", "jnp.array([jnp.ones(2), jnp.zeros(3)])",
    "jnp.array([1, 2], dtype='U')", "jnp.copy([1, 2])",
]


@pytest.mark.parametrize("expr", ARRAY_CASES)
def test_array(expr, rjax):
    check(expr, rjax)


# ---- fills ---------------------------------------------------------------------------

FILL_CASES = [
    "jnp.zeros(3)", "jnp.zeros((2, 3), jnp.int8)", "jnp.zeros((2, 3), int)",
    "jnp.zeros((2, 3), float)", "jnp.zeros((2, 3), complex)", "jnp.zeros((2, 3), bool)",
    "jnp.zeros((2, 3), 'float64')", "jnp.zeros(())", "jnp.zeros(0)", "jnp.zeros((0, 3))",
    "jnp.zeros([2, 3])", "jnp.zeros(np.int64(3))", "jnp.zeros(jnp.array(3))",
    "jnp.zeros(shape=(2,))", "jnp.zeros(True)", "jnp.ones(jnp.asarray([2, 3]))",
    "jnp.ones(np.array([2, 3]))", "jnp.ones((2,), jnp.bfloat16)", "jnp.ones(4, jnp.uint8)",
    "jnp.empty((2,))", "jnp.empty((2, 2), jnp.int16)",
    "jnp.full(3, 1.5)", "jnp.full(3, 1)", "jnp.full(3, True)", "jnp.full((), 2)",
    "jnp.full((2, 2), 1j)", "jnp.full(3, 2.7, dtype=jnp.int32)",
    "jnp.full(3, 300, dtype=jnp.uint8)", "jnp.full(3, -1, dtype=jnp.uint8)",
    "jnp.full((2, 3), jnp.arange(3))", "jnp.full((2, 3), np.arange(3))",
    "jnp.full((2, 3), jnp.arange(3), dtype=jnp.float32)", "jnp.full(3, jnp.asarray(2.0))",
    "jnp.full(3, np.float64(2.0))", "jnp.full(3, np.int8(2))",
    "jnp.full(3, jnp.asarray(2, jnp.int8), dtype=jnp.float16)",
    "jnp.full_like(jnp.arange(3), 2.5)", "jnp.full_like(jnp.asarray(1.0), 2)",
    "jnp.full_like(jnp.ones(3), jnp.arange(3))", "jnp.full_like(jnp.ones((2, 3)), jnp.arange(3))",
    "jnp.full_like(jnp.ones(3), 2, shape=(2, 2))", "jnp.full_like(jnp.ones(3), 2, dtype=jnp.int8)",
    "jnp.full_like(jnp.ones(3, jnp.int32), 2.7)", "jnp.full_like(1.0, 2)",
    "jnp.full_like(np.ones(3), 2)", "jnp.full_like(jnp.asarray(1.0), jnp.asarray(2, jnp.int8))",
    "jnp.zeros_like(jnp.asarray(1.0))", "jnp.zeros_like(3)", "jnp.ones_like(3.0)",
    "jnp.zeros_like(jnp.ones(3), shape=5)", "jnp.zeros_like(jnp.ones(3), dtype=jnp.bool_)",
    "jnp.zeros_like(np.float64(1))", "jnp.zeros_like(True)",
    "jnp.ones_like(jnp.ones((2, 3)), shape=(3,))", "jnp.empty_like(jnp.ones(2, jnp.int8))",
    "jnp.ones_like(jnp.ones((2, 3), jnp.complex64))",
    # bad input
    "jnp.zeros(-1)", "jnp.zeros((2, -1))", "jnp.zeros(2.0)", "jnp.zeros((2, None))",
    "jnp.zeros('3')", "jnp.zeros((2, 3), 'U')", "jnp.full(None, 1)",
    "jnp.full(3, 1j, dtype=jnp.float32)", "jnp.full((2, 3), [1, 2, 3])",
    "jnp.full((2, 3), jnp.arange(4))", "jnp.zeros_like([1, 2])",
    "jnp.full_like(jnp.asarray(1.0), jnp.asarray([1., 2.]))", "jnp.ones((2,), shape=3)",
]


@pytest.mark.parametrize("expr", FILL_CASES)
def test_fills(expr, rjax):
    check(expr, rjax)


# ---- ranges --------------------------------------------------------------------------

RANGE_CASES = [
    "jnp.arange(5)", "jnp.arange(5.0)", "jnp.arange(0)", "jnp.arange(-3)", "jnp.arange(2, 5)",
    "jnp.arange(5, 2)", "jnp.arange(5, 2, -1)", "jnp.arange(0, 1, 0.1)",
    "jnp.arange(1, 0, -0.3)", "jnp.arange(0, 10, 3)", "jnp.arange(-5, 5, 2)",
    "jnp.arange(5, dtype=jnp.float32)", "jnp.arange(5, dtype=jnp.int8)",
    "jnp.arange(5, dtype=jnp.uint8)", "jnp.arange(5, dtype=jnp.float16)",
    "jnp.arange(10, dtype=jnp.bfloat16)", "jnp.arange(1.5, 4)", "jnp.arange(np.int8(5))",
    "jnp.arange(np.int8(2), 5)", "jnp.arange(np.float16(2), 5)",
    "jnp.arange(jnp.asarray(5, jnp.int16))", "jnp.arange(jnp.asarray(5.0))",
    "jnp.arange(0, 5, None)", "jnp.arange(2, None)", "jnp.arange(start=3)",
    "jnp.arange(0, 5, 2, jnp.float32)", "jnp.arange(0.5, 3.7, 0.7)",
    "jnp.arange(0, 1, 0.1, dtype=jnp.int32)", "jnp.arange(5, 0, -2, dtype=jnp.float32)",
    "jnp.arange(0, 5.0)", "jnp.arange(3, 5, 0.5)", "jnp.arange(2, 8, 2, dtype=jnp.float16)",
    "jnp.arange(0, 3, 1, dtype=jnp.complex64)",
    "jnp.arange(0, 10, 0)", "jnp.arange(5, dtype=jnp.bool_)", "jnp.arange(True)",
    "jnp.arange(jnp.asarray([5]))", "jnp.arange(2 + 1j)", "jnp.arange(None)",
    "jnp.arange([1, 2])",
    "jnp.linspace(0, 1, 5)", "jnp.linspace(0, 1)", "jnp.linspace(0, 1, 5, endpoint=False)",
    "jnp.linspace(0, 1, 5, retstep=True)",
    "jnp.linspace(0, 1, 5, endpoint=False, retstep=True)",
    "jnp.linspace(0, 10, 4, dtype=jnp.int32)",
    "jnp.linspace(0, 10, 4, dtype=jnp.int32, retstep=True)",
    "jnp.linspace(-10, 10, 7, dtype=jnp.int32)", "jnp.linspace(0, 1, 1)",
    "jnp.linspace(0, 1, 1, retstep=True)", "jnp.linspace(0, 1, 1, endpoint=False, retstep=True)",
    "jnp.linspace(0, 1, 0)", "jnp.linspace(0, 1, 0, retstep=True)",
    "jnp.linspace(jnp.zeros(2), jnp.ones(2), 3)",
    "jnp.linspace(jnp.zeros(2), jnp.ones(2), 3, axis=1)",
    "jnp.linspace(jnp.zeros(2), jnp.ones(2), 3, axis=-1)",
    "jnp.linspace(jnp.zeros(2), jnp.ones((3, 2)), 4, axis=1)",
    "jnp.linspace(0, 1, 5, dtype=jnp.float16)", "jnp.linspace(0, 1, 5, dtype=jnp.bfloat16)",
    "jnp.linspace(np.float16(0), 1, 5)", "jnp.linspace(jnp.asarray(0, jnp.int8), 1, 5)",
    "jnp.linspace(0, 1j, 3)", "jnp.linspace(0.0, 1.0, 7)",
    "jnp.linspace(2.0, 3.0, 5, endpoint=False)",
    "jnp.linspace(0, 1, np.int64(3))", "jnp.linspace(0, 1, jnp.asarray(3))",
    "jnp.linspace(0, 10, 5, dtype=jnp.uint8)", "jnp.linspace(0, 10, 5, dtype=jnp.bool_)",
    "jnp.linspace(0, 1, -1)", "jnp.linspace(0, 1, 2.5)", "jnp.linspace([0, 1], 2, 3)",
    "jnp.logspace(0, 2, 3)", "jnp.logspace(0, 2, 3, base=2)",
    "jnp.logspace(0, 2, 3, endpoint=False)", "jnp.logspace(0, 2, 3, dtype=jnp.int32)",
    "jnp.logspace(jnp.zeros(2), jnp.ones(2), 3, axis=1)",
    "jnp.logspace(0., 2., 4, base=jnp.asarray(2.0))",
    "jnp.geomspace(1, 1000, 4)", "jnp.geomspace(-1, -1000, 4)",
    "jnp.geomspace(1, 1000, 4, endpoint=False)", "jnp.geomspace(0, 10, 3)",
    "jnp.geomspace(jnp.ones(2), jnp.full(2, 8.0), 4, axis=1)",
    "jnp.geomspace(1, 1000, 4, dtype=jnp.float16)",
]


@pytest.mark.parametrize("expr", RANGE_CASES)
def test_ranges(expr, rjax):
    check(expr, rjax, rtol=2e-6, atol=1e-6)


def test_arange_lowers_to_iota(rjax):
    """Integer arange is one iota (plus the start offset); float steps one mul-add."""
    names = lambda f: [e.primitive.name for e in jaxlite.make_jaxpr(f)().jaxpr.eqns]  # noqa
    assert names(lambda: jnp.arange(5)) == ["iota"]
    assert names(lambda: jnp.arange(2, 5)) == ["iota", "add"]
    assert names(lambda: jnp.arange(0.0, 1.0, 0.25)) == ["iota", "mul", "add"]
    assert names(lambda: jnp.zeros((2, 3))) == ["broadcast_in_dim"]
    assert names(lambda: jnp.full((2,), 2.0)) == ["broadcast_in_dim"]
    # JAX adds the offset even when it is 0
    assert names(lambda: jnp.eye(3)) == ["iota", "iota", "add", "eq", "convert_element_type"]
    assert "gather" not in names(lambda: jnp.diagonal(jnp.ones((3, 4)), 1))


# ---- matrices and grids --------------------------------------------------------------

M = np.arange(12.0, dtype=np.float32).reshape(3, 4)
B3 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
V = np.array([1, 2, 3], np.int32)

MATRIX_CASES = [
    ("jnp.eye(3)", {}), ("jnp.eye(3, 4)", {}), ("jnp.eye(3, 4, k=1, dtype=jnp.int32)", {}),
    ("jnp.eye(4, 3, k=-2)", {}), ("jnp.eye(3, k=5)", {}), ("jnp.eye(0)", {}),
    ("jnp.eye(2, dtype=bool)", {}), ("jnp.eye(3, k=np.int64(1))", {}),
    ("jnp.eye(3, k=jnp.asarray(1))", {}), ("jnp.eye(np.int8(2))", {}),
    ("jnp.identity(3)", {}), ("jnp.identity(2, jnp.int8)", {}),
    ("jnp.tri(3)", {}), ("jnp.tri(3, 4)", {}), ("jnp.tri(3, k=1)", {}),
    ("jnp.tri(3, 4, k=-1, dtype=jnp.int32)", {}), ("jnp.tri(2, 0)", {}),
    ("jnp.tril(x)", {"x": M}), ("jnp.tril(x, 1)", {"x": M}), ("jnp.tril(x, -1)", {"x": M}),
    ("jnp.triu(x)", {"x": M}), ("jnp.triu(x, 2)", {"x": M}), ("jnp.triu(x, -1)", {"x": M}),
    ("jnp.tril(x)", {"x": B3}), ("jnp.triu(x, 1)", {"x": B3}),
    ("jnp.tril(jnp.full((2, 2), 3.0))", {}),
    ("jnp.diag(x)", {"x": M}), ("jnp.diag(x, 1)", {"x": M}), ("jnp.diag(x, -2)", {"x": M}),
    ("jnp.diag(x, 7)", {"x": M}), ("jnp.diag(x)", {"x": V}), ("jnp.diag(x, 2)", {"x": V}),
    ("jnp.diag(x, -1)", {"x": V}), ("jnp.diag(jnp.full(2, 1.5))", {}),
    ("jnp.diag(np.arange(3))", {}), ("jnp.diagflat(x)", {"x": M[:2, :2]}),
    ("jnp.diagflat(x, 1)", {"x": V}),
    ("jnp.diagonal(x)", {"x": M}), ("jnp.diagonal(x, 1)", {"x": M}),
    ("jnp.diagonal(x, -1)", {"x": M}), ("jnp.diagonal(x, 4)", {"x": M}),
    ("jnp.diagonal(x, -5)", {"x": M}), ("jnp.diagonal(x)", {"x": B3}),
    ("jnp.diagonal(x, 1, 1, 2)", {"x": B3}), ("jnp.diagonal(x, 0, 2, 0)", {"x": B3}),
    ("jnp.diagonal(x, -1, -1, -2)", {"x": B3}), ("x.diagonal()", {"x": M}),
    ("jnp.meshgrid(x, y)", {"x": V, "y": M[0]}),
    ("jnp.meshgrid(x, y, indexing='ij')", {"x": V, "y": M[0]}),
    ("jnp.meshgrid(x, y, sparse=True)", {"x": V, "y": M[0]}),
    ("jnp.meshgrid(x, y, x, indexing='ij', sparse=True)", {"x": V, "y": M[0]}),
    ("jnp.meshgrid(x, y, x)", {"x": V, "y": M[0]}), ("jnp.meshgrid(x)", {"x": V}),
    ("jnp.meshgrid()", {}),
    ("jnp.tril_indices(3)", {}), ("jnp.tril_indices(3, 1, 4)", {}), ("jnp.triu_indices(3, -1)", {}),
    ("jnp.triu_indices(3, m=2)", {}), ("jnp.tril_indices_from(x)", {"x": M}),
    ("jnp.triu_indices_from(x, k=1)", {"x": M}), ("jnp.diag_indices(3)", {}),
    ("jnp.diag_indices(2, ndim=3)", {}), ("jnp.diag_indices_from(x)", {"x": M[:, :3]}),
]

MATRIX_ERRORS = [
    "jnp.eye(-1)", "jnp.eye(2.5)", "jnp.eye(3, k=1.5)", "jnp.eye(3, k=jnp.ones(2, jnp.int32))",
    "jnp.tri(-2)", "jnp.tril(jnp.ones(3))", "jnp.triu(3.0)", "jnp.diag(jnp.ones((2, 2, 2)))",
    "jnp.diag(jnp.ones(3), 1.5)", "jnp.diagonal(jnp.ones(3))",
    "jnp.diagonal(jnp.ones((2, 2)), 0, 1, 1)", "jnp.diagonal(jnp.ones((2, 2)), 0, 0, 2)",
    "jnp.meshgrid(jnp.ones((2, 2)))", "jnp.meshgrid(jnp.ones(2), indexing='xx')",
    "jnp.meshgrid([1, 2])", "jnp.tril([[1, 2], [3, 4]])", "jnp.tril_indices(-1)",
    "jnp.tril_indices(2.5)", "jnp.tril_indices_from(jnp.ones(3))",
    "jnp.diag_indices_from(jnp.ones((3, 4)))",
]


@pytest.mark.parametrize("expr,args", MATRIX_CASES)
def test_matrices(expr, args, rjax):
    check(expr, rjax, args)
    if args:
        check(expr, rjax, args, jit=True)


@pytest.mark.parametrize("expr", MATRIX_ERRORS)
def test_matrix_errors(expr, rjax):
    check(expr, rjax)


def test_fromfunction(rjax):
    import jax.numpy as rjnp
    f = lambda i, j: i * 10 + j  # noqa: E731
    assert_like_jax(jnp.fromfunction(f, (2, 3)), rjnp.fromfunction(f, (2, 3)))
    assert_like_jax(jnp.fromfunction(f, (2, 3), dtype=int),
                    rjnp.fromfunction(f, (2, 3), dtype=int))


# ---- jit: traced values where sizes are needed, and traced values that are fine ------

JIT_CASES = [
    ("jnp.zeros(n)", {"n": 3}), ("jnp.zeros((n, 2))", {"n": 3}), ("jnp.full(n, 1)", {"n": 3}),
    ("jnp.ones_like(x, shape=n)", {"x": M, "n": 3}), ("jnp.arange(n)", {"n": 3}),
    ("jnp.arange(0, 5, n)", {"n": 1}), ("jnp.linspace(0, 1, n)", {"n": 3}),
    ("jnp.eye(n)", {"n": 3}), ("jnp.diag(x, n)", {"x": M, "n": 1}),
    ("jnp.full((3,), f)", {"f": 2.0}), ("jnp.full((2, 3), x)", {"x": M[0, :3]}),
    ("jnp.linspace(s, 1, 3)", {"s": 0.0}), ("jnp.linspace(x, 2 * x, 4, axis=-1)", {"x": M}),
    ("jnp.eye(3, k=k)", {"k": 1}), ("jnp.tri(3, k=k)", {"k": -1}),
    ("jnp.array([a, 2.0])", {"a": 1.0}), ("jnp.array([x, x])", {"x": M}),
    ("jnp.array([x[0], x[1]])", {"x": M}), ("jnp.array([[x[0, 0], 1], [2, 3]])", {"x": M}),
    ("jnp.array(a)", {"a": 1.0}), ("jnp.asarray(a)", {"a": 1.0}),
    ("jnp.array(x, jnp.int32)", {"x": M}), ("jnp.asarray(a, jnp.float32)", {"a": 1.0}),
    ("jnp.full_like(a, 3)", {"a": 1.0}), ("jnp.zeros_like(a)", {"a": 1}),
    ("jnp.copy(x)", {"x": M}), ("jnp.array(x, ndmin=4)", {"x": M}),
    ("jnp.logspace(x, x + 1, 3)", {"x": V}), ("jnp.geomspace(x, 8 * x, 4)", {"x": M[0] + 1}),
]


@pytest.mark.parametrize("expr,args", JIT_CASES)
def test_under_jit(expr, args, rjax):
    check(expr, rjax, args, jit=True, rtol=2e-6)


def test_array_copies_and_asarray_does_not():
    x = jnp.ones(3)
    assert jnp.asarray(x) is x
    assert jnp.array(x) is not x
    assert jnp.asarray(x, copy=True) is not x
    assert jnp.asarray(x, dtype=jnp.float32) is x
    names = [e.primitive.name for e in jaxlite.make_jaxpr(lambda v: jnp.array(v))(x).jaxpr.eqns]
    assert names == ["copy"]


def test_device_argument():
    dev = jaxlite.devices()[0]
    for out in (jnp.zeros(3, device=dev), jnp.array([1, 2], device=dev),
                jnp.arange(3, device=dev), jnp.full(2, 1.0, device=dev)):
        assert out.committed and out.device == dev


def test_x64(x64, rjax):
    for expr in ["jnp.array(np.ones(3))", "jnp.arange(3)", "jnp.zeros(2)", "jnp.array([1, 2.5])",
                 "jnp.array(1.0)", "jnp.linspace(0, 1, 3)", "jnp.full(2, 1)", "jnp.eye(2)",
                 "jnp.array(2**40)", "jnp.array([np.uint64(3)])"]:
        check(expr, rjax)


@settings(max_examples=40, deadline=None)
@given(st.integers(-20, 20), st.integers(-20, 20),
       st.sampled_from([1, 2, 3, -1, -2, 0.5, -0.75, 1.5]))
def test_arange_property(start, stop, step):
    """arange has NumPy's length and values (float steps within float32 rounding)."""
    got = jnp.arange(start, stop, step)
    want = np.arange(start, stop, step)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(st.floats(-100, 100), st.floats(-100, 100), st.integers(0, 30), st.booleans())
def test_linspace_property(start, stop, num, endpoint):
    got = jnp.linspace(start, stop, num, endpoint=endpoint)
    want = np.linspace(start, stop, num, endpoint=endpoint)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 5), st.integers(0, 5), st.integers(-6, 6))
def test_eye_tri_diag_property(n, m, k):
    np.testing.assert_array_equal(np.asarray(jnp.eye(n, m, k)), np.eye(n, m, k))
    np.testing.assert_array_equal(np.asarray(jnp.tri(n, m, k)), np.tri(n, m, k))
    a = np.arange(n * m, dtype=np.float32).reshape(n, m)
    np.testing.assert_array_equal(np.asarray(jnp.diagonal(a, k)), np.diagonal(a, k))
    np.testing.assert_array_equal(np.asarray(jnp.tril(a, k)), np.tril(a, k))
    np.testing.assert_array_equal(np.asarray(jnp.triu(a, k)), np.triu(a, k))
    v = np.arange(n + m, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.diag(v, k)), np.diag(v, k))
