"""Array creation: ``array``, ``asarray``, ``zeros``, ``ones``, ``full``, ``empty``,
``*_like``, ``arange`` (``jax.numpy`` names and dtype rules)."""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes, errors, lax
from ..core.array import ArrayImpl
from ..core.eager import from_host
from ..core.trace import Tracer
from ._util import PY_SCALARS, convert, ensure_array, public_names


def _canon_shape(shape, name="shape") -> tuple:
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "__index__")
                                               and not isinstance(shape, (tuple, list))):
        shape = (shape,)
    try:
        out = tuple(operator.index(d) for d in shape)
    except errors.TracerIntegerConversionError:
        raise
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape!r}. If using jit, pass shape-determining arguments as "
                        f"static_argnums.") from None
    if any(d < 0 for d in out):
        raise ValueError(f"negative dimensions are not allowed, got shape {out}")
    return out


def _has_traced(obj) -> bool:
    if isinstance(obj, (ArrayImpl, Tracer)):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_traced(o) for o in obj)
    return False


def array(object, dtype=None, copy: bool = True, order=None, ndmin: int = 0, *, device=None):
    """A new array from ``object`` (array, NumPy array, scalar, nested lists/tuples)
    (``jax.numpy.array``).

    Python scalars give weakly typed arrays; lists of Python numbers give the default int or
    float dtype (32-bit unless x64 is enabled).  Raises TypeError for data that is not
    numeric (strings, None, dicts).
    """
    if dtype is not None:
        dtype = dtypes.canonicalize_dtype(dtype)
    if isinstance(object, (ArrayImpl, Tracer)):
        out = object
        if dtype is not None and out.dtype != dtype:
            out = lax.convert_element_type(out, dtype)
        elif copy and isinstance(out, ArrayImpl):
            out = lax._s.copy_p.bind(out)
    elif isinstance(object, (list, tuple)) and _has_traced(object):
        from ._shape import stack
        out = stack([array(o, dtype) for o in object])
    elif isinstance(object, PY_SCALARS):
        if dtype is None:
            out = ensure_array(object)
        else:
            out = from_host(np.asarray(object).astype(dtype) if not isinstance(object, complex)
                            or dtype.kind == "c" else np.asarray(object.real).astype(dtype))
    elif isinstance(object, (np.ndarray, np.generic, list, tuple)) or hasattr(object,
                                                                              "__array__"):
        if isinstance(object, (list, tuple)):
            _check_leaves(object)
        host = np.asarray(object)
        if host.dtype == object_dtype:
            raise TypeError(f"JAX arrays cannot hold Python objects; got {type(object).__name__}"
                            f" with irregular or non-numeric elements.")
        out = from_host(host, dtype)
    else:
        raise TypeError(f"Unexpected input type for array: {type(object)}")
    if dtype is not None and out.dtype != dtype:
        out = convert(out, dtype)
    if ndmin > out.ndim:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


object_dtype = np.dtype(object)


def _check_leaves(obj):
    for o in obj:
        if isinstance(o, (list, tuple)):
            _check_leaves(o)
        elif not isinstance(o, PY_SCALARS + (np.ndarray, np.generic)):
            raise TypeError(f"Unexpected input type for array: {type(o)} inside a "
                            f"{type(obj).__name__}")


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """``a`` as an array, without copying an Array of the right dtype
    (``jax.numpy.asarray``)."""
    if isinstance(a, (ArrayImpl, Tracer)) and (dtype is None or
                                               a.dtype == dtypes.canonicalize_dtype(dtype)):
        return a
    return array(a, dtype=dtype, copy=False)


def _fill(shape, value, dtype):
    shape = _canon_shape(shape)
    dtype = dtypes.canonicalize_dtype(dtype)
    return lax.broadcast_in_dim(np.asarray(value, dtype), shape, ())


def zeros(shape, dtype=None, *, device=None):
    """Array of zeros of ``shape`` (default dtype float32, or float64 with x64)
    (``jax.numpy.zeros``).  Raises TypeError for a non-integer shape, ValueError for a
    negative dimension."""
    return _fill(shape, 0, dtype or dtypes.default_float_dtype())


def ones(shape, dtype=None, *, device=None):
    """Array of ones of ``shape`` (``jax.numpy.ones``)."""
    return _fill(shape, 1, dtype or dtypes.default_float_dtype())


def empty(shape, dtype=None, *, device=None):
    """Like ``zeros``: jaxlite arrays are always initialised (``jax.numpy.empty``)."""
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None, *, device=None):
    """Array of ``shape`` filled with ``fill_value`` (broadcast if it is an array)
    (``jax.numpy.full``).  A Python scalar fill with no dtype gives a weakly typed array."""
    shape = _canon_shape(shape)
    if isinstance(fill_value, PY_SCALARS) and dtype is None:
        dt = dtypes.python_scalar_dtype(fill_value)
        weak = not isinstance(fill_value, bool)
        v = fill_value if weak else np.asarray(fill_value)
        return lax.broadcast_in_dim(v, shape, ()) if shape else ensure_array(fill_value)
    fill = asarray(fill_value, dtype)
    from ._util import broadcast_to_shape
    return broadcast_to_shape(fill, shape)


def _like(a, dtype, shape):
    dt = dtype if dtype is not None else a.dtype if hasattr(a, "dtype") else \
        dtypes.result_type(a)
    sh = getattr(a, "shape", np.shape(a)) if shape is None else shape
    return dt, sh


def zeros_like(a, dtype=None, shape=None, *, device=None):
    """Zeros with ``a``'s shape and dtype (``jax.numpy.zeros_like``)."""
    dt, sh = _like(a, dtype, shape)
    return zeros(sh, dt)


def ones_like(a, dtype=None, shape=None, *, device=None):
    """Ones with ``a``'s shape and dtype (``jax.numpy.ones_like``)."""
    dt, sh = _like(a, dtype, shape)
    return ones(sh, dt)


def empty_like(a, dtype=None, shape=None, *, device=None):
    """Zeros with ``a``'s shape and dtype (``jax.numpy.empty_like``)."""
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """``fill_value`` with ``a``'s shape and dtype (``jax.numpy.full_like``)."""
    dt, sh = _like(a, dtype, shape)
    return full(sh, fill_value, dt)


def _concrete_number(x, name):
    if isinstance(x, Tracer):
        from ..errors import ConcretizationTypeError
        raise ConcretizationTypeError(x, f"It arose in jnp.arange argument {name!r}: arange "
                                         f"needs concrete bounds (its size is the shape).")
    return x.item() if isinstance(x, (ArrayImpl, np.ndarray, np.generic)) else x


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in ``[start, stop)`` (``jax.numpy.arange``).

    All-integer arguments give the default int dtype; otherwise the default float dtype.
    Raises ConcretizationTypeError for traced bounds (the length would be traced).
    """
    start = _concrete_number(start, "start")
    stop = None if stop is None else _concrete_number(stop, "stop")
    step = None if step is None else _concrete_number(step, "step")
    if dtype is None:
        vals = [v for v in (start, stop, step) if v is not None]
        dtype = dtypes.result_type(*[v if isinstance(v, PY_SCALARS) else np.asarray(v)
                                     for v in vals])
    dtype = dtypes.canonicalize_dtype(dtype)
    if stop is None and step is None and np.dtype(dtype).kind in "iu" and \
            isinstance(start, (int, np.integer)):
        return lax.iota(dtype, max(int(start), 0))
    host = np.arange(start, stop, step) if step is not None else (
        np.arange(start, stop) if stop is not None else np.arange(start))
    return from_host(host, dtype)


__all__ = public_names(globals())
