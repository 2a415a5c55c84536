"""Transfers between the host and devices, and between devices: counted and guarded.

Every copy is counted in bytes per (source, destination) pair (``transfer_stats()``), and
passes the transfer guard first: ``'allow'``, ``'log'`` (log implicit transfers),
``'disallow'`` (forbid implicit ones), ``'log_explicit'`` and ``'disallow_explicit'`` (the
same for explicit ``device_put``/``device_get`` too), as ``jax.transfer_guard`` does.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections import defaultdict

from .. import monitoring
from ..config import config

logger = logging.getLogger("jaxlite")

_KINDS = ("host_to_device", "device_to_host", "device_to_device")
_local = threading.local()
_stats: dict = defaultdict(lambda: {"count": 0, "bytes": 0})


def _level(kind: str) -> str:
    override = getattr(_local, kind, None)
    if override is not None:
        return override
    specific = getattr(config, f"jax_transfer_guard_{kind}")
    return specific if specific is not None else config.jax_transfer_guard


def check_transfer(kind: str, explicit: bool, nbytes: int, src, dst, what: str = "") -> None:
    """Applies the transfer guard to one transfer, then counts it.

    Args:
      kind: ``'host_to_device'``, ``'device_to_host'`` or ``'device_to_device'``.
      explicit: True for ``device_put``/``device_get``; False for implicit moves.
      nbytes: bytes moved.  src/dst: a Device or ``'host'``.
      what: the value moved, for messages (e.g. ``'int32[3]'``).
    Raises:
      RuntimeError: the guard disallows this transfer; nothing was moved.
    """
    level = _level(kind)
    if level != "allow":
        name = kind.replace("_", "-")
        if level == "disallow_explicit" or (level == "disallow" and not explicit):
            raise RuntimeError(
                f"Disallowed {name} transfer: {what} from {src} to {dst} "
                f"({'explicit' if explicit else 'implicit'}; transfer guard level {level!r}). "
                f"Keep the data on one device, or move it explicitly with jaxlite.device_put / "
                f"jaxlite.device_get where the guard allows explicit transfers.")
        if level == "log_explicit" or (level == "log" and not explicit):
            logger.warning("%s %s transfer: %s from %s to %s (%d bytes)",
                           "explicit" if explicit else "implicit", name, what, src, dst, nbytes)
    s = _stats[(str(src), str(dst))]
    s["count"] += 1
    s["bytes"] += nbytes
    if monitoring.active():
        monitoring.emit("transfer", kind=kind, explicit=explicit, nbytes=nbytes,
                        src=str(src), dst=str(dst), what=what)


def transfer_stats(reset: bool = False) -> dict:
    """Transfers so far: ``{(src, dst): {'count': n, 'bytes': b}}``; ``reset`` clears them."""
    out = {k: dict(v) for k, v in _stats.items()}
    if reset:
        _stats.clear()
    return out


@contextlib.contextmanager
def _guard(kinds, level):
    if level not in ("allow", "log", "disallow", "log_explicit", "disallow_explicit"):
        raise ValueError(f"unknown transfer guard level {level!r}; use one of 'allow', 'log', "
                         f"'disallow', 'log_explicit', 'disallow_explicit'")
    old = {k: getattr(_local, k, None) for k in kinds}
    for k in kinds:
        setattr(_local, k, level)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(_local, k, v)


def transfer_guard(level: str):
    """Context manager setting the guard level of all three transfer kinds in this thread.

    Mirrors ``jax.transfer_guard``.  Raises ValueError for an unknown level.
    """
    return _guard(_KINDS, level)


def transfer_guard_host_to_device(level: str):
    """``jax.transfer_guard_host_to_device``: guard only host-to-device transfers."""
    return _guard(("host_to_device",), level)


def transfer_guard_device_to_host(level: str):
    """``jax.transfer_guard_device_to_host``: guard only device-to-host transfers."""
    return _guard(("device_to_host",), level)


def transfer_guard_device_to_device(level: str):
    """``jax.transfer_guard_device_to_device``: guard only device-to-device transfers."""
    return _guard(("device_to_device",), level)
