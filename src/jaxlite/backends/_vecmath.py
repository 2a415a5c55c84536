"""Vectorisable float32 transcendental functions for the native CPU backend.

Layer: backends.  This Numba has no vector maths library: a call to ``math.exp`` or
``np.sin`` inside a loop is one scalar libm call per element and stops LLVM's loop
vectoriser.  The functions here are straight-line arithmetic (no calls, no branches that
LLVM cannot turn into selects), so a loop calling them vectorises.

Method: the float32 argument is widened to float64, reduced exactly (Cody-Waite: the
constant is split so that every product ``k * part`` is exact), a Taylor polynomial of
just enough degree (truncation error below 2**-32 relative) is evaluated in float64 by
Horner's rule with fused multiply-adds (``_fma``: the ``llvm.fma`` intrinsic, one rounding
per step, whatever the caller's fast-math flags; one vector instruction on an FMA CPU),
the result is scaled by a power of two built from its bits and rounded once to float32.
Arguments of exp/expm1/logistic are first clamped to [-110, 110], beyond which every
float32 result is already 0, -1, 1 or inf, so one normal double ``2**k`` scales.  The
float64 arithmetic leaves an error far below half a float32 ulp, so the results are the
correctly rounded float32 values but for rare near-ties (a few per million arguments for
cos and expm1, none found for the others): measured against NumPy's float64 functions
rounded to float32 (tests/test_vecmath.py, 1.4 million arguments over the whole float32
range plus special values), the maximum errors are

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
AVX-512 machine): exp 7, tanh 9.4, sin/cos 10.7 ms (with fewer terms and FMAs; the first
version with degree-12/13 polynomials and separate multiply and add took 12.4, 16.7 and
13.5 ms).  A copy of the same array takes 2.5 ms: these loops are bound by arithmetic.

Special values follow IEEE/C: NaN in gives NaN; exp(-inf) = 0, exp(inf) = inf; log(0) =
-inf, log(x < 0) = NaN, log(inf) = inf; tanh(+-inf) = +-1; sin/cos(+-inf) = NaN; the sign
of zero is kept where the function is odd (sin, tanh, expm1).

Large arguments of sin/cos: beyond ``SIN_COS_LIMIT`` the reduction above loses accuracy.
``sin_f32``/``cos_f32`` still return a value there, and ``trig_out_of_range(x)`` says
(1/0) when an argument is such; a code generator adds these flags up and reruns the whole
kernel on its NumPy reference when any is set (so large arguments are exact, only slow).

float64 arguments are not handled here: code generators call libm for them (scalar).
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
           "cos_f32", "trig_out_of_range", "SIN_COS_LIMIT", "FUNCTIONS", "MAX_ULP"]

# the fast-math flags every function here is compiled with: FMA contraction only (no
# reassociation, no assumption about NaN/inf)
_OPTS = dict(fastmath={"contract"}, error_model="numpy", cache=False, nogil=True,
             inline="always")   # Numba-level inlining: LLVM would not inline big bodies


@intrinsic
def _bits_to_f64(typingctx, x):
    """Reinterprets an int64's bits as a float64 (inside compiled code only)."""
    if x != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


def _host_has_fma() -> bool:
    try:
        import llvmlite.binding as ll
        return bool(ll.get_host_cpu_features().get("fma", False))
    except Exception:      # pragma: no cover - llvmlite without host queries
        return False


if _host_has_fma():
    @intrinsic
    def _fma(typingctx, a, b, c):
        """a * b + c rounded once (llvm.fma.f64: one instruction, vectorises)."""
        if not (a == b == c == types.float64):
            return None

        def codegen(context, builder, signature, args):
            return builder.fma(*args)
        return types.float64(types.float64, types.float64, types.float64), codegen
else:      # pragma: no cover - without the instruction llvm.fma is a scalar libm call
    @njit(fastmath=False, error_model="numpy", cache=False, nogil=True, inline="always")
    def _fma(a, b, c):
        """a * b + c (two roundings: no FMA instruction on this CPU)."""
        return a * b + c


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

# Taylor coefficients 1/n! (exact enough as doubles)
_F = [1.0 / math.factorial(n) for n in range(14)]
_F2, _F3, _F4, _F5, _F6, _F7, _F8, _F9, _F10, _F11, _F12, _F13 = _F[2:14]


@njit(**_OPTS)
def _fabs(x):
    # abs as a select (Numba's abs() on floats is a call that stops vectorisation)
    return -x if x < 0 else x


@njit(**_OPTS)
def _rint(x):
    # nearest integer (ties to even) for abs(x) < 2**51; no call, vectorises
    return (x + _MAGIC) - _MAGIC


@njit(**_OPTS)
def _pow2(k):
    # 2**k as a float64 for -1022 <= k <= 1023
    return _bits_to_f64((k + 1023) << 52)


@njit(**_OPTS)
def _exp_kp(x):
    """For a float64 ``x`` in [-750, 710]: (k, p) with exp(x) = 2**k * (1 + p), k an
    integer (as a float64) and p = expm1(r) for the reduced argument abs(r) <= ln2/2."""
    kf = _rint(x * _LOG2E)
    # k * _LN2_HI is exact, so the first step is exact; the second rounds once
    r = _fma(-kf, _LN2_LO, _fma(-kf, _LN2_HI, x))
    # Taylor polynomial through r**9: truncation below 2**-35 relative
    q = _fma(r, _F9, _F8)
    q = _fma(r, q, _F7)
    q = _fma(r, q, _F6)
    q = _fma(r, q, _F5)
    q = _fma(r, q, _F4)
    q = _fma(r, q, _F3)
    q = _fma(r, q, _F2)
    q = _fma(r, q, 1.0)
    return kf, r * q


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
    kf, p = _exp_kp(_clamp_exp_arg(x))
    s = _pow2(np.int64(kf))
    return _fma(s, p, s)


@njit(**_OPTS)
def _expm1_64(x):
    """expm1(x) as a float64 accurate far beyond float32, for the float32 range."""
    kf, p = _exp_kp(_clamp_exp_arg(x))
    s = _pow2(np.int64(kf))
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
    kf, p = _exp_kp(2.0 * a)                # 2a <= 20: 2**k is one normal double
    s = _pow2(np.int64(kf))
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
    """(quadrant k, r) with x = k * pi/2 + r, abs(r) <= pi/4 (abs(x) <= SIN_COS_LIMIT;
    larger or non-finite x give k = 0, r = 0: the caller fixes those up)."""
    ok = _fabs(x) <= SIN_COS_LIMIT
    xs = x if ok else 0.0
    kf = _rint(xs * _TWO_OVER_PI)
    r = _fma(-kf, _PIO2_3, _fma(-kf, _PIO2_2, _fma(-kf, _PIO2_1, xs)))
    return np.int64(kf), r


@njit(**_OPTS)
def _sin_poly(r):
    z = r * r
    q = _fma(z, -_F11, _F9)
    q = _fma(z, q, -_F7)
    q = _fma(z, q, _F5)
    q = _fma(z, q, -_F3)
    return _fma(r * z, q, r)


@njit(**_OPTS)
def _cos_poly(r):
    z = r * r
    q = _fma(z, _F12, -_F10)
    q = _fma(z, q, _F8)
    q = _fma(z, q, -_F6)
    q = _fma(z, q, _F4)
    q = _fma(z, q, -_F2)
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
