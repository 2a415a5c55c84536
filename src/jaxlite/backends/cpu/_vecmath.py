"""Vectorisable float32 transcendental functions for the native CPU backend.

Layer: backends.  This Numba has no vector maths library: a call to ``math.exp`` or
``np.sin`` inside a loop is one scalar libm call per element and stops LLVM's loop
vectoriser.  The functions here are straight-line arithmetic (no calls, no branches that
LLVM cannot turn into selects), so a loop calling them vectorises.

Method: the float32 argument is widened to float64, reduced exactly (Cody-Waite: the
constant is split so that every product ``k * part`` is exact), a polynomial of just
enough degree (exp, sin, cos: fitted, relative error below 2**-37, see the coefficients;
log: the atanh series) is evaluated in float64 by Horner's rule with fused multiply-adds
(``_fma``: the ``llvm.fma`` intrinsic, one rounding per step; one vector instruction on
an FMA CPU), the result is scaled by a power of two built from its bits and rounded once
to float32.  Arguments of exp/expm1/logistic
are first clamped to [-110, 110], beyond which every float32 result is already 0, -1, 1
or inf, so one normal double ``2**k`` scales.  The float64 arithmetic leaves an error far
below half a float32 ulp, so the results are the correctly rounded float32 values but for
rare near-ties (at most 6 per million arguments differ by 1 ulp from the rounded
reference): measured against NumPy's float64 functions rounded to float32
(tests/test_vecmath.py, 1.4 million arguments over the whole float32 range plus special
values), the maximum errors are

    ===========  ==========================================================
    function     max error (float32 ulps) over the documented domain
    ===========  ==========================================================
    exp_f32      1  (every finite argument; overflow to inf, underflow to 0)
    expm1_f32    1
    log_f32      1  (every positive argument, subnormals included)
    tanh_f32     1
    logistic_f32 1
    sin_f32      1  for abs(x) <= SIN_COS_LIMIT
    cos_f32      1  for abs(x) <= SIN_COS_LIMIT
    ===========  ==========================================================

Cost (one core, a loop over 10M float32, vectorised to 8 doubles per instruction on an
AVX-512 machine): exp 6.5, tanh 9.5, sin/cos 9.7 ms (fitted polynomials, FMAs, a single
scale factor; the first version with degree-12/13 Taylor polynomials and separate
multiply and add took 12.4, 16.7 and 13.5 ms).  A copy of the same array takes 2.5 ms:
these loops are bound by arithmetic.

Special values follow IEEE/C: NaN in gives NaN; exp(-inf) = 0, exp(inf) = inf; log(0) =
-inf, log(x < 0) = NaN, log(inf) = inf; tanh(+-inf) = +-1; sin/cos(+-inf) = NaN; the sign
of zero is kept where the function is odd (sin, tanh, expm1).

Large arguments of sin/cos: beyond ``SIN_COS_LIMIT`` the reduction above loses accuracy.
``sin_f32``/``cos_f32`` still return a value there, and ``trig_out_of_range(x)`` says
(1/0) when an argument is such; a code generator adds these flags up and reruns the whole
kernel on its NumPy reference when any is set (so large arguments are exact, only slow).

float64 arguments are not handled here: code generators call libm for them (scalar).

The reference implementations (eager operations, the interpreter, a jitted program before
it tiers up) compute the same functions in C with the same operations in the same order
(primitives/_f32math.c), so a float32 result has the same bits on every path
(tests/test_float32_accuracy.py).  A change here is made there too.
"""
from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types
from numba.extending import intrinsic

__all__ = ["exp_f32", "expm1_f32", "log_f32", "tanh_f32", "logistic_f32", "sin_f32",
           "cos_f32", "trig_out_of_range", "maximum", "minimum", "SIN_COS_LIMIT",
           "FUNCTIONS", "MAX_ULP"]

# no fast-math flags: the only fused multiply-adds are the explicit ``_fma`` calls, so
# every function gives the same bits wherever it is inlined, and the same as the
# reference implementations' C kernels (primitives/_f32math.c), which repeat these
# operations one for one (keep the two alike)
_OPTS = dict(fastmath=False, error_model="numpy", cache=False, nogil=True,
             inline="always")   # Numba-level inlining: LLVM would not inline big bodies


@intrinsic
def _bits_to_f64(typingctx, x):
    """Reinterprets an int64's bits as a float64 (inside compiled code only)."""
    if x != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (llvm.fma.f64: one instruction on a CPU with FMA, which
    vectorises; elsewhere LLVM calls the C library's exact ``fma``, slower but the same
    bits, which the reference implementations' C kernels rely on)."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float64(types.float64, types.float64, types.float64), codegen


def _ieee_minmax(name):
    @intrinsic
    def minmax(typingctx, a, b):
        if not (a == b and a in (types.float32, types.float64)):
            return None

        def codegen(context, builder, signature, args):
            t = args[0].type
            fn = builder.module.declare_intrinsic(f"llvm.{name}", [t],
                                                  ir.FunctionType(t, [t, t]))
            return builder.call(fn, args)
        return a(a, b), codegen
    return minmax


maximum = _ieee_minmax("maximum")
maximum.__doc__ = """IEEE 754-2019 maximum of two floats of one type (inside compiled code only):
NaN if either is NaN, maximum(-0.0, +0.0) = +0.0; otherwise the larger.  The same values
as ``_cpu_ops._fmax`` (NumPy's ``maximum``), but as the ``llvm.maximum`` intrinsic, so a
loop accumulating it is vectorised by LLVM (no fast-math flag needed: it is associative
exactly); a max-reduction written with ``_fmax``'s selects stays scalar."""
minimum = _ieee_minmax("minimum")
minimum.__doc__ = """IEEE 754-2019 minimum (``llvm.minimum``): NaN if either is NaN,
minimum(-0.0, +0.0) = -0.0; the counterpart of ``maximum`` for min-reductions."""


@intrinsic
def _f64_to_bits(typingctx, x):
    """Reinterprets a float64's bits as an int64 (inside compiled code only)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


# ---- constants (float64 unless said otherwise) -----------------------------------------

getcontext().prec = 60
_PI_TEXT = "3.14159265358979323846264338327950288419716939937510582097494"


def _split(value: Decimal, parts: int, bits: int):
    """``value`` as a sum of ``parts`` doubles of at most ``bits`` significant bits each
    (so ``k * part`` is exact for ``abs(k) < 2**(53 - bits)``)."""
    out = []
    rest = value
    for i in range(parts):
        f = float(rest)
        if i < parts - 1 and f != 0.0:
            m, e = math.frexp(f)
            f = math.ldexp(math.floor(m * 2.0 ** bits), e - bits)
        out.append(f)
        rest = rest - Decimal(f)
    return out


_PIO2 = Decimal(_PI_TEXT) / 2
_PIO2_1, _PIO2_2, _PIO2_3 = _split(_PIO2, 3, 30)
_TWO_OVER_PI = float(2 / Decimal(_PI_TEXT))
_LN2 = Decimal(2).ln()
_LN2_HI, _LN2_LO = _split(_LN2, 2, 40)
_LOG2E = float(1 / _LN2)
_SQRT2 = math.sqrt(2.0)
_MAGIC = 6755399441055744.0      # 1.5 * 2**52: (x + M) - M rounds x to an integer
_INF = math.inf
_INF32 = np.float32(math.inf)    # float32 constants keep float32 compares at float32
_LIMIT32 = np.float32(65536.0)
_NAN = math.nan
_TINY32 = np.float32(1.0 / 8192)   # tanh(x) rounds to x below this

SIN_COS_LIMIT = 65536.0
"""Largest abs(x) for which ``sin_f32``/``cos_f32`` are accurate (k < 2**17 quadrants)."""
assert _LIMIT32 == SIN_COS_LIMIT

# Polynomial coefficients, fitted for this module (weighted least squares on 1500-3000
# Chebyshev nodes of the reduced interval against a 40-digit decimal reference, weights
# making the error relative to the function's value; near-minimax), each one or two terms
# shorter than the Taylor polynomial of the same accuracy.  The errors quoted are the
# maximum relative errors of the polynomial itself, measured on a dense grid.
# expm1(r) = r * (1 + r * (1/2 + r * E(r))), abs(r) <= ln2/2: 2**-37.3
_E0, _E1, _E2, _E3, _E4, _E5 = (0.16666666756461193, 0.04166666679009959,
                                0.008333288498590675, 0.0013888836061104774,
                                0.00019905214280627607, 2.486995953661536e-05)
# sin(r) = r + r**3 * S(r**2), abs(r) <= pi/4: 2**-37.4
_S0, _S1, _S2, _S3 = (-0.16666666640936326, 0.0083333293271565, -0.0001983931976850215,
                      2.718191239695436e-06)
# cos(r) = 1 - r**2 / 2 + r**4 * C(r**2), abs(r) <= pi/4: 2**-42.8
_C0, _C1, _C2, _C3 = (0.041666666621022794, -0.001388888362490601, 2.479949099802452e-05,
                      -2.720813619350586e-07)


@njit(**_OPTS)
def _fabs(x):
    # abs as a select (Numba's abs() on floats is a call that stops vectorisation)
    return -x if x < 0 else x


@njit(**_OPTS)
def _rint_bits(x):
    """(rint(x), bits) for abs(x) < 2**50: the low bits of the int64 ``bits`` are those
    of the integer rint(x) (the mantissa of x + 1.5 * 2**52 holds 2**51 + rint(x)), so
    ``bits & 3`` is rint(x) mod 4 and ``_pow2(bits)`` is 2**rint(x), without a float ->
    int conversion."""
    t = x + _MAGIC
    return t - _MAGIC, _f64_to_bits(t)


@njit(**_OPTS)
def _pow2(k):
    # 2**k as a float64 for -1022 <= k <= 1023; only k's low 12 bits are read (the shift
    # drops the rest), so ``k`` may be the bits of _rint_bits
    return _bits_to_f64((k + 1023) << 52)


@njit(**_OPTS)
def _exp_kp(x):
    """For a float64 ``x`` in [-750, 710]: (k, kb, p) with exp(x) = 2**k * (1 + p), k an
    integer (as a float64; kb its _rint_bits) and p = expm1(r) for the reduced argument
    abs(r) <= ln2/2."""
    kf, kb = _rint_bits(x * _LOG2E)
    # k * _LN2_HI is exact, so the first step is exact; the second rounds once
    r = _fma(-kf, _LN2_LO, _fma(-kf, _LN2_HI, x))
    # degree-8 polynomial (fitted, see _E*): relative error below 2**-37
    q = _fma(r, _E5, _E4)
    q = _fma(r, q, _E3)
    q = _fma(r, q, _E2)
    q = _fma(r, q, _E1)
    q = _fma(r, q, _E0)
    q = _fma(r, q, 0.5)
    q = _fma(r, q, 1.0)
    return kf, kb, r * q


@njit(**_OPTS)
def _clamp_exp_arg(x):
    # float32 results only: exp(-110) and expm1(-110) + 1 round to 0 in float32, exp(110)
    # and 1 / exp(110) are beyond float32's range (logistic needs the latter), so this
    # range loses nothing, and 2**k (abs(k) < 160) is one normal double.  A NaN becomes
    # -110 here; callers put it back
    y = x if x > -110.0 else -110.0
    return y if y < 110.0 else 110.0


@njit(**_OPTS)
def _exp64(x):
    """exp(x) as a float64 accurate far beyond float32, for the float32 range."""
    kf, kb, p = _exp_kp(_clamp_exp_arg(x))
    s = _pow2(kb)
    return _fma(s, p, s)


@njit(**_OPTS)
def _expm1_64(x):
    """expm1(x) as a float64 accurate far beyond float32, for the float32 range."""
    kf, kb, p = _exp_kp(_clamp_exp_arg(x))
    s = _pow2(kb)
    return _fma(s, p, s - 1.0)


@njit(**_OPTS)
def exp_f32(x):
    """exp of a float32, as float32 (max error 1 ulp)."""
    r = np.float32(_exp64(np.float64(x)))
    return x if x != x else r


@njit(**_OPTS)
def expm1_f32(x):
    """expm1 of a float32, as float32 (max error 1 ulp; keeps -0.0)."""
    r = np.float32(_expm1_64(np.float64(x)))
    return x if (x != x or x == 0) else r


@njit(**_OPTS)
def log_f32(x):
    """Natural log of a float32, as float32 (max error 1 ulp)."""
    xd = np.float64(x)
    bits = _f64_to_bits(xd)     # float32 subnormals are normal float64s
    e = ((bits >> 52) & 0x7FF) - 1023
    m = _bits_to_f64((bits & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000)   # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = (m - 1.0) / (m + 1.0)           # abs(s) <= 0.1716
    s2 = s * s
    lm = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (
        1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13)))))))
    ef = np.float64(e)
    r = np.float32(ef * _LN2_HI + (ef * _LN2_LO + lm))
    r = -_INF if x == 0 else r
    r = _INF if x == _INF else r
    return _NAN if (x != x or x < 0) else r


@njit(**_OPTS)
def tanh_f32(x):
    """tanh of a float32, as float32 (max error 1 ulp; keeps -0.0)."""
    a = _fabs(np.float64(x))
    a = a if a < 10.0 else 10.0            # tanh(10) rounds to 1.0f
    kf, kb, p = _exp_kp(2.0 * a)            # 2a <= 20: 2**k is one normal double
    s = _pow2(kb)
    em = _fma(s, p, s - 1.0)                # expm1(2a)
    t = em / (em + 2.0)
    t = -t if x < 0 else t
    r = np.float32(t)
    return x if (x != x or _fabs(x) < _TINY32) else r


@njit(**_OPTS)
def logistic_f32(x):
    """1 / (1 + exp(-x)) of a float32, as float32 (max error 1 ulp)."""
    e = _exp64(-np.float64(x))
    r = np.float32(1.0 / (1.0 + e))
    return x if x != x else r


@njit(**_OPTS)
def _reduce_pio2(x):
    """(k, r) with x = q * pi/2 + r, abs(r) <= pi/4, and the quadrant q's low bits in the
    int64 k (abs(x) <= SIN_COS_LIMIT; larger or non-finite x give q = 0, r = 0: the caller
    fixes those up)."""
    ok = _fabs(x) <= SIN_COS_LIMIT
    xs = x if ok else 0.0
    kf, kb = _rint_bits(xs * _TWO_OVER_PI)
    r = _fma(-kf, _PIO2_3, _fma(-kf, _PIO2_2, _fma(-kf, _PIO2_1, xs)))
    return kb, r


@njit(**_OPTS)
def _sin_poly(r):
    # r + r**3 * g(r**2), g fitted (_S*): relative error below 2**-37 for abs(r) <= pi/4
    z = r * r
    q = _fma(z, _S3, _S2)
    q = _fma(z, q, _S1)
    q = _fma(z, q, _S0)
    return _fma(r * z, q, r)


@njit(**_OPTS)
def _cos_poly(r):
    # 1 - r**2 / 2 + r**4 * h(r**2), h fitted (_C*): relative error below 2**-42
    z = r * r
    q = _fma(z, _C3, _C2)
    q = _fma(z, q, _C1)
    q = _fma(z, q, _C0)
    q = _fma(z, q, -0.5)
    return _fma(z, q, 1.0)


@njit(**_OPTS)
def _quadrant(k, s, c):
    # sin(k * pi/2 + r) from s = sin(r), c = cos(r): two selects (a 4-way chain of
    # conditionals is not if-converted, and the loop would not vectorise)
    v = c if (k & 1) == 1 else s
    return -v if (k & 2) == 2 else v


@njit(**_OPTS)
def sin_f32(x):
    """sin of a float32, as float32 (max error 1 ulp for abs(x) <= SIN_COS_LIMIT)."""
    xd = np.float64(x)
    k, r = _reduce_pio2(xd)
    s = _sin_poly(r)
    c = _cos_poly(r)
    v = _quadrant(k, s, c)
    out = np.float32(v)
    out = x - x if (x == _INF32 or x == -_INF32) else out      # NaN
    return x if (x != x or x == 0) else out


@njit(**_OPTS)
def cos_f32(x):
    """cos of a float32, as float32 (max error 1 ulp for abs(x) <= SIN_COS_LIMIT)."""
    xd = np.float64(x)
    k, r = _reduce_pio2(xd)
    s = _sin_poly(r)
    c = _cos_poly(r)
    v = _quadrant(k + 1, s, c)      # cos(x) = sin(x + pi/2)
    out = np.float32(v)
    out = x - x if (x == _INF32 or x == -_INF32) else out
    return x if x != x else out


@njit(**_OPTS)
def trig_out_of_range(x):
    """1 when ``x`` is finite and beyond SIN_COS_LIMIT (sin_f32/cos_f32 inexact), else 0."""
    a = _fabs(x)           # in x's own type: no widening to float64
    return np.int64(1) if (a > _LIMIT32 and a != _INF32) else np.int64(0)


FUNCTIONS = {"exp": exp_f32, "expm1": expm1_f32, "log": log_f32, "tanh": tanh_f32,
             "logistic": logistic_f32, "sin": sin_f32, "cos": cos_f32}
"""scalar-op name -> float32 function (what code generators call for float32 operands)."""

MAX_ULP = {"exp": 1, "expm1": 1, "log": 1, "tanh": 1, "logistic": 1, "sin": 1, "cos": 1}
"""The documented maximum error of each function, in float32 ulps (the tests check it)."""
