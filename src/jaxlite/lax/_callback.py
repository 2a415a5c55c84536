"""Host callbacks: ``pure_callback`` (``jax.pure_callback``) and ``io_callback``
(``jax.experimental.io_callback``).

Layer: public ops (lax).  The user's callback is wrapped into a flat function of NumPy operands (it
receives jaxlite Arrays, with the argument pytree rebuilt, as JAX passes jax Arrays) and
bound as the ``pure_callback``/``io_callback`` primitive (primitives/callback.py), so it
runs eagerly, inside ``jit`` (when the program runs), under ``vmap`` and in control flow.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..config import config
from ..core.avals import ShapedArray
from ..primitives.callback import VMAP_METHODS, io_callback_p, pure_callback_p
from ..tree_util import data_flatten as tree_flatten, data_leaves as tree_leaves, tree_unflatten

__all__ = ["pure_callback", "io_callback"]


def _result_avals(result_shape_dtypes):
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for x in leaves:
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise TypeError(f"result_shape_dtypes must be a pytree of objects with shape and "
                            f"dtype attributes (jax.ShapeDtypeStruct or arrays), got {x!r} of "
                            f"type {type(x)}")
        dt = np.dtype(x.dtype)
        if not config.jax_enable_x64 and dt.itemsize == 8 and dt.kind in "iuf" or \
                (not config.jax_enable_x64 and dt == np.complex128):
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        avals.append(ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(dt)))
    return tuple(avals), tree


def _host_device():
    """The CPU device callbacks run on (as in JAX: the operands are put on the first local
    CPU device, and the callback runs with it as the default device), whatever platform
    the program runs on."""
    from ..runtime.device import local_devices
    return local_devices(backend="cpu")[0]


def _as_array(v, device):
    """A NumPy operand as a jaxlite Array on the host ``device`` (a copy: the callback may
    keep it)."""
    from ..core.eager import wrap
    v = np.array(v, copy=True)
    return wrap(v, ShapedArray(v.shape, v.dtype), device, False)


def _flat_callback(callback, in_tree):
    def flat(*vals):
        from ..core.placement import default_device
        device = _host_device()
        args, kwargs = tree_unflatten(in_tree, [_as_array(v, device) for v in vals])
        with default_device(device):
            return tree_leaves(callback(*args, **kwargs))
    flat.__name__ = getattr(callback, "__name__", "callback")
    flat.callback = callback    # what the printed program names
    return flat


def _bind(prim, callback, result_shape_dtypes, args, kwargs, **params):
    avals, out_tree = _result_avals(result_shape_dtypes)
    leaves, in_tree = tree_flatten((args, kwargs))
    outs = prim.bind(*leaves, callback=_flat_callback(callback, in_tree), result_avals=avals,
                     **params)
    return tree_unflatten(out_tree, list(outs))


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """Calls the Python function ``callback(*args, **kwargs)`` on the host from inside a
    (possibly jitted, vmapped) program and returns its result (mirrors
    ``jax.pure_callback``).

    ``callback`` must be pure: the compiler may drop a call whose result is unused, or
    run it again.  It receives Arrays (the argument pytrees rebuilt) and returns values
    that NumPy can convert, matching ``result_shape_dtypes`` (a pytree of
    ``ShapeDtypeStruct`` or arrays; None for no result) in count and shape; a value whose
    dtype differs only in width (float64 for float32 with x64 off) is narrowed.

    Args:
      callback: the host function.
      result_shape_dtypes: pytree of shapes/dtypes of the results.
      *args, **kwargs: pytrees of arrays/scalars passed to ``callback``.
      sharding: accepted for compatibility (one device).
      vmap_method: how ``vmap`` calls it: ``"sequential"``/``"sequential_unrolled"``
        (once per example), ``"expand_dims"`` (one call; unbatched arguments get a leading
        axis of size 1), ``"broadcast_all"`` (one call; every argument broadcast to the
        batch), ``"legacy_vectorized"`` (one call; unbatched arguments as they are); None
        (the default) makes vmap raise NotImplementedError.

    Raises:
      ValueError: an unknown ``vmap_method``; 64-bit result dtypes with x64 off;
        differentiation (``grad``/``jvp``: callbacks have no derivative, wrap them in a
        ``custom_jvp``).
      jaxlite.errors.JaxRuntimeError: the callback raised (chained), or returned the
        wrong number of values, a wrong shape or dtype.
    """
    if vmap_method not in VMAP_METHODS + (None,):
        raise ValueError(f"vmap_method must be on of the allowed methods "
                         f"{list(VMAP_METHODS) + [None]}, but got: {vmap_method}")
    return _bind(pure_callback_p, callback, result_shape_dtypes, args, kwargs,
                 vmap_method=vmap_method)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered: bool = False,
                **kwargs):
    """Calls the Python function ``callback(*args, **kwargs)`` on the host for its side
    effects (and result), from inside a (possibly jitted) program (mirrors
    ``jax.experimental.io_callback``).

    Unlike ``pure_callback`` the call is never dropped, even when its result is unused.
    With ``ordered=True`` the calls of a program run in program order; such a callback
    cannot be batched.  Unordered, ``vmap`` calls it once per example.  Arguments and
    results as ``pure_callback``.

    Raises:
      ValueError: under ``vmap`` with ``ordered=True`` ("Cannot `vmap` ordered IO
        callback."); under differentiation ("IO callbacks do not support JVP."); 64-bit
        result dtypes with x64 off.
      jaxlite.errors.JaxRuntimeError: as ``pure_callback``.
    """
    return _bind(io_callback_p, callback, result_shape_dtypes, args, kwargs,
                 ordered=bool(ordered))
