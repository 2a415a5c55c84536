"""``jaxlite.nn.initializers``: weight initializers (``jax.nn.initializers``).

Layer: public API over ``jaxlite.random`` and ``jaxlite.numpy``.  An initializer is a
function ``init(key, shape, dtype=None, out_sharding=None) -> Array``; the factories below
(``normal(stddev)``, ``glorot_uniform()`` ...) build one.  Each draws from the same
``jaxlite.random`` sampler JAX's does with the same key, so the numbers equal JAX's bit for
bit.
"""
from __future__ import annotations

import math
import operator
import typing
from typing import Protocol

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from .. import random

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]

# the standard deviation of a standard normal truncated to [-2, 2], and of the modulus-
# truncated complex normal of ``_complex_truncated_normal`` (upper = 2): dividing by it
# gives the truncated samples the requested variance
_TRUNC_STD_REAL = 0.87962566103423978
_TRUNC_STD_COMPLEX = 0.95311164380491208


@typing.runtime_checkable
class Initializer(Protocol):
    """The protocol every initializer follows (``jax.nn.initializers.Initializer``):
    ``init(key, shape, dtype=None, out_sharding=None) -> Array``."""

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        raise NotImplementedError


def _dtype(dtype):
    return dtypes.default_float_dtype() if dtype is None else dtype


def _placed(x, out_sharding):
    if out_sharding is None:
        return x
    from ..core.placement import device_put
    return device_put(x, out_sharding)


def _shape(shape):
    """``shape`` as a tuple of ints; TypeError (as JAX) for anything else."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shape}.") from None


def zeros(key, shape, dtype=None, out_sharding=None):
    """An array of zeros (``jax.nn.initializers.zeros``); ``key`` is ignored.

    ``dtype`` defaults to the default float dtype (float32 without x64).
    Example: ``zeros(key, (2, 3))``.
    """
    return _placed(jnp.zeros(shape, _dtype(dtype)), out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
    """An array of ones (``jax.nn.initializers.ones``); ``key`` is ignored.

    ``dtype`` defaults to the default float dtype.  Example: ``ones(key, (3, 2))``.
    """
    return _placed(jnp.ones(shape, _dtype(dtype)), out_sharding)


def constant(value, dtype=None):
    """An initializer filling the array with ``value`` (``jax.nn.initializers.constant``).

    Example: ``constant(-7)(key, (2, 3))`` is a float32 array of -7.
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        return _placed(jnp.full(shape, value, dtype=_dtype(dtype)), out_sharding)
    return init


def uniform(scale=0.01, dtype=None):
    """An initializer drawing uniformly from ``[0, scale)`` (``jax.nn.initializers.uniform``).

    Example: ``uniform(10.0)(jaxlite.random.key(42), (2, 3))``.
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _placed(random.uniform(key, shape, dtype) * jnp.array(scale, dtype),
                       out_sharding)
    return init


def normal(stddev=0.01, dtype=None):
    """An initializer drawing from a centred normal of standard deviation ``stddev``
    (``jax.nn.initializers.normal``).  Example: ``normal(5.0)(key, (2, 3))``."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _placed(random.normal(key, shape, dtype) * jnp.array(stddev, dtype),
                       out_sharding)
    return init


def truncated_normal(stddev=0.01, dtype=None, lower=-2.0, upper=2.0):
    """An initializer drawing a standard normal truncated to ``(lower, upper)``, times
    ``stddev`` (``jax.nn.initializers.truncated_normal``; no variance correction: the
    samples' standard deviation is below ``stddev``).  Example:
    ``truncated_normal(5.0)(key, (2, 3))``."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _placed(random.truncated_normal(key, lower, upper, shape, dtype)
                       * jnp.array(stddev, dtype), out_sharding)
    return init


def _size(shape, axes):
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out) of a weight of ``shape``: the input (output) size times the
    receptive field, the product of the axes that are neither input, output nor batch."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         f"weights tensor with default in_axis. Must be at least 2D or "
                         f"specify in_axis explicitly.")
    in_size = _size(shape, in_axis)
    out_size = _size(shape, out_axis)
    receptive = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
    return in_size * receptive, out_size * receptive


def _real_dtype(dtype):
    return np.array(0, dtype).real.dtype


def _complex_of(real):
    return np.dtype(np.complex128 if np.dtype(real) == np.float64 else np.complex64)


def _complex_uniform(key, shape, dtype):
    """Uniform on the disk of radius sqrt(2) (mean 0, variance 1)."""
    key_r, key_theta = random.split(key)
    real = _real_dtype(dtype)
    cdt = _complex_of(real)
    r = jnp.sqrt(2 * random.uniform(key_r, shape, real)).astype(cdt)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cdt)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    """A complex normal of variance 1 whose modulus is truncated to ``upper`` (inverse-CDF
    sampling of the modulus, uniform phase)."""
    key_r, key_theta = random.split(key)
    real = _real_dtype(dtype)
    cdt = _complex_of(real)
    t = ((1 - jnp.exp(jnp.array(-upper ** 2, cdt)))
         * random.uniform(key_r, shape, real).astype(cdt))
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cdt)
    return r * jnp.exp(1j * theta)


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """An initializer whose samples have variance ``scale / n``
    (``jax.nn.initializers.variance_scaling``).

    Args:
      scale: positive float.
      mode: ``n`` is ``"fan_in"``, ``"fan_out"``, ``"fan_avg"`` (their mean) or
        ``"fan_geo_avg"`` (their geometric mean); fans count the receptive field (the axes
        not named by ``in_axis``/``out_axis``/``batch_axis``).
      distribution: ``"truncated_normal"`` (at two standard deviations, rescaled to the
        variance), ``"normal"`` or ``"uniform"`` (a disk for complex dtypes).
      in_axis, out_axis, batch_axis: an axis or a sequence of axes of the weight.
      dtype: the default dtype of the weights.

    Returns:
      ``init(key, shape, dtype=dtype, out_sharding=None)``.

    Raises (when called):
      ValueError: unknown mode or distribution; a 0-d or 1-d shape with the default
        ``in_axis``.  TypeError: a shape that is not a sequence of ints.

    Example: ``variance_scaling(2.0, "fan_in", "normal")(key, (64, 32))``.
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            n = fan_in
        elif mode == "fan_out":
            n = fan_out
        elif mode == "fan_avg":
            n = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            n = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / n, dtype=dtype)
        real = dtypes.issubdtype(dtype, np.floating)
        if distribution == "truncated_normal":
            if real:
                out = (random.truncated_normal(key, -2, 2, shape, dtype)
                       * (jnp.sqrt(variance) / jnp.array(_TRUNC_STD_REAL, dtype)))
            else:
                out = (_complex_truncated_normal(key, 2, shape, dtype)
                       * (jnp.sqrt(variance) / jnp.array(_TRUNC_STD_COMPLEX, dtype)))
        elif distribution == "normal":
            out = random.normal(key, shape, dtype) * jnp.sqrt(variance)
        elif distribution == "uniform":
            if real:
                out = random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
            else:
                out = _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
        else:
            raise ValueError(f"invalid distribution for variance scaling initializer: "
                             f"{distribution}")
        return _placed(out, out_sharding)
    return init


def _specialise(name, scale, mode, distribution, mirrors):
    def factory(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (
        f"``variance_scaling({scale}, {mode!r}, {distribution!r})`` with the given axes "
        f"and dtype (``jax.nn.initializers.{mirrors}``).\n\n"
        f"    Example: ``{name}()(jaxlite.random.key(0), (3, 4))``.\n    ")
    return factory


glorot_uniform = _specialise("glorot_uniform", 1.0, "fan_avg", "uniform", "glorot_uniform")
glorot_normal = _specialise("glorot_normal", 1.0, "fan_avg", "truncated_normal",
                            "glorot_normal")
lecun_uniform = _specialise("lecun_uniform", 1.0, "fan_in", "uniform", "lecun_uniform")
lecun_normal = _specialise("lecun_normal", 1.0, "fan_in", "truncated_normal", "lecun_normal")
he_uniform = _specialise("he_uniform", 2.0, "fan_in", "uniform", "he_uniform")
he_normal = _specialise("he_normal", 2.0, "fan_in", "truncated_normal", "he_normal")
xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def _random_orthogonal(key, n_rows, n_cols, dtype):
    """An ``(n_rows, n_cols)`` matrix with orthonormal columns (or rows, when wider than
    tall), uniform over such matrices: the Q of a Gaussian matrix's QR with R's diagonal
    made positive (``jax.random.orthogonal``)."""
    if hasattr(random, "orthogonal"):
        return random.orthogonal(key, n_rows, (), dtype, n_cols)
    qr = getattr(jnp.linalg, "qr", None)
    if qr is None:
        raise NotImplementedError("orthogonal initializers need jaxlite.numpy.linalg.qr, "
                                  "which this build of jaxlite lacks")
    z = random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols)), dtype)
    q, r = qr(z)
    q = q * jnp.expand_dims(jnp.sign(jnp.diagonal(r, 0, -2, -1)), -2)
    return q.T if n_rows < n_cols else q


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of (scaled) orthogonal matrices (``jax.nn.initializers.orthogonal``):
    the weight, reshaped to ``(size // shape[column_axis], shape[column_axis])``, has
    orthonormal columns (or rows, if it has more columns than rows) times ``scale``.

    Raises (when called): ValueError for shapes of fewer than 2 dimensions;
    NotImplementedError for ``out_sharding``.  A shape with a zero dimension gives zeros.
    Example: ``orthogonal()(key, (3, 3))``.
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        if out_sharding is not None:
            raise NotImplementedError("orthogonal initializer: out_sharding")
        dtype = _dtype(dtype)
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:
            return jnp.zeros(shape, dtype=dtype)
        n_cols = shape[column_axis]
        q = _random_orthogonal(key, math.prod(shape) // n_cols, n_cols, dtype)
        rest = tuple(np.delete(np.array(shape), column_axis))
        q = jnp.moveaxis(jnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return jnp.array(scale, dtype) * q
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of delta-orthogonal convolution kernels
    (``jax.nn.initializers.delta_orthogonal``): zeros except the spatial centre, which is
    an orthogonal ``shape[-2:]`` matrix (``orthogonal(scale, column_axis)``).

    Raises (when called): ValueError unless the shape is 3-, 4- or 5-D with
    ``shape[-1] >= shape[-2]``; NotImplementedError for ``out_sharding``.
    Example: ``delta_orthogonal()(key, (3, 3, 3))``.
    """
    def init(key, shape, dtype=dtype, out_sharding=None):
        if out_sharding is not None:
            raise NotImplementedError("delta_orthogonal initializer: out_sharding")
        dtype = _dtype(dtype)
        shape = _shape(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        centre = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key,
                                                                              shape[-2:])
        mid = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype=dtype).at[mid + (Ellipsis,)].set(centre)
    return init


