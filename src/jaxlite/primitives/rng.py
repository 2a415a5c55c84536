"""The ``rng_bit_generator`` primitive: XLA's stateless bit generator (``RngBitGenerator``).

Layer: primitives.  From a key (``uint32[4]``, or ``uint64[2]`` under x64) it returns the
advanced key and an array of random unsigned integers of a requested shape and width, by
one of XLA's algorithms: ``RNG_THREE_FRY`` (Threefry-2x32, 20 rounds) or ``RNG_PHILOX``
(Philox-4x32, 10 rounds); ``RNG_DEFAULT`` is the platform's choice, Philox on the CPU
(as XLA:CPU expands it).  The NumPy implementation reproduces XLA's expansion of the
operation bit for bit: the key seen as two 64-bit words ``(s0, s1)`` (little-endian pairs
of the uint32 words), the counters, the order in which each algorithm's output words fill
the result, and the advanced key.

- Philox: the Philox key is ``s0``'s two halves; block ``i``'s 128-bit counter is
  ``(s1 + i)`` (low 64 bits, carrying into ``s0``, the high 64 bits); each block gives four
  words, laid out one after the other (element ``4 i + j`` is word ``j`` of block ``i``; for
  64-bit results, element ``2 i + j`` joins words ``2 j`` (low) and ``2 j + 1``).  The
  advanced key is ``(s0, s1 + blocks)``.
- Threefry: the Threefry key is ``s0``'s two halves, counter ``s1 + n`` for the ``n``-th
  (row-major) element of the shape halved along its first even dimension (else its
  largest); the two output words fill the two halves, interleaved along that dimension
  (64-bit results: one counter per element, the words joined).  The advanced key is
  ``(s0, s1 + counters used)``.
- 8- and 16-bit results are the 32-bit ones truncated.

Not differentiable (integer results).  Its batching rule is JAX's: a batch of keys draws
``(batch, *shape)`` bits from the first key alone and advances only that key.  An equation
with ``batch_by_loop=True`` (jaxlite's, not printed) is batched as a loop over the keys
instead, each drawing its own bits: what JAX's gamma sampler, a primitive whose batching
rule loops over its keys, gives the bits drawn inside it (random/_gamma.py sets it).
"""
from __future__ import annotations

import enum
import math

import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import Primitive

_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_OUT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of ``rng_bit_generator`` (``jax.lax.RandomAlgorithm``): the platform's
    default (Philox on the CPU), Threefry-2x32 or Philox-4x32.  Prints as its name."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


def check_key_aval(shape, dtype, who: str = "rng_bit_generator") -> None:
    """Raises TypeError unless a key of ``shape`` and ``dtype`` is ``uint32[4]`` or
    ``uint64[2]`` (the two forms XLA's bit generator takes)."""
    dt = np.dtype(dtype)
    if not ((tuple(shape) == (4,) and dt == _U32) or (tuple(shape) == (2,) and dt == _U64)):
        raise TypeError(f"{who}: the key must be uint32[4] or uint64[2], got "
                        f"{dt.name}{list(shape)}")


def _rbg_aval(key, *, shape, dtype, algorithm, out_sharding, batch_by_loop=False):
    check_key_aval(key.shape, key.dtype)
    dt = np.dtype(dtype)
    if dt not in _OUT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dt.name}")
    if any(d < 0 for d in shape):
        raise ValueError(f"rng_bit_generator: shape {tuple(shape)} has a negative dimension")
    return [ShapedArray(tuple(key.shape), key.dtype), ShapedArray(tuple(shape), dt)]


# ---- the algorithms, in NumPy (uint64 arithmetic wraps, as XLA's) -------------------------

def _state(key: np.ndarray) -> tuple:
    """The key's two 64-bit words ``(s0, s1)`` as Python ints."""
    if key.dtype == _U32:
        w = [int(v) for v in key]
        return w[0] | (w[1] << 32), w[2] | (w[3] << 32)
    return int(key[0]), int(key[1])


def _key_out(key: np.ndarray, s0: int, s1: int) -> np.ndarray:
    if key.dtype == _U32:
        return np.array([s0 & _MASK32, s0 >> 32, s1 & _MASK32, s1 >> 32], _U32)
    return np.array([s0, s1], _U64)


def _halves(x):
    """The low and high uint32 words of a uint64 array."""
    return (x & np.uint64(_MASK32)).astype(_U32), (x >> np.uint64(32)).astype(_U32)


def _philox(ctr, k0: int, k1: int):
    """Philox-4x32 (10 rounds) of the counter words ``ctr`` (four uint32 arrays)."""
    x0, x1, x2, x3 = ctr
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        hi0, lo0 = _halves(x0.astype(_U64) * m0)[::-1]
        hi1, lo1 = _halves(x2.astype(_U64) * m1)[::-1]
        x0, x1, x2, x3 = (hi1 ^ x1 ^ np.uint32(k0), lo1, hi0 ^ x3 ^ np.uint32(k1), lo0)
        k0 = (k0 + 0x9E3779B9) & _MASK32
        k1 = (k1 + 0xBB67AE85) & _MASK32
    return x0, x1, x2, x3


def _philox_bits(s0: int, s1: int, n: int, wide: bool):
    """``n`` Philox values (uint32, or uint64 when ``wide``) and the advanced ``s1``."""
    blocks = -(-n * (2 if wide else 1) // 4)
    low = np.uint64(s1) + np.arange(blocks, dtype=_U64)
    high = np.where(low < np.uint64(s1), np.uint64((s0 + 1) & _MASK64), np.uint64(s0))
    words = _philox(_halves(low) + _halves(high), s0 & _MASK32, s0 >> 32)
    if wide:
        words = [w0.astype(_U64) | (w1.astype(_U64) << np.uint64(32))
                 for w0, w1 in (words[:2], words[2:])]
    flat = np.stack(words, axis=1).reshape(-1)[:n]
    return flat, (s1 + blocks) & _MASK64


def _threefry(k0: int, k1: int, x0, x1):
    """Threefry-2x32 (20 rounds) of the counter words ``x0, x1`` (uint32 arrays)."""
    ks = (np.uint32(k0), np.uint32(k1), np.uint32(k0 ^ k1 ^ 0x1BD11BDA))
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for block in range(5):
        for r in rot[block % 2]:
            x0 = x0 + x1
            x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def _threefry_bits(s0: int, s1: int, shape: tuple, wide: bool):
    """Threefry values of ``shape`` (uint32, or uint64 when ``wide``) and the advanced
    ``s1``."""
    k0, k1 = s0 & _MASK32, s0 >> 32
    if wide:
        n = math.prod(shape)
        ctr = np.uint64(s1) + np.arange(n, dtype=_U64)
        o0, o1 = _threefry(k0, k1, *_halves(ctr))
        out = o0.astype(_U64) | (o1.astype(_U64) << np.uint64(32))
        return out.reshape(shape), (s1 + n) & _MASK64
    if not shape:
        ctr = np.array([s1], _U64)
        o0, _ = _threefry(k0, k1, *_halves(ctr))
        return o0.reshape(()), (s1 + 1) & _MASK64
    # halve the first even dimension (else the largest), then interleave the two words
    split = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
    if split is None:
        split = max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = list(shape)
    half[split] = -(-shape[split] // 2)
    half.insert(split + 1, 1)
    n = math.prod(half)
    ctr = np.uint64(s1) + np.arange(n, dtype=_U64)
    o0, o1 = (o.reshape(half) for o in _threefry(k0, k1, *_halves(ctr)))
    both = np.concatenate([o0, o1], axis=split + 1)
    full = list(shape)
    full[split] = 2 * half[split]
    out = both.reshape(full)
    return np.take(out, np.arange(shape[split]), axis=split), (s1 + n) & _MASK64


def _rbg_impl(key, *, shape, dtype, algorithm, out_sharding, batch_by_loop=False):
    key = np.asarray(key)
    s0, s1 = _state(key)
    dt = np.dtype(dtype)
    wide = dt == _U64
    shape = tuple(shape)
    if RandomAlgorithm(algorithm) == RandomAlgorithm.RNG_THREE_FRY:
        bits, s1 = _threefry_bits(s0, s1, shape, wide)
    else:
        flat, s1 = _philox_bits(s0, s1, math.prod(shape), wide)
        bits = flat.reshape(shape)
    return [_key_out(key, s0, s1), np.array(bits, dtype=dt, order="C")]


rng_bit_generator_p = Primitive("rng_bit_generator", abstract_eval=_rbg_aval, impl=_rbg_impl,
                                multiple_results=True, kind="other", foldable=False,
                                flops=lambda key, **p: 0)
# printed as JAX prints it: batch_by_loop is jaxlite's own, and only shown when set
rng_bit_generator_p.pp_params = lambda params: {
    k: v for k, v in params.items() if k != "batch_by_loop" or v}


# ---- transformation rules -----------------------------------------------------------------

from ..core import batching  # noqa: E402


def _rbg_batch(args, dims, *, shape, dtype, algorithm, out_sharding, batch_by_loop=False):
    # JAX's rule: the first key of the batch draws bits for the whole batch and is the only
    # key advanced (the others come back unchanged)
    from . import shape as _s
    keys, = args
    d, = dims
    keys = batching.moveaxis(keys, d, 0)
    if batch_by_loop:
        return _loop_batch(keys, shape=shape, dtype=dtype, algorithm=algorithm,
                           out_sharding=out_sharding)
    size, width = keys.shape[0], keys.shape[1]
    first = _s.reshape_p.bind(
        _s.slice_p.bind(keys, start_indices=(0, 0), limit_indices=(1, width), strides=None),
        new_sizes=(width,), dimensions=None, sharding=None)
    new_key, bits = rng_bit_generator_p.bind(first, shape=(size,) + tuple(shape), dtype=dtype,
                                             algorithm=algorithm, out_sharding=out_sharding)
    row = _s.reshape_p.bind(new_key, new_sizes=(1, width), dimensions=None, sharding=None)
    zero = np.zeros((), np.int32)
    new_keys = _s.dynamic_update_slice_p.bind(keys, row, zero, zero)
    return [new_keys, bits], [0, 0]


def _loop_batch(keys, **params):
    """A scan over the batch of keys, each drawing its own bits (``batch_by_loop``)."""
    from ..core.avals import ShapedArray as _SA
    from ..core.staging import trace_to_jaxpr
    from .control_flow import scan_p
    key_aval = _SA(tuple(keys.shape[1:]), np.dtype(keys.dtype))
    body = trace_to_jaxpr(
        lambda k: rng_bit_generator_p.bind(k, batch_by_loop=True, **params), [key_aval])
    outs = scan_p.bind(keys, jaxpr=body, num_consts=0, num_carry=0, length=keys.shape[0],
                       reverse=False, unroll=1)
    return list(outs), [0, 0]


rng_bit_generator_p.batch = _rbg_batch

from ..core import sharding_rules as _sr  # noqa: E402

# the bits are laid out over the whole output shape (one counter sequence), so a sharded
# program computes them whole, from the whole key, and every device holds all of them
rng_bit_generator_p.sharding = _sr.replicate_rule(
    rng_bit_generator_p, "the bits are laid out over the whole output: computed whole, "
    "replicated")


# ---- lowering to StableHLO (backends/pjrt) ------------------------------------------------

_ALGORITHM_TEXT = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                   RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                   RandomAlgorithm.RNG_PHILOX: "PHILOX"}


def _rbg_lower(ctx, key, *, shape, dtype, algorithm, out_sharding, batch_by_loop=False):
    """``stablehlo.rng_bit_generator`` on the key as ``uint64[2]`` (a ``uint32[4]`` key is
    bitcast to it and back, as JAX lowers it); ``DEFAULT`` leaves the algorithm to the
    platform (Philox on XLA:CPU, as the implementation; another chip's own elsewhere)."""
    u32_key = key.aval.dtype == _U32
    state = key
    if u32_key:
        pairs = ctx.reshape(key, (2, 2))
        state = ctx.op("stablehlo.bitcast_convert", [pairs], ctx.aval((2,), _U64))
    text = _ALGORITHM_TEXT[RandomAlgorithm(algorithm)]
    new_state, bits = ctx.op("stablehlo.rng_bit_generator", [state],
                             [state.aval, ctx.aval(tuple(shape), dtype)],
                             {"rng_algorithm": f"#stablehlo<rng_algorithm {text}>"})
    if u32_key:
        words = ctx.op("stablehlo.bitcast_convert", [new_state], ctx.aval((2, 2), _U32))
        new_state = ctx.reshape(words, (4,))
    return [new_state, bits]


rng_bit_generator_p.lowering = _rbg_lower
