"""Assembling and converting arrays (``jax.numpy``): ``block``, ``astype``, ``iterable``,
``cross``, ``mask_indices``, ``packbits``, ``unpackbits``.

Layer: numpy (compositions of jaxlite.numpy and lax operations).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes, lax
from ._util import check_arraylike, ensure_array, promote_dtypes, public_names


def _jnp():
    from .. import numpy as jnp
    return jnp


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (``jax.numpy.astype``, the Array API form of
    ``x.astype``); the result is strongly typed. ``device`` places the result there.
    ``copy=True`` returns a new array even when the dtype is unchanged (deleting ``x``
    then leaves it intact, as in JAX).  A 64-bit ``dtype`` while 64-bit types are off
    warns (UserWarning) and converts to its 32-bit kin, as JAX does.  Raises TypeError for
    a list."""
    from ._creation import _user_dtype, array
    check_arraylike("astype", x)
    x = ensure_array(x)
    # a 64-bit dtype while they are off: UserWarning, then the 32-bit one (as JAX)
    out = lax.convert_element_type(x, _user_dtype(dtype, "astype"))
    if copy and out is x:
        out = array(x, copy=True)
    if device is not None:
        from ..core.placement import device_put
        out = device_put(out, device)
    return out


def iterable(y) -> bool:
    """Whether ``iter(y)`` works (``jax.numpy.iterable``, NumPy's ``iterable``)."""
    return np.iterable(y)


def _block_depth(x, path=()):
    if isinstance(x, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {x}")
    if isinstance(x, list):
        if not x:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        depths = {_block_depth(e, path + (i,)) for i, e in enumerate(x)}
        if len(depths) != 1:
            raise ValueError("Mismatched list depths in jax.numpy.block")
        return depths.pop() + 1
    return 0


def block(arrays):
    """An array assembled from nested lists of blocks (``jax.numpy.block``): the innermost
    lists join along the last axis, the next ones along the one before, and so on; blocks
    gain leading axes up to the deepest rank. Raises ValueError for tuples, empty lists and
    mismatched nesting depths."""
    jnp = _jnp()
    depth = _block_depth(arrays)
    if depth == 0:
        return jnp.asarray(arrays) if not isinstance(arrays, (int, float, complex, bool)) \
            else ensure_array(arrays)

    def leaves(x):
        return [y for e in x for y in leaves(e)] if isinstance(x, list) else [x]
    blocks = [ensure_array(b) for b in leaves(arrays)]
    ndim = max(depth, max(b.ndim for b in blocks))
    it = iter(blocks)

    def assemble(x, level):
        if not isinstance(x, list):
            b = next(it)
            return lax.reshape(b, (1,) * (ndim - b.ndim) + tuple(b.shape))
        parts = [assemble(e, level + 1) for e in x]
        return jnp.concatenate(parts, axis=-(depth - level))
    return assemble(arrays, 0)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """The cross product of vectors of 2 or 3 components along ``axisa``/``axisb``
    (``jax.numpy.cross``); a missing third component is 0, and two 2-vectors give the
    scalar z component. ``axis`` sets all three axes. Raises ValueError for other lengths."""
    check_arraylike("cross", a, b)
    jnp = _jnp()
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = promote_dtypes(a, b)
    x, y = jnp.moveaxis(ensure_array(x), axisa, -1), jnp.moveaxis(ensure_array(y), axisb, -1)
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if x.shape[-1] == 2 and y.shape[-1] == 2:
        return x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]
    a0, a1 = x[..., 0], x[..., 1]
    a2 = x[..., 2] if x.shape[-1] == 3 else jnp.zeros_like(a0)
    b0, b1 = y[..., 0], y[..., 1]
    b2 = y[..., 2] if y.shape[-1] == 3 else jnp.zeros_like(b0)
    c = jnp.stack(jnp.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2,
                                       a0 * b1 - a1 * b0), axis=-1)
    return jnp.moveaxis(c, -1, axisc)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero
    (``jax.numpy.mask_indices``), as a pair of index arrays; ``size`` as in ``nonzero``."""
    jnp = _jnp()
    n = operator.index(n)
    return jnp.nonzero(mask_func(jnp.ones((n, n), dtype=np.int32), k), size=size)


def _bit_order(bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    return bitorder


def packbits(a, axis=None, bitorder: str = "big"):
    """Booleans (nonzero elements) of ``a`` packed eight to a uint8 along ``axis`` (the
    flattened array when None), zero-padded (``jax.numpy.packbits``). Raises TypeError for
    non-integer, non-bool input and ValueError for an unknown ``bitorder``."""
    check_arraylike("packbits", a)
    jnp = _jnp()
    x = ensure_array(a)
    if x.dtype.kind not in "iub":
        raise TypeError("Expected an input array of integer or boolean data type")
    _bit_order(bitorder)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    x = jnp.moveaxis((x != 0).astype(np.uint8), axis, -1)
    n = x.shape[-1]
    pad = (-n) % 8
    if pad:
        x = jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (pad,), np.uint8)], axis=-1)
    x = x.reshape(x.shape[:-1] + (-1, 8))
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    packed = jnp.sum(x << shifts.astype(np.uint8), axis=-1, dtype=np.uint8)
    return jnp.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
    """The bits of the uint8 array ``a`` as a uint8 array of 0s and 1s, eight per element
    along ``axis`` (flattened when None) (``jax.numpy.unpackbits``); ``count`` keeps that
    many (negative: drops from the end; larger: pads zeros). Raises TypeError for a dtype
    other than uint8."""
    check_arraylike("unpackbits", a)
    jnp = _jnp()
    x = ensure_array(a)
    if x.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    _bit_order(bitorder)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    x = jnp.moveaxis(x, axis, -1)
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    bits = (x[..., None] >> shifts.astype(np.uint8)) & np.uint8(1)
    bits = bits.reshape(x.shape[:-1] + (x.shape[-1] * 8,))
    if count is not None:
        count = operator.index(count)
        total = bits.shape[-1]
        keep = total + count if count < 0 else count
        keep = max(keep, 0)
        if keep <= total:
            bits = bits[..., :keep]
        else:
            bits = jnp.concatenate([bits, jnp.zeros(bits.shape[:-1] + (keep - total,),
                                                    np.uint8)], axis=-1)
    return jnp.moveaxis(bits, -1, axis)


__all__ = public_names(globals())
