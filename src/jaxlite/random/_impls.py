"""The PRNG implementations a key can belong to: ``threefry2x32`` (the default), ``rbg`` and
``unsafe_rbg``, each as JAX 0.10 defines it.

Layer: random (compositions of ``jaxlite.lax`` ops on raw uint32 key data).  An
implementation is four functions of one key's raw data (``seed``, ``split``, ``fold_in``,
``random_bits``), its key data shape and its tag (the ``key<tag>`` dtype name).

- ``threefry2x32``: ``uint32[2]`` keys; everything by Threefry-2x32 (``_threefry.py``).
- ``rbg``: ``uint32[4]`` keys, two Threefry halves: seeding repeats the Threefry seed,
  ``split`` and ``fold_in`` apply Threefry's to each half; the bits come from XLA's bit
  generator (``lax.rng_bit_generator``, Philox on the CPU).
- ``unsafe_rbg``: rbg's seeding and bits; ``split`` takes every tenth row of
  ``rng_bit_generator``'s ``(10 n, 4)`` words, ``fold_in`` xors the key with the last row
  of the words drawn from the folded-in value's seed.
"""
from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

from .. import lax
from ..primitives.rng import RandomAlgorithm, rng_bit_generator_p
from . import _threefry

_U32 = np.dtype(np.uint32)
_UINT_BY_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
                 64: np.dtype(np.uint64)}


class PRNGImpl:
    """A PRNG implementation: ``name`` (as ``jax_default_prng_impl`` and ``impl=`` spell
    it), ``tag`` (``key<tag>``), ``key_shape`` (the raw data of one key: ``uint32[*key_shape]``)
    and its functions of one key's raw data:

    - ``seed(words)``: a key from the ``uint32[2]`` (high, low) words of an integer seed;
    - ``split(key, shape)``: ``uint32[*shape, *key_shape]`` new keys;
    - ``fold_in(key, data)``: a key mixing in a uint32 scalar;
    - ``random_bits(key, bit_width, shape)``: ``uint{bit_width}[*shape]`` random bits.
    """

    __slots__ = ("name", "tag", "key_shape", "seed", "split", "fold_in", "random_bits")

    def __init__(self, name, tag, key_shape, seed, split, fold_in, random_bits):
        self.name, self.tag, self.key_shape = name, tag, tuple(key_shape)
        self.seed, self.split, self.fold_in = seed, split, fold_in
        self.random_bits = random_bits

    def __repr__(self) -> str:
        return f"PRNGImpl({self.name!r})"

    def __str__(self) -> str:
        return self.tag

    def __reduce__(self):
        return (resolve, (self.name,))


# ---- rbg and unsafe_rbg -------------------------------------------------------------------

def _halves(key):
    """The two Threefry halves ``uint32[2]`` of an rbg key ``uint32[4]``."""
    return lax.slice(key, (0,), (2,)), lax.slice(key, (2,), (4,))


def _rbg_seed(words):
    return lax.concatenate([words, words], 0)


def _rbg_split(key, shape: tuple):
    return lax.concatenate([_threefry.split(h, shape) for h in _halves(key)], len(shape))


def _rbg_fold_in(key, data):
    return lax.concatenate([_threefry.fold_in(h, data) for h in _halves(key)], 0)


_state = threading.local()


@contextlib.contextmanager
def batched_by_loop():
    """Inside the block, the bits the rbg implementations draw are batched by a loop over
    the keys (``rng_bit_generator``'s ``batch_by_loop``), as inside JAX's gamma primitive;
    elsewhere by JAX's rule (all of a batch's bits from its first key)."""
    old = getattr(_state, "loop", False)
    _state.loop = True
    try:
        yield
    finally:
        _state.loop = old


def _bits(key, shape: tuple, dtype):
    """``rng_bit_generator``'s bits (RNG_DEFAULT) from a raw ``uint32[4]`` key."""
    _, bits = rng_bit_generator_p.bind(key, shape=tuple(shape), dtype=np.dtype(dtype),
                                       algorithm=RandomAlgorithm.RNG_DEFAULT,
                                       out_sharding=None,
                                       batch_by_loop=getattr(_state, "loop", False))
    return bits


def _rbg_random_bits(key, bit_width: int, shape: tuple):
    return _bits(key, shape, _UINT_BY_BITS[bit_width])


def _unsafe_rbg_split(key, shape: tuple):
    # ten rows of bits per key, every tenth row kept: JAX's "hash" of the key
    n = math.prod(shape)
    rows = _bits(key, (10 * n, 4), _U32)
    return lax.reshape(lax.slice(rows, (0, 0), (10 * n, 4), (10, 1)), tuple(shape) + (4,))


def _unsafe_rbg_fold_in(key, data):
    words = lax.concatenate([np.zeros((1,), _U32), lax.reshape(data, (1,))], 0)
    rows = _bits(_rbg_seed(words), (10, 4), _U32)
    return lax.bitwise_xor(key, lax.reshape(lax.slice(rows, (9, 0), (10, 4)), (4,)))


THREEFRY = PRNGImpl("threefry2x32", "fry", (2,), lambda words: words, _threefry.split,
                    _threefry.fold_in, _threefry.random_bits)
RBG = PRNGImpl("rbg", "rbg", (4,), _rbg_seed, _rbg_split, _rbg_fold_in, _rbg_random_bits)
UNSAFE_RBG = PRNGImpl("unsafe_rbg", "urbg", (4,), _rbg_seed, _unsafe_rbg_split,
                      _unsafe_rbg_fold_in, _rbg_random_bits)

PRNGS = {impl.name: impl for impl in (THREEFRY, RBG, UNSAFE_RBG)}
# JAX's other implementations (config jax_default_prng_impl accepts their names): named in
# the refusal of an ``impl=`` jaxlite does not have
_NOT_IMPLEMENTED = ("threefry4x32", "philox2x32", "philox4x32")


def default_impl() -> PRNGImpl:
    """The implementation ``jax_default_prng_impl`` names (``threefry2x32`` unless set)."""
    from ..config import config
    return PRNGS[config.jax_default_prng_impl]


def resolve(spec) -> PRNGImpl:
    """The implementation named by ``spec``: None (the default), a name (``"rbg"``), a
    ``PRNGImpl`` or a key dtype (``key<rbg>``).

    Raises:
      ValueError: an unknown name, or one of JAX's implementations jaxlite lacks.
      TypeError: any other kind of value.
    """
    if spec is None:
        return default_impl()
    if type(spec) is PRNGImpl:
        return spec
    if type(spec) is str:
        if spec in PRNGS:
            return PRNGS[spec]
        if spec in _NOT_IMPLEMENTED:
            raise ValueError(f"PRNG implementation {spec!r} is not implemented in jaxlite "
                             f"(it has {', '.join(repr(n) for n in PRNGS)})")
        names = ", ".join(f'"{n}"' for n in (*PRNGS, *_NOT_IMPLEMENTED))
        raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one '
                         f'of: {names}?')
    impl = getattr(spec, "impl", None)
    if type(impl) is PRNGImpl:        # a key dtype
        return impl
    raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")
