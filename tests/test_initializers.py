"""jaxlite.nn.initializers against real jax.nn.initializers: the same numbers bit for bit
for the same key, dtypes (float16/bfloat16/complex), fan modes and axes, and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
from _both import compare, raises_like_jax


def _key(m):
    return m.random.key(42)


def _same(make, rjax, shape=(3, 4), dtype=None, exact=True, tol=(2e-6, 2e-7)):
    """``make(initializers)(key, shape, dtype)`` from jaxlite and JAX: equal bit for bit
    (``exact``) or to float rounding (complex: a different order of exp/sin evaluation)."""
    got = make(jaxlite.nn.initializers)(_key(jaxlite), shape, *([dtype] if dtype else []))
    want = make(rjax.nn.initializers)(_key(rjax), shape, *([dtype] if dtype else []))
    compare(got, want, rjax, rtol=0 if exact else tol[0], atol=0 if exact else tol[1])


SIMPLE = {
    "zeros": lambda I: I.zeros, "ones": lambda I: I.ones,
    "constant": lambda I: I.constant(-7), "uniform": lambda I: I.uniform(10.0),
    "normal": lambda I: I.normal(5.0), "truncated_normal": lambda I: I.truncated_normal(5.0),
    "truncated_normal_bounds": lambda I: I.truncated_normal(1.0, lower=-0.5, upper=3.0),
}
SCALED = ["glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal",
          "lecun_uniform", "lecun_normal", "he_uniform", "he_normal", "kaiming_uniform",
          "kaiming_normal"]


@pytest.mark.parametrize("name", list(SIMPLE))
def test_simple_initializers_bit_for_bit(name, rjax):
    _same(SIMPLE[name], rjax)


@pytest.mark.parametrize("name", SCALED)
def test_variance_scaling_family_bit_for_bit(name, rjax):
    _same(lambda I: getattr(I, name)(), rjax)


MODES = [(mode, dist) for mode in ["fan_in", "fan_out", "fan_avg", "fan_geo_avg"]
         for dist in ["truncated_normal", "normal", "uniform"]]
FAST_MODES = [("fan_in", "truncated_normal"), ("fan_geo_avg", "uniform")]


@pytest.mark.parametrize("mode,dist", [m if m in FAST_MODES else
                                       pytest.param(*m, marks=pytest.mark.slow)
                                       for m in MODES])   # JAX compiles each: ~1 s apiece
def test_variance_scaling_modes_conv_axes(mode, dist, rjax):
    # a conv kernel HWIO with the receptive field counted in the fans, and a batch axis
    # (one shape: real JAX compiles its samplers once per shape, ~3 s on a busy machine)
    _same(lambda I: I.variance_scaling(0.7, mode, dist), rjax, shape=(2, 3, 2, 4))
    _same(lambda I: I.variance_scaling(2.0, mode, dist, in_axis=(0, 1), out_axis=-1,
                                       batch_axis=2), rjax, shape=(2, 3, 2, 4))


@pytest.mark.parametrize("dtype", ["float16", pytest.param("bfloat16", marks=pytest.mark.slow),
                                   pytest.param("complex64", marks=pytest.mark.slow)])
def test_dtypes(dtype, rjax):
    exact = dtype != "complex64"
    for dist in ["truncated_normal", "normal", "uniform"]:
        _same(lambda I: I.variance_scaling(1.0, "fan_avg", dist), rjax, (3, 4), dtype,
              exact=exact)
    _same(lambda I: I.normal(2.0, dtype=dtype), rjax, (3, 4), exact=exact)
    _same(lambda I: I.constant(3, dtype=dtype), rjax, (3, 4))


def test_initializer_protocol_and_names(rjax):
    inits = jaxlite.nn.initializers
    public = {n for n in dir(rjax.nn.initializers) if not n.startswith("_")}
    assert public <= {n for n in dir(inits) if not n.startswith("_")}
    assert isinstance(inits.glorot_uniform(), inits.Initializer)
    assert isinstance(inits.zeros, inits.Initializer)
    assert inits.xavier_uniform is inits.glorot_uniform
    assert inits.kaiming_normal is inits.he_normal


def test_under_jit_and_split_keys(rjax):
    def run(m):
        keys = m.random.split(_key(m), 3)
        init = m.nn.initializers.he_normal()
        return m.jit(lambda k: init(k, (4, 2)))(keys[1])
    compare(run(jaxlite), run(rjax), rjax, rtol=0, atol=0)


def test_bad_input(rjax):
    def case(make, shape):
        return lambda m, n: make(m.nn.initializers)(_key(m), shape)
    raises_like_jax(case(lambda I: I.glorot_uniform(), (3,)), rjax, "1-dimensional")
    raises_like_jax(case(lambda I: I.variance_scaling(1.0, "bad", "normal"), (3, 2)), rjax,
                    "invalid mode")
    raises_like_jax(case(lambda I: I.variance_scaling(1.0, "fan_in", "bad"), (3, 2)), rjax,
                    "invalid distribution")
    raises_like_jax(case(lambda I: I.lecun_normal(), (2, 3.0)), rjax)
    raises_like_jax(case(lambda I: I.orthogonal(), (3,)), rjax, "2D")
    raises_like_jax(case(lambda I: I.delta_orthogonal(), (3, 3)), rjax, "3D, 4D or 5D")
    raises_like_jax(case(lambda I: I.delta_orthogonal(), (3, 4, 2)), rjax, "fan_in")
    raises_like_jax(case(lambda I: I.zeros, (2, -1)), rjax, "nonnegative")
    raises_like_jax(case(lambda I: I.variance_scaling(1.0, "fan_in", "normal", in_axis=0,
                                                      out_axis=1), (0, 3)), rjax)
    for make in [lambda I: I.normal(), lambda I: I.glorot_normal(), lambda I: I.uniform()]:
        raises_like_jax(lambda m, n: make(m.nn.initializers)(_key(m), (3, 2), "int32"), rjax,
                        "must be a float")


@pytest.mark.skipif(not hasattr(jaxlite.numpy.linalg, "qr")
                    and not hasattr(jaxlite.random, "orthogonal"),
                    reason="orthogonal needs jaxlite.numpy.linalg.qr")
@pytest.mark.slow   # a QR per shape in real JAX: ~1 s apiece
@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (2, 3, 4)])
def test_orthogonal(shape, rjax):
    # QR by LAPACK: JAX's numbers to LAPACK's rounding (a few ulps of the Householder
    # reflections), and orthogonality itself
    tol = (1e-5, 1e-6)
    _same(lambda I: I.orthogonal(scale=2.0), rjax, shape, exact=False, tol=tol)
    _same(lambda I: I.orthogonal(column_axis=0), rjax, shape, exact=False, tol=tol)
    if len(shape) == 3 and shape[-1] >= shape[-2]:
        _same(lambda I: I.delta_orthogonal(), rjax, (3,) + shape[1:], exact=False, tol=tol)
    q = jaxlite.nn.initializers.orthogonal()(jaxlite.random.key(0), shape)
    m = np.asarray(q).reshape(-1, shape[-1])
    small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(small, np.eye(len(small)), atol=1e-5)
