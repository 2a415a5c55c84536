"""``jaxlite.Array``: an immutable array living in one device's memory.

Layer: core.  An ``ArrayImpl`` holds a runtime Buffer (read-only storage with memory
accounting), its abstract value and whether it is *committed* to its device.  Operators and
the NumPy-like methods (``+``, ``.sum()``, ``.at[]``, ``.reshape`` ...) are installed by
``jaxlite.numpy``, on tracers too, so that jitted and eager code read the same.
"""
from __future__ import annotations

import abc
import weakref

import numpy as np

from .. import dtypes
from ..runtime import check_transfer
from .avals import ShapedArray
from .trace import Tracer

# Weak references to every Array made; pruned of dead ones when the list doubles.
_live: list = []
_live_prune_at = [1024]


def immutable_error(idx) -> TypeError:
    i = "i" if isinstance(idx, (tuple, slice)) or getattr(idx, "ndim", 0) else repr(idx)
    return TypeError(
        "JAX arrays are immutable and do not support in-place item assignment "
        f"('Array' object does not support item assignment). Instead of x[{i}] = v, write "
        f"x = x.at[{i}].set(v) (or .add/.multiply/... ), which returns a new array.")


class Array(abc.ABC):
    """The array type of jaxlite (``jax.Array``): ``isinstance(x, jaxlite.Array)`` holds for
    concrete arrays and for traced values inside transformations."""

    __slots__ = ()


class ArrayImpl(Array):
    """A concrete array: shape, dtype, device, and a read-only buffer.

    Mirrors JAX's ``ArrayImpl``.  Immutable: ``x[i] = v`` raises TypeError (use
    ``x.at[i].set(v)``).  After ``delete()`` every use raises RuntimeError.
    """

    __slots__ = ("_buf", "aval", "_committed", "_key", "__weakref__")
    __array_priority__ = 100

    def __init__(self, buf, aval: ShapedArray, committed: bool = False):
        self._buf = buf
        self.aval = aval
        self._committed = committed
        self._key = None
        _live.append(weakref.ref(self))
        if len(_live) > _live_prune_at[0]:
            _prune_live()

    # ---- abstract properties -----------------------------------------------------------
    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    @property
    def itemsize(self):
        return self.aval.dtype.itemsize

    @property
    def nbytes(self):
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def committed(self) -> bool:
        return self._committed

    # ---- placement ---------------------------------------------------------------------
    @property
    def device(self):
        """The Device holding this array.  The old call form ``x.device()`` still works
        (Device.__call__ returns the device itself with a DeprecationWarning)."""
        return self._buf.device

    def devices(self) -> set:
        """The set of devices holding this array (``jax.Array.devices``)."""
        return {self._buf.device}

    @property
    def sharding(self):
        from ..sharding import SingleDeviceSharding
        return SingleDeviceSharding(self._buf.device)

    @property
    def is_fully_addressable(self) -> bool:
        return True

    # ---- lifetime ----------------------------------------------------------------------
    def block_until_ready(self):
        """Waits until the value is computed; returns ``self`` (``jax.Array.block_until_ready``)."""
        self._check_alive()
        return self

    def delete(self) -> None:
        """Frees the device memory now; any later use raises RuntimeError."""
        self._buf.delete()

    def is_deleted(self) -> bool:
        return self._buf.data is None

    def _check_alive(self):
        if self._buf.data is None:
            raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}.")

    # ---- host conversion ---------------------------------------------------------------
    def _host_value(self, explicit: bool = False) -> np.ndarray:
        self._check_alive()
        buf = self._buf
        check_transfer("device_to_host", explicit, buf.nbytes, buf.device, "host",
                       self.aval.str_short())
        return buf.data

    @property
    def _value(self) -> np.ndarray:
        return self._host_value()

    def __array__(self, dtype=None, copy=None):
        v = self._host_value()
        if copy:
            v = v.copy()
        return v if dtype is None else v.astype(dtype, copy=False)

    def __dlpack__(self, *args, **kwargs):
        return self._host_value().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def tolist(self):
        """Nested Python lists of the values (``jax.Array.tolist``)."""
        return self._host_value().tolist()

    def item(self, *args):
        """The value as a Python scalar (``jax.Array.item``)."""
        return self._host_value().item(*args)

    def __bool__(self):
        if self.size != 1:
            raise ValueError(
                f"The truth value of an array with more than one element is ambiguous "
                f"(shape {self.shape}). Use a.any() or a.all().")
        return bool(self._host_value())

    def __int__(self):
        return int(self._host_value())

    def __float__(self):
        return float(self._host_value())

    def __complex__(self):
        return complex(self._host_value())

    def __index__(self):
        if not dtypes.is_int(self.dtype) or self.ndim:
            raise TypeError(f"only integer scalar arrays can be converted to a scalar index, "
                            f"got {self.aval.str_short()}")
        return int(self._host_value())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError("unhashable type: 'jaxlite.Array'")

    def __setitem__(self, idx, value):
        raise immutable_error(idx)

    def __reduce__(self):
        from ..numpy import asarray
        return (asarray, (np.asarray(self._host_value()),))

    def __copy__(self):
        return self.copy() if hasattr(self, "copy") else self

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._host_value()[()], spec)
        return format(str(self), spec)

    # ---- printing ----------------------------------------------------------------------
    def __repr__(self):
        name = "bfloat16" if self.dtype == dtypes._BF16 else self.dtype.name
        if self.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={name})"
        prefix = "Array("
        extra = f"dtype={name}" + (", weak_type=True" if self.weak_type else "")
        v = self._buf.data
        if v.size == 0 and v.shape != (0,):
            return f"Array([], shape={v.shape}, {extra})"
        s = np.array2string(v, prefix=prefix, suffix=",", separator=", ")
        last = s.rsplit("\n", 1)[-1]
        sep = " " if len(last) + len(extra) + len(prefix) + 3 <= 75 or "\n" not in s else \
            "\n" + " " * len(prefix)
        return f"{prefix}{s},{sep}{extra})"

    def __str__(self):
        if self.is_deleted():
            return "<deleted>"
        return str(self._buf.data)


Array.register(Tracer)


def _prune_live():
    _live[:] = [r for r in _live if r() is not None]
    _live_prune_at[0] = max(1024, 2 * len(_live))


def live_arrays(platform: str | None = None) -> list:
    """All live (not deleted) Arrays, oldest first (``jax.live_arrays``)."""
    _prune_live()
    out = []
    for r in _live:
        a = r()
        if a is not None and a._buf.data is not None:
            out.append(a)
    return out
