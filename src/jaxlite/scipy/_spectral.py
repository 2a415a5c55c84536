"""Spectral analysis for ``jaxlite.scipy.signal`` (``jax.scipy.signal``): the short-time
Fourier transform and its inverse (``stft``, ``istft``) and Welch's averaged-periodogram
estimates of the power and cross spectral densities (``welch``, ``csd``).

Segment lengths, overlaps and FFT sizes are static (Python ints); the signal (and ``fs``)
may be traced. Framing is one gather, overlap-add one scatter-add, the transforms
``jaxlite.numpy.fft``, so grad, vmap and jit follow.

Layer: scipy (compositions of jaxlite.numpy).
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .. import dtypes
from .._traceback import user_stacklevel as _user_stacklevel
from ..core.trace import Tracer
from ..errors import ConcretizationTypeError
from .. import numpy as jnp
from ..numpy._util import canonicalize_axis, check_arraylike, ensure_array, \
    promote_dtypes_inexact

_BOUNDARIES = ["even", "odd", "constant", "zeros", None]


def _complex_of(dt) -> np.dtype:
    """The complex dtype a spectrum of ``dt`` data has (complex128 only for 64-bit data;
    integers count as their inexact type)."""
    dt = dtypes.to_inexact_dtype(dt)
    wide = dt in (np.dtype(np.float64), np.dtype(np.complex128))
    return dtypes.canonicalize_dtype(np.complex128 if wide else np.complex64)


def _hann(n: int) -> np.ndarray:
    """The periodic Hann window of ``n`` points, sin(pi k / n)^2 (a single 1 for n = 1)."""
    if n == 1:
        return np.ones(1)
    return np.sin(np.pi * np.arange(n) / n) ** 2 if n else np.zeros(0)


def _named_window(window, n: int) -> np.ndarray:
    """A window given by name or (name, parameters...) tuple, periodic, ``n`` points.
    'hann' is computed here; the others come from SciPy's window catalogue (as in JAX),
    which raises ValueError for an unknown name or missing parameters."""
    if isinstance(window, str) and window == "hann":
        return _hann(n)
    try:
        from scipy.signal import get_window
    except ImportError as err:  # pragma: no cover - SciPy is a dependency
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return np.asarray(get_window(window, n))


def _window_and_length(window, nperseg, input_length: int, dtype):
    """(window as an array of ``dtype``, segment length) from the ``window``/``nperseg``
    pair. A named window takes ``nperseg`` (the whole signal when None; clipped to it with
    a UserWarning); an array window sets the length itself and must be 1-D, no longer
    than the signal and match ``nperseg`` when that is given (ValueError)."""
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg={n} is greater than input_length={input_length}, "
                          f"using nperseg={input_length}", stacklevel=_user_stacklevel())
            n = input_length
        return jnp.asarray(_named_window(window, n), dtype=dtype), n
    win = jnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError(f"window must be 1-D, got shape {tuple(win.shape)}")
    if input_length < win.size:
        raise ValueError(f"window is longer than input signal ({win.size} > "
                         f"{input_length} samples)")
    if n != win.size:
        raise ValueError(f"value specified for nperseg ({n}) is different from length of "
                         f"window ({win.size})")
    return win, n


def _extend(x, n: int, boundary):
    """``x`` extended by ``n`` samples at both ends of its last axis: mirrored without the
    edge ('even'), point-reflected about the edge ('odd'), the edge repeated ('constant'),
    zeros ('zeros'), or unchanged (None)."""
    if boundary is None or n < 1:
        return x
    pads = [(0, 0)] * (x.ndim - 1) + [(n, n)]
    if boundary == "even":
        return jnp.pad(x, pads, mode="reflect")
    if boundary == "constant":
        return jnp.pad(x, pads, mode="edge")
    if boundary == "zeros":
        return jnp.pad(x, pads)
    length = x.shape[-1]
    if n > length - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {length - 1}.")
    # odd: 2 * edge - mirror image, at each end
    head, tail = x[..., :1], x[..., -1:]
    left = 2 * head - jnp.flip(x[..., 1:n + 1], axis=-1)
    right = 2 * tail - jnp.flip(x[..., length - n - 1:length - 1], axis=-1)
    return jnp.concatenate([left, x, right], axis=-1)


def _detrender(detrend, axis: int):
    """The per-segment detrending function: SciPy's detrend of a type name along the
    samples, a user callable (given the segments with their samples along ``axis``, as
    SciPy passes them), or nothing for a false value. ValueError for anything else."""
    if isinstance(detrend, str):
        from .signal import detrend as detrend_fn  # signal imports this module
        return lambda seg: detrend_fn(seg, axis=-1, type=detrend)
    if callable(detrend):
        if axis == -1:
            return detrend

        def moved(seg):
            return jnp.moveaxis(detrend(jnp.moveaxis(seg, -1, axis)), axis, -1)
        return moved
    if not detrend:
        return lambda seg: seg
    raise ValueError(f"Unsupported detrend type: {detrend}")


def _segment_spectra(x, win, detrend_fn, nperseg: int, noverlap: int, nfft: int,
                     twosided: bool):
    """The FFTs of the detrended, windowed segments of ``x`` (samples on the last axis):
    shape ``(..., nseg, nfreq)``."""
    step = nperseg - noverlap
    starts = np.arange(0, x.shape[-1] - nperseg + 1, step)
    segs = x[..., starts[:, None] + np.arange(nperseg)]  # one gather: (..., nseg, nperseg)
    segs = detrend_fn(segs)
    if jnp.iscomplexobj(win) and not jnp.iscomplexobj(segs):
        segs = segs.astype(_complex_of(segs.dtype))
    segs = win * segs
    if twosided:
        return jnp.fft.fft(segs, n=nfft)
    return jnp.fft.rfft(jnp.real(segs), n=nfft)


def _concrete_int(value, what: str) -> int:
    """``int(value)``; ConcretizationTypeError naming ``what`` for a traced value."""
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(value, f"{what} of the windowed FFT (a segment "
                                             f"length, overlap or FFT size) must be static.")
    return int(value)


def _spectral(name, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
    """(freqs, times, per-segment spectra with the frequency axis at ``axis`` and the
    segment axis last) for ``stft`` (mode 'stft': scaled FFTs) and ``csd`` (mode 'psd':
    scaled (cross) periodograms, real when ``y`` is None)."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{_BOUNDARIES}")
    if y is None:
        check_arraylike(name, x)
        (x,) = promote_dtypes_inexact(ensure_array(x))
        x = ensure_array(x)
    else:
        check_arraylike(name, x, y)
        x, y = (ensure_array(a) for a in promote_dtypes_inexact(ensure_array(x),
                                                               ensure_array(y)))
    raw_axis = operator.index(axis)
    axis = canonicalize_axis(raw_axis, x.ndim)
    if y is None:
        outer = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs "
                             f"{y.ndim}).")
        try:
            outer = tuple(np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                              y.shape[:axis] + y.shape[axis + 1:]))
        except ValueError as err:
            raise ValueError(f"x and y cannot be broadcast together: shapes "
                             f"{tuple(x.shape)} and {tuple(y.shape)} along axis "
                             f"{axis}.") from err
    out_dtype = _complex_of(x.dtype)
    freq_dtype = np.finfo(out_dtype).dtype

    if nperseg is not None:
        nperseg = _concrete_int(nperseg, "nperseg")
        if nperseg < 1:
            raise ValueError(f"nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _window_and_length(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else _concrete_int(noverlap, "noverlap")
    nfft = nperseg if nfft is None else _concrete_int(nfft, "nfft")

    if x.size == 0 or (y is not None and y.size == 0):
        shape = x.shape if y is None else \
            outer[:axis] + (min(x.shape[axis], y.shape[axis]),) + outer[axis:]
        return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
                jnp.zeros(shape, out_dtype))

    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y = jnp.moveaxis(y, axis, -1)
        # the shorter signal is zero-padded to the longer one's length
        n = max(x.shape[-1], y.shape[-1])
        x, y = (jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, n - a.shape[-1])])
                for a in (x, y))
    if nfft < nperseg:
        raise ValueError(f"nfft must be greater than or equal to nperseg (got nfft={nfft}, "
                         f"nperseg={nperseg}).")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap must be less than nperseg (got noverlap={noverlap}, "
                         f"nperseg={nperseg}).")
    step = nperseg - noverlap
    sigs = [x] if y is None else [x, y]
    sigs = [_extend(s, nperseg // 2, boundary) for s in sigs]
    if padded:
        # zeros at the end so that whole segments cover the signal
        extra = (-(sigs[0].shape[-1] - nperseg) % step) % nperseg
        sigs = [jnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, extra)]) for s in sigs]
    length = sigs[0].shape[-1]
    detrend_fn = _detrender(detrend, raw_axis)

    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)

    twosided = not return_onesided
    if not twosided and any(jnp.iscomplexobj(s) for s in sigs):
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=_user_stacklevel())
        twosided = True
    freqs = (jnp.fft.fftfreq if twosided else jnp.fft.rfftfreq)(nfft, 1 / fs,
                                                                 dtype=freq_dtype)
    spectra = [_segment_spectra(s, win, detrend_fn, nperseg, noverlap, nfft, twosided)
               for s in sigs]
    if y is not None:
        result = jnp.conj(spectra[0]) * spectra[1]
    elif mode == "psd":
        result = jnp.conj(spectra[0]) * spectra[0]
    else:
        result = spectra[0]
    result = result * jnp.asarray(scale).astype(_complex_of(jnp.result_type(scale)))
    if not twosided and mode == "psd":
        # one-sided: the negative frequencies' power folds onto the positive ones (not
        # onto DC, nor onto Nyquist when nfft is even)
        fold = np.full(result.shape[-1], 2.0)
        fold[0] = 1.0
        if nfft % 2 == 0:
            fold[-1] = 1.0
        result = result * jnp.asarray(fold, dtype=freq_dtype)

    times = jnp.arange(nperseg / 2, length - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        times = times - (nperseg / 2) / fs
    result = result.astype(out_dtype)
    if y is None and mode != "stft":
        result = jnp.real(result)
    return freqs, times, jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap=None, nfft=None,
         detrend=False, return_onesided: bool = True, boundary="zeros", padded: bool = True,
         axis: int = -1):
    """The short-time Fourier transform of ``x`` along ``axis`` (``jax.scipy.signal.stft``).

    ``x`` is cut into segments of ``nperseg`` samples (clipped, with a UserWarning, to the
    signal's length) overlapping by ``noverlap`` (default ``nperseg // 2``), after the ends
    are extended by ``nperseg // 2`` samples as ``boundary`` says ('zeros', 'even', 'odd',
    'constant' or None) and, when ``padded``, zeros are appended to fill the last segment.
    Each segment is detrended (``detrend``: False, 'constant', 'linear' or a callable),
    multiplied by ``window`` (a name such as 'hann', a (name, parameter...) tuple, or a 1-D
    array whose length sets ``nperseg``) and transformed by an ``nfft``-point FFT (default
    ``nperseg``), scaled by ``1 / sum(window)``.

    Returns:
      ``(f, t, Zxx)``: ``f`` the ``nfft // 2 + 1`` frequencies (all ``nfft`` when
      ``return_onesided`` is False or ``x`` is complex, with a UserWarning in the latter
      case), ``t`` the segment centres, both real; ``Zxx`` complex (complex64, or
      complex128 for 64-bit input) of ``x``'s shape with ``axis`` replaced by the
      frequencies and the segments appended last. Empty ``x`` gives zeros of its shape.

    Raises:
      TypeError: ``x`` is not an array.
      ValueError: a bad ``axis``, ``nperseg < 1``, ``noverlap >= nperseg``,
        ``nfft < nperseg``, an unknown window/boundary/detrend, a window array that is not
        1-D, longer than ``x`` or not ``nperseg`` long.
    """
    return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend,
                     return_onesided, "spectrum", axis, "stft", boundary, padded)


def _averaged(name, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
              scaling, axis, average):
    """(freqs, the segments' periodograms averaged) for ``csd`` and ``welch``."""
    freqs, _, pxy = _spectral(name, x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        nseg = pxy.shape[-1]
        if nseg == 1:
            pxy = pxy.reshape(pxy.shape[:-1])
        elif average == "median":
            # the median of n exponential-like periodograms is biased low by this factor
            k = np.arange(2.0, nseg, 2)
            bias = 1 + np.sum(1 / (k + 1) - 1 / k)
            if jnp.iscomplexobj(pxy):
                pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy),
                                                                           axis=-1)
            else:
                pxy = jnp.median(pxy, axis=-1)
            pxy = pxy / jnp.asarray(bias, dtype=pxy.dtype)
        elif average == "mean":
            pxy = pxy.mean(axis=-1)
        else:
            raise ValueError(f'average must be "median" or "mean", got {average}')
    return freqs, pxy


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean"):
    """The cross power spectral density of ``x`` and ``y`` by Welch's method
    (``jax.scipy.signal.csd``): the mean (or bias-corrected median, ``average='median'``)
    over segments of ``conj(X) * Y``, the windowed segment FFTs (segmenting, ``window``,
    ``nperseg`` (default: the whole signal), ``noverlap``, ``nfft`` and ``detrend`` as in
    ``stft``, no boundary extension or padding). ``scaling`` 'density' divides by
    ``fs * sum(window**2)`` (units^2/Hz), 'spectrum' by ``sum(window)**2``; one-sided
    results double every bin but DC (and Nyquist for even ``nfft``).

    ``x`` and ``y`` need the same rank; their other axes broadcast and the shorter is
    zero-padded along ``axis``. ``y=None`` gives the real power spectral density of ``x``.

    Returns:
      ``(f, Pxy)``: real frequencies; ``Pxy`` complex (real when ``y`` is None and ``x``
      is not empty) with the broadcast shape, ``axis`` holding the frequencies.

    Raises:
      TypeError: a non-array input.
      ValueError: ranks differ, shapes do not broadcast, an unknown ``scaling`` or
        ``average`` (checked only when there are several segments to average), and the
        ``stft`` errors.
    """
    return _averaged("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                     return_onesided, scaling, axis, average)


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean"):
    """The power spectral density of ``x`` by Welch's method (``jax.scipy.signal.welch``):
    ``csd(x, None, ...)``'s real part; arguments, shapes and errors as ``csd``.

    Returns:
      ``(f, Pxx)``, both real (float32, or float64 for 64-bit input).
    """
    freqs, pxx = _averaged("welch", x, None, fs, window, nperseg, noverlap, nfft, detrend,
                           return_onesided, scaling, axis, average)
    return freqs, jnp.real(pxx)


def _overlap_add(frames, step: int):
    """Frames ``(..., nframes, width)`` summed at offsets ``0, step, 2 step, ...`` into
    ``(..., step * (nframes - 1) + width)``: one scatter-add."""
    *batch, nframes, width = frames.shape
    idx = np.arange(nframes)[:, None] * step + np.arange(width)
    out = jnp.zeros((*batch, step * (nframes - 1) + width), frames.dtype)
    return out.at[..., idx].add(frames)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
    """The inverse short-time Fourier transform (``jax.scipy.signal.istft``): each column
    of ``Zxx`` (frequencies along ``freq_axis``, segments along ``time_axis``) is inverse
    transformed (``irfft`` when ``input_onesided``, else ``ifft``, ``nfft`` points),
    cut to ``nperseg`` samples, windowed again and overlap-added at a step of
    ``nperseg - noverlap``, then divided by the overlap-added squared window (where that
    exceeds 1e-10). With ``boundary`` the ``nperseg // 2`` samples ``stft`` added at each
    end are removed.

    Defaults: ``nperseg`` ``2 * (nfreq - 1)`` one-sided (``nfreq`` two-sided), ``nfft``
    the same (``nperseg`` when that is one more, an odd one-sided length), ``noverlap``
    ``nperseg // 2``. ``window`` as in ``stft`` (an array must be 1-D and ``nperseg`` long).

    Returns:
      ``(t, x)``: ``t`` the times ``arange(x.shape[0]) / fs`` (real), ``x`` real for
      one-sided input (complex otherwise) in ``Zxx``'s complex precision, the other axes
      first and time at ``time_axis``'s place.

    Raises:
      TypeError: ``Zxx`` is not an array.
      ValueError: ``Zxx`` below 2-D, equal or out-of-range axes, ``nperseg < 1``,
        ``nfft < nperseg``, ``noverlap >= nperseg``, a bad window.
    """
    check_arraylike("istft", Zxx)
    Zxx = ensure_array(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"Input stft must be at least 2d! Got shape {tuple(Zxx.shape)}")
    freq_axis = canonicalize_axis(freq_axis, Zxx.ndim, "freq_axis")
    time_axis = canonicalize_axis(time_axis, Zxx.ndim, "time_axis")
    if freq_axis == time_axis:
        raise ValueError(f"Must specify differing time and frequency axes! Both are "
                         f"{freq_axis}.")
    Zxx = Zxx.astype(_complex_of(Zxx.dtype))

    nfreq = Zxx.shape[freq_axis]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = n_default if nperseg is None else _concrete_int(nperseg, "nperseg")
    if nperseg < 1:
        raise ValueError(f"nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = n_default + 1 if input_onesided and nperseg == n_default + 1 else n_default
    else:
        nfft = _concrete_int(nfft, "nfft")
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = nperseg // 2 if noverlap is None else _concrete_int(noverlap, "noverlap")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap must be less than nperseg (got noverlap={noverlap}, "
                         f"nperseg={nperseg}).")
    step = nperseg - noverlap

    if (freq_axis, time_axis) != (Zxx.ndim - 2, Zxx.ndim - 1):
        outer = tuple(i for i in range(Zxx.ndim) if i not in (freq_axis, time_axis))
        Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    cols = inverse(Zxx, n=nfft, axis=-2)[..., :nperseg, :]  # (..., nperseg, nseg)

    if isinstance(window, (str, tuple)):
        win = jnp.asarray(_named_window(window, nperseg), dtype=cols.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError(f"window must be 1-D, got shape {tuple(win.shape)}")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}, got {win.shape[0]}")
    cols = cols * win.sum()  # undoes stft's 1 / sum(window) scaling
    nseg = cols.shape[-1]
    frames = jnp.swapaxes(cols * win[:, None], -2, -1)
    x = _overlap_add(frames, step)
    norm = _overlap_add(jnp.broadcast_to(win * win, (nseg, nperseg)), step)
    if boundary:
        half = nperseg // 2
        x = x[..., half:-half]
        norm = norm[..., half:-half]
    big = jnp.real(norm) > 1e-10 if jnp.iscomplexobj(norm) else norm > 1e-10
    x = x / jnp.where(big, norm, 1.0)

    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    times = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return times, x


__all__ = ["stft", "istft", "csd", "welch"]
