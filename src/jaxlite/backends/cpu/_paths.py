"""Where the persistent cache lives: one function, kept apart from _cache.py so that the
tiered backend's first-call check for a "built before" marker (_tiered.py) costs no import
of the cache machinery (about 10 ms of a first call).

Layer: backends (used by _cache.py and _tiered.py).
"""
from __future__ import annotations

import os


def cache_dir() -> str | None:
    """The directory of the native kernels in the persistent cache (``<dir>/native``,
    ``<dir>`` from ``jax_compilation_cache_dir`` / ``JAXLITE_CACHE_DIR``, by default
    ``$XDG_CACHE_HOME/jaxlite`` or ``~/.cache/jaxlite``), or None when the cache is off
    (an empty setting, or ``jax_enable_compilation_cache`` False)."""
    from ...runtime.cache_files import cache_base
    base = cache_base()
    return None if base is None else os.path.join(base, "native")
