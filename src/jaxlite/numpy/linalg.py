"""``jaxlite.numpy.linalg`` (``jax.numpy.linalg``): norms, the singular value
decomposition, and the Array-API product functions.

Layer: numpy (compositions of ``jaxlite.lax``; the SVD is the ``svd`` primitive).
"""
from __future__ import annotations

import collections
import operator

import numpy as np

from .. import lax
from ..lax import linalg as _lax_linalg
from . import _linalg, _reductions
from ._shape import matrix_transpose  # noqa: F401  (re-exported, as jax.numpy.linalg)
from ._util import (canonicalize_axis, check_arraylike, ensure_array, promote_dtypes_inexact,
                    public_names)

_SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])


def _inexact(name, x):
    check_arraylike(name, x)
    (x,) = promote_dtypes_inexact(ensure_array(x))
    return ensure_array(x)


def _abs(x):
    from ._ufuncs import absolute
    return absolute(x)


def _scalar(v, like):
    return lax.scalar_as(v, like.dtype, like.weak_type)


def _sum_sq(x, axes, keepdims):
    from ._ufuncs import real
    sq = real(lax.mul(x, lax.conj(x))) if x.dtype.kind == "c" else lax.mul(x, x)
    return lax.sqrt(_reductions.sum(sq, axis=axes, keepdims=keepdims))


def _vector_norm(x, axes, ord, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    if ord is None or ord == 2:
        return _sum_sq(x, axes, keepdims)
    a = _abs(x)
    if ord == np.inf:
        return _reductions.max(a, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return _reductions.min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        nz = lax.ne(x, _scalar(0, x))
        return _reductions.sum(nz, axis=axes, keepdims=keepdims, dtype=a.dtype)
    if ord == 1:
        return _reductions.sum(a, axis=axes, keepdims=keepdims)
    p = _scalar(ord, a)
    s = _reductions.sum(lax.pow(a, p), axis=axes, keepdims=keepdims)
    return lax.pow(s, lax.div(_scalar(1, s), _scalar(ord, s)))


def _singular_values(x, row, col):
    """Singular values of the matrices in axes (row, col), shape (rest..., k)."""
    rest = [i for i in range(x.ndim) if i not in (row, col)]
    m = lax.transpose(x, rest + [row, col])
    return _lax_linalg.svd(m, compute_uv=False)


def _matrix_norm(x, axes, ord, keepdims):
    row, col = axes
    if row == col:
        raise ValueError(f"Duplicate axes given: axis={axes}.")
    if ord is None or ord == "fro":
        return _sum_sq(x, axes, keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        a = _abs(x)
        inner_ax, outer_ax = (row, col) if ord in (1, -1) else (col, row)
        s = _reductions.sum(a, axis=inner_ax, keepdims=True)
        pick = _reductions.max if ord in (1, np.inf) else _reductions.min
        return pick(s, axis=(row, col), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        sv = _singular_values(x, row, col)
        if ord == "nuc":
            out = _reductions.sum(sv, axis=-1)
        elif ord == 2:
            out = _reductions.max(sv, axis=-1)
        else:
            out = _reductions.min(sv, axis=-1)
        if keepdims:
            shape = list(x.shape)
            shape[row] = shape[col] = 1
            out = lax.reshape(out, shape)
        return out
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (``jax.numpy.linalg.norm``).

    ``axis``: None (the whole array: a 2-norm of the flattened array when ``ord`` is None;
    otherwise ``x`` must be 1-D or 2-D), an int (vector norm) or a pair (matrix norm).
    Vector ``ord``: None/2, 1, inf, -inf, 0 (count of nonzeros) or any p.  Matrix ``ord``:
    None/'fro', 1, -1, inf, -inf, 2, -2, 'nuc' (the last three through the SVD).
    Returns the real dtype of the inexact promotion of ``x``.

    Raises ValueError for an invalid ``ord``, more than two axes, duplicate axes, or
    ``axis=None`` with a given ``ord`` on an array of rank > 2.
    """
    x = _inexact("norm", x)
    if axis is None:
        if ord is None:
            return _sum_sq(x, None, keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"Improper number of dimensions to norm: got shape {x.shape} "
                             f"with ord={ord!r} and axis=None.")
        axes = tuple(range(x.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, x.ndim) for a in axis)
    else:
        axes = (canonicalize_axis(axis, x.ndim),)
    if len(axes) == 1:
        return _vector_norm(x, axes, ord, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, axes, ord, keepdims)
    raise ValueError(f"norm: axis={axis} names neither one axis (a vector norm) nor two "
                     f"axes (a matrix norm).")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Array-API vector norm (``jax.numpy.linalg.vector_norm``): over all elements when
    ``axis`` is None, else over the given axis or axes (treated as one vector)."""
    x = _inexact("vector_norm", x)
    if axis is None:
        out = _vector_norm(lax.reshape(x, (x.size,)), (0,), ord, False)
        return lax.reshape(out, (1,) * x.ndim) if keepdims else out
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(canonicalize_axis(a, x.ndim) for a in axes)
    return _vector_norm(x, axes, ord, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Array-API matrix norm over the last two axes (``jax.numpy.linalg.matrix_norm``)."""
    x = _inexact("matrix_norm", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm requires an array of rank >= 2, got shape {x.shape}")
    return _matrix_norm(x, (x.ndim - 2, x.ndim - 1), ord, keepdims)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """Singular value decomposition of the matrices in the last two axes
    (``jax.numpy.linalg.svd``): ``SVDResult(U, S, Vh)`` with ``a == U @ diag(S) @ Vh``, or
    just ``S`` (real, descending) when ``compute_uv`` is False.  Integer inputs are
    converted to the default float.  Raises ValueError for rank < 2."""
    a = _inexact("svd", a)
    out = _lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                          subset_by_index=subset_by_index)
    return _SVDResult(*out) if compute_uv else out


def svdvals(x, /):
    """Singular values of the matrices in the last two axes, descending
    (``jax.numpy.linalg.svdvals``)."""
    return svd(x, compute_uv=False)


def multi_dot(arrays, *, precision=None):
    """``arrays[0] @ arrays[1] @ ...`` in the cheapest order (``jax.numpy.linalg.multi_dot``).
    The first and last arrays may be 1-D (row / column vectors); the others must be 2-D.
    Raises ValueError for fewer than two arrays or wrong ranks, TypeError for mismatched
    sizes."""
    arrays = [ensure_array(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot requires at least two arrays, got {len(arrays)}")
    letters = "abcdefghijklmnopqrstuvwxyz"
    if len(arrays) + 1 > len(letters):
        return _chain_dot(arrays, precision)
    specs = []
    for i, a in enumerate(arrays):
        first, last = i == 0, i == len(arrays) - 1
        if a.ndim == 1 and (first or last):
            specs.append(letters[i + 1] if first else letters[i])
        elif a.ndim == 2:
            specs.append(letters[i] + letters[i + 1])
        else:
            raise ValueError(f"multi_dot: array {i} has shape {a.shape}; the first and last "
                             f"arrays must be 1-D or 2-D and the others 2-D")
    used = set("".join(specs))
    out = "".join(c for c in (letters[0], letters[len(arrays)]) if c in used
                  and sum(s.count(c) for s in specs) == 1)
    return _linalg.einsum(",".join(specs) + "->" + out, *arrays, optimize="optimal"
                          if len(arrays) <= 6 else "greedy", precision=precision)


def _chain_dot(arrays, precision):
    out = arrays[0]
    for a in arrays[1:]:
        out = _linalg.dot(out, a, precision=precision)
    return out


def matrix_power(a, n):
    """``a`` (a stack of square matrices) multiplied by itself ``n`` times, by repeated
    squaring (``jax.numpy.linalg.matrix_power``); ``n == 0`` gives identity matrices.
    Raises TypeError for a non-integer ``n`` and for input that is not a stack of square
    matrices (as JAX), NotImplementedError for negative ``n`` (which needs a matrix
    inverse)."""
    check_arraylike("matrix_power", a)
    a = ensure_array(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"exponent must be an integer, got {n!r}") from None
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(f"matrix_power requires a stack of square matrices, got shape "
                        f"{a.shape}")
    if n < 0:
        raise NotImplementedError("matrix_power with a negative exponent needs a matrix "
                                  "inverse, which jaxlite.numpy.linalg does not provide yet")
    if n == 0:
        it = np.int32
        eye = lax.eq(lax.broadcasted_iota(it, a.shape, a.ndim - 2),
                     lax.broadcasted_iota(it, a.shape, a.ndim - 1))
        return lax.convert_element_type(eye, a.dtype)
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else _linalg.matmul(result, base)
        n >>= 1
        if n:
            base = _linalg.matmul(base, base)
    return result


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """``jax.numpy.linalg.matmul``: same as ``jaxlite.numpy.matmul``."""
    return _linalg.matmul(x1, x2, precision=precision,
                          preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``jax.numpy.linalg.vecdot``: same as ``jaxlite.numpy.vecdot``."""
    return _linalg.vecdot(x1, x2, axis=axis, precision=precision,
                          preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """``jax.numpy.linalg.tensordot``: same as ``jaxlite.numpy.tensordot``."""
    return _linalg.tensordot(x1, x2, axes, precision=precision,
                             preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays (``jax.numpy.linalg.outer``).  Raises ValueError for
    inputs of other ranks."""
    check_arraylike("outer", x1, x2)
    for x in (x1, x2):
        if np.ndim(x) != 1 and getattr(x, "ndim", 1) != 1:
            raise ValueError(f"linalg.outer takes two 1-D arrays; here x1.ndim={np.ndim(x1)} "
                             f"and x2.ndim={np.ndim(x2)}")
    return _linalg.outer(x1, x2)


def diagonal(x, /, *, offset=0):
    """Diagonals of the matrices in the last two axes (``jax.numpy.linalg.diagonal``):
    shape ``x.shape[:-2] + (k,)``."""
    from ._creation import diagonal as _diagonal
    return _diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    """Trace of the matrices in the last two axes (``jax.numpy.linalg.trace``)."""
    return _linalg.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


__all__ = public_names(globals())
