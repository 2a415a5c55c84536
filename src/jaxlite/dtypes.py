"""Dtypes, canonicalisation and JAX's type-promotion lattice.

Layer: bottom.  Rules (JAX's, see "Type promotion semantics" in JAX's docs):
- Without ``jax_enable_x64`` every 64-bit type is narrowed to its 32-bit kin.
- Python scalars are *weakly typed*: they take the dtype of the array they meet.
- Two dtypes promote to their least upper bound in the lattice
  b1 -> i* -> {u8, i8}; u8 -> {u16, i16} ... i64, u64 -> f* -> {bf16, f16} -> f32 -> f64;
  f* -> c* -> c64 -> c128; f32 -> c64; f64 -> c128, where i*, f*, c* are the weak kinds.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from .config import config

bfloat16 = np.dtype(ml_dtypes.bfloat16).type
bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

_BOOL = np.dtype(np.bool_)
_BF16 = np.dtype(bfloat16)

_SUPPORTED = [np.dtype(t) for t in (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, float32, float64, complex64, complex128)] + [_BF16]

_NARROW = {
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def x64_enabled() -> bool:
    return config.jax_enable_x64


@functools.lru_cache(maxsize=None)
def _canon(dt: np.dtype, x64: bool) -> np.dtype:
    if dt not in _SUPPORTED:
        raise TypeError(f"JAX only supports number and bool dtypes, got dtype {dt}")
    return dt if x64 else _NARROW.get(dt, dt)


def canonicalize_dtype(dtype) -> np.dtype:
    """The dtype jaxlite stores for ``dtype``: 64-bit types narrowed unless x64 is on.

    Raises TypeError for dtypes JAX does not support (strings, objects, datetimes).
    """
    return _canon(np.dtype(dtype), config.jax_enable_x64)


def default_int_dtype() -> np.dtype:
    return np.dtype(np.int64 if config.jax_enable_x64 else np.int32)


def default_uint_dtype() -> np.dtype:
    return np.dtype(np.uint64 if config.jax_enable_x64 else np.uint32)


def default_float_dtype() -> np.dtype:
    return np.dtype(np.float64 if config.jax_enable_x64 else np.float32)


def default_complex_dtype() -> np.dtype:
    return np.dtype(np.complex128 if config.jax_enable_x64 else np.complex64)


# Python scalar types -> the weak "kind" node of the lattice.
_WEAK_KIND = {int: "i*", float: "f*", complex: "c*"}


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


def _node(dt: np.dtype, weak: bool):
    if weak and dt != _BOOL:
        return {"i": "i*", "u": "i*", "f": "f*", "V": "f*", "c": "c*"}[dt.kind] \
            if dt != _BF16 else "f*"
    return dt


def _build_lattice():
    d = np.dtype
    b, u8, u16, u32, u64 = _BOOL, d(uint8), d(uint16), d(uint32), d(uint64)
    i8, i16, i32, i64 = d(int8), d(int16), d(int32), d(int64)
    f16, f32, f64, bf16 = d(float16), d(float32), d(float64), _BF16
    c64, c128 = d(complex64), d(complex128)
    up = {
        b: ["i*"], "i*": [u8, i8], u8: [i16, u16], u16: [i32, u32], u32: [i64, u64],
        u64: ["f*"], i8: [i16], i16: [i32], i32: [i64], i64: ["f*"],
        "f*": [bf16, f16, "c*"], bf16: [f32], f16: [f32], f32: [f64, c64], f64: [c128],
        "c*": [c64], c64: [c128], c128: [],
    }
    # upper[n] = every node reachable from n (including n).
    upper = {}

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
def _lub(nodes: frozenset):
    common = functools.reduce(lambda a, n: a & _UPPER[n], nodes, _UPPER[next(iter(nodes))])
    for c in common:
        if _UPPER[c] == common:
            return c
    raise TypeError(f"no common type for {sorted(map(str, nodes))}")


def _node_dtype(n) -> np.dtype:
    if isinstance(n, str):
        return {"i*": default_int_dtype(), "f*": default_float_dtype(),
                "c*": default_complex_dtype()}[n]
    return n


def dtype_and_weak(x):
    """(dtype, weak_type) of an operand: an array, a NumPy value, a Python scalar or a dtype."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(x, (bool, int, float, complex)):
        return python_scalar_dtype(x), not isinstance(x, bool)
    if isinstance(x, type) and x in _WEAK_KIND:
        return python_scalar_dtype(x()), True
    if hasattr(x, "dtype"):
        return canonicalize_dtype(x.dtype), False
    return canonicalize_dtype(np.dtype(x)), False


def _lattice_result(pairs):
    """pairs: iterable of (canonical dtype, weak).  Returns (dtype, weak)."""
    pairs = list(pairs)
    if len(pairs) == 1:
        return pairs[0]
    if len({p for p in pairs}) == 1:
        return pairs[0]
    node = _lub(frozenset(_node(d, w) for d, w in pairs))
    return canonicalize_dtype(_node_dtype(node)), isinstance(node, str)


def result_type_and_weak(*args):
    """Like ``result_type`` but also says whether the result is weakly typed."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    return _lattice_result(dtype_and_weak(a) for a in args)


def result_type(*args, return_weak_type_flag: bool = False):
    """Dtype an operation on ``args`` produces (``jax.numpy.result_type``).

    Args may be arrays, NumPy values, Python scalars, dtypes or Python scalar types.
    Raises TypeError for unsupported dtypes.
    """
    dt, weak = result_type_and_weak(*args)
    return (dt, weak) if return_weak_type_flag else dt


def promote_types(a, b) -> np.dtype:
    """Strong promotion of two dtypes, no canonicalisation (``jax.numpy.promote_types``)."""
    da, db = np.dtype(a), np.dtype(b)
    for dt in (da, db):
        if dt not in _SUPPORTED:
            raise TypeError(f"JAX only supports number and bool dtypes, got dtype {dt}")
    node = _lub(frozenset((da, db)))
    return {"i*": np.dtype(np.int64), "f*": np.dtype(np.float64),
            "c*": np.dtype(np.complex128)}.get(node, node) if isinstance(node, str) else node


def issubdtype(a, b) -> bool:
    """``jax.numpy.issubdtype``: understands bfloat16 as a floating type."""
    if isinstance(a, np.dtype) or not isinstance(a, type):
        a = np.dtype(a)
    if a == _BF16:
        return b in (np.floating, np.inexact, np.number, np.generic) or (
            not isinstance(b, type) and np.dtype(b) == _BF16) or b is bfloat16
    return np.issubdtype(a, b)


def is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == _BF16


def is_inexact(dt) -> bool:
    return is_float(dt) or np.dtype(dt).kind == "c"


def is_int(dt) -> bool:
    return np.dtype(dt).kind in "iu"


class finfo(ml_dtypes.finfo):
    """Machine limits of a float dtype, bfloat16 included (``jax.numpy.finfo``)."""


iinfo = ml_dtypes.iinfo


def short_name(dt) -> str:
    """JAX's short dtype name used in IR text: f32, i32, bf16, bool, c64, u8."""
    dt = np.dtype(dt)
    if dt == _BOOL:
        return "bool"
    if dt == _BF16:
        return "bf16"
    return f"{dt.kind if dt.kind != 'V' else 'bf'}{dt.itemsize * 8}"
