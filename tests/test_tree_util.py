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
