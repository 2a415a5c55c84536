"""Size-1 broadcasting of the elementwise primitives over sharded operands, against JAX
0.10.2 on the same 8 CPU devices: values and the result's printed sharding, jitted and
eagerly, with the size-1 operand replicated along its broadcast dimension (a dimension an
operand broadcasts from size 1 is never sharded); gradients (the cotangent summed back to
size 1) and vmap too."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

X = np.arange(48, dtype=np.float32).reshape(8, 6) / 7 - 3
C = np.arange(8, dtype=np.float32).reshape(8, 1) / 3
R = np.arange(6, dtype=np.float32).reshape(1, 6) - 2.5

CASES = {
    "column_and_row": lambda L: lambda a, b, d: (a - b) * d,
    "both_size1": lambda L: lambda a, b, d: L.lax.add(b, d),
    "softmax": lambda L: lambda a, b, d: L.nn.softmax(a),
    "layer_norm": lambda L: lambda a, b, d: (a - a.mean(1, keepdims=True)) / L.numpy.sqrt(
        a.var(1, keepdims=True) + 1e-5),
    "grad": lambda L: lambda a, b, d: L.grad(lambda x, y: ((x - y) ** 2 * d).sum(),
                                             (0, 1))(a, b),
    "vmap": lambda L: lambda a, b, d: L.vmap(lambda x, y: L.lax.sub(x, y),
                                             in_axes=(0, None))(a, d),
}


def _place(L, mesh_of):
    mesh = mesh_of(np.array(L.devices()).reshape(4, 2), ("x", "y"))
    P, S = L.sharding.PartitionSpec, L.sharding.NamedSharding
    return (L.device_put(X, S(mesh, P("x", "y"))), L.device_put(C, S(mesh, P("x", None))),
            L.device_put(R, S(mesh, P(None, "y"))))


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
@pytest.mark.parametrize("name", list(CASES))
def test_sharded_size1_broadcasting_like_jax(rjax8, name, jit):
    want_args = _place(rjax8, rjax8.sharding.Mesh)
    got_args = _place(jaxlite, jaxlite.sharding.Mesh)
    f, rf = CASES[name](jaxlite), CASES[name](rjax8)
    if jit:
        f, rf = jaxlite.jit(f), rjax8.jit(rf)
    got, want = f(*got_args), rf(*want_args)
    gl, wl = jaxlite.tree_util.tree_leaves(got), rjax8.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
        if jit and name in ("column_and_row", "softmax", "layer_norm"):
            assert str(g.sharding.spec) == str(w.sharding.spec)
