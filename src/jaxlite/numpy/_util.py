"""Helpers shared by ``jaxlite.numpy``: argument checks, dtype promotion, rank broadcasting.

Layer: numpy (public ops are compositions of primitives through ``jaxlite.lax``).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes, lax
from ..core.array import ArrayImpl
from ..core.eager import from_host
from ..core.trace import Tracer, get_aval

PY_SCALARS = (bool, int, float, complex)


def is_arraylike(x) -> bool:
    return isinstance(x, (ArrayImpl, Tracer, np.ndarray, np.generic) + PY_SCALARS)


def check_arraylike(name: str, *args) -> None:
    """Raises TypeError naming the position of a non-array argument (a list, a string ...)."""
    for i, a in enumerate(args):
        if not is_arraylike(a):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                            f"{type(a)} at position {i}.")


def ensure_array(x):
    """An Array or tracer for ``x``: NumPy values and Python scalars are placed on the
    default device (Python scalars stay weakly typed)."""
    if isinstance(x, (ArrayImpl, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic)):  # first: np.float64 is a Python float too
        return from_host(x)
    if isinstance(x, PY_SCALARS):
        return from_host(x, get_aval(x).dtype, weak_type=not isinstance(x, bool))
    raise TypeError(f"Value {x!r} of type {type(x).__name__} cannot be used as an array")


def convert(x, dtype, weak: bool = False):
    """``x`` (array-like) converted to ``dtype``/``weak``; no-op when already of that dtype."""
    dtype = np.dtype(dtype)
    if isinstance(x, PY_SCALARS):
        return lax.scalar_as(x, dtype, weak)
    if isinstance(x, (np.ndarray, np.generic)):
        x = np.asarray(x)
        if x.dtype != dtype:
            with np.errstate(all="ignore"):
                x = x.astype(dtype)
        return x
    if x.dtype == dtype:
        return x
    return lax._convert(x, dtype, weak)


def promote_dtypes(*args):
    """Converts every argument to the promoted dtype (JAX's lattice)."""
    dt, weak = dtypes.result_type_and_weak(*args)
    return [convert(a, dt, weak) for a in args]


def to_inexact(dt: np.dtype, weak: bool):
    """(dtype, weak) of a computation that needs an inexact type (see
    ``dtypes.to_inexact_dtype``); a weak integer becomes the weak default float."""
    if dtypes.is_inexact(dt):
        return dt, weak
    if weak:
        return dtypes.default_float_dtype(), True
    return dtypes.to_inexact_dtype(dt), False


def promote_dtypes_inexact(*args):
    """Promotes, then moves integer/bool results to the default float dtype."""
    dt, weak = dtypes.result_type_and_weak(*args)
    dt, weak = to_inexact(dt, weak)
    return [convert(a, dt, weak) for a in args]


def shape_of(x) -> tuple:
    if isinstance(x, PY_SCALARS):
        return ()
    return tuple(np.shape(x)) if isinstance(x, (np.ndarray, np.generic)) else x.shape


def broadcast_shapes(*shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: "
                         f"{', '.join(str(tuple(s)) for s in shapes)}") from None


def broadcast_to_shape(x, shape):
    """Broadcast ``x`` to ``shape`` by NumPy's rules (rank promotion on the left)."""
    xs = shape_of(x)
    shape = tuple(shape)
    if xs == shape:
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return np.broadcast_to(x, shape)
    nd = len(shape) - len(xs)
    if nd < 0 or any(a not in (1, b) for a, b in zip(xs, shape[nd:])):
        raise ValueError(f"Incompatible shapes for broadcasting: {xs} and requested shape "
                         f"{shape}")
    if isinstance(x, PY_SCALARS):
        x = ensure_array(x)
    # one broadcast_in_dim, its size-1 dimensions growing (as JAX's broadcast_to)
    return lax.broadcast_in_dim(x, shape, range(nd, len(shape)))


def broadcast_args(*args):
    """Broadcasts array operands to one shape; rank-0 operands stay as they are (the
    elementwise primitives broadcast scalars themselves)."""
    shapes = [shape_of(a) for a in args]
    if all(s == shapes[0] for s in shapes):
        return list(args)
    shape = broadcast_shapes(*shapes)
    return [a if s == shape or s == () else broadcast_to_shape(a, shape)
            for a, s in zip(args, shapes)]


def concrete_or_none(x):
    """``x``'s concrete value: ``x`` itself when it is no tracer; a tracer's when it has
    one (forward-mode differentiation of eager code carries concrete primals, which JAX
    lets data-dependent shapes use); None when it has none (staged or batched)."""
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    return x


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``.  TypeError for an axis that is no integer (a float: JAX
    takes no ``1.0``), ConcretizationTypeError for a traced one, ValueError for one out of
    bounds."""
    if isinstance(axis, Tracer) and axis.to_concrete_value() is None:
        # as JAX: an axis must be known when tracing
        from .. import errors
        raise errors.ConcretizationTypeError(
            axis, f"The {name} argument must be known statically.")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def canonicalize_axes(axis, ndim: int):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(canonicalize_axis(a, ndim) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"repeated axis in {tuple(axis)}")
        return out
    return (canonicalize_axis(axis, ndim),)


def shape_error(shape):
    """JAX's TypeError for a shape that is not a sequence of concrete integers."""
    return TypeError(f"a shape must be a 1-D sequence of concrete integers, but "
                     f"{shape!r} is not. If using jit, pass shape-determining arguments as static "
                     f"(static_argnums / static_argnames).")


def int_tuple(shape) -> tuple:
    """``shape`` (an int, a sequence of ints, or a concrete 1-D integer array) as a tuple of
    Python ints, negatives allowed.  Traced, boolean-array or non-integer entries raise
    TypeError (JAX's message)."""
    if isinstance(shape, (ArrayImpl, Tracer, np.ndarray)) and np.ndim(shape) == 1:
        if isinstance(shape, Tracer) or np.dtype(shape.dtype).kind not in "iu":
            raise shape_error(shape.shape if isinstance(shape, Tracer)
                              else tuple(np.asarray(shape).tolist()))
        shape = [int(d) for d in np.asarray(shape).tolist()]
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    out = []
    for d in shape:
        if isinstance(d, (Tracer, float, complex, str, bytes)) or d is None:
            raise shape_error(tuple(shape))
        try:
            out.append(operator.index(d))
        except TypeError:
            raise shape_error(tuple(shape)) from None
    return tuple(out)


def public_names(namespace: dict) -> list:
    """``__all__`` of a jaxlite.numpy submodule: its own public functions and classes."""
    mod = namespace["__name__"]
    return sorted(n for n, v in namespace.items()
                  if not n.startswith("_") and getattr(v, "__module__", None) == mod
                  and callable(v))


def check_out(name: str, out) -> None:
    """Refuses ``out=`` as JAX does: arrays are immutable, so a result cannot be written
    into one.  Raises NotImplementedError naming the parameter unless ``out`` is None."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
