"""``jax.make_jaxpr(f, axis_env=[(name, size), ...])``: collectives over the named axes
trace as equations of the program, against real JAX 0.10.2 (the equations' primitives, the
output types, the folded constants, the errors)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp


@pytest.fixture(scope="module")
def rlax(rjax):
    from jax import lax as rl
    return rl


def _prims(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def _outs(closed):
    return [(tuple(a.shape), str(a.dtype)) for a in closed.out_avals]


def test_signature_is_jax(rjax):
    assert list(inspect.signature(jaxlite.make_jaxpr).parameters) == \
        list(inspect.signature(rjax.make_jaxpr).parameters) == \
        ["fun", "static_argnums", "axis_env", "return_shape"]


X = np.arange(6, dtype=np.float32).reshape(2, 3)

# (jaxlite function, JAX function) pairs of (library, lax) -> f
PROGRAMS = {
    "psum": lambda j, l: lambda x: l.psum(x, "i"),
    "pmax_two_axes": lambda j, l: lambda x: l.pmax(x, ("i", "j")),
    "pmin": lambda j, l: lambda x: l.pmin(x * 2, "j"),
    "pmean": lambda j, l: lambda x: l.pmean(x, "i"),
    "all_gather": lambda j, l: lambda x: l.all_gather(x, "i"),
    "all_gather_tiled": lambda j, l: lambda x: l.all_gather(x, "i", axis=1, tiled=True),
    "ppermute": lambda j, l: lambda x: l.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
    "psum_scatter": lambda j, l: lambda x: l.psum_scatter(j.ones((4, 3)), "i"),
    "all_to_all": lambda j, l: lambda x: l.all_to_all(j.ones((4, 2)), "i", 0, 0),
    "axis_size": lambda j, l: lambda x: x * l.axis_size(("i", "j")),
    "tree": lambda j, l: lambda x: l.psum({"a": x, "b": (x[0],)}, "j"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_collectives_stay_equations_as_jax(rjax, rlax, name):
    env = [("i", 4), ("j", 2)]
    got = jaxlite.make_jaxpr(PROGRAMS[name](jnp, lax), axis_env=env)(X)
    want = rjax.make_jaxpr(PROGRAMS[name](rjax.numpy, rlax), axis_env=env)(X)
    assert _prims(got) == _prims(want)
    assert _outs(got) == _outs(want)


@pytest.mark.parametrize("value", [1.0, 1, np.float32(2.5), True])
def test_psum_of_a_constant_is_folded(rjax, rlax, value):
    got = jaxlite.make_jaxpr(lambda x: lax.psum(value, "i"), axis_env=[("i", 4)])(X)
    want = rjax.make_jaxpr(lambda x: rlax.psum(value, "i"), axis_env=[("i", 4)])(X)
    assert _outs(got) == _outs(want)
    if value is True:
        # a bool is counted: converted to int32 (1) and summed by an equation, not folded
        assert _prims(got) == _prims(want) == ["psum"]
        assert "] 1:i32[]" in str(got) and "] 1:i32[]" in str(want)
        return
    assert _prims(got) == _prims(want) == []
    assert str(got) == str(want)


def test_transformations_inside_and_options(rjax, rlax):
    env = [("i", 4)]
    cases = [
        (lambda l, r: r.grad(lambda x: l.psum(x, "i").sum())),
        (lambda l, r: r.vmap(lambda x: l.psum(x, "i"))),
        (lambda l, r: r.jit(lambda x: l.psum(x, "i"))),
        (lambda l, r: lambda x: l.scan(lambda c, a: (c + l.psum(a, "i"), None), 0., x[0])[0]),
    ]
    for case in cases:
        got = jaxlite.make_jaxpr(case(lax, jaxlite), axis_env=env)(X)
        want = rjax.make_jaxpr(case(rlax, rjax), axis_env=env)(X)
        assert _outs(got) == _outs(want)
        assert str(got).count("psum") == str(want).count("psum") >= 1
    got = jaxlite.make_jaxpr(lambda x, n: lax.psum(x, "i") * n, static_argnums=1,
                             axis_env=env, return_shape=True)(X, 3)
    want = rjax.make_jaxpr(lambda x, n: rlax.psum(x, "i") * n, static_argnums=1,
                           axis_env=env, return_shape=True)(X, 3)
    assert repr(got[1]) == repr(want[1])
    assert _prims(got[0]) == _prims(want[0])


def test_errors_are_jax(rjax, rlax):
    # a name the environment does not bind; no environment; the binding ends with the call
    for env in ([("i", 4)], None):
        with pytest.raises(NameError, match="unbound axis name: k"):
            jaxlite.make_jaxpr(lambda x: lax.psum(x, "k"), axis_env=env)(X)
        with pytest.raises(NameError, match="unbound axis name: k"):
            rjax.make_jaxpr(lambda x: rlax.psum(x, "k"), axis_env=env)(X)
    jaxlite.make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=[("i", 4)])(X)
    with pytest.raises(NameError):
        jaxlite.make_jaxpr(lambda x: lax.psum(x, "i"))(X)
    # an entry that is not a (name, size) pair: JAX's ValueError from unpacking it
    for bad in ([("i",)], {"i": 4}):
        with pytest.raises(ValueError, match="not enough values to unpack"):
            jaxlite.make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=bad)(X)
        with pytest.raises(ValueError, match="not enough values to unpack"):
            rjax.make_jaxpr(lambda x: rlax.psum(x, "i"), axis_env=bad)(X)
    # sizes JAX does not check (and would use as they are): refused here
    with pytest.raises(ValueError, match="non-negative"):
        jaxlite.make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=[("i", -1)])
    with pytest.raises(TypeError, match="must be an int"):
        jaxlite.make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=[("i", "4")])


def test_program_runs_under_a_matching_vmap(rjax):
    """The traced program computes what ``f`` computes where the names are bound: its
    equations evaluated under ``vmap(axis_name='i')`` give vmap's own values."""
    f = lambda x: lax.psum(x * 2.0, "i") + lax.pmax(x, "i")     # noqa: E731
    closed = jaxlite.make_jaxpr(f, axis_env=[("i", 4)])(X[0])
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    from jaxlite.core import eval_jaxpr
    got = jaxlite.vmap(lambda x: eval_jaxpr(closed.jaxpr, closed.consts, x)[0],
                       axis_name="i")(xs)
    want = jaxlite.vmap(f, axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(want), np.broadcast_to(
        (xs * 2).sum(0) + xs.max(0), (4, 3)))
