"""Device buffers: the storage under an Array, with exact memory accounting.

A Buffer owns one read-only NumPy array on one device.  Creating it adds its bytes to the
device's ``bytes_in_use``; ``delete()`` or garbage collection (whichever comes first)
subtracts them, exactly once.  A Buffer built with ``counted=False`` is a view of memory
accounted elsewhere and counts nothing.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import monitoring


class Buffer:
    """Read-only storage of ``data`` (an ``np.ndarray``) on ``device``, counted in bytes.

    Args:
      data: the host array; it is made read-only, never copied here.
      device: the owning Device.
      counted: False for a view of another buffer's memory (no bytes added).
    """

    __slots__ = ("data", "device", "nbytes", "__weakref__")   # weakref: jaxlite doctor

    def __init__(self, data: np.ndarray, device, counted: bool = True):
        # runs for every eager result: the device's accounting is inlined (Device._alloc)
        data.setflags(False)   # write=False (positional: keyword parsing costs 0.1 us)
        self.data = data
        self.device = device
        n = self.nbytes = data.nbytes if counted else 0
        used = device._bytes_in_use = device._bytes_in_use + n
        device._num_allocs += 1
        if used > device._peak:
            device._peak = used
        if n > device._largest:
            device._largest = n
        if monitoring._listeners:
            monitoring.emit("alloc", nbytes=n, device=device, buffer=weakref.ref(self))

    def delete(self) -> None:
        """Frees the storage now (idempotent); later reads raise RuntimeError through the
        owning Array."""
        if self.data is not None:
            self.data = None
            self.device._free(self.nbytes)

    @property
    def is_deleted(self) -> bool:
        return self.data is None

    def __del__(self):
        if self.data is not None:
            self.device._bytes_in_use -= self.nbytes   # Device._free, inlined
