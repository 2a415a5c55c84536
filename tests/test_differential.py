"""Differential harness: public functions of ``jaxlite.numpy``, ``lax``, ``nn``, ``random``
and the top-level namespace, called on a fixed family of inputs, compared with real JAX
0.10.2 (value, shape, dtype and weak type; or, when JAX raises, the exception's type).

The inputs are a fixed family: every dtype a function accepts (and the 64-bit ones under
x64), Python scalars (weak types), 0-d and empty arrays, size-1 broadcasting, special values
(signed zeros, infinities, NaN, extremes, subnormals), out-of-bounds indices and bad types.
Each function is called on the families that suit its kind (unary or binary elementwise,
reduction over ``axis=``, or an explicit table of argument sets for the others).

Running every function on every input costs minutes, almost all of it JAX compiling each
operation for each new shape and dtype; so a run takes a fixed, seeded sample of the cases
(plus every case named in ``KNOWN_DIFFERENCES``, so a stale entry is always noticed).
``JAXLITE_DIFF_FULL=1`` runs every case, about 10,700 (some 10 minutes: do that after
changing a function, to find new differences); ``JAXLITE_DIFF_FRACTION=0.5`` changes the
sampled share.

Every difference is fixed or listed in ``KNOWN_DIFFERENCES`` with its reason: the test fails
for a difference not listed and for a listed entry that no longer differs.
"""
from __future__ import annotations

import fnmatch
import functools
import inspect
import math
import os
import random as _pyrandom
import re
import warnings
import zlib
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

import jaxlite

jax = pytest.importorskip("jax")
import jax.numpy  # noqa: E402
import jax.lax  # noqa: E402
import jax.nn  # noqa: E402
import jax.random  # noqa: E402

import jaxlite.numpy  # noqa: E402
import jaxlite.lax  # noqa: E402
import jaxlite.nn  # noqa: E402
import jaxlite.random  # noqa: E402

J = SimpleNamespace(numpy=jax.numpy, lax=jax.lax, nn=jax.nn, random=jax.random, top=jax)
L = SimpleNamespace(numpy=jaxlite.numpy, lax=jaxlite.lax, nn=jaxlite.nn,
                    random=jaxlite.random, top=jaxlite)

BF16 = np.dtype(ml_dtypes.bfloat16)
INF, NAN = math.inf, math.nan

# ---- input families ---------------------------------------------------------------------------

# Special values per dtype kind; every array family is a 1-d array of these.
_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, 100.0, INF, -INF, NAN]
_BIG = {"float16": [6e4, -3e-4], "bfloat16": [1e30, -1e-30], "float32": [1e30, -1e-30],
        "float64": [1e300, -1e-300]}
_INTS = {"int8": [0, 1, -1, 2, -3, 7, 127, -128], "int16": [0, 1, -1, 3, -7, 32767, -32768],
         "int32": [0, 1, -1, 2, -3, 7, 1000, 2**31 - 1, -2**31],
         "int64": [0, 1, -1, 3, -7, 2**62, 2**63 - 1, -2**63],
         "uint8": [0, 1, 2, 3, 7, 100, 128, 255], "uint16": [0, 1, 3, 7, 1000, 65535],
         "uint32": [0, 1, 2, 7, 1000, 2**31, 2**32 - 1],
         "uint64": [0, 1, 3, 7, 2**40, 2**63, 2**64 - 1]}
_COMPLEX = [0j, complex(0.0, -0.0), 1 + 1j, -1 - 2j, 1j, 3 - 4j, complex(INF, 0.0),
            complex(NAN, 0.0), complex(INF, INF), complex(-INF, 1.0), complex(0.5, 1e3)]

SHORT = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
         "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
         "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex64": "c64",
         "complex128": "c128"}
DT32 = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "bfloat16",
        "float32", "complex64"]
DT64 = ["int64", "uint64", "float64", "complex128"]


def _dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def special(dt: str) -> np.ndarray:
    """The special values of one dtype, as a 1-d NumPy array of that dtype."""
    d = _dtype(dt)
    if dt == "bool":
        vals = [True, False, True]
    elif dt in _INTS:
        vals = _INTS[dt]
    elif dt.startswith("complex"):
        vals = _COMPLEX
    else:
        vals = _FLOATS + _BIG[dt]
    return np.array(vals, dtype=d)


def grid(dt: str):
    """Two arrays whose elementwise pairs are every pair of ``special(dt)`` values."""
    v = special(dt)
    return np.repeat(v, v.size), np.tile(v, v.size)


class Case:
    """One call: the function's qualified name, the input family's name, and how to build
    the arguments for one library (most ignore it: NumPy inputs go to both)."""
    __slots__ = ("fn", "family", "make", "x64")

    def __init__(self, fn, family, make, x64=False):
        self.fn, self.family, self.make, self.x64 = fn, family, make, x64

    @property
    def key(self):
        return ("x64:" if self.x64 else "") + self.family


def _const(*args, **kwargs):
    return lambda lib: (args, kwargs)


# Bad operands every function of an array argument should refuse (JAX's exception type).
BAD = {"bad-str": "a", "bad-none": None, "bad-mixed-list": [1, "a"]}


def unary_inputs(x64=False):
    """Families for a function of one array."""
    out = {}
    if x64:
        for dt in DT64:
            out[SHORT[dt]] = special(dt)
        out["f64-tiny"] = np.array([1e-310, -5e-324, 2.2e-308], np.float64)
        out["py-float"] = 2.5
        out["py-int"] = 3
        return out
    for dt in DT32:
        out[SHORT[dt]] = special(dt)
    out["f32-range"] = np.linspace(-4, 4, 17, dtype=np.float32)
    out["f32-tiny"] = np.array([1e-40, -1e-42, 1.4e-45, 1.1754944e-38], np.float32)
    out["f32-0d"] = np.float32(-1.5)
    out["i32-0d"] = np.array(5, np.int32)
    out["empty"] = np.zeros((0,), np.float32)
    out["empty-2x0"] = np.zeros((2, 0), np.float32)
    out["i32-empty"] = np.zeros((0,), np.int32)
    out["f32-2d"] = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 2
    out["py-int"] = 2
    out["py-negint"] = -3
    out["py-float"] = 2.5
    out["py-bool"] = True
    out["py-complex"] = 1j
    out["py-bigint"] = 2**40
    out["list"] = [1.0, 2.0]
    out.update(BAD)
    return out


def binary_inputs(x64=False):
    """Families for a function of two arrays: pairs of special values of one dtype, mixed
    dtypes, Python scalars, broadcasting and empty shapes, bad operands."""
    out = {}
    f32 = special("float32")[:6]
    i32 = np.array([0, 1, -1, 5, -7, 3], np.int32)
    if x64:
        for dt in DT64:
            out[SHORT[dt]] = grid(dt)
        out["i64-f32"] = (np.array([0, 1, -3, 2**40, 7, 2], np.int64), f32)
        out["f64-py-float"] = (special("float64"), 2.5)
        out["u64-i64"] = (np.array([0, 1, 2**63, 7, 3, 5], np.uint64),
                          np.array([0, -1, 3, -2**63, 7, 1], np.int64))
        return out
    for dt in DT32:
        out[SHORT[dt]] = grid(dt)
    out["i32-shift"] = (np.array([1, -1, 7, -8, 2**30, 5], np.int32),
                        np.array([0, 1, 31, 32, -1, 100], np.int32))
    out["u8-shift"] = (np.array([1, 255, 7, 128, 3, 5], np.uint8),
                       np.array([0, 1, 7, 8, 9, 255], np.uint8))
    out["i32-f32"] = (i32, f32)
    out["u8-i8"] = (np.array([0, 1, 255, 7, 128, 2], np.uint8),
                    np.array([0, -1, 127, -128, 3, 2], np.int8))
    out["b-f16"] = (np.array([True, False, True, False, True, True]),
                    special("float16")[:6])
    out["bf16-f16"] = (special("bfloat16")[:6], special("float16")[:6])
    out["f32-c64"] = (f32, special("complex64")[:6])
    out["i32-py-float"] = (i32, 2.5)
    out["f32-py-int"] = (f32, 2)
    out["py-int-f16"] = (3, special("float16")[:6])
    out["py-int-py-float"] = (2, 0.5)
    out["py-int-py-int"] = (7, -2)
    out["py-bool-py-int"] = (True, 3)
    out["py-complex-f32"] = (1j, f32)
    out["u8-py-overflow"] = (np.array([1, 2, 3], np.uint8), 300)
    out["i32-py-overflow"] = (i32, 2**40)
    out["bcast-31-14"] = (np.arange(3, dtype=np.float32).reshape(3, 1) - 1,
                          np.arange(4, dtype=np.float32).reshape(1, 4) + 0.5)
    out["bcast-1-3"] = (np.array([2.0], np.float32), np.array([1.0, -1.0, 0.0], np.float32))
    out["bcast-0d-2x3"] = (np.float32(3.0), np.arange(6, dtype=np.float32).reshape(2, 3))
    out["bcast-mismatch"] = (np.zeros((2, 3), np.float32), np.zeros((4,), np.float32))
    out["empty"] = (np.zeros((0,), np.float32), np.zeros((0,), np.float32))
    out["empty-1"] = (np.zeros((0,), np.float32), np.ones((1,), np.float32))
    out["empty-2x0"] = (np.zeros((2, 0), np.float32), np.zeros((0,), np.float32))
    out["i32-empty"] = (np.zeros((0,), np.int32), np.zeros((0,), np.int32))
    out["list-f32"] = ([1.0, 2.0], np.ones(2, np.float32))
    out["f32-bad-str"] = (f32, "a")
    out["bad-none-f32"] = (None, f32)
    out["f32-bad-mixed-list"] = (f32, [1, "a"])
    return out


def _key_of(lib, seed=0):
    return lib.random.PRNGKey(seed)


# ---- which functions get which families -------------------------------------------------------

NP_UNARY = """abs absolute acos acosh arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan
atanh bitwise_count bitwise_invert bitwise_not cbrt ceil conj conjugate cos cosh deg2rad degrees
exp exp2 expm1 fabs floor frexp imag invert iscomplex isfinite isinf isnan isneginf isposinf
isreal log log10 log1p log2 logical_not modf nan_to_num negative positive rad2deg radians real
reciprocal rint round around sign signbit sin sinc sinh spacing sqrt square tan tanh trunc angle
iscomplexobj isrealobj isscalar ndim shape size copy ravel transpose squeeze atleast_1d
atleast_2d atleast_3d flatnonzero argwhere nonzero matrix_transpose sort_complex diagflat
fliplr flipud diag asarray array ones_like zeros_like empty_like unique unique_values
unique_counts unique_inverse unique_all count_nonzero""".split()

NP_BINARY = """add arctan2 atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift
bitwise_xor copysign divide divmod equal float_power floor_divide fmax fmin fmod gcd greater
greater_equal heaviside hypot lcm ldexp left_shift less less_equal logaddexp logaddexp2
logical_and logical_or logical_xor maximum minimum mod multiply nextafter not_equal pow power
remainder right_shift subtract true_divide isclose allclose array_equal array_equiv""".split()

NP_REDUCE = """all any amax amin argmax argmin average max mean median min nanargmax nanargmin
nanmax nanmean nanmedian nanmin nanprod nanstd nansum nanvar prod ptp std sum var cumsum cumprod
nancumsum nancumprod cumulative_sum cumulative_prod sort argsort flip""".split()

LAX_UNARY = """abs acos acosh asin asinh atan atanh cbrt ceil conj cos cosh digamma erf erfc exp
exp2 expm1 floor imag is_finite lgamma log log1p logistic neg population_count real round rsqrt
sign sin sinh sqrt square tan tanh bitwise_not stop_gradient""".split()

LAX_BINARY = """add atan2 bitwise_and bitwise_or bitwise_xor complex div eq ge gt le lt max min mul
ne nextafter pow rem shift_left shift_right_arithmetic shift_right_logical sub""".split()

NN_UNARY = """celu elu gelu hard_sigmoid hard_silu hard_swish hard_tanh identity leaky_relu
log1mexp log_sigmoid mish relu relu6 selu sigmoid silu soft_sign softplus sparse_plus
sparse_sigmoid squareplus swish tanh""".split()

NN_REDUCE = "softmax log_softmax standardize logsumexp logmeanexp".split()


def _reduce_inputs(x64=False):
    """(family, array, kwargs) for reductions: axis None/0/-1/tuple/out of range,
    keepdims, every dtype, empty and 0-d arrays."""
    out = []
    base = np.array([[1.0, -2.0, 3.0, 0.5], [NAN, 4.0, -INF, 2.0], [0.0, -0.0, 7.0, 7.0]],
                    np.float32)
    if x64:
        for dt in ("float64", "int64", "uint64", "complex128"):
            a = base if dt in ("float64", "complex128") else np.array([[1, 2, 3], [4, 0, 9]])
            out.append((SHORT[dt], a.astype(_dtype(dt)), {"axis": 0}))
        return out
    clean = np.array([[1.0, -2.0, 3.0, 0.5], [6.0, 4.0, -1.0, 2.0], [0.0, -0.0, 7.0, 7.0]],
                     np.float32)
    out += [("f32-axis-none", base, {}), ("f32-axis0", base, {"axis": 0}),
            ("f32-axis-1", base, {"axis": -1}), ("f32-axis-tuple", base, {"axis": (0, 1)}),
            ("f32-keepdims", clean, {"axis": 1, "keepdims": True}),
            ("f32-axis-oob", clean, {"axis": 2}), ("f32-clean", clean, {"axis": 1}),
            ("f32-ties", np.array([3.0, 1.0, 3.0, 1.0], np.float32), {"axis": 0}),
            ("f32-0d", np.float32(2.5), {}),
            ("empty", np.zeros((0,), np.float32), {}),
            ("empty-2x0-axis0", np.zeros((2, 0), np.float32), {"axis": 0}),
            ("empty-2x0-axis1", np.zeros((2, 0), np.float32), {"axis": 1}),
            ("py-float", 2.5, {}), ("list", [1.0, 2.0, 3.0], {})]
    for dt in ("bool", "int8", "int32", "uint8", "uint32", "float16", "bfloat16", "complex64"):
        if dt == "bool":
            a = clean > 0.5
        elif dt.startswith(("int", "uint")):
            a = np.abs(clean) if dt.startswith("u") else clean
        else:
            a = clean
        out.append((SHORT[dt], a.astype(_dtype(dt)), {"axis": 1}))
    out += [(k, v, {}) for k, v in BAD.items()]
    return out


# Explicit argument sets for the functions that need static arguments: name -> list of
# (family, make) where make(lib) -> (args, kwargs).
def _tables():
    a34 = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    i5 = np.array([4, -1, 0, 7, -6], np.int32)
    v = np.array([3.0, 1.0, 2.0], np.float32)
    c = _const
    np_t = {
        "reshape": [("f32", c(a34, (4, 3))), ("neg1", c(a34, (-1,))), ("bad", c(a34, (5,))),
                    ("two-neg1", c(a34, (-1, -1))), ("empty", c(np.zeros((0, 3)), (3, 0)))],
        "expand_dims": [("axis0", c(a34, 0)), ("axis-1", c(a34, -1)),
                        ("oob", c(a34, 5)), ("dup", c(a34, (0, 0)))],
        "squeeze": [("axis-not1", c(a34, 0)), ("ok", c(np.zeros((1, 3, 1)), (0, 2)))],
        "swapaxes": [("ok", c(a34, 0, 1)), ("oob", c(a34, 0, 3))],
        "moveaxis": [("ok", c(a34, 0, -1)), ("oob", c(a34, 2, 0))],
        "rollaxis": [("ok", c(a34, 1)), ("oob", c(a34, 3))],
        "permute_dims": [("ok", c(a34, (1, 0))), ("bad", c(a34, (0, 0)))],
        "broadcast_to": [("ok", c(v, (2, 3))), ("bad", c(v, (4,))), ("0d", c(2.5, (2,)))],
        "broadcast_arrays": [("ok", c(v, a34[:1, :1])), ("bad", c(v, a34))],
        "broadcast_shapes": [("ok", c((3, 1), (1, 4))), ("bad", c((3,), (4,)))],
        "concatenate": [("ok", c([v, v])), ("mixed", c([v, i5])), ("bad-ndim", c([v, a34])),
                        ("axis-oob", c([v, v], axis=1)), ("empty-list", c([]))],
        "concat": [("ok", c([v, v])), ("axis-none", c([a34, a34], axis=None))],
        "stack": [("ok", c([v, v])), ("bad-shape", c([v, i5])), ("axis-1", c([v, v], axis=-1))],
        "hstack": [("ok", c([v, i5]))], "vstack": [("ok", c([v, v])), ("bad", c([v, i5]))],
        "dstack": [("ok", c([v, v]))], "column_stack": [("ok", c([v, v]))],
        "split": [("sections", c(np.arange(6.0), 3)), ("indices", c(np.arange(6.0), [1, 4])),
                  ("uneven", c(np.arange(5.0), 2)), ("oob", c(np.arange(6.0), [2, 9]))],
        "array_split": [("uneven", c(np.arange(5.0), 2)), ("more", c(np.arange(2.0), 4))],
        "hsplit": [("ok", c(a34, 2))], "vsplit": [("bad", c(a34, 2))],
        "dsplit": [("bad-ndim", c(a34, 2))],
        "unstack": [("ok", c(a34)), ("axis1", c(a34, axis=1))],
        "tile": [("ok", c(v, 2)), ("tuple", c(v, (2, 1))), ("zero", c(v, 0))],
        "repeat": [("scalar", c(v, 2)), ("array", c(v, np.array([1, 0, 2]))),
                   ("axis", c(a34, 2, axis=1)), ("neg", c(v, -1))],
        "roll": [("ok", c(i5, 2)), ("neg", c(i5, -7)), ("axis", c(a34, 1, axis=0)),
                 ("empty", c(np.zeros(0), 1))],
        "rot90": [("ok", c(a34)), ("k3", c(a34, 3)), ("bad", c(v))],
        "flip": [("axis", c(a34, 1)), ("oob", c(a34, 2))],
        "pad": [("const", c(v, 2)), ("pair", c(a34, ((1, 0), (0, 2)))),
                ("reflect", c(v, 2, mode="reflect")), ("edge", c(v, (1, 3), mode="edge")),
                ("wrap", c(v, 4, mode="wrap")), ("neg", c(v, -1)),
                ("value", c(i5, 1, constant_values=9))],
        "take": [("ok", c(i5, np.array([0, 4, -1]))), ("oob-fill", c(v, np.array([5, -9]))),
                 ("oob-clip", c(v, np.array([5, -9]), mode="clip")),
                 ("oob-wrap", c(v, np.array([5, -9]), mode="wrap")),
                 ("axis", c(a34, np.array([3, 0]), axis=1)),
                 ("i-oob", c(i5, np.array([9]))), ("f-idx", c(v, np.array([1.0])))],
        "take_along_axis": [("ok", c(a34, np.array([[0], [3], [1]]), axis=1)),
                            ("oob", c(a34, np.array([[9], [-9], [1]]), axis=1)),
                            ("none", c(v, np.array([2, 0]), axis=None))],
        "choose": [("ok", c(np.array([0, 1, 0]), [v, v + 1])),
                   ("oob", c(np.array([0, 2, 0]), [v, v + 1]))],
        "compress": [("ok", c(np.array([True, False, True]), v)),
                     ("short", c(np.array([True]), v))],
        "where": [("3arg", c(v > 1, v, i5[:3])), ("1arg", c(np.array([0, 3, 0, 1]))),
                  ("scalars", c(True, 1, 2.5)), ("bcast", c(a34 > 0, 0.0, a34[:1]))],
        "clip": [("ok", c(v, 1.5, 2.5)), ("int-float", c(i5, -1.5, 2.5)),
                 ("none", c(v, None, 2)), ("inv", c(v, 3, 1)), ("nan", c(v, NAN, 2.0))],
        "searchsorted": [("ok", c(np.array([1.0, 2, 2, 4]), np.array([2.0, 0, 5, NAN]))),
                         ("right", c(np.array([1.0, 2, 2, 4]), 2.0, side="right")),
                         ("int", c(np.array([1, 3, 5]), np.array([4, 6])))],
        "lexsort": [("ok", c((np.array([1, 0, 1]), np.array([2, 2, 1]))))],
        "partition": [("ok", c(np.array([3.0, 1, 2, NAN, 0]), 2)), ("oob", c(v, 5))],
        "argpartition": [("ok", c(np.array([3.0, 1, 2, 0]), 1))],
        "diagonal": [("ok", c(a34)), ("off", c(a34, 1)), ("far", c(a34, 9)),
                     ("bad", c(v))],
        "trace": [("ok", c(a34)), ("off", c(a34, -1))],
        "tril": [("ok", c(a34)), ("k", c(a34, 1)), ("1d", c(v))],
        "triu": [("ok", c(a34, -1))],
        "tri": [("ok", c(3)), ("mk", c(3, 4, 1)), ("dtype", c(2, dtype=np.int32))],
        "eye": [("ok", c(3)), ("mk", c(2, 3, 1)), ("dtype", c(2, dtype=np.int8)),
                ("neg", c(-1))],
        "identity": [("ok", c(3)), ("bool", c(2, dtype=bool))],
        "diag_indices": [("ok", c(3)), ("nd", c(2, 3))],
        "diag_indices_from": [("ok", c(np.zeros((3, 3)))), ("bad", c(a34))],
        "tril_indices": [("ok", c(3)), ("k", c(3, 1, 4))],
        "triu_indices": [("ok", c(3, -1))],
        "tril_indices_from": [("ok", c(a34))], "triu_indices_from": [("ok", c(a34, 1))],
        "arange": [("stop", c(5)), ("float", c(0.5, 3)), ("step", c(5, 0, -2)),
                   ("empty", c(3, 1)), ("dtype", c(4, dtype=np.uint8)), ("zero-step", c(0, 5, 0))],
        "linspace": [("ok", c(0, 1, 5)), ("noend", c(0.0, 1.0, 4, endpoint=False)),
                     ("int", c(0, 10, 4, dtype=np.int32)), ("one", c(2, 3, 1)),
                     ("zero", c(2, 3, 0)), ("neg", c(0, 1, -1)), ("arr", c(v, 5.0, 3))],
        "logspace": [("ok", c(0, 2, 3)), ("base", c(0.0, 3.0, 4, base=2))],
        "geomspace": [("ok", c(1, 1000, 4)), ("neg", c(-1, -100, 3)), ("zero", c(0, 10, 3))],
        "zeros": [("ok", c((2, 3))), ("int", c(3, np.int8)), ("neg", c(-1)),
                  ("bad", c("a"))],
        "ones": [("ok", c((0, 2)))], "empty": [("ok", c(3))],
        "full": [("ok", c((2,), 7)), ("float", c(3, 2.5)), ("arr", c((2, 3), v)),
                 ("dtype", c(2, 300, np.uint8)), ("bad-shape", c((2,), v))],
        "full_like": [("ok", c(v, 1)), ("int", c(i5, 2.7)), ("dtype", c(v, 3, np.int32))],
        "meshgrid": [("ok", c(v, i5)), ("ij", c(v, i5[:2], indexing="ij"))],
        "fromfunction": [("ok", lambda lib: ((lambda i, j: i + j, (2, 3)), {}))],
        "array": [("nested", c([[1, 2], [3, 4]])), ("ragged", c([[1, 2], [3]])),
                  ("dtype", c([1.5, 2.5], np.int32)), ("mixed", c([1, 2.5, True]))],
        "asarray": [("dtype", c(v, np.float16)), ("tuple", c((1, 2)))],
        "dot": [("vv", c(v, v)), ("mv", c(a34, np.ones(4, np.float32))),
                ("bad", c(a34, v)), ("int-f", c(i5[:3], v)), ("scalar", c(2, v))],
        "matmul": [("mm", c(a34, a34.T)), ("vv", c(v, v)), ("bad", c(a34, a34)),
                   ("batch", c(np.ones((2, 3, 4)), np.ones((4, 2)))), ("scalar", c(2, v))],
        "inner": [("ok", c(v, v)), ("bad", c(v, i5))],
        "outer": [("ok", c(v, i5))],
        "vdot": [("ok", c(v, v)), ("complex", c(np.array([1j, 2]), np.array([1j, 1])))],
        "vecdot": [("ok", c(a34, np.ones(4))),
                   ("complex", c(np.array([1j, 2]), np.array([1j, 1])))],
        "matvec": [("ok", c(a34, np.ones(4, np.float32)))],
        "vecmat": [("ok", c(np.ones(3, np.float32), a34))],
        "kron": [("ok", c(v, i5[:2]))],
        "tensordot": [("ok", c(a34, a34.T)), ("axes0", c(v, v, 0)),
                      ("pairs", c(a34, a34, ((0, 1), (0, 1))))],
        "einsum": [("ok", c("ij,j->i", a34, np.ones(4, np.float32))),
                   ("trace", c("ii", np.eye(3))), ("bad", c("ij,k->i", a34, v))],
        "percentile": [("ok", c(a34, 50)), ("arr", c(v, np.array([0, 25, 100]))),
                       ("oob", c(v, 101)), ("method", c(v, 40, method="lower"))],
        "quantile": [("ok", c(a34, 0.5, axis=1)), ("oob", c(v, 1.5)),
                     ("nearest", c(v, 0.3, method="nearest"))],
        "nanpercentile": [("ok", c(np.array([1.0, NAN, 3.0]), 50))],
        "nanquantile": [("ok", c(np.array([1.0, NAN, 3.0]), 0.25))],
        "average": [("weights", c(v, weights=np.array([1.0, 0, 3]))),
                    ("zero-w", c(v, weights=np.zeros(3))),
                    ("returned", c(a34, axis=1, returned=True))],
        "std": [("ddof", c(v, ddof=1)), ("ddof-n", c(v, ddof=3)), ("ddof-big", c(v, ddof=5))],
        "var": [("ddof", c(v, ddof=1)), ("ddof-n", c(v, ddof=3)), ("int", c(i5, ddof=1))],
        "round": [("dec1", c(np.array([0.15, 2.675, -1.25, 1e30], np.float32), 1)),
                  ("dec-1", c(np.array([15.0, 25, -35], np.float32), -1)),
                  ("int-dec-1", c(i5, -1)), ("f16", c(np.array([0.15, 2.5], np.float16), 1))],
        "around": [("dec2", c(np.array([0.125, 1.005], np.float32), 2))],
        "nan_to_num": [("kw", c(special("float32"), nan=1.0, posinf=2.0, neginf=-2.0))],
        "isclose": [("tol", c(v, v + 1e-3, rtol=0, atol=1e-2)),
                    ("nan", c(np.array([NAN]), np.array([NAN]), equal_nan=True))],
        "interp": [], "can_cast": [("ok", c(np.int32, np.float32)),
                                   ("same_kind", c(np.float64, np.float32, "same_kind"))],
        "promote_types": [("ok", c(np.int8, np.uint8)), ("bf16", c(BF16, np.float16)),
                          ("u64-i64", c(np.uint64, np.int64)), ("bool-f", c(bool, np.float16))],
        "result_type": [("ok", c(np.int8, 2.5)), ("arrays", c(i5, v)), ("py", c(2, 2.5)),
                        ("weak-strong", c(1j, np.float16))],
        "issubdtype": [("ok", c(np.int32, np.integer)), ("f", c(BF16, np.floating))],
        "isdtype": [("ok", c(np.dtype(np.int32), "integral")),
                    ("tuple", c(np.dtype(np.float16), ("real floating", "complex floating")))],
        "unique": [("ok", c(np.array([3, 1, 3, 2]))), ("nan", c(np.array([NAN, 1, NAN]))),
                   ("all", c(np.array([3, 1, 3]), return_index=True, return_inverse=True,
                             return_counts=True)),
                   ("axis", c(np.array([[1, 2], [1, 2], [0, 1]]), axis=0))],
        "sort": [("desc", c(v, descending=True)), ("stable", c(v, stable=True)),
                 ("axis-none", c(a34, axis=None)), ("nan", c(np.array([NAN, 1.0, -0.0, 0.0])))],
        "argsort": [("desc", c(np.array([1, 3, 3, 0]), descending=True)),
                    ("nan", c(np.array([NAN, 1.0, -0.0, 0.0])))],
        "cumsum": [("dtype", c(np.array([100, 100], np.int8), dtype=np.int8)),
                   ("bool", c(np.array([True, True])))],
        "cumulative_sum": [("initial", c(v, include_initial=True))],
        "argmax": [("keepdims", c(a34, axis=1, keepdims=True))],
        "max": [("initial", c(np.zeros((0,)), initial=3.0)),
                ("where", c(v, where=np.array([True, False, True]), initial=-1.0))],
        "sum": [("dtype", c(np.array([200, 100], np.uint8))),
                ("where", c(v, where=np.array([True, False, True]))),
                ("promote", c(np.array([1, 2], np.int8), dtype=np.float16))],
        "mean": [("int", c(i5)), ("where", c(v, where=np.array([False, False, False])))],
        "prod": [("int8", c(np.array([100, 3], np.int8)))],
        "count_nonzero": [("axis", c(a34, axis=0))],
        "append": [("flat", c(v, a34)), ("axis", c(a34, a34[:1], axis=0)),
                   ("bad-axis", c(a34, v, axis=0)), ("mixed", c(i5, 2.5))],
        "einsum_path": [("ok", lambda lib: (("ij,jk->ik", a34, a34.T), {"optimize": "greedy"},
                                            lambda r: r[0]))],
        "one_hot": [],
    }
    sq = np.array([[2.0, -1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]], np.float32)
    la = {
        "norm": [("vec", c(v)), ("ord1", c(v, 1)), ("inf", c(v, INF)), ("fro", c(a34)),
                 ("nuc", c(sq, "nuc")), ("mat2", c(sq, 2)), ("axis", c(a34, axis=1)),
                 ("bad-ord", c(a34, 3)), ("int", c(i5)), ("empty", c(np.zeros(0)))],
        "vector_norm": [("ok", c(a34)), ("ord0", c(v, ord=0)), ("neg", c(v, ord=-1))],
        "matrix_norm": [("ok", c(sq)), ("ord1", c(sq, ord=1)), ("bad-1d", c(v))],
        "matrix_power": [("ok", c(sq, 3)), ("zero", c(sq, 0)), ("int", c(np.eye(2, dtype=int), 2)),
                         ("bad", c(a34, 2))],
        # full rank: the singular vectors of a zero singular value are not unique
        "svd": [("ok", c(sq)), ("vals", c(a34, compute_uv=False)),
                ("thin", c(sq[:, :2].T.copy(), full_matrices=False))],
        "svdvals": [("ok", c(a34)), ("empty", c(np.zeros((0, 2), np.float32)))],
        "multi_dot": [("ok", c([a34, a34.T, sq])), ("vec", c([v, sq, v])), ("one", c([v]))],
        "diagonal": [("ok", c(sq)), ("off", c(a34, offset=1))],
        "trace": [("ok", c(sq))], "matrix_transpose": [("ok", c(a34)), ("bad", c(v))],
        "matmul": [("ok", c(sq, v))], "outer": [("ok", c(v, i5)), ("bad", c(sq, v))],
        "tensordot": [("ok", c(sq, sq))], "vecdot": [("ok", c(a34, a34))],
    }
    np_t.update({"linalg." + k: rows for k, rows in la.items()})
    nn_t = {
        "one_hot": [("ok", c(i5, 4)), ("float", c(np.array([0.0, 1.5, 2]), 3)),
                    ("dtype", c(i5, 8, dtype=np.int8)), ("axis0", c(i5, 3, axis=0)),
                    ("empty", c(np.zeros((0,), np.int32), 3))],
        "glu": [("ok", c(a34)), ("odd", c(v))],
        "leaky_relu": [("slope", c(special("float32"), 0.2))],
        "celu": [("alpha", c(special("float32"), 0.5))],
        "elu": [("alpha", c(special("float32"), 2.0))],
        "gelu": [("exact", c(special("float32"), approximate=False))],
        "softmax": [("where", c(v, where=np.array([True, False, True]))),
                    ("all-inf", c(np.array([-INF, -INF], np.float32)))],
        "logsumexp": [("b", c(v, b=np.array([1.0, -1.0, 0.0]))),
                      ("return-sign", c(v, b=np.array([-1.0, -1.0, 0.5]), return_sign=True)),
                      ("all-inf", c(np.array([-INF, -INF], np.float32)))],
        "standardize": [("var", c(a34, axis=1, variance=np.ones((3, 1)), epsilon=0.1)),
                        # E[x^2] - E[x]^2 rounds to -1.2e-4 here: JAX clips it to 0
                        ("const-row", c(np.full((7,), 41.74349, np.float32)))],
    }
    lax_t = {
        "integer_pow": [("sq", c(v, 2)), ("neg", c(i5, -1)), ("negf", c(v, -3)),
                        ("zero", c(special("float32"), 0)), ("int", c(i5, 3))],
        "convert_element_type": [("f-i", c(special("float32"), np.int32)),
                                 ("f-u8", c(special("float32"), np.uint8)),
                                 ("f-b", c(special("float32"), bool)),
                                 ("c-f", c(special("complex64"), np.float32)),
                                 ("i-f16", c(np.array([70000, -1], np.int32), np.float16)),
                                 ("py", c(2.5, np.int32))],
        "bitcast_convert_type": [("f-i", c(v, np.int32)), ("f-u8", c(v, np.uint8)),
                                 ("u8-f", c(np.zeros((3, 4), np.uint8), np.float32)),
                                 ("bad", c(v, np.uint8.__class__))],
        "clamp": [("ok", c(0.0, v, 2.0)), ("arr", c(v - 2, v, v + 1)),
                  ("mixed", c(0, v, 2.0)), ("bad-shape", c(np.zeros(2), v, 3.0))],
        "select": [("ok", c(v > 1, v, -v)), ("bad-pred", c(v, v, v))],
        "select_n": [("bool", c(v > 1, v, -v)), ("int", c(np.array([0, 2, 1]), v, -v, v * 2)),
                     ("oob", c(np.array([0, 3, 1], np.int32), v, -v))],
        "reshape": [("ok", c(a34, (4, 3))), ("dims", c(a34, (4, 3), (1, 0))),
                    ("bad", c(a34, (5,)))],
        "broadcast": [("ok", c(v, (2,)))],
        "broadcast_in_dim": [("ok", c(v, (2, 3), (1,))), ("bad", c(v, (3, 2), (1,)))],
        "squeeze": [("ok", c(np.zeros((1, 3)), (0,))), ("bad", c(a34, (0,)))],
        "expand_dims": [("ok", c(v, (0, 2)))],
        "transpose": [("ok", c(a34, (1, 0))), ("bad", c(a34, (0,)))],
        "rev": [("ok", c(a34, (0,))), ("oob", c(a34, (2,)))],
        "slice": [("ok", c(a34, (0, 1), (2, 4))), ("stride", c(a34, (0, 0), (3, 4), (2, 3))),
                  ("oob", c(a34, (0, 0), (4, 4)))],
        "slice_in_dim": [("ok", c(a34, 1, 3, axis=1)), ("neg", c(a34, -2, None))],
        "index_in_dim": [("ok", c(a34, 2)), ("oob", c(a34, 3)), ("neg", c(a34, -1, 1))],
        "dynamic_slice": [("ok", c(a34, (1, 1), (2, 2))), ("clamp", c(a34, (5, -3), (2, 2))),
                          ("too-big", c(a34, (0, 0), (4, 1)))],
        "dynamic_slice_in_dim": [("clamp", c(a34, 7, 2, axis=1))],
        "dynamic_index_in_dim": [("clamp", c(a34, -9, axis=0))],
        "dynamic_update_slice": [("ok", c(a34, np.ones((2, 2), np.float32), (2, 3))),
                                 ("dtype", c(a34, np.ones((2, 2), np.int32), (0, 0)))],
        "dynamic_update_slice_in_dim": [("clamp", c(a34, np.ones((1, 4), np.float32), 9, 0))],
        "dynamic_update_index_in_dim": [("ok", c(a34, np.ones(4, np.float32), -1, 0))],
        "concatenate": [("ok", c([v, v], 0)), ("mixed", c([v, i5], 0)),
                        ("oob", c([v, v], 1))],
        "pad": [("ok", c(v, 0.0, [(1, 2, 0)])), ("interior", c(v, -1.0, [(0, 0, 2)])),
                ("neg", c(a34, 0.0, [(-1, 0, 0), (0, -2, 1)])),
                ("dtype", c(v, 0, [(1, 1, 0)]))],
        "iota": [("ok", c(np.int32, 4)), ("f", c(np.float16, 3))],
        "broadcasted_iota": [("ok", c(np.int32, (2, 3), 1))],
        "full_like": [("ok", c(v, 2)), ("shape", c(v, 2.5, np.int32, (2,)))],
        "reduce_sum": [("ok", c(a34, (0,))), ("bool", c(a34 > 0, (1,))),
                       ("oob", c(a34, (2,)))],
        "reduce_max": [("ok", c(special("float32"), (0,))), ("empty", c(np.zeros(0), (0,)))],
        "reduce_min": [("empty-int", c(np.zeros(0, np.int8), (0,)))],
        "reduce_prod": [("ok", c(i5, (0,)))],
        "reduce_and": [("ok", c(a34 > 0, (0,))), ("float", c(a34, (0,)))],
        "reduce_or": [("int", c(i5, (0,)))],
        "reduce_xor": [("u8", c(np.arange(5, dtype=np.uint8), (0,)))],
        "argmax": [("ok", c(special("float32"), 0, np.int32)), ("ties", c(v * 0, 0, np.int32))],
        "argmin": [("ok", c(special("float32"), 0, np.int32)), ("i8", c(i5, 0, np.int8))],
        "cumsum": [("ok", c(a34, 1)), ("rev", c(a34, 0, True)), ("bool", c(a34 > 0))],
        "cumprod": [("ok", c(i5))], "cummax": [("nan", c(special("float32")))],
        "cummin": [("rev", c(special("float32"), reverse=True))],
        "cumlogsumexp": [("ok", c(special("float32")))],
        "sort": [("ok", c(special("float32"))), ("multi", c((i5, v[[0, 1, 2, 0, 1]]), num_keys=1)),
                 ("dim", c(a34, dimension=0)), ("stable", c(special("float32"), is_stable=True))],
        "sort_key_val": [("ok", c(np.array([3, 1, 3]), v))],
        "top_k": [("ok", c(special("float32"), 3)), ("ties", c(np.array([1, 3, 3, 1]), 2)),
                  ("too-big", c(v, 4)), ("zero", c(v, 0))],
        "dot": [("ok", c(a34, np.ones(4, np.float32))), ("mixed", c(v, i5[:3])),
                ("pref", c(np.ones(3, np.int8), np.ones(3, np.int8),
                           preferred_element_type=np.int32))],
        "dot_general": [("ok", c(a34, a34, (((1,), (1,)), ((), ())))),
                        ("batch", c(np.ones((2, 3, 4)), np.ones((2, 4, 5)),
                                    (((2,), (1,)), ((0,), (0,)))))],
        "padtype_to_pads": [("same", c((5, 6), (3, 2), (2, 1), "SAME")),
                            ("valid", c((5,), (3,), (1,), "VALID")),
                            ("bad", c((5,), (3,), (1,), "FULL"))],
        "conv_general_dilated": [
            ("ok", c(np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32),
                     (1, 1), "SAME")),
            ("stride", c(np.ones((1, 1, 6), np.float32), np.ones((2, 1, 3), np.float32),
                         (2,), [(1, 1)], rhs_dilation=(2,))),
            ("bad-feat", c(np.ones((1, 2, 5), np.float32), np.ones((1, 3, 3), np.float32),
                           (1,), "VALID"))],
        "conv": [("ok", c(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32),
                          (1, 1), "VALID"))],
        "conv_with_general_padding": [
            ("ok", c(np.ones((1, 1, 5), np.float32), np.ones((1, 1, 2), np.float32), (1,),
                     [(0, 1)], (2,), (1,)))],
        "conv_transpose": [
            ("ok", c(np.ones((1, 4, 4, 1), np.float32), np.ones((2, 2, 1, 1), np.float32),
                     (2, 2), "SAME"))],
        "conv_dimension_numbers": [("ok", lambda lib: (((1, 2, 5, 5), (3, 2, 3, 3),
                                                        ("NCHW", "OIHW", "NCHW")), {}, tuple))],
        "reduce_window": [("sum", lambda lib: ((a34, 0.0, lib.lax.add, (2, 2), (1, 1),
                                                 "VALID"), {})),
                          ("max-pad", lambda lib: ((a34, -INF, lib.lax.max, (2, 2), (2, 2),
                                                     "SAME"), {}))],
        "cond": [("true", c(True, lambda x: x + 1, lambda x: x * 2, v)),
                 ("int-pred", c(np.int32(0), lambda x: x + 1, lambda x: x * 2, 2.0)),
                 ("bad-pred", c(v > 1, lambda x: x, lambda x: x, v)),
                 ("mismatch", c(True, lambda x: x, lambda x: x.astype(np.int32), v))],
        "switch": [("ok", c(1, [lambda x: x + 1, lambda x: x * 2], v)),
                   ("clamp-hi", c(5, [lambda x: x + 1, lambda x: x * 2], v)),
                   ("clamp-lo", c(-3, [lambda x: x + 1, lambda x: x * 2], v)),
                   ("empty", c(0, [], v))],
        "fori_loop": [("ok", c(0, 5, lambda i, x: x * 2 + i, 1.0)),
                      ("empty", c(3, 1, lambda i, x: x + 1, v)),
                      ("bad-carry", c(0, 2, lambda i, x: x.astype(np.int32), v))],
        "while_loop": [("ok", c(lambda x: x < 10, lambda x: x * 2, 1)),
                       ("bad-cond", c(lambda x: x, lambda x: x, v))],
        "scan": [("ok", lambda lib: ((lambda c_, x: (c_ + x, c_ * x), 0.0, v), {})),
                 ("reverse", lambda lib: ((lambda c_, x: (c_ + x, c_), 0.0, a34),
                                          {"reverse": True})),
                 ("length", lambda lib: ((lambda c_, x: (c_ + 1, c_), 0, None),
                                         {"length": 3})),
                 ("bad-carry", lambda lib: ((lambda c_, x: (c_ + x, x), 0, v), {}))],
        "map": [("ok", c(lambda x: x * 2, a34)), ("batch", c(lambda x: x + 1, a34),
                                                     )],
        "associative_scan": [("ok", lambda lib: ((lib.lax.add, v), {})),
                             ("rev", lambda lib: ((lib.lax.max, a34), {"reverse": True,
                                                                        "axis": 1}))],
        "psum": [("unbound", c(v, "i"))], "pmax": [("unbound", c(v, "i"))],
        "pmin": [("unbound", c(v, "i"))], "pmean": [("unbound", c(v, "i"))],
        "axis_index": [("unbound", c("i"))],
    }
    rnd_t = {
        "normal": [("ok", lambda lib: ((_key_of(lib), (3,)), {})),
                   ("f16", lambda lib: ((_key_of(lib), (2,), np.float16), {})),
                   ("int", lambda lib: ((_key_of(lib), (2,), np.int32), {}))],
        "uniform": [("ok", lambda lib: ((_key_of(lib), (4,)), {})),
                    ("bounds", lambda lib: ((_key_of(lib), (3,)), {"minval": -2, "maxval": 5})),
                    ("bf16", lambda lib: ((_key_of(lib), (3,), BF16), {})),
                    ("int", lambda lib: ((_key_of(lib), (2,), np.int32), {}))],
        "bernoulli": [("ok", lambda lib: ((_key_of(lib), 0.3, (5,)), {})),
                      ("arr-p", lambda lib: ((_key_of(lib), v / 4), {}))],
        "bits": [("ok", lambda lib: ((_key_of(lib), (3,)), {})),
                 ("u8", lambda lib: ((_key_of(lib), (3,), np.uint8), {}))],
        "randint": [("ok", lambda lib: ((_key_of(lib), (4,), 0, 10), {})),
                    ("wide", lambda lib: ((_key_of(lib), (3,), -2**31, 2**31 - 1), {})),
                    ("u8", lambda lib: ((_key_of(lib), (3,), 0, 300, np.uint8), {})),
                    ("empty-range", lambda lib: ((_key_of(lib), (3,), 5, 5), {}))],
        "gumbel": [("ok", lambda lib: ((_key_of(lib), (3,)), {}))],
        "categorical": [("ok", lambda lib: ((_key_of(lib), np.log(v)), {})),
                        ("shape", lambda lib: ((_key_of(lib), a34), {"shape": (2, 3)}))],
        "choice": [("ok", lambda lib: ((_key_of(lib), 5, (3,)), {})),
                   ("noreplace", lambda lib: ((_key_of(lib), v, (2,)), {"replace": False})),
                   ("p", lambda lib: ((_key_of(lib), 3, (4,)), {"p": v / 6})),
                   ("too-many", lambda lib: ((_key_of(lib), 3, (4,)), {"replace": False}))],
        "permutation": [("int", lambda lib: ((_key_of(lib), 5), {})),
                        ("arr", lambda lib: ((_key_of(lib), a34), {"axis": 1}))],
        "truncated_normal": [("ok", lambda lib: ((_key_of(lib), -1.0, 2.0, (3,)), {}))],
        "split": [("ok", lambda lib: ((_key_of(lib),), {})),
                  ("n", lambda lib: ((_key_of(lib), 3), {}))],
        "fold_in": [("ok", lambda lib: ((_key_of(lib), 7), {})),
                    ("big", lambda lib: ((_key_of(lib), 2**32 + 5), {}))],
        "PRNGKey": [("ok", c(42)), ("neg", c(-1)), ("big", c(2**40)), ("float", c(1.5))],
        "key": [("ok", c(3))],
        "key_data": [("ok", lambda lib: ((lib.random.key(1),), {}))],
        "clone": [("ok", lambda lib: ((_key_of(lib),), {}))],
        "wrap_key_data": [("ok", c(np.array([0, 5], np.uint32)))],
        "key_impl": [("ok", lambda lib: ((lib.random.key(1),), {}, str))],
    }
    def f(x):
        return (x * x).sum() if hasattr(x, "sum") else x * x

    def app(*args):
        """Applies the returned function to ``args``."""
        return lambda g: g(*args)

    top_t = {
        "device_get": [("ok", c({"a": v})), ("scalar", c(2.5))],
        "device_put": [("ok", c(v)), ("tree", c((v, 2.5)))],
        "block_until_ready": [("ok", c((v, 2)))],
        "typeof": [("ok", c(v)), ("weak", c(2.5))],
        "grad": [("ok", lambda lib: ((f,), {}, app(v))),
                 ("int", lambda lib: ((f,), {}, app(np.int32(3)))),
                 ("nonscalar", lambda lib: ((lambda x: x * 2,), {}, app(v))),
                 ("argnums", lambda lib: ((lambda x, y: x * y,), {"argnums": 1},
                                          app(2.0, 3.0))),
                 ("has_aux", lambda lib: ((lambda x: (x * x, x),), {"has_aux": True},
                                          app(3.0)))],
        "value_and_grad": [("ok", lambda lib: ((f,), {}, app(v)))],
        "jacfwd": [("ok", lambda lib: ((lambda x: x * x,), {}, app(v)))],
        "jacrev": [("ok", lambda lib: ((lambda x: x * x,), {}, app(v))),
                   ("int", lambda lib: ((lambda x: x * x,), {}, app(np.arange(3))))],
        "jacobian": [("ok", lambda lib: ((lambda x: x[:2] * x[1:],), {}, app(v)))],
        "hessian": [("ok", lambda lib: ((f,), {}, app(v)))],
        "jvp": [("ok", c(f, (v,), (np.ones(3, np.float32),))),
                ("dtype", c(f, (v,), (np.ones(3, np.float64),))),
                ("shape", c(f, (v,), (np.ones(2, np.float32),)))],
        "vjp": [("ok", lambda lib: ((lambda x: x * 2, v), {},
                                     lambda r: (r[0], r[1](np.ones(3, np.float32)))))],
        "linearize": [("ok", lambda lib: ((lambda x: x * x, v), {},
                                           lambda r: (r[0], r[1](np.ones(3, np.float32)))))],
        "vmap": [("ok", lambda lib: ((lambda x: x * 2,), {}, app(a34))),
                 ("axes", lambda lib: ((lambda x, y: x + y,), {"in_axes": (1, None)},
                                       app(a34, 1.0))),
                 ("bad-size", lambda lib: ((lambda x, y: x + y,), {}, app(v, i5)))],
        "jit": [("ok", lambda lib: ((f,), {}, app(v))),
                ("weak", lambda lib: ((lambda x: x + 1,), {}, app(2.5))),
                ("static", lambda lib: ((lambda x, n: x * n,), {"static_argnums": 1},
                                        app(v, 3)))],
        "eval_shape": [("ok", c(lambda x: x.sum(axis=0), a34))],
        "checkpoint": [("ok", lambda lib: ((f,), {}, app(v)))],
        "remat": [("ok", lambda lib: ((f,), {}, app(v)))],
    }
    return {"numpy": np_t, "nn": nn_t, "lax": lax_t, "random": rnd_t, "top": top_t}


def _drop_int_min(x, y):
    """Pairs without the most negative integer: JAX's gcd/lcm loop forever on it (its
    absolute value is itself), so the oracle has no answer to compare with."""
    if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)) or x.shape != y.shape \
            or x.dtype.kind != "i" or y.dtype.kind != "i":
        return x, y
    keep = (x != np.iinfo(x.dtype).min) & (y != np.iinfo(y.dtype).min)
    return x[keep], y[keep]


def build_cases(x64=False):
    """Every case, in a fixed order."""
    cases = []
    u = unary_inputs(x64)
    b = binary_inputs(x64)

    def add_unary(mod, names):
        for n in names:
            for fam, x in u.items():
                cases.append(Case(f"{mod}.{n}", fam, _const(x), x64))

    def add_binary(mod, names):
        for n in names:
            for fam, (x, y) in b.items():
                if n in ("gcd", "lcm"):
                    x, y = _drop_int_min(x, y)
                cases.append(Case(f"{mod}.{n}", fam, _const(x, y), x64))

    add_unary("numpy", NP_UNARY)
    add_binary("numpy", NP_BINARY)
    add_unary("lax", LAX_UNARY)
    add_binary("lax", LAX_BINARY)
    add_unary("nn", NN_UNARY)
    for mod, names in (("numpy", NP_REDUCE), ("nn", NN_REDUCE)):
        for n in names:
            for fam, a, kw in _reduce_inputs(x64):
                cases.append(Case(f"{mod}.{n}", "reduce-" + fam, _const(a, **kw), x64))
    if not x64:
        for mod, table in _tables().items():
            for n, rows in table.items():
                for fam, make in rows:
                    cases.append(Case(f"{mod}.{n}", "t-" + fam, make, x64))
    return cases


# ---- running and comparing --------------------------------------------------------------------

def _lookup(lib, fn):
    mod, *names = fn.split(".")
    obj = getattr(lib, mod)
    for n in names:
        obj = getattr(obj, n, None)
    return obj


def _run(lib, case):
    made = case.make(lib)
    args, kwargs = made[:2]
    # a transformation's result is a function: the case's third item applies it
    post = made[2] if len(made) > 2 else (lambda r: r)
    f = _lookup(lib, case.fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return True, post(f(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - the exception's type is the result
            return False, e


def _builtin_base(exc):
    """The most derived built-in exception class of ``exc``: what we compare, so that
    JAX's own subclasses (ConcretizationTypeError is a TypeError) match jaxlite's."""
    for k in type(exc).__mro__:
        if k.__module__ == "builtins":
            return k.__name__
    return type(exc).__name__


def _is_array(x):
    return isinstance(x, (np.ndarray, np.generic, jax.Array, jaxlite.Array))


def _is_key(x):
    return str(getattr(x, "dtype", "")).startswith("key<")


def _ulps(a, b):
    """Distance in units in the last place between two float arrays of one dtype."""
    it = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia = a.view(it).astype(np.int64)
    ib = b.view(it).astype(np.int64)
    lo = int(np.iinfo(it).min)
    ia = np.where(ia < 0, lo - ia, ia)
    ib = np.where(ib < 0, lo - ib, ib)
    return np.abs(ia - ib)


MAX_ULPS = 4
# Decompositions (LAPACK in jaxlite, XLA's own in JAX) agree to a few ulps of the matrix's
# norm, not of each element (a zero singular value is 1e-16 in one and 4e-7 in the other).
NORMWISE = {"numpy.linalg.svd", "numpy.linalg.svdvals"}
_normwise = [False]


def _compare_floats(g, w, path, ulps=MAX_ULPS):
    if g.size == 0:
        return None
    gn, wn = np.isnan(g), np.isnan(w)
    if not np.array_equal(gn, wn):
        return f"value{path}: NaN at {np.argwhere(gn != wn)[:3].ravel().tolist()}"
    ok = ~gn
    gv, wv = g[ok], w[ok]
    d = _ulps(gv, wv)
    bad = d > ulps
    if _normwise[0] and wv.size:
        scale = float(np.max(np.abs(wv.astype(np.float64))))
        eps = float(np.finfo(g.dtype).eps)
        bad &= np.abs(gv.astype(np.float64) - wv.astype(np.float64)) > 16 * eps * scale
    if bad.any():
        i = int(np.argmax(bad))
        tiny = float(np.finfo(g.dtype).tiny)
        kind = "value"
        if (np.abs(gv[bad].astype(np.float64)) < tiny).all() and (
                np.abs(wv[bad].astype(np.float64)) < tiny).all():
            kind = "subnormal"
        return (f"{kind}{path}: {int(bad.sum())} element(s), e.g. {gv[i]!r} != jax {wv[i]!r} "
                f"({int(d[i])} ulps)")
    zero = (wv == 0) & (gv == 0)
    if (np.signbit(gv[zero]) != np.signbit(wv[zero])).any():
        return f"signed-zero{path}: {gv[zero].tolist()} != jax {wv[zero].tolist()}"
    return None


def _compare_array(got, want, path, flush=False, ulps=MAX_ULPS):
    if _is_key(want):
        if not _is_key(got):
            return f"type{path}: {type(got).__name__} != jax key array"
        if str(got.dtype) != str(want.dtype) or tuple(got.shape) != tuple(want.shape):
            return f"key{path}: {got.dtype}{got.shape} != jax {want.dtype}{want.shape}"
        want_data = jax.random.key_data if isinstance(want, jax.Array) else \
            jaxlite.random.key_data
        got, want = jaxlite.random.key_data(got), want_data(want)
    if not _is_array(got):
        return f"type{path}: {type(got).__name__} != jax {type(want).__name__}"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape{path}: {tuple(got.shape)} != jax {tuple(want.shape)}"
    if str(got.dtype) != str(want.dtype):
        return f"dtype{path}: {got.dtype} != jax {want.dtype}"
    gw, ww = getattr(got, "weak_type", None), getattr(want, "weak_type", None)
    if ww is not None and gw != ww:
        return f"weak_type{path}: {gw} != jax {ww}"
    if isinstance(want, jax.Array) and not isinstance(got, jaxlite.Array):
        return f"type{path}: {type(got).__name__} is not a jaxlite Array"
    g, w = np.asarray(got), np.asarray(want)
    if flush:
        g, w = np.asarray(_flush(g)), np.asarray(_flush(w))
    if g.dtype.kind in "biuSUO" or (g.dtype.kind == "V" and g.dtype != BF16):
        if not np.array_equal(g, w):
            return f"value{path}: {g.ravel()[:6].tolist()} != jax {w.ravel()[:6].tolist()}"
        return None
    if g.dtype.kind == "c":
        return (_compare_floats(g.real.copy(), w.real.copy(), path + ".real", ulps)
                or _compare_floats(g.imag.copy(), w.imag.copy(), path + ".imag", ulps))
    return _compare_floats(g, w, path, ulps)


def compare(got, want, path="", flush=False, ulps=MAX_ULPS):
    """None when ``got`` (jaxlite) matches ``want`` (JAX, or jaxlite on another platform:
    tests/test_differential_pjrt.py), else 'category: detail'; floats within ``ulps``."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"structure{path}: {type(got).__name__} != jax {type(want).__name__}" \
                   f"[{len(want)}]"
        for i, (g, w) in enumerate(zip(got, want)):
            r = compare(g, w, f"{path}[{i}]", flush, ulps)
            if r:
                return r
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            return f"structure{path}: dict keys"
        for k in want:
            r = compare(got[k], want[k], f"{path}[{k!r}]", flush, ulps)
            if r:
                return r
        return None
    if _is_array(want):
        return _compare_array(got, want, path, flush, ulps)
    if isinstance(want, (bool, int, float, complex, str, type(None))):
        if type(got) is not type(want):
            return f"type{path}: {type(got).__name__} != jax {type(want).__name__}"
        if got != want and not (got != got and want != want):
            return f"value{path}: {got!r} != jax {want!r}"
        return None
    if isinstance(want, np.dtype) or isinstance(got, np.dtype):
        if str(np.dtype(got)) != str(np.dtype(want)):
            return f"value{path}: {got} != jax {want}"
        return None
    # Other objects (a ShapedArray from typeof, ...): their printed form.
    if str(got) != str(want):
        return f"value{path}: {str(got)!r} != jax {str(want)!r}"
    return None


# JAX's answer for 2**40 (x64 off) to these depends on the calls before it: they short-cut
# on integers and return a value, or raise OverflowError when an earlier call left their
# jitted form in the dispatch cache (imag(2**40) raises in a fresh process, returns 0 after
# imag(2)).  No stable oracle, so not compared; other functions are compared when JAX
# answers the same twice in a row.
BIGINT_UNSTABLE = {"numpy.imag", "numpy.isfinite", "numpy.isinf", "numpy.real",
                   "numpy.isnan", "numpy.iscomplex", "numpy.isreal"}


def diff_case(case):
    """Runs one case in both libraries: None when they agree, else a description."""
    if case.family == "py-bigint" and case.fn in BIGINT_UNSTABLE:
        return None
    jok, jres = _run(J, case)
    if case.family == "py-bigint" and _run(J, case)[0] != jok:
        return None
    lok, lres = _run(L, case)
    if not jok and not lok:
        jb, lb = _builtin_base(jres), _builtin_base(lres)
        if jb != lb:
            return f"exception-type: {type(lres).__name__} != jax {type(jres).__name__}"
        return None
    if not jok:
        return f"accepts: jaxlite returned, jax raised {type(jres).__name__}: " \
               f"{str(jres)[:100]}"
    if not lok:
        return f"raises: jaxlite {type(lres).__name__}: {str(lres)[:100]}"
    _normwise[0] = case.fn in NORMWISE
    try:
        d = compare(lres, jres)
    finally:
        _normwise[0] = False
    if d and _explained_by_flushing(case, lres, jres):
        return "subnormal: " + d
    return d


def _flush(x):
    """``x`` with subnormal floats replaced by zeros of their sign (what XLA's CPU code
    does with its inputs and results); other values unchanged."""
    if isinstance(x, (tuple, list)):
        return type(x)(_flush(e) for e in x) if not hasattr(x, "_fields") else \
            type(x)(*(_flush(e) for e in x))
    if not _is_array(x) or _is_key(x):
        return x
    a = np.asarray(x)
    if a.dtype.kind == "c":
        out = a.copy()
        out.real, out.imag = _flush(a.real), _flush(a.imag)
        return out
    if a.dtype.kind != "f" and a.dtype != BF16:
        return x
    tiny = float(np.finfo(a.dtype).tiny)
    small = np.abs(a.astype(np.float64)) < tiny
    if not small.any():
        return x
    return np.where(small, np.copysign(np.zeros((), a.dtype), a), a).astype(a.dtype)


def _explained_by_flushing(case, lres, jres):
    """Whether jaxlite agrees with JAX once subnormals are flushed to zero, in its inputs
    (jaxlite reruns on flushed inputs) and in both results."""
    made = case.make(L)
    flushed = Case(case.fn, case.family, lambda lib: (
        tuple(_flush(a) for a in made[0]), made[1]) + tuple(made[2:]), case.x64)
    ok, res = _run(L, flushed)
    return ok and compare(res, jres, flush=True) is None


# ---- known differences ------------------------------------------------------------------------

# (function patterns, family patterns, category pattern) -> reason.  The first two fields
# are space-separated lists of fnmatch patterns (the entry covers each pair; a family under
# x64 is prefixed "x64:"); the category is the first word of the difference: value,
# subnormal, signed-zero, dtype, weak_type, shape, structure, type, exception-type,
# accepts (jaxlite returns where JAX raises) or raises (the reverse).
# Every reason starts "deliberate:" and is listed in README.md's "Known differences"
# (test_every_known_difference_is_deliberate): a defect found here is fixed, not listed.

# -- deliberate
# A difference explained by subnormals (jaxlite, rerun on inputs with subnormals flushed to
# zero, agrees with JAX once both results are flushed too: XLA on CPU flushes them, inputs
# and results, where jaxlite keeps IEEE arithmetic as NumPy does) has category
# "subnormal" and is accepted everywhere: README's known difference.
# test_subnormals_are_kept checks that the difference exists.
ULPS = ("deliberate: jaxlite's transcendental functions are NumPy's (C libm); XLA uses its "
        "own approximations: they differ by more than 4 ulps here (large arguments, or a "
        "cancellation after the function magnifies its last-place error)")
EXACT = ("deliberate: jaxlite's result is the exactly rounded one (0 at a tie); JAX's "
         "formula loses the operands' last place")
UNSIGNED_SOFTMAX = ("deliberate: JAX subtracts the maximum in the unsigned integer dtype "
                    "(wrapping around: NaN or -inf results); jaxlite promotes to float first")
COMPLEX_RESIDUE = ("deliberate: JAX's complex atan2 is a composition of complex operations "
                   "(-i log((x + iy) / (x*x + y*y)**0.5)) whose zeros carry the rounding "
                   "residue of XLA's own log/atan2/cos approximations (-1.4e-16 for 0.0); "
                   "jaxlite composes the same operations with NumPy's")
TYPED_SCALARS = ("deliberate: JAX 0.10 hands back a Python scalar that went through a "
                 "transformation or stop_gradient as a typed scalar (TypedFloat/TypedInt: a "
                 "float/int subclass with a dtype); jaxlite returns the plain Python scalar, "
                 "which behaves the same in arithmetic and in jnp (README)")

KNOWN_DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("numpy.logaddexp2", "i8", "value"): EXACT + "; a result below 2**-126 is kept",
    ("numpy.asin numpy.arcsin lax.asin", "f32-tiny", "value"):
        "deliberate: XLA's float32 asin returns 0 for inputs below about 4e-38, normal "
        "ones included (an intermediate underflows and is flushed); jaxlite's is x, as NumPy",
    ("numpy.cbrt lax.cbrt", "f32-tiny", "value"):
        "deliberate: XLA's float32 cbrt of a subnormal is -5.6e-16 (its input flushed, then "
        "an approximation's residue); jaxlite's is the cube root, as NumPy",
    ("numpy.frexp", "f32-tiny x64:f64-tiny", "value"):
        "deliberate: XLA's frexp of a subnormal gives mantissa 0.5 (flushed exponent "
        "arithmetic); jaxlite's is NumPy's exact decomposition",
    ("numpy.exp2", "i8 u8 bf16 f32", "value"): ULPS,
    ("lax.exp2", "bf16 f32", "value"): ULPS,
    ("numpy.cosh numpy.sinh numpy.exp2 lax.cosh lax.sinh lax.exp2 lax.lgamma", "x64:f64",
     "value"): ULPS,
    ("lax.digamma", "x64:f64 x64:py-float", "value"): ULPS,
    ("nn.gelu", "x64:i64 x64:f64 x64:c128", "value"): ULPS,
    ("nn.log1mexp", "x64:i64 x64:c128", "value"): ULPS,
    ("lax.digamma", "f32 f32-range f32-2d", "value"): ULPS,
    ("lax.lgamma", "bf16 f32 f32-range f32-2d", "value"): ULPS,
    ("nn.gelu", "i8 i32 py-negint f32-range f32-2d t-exact", "value"): ULPS,
    ("numpy.expm1 lax.expm1", "c64 x64:c128", "value"): ULPS,
    ("nn.log1mexp", "c64 py-complex x64:f64", "value"): ULPS,
    ("numpy.logaddexp", "x64:c128", "value"): ULPS,
    ("numpy.geomspace", "t-ok", "value"): ULPS,
    ("numpy.reshape", "t-empty", "dtype"):
        "deliberate: JAX's jnp.reshape of a NumPy array calls the array's own reshape and "
        "returns a NumPy array (float64 stays float64); jaxlite returns an Array of the "
        "canonical dtype, as every other jnp function does",
    ("numpy.logaddexp2", "i16 i32 f32 f16 bf16-f16 x64:i64 x64:f64", "value"): EXACT,
    ("nn.softmax nn.log_softmax", "reduce-u8 reduce-u32", "value"): UNSIGNED_SOFTMAX,
    ("nn.softmax nn.log_softmax", "x64:reduce-u64", "value"): UNSIGNED_SOFTMAX,
    # complex functions: XLA's formulas (primitives/_complex.py), magnified last-place
    # differences of its exp/cos/log approximations
    ("numpy.float_power numpy.pow numpy.power lax.pow", "c64", "value"): ULPS,
    ("lax.logistic nn.sigmoid", "x64:c128", "value"): ULPS,
    ("numpy.logaddexp2", "c64 x64:c128", "value"): ULPS,
    ("numpy.arctan2 numpy.atan2 lax.atan2", "c64 x64:c128", "value"): COMPLEX_RESIDUE,
    ("top.grad", "t-has_aux", "type"): TYPED_SCALARS,
    ("lax.stop_gradient", "py-int py-negint py-float py-complex list x64:py-int x64:py-float",
     "type"): TYPED_SCALARS,
}


# Functions whose every call costs JAX a second or more (a compile per shape): sampled at
# a quarter of the rate.
SLOW = {"numpy.flatnonzero", "numpy.diagflat", "numpy.unique", "numpy.unique_counts",
        "numpy.unique_all", "numpy.unique_inverse", "numpy.nonzero", "numpy.argwhere"}


def _category(diff):
    """'value.real: ...' -> 'value'."""
    return diff.split(":", 1)[0].split("[", 1)[0].split(".", 1)[0]


@functools.lru_cache(maxsize=None)
def _pattern(p):
    return re.compile(fnmatch.translate(p)).match


def _fnm(name, p):
    return _pattern(p)(name) is not None


@functools.lru_cache(maxsize=None)
def _tokens(key):
    """(function token, family token) pairs of an entry: its first two fields are
    space-separated lists of patterns."""
    return [(f, k) for f in key[0].split() for k in key[1].split()]


def _match(key, case):
    """The (function, family) token pair of entry ``key`` naming ``case``, or None."""
    for f, k in _tokens(key):
        if _fnm(case.fn, f) and _fnm(case.key, k):
            return f, k
    return None


def _known(case, diff):
    """The KNOWN_DIFFERENCES (entry, function token) covering ``case``'s difference."""
    cat = _category(diff)
    for key in KNOWN_DIFFERENCES:
        tok = _match(key, case)
        if tok and _fnm(cat, key[2]):
            return key, tok
    return None


# Cases every run includes: differences fixed when this harness found them.
ALWAYS = {
    ("numpy.iscomplex", "py-int"), ("numpy.isreal", "py-float"),
    ("numpy.iscomplex", "py-complex"), ("numpy.iscomplexobj", "bad-mixed-list"),
    ("numpy.isrealobj", "bad-mixed-list"), ("numpy.unique", "py-int"),
    ("numpy.unique_values", "py-complex"), ("numpy.unique_inverse", "py-float"),
    ("numpy.isclose", "bcast-mismatch"), ("numpy.isclose", "i32-py-overflow"),
    ("numpy.allclose", "bcast-mismatch"), ("numpy.array_equiv", "bcast-mismatch"),
    ("numpy.array_equiv", "i32-py-float"), ("nn.softmax", "reduce-b"),
    ("nn.log_softmax", "reduce-b"), ("nn.standardize", "t-const-row"),
    ("nn.standardize", "reduce-c64"), ("nn.standardize", "reduce-f32-axis-oob"),
}


def select(cases, fraction, seed):
    """A seeded sample of the cases, plus, for each KNOWN_DIFFERENCES entry and each
    function it names, the first case it matches (so a fixed difference is noticed)."""
    if os.environ.get("JAXLITE_DIFF_FULL"):
        return list(cases)
    fraction = float(os.environ.get("JAXLITE_DIFF_FRACTION", fraction))
    rng = _pyrandom.Random(seed)
    forced = set()
    for key in KNOWN_DIFFERENCES:
        for f, k in _tokens(key):
            for i, c in enumerate(cases):
                if _fnm(c.fn, f) and _fnm(c.key, k):
                    forced.add(i)
                    break
    out = []
    for i, c in enumerate(cases):
        r = rng.random()
        if i in forced or (c.fn, c.key) in ALWAYS or \
                r < (fraction / 4 if c.fn in SLOW else fraction):
            out.append(c)
    return out


def _present(case):
    return _lookup(J, case.fn) is not None and _lookup(L, case.fn) is not None


def run_group(cases):
    """(unexpected differences, (entry, function) pairs that matched cases that all agreed
    with JAX: stale entries)."""
    unexpected, seen, differed = [], set(), set()
    for case in cases:
        if not _present(case):
            continue
        d = diff_case(case)
        for key in KNOWN_DIFFERENCES:
            tok = _match(key, case)
            if tok:
                seen.add((key, tok))
        if d is None or _category(d) == "subnormal":
            continue
        k = _known(case, d)
        if k:
            differed.add(k)
        else:
            unexpected.append(f"{case.fn} [{case.key}] {d}")
    return unexpected, sorted(seen - differed)


def _report(unexpected, stale):
    lines = []
    if unexpected:
        lines.append(f"{len(unexpected)} difference(s) from JAX not in KNOWN_DIFFERENCES:")
        lines += ["  " + u for u in unexpected]
    if stale:
        lines.append("KNOWN_DIFFERENCES entries that no longer differ (delete them):")
        lines += [f"  {key[:3]}: {tok[0]} [{tok[1]}]" for key, tok in stale]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def x32_cases():
    return build_cases(False)


# The sampled share of each module's cases: together about 800 calls of each library
# (under a minute on a 2-core machine), the known differences' cases included.
FRACTION = {"numpy": 0.04, "lax": 0.04, "nn": 0.1, "random": 1.0, "top": 1.0}
MODULES = list(FRACTION)


# in make test-slow with the full harness (about a minute of make test's ten otherwise)
@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_differential(module, x32_cases):
    cases = [c for c in x32_cases if c.fn.startswith(module + ".")]
    unexpected, stale = run_group(select(cases, FRACTION[module],
                                         seed=zlib.crc32(module.encode())))
    assert not unexpected and not stale, _report(unexpected, stale)


# Public callables of both libraries the harness does not call, with the reason (each is
# compared with JAX by the test file named).
NOT_CALLED = {
    **{f"numpy.{n}": "jax.numpy breadth, compared case by case: tests/test_numpy_breadth.py"
       for n in "indices ix_ ravel_multi_index unravel_index diff ediff1d gradient trapezoid "
                "interp unwrap convolve correlate vander cov corrcoef bartlett blackman "
                "hamming hanning kaiser i0 isin union1d intersect1d setdiff1d setxor1d select "
                "piecewise extract delete insert place put put_along_axis fill_diagonal "
                "resize trim_zeros astype block cross iterable mask_indices packbits "
                "unpackbits apply_along_axis apply_over_axes vectorize frompyfunc frombuffer "
                "fromstring fromiter fromfile load save savez array_repr array_str "
                "printoptions get_printoptions set_printoptions bincount digitize histogram histogram_bin_edges histogram2d histogramdd polyval polyadd polysub polymul polydiv polyder polyint poly roots polyfit".split()},
    "numpy.from_dlpack": "DLPack import, compared with JAX by producer, dtype, copy and "
                         "device: tests/test_dlpack.py",
    **{f"numpy.linalg.{n}": "decompositions and solvers, compared with JAX for values, "
                            "grads, vmap, jit and bad input: tests/test_linalg_factor.py"
       for n in "solve inv det slogdet cholesky eigh eigvalsh qr lstsq pinv matrix_rank cond "
                "eig eigvals tensorinv tensorsolve cross".split()},
    **{f"top.{n}": "device and process queries, config context managers, caches and "
                   "printing: tests/test_devices.py, test_api_names.py, test_printing.py"
       for n in "clear_caches copy_to_host_async debug_infs debug_nans default_backend "
                "default_device device_count devices disable_jit effects_barrier enable_x64 "
                "ensure_compile_time_eval explain_cache_misses live_arrays local_device_count "
                "local_devices log_compiles make_jaxpr print_environment_info process_count "
                "process_index transfer_guard transfer_guard_device_to_device "
                "transfer_guard_device_to_host transfer_guard_host_to_device named_scope "
                "".split()},
    **{f"top.{n}": "tracer leak checking, compared with JAX: tests/test_trust_config.py"
       for n in ("check_tracer_leaks", "checking_leaks")},
    **{f"top.{n}": "several processes, compared with JAX alone and over 2 MPI processes: "
                   "tests/test_distributed_single.py, tests/multiprocess/"
       for n in "make_array_from_process_local_data process_indices".split()},
    **{f"top.{n}": "transformations of custom rules and callbacks: tests/test_autodiff.py, "
                   "test_callbacks.py, test_api_names.py"
       for n in "closure_convert custom_gradient linear_transpose named_call "
                "pure_callback".split()},
    **{f"random.{n}": "jax.random's distributions, compared with JAX sample by sample "
                      "(exact or a stated ulp bound), shapes, dtypes, jit, vmap, bad input: "
                      "tests/test_random_distributions.py"
       for n in ("ball beta binomial cauchy chisquare dirichlet double_sided_maxwell "
                  "exponential f gamma generalized_normal geometric key_dtype laplace "
                  "loggamma logistic lognormal maxwell multinomial multivariate_normal "
                  "orthogonal pareto poisson rademacher rayleigh t triangular wald "
                  "weibull_min ").split()},
    "nn.dot_product_attention": "masks, biases, sequence lengths, windows, grouped heads, "
                                "grad, vmap, jit and bad input: tests/test_small_modules.py",
    **{f"lax.{n}": "special-function primitives, compared with JAX at regular and special "
                   "points, for dtypes, grads, vmap and jit: tests/test_scipy_special.py"
       for n in ("bessel_i0e bessel_i1e betainc erf_inv igamma igamma_grad_a igammac "
                 "polygamma random_gamma_grad zeta").split()},
    "lax.fft": "the FFT primitive, compared with JAX for values, dtypes, grads, vmap, jit and "
               "bad input: tests/test_fft.py",
    **{f"lax.{n}": "XLA-style gather/scatter, helpers, bit ops, reduce_precision, reduce, "
                   "top-k, ragged dot, patches and shape tuples, compared with JAX case by "
                   "case (values, dtypes, weak types, errors, grad/jit/vmap): "
                   "tests/test_lax_more.py"
       for n in ("approx_max_k approx_min_k batch_matmul broadcast_like broadcast_shapes "
                 "broadcast_to_rank clz collapse conv_general_dilated_local "
                 "conv_general_dilated_patches conv_general_permutations "
                 "conv_general_shape_tuple conv_shape_tuple conv_transpose_shape_tuple dtype "
                 "empty full gather index_take mulhi ragged_dot reciprocal reduce "
                 "reduce_precision reduce_window_shape_tuple scatter scatter_add "
                 "scatter_apply scatter_max scatter_min scatter_mul scatter_sub split stack "
                 "tile unstack").split()},
    **{f"lax.{n}": "implicitly differentiated solves, compared with JAX for values, jvp/vjp/"
                   "grad, vmap, jit, pytrees and errors: tests/test_custom_linear_solve.py"
       for n in ("custom_linear_solve", "custom_root")},
    "top.enable_checks": "the IR checker's context manager: tests/test_check_jaxpr.py",
    "top.default_prng_impl": "the PRNG implementation's context manager, compared with JAX "
                             "by the keys it makes: tests/test_prng_impls.py",
    "lax.rng_bit_generator": "XLA's bit generators, compared with JAX bit for bit (every "
                             "algorithm, dtype and shape; batching; xla_cpu): "
                             "tests/test_prng_impls.py",
    "lax.ragged_dot_general": "ragged products (each mode; jvp, grad, vmap), compared with "
                              "JAX: tests/test_breadth_ops.py",
    **{n: "sharding annotations need a mesh of several devices: compared with JAX (values, "
          "dtypes, shardings, errors; eager, jit, vmap, grad) in "
          "tests/multidevice/test_sharding_constraints.py"
       for n in ("lax.with_sharding_constraint", "top.reshard")},
    **{f"lax.{n}": "collectives over a named axis: compared with JAX under vmap (values, "
                   "jvp/vjp, nested axes, errors) in tests/test_collectives_breadth.py and "
                   "under shard_map on 8 devices in tests/multidevice/"
                   "test_collectives_shard_map.py"
       for n in ("all_gather", "all_to_all", "axis_size", "pbroadcast", "pcast", "ppermute",
                 "pshuffle", "psum_scatter", "pswapaxes")},
    **{f"top.{n}": "several devices: compared with JAX on 8 CPU devices (values, shardings, "
                   "per-device memory, errors) in tests/multidevice/"
       for n in ("make_array_from_callback", "make_array_from_single_device_arrays",
                 "make_mesh", "pmap", "shard_map")},
}


def test_every_known_difference_is_deliberate():
    """No entry is a defect waiting for a fix (issue 10: each difference is fixed or is a
    deliberate, documented one)."""
    assert all(r.startswith("deliberate:") for r in KNOWN_DIFFERENCES.values()), sorted(
        k for k, r in KNOWN_DIFFERENCES.items() if not r.startswith("deliberate:"))


def test_every_common_function_is_called():
    """Every public callable present in both a JAX module and jaxlite's is called by the
    harness or listed in NOT_CALLED; a listed name that is called or gone is an error."""
    called = {c.fn for c in build_cases(False) + build_cases(True)}
    common = set()
    for m in MODULES + ["numpy.linalg"]:
        a, b = _lookup(J, m), _lookup(L, m)
        for n in set(dir(a)) & set(dir(b)):
            obj = getattr(a, n)
            if not n.startswith("_") and callable(obj) and not inspect.isclass(obj) \
                    and not inspect.ismodule(obj):
                common.add(f"{m}.{n}")
    assert not common - called - set(NOT_CALLED), sorted(common - called - set(NOT_CALLED))
    assert not set(NOT_CALLED) & called, sorted(set(NOT_CALLED) & called)
    assert not set(NOT_CALLED) - common, sorted(set(NOT_CALLED) - common)


def test_subnormals_are_kept():
    """The deliberate difference the harness accepts everywhere exists: jaxlite keeps a
    subnormal input (ceil(1e-40) is 1), XLA flushes it (0)."""
    case = next(c for c in build_cases(False) if c.fn == "numpy.ceil" and
                c.family == "f32-tiny")
    assert diff_case(case).startswith("subnormal: value")


def test_always_cases_exist():
    names = {(c.fn, c.key) for c in build_cases(False)}
    assert not ALWAYS - names, ALWAYS - names


def test_known_differences_name_cases():
    """Every KNOWN_DIFFERENCES entry matches some case (a typo would never be checked)."""
    cases = build_cases(False) + build_cases(True)
    unmatched = [(k, (f, kk)) for k in KNOWN_DIFFERENCES for f, kk in _tokens(k)
                 if not any(_fnm(c.fn, f) and _fnm(c.key, kk) for c in cases)]
    assert not unmatched, f"entries that match no case: {unmatched}"


@pytest.mark.slow
@pytest.mark.parametrize("module", ["numpy", "lax", "nn"])
def test_differential_x64(module, x64):
    cases = [c for c in build_cases(True) if c.fn.startswith(module + ".")]
    unexpected, stale = run_group(select(cases, 0.04, seed=zlib.crc32(module.encode()) + 64))
    assert not unexpected and not stale, _report(unexpected, stale)
