"""Shape manipulation (``jax.numpy``): reshape, ravel, transpose, expand_dims, squeeze,
broadcast_to, concatenate, stack, and friends."""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from ._util import (broadcast_shapes, broadcast_to_shape, canonicalize_axes,
                    canonicalize_axis, check_arraylike, ensure_array, promote_dtypes,
                    public_names)


def _shape_arg(shape, args):
    if args:
        shape = (shape,) + tuple(args)
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "__index__")
                                               and not isinstance(shape, (tuple, list))):
        shape = (shape,)
    return tuple(int(d) if not hasattr(d, "aval") else d.__index__() for d in shape)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """``a`` with a new shape; one dimension may be -1 (``jax.numpy.reshape``).

    Raises TypeError when the sizes differ (naming both shapes).
    """
    check_arraylike("reshape", a)
    if shape is None:
        shape = newshape
    a = ensure_array(a)
    shape = _shape_arg(shape, ())
    if order not in ("C", "F", "A"):
        raise ValueError(f"reshape order must be 'C', 'F' or 'A', got {order!r}")
    neg = [i for i, d in enumerate(shape) if d == -1]
    if len(neg) > 1:
        raise ValueError(f"can only specify one unknown dimension, got shape {shape}")
    if neg:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or a.size % known:
            raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into "
                            f"shape {shape}")
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    if math.prod(shape) != a.size:
        raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into shape "
                        f"{shape} (size {math.prod(shape)})")
    if order == "F":
        t = lax.transpose(a, tuple(reversed(range(a.ndim))))
        r = lax.reshape(t, tuple(reversed(shape)))
        return lax.transpose(r, tuple(reversed(range(len(shape)))))
    return lax.reshape(a, shape)


def ravel(a, order="C"):
    """``a`` flattened to one dimension (``jax.numpy.ravel``)."""
    check_arraylike("ravel", a)
    a = ensure_array(a)
    return reshape(a, (a.size,), order=order)


def transpose(a, axes=None):
    """``a`` with its axes permuted; reversed when ``axes`` is None
    (``jax.numpy.transpose``)."""
    check_arraylike("transpose", a)
    a = ensure_array(a)
    axes = tuple(reversed(range(a.ndim))) if axes is None else \
        tuple(canonicalize_axis(x, a.ndim) for x in axes)
    if sorted(axes) != list(range(a.ndim)):
        raise ValueError(f"axes {axes} don't match array of shape {a.shape}")
    return lax.transpose(a, axes)


def matrix_transpose(x, /):
    """Swaps the last two axes (``jax.numpy.matrix_transpose``)."""
    x = ensure_array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape {x.shape}")
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return lax.transpose(x, perm)


def expand_dims(a, axis):
    """``a`` with new size-1 axes at ``axis`` (int or tuple) (``jax.numpy.expand_dims``)."""
    check_arraylike("expand_dims", a)
    a = ensure_array(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    axes = canonicalize_axes(tuple(axes), nd)
    return lax.expand_dims(a, axes)


def squeeze(a, axis=None):
    """``a`` without size-1 axes (all of them, or those in ``axis``)
    (``jax.numpy.squeeze``).  Raises ValueError if a named axis is not of size 1."""
    check_arraylike("squeeze", a)
    a = ensure_array(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, a.ndim)
        for ax in axes:
            if a.shape[ax] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not "
                                 f"equal to one, got shape={a.shape} and dimensions={axes}")
    return lax.squeeze(a, axes)


def broadcast_to(array, shape):
    """``array`` broadcast to ``shape`` (``jax.numpy.broadcast_to``).  Raises ValueError for
    incompatible shapes, naming both."""
    check_arraylike("broadcast_to", array)
    return broadcast_to_shape(ensure_array(array), _shape_arg(shape, ()))


def broadcast_shapes_(*shapes):
    return broadcast_shapes(*shapes)


def broadcast_arrays(*args):
    """The arguments broadcast to one shape (``jax.numpy.broadcast_arrays``)."""
    check_arraylike("broadcast_arrays", *args)
    shape = broadcast_shapes(*[np.shape(a) if not hasattr(a, "shape") else a.shape
                               for a in args])
    return [broadcast_to_shape(ensure_array(a), shape) for a in args]


def concatenate(arrays, axis=0, dtype=None):
    """Joins arrays along an existing ``axis`` (``axis=None`` flattens first)
    (``jax.numpy.concatenate``).  Raises ValueError for an empty list, TypeError for shapes
    that differ off the axis."""
    if isinstance(arrays, (np.ndarray,)) or hasattr(arrays, "aval"):
        arrays = list(arrays)
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays)
    arrays = [ensure_array(a) for a in promote_dtypes(*arrays)]
    if dtype is not None:
        from ._util import convert
        arrays = [convert(a, dtype) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    for a in arrays:
        if a.ndim != nd:
            raise ValueError(f"All input arrays must have the same number of dimensions, got "
                             f"shapes {', '.join(str(x.shape) for x in arrays)}")
    return lax.concatenate(arrays, canonicalize_axis(axis, nd))


def stack(arrays, axis=0, out=None, dtype=None):
    """Joins arrays of one shape along a new ``axis`` (``jax.numpy.stack``).  Raises
    ValueError for differing shapes, naming them."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    check_arraylike("stack", *arrays)
    arrays = [ensure_array(a) for a in arrays]
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"All input arrays must have the same shape, got "
                         f"{', '.join(str(a.shape) for a in arrays)}")
    axis = canonicalize_axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis, dtype=dtype)


__all__ = public_names(globals())
