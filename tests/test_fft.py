"""jaxlite.numpy.fft and jaxlite.lax.fft against real JAX: values (float32 tolerances),
dtypes, shapes and weak types for every function and norm, crop and pad by ``n``/``s``,
several and reordered axes, gradients (against JAX and finite differences, real and complex
inputs), vmap, jit, printed programs, x64 dtypes and JAX's exception types on bad input."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.core import primitives

from _transform_checks import check_grads
from oracle import assert_like_jax

R = np.random.default_rng(12)


def real(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


def cplx(*shape, dtype=np.complex64):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(dtype)


X = real(3, 6)          # even transform length
XO = real(3, 5)         # odd
C = cplx(3, 6)
CO = cplx(3, 5)
X4 = real(2, 1, 3, 2)   # four axes: fftn splits them into two transforms, as JAX
C4 = cplx(2, 1, 3, 2)


def _close(got, want):
    """assert_like_jax with float32 FFT tolerances: rounding grows with the magnitude of
    the sums, so the absolute tolerance follows the largest result."""
    w = np.asarray(want)
    scale = float(np.max(np.abs(w))) if w.size else 1.0
    assert_like_jax(got, want, rtol=2e-5, atol=2e-6 * max(1.0, scale))


def _both(name, args, kw, rjnp):
    return getattr(jnp.fft, name)(*args, **kw), getattr(rjnp.fft, name)(*args, **kw)


# ---- values, dtypes, shapes --------------------------------------------------------------

TRANSFORMS = [
    ("fft", C, {}), ("fft", X, {}), ("fft", C, {"n": 4}), ("fft", C, {"n": 9, "axis": 0}),
    ("fft", C, {"norm": "ortho"}), ("fft", C, {"norm": "forward"}),
    ("ifft", C, {}), ("ifft", CO, {"n": 7, "norm": "ortho"}), ("ifft", C, {"norm": "forward"}),
    ("rfft", X, {}), ("rfft", XO, {"norm": "ortho"}), ("rfft", X, {"n": 3}),
    ("rfft", X, {"n": 9, "axis": 0, "norm": "forward"}),
    ("irfft", C, {}), ("irfft", CO, {"n": 9}), ("irfft", C, {"n": 3, "norm": "ortho"}),
    ("irfft", C, {"axis": 0, "norm": "forward"}),
    ("hfft", C, {}), ("hfft", CO, {"n": 4, "norm": "ortho"}), ("hfft", C, {"norm": "forward"}),
    ("ihfft", X, {}), ("ihfft", XO, {"n": 8, "norm": "ortho"}),
    ("ihfft", X, {"norm": "forward"}),
    ("fft2", C, {}), ("fft2", C, {"s": (2, 8), "norm": "ortho"}), ("ifft2", C, {"axes": (1, 0)}),
    ("rfft2", X, {"norm": "forward"}), ("irfft2", C, {"s": (4, 7)}),
    ("fftn", C4, {}), ("ifftn", C4, {"axes": (2, 0), "norm": "ortho"}),
    ("rfftn", X4, {}), ("rfftn", X, {"s": (5, 5)}), ("irfftn", C4, {}),
    ("irfftn", C, {"axes": (1, 0), "norm": "forward"}),
]


@pytest.mark.parametrize("name,x,kw", TRANSFORMS,
                         ids=[f"{n}-{x.dtype}{x.shape}-{k}" for n, x, k in TRANSFORMS])
def test_transform_like_jax(name, x, kw, rjnp):
    got, want = _both(name, (x,), kw, rjnp)
    _close(got, want)


@pytest.mark.parametrize("name,x,kw", [
    ("fft", np.arange(6, dtype=np.int32), {}), ("fft", np.array([True, False, True]), {}),
    ("fft", np.linspace(0, 1, 5).astype(np.float16), {}), ("rfft", np.arange(5, dtype=np.int8), {}),
    ("irfft", np.arange(4, dtype=np.int32), {}), ("hfft", np.arange(4, dtype=np.float32), {}),
    ("fft", 2.0 * np.ones((2, 3), np.float32), {"n": 1}),
    # empty axes and empty results, as JAX returns them
    ("fft", np.ones((3, 0), np.complex64), {}), ("irfft", np.ones((3, 0), np.complex64), {}),
    ("irfft", np.ones((3, 1), np.complex64), {}), ("irfft", CO, {"n": 1}),
    ("hfft", np.ones((3, 1), np.complex64), {}),
    ("fftn", X, {"axes": ()}), ("rfftn", X, {"axes": ()}), ("irfftn", X, {"axes": ()}),
], ids=lambda v: str(getattr(v, "dtype", v)))
def test_dtypes_and_edges_like_jax(name, x, kw, rjnp):
    got, want = _both(name, (x,), kw, rjnp)
    _close(got, want)


def test_values_are_the_transforms():
    """Independent of the oracle: against NumPy's float64 transforms and the definition."""
    x = X.astype(np.float64)
    np.testing.assert_allclose(jnp.fft.fft(X), np.fft.fft(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jnp.fft.irfft(jnp.fft.rfft(X)), X, rtol=1e-5, atol=1e-6)
    k = np.arange(6)
    dft = np.exp(-2j * np.pi * np.outer(k, k) / 6)
    np.testing.assert_allclose(jnp.fft.fft(X[0], norm="ortho"), dft @ x[0] / np.sqrt(6),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jnp.fft.ifftn(jnp.fft.fftn(C4)), C4, rtol=1e-5, atol=1e-6)
    assert jnp.fft.fft(X).dtype == np.complex64      # NumPy's own fft would give complex128


@pytest.mark.parametrize("name,args,kw", [
    ("fftfreq", (5,), {}), ("fftfreq", (6, 0.3), {}), ("fftfreq", (0,), {}),
    ("fftfreq", (4,), {"dtype": np.int32}), ("fftfreq", (7,), {"dtype": np.float16}),
    ("fftfreq", (4,), {"dtype": np.complex64}),
    ("fftfreq", (5,), {"d": np.array([[1.0], [0.5]], np.float32)}),
    ("rfftfreq", (5,), {}), ("rfftfreq", (6, 0.3), {}), ("rfftfreq", (4,), {"dtype": np.int32}),
    ("rfftfreq", (4,), {"dtype": np.complex64}),
    ("fftshift", (X,), {}), ("ifftshift", (XO,), {}), ("fftshift", (XO,), {"axes": 1}),
    ("ifftshift", (X4,), {"axes": (0, -1)}), ("fftshift", (3.0,), {}),
    ("fftshift", (np.arange(5),), {}),
], ids=lambda v: str(v) if not isinstance(v, (tuple, dict)) else None)
def test_frequencies_and_shifts_like_jax(name, args, kw, rjnp):
    got, want = _both(name, args, kw, rjnp)
    assert_like_jax(got, want, rtol=1e-6, atol=1e-7)


# ---- lax.fft -------------------------------------------------------------------------------

@pytest.mark.parametrize("x,fft_type,lengths", [
    (C, "fft", (6,)), (C, "IFFT", (3, 6)), (X, "rfft", (3, 6)), (CO, "irfft", (8,)),
    (CO, "IRFFT", (3, 9)), (C4, "fft", (1, 3, 2)), (X, "fft", (6,)), (1.0, "fft", ()),
    (np.arange(4, dtype=np.int32), "rfft", (4,)), (np.ones(3, np.float16), "irfft", (4,)),
], ids=str)
def test_lax_fft_like_jax(x, fft_type, lengths, rjax):
    got = lax.fft(x, fft_type, lengths)
    want = rjax.lax.fft(x, fft_type, lengths)
    _close(got, want)


def test_fft_type_enum(rjax):
    assert [(t.name, int(t)) for t in lax.FftType] == \
        [(t.name, int(t)) for t in rjax.lax.FftType]
    x = lax.fft(C, lax.FftType.IFFT, (6,))
    _close(x, rjax.lax.fft(C, rjax.lax.FftType.IFFT, (6,)))


# ---- derivatives ----------------------------------------------------------------------------

def _loss(np_, fn):
    """A real scalar of a transform's result with distinct weights on every real and
    imaginary part, so each entry of the gradient is exercised."""
    def f(x):
        y = fn(np_, x)
        w = np.linspace(0.3, 1.7, int(np.prod(y.shape)), dtype=np.float32).reshape(y.shape)
        if np.dtype(y.dtype).kind == "c":
            return (np_.real(y) * w).sum() + (np_.imag(y) * w * w).sum()
        return (y * w).sum()
    return f


GRADS = [
    ("fft-real", lambda m, x: m.fft.fft(x), X),
    ("fft-complex", lambda m, x: m.fft.fft(x, n=8), C),
    ("ifft-ortho", lambda m, x: m.fft.ifft(x, norm="ortho"), C),
    ("rfft-even", lambda m, x: m.fft.rfft(x), X),
    ("rfft-odd-axis0", lambda m, x: m.fft.rfft(x, axis=0), XO),
    ("irfft-even", lambda m, x: m.fft.irfft(x), C),
    ("irfft-odd-n", lambda m, x: m.fft.irfft(x, n=9), CO),
    ("hfft", lambda m, x: m.fft.hfft(x, norm="forward"), CO),
    ("ihfft", lambda m, x: m.fft.ihfft(x), XO),
    ("rfft2", lambda m, x: m.fft.rfft2(x), X),
    ("irfftn", lambda m, x: m.fft.irfftn(x, s=(4, 7)), C),
]


@pytest.mark.parametrize("name,fn,x", GRADS, ids=[g[0] for g in GRADS])
def test_grad_like_jax(name, fn, x, rjax, rjnp):
    got = jaxlite.grad(_loss(jnp, fn))(x)
    want = rjax.jit(rjax.grad(_loss(rjnp, fn)))(x)      # one compile, not one per op
    _close(got, want)


def _finite_difference_grad(f, x, eps=1e-6):
    """JAX's gradient convention by central differences: df/d(re) - i df/d(im)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for unit in ((1, 1j) if x.dtype.kind == "c" else (1,)):
            d = np.zeros_like(x)
            d[idx] = unit * eps
            v = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
            g[idx] += v if unit == 1 else -1j * v
    return g


@pytest.mark.parametrize("name,fn,x", [g for g in GRADS if g[0] in
                                       ("fft-complex", "rfft-even", "rfft-odd-axis0",
                                        "irfft-even", "irfft-odd-n", "irfftn")],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_grad_against_finite_differences(name, fn, x):
    with jaxlite.enable_x64(True):
        x64 = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
        f = _loss(jnp, fn)
        np.testing.assert_allclose(jaxlite.grad(f)(x64), _finite_difference_grad(f, x64),
                                   rtol=1e-6, atol=1e-6)


def test_grads_and_hessian_checks_of_real_paths():
    """JVP against finite differences and VJP as its transpose, second order included
    (the transform is linear: the second derivative of a product of two is not zero)."""
    check_grads(lambda x: jnp.real(jnp.fft.rfft(x)) * jnp.imag(jnp.fft.rfft(x)), (X,),
                order=2)
    check_grads(lambda x: jnp.fft.irfft(jnp.fft.fft(x) * 1j, n=7), (XO,), order=1)


def test_jvp_like_jax(rjax):
    t = cplx(3, 6)
    got = jaxlite.jvp(lambda x: lax.fft(x, "fft", (3, 6)), (C,), (t,))
    want = rjax.jvp(lambda x: rjax.lax.fft(x, "fft", (3, 6)), (C,), (t,))
    _close(got[0], want[0])
    _close(got[1], want[1])


# ---- vmap and jit ---------------------------------------------------------------------------

@pytest.mark.parametrize("fn,x", [
    (lambda x: jnp.fft.rfft(x), X), (lambda x: jnp.fft.irfft(x, n=5), C),
    (lambda x: jnp.fft.fft(x, norm="ortho"), C),
    (lambda x: lax.fft(x, "ifft", (x.shape[-1],)), CO)])
def test_vmap_is_the_stacked_results(fn, x):
    for axis in (0, 1):
        got = jaxlite.vmap(fn, in_axes=axis)(x)
        want = np.stack([np.asarray(fn(np.take(x, i, axis))) for i in range(x.shape[axis])])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_vmap_of_grad_and_jit_like_jax(rjax, rjnp):
    def f(m):
        return lambda x: (m.abs(m.fft.rfft(x)) ** 2).sum()
    got = jaxlite.jit(jaxlite.vmap(jaxlite.grad(f(jnp))))(X)
    want = rjax.jit(rjax.vmap(rjax.grad(f(rjnp))))(X)
    _close(got, want)
    g = jaxlite.jit(lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x) * 2.0, s=x.shape))(X)
    _close(g, rjax.jit(lambda x: rjnp.fft.irfft2(rjnp.fft.rfft2(x) * 2.0, s=x.shape))(X))


@pytest.mark.parametrize("fn,x", [
    (lambda m: lambda a: m.fft.rfft(a), X),
    (lambda m: lambda a: m.fft.irfftn(a), C),
    (lambda m: lambda a: m.fft.fft(a, norm="ortho"), X),
    (lambda m: lambda a: m.fft.hfft(a), CO),
    (lambda m: lambda a: m.fft.ihfft(a, norm="forward"), X),
    (lambda m: lambda a: m.fft.fftn(a, axes=(0,)), X),
    (lambda m: lambda a: m.fft.fftn(a), C4),
    (lambda m: lambda a: a * m.fft.fftfreq(6), X[0]),
    (lambda m: lambda a: a[:4] * m.fft.rfftfreq(6, 0.5), X[0]),
])
def test_programs_print_like_jax(fn, x, rjax, rjnp):
    assert str(jaxlite.make_jaxpr(fn(jnp))(x)) == str(rjax.make_jaxpr(fn(rjnp))(x))


def test_lax_fft_prints_like_jax(rjax):
    got = jaxlite.make_jaxpr(lambda a: lax.fft(a, lax.FftType.IRFFT, (3, 10)))(C)
    want = rjax.make_jaxpr(lambda a: rjax.lax.fft(a, rjax.lax.FftType.IRFFT, (3, 10)))(C)
    assert str(got) == str(want)
    assert "fft[fft_lengths=(3, 10) fft_type=3]" in str(got)


def test_primitive_is_declared_with_its_rules():
    p = primitives()["fft"]
    assert p.jvp is not None and p.transpose is not None and p.batch is not None
    assert p.flops(jaxlite.core.avals.ShapedArray((4, 8), np.dtype(np.complex64)),
                   fft_type=lax.FftType.FFT, fft_lengths=(8,)) == 4 * 5 * 8 * 3


# ---- x64 -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["int8", pytest.param("int64", marks=pytest.mark.slow),
                                "float32", pytest.param("float64", marks=pytest.mark.slow),
                                pytest.param("complex128", marks=pytest.mark.slow)])
def test_x64_dtypes_like_jax(dt, x64, rjnp):
    a = np.arange(1, 5).astype(dt)
    names = ["fft", "irfft", "hfft"] + ([] if dt.startswith("complex") else ["rfft", "ihfft"])
    for name in names:
        got, want = _both(name, (a,), {"norm": "ortho"}, rjnp)
        _close(got, want)
    for name, kw in (("fftfreq", {}), ("fftfreq", {"dtype": "int64"}),
                     ("rfftfreq", {"dtype": "int64"}), ("rfftfreq", {"d": np.float32(2)})):
        got, want = _both(name, (6,), kw, rjnp)
        assert_like_jax(got, want)


# ---- bad input -------------------------------------------------------------------------------

F32 = np.ones((3, 8), np.float32)
C64 = F32.astype(np.complex64)

BAD = [
    ("list", lambda m, l: m.fft.fft([1.0, 2.0])),
    ("0-d", lambda m, l: m.fft.fft(1.0)),
    ("n=0", lambda m, l: m.fft.fft(F32, n=0)),
    ("n=-1", lambda m, l: m.fft.rfft(F32, n=-1)),
    ("n float", lambda m, l: m.fft.fft(F32, n=3.0)),
    ("irfft n=0", lambda m, l: m.fft.irfft(C64, n=0)),
    ("axis out of range", lambda m, l: m.fft.fft(F32, axis=2)),
    ("axis -3", lambda m, l: m.fft.ifft(F32, axis=-3)),
    ("norm", lambda m, l: m.fft.fft(F32, norm="bad")),
    ("rfft complex", lambda m, l: m.fft.rfft(C64)),
    ("ihfft complex", lambda m, l: m.fft.ihfft(C64)),
    ("rfft float16", lambda m, l: m.fft.rfft(np.ones(4, np.float16))),
    ("rfft empty", lambda m, l: m.fft.rfft(np.ones((3, 0), np.float32))),
    ("fft2 of 1-d", lambda m, l: m.fft.fft2(np.ones(4, np.float32))),
    ("s vs axes", lambda m, l: m.fft.fftn(F32, s=(4,), axes=(0, 1))),
    ("repeated axes", lambda m, l: m.fft.fftn(F32, axes=(0, 0))),
    ("repeated canonical axes", lambda m, l: m.fft.fftn(F32, axes=(0, -2))),
    ("axes out of range", lambda m, l: m.fft.rfftn(F32, axes=(0, 2))),
    ("s=0", lambda m, l: m.fft.irfftn(C64, s=(0, 4))),
    ("axes int", lambda m, l: m.fft.fftn(F32, axes=1)),
    ("fftshift list", lambda m, l: m.fft.fftshift([1, 2])),
    ("fftshift axis", lambda m, l: m.fft.fftshift(F32, axes=2)),
    ("lax list lengths", lambda m, l: l.fft(C64, "fft", [8])),
    ("lax int type", lambda m, l: l.fft(C64, 1, (8,))),
    ("lax bad name", lambda m, l: l.fft(C64, "Ifft", (8,))),
    ("lax wrong lengths", lambda m, l: l.fft(C64, "fft", (7,))),
    ("lax too few dims", lambda m, l: l.fft(C64, "fft", (2, 3, 8))),
    ("lax rfft complex", lambda m, l: l.fft(C64, "rfft", (8,))),
    ("lax rfft bfloat16", lambda m, l: l.fft(np.ones(4, jnp.bfloat16), "rfft", (4,))),
    ("lax negative length", lambda m, l: l.fft(np.ones((3, 0), np.complex64), "fft", (-1,))),
]


@pytest.mark.parametrize("fn", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_raises_like_jax(fn, rjax, rjnp):
    with pytest.raises(Exception) as want:
        fn(rjnp, rjax.lax)
    with pytest.raises(want.type):
        fn(jnp, lax)


def test_bad_input_jax_rejects_only_when_compiling():
    """JAX raises MLIR's lowering error for these; jaxlite says what is wrong first."""
    with pytest.raises(ValueError, match="fft_lengths"):
        lax.fft(np.ones((3, 5), np.complex64), "irfft", (10,))
    with pytest.raises(ValueError, match="at most 3"):
        lax.fft(np.ones((2, 2, 2, 2), np.complex64), "fft", (2, 2, 2, 2))


def test_traced_length_raises():
    with pytest.raises(jaxlite.errors.ConcretizationTypeError):
        jaxlite.jit(jnp.fft.fftfreq)(4)
    with pytest.raises(TypeError):
        jaxlite.jit(lambda x, n: jnp.fft.fft(x, n=n))(F32, 4)


# ---- the larger sweep (make test-slow) -------------------------------------------------------

_SWEEP_SHAPES = [(7,), (2, 8), (3, 4, 5)]


@pytest.mark.slow
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("shape", _SWEEP_SHAPES, ids=str)
def test_sweep_every_function_norm_and_length(shape, norm, rjnp):
    x, c = real(*shape), cplx(*shape)
    last = shape[-1]
    for n in (None, 1, last - 1, last + 2):
        for name, a in (("fft", c), ("ifft", c), ("rfft", x), ("irfft", c), ("hfft", c),
                        ("ihfft", x), ("fft", x)):
            for axis in {-1, 0}:
                got, want = _both(name, (a,), {"n": n, "axis": axis, "norm": norm}, rjnp)
                _close(got, want)
    for name, a in (("fftn", c), ("ifftn", c), ("rfftn", x), ("irfftn", c)):
        for axes in (None, (0,), tuple(range(len(shape)))[::-1]):
            for s in (None, "grow", "shrink"):
                ax = axes if axes is not None else tuple(range(len(shape)))
                ss = None if s is None else tuple(
                    shape[i] + (2 if s == "grow" else -1 if shape[i] > 1 else 0) for i in ax)
                got, want = _both(name, (a,), {"s": ss, "axes": axes, "norm": norm}, rjnp)
                _close(got, want)
    if len(shape) >= 2:
        for name, a in (("fft2", c), ("ifft2", c), ("rfft2", x), ("irfft2", c)):
            got, want = _both(name, (a,), {"norm": norm}, rjnp)
            _close(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(2, 1, 2, 3, 2), (1, 2, 2, 1, 2, 3, 2)], ids=str)
def test_sweep_more_than_three_axes(shape, rjnp):
    x, c = real(*shape), cplx(*shape)
    for name, a in (("fftn", c), ("ifftn", x), ("rfftn", x), ("irfftn", c)):
        for axes in (None, tuple(range(len(shape)))[::-2]):
            got, want = _both(name, (a,), {"axes": axes, "norm": "ortho"}, rjnp)
            _close(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8])
def test_sweep_grads_every_length(n, rjax, rjnp):
    x, c = real(2, n), cplx(2, n // 2 + 1)
    for fn, a in ((lambda m, v: m.fft.rfft(v), x), (lambda m, v: m.fft.irfft(v, n=n), c),
                  (lambda m, v: m.fft.hfft(v, n=n, norm="ortho"), c),
                  (lambda m, v: m.fft.ihfft(v, norm="forward"), x),
                  (lambda m, v: m.fft.rfftn(v), x), (lambda m, v: m.fft.irfftn(v, s=(2, n)), c),
                  (lambda m, v: m.fft.fft2(v), c)):
        _close(jaxlite.grad(_loss(jnp, fn))(a), rjax.jit(rjax.grad(_loss(rjnp, fn)))(a))
        with jaxlite.enable_x64(True):
            a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            f = _loss(jnp, fn)
            np.testing.assert_allclose(jaxlite.grad(f)(a64), _finite_difference_grad(f, a64),
                                       rtol=1e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
def test_sweep_frequencies(n, d, rjnp):
    for name in ("fftfreq", "rfftfreq"):
        for dtype in (None, np.float16, np.int32, np.complex64):
            got, want = _both(name, (n, d), {"dtype": dtype}, rjnp)
            assert_like_jax(got, want, rtol=1e-6, atol=1e-7)
