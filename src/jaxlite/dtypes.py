"""Dtypes, canonicalisation and JAX's type-promotion lattice.

Layer: bottom.  Rules (JAX's, see "Type promotion semantics" in JAX's docs):
- Without ``jax_enable_x64`` every 64-bit type is narrowed to its 32-bit kin.
- Python scalars are *weakly typed*: they take the dtype of the array they meet.
- Two dtypes promote to their least upper bound in the lattice
  b1 -> i* -> {u8, i8}; u8 -> {u16, i16} ... i64, u64 -> f* -> {bf16, f16} -> f32 -> f64;
  f* -> c* -> c64 -> c128; f32 -> c64; f64 -> c128, where i*, f*, c* are the weak kinds.
  The narrow types (float8/float6/float4, int4/int2/int1 and unsigned kin, from ml_dtypes)
  are leaves above f* and i* respectively: two dtypes with no common upper bound raise
  TypePromotionError (``float8_e4m3fn`` with ``float16``, ``int4`` with ``int8``).
  With x64 off, uint32 joined with a signed type of at most 32 bits gives int32 (the
  lattice would say int64, which is not available).
- The scalar types (``jaxlite.numpy.float32`` ...) compare and hash equal to NumPy's, work
  wherever a dtype is expected, and when called build a jaxlite array (``jnp.float32(3)``).
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from .config import config

_BOOL = np.dtype(np.bool_)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_I32, _I64 = np.dtype(np.int32), np.dtype(np.int64)
_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)

# The narrow types (ml_dtypes'): floats of 8 bits or fewer, integers of 1, 2 and 4 bits.
# Each is a leaf of the promotion lattice (see _build_lattice): it meets only itself,
# bool, the weak kinds below it and, for the floats, every integer type.
_NARROW_FLOAT_NAMES = (
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn",
    "float6_e3m2fn")
# (int1/uint1 came with a later ml_dtypes than the rest: present when it has them, as in JAX)
_NARROW_INT_NAMES = tuple(n for n in ("int4", "uint4", "int2", "uint2", "int1", "uint1")
                          if hasattr(ml_dtypes, n))
_NARROW_FLOATS = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in _NARROW_FLOAT_NAMES)
_NARROW_INTS = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in _NARROW_INT_NAMES)
_FLOAT_KIND = frozenset([_BF16]) | _NARROW_FLOATS
_KIND = {d: ("i" if d.name.startswith("int") else "u") for d in _NARROW_INTS}
_KIND.update({d: "f" for d in _FLOAT_KIND})

_SUPPORTED = frozenset([np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)] + [_BF16]
) | _NARROW_FLOATS | _NARROW_INTS


class TypePromotionError(ValueError):
    """Two dtypes have no implicit promotion (``jax.dtypes.TypePromotionError``, a
    ValueError): a narrow float or a 1/2/4-bit integer type met a type it does not
    promote with."""

_NARROW = {
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


# ---- scalar types ---------------------------------------------------------------------

_scalar_constructor = None


def register_scalar_constructor(fn) -> None:
    """Installs ``fn(value, dtype) -> Array``, what calling a scalar type does.

    The numpy layer registers ``asarray`` here (this module sits below it and may not
    import it)."""
    global _scalar_constructor
    _scalar_constructor = fn


class _ScalarMeta(type):
    """Metaclass of the scalar types: equal (and hash-equal) to the NumPy type, so that
    ``x.dtype == jnp.float32`` and ``{np.float32: ...}[jnp.float32]`` work."""

    def __eq__(cls, other):
        # compared through the NumPy type, both ways, as JAX's scalar types compare:
        # ``np.int32 == np.dtype('int32')`` is True, ``np.int32 == 'int32'`` is False
        if other is cls:
            return True
        if isinstance(other, _ScalarMeta):
            return other.dtype == cls.dtype
        return cls.dtype.type == other

    def __ne__(cls, other):
        return not _ScalarMeta.__eq__(cls, other)

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)   # NumPy scalars, not Arrays

    def __repr__(cls):
        return f"<class 'jaxlite.numpy.{cls.__name__}'>"

    def __call__(cls, x):
        if _scalar_constructor is None:
            raise RuntimeError("jaxlite.numpy is not imported")
        return _scalar_constructor(x, cls.dtype)


def _scalar_type(name: str, np_type) -> type:
    return _ScalarMeta(name, (), {
        "dtype": np.dtype(np_type),
        "__doc__": f"The ``{name}`` scalar type (``jax.numpy.{name}``): a dtype, and when "
                   f"called, ``{name}(x)`` is ``jaxlite.numpy.asarray(x, {name})``.",
        "__module__": __name__,
    })


bool_ = _scalar_type("bool_", np.bool_)
int8, int16 = _scalar_type("int8", np.int8), _scalar_type("int16", np.int16)
int32, int64 = _scalar_type("int32", np.int32), _scalar_type("int64", np.int64)
uint8, uint16 = _scalar_type("uint8", np.uint8), _scalar_type("uint16", np.uint16)
uint32, uint64 = _scalar_type("uint32", np.uint32), _scalar_type("uint64", np.uint64)
float16, float32 = _scalar_type("float16", np.float16), _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
float8_e3m4 = _scalar_type("float8_e3m4", ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type("float8_e4m3", ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type("float8_e4m3fn", ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type("float8_e5m2", ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = _scalar_type("float4_e2m1fn", ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type("float6_e2m3fn", ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type("float6_e3m2fn", ml_dtypes.float6_e3m2fn)
int4, uint4 = _scalar_type("int4", ml_dtypes.int4), _scalar_type("uint4", ml_dtypes.uint4)
int2, uint2 = _scalar_type("int2", ml_dtypes.int2), _scalar_type("uint2", ml_dtypes.uint2)
if hasattr(ml_dtypes, "int1"):
    int1 = _scalar_type("int1", ml_dtypes.int1)
    uint1 = _scalar_type("uint1", ml_dtypes.uint1)


#: The dtype of tangents/cotangents of integer and boolean values (``jax.dtypes.float0``):
#: zero bytes per element, so such a tangent carries no information.
float0 = np.dtype([("float0", np.void, 0)])


class extended(np.generic):
    """The abstract scalar type of the dtypes NumPy does not have (``jax.dtypes.extended``),
    for ``issubdtype`` only: ``issubdtype(jax.random.key(0).dtype, jax.dtypes.extended)``
    is True, ``issubdtype(np.uint32, jax.dtypes.extended)`` False.  Never instantiated."""


class prng_key(extended):
    """The abstract scalar type of the typed PRNG key dtypes (``jax.dtypes.prng_key``):
    ``issubdtype(jax.random.key(0).dtype, jax.dtypes.prng_key)`` is True whatever the
    key's implementation.  Never instantiated."""


class ExtendedDType:
    """Base of the dtypes that are no NumPy dtype (the random module's typed key dtypes,
    ``key<fry>``): ``type`` is a subclass of ``extended``, ``name`` the printed form.
    ``issubdtype`` places them under ``type``; NumPy cannot convert them (``np.dtype(d)``
    raises TypeError)."""

    __slots__ = ()
    type = extended


def _to_dtype(x) -> np.dtype:
    """np.dtype of a dtype-like (dtype, type, scalar type, name); TypeError otherwise."""
    if isinstance(x, np.dtype):
        return x
    if isinstance(x, _ScalarMeta):
        return x.dtype
    try:
        return np.dtype(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Cannot interpret {x!r} as a data type: {e}") from None


# ---- canonicalisation -----------------------------------------------------------------

def x64_enabled() -> bool:
    return config.jax_enable_x64


@functools.lru_cache(maxsize=None)
def _canon(dt: np.dtype, x64: bool) -> np.dtype:
    if dt not in _SUPPORTED:
        raise TypeError(f"JAX only supports number and bool dtypes, got dtype {dt}")
    return dt if x64 else _NARROW.get(dt, dt)


def canonicalize_dtype(dtype) -> np.dtype:
    """The dtype jaxlite stores for ``dtype``: 64-bit types narrowed unless x64 is on
    (``jax.dtypes.canonicalize_dtype``).  ``canonicalize_dtype(np.float64)`` is float32 with
    x64 off.

    Raises TypeError for dtypes JAX does not support (strings, objects, datetimes).
    """
    if type(dtype) is not np.dtype:
        dtype = _to_dtype(dtype)
    return _canon(dtype, config.jax_enable_x64)


def explicit_dtype(dtype, name: str) -> np.dtype:
    """The canonical dtype of a dtype a user requested explicitly from ``name`` (a
    ``preferred_element_type``).  With 64-bit types off a 64-bit request is truncated to
    its 32-bit type with JAX's UserWarning (naming ``name``: ``dot``, ``matmul``,
    ``einsum``, ``tensordot``, ``conv_general_dilated``); Python's ``int``/``float``/
    ``complex`` mean the default widths and do not warn.  TypeError as
    ``canonicalize_dtype``."""
    dt = canonicalize_dtype(dtype)
    if dtype in (int, float, complex, bool) or config.jax_enable_x64:
        return dt
    requested = _to_dtype(dtype)
    if requested != dt:
        import warnings
        from ._traceback import user_stacklevel
        warnings.warn(f"Explicitly requested dtype {requested} requested in {name} is not "
                      f"available, and will be truncated to dtype {dt}. To enable more "
                      f"dtypes, set the jax_enable_x64 configuration option or the "
                      f"JAX_ENABLE_X64 shell environment variable. See "
                      f"https://github.com/jax-ml/jax#current-gotchas for more.",
                      UserWarning, stacklevel=user_stacklevel())
    return dt


def default_int_dtype() -> np.dtype:
    return _I64 if config.jax_enable_x64 else _I32


def default_uint_dtype() -> np.dtype:
    return _U64 if config.jax_enable_x64 else _U32


def default_float_dtype() -> np.dtype:
    return np.dtype(np.float64 if config.jax_enable_x64 else np.float32)


def default_complex_dtype() -> np.dtype:
    return np.dtype(np.complex128 if config.jax_enable_x64 else np.complex64)


def python_scalar_dtype(x) -> np.dtype:
    """Canonical dtype of a Python scalar: bool, then the default int/float/complex."""
    if isinstance(x, bool):
        return _BOOL
    if isinstance(x, int):
        return default_int_dtype()
    if isinstance(x, float):
        return default_float_dtype()
    if isinstance(x, complex):
        return default_complex_dtype()
    raise TypeError(f"{type(x).__name__} is not a Python scalar type")


# ---- the lattice ----------------------------------------------------------------------

# Weak kinds are the strings "i*", "f*", "c*"; every other node is a np.dtype.
_WEAK_NODE = {"i": "i*", "u": "i*", "f": "f*", "c": "c*"}
_PY_TYPE_NODE = {int: "i*", float: "f*", complex: "c*"}
_PY_SCALAR_TYPES = frozenset((bool, int, float, complex))


def _node(dt: np.dtype, weak: bool):
    if weak and dt != _BOOL:
        return _WEAK_NODE[kind(dt)]
    return dt


def _build_lattice():
    d = np.dtype
    b, u8, u16, u32, u64 = _BOOL, d(np.uint8), d(np.uint16), d(np.uint32), d(np.uint64)
    i8, i16, i32, i64 = d(np.int8), d(np.int16), d(np.int32), d(np.int64)
    f16, f32, f64, bf16 = d(np.float16), d(np.float32), d(np.float64), _BF16
    c64, c128 = d(np.complex64), d(np.complex128)
    up = {
        b: ["i*"], "i*": [u8, i8], u8: [i16, u16], u16: [i32, u32], u32: [i64, u64],
        u64: ["f*"], i8: [i16], i16: [i32], i32: [i64], i64: ["f*"],
        "f*": [bf16, f16, "c*"], bf16: [f32], f16: [f32], f32: [f64, c64], f64: [c128],
        "c*": [c64], c64: [c128], c128: [],
    }
    # the narrow types are leaves: above the weak kind only, so that they meet bool, Python
    # scalars and (floats) every integer type, and nothing else
    up["f*"] += sorted(_NARROW_FLOATS, key=str)
    up["i*"] += sorted(_NARROW_INTS, key=str)
    up.update({n: [] for n in _NARROW_FLOATS | _NARROW_INTS})
    upper = {}  # upper[n]: every node reachable from n, n included

    def reach(n):
        if n not in upper:
            s = {n}
            for m in up[n]:
                s |= reach(m)
            upper[n] = frozenset(s)
        return upper[n]

    for n in up:
        reach(n)
    return upper


_UPPER = _build_lattice()


@functools.lru_cache(maxsize=4096)
def _lub(nodes: frozenset, x64: bool):
    """Least upper bound of lattice ``nodes``."""
    it = iter(nodes)
    common = _UPPER[next(it)]
    for n in it:
        common = common & _UPPER[n]
    for c in common:
        if _UPPER[c] == common:
            if c == _I64 and not x64 and _I64 not in nodes:
                return _I32  # uint32 with a signed type: int64 is not available
            return c
    raise _promotion_error(nodes)


_WEAK_NAMES = {"i*": "int", "f*": "float", "c*": "complex"}


def _promotion_error(nodes) -> TypePromotionError:
    names = sorted(_WEAK_NAMES.get(n, str(n)) for n in nodes)
    if any(n in _NARROW_FLOATS for n in nodes):
        why = ("floating types of 8 bits or fewer promote only with bool, integer types and "
               "Python int/float, never implicitly to another floating or complex type")
    else:
        why = ("1-, 2- and 4-bit integer types promote only with bool and Python int, never "
               "implicitly to another numeric type")
    return TypePromotionError(
        f"Input dtypes {tuple(names)} have no implicit promotion path: {why}. Convert "
        f"explicitly first, e.g. x.astype('float32') or x.astype('int32').")


def _node_dtype(n) -> np.dtype:
    if isinstance(n, str):
        return {"i*": default_int_dtype(), "f*": default_float_dtype(),
                "c*": default_complex_dtype()}[n]
    return n


# ---- result_type ----------------------------------------------------------------------

def dtype_and_weak(x):
    """(canonical dtype, weak_type) of an operand: an Array or tracer, a NumPy value, a
    Python scalar, a dtype, a scalar type or a Python scalar type (int/float/complex are
    weak).  Raises TypeError for anything else (lists, strings, objects)."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    t = type(x)
    if t in _PY_SCALAR_TYPES:   # exact types: np.float64 is a float subclass, and strong
        return python_scalar_dtype(x), t is not bool
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize_dtype(x.dtype), False
    if isinstance(x, type):
        if x in _PY_TYPE_NODE:
            return python_scalar_dtype(x()), True
        if x is bool:
            return _BOOL, False
        return canonicalize_dtype(_to_dtype(x)), False
    if isinstance(x, (np.dtype, str)):
        return canonicalize_dtype(x), False
    if x is None:
        return default_float_dtype(), False
    raise TypeError(f"Cannot determine dtype of {x!r} (type {type(x).__name__}): expected an "
                    f"array, a scalar or a dtype.")


@functools.lru_cache(maxsize=4096)
def _join(pairs: tuple, x64: bool):
    """pairs: tuple of (canonical dtype, weak).  Returns (dtype, weak)."""
    first = pairs[0]
    if all(p == first for p in pairs):
        return first
    node = _lub(frozenset(_node(d, w) for d, w in pairs), x64)
    return _canon(_node_dtype(node), x64), isinstance(node, str)


def _lattice_result(pairs):
    """pairs: iterable of (canonical dtype, weak).  Returns (dtype, weak)."""
    return _join(tuple(pairs), config.jax_enable_x64)


def result_type_and_weak(*args):
    """Like ``result_type`` but also says whether the result is weakly typed."""
    if not args:
        raise ValueError("result_type needs at least one argument (an array or a dtype)")
    if len(args) == 1:
        return dtype_and_weak(args[0])
    return _join(tuple([dtype_and_weak(a) for a in args]), config.jax_enable_x64)


def result_type(*args, return_weak_type_flag: bool = False):
    """Dtype an operation on ``args`` produces (``jax.numpy.result_type``).

    Args may be arrays, NumPy values, Python scalars, dtypes, scalar types or Python scalar
    types; Python scalars and ``int``/``float``/``complex`` are weak.  The result is
    canonical (no 64-bit types with x64 off): ``result_type(jnp.int8, 1.0)`` is float32.

    Raises ValueError with no arguments, TypeError for unsupported dtypes or non-array
    arguments.
    """
    dt, weak = result_type_and_weak(*args)
    return (dt, weak) if return_weak_type_flag else dt


def _promote_node(x):
    if isinstance(x, type) and x in _PY_TYPE_NODE:
        return _PY_TYPE_NODE[x]
    dt = _to_dtype(x)
    if dt not in _SUPPORTED:
        raise TypeError(f"dtype={dt!r} takes no part in JAX's type promotion (not a "
                        f"supported dtype).")
    return dt


def promote_types(a, b) -> np.dtype:
    """The dtype both ``a`` and ``b`` promote to (``jax.numpy.promote_types``).

    Strong promotion of two dtypes, without canonicalisation: ``promote_types(int64, int8)``
    is int64 even with x64 off.  ``int``/``float``/``complex`` count as weak.

    Raises TypeError for dtypes JAX does not support.
    """
    node = _lub(frozenset((_promote_node(a), _promote_node(b))), config.jax_enable_x64)
    if isinstance(node, str):
        return {"i*": _I64, "f*": np.dtype(np.float64), "c*": np.dtype(np.complex128)}[node]
    return node


# ---- dtype classes --------------------------------------------------------------------

def kind(dt) -> str:
    """NumPy's kind letter of ``dt`` ('b', 'i', 'u', 'f', 'c'), ml_dtypes' types
    classified as JAX does: bfloat16 and the narrow floats 'f', int4/int2/int1 'i',
    uint4/uint2/uint1 'u' (NumPy itself says 'V' for all of them)."""
    dt = np.dtype(dt)
    return _KIND.get(dt, dt.kind)


_ML_TYPE_KIND = {d.type: k for d, k in _KIND.items()}


def _ml_dtype(x):
    """The np.dtype of ``x`` when it names one of ml_dtypes' types, else None."""
    if isinstance(x, type) and issubclass(x, np.generic):
        return np.dtype(x) if x in _ML_TYPE_KIND else None
    try:
        dt = np.dtype(x)
    except (TypeError, ValueError):
        return None
    return dt if dt in _KIND else None


_ML_SUPERS = {"f": (np.floating, np.inexact, np.number, np.generic),
              "i": (np.signedinteger, np.integer, np.number, np.generic),
              "u": (np.unsignedinteger, np.integer, np.number, np.generic)}


def issubdtype(arg1, arg2) -> bool:
    """Whether ``arg1`` is a subtype of ``arg2`` in NumPy's hierarchy, bfloat16 and the
    narrow floats counting as floating types and int4/uint4/... as signed/unsigned integer
    types (``jax.numpy.issubdtype``).

    ``issubdtype(jnp.bfloat16, np.floating)`` is True; ``issubdtype(jnp.bfloat16,
    np.float16)`` is False; ``issubdtype(jnp.int4, np.signedinteger)`` is True.  A typed
    key dtype is a subtype of ``prng_key``, ``extended`` and ``np.generic``, of itself, and
    of nothing else.
    """
    if isinstance(arg1, ExtendedDType):
        if isinstance(arg2, ExtendedDType):     # key<fry> is not a subtype of key<rbg>
            return arg1 == arg2
        arg1 = arg1.type
    if isinstance(arg2, ExtendedDType):
        arg2 = arg2.type
    a = arg1.dtype.type if isinstance(arg1, _ScalarMeta) else arg1
    b = arg2.dtype.type if isinstance(arg2, _ScalarMeta) else arg2
    if isinstance(a, type) and issubclass(a, extended):
        # NumPy converts neither side to a dtype: compare the scalar types themselves
        return issubclass(a, b if isinstance(b, type) else np.dtype(b).type)
    ml = _ml_dtype(a)
    if ml is not None:
        return b in _ML_SUPERS[_KIND[ml]] or _ml_dtype(b) == ml
    return bool(np.issubdtype(a, b))


def is_float(dt) -> bool:
    return kind(dt) == "f"


def is_inexact(dt) -> bool:
    return kind(dt) in "fc"


def is_int(dt) -> bool:
    return kind(dt) in "iu"


# The types NumPy cannot compute in (or, float16, computes in differently from XLA), and
# the type their operations run in: float16, bfloat16 and the narrow floats in float32
# (rounded back to the operand type once, as XLA on CPU); the narrow integers in a byte
# (converting back keeps the low bits: the wrap-around of the narrow type).
_COMPUTE = {d: np.dtype(np.float32) for d in [np.dtype(np.float16), _BF16, *_NARROW_FLOATS]}
_COMPUTE.update({d: np.dtype(np.int8 if _KIND[d] == "i" else np.uint8) for d in _NARROW_INTS})
UPCAST = frozenset(_COMPUTE)
"""The dtypes whose implementations compute in ``compute_dtype(dt)``."""
NO_NAN = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"))
"""Floating types without NaN: XLA converts every NaN to -0.0 there (ml_dtypes' own cast
gives -0.0 for NaN but +0.0 for a NaN with its sign bit set, such as x86's default
NaN from ``sqrt(-1)``): ``xla_nan_sign`` makes NumPy's cast agree."""


def xla_nan_sign(x):
    """``x`` (float32/float16 values about to be cast to a type of ``NO_NAN``) with every
    NaN positive, so that the cast gives -0.0 for each, as XLA's conversion does."""
    if not isinstance(x, (np.ndarray, np.generic)) or x.dtype.kind != "f":
        return x
    nan = np.isnan(x)
    return np.where(nan, np.abs(x), x) if nan.any() else x


VIA_FLOAT16 = _NARROW_FLOATS - {np.dtype(ml_dtypes.float8_e8m0fnu)}
"""Narrow floats whose elementwise results XLA on CPU rounds to float16 before rounding
to the narrow type (float32 -> float16 -> float8: ``sqrt`` of float8_e3m4 0.96875 is 1.0,
not 0.96875); float8_e8m0fnu's range needs float32, and it rounds from there."""


def compute_dtype(dt) -> np.dtype:
    """The dtype an operation on ``dt`` operands computes in: float32 for float16,
    bfloat16 and the narrow floats, int8/uint8 for the narrow integers, ``dt`` itself
    otherwise.  The result is converted back to the operation's dtype."""
    dt = np.dtype(dt)
    return _COMPUTE.get(dt, dt)


@functools.lru_cache(maxsize=None)
def supports_inf(dt) -> bool:
    """Whether floating ``dt`` represents infinity: float8_e4m3fn, the fnuz types,
    float8_e8m0fnu, float4 and float6 do not (overflow saturates or gives NaN)."""
    with np.errstate(all="ignore"):
        return bool(np.isinf(np.array(np.inf, np.float32).astype(dt).astype(np.float32)))


def float_bounds(dt) -> tuple:
    """(lowest, highest) of floating ``dt`` as Python floats: -inf and inf where ``dt``
    has them, else its finite extremes (float8_e4m3fn: -448, 448) — the identities of
    max and min, as JAX takes them."""
    dt = np.dtype(dt)
    if supports_inf(dt):
        return -np.inf, np.inf
    info = finfo(dt)
    return float(info.min), float(info.max)


def itemsize_bits(dtype) -> int:
    """Bits one element of ``dtype`` takes in JAX's packed layout (``jax.dtypes.
    itemsize_bits``): 4 for int4 and float4_e2m1fn, 6 for the float6 types, 8 for bool,
    the item size times 8 otherwise.  (jaxlite stores every narrow element in one byte,
    as NumPy does.)  Raises TypeError for a non-dtype."""
    dt = _to_dtype(dtype)
    if dt in _NARROW_INTS:
        return ml_dtypes.iinfo(dt).bits
    if dt in _NARROW_FLOATS:
        return ml_dtypes.finfo(dt).bits
    return dt.itemsize * 8


def _info_dtype(x) -> np.dtype:
    dt = getattr(x, "dtype", None)
    if isinstance(dt, np.dtype) and not isinstance(x, type):
        return dt
    return _to_dtype(x)


def finfo(dtype):
    """Machine limits of a floating dtype, bfloat16 and the narrow floats included
    (``jax.numpy.finfo``).

    Accepts a dtype, a scalar type or an array; complex dtypes give their real part's
    limits.  Raises ValueError for integer and bool dtypes.
    """
    dt = _info_dtype(dtype)
    if dt.kind == "c":
        dt = np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
    if not is_float(dt):
        raise ValueError(f"data type {dt.type} not inexact")
    return ml_dtypes.finfo(dt)


def iinfo(int_type):
    """Machine limits of an integer dtype, int4/uint4/int2/... included
    (``jax.numpy.iinfo``): ``.min``, ``.max``, ``.bits``.  Raises ValueError for float and
    bool dtypes."""
    dt = _info_dtype(int_type)
    if not is_int(dt):
        raise ValueError(f"Invalid integer data type {dt.kind!r}.")
    return ml_dtypes.iinfo(dt)


def short_name(dt) -> str:
    """JAX's short dtype name used in IR text: f32, i32, bf16, bool, c64, u8."""
    dt = np.dtype(dt)
    if dt == _BOOL:
        return "bool"
    if dt == _BF16:
        return "bf16"
    if dt in _NARROW_FLOATS:
        return "f" + dt.name[len("float"):]          # float8_e4m3fn -> f8_e4m3fn
    if dt in _NARROW_INTS:
        return f"{_KIND[dt]}{ml_dtypes.iinfo(dt).bits}"
    return f"{dt.kind if dt.kind != 'V' else 'bf'}{dt.itemsize * 8}"


def to_inexact_dtype(dt) -> np.dtype:
    """The inexact dtype JAX computes a bool/integer dtype in (``jnp.sin(int)``,
    ``jnp.mean(int)``): float64 for 64-bit integers (canonicalised), else float32; inexact
    dtypes are returned unchanged."""
    dt = np.dtype(dt)
    if is_inexact(dt):
        return dt
    return canonicalize_dtype(np.float64) if dt.itemsize == 8 else np.dtype(np.float32)
