"""jax.numpy breadth (issue 12): functions added beside the core API, each case run on
jaxlite and on real JAX and compared: value, shape, dtype and weak type of every result,
or the exception's type."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
from oracle import assert_like_jax


def _run(f, lib, jnp):
    try:
        return f(lib, jnp), None
    except Exception as e:  # noqa: BLE001 -- the exception's type is compared
        return None, e


def _compare(got, want, rtol=1e-6, atol=1e-6):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and type(got) is type(want), \
            f"{type(got)} != jax {type(want)}"
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, rtol, atol)
        return
    assert_like_jax(got, want, rtol=rtol, atol=atol)


def check(f, rjax, rtol=1e-6, atol=1e-6):
    """``f(lib, jnp)`` on jaxlite and on JAX: the same results, or the same exception type."""
    import jax.numpy as rjnp
    want, werr = _run(f, rjax, rjnp)
    got, gerr = _run(f, jaxlite, jaxlite.numpy)
    if werr is not None:
        assert gerr is not None, f"JAX raised {type(werr).__name__}: {werr}; jaxlite returned"
        assert isinstance(gerr, type(werr)) or type(gerr).__name__ == type(werr).__name__, \
            f"jaxlite raised {type(gerr).__name__}: {gerr}; JAX {type(werr).__name__}: {werr}"
        return
    if gerr is not None:
        raise gerr
    _compare(got, want, rtol, atol)


A = np.array
I2 = A([1, 2])

INDEX_TRICKS = {
    "r_ mixed": lambda j, n: n.r_[[1, 2], 5, 6:8],
    "c_ slices": lambda j, n: n.c_[1:3, 4:6],
    "r_ python scalars are weak": lambda j, n: n.r_[1, 2, 3],
    "r_ int array and python float": lambda j, n: n.r_[I2, 1.5],
    "r_ bool and int": lambda j, n: n.r_[True, 2],
    "r_ linspace slice": lambda j, n: n.r_[0:1:3j, 4],
    "r_ uint8": lambda j, n: n.r_[A([1, 2], np.uint8), 3],
    "r_ 0-d": lambda j, n: n.r_[A(1.0)],
    "r_ bad directive": lambda j, n: n.r_["a", 1],
    "r_ four-part directive": lambda j, n: n.r_["0,2,0,1", [1]],
    "r_ ranks differ": lambda j, n: n.r_[1:3, A([[1, 2]])],
    "r_ axis 1": lambda j, n: n.r_["1", np.ones((2, 2)), np.zeros((2, 1))],
    "r_ row matrix": lambda j, n: n.r_["r", 1, 2],
    "r_ column matrix": lambda j, n: n.r_["c", [1, 2], [3, 4]],
    "r_ empty": lambda j, n: n.r_[()],
    "r_ trans1d 0 of 2-d": lambda j, n: n.r_["0,3,0", np.ones((2, 5))],
    "r_ trans1d 1 of 2-d": lambda j, n: n.r_["0,3,1", np.ones((2, 5))],
    "r_ trans1d -2 of 1-d": lambda j, n: n.r_["0,4,-2", np.ones(2)],
    "c_ 2-d and 1-d": lambda j, n: n.c_[np.ones((2, 2)), np.zeros(2)],
    "c_ one list": lambda j, n: n.c_[[1, 2]],
    "c_ scalars": lambda j, n: n.c_[5, 6],
    "c_ row directive": lambda j, n: n.c_["r", [1, 2]],
    "mgrid 2-d": lambda j, n: n.mgrid[0:4:2, 1:2],
    "mgrid linspace and int": lambda j, n: n.mgrid[0:1:3j, 0:2],
    "mgrid one slice": lambda j, n: n.mgrid[:3],
    "mgrid empty": lambda j, n: n.mgrid[0:3:-1],
    "mgrid float start": lambda j, n: n.mgrid[0.5:3],
    "mgrid float step": lambda j, n: n.mgrid[0:3:0.5],
    "mgrid scalar key": lambda j, n: n.mgrid[5],
    "ogrid": lambda j, n: n.ogrid[0:3, 0:2],
    "ogrid promotes": lambda j, n: n.ogrid[0:2, 0:1.0],
    "ogrid linspace": lambda j, n: n.ogrid[0:1:3j],
    "indices": lambda j, n: n.indices((2, 3)),
    "indices sparse": lambda j, n: n.indices((2, 3), sparse=True),
    "indices dtype": lambda j, n: n.indices((2, 3), dtype=n.float32),
    "indices empty": lambda j, n: n.indices((0, 3)),
    "indices rank 0": lambda j, n: n.indices(()),
    "indices float dim": lambda j, n: n.indices([2.0]),
    "ix_": lambda j, n: n.ix_(A([0, 1]), n.array([2., 3., 4.])),
    "ix_ none": lambda j, n: n.ix_(),
    "ix_ list": lambda j, n: n.ix_([1, 2]),
    "ix_ 0-d": lambda j, n: n.ix_(A(1)),
    "ix_ bool": lambda j, n: n.ix_(A([True, False])),
    "ix_ empty": lambda j, n: n.ix_(A([], np.int32), A([1])),
    "unravel_index clips and wraps": lambda j, n: n.unravel_index(
        A([-13, -12, -1, 0, 11, 12, 100]), (3, 4)),
    "unravel_index scalar": lambda j, n: n.unravel_index(5, (3, 4)),
    "unravel_index uint8": lambda j, n: n.unravel_index(A([1, 2], np.uint8), (3, 4)),
    "unravel_index 2-d": lambda j, n: n.unravel_index(A([[5, 7]]), (3, 4, 1)),
    "unravel_index jit": lambda j, n: j.jit(lambda i: n.unravel_index(i, (3, 4)))(A([5, -1])),
    "ravel_multi_index scalars": lambda j, n: n.ravel_multi_index((1, 2), (3, 4)),
    "ravel_multi_index F": lambda j, n: n.ravel_multi_index((I2, A([0, 3])), (3, 4),
                                                            order="F"),
    "ravel_multi_index wrap": lambda j, n: n.ravel_multi_index(
        (A([[-1, 2]]), A([[0, 3]])), (3, 4), mode="wrap"),
    "ravel_multi_index clip": lambda j, n: n.ravel_multi_index(
        (A([-1, 2]), A([0, 3])), (3, 4), mode="clip"),
    "ravel_multi_index float": lambda j, n: n.ravel_multi_index((A([1., 2]), A([0, 3])),
                                                                (3, 4)),
    "ravel_multi_index promotes": lambda j, n: n.ravel_multi_index(
        (A([1, 2], np.uint8), A([0, 3], np.int16)), (3, 4)),
    "ravel_multi_index raise": lambda j, n: n.ravel_multi_index((A([1, 5]), A([0, 3])),
                                                                (3, 4)),
    "ravel_multi_index raise under jit": lambda j, n: j.jit(
        lambda a: n.ravel_multi_index((a, a), (3, 4)))(A([1, 5])),
    "ravel_multi_index clip under jit": lambda j, n: j.jit(
        lambda a: n.ravel_multi_index((a, a), (3, 4), mode="clip"))(A([1, 5])),
    "ravel_multi_index mode tuple": lambda j, n: n.ravel_multi_index(
        (A([0, 1]), A([1, 1])), (2, 2), mode=("clip", "wrap")),
    "ravel_multi_index wrong length": lambda j, n: n.ravel_multi_index((I2,), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(INDEX_TRICKS))
def test_index_tricks(name, rjax):
    check(INDEX_TRICKS[name], rjax)


def test_s_and_index_exp(rjnp):
    assert jaxlite.numpy.s_[1:2, ::2] == rjnp.s_[1:2, ::2]
    assert jaxlite.numpy.index_exp[1:2] == rjnp.index_exp[1:2]
    x = jaxlite.numpy.arange(10)
    assert_like_jax(x[jaxlite.numpy.s_[::3]], rjnp.arange(10)[rjnp.s_[::3]])


I4 = A([1, 4, 9, 16])
F4 = A([1., 4, 9, 16], np.float32)
F2 = A([1., 2], np.float32)

SIGNAL = {
    "diff int": lambda j, n: n.diff(I4),
    "diff bool": lambda j, n: n.diff(A([True, False, False])),
    "diff n=2": lambda j, n: n.diff(I4, n=2),
    "diff n=0": lambda j, n: n.diff(I4, n=0),
    "diff negative n": lambda j, n: n.diff(I4, n=-1),
    "diff prepend append": lambda j, n: n.diff(I4, prepend=0, append=A([20.])),
    "diff list": lambda j, n: n.diff([1, 2, 4]),
    "diff 0-d": lambda j, n: n.diff(A(3)),
    "diff uint8 wraps": lambda j, n: n.diff(A([3, 1], np.uint8)),
    "diff n past the length": lambda j, n: n.diff(I4, n=10),
    "diff axis 0": lambda j, n: n.diff(A([[1., 2], [4, 8], [0, 1]]), axis=0),
    "diff grad": lambda j, n: j.grad(lambda x: n.sum(n.diff(x, n=2) ** 2))(F4),
    "ediff1d": lambda j, n: n.ediff1d(I4, to_begin=A([-1.5]), to_end=A([7, 8])),
    "ediff1d 2-d": lambda j, n: n.ediff1d(np.ones((2, 2))),
    "ediff1d empty": lambda j, n: n.ediff1d(A([], np.float32)),
    "convolve int and float": lambda j, n: n.convolve(A([1, 2, 3]), A([0, 1, 0.5])),
    "convolve ints": lambda j, n: n.convolve(A([1, 2, 3]), A([1, 1])),
    "convolve same": lambda j, n: n.convolve(F4, F2, mode="same"),
    "convolve same odd": lambda j, n: n.convolve(F4, A([1., 2, 3], np.float32), mode="same"),
    "convolve valid swapped": lambda j, n: n.convolve(F2, F4, mode="valid"),
    "convolve empty": lambda j, n: n.convolve(A([], np.float32), F4),
    "convolve 2-d": lambda j, n: n.convolve(np.ones((2, 2)), F4),
    "convolve bad mode": lambda j, n: n.convolve(F4, F4, mode="x"),
    "convolve complex": lambda j, n: n.convolve(A([1 + 1j, 2]), A([1j, 1])),
    "convolve grad": lambda j, n: j.grad(lambda a: n.sum(n.convolve(a, F2) ** 2))(F4),
    "convolve vmap": lambda j, n: j.vmap(lambda a: n.convolve(a, F2))(np.ones((2, 3),
                                                                         np.float32)),
    "correlate complex": lambda j, n: n.correlate(A([1 + 1j, 2]), A([1j, 1]), mode="full"),
    "correlate": lambda j, n: n.correlate(F4, F2),
    "correlate same": lambda j, n: n.correlate(F4, A([1., 2, 3], np.float32), "same"),
    "correlate swapped": lambda j, n: n.correlate(F2, F4, "full"),
    "correlate swapped complex": lambda j, n: n.correlate(A([1j, 2]), A([1, 2j, 3]), "full"),
    "trapezoid": lambda j, n: n.trapezoid(I4),
    "trapezoid x": lambda j, n: n.trapezoid(F4, x=A([0, 1, 3, 4.])),
    "trapezoid dx": lambda j, n: n.trapezoid(I4, dx=2),
    "trapezoid axis 0": lambda j, n: n.trapezoid(np.ones((2, 3)), axis=0),
    "trapezoid empty": lambda j, n: n.trapezoid(A([])),
    "interp": lambda j, n: n.interp(A([-1, 0.5, 1.5, 5]), A([0, 1, 2.]), A([0, 10, 20.])),
    "interp left right": lambda j, n: n.interp(A([-1, 5]), A([0, 1, 2.]), A([0, 10, 20.]),
                                               left=-7, right=99),
    "interp ints": lambda j, n: n.interp(2, A([1, 3]), A([1, 3])),
    "interp period": lambda j, n: n.interp(A([-1, 7.5]), A([0, 1, 2.]), A([0, 10, 20.]),
                                           period=3),
    "interp complex": lambda j, n: n.interp(A([0.5]), A([0, 1.]), A([0, 1j])),
    "interp repeated xp": lambda j, n: n.interp(A([1.0]), A([0, 1, 1, 2.]), A([0, 1, 5, 2.])),
    "interp grad": lambda j, n: j.grad(lambda x: n.sum(n.interp(x, A([0, 1, 2.]),
                                                                A([0, 10, 5.]))))(
        A([0.5, 1.5], np.float32)),
    "vander": lambda j, n: n.vander(A([1, 2, 3])),
    "vander N increasing": lambda j, n: n.vander(A([1., 2]), 4, increasing=True),
    "vander 2-d": lambda j, n: n.vander(np.ones((2, 2))),
    "vander N=0": lambda j, n: n.vander(A([1, 2]), 0),
    "vander uint8": lambda j, n: n.vander(A([1, 2], np.uint8)),
    "cov": lambda j, n: n.cov(A([[0, 1, 2], [2, 1, 0.]])),
    "cov ints": lambda j, n: n.cov(A([1, 2, 4])),
    "cov y": lambda j, n: n.cov(A([1, 2, 4.]), A([1, 0, 1.])),
    "cov bias": lambda j, n: n.cov(A([1, 2, 4.]), bias=True, ddof=0),
    "cov weights": lambda j, n: n.cov(A([[1, 2, 4.], [0, 1, 1]]), fweights=A([1, 2, 1]),
                                      aweights=A([.5, 1, 1])),
    "cov fweights ddof": lambda j, n: n.cov(A([[1, 2, 4.], [0, 1, 1]]), fweights=A([1, 2, 1])),
    "cov rowvar": lambda j, n: n.cov(A([[1, 2], [4., 0], [1, 1]]), rowvar=False),
    "cov one observation": lambda j, n: n.cov(A([1.])),
    "cov complex": lambda j, n: n.cov(A([[1j, 1, 2], [2, 1, 0.5]])),
    "cov 3-d": lambda j, n: n.cov(np.ones((2, 2, 2))),
    "corrcoef": lambda j, n: n.corrcoef(A([[0, 1, 2], [2, 1, 0.5]])),
    "corrcoef 1-d": lambda j, n: n.corrcoef(A([1, 2, 4])),
    "corrcoef complex": lambda j, n: n.corrcoef(A([[1j, 1, 2], [2, 1, 0.5]])),
    "gradient 1-d": lambda j, n: n.gradient(F4),
    "gradient spacing": lambda j, n: n.gradient(F4, 2.0),
    "gradient coordinates": lambda j, n: n.gradient(F4, A([0., 1, 3, 4])),
    "gradient 2-d": lambda j, n: n.gradient(A([[1., 2, 6], [3, 4, 5]])),
    "gradient axis": lambda j, n: n.gradient(A([[1., 2, 6], [3, 4, 5]]), axis=1),
    "gradient ints": lambda j, n: n.gradient(I4),
    "gradient too short": lambda j, n: n.gradient(A([1.])),
    "gradient edge_order 2": lambda j, n: n.gradient(F4, edge_order=2),
    "unwrap": lambda j, n: n.unwrap(A([0., 3, 6.5, 0.5, -3, 4])),
    "unwrap period": lambda j, n: n.unwrap(A([0, 7, 1, 9]), period=8),
    "unwrap discont": lambda j, n: n.unwrap(A([0., 3, 6.5, 0.5]), discont=4),
    "unwrap 2-d axis 0": lambda j, n: n.unwrap(A([[0., 6], [3, 0.5], [6.5, 1]]), axis=0),
    "bartlett": lambda j, n: n.bartlett(5),
    "blackman": lambda j, n: n.blackman(6),
    "hamming": lambda j, n: n.hamming(5),
    "hanning": lambda j, n: n.hanning(4),
    "kaiser": lambda j, n: n.kaiser(5, 3.0),
    "window of 1": lambda j, n: n.hamming(1),
    "window of 0": lambda j, n: n.hanning(0),
    "window of -2": lambda j, n: n.blackman(-2),
    "window float M": lambda j, n: n.bartlett(4.0),
    "i0": lambda j, n: n.i0(A([0., 1, -2.5, 10])),
    "i0 int": lambda j, n: n.i0(A([0, 1])),
    "i0 complex": lambda j, n: n.i0(A([1j])),
    "i0 grad": lambda j, n: j.grad(lambda x: n.sum(n.i0(x)))(A([0., 1, -2.5], np.float32)),
}


@pytest.mark.parametrize("name", sorted(SIGNAL))
def test_signal(name, rjax):
    check(SIGNAL[name], rjax, rtol=2e-6, atol=2e-6)


S1 = A([3, 1, 2, 3, 5])
S2 = A([5, 4, 3])

SETS_AND_SELECTION = {
    "isin": lambda j, n: n.isin(A([[1, 2], [3, 9]]), S1),
    "isin invert": lambda j, n: n.isin(S1, S2, invert=True),
    "isin float and int": lambda j, n: n.isin(A([1., 2.5]), A([1, 2])),
    "isin scalar": lambda j, n: n.isin(3, S1),
    "isin empty": lambda j, n: n.isin(A([], np.int32), S1),
    "isin jit": lambda j, n: j.jit(n.isin)(S1, S2),
    "union1d": lambda j, n: n.union1d(S1, S2),
    "union1d size": lambda j, n: n.union1d(S1, S2, size=7, fill_value=-1),
    "union1d size under jit": lambda j, n: j.jit(lambda a, b: n.union1d(a, b, size=3))(S1, S2),
    "union1d no size under jit": lambda j, n: j.jit(n.union1d)(S1, S2),
    "intersect1d": lambda j, n: n.intersect1d(S1, S2),
    "intersect1d indices": lambda j, n: n.intersect1d(S1, S2, return_indices=True),
    "intersect1d assume_unique": lambda j, n: n.intersect1d(A([1, 3, 5]), A([5, 4, 3]),
                                                            assume_unique=True),
    "intersect1d size": lambda j, n: n.intersect1d(S1, S2, size=4),
    "intersect1d size under jit": lambda j, n: j.jit(
        lambda a, b: n.intersect1d(a, b, size=2, fill_value=0))(S1, S2),
    "setdiff1d": lambda j, n: n.setdiff1d(S1, S2),
    "setdiff1d size": lambda j, n: n.setdiff1d(S1, S2, size=4, fill_value=9),
    "setdiff1d size under jit": lambda j, n: j.jit(lambda a, b: n.setdiff1d(a, b, size=3))(
        S1, S2),
    "setdiff1d empty": lambda j, n: n.setdiff1d(A([], np.int32), S2),
    "setxor1d": lambda j, n: n.setxor1d(S1, S2),
    "setxor1d size": lambda j, n: n.setxor1d(S1, S2, size=5),
    "setxor1d float": lambda j, n: n.setxor1d(A([1., np.nan]), A([1., 2.])),
    "select": lambda j, n: n.select([A([True, False, False]), A([True, True, False])],
                                    [A([1, 2, 3]), A([4., 5, 6])], default=-1),
    "select scalar choices": lambda j, n: n.select([A([True, False])], [7], 0),
    "select empty lists": lambda j, n: n.select([], []),
    "select length mismatch": lambda j, n: n.select([A([True])], [A([1]), A([2])]),
    "select non-bool": lambda j, n: n.select([A([1, 0])], [A([1, 2])]),
    "select grad": lambda j, n: j.grad(lambda x: n.sum(n.select([x > 1, x > 0], [x * x, -x],
                                                                  x)))(A([-1., 0.5, 2.])),
    "piecewise": lambda j, n: n.piecewise(A([-2., 0.5, 3.]), [A([True, False, False]),
                                                             A([False, False, True])],
                                          [lambda x: -x, lambda x: x * 10, 99.]),
    "piecewise otherwise": lambda j, n: n.piecewise(A([-2., 0.5, 3.]),
                                                    [A([True, False, False])],
                                                    [lambda x: x * 2, lambda x: x + 1]),
    "piecewise scalar condition": lambda j, n: n.piecewise(A([1, 2]), True, [5]),
    "piecewise wrong count": lambda j, n: n.piecewise(A([1., 2]), [A([True, False])],
                                                      [1, 2, 3]),
    "piecewise int to float": lambda j, n: n.piecewise(A([1, 2]), [A([True, False])],
                                                       [lambda x: x / 2]),
    "extract": lambda j, n: n.extract(A([True, False, True]), A([1, 2, 3])),
    "extract nonbool": lambda j, n: n.extract(A([[1, 0], [0, 2]]), A([[1, 2], [3, 4]])),
    "extract size": lambda j, n: n.extract(A([True, False, True]), A([1, 2, 3]), size=4,
                                           fill_value=-1),
    "delete index": lambda j, n: n.delete(A([1, 2, 3, 4]), 1),
    "delete negative": lambda j, n: n.delete(A([1, 2, 3, 4]), -1),
    "delete slice": lambda j, n: n.delete(A([1, 2, 3, 4, 5]), slice(1, None, 2)),
    "delete list axis": lambda j, n: n.delete(A([[1, 2], [3, 4], [5, 6]]), [0, 2], axis=0),
    "delete flat": lambda j, n: n.delete(A([[1, 2], [3, 4]]), [3]),
    "delete bool mask": lambda j, n: n.delete(A([1, 2, 3]), A([True, False, True])),
    "delete out of range": lambda j, n: n.delete(A([1, 2, 3]), 5),
    "delete assume_unique": lambda j, n: n.delete(A([1, 2, 3]), A([0, 2]),
                                                  assume_unique_indices=True),
    "insert scalar": lambda j, n: n.insert(A([1, 2, 3]), 1, 9),
    "insert list": lambda j, n: n.insert(A([1, 2, 3]), [0, 3], A([7, 8])),
    "insert float into int": lambda j, n: n.insert(A([1, 2, 3]), 1, 2.7),
    "insert axis": lambda j, n: n.insert(A([[1, 2], [3, 4]]), 1, 0, axis=1),
    "insert flat": lambda j, n: n.insert(A([[1, 2], [3, 4]]), 2, A([9, 9])),
    "insert slice": lambda j, n: n.insert(A([1, 2, 3, 4]), slice(0, 4, 2), 0),
    "insert negative": lambda j, n: n.insert(A([1, 2, 3]), -1, 0),
    "insert out of range": lambda j, n: n.insert(A([1, 2, 3]), 7, 0),
    "place": lambda j, n: n.place(A([1, 2, 3, 4]), A([True, False, True, False]), A([9, 8]),
                                  inplace=False),
    "place cycles": lambda j, n: n.place(A([1, 2, 3, 4]), A([True, True, True, False]),
                                         A([9, 8]), inplace=False),
    "place inplace": lambda j, n: n.place(A([1, 2]), A([True, False]), A([9])),
    "put": lambda j, n: n.put(A([1, 2, 3, 4]), A([0, 2]), A([9, 8]), inplace=False),
    "put wrap": lambda j, n: n.put(A([1, 2, 3]), A([4, -1]), A([9, 8]), mode="wrap",
                                   inplace=False),
    "put clip": lambda j, n: n.put(A([1, 2, 3]), A([4, -5]), A([9, 8]), mode="clip",
                                   inplace=False),
    "put inplace": lambda j, n: n.put(A([1, 2]), A([0]), A([9])),
    "put_along_axis": lambda j, n: n.put_along_axis(A([[1, 2], [3, 4]]), A([[1], [0]]),
                                                    A([[9], [8]]), axis=1, inplace=False),
    "put_along_axis none": lambda j, n: n.put_along_axis(A([[1, 2], [3, 4]]), A([3]), 7,
                                                         axis=None, inplace=False),
    "put_along_axis add": lambda j, n: n.put_along_axis(A([[1, 2], [3, 4]]), A([[1, 1]]),
                                                        A([[9, 8]]), axis=0, inplace=False,
                                                        mode="add") if False else
        n.put_along_axis(A([[1, 2], [3, 4]]), A([[1, 1]]), A([[9, 8]]), axis=0,
                         inplace=False),
    "fill_diagonal": lambda j, n: n.fill_diagonal(np.zeros((3, 3)), 5, inplace=False),
    "fill_diagonal wrap": lambda j, n: n.fill_diagonal(np.zeros((7, 3)), A([1, 2]),
                                                       wrap=True, inplace=False),
    "fill_diagonal tall": lambda j, n: n.fill_diagonal(np.zeros((5, 3)), 1, inplace=False),
    "fill_diagonal 3-d": lambda j, n: n.fill_diagonal(np.zeros((2, 2, 2)), 4, inplace=False),
    "fill_diagonal 3-d unequal": lambda j, n: n.fill_diagonal(np.zeros((2, 3, 2)), 4,
                                                              inplace=False),
    "fill_diagonal 1-d": lambda j, n: n.fill_diagonal(np.zeros(3), 4, inplace=False),
    "fill_diagonal inplace": lambda j, n: n.fill_diagonal(np.zeros((2, 2)), 4),
    "resize grow": lambda j, n: n.resize(A([1, 2, 3]), (2, 4)),
    "resize shrink": lambda j, n: n.resize(A([[1, 2], [3, 4]]), 3),
    "resize empty": lambda j, n: n.resize(A([], np.float32), (2,)),
    "resize to empty": lambda j, n: n.resize(A([1, 2]), (0,)),
    "resize negative": lambda j, n: n.resize(A([1, 2]), (-1,)),
    "trim_zeros": lambda j, n: n.trim_zeros(A([0, 0, 1, 0, 2, 0])),
    "trim_zeros front": lambda j, n: n.trim_zeros(A([0, 0, 1, 0, 2, 0]), "f"),
    "trim_zeros back": lambda j, n: n.trim_zeros(A([0., 0, 1, 0, 2, 0]), "b"),
    "trim_zeros all": lambda j, n: n.trim_zeros(A([0, 0])),
    "trim_zeros under jit": lambda j, n: j.jit(n.trim_zeros)(A([0, 1, 0])),
    "trim_zeros unknown trim": lambda j, n: n.trim_zeros(A([0, 1, 0]), "x"),
    "trim_zeros 0-d": lambda j, n: n.trim_zeros(A(0)),
    "put out of range clips": lambda j, n: n.put(A([1, 2, 3, 4, 5]), A([7, -7]), A([9, 8]),
                                                 inplace=False),
    "put 2-d indices": lambda j, n: n.put(A([1, 2, 3, 4, 5]), A([[0], [1]]), A([7, 8]),
                                          inplace=False),
    "put long v": lambda j, n: n.put(A([1, 2, 3, 4, 5]), A([0, 1, 2]), A([7, 8, 9, 10]),
                                     inplace=False),
    "put scalar index": lambda j, n: n.put(A([1, 2, 3, 4, 5]), 2, A([7, 8]), inplace=False),
    "put scalar float v": lambda j, n: n.put(A([1, 2, 3, 4]), A([0, 1]), 7.9, inplace=False),
    "put 2-d array": lambda j, n: n.put(A([[1, 2], [3, 4]]), A([3]), 7, inplace=False),
    "put raise": lambda j, n: n.put(A([1, 2]), A([0]), 7, mode="raise", inplace=False),
    "put_along_axis out of range": lambda j, n: n.put_along_axis(
        A([[1, 2], [3, 4]]), A([[5], [0]]), A([[9], [8]]), axis=1, inplace=False),
    "put_along_axis negative": lambda j, n: n.put_along_axis(
        A([[1, 2], [3, 4]]), A([[-1], [0]]), 9, axis=1, inplace=False),
    "put_along_axis inplace": lambda j, n: n.put_along_axis(A([[1, 2], [3, 4]]),
                                                            A([[1], [0]]), 9, axis=1),
    "put_along_axis clip": lambda j, n: n.put_along_axis(
        A([[1, 2], [3, 4]]), A([[5], [0]]), 9, axis=1, inplace=False, mode="clip"),
    "put_along_axis float into int": lambda j, n: n.put_along_axis(
        A([[1, 2], [3, 4]]), A([[1], [0]]), 9.7, axis=1, inplace=False),
    "fill_diagonal cycles": lambda j, n: n.fill_diagonal(np.zeros((3, 3)), A([1, 2]),
                                                         inplace=False),
    "fill_diagonal float into int": lambda j, n: n.fill_diagonal(np.zeros((3, 3), np.int32),
                                                                 2.5, inplace=False),
    "fill_diagonal 2-d val": lambda j, n: n.fill_diagonal(np.zeros((3, 3)), np.ones((3, 1)),
                                                          inplace=False),
    "piecewise under jit": lambda j, n: j.jit(lambda x: n.piecewise(
        x, [x < 0, x > 1], [lambda x: -x, lambda x: x * 10, 99.]))(A([-1., 0.5, 3])),
    "piecewise args": lambda j, n: n.piecewise(A([1., 2]), [A([True, False])],
                                               [lambda x, k: x * k], 3),
    "piecewise 0-d": lambda j, n: n.piecewise(A(2.), [A(True)], [lambda x: x * 5]),
    "piecewise list of bools": lambda j, n: n.piecewise(A([1., 2]), [True, False], [5, 6]),
    "piecewise 2-d": lambda j, n: n.piecewise(A([[1., 2]]), [A([[True, False]])], [5]),
    "piecewise grad": lambda j, n: j.grad(lambda x: n.sum(n.piecewise(
        x, [x < 0], [lambda x: x * x, lambda x: 3 * x])))(A([-1., 2.])),
    "select broadcasts": lambda j, n: n.select([A([True, False])], [A([[1], [2]])]),
    "select array default": lambda j, n: n.select([A([True, False])], [A([1, 2])],
                                                  A([5., 6])),
    "select float condition": lambda j, n: n.select([A([0.5, 0])], [A([1., 2])]),
    "extract size cut": lambda j, n: n.extract(A([True, False, True]), A([1, 2, 3]), size=1),
    "extract fill": lambda j, n: n.extract(A([False, False, True]), A([1, 2, 3]), size=3,
                                           fill_value=-1),
    "extract short condition": lambda j, n: n.extract(A([True, False]), A([1, 2, 3])),
    "extract under jit": lambda j, n: j.jit(lambda c, a: n.extract(c, a, size=2))(
        A([True, False, True]), A([1, 2, 3])),
    "delete traced unique": lambda j, n: j.jit(
        lambda i: n.delete(A([1, 2, 3]), i, assume_unique_indices=True))(A([0])),
    "delete traced": lambda j, n: j.jit(lambda i: n.delete(A([1, 2, 3]), i))(A([0])),
    "delete index array out of range": lambda j, n: n.delete(A([1, 2, 3]), A([0, 5])),
    "delete negative array": lambda j, n: n.delete(A([1, 2, 3]), A([-1])),
    "delete empty array": lambda j, n: n.delete(A([1, 2, 3]), A([], np.int32)),
    "delete float index": lambda j, n: n.delete(A([1, 2, 3]), 1.0),
    "delete repeated": lambda j, n: n.delete(A([1, 2, 3]), A([1, 1])),
    "insert traced value": lambda j, n: j.jit(lambda v: n.insert(A([1, 2, 3]), 1, v))(7),
    "insert traced index": lambda j, n: j.jit(lambda i: n.insert(A([1, 2, 3]), i, 7))(1),
    "insert unsorted indices": lambda j, n: n.insert(A([1, 2, 3]), A([2, 0, 2]),
                                                     A([7, 8, 9])),
    "insert one index, block": lambda j, n: n.insert(A([1, 2, 3]), A([1]), A([7, 8])),
    "insert 2-d indices axis": lambda j, n: n.insert(A([[1, 2], [3, 4]]), A([0, 1]),
                                                     A([[7], [8]]), axis=1),
    "insert negative out of range": lambda j, n: n.insert(A([1, 2, 3]), -7, 0),
    "insert 0-d index array": lambda j, n: n.insert(A([[1, 2], [3, 4]]), A(1), A([7, 8]),
                                                    axis=0),
    "insert grad": lambda j, n: j.grad(lambda v: n.sum(n.insert(A([1., 2, 3]), 1, v) ** 2))(
        2.0),
    "resize int shape": lambda j, n: n.resize(A([1, 2, 3]), 5),
    "resize 2-d": lambda j, n: n.resize(A([[1, 2], [3, 4]]), (3, 3)),
    "intersect1d indices size": lambda j, n: n.intersect1d(S1, S2, return_indices=True,
                                                           size=4),
    "intersect1d indices repeated": lambda j, n: n.intersect1d(A([2, 2, 1]), A([1, 1, 2]),
                                                               return_indices=True),
    "intersect1d promotes": lambda j, n: n.intersect1d(A([[2, 2], [1, 0]]), A([1, 1, 2.])),
    "setdiff1d nan": lambda j, n: n.setdiff1d(A([1., np.nan, np.nan]), A([2.])),
    "union1d nan": lambda j, n: n.union1d(A([1., np.nan, np.nan]), A([np.nan])),
    "setdiff1d default fill": lambda j, n: n.setdiff1d(S1, S2, size=4),
    "setxor1d fill": lambda j, n: n.setxor1d(S1, S2, size=5, fill_value=0),
    "union1d default fill": lambda j, n: n.union1d(S1, S2, size=7),
    "setxor1d 2-d": lambda j, n: n.setxor1d(A([[1, 2], [2, 3]]), A([3])),
    "isin complex": lambda j, n: n.isin(A([1 + 1j, 2]), A([1 + 1j])),
    "isin nan": lambda j, n: n.isin(A([np.nan]), A([np.nan])),
    "isin scalar test": lambda j, n: n.isin(A([1, 2]), 2),
}


@pytest.mark.parametrize("name", sorted(SETS_AND_SELECTION))
def test_sets_and_selection(name, rjax):
    check(SETS_AND_SELECTION[name], rjax)


H5 = A([1., 2, 1, 4, 5])

COUNTS_AND_POLYNOMIALS = {
    "bincount": lambda j, n: n.bincount(A([0, 1, 1, 3])),
    "bincount weights": lambda j, n: n.bincount(A([0, 1, 1, 3]), weights=A([.5, 1, 1, 2])),
    "bincount minlength": lambda j, n: n.bincount(A([0, 1]), minlength=4),
    "bincount length drops": lambda j, n: n.bincount(A([0, 1, 5]), length=3),
    "bincount negative": lambda j, n: n.bincount(A([-1, 0, 2])),
    "bincount under jit": lambda j, n: j.jit(lambda x: n.bincount(x, length=4))(A([0, 1, 1])),
    "bincount under jit without length": lambda j, n: j.jit(n.bincount)(A([0, 1, 1])),
    "bincount float": lambda j, n: n.bincount(A([0., 1])),
    "bincount empty": lambda j, n: n.bincount(A([], np.int32)),
    "bincount 2-d": lambda j, n: n.bincount(A([[0, 1]])),
    "bincount int weights": lambda j, n: n.bincount(A([0, 1, 1]), weights=A([1, 2, 3])),
    "bincount bool": lambda j, n: n.bincount(A([True, False, True])),
    "bincount grad": lambda j, n: j.grad(lambda w: n.sum(n.bincount(A([0, 1, 1]), w,
                                                                    length=2) ** 2))(
        A([1., 2, 3])),
    "digitize": lambda j, n: n.digitize(A([0.2, 6.4, 3.0, 1.6]), A([0.0, 1.0, 2.5, 4.0, 10.0])),
    "digitize right": lambda j, n: n.digitize(A([1., 2.5]), A([0.0, 1.0, 2.5]), right=True),
    "digitize decreasing": lambda j, n: n.digitize(A([0.2, 3.]), A([10., 2.5, 1.0])),
    "digitize ints": lambda j, n: n.digitize(A([1, 5]), A([0, 2, 4])),
    "digitize 2-d bins": lambda j, n: n.digitize(A([1.]), A([[0., 2]])),
    "histogram": lambda j, n: n.histogram(H5),
    "histogram bins range": lambda j, n: n.histogram(H5, bins=3, range=(0, 6)),
    "histogram edges": lambda j, n: n.histogram(H5, bins=A([0., 2, 5])),
    "histogram density": lambda j, n: n.histogram(H5, bins=4, density=True),
    "histogram weights": lambda j, n: n.histogram(H5, bins=2, weights=A([1, 2, 3, 4, 5.])),
    "histogram ints": lambda j, n: n.histogram(A([1, 2, 1, 4, 5]), bins=2),
    "histogram constant": lambda j, n: n.histogram(A([3., 3]), bins=2),
    "histogram empty": lambda j, n: n.histogram(A([], np.float32), bins=2),
    "histogram under jit": lambda j, n: j.jit(lambda a: n.histogram(a, bins=3))(H5),
    "histogram_bin_edges": lambda j, n: n.histogram_bin_edges(A([1., 2, 5]), bins=4),
    "histogram_bin_edges string": lambda j, n: n.histogram_bin_edges(A([1., 2, 5]),
                                                                     bins="auto"),
    "histogram2d": lambda j, n: n.histogram2d(A([1., 2, 3]), A([0., 1, 1]), bins=2),
    "histogram2d weights": lambda j, n: n.histogram2d(A([1., 2, 3]), A([0., 1, 1]), bins=2,
                                                      weights=A([1., 2, 3])),
    "histogram2d density": lambda j, n: n.histogram2d(A([1., 2, 3]), A([0., 1, 1]),
                                                      bins=(2, 3), density=True),
    "polyval": lambda j, n: n.polyval(A([1, 2, 3]), A([0., 1, 2])),
    "polyval ints": lambda j, n: n.polyval(A([1, 2, 3]), A([0, 1, 2])),
    "polyval python scalar": lambda j, n: n.polyval(A([1, 2, 3]), 2),
    "polyval empty": lambda j, n: n.polyval(A([], np.float32), 2.0),
    "polyval grad": lambda j, n: j.grad(n.polyval, argnums=(0, 1))(A([1., 2, 3]), 2.0),
    "polyadd": lambda j, n: n.polyadd(A([1, 2]), A([1, 2, 3.])),
    "polysub ints": lambda j, n: n.polysub(A([1, 2]), A([1, 2, 3])),
    "polymul": lambda j, n: n.polymul(A([1, 2]), A([1, 2, 3])),
    "polymul trim": lambda j, n: n.polymul(A([0, 1, 2]), A([1, 2, 3]),
                                           trim_leading_zeros=True),
    "polyder": lambda j, n: n.polyder(A([1, 2, 3, 4])),
    "polyder m=2": lambda j, n: n.polyder(A([1., 2, 3, 4]), 2),
    "polyder m=5": lambda j, n: n.polyder(A([1., 2, 3, 4]), 5),
    "polyder negative": lambda j, n: n.polyder(A([1., 2]), -1),
    "polyint": lambda j, n: n.polyint(A([3, 2, 1])),
    "polyint constants": lambda j, n: n.polyint(A([3., 2, 1]), m=2, k=A([1., 2])),
    "polyint scalar constant": lambda j, n: n.polyint(A([3., 2, 1]), m=2, k=3.0),
    "polydiv": lambda j, n: n.polydiv(A([1., 3, 2]), A([1., 1])),
    "polydiv ints": lambda j, n: n.polydiv(A([1, 3, 2]), A([1, 1])),
    "polydiv remainder": lambda j, n: n.polydiv(A([2., 3, 5, 1]), A([1., 2])),
    "poly": lambda j, n: n.poly(A([1., 2])),
    "poly ints": lambda j, n: n.poly(A([1, 2])),
    "roots": lambda j, n: n.roots(A([1., -3, 2])),
    "roots leading zero": lambda j, n: n.roots(A([0., 1, -3, 2])),
    "roots trailing zero": lambda j, n: n.roots(A([1., -1, 0])),
    "roots constant": lambda j, n: n.roots(A([3.])),
    "polyfit": lambda j, n: n.polyfit(A([0., 1, 2, 3]), A([1., 3, 7, 13]), 2),
    "polyfit weights": lambda j, n: n.polyfit(A([0., 1, 2, 3]), A([1., 3, 7, 14]), 1,
                                              w=A([1., 2, 1, 1])),
    "polyfit cov": lambda j, n: n.polyfit(A([0., 1, 2, 3, 4]), A([1., 3, 7, 13, 20]), 1,
                                          cov=True),
    "polyfit 2-d y": lambda j, n: n.polyfit(A([0., 1, 2, 3]),
                                            A([[1., 0], [3, 1], [7, 4], [13, 9]]), 1),
    "polyfit negative degree": lambda j, n: n.polyfit(A([0., 1]), A([1., 2]), -1),
}


@pytest.mark.parametrize("name", sorted(COUNTS_AND_POLYNOMIALS))
def test_counts_and_polynomials(name, rjax):
    check(COUNTS_AND_POLYNOMIALS[name], rjax, rtol=2e-5, atol=2e-5)


def test_poly_of_matrix_and_polyfit_full(rjax):
    """The characteristic polynomial of a matrix (complex, as JAX's) and polyfit's full
    output; compared with tolerances suited to LAPACK."""
    import jax.numpy as rjnp
    m = A([[1., 2], [3, 4]])
    assert_like_jax(jaxlite.numpy.poly(m), rjnp.poly(m), rtol=1e-5, atol=1e-5)
    x, y = A([0., 1, 2, 3]), A([1., 3, 7, 13])
    got = jaxlite.numpy.polyfit(x, y, 1, full=True)
    want = rjnp.polyfit(x, y, 1, full=True)
    assert len(got) == len(want) == 5
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=1e-4, atol=1e-4)


M22 = A([[1, 2], [3, 4]])

FUNCTIONAL_AND_CONSTRUCTION = {
    "astype": lambda j, n: n.astype(A([1.5, 2]), n.int32),
    "astype python scalar": lambda j, n: n.astype(2.5, n.float32),
    "astype list": lambda j, n: n.astype([1], n.int32),
    "block": lambda j, n: n.block([[A([[1, 2]]), A([[3]])], [A([[4, 5, 6]])]]),
    "block 1-d": lambda j, n: n.block([A([1, 2]), 3]),
    "block depths": lambda j, n: n.block([[1, 2], 3]),
    "block scalar": lambda j, n: n.block(5),
    "block tuple": lambda j, n: n.block((A([1]),)),
    "block rank raised": lambda j, n: n.block([[A([1, 2]), A([3])], [A([4, 5, 6])]]),
    "apply_along_axis sum": lambda j, n: n.apply_along_axis(lambda v: v.sum(), 1, M22),
    "apply_along_axis vector": lambda j, n: n.apply_along_axis(lambda v: v * 2, 0, M22),
    "apply_along_axis matrix": lambda j, n: n.apply_along_axis(lambda v: n.outer(v, v), 1,
                                                               M22),
    "apply_along_axis 3-d": lambda j, n: n.apply_along_axis(lambda v: v[::-1] * v[0], 1,
                                                            np.arange(24).reshape(2, 3, 4)),
    "apply_over_axes": lambda j, n: n.apply_over_axes(n.sum, A([[[1, 2], [3, 4]]]), [0, 2]),
    "vectorize": lambda j, n: n.vectorize(lambda a, b: a + b)(A([1, 2]), A([[1], [2]])),
    "vectorize signature": lambda j, n: n.vectorize(lambda v: v.sum(),
                                                    signature="(n)->()")(M22),
    "vectorize excluded": lambda j, n: n.vectorize(lambda a, k: a * k, excluded={1})(
        A([1, 2]), 3),
    "vectorize matmul signature": lambda j, n: n.vectorize(
        lambda a, b: a @ b, signature="(m,n),(n)->(m)")(np.ones((2, 3, 4)), np.ones(4)),
    "vectorize core mismatch": lambda j, n: n.vectorize(
        lambda a, b: a @ b, signature="(n),(n)->()")(np.ones(3), np.ones(4)),
    "packbits": lambda j, n: n.packbits(A([1, 0, 1, 1, 0, 0, 0, 0, 1])),
    "packbits little": lambda j, n: n.packbits(A([1, 0, 1]), bitorder="little"),
    "packbits axis": lambda j, n: n.packbits(A([[1, 0], [1, 1]]), axis=1),
    "packbits float": lambda j, n: n.packbits(A([1., 0])),
    "packbits bool": lambda j, n: n.packbits(A([True, False])),
    "unpackbits": lambda j, n: n.unpackbits(A([5, 255], np.uint8)),
    "unpackbits count": lambda j, n: n.unpackbits(A([5], np.uint8), count=3),
    "unpackbits negative count": lambda j, n: n.unpackbits(A([5, 7], np.uint8), count=-3),
    "unpackbits long count": lambda j, n: n.unpackbits(A([5], np.uint8), count=10),
    "unpackbits little": lambda j, n: n.unpackbits(A([5], np.uint8), bitorder="little"),
    "unpackbits int32": lambda j, n: n.unpackbits(A([5], np.int32)),
    "cross": lambda j, n: n.cross(A([1, 2, 3]), A([4, 5, 6])),
    "cross 2-vectors": lambda j, n: n.cross(A([1, 2]), A([4, 5])),
    "cross 2 and 3": lambda j, n: n.cross(A([1., 2]), A([4, 5, 6.])),
    "cross axis": lambda j, n: n.cross(A([[1, 4], [2, 5], [3, 6]]),
                                       A([[4, 1], [5, 2], [6, 3]]), axis=0),
    "cross 4-vectors": lambda j, n: n.cross(A([1, 2, 3, 4]), A([4, 5, 6, 7])),
    "cross grad": lambda j, n: j.grad(lambda a: n.sum(n.cross(a, A([4., 5, 6]))))(
        A([1., 2, 3])),
    "mask_indices": lambda j, n: n.mask_indices(3, n.triu),
    "mask_indices k": lambda j, n: n.mask_indices(3, n.tril, 1),
    "frombuffer": lambda j, n: n.frombuffer(b"\x01\x02", dtype=np.uint8),
    "frombuffer offset": lambda j, n: n.frombuffer(b"\x01\x02", dtype=np.uint8, count=1,
                                                   offset=1),
    "frombuffer bad size": lambda j, n: n.frombuffer(b"\x00\x00\x80\x3f"),
    "fromstring": lambda j, n: n.fromstring("1 2", sep=" "),
    "fromstring int": lambda j, n: n.fromstring("1,2", dtype=np.int32, sep=","),
    "fromiter": lambda j, n: n.fromiter(range(3), dtype=float),
    "fromfile": lambda j, n: n.fromfile("no-such-file"),
    "ufunc add": lambda j, n: n.add(A([1, 2]), 3),
    "add.reduce": lambda j, n: n.add.reduce(M22),
    "add.reduce axis None": lambda j, n: n.add.reduce(M22, axis=None),
    "add.reduce keepdims": lambda j, n: n.add.reduce(M22, axis=1, keepdims=True),
    "add.reduce initial": lambda j, n: n.add.reduce(A([1, 2]), initial=10),
    "add.reduce where": lambda j, n: n.add.reduce(A([1, 2]), where=A([True, False])),
    "add.reduce dtype": lambda j, n: n.add.reduce(A([1, 2]), dtype=n.float32),
    "maximum.reduce empty": lambda j, n: n.maximum.reduce(A([], np.float32)),
    "maximum.reduce where": lambda j, n: n.maximum.reduce(A([1, 2]), where=A([True, False])),
    "maximum.reduce where initial": lambda j, n: n.maximum.reduce(
        A([1., 2]), where=A([True, False]), initial=-5),
    "multiply.reduce empty": lambda j, n: n.multiply.reduce(A([], np.float32)),
    "subtract.reduce": lambda j, n: n.subtract.reduce(A([10, 2, 3])),
    "subtract.accumulate": lambda j, n: n.subtract.accumulate(A([10, 2, 3])),
    "add.accumulate": lambda j, n: n.add.accumulate(M22, axis=1),
    "maximum.accumulate": lambda j, n: n.maximum.accumulate(A([1, 3, 2, 5])),
    "logaddexp.reduce": lambda j, n: n.logaddexp.reduce(A([1., 2, 3])),
    "logaddexp.accumulate": lambda j, n: n.logaddexp.accumulate(A([1., 2, 3])),
    "logical_and.reduce": lambda j, n: n.logical_and.reduce(A([1, 0])),
    "bitwise_xor.reduce": lambda j, n: n.bitwise_xor.reduce(A([1, 3, 4])),
    "negative.reduce": lambda j, n: n.negative.reduce(A([1, 2, 3])),
    "add.at inplace": lambda j, n: n.add.at(A([1, 2, 3]), A([0, 0]), 5),
    "add.at": lambda j, n: n.add.at(A([1, 2, 3]), A([0, 0]), 5, inplace=False),
    "subtract.at": lambda j, n: n.subtract.at(A([1, 2, 3]), A([0, 0]), 5, inplace=False),
    "negative.at": lambda j, n: n.negative.at(A([1, 2, 3]), A([0, 0]), inplace=False),
    "add.reduceat": lambda j, n: n.add.reduceat(A([1, 2, 3, 4, 5]), A([0, 2, 2, 4])),
    "add.reduceat decreasing": lambda j, n: n.add.reduceat(A([1, 2, 3, 4, 5]), A([3, 1])),
    "multiply.outer": lambda j, n: n.multiply.outer(A([1, 2]), A([[1], [2]])),
    "frompyfunc call": lambda j, n: n.frompyfunc(lambda a, b: a * b, 2, 1)(A([1, 2]),
                                                                           A([3, 4])),
    "frompyfunc reduce": lambda j, n: n.frompyfunc(lambda a, b: a * b, 2, 1,
                                                   identity=1).reduce(A([1, 2, 3])),
    "frompyfunc accumulate": lambda j, n: n.frompyfunc(lambda a, b: a * b, 2, 1).accumulate(
        A([1, 2, 3])),
    "frompyfunc outer": lambda j, n: n.frompyfunc(lambda a, b: a * b, 2, 1).outer(
        A([1, 2]), A([3, 4])),
    "frompyfunc empty reduce": lambda j, n: n.frompyfunc(lambda a, b: a * b, 2, 1).reduce(
        A([], np.int32)),
    "frompyfunc one input": lambda j, n: n.frompyfunc(lambda a: a * 2, 1, 1)(A([1, 2])),
    "frompyfunc two outputs": lambda j, n: n.frompyfunc(lambda a: (a, a * 2), 1, 2)(
        A([1, 2])),
    "frompyfunc reduce unary": lambda j, n: n.frompyfunc(lambda a: a * 2, 1, 1).reduce(
        A([1, 2])),
    "add.reduce grad": lambda j, n: j.grad(lambda x: n.multiply.reduce(x))(A([1., 2, 3])),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_AND_CONSTRUCTION))
def test_functional_and_construction(name, rjax):
    check(FUNCTIONAL_AND_CONSTRUCTION[name], rjax, rtol=2e-6, atol=2e-6)


def test_ufunc_objects_and_aliases(rjnp):
    ours = jaxlite.numpy
    names = sorted(n for n in dir(rjnp) if isinstance(getattr(rjnp, n), rjnp.ufunc))
    assert names == sorted(n for n in dir(ours) if isinstance(getattr(ours, n), ours.ufunc))
    for n in names:
        u, v = getattr(ours, n), getattr(rjnp, n)
        assert (repr(u), u.nin, u.nout, u.nargs) == (repr(v), v.nin, v.nout, v.nargs)
        assert u.identity == v.identity or (np.isnan(u.identity) and np.isnan(v.identity))
    assert ours.double is ours.float64 and ours.single is ours.float32
    assert ours.cdouble is ours.complex128 and ours.csingle is ours.complex64
    assert ours.object_ is np.object_ and ours.flexible is np.flexible
    assert ours.ComplexWarning is np.exceptions.ComplexWarning
    assert ours.iterable(A([1])) and not ours.iterable(3)


def test_printing_and_files(rjnp, tmp_path):
    ours = jaxlite.numpy
    x, y = ours.arange(3.) / 3, rjnp.arange(3.) / 3
    assert ours.array_repr(x, precision=2) == rjnp.array_repr(y, precision=2)
    assert ours.array_str(x, precision=2) == rjnp.array_str(y, precision=2)
    with ours.printoptions(precision=2):
        assert repr(x) == "Array([0.  , 0.33, 0.67], dtype=float32)"
        assert ours.get_printoptions()["precision"] == 2
    path = tmp_path / "a.npy"
    ours.save(path, np.arange(3))
    got, want = ours.load(path), rjnp.load(path)
    assert_like_jax(got, want)
    zpath = tmp_path / "b.npz"
    ours.savez(zpath, a=np.arange(2.))
    assert type(ours.load(zpath)) is type(rjnp.load(zpath))
