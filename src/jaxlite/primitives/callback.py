"""Host callbacks inside programs: ``pure_callback`` (a pure function the compiler may drop
when its result is unused) and ``io_callback`` (an effect: always run, in program order).

Both carry ``callback``: a function of NumPy operands returning a list of NumPy values,
checked against ``result_avals`` (count, shape, dtype) when it returns.  Neither is
differentiable (ValueError, as JAX).  Batching: ``pure_callback`` follows its
``vmap_method``; an unordered ``io_callback`` runs once per example; an ordered one cannot
be batched.  They are never folded at compile time (kind "control"): the callback runs when
the program runs.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import JaxRuntimeError
from ..core import batching
from ..core.primitive import Primitive
from ..core.trace import get_aval

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


def _callback_aval(*avals, callback, result_avals, **_):
    return list(result_avals)


def _check_results(out, result_avals, what):
    """The callback's results as NumPy arrays of the declared avals, or JaxRuntimeError."""
    if len(out) != len(result_avals):
        raise JaxRuntimeError(f"{what}: mismatched number of outputs from callback. "
                              f"Expected: {len(result_avals)}, Actual: {len(out)}")
    res = []
    for i, (o, a) in enumerate(zip(out, result_avals)):
        try:
            v = np.asarray(o)
        except Exception as e:   # noqa: BLE001 -- e.g. a traced value escaping
            raise JaxRuntimeError(f"{what}: return value #{i} is not an array: "
                                  f"{type(e).__name__}: {e}") from e
        if v.shape != a.shape:
            raise JaxRuntimeError(f"{what}: incorrect output shape for return value #{i}: "
                                  f"Expected: {a.shape}, Actual: {v.shape}")
        try:
            got = dtypes.canonicalize_dtype(v.dtype)
        except TypeError:
            got = v.dtype
        if got != a.dtype:
            raise JaxRuntimeError(f"{what}: incorrect output dtype for return value #{i}: "
                                  f"Expected: {a.dtype}, Actual: {got}")
        res.append(np.asarray(v, a.dtype))
    return res


def _run(callback, args, result_avals, what):
    try:
        out = callback(*args)
    except JaxRuntimeError:
        raise
    except Exception as e:   # noqa: BLE001 -- reported as JAX reports it, chained
        raise JaxRuntimeError(f"{what} failed: the callback raised {type(e).__name__}: "
                              f"{e}") from e
    return _check_results(out, result_avals, what)


def _pure_impl(*args, callback, result_avals, vmap_method=None):
    return _run(callback, args, result_avals, "jax.pure_callback")


def _io_impl(*args, callback, result_avals, ordered=False):
    return _run(callback, args, result_avals, "jax.experimental.io_callback")


pure_callback_p = Primitive("pure_callback", abstract_eval=_callback_aval, impl=_pure_impl,
                            multiple_results=True, flops=lambda *a, **k: 0, kind="control",
                            host_callback=True)
io_callback_p = Primitive("io_callback", abstract_eval=_callback_aval, impl=_io_impl,
                          multiple_results=True, effectful=True, flops=lambda *a, **k: 0,
                          kind="control", host_callback=True)


# ---- differentiation: refused, as in JAX --------------------------------------------------

def _pure_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _io_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


pure_callback_p.jvp = _pure_jvp
io_callback_p.jvp = _io_jvp


# ---- batching ------------------------------------------------------------------------------

def _example(x, d, i):
    """Example ``i`` of ``x`` along its mapped axis ``d`` (``x`` itself when unmapped)."""
    from .shape import slice_p, squeeze_p
    if d is None:
        return x
    aval = get_aval(x)
    lo = [0] * aval.ndim
    hi = list(aval.shape)
    lo[d], hi[d] = i, i + 1
    return squeeze_p.bind(slice_p.bind(x, start_indices=tuple(lo), limit_indices=tuple(hi),
                                       strides=None), dimensions=(d,))


def _stack(outs_per_example, avals, size):
    """Stacks per-example results along a new leading axis (zeros for a batch of 0)."""
    from .shape import broadcast_in_dim_p, concatenate_p
    stacked = []
    for j, a in enumerate(avals):
        if size == 0:
            stacked.append(broadcast_in_dim_p.bind(np.zeros((), a.dtype),
                                                   shape=(0,) + a.shape,
                                                   broadcast_dimensions=()))
            continue
        parts = [broadcast_in_dim_p.bind(o[j], shape=(1,) + a.shape,
                                         broadcast_dimensions=tuple(range(1, a.ndim + 1)))
                 for o in outs_per_example]
        stacked.append(parts[0] if size == 1 else concatenate_p.bind(*parts, dimension=0))
    return stacked


def _sequential(prim, args, dims, size, params):
    outs = [prim.bind(*[_example(x, d, i) for x, d in zip(args, dims)], **params)
            for i in range(size)]
    return _stack(outs, params["result_avals"], size), [0] * len(params["result_avals"])


def _batched_avals(result_avals, size):
    return tuple(a.update(shape=(size,) + a.shape) for a in result_avals)


def _pure_batch(args, dims, callback, result_avals, vmap_method=None):
    size = batching.size_of(args, dims)
    params = dict(callback=callback, result_avals=result_avals, vmap_method=vmap_method)
    if vmap_method is None:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            "'legacy_vectorized'. Got vmap_method=None.")
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(pure_callback_p, args, dims, size, params)
    new = []
    for x, d in zip(args, dims):
        if d is not None:
            new.append(batching.moveaxis(x, d, 0))
        elif vmap_method == "expand_dims":
            from .shape import reshape_p
            aval = get_aval(x)
            new.append(reshape_p.bind(x, new_sizes=(1,) + tuple(aval.shape),
                                      dimensions=None))
        elif vmap_method == "broadcast_all":
            new.append(batching.broadcast_front(x, size))
        else:                     # legacy_vectorized: unmapped operands as they are
            new.append(x)
    params["result_avals"] = _batched_avals(result_avals, size)
    outs = pure_callback_p.bind(*new, **params)
    return outs, [0] * len(outs)


def _io_batch(args, dims, callback, result_avals, ordered=False):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    size = batching.size_of(args, dims)
    return _sequential(io_callback_p, args, dims, size,
                       dict(callback=callback, result_avals=result_avals, ordered=ordered))


pure_callback_p.batch = _pure_batch
io_callback_p.batch = _io_batch


# sharding: a host callback receives whole arrays and returns whole results
from ..core import sharding_rules as _sr  # noqa: E402

for _p in (pure_callback_p, io_callback_p):
    _p.sharding = _sr.replicate_rule(_p, "a callback receives whole arrays: replicated")
