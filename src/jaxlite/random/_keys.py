"""PRNG keys: typed key arrays (``key<fry>``), raw ``uint32[..., 2]`` keys, seeding, and the
checks every sampler runs on its ``key`` argument.

Layer: random.  A typed key array is a pytree node around its raw uint32 data, so it passes
through ``jit`` (as a uint32 argument/result) and comes back typed.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ..core.array import ArrayImpl
from ..core.trace import Tracer, get_aval
from ..lax._keyaware import register_key_type
from ..tree_util import register_pytree_node
from . import _threefry

_U32 = np.dtype(np.uint32)
_KEY_SHAPE = (2,)


class KeyDType:
    """The dtype of typed key arrays for the threefry2x32 generator; prints ``key<fry>``."""

    name = "key<fry>"
    impl = "threefry2x32"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType) or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


KEY_DTYPE = KeyDType()


class PRNGKeyArray:
    """An array of typed PRNG keys (what ``jax.random.key`` returns): shape ``data.shape[:-1]``,
    dtype ``key<fry>``, backed by ``uint32[*shape, 2]`` key data (``key_data`` returns it).

    As in JAX, key arrays have the shape attributes and methods of arrays (``shape``,
    ``ndim``, ``size``, ``T``, ``reshape``, ``transpose``, ``swapaxes``, ``squeeze``,
    ``flatten``/``ravel``, ``take``, ``copy``, ``block_until_ready``, ``len``, iteration,
    indexing with ``None``/ellipsis/arrays, ``.at[...].get()``/``.set(keys)``), compare with
    ``==``/``!=`` key by key, and pass through ``jnp``'s and ``lax``'s shape functions
    (``stack``, ``concatenate``, ``tile``, ``where``, ``zeros_like``, ...).  Arithmetic,
    ordering, reductions and conversion to NumPy raise TypeError.
    """

    __slots__ = ("_base",)
    __array_priority__ = 100        # NumPy defers ``np_array == keys`` to us

    def __init__(self, base):
        self._base = base

    @property
    def shape(self) -> tuple:
        return tuple(self._base.shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDType:
        return KEY_DTYPE

    @property
    def itemsize(self) -> int:
        return 8        # two uint32 words per key

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    # placement and lifetime are those of the key data
    sharding = property(lambda self: self._base.sharding)
    device = property(lambda self: self._base.device)
    committed = property(lambda self: self._base.committed)
    is_fully_addressable = property(lambda self: self._base.is_fully_addressable)
    is_fully_replicated = property(lambda self: self._base.is_fully_replicated)

    def devices(self):
        return self._base.devices()

    def is_deleted(self) -> bool:
        return self._base.is_deleted()

    def delete(self) -> None:
        self._base.delete()

    def copy_to_host_async(self) -> None:
        self._base.copy_to_host_async()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        # the key data's own last axis stays whole: index the key dimensions only
        if not any(i is Ellipsis for i in idx):
            idx = idx + (Ellipsis,)
        return PRNGKeyArray(self._base[idx + (slice(None),)])

    def reshape(self, *shape, order="C"):
        """Key array of ``shape`` (one tuple or several ints; ``-1`` allowed)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return jnp.reshape(self, tuple(shape), order=order)

    @property
    def T(self):
        return jnp.transpose(self)

    def transpose(self, *axes):
        """Key array with its dimensions permuted (``axes``: one tuple or several ints)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return jnp.transpose(self, axes or None)

    def swapaxes(self, axis1, axis2):
        return jnp.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        return jnp.squeeze(self, axis)

    def flatten(self, order="C"):
        return jnp.ravel(self, order)

    def ravel(self, order="C"):
        return jnp.ravel(self, order)

    def take(self, indices, axis=None, mode=None, fill_value=None):
        return jnp.take(self, indices, axis=axis, mode=mode, fill_value=fill_value)

    def copy(self):
        return jnp.copy(self)

    def block_until_ready(self):
        """Waits for the key data (as ``Array.block_until_ready``) and returns the keys."""
        if hasattr(self._base, "block_until_ready"):
            self._base.block_until_ready()
        return self

    @property
    def at(self):
        """``keys.at[idx].get()`` and ``.set(new_keys)``; other updates raise TypeError."""
        return _KeyIndexUpdateHelper(self)

    def _compare(self, other, op):
        if isinstance(other, (list, tuple, dict, set)):
            raise TypeError(f"{op}: cannot compare a key array with a {type(other).__name__}")
        if not isinstance(other, PRNGKeyArray):
            raise TypeError(f"{op}: typed PRNG keys can only be compared with keys, not with "
                            f"{type(other).__name__} values")
        same = lax.eq(*_broadcast_data(self._base, other._base))
        both = lax.bitwise_and(lax.index_in_dim(same, 0, -1, False),
                               lax.index_in_dim(same, 1, -1, False))
        return both if op == "==" else lax.bitwise_not(both)

    def __eq__(self, other):
        return self._compare(other, "==")

    def __ne__(self, other):
        return self._compare(other, "!=")

    __hash__ = None     # unhashable, as arrays

    def __repr__(self) -> str:
        if isinstance(self._base, Tracer):
            return f"Traced<key<fry>{list(self.shape)}> overlaying {self._base!r}"
        return (f"Array({self.shape}, dtype=key<fry>) overlaying:\n"
                f"{np.asarray(self._base)}")

    __str__ = __repr__

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a typed PRNG key array (dtype key<fry>) cannot be used as a "
                        "numeric array; jax.random.key_data(keys) gives its uint32 data")


def _broadcast_data(a, b):
    """Two key-data arrays broadcast over their key dimensions (NumPy's rules)."""
    shape = tuple(np.broadcast_shapes(tuple(a.shape[:-1]), tuple(b.shape[:-1]))) + _KEY_SHAPE
    return jnp.broadcast_to(a, shape), jnp.broadcast_to(b, shape)


class _KeyIndexUpdateHelper:
    __slots__ = ("_keys",)

    def __init__(self, keys):
        self._keys = keys

    def __getitem__(self, idx):
        return _KeyIndexUpdateRef(self._keys, idx)


class _KeyIndexUpdateRef:
    """``keys.at[idx]``: ``get`` and ``set`` only (keys have no arithmetic)."""

    __slots__ = ("_keys", "_idx")

    def __init__(self, keys, idx):
        self._keys, self._idx = keys, idx

    def get(self, **kwargs):
        """``keys[idx]``, with the options of ``Array.at[...].get`` (mode, fill_value)."""
        return self._on_words(lambda ref, w: ref.get(**kwargs))

    def set(self, values, **kwargs):
        """Keys with ``values`` (keys) written at ``idx``; TypeError for non-key values."""
        if not isinstance(values, PRNGKeyArray):
            raise TypeError(f"keys.at[...].set takes typed keys, not "
                            f"{type(values).__name__} values")
        return self._on_words(lambda ref, w: ref.set(values._base[..., w], **kwargs))

    def _on_words(self, fn):
        base = self._keys._base
        words = [fn(base[..., w].at[self._idx], w) for w in (0, 1)]
        return PRNGKeyArray(jnp.stack(words, axis=-1))

    def _refuse(self, *args, **kwargs):
        raise TypeError("typed PRNG keys have no arithmetic: keys.at[...] supports only "
                        "get() and set(keys)")

    add = multiply = mul = divide = power = min = max = apply = _refuse


register_pytree_node(PRNGKeyArray, lambda k: ((k._base,), None),
                     lambda _, children: PRNGKeyArray(children[0]))
register_key_type(PRNGKeyArray)


# ---- checking key arguments -----------------------------------------------------------

def _check_key_data(data, what="key_data"):
    """Raises TypeError unless ``data`` is a uint32 array whose last dimension is 2."""
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError(f"invalid PRNG key data: {data!r} is not an array (a key is a "
                        f"uint32 array whose last dimension is 2, or a typed key)")
    if data.ndim < 1:
        raise TypeError(f"invalid PRNG key data: a rank-{data.ndim} array; raw key data "
                        f"has at least one dimension (the last of size 2)")
    if tuple(data.shape[-1:]) != _KEY_SHAPE:
        raise TypeError(f"invalid PRNG key data of shape {tuple(data.shape)}: threefry2x32 "
                        f"key data must have a last dimension of size 2")
    if np.dtype(data.dtype) != _U32:
        raise TypeError(f"invalid PRNG key data of dtype {np.dtype(data.dtype).name}: "
                        f"threefry2x32 key data must be uint32")


def _as_array(x):
    if isinstance(x, (ArrayImpl, Tracer)):
        return x
    return jnp.asarray(x)


def unpack_keys(key):
    """``(raw uint32[..., 2] data, typed)`` for a typed key array or raw key data.

    Raises TypeError for anything else (lists, Python scalars, arrays that are not
    ``uint32[..., 2]``).
    """
    if isinstance(key, PRNGKeyArray):
        return key._base, True
    if isinstance(key, (list, tuple, dict, str)):
        raise TypeError(f"a PRNG key must be an array (typed key or uint32 key data), got a "
                        f"{type(key).__name__}: {key!r}")
    _check_key_data(key)
    return _as_array(key), False


def unpack_key(key, name: str):
    """Like ``unpack_keys`` for the functions that take one key: raises ValueError for a
    batch of keys (JAX's message: use vmap)."""
    data, typed = unpack_keys(key)
    if tuple(data.shape) != _KEY_SHAPE:
        raise ValueError(f"{name} takes one key, but this key array has shape "
                         f"{tuple(data.shape[:-1]) if typed else tuple(data.shape)} rather "
                         "than (); map over a batch of keys with jax.vmap.")
    return data, typed


def pack(data, typed: bool):
    """Raw key data back in the caller's style (typed keys in, typed keys out)."""
    return PRNGKeyArray(data) if typed else data


# ---- seeding --------------------------------------------------------------------------

def _seed_words(seed, name: str):
    """Raw ``uint32[2]`` key data for an integer ``seed``: (high word, low word) of the seed
    as a 64-bit integer; with x64 off the high word is 0 and the seed is taken mod 2**32."""
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name}: the seed must be an integer scalar, not a PRNG key")
    if isinstance(seed, (float, complex)) or (
            isinstance(seed, (np.ndarray, np.generic)) and seed.dtype.kind not in "iu"):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if isinstance(seed, (bool, int, np.integer)):
        if not isinstance(seed, np.unsignedinteger) and not -2 ** 63 <= int(seed) < 2 ** 63:
            raise OverflowError("Python int too large to convert to C long")
        s = int(seed) & (2 ** 64 - 1)
        hi = (s >> 32) if dtypes.x64_enabled() else 0
        return jnp.asarray(np.array([hi, s & 0xFFFFFFFF], _U32))
    if isinstance(seed, np.ndarray):
        if seed.ndim:
            raise TypeError(f"{name}: the seed must be a scalar, but it has shape {seed.shape}; "
                            f"make a batch of keys with jax.vmap")
        return _seed_words(seed[()], name)
    if not isinstance(seed, (ArrayImpl, Tracer)):
        raise TypeError(f"{name}: seed must be an integer scalar, got {type(seed).__name__}")
    aval = get_aval(seed)
    if aval.shape:
        raise TypeError(f"{name}: the seed must be a scalar, but it has shape {aval.shape}; "
                        f"make a batch of keys with jax.vmap")
    if aval.dtype.kind not in "iu":
        raise TypeError(f"PRNG key seed must be an integer; got {aval.dtype.name} value")
    lo = lax.convert_element_type(seed, _U32)
    if aval.dtype.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, aval.dtype.type(32)), _U32)
    else:
        hi = np.uint32(0)
    return lax.concatenate([lax.reshape(lax.convert_element_type(hi, _U32), (1,)),
                            lax.reshape(lo, (1,))], 0)


def key(seed, *, impl=None):
    """A typed PRNG key (shape ``()``, dtype ``key<fry>``) from an integer seed
    (``jax.random.key``).

    Args:
      seed: a Python int (within int64), a NumPy integer or an integer scalar array
        (traced values allowed).  With x64 off only the low 32 bits matter.
      impl: None or ``"threefry2x32"`` (the only generator here).

    Raises:
      TypeError: non-integer seed, a non-scalar array, or a key passed as seed.
      OverflowError: a Python int outside int64.

    Example::

        k = jax.random.key(0)        # Array((), dtype=key<fry>) overlaying [0 0]
    """
    _check_impl(impl)
    return PRNGKeyArray(_seed_words(seed, "key"))


def PRNGKey(seed, *, impl=None):
    """A raw (legacy) PRNG key ``uint32[2]`` from an integer seed (``jax.random.PRNGKey``):
    ``[seed >> 32, seed & 0xFFFFFFFF]`` (high word 0 with x64 off).  Errors as ``key``.

    Example::

        jax.random.PRNGKey(42)       # Array([ 0, 42], dtype=uint32)
    """
    _check_impl(impl)
    return _seed_words(seed, "PRNGKey")


def _check_impl(impl):
    if impl is not None and impl not in ("threefry2x32", "threefry"):
        raise ValueError(f"unsupported PRNG implementation {impl!r}: jaxlite has only "
                         "'threefry2x32'")


def key_dtype(impl_spec=None):
    """The dtype of typed keys, ``key<fry>`` (``jax.random.key_dtype``); ``impl_spec`` may
    be None or ``"threefry2x32"``, the only generator jaxlite has.

    Raises:
      ValueError: another generator name.
    """
    _check_impl(impl_spec)
    return KEY_DTYPE


def key_data(keys):
    """The raw ``uint32[*keys.shape, 2]`` data of typed keys; raw key data is returned as it
    is (``jax.random.key_data``).  Raises TypeError for anything that is not a key."""
    data, _ = unpack_keys(keys)
    return data


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys over raw ``uint32[..., 2]`` data (``jax.random.wrap_key_data``).

    Raises TypeError unless the data is a uint32 array whose last dimension is 2 (a typed
    key array is rejected too).
    """
    _check_impl(impl)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("invalid PRNG key data: wrap_key_data takes raw uint32 key data, "
                        "not a typed key array")
    _check_key_data(key_bits_array)
    return PRNGKeyArray(_as_array(key_bits_array))


def key_impl(keys):
    """The generator behind ``keys``: always ``"threefry2x32"`` (``jax.random.key_impl``)."""
    unpack_keys(keys)
    return "threefry2x32"


def clone(key):
    """``key`` itself: jaxlite keys are immutable values (``jax.random.clone``)."""
    return key


def split(key, num=2):
    """``num`` new keys from one key (``jax.random.split``); ``num`` may be a shape tuple.

    Args:
      key: a typed key (shape ``()``) or a raw ``uint32[2]`` key.
      num: a non-negative int or a tuple of them.

    Returns:
      Keys of shape ``num`` (typed in, typed out; raw keys as ``uint32[*num, 2]``).
      Key ``i`` of ``split(k, n)`` equals ``fold_in(k, i)``.

    Raises:
      ValueError: a batch of keys, or a negative count.  TypeError: not a key.
    """
    data, typed = unpack_key(key, "split")
    shape = _shape(num, "split")
    return pack(_threefry.split(data, shape), typed)


def fold_in(key, data):
    """A new key mixing integer ``data`` (a uint32 scalar) into ``key``
    (``jax.random.fold_in``).

    Raises:
      OverflowError: a Python int outside [0, 2**32).
      TypeError: non-scalar ``data`` or a non-key.  ValueError: a batch of keys.
    """
    raw, typed = unpack_key(key, "fold_in")
    if isinstance(data, int):
        if not 0 <= data < 2 ** 32:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        d = np.uint32(data)
    else:
        d = _as_array(data)
        if d.shape:
            raise TypeError(f"fold_in: data must be a scalar, but it has shape {tuple(d.shape)}; "
                            "fold in a batch with jax.vmap")
        d = lax.convert_element_type(d, _U32)
    return pack(_threefry.fold_in(raw, d), typed)


def _shape(shape, name: str) -> tuple:
    """A static shape tuple from an int or a sequence of ints; ValueError for negatives."""
    import operator
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
            tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a tuple of ints, got "
                        f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: shape {dims} has a negative dimension")
    return dims
