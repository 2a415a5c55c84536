"""Transfers between the host and devices, and between devices: counted and guarded.

Every copy is counted in bytes per (source, destination) pair (``transfer_stats()``).  A
transfer the program did not ask for (*implicit*: a NumPy array passed to an operation or
to a jitted function, ``jnp.asarray(numpy_array)``) and one it asked for (*explicit*:
``device_put``, ``device_get``) first pass the transfer guard, per kind of transfer:

    'allow'              everything (the default)
    'log'                log implicit transfers
    'disallow'           implicit transfers raise JaxRuntimeError; explicit ones pass
    'log_explicit'       log implicit and explicit transfers
    'disallow_explicit'  every transfer raises JaxRuntimeError

as ``jax.transfer_guard`` does (a refusal is ``jaxlite.errors.JaxRuntimeError``, a
RuntimeError, whose text starts with ``INVALID_ARGUMENT``, as JAX's).  The level of a kind
is, in order: the innermost guard block of this thread (``transfer_guard`` sets all three
kinds, ``transfer_guard_host_to_device`` one), the flag of that kind
(``jax_transfer_guard_host_to_device``), ``jax_transfer_guard``.
A refused transfer raises before anything is copied or counted.

What JAX does on CPU, jaxlite does: reading an array's values on the host (``np.asarray``,
``print``, ``float``, ``device_get``) copies nothing from a device whose memory is host
memory, so the device-to-host guard does not fire for it (such reads are still counted).
Moving an *uncommitted* operand to the device of a committed one is an implicit
device-to-device transfer.  Python and NumPy scalars used by operations are constants of
the operation, not transfers (real JAX transfers them in eager operations: ``x + 1``
fails under ``'disallow'`` there, not here).
"""
from __future__ import annotations

import contextlib
import logging
import threading

from .. import monitoring
from ..errors import JaxRuntimeError
from ..config import check_transfer_guard_level, config

logger = logging.getLogger("jaxlite")

_KINDS = ("host_to_device", "device_to_host", "device_to_device")


class _GuardState(threading.local):
    # level set by the innermost guard block of this thread, per kind (None: no block)
    host_to_device = None
    device_to_host = None
    device_to_device = None


_tls = _GuardState()
# Fast path: no guard anywhere (no non-'allow' flag and no guard block open in any
# thread) means every transfer is allowed without looking further.
_open_blocks = 0
_config_guards = False

# (src, dst) -> [count, bytes]; src/dst are Device objects or the string 'host'
_stats: dict = {}


def _on_config(name, value):
    global _config_guards
    if name.startswith("jax_transfer_guard"):
        _config_guards = any(getattr(config, f"jax_transfer_guard{s}") not in (None, "allow")
                             for s in ("", "_host_to_device", "_device_to_host",
                                       "_device_to_device"))


config._on_change(_on_config)
_on_config("jax_transfer_guard", None)


def guard_level(kind: str) -> str:
    """The transfer-guard level in force for ``kind`` in this thread."""
    level = getattr(_tls, kind)
    if level is None:
        level = getattr(config, "jax_transfer_guard_" + kind)
        if level is None:
            level = config.jax_transfer_guard or "allow"
    return level


def guard(kind: str, explicit: bool, nbytes: int, src, dst, what="") -> None:
    """Applies the transfer guard to one transfer without counting it.

    Args:
      kind: ``'host_to_device'``, ``'device_to_host'`` or ``'device_to_device'``.
      explicit: True for ``device_put``/``device_get``; False for implicit moves.
      nbytes: bytes to move.  src/dst: a Device or ``'host'``.
      what: the value moved, for messages (an abstract value, e.g. ``ShapedArray(f32[3])``).
    Raises:
      JaxRuntimeError: the guard disallows this transfer (JAX's class, a RuntimeError).
    """
    if not _open_blocks and not _config_guards:
        return
    level = guard_level(kind)
    if level == "allow":
        return
    name = kind.replace("_", "-")
    how = "explicit" if explicit else "implicit"
    if level == "disallow_explicit" or (level == "disallow" and not explicit):
        raise JaxRuntimeError(
            f"INVALID_ARGUMENT: Disallowed {name} transfer: aval={what}, src={src!r}, "
            f"dst={dst!r} ({how} transfer of {nbytes} bytes; transfer guard level "
            f"{level!r}). Keep the data on the device, or move it explicitly with "
            f"jaxlite.device_put / jaxlite.device_get where the guard allows explicit "
            f"transfers.")
    if level == "log_explicit" or (level == "log" and not explicit):
        logger.warning("%s %s transfer: aval=%s, src=%r, dst=%r (%d bytes)",
                       how, name, what, src, dst, nbytes)


def count(kind: str, explicit: bool, nbytes: int, src, dst, what="") -> None:
    """Counts one transfer of ``nbytes`` from ``src`` to ``dst`` (no guard)."""
    s = _stats.get((src, dst))
    if s is None:
        _stats[(src, dst)] = [1, nbytes]
    else:
        s[0] += 1
        s[1] += nbytes
    if monitoring._listeners:
        monitoring.emit("transfer", kind=kind, explicit=explicit, nbytes=nbytes,
                        src=str(src), dst=str(dst), what=str(what))


def check_transfer(kind: str, explicit: bool, nbytes: int, src, dst, what="") -> None:
    """Applies the transfer guard to one transfer (see ``guard``), then counts it.

    Raises JaxRuntimeError, counting nothing, when the guard disallows the transfer.
    """
    if _open_blocks or _config_guards:
        guard(kind, explicit, nbytes, src, dst, what)
    count(kind, explicit, nbytes, src, dst, what)


def transfer_stats(reset: bool = False) -> dict:
    """Transfers so far, per (source, destination) pair.

    Returns ``{(src, dst): {'count': n, 'bytes': b}}`` where ``src``/``dst`` are
    ``'host'`` or a device's ``str`` (``'cpu:0'``).  ``reset=True`` clears the counters
    after reading them.  (jaxlite only; JAX has no equivalent.)

    Example::

        >>> _ = jaxlite.transfer_stats(reset=True)
        >>> x = jaxlite.device_put(np.zeros(4, np.float32))
        >>> jaxlite.transfer_stats()
        {('host', 'cpu:0'): {'count': 1, 'bytes': 16}}
    """
    out = {(str(s), str(d)): {"count": v[0], "bytes": v[1]} for (s, d), v in _stats.items()}
    if reset:
        _stats.clear()
    return out


@contextlib.contextmanager
def _guard_block(kinds, level, name):
    global _open_blocks
    check_transfer_guard_level(level, name)
    old = [getattr(_tls, k) for k in kinds]
    for k in kinds:
        setattr(_tls, k, level)
    _open_blocks += 1
    try:
        yield
    finally:
        for k, v in zip(kinds, old):
            setattr(_tls, k, v)
        _open_blocks -= 1


def transfer_guard(new_val: str):
    """Context manager setting the guard level of all three transfer kinds in this thread.

    Mirrors ``jax.transfer_guard``; ``new_val`` is one of ``'allow'``, ``'log'``,
    ``'disallow'``, ``'log_explicit'``, ``'disallow_explicit'`` (see the module docstring).

    Raises:
      ValueError: unknown level (raised by the ``with`` statement).

    Example::

        >>> with jaxlite.transfer_guard("disallow"):
        ...     jnp.asarray(np.ones(3))   # implicit host-to-device: JaxRuntimeError
    """
    return _guard_block(_KINDS, new_val, "transfer_guard")


def transfer_guard_host_to_device(new_val: str):
    """``jax.transfer_guard_host_to_device``: guard only host-to-device transfers."""
    return _guard_block(("host_to_device",), new_val, "transfer_guard_host_to_device")


def transfer_guard_device_to_host(new_val: str):
    """``jax.transfer_guard_device_to_host``: guard only device-to-host transfers."""
    return _guard_block(("device_to_host",), new_val, "transfer_guard_device_to_host")


def transfer_guard_device_to_device(new_val: str):
    """``jax.transfer_guard_device_to_device``: guard only device-to-device transfers."""
    return _guard_block(("device_to_device",), new_val, "transfer_guard_device_to_device")
