"""``jaxlite.experimental.shard_map``: the old spelling of ``jaxlite.shard_map``
(``jax.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs, check_rep=True)``),
deprecated as in JAX."""
from __future__ import annotations

import sys

from .. import _traceback
from ..transforms.shard_map import experimental_shard_map as shard_map

__all__ = ["shard_map"]

# a traceback boundary (jaxlite/_traceback.py), as ``jaxlite.shard_map``
_traceback.wrap_namespace(sys.modules[__name__])
