"""Polynomials as coefficient arrays, highest power first (``jax.numpy``): ``polyval``,
``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint``, ``poly``,
``roots``, ``polyfit``.

Layer: numpy (compositions of jaxlite.numpy, its convolution and its linear algebra:
``roots`` and ``poly`` of a matrix use ``linalg.eigvals``, ``polyfit`` ``linalg.lstsq``).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes
from ..core.trace import Tracer
from ._util import (check_arraylike, ensure_array, promote_dtypes, promote_dtypes_inexact,
                    public_names)


def _jnp():
    from .. import numpy as jnp
    return jnp


def _strip_leading_zeros(name, p):
    """``p`` without leading zeros (all but one kept for the zero polynomial); needs
    concrete coefficients."""
    v = p.to_concrete_value() if isinstance(p, Tracer) else p
    if v is None:
        from .. import errors
        raise errors.ConcretizationTypeError(
            p, f"It arose in {name}: stripping leading zeros needs concrete coefficients "
               f"(pass trim_leading_zeros=False / strip_zeros=False under jit).")
    nz = np.flatnonzero(np.asarray(v))
    return p[int(nz[0]):] if nz.size else p[-1:] if p.shape[0] else p


def _coeffs(name, *ps, inexact=False):
    check_arraylike(name, *ps)
    for a in ps:
        if np.ndim(a) != 1:
            raise ValueError(f"{name}: coefficient arrays must be 1-d; got shape "
                             f"{np.shape(a)}")
    promote = promote_dtypes_inexact if inexact else promote_dtypes
    return [ensure_array(a) for a in promote(*ps)]


def _check_unroll(unroll):
    """JAX's rule for ``unroll``: a bool or a non-negative int (TypeError, ValueError)."""
    if isinstance(unroll, (bool, np.bool_)):
        return
    try:
        n = operator.index(unroll)
    except TypeError:
        raise TypeError(f"polyval: unroll must be a bool or a non-negative int; got "
                        f"{unroll!r} of type {type(unroll).__name__}") from None
    if n < 0:
        raise ValueError(f"polyval: unroll must be a bool or a non-negative int; got {n}")


def polyval(p, x, *, unroll: int = 16):
    """The polynomial with coefficients ``p`` at ``x``, by Horner's rule
    (``jax.numpy.polyval``), in the promoted dtype of ``p`` and ``x``.

    ``p`` runs along its first axis, highest power first; its other axes broadcast with
    ``x``: the result's shape is ``broadcast_shapes(p.shape[1:], x.shape)``.  ``unroll``
    (how many steps of JAX's scan one iteration holds) only shapes JAX's loop; here the
    loop is unrolled at trace time, so the result is the same for every valid value.
    Raises TypeError for non-array arguments or a non-integer ``unroll``, ValueError for a
    negative ``unroll`` or shapes that do not broadcast, IndexError for a 0-d ``p`` (it
    has no axis to run along, as in JAX)."""
    check_arraylike("polyval", p, x)
    _check_unroll(unroll)
    jnp = _jnp()
    # raw values into the promotion: a Python scalar takes the promoted dtype's weak type
    pa, xa = (ensure_array(v) for v in promote_dtypes(p, x))
    if pa.ndim == 0:
        raise IndexError("polyval: p must have at least one axis (the coefficients, "
                         "highest power first); got a 0-d array")
    shape = jnp.broadcast_shapes(tuple(pa.shape[1:]), tuple(xa.shape))
    y = jnp.zeros_like(xa, shape=shape)
    for i in range(pa.shape[0]):
        y = y * xa + pa[i]
    return y


def _pad_front(a, n):
    jnp = _jnp()
    return jnp.concatenate([jnp.zeros((n - a.shape[0],), a.dtype), a]) if a.shape[0] < n \
        else a


def polyadd(a1, a2):
    """The sum of two polynomials (``jax.numpy.polyadd``), in their promoted dtype."""
    a, b = _coeffs("polyadd", a1, a2)
    n = max(a.shape[0], b.shape[0])
    return _pad_front(a, n) + _pad_front(b, n)


def polysub(a1, a2):
    """The difference of two polynomials (``jax.numpy.polysub``)."""
    a, b = _coeffs("polysub", a1, a2)
    n = max(a.shape[0], b.shape[0])
    return _pad_front(a, n) - _pad_front(b, n)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials (``jax.numpy.polymul``), inexact; with
    ``trim_leading_zeros`` (concrete input) leading zeros are removed first."""
    jnp = _jnp()
    a, b = _coeffs("polymul", a1, a2, inexact=True)
    if trim_leading_zeros:
        a, b = (_strip_leading_zeros("polymul", v) for v in (a, b))
    if a.shape[0] == 0 or b.shape[0] == 0:
        return jnp.zeros((0,), a.dtype)
    return jnp.convolve(a, b, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """The quotient and remainder of ``u / v`` (``jax.numpy.polydiv``), inexact; the
    remainder keeps ``u``'s length (leading zeros included), as JAX's."""
    jnp = _jnp()
    ua, va = _coeffs("polydiv", u, v, inexact=True)
    if trim_leading_zeros:
        ua, va = (_strip_leading_zeros("polydiv", x) for x in (ua, va))
    m, n = ua.shape[0], va.shape[0]
    k = max(m - n + 1, 1)
    q = jnp.zeros((k,), ua.dtype)
    rem = ua
    for i in range(m - n + 1):
        c = rem[i] / va[0]
        q = q.at[i].set(c)
        rem = rem.at[i:i + n].add(-c * va)
    return q, rem


def polyder(p, m: int = 1):
    """The ``m``-th derivative of a polynomial (``jax.numpy.polyder``), inexact.
    Raises ValueError for ``m < 0``."""
    jnp = _jnp()
    (pa,) = _coeffs("polyder", p, inexact=True)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    for _ in range(m):
        n = pa.shape[0]
        if n <= 1:
            return jnp.zeros((0,), pa.dtype)
        pa = pa[:-1] * jnp.arange(n - 1, 0, -1, dtype=pa.dtype)
    return pa


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of a polynomial (``jax.numpy.polyint``), inexact, with
    integration constants ``k`` (a scalar or ``m`` values, the first used first; default
    0). Raises ValueError for ``m < 0`` or a ``k`` of the wrong length."""
    jnp = _jnp()
    (pa,) = _coeffs("polyint", p, inexact=True)
    m = operator.index(m)
    if m < 0:
        raise ValueError(f"Order of integral must be positive (see polyder); got {m}")
    if m == 0:
        return pa
    kk = jnp.zeros((m,), pa.dtype) if k is None else \
        jnp.broadcast_to(jnp.asarray(k, dtype=pa.dtype), (m,)) if np.ndim(k) == 0 else \
        jnp.asarray(k, dtype=pa.dtype)
    if kk.shape != (m,):
        raise ValueError(f"k must be a scalar or a rank-1 array of length {m}; got "
                         f"{tuple(kk.shape)}")
    for i in range(m):
        n = pa.shape[0]
        pa = jnp.concatenate([pa / jnp.arange(n, 0, -1, dtype=pa.dtype), kk[i:i + 1]])
    return pa


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots, or of a square
    matrix's characteristic polynomial (``jax.numpy.poly``); inexact (complex for a
    matrix's eigenvalues).  A 0-d input is one root (``[1, -x]``).  Raises ValueError for
    other shapes."""
    check_arraylike("poly", seq_of_zeros)
    jnp = _jnp()
    z = ensure_array(seq_of_zeros)
    if z.ndim == 0:
        z = z.reshape(1)        # one root, as JAX (and NumPy's atleast_1d) read it
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] > 0:
        z = jnp.linalg.eigvals(z)
    elif z.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    (z,) = promote_dtypes_inexact(z)
    if z.shape[0] == 0:
        return jnp.ones((), z.dtype)
    a = jnp.ones((1,), z.dtype)
    for i in range(z.shape[0]):
        a = jnp.convolve(a, jnp.stack([jnp.ones((), z.dtype), -z[i]]), mode="full")
    return a


def roots(p, *, strip_zeros: bool = True):
    """The roots of a polynomial, as the eigenvalues of its companion matrix
    (``jax.numpy.roots``); complex. Leading zeros are stripped (concrete input) unless
    ``strip_zeros=False``, where they give NaN roots, as JAX's."""
    jnp = _jnp()
    (pa,) = _coeffs("roots", p, inexact=True)
    if strip_zeros:
        pa = _strip_leading_zeros("roots", pa)
    n = pa.shape[0]
    cdt = np.dtype(np.complex128 if dtypes.x64_enabled() and pa.dtype in (
        np.float64, np.complex128) else np.complex64)
    if n < 2:
        return jnp.zeros((0,), cdt)
    top = -pa[1:] / pa[0]
    comp = jnp.concatenate([top[None, :], jnp.eye(n - 2, n - 1, dtype=pa.dtype)], axis=0)
    return jnp.linalg.eigvals(comp).astype(cdt)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through the points ``(x, y)``
    (``jax.numpy.polyfit``): coefficients of shape ``(deg + 1,)`` (``(deg + 1, K)`` for
    ``y`` of shape ``(N, K)``), with weights ``w``. ``full=True`` also returns the
    residuals, rank, singular values and ``rcond``; ``cov=True`` (or ``'unscaled'``) the
    coefficients' covariance. Raises ValueError for a negative degree or inputs of the
    wrong rank or length."""
    check_arraylike("polyfit", x, y)
    jnp = _jnp()
    deg = operator.index(deg)
    xa, ya = promote_dtypes_inexact(ensure_array(x), ensure_array(y))
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xa.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if xa.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if ya.ndim < 1 or ya.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xa.shape[0] != ya.shape[0]:
        raise TypeError("expected x and y to have same length")
    order = deg + 1
    if rcond is None:
        rcond = xa.shape[0] * float(dtypes.finfo(xa.dtype).eps)
    lhs = jnp.vander(xa, order)
    rhs = ya
    if w is not None:
        check_arraylike("polyfit", w)
        (wa,) = promote_dtypes_inexact(ensure_array(w))
        if wa.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if wa.shape[0] != ya.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * wa[:, None]
        rhs = rhs * (wa if rhs.ndim == 1 else wa[:, None])
    scale = jnp.sqrt(jnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale[None, :]
    c, resids, rank, s = jnp.linalg.lstsq(lhs, rhs, rcond=rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, ensure_array(rcond)
    if cov:
        vbase = jnp.linalg.inv(lhs.T @ lhs) / jnp.outer(scale, scale)
        if cov == "unscaled":
            fac = 1
        else:
            if xa.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale "
                                 "the covariance matrix")
            fac = resids / (xa.shape[0] - order)
        if ya.ndim == 1:
            return c, vbase * fac
        return c, vbase[:, :, None] * fac
    return c


__all__ = public_names(globals())
