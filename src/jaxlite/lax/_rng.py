"""``lax.rng_bit_generator`` (XLA's stateless bit generator) and ``lax.RandomAlgorithm``.

Layer: lax (binds ``primitives/rng.py``'s primitive).  The rbg PRNG implementations of
``jaxlite.random`` draw their bits through it.
"""
from __future__ import annotations

import operator

import numpy as np

from ..primitives.rng import RandomAlgorithm, rng_bit_generator_p
from ._keyaware import is_key

_UINTS = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
# the members by value: JAX looks the algorithm up by hash and equality, so a member's
# int value (0, 1, 2), a NumPy integer, True or 1.0 name the member too
_ALGORITHMS = {int(a): a for a in RandomAlgorithm}


def _algorithm(algorithm) -> RandomAlgorithm:
    """The RandomAlgorithm member ``algorithm`` names (a member or a value equal to one's):
    TypeError for an unhashable value (an array), AssertionError for any other (JAX's
    types)."""
    try:
        found = _ALGORITHMS.get(algorithm)
    except TypeError:
        raise TypeError(f"rng_bit_generator: algorithm must be a lax.RandomAlgorithm or its "
                        f"int value, got an unhashable {type(algorithm).__name__}") from None
    if found is None:
        raise AssertionError(f"rng_bit_generator: unknown algorithm {algorithm!r}; the "
                             f"algorithms are {', '.join(repr(a) for a in RandomAlgorithm)} "
                             f"(or their values 0, 1, 2)")
    return found


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT,
                      *, out_sharding=None):
    """Random bits from a key by XLA's bit generator (``jax.lax.rng_bit_generator``).

    Args:
      key: ``uint32[4]`` (or ``uint64[2]`` with x64) array; a typed key of the rbg
        implementations is taken as its key data.
      shape: shape of the bits (a tuple of non-negative ints, or one int).
      dtype: uint8, uint16, uint32 or uint64 (uint32 when 64-bit types are off, with a
        warning).
      algorithm: a ``RandomAlgorithm``: ``RNG_DEFAULT`` (the platform's: Philox on the CPU,
        as XLA:CPU), ``RNG_THREE_FRY`` or ``RNG_PHILOX``; as in JAX, a value equal to one
        (its int value 0, 1 or 2, a NumPy integer) names that member.
      out_sharding: the bits' sharding (values do not depend on it).

    Returns:
      ``(new_key, bits)``: the advanced key (the key's shape and dtype) and
      ``dtype[*shape]``.  On the CPU platforms the values are XLA:CPU's bit for bit.

    Raises:
      TypeError: an unsupported dtype, a key that is not ``uint32[4]``/``uint64[2]``, or
      an unhashable algorithm (an array).  AssertionError (JAX's type): an algorithm that
      names no member (3, a string, None).  ValueError: a negative dimension.

    Example::

        key = jnp.array([0, 0, 0, 42], jnp.uint32)
        new_key, bits = lax.rng_bit_generator(key, (3,))    # new_key: [0 0 1 42]
    """
    from ..numpy._creation import _user_dtype
    if out_sharding is not None:
        # the bits are placed; the new key keeps the key's placement (as JAX)
        from ._sharding_constraints import out_sharded, out_sharding_of
        sh = out_sharding_of(out_sharding, "rng_bit_generator")
        new_key, bits = rng_bit_generator(key, shape, dtype, algorithm)
        return new_key, out_sharded(bits, sh, "rng_bit_generator", creation=True)
    shape = _shape_arg(shape)
    dt = _user_dtype(dtype, "rng_bit_generator")
    if dt not in _UINTS:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dt}")
    algorithm = _algorithm(algorithm)
    typed = is_key(key)     # a typed key array (random's, registered in _keyaware)
    if isinstance(key, (list, tuple)):
        raise TypeError(f"Error interpreting argument to rng_bit_generator as a JAX value. "
                        f"The problematic value is of type {type(key)} and was passed to "
                        f"rng_bit_generator at position 0.")
    data = key._base if typed else key
    if not hasattr(data, "dtype"):
        data = np.asarray(data)
    new_key, bits = rng_bit_generator_p.bind(data, shape=shape, dtype=dt, algorithm=algorithm,
                                             out_sharding=None)
    return (key._with_data(new_key) if typed else new_key), bits


def _shape_arg(shape) -> tuple:
    try:
        if isinstance(shape, (tuple, list)):
            return tuple(operator.index(d) for d in shape)
        return (operator.index(shape),)
    except TypeError:
        raise TypeError(f"rng_bit_generator: shape must be a tuple of ints, got "
                        f"{shape!r}") from None
