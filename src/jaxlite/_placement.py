"""``device_put``, ``device_get``, ``block_until_ready``, ``default_device``: moving data
between the host and devices explicitly (``jax.device_put`` ...).

Layer: just above core/runtime.  Every copy goes through the transfer guard and the
transfer counters; a refused transfer leaves the source untouched and creates nothing.
"""
from __future__ import annotations

import contextlib

import numpy as np


from .config import config
from .core.array import ArrayImpl
from .core.avals import aval_of_value
from .core.eager import from_host
from .core.trace import Tracer
from .runtime import Buffer, Device, check_transfer
from .sharding import SingleDeviceSharding
from .tree_util import tree_map


def _target_device(device):
    if device is None:
        return None
    if isinstance(device, SingleDeviceSharding):
        return device._device
    if isinstance(device, Device):
        return device
    raise TypeError(f"device_put: device must be a jaxlite Device or a SingleDeviceSharding, "
                    f"got {device!r} of type {type(device).__name__}")


def _put_leaf(x, device, donate):
    if isinstance(x, Tracer):
        return x
    if type(x) is ArrayImpl:
        x._check_alive()
        if device is None:
            return x
        src = x._buf.device
        if src is device:
            if x._committed:
                return x
            # same storage, now committed (the buffer is shared, never copied)
            return _committed_alias(x)
        check_transfer("device_to_device", True, x._buf.nbytes, src, device,
                       x.aval.str_short())
        out = ArrayImpl(Buffer(x._buf.data.copy(), device), x.aval, committed=True)
        if donate:
            x.delete()
        return out
    if isinstance(x, (bool, int, float, complex)):
        aval = aval_of_value(x)
        return from_host(np.asarray(x), aval.dtype, aval.weak_type, device,
                         committed=device is not None)
    if isinstance(x, (np.ndarray, np.generic)) or hasattr(x, "__array__"):
        return from_host(np.asarray(x), None, False, device, committed=device is not None)
    raise TypeError(f"device_put: {type(x).__name__} is not a valid JAX type: {x!r}")


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Places ``x`` (an array, NumPy array, scalar, or a pytree of them) on ``device``
    (``jax.device_put``).

    With a device the result is *committed* to it: computations on it run there, and mixing
    it with data committed elsewhere raises ValueError.  Without one, data goes to the
    default device uncommitted.  Copies are counted as transfers and obey the transfer
    guard (explicit transfers).

    Raises:
      TypeError: ``device`` is not a Device, or a leaf is not array-like.
      RuntimeError: the transfer guard forbids the copy, or ``x`` was deleted.
    """
    dev = _target_device(device)
    # check every leaf first, so a failure half-way leaves nothing transferred
    tree_map(_check_leaf, x)
    return tree_map(lambda leaf: _put_leaf(leaf, dev, donate), x)


def _committed_alias(x):
    out = ArrayImpl.__new__(ArrayImpl)
    ArrayImpl.__init__(out, x._buf, x.aval, committed=True)
    return out


def _check_leaf(x):
    if type(x) is ArrayImpl:
        x._check_alive()
    elif not isinstance(x, (Tracer, bool, int, float, complex, np.ndarray, np.generic)) and \
            not hasattr(x, "__array__"):
        raise TypeError(f"device_put: {type(x).__name__} is not a valid JAX type: {x!r}")
    return None


def device_get(x):
    """Copies arrays in ``x`` (any pytree) to host NumPy arrays (``jax.device_get``); other
    leaves pass through.  Counted as explicit device-to-host transfers."""
    def get(leaf):
        if type(leaf) is ArrayImpl:
            return leaf._host_value(explicit=True)
        return leaf
    return tree_map(get, x)


def block_until_ready(x):
    """Waits for every array in the pytree ``x``; returns ``x`` (``jax.block_until_ready``)."""
    def wait(leaf):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        return leaf
    tree_map(wait, x)
    return x


@contextlib.contextmanager
def default_device(device):
    """Context manager: uncommitted data and computations go to ``device`` inside the block
    (``jax.default_device``)."""
    old = config.jax_default_device
    config.update("jax_default_device", _target_device(device))
    try:
        yield
    finally:
        config.update("jax_default_device", old)


