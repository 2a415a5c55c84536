"""``jaxlite.experimental``: helpers beyond JAX's API that the chapter's pitfalls call for.

Layer: top (a composition of ``jaxlite.numpy``/``lax``; works eagerly and under ``jit``).

``io_callback`` (JAX's ``jax.experimental.io_callback``) calls a host function for its
effects from inside a program.  ``pad_to_bucket`` bounds the compiles of a jitted function
whose input length changes from call to call (pitfall 3 of the chapter's section 3.5,
R5.3): pad each input to one of a few fixed sizes and pass a mask saying which positions
are real.  ``jaxlite doctor`` suggests
buckets for the functions it sees recompiling.
"""
from __future__ import annotations

import operator

import numpy as np

from ..lax._callback import io_callback

__all__ = ["pad_to_bucket", "io_callback"]


def pad_to_bucket(x, axis, buckets, *, fill_value=0):
    """Pads ``axis`` of ``x`` to the smallest bucket that holds it; returns ``(padded, mask)``.

    A jitted function compiles once per input shape; when a dimension (a batch size, a
    sequence length) changes from call to call, every new size compiles again.  Padding
    that dimension to one of a few fixed sizes bounds the compiles to ``len(buckets)``.
    The mask tells the computation which positions are real so that the padding does not
    change the result.  (jaxlite only: JAX has no such helper.)

    Args:
      x: an array (or array-like) of any shape and dtype; a traced value inside ``jit``
        (its shape is static there).
      axis: the axis to pad (negative counts from the end).
      buckets: the allowed sizes, positive ints in any order (e.g. ``(32, 64, 128)``, or
        powers of two).
      fill_value: the value of the padding positions (default 0), cast to ``x.dtype``.

    Returns:
      ``(padded, mask)``: ``padded`` has ``x``'s dtype (and weak type) and shape, except
      ``padded.shape[axis] == bucket``, the smallest bucket ``>= x.shape[axis]``; its first
      ``x.shape[axis]`` positions along ``axis`` hold ``x``, the rest ``fill_value``.
      ``mask`` is a bool array of shape ``(bucket,)``: True for the real positions.

    Raises:
      ValueError: no bucket is ``>= x.shape[axis]`` (the message names the size and the
        buckets); ``buckets`` is empty or holds a value that is not a positive integer;
        ``axis`` is out of bounds for ``x``.
      TypeError: ``x`` is not an array-like (e.g. a list or a string).

    Example: the chapter's variable batch size (section 3.3: "every batch had a different
    size, so every iteration recompiled; we fixed the batch size and padded").  Two
    buckets mean at most two compiles, whatever the batch sizes::

        import jaxlite as jax
        import jaxlite.numpy as jnp
        from jaxlite.experimental import pad_to_bucket

        @jax.jit
        def mean_loss(batch, mask):          # batch: f32[B, 4], mask: bool[B]
            per_example = jnp.sum(batch ** 2, axis=1)
            return jnp.sum(jnp.where(mask, per_example, 0.0)) / jnp.sum(mask)

        for n in (37, 50, 64, 29):           # batch sizes change every step
            batch = jnp.ones((n, 4))
            padded, mask = pad_to_bucket(batch, 0, (32, 64))
            mean_loss(padded, mask)          # compiles for (32, 4) and (64, 4) only

        >>> padded, mask = pad_to_bucket(jnp.array([1., 2., 3.]), 0, (4, 8))
        >>> padded
        Array([1., 2., 3., 0.], dtype=float32)
        >>> mask
        Array([ True,  True,  True, False], dtype=bool)
    """
    from .. import lax
    from .. import numpy as jnp
    from ..numpy._util import canonicalize_axis, check_arraylike

    check_arraylike("pad_to_bucket", x)
    x = jnp.asarray(x)
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"pad_to_bucket: axis must be an integer, got {axis!r}") from None
    axis = canonicalize_axis(axis, x.ndim)
    sizes = _check_buckets(buckets)
    n = x.shape[axis]
    fits = [b for b in sizes if b >= n]
    if not fits:
        raise ValueError(
            f"pad_to_bucket: axis {axis} of the array (shape {tuple(x.shape)}) has size {n}, "
            f"larger than every bucket {tuple(sizes)}; add a bucket >= {n}.")
    bucket = min(fits)
    pad_width = [(0, 0)] * x.ndim
    pad_width[axis] = (0, bucket - n)
    padded = jnp.pad(x, pad_width, constant_values=fill_value) if bucket != n else x
    mask = lax.broadcasted_iota(np.int32, (bucket,), 0) < n
    return padded, mask


def _check_buckets(buckets) -> list:
    if isinstance(buckets, (int, np.integer)) and not isinstance(buckets, bool):
        buckets = (buckets,)
    try:
        items = list(buckets)
    except TypeError:
        raise ValueError(f"pad_to_bucket: buckets must be a sequence of positive integers, "
                         f"got {buckets!r}") from None
    if not items:
        raise ValueError("pad_to_bucket: buckets is empty; give at least one size")
    out = []
    for b in items:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b <= 0:
            raise ValueError(f"pad_to_bucket: every bucket must be a positive integer, got "
                             f"{b!r} in {tuple(items)!r}")
        out.append(int(b))
    return sorted(set(out))
