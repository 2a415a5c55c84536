"""jaxlite: JAX's core written from scratch in Python.

``import jaxlite as jax`` and ``import jaxlite.numpy as jnp`` run JAX programs: immutable
arrays, devices and their memory, a tracer into a jaxpr-style IR, ``jit``, ``grad`` and
``vmap``.
This module only re-exports the public surface.
"""
from .version import __version__  # noqa: F401

from .config import (config, enable_x64, log_compiles, disable_jit,  # noqa: F401
                     debug_nans, debug_infs, explain_cache_misses, enable_checks,
                     check_tracer_leaks, checking_leaks, default_prng_impl)
from . import dtypes, errors, monitoring, tree_util  # noqa: F401
from .runtime import (Device, devices, local_devices, device_count,  # noqa: F401
                      local_device_count, default_backend, process_index, process_count,
                      process_indices,
                      transfer_guard, transfer_guard_host_to_device,
                      transfer_guard_device_to_host, transfer_guard_device_to_device,
                      transfer_stats)
from .core.array import Array, live_arrays  # noqa: F401
from .core.trace import Tracer  # noqa: F401
from . import primitives as _primitives  # noqa: F401  (registers every primitive)
from . import backends as _backends  # noqa: F401  (registers the CPU platform)
from . import lax, numpy, nn, debug, sharding  # noqa: F401
from .sharding import NamedSharding, P, make_mesh, set_mesh  # noqa: F401
from .sharding import reshard  # noqa: F401
from . import random  # noqa: F401
from . import ops, image  # noqa: F401
from .transforms import jit, make_jaxpr, eval_shape  # noqa: F401
from .transforms import (jvp, linearize, vjp, grad, value_and_grad, jacfwd,  # noqa: F401
                         jacrev, hessian, custom_jvp, custom_vjp, checkpoint, remat,
                         closure_convert, vmap)
from .transforms.stages import ShapeDtypeStruct  # noqa: F401
from .transforms.shard_map import shard_map, pmap  # noqa: F401
from .transforms.derivatives import jacobian, linear_transpose, custom_gradient  # noqa: F401
from .transforms.scopes import ensure_compile_time_eval, named_call, named_scope  # noqa
from .lax._introspect import typeof  # noqa: F401
from .runtime.environment import print_environment_info  # noqa: F401
from .lax._callback import pure_callback  # noqa: F401
from .dtypes import float0  # noqa: F401
from .core.placement import device_put, device_get, block_until_ready, default_device  # noqa
from .transforms.sharded_api import (make_array_from_callback,  # noqa: F401
                                     make_array_from_process_local_data,
                                     make_array_from_single_device_arrays)
from .tree_util import tree_map, tree_leaves, tree_structure  # noqa: F401
from . import tree  # noqa: F401
from . import stages, profiler  # noqa: F401
from .ad_checkpoint import checkpoint_policies  # noqa: F401
from .runtime.sync import effects_barrier, copy_to_host_async  # noqa: F401
from . import experimental, typing, version  # noqa: F401
from . import dlpack  # noqa: F401
from . import distributed  # noqa: F401
from . import _traceback
import sys as _sys


def clear_caches() -> None:
    """Clears every compilation cache of this process (mirrors ``jax.clear_caches``).

    Empties the compiled-signature cache of every ``jit``-wrapped function (the next
    call traces and compiles again), the memoised abstract-evaluation results of the
    primitives, the eager operators' memos, the pytree structure memos, the native kernels
    compiled in this process (the persistent on-disk cache is kept), each platform's
    eager executables and device constants, and the pool of free host buffers kept for
    reuse: every program, constant and function they held is
    released.  Live arrays are untouched.  Takes no arguments, returns None, raises
    nothing.
    """
    from .transforms.jit import clear_all_caches
    from .core.primitive import _registry
    from .backends.cpu import _cache
    from .runtime.buffer import clear_buffer_pool
    from .numpy import _methods, _ufuncs
    from . import tree_util
    clear_all_caches()
    for prim in list(_registry.values()):
        prim._aval_cache.clear()
    for memo in _methods._OP_CACHES:
        memo.clear()
    _ufuncs._fast_plans.clear()
    _ufuncs._promotions.clear()
    _ufuncs._strong_scalar.cache_clear()
    tree_util._decisions.clear()
    tree_util._sorted_specs.clear()
    _cache.clear_memory()
    clear_buffer_pool()
    from .runtime.backend import registered
    for backend in registered():
        backend.clear_caches()


def __getattr__(name):
    # jaxlite.scipy loads on first use: it is rarely needed and SciPy's special functions
    # cost more import time than the rest of the package may grow
    if name == "scipy":
        import importlib
        return importlib.import_module(".scipy", __name__)
    raise AttributeError(f"module 'jaxlite' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"scipy"})


# The public functions are traceback boundaries: an error leaving one has jaxlite's own
# frames filtered from its traceback (``jax_traceback_filtering``; _traceback.py).
# (the main namespaces first: a function that several export names the main one as its
# __module__)
# (jaxlite.scipy's modules and jaxlite.experimental.shard_map, loaded on first use, wrap
# themselves as they load)
for _m in (numpy, numpy.linalg, numpy.fft, lax, lax.linalg, nn, nn.initializers, random,
           image, ops, experimental, _sys.modules[__name__]):
    _traceback.wrap_namespace(_m)
_traceback.share_wrappers()
del _m
