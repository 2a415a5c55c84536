"""The collectives that move data (all_gather, psum_scatter, ppermute, pshuffle,
all_to_all, pbroadcast, axis_index/axis_size) over 8 CPU devices: jaxlite's shard_map
(which runs the per-device body as nested vmaps, so the collectives' batching rules are
the cross-device semantics) against real JAX 0.10.2's shard_map.

This is the oracle for what JAX's vmap cannot answer (tests/test_collectives_breadth.py
compares everything else under vmap): tuples of mesh axis names for all_gather,
psum_scatter and ppermute, partial permutations (zeros where nothing arrives), every mesh
order of the names, and reverse mode through them.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

MESH = ((2, 4), ("x", "y"))


def _mesh(lib):
    shape, names = MESH
    return lib.sharding.Mesh(np.array(lib.devices()[:8]).reshape(shape), names)


def _run(lib, body, x, in_spec, out_spec):
    return lib.shard_map(body(lib), mesh=_mesh(lib), in_specs=in_spec(lib.P),
                         out_specs=out_spec(lib.P), check_vma=False)(x)


def _same(a, b, rtol=1e-6):
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.aval.weak_type == b.aval.weak_type
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-6)


X = np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 7 - 3
XY = lambda P: P("x", "y")          # noqa: E731  blocks (4, 4) per device
CYCLE8 = [(k, (k + 3) % 8) for k in range(8)]

CASES = {
    # a tuple of names: the devices of both mesh axes in row-major order of the names
    "all_gather_xy": (lambda L: lambda a: L.all_gather(a, ("x", "y")), XY,
                      lambda P: P(None, "x", "y")),
    "all_gather_yx_axis1": (lambda L: lambda a: L.all_gather(a, ("y", "x"), axis=1), XY,
                            lambda P: P("x", None, "y")),
    "all_gather_xy_tiled": (lambda L: lambda a: L.all_gather(a, ("x", "y"), axis=1,
                                                             tiled=True), XY,
                            lambda P: P("x", "y")),
    "all_gather_neg_axis": (lambda L: lambda a: L.all_gather(a, "y", axis=-1), XY,
                            lambda P: P("x", "y")),
    "psum_scatter_xy": (lambda L: lambda a: L.psum_scatter(
        L.all_gather(a, ("x", "y"), tiled=True)[:8], ("x", "y")), XY,
        lambda P: P(("x", "y"))),
    "psum_scatter_yx_tiled": (lambda L: lambda a: L.psum_scatter(
        L.all_gather(a, "x", axis=1, tiled=True), ("y", "x"), scatter_dimension=1,
        tiled=True), XY, lambda P: P("x", "y")),
    "psum_scatter_y_dim1": (lambda L: lambda a: L.psum_scatter(a, "y", scatter_dimension=1),
                            XY, lambda P: P(("x", "y"))),
    # permutations: full, partial (zeros where nothing arrives), over one and two names
    "ppermute_partial_y": (lambda L: lambda a: L.ppermute(a, "y", [(0, 2), (3, 1)]), XY, XY),
    "ppermute_empty": (lambda L: lambda a: L.ppermute(a, "y", []), XY, XY),
    "ppermute_xy_cycle": (lambda L: lambda a: L.ppermute(a, ("x", "y"), CYCLE8), XY, XY),
    "ppermute_yx_partial": (lambda L: lambda a: L.ppermute(a, ("y", "x"),
                                                           [(0, 7), (7, 0), (5, 2)]), XY, XY),
    "ppermute_negative": (lambda L: lambda a: L.ppermute(a, "y", [(-1, 0), (0, -1)]), XY, XY),
    "pshuffle_x": (lambda L: lambda a: L.pshuffle(a, "x", [1, 0]), XY, XY),
    # all_to_all over one and two names
    "all_to_all_y": (lambda L: lambda a: L.all_to_all(a, "y", 0, 1), XY, XY),
    "all_to_all_xy_tiled": (lambda L: lambda a: L.all_to_all(
        L.all_gather(a, "x", tiled=True), ("x", "y"), 0, 1, tiled=True), XY, XY),
    "all_to_all_yx_tiled": (lambda L: lambda a: L.all_to_all(
        L.all_gather(a, "x", tiled=True), ("y", "x"), 0, 1, tiled=True), XY, XY),
    "pswapaxes_y": (lambda L: lambda a: L.pswapaxes(a, "y", 1), XY, XY),
    "axis_index_xy": (lambda L: lambda a: a * 0 + L.axis_index(("y", "x")) * 100 +
                      L.axis_size(("x", "y")), XY, XY),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_collective_vs_shard_map(rjax8, name):
    body, ins, outs = CASES[name]
    got = _run(jaxlite, lambda lib: body(lib.lax), X, ins, outs)
    want = _run(rjax8, lambda lib: body(lib.lax), X, ins, outs)
    _same(got, want, rtol=1e-5)


def test_pbroadcast_vs_shard_map(rjax8):
    # JAX lowers pbroadcast on GPU only: its definition (a gather, then the source's
    # slice) is the oracle
    for src in (0, 3):
        got = _run(jaxlite, lambda lib: lambda a: lib.lax.pbroadcast(a, "y", src), X, XY, XY)
        want = _run(rjax8, lambda lib: lambda a: lib.lax.all_gather(a, "y")[src], X, XY, XY)
        _same(got, want)


@pytest.mark.parametrize("name", ["all_gather_xy", "all_gather_yx_axis1", "psum_scatter_xy",
                                  "ppermute_xy_cycle", "ppermute_yx_partial",
                                  "all_to_all_xy_tiled", "all_to_all_yx_tiled"])
def test_grad_vs_shard_map(rjax8, name):
    body, ins, outs = CASES[name]
    w = np.cos(np.arange(4096, dtype=np.float32))

    def loss(lib):
        def f(x):
            y = _run(lib, lambda lib: lambda a: body(lib.lax)(lib.numpy.sin(a)), x, ins, outs)
            return (y * w[:y.size].reshape(y.shape)).sum()
        return f
    got = jaxlite.grad(loss(jaxlite))(X)
    want = rjax8.grad(loss(rjax8))(X)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)
