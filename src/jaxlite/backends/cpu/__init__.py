"""The CPU platform: host memory, NumPy for eager operations, native kernels for programs.

Layer: backends.  This folder is the whole native CPU backend:

- ``CpuBackend`` (here): the platform's Backend (runtime/backend.py), registered below.
  Its devices share host memory (``host_memory = True``: the runtime's host allocator and
  buffer pool serve them, and the eager hot paths run each primitive's NumPy reference
  implementation directly, which is exactly this backend's ``execute``).
- ``_run.py``: one call of a jitted program on one device (``run_compiled``): inline,
  or on the device's worker when the program is big; donated buffers written into.
  A call over a mesh of CPU devices runs as the runtime's default runs it (core/run.py):
  the compiler's SPMD partition expanded over the mesh, across MPI processes as well.
- ``_tiered.py``: programs start on the interpreter (backends/interpreter.py, the
  reference) and switch to native code built in the background once hot.
- ``native.py``: the native executable (fused kernels as generated Numba loops, BLAS,
  the interpreter for what it does not handle); ``_loop.py``: scan/while as native loops;
  ``_ops.py``: scalar code generation; ``_vecmath.py``: vectorised transcendental
  functions; ``_cache.py``: the persistent kernel cache.

The executor, native (tiered) or interpreter only, is this backend's own setting
(``CpuBackend.executor``), whose starting value is config ``jaxlite_backend``
(``JAXLITE_BACKEND=interpreter``); it is part of every jit cache key.
"""
from __future__ import annotations

import numpy as np

from ...config import config
from ...runtime import backend as _backend
from ...runtime.buffer import pool_empty
from ...runtime.device import CpuDevice, num_cpu_devices
from ..base import get_backend, register_backend
from . import _run
from ._tiered import compile_cpu

register_backend("cpu", compile_cpu)   # the "cpu" executor: tiered native code


class CpuBackend(_backend.Backend):
    """The ``'cpu'`` platform (``jax.devices('cpu')``): ``num_cpu_devices()`` devices on
    host memory.  ``executor`` is ``'cpu'`` (native code, tiered) or ``'interpreter'``."""

    platform = "cpu"
    host_memory = True
    priority = 0
    dtypes = None      # every dtype NumPy and ml_dtypes hold

    def __init__(self):
        super().__init__()
        self.executor = config.jaxlite_backend
        self._native = None

    def make_devices(self) -> list:
        from ...runtime import mpi
        from ...runtime.device import global_cpu_devices
        if mpi.world() is not None:     # several processes: every process's devices
            devs = global_cpu_devices(self, num_cpu_devices())
        else:
            devs = [CpuDevice(i, self) for i in range(num_cpu_devices())]
        config._freeze("jax_num_cpu_devices")
        return devs

    # allocator: host memory (the runtime's Buffer and buffer pool count it)
    def from_host(self, array, device):
        return np.array(array, copy=True, order="C")

    def to_host(self, native, device):
        return native

    def copy(self, native, src, dst):
        return native.copy()

    def allocate(self, shape, dtype, device):
        return pool_empty(shape, dtype)

    def execute(self, prim, vals, params, device, out_aval):
        return prim.impl(*vals, **params)   # the reference; the caller casts (eager.wrap)

    def compile(self, program, devices, name):
        return get_backend(self.executor)(program, name)

    # one device: inline or on the device's worker, donation into outputs; over a mesh:
    # the runtime's default, the partitioned program over the devices' shards (_run.py)
    run_compiled = _run.run_compiled

    @property
    def native_primitives(self) -> frozenset:
        """Names of the primitives with a native code path: the elementwise ones with a
        scalar op (fused into generated kernels; a dtype the generator lacks falls back
        to the interpreter for that kernel, see native.py), reductions, ``dot_general``
        (BLAS), ``scan`` and ``while`` (native loops)."""
        if self._native is None:
            from ...core.primitive import primitives
            from ...primitives.control_flow import scan_p, while_p
            from ...primitives.linalg import dot_general_p
            names = {dot_general_p.name, scan_p.name, while_p.name}
            for name, prim in primitives().items():
                if (prim.elementwise and prim.scalar_op) or prim.reduction is not None:
                    names.add(name)
            self._native = frozenset(names)
        return self._native


def _on_config(name, value):
    if name == "jaxlite_backend":
        BACKEND.executor = value


BACKEND = _backend.register(CpuBackend())
"""The process's CPU Backend (``jaxlite.devices('cpu')[0].backend``)."""
config._on_change(_on_config)

__all__ = ["BACKEND", "CpuBackend"]
