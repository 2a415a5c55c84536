"""The float32 kernels of primitives/_f32math.c give the scalar algorithm's bits.

The kernels are written for speed (vectorised loops for AVX-512, AVX2+FMA and any CPU,
sin/cos in blocks with the C library's function for the few arguments beyond the
reduction's limit, large arrays split over the CPUs), and none of that may change a
single output bit: ``_f32math._reference(name, x, out)`` runs the element functions one
element at a time through a pointer (the scalar algorithm, shared with the native
backend's _vecmath), and every kernel at every instruction set this CPU has must give the
same 32 bits for every input (NaN payloads and signs included), on millions of inputs:
random bit patterns over the whole float32 range, every exponent's neighbourhood of the
functions' thresholds (overflow, underflow, the clamps, the tiny-argument cut-offs, the
sin/cos reduction limit), subnormals, signed zeros, infinities, NaNs.  log1p, exp2, sinh
and cosh are the C library's float64 function rounded, computed by a fast float64 path
that hands the lanes near a float32 rounding boundary to the C library: their inputs
include such lanes.
"""
from __future__ import annotations

import numpy as np
import pytest

_f32math = pytest.importorskip("jaxlite.primitives._f32math")

VECTOR = ["exp", "expm1", "log", "tanh", "logistic", "sin", "cos"]
# the C library's function with a fast float64 path (the C library where it may round
# otherwise)
CHECKED = ["log1p", "exp2", "sinh", "cosh", "asinh", "acosh", "atanh"]
LIBM = ["tan", "asin", "acos", "atan", "erf", "erfc"]
LIMIT = 65536.0     # _vecmath.SIN_COS_LIMIT: beyond it sin/cos take the C library's


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def _around(values, ulps=3):
    """float32 values and their neighbours up to ``ulps`` away, both signs."""
    v = np.abs(np.asarray(values, np.float32)).view(np.int32)
    near = (v[:, None] + np.arange(-ulps, ulps + 1, dtype=np.int32)).ravel()
    near = near[(near >= 0) & (near < 0x7F800000)].view(np.float32)
    return np.concatenate([near, -near])


def _special():
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC12345, 0x7F800001,
                     0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF], np.uint32).view(np.float32)
    fixed = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.0, 0.5], np.float32)
    fmax = np.finfo(np.float32).max
    thresholds = [
        88.72283, 88.7228, 89.0, 103.97208, 104.0, 110.0, 87.33654, 126 * np.log(2),
        2.0 ** -13, 2.0 ** -12, 2.0 ** -24, 10.0, 9.0, 20.0, 45.0,    # tanh, logistic
        np.sqrt(2), np.sqrt(2) / 2, 1.0, 2.0 ** -126, 2.0 ** -149,   # log
        2.0 ** -29, 2.0 ** 24, 2.0 ** 53, 0.41421357, 1.0 - 2.0 ** -24,   # log1p
        126.0, 128.0, 149.0, 150.0, 0.5,      # exp2
        89.0, 89.41599, 0.5, 2.0 ** -126,     # sinh, cosh
        2.0 ** -12, 1.0, 1.0 + 2.0 ** -23, 2.0 ** 26, 2.0 ** 64,   # asinh, acosh, atanh
        LIMIT, LIMIT / 2, 3.0e4, 1.0e5, 1.0e30, fmax, float(fmax) / 3,   # sin/cos
    ]
    # multiples of pi/2 up to the limit: the reduction's hardest arguments
    k = np.unique(np.round(np.geomspace(1, LIMIT / (np.pi / 2), 300)))
    pio2 = (k * (np.pi / 2)).astype(np.float32)
    subnormals = (np.random.default_rng(1).integers(1, 1 << 23, 20_000, dtype=np.uint32)
                  .view(np.float32))
    return np.concatenate([nans, fixed, _around(thresholds, 40), _around(pio2, 4),
                           subnormals, -subnormals, _near_midpoints(np.log1p),
                           _near_midpoints(np.exp2), _near_midpoints(np.sinh),
                           _near_midpoints(np.cosh), _near_midpoints(np.arcsinh),
                           _near_midpoints(np.arctanh), _near_midpoints(np.arccosh, 1.5)])


def _near_midpoints(f64, start=0.5, n=1 << 22):
    """float32 x (from 2**22 consecutive ones above ``start`` and as many below -start/2)
    whose float64 f64(x) lies within 2**12 float64 ulps of a float32 midpoint: where a
    fast path with an error bound must hand the lane to the C library (about a hundred)."""
    lo = np.arange(n, dtype=np.uint32) + np.float32(start).view(np.uint32)
    x = np.concatenate([lo, lo + np.uint32(0x80000000 - (1 << 23))]).view(np.float32)
    with np.errstate(invalid="ignore"):
        v = f64(x.astype(np.float64))
    x, v = x[~np.isnan(v)], v[~np.isnan(v)].view(np.uint64)
    d = np.abs((v & np.uint64((1 << 29) - 1)).astype(np.int64) - (1 << 28))
    return x[d <= 1 << 12]


def _inputs(n):
    rng = np.random.default_rng(20261206)
    everything = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    # the functions' interesting range, densely: exponents of 2**-30 .. 2**17
    moderate = rng.integers(97, 145, n, dtype=np.uint32)
    moderate = ((moderate << np.uint32(23)) | rng.integers(0, 1 << 23, n, dtype=np.uint32)
                | (rng.integers(0, 2, n, dtype=np.uint32) << np.uint32(31)))
    return np.concatenate([everything.view(np.float32), moderate.view(np.float32),
                           _special()])


@pytest.fixture(scope="module")
def xs():
    return _inputs(1 << 21)


def _levels():
    top = _f32math.ISA
    return list(range(top + 1))


def _at_level(level, fn):
    before = _f32math._use_isa(level)
    try:
        return fn()
    finally:
        _f32math._use_isa(before)


@pytest.mark.parametrize("name", VECTOR + CHECKED)
def test_vector_kernels_give_the_scalar_algorithms_bits(xs, name):
    want = np.empty_like(xs)
    _f32math._reference(name, xs, want)
    for level in _levels():
        got = np.empty_like(xs)
        _at_level(level, lambda: getattr(_f32math, name)(xs, got))
        diff = np.nonzero(_bits(got) != _bits(want))[0]
        assert diff.size == 0, (name, level, diff.size, [
            (hex(_bits(xs)[i]), hex(_bits(got)[i]), hex(_bits(want)[i])) for i in diff[:5]])


@pytest.mark.parametrize("name", LIBM)
def test_libm_kernels_give_the_scalar_algorithms_bits(xs, name):
    x = np.ascontiguousarray(xs[::4])
    want, got = np.empty_like(x), np.empty_like(x)
    _f32math._reference(name, x, want)
    getattr(_f32math, name)(x, got)
    assert np.array_equal(_bits(got), _bits(want)), name


def test_nan_payloads_and_special_values_are_kept():
    # NaN in gives the same NaN (payload and sign) where the function passes x through;
    # log gives the default quiet NaN for NaN and negative arguments
    nans = np.array([0x7FC00001, 0xFFC12345, 0x7FC00000, 0xFFC00000], np.uint32)
    x = nans.view(np.float32)
    for name in ["exp", "expm1", "tanh", "logistic", "sin", "cos"]:
        for level in _levels():
            out = np.empty_like(x)
            _at_level(level, lambda: getattr(_f32math, name)(x, out))
            assert list(_bits(out)) == list(nans), (name, level)
    out = np.empty_like(x)
    _f32math.log(x, out)
    assert set(_bits(out)) == {0x7FC00000}
    inf = np.float32(np.inf)
    x = np.array([-0.0, 0.0, inf, -inf, -1.0], np.float32)
    want = {
        "exp": [1.0, 1.0, inf, 0.0, np.float32(np.exp(np.float64(-1)))],
        "tanh": [-0.0, 0.0, 1.0, -1.0, np.float32(np.tanh(np.float64(-1)))],
        "sin": [-0.0, 0.0, np.nan, np.nan, np.float32(np.sin(np.float64(-1)))],
        "log": [-inf, -inf, inf, np.nan, np.nan],
    }
    for name, w in want.items():
        out = np.empty_like(x)
        getattr(_f32math, name)(x, out)
        w = np.array(w, np.float32)
        assert np.array_equal(out, w, equal_nan=True), (name, out, w)
        assert np.array_equal(np.signbit(out[:2]), np.signbit(w[:2])), name


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_far_arguments_anywhere_in_a_block(name):
    # the trig loops work in blocks of 1024: a block with an argument beyond the limit
    # takes the C library's function for it and the polynomial for the others, wherever
    # it sits (first, last, straddling two blocks, every element), in place too
    rng = np.random.default_rng(7)
    n = 5000
    base = rng.uniform(-100, 100, n).astype(np.float32)
    far = np.float32(1e6)
    cases = []
    for where in ([0], [1023], [1024], [1023, 1024], [n - 1], list(range(2048, 3072))):
        x = base.copy()
        x[where] = far * (1 + np.arange(len(where), dtype=np.float32))
        cases.append(x)
    cases.append(np.full(n, far, np.float32))
    cases.append(_around([LIMIT], 200))
    for x in cases:
        want = np.empty_like(x)
        _f32math._reference(name, x, want)
        for level in _levels():
            got = np.empty_like(x)
            _at_level(level, lambda: getattr(_f32math, name)(x, got))
            assert np.array_equal(_bits(got), _bits(want)), (name, level)
            y = x.copy()
            _at_level(level, lambda: getattr(_f32math, name)(y, y))
            assert np.array_equal(_bits(y), _bits(want)), (name, level, "in place")
    far_lane = np.array([1e6, 3.0e38, LIMIT * 2], np.float32)
    out = np.empty_like(far_lane)
    getattr(_f32math, name)(far_lane, out)
    want = getattr(np, name)(far_lane.astype(np.float64)).astype(np.float32)
    assert np.array_equal(out, want), (name, out, want)


@pytest.mark.parametrize("n", [1, 7, 15, 17, 1000, 1025, (1 << 18) + 3, (1 << 20) + 5])
def test_every_length_offset_and_split(n):
    # tails of the vector loops, unaligned starts (a slice from element 1) and arrays
    # large enough to be split over the CPUs: the reference's bits throughout
    x = np.random.default_rng(n).uniform(-30, 30, n + 1).astype(np.float32)[1:]
    x[n // 2] = 2e5
    for name in VECTOR + CHECKED:
        want, got = np.empty_like(x), np.empty_like(x)
        _f32math._reference(name, x, want)
        getattr(_f32math, name)(x, got)
        assert np.array_equal(_bits(got), _bits(want)), (name, n)


def test_reference_rejects_bad_arguments():
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="no function named 'nope'"):
        _f32math._reference("nope", x, x)
    with pytest.raises(TypeError, match="3 arguments"):
        _f32math._reference("exp", x)
    with pytest.raises(TypeError, match="float32 buffers"):
        _f32math._reference("exp", x, np.zeros(4))


def test_overlapping_out_reads_x_first():
    # out a shifted view of x's array: x is read whole before out is written (as a ufunc
    # does), whatever the shift, for every kernel
    for name in VECTOR + CHECKED + ["tan"]:
        for shift in (1, 3, 16, 17, 1000):
            a = np.random.default_rng(shift).uniform(-3, 3, 5000).astype(np.float32)
            want = np.empty(a.size - shift, np.float32)
            _f32math._reference(name, np.ascontiguousarray(a[:-shift]), want)
            b = a.copy()
            getattr(_f32math, name)(b[:-shift], b[shift:])
            assert np.array_equal(_bits(b[shift:]), _bits(want)), (name, shift)
            b = a.copy()
            getattr(_f32math, name)(b[shift:], b[:-shift])
            _f32math._reference(name, np.ascontiguousarray(a[shift:]), want)
            assert np.array_equal(_bits(b[:-shift]), _bits(want)), (name, shift, "down")
