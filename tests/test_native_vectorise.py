"""The native CPU backend's hot loops vectorise (backends/cpu/native.py NativeKernel, with the
float32 maths of backends/cpu/_vecmath.py): LLVM's IR for the W2 kernel (tanh/exp/sin) and
W3's exp+sum and division kernels holds vector arithmetic and no scalar libm call, and
the results still match the NumPy reference (within the vecmath error), large sine
arguments included (the out-of-range flag reruns the kernel exactly); float max/min
reductions (W3's row max) vectorise as llvm.maximum/minimum with _fmax/_fmin's values."""
import re

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.backends.cpu.native import NativeKernel as _NativeKernel
from jaxlite.config import config
from jaxlite.core.avals import ShapedArray
from jaxlite.primitives.kernel import Kernel, KernelInput, KernelOutput, run_reference

# a libm function, called directly or as an LLVM intrinsic (lowered to libm calls, one per
# lane); llvm.fma is an instruction on an FMA CPU
_LIBM = re.compile(r"call [^@\n]*@(?:llvm\.)?(sin|cos|tan|tanh|exp|exp2|expm1|log|log1p|pow)"
                   r"(?:f|\.[a-z0-9.]+)?\(")
_VEC = re.compile(r"<(\d+) x (float|double)>")


def NativeKernel(k, parallel):
    # compiled in memory: Numba cannot show the IR of machine code loaded from its cache
    with config._override("jax_compilation_cache_dir", ""):
        return _NativeKernel(k, parallel=parallel)


def _ir(nk):
    return "\n".join(nk._fn.inspect_llvm().values())


def _vector_widths(ir):
    return {int(n) for n, _ in _VEC.findall(ir)}


def _kernel(f, in_shapes, in_dims, outs, shape, name):
    body = jax.make_jaxpr(f)(*[np.zeros((), np.float32) for _ in in_shapes]).jaxpr
    ins = [KernelInput(ShapedArray(s, np.float32), d) for s, d in zip(in_shapes, in_dims)]
    return Kernel(shape, ins, body, outs, name=name)


def _ulps(a, b):
    def o(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(o(a) - o(b))


def _w2(x):
    return lax.tanh(x) * np.float32(0.5) + lax.exp(-x * x) * lax.sin(x)


@pytest.fixture(scope="module")
def w2_kernel():
    n = 4099     # not a multiple of any vector width: the remainder loop runs too
    k = _kernel(_w2, [(n,)], [[0]], [KernelOutput("map", ShapedArray((n,), np.float32))],
                (n,), "w2")
    return NativeKernel(k, parallel=False)


def test_w2_loop_vectorises_without_libm_calls(w2_kernel):
    ir = _ir(w2_kernel)
    assert _vector_widths(ir) & {4, 8, 16}, "the W2 loop was not vectorised"
    assert not _LIBM.findall(ir), _LIBM.findall(ir)
    assert "_vm_oor(" in w2_kernel.source    # float32 sine: range flag still emitted


@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_w2_kernel_matches_reference(w2_kernel, scale):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(4099) * scale).astype(np.float32)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 88.0, -9.5]
    got, = w2_kernel(x)
    with np.errstate(all="ignore"):
        want, = run_reference(w2_kernel.kernel, x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    # three 1-ulp functions combined: a few ulps, or an absolute error far below the
    # terms' size where the sum cancels
    d = _ulps(got[ok], want[ok])
    close = np.abs(got[ok] - want[ok]) <= 4e-7 * (1 + np.abs(x[ok]))
    assert np.all((d <= 4) | close), (d.max(), x[ok][np.argmax(d)])


def test_w2_large_sine_argument_is_exact(w2_kernel):
    x = np.linspace(-3, 3, 4099).astype(np.float32)
    x[100] = 1e6       # beyond SIN_COS_LIMIT: the kernel flags it and reruns exactly
    got, = w2_kernel(x)
    want, = run_reference(w2_kernel.kernel, x)
    np.testing.assert_array_equal(got, want)


def test_softmax_kernels_vectorise_and_match():
    r, c = 8, 1031
    # exp(x - m) and its row sum (W3's middle kernel), then the division
    k1 = _kernel(lambda m, x: (lax.exp(x - m),) * 2, [(r,), (r, c)], [[0], [0, 1]],
                 [KernelOutput("map", ShapedArray((r, c), np.float32)),
                  KernelOutput("reduce", ShapedArray((r,), np.float32), "add", (1,))],
                 (r, c), "expsum")
    k2 = _kernel(lambda s, e: e / s, [(r,), (r, c)], [[0], [0, 1]],
                 [KernelOutput("map", ShapedArray((r, c), np.float32))], (r, c), "div")
    n1, n2 = NativeKernel(k1, parallel=False), NativeKernel(k2, parallel=False)
    for nk in (n1, n2):
        ir = _ir(nk)
        assert _vector_widths(ir) & {4, 8, 16}, (nk.kernel.name, "not vectorised")
        assert not _LIBM.findall(ir), _LIBM.findall(ir)
    x = np.random.default_rng(4).standard_normal((r, c)).astype(np.float32) * 5
    m = x.max(axis=1)
    e, s = n1(m, x)
    we, ws = run_reference(k1, m, x)
    assert _ulps(e, we).max() <= 2     # both 1-ulp float32 exps (ours and NumPy's)
    np.testing.assert_allclose(s, ws, rtol=2e-6)
    p, = n2(s, e)
    wp, = run_reference(k2, s, e)
    np.testing.assert_array_equal(p, wp)      # one IEEE division each: bit for bit
    # and the whole softmax under jit agrees with NumPy's
    def softmax(v):
        ev = jnp.exp(v - jnp.max(v, axis=1, keepdims=True))
        return ev / jnp.sum(ev, axis=1, keepdims=True)
    got = np.asarray(jax.jit(softmax)(jnp.asarray(x)))
    assert got.dtype == np.float32
    xe = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, xe / xe.sum(1, keepdims=True), rtol=3e-6, atol=1e-12)


def _fold(fn, x, init):
    out = np.empty(x.shape[0], x.dtype)
    for i, row in enumerate(x):
        acc = init
        for v in row:
            acc = fn(acc, v)
        out[i] = acc
    return out


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("monoid", ["max", "min"])
def test_float_max_min_reductions_vectorise_with_fmax_semantics(dt, monoid):
    from jaxlite.backends.cpu import _ops as _cpu_ops
    r, c = 12, 523
    x = np.random.default_rng(5).standard_normal((r, c)).astype(dt)
    x[1, 7] = np.nan                        # NaN early, late, alone in a row of infs
    x[2, c - 1] = np.nan
    x[3, :] = -np.inf if monoid == "max" else np.inf
    x[3, 100] = np.nan
    x[4, :] = -0.0                          # signed zeros: max(-0, +0) = +0
    x[5, :] = -0.0
    x[5, 300] = 0.0
    x[6, :] = 0.0
    x[6, 17] = -0.0
    x[7, :] = np.inf if monoid == "max" else -np.inf
    body = jax.make_jaxpr(lambda v: (v,))(np.zeros((), dt)).jaxpr
    k = Kernel((r, c), [KernelInput(ShapedArray((r, c), dt), [0, 1])], body,
               [KernelOutput("reduce", ShapedArray((r,), dt), monoid, (1,))], name="mm")
    nk = NativeKernel(k, parallel=False)
    assert f"_vm_{monoid}imum(" in nk.source
    ir = _ir(nk)
    assert _vector_widths(ir) - {1}, "the reduction was not vectorised"
    assert f"llvm.vector.reduce.f{monoid}imum" in ir
    got, = nk(x)
    fn = _cpu_ops._fmax if monoid == "max" else _cpu_ops._fmin
    want = _fold(fn, x, dt(-np.inf if monoid == "max" else np.inf))
    assert got.dtype == dt and got.shape == (r,)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
    # and the reference (NumPy) agrees but for the sign of a zero maximum
    ref, = run_reference(k, x)
    np.testing.assert_array_equal(np.isnan(ref), np.isnan(got))
    np.testing.assert_array_equal(ref[ok], got[ok])
