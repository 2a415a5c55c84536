"""``jaxlite.scipy``: SciPy's functions on jaxlite arrays (``jax.scipy``): ``special``,
``stats``, ``integrate``, ``linalg``, ``signal``, ``ndimage``, ``fft``, ``interpolate``,
``cluster``, ``optimize`` and ``sparse``.  Submodules load on first use."""
from __future__ import annotations

import importlib

_SUBMODULES = ("special", "stats", "integrate", "linalg", "signal", "ndimage", "fft",
               "interpolate", "cluster", "optimize", "sparse")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
