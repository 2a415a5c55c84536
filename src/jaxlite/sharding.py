"""Shardings: which devices hold an array.  One-device placement for now.

Layer: runtime-adjacent, used by ``Array.sharding`` and ``device_put``.
"""
from __future__ import annotations


class Sharding:
    """Base of all shardings (``jax.sharding.Sharding``)."""


class SingleDeviceSharding(Sharding):
    """The whole array on one device (``jax.sharding.SingleDeviceSharding``)."""

    def __init__(self, device, *, memory_kind=None):
        self._device = device
        self.memory_kind = memory_kind

    @property
    def device_set(self) -> set:
        return {self._device}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(self._device)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"
