"""The Threefry-2x32 counter-based generator and the key operations built on it.

Layer: random (compositions of ``jaxlite.lax`` ops on uint32 arrays, so everything here
runs eagerly and under ``jit``).  Keys are raw ``uint32[..., 2]`` data here; the typed-key
wrapper lives in ``_keys.py``.

The block function is Threefry-2x32 with 20 rounds (Salmon, Moraes, Dror and Shaw,
"Parallel random numbers: as easy as 1, 2, 3", SC 2011): two 32-bit words of counter,
two of key, a third key word ``k0 ^ k1 ^ 0x1BD11BDA``, the rotation schedule
13 15 26 6 / 17 29 16 24, and a key injection after every four rounds.

Counters follow JAX's "partitionable" layout (``jax_threefry_partitionable``, on by default
since JAX 0.5): element ``i`` (row-major) of a result of shape ``s`` is produced from the
64-bit counter ``i`` split into its (high, low) 32-bit halves, so any element can be
computed on its own.
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax

_U32 = np.dtype(np.uint32)
_PARITY = 0x1BD11BDA
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotate_left(x, r: int):
    # typed shift amounts: lax takes a Python int as a weak int32, which uint32 refuses
    return lax.bitwise_or(lax.shift_left(x, np.uint32(r)),
                          lax.shift_right_logical(x, np.uint32(32 - r)))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds) of the counter words ``(x0, x1)`` under key ``(k0, k1)``.

    Args:
      k0, k1: uint32 scalars (rank 0) or arrays of the counters' shape.
      x0, x1: uint32 arrays of one shape.

    Returns:
      The two uint32 output words, each of the counters' shape.

    Raises:
      TypeError (from the lax ops) when an operand is not uint32 or the shapes differ.
    """
    ks = (k0, k1, lax.bitwise_xor(lax.bitwise_xor(k0, k1), np.uint32(_PARITY)))
    x0 = lax.add(x0, ks[0])
    x1 = lax.add(x1, ks[1])
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(_rotate_left(x1, r), x0)
        x0 = lax.add(x0, ks[(block + 1) % 3])
        x1 = lax.add(lax.add(x1, ks[(block + 2) % 3]), np.uint32(block + 1))
    return x0, x1


def _counters(shape: tuple):
    """The (high, low) words of the row-major element index, each uint32 of ``shape``."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        inner = _inner_factor(size)
        if inner is None:
            raise NotImplementedError(f"random arrays of {size} >= 2**32 elements are only "
                                      f"supported when the size splits into two factors "
                                      f"below 2**32 (shape {shape})")
        hi, lo = wide_counters(size // inner, inner)
        return lax.reshape(hi, shape), lax.reshape(lo, shape)
    lo = lax.reshape(lax.iota(_U32, size), shape)
    hi = lax.broadcast_in_dim(np.uint32(0), shape, ())
    return hi, lo


def _inner_factor(size: int):
    """A divisor ``d`` of ``size`` with ``d`` and ``size // d`` both below 2**32, or None."""
    limit = 2 ** 32 - 1
    outer = -(-size // limit)
    for o in range(outer, min(limit, outer + 1_000_000) + 1):
        if size % o == 0:
            return size // o
    return None


def wide_counters(outer: int, inner: int):
    """The 64-bit row-major index ``i * inner + j`` of every element of an ``(outer, inner)``
    grid as (high, low) uint32 words, computed in 32-bit pieces (no 64-bit integers needed,
    as with x64 off): the product from 16-bit halves, each partial sum's carry kept."""
    i = lax.broadcast_in_dim(lax.iota(_U32, outer), (outer, inner), (0,))
    j = lax.broadcast_in_dim(lax.iota(_U32, inner), (outer, inner), (1,))
    return index_words(i, j, inner)


def index_words(i, j, inner: int):
    """``i * inner + j`` (uint32 arrays ``i``, ``j``; a Python int ``inner`` below 2**32) as
    its (high, low) uint32 words."""
    u = _U32.type
    i_lo, i_hi = lax.bitwise_and(i, u(0xFFFF)), lax.shift_right_logical(i, u(16))
    c_lo, c_hi = u(inner & 0xFFFF), u(inner >> 16)
    p0, p1 = lax.mul(i_lo, c_lo), lax.mul(i_lo, c_hi)
    p2, p3 = lax.mul(i_hi, c_lo), lax.mul(i_hi, c_hi)
    t1 = lax.add(p0, lax.shift_left(p1, u(16)))
    t2 = lax.add(t1, lax.shift_left(p2, u(16)))
    lo = lax.add(t2, j)
    carries = [lax.lt(t1, p0), lax.lt(t2, t1), lax.lt(lo, t2)]
    hi = lax.add(p3, lax.add(lax.shift_right_logical(p1, u(16)),
                             lax.shift_right_logical(p2, u(16))))
    for c in carries:
        hi = lax.add(hi, lax.convert_element_type(c, _U32))
    return hi, lo


def _key_words(key):
    """The two uint32 scalars of a raw ``uint32[2]`` key."""
    return (lax.reshape(lax.slice(key, (0,), (1,)), ()),
            lax.reshape(lax.slice(key, (1,), (2,)), ()))


def _hash(key, shape: tuple):
    """Threefry of every counter of ``shape`` under ``key``: two uint32 arrays of ``shape``."""
    k0, k1 = _key_words(key)
    hi, lo = _counters(shape)
    return threefry2x32(k0, k1, hi, lo)


def split(key, shape: tuple):
    """New raw keys ``uint32[*shape, 2]`` from one raw key ``uint32[2]``; key ``i`` (row-major)
    is the Threefry of counter ``i`` (so ``split(k, n)[i] == fold_in(k, i)``)."""
    a, b = _hash(key, shape)
    nd = len(shape)
    return lax.concatenate([lax.broadcast_in_dim(a, shape + (1,), tuple(range(nd))),
                            lax.broadcast_in_dim(b, shape + (1,), tuple(range(nd)))], nd)


def fold_in(key, data):
    """A raw key from ``key`` (``uint32[2]``) and a uint32 scalar ``data``: the Threefry of
    the counter ``(0, data)``."""
    k0, k1 = _key_words(key)
    a, b = threefry2x32(k0, k1, np.uint32(0), data)
    return lax.concatenate([lax.reshape(a, (1,)), lax.reshape(b, (1,))], 0)


def random_bits(key, bit_width: int, shape: tuple):
    """Random unsigned integers ``uint{bit_width}[*shape]`` from a raw key ``uint32[2]``:
    the two Threefry words xor-ed (truncated for 8 and 16 bits), or joined high:low for
    64 bits."""
    a, b = _hash(key, shape)
    if bit_width == 64:
        u64 = np.dtype(np.uint64)
        return lax.bitwise_or(lax.shift_left(lax.convert_element_type(a, u64), np.uint64(32)),
                              lax.convert_element_type(b, u64))
    bits = lax.bitwise_xor(a, b)
    if bit_width == 32:
        return bits
    return lax.convert_element_type(bits, np.dtype(f"uint{bit_width}"))
