"""``jaxlite.numpy.linalg`` (``jax.numpy.linalg``)."""
from __future__ import annotations
