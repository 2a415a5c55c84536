"""``jaxlite.lax.linalg`` (``jax.lax.linalg``): matrix decompositions as primitives.

Layer: lax (thin wrappers binding ``primitives.linalg``).  Every function works on stacks
of matrices (the last two axes; leading axes are batch axes), accepts floating and complex
operands only (TypeError otherwise), and follows JAX on singular or indefinite matrices:
the result holds inf/nan, nothing raises.
"""
from __future__ import annotations

import enum as _enum

from ..primitives import linalg as _l
from ..primitives.linalg import (cholesky_p, cholesky_update_p, eig_p, eigh_p,  # noqa: F401
                                 hessenberg_p, householder_product_p, lu_p,
                                 lu_pivots_to_permutation_p, ormqr_p, qr_p, schur_p, svd_p,
                                 symmetric_product_p, triangular_solve_p, tridiagonal_p,
                                 tridiagonal_solve_p)


class EigImplementation(_enum.Enum):
    """Which kernel ``eig`` uses (``jax.lax.linalg.EigImplementation``); on the CPU only
    LAPACK exists, the others name GPU libraries."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(_enum.Enum):
    """Which algorithm ``eigh`` uses (``jax.lax.linalg.EighImplementation``); the CPU
    always runs LAPACK's (the QR-based family)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(_enum.Enum):
    """Which algorithm ``svd`` uses (``jax.lax.linalg.SvdAlgorithm``); the CPU always runs
    LAPACK's divide and conquer."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _as_array(x):
    from ..numpy._util import ensure_array
    return ensure_array(x)


def _symmetrize(x, name):
    """``(x + x^H) / 2``: only one triangle of a Hermitian operand is trusted by LAPACK,
    so JAX averages the two first; a non-square operand fails here, as in JAX, with the
    TypeError of the addition."""
    from .. import lax
    x = _as_array(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise TypeError(f"{name}: add got incompatible shapes for broadcasting: {x.shape}, "
                        f"{x.shape[:-2] + x.shape[-2:][::-1]} (the operand must be a stack "
                        f"of square matrices)")
    xh = _l._H(x)
    return lax.div(lax.add(x, xh), lax.scalar_as(2, x.dtype, False))


def cholesky(x, *, symmetrize_input: bool = True):
    """Cholesky factor ``L`` (lower triangular, ``x == L @ L^H``) of each Hermitian
    positive-definite matrix in ``x`` (``jax.lax.linalg.cholesky``); shape and dtype of
    ``x``.  ``symmetrize_input`` averages ``x`` with its conjugate transpose first.  A matrix
    that is not positive definite gives NaN in its lower triangle (no error), as in JAX.
    Raises TypeError for non-float input or (when symmetrizing) non-square matrices."""
    x = _symmetrize(x, "cholesky") if symmetrize_input else _as_array(x)
    return cholesky_p.bind(x)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigenvalues and (optionally) left/right eigenvectors of general square matrices
    (``jax.lax.linalg.eig``): ``[w, vl, vr]`` with the vectors left out when not asked
    for; complex results (complex64 for float32 input), unit-norm eigenvector columns.
    Eigenvalues are differentiable; eigenvectors only with ``enable_eigvec_derivs=True``
    (the derivative assumes distinct eigenvalues and follows LAPACK's normalisation),
    otherwise their derivative raises NotImplementedError, as in JAX.  ``implementation``
    other than ``EigImplementation.LAPACK`` (or ``use_magma=True``) names a GPU library:
    ValueError, as JAX on the CPU."""
    if use_magma or implementation not in (None, EigImplementation.LAPACK):
        raise ValueError(f"eig: only the lapack implementation is supported on CPU (got "
                         f"implementation={implementation!r}, use_magma={use_magma!r}).")
    return eig_p.bind(_as_array(x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs))


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
    """Eigendecomposition of Hermitian matrices (``jax.lax.linalg.eigh``): ``(v, w)`` with
    ``x @ v == v * w``, ``w`` real and ascending (shape ``(..., n)``), ``v`` of ``x``'s dtype.
    ``lower`` picks the triangle read when ``symmetrize_input`` is False;
    ``subset_by_index`` may only name all eigenpairs, ``(0, n)``: like JAX on the CPU, a
    partial decomposition raises NotImplementedError, as does ``implementation`` JACOBI
    or QDWH (JAX has them on GPU/TPU only).  Raises TypeError for non-float or
    non-square input."""
    if implementation not in (None, EighImplementation.QR):
        raise NotImplementedError(f"eigh: implementation={implementation!r} is not "
                                  f"supported on CPU")
    x = _symmetrize(x, "eigh") if symmetrize_input else _as_array(x)
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
        n = x.shape[-1]
        if not 0 <= subset_by_index[0] <= subset_by_index[1] <= n:
            raise ValueError(f"eigh: subset_by_index {subset_by_index} out of range for "
                             f"matrices of shape {x.shape[-2:]}")
        if subset_by_index == (0, n):
            subset_by_index = None
        else:
            # JAX's CPU kernel has no partial eigendecomposition either
            raise NotImplementedError("eigh: subset_by_index not supported on CPU and GPU "
                                      f"(got {subset_by_index} for matrices of shape "
                                      f"{x.shape[-2:]})")
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset_by_index)
    return v, w


def lu(x):
    """LU decomposition with partial pivoting (``jax.lax.linalg.lu``) of the ``(m, n)``
    matrices in ``x``: ``[lu, pivots, permutation]`` where ``lu`` holds unit-lower ``L``
    (below the diagonal) and ``U``, ``pivots`` (int32, ``(..., min(m, n))``) are LAPACK's
    row swaps (0-based) and ``permutation`` (int32, ``(..., m)``) is the row order with
    ``x[..., permutation, :] == L @ U``.  A singular matrix factors without error."""
    lu_, piv, perm = lu_p.bind(_as_array(x))
    return [lu_, piv, perm]


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The row permutation (int32, ``(..., permutation_size)``) that LAPACK-style
    ``pivots`` (row ``i`` swapped with row ``pivots[i]``, in order) describe
    (``jax.lax.linalg.lu_pivots_to_permutation``).  Raises TypeError for non-integer pivots
    and ValueError when there are more pivots than ``permutation_size``."""
    return lu_pivots_to_permutation_p.bind(_as_array(pivots),
                                           permutation_size=int(permutation_size))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition (``jax.lax.linalg.qr``): ``(q, r)`` with ``x == q @ r``, ``q``
    ``(..., m, m)`` and ``r`` ``(..., m, n)`` when ``full_matrices``, else ``(..., m, k)``
    and ``(..., k, n)``, ``k = min(m, n)``.  With ``pivoting`` also the column permutation
    ``p`` (int32) with ``x[..., p] == q @ r``.  Raises TypeError for non-float input or
    rank < 2."""
    x = _as_array(x)
    if x.ndim < 2:
        raise TypeError(f"Input 0 to qr must have rank at least 2, but got shape={x.shape}")
    return tuple(qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices)))


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition of the matrices in the last two axes of ``x``
    (``jax.lax.linalg.svd``).

    Returns ``s`` (shape ``(..., min(m, n))``, real, descending) when ``compute_uv`` is
    False, else ``(u, s, vh)`` with ``x == u @ diag(s) @ vh`` (``u``: ``(..., m, m)`` or
    ``(..., m, k)`` when not ``full_matrices``).  ``subset_by_index`` may only name all
    singular values (a partial SVD raises NotImplementedError, as JAX on the CPU).  Raises
    TypeError for non-float input and ValueError for rank < 2; ``algorithm`` JACOBI or
    POLAR raises NotImplementedError (as JAX on the CPU; the others run LAPACK's SVD).
    """
    if algorithm in (SvdAlgorithm.JACOBI, SvdAlgorithm.POLAR):
        raise NotImplementedError(f"svd: algorithm={algorithm!r}: the SVD Jacobi and Polar "
                                  f"algorithms are not implemented on CPU.")
    x = _as_array(x)
    if subset_by_index is not None:
        lo, hi = (int(i) for i in subset_by_index)
        whole = x.ndim >= 2 and (lo, hi) == (0, min(x.shape[-2:]))
        if full_matrices and not whole:
            raise ValueError("full_matrices and subset_by_index cannot both be set")
        if not whole:
            # as JAX: the CPU kernels have no partial SVD
            raise NotImplementedError(f"subset_by_index not implemented for CPU and GPU "
                                      f"(got {subset_by_index} for shape {x.shape})")
    out = _l.svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return out[0] if not compute_uv else tuple(out)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solves ``op(a) @ x == b`` (``left_side``) or ``x @ op(a) == b`` for ``x``, with ``a``
    triangular (``jax.lax.linalg.triangular_solve``); ``op`` transposes and/or conjugates
    per ``transpose_a`` / ``conjugate_a``; only the ``lower`` (or upper) triangle of ``a``
    is read, and its diagonal is taken as ones when ``unit_diagonal``.  ``b`` may have one
    axis fewer than ``a`` (a single right-hand side).  A zero on the diagonal gives inf/nan.
    Raises TypeError for non-float or mixed dtypes, ValueError for incompatible shapes."""
    a, b = _as_array(a), _as_array(b)
    singleton = b.ndim == a.ndim - 1
    if singleton:
        from .. import lax
        b = lax.expand_dims(b, (-1,) if left_side else (-2,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a),
                                  conjugate_a=bool(conjugate_a),
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        from .. import lax
        out = lax.squeeze(out, (out.ndim - 1,) if left_side else (out.ndim - 2,))
    return out


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solves the tridiagonal systems ``A x = b`` (``jax.lax.linalg.tridiagonal_solve``):
    ``dl``, ``d``, ``du`` (each ``(..., m)``) are A's sub-, main and super-diagonals
    (``dl[..., 0]`` and ``du[..., -1]`` are ignored), ``b`` is ``(..., m, n)``.  Raises
    TypeError for rank-1 ``b``, mixed dtypes or mismatched shapes."""
    dl, d, du, b = (_as_array(v) for v in (dl, d, du, b))
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))




def _geqrf(x):
    """LAPACK's QR factorisation in packed form: ``(a, taus)``, ``R`` on and above the
    diagonal of ``a`` and the Householder reflectors below it (what
    ``jnp.linalg.qr(mode='raw')`` returns, transposed)."""
    a, taus = _l.geqrf_p.bind(_as_array(x))
    return a, taus


def householder_product(a, taus):
    """The matrix ``Q`` (shape of ``a``, ``(..., m, n)``, m >= n) made from the first
    ``k`` Householder reflectors stored below the diagonal of ``a`` with scale factors
    ``taus`` (``(..., k)``), as LAPACK's orgqr/ungqr (``jax.lax.linalg.householder_product``).
    Not differentiable (as in JAX).  Raises ValueError for mismatched shapes or dtypes."""
    return householder_product_p.bind(_as_array(a), _as_array(taus))


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q @ c`` (``left``) or ``c @ Q``, with ``Q`` (or its conjugate transpose when
    ``transpose``) given by Householder reflectors as in ``householder_product``, without
    forming ``Q`` (``jax.lax.linalg.ormqr``; LAPACK's ormqr/unmqr).  Shape of ``c``."""
    return ormqr_p.bind(_as_array(a), _as_array(taus), _as_array(c), left=bool(left),
                        transpose=bool(transpose))


def hessenberg(a):
    """Reduction to upper Hessenberg form, ``a = Q H Q^H`` (``jax.lax.linalg.hessenberg``):
    ``[a_out, taus]`` in LAPACK's packed form, ``H`` on and above the first subdiagonal of
    ``a_out`` and ``Q``'s reflectors below it, ``taus`` of shape ``(..., n - 1)``.  Not
    differentiable.  Raises ValueError for non-square input."""
    h, taus = hessenberg_p.bind(_as_array(a))
    return [h, taus]


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur decomposition ``x = Z T Z^H`` (``jax.lax.linalg.schur``): ``(T, Z)``; ``T`` is
    quasi upper triangular (2x2 blocks for complex pairs) for real input, upper triangular
    for complex input; ``[T]`` alone when not ``compute_schur_vectors`` (lists, as JAX).
    Sorting is not implemented (as JAX's CPU kernel: NotImplementedError).  Raises
    ValueError for non-square input."""
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                                  "implemented.")
    out = schur_p.bind(_as_array(x), compute_schur_vectors=bool(compute_schur_vectors),
                       sort_eig_vals=False, select_callable=None)
    return list(out)


def tridiagonal(a, *, lower: bool = True):
    """Reduction of Hermitian matrices to real symmetric tridiagonal form
    (``jax.lax.linalg.tridiagonal``; LAPACK's sytrd/hetrd): ``[arr, d, e, taus]`` with the
    diagonal ``d`` (``(..., n)``, real), off-diagonal ``e`` and reflector factors ``taus``
    (``(..., n - 1)``) and the reflectors packed into ``arr``'s ``lower`` (or upper)
    triangle.  Not differentiable.  Raises ValueError for non-square input."""
    arr, d, e, taus = tridiagonal_p.bind(_as_array(a), lower=bool(lower))
    return [arr, d, e, taus]


def cholesky_update(r_matrix, w_vector):
    """Rank-one update of an upper-triangular Cholesky factor
    (``jax.lax.linalg.cholesky_update``): ``R'`` with ``R'^T R' = R^T R + w w^T``, same
    shape and dtype as ``r_matrix`` (real floating).  Not differentiable (as in JAX)."""
    return cholesky_update_p.bind(_as_array(r_matrix), _as_array(w_vector))


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
    """``alpha * a @ a^T + beta * c`` (``jax.lax.linalg.symmetric_product``), for stacks
    of ``(m, k)`` matrices ``a`` and ``(m, m)`` matrices ``c``.  With
    ``symmetrize_output`` only the lower triangle is computed and mirrored into the upper
    one (as BLAS's syrk leaves it).  Not differentiable (as in JAX).  Raises TypeError
    for non-real-floating or mixed dtypes and ValueError for mismatched shapes."""
    return symmetric_product_p.bind(_as_array(a_matrix), _as_array(c_matrix),
                                    alpha=float(alpha), beta=float(beta),
                                    symmetrize_output=bool(symmetrize_output))


def _qdwh_coefficients(eps, max_iterations):
    """The dynamically weighted Halley coefficients (a, b, c) of each iteration, from the
    lower bound ``l`` on the smallest singular value of the scaled matrix (starting at
    eps), until ``l`` reaches 1 within tolerance (Nakatsukasa, Bai and Gygi, 2010)."""
    lo, tol_l, steps = eps, 5.0 * eps, []
    while lo + tol_l < 1 and len(steps) < max_iterations:
        l2 = lo * lo
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lo = lo * (a + b * l2) / (1 + c * l2)
        steps.append((a, b, c))
    return steps


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape=None):
    """Polar decomposition ``x = u @ h`` by the QR-based dynamically weighted Halley
    iteration (``jax.lax.linalg.qdwh``), for one ``(m, n)`` matrix with m >= n.

    Returns ``(u, h, num_iters, is_converged)``: ``u`` with orthonormal columns, ``h``
    Hermitian positive semi-definite (``(n, n)``), the number of iterations run (int32)
    and whether the last one moved ``u`` by less than ``cbrt(5 eps)`` (bool).  The early
    iterations, whose weights make the Cholesky form unstable, use the QR form; the rest
    the Cholesky form.  ``max_iterations`` defaults to 10.  Raises ValueError for m < n;
    ``dynamic_shape`` (masking) is not supported (NotImplementedError).
    """
    from .. import lax
    from .. import numpy as jnp
    if dynamic_shape is not None:
        raise NotImplementedError("qdwh: dynamic_shape is not supported in jaxlite")
    x = _as_array(x)
    if x.ndim != 2:
        raise ValueError(f"qdwh takes one matrix of shape (M, N), got shape {x.shape}")
    m, n = x.shape
    if m < n:
        raise ValueError(f"The input matrix of shape M x N must have M >= N; got shape "
                         f"{x.shape}.")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    from ..numpy._util import promote_dtypes_inexact
    (x,) = promote_dtypes_inexact(x)
    dt = x.dtype
    if eps is None:
        eps = float(jnp.finfo(dt).eps)
    tol_norm = (5.0 * eps) ** (1 / 3)
    eye = jnp.eye(n, dtype=dt)

    def herm(v):
        return jnp.conj(v.T) if v.dtype.kind == "c" else v.T

    def qr_step(u, a, b, c):
        sqrt_c = c ** 0.5
        q, _ = qr(jnp.concatenate([u * sqrt_c, eye], axis=0), full_matrices=False)
        return u * (b / c) + (q[:m] @ herm(q[m:])) * ((a - b / c) / sqrt_c)

    def chol_step(u, a, b, c):
        z = (herm(u) @ u) * c + eye
        w = cholesky(z, symmetrize_input=False)
        y = jnp.conj(triangular_solve(w, u.T, left_side=True, lower=True, conjugate_a=True))
        y = herm(triangular_solve(w, y, left_side=True, lower=True, transpose_a=True,
                                  conjugate_a=True))
        return u * (b / c) + y * (a - b / c)

    norm1 = jnp.linalg.norm(x, ord=1)
    norminf = jnp.linalg.norm(x, ord=jnp.inf)
    scale = jnp.where(norm1 == 0, 1, lax.rsqrt(norm1) * lax.rsqrt(norminf))
    u = x * scale.astype(dt)
    steps = _qdwh_coefficients(eps, max_iterations)
    moving = jnp.asarray(True)
    for a, b, c in steps:
        if c > 100:
            u = qr_step(u, a, b, c)
        else:
            prev, u = u, chol_step(u, a, b, c)
            moving = jnp.linalg.norm(u - prev) > tol_norm

    def cond(state):
        k, _, mov = state
        return jnp.logical_and(mov, k < max_iterations)

    def body(state):
        k, v, _ = state
        new = chol_step(v, 3.0, 1.0, 3.0)
        return k + 1, new, jnp.linalg.norm(new - v) > tol_norm

    num_iters, u, moving = lax.while_loop(cond, body,
                                          (len(steps), u, moving))
    u = u * 1.5 - (u @ (herm(u) @ u)) * 0.5
    h = herm(u) @ x
    h = (h + herm(h)) / 2
    return u, h, num_iters, jnp.logical_not(moving)
