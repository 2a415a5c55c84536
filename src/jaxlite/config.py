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

import numpy as np

from ._unsupported_options import JAX_DEFAULTS as _UNSUPPORTED

# The spellings JAX accepts for a boolean environment variable (compared in lower case);
# anything else is refused rather than read as False.
_TRUE = ("y", "yes", "t", "true", "on", "1")
_FALSE = ("n", "no", "f", "false", "off", "0")


def _parse_bool_env(var: str, v: str) -> bool:
    low = v.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    # JAX's message, then the spellings it accepts
    raise ValueError(f"invalid truth value {low!r} for environment {var!r}: write one of "
                     f"{', '.join(_TRUE)} or {', '.join(_FALSE)}")


def _env_bool(name: str, default: bool) -> bool:
    """A boolean variable, JAX's way: unset gives ``default``; any other value must be one
    of JAX's spellings (ValueError naming the variable and the value otherwise)."""
    v = os.environ.get(name)
    return default if v is None else _parse_bool_env(name, v)


def _bad_env(var: str, v: str, what: str) -> ValueError:
    kind = "JAX" if var.startswith("JAX_") else "jaxlite"
    return ValueError(f'Invalid value "{v}" for {kind} flag {var.lower()} (environment '
                      f'variable {var}): {what}')


def _env_int(name: str, default, minimum=None, allowed=()):
    """An integer variable (``int()`` of the text, as JAX reads one), at least ``minimum``
    unless it is one of ``allowed``; ValueError naming the variable and the value."""
    v = os.environ.get(name)
    if v is None:
        return default
    try:
        n = int(v)
    except ValueError:
        raise _bad_env(name, v, "expected an integer") from None
    if minimum is not None and n < minimum and n not in allowed:
        also = f" (or {', '.join(map(str, allowed))})" if allowed else ""
        raise _bad_env(name, v, f"expected an integer >= {minimum}{also}")
    return n


def _env_float(name: str, default: float, positive: bool = False) -> float:
    v = os.environ.get(name)
    if v is None:
        return default
    try:
        x = float(v)
    except ValueError:
        raise _bad_env(name, v, "expected a number") from None
    if positive and not x > 0:
        raise _bad_env(name, v, "expected a number > 0")
    return x


def _env_enum(name: str, values, default):
    """An enumerated variable: unset gives ``default``; anything else must be one of
    ``values`` (JAX refuses an empty value too)."""
    v = os.environ.get(name)
    if v is None:
        return default
    if v not in values:
        raise _bad_env(name, v, f"expected one of {list(values)}")
    return v


def _env_bytes(name: str):
    """A byte count (``1e8`` accepted), or None when the variable is unset or empty."""
    v = os.environ.get(name)
    if not v:
        return None
    try:
        n = int(float(v))
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be a number of bytes, got {v!r}") from None
    if n < 0:
        raise ValueError(f"{name} must be a number of bytes >= 0, got {v!r}")
    return n


def _env_plugin(name: str):
    """A plugin path (``"PATH"`` or ``"PLATFORM:PATH"``), or None when unset; an empty or
    blank value is refused."""
    v = os.environ.get(name)
    if v is None:
        return None
    if not v.strip():
        raise _bad_env(name, v, 'expected a plugin path, "PATH" or "PLATFORM:PATH"')
    return v


_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_TRANSFER_GUARD_FLAGS = ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
                         "jax_transfer_guard_device_to_host",
                         "jax_transfer_guard_device_to_device")
_BOOL_FLAGS = ("jax_enable_x64", "jax_log_compiles", "jax_explain_cache_misses",
               "jax_disable_jit", "jax_debug_nans", "jax_debug_infs", "jaxlite_tiered",
               "jaxlite_build_process",
               "jaxlite_async", "jax_enable_checks", "jaxlite_fusion",
               "jaxlite_native_ops", "jax_check_static_indices", "jax_check_tracer_leaks",
               "jax_enable_compilation_cache")
# int flags: name -> (smallest value, other values allowed below it, None allowed, what it
# counts)
_INT_FLAGS = {"jax_num_cpu_devices": (1, (-1,), True, "a number of devices (-1: the default)"),
              "jaxlite_tier_up_calls": (1, (), False, "a number of calls"),
              "jaxlite_async_min_cost": (0, (), False, "a cost (about bytes moved + flops)"),
              "jaxlite_buffer_pool_bytes": (0, (), True, "a number of bytes")}
_FLOAT_FLAGS = ("jaxlite_collective_timeout",)
# the persistent cache's thresholds: any number of the type (JAX's; a negative one, or -1
# bytes, sets no threshold), not None (which JAX takes and then fails on when it writes)
_THRESHOLD_FLAGS = {
    "jax_persistent_cache_min_compile_time_secs": (float, "a number of seconds"),
    "jax_persistent_cache_min_entry_size_bytes": (int, "a number of bytes")}
_STRING_FLAGS = ("jax_platforms", "jax_platform_name", "jax_compilation_cache_dir",
                 "jaxlite_backend", "jaxlite_pjrt_plugin")
# The flags that change what jit compiles for a signature: their values are part of each
# jit cache key (``config._jit_key``, kept up to date by ``_set``), so changing one
# recompiles instead of reusing a program built under the old value.
_JIT_KEY_FLAGS = ("jaxlite_fusion", "jaxlite_tiered", "jaxlite_tier_up_calls",
                  "jaxlite_backend", "jax_check_static_indices", "jax_default_prng_impl")
_ENUMS = {name: _TRANSFER_GUARD_LEVELS for name in _TRANSFER_GUARD_FLAGS}
_TRACEBACK_FILTERING = ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")
# JAX's accepted values of jax_default_matmul_precision; on a CPU every one computes in the
# operands' own precision, as JAX's CPU backend does
_MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
_ENUMS["jax_default_matmul_precision"] = _MATMUL_PRECISIONS
# the compiler backends jit can use (backends/base.py registers them; a test checks the two
# lists agree): a misspelt JAXLITE_BACKEND stops the import, naming the variable
_COMPILER_BACKENDS = ("cpu", "interpreter")
# enums whose value may not be None (the others take None: "unset")
_REQUIRED_ENUMS = {"jax_numpy_rank_promotion": ("allow", "warn", "raise"),
                   "jax_traceback_filtering": _TRACEBACK_FILTERING,
                   # JAX's PRNG implementations (random/_impls.py has the first three)
                   "jax_default_prng_impl": ("threefry2x32", "threefry4x32", "rbg",
                                             "unsafe_rbg", "philox2x32", "philox4x32")}
_ENUMS.update(_REQUIRED_ENUMS)
# values JAX accepts that jaxlite does not act on: refused (ValueError saying so) rather than
# silently ignored
_UNSUPPORTED_VALUES = {"jax_numpy_rank_promotion": ("warn", "raise"),
                       "jax_default_prng_impl": ("threefry4x32", "philox2x32", "philox4x32")}


def _unsupported(name, value, source=None) -> ValueError:
    where = f" (environment variable {source})" if source else ""
    if name in _UNSUPPORTED:
        return ValueError(f"jaxlite does not support the config option {name}{where}: it "
                          f"always behaves as JAX's default {_UNSUPPORTED[name]!r}, and "
                          f"cannot be set to {value!r}")
    have = [v for v in _REQUIRED_ENUMS[name] if v not in _UNSUPPORTED_VALUES[name]]
    return ValueError(f"jaxlite does not support {name}={value!r}{where}: only "
                      f"{', '.join(map(repr, have))} {'is' if len(have) == 1 else 'are'} "
                      f"implemented")


def _is_default(name, value) -> bool:
    """Whether ``value`` (a Python value, or an enum member) is JAX's default of the
    unsupported option ``name``."""
    d = _UNSUPPORTED[name]
    if isinstance(d, bool) or d is None:
        return value is d or (isinstance(value, (bool, np.bool_)) and bool(value) is d)
    if isinstance(value, bool):
        return False
    if isinstance(d, str) and not isinstance(value, str):
        name_ = getattr(value, "name", None)     # an enum member, e.g. ExplicitX64Mode.WARN
        return isinstance(name_, str) and name_.lower() == d
    return type(value) in (int, float, str) and value == d


def _env_unsupported():
    """Refuses a ``JAX_*`` variable that sets an unsupported option to another value than
    JAX's default (ValueError naming the variable, at import, as JAX reads its variables).
    Only ``JAX_*`` names: JAX's few options without the prefix (``check_vma``) would make
    variables of other programs (``CHECK_VMA``) stop the import."""
    for name, d in _UNSUPPORTED.items():
        var = name.upper()
        if not var.startswith("JAX_"):
            continue
        v = os.environ.get(var)
        if v is None:
            continue
        if isinstance(d, bool):
            ok = _parse_bool_env(var, v) is d
        elif isinstance(d, (int, float)):
            try:
                ok = type(d)(v) == d
            except ValueError:
                raise _bad_env(var, v, f"expected a number like {d!r}") from None
        else:
            ok = v == d or (isinstance(d, str) and v.lower() == d)
        if not ok:
            raise _unsupported(name, v, var)


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

    Every option of JAX 0.10 exists: those jaxlite implements act; the others
    (``_unsupported_options.py``) read as JAX's default and may only be set to it.  Values
    are checked strictly, from ``update`` and from the environment at import (JAX's
    spellings of a boolean: 1/true/t/yes/y/on and 0/false/f/no/n/off, any case).

    Raises (from ``update``):
      AttributeError: an unknown flag name ("Unrecognized config option: ...").
      ValueError: a value of the wrong kind, naming the option and the value (a bool flag
        given anything but True/False/0/1, an unknown enum value, a non-int or < 1 device
        count, a default device that is neither a Device nor a platform name), or a value
        jaxlite does not support ("jaxlite does not support ...").
      RuntimeError: ``jax_num_cpu_devices`` changed after the CPU devices were created.
    """

    def __init__(self):
        values = {
            "jax_enable_x64": _env_bool("JAX_ENABLE_X64", False),
            # -1: one CPU device, or as many as XLA_FLAGS' host device count asks
            "jax_num_cpu_devices": _env_int("JAX_NUM_CPU_DEVICES", -1, 1, (-1,)),
            "jax_log_compiles": _env_bool("JAX_LOG_COMPILES", False),
            "jax_explain_cache_misses": _env_bool("JAX_EXPLAIN_CACHE_MISSES", False),
            **{n: _env_enum(n.upper(), _TRANSFER_GUARD_LEVELS, None)
               for n in _TRANSFER_GUARD_FLAGS},
            # a platform name here (JAX reads the variable as a string)
            "jax_default_device": os.environ.get("JAX_DEFAULT_DEVICE"),
            # the platforms to initialise, the first the default; one that is not present
            # raises RuntimeError at first use (runtime/device.py)
            "jax_platforms": os.environ.get("JAX_PLATFORMS", None),
            # JAX's deprecated way to name the default platform
            "jax_platform_name": os.environ.get("JAX_PLATFORM_NAME", "").lower(),
            # the persistent compile cache (JAXLITE_CACHE_DIR, else JAX's variable)
            "jax_compilation_cache_dir": os.environ.get(
                "JAXLITE_CACHE_DIR", os.environ.get("JAX_COMPILATION_CACHE_DIR", None)),
            # False: the persistent cache is off, as with an empty directory (_paths.py)
            "jax_enable_compilation_cache": _env_bool("JAX_ENABLE_COMPILATION_CACHE", True),
            # a program's native code is written to the persistent cache only when its
            # build took at least this long and its kernels' files hold at least this
            # many bytes (_cache.program_build); a PJRT executable likewise
            # (backends/pjrt/_cache.py).  0 s, not JAX's 1 s: a small program's
            # build takes less, and its warm start in the next process is what the cache
            # is for (README, Known differences)
            "jax_persistent_cache_min_compile_time_secs": _env_float(
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", 0.0),
            "jax_persistent_cache_min_entry_size_bytes": _env_int(
                "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", 0),
            "jax_disable_jit": _env_bool("JAX_DISABLE_JIT", False),
            # raise FloatingPointError naming the primitive whose output holds a NaN (an
            # infinity): checked after every eager operation; a jitted program whose outputs
            # hold one is run again operation by operation to find it (core/eager.py)
            "jax_debug_nans": _env_bool("JAX_DEBUG_NANS", False),
            "jax_debug_infs": _env_bool("JAX_DEBUG_INFS", False),
            "jax_numpy_rank_promotion": _env_enum("JAX_NUMPY_RANK_PROMOTION",
                                                  _REQUIRED_ENUMS["jax_numpy_rank_promotion"],
                                                  "allow"),
            "jax_default_matmul_precision": _env_enum("JAX_DEFAULT_MATMUL_PRECISION",
                                                      _MATMUL_PRECISIONS, None),
            # x[i], x.at[i].get() with a static int i out of bounds raise IndexError
            # (numpy/_indexing.py) instead of clamping
            "jax_check_static_indices": _env_bool("JAX_CHECK_STATIC_INDICES", False),
            # each finished jit/make_jaxpr/vmap trace is checked for tracers still
            # referenced from outside it (core/trace.py check_leaks)
            "jax_check_tracer_leaks": _env_bool("JAX_CHECK_TRACER_LEAKS", False),
            # how an error leaving a public function drops jaxlite's frames from its
            # traceback (_traceback.py; JAX's values, default 'auto')
            "jax_traceback_filtering": _env_enum("JAX_TRACEBACK_FILTERING",
                                                 _TRACEBACK_FILTERING, "auto"),
            # the PRNG implementation of keys made without impl= and of raw uint32 keys
            # (random/_impls.py): threefry2x32, rbg or unsafe_rbg
            "jax_default_prng_impl": _env_enum("JAX_DEFAULT_PRNG_IMPL",
                                               _REQUIRED_ENUMS["jax_default_prng_impl"],
                                               "threefry2x32"),
            # the compiler backend jit uses: "cpu" (native Numba kernels, tiered) or
            # "interpreter" (NumPy, the reference)
            "jaxlite_backend": _env_enum("JAXLITE_BACKEND", _COMPILER_BACKENDS, "cpu"),
            # cpu backend: run a program on the interpreter while its native code builds
            # in the background (False: compile before the first call returns)
            "jaxlite_tiered": _env_bool("JAXLITE_TIERED", True),
            # tiered cpu backend: a program's native build starts after this many calls
            # (after the first when the persistent cache already holds its native code)
            "jaxlite_tier_up_calls": _env_int("JAXLITE_TIER_UP_CALLS", 2, 1),
            # tiered cpu backend: Numba compiles in a separate, lower-priority process
            # (backends/cpu/_build_process.py) so a build never slows the running program
            "jaxlite_build_process": _env_bool("JAXLITE_BUILD_PROCESS", True),
            # asynchronous dispatch (runtime/dispatch.py): work of at least this estimated
            # cost (about bytes moved + flops) runs on the device's worker thread
            "jaxlite_async": _env_bool("JAXLITE_ASYNC", True),
            "jaxlite_async_min_cost": _env_int("JAXLITE_ASYNC_MIN_COST", 32_000_000, 0),
            # the compiler's fusion pass (JAXLITE_FUSION=0 compiles without it); part of
            # jit's cache key
            "jaxlite_fusion": _env_bool("JAXLITE_FUSION", True),
            # the eager operators' common case in C (core/_eager_ops.c, where the install
            # built it); False: the Python operators do everything
            "jaxlite_native_ops": _env_bool("JAXLITE_NATIVE_OPS", True),
            # check every program the compiler receives and each pass's output with
            # check_jaxpr (ir/check.py); JAXLITE_ENABLE_CHECKS, else JAX's variable
            "jax_enable_checks": _env_bool("JAXLITE_ENABLE_CHECKS",
                                           _env_bool("JAX_ENABLE_CHECKS", False)),
            # bytes of free host buffers the recycling pool keeps (runtime/buffer.py);
            # None: the smaller of 512 MiB and an eighth of RAM
            "jaxlite_buffer_pool_bytes": _env_bytes("JAXLITE_BUFFER_POOL_BYTES"),
            # several processes (runtime/mpi.py): seconds a collective waits for the other
            # processes before it raises CollectiveTimeoutError
            "jaxlite_collective_timeout": _env_float("JAXLITE_COLLECTIVE_TIMEOUT", 300.0,
                                                     positive=True),
            # a PJRT plugin to use (backends/pjrt/plugins.py): "PATH" or "PLATFORM:PATH",
            # found before every other plugin of its platform; None: discovery only
            "jaxlite_pjrt_plugin": _env_plugin("JAXLITE_PJRT_PLUGIN"),
        }
        for name, v in values.items():
            if v in _UNSUPPORTED_VALUES.get(name, ()):
                raise _unsupported(name, v, name.upper())
        _env_unsupported()
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_listeners", [])
        object.__setattr__(self, "_frozen", set())
        self.__dict__.update(values)
        self.__dict__["_jit_key"] = tuple(values[n] for n in _JIT_KEY_FLAGS)

    def __getattr__(self, name):
        # only reached for names that are not flags (flags are instance attributes); an
        # option jaxlite does not implement reads as JAX's default, which is what it does
        if name in _UNSUPPORTED:
            return _UNSUPPORTED[name]
        raise AttributeError(f"Unrecognized config option: {name}")

    def __setattr__(self, name, value):
        raise AttributeError("use config.update(name, value) to change a jaxlite flag")

    def _check(self, name, value):
        """``value`` as flag ``name`` stores it (bools as bool), or raises (see ``update``)."""
        if name not in self._values:
            if name in _UNSUPPORTED:
                if _is_default(name, value):
                    return value
                raise _unsupported(name, value)
            raise AttributeError(f"Unrecognized config option: {name}")
        value = self._validate(name, value)
        # as JAX: the value is checked first, then whether it may still change
        if name in self._frozen and value != self._values[name]:
            raise RuntimeError(
                f"{name} config should be updated before backends are initialized i.e. "
                f"before any jaxlite operation is executed (it is {self._values[name]!r}; "
                f"the devices already exist). Set it right after `import jaxlite`, or "
                f"through the environment.")
        return value

    def _validate(self, name, value):
        got = f"got {value!r} of type {type(value)}."
        if name in _ENUMS:
            if value is None and name not in _REQUIRED_ENUMS:
                return value
            if type(value) is not str or value not in _ENUMS[name]:
                none = "" if name in _REQUIRED_ENUMS else "None or "
                raise ValueError(f"{name}: new enum value must be {none}in "
                                 f"{list(_ENUMS[name])}, {got}")
            if value in _UNSUPPORTED_VALUES.get(name, ()):
                raise _unsupported(name, value)
            return value
        if name in _BOOL_FLAGS:
            # JAX stores bool(value) of anything; a string such as "false" would then read
            # as True, so only a real boolean (or the ints 0 and 1) is taken
            if isinstance(value, (bool, np.bool_)) or type(value) is int and value in (0, 1):
                return bool(value)
            raise ValueError(f"{name}: new bool config value must be True or False, {got}")
        if name in _INT_FLAGS:
            lo, allowed, none_ok, what = _INT_FLAGS[name]
            if value is None and none_ok:
                return value
            if type(value) is not int:
                raise ValueError(f"{name} takes {what}: new int config value must be "
                                 f"{'None or ' if none_ok else ''}of type int, {got}")
            if value < lo and value not in allowed:
                also = f" (or {', '.join(map(str, allowed))})" if allowed else ""
                raise ValueError(f"{name} takes {what}: an int >= {lo}{also}, got "
                                 f"{value}.")
            return value
        if name in _FLOAT_FLAGS:
            if type(value) not in (int, float) or not value > 0:
                raise ValueError(f"{name}: new float config value must be a number > 0, "
                                 f"{got}")
            return float(value)
        if name in _THRESHOLD_FLAGS:
            kind, what = _THRESHOLD_FLAGS[name]
            # (an int for a float, as JAX; not a bool, which JAX would take as 0 or 1)
            if not isinstance(value, (int, kind)) or isinstance(value, bool):
                raise ValueError(f"{name} takes {what}: new {kind.__name__} config value "
                                 f"must be of type {kind.__name__}, {got}")
            return kind(value)
        if name in _STRING_FLAGS:
            if name == "jaxlite_backend" and (type(value) is not str or
                                              value not in _COMPILER_BACKENDS):
                raise ValueError(f"{name}: the compiler backend must be one of "
                                 f"{list(_COMPILER_BACKENDS)}, {got}")
            if value is not None and type(value) is not str:
                raise ValueError(f"{name}: new string config value must be None or of type "
                                 f"str, {got}")
            if name == "jaxlite_pjrt_plugin" and value is not None and not value.strip():
                raise ValueError(f"{name}: a plugin path (\"PATH\" or \"PLATFORM:PATH\") "
                                 f"or None is expected, {got}")
            return value
        if name == "jax_default_device" and value is not None and not isinstance(value, str) \
                and not hasattr(value, "platform"):
            raise ValueError(f"jax_default_device takes a Device (such as "
                             f"jaxlite.devices()[0]) or the name of a platform, e.g. 'cpu'; "
                             f"{value!r} is neither")
        return value

    def update(self, name: str, value) -> None:
        """Sets flag ``name`` to ``value`` (``jax.config.update``).

        Raises AttributeError (unknown flag), ValueError (bad or unsupported value) or
        RuntimeError (``jax_num_cpu_devices`` after the devices exist), as the class
        describes; a refused value leaves the flag as it was.
        """
        value = self._check(name, value)
        if name in self._values:
            self._set(name, value)

    def _set(self, name, value):
        self._values[name] = value
        self.__dict__[name] = value
        if name in _JIT_KEY_FLAGS:
            self.__dict__["_jit_key"] = tuple(self._values[n] for n in _JIT_KEY_FLAGS)
        for fn in self._listeners:
            fn(name, value)

    def read(self, name: str):
        """The value of flag ``name`` (``jax.config.read``); JAX's default for an option
        jaxlite does not implement."""
        if name not in self._values:
            return self.__getattr__(name)
        return self._values[name]

    def _freeze(self, name):
        self._frozen.add(name)

    def _on_change(self, fn):
        self._listeners.append(fn)

    @contextlib.contextmanager
    def _override(self, name, value):
        value = self._check(name, value)
        old = self._values[name]
        self._set(name, value)
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


def default_prng_impl(new_val: str):
    """Context manager setting ``jax_default_prng_impl`` inside its block
    (``jax.default_prng_impl``): keys made without ``impl=`` and raw uint32 keys belong to
    implementation ``new_val`` (``"threefry2x32"``, ``"rbg"`` or ``"unsafe_rbg"``).
    ValueError for another name."""
    return config._override("jax_default_prng_impl", new_val)


def disable_jit(disable: bool = True):
    """Context manager under which ``jit`` runs functions eagerly (``jax.disable_jit``)."""
    return config._override("jax_disable_jit", bool(disable))


def check_tracer_leaks(new_val: bool = True):
    """Context manager turning ``jax_check_tracer_leaks`` on (or off) inside its block
    (``jax.check_tracer_leaks``): when a jit, ``make_jaxpr`` or ``vmap`` trace ends while
    one of its tracers is still referenced (stored in a global or an outer list, say), an
    Exception "Leaked trace ..." names the tracer and what refers to it."""
    return config._override("jax_check_tracer_leaks", bool(new_val))


def checking_leaks():
    """Context manager turning leak checking on inside its block (``jax.checking_leaks``);
    see ``check_tracer_leaks``."""
    return check_tracer_leaks(True)
