"""Random programs (tests/fuzz_programs.py): the native CPU backend agrees with the
interpreter.  A small budget here; ``make fuzz`` runs 10,000."""
import numpy as np
import pytest

import fuzz_programs as fp

_SEEDS = range(20250, 20275)      # 25 programs of 2 random DAGs each


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    # a fresh persistent cache: every kernel of this file really goes through Numba
    from jaxlite.config import config
    with config._override("jax_compilation_cache_dir",
                          str(tmp_path_factory.mktemp("fuzzcache"))):
        yield


_NATIVE = []


@pytest.mark.parametrize("seed", _SEEDS)
def test_random_program_native_equals_interpreter(seed):
    prog = fp.make_program(seed, n_exprs=2)
    info = {}
    errs = fp.check_program(prog, info)
    ex = info["executable"]
    _NATIVE.append(len(ex.kernels))
    assert type(ex).__name__ == "CpuExecutable"      # untiered: native code ran
    assert not errs, fp.failure_report(prog, errs)


@pytest.mark.parametrize("seed", [320, 586])
def test_make_fuzz_finds_fixed(seed):
    # make fuzz (10,000 programs): 320 a float16 max reduction's -0.0 in the kernels'
    # NumPy reference (it now reduces as reduce_max does); 586 clamp(-0.0, 0.0, hi), which
    # the interpreter gave as -0.0 (JAX and the native code: 0.0)
    prog = fp.make_program(seed, 10, big=False)
    errs = fp.check_program(prog)
    assert not errs, fp.failure_report(prog, errs)


def test_clamp_orders_signed_zeros_as_jax(rjax, rjnp):
    import jaxlite.lax as lax
    import jaxlite.numpy as jnp
    for lo, x, hi in [(-0.0, 0.0, 24.0), (0.0, -0.0, 24.0), (-0.0, -0.0, 1.0),
                      (-1.0, 0.0, -0.0), (-1.0, -0.0, 0.0)]:
        got = lax.clamp(jnp.float32(lo), jnp.float32(x), jnp.float32(hi))
        want = rjax.lax.clamp(rjnp.float32(lo), rjnp.float32(x), rjnp.float32(hi))
        assert np.signbit(np.asarray(got)) == np.signbit(np.asarray(want)), (lo, x, hi)
        assert float(got) == float(want)


def test_the_fuzzed_programs_ran_native_kernels():
    # the run above compiled native code (not only interpreter fallbacks)
    if len(_NATIVE) < len(_SEEDS):
        pytest.skip("needs the parametrised run above")
    assert sum(_NATIVE) >= len(_SEEDS)


def test_program_is_a_function_of_its_seed():
    a, b = fp.make_program(7, 3), fp.make_program(7, 3)
    assert str(a.closed) == str(b.closed)
    for x, y in zip(a.inputs, b.inputs):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    assert str(fp.make_program(8, 3).closed) != str(a.closed)


def test_inputs_carry_edge_values():
    rng = np.random.default_rng(0)
    f = fp.random_values(rng, (4000,), np.float32)
    assert np.isnan(f).any() and np.isposinf(f).any() and np.isneginf(f).any()
    assert (np.signbit(f) & (f == 0)).any()
    i = fp.random_values(rng, (4000,), np.int8)
    assert i.min() == -128 and i.max() == 127


def test_compare_classes():
    f = np.float32
    # exact: bit for bit, sign of zero and NaN positions included
    assert fp.compare(np.array([0.0], f), np.array([0.0], f), "exact") is None
    assert fp.compare(np.array([0.0], f), np.array([-0.0], f), "exact")
    assert fp.compare(np.array([np.nan], f), np.array([np.nan], f), "exact") is None
    assert fp.compare(np.array([np.nan], f), np.array([1.0], f), "approx")
    one_ulp = np.nextafter(f(1), f(2))
    assert fp.compare(np.array([1.0], f), np.array([one_ulp]), "exact")
    assert fp.compare(np.array([1.0], f), np.array([one_ulp]), "approx") is None
    assert fp.compare(np.array([1.0], f), np.array([1.001], f), "approx")
    # integers, dtypes and shapes
    assert fp.compare(np.array([1], np.int32), np.array([2], np.int32), "exact")
    assert fp.compare(np.array([1], np.int32), np.array([1], np.int64), "exact")
    assert fp.compare(np.array([1], np.int32), np.array([[1]], np.int32), "exact")
    # a sum: absolute error against the sum of magnitudes
    scale = np.array([100.0])
    assert fp.compare(np.array([1.0], f), np.array([1.001], f), "sum", (scale, 4)) is None
    assert fp.compare(np.array([1.0], f), np.array([3.0], f), "sum", (scale, 4))


def test_a_wrong_native_op_is_caught(monkeypatch):
    # a deliberately broken scalar-op table entry: the fuzzer must notice
    from jaxlite.backends.cpu import _ops as _cpu_ops
    monkeypatch.setitem(_cpu_ops._INFIX, "xor", "|")
    caught = sum(bool(fp.check_program(fp.make_program(s, 2)))
                 for s in (20255, 20259, 20263, 20270))
    assert caught >= 1


def test_int64_overflow_wraps_in_native_code():
    # found by the fuzzer: Numba marks int64 arithmetic "no signed wrap", so LLVM turned
    # abs(x * x) into x * x; the generated code now wraps like the interpreter
    import jaxlite as jax
    from jaxlite import lax
    from jaxlite.config import config
    from jaxlite.compiler.pipeline import compile_jaxpr
    x = np.array([3037000500 * 3, 5, 2 ** 62, -2 ** 63, 7], np.int64)

    def f(x):
        sq = lax.mul(x, x)
        return (lax.abs(sq), lax.neg(lax.abs(x)), lax.integer_pow(x, 3),
                lax.reduce_sum(sq, (0,)), lax.reduce_prod(x, (0,)), lax.div(x, np.int64(-1)))
    with config._override("jax_enable_x64", True):
        closed = jax.make_jaxpr(f)(x)
    with config._override("jaxlite_tiered", False), np.errstate(all="ignore"):
        ex = compile_jaxpr(closed, backend="cpu").executable
        assert ex.kernels
        want = compile_jaxpr(closed).executable.run([x])
        got = ex.run([x])
    for w, g in zip(want, got):
        assert np.asarray(g).dtype == np.int64
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert np.asarray(got[0]).min() >= 0 or np.asarray(want[0]).min() < 0


def test_min_max_reductions_of_signed_zeros_like_xla(rjnp):
    # found by the fuzzer: NumPy's reduction kept whichever zero came first; XLA's min of
    # -0.0 and 0.0 is -0.0 and its max 0.0 in any order (the native backend agreed)
    import jaxlite.numpy as jnp
    for v in ([0.0, -0.0, 1.0], [-0.0, 0.0, 1.0], [0.0, -0.0, -1.0], [-0.0, 0.0, -1.0]):
        x = np.array(v, np.float32)
        for fn in ("min", "max"):
            got, want = getattr(jnp, fn)(jnp.asarray(x)), getattr(rjnp, fn)(x)
            assert np.signbit(np.asarray(got)) == np.signbit(np.asarray(want)), (fn, v)
