"""What a probe of the calls JAX's lax, lax_vmap and lax_autodiff test files make found
(issue 30, items 2 and 3), each case against real JAX 0.10.2: crashes on valid input
(``lax.reduce`` with a complex ``max``, a Python int cast out of range, in-dim dynamic
slices with narrow index dtypes) and the exception types of bad input (convolution ranks
and padding, ``reshape`` sizes, ``select_n`` without cases, ``top_k`` beyond int32,
dynamic-slice index dtypes)."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

from oracle import assert_like_jax

jax = pytest.importorskip("jax")


def _same(fn, rtol=2e-6, atol=1e-6):
    """``fn(jax)`` and ``fn(jaxlite)`` agree leaf by leaf: values, shapes, dtypes, weak
    types."""
    want = jax.tree_util.tree_leaves(fn(jax))
    got = jaxlite.tree_util.tree_leaves(fn(jaxlite))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=rtol, atol=atol)


def _same_error(fn, match=None):
    """Both raise, and jaxlite's exception is of the type JAX raises."""
    with pytest.raises(Exception) as want:
        fn(jax)
    with pytest.raises(Exception, match=match) as got:
        fn(jaxlite)
    assert isinstance(got.value, type(want.value)), \
        f"{type(got.value).__name__} is no {type(want.value).__name__}"
    return got.value


_C = (np.arange(12.) - 5 + 1j * np.arange(12.)[::-1]).astype(np.complex64).reshape(3, 4)

# ---- crashes on valid input ------------------------------------------------------------


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1)], ids=str)
def test_reduce_complex_max_min_has_no_identity(op, dims):
    """A complex max/min has no identity, so any init value takes the general path (it used
    to crash looking one up)."""
    _same(lambda m: m.lax.reduce(_C, np.complex64(0), getattr(m.lax, op), dims))
    _same(lambda m: m.vmap(lambda x: m.lax.reduce(x, np.complex64(0), getattr(m.lax, op),
                                                  (0,)))(_C))


@pytest.mark.parametrize("value", [2 ** 32, 2 ** 31, -2 ** 40, 2 ** 63, -1], ids=str)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "uint32", "int8"])
def test_convert_python_int_out_of_range_wraps(value, dtype):
    _same(lambda m: m.lax.convert_element_type(value, dtype))


def test_convert_python_int_beyond_64_bits_raises():
    _same_error(lambda m: m.lax.convert_element_type(2 ** 70, "int32"))


@pytest.mark.parametrize("idx_dtype", [np.uint8, np.int16, np.int32, np.uint32])
def test_in_dim_dynamic_slices_with_narrow_index_dtypes(idx_dtype):
    x = np.arange(15.0, dtype=np.float32).reshape(5, 3)
    i = idx_dtype(1)
    _same(lambda m: m.lax.dynamic_slice_in_dim(x, i, 2, 0))
    _same(lambda m: m.lax.dynamic_index_in_dim(x, i, 1, keepdims=False))
    _same(lambda m: m.lax.dynamic_update_slice_in_dim(x, np.zeros((5, 1), np.float32), i, 1))
    _same(lambda m: m.jit(lambda j: m.lax.dynamic_update_index_in_dim(
        x, np.ones((1, 3), np.float32), j, 0))(i))


def test_reshape_sizes_from_arrays_and_numpy_ints():
    _same(lambda m: m.lax.reshape(np.ones((3,), np.float32), (m.lax.add(1, 2), np.int64(1))))

# ---- exception types -------------------------------------------------------------------


_INDEXES = {"int32,int16": (np.int32(1), np.int16(2)), "py,int16": (1, np.int16(2)),
            "uint8,int32": (np.uint8(1), np.int32(2))}


@pytest.mark.parametrize("name", list(_INDEXES))
def test_dynamic_slice_index_dtypes_must_agree(name):
    idx = _INDEXES[name]
    x = np.ones((3, 4), np.float32)
    _same_error(lambda m: m.lax.dynamic_slice(x, idx, (2, 2)), match="same type")
    _same_error(lambda m: m.lax.dynamic_update_slice(x, np.zeros((2, 2), np.float32), idx),
                match="same type")


@pytest.mark.parametrize("idx", [(np.int32(1), 2), (1, 2), (np.int64(1), np.int32(2))],
                         ids=["int32,py", "py,py", "int64,int32"])
def test_dynamic_slice_index_dtypes_that_agree(idx):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    _same(lambda m: m.lax.dynamic_slice(x, idx, (2, 2)))


@pytest.mark.parametrize("sizes", [(1.5, 2.0), (np.array([3, 1]),)], ids=["floats", "array"])
def test_reshape_sizes_must_be_concrete_ints(sizes):
    _same_error(lambda m: m.lax.reshape(np.ones(3), sizes), match="integer type")


def test_select_n_without_cases():
    _same_error(lambda m: m.lax.select_n(np.bool_(True)), match="at least one case")


def test_top_k_beyond_int32_indices():
    _same_error(lambda m: m.eval_shape(lambda x: m.lax.top_k(x, 100), m.ShapeDtypeStruct(
        (2 ** 31 + 1,), np.dtype("bfloat16"))), match="overflow")


def test_conv_ranks_and_padding_error_types():
    dn = ((0, 1, 2), (0, 1, 2), (0, 1, 2))

    def explicit(m):
        return m.lax.conv_general_dilated(
            np.ones((1, 1, 1)), np.ones((1, 1, 1, 1)), (1,), ((0, 0),), (1,), (1,),
            m.lax.ConvDimensionNumbers(*dn), 1, 1, None)
    _same_error(explicit, match="same number of dimensions")
    _same_error(lambda m: m.lax.conv(np.ones((1, 1, 4)), np.ones((1, 1, 2, 2)), (1,),
                                     "VALID"), match="ndim")
    _same_error(lambda m: m.lax.conv_general_dilated_patches(
        m.numpy.ones((1, 10, 10, 5), m.numpy.bfloat16), (5, 5), window_strides=(1, 1),
        padding=(3, 3)), match="padding argument")
    _same_error(lambda m: m.lax.reduce_window(np.ones((4, 4)), 0., m.lax.add, (2, 2), (1, 1),
                                              (3, 3)))


@pytest.mark.parametrize("lhs_shape, padding", [
    ((2, 2, 0, 4), ((0, 0), (0, 0))), ((2, 2, 0, 4), ((1, 0), (0, 1))),
    ((1, 2, 4, 0), ((0, 0), (0, 0)))], ids=["h0", "h0-padded", "w0"])
def test_conv_second_order_grads_of_an_empty_output(lhs_shape, padding):
    """JAX's conv gradient test runs lhs spatial sizes of 0: the transposed convolutions of
    an empty output give zero cotangents (they used to fail on negative paddings)."""
    lhs, rhs = np.ones(lhs_shape, np.float32), np.ones((2, 2, 1, 2), np.float32)

    def second(m):
        conv = lambda a, b: m.lax.conv_general_dilated(
            a, b, (1, 1), padding, dimension_numbers=("NCHW", "OIHW", "NCHW"))
        out = conv(lhs, rhs)
        g = lambda a, b: m.vjp(conv, a, b)[1](m.numpy.ones(out.shape, np.float32))
        return (m.vjp(lambda b: g(lhs, b)[0], rhs)[1](np.ones(lhs_shape, np.float32)),
                m.vjp(lambda a: g(a, rhs)[1], lhs)[1](np.ones(rhs.shape, np.float32)),
                m.jvp(lambda a, b: g(a, b), (lhs, rhs), (lhs, rhs))[1])
    _same(second)

# ---- accuracy= of the transcendental functions -----------------------------------------

_ACCURATE = ["exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
             "sqrt", "rsqrt", "cbrt"]


@pytest.mark.parametrize("name", _ACCURATE)
def test_accuracy_modes_and_tolerances(name):
    x = np.linspace(0.1, 2.0, 7, dtype=np.float32)
    for acc in ("HIGHEST", "DEFAULT", "tol", None):
        def f(m, acc=acc):
            a = m.lax.Tolerance(atol=1e-5) if acc == "tol" else \
                None if acc is None else getattr(m.lax.AccuracyMode, acc)
            op = lambda y: getattr(m.lax, name)(y, accuracy=a)
            return op(x), m.jit(op)(x), m.vmap(m.grad(op))(x)
        _same(f, rtol=3e-6)
    if name == "logistic":      # JAX's logistic does not check the option
        _same(lambda m: m.lax.logistic(x, accuracy="highest"))
    else:
        _same_error(lambda m: getattr(m.lax, name)(x, accuracy="highest"), match="not supported")


def test_accuracy_grads_as_jax_tests_take_them():
    """JAX's even-function and expm1 gradient checks, with ``AccuracyMode.HIGHEST``, to
    their absolute float32 tolerance (the logistic's tails are computed differently)."""
    def f(m):
        hi = m.lax.AccuracyMode.HIGHEST
        x = m.numpy.arange(0.0, 80.0, 1.0, dtype=m.numpy.float32)
        out = [m.vmap(m.grad(lambda y: getattr(m.lax, op)(y, accuracy=hi)))(s * x)
               for op in ("logistic", "tanh") for s in (1, -1)]
        x = m.numpy.arange(-80.0, 80.0, 1.0, dtype=m.numpy.float32)
        return out + [m.vmap(m.grad(lambda y: m.lax.expm1(y, accuracy=hi)))(x)]
    _same(f, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(), dict(atol=-1.0), dict(ulps=-1)], ids=str)
def test_tolerance_bounds(kw):
    _same_error(lambda m: m.lax.Tolerance(**kw))

# ---- lax.mul(..., out_dtype=) ----------------------------------------------------------

_A32 = np.array([1.1, 2.3, 3.7], np.float32)
_B16 = np.array([1.3, 2.9, 0.7], np.float16)
_MUL_CASES = {
    "f32*f16->f16": (_A32, _B16, np.float16), "f32*f16->f32": (_A32, _B16, np.float32),
    "f16*f16->f32": (_B16, _B16, np.float32), "i8*i8->i32": (np.int8(3), np.int8(100), np.int32),
    "i32*f32->f32": (np.int32(3), np.float32(2), np.float32),
    "py*py->f16": (2.0, 3.0, np.float16), "f32*py->f16": (_A32, 2.0, np.float16),
    "i32*i32->f32": (np.int32(3), np.int32(5), np.float32)}


@pytest.mark.parametrize("name", list(_MUL_CASES))
def test_mul_out_dtype(name):
    x, y, od = _MUL_CASES[name]
    _same(lambda m: m.lax.mul(x, y, out_dtype=od), rtol=1e-3)
    _same(lambda m: m.jit(lambda a, b: m.lax.mul(a, b, out_dtype=od))(x, y), rtol=1e-3)


@pytest.mark.parametrize("od", [np.float32, np.float16])
def test_mul_out_dtype_grads(od):
    """JAX's ``testOpGradOutDtype``: the cotangents come back in each operand's dtype."""
    f = lambda m: m.grad(lambda a, b: m.lax.mul(a, b, out_dtype=od).astype(np.float32).sum(),
                         (0, 1))(_A32, _B16)
    _same(f, rtol=1e-3)
    _same(lambda m: m.jvp(lambda a, b: m.lax.mul(a, b, out_dtype=od), (_A32, _B16),
                          (_A32, _B16)), rtol=1e-3)

# ---- dot algorithm presets -------------------------------------------------------------

_PRESETS = [("DEFAULT", np.float32), ("DEFAULT", np.float16), ("DEFAULT", "bfloat16"),
            ("F16_F16_F16", np.float16), ("F32_F32_F32", np.float32),
            ("F32_F32_F32", np.float16), ("BF16_BF16_F32", "bfloat16"),
            ("BF16_BF16_F32_X3", np.float32), ("BF16_BF16_F32_X6", np.float32)]


@pytest.mark.parametrize("name, dtype", _PRESETS, ids=str)
def test_dot_algorithm_presets(name, dtype):
    """JAX's ``testDotAlgorithm``/``testDotAlgorithmCasting`` on the CPU: the preset or its
    name as ``precision``; the result keeps the operands' dtype."""
    a = (np.arange(12.0).reshape(3, 4) / 7).astype(dtype)
    b = (np.arange(12.0).reshape(4, 3) / 5).astype(dtype)

    def f(m):
        preset = getattr(m.lax.DotAlgorithmPreset, name)
        return (m.lax.dot(a, b, precision=preset), m.jit(
            lambda x, y: m.lax.dot(x, y, precision=name))(a, b),
            m.grad(lambda x: m.lax.dot(x, b, precision=preset).astype(np.float32).sum())(a))
    _same(f, rtol=1e-2, atol=1e-2)


def test_dot_algorithm_presets_print_by_name_and_cpu_refusals():
    a = np.ones((3, 4), np.float16)
    text = str(jaxlite.make_jaxpr(lambda x: jaxlite.lax.dot(x, x.T, precision="F16_F16_F16"))(a))
    assert "precision=F16_F16_F16" in text
    assert [m.name for m in jaxlite.lax.DotAlgorithmPreset] == \
        [m.name for m in jax.lax.DotAlgorithmPreset]
    _same_error(lambda m: m.lax.dot(a, a.T, precision="F16_F16_F32"), match="not supported")
    _same_error(lambda m: m.lax.dot(a, a.T, precision="F16_F16_F99"))
