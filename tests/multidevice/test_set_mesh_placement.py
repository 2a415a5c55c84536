"""Where results live under ``set_mesh`` and for ``*_like`` of sharded arrays, against
JAX 0.10.2 on the same 8 CPU devices: values, dtype, the printed sharding and whether the
result is committed, or the same exception type.

Under ``set_mesh(mesh)`` JAX runs every operation as a computation over the mesh: results
of host data or uncommitted Arrays are replicated over it (``P()`` on Auto axes, the typed
``P(None, ...)`` on Explicit ones), ``jnp.asarray`` of host data is ``P()``, and an operand
committed to other devices raises ValueError.  ``zeros_like`` (``ones_like``,
``full_like``, ``empty_like``) keeps a sharded prototype's sharding unless a shape is
given.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

H = np.arange(32, dtype=np.float32).reshape(8, 4)

# name -> f(lib, jnp, mesh, u, c1, xs): u an uncommitted Array, c1 one committed to
# device 1, xs H sharded P('x') over the mesh; run inside set_mesh(mesh)
IN_MESH = {
    "zeros": lambda lib, jnp, m, u, c1, xs: jnp.zeros((8, 4)),
    "arange": lambda lib, jnp, m, u, c1, xs: jnp.arange(8),
    "full scalar": lambda lib, jnp, m, u, c1, xs: jnp.full((), 2.5),
    "asarray host": lambda lib, jnp, m, u, c1, xs: jnp.asarray(H),
    "array host": lambda lib, jnp, m, u, c1, xs: jnp.array(H),
    "asarray Array": lambda lib, jnp, m, u, c1, xs: jnp.asarray(u),
    "device_put host": lambda lib, jnp, m, u, c1, xs: lib.device_put(H),
    "device_put device": lambda lib, jnp, m, u, c1, xs: lib.device_put(H, lib.devices()[1]),
    "uncommitted + 1": lambda lib, jnp, m, u, c1, xs: u + 1,
    "uncommitted * uncommitted": lambda lib, jnp, m, u, c1, xs: u * u,
    "sin python scalar": lambda lib, jnp, m, u, c1, xs: jnp.sin(2.0),
    "numpy scalar + 1": lambda lib, jnp, m, u, c1, xs: jnp.float32(3) + 1,
    "sum": lambda lib, jnp, m, u, c1, xs: u.sum(0),
    "jit of host": lambda lib, jnp, m, u, c1, xs: lib.jit(lambda a: a * 2)(H),
    "jit of uncommitted": lambda lib, jnp, m, u, c1, xs: lib.jit(lambda a: a + 1)(u),
    "jit out_shardings": lambda lib, jnp, m, u, c1, xs:
        lib.jit(lambda a: a * 2, out_shardings=lib.P("x"))(H),
    "grad": lambda lib, jnp, m, u, c1, xs: lib.grad(lambda a: (a ** 2).sum())(u),
    "vmap": lambda lib, jnp, m, u, c1, xs: lib.vmap(lambda a: a * 2)(u),
    "random normal": lambda lib, jnp, m, u, c1, xs:
        lib.random.normal(lib.random.key(0), (8, 4)),
    "key": lambda lib, jnp, m, u, c1, xs: lib.random.key_data(lib.random.key(0)),
    "sharded + host": lambda lib, jnp, m, u, c1, xs: xs + H,
    "sharded sum": lambda lib, jnp, m, u, c1, xs: xs.sum(1),
    "committed elsewhere": lambda lib, jnp, m, u, c1, xs: c1 + 1,
    "jit committed elsewhere": lambda lib, jnp, m, u, c1, xs: lib.jit(lambda a: a + 1)(c1),
}


# JAX 0.10.2 types these on Explicit axes by how its library stages them, which jaxlite's
# does not follow (same values and devices; README, known differences): a reduction of an
# uncommitted Array (jnp.sum is a jit there: P(), jaxlite P(None,)) and a key's data
# (a typed key there: P(None,), jaxlite P())
KNOWN = {("sum", "Explicit"), ("key", "Explicit")}


def _run(lib, kind, name):
    jnp = lib.numpy
    S = lib.sharding
    m = lib.make_mesh((4,), ("x",), axis_types=(getattr(S.AxisType, kind),))
    u = jnp.asarray(H) + 0
    c1 = lib.device_put(H, lib.devices()[1])
    xs = lib.device_put(H, S.NamedSharding(m, S.PartitionSpec("x")))
    with lib.set_mesh(m):
        try:
            r = IN_MESH[name](lib, jnp, m, u, c1, xs)
        except Exception as e:      # noqa: BLE001 - compared with JAX's
            return type(e).__name__
    return (np.asarray(r), r.dtype, repr(r.sharding), r.committed)


@pytest.mark.parametrize("kind", ["Auto", "Explicit"])
@pytest.mark.parametrize("name", sorted(IN_MESH))
def test_results_under_set_mesh_live_on_it_as_in_jax(rjax8, kind, name, request):
    if (name, kind) in KNOWN:
        request.applymarker(pytest.mark.xfail(strict=True, reason="known difference"))
    want = _run(rjax8, kind, name)
    got = _run(jaxlite, kind, name)
    if isinstance(want, str):
        assert got == want, (got, want)
        return
    assert not isinstance(got, str), (got, want)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:], (got[1:], want[1:])


def test_context_mesh_error_names_the_argument_and_devices():
    m = jaxlite.make_mesh((4,), ("x",))
    c1 = jaxlite.device_put(H, jaxlite.devices()[1])
    with jaxlite.set_mesh(m), pytest.raises(ValueError, match=r"device ids \[1\].*"
                                            r"\[0, 1, 2, 3\]"):
        jaxlite.jit(lambda a: a + 1)(c1)
    # outside the mesh context the same call runs where its argument lives
    r = jaxlite.jit(lambda a: a + 1)(c1)
    assert r.sharding == jaxlite.sharding.SingleDeviceSharding(jaxlite.devices()[1])


LIKE = {
    "zeros_like": lambda jnp, x: jnp.zeros_like(x),
    "ones_like": lambda jnp, x: jnp.ones_like(x),
    "empty_like": lambda jnp, x: jnp.empty_like(x),
    "full_like": lambda jnp, x: jnp.full_like(x, 3),
    "full_like array fill": lambda jnp, x: jnp.full_like(x, np.arange(4.)),
    "zeros_like dtype": lambda jnp, x: jnp.zeros_like(x, dtype=jnp.int32),
    "zeros_like shape": lambda jnp, x: jnp.zeros_like(x, shape=(8,)),
    "ones_like same shape given": lambda jnp, x: jnp.ones_like(x, shape=(8, 4)),
}


@pytest.mark.parametrize("kind", ["Auto", "Explicit"])
@pytest.mark.parametrize("name", sorted(LIKE))
def test_like_of_a_sharded_array_keeps_its_sharding(rjax8, kind, name):
    def run(lib):
        S = lib.sharding
        m = lib.make_mesh((4,), ("x",), axis_types=(getattr(S.AxisType, kind),))
        x = lib.device_put(H, S.NamedSharding(m, S.PartitionSpec("x")))
        r = LIKE[name](lib.numpy, x)
        return np.asarray(r), r.dtype, repr(r.sharding), r.committed
    got, want = run(jaxlite), run(rjax8)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:], (got[1:], want[1:])


SPELLING = {
    "P('x', None) * 2": lambda lib, x1, x2, x3: lib.jit(lambda a: a * 2)(x1),
    "P('x') * 2": lambda lib, x1, x2, x3: lib.jit(lambda a: a * 2)(x2),
    "first argument's spelling": lambda lib, x1, x2, x3:
        lib.jit(lambda a, b: (a * 2, b + 1))(x1, x2),
    "first argument's spelling, swapped": lambda lib, x1, x2, x3:
        lib.jit(lambda a, b: (a * 2, b + 1))(x2, x1),
    "sum": lambda lib, x1, x2, x3: lib.jit(lambda a: a.sum(1))(x1),
    "transpose": lambda lib, x1, x2, x3: lib.jit(lambda a: a.T)(x1),
    "transpose of P(None, 'x')": lambda lib, x1, x2, x3: lib.jit(lambda a: a.T)(x3),
    "eager": lambda lib, x1, x2, x3: x1 * 2,
    "eager, two spellings": lambda lib, x1, x2, x3: x1 + x2,
    "reshape": lambda lib, x1, x2, x3: lib.jit(lambda a: a.reshape(8, 2, 2))(x1),
}


@pytest.mark.parametrize("kind", ["Auto", "Explicit"])
@pytest.mark.parametrize("name", sorted(SPELLING))
def test_results_keep_their_inputs_spec_spelling(rjax8, kind, name):
    """A result laid out as an argument is keeps that argument's sharding (on Auto meshes
    ``P('x', None)`` stays so); on Explicit ones the result's type gives its spec."""
    def run(lib):
        S = lib.sharding
        P, NS = S.PartitionSpec, S.NamedSharding
        m = lib.make_mesh((4,), ("x",), axis_types=(getattr(S.AxisType, kind),))
        xs = [lib.device_put(H, NS(m, s)) for s in (P("x", None), P("x"), P(None, "x"))]
        r = SPELLING[name](lib, *xs)
        return [(np.asarray(t), repr(t.sharding)) for t in lib.tree_util.tree_leaves(r)]
    got, want = run(jaxlite), run(rjax8)
    assert len(got) == len(want)
    for (gv, gs), (wv, ws) in zip(got, want):
        np.testing.assert_array_equal(gv, wv)
        assert gs == ws
