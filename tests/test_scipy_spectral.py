"""jaxlite.scipy.signal's spectral analysis (stft, istft, welch, csd) against
jax.scipy.signal: value, shape, dtype and weak type of every result, or the exception
type, for each case; the warnings; jit, vmap and grad; float64 under x64. The few cases
where jaxlite deliberately differs from JAX (README, known differences) are checked
against SciPy, whose meaning jaxlite keeps there."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.scipy.signal  # noqa: F401
from oracle import assert_like_jax
from test_numpy_breadth import _compare as _compare_like_jax, _run

A = np.array
_rng = np.random.default_rng(0)
X = _rng.standard_normal(40).astype(np.float32)            # one signal
Y = _rng.standard_normal(40).astype(np.float32)
X2 = _rng.standard_normal((3, 33)).astype(np.float32)      # three signals
XC = (_rng.standard_normal(24) + 1j * _rng.standard_normal(24)).astype(np.complex64)
XI = _rng.integers(-5, 5, 30).astype(np.int32)

# float32 FFTs of ~40 unit-variance samples: values of order 1, rounding ~1e-6
RTOL, ATOL = 2e-5, 2e-5


def S(lib):
    return lib.scipy.signal


def _z(lib, *args, **kw):
    """The STFT of ``X`` (the input of the istft cases), computed by ``lib`` itself."""
    return S(lib).stft(*args, **kw)[2]


CASES = {
    # stft: defaults, segment/overlap/fft sizes, boundaries, padding, detrending, windows
    "stft nperseg 8": lambda j, n: S(j).stft(X, nperseg=8),
    "stft nperseg 7 noverlap 2": lambda j, n: S(j).stft(X, nperseg=7, noverlap=2),
    "stft noverlap 0": lambda j, n: S(j).stft(X, nperseg=8, noverlap=0),
    "stft noverlap 7": lambda j, n: S(j).stft(X, nperseg=8, noverlap=7),
    "stft nperseg 1": lambda j, n: S(j).stft(X[:6], nperseg=1, noverlap=0),
    "stft nfft 11": lambda j, n: S(j).stft(X, nperseg=8, nfft=11),
    "stft fs": lambda j, n: S(j).stft(X, fs=250.0, nperseg=10),
    "stft twosided": lambda j, n: S(j).stft(X, nperseg=8, return_onesided=False),
    "stft boundary even": lambda j, n: S(j).stft(X, nperseg=7, boundary="even"),
    "stft boundary odd": lambda j, n: S(j).stft(X, nperseg=7, boundary="odd", padded=False),
    "stft boundary constant": lambda j, n: S(j).stft(X, nperseg=6, boundary="constant"),
    "stft boundary None": lambda j, n: S(j).stft(X, nperseg=7, boundary=None),
    "stft unpadded no boundary": lambda j, n: S(j).stft(X, nperseg=9, boundary=None,
                                                        padded=False),
    "stft detrend constant": lambda j, n: S(j).stft(X, nperseg=8, detrend="constant"),
    "stft detrend linear": lambda j, n: S(j).stft(X, nperseg=8, detrend="linear"),
    "stft window tuple": lambda j, n: S(j).stft(X, window=("tukey", 0.25), nperseg=8),
    "stft window hamming": lambda j, n: S(j).stft(X, window="hamming", nperseg=8),
    "stft window array": lambda j, n: S(j).stft(X, window=np.arange(1.0, 7.0)),
    "stft window array nperseg": lambda j, n: S(j).stft(X, window=np.ones(6), nperseg=6),
    "stft axis 0": lambda j, n: S(j).stft(X2.T, nperseg=8, axis=0),
    "stft 2-d": lambda j, n: S(j).stft(X2, nperseg=8),
    "stft 3-d axis 1": lambda j, n: S(j).stft(X2.reshape(3, 33, 1), nperseg=5, axis=1),
    "stft int": lambda j, n: S(j).stft(XI, nperseg=8),
    "stft complex64": lambda j, n: S(j).stft(XC, nperseg=8, return_onesided=False),
    "stft empty": lambda j, n: S(j).stft(np.zeros(0, np.float32), nperseg=4),
    "stft empty 2-d": lambda j, n: S(j).stft(np.zeros((2, 0), np.float32)),
    "stft odd boundary short": lambda j, n: S(j).stft(X[:3], nperseg=3, boundary="odd"),
    # stft errors
    "stft noverlap >= nperseg": lambda j, n: S(j).stft(X, nperseg=8, noverlap=8),
    "stft nfft < nperseg": lambda j, n: S(j).stft(X, nperseg=8, nfft=4),
    "stft nperseg 0": lambda j, n: S(j).stft(X, nperseg=0),
    "stft window length != nperseg": lambda j, n: S(j).stft(X, window=np.ones(5), nperseg=8),
    "stft window 2-d": lambda j, n: S(j).stft(X, window=np.ones((2, 5))),
    "stft window longer than x": lambda j, n: S(j).stft(X, window=np.ones(41)),
    "stft window array on empty": lambda j, n: S(j).stft(np.zeros(0, np.float32),
                                                         window=np.ones(2)),
    "stft unknown window": lambda j, n: S(j).stft(X, window="nope", nperseg=8),
    "stft window needs parameter": lambda j, n: S(j).stft(X, window="kaiser", nperseg=8),
    "stft bad boundary": lambda j, n: S(j).stft(X, nperseg=8, boundary="wrap"),
    "stft odd boundary too long": lambda j, n: S(j).stft(X[:3], nperseg=8, boundary="odd",
                                                         window=np.ones(3)),
    "stft bad axis": lambda j, n: S(j).stft(X, nperseg=8, axis=1),
    "stft bad negative axis": lambda j, n: S(j).stft(X2, nperseg=8, axis=-3),
    "stft 0-d": lambda j, n: S(j).stft(A(1.0, np.float32)),
    "stft detrend True": lambda j, n: S(j).stft(X, nperseg=8, detrend=True),
    "stft detrend unknown": lambda j, n: S(j).stft(X, nperseg=8, detrend="quadratic"),

    # welch
    "welch whole signal": lambda j, n: S(j).welch(X),
    "welch nperseg 8": lambda j, n: S(j).welch(X, nperseg=8),
    "welch nperseg 9 nfft 16": lambda j, n: S(j).welch(X, nperseg=9, nfft=16),
    "welch nfft odd": lambda j, n: S(j).welch(X, nperseg=8, nfft=13),
    "welch spectrum": lambda j, n: S(j).welch(X, fs=100.0, nperseg=10, scaling="spectrum"),
    "welch fs": lambda j, n: S(j).welch(X, fs=8.0, nperseg=16),
    "welch twosided": lambda j, n: S(j).welch(X, nperseg=8, return_onesided=False),
    "welch median": lambda j, n: S(j).welch(X, nperseg=8, average="median"),
    "welch median two segments": lambda j, n: S(j).welch(X[:16], nperseg=8, noverlap=0,
                                                         average="median"),
    "welch linear detrend": lambda j, n: S(j).welch(X, nperseg=8, detrend="linear"),
    "welch no detrend": lambda j, n: S(j).welch(X, nperseg=8, detrend=False),
    "welch window array": lambda j, n: S(j).welch(X, window=np.hanning(10), noverlap=3),
    "welch window blackman": lambda j, n: S(j).welch(X, window="blackman", nperseg=12),
    "welch 2-d": lambda j, n: S(j).welch(X2, nperseg=8),
    "welch axis 0": lambda j, n: S(j).welch(X2.T, nperseg=8, axis=0),
    "welch int": lambda j, n: S(j).welch(XI, nperseg=8),
    "welch complex64": lambda j, n: S(j).welch(XC, nperseg=8, return_onesided=False),
    "welch empty": lambda j, n: S(j).welch(np.zeros(0, np.float32)),
    "welch empty 2-d": lambda j, n: S(j).welch(np.zeros((3, 0), np.float32), nperseg=4),
    "welch bad average one segment": lambda j, n: S(j).welch(X, average="max"),
    "welch bad average": lambda j, n: S(j).welch(X, nperseg=8, average="max"),
    "welch bad scaling": lambda j, n: S(j).welch(X, nperseg=8, scaling="power"),
    "welch noverlap >= nperseg": lambda j, n: S(j).welch(X, nperseg=8, noverlap=9),
    "welch bad axis": lambda j, n: S(j).welch(X2, axis=2),

    # csd
    "csd": lambda j, n: S(j).csd(X, Y, nperseg=8),
    "csd y None": lambda j, n: S(j).csd(X, None, nperseg=8),
    "csd same signal": lambda j, n: S(j).csd(X, X, nperseg=8),
    "csd spectrum median": lambda j, n: S(j).csd(X, Y, nperseg=8, scaling="spectrum",
                                                 average="median"),
    "csd twosided": lambda j, n: S(j).csd(X, Y, nperseg=8, return_onesided=False),
    "csd shorter y": lambda j, n: S(j).csd(X, Y[:30], nperseg=8),
    "csd shorter x": lambda j, n: S(j).csd(X[:25], Y, nperseg=8),
    "csd broadcast": lambda j, n: S(j).csd(X2[:, None], X2[None, :2], nperseg=8),
    "csd axis 0": lambda j, n: S(j).csd(X2.T, X2.T[:, ::-1], nperseg=8, axis=0),
    "csd complex and real": lambda j, n: S(j).csd(XC, X[:24], nperseg=8,
                                                  return_onesided=False),
    "csd int": lambda j, n: S(j).csd(XI, XI[::-1], nperseg=10),
    "csd one segment": lambda j, n: S(j).csd(X[:8], Y[:8], nperseg=8),
    "csd empty x": lambda j, n: S(j).csd(np.zeros(0, np.float32), X),
    "csd empty None": lambda j, n: S(j).csd(np.zeros(0, np.float32), None),
    "csd ranks differ": lambda j, n: S(j).csd(X, X[None], nperseg=8),
    "csd shapes do not broadcast": lambda j, n: S(j).csd(np.ones((2, 20)), np.ones((3, 20)),
                                                         nperseg=8),
    "csd y list": lambda j, n: S(j).csd(X, [1.0, 2.0], nperseg=8),

    # istft (on each library's own stft)
    "istft round trip": lambda j, n: S(j).istft(_z(j, X, nperseg=8)),
    "istft round trip 2-d": lambda j, n: S(j).istft(_z(j, X2, nperseg=8)),
    "istft round trip nfft": lambda j, n: S(j).istft(_z(j, X, nperseg=8, nfft=12),
                                                     nperseg=8),
    "istft twosided": lambda j, n: S(j).istft(_z(j, X, nperseg=8, return_onesided=False),
                                              input_onesided=False),
    "istft complex signal": lambda j, n: S(j).istft(_z(j, XC, nperseg=8,
                                                       return_onesided=False),
                                                    input_onesided=False),
    "istft no boundary": lambda j, n: S(j).istft(_z(j, X, nperseg=8, boundary=None),
                                                 boundary=False),
    "istft noverlap 6": lambda j, n: S(j).istft(_z(j, X, nperseg=8, noverlap=6),
                                                noverlap=6),
    "istft window tuple": lambda j, n: S(j).istft(_z(j, X, nperseg=8,
                                                     window=("tukey", 0.5)),
                                                  window=("tukey", 0.5)),
    "istft window array": lambda j, n: S(j).istft(_z(j, X, window=np.hanning(8) + 0.1),
                                                  window=np.hanning(8) + 0.1),
    "istft fs": lambda j, n: S(j).istft(_z(j, X, nperseg=8), fs=4.0),
    "istft axes swapped": lambda j, n: S(j).istft(np.swapaxes(_z(j, X2, nperseg=8), -1, -2),
                                                  time_axis=-2, freq_axis=-1),
    "istft axes 3-d": lambda j, n: S(j).istft(np.moveaxis(_z(j, X2, nperseg=8), 0, -1),
                                              freq_axis=0, time_axis=1),
    "istft float input": lambda j, n: S(j).istft(np.ones((5, 6), np.float32)),
    "istft int input": lambda j, n: S(j).istft(np.ones((5, 6), np.int32)),
    "istft random": lambda j, n: S(j).istft(_rng_z()),
    # istft errors
    "istft 1-d": lambda j, n: S(j).istft(np.ones(4, np.complex64)),
    "istft same axes": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64), time_axis=0,
                                               freq_axis=-2),
    "istft bad axis": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64), time_axis=2),
    "istft nfft < nperseg": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64), nfft=2),
    "istft noverlap >= nperseg": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64),
                                                         noverlap=4),
    "istft negative nperseg": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64),
                                                      nperseg=-1),
    "istft window length": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64),
                                                   window=np.ones(3)),
    "istft window 2-d": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64),
                                                window=np.ones((2, 4))),
    "istft unknown window": lambda j, n: S(j).istft(np.ones((3, 4), np.complex64),
                                                    window="nope"),
    "istft list": lambda j, n: S(j).istft([[1.0, 2.0], [3.0, 4.0]]),
}


def _rng_z():
    r = np.random.default_rng(1)
    return (r.standard_normal((5, 7)) + 1j * r.standard_normal((5, 7))).astype(np.complex64)


def _jax_jitted(f):
    """``f(lib, jnp)`` with real JAX under one ``jax.jit`` (JAX's op-by-op dispatch of
    these compositions costs seconds a case; the values, dtypes, weak types and the
    Python-side exceptions are the same)."""
    import jax
    return lambda lib, n: jax.jit(lambda: f(lib, n))()


def check(f, rjax, rtol=RTOL, atol=ATOL):
    """``f(lib, jnp)`` on jaxlite (eagerly) and on JAX: the same results, or the same
    exception type."""
    import jax.numpy as rjnp
    want, werr = _run(_jax_jitted(f), rjax, rjnp)
    got, gerr = _run(f, jaxlite, jaxlite.numpy)
    if werr is not None:
        assert gerr is not None, f"JAX raised {type(werr).__name__}: {werr}; jaxlite returned"
        assert type(gerr) is type(werr) or isinstance(gerr, type(werr)), \
            f"jaxlite raised {type(gerr).__name__}: {gerr}; JAX {type(werr).__name__}: {werr}"
        return
    if gerr is not None:
        raise gerr
    _compare_like_jax(got, want, rtol, atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_spectral_like_jax(name, rjax):
    import jax.scipy.signal  # noqa: F401
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(CASES[name], rjax)


@pytest.mark.parametrize("call", [
    lambda s: s.stft(X, nperseg=64),                    # nperseg clipped to the signal
    lambda s: s.welch(np.zeros(0, np.float32), nperseg=4),
    lambda s: s.stft(XC, nperseg=8),                    # complex: two-sided
    lambda s: s.csd(XC, X[:24], nperseg=8),
])
def test_warnings_like_jax(call, rjax):
    import jax.scipy.signal
    with pytest.warns(UserWarning):
        rjax.jit(lambda: call(jax.scipy.signal))()
    with pytest.warns(UserWarning):
        call(jaxlite.scipy.signal)


def test_clipped_nperseg_matches_jax(rjax):
    """nperseg beyond the signal is clipped to it: the same result as asking for it."""
    import jax.scipy.signal
    with pytest.warns(UserWarning, match="nperseg"):
        got = jaxlite.scipy.signal.stft(X, nperseg=256)
    want = rjax.jit(lambda: jax.scipy.signal.stft(X, nperseg=40))()
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=RTOL, atol=ATOL)


def _both(f, rjax):
    """``f(lib)`` on jaxlite (eagerly) and on real JAX (under one jit)."""
    import jax.scipy.signal  # noqa: F401
    return f(jaxlite), rjax.jit(lambda: f(rjax))()


def _compare(got, want, rtol=RTOL, atol=ATOL):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=rtol, atol=atol)


def test_jit_like_jax(rjax):
    def f(lib):
        stft = lib.jit(lambda x: S(lib).stft(x, nperseg=8))
        welch = lib.jit(lambda x, fs: S(lib).welch(x, fs=fs, nperseg=8))
        istft = lib.jit(lambda z: S(lib).istft(z, nperseg=8))
        z = stft(X)[2]
        return stft(X) + welch(X, 3.0) + istft(z)
    _compare(*_both(f, rjax))


def test_vmap_like_jax(rjax):
    def f(lib):
        welch = lib.vmap(lambda x: S(lib).welch(x, nperseg=8)[1])
        stft = lib.vmap(lambda x: S(lib).stft(x, nperseg=8)[2], in_axes=1, out_axes=-1)
        csd = lib.vmap(lambda x, y: S(lib).csd(x, y, nperseg=8)[1], in_axes=(0, None))
        return welch(X2), stft(X2.T), csd(X2, X2[0])
    _compare(*_both(f, rjax))


def test_vmap_istft_like_jax(rjax):
    def f(lib):
        z = S(lib).stft(X2, nperseg=8)[2]
        return lib.vmap(lambda zz: S(lib).istft(zz)[1])(z)
    _compare(*_both(f, rjax))


def test_grad_like_jax(rjax):
    def f(lib):
        def power(x):
            return S(lib).welch(x, nperseg=8, average="median")[1].sum()

        def stft_energy(x):
            z = S(lib).stft(x, nperseg=8, boundary="odd")[2]
            return (z.real ** 2 + z.imag ** 2).sum()

        def round_trip(x):
            return (S(lib).istft(S(lib).stft(x, nperseg=8)[2])[1] ** 3).sum()

        def cross(x):
            return S(lib).csd(x, Y, nperseg=8)[1].real.sum()

        return (lib.grad(power)(X), lib.grad(stft_energy)(X), lib.grad(round_trip)(X),
                lib.grad(cross)(X))
    _compare(*_both(f, rjax), rtol=1e-4, atol=1e-4)


def test_float64_like_jax(rjax, x64):
    x = X.astype(np.float64)
    xc = XC.astype(np.complex128)

    def f(lib):
        z = S(lib).stft(x, nperseg=8)
        return (z + S(lib).istft(z[2]) + S(lib).welch(x, nperseg=10, average="median")
                + S(lib).csd(x, x[::-1], nperseg=8)
                + S(lib).stft(xc, nperseg=8, return_onesided=False))
    _compare(*_both(f, rjax), rtol=1e-12, atol=1e-12)


# ---- deliberate differences from JAX (README): SciPy's meaning is kept -----------------

def test_istft_noverlap_zero_is_zero():
    """JAX reads noverlap=0 as 'unset' (nperseg // 2) and returns half the signal;
    jaxlite, as SciPy, uses no overlap and reconstructs the signal."""
    import scipy.signal as ss
    z = jaxlite.scipy.signal.stft(X, nperseg=8, noverlap=0, window="boxcar")[2]
    t, x = jaxlite.scipy.signal.istft(z, noverlap=0, window="boxcar")
    ts, xs = ss.istft(np.asarray(z), noverlap=0, window="boxcar")
    assert x.shape == xs.shape == (40,) and x.dtype == np.float32
    np.testing.assert_allclose(x, xs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x, X, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(t, ts)


def test_istft_odd_nperseg():
    """JAX's istft of an odd one-sided nperseg raises TypeError (its inverse FFT ignores
    the odd length it computed); jaxlite inverts it, as SciPy."""
    import scipy.signal as ss
    z = jaxlite.scipy.signal.stft(X, nperseg=5)[2]
    _, x = jaxlite.scipy.signal.istft(z, nperseg=5)
    _, xs = ss.istft(np.asarray(z), nperseg=5)
    assert x.shape == xs.shape and x.dtype == np.float32
    np.testing.assert_allclose(x, xs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x[:40], X, rtol=1e-4, atol=1e-5)


def test_istft_nperseg_zero_raises():
    """JAX reads nperseg=0 as 'unset'; jaxlite, as SciPy, rejects it."""
    with pytest.raises(ValueError, match="nperseg"):
        jaxlite.scipy.signal.istft(np.ones((3, 4), np.complex64), nperseg=0)


@pytest.mark.parametrize("axis,x", [(-1, X), (1, X2), (0, X2.T)])
def test_callable_detrend_gets_segments(axis, x):
    """A detrend callable receives the segments with their samples along ``axis`` (as
    SciPy passes them; JAX moves the other axis, detrending across segments)."""
    import scipy.signal as ss

    def demean(seg):
        return seg - seg.mean(axis=axis, keepdims=True)
    got = jaxlite.scipy.signal.stft(x, nperseg=8, detrend=demean, axis=axis)
    want = ss.stft(x, nperseg=8, detrend=demean, axis=axis)
    named = jaxlite.scipy.signal.stft(x, nperseg=8, detrend="constant", axis=axis)
    for g, w, c in zip(got, want, named):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", ["stft", "welch"])
def test_list_input_raises_type_error(fn, rjax):
    """A list signal: TypeError naming the function (JAX fails with an AttributeError on
    the list's missing ndim)."""
    with pytest.raises(TypeError, match=fn):
        getattr(jaxlite.scipy.signal, fn)([1.0, 2.0, 3.0])


@pytest.mark.parametrize("fn,kw", [("stft", "nperseg"), ("welch", "noverlap"),
                                   ("istft", "nfft")])
def test_traced_sizes_raise_like_jax(fn, kw, rjax):
    """Segment sizes are static: a traced one raises ConcretizationTypeError, as in JAX."""
    import jax.scipy.signal
    arg = np.ones((5, 6), np.complex64) if fn == "istft" else X

    def traced(lib):
        return lib.jit(lambda n: getattr(lib.scipy.signal, fn)(arg, **{kw: n}))(8)
    with pytest.raises(rjax.errors.ConcretizationTypeError):
        traced(rjax)
    with pytest.raises(jaxlite.errors.ConcretizationTypeError, match=kw):
        traced(jaxlite)
