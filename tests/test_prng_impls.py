"""The rbg and unsafe_rbg PRNG implementations and ``lax.rng_bit_generator``, against real
JAX 0.10.2 on the CPU.

- ``lax.rng_bit_generator``: every algorithm (RNG_DEFAULT is Philox on the CPU), dtype and
  many shapes (odd, even, empty, scalar, counters that carry into the high word), uint32[4]
  and uint64[2] keys: new key and bits bit for bit; its printed equation, its errors, its
  batching rule (JAX's: the first key draws the whole batch), jit, differentiation of
  programs using it, and its lowering run on the XLA:CPU PJRT plugin.
- The implementations: ``key``/``PRNGKey``/``wrap_key_data``/``key_data``/``key_impl``/
  ``key_dtype`` with ``impl=``, ``jax_default_prng_impl`` (``config.update`` and the
  environment variable), and the samplers on rbg keys (values bit for bit, or within the
  ulps the threefry tests allow for the same sampler).
- Typed key arrays of every implementation through jnp/lax (concatenate, stack, where,
  indexing, reshape, transpose, ``==``, ``jnp.array``, vmap/jit/scan) and JAX's errors for
  key arithmetic and for mixing implementations.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
import jaxlite.random as jr

IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]
ALGORITHMS = ["RNG_DEFAULT", "RNG_PHILOX", "RNG_THREE_FRY"]
SHAPES = [(), (0,), (1,), (2,), (3,), (4,), (5,), (7,), (9,), (17,), (3, 5), (5, 3), (3, 4),
          (4, 3), (1, 1), (1, 3), (2, 0, 3), (3, 1, 5), (2, 3, 5), (5, 7, 3)]


@pytest.fixture(scope="module")
def rr(rjax):
    import jax.random
    return jax.random


@pytest.fixture(scope="module")
def rlax(rjax):
    from jax import lax as rl
    return rl


def _np(x):
    """NumPy value of a result; typed keys (of either library) as (dtype name, key data)."""
    if isinstance(x, jr.PRNGKeyArray):
        return str(x.dtype), np.asarray(jr.key_data(x))
    if type(x).__name__ == "PRNGKeyArray":
        import jax
        return str(x.dtype), np.asarray(jax.random.key_data(x))
    return np.asarray(x)


def assert_same(got, want):
    """Same values (bit for bit), shape and dtype; typed keys also the same key dtype."""
    g, w = _np(got), _np(want)
    if isinstance(w, tuple):
        assert isinstance(g, tuple) and g[0] == w[0], (g, w)
        g, w = g[1], w[1]
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    np.testing.assert_array_equal(g, w)


def _keys(n, seed=0):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2 ** 32, (n, 4), dtype=np.uint32)
    keys[::3, 2:] = 0xFFFFFFFF      # the Philox counter's low word carries into the high one
    return keys


# ---- lax.rng_bit_generator ----------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_rng_bit_generator_matches_xla_cpu(rlax, algorithm, dtype):
    for shape, key in zip(SHAPES, _keys(len(SHAPES))):
        got = lax.rng_bit_generator(jnp.asarray(key), shape, dtype,
                                    getattr(lax.RandomAlgorithm, algorithm))
        want = rlax.rng_bit_generator(key, shape, dtype,
                                      getattr(rlax.RandomAlgorithm, algorithm))
        assert len(got) == 2
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])


@pytest.mark.parametrize("algorithm", [a if a == "RNG_DEFAULT" else pytest.param(
    a, marks=pytest.mark.slow) for a in ALGORITHMS])   # two of three in make test-slow
def test_rng_bit_generator_x64(rlax, x64, algorithm):
    rng = np.random.default_rng(1)
    for k, shape in enumerate([(), (1,), (3,), (4,), (5,), (2, 3), (3, 5), (0,)]):
        for key in (_keys(1, k)[0], rng.integers(0, 2 ** 64, 2, dtype=np.uint64)):
            if k % 2:
                key[-1] = np.iinfo(key.dtype).max
            for dtype in (np.uint64, np.uint32, np.uint16):
                alg = getattr(lax.RandomAlgorithm, algorithm)
                got = lax.rng_bit_generator(jnp.asarray(key), shape, dtype, alg)
                want = rlax.rng_bit_generator(key, shape, dtype,
                                              getattr(rlax.RandomAlgorithm, algorithm))
                assert_same(got[0], want[0])
                assert_same(got[1], want[1])


def test_rng_bit_generator_default_is_philox_on_cpu():
    key = jnp.asarray(np.array([1, 2, 3, 4], np.uint32))
    d = lax.rng_bit_generator(key, (7,))
    p = lax.rng_bit_generator(key, (7,), algorithm=lax.RandomAlgorithm.RNG_PHILOX)
    t = lax.rng_bit_generator(key, (7,), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    assert_same(d[1], p[1])
    # Philox advances the counter word by the 4-word blocks used, Threefry by the counters
    np.testing.assert_array_equal(np.asarray(d[0]), [1, 2, 5, 4])
    np.testing.assert_array_equal(np.asarray(t[0]), [1, 2, 7, 4])
    assert not np.array_equal(np.asarray(d[1]), np.asarray(t[1]))
    assert str(lax.RandomAlgorithm.RNG_PHILOX) == "RNG_PHILOX"
    assert [a.value for a in lax.RandomAlgorithm] == [0, 1, 2]


def test_rng_bit_generator_jaxpr_text_is_jax(rjax, rlax):
    key = np.zeros(4, np.uint32)
    got = str(jaxlite.make_jaxpr(lambda k: lax.rng_bit_generator(k, (3,)))(key))
    want = str(rjax.make_jaxpr(lambda k: rlax.rng_bit_generator(k, (3,)))(key))
    assert got == want


def test_rng_bit_generator_jit_and_uint64_warning(rlax):
    key = _keys(1, 5)[0]
    f = jaxlite.jit(lambda k: lax.rng_bit_generator(k, (3, 4), np.uint16))
    assert_same(f(key)[1], rlax.rng_bit_generator(key, (3, 4), np.uint16)[1])
    assert_same(f(key)[0], rlax.rng_bit_generator(key, (3, 4), np.uint16)[0])
    with pytest.warns(UserWarning, match="uint64"):
        bits = lax.rng_bit_generator(jnp.asarray(key), (2,), np.uint64)[1]
    assert bits.dtype == np.uint32


def test_rng_bit_generator_errors(rlax):
    key = jnp.asarray(np.zeros(4, np.uint32))
    for dt in (np.int32, np.float32, np.bool_):
        with pytest.raises(TypeError, match="unsupported dtype"):
            lax.rng_bit_generator(key, (3,), dt)
        with pytest.raises(TypeError, match="unsupported dtype"):
            rlax.rng_bit_generator(np.zeros(4, np.uint32), (3,), dt)
    # JAX fails on these keys with a bare AssertionError while lowering (README: known
    # differences); jaxlite raises TypeError naming the key's dtype and shape
    for bad in (np.zeros(2, np.uint32), np.zeros(4, np.int32), np.zeros((2, 4), np.uint32),
                np.zeros(4, np.float32)):
        with pytest.raises(TypeError, match=r"uint32\[4\] or uint64\[2\]"):
            lax.rng_bit_generator(jnp.asarray(bad), (3,))
    with pytest.raises(TypeError, match="position 0"):
        lax.rng_bit_generator([1, 2, 3, 4], (3,))
    with pytest.raises(TypeError, match="position 0"):
        rlax.rng_bit_generator([1, 2, 3, 4], (3,))
    with pytest.raises(ValueError, match="negative"):
        lax.rng_bit_generator(key, (-1,))
    # an algorithm naming no RandomAlgorithm member: JAX's AssertionError (its lookup
    # asserts at the call), here with a message naming the value
    for bad in (5, -1, "RNG_PHILOX", None):
        with pytest.raises(AssertionError):
            rlax.rng_bit_generator(np.zeros(4, np.uint32), (3,), algorithm=bad)
        with pytest.raises(AssertionError, match=f"unknown algorithm {bad!r}"):
            lax.rng_bit_generator(key, (3,), algorithm=bad)
    with pytest.raises(TypeError):
        rlax.rng_bit_generator(np.zeros(4, np.uint32), (3,), algorithm=np.array(1))
    with pytest.raises(TypeError, match="unhashable"):
        lax.rng_bit_generator(key, (3,), algorithm=np.array(1))
    with pytest.raises(TypeError, match="unhashable"):
        lax.rng_bit_generator(key, (3,), algorithm=jnp.int32(1))


@pytest.mark.parametrize("algorithm", [0, 1, 2, np.int32(1), np.uint8(2), True, 1.0])
def test_rng_bit_generator_algorithm_values_are_jax(rlax, algorithm):
    """A value equal to a RandomAlgorithm member names it (JAX looks it up by hash):
    the same bits as the member, and as JAX's."""
    key = _keys(1, 4)[0]
    member = lax.RandomAlgorithm(int(algorithm))
    got = lax.rng_bit_generator(key, (5,), algorithm=algorithm)
    assert_same(got[1], lax.rng_bit_generator(key, (5,), algorithm=member)[1])
    want = rlax.rng_bit_generator(key, (5,), algorithm=algorithm)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    traced = jaxlite.jit(lambda k: lax.rng_bit_generator(k, (5,), algorithm=algorithm))(key)
    assert_same(traced[1], want[1])


@pytest.mark.parametrize("in_axes", [0, 1])
def test_rng_bit_generator_batching_is_jax(rjax, rlax, in_axes):
    keys = _keys(3, 7)
    if in_axes == 1:
        keys = keys.T.copy()
    got = jaxlite.vmap(lambda k: lax.rng_bit_generator(k, (2, 3)), in_axes=in_axes)(keys)
    want = rjax.vmap(lambda k: rlax.rng_bit_generator(k, (2, 3)), in_axes=in_axes)(keys)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    # a shared key: the bits are not batched
    x = np.arange(3, dtype=np.uint32)
    k = _keys(1)[0]
    got = jaxlite.vmap(lambda x: lax.rng_bit_generator(k, (2,))[1] + x)(x)
    want = rjax.vmap(lambda x: rlax.rng_bit_generator(k, (2,))[1] + x)(x)
    assert_same(got, want)


def test_rng_bit_generator_under_differentiation(rjax, rlax):
    key = _keys(1, 3)[0]

    def f(lib, x):
        bits = (rlax if lib is rjax else lax).rng_bit_generator(key, (3,))[1]
        return (x * bits.astype(np.float32)).sum()
    g = jaxlite.grad(lambda x: f(jaxlite, x))(np.float32(1.5))
    w = rjax.grad(lambda x: f(rjax, x))(np.float32(1.5))
    assert_same(g, w)
    # a key tangent (float0) gives zero tangents for both results
    out, tan = jaxlite.jvp(lambda k: lax.rng_bit_generator(k, (3,))[1], (key,),
                           (np.zeros(4, jaxlite.dtypes.float0),))
    assert tan.dtype == jaxlite.dtypes.float0 and tan.shape == (3,)


# ---- lowering: stablehlo.rng_bit_generator on the XLA:CPU plugin ---------------------------

@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_rng_bit_generator_lowers_and_runs_on_xla_cpu(algorithm):
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    from jaxlite.backends.pjrt.client import run_mlir
    from jaxlite.backends.pjrt.lowering import lower_module
    from jaxlite.ir.interpret import eval_jaxpr_impl
    alg = getattr(lax.RandomAlgorithm, algorithm)
    for shape, key in zip([(), (5,), (3, 4), (5, 3), (2, 0)], _keys(5, 11)):
        for dtype in (np.uint8, np.uint32):
            closed = jaxlite.make_jaxpr(
                lambda k: lax.rng_bit_generator(k, shape, dtype, alg))(key)
            text = lower_module(closed).text
            assert "stablehlo.rng_bit_generator" in text
            got = run_mlir(text, [key])
            want = eval_jaxpr_impl(closed.jaxpr, closed.consts, key)
            for g, w in zip(got, want):
                g, w = np.asarray(g), np.asarray(w)
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)


def test_rbg_sampler_through_jit_on_xla_cpu(rr):
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    dev = jaxlite.devices("xla_cpu")[0]
    data = jaxlite.device_put(jr.key_data(jr.key(5, impl="rbg")), dev)
    f = jaxlite.jit(lambda d: jr.uniform(jr.wrap_key_data(d, impl="rbg"), (6,)))
    out = f(data)
    assert out.devices() == {dev}
    assert_same(out, rr.uniform(rr.key(5, impl="rbg"), (6,)))
    # the gamma family's loop over a batch of keys lowers too (a scan of bit generators)
    keys = jaxlite.device_put(jr.key_data(jr.split(jr.key(5, impl="rbg"), 3)), dev)
    g = jaxlite.jit(lambda d: jaxlite.vmap(lambda k: jr.gamma(k, 0.7, (2,)))(
        jr.wrap_key_data(d, impl="rbg")))(keys)
    import jax
    w = jax.vmap(lambda k: rr.gamma(k, 0.7, (2,)))(rr.split(rr.key(5, impl="rbg"), 3))
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5)


# ---- the implementations: keys --------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_keys_of_each_impl(rr, impl):
    k, rk = jr.key(7, impl=impl), rr.key(7, impl=impl)
    assert_same(k, rk)
    assert str(k.dtype) == str(rk.dtype) and k.dtype.name == rk.dtype.name
    assert k.shape == () and k.itemsize == rk.itemsize
    assert repr(k) == repr(rk)
    assert jr.key_impl(k) == rr.key_impl(rk) == impl
    assert jr.key_dtype(impl) == k.dtype and str(jr.key_dtype(impl)) == str(rr.key_dtype(impl))
    assert_same(jr.PRNGKey(7, impl=impl), rr.PRNGKey(7, impl=impl))
    data = jr.key_data(jr.split(k, (2, 3)))
    assert data.shape == (2, 3) + ((2,) if impl == "threefry2x32" else (4,))
    assert_same(data, rr.key_data(rr.split(rk, (2, 3))))
    assert_same(jr.wrap_key_data(data, impl=impl), rr.wrap_key_data(np.asarray(data),
                                                                     impl=impl))
    assert jr.key(0, impl=k.dtype).dtype == k.dtype
    # key dtypes of different implementations differ
    others = [jr.key_dtype(i) for i in IMPLS if i != impl]
    assert all(o != k.dtype for o in others)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
@pytest.mark.parametrize("seed", [0, 1, 42, 2 ** 31 - 1, -5])
def test_split_fold_in_bits(rr, impl, seed):
    k, rk = jr.key(seed, impl=impl), rr.key(seed, impl=impl)
    for num in (2, 3, (2, 3), (), 0):
        assert_same(jr.split(k, num), rr.split(rk, num))
    for d in (0, 1, 7, 2 ** 32 - 1):
        assert_same(jr.fold_in(k, d), rr.fold_in(rk, d))
    assert_same(jr.fold_in(k, jnp.uint32(9)), rr.fold_in(rk, np.uint32(9)))
    for dt in (np.uint8, np.uint16, np.uint32):
        for shape in ((), (5,), (3, 4)):
            assert_same(jr.bits(k, shape, dt), rr.bits(rk, shape, dt))
    # raw keys in, raw keys out (taken as keys of the default implementation)
    raw = jr.key_data(k)
    with _default_impl(impl):
        assert_same(jr.split(raw), rr.key_data(rr.split(rk)))
        assert_same(jr.uniform(raw, (3,)), rr.uniform(rk, (3,)))


class _default_impl:
    """``jax_default_prng_impl`` set for the block."""

    def __init__(self, impl):
        self.impl = impl

    def __enter__(self):
        self.old = jaxlite.config.jax_default_prng_impl
        jaxlite.config.update("jax_default_prng_impl", self.impl)

    def __exit__(self, *exc):
        jaxlite.config.update("jax_default_prng_impl", self.old)


SAMPLERS = {
    "uniform": lambda m, k: m.uniform(k, (5,)),
    "uniform_bounds": lambda m, k: m.uniform(k, (2, 3), minval=-2.0, maxval=3.0),
    "normal": lambda m, k: m.normal(k, (3, 4)),
    "normal_f16": lambda m, k: m.normal(k, (5,), np.float16),
    "normal_c64": lambda m, k: m.normal(k, (3,), np.complex64),
    "bernoulli": lambda m, k: m.bernoulli(k, 0.3, (8,)),
    "randint": lambda m, k: m.randint(k, (6,), -5, 17),
    "randint_u8": lambda m, k: m.randint(k, (6,), 0, 256, np.uint8),
    "permutation": lambda m, k: m.permutation(k, 7),
    "permutation_array": lambda m, k: m.permutation(k, np.arange(12.0).reshape(4, 3)),
    "choice": lambda m, k: m.choice(k, 5, (3,), replace=False),
    "choice_p": lambda m, k: m.choice(k, 4, (5,), p=np.array([0.1, 0.2, 0.3, 0.4],
                                                           np.float32)),
    "categorical": lambda m, k: m.categorical(k, np.log(np.array([0.2, 0.3, 0.5],
                                                                 np.float32)), shape=(6,)),
    "gumbel": lambda m, k: m.gumbel(k, (4,)),
    "exponential": lambda m, k: m.exponential(k, (4,)),
    "rademacher": lambda m, k: m.rademacher(k, (6,)),
    "laplace": lambda m, k: m.laplace(k, (4,)),
    "bits64_x32": lambda m, k: m.bits(k, (3,)),
    "truncated_normal": lambda m, k: m.truncated_normal(k, -1.0, 1.0, (4,)),
    "gamma": lambda m, k: m.gamma(k, np.array([0.5, 1.0, 2.5], np.float32)),
    "beta": lambda m, k: m.beta(k, 2.0, 3.0, (3,)),
    "dirichlet": lambda m, k: m.dirichlet(k, np.array([1.0, 2.0, 3.0], np.float32)),
    "binomial": lambda m, k: m.binomial(k, 10.0, 0.3, (4,)),
    "multinomial": lambda m, k: m.multinomial(k, 10.0, np.array([0.2, 0.3, 0.5],
                                                               np.float32)),
    "split_then_normal": lambda m, k: m.normal(m.split(k, 3)[2], (2,)),
}
# the same ulp allowances as the threefry tests give these samplers (XLA's erf/pow/log are
# not reproduced bit for bit there); every other one is exact
RTOL = {"truncated_normal": 1e-6, "gamma": 1e-5, "beta": 1e-5, "dirichlet": 1e-5,
        "normal_c64": 1e-6}


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_samplers_on_rbg_keys(rr, impl, name):
    fn = SAMPLERS[name]
    for seed in (0, 3):
        got = fn(jr, jr.key(seed, impl=impl))
        want = fn(rr, rr.key(seed, impl=impl))
        if name in RTOL:
            g, w = np.asarray(got), np.asarray(want)
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=RTOL[name])
        else:
            assert_same(got, want)


def test_poisson_is_threefry_only(rr):
    for impl, tag in (("rbg", "rbg"), ("unsafe_rbg", "urbg")):
        for m in (jr, rr):
            with pytest.raises(NotImplementedError, match=f"threefry2x32 RNG, not {tag}"):
                m.poisson(m.key(0, impl=impl), 3.0, (2,))


def test_impl_spec_errors(rr):
    for m in (jr, rr):
        with pytest.raises(ValueError, match='unrecognized PRNG implementation "foo"'):
            m.key(0, impl="foo")
        with pytest.raises(TypeError, match="unrecognized type"):
            m.key(0, impl=3)
        with pytest.raises(ValueError):
            m.key_dtype("nope")
    with pytest.raises(ValueError, match="not implemented in jaxlite"):
        jr.key(0, impl="philox4x32")


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_invalid_key_data_for_impl(rr, impl):
    for bad, match in ((np.zeros(2, np.uint32), r"shape \(2,\)"),
                       (np.zeros((3, 5), np.uint32), r"shape \(3, 5\)"),
                       (np.zeros(4, np.int32), "dtype int32")):
        with pytest.raises(TypeError, match=match):
            jr.wrap_key_data(bad, impl=impl)
        with pytest.raises(TypeError):
            rr.wrap_key_data(bad, impl=impl)
    # raw keys of the wrong length for the default implementation
    with pytest.raises(TypeError, match=r"shape \(4,\)"):
        jr.uniform(np.zeros(4, np.uint32))
    with pytest.raises(TypeError):
        rr.uniform(np.zeros(4, np.uint32))
    with _default_impl(impl):
        with pytest.raises(TypeError, match=r"shape \(2,\)"):
            jr.uniform(np.zeros(2, np.uint32))
        assert jr.key_impl(np.zeros(4, np.uint32)) == impl


# ---- jax_default_prng_impl ----------------------------------------------------------------

def test_default_prng_impl_config(rr):
    assert jaxlite.config.jax_default_prng_impl == "threefry2x32"
    f = jaxlite.jit(lambda s: jr.key_data(jr.key(s)))
    assert f(3).shape == (2,)
    with _default_impl("rbg"):
        assert jaxlite.config.jax_default_prng_impl == "rbg"
        assert str(jr.key(0).dtype) == "key<rbg>" and jr.key_dtype() == jr.key_dtype("rbg")
        assert_same(jr.PRNGKey(3), rr.PRNGKey(3, impl="rbg"))
        assert f(3).shape == (4,)          # the setting is part of jit's cache key
    with _default_impl("unsafe_rbg"):
        assert str(jr.key(0).dtype) == "key<urbg>"
    assert f(3).shape == (2,)
    for bad, match in (("foo", "new enum value"), (None, "new enum value"),
                       ("philox4x32", "does not support")):
        with pytest.raises(ValueError, match=match):
            jaxlite.config.update("jax_default_prng_impl", bad)
    assert jaxlite.config.jax_default_prng_impl == "threefry2x32"
    # the context manager, as jax.default_prng_impl
    with jaxlite.default_prng_impl("unsafe_rbg"):
        assert_same(jr.key(2), rr.key(2, impl="unsafe_rbg"))
    assert str(jr.key(2).dtype) == "key<fry>"
    with pytest.raises(ValueError, match="new enum value"):
        with jaxlite.default_prng_impl("xx"):
            pass


@pytest.mark.parametrize("value, ok", [("rbg", True), ("unsafe_rbg", True), ("bad", False),
                                       ("philox2x32", False)])
def test_default_prng_impl_environment(value, ok):
    code = ("import jaxlite, jaxlite.random as jr\n"
            "print(jaxlite.config.jax_default_prng_impl, jr.key(5).dtype, "
            "jr.PRNGKey(5).tolist())")
    env = dict(os.environ, JAX_DEFAULT_PRNG_IMPL=value)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    if ok:
        tag = {"rbg": "rbg", "unsafe_rbg": "urbg"}[value]
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [value, f"key<{tag}>", "[0,", "5,", "0,", "5]"]
    else:
        assert r.returncode != 0
        assert "ValueError" in r.stderr and "JAX_DEFAULT_PRNG_IMPL" in r.stderr


# ---- typed key arrays through jnp / lax / transformations ---------------------------------

def _other(impl):
    return "rbg" if impl != "rbg" else "threefry2x32"


KEY_OPS = {
    "concatenate": lambda m, n, l, K: n.concatenate([K[:2], K[3:]]),
    "stack": lambda m, n, l, K: n.stack([K[0], K[1]], axis=0),
    "where": lambda m, n, l, K: n.where(n.arange(6) % 2 == 0, K, K[::-1]),
    "reshape_T_index": lambda m, n, l, K: K.reshape(2, 3).T[1],
    "transpose": lambda m, n, l, K: n.transpose(K.reshape(3, 2)),
    "fancy_index": lambda m, n, l, K: K[n.array([0, 5, 2])],
    "slice_step": lambda m, n, l, K: K.reshape(2, 3)[:, ::2],
    "eq": lambda m, n, l, K: K == K[::-1],
    "ne_broadcast": lambda m, n, l, K: K.reshape(2, 3) != K[:3],
    "array_of_keys": lambda m, n, l, K: n.array([K[0], K[1]]),
    "asarray": lambda m, n, l, K: n.asarray(K),
    "zeros_like": lambda m, n, l, K: n.zeros_like(K),
    "tile": lambda m, n, l, K: n.tile(K[:2], 2),
    "at_set": lambda m, n, l, K: K.at[1].set(K[4]),
    "ravel": lambda m, n, l, K: n.ravel(K.reshape(3, 2)),
    "lax_concatenate": lambda m, n, l, K: l.concatenate([K, K[:2]], 0),
    "lax_select": lambda m, n, l, K: l.select(n.arange(6) > 2, K, K[::-1]),
    "add_int": lambda m, n, l, K: K + 1,
    "radd_int": lambda m, n, l, K: 2 * K,
    "add_keys": lambda m, n, l, K: K + K,
    "lt_keys": lambda m, n, l, K: K < K,
    "lt_int": lambda m, n, l, K: K < 1,
    "neg": lambda m, n, l, K: -K,
    "sum": lambda m, n, l, K: n.sum(K),
    "concat_mixed": lambda m, n, l, K: n.concatenate([K, m.split(m.key(0, impl=_other(
        m.key_impl(K))), 2)]),
    "where_mixed": lambda m, n, l, K: n.where(True, K, m.split(m.key(0, impl=_other(
        m.key_impl(K))), 6)),
    "eq_mixed": lambda m, n, l, K: K == m.split(m.key(0, impl=_other(m.key_impl(K))), 6),
    "eq_int": lambda m, n, l, K: K == 1,
}


def _outcome(fn):
    try:
        return "ok", _np(fn())
    except Exception as e:      # noqa: BLE001 - the error's type is what is compared
        return type(e), str(e)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", sorted(KEY_OPS))
def test_key_arrays_through_jnp(rr, rjnp, rlax, impl, name):
    fn = KEY_OPS[name]
    got = _outcome(lambda: fn(jr, jnp, lax, jr.split(jr.key(3, impl=impl), 6)))
    want = _outcome(lambda: fn(rr, rjnp, rlax, rr.split(rr.key(3, impl=impl), 6)))
    assert got[0] == want[0], (got, want)
    if got[0] != "ok":
        # JAX's message: the operation and the key dtypes it names (which of two mixed key
        # dtypes JAX's promotion names depends on its set order: either is taken)
        if name == "sum":       # JAX's text here is incidental ("Cannot interpret ...")
            assert "PRNGKeyArray" in got[1], got[1]
        elif "type promotion" in want[1]:
            assert re.fullmatch(r"dtype=key<(fry|rbg|urbg)> is not a valid dtype for JAX "
                                r"type promotion\.", got[1]), got[1]
        else:
            assert got[1] == want[1], (got[1], want[1])
        return
    g, w = got[1], want[1]
    if isinstance(w, tuple):        # typed keys: the key dtype, then the key data
        assert isinstance(g, tuple) and g[0] == w[0], (g, w)
        g, w = g[1], w[1]
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("impl", IMPLS)
def test_key_arrays_under_transformations(rjax, rr, impl):
    K, RK = jr.split(jr.key(4, impl=impl), 3), rr.split(rr.key(4, impl=impl), 3)
    cases = [
        (lambda lib, m: lib.vmap(lambda k: m.split(k, 2))(K if m is jr else RK)),
        (lambda lib, m: lib.vmap(lambda k: m.fold_in(k, 7))(K if m is jr else RK)),
        (lambda lib, m: lib.vmap(lambda k: m.uniform(k, (3,)))(K if m is jr else RK)),
        (lambda lib, m: lib.vmap(lambda k: m.normal(k))(K if m is jr else RK)),
        (lambda lib, m: lib.vmap(m.fold_in, (None, 0))((K if m is jr else RK)[0],
                                                       np.arange(3, dtype=np.uint32))),
        (lambda lib, m: lib.jit(lambda k: m.split(k, 4))((K if m is jr else RK)[1])),
        (lambda lib, m: lib.jit(lambda k: m.bits(k, (2, 3)))((K if m is jr else RK)[2])),
        (lambda lib, m: lib.lax.scan(lambda c, k: (c, m.bits(k, (2,))), 0,
                                     K if m is jr else RK)[1]),
        (lambda lib, m: lib.lax.scan(lambda c, x: (m.split(c)[0], m.key_data(c)),
                                     (K if m is jr else RK)[0], np.arange(3))),
        (lambda lib, m: lib.jit(lambda ks: ks[::-1])(K if m is jr else RK)),
    ]
    for case in cases:
        got = case(jaxlite, jr)
        want = case(rjax, rr)
        g_leaves = jaxlite.tree_util.tree_leaves(got, is_leaf=lambda x: isinstance(
            x, jr.PRNGKeyArray))
        w_leaves = rjax.tree_util.tree_leaves(want)
        assert len(g_leaves) == len(w_leaves)
        for g, w in zip(g_leaves, w_leaves):
            assert_same(g, w)


def test_grad_through_rbg_sampling(rjax, rr):
    def f(m, x, k):
        return (x * m.normal(k, (4,))).sum()
    g = jaxlite.grad(lambda x: f(jr, x, jr.key(2, impl="rbg")))(np.float32(2.0))
    w = rjax.grad(lambda x: f(rr, x, rr.key(2, impl="rbg")))(np.float32(2.0))
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    # a key among grad's inputs: TypeError unless allow_int, then a float0 cotangent
    for lib, m in ((jaxlite, jr), (rjax, rr)):
        with pytest.raises(TypeError, match="allow_int"):
            lib.grad(lambda x, k: f(m, x, k), argnums=(0, 1))(np.float32(2.0),
                                                              m.key(2, impl="rbg"))
        gk = lib.grad(lambda x, k: f(m, x, k), argnums=(0, 1), allow_int=True)(
            np.float32(2.0), m.key(2, impl="rbg"))
        assert gk[1].dtype == rjax.dtypes.float0 and gk[1].shape == ()


def test_rng_bit_generator_typed_key_and_out_sharding(rjax, rr, rlax):
    # a typed rbg key is taken as its key data and comes back typed, as in JAX
    got = lax.rng_bit_generator(jr.key(3, impl="rbg"), (5,))
    want = rlax.rng_bit_generator(rr.key(3, impl="rbg"), (5,))
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    # out_sharding places the bits; the values do not depend on it
    mesh = jaxlite.make_mesh((1,), ("x",))
    sh = jaxlite.NamedSharding(mesh, jaxlite.P("x"))
    key = _keys(1, 2)[0]
    new_key, bits = lax.rng_bit_generator(jnp.asarray(key), (4,), out_sharding=sh)
    assert bits.sharding == sh
    want = rlax.rng_bit_generator(key, (4,))
    assert_same(new_key, want[0])
    assert_same(bits, want[1])


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_with_x64(rr, x64, impl):
    # 64-bit seeds (both words), float64 uniforms and uint64 bits from XLA's generator
    for seed in (2 ** 40 + 5, -7, 2 ** 63 - 1):
        k, rk = jr.key(seed, impl=impl), rr.key(seed, impl=impl)
        assert_same(jr.PRNGKey(seed, impl=impl), rr.PRNGKey(seed, impl=impl))
        assert_same(jr.uniform(k, (3,)), rr.uniform(rk, (3,)))
        assert_same(jr.bits(k, (3,), np.uint64), rr.bits(rk, (3,), np.uint64))
        assert_same(jr.randint(k, (4,), 0, 2 ** 40, np.int64),
                    rr.randint(rk, (4,), 0, 2 ** 40, np.int64))


GAMMA_FAMILY_VMAPS = {
    "vmap_gamma": lambda L, m, ks: L.vmap(lambda k: m.gamma(k, 0.7, (2,)))(ks),
    "vmap_jit_gamma": lambda L, m, ks: L.vmap(L.jit(lambda k: m.gamma(k, 2.5, (2,))))(ks),
    "jit_vmap_beta": lambda L, m, ks: L.jit(L.vmap(lambda k: m.beta(k, 2.0, 3.0, (2,))))(ks),
    "vmap_dirichlet": lambda L, m, ks: L.vmap(
        lambda k: m.dirichlet(k, np.array([1.0, 2.0], np.float32)))(ks),
    "vmap_vmap_gamma": lambda L, m, ks: L.vmap(L.vmap(lambda k: m.gamma(k, 1.5)))(
        ks.reshape(3, 1)),
    "grad_vmap_gamma": lambda L, m, ks: L.grad(
        lambda a: L.vmap(lambda k: m.gamma(k, a, (2,)))(ks).sum())(np.float32(1.3)),
    "grad_vmap_beta": lambda L, m, ks: L.grad(
        lambda a: L.vmap(lambda k: m.beta(k, a, 2.0, (2,)))(ks).sum())(np.float32(1.5)),
}


def _gamma_case(name, impl):
    # the fast tier runs two cases; make test-slow (CI runs it) the others (about a minute)
    fast = impl == "rbg" and name in ("vmap_gamma", "grad_vmap_gamma")
    return pytest.param(name, impl, marks=() if fast else pytest.mark.slow,
                        id=f"{name}-{impl}")


@pytest.mark.parametrize("name,impl", [_gamma_case(n, i) for n in sorted(GAMMA_FAMILY_VMAPS)
                                       for i in IMPLS])
def test_gamma_family_over_batches_of_keys(rjax, rr, impl, name):
    # JAX's gamma loops over a batch of keys (each key its own bits), also for the rbg
    # implementations, whose bits elsewhere batch by JAX's first-key rule
    fn = GAMMA_FAMILY_VMAPS[name]
    got = np.asarray(fn(jaxlite, jr, jr.split(jr.key(5, impl=impl), 3)))
    want = np.asarray(fn(rjax, rr, rr.split(rr.key(5, impl=impl), 3)))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-5)


@pytest.mark.parametrize("impl", IMPLS)
def test_jvp_with_a_float0_key_tangent(rjax, rr, impl):
    def f(m, k, x):
        return m.normal(k, (2,)) * x
    out, tan = jaxlite.jvp(lambda k, x: f(jr, k, x), (jr.key(1, impl=impl), np.float32(2.0)),
                           (np.zeros((), jaxlite.dtypes.float0), np.float32(1.0)))
    r_out, r_tan = rjax.jvp(lambda k, x: f(rr, k, x), (rr.key(1, impl=impl), np.float32(2.0)),
                            (np.zeros((), rjax.dtypes.float0), np.float32(1.0)))
    assert_same(out, r_out)
    assert_same(tan, r_tan)


@pytest.mark.parametrize("impl", IMPLS)
def test_keys_are_never_converted_to_numbers(rjax, impl):
    # found by a fresh-user check: jnp.asarray(key, dtype=float32) returned a key whose
    # data were floats; JAX refuses (ValueError), keeps a key given its own dtype, and
    # makes numbers of the key array's shape for zeros_like/ones_like with a number dtype
    import jax.numpy as rjnp
    for lib, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        keys = lib.random.split(lib.random.key(0, impl=impl), 3)
        for make in (lambda: np_.asarray(keys, dtype=np_.float32),
                     lambda: np_.array(keys, dtype=np_.uint32)):
            with pytest.raises(ValueError, match="Cannot convert_element_type from key<"):
                make()
        same = np_.asarray(keys, dtype=keys.dtype)
        assert same.dtype == keys.dtype and same.shape == (3,)
        np.testing.assert_array_equal(np.asarray(lib.random.key_data(same)),
                                      np.asarray(lib.random.key_data(keys)))
        z = np_.zeros_like(keys, dtype=np_.float32)
        assert z.dtype == np.float32 and z.shape == (3,) and not np.asarray(z).any()
        o = np_.ones_like(keys, dtype=int)
        assert o.dtype == np.int32 and np.asarray(o).tolist() == [1, 1, 1]


def test_control_flow_refuses_keys_of_two_implementations(rjax):
    # found by a fresh-user check: branches or carries holding keys of two implementations
    # crashed with an AttributeError while the message was built; JAX's TypeError now
    cases = {
        "cond": lambda L: L.lax.cond(True, lambda: L.random.key(0, impl="rbg"),
                                     lambda: L.random.key(0)),
        "switch": lambda L: L.lax.switch(0, [lambda: L.random.key(0, impl="rbg"),
                                             lambda: L.random.key(0)]),
        "while": lambda L: L.lax.while_loop(lambda c: False, lambda c: L.random.key(0),
                                            L.random.key(0, impl="rbg")),
        "scan": lambda L: L.lax.scan(lambda c, x: (L.random.key(0), x),
                                     L.random.key(0, impl="rbg"), np.ones(2, np.float32)),
    }
    for name, fn in cases.items():
        for lib in (jaxlite, rjax):
            with pytest.raises(TypeError):
                fn(lib)
