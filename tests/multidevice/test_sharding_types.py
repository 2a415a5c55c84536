"""ShardingTypeError on Explicit mesh axes, against real JAX 0.10.2 (the oracle).

Each program runs eagerly and under jit on arrays placed with a NamedSharding over a
(2, 4) mesh of axes ('x', 'y') in jaxlite and in JAX: jaxlite raises ShardingTypeError
exactly where JAX does (the message names the primitive), and where JAX does not raise
the values, dtypes and result shardings agree.  Auto meshes never raise; on a mesh mixing
Explicit and Auto axes only the Explicit ones count.  The checker's own API
(``check_explicit``) is tested on traced programs too.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jlnp
import jaxlite.sharding as jls
from jaxlite.core import ShardingTypeError
from jaxlite.compiler.passes.sharding_types import check_explicit, typed_out_specs

from _oracle import same_array  # noqa: E402  (tests/multidevice is on sys.path)


def _host(shape, dtype=np.float32):
    n = math.prod(shape)
    return ((np.arange(n) % 13) - 5).astype(dtype).reshape(shape)


def _put(lib, mesh, shape, spec):
    if lib is jaxlite:
        return jaxlite.device_put(_host(shape), jls.NamedSharding(mesh, jls.P(*spec)))
    return lib.device_put(_host(shape), lib.sharding.NamedSharding(mesh, lib.P(*spec)))


def _mesh(lib, types=None):
    if types is None:
        return lib.make_mesh((2, 4), ("x", "y"))
    at = lib.sharding.AxisType
    return lib.make_mesh((2, 4), ("x", "y"), axis_types=tuple(getattr(at, t) for t in types))


def _run(f, args):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 -- compared with JAX's outcome
        return type(e).__name__, e


# (name, program f(np_module, lax_module, *arrays), [(shape, spec) per argument],
#  the primitive JAX names when it raises (checked in jaxlite's message) or None)
M = (8, 8)
CASES = [
    # elementwise and broadcasting
    ("add_same", lambda np_, lax, a, b: a + b, [(M, ("x",)), (M, ("x",))], None),
    ("add_whole", lambda np_, lax, a, b: a + b, [(M, ("x",)), (M, ())], None),
    ("add_refine", lambda np_, lax, a, b: a + b, [(M, ("x", "y")), (M, ("x",))], None),
    ("add_dup_axis", lambda np_, lax, a, b: a + b, [(M, ("x", None)), (M, (None, "x"))],
     "add"),
    ("add_x_y", lambda np_, lax, a, b: a + b, [(M, ("x",)), (M, ("y",))], "add"),
    ("add_xy_x", lambda np_, lax, a, b: a + b, [(M, (("x", "y"),)), (M, ("x",))], "add"),
    ("add_scalar", lambda np_, lax, a: a * 2.0 + 1.0, [(M, ("x",))], None),
    ("bcast_row_dup", lambda np_, lax, a, v: a + v, [(M, ("x",)), ((8,), ("x",))], "add"),
    ("bcast_row_ok", lambda np_, lax, a, v: a + v, [(M, (None, "x")), ((8,), ("x",))],
     None),
    ("bcast_row_y", lambda np_, lax, a, v: a + v, [(M, ("x",)), ((8,), ("y",))], None),
    ("bcast_outer_dup", lambda np_, lax, a, b: a + b, [((8, 1), ("x",)),
                                                       ((1, 8), (None, "x"))], "add"),
    ("bcast_outer_ok", lambda np_, lax, a, b: a + b, [((8, 1), ("x",)),
                                                      ((1, 8), (None, "y"))], None),
    ("outer_dup", lambda np_, lax, a, b: np_.outer(a, b), [((8,), ("x",)), ((8,), ("x",))],
     "mul"),
    ("add_transposed", lambda np_, lax, a: a + a.T, [(M, ("x",))], "add"),
    ("add_transposed_xy", lambda np_, lax, a: a + a.T, [(M, ("x", "y"))], "add"),
    ("where_scalar", lambda np_, lax, a: np_.where(a > 0, a, 0.0), [(M, ("x",))], None),
    ("where_cases_differ", lambda np_, lax, a, b: np_.where(a > 0, a, b),
     [(M, ("x",)), (M, ())], "select_n"),
    ("where_pred_differs", lambda np_, lax, p, a, b: lax.select(p > 0, a, b),
     [(M, ()), (M, ("x",)), (M, ("x",))], "select_n"),
    ("maximum_x_y", lambda np_, lax, a, b: np_.maximum(a, b), [(M, ("x",)), (M, ("y",))],
     "max"),
    ("clip", lambda np_, lax, a: np_.clip(a, -1.0, 3.0), [(M, ("x",))], None),
    ("relu_softmax", lambda np_, lax, a: np_.exp(a) / np_.exp(a).sum(1, keepdims=True),
     [(M, ("x",))], None),
    # dot_general
    ("matmul_contract_both", lambda np_, lax, a, b: a @ b, [(M, (None, "x")), (M, ("x",))],
     "dot_general"),
    ("matmul_contract_xy", lambda np_, lax, a, b: a @ b, [(M, ("x", "y")), (M, ("y",))],
     "dot_general"),
    ("matmul_contract_differ", lambda np_, lax, a, b: a @ b,
     [(M, (None, "x")), (M, ("y",))], "dot_general"),
    ("matmul_free", lambda np_, lax, a, b: a @ b, [(M, ("x",)), (M, (None, "y"))], None),
    ("matmul_one_side", lambda np_, lax, a, b: a @ b, [(M, (None, "y")), (M, ())], None),
    ("matmul_rhs_contract", lambda np_, lax, a, b: a @ b, [(M, ()), (M, ("x",))], None),
    ("matmul_free_dup", lambda np_, lax, a, b: a @ b, [(M, ("x",)), (M, (None, "x"))],
     "dot_general"),
    ("x_xT", lambda np_, lax, a: a @ a.T, [(M, ("x", "y"))], "dot_general"),
    ("matvec", lambda np_, lax, a, v: a @ v, [(M, (None, "x")), ((8,), ("x",))],
     "dot_general"),
    ("vdot", lambda np_, lax, a, b: a @ b, [((8,), ("x",)), ((8,), ("x",))], "dot_general"),
    ("bmm_same", lambda np_, lax, a, b: a @ b, [((2, 8, 8), ("x",)), ((2, 8, 8), ("x",))],
     None),
    ("dot_batch_differ", lambda np_, lax, a, b: lax.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,)))), [((4, 8, 8), ("x",)), ((4, 8, 8), ("y",))],
     "dot_general"),
    ("dot_batch_one_side", lambda np_, lax, a, b: lax.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,)))), [((2, 8, 8), ()), ((2, 8, 8), ("x",))], None),
    ("dot_batch_free_dup", lambda np_, lax, a, b: lax.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,)))), [((4, 8, 8), ("x",)),
                                              ((4, 8, 8), (None, None, "x"))],
     "dot_general"),
    # reshape
    ("reshape_merge_major", lambda np_, lax, a: a.reshape(64), [(M, ("x",))], None),
    ("reshape_merge_minor", lambda np_, lax, a: a.reshape(64), [(M, (None, "x"))],
     "reshape"),
    ("reshape_merge_xy", lambda np_, lax, a: a.reshape(64), [(M, ("x", "y"))], None),
    ("reshape_split", lambda np_, lax, a: a.reshape(2, 4, 8), [(M, ("x",))], None),
    ("reshape_split_y", lambda np_, lax, a: a.reshape(2, 4, 8), [(M, ("y",))], "reshape"),
    ("reshape_split_minor", lambda np_, lax, a: a.reshape(8, 2, 4), [(M, (None, "x"))],
     None),
    ("reshape_4_16", lambda np_, lax, a: a.reshape(4, 16), [(M, ("x",))], "reshape"),
    ("reshape_4_16_whole", lambda np_, lax, a: a.reshape(4, 16), [(M, ())], None),
    ("reshape_two_splits", lambda np_, lax, a: a.reshape(2, 4, 2, 4), [(M, ("x",))],
     "reshape"),
    ("reshape_16_xy", lambda np_, lax, a: a.reshape(2, 8), [((16,), (("x", "y"),))], None),
    ("reshape_16_xy_bad", lambda np_, lax, a: a.reshape(4, 4), [((16,), (("x", "y"),))],
     "reshape"),
    ("reshape_merge3", lambda np_, lax, a: a.reshape(8, 8), [((2, 4, 8), ("x", "y"))],
     None),
    ("reshape_merge3_minor", lambda np_, lax, a: a.reshape(8, 8), [((2, 4, 8), (None, "y"))],
     "reshape"),
    ("expand_dims", lambda np_, lax, a: np_.expand_dims(a, 1), [(M, ("x",))], None),
    ("ravel", lambda np_, lax, a: np_.ravel(a), [(M, ("y", "x"))], None),
    # shape ops
    ("transpose", lambda np_, lax, a: a.T, [(M, ("x", "y"))], None),
    ("concat_same", lambda np_, lax, a, b: np_.concatenate([a, b], 1),
     [(M, ("x",)), (M, ("x",))], None),
    ("concat_sharded_dim", lambda np_, lax, a, b: np_.concatenate([a, b], 0),
     [(M, ("x",)), (M, ("x",))], None),
    ("concat_differ", lambda np_, lax, a, b: np_.concatenate([a, b], 1),
     [(M, ("x",)), (M, ())], "concatenate"),
    ("concat_x_y", lambda np_, lax, a, b: np_.concatenate([a, b], 1),
     [(M, ("x",)), (M, ("y",))], "concatenate"),
    ("concat_constant", lambda np_, lax, a: np_.concatenate([a, np_.zeros((8, 8))]),
     [(M, ("x",))], None),
    ("stack_differ", lambda np_, lax, a, b: np_.stack([a, b]), [(M, ("x",)), (M, ())],
     "concatenate"),
    ("slice_divisible", lambda np_, lax, a: lax.slice(a, (0, 0), (4, 8)), [(M, ("y",))],
     None),
    ("slice_indivisible", lambda np_, lax, a: lax.slice(a, (0, 0), (6, 8)), [(M, ("y",))],
     "slice"),
    ("slice_strided", lambda np_, lax, a: lax.slice(a, (0, 0), (8, 8), (2, 1)),
     [(M, ("x",))], None),
    ("dynamic_slice_bad", lambda np_, lax, a: lax.dynamic_slice(a, (2, 0), (3, 8)),
     [(M, ("x",))], "dynamic_slice"),
    ("dynamic_slice_ok", lambda np_, lax, a: lax.dynamic_slice(a, (2, 0), (4, 8)),
     [(M, ("x",))], None),
    ("pad_bad", lambda np_, lax, a: lax.pad(a, 0.0, ((1, 0, 0), (0, 0, 0))),
     [(M, ("x",))], "pad"),
    ("pad_ok", lambda np_, lax, a: lax.pad(a, 0.0, ((1, 1, 0), (0, 0, 0))),
     [(M, ("x",))], None),
    ("dus_differ", lambda np_, lax, a, u: lax.dynamic_update_slice(a, u, (2, 0)),
     [(M, ("x",)), ((2, 8), ())], "dynamic_update_slice"),
    ("dus_same", lambda np_, lax, a, u: lax.dynamic_update_slice(a, u, (2, 0)),
     [(M, ("x",)), ((4, 8), ("x",))], None),
    ("flip", lambda np_, lax, a: np_.flip(a, 0), [(M, ("x",))], None),
    ("roll_sharded", lambda np_, lax, a: np_.roll(a, 1, 0), [(M, ("x",))], "slice"),
    # reductions, scans, sort
    ("sum_sharded", lambda np_, lax, a: a.sum(0), [(M, ("x",))], None),
    ("max_all", lambda np_, lax, a: a.max(), [(M, ("x", "y"))], None),
    ("argmax_sharded", lambda np_, lax, a: np_.argmax(a, 0), [(M, ("x",))], None),
    ("mean_var", lambda np_, lax, a: a.var(0) + a.mean(1).sum(), [(M, ("x",))], None),
    ("cumsum_sharded", lambda np_, lax, a: np_.cumsum(a, 0), [(M, ("x",))], "cumsum"),
    ("cumsum_other", lambda np_, lax, a: np_.cumsum(a, 1), [(M, ("x",))], None),
    ("cumprod_sharded", lambda np_, lax, a: np_.cumprod(a, 0), [(M, ("x",))], "cumprod"),
    ("cummax_sharded", lambda np_, lax, a: lax.cummax(a, 0), [(M, ("x",))], "cummax"),
    ("sort_sharded", lambda np_, lax, a: np_.sort(a, 0), [(M, ("x",))], "sort"),
    ("sort_other", lambda np_, lax, a: np_.sort(a, 1), [(M, ("x",))], None),
    ("argsort_sharded", lambda np_, lax, a: np_.argsort(a, 0), [(M, ("x",))], "sort"),
    ("sort_operands_differ", lambda np_, lax, a, b: lax.sort((a, b), dimension=1,
                                                             num_keys=1),
     [(M, ("x",)), (M, ())], "sort"),
    # linear algebra
    ("inv_sharded", lambda np_, lax, a: np_.linalg.inv(a + 20 * np_.eye(8)), [(M, ("x",))],
     "lu"),
    ("inv_whole", lambda np_, lax, a: np_.linalg.inv(a + 20 * np_.eye(8)), [(M, ())], None),
    ("qr_sharded", lambda np_, lax, a: np_.linalg.qr(a)[1], [(M, ("x",))], "qr"),
    ("cholesky_sharded", lambda np_, lax, a: np_.linalg.cholesky(a + 20 * np_.eye(8)),
     [(M, ("x",))], "add"),
    ("cholesky_whole", lambda np_, lax, a: np_.linalg.cholesky(a @ a.T + 20 * np_.eye(8)),
     [(M, ())], None),
    ("eigh_batch_sharded", lambda np_, lax, a: np_.linalg.eigh(a + a.mT)[0],
     [((2, 8, 8), ("x",))], None),
    ("svd_core_sharded", lambda np_, lax, a: np_.linalg.svd(a)[1], [((2, 8, 8), ("x", "y"))],
     "svd"),
    ("triangular_b_sharded", lambda np_, lax, a, b: _scipy(np_).linalg.solve_triangular(
        a + 20 * np_.eye(8), b), [(M, ()), (M, ("x",))], "triangular_solve"),
    ("triangular_a_sharded", lambda np_, lax, a, b: _scipy(np_).linalg.solve_triangular(
        a + 20 * np_.eye(8), b), [(M, (None, "y")), (M, ())], "triangular_solve"),
    ("triangular_free_sharded", lambda np_, lax, a, b: _scipy(np_).linalg.solve_triangular(
        a + 20 * np_.eye(8), b), [(M, ()), (M, (None, "y"))], None),
    ("fft_keeps_spec", lambda np_, lax, a: np_.fft.fft(a, axis=0).real, [(M, ("x",))], None),
    ("conv_kernel_sharded", lambda np_, lax, a: lax.conv(a[None, None], a[None, None],
                                                         (1, 1), "SAME"),
     [(M, ("x",))], "conv_general_dilated"),
    ("conv_batch_sharded", lambda np_, lax, a, k: lax.conv(a[:, None], k, (1, 1), "SAME"),
     [((2, 8, 8), ("x",)), ((1, 1, 3, 3), ())], None),
    ("tile_sharded_dim", lambda np_, lax, a: np_.tile(a, (2, 1)), [(M, ("x",))], "reshape"),
    ("tile_other_dim", lambda np_, lax, a: np_.tile(a, (1, 2)), [(M, ("x",))], None),
    ("repeat_sharded_dim", lambda np_, lax, a: np_.repeat(a, 2, axis=0), [(M, ("x",))],
     None),
    ("argsort_other_dim", lambda np_, lax, a: np_.argsort(a, axis=1), [(M, ("y",))], None),
    ("where_constant_cases", lambda np_, lax, a: np_.where(a > 1, 1.0, 0.0),
     [(M, ("x", "y"))], None),
    ("median_other_dim", lambda np_, lax, a: np_.median(a, axis=1), [(M, ("x",))], None),
    # indexing with an index array (gather)
    ("take_sharded_dim", lambda np_, lax, a: a[np_.array([1, 2, 5])], [(M, ("x",))],
     "gather"),
    ("take_whole_dim", lambda np_, lax, a: a[np_.array([1, 2, 5])], [(M, (None, "x"))],
     None),
    ("take_axis1", lambda np_, lax, a: np_.take(a, np_.array([1, 2, 5]), axis=1),
     [(M, ("x",))], None),
    ("take_axis1_xy", lambda np_, lax, a: a[:, np_.array([1, 2, 5])], [(M, ("x", "y"))],
     "gather"),
    ("take_with_int", lambda np_, lax, a: a[0, np_.array([1, 2, 5])], [(M, (None, "x"))],
     "gather"),
    ("take_partial_slice", lambda np_, lax, a: a[2:4, np_.array([1, 2])],
     [(M, (None, "x"))], "gather"),
    ("take_2d_index", lambda np_, lax, a: a[np_.array([[1, 2], [3, 4]])],
     [(M, (None, "x"))], None),
    ("take_new_axis", lambda np_, lax, a: a[:, None, np_.array([1, 2])], [(M, ("x",))],
     None),
    ("take_along_axis", lambda np_, lax, a: np_.take_along_axis(
        a, np_.argsort(a, axis=1), axis=1), [(M, ("x",))], None),
    # control flow and calls
    ("cond", lambda np_, lax, a: lax.cond(True, lambda x: x + 1, lambda x: x * 2, a),
     [(M, ("x",))], None),
    ("while", lambda np_, lax, a: lax.while_loop(lambda c: c[0] < 3,
                                                 lambda c: (c[0] + 1, c[1] * 2), (0, a))[1],
     [(M, ("x",))], None),
    ("while_body_bad", lambda np_, lax, a: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + c[1].T), (0, a))[1],
     [(M, ("x",))], "add"),
    ("scan_carry", lambda np_, lax, a: lax.scan(lambda c, x: (c + x, c.sum()), a,
                                                np_.arange(3.0))[0], [(M, ("x",))], None),
    ("scan_body_bad", lambda np_, lax, a: lax.scan(lambda c, x: (np_.cumsum(c, 0), x), a,
                                                   np_.arange(3.0))[0],
     [(M, ("x",))], "cumsum"),
    ("custom_jvp", lambda np_, lax, a: a * (a > 0), [(M, ("x",))], None),
    ("nested_jit_bad", lambda np_, lax, a, b: _jit_of(np_)(lambda x, y: x @ y)(a, b),
     [(M, (None, "x")), (M, ("x",))], "dot_general"),
]



def _scipy(np_):
    return jaxlite.scipy if np_ is jlnp else __import__("jax").scipy


def _jit_of(np_):
    return jaxlite.jit if np_ is jlnp else __import__("jax").jit


def _libs(rjax8):
    import jax.numpy as jnp
    return ((jaxlite, jlnp, jaxlite.lax), (rjax8, jnp, rjax8.lax))


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name,f,args,prim", CASES, ids=[c[0] for c in CASES])
def test_explicit_mesh_matches_jax(rjax8, name, f, args, prim, mode):
    out = []
    for lib, np_, lax in _libs(rjax8):
        mesh = _mesh(lib)
        arrays = [_put(lib, mesh, shape, spec) for shape, spec in args]
        g = (lambda *xs: f(np_, lax, *xs))
        if mode == "jit":
            g = lib.jit(g)
        out.append(_run(g, arrays))
    (kind_jl, r_jl), (kind_x, r_x) = out
    if kind_x == "ShardingTypeError":
        assert kind_jl == "ShardingTypeError", (name, mode, kind_jl, r_jl, r_x)
        assert isinstance(r_jl, ShardingTypeError)
        # (jaxlite's tile is a broadcast and a reshape: the reshape names it)
        assert prim is not None and str(r_jl).startswith(prim + ":"), (str(r_jl), prim)
        return
    assert prim is None, f"JAX did not raise for {name} ({mode}): fix the table"
    assert kind_x == "ok", (kind_x, r_x)
    assert kind_jl == "ok", (name, mode, r_jl)
    same_array(r_jl, r_x, placed=False)
    assert r_jl.sharding.spec == r_x.sharding.spec or \
        _spec_eq(r_jl.sharding.spec, r_x.sharding.spec, r_x.ndim), \
        (name, mode, r_jl.sharding, r_x.sharding)


def _spec_eq(a, b, ndim):
    def norm(p):
        es = [None if e is None else (e,) if isinstance(e, str) else tuple(e) for e in p]
        return es + [None] * (ndim - len(es))
    return norm(a) == norm(b)


# ---- Auto and mixed meshes ---------------------------------------------------------------

MESH_CASES = [c for c in CASES if c[0] in {
    "add_dup_axis", "add_x_y", "matmul_contract_both", "x_xT", "reshape_merge_minor",
    "cumsum_sharded", "concat_differ", "sort_sharded", "add_transposed", "pad_bad"}]


@pytest.mark.parametrize("types", [("Auto", "Auto"), ("Explicit", "Auto"),
                                   ("Auto", "Explicit")])
@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name,f,args,prim", MESH_CASES, ids=[c[0] for c in MESH_CASES])
def test_auto_and_mixed_meshes(rjax8, name, f, args, prim, mode, types):
    """All-Auto meshes never raise; on mixed meshes only the Explicit axes count (and
    jaxlite raises exactly where JAX does)."""
    kinds = []
    for lib, np_, lax in _libs(rjax8):
        mesh = _mesh(lib, types)
        arrays = [_put(lib, mesh, shape, spec) for shape, spec in args]
        g = (lambda *xs: f(np_, lax, *xs))
        kinds.append(_run(lib.jit(g) if mode == "jit" else g, arrays))
    (k_jl, r_jl), (k_x, r_x) = kinds
    if types == ("Auto", "Auto"):
        assert k_x == "ok"
    assert (k_jl == "ShardingTypeError") == (k_x == "ShardingTypeError"), \
        (name, mode, types, r_jl, r_x)
    if k_x == "ok":
        np.testing.assert_allclose(np.asarray(r_jl), np.asarray(r_x), rtol=1e-5)


def test_plain_mesh_constructor_is_auto(rjax8):
    """``Mesh(devices, names)`` has Auto axes: nothing raises there."""
    devs = np.array(jaxlite.devices()).reshape(2, 4)
    mesh = jls.Mesh(devs, ("x", "y"))
    a = _put(jaxlite, mesh, M, ("x", "y"))
    r = jaxlite.jit(lambda x: x @ x.T)(a)
    np.testing.assert_allclose(np.asarray(r), _host(M) @ _host(M).T)
    np.testing.assert_allclose(np.asarray(a @ a.T), _host(M) @ _host(M).T)


# ---- the arguments JAX leaves out of the comparison: no mesh -----------------------------

@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_host_and_constant_operands_carry_no_mesh(rjax8, mode):
    """A host array or a constant concatenated/selected with a sharded one: no mesh, no
    error (JAX compares only the shardings of operands placed on the mesh)."""
    outs = []
    for lib, np_, lax in _libs(rjax8):
        a = _put(lib, _mesh(lib), M, ("x",))
        h = _host(M)

        def f(x, y):
            return np_.concatenate([x, y]), np_.where(x > 0, x, y), x + y
        g = lib.jit(f) if mode == "jit" else f
        outs.append(g(a, h))
    for r_jl, r_x in zip(*outs):
        same_array(r_jl, r_x, placed=False)


def test_set_mesh_constants_carry_no_mesh(rjax8):
    """Known difference (README): under set_mesh JAX types a constant as replicated on
    the mesh, so concatenating ``jnp.zeros`` with a P('x') array raises there; jaxlite
    reads constants as meshless also under set_mesh (its library functions do not give
    their constants their operands' sharding as JAX's do), so it concatenates.  Without
    set_mesh neither raises; with it, where(x > 0, x, 0.) and argsort pass in both."""
    import jax
    results = []
    for lib, np_ in ((jaxlite, jlnp), (rjax8, jax.numpy)):
        mesh = _mesh(lib)
        a = _put(lib, mesh, M, ("x",))
        f = lib.jit(lambda x: np_.concatenate([x, np_.zeros((8, 8))]))
        f(a)
        with lib.set_mesh(mesh):
            r = _run(lib.jit(lambda x: np_.concatenate([x, np_.zeros((8, 8))])), (a,))
            ok = [lib.jit(lambda x: np_.where(x > 0, x, 0.0))(a),
                  np_.where(a > 0, a, 0.0), np_.argsort(a, axis=1),
                  lib.jit(lambda x: np_.argsort(x, axis=1))(a)]
        results.append((r, ok))
    (r_jl, ok_jl), (r_x, ok_x) = results
    assert r_x[0] == "ShardingTypeError" and r_jl[0] == "ok"
    np.testing.assert_array_equal(np.asarray(r_jl[1])[:8], _host(M))
    for p, q in zip(ok_jl, ok_x):
        same_array(p, q, placed=False)


# ---- the error and the checker's API -----------------------------------------------------

def test_error_class_as_jax(rjax8):
    from jax._src.core import ShardingTypeError as JaxError
    assert [c.__name__ for c in ShardingTypeError.__mro__] == \
        [c.__name__ for c in JaxError.__mro__]
    assert jaxlite.core.ShardingTypeError is ShardingTypeError


def test_message_names_operands_and_axis():
    mesh = _mesh(jaxlite)
    a = _put(jaxlite, mesh, M, (None, "x"))
    b = _put(jaxlite, mesh, M, ("x",))
    with pytest.raises(ShardingTypeError) as info:
        a @ b
    msg = str(info.value)
    assert msg.startswith("dot_general:") and "f32[8,8@x]" in msg and "f32[8@x,8]" in msg
    assert "'x'" in msg
    with pytest.raises(ShardingTypeError, match=r"add: .*f32\[8@x,8\].*f32\[8@y,8\]"):
        _put(jaxlite, mesh, M, ("x",)) + _put(jaxlite, mesh, M, ("y",))
    with pytest.raises(ShardingTypeError, match=r"reshape: f32\[8,8@x\] to shape \(64,\)"):
        a.reshape(64)


def test_check_explicit_api():
    x = jlnp.ones((8, 8))
    closed = jaxlite.make_jaxpr(lambda a, b: (a @ b, a + 1.0))(x, x)
    sizes = {"x": 2, "y": 4}
    # the result specs over the Explicit axes
    assert check_explicit(closed, [("x",), (None, "y")], sizes, ("x", "y")) == \
        [(("x",), ("y",)), (("x",), ())]
    with pytest.raises(ShardingTypeError, match="dot_general"):
        check_explicit(closed, [(None, "x"), ("x",)], sizes, ("x", "y"))
    # Auto axes are not checked: 'x' Auto here
    assert check_explicit(closed, [(None, "x"), ("x",)], sizes, ("y",)) == \
        [((), ()), ((), ())]
    # no Explicit axis at all: nothing checked, nothing known
    assert check_explicit(closed, [(None, "x"), ("x",)], sizes, ()) == [None, None]
    with pytest.raises(ValueError, match="2 inputs"):
        check_explicit(closed, [None], sizes, ("x",))
    # a PartitionSpec works as a spec; None: the input carries no mesh
    cat = jaxlite.make_jaxpr(lambda a, b: jlnp.concatenate([a, b]))(x, x)
    assert check_explicit(cat, [jls.P("x"), None], sizes, ("x", "y")) == [(("x",), ())]
    with pytest.raises(ShardingTypeError, match="concatenate"):
        check_explicit(cat, [jls.P("x"), jls.P()], sizes, ("x", "y"), meshed=[True, True])


# ---- known difference: eager indexing ----------------------------------------------------

def test_eager_partial_slice_of_sharded_dim(rjax8):
    """Eagerly JAX indexes a sharded array through gather, whose rule refuses a slice of a
    sharded dimension on Explicit axes even where its size divides; jaxlite slices as JAX
    does under jit (README, known differences).  An index (size 1) raises in both."""
    jx = _put(rjax8, _mesh(rjax8), M, ("x",))
    jl = _put(jaxlite, _mesh(jaxlite), M, ("x",))
    assert _run(lambda: jx[1:5], ())[0] == "ShardingTypeError"
    r = rjax8.jit(lambda x: x[1:5])(jx)
    same_array(jl[1:5], r)
    for lib_x in (jx, jl):
        assert _run(lambda: lib_x[3], ())[0] == "ShardingTypeError"


def test_typed_out_specs_api():
    """What jit calls: the propagated specs replaced by the typed ones on an all-Explicit
    mesh (kept on a mixed one), ShardingTypeError where JAX raises; ``meshed`` says which
    arguments are on the mesh (whole ones are read as host arrays by default)."""
    x = jlnp.ones((8, 8))
    mesh = _mesh(jaxlite)
    closed = jaxlite.make_jaxpr(lambda a, b: jlnp.concatenate([a, b]) @ b)(x, x)
    specs = [((), ())]
    assert typed_out_specs(closed, [(("x",), ()), ((), ())], mesh, specs) == \
        [(("x",), ())]
    with pytest.raises(ShardingTypeError, match="concatenate"):
        typed_out_specs(closed, [(("x",), ()), ((), ())], mesh, specs, meshed=[True, True])
    mixed = _mesh(jaxlite, ("Explicit", "Auto"))
    assert typed_out_specs(closed, [(("x",), ()), ((), ())], mixed, specs) == specs
    auto = _mesh(jaxlite, ("Auto", "Auto"))
    dot = jaxlite.make_jaxpr(lambda a, b: a @ b)(x, x)
    with pytest.raises(ShardingTypeError, match="dot_general"):
        typed_out_specs(dot, [((), ("x",)), (("x",), ())], mesh, specs)
    assert typed_out_specs(dot, [((), ("x",)), (("x",), ())], auto, specs) == specs


# ---- what jaxlite binds itself: transposes, out_sharding=, shard_map --------------------

def _grad_programs(L, np_, P):
    def mlp(w1, w2, x):
        return ((L.nn.relu(x @ w1) @ w2) ** 2).mean()
    return [
        ("grad_mlp_data_parallel", lambda w1, w2, x: L.grad(mlp, argnums=(0, 1))(w1, w2, x),
         [(M, ()), (M, ()), ((16, 8), ("x",))]),
        ("grad_mlp_tensor_parallel", lambda w1, w2, x: L.grad(mlp, argnums=(0, 1))(w1, w2, x),
         [(M, (None, "y")), (M, ()), ((16, 8), ("x",))]),
        ("grad_matmul", lambda a, b: L.grad(lambda a, b: (a @ b).sum(), argnums=(0, 1))(a, b),
         [(M, ("x",)), (M, (None, "y"))]),
        ("value_and_grad", lambda w, x: L.value_and_grad(lambda w: ((x @ w) ** 2).sum())(w),
         [(M, ()), ((16, 8), ("x",))]),
        ("vmap_grad", lambda w, x: L.vmap(L.grad(lambda w, r: (r @ w).sum()),
                                          in_axes=(None, 0))(w, x),
         [(M, ()), ((16, 8), ("x",))]),
        ("matmul_out_sharding", lambda a, b: np_.matmul(a, b, out_sharding=P("x")),
         [(M, (None, "x")), (M, ("x",))]),
        ("dot_out_sharding", lambda a, b: np_.dot(a, b, out_sharding=P(None, "y")),
         [(M, (None, "x")), (M, ("x",))]),
        ("einsum_out_sharding", lambda a, b: np_.einsum("ij,jk->ik", a, b,
                                                        out_sharding=P("x")),
         [(M, (None, "x")), (M, ("x",))]),
        ("lax_dot_general_out_sharding", lambda a, b: L.lax.dot_general(
            a, b, (((1,), (0,)), ((), ())), out_sharding=P("x")),
         [(M, (None, "x")), (M, ("x",))]),
        ("grad_tensor_parallel_bad", lambda w1, w2, x: L.grad(mlp, argnums=(0, 1))(w1, w2, x),
         [(M, (None, "y")), (M, ("y",)), ((16, 8), ("x",))]),
    ]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("k", range(10), ids=[p[0] for p in _grad_programs(jaxlite, jlnp,
                                                                            jaxlite.P)])
def test_gradients_and_out_sharding(rjax8, k, mode):
    """Reverse mode (JAX's transposes carry the primal's type, so they never raise) and the
    products' ``out_sharding=`` (JAX takes it and checks nothing); under set_mesh, as JAX
    0.10 needs for eager gradients of Explicit-sharded arrays."""
    import jax
    outs = []
    for lib, np_ in ((jaxlite, jlnp), (rjax8, jax.numpy)):
        name, f, args = _grad_programs(lib, np_, lib.P)[k]
        mesh = _mesh(lib)
        arrays = [_put(lib, mesh, shape, spec) for shape, spec in args]
        with lib.set_mesh(mesh):
            outs.append(_run(lib.jit(f) if mode == "jit" else f, arrays))
    (k_jl, r_jl), (k_x, r_x) = outs
    assert k_jl == k_x, (name, mode, r_jl, r_x)
    if k_x == "ok":
        for a, b in zip(jaxlite.tree_util.tree_leaves(r_jl), jax.tree_util.tree_leaves(r_x)):
            same_array(a, b, placed=False, rtol=1e-5)


def test_jit_of_shard_map_is_not_typed(rjax8):
    """shard_map's per-device program (Manual axes) is not typed: jaxlite expands it into
    global operations under jit (slices of the stacked shards) that must not raise."""
    outs = []
    for lib in (jaxlite, rjax8):
        mesh = lib.make_mesh((8,), ("i",))
        P = lib.P
        xs = lib.device_put(np.arange(8.0, dtype=np.float32),
                            lib.sharding.NamedSharding(mesh, P("i")))
        sm = lib.shard_map(lambda b: lib.lax.psum(b.sum(), "i"), mesh=mesh,
                           in_specs=P("i"), out_specs=P())
        outs.append((lib.jit(sm)(xs), lib.jit(lib.grad(sm))(xs)))
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))


SCATTERS = [
    ("at_set_sharded_dim", lambda np_, a: a.at[np_.array([1, 2, 5])].set(0.0), ("x",),
     "scatter"),
    ("at_set_whole_dim", lambda np_, a: a.at[np_.array([1, 2, 5])].set(0.0), (None, "x"),
     None),
    ("at_add_other_dim", lambda np_, a: a.at[:, np_.array([1, 2])].add(1.0), ("x",), None),
    ("at_slice_sharded", lambda np_, a: a.at[2:4].set(0.0), ("x",), "scatter"),
    ("at_slice_whole", lambda np_, a: a.at[2:4].set(0.0), (None, "x"), None),
    ("at_int_whole", lambda np_, a: a.at[1].set(0.0), (None, "x"), None),
]


@pytest.mark.parametrize("name,f,spec,prim", SCATTERS, ids=[c[0] for c in SCATTERS])
def test_scatter_under_jit(rjax8, name, f, spec, prim):
    """``x.at[index]`` under jit (eagerly JAX 0.10 wants set_mesh for it): raises where an
    indexed dimension of ``x`` is sharded, as JAX."""
    import jax
    out = []
    for lib, np_ in ((jaxlite, jlnp), (rjax8, jax.numpy)):
        a = _put(lib, _mesh(lib), M, spec)
        out.append(_run(lib.jit(lambda x: f(np_, x)), (a,)))
    (k_jl, r_jl), (k_x, r_x) = out
    assert k_jl == k_x, (name, r_jl, r_x)
    if k_x == "ok":
        assert prim is None
        same_array(r_jl, r_x)
    else:
        assert k_x == "ShardingTypeError" and str(r_jl).startswith(prim + ":")
