"""Sorting and searching of jaxlite.numpy against real JAX: sort, argsort, lexsort,
partition, searchsorted, nonzero/argwhere/flatnonzero, unique (eagerly, and under jit with
``size=``), and the concretization error without ``size=`` under jit."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import errors
from oracle import assert_like_jax

rng = np.random.default_rng(1)
F = rng.normal(size=(3, 4, 5)).astype(np.float32)
NAN = F.copy()
NAN[0, 1, 2] = np.nan
NAN[1, 0] = np.nan
I8 = rng.integers(-3, 3, size=(3, 4)).astype(np.int8)
B = rng.random((4, 5)) > 0.5
U8 = rng.integers(0, 4, size=(6,)).astype(np.uint8)
SORTED = np.array([1.0, 2.0, 2.0, 3.0, np.nan], np.float32)
V = np.array([[2.0, np.nan], [0.0, 5.0], [3.0, 2.5]], np.float32)
C = np.array([1 + 2j, 1 - 1j, 0 + 5j, np.nan, 1 - 1j], np.complex64)


def _compare(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        if hasattr(want, "_fields"):
            assert got._fields == want._fields
        for g, w in zip(got, want):
            _compare(g, w)
        return
    assert_like_jax(got, want)


def check(rjnp, name, args, kw, jit=True):
    want = getattr(rjnp, name)(*args, **kw)
    fn = getattr(jnp, name)
    _compare(fn(*args, **kw), want)
    if jit:
        _compare(jaxlite.jit(lambda *a: fn(*a, **kw))(*args), want)


SORT_CASES = [
    ("sort", (F,), dict(axis=1)), ("sort", (NAN,), {}), ("sort", (NAN,), dict(axis=None)),
    ("sort", (NAN,), dict(axis=0, descending=True)), ("sort", (I8,), dict(axis=0)),
    ("sort", (B,), {}), ("sort", (C,), {}), ("sort", (U8,), dict(descending=True)),
    ("sort", (np.array([0.0, -0.0, 0.0, -0.0], np.float32),), {}),
    ("argsort", (I8,), dict(axis=0)), ("argsort", (I8,), dict(descending=True)),
    ("argsort", (NAN,), dict(axis=-1, descending=True)), ("argsort", (NAN,), dict(axis=None)),
    ("argsort", (C,), {}), ("argsort", (B,), dict(axis=0, descending=True)),
    ("lexsort", ([I8[0], I8[1], I8[2]],), {}), ("lexsort", (I8,), dict(axis=0)),
    ("lexsort", ([NAN[0, 0], F[0, 0]],), {}),
    ("searchsorted", (SORTED, V), {}), ("searchsorted", (SORTED, V), dict(side="right")),
    ("searchsorted", (np.arange(7), np.arange(-1, 9)), dict(side="right")),
    ("searchsorted", (np.arange(7), np.arange(-1, 9)), dict(method="compare_all")),
    ("searchsorted", (np.array([3, 1, 2]), 2), dict(sorter=np.array([1, 2, 0]))),
    ("searchsorted", (np.array([1, 1, 1, 1, 1], np.int32), 1), {}),
    ("searchsorted", (np.array([1, 1, 1, 1, 1], np.int32), 1), dict(side="right")),
    ("searchsorted", (np.zeros(0, np.float32), V), {}),
    ("searchsorted", (np.arange(5, dtype=np.int32), 2.5), {}),
    ("partition", (I8,), dict(kth=2)), ("partition", (F,), dict(kth=-1, axis=1)),
    ("argpartition", (I8,), dict(axis=0, kth=1)), ("argpartition", (F[0],), dict(kth=3)),
    ("sort_complex", (I8[0],), {}),
]


@pytest.mark.parametrize("name,args,kw", SORT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SORT_CASES)])
def test_sorting_like_jax(rjnp, name, args, kw):
    check(rjnp, name, args, kw)


def test_sort_keeps_weak_type(rjax, rjnp):
    want = rjnp.sort(rjax.lax.broadcast(rjnp.asarray(2.0), (3,)))
    got = jnp.sort(jaxlite.lax.broadcast(jnp.asarray(2.0), (3,)))
    assert_like_jax(got, want)
    assert_like_jax(jnp.argsort(jaxlite.lax.broadcast(jnp.asarray(2.0), (3,))),
                    rjnp.argsort(rjax.lax.broadcast(rjnp.asarray(2.0), (3,))))


DATA_CASES = [
    ("nonzero", (I8,), {}), ("nonzero", (NAN[0],), {}), ("nonzero", (B,), {}),
    ("nonzero", (np.zeros((2, 3)),), {}),
    ("flatnonzero", (I8,), {}), ("argwhere", (I8,), {}), ("argwhere", (np.int32(3),), {}),
    ("argwhere", (np.int32(0),), {}), ("argwhere", (np.zeros((0, 3)),), {}),
    ("unique", (I8,), {}), ("unique", (NAN,), {}),
    ("unique", (I8,), dict(return_index=True, return_inverse=True, return_counts=True)),
    ("unique", (NAN,), dict(return_counts=True, equal_nan=False)),
    ("unique", (NAN,), dict(return_counts=True, return_index=True)),
    ("unique", (I8,), dict(axis=0, return_inverse=True, return_counts=True, return_index=True)),
    ("unique", (np.array([[1, 2], [1, 2], [0, 5]]),), dict(axis=1, return_inverse=True)),
    ("unique", (np.array([[1, 2], [1, 2], [0, 5]]),), dict(axis=0)),
    ("unique", (np.zeros(0, np.float32),), dict(return_counts=True)),
    ("unique", (C,), {}),
    ("unique_values", (NAN,), {}), ("unique_counts", (I8,), {}), ("unique_all", (NAN,), {}),
    ("unique_inverse", (I8,), {}),
]


@pytest.mark.parametrize("name,args,kw", DATA_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(DATA_CASES)])
def test_value_dependent_shapes_eagerly(rjnp, name, args, kw):
    check(rjnp, name, args, kw, jit=False)


SIZED_CASES = [
    ("nonzero", (I8,), dict(size=12, fill_value=-1)), ("nonzero", (I8,), dict(size=3)),
    ("nonzero", (I8,), dict(size=20, fill_value=(7, 8))), ("nonzero", (B,), dict(size=0)),
    ("flatnonzero", (I8,), dict(size=3)), ("flatnonzero", (I8,), dict(size=14, fill_value=99)),
    ("argwhere", (I8,), dict(size=20, fill_value=(7, 8))), ("argwhere", (B,), dict(size=4)),
    ("unique", (I8,), dict(size=9, return_index=True, return_inverse=True,
                           return_counts=True)),
    ("unique", (I8,), dict(size=9, fill_value=100, return_index=True, return_counts=True)),
    ("unique", (I8,), dict(size=2, return_counts=True)),
    ("unique", (NAN[0],), dict(size=25, return_inverse=True)),
    ("unique", (I8,), dict(size=4, axis=1, return_counts=True)),
    ("unique_all", (I8,), dict(size=9)), ("unique_values", (NAN[0],), dict(size=30)),
]


@pytest.mark.parametrize("name,args,kw", SIZED_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SIZED_CASES)])
def test_value_dependent_shapes_with_size_under_jit(rjnp, name, args, kw):
    check(rjnp, name, args, kw, jit=True)


def test_one_argument_where(rjnp):
    _compare(jnp.where(I8 > 0), rjnp.where(I8 > 0))
    f = jaxlite.jit(lambda x: jnp.where(x > 0, size=5, fill_value=-1))
    _compare(f(I8), rjnp.where(I8 > 0, size=5, fill_value=-1))


@pytest.mark.parametrize("fn", [
    lambda x: jnp.nonzero(x), lambda x: jnp.flatnonzero(x), lambda x: jnp.argwhere(x),
    lambda x: jnp.unique(x), lambda x: jnp.where(x > 0), lambda x: x.nonzero(),
    lambda x: jnp.unique_counts(x),
])
def test_no_size_under_jit_is_a_concretization_error(fn):
    with pytest.raises(errors.ConcretizationTypeError, match="size"):
        jaxlite.jit(fn)(I8)


def test_real_jax_raises_the_same_error_type(rjax, rjnp):
    for fn in (rjnp.nonzero, rjnp.unique, rjnp.argwhere):
        with pytest.raises(rjax.errors.ConcretizationTypeError):
            rjax.jit(fn)(I8)
    assert issubclass(errors.ConcretizationTypeError, TypeError)


ERRORS = [
    ("sort", (F,), dict(axis=3), ValueError),
    ("argsort", (F,), dict(axis=-4), ValueError),
    ("lexsort", ([],), {}, TypeError),
    ("lexsort", ([np.ones(2), np.ones(3)],), {}, ValueError),
    ("searchsorted", (np.ones((2, 2)), 1.0), {}, ValueError),
    ("searchsorted", (SORTED, 1.0), dict(side="middle"), ValueError),
    ("nonzero", (np.int32(3),), {}, ValueError),
    ("nonzero", (I8,), dict(size=3, fill_value=(1, 2, 3)), ValueError),
    ("partition", (C,), dict(kth=1), NotImplementedError),
    ("partition", (I8,), dict(kth=9), ValueError),
]


@pytest.mark.parametrize("name,args,kw,exc", ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_like_jax(rjnp, name, args, kw, exc):
    with pytest.raises(exc):
        getattr(rjnp, name)(*args, **kw)
    with pytest.raises(exc):
        getattr(jnp, name)(*args, **kw)


def test_top_k_like_jax(rjax):
    x = np.array([[1.0, np.nan, 3.0, 3.0, -1.0], [5.0, 4.0, 4.0, 0.0, 9.0]], np.float32)
    for k in (0, 1, 3, 5):
        _compare(list(jaxlite.lax.top_k(x, k)), list(rjax.lax.top_k(x, k)))
    _compare(list(jaxlite.jit(lambda a: jaxlite.lax.top_k(a, 2))(I8)),
             list(rjax.lax.top_k(I8, 2)))


# ---- property tests -----------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=0, max_size=12),
       st.lists(st.integers(-7, 7), min_size=0, max_size=6),
       st.sampled_from(["left", "right"]))
def test_property_searchsorted_matches_numpy(a, v, side):
    a = np.sort(np.asarray(a, np.int32))
    v = np.asarray(v, np.int32)
    got = jnp.searchsorted(a, v, side=side)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, side=side))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=15), st.booleans())
def test_property_argsort_is_stable_like_numpy(a, descending):
    a = np.asarray(a, np.int32)
    got = np.asarray(jnp.argsort(a, descending=descending))
    if descending:
        want = np.argsort(-a.astype(np.int64), kind="stable")
    else:
        want = np.argsort(a, kind="stable")
    np.testing.assert_array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=0, max_size=15))
def test_property_unique_matches_numpy(a):
    a = np.asarray(a, np.int32)
    vals, idx, inv, cnt = jnp.unique(a, return_index=True, return_inverse=True,
                                     return_counts=True)
    w_vals, w_idx, w_inv, w_cnt = np.unique(a, return_index=True, return_inverse=True,
                                            return_counts=True)
    for g, w in ((vals, w_vals), (idx, w_idx), (inv, w_inv.reshape(a.shape)), (cnt, w_cnt)):
        np.testing.assert_array_equal(np.asarray(g), w)
