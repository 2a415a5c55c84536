"""``jaxlite.ops``: segment reductions (``jax.ops.segment_sum`` and friends).

Layer: public API.  Each reduction is one scatter (``x.at[ids].add/mul/max/min``) into an
array filled with the reduction's identity, so grad, vmap and jit come from the scatter
primitive's own rules.
"""
from __future__ import annotations

import operator

import numpy as np

from . import dtypes, errors
from .core.trace import Tracer
from .numpy import _creation, _reductions
from .numpy._util import check_arraylike, ensure_array

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(op, dtype):
    """The value an empty segment holds: the identity of the reduction in ``dtype``."""
    if op == "add":
        return 0
    if op == "mul":
        return 1
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return op == "min"
    if dtypes.is_int(dt):
        info = dtypes.iinfo(dt)
        return int(info.max if op == "min" else info.min)
    if dtypes.is_float(dt):
        return dtypes.float_bounds(dt)[1 if op == "min" else 0]
    return float("inf") if op == "min" else float("-inf")


def _num_segments(num_segments, segment_ids):
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            raise errors.ConcretizationTypeError(
                segment_ids, "segment_sum() `num_segments` argument: without num_segments "
                "the number of segments is max(segment_ids) + 1, which needs concrete "
                "segment ids. Pass num_segments (a static int) under jit.")
        num_segments = int(np.max(np.asarray(segment_ids))) + 1
    if isinstance(num_segments, Tracer):
        raise errors.ConcretizationTypeError(
            num_segments, "It arose in segment_sum() `num_segments` argument (it fixes the "
            "output shape, so it must be static under jit).")
    num_segments = operator.index(num_segments)
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    return num_segments


def _segment_update(name, data, segment_ids, op, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode):
    check_arraylike(name, data, segment_ids)
    data = ensure_array(data)
    segment_ids = ensure_array(segment_ids)
    dtype = data.dtype
    n = _num_segments(num_segments, segment_ids)
    mode = "fill" if mode is None else mode
    ident = _identity(op, dtype)
    if bucket_size is None:
        out = _creation.full((n,) + tuple(data.shape[1:]), ident, dtype=dtype)
        index = segment_ids
    else:
        # one row per bucket of consecutive entries, reduced afterwards: shorter chains of
        # additions (or products) per output element, as JAX does for accuracy
        size = int(np.prod(segment_ids.shape))
        n_buckets = -(-size // bucket_size)
        out = _creation.full((n_buckets, n) + tuple(data.shape[1:]), ident, dtype=dtype)
        index = (_creation.arange(segment_ids.shape[0]) // bucket_size, segment_ids[None, :])
    ref = out.at[index]
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
              mode=mode, wrap_negative_indices=False)
    if op == "add":
        out = ref.add(data, **kw)
    elif op == "mul" and unique_indices:
        # each output element takes at most one entry, so the product with the identity 1
        # is that entry: a set, which (unlike a scatter-multiply) is differentiable in the
        # updates, as JAX differentiates segment_prod only with unique_indices=True
        out = ref.set(data, **kw)
    elif op == "mul":
        out = ref.multiply(data, **kw)
    elif op == "max":
        out = ref.max(data, **kw)
    else:
        out = ref.min(data, **kw)
    if bucket_size is None:
        return out
    reducer = {"add": _reductions.sum, "mul": _reductions.prod, "max": _reductions.max,
               "min": _reductions.min}[op]
    return reducer(out, axis=0).astype(dtype)


_DOC = """{what} of ``data`` within segments (``jax.ops.{name}``).

    ``out[i] = {formula}`` over the rows ``j`` with ``segment_ids[j] == i``; a segment
    without rows holds {empty}.

    Args:
      data: array of shape ``(n, ...)``.
      segment_ids: integer array of shape ``(n,)``; ids outside ``[0, num_segments)``
        (negative ones included) are dropped (``mode="clip"`` clamps them instead).
      num_segments: static int, the output's leading size; default ``max(segment_ids) + 1``
        (which needs concrete ids: ConcretizationTypeError under jit).
      indices_are_sorted, unique_indices: promises about ``segment_ids`` (hints; with
        ``unique_indices=True`` {unique_note}).
      bucket_size: when given, rows are first reduced in buckets of this many consecutive
        rows, then the buckets are reduced (better accuracy for long segments).
      mode: ``None``/``"fill"``/``"drop"``, ``"clip"`` or ``"promise_in_bounds"``.

    Returns:
      array of shape ``(num_segments,) + data.shape[1:]`` and ``data``'s dtype.

    Raises:
      TypeError: non-array arguments (lists).  ValueError: negative ``num_segments``.

    Example:
      >>> {name}(jnp.array([1., 2., 3.]), jnp.array([0, 0, 1]), num_segments=3)
    """


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    return _segment_update("segment_sum", data, segment_ids, "add", num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    return _segment_update("segment_prod", data, segment_ids, "mul", num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    return _segment_update("segment_max", data, segment_ids, "max", num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    return _segment_update("segment_min", data, segment_ids, "min", num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


_NOTE = "the entries need not be unique; it only skips work"
segment_sum.__doc__ = _DOC.format(what="Sum", name="segment_sum", formula="sum_j data[j]",
                                  empty="0", unique_note=_NOTE)
segment_prod.__doc__ = _DOC.format(
    what="Product", name="segment_prod", formula="prod_j data[j]", empty="1",
    unique_note="the product is differentiable in ``data``, as in JAX (without it, "
    "NotImplementedError under grad)")
segment_max.__doc__ = _DOC.format(
    what="Maximum", name="segment_max", formula="max_j data[j]",
    empty="``-inf`` (the dtype's minimum for integers, False for bools)", unique_note=_NOTE)
segment_min.__doc__ = _DOC.format(
    what="Minimum", name="segment_min", formula="min_j data[j]",
    empty="``+inf`` (the dtype's maximum for integers, True for bools)", unique_note=_NOTE)
