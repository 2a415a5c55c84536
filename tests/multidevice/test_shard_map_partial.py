"""A shard_map manual over some mesh axes (``axis_names``) on arguments sharded over the
others too, against JAX 0.10.2 on the same 8 CPU devices: results keep the other axes'
layout (``P('x', 'y')``, ``P(('x', 'y'),)`` after a reduction, ``P(None, 'y')`` after a
psum over the manual axis), eagerly and under jit, on Explicit and Auto meshes."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

H = np.arange(32, dtype=np.float32).reshape(8, 4)

CASES = {
    "elementwise": (lambda lib: lambda b: b * 2, ("x",), ("x",), "xy"),
    "elementwise, arg over x only": (lambda lib: lambda b: b * 2, ("x",), ("x",), "x"),
    "psum over the manual axis": (lambda lib: lambda b: lib.lax.psum(b, "x"), ("x",), (),
                                  "xy"),
    "sum of the block": (lambda lib: lambda b: b.sum(0), ("x",), ("x",), "xy"),
    "manual over y": (lambda lib: lambda b: b + 1, (None, "y"), (None, "y"), "xy"),
}


def _run(lib, kind, name, jitted):
    S = lib.sharding
    P, NS = S.PartitionSpec, S.NamedSharding
    body, ins, outs, arg = CASES[name]
    m = lib.make_mesh((2, 2), ("x", "y"), axis_types=(getattr(S.AxisType, kind),) * 2)
    x = lib.device_put(H, NS(m, P("x", "y") if arg == "xy" else P("x")))
    manual = {n for n in ins if n}
    with lib.set_mesh(m):
        f = lib.shard_map(body(lib), mesh=m, in_specs=P(*ins), out_specs=P(*outs),
                          axis_names=manual)
        r = (lib.jit(f) if jitted else f)(x)
    return np.asarray(r), repr(r.sharding)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("kind", ["Explicit", "Auto"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_partial_manual_results_keep_the_other_axes(rjax8, name, kind, jitted, request):
    if jitted and name == "sum of the block":
        # under jit a dimension the out_spec names is constrained to exactly its manual
        # axes: JAX's P(('x', 'y'),) comes out P('x',) (README, known differences)
        request.applymarker(pytest.mark.xfail(strict=True, reason="known difference"))
    got, want = _run(jaxlite, kind, name, jitted), _run(rjax8, kind, name, jitted)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
