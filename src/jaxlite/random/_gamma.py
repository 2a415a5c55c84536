"""Gamma-based samplers: ``jax.random.gamma``, ``loggamma`` and those built on them
(``beta``, ``dirichlet``, ``chisquare``, ``f``, ``t``, ``generalized_normal``, ``ball``).

Layer: random (compositions of ``jaxlite.lax`` ops, ``while_loop`` and ``vmap``).

Each gamma sample is Marsaglia and Tsang's rejection sampler ("A simple method for
generating gamma variables", ACM TOMS 26(3), 2000) run on its own key, exactly as JAX 0.10
runs it: the key is split once per element, each element loops (normal draw, cube, uniform
draw, squeeze test, log test) until it accepts, and shapes below 1 are boosted to
``alpha + 1`` and scaled back by ``u ** (1 / alpha)``.  The accept/reject tests use XLA's
CPU logarithm (``_math.log``) and its fused multiply-adds, so every float32 decision is
JAX's.  The samples agree to a few ulps: XLA evaluates ``(1/3) / sqrt(d)`` as ``(1/3) *
rsqrt(d)`` with the CPU's approximate reciprocal square root (a hardware estimate refined
by a Newton step, not correctly rounded in about a third of cases), which is not
reproduced, and the final ``pow``/``exp`` round as NumPy's.  bfloat16 samples agree in
the tests; in float16 a rare element can take another path (XLA's float16 rounding inside
its fused loops is not reproduced), giving a different, equally valid sample.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes, lax
from ._continuous import check_castable, float_dtype, param, result_shape
from ._distributions import _array, _normal_real, _split2, _to, _uniform
from ._impls import batched_by_loop
from ._keys import _shape, is_threefry, key_at, key_split, split2, unpack_key
from ._math import fma, log, log1p


def _gamma_one(raw, alpha, log_space):
    """One Gamma(``alpha``) sample (or its logarithm) from one typed key; ``alpha`` is a
    0-d float array."""
    dt = np.dtype(alpha.dtype)
    f = dt.type
    boost = lax.ge(alpha, f(1))
    alpha_orig = alpha
    alpha = lax.select(boost, alpha, lax.add(alpha, f(1)))
    d = lax.sub(alpha, f(1.0 / 3.0))
    c = lax.div(f(1.0 / 3.0), lax.sqrt(d))

    def keep_going(state):
        _, x2, v3, u = state
        # XLA evaluates 1 - 0.0331 * x2**2 and x2/2 + d * (1 - v3 + log v3) with fused
        # multiply-adds; the same roundings keep every accept/reject decision JAX's
        squeeze = fma(lax.neg(lax.mul(f(0.0331), x2)), x2, f(1))
        if dt not in (np.float32, np.float64):
            squeeze = lax.sub(f(1), lax.mul(f(0.0331), lax.mul(x2, x2)))
        bound = fma(d, lax.add(lax.sub(f(1), v3), log(v3)), lax.mul(x2, f(0.5)))
        return lax.bitwise_and(lax.ge(u, squeeze), lax.ge(log(u), bound))

    def draw(state):
        key = state[0]
        keys = key_split(key, (3,))
        key, x_key, u_key = (key_at(keys, i) for i in range(3))

        def positive_v(s):
            k, sub = _split2(s[0])
            x = _normal_real(sub, (), dt)
            return k, x, fma(x, c, f(1))

        _, x, v = lax.while_loop(lambda s: lax.le(s[2], f(0)), positive_v,
                                 (x_key, f(0), f(-1)))
        u = _uniform(u_key, (), dt, 0.0, 1.0)
        return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    key, sub = _split2(raw)
    # the initial state fails both tests, so the loop body runs at least once
    _, _, v3, _ = lax.while_loop(keep_going, draw, (key, f(0), f(1), f(2)))
    if log_space:
        e = lax.neg(log1p(lax.neg(_uniform(sub, (), dt, 0.0, 1.0))))
        log_u = lax.neg(e)
        log_boost = lax.select(lax.bitwise_or(boost, lax.eq(log_u, f(0))), f(0),
                               lax.mul(log_u, lax.div(f(1), alpha_orig)))
        return lax.add(lax.add(log(d), log(v3)), log_boost)
    u = lax.sub(f(1), _uniform(sub, (), dt, 0.0, 1.0))
    scale = lax.select(boost, f(1), lax.pow(u, lax.div(f(1), alpha_orig)))
    return lax.mul(lax.mul(d, v3), scale)


def _gamma_samples(data, a, log_space, impl):
    """Samples for every element of the float array ``a``, one split key each, from the
    key with raw ``data`` of implementation ``impl``."""
    from ..transforms.vmap import vmap
    from ._keys import PRNGKeyArray
    raw = PRNGKeyArray(data, impl)
    shape = tuple(a.shape)
    n = math.prod(shape)
    keys = key_split(raw, (n,))
    flat = lax.reshape(a, (n,))
    if n == 0:
        return a

    def one(k, x):
        return _gamma_one(k, x, log_space)
    if is_threefry(raw):
        out = vmap(one)(keys, flat)
    else:
        # as JAX: a loop over the keys, since batching XLA's bit generator would draw every
        # element's bits from the first key (its batching rule); and a batch of keys given
        # to the sampler (vmap) is looped over too, as by JAX's gamma primitive
        with batched_by_loop():
            out = lax.map(lambda kx: one(*kx), (keys, flat))
    return lax.reshape(out, shape)


def _gamma_samples_jvp(log_space, impl, primals, tangents):
    """The reparameterised derivative in ``a`` (JAX's rule for its gamma primitive):
    ``d sample / d a = -(dP(a, x)/da) / p(x; a)`` at the sample, via
    ``lax.random_gamma_grad``; for log samples divided by the sample."""
    data, a = primals
    a_dot = tangents[1]
    out = _gamma_samples(data, a, log_space, impl)
    if log_space:
        x = lax.exp(out)
        dt = np.dtype(x.dtype)
        # exp of a very negative log sample underflows: use the smallest normal instead
        x = lax.select(lax.eq(x, dt.type(0)),
                       lax.broadcast_in_dim(dt.type(dtypes.finfo(dt).tiny), x.shape, ()), x)
        dsample = lax.div(lax.random_gamma_grad(a, x), x)
    else:
        dsample = lax.random_gamma_grad(a, out)
    return out, lax.mul(dsample, a_dot)


def _gamma(raw, a, shape, dt, log_space):
    a = _to(param(a, dt), shape)
    # the key enters the differentiated function as its raw data (an integer input) and its
    # implementation (static)
    return _gamma_diff(raw._base, a, log_space, raw._impl)


def _gamma_args(key, a, shape, dtype, name):
    raw, _ = unpack_key(key, name)
    dt = float_dtype(dtype, "gamma")
    shape = result_shape(name, shape, a)
    return raw, dt, shape


def gamma(key, a, shape=None, dtype=None):
    """Gamma(``a``, 1) samples (``jax.random.gamma``), by Marsaglia and Tsang's rejection
    method on one split key per element.

    Args:
      key: a typed key or raw ``uint32[2]`` key.
      a: shape parameter(s), positive; broadcast to ``shape``.
      shape: result shape (default ``a``'s shape).
      dtype: a float dtype (default float32, float64 with x64).

    Returns:
      ``dtype[*shape]``: the same accept/reject path as JAX for each element, so the
      samples agree with JAX's to a few ulps (float32: 4 ulps for ``a >= 1``; for ``a < 1``
      the boost ``u ** (1/a)`` adds ``pow``'s rounding times ``1/a``).

    Raises:
      ValueError: a non-float dtype, ``a`` not broadcastable to ``shape``, a batch of keys.

    Example::

        jax.random.gamma(jax.random.key(0), 2.0, (3,))
    """
    raw, dt, shape = _gamma_args(key, a, shape, dtype, "gamma")
    return _gamma(raw, a, shape, dt, False)


def loggamma(key, a, shape=None, dtype=None):
    """Logarithms of Gamma(``a``, 1) samples, computed in log space so that small ``a``
    does not underflow to 0 (``jax.random.loggamma``).

    Args and errors as ``gamma``; the same accept/reject path as JAX, the results within a
    few ulps of JAX's (float32: 4 ulps over the tested draws, relative to the larger of the
    value and 1).
    """
    raw, dt, shape = _gamma_args(key, a, shape, dtype, "loggamma")
    return _gamma(raw, a, shape, dt, True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(``a``, ``b``) samples ``Ga / (Ga + Gb)``, from two log-gamma draws scaled by
    their maximum so that small parameters keep their precision (``jax.random.beta``).

    Args:
      key: a typed key or raw key.  a, b: positive parameters (broadcast to ``shape``).
      shape: result shape (default ``a`` and ``b`` broadcast).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]`` in ``[0, 1]``; within a few ulps of JAX's values (float32: 8).

    Raises:
      ValueError: a non-float dtype, parameters not broadcastable to ``shape``, or not
      safely castable to ``dtype`` (complex), a batch of keys.
    """
    raw, _ = unpack_key(key, "beta")
    dt = float_dtype(dtype, "beta")
    check_castable("beta", dt, a, b)
    shape = result_shape("beta", shape, a, b)
    k_a, k_b = _split2(raw)
    log_a = _gamma(k_a, a, shape, dt, True)
    log_b = _gamma(k_b, b, shape, dt, True)
    top = lax.max(log_a, log_b)
    ga = lax.exp(lax.sub(log_a, top))
    gb = lax.exp(lax.sub(log_b, top))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(``alpha``) samples: ``softmax`` of log-gamma draws along the last axis
    (``jax.random.dirichlet``).

    Args:
      key: a typed key or raw key.
      alpha: concentrations, shape ``(..., k)`` with ``ndim >= 1``.
      shape: batch shape (default ``alpha.shape[:-1]``), broadcast-compatible with it.
      dtype: a float dtype.

    Returns:
      ``dtype[*shape, k]`` on the simplex; within a few ulps of JAX's values.

    Raises:
      ValueError: ``alpha.ndim == 0``, a non-float dtype, a batch shape that ``alpha``'s
      does not broadcast to, a batch of keys.

    Example::

        jax.random.dirichlet(jax.random.key(0), jnp.array([1.0, 2.0, 3.0]))  # sums to 1
    """
    from .. import nn
    raw, _ = unpack_key(key, "dirichlet")
    dt = float_dtype(dtype, "dirichlet")
    alpha = _array(alpha)
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{alpha.ndim}")
    batch = tuple(alpha.shape[:-1])
    shape = batch if shape is None else result_shape("dirichlet", shape, np.empty(batch))
    full = shape + tuple(alpha.shape[-1:])
    return nn.softmax(_gamma(raw, alpha, full, dt, True), axis=-1)


def _chisquare(raw, df, shape, dt):
    half = lax.div(param(df, dt), dt.type(2))
    return lax.mul(lax.exp(_gamma(raw, half, shape, dt, True)), dt.type(2))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square samples with ``df`` degrees of freedom, ``2 * Gamma(df / 2)`` drawn in log
    space (``jax.random.chisquare``).

    Args:
      key: a typed key or raw key.  df: degrees of freedom (broadcast to ``shape``).
      shape: result shape (default ``df``'s).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``; within a few ulps of JAX's values.

    Raises:
      ValueError: as ``beta``.
    """
    raw, _ = unpack_key(key, "chisquare")
    dt = float_dtype(dtype, "chisquare")
    shape = result_shape("chisquare", shape, df)
    check_castable("chisquare", dt, df)
    return _chisquare(raw, df, shape, dt)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution samples ``(X1 / dfnum) / (X2 / dfden)`` from two chi-square draws
    (``jax.random.f``).

    Args:
      key: a typed key or raw key.  dfnum, dfden: degrees of freedom (broadcast to
        ``shape``).  shape: result shape (default their broadcast).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``; within a few ulps of JAX's values.

    Raises:
      ValueError: as ``beta``.
    """
    raw, _ = unpack_key(key, "f")
    dt = float_dtype(dtype, "f")
    shape = result_shape("f", shape, dfnum, dfden)
    check_castable("f", dt, dfnum, dfden)
    k_den, k_num = _split2(raw)
    num = lax.div(_chisquare(k_num, dfnum, shape, dt), _to(param(dfnum, dt), shape))
    den = lax.div(_chisquare(k_den, dfden, shape, dt), _to(param(dfden, dt), shape))
    return lax.div(num, den)


def t(key, df, shape=None, dtype=None):
    """Student's t samples ``n * sqrt((df/2) / g)``, ``n`` normal and ``g`` Gamma(df/2)
    (``jax.random.t``).

    Args:
      key: a typed key or raw key.  df: degrees of freedom (broadcast to ``shape``).
      shape: result shape (default ``df``'s).  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``; within a few ulps of JAX's values.

    Raises:
      ValueError: as ``beta``.
    """
    raw, _ = unpack_key(key, "t")
    dt = float_dtype(dtype, "t")
    shape = result_shape("t", shape, df)
    check_castable("t", dt, df)
    k_n, k_g = _split2(raw)
    n = _normal_real(k_n, shape, dt)
    half = _to(lax.div(param(df, dt), dt.type(2)), shape)
    g = _gamma(k_g, half, shape, dt, False)
    return lax.mul(n, lax.sqrt(lax.div(half, g)))


def _static_float(p, name, what="p"):
    try:
        return float(p)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a concrete float (it fixes the gamma "
                        f"shape 1/{what}), got {p!r}") from None


def _generalized_normal(raw, p, shape, dt):
    from ._continuous import rademacher
    k_g, k_r = split2(raw)
    g = _gamma(k_g, lax.div(dt.type(1), param(p, dt)), shape, dt, False)
    r = rademacher(k_r, shape, dt)
    return lax.mul(r, lax.pow(g, _to(lax.div(dt.type(1), param(p, dt)), shape)))


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal samples, density proportional to ``exp(-|x|**p)``: a random sign
    times ``Gamma(1/p) ** (1/p)`` (``jax.random.generalized_normal``).

    Args:
      key: a typed key or raw key.  p: the exponent (a scalar; 2 gives a normal with
        variance 1/2, 1 a Laplace).  shape: result shape.  dtype: a float dtype.

    Returns:
      ``dtype[*shape]``; within a few ulps of JAX's values.

    Raises:
      ValueError: a non-float dtype or a batch of keys.
    """
    raw, _ = unpack_key(key, "generalized_normal")
    dt = float_dtype(dtype, "generalized_normal")
    shape = _shape(shape, "generalized_normal")
    return _generalized_normal(raw, p, shape, dt)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit ``p``-norm ball of dimension ``d``: generalized normal
    coordinates over ``(sum |g|**p + e) ** (1/p)`` with ``e`` exponential
    (``jax.random.ball``).

    Args:
      key: a typed key or raw key.  d: the dimension (a concrete int).  p: the norm's
        exponent.  shape: batch shape.  dtype: a float dtype.

    Returns:
      ``dtype[*shape, d]``; within a few ulps of JAX's values.

    Raises:
      TypeError: ``d`` not an integer.  ValueError: a non-float dtype, a batch of keys.
    """
    import operator
    from ._continuous import _exponential
    raw, _ = unpack_key(key, "ball")
    dt = float_dtype(dtype, "ball")
    shape = _shape(shape, "ball")
    d = operator.index(d)
    k1, k2 = split2(raw)
    g = _generalized_normal(k1, p, shape + (d,), dt)
    e = _exponential(k2, shape, dt)
    pp = param(p, dt)
    total = lax.add(lax.reduce_sum(lax.pow(lax.abs(g), _to(pp, g.shape)), (len(shape),)), e)
    radius = lax.pow(total, _to(lax.div(dt.type(1), pp), shape))
    return lax.div(g, lax.broadcast_in_dim(radius, shape + (d,), tuple(range(len(shape)))))


def _make_gamma_diff():
    from ..transforms.autodiff import custom_jvp
    fn = custom_jvp(_gamma_samples, nondiff_argnums=(2, 3))
    fn.defjvp(_gamma_samples_jvp)
    return fn


_gamma_diff = _make_gamma_diff()
