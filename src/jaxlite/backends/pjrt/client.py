"""PJRT objects as Python objects: plugin, client, devices, buffers, executables.

Layer: backends (pjrt).  Built on ``_capi`` (the ctypes declarations).  Knows nothing of
jaxlite's arrays or programs: NumPy arrays in, NumPy arrays out, MLIR text compiled.

- ``Plugin(path)``: the shared library loaded once per path (``dlopen``, ``GetPjrtApi``,
  ``PJRT_Plugin_Initialize`` once); ``attributes()``.
- ``Client(plugin, options)``: ``PJRT_Client_Create``; ``devices`` (``DeviceInfo``: id,
  kind, attributes such as a TPU's ``coords`` and ``core_on_chip``, the plugin's own
  ``repr``), ``buffer_from_numpy``, ``compile``, ``memory_stats``.
- ``PjrtBuffer``: one device buffer.  Created from host data with an explicit row-major
  layout and read back with one; results of an execution come back at once, and
  ``block_until_ready`` waits for their ready event.  The handle is destroyed when the
  last Python reference goes (``PJRT_Buffer_Destroy``), or at ``delete()``.
- ``LoadedExecutable``: ``execute`` on device buffers (donation through PJRT's
  non-donatable input indices), ``num_outputs``, ``optimized_program``,
  ``cost_analysis``, ``compiled_memory_stats``, ``serialize`` (the plugin's bytes, which
  ``Client.deserialize`` loads again: the persistent executable cache, _cache.py).

Compile options are always the serialized ``CompileOptionsProto`` for one replica and one
partition (``COMPILE_OPTIONS_1x1``): other options can make the XLA:CPU plugin abort the
whole process (a failed CHECK, no error returned), so no caller can send any.
"""
from __future__ import annotations


import ctypes as C
import os
import threading

import ml_dtypes
import numpy as np

from . import _capi
from ._capi import PjrtError

# CompileOptionsProto{executable_build_options (field 3): {num_replicas (4): 1,
# num_partitions (5): 1}}: tag 0x1a, length 4, 0x20 0x01, 0x28 0x01.  Empty options abort
# the XLA:CPU plugin (replica count 0 fails a CHECK), so only these bytes, or these plus
# the device assignment of ``compile_options`` below, are ever sent.
COMPILE_OPTIONS_1x1 = b"\x1a\x04\x20\x01\x28\x01"


def compile_options(device_id: int = 0) -> bytes:
    """The serialized CompileOptionsProto for one replica and one partition on the device
    of global id ``device_id``: ``COMPILE_OPTIONS_1x1`` for device 0 (the plugin's default
    assignment), else the same build options plus ``device_assignment`` (field 9:
    DeviceAssignmentProto{replica_count 1, computation_count 1, computation_devices
    [{replica_device_ids [device_id]}]}).  An executable runs only on the device it was
    compiled for."""
    if device_id == 0:
        return COMPILE_OPTIONS_1x1
    dev = b"\x08" + _varint(device_id)                  # replica_device_ids
    assignment = b"\x08\x01\x10\x01\x1a" + _varint(len(dev)) + dev
    build = b"\x20\x01\x28\x01\x4a" + _varint(len(assignment)) + assignment
    return b"\x1a" + _varint(len(build)) + build


def partitioned_compile_options(device_ids) -> bytes:
    """The serialized CompileOptionsProto of a program XLA partitions over the devices of
    global ids ``device_ids`` (one replica, ``len(device_ids)`` partitions, in that
    order: partition ``k`` runs on ``device_ids[k]``): executable_build_options with
    num_replicas 1, num_partitions N, use_spmd_partitioning (field 6) true and the
    device_assignment (DeviceAssignmentProto{replica_count 1, computation_count N,
    computation_devices [{replica_device_ids [id]} per partition]}).

    Raises ValueError for no devices or a repeated one (the bytes are only ever built
    here, from checked ids: other options can abort the XLA:CPU plugin's process)."""
    ids = [int(i) for i in device_ids]
    if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
        raise ValueError(f"a partitioned program needs distinct non-negative device ids, "
                         f"got {ids}")
    assignment = b"\x08\x01\x10" + _varint(len(ids))
    for i in ids:
        dev = b"\x08" + _varint(i)
        assignment += b"\x1a" + _varint(len(dev)) + dev
    build = b"\x20\x01\x28" + _varint(len(ids)) + b"\x30\x01\x4a" + \
        _varint(len(assignment)) + assignment
    return b"\x1a" + _varint(len(build)) + build


def _varint(n: int) -> bytes:
    """Protocol-buffer base-128 encoding of the non-negative int ``n``."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

# NumPy dtype <-> PJRT_Buffer_Type
_TYPE_OF = {np.dtype(np.bool_): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3,
            np.dtype(np.int32): 4, np.dtype(np.int64): 5, np.dtype(np.uint8): 6,
            np.dtype(np.uint16): 7, np.dtype(np.uint32): 8, np.dtype(np.uint64): 9,
            np.dtype(np.float16): 10, np.dtype(np.float32): 11, np.dtype(np.float64): 12,
            np.dtype(ml_dtypes.bfloat16): 13, np.dtype(np.complex64): 14,
            np.dtype(np.complex128): 15, np.dtype(ml_dtypes.float8_e5m2): 16,
            np.dtype(ml_dtypes.float8_e4m3fn): 17, np.dtype(ml_dtypes.float8_e4m3b11fnuz): 18,
            np.dtype(ml_dtypes.float8_e5m2fnuz): 19, np.dtype(ml_dtypes.float8_e4m3fnuz): 20,
            np.dtype(ml_dtypes.int4): 21, np.dtype(ml_dtypes.uint4): 22,
            np.dtype(ml_dtypes.int2): 24, np.dtype(ml_dtypes.uint2): 25,
            np.dtype(ml_dtypes.float8_e4m3): 26, np.dtype(ml_dtypes.float8_e3m4): 27,
            np.dtype(ml_dtypes.float8_e8m0fnu): 28, np.dtype(ml_dtypes.float4_e2m1fn): 29}
_DTYPE_OF = {v: k for k, v in _TYPE_OF.items()}
DTYPES = frozenset(_TYPE_OF)
"""Every NumPy dtype a PJRT buffer can hold (bool, ints, floats, complex, bfloat16, the
float8 types, int4/uint4/int2/uint2 and float4 of ml_dtypes)."""


def pjrt_type(dtype) -> int:
    """The ``PJRT_Buffer_Type`` of NumPy ``dtype``; TypeError for one PJRT lacks."""
    t = _TYPE_OF.get(np.dtype(dtype))
    if t is None:
        raise TypeError(f"PJRT buffers cannot hold dtype {np.dtype(dtype).name}")
    return t


def _row_major(ndim: int):
    """A PJRT_Buffer_MemoryLayout for a dense row-major host array of ``ndim`` dimensions
    (and the int64 array it points to, which must stay alive with it)."""
    m2m = (C.c_int64 * max(1, ndim))(*range(ndim - 1, -1, -1))
    lay = _capi.MemoryLayout(type=_capi.LAYOUT_TILED)
    lay.layout.tiled.struct_size = _capi.LayoutTiled.SIZE
    lay.layout.tiled.minor_to_major = C.addressof(m2m)
    lay.layout.tiled.minor_to_major_size = ndim
    return lay, m2m


_LAYOUTS = {}     # ndim -> (row-major layout, its minor_to_major array): read-only, shared


def _layout_ptr(ndim: int):
    got = _LAYOUTS.get(ndim)
    if got is None:
        lay, m2m = _row_major(ndim)
        got = _LAYOUTS[ndim] = (C.pointer(lay), lay, m2m)
    return got[0]


# ---- plugin ------------------------------------------------------------------------------

_PLUGINS: dict = {}          # real path -> Plugin
_PLUGINS_LOCK = threading.Lock()


class Plugin:
    """A PJRT plugin library, loaded once per path (``Plugin.load``).

    Attributes: ``path``; ``api`` (``_capi.Api``: the function table); ``version``
    (``(major, minor)`` of the plugin's PJRT C API).

    Raises (from ``load``):
      RuntimeError: the file does not exist, is no shared library, has no
        ``GetPjrtApi``, speaks another major API version, or its initialisation failed;
        the message names the path and the cause.
    """

    def __init__(self, path: str):
        self.path = path
        if not os.path.exists(path):
            raise RuntimeError(f"PJRT plugin {path!r} does not exist")
        try:
            self.lib = C.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as e:
            raise RuntimeError(f"{path!r} could not be loaded as a PJRT plugin: {e}") \
                from None
        try:
            get = self.lib.GetPjrtApi
        except AttributeError:
            raise RuntimeError(f"{path!r} is not a PJRT plugin: it has no GetPjrtApi "
                               f"function") from None
        get.restype = C.c_void_p
        get.argtypes = []
        address = get()
        if not address:
            raise RuntimeError(f"PJRT plugin {path!r}: GetPjrtApi returned NULL")
        self.api = _capi.Api(address, f"the PJRT plugin {path!r}")
        self.version = self.api.version
        if self.api.has("Plugin_Initialize"):
            try:
                self.api.call("Plugin_Initialize", _capi.PluginInitializeArgs())
            except PjrtError as e:
                raise RuntimeError(f"PJRT plugin {path!r} failed to initialize: {e}") \
                    from None

    @classmethod
    def load(cls, path: str) -> "Plugin":
        """The Plugin of ``path`` (loaded and initialised on the first call only)."""
        key = os.path.realpath(path)
        with _PLUGINS_LOCK:
            p = _PLUGINS.get(key)
            if p is None:
                p = _PLUGINS[key] = cls(path)
            return p

    def attributes(self) -> dict:
        """The plugin's attributes (``xla_version``, ``stablehlo_current_version`` ...)."""
        a = self.api.call("Plugin_Attributes", _capi.PluginAttributesArgs())
        return self.api.named_values(a.attributes, a.num_attributes)

    def __repr__(self):
        return f"<PJRT plugin {self.path} (C API {self.api.version_text})>"


# ---- client and devices ------------------------------------------------------------------

class DeviceInfo:
    """One addressable device of a client: ``handle`` (``PJRT_Device*``), ``id``,
    ``process_index``, ``local_hardware_id``, ``kind`` (``'TPU v5 lite'``), ``attributes``
    (``{'coords': (0, 0, 0), 'core_on_chip': 0, ...}``) and ``text`` (the plugin's own
    ``repr``: ``'TpuDevice(id=0, process_index=0, coords=(0,0,0), core_on_chip=0)'``)."""

    __slots__ = ("handle", "id", "process_index", "local_hardware_id", "kind", "attributes",
                 "text")

    def __repr__(self):
        return self.text


class Client:
    """A PJRT client of ``plugin`` (``PJRT_Client_Create`` with ``options``, a dict of
    create options: str, bool, int, float or list of ints).

    Attributes: ``plugin``, ``platform_name`` (``'tpu'``, ``'cpu'``, ``'cuda'``),
    ``platform_version``, ``devices`` (the addressable ``DeviceInfo`` s, by id).

    Raises:
      PjrtError: the plugin could not create a client (the chip is held by another
        process, no device is present ...), with the plugin's message.
    """

    def __init__(self, plugin: Plugin, options: dict | None = None):
        self.plugin = plugin
        self.api = api = plugin.api
        opts, keep = _capi.make_named_values(dict(options or {}))
        a = api.call("Client_Create", _capi.ClientCreateArgs(
            create_options=C.addressof(opts), num_options=len(options or {})))
        del keep
        self.handle = a.client
        self.platform_name = self._string("Client_PlatformName")
        self.platform_version = self._string("Client_PlatformVersion")
        d = api.call("Client_AddressableDevices",
                     _capi.ClientDevicesArgs(client=self.handle))
        handles = [_capi._P.from_address(d.devices + 8 * i).value
                   for i in range(d.num_devices)]
        self.devices = sorted((self._device_info(h) for h in handles), key=lambda x: x.id)
        self._mlir = C.create_string_buffer(b"mlir", 4)
        self._no_memory_stats = False

    def _string(self, fn: str) -> str:
        a = self.api.call(fn, _capi.ClientStringArgs(client=self.handle))
        return _capi.text(a.text, a.text_size)

    def _device_info(self, handle: int) -> DeviceInfo:
        api = self.api
        info = DeviceInfo()
        info.handle = handle
        desc = api.call("Device_GetDescription",
                        _capi.DeviceGetDescriptionArgs(device=handle)).description
        info.id = api.call("DeviceDescription_Id",
                           _capi.DescriptionIntArgs(description=desc)).value
        info.process_index = api.call("DeviceDescription_ProcessIndex",
                                      _capi.DescriptionIntArgs(description=desc)).value
        k = api.call("DeviceDescription_Kind", _capi.DescriptionStringArgs(description=desc))
        info.kind = _capi.text(k.text, k.text_size)
        t = api.call("DeviceDescription_ToString",
                     _capi.DescriptionStringArgs(description=desc))
        info.text = _capi.text(t.text, t.text_size)
        at = api.call("DeviceDescription_Attributes",
                      _capi.DescriptionAttributesArgs(description=desc))
        info.attributes = api.named_values(at.attributes, at.num_attributes)
        try:
            info.local_hardware_id = api.call(
                "Device_LocalHardwareId",
                _capi.DeviceLocalHardwareIdArgs(device=handle)).local_hardware_id
        except PjrtError:
            info.local_hardware_id = info.id
        return info

    # ---- memory ---------------------------------------------------------------------------
    def memory_stats(self, device: DeviceInfo) -> dict | None:
        """The plugin's memory statistics of ``device`` (the fields it sets, of
        ``bytes_in_use``, ``peak_bytes_in_use``, ``num_allocs``, ``largest_alloc_size``,
        ``bytes_limit``, ...), or None when the plugin does not report them (the XLA:CPU
        plugin answers UNIMPLEMENTED)."""
        if self._no_memory_stats or not self.api.has("Device_MemoryStats"):
            return None
        try:
            a = self.api.call("Device_MemoryStats",
                              _capi.DeviceMemoryStatsArgs(device=device.handle))
        except PjrtError as e:
            if e.code == _capi.UNIMPLEMENTED:
                self._no_memory_stats = True     # not asked again
                return None
            raise
        return {name: getattr(a, name) for name, flag in _capi.MEMORY_STATS_FIELDS
                if flag is None or getattr(a, flag)}

    # ---- buffers --------------------------------------------------------------------------
    def buffer_from_numpy(self, array: np.ndarray, device: DeviceInfo) -> "PjrtBuffer":
        """A device buffer on ``device`` holding a copy of ``array`` (any strides: a
        non-contiguous array is described to the plugin by its byte strides; one with
        negative or zero strides, or of a sub-byte dtype, is made contiguous first).  Returns once the plugin no longer reads ``array``
        (its done-with-host-buffer event); the copy on the device may still be in flight
        (the buffer's ready event).

        Raises TypeError for a dtype PJRT lacks; PjrtOutOfMemory when the device cannot
        allocate (``shape``/``dtype`` set); PjrtError for other failures."""
        array = np.asarray(array)
        t = pjrt_type(array.dtype)
        ndim = array.ndim
        strides = array.strides
        if not array.flags.c_contiguous:
            if any(s <= 0 for s in strides) or array.dtype in _SUBBYTE:
                array = np.ascontiguousarray(array)
                strides = array.strides
        dims = (C.c_int64 * max(1, ndim))(*array.shape)
        a = _capi.BufferFromHostArgs(
            client=self.handle, data=array.ctypes.data, type=t, dims=C.addressof(dims),
            num_dims=ndim, host_buffer_semantics=(
                _capi.HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES),
            device=device.handle)
        if not array.flags.c_contiguous:
            bs = (C.c_int64 * ndim)(*strides)
            a.byte_strides, a.num_byte_strides = C.addressof(bs), ndim
        err = self.api.fn("Client_BufferFromHostBuffer")(C.byref(a))
        if err:
            e = self.api.error(err)
            if isinstance(e, _capi.PjrtOutOfMemory):
                e.shape, e.dtype = array.shape, array.dtype
            raise e
        buf = PjrtBuffer(self, a.buffer, array.shape, array.dtype)
        try:
            # ``array`` (held by this frame) must live until the plugin is done with it
            self.api.await_event(a.done_with_host_buffer)
        except PjrtError:
            buf.delete()
            raise
        return buf

    def uninitialized_buffer(self, shape, dtype, device: DeviceInfo) -> "PjrtBuffer":
        """A device buffer of ``shape``/``dtype`` with arbitrary contents (zeros copied
        from the host where the plugin cannot create one uninitialised)."""
        if not self.api.has("Client_CreateUninitializedBuffer"):
            return self.buffer_from_numpy(np.zeros(shape, dtype), device)
        dims = (C.c_int64 * max(1, len(shape)))(*shape)
        a = _capi.CreateUninitializedArgs(
            client=self.handle, shape_dims=C.addressof(dims), shape_num_dims=len(shape),
            shape_element_type=pjrt_type(dtype), device=device.handle)
        err = self.api.fn("Client_CreateUninitializedBuffer")(C.byref(a))
        if err:
            e = self.api.error(err)
            if e.code == _capi.UNIMPLEMENTED:
                return self.buffer_from_numpy(np.zeros(shape, dtype), device)
            if isinstance(e, _capi.PjrtOutOfMemory):
                e.shape, e.dtype = tuple(shape), np.dtype(dtype)
            raise e
        return PjrtBuffer(self, a.buffer, tuple(shape), np.dtype(dtype))

    # ---- compile --------------------------------------------------------------------------
    def compile(self, mlir: str | bytes, device: DeviceInfo | None = None) \
            -> "LoadedExecutable":
        """Compiles a StableHLO module (MLIR text or bytecode; entry function ``@main``)
        for ``device`` (default: the first), one replica and one partition
        (``compile_options``: the only options ever sent).

        Raises PjrtError with XLA's message when the plugin rejects the module."""
        device = self.devices[0] if device is None else device
        code = mlir.encode() if isinstance(mlir, str) else bytes(mlir)
        buf = C.create_string_buffer(code, len(code))
        prog = _capi.Program(code=C.addressof(buf), code_size=len(code),
                             format=C.addressof(self._mlir), format_size=4)
        opts = compile_options(device.id)
        obuf = C.create_string_buffer(opts, len(opts))
        a = self.api.call("Client_Compile", _capi.ClientCompileArgs(
            client=self.handle, program=C.pointer(prog), compile_options=C.addressof(obuf),
            compile_options_size=len(opts)))
        return LoadedExecutable(self, a.executable, device)

    def compile_partitioned(self, mlir: str, devices) -> "LoadedExecutable":
        """Compiles a StableHLO module whose arguments and results carry ``mhlo.sharding``
        attributes into one program XLA partitions over ``devices`` (DeviceInfos of
        this client, partition ``k`` on ``devices[k]``; ``partitioned_compile_options``).
        The result's ``devices`` lists them; run it with ``execute_partitioned``.

        Raises ValueError for devices of another client or repeated ones, PjrtError with
        XLA's message when the plugin rejects the module."""
        devices = list(devices)
        mine = {d.handle for d in self.devices}
        for d in devices:
            if d.handle not in mine:
                raise ValueError(f"compile_partitioned: {d!r} is not a device of {self!r}")
        opts = partitioned_compile_options([d.id for d in devices])
        code = mlir.encode() if isinstance(mlir, str) else bytes(mlir)
        buf = C.create_string_buffer(code, len(code))
        prog = _capi.Program(code=C.addressof(buf), code_size=len(code),
                             format=C.addressof(self._mlir), format_size=4)
        obuf = C.create_string_buffer(opts, len(opts))
        a = self.api.call("Client_Compile", _capi.ClientCompileArgs(
            client=self.handle, program=C.pointer(prog), compile_options=C.addressof(obuf),
            compile_options_size=len(opts)))
        ex = LoadedExecutable(self, a.executable, devices[0])
        ex.devices = devices
        return ex

    def deserialize(self, data: bytes, device: DeviceInfo | None = None) \
            -> "LoadedExecutable":
        """Loads an executable that ``LoadedExecutable.serialize`` made (the same plugin
        and version: the format is the plugin's own and not stable across versions) for
        ``device`` (default: the first; its compile options, ``compile_options``, are
        sent along, so the executable runs there whatever it was serialized with).

        Raises PjrtError with the plugin's message when it cannot load ``data`` (bytes
        of another plugin or version, damaged bytes); RuntimeError when the plugin lacks
        ``PJRT_Executable_DeserializeAndLoad``."""
        device = self.devices[0] if device is None else device
        data = bytes(data)      # immutable: the plugin reads it in place (no copy)
        opts = compile_options(device.id)
        obuf = C.create_string_buffer(opts, len(opts))
        a = self.api.call("Executable_DeserializeAndLoad", _capi.DeserializeAndLoadArgs(
            client=self.handle, serialized_executable=C.cast(C.c_char_p(data), C.c_void_p),
            serialized_executable_size=len(data),
            overridden_serialized_compile_options=C.addressof(obuf),
            overridden_serialized_compile_options_size=len(opts)))
        return LoadedExecutable(self, a.loaded_executable, device)

    def __repr__(self):
        return (f"<PJRT client {self.platform_name!r} of {self.plugin.path}: "
                f"{len(self.devices)} device(s)>")


_SUBBYTE = frozenset(np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                           ml_dtypes.uint2, ml_dtypes.float4_e2m1fn))


# ---- buffers -----------------------------------------------------------------------------

class PjrtBuffer:
    """One PJRT device buffer of ``shape`` and ``dtype`` (NumPy), owned by this object.

    ``nbytes`` is the plugin's on-device size (padding included; asked once).
    ``to_numpy()`` copies the values to a new host array (dense row-major layout, asked of
    the plugin explicitly: a device layout may be tiled); ``block_until_ready()`` waits
    until the values are computed and raises the computation's error if it failed;
    ``delete()`` frees the device memory now (idempotent); otherwise the handle is
    destroyed when this object is garbage-collected.
    """

    __slots__ = ("client", "handle", "shape", "dtype", "_nbytes", "_done", "__weakref__")

    def __init__(self, client: Client, handle: int, shape: tuple, dtype):
        self.client = client
        self.handle = handle
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._nbytes = None
        self._done = None       # the _Completion of the execution that made it, if any

    @property
    def nbytes(self) -> int:
        n = self._nbytes
        if n is None:
            try:
                a = self.client.api.call("Buffer_OnDeviceSizeInBytes",
                                         _capi.BufferSizeArgs(buffer=self._live()))
                n = int(a.size)
            except PjrtError:     # a buffer in an error state: its values' bytes
                n = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
            self._nbytes = n
        return n

    def _live(self) -> int:
        h = self.handle
        if not h:
            raise RuntimeError(f"the PJRT buffer of shape {self.shape} and dtype "
                               f"{self.dtype.name} was deleted")
        return h

    def to_numpy(self) -> np.ndarray:
        """A new host array with the values (waits for them to be computed).  Raises the
        computation's error (PjrtError) if it failed, RuntimeError if deleted."""
        out = np.empty(self.shape, self.dtype)
        api = self.client.api
        a = _capi.ToHostArgs(src=self._live(), host_layout=_layout_ptr(out.ndim),
                             dst=out.ctypes.data, dst_size=out.nbytes)
        err = api.fn("Buffer_ToHostBuffer")(C.byref(a))
        if err:
            raise api.error(err)
        api.await_event(a.event)     # ``out`` lives in this frame until the copy is done
        return out

    def block_until_ready(self) -> "PjrtBuffer":
        """Waits until the values are computed (the buffer's ready event, or the
        completion event of the execution that made it, shared by its outputs)."""
        done = self._done
        if done is not None:
            self._live()
            done.wait()
            return self
        api = self.client.api
        a = _capi.BufferReadyEventArgs(buffer=self._live())
        err = api.fn("Buffer_ReadyEvent")(C.byref(a))
        if err:
            raise api.error(err)
        api.await_event(a.event)
        return self

    def is_ready(self) -> bool:
        """Whether the values are computed (does not wait)."""
        api = self.client.api
        a = _capi.BufferReadyEventArgs(buffer=self._live())
        err = api.fn("Buffer_ReadyEvent")(C.byref(a))
        if err:
            raise api.error(err)
        r = _capi.EventIsReadyArgs(event=a.event)
        try:
            api.call("Event_IsReady", r)
        finally:
            api.fn("Event_Destroy")(C.byref(_capi.EventArgs(event=a.event)))
        return bool(r.is_ready)

    def copy_to_device(self, device: DeviceInfo) -> "PjrtBuffer":
        """A copy on another ``device`` of the same client (``PJRT_Buffer_CopyToDevice``;
        to the buffer's own device: through the host, which the plugin refuses)."""
        a = _capi.BufferCopyToDeviceArgs(buffer=self._live(), dst_device=device.handle)
        api = self.client.api
        if self.device_handle() == device.handle:
            return self.client.buffer_from_numpy(self.to_numpy(), device)
        err = api.fn("Buffer_CopyToDevice")(C.byref(a))
        if err:
            e = api.error(err)
            if isinstance(e, _capi.PjrtOutOfMemory):
                e.shape, e.dtype = self.shape, self.dtype
            raise e
        return PjrtBuffer(self.client, a.dst_buffer, self.shape, self.dtype)

    def device_handle(self) -> int:
        return self.client.api.call("Buffer_Device",
                                    _capi.BufferDeviceArgs(buffer=self._live())).device

    def is_deleted(self) -> bool:
        """True after ``delete()``, or once the plugin consumed it (a donated argument)."""
        h = self.handle
        if not h:
            return True
        return bool(self.client.api.call("Buffer_IsDeleted",
                                         _capi.BufferIsDeletedArgs(buffer=h)).is_deleted)

    def delete(self) -> None:
        """Frees the device memory and the handle now (idempotent)."""
        h = self.handle
        if h:
            self.handle = None
            api = self.client.api
            err = api.fn("Buffer_Destroy")(C.byref(_capi.BufferArgs(buffer=h)))
            if err:
                raise api.error(err)

    def __del__(self):
        h = self.handle
        if h:
            self.handle = None
            # at interpreter shutdown modules are half gone (even ``contextlib``): a
            # failure then has nothing left to free the buffer for
            try:
                err = self.client.api.fn("Buffer_Destroy")(C.byref(_capi.BufferArgs(buffer=h)))
                if err:
                    self.client.api.error(err)     # destroys it; nothing to raise to
            except Exception:  # noqa: BLE001
                return

    def __repr__(self):
        state = "deleted" if not self.handle else f"{self.dtype.name}{list(self.shape)}"
        return f"<PjrtBuffer {state}>"


# ---- executables -------------------------------------------------------------------------

class LoadedExecutable:
    """A compiled program loaded on a client (``PJRT_LoadedExecutable``).

    ``num_outputs``: how many buffers one execution returns.  ``execute(buffers, device,
    donated=())`` runs it; ``optimized_program()``, ``cost_analysis()`` and
    ``compiled_memory_stats()`` describe it (None where the plugin lacks the function).
    """

    def __init__(self, client: Client, handle: int, device: DeviceInfo):
        self.client = client
        self.api = api = client.api
        self.handle = handle
        self.device = device
        ex = api.call("LoadedExecutable_GetExecutable",
                      _capi.GetExecutableArgs(loaded_executable=handle)).executable
        try:
            self.num_outputs = api.call("Executable_NumOutputs",
                                        _capi.ExecutableCountArgs(executable=ex)).count
            self.cost = self._cost_analysis(ex)
            self.memory = self._memory_stats(ex)
            self.optimized = self._optimized_program(ex)
        finally:
            api.call("Executable_Destroy", _capi.ExecutableArgs(executable=ex))
        self._lock = threading.Lock()
        self._outs = (_capi._P * max(1, self.num_outputs))()
        self._out_lists = (_capi._P * 1)(C.addressof(self._outs))
        self._opts = _capi.ExecuteOptions()
        # each output's on-device size: fixed by the compiled layouts, so asked of the
        # plugin once (at the first run whose outputs all answered), then given to every
        # later run's buffers
        self._out_nbytes = None
        # a program of several outputs asks for its execution's completion event, which
        # ``block_until_ready`` of any of them awaits once for all (``_Completion``)
        self._completion = self.num_outputs > 1

    def _cost_analysis(self, ex):
        if not self.api.has("Executable_GetCostAnalysis"):
            return None
        try:
            a = self.api.call("Executable_GetCostAnalysis",
                              _capi.CostAnalysisArgs(executable=ex))
        except PjrtError:
            return None
        return self.api.named_values(a.properties, a.num_properties)

    def _memory_stats(self, ex):
        if not self.api.has("Executable_GetCompiledMemoryStats"):
            return None
        try:
            a = self.api.call("Executable_GetCompiledMemoryStats",
                              _capi.CompiledMemoryStatsArgs(executable=ex))
        except PjrtError:
            return None
        return {f: getattr(a, f) for f in _capi.COMPILED_MEMORY_FIELDS}

    def _optimized_program(self, ex):
        """``(format, bytes)`` of the optimised program (``'hlo'``: a serialized
        HloModuleProto), or None."""
        if not self.api.has("Executable_OptimizedProgram"):
            return None
        fmt = C.create_string_buffer(16)
        prog = _capi.Program(format=C.addressof(fmt), format_size=16)
        a = _capi.OptimizedProgramArgs(executable=ex, program=C.pointer(prog))
        try:
            self.api.call("Executable_OptimizedProgram", a)     # asks for the size
            code = C.create_string_buffer(max(1, prog.code_size))
            prog.code = C.addressof(code)
            self.api.call("Executable_OptimizedProgram", a)
        except PjrtError:
            return None
        return (_capi.text(prog.format, prog.format_size), code.raw[:prog.code_size])

    def serialize(self) -> bytes:
        """The plugin's serialization of this executable (``PJRT_Executable_Serialize``:
        a format of the plugin's own, loadable by the same plugin and version with
        ``Client.deserialize``).  Raises PjrtError when the plugin cannot serialize it
        (UNIMPLEMENTED on a plugin without the feature), RuntimeError when the plugin
        lacks the function."""
        api = self.api
        ex = api.call("LoadedExecutable_GetExecutable",
                      _capi.GetExecutableArgs(loaded_executable=self.handle)).executable
        try:
            a = api.call("Executable_Serialize", _capi.ExecutableSerializeArgs(executable=ex))
            try:
                return C.string_at(a.serialized_bytes, a.serialized_bytes_size) \
                    if a.serialized_bytes_size else b""
            finally:
                # the bytes belong to the plugin's serialized_executable: copied above,
                # then freed by its deleter, exactly once
                if a.serialized_executable_deleter and a.serialized_executable:
                    _capi.SerializedDeleter(a.serialized_executable_deleter)(
                        a.serialized_executable)
        finally:
            api.call("Executable_Destroy", _capi.ExecutableArgs(executable=ex))

    def cost_analysis(self) -> dict | None:
        """The plugin's cost analysis (``{'flops': ..., 'bytes accessed': ...,
        'transcendentals': ..., ...}``), or None."""
        return None if self.cost is None else dict(self.cost)

    def compiled_memory_stats(self) -> dict | None:
        """Bytes of arguments, outputs, aliases, temporaries and code, or None."""
        return None if self.memory is None else dict(self.memory)

    def optimized_program(self):
        """``(format, bytes)`` of the optimised program, or None."""
        return self.optimized

    def execute(self, buffers, out_shapes, donated=()) -> list:
        """Runs the program on its device with ``buffers`` (PjrtBuffers there, one per
        parameter); returns one new PjrtBuffer per output at once (their values may still
        be being computed: ``block_until_ready``, ``to_numpy``).

        Args:
          out_shapes: ``(shape, dtype)`` of each output.
          donated: the parameter positions the program may consume (those the module
            declares as donors); every other parameter is passed as non-donatable, so it
            stays valid whatever the module says.
        Raises PjrtOutOfMemory / PjrtError when the plugin refuses to launch it.
        """
        n = len(buffers)
        args = (_capi._P * max(1, n))(*[b._live() for b in buffers])
        arg_lists = (_capi._P * 1)(C.addressof(args))
        if self._lock.acquire(False):
            # the common case: this executable's cached option and output arrays
            try:
                return self._execute(arg_lists, n, out_shapes, donated, self._opts,
                                     self._outs, self._out_lists)
            finally:
                self._lock.release()
        # another thread is executing it: arrays of our own
        outs = (_capi._P * max(1, self.num_outputs))()
        return self._execute(arg_lists, n, out_shapes, donated, _capi.ExecuteOptions(),
                             outs, (_capi._P * 1)(C.addressof(outs)))

    def _execute(self, arg_lists, n, out_shapes, donated, opts, outs, out_lists):
        # every parameter not donated is non-donatable (the array lives in this frame
        # until the call returns, as the plugin requires)
        if donated:
            nd = [i for i in range(n) if i not in donated]
            keep = (C.c_int64 * max(1, len(nd)))(*nd)
        else:
            nd, keep = range(n), _all_indices(n)
        opts.non_donatable_input_indices = C.addressof(keep)
        opts.num_non_donatable_input_indices = len(nd)
        a = _capi.ExecuteArgs(executable=self.handle, options=C.pointer(opts),
                              argument_lists=C.addressof(arg_lists), num_devices=1,
                              num_args=n, output_lists=C.addressof(out_lists))
        if self._completion:
            events = (_capi._P * 1)()
            a.device_complete_events = C.addressof(events)
        # (no execute_device: the executable was compiled for its device, and naming one
        # at launch is optional for a plugin to support)
        err = self.api.fn("LoadedExecutable_Execute")(C.byref(a))
        if err:
            raise self.api.error(err)
        client = self.client
        bufs = [PjrtBuffer(client, outs[i], s, d) for i, (s, d) in enumerate(out_shapes)]
        if self._completion and events[0]:
            done = _Completion(self.api, events[0])
            for b in bufs:
                b._done = done
        sizes = self._out_nbytes
        if sizes is not None:
            for b, n in zip(bufs, sizes):
                b._nbytes = n
        else:
            self._out_nbytes = _on_device_sizes(bufs)
        return bufs

    def execute_partitioned(self, arg_lists, out_shapes) -> list:
        """Runs a program of ``compile_partitioned`` once on all its devices:
        ``arg_lists[k]`` are partition ``k``'s PjrtBuffers (one per parameter, on
        ``devices[k]``); ``out_shapes[k]`` the ``(shape, dtype)`` of each of its outputs
        (its shards).  Returns one list of new PjrtBuffers per partition, at once (values
        may still be computed).  No argument is donated.
        Raises PjrtOutOfMemory / PjrtError when the plugin refuses to launch it."""
        n_dev = len(arg_lists)
        n = len(arg_lists[0]) if n_dev else 0
        args = [(_capi._P * max(1, n))(*[b._live() for b in lst]) for lst in arg_lists]
        arg_ptrs = (_capi._P * n_dev)(*[C.addressof(a) for a in args])
        n_out = max(1, self.num_outputs)
        outs = [(_capi._P * n_out)() for _ in range(n_dev)]
        out_ptrs = (_capi._P * n_dev)(*[C.addressof(o) for o in outs])
        opts = _capi.ExecuteOptions()
        keep = _all_indices(n)
        opts.non_donatable_input_indices = C.addressof(keep)
        opts.num_non_donatable_input_indices = n
        a = _capi.ExecuteArgs(executable=self.handle, options=C.pointer(opts),
                              argument_lists=C.addressof(arg_ptrs), num_devices=n_dev,
                              num_args=n, output_lists=C.addressof(out_ptrs))
        err = self.api.fn("LoadedExecutable_Execute")(C.byref(a))
        if err:
            raise self.api.error(err)
        client = self.client
        return [[PjrtBuffer(client, outs[k][i], s, d) for i, (s, d) in enumerate(shapes)]
                for k, shapes in enumerate(out_shapes)]

    def __del__(self):
        h = self.handle
        if h:
            self.handle = None
            try:                    # (interpreter shutdown: see PjrtBuffer.__del__)
                err = self.api.fn("LoadedExecutable_Destroy")(
                    C.byref(_capi.LoadedExecutableArgs(executable=h)))
                if err:
                    self.api.error(err)
            except Exception:  # noqa: BLE001
                return


_ALL: dict = {}


class _Completion:
    """The completion event of one execution (``device_complete_events``), shared by its
    output buffers: the first ``wait`` awaits and destroys it, later ones (the other
    outputs') return at once, or raise the execution's error again.  An execution
    complete means every output is computed, so one wait serves them all, where each
    output's own ready event would cost three plugin calls."""

    __slots__ = ("api", "event", "error", "lock", "__weakref__")

    def __init__(self, api, event: int):
        self.api, self.event, self.error = api, event, None
        self.lock = threading.Lock()

    def wait(self) -> None:
        if self.event:
            with self.lock:
                event, self.event = self.event, 0
                if event:
                    try:
                        self.api.await_event(event)     # destroys it
                    except PjrtError as e:
                        self.error = e
        if self.error is not None:
            raise self.error

    def __del__(self):
        event = self.event
        if event:
            self.event = 0
            try:        # (interpreter shutdown: see PjrtBuffer.__del__)
                self.api.fn("Event_Destroy")(C.byref(_capi.EventArgs(event=event)))
            except Exception:  # noqa: BLE001
                return


def _on_device_sizes(bufs):
    """The plugin's on-device size of each of ``bufs`` (set on them), or None when one
    cannot answer (a buffer in an error state: its size is then its values' bytes, which
    must not be remembered for later runs)."""
    sizes = []
    for b in bufs:
        try:
            a = b.client.api.call("Buffer_OnDeviceSizeInBytes",
                                  _capi.BufferSizeArgs(buffer=b._live()))
        except PjrtError:
            return None
        b._nbytes = int(a.size)
        sizes.append(b._nbytes)
    return sizes


def _all_indices(n: int):
    """A read-only int64 array ``0 .. n-1`` (every parameter non-donatable)."""
    a = _ALL.get(n)
    if a is None:
        a = _ALL[n] = (C.c_int64 * max(1, n))(*range(n))
    return a


def run_mlir(text: str, args, platform: str = "xla_cpu") -> list:
    """Compiles the StableHLO module ``text`` with the ``platform`` plugin's client (the
    one jaxlite's ``platform`` devices use) and runs it once on its first device with host
    arrays ``args``; returns the outputs as NumPy arrays (a testing and debugging aid:
    ``jaxlite.backends.pjrt.client.run_mlir(lowered.text, [x, y])``).

    Raises RuntimeError when the platform has no plugin, PjrtError when XLA rejects the
    module or the run fails."""
    from ...runtime.device import devices
    dev = devices(platform)[0]
    client = dev.backend.client
    ex = client.compile(text, dev.info)
    bufs = [client.buffer_from_numpy(np.asarray(a), dev.info) for a in args]
    shapes = _output_shapes(text, ex.num_outputs)
    outs = ex.execute(bufs, shapes)
    return [o.to_numpy() for o in outs]


def _output_shapes(text: str, n: int) -> list:
    """``(shape, dtype)`` of the ``n`` results of ``@main`` in StableHLO text (the types
    after ``->`` in its signature)."""
    import re
    m = re.search(r"@main\s*\((.*?)\)\s*->\s*(.*?)\s*(?:attributes\s*\{|\{)", text, re.S)
    types = re.findall(r"tensor<((?:[^<>]|<[^<>]*>)*)>", m.group(2)) if m else []
    if len(types) != n:
        raise ValueError(f"cannot read the {n} result types of @main from the module")
    out = []
    for t in types:
        dims, elem = re.match(r"^((?:\d+x)*)(.+)$", t).groups()
        out.append((tuple(int(d) for d in dims.split("x")[:-1]), _MLIR_DTYPES[elem]))
    return out


_MLIR_DTYPES = {"i1": np.dtype(np.bool_), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
                "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
                "ui8": np.dtype(np.uint8), "ui16": np.dtype(np.uint16),
                "ui32": np.dtype(np.uint32), "ui64": np.dtype(np.uint64),
                "f16": np.dtype(np.float16), "f32": np.dtype(np.float32),
                "f64": np.dtype(np.float64), "bf16": np.dtype(ml_dtypes.bfloat16),
                "complex<f32>": np.dtype(np.complex64),
                "complex<f64>": np.dtype(np.complex128),
                "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
                "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
                "i4": np.dtype(ml_dtypes.int4), "ui4": np.dtype(ml_dtypes.uint4)}
