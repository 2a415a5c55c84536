"""Pytrees (``jax.tree_util``), on top of optree.

Containers (tuple, list, dict, namedtuple, OrderedDict, defaultdict, None) are pytree
nodes; everything else is a leaf unless registered.  ``None`` is an empty node, as in JAX.
Registrations live in optree's ``'jaxlite'`` namespace.

Where optree and JAX part, JAX's behaviour wins: dict (and defaultdict) keys are sorted both
when flattening and when rebuilding (optree rebuilds in insertion order); keys that cannot be
sorted raise ValueError; deques and structseqs (``time.struct_time``) are leaves; key paths
name namedtuple fields and dataclass attributes (``GetAttrKey``) and a registered node's
children by position (``FlattenedIndexKey``); a treedef is a ``PyTreeDef`` that prints as
JAX's does.

Two views of one tree.  What users see (these public functions) has typed PRNG key arrays as
leaves, as JAX.  The transformations need a key's uint32 data as the value they trace, batch
and differentiate: they flatten with the ``data_*`` functions below, in which a key array is
a node over its data (registered by ``register_data_node``).  A key has exactly one data
child, so both views have the same leaves in the same order, one key leaf standing where its
data leaf stands; only the treedefs differ (the data view's rebuilds the keys).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any

import optree

NAMESPACE = "jaxlite"          # the data view (transformations): keys are nodes
PUBLIC_NAMESPACE = "jaxlite.api"      # the users' view: keys are leaves

_Kind = optree.PyTreeKind
_SPEC = optree.PyTreeSpec
_UNSORTABLE = "Comparator raised exception while sorting pytree dictionary keys."

# Registered node types: type -> (flatten, unflatten, flatten_with_keys or None).
_CUSTOM: dict = {}
# Nodes of the data view only (typed key arrays): leaves to users, and printed as leaves.
_DATA_NODES: set = set()


class _Unspecified:
    def __repr__(self):
        return "<unspecified>"


_UNSPECIFIED = _Unspecified()


# ---- canonical structures --------------------------------------------------------------
#
# optree keeps each dict's insertion order inside its treespec and rebuilds dicts in that
# order; JAX rebuilds them sorted.  A structure is made canonical by setting the recorded
# order of every dict/defaultdict node to the sorted one.  What a structure needs is decided
# once per structure and cached: nothing (_SAME: no dicts), the sorting (_SORT), or flattening
# again (_LEAFIFY: it holds nodes JAX treats as leaves).  Equal structures may differ in
# insertion order (and hash alike); their canonical (sorted) structure is the same, so it
# is cached too (_sorted_specs), which keeps flattening a dict of parameters cheap.

_SAME, _SORT, _LEAFIFY = 0, 1, 2
_decisions: dict = {}
_sorted_specs: dict = {}
_DECISIONS_MAX = 8192
_DICT_KINDS = (_Kind.DICT, _Kind.DEFAULTDICT)
_JAX_LEAF_KINDS = (_Kind.DEQUE, _Kind.STRUCTSEQUENCE) + (
    (_Kind.FROZENDICT,) if hasattr(_Kind, "FROZENDICT") else ())


def _jax_leaf_node(x):
    """Containers optree flattens but JAX treats as leaves."""
    return type(x) is collections.deque or optree.is_structseq_instance(x)


def _decide(spec):
    """_SAME, _SORT or _LEAFIFY for ``spec``; ValueError for unsortable dict keys."""
    verdict = _SAME
    stack = [spec]
    while stack:
        s = stack.pop()
        kind = s.kind
        if kind in _JAX_LEAF_KINDS:
            return _LEAFIFY
        if kind in _DICT_KINDS:
            try:
                sorted(s.entries())
            except TypeError:
                raise ValueError(_UNSORTABLE) from None
            verdict = _SORT
        stack.extend(s.children())
    return verdict


def _node_records(spec):
    """optree's record of each node (post-order), or None for another optree's format."""
    try:
        state = spec.__getstate__()
    except Exception:                       # noqa: BLE001
        return None
    nodes = state[0] if isinstance(state, tuple) and state else None
    if not isinstance(nodes, tuple) or not all(
            isinstance(n, tuple) and len(n) == 8 for n in nodes):
        return None
    return state


def _sorted_spec(spec):
    """``spec`` with every dict node's rebuild order set to its sorted key order (``spec``
    itself when that is already so)."""
    state = _node_records(spec)
    if state is not None:
        nodes, changed = [], False
        for n in state[0]:
            if n[0] in _DICT_KINDS:
                keys = n[2] if n[0] == _Kind.DICT else n[2][1]
                if n[7] is not None and list(n[7]) != list(keys):
                    n = n[:7] + (dict.fromkeys(keys),)
                    changed = True
            nodes.append(n)
        if not changed:
            return spec
        out = _SPEC.__new__(_SPEC)
        out.__setstate__((tuple(nodes),) + tuple(state[1:]))
        return out
    leaf = optree.treespec_leaf()

    def sort_node(node):
        if node.kind == _Kind.DICT:
            return optree.treespec_dict([(k, leaf) for k in node.entries()],
                                        namespace=node.namespace)
        if node.kind == _Kind.DEFAULTDICT:
            factory = node.unflatten([None] * node.num_children).default_factory
            return optree.treespec_defaultdict(factory, [(k, leaf) for k in node.entries()],
                                               namespace=node.namespace)
        return node
    return spec.transform(sort_node)


def _memo(table: dict, spec, compute):
    """``compute(spec)``, remembered in ``table`` per structure (bounded)."""
    try:
        hit = table.get(spec)
    except Exception:                       # noqa: BLE001 - unhashable/uncomparable aux data
        table = None
    if table is None:       # outside the except block: compute's errors chain nothing
        return compute(spec)
    if hit is None:
        hit = compute(spec)
        if len(table) >= _DECISIONS_MAX:
            table.clear()
        table[spec] = hit
    return hit


def _decision(spec):
    return _memo(_decisions, spec, _decide)


def _sorted_spec_cached(spec):
    return _memo(_sorted_specs, spec, _sorted_spec)


def _canonical(spec):
    verdict = _decision(spec)
    if verdict == _SAME:
        return spec
    if verdict == _SORT:
        return _sorted_spec_cached(spec)
    raise AssertionError("a structure holding JAX leaves must be flattened again")


def _flatten(tree, is_leaf=None, namespace=PUBLIC_NAMESPACE):
    """``(leaves, canonical optree spec)`` in the users' view (``namespace`` NAMESPACE: the
    data view)."""
    leaves, spec = optree.tree_flatten(tree, is_leaf, none_is_leaf=False, namespace=namespace)
    verdict = _decision(spec)
    if verdict == _SAME:
        return leaves, spec
    if verdict == _SORT:
        return leaves, _sorted_spec_cached(spec)
    if is_leaf is None:
        leaf_pred = _jax_leaf_node
    else:
        def leaf_pred(x):
            return _jax_leaf_node(x) or is_leaf(x)
    return _flatten(tree, leaf_pred, namespace)


# ---- PyTreeDef --------------------------------------------------------------------------

def _node_state(spec):
    """optree's record of ``spec``'s root node (kind, arity, node data, ...) or None."""
    state = _node_records(spec)
    return None if state is None else state[0][-1]


def _format(spec):
    kind = spec.kind
    if kind == _Kind.LEAF:
        return "*"
    if kind == _Kind.NONE:
        return "None"
    kids = [_format(c) for c in spec.children()]
    if kind == _Kind.TUPLE:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if kind == _Kind.LIST:
        return "[" + ", ".join(kids) + "]"
    if kind == _Kind.DICT:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(spec.entries(), kids)) + "}"
    if kind == _Kind.CUSTOM and spec.type in _DATA_NODES:
        return "*"          # a key array: one leaf, as users (and JAX) see it
    typ, data = _node_data(spec)
    name = {_Kind.NAMEDTUPLE: "namedtuple", _Kind.ORDEREDDICT: "OrderedDict",
            _Kind.DEFAULTDICT: "defaultdict"}.get(kind, typ.__name__)
    shown = typ.__name__ if kind == _Kind.NAMEDTUPLE else data
    return f"CustomNode({name}[{shown}], [{', '.join(kids)}])"


def _node_data(spec):
    """``(type, aux data)`` of ``spec``'s root node as JAX reports it, None for a leaf."""
    kind = spec.kind
    if kind == _Kind.LEAF:
        return None
    if kind == _Kind.NONE:
        return (type(None), None)
    if kind in (_Kind.TUPLE, _Kind.LIST, _Kind.NAMEDTUPLE):
        return (spec.type, None)
    keys = list(spec.entries())
    if kind == _Kind.DICT:
        return (dict, keys)
    if kind == _Kind.ORDEREDDICT:
        return (collections.OrderedDict, tuple(keys))
    if kind == _Kind.DEFAULTDICT:
        factory = spec.one_level().unflatten([None] * spec.num_children).default_factory
        return (collections.defaultdict, (factory, tuple(keys)))
    state = _node_state(spec)
    return (spec.type, state[2] if state is not None else None)


class PyTreeDef:
    """The structure of a pytree, without its leaves (``jax.tree_util.PyTreeDef``).

    Made by ``tree_flatten``/``tree_structure``; prints as JAX's does
    (``PyTreeDef({'a': *, 'b': [*, None]})``, registered nodes as
    ``CustomNode(Type[aux], [children])``).  Equal structures compare and hash equal.
    """
    __slots__ = ("_spec",)

    def __init__(self, spec):
        self._spec = spec

    @property
    def num_leaves(self) -> int:
        return self._spec.num_leaves

    @property
    def num_nodes(self) -> int:
        return self._spec.num_nodes

    def unflatten(self, leaves):
        """The tree of this structure holding ``leaves`` in order.  Raises ValueError when
        their number differs from ``num_leaves``."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        try:
            return self._spec.unflatten(leaves)
        except ValueError as e:
            raise ValueError(str(e).replace("PyTreeSpec", "PyTreeDef")) from None

    def flatten_up_to(self, xs):
        """The subtrees of ``xs`` at this structure's leaves.  Raises ValueError when this
        structure is not a prefix of ``xs``'s."""
        return self._spec.flatten_up_to(xs)

    def children(self):
        """The structures of the root node's children."""
        return [PyTreeDef(c) for c in self._spec.children()]

    def node_data(self):
        """``(node type, aux data)`` of the root node; None for a leaf."""
        return _node_data(self._spec)

    def compose(self, inner):
        """This structure with ``inner`` in place of each leaf."""
        return PyTreeDef(self._spec.compose(inner._spec))

    def __eq__(self, other):
        if not isinstance(other, PyTreeDef):
            return False
        return self._spec == other._spec

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._spec)

    def __repr__(self):
        return f"PyTreeDef({_format(self._spec)})"

    def __reduce__(self):
        return (PyTreeDef, (self._spec,))


def _spec_of(treedef):
    if type(treedef) is PyTreeDef:
        return treedef._spec
    if type(treedef) is _SPEC:             # a raw optree structure (jit's fast path)
        return _canonical(treedef)
    raise TypeError(f"Expected a PyTreeDef, got {type(treedef).__name__}")


# ---- flatten / unflatten / map --------------------------------------------------------

def tree_flatten(tree, is_leaf=None):
    """``(leaves, treedef)`` of ``tree`` (``jax.tree_util.tree_flatten``): leaves in
    order, dict keys sorted.  ``is_leaf(x)`` True stops the descent at ``x``.  Raises
    ValueError for dict keys that cannot be sorted."""
    leaves, spec = _flatten(tree, is_leaf)
    return leaves, PyTreeDef(spec)


def tree_unflatten(treedef, leaves):
    """Rebuilds a tree of ``treedef``'s structure from ``leaves`` (dicts with sorted keys,
    as JAX).  Raises ValueError when the number of leaves differs from the structure's."""
    if type(treedef) is PyTreeDef:
        return treedef.unflatten(leaves)
    return PyTreeDef(_spec_of(treedef)).unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    """The leaves of ``tree`` in order (``jax.tree_util.tree_leaves``)."""
    return _flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The treedef of ``tree`` (``jax.tree_util.tree_structure``)."""
    return PyTreeDef(_flatten(tree, is_leaf)[1])


def tree_map(f, tree, *rest, is_leaf=None):
    """``f`` applied leafwise over ``tree`` and the matching leaves of ``rest``
    (``jax.tree_util.tree_map``).  Each of ``rest`` must have ``tree``'s structure or one
    that has it as a prefix.  Raises ValueError when the structures differ."""
    leaves, spec = _flatten(tree, is_leaf)
    if not rest:
        return spec.unflatten([f(x) for x in leaves])
    others = [spec.flatten_up_to(r) for r in rest]
    return spec.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Swaps the two levels of a tree of trees (``jax.tree_util.tree_transpose``): a tree
    of ``outer_treedef`` whose leaves are trees of ``inner_treedef`` becomes a tree of
    ``inner_treedef`` whose leaves are trees of ``outer_treedef``.  ``inner_treedef`` None
    takes the structure of the first outer leaf.  Raises TypeError when
    ``pytree_to_transpose`` does not have the composed structure."""
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    flat, tree_def = tree_flatten(pytree_to_transpose)
    n_out, n_in = outer_treedef.num_leaves, inner_treedef.num_leaves
    if tree_def != outer_treedef.compose(inner_treedef):
        raise TypeError(f"Mismatch\n{tree_def}\n != \n{outer_treedef.compose(inner_treedef)}")
    groups = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    swapped = [tree_unflatten(outer_treedef, [g[j] for g in groups]) for j in range(n_in)]
    return tree_unflatten(inner_treedef, swapped)


def tree_reduce(function, tree, initializer=_UNSPECIFIED, is_leaf=None):
    """Folds ``function`` over the leaves left to right (``jax.tree_util.tree_reduce``).
    Raises TypeError for a tree without leaves and no ``initializer``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation, tree, *, identity=_UNSPECIFIED, is_leaf=None):
    """Reduces the leaves with an associative ``operation`` as a balanced tree: the first
    half's result with the second's, recursively (``jax.tree_util.tree_reduce_associative``).  Raises TypeError for a tree without
    leaves and no ``identity``."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _UNSPECIFIED:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    def halves(xs):
        if len(xs) == 1:
            return xs[0]
        mid = len(xs) // 2
        return operation(halves(xs[:mid]), halves(xs[mid:]))
    return halves(leaves)


def tree_all(tree, *, is_leaf=None):
    """True when every leaf is truthy (``jax.tree_util.tree_all``)."""
    return all(tree_leaves(tree, is_leaf))


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree`` with each leaf repeated over the matching subtree of ``full_tree``
    (``jax.tree_util.tree_broadcast``).  Raises ValueError when ``prefix_tree`` is not a
    prefix of ``full_tree``."""
    leaves, spec = _flatten(prefix_tree, is_leaf)
    subtrees = spec.flatten_up_to(full_tree)
    return spec.unflatten([tree_map(lambda _, x=x: x, sub, is_leaf=is_leaf)
                           for x, sub in zip(leaves, subtrees)])


def treedef_is_leaf(treedef) -> bool:
    """True for the structure of a single leaf or of ``None`` (one node)."""
    return treedef.num_nodes == 1


def treedef_children(treedef):
    """The structures of ``treedef``'s root's children."""
    return treedef.children()


def treedef_tuple(treedefs):
    """The structure of a tuple whose children have structures ``treedefs``."""
    specs = [_spec_of(t) for t in treedefs]
    # optree joins only structures of one namespace (or of none, without registered nodes)
    spaces = {s.namespace for s in specs if s.namespace}
    return PyTreeDef(optree.treespec_tuple(
        specs, namespace=spaces.pop() if len(spaces) == 1 else PUBLIC_NAMESPACE))


def all_leaves(iterable, is_leaf=None) -> bool:
    """True when every element of ``iterable`` is a leaf (``None`` is not)."""
    if is_leaf is None:
        return all(tree_structure(x).num_nodes == 1 and tree_structure(x).num_leaves == 1
                   for x in iterable)
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) for x in iterable)


def is_tree_node(typ) -> bool:
    """True when instances of type ``typ`` are pytree nodes, not leaves."""
    return (typ is type(None) or typ in (tuple, list, dict, collections.OrderedDict,
                                         collections.defaultdict)
            or typ in _CUSTOM or optree.is_namedtuple_class(typ))


def flatten_one_level(tree):
    """``(children, node data)`` of ``tree``'s root node
    (``jax.tree_util.flatten_one_level``).  Raises ValueError for a leaf."""
    pairs, data = _one_level(tree)
    return [c for _, c in pairs], data


def flatten_one_level_with_keys(tree):
    """``([(key, child), ...], node data)`` of ``tree``'s root node.  Raises ValueError
    for a leaf."""
    return _one_level(tree)


def _one_level(tree):
    pairs = _children_with_keys(tree)
    if pairs is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    t = type(tree)
    if t is dict or t is collections.OrderedDict:
        aux = tuple(k.key for k, _ in pairs)
    elif t is collections.defaultdict:
        aux = (tree.default_factory, tuple(k.key for k, _ in pairs))
    elif t in _CUSTOM:
        aux = _CUSTOM[t][0](tree)[1]
    elif optree.is_namedtuple_instance(tree):
        aux = t
    else:
        aux = None
    return pairs, aux


# ---- key paths ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Index into a list/tuple in a key path (``jax.tree_util.SequenceKey``)."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Key of a dict in a key path (``jax.tree_util.DictKey``)."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute name in a key path (namedtuple fields, dataclass fields;
    ``jax.tree_util.GetAttrKey``)."""
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Position among a registered node's children, for nodes registered without keys
    (``jax.tree_util.FlattenedIndexKey``)."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


KeyEntry = Any
KeyPath = tuple


def keystr(keys, *, simple=False, separator="") -> str:
    """``"['a'][0]"`` for a key path (``jax.tree_util.keystr``); ``simple=True`` gives
    the bare keys joined by ``separator`` (``"a/0"``)."""
    if not simple:
        return separator.join(str(k) for k in keys)
    return separator.join(str(_bare(k)) for k in keys)


def _bare(k):
    for field in ("idx", "key", "name"):
        if hasattr(k, field):
            return getattr(k, field)
    return k


def _children_with_keys(x):
    """``[(key, child), ...]`` of node ``x``, or None for a leaf (JAX's leaves included)."""
    t = type(x)
    if x is None:
        return []
    if t is tuple or t is list:
        return [(SequenceKey(i), c) for i, c in enumerate(x)]
    if t is dict or t is collections.defaultdict:
        try:
            keys = sorted(x)
        except TypeError:
            raise ValueError(_UNSORTABLE) from None
        return [(DictKey(k), x[k]) for k in keys]
    if t is collections.OrderedDict:
        return [(DictKey(k), v) for k, v in x.items()]
    reg = _CUSTOM.get(t)
    if reg is not None:
        flatten, _, with_keys = reg
        if with_keys is not None:
            return [(k, c) for k, c in with_keys(x)[0]]
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(flatten(x)[0])]
    if optree.is_namedtuple_instance(x):
        return [(GetAttrKey(f), c) for f, c in zip(t._fields, x)]
    return None


def _walk_with_path(x, path, is_leaf, takes_path, out, stops):
    if is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x)):
        out.append((path, x))
        stops.add(id(x))
        return
    kids = _children_with_keys(x)
    if kids is None:
        out.append((path, x))
        return
    for k, c in kids:
        _walk_with_path(c, path + (k,), is_leaf, takes_path, out, stops)


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``([(key_path, leaf), ...], treedef)`` (``jax.tree_util.tree_flatten_with_path``).
    ``is_leaf`` takes ``(key_path, x)`` when ``is_leaf_takes_path``."""
    out, stops = [], set()
    _walk_with_path(tree, (), is_leaf, is_leaf_takes_path, out, stops)
    if is_leaf is None:
        treedef = tree_structure(tree)
    elif is_leaf_takes_path:
        treedef = tree_structure(tree, lambda x: id(x) in stops)
    else:
        treedef = tree_structure(tree, is_leaf)
    return out, treedef


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``[(key_path, leaf), ...]`` (``jax.tree_util.tree_leaves_with_path``)."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """Like ``tree_map``; ``f`` also receives the leaf's key path first
    (``jax.tree_util.tree_map_with_path``)."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


# ---- registration -------------------------------------------------------------------

def _register(nodetype, flatten_func, unflatten_func, flatten_with_keys_func):
    for namespace in (PUBLIC_NAMESPACE, NAMESPACE):     # a node in both views
        optree.register_pytree_node(nodetype, flatten_func, unflatten_func,
                                    namespace=namespace)
    _CUSTOM[nodetype] = (flatten_func, unflatten_func, flatten_with_keys_func)
    _decisions.clear()
    _sorted_specs.clear()


def register_data_node(nodetype, flatten_func, unflatten_func) -> None:
    """Makes ``nodetype`` a node of the data view only (``data_flatten`` and the other
    ``data_*`` functions), a leaf for users: the random module's typed key arrays, which
    the transformations see as their uint32 data."""
    optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=NAMESPACE)
    _DATA_NODES.add(nodetype)
    _decisions.clear()
    _sorted_specs.clear()


def is_data_node(x) -> bool:
    """Whether ``x`` is a node of the data view only (``register_data_node``): a typed
    PRNG key array, which users see as one leaf and the transformations as its data.  Lets
    the transformations tell keys apart without importing the ops layer that defines them."""
    return type(x) in _DATA_NODES


# ---- the data view (for the transformations) -----------------------------------------
#
# The transformations import these under the public names (``from ..tree_util import
# data_flatten as tree_flatten``): they trace, batch and differentiate what a leaf holds, so
# a typed key array must reach them as its uint32 data, rebuilt into keys by the treedef.

def data_flatten(tree, is_leaf=None):
    """``tree_flatten`` with typed key arrays flattened to their data."""
    leaves, spec = _flatten(tree, is_leaf, NAMESPACE)
    return leaves, PyTreeDef(spec)


def data_leaves(tree, is_leaf=None):
    """``tree_leaves`` with typed key arrays flattened to their data."""
    return _flatten(tree, is_leaf, NAMESPACE)[0]


def data_structure(tree, is_leaf=None):
    """``tree_structure`` with typed key arrays as nodes over their data."""
    return PyTreeDef(_flatten(tree, is_leaf, NAMESPACE)[1])


def data_map(f, tree, *rest, is_leaf=None):
    """``tree_map`` over the leaves of the data view (a key array's data, not the keys);
    ``rest`` must hold key arrays where ``tree`` does."""
    leaves, spec = _flatten(tree, is_leaf, NAMESPACE)
    if not rest:
        return spec.unflatten([f(x) for x in leaves])
    others = [spec.flatten_up_to(r) for r in rest]
    return spec.unflatten([f(*xs) for xs in zip(leaves, *others)])


def data_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``tree_flatten_with_path`` with key arrays flattened to their data: the key paths
    are the users' (a key's data has its key's path), the treedef the data view's."""
    pairs, stops = [], set()
    _walk_with_path(tree, (), is_leaf, is_leaf_takes_path, pairs, stops)
    if is_leaf is not None and is_leaf_takes_path:
        leaves, spec = _flatten(tree, lambda x: id(x) in stops, NAMESPACE)
    else:
        leaves, spec = _flatten(tree, is_leaf, NAMESPACE)
    return [(p, x) for (p, _), x in zip(pairs, leaves)], PyTreeDef(spec)


def register_pytree_node(nodetype, flatten_func, unflatten_func,
                         flatten_with_keys_func=None):
    """Makes ``nodetype`` a pytree node: ``flatten_func(x) -> (children, aux)`` and
    ``unflatten_func(aux, children) -> x`` (``jax.tree_util.register_pytree_node``);
    ``flatten_with_keys_func(x) -> ([(key, child), ...], aux)`` names the children in key
    paths.  Returns None.  Raises ValueError when ``nodetype`` is already registered."""
    _register(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Registers ``nodetype`` with ``flatten_with_keys(x) -> ([(key, child), ...], aux)``
    (``jax.tree_util.register_pytree_with_keys``).  Returns None."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    _register(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls):
    """Class decorator: ``cls.tree_flatten()`` and ``cls.tree_unflatten(aux, children)``
    (``jax.tree_util.register_pytree_node_class``).  Returns ``cls``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator: ``cls.tree_flatten_with_keys()`` and
    ``cls.tree_unflatten(aux, children)``; ``cls.tree_flatten()`` when defined.  Returns
    ``cls``."""
    flatten = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              None if flatten is None else (lambda x: x.tree_flatten()))
    return cls


def register_static(cls):
    """Makes instances of ``cls`` nodes without children whose value is their aux data
    (``jax.tree_util.register_static``): static under jit, compared by equality.  Returns
    ``cls``."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Registers a dataclass: ``data_fields`` are children, ``meta_fields`` static
    (``jax.tree_util.register_dataclass``); without them, fields whose metadata has
    ``static=True`` are static, the others children.  Usable as a decorator; returns the
    class.  Raises TypeError for a class that is not a dataclass when the fields are not
    given."""
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
    data_keys = [GetAttrKey(n) for n in data_fields]

    def flatten(x):
        return ([getattr(x, n) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def flatten_with_keys(x):
        children, aux = flatten(x)
        return list(zip(data_keys, children)), aux

    def unflatten(aux, children):
        obj = object.__new__(nodetype)
        for n, v in zip(data_fields, children):
            object.__setattr__(obj, n, v)
        for n, v in zip(meta_fields, aux):
            object.__setattr__(obj, n, v)
        return obj

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its bound arguments are leaves, the
    function is static (``jax.tree_util.Partial``)."""


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]))
