"""Pytrees through optree, with JAX's names and behaviour."""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import tree_util as tu


def test_flatten_unflatten_roundtrip_matches_jax(rjax):
    Point = collections.namedtuple("Point", "x y")
    tree = {"b": [1, (2, None)], "a": Point(3, {"z": 4})}
    leaves, treedef = tu.tree_flatten(tree)
    r_leaves, _ = rjax.tree_util.tree_flatten(tree)
    assert leaves == r_leaves == [3, 4, 1, 2]
    assert tu.tree_unflatten(treedef, leaves) == tree


def test_none_is_an_empty_node():
    assert tu.tree_leaves([None, 1, None]) == [1]
    assert tu.tree_map(lambda x: x + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}


def test_tree_map_several_trees_and_is_leaf():
    out = tu.tree_map(lambda a, b: a * b, [1, (2, 3)], [4, (5, 6)])
    assert out == [4, (10, 18)]
    out = tu.tree_map(lambda p: sum(p), [(1, 2), (3, 4)], is_leaf=lambda t: isinstance(t, tuple))
    assert out == [3, 7]
    with pytest.raises(ValueError):
        tu.tree_map(lambda a, b: a, [1, 2], [1, 2, 3])


def test_register_pytree_node_and_class():
    class Box:
        def __init__(self, v, tag):
            self.v, self.tag = v, tag

    tu.register_pytree_node(Box, lambda b: ((b.v,), b.tag), lambda tag, ch: Box(ch[0], tag))
    out = tu.tree_map(lambda v: v * 2, Box(3, "t"))
    assert isinstance(out, Box) and out.v == 6 and out.tag == "t"

    @tu.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    assert tu.tree_leaves(Pair(1, [2, 3])) == [1, 2, 3]


def test_register_dataclass_through_jit():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: object
        b: object
        name: str = dataclasses.field(default="p", metadata={"static": True})

    p = Params(jnp.ones(2), jnp.zeros(2))
    out = jax.jit(lambda p: Params(p.w * 2, p.b + 1, p.name))(p)
    assert isinstance(out, Params) and out.name == "p"
    np.testing.assert_array_equal(out.w, [2, 2])


def test_key_paths_and_keystr(rjax):
    tree = {"a": [1, {"b": 2}]}
    got = [(tu.keystr(p), v) for p, v in tu.tree_flatten_with_path(tree)[0]]
    want = [(rjax.tree_util.keystr(p), v)
            for p, v in rjax.tree_util.tree_flatten_with_path(tree)[0]]
    assert got == want == [("['a'][0]", 1), ("['a'][1]['b']", 2)]


def test_partial_is_a_pytree():
    p = tu.Partial(lambda a, b: a + b, jnp.float32(1))
    leaves = tu.tree_leaves(p)
    assert len(leaves) == 1
    out = jax.jit(lambda f, x: f(x))(p, jnp.float32(2))
    assert float(out) == 3.0


def test_tree_short_names():
    assert jax.tree.map(lambda x: x + 1, [1, 2]) == [2, 3]
    assert jax.tree.leaves({"a": 1, "b": (2,)}) == [1, 2]
    assert jax.tree.reduce(lambda a, b: a + b, [1, 2, 3]) == 6
    assert jax.tree.structure([1, 2]) == tu.tree_structure([3, 4])


@pytest.mark.parametrize("outer, inner", [
    ([0, 0], {"a": 0, "b": 0}),
    ((0, 0, 0), [0, (0, 0)]),
    ({"x": 0}, (0,)),
])
def test_tree_transpose_matches_jax(rjax, outer, inner):
    leaves = iter(range(100))
    tree = tu.tree_map(
        lambda _: tu.tree_map(lambda _: next(leaves), inner), outer)
    got = tu.tree_transpose(jax.tree.structure(outer),
                                           jax.tree.structure(inner), tree)
    want = rjax.tree_util.tree_transpose(rjax.tree.structure(outer),
                                         rjax.tree.structure(inner), tree)
    assert got == want
    assert jax.tree.transpose(jax.tree.structure(outer), None, tree) == want


def test_tree_transpose_mismatch_raises():
    with pytest.raises(TypeError):
        tu.tree_transpose(jax.tree.structure([0, 0]),
                                         jax.tree.structure((0, 0)), [1, 2, 3])


# ---- vmap over registered nodes ---------------------------------------------------------

class _Checked:
    """A registered node whose constructor refuses anything but arrays, as many user
    classes do: vmap must never rebuild it around in_axes numbers."""

    def __init__(self, v, tag="t"):
        if not hasattr(v, "shape"):
            raise TypeError("_Checked holds arrays only")
        self.v, self.tag = v, tag


def _axes(ax, tag="t"):
    """A _Checked whose child is an in_axes/out_axes number (built without the check)."""
    c = object.__new__(_Checked)
    c.v, c.tag = ax, tag
    return c


def _checked_flatten(c):
    return (c.v,), c.tag


def _checked_unflatten(tag, children):
    return _Checked(children[0], tag)


tu.register_pytree_node(_Checked, _checked_flatten, _checked_unflatten)


@pytest.fixture(scope="module")
def rjax_checked(rjax):
    rjax.tree_util.register_pytree_node(_Checked, _checked_flatten, _checked_unflatten)
    return rjax


_X = np.arange(6.0, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("fun, in_axes, out_axes, args", [
    (lambda c: c.v * 2, 0, 0, lambda m: (_Checked(m.asarray(_X)),)),
    (lambda c: _Checked(c.v.sum(0) + 1, c.tag), 0, 0, lambda m: (_Checked(m.asarray(_X)),)),
    (lambda c: _Checked(c.v * 3, c.tag), (0,), 1, lambda m: (_Checked(m.asarray(_X)),)),
    (lambda c, y: c.v + y, (1, None), 0,
     lambda m: (_Checked(m.asarray(_X)), m.asarray([1.0, 2.0], m.float32))),
    (lambda c, y: _Checked(c.v * y, c.tag), (_axes(1), 0), _axes(0),
     lambda m: (_Checked(m.asarray(_X)), m.asarray([1.0, 2.0, 3.0], m.float32))),
])
def test_vmap_over_registered_node_matches_jax(rjax_checked, rjnp, fun, in_axes, out_axes,
                                               args):
    from oracle import assert_like_jax
    rjax = rjax_checked
    want = rjax.vmap(fun, in_axes, out_axes)(*args(rjnp))
    want_tree = rjax.tree.structure(want)
    for got in (jax.vmap(fun, in_axes, out_axes)(*args(jnp)),
                jax.jit(jax.vmap(fun, in_axes, out_axes))(*args(jnp))):
        assert isinstance(got, _Checked) == isinstance(want, _Checked)
        assert jax.tree.structure(got) == jax.tree.structure(
            rjax.tree.unflatten(want_tree, jax.tree.leaves(got)))
        for g, w in zip(jax.tree.leaves(got), rjax.tree.leaves(want)):
            assert_like_jax(g, w)


def test_vmap_in_axes_not_a_prefix_of_registered_node():
    # JAX raises ValueError here too, once its error path has rebuilt the node around
    # sentinels (which _Checked's constructor refuses first); jaxlite never rebuilds it.
    with pytest.raises(ValueError, match="prefix"):
        jax.vmap(lambda c: c.v, in_axes=(_axes(0, "other"),))(_Checked(jnp.ones((2, 3))))


# ---- JAX's pytree semantics where optree differs ------------------------------------------

class _Box:
    """A plain registered node (no keys): children by flat index, aux printed in the
    treedef."""

    def __init__(self, v, tag):
        self.v, self.tag = v, tag

    def __eq__(self, other):
        return type(other) is _Box and (self.v, self.tag) == (other.v, other.tag)


def _box_flatten(b):
    return (b.v,), b.tag


def _box_unflatten(tag, children):
    return _Box(children[0], tag)


class _Keyed:
    """A node registered with keys."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is _Keyed and (self.a, self.b) == (other.a, other.b)


def _keyed_with_keys(k, tu_mod):
    return (((tu_mod.GetAttrKey("a"), k.a), (tu_mod.GetAttrKey("b"), k.b)), "aux")


@dataclasses.dataclass
class _DC:
    w: object
    b: object
    name: str = dataclasses.field(default="p", metadata={"static": True})


_NT = collections.namedtuple("_NT", "x y")


def _register_all(tu_mod):
    assert tu_mod.register_pytree_node(_Box, _box_flatten, _box_unflatten) is None
    assert tu_mod.register_pytree_with_keys(
        _Keyed, lambda k: _keyed_with_keys(k, tu_mod),
        lambda aux, ch: _Keyed(*ch)) is None
    assert tu_mod.register_dataclass(_DC) is _DC


_register_all(tu)


@pytest.fixture(scope="module")
def rtu(rjax):
    _register_all(rjax.tree_util)
    return rjax.tree_util


def _trees(tu=tu):
    return [
        None, 1, (), [], {}, (1,), [1, (2, 3)], {"b": 1, "a": (2, None)}, {1: "x", 3: "y"},
        {"z": {"y": 1, "x": 2}, "a": [3, {"d": 4, "c": None}]}, _NT(1, None),
        collections.OrderedDict([("b", 1), ("a", 2)]),
        collections.defaultdict(list, {"b": 1, "a": 2}), _Box(1, "t"), _Box([1, 2], ("u", 3)),
        [_Box(None, None)], _Keyed(1, [2]), _DC(1, 2), tu.Partial(max, 1, key=2),
        collections.deque([1, 2]), {(1,): 1, (0, 2): 2},
    ]


@pytest.mark.parametrize("i", range(len(_trees())))
def test_flatten_structure_and_rebuild_match_jax(rtu, i):
    tree, r_tree = _trees()[i], _trees(rtu)[i]
    leaves, treedef = tu.tree_flatten(tree)
    r_leaves, r_treedef = rtu.tree_flatten(r_tree)
    assert leaves == r_leaves
    assert repr(treedef) == repr(r_treedef) == str(treedef)
    assert (treedef.num_leaves, treedef.num_nodes) == (r_treedef.num_leaves,
                                                        r_treedef.num_nodes)
    assert [repr(c) for c in treedef.children()] == [repr(c) for c in r_treedef.children()]
    assert [repr(c) for c in tu.treedef_children(treedef)] == [
        repr(c) for c in rtu.treedef_children(r_treedef)]
    assert tu.treedef_is_leaf(treedef) == rtu.treedef_is_leaf(r_treedef)
    marks = list(range(len(leaves)))
    got, want = tu.tree_unflatten(treedef, marks), rtu.tree_unflatten(r_treedef, marks)
    if not isinstance(tree, tu.Partial):
        # Same contents and, for dicts, the same key order as JAX rebuilds them in.
        assert repr(got) == repr(want) or got == want
        assert type(got) is type(want)
    if isinstance(tree, dict):
        assert list(got) == list(want)
        assert list(tu.tree_map(lambda x: x, tree)) == list(rtu.tree_map(lambda x: x, tree))
    if not isinstance(tree, (_Box, _Keyed, _DC, tu.Partial)) and not (
            isinstance(tree, list) and tree and isinstance(tree[0], _Box)):
        assert treedef.node_data() == r_treedef.node_data()


def test_node_data_of_registered_nodes_matches_jax(rtu):
    for tree in (_Box(1, "t"), _Keyed(1, 2), _DC(1, 2)):
        assert tu.tree_structure(tree).node_data() == rtu.tree_structure(tree).node_data()


def test_dict_key_order_through_transformations_matches_jax(rjax, rjnp):
    def f(d):
        assert list(d) == ["a", "b"]      # both rebuild the argument with sorted keys
        return {"y": d["b"] * 2, "x": d["a"]}

    arg = {"b": 1.0, "a": 2.0}
    for run in (lambda j: j.jit(f)(arg), lambda j: j.grad(
            lambda d: f(d)["y"] + f(d)["x"])(arg), lambda j: j.vmap(f)(
            {"b": np.ones(2, np.float32), "a": np.zeros(2, np.float32)})):
        got, want = run(jax), run(rjax)
        assert list(got) == list(want)


@pytest.mark.parametrize("tree", [{"b": 1, 2: 3}, {None: 1, "a": 2}, [{1: 1, "1": 2}]])
def test_unsortable_dict_keys_raise_value_error_like_jax(rtu, tree):
    for fn_name in ("tree_flatten", "tree_leaves", "tree_structure"):
        with pytest.raises(ValueError) as want:
            getattr(rtu, fn_name)(tree)
        with pytest.raises(ValueError) as got:
            getattr(tu, fn_name)(tree)
        assert str(got.value) == str(want.value)
    with pytest.raises(ValueError):
        rtu.tree_map(lambda x: x, tree)
    with pytest.raises(ValueError):
        tu.tree_map(lambda x: x, tree)
    with pytest.raises(ValueError):
        tu.tree_flatten_with_path(tree)
    with pytest.raises(ValueError):
        jax.jit(lambda t: t)(tu.tree_map(lambda _: 1.0, tree) if False else
                             {k: 1.0 for k in (tree if isinstance(tree, dict) else tree[0])})


def test_registration_return_values_match_jax(rtu):
    class A:
        pass

    class B:
        def tree_flatten(self):
            return (), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls()

    for mod in (tu, rtu):
        name = "A" + mod.__name__.replace(".", "_")
        cls = type(name, (A,), {})
        assert mod.register_pytree_node(cls, lambda a: ((), None), lambda *_: cls()) is None
        cls2 = type(name, (B,), {})
        assert mod.register_pytree_node_class(cls2) is cls2
    with pytest.raises(ValueError):
        tu.register_pytree_node(_Box, _box_flatten, _box_unflatten)


def test_key_paths_match_jax(rtu):
    def tree(tu):
        return {"b": [1, _NT(2, 3)], "a": _Box(4, "t"), "c": _DC(5, 6), "d": _Keyed(7, (8,)),
                "e": tu.Partial(max, 9, key=10), "f": collections.OrderedDict(z=11, y=12)}
    got = tu.tree_flatten_with_path(tree(tu))
    want = rtu.tree_flatten_with_path(tree(rtu))
    assert [(repr(p), x) for p, x in got[0]] == [(repr(p), x) for p, x in want[0]]
    assert [tu.keystr(p) for p, _ in got[0]] == [rtu.keystr(p) for p, _ in want[0]]
    assert [tu.keystr(p, simple=True, separator="/") for p, _ in got[0]] == [
        rtu.keystr(p, simple=True, separator="/") for p, _ in want[0]]
    assert repr(got[1]) == repr(want[1])
    assert [repr(p) for p, _ in tu.tree_leaves_with_path(tree(tu))] == [
        repr(p) for p, _ in rtu.tree_leaves_with_path(tree(rtu))]
    f = (lambda p, x: (tu.keystr(p), x))
    assert tu.tree_map_with_path(f, {"b": [1], "a": 2}) == rtu.tree_map_with_path(
        lambda p, x: (rtu.keystr(p), x), {"b": [1], "a": 2})
    stop = (lambda p, x: len(p) == 1 and isinstance(x, dict))
    got = tu.tree_flatten_with_path([1, {"a": 2}], is_leaf=stop, is_leaf_takes_path=True)
    want = rtu.tree_flatten_with_path([1, {"a": 2}], is_leaf=stop, is_leaf_takes_path=True)
    assert [(repr(p), x) for p, x in got[0]] == [(repr(p), x) for p, x in want[0]]
    assert repr(got[1]) == repr(want[1])


def test_treedef_methods_match_jax(rtu):
    t1, r1 = tu.tree_structure([1, {"b": 2, "a": 3}]), rtu.tree_structure([1, {"b": 2, "a": 3}])
    assert t1.flatten_up_to([[5, 6], {"a": (7,), "b": 8}]) == r1.flatten_up_to(
        [[5, 6], {"a": (7,), "b": 8}])
    for bad in ([[5, 6], {"a": 1, "c": 2}], ((1,), {"a": 1, "b": 2}), [1]):
        with pytest.raises(ValueError):
            r1.flatten_up_to(bad)
        with pytest.raises(ValueError):
            t1.flatten_up_to(bad)
    with pytest.raises(ValueError):
        rtu.tree_unflatten(r1, [1, 2])
    with pytest.raises(ValueError):
        tu.tree_unflatten(t1, [1, 2])
    assert tu.tree_unflatten(t1, iter([1, 2, 3])) == rtu.tree_unflatten(r1, iter([1, 2, 3]))
    # Equal structures are equal and hash alike whatever the dicts' insertion order.
    t2 = tu.tree_structure([0, {"a": 0, "b": 0}])
    assert t1 == t2 and hash(t1) == hash(t2) and not t1 != t2
    assert (t1 == tu.tree_structure([0, 0])) == (r1 == rtu.tree_structure([0, 0])) is False
    assert (t1 == 5) == (r1 == 5) is False
    inner, r_inner = tu.tree_structure((1, {"a": 2})), rtu.tree_structure((1, {"a": 2}))
    assert repr(tu.tree_structure([1, 2]).compose(inner)) == repr(
        rtu.tree_structure([1, 2]).compose(r_inner))
    assert repr(tu.treedef_tuple([tu.tree_structure(1), inner])) == repr(
        rtu.treedef_tuple([rtu.tree_structure(1), r_inner]))
    for xs in ([1, 2], [1, [2]], [None], [1, None], []):
        assert tu.all_leaves(xs) == rtu.all_leaves(xs)
        assert tu.all_leaves(xs, is_leaf=lambda x: x is None) == rtu.all_leaves(
            xs, is_leaf=lambda x: x is None)


def test_more_tree_util_functions_match_jax(rjax, rtu):
    assert tu.tree_broadcast([1, {"a": 2}], [[3, 4], {"a": (5, 6)}]) == rtu.tree_broadcast(
        [1, {"a": 2}], [[3, 4], {"a": (5, 6)}])
    assert tu.tree_reduce_associative(lambda a, b: a + b, [1, 2, 3]) == 6
    assert tu.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    with pytest.raises(TypeError):
        rtu.tree_reduce_associative(lambda a, b: a + b, [])
    with pytest.raises(TypeError):
        tu.tree_reduce_associative(lambda a, b: a + b, [])
    # Pairwise (balanced) order, as JAX: visible with a non-associative operation.
    cat = (lambda a, b: f"({a}{b})")
    assert tu.tree_reduce_associative(cat, list("abcde")) == rtu.tree_reduce_associative(
        cat, list("abcde"))
    with pytest.raises(TypeError):
        rtu.tree_reduce(lambda a, b: a + b, [])
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_reduce(lambda a, b: a + b, [1, 2], 10) == 13
    for typ in (int, type(None), list, tuple, dict, _NT, collections.deque,
                collections.OrderedDict, _Box):
        assert tu.is_tree_node(typ) == rtu.is_tree_node(typ), typ
    for tree in ({"b": 1, "a": [2]}, _NT(1, 2), (1, 2), [1, 2], None,
                 collections.OrderedDict(b=1, a=2), collections.defaultdict(int, b=1, a=2)):
        got, want = tu.flatten_one_level(tree), rtu.flatten_one_level(tree)
        assert list(got[0]) == list(want[0]) and got[1] == want[1]
        got, want = tu.flatten_one_level_with_keys(tree), rtu.flatten_one_level_with_keys(tree)
        assert [c for _, c in got[0]] == [c for _, c in want[0]] and got[1] == want[1]
    with pytest.raises(ValueError):
        rtu.flatten_one_level(1)
    with pytest.raises(ValueError):
        tu.flatten_one_level(1)
    # deque and structseq are leaves in JAX (optree would flatten them).
    import time
    for tree in (collections.deque([1, 2]), [collections.deque([1]), 2], time.gmtime(0)):
        assert repr(tu.tree_structure(tree)) == repr(rtu.tree_structure(tree))
        assert tu.tree_leaves(tree) == rtu.tree_leaves(tree)
    assert tu.tree_all([1, 0]) == rtu.tree_all([1, 0]) is False
    assert tu.tree_all([]) == rtu.tree_all([]) is True


def test_register_static_and_tree_static_match_jax(rjax, rtu):
    @dataclasses.dataclass(frozen=True)
    class S:
        a: int

    assert tu.register_static(S) is S
    assert rtu.register_static(S) is S
    assert repr(tu.tree_structure([S(1), 2])) == repr(rtu.tree_structure([S(1), 2]))
    assert tu.tree_leaves([S(1), 2]) == rtu.tree_leaves([S(1), 2]) == [2]

    @dataclasses.dataclass
    class Op:
        x: object
        op: str = jax.tree.static(default="add")

    want = rjax.tree.static(default="add")
    assert Op.__dataclass_fields__["op"].metadata == want.metadata
    tu.register_dataclass(Op)
    assert tu.tree_leaves(Op(1.0)) == [1.0]
    assert tu.tree_structure(Op(1.0)) != tu.tree_structure(Op(1.0, "mul"))
