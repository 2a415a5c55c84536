"""Array creation (``jax.numpy``): ``array``/``asarray``/``copy``, ``zeros``/``ones``/
``full``/``empty`` and their ``*_like`` forms, ``arange``, ``linspace``/``logspace``/
``geomspace``, ``eye``/``identity``/``tri``/``tril``/``triu``, ``diag``/``diagonal``/
``diagflat``, ``tril_indices``/``triu_indices``/``diag_indices`` (and ``*_from``),
``meshgrid``, ``fromfunction``.

Layer: numpy.  Host data (lists, NumPy arrays) becomes one constant Array; everything else
is a composition of lax ops (``broadcast_in_dim`` of a scalar, ``iota``, ``select_n``), so
these functions also trace under jit into small jaxprs.  Shapes and sizes must be concrete:
traced ones raise JAX's tracer errors.
"""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from .. import dtypes, errors, lax
from .._traceback import user_stacklevel as _user_stacklevel
from ..core.array import ArrayImpl
from ..core.eager import from_host
from ..core.sharded import mesh_context as _mesh_context
from ..core.trace import Tracer
from ._named_jit import named_jit
from ._util import (PY_SCALARS, broadcast_shapes, broadcast_to_shape, canonicalize_axis,
                    check_arraylike, ensure_array, int_tuple, public_names, shape_error,
                    to_inexact)

_JAX_TYPES = (ArrayImpl, Tracer)
_HOST_TYPES = (np.ndarray, np.generic)


# ---- helpers ---------------------------------------------------------------------------

def _user_dtype(dtype, name):
    """A user-given dtype, canonicalised; TypeError naming ``name`` for unsupported ones."""
    if dtype is None:
        return None
    try:
        dt = dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise TypeError(f"JAX only supports number and bool dtypes, got dtype {dtype!r} in "
                        f"{name}") from None
    if dtype in (int, float, complex, bool):  # Python types mean the default width
        return dt
    requested = np.dtype(dtype.dtype if isinstance(getattr(dtype, "dtype", None), np.dtype)
                         else dtype)
    if requested != dt:
        warnings.warn(f"Explicitly requested dtype {requested} in {name} is not available "
                      f"(64-bit types are off) and is truncated to {dt}. Enable them with "
                      f"jaxlite.config.update('jax_enable_x64', True).",
                      stacklevel=_user_stacklevel())
    return dt


def _canonical_shape(shape) -> tuple:
    """``shape`` (an int, a sequence of ints, or a concrete integer array) as a tuple of
    Python ints.  Raises TypeError for non-integer or traced entries and for negative sizes
    (as ``broadcast_in_dim`` does in JAX)."""
    out = int_tuple(shape)
    if any(d < 0 for d in out):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{out}.")
    return out


def _concrete_int(x, what):
    """``x`` as a Python int: tracers raise ConcretizationTypeError naming ``what``."""
    if isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(x, f"It arose in {what}.")
    return operator.index(x)


def _as_array(x):
    """An Array/tracer for ``x`` (host values placed; Python scalars stay weak)."""
    return x if isinstance(x, _JAX_TYPES) else ensure_array(x)


def _out_sharding(out_sharding, who, device):
    """``(checked NamedSharding, who)`` of an ``out_sharding=`` argument (None: none); see
    ``jaxlite.lax._sharding_constraints.out_sharding_of`` for its errors."""
    if out_sharding is None:
        return None
    from ..lax._sharding_constraints import out_sharding_of
    return out_sharding_of(out_sharding, who, device), who


def _place(out, device, like=None, sharding=None, like_shape=True):
    """``out`` on ``device``; for ``*_like`` without a device, placed as a committed
    prototype ``like`` is (as JAX: on its device, or with its sharding over several
    devices when the result keeps its shape, ``like_shape``); with ``sharding`` (from
    ``_out_sharding``) resharded there (a ``reshard`` under jit)."""
    if sharding is not None:
        from ..lax._sharding_constraints import apply_out_sharding
        return apply_out_sharding(out, *sharding)
    if device is None and isinstance(like, ArrayImpl) and like.committed:
        if len(like.sharding.device_set) > 1:
            if not like_shape or isinstance(out, Tracer):
                return out              # JAX: a new shape lands on the default device
            device = like.sharding
        else:
            device = like.device
    if device is None and _mesh_context.mesh is not None and type(out) is ArrayImpl and \
            not out.committed:
        # a constant made without an operation (a scalar fill) under set_mesh: on its
        # mesh, as the results of operations there (core/sharded.py apply_in_mesh)
        from ..core.sharded import result_pspec
        from ..sharding import NamedSharding
        device = NamedSharding(_mesh_context.mesh, result_pspec(
            _mesh_context.mesh, ((),) * out.ndim))
    if device is None or isinstance(out, Tracer):
        return out
    from ..core.placement import device_put
    return device_put(out, device)


def _dtype_weak(x):
    """(dtype, weak_type) of an operand; NumPy scalars are strong even where they subclass
    Python's float/complex."""
    if isinstance(x, _HOST_TYPES):
        return dtypes.canonicalize_dtype(x.dtype), False
    return dtypes.result_type_and_weak(x)


def _scalar(value, dtype):
    """A strongly typed NumPy scalar of ``dtype`` holding ``value`` (wrapping like a C cast;
    complex -> real raises TypeError like NumPy)."""
    if isinstance(value, complex) and np.dtype(dtype).kind != "c":
        raise TypeError(f"can't convert complex value {value!r} to real dtype {dtype}")
    with np.errstate(all="ignore"):
        if isinstance(value, int) and not isinstance(value, bool) and \
                np.dtype(dtype).kind in "iu":
            info = np.iinfo(dtype)
            value = (value - info.min) % (info.max - info.min + 1) + info.min
        return np.asarray(value).astype(dtype)


def _full_scalar(shape, value, dtype, weak):
    """``broadcast_in_dim`` of one scalar to ``shape`` (an Array or tracer)."""
    if isinstance(value, _JAX_TYPES):
        v = lax._convert(value, dtype, weak)
    elif weak:
        v = lax.scalar_as(value, dtype, True)
    else:
        v = _scalar(value, dtype) if isinstance(value, PY_SCALARS) else \
            np.asarray(value).astype(dtype)
    return _as_array(lax.broadcast_in_dim(v, shape, ()))


# ---- array / asarray / copy ------------------------------------------------------------

def _leaves(obj, out):
    """Collects the leaves of nested lists/tuples into ``out``; True if any is a jax value."""
    has_jax = False
    for o in obj:
        if isinstance(o, (list, tuple)):
            has_jax |= _leaves(o, out)
        elif o is None:
            raise ValueError("None is not a valid value for jnp.array")
        else:
            has_jax |= isinstance(o, _JAX_TYPES)
            out.append(o)
    return has_jax


def _leaf_dtype_key(x):
    """A hashable stand-in for a leaf in dtype inference (many leaves share one key)."""
    if isinstance(x, _HOST_TYPES):  # first: np.float64 is also a Python float
        return np.dtype(x.dtype)
    if isinstance(x, PY_SCALARS):  # the Python type: weak int/float/complex, or bool
        return type(x) if type(x) in PY_SCALARS else next(t for t in PY_SCALARS[::-1]
                                                          if isinstance(x, t))
    if isinstance(x, _JAX_TYPES):
        return (x.dtype, x.weak_type)
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{x!r} has dtype {np.asarray(x).dtype}, which arrays cannot hold: "
                        f"only numeric and boolean dtypes are allowed")
    return np.asarray(x).dtype


def _infer_dtype(leaves):
    keys = {_leaf_dtype_key(x) for x in leaves}
    if not keys:
        return dtypes.default_float_dtype()
    args = []
    for k in keys:
        if isinstance(k, tuple):
            args.append(_Typed(*k))
        elif isinstance(k, np.dtype):
            _check_host_dtype(k, k)
            args.append(k)
        else:
            args.append(k)
    return dtypes.result_type(*args)


class _Typed:
    """A (dtype, weak_type) pair that ``dtypes.result_type`` reads like an array."""

    __slots__ = ("aval",)

    def __init__(self, dtype, weak):
        from ..core.avals import ShapedArray
        self.aval = ShapedArray((), dtype, weak)


def _check_host_dtype(dt, obj):
    if dtypes.kind(dt) in "OUSMmV":
        what = "object" if dt.kind == "O" else dt
        raise TypeError(f"{obj!r} has dtype {what}, which arrays cannot hold: only numeric "
                        f"and boolean dtypes are allowed")


def _stack_elements(obj, dtype):
    """``obj`` (a list/tuple holding jax values) joined along a new leading axis."""
    parts = []
    for elt in obj:
        a = array(elt, dtype, copy=False)
        parts.append(lax.broadcast_in_dim(a, (1,) + a.shape, tuple(range(1, a.ndim + 1))))
    if not parts:
        return from_host(np.zeros((0,), dtype))
    return lax.concatenate(parts, 0) if len(parts) > 1 else parts[0]


def array(object, dtype=None, copy: bool = True, order="K", ndmin: int = 0, *,
          device=None, out_sharding=None):
    """A new array holding ``object`` (``jax.numpy.array``).

    Args:
      object: an Array, tracer, NumPy array/scalar, Python scalar, or nested lists/tuples of
        these.
      dtype: the result dtype (canonicalised: float64 -> float32 unless x64 is on).  When
        None it is inferred with JAX's promotion rules: a Python scalar gives a *weakly
        typed* int32/float32/complex64/bool; a list takes the promoted type of its leaves
        (``[np.int8(1), 2]`` -> int8), never weak; NumPy arrays keep their dtype
        (canonicalised).
      copy: Arrays are copied (a ``copy`` op, also under jit) unless False.
      order: only ``"K"`` (or None) is supported.
      ndmin: leading size-1 axes are added up to this rank.
      device: where to place the result (committed); see ``jaxlite.device_put``.
      out_sharding: a NamedSharding, or a PartitionSpec over the mesh of ``set_mesh``
        (only Explicit mesh axes, as JAX): the result is sharded so (a ``reshard`` under
        jit); the errors are ``zeros``'s.  (JAX 0.10.2 ignores a NamedSharding outside
        ``set_mesh``, and ``asarray``'s for NumPy input; jaxlite places those too.)

    Returns:
      An Array (or tracer under a transformation).

    Raises:
      ValueError: ``None`` anywhere in ``object``; ragged nested lists.
      TypeError: strings, objects, unsupported dtypes; elements of different shapes in a
        list of arrays.
      OverflowError: a Python int out of range of the result dtype.
      NotImplementedError: ``order`` other than "K".

    Example::

      >>> jnp.array([1, 2.5]).dtype
      dtype('float32')
    """
    if order is not None and order != "K":
        raise NotImplementedError("Only implemented for order='K'")
    sh = _out_sharding(out_sharding, "jnp.array", device)
    sh = None if sh is None else (sh[0], None)
    dtype = _user_dtype(dtype, "array")
    if isinstance(object, _JAX_TYPES):
        out = object
        if dtype is not None and (out.dtype != dtype or out.weak_type):
            out = lax.convert_element_type(out, dtype)
        elif copy:
            out = lax._s.copy_p.bind(out)
    elif object is None:
        raise ValueError("None is not a valid value for jnp.array")
    elif isinstance(object, PY_SCALARS) and not isinstance(object, np.generic):
        if dtype is None:
            out = ensure_array(object)
        else:
            out = from_host(np.array(object, dtype=dtype))
    elif isinstance(object, (list, tuple)):
        leaves = []
        has_jax = _leaves(object, leaves)
        if dtype is None:
            dtype = _infer_dtype(leaves)
        if has_jax:
            out = _stack_elements(object, dtype)
        else:
            host = np.array(object, dtype=dtype)
            out = from_host(host)
    else:
        host = object if isinstance(object, _HOST_TYPES) else np.asarray(object)
        _check_host_dtype(host.dtype, object)
        out = from_host(np.asarray(host), dtype)
    ndmin = operator.index(ndmin)
    if ndmin > out.ndim:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
    if device is None and sh is None and _mesh_context.mesh is not None and \
            not isinstance(object, _JAX_TYPES) and type(out) is ArrayImpl:
        # host data under set_mesh: replicated over its mesh (JAX's P(), also on Explicit
        # axes; not a typed result)
        from ..sharding import NamedSharding, PartitionSpec
        device = NamedSharding(_mesh_context.mesh, PartitionSpec())
    return _place(out, device, None, sh)


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
    """``a`` as an array (``jax.numpy.asarray``): like ``array`` but an Array of the right
    dtype is returned as it is (no copy) unless ``copy=True``.  Same errors as ``array``;
    ``out_sharding`` as ``array``'s.

    Example::

      >>> x = jnp.ones(3); jnp.asarray(x) is x
      True
    """
    if isinstance(a, _JAX_TYPES) and not copy and out_sharding is None:
        dt = _user_dtype(dtype, "asarray")
        if dt is None or (a.dtype == dt and not a.weak_type):
            return a if device is None else _place(a, device)
    return array(a, dtype=dtype, copy=bool(copy), order=order, device=device,
                 out_sharding=out_sharding)


def copy(a, order=None):
    """A copy of ``a`` (``jax.numpy.copy``); weak type kept.  Raises TypeError for
    lists (pass an array)."""
    check_arraylike("copy", a)
    return array(a, copy=True, order=order)


# ---- constant fills ---------------------------------------------------------------------

def zeros(shape, dtype=None, *, device=None, out_sharding=None):
    """Array of zeros of ``shape`` (``jax.numpy.zeros``).

    ``shape`` is an int or a sequence of ints; ``dtype`` defaults to float32 (float64 with
    x64).  Lowers to one ``broadcast_in_dim`` of a scalar.  Raises TypeError for a
    non-integer, traced or negative size.

    With ``out_sharding`` (a NamedSharding, or a PartitionSpec over the mesh of
    ``set_mesh``; only Explicit mesh axes may be named, as in JAX) the result is sharded
    so (a ``reshard`` under jit).  ValueError with both ``device`` and ``out_sharding``,
    for a PartitionSpec without a mesh, an Auto axis, an axis the mesh lacks or one that
    does not divide its dimension, and (as JAX) for a NamedSharding over several devices
    outside ``set_mesh``; TypeError for another kind of sharding.

    Example::

      >>> jnp.zeros((2, 3), jnp.int8).shape
      (2, 3)
    """
    sh = _out_sharding(out_sharding, "jnp.zeros", device)
    dt = _user_dtype(dtype, "zeros") or dtypes.default_float_dtype()
    return _place(_full_scalar(_canonical_shape(shape), 0, dt, False), device, None, sh)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
    """Array of ones of ``shape`` (``jax.numpy.ones``); see ``zeros`` (also for
    ``out_sharding``)."""
    sh = _out_sharding(out_sharding, "jnp.ones", device)
    dt = _user_dtype(dtype, "ones") or dtypes.default_float_dtype()
    return _place(_full_scalar(_canonical_shape(shape), 1, dt, False), device, None, sh)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
    """Same as ``zeros``: jaxlite arrays are always initialised (``jax.numpy.empty``)."""
    sh = _out_sharding(out_sharding, "jnp.zeros", device)     # JAX's name for it too
    dt = _user_dtype(dtype, "empty") or dtypes.default_float_dtype()
    return _place(_full_scalar(_canonical_shape(shape), 0, dt, False), device, None, sh)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
    """Array of ``shape`` filled with ``fill_value`` (``jax.numpy.full``).

    A scalar fill is broadcast by one ``broadcast_in_dim``; with no ``dtype`` the result
    takes the fill's dtype and weak type (``jnp.full(3, 1.5)`` is weakly typed float32,
    ``jnp.full(3, True)`` is bool).  An array fill is broadcast to ``shape`` by NumPy's
    rules.

    Raises:
      TypeError: bad ``shape`` (see ``zeros``); a list ``fill_value``; complex fill for a
        real ``dtype``.
      ValueError: an array fill that does not broadcast to ``shape``.
    ``out_sharding``: see ``zeros``.
    """
    sh = _out_sharding(out_sharding, "full", device)
    shape = _canonical_shape(shape)
    check_arraylike("full", fill_value)
    dt = _user_dtype(dtype, "full")
    if np.ndim(fill_value) == 0:
        fdt, fweak = _dtype_weak(fill_value)
        out = _full_scalar(shape, fill_value, fdt if dt is None else dt,
                           fweak if dt is None else False)
    else:
        out = _broadcast_to(asarray(fill_value, dt), shape)
    return _place(out, device, None, sh)


def _like_args(name, a, dtype, shape):
    check_arraylike(name, a)
    adt, aweak = _dtype_weak(a)
    dt = _user_dtype(dtype, name)
    weak = aweak if dt is None else False
    shp = np.shape(a) if shape is None else _canonical_shape(shape)
    if shape is None and isinstance(a, _JAX_TYPES):
        shp = a.shape
    return (adt if dt is None else dt), weak, tuple(shp)


def _keeps_shape(a, shape) -> bool:
    """Whether a ``*_like`` result has its prototype's shape (it then takes the
    prototype's sharding, as in JAX)."""
    return tuple(shape) == tuple(np.shape(a))


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    """Zeros with ``a``'s shape, dtype and weak type unless ``dtype``/``shape`` are given
    (``jax.numpy.zeros_like``).  Raises TypeError for a list ``a``.  ``out_sharding``: see
    ``zeros``."""
    sh = _out_sharding(out_sharding, "jnp.zeros_like", device)
    dt, weak, shp = _like_args("zeros_like", a, dtype, shape)
    return _place(_full_scalar(shp, 0, dt, weak), device, a, sh, _keeps_shape(a, shp))


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    """Ones with ``a``'s shape, dtype and weak type (``jax.numpy.ones_like``).
    ``out_sharding``: see ``zeros``."""
    sh = _out_sharding(out_sharding, "jnp.ones_like", device)
    dt, weak, shp = _like_args("ones_like", a, dtype, shape)
    return _place(_full_scalar(shp, 1, dt, weak), device, a, sh, _keeps_shape(a, shp))


def empty_like(prototype, dtype=None, shape=None, *, device=None):
    """Same as ``zeros_like`` (``jax.numpy.empty_like``)."""
    dt, weak, shp = _like_args("empty_like", prototype, dtype, shape)
    return _place(_full_scalar(shp, 0, dt, weak), device, prototype, None,
                  _keeps_shape(prototype, shp))


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
    """``fill_value`` with ``a``'s shape and dtype (``jax.numpy.full_like``); weakly typed
    only if ``a`` is and no ``dtype`` is given.  An array ``fill_value`` is broadcast to
    the shape (ValueError if it cannot be).  ``out_sharding``: see ``zeros``."""
    sh = _out_sharding(out_sharding, "full_like", device)
    dt, weak, shp = _like_args("full_like", a, dtype, shape)
    check_arraylike("full_like", fill_value)
    if np.ndim(fill_value) == 0:
        return _place(_full_scalar(shp, fill_value, dt, weak), device, a, sh,
                      _keeps_shape(a, shp))
    # (JAX: an array fill gives a result on the default device, whatever ``a``'s sharding)
    return _place(_broadcast_to(asarray(fill_value, dt), shp), device, a, sh, False)


def _broadcast_to(x, shape):
    from ._shape import broadcast_to as _bt
    return _bt(x, shape)


# ---- ranges ----------------------------------------------------------------------------

def _range_arg(x, name):
    if x is None:
        return None
    if isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(x, f"It arose in the jnp.arange argument "
                                                f"'{name}'.")
    check_arraylike("arange", x)
    if np.ndim(x) != 0:
        raise ValueError(f"arange takes scalar start/stop/step, but {name}={x} is not a "
                         f"scalar")
    return x


def _py(x):
    """A Python number for a concrete scalar argument."""
    if isinstance(x, PY_SCALARS) and not isinstance(x, np.generic):
        return x
    return x.item()


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
    """Evenly spaced values in ``[start, stop)`` with spacing ``step``
    (``jax.numpy.arange``).

    The dtype is promoted from the arguments (all Python ints -> int32; any float ->
    float32) unless given.  Lowers to ``iota`` (times ``step``, plus ``start``).  The
    length must be static: traced arguments raise ConcretizationTypeError.

    Raises:
      ValueError: non-scalar or complex arguments.
      ZeroDivisionError: ``step == 0``.
      TypeError: bool dtype (``iota`` does not accept it); lists.
    ``out_sharding``: see ``zeros``.

    Example::

      >>> jnp.arange(2, 10, 3)
      Array([2, 5, 8], dtype=int32)
    """
    sh = _out_sharding(out_sharding, "jnp.arange", device)
    dt = _user_dtype(dtype, "arange")
    first = "stop" if stop is None and step is None else "start"
    if start is None:
        raise TypeError(f"jnp.arange: '{first}' must be a real number, got None")
    start = _range_arg(start, first)
    stop = _range_arg(stop, "stop")
    step = _range_arg(step, "step")
    if dt is None:
        dt = dtypes.result_type(*[v for v in (start, stop, step) if v is not None])
    if any(v is not None and np.iscomplexobj(v) for v in (start, stop, step)):
        raise ValueError("jnp.arange: start, stop and step must be real; complex values are "
                         "rejected")
    if stop is None:
        start, stop = 0, start
    lo, hi = _py(start), _py(stop)
    if step is not None:
        st = _py(step)
        size = builtins.max(0, int(np.ceil((hi - lo) / st)))
        work = np.dtype(np.float32) if dtypes.is_float(dt) and dt.itemsize < 4 else dt
        _check_iota_dtype(work)
        out = lax.add(_scalar(lo, work), lax.mul(_scalar(st, work), lax.iota(work, size)))
        out = lax.convert_element_type(out, dt)
    else:
        size = builtins.max(0, int(np.ceil(hi - lo)))
        _check_iota_dtype(dt)
        out = lax.iota(dt, size)
        if lo != 0:
            out = lax.add(_scalar(lo, dt), out)
    return _place(out, device, None, sh)


def _check_iota_dtype(dt):
    if np.dtype(dt) == np.bool_:
        raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")


def _inexact_dtype_of(args, dtype, name):
    if dtype is None:
        dt, weak = dtypes.result_type_and_weak(*args)
        return to_inexact(dt, weak)[0]
    return _user_dtype(dtype, name)


def _strong(x, dt):
    """``x`` as a strongly typed value of ``dt``: host values stay on the host (literals
    under jit), arrays are converted."""
    if isinstance(x, _JAX_TYPES):
        return lax._convert(x, dt, False)
    if isinstance(x, complex) and np.dtype(dt).kind != "c":
        x = x.real
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(dt)


def _computation_dtype(dt):
    return dt if dtypes.is_inexact(dt) else dtypes.default_float_dtype()


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (``jax.numpy.linspace``).

    ``start``/``stop`` may be arrays (they broadcast; the samples run along ``axis``) and
    may be traced; ``num`` must be a concrete int.  The dtype defaults to the promoted
    inexact type of the bounds; integer dtypes take the floor.  With ``retstep`` returns
    ``(samples, step)``, the step in the computation dtype (NaN when ``num == 1`` with
    ``endpoint``).

    Raises:
      ValueError: ``num < 0``.
      TypeError: non-integer ``num``; list bounds.
      ConcretizationTypeError: traced ``num``.
    """
    num = _concrete_int(num, "the 'num' argument of jnp.linspace")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    dt = _inexact_dtype_of((start, stop), dtype, "linspace")
    cdt = _computation_dtype(dt)
    start, stop = _strong(start, cdt), _strong(stop, cdt)
    bshape = broadcast_shapes(np.shape(start), np.shape(stop))
    start, stop = broadcast_to_shape(start, bshape), broadcast_to_shape(stop, bshape)
    axis = len(bshape) + axis + 1 if axis < 0 else axis
    out_shape = list(bshape)
    out_shape.insert(axis, 1)
    div = num - 1 if endpoint else num
    if num > 1:
        # x / div as x * (1 / div): XLA rewrites division by a constant so, and JAX's
        # values carry that rounding.
        delta = lax.mul(lax.sub(stop, start), _scalar(1, cdt) / _scalar(div, cdt))
        real = np.dtype(np.finfo(cdt).dtype) if cdt.kind == "c" else cdt
        iota_shape = [1] * len(out_shape)
        iota_shape[axis] = div
        t = lax.reshape(lax.mul(lax.iota(real, div), _scalar(1, real) / _scalar(div, real)),
                        iota_shape)
        t = lax._convert(t, cdt, False)
        full_shape = list(out_shape)
        full_shape[axis] = div
        dims = [i for i in range(len(out_shape)) if i != axis]
        lo = lax.broadcast_in_dim(start, full_shape, dims)
        hi = lax.broadcast_in_dim(stop, full_shape, dims)
        tt = lax.broadcast_in_dim(t, full_shape, range(len(full_shape)))
        one_minus = lax.sub(_scalar(1, cdt), tt)
        out = lax.add(lax.mul(lo, one_minus), lax.mul(hi, tt))
        if endpoint:
            out = lax.concatenate([out, lax.reshape(stop, out_shape)], axis)
    elif num == 1:
        delta = _as_array(_scalar(np.nan, cdt)) if endpoint else lax.sub(stop, start)
        out = lax.reshape(start, out_shape)
    else:
        delta = _as_array(_scalar(np.nan, cdt))
        out_shape[axis] = 0
        out = _full_scalar(tuple(out_shape), 0, cdt, False)
    if dtypes.is_int(dt) or dt == np.bool_:
        if dt != np.bool_ and cdt.kind != "c":
            out = lax.floor(out)
    out = _place(_as_array(lax.convert_element_type(out, dt)), device)
    return (out, _as_array(delta)) if retstep else out


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
    """``base ** linspace(start, stop, num)`` (``jax.numpy.logspace``); same arguments
    and errors as ``linspace``."""
    from ._ufuncs import power
    check_arraylike("logspace", start, stop)
    dt = _inexact_dtype_of((start, stop), dtype, "logspace")
    cdt = _computation_dtype(dt)
    lin = linspace(_strong(start, cdt), _strong(stop, cdt), num,
                   endpoint=endpoint, axis=axis)
    return lax.convert_element_type(power(base, lin), dt)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """Values spaced evenly on a log scale from ``start`` to ``stop`` (same sign)
    (``jax.numpy.geomspace``).  A zero bound gives NaNs as in JAX."""
    from ._ufuncs import divide, log10, multiply, sign
    check_arraylike("geomspace", start, stop)
    dt = _inexact_dtype_of((start, stop), dtype, "geomspace")
    cdt = _computation_dtype(dt)
    start, stop = _strong(start, cdt), _strong(stop, cdt)
    s = sign(start)
    res = multiply(s, logspace(log10(divide(start, s)), log10(divide(stop, s)), num,
                               endpoint=endpoint, base=10.0, dtype=cdt, axis=0))
    axis = canonicalize_axis(axis, res.ndim)
    if axis:
        res = lax.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, res.ndim)))
    return lax.convert_element_type(res, dt)


# ---- matrices --------------------------------------------------------------------------

def _dim(n, name):
    if isinstance(n, Tracer):
        raise shape_error((n,))
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name}: the size {n!r} is not a concrete integer (shapes are "
                        f"sequences of concrete integers)") from None
    return n


def _offset_mask(n, m, k, cmp):
    """bool[n, m]: ``cmp(i + k, j)`` over the row/column iotas."""
    if isinstance(k, _JAX_TYPES + _HOST_TYPES):
        kk = _as_array(k)
        if kk.ndim != 0 or not dtypes.is_int(kk.dtype):
            raise ValueError(f"k must be a scalar integer; got {k}")
        idt = kk.dtype
    else:
        if isinstance(k, (bool, float, complex)) or not isinstance(k, int):
            try:
                k = operator.index(k)
            except TypeError:
                raise ValueError(f"k must be a scalar integer; got {k!r}") from None
        info = np.iinfo(np.int32)
        kk = builtins.min(builtins.max(int(k), info.min), info.max)
        idt = np.dtype(np.int32)
    if isinstance(kk, int):
        # typed like the iotas: lax.add takes no int64 Python int for int32 under x64
        kk = lax.scalar_as(kk, idt, False)
    # in JAX's order of equations: eye's diagonal takes both iotas first, tri's adds the
    # offset to the row iota before making the column iota
    i = lax.broadcasted_iota(idt, (n, m), 0)
    if cmp is lax.eq:
        j = lax.broadcasted_iota(idt, (n, m), 1)
        return lax.eq(lax.add(i, kk), j)
    shifted = lax.add(i, kk)
    return cmp(shifted, lax.broadcasted_iota(idt, (n, m), 1))


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """The ``N x M`` matrix with ones on diagonal ``k`` (``jax.numpy.eye``).

    ``k`` may be a (traced) integer scalar.  dtype defaults to float32.

    Raises:
      TypeError: non-integer or traced ``N``/``M``.
      ValueError: negative ``N``/``M``; non-integer ``k``.
    """
    dt = _user_dtype(dtype, "eye") or dtypes.default_float_dtype()
    n = _dim(N, "argument 'N' of jnp.eye()")
    m = n if M is None else _dim(M, "argument 'M' of jnp.eye()")
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    return _place(lax.convert_element_type(_offset_mask(n, m, k, lax.eq), dt), device)


def identity(n, dtype=None):
    """The ``n x n`` identity matrix (``jax.numpy.identity``); see ``eye``."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """``N x M`` matrix with ones at and below diagonal ``k`` (``jax.numpy.tri``).
    dtype defaults to float32; ``k`` may be traced.  Raises TypeError for non-integer or
    negative sizes (as JAX's ``iota`` does)."""
    dt = _user_dtype(dtype, "tri") or dtypes.default_float_dtype()
    n = _dim(N, "argument 'N' of jnp.tri()")
    m = n if M is None else _dim(M, "argument 'M' of jnp.tri()")
    return lax.convert_element_type(_offset_mask(n, m, k, lax.ge), dt)


def _tri_select(name, m, k, lower):
    check_arraylike(name, m)
    m = _as_array(m)
    if m.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D, got shape "
                         f"{m.shape}")
    k = operator.index(k)
    n, c = m.shape[-2:]
    keep = _offset_mask(n, c, k if lower else k - 1, lax.ge)
    keep = lax.broadcast_in_dim(keep, m.shape, (m.ndim - 2, m.ndim - 1))
    zero = _full_scalar(m.shape, 0, m.dtype, m.weak_type)
    return lax.select_n(keep, zero, m) if lower else lax.select_n(keep, m, zero)


@named_jit("tril", static_argnames=("k",))
def tril(m, k: int = 0):
    """``m`` with elements above diagonal ``k`` zeroed (``jax.numpy.tril``); works on the
    last two axes of a batch.  Raises ValueError for fewer than 2 dimensions."""
    return _tri_select("tril", m, k, True)


@named_jit("triu", static_argnames=("k",))
def triu(m, k: int = 0):
    """``m`` with elements below diagonal ``k`` zeroed (``jax.numpy.triu``); see
    ``tril``."""
    return _tri_select("triu", m, k, False)


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The diagonal ``offset`` of the ``(axis1, axis2)`` planes of ``a``, as the last axis
    of the result (``jax.numpy.diagonal``).

    Lowered without a gather: a square slice reshaped to one axis and strided by ``d+1``.

    Raises:
      ValueError: fewer than 2 dimensions, axes out of range.
      TypeError: equal axes (JAX's transpose error).
    """
    check_arraylike("diagonal", a)
    a = _as_array(a)
    if a.ndim < 2:
        raise ValueError(f"diagonal needs an input with ndim >= 2; the input has shape "
                         f"{a.shape}")
    offset = operator.index(offset)
    ax1, ax2 = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
    if ax1 == ax2:
        raise TypeError(f"axis1 and axis2 must not be equal, got {axis1} and {axis2} for "
                         f"shape {a.shape}")
    rest = [i for i in range(a.ndim) if i not in (ax1, ax2)]
    a = lax.transpose(a, rest + [ax1, ax2])
    n, m = a.shape[-2:]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    d = builtins.max(0, builtins.min(n - r0, m - c0))
    if d == 0:
        r0 = c0 = 0
    batch = a.shape[:-2]
    nb = len(batch)
    sq = lax.slice(a, (0,) * nb + (r0, c0), batch + (r0 + d, c0 + d))
    flat = lax.reshape(sq, batch + (d * d,))
    if d <= 1:
        return flat
    return lax.slice(flat, (0,) * (nb + 1), batch + (d * d,), (1,) * nb + (d + 1,))


def diag(v, k: int = 0):
    """A 1-D ``v`` placed on diagonal ``k`` of a square matrix, or diagonal ``k`` of a 2-D
    ``v`` (``jax.numpy.diag``).  Raises ValueError for other ranks, TypeError for a
    non-integer ``k``."""
    check_arraylike("diag", v)
    v = _as_array(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag input must be 1d or 2d, got shape {v.shape}")
    n = v.shape[0] + builtins.abs(k)
    # the padding value in v's dtype: lax.pad takes no Python int for a float v (as JAX)
    vp = lax.pad(v, lax.scalar_as(0, v.dtype, False),
                 ((builtins.max(0, -k), builtins.max(0, k), 0),))
    mask = _offset_mask(n, n, k, lax.eq)
    cols = lax.broadcast_in_dim(vp, (n, n), (0,))
    return lax.select_n(mask, _full_scalar((n, n), 0, v.dtype, v.weak_type), cols)


def diagflat(v, k: int = 0):
    """``v`` flattened, then placed on diagonal ``k`` (``jax.numpy.diagflat``): a square
    matrix of side ``v.size + |k|`` in v's dtype.  Never weakly typed, even for a Python
    scalar (JAX writes v into a zero matrix of v's dtype)."""
    check_arraylike("diagflat", v)
    v = _as_array(v)
    if v.weak_type:
        v = lax._convert(v, v.dtype, False)
    return diag(lax.reshape(v, (v.size,)), k)


def _tri_indices(name, n, k, m, lower):
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    k = operator.index(k)
    if n < 0 or m < 0:
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{(n, m)}.")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(n, k, m)
    idt = dtypes.default_int_dtype()
    return from_host(rows.astype(idt)), from_host(cols.astype(idt))


def tril_indices(n, k: int = 0, m=None):
    """Row and column indices of the lower triangle (diagonal ``k`` and below) of an
    ``n x m`` matrix, as a tuple of int arrays (``jax.numpy.tril_indices``).  Sizes must be
    static ints."""
    return _tri_indices("tril_indices", n, k, m, True)


def triu_indices(n, k: int = 0, m=None):
    """Indices of the upper triangle (diagonal ``k`` and above) (``jax.numpy.triu_indices``)."""
    return _tri_indices("triu_indices", n, k, m, False)


def _shape_2d(name, arr):
    shp = tuple(np.shape(arr)) if not isinstance(arr, _JAX_TYPES) else arr.shape
    if len(shp) != 2:
        raise ValueError(f"Only 2-D inputs are accepted, got shape {shp} in {name}")
    return shp


def tril_indices_from(arr, k: int = 0):
    """``tril_indices`` for the shape of the 2-D ``arr`` (``jax.numpy.tril_indices_from``);
    ValueError for other ranks."""
    n, m = _shape_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k: int = 0):
    """``triu_indices`` for the shape of the 2-D ``arr`` (``jax.numpy.triu_indices_from``)."""
    n, m = _shape_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n, ndim: int = 2):
    """``ndim`` copies of ``arange(n)``: the indices of the main diagonal of an
    ``n x ... x n`` array (``jax.numpy.diag_indices``).  ValueError for negative sizes."""
    n, ndim = operator.index(n), operator.index(ndim)
    if n < 0:
        raise ValueError(f"diag_indices: n={n} is negative")
    if ndim < 0:
        raise ValueError(f"diag_indices: ndim={ndim} is negative")
    return (lax.iota(dtypes.default_int_dtype(), n),) * ndim


def diag_indices_from(arr):
    """``diag_indices`` for the square array ``arr`` (``jax.numpy.diag_indices_from``);
    ValueError unless all its dimensions are equal and it has at least 2."""
    check_arraylike("diag_indices_from", arr)
    shp = tuple(np.shape(arr)) if not isinstance(arr, _JAX_TYPES) else arr.shape
    if len(shp) < 2:
        raise ValueError(f"input array must be at least 2-d, got shape {shp}")
    if len(set(shp)) != 1:
        raise ValueError(f"diag_indices_from needs an input whose axes all have one length; "
                         f"its shape is {shp}")
    return diag_indices(shp[0], len(shp))


# ---- grids -----------------------------------------------------------------------------

def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
    """Coordinate grids from 1-D arrays (``jax.numpy.meshgrid``).

    ``indexing='xy'`` swaps the first two output axes (Cartesian), ``'ij'`` does not;
    ``sparse`` keeps size-1 axes instead of broadcasting.  Returns a list of arrays.

    Raises:
      ValueError: arguments not 1-D, bad ``indexing``, ``copy=False``.
      TypeError: list arguments.
    """
    check_arraylike("meshgrid", *xi)
    if not copy:
        raise ValueError("meshgrid: copy=False is unsupported (results are always new arrays)")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing={indexing!r} is unknown; use 'xy' or 'ij'")
    args = [_as_array(x) for x in xi]
    if any(a.ndim != 1 for a in args):
        raise ValueError(f"meshgrid takes 1-D inputs only; the inputs have shapes "
                         f"{[a.shape for a in args]}")
    swap = indexing == "xy" and len(args) >= 2
    if swap:
        args[0], args[1] = args[1], args[0]
    sizes = [a.shape[0] for a in args]
    out = []
    for i, a in enumerate(args):
        if sparse:
            shape = [1] * len(args)
            shape[i] = sizes[i]
        else:
            shape = sizes
        out.append(_as_array(lax.broadcast_in_dim(a, shape, (i,))))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*index_grids, **kwargs)`` where grid ``i`` holds the index along axis
    ``i`` of ``shape`` (``jax.numpy.fromfunction``)."""
    shape = _canonical_shape(shape)
    dt = _user_dtype(dtype, "fromfunction")
    grids = [lax.broadcasted_iota(dt, shape, i) for i in range(len(shape))]
    return function(*grids, **kwargs)


__all__ = public_names(globals())


# ---- typed PRNG key arrays ------------------------------------------------------------
# copies, like-shaped fills and triangle/diagonal selections take key arrays too (JAX
# allows it; zeros_like gives keys of all-zero data); see lax/_keyaware.py
from ..lax._keyaware import key_aware as _key_aware  # noqa: E402

for _name, _elements in [
        ("array", ("object",)), ("asarray", ("a",)), ("copy", ("a",)),
        ("zeros_like", ("a",)), ("ones_like", ("a",)), ("empty_like", ("prototype",)),
        ("tril", ("m",)), ("triu", ("m",)), ("diagonal", ("a",)), ("meshgrid", ("*",))]:
    globals()[_name] = _key_aware(*_elements)(globals()[_name])
del _name, _elements
