"""Devices and their memory accounting (``jax.Device``, ``jax.devices`` ...).

A CPU device owns host memory; each keeps exact counts of the bytes its live buffers hold
(``memory_stats``).  Several CPU devices exist when ``jax_num_cpu_devices`` (or
``JAX_NUM_CPU_DEVICES``, or ``XLA_FLAGS=--xla_force_host_platform_device_count=N``) asks.
"""
from __future__ import annotations

import warnings
from ..config import config


class Device:
    """One device: ``id``, ``platform``, ``device_kind``, ``process_index`` and memory stats.

    Mirrors ``jax.Device``.  Devices are singletons compared by identity.
    """

    platform = "cpu"

    def __init__(self, id: int):
        self.id = id
        self.process_index = 0
        self.host_id = 0
        self._bytes_in_use = 0
        self._peak = 0
        self._num_allocs = 0
        self._largest = 0

    @property
    def device_kind(self) -> str:
        return "cpu"

    @property
    def client(self):
        return None

    def memory_stats(self) -> dict:
        """Bytes held by this device's live buffers.

        Returns a dict with ``bytes_in_use``, ``peak_bytes_in_use``, ``num_allocs`` (buffers
        allocated so far), ``largest_alloc_size`` and ``bytes_limit`` (host RAM), as JAX's
        ``Device.memory_stats()`` does for accelerators.
        """
        return {
            "bytes_in_use": self._bytes_in_use,
            "peak_bytes_in_use": self._peak,
            "num_allocs": self._num_allocs,
            "largest_alloc_size": self._largest,
            "bytes_limit": _host_memory(),
        }

    def reset_peak_memory(self) -> None:
        """Sets ``peak_bytes_in_use`` back to the bytes in use now."""
        self._peak = self._bytes_in_use

    # accounting, called by Buffer only
    def _alloc(self, nbytes: int) -> None:
        self._bytes_in_use += nbytes
        self._num_allocs += 1
        if self._bytes_in_use > self._peak:
            self._peak = self._bytes_in_use
        if nbytes > self._largest:
            self._largest = nbytes

    def _free(self, nbytes: int) -> None:
        self._bytes_in_use -= nbytes

    def __call__(self):
        # The chapter's ``x.device()``: ``device`` was a method in old JAX, now a property.
        warnings.warn("Array.device() is deprecated: device is a property now; write "
                      "x.device instead of x.device().", DeprecationWarning, stacklevel=2)
        return self

    def __repr__(self):
        return f"CpuDevice(id={self.id})"

    def __str__(self):
        return f"TFRT_CPU_{self.id}"

    def __reduce__(self):
        return (_device_by_id, (self.id,))


class CpuDevice(Device):
    """A host CPU device (``jax`` prints these as ``CpuDevice(id=0)``)."""


def _host_memory() -> int:
    try:
        import os
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


_cpu_devices: list[Device] | None = None


def _cpu() -> list[Device]:
    global _cpu_devices
    if _cpu_devices is None:
        n = config.jax_num_cpu_devices
        _cpu_devices = [CpuDevice(i) for i in range(n)]
        config._freeze("jax_num_cpu_devices")
    return _cpu_devices


def _device_by_id(i: int) -> Device:
    return _cpu()[i]


_KNOWN_BACKENDS = ("cpu", "gpu", "cuda", "rocm", "tpu", "metal")


def devices(backend: str | None = None) -> list[Device]:
    """Devices of ``backend`` (default: the default backend), as ``jax.devices``.

    Raises:
      RuntimeError: the backend is not present on this machine (e.g. ``'gpu'``); the
        message lists the backends that are.
    """
    if backend is None or backend == "cpu":
        return list(_cpu())
    name = backend if isinstance(backend, str) else str(backend)
    if name.lower() in _KNOWN_BACKENDS:
        raise RuntimeError(
            f"Unknown backend: '{name}' requested, but no platforms that are instances of "
            f"{name} are present. Platforms present are: cpu")
    raise RuntimeError(f"Unknown backend {name!r}. Available backends are ['cpu']")


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Device]:
    """Devices attached to this process (``jax.local_devices``)."""
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    """Number of devices (``jax.device_count``)."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """Number of devices attached to this process (``jax.local_device_count``)."""
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """Name of the default backend: ``'cpu'`` (``jax.default_backend``)."""
    return "cpu"


def process_index() -> int:
    """Index of this process among all (``jax.process_index``): 0, single process."""
    return 0


def process_count() -> int:
    return 1


def get_default_device() -> Device:
    """The device uncommitted data lives on: ``jax_default_device`` or the first device."""
    d = config.jax_default_device
    if d is None:
        return _cpu()[0]
    if isinstance(d, str):
        return devices(d)[0]
    return d

