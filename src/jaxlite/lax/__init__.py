"""``jaxlite.lax``: thin, strict wrappers over primitives (``jax.lax``).

Unlike ``jaxlite.numpy`` these do not promote dtypes or broadcast ranks: operands must
agree.  A Python scalar is a weakly typed operand of its kind's default dtype (int32,
float32, complex64 or bool; 64-bit under x64), so ``lax.add(f32_array, 2.5)`` works and
``lax.add(f32_array, 2)`` raises TypeError, as in JAX.  Errors are the primitives' own
(TypeError naming the dtypes/shapes).
"""
from __future__ import annotations

import builtins
import enum
import operator as _operator

import numpy as np

from .. import dtypes
from ..core.array import ArrayImpl as _ArrayImpl
from ..core.avals import scalar_aval
from ..core.eager import from_host as _from_host
from ..core.trace import Tracer as _Tracer
from ..core.trace import get_aval
from ..primitives import control as _c
from ..primitives import elementwise as _e
from ..primitives import indexing as _ix
from ..primitives import linalg as _l
from ..primitives import reduction as _r
from ..primitives import shape as _s
from ._precision import AccuracyMode, DotAlgorithmPreset, Precision, Tolerance  # noqa: F401
from ._precision import check_accuracy as _check_accuracy
from ._precision import canonicalize_precision as _canonicalize_precision

_PY_SCALARS = (bool, int, float, complex)


def _is_scalar(x):
    return isinstance(x, _PY_SCALARS)


def scalar_as(x, dtype, weak: bool):
    """A Python scalar ``x`` typed as ``dtype``: a Python scalar of the matching kind when
    the result is weakly typed (its default dtype is then ``dtype``), else a NumPy scalar.

    Raises OverflowError when ``x`` does not fit ``dtype`` (e.g. 300 as int8), as JAX.
    """
    if type(dtype) is not np.dtype:
        dtype = np.dtype(dtype)
    kind = dtype.kind
    if weak:
        py = int(x) if kind in "iu" else float(x) if kind == "f" else \
            builtins.complex(x) if kind == "c" else None
        if py is not None and scalar_aval(py).dtype == dtype:
            return py
    if kind == "b":
        return np.bool_(bool(x))
    if isinstance(x, builtins.complex) and kind != "c":
        x = x.real
    if kind in "iu" and not isinstance(x, (bool, int)):
        x = int(x)
    if kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
    return dtype.type(x)


def _match_scalars(args):
    """Python scalars take the dtype of the first non-scalar operand."""
    ref = None
    for a in args:
        if type(a) not in _PY_SCALARS:
            ref = a
            break
    if ref is None:
        return args
    aval = get_aval(ref)
    return [scalar_as(a, aval.dtype, aval.weak_type) if type(a) in _PY_SCALARS else a
            for a in args]


def _as_array(x):
    """``x`` as a jaxlite Array when it is a NumPy value or Python scalar (an Array or a
    tracer is returned as it is): the shape ops that have nothing to do still return an
    Array of the canonical dtype and weak type, as JAX does."""
    if isinstance(x, (_ArrayImpl, _Tracer)):
        return x
    aval = get_aval(x)
    return _from_host(x, aval.dtype, aval.weak_type)


def _unary(p):
    def fn(x):
        return p.bind(x)
    fn.__name__ = p.name
    fn.__doc__ = f"Elementwise ``{p.name}`` (``jax.lax.{p.name}``); keeps shape and dtype."
    return fn


def _binary(p):
    def fn(x, y):
        # a Python scalar is bound as it is: its own weak default dtype meets the other
        # operand's in the primitive's dtype check (no conversion to the other's dtype);
        # size-1 dimensions broadcast in the primitive, as JAX's
        return p.bind(x, y)
    fn.__name__ = p.name
    fn.__doc__ = (f"Elementwise ``{p.name}`` of two operands of one dtype "
                  f"(``jax.lax.{p.name}``).  Shapes must be equal, except that rank-0 "
                  f"operands and size-1 dimensions (of operands of equal rank) broadcast.  "
                  f"A Python scalar has its kind's default dtype (``2.5`` is float32, "
                  f"weakly typed), so it only matches an operand of that dtype.  "
                  f"Raises TypeError on mismatched dtypes, ranks or sizes; OverflowError "
                  f"for a Python int outside the default int dtype.")
    return fn


def _unary_accuracy(p, checked=True):
    """``_unary`` with JAX's ``accuracy=`` option of the transcendental functions: None, an
    ``AccuracyMode`` or a ``Tolerance`` (NotImplementedError otherwise; JAX's ``logistic``,
    ``checked=False``, takes any value unchecked).  jaxlite's one implementation of the
    function serves every accuracy, so the option selects nothing and is not kept in the
    program."""
    def fn(x, *, accuracy=None):
        if checked:
            _check_accuracy(accuracy)
        return p.bind(x)
    fn.__name__ = p.name
    fn.__doc__ = (f"Elementwise ``{p.name}`` (``jax.lax.{p.name}``); keeps shape and dtype.  "
                  f"``accuracy``: None, a ``lax.AccuracyMode`` or a ``lax.Tolerance`` (one "
                  f"implementation serves them all).")
    return fn


neg = _unary(_e.neg_p)
sign = _unary(_e.sign_p)
floor = _unary(_e.floor_p)
ceil = _unary(_e.ceil_p)
is_finite = _unary(_e.is_finite_p)
exp = _unary_accuracy(_e.exp_p)
exp2 = _unary_accuracy(_e.exp2_p)
log = _unary_accuracy(_e.log_p)
log1p = _unary_accuracy(_e.log1p_p)
expm1 = _unary_accuracy(_e.expm1_p)
tanh = _unary_accuracy(_e.tanh_p)
logistic = _unary_accuracy(_e.logistic_p, checked=False)
sin = _unary_accuracy(_e.sin_p)
cos = _unary_accuracy(_e.cos_p)
tan = _unary_accuracy(_e.tan_p)
asin = _unary(_e.asin_p)
acos = _unary(_e.acos_p)
atan = _unary(_e.atan_p)
sinh = _unary(_e.sinh_p)
cosh = _unary(_e.cosh_p)
asinh = _unary(_e.asinh_p)
acosh = _unary(_e.acosh_p)
atanh = _unary(_e.atanh_p)
sqrt = _unary_accuracy(_e.sqrt_p)
rsqrt = _unary_accuracy(_e.rsqrt_p)
cbrt = _unary_accuracy(_e.cbrt_p)
abs = _unary(_e.abs_p)
bitwise_not = _unary(_e.not_p)
real = _unary(_e.real_p)
imag = _unary(_e.imag_p)


def conj(x):
    """Elementwise complex conjugate (``jax.lax.conj``).

    Complex operands keep their dtype; float32/float64 operands (and Python floats) give
    the complex dtype of their width with a zero imaginary part (``complex64`` for
    float32), keeping a weak type.  Raises TypeError for other dtypes (integers, bool,
    float16, bfloat16), as JAX.  ``None`` raises ValueError (JAX reads the operand's dtype
    first, and there is no dtype of None); other non-arrays raise TypeError.
    """
    if x is None:
        raise ValueError("Invalid argument to dtype: None (conj takes an array or a scalar).")
    return _e.conj_p.bind(x, input_dtype=get_aval(x).dtype)


square = _unary(_e.square_p)
erf = _unary(_e.erf_p)
erfc = _unary(_e.erfc_p)
lgamma = _unary(_e.lgamma_p)
digamma = _unary(_e.digamma_p)
population_count = _unary(_e.population_count_p)

add = _binary(_e.add_p)
sub = _binary(_e.sub_p)
_mul = _binary(_e.mul_p)


def mul(x, y, *, out_dtype=None):
    """Elementwise product (``jax.lax.mul``) of two operands of one dtype, with
    ``_binary``'s shape rules.

    ``out_dtype``: the product's dtype; the operands may then be of any numeric dtypes
    (``int8 x int8 -> int32`` does not wrap, ``float32 x float16 -> float16``): each is
    converted to ``out_dtype`` (keeping its weak type) and the product computed there, as
    JAX computes it.  jaxlite's program shows the conversions and a plain ``mul``.
    """
    if out_dtype is None:
        return _mul(x, y)
    od = dtypes.canonicalize_dtype(out_dtype)
    return _mul(*(_convert(v, od, get_aval(v).weak_type) for v in (x, y)))
div = _binary(_e.div_p)
rem = _binary(_e.rem_p)
pow = _binary(_e.pow_p)
max = _binary(_e.max_p)
min = _binary(_e.min_p)
atan2 = _binary(_e.atan2_p)
nextafter = _binary(_e.nextafter_p)
bitwise_and = _binary(_e.and_p)
bitwise_or = _binary(_e.or_p)
bitwise_xor = _binary(_e.xor_p)
eq = _binary(_e.eq_p)
ne = _binary(_e.ne_p)
lt = _binary(_e.lt_p)
le = _binary(_e.le_p)
gt = _binary(_e.gt_p)
ge = _binary(_e.ge_p)
shift_left = _binary(_e.shift_left_p)
shift_right_logical = _binary(_e.shift_right_logical_p)
shift_right_arithmetic = _binary(_e.shift_right_arithmetic_p)
complex = _binary(_e.complex_p)


class RoundingMethod(enum.IntEnum):
    """How ``round`` breaks ties (``jax.lax.RoundingMethod``)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=0):
    """Rounds to the nearest integer; ties away from zero (0) or to even (1)
    (``jax.lax.round``; ``RoundingMethod`` members are those ints).  ValueError for any
    other ``rounding_method``, as JAX."""
    if rounding_method not in (0, 1):
        raise ValueError(f"round: {rounding_method!r} is not a valid RoundingMethod (0: "
                         f"away from zero, 1: to nearest even)")
    return _e.round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    """``x ** y`` for a static Python int ``y`` (``jax.lax.integer_pow``); TypeError for a
    ``y`` that is not an integer."""
    try:
        y = _operator.index(y)
    except TypeError:
        raise TypeError(f"integer_pow: y must be an int; got {y!r} of type "
                        f"{type(y).__name__}") from None
    return _e.integer_pow_p.bind(x, y=y)


def select_n(which, *cases):
    """``cases[which]`` elementwise; bool ``which`` picks ``cases[1]`` where True
    (``jax.lax.select_n``).  The cases share one dtype (a Python scalar has its kind's
    default dtype); TypeError otherwise."""
    return _e.select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (``jax.lax.select``)."""
    return select_n(pred, on_false, on_true)


def clamp(min, x, max):
    """``x`` clipped to ``[min, max]`` (``jax.lax.clamp``).

    ``min`` and ``max`` are scalars or of ``x``'s shape, and all three share one dtype (a
    Python scalar has its kind's default dtype: ``clamp(0.0, f32, 1.0)`` works,
    ``clamp(0, f32, 1.0)`` raises TypeError, as JAX)."""
    return _e.clamp_p.bind(min, x, max)


def convert_element_type(operand, new_dtype):
    """``operand`` cast to ``new_dtype`` (canonicalised); float->int truncates toward zero
    (``jax.lax.convert_element_type``).  The result is not weakly typed."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if (type(operand) is int and np.dtype(new_dtype).kind in "iu"
            and np.iinfo(np.int64).min <= operand <= np.iinfo(np.uint64).max
            and not all(np.iinfo(t).min <= operand <= np.iinfo(t).max
                        for t in (new_dtype, dtypes.default_int_dtype()))):
        # a Python int outside the target's (or the default int's) range is cast from its
        # 64-bit value, wrapping modulo 2**bits as JAX does (``2**32`` to int32 is 0)
        wide = np.array(operand, np.uint64 if operand > 0 else np.int64)
        return _e.convert_element_type_p.bind(wide.astype(new_dtype), new_dtype=new_dtype,
                                              weak_type=False)
    if _is_scalar(operand):  # a Python scalar becomes an array, as in JAX
        return _e.convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=False)
    return _convert(operand, new_dtype, False)


def bitcast_convert_type(operand, new_dtype):
    """The bits of ``operand`` reread as ``new_dtype`` (``jax.lax.bitcast_convert_type``):
    same-size dtypes keep the shape; a narrower dtype adds a last dimension, a wider one
    consumes it.  Raises TypeError for a bool or complex operand or target unless the two
    dtypes are the same (as JAX), ValueError when the sizes do not fit the shape."""
    new = np.dtype(dtypes.canonicalize_dtype(new_dtype))
    old = np.dtype(get_aval(operand).dtype)
    if old != new and (old.kind in "bc" or new.kind in "bc"):
        # the size check comes first, as in JAX
        _e.bitcast_convert_type_p.abstract_eval(get_aval(operand), new_dtype=new)
        raise TypeError(f"bitcast_convert_type: bool and complex values are reinterpreted "
                        f"only as their own dtype; got operand dtype {old.name}, new_dtype "
                        f"{new.name}")
    return _e.bitcast_convert_type_p.bind(operand, new_dtype=new)


def _convert(x, new_dtype, weak_type):
    if _is_scalar(x):
        x = scalar_as(x, new_dtype, weak_type) if not weak_type else x
    aval = get_aval(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return _as_array(x)
    return _e.convert_element_type_p.bind(x, new_dtype=np.dtype(new_dtype),
                                          weak_type=bool(weak_type))


# ---- shapes ---------------------------------------------------------------------------

def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """``operand`` broadcast to ``shape``, operand dim i going to ``broadcast_dimensions[i]``
    (``jax.lax.broadcast_in_dim``); the dimensions may come in any order (distinct, each a
    target axis), as in JAX: for a permuted order the operand is transposed first.
    ``out_sharding``: the result's sharding (see ``_sharding_constraints.with_out_sharding``).
    Raises TypeError, naming the shapes and dimensions, when an entry is negative, out of
    the target's range or repeated, when there is not one per operand axis, or when an
    operand axis is neither size 1 nor its target axis's size."""
    if out_sharding is not None:
        return _with_out_sharding(broadcast_in_dim, out_sharding, "broadcast_in_dim",
                                  operand, shape, broadcast_dimensions)
    shape = tuple(int(d) for d in shape)
    bd = tuple(int(d) for d in broadcast_dimensions)
    aval = get_aval(operand)
    if aval.shape == shape and bd == tuple(range(len(shape))):
        return _as_array(operand)
    if list(bd) != sorted(bd) and len(bd) == aval.ndim and len(set(bd)) == len(bd) and \
            all(0 <= d < len(shape) and aval.shape[i] in (1, shape[d])
                for i, d in enumerate(bd)):
        # valid but permuted: the primitive takes ascending dimensions
        order = tuple(sorted(range(len(bd)), key=bd.__getitem__))
        operand, bd = transpose(operand, order), tuple(sorted(bd))
    return _s.broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bd,
                                      sharding=None)


def broadcast(operand, sizes, *, out_sharding=None):
    """Adds leading dimensions ``sizes`` (``jax.lax.broadcast``); ``out_sharding`` as
    ``broadcast_in_dim``'s."""
    if out_sharding is not None:
        return _with_out_sharding(broadcast, out_sharding, "broadcast", operand, sizes)
    aval = get_aval(operand)
    sizes = tuple(sizes)
    return broadcast_in_dim(operand, sizes + aval.shape,
                            tuple(range(len(sizes), len(sizes) + aval.ndim)))


def _concrete_shape(sizes):
    """``sizes`` as a tuple of Python ints.  Raises TypeError, as JAX, for an entry that is
    not a concrete integer (a float such as 1.5, an array of several values, a tracer)."""
    try:
        return tuple(_operator.index(d) for d in sizes)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {tuple(sizes)!r}.") from None


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """``operand`` with shape ``new_sizes`` (row-major), optionally transposed by
    ``dimensions`` first (``jax.lax.reshape``); ``out_sharding`` as
    ``broadcast_in_dim``'s."""
    if out_sharding is not None:
        return _with_out_sharding(reshape, out_sharding, "reshape", operand, new_sizes,
                                  dimensions)
    new_sizes = _concrete_shape(new_sizes)
    aval = get_aval(operand)
    dims = None if dimensions is None or tuple(dimensions) == tuple(range(aval.ndim)) \
        else tuple(dimensions)
    if aval.shape == new_sizes and dims is None:
        return _as_array(operand)
    return _s.reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims, sharding=None)


def transpose(operand, permutation):
    """Permutes dimensions (``jax.lax.transpose``)."""
    perm = tuple(int(p) for p in permutation)
    if perm == tuple(range(len(perm))) and len(perm) == get_aval(operand).ndim:
        return _as_array(operand)
    return _s.transpose_p.bind(operand, permutation=perm)


def squeeze(array, dimensions):
    """Removes the size-1 ``dimensions`` (``jax.lax.squeeze``); negative dimensions count
    from the end.  Raises ValueError for a dimension out of range or not of size 1."""
    ndim = get_aval(array).ndim
    dims = []
    for d in dimensions:
        d = int(d)
        if not -ndim <= d < ndim:
            raise ValueError(f"squeeze: dimension {d} is out of range for an operand of "
                             f"rank {ndim}")
        dims.append(d % ndim)
    dims = tuple(sorted(dims))
    if not dims:
        return _as_array(array)
    return _s.squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
    """Inserts size-1 dimensions at ``dimensions`` (``jax.lax.expand_dims``), each an int
    in ``[-n, n)`` for the result's rank ``n``.  Raises TypeError for a non-int entry and
    ValueError for one out of range or repeated, as JAX."""
    aval = get_aval(array)
    nd = aval.ndim + len(dimensions)
    try:
        given = [_operator.index(d) for d in dimensions]
    except TypeError:
        raise TypeError(f"expand_dims: dimensions must be ints; got {tuple(dimensions)}") \
            from None
    for d in given:
        if not -nd <= d < nd:
            raise ValueError(f"expand_dims: axis {d} is out of bounds for array of "
                             f"dimension {nd}")
    dims = sorted(d % nd for d in given)
    if len(set(dims)) != len(dims):
        raise ValueError(f"expand_dims: repeated axis in dimensions {tuple(given)}")
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return broadcast_in_dim(array, shape, [i for i in range(nd) if i not in dims])


def concatenate(operands, dimension):
    """Joins ``operands`` along ``dimension`` (``jax.lax.concatenate``)."""
    operands = list(operands)
    if len(operands) == 1:
        return _as_array(operands[0])
    return _s.concatenate_p.bind(*operands, dimension=int(dimension))


def pad(operand, padding_value, padding_config):
    """Pads with (low, high, interior) per dimension; negatives cut (``jax.lax.pad``).

    ``padding_value`` is a scalar of ``operand``'s dtype (a Python scalar has its kind's
    default dtype); TypeError otherwise, as JAX."""
    cfg = tuple((int(lo), int(hi), int(it)) for lo, hi, it in padding_config)
    return _s.pad_p.bind(operand, padding_value, padding_config=cfg)


def rev(operand, dimensions):
    """Reverses the order of elements along ``dimensions`` (``jax.lax.rev``)."""
    dims = tuple(int(d) for d in dimensions)
    return _as_array(operand) if not dims else _s.rev_p.bind(operand, dimensions=dims)


def slice(operand, start_indices, limit_indices, strides=None):
    """Static slice ``[start:limit:stride]`` per dimension (``jax.lax.slice``)."""
    st = tuple(int(i) for i in start_indices)
    li = tuple(int(i) for i in limit_indices)
    # unit strides are left out, but only a full set (a short one is the shape rule's error)
    sd = None if strides is None or (len(strides) == len(st) and
                                     builtins.all(s == 1 for s in strides)) \
        else tuple(int(s) for s in strides)
    return _s.slice_p.bind(operand, start_indices=st, limit_indices=li, strides=sd)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """``lax.slice`` along one axis (``jax.lax.slice_in_dim``)."""
    shape = get_aval(operand).shape
    st, li, sd = [0] * len(shape), list(shape), [1] * len(shape)
    n = shape[axis]
    start = 0 if start_index is None else start_index
    limit = n if limit_index is None else limit_index
    st[axis] = start + n if start < 0 else start
    li[axis] = limit + n if limit < 0 else limit
    sd[axis] = stride
    return slice(operand, st, li, sd)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice at static ``index`` along ``axis`` (``jax.lax.index_in_dim``).

    Negative indices count from the end.  Raises IndexError for an index outside
    ``[-n, n)`` (``n`` the size of ``axis``), as JAX: a static index is checked, not clamped.
    """
    n = get_aval(operand).shape[axis]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} of "
                         f"size {n}")
    index = index + n if index < 0 else index
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def _start_index(i, size: int):
    """A start index of a dynamic slice: negative values count from the end of the
    dimension (JAX's default ``allow_negative_indices=True``); the primitive then clamps."""
    if _is_scalar(i) or isinstance(i, (np.integer, np.ndarray)) and np.ndim(i) == 0:
        i = int(i)
        return np.asarray(i + size if i < 0 else i, dtypes.default_int_dtype())
    zero = scalar_as(0, i.dtype, False)
    return select(lt(i, zero), add(i, scalar_as(size, i.dtype, False)), i)


def _start_indices(name, operand, start_indices, allow_negative_indices):
    shape = get_aval(operand).shape
    if len(start_indices) != len(shape):
        raise ValueError(f"{name}: got {len(start_indices)} start indices for operand of "
                         f"shape {shape}; give one per dimension")
    # the indices' dtypes must agree after canonicalisation (int64 is int32 without x64; a
    # Python int counts as the default int dtype), as JAX
    typed = [get_aval(i).dtype for i in start_indices]
    if len(set(typed)) > 1:
        raise TypeError(f"index arguments to {name} must be integers of the same type, got: "
                        f"{', '.join(np.dtype(t).name for t in typed)}")
    return [_start_index(i, n if allow_negative_indices else 0)
            for i, n in zip(start_indices, shape)]


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """Slice of ``slice_sizes`` starting at (possibly traced) ``start_indices``
    (``jax.lax.dynamic_slice``).  Negative starts count from the end; starts are then
    clamped so the slice stays in bounds."""
    idx = _start_indices("dynamic_slice", operand, start_indices, allow_negative_indices)
    return _s.dynamic_slice_p.bind(operand, *idx, slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at (possibly traced) ``start_indices``
    (``jax.lax.dynamic_update_slice``).  Negative starts count from the end; starts are
    then clamped so the update fits."""
    idx = _start_indices("dynamic_update_slice", operand, start_indices,
                         allow_negative_indices)
    return _s.dynamic_update_slice_p.bind(operand, update, *idx)


def _zero_starts(ndim: int, start_index):
    """Zero start indices of ``start_index``'s dtype (the other dimensions of an in-dim
    slice), so the indices agree in dtype as ``dynamic_slice`` requires."""
    if _is_scalar(start_index):
        return [0] * ndim
    aval = get_aval(start_index)
    if aval.shape != ():
        raise TypeError(f"start_index must be a scalar, got an array of shape {aval.shape}")
    return [np.zeros((), aval.dtype)] * ndim


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """``dynamic_slice`` along one axis (``jax.lax.dynamic_slice_in_dim``)."""
    shape = get_aval(operand).shape
    starts = _zero_starts(len(shape), start_index)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice at traced ``index`` along ``axis`` (``jax.lax.dynamic_index_in_dim``)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``
    (``jax.lax.full_like``); weakly typed when ``x`` is and no ``dtype`` is given;
    ``sharding`` places it as ``full``'s does."""
    aval = get_aval(x)
    dt = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shp = aval.shape if shape is None else tuple(int(d) for d in shape)
    val = np.array(fill_value).astype(dt)
    if not shp and sharding is None and not isinstance(fill_value, _Tracer):
        # a scalar is a constant (a literal where a program is traced), as JAX's
        return _from_host(val, dt, dtype is None and aval.weak_type)
    out = _s.broadcast_in_dim_p.bind(val, shape=shp, broadcast_dimensions=())
    if dtype is None and aval.weak_type:
        # JAX: the result of a weakly typed x (a Python scalar) is weakly typed too
        out = _e.convert_element_type_p.bind(out, new_dtype=dt, weak_type=True)
    if sharding is not None:
        from ..numpy._creation import _place
        if out.weak_type and not isinstance(out, _Tracer):
            out = _convert(out, out.dtype, False)    # eager JAX: placed = strong type
        out = _place(out, sharding)
    return out


def zeros_like_array(x):
    """Zeros of ``x``'s shape and dtype (``jax.lax.zeros_like_array``)."""
    return full_like(x, 0)


def dynamic_update_index_in_dim(operand, update, index, axis):
    """``operand`` with the slice at traced ``index`` along ``axis`` replaced by ``update``
    (``jax.lax.dynamic_update_index_in_dim``); ``update`` may lack that axis."""
    nd = get_aval(operand).ndim
    axis = int(axis) % nd if nd else 0
    if get_aval(update).ndim == nd - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def cumlogsumexp(operand, axis=0, reverse=False):
    """``log(cumsum(exp(operand)))`` along ``axis`` without overflow
    (``jax.lax.cumlogsumexp``); floating dtypes only (TypeError otherwise)."""
    from ._control import associative_scan
    if not dtypes.is_float(get_aval(operand).dtype):
        raise TypeError(f"cumlogsumexp does not accept dtype "
                        f"{get_aval(operand).dtype.name}. Accepted dtypes are subtypes of "
                        f"floating.")

    axis = _cum_axis("cumlogsumexp", operand, axis)

    def logaddexp(a, b):
        m = max(a, b)
        fin = _e.is_finite_p.bind(m)
        safe = select_n(fin, zeros_like_array(m), m)
        return add(safe, log(add(exp(sub(a, safe)), exp(sub(b, safe)))))
    # an Array even when nothing is combined (a length below 2), as JAX's primitive gives
    return associative_scan(logaddexp, _as_array(operand), reverse=reverse, axis=axis)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """``dynamic_update_slice`` along one axis (``jax.lax.dynamic_update_slice_in_dim``)."""
    starts = _zero_starts(get_aval(operand).ndim, start_index)
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def iota(dtype, size):
    """``[0, 1, ..., size-1]`` of ``dtype`` (``jax.lax.iota``)."""
    return _s.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=(int(size),),
                          dimension=0, sharding=None)


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
    """Indices along ``dimension`` broadcast to ``shape`` (``jax.lax.broadcasted_iota``);
    ``out_sharding``: the result's sharding (ValueError outside ``set_mesh`` and ``jit``
    for one over several devices, as ``jnp.zeros``)."""
    if out_sharding is not None:
        return _with_out_sharding(broadcasted_iota, out_sharding, "broadcasted_iota",
                                  dtype, shape, dimension, creation=True)
    return _s.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype),
                          shape=tuple(int(s) for s in shape), dimension=int(dimension),
                          sharding=None)


def _with_out_sharding(fn, out_sharding, who, *args, creation=False):
    from ._sharding_constraints import call_with_out_sharding
    return call_with_out_sharding(fn, args, {}, out_sharding, who, creation)


# ---- reductions -----------------------------------------------------------------------

def _reduce_axes(name, operand, axes):
    """``axes`` of a lax reduction as ints; a negative one is JAX's ValueError (lax takes
    no negative axes; jnp's reductions normalise theirs)."""
    axes = tuple(int(a) for a in axes)
    if any(a < 0 for a in axes):
        aval = get_aval(operand)
        raise ValueError(f"{name}: reduction axes {axes} contain out-of-bounds indices for "
                         f"{aval.str_short()} (lax takes axes in [0, {aval.ndim}))")
    return axes


def _reducer(p):
    if p is _r.reduce_sum_p:
        # only reduce_sum takes out_sharding, as in JAX: the sum resharded there
        def fn(operand, axes, *, out_sharding=None):
            r = p.bind(operand, axes=_reduce_axes(p.name, operand, axes), out_sharding=None)
            if out_sharding is None:
                return r
            from ._sharding_constraints import out_sharded
            return out_sharded(r, out_sharding, "reduce_sum")
    else:
        def fn(operand, axes):
            return p.bind(operand, axes=_reduce_axes(p.name, operand, axes))
    fn.__name__ = p.name
    fn.__doc__ = f"``{p.name}`` over ``axes`` (``jax.lax.{p.name}``)."
    return fn


reduce_sum = _reducer(_r.reduce_sum_p)
reduce_prod = _reducer(_r.reduce_prod_p)
reduce_max = _reducer(_r.reduce_max_p)
reduce_min = _reducer(_r.reduce_min_p)
reduce_and = _reducer(_r.reduce_and_p)
reduce_or = _reducer(_r.reduce_or_p)
reduce_xor = _reducer(_r.reduce_xor_p)


def _arg_params(name, operand, axis, index_dtype):
    """``argmax``/``argmin``'s parameters checked as JAX does: ``axis`` an int (TypeError)
    in ``[0, ndim)`` (ValueError: no negative axis in lax), ``index_dtype`` an integer
    dtype (TypeError)."""
    try:
        axis = _operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int; got {axis!r}") from None
    shape = get_aval(operand).shape
    if shape and not 0 <= axis < len(shape):
        raise ValueError(f"{name}: invalid axis {axis} for operand shape {shape} (lax takes "
                         f"an axis in [0, {len(shape)}))")
    dt = dtypes.canonicalize_dtype(index_dtype)
    if not np.issubdtype(dt, np.integer):
        raise TypeError(f"{name}: index_dtype must be an integer type, but got {dt.name}")
    if np.dtype(get_aval(operand).dtype).kind == "c":
        raise TypeError(f"{name} does not accept dtype {get_aval(operand).dtype.name} "
                        f"(complex numbers are not ordered)")
    return dict(axes=(axis,), index_dtype=dt)


def argmax(operand, axis, index_dtype):
    """Index of the largest element along ``axis``; NaN counts as largest
    (``jax.lax.argmax``).  Raises TypeError for a complex operand, a non-int ``axis`` or
    a non-integer ``index_dtype``, ValueError for an axis outside ``[0, ndim)``."""
    return _r.argmax_p.bind(operand, **_arg_params("argmax", operand, axis, index_dtype))


def argmin(operand, axis, index_dtype):
    """Index of the smallest element along ``axis`` (``jax.lax.argmin``); errors as
    ``argmax``'s."""
    return _r.argmin_p.bind(operand, **_arg_params("argmin", operand, axis, index_dtype))


def _cum_axis(name, operand, axis):
    """``axis`` of a cumulative reduction checked as JAX does (ValueError): XLA takes no
    negative axis there, and it has to be one of the operand's."""
    nd, axis = get_aval(operand).ndim, int(axis)
    if axis < 0:
        raise ValueError(f"{name}: axis {axis} is negative; lax's cumulative reductions "
                         f"take an axis in [0, {nd}) (XLA allows no negative axes)")
    if nd and axis >= nd:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of shape "
                         f"{get_aval(operand).shape}")
    return axis % builtins.max(nd, 1)


def _cum(p):
    def fn(operand, axis=0, reverse=False):
        if p.name in ("cummax", "cummin") and get_aval(operand).dtype == np.bool_:
            # the primitive takes bools (jnp.maximum.accumulate); lax's function does not
            raise TypeError(f"{p.name} does not accept dtype bool. Accepted dtypes are "
                            f"subtypes of number.")
        return p.bind(operand, axis=_cum_axis(p.name, operand, axis), reverse=bool(reverse))
    fn.__name__ = p.name
    fn.__doc__ = f"Cumulative ``{p.name}`` along ``axis`` (``jax.lax.{p.name}``)."
    return fn


cumsum = _cum(_r.cumsum_p)
cumprod = _cum(_r.cumprod_p)
cummax = _cum(_r.cummax_p)
cummin = _cum(_r.cummin_p)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sorts ``operand`` (or a sequence of operands, by the first ``num_keys``) along
    ``dimension`` (``jax.lax.sort``)."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    nd, dimension = get_aval(ops[0]).ndim, int(dimension)
    if nd and not -nd <= dimension < nd:
        raise ValueError(f"sort: dimension {dimension} is out of bounds for array of "
                         f"dimension {nd}")
    out = _r.sort_p.bind(*ops, dimension=dimension % builtins.max(nd, 1),
                         is_stable=bool(is_stable), num_keys=int(num_keys))
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sorts ``keys`` and permutes ``values`` alike (``jax.lax.sort_key_val``)."""
    return sort((keys, values), dimension, is_stable, 1)


def top_k(operand, k, *, axis=-1):
    """The ``k`` largest entries of ``operand`` along ``axis``, in descending order, and their
    int32 positions along it (``jax.lax.top_k``); both results have ``operand``'s shape with
    ``k`` at ``axis``, and the positions are weakly typed when ``operand`` is.

    The order is IEEE total order, as XLA's: NaN above +inf, 0.0 above -0.0, a NaN with its
    sign bit set below -inf; equal entries keep the lower position first.  Raises ValueError
    for an ``axis`` out of bounds (a 0-d operand has none), a negative ``k`` or one larger
    than the axis, and for a complex operand; TypeError for a ``k`` that is not a concrete
    integer.
    """
    aval = get_aval(operand)
    try:
        k = _operator.index(k)
    except TypeError:
        raise TypeError(f"top_k: k must be a concrete integer, got {k!r}") from None
    nd, ax = aval.ndim, _operator.index(axis)
    if not -nd <= ax < nd:
        raise ValueError(f"axis {ax} is out of bounds for array of dimension {nd}")
    ax %= nd
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if k > aval.shape[ax]:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with shape={list(aval.shape)} and axis={ax}")
    if aval.shape[ax] > np.iinfo(np.int32).max:
        raise ValueError(f"top_k returns int32 indices, which will overflow for array "
                         f"dimensions larger than the maximum int32 ({np.iinfo(np.int32).max})."
                         f" Got operand.shape[{ax}]={aval.shape[ax]}")
    from ..primitives.reduction import top_k_p
    return list(top_k_p.bind(operand, k=k, axis=ax))


# ---- linear algebra -------------------------------------------------------------------

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General contraction: ``dimension_numbers = ((lhs_contract, rhs_contract),
    (lhs_batch, rhs_batch))``; result dims are batch, lhs free, rhs free
    (``jax.lax.dot_general``).

    ``precision`` is None, a ``lax.Precision``, a name such as ``"highest"``, a pair of
    ``Precision`` members, or a ``lax.DotAlgorithmPreset`` or its name (ValueError
    otherwise, and for a preset JAX's CPU does not run).  ``out_sharding`` (a
    NamedSharding, or a PartitionSpec over the mesh of ``set_mesh``; only Explicit mesh
    axes): the result is resharded there (``jax.sharding.reshard``'s errors).
    """
    if out_sharding is not None:
        from ._sharding_constraints import apply_out_sharding, out_sharding_of
        sh = out_sharding_of(out_sharding, "dot_general")
        return apply_out_sharding(dot_general(lhs, rhs, dimension_numbers, precision,
                                              preferred_element_type), sh)
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = None if preferred_element_type is None else \
        dtypes.explicit_dtype(preferred_element_type, "dot")
    precision = _canonicalize_precision(precision)
    if isinstance(precision, DotAlgorithmPreset) and precision.name not in _CPU_ALGORITHMS:
        from ..runtime.device import default_backend
        if default_backend() == "cpu":
            # JAX's CPU runs only some algorithms (it raises when the program runs;
            # jaxlite at the call)
            raise ValueError(f"The precision '{precision.name}' is not supported by "
                             f"dot_general on CPU")
    return _l.dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=precision,
                                 preferred_element_type=pet)


_CPU_ALGORITHMS = frozenset(["DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64",
                             "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"])


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
    """``dot_general`` with its options by keyword (``jax.lax.dot``).

    Without ``dimension_numbers`` the operands are rank 1 or 2 and the last axis of ``lhs``
    meets the first of ``rhs`` (vector/matrix products); other shapes raise ValueError.
    ``out_sharding`` as ``dot_general``'s."""
    if dimension_numbers is None:
        ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
        if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]):
            raise ValueError(f"jax.lax.dot: dimension_numbers must be given unless the "
                             f"product is an unbatched matrix-matrix, matrix-vector or "
                             f"vector-vector one; got lhs_shape={tuple(ls)} "
                             f"rhs_shape={tuple(rs)}")
        dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                       out_sharding=out_sharding)


# ---- indexing -------------------------------------------------------------------------

def gather_indexed(operand, indexer, idx_arrays, mode="clip", fill_value=None):
    """``operand[index]`` for a normalised ``indexer`` (see ``primitives.indexing``)."""
    return _ix.gather_p.bind(operand, *idx_arrays, indexer=tuple(indexer), mode=mode,
                             fill_value=fill_value)


def scatter_indexed(operand, updates, indexer, idx_arrays, op="set", mode="drop",
                    update_jaxpr=None, unique_indices=False):
    """``operand`` with ``updates`` combined by ``op`` at ``index`` (see
    ``primitives.indexing``); ``op="apply"`` takes the scalar program ``update_jaxpr``;
    ``unique_indices`` promises that no location is hit twice."""
    extra = {} if update_jaxpr is None else {"update_jaxpr": update_jaxpr}
    if unique_indices:
        extra["unique_indices"] = True
    return _ix.scatter_p.bind(operand, updates, *idx_arrays, indexer=tuple(indexer), op=op,
                              mode=mode, **extra)


def stop_gradient(x):
    """The identity, with a zero derivative (``jax.lax.stop_gradient``); ``x`` may be a
    pytree.  A Python scalar is a constant (nothing to stop) and is returned as it is
    (JAX 0.10 returns it as a typed scalar, a float/int subclass carrying its dtype: see
    README, known differences).  Integer and boolean leaves have no derivative to stop
    either: an Array or tracer passes through unchanged, a NumPy value becomes an Array of
    its canonical dtype (not weakly typed)."""
    from ..tree_util import data_map as tree_map
    from ..primitives.shape import stop_gradient_p

    def stop(v):
        if type(v) in _PY_SCALARS:
            get_aval(v)  # an int outside the default integer range raises OverflowError
            return v
        if not dtypes.is_inexact(get_aval(v).dtype):
            return _as_array(v)
        return stop_gradient_p.bind(v)
    return tree_map(stop, x)


def debug_callback(callback, *args):
    """Calls ``callback(*numpy_values)`` on every run, also under jit (an effect)."""
    _c.debug_callback_p.bind(*args, callback=callback)


# ---- typed PRNG key arrays --------------------------------------------------------------
# the shape, slicing and selection functions take key arrays too, as in JAX (see
# _keyaware.py)
from ._keyaware import key_aware as _key_aware  # noqa: E402

for _name, _elements in [
        ("reshape", ("operand",)), ("transpose", ("operand",)), ("squeeze", ("array",)),
        ("expand_dims", ("array",)), ("broadcast_in_dim", ("operand",)),
        ("broadcast", ("operand",)), ("concatenate", ("operands",)),
        ("select", ("on_true", "on_false")), ("rev", ("operand",)), ("slice", ("operand",)),
        ("slice_in_dim", ("operand",)), ("index_in_dim", ("operand",)),
        ("dynamic_slice", ("operand",)), ("dynamic_slice_in_dim", ("operand",)),
        ("dynamic_index_in_dim", ("operand",)),
        ("dynamic_update_slice", ("operand", "update")),
        ("dynamic_update_slice_in_dim", ("operand", "update")),
        ("dynamic_update_index_in_dim", ("operand", "update"))]:
    globals()[_name] = _key_aware(*_elements)(globals()[_name])
del _name, _elements

from ._conv import (ConvDimensionNumbers, conv, conv_dimension_numbers,  # noqa: E402
                    conv_general_dilated, conv_transpose, conv_with_general_padding,
                    padtype_to_pads, reduce_window)
from ._control import (associative_scan, cond, fori_loop, map, scan, switch,  # noqa: E402,A004
                       while_loop)
from ._parallel import (all_gather, all_to_all, axis_index, axis_size,  # noqa: E402,F401
                        pbroadcast, pcast, pmax, pmean, pmin, ppermute, pshuffle, psum,
                        psum_scatter, pswapaxes)
from ._special import (bessel_i0e, bessel_i1e, betainc, erf_inv, igamma,  # noqa: E402,F401
                       igamma_grad_a, igammac, polygamma, random_gamma_grad, zeta)
from ._fft import FftType, fft  # noqa: E402,F401
from ._rng import RandomAlgorithm, rng_bit_generator  # noqa: E402,F401
from ._custom_solve import custom_linear_solve, custom_root  # noqa: E402,F401
from ._gather_scatter import (GatherDimensionNumbers, GatherScatterMode,  # noqa: E402,F401
                              ScatterDimensionNumbers, gather, index_take, scatter,
                              scatter_add, scatter_apply, scatter_max, scatter_min,
                              scatter_mul, scatter_sub)
from ._more import RaggedDotDimensionNumbers, ragged_dot_general  # noqa: E402,F401
from ._more import (approx_max_k, approx_min_k, batch_matmul,  # noqa: E402,F401
                    broadcast_like, broadcast_shapes, broadcast_to_rank, clz, collapse,
                    conv_general_dilated_local, conv_general_dilated_patches,
                    conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple,
                    conv_transpose_shape_tuple, dtype, empty, full, mulhi, ragged_dot,
                    reciprocal, reduce, reduce_precision, reduce_window_shape_tuple, split,
                    stack, tile, unstack)
from ._sharding_constraints import with_sharding_constraint  # noqa: E402,F401
