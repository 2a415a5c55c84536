"""``jaxlite.nn``: activation functions and friends (``jax.nn``)."""
from __future__ import annotations
