"""Complex elementwise kernels with XLA's values at infinite/NaN parts and signed zeros.

Layer: primitives (NumPy implementations behind ``elementwise.py``'s complex primitives).
NumPy's complex functions follow C99 Annex G; JAX's follow XLA's own formulas, which differ
where a part is infinite or NaN (``cos(inf + 0j)`` is NaN + NaN*i in JAX, NaN + 0j in C99),
in the sign of zero parts (``sqrt(-1 - 0j)`` is +1j in JAX) and, for some functions, in the
last bits of finite results (XLA contracts ``a*b + c`` into one fused multiply-add).  Each
kernel here takes and returns complex64/complex128 arrays; most compute NumPy's value and
then correct only the elements XLA treats differently, so finite inputs stay fast.
"""
from __future__ import annotations

import numpy as np


def complex_of(re, im, dt):
    """``re + i*im`` of complex dtype ``dt``, assigned part by part (``re + 1j * im`` would
    mix an infinite or NaN part into the other)."""
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dt)
    out.real, out.imag = re, im
    return out


def _split(v):
    c = v * 134217729.0     # 2**27 + 1: Veltkamp's split of a float64 into two halves
    hi = c - (c - v)
    return hi, v - hi


def fma(x, y, z):
    """``x*y + z`` rounded once, as XLA's contracted multiply-add: float32 through float64
    (the product is exact there), float64 by Dekker's exact product and a compensated sum.
    Non-finite or overflowing terms fall back to ``x*y + z``."""
    if x.dtype == np.float32:
        return (x.astype(np.float64) * y + z).astype(np.float32)
    p = x * y
    xh, xl = _split(x)
    yh, yl = _split(y)
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    bb = s - p
    corr = ((p - (s - bb)) + (z - bb)) + e
    # a zero correction leaves s alone (s + 0.0 would turn a -0.0 sum into +0.0)
    out = np.where(corr == 0, s, s + corr)
    return np.where(np.isfinite(out) & np.isfinite(p), out, s)


def _muladd(x, y, z):
    """``x*y + z`` with XLA's single rounding where it matters: computed plainly, then
    again by ``fma`` only where the sum cancels (its magnitude below an eighth of the
    product's), where rounding the product first would change more than the last 2 bits."""
    p = x * y
    out = p + z
    m = np.abs(out) < 0.125 * np.abs(p)
    if m.any():
        out[m] = fma(x[m], y[m], z[m])
    return out


def _unit(v):
    """+-1 by the sign bit where ``v`` is infinite, +-0 elsewhere (C99's box for
    infinite operands of a division)."""
    return np.copysign(np.where(np.isinf(v), 1, 0).astype(v.dtype), v)


def div(x, y):
    """``x / y`` as XLA divides complex numbers: Smith's algorithm (the ratio of the
    divisor's smaller part to its larger, products contracted into fused multiply-adds),
    then C99's recovery where both parts came out NaN: a zero divisor gives
    ``copysign(inf, Re y) * x``, an infinite dividend over a finite divisor infinities,
    a finite dividend over an infinite divisor signed zeros.

    NumPy's quotient (also Smith's, to within an ulp) is kept where it is finite and
    neither part is small beside the other; the rest (zeros, cancellations, non-finite
    parts) is recomputed with XLA's formula."""
    x, y = np.broadcast_arrays(x, y)
    q = np.true_divide(x, y)
    mag = np.abs(q)
    lim = 0.125 * mag
    redo = ~((np.abs(q.real) >= lim) & (np.abs(q.imag) >= lim) & (mag > 0)
             & np.isfinite(mag))
    if redo.all():
        return _div_xla(x, y)
    if redo.any():
        q[redo] = _div_xla(x[redo], y[redo])
    return q


def _div_xla(x, y):
    a, b, c, d = x.real, x.imag, y.real, y.imag
    swap = np.abs(c) < np.abs(d)
    big = np.where(swap, d, c)
    small = np.where(swap, c, d)
    r = small / big
    den = _muladd(small, r, big)
    # the numerators (a + b r, b - a r) or, swapped, (a r + b, b r - a)
    e = _muladd(np.where(swap, a, b), r, np.where(swap, b, a)) / den
    f = _muladd(np.where(swap, b, -a), r, np.where(swap, -a, b)) / den
    both = np.isnan(e) & np.isnan(f)
    if both.any():
        zero = both & (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
        inf = np.copysign(np.array(np.inf, a.dtype), c)
        e = np.where(zero, inf * a, e)
        f = np.where(zero, inf * b, f)
        rest = both & ~zero
        x_inf = rest & (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
        ua, ub = _unit(a), _unit(b)
        e = np.where(x_inf, np.inf * (ua * c + ub * d), e)
        f = np.where(x_inf, np.inf * (ub * c - ua * d), f)
        y_inf = rest & ~x_inf & (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
        uc, ud = _unit(c), _unit(d)
        e = np.where(y_inf, 0 * (a * uc + b * ud), e)
        f = np.where(y_inf, 0 * (b * uc - a * ud), f)
    return complex_of(e, f, x.dtype)


def _nonfinite(x):
    return ~(np.isfinite(x.real) & np.isfinite(x.imag))


def _nan_both(out, mask):
    """``out`` with NaN + NaN*i where ``mask``."""
    if mask.any():
        out = np.where(mask, np.array(complex(np.nan, np.nan), out.dtype), out)
    return out


def _any_nan(x):
    return np.isnan(x.real) | np.isnan(x.imag)


def _plus_zero_imag(x):
    """``x`` with a -0.0 imaginary part made +0.0 (XLA's formulas do not see its sign)."""
    return complex_of(x.real, x.imag + 0, x.dtype)


def _arg(a, b):
    """atan2(b, a) rounded once to the parts' dtype (NumPy's float32 atan2 can be an ulp
    off, e.g. atan2(1, 1); XLA's is not, and a power multiplies that ulp)."""
    return np.arctan2(b.astype(np.float64), a).astype(a.dtype)


def absolute(x):
    """|x|: NaN when a part is NaN, even beside an infinite one (C99's hypot gives inf)."""
    out = np.abs(x)
    return np.where(_any_nan(x), np.array(np.nan, out.dtype), out)


def sign(x):
    """x / |x| part by part, and x itself (its zeros' signs kept) where |x| is 0."""
    mag = absolute(x)
    zero = mag == 0
    safe = np.where(zero, 1, mag)
    return np.where(zero, x, complex_of(x.real / safe, x.imag / safe, x.dtype))


def _hypot(a, b):
    """|a + bi| as XLA computes it: max * sqrt(1 + (min/max)**2) (no overflow, and the
    last bit as XLA rounds it, which NumPy's correctly rounded hypot does not always)."""
    mx = np.maximum(np.abs(a), np.abs(b))
    mn = np.minimum(np.abs(a), np.abs(b))
    r = mn / np.where(mx == 0, 1, mx)
    return np.where(mx == 0, 0, mx * np.sqrt(1 + r * r)).astype(a.dtype)


def sqrt(x):
    """The principal square root as XLA: t = sqrt((|a| + |x|) / 2), then (t, b / 2t) for
    a >= 0 and (|b| / 2t, +-t) otherwise, a zero b counting as +0.0.  Infinite parts
    follow C99; a NaN part gives NaN + NaN*i."""
    a, b = x.real, x.imag
    t = np.sqrt((np.abs(a) + _hypot(a, b)) * a.dtype.type(0.5))
    small = np.abs(b) / (2 * t)
    neg_b = b < 0
    pos = a >= 0
    re = np.where(pos, t, small)
    im = np.where(pos, np.where(neg_b, -small, small), np.where(neg_b, -t, t))
    zero = (a == 0) & (b == 0)
    re = np.where(zero, 0, re)
    im = np.where(zero, 0, im)
    out = complex_of(re, im, x.dtype)
    bad = _nonfinite(x)
    if bad.any():
        out = np.where(bad, np.sqrt(_plus_zero_imag(x)), out)
    return _nan_both(out, _any_nan(x))


def rsqrt(x):
    """1/sqrt(x) in polar form, |x|**-1/2 * e**(-i arg(x)/2), as XLA computes it (so
    rsqrt(-1 + 0j) has real part cos(pi/2) rounded, not 0); infinite parts give zeros
    signed as -Im x, the real one negative only for Re x = -inf; and x = 0 gives inf + NaN*i."""
    a, b = x.real, x.imag
    r = 1 / np.sqrt(np.abs(x))
    t = _arg(a, b) * a.dtype.type(0.5)
    re, im = r * np.cos(t), -(r * np.sin(t))
    inf = np.isinf(a) | np.isinf(b)
    if inf.any():
        re = np.where(inf, np.where(a == -np.inf, -0.0, 0.0).astype(a.dtype), re)
        im = np.where(inf, -np.copysign(np.zeros((), a.dtype), b), im)
    zero = (a == 0) & (b == 0)
    re = np.where(zero, np.inf, re)
    im = np.where(zero, np.nan, im)
    return complex_of(re, im, x.dtype)


def exp(x):
    """e**x as XLA: e**a * cos(b) + i e**a * sin(b), where e**a overflows e**(a/2) applied
    twice (so e**a * sin(b) stays finite when it can), and an imaginary part of +0.0 for
    b = 0 (no inf * 0 = NaN there)."""
    a, b = x.real, x.imag
    with np.errstate(over="ignore"):
        e = np.exp(a)
    h = np.exp(a * a.dtype.type(0.5))
    c, s = np.cos(b), np.sin(b)
    big = np.isinf(e)
    re = np.where(big, h * (h * c), e * c)
    im = np.where(b == 0, 0, np.where(big, h * (h * s), e * s))
    return complex_of(re, im, x.dtype)


def _add_real(c, z):
    """The real constant ``c`` (a complex number with imaginary part +0.0) plus ``z``."""
    return complex_of(c + z.real, 0 + z.imag, z.dtype)


def exp2(x):
    """2**x as JAX lowers it: e**(log(2) * x), the product a complex one (so an infinite
    part meets log(2)'s zero imaginary part: NaN + NaN*i)."""
    a, b = x.real, x.imag
    ln2 = a.dtype.type(np.log(2))
    return exp(complex_of(ln2 * a - 0 * b, ln2 * b + 0 * a, x.dtype))


def logistic(x):
    """1 / (1 + e**-x), with XLA's complex exp and division."""
    one = complex_of(np.ones_like(x.real), np.zeros_like(x.real), x.dtype)
    return div(one, _add_real(x.real.dtype.type(1), exp(-x)))


def sinh(x):
    """(e**x - e**-x) / 2 with XLA's complex exp (so sinh(-0.0 + 1j) has real part +0.0)."""
    p, m = exp(x), exp(-x)
    half = x.real.dtype.type(0.5)
    return complex_of((p.real - m.real) * half, (p.imag - m.imag) * half, x.dtype)


def cosh(x):
    """(e**x + e**-x) / 2 with XLA's complex exp."""
    p, m = exp(x), exp(-x)
    half = x.real.dtype.type(0.5)
    return complex_of((p.real + m.real) * half, (p.imag + m.imag) * half, x.dtype)


def _sinh_cosh_parts(b):
    # sinh and cosh of a real b from expm1 (accurate near 0): (e1 - e2)/2, (e1 + e2 + 2)/2
    e1, e2 = np.expm1(b), np.expm1(-b)
    half = b.dtype.type(0.5)
    return (e1 - e2) * half, (e1 + e2 + 2) * half


def sin(x):
    """sin(a) cosh(b) + i cos(a) sinh(b), cosh and sinh from expm1, as JAX; the real part
    is +0.0 where a = 0 (either sign)."""
    a, b = x.real, x.imag
    sh, ch = _sinh_cosh_parts(b)
    re = np.where(a == 0, 0, np.sin(a) * ch)
    return complex_of(re, np.cos(a) * sh, x.dtype)


def cos(x):
    """cos(a) cosh(b) - i sin(a) sinh(b), cosh and sinh from expm1, as JAX; the imaginary
    part is +0.0 where a = 0 (either sign)."""
    a, b = x.real, x.imag
    sh, ch = _sinh_cosh_parts(b)
    im = np.where(a == 0, 0, -np.sin(a) * sh)
    return complex_of(np.cos(a) * ch, im, x.dtype)


def tanh(x):
    """C99's tanh, except as XLA: a zero imaginary part gives tanh(a) + 0j, an infinite
    real part beside an infinite or NaN one +-1 + 0j, and a zero real part beside an
    infinite or NaN imaginary part NaN + NaN*i (tan(b) is NaN there)."""
    a, b = x.real, x.imag
    out = np.tanh(x)
    fix = (b == 0) | (np.isinf(a) & ~np.isfinite(b))
    if fix.any():
        re = np.where(fix, np.tanh(a), out.real)
        im = np.where(fix, 0, out.imag)
        out = complex_of(re, im, x.dtype)
    return _nan_both(out, (a == 0) & ~np.isfinite(b))


def tan(x):
    """-i tanh(i x), with tanh as above (so tan(-0.0 + 1j) has real part +0.0)."""
    t = tanh(complex_of(-x.imag, x.real, x.dtype))
    return complex_of(t.imag, -t.real, x.dtype)


def _with_parts(x, re=None, im=None):
    return complex_of(x.real if re is None else re, x.imag if im is None else im, x.dtype)


def _safe_max(dt):
    return dt.type(np.sqrt(np.finfo(dt).max) / 8)


def _far_nan(z, big, other):
    """Where ``big`` (a part) is finite beyond sqrt(max)/8 and ``other`` is NaN, XLA's
    inverse trig functions still give log(2 |big|) (C99: NaN): the mask and that value."""
    far = (np.abs(big) >= _safe_max(big.dtype)) & np.isfinite(big) & np.isnan(other)
    with np.errstate(all="ignore"):
        return far, (np.log(np.abs(big)) + big.dtype.type(np.log(2))).astype(big.dtype)


def _far_fix(out, far, re=None, im=None):
    if far.any():
        nan = np.array(np.nan, out.real.dtype)
        out = complex_of(np.where(far, nan if re is None else re, out.real),
                         np.where(far, nan if im is None else im, out.imag), out.dtype)
    return out


def asin(x):
    """C99's asin with a zero imaginary part taken as +0.0; a zero real part beside a NaN
    imaginary one gives NaN + NaN*i (C99 keeps the zero)."""
    out = _nan_both(np.arcsin(_plus_zero_imag(x)), (x.real == 0) & np.isnan(x.imag))
    far, v = _far_nan(x, x.real, x.imag)
    return _far_fix(out, far, im=v)


def acos(x):
    """C99's acos with a zero imaginary part taken as +0.0; a zero real part beside a NaN
    imaginary one gives NaN + NaN*i."""
    out = _nan_both(np.arccos(_plus_zero_imag(x)), (x.real == 0) & np.isnan(x.imag))
    far, v = _far_nan(x, x.real, x.imag)
    return _far_fix(out, far, im=-v)


def acosh(x):
    """C99's acosh with a zero imaginary part taken as +0.0; a zero real part beside a NaN
    imaginary one gives NaN + NaN*i."""
    out = _nan_both(np.arccosh(_plus_zero_imag(x)), (x.real == 0) & np.isnan(x.imag))
    far, v = _far_nan(x, x.real, x.imag)
    return _far_fix(out, far, re=v)


def asinh(x):
    """C99's asinh with a zero real part taken as +0.0; a NaN real part beside a zero
    imaginary one gives NaN + NaN*i."""
    out = _nan_both(np.arcsinh(_with_parts(x, re=x.real + 0)),
                    (x.imag == 0) & np.isnan(x.real))
    far, v = _far_nan(x, x.imag, x.real)
    return _far_fix(out, far, re=v)


def atanh(x):
    """C99's atanh with XLA's signs: the real part's sign is that of ``Re x >= 0`` (so
    -0.0 and NaN give +0.0 and -0.0 there), and where a part is infinite or NaN the
    imaginary part is +-pi/2 by ``Im x >= 0`` and the real part 0 beside an infinity,
    NaN otherwise."""
    a, b = x.real, x.imag
    out = np.arctanh(x)
    pos = a >= 0
    re = np.where(pos, np.abs(out.real), -np.abs(out.real))
    im = out.imag
    bad = ~(np.isfinite(a) & np.isfinite(b))
    # (XLA's formula has a far region, |a| or |b| beyond sqrt(max)/8, where the imaginary
    # part is +-pi/2 by the sign test alone: atanh(1e30 - 0j) in complex64 is +pi/2)
    far = bad | (np.maximum(np.abs(a), np.abs(b)) >= _safe_max(a.dtype))
    if far.any():
        inf = np.isinf(a) | np.isinf(b)
        mag = np.where(inf, 0, np.nan).astype(a.dtype)
        re = np.where(bad, np.where(pos, mag, -mag), re)
        hpi = a.dtype.type(np.pi / 2)
        im = np.where(far, np.where(b >= 0, hpi, -hpi), im)
    return complex_of(re, im, x.dtype)


def atan(x):
    """-i atanh(i x), with atanh as above."""
    t = atanh(complex_of(-x.imag, x.real, x.dtype))
    return complex_of(t.imag, -t.real, x.dtype)


def power(x, y):
    """x**y as XLA: |x|**c e**(-d arg x) (cos q + i sin q), q = c arg x + d log|x| for
    y = c + di; x**0 and 1**y are 1 + 0j (NaN parts included), 0**y is 0 for a real
    y > 0."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    r = np.hypot(a, b)
    theta = _arg(a, b)
    coeff = np.power(r, c) * np.exp(-d * theta)
    q = fma(c, theta, d * np.log(r))
    re, im = coeff * np.cos(q), coeff * np.sin(q)
    zero = (a == 0) & (b == 0)
    real_y = d == 0
    one = ((c == 0) & real_y) | ((a == 1) & (b == 0))
    vanish = zero & (c > 0) & real_y
    # +inf + 0j to a real power: inf**c + 0j (the formula's c * arg x would be inf * 0)
    inf_real = (a == np.inf) & (b == 0) & real_y & ~np.isnan(c)
    re = np.where(one, 1, np.where(vanish, 0, np.where(inf_real, np.power(a, c), re)))
    im = np.where(one | vanish | inf_real, 0, im)
    return complex_of(re, im, x.dtype)


def mul(x, y):
    """x * y as XLA multiplies complex numbers: (ac - bd) + (ad + bc)i, no C99 recovery of
    infinities (so an infinite part times a zero part is NaN)."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    return complex_of(a * c - b * d, a * d + b * c, x.dtype)


def _const(v, like):
    return complex_of(np.full(like.shape, v.real, like.real.dtype),
                      np.full(like.shape, v.imag, like.real.dtype), like.dtype)


def log(x):
    """log|x| + i arg x as XLA: |x| rounded to the parts' precision first (NumPy keeps the
    digits of |x| - 1 near the unit circle), NaN + NaN*i where a part is NaN."""
    a, b = x.real, x.imag
    with np.errstate(all="ignore"):
        out = complex_of(np.log(_hypot(a, b)), np.arctan2(b, a), x.dtype)
    return _nan_both(out, _any_nan(x))


def atan2(y, x):
    """atan2 continued to complex arguments as XLA composes it from complex operations:
    -i log((x + i y) / (x*x + y*y)**0.5), the square root a complex power (in polar
    form, so (-1 + 0j)**0.5 is cos(pi/2) + 1j rounded)."""
    z = mul(_const(1j, y), y)
    z = complex_of(x.real + z.real, x.imag + z.imag, x.dtype)
    xx, yy = mul(x, x), mul(y, y)
    s = power(complex_of(xx.real + yy.real, xx.imag + yy.imag, x.dtype), _const(0.5, x))
    # (-i is 0 - 1j here: Python's -1j has real part -0.0)
    return mul(_const(complex(0.0, -1.0), x), log(_div_xla(z, s)))
