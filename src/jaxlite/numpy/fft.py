"""``jaxlite.numpy.fft`` (``jax.numpy.fft``): discrete Fourier transforms, their sample
frequencies, and the shifts that centre the zero frequency.

Layer: numpy.  Every transform is ``jaxlite.lax.fft`` (the ``fft`` primitive, at most three
axes at a time) after cropping or zero-padding the transformed axes to the requested
lengths and moving them to the end; ``norm`` is a scale applied to the result.  The
primitive's JVP, transpose and batching rules make all of them differentiable, batchable
and jit-able.

Norms: ``"backward"`` (or None) leaves the forward transforms unscaled and scales the
inverse ones by ``1/n``; ``"forward"`` does the opposite; ``"ortho"`` scales both by
``1/sqrt(n)``, where ``n`` is the product of the transformed lengths.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes, lax
from ..core.trace import get_aval
from ..lax._fft import FftType
from ._util import canonicalize_axis, check_arraylike, ensure_array, public_names

_NORMS = (None, "backward", "ortho", "forward")


def _check_norm(norm):
    if not isinstance(norm, (str, type(None))) or norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         f'"forward".')


def _normalized(x, norm, lengths, inverse: bool):
    """``x`` (the primitive's result: FFT/RFFT unscaled, IFFT/IRFFT scaled by ``1/n``)
    scaled for ``norm``, with ``n`` the product of ``lengths`` computed in ``x``'s dtype
    (the steps JAX takes, so its programs print alike)."""
    if norm is None or norm == "backward":
        return x
    dt = get_aval(x).dtype
    n = lax.reduce_prod(ensure_array(np.asarray(lengths, dt)), (0,))
    one = dt.type(1)
    if norm == "ortho":
        factor = lax.sqrt(n) if inverse else lax.div(one, lax.sqrt(n))
    else:                       # "forward"
        factor = n if inverse else lax.div(one, n)
    return lax.mul(x, factor)


def _int(v, what="an integer"):
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"'{type(v).__name__}' object cannot be interpreted as {what}") \
            from None


def _axis_groups(axes: tuple) -> list:
    """``axes`` cut into groups of at most three (the primitive's limit), the last group
    last: JAX's grouping (four axes as two pairs, more as threes from the end)."""
    if len(axes) <= 3:
        return [axes]
    if len(axes) == 4:
        return [axes[:2], axes[2:]]
    return _axis_groups(axes[:-3]) + [axes[-3:]]


def _transform(x, fft_type, axes, lengths):
    """``lax.fft`` over ``axes`` (at most three) of ``x``: the axes are moved to the end
    (in their order) for the transform and moved back after it."""
    nd = get_aval(x).ndim
    perm = [i for i in range(nd) if i not in axes] + list(axes)
    moved = perm != list(range(nd))
    if moved:
        x = lax.transpose(x, perm)
    x = lax.fft(x, fft_type, tuple(lengths))
    if moved:
        x = lax.transpose(x, tuple(int(i) for i in np.argsort(perm)))
    return x


def _fft_core(name, fft_type, a, s, axes, norm, inverse=None):
    """The transform ``fft_type`` over ``axes`` cropped/padded to ``s``; ``inverse`` (by
    default: whether ``fft_type`` is IFFT or IRFFT) is the direction ``norm`` scales for."""
    full = f"jax.numpy.fft.{name}"
    check_arraylike(full, a)
    _check_norm(norm)
    x = ensure_array(a)
    nd = get_aval(x).ndim
    if s is not None:
        if isinstance(s, (tuple, list)):
            s = tuple(_int(n) for n in s)
        else:
            s = tuple(_int(n) for n in np.asarray(s).tolist())
        if any(n < 1 for n in s):
            raise ValueError("Shape should be positive.")
    if axes is not None:
        try:
            given = tuple(axes)
        except TypeError:
            raise TypeError(f"{full}: axes must be a sequence of integers, got "
                            f"{type(axes).__name__} {axes!r}") from None
        if s is not None and len(s) != len(given):
            raise ValueError("Shape and axes have different lengths.")
    else:
        given = tuple(range(nd)) if s is None else tuple(range(-len(s), 0))
    if len(set(given)) != len(given):
        raise ValueError(f"{full} does not support repeated axes. Got axes {given}.")
    ax = tuple(canonicalize_axis(_int(i), nd) for i in given)
    if len(set(ax)) != len(ax):
        # JAX's check above sees the axes as given; two spellings of one axis fail later,
        # in its transpose, with a TypeError
        raise TypeError(f"{full}: axes {given} name the same axis twice (for an array of "
                        f"dimension {nd})")
    if not ax:
        # nothing to transform: the operand in the transform's dtype, as JAX returns it
        return lax.fft(x, fft_type, ())
    shape = get_aval(x).shape
    if fft_type == FftType.IRFFT:
        if s is None:
            lengths = [shape[i] for i in ax[:-1]] + [max(0, 2 * (shape[ax[-1]] - 1))]
            sizes = None        # the half spectrum is taken as it is
        else:
            lengths = list(s)
            sizes = lengths[:-1] + [lengths[-1] // 2 + 1]
    else:
        lengths = list(s) if s is not None else [shape[i] for i in ax]
        sizes = lengths
    if sizes is not None and any(shape[i] != n for i, n in zip(ax, sizes)):
        x = _crop_and_pad(x, ax, sizes)
    if inverse is None:
        inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
    groups = _axis_groups(ax)
    by_axis = dict(zip(ax, lengths))
    if fft_type == FftType.IRFFT:
        # the complex inverse over the leading groups first, the real one last
        for g in groups[:-1]:
            x = _transform(x, FftType.IFFT, g, [by_axis[i] for i in g])
        x = _transform(x, FftType.IRFFT, groups[-1], [by_axis[i] for i in groups[-1]])
    elif fft_type == FftType.RFFT:
        x = _transform(x, FftType.RFFT, groups[-1], [by_axis[i] for i in groups[-1]])
        for g in reversed(groups[:-1]):
            x = _transform(x, FftType.FFT, g, [by_axis[i] for i in g])
    else:
        for g in reversed(groups):
            x = _transform(x, fft_type, g, [by_axis[i] for i in g])
    return _normalized(x, norm, lengths, inverse)


def _crop_and_pad(x, axes, sizes):
    """``x`` with each of ``axes`` cut to or zero-padded to its entry of ``sizes``."""
    from ._shape import pad
    shape = list(get_aval(x).shape)
    limits = list(shape)
    for i, n in zip(axes, sizes):
        limits[i] = min(shape[i], n)
    if limits != shape:
        x = lax.slice(x, [0] * len(shape), limits)
    widths = [(0, 0)] * len(shape)
    for i, n in zip(axes, sizes):
        widths[i] = (0, max(0, n - shape[i]))
    if any(w for _, w in widths):
        x = pad(x, widths)
    return x


# ---- one axis --------------------------------------------------------------------------

def _one(n):
    return None if n is None else (n,)


def _axis1(name, axis):
    """``(axis,)`` for a one-dimensional transform; ValueError for a tuple or list of
    axes, as JAX (the n-dimensional transforms take those)."""
    if isinstance(axis, (tuple, list)):
        raise ValueError(f"jax.numpy.fft.{name} does not support multiple axes (got "
                         f"axis={axis!r}); the n-dimensional transforms (fftn, rfftn, ...) "
                         f"take several")
    return (axis,)


def fft(a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform along ``axis`` (``jax.numpy.fft.fft``).

    ``a`` is cropped or zero-padded to ``n`` along ``axis`` when ``n`` is given.  The result
    is complex: complex64 for float32, float16, integer and boolean input, complex128 for
    float64 (and 64-bit integers) under x64.

    Raises:
      TypeError: a list for ``a``; a non-integer ``n`` or ``axis``.
      ValueError: ``n < 1``; ``axis`` out of range (0-d input included); an unknown
        ``norm``.

    Example: ``jnp.fft.fft(jnp.array([1., 0., 0., 0.]))`` is four ones (complex64).
    """
    return _fft_core("fft", FftType.FFT, a, _one(n), _axis1("fft", axis), norm)


def ifft(a, n=None, axis=-1, norm=None):
    """Inverse of ``fft`` along ``axis`` (``jax.numpy.fft.ifft``): scaled by ``1/n`` under
    the default norm.  Arguments, dtypes and errors as ``fft``."""
    return _fft_core("ifft", FftType.IFFT, a, _one(n), _axis1("ifft", axis), norm)


def rfft(a, n=None, axis=-1, norm=None):
    """Fourier transform of real input along ``axis`` (``jax.numpy.fft.rfft``): the
    ``n // 2 + 1`` non-negative frequencies of the length-``n`` transform (``n`` defaults to
    the axis' length; the axis is cropped or zero-padded to it).

    Returns complex64 for float32, integer and boolean input, complex128 for float64.

    Raises:
      ValueError: complex input ("only real valued inputs supported for rfft"); float16 or
        bfloat16 input; an empty axis; ``n < 1``; ``axis`` out of range; an unknown norm.
      TypeError: a list for ``a``; a non-integer ``n``.
    """
    return _fft_core("rfft", FftType.RFFT, a, _one(n), _axis1("rfft", axis), norm)


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of ``rfft`` (``jax.numpy.fft.irfft``): a half spectrum along ``axis`` to
    ``n`` real samples (default ``2 * (m - 1)`` for ``m`` input bins; with ``n`` given the
    input is cropped or zero-padded to ``n // 2 + 1`` bins).  The imaginary parts of the
    zero-frequency bin (and of the Nyquist bin for even ``n``) are ignored.

    Returns float32 (float64 for complex128 input).  Errors as ``fft``.
    """
    return _fft_core("irfft", FftType.IRFFT, a, _one(n), _axis1("irfft", axis), norm)


def hfft(a, n=None, axis=-1, norm=None):
    """Fourier transform of a Hermitian-symmetric signal given by its first half
    (``jax.numpy.fft.hfft``): ``n`` real values (default ``2 * (m - 1)`` for ``m`` input
    values), the ``irfft`` of ``conj(a)`` scaled by ``n`` under the default norm.

    Returns float32 (float64 for complex128 input).  Errors as ``irfft``.
    """
    check_arraylike("jax.numpy.fft.hfft", a)
    x = ensure_array(a)
    if get_aval(x).dtype.kind == "c":
        x = lax.conj(x)
    # the inverse transform, normalised as the forward one it stands for
    out = _fft_core("hfft", FftType.IRFFT, x, _one(n), _axis1("hfft", axis), norm,
                    inverse=False)
    nn = _int(n) if n is not None else 2 * (get_aval(x).shape[axis] - 1)
    return lax.mul(out, get_aval(out).dtype.type(nn))


def ihfft(a, n=None, axis=-1, norm=None):
    """Inverse of ``hfft`` (``jax.numpy.fft.ihfft``): the conjugate of ``rfft(a, n)``,
    scaled by ``1/n`` under the default norm.

    Returns complex64 (complex128 for float64 input).  Errors as ``rfft`` (real input
    only).
    """
    out = _fft_core("ihfft", FftType.RFFT, a, _one(n), _axis1("ihfft", axis), norm,
                    inverse=True)
    nn = _int(n) if n is not None else get_aval(ensure_array(a)).shape[axis]
    return lax.mul(lax.conj(out), get_aval(out).dtype.type(1.0 / nn))


# ---- several axes ----------------------------------------------------------------------

def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform (``jax.numpy.fft.fftn``) over ``axes``
    (all axes by default; the last ``len(s)`` when only ``s`` is given), each cropped or
    zero-padded to its entry of ``s``.  Dtypes as ``fft``.

    Raises:
      ValueError: ``s`` and ``axes`` of different lengths; repeated or out-of-range axes;
        an entry of ``s`` below 1; an unknown norm.
      TypeError: a list for ``a``; non-integer entries of ``s``; ``axes`` not a sequence.
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """Inverse of ``fftn`` (``jax.numpy.fft.ifftn``).  Arguments and errors as ``fftn``."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional transform of real input (``jax.numpy.fft.rfftn``): the last of
    ``axes`` keeps its ``n // 2 + 1`` non-negative frequencies, the others are full.
    Dtypes and errors as ``rfft`` and ``fftn``."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of ``rfftn`` (``jax.numpy.fft.irfftn``): real output of shape ``s`` over
    ``axes`` (the last defaults to ``2 * (m - 1)``).  Dtypes and errors as ``irfft`` and
    ``fftn``."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """``fftn`` over two axes, by default the last two (``jax.numpy.fft.fft2``)."""
    return _fft_core("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """``ifftn`` over two axes, by default the last two (``jax.numpy.fft.ifft2``)."""
    return _fft_core("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """``rfftn`` over two axes, by default the last two (``jax.numpy.fft.rfft2``)."""
    return _fft_core("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """``irfftn`` over two axes, by default the last two (``jax.numpy.fft.irfft2``)."""
    return _fft_core("irfft2", FftType.IRFFT, a, s, axes, norm)


# ---- frequencies and shifts ------------------------------------------------------------

def _count(n) -> int:
    # a float n counts like arange's stop (JAX builds the frequencies from arange)
    return max(0, math.ceil(n)) if isinstance(n, float) else max(0, operator.index(n))


def _length_arg(n):
    if isinstance(n, (bool, int, float, np.integer, np.floating)):
        return n.item() if isinstance(n, np.generic) else n
    return n.item() if hasattr(n, "item") else operator.index(n)


def _over_nd(k, n, d):
    """``k / (n * d)``: a Python ``d`` folds into one weak constant, an array ``d``
    broadcasts against ``k``."""
    from ._ufuncs import multiply, true_divide
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        return true_divide(k, n * d)
    return true_divide(k, multiply(d, n))


def _place(out, device):
    from ._creation import _place as place
    return place(out, device)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of an ``n``-point transform with sample spacing ``d``
    (``jax.numpy.fft.fftfreq``): ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (n * d)``.

    ``dtype`` defaults to the default float (float32; float64 under x64); an integer or
    boolean ``dtype`` is computed in float32 and converted (integers truncate toward zero),
    a complex one in its real counterpart.  An array ``d`` broadcasts against the frequencies.

    Raises ConcretizationTypeError when ``n`` is traced.
    """
    from ._ufuncs import remainder, subtract, add
    n = _length_arg(n)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    # computed in a floating type: the dtype's own, its real counterpart when complex,
    # float32 for integer (int64 included, as JAX) and boolean dtypes
    work = dt if dtypes.is_float(dt) else np.dtype(np.float32)
    if dt.kind == "c":
        work = np.dtype(np.float64) if dt == np.complex128 else np.dtype(np.float32)
    half = n // 2
    k = lax.iota(work, _count(n))
    k = subtract(remainder(add(k, half), n), half)
    out = _over_nd(k, n, d)
    if get_aval(out).dtype != dt:
        out = lax.convert_element_type(out, dt)
    return _place(out, device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of the ``rfft`` of an ``n``-point signal with spacing ``d``
    (``jax.numpy.fft.rfftfreq``): ``[0, 1, ..., n // 2] / (n * d)``.

    ``dtype`` defaults to the default float; an inexact ``dtype`` is kept.  For an integer
    ``dtype``, as in JAX, ``n * d`` is first converted to it (truncated: ``n * d < 1``
    gives inf/nan) and the result is its inexact counterpart (float32, or float64 for
    64-bit integers).
    """
    from ._ufuncs import multiply, true_divide
    n = _length_arg(n)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    count = _count(n // 2 + 1)
    if dt.kind == "c":
        real = np.dtype(np.float64) if dt == np.complex128 else np.dtype(np.float32)
        k = lax.convert_element_type(lax.iota(real, count), dt)
    else:
        k = lax.iota(dt, count)
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        with np.errstate(all="ignore"):
            nd = np.asarray(n * d).astype(dt)
    else:
        nd = multiply(d, n)
        if get_aval(nd).dtype != dt:
            nd = lax.convert_element_type(nd, dt)
    return _place(true_divide(k, nd), device)


def _shifted(name, x, axes, sign):
    from ._shape import roll
    check_arraylike(name, x)
    x = ensure_array(x)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = tuple(sign * (shape[i] // 2) for i in axes)
    elif isinstance(axes, (tuple, list)):
        axes = tuple(_int(i) for i in axes)
        shift = tuple(sign * (shape[i] // 2) for i in axes)
    else:
        axes = _int(axes)
        shift = sign * (shape[axes] // 2)
    if not axes and axes != 0:
        return x
    return roll(x, shift, axes)


def fftshift(x, axes=None):
    """``x`` rolled so that the zero frequency is in the middle (``jax.numpy.fft.fftshift``):
    by ``n // 2`` along each of ``axes`` (all by default).

    Raises TypeError for a list ``x``; IndexError for an axis beyond the rank, as JAX."""
    return _shifted("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift`` (``jax.numpy.fft.ifftshift``): rolled by ``-(n // 2)``
    along each of ``axes``."""
    return _shifted("ifftshift", x, axes, -1)


__all__ = public_names(globals())
