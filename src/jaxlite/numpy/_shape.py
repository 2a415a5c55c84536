"""Shape manipulation (``jax.numpy``): reshape, transpose and axis moves, squeeze and
expand, broadcasting, joining (concatenate, stack, *stack), splitting, tile/repeat,
flip/roll/rot90, pad, take/take_along_axis, atleast_*d, ndim/shape/size.

Layer: numpy.  Everything is built from the static shape primitives (reshape, transpose,
broadcast_in_dim, concatenate, slice, rev, pad) plus gather for ``take``; sizes, axes and
split points must be concrete, as in JAX, and traced ones raise its tracer errors.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import dtypes, errors, lax
from ..core.array import ArrayImpl
from ..core.trace import Tracer
from ._named_jit import named_jit
from ._util import (canonicalize_axis, check_arraylike, convert, ensure_array, int_tuple,
                    promote_dtypes, public_names, shape_error)

_JAX_TYPES = (ArrayImpl, Tracer)


def _arr(x):
    return x if isinstance(x, _JAX_TYPES) else ensure_array(x)


def _axis(axis, ndim, what="axis"):
    """A static axis in ``[0, ndim)``; a traced one raises TracerIntegerConversionError."""
    return canonicalize_axis(operator.index(axis), ndim)


def _static_axes(axis, fn):
    """Raises ConcretizationTypeError if ``axis`` (an int or a sequence) is traced, as
    JAX's moveaxis/squeeze/flip/expand_dims/roll do."""
    for a in (axis if isinstance(axis, (tuple, list)) else (axis,)):
        if isinstance(a, Tracer):
            raise errors.ConcretizationTypeError(a, f"It arose in the axis argument of "
                                                    f"jnp.{fn}: axes must be static.")


def _axes(axis, ndim, what="axis"):
    if isinstance(axis, (tuple, list)):
        return tuple(_axis(a, ndim, what) for a in axis)
    return (_axis(axis, ndim, what),)


def _concrete(x, what):
    if isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(x, f"It arose in {what}.")
    return x


# ---- introspection ---------------------------------------------------------------------

def ndim(a) -> int:
    """Number of dimensions of ``a`` (array, scalar or nested list) (``jax.numpy.ndim``)."""
    return len(shape(a))


def shape(a) -> tuple:
    """Shape of ``a`` (array, scalar or nested list) (``jax.numpy.shape``)."""
    if isinstance(a, _JAX_TYPES):
        return tuple(a.shape)
    return tuple(np.shape(a))


def size(a, axis=None) -> int:
    """Number of elements of ``a``, or along ``axis`` (int or tuple)
    (``jax.numpy.size``).  Raises ValueError for an out-of-range axis."""
    s = shape(a)
    if axis is None:
        return math.prod(s)
    return math.prod(s[i] for i in _axes(axis, len(s)))


# ---- reshape / transpose ---------------------------------------------------------------

def _resolve_shape(a, newshape):
    neg = [i for i, d in enumerate(newshape) if d == -1]
    if len(neg) > 1:
        raise TypeError(f"reshape: at most one entry of the new shape may be -1 (inferred), "
                        f"got {newshape}")
    if neg:
        known = math.prod(d for d in newshape if d != -1)
        if known <= 0 or a.size % known:
            raise TypeError(f"reshape: array of shape {a.shape} has {a.size} elements; the "
                            f"known sizes in {newshape} multiply to {known}, which does not "
                            f"divide {a.size}, so the -1 entry cannot be inferred")
        newshape = tuple(a.size // known if d == -1 else d for d in newshape)
    if math.prod(newshape) != a.size or any(d < 0 for d in newshape):
        raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into shape "
                        f"{newshape} (size {math.prod(newshape)})")
    return newshape


def reshape(a, shape=None, order="C", *, copy=None):
    """``a`` with a new ``shape``; one entry may be -1 (``jax.numpy.reshape``).

    ``order='F'`` reads and writes in column-major order (two transposes around the
    reshape).

    Raises:
      TypeError: the sizes differ (naming both shapes), several -1 entries, non-integer
        or traced sizes; list ``a``.  For a NumPy array ``a`` the shape follows NumPy's
        rules, as in JAX: ValueError for those sizes, and any negative entry is inferred.
      NotImplementedError: ``order='A'``.  ValueError: any other unknown order.

    Example::

      >>> jnp.arange(6).reshape(2, -1).shape
      (2, 3)
    """
    check_arraylike("reshape", a)
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape'")
    if order == "A":
        raise NotImplementedError("np.reshape order=A is not implemented.")
    if order not in ("C", "F"):
        raise ValueError(f"Unexpected value for 'order' argument: {order}.")
    if isinstance(a, (np.ndarray, np.generic)):
        # JAX hands a NumPy array to NumPy's own reshape: NumPy's rules (ValueError for an
        # impossible shape, any negative size inferred); the result is then placed
        newshape = np.reshape(a, int_tuple(shape), order=order).shape
        a = _arr(a)
    else:
        a = _arr(a)
        newshape = _resolve_shape(a, int_tuple(shape))
    if order == "F":
        t = lax.transpose(a, tuple(reversed(range(a.ndim))))
        r = lax.reshape(t, tuple(reversed(newshape)))
        return lax.transpose(r, tuple(reversed(range(len(newshape)))))
    return lax.reshape(a, newshape)


def ravel(a, order="C"):
    """``a`` flattened to one dimension, in ``order`` 'C' or 'F' (``jax.numpy.ravel``).
    Raises NotImplementedError for 'A'/'K', TypeError for a list."""
    check_arraylike("ravel", a)
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    a = _arr(a)
    return reshape(a, (a.size,), order=order)


def transpose(a, axes=None):
    """``a`` with axes permuted by ``axes`` (reversed when None) (``jax.numpy.transpose``).

    Raises ValueError for an out-of-range axis, TypeError when ``axes`` is not a
    permutation of the dimensions (naming the permutation and shape).
    """
    check_arraylike("transpose", a)
    a = _arr(a)
    if axes is None:
        perm = tuple(reversed(range(a.ndim)))
    else:
        perm = _axes(tuple(axes) if not isinstance(axes, (int, np.integer)) else (axes,),
                     a.ndim)
    return lax.transpose(a, perm) if perm != tuple(range(a.ndim)) or len(perm) != a.ndim \
        else a


def permute_dims(a, /, axes):
    """Array-API name of ``transpose`` with required ``axes`` (``jax.numpy.permute_dims``)."""
    return transpose(a, axes)


def matrix_transpose(x, /):
    """Swaps the last two axes (``jax.numpy.matrix_transpose``).  Raises ValueError for
    fewer than 2 dimensions."""
    check_arraylike("matrix_transpose", x)
    x = _arr(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs an input with ndim >= 2; x has "
                         f"ndim={x.ndim} (shape {x.shape})")
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return lax.transpose(x, perm)


def moveaxis(a, source, destination):
    """``a`` with axes ``source`` moved to positions ``destination`` (ints or sequences of
    one length) (``jax.numpy.moveaxis``).  Raises ValueError for mismatched lengths or
    out-of-range axes, TypeError for repeated axes."""
    check_arraylike("moveaxis", a)
    _static_axes(source, "moveaxis")
    _static_axes(destination, "moveaxis")
    a = _arr(a)
    src = _axes(source, a.ndim)
    dst = _axes(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    perm = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return transpose(a, perm)


def rollaxis(a, axis: int, start: int = 0):
    """Moves ``axis`` to just before position ``start`` (``jax.numpy.rollaxis``)."""
    check_arraylike("rollaxis", a)
    a = _arr(a)
    axis = _axis(axis, a.ndim)
    start = operator.index(start)
    if not -a.ndim <= start <= a.ndim:
        raise ValueError(f"start={start} must satisfy {-a.ndim} <= start <= {a.ndim}")
    start = start % (a.ndim + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def swapaxes(a, axis1: int, axis2: int):
    """``a`` with ``axis1`` and ``axis2`` exchanged (``jax.numpy.swapaxes``).  Raises
    IndexError for an out-of-range axis (as JAX does)."""
    check_arraylike("swapaxes", a)
    a = _arr(a)
    perm = list(range(a.ndim))
    i, j = operator.index(axis1), operator.index(axis2)
    for ax in (i, j):
        if not -a.ndim <= ax < a.ndim:
            raise IndexError(f"axis {ax} is out of bounds for array of dimension {a.ndim} "
                             f"(shape {a.shape})")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def expand_dims(a, axis):
    """``a`` with new size-1 axes at ``axis`` (int or sequence, positions in the result)
    (``jax.numpy.expand_dims``).  Raises ValueError for out-of-range or repeated axes."""
    check_arraylike("expand_dims", a)
    _static_axes(axis, "expand_dims")
    a = _arr(a)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    canon = [_axis(x, nd) for x in axes]
    if len(set(canon)) != len(canon):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(axes)} for array of shape "
                         f"{a.shape}")
    return lax.expand_dims(a, canon)


def squeeze(a, axis=None):
    """``a`` without its size-1 axes (all, or those in ``axis``) (``jax.numpy.squeeze``).

    Raises ValueError when a named axis is out of range, repeated or not of size 1.
    """
    check_arraylike("squeeze", a)
    _static_axes(axis, "squeeze")
    a = _arr(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        dims = _axes(axis, a.ndim)
        if len(set(dims)) != len(dims):
            raise ValueError(f"dimensions are not unique: {tuple(dims)}")
        bad = [d for d in dims if a.shape[d] != 1]
        if bad:
            raise ValueError(f"squeeze: only axes of length 1 can be removed; shape={a.shape}, "
                             f"requested dimensions={tuple(dims)}")
    return lax.squeeze(a, dims) if dims else a


# ---- broadcasting ----------------------------------------------------------------------

def _type_str(dt, shape):
    name = "bfloat16" if np.dtype(dt) == dtypes._BF16 else np.dtype(dt).name
    return f"{name}[{','.join(map(str, shape))}]"


def broadcast_to(array, shape):
    """``array`` broadcast to ``shape`` by NumPy's rules (``jax.numpy.broadcast_to``).

    Raises:
      ValueError: fewer target dimensions, or sizes that do not broadcast (naming both).
      TypeError: negative, non-integer or traced sizes; a list ``array``.
    """
    check_arraylike("broadcast_to", array)
    x = _arr(array)
    shape = int_tuple(shape)
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{shape}.")
    if x.shape == shape:
        return x
    if len(shape) < x.ndim:
        raise ValueError(f"broadcast_to: target shape {shape} has fewer dimensions than "
                         f"the array's shape {x.shape}")
    lead = len(shape) - x.ndim
    if any(s not in (1, t) for s, t in zip(x.shape, shape[lead:])):
        raise ValueError(f"broadcast_to: {_type_str(x.dtype, x.shape)} cannot be broadcast "
                         f"to {_type_str(x.dtype, shape)} (each trailing dimension must "
                         f"be 1 or match)")
    return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to (``jax.numpy.broadcast_shapes``); ints are
    1-D shapes.  Raises ValueError naming the shapes when they do not broadcast."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    if not shapes:
        return ()
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes {shapes}: they have no common broadcast "
                         f"shape") from None


def broadcast_arrays(*args):
    """The arguments broadcast to their common shape, as a list
    (``jax.numpy.broadcast_arrays``).  Raises ValueError naming the shapes."""
    check_arraylike("broadcast_arrays", *args)
    shp = broadcast_shapes(*[shape(a) for a in args])
    return [broadcast_to(a, shp) for a in args]


# ---- joining ---------------------------------------------------------------------------

def _as_sequence(arrays):
    """A list of arrays from a sequence, or the slices along axis 0 of one array."""
    if isinstance(arrays, _JAX_TYPES + (np.ndarray,)):
        a = _arr(arrays)
        if a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return [lax.index_in_dim(a, i, 0, keepdims=False) for i in range(a.shape[0])]
    return list(arrays)


def concatenate(arrays, axis: int | None = 0, dtype=None):
    """Joins arrays along an existing ``axis``; ``axis=None`` flattens them first
    (``jax.numpy.concatenate``).  Dtypes promote (weak only if all are weak).

    Raises:
      ValueError: no arrays; zero-dimensional arrays; out-of-range axis.
      TypeError: different ranks or sizes off the axis (naming the shapes); lists inside.
    """
    if isinstance(arrays, _JAX_TYPES + (np.ndarray,)) and axis is not None:
        a = _arr(arrays)
        if a.ndim <= 1:
            raise ValueError("concatenate: the pieces would be 0-d arrays, which have no axis "
                             "to join along")
        ax = _axis(axis, a.ndim - 1)
        perm = list(range(1, a.ndim))
        perm.insert(ax, 0)
        t = lax.transpose(a, perm)
        shp = list(a.shape[1:])
        shp[ax] *= a.shape[0]
        out = lax.reshape(t, shp)
        return out if dtype is None else convert(out, dtypes.canonicalize_dtype(dtype))
    arrays = _as_sequence(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays)
    if dtype is None:
        arrays = [_arr(a) for a in promote_dtypes(*arrays)]
    else:
        dt = dtypes.canonicalize_dtype(dtype)
        arrays = [lax._convert(_arr(a), dt, False) for a in arrays]
    if axis is None:
        arrays = [lax.reshape(a, (a.size,)) for a in arrays]
        axis = 0
    if arrays[0].ndim == 0:
        raise ValueError("concatenate: 0-d arrays have no axis to join along")
    return lax.concatenate(arrays, _axis(axis, arrays[0].ndim))


def concat(arrays, /, *, axis: int | None = 0):
    """Array-API name of ``concatenate`` (``jax.numpy.concat``)."""
    return concatenate(arrays, axis=axis)


def stack(arrays, axis: int = 0, out=None, dtype=None):
    """Joins arrays of one shape along a new ``axis`` (``jax.numpy.stack``).

    Raises ValueError for no arrays, differing shapes (naming them) or an out-of-range
    axis; NotImplementedError for ``out``.
    """
    if out is not None:
        raise NotImplementedError("jnp.stack: out= is unsupported (arrays are immutable)")
    if isinstance(arrays, _JAX_TYPES + (np.ndarray,)):
        a = _arr(arrays)
        if a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        res = moveaxis(a, 0, _axis(axis, a.ndim))
        return res if dtype is None else convert(res, dtypes.canonicalize_dtype(dtype))
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    check_arraylike("stack", *arrays)
    shapes = [shape(a) for a in arrays]
    if any(s != shapes[0] for s in shapes):
        raise ValueError(f"stack: every input needs one common shape; the shapes are "
                         f"{', '.join(str(s) for s in shapes)}")
    ax = _axis(axis, len(shapes[0]) + 1)
    if dtype is None:
        arrays = [_arr(a) for a in promote_dtypes(*arrays)]
    else:
        dt = dtypes.canonicalize_dtype(dtype)
        arrays = [lax._convert(_arr(a), dt, False) for a in arrays]
    from ..lax._more import stack as lax_stack
    return lax_stack(arrays, ax)


def unstack(x, /, *, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple (``jax.numpy.unstack``).  Raises
    ValueError for a 0-d ``x`` or out-of-range axis."""
    check_arraylike("unstack", x)
    x = _arr(x)
    if x.ndim == 0:
        raise ValueError("unstack: x is 0-d (a scalar); it needs at least one axis to "
                         "split along")
    from ..lax._more import unstack as lax_unstack
    return lax_unstack(x, _axis(axis, x.ndim))


def _stack_seq(name, tup):
    if isinstance(tup, _JAX_TYPES + (np.ndarray,)):
        tup = _as_sequence(tup)
    tup = list(tup)
    if not tup:
        raise ValueError(f"{name}: need at least one array to concatenate.")
    check_arraylike(name, *tup)
    return tup


def hstack(tup, dtype=None):
    """Joins along axis 1 (axis 0 for 1-D inputs) (``jax.numpy.hstack``)."""
    arrs = [atleast_1d(a) for a in _stack_seq("hstack", tup)]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Joins along axis 0 after making inputs at least 2-D (``jax.numpy.vstack``)."""
    return concatenate([atleast_2d(a) for a in _stack_seq("vstack", tup)], 0, dtype=dtype)


def dstack(tup, dtype=None):
    """Joins along axis 2 after making inputs at least 3-D (``jax.numpy.dstack``)."""
    return concatenate([atleast_3d(a) for a in _stack_seq("dstack", tup)], 2, dtype=dtype)


def column_stack(tup):
    """Joins 1-D inputs as columns (2-D ones as they are) along axis 1
    (``jax.numpy.column_stack``)."""
    arrs = []
    for a in _stack_seq("column_stack", tup):
        a = _arr(a)
        if a.ndim < 2:
            a = lax.transpose(atleast_2d(a), (1, 0))
        arrs.append(a)
    return concatenate(arrs, 1)


def append(arr, values, axis: int | None = None):
    """``values`` appended to ``arr`` along ``axis`` (both flattened when None)
    (``jax.numpy.append``)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# ---- splitting -------------------------------------------------------------------------

def _split_axis(a, axis, name):
    ax = operator.index(axis)
    if not -a.ndim <= ax < a.ndim:
        raise IndexError(f"{name}: axis {ax} is out of bounds for array of dimension "
                         f"{a.ndim} (shape {a.shape})")
    return ax % a.ndim


def _split(name, ary, indices_or_sections, axis, equal):
    check_arraylike(name, ary)
    a = _arr(ary)
    ax = _split_axis(a, axis, name)
    n = a.shape[ax]
    what = f"the indices_or_sections argument of jnp.{name}"
    ios = _concrete(indices_or_sections, what)
    if isinstance(ios, (list, tuple)):
        ios = [_concrete(i, what) for i in ios]
    if np.ndim(ios) == 0:
        sections = operator.index(int(ios)) if isinstance(ios, (float, np.floating)) else \
            operator.index(ios)
        if sections <= 0:
            raise ValueError(f"number sections must be larger than 0, got {sections}")
        if equal and n % sections:
            raise ValueError(f"split: an axis of length {n} cannot be cut into {sections} "
                             f"equal pieces ({n % sections} left over)")
        q, r = divmod(n, sections)
        sizes = [q + 1] * r + [q] * (sections - r)
    else:
        idx = [operator.index(i) for i in np.asarray(ios).tolist()]
        bounds = [0] + idx + [n]
        sizes = [hi - lo for lo, hi in zip(bounds[:-1], bounds[1:])]
        if any(s < 0 for s in sizes):
            raise ValueError(f"split points {idx} along an axis of size {n} give negative "
                             f"piece sizes {sizes}; the points must not decrease")
    from ..lax._more import split as lax_split
    # the sizes as NumPy integers, as JAX computes (and prints) them
    return lax_split(a, tuple(np.int64(s) for s in sizes), ax)


def split(ary, indices_or_sections, axis: int = 0):
    """``ary`` split along ``axis`` into equal sections (an int) or at the given indices
    (a sequence) (``jax.numpy.split``).  Returns a list.

    Raises:
      ValueError: sections that do not divide the axis; decreasing or out-of-range split
        points; a non-positive section count.
      IndexError: out-of-range axis.
      ConcretizationTypeError: traced split points.
    """
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis: int = 0):
    """Like ``split`` but sections need not divide the axis: the first ones are one longer
    (``jax.numpy.array_split``)."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections):
    """``split`` along axis 1 (axis 0 for 1-D) (``jax.numpy.hsplit``)."""
    check_arraylike("hsplit", ary)
    a = _arr(ary)
    return _split("hsplit", a, indices_or_sections, 1 if a.ndim > 1 else 0, True)


def vsplit(ary, indices_or_sections):
    """``split`` along axis 0 (``jax.numpy.vsplit``)."""
    return _split("vsplit", ary, indices_or_sections, 0, True)


def dsplit(ary, indices_or_sections):
    """``split`` along axis 2 (``jax.numpy.dsplit``); IndexError below 3 dimensions."""
    return _split("dsplit", ary, indices_or_sections, 2, True)


# ---- tile / repeat ---------------------------------------------------------------------

def tile(A, reps):
    """``A`` repeated ``reps`` times per axis (``jax.numpy.tile``); ranks are aligned on the
    right by adding leading size-1 axes.  Raises TypeError for non-integer, negative or
    traced ``reps`` and a list ``A``."""
    check_arraylike("tile", A)
    a = _arr(A)
    reps = int_tuple(reps)
    if any(r < 0 for r in reps):
        raise TypeError(f"tile: reps must be nonnegative, got {reps}")
    nd = builtins.max(len(reps), a.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shp = (1,) * (nd - a.ndim) + tuple(a.shape)
    a = lax.reshape(a, shp)
    if all(r == 1 for r in reps):
        return a
    inter = [x for pair in zip(reps, shp) for x in pair]
    b = lax.broadcast_in_dim(a, inter, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(b, [r * s for r, s in zip(reps, shp)])


def _gather_axis(a, idx, axis, mode):
    from ._indexing import getitem
    return getitem(a, (slice(None),) * axis + (idx,), mode=mode)


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Each element of ``a`` repeated ``repeats`` times along ``axis`` (flattened when
    None) (``jax.numpy.repeat``).

    ``repeats`` is a scalar or one count per element.  Concrete counts are resolved now; a
    traced ``repeats`` needs ``total_repeat_length`` (the static result length; results are
    cut, or padded with the last element, to it), else ConcretizationTypeError.

    Raises:
      TypeError: list arguments; non-integer or negative scalar ``repeats``.
      ValueError: out-of-range axis; ``repeats`` of the wrong length or negative.
    """
    check_arraylike("repeat", a, repeats)
    a = _arr(a)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    total = None if total_repeat_length is None else operator.index(total_repeat_length)
    if np.ndim(repeats) == 0 and not isinstance(repeats, Tracer):
        if isinstance(repeats, (float, np.floating)) or \
                not dtypes.is_int(np.asarray(repeats).dtype):
            raise shape_error([repeats])
        r = operator.index(repeats)
        if r < 0:
            raise TypeError(f"broadcast_in_dim shape must have every element be "
                            f"nonnegative, got repeats={r} for array of shape {a.shape}.")
        if total is None or total == n * r:
            shp = list(a.shape)
            shp.insert(ax + 1, r)
            dims = [i for i in range(a.ndim + 1) if i != ax + 1]
            b = lax.broadcast_in_dim(a, shp, dims)
            shp[ax:ax + 2] = [n * r]
            return lax.reshape(b, shp)
        repeats = np.full((n,), r)
    if not isinstance(repeats, Tracer):
        reps = np.asarray(repeats).astype(np.int64).reshape(-1)
        if reps.shape == (1,):
            reps = np.repeat(reps, n)
        if reps.shape != (n,):
            raise ValueError(f"repeat: repeats must be a scalar or have one entry per element "
                             f"along the axis, got shape {np.shape(repeats)} for axis of size "
                             f"{n}")
        if (reps < 0).any():
            raise ValueError(f"repeat: repeats may not be negative, got {reps.tolist()}")
        length = int(reps.sum()) if total is None else total
        starts = np.cumsum(reps)[:-1]
        idx = np.searchsorted(starts, np.arange(length), side="right").astype(np.int32)
        return _gather_axis(a, ensure_array(idx), ax, "clip")
    if total is None:
        raise errors.ConcretizationTypeError(
            repeats, "It arose in jnp.repeat: traced repeats need the static "
                     "total_repeat_length argument (the result length).")
    reps = lax.convert_element_type(repeats, dtypes.default_int_dtype())
    if reps.ndim == 0 or reps.shape == (1,):
        reps = lax.broadcast_in_dim(lax.reshape(reps, ()), (n,), ())
    if reps.shape != (n,):
        raise ValueError(f"repeat: repeats must be a scalar or have one entry per element "
                         f"along the axis, got shape {reps.shape} for axis of size {n}")
    from ._indexing import IndexUpdateHelper
    starts = lax.slice(lax.cumsum(reps, 0), (0,), (builtins.max(n - 1, 0),))
    marks = IndexUpdateHelper(lax.broadcast_in_dim(np.int32(0), (total,), ()))[starts].add(1)
    idx = lax.cumsum(lax.convert_element_type(marks, np.int32), 0)
    return _gather_axis(a, idx, ax, "clip")


# ---- flips, rolls, rotations -----------------------------------------------------------

def flip(m, axis=None):
    """``m`` with the order of elements reversed along ``axis`` (all when None)
    (``jax.numpy.flip``).  Raises ValueError for an out-of-range axis."""
    check_arraylike("flip", m)
    _static_axes(axis, "flip")
    m = _arr(m)
    # the axis as given (a list as a tuple): JAX's named jit is keyed on it, so flip(m, 1)
    # and flip(m, (1,)) are two programs
    return _flip(m, axis=tuple(axis) if isinstance(axis, list) else axis)


@named_jit("_flip", static_argnames=("axis",))
def _flip(m, axis):
    return lax.rev(m, tuple(range(m.ndim)) if axis is None else _axes(axis, m.ndim))


def fliplr(m):
    """``m`` reversed along axis 1 (``jax.numpy.fliplr``); ValueError below 2-D."""
    return flip(m, 1)


def flipud(m):
    """``m`` reversed along axis 0 (``jax.numpy.flipud``); ValueError for 0-d."""
    return flip(m, 0)


@named_jit("_roll_static", static_argnames=("shifts", "axes"))
def _roll_static(a, shifts, axes):
    # each axis rotated by two unit-stride slices joined (JAX's equations, a zero shift
    # included: an empty slice); the unit strides spelled out, as JAX's slices print them
    # (lax.slice leaves them out)
    from ..primitives.shape import slice_p
    nd = a.ndim
    for s, ax in zip(shifts, axes):
        n = a.shape[ax]
        if n == 0:
            continue
        i = (-s) % n
        lo, hi = [0] * nd, list(a.shape)
        lo[ax] = i
        first = slice_p.bind(a, start_indices=tuple(lo), limit_indices=tuple(hi),
                             strides=(1,) * nd)
        lo[ax], hi[ax] = 0, i
        second = slice_p.bind(a, start_indices=tuple(lo), limit_indices=tuple(hi),
                              strides=(1,) * nd)
        a = lax.concatenate([first, second], ax)
    return a


def _roll_dynamic(a, s, ax):
    n = a.shape[ax]
    if n == 0:
        return a
    idt = dtypes.default_int_dtype()
    s = lax.convert_element_type(s, idt)
    r = lax.rem(s, n)
    r = lax.select(lax.lt(r, 0), lax.add(r, n), r)
    start = lax.rem(lax.sub(n, r), n)
    both = lax.concatenate([a, a], ax)
    return lax.dynamic_slice_in_dim(both, start, n, ax)


def roll(a, shift, axis=None):
    """``a`` rotated by ``shift`` positions along ``axis`` (flattened when None)
    (``jax.numpy.roll``).  ``shift``/``axis`` may be tuples (broadcast together); ``shift``
    may be traced (a dynamic slice), ``axis`` must be static.

    Raises ValueError for out-of-range axes or shift/axis tuples that do not broadcast.
    """
    check_arraylike("roll", a)
    _static_axes(axis, "roll")
    a = _arr(a)
    if isinstance(shift, _JAX_TYPES) and not isinstance(shift, Tracer):
        shift = np.asarray(shift)
    if isinstance(shift, Tracer):
        if axis is None:
            flat = lax.reshape(a, (a.size,))
            s = shift if shift.ndim == 0 else lax.reduce_sum(shift, tuple(range(shift.ndim)))
            return lax.reshape(_roll_dynamic(flat, s, 0), a.shape)
        if shift.ndim != 0:
            raise NotImplementedError("jnp.roll: a traced shift must be a scalar")
        out = a
        for ax in _axes(axis, a.ndim):
            out = _roll_dynamic(out, shift, ax)
        return out
    shifts = np.asarray(shift)
    if shifts.dtype.kind not in "iub":
        shifts = shifts.astype(np.int64)
    if axis is None:
        flat = lax.reshape(a, (a.size,))
        return lax.reshape(_roll_static(flat, shifts=(int(shifts.sum()),), axes=(0,)),
                           a.shape)
    axes = np.asarray([_concrete(x, "the axis argument of jnp.roll") for x in axis]
                      if isinstance(axis, (tuple, list)) else
                      _concrete(axis, "the axis argument of jnp.roll"))
    try:
        shifts, axes = np.broadcast_arrays(shifts, axes)
    except ValueError:
        raise ValueError(f"jnp.roll: shift {shift!r} and axis {axis!r} do not broadcast "
                         f"together") from None
    return _roll_static(a, shifts=tuple(int(x) for x in shifts.reshape(-1).tolist()),
                        axes=tuple(_axis(ax, a.ndim) for ax in axes.reshape(-1).tolist()))


def rot90(m, k: int = 1, axes: tuple = (0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane ``axes``, from the first axis
    towards the second (``jax.numpy.rot90``).

    Raises ValueError for fewer than 2 dimensions, equal or out-of-range axes.
    """
    check_arraylike("rot90", m)
    m = _arr(m)
    if m.ndim < 2:
        raise ValueError(f"rot90 rotates in a plane of two axes, so m needs ndim >= 2; "
                         f"m has shape {m.shape} (ndim {m.ndim})")
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"len(axes) must be 2, got axes={axes}")
    ax1, ax2 = _axis(axes[0], m.ndim), _axis(axes[1], m.ndim)
    if ax1 == ax2:
        raise ValueError("Axes must be different")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, (ax1, ax2))
    perm = list(range(m.ndim))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    if k == 1:
        return lax.transpose(lax.rev(m, (ax2,)), perm)
    return lax.rev(lax.transpose(m, perm), (ax2,))


# ---- pad -------------------------------------------------------------------------------

def _pad_pairs(value, nd, name="pad_width", integral=True):
    """``value`` normalised to ``nd`` (before, after) pairs of Python numbers."""
    value = _concrete(value, f"the {name} argument of jnp.pad")
    arr = np.asarray(value.tolist() if isinstance(value, ArrayImpl) else value)
    if integral and arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"`{name}` must be of integral type.")
    if arr.shape in ((), (1,), (2,), (1, 2), (nd, 2)):
        if integral and (arr < 0).any():
            raise ValueError(f"index can't contain negative values ({name}={value!r})")
        return [tuple(p) for p in np.broadcast_to(arr, (nd, 2)).tolist()]
    raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. Valid "
                     f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _no_padding(pads, i, mode):
    if pads[i][0] > 0 or pads[i][1] > 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _pad_constant(a, pads, cv):
    if isinstance(cv, (list, tuple)) or np.ndim(cv) > 0:
        if isinstance(cv, Tracer):
            raise NotImplementedError("jnp.pad: traced constant_values must be a scalar")
        cvals = _pad_pairs(np.asarray(cv.tolist() if isinstance(cv, ArrayImpl) else cv),
                           a.ndim, "constant_values", integral=False)
    else:
        if all(lo == 0 and hi == 0 for lo, hi in pads):
            return a
        return lax.pad(a, _fill_scalar(cv, a), [(lo, hi, 0) for lo, hi in pads])
    for i, ((lo, hi), (cl, ch)) in enumerate(zip(pads, cvals)):
        for amount, value, before in ((lo, cl, True), (hi, ch, False)):
            if amount:
                cfg = [(0, 0, 0)] * a.ndim
                cfg[i] = (amount, 0, 0) if before else (0, amount, 0)
                a = lax.pad(a, _fill_scalar(value, a), cfg)
    return a


def _fill_scalar(value, a):
    """Python scalar ``value`` typed like ``a`` (weak if ``a`` is)."""
    if isinstance(value, _JAX_TYPES):
        return lax._convert(value, a.dtype, a.weak_type)
    if isinstance(value, np.generic):
        value = value.item()
    if a.weak_type:
        return lax.scalar_as(value, a.dtype, True)
    with np.errstate(all="ignore"):
        if isinstance(value, complex) and a.dtype.kind != "c":
            raise TypeError(f"can't convert complex value {value!r} to dtype {a.dtype}")
        return np.asarray(value).astype(a.dtype)


def _pad_edge(a, pads):
    for i, (lo, hi) in enumerate(pads):
        n = a.shape[i]
        if n == 0:
            _no_padding(pads, i, "edge")
            continue
        parts = []
        for amount, sl in ((lo, (0, 1)), (hi, (n - 1, n))):
            if amount:
                edge = lax.slice_in_dim(a, sl[0], sl[1], 1, i)
                shp = list(a.shape)
                shp[i] = amount
                parts.append(lax.broadcast_in_dim(edge, shp, range(a.ndim)))
            else:
                parts.append(None)
        if parts[0] is not None or parts[1] is not None:
            a = lax.concatenate([p for p in (parts[0], a, parts[1]) if p is not None], i)
    return a


def _pad_wrap(a, pads):
    for i, (lo, hi) in enumerate(pads):
        n = a.shape[i]
        if n == 0:
            _no_padding(pads, i, "wrap")
            continue
        if lo == 0 and hi == 0:
            continue
        lrep, lrem = divmod(lo, n)
        rrep, rrem = divmod(hi, n)
        parts = []
        if lrem:
            parts.append(lax.slice_in_dim(a, n - lrem, n, 1, i))
        parts += [a] * (lrep + rrep + 1)
        if rrem:
            parts.append(lax.slice_in_dim(a, 0, rrem, 1, i))
        a = lax.concatenate(parts, i)
    return a


def _pad_reflect(a, pads, mode, reflect_type):
    """'reflect' (mirror without the edge) or 'symmetric' (with it), chunk by chunk from
    the growing array as NumPy does; 'odd' reflects values through the edge value too."""
    for i, (lo, hi) in enumerate(pads):
        n = a.shape[i]
        if n == 0:
            _no_padding(pads, i, mode)
            continue
        skip = 1 if mode == "reflect" and n > 1 else 0
        for amount, before in ((lo, True), (hi, False)):
            m = a.shape[i]
            edge = lax.slice_in_dim(a, 0, 1, 1, i) if before else \
                lax.slice_in_dim(a, m - 1, m, 1, i)
            while amount > 0:
                m = a.shape[i]
                chunk = builtins.min(amount, n - skip)
                amount -= chunk
                if before:
                    x = lax.slice_in_dim(a, skip, skip + chunk, 1, i)
                else:
                    x = lax.slice_in_dim(a, m - chunk - skip, m - skip, 1, i)
                x = lax.rev(x, (i,))
                if reflect_type == "odd":
                    from ._ufuncs import multiply, subtract
                    x = subtract(multiply(2, edge), x)
                    if n > 1:
                        edge = lax.slice_in_dim(x, 0, 1, 1, i) if before else \
                            lax.slice_in_dim(x, chunk - 1, chunk, 1, i)
                a = lax.concatenate([x, a] if before else [a, x], i)
    return a


def _pad_linear_ramp(a, pads, end_values):
    from ._creation import linspace
    ends = _pad_pairs(end_values, a.ndim, "end_values", integral=False)
    for i, ((lo, hi), (e0, e1)) in enumerate(zip(pads, ends)):
        n = a.shape[i]
        first = lax.index_in_dim(a, 0, i, keepdims=False)
        last = lax.index_in_dim(a, n - 1, i, keepdims=False)
        before = linspace(e0, first, lo, endpoint=False, dtype=a.dtype, axis=i)
        after = linspace(e1, last, hi, endpoint=False, dtype=a.dtype, axis=i)
        before = lax._convert(before, a.dtype, a.weak_type)
        after = lax.rev(lax._convert(after, a.dtype, a.weak_type), (i,))
        a = lax.concatenate([before, a, after], i)
    return a


def _pad_stats(a, pads, stat_length, func):
    from ._ufuncs import round as _round
    lengths = None if stat_length is None else _pad_pairs(stat_length, a.ndim, "stat_length")
    for i, (lo, hi) in enumerate(pads):
        n = a.shape[i]
        if lengths is None:
            before = after = func(a, axis=i, keepdims=True)
        else:
            lb, la = lengths[i]
            if lb == 0 or la == 0:
                raise ValueError(f"pad: stat_length 0 along axis {i} leaves no values to compute "
                                 f"the statistic from")
            lb, la = builtins.min(lb, n), builtins.min(la, n)
            before = func(lax.slice_in_dim(a, 0, lb, 1, i), axis=i, keepdims=True)
            after = func(lax.slice_in_dim(a, n - la, n, 1, i), axis=i, keepdims=True)
        if dtypes.is_int(a.dtype):
            before, after = _round(before), _round(after)
        before = lax._convert(before, a.dtype, a.weak_type)
        after = lax._convert(after, a.dtype, a.weak_type)
        parts = [repeat(before, lo, axis=i), a, repeat(after, hi, axis=i)]
        a = lax.concatenate(parts, i)
    return a


_PAD_KWARGS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(), "empty": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "maximum": {"stat_length"}, "minimum": {"stat_length"},
               "mean": {"stat_length"}, "median": {"stat_length"},
               "linear_ramp": {"end_values"}}


def pad(array, pad_width, mode="constant", **kwargs):
    """``array`` padded by ``pad_width`` (an int, a (before, after) pair, or one pair per
    axis) (``jax.numpy.pad``).

    Modes: 'constant' (``constant_values``: a scalar, a pair, or pairs per axis; may be
    traced if a scalar), 'edge', 'wrap', 'reflect' and 'symmetric' (``reflect_type``
    'even' or 'odd'), 'empty' (zeros), 'maximum'/'minimum'/'mean'/'median'
    (``stat_length``), 'linear_ramp' (``end_values``).  The weak type of ``array`` is
    kept.

    Raises:
      TypeError: non-integer ``pad_width``; a list ``array``.
      ValueError: negative or badly shaped ``pad_width``; keyword arguments the mode does
        not take; padding an empty axis in a mode that reads the array.
      NotImplementedError: other modes (callables).
      ConcretizationTypeError: traced ``pad_width``.
    """
    check_arraylike("pad", array)
    a = _arr(array)
    if callable(mode) or mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    extra = set(kwargs) - _PAD_KWARGS[mode]
    if extra:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    pads = _pad_pairs(pad_width, a.ndim)
    if mode == "constant":
        return _pad_constant(a, pads, kwargs.get("constant_values", 0))
    if mode == "empty":
        return _pad_constant(a, pads, 0)
    if mode == "edge":
        return _pad_edge(a, pads)
    if mode == "wrap":
        return _pad_wrap(a, pads)
    if mode in ("reflect", "symmetric"):
        rt = kwargs.get("reflect_type", "even")
        if rt not in ("even", "odd"):
            raise ValueError(f"unsupported reflect_type {rt!r}; expected 'even' or 'odd'")
        return _pad_reflect(a, pads, mode, rt)
    if mode == "linear_ramp":
        return _pad_linear_ramp(a, pads, kwargs.get("end_values", 0))
    from .. import numpy as jnp
    func = getattr(jnp, {"maximum": "max", "minimum": "min"}.get(mode, mode), None)
    if func is None:
        raise NotImplementedError(f"jnp.pad mode '{mode}' needs jnp.{mode}, which is not "
                                  f"available yet")
    return _pad_stats(a, pads, kwargs.get("stat_length"), func)


# ---- take ------------------------------------------------------------------------------

def _index_operand(name, idx, error=ValueError):
    if isinstance(idx, (int, np.integer)) and not isinstance(idx, bool):
        return ensure_array(np.asarray(idx, dtypes.default_int_dtype()))
    idx = _arr(idx)
    if not dtypes.is_int(idx.dtype):
        if error is ValueError:
            raise ValueError(f"indices must have an integer type, got {idx.dtype}")
        raise TypeError(f"{name} indices must be of integer type, got {idx.dtype}")
    return idx


def _wrap_index(idx, n):
    """``idx`` modulo ``n`` into ``[0, n)`` (floor semantics for negative indices)."""
    if n == 0:
        return idx
    # n in idx's dtype: lax takes a Python int only as the default int dtype
    n = lax.scalar_as(n, idx.dtype, False)
    r = lax.rem(idx, n)
    if not dtypes.is_int(idx.dtype) or idx.dtype.kind == "u":
        return r
    return lax.select(lax.lt(r, lax.scalar_as(0, idx.dtype, False)), lax.add(r, n), r)


def _take_mode(name, mode):
    """``take``'s mode: None (fill), 'fill', 'clip' or 'wrap'; NotImplementedError for
    'raise', ValueError for anything else (as JAX)."""
    if mode is None:
        return "fill"
    if mode == "raise":
        raise NotImplementedError(f"The 'raise' mode to jnp.{name} is not supported.")
    if not isinstance(mode, str) or mode not in ("fill", "clip", "wrap"):
        raise ValueError(f"Invalid mode '{mode}' for np.{name}")
    return mode


def _gather_mode(mode):
    """``take_along_axis``'s mode, which is a gather's (JAX): None (fill), 'fill', 'clip',
    'drop', 'promise_in_bounds' or a ``lax.GatherScatterMode``; ValueError otherwise ('wrap'
    and 'raise' included)."""
    if mode is None:
        return "fill"
    from ..lax import GatherScatterMode
    names = {"CLIP": "clip", "FILL_OR_DROP": "fill", "PROMISE_IN_BOUNDS": "promise_in_bounds"}
    if isinstance(mode, GatherScatterMode) and mode.name in names:
        return names[mode.name]
    if not isinstance(mode, str) or mode not in ("fill", "clip", "drop", "promise_in_bounds"):
        raise ValueError(f'Unknown gather mode "{mode}"')
    return "fill" if mode == "drop" else mode


def take(a, indices, axis: int | None = None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when None)
    (``jax.numpy.take``).  The result's shape replaces ``axis`` by ``indices.shape``.

    Out-of-bounds indices follow ``mode``: 'fill' (the default: NaN for inexact dtypes,
    the minimum for signed ints, the maximum for unsigned, True for bool, or
    ``fill_value``), 'clip', 'wrap'.  Negative indices count from the end.

    Raises:
      ValueError: non-integer indices; out-of-range axis; unknown mode.
      NotImplementedError: mode 'raise'; ``out``.
      TypeError: list arguments.
    """
    if out is not None:
        raise NotImplementedError("jnp.take: out= is unsupported (arrays are immutable)")
    check_arraylike("take", a, indices)
    a = _arr(a)
    idx = _index_operand("take", indices)
    mode = _take_mode("take", mode)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if mode == "wrap":
        idx, mode = _wrap_index(idx, n), "clip"
    elif mode == "clip" and n:
        # take clamps raw indices: -1 -> 0 (bounds in idx's dtype, as lax.clamp needs)
        idx = lax.clamp(lax.scalar_as(0, idx.dtype, False), idx,
                        lax.scalar_as(n - 1, idx.dtype, False))
    from ._indexing import getitem
    return getitem(a, (slice(None),) * ax + (idx,), mode=mode,
                   fill_value=fill_value if mode == "fill" else None)


def take_along_axis(arr, indices, axis: int | None, mode=None, fill_value=None):
    """``arr`` gathered at ``indices`` along ``axis``, the other axes matched position by
    position (broadcasting) (``jax.numpy.take_along_axis``).  ``axis=None`` uses the
    flattened ``arr`` and 1-D indices.  Out-of-bounds indices follow ``mode``, a gather's:
    'fill' (the default; as in ``take``), 'drop' (the same for a gather), 'clip',
    'promise_in_bounds' or a ``lax.GatherScatterMode``.

    Raises:
      TypeError: non-integer indices; list arguments.
      ValueError: rank mismatch, shapes that do not broadcast, bad axis or mode.
    """
    check_arraylike("take_along_axis", arr, indices)
    a = _arr(arr)
    idx = _index_operand("take_along_axis", indices, TypeError)
    mode = _gather_mode(mode)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"take_along_axis with axis=None flattens arr, so indices must "
                             f"be 1-D; indices have shape {idx.shape}")
        a = lax.reshape(a, (a.size,))
        axis = 0
    if idx.ndim != a.ndim:
        raise ValueError(f"take_along_axis: indices have ndim {idx.ndim} but arr has "
                         f"ndim {a.ndim}; they must be equal")
    ax = _axis(axis, a.ndim)
    other_a = tuple(1 if i == ax else d for i, d in enumerate(a.shape))
    other_i = tuple(1 if i == ax else d for i, d in enumerate(idx.shape))
    out_shape = list(broadcast_shapes(other_i, other_a))
    index = []
    for d in range(a.ndim):
        if d == ax:
            index.append(idx)
        elif a.shape[d] == 1:
            index.append(ensure_array(np.zeros((1,) * a.ndim, np.int32)))
        else:
            shp = [1] * a.ndim
            shp[d] = out_shape[d]
            index.append(lax.broadcasted_iota(np.int32, shp, d))
    from ._indexing import getitem
    return getitem(a, tuple(index), mode=mode,
                   fill_value=fill_value if mode == "fill" else None)


# ---- atleast ---------------------------------------------------------------------------

def _atleast(name, arys, fn):
    check_arraylike(name, *arys)
    out = [fn(_arr(a)) for a in arys]
    return out[0] if len(out) == 1 else out


def _expand(a, ndim, dims):
    """``a`` broadcast to ``ndim`` dimensions, its own at ``dims``, new ones of size 1 (as
    JAX adds them: one ``broadcast_in_dim``)."""
    if a.ndim >= ndim:
        return a
    shape = [1] * ndim
    for d, n in zip(dims, a.shape):
        shape[d] = n
    return lax.broadcast_in_dim(a, tuple(shape), tuple(dims))


@named_jit("atleast_1d")
def atleast_1d(*arys):
    """Each input with at least 1 dimension; one array for one input, else a list
    (``jax.numpy.atleast_1d``)."""
    return _atleast("atleast_1d", arys, lambda a: _expand(a, 1, ()))


@named_jit("atleast_2d")
def atleast_2d(*arys):
    """Each input with at least 2 dimensions (1-D ``(n,)`` becomes ``(1, n)``)
    (``jax.numpy.atleast_2d``)."""
    return _atleast("atleast_2d", arys,
                    lambda a: _expand(a, 2, tuple(range(2 - a.ndim, 2))))


def _to_3d(a):
    return _expand(a, 3, {0: (), 1: (1,), 2: (0, 1)}.get(a.ndim, ()))


@named_jit("atleast_3d")
def atleast_3d(*arys):
    """Each input with at least 3 dimensions: ``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` ->
    ``(m, n, 1)`` (``jax.numpy.atleast_3d``)."""
    if len(arys) > 1:
        # one nested call per array, as JAX's definition makes it
        check_arraylike("atleast_3d", *arys)
        return [atleast_3d(a) for a in arys]
    return _atleast("atleast_3d", arys, _to_3d)


__all__ = public_names(globals())


# ---- typed PRNG key arrays ------------------------------------------------------------
# these functions only move, select or copy elements, so they take key arrays too (JAX
# allows it); see lax/_keyaware.py
from ..lax._keyaware import key_aware as _key_aware  # noqa: E402

for _name, _elements in [
        ("reshape", ("a",)), ("ravel", ("a",)), ("transpose", ("a",)), ("moveaxis", ("a",)),
        ("swapaxes", ("a",)), ("expand_dims", ("a",)), ("squeeze", ("a",)),
        ("broadcast_to", ("array",)), ("broadcast_arrays", ("*",)),
        ("concatenate", ("arrays",)), ("stack", ("arrays",)), ("unstack", ("x",)),
        ("hstack", ("tup",)), ("vstack", ("tup",)), ("dstack", ("tup",)),
        ("column_stack", ("tup",)), ("append", ("arr", "values")), ("split", ("ary",)),
        ("array_split", ("ary",)), ("tile", ("A",)), ("repeat", ("a",)), ("flip", ("m",)),
        ("fliplr", ("m",)), ("flipud", ("m",)), ("roll", ("a",)), ("rot90", ("m",)),
        ("take", ("a",)), ("take_along_axis", ("arr",)), ("atleast_1d", ("*",)),
        ("atleast_2d", ("*",)), ("atleast_3d", ("*",)), ("shape", ("a",)),
        ("size", ("a",)), ("ndim", ("a",))]:
    globals()[_name] = _key_aware(*_elements)(globals()[_name])
del _name, _elements
