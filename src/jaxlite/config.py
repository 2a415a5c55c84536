"""Global configuration flags, mirroring ``jax.config``.

Layer: bottom (imported by every other layer, imports nothing of jaxlite).

Flags are read from the environment once at import (``JAX_ENABLE_X64``,
``JAX_NUM_CPU_DEVICES``, ``JAX_TRANSFER_GUARD``, ...) and changed with
``config.update(name, value)``.  Reading a flag is a plain attribute read (flags live in
the instance ``__dict__``), because some are read on every operation.  Listeners
registered with ``_on_change`` are told of each change (caches use this to drop stale
entries, the runtime to follow ``jax_default_device`` and the transfer guard).

This is the one module that reads ``JAX_*`` / ``JAXLITE_*`` variables (a test greps for
others).  Flags that change what jit compiles (``_JIT_KEY_FLAGS``: fusion, tiering) are
part of every jit cache key through ``config._jit_key``.
"""
from __future__ import annotations

import contextlib
import os

_TRUE = {"1", "true", "yes", "on", "t", "y"}


def _env_bool(name: str, default: bool) -> bool:
    v = os.environ.get(name)
    return default if v is None else v.strip().lower() in _TRUE


def _env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    return default if v is None or not v.strip() else int(v)


def _env_on(name: str) -> bool:
    """A switch that is on unless the variable says off (0, false, off, no)."""
    return os.environ.get(name, "1").strip().lower() not in ("0", "false", "off", "no")


def _env_bytes(name: str):
    """A byte count (``1e8`` accepted), or None when the variable is unset or empty."""
    v = os.environ.get(name)
    if not v:
        return None
    try:
        return max(0, int(float(v)))
    except ValueError:
        raise ValueError(f"{name} must be a number of bytes, got {v!r}") from None


_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_TRANSFER_GUARD_FLAGS = ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
                         "jax_transfer_guard_device_to_host",
                         "jax_transfer_guard_device_to_device")
_BOOL_FLAGS = ("jax_enable_x64", "jax_log_compiles", "jax_explain_cache_misses",
               "jax_disable_jit", "jax_debug_nans", "jax_debug_infs", "jaxlite_tiered",
               "jaxlite_build_process",
               "jaxlite_async", "jax_enable_checks", "jaxlite_fusion",
               "jaxlite_native_ops")
# The flags that change what jit compiles for a signature: their values are part of each
# jit cache key (``config._jit_key``, kept up to date by ``_set``), so changing one
# recompiles instead of reusing a program built under the old value.
_JIT_KEY_FLAGS = ("jaxlite_fusion", "jaxlite_tiered", "jaxlite_tier_up_calls",
                  "jaxlite_backend")
_ENUMS = {name: _TRANSFER_GUARD_LEVELS for name in _TRANSFER_GUARD_FLAGS}
_ENUMS["jax_numpy_rank_promotion"] = ("allow", "warn", "raise")
_ENUMS["jax_traceback_filtering"] = ("off", "tracebackhide", "remove_frames",
                                     "quiet_remove_frames", "auto")


def check_transfer_guard_level(value, name: str = "transfer guard level") -> None:
    """Raises ValueError unless ``value`` is None or a transfer-guard level."""
    if value is not None and value not in _TRANSFER_GUARD_LEVELS:
        raise ValueError(f"{name}: new enum value must be None or in "
                         f"{list(_TRANSFER_GUARD_LEVELS)}, got {value!r} of type "
                         f"{type(value)}.")


class Config:
    """Holds jaxlite's flags; ``jaxlite.config`` is the one instance.

    Mirrors ``jax.config``: read a flag as an attribute (``config.jax_enable_x64``), change it
    with ``config.update("jax_enable_x64", True)``.

    Raises (from ``update``):
      AttributeError: an unknown flag name ("Unrecognized config option: ...").
      ValueError: a value of the wrong kind (an unknown transfer-guard level, a non-int
        device count, a default device that is neither a Device nor a platform name).
      RuntimeError: ``jax_num_cpu_devices`` changed after the CPU devices were created.
    """

    def __init__(self):
        values = {
            "jax_enable_x64": _env_bool("JAX_ENABLE_X64", False),
            # -1: one CPU device, or as many as XLA_FLAGS' host device count asks
            "jax_num_cpu_devices": _env_int("JAX_NUM_CPU_DEVICES", -1),
            "jax_log_compiles": _env_bool("JAX_LOG_COMPILES", False),
            "jax_explain_cache_misses": _env_bool("JAX_EXPLAIN_CACHE_MISSES", False),
            "jax_transfer_guard": os.environ.get("JAX_TRANSFER_GUARD") or None,
            "jax_transfer_guard_host_to_device": None,
            "jax_transfer_guard_device_to_host": None,
            "jax_transfer_guard_device_to_device": None,
            "jax_default_device": None,
            "jax_platforms": os.environ.get("JAX_PLATFORMS", None),
            # the persistent compile cache (JAXLITE_CACHE_DIR, else JAX's variable)
            "jax_compilation_cache_dir": os.environ.get(
                "JAXLITE_CACHE_DIR", os.environ.get("JAX_COMPILATION_CACHE_DIR", None)),
            "jax_disable_jit": _env_bool("JAX_DISABLE_JIT", False),
            # raise FloatingPointError naming the primitive whose output holds a NaN (an
            # infinity): checked after every eager operation; a jitted program whose outputs
            # hold one is run again operation by operation to find it (core/eager.py)
            "jax_debug_nans": _env_bool("JAX_DEBUG_NANS", False),
            "jax_debug_infs": _env_bool("JAX_DEBUG_INFS", False),
            "jax_numpy_rank_promotion": "allow",
            # how an error leaving a public function drops jaxlite's frames from its
            # traceback (_traceback.py; JAX's values, default 'auto')
            "jax_traceback_filtering": os.environ.get("JAX_TRACEBACK_FILTERING") or "auto",
            # the compiler backend jit uses: "cpu" (native Numba kernels, tiered) or
            # "interpreter" (NumPy, the reference)
            "jaxlite_backend": os.environ.get("JAXLITE_BACKEND") or "cpu",
            # cpu backend: run a program on the interpreter while its native code builds
            # in the background (False: compile before the first call returns)
            "jaxlite_tiered": _env_bool("JAXLITE_TIERED", True),
            # tiered cpu backend: a program's native build starts after this many calls
            # (after the first when the persistent cache already holds its native code)
            "jaxlite_tier_up_calls": _env_int("JAXLITE_TIER_UP_CALLS", 2),
            # tiered cpu backend: Numba compiles in a separate, lower-priority process
            # (backends/cpu/_build_process.py) so a build never slows the running program
            "jaxlite_build_process": _env_bool("JAXLITE_BUILD_PROCESS", True),
            # asynchronous dispatch (runtime/dispatch.py): work of at least this estimated
            # cost (about bytes moved + flops) runs on the device's worker thread
            "jaxlite_async": _env_bool("JAXLITE_ASYNC", True),
            "jaxlite_async_min_cost": _env_int("JAXLITE_ASYNC_MIN_COST", 32_000_000),
            # the compiler's fusion pass (JAXLITE_FUSION=0 compiles without it); part of
            # jit's cache key
            "jaxlite_fusion": _env_on("JAXLITE_FUSION"),
            # the eager operators' common case in C (core/_eager_ops.c, where the install
            # built it); False: the Python operators do everything
            "jaxlite_native_ops": _env_on("JAXLITE_NATIVE_OPS"),
            # check every program the compiler receives and each pass's output with
            # check_jaxpr (ir/check.py); JAXLITE_ENABLE_CHECKS, else JAX's variable
            "jax_enable_checks": _env_bool("JAXLITE_ENABLE_CHECKS",
                                           _env_bool("JAX_ENABLE_CHECKS", False)),
            # bytes of free host buffers the recycling pool keeps (runtime/buffer.py);
            # None: the smaller of 512 MiB and an eighth of RAM
            "jaxlite_buffer_pool_bytes": _env_bytes("JAXLITE_BUFFER_POOL_BYTES"),
            # several processes (runtime/mpi.py): seconds a collective waits for the other
            # processes before it raises CollectiveTimeoutError
            "jaxlite_collective_timeout": float(os.environ.get("JAXLITE_COLLECTIVE_TIMEOUT")
                                                or 300.0),
        }
        check_transfer_guard_level(values["jax_transfer_guard"], "JAX_TRANSFER_GUARD")
        if values["jax_traceback_filtering"] not in _ENUMS["jax_traceback_filtering"]:
            raise ValueError(f"JAX_TRACEBACK_FILTERING must be one of "
                             f"{list(_ENUMS['jax_traceback_filtering'])}, got "
                             f"{values['jax_traceback_filtering']!r}")
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_listeners", [])
        object.__setattr__(self, "_frozen", set())
        self.__dict__.update(values)
        self.__dict__["_jit_key"] = tuple(values[n] for n in _JIT_KEY_FLAGS)

    def __getattr__(self, name):
        # only reached for names that are not flags (flags are instance attributes)
        raise AttributeError(f"Unrecognized config option: {name}")

    def __setattr__(self, name, value):
        raise AttributeError("use config.update(name, value) to change a jaxlite flag")

    def _check(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        if name in self._frozen:
            raise RuntimeError(
                f"{name} can no longer change: the devices already exist. Set it right after "
                f"`import jaxlite`, before any jaxlite operation runs, or through the "
                f"environment.")
        if name in _ENUMS and value is not None and value not in _ENUMS[name]:
            raise ValueError(f"{name}: new enum value must be None or in {list(_ENUMS[name])}, "
                             f"got {value!r} of type {type(value)}.")
        if name in _BOOL_FLAGS and not isinstance(value, (bool, int)):
            raise ValueError(f"{name}: new bool config value must be of type bool, got "
                             f"{value!r} of type {type(value)}.")
        if name == "jax_num_cpu_devices":
            if value is not None and (type(value) is not int):
                raise ValueError(f"jax_num_cpu_devices takes an int or None, not {value!r} "
                                 f"(of type {type(value)})")
            if value is not None and value == 0 or (value is not None and value < -1):
                raise ValueError(f"jax_num_cpu_devices must be a positive number of devices "
                                 f"(or -1 for the default), got {value}.")
        if name == "jaxlite_buffer_pool_bytes" and value is not None and (
                type(value) is not int or value < 0):
            raise ValueError(f"jaxlite_buffer_pool_bytes takes a number of bytes (an int "
                             f">= 0) or None, got {value!r}")
        if name == "jaxlite_tier_up_calls" and (type(value) is not int or value < 1):
            raise ValueError(f"jaxlite_tier_up_calls takes a positive int (the call after "
                             f"which a program's native build starts), got {value!r}")
        if name == "jax_default_device" and value is not None and not isinstance(value, str) \
                and not hasattr(value, "platform"):
            raise ValueError(f"jax_default_device takes a Device (such as "
                             f"jaxlite.devices()[0]) or the name of a platform, e.g. 'cpu'; "
                             f"{value!r} is neither")

    def update(self, name: str, value) -> None:
        """Sets flag ``name`` to ``value`` (``jax.config.update``).

        Raises AttributeError (unknown flag), ValueError (bad value) or RuntimeError
        (``jax_num_cpu_devices`` after the devices exist), as the class describes.
        """
        self._check(name, value)
        self._set(name, value)

    def _set(self, name, value):
        self._values[name] = value
        self.__dict__[name] = value
        if name in _JIT_KEY_FLAGS:
            self.__dict__["_jit_key"] = tuple(self._values[n] for n in _JIT_KEY_FLAGS)
        for fn in self._listeners:
            fn(name, value)

    def read(self, name: str):
        """The value of flag ``name`` (``jax.config.read``)."""
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        return self._values[name]

    def _freeze(self, name):
        self._frozen.add(name)

    def _on_change(self, fn):
        self._listeners.append(fn)

    @contextlib.contextmanager
    def _override(self, name, value):
        old = self._values[name]
        self.update(name, value)
        try:
            yield
        finally:
            self._set(name, old)

    def values(self):
        return dict(self._values)


config = Config()


def enable_x64(new_val: bool = True):
    """Context manager that turns 64-bit types on (or off) inside its block."""
    return config._override("jax_enable_x64", bool(new_val))


def log_compiles(enable: bool = True):
    """Context manager that logs every compile inside its block (``jax.log_compiles``)."""
    return config._override("jax_log_compiles", bool(enable))


def debug_nans(new_val: bool = True):
    """Context manager turning ``jax_debug_nans`` on (or off) inside its block
    (``jax.debug_nans``): an operation producing a NaN raises FloatingPointError naming
    it."""
    return config._override("jax_debug_nans", bool(new_val))


def debug_infs(new_val: bool = True):
    """Context manager turning ``jax_debug_infs`` on (or off) inside its block
    (``jax.debug_infs``): an operation producing an infinity raises FloatingPointError
    naming it."""
    return config._override("jax_debug_infs", bool(new_val))


def explain_cache_misses(new_val: bool = True):
    """Context manager turning ``jax_explain_cache_misses`` on (or off) inside its block
    (``jax.explain_cache_misses``): each jit cache miss logs the argument that changed."""
    return config._override("jax_explain_cache_misses", bool(new_val))


def enable_checks(new_val: bool = True):
    """Context manager turning ``jax_enable_checks`` on (or off) inside its block
    (``jax.enable_checks``): every program jit compiles, and each compiler pass's output, is
    type-checked with ``jaxlite.ir.check_jaxpr``; an ill-typed one raises JaxprTypeError
    naming the pass and the equation.  Makes compiling slower, never running."""
    return config._override("jax_enable_checks", bool(new_val))


def disable_jit(disable: bool = True):
    """Context manager under which ``jit`` runs functions eagerly (``jax.disable_jit``)."""
    return config._override("jax_disable_jit", bool(disable))
