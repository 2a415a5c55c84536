"""Elementwise primitives: one declaration each, from a table.

Operands share one dtype (binary ops) and one shape, except that rank-0 operands broadcast
and, as in JAX, operands of equal rank broadcast their size-1 dimensions (``f32[2,1]`` with
``f32[2,3]``; not ``select_n`` and ``clamp``); the ``jaxlite.numpy`` layer promotes dtypes
and brings operands to one rank before binding.  Each row gives the name,
the NumPy implementation, the dtype classes accepted, and the name in the compiler's
scalar-op table.  The result is weakly typed only when every operand is.
"""
from __future__ import annotations

import functools

import math

import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray
from ..core import sharding_rules as _sr
from ..core.primitive import InPlace, Primitive
from . import _complex
from . import _f32
from ._rules import (broadcast_shapes_elementwise, check_dtypes, check_same_dtypes,
                     same_shapes_elementwise, upcast_half)

FLOAT, COMPLEX, INT, UINT, BOOL = "f", "c", "i", "u", "b"
_BF16 = np.dtype(dtypes._BF16)
NUM = "fciu"
INEXACT = "fc"
INTEGRAL = "iu"
ANY = "fciub"


def _half(fn):
    """Runs ``fn`` in float32 for float16/bfloat16/narrow float operands, in a byte for
    narrow integers (``dtypes.compute_dtype``; others pass straight through).

    NumPy's floating-point warnings need no ``errstate`` here: callers run implementations
    under one (see ``primitives/__init__.py``).
    """
    def impl(*xs, **params):
        for x in xs:
            if x.dtype in _F16S:
                out = fn(*upcast_half(*xs), **params)
                if x.dtype in _VIA_F16 and out.dtype == np.float32:
                    out = out.astype(np.float16)    # XLA's double rounding, see dtypes
                    if x.dtype in _NO_NAN:
                        out = dtypes.xla_nan_sign(out)
                return out
        return fn(*xs, **params)
    impl.__name__ = getattr(fn, "__name__", "impl")
    impl.__wrapped__ = fn    # eager fast paths call it directly for other dtypes
    return impl


def _specialize_half(fn):
    """The ``specialize`` rule of a ``_half`` implementation: ``fn`` itself (no per-call
    dtype check) when no operand is float16/bfloat16; for a ``_complex_aware`` ``fn`` on
    real operands, its NumPy function."""
    real = getattr(fn, "_real_fn", None)

    def rule(avals, **params):
        if any(a.dtype in _F16S for a in avals):
            return None
        f = fn
        if real is not None and all(a.dtype.kind != "c" for a in avals):
            f = real
        return functools.partial(f, **params) if params else f
    return rule


_F16S = dtypes.UPCAST      # float16, bfloat16 and the narrow types (see upcast_half)
_VIA_F16 = dtypes.VIA_FLOAT16
_NO_NAN = dtypes.NO_NAN


def _elementwise_aval(name, allowed, out_dtype=None, same_dtypes=True):
    def rule(*avals, **params):
        check_dtypes(name, avals, allowed)
        if same_dtypes and len(avals) > 1:
            check_same_dtypes(name, avals)
        shape = broadcast_shapes_elementwise(name, avals)
        dt = avals[0].dtype if out_dtype is None else out_dtype(avals[0].dtype)
        return ShapedArray(shape, dt, all(a.weak_type for a in avals))
    return rule


def _elementwise_flops(*avals, **params):
    return max((a.size for a in avals), default=0)


def elementwise(name, impl, allowed, *, out_dtype=None, scalar_op=None, half=True,
                same_dtypes=True, **facts):
    """Declares an elementwise primitive ``name`` (``facts``: see core/primitive.py)."""
    raw = impl
    if half:
        impl = _half(impl)
    p = Primitive(name, abstract_eval=_elementwise_aval(name, allowed, out_dtype,
                                                        same_dtypes),
                  impl=impl, scalar_op=scalar_op or name, flops=_elementwise_flops,
                  kind="elementwise", sharding=_sr.elementwise, **facts)
    if half:
        p.specialize = _specialize_half(raw)
    return p


def _bool_out(dt):
    return np.dtype(np.bool_)


def _real_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def _complex_dtype(dt):
    if dt in _F16S:
        # there is no complex type of half width: JAX takes float32/float64 parts only
        raise TypeError(f"complex does not accept dtype {np.dtype(dt).name}: the real and "
                        f"imaginary parts must be float32 or float64")
    return np.dtype(np.complex64) if dt != np.float64 else np.dtype(np.complex128)


# ---- implementations that NumPy lacks or spells differently -----------------------------

def _complex_aware(real_fn, complex_fn):
    """NumPy's ``real_fn`` for real operands, ``_complex``'s XLA-valued kernel for complex
    ones (NumPy's complex functions follow C99 at infinite/NaN parts; JAX follows XLA)."""
    def impl(x):
        return complex_fn(x) if x.dtype.kind == "c" else real_fn(x)
    impl.__name__ = getattr(complex_fn, "__name__", "impl")
    impl._real_fn = real_fn    # what a compiled program calls on real operands
    return impl


def _div(x, y):
    if x.dtype.kind == "c":
        return _complex.div(x, y)
    if x.dtype.kind in "iu":
        # XLA's integer division: truncates toward zero; x / 0 is -1 (all bits set) and
        # INT_MIN / -1 is INT_MIN (no trap, no NumPy warning).
        zero = y == 0
        safe = np.where(zero, 1, y).astype(x.dtype)
        if x.dtype.kind == "i":
            safe = np.where((safe == -1) & (x == np.iinfo(x.dtype).min), 1, safe)
            safe = safe.astype(x.dtype)
        # x - fmod(x, y) is an exact multiple of y, so floor division is exact (truncation)
        q = np.floor_divide(x - np.fmod(x, safe), safe)
        return np.where(zero, np.array(-1).astype(x.dtype), q).astype(x.dtype)
    return np.true_divide(x, y)


def _rem(x, y):
    if x.dtype.kind in "iu":
        # XLA: the remainder takes the dividend's sign; x % 0 is x, INT_MIN % -1 is 0.
        safe = np.where(y == 0, 1, y).astype(x.dtype)
        if x.dtype.kind == "i":
            safe = np.where(safe == -1, 1, safe).astype(x.dtype)
        return np.where(y == 0, x, np.fmod(x, safe)).astype(x.dtype)
    return np.fmod(x, y)


def _round(x, rounding_method=0):
    if rounding_method == 1:      # to nearest even
        return np.round(x)
    # half away from zero; trunc keeps -0.0 and avoids the x + 0.5 rounding error
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _sign(x):
    if x.dtype.kind == "c":
        return _complex.sign(x)
    if x.dtype.kind == "f":
        return np.where(x == 0, x, np.sign(x))   # keeps -0.0; NaN stays NaN
    return np.sign(x)


def _lex_greater(x, y):
    return (x.real > y.real) | ((x.real == y.real) & (x.imag > y.imag))


def _max(x, y):
    if x.dtype.kind == "c":
        # XLA orders complex numbers lexicographically; a NaN comparison picks y
        return np.where(_lex_greater(x, y), x, y)
    out = np.maximum(x, y)
    if x.dtype.kind == "f":
        # IEEE max(-0.0, 0.0) is 0.0; the sum of two zeros has exactly that sign
        out = np.where((x == 0) & (y == 0), x + y, out)
    return out


def _min(x, y):
    if x.dtype.kind == "c":
        return np.where(_lex_greater(y, x), x, y)
    out = np.minimum(x, y)
    if x.dtype.kind == "f":
        out = np.where((x == 0) & (y == 0), -((-x) + (-y)), out)
    return out


def _complex_of(re, im, dt):
    """``re + i*im`` of complex dtype ``dt`` (assigned part by part: ``re + 1j * im``
    would mix an infinite or NaN part into the other)."""
    out = np.empty(np.shape(re), dt)
    out.real, out.imag = re, im
    return out


def _exp(x):
    return _complex.exp(x) if x.dtype.kind == "c" else _f32.exp(x)


def _expm1(x):
    if x.dtype.kind != "c":
        return _f32.expm1(x)
    # e**z - 1 with the real part kept accurate near 0: expm1(a) cos b + (cos b - 1), the
    # second term as -2 sin(b/2)**2 (+0 at b = 0, so expm1(-0+0j) is +0 as in XLA); the
    # imaginary part e**a sin b, +0 for a zero b (NumPy gives NaN parts at infinities)
    a, b = x.real, x.imag
    s = np.sin(b * b.dtype.type(0.5))
    cm1 = -2 * s * s + 0
    return _complex_of(np.expm1(a) * np.cos(b) + cm1,
                       np.where(b == 0, 0, np.exp(a) * np.sin(b)), x.dtype)


def _log(x):
    if x.dtype.kind != "c":
        return _f32.log(x)
    # XLA: a NaN part makes both parts NaN (C99 and NumPy give log(inf + nan*i) = inf + nan*i)
    nan = np.isnan(x.real) | np.isnan(x.imag)
    out = np.log(x)
    return np.where(nan, np.array(complex(np.nan, np.nan), x.dtype), out)


def _two_prod(x, y):
    """``x * y`` as an unevaluated sum ``p + e`` exact to twice the precision (Dekker's
    product by Veltkamp splitting; for moderate magnitudes only)."""
    p = x * y

    def split(v):
        c = v * 134217729.0     # 2**27 + 1
        hi = c - (c - v)
        return hi, v - hi
    xh, xl = split(x)
    yh, yl = split(y)
    return p, ((xh * yh - p) + xh * yl + xl * yh) + xl * yl


def _sum_exact(*terms):
    """The sum of ``terms`` rounded once at the end (Knuth's two-sum carrying the errors),
    so cancelling terms keep their digits."""
    acc, err = terms[0], 0.0
    for t in terms[1:]:
        s = acc + t
        bb = s - acc
        err = err + ((acc - (s - bb)) + (t - bb))
        acc = s
    return acc + err


def _log1p(x):
    if x.dtype.kind != "c":
        return _f32.log1p(x)
    # log|1 + z| = log1p(s) / 2 with s = |1 + z|**2 - 1 = a (2 + a) + b**2 keeps the digits
    # NumPy's log(1 + z) loses where |1 + z| is near 1 (log1p(1e-8 + 1e-8j) has real part
    # 1e-8, not 0); elsewhere log(hypot(1 + a, b)) is exact enough and cannot overflow.
    # complex64 is computed in double precision.  A NaN part makes both parts NaN, as XLA.
    wide = np.complex128 if x.dtype == np.complex64 else x.dtype
    z = x.astype(wide)
    a, b = z.real, z.imag
    with np.errstate(all="ignore"):
        s = _sum_exact(2 * a, *_two_prod(a, a), *_two_prod(b, b))
        re = np.where(np.abs(s) < 0.5, 0.5 * np.log1p(s), np.log(np.hypot(1 + a, b)))
    out = _complex_of(re, np.arctan2(b, 1 + a), wide).astype(x.dtype)
    nan = np.isnan(a) | np.isnan(b)
    return np.where(nan, np.array(complex(np.nan, np.nan), x.dtype), out)


def _logistic(x):
    if x.dtype.kind == "c":
        return _complex.logistic(x)
    return _f32.logistic(x)


def _rsqrt(x):
    if x.dtype.kind == "c":
        return _complex.rsqrt(x)
    return 1 / np.sqrt(x)


def _integer_pow(x, y):
    if y == 0:
        return np.ones_like(x)
    acc = None
    base = x
    n = abs(y)
    while n:  # exponentiation by squaring, as XLA expands integer_pow
        if n & 1:
            acc = base if acc is None else acc * base
        n >>= 1
        if n:
            base = base * base
    if y > 0:
        return acc
    if x.dtype.kind == "c":     # XLA's complex division (1 / (0 - 0j) is -inf + NaN*i)
        return _complex.div(np.ones_like(acc), acc)
    return 1 / acc


_lgamma_finite = np.vectorize(math.lgamma, otypes=[np.float64])


def _lgamma(x):
    """log|Gamma(x)|: +inf at the poles (non-positive integers, where ``math.lgamma``
    raises) and at both infinities, as JAX."""
    x = np.asarray(x, np.float64)
    pole = ((x <= 0) & (x == np.floor(x))) | np.isinf(x)
    return np.where(pole, np.inf, _lgamma_finite(np.where(pole, 1.0, x)))


def _digamma(x):
    """The digamma function psi = lgamma': reflection below 1/2, the recurrence
    psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series (error < 1e-15
    there).  NaN at the poles (non-positive integers, -0.0 included) and at -inf, as JAX."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        pole = (x <= 0) & (x == np.floor(x))
        reflect = x < 0.5
        z = np.where(reflect, 1.0 - x, x)
        acc = np.zeros_like(z)
        for _ in range(10):
            small = z < 10
            acc = acc - np.where(small, 1.0 / z, 0.0)
            z = np.where(small, z + 1.0, z)
        r = 1.0 / (z * z)
        series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (
            1 / 132 - r * (691 / 32760 - r / 12))))))
        psi = acc + np.log(z) - 0.5 / z - series
        psi = np.where(np.isinf(z), np.inf, psi)
        psi = np.where(reflect, psi - np.pi / np.tan(np.pi * x), psi)
        return np.where(pole | (x == -np.inf), np.nan, psi)


def _population_count(x):
    if x.size == 0:     # (a reshape to (..., -1) cannot infer -1 from no elements)
        return np.zeros(x.shape, x.dtype)
    bits = np.unpackbits(np.ascontiguousarray(x).view(np.uint8)[..., None], axis=-1)
    return bits.reshape(x.shape + (-1,)).sum(-1).astype(x.dtype)


def _bit_pattern(fn):
    """``fn`` on the bit patterns of narrow integer operands: each held in a uint8 as its
    low 1/2/4 bits (sign extension would add set bits: the population count of int4 -8,
    0b1000, is 1, and int4 -8 shifted right logically by 1 is 4); the result converts back
    with wrap-around.  Other operands pass straight through."""
    def impl(*xs, **params):
        if xs[0].dtype in dtypes.UPCAST:
            mask = (1 << dtypes.itemsize_bits(xs[0].dtype)) - 1
            xs = [np.asarray(x).astype(np.int8 if dtypes.kind(x.dtype) == "i" else np.uint8)
                  for x in xs]
            xs[0] = (xs[0].view(np.uint8) & np.uint8(mask)).astype(np.uint8)
        return fn(*xs, **params)
    impl.__name__ = fn.__name__
    return impl


def _shift_ok(x, y):
    """Shift amounts XLA honours: 0 <= y < bits (negative amounts count as huge)."""
    bits = x.dtype.itemsize * 8
    yy = y.astype(np.int64)
    ok = (yy >= 0) & (yy < bits)
    return ok, np.where(ok, yy, 0)


def _shift_right_logical(x, y):
    ut = np.dtype(f"u{x.dtype.itemsize}")
    ok, yy = _shift_ok(x, y)
    out = np.right_shift(np.asarray(x).view(ut), yy.astype(ut))
    return np.where(ok, out, 0).astype(ut).view(x.dtype)


def _shift_right_arithmetic(x, y):
    ok, yy = _shift_ok(x, y)
    if x.dtype.kind == "u":   # arithmetic shift of unsigned values: sign-fill with 0s
        x_signed = np.asarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
        return _shift_right_arithmetic(x_signed, y).view(x.dtype)
    out = np.right_shift(x, yy.astype(x.dtype))
    return np.where(ok, out, np.where(x < 0, -1, 0)).astype(x.dtype)


def _shift_left(x, y):
    ok, yy = _shift_ok(x, y)
    out = np.left_shift(x, yy.astype(x.dtype))
    return np.where(ok, out, 0).astype(x.dtype)


def _select_n(which, *cases):
    if len(cases) == 1:      # one case: it is the result (which is all zeros)
        return np.array(np.broadcast_to(cases[0], np.broadcast_shapes(which.shape,
                                                                      cases[0].shape)))
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    # an index out of range picks the nearest case (JAX's and XLA's select tree:
    # negative -> the first, too large -> the last)
    if len(cases) == 2:
        return np.where(which > 0, cases[1], cases[0])
    return np.choose(np.clip(which, 0, len(cases) - 1).astype(np.intp), cases)


def _clamp(lo, x, hi):
    # max then min with XLA's signed zeros (clamp(-0.0, 0.0, hi) is 0.0, as in JAX)
    return _min(_max(np.asarray(x), lo), hi)


def _atan2(y, x):
    if x.dtype.kind == "c":
        return _complex.atan2(y, x)
    return np.arctan2(y, x)


def _nextafter(x, y):
    # C's rule for x == y: the result is y (so nextafter(0.0, -0.0) is -0.0); NumPy's
    # float16 loop returns x instead
    return np.where(x == y, y, np.nextafter(x, y))


def _pow(x, y):
    if x.dtype.kind == "c":
        if y.dtype.kind != "c":     # an integer exponent: JAX converts it first
            y = y.astype(x.dtype)
        x, y = np.broadcast_arrays(x, y)
        return _complex.power(x, y)
    return np.power(x, y)


# ---- the table ------------------------------------------------------------------------
# float32 transcendentals (exp, log, sin, ..., erf, logistic) go through ``_f32``: float64
# algorithms rounded once, the native backend's bits on every path (see _f32.py)

neg_p = elementwise("neg", np.negative, NUM,
                    inplace=InPlace(np.negative, "fciu", half=True))
sign_p = elementwise("sign", _sign, NUM)
floor_p = elementwise("floor", np.floor, FLOAT,
                      inplace=InPlace(np.floor, "f"))
ceil_p = elementwise("ceil", np.ceil, FLOAT,
                     inplace=InPlace(np.ceil, "f"))
round_p = elementwise("round", _round, FLOAT)
is_finite_p = elementwise("is_finite", np.isfinite, FLOAT, out_dtype=_bool_out)
exp_p = elementwise("exp", _exp, INEXACT,
                    transcendental=True, inplace=InPlace(_f32.exp, "f"))
exp2_p = elementwise("exp2", _complex_aware(_f32.exp2, _complex.exp2), INEXACT,
                     transcendental=True, extra_flops=1, inplace=InPlace(_f32.exp2, "f"))
log_p = elementwise("log", _log, INEXACT,
                    transcendental=True, inplace=InPlace(_f32.log, "f"))
log1p_p = elementwise("log1p", _log1p, INEXACT,
                      transcendental=True, inplace=InPlace(_f32.log1p, "f"))
expm1_p = elementwise("expm1", _expm1, INEXACT,
                      transcendental=True, inplace=InPlace(_f32.expm1, "f"))
tanh_p = elementwise("tanh", _complex_aware(_f32.tanh, _complex.tanh), INEXACT,
                     transcendental=True, inplace=InPlace(_f32.tanh, "f"))
logistic_p = elementwise("logistic", _logistic, INEXACT,
                         transcendental=True, extra_flops=3)
_F16_BF16 = frozenset({np.dtype(np.float16), _BF16})


def _logistic_half_steps(x, _whole=logistic_p.impl):
    """float16/bfloat16 logistic as XLA on CPU computes it: 1 / (1 + exp(-x)) in the
    operand's precision, each step rounded (exp computed in float32), not the float32
    function rounded once; other dtypes as declared."""
    if x.dtype not in _F16_BF16:
        return _whole(x)
    f32 = np.float32
    e = _f32.exp(-x.astype(f32)).astype(x.dtype)
    s = (e.astype(f32) + f32(1)).astype(x.dtype)
    return (f32(1) / s.astype(f32)).astype(x.dtype)


_logistic_half_steps.__wrapped__ = _logistic     # eager fast paths: other dtypes
logistic_p.impl = _logistic_half_steps
sin_p = elementwise("sin", _complex_aware(_f32.sin, _complex.sin), INEXACT,
                    transcendental=True, inplace=InPlace(_f32.sin, "f"))
cos_p = elementwise("cos", _complex_aware(_f32.cos, _complex.cos), INEXACT,
                    transcendental=True, inplace=InPlace(_f32.cos, "f"))
tan_p = elementwise("tan", _complex_aware(_f32.tan, _complex.tan), INEXACT,
                    transcendental=True, inplace=InPlace(_f32.tan, "f"))
asin_p = elementwise("asin", _complex_aware(_f32.arcsin, _complex.asin), INEXACT,
                     transcendental=True, inplace=InPlace(_f32.arcsin, "f"))
acos_p = elementwise("acos", _complex_aware(_f32.arccos, _complex.acos), INEXACT,
                     transcendental=True, inplace=InPlace(_f32.arccos, "f"))
atan_p = elementwise("atan", _complex_aware(_f32.arctan, _complex.atan), INEXACT,
                     transcendental=True, inplace=InPlace(_f32.arctan, "f"))
sinh_p = elementwise("sinh", _complex_aware(_f32.sinh, _complex.sinh), INEXACT,
                     transcendental=True, inplace=InPlace(_f32.sinh, "f"))
cosh_p = elementwise("cosh", _complex_aware(_f32.cosh, _complex.cosh), INEXACT,
                     transcendental=True, inplace=InPlace(_f32.cosh, "f"))
asinh_p = elementwise("asinh", _complex_aware(_f32.arcsinh, _complex.asinh), INEXACT,
                      transcendental=True, inplace=InPlace(_f32.arcsinh, "f"))
acosh_p = elementwise("acosh", _complex_aware(_f32.arccosh, _complex.acosh), INEXACT,
                      transcendental=True, inplace=InPlace(_f32.arccosh, "f"))
atanh_p = elementwise("atanh", _complex_aware(_f32.arctanh, _complex.atanh), INEXACT,
                      transcendental=True, inplace=InPlace(_f32.arctanh, "f"))
sqrt_p = elementwise("sqrt", _complex_aware(np.sqrt, _complex.sqrt), INEXACT,
                     transcendental=True, inplace=InPlace(np.sqrt, "f"))
rsqrt_p = elementwise("rsqrt", _rsqrt, INEXACT,
                      transcendental=True)
cbrt_p = elementwise("cbrt", np.cbrt, FLOAT,
                     transcendental=True, inplace=InPlace(np.cbrt, "f"))
# signed and inexact only: JAX's abs takes no unsigned integers (TypeError; jnp.abs
# returns them unchanged itself)
abs_p = elementwise("abs", _complex_aware(np.abs, _complex.absolute),
                    FLOAT + COMPLEX + INT, out_dtype=_real_dtype,
                    inplace=InPlace(np.abs, "f"))
not_p = elementwise("not", np.invert, INTEGRAL + BOOL,
                    inplace=InPlace(np.invert, "iub"))
real_p = elementwise("real", np.real, COMPLEX, out_dtype=_real_dtype)
imag_p = elementwise("imag", np.imag, COMPLEX, out_dtype=_real_dtype)
def _conj(x, input_dtype=None):
    # a real number is its own conjugate: the complex value of its width, imaginary part +0
    if x.dtype.kind == "c":
        return np.conjugate(x)
    return x.astype(np.complex128 if x.dtype == np.float64 else np.complex64)


def _conj_aval(x, input_dtype=None):
    # complex operands, and float32/float64 ones (their complex dtype), as JAX
    if x.dtype.kind != "c" and not (x.dtype.kind == "f" and x.dtype.itemsize >= 4
                                    and x.dtype != _BF16):
        raise TypeError(f"conj does not accept dtype {x.dtype.name}. Accepted dtypes are "
                        f"subtypes of float32, float64, complexfloating.")
    dt = x.dtype if x.dtype.kind == "c" else _complex_dtype(x.dtype)
    return ShapedArray(x.shape, dt, x.weak_type)


conj_p = elementwise("conj", _conj, COMPLEX, half=False)
conj_p.abstract_eval = _conj_aval
square_p = elementwise("square", np.square, NUM,
                       inplace=InPlace(np.square, "fiu"))
integer_pow_p = elementwise("integer_pow", _integer_pow, NUM)


def _integer_pow_aval(x, y):
    out = _elementwise_aval("integer_pow", NUM)(x)
    if y < 0 and x.dtype.kind in "iu":
        # 1 / x**n is not an integer: JAX refuses rather than truncating
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({x.str_short()}, {y})")
    return out


integer_pow_p.abstract_eval = _integer_pow_aval
erf_p = elementwise("erf", _f32.erf, FLOAT,
                    transcendental=True)
erfc_p = elementwise("erfc", _f32.erfc, FLOAT,
                     transcendental=True)
lgamma_p = elementwise("lgamma", _lgamma, FLOAT,
                       transcendental=True)
digamma_p = elementwise("digamma", _digamma, FLOAT)
population_count_p = elementwise("population_count", _bit_pattern(_population_count),
                                 INTEGRAL, half=False)

# add and mul not in place for float16/bfloat16: NumPy's and ml_dtypes' half loops pick the
# second operand's NaN of two (NaN + -NaN is -NaN), the float32 path of the implementation
# (and XLA) the first
add_p = elementwise("add", np.add, NUM,
                    inplace=InPlace(np.add, "fciu", half=False))
# the sum of two tangents or cotangents, as the differentiation machinery accumulates them
# (JAX's ``add_any``): the same arithmetic as add, so compiled as add
add_any_p = elementwise("add_any", np.add, NUM, scalar_op="add",
                        inplace=InPlace(np.add, "fciu", half=False))
sub_p = elementwise("sub", np.subtract, NUM,
                    inplace=InPlace(np.subtract, "fciu", half=True))
mul_p = elementwise("mul", np.multiply, NUM,
                    inplace=InPlace(np.multiply, "fciu", half=False))
# in place for floats only: integer division has its own impl, and complex division XLA's
# formula (not NumPy's)
div_p = elementwise("div", _div, NUM,
                    inplace=InPlace(np.true_divide, "f", half=True))
rem_p = elementwise("rem", _rem, FLOAT + INTEGRAL)    # JAX: no complex remainder
pow_p = elementwise("pow", _pow, INEXACT,
                    transcendental=True)


def _pow_aval(x, y):
    # JAX: the exponent is either of the base's (inexact) dtype or an integer
    check_dtypes("pow", (x,), INEXACT)
    if y.dtype.kind in "iu":
        shape = broadcast_shapes_elementwise("pow", (x, y))
        return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)
    return _elementwise_aval("pow", INEXACT)(x, y)


pow_p.abstract_eval = _pow_aval
# in place for integers only: float max/min handle signed zeros and NaNs as XLA
max_p = elementwise("max", _max, ANY,
                    inplace=InPlace(np.maximum, "iub"))
min_p = elementwise("min", _min, ANY,
                    inplace=InPlace(np.minimum, "iub"))
atan2_p = elementwise("atan2", _atan2, INEXACT,
                      transcendental=True)
nextafter_p = elementwise("nextafter", _nextafter, FLOAT, half=False)
and_p = elementwise("and", np.bitwise_and, INTEGRAL + BOOL,
                    inplace=InPlace(np.bitwise_and, "iub"))
or_p = elementwise("or", np.bitwise_or, INTEGRAL + BOOL,
                   inplace=InPlace(np.bitwise_or, "iub"))
xor_p = elementwise("xor", np.bitwise_xor, INTEGRAL + BOOL,
                    inplace=InPlace(np.bitwise_xor, "iub"))
eq_p = elementwise("eq", np.equal, ANY, out_dtype=_bool_out)
ne_p = elementwise("ne", np.not_equal, ANY, out_dtype=_bool_out)
# ordered comparisons take no complex operands (TypeError, as JAX); jax.numpy orders complex
# numbers itself, lexicographically
lt_p = elementwise("lt", np.less, FLOAT + INTEGRAL + BOOL, out_dtype=_bool_out)
le_p = elementwise("le", np.less_equal, FLOAT + INTEGRAL + BOOL, out_dtype=_bool_out)
gt_p = elementwise("gt", np.greater, FLOAT + INTEGRAL + BOOL, out_dtype=_bool_out)
ge_p = elementwise("ge", np.greater_equal, FLOAT + INTEGRAL + BOOL, out_dtype=_bool_out)
shift_left_p = elementwise("shift_left", _shift_left, INTEGRAL, half=False)
shift_right_logical_p = elementwise("shift_right_logical", _bit_pattern(_shift_right_logical),
                                    INTEGRAL, half=False)
shift_right_arithmetic_p = elementwise("shift_right_arithmetic", _shift_right_arithmetic,
                                       INTEGRAL, half=False)
def _make_complex(x, y):
    # part by part: x + 1j * y would mix an infinite or NaN y into the real part and lose
    # the sign of a zero one
    x, y = np.broadcast_arrays(x, y)
    return _complex.complex_of(x, y, _complex_dtype(x.dtype))


complex_p = elementwise("complex", _make_complex, FLOAT, out_dtype=_complex_dtype)


def _select_n_aval(which, *cases):
    if not cases:
        raise ValueError("select_n() must have at least one case")
    if which.dtype != np.bool_ and which.dtype.kind not in "iu":
        raise TypeError(f"select_n selector must be bool or int, got {which.dtype}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean selector takes at most two cases")
    check_same_dtypes("select_n", cases)
    # no size-1 broadcasting here (JAX's select_n takes none either)
    shape = same_shapes_elementwise("select_n", (which,) + cases)
    return ShapedArray(shape, cases[0].dtype, all(c.weak_type for c in cases))


select_n_p = Primitive("select_n", abstract_eval=_select_n_aval, impl=_select_n,
                       scalar_op="select_n", flops=_elementwise_flops, kind="elementwise",
                       sharding=_sr.elementwise)


def _clamp_aval(lo, x, hi):
    check_same_dtypes("clamp", (lo, x, hi))
    # no size-1 broadcasting here: JAX's message
    for what, b in (("min", lo), ("max", hi)):
        if b.shape not in ((), x.shape):
            raise TypeError(f"clamp requires {what}.shape == operand.shape or {what}.shape "
                            f"== (), got {what}.shape={b.shape}, operand.shape={x.shape}.")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


clamp_p = Primitive("clamp", abstract_eval=_clamp_aval, impl=_clamp, scalar_op="clamp",
                    flops=_elementwise_flops, kind="elementwise", sharding=_sr.elementwise)


def _convert_aval(x, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, new_dtype, weak_type=False):
    if new_dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        x = np.real(x)
    if dtypes.is_float(x.dtype) and dtypes.is_int(new_dtype):
        # float -> int: NaN goes to 0 and values saturate at the integer range (XLA on CPU).
        info = dtypes.iinfo(new_dtype)
        with np.errstate(all="ignore"):
            if x.dtype.itemsize < 4:
                x = x.astype(np.float32)
            x = np.nan_to_num(np.trunc(x), nan=0.0)
            x = np.clip(x, info.min, info.max)
            return np.where(x >= float(info.max), info.max,
                            x.astype(new_dtype)).astype(new_dtype)
    if new_dtype in _NO_NAN:
        x = dtypes.xla_nan_sign(x)
    with np.errstate(all="ignore"):
        return x.astype(new_dtype)


convert_element_type_p = Primitive(
    "convert_element_type", abstract_eval=_convert_aval, impl=_convert_impl,
    scalar_op="convert", flops=lambda *a, **k: 0, kind="elementwise",
    sharding=_sr.elementwise)


def _bitcast_aval(x, new_dtype):
    # sizes in bits (JAX's packed sizes: int4 and float4_e2m1fn are 4 bits, so an int8
    # holds two of them)
    old, new = np.dtype(x.dtype), np.dtype(new_dtype)
    ob, nb = dtypes.itemsize_bits(old), dtypes.itemsize_bits(new)
    if ob == nb:
        return ShapedArray(x.shape, new, False)
    if ob > nb:
        if ob % nb:
            raise TypeError(f"bitcast_convert_type cannot reinterpret {old.name} ({ob} "
                            f"bits) as {new.name} ({nb} bits)")
        return ShapedArray(x.shape + (ob // nb,), new, False)
    ratio = nb // ob
    if nb % ob or not x.shape or x.shape[-1] != ratio:
        raise ValueError(f"bitcast_convert_type from {old.name} ({ob} bits) to the wider "
                         f"{new.name} ({nb} bits) needs a last dimension of size {ratio}, "
                         f"got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new, False)


def _bit_patterns(x):
    """uint64 bit patterns of ``x``'s elements (a narrow type's byte holds its pattern in
    the low bits, as ml_dtypes stores it)."""
    x = np.ascontiguousarray(x)
    if x.dtype.itemsize * 8 != dtypes.itemsize_bits(x.dtype):
        return x.view(np.uint8).astype(np.uint64)
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)


def _from_bit_patterns(p, new):
    nb = dtypes.itemsize_bits(new)
    if new.itemsize * 8 != nb:
        return p.astype(np.uint8).view(new)
    return p.astype(np.dtype(f"u{new.itemsize}")).view(new)


def _bitcast_impl(x, new_dtype):
    new = np.dtype(new_dtype)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    ob, nb = dtypes.itemsize_bits(x.dtype), dtypes.itemsize_bits(new)
    if ob % 8 or nb % 8:      # a narrow type: regroup the bits, lowest first (little end)
        p = _bit_patterns(x)
        if ob > nb:
            shifts = np.arange(ob // nb, dtype=np.uint64) * np.uint64(nb)
            p = (p[..., None] >> shifts) & np.uint64((1 << nb) - 1)
        elif ob < nb:
            shifts = np.arange(nb // ob, dtype=np.uint64) * np.uint64(ob)
            p = np.bitwise_or.reduce(p << shifts, axis=-1)
        return _from_bit_patterns(p, new)
    if x.dtype.itemsize == new.itemsize:
        return x.view(new)
    if x.dtype.itemsize > new.itemsize:
        return x.reshape(x.shape + (1,)).view(new)
    return x.view(new).reshape(x.shape[:-1])


def _bitcast_sharding(in_specs, in_avals, axis_sizes, *, new_dtype):
    # the leading dimensions map one to one; a dimension the bit widths add or remove
    # (the last) is whole
    x = in_avals[0]
    old_nd, new_nd = x.ndim, _bitcast_aval(x, new_dtype).ndim
    s = tuple(in_specs[0])
    if new_nd == old_nd:
        return _sr.ShardingRule([s], [s])
    keep = min(old_nd, new_nd)
    ops = [s[:keep] + _sr.replicated(old_nd - keep)]
    note = None if ops[0] == s else (f"operand 0 {_sr.fmt(s)} -> {_sr.fmt(ops[0])}: the "
                                     f"dimension a bitcast packs or unpacks is whole")
    return _sr.ShardingRule(ops, [s[:keep] + _sr.replicated(new_nd - keep)], (), note)


bitcast_convert_type_p = Primitive(
    "bitcast_convert_type", abstract_eval=_bitcast_aval, impl=_bitcast_impl,
    scalar_op="bitcast", flops=lambda *a, **k: 0, kind="other", sharding=_bitcast_sharding)


# ---- transformation rules ---------------------------------------------------------------
# JVP rules are written with binds of the primitives above so that they work under every
# trace (and can be differentiated again); constants take the operand's dtype.

from ..core import ad, batching  # noqa: E402
from ..core.trace import Tracer, get_aval  # noqa: E402
from ..core.array import Array  # noqa: E402
from ..core.eager import from_host  # noqa: E402


def _c(x, v):
    """The scalar ``v`` as a rank-0 constant of ``x``'s dtype, weakly typed when ``x`` is
    (as JAX's rules keep it: the derivative of a weakly typed value stays weak, and its
    program needs no conversion)."""
    aval = get_aval(x)
    c = np.array(v, aval.dtype)
    if not aval.weak_type:
        return c
    if dtypes.is_float(aval.dtype) and aval.dtype == dtypes.canonicalize_dtype(np.float64):
        return float(v)       # a Python float: the program shows its value, as JAX's
    from ..core.eager import from_host
    return from_host(c, aval.dtype, True)


def _sum_to_shape(ct, aval):
    """``ct`` (an elementwise result's cotangent) reduced to operand ``aval``'s shape, as
    JAX's transpose rules unbroadcast: summed over every axis for a rank-0 operand, else
    over the dimensions the operand broadcast from size 1, then reshaped to keep those
    (as size 1)."""
    from .reduction import reduce_sum_p
    from .shape import reshape_p
    shape, want = tuple(get_aval(ct).shape), tuple(aval.shape)
    if shape == want:
        return ct
    if not want:
        return reduce_sum_p.bind(ct, axes=tuple(range(len(shape))), out_sharding=None)
    if len(shape) != len(want) or any(b not in (1, a) for a, b in zip(shape, want)):
        raise AssertionError(f"internal error: a cotangent of shape {shape} cannot sum to "
                             f"an operand of shape {want}")
    dims = tuple(i for i, (a, b) in enumerate(zip(shape, want)) if a != b)
    ct = reduce_sum_p.bind(ct, axes=dims, out_sharding=None)
    return reshape_p.bind(ct, new_sizes=want, dimensions=None, sharding=None)


def _full_like(x, shape):
    """``x`` broadcast to ``shape`` (JAX's ``_maybe_broadcast``): a rank-0 ``x``
    everywhere; an ``x`` of equal rank along its size-1 dimensions, which a reshape drops
    first."""
    from .shape import broadcast_in_dim_p, reshape_p
    xs, shape = tuple(get_aval(x).shape), tuple(shape)
    if xs == shape:
        return x
    if not xs:
        return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=())
    if len(xs) != len(shape) or any(a not in (1, b) for a, b in zip(xs, shape)):
        raise AssertionError(f"internal error: a value of shape {xs} cannot broadcast to "
                             f"{shape}")
    dims = tuple(i for i, (a, b) in enumerate(zip(xs, shape)) if a == b)
    x = reshape_p.bind(x, new_sizes=tuple(xs[i] for i in dims), dimensions=None,
                       sharding=None)
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def _out_shape(*xs):
    return broadcast_shapes_elementwise("rule", [get_aval(x) for x in xs])


mul, add, sub, div, neg = mul_p.bind, add_p.bind, sub_p.bind, div_p.bind, neg_p.bind

# zero derivative (piecewise constant) --------------------------------------------------
# (nextafter has no rule: JAX raises NotImplementedError for its derivative)
for _p in (sign_p, floor_p, ceil_p, round_p):
    ad.defjvp(_p, *([lambda g, *a, **k: None] * 2))

# unary -------------------------------------------------------------------------------
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])
ad.defjvp2(exp_p, lambda g, ans, x: mul(g, ans))
ad.defjvp2(exp2_p, lambda g, ans, x: mul(log_p.bind(_c(x, 2)), mul(g, ans)))
ad.defjvp(log_p, lambda g, x: div(g, x))
ad.defjvp(log1p_p, lambda g, x: div(g, add(x, _c(x, 1))))
ad.defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, _c(x, 1))))
ad.defjvp2(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(_c(x, 1), ans)))
ad.defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_c(x, 1), ans))))
ad.defjvp(sin_p, lambda g, x: mul(g, cos_p.bind(x)))
ad.defjvp(cos_p, lambda g, x: neg(mul(g, sin_p.bind(x))))
ad.defjvp2(tan_p, lambda g, ans, x: mul(g, add(_c(x, 1), square_p.bind(ans))))
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt_p.bind(sub(_c(x, 1), square_p.bind(x)))))
ad.defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt_p.bind(sub(_c(x, 1), square_p.bind(x))))))
ad.defjvp(atan_p, lambda g, x: div(g, add(_c(x, 1), square_p.bind(x))))
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh_p.bind(x)))
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh_p.bind(x)))
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt_p.bind(add(square_p.bind(x), _c(x, 1)))))
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt_p.bind(mul(sub(x, _c(x, 1)),
                                                        add(x, _c(x, 1))))))
ad.defjvp(atanh_p, lambda g, x: mul(integer_pow_p.bind(add(_c(x, 1), x), y=-1),
                                     div(g, sub(_c(x, 1), x))))
ad.defjvp2(sqrt_p, lambda g, ans, x: mul(g, div(_c(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(_c(x, -0.5), div(ans, x))))
# (1/3) ans**-2 with integer_pow, whose own derivative at 0 is -inf as in JAX (dividing by
# ans * ans gave 0 * inf = NaN for the second derivative there)
ad.defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(_c(x, 1 / 3), integer_pow_p.bind(ans, y=-2))))
ad.defjvp(square_p, lambda g, x: mul(g, mul(_c(x, 2), x)))
ad.defjvp(erf_p, lambda g, x: mul(_c(x, 2 / math.sqrt(math.pi)),
                                   mul(g, exp_p.bind(neg(square_p.bind(x))))))
ad.defjvp(erfc_p, lambda g, x: mul(g, mul(_c(x, -2 / math.sqrt(math.pi)),
                                          exp_p.bind(neg(mul(x, x))))))
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma_p.bind(x)))


def _trigamma(x):
    """psi'(x) written with binds (so it differentiates again): reflection below 1/2,
    the recurrence psi'(x) = psi'(x + 1) + 1/x**2 up to x >= 10, then the asymptotic
    series."""
    shape = get_aval(x).shape
    reflect = lt_p.bind(x, _full_like(_c(x, 0.5), shape))
    z = select_n_p.bind(reflect, x, sub(_c(x, 1), x))
    acc = _full_like(_c(x, 0), shape)
    ten = _full_like(_c(x, 10), shape)
    for _ in range(10):
        small = lt_p.bind(z, ten)
        acc = add(acc, select_n_p.bind(small, _full_like(_c(x, 0), shape),
                                       div(_c(x, 1), mul(z, z))))
        z = select_n_p.bind(small, z, add(z, _c(x, 1)))
    r = div(_c(x, 1), mul(z, z))
    series = _c(x, 7 / 6)
    for coef in (-691 / 2730, 5 / 66, -1 / 30, 1 / 42, -1 / 30, 1 / 6):
        series = add(_c(x, coef), mul(r, series))
    # 1/z + 1/(2 z^2) + (1/z^3) * (1/6 - 1/(30 z^2) + ...)
    psi1 = add(acc, add(div(_c(x, 1), z), add(mul(_c(x, 0.5), r), mul(div(r, z),
                                                                        series))))
    pis = mul(_c(x, math.pi), x)
    sn = sin_p.bind(pis)
    refl = sub(div(_c(x, math.pi ** 2), mul(sn, sn)), psi1)
    out = select_n_p.bind(reflect, psi1, refl)
    # JAX: +inf at the poles (non-positive integers, -inf included), where sin(pi x) is
    # only nearly 0 in floating point, and NaN at +inf
    pole = and_p.bind(le_p.bind(x, _full_like(_c(x, 0), shape)),
                      eq_p.bind(x, floor_p.bind(x)))
    out = select_n_p.bind(pole, out, _full_like(_c(x, np.inf), shape))
    return select_n_p.bind(eq_p.bind(x, _full_like(_c(x, np.inf), shape)), out,
                           _full_like(_c(x, np.nan), shape))


ad.defjvp(digamma_p, lambda g, x: mul(g, _trigamma(x)))


def _integer_pow_jvp(g, x, y):
    if y == 0:
        return ad.zeros(get_aval(g))
    if y == 1:
        # the tangent itself; a concrete one handed in by the user comes back an Array, as
        # any other rule's result (JAX's jvp of x ** 1 returns an Array, not the input)
        return g if isinstance(g, (Tracer, Array)) else from_host(g, get_aval(g).dtype,
                                                                  get_aval(g).weak_type)
    d = mul(_c(x, y), x if y == 2 else integer_pow_p.bind(x, y=y - 1))
    return mul(g, d)


ad.defjvp(integer_pow_p, _integer_pow_jvp)


def _abs_jvp(g, ans, x):
    if get_aval(x).dtype.kind == "c":
        # d|z| = Re(conj(z) dz) / |z|, zero at z = 0
        safe = select_n_p.bind(eq_p.bind(ans, _c(ans, 0)), ans, _c(ans, 1))
        num = real_p.bind(mul(conj_p.bind(x, input_dtype=get_aval(x).dtype), g))
        return select_n_p.bind(eq_p.bind(ans, _c(ans, 0)), div(num, safe),
                               _full_like(_c(ans, 0), get_aval(ans).shape))
    # +g where x >= 0 (so 1 at 0 and at -0.0, as JAX), -g elsewhere
    return select_n_p.bind(ge_p.bind(x, _c(x, 0)), neg(g), g)


ad.defjvp2(abs_p, _abs_jvp)
ad.deflinear(real_p, lambda ct, x: [complex_p.bind(ct, _full_like(_c(ct, 0),
                                                                   get_aval(ct).shape))])
ad.deflinear(imag_p, lambda ct, x: [complex_p.bind(_full_like(_c(ct, 0), get_aval(ct).shape),
                                                   neg(ct))])
def _conj_transpose(ct, x, input_dtype=None):
    # the cotangent of a real operand is the real part (conj's output is complex)
    if np.dtype(input_dtype).kind == "c":
        return [conj_p.bind(ct, input_dtype=get_aval(ct).dtype)]
    return [real_p.bind(ct)]


ad.deflinear(conj_p, _conj_transpose)


# binary ------------------------------------------------------------------------------

def _add_transpose(ct, x, y):
    return [_sum_to_shape(ct, x.aval) if ad.is_undefined(x) else None,
            _sum_to_shape(ct, y.aval) if ad.is_undefined(y) else None]


def _sub_transpose(ct, x, y):
    return [_sum_to_shape(ct, x.aval) if ad.is_undefined(x) else None,
            _sum_to_shape(neg(ct), y.aval) if ad.is_undefined(y) else None]


def _linear_binary_jvp(prim):
    def rule(primals, tangents):
        out = prim.bind(*primals)
        tx, ty = tangents
        if tx is None and ty is None:
            return out, None
        shape = get_aval(out).shape
        if ty is None:
            t = _full_like(tx, shape)
        elif tx is None:
            t = _full_like(neg(ty) if prim is sub_p else ty, shape)
        else:
            t = prim.bind(tx, ty)
        return out, t
    return rule


add_p.jvp = _linear_binary_jvp(add_p)
add_p.transpose = _add_transpose
add_any_p.jvp = _linear_binary_jvp(add_any_p)
add_any_p.transpose = _add_transpose
sub_p.jvp = _linear_binary_jvp(sub_p)
sub_p.transpose = _sub_transpose


def _mul_transpose(ct, x, y):
    if ad.is_undefined(x):
        return [_sum_to_shape(mul(ct, y), x.aval), None]
    return [None, _sum_to_shape(mul(x, ct), y.aval)]


def _bshape(g, *xs):
    """``g`` broadcast to the result shape of an elementwise op on ``xs``."""
    return _full_like(g, _out_shape(*xs))


ad.defjvp(mul_p, lambda g, x, y: _bshape(mul(g, y), x, y),
          lambda g, x, y: _bshape(mul(x, g), x, y))
mul_p.transpose = _mul_transpose
# d(x/y)/dy = -x * y**-2: with integer_pow the n-th derivative holds y**-(n+1); a form
# dividing by y*y squares the power at every order (y**64 by the 6th: overflow in float32)
ad.defjvp(div_p, lambda g, x, y: _bshape(div(g, y), x, y),
          lambda g, x, y: _bshape(mul(mul(neg(g), x), integer_pow_p.bind(y, y=-2)), x, y))
div_p.transpose = lambda ct, x, y: [_sum_to_shape(div(ct, y), x.aval), None]
# d rem(x, y)/dy = -trunc(x / y), written sign(q) * floor(|q|) as JAX does (so y = 0 gives
# -inf/NaN/inf there as in JAX, and a quotient rounded up to an integer counts as one)
def _rem_jvp_y(g, x, y):
    q = div(x, y)
    return _bshape(mul(neg(g), mul(sign_p.bind(q), floor_p.bind(abs_p.bind(q)))), x, y)


ad.defjvp(rem_p, lambda g, x, y: _bshape(g, x, y), _rem_jvp_y)


def _strong(v, dtype):
    """``v`` as a strongly typed value of ``dtype`` (converted only where it differs)."""
    a = get_aval(v)
    if a.dtype == dtype and not a.weak_type:
        return v
    return convert_element_type_p.bind(v, new_dtype=dtype, weak_type=False)


def _pow_jvp_x(g, x, y):
    # y * x ** (y - 1), computed on strongly typed operands (JAX's derivative in x is never
    # weakly typed).  A float exponent has no special case: at x = y = 0 it is 0 * inf =
    # NaN, as in JAX, and d/dy of it at y = 0 is x ** -1.  An integer exponent of 0 gives 0.
    dt = get_aval(x).dtype
    integral = get_aval(y).dtype.kind in "iu"
    x, y = _strong(x, dt), _strong(y, dt)
    if integral:
        # both at the result's shape first (as JAX): the select below takes no size-1
        # broadcasting
        shape = _out_shape(x, y)
        x, y = _full_like(x, shape), _full_like(y, shape)
    d = mul(y, pow_p.bind(x, sub(y, _c(y, 1))))
    if integral:
        d = select_n_p.bind(eq_p.bind(y, _c(y, 0)), d,
                            _full_like(_c(d, 0), get_aval(d).shape))
    return _bshape(mul(g, d), x, y)


def _pow_jvp_y(g, ans, x, y):
    # log(x) * x ** y, with 0 where x == 0
    safe_x = select_n_p.bind(eq_p.bind(x, _c(x, 0)), x, _full_like(_c(x, 1), get_aval(x).shape))
    return _bshape(mul(g, mul(log_p.bind(safe_x), ans)), x, y)


ad.defjvp2(pow_p, lambda g, ans, x, y: _pow_jvp_x(g, x, y), _pow_jvp_y)


def _balanced_eq(x, z, y):
    """1 where x alone attains z, 0.5 where x and y tie, 0 elsewhere: JAX's
    ``select(x == z, 1, 0) / select(y == z, 2, 1)`` (x and y may broadcast size-1
    dimensions against z)."""
    shape = get_aval(z).shape

    def select(pred, on_true, on_false):      # staged in JAX's order
        t = _full_like(_c(z, on_true), shape)
        return select_n_p.bind(pred, _full_like(_c(z, on_false), shape), t)
    hits = select(eq_p.bind(x, z), 1, 0)
    return div(hits, select(eq_p.bind(y, z), 2, 1))


# the tangent of the operand that broadcasts meets the result's shape in the product
ad.defjvp2(max_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
ad.defjvp2(min_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))


def _atan2_denom(x, y):
    return add(mul(x, x), mul(y, y))


ad.defjvp(atan2_p, lambda g, x, y: _bshape(mul(g, div(y, _atan2_denom(x, y))), x, y),
          lambda g, x, y: _bshape(mul(g, div(neg(x), _atan2_denom(x, y))), x, y))


def _complex_transpose(ct, x, y):
    return [_sum_to_shape(real_p.bind(ct), x.aval) if ad.is_undefined(x) else None,
            _sum_to_shape(imag_p.bind(neg(ct)), y.aval) if ad.is_undefined(y) else None]


def _complex_jvp(primals, tangents):
    x, y = primals
    out = complex_p.bind(x, y)
    tx, ty = tangents
    if tx is None and ty is None:
        return out, None
    shape = get_aval(out).shape
    tx = _full_like(ad.instantiate(tx, get_aval(x)), shape)
    ty = _full_like(ad.instantiate(ty, get_aval(y)), shape)
    return out, complex_p.bind(tx, ty)


complex_p.jvp = _complex_jvp
complex_p.transpose = _complex_transpose


# select_n and clamp ------------------------------------------------------------------

def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    ts = tangents[1:]
    if all(t is None for t in ts):
        return out, None
    shape = get_aval(out).shape
    ts = [_full_like(ad.instantiate(t, get_aval(c)), shape) for t, c in zip(ts, cases)]
    return out, select_n_p.bind(_full_like(which, shape) if get_aval(which).shape else which,
                                *ts)


def _select_n_transpose(ct, which, *cases):
    if ad.is_undefined(which):
        raise ValueError("select_n is not linear in its selector")
    zero = _full_like(_c(ct, 0), get_aval(ct).shape)
    out = [None]
    for i, c in enumerate(cases):
        if not ad.is_undefined(c):
            out.append(None)
            continue
        picks = [zero] * len(cases)
        picks[i] = ct
        out.append(_sum_to_shape(select_n_p.bind(which, *picks), c.aval))
    return out


select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    shape = get_aval(out).shape
    zero = _full_like(_c(out, 0), shape)
    t = None
    tlo, tx, thi = tangents
    lo_b, hi_b = _full_like(lo, shape), _full_like(hi, shape)
    if tx is not None:
        inside = and_p.bind(gt_p.bind(x, lo_b), lt_p.bind(x, hi_b))
        t = ad.add_tangents(t, select_n_p.bind(inside, zero, tx))
    if tlo is not None:
        t = ad.add_tangents(t, select_n_p.bind(and_p.bind(gt_p.bind(lo_b, x),
                                                          lt_p.bind(lo_b, hi_b)),
                                               zero, _full_like(tlo, shape)))
    if thi is not None:
        t = ad.add_tangents(t, select_n_p.bind(lt_p.bind(hi_b, x), zero,
                                               _full_like(thi, shape)))
    return out, t


clamp_p.jvp = _clamp_jvp


# conversions ---------------------------------------------------------------------------

def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if t is None or not dtypes.is_inexact(np.dtype(new_dtype)):
        return out, None
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=False)


def _convert_transpose(ct, x, new_dtype, weak_type=False):
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=False)]


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
bitcast_convert_type_p.jvp = lambda primals, tangents, **p: (
    bitcast_convert_type_p.bind(*primals, **p), None)


# batching: every elementwise primitive maps axis-wise -----------------------------------

for _p in list(globals().values()):
    if isinstance(_p, Primitive) and _p.kind == "elementwise":
        batching.elementwise_batcher(_p)
for _p in (convert_element_type_p, bitcast_convert_type_p, integer_pow_p):
    batching.vectorized_batcher(_p)
for _p in (select_n_p, clamp_p):      # no size-1 broadcasting: operands batched whole
    batching.same_shape_batcher(_p)


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# Each operation computes what XLA computes for it, which the implementations above mirror
# (integer division by zero, shifts by out-of-range amounts, NaN-propagating max/min,
# saturating float -> int conversion).

from . import _lowering as _lo  # noqa: E402

for _p, _op in ((neg_p, "stablehlo.negate"), (floor_p, "stablehlo.floor"),
                (ceil_p, "stablehlo.ceil"), (is_finite_p, "stablehlo.is_finite"),
                (exp_p, "stablehlo.exponential"), (log_p, "stablehlo.log"),
                (log1p_p, "stablehlo.log_plus_one"), (expm1_p, "stablehlo.exponential_minus_one"),
                (tanh_p, "stablehlo.tanh"), (logistic_p, "stablehlo.logistic"),
                (sin_p, "stablehlo.sine"), (cos_p, "stablehlo.cosine"), (tan_p, "chlo.tan"),
                (asin_p, "chlo.asin"), (acos_p, "chlo.acos"), (atan_p, "chlo.atan"),
                (sinh_p, "chlo.sinh"), (cosh_p, "chlo.cosh"), (asinh_p, "chlo.asinh"),
                (acosh_p, "chlo.acosh"), (atanh_p, "chlo.atanh"), (sqrt_p, "stablehlo.sqrt"),
                (rsqrt_p, "stablehlo.rsqrt"), (cbrt_p, "stablehlo.cbrt"),
                (abs_p, "stablehlo.abs"), (not_p, "stablehlo.not"), (real_p, "stablehlo.real"),
                (imag_p, "stablehlo.imag"), (erf_p, "chlo.erf"), (erfc_p, "chlo.erfc"),
                (lgamma_p, "chlo.lgamma"), (digamma_p, "chlo.digamma"),
                (population_count_p, "stablehlo.popcnt"), (add_p, "stablehlo.add"),
                (add_any_p, "stablehlo.add"), (sub_p, "stablehlo.subtract"),
                (atan2_p, "stablehlo.atan2"),
                (nextafter_p, "chlo.next_after"), (and_p, "stablehlo.and"),
                (or_p, "stablehlo.or"), (xor_p, "stablehlo.xor"),
                (shift_left_p, "stablehlo.shift_left"),
                (shift_right_logical_p, "stablehlo.shift_right_logical"),
                (shift_right_arithmetic_p, "stablehlo.shift_right_arithmetic"),
                (complex_p, "stablehlo.complex")):
    _p.lowering = _lo.elementwise(_op)
for _p, _dir in ((eq_p, "EQ"), (ne_p, "NE"), (lt_p, "LT"), (le_p, "LE"), (gt_p, "GT"),
                 (ge_p, "GE")):
    _p.lowering = _lo.compare(_dir)


# divisors XLA's simplifier rewrites a float division by (into a multiplication, or a
# division reassociated), each 1 ulp off the quotient in about a third of cases:
# x / c -> x * (1/c); a / (b / c) -> (a * c) / b; a / sqrt(b) -> a * rsqrt(b);
# a / rsqrt(b) -> a * sqrt(b); a / exp(b) -> a * exp(-b); a / pow(b, c) -> a * pow(b, -c)
_REWRITTEN_DIVISORS = {"stablehlo.constant", "stablehlo.divide", "stablehlo.sqrt",
                       "stablehlo.rsqrt", "stablehlo.exponential", "stablehlo.power"}


def _barrier(ctx, v):
    return ctx.op("stablehlo.optimization_barrier", [v], v.aval)


def _div_lower(ctx, x, y):
    """``x / y``, a float division kept a division: a divisor XLA would rewrite the
    division by (``_REWRITTEN_DIVISORS``; a scalar, which may be a constant once folded,
    or a broadcast constant) and a dividend that is itself a quotient ((a / b) / c ->
    a / (b * c)) go through an optimization barrier, which the simplifier does not see
    through (x / 6, log10's log(x) / log(10), mean's sum / n agree with the interpreter
    bit for bit)."""
    out = ctx.avals_out[0]
    if dtypes.kind(out.dtype) in "iu":
        return _int_div_lower(ctx, x, y, "divide")
    if y.aval.ndim == 0 or y.producer in _REWRITTEN_DIVISORS or (
            y.producer == "stablehlo.broadcast_in_dim" and
            y.inputs[0].producer == "stablehlo.constant"):
        y = _barrier(ctx, y)
    if x.producer == "stablehlo.divide":
        x = _barrier(ctx, x)
    return _lo.elementwise("stablehlo.divide")(ctx, x, y)


def _int_div_lower(ctx, x, y, op):
    """Integer ``x / y`` or ``x % y`` (``op``: divide, remainder) by a divisor made safe
    first: 1 where it is 0 or where INT_MIN is divided by -1, then XLA's results there
    (x / 0 = -1, x % 0 = x; INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0, which the safe
    divisor 1 gives).  XLA's own operation guards these cases too, but once its simplifier
    has folded a divisor to the constant 0 (``rem(c, v - v)``) the compiled program
    divides by zero and the process dies of SIGFPE."""
    out = ctx.avals_out[0]
    x, y = (ctx.broadcast(v, out.shape) for v in (x, y))
    zero = ctx.compare(y, ctx.full(0, y.aval), "EQ")
    bad = zero
    if dtypes.kind(out.dtype) == "i":
        lowest = ctx.compare(x, ctx.full(dtypes.iinfo(out.dtype).min, x.aval), "EQ")
        minus_one = ctx.compare(y, ctx.full(-1, y.aval), "EQ")
        bad = ctx.binary("or", zero, ctx.binary("and", lowest, minus_one))
    safe = ctx.select(bad, ctx.full(1, y.aval), y)
    r = ctx.op(f"stablehlo.{op}", [x, safe], out)
    return ctx.select(zero, ctx.full(-1, out) if op == "divide" else x, r)


def _rem_lower(ctx, x, y):
    if dtypes.kind(ctx.avals_out[0].dtype) in "iu":
        return _int_div_lower(ctx, x, y, "remainder")
    return _lo.elementwise("stablehlo.remainder")(ctx, x, y)


div_p.lowering = _div_lower


def _erf_lower(ctx, x):
    """``erf`` as chlo.erf for |x| < 1 and sign(x) (1 - erfc(|x|)) beyond: the XLA:CPU
    plugin's chlo.erf stops at 0.9999998 (erf(inf) is 1 - 2e-7, so gelu's 1 + erf(x) is
    not 0 at -inf); 1 - erfc(|x|) rounds to the correctly rounded value there, as the
    implementation's erf does.  float16 and bfloat16 compute in float32, as it does."""
    out = ctx.avals_out[0]
    if out.dtype in dtypes.UPCAST:
        x = ctx.convert(x, np.float32)
    ax = ctx.unary("abs", x)
    one = ctx.full(1, x.aval)
    tail = ctx.binary("subtract", one, ctx.op("chlo.erfc", [ax], x.aval))
    tail = ctx.select(ctx.compare(x, ctx.full(0, x.aval), "LT"), ctx.unary("negate", tail),
                      tail)
    r = ctx.select(ctx.compare(ax, one, "GE"), tail, ctx.op("chlo.erf", [x], x.aval))
    return ctx.convert(r, out.dtype)


erf_p.lowering = _erf_lower


def _sign_lower(ctx, x):
    if dtypes.kind(x.aval.dtype) == "u":     # StableHLO's sign takes no unsigned integers
        zero = ctx.full(0, x.aval)
        return ctx.convert(ctx.compare(x, zero, "NE"), x.aval.dtype)
    return ctx.unary("sign", x)


def _round_lower(ctx, x, rounding_method=0):
    op = "round_nearest_even" if int(rounding_method) == 1 else "round_nearest_afz"
    return ctx.unary(op, x)


def _exp2_lower(ctx, x):
    if x.aval.dtype.kind == "c":      # 2**z = e**(z log 2)
        return ctx.unary("exponential", ctx.binary("multiply", x,
                                                    ctx.full(math.log(2), x.aval)))
    return ctx.binary("power", ctx.full(2, x.aval), x)


def _conj_lower(ctx, x, input_dtype=None):
    out = ctx.avals_out[0]
    if x.aval.dtype.kind != "c":      # a real number's conjugate: itself, as complex
        return ctx.convert(x, out.dtype)
    re = ctx.op("stablehlo.real", [x], ctx.aval(x.aval.shape, _real_dtype(x.aval.dtype)))
    im = ctx.op("stablehlo.imag", [x], re.aval)
    return ctx.op("stablehlo.complex", [re, ctx.unary("negate", im)], out)


def _mul_lower(ctx, x, y):
    """``x * y``; a signed integer times itself is a square (``_square_lower``)."""
    if x.name == y.name and dtypes.kind(x.aval.dtype) == "i":
        return _square_lower(ctx, ctx.broadcast(x, ctx.avals_out[0].shape))
    return _lo.elementwise("stablehlo.multiply")(ctx, x, y)


mul_p.lowering = _mul_lower


def _square_lower(ctx, x):
    """``x * x``; of a signed integer, with the second factor through an optimization
    barrier: XLA takes a product of one value with itself for non-negative and drops an
    ``abs`` of it (``abs(x * x)`` is ``x * x``), which is wrong once the product wraps
    around (int8 -34 squared is -124; its abs is 124)."""
    y = _barrier(ctx, x) if dtypes.kind(x.aval.dtype) == "i" else x
    return ctx.binary("multiply", x, y)


def _integer_pow_lower(ctx, x, y):
    # exponentiation by squaring, the multiplications in the implementation's order
    if y == 0:
        return ctx.full(1, x.aval)
    if x.aval.dtype in _F16S:        # in float32, rounded once, as the implementation
        return ctx.convert(_integer_pow_lower(ctx, ctx.convert(x, np.float32), y),
                           x.aval.dtype)
    acc, base, n = None, x, abs(int(y))
    while n:
        if n & 1:
            acc = base if acc is None else ctx.binary("multiply", acc, base)
        n >>= 1
        if n:
            base = _square_lower(ctx, base)
    if y < 0:
        return ctx.binary("divide", ctx.full(1, x.aval), acc)
    return acc


def _pow_lower(ctx, x, y):
    out = ctx.avals_out[0]
    x, y = _lo._operands_to(ctx, (x, y), out.shape)
    return ctx.binary("power", x, ctx.convert(y, out.dtype))


def _lex_greater_lower(ctx, x, y):
    rt = ctx.aval(x.aval.shape, _real_dtype(x.aval.dtype))
    xr, yr = ctx.op("stablehlo.real", [x], rt), ctx.op("stablehlo.real", [y], rt)
    xi, yi = ctx.op("stablehlo.imag", [x], rt), ctx.op("stablehlo.imag", [y], rt)
    return ctx.binary("or", ctx.compare(xr, yr, "GT"),
                      ctx.binary("and", ctx.compare(xr, yr, "EQ"), ctx.compare(xi, yi, "GT")))


def _minmax_lower(is_max):
    def rule(ctx, x, y):
        out = ctx.avals_out[0]
        x, y = _lo._operands_to(ctx, (x, y), out.shape)
        if x.aval.dtype.kind == "c":        # lexicographic; a NaN comparison picks y
            pick_x = _lex_greater_lower(ctx, x, y) if is_max else _lex_greater_lower(ctx, y, x)
            return ctx.select(pick_x, x, y)
        return _lo.maximum(ctx, x, y) if is_max else _lo.minimum(ctx, x, y)
    return rule


def _select_n_lower(ctx, which, *cases):
    out = ctx.avals_out[0]
    cases = _lo._operands_to(ctx, cases, out.shape)
    which = ctx.broadcast(which, out.shape)
    if len(cases) == 1:
        return cases[0]
    if which.aval.dtype == np.bool_:
        return ctx.select(which, cases[1], cases[0])

    def pick(lo, hi):          # cases[lo:hi] by a binary tree of selects on ``which``
        if hi - lo == 1:
            return cases[lo]
        mid = (lo + hi) // 2
        below = ctx.compare(which, ctx.full(mid, which.aval), "LT")
        return ctx.select(below, pick(lo, mid), pick(mid, hi))
    return pick(0, len(cases))


def _clamp_lower(ctx, lo, x, hi):
    # min(max(x, lo), hi), as the implementation (NaN and signed zeros included)
    shape = x.aval.shape
    lo, hi = ctx.broadcast(lo, shape), ctx.broadcast(hi, shape)
    return _lo.minimum(ctx, _lo.maximum(ctx, x, lo), hi)


def _convert_lower(ctx, x, new_dtype, weak_type=False):
    new = np.dtype(new_dtype)
    if new == x.aval.dtype:
        return x
    if new == np.bool_:
        return ctx.compare(x, ctx.full(0, x.aval), "NE")
    if x.aval.dtype == np.bool_ and dtypes.kind(new) in "fc":
        # a select, not a convert: XLA rewrites convert(p) * y into select(p, y, 0),
        # which makes False * inf and False * NaN 0 (NaN in IEEE arithmetic) and
        # False * -1.0 +0.0 (-0.0); it leaves select(p, 1, 0) * y alone
        out = ctx.aval(x.aval.shape, new)
        return ctx.select(x, ctx.full(1, out), ctx.full(0, out))
    if x.aval.dtype.kind == "c" and new.kind != "c":
        x = ctx.op("stablehlo.real", [x], ctx.aval(x.aval.shape, _real_dtype(x.aval.dtype)))
    return ctx.convert(x, new)


def _bitcast_lower(ctx, x, new_dtype):
    return ctx.op("stablehlo.bitcast_convert", [x], ctx.avals_out[0])


sign_p.lowering = _sign_lower
round_p.lowering = _round_lower
exp2_p.lowering = _exp2_lower
conj_p.lowering = _conj_lower
square_p.lowering = _square_lower
integer_pow_p.lowering = _integer_pow_lower
pow_p.lowering = _pow_lower
max_p.lowering = _minmax_lower(True)
min_p.lowering = _minmax_lower(False)
select_n_p.lowering = _select_n_lower
clamp_p.lowering = _clamp_lower
convert_element_type_p.lowering = _convert_lower
bitcast_convert_type_p.lowering = _bitcast_lower
rem_p.lowering = _rem_lower
