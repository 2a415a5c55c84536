"""``jaxlite.numpy.linalg`` (``jax.numpy.linalg``): norms, decompositions (svd, qr,
cholesky, eigh, eig), solvers and inverses (solve, inv, lstsq, pinv, tensorsolve,
tensorinv), determinants, rank and condition numbers, and the Array-API product
functions.

Layer: numpy.  Factorisations are ``jaxlite.lax.linalg`` primitives (LAPACK kernels);
everything else is composed from them in lax, so derivatives, vmap and jit follow.  Where
JAX gives a function its own derivative rule (det, slogdet, pinv, solve) so does this
module, with the same formula.  Integer input is promoted to the default float.
"""
from __future__ import annotations

import collections
import operator

import numpy as np

from .. import lax
from ..lax import linalg as _lax_linalg
from . import _linalg, _reductions
from ._named_jit import named_jit
from ._shape import matrix_transpose  # noqa: F401  (re-exported, as jax.numpy.linalg)
from ._util import (canonicalize_axis, check_arraylike, ensure_array, promote_dtypes,
                    promote_dtypes_inexact, public_names)

_SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
_EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
_EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
_QRResult = collections.namedtuple("QRResult", ["Q", "R"])
_SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


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
            # JAX's form: max(0, max(sv)); at the zero matrix that tie halves the derivative
            out = _reductions.max(sv, axis=-1)
            out = lax.max(lax.scalar_as(0.0, out.dtype, False), out)
        else:
            out = _reductions.min(sv, axis=-1)
        if keepdims:
            shape = list(x.shape)
            shape[row] = shape[col] = 1
            out = lax.reshape(out, shape)
        return out
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


@named_jit("norm", static_argnames=("ord", "axis", "keepdims"))
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
    converted to the default float.  With ``hermitian`` the decomposition comes from
    ``eigh`` (as JAX): ``S`` the eigenvalues' magnitudes, descending, ``U`` the matching
    eigenvectors and ``Vh`` their conjugate transpose times the eigenvalues' signs.
    Raises ValueError for rank < 2."""
    a = _inexact("svd", a)
    if hermitian:
        return _svd_hermitian(a, compute_uv, subset_by_index)
    out = _lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                          subset_by_index=subset_by_index)
    return _SVDResult(*out) if compute_uv else out


def _svd_hermitian(a, compute_uv, subset_by_index):
    vecs, vals = _lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = _abs(vals)
    last = s.ndim - 1
    if not compute_uv:
        return lax.rev(lax.sort(s, dimension=-1), (last,))
    # a stable ascending sort by magnitude, then reversed: ties keep JAX's order
    idx = lax.broadcasted_iota(np.int32, s.shape, last)
    s, idx, sign = lax.sort((s, idx, lax.sign(vals)), dimension=-1, num_keys=1)
    s, idx, sign = (lax.rev(v, (last,)) for v in (s, idx, sign))
    from ._shape import take_along_axis
    u = take_along_axis(vecs, lax.expand_dims(idx, (idx.ndim - 1,)), axis=-1)
    vh = _H(lax.mul(u, lax.convert_element_type(lax.expand_dims(sign, (sign.ndim - 1,)),
                                                u.dtype)))
    return _SVDResult(u, s, vh)


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
    squaring (``jax.numpy.linalg.matrix_power``); ``n == 0`` gives identity matrices and a
    negative ``n`` powers of the inverse.  Raises TypeError for a non-integer ``n`` and for
    input that is not a stack of square matrices (as JAX)."""
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
        a = inv(a)
        n = -n
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


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
    """``jax.numpy.linalg.tensordot``: same as ``jaxlite.numpy.tensordot``."""
    return _linalg.tensordot(x1, x2, axes, precision=precision,
                             preferred_element_type=preferred_element_type,
                             out_sharding=out_sharding)


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


# ---- decompositions, solvers, determinants ----------------------------------------------

def _jnp():
    from .. import numpy as jnp
    return jnp


def _full(shape, value, dtype):
    return _jnp().full(shape, value, dtype)


def _mT(x):
    return lax.transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _H(x):
    return lax.conj(_mT(x)) if x.dtype.kind == "c" else _mT(x)


def _mm(a, b):
    return _linalg.matmul(a, b)


def _eye_like(a):
    """Identity matrices with ``a``'s shape and dtype."""
    it = np.int32
    eye = lax.eq(lax.broadcasted_iota(it, a.shape, a.ndim - 2),
                 lax.broadcasted_iota(it, a.shape, a.ndim - 1))
    return lax.convert_element_type(eye, a.dtype)


def _trace(x):
    return _reductions.sum(diagonal(x), axis=-1)


def _permute_rows(b, perm):
    """``b[..., perm, :]`` for permutations stacked like ``b``'s matrices."""
    idx = lax.broadcast_in_dim(perm, b.shape, tuple(range(perm.ndim)))
    return _jnp().take_along_axis(b, idx, axis=-2)


def _lu_solve(lu, perm, b):
    """``x`` with ``A x = b`` from ``A``'s LU factors (``A[perm] = L U``); ``b`` is a stack of
    matrices with the factors' batch shape."""
    y = _lax_linalg.triangular_solve(lu, _permute_rows(b, perm), left_side=True, lower=True,
                                     unit_diagonal=True)
    return _lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def _solve_matrices(a, b):
    """``solve`` of equal-batch stacks ``a`` (..., m, m) and ``b`` (..., m, k)."""
    lu, _, perm = _lax_linalg.lu(lax.stop_gradient(a))
    return _solve_core(a, b, lu, perm)


from ..transforms.autodiff import custom_jvp as _custom_jvp  # noqa: E402


@_custom_jvp
def _solve_core(a, b, lu, perm):
    return _lu_solve(lu, perm, b)


@_solve_core.defjvp
def _solve_core_jvp(primals, tangents):
    # x = A^-1 b reuses A's factors for its derivative: dx = A^-1 (db - dA x)
    a, b, lu, perm = primals
    da, db = tangents[0], tangents[1]
    x = _solve_core(a, b, lu, perm)
    rhs = lax.sub(db, _mm(da, x))
    return x, _lu_solve(lu, perm, rhs)


def solve(a, b):
    """Solves ``a @ x == b`` (``jax.numpy.linalg.solve``) through ``a``'s LU factors.

    ``a``: ``(..., m, m)``; ``b``: ``(m,)`` (one right-hand side, broadcast over ``a``'s
    batch) or ``(..., m, n)`` (batch axes broadcast with ``a``'s).  Result: the promoted
    inexact dtype, shape ``broadcast(batch) + (m,)`` or ``+ (m, n)``.  A singular ``a``
    gives inf/nan entries (no error), as in JAX.

    Raises ValueError when ``a`` has rank < 2, sizes do not match, or ``b`` has the
    ambiguous shape ``a.shape[:-1]`` that JAX 0.5 stopped reading as a batched vector.
    """
    check_arraylike("solve", a, b)
    a, b = promote_dtypes_inexact(ensure_array(a), ensure_array(b))
    a, b = ensure_array(a), ensure_array(b)
    if a.ndim < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got "
                         f"a.shape={a.shape}")
    if (b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]
            and a.shape[-1] != b.shape[-2]):
        raise ValueError(f"Invalid shapes for solve: {a.shape}, {b.shape}. Since JAX v0.5.0 "
                         f"a b of shape a.shape[:-1] is not a batch of vectors; use "
                         f"solve(a, b[..., None]).squeeze(-1) for that.")
    m = a.shape[-1]
    vector = b.ndim == 1
    if a.shape[-2] != m or b.ndim == 0 or (b.shape[0] if vector else b.shape[-2]) != m:
        raise ValueError(f"solve: a must have shape [..., m, m] and b [m] or [..., m, n] "
                         f"with the same m; got a.shape={a.shape}, b.shape={b.shape}")
    if vector:
        b = lax.broadcast_in_dim(b, a.shape[:-2] + (m, 1), (a.ndim - 2,))
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise ValueError(f"solve: batch shapes {a.shape[:-2]} and {b.shape[:-2]} of "
                         f"a.shape={a.shape} and b.shape={b.shape} do not broadcast") from None
    from ._util import broadcast_to_shape
    a = broadcast_to_shape(a, batch + a.shape[-2:])
    b = broadcast_to_shape(b, batch + b.shape[-2:])
    x = _solve_matrices(a, b)
    return lax.squeeze(x, (x.ndim - 1,)) if vector else x


def inv(a):
    """Inverse of each square matrix in ``a`` (``jax.numpy.linalg.inv``), through
    ``solve(a, I)``; a singular matrix gives inf/nan entries.  Raises ValueError for input
    that is not ``(..., n, n)``."""
    check_arraylike("inv", a)
    a = ensure_array(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {a.shape}.")
    (a,) = promote_dtypes_inexact(a)
    a = ensure_array(a)
    return _solve_matrices(a, _eye_like(a))


# determinants -------------------------------------------------------------------------------

def _swap_sign(swaps, dtype):
    """(-1) ** swaps in ``dtype``: the determinant's sign from a count of row swaps."""
    odd = lax.convert_element_type(lax.rem(lax.convert_element_type(swaps, np.int32),
                                           _full((), 2, np.int32)), dtype)
    return lax.sub(_full((), 1, dtype), lax.add(odd, odd))


def _slogdet_lu_values(a):
    lu, piv, _ = _lax_linalg.lu(a)
    jnp = _jnp()
    diag = diagonal(lu)
    is_zero = _reductions.any(lax.eq(diag, _scalar(0, diag)), axis=-1)
    swaps = _reductions.count_nonzero(
        lax.ne(piv, lax.broadcasted_iota(np.int32, piv.shape, piv.ndim - 1)), axis=-1)
    if a.dtype.kind == "c":
        unit = lax.div(diag, lax.convert_element_type(_abs(diag), diag.dtype))
        sign = _reductions.prod(unit, axis=-1)
    else:
        sign = _full((), 1, a.dtype)
        swaps = lax.add(swaps, _reductions.count_nonzero(lax.lt(diag, _scalar(0, diag)),
                                                          axis=-1))
    sign = jnp.where(is_zero, _full((), 0, a.dtype), lax.mul(sign, _swap_sign(swaps, a.dtype)))
    logabs = _reductions.sum(lax.log(_abs(diag)), axis=-1)
    logabs = jnp.where(is_zero, _full((), -np.inf, logabs.dtype), logabs)
    return sign, logabs


def _slogdet_small_values(a):
    d = a[..., 0, 0] if a.shape[-1] == 1 else \
        lax.sub(lax.mul(a[..., 0, 0], a[..., 1, 1]), lax.mul(a[..., 0, 1], a[..., 1, 0]))
    jnp = _jnp()
    return jnp.sign(d), jnp.real(lax.log(_abs(d))) if d.dtype.kind == "c" else lax.log(_abs(d))


def _slogdet_qr_values(a):
    if a.dtype.kind == "c":
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    jnp = _jnp()
    n = a.shape[-1]
    h, taus = _lax_linalg._geqrf(a)
    diag = diagonal(h)
    logabs = _reductions.sum(lax.log(_abs(diag)), axis=-1)
    # each Householder reflection actually applied (tau != 0) has determinant -1
    reflections = _reductions.count_nonzero(lax.ne(taus[..., :n - 1], _scalar(0, taus)),
                                            axis=-1)
    sign = lax.mul(_reductions.prod(jnp.sign(diag), axis=-1), _swap_sign(reflections, a.dtype))
    return sign, logabs


def _slogdet_small_or_lu(a):
    if a.shape[-1] in (1, 2):
        return _slogdet_small_values(a)
    return _slogdet_lu_values(a)


def _with_logdet_jvp(values):
    """``values`` (a -> (sign, logabsdet)) with the derivative d log|det A| =
    Re tr(A^-1 dA); the sign of a real determinant has no derivative, a complex one turns
    with the imaginary part: d sign = i Im(tr(A^-1 dA)) sign."""
    f = _custom_jvp(values)

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        sign, logabs = f(a)
        # solved without solve's own rule: a custom rule applied to the tangent could not
        # be transposed in reverse mode
        lu, _, perm = _lax_linalg.lu(a)
        t = _trace(_lu_solve(lu, perm, da))
        if a.dtype.kind == "c":
            from ._ufuncs import real
            rt = real(t)
            return (sign, logabs), (lax.mul(lax.sub(t, lax.convert_element_type(rt, t.dtype)),
                                            sign), rt)
        return (sign, logabs), (lax.full_like(sign, 0), t)
    return f


_slogdet_by = {"lu": _with_logdet_jvp(_slogdet_small_or_lu),
               "qr": _with_logdet_jvp(_slogdet_qr_values)}


def slogdet(a, *, method=None):
    """Sign and natural log of the absolute determinant of each square matrix
    (``jax.numpy.linalg.slogdet``): ``SlogdetResult(sign, logabsdet)``, each of shape
    ``a.shape[:-2]``; ``sign`` has ``a``'s (promoted) dtype, ``logabsdet`` its real dtype.
    A singular matrix gives ``(0, -inf)`` (method 'lu').  ``method``: None or 'lu' (LU
    factors; 1x1 and 2x2 by formula) or 'qr' (Householder QR, real input only).  Raises
    ValueError for input that is not ``(..., n, n)`` or an unknown method,
    NotImplementedError for 'qr' on complex input."""
    a = _inexact("slogdet", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {a.shape}")
    method = "lu" if method is None else method
    if method not in _slogdet_by:
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         f"(`None`), and 'qr'.")
    return _SlogdetResult(*_slogdet_by[method](a))


def _det_formula(a):
    """Determinants of 2x2 and 3x3 matrices by their cofactor expansion (as JAX)."""
    def e(i, j):
        return a[..., i, j]
    if a.shape[-1] == 2:
        return lax.sub(lax.mul(e(0, 0), e(1, 1)), lax.mul(e(0, 1), e(1, 0)))
    terms = [((0, 0), (1, 1), (2, 2)), ((0, 1), (1, 2), (2, 0)), ((0, 2), (1, 0), (2, 1)),
             ((0, 2), (1, 1), (2, 0)), ((0, 0), (1, 2), (2, 1)), ((0, 1), (1, 0), (2, 2))]
    prods = [lax.mul(lax.mul(e(*p), e(*q)), e(*r)) for p, q, r in terms]
    return lax.sub(lax.sub(lax.sub(lax.add(lax.add(prods[0], prods[1]), prods[2]), prods[3]),
                           prods[4]), prods[5])


def _cofactor_solve(a, b):
    """``(det(a), adj(a) @ b)``, defined for singular ``a`` too: the last pivot of ``U`` is
    swapped for the product of the others' inverse so that a matrix of rank n-1 gets its
    (rank-one) adjugate, and any system that still meets a zero pivot (rank < n-1) gives
    zeros, as JAX's derivative of det does."""
    jnp = _jnp()
    lu, piv, perm = _lax_linalg.lu(a)
    n = a.shape[-1]
    diag = diagonal(lu)
    swaps = _reductions.count_nonzero(
        lax.ne(piv, lax.broadcasted_iota(np.int32, piv.shape, piv.ndim - 1)), axis=-1)
    sign = _swap_sign(swaps, a.dtype)
    partial = lax.mul(_reductions.cumprod(diag, axis=-1), sign[..., None])
    corner = lax.div(_scalar(1, partial), partial[..., n - 2])
    is_corner = lax.convert_element_type(_eye_like(lu), np.bool_) & lax.eq(
        lax.broadcasted_iota(np.int32, lu.shape, lu.ndim - 1), _full((), n - 1, np.int32))
    lu = jnp.where(is_corner, lax.broadcast_in_dim(corner, lu.shape, tuple(range(lu.ndim - 2))),
                   lu)
    ones = _full(a.shape[:-1] + (1,), 1, a.dtype)
    probe = _lax_linalg.triangular_solve(lu, ones, left_side=True, lower=False)
    bad = _reductions.any(jnp.isnan(probe) | jnp.isinf(probe), axis=(-2, -1))
    bad = lax.broadcast_in_dim(bad, b.shape, tuple(range(bad.ndim)))
    zeros = lax.full_like(b, 0)
    x = jnp.where(bad, zeros, b)
    x = _lax_linalg.triangular_solve(lu, _permute_rows(x, perm), left_side=True, lower=True,
                                     unit_diagonal=True)
    full = partial[..., n - 1]
    x = lax.concatenate([lax.mul(x[..., :n - 1, :], full[..., None, None]), x[..., n - 1:, :]],
                        x.ndim - 2)
    x = _lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return full, jnp.where(bad, zeros, x)


@_custom_jvp
def _det_lu(a):
    sign, logabs = _slogdet_lu_values(a)
    return lax.mul(sign, lax.convert_element_type(lax.exp(logabs), sign.dtype))


@_det_lu.defjvp
def _det_lu_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y, z = _cofactor_solve(a, da)
    return y, _trace(z)


def det(a):
    """Determinant of each square matrix in ``a`` (``jax.numpy.linalg.det``), shape
    ``a.shape[:-2]`` in the promoted inexact dtype.  2x2 and 3x3 matrices use the cofactor
    formula, larger ones the LU factors; the derivative is the adjugate, defined for
    singular matrices of rank n-1 (zero below that), as in JAX.  Raises ValueError for
    input that is not ``(..., n, n)``."""
    a = _inexact("det", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to _det() must have shape [..., n, n], got {a.shape}")
    if a.shape[-1] in (2, 3):
        return _det_formula(a)
    return _det_lu(a)


# decompositions -----------------------------------------------------------------------------

def cholesky(a, *, upper=False, symmetrize_input=True):
    """Cholesky factor of each Hermitian positive-definite matrix
    (``jax.numpy.linalg.cholesky``): lower triangular ``L`` with ``a == L @ L^H``, or its
    conjugate transpose when ``upper``.  A matrix that is not positive definite gives NaN
    (no error), as in JAX.  Raises TypeError for non-square input (from the
    symmetrisation, as JAX)."""
    a = _inexact("cholesky", a)
    L = _lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def _uplo(UPLO):
    if UPLO is None or UPLO == "L":
        return True
    if UPLO == "U":
        return False
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending, real dtype) and eigenvectors (columns, ``a``'s dtype) of
    Hermitian matrices (``jax.numpy.linalg.eigh``): ``EighResult(eigenvalues,
    eigenvectors)``.  ``UPLO`` ('L' or 'U') names the triangle read when not
    ``symmetrize_input``.  Raises ValueError for a bad UPLO, TypeError for non-square
    input."""
    lower = _uplo(UPLO)
    a = _inexact("eigh", a)
    v, w = _lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return _EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    """Eigenvalues of Hermitian matrices, ascending (``jax.numpy.linalg.eigvalsh``)."""
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors (unit-norm columns) of general square matrices
    (``jax.numpy.linalg.eig``): ``EigResult(eigenvalues, eigenvectors)``, always complex
    (complex64 for float32 input).  Not differentiable (as in JAX: eigenvector derivatives
    raise NotImplementedError).  Raises TypeError for input of rank < 2, ValueError for
    non-square input."""
    a = _inexact("eig", a)
    if a.ndim < 2:      # JAX: TypeError for a non-matrix, ValueError for a non-square one
        raise TypeError(f"eig: the input must have rank at least 2 (a stack of square "
                        f"matrices); got shape {a.shape}")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape {a.shape}.")
    w, v = _lax_linalg.eig(a, compute_left_eigenvectors=False)
    return _EigResult(w, v)


def eigvals(a):
    """Eigenvalues of general square matrices, complex (``jax.numpy.linalg.eigvals``);
    differentiable.  Raises TypeError for input of rank < 2, ValueError for non-square
    input."""
    a = _inexact("eigvals", a)
    if a.ndim < 2:      # JAX: TypeError for a non-matrix, ValueError for a non-square one
        raise TypeError(f"eigvals: the input must have rank at least 2 (a stack of square "
                        f"matrices); got shape {a.shape}")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape {a.shape}.")
    return _lax_linalg.eig(a, compute_left_eigenvectors=False,
                           compute_right_eigenvectors=False)[0]


def qr(a, mode="reduced"):
    """QR decomposition (``jax.numpy.linalg.qr``): ``QRResult(Q, R)`` with ``a == Q @ R``;
    ``mode`` 'reduced' (``Q``: ``(..., m, k)``, ``R``: ``(..., k, n)``, ``k = min(m, n)``),
    'complete' (``Q`` square), 'r' (``R`` alone) or 'raw' (LAPACK's packed reflectors,
    transposed, and their scale factors).  Raises ValueError for another mode, TypeError
    for rank < 2."""
    a = _inexact("qr", a)
    if mode in ("reduced", "r", "full"):
        full = False
    elif mode == "complete":
        full = True
    elif mode == "raw":
        # LAPACK's packed form, transposed as NumPy returns it
        h, taus = _lax_linalg._geqrf(a)
        return _QRResult(_mT(h), taus)
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = _lax_linalg.qr(a, pivoting=False, full_matrices=full)
    return r if mode == "r" else _QRResult(q, r)


# least squares, pseudo-inverse, rank, condition ------------------------------------------------

def _finfo_eps(dt):
    from .. import dtypes
    return float(dtypes.finfo(dt).eps)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """Least-squares solution of ``a @ x ~= b`` through the SVD (``jax.numpy.linalg.lstsq``).

    ``a``: ``(m, n)``; ``b``: ``(m,)`` or ``(m, k)``.  Returns ``(x, resid, rank, s)``: the
    solution ``(n,)`` / ``(n, k)``, the squared residual norms ``(k,)`` (``(1,)`` for a
    vector ``b``; empty when ``numpy_resid`` and NumPy would leave them out), the rank
    (int32) and the singular values of ``a``.  Singular values below ``rcond * s[0]``
    (default: eps * max(m, n)) are dropped.  Raises ValueError when the leading sizes
    differ, TypeError for ``a`` not 2-D or ``b`` not 1-D/2-D.
    """
    check_arraylike("lstsq", a, b)
    a, b = promote_dtypes_inexact(ensure_array(a), ensure_array(b))
    a, b = ensure_array(a), ensure_array(b)
    jnp = _jnp()
    if a.ndim >= 1 and b.ndim >= 1 and a.shape[0] != b.shape[0]:
        raise ValueError(f"Leading dimensions of input arrays must match; got a.shape="
                         f"{a.shape} and b.shape={b.shape}")
    vector = b.ndim == 1
    if vector:
        b = lax.expand_dims(b, (1,))
    if a.ndim != 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if b.ndim != 2:
        raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or "
                        f"two-dimensional")
    m, n = a.shape
    if a.size == 0:
        s = _full((0,), 0, _real_dtype(a.dtype))
        rank = jnp.asarray(0, int)
        x = _full((n,) + b.shape[1:], 0, a.dtype)
    else:
        eps = _finfo_eps(a.dtype)
        if rcond is None:
            rcond = eps * max(n, m)
        else:
            rcond = jnp.where(jnp.asarray(rcond) < 0, eps, rcond)
        u, s, vh = _lax_linalg.svd(a, full_matrices=False)
        cut = lax.mul(lax.convert_element_type(jnp.asarray(rcond), s.dtype), s[0])
        keep = lax.gt(s, _scalar(0, s)) & lax.ge(s, cut)
        rank = _reductions.sum(keep)
        safe = lax.convert_element_type(jnp.where(keep, s, _scalar(1, s)), a.dtype)
        s_inv = jnp.where(keep, lax.div(_scalar(1, safe), safe), _scalar(0, safe))
        utb = _mm(_H(u), b)
        x = _mm(_H(vh), lax.mul(lax.expand_dims(s_inv, (1,)), utb))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = _full((0,), 0, _real_dtype(a.dtype))
    else:
        r = lax.sub(b, _mm(a, x))
        resid = lax.integer_pow(norm(r, axis=0), 2)
    if vector:
        x = lax.reshape(x, (x.size,))
    return x, resid, rank, s


def _real_dtype(dt):
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt == np.complex64 else \
        np.dtype(np.float64) if dt == np.complex128 else dt


def _pinv_values(a, rtol):
    m, n = a.shape[-2:]
    u, s, vh = _lax_linalg.svd(lax.conj(a) if a.dtype.kind == "c" else a,
                               full_matrices=False)
    jnp = _jnp()
    if rtol is None:
        rtol = 10.0 * max(m, n) * _finfo_eps(a.dtype)
    rtol = lax.convert_element_type(jnp.asarray(rtol), s.dtype)
    rtol = lax.expand_dims(rtol, tuple(range(rtol.ndim, s.ndim)))
    if rtol.ndim < s.ndim:
        rtol = lax.broadcast_in_dim(rtol, s.shape[:-1] + (1,), tuple(range(rtol.ndim)))
    cutoff = lax.mul(rtol, s[..., 0:1])
    s = jnp.where(lax.gt(s, cutoff), s, _scalar(np.inf, s))
    s = lax.convert_element_type(s, u.dtype)
    return _mm(_mT(vh), lax.div(_mT(u), lax.expand_dims(s, (s.ndim,))))


def _pinv_fn(rtol):
    @_custom_jvp
    def f(a):
        return _pinv_values(a, rtol)

    @f.defjvp
    def f_jvp(primals, tangents):
        # derivative of the Moore-Penrose inverse (Golub and Pereyra, 1973):
        # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
        (a,), (da,) = primals, tangents
        p = f(a)
        m, n = a.shape[-2:]
        dah = _H(da)
        if m >= n:
            s = _mm(_mm(p, _H(p)), dah)
            t = _mm(_mm(dah, _H(p)), p)
            out = lax.sub(lax.add(lax.neg(_mm(_mm(p, da), p)), s), _mm(_mm(s, a), p))
            out = lax.sub(lax.add(out, t), _mm(_mm(p, a), t))
        else:
            s = _mm(p, _mm(_H(p), dah))
            t = _mm(dah, _mm(_H(p), p))
            out = lax.sub(lax.add(lax.neg(_mm(p, _mm(da, p))), s), _mm(s, _mm(a, p)))
            out = lax.sub(lax.add(out, t), _mm(p, _mm(a, t)))
        return p, out
    return f


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """Moore-Penrose pseudo-inverse through the SVD (``jax.numpy.linalg.pinv``): shape
    ``(..., n, m)`` for ``a`` of ``(..., m, n)``; singular values at most ``rtol`` times the
    largest (default ``10 * max(m, n) * eps``) count as zero.  Its derivative is the
    closed-form one (as JAX's).  ``rcond`` is the old name of ``rtol``.  Raises ValueError
    when both are given or ``a`` has rank < 2."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    a = _inexact("pinv", a)
    if a.ndim < 2:
        raise ValueError(f"pinv requires an array of rank >= 2, got shape {a.shape}")
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return _full(a.shape[:-2] + (n, m), 0, a.dtype)
    if hermitian:
        a = lax.div(lax.add(a, _H(a)), _scalar(2, a))
    if rtol is not None and not isinstance(rtol, (int, float)):
        rtol = lax.stop_gradient(ensure_array(rtol))
    return _pinv_fn(rtol)(a)


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
    """Rank of each matrix (``jax.numpy.linalg.matrix_rank``): the number of singular
    values above ``rtol`` (default: the largest singular value times ``max(m, n) * eps``),
    in the default integer dtype, shape ``M.shape[:-2]``; for 0-D/1-D input, 1 unless
    every entry is zero.  ``tol`` is the old name of ``rtol``.  With ``hermitian`` the
    singular values come from ``svd(..., hermitian=True)`` (the eigenvalues' magnitudes of
    the lower triangle, as JAX).  Raises ValueError when ``tol`` and ``rtol`` are both
    given."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    M = _inexact("matrix_rank", M)
    if M.ndim < 2:
        return lax.convert_element_type(_reductions.any(lax.ne(M, _scalar(0, M))), np.int32)
    if hermitian:
        S = svd(M, full_matrices=False, compute_uv=False, hermitian=True)
    else:
        S = _lax_linalg.svd(M, compute_uv=False)
    if rtol is None:
        rtol = lax.mul(_reductions.max(S, axis=-1),
                       _scalar(max(M.shape[-2:]) * _finfo_eps(S.dtype), S))
    rtol = ensure_array(rtol)
    rtol = lax.expand_dims(rtol, (rtol.ndim,))
    return _reductions.sum(lax.gt(S, lax.convert_element_type(rtol, S.dtype)), axis=-1)


def cond(x, p=None):
    """Condition number of each matrix (``jax.numpy.linalg.cond``): ``p`` None/2 (ratio of
    the extreme singular values), -2 (its inverse), or a matrix-norm order (1, -1, inf,
    -inf, 'fro', 'nuc': ``norm(x) * norm(inv(x))``, square input only).  A singular matrix
    gives inf (nan only where ``x`` has nan).  Raises ValueError for rank < 2, empty input,
    or a non-square matrix with a norm order."""
    check_arraylike("cond", x)
    arr = ensure_array(x)
    jnp = _jnp()
    if arr.ndim < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"arr.shape={arr.shape}")
    if arr.shape[-1] == 0 or arr.shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                         f"arr.shape={arr.shape}")
    if p is None or p == 2:
        s = svdvals(arr)
        return lax.div(s[..., 0], s[..., -1])
    if p == -2:
        s = svdvals(arr)
        r = lax.div(s[..., -1], s[..., 0])
    else:
        if arr.shape[-2] != arr.shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got "
                             f"arr.shape={arr.shape}")
        r = lax.mul(norm(arr, ord=p, axis=(-2, -1)), norm(inv(arr), ord=p, axis=(-2, -1)))
    nan_in = _reductions.any(jnp.isnan(arr), axis=(-2, -1))
    return jnp.where(jnp.isnan(r) & ~nan_in, _scalar(np.inf, r), r)


# tensor forms and the cross product ---------------------------------------------------------

def tensorinv(a, ind=2):
    """Inverse of ``a`` seen as a linear map from its last axes onto its first ``ind`` axes
    (``jax.numpy.linalg.tensorinv``): shape ``a.shape[ind:] + a.shape[:ind]``.  Raises
    ValueError for ``ind <= 0`` or when the two groups of axes differ in size."""
    check_arraylike("tensorinv", a)
    arr = ensure_array(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    first, rest = arr.shape[:ind], arr.shape[ind:]
    rows, cols = int(np.prod(first)), int(np.prod(rest))
    if rows != cols:
        raise ValueError(f"tensorinv is only possible when the product of the first `ind` "
                         f"dimensions equals that of the remaining dimensions. got "
                         f"arr.shape={arr.shape} with ind={ind}.")
    return lax.reshape(inv(lax.reshape(arr, (rows, cols))), rest + first)


def tensorsolve(a, b, axes=None):
    """Solves the tensor equation ``tensordot(a, x, x.ndim) == b`` for ``x``
    (``jax.numpy.linalg.tensorsolve``); ``axes`` of ``a`` are moved to the end first.
    Result shape: ``a.shape[b.ndim:]``.  Raises ValueError when ``a``'s leading shape is
    not ``b``'s or the sizes do not make a square system."""
    check_arraylike("tensorsolve", a, b)
    a_arr, b_arr = ensure_array(a), ensure_array(b)
    if axes is not None:
        a_arr = _jnp().moveaxis(a_arr, axes, len(axes) * (a_arr.ndim - 1,))
    out_shape = a_arr.shape[b_arr.ndim:]
    if a_arr.shape[:b_arr.ndim] != b_arr.shape:
        raise ValueError(f"After moving axes to end, leading shape of a must match shape of "
                         f"b. got a.shape={a_arr.shape}, b.shape={b_arr.shape}")
    if b_arr.size != int(np.prod(out_shape)):
        raise ValueError(f"Input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]); got a.shape={a_arr.shape}, "
                         f"b.ndim={b_arr.ndim}.")
    a2 = lax.reshape(a_arr, (b_arr.size, int(np.prod(out_shape))))
    return lax.reshape(solve(a2, lax.reshape(b_arr, (b_arr.size,))), out_shape)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors along ``axis`` (``jax.numpy.linalg.cross``, the Array-API
    form: other axes broadcast).  Raises ValueError when either size along ``axis`` is not
    3."""
    check_arraylike("cross", x1, x2)
    x1, x2 = promote_dtypes(ensure_array(x1), ensure_array(x2))
    x1, x2 = ensure_array(x1), ensure_array(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they have x1.shape[axis]={x1.shape[axis]} and "
                         f"x2.shape[axis]={x2.shape[axis]}")
    jnp = _jnp()
    a = jnp.moveaxis(x1, axis, -1)
    b = jnp.moveaxis(x2, axis, -1)

    def c(v, i):
        return v[..., i]
    parts = [lax.sub(_linalg._mul(c(a, 1), c(b, 2)), _linalg._mul(c(a, 2), c(b, 1))),
             lax.sub(_linalg._mul(c(a, 2), c(b, 0)), _linalg._mul(c(a, 0), c(b, 2))),
             lax.sub(_linalg._mul(c(a, 0), c(b, 1)), _linalg._mul(c(a, 1), c(b, 0)))]
    out = jnp.stack(parts, axis=-1)
    return jnp.moveaxis(out, -1, axis)


__all__ = public_names(globals())
