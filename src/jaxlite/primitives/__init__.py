"""Primitive declarations, one family per module; importing this registers them all."""
from . import elementwise, shape, reduction, linalg, indexing, control  # noqa: F401
