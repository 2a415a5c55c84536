"""Floating-point helpers the samplers need to round exactly as JAX on CPU does.

Layer: random (compositions of ``jaxlite.lax`` ops).

* ``fma``: XLA's CPU compiler contracts ``a * b + c`` (float32/float64) into one fused
  multiply-add, rounded once.  Sampling ``uniform(minval, maxval)`` does exactly that, so to
  give JAX's bits we emulate a correctly rounded fma with error-free transformations:
  Dekker's exact product, Knuth's two-sum, and rounding to odd (Boldo and Melquiond,
  "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
  IEEE Trans. Computers 57(4), 2008).
* ``erf_inv``: the single-precision approximation of Giles ("Approximating the erfinv
  function", GPU Computing Gems, 2010), the one XLA uses for float32 (and, computed in
  float32, for float16/bfloat16), its Horner steps fused as XLA fuses them.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)

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
    broadcast); other float dtypes get the plain two roundings (XLA fuses only 32/64-bit).

    Non-finite results (overflow, inf/NaN operands) are those of ``a * b + c``.
    """
    a, b, c = jnp.broadcast_arrays(a, b, c)
    dtype = np.dtype(a.dtype)
    plain = lax.add(lax.mul(a, b), c)
    if dtype not in _SPLITTER:
        return plain
    uh, ul = _two_prod(a, b, dtype)
    th, tl = _two_sum(c, uh)
    fused = lax.add(th, _add_round_to_odd(tl, ul, dtype))
    return lax.select(lax.is_finite(fused), fused, plain)


# Giles (2010), single precision: central region (w < 5) and tail (w >= 5).
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv_f32(x):
    f = np.dtype(x.dtype).type
    w = lax.neg(lax.log1p(lax.neg(lax.mul(x, x))))
    central = lax.lt(w, f(5.0))
    w = lax.select(central, lax.sub(w, f(2.5)), lax.sub(lax.sqrt(w), f(3.0)))

    def coef(i):
        return lax.select(central, lax.broadcast_in_dim(f(_ERFINV_CENTRAL[i]), x.shape, ()),
                          lax.broadcast_in_dim(f(_ERFINV_TAIL[i]), x.shape, ()))

    p = coef(0)
    for i in range(1, len(_ERFINV_CENTRAL)):
        p = fma(p, w, coef(i))
    at_one = lax.eq(lax.abs(x), f(1.0))
    return lax.select(at_one, lax.mul(x, f(dtypes.finfo(f).max)), lax.mul(p, x))


def _erf_inv_f64(x):
    """float64: the float32 approximation refined by two Newton steps on ``erf(y) = x``
    (tails through ``erfc`` to avoid cancellation); accurate to a few ulps, not bit-equal
    to XLA's double-precision polynomial."""
    f = np.float64
    y = _erf_inv_f32(x)
    two_over_sqrt_pi = f(2.0 / np.sqrt(np.pi))
    ax = lax.abs(x)
    sign = lax.sign(x)
    for _ in range(2):
        ay = lax.abs(y)
        # erf(|y|) - |x| == (1 - |x|) - erfc(|y|): exact for large |y| where erf rounds to 1
        resid = lax.select(lax.gt(ay, f(0.5)),
                           lax.sub(lax.sub(f(1.0), ax), lax.erfc(ay)),
                           lax.sub(lax.erf(ay), ax))
        deriv = lax.mul(two_over_sqrt_pi, lax.exp(lax.neg(lax.mul(ay, ay))))
        step = lax.div(resid, deriv)
        y = lax.select(lax.is_finite(step), lax.mul(sign, lax.sub(ay, step)), y)
    at_one = lax.eq(ax, f(1.0))
    return lax.select(at_one, lax.mul(x, f(np.inf)), y)


def erf_inv(x):
    """Inverse error function of a float array in (-1, 1) (``jax.lax.erf_inv``): float32
    and narrower as XLA computes it (Giles' polynomial in float32); float64 by Newton
    refinement (within a few ulps of XLA)."""
    dtype = np.dtype(x.dtype)
    if dtype == _F64:
        return _erf_inv_f64(x)
    if dtype == _F32:
        return _erf_inv_f32(x)
    return lax.convert_element_type(_erf_inv_f32(lax.convert_element_type(x, _F32)), dtype)


def is_float_dtype(dt) -> bool:
    return dtypes.issubdtype(dt, np.floating)
