"""Typed PRNG key arrays as pytree leaves, their dtypes and the methods they refuse, against
real JAX 0.10.2 (the oracle).

A key array (``jax.random.key(0)``, every implementation) is one pytree leaf to users
(``tree_leaves``, ``tree_structure``, ``tree_map``), while the transformations (jit, vmap,
grad, scan, cond, while_loop, device_put, eval_shape, shard_map) still trace its key data.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
import jaxlite.random as jr

IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]


@pytest.fixture(scope="module")
def rr(rjax):
    import jax.random
    return jax.random


def _data(x):
    """(key dtype name, key data) of a key array of either library, or the value."""
    if isinstance(x, jr.PRNGKeyArray):
        return str(x.dtype), np.asarray(jr.key_data(x))
    if type(x).__name__ == "PRNGKeyArray":
        import jax
        return str(x.dtype), np.asarray(jax.random.key_data(x))
    return None, np.asarray(x)


def assert_same(got, want):
    """Same key dtype (for keys), values bit for bit, shape and dtype."""
    (gk, g), (wk, w) = _data(got), _data(want)
    assert gk == wk, (gk, wk)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    np.testing.assert_array_equal(g, w)


# ---- the users' view: one leaf ---------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_key_is_one_leaf_as_jax(rjax, rr, impl):
    k, rk = jr.key(3, impl=impl), rr.key(3, impl=impl)
    ks, rks = jr.split(k, 4), rr.split(rk, 4)
    tree, rtree = {"a": k, "b": [ks, 1.0]}, {"a": rk, "b": [rks, 1.0]}
    leaves, rleaves = jaxlite.tree_util.tree_leaves(tree), rjax.tree_util.tree_leaves(rtree)
    assert len(leaves) == len(rleaves) == 3
    assert leaves[0] is k and leaves[1] is ks and leaves[2] == 1.0
    for g, w in zip(leaves, rleaves):
        assert_same(g, w)
    assert jaxlite.tree.leaves(k) == [k]
    assert repr(jaxlite.tree_util.tree_structure(k)) == repr(rjax.tree.structure(rk)) \
        == "PyTreeDef(*)"
    assert repr(jaxlite.tree.structure(tree)) == repr(rjax.tree.structure(rtree))
    got = jaxlite.tree.map(lambda a: str(a.dtype), {"a": k, "b": [ks]})
    want = rjax.tree.map(lambda a: str(a.dtype), {"a": rk, "b": [rks]})
    tag = {"threefry2x32": "fry", "rbg": "rbg", "unsafe_rbg": "urbg"}[impl]
    assert got == want == {"a": f"key<{tag}>", "b": [f"key<{tag}>"]}
    # a leaf: flatten/unflatten round trip gives the key itself; paths end at the key
    flat, tdef = jaxlite.tree_util.tree_flatten(tree)
    assert jaxlite.tree_util.tree_unflatten(tdef, flat)["a"] is k
    paths = [jaxlite.tree_util.keystr(p)
             for p, _ in jaxlite.tree_util.tree_flatten_with_path(tree)[0]]
    rpaths = [rjax.tree_util.keystr(p)
              for p, _ in rjax.tree_util.tree_flatten_with_path(rtree)[0]]
    assert paths == rpaths == ["['a']", "['b'][0]", "['b'][1]"]
    assert jaxlite.tree_util.all_leaves([k, ks]) is rjax.tree_util.all_leaves([rk, rks]) \
        is True
    assert not jaxlite.tree_util.is_tree_node(type(k))
    with pytest.raises(ValueError):
        jaxlite.tree_util.flatten_one_level(k)
    with pytest.raises(ValueError):
        rjax.tree_util.flatten_one_level(rk)


def test_tree_map_gets_the_keys_and_rebuilds_them(rjax, rr):
    k, rk = jr.key(1), rr.key(1)
    got = jaxlite.tree.map(lambda a: jr.split(a, 3), {"k": k})
    want = rjax.tree.map(lambda a: rr.split(a, 3), {"k": rk})
    assert_same(got["k"], want["k"])
    # the dtype a tree of keys maps to (JAX: key<fry>, not its uint32 data)
    shapes = jaxlite.tree.map(lambda a: (a.shape, str(a.dtype)), [k, jr.split(k, 2)],
                              is_leaf=lambda x: isinstance(x, tuple))
    assert shapes == [((), "key<fry>"), ((2,), "key<fry>")]


# ---- the transformations still see the key data -------------------------------------

def test_eval_shape_of_keys_is_jax(rjax, rr):
    k, rk = jr.key(0), rr.key(0)
    for f, rf in [(lambda a: a, lambda a: a),
                  (lambda a: jr.split(a), lambda a: rr.split(a)),
                  (lambda a: (jr.split(a, (2, 3)), jr.uniform(a)),
                   lambda a: (rr.split(a, (2, 3)), rr.uniform(a)))]:
        got, want = jaxlite.eval_shape(f, k), rjax.eval_shape(rf, rk)
        assert repr(got) == repr(want)
        assert jaxlite.tree.structure(got) == jaxlite.tree.structure(
            jaxlite.tree.map(lambda _: 0, got))
    got = jaxlite.eval_shape(jr.split, jr.key(0, impl="rbg"))
    want = rjax.eval_shape(rr.split, rr.key(0, impl="rbg"))
    assert repr(got) == repr(want) == "ShapeDtypeStruct(shape=(2,), dtype=key<rbg>)"


def test_shape_dtype_struct_of_keys_as_input(rjax, rr):
    """A ShapeDtypeStruct of a key dtype traces as keys (eval_shape, lower, make_jaxpr)."""
    sds = jaxlite.ShapeDtypeStruct((), jr.key(0).dtype)
    rsds = rjax.ShapeDtypeStruct((), rr.key(0).dtype)
    assert repr(sds) == repr(rsds) == "ShapeDtypeStruct(shape=(), dtype=key<fry>)"
    got = jaxlite.eval_shape(lambda a: jr.uniform(a, (3,)), sds)
    want = rjax.eval_shape(lambda a: rr.uniform(a, (3,)), rsds)
    assert repr(got) == repr(want)
    batch = jaxlite.ShapeDtypeStruct((4,), jr.key_dtype("unsafe_rbg"))
    got = jaxlite.eval_shape(jaxlite.vmap(jr.split), batch)
    want = rjax.eval_shape(rjax.vmap(rr.split),
                           rjax.ShapeDtypeStruct((4,), rr.key_dtype("unsafe_rbg")))
    assert repr(got) == repr(want) == "ShapeDtypeStruct(shape=(4, 2), dtype=key<urbg>)"
    out = jaxlite.jit(lambda a: jr.normal(a)).lower(sds).out_info
    rout = rjax.jit(lambda a: rr.normal(a)).lower(rsds).out_info
    assert repr(out) == repr(rout)
    with pytest.raises(ValueError, match="one key"):
        jaxlite.eval_shape(jr.split, batch)
    with pytest.raises(ValueError):
        rjax.eval_shape(rr.split, rjax.ShapeDtypeStruct((4,), rr.key_dtype("unsafe_rbg")))


@pytest.mark.parametrize("impl", IMPLS)
def test_jit_vmap_scan_cond_over_keys_are_jax(rjax, rr, impl):
    k, rk = jr.key(7, impl=impl), rr.key(7, impl=impl)
    ks, rks = jr.split(k, 3), rr.split(rk, 3)
    # jit: keys in, keys out (in a pytree)
    got = jaxlite.jit(lambda d: {"k": jr.split(d["k"])[0], "x": jr.uniform(d["k"])})({"k": k})
    want = rjax.jit(lambda d: {"k": rr.split(d["k"])[0], "x": rr.uniform(d["k"])})({"k": rk})
    assert_same(got["k"], want["k"])
    assert_same(got["x"], want["x"])
    # vmap over keys, negative axes counting over the key shape (not its data)
    for in_axes, out_axes in [(0, 0), (-1, 0), (0, -1), (0, 1), (-1, -2)]:
        got = jaxlite.vmap(lambda a: jr.split(a), in_axes=in_axes, out_axes=out_axes)(ks)
        want = rjax.vmap(lambda a: rr.split(a), in_axes=in_axes, out_axes=out_axes)(rks)
        assert_same(got, want)
    got = jaxlite.vmap(jr.normal, in_axes=-1)(ks)
    assert_same(got, rjax.vmap(rr.normal, in_axes=-1)(rks))
    with pytest.raises(ValueError, match="rank 1"):
        jaxlite.vmap(jr.normal, in_axes=1)(ks)      # the words of the key data: no axis
    with pytest.raises(ValueError):
        rjax.vmap(rr.normal, in_axes=1)(rks)
    with pytest.raises(ValueError, match="out of bounds"):
        jaxlite.vmap(jr.split, out_axes=2)(ks)
    with pytest.raises(ValueError):
        rjax.vmap(rr.split, out_axes=2)(rks)

    # scan with keys in the carry and as xs; fori_loop, while_loop, cond, switch
    def body(c, kk):
        key, s = c
        key, sub = jr.split(key)
        return (key, s + jr.uniform(sub) + jr.uniform(kk)), sub

    def rbody(c, kk):
        key, s = c
        key, sub = rr.split(key)
        return (key, s + rr.uniform(sub) + rr.uniform(kk)), sub
    (gk, gs), gsub = lax.scan(body, (k, 0.0), ks)
    (wk, ws), wsub = rjax.lax.scan(rbody, (rk, 0.0), rks)
    assert_same(gk, wk)
    assert_same(gs, ws)
    assert_same(gsub, wsub)
    got = lax.fori_loop(0, 3, lambda i, a: jr.fold_in(a, i), k)
    assert_same(got, rjax.lax.fori_loop(0, 3, lambda i, a: rr.fold_in(a, i), rk))
    got = lax.while_loop(lambda c: c[1] < 2, lambda c: (jr.split(c[0])[1], c[1] + 1), (k, 0))
    want = rjax.lax.while_loop(lambda c: c[1] < 2, lambda c: (rr.split(c[0])[1], c[1] + 1),
                               (rk, 0))
    assert_same(got[0], want[0])
    got = lax.cond(False, lambda a: a, lambda a: jr.split(a)[0], k)
    assert_same(got, rjax.lax.cond(False, lambda a: a, lambda a: rr.split(a)[0], rk))
    got = lax.switch(1, [lambda a: a, lambda a: jr.split(a)[1]], k)
    assert_same(got, rjax.lax.switch(1, [lambda a: a, lambda a: rr.split(a)[1]], rk))
    got = jaxlite.device_put({"k": k})
    assert_same(got["k"], rjax.device_put({"k": rk})["k"])
    assert jaxlite.tree.leaves(got)[0].dtype == k.dtype


def test_grad_with_keys_is_jax(rjax, rr):
    k, rk = jr.key(2), rr.key(2)

    def f(x, key):
        return x * jr.uniform(key)

    def rf(x, key):
        return x * rr.uniform(key)
    assert_same(jaxlite.grad(f)(2.0, k), rjax.grad(rf)(2.0, rk))
    # a key as the differentiated argument: TypeError naming the key dtype
    with pytest.raises(TypeError, match=r"key<fry>"):
        jaxlite.grad(f, argnums=1)(2.0, k)
    with pytest.raises(TypeError, match=r"key<fry>"):
        rjax.grad(rf, argnums=1)(2.0, rk)
    # allow_int: the key's gradient is float0 zeros of the key array's shape
    ks, rks = jr.split(k, 3), rr.split(rk, 3)
    got = jaxlite.grad(lambda x, kk: x * jr.uniform(kk[0]), argnums=1, allow_int=True)(1., ks)
    want = rjax.grad(lambda x, kk: x * rr.uniform(kk[0]), argnums=1, allow_int=True)(1., rks)
    assert got.shape == want.shape == (3,) and got.dtype == want.dtype == \
        jaxlite.dtypes.float0
    # vjp and jvp: float0 (co)tangents of the keys' shape
    _, pb = jaxlite.vjp(f, 1.0, k)
    _, rpb = rjax.vjp(rf, 1.0, rk)
    (gx, gk), (wx, wk) = pb(1.0), rpb(1.0)
    assert_same(gx, wx)
    assert gk.shape == wk.shape == () and gk.dtype == wk.dtype
    t0 = np.zeros((), jaxlite.dtypes.float0)
    got = jaxlite.jvp(lambda x, kk: (x * jr.uniform(kk), kk), (1.0, k), (1.0, t0))
    want = rjax.jvp(lambda x, kk: (x * rr.uniform(kk), kk), (1.0, rk), (1.0, t0))
    assert_same(got[0][0], want[0][0])
    assert_same(got[0][1], want[0][1])
    assert_same(got[1][0], want[1][0])
    assert got[1][1].shape == want[1][1].shape == () and got[1][1].dtype == jaxlite.dtypes.float0
    # a tangent that does not fit the key: JAX's error types, naming the key
    for bad, err in [(np.zeros((2,), jaxlite.dtypes.float0), ValueError),
                     (np.zeros((), np.float32), TypeError),
                     (np.zeros((2,), np.uint32), TypeError)]:
        with pytest.raises(err, match=r"key array"):
            jaxlite.jvp(f, (1.0, k), (1.0, bad))
        with pytest.raises(err):
            rjax.jvp(rf, (1.0, rk), (1.0, bad))
    _, pb = jaxlite.vjp(lambda kk: (kk, 1.0), k)
    with pytest.raises(ValueError, match=r"cotangent of a key array of shape \(\)"):
        pb((np.zeros((2,), jaxlite.dtypes.float0), 1.0))
    # structures of (co)tangent mismatches print keys as leaves
    with pytest.raises(TypeError, match=r"PyTreeDef\(\(\*, \*\)\)"):
        jaxlite.jvp(f, (1.0, k), (1.0, None))


# ---- key dtypes (item 2) -------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_key_dtypes_are_jax(rjax, rr, impl):
    d, rd = jr.key(0, impl=impl).dtype, rr.key(0, impl=impl).dtype
    assert str(d) == str(rd) and repr(d) == repr(rd) and d.name == rd.name
    assert d.type is jaxlite.dtypes.prng_key and rd.type is rjax.dtypes.prng_key
    assert d._impl is d.impl and str(d._impl) == str(rd._impl)
    assert d._impl.name == rd._impl.name == impl
    assert d.itemsize == rd.itemsize
    subs = [jaxlite.dtypes.prng_key, jaxlite.dtypes.extended, np.generic, np.integer,
            np.unsignedinteger, np.uint32, np.number, np.floating, np.inexact, np.bool_]
    rsubs = [rjax.dtypes.prng_key, rjax.dtypes.extended] + subs[2:]
    for a, b in zip(subs, rsubs):
        assert jnp.issubdtype(d, a) == rjax.numpy.issubdtype(rd, b), a
        assert jaxlite.dtypes.issubdtype(d, a) == rjax.dtypes.issubdtype(rd, b), a
        assert jnp.issubdtype(a, jaxlite.dtypes.prng_key) == \
            rjax.numpy.issubdtype(b, rjax.dtypes.prng_key), a
    assert jnp.issubdtype(d, jaxlite.dtypes.prng_key) and jnp.issubdtype(
        d, jaxlite.dtypes.extended)
    assert jnp.issubdtype(jaxlite.dtypes.prng_key, jaxlite.dtypes.extended)
    assert not jnp.issubdtype(jaxlite.dtypes.extended, jaxlite.dtypes.prng_key)
    assert not jnp.issubdtype(jaxlite.dtypes.float0, jaxlite.dtypes.extended)
    assert not rjax.numpy.issubdtype(rjax.dtypes.float0, rjax.dtypes.extended)
    for other in IMPLS:
        od, rod = jr.key_dtype(other), rr.key_dtype(other)
        assert jnp.issubdtype(d, od) == rjax.numpy.issubdtype(rd, rod) == (other == impl)
        assert (d == od) == (rd == rod)
    # not equal to its name, nor to a NumPy dtype; NumPy cannot convert it
    assert (d == str(d)) is (rd == str(rd)) is False
    assert d != np.uint32 and rd != np.uint32
    with pytest.raises(TypeError):
        np.dtype(d)
    with pytest.raises(TypeError):
        jnp.issubdtype(d, str(d))
    with pytest.raises(TypeError):
        rjax.numpy.issubdtype(rd, str(rd))
    assert hash(d) == hash(jr.key_dtype(impl))


# ---- methods key arrays refuse (item 3) ----------------------------------------------

_REFUSED = ["all", "any", "argmax", "argmin", "argpartition", "argsort", "astype",
            "byteswap", "choose", "clip", "compress", "conj", "conjugate", "cumprod",
            "cumsum", "diagonal", "dot", "item", "max", "mean", "min", "nonzero", "prod",
            "ptp", "repeat", "round", "searchsorted", "sort", "std", "sum", "to_device",
            "trace", "var", "view"]


def _outcome(fn):
    try:
        fn()
    except Exception as e:          # noqa: BLE001 - the type and text are compared
        return type(e).__name__, str(e)
    return "ok", ""


@pytest.mark.parametrize("name", _REFUSED)
def test_refused_methods_raise_jax_error(rr, name):
    k, rk = jr.split(jr.key(0), 3), rr.split(rr.key(0), 3)
    args = {"astype": (np.float32,), "view": (np.uint32,), "dot": (None,), "clip": (0, 1),
            "choose": ([0],), "compress": ([True],), "repeat": (2,),
            "searchsorted": (0,), "to_device": (None,), "argpartition": (1,)}.get(name, ())
    got = _outcome(lambda: getattr(k, name)(*args))
    want = _outcome(lambda: getattr(rk, name)(*args))
    assert got == want == ("NotImplementedError", f"Cannot call abstract method {name}")


@pytest.mark.parametrize("name", ["real", "imag", "flat", "mT"])
def test_refused_properties_raise_jax_error(rr, name):
    got = _outcome(lambda: getattr(jr.key(0), name))
    want = _outcome(lambda: getattr(rr.key(0), name))
    assert got == want == ("NotImplementedError", f"Cannot call abstract method {name}")


@pytest.mark.parametrize("shape", [(), (3,)])
def test_arithmetic_and_conversion_refusals_are_jax(rr, shape):
    k = jr.split(jr.key(0), shape) if shape else jr.key(0)
    rk = rr.split(rr.key(0), shape) if shape else rr.key(0)
    ops = [lambda a: a + 1, lambda a: 1 + a, lambda a: a * a, lambda a: -a, lambda a: abs(a),
           lambda a: ~a, lambda a: a < a, lambda a: a & 1, lambda a: a % 2, lambda a: a == 1,
           lambda a: float(a), lambda a: bool(a)]
    for op in ops:
        got, want = _outcome(lambda: op(k)), _outcome(lambda: op(rk))
        assert got == want and got[0] == "TypeError", (got, want)
    # JAX fails on these with an internal error (an AssertionError for a 1-d matmul, a
    # dtype conversion's message for power); jaxlite names the operation and the dtype
    for op, name in [(lambda a: a ** 2, "power"), (lambda a: a @ a, "dot_general")]:
        got = _outcome(lambda: op(k))
        assert got[0] == "TypeError" and name in got[1] and "key<fry>" in got[1]
    got, want = _outcome(lambda: np.asarray(k)), _outcome(lambda: np.asarray(rk))
    assert got == want and got[0] == "TypeError"
    for name in ("tolist", "__float__", "__index__"):
        assert _outcome(lambda: getattr(k, name))[0] == \
            _outcome(lambda: getattr(rk, name))[0] == "AttributeError"


def test_shard_map_over_keys_is_jax(rjax, rr):
    n = len(jaxlite.devices())
    mesh = jaxlite.make_mesh((n,), ("x",), axis_types=(jaxlite.sharding.AxisType.Auto,))
    P = jaxlite.sharding.PartitionSpec
    ks, rks = jr.split(jr.key(5), 2 * n), rr.split(rr.key(5), 2 * n)
    f = jaxlite.shard_map(lambda k: (jaxlite.vmap(jr.uniform)(k), jr.split(k[0])[None]),
                          mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    bits, split = f(ks)
    assert_same(bits, rjax.vmap(rr.uniform)(rks))
    assert_same(split, rjax.vmap(lambda k: rr.split(k)[None])(rks[::2]).reshape(n, 2))
    assert jaxlite.tree.leaves(split) == [split]


def test_data_view_flattens_keys_to_their_data():
    """The transformations' view (tree_util.data_*): the same leaves in the same order as
    the users' view, a key's data in its key's place, rebuilt into keys by the treedef."""
    from jaxlite import tree_util as tu
    k, ks = jr.key(4, impl="rbg"), jr.split(jr.key(4), 3)
    tree = {"a": k, "b": [ks, 2.0]}
    leaves, tdef = tu.data_flatten(tree)
    assert [np.asarray(x).tolist() for x in leaves] == [
        np.asarray(jr.key_data(k)).tolist(), np.asarray(jr.key_data(ks)).tolist(), 2.0]
    assert len(leaves) == len(tu.tree_leaves(tree)) == tdef.num_leaves == 3
    back = tu.tree_unflatten(tdef, leaves)
    assert_same(back["a"], k)
    assert back["a"].dtype == k.dtype
    assert_same(back["b"][0], ks)
    assert repr(tdef) == repr(tu.tree_structure(tree)) == "PyTreeDef({'a': *, 'b': [*, *]})"
    assert tdef != tu.tree_structure(tree)      # the data view's rebuilds keys
    assert tu.data_leaves(k)[0].shape == (4,) and tu.data_structure(k).num_leaves == 1
    doubled = tu.data_map(lambda x: x * 2, {"a": np.uint32(3), "k": ks})
    assert np.asarray(jr.key_data(doubled["k"])).tolist() == (
        np.asarray(jr.key_data(ks)) * 2).tolist()
    for takes_path, pred in [(False, lambda x: isinstance(x, list)),
                             (True, lambda p, x: isinstance(x, list))]:
        pairs, tdef = tu.data_flatten_with_path(tree, is_leaf=pred,
                                                is_leaf_takes_path=takes_path)
        assert [tu.keystr(p) for p, _ in pairs] == ["['a']", "['b']"]
        assert pairs[0][1].dtype == np.uint32 and pairs[0][1].shape == (4,)
        assert isinstance(pairs[1][1], list)
