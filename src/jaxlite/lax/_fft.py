"""``jaxlite.lax.fft`` and ``FftType`` (``jax.lax.fft``): the ``fft`` primitive with its
operand converted to the dtype the transform needs.

Layer: lax.  Staged as a nested ``jit[name=fft]``, as JAX stages it.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from .. import dtypes
from ..core.array import ArrayImpl
from ..core.eager import from_host
from ..core.trace import Tracer, get_aval
from ..primitives.elementwise import convert_element_type_p
from ..primitives.fft import FftType, complex_of, fft_p

_BY_NAME = {t.name: t for t in FftType} | {t.name.lower(): t for t in FftType}


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        try:
            return _BY_NAME[fft_type]
        except KeyError:
            raise ValueError(f"Unknown FFT type '{fft_type}'") from None
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


def _lengths(fft_lengths) -> tuple:
    try:
        hash(fft_lengths)
    except TypeError:
        # JAX's lax.fft takes fft_lengths as a static (hashable) argument
        raise ValueError(f"Non-hashable static arguments are not supported: fft_lengths "
                         f"{fft_lengths!r} of type {type(fft_lengths).__name__}; pass a "
                         f"tuple") from None
    try:
        return tuple(operator.index(n) for n in fft_lengths)
    except TypeError:
        raise TypeError(f"fft_lengths must be a sequence of integers, got "
                        f"{fft_lengths!r}") from None


def _as_operand(x):
    if isinstance(x, (ArrayImpl, Tracer)):
        return x
    if isinstance(x, (bool, int, float, complex)):
        return from_host(x, get_aval(x).dtype, weak_type=not isinstance(x, bool))
    return from_host(np.asarray(x))


def _converted(x, fft_type):
    """``x`` in the dtype the primitive takes: complex for FFT, IFFT and IRFFT (integers
    and bools by way of their inexact type), real for RFFT (integers and bools become
    floating; complex and half-precision operands are left for the primitive to refuse)."""
    dt = get_aval(x).dtype
    if fft_type == FftType.RFFT:
        target = dt if dtypes.is_inexact(dt) else dtypes.to_inexact_dtype(dt)
    else:
        target = complex_of(dtypes.to_inexact_dtype(dt))
    if target == dt:
        return x
    return convert_element_type_p.bind(x, new_dtype=target, weak_type=False)


def _fft(x, fft_type, fft_lengths):
    x = _converted(x, fft_type)
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


@functools.cache
def _staged():
    # imported here: jaxlite.numpy (which holds named_jit) imports jaxlite.lax
    from ..numpy._named_jit import named_jit
    return named_jit("fft", static_argnames=("fft_type", "fft_lengths"))(_fft)


def fft(x, fft_type, fft_lengths):
    """Discrete Fourier transform over the last ``len(fft_lengths)`` (1 to 3) axes of ``x``
    (``jax.lax.fft``).

    Args:
      x: the operand.  FFT and IFFT take complex values (real, integer and boolean
        operands are converted: float64 and 64-bit integers to complex128, the rest to
        complex64); RFFT takes float32 or float64 (integers and bools converted); IRFFT
        takes complex (others converted).
      fft_type: a ``FftType`` or its name (``"fft"``, ``"IFFT"``, ...).
      fft_lengths: a tuple of the transform's lengths, one per transformed axis.  For FFT,
        IFFT and RFFT they equal the operand's trailing axes; for IRFFT all but the last
        do, and the operand's last axis is ``fft_lengths[-1] // 2 + 1``.

    Returns:
      FFT/IFFT: the operand's shape and complex dtype (IFFT scaled by ``1/prod(lengths)``).
      RFFT: the last axis becomes ``n // 2 + 1``, complex64/complex128.  IRFFT: the last
      axis becomes ``fft_lengths[-1]``, float32/float64, scaled by ``1/prod(lengths)``.

    Raises:
      ValueError: an unknown type name, a list for ``fft_lengths``, lengths that do not
        match the operand's axes, complex or half-precision input to RFFT, more than
        three lengths.
      TypeError: a ``fft_type`` that is neither a ``FftType`` nor a name.

    Example: ``fft(jnp.ones(4), "fft", (4,))`` is ``[4, 0, 0, 0]`` as complex64.
    """
    fft_type = _fft_type(fft_type)
    lengths = _lengths(fft_lengths)
    return _staged()(_as_operand(x), fft_type=fft_type, fft_lengths=lengths)
