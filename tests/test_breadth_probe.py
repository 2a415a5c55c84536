"""What a probe of JAX's control-flow, api, reducer and indexing test areas found (issue 30,
items 2 and 3), each case against real JAX 0.10.2: weak types kept when a staged program is
re-run under ``jvp``/``vmap`` (its weak literals), ``lax.cummax``/``cummin`` refusing bools,
``cumlogsumexp`` of short axes, a compiled program called with its dynamic arguments only,
``jacrev(allow_int=True)`` of integer inputs, ``nanmean``'s rounding in float16, and the
exception types of ``ufunc.reduce(out=...)``."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

from oracle import assert_like_jax

jax = pytest.importorskip("jax")


def _leaves(tree):
    return jax.tree_util.tree_leaves(tree)


def _same(fn, rtol=2e-6, atol=1e-6):
    """``fn(jax)`` and ``fn(jaxlite)`` agree leaf by leaf: values, shapes, dtypes and weak
    types (a float0 leaf: dtype and shape)."""
    want, got = _leaves(fn(jax)), jaxlite.tree_util.tree_leaves(fn(jaxlite))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if np.dtype(w.dtype).kind == "V":          # float0
            assert np.dtype(g.dtype).kind == "V" and g.shape == w.shape
            continue
        if not hasattr(w, "weak_type"):             # a host (NumPy) result in both
            assert type(g) is np.ndarray and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
            continue
        assert_like_jax(g, w, rtol=rtol, atol=atol)


def _same_error(fn, match=None):
    """Both raise, and jaxlite's exception is of the type JAX raises (for JAX's own error
    classes, jaxlite's class of that name: ``jaxlite.errors`` mirrors ``jax.errors``)."""
    with pytest.raises(Exception) as want:
        fn(jax)
    with pytest.raises(Exception, match=match) as got:
        fn(jaxlite)
    wanted = type(want.value)
    if wanted.__module__.split(".")[0] in ("builtins", "numpy"):
        assert isinstance(got.value, wanted), f"{type(got.value)} is no {wanted}"
    else:
        assert wanted.__name__ in [c.__name__ for c in type(got.value).__mro__], \
            f"{type(got.value)} is no {wanted}"
    return got.value


_X = np.arange(5, dtype=np.float32)

# ---- weak types through re-run programs --------------------------------------------------

_WEAK_CASES = {
    "jvp cond": lambda m: m.jvp(lambda a: m.lax.cond(True, lambda a: a * 3, lambda a: a, a),
                                (2.,), (1.,)),
    "jvp cond traced pred": lambda m: m.jvp(
        lambda a: m.lax.cond(a > 1, lambda a: m.numpy.sin(a), lambda a: a * 3, a), (2.,),
        (1.,)),
    "jvp scan carry": lambda m: m.jvp(
        lambda a: m.lax.scan(lambda c, x: (c * 3, c), a, None, length=2), (2.,), (1.,)),
    "jvp while": lambda m: m.jvp(
        lambda a: m.lax.while_loop(lambda c: c < 10, lambda c: c * 3, a), (2.,), (1.,)),
    "jvp while int counter": lambda m: m.jvp(
        lambda a: m.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * a),
                                   (0, a)), (2.,), (1.,)),
    "jvp fori": lambda m: m.jvp(lambda a: m.lax.fori_loop(0, 3, lambda i, c: c * a + 1, a),
                                (2.,), (1.,)),
    "jvp jit": lambda m: m.jvp(lambda a: m.jit(lambda a: a * 3)(a), (2.,), (1.,)),
    "jvp jit strong tangent": lambda m: m.jvp(lambda a: m.jit(lambda a: a * 3 + 1)(a), (2.,),
                                              (np.float32(1.),)),
    "vmap while batched predicate": lambda m: m.vmap(
        lambda n: m.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2),
                                   (0, 1)))(np.arange(4)),
    "vmap cond batched predicate": lambda m: m.vmap(
        lambda p: m.lax.cond(p, lambda: 1., lambda: 2.))(np.array([True, False])),
    "vmap switch batched index": lambda m: m.vmap(
        lambda i: m.lax.switch(i, [lambda: 1., lambda: 2., lambda: 3.]))(np.arange(4)),
    "float16 literal": lambda m: m.jvp(
        lambda a: m.lax.cond(True, lambda a: a * 2.0, lambda a: a, a),
        (np.float16(2),), (np.float16(1),)),
    "linearize scan": lambda m: (lambda r: (r[0], r[1](1.)))(m.linearize(
        lambda a: m.lax.scan(lambda c, x: (c * 2 + 1, c), a, None, length=3)[0], 2.)),
}


@pytest.mark.parametrize("name", list(_WEAK_CASES))
def test_weak_types_survive_rerun_programs(name):
    _same(_WEAK_CASES[name])


def test_weak_literal_jvp_keeps_strong_operands_strong():
    # a strong operand stays strong: only the literal's own weak type is carried
    _same(lambda m: m.jvp(lambda a: m.lax.cond(True, lambda a: a * 3, lambda a: a, a),
                          (np.float32(2.),), (np.float32(1.),)))
    _same(lambda m: m.jvp(lambda a: m.jit(lambda a: a * 2.5)(a), (np.float16(2.),),
                          (np.float16(1.),)))


def test_weak_literal_under_x64(x64):
    # a float32 weak literal is no Python-float default there: still float32 and weak
    _same(lambda m: m.jvp(lambda a: m.jit(lambda a: a * 3.5)(a),
                          (np.float32(2.),), (np.float32(1.),)))
    _same(lambda m: m.jvp(lambda a: m.lax.cond(True, lambda a: a * 2, lambda a: a, a),
                          (2.,), (1.,)))
    _same(lambda m: m.jvp(lambda a: m.lax.cond(True, lambda a: a * 2, lambda a: a, a),
                          (np.float32(2.),), (np.float32(1.),)))


# ---- cumulative reductions -------------------------------------------------------------

@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_lax_cummax_cummin_refuse_bool(fn):
    b = np.array([False, True, False])
    err = _same_error(lambda m: getattr(m.lax, fn)(b), match="bool")
    assert fn in str(err)
    # the NumPy-level accumulations still take bools, as JAX's do
    _same(lambda m: getattr(m.numpy, "maximum" if fn == "cummax" else "minimum")
          .accumulate(b))
    _same(lambda m: getattr(m.lax, fn)(np.array([3, 1, 4], np.int8), reverse=True))


@pytest.mark.parametrize("shape,axis", [((0, 3), 0), ((1, 3), 0), ((2, 1), 1), ((4,), 0)])
def test_cumlogsumexp_short_axes_give_arrays(shape, axis):
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = jaxlite.lax.cumlogsumexp(x, axis=axis)
    assert isinstance(got, jaxlite.Array)
    _same(lambda m: m.lax.cumlogsumexp(x, axis=axis, reverse=True))


# ---- compiled programs take their dynamic arguments -------------------------------------

def _v():
    return np.arange(3, dtype=np.float32)


_COMPILED = {
    "static_argnums": (lambda m: m.jit(lambda a, n, b: a * n + b, static_argnums=1)
                       .lower(_v(), 3, _v()).compile(), (_v(), _v()), {}),
    "static_argnames kw": (lambda m: m.jit(lambda a, n, b=1.: a * n + b,
                                           static_argnames="n")
                           .lower(_v(), n=3, b=_v()).compile(), (_v(),), {"b": _v()}),
    "static_argnames positional": (lambda m: m.jit(lambda a, n, b=1.: a * n + b,
                                                   static_argnames="n")
                                   .lower(_v(), 3, _v()).compile(), (_v(), _v()), {}),
    "negative static_argnums": (lambda m: m.jit(lambda a, n: a * n, static_argnums=-1)
                                .lower(_v(), 4).compile(), (_v(),), {}),
}


@pytest.mark.parametrize("name", list(_COMPILED))
def test_compiled_called_with_dynamic_arguments(name):
    make, args, kwargs = _COMPILED[name]
    _same(lambda m: make(m)(*args, **kwargs))


def test_compiled_refuses_the_static_arguments_again():
    _same_error(lambda m: _COMPILED["static_argnums"][0](m)(_v(), 3, _v()),
                match="static arguments")
    _same_error(lambda m: _COMPILED["static_argnames kw"][0](m)(_v(), _v()))
    _same_error(lambda m: _COMPILED["static_argnames positional"][0](m)(_v(), b=_v()))
    _same_error(lambda m: _COMPILED["static_argnums"][0](m)(_v(), _v().astype(np.int32)))


def test_compiled_with_statics_donates_the_right_argument():
    f = jaxlite.jit(lambda n, a, b: a * n + b, static_argnums=0, donate_argnums=2)
    c = f.lower(3, _v(), jaxlite.numpy.ones(3)).compile()
    keep, gone = jaxlite.numpy.asarray(_v()), jaxlite.numpy.ones(3)
    out = c(keep, gone)
    np.testing.assert_array_equal(np.asarray(out), _v() * 3 + 1)
    assert gone.is_deleted() and not keep.is_deleted()


# ---- jacrev of integer inputs -----------------------------------------------------------

@pytest.mark.parametrize("case", [
    lambda m: m.jacrev(lambda a: a * 2., allow_int=True)(np.arange(3)),
    lambda m: m.jacrev(lambda a, b: a * b, argnums=(0, 1), allow_int=True)(
        np.arange(3), np.ones(3, np.float32)),
    lambda m: m.jacrev(lambda a: {"s": (a * 2.).sum(), "v": a * 1.}, allow_int=True)(
        np.arange(4, dtype=np.int16).reshape(2, 2)),
], ids=["int", "int and float", "pytree out int16"])
def test_jacrev_allow_int(case):
    _same(case)


def test_jacrev_int_without_allow_int_still_refused():
    _same_error(lambda m: m.jacrev(lambda a: a * 2.)(np.arange(3)), match="allow_int")


# ---- reducers ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_nanmean_rounding(dtype, axis):
    x = ((np.arange(24).reshape(2, 3, 4) - 7) / 3).astype(dtype)
    x[0, 1, 2] = np.nan
    w = np.arange(24).reshape(2, 3, 4) % 5 != 0
    # float16 sums: XLA adds in float16 in its own order, so a few ulp apart
    tol = 5e-3 if dtype == np.float16 else 2e-6
    _same(lambda m: m.numpy.nanmean(x, axis=axis), rtol=tol)
    _same(lambda m: m.numpy.nanmean(x, axis=axis, where=w, keepdims=True), rtol=tol)


def test_nanmean_float16_divides_in_float16():
    # sums exact in float16, quotients rounded once in float16 (JAX), not through a
    # float32 quotient: -1/3 is -0.33325 there, -0.33350 the other way
    x = np.array([[-1, 0, 0, np.nan], [2, np.nan, 5, 0], [1, 1, 1, 4]], np.float16)
    for axis in (None, 1):
        got = jaxlite.numpy.nanmean(x, axis=axis)
        want = jax.numpy.nanmean(x, axis=axis)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    _same(lambda m: m.numpy.nanmean(x, dtype=np.float32))
    _same(lambda m: m.numpy.nanmean(np.arange(6).reshape(2, 3), axis=0))


def test_ufunc_reduce_out_error_types():
    x = np.ones(3, np.float32)
    _same_error(lambda m: m.numpy.add.reduce(x, out=np.zeros(())), match="out")
    _same_error(lambda m: m.numpy.add.reduce(x, out=1), match="out")
    _same_error(lambda m: m.numpy.multiply.accumulate(x, out=np.zeros(3)), match="out")


# ---- integer arguments that JAX takes only as integers ----------------------------------

@pytest.mark.parametrize("call", [
    lambda m, a: m.numpy.cumsum(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.cumprod(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.cumulative_sum(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.sort(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.argsort(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.diff(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.delete(np.ones((2, 3)), 0, axis=a),
    lambda m, a: m.numpy.insert(np.ones((2, 3)), 0, 5., axis=a),
    lambda m, a: m.numpy.partition(np.ones((2, 3)), 0, axis=a),
    lambda m, a: m.numpy.apply_along_axis(m.numpy.sum, a, np.ones((2, 3))),
    lambda m, a: m.scipy.special.logsumexp(np.ones((2, 3)), axis=a),
    lambda m, a: m.numpy.linalg.norm(np.ones((2, 3)), axis=a),
], ids=["cumsum", "cumprod", "cumulative_sum", "sort", "argsort", "diff", "delete",
        "insert", "partition", "apply_along_axis", "logsumexp", "norm"])
def test_float_axis_is_a_type_error(call):
    for bad in (1.0, np.float32(0)):
        _same_error(lambda m: call(m, bad))
    for good in (np.int64(1), -1):
        _same(lambda m: call(m, good))


@pytest.mark.parametrize("unroll", [2.0, np.float64(2)])
def test_scan_float_unroll_is_a_type_error(unroll):
    _same_error(lambda m: m.lax.scan(lambda c, x: (c + x, c), 0., _X, unroll=unroll))
    _same_error(lambda m: m.lax.fori_loop(0, 3, lambda i, c: c + i, 0, unroll=unroll))


def test_scan_numpy_int_unroll():
    _same(lambda m: m.lax.scan(lambda c, x: (c + x, c), 0., _X, unroll=np.int32(2)))
    # fori_loop takes a float 1 (no unrolling) where scan refuses it, as JAX
    for one in (1.0, np.float32(1)):
        _same(lambda m: m.lax.fori_loop(0, 3, lambda i, c: c + i, 0, unroll=one))
        _same_error(lambda m: m.lax.scan(lambda c, x: (c + x, c), 0., _X, unroll=one))


# ---- reducers: a requested dtype, a loop reduction's start ------------------------------

@pytest.mark.parametrize("axis", [None, 0, (0, 2)])
def test_mean_rounds_to_the_requested_dtype_first(axis):
    x = ((np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7) / 3)
    # two float16 terms per mean along axis 0: exact sums, so JAX's values exactly
    got = jaxlite.numpy.mean(x, axis=0, dtype="float16")
    want = jax.numpy.mean(x, axis=0, dtype="float16")
    assert got.dtype == want.dtype and np.asarray(got).tobytes() == np.asarray(want).tobytes()
    _same(lambda m: m.numpy.mean(x, axis=axis, dtype=np.float16), rtol=5e-3)
    _same(lambda m: m.numpy.mean(np.arange(5), axis=None, dtype=np.float32))


def test_frompyfunc_reduce_starts_from_the_identity():
    f = lambda m: m.numpy.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=0)  # noqa: E731
    x = np.arange(4.)
    _same(lambda m: f(m).reduce(x))
    _same(lambda m: f(m).reduce(np.arange(6.).reshape(2, 3), axis=1))
    _same(lambda m: f(m).reduce(x, initial=2.))
    _same(lambda m: f(m).reduce(np.zeros(0)))
    # no identity: from the first element, as before
    g = lambda m: m.numpy.frompyfunc(lambda a, b: a * b + 1, 2, 1)  # noqa: E731
    _same(lambda m: g(m).reduce(x))


# ---- quantiles: the inverted-CDF method and weights -------------------------------------

_RNG = np.random.RandomState(0)
_QX = _RNG.randn(3, 4, 5).astype(np.float32)
_QXN = _QX.copy()
_QXN[0, 1, 2] = np.nan
_QXN[1] = np.nan
_QW = _RNG.rand(3, 4, 5).astype(np.float32)


@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("arr", ["plain", "nans", "int"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_quantile_inverted_cdf(fn, arr, axis, keepdims):
    a = {"plain": _QX, "nans": _QXN, "int": np.arange(60).reshape(3, 4, 5) % 7}[arr]
    s = 1 if "quantile" in fn else 100
    for q in (0.0, 0.3, 1.0, np.array([0.1, 0.5, 0.9], np.float32)):
        _same(lambda m: getattr(m.numpy, fn)(a, q * s, axis=axis, keepdims=keepdims,
                                             method="inverted_cdf"))


@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("axis,wshape", [(None, (3, 4, 5)), (1, (3, 4, 5)), (1, (4,)),
                                         ((0, 2), (3, 5)), (-1, (5,))])
def test_quantile_weights(fn, axis, wshape):
    s = 1 if "quantile" in fn else 100
    w = _QW[tuple(slice(None) if d in wshape else 0 for d in _QW.shape)] \
        if wshape != (3, 4, 5) else _QW
    w = w.reshape(wshape)
    q = np.array([0.2, 0.5, 1.0]) * s
    for a in (_QX, _QXN):
        _same(lambda m: getattr(m.numpy, fn)(a, q, axis=axis, weights=w,
                                             method="inverted_cdf"))
    bad = w.copy()
    bad.reshape(-1)[0] = -1             # a negative weight makes its slices NaN (JAX)
    _same(lambda m: getattr(m.numpy, fn)(_QX, q, axis=axis, weights=bad,
                                         method="inverted_cdf"))
    _same(lambda m: getattr(m.numpy, fn)(_QX, q, axis=axis, weights=np.zeros(wshape),
                                         method="inverted_cdf"))


def test_quantile_weights_dtypes_and_transforms():
    _same(lambda m: m.numpy.quantile(_QX.astype(np.float16), 0.5, axis=1, weights=_QW,
                                     method="inverted_cdf"))
    _same(lambda m: m.numpy.quantile(np.arange(12).reshape(3, 4), 0.5, axis=1,
                                     weights=np.ones(4, int), method="inverted_cdf"))
    _same(lambda m: m.jit(lambda a, w: m.numpy.nanquantile(
        a, 0.5, axis=1, weights=w, method="inverted_cdf"))(_QXN, _QW))
    _same(lambda m: m.grad(lambda a: m.numpy.quantile(
        a, 0.5, axis=1, weights=_QW, method="inverted_cdf").sum())(_QX))


@pytest.mark.parametrize("kw,match", [
    (dict(weights=_QW, method="linear"), "inverted_cdf"),
    (dict(weights=_QW + 1j, method="inverted_cdf"), "complex"),
    (dict(weights=_QW[0], method="inverted_cdf"), "shape"),
    (dict(weights=_QW[0, 0], method="inverted_cdf", axis=None), "axis is None"),
    (dict(method="weibull"), "method"),
])
def test_quantile_weights_errors(kw, match):
    kw = dict(dict(axis=1), **kw)
    _same_error(lambda m: m.numpy.quantile(_QX, 0.5, **kw), match=match)


def test_associative_scan_needs_a_callable():
    _same_error(lambda m: m.lax.associative_scan(42, np.ones(3)), match="callable")
    _same_error(lambda m: m.lax.associative_scan(None, 0), match="callable")


# ---- data-dependent shapes under grad of eager code --------------------------------------

_A4 = np.arange(4.)


@pytest.mark.parametrize("name,fn", [
    ("mask", lambda m, a: a[a > 1].sum()),
    ("mask at set", lambda m, a: a.at[a > 1].set(0.).sum()),
    ("nonzero", lambda m, a: a[m.numpy.nonzero(a > 1)].sum()),
    ("where", lambda m, a: (a[m.numpy.where(a > 1)] ** 2).sum()),
    ("argwhere", lambda m, a: a[m.numpy.argwhere(a > 1)[:, 0]].sum()),
    ("flatnonzero", lambda m, a: a[m.numpy.flatnonzero(a > 1)].sum()),
])
def test_concrete_masks_under_grad(name, fn):
    # forward-mode differentiation of eager code carries concrete values: the selection's
    # size is known, as in JAX
    _same(lambda m: m.grad(lambda a: fn(m, a))(_A4))
    _same(lambda m: m.jacrev(lambda a: fn(m, a))(_A4))
    _same(lambda m: m.jvp(lambda a: fn(m, a), (_A4,), (_A4,)))


def test_masks_under_staging_still_refused():
    _same_error(lambda m: m.jit(lambda a: a[a > 1])(_A4))
    _same_error(lambda m: m.grad(m.jit(lambda a: a[a > 1].sum()))(_A4))
    _same_error(lambda m: m.vmap(lambda a: a[a > 1])(np.ones((2, 3))))
    _same_error(lambda m: m.jit(lambda a: m.numpy.nonzero(a))(_A4))


@pytest.mark.parametrize("kw", [dict(in_axes=np.int64(1)), dict(out_axes=np.int32(1)),
                                dict(in_axes=(np.int64(1),)), dict(in_axes=[np.int8(0)]),
                                dict(out_axes=(np.int64(1),))])
def test_vmap_axes_refuse_numpy_integers(kw):
    _same_error(lambda m: m.vmap(lambda a: (a,), **kw)(np.ones((2, 3))), match="axes")


@pytest.mark.parametrize("in_axes,out_axes", [(1, -1), (-2, 0), (-1, 1), (2, -2)])
def test_vmap_negative_axes(in_axes, out_axes):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    _same(lambda m: m.vmap(lambda a: a * 2 + a.sum(), in_axes=in_axes, out_axes=out_axes)(x))


def test_jit_compiler_options():
    _same(lambda m: m.jit(lambda a: a * 2, compiler_options={})(_X))
    _same(lambda m: m.jit(lambda a: a * 2, compiler_options=None)(_X))
    _same(lambda m: m.jit(compiler_options={})(lambda a: a + 1)(_X))
    # an XLA flag has no meaning here: refused, never ignored
    with pytest.raises(NotImplementedError, match="xla_cpu_enable_fast_math"):
        jaxlite.jit(lambda a: a, compiler_options={"xla_cpu_enable_fast_math": False})


# ---- take / take_along_axis modes --------------------------------------------------------

_TX = np.arange(12.).reshape(3, 4)


@pytest.mark.parametrize("mode", [None, "fill", "clip", "drop", "CLIP", "FILL_OR_DROP"])
def test_take_along_axis_gather_modes(mode):
    def fn(m):
        md = getattr(m.lax.GatherScatterMode, mode) if mode and mode.isupper() else mode
        return m.numpy.take_along_axis(_TX, np.array([[0, 5, -1, -9]]), axis=1, mode=md)
    _same(fn)
    _same(lambda m: m.numpy.take_along_axis(_TX, np.array([[0, 2], [3, 1], [1, 1]]), axis=1,
                                            mode="promise_in_bounds"))


@pytest.mark.parametrize("mode", ["wrap", "raise", "foo"])
def test_take_along_axis_refuses_take_only_modes(mode):
    _same_error(lambda m: m.numpy.take_along_axis(_TX, np.array([[0]]), axis=1, mode=mode),
                match="mode")


@pytest.mark.parametrize("mode", ["promise_in_bounds", "drop", "CLIP"])
def test_take_refuses_gather_only_modes(mode):
    _same_error(lambda m: m.numpy.take(_TX, np.array([0]), mode=mode), match="mode")
    _same(lambda m: m.numpy.take(_TX, np.array([0, 13, -1, -20]), mode="wrap"))
