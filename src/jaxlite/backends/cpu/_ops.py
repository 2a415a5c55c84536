"""The scalar-op table: how each primitive's ``scalar_op`` is written in generated code.

Layer: backends.  ONE table, keyed by the primitives' ``scalar_op`` names, shared by the
code generators (the interpreter, NumPy, stays the reference).  ``emit(op, args, in_dtypes,
out_dtype, params)`` returns a Python expression (as text) over the argument names, or
raises ``Unsupported``; the generator casts the expression to the output dtype
(``T(expr)``), so integer arithmetic, which Numba widens, wraps like XLA's.

The expressions use only names found in ``GLOBALS`` (NumPy, math, the helpers below and
the vectorisable float32 functions of ``_vecmath``).  Integer semantics follow XLA as the
interpreter implements them (primitives/elementwise.py): truncating division, x / 0 = -1,
x % 0 = x, INT_MIN / -1 = INT_MIN, shifts by an amount outside [0, bits) give 0 (or the
sign fill), float -> int conversion saturates and maps NaN to 0.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import _vecmath

SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float32, np.float64))


class Unsupported(Exception):
    """A kernel (or one of its operations) the native code generator does not handle."""


_H = dict(error_model="numpy", cache=False, nogil=True, inline="always")


@njit(**_H)
def _fmax(a, b):
    # np.maximum's NaN propagation; max(-0.0, 0.0) is 0.0
    return a if a > b else (b if b > a else (a + b if a == 0 else (a if a != a else b)))


@njit(**_H)
def _fmin(a, b):
    return a if a < b else (b if b < a else (-((-a) + (-b)) if a == 0 else
                                             (a if a != a else b)))


@njit(**_H)
def _fabs(a):
    # abs as a select (keeps loops vectorisable); abs(-0.0) is 0.0
    return -a if a < 0 else (a - a if a == 0 else a)


@njit(**_H)
def _sign_f(a, one):
    return a if (a == 0 or a != a) else (one if a > 0 else -one)


@njit(**_H)
def _round_away(a, one):
    t = np.trunc(a)
    d = a - t
    d = -d if d < 0 else d
    return (t + (one if a > 0 else -one)) if d >= 0.5 else t


@njit(**_H)
def _isfinite(a):
    return a - a == 0


@njit(**_H)
def _idiv(x, y):
    # signed truncating division; x / 0 = -1, INT_MIN / -1 wraps to INT_MIN (caller casts)
    if y == 0:
        return -1
    if y == -1:     # -x without a signed overflow (LLVM may assume there is none)
        return np.int64(np.uint64(0) - np.uint64(x))
    q = x // y
    return q + 1 if (q * y != x and (x < 0) != (y < 0)) else q


@njit(**_H)
def _udiv(x, y):
    # both branches uint64 (mixed int types would unify to float64); x / 0 is all bits set
    return np.uint64(x // y) if y != 0 else np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(**_H)
def _irem(x, y):
    if y == 0:
        return x
    if y == -1:
        return x - x
    r = x % y
    return r - y if (r != 0 and (r < 0) != (x < 0)) else r


@njit(**_H)
def _urem(x, y):
    return np.uint64(x % y) if y != 0 else np.uint64(x)


@njit(**_H)
def _radd(a, b):
    return a + b


_radd_reassoc = njit(fastmath={"reassoc", "contract"}, error_model="numpy", cache=False,
                     nogil=True)(lambda a, b: a + b)
"""A float add that LLVM may reassociate (inlined by LLVM keeping the instruction's
flags): the accumulation of a sum reduction, so the vectoriser can split it into lanes."""


GLOBALS = {"np": np, "math": math, "_fmax": _fmax, "_fmin": _fmin, "_fabs": _fabs,
           "_sign_f": _sign_f, "_round_away": _round_away, "_isfinite": _isfinite,
           "_idiv": _idiv, "_udiv": _udiv, "_irem": _irem, "_urem": _urem,
           "_radd": _radd_reassoc, "_vm_oor": _vecmath.trig_out_of_range,
           "_vm_maximum": _vecmath.maximum, "_vm_minimum": _vecmath.minimum}
for _name, _fn in _vecmath.FUNCTIONS.items():
    GLOBALS[f"_vm_{_name}"] = _fn


def _wrapping(a, op, b, dt) -> str:
    """``a op b`` for + - * that wraps on overflow.  Numba marks signed integer arithmetic
    "no signed wrap" and LLVM then optimises on that assumption (``abs(x * x)`` became
    ``x * x``); int8..int32 operands are widened to int64 first so they never overflow, but
    int64 ones are computed on uint64 here and cast back."""
    if np.dtype(dt) == np.int64:
        return f"np.int64(np.uint64({a}) {op} np.uint64({b}))"
    return f"({a} {op} {b})"


def type_name(dt) -> str:
    """The name of ``dt``'s scalar constructor in generated code (``np.float32``)."""
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


_LIBM_UNARY = {"log1p": "log1p", "tan": "tan", "asin": "asin", "acos": "acos",
               "atan": "atan", "sinh": "sinh", "cosh": "cosh", "asinh": "asinh",
               "acosh": "acosh", "atanh": "atanh", "erf": "erf", "erfc": "erfc",
               "lgamma": "lgamma", "exp": "exp", "log": "log", "tanh": "tanh",
               "sin": "sin", "cos": "cos", "expm1": "expm1"}
VECMATH_OPS = frozenset(_vecmath.FUNCTIONS)
TRIG_OPS = frozenset({"sin", "cos"})     # float32 forms that flag large arguments

_INFIX = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^",
          "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _unary(op, a, dt, out, params):
    k = dt.kind
    if op == "neg":
        return _wrapping("0", "-", a, dt) if dt == np.int64 else f"-{a}"
    if op in ("copy",):
        return a
    if op == "sign":
        return f"_sign_f({a}, {type_name(dt)}(1))" if k == "f" else (
            f"np.int64({a} > 0) - np.int64({a} < 0)" if k == "i" else f"{a} > 0")
    if op == "abs":
        if dt == np.int64:
            return f"({a} if {a} >= 0 else {_wrapping('0', '-', a, dt)})"
        return f"_fabs({a})" if k == "f" else (f"abs({a})" if k == "i" else a)
    if op == "not":
        return f"not {a}" if k == "b" else f"~{a}"
    if op == "square":
        return _wrapping(a, "*", a, dt) if k in "iu" else f"{a} * {a}"
    if k != "f":
        raise Unsupported(f"{op} of {dt}")
    T = type_name(dt)
    if op in ("floor", "ceil"):
        return f"np.{op}({a})"
    if op == "round":
        return f"np.rint({a})" if params.get("rounding_method", 0) == 1 else \
            f"_round_away({a}, {T}(1))"
    if op == "is_finite":
        return f"_isfinite({a})"
    if op == "sqrt":
        return f"np.sqrt({a})"
    if op == "rsqrt":
        return f"{T}(1) / np.sqrt({a})"
    if op == "cbrt":
        return f"np.cbrt(np.float64({a}))"
    if op in VECMATH_OPS and dt == np.float32:
        return f"_vm_{op}({a})"
    if op == "logistic":
        return f"1.0 / (1.0 + math.exp(-np.float64({a})))"
    if op == "exp2":
        # the C library's exp2, as the reference's float32 kernel (primitives/_f32math.c)
        return f"np.exp2(np.float64({a}))"
    if op in _LIBM_UNARY:
        # float32: the C library's float64 function rounded once, as the reference's
        # float32 kernels compute it (primitives/_f32math.c: the same bits)
        return f"math.{_LIBM_UNARY[op]}(np.float64({a}))"
    raise Unsupported(f"scalar op {op!r}")


def _integer_pow(a, y, T, dt=None):
    if y == 0:
        return f"{T}(1)"
    n, base, acc, terms = abs(y), a, None, []
    # exponentiation by squaring, as the interpreter: written as one expression
    while n:
        if n & 1:
            acc = base if acc is None else f"{T}({_wrapping(acc, '*', base, dt)})"
        n >>= 1
        if n:
            base = f"{T}({_wrapping(base, '*', base, dt)})"
    del terms
    return f"{T}(1) / {acc}" if y < 0 else acc


def _shift(op, x, y, dt):
    bits = dt.itemsize * 8
    ok = f"(np.int64({y}) >= 0 and np.int64({y}) < {bits})" if dt.kind == "i" else \
        f"(np.uint64({y}) < {bits})"
    T = type_name(dt)
    u = f"np.uint{bits}"
    s = f"np.int{bits}"
    if op == "shift_left":
        return f"({T}({x} << {y}) if {ok} else {T}(0))"
    if op == "shift_right_logical":
        return f"({T}({u}({x}) >> {u}({y})) if {ok} else {T}(0))"
    # arithmetic: on the signed view
    sx = f"{s}({x})"
    return f"({T}({sx} >> {s}({y})) if {ok} else {T}(-1 if {sx} < 0 else 0))"


def _convert(a, src, dst):
    T = type_name(dst)
    if dst == np.bool_:
        return f"{a} != 0"
    if src.kind == "f" and dst.kind in "iu":
        info = np.iinfo(dst)
        hi, lo = float(info.max), float(info.min)
        a64 = f"np.float64({a})"
        return (f"({T}(0) if {a} != {a} else ({T}({info.max}) if {a64} >= {hi!r} else "
                f"({T}({info.min}) if {a64} <= {lo!r} else {T}({a64}))))")
    return f"{T}({a})"


def emit(op: str, args, in_dtypes, out_dtype, params) -> str:
    """The expression for scalar op ``op`` on ``args`` (names) of ``in_dtypes``.

    Raises:
      Unsupported: an op or dtype this table does not handle.
    """
    dts = [np.dtype(d) for d in in_dtypes]
    for d in dts + [np.dtype(out_dtype)]:
        if d not in SUPPORTED_DTYPES:
            raise Unsupported(f"dtype {d}")
    dt = dts[0]
    if op == "convert":
        return _convert(args[0], dt, np.dtype(out_dtype))
    if op == "integer_pow":
        return _integer_pow(args[0], int(params["y"]), type_name(dt), dt)
    if op == "select_n":
        which, cases = args[0], list(args[1:])
        if len(cases) == 1:
            return cases[0]
        if dt == np.bool_:
            return f"({cases[1]} if {which} else {cases[0]})"
        # an index out of range picks the nearest case, as XLA's select tree does
        expr = cases[-1]
        for i in range(len(cases) - 2, -1, -1):
            expr = f"({cases[i]} if {which} <= {i} else {expr})"
        return expr
    if op == "clamp":
        lo, x, hi = args
        if dt.kind == "f":
            return f"_fmin(_fmax({x}, {lo}), {hi})"
        return f"min(max({x}, {lo}), {hi})"
    if len(args) == 1:
        return _unary(op, args[0], dt, np.dtype(out_dtype), params)
    a, b = args
    k = dt.kind
    if op in _INFIX:
        if k == "b" and op in ("add", "sub", "mul"):
            raise Unsupported(f"{op} of bool")
        if op in ("add", "sub", "mul"):
            return _wrapping(a, _INFIX[op], b, dt)
        return f"({a} {_INFIX[op]} {b})"
    if op == "div":
        return f"({a} / {b})" if k == "f" else (f"_idiv({a}, {b})" if k == "i" else
                                               f"_udiv({a}, {b})")
    if op == "rem":
        return f"np.fmod({a}, {b})" if k == "f" else (f"_irem({a}, {b})" if k == "i" else
                                                     f"_urem({a}, {b})")
    if op in ("max", "min"):
        if k == "f":
            return f"_f{op}({a}, {b})"
        if k == "b":
            return f"({a} | {b})" if op == "max" else f"({a} & {b})"
        return f"{op}({a}, {b})"
    if op in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        return _shift(op, a, b, dt)
    if k != "f":
        raise Unsupported(f"{op} of {dt}")
    if op == "pow":
        return f"np.power({a}, {type_name(dt)}({b}))"
    if op == "atan2":
        return f"math.atan2(np.float64({a}), np.float64({b}))"
    if op == "nextafter":
        return f"({b} if {a} == {b} else np.nextafter({a}, {b}))"
    raise Unsupported(f"scalar op {op!r}")


def identity(monoid: str, dt) -> object:
    """The identity of ``monoid`` over ``dt`` (a NumPy scalar of ``dt``)."""
    dt = np.dtype(dt)
    if monoid == "add":
        return dt.type(0)
    if monoid == "mul":
        return dt.type(1)
    if dt == np.bool_:
        return np.bool_(monoid == "min")
    if dt.kind == "f":
        return dt.type(-np.inf if monoid == "max" else np.inf)
    info = np.iinfo(dt)
    return dt.type(info.min if monoid == "max" else info.max)


def accumulate(monoid: str, acc: str, v: str, dt) -> str:
    """The expression folding ``v`` into ``acc`` with ``monoid`` over ``dt``."""
    dt = np.dtype(dt)
    if dt not in SUPPORTED_DTYPES:
        raise Unsupported(f"dtype {dt}")
    if monoid == "add":
        if dt == np.bool_:
            raise Unsupported("add-reduction of bool")
        return f"_radd({acc}, {v})" if dt.kind == "f" else _wrapping(acc, "+", v, dt)
    if monoid == "mul":
        return _wrapping(acc, "*", v, dt)
    return emit(monoid, [acc, v], [dt, dt], dt, {})
