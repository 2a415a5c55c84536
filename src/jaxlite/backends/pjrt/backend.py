"""The PJRT platforms: one ``PjrtBackend`` per plugin (``tpu``, ``cuda``, ``xla_cpu``).

Layer: backends (pjrt).  A ``PjrtBackend`` is a ``runtime.backend.Backend`` whose native
values are ``client.PjrtBuffer`` s living in the device's memory, so the runtime gives it
everything else for free: counted transfers and the transfer guard (reading a value on the
host is a device-to-host transfer), ``memory_stats``, ``live_arrays``, ``delete()``,
placement.  Programs are lowered to StableHLO (``lowering.lower_module``) and compiled by
the plugin; eager operations compile each primitive once per signature (``execute``).

Backends are registered on demand (``_Provider``, added to the runtime by this package's
``__init__``): ``import jaxlite`` loads no plugin.  ``jax.devices('xla_cpu')`` or
``JAX_PLATFORMS=xla_cpu`` loads and starts the XLA:CPU plugin; with ``jax_platforms``
unset, the first ``default_backend()`` starts an accelerator's plugin if one is
installed (a TPU whose client starts becomes the default device, as in JAX; one that
cannot start is reported in a warning and the CPU stays the default).  The XLA:CPU plugin
becomes the default only when ``jax_platforms`` names it.
"""
from __future__ import annotations

import collections
import enum
import re
import threading
import warnings

import numpy as np

from ...core.avals import ShapedArray
from ...ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from ...runtime import backend as _runtime_backend
from ...runtime.buffer import HOST_BYTES, check_fits, out_of_memory
from ...runtime.device import Device
from . import plugins
from ._cache import load_or_compile
from ._capi import PjrtError, PjrtOutOfMemory
from .client import DTYPES, Client, Plugin, PjrtBuffer

# default-platform priority (runtime/backend.py): accelerators above the CPU (0); the
# XLA:CPU plugin and unknown plugins below it (they are the default only when named)
PRIORITIES = {"tpu": 300, "cuda": 200, "rocm": 150}
ACCELERATORS = ("tpu", "cuda", "rocm")
# the platform name devices report (JAX calls CUDA and ROCm devices 'gpu')
DEVICE_PLATFORM = {"cuda": "gpu", "rocm": "gpu"}
# repr class names where the plugin's own text would mislead (the XLA:CPU plugin prints
# 'CpuDevice(id=0)', the name of jaxlite's own CPU devices)
DEVICE_CLASS = {"xla_cpu": "XlaCpuDevice", "cuda": "CudaDevice", "rocm": "RocmDevice"}
# seconds a plugin's client may take to start before jaxlite gives up on it
START_TIMEOUT = 300.0
# eager executables kept per backend (least recently used dropped first)
EAGER_CACHE_SIZE = 1024
# scalar constants of eager operations kept on their devices (oldest dropped first)
CONSTANTS_KEPT = 256
_CONSTANTS: dict = {}
_CONSTANTS_LOCK = threading.Lock()


class PjrtDevice(Device):
    """A device of a PJRT plugin (``jax.Device``): ``id``, ``platform`` (``'tpu'``,
    ``'gpu'``, ``'xla_cpu'``), ``device_kind`` (the plugin's, ``'TPU v5 lite'``),
    ``process_index``, ``local_hardware_id``, and for a TPU ``coords`` and
    ``core_on_chip``.  Prints as JAX prints it: the plugin's own text for a TPU
    (``TpuDevice(id=0, process_index=0, coords=(0,0,0), core_on_chip=0)``),
    ``XlaCpuDevice(id=0)`` for the XLA:CPU plugin.

    ``memory_stats()`` is the plugin's where it reports them (bytes in use, peak, limit;
    they agree with jaxlite's per-array accounting, which charges each buffer's on-device
    size), else jaxlite's own accounting.
    """

    def __init__(self, info, backend):
        super().__init__(info.id, backend, device_kind=info.kind or backend.platform)
        self.info = info
        self.platform = DEVICE_PLATFORM.get(backend.platform, backend.platform)
        self.process_index = self.host_id = self.task_id = info.process_index
        self.local_hardware_id = info.local_hardware_id
        attrs = info.attributes
        if "coords" in attrs:
            self.coords = tuple(attrs["coords"])
        if "core_on_chip" in attrs:
            self.core_on_chip = int(attrs["core_on_chip"])
        cls = DEVICE_CLASS.get(backend.platform)
        self._repr = f"{cls}(id={info.id})" if cls or not info.text else info.text

    def memory_stats(self) -> dict:
        stats = super().memory_stats()
        mine = self.backend.client.memory_stats(self.info)
        if mine:
            stats.update(mine)
        return stats

    def __repr__(self):
        return self._repr


class PjrtBackend(_runtime_backend.Backend):
    """The platform of one PJRT plugin (``plugins.PluginInfo``); its client starts on
    first use (``start``).

    Attributes: ``platform``, ``priority``, ``info`` (the plugin found), ``client``
    (started on first read), ``dtypes`` (what its buffers hold), ``bytes_limit`` (of one
    device: the plugin's figure, the host's RAM for the XLA:CPU plugin).
    """

    host_memory = False
    fusion = False      # XLA fuses; programs come without jaxlite's fused kernels
    to_host_is_fresh = True     # to_host copies out of device memory into a new array

    def __init__(self, info: "plugins.PluginInfo", client_options: dict | None = None):
        super().__init__()
        self.info = info
        self.platform = info.platform
        self.priority = PRIORITIES.get(info.platform, -10)
        self.dtypes = DTYPES
        self.bytes_limit = 0
        self._client_options = dict(client_options or {})
        self._client = None
        self._start_error = None
        self._lock = threading.Lock()
        self._eager = collections.OrderedDict()
        self._eager_lock = threading.Lock()

    # ---- starting ---------------------------------------------------------------------------
    @property
    def client(self) -> Client:
        c = self._client
        return c if c is not None else self.start()

    def start(self) -> Client:
        """Loads the plugin and creates its client (once; a failure is remembered and
        raised again without retrying).  Raises RuntimeError naming the plugin and the
        cause, within ``START_TIMEOUT`` seconds at most."""
        with self._lock:
            if self._client is not None:
                return self._client
            if self._start_error is not None:
                raise RuntimeError(self._start_error)
            try:
                client = _start_client(self.info, self._client_options)
            except RuntimeError as e:
                self._start_error = str(e)
                raise RuntimeError(self._start_error) from None
            self._client = client
            self.bytes_limit = HOST_BYTES if self.platform == "xla_cpu" else 0
            if client.devices:
                stats = client.memory_stats(client.devices[0]) or {}
                self.bytes_limit = int(stats.get("bytes_limit", self.bytes_limit))
            return client

    def make_devices(self) -> list:
        return [PjrtDevice(info, self) for info in self.client.devices]

    # ---- allocator --------------------------------------------------------------------------
    def nbytes(self, native) -> int:
        return native.nbytes

    def from_host(self, array, device):
        try:
            return self.client.buffer_from_numpy(array, device.info)
        except PjrtOutOfMemory as e:
            raise _oom(e, array.shape, array.dtype, device) from None

    def to_host(self, native, device) -> np.ndarray:
        try:
            return native.to_numpy()
        except PjrtOutOfMemory as e:     # the computation of the value ran out of memory
            raise _oom(e, native.shape, native.dtype, device) from None

    def copy(self, native, src, dst):
        try:
            return native.copy_to_device(dst.info)
        except PjrtOutOfMemory as e:
            raise _oom(e, native.shape, native.dtype, dst) from None

    def allocate(self, shape, dtype, device):
        return self.client.uninitialized_buffer(tuple(shape), dtype, device.info)

    def free(self, native, device) -> None:
        """Nothing to do now: the PJRT buffer is destroyed when its last reference goes
        (at once, in the common case; a running program that received it as a donated
        argument holds it until it has consumed it)."""

    def block_until_ready(self, native, device) -> None:
        try:
            native.block_until_ready()
        except PjrtOutOfMemory as e:
            raise _oom(e, native.shape, native.dtype, device) from None

    # ---- execution --------------------------------------------------------------------------
    def execute(self, prim, vals, params, device, out_aval):
        """Runs ``prim`` on ``vals`` as a one-equation program compiled by the plugin
        (cached per primitive, operand shapes and dtypes, parameters and device, at most
        ``EAGER_CACHE_SIZE`` programs); its results come back at once, still being
        computed."""
        multiple = prim.multiple_results
        if prim is _slice_p() and type(vals[0]) is PjrtBuffer and vals[0].shape and \
                not any(s != 1 for s in params.get("strides") or ()):
            return self._eager_slice(vals[0], params["start_indices"], device, out_aval)
        out_avals = tuple(out_aval) if multiple else (out_aval,)
        ex = self._eager_executable(prim, vals, params, device, out_avals)
        outs = ex.run(vals)
        return outs if multiple else outs[0]

    def _eager_slice(self, x, starts, device, out_aval):
        """An eager unit-stride ``slice`` (``x[i]``, ``x[2:5]``): one program per operand
        shape and slice size taking the start indices as operands, so that a Python loop
        over ``x[i]`` compiles once, not once per ``i``."""
        sizes = tuple(out_aval.shape)
        key = ("slice", x.shape, x.dtype, sizes, device.id)
        with self._eager_lock:
            ex = self._eager.get(key)
        if ex is None:
            from .lowering import lower_function
            avals = [ShapedArray(tuple(x.shape), x.dtype)] + \
                [ShapedArray((), np.dtype(np.int64))] * len(sizes)

            def dynamic_slice(ctx, operand, *index):
                return [ctx.op("stablehlo.dynamic_slice", [operand, *index],
                               ctx.aval(sizes, operand.aval.dtype),
                               {"slice_sizes": ctx.i64s(sizes)})]
            lowered = lower_function(dynamic_slice, avals, name="slice",
                                     platform=self.platform)
            ex = PjrtExecutable(self, lowered, device, "slice")
            with self._eager_lock:
                self._eager[key] = ex
                if len(self._eager) > EAGER_CACHE_SIZE:
                    self._eager.popitem(last=False)
        # the starts are in range (the slice's own rule checked them), so dynamic_slice
        # takes them as they are
        return ex.run([x] + [np.int64(i) for i in starts])[0]

    def _eager_executable(self, prim, vals, params, device, out_avals):
        sig = tuple((v.shape, v.dtype) if type(v) is PjrtBuffer else
                    (np.shape(v), np.asarray(v).dtype) for v in vals)
        try:
            key = (prim, sig, tuple((a.shape, a.dtype) for a in out_avals), _freeze(params),
                   device.id)
        except _Uncacheable:
            key = None
        if key is not None:
            with self._eager_lock:
                ex = self._eager.get(key)
                if ex is not None:
                    self._eager.move_to_end(key)
                    return ex
        invars = [Var(ShapedArray(tuple(shape), dtype)) for shape, dtype in sig]
        outvars = [Var(a) for a in out_avals]
        eqn = JaxprEqn(prim, invars, outvars if prim.multiple_results else outvars[:1],
                       dict(params))
        closed = ClosedJaxpr(Jaxpr([], invars, [eqn], outvars), [])
        ex = self.compile(closed, [device], prim.name)
        if key is not None:
            with self._eager_lock:
                self._eager[key] = ex
                if len(self._eager) > EAGER_CACHE_SIZE:
                    self._eager.popitem(last=False)
        return ex

    def compile(self, program, devices, name):
        """Lowers ``program`` (a ClosedJaxpr) to StableHLO and compiles it with the plugin
        for ``devices[0]``; a program holding host callbacks (``jax.debug.print``,
        ``pure_callback``, ``io_callback``, at any depth) is compiled as pieces run around
        them (pieces.py ``PiecewiseExecutable``).  Raises NotImplementedError for a
        primitive without a lowering (lowering.py), PjrtError with XLA's message and the
        StableHLO lines it names when the plugin rejects the module."""
        device = devices[0]
        from .pieces import PiecewiseExecutable, holds_callback
        if isinstance(program, ClosedJaxpr) and holds_callback(program.jaxpr):
            return PiecewiseExecutable(self, program, device, module_name(name))
        lowered = _lower_module(program, name=module_name(name), platform=self.platform)
        return PjrtExecutable(self, lowered, device, name)

    def run_compiled(self, compiled, args, placement):
        """One call of a jitted program (runtime/backend.py ``Backend.run_compiled``): on
        one device with donated arguments, the donated Arrays on that device an output
        can take are consumed and handed to PJRT's donation (``_run.run_donating``);
        over a mesh of its devices, one module partitioned by XLA (``_spmd``);
        everything else as the runtime's default runs it."""
        if placement.donate and placement.out_shardings is None:
            from ._run import run_donating
            return run_donating(self, compiled, args, placement)
        if placement.mesh is not None and not placement.across:
            # over a mesh: one module XLA partitions (_spmd.py), not jaxlite's partition
            from ._spmd import run_partitioned
            return run_partitioned(self, compiled, args, placement)
        return super().run_compiled(compiled, args, placement)

    def clear_caches(self):
        """Drops the eager operations' executables and the scalar constants kept on this
        platform's devices (``jaxlite.clear_caches``; the persistent cache on disk
        stays)."""
        with self._eager_lock:
            self._eager.clear()
        with _CONSTANTS_LOCK:
            for key in [k for k, b in _CONSTANTS.items() if k[0] == self.platform]:
                del _CONSTANTS[key]

    def fast_launcher(self, program, device, committed):
        """jit's cached-call fast path on a PJRT device (runtime/backend.py
        ``Backend.fast_launcher``): the argument buffers gathered, the loaded executable
        launched, the outputs wrapped, and nothing else.  None for a program compiled as
        pieces, one for another device, or one an output of which could never fit."""
        ex = program.executable_for(device)
        if type(ex) is not PjrtExecutable or ex.device is not device:
            return None
        out_avals = ex.out_avals
        try:
            check_fits(out_avals, device, ex.name)
        except Exception:  # noqa: BLE001  (the full path raises it at each call)
            return None
        loaded, shapes, tmp = ex._loaded, ex._out_shapes, ex.temp_bytes
        from ...core import eager as _eager_mod
        from ...core.array import ArrayImpl
        from ...runtime.buffer import DeviceBuffer
        execute = loaded.execute

        def launch(args):
            if _eager_mod._fp_checks is not None:      # jax_debug_nans / _infs
                return None
            bufs = []
            for x in args:
                b = x._buf
                v = b.data
                if b.device is not device or v is None:
                    return None
                bufs.append(v)
            try:
                if tmp:
                    outs = device._run_charged(tmp, lambda: execute(bufs, shapes))
                else:
                    outs = execute(bufs, shapes)
            except PjrtError:       # nothing launched: the full path raises it as always
                return None
            # (core/eager.py ``wrap``, inlined: an execution's outputs are new buffers,
            # never one of its arguments)
            return [ArrayImpl(DeviceBuffer(o, device), a, committed)
                    for o, a in zip(outs, out_avals)]
        return launch

    def __repr__(self):
        state = "started" if self._client is not None else "not started"
        return f"<PjrtBackend platform={self.platform!r} {self.info.path} ({state})>"

    def lowered_text(self, program, name):
        """``program`` (the traced ClosedJaxpr) as the StableHLO module the plugin takes
        (``jit(f).lower(x).as_text()``; the executable compiles jaxlite's optimised
        program, which ``compile().as_text()`` shows); for a program holding host
        callbacks, the pieces it runs in with each device piece's module (pieces.py)."""
        from .pieces import lowered_text
        return lowered_text(program, name=module_name(name), platform=self.platform)


def module_name(name: str) -> str:
    """The StableHLO module's name for a program named ``name``: JAX's ``jit_f`` (as
    ``lower().as_text()`` and the persistent cache's messages show it; a lambda's module is
    ``jit__lambda``)."""
    name = name.replace(">", "")
    return name if name.startswith("jit_") else f"jit_{name}"


def _slice_p():
    """The ``slice`` primitive (its eager unit-stride case compiles per shape, not per
    start; imported on first use, as the primitives import after the backends)."""
    from ...primitives.shape import slice_p
    return slice_p


def _lower_module(program, name, platform):
    """``lowering.lower_module`` (imported on first use: it is the other half of this
    platform, and programs compile far less often than jaxlite is imported)."""
    from .lowering import lower_module
    return lower_module(program, name=name, platform=platform)


def _holds_callback(jaxpr) -> bool:
    from .pieces import holds_callback
    return holds_callback(jaxpr)


class _Uncacheable(Exception):
    """A parameter of an eager operation that cannot be part of a cache key."""


_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.dtype, np.generic,
          enum.Enum, type, slice)


def _freeze(v):
    """A hashable key of parameter value ``v`` that holds no user object (a program's
    text stands for the program); raises _Uncacheable for a value without one (a
    function, a program with constants, a large array)."""
    if isinstance(v, _PLAIN):
        return (type(v), v)
    if isinstance(v, (tuple, list)):
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    if isinstance(v, (frozenset, set)):
        return (type(v), frozenset(_freeze(x) for x in v))
    if isinstance(v, ClosedJaxpr):
        if v.consts or _holds_callback(v.jaxpr):
            raise _Uncacheable
        return ("closed_jaxpr", str(v.jaxpr), tuple(a.str_short() for a in v.in_avals))
    if isinstance(v, Jaxpr):
        # (a program's text names a callback, not which function it calls)
        if v.constvars or _holds_callback(v):
            raise _Uncacheable
        return ("jaxpr", str(v), tuple(a.str_short() for a in v.in_avals))
    if isinstance(v, np.ndarray) and v.nbytes <= 4096:
        return ("array", v.shape, v.dtype, v.tobytes())
    raise _Uncacheable


class PjrtExecutable:
    """A program compiled by a PJRT plugin for one device (what ``PjrtBackend.compile``
    returns; the runtime's executable contract).

    Attributes: ``in_avals``, ``out_avals``, ``temp_bytes`` (the plugin's figure of the
    temporaries), ``backend`` (the platform name), ``name``, ``device``.
    ``run(vals, donated=None)`` takes native values (PjrtBuffers on ``device``; a NumPy
    scalar or 0-d array is a constant, copied to the device for the call) and returns one
    PjrtBuffer per output at once.  ``donated``: argument positions the program may
    consume (PJRT's donation: the module is compiled once more, on the first such call,
    with those parameters marked ``jax.buffer_donor``, and XLA writes outputs into them;
    every other argument is passed as non-donatable and stays valid).  ``as_text()`` is
    the StableHLO module; ``optimized_hlo_text()`` the plugin's optimised HLO;
    ``cost_analysis()`` the plugin's figures (flops, bytes accessed, ...).
    """

    def __init__(self, backend: PjrtBackend, lowered, device, name: str):
        self.backend = backend.platform
        self.name = name
        self.device = device
        self.in_avals = list(lowered.in_avals)
        self.out_avals = list(lowered.out_avals)
        self.text = lowered.text
        self._client = client = backend.client
        try:
            self._loaded = load_or_compile(client, self.text, device.info, name)
        except PjrtError as e:
            raise _compile_error(e, self.text, name) from None
        self._out_shapes = [(tuple(a.shape), a.dtype) for a in self.out_avals]
        mem = self._loaded.compiled_memory_stats()
        self.temp_bytes = int(mem["temp_size_in_bytes"]) if mem else 0
        self._donating: dict = {}     # donated positions -> executable marking them donors

    def run(self, vals, donated=None) -> list:
        bufs = []
        for v in vals:
            if type(v) is not PjrtBuffer:     # a constant of the operation
                v = self._constant(v)
            bufs.append(v)
        check_fits(self.out_avals, self.device, f"the program {self.name}")
        loaded = self._loaded
        if donated:
            donated = tuple(sorted(k for k in donated if type(vals[k]) is PjrtBuffer))
            loaded = self._donating.get(donated)
            if loaded is None:
                try:
                    loaded = self._donating[donated] = load_or_compile(
                        self._client, mark_donors(self.text, donated), self.device.info,
                        self.name)
                except PjrtError as e:
                    raise _compile_error(e, self.text, self.name) from None
        try:
            return loaded.execute(bufs, self._out_shapes, donated or ())
        except PjrtOutOfMemory as e:
            raise out_of_memory(None, device=self.device,
                                what=f"the program {self.name}: {e}") from None

    def _constant(self, v) -> PjrtBuffer:
        """A device buffer holding constant ``v`` (a NumPy scalar or array): scalars are
        kept per device, dtype and value (at most ``CONSTANTS_KEPT``; values, not user
        objects), so ``x + 1.0`` copies its ``1.0`` to the device once."""
        a = np.asarray(v)
        if a.ndim:
            return self._client.buffer_from_numpy(a, self.device.info)
        key = (self.backend, self.device.id, a.dtype, a.tobytes())
        cache = _CONSTANTS
        b = cache.get(key)
        if b is None or b.client is not self._client:
            b = self._client.buffer_from_numpy(a, self.device.info)
            with _CONSTANTS_LOCK:
                cache[key] = b
                if len(cache) > CONSTANTS_KEPT:
                    cache.pop(next(iter(cache)))
        return b

    def as_text(self) -> str:
        return self.text

    def optimized_hlo_text(self) -> str | None:
        """The plugin's optimised program as HLO text, or None when it gives none."""
        prog = self._loaded.optimized_program()
        if prog is None:
            return None
        from ._hlo import module_text
        return module_text(prog[1], prog[0])

    def cost_analysis(self) -> dict | None:
        """The plugin's cost analysis: ``{'flops': F, 'bytes accessed': B, ...}`` (None
        when the plugin has none)."""
        return self._loaded.cost_analysis()

    def memory_analysis(self) -> dict | None:
        """The plugin's compiled memory figures (``temp_size_in_bytes`` ...), or None."""
        return self._loaded.compiled_memory_stats()


_MAIN_RE = re.compile(r"func\.func\s+(?:public\s+)?@main\s*\(")


def mark_donors(text: str, positions) -> str:
    """``text`` (a StableHLO module) with the parameters of ``@main`` at ``positions``
    marked ``jax.buffer_donor = true`` (XLA may then write an output into them).
    Raises ValueError when ``@main``'s signature cannot be read."""
    m = _MAIN_RE.search(text)
    if m is None:
        raise ValueError("the module has no func.func @main to mark donated arguments in")
    start = i = m.end()
    depth, args, arg_start = 0, [], start
    while True:       # split the argument list at top-level commas
        ch = text[i]
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]" and depth:
            depth -= 1
        elif ch == ")" and not depth:
            args.append((arg_start, i))
            break
        elif ch == "," and not depth:
            args.append((arg_start, i))
            arg_start = i + 1
        i += 1
    out, last = [], 0
    for k in sorted(positions):
        a, b = args[k]
        arg = text[a:b].rstrip()
        end = a + len(arg)
        if arg.endswith("}"):          # attributes already: add to them
            out += [text[last:end - 1].rstrip(), ", jax.buffer_donor = true}"]
        else:
            out += [text[last:end], " {jax.buffer_donor = true}"]
        last = end
    out.append(text[last:])
    return "".join(out)


def _oom(e: PjrtOutOfMemory, shape, dtype, device):
    n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    err = out_of_memory(n, shape, dtype, device)
    err.__cause__ = e
    return err


_LINE_RE = re.compile(r"(?:^|\s|-|loc\()[\w./<>-]*:(\d+):(\d+):")
_LOC_RE = re.compile(r'(loc\("[^"]*")')


def _compile_error(e: PjrtError, text: str, name: str) -> PjrtError:
    """``e`` (the plugin refused the module) with the StableHLO lines its message names
    appended, so that the offending operations show."""
    lines = text.splitlines()
    nums = {int(m.group(1)) for m in _LINE_RE.finditer(e.message)
            if 0 < int(m.group(1)) <= len(lines)}
    # the module's own locations (the lowering writes each operation's primitive, and its
    # source line where known, as loc(...)): the lines carrying the ones XLA names
    for loc in set(_LOC_RE.findall(e.message)):
        nums.update([n for n, line in enumerate(lines, 1) if loc in line][:5])
    nums = sorted(nums)
    shown = "".join(f"\n  {n:4d} | {lines[n - 1]}" for n in nums[:20])
    where = f"\nThe StableHLO lines it names:{shown}" if shown else ""
    err = type(e)(e.code, f"XLA rejected the program {name!r}: {e.message}{where}")
    return err


def _start_client(info, options) -> Client:
    """Loads ``info``'s plugin and creates its client in a helper thread, waiting at most
    ``START_TIMEOUT`` seconds (a plugin that hangs is reported, not waited for forever).
    Raises RuntimeError naming the plugin and the cause."""
    box = {}

    def start():
        try:
            box["client"] = Client(Plugin.load(info.path), options)
        except (RuntimeError, OSError) as e:    # PjrtError is a RuntimeError
            box["error"] = e

    t = threading.Thread(target=start, name=f"jaxlite-pjrt-start-{info.platform}",
                         daemon=True)
    t.start()
    t.join(START_TIMEOUT)
    if t.is_alive():
        raise RuntimeError(f"the {info.platform} PJRT plugin {info.path} (found through "
                           f"{info.source}) did not start within {START_TIMEOUT:g} s")
    if "error" in box:
        e = box["error"]
        plugin = "" if info.path in str(e) else f" {info.path}"
        raise RuntimeError(f"{e} (the {info.platform} PJRT plugin{plugin}, found through "
                           f"{info.source})")
    return box["client"]


def client_options(platform: str) -> dict:
    """The create options jaxlite gives ``platform``'s client: for the XLA:CPU plugin,
    ``cpu_device_count`` when ``jax_num_cpu_devices`` (``JAX_NUM_CPU_DEVICES``, or
    ``XLA_FLAGS``' host device count) asks for a number of CPU devices, as it does for
    jaxlite's own CPU platform (the plugin's default is 4); none for other plugins."""
    if platform != "xla_cpu":
        return {}
    from ...config import config
    from ...runtime.device import _xla_flags_cpu_count
    n = config.jax_num_cpu_devices
    if n is None or n < 0:
        n = _xla_flags_cpu_count()
    return {} if not n else {"cpu_device_count": int(n)}


class _Provider:
    """Registers a PjrtBackend for a platform when it is first asked for (the runtime's
    provider protocol, runtime/backend.py ``add_provider``)."""

    def __init__(self):
        self._backends: dict = {}     # platform -> PjrtBackend, once made
        self._lock = threading.RLock()

    def _backend(self, name: str, found=None):
        if name == "cpu":       # jaxlite's own platform
            return None
        b = self._backends.get(name)
        if b is None:
            info = plugins.find(name, found)
            if info is None:
                return None
            if info.error is not None:
                raise RuntimeError(f"the {name} PJRT plugin found through {info.source} "
                                   f"cannot be used: {info.error}")
            b = self._backends[name] = PjrtBackend(info, client_options(name))
        return b

    def provide(self, name: str, found=None):
        with self._lock:
            b = self._backend(name, found)
            if b is None:
                return None
            b.start()
            have = _runtime_backend.get(name)
            if have is None:
                _runtime_backend.register(b)
                return b
            return have

    def hint(self, name: str):
        if name in plugins.INSTALL_HINTS and name not in self._backends:
            msg = plugins.not_found_message(name)
            return msg[0].upper() + msg[1:] + "."
        return None

    def autodetect(self) -> None:
        found = plugins.discover()
        for name in ACCELERATORS:
            if _runtime_backend.get(name) is not None or \
                    not any(p.platform == name for p in found):
                continue
            try:
                self.provide(name, found)
            except RuntimeError as e:
                warnings.warn(f"Unable to initialize backend '{name}': {e}. Falling back to "
                              f"the CPU (set JAX_PLATFORMS=cpu to skip this platform).",
                              RuntimeWarning, stacklevel=2)


PROVIDER = _Provider()
