"""Global configuration flags, mirroring ``jax.config``.

Layer: bottom (imported by every other layer, imports nothing of jaxlite).

Flags are read from the environment once at import (``JAX_ENABLE_X64``,
``JAX_NUM_CPU_DEVICES``, ``JAX_LOG_COMPILES``, ...) and changed with
``config.update(name, value)``.  Listeners registered with ``_on_change`` are told of
each change (the trace-time caches use this to drop stale entries).
"""
from __future__ import annotations

import contextlib
import os
import re

_TRUE = {"1", "true", "yes", "on", "t", "y"}


def _env_bool(name: str, default: bool) -> bool:
    v = os.environ.get(name)
    return default if v is None else v.strip().lower() in _TRUE


def _xla_flags_cpu_count() -> int | None:
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(m.group(1)) if m else None


_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


class Config:
    """Holds jaxlite's flags; ``jaxlite.config`` is the one instance.

    Mirrors ``jax.config``: read a flag as an attribute (``config.jax_enable_x64``), change it
    with ``config.update("jax_enable_x64", True)``.

    Raises:
      AttributeError: ``update`` of an unknown flag name.
      ValueError: a value of the wrong kind (e.g. an unknown transfer-guard level).
      RuntimeError: ``jax_num_cpu_devices`` changed after the CPU devices were created.
    """

    def __init__(self):
        ncpu = os.environ.get("JAX_NUM_CPU_DEVICES")
        object.__setattr__(self, "_values", {
            "jax_enable_x64": _env_bool("JAX_ENABLE_X64", False),
            "jax_num_cpu_devices": int(ncpu) if ncpu else (_xla_flags_cpu_count() or 1),
            "jax_log_compiles": _env_bool("JAX_LOG_COMPILES", False),
            "jax_explain_cache_misses": _env_bool("JAX_EXPLAIN_CACHE_MISSES", False),
            "jax_transfer_guard": os.environ.get("JAX_TRANSFER_GUARD", "allow"),
            "jax_transfer_guard_host_to_device": None,
            "jax_transfer_guard_device_to_host": None,
            "jax_transfer_guard_device_to_device": None,
            "jax_default_device": None,
            "jax_platforms": os.environ.get("JAX_PLATFORMS", None),
            "jax_compilation_cache_dir": os.environ.get("JAXLITE_CACHE_DIR", None),
            "jax_disable_jit": _env_bool("JAX_DISABLE_JIT", False),
            "jax_debug_nans": _env_bool("JAX_DEBUG_NANS", False),
            "jax_numpy_rank_promotion": "allow",
        })
        object.__setattr__(self, "_listeners", [])
        object.__setattr__(self, "_frozen", set())

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unrecognized config option: {name}") from None

    def __setattr__(self, name, value):
        raise AttributeError("use config.update(name, value) to change a jaxlite flag")

    def _check(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        if name in self._frozen:
            raise RuntimeError(
                f"{name} config should be updated before backends are initialized "
                f"(the devices already exist); set it at the top of the program or through "
                f"the environment.")
        if name.startswith("jax_transfer_guard") and value is not None \
                and value not in _TRANSFER_GUARD_LEVELS:
            raise ValueError(f"{name} must be one of {_TRANSFER_GUARD_LEVELS}, got {value!r}")
        if name == "jax_num_cpu_devices" and (not isinstance(value, int) or value < 1):
            raise ValueError(f"jax_num_cpu_devices must be a positive int, got {value!r}")

    def update(self, name: str, value) -> None:
        """Sets flag ``name`` to ``value`` (``jax.config.update``)."""
        self._check(name, value)
        self._values[name] = value
        for fn in self._listeners:
            fn(name, value)

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
            self._values[name] = old
            for fn in self._listeners:
                fn(name, old)

    def values(self):
        return dict(self._values)


config = Config()


def enable_x64(new_val: bool = True):
    """Context manager that turns 64-bit types on (or off) inside its block."""
    return config._override("jax_enable_x64", bool(new_val))


def log_compiles(enable: bool = True):
    """Context manager that logs every compile inside its block (``jax.log_compiles``)."""
    return config._override("jax_log_compiles", bool(enable))


def disable_jit(disable: bool = True):
    """Context manager under which ``jit`` runs functions eagerly (``jax.disable_jit``)."""
    return config._override("jax_disable_jit", bool(disable))
