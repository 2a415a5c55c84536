"""Device buffers: the storage under an Array, with exact memory accounting.

A Buffer owns one read-only NumPy array on one device.  Creating it adds its bytes to the
device's ``bytes_in_use``; ``delete()`` (or garbage collection) subtracts them.  Views
share their base's storage and count nothing.
"""
from __future__ import annotations

import numpy as np


class Buffer:
    """Read-only storage of ``data`` (an ``np.ndarray``) on ``device``, counted in bytes.

    Args:
      data: the host array; it is made read-only, never copied here.
      device: the owning Device.
      counted: False for a view of another buffer's memory (no bytes added).
    """

    __slots__ = ("data", "device", "nbytes", "__weakref__")

    def __init__(self, data: np.ndarray, device, counted: bool = True):
        data.flags.writeable = False
        self.data = data
        self.device = device
        self.nbytes = data.nbytes if counted else 0
        device._alloc(self.nbytes)

    def delete(self) -> None:
        """Frees the storage now; later reads raise RuntimeError (through the owner)."""
        if self.data is not None:
            self.data = None
            self.device._free(self.nbytes)
            self.nbytes = 0

    @property
    def is_deleted(self) -> bool:
        return self.data is None

    def __del__(self):
        if self.data is not None and self.nbytes:
            self.device._free(self.nbytes)
