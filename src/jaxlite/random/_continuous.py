"""Closed-form samplers: one uniform or normal draw per sample pushed through a formula
(``jax.random.exponential``, ``laplace``, ``logistic``, ``cauchy``, ``pareto``, ``rayleigh``,
``weibull_min``, ``lognormal``, ``wald``, ``triangular``, ``geometric``, ``rademacher``,
``maxwell``, ``double_sided_maxwell``).

Layer: random (compositions of ``jaxlite.lax`` / ``jaxlite.numpy`` ops; eager and jit).
The bits, their conversion to floats and each formula are JAX 0.10's; logarithms go through
``_math.log``/``log1p`` (XLA's CPU rounding), so formulas made only of those, IEEE
arithmetic and ``sqrt`` give JAX's samples bit for bit.  ``exp``, ``tan`` and ``pow`` are
NumPy's correctly rounded ones where XLA's CPU code differs by up to 2 ulps (float32);
the docstrings state each function's bound.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ._distributions import (_array, _check_shape, _dtype_arg, _is_float, _is_int,
                             _normal_real, _split2, _to, _uniform, bernoulli)
from ._keys import _shape, unpack_key
from ._math import fma, log, log1p


# ---- argument helpers shared by the samplers with parameters ---------------------------

def float_dtype(dtype, name):
    """The sampling dtype: ``dtype`` or the default float; ValueError unless floating."""
    return _dtype_arg(dtype, dtypes.default_float_dtype(), name, _is_float, "a float dtype")


def result_shape(name, shape, *params):
    """``shape`` as a tuple, or the parameters' broadcast shape when ``shape`` is None;
    ValueError unless the parameters broadcast to exactly ``shape``."""
    shapes = [tuple(np.shape(p)) for p in params]
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            raise ValueError(f"{name}: parameter shapes {shapes} do not broadcast "
                             "together") from None
    shape = _shape(shape, name)
    _check_shape(name, shape, *shapes)
    return shape


def check_castable(name, dtype, *params):
    """ValueError (JAX raises its TypePromotionError, a ValueError) for a parameter that
    cannot be converted to the sampling ``dtype`` without JAX's promotion widening it,
    e.g. a complex parameter for a float sampler, or float64 ones into float32 under x64."""
    for p in params:
        p_dtype, weak = dtypes.dtype_and_weak(p)
        p_dtype = np.dtype(p_dtype)
        if dtypes.result_type(p, dtype) != np.dtype(dtype) or (
                p_dtype.kind == "c" and np.dtype(dtype).kind != "c"):
            raise ValueError(f"In arguments to {name}, cannot safely cast argument of type "
                             f"{dtypes.canonicalize_dtype(p_dtype).name} to "
                             f"{np.dtype(dtype).name}")


def param(x, dtype):
    """A distribution parameter as a strongly typed ``dtype`` array."""
    return lax.convert_element_type(_array(x), dtype)


def _start(key, name, dtype, shape):
    raw, _ = unpack_key(key, name)
    return raw, float_dtype(dtype, name), _shape(shape, name)


# ---- parameter-free samplers ----------------------------------------------------------

def _exponential(raw, shape, dt):
    u = _uniform(raw, shape, dt, 0.0, 1.0)
    # 1 - u lies in (0, 1], so the logarithm is finite
    return lax.neg(log1p(lax.neg(u)))


def exponential(key, shape=(), dtype=None):
    """Standard exponential samples ``-log1p(-u)`` (``jax.random.exponential``).

    Args:
      key: a typed key or raw ``uint32[2]`` key.  shape: result shape.
      dtype: a float dtype (default float32, float64 with x64).

    Returns:
      ``dtype[*shape]``, non-negative; JAX's values bit for bit.

    Raises:
      ValueError: a non-float dtype or a batch of keys.  TypeError: not a key.

    Example::

        jax.random.exponential(jax.random.key(0), (3,))
    """
    raw, dt, shape = _start(key, "exponential", dtype, shape)
    return _exponential(raw, shape, dt)


def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples ``sign(u) * log1p(-|u|)``, ``u`` uniform in
    ``(-1, 1)`` (``jax.random.laplace``).

    Args and errors as ``exponential``; JAX's values bit for bit.
    """
    raw, dt, shape = _start(key, "laplace", dtype, shape)
    lo = dt.type(-1.0 + float(dtypes.finfo(dt).epsneg))
    u = _uniform(raw, shape, dt, lo, 1.0)
    return lax.mul(lax.sign(u), log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
    """Standard logistic samples ``log(u) - log1p(-u)``, ``u`` uniform in ``[tiny, 1)``
    (``jax.random.logistic``).

    Args and errors as ``exponential``; JAX's values bit for bit.
    """
    raw, dt, shape = _start(key, "logistic", dtype, shape)
    u = _uniform(raw, shape, dt, dtypes.finfo(dt).tiny, 1.0)
    return lax.sub(log(u), log1p(lax.neg(u)))


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples ``tan(pi * (u - 1/2))``, ``u`` uniform in ``[eps, 1)``
    (``jax.random.cauchy``).

    Args and errors as ``exponential``.  ``tan`` is NumPy's: within 2 ulps of JAX's values
    (float32; float64 within 2 ulps too).
    """
    raw, dt, shape = _start(key, "cauchy", dtype, shape)
    u = _uniform(raw, shape, dt, dtypes.finfo(dt).eps, 1.0)
    return lax.tan(lax.mul(dt.type(np.pi), lax.sub(u, dt.type(0.5))))


def rademacher(key, shape=(), dtype=None):
    """Random signs, -1 or +1 with probability 1/2 each (``jax.random.rademacher``).

    Args:
      key: a typed key or raw key.  shape: result shape.
      dtype: the result dtype (default int32, int64 with x64); any numeric or bool dtype.

    Returns:
      ``dtype[*shape]``; JAX's values exactly (a bernoulli(1/2) draw mapped to +-1; -1
      wraps around in unsigned dtypes and is True in bool, as in JAX).

    Raises:
      TypeError: ``dtype`` is not a dtype.  ValueError: a batch of keys.
    """
    raw, _ = unpack_key(key, "rademacher")
    if dtype is not None:
        try:
            np.dtype(dtype)
        except TypeError:
            raise TypeError(f"rademacher: {dtype!r} is not a dtype") from None
    dt = _dtype_arg(dtype, dtypes.default_int_dtype(), "rademacher",
                    lambda d: d.kind in "iufcb", "a numeric dtype")
    shape = _shape(shape, "rademacher")
    half = dtypes.default_float_dtype().type(0.5)  # JAX's weak 0.5
    b = lax.convert_element_type(bernoulli(raw, half, shape), np.int32)
    # 2b - 1 is exact in every dtype; converting from int32 gives JAX's values, also its
    # wrap-around for unsigned dtypes (255 for uint8) and True for bool
    return lax.convert_element_type(lax.sub(lax.mul(np.int32(2), b), np.int32(1)), dt)


def _maxwell(raw, shape, dt):
    n = _normal_real(raw, shape + (3,), dt)
    x0, x1, x2 = (lax.reshape(lax.slice_in_dim(n, i, i + 1, axis=len(shape)), shape)
                  for i in range(3))
    # the order XLA's CPU reduction usually adds the three squares in (first, last,
    # middle); its vectorised loops do not always keep it, hence the 2-ulp bound
    squares = lax.add(lax.add(lax.mul(x0, x0), lax.mul(x2, x2)), lax.mul(x1, x1))
    return lax.sqrt(squares)


def maxwell(key, shape=(), dtype=None):
    """Maxwell samples: the length of a standard normal 3-vector (``jax.random.maxwell``).

    Args and errors as ``exponential``.  float32: within 2 ulps of JAX's values (most are
    equal; XLA's reduction order over the three squares varies).
    """
    raw, dt, shape = _start(key, "maxwell", dtype, shape)
    return _maxwell(raw, shape, dt)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Samples ``sign * maxwell * scale + loc`` (``jax.random.double_sided_maxwell``).

    Args:
      key: a typed key or raw key.  loc, scale: location and scale (arrays or scalars).
      shape: sample shape; as in JAX the result shape is ``shape`` followed by the
        parameters' broadcast shape (just the latter when ``shape`` is empty).
      dtype: a float dtype.

    Returns:
      Floats of that shape (float32: within 8 ulps of ``max(|x|, 1)`` of JAX's values:
      ``maxwell``'s last bit, then ``+ loc`` may cancel).

    Raises:
      ValueError: a non-float dtype, parameters that do not broadcast, a batch of keys.
    """
    raw, dt, shape = _start(key, "double_sided_maxwell", dtype, shape)
    params_shape = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    shape = params_shape if not shape else shape + params_shape
    k_max, k_sign = _split2(raw)
    mag = _maxwell(k_max, shape, dt)
    sign = rademacher(k_sign, shape, dt)
    signed = lax.mul(sign, mag)
    out_dt = dtypes.result_type(signed, scale, loc)
    signed, scale, loc = (_to(lax.convert_element_type(_array(x), out_dt), shape)
                          for x in (signed, scale, loc))
    return fma(signed, scale, loc)  # XLA contracts the scale-and-shift into one fma


# ---- samplers with parameters -------------------------------------------------------

def pareto(key, b, shape=None, dtype=None):
    """Pareto samples ``exp(e / b)`` with ``e`` standard exponential (``jax.random.pareto``).

    Args:
      key: a typed key or raw key.  b: the shape parameter (broadcasts to ``shape``).
      shape: result shape (default ``b``'s shape).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``, at least 1; within 2 ulps of JAX's values (``exp``).

    Raises:
      ValueError: a non-float dtype, ``b`` not broadcastable to ``shape``, a ``b`` that
      does not cast safely to ``dtype`` (complex), a batch of keys.
    """
    raw, _ = unpack_key(key, "pareto")
    dt = float_dtype(dtype, "pareto")
    shape = result_shape("pareto", shape, b)
    check_castable("pareto", dt, b)
    return lax.exp(lax.div(_exponential(raw, shape, dt), _to(param(b, dt), shape)))


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh samples ``scale * sqrt(-2 log u)`` (``jax.random.rayleigh``).

    Args:
      key: a typed key or raw key.  scale: the scale (broadcasts to ``shape``).
      shape: result shape (default ``scale``'s).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``; JAX's values bit for bit.

    Raises:
      ValueError: as ``pareto``.
    """
    raw, _ = unpack_key(key, "rayleigh")
    dt = float_dtype(dtype, "rayleigh")
    shape = result_shape("rayleigh", shape, scale)
    check_castable("rayleigh", dt, scale)
    u = _uniform(raw, shape, dt, 0.0, 1.0)
    s = _to(param(scale, dt), shape)
    return lax.mul(s, lax.sqrt(lax.mul(log(u), dt.type(-2))))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples ``(-log1p(-u)) ** (1 / concentration) * scale``
    (``jax.random.weibull_min``).

    Args:
      key: a typed key or raw key.  scale, concentration: parameters; as in JAX they are
        broadcast with the samples by NumPy's rules (``jnp`` arithmetic, its promotion).
      shape: sample shape.  dtype: a float dtype.

    Returns:
      Floats of shape ``broadcast(shape, scale, concentration)``; within 2 ulps of JAX's
      values (``pow``).

    Raises:
      ValueError: a non-float dtype, a batch of keys, parameters that do not broadcast.
    """
    raw, dt, shape = _start(key, "weibull_min", dtype, shape)
    u = _uniform(raw, shape, dt, 0.0, 1.0)
    e = lax.neg(log1p(lax.neg(u)))
    return jnp.multiply(jnp.power(e, jnp.divide(1.0, concentration)), scale)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """Log-normal samples ``exp(sigma * n)`` with ``n`` standard normal
    (``jax.random.lognormal``).

    Args:
      key: a typed key or raw key.  sigma: the log-space standard deviation.
      shape: result shape (default ``sigma``'s).  dtype: a float or complex dtype.

    Returns:
      ``dtype[*shape]``; within 2 ulps of JAX's values (``exp``).

    Raises:
      ValueError: a dtype that is neither float nor complex, ``sigma`` not broadcastable
      or not safely castable to ``dtype``, a batch of keys.
    """
    from ._distributions import normal
    raw, _ = unpack_key(key, "lognormal")
    dt = _dtype_arg(dtype, dtypes.default_float_dtype(), "lognormal",
                    lambda d: _is_float(d) or d.kind == "c", "a float or complex dtype")
    shape = result_shape("lognormal", shape, sigma)
    check_castable("lognormal", dt, sigma)
    return lax.exp(lax.mul(normal(raw, shape, dt), _to(param(sigma, dt), shape)))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples with the given mean and unit shape, by Michael,
    Schucany and Haas's transformation of a normal draw and a uniform one
    (``jax.random.wald``).

    Args:
      key: a typed key or raw key.  mean: the mean (broadcasts to ``shape``).
      shape: result shape (default ``mean``'s).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``, positive; float32: JAX's values bit for bit.

    Raises:
      ValueError: as ``pareto``.
    """
    raw, _ = unpack_key(key, "wald")
    dt = float_dtype(dtype, "wald")
    shape = result_shape("wald", shape, mean)
    check_castable("wald", dt, mean)
    k1, k2 = _split2(raw)
    mu = _to(param(mean, dt), shape)
    v = _normal_real(k1, shape, dt)
    z = _uniform(k2, shape, dt, 0.0, 1.0)
    y = lax.mul(v, v)
    mu2 = lax.mul(mu, mu)
    # XLA contracts 4*mu*y + mu2*y**2 and the final subtraction into fused multiply-adds;
    # rounding the same way gives JAX's float32 samples bit for bit
    root = lax.sqrt(fma(lax.mul(dt.type(4), mu), y, lax.mul(mu2, lax.mul(y, y))))
    x = fma(lax.neg(lax.mul(mu, dt.type(0.5))), root,
            lax.add(mu, lax.mul(lax.mul(mu2, y), dt.type(0.5))))
    return lax.select(lax.le(z, lax.div(mu, lax.add(mu, x))), x, lax.div(mu2, x))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on ``[left, right]`` peaking at ``mode``, by inverting the CDF
    (``jax.random.triangular``).

    Args:
      key: a typed key or raw key.  left, mode, right: parameters (broadcast to ``shape``).
      shape: result shape (default the parameters' broadcast shape).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``; JAX's values to within 1 ulp.

    Raises:
      ValueError: as ``pareto``.
    """
    raw, _ = unpack_key(key, "triangular")
    dt = float_dtype(dtype, "triangular")
    shape = result_shape("triangular", shape, left, mode, right)
    check_castable("triangular", dt, left, mode, right)
    lo, md, hi = (_to(param(p, dt), shape) for p in (left, mode, right))
    width = lax.sub(hi, lo)
    fc = lax.div(lax.sub(md, lo), width)
    u = _uniform(raw, shape, dt, 0.0, 1.0)
    below = lax.add(lo, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(md, lo))))
    above = lax.sub(hi, lax.sqrt(lax.mul(lax.mul(lax.sub(dt.type(1), u), width),
                                         lax.sub(hi, md))))
    return lax.select(lax.lt(u, fc), below, above)


def geometric(key, p, shape=None, dtype=None):
    """Geometric samples: the number of Bernoulli(``p``) trials up to the first success,
    ``floor(log u / log1p(-p)) + 1`` (``jax.random.geometric``).

    Args:
      key: a typed key or raw key.  p: success probability (float or int array/scalar; its
        inexact promotion is the sampling dtype).
      shape: result shape (default ``p``'s).  dtype: an integer dtype (default int32,
        int64 with x64).

    Returns:
      ``dtype[*shape]``, at least 1; JAX's values exactly.

    Raises:
      ValueError: a non-integer dtype, ``p`` not broadcastable to ``shape``, a batch of
      keys.  TypeError: ``p`` a list.
    """
    raw, _ = unpack_key(key, "geometric")
    dt = _dtype_arg(dtype, dtypes.default_int_dtype(), "geometric", _is_int,
                    "an int dtype")
    shape = result_shape("geometric", shape, p)
    if isinstance(p, (list, tuple)):
        raise TypeError(f"geometric requires ndarray or scalar arguments, got {type(p)} "
                        "at position 0.")
    p = _array(p)
    pdt = dtypes.to_inexact_dtype(p.dtype)
    p = lax.convert_element_type(p, pdt)
    u = _uniform(raw, shape, pdt, 0.0, 1.0)
    # u == 0 is moved to 1 (JAX does the same; log(0) would give an infinite count)
    u = lax.select(lax.eq(u, pdt.type(0)), lax.broadcast_in_dim(pdt.type(1), shape, ()), u)
    log_q = _to(log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(log(u), log_q)), pdt.type(1))
    return lax.convert_element_type(g, dt)
