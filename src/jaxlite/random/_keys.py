"""PRNG keys: typed key arrays (``key<fry>``, ``key<rbg>``, ``key<urbg>``), raw uint32 keys,
seeding, and the checks every sampler runs on its ``key`` argument.

Layer: random.  A typed key array is one pytree leaf to users, as in JAX; in the
transformations' view of pytrees (``tree_util.data_flatten``) it is a node around its raw
uint32 data (its implementation, ``_impls.py``, is the node's static part), so it passes
through ``jit``, ``vmap``, ``grad`` and ``scan`` (as a uint32 argument/result) and comes back
typed.  Raw keys are taken as keys of the default implementation
(``jax_default_prng_impl``).  The samplers turn their key argument into one typed key
(``unpack_key``) and draw from it through ``key_split``/``key_bits``, so every sampler
runs on every implementation.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ..core.array import ArrayImpl
from ..core.trace import Tracer, get_aval
from ..lax._keyaware import register_key_type
from ..transforms.stages import ArgInfo, ShapeDtypeStruct
from ..tree_util import register_data_node
from ._impls import PRNGS, THREEFRY, PRNGImpl, default_impl, resolve

_U32 = np.dtype(np.uint32)


class KeyDType(dtypes.ExtendedDType):
    """The dtype of typed key arrays of one PRNG implementation (JAX's ``KeyTy``): prints
    ``key<fry>`` (threefry2x32), ``key<rbg>`` or ``key<urbg>`` (unsafe_rbg); ``impl`` (and
    ``_impl``, JAX's name) is the implementation, ``type`` is ``jax.dtypes.prng_key``.
    Equal only to the dtype of the same implementation (not to its name); a subtype of
    ``jax.dtypes.prng_key`` and ``jax.dtypes.extended`` in ``jnp.issubdtype``."""

    __slots__ = ("impl",)
    type = dtypes.prng_key

    def __init__(self, impl: PRNGImpl):
        self.impl = impl

    @property
    def _impl(self) -> PRNGImpl:
        return self.impl

    @property
    def name(self) -> str:
        return f"key<{self.impl.tag}>"

    @property
    def itemsize(self) -> int:
        return 4 * math.prod(self.impl.key_shape)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType) and other.impl is self.impl

    def __hash__(self) -> int:
        return hash(self.name)

    def _struct_keys(self, struct):
        """Key arrays over the abstract data of ``struct`` (a ShapeDtypeStruct of this
        dtype): what ``eval_shape``/``lower`` trace for a ShapeDtypeStruct of keys."""
        data = ShapeDtypeStruct(tuple(struct.shape) + self.impl.key_shape, _U32,
                                sharding=struct.sharding)
        return PRNGKeyArray(data, self.impl)


_DTYPES = {impl.name: KeyDType(impl) for impl in PRNGS.values()}
KEY_DTYPE = _DTYPES["threefry2x32"]


_NUMBERS = "integer, floating, complexfloating"


def _binary_refusal(name: str, lax_name: str, accepted: str = _NUMBERS,
                    reflected: bool = False):
    """A binary operator of keys raising JAX's TypeError: with a number, jnp's message
    naming both dtypes; with keys, lax's naming what it accepts."""
    def refuse(self, other):
        if isinstance(other, PRNGKeyArray):
            raise TypeError(f"{lax_name} does not accept dtype {self.dtype} at position 0. "
                            f"Accepted dtypes at position 0 are subtypes of {accepted}.")
        pair = (_dtype_name(other), self.dtype) if reflected else (self.dtype,
                                                                   _dtype_name(other))
        raise TypeError(f"{name} does not accept dtypes {pair[0]}, {pair[1]}.")
    refuse.__name__ = f"__{'r' if reflected else ''}{name}__"
    return refuse


def _binary_pair(name: str, lax_name: str, accepted: str = _NUMBERS):
    return (_binary_refusal(name, lax_name, accepted),
            _binary_refusal(name, lax_name, accepted, reflected=True))


def _unary_refusal(name: str, accepted: str):
    def refuse(self):
        raise TypeError(f"{name} does not accept dtype {self.dtype}. Accepted dtypes are "
                        f"subtypes of {accepted}.")
    return refuse


def _abstract_method(name: str):
    """An Array method key arrays do not have: JAX's NotImplementedError when called."""
    def refuse(self, *args, **kwargs):
        raise NotImplementedError(f"Cannot call abstract method {name}")
    refuse.__name__ = name
    return refuse


def _abstract_property(name: str):
    """An Array property key arrays do not have: NotImplementedError when read (JAX)."""
    def refuse(self):
        raise NotImplementedError(f"Cannot call abstract method {name}")
    refuse.__name__ = name
    return property(refuse)


# The Array methods and properties JAX's key arrays raise NotImplementedError for: the
# numeric ones (reductions, sorting, conversion, arithmetic helpers) and a few others.
_ABSTRACT_METHODS = (
    "__array_namespace__", "all", "any", "argmax", "argmin", "argpartition", "argsort",
    "astype", "byteswap", "choose", "clip", "compress", "conj", "conjugate", "cumprod",
    "cumsum", "diagonal", "dot", "item", "max", "mean", "min", "nonzero", "prod", "ptp",
    "repeat", "round", "searchsorted", "sort", "std", "sum", "to_device", "trace", "var",
    "view")
_ABSTRACT_PROPERTIES = ("flat", "imag", "mT", "real")


def _dtype_name(x) -> str:
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return str(dt)
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int32"
    if isinstance(x, float):
        return "float32"
    if isinstance(x, complex):
        return "complex64"
    return type(x).__name__


class PRNGKeyArray:
    """An array of typed PRNG keys (what ``jax.random.key`` returns): shape
    ``data.shape[:-1]``, dtype ``key<tag>`` of its implementation (``key<fry>`` for
    threefry2x32, ``key<rbg>``, ``key<urbg>`` for unsafe_rbg), backed by
    ``uint32[*shape, *key_shape]`` key data (``key_data`` returns it; ``key_shape`` is
    ``(2,)`` for threefry2x32, ``(4,)`` for the rbg implementations).

    As in JAX, key arrays have the shape attributes and methods of arrays (``shape``,
    ``ndim``, ``size``, ``T``, ``reshape``, ``transpose``, ``swapaxes``, ``squeeze``,
    ``flatten``/``ravel``, ``take``, ``copy``, ``block_until_ready``, ``len``, iteration,
    indexing with ``None``/ellipsis/arrays, ``.at[...].get()``/``.set(keys)``), compare with
    ``==``/``!=`` key by key, and pass through ``jnp``'s and ``lax``'s shape functions
    (``stack``, ``concatenate``, ``tile``, ``where``, ``zeros_like``, ...).  Arithmetic,
    ordering and conversion to NumPy raise TypeError; the numeric Array methods and
    properties (``astype``, ``sum``, ``max``, ``sort``, ``item``, ``real``, ...) raise
    NotImplementedError, as JAX's; combining keys of two implementations raises JAX's errors
    (TypeError in comparisons, ValueError in ``concatenate``/``stack``/``where``).
    """

    __slots__ = ("_base", "_impl")
    __array_priority__ = 100        # NumPy defers ``np_array == keys`` to us

    def __init__(self, base, impl: PRNGImpl = THREEFRY):
        self._base = base
        self._impl = impl

    def _with_data(self, base):
        """Keys of this implementation over other key data."""
        return PRNGKeyArray(base, self._impl)

    @property
    def shape(self) -> tuple:
        return tuple(self._base.shape[:self._base.ndim - len(self._impl.key_shape)])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDType:
        return _DTYPES[self._impl.name]

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

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

    def __bool__(self):
        raise TypeError("key array cannot be converted to boolean.")

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        # the key data's own trailing axis stays whole: index the key dimensions only
        if not any(i is Ellipsis for i in idx):
            idx = idx + (Ellipsis,)
        return self._with_data(self._base[idx + (slice(None),)])

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
        name = "equal" if op == "==" else "not_equal"
        if isinstance(other, (list, tuple, dict, set)):
            raise TypeError(f"{op}: cannot compare a key array with a {type(other).__name__}")
        if not isinstance(other, PRNGKeyArray) or other._impl is not self._impl:
            raise TypeError(f"{name} does not accept dtypes {self.dtype}, "
                            f"{_dtype_name(other)}.")
        a, b = _broadcast_data(self, other)
        same = lax.eq(a, b)
        words = [lax.index_in_dim(same, w, -1, False) for w in range(same.shape[-1])]
        both = words[0]
        for w in words[1:]:
            both = lax.bitwise_and(both, w)
        return both if op == "==" else lax.bitwise_not(both)

    def __eq__(self, other):
        return self._compare(other, "==")

    def __ne__(self, other):
        return self._compare(other, "!=")

    __hash__ = None     # unhashable, as arrays

    # no arithmetic, ordering or bitwise operations on keys: JAX's TypeError
    __add__, __radd__ = _binary_pair("add", "add")
    __sub__, __rsub__ = _binary_pair("subtract", "sub")
    __mul__, __rmul__ = _binary_pair("multiply", "mul")
    __truediv__, __rtruediv__ = _binary_pair("true_divide", "div")
    __floordiv__, __rfloordiv__ = _binary_pair("floor_divide", "div")
    __mod__, __rmod__ = _binary_pair("remainder", "rem", "integer, floating")
    __pow__, __rpow__ = _binary_pair("power", "pow", "floating, complexfloating")
    __matmul__, __rmatmul__ = _binary_pair("matmul", "dot_general")
    __and__, __rand__ = _binary_pair("bitwise_and", "and", "integer, bool")
    __or__, __ror__ = _binary_pair("bitwise_or", "or", "integer, bool")
    __xor__, __rxor__ = _binary_pair("bitwise_xor", "xor", "integer, bool")
    __lshift__, __rlshift__ = _binary_pair("left_shift", "shift_left", "integer")
    __rshift__, __rrshift__ = _binary_pair("right_shift", "shift_right_arithmetic", "integer")
    __lt__ = _binary_refusal("less", "lt", "integer, floating, bool")
    __le__ = _binary_refusal("less_equal", "le", "integer, floating, bool")
    __gt__ = _binary_refusal("greater", "gt", "integer, floating, bool")
    __ge__ = _binary_refusal("greater_equal", "ge", "integer, floating, bool")
    __neg__ = _unary_refusal("neg", _NUMBERS)
    __abs__ = _unary_refusal("abs", "floating, complexfloating, signedinteger")
    __invert__ = _unary_refusal("not", "integer, bool")

    def __pos__(self):
        return self

    for _name in _ABSTRACT_METHODS:
        locals()[_name] = _abstract_method(_name)
    for _name in _ABSTRACT_PROPERTIES:
        locals()[_name] = _abstract_property(_name)
    del _name

    def __repr__(self) -> str:
        if isinstance(self._base, Tracer):
            return f"Traced<{self.dtype}{list(self.shape)}> overlaying {self._base!r}"
        return (f"Array({self.shape}, dtype={self.dtype}) overlaying:\n"
                f"{np.asarray(self._base)}")

    __str__ = __repr__

    def __array__(self, dtype=None, copy=None):
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. "
                        "Use jax.random.key_data(arr) if you wish to extract the underlying "
                        "integer array.")


def _broadcast_data(a, b):
    """The key data of two key arrays of one implementation broadcast over their key
    dimensions (NumPy's rules)."""
    key_shape = a._impl.key_shape
    shape = tuple(np.broadcast_shapes(a.shape, b.shape)) + key_shape
    return jnp.broadcast_to(a._base, shape), jnp.broadcast_to(b._base, shape)


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
        """Keys with ``values`` (keys of the same implementation) written at ``idx``;
        TypeError for non-key values or keys of another implementation."""
        if not isinstance(values, PRNGKeyArray):
            raise TypeError(f"keys.at[...].set takes typed keys, not "
                            f"{type(values).__name__} values")
        if values._impl is not self._keys._impl:
            raise TypeError(f"scatter does not accept dtypes {self._keys.dtype}, "
                            f"{values.dtype}.")
        return self._on_words(lambda ref, w: ref.set(values._base[..., w], **kwargs))

    def _on_words(self, fn):
        base = self._keys._base
        words = [fn(base[..., w].at[self._idx], w) for w in range(base.shape[-1])]
        return self._keys._with_data(jnp.stack(words, axis=-1))

    def _refuse(self, *args, **kwargs):
        raise TypeError("typed PRNG keys have no arithmetic: keys.at[...] supports only "
                        "get() and set(keys)")

    add = multiply = mul = divide = power = min = max = apply = _refuse


def _rebuild(impl: PRNGImpl, children):
    """A key array from the data view's leaf: key data (an array, a traced value, an
    abstract value) gives keys; the abstract data of ``eval_shape``/``out_info`` gives a
    ShapeDtypeStruct of keys; a float0 tangent or cotangent of the data gives float0 zeros
    of the keys' shape (JAX's key tangents).  Anything else put in the data's place (a
    sharding, an ArgInfo, an index: what a stage reports per argument) stands for the keys
    and is returned as it is."""
    data = children[0]
    t = type(data)
    if t is ShapeDtypeStruct:
        return ShapeDtypeStruct(data.shape[:len(data.shape) - len(impl.key_shape)],
                                _DTYPES[impl.name], sharding=data.sharding)
    if t is np.ndarray and data.dtype == dtypes.float0:
        return np.zeros(data.shape[:data.ndim - len(impl.key_shape)], dtypes.float0)
    if t is ArgInfo or not (hasattr(data, "shape") and hasattr(data, "dtype")):
        return data
    return PRNGKeyArray(data, impl)


# a leaf to users, a node over its key data to the transformations (tree_util's data view)
register_data_node(PRNGKeyArray, lambda k: ((k._base,), k._impl), _rebuild)
register_key_type(PRNGKeyArray)


# ---- checking key arguments -----------------------------------------------------------

def _check_key_data(data, impl: PRNGImpl):
    """Raises TypeError unless ``data`` is a uint32 array ending in ``impl``'s key shape."""
    ks = impl.key_shape
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError(f"invalid PRNG key data: {data!r} is not an array (a key is a "
                        f"uint32 array whose last dimension is {ks[-1]}, or a typed key)")
    if data.ndim < len(ks):
        raise TypeError(f"invalid PRNG key data: a rank-{data.ndim} array; raw {impl.name} "
                        f"key data has at least one dimension (the last of size {ks[-1]})")
    if tuple(data.shape[data.ndim - len(ks):]) != ks:
        raise TypeError(f"invalid PRNG key data of shape {tuple(data.shape)}: {impl.name} "
                        f"key data must have a last dimension of size {ks[-1]} (JAX: "
                        f"expected key_data.shape to end with {ks})")
    if np.dtype(data.dtype) != _U32:
        raise TypeError(f"invalid PRNG key data of dtype {np.dtype(data.dtype).name}: "
                        f"{impl.name} key data must be uint32 (JAX: expected "
                        f"key_data.dtype = uint32)")


def _as_array(x):
    if isinstance(x, (ArrayImpl, Tracer)):
        return x
    return jnp.asarray(x)


def as_typed_keys(key):
    """``(typed keys, was_typed)`` for a typed key array or raw key data; raw data is
    taken as keys of the default implementation (``jax_default_prng_impl``).

    Raises TypeError for anything else (lists, Python scalars, arrays that are not
    ``uint32[..., *key_shape]`` of the default implementation).
    """
    if isinstance(key, PRNGKeyArray):
        return key, True
    if isinstance(key, (list, tuple, dict, str)):
        raise TypeError(f"a PRNG key must be an array (typed key or uint32 key data), got a "
                        f"{type(key).__name__}: {key!r}")
    impl = default_impl()
    _check_key_data(key, impl)
    return PRNGKeyArray(_as_array(key), impl), False


def unpack_keys(key):
    """``(raw key data, typed)`` for a typed key array or raw key data (see
    ``as_typed_keys``)."""
    keys, typed = as_typed_keys(key)
    return keys._base, typed


def unpack_key(key, name: str):
    """``(one typed key, was_typed)`` for the functions that take one key (raw key data is
    wrapped as keys of the default implementation); the samplers draw from the typed key
    (``key_split``, ``key_bits``), whatever its implementation.  Raises ValueError for a
    batch of keys (JAX's message: use vmap), TypeError for a non-key."""
    keys, typed = as_typed_keys(key)
    if keys.shape:
        raise ValueError(f"{name} takes one key, but this key array has shape "
                         f"{keys.shape if typed else tuple(keys._base.shape)} rather "
                         "than (); map over a batch of keys with jax.vmap.")
    return keys, typed


def pack(keys, typed: bool):
    """Keys back in the caller's style (typed keys in, typed keys out; raw in, raw out)."""
    return keys if typed else keys._base


def key_split(key, shape: tuple):
    """Typed keys of ``shape`` split from one typed key, by its implementation."""
    return key._with_data(key._impl.split(key._base, tuple(shape)))


def key_bits(key, bit_width: int, shape: tuple):
    """``uint{bit_width}[*shape]`` random bits from one typed key, by its implementation."""
    return key._impl.random_bits(key._base, bit_width, tuple(shape))


def key_at(keys, i: int):
    """Key ``i`` of a one-dimensional typed key array (a static index)."""
    data = keys._base
    width = data.shape[-1]
    row = lax.slice(data, (i, 0), (i + 1, width))
    return keys._with_data(lax.reshape(row, (width,)))


def split2(key):
    """The two keys of ``split(key)``."""
    keys = key_split(key, (2,))
    return key_at(keys, 0), key_at(keys, 1)


def is_threefry(key) -> bool:
    return key._impl is THREEFRY


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
    """A typed PRNG key (shape ``()``) from an integer seed (``jax.random.key``).

    Args:
      seed: a Python int (within int64), a NumPy integer or an integer scalar array
        (traced values allowed).  With x64 off only the low 32 bits matter.
      impl: the implementation: None (``jax_default_prng_impl``, ``threefry2x32`` unless
        set), ``"threefry2x32"`` (dtype ``key<fry>``), ``"rbg"`` (``key<rbg>``),
        ``"unsafe_rbg"`` (``key<urbg>``), or a key dtype.

    Raises:
      TypeError: non-integer seed, a non-scalar array, or a key passed as seed; an
        ``impl`` of another type.
      ValueError: an unknown ``impl`` name.
      OverflowError: a Python int outside int64.

    Example::

        k = jax.random.key(0)               # Array((), dtype=key<fry>) overlaying [0 0]
        r = jax.random.key(0, impl="rbg")   # Array((), dtype=key<rbg>) overlaying [0 0 0 0]
    """
    impl = resolve(impl)
    return PRNGKeyArray(impl.seed(_seed_words(seed, "key")), impl)


def PRNGKey(seed, *, impl=None):
    """A raw (legacy) PRNG key from an integer seed (``jax.random.PRNGKey``): the key data
    of ``key(seed, impl=impl)``; for threefry2x32 ``uint32[2]``
    ``[seed >> 32, seed & 0xFFFFFFFF]`` (high word 0 with x64 off), for the rbg
    implementations ``uint32[4]``, those two words twice.  Errors as ``key``.

    Raw keys of an implementation other than the default one are taken by the samplers as
    keys of the default one, as in JAX: use typed keys (``key``) to mix implementations.

    Example::

        jax.random.PRNGKey(42)       # Array([ 0, 42], dtype=uint32)
    """
    impl = resolve(impl)
    return impl.seed(_seed_words(seed, "PRNGKey"))


def key_dtype(impl_spec=None):
    """The dtype of typed keys of an implementation (``jax.random.key_dtype``):
    ``key<fry>`` (threefry2x32, the default unless ``jax_default_prng_impl`` says
    otherwise), ``key<rbg>``, ``key<urbg>`` (unsafe_rbg).

    Raises:
      ValueError: an unknown implementation name.  TypeError: a spec of another type.
    """
    return _DTYPES[resolve(impl_spec).name]


def key_data(keys):
    """The raw ``uint32[*keys.shape, *key_shape]`` data of typed keys; raw key data (of
    the default implementation) is returned as it is (``jax.random.key_data``).  Raises
    TypeError for anything that is not a key."""
    data, _ = unpack_keys(keys)
    return data


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys of implementation ``impl`` (default: ``jax_default_prng_impl``) over raw
    ``uint32[..., *key_shape]`` data (``jax.random.wrap_key_data``).

    Raises:
      TypeError: data that is not a uint32 array ending in the implementation's key shape
        (``(2,)`` for threefry2x32, ``(4,)`` for rbg and unsafe_rbg), or a typed key array.
      ValueError: an unknown implementation name.
    """
    impl = resolve(impl)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("invalid PRNG key data: wrap_key_data takes raw uint32 key data, "
                        "not a typed key array")
    _check_key_data(key_bits_array, impl)
    return PRNGKeyArray(_as_array(key_bits_array), impl)


def key_impl(keys):
    """The name of the implementation behind ``keys`` (``jax.random.key_impl``):
    ``"threefry2x32"``, ``"rbg"`` or ``"unsafe_rbg"``; raw key data belongs to the
    default implementation.  Raises TypeError for a non-key."""
    typed, _ = as_typed_keys(keys)
    return typed._impl.name


def clone(key):
    """``key`` itself: jaxlite keys are immutable values (``jax.random.clone``)."""
    return key


def split(key, num=2):
    """``num`` new keys from one key (``jax.random.split``); ``num`` may be a shape tuple.

    Args:
      key: a typed key (shape ``()``) or a raw key of the default implementation.
      num: a non-negative int or a tuple of them.

    Returns:
      Keys of shape ``num`` (typed in, typed out; raw keys as ``uint32[*num, *key_shape]``),
      by the key's implementation.  For threefry2x32, key ``i`` of ``split(k, n)`` equals
      ``fold_in(k, i)``.

    Raises:
      ValueError: a batch of keys, or a negative count.  TypeError: not a key.
    """
    k, typed = unpack_key(key, "split")
    shape = _shape(num, "split")
    return pack(key_split(k, shape), typed)


def fold_in(key, data):
    """A new key mixing integer ``data`` (a uint32 scalar) into ``key``
    (``jax.random.fold_in``), by the key's implementation.

    Raises:
      OverflowError: a Python int outside [0, 2**32).
      TypeError: non-scalar ``data`` or a non-key.  ValueError: a batch of keys.
    """
    k, typed = unpack_key(key, "fold_in")
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
    return pack(k._with_data(k._impl.fold_in(k._base, d)), typed)


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
