"""``jaxlite.version``: the package's version (as ``jax.version``): ``__version__`` (a
str) and ``_version_as_tuple`` (ints)."""
from __future__ import annotations

__version__ = "0.1.0"
_version = __version__
_version_as_tuple = tuple(int(p) for p in __version__.split("."))
