"""Shardings: which devices hold an array.  One-device placement for now.

Layer: runtime-adjacent (imports nothing of jaxlite), used by ``Array.sharding`` and
``device_put``.
"""
from __future__ import annotations


class Sharding:
    """Base of all shardings (``jax.sharding.Sharding``)."""

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        return self.device_set

    @property
    def is_fully_addressable(self) -> bool:
        return True


class SingleDeviceSharding(Sharding):
    """The whole array on one device (``jax.sharding.SingleDeviceSharding``).

    Args:
      device: the Device.
      memory_kind: the memory space; ``'device'`` (the default, and the only one).
    Raises:
      ValueError: an unknown memory kind.
    """

    def __init__(self, device, *, memory_kind: str | None = None):
        if memory_kind not in (None, "device"):
            raise ValueError(f"Could not find memory addressable by device {device!r}: "
                             f"memory_kind={memory_kind!r}; the only memory kind is 'device'.")
        self._device = device
        self.memory_kind = "device"

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def devices_indices_map(self, global_shape) -> dict:
        """``{device: index}``: the one device holds the whole array."""
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def shard_shape(self, global_shape) -> tuple:
        return tuple(global_shape)

    def with_memory_kind(self, kind: str) -> "SingleDeviceSharding":
        return SingleDeviceSharding(self._device, memory_kind=kind)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(self._device)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"
