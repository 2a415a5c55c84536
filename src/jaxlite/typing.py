"""Type annotations for jaxlite code (``jax.typing``): ``ArrayLike``, ``DTypeLike``."""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from .core.array import Array

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type, np.dtype, Any]
