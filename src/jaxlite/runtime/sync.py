"""Waiting for dispatched work: ``effects_barrier`` and ``copy_to_host_async`` (mirroring
``jax.effects_barrier`` and ``jax.copy_to_host_async``; re-exported at the top level).

Layer: runtime (the asynchronous dispatch's queues, runtime/dispatch.py).
"""
from __future__ import annotations

from . import dispatch as _dispatch
from ..tree_util import data_leaves as tree_leaves

__all__ = ["effects_barrier", "copy_to_host_async"]


def effects_barrier() -> None:
    """Waits until every computation dispatched so far, on every device, has finished, and
    with it its side effects (``io_callback``, ``jax.debug.print``).  Errors of that work
    are not raised here: they surface where its results are read."""
    _dispatch.wait_all()


def copy_to_host_async(x):
    """Starts copying each leaf of the pytree ``x`` that has a ``copy_to_host_async``
    method (Arrays) to the host, and returns ``x`` (mirrors ``jax.copy_to_host_async``).
    Other leaves are left alone."""
    for leaf in tree_leaves(x):
        fn = getattr(leaf, "copy_to_host_async", None)
        if callable(fn):
            fn()
    return x
