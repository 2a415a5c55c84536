"""The ``fft`` primitive: discrete Fourier transforms over the trailing 1 to 3 axes of an
array (complex <-> complex, real -> half spectrum, half spectrum -> real).

Layer: primitives.  An opaque kernel: its implementation calls SciPy's pocketfft, which
computes in the operand's own precision (complex64 in, complex64 out), as XLA's CPU FFT
does; NumPy's ``numpy.fft`` would compute (and return) complex128.  The transform is linear,
so JVP applies it to the tangent and the transpose rules below give reverse mode.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive


class FftType(enum.IntEnum):
    """The kind of transform (``jax.lax.FftType``): ``FFT`` and ``IFFT`` map complex to
    complex (the inverse scaled by ``1/n``), ``RFFT`` maps real to the non-negative half of
    the spectrum (last axis ``n // 2 + 1``), ``IRFFT`` maps such a half spectrum back to
    real (last axis ``n``, scaled by ``1/n``)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def complex_of(dt) -> np.dtype:
    """The complex dtype of a real floating dtype's precision (float64 -> complex128,
    every narrower float -> complex64)."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    return _C128 if dt == _F64 else _C64


def _real_of(dt) -> np.dtype:
    return _F64 if np.dtype(dt) == _C128 else _F32


def _fft_aval(x, fft_type, fft_lengths):
    fft_type = FftType(fft_type)
    lengths = tuple(fft_lengths)
    name = fft_type.name
    k = len(lengths)
    if k > 3:
        raise ValueError(f"fft: at most 3 axes can be transformed at once, got fft_lengths "
                         f"{lengths} (jax.numpy.fft.fftn splits more axes into several "
                         f"transforms)")
    if x.ndim < k:
        raise ValueError(f"{name} input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {lengths}.")
    if any(n < 0 for n in lengths):
        raise ValueError(f"{name}: fft_lengths {lengths} must not be negative")
    dt = x.dtype
    if fft_type == FftType.RFFT:
        if dt.kind == "c":
            raise ValueError("only real valued inputs supported for rfft")
        if dt not in (_F32, _F64):
            raise ValueError(f"RFFT input must be float32 or float64, got "
                             f"{dtypes.short_name(dt) if dt == dtypes._BF16 else dt.name}")
    elif dt.kind != "c":
        raise TypeError(f"{name} requires a complex operand (complex64 or complex128), got "
                        f"{'bfloat16' if dt == dtypes._BF16 else dt.name}; jaxlite.lax.fft "
                        f"converts real operands first")
    if k == 0:
        # no axis to transform: the operand itself, as JAX's fft with empty fft_lengths
        return ShapedArray(tuple(x.shape), dt)
    lead, minor = tuple(x.shape[:x.ndim - k]), tuple(x.shape[x.ndim - k:])
    if fft_type == FftType.IRFFT:
        n = lengths[-1]
        # an empty result (n == 0) takes a 0- or 1-long half spectrum, as JAX's irfft of an
        # empty or single-element axis does
        ok = minor[:-1] == lengths[:-1] and (
            minor[-1] == n // 2 + 1 or (n == 0 and minor[-1] <= 1))
        if not ok:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {lengths} except the last, which must be "
                             f"fft_lengths[-1] // 2 + 1")
        return ShapedArray(lead + lengths, _real_of(dt))
    if minor != lengths:
        raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                         f"fft_lengths {lengths}")
    if fft_type == FftType.RFFT:
        if lengths[-1] == 0:
            raise ValueError(f"RFFT of input shape {x.shape} needs a non-empty last axis "
                             f"(fft_lengths {lengths})")
        return ShapedArray(lead + lengths[:-1] + (lengths[-1] // 2 + 1,), complex_of(dt))
    return ShapedArray(tuple(x.shape), dt)


def _fft_impl(x, fft_type, fft_lengths):
    out = _fft_aval(ShapedArray(x.shape, x.dtype), fft_type, fft_lengths)
    k = len(fft_lengths)
    if k == 0:
        return np.array(x, copy=True)
    if x.size == 0 or math.prod(out.shape) == 0:
        return np.zeros(out.shape, out.dtype)
    import scipy.fft as _sfft   # here, not at import: jaxlite starts without loading SciPy
    axes = tuple(range(x.ndim - k, x.ndim))
    fft_type = FftType(fft_type)
    if fft_type == FftType.FFT:
        y = _sfft.fftn(x, axes=axes)
    elif fft_type == FftType.IFFT:
        y = _sfft.ifftn(x, axes=axes)
    elif fft_type == FftType.RFFT:
        y = _sfft.rfftn(x, axes=axes)
    else:
        y = _sfft.irfftn(x, s=tuple(fft_lengths), axes=axes)
    return y.astype(out.dtype, copy=False)


def _fft_flops(x, fft_type, fft_lengths):
    n = math.prod(fft_lengths) if fft_lengths else 1
    batch = x.size // max(math.prod(x.shape[x.ndim - len(fft_lengths):]), 1)
    # the usual 5 n log2 n of a complex transform, half that for the real ones
    per = 5 * n * math.log2(n) if n > 1 else 0
    if FftType(fft_type) in (FftType.RFFT, FftType.IRFFT):
        per /= 2
    return int(batch * per)


from ..core import sharding_rules as _sr  # noqa: E402

# the transformed (trailing) axes are computed whole, the leading ones keep their sharding;
# the result is sliced back to the operand's sharding where it divides (as GSPMD)
fft_p = Primitive("fft", abstract_eval=_fft_aval, impl=_fft_impl, flops=_fft_flops,
                  kind="other")
fft_p.sharding = _sr.batched_core(fft_p, lambda x, fft_type, fft_lengths: len(fft_lengths),
                                  "an FFT needs its transformed axes whole", reslice=True)


# ---- transformation rules -----------------------------------------------------------------

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402


def _hermitian_weights(m: int, n: int, dt) -> np.ndarray:
    """Along a half spectrum of ``m = n // 2 + 1`` bins of a length-``n`` real transform:
    1 for the bins that stand for themselves only (the zero frequency, and the Nyquist
    frequency when ``n`` is even), 2 for the bins that also stand for their mirror image."""
    w = np.full((m,), 2, dt)
    w[0] = 1
    if n % 2 == 0 and m > 1:
        w[-1] = 1
    return w


def _along_last(w, shape):
    """The weights ``w`` of the last axis broadcast to ``shape`` (a constant)."""
    from .shape import broadcast_in_dim_p
    if len(shape) == 1:
        return w
    return broadcast_in_dim_p.bind(w, shape=tuple(shape), broadcast_dimensions=(len(shape) - 1,))


def _fft_transpose(ct, x, fft_type, fft_lengths):
    """The DFT matrix is symmetric, so FFT and IFFT are their own transposes.  RFFT's
    transpose is a scaled IRFFT of the conjugated cotangent with the mirrored bins halved
    (IRFFT counts each of them twice); IRFFT's is the conjugate of a scaled RFFT with
    those bins doubled."""
    from .elementwise import conj_p, mul_p
    fft_type = FftType(fft_type)
    lengths = tuple(fft_lengths)
    if fft_type in (FftType.FFT, FftType.IFFT) or not lengths:   # (no axes: identity)
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=lengths)]
    ct_aval = get_aval(ct)
    n = lengths[-1]
    total = math.prod(lengths)
    if fft_type == FftType.RFFT:
        m = n // 2 + 1
        w = (1.0 / _hermitian_weights(m, n, np.float64)).astype(ct_aval.dtype)
        z = mul_p.bind(conj_p.bind(ct, input_dtype=ct_aval.dtype), _along_last(w, ct_aval.shape))
        out = fft_p.bind(z, fft_type=FftType.IRFFT, fft_lengths=lengths)
        return [mul_p.bind(out, np.array(total, x.aval.dtype))]
    cdt = x.aval.dtype
    m = x.aval.shape[-1]
    if m != n // 2 + 1:         # an empty result from a 0- or 1-long half spectrum
        return [ad.zeros(x.aval)]
    w = (_hermitian_weights(m, n, np.float64) / total).astype(cdt)
    y = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=lengths)
    y = mul_p.bind(y, _along_last(w, x.aval.shape))
    return [conj_p.bind(y, input_dtype=cdt)]


ad.deflinear(fft_p, _fft_transpose)


def _fft_batch(args, dims, fft_type, fft_lengths):
    # the transform acts on trailing axes: the mapped axis goes in front of them
    x = batching.moveaxis(args[0], dims[0], 0)
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


fft_p.batch = _fft_batch


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------

def _fft_lower(ctx, x, fft_type, fft_lengths):
    out = ctx.avals_out[0]
    if not fft_lengths:
        return x
    if x.aval.size == 0 or math.prod(out.shape) == 0:
        return ctx.full(0, out)
    return ctx.op("stablehlo.fft", [x], out,
                  {"fft_type": f"#stablehlo<fft_type {FftType(fft_type).name}>",
                   "fft_length": ctx.i64s(fft_lengths)})


fft_p.lowering = _fft_lower
