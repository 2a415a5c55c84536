"""Elementwise functions of ``jaxlite.numpy`` (NumPy's ufuncs): promote, broadcast, bind.

Each function mirrors the ``jax.numpy`` function of the same name: same promotion
(JAX's lattice, weak Python scalars), same result dtype.  Non-array arguments (lists,
strings) raise TypeError naming their position.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from ._util import (PY_SCALARS, broadcast_args, check_arraylike, convert, promote_dtypes,
                    promote_dtypes_inexact, public_names, shape_of)


def _args(name, args, inexact=False):
    check_arraylike(name, *args)
    args = promote_dtypes_inexact(*args) if inexact else promote_dtypes(*args)
    return broadcast_args(*args)


def _one(name, fn, inexact=False, doc=None):
    def f(x, /):
        (x,) = _args(name, (x,), inexact)
        if isinstance(x, PY_SCALARS) or isinstance(x, (np.ndarray, np.generic)):
            from ._util import ensure_array
            x = ensure_array(x)
        return fn(x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc or (f"Elementwise ``{name}`` (``jax.numpy.{name}``).  Integer inputs "
                        f"{'become the default float dtype' if inexact else 'keep their dtype'};"
                        f" the shape is unchanged.")
    return f


def _two(name, fn, inexact=False, doc=None):
    def f(x1, x2, /):
        x1, x2 = _args(name, (x1, x2), inexact)
        if isinstance(x1, PY_SCALARS + (np.ndarray, np.generic)) and \
                isinstance(x2, PY_SCALARS + (np.ndarray, np.generic)):
            from ._util import ensure_array
            x1 = ensure_array(x1)
        return fn(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc or (f"Elementwise ``{name}`` with NumPy broadcasting and JAX type "
                        f"promotion (``jax.numpy.{name}``).  Raises ValueError for shapes "
                        f"that do not broadcast, TypeError for non-array arguments.")
    return f


# ---- arithmetic ---------------------------------------------------------------------

add = _two("add", lambda a, b: lax.bitwise_or(a, b) if _is_bool(a) else lax.add(a, b))
subtract = _two("subtract", lambda a, b: _no_bool("subtract", a) or lax.sub(a, b))
multiply = _two("multiply", lambda a, b: lax.bitwise_and(a, b) if _is_bool(a)
                else lax.mul(a, b))
true_divide = _two("true_divide", lax.div, inexact=True)
divide = true_divide
negative = _one("negative", lambda x: _no_bool("negative", x) or lax.neg(x))
positive = _one("positive", lambda x: x)


def _is_bool(x):
    return np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype) == np.bool_


def _no_bool(name, x):
    if _is_bool(x):
        raise TypeError(f"jaxlite.numpy.{name} does not accept boolean arguments; use "
                        f"logical_xor / logical_not instead.")
    return None


def _floor_divide(a, b):
    dt = np.dtype(a.dtype)
    if dt.kind in "iu":
        q = lax.div(a, b)
        if dt.kind == "u":
            return q
        # round toward -inf: subtract one where the signs differ and there is a remainder
        r = lax.rem(a, b)
        fix = lax.bitwise_and(lax.ne(r, _zero(r)), lax.ne(lax.lt(r, _zero(r)),
                                                          lax.lt(b, _zero(b))))
        return lax.select(fix, lax.sub(q, _one_like(q)), q)
    if dt == np.bool_:
        raise TypeError("floor_divide does not accept boolean arguments")
    return lax.floor(lax.div(a, b))


def _zero(x):
    return lax.scalar_as(0, x.dtype, x.weak_type)


def _one_like(x):
    return lax.scalar_as(1, x.dtype, x.weak_type)


floor_divide = _two("floor_divide", _floor_divide)


def _remainder(a, b):
    dt = np.dtype(a.dtype)
    if dt == np.bool_:
        raise TypeError("remainder does not accept boolean arguments")
    r = lax.rem(a, b)
    if dt.kind == "u":
        return r
    # Python/NumPy sign convention: the result takes the sign of the divisor
    fix = lax.bitwise_and(lax.ne(r, _zero(r)), lax.ne(lax.lt(r, _zero(r)), lax.lt(b, _zero(b))))
    return lax.select(fix, lax.add(r, b), r)


remainder = _two("remainder", _remainder)
mod = remainder
fmod = _two("fmod", lax.rem)


def divmod(x1, x2, /):
    """``(floor_divide(x1, x2), remainder(x1, x2))`` (``jax.numpy.divmod``)."""
    return floor_divide(x1, x2), remainder(x1, x2)


def _int_pow(x, y):
    # y is a traced/array integer exponent: square-and-multiply over the exponent's bits.
    nbits = np.dtype(y.dtype).itemsize * 8
    acc = lax.select(lax.ge(y, _zero(y)), lax.broadcast_in_dim(_one_like(x), x.shape, ())
                     if x.shape else _one_like(x), _zero_arr(x))
    base, e = x, y
    for _ in range(nbits):
        bit = lax.ne(lax.bitwise_and(e, _one_like(e)), _zero(e))
        acc = lax.select(bit, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        e = lax.shift_right_logical(e, _one_like(e))
    return acc


def _zero_arr(x):
    return lax.broadcast_in_dim(_zero(x), x.shape, ()) if x.shape else _zero(x)


def power(x1, x2, /):
    """``x1 ** x2`` elementwise (``jax.numpy.power``).  A static Python int exponent uses
    repeated multiplication (exact for integers); integer arrays raise to integer powers."""
    check_arraylike("power", x1, x2)
    if isinstance(x2, int) and not isinstance(x2, bool) and not isinstance(x1, PY_SCALARS):
        (a,) = _args("power", (x1,))
        if np.dtype(a.dtype).kind in "iu" and x2 < 0:
            raise ValueError("Integers cannot be raised to negative integer powers.")
        return lax.integer_pow(a, x2)
    a, b = _args("power", (x1, x2))
    if np.dtype(a.dtype).kind in "iub":
        if np.dtype(a.dtype) == np.bool_:
            a, b = convert(a, np.int32), convert(b, np.int32)
        from ._util import ensure_array
        a, b = ensure_array(a), ensure_array(b)
        a, b = broadcast_args(a, b)
        if a.shape != b.shape:
            a = lax.broadcast_in_dim(a, b.shape, ()) if not a.shape else a
            b = lax.broadcast_in_dim(b, a.shape, ()) if not b.shape else b
        return _int_pow(a, b)
    return lax.pow(a, b)


pow = power


def float_power(x1, x2, /):
    """``x1 ** x2`` computed in the widest float type (``jax.numpy.float_power``)."""
    x1, x2 = _args("float_power", (x1, x2), inexact=True)
    return lax.pow(x1, x2)


maximum = _two("maximum", lax.max)
minimum = _two("minimum", lax.min)


def _fmax(a, b):
    return lax.select(lax.ne(b, b), a, lax.select(lax.ne(a, a), b, lax.max(a, b))) \
        if dtypes.is_inexact(a.dtype) else lax.max(a, b)


def _fmin(a, b):
    return lax.select(lax.ne(b, b), a, lax.select(lax.ne(a, a), b, lax.min(a, b))) \
        if dtypes.is_inexact(a.dtype) else lax.min(a, b)


fmax = _two("fmax", _fmax)
fmin = _two("fmin", _fmin)

# ---- comparisons & logic ------------------------------------------------------------

equal = _two("equal", lax.eq)
not_equal = _two("not_equal", lax.ne)
less = _two("less", lax.lt)
less_equal = _two("less_equal", lax.le)
greater = _two("greater", lax.gt)
greater_equal = _two("greater_equal", lax.ge)


def _to_bool(x):
    return x if np.dtype(x.dtype) == np.bool_ else lax.ne(x, _zero(x))


logical_and = _two("logical_and", lambda a, b: lax.bitwise_and(_to_bool(a), _to_bool(b)))
logical_or = _two("logical_or", lambda a, b: lax.bitwise_or(_to_bool(a), _to_bool(b)))
logical_xor = _two("logical_xor", lambda a, b: lax.bitwise_xor(_to_bool(a), _to_bool(b)))
logical_not = _one("logical_not", lambda x: lax.bitwise_not(_to_bool(x)))

bitwise_and = _two("bitwise_and", lax.bitwise_and)
bitwise_or = _two("bitwise_or", lax.bitwise_or)
bitwise_xor = _two("bitwise_xor", lax.bitwise_xor)
bitwise_not = _one("bitwise_not", lax.bitwise_not)
invert = bitwise_not
bitwise_invert = bitwise_not
left_shift = _two("left_shift", lax.shift_left)
bitwise_left_shift = left_shift


def _right_shift(a, b):
    if np.dtype(a.dtype).kind == "u":
        return lax.shift_right_logical(a, b)
    return lax.shift_right_arithmetic(a, b)


right_shift = _two("right_shift", _right_shift)
bitwise_right_shift = right_shift

# ---- exponentials, logs, trig -------------------------------------------------------

exp = _one("exp", lax.exp, inexact=True)
exp2 = _one("exp2", lax.exp2, inexact=True)
expm1 = _one("expm1", lax.expm1, inexact=True)
log = _one("log", lax.log, inexact=True)
log1p = _one("log1p", lax.log1p, inexact=True)
log2 = _one("log2", lambda x: lax.div(lax.log(x), _const(np.log(2), x)), inexact=True)
log10 = _one("log10", lambda x: lax.div(lax.log(x), _const(np.log(10), x)), inexact=True)
sin = _one("sin", lax.sin, inexact=True)
cos = _one("cos", lax.cos, inexact=True)
tan = _one("tan", lax.tan, inexact=True)
arcsin = _one("arcsin", lax.asin, inexact=True)
arccos = _one("arccos", lax.acos, inexact=True)
arctan = _one("arctan", lax.atan, inexact=True)
sinh = _one("sinh", lax.sinh, inexact=True)
cosh = _one("cosh", lax.cosh, inexact=True)
tanh = _one("tanh", lax.tanh, inexact=True)
arcsinh = _one("arcsinh", lax.asinh, inexact=True)
arccosh = _one("arccosh", lax.acosh, inexact=True)
arctanh = _one("arctanh", lax.atanh, inexact=True)
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh
arctan2 = _two("arctan2", lax.atan2, inexact=True)
atan2 = arctan2
sqrt = _one("sqrt", lax.sqrt, inexact=True)
cbrt = _one("cbrt", lax.cbrt, inexact=True)
square = _one("square", lax.square)


def _const(v, x):
    """Python scalar ``v`` typed like ``x`` (weak when ``x`` is)."""
    return lax.scalar_as(v, x.dtype, x.weak_type)


def _reciprocal(x):
    return lax.div(_const(1, x), x)


reciprocal = _one("reciprocal", _reciprocal)


def _deg2rad(x):
    return lax.mul(x, _const(np.pi / 180, x))


def _rad2deg(x):
    return lax.mul(x, _const(180 / np.pi, x))


deg2rad = _one("deg2rad", _deg2rad, inexact=True)
radians = _one("radians", _deg2rad, inexact=True)
rad2deg = _one("rad2deg", _rad2deg, inexact=True)
degrees = _one("degrees", _rad2deg, inexact=True)


def _hypot(a, b):
    a, b = lax.abs(a), lax.abs(b)
    big, small = lax.max(a, b), lax.min(a, b)
    safe = lax.select(lax.eq(big, _const(0, big)), _const(1, big), big)
    r = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(_const(1, r), lax.mul(r, r))))
    return lax.select(lax.eq(big, _const(0, big)), big, out)


hypot = _two("hypot", _hypot, inexact=True)


def _logaddexp(a, b):
    amax = lax.max(a, b)
    delta = lax.sub(a, b)
    out = lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    # inf - inf is nan: fall back to amax where delta is nan (both infinite, same sign)
    return lax.select(lax.ne(delta, delta), lax.add(a, b), out)


logaddexp = _two("logaddexp", _logaddexp, inexact=True)


def _logaddexp2(a, b):
    ln2 = _const(np.log(2), a)
    return lax.div(_logaddexp(lax.mul(a, ln2), lax.mul(b, ln2)), ln2)


logaddexp2 = _two("logaddexp2", _logaddexp2, inexact=True)


def _copysign(a, b):
    return lax.select(lax.bitwise_or(lax.lt(b, _const(0, b)),
                                     lax.bitwise_and(lax.eq(b, _const(0, b)),
                                                     lax.lt(lax.div(_const(1, b), b),
                                                            _const(0, b)))),
                      lax.neg(lax.abs(a)), lax.abs(a))


copysign = _two("copysign", _copysign, inexact=True)

# ---- rounding, sign, abs ------------------------------------------------------------


def _keep_int(fn):
    def g(x):
        return x if np.dtype(x.dtype).kind in "iub" else fn(x)
    return g


floor = _one("floor", _keep_int(lax.floor))
ceil = _one("ceil", _keep_int(lax.ceil))
trunc = _one("trunc", _keep_int(lambda x: lax.select(lax.lt(x, _const(0, x)), lax.ceil(x),
                                                     lax.floor(x))))
fix = trunc
rint = _one("rint", _keep_int(lambda x: lax.round(x, 1)))


def round(a, decimals=0, out=None):
    """Rounds half to even at ``decimals`` places (``jax.numpy.round``)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    (x,) = _args("round", (a,))
    if np.dtype(x.dtype).kind in "iub":
        return x
    if decimals == 0:
        return lax.round(x, 1)
    f = _const(10.0 ** decimals, x)
    return lax.div(lax.round(lax.mul(x, f), 1), f)


around = round


def _abs(x):
    dt = np.dtype(x.dtype)
    if dt == np.bool_ or dt.kind == "u":
        return x
    return lax.abs(x)


absolute = _one("absolute", _abs)
abs = absolute
fabs = _one("fabs", lax.abs, inexact=True)


def _sign(x):
    dt = np.dtype(x.dtype)
    if dt == np.bool_:
        return x
    if dt.kind == "c":
        mag = lax.abs(x)
        safe = lax.select(lax.eq(mag, _const(0, mag)), _const(1, mag), mag)
        return lax.select(lax.eq(x, _const(0, x)), x, lax.div(x, convert(safe, dt, x.weak_type)))
    return lax.sign(x)


sign = _one("sign", _sign)
signbit = _one("signbit", lambda x: lax.lt(_copysign(_const(1, x), x), _const(0, x))
               if dtypes.is_float(x.dtype) else lax.lt(x, _const(0, x)))


def _isnan(x):
    return lax.ne(x, x) if dtypes.is_inexact(x.dtype) else _full_bool(x, False)


def _full_bool(x, v):
    b = np.asarray(v)
    return lax.broadcast_in_dim(b, x.shape, ()) if x.shape else lax.scalar_as(v, np.bool_, False)


def _isinf(x):
    if not dtypes.is_inexact(x.dtype):
        return _full_bool(x, False)
    if np.dtype(x.dtype).kind == "c":
        return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), _const(np.inf, x))


def _isfinite(x):
    if not dtypes.is_inexact(x.dtype):
        return _full_bool(x, True)
    if np.dtype(x.dtype).kind == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


isnan = _one("isnan", _isnan)
isinf = _one("isinf", _isinf)
isfinite = _one("isfinite", _isfinite)
isposinf = _one("isposinf", lambda x: lax.eq(x, _const(np.inf, x)) if dtypes.is_float(x.dtype)
                else _full_bool(x, False))
isneginf = _one("isneginf", lambda x: lax.eq(x, _const(-np.inf, x)) if dtypes.is_float(x.dtype)
                else _full_bool(x, False))

real = _one("real", lambda x: lax.real(x) if np.dtype(x.dtype).kind == "c" else x)
imag = _one("imag", lambda x: lax.imag(x) if np.dtype(x.dtype).kind == "c"
            else lax.mul(x, _const(0, x)))
conjugate = _one("conjugate", lambda x: lax.conj(x) if np.dtype(x.dtype).kind == "c" else x)
conj = conjugate


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """``arr`` limited to ``[min, max]`` elementwise (``jax.numpy.clip``); either bound may
    be None."""
    x = arr if arr is not None else a
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    check_arraylike("clip", x)
    if lo is not None:
        x = maximum(lo, x)
    if hi is not None:
        x = minimum(hi, x)
    return x


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y``, broadcasting all three (``jax.numpy.where``).

    With only ``condition``, the indices of its nonzero elements (see ``nonzero``).
    """
    if x is None and y is None:
        from ._sorting import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided "
                         "to jax.numpy.where, got one of them.")
    check_arraylike("where", condition, x, y)
    x, y = promote_dtypes(x, y)
    c = convert(condition, np.bool_) if np.dtype(
        getattr(condition, "dtype", None) or np.asarray(condition).dtype) != np.bool_ \
        else condition
    c, x, y = broadcast_args(c, x, y)
    if all(isinstance(v, PY_SCALARS + (np.ndarray, np.generic)) for v in (c, x, y)):
        from ._util import ensure_array
        x = ensure_array(x)
    return lax.select(c, x, y)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (default: largest finite), -inf -> ``neginf``
    (``jax.numpy.nan_to_num``)."""
    check_arraylike("nan_to_num", x)
    from ._util import ensure_array
    x = ensure_array(x)
    dt = np.dtype(x.dtype)
    if not dtypes.is_inexact(dt):
        return x
    if dt.kind == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(dt)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = lax.select(lax.ne(x, x), _bcast_like(nan, x), x)
    out = lax.select(lax.eq(out, _const(np.inf, x)), _bcast_like(posinf, x), out)
    return lax.select(lax.eq(out, _const(-np.inf, x)), _bcast_like(neginf, x), out)


def _bcast_like(v, x):
    c = lax.scalar_as(v, x.dtype, x.weak_type)
    if not x.shape:
        return c
    from ._util import ensure_array
    return lax.broadcast_in_dim(ensure_array(c) if isinstance(c, PY_SCALARS) else c, x.shape,
                                ())


__all__ = public_names(globals())
