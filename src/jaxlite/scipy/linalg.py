"""``jaxlite.scipy.linalg`` (``jax.scipy.linalg``): SciPy's dense linear algebra on jaxlite
arrays -- factorisations (``cholesky``, ``cho_factor``, ``lu``, ``lu_factor``, ``qr``,
``schur``, ``hessenberg``, ``svd``, ``eigh``), solvers (``solve``, ``solve_triangular``,
``cho_solve``, ``lu_solve``), matrix functions (``expm``, ``sqrtm``, ``funm``, ``polar``),
``inv``/``det``, and the special matrices (``block_diag``, ``toeplitz``, ``hankel``,
``circulant``, ``companion``, ``hilbert``, ``pascal``, ``dft``, ...).

SciPy's ``overwrite_*`` and ``check_finite`` arguments are accepted and ignored, as in JAX
(arrays are immutable, and no input is checked for NaN). Matrices may carry leading batch
dimensions where JAX allows them.

Layer: scipy (compositions of ``jaxlite.lax.linalg`` and ``jaxlite.numpy``, so grad, vmap
and jit follow from the primitives' rules).
"""
from __future__ import annotations

import math
import operator
import sys

import numpy as np

from .. import _traceback
from .. import lax
from .. import numpy as jnp
from ..lax import linalg as lax_linalg
from ..numpy._util import check_arraylike, ensure_array, promote_dtypes_inexact


def _inexact(name, *xs):
    check_arraylike(name, *xs)
    return [ensure_array(x) for x in promote_dtypes_inexact(*xs)]


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix (or a batch of them); got shape "
                         f"{tuple(a.shape)}")


def _mT(a):
    return jnp.swapaxes(a, -1, -2)


def _H(a):
    return jnp.conj(_mT(a))


# ---- factorisations ---------------------------------------------------------------------

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a Hermitian positive-definite ``a``
    (``jax.scipy.linalg.cholesky``): upper triangular ``U`` with ``a = U^H U`` by default,
    lower ``L`` with ``a = L L^H`` when ``lower``. NaN where ``a`` is not positive
    definite (no error, as JAX)."""
    (x,) = _inexact("cholesky", a)
    _square("cholesky", x)
    L = lax_linalg.cholesky(x)
    return L if lower else _H(L)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve`` (``jax.scipy.linalg.cho_factor``): ``c`` holds the
    Cholesky factor in its ``lower`` (or upper) triangle; the other triangle is not
    meaningful (here: zero)."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """The solution of ``a x = b`` from ``cho_factor(a)`` (``jax.scipy.linalg.cho_solve``);
    ``b`` a vector or a matrix of right-hand sides. Raises ValueError when ``b``'s leading
    dimension does not match."""
    c, lower = c_and_lower
    c, bb = _inexact("cho_solve", c, b)
    if bb.shape[c.ndim - 2] != c.shape[-1] if bb.ndim >= c.ndim - 1 else True:
        raise ValueError(f"cho_solve: incompatible shapes {tuple(c.shape)} and "
                         f"{tuple(bb.shape)}")
    vec = bb.ndim == c.ndim - 1
    rhs = bb[..., None] if vec else bb
    L = jnp.tril(c) if lower else _H(jnp.triu(c))
    z = lax_linalg.triangular_solve(L, rhs, left_side=True, lower=True)
    x = lax_linalg.triangular_solve(L, z, left_side=True, lower=True, transpose_a=True,
                                    conjugate_a=True)
    return x[..., 0] if vec else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The pivoted LU decomposition ``a = P L U`` (``jax.scipy.linalg.lu``): ``(p, l, u)``
    with the permutation matrix ``p``, unit-lower ``l`` (``M x K``) and upper ``u``
    (``K x N``), ``K = min(M, N)``; ``(p @ l, u)`` with ``permute_l``."""
    (x,) = _inexact("lu", a)
    lu_, _, perm = lax_linalg.lu(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    l_ = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=x.dtype)
    u_ = jnp.triu(lu_[..., :k, :])
    # p is the inverse (transpose) of the row permutation applied to a
    p = jnp.swapaxes(jnp.eye(m, dtype=x.dtype)[perm], -1, -2)
    if permute_l:
        return p @ l_, u_
    return p, l_, u_


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)`` for ``lu_solve`` (``jax.scipy.linalg.lu_factor``): the packed L and U
    factors and LAPACK's pivot indices (int32)."""
    (x,) = _inexact("lu_factor", a)
    lu_, piv, _ = lax_linalg.lu(x)
    return lu_, piv


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """The solution of ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2)
    from ``lu_factor(a)`` (``jax.scipy.linalg.lu_solve``). Raises ValueError for another
    ``trans`` or mismatched shapes."""
    lu_, piv = lu_and_piv
    lu_, bb = _inexact("lu_solve", lu_, b)
    m = lu_.shape[-1]
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    if bb.ndim == 0 or bb.shape[0 if bb.ndim == 1 else -2] != m:
        raise ValueError(f"lu_solve: incompatible shapes {tuple(lu_.shape)} and "
                         f"{tuple(bb.shape)}")
    vec = bb.ndim == 1
    rhs = bb[:, None] if vec else bb
    perm = lax_linalg.lu_pivots_to_permutation(jnp.asarray(piv), m)
    if trans == 0:
        x = rhs[..., perm, :]
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True,
                                        unit_diagonal=True)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    else:
        conj = trans == 2
        x = lax_linalg.triangular_solve(lu_, rhs, left_side=True, lower=False,
                                        transpose_a=True, conjugate_a=conj)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True,
                                        unit_diagonal=True, transpose_a=True,
                                        conjugate_a=conj)
        inv = jnp.argsort(perm)
        x = x[..., inv, :]
    return x[:, 0] if vec else x


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """The QR decomposition (``jax.scipy.linalg.qr``): ``mode`` 'full' (``(q, r)``,
    square q), 'economic', 'r' (``(r,)``) or 'raw' (NotImplementedError); with
    ``pivoting`` also the column permutation. Raises ValueError for an unknown mode."""
    (x,) = _inexact("qr", a)
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    out = lax_linalg.qr(x, pivoting=pivoting, full_matrices=(mode == "full"))
    if pivoting:
        q, r, p = out
        return (r, p) if mode == "r" else (q, r, p)
    q, r = out
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """The singular value decomposition (``jax.scipy.linalg.svd``): ``(u, s, vh)``, or the
    singular values alone without ``compute_uv``."""
    (x,) = _inexact("svd", a)
    return jnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals=None, type: int = 1, check_finite: bool = True):  # noqa: A002
    """Eigenvalues (ascending) and eigenvectors of a Hermitian ``a``
    (``jax.scipy.linalg.eigh``). As JAX's, a non-Hermitian ``a`` gives those of its
    Hermitian part ``(a + a^H) / 2`` (SciPy reads the ``lower`` or upper triangle). The
    generalised problem (``b``) and ``eigvals=`` raise NotImplementedError, as in JAX."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    (x,) = _inexact("eigh", a)
    # JAX's values: those of the Hermitian part (a + a^H) / 2, whichever ``lower`` says
    # (SciPy reads one triangle; the two agree for Hermitian input)
    v, w = lax_linalg.eigh((x + _H(x)) / 2, lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


def schur(a, output: str = "real"):
    """The Schur decomposition ``a = Z T Z^H`` (``jax.scipy.linalg.schur``): ``(T, Z)``,
    real quasi-triangular for ``output='real'``, triangular for 'complex'. Raises
    ValueError for another output."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output}.")
    (x,) = _inexact("schur", a)
    if output == "complex":
        x = x.astype(jnp.result_type(x.dtype, np.complex64))
    return lax_linalg.schur(x)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """The upper Hessenberg form ``h`` of ``a`` (``jax.scipy.linalg.hessenberg``), and
    the unitary ``q`` with ``a = q h q^H`` when ``calc_q``."""
    (x,) = _inexact("hessenberg", a)
    _square("hessenberg", x)
    packed, taus = lax_linalg.hessenberg(x)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    n = x.shape[-1]
    # LAPACK's packed form: the reflectors of Q's trailing (n-1) x (n-1) block lie below
    # the first subdiagonal, with unit leading entries; Q's first row and column are e_1
    q = jnp.zeros(x.shape, x.dtype).at[..., 0, 0].set(1)
    if n > 1:
        q = q.at[..., 1:, 1:].set(lax_linalg.householder_product(packed[..., 1:, :-1], taus))
    return h, q


# ---- solvers ----------------------------------------------------------------------------

def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """The solution of ``op(a) x = b`` for a triangular ``a``
    (``jax.scipy.linalg.solve_triangular``): ``trans`` 0/'N', 1/'T' (transpose), 2/'C'
    (conjugate transpose); only the ``lower`` (or upper) triangle of ``a`` is read.
    Raises ValueError for another ``trans``."""
    a_, bb = _inexact("solve_triangular", a, b)
    modes = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in modes:
        raise ValueError(f"Invalid 'trans' value {trans}")
    transpose, conj = modes[trans]
    vec = bb.ndim == a_.ndim - 1
    rhs = bb[..., None] if vec else bb
    x = lax_linalg.triangular_solve(a_, rhs, left_side=True, lower=lower,
                                    transpose_a=transpose, conjugate_a=conj,
                                    unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """The solution of ``a x = b`` (``jax.scipy.linalg.solve``): ``assume_a`` 'gen'
    (LU), 'sym'/'her' (LU as well) or 'pos' (Cholesky, reading the ``lower`` or upper
    triangle). Raises ValueError for another ``assume_a``."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of {{'gen', 'sym', 'her', 'pos'}}, "
                         f"got {assume_a}.")
    a_, bb = _inexact("solve", a, b)
    if assume_a == "pos":
        sym = jnp.tril(a_) + _H(jnp.tril(a_, -1)) if lower else \
            jnp.triu(a_) + _H(jnp.triu(a_, 1))
        return cho_solve(cho_factor(sym, lower=True), bb)
    return jnp.linalg.solve(a_, bb)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of a square matrix (``jax.scipy.linalg.inv``); inf/NaN for a singular
    one, as JAX."""
    (x,) = _inexact("inv", a)
    return jnp.linalg.inv(x)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of a square matrix (``jax.scipy.linalg.det``)."""
    (x,) = _inexact("det", a)
    return jnp.linalg.det(x)


# ---- matrix functions ---------------------------------------------------------------------

# Pade coefficients of exp (degree 13) and the 1-norm thresholds under which lower degrees
# suffice: the scaling-and-squaring method of Higham (2005)
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = {np.dtype(np.float64): 5.371920351148152, np.dtype(np.float32): 3.925724783138660}


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential (``jax.scipy.linalg.expm``) by scaling and squaring with a
    degree-13 Pade approximant; NaN when more than ``max_squarings`` squarings would be
    needed (as JAX). Differentiable; batched over leading dimensions."""
    (x,) = _inexact("expm", A)
    _square("expm", x)
    n = x.shape[-1]
    real = np.dtype(x.dtype) if x.dtype.kind == "f" else np.dtype(
        np.float32 if x.dtype == np.complex64 else np.float64)
    theta = _THETA13.get(real, _THETA13[np.dtype(np.float32)])
    norm1 = jnp.max(jnp.sum(jnp.abs(x), axis=-2), axis=-1)
    s = jnp.maximum(0, jnp.ceil(jnp.log2(jnp.maximum(norm1, 1e-30) / theta)))
    s = jnp.where(norm1 == 0, 0, s)
    xs = x / jnp.power(2.0, s).astype(x.dtype)[..., None, None]
    b = _PADE13
    eye = jnp.eye(n, dtype=x.dtype)
    A2 = xs @ xs
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = xs @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4
              + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 \
        + b[0] * eye
    R = jnp.linalg.solve(V - U, V + U)
    steps = max_squarings

    def body(i, r_):
        return jnp.where((i < s)[..., None, None], r_ @ r_, r_)
    R = lax.fori_loop(0, steps, body, R)
    return jnp.where((s > max_squarings)[..., None, None], jnp.nan, R)


def funm(A, func, disp: bool = True):
    """``func`` applied to a square matrix through its complex Schur form
    (``jax.scipy.linalg.funm``, Parlett's recurrence); ``func`` acts elementwise on
    arrays. Returns ``(F, errest)`` when ``disp`` is False, as SciPy."""
    (x,) = _inexact("funm", A)
    if x.ndim != 2 or x.shape[0] != x.shape[1]:
        raise ValueError("expected square array_like input")
    cdt = jnp.result_type(x.dtype, np.complex64)
    T, Z = lax_linalg.schur(x.astype(cdt))
    n = x.shape[0]
    F = jnp.diag(func(jnp.diagonal(T)))
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = T[i, j] * (F[j, j] - F[i, i])
            if p > 1:
                s = s + T[i, i + 1:j] @ F[i + 1:j, j] - F[i, i + 1:j] @ T[i + 1:j, j]
            den = T[j, j] - T[i, i]
            # Parlett's recurrence: each entry needs the ones before it (sequential)
            F = F.at[i, j].set(  # noqa: JL005
                jnp.where(den == 0, s, s / jnp.where(den == 0, 1, den)))
    out = Z @ F @ jnp.conj(Z.T)
    if x.dtype.kind == "f":
        out = out.real.astype(x.dtype) if jnp.allclose(out.imag, 0, atol=1e-5) else out
    return out if disp else (out, jnp.zeros((), out.real.dtype))


def sqrtm(A, blocksize: int = 1):
    """The principal square root of a square matrix (``jax.scipy.linalg.sqrtm``), from
    its complex Schur form; complex result (as JAX). ``blocksize`` must be 1."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    (x,) = _inexact("sqrtm", A)
    if x.ndim != 2 or x.shape[0] != x.shape[1]:
        raise ValueError("expected square array_like input")
    cdt = jnp.result_type(x.dtype, np.complex64)
    T, Z = lax_linalg.schur(x.astype(cdt))
    n = x.shape[0]
    R = jnp.diag(jnp.sqrt(jnp.diagonal(T)))
    for j in range(n):
        for i in range(j - 1, -1, -1):
            s = T[i, j] - R[i, i + 1:j] @ R[i + 1:j, j] if j - i > 1 else T[i, j]
            den = R[i, i] + R[j, j]
            # the triangular recurrence is sequential: each entry needs the ones before it
            R = R.at[i, j].set(s / jnp.where(den == 0, 1, den))  # noqa: JL005
    return Z @ R @ jnp.conj(Z.T)


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """The polar decomposition (``jax.scipy.linalg.polar``): unitary ``u`` and positive
    semidefinite ``p`` with ``a = u p`` (``side='right'``) or ``a = p u`` ('left'),
    from the SVD (``method`` 'svd' or 'qdwh': the same factors). Raises ValueError for
    another side or method."""
    if side not in ("right", "left"):
        raise ValueError(f"side={side} was invalid.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    (x,) = _inexact("polar", a)
    m, n = x.shape[-2:]
    if method == "qdwh" and ((side == "right" and m < n) or (side == "left" and m >= n)):
        # JAX's QDWH iteration handles only these shapes
        raise NotImplementedError(
            f"method='qdwh' only supports mxn matrices where m < n where side='right' and "
            f"m >= n side='left', got {tuple(x.shape)} with side={side!r}")
    u_, s, vh = jnp.linalg.svd(x, full_matrices=False)
    u = u_ @ vh
    if side == "right":
        p = _H(vh) @ (s[..., :, None] * vh)
    else:
        p = u_ @ (s[..., :, None] * _H(u_))
    return u, p


# ---- special matrices ---------------------------------------------------------------------

def block_diag(*arrs):
    """The block-diagonal matrix of the given blocks (``jax.scipy.linalg.block_diag``):
    scalars and 1-d arrays count as one-row blocks; the promoted dtype. Raises ValueError
    for a block of rank above 2."""
    if not arrs:
        return jnp.zeros((1, 0))
    check_arraylike("block_diag", *arrs)
    blocks = [jnp.atleast_2d(ensure_array(a)) for a in arrs]
    for b in blocks:
        if b.ndim > 2:
            raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                             "dimensions, got " + str(b))
    dt = jnp.result_type(*blocks)
    cols = sum(b.shape[1] for b in blocks)
    rows, c = [], 0
    for b in blocks:
        rows.append(jnp.concatenate([jnp.zeros((b.shape[0], c), dt), b.astype(dt),
                                     jnp.zeros((b.shape[0], cols - c - b.shape[1]), dt)],
                                    axis=1))
        c += b.shape[1]
    return jnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (default
    ``conj(c)``; ``r[0]`` is ignored) (``jax.scipy.linalg.toeplitz``); leading batch
    dimensions broadcast."""
    check_arraylike("toeplitz", c)
    cc = ensure_array(c)
    rr = jnp.conj(cc) if r is None else ensure_array(r)
    dt = jnp.result_type(cc, rr)
    cc, rr = cc.astype(dt), rr.astype(dt)
    m, n = cc.shape[-1], rr.shape[-1]
    vals = jnp.concatenate([jnp.flip(rr[..., 1:], -1), cc], axis=-1)   # r reversed, then c
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    return vals[..., (n - 1) + i - j]


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (default zeros;
    ``r[0]`` is ignored) (``jax.scipy.linalg.hankel``)."""
    check_arraylike("hankel", c)
    cc = jnp.ravel(ensure_array(c))
    rr = jnp.zeros_like(cc) if r is None else jnp.ravel(ensure_array(r))
    dt = jnp.result_type(cc, rr)
    vals = jnp.concatenate([cc.astype(dt), rr[1:].astype(dt)])
    m, n = cc.shape[0], rr.shape[0]
    return vals[np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c):
    """The circulant matrix with first column ``c`` (``jax.scipy.linalg.circulant``)."""
    check_arraylike("circulant", c)
    cc = ensure_array(c)
    n = cc.shape[-1]
    return cc[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a``, highest first
    (``jax.scipy.linalg.companion``). Raises ValueError for fewer than 2 coefficients."""
    check_arraylike("companion", a)
    aa = ensure_array(a)
    if aa.ndim != 1:
        raise ValueError("Incorrect shape for `a`.  `a` must be one-dimensional.")
    if aa.shape[0] < 2:
        raise ValueError("The length of `a` must be at least 2.")
    (aa,) = promote_dtypes_inexact(aa)
    n = aa.shape[0]
    first = -aa[1:] / aa[0]
    return jnp.concatenate([first[None, :], jnp.eye(n - 2, n - 1, dtype=first.dtype)],
                           axis=0)


def hilbert(n: int):
    """The ``n x n`` Hilbert matrix ``1 / (i + j + 1)`` (``jax.scipy.linalg.hilbert``),
    float."""
    n = operator.index(n)
    i = jnp.arange(n, dtype=jnp.float32 if not _x64() else jnp.float64)
    return 1.0 / (i[:, None] + i[None, :] + 1)


def pascal(n: int, kind=None):
    """The ``n x n`` Pascal matrix (``jax.scipy.linalg.pascal``): 'symmetric' (default),
    'lower' or 'upper'; the binomial coefficients as floats (exact up to 2**24 in float32)."""
    n = operator.index(n)
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be 'symmetric', 'lower', or 'upper'; got {kind}")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    if kind == "symmetric":
        vals = np.vectorize(lambda a, b: math.comb(a + b, a))(i, j) if n else np.zeros((0, 0))
    else:
        vals = np.vectorize(lambda a, b: math.comb(a, b))(i, j) if n else np.zeros((0, 0))
        if kind == "upper":
            vals = vals.T
    return jnp.asarray(np.asarray(vals, dtype=np.float64), dtype=_default_float())


def dft(n: int, scale=None, *, dtype=None):
    """The ``n``-point DFT matrix ``exp(-2 pi i jk / n)`` (``jax.scipy.linalg.dft``),
    divided by ``n`` ('n') or ``sqrt(n)`` ('sqrtn') when ``scale`` says. Complex."""
    n = operator.index(n)
    if scale not in (None, "n", "sqrtn"):
        raise ValueError(f"scale must be None, 'n', or 'sqrtn', not {scale!r}.")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)
    m = np.exp(-2j * np.pi * jk / max(n, 1))
    if scale == "n":
        m = m / n
    elif scale == "sqrtn":
        m = m / np.sqrt(n)
    dt = dtype if dtype is not None else (np.complex128 if _x64() else np.complex64)
    return jnp.asarray(m, dtype=dt)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix ``C`` with ``C @ v == convolve(a, v, mode)`` for ``v`` of length ``n``
    (``jax.scipy.linalg.convolution_matrix``); ``a``'s dtype. Raises ValueError for a
    non-1-d ``a``, ``n < 1`` or an unknown mode."""
    check_arraylike("convolution_matrix", a)
    aa = ensure_array(a)
    n = operator.index(n)
    if aa.ndim != 1:
        raise ValueError("convolution_matrix expects a one-dimensional argument.")
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'full', 'same', 'valid'; got {mode!r}")
    m = aa.shape[0]
    rows = np.arange(m + n - 1)[:, None] - np.arange(n)[None, :]
    inside = (rows >= 0) & (rows < m)
    full = jnp.where(inside, aa[np.clip(rows, 0, m - 1)], jnp.zeros((), aa.dtype))
    if mode == "same":
        start = (m - 1) // 2
        return full[start:start + max(m, n)]
    if mode == "valid":
        return full[min(m, n) - 1:max(m, n)]
    return full


def fiedler(a):
    """The symmetric Fiedler matrix ``|a_i - a_j|`` of a 1-d ``a``
    (``jax.scipy.linalg.fiedler``), ``a``'s dtype."""
    check_arraylike("fiedler", a)
    aa = ensure_array(a)
    if aa.ndim != 1:
        raise ValueError("Input 'a' must be a 1D array.")
    return jnp.abs(aa[:, None] - aa[None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients ``a``
    (highest first, normalised by ``a[0]``) (``jax.scipy.linalg.fiedler_companion``).
    Raises ValueError for fewer than 2 coefficients or a leading zero."""
    check_arraylike("fiedler_companion", a)
    (aa,) = promote_dtypes_inexact(ensure_array(a))
    aa = ensure_array(aa)
    if aa.ndim != 1:
        raise ValueError("Input 'a' must be a 1-D array.")
    if aa.shape[0] < 2:
        raise ValueError("Input 'a' must have at least two elements.")
    if aa.shape[0] == 2:
        return (-aa[1] / aa[0]).reshape(1, 1)
    aa = aa / aa[0]
    n = aa.shape[0] - 1
    # the pattern: -a1, -a2, 1 in row 0; in each further even row 2i, -a_{2i+1} and
    # -a_{2i+2} at columns 2i - 1 and 2i + 1 and a 1 at column 2i + 2; in odd rows a 1
    # at column 0 (row 1) or two columns to the left of the row (rows 3, 5, ...)
    ones = [(1, 0)] + [(r, r - 2) for r in range(3, n, 2)] + \
        [(r, r + 2) for r in range(0, n - 2, 2)]
    coef = [(0, 0, 1), (0, 1, 2)]
    for r in range(2, n, 2):
        coef.append((r, r - 1, r + 1))
        if r + 1 < n:
            coef.append((r, r + 1, r + 2))
    c = jnp.zeros((n, n), aa.dtype)
    ri, ci = (np.array(v, dtype=int) for v in zip(*ones)) if ones else ([], [])
    c = c.at[ri, ci].set(1)
    rows, cols, ks = (np.array(v, dtype=int) for v in zip(*coef))
    return c.at[rows, cols].set(-aa[ks])


def hadamard(n: int, dtype=int):
    """The ``n x n`` Hadamard matrix of Sylvester's construction
    (``jax.scipy.linalg.hadamard``); ``n`` a power of 2 (ValueError otherwise)."""
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1), dtype=np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False):
    """The Helmert matrix of order ``n`` (``jax.scipy.linalg.helmert``): ``(n-1) x n``
    orthonormal contrasts, with the normalised ones row first when ``full``."""
    n = operator.index(n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return jnp.asarray(h if full else h[1:], dtype=_default_float())


def invhilbert(n: int):
    """The inverse of the ``n x n`` Hilbert matrix (``jax.scipy.linalg.invhilbert``),
    from its exact integer entries, as floats."""
    n = operator.index(n)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            s = i + j
            out[i, j] = ((-1) ** s * (s + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(s, i) ** 2)
    return jnp.asarray(out, dtype=_default_float())


def invpascal(n: int, kind=None):
    """The inverse of ``pascal(n, kind)`` (``jax.scipy.linalg.invpascal``), as floats."""
    n = operator.index(n)
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be 'symmetric', 'lower', or 'upper'; got {kind}")
    low = np.array([[(-1) ** (i - j) * math.comb(i, j) if j <= i else 0 for j in range(n)]
                    for i in range(n)], dtype=np.float64).reshape(n, n)
    if kind == "lower":
        out = low
    elif kind == "upper":
        out = low.T
    else:
        out = low.T @ low
    return jnp.asarray(out, dtype=_default_float())


def leslie(f, s):
    """The Leslie matrix of fecundities ``f`` (length n) and survival rates ``s`` (length
    n - 1) (``jax.scipy.linalg.leslie``): ``f`` in the first row, ``s`` on the
    subdiagonal. Raises ValueError for other lengths."""
    check_arraylike("leslie", f, s)
    ff, ss = (ensure_array(x) for x in promote_dtypes_inexact(f, s))
    if ff.ndim != 1 or ss.ndim != 1 or ss.shape[0] != ff.shape[0] - 1:
        raise ValueError("Incorrect lengths for f and s.  The length of s must be one less "
                         "than the length of f.")
    n = ff.shape[0]
    out = jnp.zeros((n, n), ff.dtype).at[0].set(ff)
    return out.at[np.arange(1, n), np.arange(n - 1)].set(ss)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """The ``X`` with ``A X + X B = C`` (``jax.scipy.linalg.solve_sylvester``), by one
    linear solve of the Kronecker form ``(I (x) A + B^T (x) I) vec(X) = vec(C)``.  All
    NaN, as in JAX, when some eigenvalue sum ``|eig(A)_i + eig(B)_j|`` is below ``tol``
    (no unique solution).  Raises ValueError for shapes that do not fit or an unknown
    method."""
    if method not in ("schur", "eigen"):
        raise ValueError(f"Unrecognized method {method}.")
    a, b, c = _inexact("solve_sylvester", A, B, C)
    n, m = a.shape[-1], b.shape[-1]
    if a.shape != (n, n) or b.shape != (m, m) or c.shape != (n, m):
        raise ValueError(f"solve_sylvester: shapes {tuple(a.shape)}, {tuple(b.shape)}, "
                         f"{tuple(c.shape)} do not fit A X + X B = C")
    K = jnp.kron(jnp.eye(m, dtype=a.dtype), a) + jnp.kron(b.T, jnp.eye(n, dtype=a.dtype))
    x = jnp.linalg.solve(K, c.T.reshape(-1)).reshape(m, n).T
    sums = jnp.linalg.eigvals(a)[:, None] + jnp.linalg.eigvals(b)[None, :]
    singular = jnp.any(jnp.abs(sums) < tol)
    return jnp.where(singular, jnp.full_like(x, jnp.nan), x)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (ascending) and, unless ``eigvals_only``, eigenvectors of the symmetric
    tridiagonal matrix with diagonal ``d`` and off-diagonal ``e``
    (``jax.scipy.linalg.eigh_tridiagonal``). ``select='a'``: all of them; ``select='i'``:
    those of ascending index ``select_range[0]`` to ``select_range[1]`` (inclusive).
    ``select='v'`` raises NotImplementedError (as JAX), another value or a missing or
    empty ``select_range`` ValueError.  ``tol`` bounds JAX's bisection error; the
    eigenvalues here come from LAPACK's solver and are within it.  ``key`` seeds JAX's
    inverse iteration; the eigenvectors here (unique up to sign) do not need one."""
    if select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        lo, hi = (int(i) for i in select_range)
        if lo > hi:
            raise ValueError(f"Got empty index range in select_range: {select_range}.")
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    elif select != "a":
        raise ValueError(f"select must have a value in {{'a', 'i', 'v'}}; got {select!r}.")
    dd, ee = _inexact("eigh_tridiagonal", d, e)
    n = dd.shape[0]
    if ee.shape != (max(n - 1, 0),):
        raise ValueError(f"e must have length n - 1 = {n - 1}; got shape {tuple(ee.shape)}")
    t = jnp.diag(dd) + jnp.diag(ee, 1) + jnp.diag(jnp.conj(ee), -1)
    w, v = jnp.linalg.eigh(t)
    if select == "i":
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    return w if eigvals_only else (w, v)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """The Frechet derivative of ``expm`` at ``A`` in the direction ``E``
    (``jax.scipy.linalg.expm_frechet``), as the upper-right block of
    ``expm([[A, E], [0, A]])``; with ``compute_expm`` also ``expm(A)``:
    ``(expm(A), L)``. Raises ValueError for non-square or mismatched shapes."""
    a, e = _inexact("expm_frechet", A, E)
    _square("expm_frechet", a)
    if a.shape != e.shape:
        raise ValueError(f"expected A and E to be the same shape; got {tuple(a.shape)} and "
                         f"{tuple(e.shape)}")
    n = a.shape[-1]
    z = jnp.zeros_like(a)
    big = jnp.concatenate([jnp.concatenate([a, e], axis=-1),
                           jnp.concatenate([z, a], axis=-1)], axis=-2)
    x = expm(big)
    L = x[..., :n, n:]
    return (x[..., :n, :n], L) if compute_expm else L


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False):
    """``c`` multiplied by the economic ``Q`` of ``a = Q R`` (``jax.scipy.linalg.qr_multiply``):
    ``(c @ Q, R)`` for ``mode='right'``, ``(Q @ c, R)`` for 'left' (conjugated Q with
    ``conjugate``); with ``pivoting`` also the permutation."""
    if mode not in ("left", "right"):
        raise ValueError(f"mode must be either 'left' or 'right'; got {mode!r}")
    aa, cc = _inexact("qr_multiply", a, c)
    out = lax_linalg.qr(aa, pivoting=pivoting, full_matrices=False)
    q, r = out[0], out[1]
    if conjugate:
        q = jnp.conj(q)
    res = cc @ q if mode == "right" else q @ cc
    return (res, r, out[2]) if pivoting else (res, r)


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form ``(T, Z)`` from a real one (``jax.scipy.linalg.rsf2csf``):
    each 2x2 diagonal block of ``T`` is split by a Givens rotation, applied to ``Z`` too.
    Raises ValueError for non-square or mismatched input."""
    t, z = _inexact("rsf2csf", T, Z)
    if t.ndim != 2 or t.shape[0] != t.shape[1] or z.shape != t.shape:
        raise ValueError(f"rsf2csf: T and Z must be square and of the same shape; got "
                         f"{tuple(t.shape)} and {tuple(z.shape)}")
    cdt = jnp.result_type(t.dtype, np.complex64)
    t, z = t.astype(cdt), z.astype(cdt)
    n = t.shape[0]
    eps = float(np.finfo(np.dtype(cdt)).eps)
    for m in range(n - 1, 0, -1):
        sub = t[m, m - 1]
        split = jnp.abs(sub) > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m]))
        a_, b_, c_, d_ = t[m - 1, m - 1], t[m - 1, m], sub, t[m, m]
        half = (a_ - d_) / 2
        root = jnp.sqrt(half * half + b_ * c_)
        mu0 = (a_ + d_) / 2 + root - d_
        r = jnp.sqrt(jnp.abs(mu0) ** 2 + jnp.abs(sub) ** 2)
        r = jnp.where(r == 0, 1, r)
        cs, sn = mu0 / r, sub / r
        cs = jnp.where(split, cs, 1)
        sn = jnp.where(split, sn, 0)
        G = jnp.stack([jnp.stack([jnp.conj(cs), sn]), jnp.stack([-sn, cs])])
        # one rotation per 2x2 block, each acting on the result of the previous ones
        t = t.at[m - 1:m + 1, m - 1:].set(G @ t[m - 1:m + 1, m - 1:])  # noqa: JL005
        t = t.at[:m + 1, m - 1:m + 1].set(  # noqa: JL005
            t[:m + 1, m - 1:m + 1] @ jnp.conj(G.T))
        z = z.at[:, m - 1:m + 1].set(z[:, m - 1:m + 1] @ jnp.conj(G.T))  # noqa: JL005
        t = t.at[m, m - 1].set(jnp.where(split, 0, t[m, m - 1]))  # noqa: JL005
    return t, z


def _default_float():
    from .. import dtypes
    return dtypes.default_float_dtype()


def _x64():
    from .. import dtypes
    return dtypes.x64_enabled()


__all__ = sorted(n for n in dir() if not n.startswith("_") and callable(globals()[n])
                 and getattr(globals()[n], "__module__", None) == __name__)


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
