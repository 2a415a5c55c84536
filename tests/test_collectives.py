"""Collectives over a named vmap axis (lax.psum, pmean, pmax, pmin, axis_index) vs JAX."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

from oracle import assert_like_jax

X = np.arange(6.0, dtype=np.float32).reshape(2, 3)

CASES = {
    "psum_normalise": lambda J: J.vmap(lambda v: v / J.lax.psum(v, "i"), axis_name="i")(X[0]),
    "pmean": lambda J: J.vmap(lambda v: J.lax.pmean(v, "i"), axis_name="i")(X[0]),
    "pmax": lambda J: J.vmap(lambda v: J.lax.pmax(v, "i") - v, axis_name="i")(X[0]),
    "pmin": lambda J: J.vmap(lambda v: J.lax.pmin(v, "i") + v, axis_name="i")(X[0]),
    "axis_index": lambda J: J.vmap(lambda v: v * J.lax.axis_index("i"), axis_name="i")(X[0]),
    "two_names": lambda J: J.vmap(J.vmap(lambda v: J.lax.psum(v, ("i", "j")), axis_name="j"),
                                  axis_name="i")(X),
    "outer_name": lambda J: J.vmap(J.vmap(lambda v: J.lax.psum(v, "i"), axis_name="j"),
                                   axis_name="i")(X),
    "inner_name": lambda J: J.vmap(J.vmap(lambda v: J.lax.pmax(v, "j"), axis_name="j"),
                                   axis_name="i")(X),
    "nested_index": lambda J: J.vmap(J.vmap(
        lambda v: J.lax.axis_index("i") * 10 + J.lax.axis_index("j"), axis_name="j"),
        axis_name="i")(X),
    "grad": lambda J: J.grad(lambda w: J.numpy.sum(J.vmap(
        lambda v: v * J.lax.psum(v * w, "i"), axis_name="i")(X[0])))(2.0),
    "jit_inside": lambda J: J.vmap(J.jit(lambda v: J.lax.psum(v, "i")), axis_name="i")(X[0]),
    "jit_outside": lambda J: J.jit(J.vmap(lambda v: J.lax.pmean(v, "i"), axis_name="i"))(X),
    "scan_inside": lambda J: J.vmap(lambda v: J.lax.scan(
        lambda c, _: (c + J.lax.psum(v, "i"), None), 0.0, None, length=3)[0],
        axis_name="i")(X[0]),
    "constant": lambda J: J.vmap(lambda v: J.lax.psum(1, "i"), axis_name="i")(X[0]),
    "pytree": lambda J: J.vmap(lambda v: J.lax.psum({"a": v, "b": (v * 2,)}, "i"),
                               axis_name="i")(X[0]),
    "int_pmean": lambda J: J.vmap(lambda v: J.lax.pmean(v, "i"), axis_name="i")(
        np.arange(4, dtype=np.int32)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_collective_matches_jax(rjax, name):
    got, want = CASES[name](jaxlite), CASES[name](rjax)
    g_l = jaxlite.tree_util.tree_leaves(got)
    w_l = rjax.tree_util.tree_leaves(want)
    assert len(g_l) == len(w_l)
    for g, w in zip(g_l, w_l):
        assert_like_jax(g, w, rtol=1e-6)


@pytest.mark.parametrize("fn", ["psum", "pmax", "pmean", "axis_index"])
def test_unbound_axis_name_is_a_name_error(rjax, fn):
    call = (lambda L: getattr(L, fn)("k")) if fn == "axis_index" else \
        (lambda L: getattr(L, fn)(1.0, "k"))
    with pytest.raises(NameError, match="unbound axis name"):
        call(jaxlite.lax)
    with pytest.raises(NameError):
        jaxlite.vmap(lambda v: call(jaxlite.lax), axis_name="i")(X[0])


def test_pmax_differentiates():
    # (real JAX has no derivative for pmax; here it is the winners' tangent, as reduce_max)
    from _transform_checks import check_grads
    x = np.array([0.5, 2.0, -1.0], np.float32)
    check_grads(jaxlite.vmap(lambda v: v * jaxlite.lax.pmax(v, "i"), axis_name="i"), (x,))
