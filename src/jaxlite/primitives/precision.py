"""``reduce_precision``: rounding floats to a narrower format and back, as one primitive.

Layer: primitives.  The implementation works on the operand's bit pattern (NumPy): the
mantissa is rounded to ``mantissa_bits`` (to nearest, ties to even), then exponents beyond
the narrow format's range become signed infinities and those below its smallest normal
signed zeros; NaN operands are returned as they are.  float16/float32/float64 are rounded
in their own bits, bfloat16 through float32 (exact: bfloat16 is float32's top half).  Its
derivative, as in JAX, rounds the tangent the same way (so it is declared linear: its
transpose rounds the cotangent).  Opaque to the compiler (no scalar op).
"""
from __future__ import annotations

import numpy as np

from ..core import ad, batching
from ..core import sharding_rules as _sr
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import check_dtypes

_FLOAT_BITS = {np.dtype(np.float16): (5, 10), np.dtype(np.float32): (8, 23),
               np.dtype(np.float64): (11, 52)}


def _aval(x, *, exponent_bits, mantissa_bits):
    check_dtypes("reduce_precision", (x,), "f")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def round_bits(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """The rounding on a NumPy float array (any float dtype), same dtype out."""
    x = np.asarray(x)
    dt = x.dtype
    if dt not in _FLOAT_BITS:   # bfloat16 and narrower: float32 holds them exactly
        return round_bits(x.astype(np.float32), exponent_bits, mantissa_bits).astype(dt)
    src_e, src_m = _FLOAT_BITS[dt]
    ut = np.dtype(f"uint{dt.itemsize * 8}")
    nbits = ut.itemsize * 8
    u = ut.type
    bits = x.view(ut).copy()
    if mantissa_bits < src_m:
        shift = src_m - mantissa_bits
        last_bit = (bits >> u(shift)) & u(1)
        bias = u((1 << (shift - 1)) - 1)
        keep = u(((1 << nbits) - 1) ^ ((1 << shift) - 1))
        bits = (bits + last_bit + bias) & keep
    if exponent_bits < src_e:
        exp_mask = u(((1 << src_e) - 1) << src_m)
        bias = (1 << (src_e - 1)) - 1
        narrow_bias = (1 << (exponent_bits - 1)) - 1
        e = bits & exp_mask
        sign = bits & u(1 << (nbits - 1))
        bits = np.where(e > u((bias + narrow_bias) << src_m), sign | exp_mask,
                        np.where(e <= u((bias - narrow_bias) << src_m), sign, bits))
    out = np.asarray(bits, ut).view(dt)
    return np.where(np.isnan(x), x, out).astype(dt)


def _impl(x, *, exponent_bits, mantissa_bits):
    return round_bits(x, exponent_bits, mantissa_bits)


reduce_precision_p = Primitive("reduce_precision", abstract_eval=_aval, impl=_impl,
                               flops=lambda x, **p: x.size, sharding=_sr.unary_same)
ad.deflinear(reduce_precision_p,
             lambda ct, x, **p: [reduce_precision_p.bind(ct, **p)])
batching.elementwise_batcher(reduce_precision_p)


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------

def _lower(ctx, x, *, exponent_bits, mantissa_bits):
    return ctx.op("stablehlo.reduce_precision", [x], x.aval,
                  {"exponent_bits": ctx.i32(exponent_bits),
                   "mantissa_bits": ctx.i32(mantissa_bits)})


reduce_precision_p.lowering = _lower
