"""The native CPU backend (backends/cpu/native.py): hand-built kernels and jitted programs agree
with the interpreter (integers bit for bit, floats within a few ulps), fallbacks are
listed in the compiled text, W2 fused + native runs (its time against the interpreter is
printed, not asserted: timings belong to bench/)."""
import time

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.backends.cpu.native import CpuExecutable, NativeKernel
from jaxlite.primitives.kernel import Kernel, KernelInput, KernelOutput, run_reference
from jaxlite.config import config
from jaxlite.core.avals import ShapedArray


def _body(f, *dts):
    # x64 on while tracing, so 64-bit scalars keep their dtype in the body
    with config._override("jax_enable_x64", True):
        body = jax.make_jaxpr(f)(*[np.zeros((), d) for d in dts]).jaxpr
    for v, d in zip(body.invars, dts):
        assert v.aval.dtype == np.dtype(d)
    return body


def _map_kernel(f, shape, dts, name="k"):
    body = _body(f, *dts)
    ins = [KernelInput(ShapedArray(shape, d), range(len(shape))) for d in dts]
    outs = [KernelOutput("map", ShapedArray(shape, v.aval.dtype)) for v in body.outvars]
    return Kernel(shape, ins, body, outs, name=name)


def _ordered(a):
    w = a.dtype.itemsize * 8
    i = a.view(np.dtype(f"i{a.dtype.itemsize}")).astype(np.int64)
    return np.where(i < 0, -(i & ((1 << (w - 1)) - 1)), i)


def assert_matches(got, want, max_ulp=4):
    """Integers and bools bit for bit; floats within ``max_ulp`` (NaN where NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    gn, wn = np.isnan(got), np.isnan(want)
    np.testing.assert_array_equal(gn, wn)
    d = np.abs(_ordered(np.where(gn, 0, got).astype(got.dtype)) -
               _ordered(np.where(wn, 0, want).astype(want.dtype)))
    assert d.max(initial=0) <= max_ulp, (d.max(), got.flat[np.argmax(d)],
                                      want.flat[np.argmax(d)])


def _ints(dt, n, rng):
    info = np.iinfo(dt)
    edge = np.array([0, 1, 2, -1, info.min, info.max, info.min + 1, 7, -7, 31, 32, 63, 64],
                    dtype=np.int64)
    edge = edge[(edge >= info.min) & (edge <= info.max)].astype(dt)
    vals = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return vals, edge


def _int_pairs(dt, rng):
    vals, edge = _ints(dt, 600, rng)
    a = np.concatenate([np.repeat(edge, len(edge)), vals])
    b = np.concatenate([np.tile(edge, len(edge)), rng.permutation(vals)])
    # small shift amounts often
    return a, b


_INT_OPS = lambda x, y: (  # noqa: E731
    lax.add(x, y), lax.sub(x, y), lax.mul(x, y), lax.div(x, y), lax.rem(x, y),
    lax.max(x, y), lax.min(x, y), lax.bitwise_and(x, y), lax.bitwise_or(x, y),
    lax.bitwise_xor(x, y), lax.shift_left(x, y), lax.shift_right_logical(x, y),
    lax.shift_right_arithmetic(x, y), lax.eq(x, y), lax.lt(x, y), lax.ge(x, y),
    lax.neg(x), lax.bitwise_not(x), lax.sign(x), lax.abs(x) if x.dtype.kind == "i" else x,
    lax.integer_pow(x, 3), lax.select(lax.lt(x, y), x, y), lax.clamp(y, x, lax.max(x, y)),
    lax.convert_element_type(x, np.float32), lax.convert_element_type(x, np.int8),
    lax.convert_element_type(x, np.uint16), lax.convert_element_type(x, np.bool_))


@pytest.mark.parametrize("dt", [np.int32, np.uint8, np.int64, np.uint32])
def test_integer_ops_bit_for_bit(dt):
    rng = np.random.default_rng(0)
    a, b = _int_pairs(dt, rng)
    k = _map_kernel(_INT_OPS, a.shape, [dt, dt], name=f"ints_{np.dtype(dt).name}")
    nk = NativeKernel(k)
    got = nk(a, b)
    want = run_reference(k, a, b)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_matches(g, w, max_ulp=0), i


_FLOAT_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan,
                  1e-40, -1e-40, 3e38, -3e38, 1e10, -1e10, 100.0, 1e5]


def _float_ops(x, y):
    return (x + y, x - y, x * y, x / y, lax.rem(x, y), lax.max(x, y), lax.min(x, y),
            lax.pow(jnp.abs(x), y), lax.atan2(x, y), x < y, x == y, x != y,
            lax.select(x > y, x, y), lax.clamp(y, x, y + 1), lax.nextafter(x, y),
            -x, lax.abs(x), lax.sign(x), lax.floor(x), lax.ceil(x), lax.round(x),
            lax.round(x, 1), lax.is_finite(x),
            lax.exp(x), lax.log(x), lax.tanh(x), lax.logistic(x), lax.sin(x), lax.cos(x),
            lax.sqrt(x), lax.rsqrt(x), lax.expm1(x), lax.log1p(x), lax.erf(x), lax.cbrt(x),
            lax.square(x), lax.integer_pow(x, -2), lax.integer_pow(x, 5),
            lax.convert_element_type(x, np.int32), lax.convert_element_type(x, np.uint8),
            lax.convert_element_type(x, np.int64), lax.convert_element_type(x, np.float64),
            lax.convert_element_type(x, np.bool_))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_float_ops_within_ulps(dt):
    rng = np.random.default_rng(1)
    sp = np.array(_FLOAT_SPECIAL, dt)
    a = np.concatenate([np.repeat(sp, len(sp)), (rng.standard_normal(500) * 10).astype(dt)])
    b = np.concatenate([np.tile(sp, len(sp)), (rng.standard_normal(500) * 3).astype(dt)])
    k = _map_kernel(_float_ops, a.shape, [dt, dt], name=f"floats_{np.dtype(dt).name}")
    nk = NativeKernel(k)
    with np.errstate(all="ignore"):
        got = nk(a, b)
        want = run_reference(k, a, b)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_matches(g, w, max_ulp=2 if dt == np.float32 else 4)


def test_broadcast_transposed_inputs_and_reductions():
    rng = np.random.default_rng(2)
    shape = (3, 5, 4)
    body = _body(lambda x, y, z, w: (x * y + z, x * y + z, lax.max(x, w), x - w, x * z),
                 *[np.float32] * 4)
    ins = [KernelInput(ShapedArray((3, 5, 4), np.float32), (0, 1, 2)),
           KernelInput(ShapedArray((4, 3), np.float32), (2, 0)),     # transposed
           KernelInput(ShapedArray((5, 1), np.float32), (1, 2)),     # broadcast
           KernelInput(ShapedArray((), np.float32), ())]             # scalar
    outs = [KernelOutput("map", ShapedArray(shape, np.float32)),
            KernelOutput("reduce", ShapedArray((3,), np.float32), "add", (1, 2)),
            KernelOutput("reduce", ShapedArray((5, 4), np.float32), "max", (0,)),
            KernelOutput("reduce", ShapedArray((3, 4), np.float32), "min", (1,)),
            KernelOutput("reduce", ShapedArray((), np.float32), "mul", (0, 1, 2))]
    k = Kernel(shape, ins, body, outs, name="mixed")
    args = [rng.standard_normal(i.aval.shape).astype(np.float32) for i in ins]
    args[0][0, 0, 0] = np.nan
    nk = NativeKernel(k)
    for g, w in zip(nk(*args), run_reference(k, *args)):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


def test_integer_reductions_and_size_one_axes():
    rng = np.random.default_rng(3)
    shape = (1, 6, 1, 7)
    body = _body(lambda x: (x, x, x), np.int32)
    ins = [KernelInput(ShapedArray(shape, np.int32), (0, 1, 2, 3))]
    outs = [KernelOutput("reduce", ShapedArray((6,), np.int32), "add", (0, 2, 3)),
            KernelOutput("reduce", ShapedArray((1, 1, 7), np.int32), "max", (1,)),
            KernelOutput("reduce", ShapedArray((7,), np.int32), "mul", (0, 1, 2))]
    k = Kernel(shape, ins, body, outs, name="ired")
    x = rng.integers(-2 ** 31, 2 ** 31, shape, dtype=np.int32)
    for g, w in zip(NativeKernel(k)(x), run_reference(k, x)):
        assert_matches(g, w, 0)


def test_unsupported_kernel_falls_back_visibly():
    body = _body(lambda x: lax.exp(x) + x, np.float16)
    k = Kernel((8,), [KernelInput(ShapedArray((8,), np.float16), (0,))], body,
               [KernelOutput("map", ShapedArray((8,), np.float16))], name="half")
    closed = jax.make_jaxpr(lambda x: x)(np.zeros(8, np.float16))
    from jaxlite.primitives.kernel import kernel_p
    from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
    x = closed.jaxpr.invars[0]
    out = Var(ShapedArray((8,), np.float16))
    prog = ClosedJaxpr(Jaxpr([], [x], [JaxprEqn(kernel_p, [x], [out], {"kernel": k})],
                             [out]), [])
    ex = CpuExecutable(prog, "half")
    assert len(ex.fallbacks) == 1 and "float16" in ex.fallbacks[0]
    assert "interpreter fallback" in ex.as_text()
    a = np.linspace(-2, 2, 8).astype(np.float16)
    np.testing.assert_array_equal(ex.run([a])[0], run_reference(k, a)[0])


def test_sin_of_large_arguments_reruns_exactly():
    k = _map_kernel(lambda x: (lax.sin(x), lax.cos(x)), (5,), [np.float32], name="trig")
    x = np.array([1.0, 1e5, 3e30, -7e8, 0.25], np.float32)
    got = NativeKernel(k)(x)
    for g, w in zip(got, run_reference(k, x)):
        assert_matches(g, w, 0)


def test_parallel_kernel_matches():
    k = _map_kernel(lambda x, y: (x * y + 1, lax.max(x, y)), (64, 33), [np.float32] * 2,
                    name="par")
    nk = NativeKernel(k, parallel=True)
    assert nk.parallel
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((64, 33)).astype(np.float32) for _ in range(2))
    for g, w in zip(nk(a, b), run_reference(k, a, b)):
        assert_matches(g, w, 1)


def _jit_both(f, *args):
    # not tiered: the first call compiles native code and runs it (not the interpreter)
    with config._override("jaxlite_backend", "cpu"), config._override("jaxlite_tiered", False):
        fc = jax.jit(f)
        got = fc(*args)
    with config._override("jaxlite_backend", "interpreter"):
        fi = jax.jit(f)     # the reference (the CPU backend's executor when it compiles)
        want = fi(*args)
    return fc, fi, got, want


def test_jitted_softmax_and_mlp_match_interpreter():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.standard_normal((16, 40)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((40, 10)).astype(np.float32))

    def f(x, w):
        h = jnp.tanh(x @ w)
        return jax.nn.softmax(h, axis=-1), jnp.sum(h * h), jnp.argmax(h, axis=1)

    fc, fi, got, want = _jit_both(f, x, w)
    for g, v in zip(got, want):
        assert g.dtype == v.dtype and g.shape == v.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-5, atol=1e-6)
    text = fc.lower(x, w).compile().as_text()
    assert "backend=cpu" in text and "native kernel" in text
    assert "dot_general: NumPy matmul (BLAS)" in text


def test_jitted_integer_program_bit_for_bit():
    rng = np.random.default_rng(6)
    a = jnp.asarray(rng.integers(-1000, 1000, (50,), dtype=np.int32))
    b = jnp.asarray(rng.integers(-5, 5, (50,), dtype=np.int32))

    def f(a, b):
        return (a // b + a % b) * 3 - (a >> 2), jnp.sum(a * b), jnp.max(a ^ b)
    fc, fi, got, want = _jit_both(f, a, b)
    for g, v in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(v))
        assert g.dtype == v.dtype


def test_w2_fused_native_runs_and_is_timed():
    n = 1_000_000
    x = jnp.asarray(np.random.default_rng(7).standard_normal(n).astype(np.float32))

    def w2(x):
        return jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(x)
    fc, fi, got, want = _jit_both(w2, x)
    # NumPy's float32 tanh/sin are not correctly rounded either, and the add cancels
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)
    assert got.dtype == want.dtype == np.float32
    text = fc.lower(x).compile().as_text()
    assert "1 native kernel(s)" in text and "0 interpreter fallback(s)" in text

    def best(f):
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            f(x).block_until_ready()
            ts.append(time.perf_counter() - t0)
        return min(ts)
    tc, ti = best(fc), best(fi)
    print(f"\nW2 on {n} float32: native {tc * 1e3:.2f} ms, interpreter {ti * 1e3:.2f} ms "
          f"({ti / tc:.1f}x)")
