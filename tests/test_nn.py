"""jaxlite.nn against real jax.nn: activations over dtypes, Python scalars and edge values;
softmax / log_softmax / logsumexp with axes, masks, weights and signs; one_hot; numerical
stability (huge logits, rows of -inf); jit; bad input."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import nn
from test_ufuncs import GROUPS, check_against, compare, jax_results

pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype")

BF16 = ml_dtypes.bfloat16
EDGE = [-np.inf, -1e4, -30.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 30.0, 1e4, np.inf,
        np.nan]

ACTIVATIONS = ["relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish",
               "log_sigmoid", "leaky_relu", "hard_tanh", "elu", "celu", "selu", "gelu",
               "hard_sigmoid", "hard_silu", "hard_swish", "mish", "squareplus",
               "sparse_plus", "sparse_sigmoid", "log1mexp", "tanh", "identity"]
ACT_DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "bool"]


def _dt(name):
    return np.dtype(BF16) if name == "bfloat16" else np.dtype(name)


def _act_input(dt):
    if dt == "bool":
        return np.array([True, False])
    if dt.startswith("int"):
        return np.array([-100, -3, -1, 0, 1, 2, 7, 100], dt)
    return np.array(EDGE, _dt(dt))


def _nn(rjax):
    import jax.nn
    return jax.nn


@pytest.mark.parametrize("dt", ACT_DTYPES)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(rjax, rjnp, name, dt):
    want = GROUPS.get(rjax, rjnp, ("nn-act", dt), lambda: {
        n: (n, [_act_input(dt)]) for n in ACTIVATIONS}, module=_nn(rjax))[name]
    check_against(want, name, [_act_input(dt)], module=nn, zero_sign=False)


@pytest.mark.parametrize("s", [2, -1.5, 0.0, 40.0, True], ids=repr)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_python_scalar(rjax, rjnp, name, s):
    want = GROUPS.get(rjax, rjnp, ("nn-scalar", type(s), s), lambda: {
        n: (n, [s]) for n in ACTIVATIONS}, module=_nn(rjax))[name]
    check_against(want, name, [s], module=nn, zero_sign=False)


_PARAM_CASES = [("leaky_relu", [0.2]), ("leaky_relu", [2]), ("elu", [0.5]), ("celu", [2.0]),
                ("squareplus", [1.0]), ("gelu", [False]), ("gelu", [True])]


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "int32"])
@pytest.mark.parametrize("case", range(len(_PARAM_CASES)))
def test_activation_parameters(rjax, rjnp, case, dt):
    def calls():
        return {i: (n, [_act_input(dt)] + p) for i, (n, p) in enumerate(_PARAM_CASES)}
    want = GROUPS.get(rjax, rjnp, ("nn-param", dt), calls, module=_nn(rjax))[case]
    name, params = _PARAM_CASES[case]
    check_against(want, name, [_act_input(dt)] + params, module=nn, zero_sign=False)


def test_gelu_exact_scalar_and_default(rjax):
    jnn = _nn(rjax)
    x = np.linspace(-5, 5, 11).astype(np.float32)
    for approx in (True, False):
        want = jnn.gelu(x, approximate=approx)
        compare(nn.gelu(jnp.asarray(x), approximate=approx), want, want)
    want = jnn.gelu(x)
    compare(nn.gelu(jnp.asarray(x)), want, want)    # approximate=True is the default
    assert not np.allclose(np.asarray(nn.gelu(x, approximate=False)),
                           np.asarray(nn.gelu(x, approximate=True)), rtol=0, atol=1e-6)


# ---- softmax family ---------------------------------------------------------------

_rng = np.random.default_rng(0)
X = _rng.normal(size=(3, 4, 5)).astype(np.float32) * 3
BIG = np.array([[1e30, 1e30, -1e30], [1000.0, 999.0, -np.inf], [-np.inf, -np.inf, -np.inf],
                [np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0]], np.float32)
MASK = _rng.random((3, 4, 5)) > 0.3
MASK[0, 0] = False            # a fully masked row
MASK_B = np.array([[True, True, False], [True, False, True], [False, False, False],
                   [True, True, True], [False, True, True]])


def _sm_cases():
    cases = []
    for name in ("softmax", "log_softmax"):
        for axis in (-1, 0, 1, (0, 2), None):
            cases.append((name, [X], dict(axis=axis)))
        cases += [(name, [BIG], {}), (name, [BIG], dict(axis=0)),
                  (name, [X], dict(where=MASK)), (name, [X], dict(axis=(1, 2), where=MASK)),
                  (name, [BIG], dict(where=MASK_B)), (name, [X.astype(np.float16)], {}),
                  (name, [X.astype(BF16)], dict(axis=0)),
                  (name, [np.arange(12).reshape(3, 4)], {}), (name, [2.5], dict(axis=None))]
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            cases.append(("logsumexp", [X], dict(axis=axis, keepdims=keepdims)))
    cases += [("logsumexp", [BIG], dict(axis=1)), ("logsumexp", [BIG], {}),
              ("logsumexp", [X], dict(axis=2, where=MASK)),
              ("logsumexp", [BIG], dict(axis=1, where=MASK_B)),
              ("logsumexp", [X], dict(axis=1, b=np.abs(X[:1]) + 0.5)),
              ("logsumexp", [X], dict(axis=1, b=X, return_sign=True)),
              ("logsumexp", [X], dict(axis=1, b=X)),
              ("logsumexp", [X], dict(axis=(0, 1), b=np.float32(2.0), keepdims=True)),
              ("logsumexp", [np.array([0.0, 0.0], np.float32)],
               dict(b=np.array([1.0, 0.0], np.float32))),
              ("logsumexp", [np.arange(6).reshape(2, 3)], dict(axis=0)),
              ("logsumexp", [X.astype(np.float16)], dict(axis=1)),
              ("logsumexp", [X.astype(BF16)], {}),
              ("logsumexp", [(X + 1j * X[::-1]).astype(np.complex64)], dict(axis=1)),
              ("logsumexp", [3.0], {}), ("logsumexp", [X], dict(axis=-1, return_sign=True)),
              ("logmeanexp", [X], dict(axis=1)), ("logmeanexp", [X], {}),
              ("logmeanexp", [X], dict(axis=2, where=MASK, keepdims=True)),
              ("standardize", [X], {}), ("standardize", [X], dict(axis=(0, 1))),
              ("standardize", [X], dict(axis=1, where=MASK)),
              ("standardize", [X], dict(mean=0.5, variance=2.0, epsilon=0.1)),
              ("standardize", [X], dict(algorithm="stable")),
              ("standardize", [X], dict(algorithm="standard")),
              ("glu", [X], dict(axis=0)), ("glu", [X[:, :4]], dict(axis=1)),
              ("glu", [X[..., :4]], {})]
    return cases


SM_CASES = _sm_cases()


@pytest.mark.parametrize("case", range(len(SM_CASES)))
def test_softmax_family(rjax, rjnp, case):
    want = GROUPS.get(rjax, rjnp, ("nn-sm",), lambda: {
        i: c for i, c in enumerate(SM_CASES)}, module=_nn(rjax))[case]
    name, args, kw = SM_CASES[case]
    check_against(want, name, args, kw=kw, module=nn, zero_sign=False)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_jit_matches_eager(name):
    fn = getattr(nn, name)
    for args, kw in (([X], dict(axis=1)), ([BIG], {}), ([X], dict(where=MASK, axis=-1))):
        a = [jnp.asarray(v) for v in args]
        eager = fn(*a, **kw)
        staged = jaxlite.jit(lambda *v: fn(*v, **kw))(*a)
        assert (eager.dtype, eager.shape, eager.weak_type) == \
            (staged.dtype, staged.shape, staged.weak_type)
        # native code (the default backend once the program is hot) rounds exp/log and
        # the sums' order within a few ulps of the eager (NumPy) result
        np.testing.assert_allclose(np.asarray(eager), np.asarray(staged), rtol=1e-6,
                                   atol=1e-7)


def test_stability():
    """Huge logits stay finite, -inf rows give -inf (not NaN), as in JAX."""
    s = np.asarray(nn.softmax(jnp.array([1e30, 1e30, 0.0])))
    np.testing.assert_allclose(s, [0.5, 0.5, 0.0])
    np.testing.assert_allclose(np.asarray(nn.softmax(jnp.array([1000.0, 0.0]))), [1.0, 0.0])
    ls = np.asarray(nn.log_softmax(jnp.array([1000.0, 0.0])))
    np.testing.assert_allclose(ls, [0.0, -1000.0])
    lse = np.asarray(nn.logsumexp(jnp.array([[-np.inf, -np.inf], [1e30, 1e30]]), axis=1))
    assert lse[0] == -np.inf and np.isfinite(lse[1])
    np.testing.assert_allclose(np.asarray(nn.logsumexp(jnp.array([1000.0, 1000.0]))),
                               1000 + np.log(2))


def test_logsumexp_is_also_under_scipy_name():
    assert nn.logsumexp is jaxlite.nn.logsumexp
    scipy = getattr(jaxlite, "scipy", None)
    if scipy is not None and hasattr(scipy, "special"):
        np.testing.assert_allclose(np.asarray(scipy.special.logsumexp(X, axis=1)),
                                   np.asarray(nn.logsumexp(X, axis=1)))


# ---- one_hot ----------------------------------------------------------------------

_OH = [([np.array([0, 2, 1, 5, -1])], [3], {}), ([np.array([[0, 1], [2, 3]])], [4], {}),
       ([np.array([[0, 1], [2, 3]])], [4], dict(axis=0)),
       ([np.array([[0, 1], [2, 3]])], [4], dict(axis=1)),
       ([np.array([0, 1, 2], np.int8)], [3], dict(dtype=np.int32)),
       ([np.array([0, 1, 2])], [3], dict(dtype=BF16)),
       ([np.array([0, 1, 2])], [3], dict(dtype=bool)),
       ([np.array([0.0, 1.0, 2.5])], [3], {}), ([2], [4], {}), ([np.uint8(1)], [2], {}),
       ([np.array([0, 1, 2])], [np.int64(3)], {}), ([np.array([0, 1])], [0], {})]


@pytest.mark.parametrize("case", range(len(_OH)))
def test_one_hot(rjax, rjnp, case):
    def calls():
        return {i: ("one_hot", x + n, kw) for i, (x, n, kw) in enumerate(_OH)}
    want = GROUPS.get(rjax, rjnp, ("nn-oh",), calls, module=_nn(rjax))[case]
    x, n, kw = _OH[case]
    check_against(want, "one_hot", x + n, kw=kw, module=nn)


def test_one_hot_under_jit_and_errors():
    f = jaxlite.jit(lambda x: nn.one_hot(x, 3))
    np.testing.assert_array_equal(np.asarray(f(jnp.array([2, 0]))), [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(TypeError, match="num_classes"):
        jaxlite.jit(lambda x, n: nn.one_hot(x, n))(jnp.array([1]), 3)
    with pytest.raises(TypeError, match="position 0"):
        nn.one_hot([0, 1], 3)


# ---- bad input ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ACTIVATIONS + ["softmax", "log_softmax", "logsumexp",
                                                "standardize", "glu", "logmeanexp"])
def test_bad_input(name):
    with pytest.raises(TypeError, match="position 0"):
        getattr(nn, name)([1.0, 2.0])
    with pytest.raises(TypeError):
        getattr(nn, name)("abc")


def test_glu_odd_axis_raises(rjax):
    with pytest.raises(AssertionError):
        _nn(rjax).glu(np.ones((3, 5), np.float32))
    with pytest.raises(AssertionError, match="divisible by 2"):
        nn.glu(jnp.ones((3, 5)))


def test_sigmoid_of_integers_raises_like_jax(rjax):
    with pytest.raises(TypeError):
        _nn(rjax).sigmoid(np.arange(3))
    with pytest.raises(TypeError, match="int32"):
        nn.sigmoid(jnp.arange(3))


# ---- properties ---------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.floats(-1e4, 1e4, width=32)),
       data=st.data())
def test_softmax_properties(x, data):
    """Rows sum to 1, lie in [0, 1], agree with exp(log_softmax), logsumexp matches
    NumPy's float64 reference."""
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    s = np.asarray(nn.softmax(jnp.asarray(x), axis=axis))
    assert np.all((s >= 0) & (s <= 1))
    np.testing.assert_allclose(s.sum(axis=axis), 1, rtol=1e-5)
    ls = np.asarray(nn.log_softmax(jnp.asarray(x), axis=axis))
    np.testing.assert_allclose(np.exp(ls), s, rtol=1e-4, atol=1e-6)
    x64 = x.astype(np.float64)
    m = x64.max(axis=axis, keepdims=True)
    ref = np.log(np.exp(x64 - m).sum(axis=axis)) + m.squeeze(axis)
    np.testing.assert_allclose(np.asarray(nn.logsumexp(jnp.asarray(x), axis=axis)), ref,
                               rtol=1e-5, atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(idx=hnp.arrays(np.int32, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
                      elements=st.integers(-2, 6)),
       n=st.integers(0, 5), axis=st.integers(-1, 0))
def test_one_hot_property(idx, n, axis):
    out = np.asarray(nn.one_hot(jnp.asarray(idx), n, axis=axis))
    ref = (idx[..., None] == np.arange(n)).astype(np.float32)
    if axis == 0:
        ref = np.moveaxis(ref, -1, 0)
    np.testing.assert_array_equal(out, ref)
