"""``jaxlite.Array``: an immutable array living in one device's memory.

Layer: core.  An ``ArrayImpl`` holds a runtime Buffer (read-only storage with memory
accounting), its abstract value and whether it is *committed* to its device (placed there
by ``device_put`` with an explicit device; computations then follow it).  Operators and
the NumPy-like methods (``+``, ``.sum()``, ``.at[]``, ``.reshape`` ...) are installed by
``jaxlite.numpy``, on tracers too, so that jitted and eager code read the same.  This
module holds what needs no computation: properties, host conversion, printing, lifetime.
"""
from __future__ import annotations

import abc
import enum
import gc

import numpy as np

from .. import monitoring
from ..runtime import transfer as _transfer
from ..runtime.dispatch import PendingBuffer as _PendingBuffer
from .avals import ShapedArray
from .trace import Tracer


def immutable_error(idx) -> TypeError:
    i = "i" if isinstance(idx, (tuple, slice)) or getattr(idx, "ndim", 0) else repr(idx)
    return TypeError(
        "'Array' object does not support item assignment: jaxlite arrays are immutable. "
        f"Instead of x[{i}] = v, write "
        f"x = x.at[{i}].set(v) (or .add/.multiply/... ), which returns a new array.")


def _long_name(aval) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def deleted_error(aval) -> RuntimeError:
    """The error for any use of a deleted array (JAX's type and wording)."""
    return RuntimeError(f"this array ({_long_name(aval)}) was deleted and its buffer "
                        f"freed; it cannot be used any more.")


class DLDeviceType(enum.IntEnum):
    """DLPack device types (the first element of ``__dlpack_device__()``)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10


class Array(abc.ABC):
    """The array type of jaxlite (``jax.Array``): ``isinstance(x, jaxlite.Array)`` holds for
    concrete arrays and for traced values inside transformations."""

    __slots__ = ()


class ArrayImpl(Array):
    """A concrete array: shape, dtype, device, and a read-only buffer.

    Mirrors JAX's ``ArrayImpl``.  Immutable: ``x[i] = v`` raises TypeError (use
    ``x.at[i].set(v)``); unhashable.  After ``delete()`` every use of the values (operations,
    printing, ``np.asarray``, jit arguments, ``device_put``) raises RuntimeError.
    """

    __slots__ = ("_buf", "aval", "_committed", "_key", "__weakref__")
    __array_priority__ = 100

    def __init__(self, buf, aval: ShapedArray, committed: bool = False):
        # runs for every eager result: plain stores only
        self._buf = buf
        self.aval = aval
        self._committed = committed
        self._key = None

    # ---- abstract properties -----------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the values: ``size * itemsize``."""
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def committed(self) -> bool:
        """True when placed on its device by ``device_put(x, device)`` (or computed from
        such arrays): computations then run on that device."""
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
        """``SingleDeviceSharding(device)`` (``jax.Array.sharding``)."""
        from ..sharding import SingleDeviceSharding
        return SingleDeviceSharding(self._buf.device)

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def addressable_shards(self) -> list:
        """One ``Shard`` (device, index, replica_id, data) per device: here, one."""
        return [Shard(self._buf.device, tuple(slice(None) for _ in self.aval.shape), 0,
                      self)]

    global_shards = addressable_shards

    def addressable_data(self, index: int):
        """The array held by addressable shard ``index`` (the array itself)."""
        if index != 0:
            raise IndexError(f"shard index {index} out of range for an array on one device")
        return self

    # ---- lifetime ----------------------------------------------------------------------
    def block_until_ready(self):
        """Waits until the value is computed; returns ``self`` (``jax.Array.block_until_ready``).

        A computation dispatched asynchronously (runtime/dispatch.py) is waited for here,
        and its error, if it failed, is raised here (the same type, naming the operation
        or jitted function).  Raises RuntimeError if the array was deleted."""
        buf = self._buf
        if buf.data is None:
            raise deleted_error(self.aval)
        if not buf.device._host_memory:      # another platform's buffer: its ready event
            buf.device.backend.block_until_ready(buf.data, buf.device)
        return self

    def copy_to_host_async(self) -> None:
        """Starts copying the values to the host (a no-op: host memory already; it does
        not wait for a pending computation)."""
        buf = self._buf
        if type(buf) is _PendingBuffer:
            if buf._deleted:
                raise deleted_error(self.aval)
            return
        if buf.data is None:
            raise deleted_error(self.aval)

    def delete(self) -> None:
        """Frees the device memory now (``jax.Array.delete``); any later use of the values
        raises RuntimeError.  Deleting twice is a no-op.  Arrays that share the buffer
        (``device_put`` of an uncommitted array onto its own device) are deleted with it."""
        self._buf.delete()

    def is_deleted(self) -> bool:
        """True after ``delete()`` (or after donation).  Does not wait for a pending
        computation (nor raise its error)."""
        buf = self._buf
        if type(buf) is _PendingBuffer:
            res = buf._result       # set once computed (shared with other Arrays)
            return buf._deleted or (res is not None and res.data is None)
        return buf.data is None

    def _check_alive(self):
        if self._buf.data is None:
            raise deleted_error(self.aval)

    def on_device_size_in_bytes(self) -> int:
        """Bytes this array occupies on its device."""
        return self._buf.nbytes

    def unsafe_buffer_pointer(self) -> int:
        """Address of the first byte of the values."""
        return self._host_value().ctypes.data

    # ---- host conversion ---------------------------------------------------------------
    def _host_value(self, explicit: bool = False) -> np.ndarray:
        """The values as a read-only NumPy array, counted as a device-to-host transfer
        (guarded only where the device's memory is not host memory, as in JAX)."""
        buf = self._buf
        data = buf.data
        if data is None:
            raise deleted_error(self.aval)
        dev = buf.device
        if monitoring._listeners:
            monitoring.emit("read", array_id=id(self))
        if not dev._host_memory:
            # another platform's memory: a real copy, through its backend
            _transfer.guard("device_to_host", explicit, buf.nbytes, dev, "host", self.aval)
            data = _host_copy(buf)
        _transfer.count("device_to_host", explicit, data.nbytes, dev, "host", self.aval)
        return data

    @property
    def _value(self) -> np.ndarray:
        return self._host_value()

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(x)``: a read-only NumPy view of the values (a copy with ``copy=True``
        or another ``dtype``; ``copy=False`` with another dtype raises ValueError)."""
        v = self._host_value()
        if copy is None:
            return v if dtype is None else np.asarray(v, dtype=dtype)
        return np.asarray(v, dtype=dtype, copy=copy)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (``np.from_dlpack(x)``); read-only consumers share the memory."""
        v = self._host_value()
        try:
            return v.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                copy=copy)
        except BufferError:
            # an old consumer cannot be told the memory is read-only: export a copy
            if copy is False:
                raise
            return v.copy().__dlpack__(stream=stream, max_version=max_version,
                                       dl_device=dl_device)

    def __dlpack_device__(self) -> tuple:
        return (DLDeviceType.kDLCPU, 0)

    def tolist(self):
        """Nested Python lists of the values (``jax.Array.tolist``)."""
        return self._host_value().tolist()

    def tobytes(self, order: str = "C") -> bytes:
        """The raw bytes of the values (``jax.Array.tobytes``)."""
        return self._host_value().tobytes(order)

    def item(self, *args):
        """The value (or the element at ``args``) as a Python scalar (``jax.Array.item``).

        Raises ValueError for an array of more than one element without an index."""
        return self._host_value().item(*args)

    def _scalar_value(self):
        if self.aval.shape:
            raise TypeError(f"cannot convert an array of shape {self.aval.shape} "
                            f"(ndim={len(self.aval.shape)}) to a Python scalar: only 0-d "
                            f"arrays convert.")
        return self._host_value()   # 0-d: NumPy's conversions (complex -> float fails)

    def __bool__(self):
        n = self.aval.size
        if n == 0:
            raise ValueError("an empty array has no truth value; test `x.size > 0` to ask "
                             "whether it has elements.")
        if n > 1:
            raise ValueError(f"an array of shape {self.aval.shape} has no single truth value; "
                             f"reduce it with x.any() or x.all() first.")
        return bool(self._host_value())

    def __int__(self):
        return int(self._scalar_value())

    def __float__(self):
        return float(self._scalar_value())

    def __complex__(self):
        return complex(self._scalar_value())

    def __index__(self):
        if self.aval.shape or self.aval.dtype.kind not in "iu":
            raise TypeError(f"a {_long_name(self.aval)} array cannot serve as an index: that "
                            f"needs a 0-d integer array.")
        return int(self._host_value()[()])

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        """Iterates over the rows, each an Array on the same device (``0-d``: TypeError)."""
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        if self._buf.data is None:
            raise deleted_error(self.aval)
        return self._rows()

    def _rows(self):
        from ..runtime.buffer import host_view, new_buffer
        a = self.aval
        row = ShapedArray(a.shape[1:], a.dtype, a.weak_type)
        buf = self._buf
        dev = buf.device
        for i in range(a.shape[0]):
            if buf.data is None:
                raise deleted_error(a)
            r = np.array(host_view(buf)[i])
            if not dev._host_memory:
                r = dev.backend.from_host(r, dev)
            yield ArrayImpl(new_buffer(r, dev), row, self._committed)

    def __hash__(self):
        raise TypeError(f"unhashable type: 'jaxlite.Array' (shape {self.aval.shape})")

    def __setitem__(self, idx, value):
        raise immutable_error(idx)

    def __reduce__(self):
        # the values and the weak type travel; the copy lands on the default device
        return (_reconstruct, (np.array(self._host_value()), self.aval.weak_type))

    def __copy__(self):
        """A new array with its own buffer on the same device (same placement)."""
        from ..runtime.buffer import native_copy, new_buffer
        buf = self._buf
        if buf.data is None:
            raise deleted_error(self.aval)
        return ArrayImpl(new_buffer(native_copy(buf, buf.device), buf.device), self.aval,
                         self._committed)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __format__(self, spec):
        v = self._host_value()
        return format(v[()] if not v.ndim else v, spec)

    # ---- printing ----------------------------------------------------------------------
    def __repr__(self):
        v = self._host_value()
        a = self.aval
        dtype_str = f"dtype={a.dtype.name}" + (", weak_type=True" if a.weak_type else "")
        width = np.get_printoptions()["linewidth"]
        prefix = "Array("
        if v.size == 0:
            body = f"[], shape={a.shape}"
        else:
            body = np.array2string(v, max_line_width=width, prefix=prefix, suffix=",",
                                   separator=", ")
        # JAX's rule: dtype on the same line after one space if it fits, else after as
        # many spaces as the prefix is long (still on the same line).
        last = len(body) - body.rfind("\n") + 1
        sep = " " if last + len(dtype_str) + 2 <= width else " " * len(prefix)
        return f"{prefix}{body},{sep}{dtype_str})"

    def __str__(self):
        return str(self._host_value())


Array.register(Tracer)


class Shard:
    """One piece of an array on one device (``jax.Shard``): ``device``, ``index`` (tuple of
    slices into the global array), ``replica_id`` and ``data`` (an Array)."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, replica_id, data):
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data!r})")


def _host_copy(buf) -> np.ndarray:
    """A read-only host copy of the values of ``buf`` (a buffer of another platform; its
    backend's ``to_host`` result itself when that is a fresh array)."""
    from ..runtime.buffer import host_view
    v = host_view(buf)
    if not (buf.device.backend.to_host_is_fresh and type(v) is np.ndarray):
        v = np.array(v, copy=True)
    v.setflags(write=False)
    return v


def _reconstruct(value, weak_type):
    from .eager import from_host
    return from_host(value, value.dtype, weak_type)


def live_arrays(platform: str | None = None) -> list:
    """All live (not deleted, not yet garbage-collected) Arrays (``jax.live_arrays``).

    Args:
      platform: None (every platform) or a platform name (``'cpu'``); a platform without
        arrays gives an empty list.
    Returns:
      list of Array, in no particular order.  Found by walking the garbage collector's
      objects, so creating arrays costs nothing extra; a call takes milliseconds.
    """
    return [o for o in gc.get_objects()
            if type(o) is ArrayImpl and o._buf.data is not None and
            (platform is None or o._buf.device.platform == platform)]
