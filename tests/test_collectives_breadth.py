"""The gathering, scattering and permuting collectives over named vmap axes (lax.all_gather,
psum_scatter, ppermute, pshuffle, pbroadcast, all_to_all, pswapaxes, axis_size, pcast,
and tuple names for axis_index/psum & co.) against real JAX 0.10.2 under
``jax.vmap(..., axis_name=...)``: values, dtype, shape and weak type; every parameter;
nested vmaps; jit; jvp, grad/vjp and vmap-of-grad; bad input.

Where JAX under vmap gives no answer (a tuple of names for all_gather/psum_scatter/
ppermute, partial permutations: it asserts; see README's known differences) the reference
is the collective's definition computed with NumPy on the stacked examples.  The same
definition is checked against real JAX's shard_map on 8 devices in
tests/multidevice/test_collectives_shard_map.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

from _tiers import half_slow
from oracle import assert_like_jax

R = np.random.default_rng(7)


def rnd(*shape, dtype=np.float32):
    if np.dtype(dtype).kind == "b":
        return R.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return R.integers(-5 if np.dtype(dtype).kind == "i" else 0, 9, shape).astype(dtype)
    return R.standard_normal(shape).astype(dtype)


def _leaves(J, out):
    return J.tree_util.tree_leaves(out)


def same(rjax, build, *args, rtol=1e-6, atol=1e-6, check_weak=True):
    """``build(J)(*args)`` in jaxlite equals it in JAX (both get their own arrays: JAX's
    vmap returns a NumPy array for some collectives of NumPy inputs)."""
    got = build(jaxlite)(*[jaxlite.numpy.asarray(a) for a in args])
    want = build(rjax)(*[rjax.numpy.asarray(a) for a in args])
    g, w = _leaves(jaxlite, got), _leaves(rjax, want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert_like_jax(a, b, rtol=rtol, atol=atol, check_weak=check_weak)


def like_np(got, want, dtype=None):
    g = np.asarray(got)
    assert g.shape == want.shape, (g.shape, want.shape)
    assert g.dtype == (dtype or want.dtype), (g.dtype, want.dtype)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, want)
    else:
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)


# ---- the definitions, on the stacked examples X (N, *per-example shape) ---------------

def ag_ref(X, axis, tiled):
    n = X.shape[0]
    y = np.concatenate(list(X), axis=axis) if tiled else np.moveaxis(X, 0, axis)
    return np.broadcast_to(y, (n,) + y.shape).copy()


def ps_ref(X, sd, tiled):
    n = X.shape[0]
    s = X.sum(0).astype(X.dtype)
    if tiled:
        return np.stack(np.split(s, n, axis=sd))
    return np.stack([np.take(s, e, axis=sd) for e in range(n)])


def pp_ref(X, perm):
    n = X.shape[0]
    out = np.zeros_like(X)
    for src, dst in perm:
        out[dst % n] = X[src % n]
    return out


def a2a_ref(X, split, concat, tiled):
    n = X.shape[0]
    if tiled:
        return np.stack([np.concatenate([np.split(X[e], n, axis=split)[k] for e in range(n)],
                                        axis=concat) for k in range(n)])
    return np.stack([np.stack([np.take(X[e], k, axis=split) for e in range(n)], axis=concat)
                     for k in range(n)])


def nested_ref(ref, X, order):
    """``ref`` over two nested vmaps ('i' outer over X's axis 0, 'j' inner over axis 1)
    with names ``order``: the examples flattened in that row-major order."""
    ni, nj = X.shape[:2]
    flat = X if order == ("i", "j") else np.swapaxes(X, 0, 1)
    out = ref(flat.reshape((ni * nj,) + X.shape[2:]))
    if order == ("i", "j"):
        return out.reshape((ni, nj) + out.shape[1:])
    return np.swapaxes(out.reshape((nj, ni) + out.shape[1:]), 0, 1)


def V(J, f, name="i", **kw):
    return J.vmap(f, axis_name=name, **kw)


# ---- all_gather --------------------------------------------------------------------------

AG_CASES = [(n, shape, axis, tiled)
            for n in (1, 2, 4)
            for shape, axes, tiled_axes in [((), (0, -1), ()), ((3,), (0, 1, -1, -2), (0, -1)),
                                            ((2, 3), (0, 1, 2), (0, 1)), ((1, 3), (1,), (0,))]
            for axis, tiled in [(a, False) for a in axes] + [(a, True) for a in tiled_axes]]


@pytest.mark.parametrize("n,shape,axis,tiled", half_slow(AG_CASES))
def test_all_gather(rjax, n, shape, axis, tiled):
    x = rnd(n, *shape)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, "i", axis=axis, tiled=tiled)), x)
    like_np(V(jaxlite, lambda v: jaxlite.lax.all_gather(v, "i", axis=axis, tiled=tiled))(x),
            ag_ref(x, axis % (len(shape) + (0 if tiled else 1)), tiled))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.bool_, np.float16, np.uint32])
def test_all_gather_dtypes(rjax, dtype):
    x = rnd(4, 3, dtype=dtype)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, "i")), x)


def test_all_gather_in_out_axes_constants_pytrees(rjax):
    x = rnd(3, 4)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, "i"), in_axes=1), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, "i"), out_axes=1), x)
    # a weakly typed constant stays weak, as in JAX
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(2.0, "i")), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(3, "i")), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather({"a": v, "b": (v[0] * 2,)}, "i",
                                                          axis=-1)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, ())), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, ("i",), axis=1)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_gather(v, "i", to="varying")), x)


# ---- psum_scatter ------------------------------------------------------------------------

PS_CASES = [(n, shape, sd, tiled)
            for n in (1, 2, 4)
            for shape, sd, tiled in [((n,), 0, False), ((n, 3), 0, False),
                                     ((3, n), 1, False), ((2, n, 1), 1, False),
                                     ((2 * n,), 0, True), ((3, 2 * n), 1, True),
                                     ((n, 2), 0, True), ((1, n), 1, True)]]


@pytest.mark.parametrize("n,shape,sd,tiled", half_slow(PS_CASES))
def test_psum_scatter(rjax, n, shape, sd, tiled):
    x = rnd(n, *shape)
    same(rjax, lambda J: V(J, lambda v: J.lax.psum_scatter(v, "i", scatter_dimension=sd,
                                                           tiled=tiled)), x, rtol=1e-5)
    like_np(V(jaxlite, lambda v: jaxlite.lax.psum_scatter(v, "i", scatter_dimension=sd,
                                                          tiled=tiled))(x),
            ps_ref(x, sd, tiled))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.float16, np.uint8])
def test_psum_scatter_dtypes(rjax, dtype):
    x = R.integers(0, 9, (4, 4, 2)).astype(dtype)     # exact sums in every dtype
    same(rjax, lambda J: V(J, lambda v: J.lax.psum_scatter(v, "i")), x)


def test_psum_scatter_unmapped_and_in_axes(rjax):
    x = rnd(4, 4)
    c = np.arange(4.0, dtype=np.float32)
    same(rjax, lambda J: V(J, lambda v: J.lax.psum_scatter(J.numpy.asarray(c), "i")), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.psum_scatter(v, "i"), in_axes=1), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.psum_scatter(v, "i", tiled=True),
                           in_axes=1, out_axes=1), rnd(8, 4))
    same(rjax, lambda J: V(J, lambda v: J.lax.psum_scatter(v, ())), x)


# ---- ppermute / pshuffle / pbroadcast ----------------------------------------------------

FULL_PERMS = [(1, [(0, 0)]), (2, [(0, 1), (1, 0)]), (2, [(0, 0), (1, 1)]),
              (4, [(0, 1), (1, 2), (2, 3), (3, 0)]), (4, [(0, 3), (3, 0), (1, 2), (2, 1)]),
              (4, [(3, 2), (2, 1), (1, 0), (0, 3)]), (4, [(0, 1), (1, 2), (2, 3), (-1, 0)])]
PARTIAL_PERMS = [(2, []), (2, [(0, 1)]), (4, [(0, 1), (1, 2)]), (4, [(3, 0)]),
                 (4, [(0, 0), (2, 2)]), (4, [(1, 3), (3, 1), (2, 0)])]


@pytest.mark.parametrize("n,perm,shape", half_slow([(n, p, s) for n, p in FULL_PERMS
                                                    for s in [(), (3,), (2, 1)]]))
def test_ppermute_full(rjax, n, perm, shape):
    x = rnd(n, *shape)
    same(rjax, lambda J: V(J, lambda v: J.lax.ppermute(v, "i", perm)), x)
    same(rjax, lambda J: J.jit(V(J, lambda v: J.lax.ppermute(v, "i", perm))), x)
    like_np(V(jaxlite, lambda v: jaxlite.lax.ppermute(v, "i", perm))(x), pp_ref(x, perm))


@pytest.mark.parametrize("n,perm", PARTIAL_PERMS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_ppermute_partial_gets_zeros(n, perm, dtype):
    # JAX under vmap asserts on a partial permutation; the examples no pair sends to get
    # zeros there under shard_map/pmap, as here (checked on 8 devices in multidevice/)
    x = rnd(n, 3, dtype=dtype)
    f = V(jaxlite, lambda v: jaxlite.lax.ppermute(v, "i", perm))
    like_np(f(x), pp_ref(x, perm))
    like_np(jaxlite.jit(f)(x), pp_ref(x, perm))
    like_np(V(jaxlite, lambda v: jaxlite.lax.ppermute(v, "i", perm), in_axes=1)(x.T),
            pp_ref(x, perm).reshape(n, 3))
    # an unmapped operand: the destinations get it, the others zeros
    c = np.full((3,), 2, dtype)
    like_np(V(jaxlite, lambda v: jaxlite.lax.ppermute(jaxlite.numpy.asarray(c), "i", perm))(x),
            pp_ref(np.broadcast_to(c, (n, 3)).copy(), perm))


def test_ppermute_constants_dtypes_pytrees(rjax):
    x = rnd(4, 3)
    cyc = [(0, 1), (1, 2), (2, 3), (3, 0)]
    same(rjax, lambda J: V(J, lambda v: J.lax.ppermute(2.0, "i", cyc)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.ppermute((v, v.astype(np.int16) * 2), "i",
                                                       cyc)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.ppermute(v, "i", cyc), in_axes=1), x.T.copy())
    same(rjax, lambda J: V(J, lambda v: J.lax.ppermute(v > 0, "i", cyc)), x)


def test_pshuffle_pbroadcast_pswapaxes(rjax):
    x = rnd(4, 4, 3)
    same(rjax, lambda J: V(J, lambda v: J.lax.pshuffle(v, "i", [1, 2, 3, 0])), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.pshuffle(v, "i", [0, 1, 2, 3])), x)
    # (JAX's pbroadcast fails under vmap on a mapped operand: 'take requires ndarray')
    for src in range(4):
        like_np(V(jaxlite, lambda v: jaxlite.lax.pbroadcast(v, "i", src))(x),
                np.broadcast_to(x[src], x.shape))
    xi = x.astype(np.int32)
    like_np(V(jaxlite, lambda v: jaxlite.lax.pbroadcast(v, "i", 1))(xi),
            np.broadcast_to(xi[1], x.shape))
    same(rjax, lambda J: V(J, lambda v: J.lax.pbroadcast(2.0, "i", 1)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.pswapaxes(v, "i", 0)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.pswapaxes(v, "i", 1)), np.swapaxes(x, 1, 2).copy())


# ---- all_to_all --------------------------------------------------------------------------

A2A_CASES = [(n, shape, split, concat, tiled)
             for n in (1, 2, 4)
             for shape, split, concat, tiled in [
                 ((n,), 0, 0, False), ((n, 3), 0, 0, False), ((n, 3), 0, 1, False),
                 ((3, n), 1, 0, False), ((3, n), 1, 1, False), ((2, n, 3), 1, 2, False),
                 ((2, 3, n), 2, 0, False), ((1, n), 1, 0, False),
                 ((2 * n,), 0, 0, True), ((2 * n, 3), 0, 1, True), ((3, 2 * n), 1, 0, True),
                 ((2, 3, n), 2, 1, True), ((n, 1), 0, 1, True), ((2, n), 1, 1, True)]]


@pytest.mark.parametrize("n,shape,split,concat,tiled", half_slow(A2A_CASES))
def test_all_to_all(rjax, n, shape, split, concat, tiled):
    x = rnd(n, *shape)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", split, concat,
                                                         tiled=tiled)), x)
    like_np(V(jaxlite, lambda v: jaxlite.lax.all_to_all(v, "i", split, concat,
                                                        tiled=tiled))(x),
            a2a_ref(x, split, concat, tiled))


def test_all_to_all_unmapped_dtypes_in_axes(rjax):
    x = rnd(4, 4, 3)
    c = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    # (JAX's rule returns a wrong shape for an unmapped operand: (4, 3, 4, 4, 3, 1) here)
    like_np(V(jaxlite, lambda v: jaxlite.lax.all_to_all(jaxlite.numpy.asarray(c), "i", 0, 1))(x),
            a2a_ref(np.broadcast_to(c, (4, 4, 3)), 0, 1, False))
    same(rjax, lambda J: V(J, lambda v: J.lax.all_to_all(v.astype(np.int32), "i", 0, 0)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_to_all(v > 0, "i", 0, 1)), x)
    same(rjax, lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", 0, 1), in_axes=2),
         np.moveaxis(rnd(4, 4, 4), 0, 2).copy())
    same(rjax, lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", 0, 1, tiled=True),
                           in_axes=1, out_axes=2), rnd(8, 4, 2))


# ---- axis_size, axis_index over tuples, pcast --------------------------------------------

def test_axis_size_and_tuple_index(rjax):
    x = rnd(2, 3)
    for J in (jaxlite, rjax):
        seen = []
        J.vmap(J.vmap(lambda v: seen.append((J.lax.axis_size("i"), J.lax.axis_size("j"),
                                             J.lax.axis_size(("i", "j")))) or v,
                      axis_name="j"), axis_name="i")(x)
        assert seen == [(2, 3, 6)]
        assert all(type(s) is int for s in seen[0])
    two = lambda J, f: J.vmap(J.vmap(f, axis_name="j"), axis_name="i")  # noqa: E731
    for names in [("i", "j"), ("j", "i"), ("i",), ()]:
        same(rjax, lambda J: two(J, lambda v: J.lax.axis_index(names)), x)
        same(rjax, lambda J: two(J, lambda v: v * J.lax.axis_size(names)), x)
    same(rjax, lambda J: V(J, lambda v: v + J.lax.axis_size("i")), rnd(4))


def test_pcast_is_the_identity_under_vmap():
    # (JAX raises 'pvary should be called under jax.shard_map' under a plain vmap: jaxlite
    # has no varying/invariant types, so the cast to 'varying' changes nothing)
    x = rnd(4, 3)
    out = V(jaxlite, lambda v: jaxlite.lax.pcast(v, "i", to="varying"))(x)
    like_np(out, x)
    assert jaxlite.lax.pcast(x, (), to="bogus") is x


# ---- nested vmaps ------------------------------------------------------------------------

def two(J, f, in_i=0, in_j=0, out_i=0, out_j=0):
    return J.vmap(J.vmap(f, axis_name="j", in_axes=in_j, out_axes=out_j), axis_name="i",
                  in_axes=in_i, out_axes=out_i)


OUTER_CASES = [
    lambda J: lambda v: J.lax.all_gather(v, "i"),
    lambda J: lambda v: J.lax.all_gather(v, "i", axis=1),
    lambda J: lambda v: J.lax.all_gather(v, "i", axis=1, tiled=True),
    lambda J: lambda v: J.lax.all_gather(v, "i", axis=2),
    lambda J: lambda v: J.lax.psum_scatter(v, "i", scatter_dimension=1),
    lambda J: lambda v: J.lax.psum_scatter(v, "i", scatter_dimension=0),
    lambda J: lambda v: J.lax.psum_scatter(v, "i", scatter_dimension=0, tiled=True),
    lambda J: lambda v: J.lax.ppermute(v, "i", [(0, 1), (1, 0)]),
    lambda J: lambda v: J.lax.all_to_all(v, "i", 1, 0),
    lambda J: lambda v: J.lax.all_to_all(v, "i", 1, 1),
    lambda J: lambda v: J.lax.all_to_all(v, "i", 0, 1, tiled=True),
    lambda J: lambda v: J.lax.all_gather(v, "j", axis=1),
    lambda J: lambda v: J.lax.ppermute(v, "j", [(0, 1), (1, 2), (2, 0)]),
]


@pytest.mark.parametrize("in_i,in_j,case", half_slow([
    (i, j, c) for i, j in [(0, 0), (1, 0), (0, 1), (2, 2), (None, 0), (1, None)]
    for c in range(len(OUTER_CASES))]))
def test_outer_name_inside_inner_vmap(rjax, in_i, in_j, case):
    """Collectives over the OUTER axis 'i' applied per example of the inner vmap 'j'
    (the rule of the vmap not named adjusts the dimension parameters), with the mapped
    dimensions in several places, or absent."""
    X = rnd(2, 3, 2, 2)             # i (size 2), j (size 3), per-example (2, 2)
    Z = X[:, 0] if in_j is None else np.moveaxis(X, 1, 1 + in_j)
    A = Z[0] if in_i is None else np.moveaxis(Z, 0, in_i)
    f = OUTER_CASES[case]

    def build(J):
        inner = J.vmap(f(J), axis_name="j", in_axes=in_j, axis_size=3)
        return J.vmap(inner, axis_name="i", in_axes=in_i, axis_size=2)
    got = build(jaxlite)(jaxlite.numpy.asarray(A))
    try:
        want = build(rjax)(rjax.numpy.asarray(A))
    except (IndexError, AssertionError):
        want = None          # JAX's rule fails on this unmapped operand
    if in_i is None and case in (8, 9, 10):
        want = None          # JAX's all_to_all rule returns a wrong shape here
    if want is not None:
        assert_like_jax(got, want, rtol=1e-5)
    # the same through the definition: every (i, j) example computed with the stacked
    # examples of the named axis
    Xi = np.broadcast_to(X[:, :1], X.shape) if in_j is None else X
    Xi = np.broadcast_to(Xi[:1], Xi.shape) if in_i is None else Xi
    want_np = np.stack([np.asarray(jaxlite.vmap(f(jaxlite), axis_name="i")(
        jaxlite.numpy.asarray(Xi[:, j].copy()))) for j in range(3)], 1) \
        if case < 11 else np.stack([np.asarray(jaxlite.vmap(f(jaxlite), axis_name="j")(
            jaxlite.numpy.asarray(Xi[i].copy()))) for i in range(2)], 0)
    like_np(got, want_np)


TUPLE_CASES = {
    "all_gather": (lambda J, names: lambda v: J.lax.all_gather(v, names),
                   lambda X: ag_ref(X, 0, False)),
    "all_gather_axis1": (lambda J, names: lambda v: J.lax.all_gather(v, names, axis=1),
                         lambda X: ag_ref(X, 1, False)),
    "all_gather_tiled": (lambda J, names: lambda v: J.lax.all_gather(v, names, axis=1,
                                                                     tiled=True),
                         lambda X: ag_ref(X, 1, True)),
    "psum_scatter": (lambda J, names: lambda v: J.lax.psum_scatter(v[:, :2].reshape(6),
                                                                   names),
                     lambda X: ps_ref(X[:, :, :2].reshape(-1, 6), 0, False)),
    "psum_scatter_tiled": (lambda J, names: lambda v: J.lax.psum_scatter(
        J.numpy.concatenate([v, v * 2], 0), names, tiled=True),
        lambda X: ps_ref(np.concatenate([X, X * 2], 1), 0, True)),
    "ppermute_cycle": (lambda J, names: lambda v: J.lax.ppermute(
        v, names, [(k, (k + 1) % 6) for k in range(6)]),
        lambda X: pp_ref(X, [(k, (k + 1) % 6) for k in range(6)])),
    "ppermute_partial": (lambda J, names: lambda v: J.lax.ppermute(
        v, names, [(0, 5), (5, 1), (2, 2)]), lambda X: pp_ref(X, [(0, 5), (5, 1), (2, 2)])),
    "pbroadcast": (lambda J, names: lambda v: J.lax.pbroadcast(v, names, 4),
                   lambda X: np.broadcast_to(X[4], X.shape).copy()),
    "all_to_all_tiled": (lambda J, names: lambda v: J.lax.all_to_all(
        J.numpy.tile(v, (2, 1)), names, 0, 1, tiled=True),
        lambda X: a2a_ref(np.tile(X, (1, 2, 1)), 0, 1, True)),
}


@pytest.mark.parametrize("order", [("i", "j"), ("j", "i")])
@pytest.mark.parametrize("name", sorted(TUPLE_CASES))
def test_tuple_names(name, order):
    """A tuple of names: the examples of both vmaps as one axis, row-major in the order
    of the names (JAX under vmap asserts for these; the definition is the reference)."""
    x = rnd(2, 3, 3, 4)           # i=2, j=3 (6 examples), per-example (3, 4)
    build, ref = TUPLE_CASES[name]
    got = two(jaxlite, build(jaxlite, order))(x)
    # ppermute numbers the examples in the nesting order of the vmaps whatever the order
    # of the names (JAX's shard_map: mesh order)
    like_np(got, nested_ref(ref, x, ("i", "j") if name.startswith("ppermute") else order))


@pytest.mark.parametrize("order", [("i", "j"), pytest.param(("j", "i"), marks=pytest.mark.slow)])
def test_tuple_names_vs_jax(rjax, order):
    """The tuple forms JAX supports under vmap: all_to_all, axis_index, psum & co."""
    x = rnd(2, 3, 6, 2)
    for f in [lambda J: lambda v: J.lax.all_to_all(v, order, 0, 0),
              lambda J: lambda v: J.lax.all_to_all(v, order, 0, 1),
              lambda J: lambda v: J.lax.all_to_all(v.T, order, 1, 0),
              lambda J: lambda v: J.lax.all_to_all(v, order, 0, 1, tiled=True),
              lambda J: lambda v: J.lax.psum(v, order) * J.lax.axis_index(order),
              lambda J: lambda v: J.lax.pmean(v, order),
              lambda J: lambda v: J.lax.pmax(v, order) - J.lax.pmin(v, order)]:
        same(rjax, lambda J: two(J, f(J)), x, rtol=1e-5)
    like_np(two(jaxlite, lambda v: jaxlite.lax.all_to_all(v, order, 0, 1))(x),
            nested_ref(lambda X: a2a_ref(X, 0, 1, False), x, order))


# ---- jit ---------------------------------------------------------------------------------

JIT_CASES = {
    "all_gather": lambda J: lambda v: J.lax.all_gather(v, "i", axis=1),
    "all_gather_tiled": lambda J: lambda v: J.lax.all_gather(v, "i", tiled=True),
    "all_gather_const": lambda J: lambda v: J.lax.all_gather(1.5, "i"),
    "psum_scatter": lambda J: lambda v: J.lax.psum_scatter(v, "i"),
    "psum_scatter_tiled": lambda J: lambda v: J.lax.psum_scatter(v, "i", tiled=True),
    "ppermute": lambda J: lambda v: J.lax.ppermute(v, "i", [(0, 2), (2, 1), (1, 3), (3, 0)]),
    "all_to_all": lambda J: lambda v: J.lax.all_to_all(v, "i", 0, 1),
    "all_to_all_tiled": lambda J: lambda v: J.lax.all_to_all(v, "i", 0, 1, tiled=True),
    # JAX's pbroadcast fails under vmap on mapped operands: its definition is the oracle
    "pbroadcast": lambda J: (lambda v: J.lax.pbroadcast(v, "i", 3)) if J is jaxlite else
    (lambda v: J.lax.all_gather(v, "i")[3]),
}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_under_jit(rjax, name):
    x = rnd(4, 4, 3)
    f = JIT_CASES[name]
    same(rjax, lambda J: J.jit(V(J, f(J))), x, rtol=1e-5)
    same(rjax, lambda J: V(J, J.jit(f(J))), x, rtol=1e-5)


# ---- derivatives -------------------------------------------------------------------------

GRAD_CASES = {
    "all_gather": (lambda J: lambda v: J.lax.all_gather(v, "i"), (4, 3)),
    "all_gather_axis1_tiled": (lambda J: lambda v: J.lax.all_gather(v, "i", axis=1,
                                                                    tiled=True), (2, 3)),
    "psum_scatter": (lambda J: lambda v: J.lax.psum_scatter(v, "i", scatter_dimension=1),
                     (2, 4)),
    "psum_scatter_tiled": (lambda J: lambda v: J.lax.psum_scatter(v, "i", tiled=True),
                           (8,)),
    "ppermute": (lambda J: lambda v: J.lax.ppermute(v, "i", [(0, 1), (1, 3), (3, 2),
                                                             (2, 0)]), (3,)),
    "all_to_all": (lambda J: lambda v: J.lax.all_to_all(v, "i", 0, 1), (4, 3)),
    "all_to_all_same": (lambda J: lambda v: J.lax.all_to_all(v, "i", 1, 1), (2, 4)),
    "all_to_all_tiled": (lambda J: lambda v: J.lax.all_to_all(v, "i", 1, 0, tiled=True),
                         (3, 8)),
    "pswapaxes": (lambda J: lambda v: J.lax.pswapaxes(v, "i", 0), (4, 2)),
    "pshuffle": (lambda J: lambda v: J.lax.pshuffle(v, "i", [2, 0, 3, 1]), (2,)),
    "pbroadcast": (lambda J: (lambda v: J.lax.pbroadcast(v, "i", 1)) if J is jaxlite else
                   (lambda v: J.lax.all_gather(v, "i")[1]), (2,)),
}


def _loss(J, f, w):
    return lambda X: J.numpy.sum(V(J, lambda v: f(v) * J.numpy.sin(v.sum()))(X) * w)


@pytest.mark.parametrize("name", half_slow(sorted(GRAD_CASES)))
def test_grad_vjp_jvp(rjax, name):
    fb, shape = GRAD_CASES[name]
    x = rnd(4, *shape)
    out_shape = np.shape(V(jaxlite, fb(jaxlite))(x))
    w = rnd(*out_shape)
    same(rjax, lambda J: J.grad(_loss(J, fb(J), w)), x, rtol=1e-5, atol=1e-5)
    same(rjax, lambda J: J.jit(J.grad(_loss(J, fb(J), w))), x, rtol=1e-5, atol=1e-5)
    same(rjax, lambda J: lambda X, W: J.vjp(V(J, fb(J)), X)[1](W), x, w,
         rtol=1e-5, atol=1e-5)
    t = rnd(*x.shape)
    same(rjax, lambda J: lambda X, T: J.jvp(V(J, lambda v: fb(J)(v) * v.sum()), (X,), (T,)),
         x, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", half_slow(sorted(GRAD_CASES)[1:] + sorted(GRAD_CASES)[:1]))
def test_vmap_of_grad(rjax, name):
    """grad inside the named vmap: the collective's transpose carries cotangents between
    examples, so each example's gradient is that of the sum of every example's loss (JAX
    itself fails on some of these under vmap-of-grad; grad-of-vmap is the reference)."""
    fb, shape = GRAD_CASES[name]
    x = rnd(4, *shape)
    w = rnd(*np.shape(V(jaxlite, fb(jaxlite))(x))[1:])

    def per_example(J):
        return lambda v: J.numpy.sum(fb(J)(v) * w * J.numpy.cos(v.sum()))
    got = V(jaxlite, jaxlite.grad(per_example(jaxlite)))(x)
    want = rjax.grad(lambda X: rjax.numpy.sum(V(rjax, per_example(rjax))(X)))(
        rjax.numpy.asarray(x))
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)
    got = jaxlite.jit(V(jaxlite, jaxlite.grad(per_example(jaxlite))))(x)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["all_gather", "psum_scatter", "ppermute_partial",
                                  "all_to_all_tiled", "pbroadcast"])
def test_grad_tuple_names(rjax, name):
    """Reverse mode through the tuple forms equals reverse mode through the definition
    written with JAX's jnp on the stacked examples."""
    build, ref = TUPLE_CASES[name]
    x = rnd(2, 3, 3, 4)
    order = ("i", "j")
    w = rnd(*np.shape(two(jaxlite, build(jaxlite, order))(x)))
    got = jaxlite.grad(lambda X: jaxlite.numpy.sum(
        two(jaxlite, build(jaxlite, order))(X) * w * jaxlite.numpy.sin(X).sum()))(x)

    # the definition is linear: its transpose is a vjp of the NumPy reference, which we
    # get from JAX by differentiating the same linear map written with jnp on a basis
    flat = np.eye(x.size, dtype=np.float64).reshape((x.size,) + x.shape)
    cols = np.stack([nested_ref(ref, b, order).ravel() for b in flat], 1)   # out x in
    jnp = rjax.numpy

    def loss(X):
        y = (jnp.asarray(cols, jnp.float32) @ X.ravel()).reshape(w.shape)
        return jnp.sum(y * w * jnp.sin(X).sum())
    want = rjax.grad(loss)(jnp.asarray(x))
    assert_like_jax(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.slow
def test_nested_grad_outer_name(rjax):
    x = rnd(2, 3, 4)
    for f in [lambda J: lambda v: J.lax.all_gather(v, "i"),
              lambda J: lambda v: J.lax.all_to_all(v[:2], "i", 0, 0),
              lambda J: lambda v: J.lax.ppermute(v, "i", [(0, 1), (1, 0)]),
              lambda J: lambda v: J.lax.psum_scatter(v[:2], "i")]:
        same(rjax, lambda J: J.grad(lambda X: J.numpy.sum(
            two(J, lambda v: f(J)(v) * v.sum())(X))), x, rtol=1e-5, atol=1e-5)


# ---- errors ------------------------------------------------------------------------------

def _raises(rjax, exc, match, build, x, jax_too=True):
    with pytest.raises(exc, match=match):
        build(jaxlite)(x)
    if jax_too:
        with pytest.raises(exc, match=match):
            build(rjax)(rjax.numpy.asarray(x))


def test_errors_like_jax(rjax):
    x = rnd(4, 3)
    # axis out of bounds: ValueError naming the axis
    _raises(rjax, ValueError, "axis 2 is out of bounds for array of dimension 2",
            lambda J: V(J, lambda v: J.lax.all_gather(v, "i", axis=2)), x)
    _raises(rjax, ValueError, "axis 1 is out of bounds for array of dimension 1",
            lambda J: V(J, lambda v: J.lax.all_gather(v, "i", axis=1, tiled=True)), x)
    _raises(rjax, ValueError, "out of bounds",
            lambda J: V(J, lambda v: J.lax.all_gather(v[0], "i", tiled=True)), x)
    _raises(rjax, ValueError, "Allowed `to`",
            lambda J: V(J, lambda v: J.lax.all_gather(v, "i", to="bogus")), x)
    # psum_scatter sizes
    _raises(rjax, ValueError, "must be divisible by shard_count 4",
            lambda J: V(J, lambda v: J.lax.psum_scatter(v, "i", tiled=True)) if J is jaxlite
            else J.jit(V(J, lambda v: J.lax.psum_scatter(v, "i", tiled=True))), x,
            jax_too=False)
    _raises(rjax, IndexError, None, lambda J: V(J, lambda v: J.lax.psum_scatter(v[0], "i")), x)
    _raises(rjax, IndexError, None, lambda J: V(J, lambda v: J.lax.psum_scatter(
        v, "i", scatter_dimension=5)), x)
    _raises(rjax, TypeError, "does not accept dtype bool",
            lambda J: V(J, lambda v: J.lax.psum_scatter(v, "i")), rnd(4, 4, dtype=np.bool_))
    # all_to_all sizes and axes
    _raises(rjax, ValueError, r"all_to_all requires the size of the mapped axis axis_name "
                              r"to equal x.shape\[split_axis\], but they are 4 and 3",
            lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", 0, 0)), x)
    _raises(rjax, ValueError, r"The size of all_to_all split_axis \(3\) has to be divisible "
                              r"by the size of the named axis i \(4\)",
            lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", 0, 0, tiled=True)), x)
    _raises(rjax, IndexError, None, lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", 1, 0)),
            rnd(4, 4))
    _raises(rjax, ValueError, "out of bounds",
            lambda J: V(J, lambda v: J.lax.all_to_all(v, "i", 0, 3)), rnd(4, 4, 2))
    # ppermute
    _raises(rjax, TypeError, None, lambda J: V(J, lambda v: J.lax.ppermute(v, "i", [0, 1, 2, 3])),
            x)
    _raises(rjax, IndexError, "out of bounds", lambda J: V(J, lambda v: J.lax.ppermute(
        v, "i", [(0, 1), (1, 2), (2, 3), (3, 4)])), x)
    _raises(rjax, ValueError, "does not represent a permutation",
            lambda J: V(J, lambda v: J.lax.pshuffle(v, "i", [1, 1, 3, 0])), x)
    # axis_index_groups: NotImplementedError under vmap, as JAX
    for f in [lambda J: lambda v: J.lax.all_gather(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
              lambda J: lambda v: J.lax.psum_scatter(v[:2].repeat(2), "i",
                                                     axis_index_groups=[[0, 1], [2, 3]]),
              lambda J: lambda v: J.lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
              lambda J: lambda v: J.lax.pmax(v, "i", axis_index_groups=[[0, 1], [2, 3]])]:
        _raises(rjax, NotImplementedError, None, lambda J: V(J, f(J)), x)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        V(jaxlite, lambda v: jaxlite.lax.all_to_all(
            v, "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]]))(rnd(4, 4))


def test_errors_jaxlite_raises_where_jax_is_silent_or_asserts():
    x = rnd(4, 3)
    # JAX under vmap returns a wrong-shaped result here (its rule skips the size check);
    # the check of shard_map/pmap applies
    with pytest.raises(ValueError, match="scatter dimension size 3 must match shard count 4"):
        V(jaxlite, lambda v: jaxlite.lax.psum_scatter(v, "i"))(x)
    # JAX under vmap lets the last pair win; shard_map/pmap reject repeated destinations
    with pytest.raises(ValueError, match="sources and destinations must be unique"):
        V(jaxlite, lambda v: jaxlite.lax.ppermute(v, "i", [(0, 1), (1, 1)]))(x)
    with pytest.raises(ValueError, match="sources and destinations must be unique"):
        V(jaxlite, lambda v: jaxlite.lax.ppermute(v, "i", [(0, 1), (0, 2)]))(x)
    with pytest.raises(ValueError, match="pbroadcast source 4"):
        V(jaxlite, lambda v: jaxlite.lax.pbroadcast(v, "i", 4))(x)
    with pytest.raises(NotImplementedError, match="reduced"):
        V(jaxlite, lambda v: jaxlite.lax.all_gather(v, "i", to="reduced"))(x)
    with pytest.raises(NotImplementedError, match="reduced"):
        V(jaxlite, lambda v: jaxlite.lax.pcast(v, "i", to="reduced"))(x)
    with pytest.raises(ValueError, match="Allowed `to`"):
        V(jaxlite, lambda v: jaxlite.lax.pcast(v, "i", to="invarying"))(x)
    with pytest.raises(TypeError, match="must be a tuple or a str"):
        jaxlite.lax.pcast(x, {"i"}, to="varying")


@pytest.mark.parametrize("call", [
    lambda L, x: L.all_gather(x, "k"), lambda L, x: L.psum_scatter(x, "k"),
    lambda L, x: L.ppermute(x, "k", [(0, 0)]), lambda L, x: L.all_to_all(x, "k", 0, 0),
    lambda L, x: L.axis_size("k"), lambda L, x: L.pbroadcast(x, "k", 0),
    lambda L, x: L.pswapaxes(x, "k", 0), lambda L, x: L.axis_index(("i", "k")),
    lambda L, x: L.all_gather(x, ("i", "k")), lambda L, x: L.pcast(x, "k", to="varying")])
def test_unbound_axis_name(rjax, call):
    x = rnd(4, 4)
    with pytest.raises(NameError, match="unbound axis name: k"):
        V(jaxlite, lambda v: call(jaxlite.lax, v))(x)
    with pytest.raises(NameError, match="unbound axis name"):
        call(jaxlite.lax, x)
    with pytest.raises(NameError, match="unbound axis name"):
        jaxlite.jit(lambda v: call(jaxlite.lax, v))(x)


def test_primitives_bound_outside_a_vmap_raise_name_error():
    from jaxlite.primitives import collectives as col
    x = np.ones((4,), np.float32)
    for prim, params in [
            (col.all_gather_p, dict(all_gather_dimension=0, axis_size=4, tiled=False)),
            (col.psum_scatter_p, dict(scatter_dimension=0, axis_size=4, tiled=False)),
            (col.ppermute_p, dict(perm=((0, 1),), axis_size=4)),
            (col.all_to_all_p, dict(split_axis=0, concat_axis=0, axis_size=4))]:
        with pytest.raises(NameError, match="unbound axis name: q"):
            prim.bind(x, axis_name="q", **params)
        assert prim.kind == "collective" and prim.flops is not None


RING = [(k, (k + 1) % 4) for k in range(4)]
SECOND_ORDER = {
    "all_gather": lambda J: lambda v: J.numpy.sum(J.numpy.sin(J.lax.all_gather(v, "i")) *
                                                  v.sum()),
    "ppermute": lambda J: lambda v: J.numpy.sum(J.numpy.sin(J.lax.ppermute(v, "i", RING)) * v),
    "psum_scatter": lambda J: lambda v: J.numpy.sum(J.numpy.sin(J.lax.psum_scatter(
        J.numpy.concatenate([v, v[:1]]) * v.sum(), "i"))),
    # JAX's all_to_all fails here under vmap (a wrong-shaped cotangent): the oracle is the
    # same exchange written as a gather and an index
    "all_to_all": lambda J: lambda v: J.numpy.sum(J.numpy.sin(
        J.lax.all_to_all(J.numpy.concatenate([v, v[:1]]), "i", 0, 0) if J is jaxlite else
        J.lax.all_gather(J.numpy.concatenate([v, v[:1]]), "i")[:, J.lax.axis_index("i")]) *
        v.sum()),
    "psum": lambda J: lambda v: J.numpy.sum(J.numpy.sin(J.lax.psum(v, "i")) * v),
    "pmean": lambda J: lambda v: J.numpy.sum(J.numpy.cos(J.lax.pmean(v * v, "i")) * v),
}


@pytest.mark.parametrize("name,how", half_slow([(n, h) for n in sorted(SECOND_ORDER)
                                                for h in ("hessian", "jacfwd", "jacrev")]))
def test_second_order_under_the_named_vmap(rjax, name, how):
    """Derivatives of derivatives inside the named vmap (a primal or tangent can then be a
    constant no vmap has seen: the collective's JVP lifts it into the named vmap)."""
    x = rnd(4, 3) / 2

    def build(J):
        f = SECOND_ORDER[name](J)
        d = J.hessian(f) if how == "hessian" else getattr(J, how)(J.grad(f))
        return V(J, d)
    same(rjax, build, x, rtol=1e-4, atol=1e-5)


EDGE_CASES = {
    "ag_empty": (lambda J: lambda v: J.lax.all_gather(v, "i"), np.zeros((4, 0, 3), np.float32)),
    "ag_empty_tiled": (lambda J: lambda v: J.lax.all_gather(v, "i", axis=1, tiled=True),
                       np.zeros((4, 0, 3), np.float32)),
    "ag_no_examples": (lambda J: lambda v: J.lax.all_gather(v, "i"),
                       np.zeros((0, 3), np.float32)),
    "pp_empty": (lambda J: lambda v: J.lax.ppermute(v, "i", RING),
                 np.zeros((4, 0, 3), np.float32)),
    "ps_empty": (lambda J: lambda v: J.lax.psum_scatter(v, "i", scatter_dimension=1,
                                                        tiled=True),
                 np.zeros((4, 0, 4), np.float32)),
    "a2a_empty": (lambda J: lambda v: J.lax.all_to_all(v, "i", 1, 0),
                  np.zeros((4, 0, 4), np.float32)),
    # weakly typed operands stay weak (as in JAX)
    "ps_weak": (lambda J: lambda v: J.lax.psum_scatter(J.lax.broadcast(2.0, (4,)), "i"),
                np.zeros((4, 1), np.float32)),
    "pp_weak": (lambda J: lambda v: J.lax.ppermute(J.lax.broadcast(2.0, (4,)), "i", RING),
                np.zeros((4, 1), np.float32)),
    "pp_weak_mapped": (lambda J: lambda v: J.lax.ppermute(J.lax.axis_index("i") * 1.0, "i",
                                                          RING), np.zeros((4, 1), np.float32)),
    "ag_index": (lambda J: lambda v: J.lax.all_gather(J.lax.axis_index("i"), "i"),
                 np.zeros((4, 1), np.float32)),
    "ps_index": (lambda J: lambda v: J.lax.psum_scatter(J.numpy.arange(4) + J.lax.axis_index(
        "i"), "i"), np.zeros((4, 1), np.float32)),
    "ag_complex": (lambda J: lambda v: J.lax.all_gather(v.astype(np.complex64) * 1j, "i"),
                   rnd(4, 2)),
    "ps_complex": (lambda J: lambda v: J.lax.psum_scatter(v.astype(np.complex64) * 1j, "i"),
                   rnd(4, 4)),
    "ps_bfloat16": (lambda J: lambda v: J.lax.psum_scatter(v.astype(J.numpy.bfloat16), "i"),
                    np.ones((4, 4), np.float32)),
    "ps_jit": (lambda J: J.jit(lambda v: J.lax.psum_scatter(v, "i", tiled=True)), rnd(4, 8)),
}


@pytest.mark.parametrize("name", half_slow(sorted(EDGE_CASES)))
def test_edges(rjax, name):
    f, x = EDGE_CASES[name]
    same(rjax, lambda J: V(J, f(J)), x, rtol=1e-5)


def test_jit_retraces_for_another_axis_size(rjax):
    jitted = {}
    for L in (jaxlite, rjax):       # one jitted function per library, called twice
        jitted[L] = (L.jit(lambda v, L=L: L.lax.pmean(v, "i")),
                     L.jit(lambda v, L=L: L.lax.all_gather(v, "i")))
    for n in (4, 2):
        x = np.arange(float(n), dtype=np.float32)
        same(rjax, lambda L: V(L, jitted[L][0]), x)
        same(rjax, lambda L: V(L, jitted[L][1]), x)


UNMAPPED_PROGRAMS = {
    "jit_const_all_gather": lambda J: lambda v: J.jit(lambda u: J.lax.all_gather(1.0, "i"))(v),
    "jit_const_psum": lambda J: lambda v: J.jit(lambda u: u + J.lax.psum(1.0, "i"))(v),
    "scan_const_psum": lambda J: lambda v: J.lax.scan(
        lambda c, _: (c + J.lax.psum(1.0, "i"), None), v, None, length=3)[0],
    "fori_axis_index": lambda J: lambda v: J.lax.fori_loop(
        0, 2, lambda k, c: c + J.lax.axis_index("i"), v),
    "cond_ppermute_const": lambda J: lambda v: J.lax.cond(
        True, lambda u: u * J.lax.ppermute(2.0, "i", [(0, 1), (1, 0)]), lambda u: u, v),
}


@pytest.mark.parametrize("name", sorted(UNMAPPED_PROGRAMS))
def test_programs_with_collectives_on_unmapped_operands(rjax, name):
    """A jit/scan/cond whose operands are all unmapped but whose program has a collective
    over the vmap's axis: its examples differ, so it is batched, not run once."""
    f = UNMAPPED_PROGRAMS[name]
    same(rjax, lambda J: J.vmap(f(J), axis_name="i", in_axes=None, axis_size=2),
         np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["jit", "scan"])
def test_collective_on_a_raw_unmapped_operand_in_a_program(rjax, name):
    """A jit or loop whose operands are all raw (unmapped arguments of the vmap) but
    whose program applies a collective over the vmap's axis is batched over it (it
    raised NameError: it ran eagerly, outside the vmap)."""
    f = {"jit": lambda J: lambda v: J.jit(lambda u: J.lax.all_gather(u, "i"))(v),
         "scan": lambda J: lambda v: J.lax.scan(lambda c, _: (J.lax.psum(c, "i"), None), v,
                                                None, length=2)[0]}[name]
    same(rjax, lambda J: J.vmap(f(J), axis_name="i", in_axes=None, axis_size=2),
         np.ones(3, np.float32))


@pytest.mark.parametrize("n", [1, 2, 4, 9])
def test_psum_edges_signed_zeros_specials_empty(rjax, n):
    """psum at the edges, against JAX: -0.0 from every example sums to +0.0 (to -0.0 over
    one example), NaN and opposite infinities give NaN, an empty operand stays empty."""
    zeros = np.full((n, 2), -0.0, np.float32)
    special = np.array([[np.nan, 1.0], [np.inf, -np.inf], [1.0, np.inf]] * 3,
                       np.float32)[:n]
    empty = np.zeros((n, 0), np.float32)
    for x in (zeros, special, empty):
        got = np.asarray(jaxlite.vmap(lambda v: jaxlite.lax.psum(v, "i"), axis_name="i")(x))
        want = np.asarray(rjax.vmap(lambda v: rjax.lax.psum(v, "i"), axis_name="i")(x))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
