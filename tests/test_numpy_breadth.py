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
