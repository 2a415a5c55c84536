"""The Array API standard's namespace metadata for ``jaxlite.numpy``:
``__array_api_version__`` and ``__array_namespace_info__()`` (as ``jax.numpy`` has them).

Layer: numpy (reads ``jaxlite.dtypes``' x64 setting and the runtime's device list;
computes nothing).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes

# The revision of the standard whose signatures jaxlite.numpy follows (JAX 0.10's).
ARRAY_API_VERSION = "2024.12"

# The standard's dtype kinds, in terms of NumPy's kind letters; float16 and bfloat16 are
# outside the standard and never listed.
_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KIND_NAMES["integral"] = _KIND_NAMES["signed integer"] + _KIND_NAMES["unsigned integer"]
_KIND_NAMES["numeric"] = (_KIND_NAMES["integral"] + _KIND_NAMES["real floating"]
                          + _KIND_NAMES["complex floating"])


_X64_ONLY = ("int64", "uint64", "float64", "complex128")


def _available(names):
    """The dtypes of ``names`` that arrays can hold now (64-bit ones only under x64)."""
    x64 = _dtypes.x64_enabled()
    return {n: np.dtype(n) for n in names if x64 or n not in _X64_ONLY}


class ArrayNamespaceInfo:
    """What ``jaxlite.numpy`` supports, in the Array API standard's inspection form
    (``jax.numpy.__array_namespace_info__()``'s object).

    Dtype answers follow the current ``jax_enable_x64`` setting: without it no 64-bit type
    is listed and the defaults are the 32-bit ones.
    """

    def capabilities(self) -> dict:
        """``{'boolean indexing': False, 'data-dependent shapes': False,
        'max dimensions': 64}``: a boolean mask or ``nonzero`` has a data-dependent shape,
        which jit cannot stage (eagerly both work)."""
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self):
        """None: arrays are created on the current default device."""
        return None

    def devices(self) -> list:
        """``[None]`` followed by every device (None: the current default)."""
        from ..runtime import devices
        return [None, *devices()]

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtype of each kind: ``'real floating'``, ``'complex floating'``,
        ``'integral'`` and ``'indexing'`` (float32/complex64/int32, or the 64-bit ones under
        x64). ``device`` is accepted and does not change the answer."""
        x64 = _dtypes.x64_enabled()
        i = np.dtype(np.int64 if x64 else np.int32)
        return {"real floating": np.dtype(np.float64 if x64 else np.float32),
                "complex floating": np.dtype(np.complex128 if x64 else np.complex64),
                "integral": i, "indexing": i}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The supported dtypes as ``{name: dtype}``, all of them or those of ``kind``:
        one of ``'bool'``, ``'signed integer'``, ``'unsigned integer'``, ``'integral'``,
        ``'real floating'``, ``'complex floating'``, ``'numeric'``, or a tuple of those.

        Raises KeyError for an unknown kind (as JAX does)."""
        if kind is None:
            return _available(_KIND_NAMES["numeric"] + _KIND_NAMES["bool"])
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out = {}
        for k in kinds:
            if not isinstance(k, str) or k not in _KIND_NAMES:
                raise KeyError(k)
            out.update(_available(_KIND_NAMES[k]))
        return out


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API inspection object of ``jaxlite.numpy``
    (``jax.numpy.__array_namespace_info__``)."""
    return ArrayNamespaceInfo()
