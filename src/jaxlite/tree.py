"""``jaxlite.tree``: short names for the pytree utilities (``jax.tree``)."""
from __future__ import annotations

from .tree_util import (tree_all as all, tree_flatten as flatten,  # noqa: F401
                        tree_leaves as leaves, tree_map as map, tree_reduce as reduce,
                        tree_structure as structure, tree_unflatten as unflatten,
                        tree_map_with_path as map_with_path,
                        tree_flatten_with_path as flatten_with_path,
                        tree_leaves_with_path as leaves_with_path,
                        tree_transpose as transpose)
