"""Sharding types of traced values, against JAX 0.10.2 on the same 8 CPU devices:
``jax.typeof`` inside ``jit`` (also a nested jit and ``grad``) prints ``float32[8@x,4]``
and gives ``.sharding``; ``eval_shape`` and ``lower().out_info`` carry the outputs'
shardings; ``make_jaxpr`` prints its variables' types; ``jnp.zeros(...,
out_sharding=jax.typeof(b).sharding)`` works inside ``jit``; a scan over a sharded
leading dimension raises ValueError; ``ShapeDtypeStruct`` keeps a ``sharding``.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

H = np.arange(32, dtype=np.float32).reshape(8, 4)


def _mesh(lib, kind):
    S = lib.sharding
    return lib.make_mesh((4,), ("x",), axis_types=(getattr(S.AxisType, kind),))


def _typeof_trace(lib, kind):
    """What typeof shows at each step of a jitted function, and its result's sharding."""
    jnp, S = lib.numpy, lib.sharding
    m = _mesh(lib, kind)
    xs = lib.device_put(H, S.NamedSharding(m, S.PartitionSpec("x")))
    w = lib.device_put(np.ones((4, 3), np.float32), S.NamedSharding(m, S.PartitionSpec()))
    seen = []

    def note(tag, v):
        t = lib.typeof(v)
        seen.append((tag, str(t), repr(t.sharding)))

    def inner(b):
        note("inner arg", b)
        return b * 2

    def f(b, c):
        note("arg", b)
        note("replicated arg", c)
        d = lib.jit(inner)(b)
        note("nested result", d)
        note("sum over the sharded dim", d.sum(0))
        note("sum over the other", d.sum(1))
        note("transpose", d.T)
        note("dot", d @ c)
        z = jnp.zeros(b.shape, out_sharding=lib.typeof(b).sharding)
        note("zeros out_sharding=typeof", z)
        return z + d

    out = lib.jit(f)(xs, w)
    g = lib.jit(lib.grad(lambda b: (note("under grad", b), (b ** 2).sum())[1]))(xs)
    return seen, repr(out.sharding), np.asarray(out), np.asarray(g), repr(g.sharding)


@pytest.mark.parametrize("kind", ["Explicit", "Auto"])
def test_typeof_inside_jit_as_jax(rjax8, kind):
    got, want = _typeof_trace(jaxlite, kind), _typeof_trace(rjax8, kind)
    assert got[0] == want[0]
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])
    assert got[4] == want[4]


def _shapes(lib, kind):
    jnp, S = lib.numpy, lib.sharding
    m = _mesh(lib, kind)
    P, NS = S.PartitionSpec, S.NamedSharding
    xs = lib.device_put(H, NS(m, P("x")))
    w = lib.device_put(np.ones((4, 3), np.float32), NS(m, P()))
    sds = lib.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NS(m, P("x")))
    return [
        repr(sds), repr(sds.sharding),
        repr(lib.eval_shape(lambda b, c: b @ c, xs, w)),
        repr(lib.eval_shape(lambda b: (b * 2).sum(1), xs)),
        repr(lib.eval_shape(lambda b: (b * 2).sum(1), xs).sharding),
        repr(lib.eval_shape(lambda b: b @ jnp.ones((4, 3)), sds)),
        repr(lib.jit(lambda b: b.T).lower(sds).out_info),
        repr(lib.eval_shape(lambda b: b * 2, H)),
        repr(lib.typeof(H).sharding),
        str(lib.make_jaxpr(lambda b, c: jnp.tanh(b @ c).sum(0))(xs, w)),
        str(lib.make_jaxpr(lambda b: (b * 2).sum(1))(xs)),
    ]


@pytest.mark.parametrize("kind", ["Explicit", "Auto"])
def test_eval_shape_lower_and_make_jaxpr_carry_sharding_types(rjax8, kind):
    got, want = _shapes(jaxlite, kind), _shapes(rjax8, kind)
    for g, w in zip(got, want):
        assert g == w


@pytest.mark.parametrize("lib_name", ["jaxlite", "jax"])
def test_scan_over_a_sharded_leading_dimension_raises(rjax8, lib_name):
    lib = jaxlite if lib_name == "jaxlite" else rjax8
    jnp, S = lib.numpy, lib.sharding
    m = _mesh(lib, "Explicit")
    xs = lib.device_put(H, S.NamedSharding(m, S.PartitionSpec("x")))

    def f(b):
        return lib.lax.scan(lambda c, r: (c + r, None), jnp.zeros(4), b)[0]
    with pytest.raises(ValueError, match=r"0th dimension of all xs should be "
                                         r"replicated. Got P\('x', None\)"):
        lib.jit(f)(xs)
    # scanning the whole dimension after a reshard works
    r = lib.jit(lambda b: f(lib.reshard(b, S.NamedSharding(m, S.PartitionSpec()))))(xs)
    np.testing.assert_array_equal(np.asarray(r), H.sum(0))
