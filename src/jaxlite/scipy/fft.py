"""``jaxlite.scipy.fft`` (``jax.scipy.fft``): the discrete cosine transform of type 2
(``dct``, ``dctn``) and its inverse (``idct``, ``idctn``), computed through ``jnp.fft``.

Layer: scipy (compositions of jaxlite.numpy: differentiable, batchable, jit-able).
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from .. import _traceback
from .. import numpy as jnp
from ..numpy._util import (canonicalize_axis, check_arraylike, ensure_array,
                           promote_dtypes_inexact)


def _check(name, type, norm):  # noqa: A002
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm not in (None, "backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")


def _resize(x, n, axis):
    """``x`` cut or zero-padded to length ``n`` along ``axis``."""
    m = x.shape[axis]
    if n is None or n == m:
        return x
    if n < m:
        return jnp.take(x, np.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - m)
    return jnp.pad(x, pad)


def _dct1(x, axis, norm):
    """DCT-II along one axis: ``2 sum_n x_n cos(pi k (2n + 1) / 2N)``, by one complex FFT
    of the even-odd reordered input."""
    x = jnp.moveaxis(x, axis, -1)
    N = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], x[..., 1::2][..., ::-1]], axis=-1)
    V = jnp.fft.fft(v, axis=-1)
    k = np.arange(N)
    tw = np.exp(-1j * np.pi * k / (2 * N))
    out = 2 * jnp.real(V * tw.astype(V.dtype))
    if norm == "ortho":
        scale = np.full(N, np.sqrt(1 / (2 * N)))
        scale[0] = np.sqrt(1 / (4 * N))
        out = out * scale.astype(out.dtype)
    return jnp.moveaxis(out.astype(x.dtype), -1, axis)


def _idct1(X, axis, norm):
    """The inverse of ``_dct1`` (a DCT-III, scaled): ``idct(dct(x)) == x``."""
    X = jnp.moveaxis(X, axis, -1)
    N = X.shape[-1]
    if norm == "ortho":
        scale = np.full(N, np.sqrt(2 * N))
        scale[0] = np.sqrt(4 * N)
        X = X * (scale / (2 * N)).astype(X.dtype)
    else:
        X = X / (2 * N)
    k = np.arange(N)
    tw = np.exp(1j * np.pi * k / (2 * N))
    Xc = X.astype(np.result_type(X.dtype, np.complex64))
    # the complex spectrum of the reordered sequence, Hermitian: V_k = (X_k - i X_{N-k}) w_k
    X_rev = jnp.concatenate([jnp.zeros_like(Xc[..., :1]), Xc[..., :0:-1]], axis=-1)
    Vk = (Xc - 1j * X_rev) * tw.astype(Xc.dtype)
    v = jnp.real(jnp.fft.ifft(Vk, axis=-1)) * N
    out = jnp.zeros_like(v)
    half = (N + 1) // 2
    out = out.at[..., ::2].set(v[..., :half])
    out = out.at[..., 1::2].set(v[..., half:][..., ::-1])
    return jnp.moveaxis(out.astype(X.dtype), -1, axis)


def _prep(name, x):
    check_arraylike(name, x)
    (xa,) = promote_dtypes_inexact(ensure_array(x))
    return ensure_array(xa)


def dct(x, type: int = 2, n=None, axis: int = -1, norm=None):  # noqa: A002
    """The type-2 DCT of ``x`` along ``axis`` (``jax.scipy.fft.dct``), after cutting or
    zero-padding to ``n``; ``norm`` None/'backward' or 'ortho'. Inexact result. Other
    types raise NotImplementedError, other norms and an ``axis`` out of range ValueError
    (as JAX)."""
    _check("dct", type, norm)
    xa = _prep("dct", x)
    axis = canonicalize_axis(axis, xa.ndim)     # ValueError out of range, as JAX
    return _dct1(_resize(xa, n, axis), axis, norm)


def idct(x, type: int = 2, n=None, axis: int = -1, norm=None):  # noqa: A002
    """The inverse of ``dct`` along ``axis`` (``jax.scipy.fft.idct``)."""
    _check("idct", type, norm)
    xa = _prep("idct", x)
    axis = canonicalize_axis(axis, xa.ndim)     # ValueError out of range, as JAX
    return _idct1(_resize(xa, n, axis), axis, norm)


def _axes(x, s, axes):
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(operator.index(a) for a in axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"Shape of s ({s}) and axes ({axes}) must match")
    return axes, (None,) * len(axes) if s is None else tuple(s)


def _nd(name, one_axis, x, type, s, axes, norm):  # noqa: A002
    """``one_axis`` (the 1-d transform) applied along each of ``axes`` in turn."""
    _check(name, type, norm)
    xa = _prep(name, x)
    axes, s = _axes(xa, s, axes)
    for ax, n in zip(axes, s):
        xa = one_axis(_resize(xa, n, ax), ax, norm)
    return xa


def dctn(x, type: int = 2, s=None, axes=None, norm=None):  # noqa: A002
    """The type-2 DCT over several axes (``jax.scipy.fft.dctn``)."""
    return _nd("dctn", _dct1, x, type, s, axes, norm)


def idctn(x, type: int = 2, s=None, axes=None, norm=None):  # noqa: A002
    """The inverse of ``dctn`` (``jax.scipy.fft.idctn``)."""
    return _nd("idctn", _idct1, x, type, s, axes, norm)


__all__ = ["dct", "idct", "dctn", "idctn"]


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
