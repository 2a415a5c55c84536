"""Comparisons of whole arrays and small utilities (``jax.numpy``)."""
from __future__ import annotations

from ._util import public_names

__all__ = public_names(globals())
