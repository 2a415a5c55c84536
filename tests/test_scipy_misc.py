"""jaxlite.scipy's ndimage, fft, interpolate and cluster.vq against real JAX: value,
shape, dtype, weak type, or the exception type, for each case."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite.scipy.cluster.vq  # noqa: F401
import jaxlite.scipy.fft  # noqa: F401
import jaxlite.scipy.interpolate  # noqa: F401
import jaxlite.scipy.ndimage  # noqa: F401
from test_numpy_breadth import check

A = np.array
IMG = np.arange(12.).reshape(3, 4).astype(np.float32)
ROWS = A([0.5, 2.2, -0.7, 3.1])
COLS = A([1.5, 3.7, 0.2, -1.2])
GRID = (A([0., 1, 2]), A([0., 1]))
VALS = A([[0., 1], [2, 3], [4, 5.]])


def N(lib):
    return lib.scipy.ndimage


def F(lib):
    return lib.scipy.fft


def I(lib):  # noqa: E743
    return lib.scipy.interpolate


CASES = {
    **{f"map_coordinates order {o} {m}": (lambda o, m: lambda j, n: N(j).map_coordinates(
        IMG, [ROWS, COLS], order=o, mode=m, cval=-1.))(o, m)
       for o in (0, 1) for m in ("constant", "nearest", "wrap", "mirror", "reflect")},
    "map_coordinates ints": lambda j, n: N(j).map_coordinates(
        np.arange(12).reshape(3, 4), [A([0.5, 1.2]), A([1.5, 2.7])], order=1),
    "map_coordinates 2-d coordinates": lambda j, n: N(j).map_coordinates(
        IMG, [A([[0.5]]), A([[1.5]])], order=1),
    "map_coordinates scalars": lambda j, n: N(j).map_coordinates(IMG, [0.5, 1.5], order=1),
    "map_coordinates too few": lambda j, n: N(j).map_coordinates(IMG, [A([0.5])], order=1),
    "map_coordinates order 3": lambda j, n: N(j).map_coordinates(IMG, [ROWS, COLS], order=3),
    "map_coordinates grid-wrap": lambda j, n: N(j).map_coordinates(IMG, [ROWS, COLS], order=1,
                                                                   mode="grid-wrap"),
    "map_coordinates grad": lambda j, n: j.grad(
        lambda im, r: N(j).map_coordinates(im, [r, COLS], order=1).sum(), (0, 1))(
        IMG, ROWS.astype(np.float32)),
    "dct": lambda j, n: F(j).dct(A([1., 2, 3, 4])),
    "dct odd": lambda j, n: F(j).dct(A([1., 2, 3, 4, 5])),
    "dct ortho": lambda j, n: F(j).dct(A([1., 2, 3, 4]), norm="ortho"),
    "dct ints": lambda j, n: F(j).dct(A([1, 2, 3])),
    "dct n": lambda j, n: F(j).dct(A([1., 2, 3, 4]), n=6),
    "dct n short": lambda j, n: F(j).dct(A([1., 2, 3, 4]), n=3),
    "dct axis 0": lambda j, n: F(j).dct(np.ones((2, 3)), axis=0),
    "dct type 1": lambda j, n: F(j).dct(A([1., 2, 3, 4]), type=1),
    "dct forward": lambda j, n: F(j).dct(A([1., 2]), norm="forward"),
    "idct": lambda j, n: F(j).idct(A([1., 2, 3, 4])),
    "idct odd ortho": lambda j, n: F(j).idct(A([1., 2, 3, 4, 5]), norm="ortho"),
    "dctn": lambda j, n: F(j).dctn(np.arange(6.).reshape(2, 3)),
    "idctn ortho": lambda j, n: F(j).idctn(np.arange(6.).reshape(2, 3), norm="ortho"),
    "dctn s": lambda j, n: F(j).dctn(np.arange(6.).reshape(2, 3), s=(4,)),
    "dct grad": lambda j, n: j.grad(lambda x: F(j).dct(x)[1])(A([1., 2, 3, 4], np.float32)),
    "vq": lambda j, n: j.scipy.cluster.vq.vq(A([[0., 0], [1, 1], [5, 5]]), A([[0., 0], [4, 4]])),
    "vq ints": lambda j, n: j.scipy.cluster.vq.vq(A([[0, 0], [1, 1], [5, 5]]),
                                                  A([[0, 0], [4, 4]])),
    "vq 1-d": lambda j, n: j.scipy.cluster.vq.vq(A([0., 3, 5]), A([0., 4])),
    "vq mismatch": lambda j, n: j.scipy.cluster.vq.vq(A([[0., 0]]), A([[0., 0, 0]])),
    "interpolator": lambda j, n: I(j).RegularGridInterpolator(GRID, VALS)(
        A([[0.5, 0.5], [1.5, 0.2], [3., 0.]])),
    "interpolator nearest extrapolate": lambda j, n: I(j).RegularGridInterpolator(
        GRID, VALS, method="nearest", fill_value=None)(A([[0.4, 0.6], [3., 0.]])),
    "interpolator 1-d extrapolate": lambda j, n: I(j).RegularGridInterpolator(
        (A([0., 1, 2]),), A([0., 10, 5.]), fill_value=None)(A([-1., 0.5, 3])),
    "interpolator one point": lambda j, n: I(j).RegularGridInterpolator(GRID, VALS)(
        A([0.5, 0.5])),
    "interpolator trailing dims": lambda j, n: I(j).RegularGridInterpolator(
        GRID, np.arange(12.).reshape(3, 2, 2))(A([[0.5, 0.5]])),
    "interpolator bounds_error": lambda j, n: I(j).RegularGridInterpolator(
        GRID, VALS, bounds_error=True),
    "interpolator cubic": lambda j, n: I(j).RegularGridInterpolator(GRID, VALS,
                                                                    method="cubic"),
    "interpolator grad": lambda j, n: j.grad(lambda v: I(j).RegularGridInterpolator(
        GRID, v)(A([[0.5, 0.25]])).sum())(VALS.astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scipy_misc(name, rjax):
    import jax.scipy.cluster.vq  # noqa: F401
    import jax.scipy.fft  # noqa: F401
    import jax.scipy.interpolate  # noqa: F401
    import jax.scipy.ndimage  # noqa: F401
    check(CASES[name], rjax, rtol=2e-5, atol=2e-5)
