"""Issue 30 item 1, operations and options against real JAX 0.10.2 (the oracle):
``lax.top_k(..., axis=)``; ``preferred_element_type`` across lax's and jax.numpy's products
and convolutions (result dtype, values, weak type, errors, JVP/transpose dtypes); the
ml_dtypes narrow floats (float8, mixed) in ``dot_general``; ``lax.dot``'s keyword-only
signature.  Each case compares values, dtype, shape and weak type (``assert_like_jax``) or
the exception type."""
from __future__ import annotations

import inspect
import warnings

import jax
import jax.numpy as rjnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax as rlax

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

from oracle import assert_like_jax

BF16 = np.dtype(ml_dtypes.bfloat16)
RS = np.random.RandomState(0)


def _both(fn_lite, fn_jax, *, rtol=1e-6, atol=1e-6, check_weak=True):
    """Runs both; equal results (every leaf) or the same exception type."""
    try:
        want = fn_jax()
    except Exception as e:       # the oracle's error type is the spec
        with pytest.raises(type(e) if not isinstance(e, TypeError) else TypeError):
            fn_lite()
        return
    got = fn_lite()
    gl, wl = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert_like_jax(g, w, rtol=rtol, atol=atol, check_weak=check_weak)


# ---- lax.top_k ------------------------------------------------------------------------------

X2 = np.array([[3., 1., np.nan, 3.], [2., -np.inf, 5., 5.]], np.float32)


def test_top_k_signature_is_jaxs():
    assert str(inspect.signature(lax.top_k)) == "(operand, k, *, axis=-1)"
    assert list(inspect.signature(rlax.top_k).parameters) == ["operand", "k", "axis"]


@pytest.mark.parametrize("k,axis", [(2, -1), (4, 1), (1, 0), (2, -2), (0, -1), (0, 0),
                                    (5, -1), (3, 0), (-1, -1), (1, 2), (1, -3)])
def test_top_k_axis_and_k_edges(k, axis):
    _both(lambda: lax.top_k(X2, k, axis=axis), lambda: rlax.top_k(X2, k, axis=axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_top_k_total_order(dtype):
    """NaN above +inf, a NaN with its sign bit below -inf, 0.0 above -0.0, ties by position."""
    x = np.array([0., -0., np.nan, -np.nan, 1., -np.inf, np.inf, 1., -0.], np.float32)
    x = x.astype(dtype)
    _both(lambda: lax.top_k(x, x.size), lambda: rlax.top_k(x, x.size))
    got = lax.top_k(x, x.size)
    assert np.signbit(np.asarray(got[0]).astype(np.float32)).tolist() == \
        np.signbit(np.asarray(rlax.top_k(x, x.size)[0]).astype(np.float32)).tolist()


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int32, np.bool_])
def test_top_k_integers_and_bool(dtype):
    x = np.array([0, 3, 1, 3, 2, 0], np.int64)
    x = (x > 1) if dtype == np.bool_ else x.astype(dtype)
    if dtype == np.uint32:
        x[1] = np.iinfo(np.uint32).max
    if dtype == np.int32:
        x[0] = np.iinfo(np.int32).min
    _both(lambda: lax.top_k(x, 4), lambda: rlax.top_k(x, 4))


def test_top_k_errors():
    _both(lambda: lax.top_k(np.float32(1), 1), lambda: rlax.top_k(np.float32(1), 1))
    _both(lambda: lax.top_k(X2, 1.5), lambda: rlax.top_k(X2, 1.5))
    c = np.array([1 + 2j], np.complex64)
    _both(lambda: lax.top_k(c, 1), lambda: rlax.top_k(c, 1))
    # a concrete integer array and a NumPy integer are integers
    _both(lambda: lax.top_k(X2, np.int64(1)), lambda: rlax.top_k(X2, np.int64(1)))
    _both(lambda: lax.top_k(X2, jnp.int32(2)), lambda: rlax.top_k(X2, rjnp.int32(2)))


def test_top_k_weak_input_gives_weak_positions():
    _both(lambda: lax.top_k(jnp.asarray(3.0)[None], 1),
          lambda: rlax.top_k(rjnp.asarray(3.0)[None], 1))


XB = RS.randn(3, 4, 5).astype(np.float32)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_top_k_vmap_over_every_axis(axis, in_axes):
    _both(lambda: jaxlite.vmap(lambda a: lax.top_k(a, 2, axis=axis), in_axes=in_axes)(XB),
          lambda: jax.vmap(lambda a: rlax.top_k(a, 2, axis=axis), in_axes=in_axes)(XB))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_top_k_jvp_grad_and_jit(axis):
    t = np.arange(XB.size, dtype=np.float32).reshape(XB.shape)
    _both(lambda: jaxlite.jvp(lambda a: lax.top_k(a, 2, axis=axis)[0], (XB,), (t,)),
          lambda: jax.jvp(lambda a: rlax.top_k(a, 2, axis=axis)[0], (XB,), (t,)))
    w = np.arange(1, 1 + 2 * XB.size // XB.shape[axis], dtype=np.float32)
    _both(lambda: jaxlite.grad(lambda a: (lax.top_k(a, 2, axis=axis)[0].ravel() * w).sum())(XB),
          lambda: jax.grad(lambda a: (rlax.top_k(a, 2, axis=axis)[0].ravel() * w).sum())(XB))
    _both(lambda: jaxlite.jit(lambda a: lax.top_k(a, 3, axis=axis))(XB),
          lambda: jax.jit(lambda a: rlax.top_k(a, 3, axis=axis))(XB))


def test_top_k_on_xla_cpu():
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    dev = jaxlite.devices("xla_cpu")[0]
    x = np.array([[0., -0., np.nan, -np.nan, 1.], [5., 4., 5., 3., -1.]], np.float32)
    got = jaxlite.jit(lambda v: lax.top_k(v, 3, axis=1))(jaxlite.device_put(x, dev))
    for g, w in zip(got, rlax.top_k(x, 3, axis=1)):
        assert_like_jax(g, w)


# ---- preferred_element_type -------------------------------------------------------------------

def _arr(shape, dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return RS.rand(*shape) > 0.5
    if dt.kind in "iu":
        return RS.randint(0, 5, shape).astype(dt)
    return RS.randn(*shape).astype(dt)


DTS = [np.int8, np.int32, np.uint8, np.bool_, BF16, np.float16, np.float32]
# the fast tier runs three preferred types; make test-slow (CI runs it) the rest
PETS = [None, np.int32, np.float32] + [
    pytest.param(d, marks=pytest.mark.slow, id=np.dtype(d).name)
    for d in (np.int8, np.float16, BF16, np.bool_, np.uint32)]


def _tol(*dts):
    narrow = any(np.dtype(d) in (BF16, np.dtype(np.float16)) for d in dts if d is not None)
    return dict(rtol=2e-2, atol=2e-2) if narrow else dict(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", DTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("pet", PETS, ids=lambda d: "none" if d is None else np.dtype(d).name)
def test_preferred_element_type_across_products(dt, pet):
    a, b = _arr((3, 4), dt), _arr((4, 2), dt)
    v, w = _arr((4,), dt), _arr((4,), dt)
    dn = (((1,), (0,)), ((), ()))
    tol = _tol(dt, pet)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _both(lambda: lax.dot_general(a, b, dn, preferred_element_type=pet),
              lambda: rlax.dot_general(a, b, dn, preferred_element_type=pet), **tol)
        _both(lambda: lax.dot(a, b, preferred_element_type=pet),
              lambda: rlax.dot(a, b, preferred_element_type=pet), **tol)
        _both(lambda: jnp.matmul(a, b, preferred_element_type=pet),
              lambda: rjnp.matmul(a, b, preferred_element_type=pet), **tol)
        _both(lambda: jnp.einsum("ij,jk->ik", a, b, preferred_element_type=pet),
              lambda: rjnp.einsum("ij,jk->ik", a, b, preferred_element_type=pet), **tol)
        _both(lambda: jnp.tensordot(a, b, 1, preferred_element_type=pet),
              lambda: rjnp.tensordot(a, b, 1, preferred_element_type=pet), **tol)
        for name in ("vdot", "inner", "dot", "vecdot"):
            _both(lambda: getattr(jnp, name)(v, w, preferred_element_type=pet),
                  lambda: getattr(rjnp, name)(v, w, preferred_element_type=pet), **tol)
        for name in ("matmul", "vecdot"):
            _both(lambda: getattr(jnp.linalg, name)(a.T, b, preferred_element_type=pet)
                  if name == "vecdot" else jnp.linalg.matmul(a, b, preferred_element_type=pet),
                  lambda: getattr(rjnp.linalg, name)(a.T, b, preferred_element_type=pet)
                  if name == "vecdot" else rjnp.linalg.matmul(a, b,
                                                              preferred_element_type=pet),
                  **tol)
        x, k = _arr((1, 2, 5, 5), dt), _arr((3, 2, 2, 2), dt)
        _both(lambda: lax.conv(x, k, (1, 1), "SAME", preferred_element_type=pet),
              lambda: rlax.conv(x, k, (1, 1), "SAME", preferred_element_type=pet), **tol)
        _both(lambda: lax.conv_with_general_padding(x, k, (1, 1), [(1, 0), (0, 1)], (1, 1),
                                                    (2, 1), preferred_element_type=pet),
              lambda: rlax.conv_with_general_padding(x, k, (1, 1), [(1, 0), (0, 1)], (1, 1),
                                                     (2, 1), preferred_element_type=pet),
              **tol)


def test_preferred_element_type_int8_sums_do_not_wrap():
    a, b = np.full((2, 300), 100, np.int8), np.full((300, 2), 100, np.int8)
    _both(lambda: jnp.matmul(a, b, preferred_element_type=np.int32),
          lambda: rjnp.matmul(a, b, preferred_element_type=np.int32))
    _both(lambda: jnp.matmul(a, b), lambda: rjnp.matmul(a, b))      # int8: wraps, as JAX
    u = np.full((2, 3), 200, np.uint8)
    _both(lambda: jnp.matmul(u, u.T, preferred_element_type=np.int32),
          lambda: rjnp.matmul(u, u.T, preferred_element_type=np.int32))
    x, k = np.full((1, 2, 6, 6), 100, np.int8), np.full((3, 2, 3, 3), 100, np.int8)
    _both(lambda: lax.conv(x, k, (1, 1), "VALID", preferred_element_type=np.int32),
          lambda: rlax.conv(x, k, (1, 1), "VALID", preferred_element_type=np.int32))


def test_preferred_element_type_other_products():
    i8 = np.ones((2, 3), np.int8)
    _both(lambda: jnp.einsum("ij,jk,kl->il", i8, i8.T, i8, preferred_element_type=np.int32),
          lambda: rjnp.einsum("ij,jk,kl->il", i8, i8.T, i8, preferred_element_type=np.int32))
    _both(lambda: jnp.einsum("ij->i", i8, preferred_element_type=np.int32),
          lambda: rjnp.einsum("ij->i", i8, preferred_element_type=np.int32))
    _both(lambda: jnp.tensordot(i8[0], i8[0], 0, preferred_element_type=np.int32),
          lambda: rjnp.tensordot(i8[0], i8[0], 0, preferred_element_type=np.int32))
    _both(lambda: jnp.dot(np.int8(3), i8[0], preferred_element_type=np.int32),
          lambda: rjnp.dot(np.int8(3), i8[0], preferred_element_type=np.int32))
    _both(lambda: jnp.dot(3, i8[0], preferred_element_type=np.float32),
          lambda: rjnp.dot(3, i8[0], preferred_element_type=np.float32))
    c = np.ones(3, np.complex64) * 1j
    _both(lambda: jnp.vdot(c, c + 1, preferred_element_type=np.complex128),
          lambda: rjnp.vdot(c, c + 1, preferred_element_type=np.complex128))
    _both(lambda: jnp.linalg.tensordot(i8, i8[0], axes=1, preferred_element_type=np.float32),
          lambda: rjnp.linalg.tensordot(i8, i8[0], axes=1, preferred_element_type=np.float32))
    gs = np.array([1, 2], np.int32)
    lhs, rhs = _arr((3, 4), np.int8), _arr((2, 4, 5), np.int8)
    _both(lambda: lax.ragged_dot(lhs, rhs, gs, preferred_element_type=np.int32),
          lambda: rlax.ragged_dot(lhs, rhs, gs, preferred_element_type=np.int32))
    p = np.ones((1, 2, 5, 5), BF16)
    _both(lambda: lax.conv_general_dilated_patches(p, (2, 2), (1, 1), "VALID",
                                                   preferred_element_type=np.float32),
          lambda: rlax.conv_general_dilated_patches(p, (2, 2), (1, 1), "VALID",
                                                    preferred_element_type=np.float32))
    xt, kt = np.ones((1, 5, 5, 2), np.int8), np.ones((2, 2, 2, 3), np.int8)
    _both(lambda: lax.conv_transpose(xt, kt, (1, 1), "SAME", dimension_numbers=(
              "NHWC", "HWIO", "NHWC"), preferred_element_type=np.int32),
          lambda: rlax.conv_transpose(xt, kt, (1, 1), "SAME", dimension_numbers=(
              "NHWC", "HWIO", "NHWC"), preferred_element_type=np.int32))
    for d, pet in [(np.int8, np.int32), (BF16, np.float32), (np.float32, np.int32),
                   (np.int32, np.int8), (np.float32, None)]:
        a, v = (np.arange(6) * 40).astype(d), (np.arange(3) * 50).astype(d)
        for name in ("convolve", "correlate"):
            _both(lambda: getattr(jnp, name)(a, v, preferred_element_type=pet),
                  lambda: getattr(rjnp, name)(a, v, preferred_element_type=pet), rtol=1e-2)


@pytest.mark.parametrize("pet", [None, np.float32, BF16])
def test_preferred_element_type_weak_types(pet):
    """jax.numpy's products given a preferred type are strong; lax's keep the operands'."""
    s, t = jnp.asarray(2.0), jnp.asarray(3.0)
    rs_, rt = rjnp.asarray(2.0), rjnp.asarray(3.0)
    _both(lambda: jnp.dot(s, t, preferred_element_type=pet),
          lambda: rjnp.dot(rs_, rt, preferred_element_type=pet))
    _both(lambda: jnp.matmul(s[None], t[None], preferred_element_type=pet),
          lambda: rjnp.matmul(rs_[None], rt[None], preferred_element_type=pet))
    _both(lambda: jnp.inner(s, t, preferred_element_type=pet),
          lambda: rjnp.inner(rs_, rt, preferred_element_type=pet))
    dn = (((0,), (0,)), ((), ()))
    _both(lambda: lax.dot_general(s[None], t[None], dn, preferred_element_type=pet),
          lambda: rlax.dot_general(rs_[None], rt[None], dn, preferred_element_type=pet))


@pytest.mark.parametrize("dt,pet", [(BF16, np.float32), (np.float16, np.float32),
                                    (np.float32, BF16), (ml_dtypes.float8_e4m3fn, np.float32)],
                         ids=lambda d: np.dtype(d).name)
def test_preferred_element_type_derivative_dtypes(dt, pet):
    """JVP tangents come out in the preferred type, cotangents in the operands' types."""
    a, b = _arr((3, 4), dt), _arr((4, 2), dt)
    dn = (((1,), (0,)), ((), ()))
    ct = np.ones((3, 2), pet)
    tol = dict(rtol=2e-2, atol=2e-2)
    _both(lambda: jaxlite.jvp(lambda x, y: lax.dot_general(x, y, dn,
                                                           preferred_element_type=pet),
                              (a, b), (a, b)),
          lambda: jax.jvp(lambda x, y: rlax.dot_general(x, y, dn, preferred_element_type=pet),
                          (a, b), (a, b)), **tol)
    _both(lambda: jaxlite.vjp(lambda x, y: lax.dot_general(x, y, dn,
                                                           preferred_element_type=pet),
                              a, b)[1](ct),
          lambda: jax.vjp(lambda x, y: rlax.dot_general(x, y, dn, preferred_element_type=pet),
                          a, b)[1](ct), **tol)
    _both(lambda: jaxlite.grad(lambda x, y: jnp.einsum("ij,jk", x, y, preferred_element_type=pet)
                               .sum().astype(np.float32), (0, 1))(a, b),
          lambda: jax.grad(lambda x, y: rjnp.einsum("ij,jk", x, y, preferred_element_type=pet)
                           .sum().astype(np.float32), (0, 1))(a, b), **tol)
    x, k = _arr((1, 2, 5, 5), dt), _arr((3, 2, 2, 2), dt)
    cc = np.ones((1, 3, 5, 5), pet)
    _both(lambda: jaxlite.vjp(lambda p, q: lax.conv(p, q, (1, 1), "SAME",
                                                    preferred_element_type=pet), x, k)[1](cc),
          lambda: jax.vjp(lambda p, q: rlax.conv(p, q, (1, 1), "SAME",
                                                 preferred_element_type=pet), x, k)[1](cc),
          **tol)
    _both(lambda: jaxlite.vmap(lambda p, q: jnp.dot(p, q, preferred_element_type=pet))(a, b.T),
          lambda: jax.vmap(lambda p, q: rjnp.dot(p, q, preferred_element_type=pet))(a, b.T),
          **tol)


# ---- lax.dot's signature ------------------------------------------------------------------------

def _params(f):
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


def test_lax_dot_signature_is_jaxs():
    assert _params(lax.dot) == _params(rlax.dot)
    assert _params(lax.dot_general) == _params(rlax.dot_general)
    a = np.ones((2, 3), np.int8)
    dn = (((1,), (1,)), ((0,), (0,)))
    _both(lambda: lax.dot(a, a, dimension_numbers=dn, preferred_element_type=np.int32),
          lambda: rlax.dot(a, a, dimension_numbers=dn, preferred_element_type=np.int32))
    _both(lambda: lax.dot(a, a.T, None), lambda: rlax.dot(a, a.T, None))
    for ls, rs in [((2, 3, 4), (4,)), ((), (3,)), ((2, 3), (4, 3))]:
        _both(lambda: lax.dot(np.ones(ls), np.ones(rs)),
              lambda: rlax.dot(np.ones(ls), np.ones(rs)))


# ---- narrow floats in dot_general ----------------------------------------------------------------

F8 = [np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")]


@pytest.mark.parametrize("d1", F8, ids=lambda d: d.name)
@pytest.mark.parametrize("d2", F8 + [BF16, np.dtype(np.float32), np.dtype(np.int8)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("pet", [None, pytest.param(np.float32, marks=pytest.mark.slow),
                                 pytest.param(BF16, marks=pytest.mark.slow)],
                         ids=lambda d: "none" if d is None else np.dtype(d).name)
def test_fp8_mixed_operands_in_dot_general(d1, d2, pet):
    """Mixed float8 operands: the more precise type (exponent range, then mantissa) is the
    result's, two types of equal rank (float8_e4m3 and float8_e4m3fnuz) a TypeError; the
    values are XLA:CPU's (operands converted to the result type first)."""
    a, b = RS.randn(2, 3).astype(np.float32), RS.randn(3, 2).astype(np.float32)
    A, B = a.astype(d1), b.astype(d2)
    dn = (((1,), (0,)), ((), ()))
    _both(lambda: lax.dot_general(A, B, dn, preferred_element_type=pet),
          lambda: rlax.dot_general(A, B, dn, preferred_element_type=pet), rtol=0, atol=0)


@pytest.mark.parametrize("d,pet", [(np.float16, BF16), (BF16, np.float16),
                                   (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2),
                                   (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn),
                                   (BF16, ml_dtypes.float8_e4m3fn), (np.float32, BF16),
                                   (ml_dtypes.float8_e5m2, np.float16)],
                         ids=lambda d: np.dtype(d).name)
def test_same_width_and_narrower_preferred_types_round_as_xla(d, pet):
    """XLA:CPU rounds a float16 product asked for bfloat16 from bfloat16 operands, and a
    bfloat16 one asked for float16 through bfloat16: bit for bit, eager, jit and (where
    the plugin is installed) compiled by XLA itself."""
    a, b = RS.randn(20, 30).astype(np.float32), RS.randn(30, 20).astype(np.float32)
    A, B = a.astype(d), b.astype(d)
    dn = (((1,), (0,)), ((), ()))
    want = rlax.dot_general(A, B, dn, preferred_element_type=pet)
    f = lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=pet)  # noqa: E731
    _same_bits_but_ties(f(A, B), want)
    _same_bits_but_ties(jaxlite.jit(f)(A, B), want)
    x, k = RS.randn(1, 2, 6, 6).astype(d), RS.randn(3, 2, 3, 3).astype(d)
    if np.dtype(d).itemsize == 2 == np.dtype(pet).itemsize:
        assert_like_jax(lax.conv(x, k, (1, 1), "SAME", preferred_element_type=pet),
                        rlax.conv(x, k, (1, 1), "SAME", preferred_element_type=pet),
                        rtol=0, atol=0)
    try:
        import xla_plugins.xla_cpu_pjrt  # noqa: F401
    except ImportError:
        return
    dev = jaxlite.devices("xla_cpu")[0]
    got = jaxlite.jit(f)(jaxlite.device_put(A, dev), jaxlite.device_put(B, dev))
    _same_bits_but_ties(got, want)


def _same_bits_but_ties(got, want):
    """Equal dtype and shape; equal bits but in at most 1% of the elements, which may be one
    step of the result type apart: a float32 sum at a float8 rounding tie lands on either
    side of it by the order of its additions (XLA's order is not NumPy's)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    off = g != w
    assert off.mean() <= 0.01, f"{off.sum()} of {off.size} differ"
    if off.any():
        step = np.abs(w[off]) * 2.0 ** -ml_dtypes.finfo(got.dtype).nmant
        assert (np.abs(g[off] - w[off]) <= 2 * step).all()


# ---- variadic lax.reduce_window and lax.reduce ---------------------------------------------------

RX = np.arange(12, dtype=np.float32).reshape(3, 4) % 5
RY = (np.arange(12, dtype=np.int32).reshape(3, 4) * 7) % 11


def _argmax_pair(L):
    """(value, index) pairs: the larger value, the lower index among equal values
    (associative and commutative, so any order of combination gives one answer)."""
    def f(a, b):
        av, ai = a
        bv, bi = b
        pick = (av > bv) | ((av == bv) & (ai < bi))
        return L.select(pick, av, bv), L.select(pick, ai, bi)
    return f


RW_CASES = {
    "valid": lambda L, x, y: L.reduce_window((x, y), (-np.inf, 0), _argmax_pair(L), (2, 2),
                                             (1, 1), "VALID"),
    "same-strided": lambda L, x, y: L.reduce_window((x, y), (-np.inf, 0), _argmax_pair(L),
                                                    (2, 3), (1, 2), "SAME"),
    "dilated": lambda L, x, y: L.reduce_window((x, y), (-np.inf, 0), _argmax_pair(L), (2, 2),
                                               (1, 1), ((1, 0), (0, 1)), (1, 2), (2, 1)),
    "list-vs-tuple": lambda L, x, y: L.reduce_window([x, y], [np.float32(-np.inf),
                                                              np.int32(0)],
                                                     _argmax_pair(L), (2, 2), None, "VALID"),
    "init-tree": lambda L, x, y: L.reduce_window((x, y), (0.,), _argmax_pair(L), (2, 2),
                                                 (1, 1), "VALID"),
    "shapes": lambda L, x, y: L.reduce_window((x, y[:2]), (-np.inf, 0), _argmax_pair(L),
                                              (2, 2), (1, 1), "VALID"),
    "python-fn": lambda L, x, y: L.reduce_window(x, 0., lambda a, b: a + 2 * b, (2, 2),
                                                 (1, 1), "VALID"),
    "reduce": lambda L, x, y: L.reduce((x, y), (-np.inf, 0), _argmax_pair(L), (1,)),
    "reduce-both-dims": lambda L, x, y: L.reduce((x, y), (np.float32(-np.inf), np.int32(0)),
                                                 _argmax_pair(L), (0, 1)),
    "reduce-dict": lambda L, x, y: L.reduce(
        {"a": x, "b": y}, {"a": -np.inf, "b": 0},
        lambda p, q: {"a": L.max(p["a"], q["a"]), "b": L.max(p["b"], q["b"])}, (0,)),
    "reduce-init-tree": lambda L, x, y: L.reduce((x, y), (0.,), _argmax_pair(L), (0,)),
    "reduce-shapes": lambda L, x, y: L.reduce((x, y[:2]), (0., 0), _argmax_pair(L), (1,)),
    "reduce-init-dtype": lambda L, x, y: L.reduce(x, np.int32(0), lambda a, b: a * b, (1,)),
    "reduce-init-shape": lambda L, x, y: L.reduce(x, np.zeros(2, np.float32),
                                                  lambda a, b: a * b, (1,)),
    "reduce-list-gives-tuple": lambda L, x, y: L.reduce(
        [x, x], [0., -np.inf], lambda a, b: (L.add(a[0], b[0]), L.max(a[1], b[1])), (1,)),
}


@pytest.mark.parametrize("name", sorted(RW_CASES))
def test_variadic_reduce_window_and_reduce(name):
    case = RW_CASES[name]
    _both(lambda: case(lax, RX, RY), lambda: case(rlax, RX, RY))
    _both(lambda: jaxlite.jit(lambda x, y: case(lax, x, y))(RX, RY),
          lambda: jax.jit(lambda x, y: case(rlax, x, y))(RX, RY))


@pytest.mark.parametrize("name", ["valid", "same-strided", "dilated", "reduce",
                                  "reduce-both-dims"])
@pytest.mark.parametrize("in_axes", [0, 1, (0, None), (None, 1)])
def test_variadic_reduce_window_and_reduce_vmap(name, in_axes):
    case = RW_CASES[name]
    xs, ys = np.stack([RX, RX + 1, RX * 2]), np.stack([RY, RY + 1, RY * 2])
    ax = in_axes if isinstance(in_axes, tuple) else (in_axes, in_axes)
    xs, ys = (RX if ax[0] is None else np.moveaxis(xs, 0, ax[0]),
              RY if ax[1] is None else np.moveaxis(ys, 0, ax[1]))
    _both(lambda: jaxlite.vmap(lambda x, y: case(lax, x, y), in_axes=ax)(xs, ys),
          lambda: jax.vmap(lambda x, y: case(rlax, x, y), in_axes=ax)(xs, ys))


def _add_max(L):
    return lambda a, b: (L.add(a[0], b[0]), L.max(a[1], b[1]))


def test_variadic_reduce_window_and_reduce_derivatives():
    """Forward mode of two float operands against JAX's; reverse mode (where JAX 0.10.2
    fails inside its own rule, with a symbolic zero) against JAX's gradient of the two
    single-operand reductions it is made of (values without ties: JAX's max pooling
    gradient goes to the first maximum of a window, an elementwise max splits a tie)."""
    x = RX
    y = np.random.RandomState(1).permutation(12).reshape(3, 4).astype(np.float32)
    rw = lambda L: lambda a, b: L.reduce_window((a, b), (0., -np.inf), _add_max(L),  # noqa
                                                (2, 2), (1, 1), "VALID")
    rd = lambda L: lambda a, b: L.reduce((a, b), (0., -np.inf), _add_max(L), (1,))  # noqa
    for make in (rw, rd):
        _both(lambda: jaxlite.jvp(make(lax), (x, y), (y, x)),
              lambda: jax.jvp(make(rlax), (x, y), (y, x)))
    w = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    g = jaxlite.grad(lambda a, b: (rw(lax)(a, b)[0] * w).sum() + (rw(lax)(a, b)[1] * w).sum(),
                     (0, 1))(x, y)
    want = jax.grad(lambda a, b: (rlax.reduce_window(a, 0., rlax.add, (2, 2), (1, 1), "VALID")
                                  * w).sum()
                    + (rlax.reduce_window(b, -np.inf, rlax.max, (2, 2), (1, 1), "VALID")
                       * w).sum(), (0, 1))(x, y)
    for a, b in zip(g, want):
        assert_like_jax(a, b)
    g = jaxlite.grad(lambda a, b: (rd(lax)(a, b)[0] * w[0]).sum() + rd(lax)(a, b)[1].sum(),
                     (0, 1))(x, y)
    want = jax.grad(lambda a, b: (a.sum(1) * w[0]).sum() + b.max(1).sum(), (0, 1))(x, y)
    for a, b in zip(g, want):
        assert_like_jax(a, b)


# ---- differentiating jax.checkpoint to any order -------------------------------------------------

_ONE = np.float32(1.)
_X0 = np.float32(0.7)
_XV = np.linspace(0.1, 1, 5).astype(np.float32)


def _remat(J, N, policy):
    pol = None if policy is None else getattr(J.checkpoint_policies, policy)
    return J.checkpoint(lambda t: N.sin(N.sin(t)) * N.cos(t), policy=pol)


def _jvp1(J, f):
    return lambda u: J.jvp(f, (u,), (_ONE,))[1]


REMAT_ORDERS = {
    "jvp(jvp)": lambda J, N, f: J.jvp(_jvp1(J, f), (_X0,), (_ONE,)),
    "jvp(grad)": lambda J, N, f: J.jvp(J.grad(f), (_X0,), (_ONE,)),
    "grad(grad)": lambda J, N, f: J.grad(J.grad(f))(_X0),
    "grad(jvp)": lambda J, N, f: J.grad(_jvp1(J, f))(_X0),
    "grad(grad(grad))": lambda J, N, f: J.grad(J.grad(J.grad(f)))(_X0),
    "jvp(jvp(jvp))": lambda J, N, f: J.jvp(_jvp1(J, _jvp1(J, f)), (_X0,), (_ONE,)),
    "grad(jvp(jvp))": lambda J, N, f: J.grad(_jvp1(J, _jvp1(J, f)))(_X0),
    "grad(grad(jvp))": lambda J, N, f: J.grad(J.grad(_jvp1(J, f)))(_X0),
    "hessian": lambda J, N, f: J.hessian(lambda v: f(v).sum())(_XV),
    "jacfwd(jacrev)": lambda J, N, f: J.jacfwd(J.jacrev(f))(_XV),
    "vmap(grad(grad))": lambda J, N, f: J.vmap(J.grad(J.grad(f)))(_XV),
    "jit(jvp(jvp))": lambda J, N, f: J.jit(lambda u: J.jvp(_jvp1(J, f), (u,), (_ONE,)))(_X0),
    "jit(grad(jvp))": lambda J, N, f: J.jit(J.grad(_jvp1(J, f)))(_X0),
    "linearize(jvp)": lambda J, N, f: J.linearize(_jvp1(J, f), _X0)[1](_ONE),
}


@pytest.mark.parametrize("policy", [None, "nothing_saveable", "everything_saveable",
                                    "dots_saveable"])
@pytest.mark.parametrize("order", sorted(REMAT_ORDERS))
def test_checkpoint_differentiates_to_any_order(order, policy):
    run = REMAT_ORDERS[order]
    _both(lambda: run(jaxlite, jnp, _remat(jaxlite, jnp, policy)),
          lambda: run(jax, rjnp, _remat(jax, rjnp, policy)), rtol=1e-5, atol=1e-6)


def test_checkpoint_nested_static_and_named_policy_second_order():
    def nested(J, N):
        g = J.checkpoint(lambda a, n: N.sin(a) ** n, static_argnums=(1,), prevent_cse=False)
        h = J.checkpoint(lambda a: g(a, 3) * g(a, 2))
        return J.grad(J.grad(h))(_X0), J.jvp(_jvp1(J, h), (_X0,), (_ONE,))

    def named(J, N):
        def inner(t):
            a = J.ad_checkpoint.checkpoint_name(N.sin(t), "a")
            return N.cos(a) * a
        h = J.checkpoint(inner, policy=J.checkpoint_policies.save_only_these_names("a"))
        return J.grad(J.grad(h))(_X0), J.jvp(_jvp1(J, h), (_X0,), (_ONE,))

    for case in (nested, named):
        _both(lambda: case(jaxlite, jnp), lambda: case(jax, rjnp), rtol=1e-5, atol=1e-6)


def test_checkpoint_second_order_on_xla_cpu():
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    dev = jaxlite.devices("xla_cpu")[0]
    x = jaxlite.device_put(_X0, dev)
    f, rf = _remat(jaxlite, jnp, None), _remat(jax, rjnp, None)
    assert_like_jax(jaxlite.jit(jaxlite.grad(_jvp1(jaxlite, f)))(x),
                    jax.jit(jax.grad(_jvp1(jax, rf)))(_X0), rtol=1e-5)
    got = jaxlite.jit(lambda u: jaxlite.jvp(_jvp1(jaxlite, f), (u,), (_ONE,)))(x)
    want = jax.jit(lambda u: jax.jvp(_jvp1(jax, rf), (u,), (_ONE,)))(_X0)
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=1e-5)


# ---- jax.ops.segment_* at the edges (tests/test_ops_segment.py has the basics) ------------------

SEG_DATA = {"f32": np.array([5., 1., 7., 2., 3., 4., -1., 0.], np.float32),
            "f32-2d": np.arange(24, dtype=np.float32).reshape(8, 3) - 10,
            "i32": np.array([5, 1, 7, 2, 3, 4, -1, 0], np.int32),
            "bool": np.array([5, 1, 7, 2, 3, 4, -1, 0]) > 2,
            "i8-2d": (np.arange(24).reshape(8, 3) - 10).astype(np.int8)}
SEG_IDS = {"sorted": np.array([0, 0, 1, 1, 1, 3, 3, 3]),
           "unsorted": np.array([3, 0, 1, 0, 2, 1, 3, 0]),
           "out-of-range": np.array([0, 5, -1, 1, 2, 7, 1, 0]),
           "negative": np.array([-1, -2, 0, 0, 1, 1, 2, -3])}
SEG_OPS = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


# the fast tier runs one mode of the sweep; make test-slow (CI runs it) the rest
_SEG_MODES = [None] + [pytest.param(m, marks=pytest.mark.slow)
                       for m in ("clip", "drop", "promise_in_bounds")]


# and of the four operations, segment_sum
_SEG_OPS_TIERED = ["segment_sum"] + [pytest.param(o, marks=pytest.mark.slow)
                                     for o in SEG_OPS[1:]]


@pytest.mark.parametrize("op", _SEG_OPS_TIERED)
@pytest.mark.parametrize("ids", sorted(SEG_IDS))
@pytest.mark.parametrize("mode", _SEG_MODES)
def test_segment_ops_options_against_jax(op, ids, mode):
    if mode == "promise_in_bounds" and ids in ("out-of-range", "negative"):
        pytest.skip("a broken promise: the result is unspecified")
    seg = SEG_IDS[ids]
    for data in SEG_DATA.values():
        for ns in (None, 2, 8):
            for kw in ({"bucket_size": 3}, {"indices_are_sorted": ids == "sorted"}):
                _both(lambda: getattr(jaxlite.ops, op)(data, seg, num_segments=ns, mode=mode,
                                                       **kw),
                      lambda: getattr(jax.ops, op)(data, seg, num_segments=ns, mode=mode,
                                                   **kw))


@pytest.mark.parametrize("op", SEG_OPS)
def test_segment_ops_edges_and_transforms(op):
    lite, real = getattr(jaxlite.ops, op), getattr(jax.ops, op)
    f32, srt, oob = SEG_DATA["f32"], SEG_IDS["sorted"], SEG_IDS["out-of-range"]
    e0, i0 = np.zeros((0,), np.float32), np.zeros((0,), np.int32)
    cases = [
        (lambda F: F(e0, i0, num_segments=3)),
        (lambda F: F(e0, i0)),
        (lambda F: F(np.zeros((0, 3), np.float32), i0, num_segments=2)),
        (lambda F: F(f32, srt, num_segments=0)),
        (lambda F: F([1., 2.], [0, 1], 2)),
        (lambda F: F(SEG_DATA["f32-2d"], np.zeros((8, 3), np.int32), 2)),
        (lambda F: F(SEG_DATA["f32-2d"], np.zeros((7,), np.int32), 2)),
        (lambda F: F(f32, np.zeros((8,), np.float32), 2)),
        (lambda F: F(f32, srt, 2, mode="wrap")),
        (lambda F: F(f32, srt, 4, bucket_size=0)),
        (lambda F: F(f32.astype(np.complex64), srt, 4)),
        (lambda F: F(f32[:4], np.array([3, 0, 2, 1]), 4, unique_indices=True)),
        (lambda F: F(f32, srt.astype(np.uint8), 5)),
    ]
    for case in cases:
        _both(lambda: case(lite), lambda: case(real))
    _both(lambda: lite(jnp.asarray(2.0)[None].repeat(3), np.array([0, 1, 1]), 2),
          lambda: real(rjnp.asarray(2.0)[None].repeat(3), np.array([0, 1, 1]), 2))
    _both(lambda: jaxlite.jit(lambda d, i: getattr(jaxlite.ops, op)(d, i, 4))(f32, oob),
          lambda: jax.jit(lambda d, i: getattr(jax.ops, op)(d, i, 4))(f32, oob))
    dd = np.array([5., 1., 5., 2., 2., 4., -1., 0.], np.float32)
    t = np.arange(8, dtype=np.float32)
    w = np.arange(4, dtype=np.float32)
    for seg in (SEG_IDS["unsorted"], np.array([0, 0, 0, 1, 1, 1, 2, 2])):
        _both(lambda: jaxlite.grad(lambda d: (lite(d, seg, 4) * w).sum())(dd),
              lambda: jax.grad(lambda d: (real(d, seg, 4) * w).sum())(dd))
        _both(lambda: jaxlite.jvp(lambda d: lite(d, seg, 4), (dd,), (t,)),
              lambda: jax.jvp(lambda d: real(d, seg, 4), (dd,), (t,)))
        _both(lambda: jaxlite.vmap(lambda d: lite(d, seg, 4))(np.stack([dd, -dd])),
              lambda: jax.vmap(lambda d: real(d, seg, 4))(np.stack([dd, -dd])))
        _both(lambda: jaxlite.vmap(lambda i: lite(dd, i, 4))(np.stack([seg, seg[::-1]])),
              lambda: jax.vmap(lambda i: real(dd, i, 4))(np.stack([seg, seg[::-1]])))


# ---- vmap(..., out_axes=None) on outputs passed through ------------------------------------------

_VX = np.arange(6, dtype=np.float32).reshape(3, 2)
_VC = np.float32(5.)

VMAP_NONE = {
    "unmapped-scalar": (lambda a, b: (a * 2, b), dict(in_axes=(0, None), out_axes=(0, None)),
                        (_VX, _VC)),
    "unmapped-array": (lambda a, b: (a * 2, b), dict(in_axes=(0, None), out_axes=(0, None)),
                       (_VX, _VX[0])),
    "mapped-input-out-none": (lambda a, b: (a * 2, a),
                              dict(in_axes=(0, None), out_axes=(0, None)), (_VX, _VC)),
    "identity-all-unmapped": (lambda a: a, dict(in_axes=None, out_axes=None, axis_size=3),
                              (_VX,)),
    "identity-mapped": (lambda a: a, dict(in_axes=0, out_axes=None), (_VX,)),
    "python-constant": (lambda a: 1.0, dict(out_axes=None), (_VX,)),
    "closed-over": (lambda a: _VC * 2, dict(out_axes=None), (_VX,)),
    "dict-tree": (lambda a, b: {"a": a, "b": b}, dict(in_axes=(0, None),
                                                      out_axes={"a": 0, "b": None}), (_VX, _VC)),
    "prefix-none": (lambda a, b: (b, b + 1), dict(in_axes=(0, None), out_axes=None),
                    (_VX, _VC)),
    "python-int": (lambda a, b: (a, b), dict(in_axes=(0, None), out_axes=(0, None)), (_VX, 3)),
    "list": (lambda a, b: (a, b), dict(in_axes=(0, None), out_axes=(0, None)), (_VX, [1., 2.])),
    "varies-by-arithmetic": (lambda a, b: (a, b + a[0]),
                             dict(in_axes=(0, None), out_axes=(0, None)), (_VX, _VC)),
    "nested-tree-varies": (lambda a, b: {"p": a, "q": (b, a)},
                           dict(in_axes=(0, None), out_axes={"p": 0, "q": (None, None)}),
                           (_VX, _VC)),
}


def _same_leaves(got, want):
    gl, wl = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert type(g) is type(w) or hasattr(w, "dtype")
        if hasattr(w, "weak_type"):
            assert_like_jax(g, w)
        else:       # passed through untouched: the very object, as JAX returns it
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
            assert np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize("name", sorted(VMAP_NONE))
def test_vmap_out_axes_none_on_passed_through_outputs(name):
    f, kw, args = VMAP_NONE[name]
    try:
        want = jax.vmap(f, **kw)(*args)
    except ValueError as e:
        with pytest.raises(ValueError, match=r"out_axes.*None.*batched on axis 0") as info:
            jaxlite.vmap(f, **kw)(*args)
        # the same path into the output tree as JAX names
        assert str(e).split(",")[0].split()[-1] in str(info.value)
        return
    _same_leaves(jaxlite.vmap(f, **kw)(*args), want)
    _same_leaves(jaxlite.jit(jaxlite.vmap(f, **kw))(*args), jax.jit(jax.vmap(f, **kw))(*args))


def test_vmap_out_axes_none_nested_and_under_grad():
    a2, b2 = np.ones((2, 3), np.float32), np.arange(2, dtype=np.float32)
    inner = dict(in_axes=(0, None), out_axes=(0, None))
    _same_leaves(jaxlite.vmap(jaxlite.vmap(lambda a, b: (a, b), **inner))(a2, b2),
                 jax.vmap(jax.vmap(lambda a, b: (a, b), **inner))(a2, b2))
    _same_leaves(jaxlite.vmap(lambda a, b: (jaxlite.grad(lambda u: (u * b).sum())(a), b),
                              **inner)(_VX, _VC),
                 jax.vmap(lambda a, b: (jax.grad(lambda u: (u * b).sum())(a), b),
                          **inner)(_VX, _VC))
    g = jaxlite.grad(lambda a, b: jaxlite.vmap(lambda u, v: (u * v, v), **inner)(a, b)[1])
    assert_like_jax(g(_VX, _VC), jax.grad(
        lambda a, b: jax.vmap(lambda u, v: (u * v, v), **inner)(a, b)[1])(_VX, _VC))


def _rw_grid():
    import itertools
    return list(itertools.chain(
        itertools.product([(4, 6)], [(2, 1), (1, 2)], [(1, 1), (2, 1), (1, 2)],
                          ["VALID", "SAME", ((0, 3), (1, 2))], [(1, 1), (2, 3)],
                          [(1, 1), (1, 2)]),
        itertools.product([(3, 2, 4, 6)], [(1, 1, 2, 1), (2, 1, 2, 1)],
                          [(1, 2, 2, 1), (1, 1, 1, 1)],
                          ["VALID", "SAME", ((0, 1), (1, 0), (2, 3), (0, 2))],
                          [(1, 1, 1, 1), (2, 1, 3, 2)], [(1, 1, 1, 1), (1, 2, 2, 1)])))


@pytest.mark.slow      # make test-slow (CI runs it)
def test_variadic_reduce_window_grid():
    """A sum and a max carried together over windows of every stride, padding and
    dilation kind (the grid of JAX's own variadic reduce_window test)."""
    init = (np.asarray(0, np.float32), np.array(-np.inf, np.float32))
    rs = np.random.RandomState(3)
    for shape, dims, strides, padding, bd, wdil in _rw_grid():
        a, b = rs.randn(*shape).astype(np.float32), rs.randn(*shape).astype(np.float32)
        _both(lambda: lax.reduce_window((a, b), init, lambda p, q: (p[0] + q[0],
                                                                    lax.max(p[1], q[1])),
                                        dims, strides, padding, bd, wdil),
              lambda: rlax.reduce_window((a, b), init, lambda p, q: (p[0] + q[0],
                                                                     rlax.max(p[1], q[1])),
                                         dims, strides, padding, bd, wdil),
              rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("computation", ["add", "generic"])
def test_reduce_init_value_dtypes(computation):
    """A monoid's identity of any dtype selects the plain reduction; a generic reducer needs
    each init value of its operand's dtype (a Python scalar: its kind's default dtype)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xb = x.astype(BF16)
    cases = [(x, lambda N: np.array(0.)), (x, lambda N: np.float64(0)),
             (xb, lambda N: N.asarray(0.)),
             (x, lambda N: N.asarray(0.)), (x, lambda N: np.int32(0)), (x, lambda N: 0),
             (x > 2, lambda N: False), (xb, lambda N: np.float32(0)), (xb, lambda N: 0.),
             (x.astype(np.int8), lambda N: 0), (x.astype(np.int32), lambda N: 0),
             (x.astype(np.float16), lambda N: np.float32(0))]
    for op, init in cases:
        def f(L):
            return L.add if computation == "add" else (lambda a, b: a * b + a)
        _both(lambda: lax.reduce(op, init(jnp), f(lax), (1,)),
              lambda: rlax.reduce(op, init(rjnp), f(rlax), (1,)))
        _both(lambda: lax.reduce_window(op, init(jnp), f(lax), (1, 2), (1, 1), "VALID"),
              lambda: rlax.reduce_window(op, init(rjnp), f(rlax), (1, 2), (1, 1), "VALID"))


# ---- dot_general's transpose with contracting dimensions out of order ----------------------------

@pytest.mark.parametrize("ls,rs,dn", [
    ((5, 3, 2), (2, 4, 3), (((1, 2), (2, 0)), ((), ()))),
    ((5, 3, 2), (2, 4, 3), (((2, 1), (0, 2)), ((), ()))),
    ((6, 5, 3, 2), (2, 6, 4, 3), (((2, 3), (3, 0)), ((0,), (1,)))),
    ((3, 2, 6), (6, 2, 3), (((1, 0), (1, 2)), ((2,), (0,))))])
def test_dot_general_gradients_with_unsorted_contracting_dims(ls, rs, dn):
    """The cotangent of each operand has its shape and layout (it came back permuted when
    the rhs contracting dimensions were not in increasing order)."""
    r = np.random.RandomState(0)
    a, b = r.randn(*ls).astype(np.float32), r.randn(*rs).astype(np.float32)
    _both(lambda: jaxlite.grad(lambda x, y: (lax.dot_general(x, y, dn) ** 2).sum(),
                               (0, 1))(a, b),
          lambda: jax.grad(lambda x, y: (rlax.dot_general(x, y, dn) ** 2).sum(), (0, 1))(a, b),
          rtol=1e-5, atol=1e-5)


# ---- lax.ragged_dot_general ----------------------------------------------------------------------

RAGGED = {
    "free": ((5, 3), (2, 3, 4), ((((1,), (1,)), ((), ())), (0,), (0,))),
    "free-transposed": ((3, 5), (2, 3, 4), ((((0,), (1,)), ((), ())), (1,), (0,))),
    "free-group-last": ((5, 3), (3, 4, 2), ((((1,), (0,)), ((), ())), (0,), (2,))),
    "free-batched": ((2, 4, 3), (2, 2, 3, 5), ((((2,), (2,)), ((0,), (1,))), (1,), (0,))),
    "contracting": ((4, 3), (3, 5), ((((1,), (0,)), ((), ())), (1,), ())),
    "contracting-batched": ((2, 4, 3), (2, 3, 5), ((((2,), (1,)), ((0,), (0,))), (2,), ())),
    "batch": ((4, 2, 3), (4, 3, 5), ((((2,), (1,)), ((0,), (0,))), (0,), ())),
    "no-group-dim": ((5, 3), (2, 3, 4), ((((1,), (1,)), ((), ())), (0,), ())),
    "group-dim-when-contracting": ((5, 3), (3, 4), ((((1,), (0,)), ((), ())), (1,), (0,))),
    "two-ragged-dims": ((5, 3), (2, 3, 4), ((((1,), (1,)), ((), ())), (0, 1), (0,))),
}


def test_ragged_dot_general_signature_is_jaxs():
    assert _params(lax.ragged_dot_general) == _params(rlax.ragged_dot_general)
    assert list(inspect.signature(lax.RaggedDotDimensionNumbers).parameters) == \
        list(inspect.signature(rlax.RaggedDotDimensionNumbers).parameters)
    dn = lax.RaggedDotDimensionNumbers(([[1], [1]], [[], []]), [0], [0])
    assert dn == lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    assert hash(dn) == hash(lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,),
                                                          (0,)))
    assert repr(dn) == repr(rlax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,),
                                                           (0,)))


@pytest.mark.parametrize("name", sorted(RAGGED))
def test_ragged_dot_general_modes(name):
    ls, rs, dn = RAGGED[name]
    r = np.random.RandomState(1)
    a, b = r.randn(*ls).astype(np.float32), r.randn(*rs).astype(np.float32)
    gs = np.array([1, 2], np.int32)

    def run(L, x, y, **kw):
        return L.ragged_dot_general(x, y, gs, L.RaggedDotDimensionNumbers(*dn), **kw)
    _both(lambda: run(lax, a, b), lambda: run(rlax, a, b), rtol=1e-5, atol=1e-6)
    _both(lambda: jaxlite.jit(lambda x, y: run(lax, x, y))(a, b),
          lambda: jax.jit(lambda x, y: run(rlax, x, y))(a, b), rtol=1e-5, atol=1e-6)
    i8a, i8b = (a * 3).astype(np.int8), (b * 3).astype(np.int8)
    _both(lambda: run(lax, i8a, i8b, preferred_element_type=np.int32),
          lambda: run(rlax, i8a, i8b, preferred_element_type=np.int32))
    if name.startswith("free"):     # JAX 0.10.2 differentiates this mode only
        _both(lambda: jaxlite.grad(lambda x, y: (run(lax, x, y) ** 2).sum(), (0, 1))(a, b),
              lambda: jax.grad(lambda x, y: (run(rlax, x, y) ** 2).sum(), (0, 1))(a, b),
              rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz",
                                  "float8_e3m4", "float8_e8m0fnu", "float4_e2m1fn"])
def test_narrow_float_dot_on_xla_cpu(name):
    """Same-type narrow float products compiled by XLA itself, bit for bit with JAX's (a
    float4 product asked of XLA with a float32 result does not compile)."""
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    dev = jaxlite.devices("xla_cpu")[0]
    dt = getattr(ml_dtypes, name)
    r = np.random.RandomState(0)
    a, b = np.abs(r.randn(4, 8)).astype(dt), np.abs(r.randn(8, 3)).astype(dt)
    dn = (((1,), (0,)), ((), ()))
    want = rlax.dot_general(a, b, dn)
    assert_like_jax(lax.dot_general(a, b, dn), want, rtol=0, atol=0)
    got = jaxlite.jit(lambda x, y: lax.dot_general(x, y, dn))(jaxlite.device_put(a, dev),
                                                              jaxlite.device_put(b, dev))
    assert_like_jax(got, want, rtol=0, atol=0)


# ---- einsum: sums within one operand in the preferred type (found by a fresh-user check) ---

_I8 = np.array([[100, 100], [1, 2]], np.int8)
_V8 = np.array([100, 100], np.int8)
_BF = np.array([[2.503, 425.0]], np.float32).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("spec,ops,pet", [
    ("ij->i", (_I8,), np.int32), ("ij->", (_I8,), np.int32), ("ii->", (_I8,), np.int32),
    ("ij,k->i", (_I8, _V8), np.int32), ("i,j,k->", (_V8, _V8, _V8), np.int32),
    ("ij,j->i", (_I8, _V8), np.int32), ("ij->ij", (_I8,), np.int32),
    ("ij->i", (_BF,), np.float32)], ids=lambda v: v if isinstance(v, str) else None)
def test_einsum_sums_within_an_operand_in_the_preferred_type(spec, ops, pet):
    # an int8 row summed for an int32 result must not wrap in int8 (it gave -56 for
    # 100 + 100), nor a bfloat16 row round in bfloat16
    assert_like_jax(jnp.einsum(spec, *ops, preferred_element_type=pet),
                    rjnp.einsum(spec, *ops, preferred_element_type=pet), rtol=0, atol=0)


def _argmax_pair_of(L):
    def f(a, b):
        take = a[0] >= b[0]
        return L.lax.select(take, a[0], b[0]), L.lax.select(take, a[1], b[1])
    return f


@pytest.mark.parametrize("wd,ws,bd,wdil", [
    ((0, 2), (1, 1), None, None), ((-1, 2), (1, 1), None, None), ((1, 2), (0, 1), None, None),
    ((1, 2), (-1, 1), None, None), ((1, 2), (1, 1), None, (1, 0)),
    ((1, 2), (1, 1), (0, 1), None)])
def test_variadic_reduce_window_checks_its_window_as_jax(wd, ws, bd, wdil):
    # found by a fresh-user check: the composed (variadic) path checked nothing: a zero
    # window gave the init values silently, a zero stride a ZeroDivisionError, a negative
    # one an empty result
    x = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    i = np.arange(8, dtype=np.int32).reshape(2, 4)
    for L in (jaxlite, jax):
        with pytest.raises(TypeError, match="positive"):
            L.lax.reduce_window((x, i), (-np.inf, np.int32(-1)), _argmax_pair_of(L), wd, ws,
                                "VALID", bd, wdil)
