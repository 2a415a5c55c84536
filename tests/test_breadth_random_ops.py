"""Valid calls that crashed and bad calls that raised another exception type than JAX's
(issue 30, items 2 and 3), of the kinds JAX's own random, random_lax, jnp operator and
einsum test files make, each against real JAX 0.10.2: samplers and key functions (values,
dtypes, shapes, weak types, eager and jitted), ``jnp`` operators and operator overloads,
and ``jnp.einsum``'s options."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import jaxlite

from oracle import assert_like_jax

jax = pytest.importorskip("jax")


def _leaves(tree):
    return jax.tree_util.tree_leaves(tree)


def _same(fn, rtol=2e-6, atol=1e-6, check_weak=True):
    """``fn(jax)`` and ``fn(jaxlite)`` agree leaf by leaf: values, shapes, dtypes and weak
    types; plain Python leaves (names, counts) compare equal."""
    want, got = _leaves(fn(jax)), jaxlite.tree_util.tree_leaves(fn(jaxlite))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if not hasattr(w, "dtype"):
            assert g == w
            continue
        assert_like_jax(g, w, rtol=rtol, atol=atol, check_weak=check_weak)


def _same_error(fn, match=None):
    """Both raise, and jaxlite's exception is of the type JAX raises; ``match`` (a regex)
    is looked for in jaxlite's message."""
    with pytest.raises(Exception) as want:
        fn(jax)
    with pytest.raises(type(want.value), match=match) as got:
        fn(jaxlite)
    return got.value


# ---- jnp.einsum ------------------------------------------------------------------------

_NUMERIC = ["int8", "int16", "int32", "uint8", "uint32", "bfloat16", "float16", "float32",
            "complex64", "bool"]


@pytest.mark.parametrize("lhs", _NUMERIC)
@pytest.mark.parametrize("rhs", ["int8", "uint8", "float16", "float32", "complex64", "bool"])
def test_einsum_mixed_dtypes_one_dot_general(lhs, rhs):
    # JAX's einsum hands operands of mixed dtypes to one dot_general naming the promoted
    # dtype (no convert_element_type first); the result and the equations match JAX's
    x = (np.arange(10) % 3).astype(lhs)
    y = (np.arange(10) % 4 + 1).astype(rhs)

    def fn(m):
        f = partial(m.numpy.einsum, "a,a->a")
        eqns = m.make_jaxpr(f)(x, y).eqns
        return [f(x, y), [e.primitive.name for e in eqns],
                str(eqns[-1].params.get("preferred_element_type"))]
    _same(fn)


@pytest.mark.parametrize("spec,shapes,dtypes", [
    ("ij,jk->ik", [(2, 3), (3, 2)], ["int8", "uint8"]),
    ("ii,j->ij", [(3, 3), (2,)], ["int16", "float32"]),
    ("i,->i", [(3,), ()], ["bfloat16", "float32"]),
    ("ij,j->i", [(2, 3), (3,)], ["bool", "int8"]),
    ("ab,b,bc->ac", [(2, 3), (3,), (3, 4)], ["float16", "int32", "bfloat16"])])
def test_einsum_mixed_dtypes_values(spec, shapes, dtypes):
    ops = [(np.arange(int(np.prod(s))).reshape(s) % 5).astype(d)
           for s, d in zip(shapes, dtypes)]
    _same(lambda m: m.numpy.einsum(spec, *ops))
    _same(lambda m: m.jit(partial(m.numpy.einsum, spec))(*ops))


def test_einsum_mixed_dtypes_weak_and_preferred():
    # a weak int scalar with an int8 array: the dot_general's int8 preferred type is
    # narrower than its operands' promotion, which JAX refuses with a TypeError
    _same_error(lambda m: m.numpy.einsum("i,->i", m.numpy.ones(3, "int8"), 2))
    _same(lambda m: m.numpy.einsum("i,->i", m.numpy.ones(3, "bfloat16"), 2.0))
    _same(lambda m: m.numpy.einsum(",->", 2.0, 3))
    _same(lambda m: m.numpy.einsum("ij,jk->ik", np.ones((2, 3), "int8"),
                                   np.ones((3, 2), "uint8"), preferred_element_type="int32"))


def test_einsum_mixed_dtypes_under_grad_and_vmap():
    _same(lambda m: m.grad(lambda x: m.numpy.einsum(
        "ij,jk->", x, m.numpy.ones((3, 2), "bfloat16")))(m.numpy.ones((2, 3), "float32")))
    _same(lambda m: m.vmap(lambda x: m.numpy.einsum(
        "j,jk->k", x, m.numpy.ones((3, 2), "int8")))(m.numpy.ones((4, 3), "float16")))


def test_einsum_path_step_over_three_operands_is_refused():
    arrs = [np.ones(s, np.float32) for s in [(2, 3), (2, 4), (2, 5)]]
    _same_error(lambda m: m.numpy.einsum("ij,ik,il->jkl", *arrs, optimize=[(0, 1, 2)]),
                match="3 or more")
