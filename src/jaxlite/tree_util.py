"""Pytrees (``jax.tree_util``), on top of optree.

Containers (tuple, list, dict, namedtuple, OrderedDict, defaultdict, None) are pytree
nodes; everything else is a leaf unless registered.  ``None`` is an empty node, as in JAX.
Registrations live in optree's ``'jaxlite'`` namespace.
"""
from __future__ import annotations

import dataclasses
import functools

import optree

NAMESPACE = "jaxlite"
PyTreeDef = optree.PyTreeSpec


def tree_flatten(tree, is_leaf=None):
    """``(leaves, treedef)`` of ``tree`` (``jax.tree_util.tree_flatten``)."""
    return optree.tree_flatten(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_unflatten(treedef, leaves):
    """Rebuilds a tree of ``treedef``'s structure from ``leaves``.  Raises ValueError when
    the number of leaves differs from the structure's."""
    return optree.tree_unflatten(treedef, list(leaves))


def tree_leaves(tree, is_leaf=None):
    """The leaves of ``tree`` in order (``jax.tree_util.tree_leaves``)."""
    return optree.tree_leaves(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_structure(tree, is_leaf=None):
    """The treedef of ``tree`` (``jax.tree_util.tree_structure``)."""
    return optree.tree_structure(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_map(f, tree, *rest, is_leaf=None):
    """``f`` applied leafwise over ``tree`` and the matching leaves of ``rest``
    (``jax.tree_util.tree_map``).  Raises ValueError when the structures differ."""
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False,
                           namespace=NAMESPACE)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Swaps the two levels of a tree of trees (``jax.tree_util.tree_transpose``): a tree
    of ``outer_treedef`` whose leaves are trees of ``inner_treedef`` becomes a tree of
    ``inner_treedef`` whose leaves are trees of ``outer_treedef``.  Raises TypeError when
    ``pytree_to_transpose`` does not have the composed structure."""
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    flat = tree_leaves(pytree_to_transpose)
    n_out, n_in = outer_treedef.num_leaves, inner_treedef.num_leaves
    if len(flat) != n_out * n_in:
        raise TypeError(f"Mismatch\n{tree_structure(pytree_to_transpose)}\n!= composed "
                        f"structure of outer {outer_treedef} and inner {inner_treedef}")
    groups = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    swapped = [tree_unflatten(outer_treedef, [g[j] for g in groups]) for j in range(n_in)]
    return tree_unflatten(inner_treedef, swapped)


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """Like ``tree_map``; ``f`` also receives the leaf's key path first."""
    paths, leaves, treedef = optree.tree_flatten_with_path(tree, is_leaf, none_is_leaf=False,
                                                           namespace=NAMESPACE)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten([f(tuple(_key(k) for k in p), x, *xs)
                              for p, x, *xs in zip(paths, leaves, *others)])


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf), ...], treedef)`` (``jax.tree_util.tree_flatten_with_path``)."""
    paths, leaves, treedef = optree.tree_flatten_with_path(tree, is_leaf, none_is_leaf=False,
                                                           namespace=NAMESPACE)
    return [(tuple(_key(k) for k in p), x) for p, x in zip(paths, leaves)], treedef


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_reduce(function, tree, initializer=..., is_leaf=None):
    """Folds ``function`` over the leaves (``jax.tree_util.tree_reduce``)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is ...:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None):
    """True when every leaf is truthy (``jax.tree_util.tree_all``)."""
    return all(tree_leaves(tree, is_leaf))


def treedef_is_leaf(treedef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(iterable, is_leaf=None) -> bool:
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) for x in iterable)


# ---- key paths ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Index into a list/tuple in a key path (``jax.tree_util.SequenceKey``)."""
    idx: int

    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Key of a dict in a key path (``jax.tree_util.DictKey``)."""
    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute name in a key path (``jax.tree_util.GetAttrKey``)."""
    name: str

    def __str__(self):
        return f".{self.name}"


def _key(k):
    if isinstance(k, int):
        return SequenceKey(k)
    return DictKey(k)


def keystr(keys) -> str:
    """``"['a'][0]"`` for a key path (``jax.tree_util.keystr``)."""
    return "".join(str(k) for k in keys)


# ---- registration -------------------------------------------------------------------

def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """Makes ``nodetype`` a pytree node: ``flatten_func(x) -> (children, aux)`` and
    ``unflatten_func(aux, children) -> x`` (``jax.tree_util.register_pytree_node``)."""
    optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=NAMESPACE)
    return nodetype


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    def flat(x):
        kc, aux = flatten_with_keys(x)
        return [c for _, c in kc], aux
    return register_pytree_node(nodetype, flatten_func or flat, unflatten_func)


def register_pytree_node_class(cls):
    """Class decorator: ``cls.tree_flatten()`` and ``cls.tree_unflatten(aux, children)``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Registers a dataclass: ``data_fields`` are children, ``meta_fields`` static
    (``jax.tree_util.register_dataclass``).  Usable as a decorator."""
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; pass "
                            f"data_fields and meta_fields")
        meta = [f.name for f in dataclasses.fields(nodetype)
                if f.metadata.get("static", False)]
        data = [f.name for f in dataclasses.fields(nodetype)
                if not f.metadata.get("static", False) and f.name not in drop_fields]
        data_fields, meta_fields = data, meta
    data_fields, meta_fields = list(data_fields), list(meta_fields)

    def flatten(x):
        return ([getattr(x, n) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(aux, children):
        obj = object.__new__(nodetype)
        for n, v in zip(data_fields, children):
            object.__setattr__(obj, n, v)
        for n, v in zip(meta_fields, aux):
            object.__setattr__(obj, n, v)
        return obj

    register_pytree_node(nodetype, flatten, unflatten)
    return nodetype


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its bound arguments are leaves, the
    function is static (``jax.tree_util.Partial``)."""


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]))
