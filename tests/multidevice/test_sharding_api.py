"""The ``jax.sharding`` API over 8 CPU devices, against real JAX 0.10.2 (the oracle):
PartitionSpec, Mesh, AbstractMesh, make_mesh, NamedSharding, SingleDeviceSharding's
helpers, and the current mesh (set_mesh, get_mesh, get_abstract_mesh, use_abstract_mesh).
Reprs, device index maps, shard shapes, equality/hash tables and errors (type and text)
are compared with what JAX returns for the same arguments.
"""
from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.sharding as jls

MESHES = [((8,), ("x",)), ((4, 2), ("x", "y")), ((2, 4), ("x", "y")),
          ((2, 2, 2), ("x", "y", "z")), ((1, 8), ("x", "y")), ((8, 1), ("a", "b")),
          ((4,), ("x",)), ((1,), ("x",))]

# spec arguments valid on every mesh whose axes include the names they use
SPEC_ARGS = [(), (None,), ("x",), ("x", None), (None, "x"), (("x",),), ((),),
             (["x"],), ("y",), ("x", "y"), ("y", "x"), (("x", "y"),), (("y", "x"),),
             (("x", "y"), None), (None, ("x", "y")), ("x", ("y", "z")),
             (("x", "y", "z"),), ("z", None, "x"), ("a",), ("a", "b"), (("b", "a"),),
             (None, None, None), ("x", None, None)]

SHAPES = [(8,), (16, 4), (8, 8), (4, 8, 2), (0, 8), (8, 0), (16, 16, 16), (2, 2)]


def _err(f):
    """(exception type name, message) of f(), or ('ok', result)."""
    try:
        return "ok", f()
    except Exception as e:  # noqa: BLE001  -- compared against JAX's
        return type(e).__name__, str(e)


def _same_err(f_jl, f_jax, *, exact=True):
    r_jl, r_jax = _err(f_jl), _err(f_jax)
    assert r_jl[0] == r_jax[0], (r_jl, r_jax)
    if r_jax[0] != "ok" and exact:
        assert r_jl[1] == r_jax[1], (r_jl, r_jax)
    return r_jl, r_jax


def _meshes(rjax, shape, names, types=None):
    """The same mesh in jaxlite and in JAX (via make_mesh)."""
    jl_types = None if types is None else tuple(getattr(jls.AxisType, t) for t in types)
    jx_types = None if types is None else tuple(getattr(rjax.sharding.AxisType, t)
                                                for t in types)
    return (jaxlite.make_mesh(shape, names, jl_types),
            rjax.make_mesh(shape, names, jx_types))


def _by_id(index_map):
    return {d.id: idx for d, idx in index_map.items()}


def _ids(devs):
    return [d.id for d in devs]


# ---- PartitionSpec -----------------------------------------------------------------------

@pytest.mark.parametrize("args", SPEC_ARGS + [(1,), (0.5,), ((None, None),), (("x", None),),
                                              ([],), ([None],)])
def test_pspec_repr_len_iter(rjax8, args):
    a, b = jaxlite.P(*args), rjax8.P(*args)
    assert repr(a) == repr(b) and str(a) == str(b)
    assert len(a) == len(b)
    assert tuple(a) == tuple(b) == a.partitions == b.partitions
    assert [a[i] for i in range(len(a))] == [b[i] for i in range(len(b))]
    assert a.unreduced == b.unreduced == frozenset() and a.reduced == b.reduced


def test_pspec_alias_and_type(rjax8):
    assert jaxlite.P is jls.PartitionSpec is jls.P
    assert jls.PartitionSpec is jaxlite.sharding.PartitionSpec
    assert isinstance(jaxlite.P("x"), tuple) == isinstance(rjax8.P("x"), tuple)
    assert jaxlite.tree_util.tree_leaves([jaxlite.P("x", None)]) == [jaxlite.P("x", None)]
    with pytest.raises(TypeError, match="Subclassing"):
        class Sub(jaxlite.P):  # noqa: F841
            pass
    with pytest.raises(AttributeError, match="cannot assign"):
        jaxlite.P("x").unreduced = frozenset()


def test_pspec_equality_table(rjax8):
    """== and hash over all pairs of specs (and against tuples), as in JAX: interned,
    equality is identity of the canonical form."""
    for a, b in itertools.product(SPEC_ARGS, repeat=2):
        eq_jl = jaxlite.P(*a) == jaxlite.P(*b)
        eq_jax = rjax8.P(*a) == rjax8.P(*b)
        assert eq_jl == eq_jax, (a, b)
        assert (jaxlite.P(*a) != jaxlite.P(*b)) == (not eq_jax)
        if eq_jl:
            assert hash(jaxlite.P(*a)) == hash(jaxlite.P(*b))
    for a in SPEC_ARGS:
        t = tuple(a)
        assert (jaxlite.P(*a) == t) == (rjax8.P(*a) == t), a
        assert (t == jaxlite.P(*a)) == (t == rjax8.P(*a)), a
    assert (jaxlite.P("x", None) == jaxlite.P("x")) is False
    assert (jaxlite.P(("x",)) == jaxlite.P("x")) is True


@pytest.mark.parametrize("args,kw", [
    (("x",), {"unreduced": {"y"}}), ((), {"unreduced": {"y"}}),
    (("x",), {"unreduced": {"y"}, "reduced": {"z"}}), ((), {"reduced": {"z"}}),
    ((("x",),), {"unreduced": frozenset({"y"})}), ((None, "x"), {"reduced": {"y", "z"}}),
])
def test_pspec_unreduced_reduced(rjax8, args, kw):
    a, b = jaxlite.P(*args, **kw), rjax8.P(*args, **kw)
    if len(kw.get("reduced", ())) < 2:        # the order of a set of 2 is not fixed
        assert repr(a) == repr(b)
    assert a.unreduced == b.unreduced and a.reduced == b.reduced
    assert a.partitions == b.partitions and len(a) == len(b)
    _same_err(lambda: a[0], lambda: b[0])
    _same_err(lambda: tuple(a), lambda: tuple(b))
    assert a == jaxlite.P(*args, **kw)
    assert (a == jaxlite.P(*args)) == (b == rjax8.P(*args))


@pytest.mark.parametrize("args,kw", [
    ((("x", ("y",)),), {}), ((["x", ["y"]],), {}), (({"x"},), {}),
    (("x",), {"unreduced": ["y"]}), (("x",), {"reduced": ("y",)}),
    (("x",), {"unreduced": {"x"}}), (("x",), {"reduced": {"x"}}),
    ((), {"unreduced": {"y"}, "reduced": {"y"}}), ((), {"unreduced": {None}}),
    ((), {"reduced": {None}}),
])
def test_pspec_errors(rjax8, args, kw):
    r_jl, _ = _same_err(lambda: jaxlite.P(*args, **kw), lambda: rjax8.P(*args, **kw))
    assert r_jl[0] != "ok"


def test_pspec_methods(rjax8):
    P, Q = jaxlite.P, rjax8.P
    assert repr(P("x") + P("y")) == repr(Q("x") + Q("y"))
    assert repr(P("x") + ("y", None)) == repr(Q("x") + ("y", None))
    assert repr(("y",) + P("x")) == repr(("y",) + Q("x"))
    assert repr(P("x", unreduced={"z"}) + P("y", reduced={"w"})) == \
        repr(Q("x", unreduced={"z"}) + Q("y", reduced={"w"}))
    _same_err(lambda: P("x", unreduced={"z"}) + ("y",), lambda: Q("x", unreduced={"z"}) + ("y",))
    _same_err(lambda: ("y",) + P("x", reduced={"z"}), lambda: ("y",) + Q("x", reduced={"z"}))
    for args, v in [(("x", None), None), ((("x",), "y"), "x"), (("x", ("y", "z")), ("y", "z")),
                    (("x",), "q")]:
        _same_err(lambda: P(*args).index(v), lambda: Q(*args).index(v))
        assert P(*args).count(v) == Q(*args).count(v)
    assert repr(P("x").update(partitions=("y", None))) == \
        repr(Q("x").update(partitions=("y", None)))
    assert repr(P("x").update(unreduced={"y"})) == repr(Q("x").update(unreduced={"y"}))
    assert repr(P.UNCONSTRAINED) == repr(Q.UNCONSTRAINED)
    assert repr(P(P.UNCONSTRAINED, "x")) == repr(Q(Q.UNCONSTRAINED, "x"))


@pytest.mark.parametrize("args", SPEC_ARGS + [("UNC", "x")])
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
def test_pspec_normalized(rjax8, args, ndim):
    """_normalized(ndim) against JAX's own padding of a spec to a rank
    (``_normalized_spec_for_aval``) and its rank check."""
    jl_args = tuple(jaxlite.P.UNCONSTRAINED if a == "UNC" else a for a in args)
    jx_args = tuple(rjax8.P.UNCONSTRAINED if a == "UNC" else a for a in args)
    a, b = jaxlite.P(*jl_args), rjax8.P(*jx_args)
    r_jl, r_jax = _same_err(lambda: a._normalized(ndim),
                            lambda: b._check_compatible_wrt_shape((1,) * ndim))
    if r_jax[0] != "ok":
        return
    want = tuple(() if e is None else e if isinstance(e, tuple) else (e,)
                 for e in b._normalized_spec_for_aval(ndim).partitions)
    assert r_jl[1] == want
    assert all(type(e) is tuple for e in r_jl[1])


def test_pspec_pickle():
    for p in [jaxlite.P("x", None), jaxlite.P(("x", "y")), jaxlite.P("x", unreduced={"y"}),
              jaxlite.P(jaxlite.P.UNCONSTRAINED)]:
        assert pickle.loads(pickle.dumps(p)) is p


# ---- AxisType ----------------------------------------------------------------------------

def test_axis_type(rjax8):
    A, B = jls.AxisType, rjax8.sharding.AxisType
    assert [t.name for t in A] == [t.name for t in B]
    for t in A:
        u = getattr(B, t.name)
        assert repr(t) == repr(u) and str(t) == str(u)
        assert t.value == u.value
        assert repr((t, t)) == repr((u, u))


# ---- Mesh --------------------------------------------------------------------------------

MESH_ATTRS = ["axis_names", "axis_types", "axis_sizes", "size", "empty", "shape",
              "shape_tuple", "is_multi_process", "auto_axes", "explicit_axes",
              "manual_axes", "are_all_axes_auto", "are_all_axes_explicit",
              "are_all_axes_manual", "is_scalar"]


@pytest.mark.parametrize("shape,names", MESHES)
@pytest.mark.parametrize("types", [None, "Auto", "Explicit", "mixed"])
def test_mesh_matches_jax(rjax8, shape, names, types):
    if types == "mixed":
        types = tuple(("Explicit", "Auto", "Manual")[i % 3] for i in range(len(names)))
    elif types is not None:
        types = (types,) * len(names)
    a, b = _meshes(rjax8, shape, names, types)
    assert repr(a) == repr(b) and str(a) == str(b)
    for attr in MESH_ATTRS:
        va, vb = getattr(a, attr), getattr(b, attr)
        assert repr(va) == repr(vb), attr
    assert type(a.shape) is type(b.shape)
    assert isinstance(a.devices, np.ndarray) and a.devices.dtype == object
    assert a.devices.shape == b.devices.shape
    assert not a.devices.flags.writeable
    assert _ids(a.devices.flat) == _ids(b.devices.flat)
    np.testing.assert_array_equal(a.device_ids, b.device_ids)
    assert a.device_ids.dtype == b.device_ids.dtype
    assert _ids(a.local_devices) == _ids(b.local_devices)
    assert repr(a.local_mesh) == repr(b.local_mesh)
    assert repr(a.abstract_mesh) == repr(b.abstract_mesh)
    assert repr(a.abstract_mesh.abstract_device) == repr(b.abstract_mesh.abstract_device)
    assert a.abstract_mesh.size == b.abstract_mesh.size
    assert a.abstract_mesh is a.abstract_mesh.abstract_mesh


def test_mesh_constructor_and_identity(rjax8):
    jd, xd = jaxlite.devices(), rjax8.devices()
    cases = [
        lambda d, S: S.Mesh(np.array(d).reshape(4, 2), ("x", "y")),
        lambda d, S: S.Mesh([d[:4], d[4:]], ("x", "y")),
        lambda d, S: S.Mesh(d, "x"),
        lambda d, S: S.Mesh(d[::-1], ("x",)),
        lambda d, S: S.Mesh([d[0], d[0]], ("x",)),
        lambda d, S: S.Mesh(np.array(d).reshape(2, 2, 2), ("a", "b", "c"),
                            (S.AxisType.Explicit,) * 3),
        lambda d, S: S.Mesh(d, ("x",), S.AxisType.Explicit),
        lambda d, S: S.Mesh(np.empty((), dtype=object), ()),
        lambda d, S: S.Mesh([], ("x",)),
        # errors
        lambda d, S: S.Mesh(d, ("x", None)),
        lambda d, S: S.Mesh(d, (None,)),
        lambda d, S: S.Mesh(d, ("x", "y")),
        lambda d, S: S.Mesh(np.array(d).reshape(4, 2), ("x",)),
        lambda d, S: S.Mesh(d, ("x",), ("Auto",)),
        lambda d, S: S.Mesh(d, ("x",), (S.AxisType.Auto, S.AxisType.Auto)),
    ]
    for i, f in enumerate(cases):
        r_jl, r_jax = _same_err(lambda: f(jd, jls), lambda: f(xd, rjax8.sharding))
        if r_jax[0] == "ok":
            assert repr(r_jl[1]) == repr(r_jax[1]), i
            assert str(r_jl[1]) == str(r_jax[1]), i
            assert _ids(d for d in r_jl[1].devices.flat if d is not None) == \
                _ids(d for d in r_jax[1].devices.flat if d is not None)
    # equality is identity of the interned mesh: the same table as JAX's
    makers = [lambda M, S: M.make_mesh((4, 2), ("x", "y")),
              lambda M, S: M.make_mesh((4, 2), ("x", "y"), (S.AxisType.Auto,) * 2),
              lambda M, S: S.Mesh(np.array(M.devices()).reshape(4, 2), ("x", "y")),
              lambda M, S: M.make_mesh((4, 2), ("x", "z")),
              lambda M, S: M.make_mesh((2, 4), ("x", "y")),
              lambda M, S: M.make_mesh((4, 2), ("x", "y"), devices=M.devices()[::-1]),
              lambda M, S: M.make_mesh((8,), ("x",)),
              lambda M, S: M.make_mesh((4, 2), ("x", "y")).abstract_mesh]
    jl = [f(jaxlite, jls) for f in makers]
    jx = [f(rjax8, rjax8.sharding) for f in makers]
    for i, j in itertools.product(range(len(makers)), repeat=2):
        assert (jl[i] == jl[j]) == (jx[i] == jx[j]), (i, j)
        assert (jl[i] is jl[j]) == (jx[i] is jx[j]), (i, j)
    with pytest.raises(AttributeError):
        jl[0].axis_names = ("a", "b")


def test_empty_mesh(rjax8):
    a, b = jls.get_mesh(), rjax8.sharding.get_mesh()
    assert repr(a) == repr(b) and str(a) == str(b)
    assert (a.empty, a.size, a.axis_names, a.shape) == (b.empty, b.size, b.axis_names, b.shape)
    assert a.devices.shape == b.devices.shape == () and a.devices[()] is None
    assert repr(a.abstract_mesh) == repr(b.abstract_mesh)
    assert a.abstract_mesh is jls.get_abstract_mesh()


def test_mesh_context_manager_warns(rjax8):
    m = jaxlite.make_mesh((8,), ("x",))
    with pytest.warns(DeprecationWarning, match="set_mesh"):
        with m as entered:
            assert entered is m
            # as in JAX, the legacy context does not set the current mesh
            assert jls.get_mesh().empty
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jls.get_mesh().empty


def test_mesh_pickle():
    m = jaxlite.make_mesh((4, 2), ("x", "y"))
    assert pickle.loads(pickle.dumps(m)) is m
    am = m.abstract_mesh
    assert pickle.loads(pickle.dumps(am)) is am


# ---- AbstractMesh ------------------------------------------------------------------------

@pytest.mark.parametrize("sizes,names,types", [
    ((2, 4), ("a", "b"), None), ((8,), ("x",), ("Explicit",)), ((), (), None),
    ((2, 2, 2), ("x", "y", "z"), ("Auto", "Explicit", "Manual")), ((1,), ("x",), "Auto"),
])
def test_abstract_mesh(rjax8, sizes, names, types):
    def conv(S):
        if types is None:
            return None
        if isinstance(types, str):
            return getattr(S.AxisType, types)
        return tuple(getattr(S.AxisType, t) for t in types)
    a = jls.AbstractMesh(sizes, names, conv(jls))
    b = rjax8.sharding.AbstractMesh(sizes, names, conv(rjax8.sharding))
    assert repr(a) == repr(b) and str(a) == str(b)
    for attr in ["axis_sizes", "axis_names", "axis_types", "size", "empty", "shape",
                 "shape_tuple", "auto_axes", "explicit_axes", "manual_axes",
                 "abstract_device"]:
        assert repr(getattr(a, attr)) == repr(getattr(b, attr)), attr
    assert a is jls.AbstractMesh(sizes, names, conv(jls))
    assert a.abstract_mesh is a
    for attr in ["devices", "device_ids", "local_devices", "local_mesh"]:
        _same_err(lambda: getattr(a, attr), lambda: getattr(b, attr))
    _same_err(lambda: a.__enter__(), lambda: b.__enter__())
    with_dev_a = a.update(abstract_device=jls.AbstractDevice("cpu", None, "cpu"))
    with_dev_b = b.update(abstract_device=rjax8.sharding.AbstractDevice("cpu", None, "cpu"))
    assert repr(with_dev_a) == repr(with_dev_b)
    if names:
        na = a.update_axis_types({names[0]: jls.AxisType.Explicit})
        nb = b.update_axis_types({names[0]: rjax8.sharding.AxisType.Explicit})
        assert repr(na) == repr(nb)


def test_abstract_mesh_errors(rjax8):
    _same_err(lambda: jls.AbstractMesh([2], ["x"]),
              lambda: rjax8.sharding.AbstractMesh([2], ["x"]), exact=False)
    # JAX makes a mesh whose repr then fails; jaxlite refuses it
    with pytest.raises(ValueError, match="1 axis sizes"):
        jls.AbstractMesh((2,), ("x", "y"))
    _same_err(lambda: jls.AbstractMesh((2,), ("x",), ("Auto",)),
              lambda: rjax8.sharding.AbstractMesh((2,), ("x",), ("Auto",)))


# ---- make_mesh ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8,), (4, 2), (2, 4), (2, 2, 2), (1, 8), (8, 1), (4,),
                                   (3,), (1,), (2, 1, 4), [2, 4], (np.int64(2), 4)])
def test_make_mesh_device_order(rjax8, shape):
    names = tuple("abc"[:len(shape)])
    a, b = jaxlite.make_mesh(shape, names), rjax8.make_mesh(shape, names)
    assert repr(a) == repr(b)
    assert _ids(a.devices.flat) == _ids(b.devices.flat)
    np.testing.assert_array_equal(a.device_ids, b.device_ids)
    # explicit devices, in another order
    rev_a = jaxlite.make_mesh(shape, names, devices=jaxlite.devices()[::-1])
    rev_b = rjax8.make_mesh(shape, names, devices=rjax8.devices()[::-1])
    np.testing.assert_array_equal(rev_a.device_ids, rev_b.device_ids)


@pytest.mark.parametrize("args", [
    ((16,), ("x",)), ((3, 3), ("x", "y")), ((2, 2), ("x",)), ((2, "a"), ("x", "y")),
    ((8,), "x"), ((8,), ("x",), "Auto"), ((8,), ("x",), ("Auto", "Auto")),
    ((8,), ("x",), ("Manual",)), ((8,), ("x",), ("bad",)), ((4, 2), ("x", None)),
])
def test_make_mesh_args_and_errors(rjax8, args):
    def conv(S):
        if len(args) < 3:
            return args
        t = args[2]
        if t == ("bad",):
            return args[:2] + (("Auto",),)
        if isinstance(t, str):
            return args[:2] + (getattr(S.AxisType, t),)
        return args[:2] + (tuple(getattr(S.AxisType, x) for x in t),)
    r_jl, r_jax = _same_err(lambda: jaxlite.make_mesh(*conv(jls)),
                            lambda: rjax8.make_mesh(*conv(rjax8.sharding)))
    if r_jax[0] == "ok":
        assert repr(r_jl[1]) == repr(r_jax[1])


# ---- NamedSharding -----------------------------------------------------------------------

def _sharding_pair(rjax, shape, names, spec_args, types=None, **kw):
    ma, mb = _meshes(rjax, shape, names, types)
    jl_args = tuple(jaxlite.P.UNCONSTRAINED if a == "UNC" else a for a in spec_args)
    jx_args = tuple(rjax.P.UNCONSTRAINED if a == "UNC" else a for a in spec_args)
    return (lambda: jaxlite.NamedSharding(ma, jaxlite.P(*jl_args), **kw),
            lambda: rjax.NamedSharding(mb, rjax.P(*jx_args), **kw))


@pytest.mark.parametrize("shape,names", MESHES)
def test_named_sharding_matches_jax(rjax8, shape, names):
    """For every spec valid or not on the mesh: construction errors, repr, replication,
    devices, and for every global shape: shard_shape and devices_indices_map (or the
    same error) as JAX."""
    for spec_args in SPEC_ARGS:
        mk_a, mk_b = _sharding_pair(rjax8, shape, names, spec_args)
        r_jl, r_jax = _same_err(mk_a, mk_b)
        if r_jax[0] != "ok":
            continue
        a, b = r_jl[1], r_jax[1]
        assert repr(a) == repr(b) and str(a) == str(b)
        assert a.is_fully_replicated == b.is_fully_replicated, spec_args
        assert a.num_devices == b.num_devices
        assert a.memory_kind == b.memory_kind
        assert a.is_fully_addressable == b.is_fully_addressable
        assert sorted(_ids(a.device_set)) == sorted(_ids(b.device_set))
        assert sorted(_ids(a.addressable_devices)) == sorted(_ids(b.addressable_devices))
        assert _ids(a._device_assignment) == _ids(b._device_assignment)
        assert isinstance(a._device_assignment, tuple)
        assert a._device_assignment == tuple(a.mesh.devices.flat)
        assert a.mesh is jaxlite.make_mesh(shape, names) and a.spec == jaxlite.P(*spec_args)
        for gshape in SHAPES + [()]:
            s_jl, s_jax = _err(lambda: a.shard_shape(gshape)), _err(lambda: b.shard_shape(gshape))
            if s_jax[0] == "IndexError":
                # JAX's accident for a spec splitting a dimension past the rank; jaxlite
                # raises check_compatible_aval's ValueError
                assert s_jl[0] == "ValueError" and "only valid for values of rank" in s_jl[1]
            else:
                assert s_jl == s_jax, (spec_args, gshape)
            if s_jax[0] == "ok":
                assert s_jl[1] == s_jax[1]
            m_jl, m_jax = _err(lambda: a.devices_indices_map(gshape)), \
                _err(lambda: b.devices_indices_map(gshape))
            assert m_jl[0] == (s_jl[0] if s_jl[0] != "ok" else "ok")
            if m_jax[0] == "ok":
                assert list(m_jl[1]) == list(a._device_assignment)
                assert _by_id(m_jl[1]) == _by_id(m_jax[1]), (spec_args, gshape)
                assert list(_by_id(m_jl[1])) == list(_by_id(m_jax[1]))
                assert _by_id(a.addressable_devices_indices_map(gshape)) == \
                    _by_id(b.addressable_devices_indices_map(gshape))
            else:
                assert m_jl[1] == m_jax[1] or m_jax[0] == "IndexError"


def test_indivisible_error(rjax8):
    mk_a, mk_b = _sharding_pair(rjax8, (4, 2), ("x", "y"), ("x", "y"))
    a, b = mk_a(), mk_b()
    for shape in [(3, 4), (4, 3), (6, 2), (8, 5)]:
        r_jl, _ = _same_err(lambda: a.shard_shape(shape), lambda: b.shard_shape(shape))
        assert r_jl[0] == "IndivisibleError"
        with pytest.raises(ValueError, match="evenly divide"):
            a.devices_indices_map(shape)


@pytest.mark.parametrize("shape,names,spec_args,types", [
    ((4, 2), ("x", "y"), ("z",), None),
    ((4, 2), ("x", "y"), ("x", "x"), None),
    ((4, 2), ("x", "y"), (("x", "y"), "y"), None),
    ((2, 2, 2), ("x", "y", "z"), (("x", "y"), ("z", "x")), None),
    ((4, 2), ("x", "y"), ("x", ("y", "q")), None),
    ((4, 2), ("x", "y"), ("UNC",), None),
    ((4, 2), ("x", "y"), ("UNC", "x"), ("Auto", "Auto")),
    ((4, 2), ("x", "y"), ("UNC",), ("Auto", "Explicit")),
    ((8,), ("x",), ("x",), ("Manual",)),
])
def test_named_sharding_spec_errors(rjax8, shape, names, spec_args, types):
    mk_a, mk_b = _sharding_pair(rjax8, shape, names, spec_args, types)
    r_jl, r_jax = _same_err(mk_a, mk_b)
    if r_jax[0] == "ok":
        assert repr(r_jl[1]) == repr(r_jax[1])
    if r_jax[0] == "DuplicateSpecError":
        with pytest.raises(jls.DuplicateSpecError) as info:
            mk_a()
        assert not isinstance(info.value, ValueError)     # an Exception, as JAX's
        assert info.value.pspec is info.value.pspec and info.value.mesh is not None


def test_named_sharding_unreduced(rjax8):
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    for args, kw in [(("x",), {"unreduced": {"y"}}), ((), {"reduced": {"x"}}),
                     (("x",), {"unreduced": {"z"}}), ((), {"reduced": {"q"}})]:
        r_jl, r_jax = _same_err(lambda: jaxlite.NamedSharding(ma, jaxlite.P(*args, **kw)),
                                lambda: rjax8.NamedSharding(mb, rjax8.P(*args, **kw)))
        if r_jax[0] != "ok":
            continue
        a, b = r_jl[1], r_jax[1]
        assert repr(a) == repr(b)
        assert a.is_fully_replicated == b.is_fully_replicated
        assert a.shard_shape((8, 4)) == b.shard_shape((8, 4))
        _same_err(lambda: a.devices_indices_map((8, 4)), lambda: b.devices_indices_map((8, 4)),
                  exact=False)
    # unreduced on an Auto axis
    ma2, mb2 = _meshes(rjax8, (4, 2), ("x", "y"), ("Auto", "Explicit"))
    _same_err(lambda: jaxlite.NamedSharding(ma2, jaxlite.P(unreduced={"x"})),
              lambda: rjax8.NamedSharding(mb2, rjax8.P(unreduced={"x"})))


def test_named_sharding_bad_arguments(rjax8):
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    # a plain tuple as spec: AttributeError as JAX's; None: TypeError as JAX's
    _same_err(lambda: jaxlite.NamedSharding(ma, ("x",)),
              lambda: rjax8.NamedSharding(mb, ("x",)), exact=False)
    _same_err(lambda: jaxlite.NamedSharding(ma, None),
              lambda: rjax8.NamedSharding(mb, None), exact=False)
    _same_err(lambda: jaxlite.NamedSharding("m", jaxlite.P("x")),
              lambda: rjax8.NamedSharding("m", rjax8.P("x")), exact=False)
    r_jl, _ = _same_err(lambda: jaxlite.NamedSharding(ma, jaxlite.P("x"), memory_kind="bogus"),
                        lambda: rjax8.NamedSharding(mb, rjax8.P("x"), memory_kind="bogus"),
                        exact=False)
    assert "bogus" in r_jl[1]
    a = jaxlite.NamedSharding(ma, jaxlite.P("x"), memory_kind="device")
    b = rjax8.NamedSharding(mb, rjax8.P("x"), memory_kind="device")
    assert repr(a) == repr(b)
    assert a == jaxlite.NamedSharding(ma, jaxlite.P("x"))
    # jaxlite devices have one memory: the host kinds JAX's CPU devices also have are refused
    with pytest.raises(ValueError, match="pinned_host"):
        jaxlite.NamedSharding(ma, jaxlite.P("x"), memory_kind="pinned_host")


def test_named_sharding_rank_errors(rjax8):
    mk_a, mk_b = _sharding_pair(rjax8, (4, 2), ("x", "y"), ("x", "y"))
    a, b = mk_a(), mk_b()
    for shape in [(8,), ()]:
        _same_err(lambda: a.check_compatible_aval(shape), lambda: b.check_compatible_aval(shape))
        # JAX raises an IndexError (list index out of range) here; jaxlite the ValueError of
        # check_compatible_aval
        with pytest.raises(ValueError, match="only valid for values of rank at least 2"):
            a.shard_shape(shape)
        with pytest.raises(ValueError, match="only valid for values of rank at least 2"):
            a.devices_indices_map(shape)


def test_named_sharding_equality_table(rjax8):
    mesh_args = [((4, 2), ("x", "y"), None), ((4, 2), ("x", "y"), ("Auto", "Auto")),
                 ((2, 4), ("x", "y"), None), ((8,), ("x",), None)]
    specs = [(), ("x",), ("x", None), (("x",),), ("y",), (("x", "y"),), (None, "x")]
    jl, jx = [], []
    for shape, names, types in mesh_args:
        for s in specs:
            mk_a, mk_b = _sharding_pair(rjax8, shape, names, s, types)
            r = _same_err(mk_a, mk_b)
            if r[1][0] == "ok":
                jl.append(r[0][1])
                jx.append(r[1][1])
    assert len(jl) > 20
    for i, j in itertools.product(range(len(jl)), repeat=2):
        assert (jl[i] == jl[j]) == (jx[i] == jx[j]), (jl[i], jl[j])
        if jl[i] == jl[j]:
            assert hash(jl[i]) == hash(jl[j])
    single = jls.SingleDeviceSharding(jaxlite.devices()[0])
    assert (jl[0] == single) == (jx[0] == rjax8.sharding.SingleDeviceSharding(rjax8.devices()[0]))
    assert len({*jl}) == len({*jx})


def test_is_equivalent_to_table(rjax8):
    cases = [((4, 2), ("x", "y"), ()), ((4, 2), ("x", "y"), ("x",)),
             ((4, 2), ("x", "y"), ("x", None)), ((4, 2), ("x", "y"), (("x", "y"),)),
             ((4, 2), ("x", "y"), ("y",)), ((4, 2), ("x", "y"), ("y", "x")),
             ((4, 2), ("x", "y"), (None, "x")), ((4, 2), ("a", "b"), ("a",)),
             ((8,), ("x",), ("x",)), ((8,), ("x",), ()), ((1, 8), ("x", "y"), ("y",)),
             ((1, 8), ("x", "y"), (("x", "y"),)), ((8, 1), ("x", "y"), ("x",)),
             ((8, 1), ("x", "y"), (("x", "y"), None)), ((2, 2, 2), ("x", "y", "z"),
                                                       (("x", "y"), "z")),
             ((2, 4), ("x", "y"), (("x", "y"),)), ((4,), ("x",), ("x",)),
             ((1,), ("x",), ()), ((1,), ("x",), ("x",))]
    jl = [_sharding_pair(rjax8, *c)[0]() for c in cases]
    jx = [_sharding_pair(rjax8, *c)[1]() for c in cases]
    jl.append(jls.SingleDeviceSharding(jaxlite.devices()[0]))
    jx.append(rjax8.sharding.SingleDeviceSharding(rjax8.devices()[0]))
    jl.append(jls.SingleDeviceSharding(jaxlite.devices()[1]))
    jx.append(rjax8.sharding.SingleDeviceSharding(rjax8.devices()[1]))
    for ndim in (1, 2, 3):
        for i, j in itertools.product(range(len(jl)), repeat=2):
            r_jl = _err(lambda: jl[i].is_equivalent_to(jl[j], ndim))
            r_jx = _err(lambda: jx[i].is_equivalent_to(jx[j], ndim))
            if r_jx[0] == "IndexError":       # a spec longer than ndim
                assert r_jl[0] == "ValueError"
                continue
            assert r_jl == r_jx, (ndim, jl[i], jl[j])


def test_named_sharding_update_and_memory_kind(rjax8):
    mk_a, mk_b = _sharding_pair(rjax8, (4, 2), ("x", "y"), ("x",))
    a, b = mk_a(), mk_b()
    assert repr(a.with_memory_kind("device")) == repr(b.with_memory_kind("device"))
    assert repr(a.update(spec=("y",))) == repr(b.update(spec=("y",)))
    assert repr(a.update(spec=jaxlite.P(None, "x"))) == repr(b.update(spec=rjax8.P(None, "x")))
    m8a, m8b = _meshes(rjax8, (8,), ("z",))
    assert repr(a.update(mesh=m8a, spec=("z",))) == repr(b.update(mesh=m8b, spec=("z",)))
    assert hasattr(a, "with_spec") == hasattr(b, "with_spec")
    _same_err(lambda: a.update(spec=("q",)), lambda: b.update(spec=("q",)))


def test_named_sharding_abstract_mesh(rjax8):
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    a = jaxlite.NamedSharding(ma.abstract_mesh, jaxlite.P("x"))
    b = rjax8.NamedSharding(mb.abstract_mesh, rjax8.P("x"))
    assert repr(a) == repr(b)
    assert a.memory_kind == b.memory_kind and a.num_devices == b.num_devices
    assert a.shard_shape((8, 4)) == b.shard_shape((8, 4))
    assert a.is_fully_replicated == b.is_fully_replicated
    for attr in ["device_set", "_device_assignment", "addressable_devices",
                 "is_fully_addressable"]:
        _same_err(lambda: getattr(a, attr), lambda: getattr(b, attr))
    _same_err(lambda: a.devices_indices_map((8, 4)), lambda: b.devices_indices_map((8, 4)))
    assert (a == jaxlite.NamedSharding(ma, jaxlite.P("x"))) == \
        (b == rjax8.NamedSharding(mb, rjax8.P("x")))


def test_named_sharding_pickle():
    m = jaxlite.make_mesh((4, 2), ("x", "y"))
    s = jaxlite.NamedSharding(m, jaxlite.P(("x", "y")))
    t = pickle.loads(pickle.dumps(s))
    assert t == s and t.mesh is m and t.spec is s.spec


# ---- SingleDeviceSharding helpers ----------------------------------------------------------

def test_single_device_sharding_helpers(rjax8):
    for i in (0, 5):
        a = jls.SingleDeviceSharding(jaxlite.devices()[i])
        b = rjax8.sharding.SingleDeviceSharding(rjax8.devices()[i])
        assert repr(a) == repr(b)
        assert _ids(a._device_assignment) == _ids(b._device_assignment)
        assert isinstance(a._device_assignment, tuple)
        for shape in [(), (3,), (3, 4), (0, 2)]:
            assert a.shard_shape(shape) == b.shard_shape(shape)
            assert _by_id(a.devices_indices_map(shape)) == _by_id(b.devices_indices_map(shape))
            assert _by_id(a.addressable_devices_indices_map(shape)) == \
                _by_id(b.addressable_devices_indices_map(shape))
        assert a.is_equivalent_to(a, 2) == b.is_equivalent_to(b, 2)
        assert repr(jls.make_single_device_sharding(jaxlite.devices()[i])) == \
            repr(rjax8.sharding.make_single_device_sharding(rjax8.devices()[i]))


# ---- the current mesh --------------------------------------------------------------------

def test_set_mesh_get_mesh(rjax8):
    for lib, S in ((jaxlite, jls), (rjax8, rjax8.sharding)):
        assert S.get_mesh().empty and S.get_abstract_mesh().empty
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    m8a, m8b = _meshes(rjax8, (8,), ("z",))
    try:
        ra, rb = jaxlite.set_mesh(ma), rjax8.set_mesh(mb)          # a plain call stays set
        assert type(ra).__name__ == type(rb).__name__ == "set_mesh"
        assert jls.get_mesh() is ma and repr(jls.get_mesh()) == repr(rjax8.sharding.get_mesh())
        assert repr(jls.get_abstract_mesh()) == repr(rjax8.sharding.get_abstract_mesh())
        with jaxlite.set_mesh(m8a) as xa, rjax8.set_mesh(m8b) as xb:
            assert xa is None and xb is None
            assert jls.get_mesh() is m8a
            assert repr(jls.get_abstract_mesh()) == repr(rjax8.sharding.get_abstract_mesh())
            with jaxlite.set_mesh(None), rjax8.set_mesh(None):
                assert jls.get_mesh().empty and rjax8.sharding.get_mesh().empty
            assert jls.get_mesh() is m8a
        assert jls.get_mesh() is ma
    finally:
        jaxlite.set_mesh(None)
        rjax8.set_mesh(None)
    assert jls.get_mesh().empty and jls.get_abstract_mesh().empty
    assert jls.set_mesh is jaxlite.set_mesh


def test_set_mesh_errors(rjax8):
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    mma, mmb = _meshes(rjax8, (8,), ("x",), ("Manual",))
    for fa, fb in [(lambda: jaxlite.set_mesh("m"), lambda: rjax8.set_mesh("m")),
                   (lambda: jaxlite.set_mesh(mma), lambda: rjax8.set_mesh(mmb))]:
        r_jl, _ = _same_err(fa, fb)
        assert r_jl[0] == "ValueError"
    r_jl, _ = _same_err(lambda: jaxlite.set_mesh(ma.abstract_mesh),
                        lambda: rjax8.set_mesh(mb.abstract_mesh), exact=False)
    assert r_jl[0] == "ValueError"
    # under jit
    _same_err(lambda: jaxlite.jit(lambda x: jls.get_mesh())(1.0),
              lambda: rjax8.jit(lambda x: rjax8.sharding.get_mesh())(1.0))
    _same_err(lambda: jaxlite.jit(lambda x: jaxlite.set_mesh(ma))(1.0),
              lambda: rjax8.jit(lambda x: rjax8.set_mesh(mb))(1.0))
    assert jls.get_mesh().empty


def test_get_abstract_mesh_under_jit(rjax8):
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    seen = {}

    def f_jl(x):
        seen["jl"] = repr(jls.get_abstract_mesh())
        return x

    def f_jx(x):
        seen["jx"] = repr(rjax8.sharding.get_abstract_mesh())
        return x
    with jaxlite.set_mesh(ma), rjax8.set_mesh(mb):
        jaxlite.jit(f_jl)(1.0)
        rjax8.jit(f_jx)(1.0)
    assert seen["jl"] == seen["jx"]


def test_use_abstract_mesh(rjax8):
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    with jls.use_abstract_mesh(ma.abstract_mesh) as xa, \
            rjax8.sharding.use_abstract_mesh(mb.abstract_mesh) as xb:
        assert xa is None and xb is None
        assert repr(jls.get_abstract_mesh()) == repr(rjax8.sharding.get_abstract_mesh())
        assert jls.get_mesh().empty
        other_a = jls.AbstractMesh((4,), ("q",))
        other_b = rjax8.sharding.AbstractMesh((4,), ("q",))
        _same_err(lambda: jls.use_abstract_mesh(other_a).__enter__(),
                  lambda: rjax8.sharding.use_abstract_mesh(other_b).__enter__())
        assert repr(jls.get_abstract_mesh()) == repr(rjax8.sharding.get_abstract_mesh())
    assert jls.get_abstract_mesh().empty
    _same_err(lambda: jls.use_abstract_mesh(ma), lambda: rjax8.sharding.use_abstract_mesh(mb),
              exact=False)


# ---- names -------------------------------------------------------------------------------

NOT_HERE: set = set()       # every public name of jax.sharding exists in jaxlite


def test_sharding_module_names(rjax8):
    want = {n for n in dir(rjax8.sharding) if not n.startswith("_")} - NOT_HERE
    have = {n for n in dir(jls) if not n.startswith("_")}
    assert want <= have, sorted(want - have)
    for name in ["NamedSharding", "P", "make_mesh", "set_mesh"]:
        assert hasattr(rjax8, name) and getattr(jaxlite, name) is getattr(jls, name)


def test_current_mesh_is_per_thread(rjax8):
    import threading
    ma, mb = _meshes(rjax8, (4, 2), ("x", "y"))
    seen = {}

    def other():
        seen["jl"] = str(jls.get_mesh()), str(jls.get_abstract_mesh())
        seen["jx"] = str(rjax8.sharding.get_mesh()), str(rjax8.sharding.get_abstract_mesh())
    with jaxlite.set_mesh(ma), rjax8.set_mesh(mb):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["jl"] == seen["jx"]
