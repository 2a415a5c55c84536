"""``bessel_jn``, ``sph_harm_y`` and ``wofz`` of ``jaxlite.scipy.special``.

Layer: public API, compositions of ``jaxlite.numpy`` / ``jaxlite.lax`` only, so ``jit``,
``vmap`` and ``grad`` follow.  Each mirrors the algorithm family JAX uses (Miller's
backward recurrence, the fully normalised associated Legendre recurrence, Weideman's
rational approximation), so values agree with JAX's to rounding, including where that
algorithm is itself inexact; the differences are listed in README's known differences.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._ufuncs import _promote
from ..errors import ConcretizationTypeError
from ..transforms.autodiff import custom_jvp

__all__ = ["bessel_jn", "sph_harm_y", "wofz"]


# ---- Bessel functions of the first kind, integer orders ---------------------------------

def bessel_jn(z, *, v, n_iter=50):
    """The Bessel functions of the first kind ``J_0(z) .. J_v(z)`` for real ``z``
    (``jax.scipy.special.bessel_jn``).

    Miller's backward recurrence ``J_{k-1} = (2k/z) J_k - J_{k+1}``, started at order
    ``n_iter + 1`` and normalised by ``J_0 + 2 (J_2 + J_4 + ...) = 1``; ``n_iter`` must
    exceed both ``v`` and ``|z|`` by a margin for accurate values (JAX's rule of thumb).
    The running values are rescaled by powers of two, so float32 does not overflow for
    small ``|z|`` (JAX's float32 result is NaN there); z = 0 gives 1, 0, 0 ... and
    ``+-inf`` gives 0.

    Args:
      z: array-like of real values (integers promote to the default float dtype).
      v: the largest order, a concrete Python integer (TypeError otherwise).
      n_iter: the number of recurrence steps, a concrete integer >= 0.

    Returns:
      An array of shape ``(min(v, n_iter) + 1,) + z.shape`` (empty for v < 0) of z's
      inexact dtype, strongly typed.

    Raises:
      TypeError for complex ``z`` or a non-integer ``v``; TypeError (n_iter < -1) or
      IndexError (n_iter == -1) as JAX.
    """
    v = operator.index(v)
    n_iter = int(n_iter)
    if n_iter == -1:
        raise IndexError("bessel_jn: n_iter=-1 leaves no recurrence step (index out of "
                         "bounds)")
    if n_iter < -1:
        raise TypeError(f"bessel_jn: n_iter must be non-negative, got {n_iter}")
    (z,), dt = _promote("bessel_jn", [jnp.asarray(z)], "inexact")
    if np.dtype(dt).kind == "c":
        raise TypeError(f"bessel_jn: complex input is not supported, got z of dtype "
                        f"{np.dtype(dt).name}.")
    z = lax.convert_element_type(z, dt)
    top = min(v, n_iter)
    if top < 0:
        return jnp.zeros((0,) + z.shape, dt)

    zero = lax.eq(z, _c(dt, 0))
    inf = lax.eq(lax.abs(z), _c(dt, np.inf))
    zs = jnp.where(zero, _c(dt, 1), z)
    f0 = jnp.zeros(z.shape, dt)
    # JAX's starting value; float16 cannot hold it (its result is NaN), so 1 there
    start = 1e-16 if float(np.finfo(dt).tiny) < 1e-16 else 1.0
    f1 = jnp.full(z.shape, start, dt)
    bs = jnp.zeros(z.shape, dt)
    s = jnp.zeros(z.shape, np.int32)      # the power of two taken out so far
    kept = {}
    for k in range(n_iter, -1, -1):
        f = lax.sub(lax.div(lax.mul(_c(dt, 2.0 * (k + 1)), f1), zs), f0)
        if k % 2 == 0:
            bs = lax.add(bs, lax.mul(_c(dt, 2.0), f))
        if k <= top:
            kept[k] = (f, s)
        f0, f1 = f1, f
        if k:
            # exact power-of-two rescaling keeps f1 in [0.5, 1): no overflow, no rounding
            _, e = jnp.frexp(lax.stop_gradient(f1))
            scale = lax.stop_gradient(jnp.ldexp(jnp.ones(z.shape, dt), lax.neg(e)))
            f0, f1, bs = lax.mul(f0, scale), lax.mul(f1, scale), lax.mul(bs, scale)
            s = lax.add(s, e)
    norm = lax.sub(bs, kept[0][0])
    f = jnp.stack([kept[k][0] for k in range(top + 1)])
    sk = jnp.stack([kept[k][1] for k in range(top + 1)])
    # each order back to the final scale (2**(sk - s) <= 1; it underflows to 0 harmlessly)
    rel = lax.stop_gradient(jnp.ldexp(jnp.ones(f.shape, dt), lax.sub(sk, s[None])))
    out = lax.div(lax.mul(f, rel), norm[None])
    exact = jnp.asarray(np.eye(top + 1, 1, dtype=dt).reshape((top + 1,) + (1,) * z.ndim))
    out = jnp.where(zero[None], exact, out)
    return jnp.where(inf[None], _c(dt, 0.0), out)


def _c(dt, v):
    return np.array(v, dt)


# ---- spherical harmonics -----------------------------------------------------------------

def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonics ``Y_n^m(theta, phi)`` with the Condon-Shortley phase,
    orthonormal on the sphere (``jax.scipy.special.sph_harm_y``): ``theta`` is the polar
    angle in [0, pi], ``phi`` the azimuth.

    Args:
      n, m: integer arrays of degrees and orders, one-dimensional (``len(n)`` values are
        returned); ``|m| <= n`` is assumed (for ``|m| > n`` the value is 0, as the
        associated Legendre function's), negative ``n`` counts from the end of the table
        and indices past ``n_max`` are clipped to it, as JAX's gather.
      theta: a one-dimensional array (or a scalar, used for every element); an element
        ``i`` beyond its length uses its last entry.
      phi: broadcasts with the result.
      diff_n: must be None (NotImplementedError otherwise, as JAX).
      n_max: the largest degree, a concrete integer; defaults to ``max(n)``, which needs
        a concrete ``n`` (under ``jit`` pass ``n_max``).

    Returns:
      A complex array (complex64, or complex128 for float64 angles) of shape
      ``len(n)`` broadcast with ``m`` and ``phi``.

    Raises:
      NotImplementedError for ``diff_n``; TypeError for a scalar ``n``, a list ``m``,
      ``theta`` or ``phi``, a non-integer ``n`` or a traced ``max(n)`` without ``n_max``
      (ConcretizationTypeError); ValueError for an empty ``n`` or a theta of rank > 1.
    """
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jaxlite.scipy.special.sph_harm_y is not supported.")
    for name, a in (("m", m), ("theta", theta), ("phi", phi)):
        if isinstance(a, (list, tuple)):
            raise TypeError(f"sph_harm_y: {name} must be an array or scalar, got "
                            f"{type(a).__name__}.")
    if jnp.isscalar(theta):
        theta = jnp.reshape(jnp.asarray(theta), (1,))
    if n_max is None:
        try:
            n_max = np.max(np.asarray(n))
        except ValueError:
            raise
        except Exception:
            raise ConcretizationTypeError(
                n, "sph_harm_y: the `n_max` argument must be given statically to use "
                "sph_harm_y under a transformation (max(n) is traced).") from None
    try:
        n_max = int(n_max)
    except Exception:
        raise ConcretizationTypeError(
            n_max, "sph_harm_y: the `n_max` argument must be a concrete integer.") from None
    return _sph_harm(jnp.asarray(n), jnp.asarray(m), jnp.asarray(theta), phi, n_max)


@functools.lru_cache(maxsize=None)
def _legendre_coeffs(n_max):
    """The recurrence ``P_l^m = a x P_{l-1}^m - b P_{l-2}^m`` of the fully normalised
    associated Legendre functions, as float64 tables indexed [l, m] (zero where m >= l),
    and the diagonal factors ``P_m^m = d_m (1 - x**2)**(m/2)``."""
    size = n_max + 1
    a = np.zeros((size, size))
    b = np.zeros((size, size))
    for l in range(1, size):
        for mm in range(l):
            a[l, mm] = math.sqrt((4.0 * l * l - 1) / (l * l - mm * mm))
            b[l, mm] = math.sqrt((2 * l + 1) * ((l - 1) ** 2 - mm * mm)
                                 / ((2 * l - 3) * (l * l - mm * mm))) if l >= 2 else 0.0
    d = np.empty(size)
    d[0] = 0.5 / math.sqrt(math.pi)
    for mm in range(1, size):
        d[mm] = -d[mm - 1] * math.sqrt(1.0 + 0.5 / mm)
    return a, b, d


def _legendre_table(n_max, x):
    """``P[l, m, i]``: the fully normalised associated Legendre function of degree l and
    order m at ``x[i]``, including ``1/sqrt(4 pi)`` and the Condon-Shortley phase (0 for
    m > l)."""
    dt = jnp.result_type(x)
    a, b, d = _legendre_coeffs(n_max)
    size = n_max + 1
    sin = lax.sqrt(lax.sub(_c(dt, 1.0), lax.mul(x, x)))
    powers = [jnp.ones(x.shape, dt)]
    for _ in range(n_max):
        powers.append(lax.mul(powers[-1], sin))
    diag = jnp.stack(powers) * jnp.asarray(d.astype(dt))[:, None]          # [m, i]
    eye = np.eye(size, dtype=bool)
    rows = []
    prev2 = jnp.zeros((size,) + x.shape, dt)
    prev = jnp.where(eye[0][:, None], diag, _c(dt, 0.0))                    # l = 0
    rows.append(prev)
    for l in range(1, size):
        al = jnp.asarray(a[l].astype(dt))[:, None]
        bl = jnp.asarray(b[l].astype(dt))[:, None]
        rec = lax.sub(lax.mul(al, lax.mul(prev, x[None, :])), lax.mul(bl, prev2))
        row = jnp.where(eye[l][:, None], diag, rec)
        prev2, prev = prev, row
        rows.append(row)  # noqa: JL005 (every degree's row is part of the result table)
    return jnp.stack(rows)                                                  # [l, m, i]


def _sph_harm(n, m, theta, phi, n_max):
    if not jnp.issubdtype(n.dtype, jnp.integer) or not jnp.issubdtype(m.dtype, jnp.integer):
        raise TypeError(f"sph_harm_y: n and m must have integer dtypes, got "
                        f"{n.dtype} and {m.dtype}.")
    if n.ndim == 0:
        raise TypeError("sph_harm_y: len() of unsized object: n must be one-dimensional.")
    if theta.ndim != 1:
        raise ValueError(f"sph_harm_y: theta must be one-dimensional (or a scalar), got "
                         f"shape {theta.shape}.")
    x = jnp.cos(theta)
    table = _legendre_table(n_max, x)
    size = n_max + 1
    am = jnp.abs(m)
    # JAX's gather: negative indices count from the end, then every index is clipped
    ni = jnp.clip(jnp.where(n < 0, n + size, n), 0, n_max)
    mi = jnp.clip(am, 0, n_max)
    ii = jnp.clip(jnp.arange(n.shape[0]), 0, x.shape[0] - 1)
    val = table[ni, mi, ii]
    angle = am * phi
    re = val * jnp.cos(angle)
    im = val * jnp.sin(angle)
    dt = jnp.result_type(re, im)
    out = lax.complex(lax.convert_element_type(re, dt), lax.convert_element_type(im, dt))
    sign = jnp.where(am % 2 == 1, -1.0, 1.0).astype(out.dtype)
    return jnp.where(m < 0, sign * jnp.conjugate(out), out)


# ---- the Faddeeva function --------------------------------------------------------------

_WEIDEMAN_N = 32


@functools.lru_cache(maxsize=None)
def _weideman():
    """Weideman's (1994) expansion of ``w`` in powers of ``Z = (L + iz)/(L - iz)``:
    the constant ``L`` and the polynomial's coefficients, highest degree first, from the
    Fourier coefficients of ``exp(-t**2) (L**2 + t**2)`` on ``t = L tan(theta/2)``."""
    n = _WEIDEMAN_N
    big_m = 2 * n
    ell = math.sqrt(n / math.sqrt(2.0))
    k = np.arange(-big_m + 1, big_m)
    t = ell * np.tan(k * math.pi / big_m / 2)
    f = np.concatenate([[0.0], np.exp(-t * t) * (ell * ell + t * t)])
    coef = np.real(np.fft.fftshift(np.fft.fft(np.fft.fftshift(f)))) / (2 * big_m)
    # the coefficients of Z**0 .. Z**(n-1) are the frequencies 1 .. n (index big_m is 0)
    return ell, coef[big_m + 1:big_m + n + 1][::-1].copy()


def _w_upper(z):
    """``w(z)`` for Im z >= 0 by Weideman's rational approximation."""
    dt = z.dtype
    ell, coef = _weideman()
    iz = lax.complex(lax.neg(lax.imag(z)), lax.real(z))
    den = lax.sub(_c(dt, ell), iz)
    big_z = lax.div(lax.add(_c(dt, ell), iz), den)
    p = jnp.full(z.shape, coef[0], dt)
    for c in coef[1:]:
        p = lax.add(lax.mul(p, big_z), _c(dt, c))
    return lax.add(lax.div(lax.mul(_c(dt, 2.0), p), lax.mul(den, den)),
                   lax.div(_c(dt, 1 / math.sqrt(math.pi)), den))


@custom_jvp
def _wofz(z):
    dt = z.dtype
    upper = lax.ge(lax.imag(z), np.array(0, np.finfo(dt).dtype))
    zu = jnp.where(upper, z, lax.neg(z))
    w = _w_upper(zu)
    # the reflection w(-z) = 2 exp(-z**2) - w(z) for the lower half plane
    lower = lax.sub(lax.mul(_c(dt, 2.0), lax.exp(lax.neg(lax.mul(z, z)))), w)
    return jnp.where(upper, w, lower)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    (z,), (t,) = primals, tangents
    w = _wofz(z)
    dt = z.dtype
    d = lax.add(lax.mul(lax.mul(_c(dt, -2.0), z), w), _c(dt, 2j / math.sqrt(math.pi)))
    return w, lax.mul(t, d)


def wofz(z):
    """The Faddeeva function ``w(z) = exp(-z**2) erfc(-i z)``
    (``jax.scipy.special.wofz``), by Weideman's 32-term rational approximation in the
    upper half plane and the reflection ``w(z) = 2 exp(-z**2) - w(-z)`` below it (which
    overflows far into the lower half plane, as JAX's).

    Args:
      z: array-like, real or complex.

    Returns:
      A strongly typed complex array of z's shape: complex64, or complex128 for float64 /
      complex128 input (with x64 enabled).  Differentiable (``w' = -2 z w + 2i/sqrt(pi)``).
    """
    (z,), dt = _promote("wofz", [z], "inexact")
    cdt = np.dtype(np.complex128) if np.dtype(dt) in (np.dtype(np.float64),
                                                      np.dtype(np.complex128)) \
        else np.dtype(np.complex64)
    z = lax.convert_element_type(jnp.asarray(z), cdt)
    return _wofz(z)
