"""Devices and their memory accounting (``jax.Device``, ``jax.devices`` ...).

Each device belongs to one platform's Backend (runtime/backend.py; ``device.backend``),
which creates it; every device keeps exact counts of the bytes its live buffers hold
(``memory_stats``).  ``devices(platform)``, ``local_devices`` and ``default_backend`` come
from the registered backends.  The CPU platform (backends/cpu/) makes several devices
when ``jax_num_cpu_devices`` (or ``JAX_NUM_CPU_DEVICES``, or
``XLA_FLAGS=--xla_force_host_platform_device_count=N``) asks, as in JAX; a platform's
devices are created on first use, after which their number is fixed.

The device uncommitted data goes to (``get_default_device``) is, in order: the innermost
``default_device`` block of this thread, the ``jax_default_device`` flag, the first device.
"""
from __future__ import annotations

import os
import re
import threading
import warnings

from ..config import config
from . import backend as _backend
from .._traceback import user_stacklevel as _user_stacklevel
from . import buffer as _buffer


class Device:
    """One device: ``id``, ``platform``, ``device_kind``, ``process_index``, its
    ``backend`` and memory stats.

    Mirrors ``jax.Device``.  Devices are singletons compared by identity: ``jax.devices()``
    returns the same objects every time, so ``x.device is jaxlite.devices()[0]`` holds.
    ``repr`` is ``CpuDevice(id=0)`` (the class name), ``str`` is ``cpu:0`` (as JAX prints
    them).

    Args:
      id: the device's number within its platform (0, 1, ...).
      backend: the platform's Backend (runtime/backend.py) that created it; ``platform``
        and whether its memory is host memory come from it.
      device_kind: a description of the hardware (default: the platform's name).
    """

    platform = "cpu"
    device_kind = "cpu"
    # Memory the host reads directly (the backend's ``host_memory``): reading values to
    # the host copies nothing, so the device-to-host transfer guard does not apply (as for
    # JAX's CPU devices), and the eager hot paths run NumPy code on its buffers.
    _host_memory = True
    backend = None

    def __init__(self, id: int, backend=None, device_kind: str | None = None):
        self.id = id
        if backend is not None:
            self.backend = backend
            self.platform = backend.platform
            self._host_memory = bool(backend.host_memory)
            self.device_kind = device_kind or backend.platform
        elif device_kind is not None:
            self.device_kind = device_kind
        self.process_index = 0
        self.host_id = 0
        self.task_id = 0
        self.local_hardware_id = id
        self._bytes_in_use = 0
        self._peak = 0
        self._num_allocs = 0
        self._largest = 0

    @property
    def client(self):
        return None

    def memory_stats(self) -> dict:
        """Bytes held by this device's live buffers (``jax.Device.memory_stats``).

        Returns a dict with ``bytes_in_use`` (bytes of all live buffers: every Array, and
        the temporaries of a running compiled program), ``peak_bytes_in_use``,
        ``num_allocs`` (buffers allocated so far), ``largest_alloc_size`` (bytes of the
        largest single allocation), ``bytes_limit`` (the host's RAM) and ``pool_bytes``
        (host memory the recycling buffer pool keeps free for reuse, shared by all CPU
        devices and not part of ``bytes_in_use``; see runtime/buffer.py ``BufferPool``).

        Example::

            >>> d = jaxlite.devices()[0]
            >>> before = d.memory_stats()["bytes_in_use"]
            >>> x = jaxlite.numpy.zeros(1000, "float32")
            >>> d.memory_stats()["bytes_in_use"] - before
            4000

        Computations dispatched asynchronously to this device (runtime/dispatch.py) are
        waited for first, so the counts include everything called so far.
        """
        from . import dispatch
        dispatch.wait_device(self)
        return {
            "bytes_in_use": self._bytes_in_use,
            "peak_bytes_in_use": self._peak,
            "num_allocs": self._num_allocs,
            "largest_alloc_size": self._largest,
            "bytes_limit": (_host_memory() if self._host_memory else
                            int(getattr(self.backend, "bytes_limit", 0))),
            "pool_bytes": _buffer.POOL.stats()["free_bytes"] if self._host_memory else 0,
        }

    def reset_peak_memory(self) -> None:
        """Sets ``peak_bytes_in_use`` back to the bytes in use now (after the computations
        dispatched so far)."""
        from . import dispatch
        dispatch.wait_device(self)
        self._peak = self._bytes_in_use

    # accounting, called by Buffer (and by executables for their temporaries)
    def _alloc(self, nbytes: int) -> None:
        n = self._bytes_in_use + nbytes
        self._bytes_in_use = n
        self._num_allocs += 1
        if n > self._peak:
            self._peak = n
        if nbytes > self._largest:
            self._largest = nbytes

    def _free(self, nbytes: int) -> None:
        self._bytes_in_use -= nbytes

    def _charge_failed(self, nbytes: int, peak: int, largest: int) -> None:
        """Takes back a charge of ``nbytes`` temporaries whose program raised (e.g. a
        MemoryError while allocating them): the peak and the largest allocation return to
        what they were before the charge, or to the bytes in use now if that is more."""
        self._bytes_in_use -= nbytes
        self._peak = max(peak, self._bytes_in_use)
        self._largest = largest

    def _run_charged(self, nbytes: int, fn):
        """``fn()`` with ``nbytes`` of a program's temporaries charged while it runs.  If
        it raises, the charge is taken back as by ``_charge_failed``."""
        if not nbytes:
            return fn()
        before = self._peak, self._largest
        self._alloc(nbytes)
        try:
            out = fn()
        except BaseException:
            self._charge_failed(nbytes, *before)
            raise
        self._free(nbytes)
        return out

    def __call__(self):
        # The chapter's ``x.device()``: ``device`` was a method in old JAX, now a property.
        warnings.warn("Array.device() is deprecated: device is a property now; write "
                      "x.device instead of x.device().", DeprecationWarning, stacklevel=_user_stacklevel())
        return self

    def __repr__(self):
        return f"{type(self).__name__}(id={self.id})"

    def __str__(self):
        return f"{self.platform}:{self.id}"

    def __reduce__(self):
        # by its backend's platform: the name a device reports may be an alias of it
        # (a CUDA device's 'gpu')
        b = self.backend
        return (_device_by_id, (self.id, self.platform if b is None else b.platform))


class CpuDevice(Device):
    """A host CPU device (``jax`` prints these as ``CpuDevice(id=0)``)."""


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _xla_flags_cpu_count() -> int | None:
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)",
                  os.environ.get("XLA_FLAGS", ""))
    return int(m.group(1)) if m else None


def num_cpu_devices() -> int:
    """How many CPU devices the configuration asks for (``jax_num_cpu_devices``, else
    ``XLA_FLAGS``' host device count, else 1); read by the CPU backend when it creates its
    devices."""
    n = config.jax_num_cpu_devices
    if n is None or n < 0:
        n = _xla_flags_cpu_count() or 1
    return n


_first: Device | None = None     # the default platform's first device, once known


def _device_by_id(i: int, platform: str = "cpu") -> Device:
    for d in devices(platform):
        if d.id == i:
            return d
    raise ValueError(f"no {platform} device has id {i}")


def _platform_backend(backend):
    """The registered Backend for ``backend`` (None: the default platform; a name such as
    ``'cpu'``; an object with a ``platform``).  Raises RuntimeError when absent."""
    if backend is None:
        name = default_backend()
    elif isinstance(backend, str):
        default_backend()     # the platforms jax_platforms names must exist, as in JAX
        name = backend
    else:
        name = getattr(backend, "platform", str(backend))
    return _lookup(name)


def _lookup(name: str):
    """The registered Backend of platform ``name`` (``'gpu'``: cuda, rocm or oneapi);
    RuntimeError worded as JAX's when there is none."""
    b = _backend.get(name)
    if b is None:
        cause = None
        for p in _backend.ALIASES.get(name, (name,)):
            try:     # a platform registered on demand (a PJRT plugin)
                b = _backend.provide(p)
            except RuntimeError as e:
                cause = cause or e
            if b is not None:
                return b
        present = [p.platform for p in _backend.registered()]
        if cause is not None:    # JAX's words for a platform that failed to start
            raise RuntimeError(f"Backend '{name}' failed to initialize: {cause}. "
                               f"Available backends are {present}") from None
        hint = _backend.missing_hint(name)       # what to install, for a known platform
        if name in _backend.ALIASES:
            raise RuntimeError(f"Unknown backend: {name!r} requested, but no platforms that "
                               f"are instances of {name} are present. Platforms present "
                               f"are: {','.join(present)}{'.' if hint else ''}{hint}")
        raise RuntimeError(f"Unknown backend '{name}'. Available backends are "
                           f"{present}{'.' if hint else ''}{hint}")
    return b


def devices(backend: str | None = None) -> list:
    """Devices of ``backend`` (default: the default backend), as ``jax.devices``.

    Args:
      backend: None, a platform name (``'cpu'``, or one a registered Backend provides), or
        an object with a ``platform`` attribute.
    Returns:
      list of Device, ordered by id (``[CpuDevice(id=0), ...]``).
    Raises:
      RuntimeError: no backend of that platform is registered (``'gpu'``, ``'tpu'``,
        ``'cuda'`` ... on a machine without them), naming the platforms there are.
    """
    return list(_platform_backend(backend).devices())


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list:
    """Devices attached to process ``process_index`` (this one) (``jax.local_devices``).

    Raises RuntimeError for an absent backend, as ``devices``.
    """
    devs = devices(backend)
    if process_index is None:
        process_index = host_id if host_id is not None else _this_process()
    return [d for d in devs if d.process_index == process_index]


def device_count(backend: str | None = None) -> int:
    """Number of devices (``jax.device_count``)."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """Number of devices attached to this process (``jax.local_device_count``)."""
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """Name of the default platform (``jax.default_backend``): the first platform named in
    ``jax_platforms`` (``JAX_PLATFORMS``), else ``jax_platform_name``, else the registered
    backend of highest priority (``'cpu'`` on a plain installation).

    Raises RuntimeError when a platform ``jax_platforms`` names is not present ("Unable to
    initialize backend 'tpu': ...", as JAX; ``runtime.backend.requested_platforms``), or
    when no backend is registered (only before jaxlite is imported)."""
    regs = _backend.registered()
    if not regs:
        raise RuntimeError("no platform is registered: import jaxlite first")
    wanted = config.jax_platforms
    if wanted:
        global _platforms_checked
        if _platforms_checked is None or _platforms_checked[0] != wanted:
            _platforms_checked = (wanted, _backend.requested_platforms(wanted)[0])
        return _platforms_checked[1]
    if config.jax_platform_name:     # JAX's older flag: the default platform only
        return _lookup(config.jax_platform_name).platform
    if not _backend._autodetected:   # accelerators found on demand (a TPU whose client
        _backend.autodetect()        # starts becomes the default, as in JAX)
        regs = _backend.registered()
    best = regs[0]
    for b in regs[1:]:
        if b.priority > best.priority:
            best = b
    return best.platform


# (jax_platforms value, its default platform) once every platform it names was found
_platforms_checked = None


def process_index(backend: str | None = None) -> int:
    """Index of this process among all (``jax.process_index``): its MPI rank once
    ``jaxlite.distributed.initialize()`` ran, else 0.  Raises RuntimeError for a
    ``backend`` that is not present (as ``devices``)."""
    if backend is not None:
        _platform_backend(backend)
    return _this_process()


def _this_process() -> int:
    from . import mpi
    w = mpi.world()
    return 0 if w is None else w.rank


def process_count(backend: str | None = None) -> int:
    """Number of processes (``jax.process_count``): the MPI job's size once
    ``jaxlite.distributed.initialize()`` ran, else 1.  Raises RuntimeError for a
    ``backend`` that is not present (as ``devices``)."""
    if backend is not None:
        _platform_backend(backend)
    from . import mpi
    w = mpi.world()
    return 1 if w is None else w.size


def process_indices(backend: str | None = None) -> list:
    """The indices of every process (``jax.process_indices``): ``[0, ...,
    process_count() - 1]``."""
    return list(range(process_count(backend)))


# as JAX numbers CPU devices over several processes: process p's k-th device is
# p * 2048 + k (checked against JAX 0.10.2 with two processes)
CPU_IDS_PER_PROCESS = 2048


def global_cpu_devices(backend, local_count: int) -> list:
    """The CPU devices of every process of the MPI job (``jax.devices()`` there): this
    process's ``local_count`` devices, which hold buffers, and the other processes'
    devices, which only name where their shards live (``process_index`` says whose)."""
    from . import mpi
    w = mpi.world()
    devs = []
    for p, n in enumerate(w.local_counts):
        for k in range(n):
            d = CpuDevice(p * CPU_IDS_PER_PROCESS + k, backend)
            d.process_index = d.host_id = d.task_id = p
            d.local_hardware_id = k
            devs.append(d)
    return devs


class _ThreadState(threading.local):
    default_device = None  # set by the ``default_device`` context manager


_state = _ThreadState()
_config_default = None  # mirror of the jax_default_device flag


def _on_config(name, value):
    global _config_default
    if name == "jax_default_device":
        _config_default = value


config._on_change(_on_config)
_on_config("jax_default_device", config.jax_default_device)


def get_default_device() -> Device:
    """The device uncommitted data and computations go to: the innermost
    ``default_device`` block of this thread, else ``jax_default_device``, else device 0.
    (Runs on every eager operation: keep it to a few attribute reads.)"""
    d = _state.default_device
    if d is None:
        d = _config_default
        if d is None:
            return _first if _first is not None else _first_device()
    if type(d) is str:
        return devices(d)[0]
    return d


def _first_device() -> Device:
    global _first
    d = local_devices()[0]
    _first = d
    return d


def _forget_default() -> None:
    """Called when the registry changes: the default device is looked up again."""
    global _first, _platforms_checked
    _first = None
    _platforms_checked = None


def check_default_device(device):
    """``device`` as a default device: a Device, a platform name, or None.

    Raises ValueError otherwise (as ``jax.default_device``)."""
    if device is None or isinstance(device, (Device, str)):
        return device
    raise ValueError(f"jaxlite.default_device takes a Device (such as "
                     f"jaxlite.devices('cpu')[0]), a platform name such as 'cpu', or None; "
                     f"got {device!r}")
