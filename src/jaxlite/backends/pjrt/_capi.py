"""A ctypes binding of the PJRT C API (``pjrt_c_api.h``, major version 0).

Layer: backends (pjrt).  Only the structs and functions jaxlite calls are declared, in the
header's layout (read from the header of API 0.81 that the ``xla-cpu-pjrt`` wheel ships;
newer plugins only append fields and functions, so these layouts hold for them too):

- Every argument struct begins with ``struct_size`` and ``extension_start``.  Its
  ``struct_size`` is what ``PJRT_STRUCT_SIZE`` computes: the offset of the last field plus
  that field's size, *without* trailing padding (``ctypes.sizeof`` would add it; a plugin
  reads the size to learn which fields its caller knows).  ``_Args`` subclasses set it.
- ``PJRT_Api`` embeds its 24-byte ``PJRT_Api_Version`` by value, so its function table
  starts at byte 40, one pointer per function in header order.  An older plugin has a
  shorter table: ``Api.fn`` checks each index against the plugin's own ``struct_size``
  and raises RuntimeError naming the plugin's API version when a function lies beyond it.
- A ``PJRT_Error*`` becomes ``PjrtError`` (a JaxRuntimeError whose text starts with the
  status code, ``INVALID_ARGUMENT: ...``, as JAX's errors do); ``RESOURCE_EXHAUSTED``
  becomes ``PjrtOutOfMemory``, also a MemoryError, which the runtime turns into JAX's
  out-of-memory error naming the bytes, shape and device.  Every error is destroyed once
  its message and code are read.
- Every event is awaited (or polled) and destroyed exactly once (``await_event``).
"""
from __future__ import annotations

import ctypes as C

from ...errors import JaxRuntimeError

_P = C.c_void_p
_SZ = C.c_size_t
_I32 = C.c_int32
_I64 = C.c_int64
_BOOL = C.c_bool

# byte offset of the first function pointer in PJRT_Api: struct_size (8),
# extension_start (8), PJRT_Api_Version by value (8 + 8 + 4 + 4)
API_TABLE_OFFSET = 40
API_VERSION_OFFSET = 32     # PJRT_Api.pjrt_api_version.major_version
SUPPORTED_MAJOR = 0

# The function table of PJRT_Api, in header order (API 0.81).  Index i lives at byte
# API_TABLE_OFFSET + 8 * i.
API_FUNCTIONS = tuple("""
Error_Destroy Error_Message Error_GetCode
Plugin_Initialize Plugin_Attributes
Event_Destroy Event_IsReady Event_Error Event_Await Event_OnReady
Client_Create Client_Destroy Client_PlatformName Client_ProcessIndex Client_PlatformVersion
Client_Devices Client_AddressableDevices Client_LookupDevice Client_LookupAddressableDevice
Client_AddressableMemories Client_Compile Client_DefaultDeviceAssignment
Client_BufferFromHostBuffer
DeviceDescription_Id DeviceDescription_ProcessIndex DeviceDescription_Attributes
DeviceDescription_Kind DeviceDescription_DebugString DeviceDescription_ToString
Device_GetDescription Device_IsAddressable Device_LocalHardwareId Device_AddressableMemories
Device_DefaultMemory Device_MemoryStats
Memory_Id Memory_Kind Memory_DebugString Memory_ToString Memory_AddressableByDevices
Executable_Destroy Executable_Name Executable_NumReplicas Executable_NumPartitions
Executable_NumOutputs Executable_SizeOfGeneratedCodeInBytes Executable_GetCostAnalysis
Executable_OutputMemoryKinds Executable_OptimizedProgram Executable_Serialize
LoadedExecutable_Destroy LoadedExecutable_GetExecutable LoadedExecutable_AddressableDevices
LoadedExecutable_Delete LoadedExecutable_IsDeleted LoadedExecutable_Execute
Executable_DeserializeAndLoad LoadedExecutable_Fingerprint
Buffer_Destroy Buffer_ElementType Buffer_Dimensions Buffer_UnpaddedDimensions
Buffer_DynamicDimensionIndices Buffer_GetMemoryLayout Buffer_OnDeviceSizeInBytes
Buffer_Device Buffer_Memory Buffer_Delete Buffer_IsDeleted Buffer_CopyToDevice
Buffer_ToHostBuffer Buffer_IsOnCpu Buffer_ReadyEvent Buffer_UnsafePointer
Buffer_IncreaseExternalReferenceCount Buffer_DecreaseExternalReferenceCount
Buffer_OpaqueDeviceMemoryDataPointer
CopyToDeviceStream_Destroy CopyToDeviceStream_AddChunk CopyToDeviceStream_TotalBytes
CopyToDeviceStream_GranuleSize CopyToDeviceStream_CurrentBytes
TopologyDescription_Create TopologyDescription_Destroy TopologyDescription_PlatformName
TopologyDescription_PlatformVersion TopologyDescription_GetDeviceDescriptions
TopologyDescription_Serialize TopologyDescription_Attributes
Compile
Executable_OutputElementTypes Executable_OutputDimensions
Buffer_CopyToMemory
Client_CreateViewOfDeviceBuffer
Executable_Fingerprint
Client_TopologyDescription
Executable_GetCompiledMemoryStats
Memory_Kind_Id
ExecuteContext_Create ExecuteContext_Destroy
Buffer_CopyRawToHost
AsyncHostToDeviceTransferManager_Destroy AsyncHostToDeviceTransferManager_TransferData
Client_CreateBuffersForAsyncHostToDevice AsyncHostToDeviceTransferManager_RetrieveBuffer
AsyncHostToDeviceTransferManager_Device AsyncHostToDeviceTransferManager_BufferCount
AsyncHostToDeviceTransferManager_BufferSize AsyncHostToDeviceTransferManager_SetBufferError
AsyncHostToDeviceTransferManager_AddMetadata
Client_DmaMap Client_DmaUnmap
Client_CreateUninitializedBuffer
Client_UpdateGlobalProcessInfo
TopologyDescription_Deserialize
Client_CreateAliasBuffer Client_FulfillAliasBuffer
LoadedExecutable_GetDeviceAssignment
""".split())
_INDEX = {name: i for i, name in enumerate(API_FUNCTIONS)}

# PJRT_Error_Code, as absl names them (JAX's error texts start with the name)
ERROR_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
               "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
               "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
               "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")
RESOURCE_EXHAUSTED = 8
UNIMPLEMENTED = 12

# PJRT_HostBufferSemantics
HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1

# PJRT_NamedValue_Type
NV_STRING, NV_INT64, NV_INT64_LIST, NV_FLOAT, NV_BOOL = range(5)


class PjrtError(JaxRuntimeError):
    """An error a PJRT plugin returned (mirrors JAX's ``XlaRuntimeError``): the text is
    ``"<CODE>: <the plugin's message>"``; ``code`` is the numeric ``PJRT_Error_Code`` and
    ``code_name`` its name (``'INVALID_ARGUMENT'``), ``message`` the plugin's text."""

    def __init__(self, code: int, message: str):
        self.code = code
        self.code_name = ERROR_CODES[code] if 0 <= code < len(ERROR_CODES) else str(code)
        self.message = message
        super().__init__(f"{self.code_name}: {message}")


class PjrtOutOfMemory(PjrtError, MemoryError):
    """A ``RESOURCE_EXHAUSTED`` error: the device could not allocate.  Also a MemoryError,
    which jaxlite's runtime turns into JAX's out-of-memory error naming the bytes, shape
    and device (runtime/buffer.py ``memory_error``); ``shape`` and ``dtype`` name the
    array being allocated when the caller knows it (None otherwise)."""

    shape = None
    dtype = None


def error_class(code: int):
    return PjrtOutOfMemory if code == RESOURCE_EXHAUSTED else PjrtError


# ---- structs ------------------------------------------------------------------------------

class _Args(C.Structure):
    """Base of the argument structs: ``struct_size`` is set on construction to
    offsetof(last field) + sizeof(last field), as ``PJRT_STRUCT_SIZE`` computes it."""

    SIZE = 0

    def __init__(self, **kw):
        super().__init__(**kw)
        self.struct_size = self.SIZE


def _struct(name: str, *fields, base=_Args):
    """An argument struct: ``struct_size`` and ``extension_start`` then ``fields``."""
    cls = type(name, (base,), {"_fields_": [("struct_size", _SZ), ("extension_start", _P)]
                               + list(fields)})
    last = getattr(cls, cls._fields_[-1][0])
    cls.SIZE = last.offset + last.size
    return cls


ErrorDestroyArgs = _struct("PJRT_Error_Destroy_Args", ("error", _P))
ErrorMessageArgs = _struct("PJRT_Error_Message_Args", ("error", _P), ("message", _P),
                           ("message_size", _SZ))
ErrorGetCodeArgs = _struct("PJRT_Error_GetCode_Args", ("error", _P), ("code", _I32))

PluginInitializeArgs = _struct("PJRT_Plugin_Initialize_Args")
PluginAttributesArgs = _struct("PJRT_Plugin_Attributes_Args", ("attributes", _P),
                               ("num_attributes", _SZ))


class _NamedValueUnion(C.Union):
    _fields_ = [("string_value", _P), ("int64_value", _I64), ("int64_array_value", _P),
                ("float_value", C.c_float), ("bool_value", _BOOL)]


NamedValue = _struct("PJRT_NamedValue", ("name", _P), ("name_size", _SZ), ("type", _I32),
                     ("value", _NamedValueUnion), ("value_size", _SZ))

EventArgs = _struct("PJRT_Event_Args", ("event", _P))     # Destroy, Error, Await
EventIsReadyArgs = _struct("PJRT_Event_IsReady_Args", ("event", _P), ("is_ready", _BOOL))

ClientCreateArgs = _struct(
    "PJRT_Client_Create_Args", ("create_options", _P), ("num_options", _SZ),
    ("kv_get_callback", _P), ("kv_get_user_arg", _P), ("kv_put_callback", _P),
    ("kv_put_user_arg", _P), ("client", _P), ("kv_try_get_callback", _P),
    ("kv_try_get_user_arg", _P))
ClientArgs = _struct("PJRT_Client_Destroy_Args", ("client", _P))
ClientStringArgs = _struct("PJRT_Client_PlatformName_Args", ("client", _P), ("text", _P),
                           ("text_size", _SZ))     # PlatformName, PlatformVersion
ClientProcessIndexArgs = _struct("PJRT_Client_ProcessIndex_Args", ("client", _P),
                                 ("process_index", C.c_int))
ClientDevicesArgs = _struct("PJRT_Client_Devices_Args", ("client", _P), ("devices", _P),
                            ("num_devices", _SZ))  # Devices, AddressableDevices
Program = _struct("PJRT_Program", ("code", _P), ("code_size", _SZ), ("format", _P),
                  ("format_size", _SZ))
ClientCompileArgs = _struct(
    "PJRT_Client_Compile_Args", ("client", _P), ("program", C.POINTER(Program)),
    ("compile_options", _P), ("compile_options_size", _SZ), ("executable", _P))
BufferFromHostArgs = _struct(
    "PJRT_Client_BufferFromHostBuffer_Args", ("client", _P), ("data", _P), ("type", _I32),
    ("dims", _P), ("num_dims", _SZ), ("byte_strides", _P), ("num_byte_strides", _SZ),
    ("host_buffer_semantics", _I32), ("device", _P), ("memory", _P), ("device_layout", _P),
    ("done_with_host_buffer", _P), ("buffer", _P))

DescriptionIntArgs = _struct("PJRT_DeviceDescription_Id_Args", ("description", _P),
                             ("value", C.c_int))    # Id, ProcessIndex
DescriptionAttributesArgs = _struct("PJRT_DeviceDescription_Attributes_Args",
                                    ("description", _P), ("num_attributes", _SZ),
                                    ("attributes", _P))
DescriptionStringArgs = _struct("PJRT_DeviceDescription_Kind_Args", ("description", _P),
                                ("text", _P), ("text_size", _SZ))  # Kind, ToString, ...
DeviceGetDescriptionArgs = _struct("PJRT_Device_GetDescription_Args", ("device", _P),
                                   ("description", _P))
DeviceLocalHardwareIdArgs = _struct("PJRT_Device_LocalHardwareId_Args", ("device", _P),
                                    ("local_hardware_id", C.c_int))
# (name, is-set flag or None) of PJRT_Device_MemoryStats_Args' outputs, in order
MEMORY_STATS_FIELDS = (
    ("bytes_in_use", None), ("peak_bytes_in_use", "peak_bytes_in_use_is_set"),
    ("num_allocs", "num_allocs_is_set"), ("largest_alloc_size", "largest_alloc_size_is_set"),
    ("bytes_limit", "bytes_limit_is_set"), ("bytes_reserved", "bytes_reserved_is_set"),
    ("peak_bytes_reserved", "peak_bytes_reserved_is_set"),
    ("bytes_reservable_limit", "bytes_reservable_limit_is_set"),
    ("largest_free_block_bytes", "largest_free_block_bytes_is_set"),
    ("pool_bytes", "pool_bytes_is_set"), ("peak_pool_bytes", "peak_pool_bytes_is_set"))
DeviceMemoryStatsArgs = _struct(
    "PJRT_Device_MemoryStats_Args", ("device", _P),
    *[f for name, flag in MEMORY_STATS_FIELDS
      for f in ([(name, _I64)] + ([(flag, _BOOL)] if flag else []))])

ExecutableArgs = _struct("PJRT_Executable_Destroy_Args", ("executable", _P))
LoadedExecutableArgs = _struct("PJRT_LoadedExecutable_Destroy_Args", ("executable", _P))
GetExecutableArgs = _struct("PJRT_LoadedExecutable_GetExecutable_Args",
                            ("loaded_executable", _P), ("executable", _P))
ExecutableStringArgs = _struct("PJRT_Executable_Name_Args", ("executable", _P),
                               ("text", _P), ("text_size", _SZ))   # Name, Fingerprint
ExecutableCountArgs = _struct("PJRT_Executable_NumOutputs_Args", ("executable", _P),
                              ("count", _SZ))   # NumOutputs, NumReplicas, NumPartitions
OptimizedProgramArgs = _struct("PJRT_Executable_OptimizedProgram_Args",
                               ("executable", _P), ("program", C.POINTER(Program)))
CostAnalysisArgs = _struct("PJRT_Executable_GetCostAnalysis_Args", ("executable", _P),
                           ("num_properties", _SZ), ("properties", _P))
COMPILED_MEMORY_FIELDS = (
    "generated_code_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes",
    "alias_size_in_bytes", "temp_size_in_bytes", "host_generated_code_size_in_bytes",
    "host_argument_size_in_bytes", "host_output_size_in_bytes", "host_alias_size_in_bytes",
    "host_temp_size_in_bytes", "peak_memory_in_bytes")
# The serialized bytes live in the plugin's ``serialized_executable`` until its
# ``serialized_executable_deleter`` (a ``void (*)(PJRT_SerializedExecutable*)``) is called
# on it, once: the caller copies the bytes out first.
ExecutableSerializeArgs = _struct(
    "PJRT_Executable_Serialize_Args", ("executable", _P), ("serialized_bytes", _P),
    ("serialized_bytes_size", _SZ), ("serialized_executable", _P),
    ("serialized_executable_deleter", _P))
SerializedDeleter = C.CFUNCTYPE(None, _P)
# ``overridden_serialized_compile_options``: a CompileOptionsProto, or null to use those
# the executable was compiled with
DeserializeAndLoadArgs = _struct(
    "PJRT_Executable_DeserializeAndLoad_Args", ("client", _P),
    ("serialized_executable", _P), ("serialized_executable_size", _SZ),
    ("loaded_executable", _P), ("overridden_serialized_compile_options", _P),
    ("overridden_serialized_compile_options_size", _SZ))
CompiledMemoryStatsArgs = _struct("PJRT_Executable_GetCompiledMemoryStats_Args",
                                  ("executable", _P),
                                  *[(f, _I64) for f in COMPILED_MEMORY_FIELDS])
ExecuteOptions = _struct(
    "PJRT_ExecuteOptions", ("send_callbacks", _P), ("recv_callbacks", _P),
    ("num_send_ops", _SZ), ("num_recv_ops", _SZ), ("launch_id", C.c_int),
    ("non_donatable_input_indices", _P), ("num_non_donatable_input_indices", _SZ),
    ("context", _P), ("call_location", _P), ("num_tasks", _SZ), ("task_ids", _P),
    ("incarnation_ids", _P))
ExecuteArgs = _struct(
    "PJRT_LoadedExecutable_Execute_Args", ("executable", _P),
    ("options", C.POINTER(ExecuteOptions)), ("argument_lists", _P), ("num_devices", _SZ),
    ("num_args", _SZ), ("output_lists", _P), ("device_complete_events", _P),
    ("execute_device", _P))

BufferArgs = _struct("PJRT_Buffer_Destroy_Args", ("buffer", _P))   # Destroy, Delete
BufferElementTypeArgs = _struct("PJRT_Buffer_ElementType_Args", ("buffer", _P),
                                ("type", _I32))
BufferDimensionsArgs = _struct("PJRT_Buffer_Dimensions_Args", ("buffer", _P),
                               ("dims", C.POINTER(_I64)), ("num_dims", _SZ))
BufferSizeArgs = _struct("PJRT_Buffer_OnDeviceSizeInBytes_Args", ("buffer", _P),
                         ("size", _SZ))
BufferDeviceArgs = _struct("PJRT_Buffer_Device_Args", ("buffer", _P), ("device", _P))
BufferIsDeletedArgs = _struct("PJRT_Buffer_IsDeleted_Args", ("buffer", _P),
                              ("is_deleted", _BOOL))
BufferCopyToDeviceArgs = _struct("PJRT_Buffer_CopyToDevice_Args", ("buffer", _P),
                                 ("dst_device", _P), ("dst_buffer", _P))
BufferReadyEventArgs = _struct("PJRT_Buffer_ReadyEvent_Args", ("buffer", _P), ("event", _P))

LayoutTiled = _struct("PJRT_Buffer_MemoryLayout_Tiled", ("minor_to_major", _P),
                      ("minor_to_major_size", _SZ), ("tile_dims", _P),
                      ("tile_dim_sizes", _P), ("num_tiles", _SZ))
LayoutStrides = _struct("PJRT_Buffer_MemoryLayout_Strides", ("byte_strides", _P),
                        ("num_byte_strides", _SZ))


class _LayoutUnion(C.Union):
    _fields_ = [("tiled", LayoutTiled), ("strides", LayoutStrides)]


LAYOUT_TILED = 0
MemoryLayout = _struct("PJRT_Buffer_MemoryLayout", ("layout", _LayoutUnion), ("type", _I32))
ToHostArgs = _struct("PJRT_Buffer_ToHostBuffer_Args", ("src", _P),
                     ("host_layout", C.POINTER(MemoryLayout)), ("dst", _P),
                     ("dst_size", _SZ), ("event", _P))
CreateUninitializedArgs = _struct(
    "PJRT_Client_CreateUninitializedBuffer_Args", ("client", _P), ("shape_dims", _P),
    ("shape_num_dims", _SZ), ("shape_element_type", _I32), ("shape_layout", _P),
    ("device", _P), ("memory", _P), ("buffer", _P))

# PJRT_Error* fn(Args*): every function of the table has this signature (the few that
# return void leave the register holding garbage, which their callers ignore)
_FN = C.CFUNCTYPE(_P, _P)


def text(ptr, size) -> str:
    """The UTF-8 text of ``size`` bytes at ``ptr`` (owned by the plugin)."""
    return C.string_at(ptr, size).decode("utf-8", "replace") if size else ""


class Api:
    """One plugin's ``PJRT_Api`` function table.

    Args:
      address: the ``PJRT_Api*`` the plugin's ``GetPjrtApi`` returned.
      where: the plugin's path, for messages.

    ``version`` is the plugin's ``(major, minor)``; ``fn(name)`` the callable for
    ``PJRT_<name>`` (RuntimeError when the plugin's table is too short to hold it or the
    entry is null); ``has(name)`` says whether it exists.  ``call(name, args)`` calls it
    and raises the plugin's error as a ``PjrtError``.

    Raises:
      RuntimeError: the plugin speaks another major version of the API than 0.
    """

    def __init__(self, address: int, where: str = "the PJRT plugin"):
        self.address = address
        self.where = where
        self.struct_size = _SZ.from_address(address).value
        self.version = (C.c_int.from_address(address + API_VERSION_OFFSET).value,
                        C.c_int.from_address(address + API_VERSION_OFFSET + 4).value)
        if self.version[0] != SUPPORTED_MAJOR:
            raise RuntimeError(
                f"{where} implements PJRT C API version {self.version_text}; jaxlite "
                f"speaks major version {SUPPORTED_MAJOR} only: install a plugin built "
                f"for PJRT C API 0.x")
        self._fns: dict = {}
        # the three error functions are needed to report anything: looked up now
        self._err_message = self.fn("Error_Message")
        self._err_code = self.fn("Error_GetCode")
        self._err_destroy = self.fn("Error_Destroy")

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def has(self, name: str) -> bool:
        i = _INDEX[name]
        off = API_TABLE_OFFSET + 8 * i
        return off + 8 <= self.struct_size and bool(
            _P.from_address(self.address + off).value)

    def fn(self, name: str):
        f = self._fns.get(name)
        if f is None:
            if not self.has(name):
                raise RuntimeError(
                    f"{self.where} implements PJRT C API version {self.version_text}, "
                    f"whose function table lacks PJRT_{name} (entry "
                    f"{_INDEX[name]}, the table holds "
                    f"{max(0, (self.struct_size - API_TABLE_OFFSET) // 8)}): the plugin is "
                    f"too old for jaxlite; install a newer one")
            addr = _P.from_address(self.address + API_TABLE_OFFSET + 8 * _INDEX[name]).value
            f = self._fns[name] = _FN(addr)
        return f

    def call(self, name: str, args):
        """Calls ``PJRT_<name>(&args)``; returns ``args`` (its outputs filled in)."""
        err = self.fn(name)(C.byref(args))
        if err:
            raise self.error(err)
        return args

    def error(self, err: int) -> PjrtError:
        """The PjrtError for plugin error ``err`` (destroyed here)."""
        m = ErrorMessageArgs(error=err)
        self._err_message(C.byref(m))
        message = text(m.message, m.message_size)
        c = ErrorGetCodeArgs(error=err)
        code = 2 if self._err_code(C.byref(c)) else c.code     # 2: UNKNOWN
        self._err_destroy(C.byref(ErrorDestroyArgs(error=err)))
        return error_class(code)(code, message)

    def await_event(self, event: int) -> None:
        """Waits for ``event``, destroys it, then raises its error if it carries one."""
        if not event:
            return
        a = EventArgs(event=event)
        err = self.fn("Event_Await")(C.byref(a))
        self.fn("Event_Destroy")(C.byref(a))
        if err:
            raise self.error(err)

    def named_values(self, address: int, count: int) -> dict:
        """``{name: value}`` of ``count`` PJRT_NamedValue structs at ``address``."""
        out = {}
        step = C.sizeof(NamedValue)
        for i in range(count):
            nv = NamedValue.from_address(address + i * step)
            name = text(nv.name, nv.name_size)
            t, v = nv.type, nv.value
            if t == NV_STRING:
                out[name] = text(v.string_value, nv.value_size)
            elif t == NV_INT64:
                out[name] = v.int64_value
            elif t == NV_INT64_LIST:
                out[name] = tuple((_I64 * nv.value_size).from_address(v.int64_array_value)) \
                    if nv.value_size else ()
            elif t == NV_FLOAT:
                out[name] = v.float_value
            elif t == NV_BOOL:
                out[name] = bool(v.bool_value)
        return out


def make_named_values(options: dict):
    """A ctypes array of PJRT_NamedValue for ``options`` (str, bool, int, float, or a
    sequence of ints each), and the objects that must stay alive while it is used.
    Raises TypeError for another kind of value, naming the option."""
    arr = (NamedValue * max(1, len(options)))()
    keep = []
    for nv, (name, value) in zip(arr, options.items()):
        key = name.encode()
        keep.append(key)
        nv.struct_size = NamedValue.SIZE
        nv.name = C.cast(C.c_char_p(key), _P)
        nv.name_size = len(key)
        if isinstance(value, str):
            b = value.encode()
            keep.append(b)
            nv.type, nv.value.string_value, nv.value_size = NV_STRING, \
                C.cast(C.c_char_p(b), _P), len(b)
        elif isinstance(value, bool):
            nv.type, nv.value.bool_value, nv.value_size = NV_BOOL, value, 1
        elif isinstance(value, int):
            nv.type, nv.value.int64_value, nv.value_size = NV_INT64, value, 1
        elif isinstance(value, float):
            nv.type, nv.value.float_value, nv.value_size = NV_FLOAT, value, 1
        elif isinstance(value, (list, tuple)) and all(type(x) is int for x in value):
            ints = (_I64 * max(1, len(value)))(*value)
            keep.append(ints)
            nv.type, nv.value.int64_array_value, nv.value_size = \
                NV_INT64_LIST, C.addressof(ints), len(value)
        else:
            raise TypeError(f"PJRT client option {name!r}: a str, bool, int, float or a "
                            f"list of ints is expected, got {value!r}")
    return arr, keep
