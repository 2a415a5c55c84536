"""Matrix-valued samplers: ``jax.random.multivariate_normal`` and ``orthogonal``.

Layer: random (compositions of ``jaxlite.numpy`` / ``jaxlite.numpy.linalg``; eager and
jit).  Both draw JAX's normal samples (bit for bit) and transform them with a LAPACK
factorisation (Cholesky, eigh, SVD or QR) and a matrix product, so the results agree with
JAX's to the rounding of those kernels (a few ulps of the inputs' scale), not bit for bit.
"""
from __future__ import annotations


import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ._continuous import float_dtype
from ._distributions import _array, _check_shape, _concrete_int, _normal_real, normal
from ._keys import _shape, unpack_key


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Samples of a multivariate normal with the given mean and covariance
    (``jax.random.multivariate_normal``): ``mean + factor @ z`` with ``z`` standard normal
    and ``factor @ factor.T == cov``.

    Args:
      key: a typed key or raw key.
      mean: ``(..., n)`` means.  cov: ``(..., n, n)`` positive (semi)definite covariances;
        their batch shapes broadcast together.
      shape: batch shape of the result (default the broadcast batch shape).
      dtype: a float dtype (default the inexact promotion of ``mean`` and ``cov``).
      method: ``"cholesky"`` (default), ``"eigh"`` or ``"svd"`` (the last two allow
        singular covariances).

    Returns:
      ``dtype[*shape, n]``; JAX's values to the rounding of the factorisation.

    Raises:
      ValueError: an unknown method, a non-float dtype, ``mean.ndim < 1``, ``cov.ndim < 2``,
      ``cov`` not ``(..., n, n)``, batch shapes that do not broadcast to ``shape``, a batch
      of keys.

    Example::

        jax.random.multivariate_normal(jax.random.key(0), jnp.zeros(2), jnp.eye(2), (5,))
    """
    raw, _ = unpack_key(key, "multivariate_normal")
    mean, cov = _array(mean), _array(cov)
    common = dtypes.to_inexact_dtype(dtypes.result_type(mean, cov))
    mean = lax.convert_element_type(mean, common)
    cov = lax.convert_element_type(cov, common)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dt = float_dtype(common if dtype is None else dtype, "multivariate_normal")
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{cov.ndim}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {tuple(cov.shape)}.")
    batch = (tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    if shape is None:
        shape = tuple(np.broadcast_shapes(*batch))
    else:
        shape = _shape(shape, "multivariate_normal")
        _check_shape("normal", shape, *batch)
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _normal_real(raw, shape + (n,), dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Random matrices with orthonormal columns (or rows), Haar-distributed
    (``jax.random.orthogonal``): the QR factor ``q`` of a normal matrix with its columns'
    signs fixed by ``sign(diag(r))``.

    Args:
      key: a typed key or raw key.  n: rows (a concrete int).  shape: batch shape.
      dtype: a float or complex dtype (complex: unitary columns).  m: columns (default
        ``n``); for ``n < m`` the rows are orthonormal (a plain transpose, as JAX's).

    Returns:
      ``dtype[*shape, n, m]``; JAX's values to the rounding of the QR factorisation.

    Raises:
      TypeError: ``n``/``m`` not integers.  ConcretizationTypeError: ``n``/``m`` traced.
      ValueError: a negative dimension, a dtype neither float nor complex, a batch of keys.

    Example::

        q = jax.random.orthogonal(jax.random.key(0), 3)     # q @ q.T is the identity
    """
    unpack_key(key, "orthogonal")
    shape = _shape(shape, "orthogonal")
    n = _concrete_int(n, "orthogonal", "n")
    m = n if m is None else _concrete_int(m, "orthogonal", "m")
    if n < 0 or m < 0:
        raise ValueError(f"orthogonal: dimensions must be non-negative, got n={n}, m={m}")
    # normal's draws (complex ones included; its dtype check and message, as JAX's)
    z = normal(key, shape + (max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x
