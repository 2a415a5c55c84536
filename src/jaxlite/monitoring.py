"""A tiny event bus: compiles, transfers, allocations, eager ops (``jax.monitoring``-like).

Layer: bottom.  Producers call ``emit(kind, **data)`` only after checking ``active()``
(one list truthiness test), so nothing is paid when no listener is registered.  The demo,
``jaxlite doctor`` and tests subscribe with ``register_listener`` or ``record()``.
"""
from __future__ import annotations

import contextlib

_listeners: list = []


def active() -> bool:
    return bool(_listeners)


def emit(kind: str, /, **data) -> None:
    # positional-only: a transfer event carries its own ``kind`` field in ``data``
    for fn in list(_listeners):
        fn(kind, data)


def register_listener(fn) -> None:
    """Calls ``fn(kind, data)`` for every event from now on."""
    _listeners.append(fn)


def unregister_listener(fn) -> None:
    _listeners.remove(fn)


@contextlib.contextmanager
def record(kinds=None):
    """Collects events inside the block into the yielded list of ``(kind, data)``."""
    events: list = []

    def fn(kind, data):
        if kinds is None or kind in kinds:
            events.append((kind, data))

    register_listener(fn)
    try:
        yield events
    finally:
        unregister_listener(fn)
