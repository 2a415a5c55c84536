"""Reductions, cumulative ops and quantiles of jaxlite.numpy against real JAX (values, shape,
dtype, weak type), eagerly and under jit, plus property tests against NumPy."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import errors
from oracle import assert_like_jax

rng = np.random.default_rng(0)
F = rng.normal(size=(3, 4, 5)).astype(np.float32)
I8 = rng.integers(-5, 5, size=(3, 4)).astype(np.int8)
U8 = rng.integers(0, 200, size=(4, 3)).astype(np.uint8)
B = rng.random((3, 4)) > 0.5
F16 = rng.normal(size=(4, 6)).astype(np.float16)
C = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(np.complex64)
NAN = F.copy()
NAN[0, 1, 2] = np.nan
NAN[1] = np.nan          # an all-NaN block: NaN results / -1 indices
I32 = rng.integers(-100, 100, size=(5, 6)).astype(np.int32)


def _compare(got, want, rtol, atol):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, rtol, atol)
        return
    assert_like_jax(got, want, rtol=rtol, atol=atol)


def check(rjnp, name, args, kw, *, jit=True, rtol=1e-5, atol=1e-5):
    want = getattr(rjnp, name)(*args, **kw)
    fn = getattr(jnp, name)
    _compare(fn(*args, **kw), want, rtol, atol)
    if jit:
        _compare(jaxlite.jit(lambda *a: fn(*a, **kw))(*args), want, rtol, atol)


CASES = [
    ("sum", (F,), {}), ("sum", (F,), dict(axis=1)), ("sum", (F,), dict(axis=-1, keepdims=True)),
    ("sum", (F,), dict(axis=(0, 2))), ("sum", (I8,), {}), ("sum", (U8,), dict(axis=0)),
    ("sum", (B,), dict(axis=1)), ("sum", (F16,), dict(axis=1)), ("sum", (C,), dict(axis=0)),
    ("sum", (I8,), dict(dtype=np.int16)), ("sum", (B,), dict(promote_integers=False)),
    ("sum", (I8,), dict(promote_integers=False, axis=0)), ("sum", (I8,), dict(initial=200)),
    ("sum", (F,), dict(where=F > 0, axis=2)), ("sum", (F,), dict(axis=()),),
    ("sum", (np.zeros((0, 3), np.float32),), dict(axis=0)),
    ("prod", (I8,), dict(axis=1)), ("prod", (F,), dict(axis=(1,), keepdims=True)),
    ("prod", (U8,), {}), ("prod", (B,), {}), ("prod", (F,), dict(where=F > 0, initial=2.0)),
    ("max", (F,), dict(axis=2)), ("max", (I8,), {}), ("max", (B,), dict(axis=0)),
    ("max", (NAN,), dict(axis=2)), ("min", (U8,), dict(axis=1, keepdims=True)),
    ("max", (F,), dict(where=F > 0, initial=0.0, axis=0)),
    ("min", (I8,), dict(initial=-10)), ("amax", (F,), dict(axis=(0, 1))), ("amin", (F16,), {}),
    ("max", (np.zeros((0, 3), np.float32),), dict(axis=0, initial=1.0)),
    ("ptp", (I8,), dict(axis=1)), ("ptp", (F,), dict(keepdims=True)),
    ("all", (I8,), dict(axis=0)), ("any", (F,), {}), ("all", (B,), dict(axis=1, keepdims=True)),
    ("any", (B,), dict(where=~B)), ("all", (np.zeros(0),), {}),
    ("count_nonzero", (I8,), dict(axis=0)), ("count_nonzero", (B,), dict(keepdims=True)),
    ("mean", (F,), dict(axis=1)), ("mean", (I8,), {}), ("mean", (B,), dict(axis=0)),
    ("mean", (F16,), dict(axis=1)), ("mean", (C,), {}), ("mean", (F,), dict(dtype=np.int32)),
    ("mean", (F,), dict(where=F > 0, axis=(0, 2), keepdims=True)),
    ("var", (F,), dict(axis=(0, 2), ddof=1)), ("var", (I8,), {}), ("var", (C,), dict(axis=1)),
    ("var", (F,), dict(correction=1, axis=0)), ("var", (F,), dict(where=F > 0, axis=1)),
    ("var", (F16,), dict(axis=0)), ("std", (F,), dict(keepdims=True)),
    ("std", (I32,), dict(axis=1, ddof=2)), ("var", (np.ones(1, np.float32),), dict(ddof=2)),
    ("argmax", (F,), dict(axis=1, keepdims=True)), ("argmin", (F,), {}),
    ("argmax", (NAN,), dict(axis=2)), ("argmin", (I8,), dict(axis=-1)),
    ("argmax", (B,), dict(keepdims=True)),
    ("cumsum", (I8,), dict(axis=1)), ("cumsum", (B,), {}), ("cumprod", (F,), dict(axis=0)),
    ("cumsum", (I8,), dict(dtype=np.int16)), ("cumsum", (F16,), dict(axis=1)),
    ("cumprod", (U8,), dict(axis=-1)), ("cumsum", (C,), dict(axis=1)),
    ("cumulative_sum", (I8,), dict(axis=0, include_initial=True)),
    ("cumulative_sum", (B[0],), {}), ("cumulative_prod", (F[0, 0],), dict(include_initial=True)),
    ("cumulative_prod", (I8,), dict(axis=1)),
    ("nansum", (NAN,), dict(axis=1)), ("nanprod", (NAN,), dict(axis=2)),
    ("nansum", (I8,), {}), ("nanmean", (NAN,), dict(axis=(1, 2))), ("nanmean", (I8,), {}),
    ("nanmax", (NAN,), dict(axis=2)), ("nanmin", (NAN,), dict(axis=0, keepdims=True)),
    ("nanmax", (I8,), dict(axis=1)), ("nanargmax", (NAN,), dict(axis=2)),
    ("nanargmin", (NAN,), dict(axis=2)), ("nanargmin", (NAN[0],), {}),
    ("nanvar", (NAN,), dict(axis=2)), ("nanstd", (NAN,), dict(axis=0, ddof=1)),
    ("nancumsum", (NAN,), dict(axis=1)), ("nancumprod", (NAN[0],), dict(axis=0)),
    ("median", (F,), dict(axis=1)), ("median", (I8,), {}), ("median", (NAN,), dict(axis=2)),
    ("median", (F,), dict(axis=(0, 2), keepdims=True)),
    ("nanmedian", (NAN,), dict(axis=2)), ("nanmedian", (NAN,), dict(axis=0, keepdims=True)),
    ("quantile", (F, np.array([0.1, 0.5, 0.9], np.float32)), dict(axis=(0, 2))),
    ("quantile", (F, 0.3), dict(axis=1, keepdims=True)), ("quantile", (I8, 0.25), {}),
    ("quantile", (F16, 0.4), dict(axis=1)),
    ("quantile", (F, 0.4), dict(axis=2, method="nearest")),
    ("quantile", (np.arange(4.0, dtype=np.float32), 0.5), dict(method="nearest")),
    ("quantile", (F, 0.4), dict(axis=2, method="lower")),
    ("quantile", (F, 0.4), dict(axis=2, method="higher")),
    ("quantile", (F, 0.4), dict(axis=0, method="midpoint")),
    ("quantile", (NAN, 0.7), dict(axis=2)),
    ("nanquantile", (NAN, np.array([0.0, 0.3, 1.0], np.float32)), dict(axis=0)),
    ("percentile", (I8, 30.0), dict(axis=0, keepdims=True)),
    ("nanpercentile", (NAN, 75), dict(axis=2)),
    ("average", (F,), dict(axis=1, weights=np.arange(4.0, dtype=np.float32))),
    ("average", (F,), dict(axis=1, weights=np.arange(4), returned=True)),
    ("average", (I8,), dict(weights=np.abs(I8.astype(np.float32)) + 1, returned=True)),
    ("average", (F,), dict(returned=True)), ("average", (I8,), dict(axis=0, keepdims=True)),
]


@pytest.mark.parametrize("name,args,kw", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_like_jax(rjnp, name, args, kw):
    rtol = 2e-3 if any(getattr(a, "dtype", None) == np.float16 for a in args) else 1e-5
    check(rjnp, name, args, kw, rtol=rtol, atol=1e-4)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "argmax",
                                  "cumsum", "cumprod", "nansum", "nanmean", "nanmax", "median",
                                  "ptp", "average", "all", "any", "count_nonzero", "nanvar",
                                  "cumulative_sum"])
def test_weak_and_scalar_inputs(rjax, rjnp, name):
    """Reductions of weakly typed inputs are strongly typed (as JAX)."""
    for fill in (2.0, 3):
        want = getattr(rjnp, name)(rjax.lax.broadcast(rjnp.asarray(fill), (3,)))
        x = jaxlite.lax.broadcast(jnp.asarray(fill), (3,))
        assert x.weak_type
        assert_like_jax(getattr(jnp, name)(x), want)
    if name != "cumulative_sum":
        assert_like_jax(getattr(jnp, name)(3.0), getattr(rjnp, name)(3.0))


def test_methods(rjnp):
    x = jnp.asarray(F)
    assert_like_jax(x.var(axis=0), rjnp.var(F, axis=0))
    assert_like_jax(x.std(ddof=1), rjnp.std(F, ddof=1))
    assert_like_jax(x.cumsum(axis=1), rjnp.cumsum(F, axis=1))
    assert_like_jax(x.ptp(axis=2), rjnp.ptp(F, axis=2))
    assert_like_jax(x.sum(axis=(0, 1)), rjnp.sum(F, axis=(0, 1)))
    assert_like_jax(x.argmax(axis=1), rjnp.argmax(F, axis=1))


def test_int_sum_wraps_like_jax(rjnp):
    big = np.full(4, 2**30, np.int32)
    check(rjnp, "sum", (big,), {})
    check(rjnp, "cumsum", (big,), {})


ERRORS = [
    ("sum", (F,), dict(axis=3), ValueError),
    ("sum", (F,), dict(axis=-4), ValueError),
    ("sum", (F,), dict(axis=(0, 0)), ValueError),
    ("mean", (F,), dict(axis=(1, -2)), ValueError),
    ("sum", (F,), dict(where=np.ones(F.shape, np.int32)), ValueError),
    ("max", (np.zeros(0, np.float32),), {}, ValueError),
    ("min", (np.zeros((2, 0), np.float32),), dict(axis=1), ValueError),
    ("max", (F,), dict(where=F > 0), ValueError),
    ("argmax", (np.zeros(0, np.float32),), {}, ValueError),
    ("argmin", (np.zeros((0, 3), np.float32),), dict(axis=0), ValueError),
    ("nanargmax", (np.zeros(0, np.float32),), {}, ValueError),
    ("nanmax", (np.zeros(0, np.float32),), {}, ValueError),
    ("var", (F,), dict(ddof=1, correction=1), ValueError),
    ("quantile", (F, 0.5), dict(method="foo"), ValueError),
    ("quantile", (F, np.ones((2, 2), np.float32) / 2), {}, ValueError),
    ("quantile", (C, 0.5), {}, ValueError),
    ("cumulative_sum", (I8,), {}, ValueError),
    ("cumsum", (I8,), dict(axis=2), ValueError),
    ("ptp", (B,), {}, TypeError),
    ("average", (F,), dict(weights=np.ones(4, np.float32)), ValueError),
    ("average", (F,), dict(axis=1, weights=np.ones(3, np.float32)), ValueError),
    ("sum", ([1, 2],), {}, TypeError),
]


@pytest.mark.parametrize("name,args,kw,exc", ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_like_jax(rjnp, name, args, kw, exc):
    with pytest.raises(exc):
        getattr(rjnp, name)(*args, **kw)
    with pytest.raises(exc):
        getattr(jnp, name)(*args, **kw)


def test_error_messages_name_the_problem():
    with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 3"):
        jnp.sum(F, axis=3)
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        jnp.max(np.zeros((0, 2), np.float32), axis=0)
    with pytest.raises(ValueError, match="argmax of an empty sequence"):
        jnp.argmax(np.zeros(0, np.float32))


def test_reductions_trace_under_jit():
    """Reductions need no concrete values: they trace into reduction primitives."""
    f = jaxlite.jit(lambda x: jnp.var(x, axis=0) + jnp.median(x, axis=1).sum())
    a = f(F[0])
    b = f(F[1])
    assert a.shape == b.shape == (5,)
    np.testing.assert_allclose(np.asarray(a), np.var(F[0], axis=0) + np.median(F[0], axis=1)
                               .sum(), rtol=1e-5)
    text = str(jaxlite.make_jaxpr(lambda x: jnp.sum(x, axis=0))(F[0]))
    assert "reduce_sum" in text


def test_nonconcrete_where_is_fine_under_jit():
    f = jaxlite.jit(lambda x, m: jnp.mean(x, where=m, axis=1))
    got = f(F[0], F[0] > 0)
    want = np.array([row[row > 0].mean() if (row > 0).any() else np.nan for row in F[0]])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_concrete_value_errors_are_tracer_errors():
    # A reduction result used in Python control flow under jit: the tracer error, not a
    # wrong value.
    def f(x):
        if jnp.sum(x) > 0:
            return x
        return -x
    with pytest.raises(errors.TracerBoolConversionError):
        jaxlite.jit(f)(F[0])


# ---- property tests against NumPy ---------------------------------------------------------

@st.composite
def array_and_axis(draw, dtypes=("float32", "int32", "bool")):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    dt = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**16))
    r = np.random.default_rng(seed)
    if dt == "bool":
        x = r.random(shape) > 0.5
    elif dt == "int32":
        x = r.integers(-20, 20, size=shape).astype(np.int32)
    else:
        x = r.normal(size=shape).astype(np.float32)
    nd = len(shape)
    axis = draw(st.one_of(
        st.none(),
        st.integers(-nd, nd - 1) if nd else st.none(),
        st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)
        if nd else st.none()))
    keepdims = draw(st.booleans())
    return np.asarray(x), axis, keepdims


def _np_ref(name, x, axis, keepdims):
    xf = x.astype(np.float64)
    fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
          "var": np.var, "std": np.std, "all": np.all, "any": np.any}[name]
    if name in ("sum", "prod") and x.dtype == np.int32:
        return fn(x, axis=axis, keepdims=keepdims, dtype=np.int32)   # wraps, like JAX
    src = x if name in ("all", "any", "max", "min") else xf
    return fn(src, axis=axis, keepdims=keepdims)


@settings(max_examples=40, deadline=None)
@given(array_and_axis(), st.sampled_from(["sum", "prod", "max", "min", "mean", "var", "std",
                                           "all", "any"]))
def test_property_reductions_match_numpy(rjnp, case, name):
    x, axis, keepdims = case
    got = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    want = _np_ref(name, x, axis, keepdims)
    assert got.shape == np.shape(want)
    g = np.asarray(got)
    if g.dtype.kind in "biu" and name not in ("mean", "var", "std"):
        np.testing.assert_array_equal(g, np.asarray(want).astype(g.dtype))
    else:
        np.testing.assert_allclose(g.astype(np.float64), want, rtol=2e-4, atol=2e-4)
    # dtype and weak type from the spec
    ref = getattr(rjnp, name)(x, axis=axis, keepdims=keepdims)
    assert got.dtype == ref.dtype and got.weak_type == ref.weak_type


@settings(max_examples=30, deadline=None)
@given(array_and_axis(dtypes=("float32", "int32")), st.sampled_from(["argmax", "argmin",
                                                                      "cumsum", "cumprod"]))
def test_property_index_and_cumulative_match_numpy(case, name):
    x, axis, _ = case
    if isinstance(axis, tuple):
        axis = axis[0] if axis else None
    if x.ndim == 0 and axis is not None:
        axis = None
    got = np.asarray(getattr(jnp, name)(x, axis=axis))
    # NumPy widens int32 cumulative ops to int64; JAX keeps (and wraps in) the input dtype
    kw = {"dtype": x.dtype} if name in ("cumsum", "cumprod") else {}
    want = getattr(np, name)(x, axis=axis, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-4,
                               atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(array_and_axis(dtypes=("float32",)), st.floats(0, 1))
def test_property_quantile_matches_numpy(case, q):
    x, axis, keepdims = case
    got = jnp.quantile(x, np.float32(q), axis=axis, keepdims=keepdims)
    want = np.quantile(x.astype(np.float64), q, axis=axis, keepdims=keepdims)
    if keepdims and np.ndim(x) == 0:
        want = np.reshape(want, (1,))   # JAX (the spec) keeps one axis of a 0-d input
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-4, atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(array_and_axis(dtypes=("float32",)), st.integers(0, 2**16),
       st.sampled_from(["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                        "nanmedian"]))
def test_property_nan_reductions_match_numpy(case, seed, name):
    x, axis, keepdims = case
    x = x.copy()
    if x.size:
        x[np.random.default_rng(seed).random(x.shape) < 0.3] = np.nan
    if name == "nanmedian" and isinstance(axis, tuple) and not axis:
        axis = None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # NumPy warns on all-NaN / empty slices
        want = getattr(np, name)(x.astype(np.float64), axis=axis, keepdims=keepdims)
    if name == "nanmedian" and keepdims and np.ndim(x) == 0:
        want = np.reshape(want, (1,))   # JAX (the spec) keeps one axis of a 0-d input
    got = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want) and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-4, atol=2e-4)


@settings(max_examples=30, deadline=None)
@given(array_and_axis(dtypes=("float32", "int32")), st.integers(0, 2**16),
       st.sampled_from(["sum", "prod", "mean", "any", "all"]))
def test_property_where_masks_like_numpy(case, seed, name):
    x, axis, keepdims = case
    mask = np.random.default_rng(seed).random(x.shape) < 0.6
    kw = dict(axis=axis, keepdims=keepdims, where=mask)
    got = getattr(jnp, name)(x, **kw)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # NumPy warns on all-NaN / empty slices
        if name in ("sum", "prod") and x.dtype == np.int32:
            kw["dtype"] = np.int32           # wraps on overflow, like jaxlite / JAX
            want = getattr(np, name)(x, **kw)
        else:
            want = getattr(np, name)(x.astype(np.float64) if name in ("sum", "prod", "mean")
                                     else x, **kw)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("name", ["mean", "var", "std", "sin", "sqrt", "true_divide"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "int64", "bool"])
def test_inexact_dtype_of_integers_with_x64(x64, rjnp, name, dtype):
    x = np.arange(3).astype(dtype)
    args = (x, x) if name == "true_divide" else (x,)
    got = getattr(jnp, name)(*[jnp.asarray(a) for a in args])
    want = getattr(rjnp, name)(*args)
    assert got.dtype == want.dtype


# ---- the compiled programs' specialised reductions ---------------------------------------

@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("shape,axes,transposed", [
    ((3,), (0,), False), ((4, 5), (0,), False), ((4, 5), (1,), False),
    ((4, 5), (1,), True), ((2, 3, 4), (1, 2), False), ((2, 3, 4), (0, 2), False),
    ((), (), False), ((0, 3), (1,), False)])
def test_specialised_reduction_matches_impl(name, shape, axes, transposed):
    """``impl_for`` (what a compiled program calls) gives the same values and dtype as the
    primitive's ``impl`` for float32, including a non-contiguous operand reduced over its
    trailing axis (summed in double precision, as impl does)."""
    from jaxlite.core.avals import ShapedArray
    from jaxlite.primitives import reduction
    prim = getattr(reduction, name + "_p")
    params = {"axes": axes, **({"out_sharding": None} if name == "reduce_sum" else {})}
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape[::-1] if transposed else shape).astype(np.float32)
    if transposed:
        x = x.T
    if x.ndim:
        x[..., :1] = 0.0        # zeros: the signed-zero handling of max/min
    fn = prim.impl_for([ShapedArray(shape, np.float32)], params)
    got, want = np.asarray(fn(x)), np.asarray(prim.impl(x, **params))
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_specialised_sum_accumulates_wide_over_a_leading_axis():
    """A float32 sum over a non-trailing axis in a compiled program keeps the running sum
    exact past 2**24 (as XLA does): 2**25 ones over axis 0 is 2**25, not 2**24."""
    x = jnp.ones((2 ** 25, 1), jnp.float32)
    out = jaxlite.jit(lambda a: jnp.sum(a, axis=0))(x)
    assert out.dtype == jnp.float32 and out.shape == (1,)
    assert float(out[0]) == 2.0 ** 25
