"""``jaxlite.scipy.sparse.linalg`` (``jax.scipy.sparse.linalg``): the conjugate-gradient
(``cg``) and BiCGSTAB (``bicgstab``) iterations for ``A x = b``, with ``A`` a matrix or a
function computing ``A @ x``, on arrays or pytrees.

The iterations are JAX's (same updates and stopping rule: ``|r| <= max(tol |b|, atol)``
or ``maxiter`` steps, default ten times the size of ``b``), written with
``lax.while_loop``, so they run under jit and vmap. Differentiating through a solve is not
supported (JAX derives it through ``lax.custom_linear_solve``, which jaxlite lacks): grad
raises rather than answering.

Layer: scipy (lax control flow and jaxlite.numpy).
"""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ...flatten_util import ravel_pytree
from ...tree_util import tree_leaves, tree_structure


def _matvec(A):
    if callable(A):
        return A
    a = jnp.asarray(A)
    if a.ndim != 2:
        raise ValueError(f"A must be a function or a 2-d matrix; got shape {tuple(a.shape)}")
    return lambda x: a @ x


def _vdot_real(x, y):
    return jnp.real(jnp.vdot(x, y)) if x.dtype.kind == "c" else jnp.vdot(x, y)


def _flat_problem(name, A, b, x0, M):
    """The solve on flat vectors: (matvec, preconditioner, b, x0, unflatten)."""
    if x0 is None:
        from ...tree_util import tree_map
        x0 = tree_map(jnp.zeros_like, b)
    if tree_structure(x0) != tree_structure(b) or \
            [np.shape(v) for v in tree_leaves(x0)] != [np.shape(v) for v in tree_leaves(b)]:
        raise ValueError(f"x0 and b must have matching tree structure and array shapes: "
                         f"{[np.shape(v) for v in tree_leaves(x0)]} vs "
                         f"{[np.shape(v) for v in tree_leaves(b)]}")
    bf, unravel = ravel_pytree(b)
    xf, _ = ravel_pytree(x0)
    mv, pre = _matvec(A), (_matvec(M) if M is not None else (lambda v: v))

    def flat(fn):
        return lambda v: ravel_pytree(fn(unravel(v)))[0].astype(bf.dtype)
    return flat(mv), flat(pre), bf, xf.astype(bf.dtype), unravel


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


def _solve(name, kernel, A, b, x0, tol, atol, maxiter, M):
    mv, pre, bf, xf, unravel = _flat_problem(name, A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * bf.shape[0]
    return unravel(kernel(mv, pre, bf, xf, maxiter, tol, atol)), None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for ``A x = b`` with ``A`` Hermitian positive definite
    (``jax.scipy.sparse.linalg.cg``): ``(x, None)``. ``A`` (and the preconditioner ``M``)
    a matrix or a function of ``x``; ``b``/``x0`` arrays or pytrees of one structure
    (ValueError otherwise)."""
    return _solve("cg", _cg, A, b, x0, tol, atol, maxiter, M)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """BiCGSTAB for a general ``A x = b`` (``jax.scipy.sparse.linalg.bicgstab``):
    ``(x, None)``; arguments as ``cg``."""
    return _solve("bicgstab", _bicgstab, A, b, x0, tol, atol, maxiter, M)


__all__ = ["cg", "bicgstab"]
