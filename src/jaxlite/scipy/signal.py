"""``jaxlite.scipy.signal`` (``jax.scipy.signal``): N-dimensional convolution and
correlation (direct, through ``lax.conv_general_dilated``, or by FFT), their 2-d forms,
``detrend``, and the spectral analysis of ``_spectral`` (``stft``, ``istft``, ``welch``,
``csd``).

Layer: scipy (compositions of lax and jaxlite.numpy, so grad, vmap and jit follow).
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from .. import _traceback
from .. import lax
from .. import numpy as jnp
from ..numpy._util import check_arraylike, ensure_array, promote_dtypes_inexact
from ._spectral import csd, istft, stft, welch

_MODES = ["full", "same", "valid"]


def _args(name, in1, in2, mode):
    check_arraylike(name, in1, in2)
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}")
    a, b = (ensure_array(x) for x in promote_dtypes_inexact(in1, in2))
    if a.ndim != b.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if a.size == 0 or b.size == 0:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}.")
    return a, b


def _valid_swap(a, b, mode):
    """For 'valid', the larger input first; ValueError when neither is at least as large as
    the other in every dimension."""
    if mode != "valid":
        return a, b
    if all(x >= y for x, y in zip(a.shape, b.shape)):
        return a, b
    if all(x <= y for x, y in zip(a.shape, b.shape)):
        return b, a
    raise ValueError("One input must be smaller than the other in every dimension.")


def _crop(full, s1, s2, mode, axes=None):
    """The part of a full convolution (``s1 + s2 - 1`` along ``axes``) that ``mode``
    keeps: all of it, the centred ``s1``, or the ``|s1 - s2| + 1`` fully overlapping
    positions."""
    if mode == "full":
        return full
    axes = range(full.ndim) if axes is None else axes
    idx = [slice(None)] * full.ndim
    for ax in axes:
        n, k = s1[ax], s2[ax]
        if mode == "same":
            start = (k - 1) // 2
            idx[ax] = slice(start, start + n)
        else:
            idx[ax] = slice(min(n, k) - 1, max(n, k))
    return full[tuple(idx)]


def _conv_real(a, b, precision):
    """The full N-d convolution of two real arrays by one ``conv_general_dilated``."""
    nd = a.ndim
    kernel = lax.rev(b, tuple(range(nd)))
    pads = [(k - 1, k - 1) for k in b.shape]
    out = lax.conv_general_dilated(a[None, None], kernel[None, None], (1,) * nd, pads,
                                   precision=precision)
    return out[0, 0]


def _conv_full(a, b, precision):
    if a.dtype.kind != "c":
        return _conv_real(a, b, precision)
    ar, ai, br, bi = jnp.real(a), jnp.imag(a), jnp.real(b), jnp.imag(b)
    real = _conv_real(ar, br, precision) - _conv_real(ai, bi, precision)
    imag = _conv_real(ar, bi, precision) + _conv_real(ai, br, precision)
    return lax.complex(real, imag)


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` (``jax.scipy.signal.convolve``), inexact;
    ``mode`` 'full', 'same' (the centred part of ``in1``'s shape) or 'valid'. ``method``
    'direct', 'fft' or 'auto' (direct) choose the algorithm. Raises ValueError for
    different ranks, empty inputs, an unknown mode, or 'valid' inputs neither of which
    contains the other."""
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Got method={method}; expected 'auto', 'fft', or 'direct'.")
    a, b = _args("convolve", in1, in2, mode)
    if method == "fft":
        return fftconvolve(a, b, mode=mode)
    a, b = _valid_swap(a, b, mode)
    return _crop(_conv_full(a, b, precision), a.shape, b.shape, mode)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d cross-correlation of ``in1`` and ``in2`` (``jax.scipy.signal.correlate``):
    the convolution with ``in2`` reversed and conjugated. Arguments as ``convolve``."""
    a, b = _args("correlate", in1, in2, mode)
    b = jnp.conj(lax.rev(b, tuple(range(b.ndim))))
    return convolve(a, b, mode=mode, method=method, precision=precision)


def fftconvolve(in1, in2, mode: str = "full", axes=None):
    """The N-d convolution by FFT (``jax.scipy.signal.fftconvolve``), over ``axes`` (all
    by default; the other axes must match). Arguments and errors as ``convolve``."""
    a, b = _args("fftconvolve", in1, in2, mode)
    nd = a.ndim
    axes = tuple(range(nd)) if axes is None else tuple(
        operator.index(ax) % nd for ax in ((axes,) if np.ndim(axes) == 0 else axes))
    other = [ax for ax in range(nd) if ax not in axes]
    if any(a.shape[ax] != b.shape[ax] for ax in other):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={tuple(a.shape)} "
                         f"in2.shape={tuple(b.shape)} axes={axes}")
    if mode == "valid":
        sub_a = tuple(a.shape[ax] for ax in axes)
        sub_b = tuple(b.shape[ax] for ax in axes)
        if not all(x >= y for x, y in zip(sub_a, sub_b)):
            if all(x <= y for x, y in zip(sub_a, sub_b)):
                a, b = b, a
            else:
                raise ValueError("One input must be smaller than the other in every "
                                 "dimension.")
    size = [a.shape[ax] + b.shape[ax] - 1 for ax in axes]
    if a.dtype.kind == "c":
        full = jnp.fft.ifftn(jnp.fft.fftn(a, size, axes) * jnp.fft.fftn(b, size, axes),
                             size, axes)
    else:
        full = jnp.fft.irfftn(jnp.fft.rfftn(a, size, axes) * jnp.fft.rfftn(b, size, axes),
                              size, axes)
    return _crop(full.astype(a.dtype), a.shape, b.shape, mode, axes)


def _check2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0,
               precision=None):
    """The 2-d convolution (``jax.scipy.signal.convolve2d``); only ``boundary='fill'``
    with ``fillvalue=0`` (NotImplementedError otherwise, as JAX). Raises ValueError for
    inputs that are not 2-d."""
    _check2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode=mode, precision=precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0,
                precision=None):
    """The 2-d cross-correlation (``jax.scipy.signal.correlate2d``); as ``convolve2d``."""
    _check2d("correlate2d", in1, in2, boundary, fillvalue)
    return correlate(in1, in2, mode=mode, precision=precision)


def detrend(data, axis: int = -1, type: str = "linear", bp=0,  # noqa: A002
            overwrite_data=None):
    """``data`` minus its least-squares line along ``axis`` (``jax.scipy.signal.detrend``;
    piecewise between the breakpoints ``bp`` for ``type='linear'``), or minus its mean for
    ``type='constant'``. Inexact result. Raises ValueError for another type and
    NotImplementedError for ``overwrite_data`` other than None (as JAX)."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "c", "linear", "l"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    check_arraylike("detrend", data)
    (x,) = promote_dtypes_inexact(ensure_array(data))
    x = ensure_array(x)
    if type in ("constant", "c"):
        return x - jnp.mean(x, axis=axis, keepdims=True)
    xm = jnp.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    bps = np.unique(np.concatenate([[0], np.atleast_1d(np.asarray(bp, dtype=int)), [n]]))
    bps = bps[(bps >= 0) & (bps <= n)]
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = xm[..., lo:hi]
        m = hi - lo
        t = jnp.arange(1, m + 1, dtype=x.real.dtype) / m
        A = jnp.stack([t, jnp.ones_like(t)], axis=1)
        flat = seg.reshape(-1, m).T
        coef = jnp.linalg.lstsq(A, flat)[0]
        # one piece per breakpoint segment (a handful), joined once below
        pieces.append((flat - A @ coef).T.reshape(seg.shape))  # noqa: JL005
    return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)


__all__ = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d", "detrend",
           "stft", "istft", "csd", "welch"]


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
