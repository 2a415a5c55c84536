"""jaxlite.scipy.signal against jax.scipy.signal: value, shape, dtype, weak type, or the
exception type, for each case."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite.scipy.signal  # noqa: F401
from test_numpy_breadth import check

A = np.array
X4 = A([1., 2, 3, 4])
G = np.arange(9.).reshape(3, 3)
K = A([[1., 0], [0, -1]])


def S(lib):
    return lib.scipy.signal


CASES = {
    "convolve ints": lambda j, n: S(j).convolve(A([1, 2, 3]), A([1, 1])),
    "convolve same": lambda j, n: S(j).convolve(X4, A([1., 2, 3]), mode="same"),
    "convolve same even": lambda j, n: S(j).convolve(X4, A([1., 2]), mode="same"),
    "convolve valid swapped": lambda j, n: S(j).convolve(A([1., 2]), X4, mode="valid"),
    "convolve 2-d": lambda j, n: S(j).convolve(G, K),
    "convolve 2-d same": lambda j, n: S(j).convolve(G, K, mode="same"),
    "convolve 2-d valid": lambda j, n: S(j).convolve(G, K, mode="valid"),
    "convolve ranks differ": lambda j, n: S(j).convolve(np.ones(3), np.ones((2, 2))),
    "convolve valid mixed": lambda j, n: S(j).convolve(np.ones((3, 2)), np.ones((2, 3)),
                                                       mode="valid"),
    "convolve bad mode": lambda j, n: S(j).convolve(np.ones(3), np.ones(2), mode="x"),
    "convolve fft method": lambda j, n: S(j).convolve(np.ones(3), np.ones(2), method="fft"),
    "convolve empty": lambda j, n: S(j).convolve(np.ones(0), np.ones(2)),
    "convolve complex": lambda j, n: S(j).convolve(A([1., 2j, 3]), A([1j, 2])),
    "convolve grad": lambda j, n: j.grad(lambda a: (S(j).convolve(a, A([1., -2, 1])) ** 2)
                                         .sum())(X4),
    "correlate": lambda j, n: S(j).correlate(X4, A([1., 2, 3])),
    "correlate complex": lambda j, n: S(j).correlate(A([1., 2j, 3]), A([1j, 2])),
    "correlate valid swapped": lambda j, n: S(j).correlate(A([1., 2]), X4, mode="valid"),
    "correlate same": lambda j, n: S(j).correlate(X4, A([1., 2, 3]), mode="same"),
    "fftconvolve same": lambda j, n: S(j).fftconvolve(X4, A([1., 2, 3]), mode="same"),
    "fftconvolve 2-d": lambda j, n: S(j).fftconvolve(G, K),
    "fftconvolve axes": lambda j, n: S(j).fftconvolve(np.ones((2, 4)), np.ones((2, 3)),
                                                      axes=1),
    "fftconvolve axes mismatch": lambda j, n: S(j).fftconvolve(np.ones((2, 4)),
                                                               np.ones((1, 3)), axes=1),
    "fftconvolve complex": lambda j, n: S(j).fftconvolve(A([1., 2j, 3]), A([1j, 2])),
    "convolve2d same": lambda j, n: S(j).convolve2d(G, K, mode="same"),
    "convolve2d wrap": lambda j, n: S(j).convolve2d(G, K, boundary="wrap"),
    "convolve2d 1-d": lambda j, n: S(j).convolve2d(np.ones(3), np.ones(2)),
    "correlate2d valid": lambda j, n: S(j).correlate2d(G, K, mode="valid"),
    "detrend": lambda j, n: S(j).detrend(A([1., 3, 2, 5, 4])),
    "detrend constant": lambda j, n: S(j).detrend(A([1., 3, 2, 5, 4]), type="constant"),
    "detrend breakpoint": lambda j, n: S(j).detrend(A([1., 3, 2, 5, 4, 6]), bp=[3]),
    "detrend axis 0": lambda j, n: S(j).detrend(G.T ** 2, axis=0),
    "detrend bad type": lambda j, n: S(j).detrend(X4, type="quadratic"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scipy_signal(name, rjax):
    import jax.scipy.signal  # noqa: F401
    check(CASES[name], rjax, rtol=2e-5, atol=2e-5)
