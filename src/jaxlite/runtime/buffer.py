"""Device buffers: the storage under an Array, with exact memory accounting.

A Buffer owns one read-only NumPy array on one device whose memory is host memory (the
CPU); a ``DeviceBuffer`` owns one native value of another platform's backend (whatever
object its allocator returns).  Both are made by ``new_buffer``, the one place that turns
a backend's result into counted storage.  Creating it adds its bytes to the
device's ``bytes_in_use``; ``delete()`` or garbage collection (whichever comes first)
subtracts them, exactly once.  A Buffer built with ``counted=False`` is a view of memory
accounted elsewhere and counts nothing.

``BufferPool`` (``POOL``) recycles the host memory of programs' outputs and temporaries:
a buffer is handed out again only once nothing but the pool references it.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref

import numpy as np

from .. import monitoring
from ..config import config


class Buffer:
    """Read-only storage of ``data`` (an ``np.ndarray``) on ``device``, counted in bytes.

    Args:
      data: the host array; it is made read-only, never copied here.
      device: the owning Device.
      counted: False for a view of another buffer's memory (no bytes added).
    """

    __slots__ = ("data", "device", "nbytes", "__weakref__")   # weakref: jaxlite doctor

    def __init__(self, data: np.ndarray, device, counted: bool = True):
        # runs for every eager result: the device's accounting is inlined (Device._alloc);
        # core/_eager_ops.c ``new_buffer`` does the same work in C for the operators' fast
        # path (keep the two alike; tests/test_eager_ops_native.py compares them)
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


class DeviceBuffer(Buffer):
    """Storage of a native value ``data`` of a platform whose memory is not host memory
    (runtime/backend.py): its bytes (the backend's ``nbytes``) are charged to ``device``
    when it is created and given back, and the backend's ``free`` called, exactly once
    when it is deleted or collected.  The eager fast paths, which handle host NumPy
    arrays, recognise a Buffer by its exact type and leave this one to the full path."""

    __slots__ = ()

    def __init__(self, data, device, counted: bool = True):
        self.data = data
        self.device = device
        n = self.nbytes = int(device.backend.nbytes(data)) if counted else 0
        device._alloc(n)
        if monitoring._listeners:
            monitoring.emit("alloc", nbytes=n, device=device, buffer=weakref.ref(self))

    def delete(self) -> None:
        data = self.data
        if data is not None:
            self.data = None
            self.device._free(self.nbytes)
            self.device.backend.free(data, self.device)

    def __del__(self):
        self.delete()


# ---- allocations that cannot be satisfied ------------------------------------------------

def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


HOST_BYTES = _physical_memory()
"""The host's RAM in bytes (0: unknown), the capacity of a device with host memory."""


def bytes_limit(device) -> int:
    """The most bytes ``device`` can hold (``memory_stats()['bytes_limit']``): the host's
    RAM for host memory, the backend's ``bytes_limit`` otherwise; 0 when unknown."""
    if device._host_memory:
        return HOST_BYTES
    return int(getattr(device.backend, "bytes_limit", 0) or 0)


def out_of_memory(nbytes, shape=None, dtype=None, device=None, what: str = ""):
    """The ``JaxRuntimeError`` for an allocation of ``nbytes`` (of an array of ``shape``
    and ``dtype`` on ``device``, for the operation ``what``) that cannot be satisfied; its
    text starts with ``RESOURCE_EXHAUSTED`` and names the bytes, as JAX's does."""
    from ..errors import JaxRuntimeError
    size = "an unknown number of" if nbytes is None else str(int(nbytes))
    of = ""
    if shape is not None:
        of = f" for an array of shape {tuple(shape)}"
        if dtype is not None:
            of += f" and dtype {np.dtype(dtype).name}"
    where = f" on {device}" if device is not None else ""
    limit = bytes_limit(device) if device is not None else 0
    cap = f" (the device holds at most {limit} bytes)" if limit else ""
    op = f" in {what}" if what else ""
    return JaxRuntimeError(
        f"RESOURCE_EXHAUSTED: Out of memory allocating {size} bytes{of}{where}{op}{cap}. "
        f"Use smaller arrays, or process the data in pieces (e.g. with jaxlite.lax.map or "
        f"a loop over slices).")


def memory_error(err: BaseException, device=None, what: str = "", aval=None):
    """``out_of_memory`` for a MemoryError ``err`` an allocation raised (NumPy's names
    the shape and dtype it tried; else ``aval``, the result being computed, if given)."""
    shape = getattr(err, "shape", None)
    dtype = getattr(err, "dtype", None)
    if shape is None and aval is not None:
        shape, dtype = aval.shape, aval.dtype
    nbytes = None
    if shape is not None and dtype is not None:
        try:
            nbytes = np.dtype(dtype).itemsize
            for d in shape:
                nbytes *= int(d)
        except TypeError:
            shape = dtype = nbytes = None
    e = out_of_memory(nbytes, shape, dtype, device, what)
    e.__cause__ = err
    return e


def check_fits(avals, device, what: str = "") -> None:
    """Raises ``out_of_memory`` (JaxRuntimeError) when one of ``avals`` (the results of
    an operation about to be dispatched to ``device``) has more bytes than the device can
    hold: such an allocation can never be satisfied, so it fails at the call that asks
    for it, not later where the result is read."""
    limit = bytes_limit(device)
    if not limit:
        return
    for a in avals:
        n = a.dtype.itemsize
        for d in a.shape:
            n *= d
        if n > limit:
            raise out_of_memory(n, a.shape, a.dtype, device, what)


def new_buffer(native, device):
    """The counted storage of ``native`` (a value ``device``'s backend produced) on
    ``device``: a Buffer of a host NumPy array, or a DeviceBuffer."""
    if device._host_memory:
        return Buffer(native, device)
    return DeviceBuffer(native, device)


def host_view(buf) -> np.ndarray:
    """The values of live buffer ``buf`` as a host NumPy array (a view, for host memory;
    the backend's ``to_host`` otherwise).  Counts nothing."""
    if type(buf) is DeviceBuffer:
        return buf.device.backend.to_host(buf.data, buf.device)
    return buf.data


def native_copy(buf, dst):
    """A native value of ``dst``'s backend holding a copy of live buffer ``buf``'s values
    (``buf`` may be on any device, ``dst`` itself included); counts nothing.  Between two
    devices of one backend the backend's ``copy``; across backends through the host."""
    src = buf.device
    if src.backend is dst.backend and src.backend is not None:
        if dst._host_memory:
            return buf.data.copy()
        return dst.backend.copy(buf.data, src, dst)
    host = host_view(buf)
    if dst._host_memory:
        return np.array(host, copy=True, order="C")
    check_dtype(dst, host.dtype)
    return dst.backend.from_host(np.asarray(host, order="C"), dst)   # (0-d stays 0-d)


def check_dtype(device, dtype) -> None:
    """Raises TypeError, naming the device and the dtype, when ``device``'s platform
    cannot hold arrays of ``dtype`` (its backend's ``dtypes``)."""
    backend = device.backend
    if backend is not None and not backend.supports_dtype(dtype):
        raise TypeError(f"device {device} (platform {device.platform!r}) cannot hold arrays "
                        f"of dtype {np.dtype(dtype).name}; its dtypes are "
                        f"{sorted(np.dtype(d).name for d in backend.dtypes)}.")


def native_operand(buf, dst):
    """``buf``'s values as an operand of a computation on ``dst``: the buffer's own data
    when it lives there or when both are host memory (host memory is shared; nothing is
    copied), else ``native_copy``.  Counts nothing (callers count the transfer)."""
    if buf.device is dst or (dst._host_memory and buf.device._host_memory):
        return buf.data
    return native_copy(buf, dst)


# ---- the recycling pool of host buffers ---------------------------------------------------

def _default_pool_limit() -> int:
    if config.jaxlite_buffer_pool_bytes is not None:     # JAXLITE_BUFFER_POOL_BYTES
        return config.jaxlite_buffer_pool_bytes
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 0
    return min(512 << 20, ram // 8) if ram else 512 << 20


def _refs(lst, i) -> int:
    return sys.getrefcount(lst[i])


# references to a pooled array when only the pool's list holds it (measured, not assumed:
# the list's reference and the call's argument)
_FREE_REFS = _refs([np.empty(1)], 0)


class BufferPool:
    """Host buffers for program outputs and temporaries, recycled instead of re-allocated.

    A fresh large allocation costs page faults on first touch (for a 40 MB output, more
    than an elementwise kernel writing it); a recycled buffer is already mapped.  The pool
    keeps a reference to every array it handed out (up to ``limit`` bytes in all) and
    hands one out again only when its own reference is the only one left: a live Array, a
    NumPy view of it (a view keeps its base alive) or a running program's variable all
    hold references, so a buffer anybody can still see is never reused.  Buffers are
    matched by exact byte size; a different shape or dtype gets a view of the buffer.

    Arrays smaller than ``min_bytes`` come from ``numpy.empty`` (the allocator's free lists
    are fast there).  When tracking a new buffer would pass ``limit``, free buffers are
    released first; if that is not enough the new buffer is simply not tracked.

    The pool is host memory shared by every CPU device.  Bytes it keeps free are not in
    any device's ``bytes_in_use``; ``Device.memory_stats()['pool_bytes']`` reports them.
    ``clear()`` (or ``jaxlite.runtime.buffer.clear_buffer_pool()``) releases every free
    buffer.
    """

    def __init__(self, limit: int | None = None, min_bytes: int = 1 << 18):
        self.limit = _default_pool_limit() if limit is None else int(limit)
        self.min_bytes = min_bytes
        self._lock = threading.Lock()
        self._bufs: dict = {}      # nbytes -> [owning ndarray, ...], least recent first
        self._tracked = 0          # bytes of all tracked buffers, in use or free
        self.hits = 0              # buffers handed out again
        self.misses = 0            # buffers allocated (tracked or not)

    def empty(self, shape, dtype) -> np.ndarray:
        """A writable C-contiguous array of ``shape``/``dtype`` with arbitrary contents
        (``numpy.empty``), recycled when a free buffer of the same byte size exists."""
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize
        for d in shape:
            nbytes *= d
        if nbytes < self.min_bytes or self.limit <= 0:
            return np.empty(shape, dtype)
        with self._lock:
            lst = self._bufs.get(nbytes)
            if lst:
                for i in range(len(lst)):
                    if _refs(lst, i) == _FREE_REFS:
                        a = lst[i]
                        # most recently used last: eviction takes the front
                        lst.append(lst.pop(i))
                        self.hits += 1
                        a.setflags(write=True)    # a Buffer made it read-only
                        if a.dtype == dtype and a.shape == tuple(shape):
                            return a
                        return a.reshape(-1).view(np.uint8).view(dtype).reshape(shape)
            self.misses += 1
            a = _empty_small_pages(shape, dtype)
            if self._tracked + nbytes > self.limit:
                self._evict_locked(self._tracked + nbytes - self.limit)
            if self._tracked + nbytes <= self.limit:
                self._bufs.setdefault(nbytes, []).append(a)
                self._tracked += nbytes
            return a

    def holds(self, a: np.ndarray) -> int:
        """References the pool holds to ``a`` (0 or 1)."""
        with self._lock:
            lst = self._bufs.get(a.nbytes)
            return int(bool(lst) and any(b is a for b in lst))

    def _evict_locked(self, need: int) -> None:
        for nbytes in list(self._bufs):
            lst = self._bufs[nbytes]
            i = 0
            while i < len(lst) and need > 0:
                if _refs(lst, i) == _FREE_REFS:
                    del lst[i]
                    self._tracked -= nbytes
                    need -= nbytes
                else:
                    i += 1
            if not lst:
                del self._bufs[nbytes]
            if need <= 0:
                return

    def clear(self) -> int:
        """Releases every free buffer (in-use ones stay tracked until they are free and
        reused or cleared).  Returns the bytes released."""
        with self._lock:
            before = self._tracked
            self._evict_locked(self._tracked + 1)
            return before - self._tracked

    def stats(self) -> dict:
        """``{'free_bytes', 'tracked_bytes', 'limit', 'hits', 'misses'}``: bytes kept free
        for reuse, bytes of all tracked buffers (free or in use), the cap, reuse counts."""
        with self._lock:
            free = sum(nb for nb, lst in self._bufs.items() for i in range(len(lst))
                       if _refs(lst, i) == _FREE_REFS)
            return {"free_bytes": free, "tracked_bytes": self._tracked,
                    "limit": self.limit, "hits": self.hits, "misses": self.misses}


# NumPy asks the kernel for transparent huge pages on large allocations (madvise).  Where
# the kernel then compacts memory at the first touch (THP "defrag" set to madvise, a
# common default), a fresh process's first writes into such buffers can take 5-20 times
# longer than with ordinary pages: measured here, a program's first call on float32[10**7]
# operands 0.2-1 s instead of 0.08 s.  The pool maps each buffer once and reuses it, so
# huge pages gain it nothing later (steady-state calls time the same either way): its
# buffers are allocated with the hint off.  The flag is NumPy's, process-wide: it is
# switched off only for the allocation, under a lock, and restored.
_set_madvise = getattr((getattr(np, "_core", None) or np.core).multiarray,
                       "_set_madvise_hugepage", None)     # (NumPy 1.x: numpy.core)
_MADVISE_LOCK = threading.Lock()


def _empty_small_pages(shape, dtype) -> np.ndarray:
    """``numpy.empty(shape, dtype)`` without NumPy's huge-page hint (see above)."""
    if _set_madvise is None:
        return np.empty(shape, dtype)
    with _MADVISE_LOCK:
        before = _set_madvise(False)
        try:
            return np.empty(shape, dtype)
        finally:
            _set_madvise(before)


POOL = BufferPool()
"""The process's host buffer pool (see BufferPool)."""


def pool_empty(shape, dtype) -> np.ndarray:
    """``numpy.empty`` through the recycling pool (``POOL.empty``)."""
    return POOL.empty(shape, dtype)


def clear_buffer_pool() -> int:
    """Releases the host buffers the recycling pool keeps free for reuse; returns the bytes
    released.  (Buffers of live arrays are untouched.)"""
    return POOL.clear()


def set_buffer_pool_limit(nbytes: int) -> None:
    """Caps the bytes the recycling pool tracks (0 turns recycling off); free buffers over
    the new cap are released at once.  The default is config ``jaxlite_buffer_pool_bytes``
    (``JAXLITE_BUFFER_POOL_BYTES``) or the smaller of 512 MiB and an eighth of RAM;
    changing that flag applies its value (or the default, for None) here."""
    POOL.limit = max(0, int(nbytes))
    with POOL._lock:
        if POOL._tracked > POOL.limit:
            POOL._evict_locked(POOL._tracked - POOL.limit)


def _on_config(name, value):
    if name == "jaxlite_buffer_pool_bytes":
        set_buffer_pool_limit(_default_pool_limit())


config._on_change(_on_config)


# ---- donation ----------------------------------------------------------------------------

def _aval_nbytes(aval) -> int:
    n = aval.dtype.itemsize
    for d in aval.shape:
        n *= d
    return n


def plan_donation(in_avals, out_avals, donated) -> tuple:
    """The donated argument positions an output can take, in order.

    Each donated position (in ``donated``, ascending) takes the first output not yet taken
    with the same byte size (shape and dtype may differ, as in JAX's CPU runtime, which
    aliases by size).  A position no output takes is not usable: its array stays valid.

    Returns ``(usable, unusable)``, two tuples of positions.
    """
    taken = [False] * len(out_avals)
    usable, unusable = [], []
    for k in donated:
        nb = _aval_nbytes(in_avals[k])
        for j, a in enumerate(out_avals):
            if not taken[j] and _aval_nbytes(a) == nb:
                taken[j] = True
                usable.append(k)
                break
        else:
            unusable.append(k)
    return tuple(usable), tuple(unusable)


def unusable_donation_message(avals) -> str:
    """The warning for donated arguments no output can take (JAX warns likewise)."""
    return (f"Some donated buffers were not usable: no output of the program has their "
            f"size, so they were not consumed and stay valid: "
            f"{', '.join(a.str_short() for a in avals)}.")


def take_donated(leaves, vals, usable) -> frozenset:
    """Consumes the donated arguments at positions ``usable``: deletes each one's Buffer
    (its Array and every Array sharing that buffer are deleted; the device's bytes drop at
    once, before the program allocates anything) and returns the positions whose host
    array ``vals[k]`` the program may now overwrite (made writable): those whose memory
    nothing but ``vals`` references (a NumPy view the user took keeps the memory
    read-only; the array is still consumed).

    ``leaves`` are the call's flat arguments (an Array has a ``_buf``; NumPy values and
    Python scalars are not donated).  Raises RuntimeError, before deleting anything, when a
    donated buffer is also passed at another position of the same call.
    """
    bufs = [getattr(x, "_buf", None) for x in leaves]
    for k in usable:
        buf = bufs[k]
        if buf is None:
            continue
        for j, b in enumerate(bufs):
            if j != k and b is not None and (b is buf or b.data is buf.data):
                raise RuntimeError(
                    f"argument {k} is donated but its buffer is also passed as argument "
                    f"{j} of the same call: a donated buffer may be overwritten, so it "
                    f"cannot be read by the same call; pass a copy (x.copy()) instead.")
    writable = []
    for k in usable:
        buf = bufs[k]
        if buf is None:
            continue
        buf.delete()
        if type(vals[k]) is not np.ndarray and not buf.device._host_memory:
            writable.append(k)     # another platform's buffer: its runtime consumes it
        elif _exclusive(vals, k):
            writable.append(k)
    return frozenset(writable)


def _exclusive(vals, k) -> bool:
    """Whether ``vals[k]`` is referenced by ``vals`` alone and covers memory nothing else
    sees (it owns it, or is the whole of a base only it references); makes it writable."""
    n = _refs(vals, k)        # before any local name refers to it
    a = vals[k]
    if type(a) is not np.ndarray or not a.flags.c_contiguous or \
            n != _FREE_REFS + POOL.holds(a):
        return False
    if a.base is not None:
        # a whole-array view (an implementation's reshape or cast): its base must be an
        # owning array of the same bytes that only this view references
        base = a.base
        if type(base) is not np.ndarray or base.base is not None or \
                base.nbytes != a.nbytes or not base.flags.c_contiguous or \
                _refs([base], 0) != _FREE_REFS + 2 + POOL.holds(base):   # + a.base, base
            return False
        base.setflags(write=True)
        if base.shape == a.shape and base.dtype == a.dtype:
            vals[k] = base     # the owner itself: an output that is it needs no copy
            return True
    a.setflags(write=True)
    return True
