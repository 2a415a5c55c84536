"""Elementwise functions of ``jaxlite.numpy`` (NumPy's ufuncs): promote, broadcast, bind.

Layer: numpy.  Each function mirrors the ``jax.numpy`` function of the same name: same
promotion (JAX's lattice, weak Python scalars), same result dtype and weak type, same
edge values (integer division by zero, NaN in maximum/minimum, -0.0).  Non-array
arguments (lists, strings) raise TypeError naming their position; shapes that do not
broadcast raise TypeError when the ranks agree (as ``lax`` does) and ValueError when they
differ, as in JAX.

Constants follow JAX's rule: a constant made "like x" is a weak Python scalar when x is a
weakly typed scalar (rank 0), else a strongly typed value of x's dtype.  That rule is why,
e.g., ``hypot(2.0, 3)`` is weakly typed but ``hypot(jnp.arange(2) + 0.5, 3.0)`` is not.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from .. import dtypes, lax, monitoring
from ..config import config
from ..core.array import ArrayImpl
from ..core.eager import run_impl, value_on
from ..core.sharded import mesh_context as _mesh_context
from ..core.staging import JaxprTrace
from ..core.trace import Tracer, get_aval, get_state as _trace_state
from ..lax._keyaware import key_aware
from ..primitives import elementwise as _e
from ..runtime import get_default_device
from ..runtime.dispatch import is_pending as _is_pending
from ..transforms.autodiff import custom_jvp
from ._named_jit import named_jit, staging
from ._util import (broadcast_to_shape, check_arraylike, convert, ensure_array, is_arraylike,
                    public_names)

_ARRAYS = (ArrayImpl, Tracer)
_PY = (bool, int, float, complex)
_BOOL = np.dtype(np.bool_)
_I32 = np.dtype(np.int32)


# ---- promotion and broadcasting ---------------------------------------------------------

def _cast(x, dt, weak):
    """``x`` as dtype ``dt`` / weak type ``weak`` (a weak-type change is a conversion too).

    Python ints must fit the default integer type (OverflowError, as JAX's argument
    parsing); within it they wrap like NumPy's ``astype`` (``int8 + 300`` is ``int8 + 44``).
    """
    aval = getattr(x, "aval", None)
    if aval is not None:
        if aval.dtype == dt and aval.weak_type == weak:
            return x
        return lax._convert(x, dt, weak)
    t = type(x)
    if t in _PY:
        if t is int:
            info = _INT_RANGE[dtypes.x64_enabled()]
            if not info[0] <= x <= info[1]:
                raise OverflowError(f"Python int {x} too large to convert to "
                                    f"{dtypes.default_int_dtype().name}")
        if weak:
            return lax.scalar_as(x, dt, True)
        # signs in the key: 0.0 == -0.0 would otherwise share one cache entry
        sign = None if t is int or t is bool else (
            math.copysign(1.0, x) if t is float else
            (math.copysign(1.0, x.real), math.copysign(1.0, x.imag)))
        return _strong_scalar(dt, t, x, sign)
    if weak and isinstance(x, (np.ndarray, np.generic)):
        # a NumPy value meeting a weak type (np.int8(3) + 2.0): the result stays weak
        return lax._convert(ensure_array(x), dt, True)
    return convert(x, dt, weak)


_INT_RANGE = {False: (-2 ** 31, 2 ** 31 - 1), True: (-2 ** 63, 2 ** 63 - 1)}


@functools.lru_cache(maxsize=1024)
def _strong_scalar(dt, t, v, sign):
    """A Python scalar as a read-only NumPy constant of dtype ``dt``, cached: ``x + 1`` in a
    loop builds it once (``t``, the Python type, keeps 1, 1.0 and True apart; ``sign``
    keeps 0.0 and -0.0 apart)."""
    c = _strong(dt, v)
    c.flags.writeable = False
    return c


_promotions: dict = {}


def _promotion_key(args, kind):
    """Hashable description of the operands' types, or None when one is not an Array,
    tracer or Python scalar (those take the full path)."""
    key = [kind, dtypes.x64_enabled()]
    for a in args:
        t = type(a)
        if t in _PY:
            key.append(t)
        elif t is ArrayImpl or isinstance(a, Tracer):
            aval = a.aval
            key.append(aval.dtype)
            key.append(aval.weak_type)
        else:
            return None
    return tuple(key)


def _promote(name, args, kind=None):
    """Checks ``args`` and converts them to their common dtype (JAX's lattice).

    kind: None, "inexact" (integers/bools go to the default float), or "numeric" (bools
    go to the default int).  Returns (converted args, dtype).  The decision depends only
    on the operands' types, so it is memoised per type combination.
    """
    key = _promotion_key(args, kind)
    hit = _promotions.get(key) if key is not None else None
    if hit is not None:
        dt, weak = hit
        return [_cast(a, dt, weak) for a in args], dt
    check_arraylike(name, *args)
    dt, weak = dtypes.result_type_and_weak(*args)
    if kind is not None:
        if kind == "inexact":
            dt = dtypes.to_inexact_dtype(dt)
        elif dt == _BOOL:
            dt = dtypes.default_int_dtype()
    out = [_cast(a, dt, weak) for a in args]
    if key is not None and len(_promotions) < 4096:
        _promotions[key] = (dt, weak)
    return out, dt


def _shape(x):
    return getattr(x, "shape", ())


def _broadcast(name, args, always_value_error=False, full=False):
    """Brings ``args`` to one rank by NumPy's rules, as JAX's ``promote_shapes``: an
    operand of lower rank gains leading size-1 dimensions (a broadcast_in_dim), and the
    elementwise primitives broadcast size-1 dimensions and rank-0 operands themselves.
    ``full``: broadcast every operand that is not rank 0 to the common shape (for an
    operation that takes no size-1 broadcasting, ``select_n``).  Incompatible shapes raise
    TypeError when the ranks agree (what the lax op says in JAX), else ValueError (JAX's
    rank promotion); ``where`` broadcasts first and always raises ValueError."""
    shapes = [_shape(a) for a in args]
    ranks = {len(s) for s in shapes if s}
    out = []
    for dims in zip(*[(1,) * (max(ranks) - len(s)) + tuple(s) for s in shapes if s]):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            got = ", ".join(str(tuple(s)) for s in shapes)
            if len(ranks) == 1 and not always_value_error:
                raise TypeError(f"{name} got incompatible shapes for broadcasting: {got}.")
            raise ValueError(f"Incompatible shapes {got} for {name}: they have no common "
                             f"broadcast shape")
        out.append(big.pop() if big else 1)
    shape = tuple(out)
    if full:
        return [a if s == shape or not s else broadcast_to_shape(a, shape)
                for a, s in zip(args, shapes)]
    return [a if not s or len(s) == len(shape) else
            broadcast_to_shape(a, (1,) * (len(shape) - len(s)) + tuple(s))
            for a, s in zip(args, shapes)]


def _args2(name, x1, x2, kind=None):
    (x1, x2), dt = _promote(name, (x1, x2), kind)
    s1, s2 = _shape(x1), _shape(x2)
    if s1 != s2 and s1 and s2:
        x1, x2 = _broadcast(name, (x1, x2))
    return x1, x2, dt


# ---- the eager fast path of binary functions ---------------------------------------------
# ``x + 1`` outside any transformation: what the full path decides from the operands'
# types alone (the common dtype, the primitive) is memoised per type combination in a
# plan, and a constant's NumPy value per plan and value.  A call then checks placement
# and liveness and runs the implementation.  Anything else (a transformation, a dtype
# conversion or broadcast to stage, another device, a deleted array, a monitoring
# listener, an error to raise) takes the full path, which therefore decides every
# observable behaviour.

_fast_plans: dict = {}


class _FastPlan:
    """For one combination of operand types: the primitive, the common dtype and weak
    type, constants' (NumPy value, aval) by Python value, output avals by shape."""

    __slots__ = ("prim", "impl", "dt", "weak", "consts", "outs")

    def __init__(self, prim, dt, weak):
        self.prim, self.dt, self.weak = prim, dt, weak
        # operands of dtype ``dt``: the float16/bfloat16 wrapper of elementwise impls
        # (upcasting to float32) has nothing to do unless ``dt`` is one of those
        self.impl = prim.impl if dt in _HALF else getattr(prim.impl, "__wrapped__",
                                                          prim.impl)
        self.consts, self.outs = {}, {}


_HALF = dtypes.UPCAST     # float16, bfloat16, the narrow types


def _fast_plan(prim_for, kind, x1, x2):
    """The plan for these operands' types, or False when the full path must run (an
    operand needs a conversion, or the function is not a single primitive there)."""
    try:
        dt, weak = dtypes.result_type_and_weak(x1, x2)
    except Exception:   # the full path raises it
        return False
    if kind == "inexact":
        dt = dtypes.to_inexact_dtype(dt)
    elif kind is not None and dt == _BOOL:
        dt = dtypes.default_int_dtype()
    for x in (x1, x2):
        if type(x) is ArrayImpl and (x.aval.dtype != dt or x.aval.weak_type != weak):
            return False
    prim = prim_for(dt)
    return False if prim is None else _FastPlan(prim, dt, weak)


def _fast_const(plan, v):
    """(NumPy value, aval) the full path gives Python scalar ``v`` (promoted, then
    matched by lax's wrapper), or None when it raises (the full path raises it)."""
    try:
        c = _cast(v, plan.dt, plan.weak)
        if type(c) in _PY:
            c = lax.scalar_as(c, plan.dt, plan.weak)
        return value_on(c, None), get_aval(c)
    except Exception:
        return None


def _fast_binary(f, prim_for, kind, x1, x2):
    """``f(x1, x2)`` computed eagerly without the full path, or None when it does not
    apply (see above)."""
    if not _trace_state().eager or monitoring._listeners or _mesh_context.mesh is not None:
        return None
    t1, t2 = type(x1), type(x2)
    if t1 is ArrayImpl:
        arr, a1 = x1, x1.aval
        if t2 is ArrayImpl:
            a2 = x2.aval
            if a1.shape != a2.shape:
                return None
            key = (f, config.jax_enable_x64, a1.dtype, a1.weak_type, a2.dtype, a2.weak_type)
        elif t2 in _PY:
            key = (f, config.jax_enable_x64, a1.dtype, a1.weak_type, t2)
        else:
            return None
    elif t2 is ArrayImpl and t1 in _PY:
        arr = x2
        key = (f, config.jax_enable_x64, t1, x2.aval.dtype, x2.aval.weak_type)
    else:
        return None
    plan = _fast_plans.get(key)
    if plan is None:
        plan = _fast_plan(prim_for, kind, x1, x2)
        if len(_fast_plans) < 4096:
            _fast_plans[key] = plan
    if plan is False:
        return None
    buf = arr._buf
    device = buf.device
    committed = arr._committed
    if _is_pending(buf) or (t1 is t2 and _is_pending(x2._buf)) or not device._host_memory:
        # the full path passes a pending operand on (runtime/dispatch.py), and runs
        # another platform's arrays through its backend
        return None
    if t1 is t2:
        buf2 = x2._buf
        v1, v2 = buf.data, buf2.data
        if v1 is None or v2 is None or buf2.device is not device:
            return None
        committed = committed or x2._committed
        operands = (v1, v2)
        avals = (a1, a2)
    else:
        v = buf.data
        if v is None:
            return None
        s = x2 if t1 is ArrayImpl else x1
        ts = type(s)
        # 0.0 == -0.0 (and 1+0j == 1-0j) as keys: signed zeros would share one constant
        cacheable = ts is int or ts is bool or (ts is float and s)
        c = plan.consts.get(s) if cacheable else None
        if c is None:
            c = _fast_const(plan, s)
            if c is None:
                return None
            if cacheable and len(plan.consts) < 256:
                plan.consts[s] = c
        if t1 is ArrayImpl:
            operands, avals = (v, c[0]), (arr.aval, c[1])
        else:
            operands, avals = (c[0], v), (c[1], arr.aval)
    if not committed and device is not get_default_device():
        return None     # an uncommitted operand elsewhere: an implicit transfer
    shape = arr.aval.shape
    out_aval = plan.outs.get(shape)
    if out_aval is None:
        try:
            out_aval = plan.prim.abstract_eval_cached(avals, {})
        except Exception:   # the full path raises it
            return None
        if len(plan.outs) < 256:
            plan.outs[shape] = out_aval
    return run_impl(plan.impl, operands, out_aval, device, committed)


def _arr(x):
    """``x`` as an Array (or tracer): for functions that return their input unchanged."""
    return x if isinstance(x, _ARRAYS) else ensure_array(x)


def _unary(name, fn, kind=None, doc=None, jit_name=None):
    """A unary function: promote, then ``fn(x, dtype)``; ``jit_name`` as in ``_binary``."""
    def f(x, /):
        (x,), dt = _promote(name, (x,), kind)
        return fn(x, dt)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc or (
        f"Elementwise ``{name}`` (``jax.numpy.{name}``); the shape is unchanged.  "
        + ("Integer and bool inputs become the default float dtype.  " if kind == "inexact"
           else "")
        + "Raises TypeError for non-array arguments and dtypes the operation lacks.")
    return named_jit(jit_name)(f) if jit_name else f


def _binary(name, fn, kind=None, doc=None, fast=None, jit_name=None):
    """A binary function: promote, broadcast, then ``fn(x1, x2, dtype)``.  ``fast(dtype)``
    names the one primitive ``fn`` binds for operands already of that dtype and shape
    (None where it does something else): the eager fast path runs it directly.
    ``jit_name``: staged as a nested jit of that name, as JAX defines the function."""
    def f(x1, x2, /):
        if fast is not None:
            out = _fast_binary(f, fast, kind, x1, x2)
            if out is not None:
                return out
        x1, x2, dt = _args2(name, x1, x2, kind)
        return fn(x1, x2, dt)
    f.__name__ = f.__qualname__ = name
    f._fast_spec = None if fast is None else (fast, kind)   # for the operators' fast path
    f.__doc__ = doc or (
        f"Elementwise ``{name}`` with NumPy broadcasting and JAX type promotion "
        f"(``jax.numpy.{name}``).  "
        + ("Integer and bool inputs become the default float dtype.  " if kind == "inexact"
           else "")
        + "Raises TypeError for non-array arguments, TypeError/ValueError for shapes that "
          "do not broadcast.")
    return named_jit(jit_name)(f) if jit_name else f


# ---- constants ------------------------------------------------------------------------

def _const(x, v):
    """``v`` typed like ``x``: weak Python scalar when ``x`` is a weak rank-0 value, else a
    strongly typed NumPy scalar of x's dtype."""
    a = get_aval(x)
    if a.weak_type and not a.shape:
        return lax.scalar_as(v, a.dtype, True)
    return _strong(a.dtype, v)


def _lit(x, v):
    """``v`` as a Python literal would meet ``x`` in an operator (``x - 1``): x's dtype,
    weak when ``x`` is weak."""
    a = get_aval(x)
    return lax.scalar_as(v, a.dtype, a.weak_type)


def _strong(dt, v):
    """A strongly typed NumPy scalar ``v`` of dtype ``dt``."""
    if isinstance(v, complex) and np.dtype(dt).kind != "c":
        v = v.real
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(dt)


def _full_like(x, v, dtype=None):
    """An array of ``x``'s shape filled with ``v``: keeps ``x``'s weak type when ``dtype``
    is None (``lax.full_like``)."""
    a = get_aval(x)
    if dtype is None:
        c = lax.scalar_as(v, a.dtype, a.weak_type)
    else:
        c = _strong(dtype, v)
    c = ensure_array(c)
    return lax.broadcast_in_dim(c, a.shape, ()) if a.shape else c


def _kind(dt):
    """'b' bool, 'i' signed, 'u' unsigned, 'f' floating (bfloat16 too), 'c' complex."""
    if dt == _BOOL:
        return "b"
    return dtypes.kind(dt)


def _dtype_name(dt):
    return "bfloat16" if dt == dtypes._BF16 else np.dtype(dt).name


# ---- arithmetic -----------------------------------------------------------------------

def _add(a, b, dt):
    return lax.bitwise_or(a, b) if dt == _BOOL else lax.add(a, b)


def _subtract(a, b, dt):
    if dt == _BOOL:
        raise TypeError("subtract does not accept dtype bool: JAX does not subtract "
                        "booleans (use logical_xor, or convert to an integer type first).")
    return lax.sub(a, b)


def _multiply(a, b, dt):
    return lax.bitwise_and(a, b) if dt == _BOOL else lax.mul(a, b)


add = _binary("add", _add, fast=lambda dt: None if dt == _BOOL else _e.add_p)
subtract = _binary("subtract", _subtract,
                   fast=lambda dt: None if dt == _BOOL else _e.sub_p)
_multiply_ieee = _binary("multiply", _multiply,
                         fast=lambda dt: None if dt == _BOOL else _e.mul_p)


def multiply(x1, x2, /):
    """Elementwise product with NumPy broadcasting and JAX type promotion
    (``jax.numpy.multiply``); ``and`` for two booleans.

    A boolean operand that already has the result's shape times a float or complex one
    (bfloat16 excepted) selects instead of multiplying, as XLA rewrites
    ``convert(b) * y`` in JAX: ``False * -2.5`` is +0.0, ``False * nan`` is 0 and
    ``True * y`` is exactly ``y``.  A boolean that is broadcast first multiplies (IEEE).
    Raises TypeError for non-array arguments, TypeError/ValueError for shapes that do
    not broadcast.
    """
    if not (is_arraylike(x1) and is_arraylike(x2)):
        return _multiply_ieee(x1, x2)          # raises JAX's TypeError naming the argument
    b1 = dtypes.dtype_and_weak(x1)[0] == _BOOL if type(x1) is not bool else True
    b2 = dtypes.dtype_and_weak(x2)[0] == _BOOL if type(x2) is not bool else True
    if b1 == b2:
        return _multiply_ieee(x1, x2)
    mask = x1 if b1 else x2
    p1, p2, dt = _args2("multiply", x1, x2)
    y = p2 if b1 else p1
    shape = tuple(np.broadcast_shapes(_shape(mask), _shape(y)))
    if _shape(mask) != shape or _kind(dt) not in "fc" or dt == dtypes._BF16:
        return _multiply(p1, p2, dt)
    if _shape(y) != shape:
        y = broadcast_to_shape(ensure_array(y) if type(y) in _PY else y, shape)
    mask = ensure_array(mask) if type(mask) in _PY else mask
    return lax.select(mask, y, _full_like(y, 0))


multiply._fast_spec = _multiply_ieee._fast_spec    # the operators' fast path (same dtypes)
true_divide = _binary("true_divide", lambda a, b, dt: lax.div(a, b), "inexact",
                      fast=lambda dt: _e.div_p)
divide = _binary("divide", lambda a, b, dt: lax.div(a, b), "inexact")


def _negative(x, dt):
    if dt == _BOOL:
        raise TypeError("negative does not accept dtype bool (use logical_not).")
    return lax.neg(x)


negative = _unary("negative", _negative)
positive = _unary("positive", lambda x, dt: _arr(x))
reciprocal = _unary("reciprocal", lambda x, dt: lax.integer_pow(x, -1), "inexact")


def _no_complex(name, dt):
    if dt.kind == "c":
        raise TypeError(f"{name} does not support complex-valued inputs (got "
                        f"{_dtype_name(dt)}).")


def _floor_divide(a, b, dt):
    _no_complex("floor_divide", dt)
    k = _kind(dt)
    if k == "u":
        return lax.div(a, b)
    if k == "i":
        q = lax.div(a, b)
        # truncation -> floor: one less where the signs differ and the division is inexact
        fix = lax.bitwise_and(lax.ne(lax.sign(a), lax.sign(b)),
                              lax.ne(lax.rem(a, b), _const(a, 0)))
        return where(fix, lax.sub(q, _lit(q, 1)), q)
    return _float_divmod(a, b)[0]


def _float_divmod(a, b):
    """Python's float divmod: the remainder takes the divisor's sign, the quotient is the
    rounded floor of the exact quotient."""
    mod = lax.rem(a, b)
    exact = where(lax.eq(b, _const(b, 0)), a, lax.sub(a, mod))
    div = lax.div(exact, b)
    fix = lax.bitwise_and(lax.ne(mod, _const(mod, 0)), lax.ne(lax.sign(b), lax.sign(mod)))
    mod = lax.select(fix, lax.add(mod, b), mod)
    div = lax.select(fix, lax.sub(div, _lit(div, 1)), div)
    return lax.round(div), mod


floor_divide = _binary("floor_divide", _floor_divide, "numeric", jit_name="floor_divide")


def _safe_int_divisor(b, dt):
    """Integer divisors with 0 replaced by 1 (JAX's remainder/fmod give 0 for x % 0)."""
    if _kind(dt) not in "iu":
        return b
    # a rank-0 divisor's 1 is a scalar (a literal in a traced program, as in JAX)
    a = get_aval(b)
    one = _full_like(b, 1) if a.shape else lax.scalar_as(1, a.dtype, a.weak_type)
    return where(lax.eq(b, _const(b, 0)), one, b)


def _remainder(a, b, dt):
    _no_complex("remainder", dt)
    b = _safe_int_divisor(b, dt)
    zero = _strong(dt, 0)
    r = lax.rem(a, b)
    # NumPy/Python convention: a nonzero remainder takes the divisor's sign
    nonzero = lax.ne(r, zero)
    fix = lax.bitwise_and(lax.ne(lax.lt(r, zero), lax.lt(b, zero)), nonzero)
    return lax.select(fix, lax.add(r, b), r)


remainder = _binary("remainder", _remainder, "numeric", jit_name="remainder")
mod = _binary("mod", _remainder, "numeric", jit_name="remainder")


@named_jit("fmod")
def fmod(x1, x2, /):
    """Remainder of truncated division, with the dividend's sign (``jax.numpy.fmod``).

    Integer ``x % 0`` is 0 (bools promote to int and keep ``x % 0 == x``, as JAX).  Raises
    TypeError for complex inputs."""
    check_arraylike("fmod", x1, x2)
    was_int = _kind(dtypes.result_type(x1, x2)) in "iu"
    a, b, dt = _args2("fmod", x1, x2, "numeric")
    _no_complex("fmod", dt)
    return lax.rem(a, _safe_int_divisor(b, dt) if was_int else b)


@named_jit("divmod")
def divmod(x1, x2, /):
    """``(floor_divide(x1, x2), remainder(x1, x2))`` in one pass (``jax.numpy.divmod``).

    Raises TypeError for complex inputs and non-array arguments."""
    a, b, dt = _args2("divmod", x1, x2, "numeric")
    _no_complex("divmod", dt)
    if _kind(dt) in "iu":
        return _floor_divide(a, b, dt), _remainder(a, b, dt)
    return _float_divmod(a, b)


def _static_int(x):
    """The Python int of a concrete integer scalar exponent, or None."""
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (np.ndarray, ArrayImpl)) and x.shape == () and \
            _kind(dtypes.canonicalize_dtype(x.dtype)) in "iub":
        return operator.index(x.item() if isinstance(x, np.ndarray) else int(x))
    return None


def _int_power(base, e):
    """``base ** e`` for integer arrays: square-and-multiply over the low 6 bits of ``e``
    (any larger exponent overflows every base but 0 and +-1, whose powers only depend on
    those bits), as JAX does.  ``0 ** e`` is 0 for ``e != 0``."""
    dt = get_aval(e).dtype
    zero, one = _strong(dt, 0), _strong(dt, 1)
    acc = where(lax.bitwise_and(lax.eq(base, zero), lax.ne(e, zero)), zero, one)
    for _ in range(6):
        acc = where(lax.ne(lax.bitwise_and(e, one), zero), lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        e = lax.shift_right_logical(e, one)
    return acc


def power(x1, x2, /):
    """``x1 ** x2`` elementwise (``jax.numpy.power``).

    A concrete integer exponent (Python int, NumPy integer, concrete rank-0 integer array)
    uses repeated multiplication (``lax.integer_pow``): exact for integers, and integer
    bases with a negative one raise TypeError.  Integer arrays raised to integer arrays use
    square-and-multiply; otherwise both are promoted and ``lax.pow`` is used.
    """
    check_arraylike("power", x1, x2)
    n = _static_int(x2)
    if n is not None:
        (a,), dt = _promote("power", (x1,), "numeric")
        if _kind(dt) in "iu" and n < 0:
            raise TypeError(f"power: a negative integer exponent needs a float base; "
                            f"integer_pow({get_aval(a).str_short()}, {n}) was requested")
        return lax.integer_pow(a, n)
    a, b, dt = _args2("power", x1, x2, "numeric")
    if _kind(dt) in "iu":
        return _int_power(a, b)
    (d1, w1), (d2, w2) = dtypes.result_type_and_weak(x1), dtypes.result_type_and_weak(x2)
    if _kind(d1) in "fc" and _kind(d2) in "iu":
        # a float or complex base with an integer exponent: the exponent stays an integer,
        # so the derivative in the base is 0 where the exponent is 0 (also at base 0),
        # and the result's weak type is the base's and the exponent's, as in JAX
        return lax.pow(*_broadcast("power", (_cast(x1, d1, w1), _cast(x2, d2, w2))))
    return lax.pow(a, b)


pow = power


def float_power(x, y, /):
    """``x ** y`` with both promoted to an inexact dtype (``jax.numpy.float_power``).
    Unlike NumPy the result is not widened to float64."""
    a, b, _ = _args2("float_power", x, y, "inexact")
    return lax.pow(a, b)


def _maximum(a, b, dt):
    return lax.max(a, b)


maximum = _binary("maximum", _maximum, fast=lambda dt: _e.max_p)
minimum = _binary("minimum", lambda a, b, dt: lax.min(a, b), fast=lambda dt: _e.min_p)


def _fmax(a, b, dt):
    # a wins where it is larger or b is NaN; ties (0.0 vs -0.0 too) go to b
    # (complex operands are ordered lexicographically, as greater/less do)
    return where(lax.bitwise_or(greater(a, b), lax.ne(b, b)), a, b)


def _fmin(a, b, dt):
    return where(lax.bitwise_or(less(a, b), lax.ne(b, b)), a, b)


fmax = _binary("fmax", _fmax, jit_name="fmax",
               doc="Elementwise maximum ignoring NaN: a NaN loses to a number "
                   "(``jax.numpy.fmax``).  Same promotion and errors as ``maximum``.")
fmin = _binary("fmin", _fmin, jit_name="fmin",
               doc="Elementwise minimum ignoring NaN: a NaN loses to a number "
                   "(``jax.numpy.fmin``).  Same promotion and errors as ``minimum``.")

# ---- comparisons & logic ------------------------------------------------------------

equal = _binary("equal", lambda a, b, dt: lax.eq(a, b), fast=lambda dt: _e.eq_p)
not_equal = _binary("not_equal", lambda a, b, dt: lax.ne(a, b), fast=lambda dt: _e.ne_p)
def _ordered(cmp, prim):
    """An ordered comparison ``(fn, fast)`` for ``_binary``: lax's ``cmp`` takes no complex
    operands, so complex numbers are ordered as JAX orders them: by real part, and by
    imaginary part where the real parts are equal."""
    def fn(a, b, dt):
        if np.dtype(dt).kind != "c":
            return cmp(a, b)
        ra, rb = lax.real(a), lax.real(b)
        return lax.select(lax.eq(ra, rb), cmp(lax.imag(a), lax.imag(b)), cmp(ra, rb))
    return fn, (lambda dt: None if np.dtype(dt).kind == "c" else prim)


def _comparison(name, cmp, prim):
    fn, fast = _ordered(cmp, prim)
    return _binary(name, fn, fast=fast)


less = _comparison("less", lax.lt, _e.lt_p)
less_equal = _comparison("less_equal", lax.le, _e.le_p)
greater = _comparison("greater", lax.gt, _e.gt_p)
greater_equal = _comparison("greater_equal", lax.ge, _e.ge_p)


def _to_bool(x):
    """``x != 0`` (weak stays weak), or ``x`` itself when already bool."""
    if get_aval(x).dtype == _BOOL:
        return x
    return lax.ne(x, _const(x, 0))


def _logical(name, op):
    def f(x1, x2, /):
        (a, b), _ = _promote(name, (x1, x2))
        a, b = _to_bool(a), _to_bool(b)
        sa, sb = _shape(a), _shape(b)
        if sa != sb and sa and sb:
            a, b = _broadcast(name, (a, b))
        return op(a, b)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"Elementwise ``{name}`` of the truth values (nonzero is True) "
                 f"(``jax.numpy.{name}``); bool result, NumPy broadcasting.")
    return f


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x, /):
    """Elementwise NOT of the truth value (``jax.numpy.logical_not``); bool result."""
    check_arraylike("logical_not", x)
    return lax.bitwise_not(_to_bool(x))


def _integral_only(name, dt, numeric=False):
    if _kind(dt) not in "iub":
        raise TypeError(f"{name} does not accept dtype {_dtype_name(dt)}. Accepted dtypes "
                        f"are subtypes of integer{'' if numeric else ', bool'}.")


def _bitwise(name, op):
    def fn(a, b, dt):
        _integral_only(name, dt)
        return op(a, b)
    return _binary(name, fn)


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor)


def _bitwise_not(x, dt):
    _integral_only("bitwise_not", dt)
    return lax.bitwise_not(x)


bitwise_not = _unary("bitwise_not", _bitwise_not)
invert = _unary("invert", _bitwise_not)
bitwise_invert = _unary("bitwise_invert", _bitwise_not)


def _left_shift(a, b, dt):
    _integral_only("left_shift", dt, True)
    return lax.shift_left(a, b)


def _right_shift(a, b, dt):
    _integral_only("right_shift", dt, True)
    if _kind(dt) == "u":
        return lax.shift_right_logical(a, b)
    return lax.shift_right_arithmetic(a, b)


left_shift = _binary("left_shift", _left_shift, "numeric")
bitwise_left_shift = _binary("bitwise_left_shift", _left_shift, "numeric")
right_shift = _binary("right_shift", _right_shift, "numeric")
bitwise_right_shift = _binary("bitwise_right_shift", _right_shift, "numeric")


def _bitwise_count(x, dt):
    _integral_only("bitwise_count", dt, True)
    if _kind(dt) == "i":
        x = lax.abs(x)   # NumPy counts the bits of the magnitude
    return lax.convert_element_type(lax.population_count(x), np.uint8)


bitwise_count = _unary(
    "bitwise_count", _bitwise_count, "numeric",
    doc="Number of 1 bits in ``|x|`` (``jax.numpy.bitwise_count``); uint8 result.  "
        "Raises TypeError for inexact dtypes.")

# ---- exponentials, logs, trig -------------------------------------------------------


def _lax_unary(name, op):
    return _unary(name, lambda x, dt: op(x), "inexact")


exp = _lax_unary("exp", lax.exp)
expm1 = _lax_unary("expm1", lax.expm1)
log = _lax_unary("log", lax.log)
log1p = _lax_unary("log1p", lax.log1p)
sin = _lax_unary("sin", lax.sin)
cos = _lax_unary("cos", lax.cos)
tan = _lax_unary("tan", lax.tan)
arcsin = _lax_unary("arcsin", lax.asin)
arccos = _lax_unary("arccos", lax.acos)
arctan = _lax_unary("arctan", lax.atan)
sinh = _lax_unary("sinh", lax.sinh)
cosh = _lax_unary("cosh", lax.cosh)
tanh = _lax_unary("tanh", lax.tanh)
arcsinh = _lax_unary("arcsinh", lax.asinh)
arccosh = _lax_unary("arccosh", lax.acosh)
arctanh = _lax_unary("arctanh", lax.atanh)
asin = _lax_unary("asin", lax.asin)
acos = _lax_unary("acos", lax.acos)
atan = _lax_unary("atan", lax.atan)
asinh = _lax_unary("asinh", lax.asinh)
acosh = _lax_unary("acosh", lax.acosh)
atanh = _lax_unary("atanh", lax.atanh)
sqrt = _lax_unary("sqrt", lax.sqrt)
cbrt = _lax_unary("cbrt", lax.cbrt)


def _exp2(x, dt):
    if _kind(dt) == "c":
        return lax.exp(lax.mul(x, _const(x, math.log(2))))
    return lax.exp2(x)


exp2 = _unary("exp2", _exp2, "inexact")


def _log_base(base):
    def fn(x, dt):
        ln_b = math.log(base)
        lx = lax.log(x)
        if _kind(dt) == "c":
            rdt = get_aval(lax.real(lx)).dtype
            c = _strong(rdt, ln_b)
            return lax.complex(lax.div(lax.real(lx), c), lax.div(lax.imag(lx), c))
        return lax.div(lx, _strong(dt, ln_b))
    return fn


log2 = _unary("log2", _log_base(2), "inexact")
log10 = _unary("log10", _log_base(10), "inexact")


def _arctan2(a, b, dt):
    return lax.atan2(a, b)


arctan2 = _binary("arctan2", _arctan2, "inexact")


def atan2(x1, x2, /):
    """``arctan2`` of ``x1`` and ``x2`` first promoted to their common dtype
    (``jax.numpy.atan2``, the array-API name): a Python int meets an integer array in the
    array's dtype, wrapping (``atan2(uint8 [1], 300)`` is ``arctan2(1, 44)``), before the
    float promotion.  Raises as ``arctan2``."""
    (x1, x2), _ = _promote("atan2", (x1, x2))
    return arctan2(x1, x2)

square = _unary("square", lambda x, dt: lax.square(x), "numeric")

deg2rad = _unary("deg2rad", lambda x, dt: lax.mul(x, _const(x, math.pi / 180)), "inexact")
radians = _unary("radians", lambda x, dt: lax.mul(x, _const(x, math.pi / 180)), "inexact")
rad2deg = _unary("rad2deg", lambda x, dt: lax.mul(x, _const(x, 180 / math.pi)), "inexact")
degrees = _unary("degrees", lambda x, dt: lax.mul(x, _const(x, 180 / math.pi)), "inexact")


def _hypot(a, b, dt):
    if _kind(dt) == "c":
        raise ValueError("jnp.hypot takes real inputs only; for complex values pass their "
                         "magnitudes, e.g. abs(x).")
    a, b = lax.abs(a), lax.abs(b)
    inf = lax.bitwise_or(_isposinf(a, dt), _isposinf(b, dt))
    big, small = maximum(a, b), minimum(a, b)
    zero = lax.eq(big, _const(big, 0))
    ratio = lax.div(small, where(zero, _full_like(big, 1), big))
    out = where(zero, big, lax.mul(big, lax.sqrt(add(1, lax.square(ratio)))))
    return where(inf, _const(out, np.inf), out)


hypot = _binary("hypot", _hypot, "inexact",
                doc="``sqrt(x1**2 + x2**2)`` without overflow (``jax.numpy.hypot``); inf "
                    "if either is infinite.  Raises ValueError for complex inputs.")


def _logaddexp_base(a, b, dt, base):
    """``log_base(base**a + base**b)`` as ``max + log_base(1 + base**(min - max))``."""
    exp_b = lax.exp if base == "e" else lax.exp2
    big = lax.max(a, b)
    scale = None if base == "e" else _const(big, 1 / math.log(2))

    def log1p_b(v):
        out = lax.log1p(v)
        return out if scale is None else lax.mul(scale, out)

    if _kind(dt) == "c":
        # (a + b) - 2 max is min - max, and NaN when an infinity is involved
        delta = lax.sub(lax.add(a, b), lax.mul(big, _const(big, 2)))
        out = lax.add(big, log1p_b(exp_b(delta)))
        period = math.pi if base == "e" else math.pi / math.log(2)
        im = lax.imag(out)
        # the imaginary part wrapped into [-period, period)
        im = lax.sub(_remainder(lax.add(im, _const(im, period)), _const(im, 2 * period),
                                get_aval(im).dtype), _const(im, period))
        return lax.complex(lax.real(out), im)
    delta = lax.sub(a, b)
    # delta is NaN when both are infinite with one sign (or one is NaN): a + b is right
    # (computed in JAX's order, which its programs print)
    nan, both = lax.ne(delta, delta), lax.add(a, b)
    out = lax.add(big, log1p_b(exp_b(lax.neg(lax.abs(delta)))))
    return lax.select(nan, both, out)


def _no_posinf(x):
    """``x`` with +inf (in the real part) replaced by 0, for the log-add-exp derivatives."""
    re = lax.real(x) if _kind(get_aval(x).dtype) == "c" else x
    return lax.select(lax.eq(re, _const(re, np.inf)), _full_like(x, 0), x)


def _logaddexp_rule(base):
    """log-add-exp with JAX's derivative: each input's tangent weighted by its share
    ``base ** (x_i - out)`` of the sum, so a tie gives each half (differentiating the
    ``max + log1p`` form instead would send all of it through max's tie rule and then
    cancel: softplus'(0) came out 0, not 0.5).  +inf is replaced by 0 before the
    subtraction, as in JAX (at two -inf inputs the weights are NaN there too)."""
    power = lax.exp if base == "e" else lax.exp2
    name = "logaddexp" if base == "e" else "logaddexp2"

    def f(a, b):
        return _logaddexp_base(a, b, get_aval(a).dtype, base)

    # named as JAX's function and rule, which programs print
    f.__name__ = f.__qualname__ = name
    f = custom_jvp(f)

    @f.defjvp
    def f_jvp(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        out = f(a, b)
        ro = _no_posinf(out)
        t = lax.add(lax.mul(ta, power(lax.sub(_no_posinf(a), ro))),
                    lax.mul(tb, power(lax.sub(_no_posinf(b), ro))))
        return out, t
    f_jvp.__name__ = f_jvp.__qualname__ = f"_{name}_jvp"
    return f


_logaddexp_e = _logaddexp_rule("e")
_logaddexp_2 = _logaddexp_rule(2)


def _logaddexp(a, b, dt):
    return _logaddexp_e(a, b)


def _logaddexp2(a, b, dt):
    return _logaddexp_2(a, b)


logaddexp = _binary("logaddexp", _logaddexp, "inexact",
                    doc="``log(exp(x1) + exp(x2))`` without overflow (``jax.numpy."
                        "logaddexp``).")
logaddexp2 = _binary("logaddexp2", _logaddexp2, "inexact",
                     doc="``log2(2**x1 + 2**x2)`` without overflow (``jax.numpy."
                         "logaddexp2``).")


def _signbit_float(x, dt):
    # the bits as a signed integer, shifted right arithmetically by width - 1 (-1 where
    # the sign bit is set, else 0), as bool: JAX's decomposition
    ibits = np.dtype(f"i{np.dtype(dt).itemsize}")
    shift = lax.shift_right_arithmetic(lax.bitcast_convert_type(x, ibits),
                                       _strong(ibits, 8 * ibits.itemsize - 1))
    return lax.convert_element_type(shift, _BOOL)


def _copysign(a, b, dt):
    if _kind(dt) == "c":
        raise TypeError("copysign: complex inputs are rejected (a complex number has no "
                        "sign bit)")
    # JAX's decomposition (jnp.signbit of the sign source, |a| taken for each branch)
    return where(signbit(b), lax.neg(lax.abs(a)), lax.abs(a))


copysign = _binary("copysign", _copysign, "inexact", jit_name="copysign",
                   doc="``|x1|`` with the sign bit of ``x2`` (``jax.numpy.copysign``); "
                       "raises TypeError for complex inputs.")


def _nextafter(a, b, dt):
    if _kind(dt) == "c":
        raise TypeError(f"nextafter does not accept dtype {_dtype_name(dt)}. Accepted "
                        f"dtypes are subtypes of floating.")
    return lax.nextafter(a, b)


nextafter = _binary("nextafter", _nextafter, "inexact",
                    doc="The next representable value after ``x`` toward ``y`` "
                        "(``jax.numpy.nextafter``).")


def _heaviside(a, b, dt):
    if _kind(dt) == "c":
        raise TypeError("heaviside takes real inputs only, not complex")
    zero = _const(a, 0)
    return where(lax.lt(a, zero), zero,
                 where(lax.gt(a, zero), _const(a, 1), where(lax.ne(a, a), a, b)))


heaviside = _binary("heaviside", _heaviside, "inexact", jit_name="heaviside",
                    doc="Step function: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 "
                        "where ``x1 > 0`` (``jax.numpy.heaviside``).")


def _sinc(x, dt):
    zero = lax.eq(x, _const(x, 0))
    pix = lax.mul(_const(x, math.pi), x)
    safe = where(zero, _const(x, 1), pix)
    return where(zero, _sinc_at_zero(0, pix), lax.div(lax.sin(safe), safe))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sinc_at_zero(k, y):
    """The k-th derivative of sin(y)/y at y = 0, shaped like ``y``: (-1)**(k/2) / (k + 1)
    for even k, 0 for odd k.  Its JVP is the next one, so every derivative of sinc at 0 is
    exact (as JAX's: the second is -pi**2/3, where the safe-division form gives 0)."""
    c = 0.0 if k % 2 else (-1) ** (k // 2) / (k + 1)
    return lax.add(lax.mul(y, _const(y, 0)), _const(y, c))


@_sinc_at_zero.defjvp
def _sinc_at_zero_jvp(k, primals, tangents):
    (y,), (t,) = primals, tangents
    return _sinc_at_zero(k, y), lax.mul(_sinc_at_zero(k + 1, y), t)


sinc = _unary("sinc", _sinc, "inexact",
              doc="``sin(pi x) / (pi x)``, 1 at 0 (``jax.numpy.sinc``).")

# ---- rounding, sign, abs ------------------------------------------------------------


def _keep_int(name, op):
    def fn(x, dt):
        k = _kind(dt)
        if k in "iub":
            return _arr(x)
        if k == "c":
            raise TypeError(f"{name} does not accept dtype {_dtype_name(dt)}. Accepted "
                            f"dtypes are subtypes of floating.")
        return op(x)
    return fn


floor = _unary("floor", _keep_int("floor", lax.floor))
ceil = _unary("ceil", _keep_int("ceil", lax.ceil))
trunc = _unary("trunc", _keep_int("trunc", lambda x: where(lax.lt(x, _const(x, 0)),
                                                           lax.ceil(x), lax.floor(x))),
               jit_name="trunc")


def _rint(x, dt):
    k = _kind(dt)
    if k in "iub":
        return _arr(lax.convert_element_type(x, dtypes.default_float_dtype()))
    if k == "c":
        return lax.complex(lax.round(lax.real(x), 1), lax.round(lax.imag(x), 1))
    return lax.round(x, 1)


rint = _unary("rint", _rint, jit_name="rint", doc="Rounds to the nearest integer, ties to even "
              "(``jax.numpy.rint``); integer and bool inputs become the default float.")


@named_jit("round", static_argnames=("decimals",))
def round(a, decimals=0, out=None):
    """Rounds to ``decimals`` places, ties to even (``jax.numpy.round``).

    Integers are returned as they are; complex numbers round both parts.  Raises ValueError
    for bool input, NotImplementedError for ``out`` and for integers with ``decimals < 0``
    (as JAX).
    """
    if out is not None:
        raise NotImplementedError("jnp.round: out= is unsupported (arrays are immutable)")
    decimals = operator.index(decimals)
    (x,), dt = _promote("round", (a,))
    k = _kind(dt)
    if k == "b":
        raise ValueError(f"data type {np.bool_} not inexact")
    if k in "iu":
        if decimals < 0:
            raise NotImplementedError(f"round: decimals={decimals} (< 0) is not implemented for "
                                      f"integer inputs")
        return _arr(x)
    if k == "c":
        return lax.complex(_round_float(lax.real(x), decimals),
                           _round_float(lax.imag(x), decimals))
    return _round_float(x, decimals)


def _round_float(x, decimals):
    if decimals == 0:
        return lax.round(x, 1)
    # scaled in x's own dtype (a float16 input times 10**decimals may overflow, as in JAX)
    f = _const(x, 10.0 ** decimals)
    return lax.div(lax.round(lax.mul(x, f), 1), f)


around = round


def _abs(x, dt):
    if _kind(dt) in "ub":
        return _arr(x)
    return lax.abs(x)


absolute = _unary("absolute", _abs, doc="Elementwise ``|x|`` (``jax.numpy.absolute``); "
                  "complex inputs give their real dtype, bool and unsigned are unchanged.")
abs = _unary("abs", _abs, doc="Elementwise ``|x|`` (``jax.numpy.abs``); complex inputs "
             "give their real dtype, bool and unsigned are unchanged.")


def _fabs(x, dt):
    if _kind(dt) == "c":
        raise TypeError("fabs takes real inputs only (use abs for complex magnitudes)")
    return lax.abs(x)


fabs = _unary("fabs", _fabs, "inexact")


def _sign(x, dt):
    if dt == _BOOL:
        raise TypeError("sign does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    return lax.sign(x)


sign = _unary("sign", _sign, doc="-1, 0 or 1 by the sign of ``x`` (``x / |x|`` for "
              "complex; -0.0 and NaN are kept) (``jax.numpy.sign``).  Raises TypeError "
              "for bool.")


def _signbit(x, dt):
    k = _kind(dt)
    if k in "iu":
        return lax.lt(x, _strong(dt, 0))
    if k == "b":
        return _full_like(x, False, _BOOL)
    if k == "c":
        raise ValueError(f"signbit: {_dtype_name(dt)} values have no single sign bit")
    return _signbit_float(x, dt)


signbit = _unary("signbit", _signbit, jit_name="signbit", doc="Whether the sign bit is set, -0.0 and -NaN "
                 "included (``jax.numpy.signbit``).  Raises ValueError for complex input.")


def _isnan(x, dt):
    return lax.ne(x, x)


def _isinf(x, dt):
    k = _kind(dt)
    if k == "f":
        return lax.eq(lax.abs(x), _strong(dt, np.inf))
    if k == "c":
        re, im = lax.real(x), lax.imag(x)
        rdt = get_aval(re).dtype
        return lax.bitwise_or(lax.eq(lax.abs(re), _strong(rdt, np.inf)),
                              lax.eq(lax.abs(im), _strong(rdt, np.inf)))
    return _full_like(x, False, _BOOL)


def _isfinite(x, dt):
    k = _kind(dt)
    if k == "f":
        return lax.is_finite(x)
    if k == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return _full_like(x, True, _BOOL)


def _isposinf(x, dt, v=np.inf):
    k = _kind(dt)
    if k == "f":
        return lax.eq(x, _strong(dt, v))
    if k == "c":
        raise ValueError("isposinf/isneginf take real inputs only, not complex")
    return _full_like(x, False, _BOOL)


isnan = _unary("isnan", _isnan)
isinf = _unary("isinf", _isinf, jit_name="isinf")
isfinite = _unary("isfinite", _isfinite)
isposinf = _unary("isposinf", _isposinf)
isneginf = _unary("isneginf", lambda x, dt: _isposinf(x, dt, -np.inf))


def _real(x, dt):
    return lax.real(x) if dt.kind == "c" else _arr(x)


def _imag(x, dt):
    return lax.imag(x) if dt.kind == "c" else _full_like(x, 0)


def _conj(x, dt):
    return lax.conj(x) if dt.kind == "c" else _arr(x)


real = _unary("real", _real)
imag = _unary("imag", _imag)
conjugate = _unary("conjugate", _conj)
conj = _unary("conj", _conj)


def angle(z, deg=False):
    """The argument of ``z`` in ``(-pi, pi]``, ``atan2(imag(z), real(z))``
    (``jax.numpy.angle``); in degrees when ``deg``.

    Integers and bools become the default float dtype, and so does a 0-d real float of any
    width; complex inputs give their real dtype; as in JAX, a real input gives a strongly
    typed result (a weak complex one stays weak).  Real inputs give 0, or pi for negative
    numbers and -0.0.  Raises TypeError for non-array arguments.
    """
    check_arraylike("angle", z)
    (x,), dt = _promote("angle", (z,), "inexact")
    if _kind(dt) == "f" and np.ndim(z) == 0:
        # JAX takes a 0-d real float (float16/bfloat16 too) in the default float dtype
        dt = dtypes.default_float_dtype()
    if _kind(dt) == "c":
        re, im = lax.real(x), lax.imag(x)
    else:
        re = lax.convert_element_type(x, dt)
        im = _full_like(re, 0)
    out = lax.atan2(im, re)
    return lax.mul(out, _const(out, 180 / math.pi)) if deg else out


def frexp(x, /):
    """``(m, e)`` with ``x == m * 2**e``, ``0.5 <= |m| < 1`` (``jax.numpy.frexp``).

    ``m`` has x's inexact dtype, ``e`` is int32; zeros, infinities and NaN give
    ``(x, 0)``.  Raises TypeError for complex input.
    """
    (x,), dt = _promote("frexp", (x,), "inexact")
    if _kind(dt) == "c":
        raise TypeError("frexp takes real inputs only, not complex")
    return _frexp(x, dt)


def _frexp(x, dt):
    info = dtypes.finfo(dt)
    nbits, nmant = info.bits, info.nmant
    bias = info.maxexp - 1
    ut = np.dtype(f"u{nbits // 8}")
    # subnormals: scale into the normal range first, and take the scale off the exponent
    sub = lax.bitwise_and(lax.lt(lax.abs(x), _strong(dt, float(info.smallest_normal))),
                          lax.ne(x, _strong(dt, 0)))
    xs = where(sub, lax.mul(x, _strong(dt, 2.0 ** (nmant + 1))), x)
    bits = lax.bitcast_convert_type(xs, ut)
    exp_mask = ((1 << (nbits - 1 - nmant)) - 1) << nmant
    field = lax.shift_right_logical(lax.bitwise_and(bits, _strong(ut, exp_mask)),
                                    _strong(ut, nmant))
    e = lax.sub(lax.convert_element_type(field, _I32), _strong(_I32, bias - 1))
    e = lax.sub(e, where(sub, _strong(_I32, nmant + 1), _strong(_I32, 0)))
    mbits = lax.bitwise_or(lax.bitwise_and(bits, _strong(ut, ~exp_mask & ((1 << nbits) - 1))),
                           _strong(ut, (bias - 1) << nmant))
    m = lax.bitcast_convert_type(mbits, dt)
    special = lax.bitwise_or(lax.eq(x, _strong(dt, 0)), lax.bitwise_not(lax.is_finite(x)))
    return where(special, x, m), where(special, _strong(_I32, 0), e)


def _pow2(k, dt):
    """``2.0 ** k`` exactly, for int32 ``k`` within dt's normal exponent range."""
    info = dtypes.finfo(dt)
    ut = np.dtype(f"u{info.bits // 8}")
    biased = lax.convert_element_type(lax.add(k, _strong(_I32, info.maxexp - 1)), ut)
    return lax.bitcast_convert_type(lax.shift_left(biased, _strong(ut, info.nmant)), dt)


def ldexp(x1, x2, /):
    """``x1 * 2**x2`` computed without intermediate overflow (``jax.numpy.ldexp``).

    ``x2`` must be an integer array; the result has x1's inexact dtype (never weak).
    Raises ValueError for an inexact ``x2`` or a complex ``x1``.
    """
    check_arraylike("ldexp", x1, x2)
    d1, _ = dtypes.result_type_and_weak(x1)
    d2, _ = dtypes.result_type_and_weak(x2)
    if d1.kind == "c" or dtypes.is_inexact(d2):
        raise ValueError(f"ldexp not supported for input types ({d1!r}, {d2!r})")
    (a,), dt = _promote("ldexp", (x1,), "inexact")
    (b,), _ = _promote("ldexp", (x2,))
    a, b = _broadcast("ldexp", (a, b))
    info = dtypes.finfo(dt)
    limit = 2 * (info.maxexp - info.minexp + info.nmant)
    bi = dtypes.iinfo(d2) if d2 != _BOOL else None
    b = _arr(b)
    if bi is not None and (bi.max > limit or bi.min < -limit):
        b = lax.clamp(_strong(d2, max(-limit, bi.min)), b, _strong(d2, limit))
    b = lax.convert_element_type(b, _I32)
    m, e = _frexp(a, dt)
    e = lax.clamp(_strong(_I32, info.minexp - info.nmant - 2), lax.add(e, b),
                  _strong(_I32, info.maxexp + 1))
    half = lax.div(e, _strong(_I32, 2))
    out = lax.mul(lax.mul(m, _pow2(half, dt)), _pow2(lax.sub(e, half), dt))
    keep = lax.bitwise_or(_isinf(a, dt), lax.eq(a, _strong(dt, 0)))
    return where(keep, a, out)


@named_jit("modf")
def modf(x, /, out=None):
    """``(fractional part, integral part)``, both with x's sign (``jax.numpy.modf``).

    Raises TypeError for complex input, NotImplementedError for ``out``."""
    if out is not None:
        raise NotImplementedError("jnp.modf: out= is unsupported (arrays are immutable)")
    (x,), dt = _promote("modf", (x,), "inexact")
    if _kind(dt) == "c":
        raise TypeError("modf does not support complex-valued inputs")
    whole = where(lax.ge(x, _const(x, 0)), lax.floor(x), lax.ceil(x))
    return lax.sub(x, whole), whole


def spacing(x, /):
    """Distance from ``x`` to the next representable value away from zero
    (``jax.numpy.spacing``); negative for negative ``x``.  Raises ValueError for complex
    input."""
    (x,), dt = _promote("spacing", (x,), "inexact")
    if _kind(dt) == "c":
        raise ValueError("jnp.spacing takes real inputs only, not complex")
    inf = _strong(dt, np.inf)
    if dt == np.float16:
        return lax.sub(lax.nextafter(x, _full_like(x, np.inf, dt)), x)
    toward = where(_signbit_float(x, dt), _strong(dt, -np.inf), inf)
    r = lax.sub(lax.nextafter(x, toward), x)
    tiny = float(dtypes.finfo(dt).smallest_subnormal)
    return where(lax.eq(r, _strong(dt, 0)),
                 where(_signbit_float(x, dt), _strong(dt, -tiny), _strong(dt, tiny)), r)


def _integer_args(name, x1, x2):
    a, b, dt = _args2(name, x1, x2)
    if _kind(dt) not in "iu":
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    return a, b, dt


def _magnitude(x, dt):
    # lax.abs takes no unsigned integers (as JAX's); they are their own magnitude
    return x if _kind(dt) == "u" else lax.abs(x)


def _gcd(a, b, dt):
    a, b = _magnitude(a, dt), _magnitude(b, dt)
    sa, sb = _shape(a), _shape(b)
    if sa != sb:
        a = lax.broadcast_in_dim(a, sb, ()) if not sa else a
        b = lax.broadcast_in_dim(b, sa, ()) if not sb else b
    # Euclid's algorithm, unrolled: Fibonacci numbers bound the steps by ~1.44 * bits
    for _ in range(int(1.45 * np.dtype(dt).itemsize * 8) + 2):
        nz = lax.ne(b, _const(b, 0))
        safe = where(nz, b, _full_like(b, 1))
        a, b = where(nz, b, a), where(nz, lax.rem(a, safe), _const(b, 0))
    return a


def gcd(x1, x2):
    """Greatest common divisor of ``|x1|`` and ``|x2|`` (``jax.numpy.gcd``); gcd(0, 0) is
    0.  Raises ValueError for non-integer inputs."""
    return _gcd(*_integer_args("gcd", x1, x2))


def lcm(x1, x2):
    """Least common multiple of ``|x1|`` and ``|x2|`` (``jax.numpy.lcm``); 0 if either is
    0.  Raises ValueError for non-integer inputs."""
    a, b, dt = _integer_args("lcm", x1, x2)
    d = _gcd(a, b, dt)
    zero = lax.eq(d, _const(d, 0))
    q = lax.div(_magnitude(b, dt), where(zero, _full_like(d, 1), d))
    return where(zero, _const(d, 0), lax.mul(_magnitude(a, dt), q))


# ---- selection ----------------------------------------------------------------------


@named_jit("clip")
def clip(arr=None, /, min=None, max=None):
    """``arr`` limited to ``[min, max]`` elementwise (``jax.numpy.clip``); either bound may
    be None.  Bounds promote with ``arr`` (``clip(int_array, 0.5, 2)`` is float).  Raises
    ValueError for complex input."""
    check_arraylike("clip", arr)
    if get_aval(arr).dtype.kind == "c":
        raise ValueError("clip: complex numbers are unordered, so a complex array, min or "
                         "max cannot be clipped.")
    x = arr
    if min is not None:
        x = maximum(min, x)
    if max is not None:
        x = minimum(max, x)
    return _arr(x)


@key_aware("x", "y")        # selects typed PRNG keys too, as JAX (lax/_keyaware.py)
def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y``, broadcasting all three (``jax.numpy.where``).

    ``x`` and ``y`` promote together; a non-bool condition means ``condition != 0``.  With
    only ``condition``, the indices of its nonzero elements (see ``nonzero``).  Raises
    TypeError for non-array arguments (``None`` for just one of ``x``/``y`` included),
    ValueError for shapes that do not broadcast.
    """
    if x is None and y is None:
        from ._sorting import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    check_arraylike("where", condition, x, y)
    if _trace_state().dynamic.trace_type is JaxprTrace:   # staging(), inlined: eager fast
        return _where_staged(condition, x, y)
    return _where(condition, x, y)


def _where(condition, x, y):
    # JAX's order: the condition made bool, x and y promoted, then all three broadcast to
    # one shape (a rank-0 condition stays as it is).  Run eagerly, rank-0 values are not
    # broadcast (select takes them as they are: the same result, no array materialised;
    # JAX's jit on where exists to avoid that materialisation too).
    c = _to_bool(condition)
    (x, y), _ = _promote("where", (x, y))
    sc, sx, sy = _shape(c), _shape(x), _shape(y)
    if sx != sy or (sc and sc != sx):
        if staging():
            args = (x, y) if not sc else (c, x, y)
            out = _broadcast_all("where", args)
            x, y = out[-2:]
            c = out[0] if sc else c
        else:
            c, x, y = _broadcast("where", (c, x, y), always_value_error=True, full=True)
    return lax.select(c, x, y)


_where_staged = named_jit("_where")(_where)


def _broadcast_all(name, args):
    """``args`` broadcast to their common shape, rank-0 ones included (ValueError when
    the shapes do not broadcast)."""
    shapes = [_shape(a) for a in args]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        got = ", ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"Incompatible shapes {got} for {name}: they have no common "
                         f"broadcast shape") from None
    return [broadcast_to_shape(a, shape) for a in args]


@named_jit("nan_to_num")
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the largest finite value), -inf ->
    ``neginf`` (default: the most negative finite value) (``jax.numpy.nan_to_num``).
    Complex inputs are treated part by part; integer and bool inputs are returned as they
    are."""
    del copy
    (x,), dt = _promote("nan_to_num", (x,))
    k = _kind(dt)
    if k in "iub":
        return _arr(x)
    if k == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(dt)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = where(lax.ne(x, x), _fill(nan, dt), x)
    out = where(lax.eq(out, _strong(dt, np.inf)), _fill(posinf, dt), out)
    return where(lax.eq(out, _strong(dt, -np.inf)), _fill(neginf, dt), out)


def _fill(v, dt):
    return _strong(dt, v) if isinstance(v, _PY + (np.generic,)) else _cast(v, dt, False)


dtypes.register_scalar_constructor(lambda x, dt: _scalar_value(x, dt))


def _scalar_value(x, dt):
    from ._creation import asarray
    return asarray(x, dtype=dt)


__all__ = public_names(globals())
