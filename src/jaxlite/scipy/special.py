"""``jaxlite.scipy.special``: special functions (``jax.scipy.special``).

Layer: public API, compositions of ``jaxlite.numpy`` / ``jaxlite.lax`` (so ``grad``, ``vmap``
and ``jit`` follow), with the functions that have no elementary form (``erfinv``,
``gammainc``, ``betainc``, ``zeta``, ``polygamma``, ``i0e``, ``ndtri`` ...) bound to the
primitives of ``primitives/special.py``.  Every function takes array-likes, promotes
integers and bools to the default float dtype (float32 unless x64 is enabled), keeps weak
types as JAX does, and broadcasts its operands by NumPy's rules.
"""
from __future__ import annotations

import functools
import math
import sys

import numpy as np

from .. import _traceback
from .. import lax
from .. import numpy as jnp
from ..nn import logsumexp as _nn_logsumexp
from ..nn import log_softmax as _nn_log_softmax
from ..nn import softmax as _nn_softmax
from ..numpy._ufuncs import _broadcast, _promote
from ..primitives import special as _sp
from ..transforms.autodiff import custom_jvp
from ._special_more import bessel_jn, sph_harm_y, wofz  # noqa: F401

__all__ = [
    "bernoulli", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma",
    "dawsn", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expn", "fresnel", "hyp1f1", "hyp2f1", "owens_t", "sici", "spence", "expit", "factorial", "gamma", "gammainc", "gammaincc",
    "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax",
    "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "poch", "polygamma",
    "rel_entr", "softmax", "xlog1py", "xlogy", "zeta", "bessel_jn", "sph_harm_y", "wofz",
]


def _inexact(name, *args):
    """``args`` promoted to their common inexact dtype and broadcast to one shape (rank-0
    operands may stay rank 0: the elementwise primitives broadcast them)."""
    args, _ = _promote(name, list(args), "inexact")
    return _broadcast(name, args)


def _where(c, x, y):
    return jnp.where(c, x, y)


# ---- error function and normal distribution ------------------------------------------------

def erf(x):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise
    (``jax.scipy.special.erf``).  Integers and bools promote to the default float dtype;
    complex input raises TypeError."""
    (x,) = _inexact("erf", x)
    return lax.erf(x)


def erfc(x):
    """The complementary error function ``1 - erf(x)``, accurate for large ``x``
    (``jax.scipy.special.erfc``); dtypes as ``erf``."""
    (x,) = _inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    """The inverse error function (``jax.scipy.special.erfinv``): NaN outside [-1, 1],
    +-inf at +-1.  Dtypes as ``erf``."""
    (x,) = _inexact("erfinv", x)
    return lax.erf_inv(x)


def ndtr(x):
    """The standard normal cumulative distribution ``(1 + erf(x/sqrt 2)) / 2``
    (``jax.scipy.special.ndtr``), computed from ``erfc`` in the tails so both keep their
    relative precision.  Dtypes as ``erf``."""
    (x,) = _strong(*_inexact("ndtr", x))
    z = lax.mul(x, _like(x, 1 / math.sqrt(2)))
    az = lax.abs(z)
    mid = lax.add(_like(x, 0.5), lax.mul(_like(x, 0.5), lax.erf(z)))
    upper = lax.sub(_like(x, 1.0), lax.mul(_like(x, 0.5), lax.erfc(z)))
    lower = lax.mul(_like(x, 0.5), lax.erfc(lax.neg(z)))
    tail = _where(lax.gt(z, _like(x, 0)), upper, lower)
    return _where(lax.lt(az, _like(x, 1 / math.sqrt(2))), mid, tail)


def ndtri(p):
    """The standard normal quantile, the inverse of ``ndtr`` (``jax.scipy.special.ndtri``):
    -inf at 0, +inf at 1, NaN outside [0, 1].  The result is strongly typed, as JAX's."""
    (p,) = _strong(*_inexact("ndtri", p))
    return _sp.ndtri_p.bind(p)


def _log_ndtr_value(x, series_order):
    dt = _dtype(x)
    upper, lower = (8.0, -20.0) if dt == np.float64 else (5.0, -10.0)
    # right tail: log(1 - ndtr(-x)) ~ -ndtr(-x); middle: log(ndtr(x)); left tail: the
    # asymptotic series of log(ndtr) in 1/x**2 (ndtr itself underflows there)
    right = lax.neg(ndtr(lax.neg(x)))
    middle = lax.log(ndtr(jnp.maximum(x, _like(x, lower))))
    xl = jnp.minimum(x, _like(x, lower))
    x2 = lax.mul(xl, xl)
    series, term, odd = _like(x, 1.0), _like(x, 1.0), 1
    for n in range(1, series_order + 1):
        term = lax.div(term, x2)
        series = lax.add(series, lax.mul(_like(x, (-1) ** n * odd), term))
        odd *= 2 * n + 1
    left = lax.add(lax.sub(lax.sub(lax.mul(_like(x, -0.5), x2), lax.log(lax.neg(xl))),
                           _like(x, 0.5 * math.log(2 * math.pi))), lax.log(series))
    return _where(lax.gt(x, _like(x, upper)), right,
                  _where(lax.gt(x, _like(x, lower)), middle, left))


@functools.lru_cache(maxsize=None)
def _log_ndtr_fn(series_order):
    """``log_ndtr`` of one series order, with its derivative rule: pdf(x) / ndtr(x),
    formed in logs so the left tail stays finite."""
    @custom_jvp
    def fn(x):
        return _log_ndtr_value(x, series_order)

    @fn.defjvp
    def fn_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        out = fn(x)
        d = lax.exp(lax.sub(lax.sub(lax.mul(_like(x, -0.5), lax.mul(x, x)), out),
                            _like(x, 0.5 * math.log(2 * math.pi))))
        return out, lax.mul(t, d)
    return fn


def log_ndtr(x, series_order=3):
    """``log(ndtr(x))``, accurate far into both tails (``jax.scipy.special.log_ndtr``):
    below -10 (float32; -20 for float64) the asymptotic series with ``series_order``
    terms (0 to 30).  ``x`` must be float32 or float64 (a Python float is taken as the
    default float dtype); other dtypes, integers included, raise TypeError, as JAX.
    Raises TypeError for a non-integer ``series_order``, ValueError outside 0..30.  The
    result is strongly typed."""
    if not isinstance(series_order, (int, np.integer)) or isinstance(series_order, bool):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    dt = np.dtype(jnp.result_type(x))
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"x.dtype={dt.name} is not supported.")
    x = lax.convert_element_type(jnp.asarray(x), dt)
    return _log_ndtr_fn(int(series_order))(x)


# ---- gamma family ---------------------------------------------------------------------------

def gammaln(x):
    """``log|Gamma(x)|`` (``jax.scipy.special.gammaln``): +inf at the poles (0 and the
    negative integers).  Dtypes as ``erf``."""
    (x,) = _inexact("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x):
    """The sign of ``Gamma(x)`` (``jax.scipy.special.gammasgn``): 1 for x > 0 and +0.0,
    -1 for -0.0, alternating between the negative poles, NaN at the poles, -inf and NaN."""
    (x,) = _strong(*_inexact("gammasgn", x))
    floor = lax.floor(x)
    odd = lax.ne(lax.rem(floor, _like(x, 2)), _like(x, 0))
    neg = _where(odd, _like(x, -1.0), _like(x, 1.0))
    out = _where(lax.gt(x, _like(x, 0)), _like(x, 1.0), neg)
    zero = lax.eq(x, _like(x, 0))
    out = _where(zero, _where(jnp.signbit(x), _like(x, -1.0), _like(x, 1.0)), out)
    pole = lax.bitwise_and(lax.lt(x, _like(x, 0)), lax.eq(x, floor))
    return _where(lax.bitwise_or(pole, lax.ne(x, x)), _like(x, np.nan), out)


def gamma(x):
    """The gamma function (``jax.scipy.special.gamma``): ``gammasgn(x) *
    exp(gammaln(x))``; +-inf at +-0, NaN at the negative poles.  Dtypes as ``erf``."""
    (x,) = _strong(*_inexact("gamma", x))
    return lax.mul(gammasgn(x), lax.exp(lax.lgamma(x)))


def loggamma(x):
    """``log(Gamma(x))`` for real ``x`` (``jax.scipy.special.loggamma``): ``gammaln`` for
    x > 0, NaN for x <= 0 (the complex logarithm's branch is not offered)."""
    (x,) = _inexact("loggamma", x)
    return _where(lax.gt(x, _like(x, 0)), lax.lgamma(x), _like(x, np.nan))


def digamma(x):
    """The digamma function ``d/dx log Gamma(x)`` (``jax.scipy.special.digamma``); NaN at
    the poles.  Dtypes as ``erf``."""
    (x,) = _inexact("digamma", x)
    return lax.digamma(x)


def polygamma(n, x):
    """The polygamma function of order ``n`` (``jax.scipy.special.polygamma``).  ``n``
    must be of integer dtype (ValueError otherwise, as JAX); it is differentiable in
    ``x`` only.  Result dtype: ``x``'s inexact dtype."""
    dt = jnp.result_type(n)
    if not jnp.issubdtype(dt, jnp.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{np.dtype(dt).name}.")
    n, x = _inexact("polygamma", n, x)
    return lax.polygamma(n, x)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a static integer):
    ``d (d-1)/4 log(pi) + sum_j gammaln(a - j/2)`` over j < d
    (``jax.scipy.special.multigammaln``).  Raises TypeError when ``d`` is not a concrete
    integer."""
    d = _concrete_int("multigammaln", d, "d")
    (a,) = _strong(*_inexact("multigammaln", a))
    dt = _dtype(a)
    terms = jnp.stack([lax.lgamma(lax.sub(a, _like(a, j / 2))) for j in range(d)]) \
        if d else jnp.zeros((0,) + jnp.shape(a), dt)
    const = jnp.asarray(d * (d - 1) / 4 * math.log(math.pi), dt)
    return lax.add(jnp.sum(terms, axis=0), const)


def factorial(n, exact=False):
    """``n! = Gamma(n + 1)`` for real ``n`` (``jax.scipy.special.factorial``), 0 for
    negative ``n``.  ``exact=True`` is not supported (ValueError, as JAX)."""
    if exact:
        raise ValueError("factorial with exact=True is not supported.")
    (n,) = _inexact("factorial", n)
    out = lax.exp(lax.lgamma(lax.add(n, _like(n, 1))))
    return _where(lax.lt(n, _like(n, 0)), _like(n, 0), out)


def poch(z, m):
    """The rising factorial ``Gamma(z + m) / Gamma(z)`` (``jax.scipy.special.poch``): 1
    for ``m == 0``; signs from ``gammasgn``."""
    z, m = _strong(*_inexact("poch", z, m))
    sign = lax.mul(gammasgn(lax.add(z, m)), gammasgn(z))
    out = lax.mul(sign, lax.exp(lax.sub(lax.lgamma(lax.add(z, m)), lax.lgamma(z))))
    return _where(lax.eq(m, _like(m, 0)), _like(z, 1.0), out)


def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``
    (``jax.scipy.special.gammainc``); differentiable in both operands.  Dtypes as
    ``erf``; operands broadcast."""
    a, x = _inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``
    (``jax.scipy.special.gammaincc``)."""
    a, x = _inexact("gammaincc", a, x)
    return lax.igammac(a, x)


def betaln(a, b):
    """``log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``
    (``jax.scipy.special.betaln``).  Dtypes as ``erf``; operands broadcast."""
    a, b = _inexact("betaln", a, b)
    return lax.sub(lax.add(lax.lgamma(a), lax.lgamma(b)), lax.lgamma(lax.add(a, b)))


def beta(a, b):
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)`` (``jax.scipy.special.beta``),
    with the sign from ``gammasgn``."""
    a, b = _strong(*_inexact("beta", a, b))
    sign = lax.mul(lax.mul(gammasgn(a), gammasgn(b)), gammasgn(lax.add(a, b)))
    return lax.mul(sign, lax.exp(betaln(a, b)))


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``
    (``jax.scipy.special.betainc``); differentiable in ``x`` only (ValueError for ``a``
    and ``b``, as JAX)."""
    a, b, x = _inexact("betainc", a, b, x)
    return _sp.regularized_incomplete_beta_p.bind(a, b, x)


# ---- zeta ---------------------------------------------------------------------------------

@custom_jvp
def _zeta(x, q):
    return lax.zeta(x, q)


@_zeta.defjvp
def _zeta_jvp(primals, tangents):
    x, q = primals
    tx, tq = tangents
    out = _zeta(x, q)
    dq = lax.mul(lax.neg(x), lax.zeta(lax.add(x, _like(x, 1)), q))
    t = lax.mul(tq, dq)
    return out, lax.add(t, lax.mul(tx, _sp.zeta_grad_x_p.bind(x, q)))


def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_n (n + q)**-x`` (``jax.scipy.special.zeta``);
    differentiable in both operands.  ``q=None`` (the Riemann zeta function) raises
    NotImplementedError, as JAX."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None "
                                  "to compute the Hurwitz Zeta function.")
    x, q = _inexact("zeta", x, q)
    return _zeta(x, q)


# ---- Bessel functions ----------------------------------------------------------------------

def i0e(x):
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0
    (``jax.scipy.special.i0e``)."""
    (x,) = _inexact("i0e", x)
    return lax.bessel_i0e(x)


def i1e(x):
    """``exp(-|x|) I1(x)`` (``jax.scipy.special.i1e``)."""
    (x,) = _inexact("i1e", x)
    return lax.bessel_i1e(x)


def i0(x):
    """The modified Bessel function of order 0, ``exp(|x|) i0e(x)``
    (``jax.scipy.special.i0``)."""
    (x,) = _inexact("i0", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1(x):
    """The modified Bessel function of order 1, ``exp(|x|) i1e(x)``
    (``jax.scipy.special.i1``)."""
    (x,) = _inexact("i1", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


# ---- logs, entropies, logistic -------------------------------------------------------------

@custom_jvp
def _xlogy(x, y):
    safe_y = _where(lax.eq(x, _like(x, 0)), _like(y, 1), y)
    return _where(lax.eq(x, _like(x, 0)), _like(x, 0), lax.mul(x, lax.log(safe_y)))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return _xlogy(x, y), lax.add(lax.mul(tx, lax.log(y)), lax.mul(ty, lax.div(x, y)))


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (even for y = 0 or NaN... only x = 0 counts)
    (``jax.scipy.special.xlogy``); the derivatives are ``log(y)`` and ``x / y``.
    Operands promote to a common inexact dtype and broadcast."""
    x, y = _inexact("xlogy", x, y)
    return _xlogy(x, y)


@custom_jvp
def _xlog1py(x, y):
    safe_y = _where(lax.eq(x, _like(x, 0)), _like(y, 0), y)
    return _where(lax.eq(x, _like(x, 0)), _like(x, 0), lax.mul(x, lax.log1p(safe_y)))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return _xlog1py(x, y), lax.add(lax.mul(tx, lax.log1p(y)),
                                   lax.mul(ty, lax.div(x, lax.add(y, _like(y, 1)))))


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` (``jax.scipy.special.xlog1py``)."""
    x, y = _inexact("xlog1py", x, y)
    return _xlog1py(x, y)


def entr(x):
    """The elementwise entropy ``-x log(x)`` (``jax.scipy.special.entr``): -0.0 at 0,
    -inf for negative ``x``."""
    (x,) = _inexact("entr", x)
    return _where(lax.lt(x, _like(x, 0)), _like(x, -np.inf), lax.neg(_xlogy(x, x)))


def rel_entr(p, q):
    """``p log(p/q)`` for p, q > 0 (as ``p log p - p log q``, so ``p = inf`` gives NaN as
    in JAX); 0 for p = 0, q >= 0; +inf otherwise, NaN included
    (``jax.scipy.special.rel_entr``)."""
    p, q = _inexact("rel_entr", p, q)
    both = lax.bitwise_and(lax.gt(p, _like(p, 0)), lax.gt(q, _like(q, 0)))
    safe_p = _where(both, p, _like(p, 1))
    safe_q = _where(both, q, _like(q, 1))
    val = lax.sub(lax.mul(safe_p, lax.log(safe_p)), lax.mul(safe_p, lax.log(safe_q)))
    zero = lax.bitwise_and(lax.eq(p, _like(p, 0)), lax.ge(q, _like(q, 0)))
    return _where(both, val, _where(zero, _like(p, 0), _like(p, np.inf)))


def kl_div(p, q):
    """``rel_entr(p, q) - p + q`` (``jax.scipy.special.kl_div``): ``q`` for p = 0,
    q >= 0; +inf for other non-positive operands; NaN where either is NaN."""
    p, q = _inexact("kl_div", p, q)
    return lax.add(lax.sub(rel_entr(p, q), p), q)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``jax.scipy.special.expit``)."""
    (x,) = _inexact("expit", x)
    return lax.logistic(x)


def logit(x):
    """The log-odds ``log(x / (1 - x))`` (``jax.scipy.special.logit``): -inf at 0, +inf
    at 1, NaN outside [0, 1]."""
    (x,) = _inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(_like(x, 1), x)))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a), axis))`` without overflow (``jax.scipy.special.logsumexp``;
    the same function as ``jaxlite.nn.logsumexp``)."""
    return _nn_logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                         where=where)


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x), axis)`` (``jax.scipy.special.softmax``): unlike
    ``jax.nn.softmax`` the default ``axis=None`` normalises over every axis."""
    return _nn_softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x, axis, keepdims=True)`` (``jax.scipy.special.log_softmax``);
    ``axis=None`` normalises over every axis."""
    return _nn_log_softmax(x, axis=axis)


# ---- exponential integrals and relatives -------------------------------------------------

def erfcx(x):
    """The scaled complementary error function ``exp(x**2) erfc(x)``, finite where
    ``erfc`` underflows (``jax.scipy.special.erfcx``)."""
    (x,) = _inexact("erfcx", x)
    return _sp.erfcx_p.bind(x)


def dawsn(x):
    """Dawson's integral ``exp(-x**2) integral_0^x exp(t**2) dt``
    (``jax.scipy.special.dawsn``)."""
    (x,) = _inexact("dawsn", x)
    return _sp.dawsn_p.bind(x)


def exp1(x):
    """The exponential integral ``E1(x) = integral_x^inf exp(-t)/t dt``: +inf at 0, NaN
    for x < 0 and at +inf, as JAX (``jax.scipy.special.exp1``)."""
    (x,) = _inexact("exp1", x)
    return _sp.exp1_p.bind(x)


def expi(x):
    """The exponential integral ``Ei(x)``: NaN at 0 and at +-inf, as JAX
    (``jax.scipy.special.expi``)."""
    (x,) = _inexact("expi", x)
    return _sp.expi_p.bind(x)


def spence(x):
    """Spence's function ``integral_1^x log(t)/(1 - t) dt`` for x >= 0; NaN below 0 and
    at +inf (``jax.scipy.special.spence``).  Its derivative is ``log(x)/(1 - x)`` (JAX's
    is NaN: see README's known differences)."""
    (x,) = _inexact("spence", x)
    return _sp.spence_p.bind(x)


def expn(n, x):
    """The generalized exponential integral ``E_n(x) = integral_1^inf exp(-x t)/t**n dt``
    for integer-valued orders ``n >= 0`` (NaN for others) (``jax.scipy.special.expn``):
    NaN for x < 0 and at +inf.  Differentiable in ``x`` (the order's derivative is 0, as
    JAX's).  At x = 0 with n >= 2 the value is ``1/(n-1)`` (JAX gives ``1/n``)."""
    n, x = _inexact("expn", n, x)
    return _sp.expn_p.bind(n, x)


def owens_t(h, a):
    """Owen's T function ``T(h, a) = integral_0^a exp(-h**2 (1+t**2)/2) / (2 pi (1+t**2))
    dt`` (``jax.scipy.special.owens_t``); differentiable in both operands."""
    h, a = _inexact("owens_t", h, a)
    return _sp.owens_t_p.bind(h, a)


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function ``1F1(a; b; x)``
    (``jax.scipy.special.hyp1f1``); differentiable in all three operands (in ``a`` and
    ``b`` numerically).  For a non-positive integer ``b`` the value is SciPy's (JAX's
    series gives arbitrary signs or values there)."""
    a, b, x = _inexact("hyp1f1", a, b, x)
    return _sp.hyp1f1_p.bind(a, b, x)


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function ``2F1(a, b; c; x)``
    (``jax.scipy.special.hyp2f1``): NaN from ``x = 1`` on, as JAX; for x < -1 SciPy's
    analytic continuation (JAX's series diverges there).  Differentiable in all four
    operands (in the parameters numerically)."""
    a, b, c, x = _inexact("hyp2f1", a, b, c, x)
    return _sp.hyp2f1_p.bind(a, b, c, x)


def sici(x):
    """The sine and cosine integrals ``(Si(x), Ci(x))``, ``Si = integral_0^x sin(t)/t dt``
    and ``Ci = gamma + log|x| + integral_0^x (cos(t) - 1)/t dt``
    (``jax.scipy.special.sici``): a tuple of two arrays, strongly typed as JAX's."""
    (x,) = _strong(*_inexact("sici", x))
    return _sp.sici_si_p.bind(x), _sp.sici_ci_p.bind(x)


def fresnel(x):
    """The Fresnel integrals ``(S(x), C(x))`` with kernels ``sin(pi t**2 / 2)`` and
    ``cos(pi t**2 / 2)`` (``jax.scipy.special.fresnel``): a tuple of two arrays."""
    (x,) = _inexact("fresnel", x)
    return _sp.fresnel_s_p.bind(x), _sp.fresnel_c_p.bind(x)


# ---- combinatorics and transforms ----------------------------------------------------------

def comb(N, k, *, repetition=False):
    """The binomial coefficient ``N choose k`` for real operands (``exact`` is not
    offered, as JAX's ``jax.scipy.special.comb``), from log-gammas; 0 outside
    ``0 <= k <= N``.  ``repetition=True`` counts with replacement:
    ``comb(N + k - 1, k)``."""
    N, k = _inexact("comb", N, k)
    if repetition:
        N = lax.sub(lax.add(N, k), _like(N, 1))
    val = lax.exp(lax.sub(lax.lgamma(lax.add(N, _like(N, 1))),
                          lax.add(lax.lgamma(lax.add(k, _like(k, 1))),
                                  lax.lgamma(lax.add(lax.sub(N, k), _like(N, 1))))))
    ok = lax.bitwise_and(lax.ge(k, _like(k, 0)), lax.le(k, N))
    return _where(ok, val, _like(N, 0))


def boxcox(x, lmbda):
    """The Box-Cox transform ``(x**lmbda - 1) / lmbda``, ``log(x)`` at ``lmbda == 0``
    (``jax.scipy.special.boxcox``)."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    return boxcox1p(lax.sub(x, _like(x, 1)), lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of ``1 + x``: ``((1+x)**lmbda - 1) / lmbda``, ``log1p(x)``
    at ``lmbda == 0`` (``jax.scipy.special.boxcox1p``)."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    zero = lax.eq(lmbda, _like(lmbda, 0))
    safe = _where(zero, _like(lmbda, 1), lmbda)
    val = lax.div(lax.expm1(lax.mul(safe, lax.log1p(x))), safe)
    return _where(zero, lax.log1p(x), val)


def bernoulli(n):
    """The Bernoulli numbers ``B_0 .. B_n`` as a float array of length ``n + 1``
    (``jax.scipy.special.bernoulli``; B_1 = -1/2).  ``n`` must be a concrete
    non-negative integer (TypeError / ValueError otherwise)."""
    n = _concrete_int("bernoulli", n, "n")
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    from fractions import Fraction
    # the recurrence sum_{j<=m} C(m+1, j) B_j = 0 in exact rationals
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
    return jnp.asarray(np.array([float(v) for v in b]), dtype=jnp.result_type(float))


# ---- helpers --------------------------------------------------------------------------------

def _strong(*xs):
    """``xs`` strongly typed (the functions whose JAX results are never weakly typed)."""
    return [lax.convert_element_type(x, _dtype(x)) for x in xs]


def _dtype(x):
    return jnp.result_type(x)


def _weak(x):
    aval = getattr(x, "aval", None)
    return bool(aval is not None and aval.weak_type) or type(x) in (int, float)


def _like(x, v):
    """The constant ``v`` as a rank-0 value of ``x``'s dtype and weak type (JAX writes such
    constants as Python scalars, which keep a weakly typed operand weak)."""
    dt = _dtype(x)
    if _weak(x):
        return lax._convert(np.array(v, dt), dt, True)
    return np.array(v, dt)


def _concrete_int(name, v, what):
    try:
        out = int(v)
    except Exception:
        raise TypeError(f"{name}: {what} must be a concrete integer, got {v!r}") from None
    if out != v:
        raise TypeError(f"{name}: {what} must be an integer, got {v!r}")
    return out


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
