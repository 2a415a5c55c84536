"""Samplers (``jax.random.bits``, ``uniform``, ``normal``, ...) built on the key's random bits.

Layer: random (compositions of ``jaxlite.lax`` / ``jaxlite.numpy`` ops; eager and jit).
Each sampler draws exactly the bits JAX 0.10 draws for the same key and turns them into
numbers by the same arithmetic, rounded as XLA on CPU rounds it (fused multiply-adds, its
float32 log/log1p: see ``_math``), so results match JAX bit for bit.  Known exceptions:
``truncated_normal`` in float32 goes through ``erf``, whose XLA rounding is not reproduced
(a few ulps in the bounds); float64 ``normal`` is within 2 ulps (XLA's double ``log`` is
not reproduced inside ``erf_inv``).
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import dtypes, errors, lax
from .._traceback import user_stacklevel as _user_stacklevel
from .. import numpy as jnp
from ..core.array import ArrayImpl
from ..core.trace import Tracer
from ._keys import _shape, key_bits, split2, unpack_key
from ._math import erf_inv, fma, log, log1p

_UINT_BY_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
                 64: np.dtype(np.uint64)}


# ---- argument helpers -----------------------------------------------------------------

def _dtype_arg(dtype, default, name: str, ok, what: str) -> np.dtype:
    """The canonical dtype for a sampler's ``dtype`` argument; ValueError unless ``ok``."""
    if dtype is None:
        return default
    try:
        requested = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"dtype argument to `{name}` must be {what}, got {dtype!r}") from None
    if not ok(requested):
        raise ValueError(f"dtype argument to `{name}` must be {what}, got {requested.name}")
    canon = dtypes.canonicalize_dtype(requested)
    if canon != requested:
        warnings.warn(f"{name}: dtype {requested.name} was asked for but is unavailable, so "
                      f"{canon.name} is used instead (64-bit types are off; "
                      "enable them with jaxlite.config.update('jax_enable_x64', True)).",
                      UserWarning, stacklevel=_user_stacklevel())
    return canon


def _is_float(dt) -> bool:
    return dtypes.issubdtype(dt, np.floating)


def _is_int(dt) -> bool:
    return dtypes.issubdtype(dt, np.integer)


def _array(x):
    if isinstance(x, (ArrayImpl, Tracer)):
        return x
    if isinstance(x, (list, tuple)):
        raise TypeError(f"expected an array or a scalar, got {type(x)}")
    return jnp.asarray(x)


def _check_shape(name: str, shape: tuple, *param_shapes, error=ValueError) -> None:
    """Raises unless the parameters broadcast to exactly ``shape`` (JAX's messages)."""
    if not param_shapes:
        return
    shapes = [tuple(shape)] + [tuple(s) for s in param_shapes]
    try:
        result = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise error(f"Incompatible shapes {shapes} for {name}: they have no common "
                    f"broadcast shape") from None
    if result != tuple(shape):
        raise ValueError(f"{name}: the parameters broadcast to shape {result}, which is not "
                         f"the requested shape {tuple(shape)}; parameter shapes have to be "
                         f"broadcast-compatible with shape and broadcast to exactly it.")


def _full(value, shape, dtype):
    return lax.broadcast_in_dim(np.dtype(dtype).type(value), tuple(shape), ())


def _to(x, shape):
    """``x`` broadcast to ``shape`` (NumPy rules)."""
    return jnp.broadcast_to(x, tuple(shape))


def _split2(key):
    """The two keys of ``split(key)`` (one typed key in, two out)."""
    return split2(key)


# ---- bits and uniform -----------------------------------------------------------------

def bits(key, shape=(), dtype=None):
    """Uniformly random unsigned integers (``jax.random.bits``).

    Args:
      key: a typed key or raw ``uint32[2]`` key.
      shape: result shape (int or tuple of ints).
      dtype: uint8, uint16, uint32 (default) or uint64 (x64 only; else truncated with a
        warning).

    Returns:
      ``uint[*shape]``: for a threefry2x32 key element ``i`` (row-major) is the Threefry
      hash of counter ``i``, the two output words xor-ed (truncated to the width), or
      joined for 64 bits; for rbg and unsafe_rbg keys XLA's bit generator's bits.

    Raises:
      ValueError: a non-unsigned dtype, a negative dimension or a batch of keys.
      TypeError: ``key`` is not a key.

    Example::

        jax.random.bits(jax.random.key(0), (3,))   # [4070199207 4202968722 1427181096]
    """
    raw, _ = unpack_key(key, "bits")
    dt = _dtype_arg(dtype, dtypes.default_uint_dtype(), "bits",
                    lambda d: dtypes.issubdtype(d, np.unsignedinteger), "an unsigned int dtype")
    return key_bits(raw, dt.itemsize * 8, _shape(shape, "bits"))


def _uniform_bits_to_float(raw, shape, dtype):
    """Floats in [0, 1) of ``dtype``: random significand bits under the exponent of 1.0,
    minus 1.  The bits come from the narrowest width that holds the significand."""
    nmant = int(dtypes.finfo(dtype).nmant)
    nbits = next(b for b in (8, 16, 32, 64) if b >= nmant)
    width = np.dtype(dtype).itemsize * 8
    u = _UINT_BY_BITS[width]
    r = key_bits(raw, nbits, shape)
    if nbits != width:
        r = lax.convert_element_type(r, u)
    one_bits = int(np.array(1.0, dtype).view(u))
    mant = lax.shift_right_logical(r, u.type(nbits - nmant))
    floats = lax.bitcast_convert_type(lax.bitwise_or(mant, u.type(one_bits)), dtype)
    return lax.sub(floats, np.dtype(dtype).type(1.0))


def _is_static(x, value) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and x == value


def _uniform(raw, shape, dtype, minval, maxval):
    if _is_static(minval, 0) and _is_static(maxval, 1):
        return _uniform_bits_to_float(raw, shape, dtype)  # [0, 1): the scaling is exact
    minval = lax.convert_element_type(_array(minval), dtype)
    maxval = lax.convert_element_type(_array(maxval), dtype)
    _check_shape("uniform", shape, minval.shape, maxval.shape, error=TypeError)
    lo, hi = _to(minval, shape), _to(maxval, shape)
    floats = _uniform_bits_to_float(raw, shape, dtype)
    # XLA fuses the scale-and-shift into one fma (float32/64); fma() rounds the same way
    return lax.max(lo, fma(floats, lax.sub(hi, lo), lo))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)`` (``jax.random.uniform``).

    Args:
      key: a typed key or raw ``uint32[2]`` key.
      shape: result shape; ``minval``/``maxval`` must broadcast to it.
      dtype: a float dtype (default float32, float64 with x64).
      minval, maxval: bounds (scalars or arrays), converted to ``dtype``.

    Returns:
      ``dtype[*shape]``; never below ``minval``.

    Raises:
      ValueError: a non-float dtype or a batch of keys; TypeError/ValueError: bounds whose
      shapes do not broadcast to ``shape``.

    Example::

        jax.random.uniform(jax.random.key(0), (2,))   # [0.947667   0.9785799]
    """
    raw, _ = unpack_key(key, "uniform")
    dt = _dtype_arg(dtype, dtypes.default_float_dtype(), "uniform", _is_float,
                    "a float dtype")
    return _uniform(raw, _shape(shape, "uniform"), dt, minval, maxval)


# ---- normal family --------------------------------------------------------------------

def _normal_real(raw, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(raw, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(np.array(np.sqrt(2), dtype)[()], erf_inv(u))


def normal(key, shape=(), dtype=None):
    """Standard normal samples (``jax.random.normal``): ``sqrt(2) * erf_inv(u)`` with ``u``
    uniform in ``(-1, 1)``; complex dtypes draw real and imaginary parts from two split keys,
    each with variance 1/2.

    Args:
      key: a typed key or raw key.  shape: result shape.  dtype: float or complex dtype.

    Raises:
      ValueError: a dtype that is neither float nor complex, or a batch of keys.

    Example::

        jax.random.normal(jax.random.key(0), (3,))
    """
    raw, _ = unpack_key(key, "normal")
    dt = _dtype_arg(dtype, dtypes.default_float_dtype(), "normal",
                    lambda d: _is_float(d) or dtypes.issubdtype(d, np.complexfloating),
                    "a float or complex dtype")
    shape = _shape(shape, "normal")
    if dt.kind == "c":
        real_dt = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        k_re, k_im = _split2(raw)
        # XLA divides (re + i im) by the real sqrt(2) as Smith's algorithm does: each part
        # times the rounded reciprocal; done on the real parts so that the rounding does
        # not depend on how lax's complex division is evaluated
        inv = real_dt.type(1) / real_dt.type(np.sqrt(2))
        re = lax.mul(_normal_real(k_re, shape, real_dt), inv)
        im = lax.mul(_normal_real(k_im, shape, real_dt), inv)
        return lax.complex(re, im)
    return _normal_real(raw, shape, dt)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal samples truncated to ``(lower, upper)`` (``jax.random.truncated_normal``), by
    inverting the CDF between ``erf(lower/sqrt 2)`` and ``erf(upper/sqrt 2)``.

    Args:
      key: a typed key or raw key.  lower, upper: bounds (broadcast to ``shape``).
      shape: result shape (default: the bounds' broadcast shape).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]`` strictly inside ``(lower, upper)``.

    Raises:
      ValueError: a non-float dtype, bounds not broadcastable to ``shape``, a batch of keys.
    """
    raw, _ = unpack_key(key, "truncated_normal")
    dt = _dtype_arg(dtype, dtypes.default_float_dtype(), "truncated_normal", _is_float,
                    "a float dtype")
    lower = lax.convert_element_type(_array(lower), dt)
    upper = lax.convert_element_type(_array(upper), dt)
    if shape is None:
        shape = tuple(np.broadcast_shapes(lower.shape, upper.shape))
    else:
        shape = _shape(shape, "truncated_normal")
        _check_shape("truncated_normal", shape, lower.shape, upper.shape)
    sqrt2 = dt.type(np.sqrt(2))
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    out = lax.mul(sqrt2, erf_inv(_uniform(raw, shape, dt, a, b)))
    lo = lax.nextafter(lax.stop_gradient(lower), _full(np.inf, lower.shape, dt))
    hi = lax.nextafter(lax.stop_gradient(upper), _full(-np.inf, upper.shape, dt))
    return lax.min(_to(hi, shape), lax.max(_to(lo, shape), out))


# ---- gumbel, bernoulli, categorical ---------------------------------------------------

def _u64_fraction_to_f32(hi, lo):
    """float32 in (0, 1) from the 64-bit fixed-point fraction ``hi:lo / 2**64`` (two uint32
    arrays), truncated to 24 significant bits: the leading zero count sets the exponent,
    the next 23 bits the significand (a uniform far below 2**-32 keeps its precision)."""
    u32 = np.dtype(np.uint32)
    hz, lz = lax.clz(hi), lax.clz(lo)
    hi_empty = lax.eq(hz, u32.type(32))
    # the 32 bits after the leading zeros, left-aligned (shifts of 32 give 0, as XLA's)
    top = lax.bitwise_or(lax.shift_left(hi, hz), lax.select(
        hi_empty, lax.shift_left(lo, lz), lax.shift_right_logical(lo, lax.sub(
            _full(32, hi.shape, u32), hz))))
    mant = lax.bitwise_and(lax.shift_right_logical(top, u32.type(8)), u32.type(0x7FFFFF))
    zeros = lax.select(hi_empty, lax.add(lz, u32.type(32)), hz)
    # a value with n leading zeros lies in [2**-(n+1), 2**-n): biased exponent 126 - n
    expo = lax.bitwise_and(lax.shift_left(lax.sub(_full(126, hi.shape, u32), zeros),
                                          u32.type(23)), u32.type(0x3FC00000))
    return lax.bitcast_convert_type(lax.bitwise_or(expo, mant), np.dtype(np.float32))


def _gumbel_highest_f32(raw, shape):
    """float32 Gumbel samples from one 64-bit uniform each (JAX's ``mode="highest"``): below
    1/2 ``-log(-log1p(-u))``; from 1/2 on the complement ``1 - u``, exact in 64-bit fixed
    point, goes through ``-log(-log(.))``, so both tails keep full float32 resolution."""
    u32 = np.dtype(np.uint32)
    b = key_bits(raw, 32, (2,) + shape)
    hi = lax.reshape(lax.slice_in_dim(b, 0, 1), shape)
    lo = lax.reshape(lax.slice_in_dim(b, 1, 2), shape)
    # 2**64 - (hi:lo): the bitwise complement plus one, the carry moving into the high word
    n_lo = lax.bitwise_not(lo)
    n_hi = lax.add(lax.bitwise_not(hi), lax.convert_element_type(
        lax.eq(n_lo, u32.type(0xFFFFFFFF)), u32))
    n_lo = lax.add(n_lo, u32.type(1))
    below_half = lax.lt(hi, u32.type(1 << 31))
    x = _u64_fraction_to_f32(lax.select(below_half, hi, n_hi), lax.select(below_half, lo, n_lo))
    return lax.select(below_half, lax.neg(log(lax.neg(log1p(lax.neg(x))))),
                      lax.neg(log(lax.neg(log(x)))))


def _gumbel(raw, shape, dtype, mode):
    if mode == "highest" and dtype == np.float32:
        return _gumbel_highest_f32(raw, shape)
    if mode in ("high", "highest"):
        u = _uniform(raw, (2,) + shape, dtype, 0.0, 1.0)
        u0 = lax.reshape(lax.slice_in_dim(u, 0, 1), shape)
        u1 = lax.reshape(lax.slice_in_dim(u, 1, 2), shape)
        fi = dtypes.finfo(dtype)
        # below 1/2 the two uniforms together give the low-order bits one uniform lacks
        low = lax.add(fma(_full(fi.eps, shape, dtype), u1, u0), dtype.type(fi.tiny))
        v = lax.select(lax.ge(u0, dtype.type(0.5)), u0, low)
        return lax.neg(log(lax.neg(log1p(lax.neg(v)))))
    u = _uniform(raw, shape, dtype, dtypes.finfo(dtype).tiny, 1.0)
    return lax.neg(log(lax.neg(log(u))))


def _mode_arg(mode, name):
    if mode is None:
        return "low"
    if name == "gumbel" and mode == "highest":
        return mode
    if mode not in ("high", "low"):
        if name == "gumbel":
            raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    return mode


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel samples ``-log(-log(u))`` (``jax.random.gumbel``).

    Args:
      key: a typed key or raw key.  shape: result shape.  dtype: a float dtype.
      mode: ``"low"`` (default), ``"high"`` (two uniforms per sample, for a larger range)
        or ``"highest"`` (float32: one 64-bit uniform per sample; other dtypes: as "high").

    Raises:
      ValueError: a non-float dtype, an unknown mode, a batch of keys.
    """
    raw, _ = unpack_key(key, "gumbel")
    mode = _mode_arg(mode, "gumbel")
    dt = _dtype_arg(dtype, dtypes.default_float_dtype(), "gumbel", _is_float, "a float dtype")
    return _gumbel(raw, _shape(shape, "gumbel"), dt, mode)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p`` (``jax.random.bernoulli``).

    Args:
      key: a typed key or raw key.
      p: probability (float scalar or array; its dtype is the sampling dtype).
      shape: result shape (default ``p.shape``); ``p`` must broadcast to it.
      mode: ``"low"`` (one uniform per sample) or ``"high"`` (two, exact for tiny ``p``).

    Raises:
      TypeError: ``p`` not floating.  ValueError: bad mode or shapes, a batch of keys.
    """
    raw, _ = unpack_key(key, "bernoulli")
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    p = _array(p)
    dt = np.dtype(p.dtype)
    if not _is_float(dt):
        raise TypeError(f"bernoulli: p is a probability, so it needs a floating dtype, not "
                        f"{dt.name}")
    p = lax.convert_element_type(p, dt)  # drops a Python float's weak type
    if shape is None:
        shape = tuple(p.shape)
    else:
        shape = _shape(shape, "bernoulli")
        _check_shape("bernoulli", shape, p.shape)
    p = _to(p, shape)
    if mode == "high":
        u = _uniform(raw, (2,) + shape, dt, 0.0, 1.0)
        u0 = lax.reshape(lax.slice_in_dim(u, 0, 1), shape)
        u1 = lax.reshape(lax.slice_in_dim(u, 1, 2), shape)
        return lax.lt(lax.mul(u1, dt.type(dtypes.finfo(dt).eps)), lax.sub(p, u0))
    return lax.lt(_uniform(raw, shape, dt, 0.0, 1.0), p)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples of category indices with probabilities ``softmax(logits, axis)``
    (``jax.random.categorical``), by the Gumbel-max trick (Gumbel-top-k without
    replacement).

    Args:
      key: a typed key or raw key.
      logits: float array; ``axis`` holds one distribution's unnormalised log-probabilities.
      shape: result shape (default: ``logits`` without ``axis``); its trailing dimensions
        must broadcast with that batch shape, leading ones count samples.
      replace: False draws distinct categories (at most ``logits.shape[axis]`` samples).
      mode: the Gumbel sampler's mode (``"low"``/``"high"``/``"highest"``).

    Returns:
      int32 (int64 with x64) array of ``shape``.

    Raises:
      ValueError: shapes that do not fit, too many samples without replacement, a non-float
      ``logits`` dtype.  IndexError: ``axis`` out of range.
    """
    raw, _ = unpack_key(key, "categorical")
    mode = _mode_arg(mode, "gumbel")
    logits = _array(logits)
    dt = np.dtype(logits.dtype)
    if not _is_float(dt):
        raise ValueError(f"categorical: logits need a float dtype (they are added to gumbel "
                         f"noise), not {dt.name}")
    nd = logits.ndim
    axis = operator.index(axis)
    if not -nd <= axis < nd:
        raise IndexError(f"categorical: axis {axis} is out of bounds for logits of shape "
                         f"{tuple(logits.shape)}")
    axis %= nd
    batch = tuple(logits.shape[:axis]) + tuple(logits.shape[axis + 1:])
    if shape is None:
        shape = batch
    else:
        shape = _shape(shape, "categorical")
        _check_shape("categorical", shape, batch)
    prefix = shape[:len(shape) - len(batch)]
    full = list(shape[len(prefix):])
    full.insert(axis, logits.shape[axis])
    full = tuple(full)
    index_dtype = dtypes.default_int_dtype()
    if replace:
        noise = _gumbel(raw, prefix + full, dt, mode)
        scores = lax.add(noise, _to(logits, prefix + full))
        return lax.argmax(scores, axis + len(prefix), index_dtype)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits.shape[axis]}).")
    scores = lax.add(_to(logits, full), _gumbel(raw, full, dt, mode))
    _, idx = lax.top_k(jnp.moveaxis(scores, axis, -1), k)
    idx = jnp.moveaxis(idx, -1, 0)
    return lax.convert_element_type(lax.reshape(idx, shape), index_dtype)


# ---- integers -------------------------------------------------------------------------

def _clip_convert(x, dtype):
    """``x`` (an integer array) clipped to the range of ``dtype`` and converted to it."""
    src, dst = np.iinfo(x.dtype), np.iinfo(dtype)
    lo, hi = max(src.min, dst.min), min(src.max, dst.max)
    sdt = np.dtype(x.dtype)
    x = lax.min(lax.max(x, sdt.type(lo)), sdt.type(hi))
    return lax.convert_element_type(x, dtype)


def _int_bound(v, dtype):
    """A randint bound as an integer array: floats are truncated toward zero in ``dtype``."""
    v = _array(v)
    if not _is_int(v.dtype):
        v = lax.convert_element_type(v, dtype)
    return lax.convert_element_type(v, v.dtype)  # strong type


def _randint(raw, shape, minval, maxval, dtype):
    """Integers in ``[minval, maxval)`` for a 32/64-bit ``dtype``."""
    info = np.iinfo(dtype)
    nbits = info.bits
    udt = _UINT_BY_BITS[nbits]
    mv_info = np.iinfo(maxval.dtype)
    # maxval above dtype's range: the span then is one more than dtype can count
    too_big = lax.gt(maxval, np.dtype(maxval.dtype).type(min(info.max, mv_info.max)))
    minval = _clip_convert(minval, dtype)
    maxval = _clip_convert(maxval, dtype)
    _check_shape("randint", shape, minval.shape, maxval.shape)
    lo, hi = _to(minval, shape), _to(maxval, shape)
    k1, k2 = _split2(raw)
    higher = key_bits(k1, nbits, shape)
    lower = key_bits(k2, nbits, shape)
    empty = lax.le(hi, lo)
    span = lax.select(empty, _full(1, shape, udt),
                      lax.convert_element_type(lax.sub(hi, lo), udt))
    span = lax.select(lax.bitwise_and(_to(too_big, shape), lax.bitwise_not(empty)),
                      lax.add(span, udt.type(1)), span)
    # (2**(nbits/2) mod span)**2 mod span, with the products wrapping as unsigned ints
    mult = lax.rem(_full(2 ** (nbits // 2), shape, udt), span)
    mult = lax.rem(lax.mul(mult, mult), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(lo, lax.convert_element_type(offset, dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)`` (``jax.random.randint``).

    Args:
      key: a typed key or raw key.  shape: result shape.
      minval, maxval: bounds broadcastable to ``shape``, clipped to ``dtype``'s range
        (``maxval`` may be one past its largest value, e.g. 256 for uint8); where
        ``maxval <= minval`` the result is ``minval``.
      dtype: an integer dtype (default int32, int64 with x64).

    Returns:
      ``dtype[*shape]``.

    Raises:
      TypeError: a non-integer dtype.  ValueError: bounds not broadcastable to ``shape``.
      OverflowError: a Python int bound that does not fit the default integer type.
    """
    raw, _ = unpack_key(key, "randint")
    return _randint_checked(raw, shape, minval, maxval, dtype)


def _randint_checked(raw, shape, minval, maxval, dtype):
    dt = dtypes.default_int_dtype() if dtype is None else np.dtype(dtype)
    if not _is_int(dt):
        raise TypeError(f"randint only accepts integer dtypes, got {dt.name}")
    dt = dtypes.canonicalize_dtype(dt)
    shape = _shape(shape, "randint")
    work = dt if dt.itemsize >= 4 else np.dtype(np.int32)
    minval = _int_bound(minval, work)
    maxval = _int_bound(maxval, work)
    if dt.itemsize < 4:
        # narrow types are drawn in int32; maxval may reach one past the type's maximum
        info = dtypes.iinfo(dt)
        minval = _clip_convert(minval, work)
        maxval = _clip_convert(maxval, work)
        minval = lax.min(lax.max(minval, np.int32(info.min)), np.int32(info.max))
        maxval = lax.min(lax.max(maxval, np.int32(info.min)), np.int32(info.max + 1))
        return lax.convert_element_type(_randint(raw, shape, minval, maxval, work), dt)
    return _randint(raw, shape, minval, maxval, dt)


# ---- permutations and choice ----------------------------------------------------------

def _shuffle(raw, x, axis):
    """``x`` shuffled along ``axis`` by sorting on random 32-bit keys; enough rounds that
    ties among ``x.size`` keys are unlikely (3 * log(size) / log(2**32 - 1) rounds)."""
    size = math.prod(x.shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        raw, sub = _split2(raw)
        sort_keys = key_bits(sub, 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def _concrete_int(x, name, what):
    """A Python int from ``x``.  A static value is needed (it decides the result's shape),
    so an abstract traced one raises ConcretizationTypeError, as JAX's."""
    if isinstance(x, Tracer):
        try:
            return operator.index(x)
        except errors.TracerIntegerConversionError:
            raise errors.ConcretizationTypeError(
                x, f"The problem arose with the argument {what} of jax.random.{name}(): it "
                   f"sets the result's shape, so it must be static.") from None
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an integer, got {x!r}") from None


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``
    (``jax.random.permutation``).

    Args:
      key: a typed key or raw key.
      x: an int (or 0-d integer array), or an array of rank >= 1.
      axis: the axis to permute.
      independent: permute each slice along ``axis`` on its own instead of moving whole
        slices together.

    Raises:
      TypeError: a non-integer scalar ``x`` or a list.  ValueError: ``axis`` out of range.
    """
    raw, _ = unpack_key(key, "permutation")
    if isinstance(x, (list, tuple)):
        raise TypeError(f"permutation requires ndarray or scalar arguments, got {type(x)} "
                        "at position 0.")
    if isinstance(x, (int, np.integer)) or (np.ndim(x) == 0 and hasattr(x, "dtype")
                                           and _is_int(x.dtype)):
        n = _concrete_int(x, "permutation", "x")
        _canon_axis(axis, 1)    # the range is one-dimensional: JAX checks axis against it
        return _shuffle(raw, lax.iota(dtypes.default_int_dtype(), max(n, 0)), 0)
    x = _array(x)
    if x.ndim == 0:
        raise TypeError(f"permutation: x is a 0-d {x.dtype} array; pass an integer (the "
                        f"range size) or an array with ndim >= 1")
    axis = _canon_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(raw, x, axis)
    ind = _shuffle(raw, lax.iota(dtypes.default_int_dtype(), x.shape[axis]), 0)
    return jnp.take(x, ind, axis=axis, unique_indices=True)


def _canon_axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random samples from ``a`` (or ``arange(a)``) along ``axis`` (``jax.random.choice``).

    Args:
      key: a typed key or raw key.
      a: an int, a 0-d array (meaning ``arange(a)``) or an array.
      shape: a tuple: the sample shape, inserted at ``axis`` of ``a``.
      replace: with (default) or without replacement.
      p: optional probabilities of ``a``'s entries (1-D, ``a.shape[axis]`` long).
      axis: the axis of ``a`` to sample along.
      mode: the Gumbel sampler's mode for ``p`` without replacement.

    Raises:
      TypeError: ``shape`` not a sequence, ``a`` a list.  ValueError: an empty population,
      more samples than the population without replacement, a ``p`` of the wrong shape,
      ``axis`` out of range.
    """
    raw, _ = unpack_key(key, "choice")
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"choice: shape must be a tuple or list of sizes, not {shape!r}")
    shape = _shape(tuple(shape), "choice")
    if isinstance(a, (list, tuple)):
        raise TypeError(f"choice requires ndarray or scalar arguments, got {type(a)} at "
                        "position 0.")
    arr = _array(a)
    if arr.ndim == 0:
        n_inputs = _concrete_int(arr if isinstance(arr, Tracer) else int(arr), "choice", "a")
    else:
        axis = _canon_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, arr.dtype)  # JAX's shape: the sample shape alone
    if n_inputs <= 0:
        raise ValueError("choice: a is empty (nothing to draw from), which is only allowed "
                         "when the sample is empty too")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    index_dtype = dtypes.default_int_dtype()
    if p is None:
        if replace:
            ind = _randint_checked(raw, shape, 0, n_inputs, None)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(raw, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=0 if arr.ndim == 0 else axis)
    else:
        p = _array(p)
        if tuple(p.shape) != (n_inputs,):
            raise ValueError(f"choice: p needs one probability per candidate, i.e. shape "
                             f"({n_inputs},) for a.shape[axis]={n_inputs}, but p has shape "
                             f"{tuple(p.shape)}")
        if replace:
            p_cuml = jnp.cumsum(p)
            fdt = np.dtype(p_cuml.dtype) if _is_float(p_cuml.dtype) else \
                dtypes.default_float_dtype()
            total = lax.convert_element_type(lax.reshape(lax.slice(p_cuml, (n_inputs - 1,),
                                                                   (n_inputs,)), ()), fdt)
            u = _uniform(raw, shape, fdt, 0.0, 1.0)
            r = lax.mul(total, lax.sub(fdt.type(1.0), u))
            ind = lax.convert_element_type(jnp.searchsorted(p_cuml, r), index_dtype)
        else:
            pdt = np.dtype(p.dtype) if _is_float(p.dtype) else dtypes.default_float_dtype()
            g = lax.add(_gumbel(raw, (n_inputs,), pdt, _mode_arg(mode, "gumbel")),
                        log(lax.convert_element_type(p, pdt)))
            ind = lax.convert_element_type(lax.top_k(g, n_draws)[1], index_dtype)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else \
        tuple(arr.shape[:axis]) + shape + tuple(arr.shape[axis + 1:])
    return lax.reshape(result, out_shape)
