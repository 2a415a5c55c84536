"""``jaxlite.scipy.sparse.linalg`` (``jax.scipy.sparse.linalg``): the conjugate-gradient
(``cg``), BiCGSTAB (``bicgstab``) and restarted GMRES (``gmres``) iterations for
``A x = b``, with ``A`` a matrix or a function computing ``A @ x``, on arrays or pytrees.

The iterations are JAX's (same updates and stopping rules; default ``maxiter`` ten times
the size of ``b``), written with ``lax.while_loop``, so they run under jit and vmap.  Each
solve goes through ``lax.custom_linear_solve`` as in JAX, so derivatives are implicit:
``grad`` solves the transposed system (with the same solver; ``cg`` on real ``b`` is
declared symmetric), never differentiating the loop.

Layer: scipy (lax control flow and jaxlite.numpy).
"""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ...core.array import Array
from ...core.trace import Tracer
from ...flatten_util import ravel_pytree
from ...tree_util import tree_leaves, tree_map, tree_structure


def _matvec(A, what="linear operator"):
    """``A`` as a function: a callable as it is, a square matrix as ``x -> A @ x``."""
    if callable(A):
        return A
    if isinstance(A, (np.ndarray, Array, Tracer)):
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"{what} must be a square matrix, but has shape: "
                             f"{tuple(A.shape)}")
        return lambda x: jnp.dot(A, x)
    raise TypeError(f"{what} must be either a function or ndarray: {A!r}")


def _vdot_real(x, y):
    return jnp.real(jnp.vdot(x, y)) if x.dtype.kind == "c" else jnp.vdot(x, y)


def _norm(x):
    return jnp.sqrt(_vdot_real(x, x))


def _prepare(A, b, x0, M, maxiter):
    """Checks and defaults shared by the solvers: ``(matvec, preconditioner, b, x0,
    maxiter, size)`` with ``b``/``x0`` pytrees of arrays."""
    b = tree_map(jnp.asarray, b)
    x0 = tree_map(jnp.zeros_like, b) if x0 is None else tree_map(jnp.asarray, x0)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")
    shapes_x0 = [tuple(np.shape(v)) for v in tree_leaves(x0)]
    shapes_b = [tuple(np.shape(v)) for v in tree_leaves(b)]
    if shapes_x0 != shapes_b:
        raise ValueError(f"arrays in x0 and b must have matching shapes: {shapes_x0} vs "
                         f"{shapes_b}")
    size = sum(int(np.size(v)) for v in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size
    mv = _matvec(A)
    pre = _matvec(M, "preconditioner") if M is not None else (lambda v: v)
    return mv, pre, b, x0, maxiter, size


def _flat(matvec, pre, b, x0):
    """The problem on flat vectors: (matvec, preconditioner, b, x0, unflatten)."""
    bf, unravel = ravel_pytree(b)
    xf, _ = ravel_pytree(x0)

    def flat(fn):
        return lambda v: ravel_pytree(fn(unravel(v)))[0].astype(bf.dtype)
    return flat(matvec), flat(pre), bf, xf.astype(bf.dtype), unravel


def _cg(mv, pre, b, x0, maxiter, tol, atol):
    bs = _vdot_real(b, b)
    atol2 = jnp.maximum(jnp.square(tol) * bs, jnp.square(atol))
    r0 = b - mv(x0)
    p0 = z0 = pre(r0)
    dt = b.dtype
    gamma0 = _vdot_real(r0, z0).astype(dt)

    def cond(v):
        x, r, gamma, p, k = v
        return (_vdot_real(r, r) > atol2) & (k < maxiter)

    def body(v):
        x, r, gamma, p, k = v
        Ap = mv(p)
        alpha = gamma / _vdot_real(p, Ap).astype(dt)
        x = x + alpha * p
        r = r - alpha * Ap
        z = pre(r)
        gamma_new = _vdot_real(r, z).astype(dt)
        p = z + (gamma_new / gamma) * p
        return x, r, gamma_new, p, k + 1
    return lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab(mv, pre, b, x0, maxiter, tol, atol):
    bs = _vdot_real(b, b)
    atol2 = jnp.maximum(jnp.square(tol) * bs, jnp.square(atol))
    r0 = b - mv(x0)
    one = jnp.ones((), b.dtype)

    def cond(v):
        x, r, rhat, alpha, omega, rho, p, q, k = v
        return (_vdot_real(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def body(v):
        x, r, rhat, alpha, omega, rho, p, q, k = v
        rho_new = jnp.vdot(rhat, r)
        beta = rho_new / rho * alpha / omega
        p = r + beta * (p - omega * q)
        phat = pre(p)
        q = mv(phat)
        alpha = rho_new / jnp.vdot(rhat, q)
        s = r - alpha * q
        early = _vdot_real(s, s) < atol2
        shat = pre(s)
        t = mv(shat)
        omega = jnp.vdot(t, s) / jnp.vdot(t, t)
        x = jnp.where(early, x + alpha * phat, x + alpha * phat + omega * shat)
        r = jnp.where(early, s, s - omega * t)
        # breakdowns end the loop (negative k), as JAX's iteration does
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_new == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_new, p, q, k
    init = (x0, r0, r0, one, one, one, r0, r0, 0)
    return lax.while_loop(cond, body, init)[0]


def _isolve(kernel, A, b, x0, tol, atol, maxiter, M, symmetric_if_real=False):
    mv, pre, b, x0, maxiter, _ = _prepare(A, b, x0, M, maxiter)

    def solve(matvec, rhs):
        f_mv, f_pre, bf, xf, unravel = _flat(matvec, pre, rhs, x0)
        return unravel(kernel(f_mv, f_pre, bf, xf, maxiter, tol, atol))
    # a real positive-definite operator is symmetric: its own transpose
    symmetric = symmetric_if_real and all(np.dtype(v.dtype).kind != "c"
                                          for v in tree_leaves(b))
    x = lax.custom_linear_solve(mv, b, solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for ``A x = b`` with ``A`` Hermitian positive definite
    (``jax.scipy.sparse.linalg.cg``).

    Args:
      A: a square matrix or a function of ``x`` returning ``A @ x`` (same structure).
      b: right-hand side, an array or a pytree of arrays; ``x0`` the starting point
        (default zeros) of the same structure and shapes.
      tol, atol: stop once ``|r| <= max(tol |b|, atol)``; ``maxiter`` (default
        ``10 * b.size``) bounds the iterations.
      M: preconditioner (approximating ``A^-1``), a matrix or a function.

    Returns:
      ``(x, None)``, ``x`` of ``b``'s structure and dtypes.  Differentiable (jvp, grad, in
      ``A``'s values and ``b``) through ``lax.custom_linear_solve``.

    Raises:
      ValueError: ``x0`` of another structure or shapes than ``b``; ``A`` not square.
      TypeError: ``A`` neither a function nor an array.
    """
    return _isolve(_cg, A, b, x0, tol, atol, maxiter, M, symmetric_if_real=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """BiCGSTAB for a general ``A x = b`` (``jax.scipy.sparse.linalg.bicgstab``):
    ``(x, None)``; arguments, derivatives and errors as ``cg`` (reverse mode solves the
    transposed system with BiCGSTAB)."""
    return _isolve(_bicgstab, A, b, x0, tol, atol, maxiter, M)


# ---- GMRES ------------------------------------------------------------------------------

def _safe_normalize(x, thresh=None):
    """``(x / |x|, |x|)``, or ``(0, 0)`` when ``|x|`` is at most ``thresh`` (default: the
    dtype's machine epsilon)."""
    norm = _norm(x)
    if thresh is None:
        thresh = jnp.finfo(norm.dtype).eps
    use = norm > jnp.real(jnp.asarray(thresh)).astype(norm.dtype)
    unit = jnp.where(use, x / norm.astype(x.dtype), jnp.zeros((), x.dtype))
    return unit, jnp.where(use, norm, jnp.zeros((), norm.dtype))


def _arnoldi_step(k, mv, pre, V, H):
    """Step ``k`` of the Arnoldi process: the new Krylov vector ``M A V[:, k]``,
    orthogonalised against the columns of ``V`` by one classical Gram-Schmidt pass (zero
    when it lies in their span, relative to its norm), becomes ``V[:, k + 1]``; its
    overlaps and norm become row ``k`` of ``H``.  Returns ``(V, H, breakdown)``."""
    dt = V.dtype
    v = pre(mv(lax.dynamic_index_in_dim(V, k, axis=1, keepdims=False)))
    _, norm0 = _safe_normalize(v)
    h = jnp.conj(V).T @ v
    v = v - V @ h
    unit, norm1 = _safe_normalize(v, thresh=jnp.finfo(dt).eps * norm0)
    V = V.at[:, k + 1].set(unit)
    h = h.at[k + 1].set(norm1.astype(dt))
    H = H.at[k, :].set(h)
    return V, H, norm1 == 0


def _krylov_basis(unit_residual, restart):
    n = unit_residual.shape[0]
    return jnp.zeros((n, restart + 1), unit_residual.dtype).at[:, 0].set(unit_residual)


def _residual(mv, pre, b, x):
    return _safe_normalize(pre(b - mv(x)))


def _gmres_batched(mv, pre, b, x0, unit_residual, residual_norm, ptol, restart):
    """One restart: ``restart`` Arnoldi steps (fewer on breakdown), then the small
    least-squares problem ``min |beta e1 - H^T y|`` by its normal equations."""
    dt = b.dtype
    V = _krylov_basis(unit_residual, restart)
    H = jnp.eye(restart, restart + 1, dtype=dt)

    def cond(c):
        return (c[3] < restart) & jnp.logical_not(c[2])

    def body(c):
        V, H, _, k = c
        V, H, brk = _arnoldi_step(k, mv, pre, V, H)
        return V, H, brk, k + 1
    V, H, _, _ = lax.while_loop(cond, body, (V, H, jnp.asarray(False), 0))
    beta = jnp.zeros(restart + 1, dt).at[0].set(residual_norm.astype(dt))
    a = H.T
    ah = jnp.conj(a).T
    from ..linalg import solve
    y = solve(ah @ a, ah @ beta, assume_a="pos")
    x = x0 + V[:, :-1] @ y
    unit, norm = _residual(mv, pre, b, x)
    return x, unit, norm


def _rotate(v, i, cs, sn):
    """Entries ``i`` and ``i + 1`` of ``v`` rotated by the Givens pair ``(cs, sn)``."""
    a, c = v[i], v[i + 1]
    v = v.at[i].set(jnp.conj(cs) * a - jnp.conj(sn) * c)
    return v.at[i + 1].set(sn * a + cs * c)


def _givens(a, b):
    """The rotation ``(cs, sn)`` that zeroes ``b`` against ``a``."""
    b_zero = jnp.abs(b) == 0
    a_smaller = jnp.abs(a) < jnp.abs(b)
    t = -jnp.where(a_smaller, a, b) / jnp.where(a_smaller, b, a)
    r = lax.rsqrt(1 + jnp.abs(t) ** 2).astype(t.dtype)
    cs = jnp.where(b_zero, 1, jnp.where(a_smaller, r * t, r))
    sn = jnp.where(b_zero, 0, jnp.where(a_smaller, r, r * t))
    return cs, sn


def _gmres_incremental(mv, pre, b, x0, unit_residual, residual_norm, ptol, restart):
    """One restart, with the QR factorisation of the Hessenberg matrix updated by Givens
    rotations at each Arnoldi step, stopping early once the (preconditioned) residual
    estimate is at most ``ptol``."""
    dt = b.dtype
    V = _krylov_basis(unit_residual, restart)
    R = jnp.eye(restart, restart + 1, dtype=dt)
    givens = jnp.zeros((restart, 2), dt)
    beta = jnp.zeros(restart + 1, dt).at[0].set(residual_norm.astype(dt))

    def cond(c):
        return (c[0] < restart) & (c[1] > ptol)

    def body(c):
        k, _, V, R, beta, givens = c
        V, H, _ = _arnoldi_step(k, mv, pre, V, R)
        row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, givens[i, 0], givens[i, 1]),
                            H[k, :])
        cs, sn = _givens(row[k], row[k + 1])
        givens = givens.at[k, :].set(jnp.stack([cs, sn]).astype(dt))
        row = _rotate(row, k, cs, sn)
        R = R.at[k, :].set(row)
        beta = _rotate(beta, k, cs, sn)
        return k + 1, jnp.abs(beta[k + 1]), V, R, beta, givens
    _, _, V, R, beta, _ = lax.while_loop(cond, body,
                                         (0, residual_norm, V, R, beta, givens))
    from ..linalg import solve_triangular
    y = solve_triangular(R[:, :-1].T, beta[:-1])
    x = x0 + V[:, :-1] @ y
    unit, norm = _residual(mv, pre, b, x)
    return x, unit, norm


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Restarted GMRES for a general ``A x = b`` (``jax.scipy.sparse.linalg.gmres``).

    Args:
      A, b, x0, M: as ``cg`` (``M`` applied on the left: the iteration minimises
        ``|M (b - A x)|``).
      tol, atol: stop once ``|M (b - A x)| <= max(tol |b|, atol)`` after a restart.
      restart: the Krylov dimension of each restart (at most ``b``'s size; default 20).
      maxiter: the most restarts (default ``10 * b.size``).
      solve_method: ``'batched'`` (the Arnoldi process first, then a least-squares
        solve; JAX's default) or ``'incremental'`` (QR by Givens rotations as it goes,
        which can stop a restart early).

    Returns:
      ``(x, info)``: ``x`` of ``b``'s structure and dtypes; ``info`` an int32 scalar, -1
      when ``x`` holds NaN, else 0.  Differentiable as ``cg`` (reverse mode runs GMRES on
      the transposed system).

    Raises:
      ValueError: an unknown ``solve_method``; ``x0`` not matching ``b``; ``A`` not square.
      TypeError: ``A`` neither a function nor an array.
    """
    if solve_method == "incremental":
        step = _gmres_incremental
    elif solve_method == "batched":
        step = _gmres_batched
    else:
        raise ValueError(f"invalid solve_method {solve_method}, must be either "
                         f"'incremental' or 'batched'")
    mv, pre, b, x0, maxiter, size = _prepare(A, b, x0, M, maxiter)
    restart = min(int(restart), size)
    bf = ravel_pytree(b)[0]
    b_norm = _norm(bf)
    atol = jnp.maximum(tol * b_norm, atol)
    pb = ravel_pytree(pre(b))[0]
    ptol = _norm(pb) * jnp.minimum(1.0, atol / b_norm)

    def solve(matvec, rhs):
        f_mv, f_pre, rf, xf, unravel = _flat(matvec, pre, rhs, x0)
        unit, norm = _residual(f_mv, f_pre, rf, xf)

        def cond(c):
            return (c[1] < maxiter) & (c[3] > atol)

        def body(c):
            x, k, unit, norm = c
            x, unit, norm = step(f_mv, f_pre, rf, x, unit, norm, ptol, restart)
            return x, k + 1, unit, norm
        return unravel(lax.while_loop(cond, body, (xf, 0, unit, norm))[0])

    x = lax.custom_linear_solve(mv, b, solve, transpose_solve=solve)
    failed = jnp.isnan(_norm(ravel_pytree(x)[0]))
    return x, jnp.where(failed, -1, 0)


__all__ = ["cg", "bicgstab", "gmres"]
