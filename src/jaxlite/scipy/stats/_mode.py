"""``jax.scipy.stats.mode``: the most frequent value."""
from __future__ import annotations

from typing import NamedTuple

from ... import numpy as jnp
from ... import vmap


class ModeResult(NamedTuple):
    """``mode`` (the most frequent value) and ``count`` (its number of occurrences)."""
    mode: object
    count: object


def _mode_1d(a):
    s = jnp.sort(a)            # NaNs last: a tie goes to the smallest value, NaN last
    same = s[:, None] == s[None, :]
    if jnp.issubdtype(s.dtype, jnp.inexact):
        nan = jnp.isnan(s)
        same = same | (nan[:, None] & nan[None, :])     # NaNs count as one value
    cnt = jnp.sum(same, axis=1, dtype=jnp.int32)
    i = jnp.argmax(cnt)
    return s[i], cnt[i]


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most frequent value along ``axis`` (all elements for None) and its count, as a
    ``ModeResult(mode, count)`` (``jax.scipy.stats.mode``): ties go to the smallest value;
    NaNs count as equal to each other.  ``count`` is int32.  Raises NotImplementedError
    for ``nan_policy`` other than ``'propagate'``, as JAX.  Memory grows as the square of
    the axis length (every pair of elements is compared)."""
    if nan_policy != "propagate":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not "
                                  f"implemented")
    a = jnp.asarray(a)
    if a.ndim == 0:
        return ModeResult(a, jnp.asarray(1, jnp.int32))
    if axis is None:
        m, c = _mode_1d(a.ravel())
        return ModeResult(m, c)
    axis = axis % a.ndim
    moved = jnp.moveaxis(a, axis, -1)
    flat = moved.reshape((-1, moved.shape[-1]))
    m, c = vmap(_mode_1d)(flat)
    shape = moved.shape[:-1]
    m, c = m.reshape(shape), c.reshape(shape)
    if keepdims:
        m, c = jnp.expand_dims(m, axis), jnp.expand_dims(c, axis)
    return ModeResult(m, c)
