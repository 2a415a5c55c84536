"""``jaxlite.tree``: short names for the pytree utilities (``jax.tree``)."""
from __future__ import annotations

import dataclasses

from .tree_util import (tree_all as all, tree_flatten as flatten,  # noqa: F401
                        tree_leaves as leaves, tree_map as map, tree_reduce as reduce,
                        tree_structure as structure, tree_unflatten as unflatten,
                        tree_map_with_path as map_with_path,
                        tree_flatten_with_path as flatten_with_path,
                        tree_leaves_with_path as leaves_with_path,
                        tree_transpose as transpose, tree_broadcast as broadcast,
                        tree_reduce_associative as reduce_associative)


def static(**kwargs):
    """A ``dataclasses.field(**kwargs)`` marked ``static=True`` in its metadata, so
    ``register_dataclass`` keeps it out of the leaves (``jax.tree.static``)."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)
