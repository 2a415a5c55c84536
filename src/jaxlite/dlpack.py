"""DLPack interchange (``jax.dlpack``): arrays from and to other libraries without copies.

Layer: public API, above ``runtime``.  Import goes through NumPy's DLPack consumer
(``numpy.from_dlpack``): any producer NumPy reads (NumPy itself, jaxlite and JAX arrays,
PyTorch CPU tensors, ...) becomes a jaxlite Array on a CPU device, sharing the producer's
memory when no copy is needed or asked for.  Export is ``Array.__dlpack__`` /
``Array.__dlpack_device__`` (core/array.py).  NumPy's DLPack knows no bfloat16 or narrow
types, so neither direction carries them here (``is_supported_dtype`` says so).
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .core.array import ArrayImpl, DLDeviceType
from .core.avals import ShapedArray
from .runtime import Buffer
from .runtime.device import local_devices

__all__ = ["from_dlpack", "is_supported_dtype"]

SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128))

# device types a DLPack producer may report that name an accelerator backend (JAX raises
# RuntimeError for those it lacks) rather than an unknown kind of memory (TypeError)
_BACKEND_NAMES = {int(DLDeviceType.kDLCUDA): "cuda", int(DLDeviceType.kDLROCM): "rocm"}


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` travel through DLPack here (``jax.dlpack.
    is_supported_dtype``): bool, the 8- to 64-bit signed and unsigned integers, float16,
    float32, float64, complex64 and complex128.

    bfloat16 is not (JAX: it is): NumPy's DLPack, which jaxlite goes through, has no
    bfloat16; nor are the narrow types (float8, int4, ...), as in JAX.

    Args:
      dtype: a dtype, a scalar type or a dtype name.
    Returns:
      bool; False for dtypes arrays cannot hold at all (objects, strings).
    Raises:
      TypeError: ``dtype`` is None or names no dtype.

    Example::

      >>> jaxlite.dlpack.is_supported_dtype(jnp.float32), is_supported_dtype(jnp.int4)
      (True, False)
    """
    if dtype is None:
        raise TypeError("is_supported_dtype expects a dtype (a dtype, a scalar type or a "
                        "name such as 'float32'), got None")
    return dtypes._to_dtype(dtype) in SUPPORTED_DTYPES


def _source_device(external_array):
    """The jaxlite device the producer's memory is on (a CPU device)."""
    dev_type, dev_id = external_array.__dlpack_device__()
    dev_type, dev_id = int(dev_type), int(dev_id)
    if dev_type in _BACKEND_NAMES:
        raise RuntimeError(
            f"from_dlpack: the array is on a {_BACKEND_NAMES[dev_type]} device (DLPack device "
            f"type {dev_type}), a backend jaxlite does not have (only 'cpu'); copy it to "
            f"host memory first.")
    if dev_type != DLDeviceType.kDLCPU:
        raise TypeError(f"from_dlpack: the array is on an unsupported DLPack device type "
                        f"{dev_type} (only CPU memory, type 1, can be read); got "
                        f"{type(external_array).__name__}")
    cpus = local_devices(backend="cpu")
    if not 0 <= dev_id < len(cpus):
        raise ValueError(f"from_dlpack: the array names CPU device {dev_id}, but there are "
                         f"{len(cpus)} CPU devices")
    return cpus[dev_id]


def from_dlpack(external_array, device=None, copy=None):
    """An Array holding the data of a DLPack producer (``jax.dlpack.from_dlpack``).

    The result shares the producer's memory unless a copy is asked for (``copy=True``) or
    needed: a dtype that is not canonical (float64/int64/complex128 with
    ``jax_enable_x64`` off become float32/int32/complex64, as JAX), strides that are not
    C-contiguous, or another ``device``.  As in JAX, changing shared memory afterwards
    through the producer changes the Array too: treat the producer as frozen.  Importing
    is not counted as a host-to-device transfer (nothing moves); a move to another
    ``device`` is a device-to-device one.

    Args:
      external_array: an object with ``__dlpack__`` and ``__dlpack_device__`` (a NumPy
        array, a jaxlite or JAX Array, a CPU PyTorch tensor, ...), any shape, of a dtype
        ``is_supported_dtype`` accepts.
      device: None (the producer's CPU device), a Device or a ``SingleDeviceSharding``.
        The result is committed to its device either way, as in JAX.
      copy: None (copy only when needed), True (always copy), False (never copy: raise
        when one is needed).

    Returns:
      An Array of the producer's shape and canonicalised dtype, never weakly typed.

    Raises:
      TypeError: ``external_array`` lacks ``__dlpack__``/``__dlpack_device__`` (a list, a
        NumPy scalar, a bare capsule), lives on an unknown kind of device, or has a dtype
        arrays cannot hold.
      RuntimeError: it lives on a GPU (jaxlite has only the CPU backend).
      ValueError: ``copy=False`` where a copy is needed; a CPU device id that does not
        exist; ``device`` is not a Device or a Sharding.
      BufferError: the producer cannot export (a dtype NumPy's DLPack lacks, such as
        bfloat16).

    Example::

      >>> x = np.arange(3, dtype=np.float32)
      >>> jaxlite.dlpack.from_dlpack(x)
      Array([0., 1., 2.], dtype=float32)
    """
    from .core.placement import _target_device, device_put
    if not (hasattr(external_array, "__dlpack__") and
            hasattr(external_array, "__dlpack_device__")):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ and __dlpack_device__ "
                        f"methods (a NumPy array, an Array, a PyTorch tensor, ...); got "
                        f"{type(external_array).__name__}")
    if copy not in (None, True, False):
        raise ValueError(f"from_dlpack: copy must be None, True or False, got {copy!r}")
    target = _target_device(device)
    src = _source_device(external_array)
    if copy is False and target is not None and target is not src:
        raise ValueError(f"from_dlpack: the array is on {src} and device={target} asks for "
                         f"another device, which needs a copy, but copy=False")
    host = np.from_dlpack(external_array, copy=copy)
    dt = dtypes.canonicalize_dtype(host.dtype)     # TypeError for non-array dtypes
    if dt != host.dtype or not host.flags.c_contiguous:
        if copy is False:
            why = (f"dtype {host.dtype} is stored as {dt} (jax_enable_x64 is off)"
                   if dt != host.dtype else "its strides are not C-contiguous")
            raise ValueError(f"from_dlpack: the array needs a copy ({why}), but copy=False")
        with np.errstate(all="ignore"):
            host = np.array(host, dtype=dt, order="C")
    out = ArrayImpl(Buffer(host, src), ShapedArray(host.shape, dt, False), True)
    if target is not None and target is not src:
        out = device_put(out, target)
    return out


def numpy_from_dlpack(x, /, *, device=None, copy=None):
    """An Array holding the data of a DLPack producer (``jax.numpy.from_dlpack``): the
    same as ``jaxlite.dlpack.from_dlpack(x, device, copy)`` (see there for sharing, copies
    and errors), with ``x`` positional-only and the rest keyword-only.

    Example::

      >>> jnp.from_dlpack(np.ones((2, 2), np.int8)).dtype
      dtype('int8')
    """
    return from_dlpack(x, device=device, copy=copy)


numpy_from_dlpack.__name__ = numpy_from_dlpack.__qualname__ = "from_dlpack"
