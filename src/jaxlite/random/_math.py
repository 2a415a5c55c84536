"""Floating-point helpers the samplers need to round exactly as JAX on CPU does.

Layer: random (compositions of ``jaxlite.lax`` ops).

* ``fma``: XLA's CPU compiler contracts ``a * b + c`` (float32/float64) into one fused
  multiply-add, rounded once.  Sampling ``uniform(minval, maxval)`` does exactly that, so to
  give JAX's bits we emulate a correctly rounded fma with error-free transformations:
  Dekker's exact product, Knuth's two-sum, and rounding to odd (Boldo and Melquiond,
  "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
  IEEE Trans. Computers 57(4), 2008).
* ``log``/``log1p``: XLA's float32 approximations on CPU (Cephes' polynomials in the
  arrangement XLA evaluates them), used by gumbel and by ``erf_inv``.
* ``erf_inv``: the approximations of Giles ("Approximating the erfinv function", GPU
  Computing Gems, 2010), the ones XLA uses (single precision for float32 and, computed in
  float32, float16/bfloat16; double precision for float64), Horner steps fused as XLA
  fuses them.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _cpu_has_fp16_fma() -> bool:
    """Whether this CPU has half-precision FMA instructions (x86 AVX512-FP16).  XLA then
    contracts float16 ``a * b + c`` into one fma too, rounded once; elsewhere it computes
    float16 operations one at a time, rounding after each."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx512_fp16" in line.split()
    except OSError:
        pass
    return False


_NATIVE_F16_FMA = _cpu_has_fp16_fma()

# Veltkamp splitting constants 2**ceil(p/2) + 1 for p = 24 and 53 significand bits.
_SPLITTER = {_F32: 4097.0, _F64: 134217729.0}
_UINT_OF = {_F32: np.dtype(np.uint32), _F64: np.dtype(np.uint64)}


def _two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth)."""
    s = lax.add(a, b)
    b_virtual = lax.sub(s, a)
    a_virtual = lax.sub(s, b_virtual)
    return s, lax.add(lax.sub(a, a_virtual), lax.sub(b, b_virtual))


def _split(a, dtype):
    """Veltkamp's split of ``a`` into a high and a low half-width part."""
    t = lax.mul(a, dtype.type(_SPLITTER[dtype]))
    hi = lax.sub(t, lax.sub(t, a))
    return hi, lax.sub(a, hi)


def _two_prod(a, b, dtype):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e == a * b`` exactly (Dekker)."""
    p = lax.mul(a, b)
    ah, al = _split(a, dtype)
    bh, bl = _split(b, dtype)
    e = lax.add(lax.add(lax.sub(lax.mul(ah, bh), p), lax.mul(ah, bl)), lax.mul(al, bh))
    return p, lax.add(e, lax.mul(al, bl))


def _add_round_to_odd(a, b, dtype):
    """``a + b`` rounded to odd: exact sums as they are, inexact ones to the neighbour
    whose last significand bit is 1."""
    s, e = _two_sum(a, b)
    udt = _UINT_OF[dtype]
    even = lax.eq(lax.bitwise_and(lax.bitcast_convert_type(s, udt), udt.type(1)),
                  udt.type(0))
    away = lax.select(lax.gt(e, dtype.type(0)),
                      lax.broadcast_in_dim(dtype.type(np.inf), s.shape, ()),
                      lax.broadcast_in_dim(dtype.type(-np.inf), s.shape, ()))
    fix = lax.bitwise_and(lax.ne(e, dtype.type(0)), even)
    return lax.select(fix, lax.nextafter(s, away), s)


def fma(a, b, c):
    """``a * b + c`` rounded once, for float32/float64 arrays of one shape (rank-0 operands
    broadcast), and for float16 on a CPU with half-precision FMA; other float dtypes get
    the plain two roundings, as XLA computes them.

    Non-finite results (overflow, inf/NaN operands) are those of ``a * b + c``.
    """
    a, b, c = jnp.broadcast_arrays(a, b, c)
    dtype = np.dtype(a.dtype)
    plain = lax.add(lax.mul(a, b), c)
    if dtype == _F16 and _NATIVE_F16_FMA:
        # a float16 product is exact in float32; the float32 sum rounded to odd then
        # rounds to float16 exactly as one fma would
        a32, b32, c32 = (lax.convert_element_type(x, _F32) for x in (a, b, c))
        fused = lax.convert_element_type(
            _add_round_to_odd(lax.mul(a32, b32), c32, _F32), _F16)
        return lax.select(lax.is_finite(fused), fused, plain)
    if dtype not in _SPLITTER:
        return plain
    uh, ul = _two_prod(a, b, dtype)
    th, tl = _two_sum(c, uh)
    fused = lax.add(th, _add_round_to_odd(tl, ul, dtype))
    return lax.select(lax.is_finite(fused), fused, plain)


# ---- log and log1p as XLA computes them on CPU (float32) ------------------------------
# The logarithm is Cephes' single-precision logf in the arrangement Eigen uses (``plog``):
# split x = m * 2**e with m in [sqrt(1/2), sqrt(2)), a degree-8 polynomial in m - 1
# evaluated as three fused Horner pieces, and ln 2 added as the two constants below.
_LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1)
_LN2_LO, _LN2_HI = -2.12194440e-4, 0.693359375
# log1p: Cephes' rational approximation (numerator over denominator, highest degree
# first) for |x| < sqrt(2) - 1, log(1 + x) elsewhere.
_LOG1P_NUM = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1,
              6.5787325942061044846969e0, 2.9911919328553073277375e1,
              6.0949667980987787057556e1, 5.7112963590585538103336e1,
              2.0039553499201281259648e1)
_LOG1P_DEN = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1,
              2.2176239823732856465394e2, 3.0909872225312059774938e2,
              2.1642788614495947685003e2, 6.0118660497603843919306e1)


def _log_f32(x):
    f, u = np.float32, np.dtype(np.uint32)
    shape = tuple(x.shape)
    bits = lax.bitcast_convert_type(x, u)
    # frexp for positive normal numbers: mantissa in [0.5, 1), exponent as a float
    m = lax.bitcast_convert_type(
        lax.bitwise_or(lax.bitwise_and(bits, u.type(0x807FFFFF)), u.type(0x3F000000)),
        np.float32)
    e = lax.convert_element_type(
        lax.sub(lax.convert_element_type(lax.shift_right_logical(bits, u.type(23)), np.int32),
                np.int32(126)), np.float32)
    below = lax.lt(m, f(0.707106781186547524))
    zero = _full(0.0, shape)
    t = lax.sub(m, f(1.0))
    e = lax.sub(e, lax.select(below, _full(1.0, shape), zero))
    t = lax.add(t, lax.select(below, m, zero))
    t2 = lax.mul(t, t)
    t3 = lax.mul(t2, t)
    c = [f(v) for v in _LOG_P]
    y = fma(_full(c[0], shape), t, _full(c[1], shape))
    y1 = fma(_full(c[3], shape), t, _full(c[4], shape))
    y2 = fma(_full(c[6], shape), t, _full(c[7], shape))
    y = fma(y, t, _full(c[2], shape))
    y1 = fma(y1, t, _full(c[5], shape))
    y2 = fma(y2, t, _full(c[8], shape))
    y = fma(y, t3, y1)
    y = fma(y, t3, y2)
    y = fma(y, t3, lax.mul(e, f(_LN2_LO)))
    r = lax.add(lax.sub(t, lax.mul(t2, f(0.5))), y)
    r = lax.add(r, lax.mul(e, f(_LN2_HI)))
    # negatives, inf and NaN take the plain logarithm's special values; zero and subnormals
    # (which XLA's CPU code treats as zero) give -inf
    tiny = f(np.finfo(np.float32).tiny)
    special = lax.select(lax.lt(lax.abs(x), tiny), _full(-np.inf, shape), lax.log(x))
    normal = lax.bitwise_and(lax.ge(x, tiny), lax.lt(x, f(np.inf)))
    return lax.select(normal, r, special)


def _full(value, shape):
    return lax.broadcast_in_dim(np.float32(value), shape, ())


def _horner(x, coefs):
    shape = tuple(x.shape)
    p = _full(coefs[0], shape)
    for c in coefs[1:]:
        p = fma(p, x, _full(c, shape))
    return p


def _log1p_f32(x):
    f = np.float32
    x2 = lax.mul(x, x)
    ratio = lax.div(_horner(x, _LOG1P_NUM), _horner(x, _LOG1P_DEN))
    small = lax.add(x, lax.add(lax.mul(f(-0.5), x2), lax.mul(lax.mul(x, x2), ratio)))
    # subnormal inputs count as (signed) zero, as in XLA's CPU code
    small = lax.select(lax.lt(lax.abs(x), f(np.finfo(np.float32).tiny)), lax.mul(x, f(0.0)),
                       small)
    is_small = lax.lt(lax.abs(x), f(0.41421356237309504880))
    return lax.select(is_small, small, _log_f32(lax.add(x, f(1.0))))


def _in_f32(fn, x):
    dtype = np.dtype(x.dtype)
    if dtype == _F32:
        return fn(x)
    return lax.convert_element_type(fn(lax.convert_element_type(x, _F32)), dtype)


def log(x):
    """Natural logarithm rounded as XLA rounds it on CPU: float32 (and float16/bfloat16,
    computed in float32) bit for bit; float64 is ``lax.log``."""
    return lax.log(x) if np.dtype(x.dtype) == _F64 else _in_f32(_log_f32, x)


def _log1p_f64(x):
    """XLA's float64 log1p on CPU: the same Cephes rational function as float32 (its
    coefficients are the double-precision ones), Horner steps fused, evaluated in float64;
    within 1 ulp of XLA's results (its ``log`` above sqrt(2) - 1 is not reproduced), where
    NumPy's correctly rounded log1p is up to ~120 ulps away near the threshold."""
    f = np.float64
    shape = tuple(x.shape)

    def horner(coefs):
        p = lax.broadcast_in_dim(f(coefs[0]), shape, ())
        for c in coefs[1:]:
            p = fma(p, x, lax.broadcast_in_dim(f(c), shape, ()))
        return p

    x2 = lax.mul(x, x)
    ratio = lax.div(horner(_LOG1P_NUM), horner(_LOG1P_DEN))
    small = lax.add(x, lax.add(lax.mul(f(-0.5), x2), lax.mul(lax.mul(x, x2), ratio)))
    is_small = lax.lt(lax.abs(x), f(0.41421356237309504880))
    return lax.select(is_small, small, lax.log1p(x))


def log1p(x):
    """``log(1 + x)`` rounded as XLA rounds it on CPU (float32 bit for bit; float64 see
    ``_log1p_f64``)."""
    return _log1p_f64(x) if np.dtype(x.dtype) == _F64 else _in_f32(_log1p_f32, x)


# Giles (2010), single precision: central region (w < 5) and tail (w >= 5).
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv_f32(x):
    f = np.dtype(x.dtype).type
    w = lax.neg(_log1p_f32(lax.neg(lax.mul(x, x))) if np.dtype(x.dtype) == _F32
                else lax.log1p(lax.neg(lax.mul(x, x))))
    central = lax.lt(w, f(5.0))
    w = lax.select(central, lax.sub(w, f(2.5)), lax.sub(lax.sqrt(w), f(3.0)))

    def coef(i):
        return lax.select(central, lax.broadcast_in_dim(f(_ERFINV_CENTRAL[i]), x.shape, ()),
                          lax.broadcast_in_dim(f(_ERFINV_TAIL[i]), x.shape, ()))

    p = coef(0)
    for i in range(1, len(_ERFINV_CENTRAL)):
        p = fma(p, w, coef(i))
    at_one = lax.eq(lax.abs(x), f(1.0))
    return lax.select(at_one, lax.mul(x, f(np.inf)), lax.mul(p, x))


# Giles (2010), double precision: w = -log(1 - x**2) below 6.25, below 16, and above
# (the last two in sqrt(w)); Horner coefficients, highest degree first.
_ERFINV64_LT_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_LT_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_TAIL = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)


def _erf_inv_f64(x):
    """float64: Giles' double-precision polynomials in XLA's arrangement (one Horner chain
    whose coefficients are selected per element; the shorter chains stop early), with
    XLA's log1p and fused steps.  Within 2 ulps of XLA's results (its float64 ``log`` is
    not reproduced), most of them equal."""
    f = np.float64
    shape = tuple(x.shape)

    def full(v):
        return lax.broadcast_in_dim(f(v), shape, ())

    w = lax.neg(_log1p_f64(lax.neg(lax.mul(x, x))))
    lt_6 = lax.lt(w, f(6.25))
    lt_16 = lax.lt(w, f(16.0))

    def coef(i):
        c = full(_ERFINV64_LT_6_25[i])
        if i < len(_ERFINV64_LT_16):
            c = lax.select(lt_6, c, full(_ERFINV64_LT_16[i]))
        if i < len(_ERFINV64_TAIL):
            c = lax.select(lt_16, c, full(_ERFINV64_TAIL[i]))
        return c

    root = lax.sqrt(w)
    w = lax.select(lt_6, lax.sub(w, f(3.125)),
                   lax.select(lt_16, lax.sub(root, f(3.25)), lax.sub(root, f(5.0))))
    p = coef(0)
    for i in range(1, len(_ERFINV64_LT_6_25)):
        step = fma(p, w, coef(i))
        if i >= len(_ERFINV64_LT_16):
            p = lax.select(lt_6, step, p)
        elif i >= len(_ERFINV64_TAIL):
            p = lax.select(lt_16, step, p)
        else:
            p = step
    at_one = lax.eq(lax.abs(x), f(1.0))
    return lax.select(at_one, lax.mul(x, f(np.inf)), lax.mul(p, x))


def erf_inv(x):
    """Inverse error function of a float array in [-1, 1] (``jax.lax.erf_inv``) as XLA
    computes it on CPU: Giles' single-precision polynomial for float32 and narrower (bit
    for bit), his double-precision ones for float64 (within 2 ulps)."""
    dtype = np.dtype(x.dtype)
    if dtype == _F64:
        return _erf_inv_f64(x)
    if dtype == _F32:
        return _erf_inv_f32(x)
    return lax.convert_element_type(_erf_inv_f32(lax.convert_element_type(x, _F32)), dtype)
