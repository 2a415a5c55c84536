"""The IR and its printer: structure compared with real JAX's jaxprs, notation, eval."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.ir import eval_jaxpr

CASES = [
    ("elementwise", lambda m: (lambda x: m.sin(x) * 2.0 + 1), [(3,)]),
    ("dot_sum", lambda m: (lambda x, y: m.dot(x, y) + m.sum(x)), [(3,), (3,)]),
    ("matmul", lambda m: (lambda a, b: a @ b), [(2, 3), (3, 4)]),
    ("reduce_max", lambda m: (lambda x: m.max(x, axis=1)), [(2, 3)]),
    ("tanh_exp", lambda m: (lambda x: m.tanh(x) * 0.5 + m.exp(-x * x) * m.sin(x)), [(5,)]),
]


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


@pytest.mark.parametrize("name,make,shapes", CASES, ids=[c[0] for c in CASES])
def test_jaxpr_structure_matches_jax(rjax, rjnp, name, make, shapes):
    args = [np.ones(s, np.float32) for s in shapes]
    ours = jax.make_jaxpr(make(jnp))(*[jnp.asarray(a) for a in args])
    theirs = rjax.make_jaxpr(make(rjnp))(*args)
    assert _prims(ours) == [e.primitive.name for e in theirs.eqns]
    assert [(a.shape, a.dtype) for a in ours.out_avals] == \
        [(a.shape, a.dtype) for a in theirs.out_avals]


def test_printer_notation():
    text = str(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0 + 1)(jnp.ones(3)))
    assert text == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "    d:f32[3] = add c 1.0:f32[]\n"
        "  in (d,) }")


def test_printer_constvars_and_names_past_z():
    c = jnp.arange(3.0)

    def f(x):
        for _ in range(30):
            x = x + 1.0
        return x * c

    text = str(jax.make_jaxpr(f)(jnp.ones(3)))
    assert text.startswith("{ lambda a:f32[3]; b:f32[3]. let")
    assert " ba:f32[3] = " in text  # variable names continue ..., z, ba, bb


def test_eval_jaxpr_reproduces_function():
    f = lambda x, y: jnp.maximum(x, y) * jnp.cos(x)  # noqa: E731
    x, y = jnp.arange(4.0), jnp.full((4,), 1.5)
    closed = jax.make_jaxpr(f)(x, y)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
    np.testing.assert_allclose(np.asarray(out), np.asarray(f(x, y)))


def test_weak_types_in_avals():
    closed = jax.make_jaxpr(lambda x: x * 2)(3.0)
    (aval,) = closed.in_avals
    assert aval.weak_type and aval.dtype == np.float32
    assert closed.out_avals[0].weak_type
