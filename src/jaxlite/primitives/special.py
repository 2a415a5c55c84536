"""Special-function primitives (``jax.lax``'s ``erf_inv``, ``igamma``, ``zeta`` ...): one
declaration each, with abstract evaluation, implementation, JVP and batching rules.

Layer: primitives.  These functions have no closed form in the elementwise primitives, so
each is an opaque elementwise kernel: the implementation calls SciPy's special functions in
float64 and rounds to the operands' dtype (float16/bfloat16 included, computed wider as XLA
does on CPU).  Operands are floating, share one dtype and one shape (rank-0 operands
broadcast); ``jaxlite.lax`` and ``jaxlite.scipy.special`` promote before binding.  Values at
special points (poles, infinities, out-of-domain arguments) follow JAX's, which sometimes
differ from SciPy's; each such fix is commented where it is made.  The primitives are not
fused by the compiler (no scalar op): they run their implementation under jit too.
"""
from __future__ import annotations

import math

import numpy as np


class _LazySciPySpecial:
    """``scipy.special``, imported on first use (it costs ~65 ms, more than the rest of
    ``import jaxlite`` is allowed to grow)."""

    def __getattr__(self, name):
        import scipy.special
        return getattr(scipy.special, name)


_sp = _LazySciPySpecial()

from ..core import sharding_rules as _sr
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import broadcast_shapes_elementwise, check_dtypes, check_same_dtypes


def _special_aval(name):
    def rule(*avals, **params):
        check_dtypes(name, avals, "f")
        check_same_dtypes(name, avals)
        shape = broadcast_shapes_elementwise(name, avals)
        return ShapedArray(shape, avals[0].dtype, all(a.weak_type for a in avals))
    return rule


def _in_float64(fn):
    """``fn`` run on float64 copies of the operands, its result rounded to their dtype."""
    def impl(*xs, **params):
        dt = np.asarray(xs[0]).dtype
        wide = [np.asarray(x, np.float64) for x in xs]
        if len({w.shape for w in wide}) > 1:
            # operands broadcast (rank 0, size-1 dimensions): the functions below may
            # reshape their operands, so they get them at the result's shape
            wide = np.broadcast_arrays(*wide)
        with np.errstate(all="ignore"):
            out = fn(*wide, **params)
        return np.asarray(out, np.float64).astype(dt)
    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


def special(name, fn):
    """Declares the elementwise special-function primitive ``name`` computed by ``fn``."""
    # kind "other": an opaque SciPy kernel with no scalar form, so never fused into a
    # native elementwise kernel (an "elementwise" primitive must have a scalar op); it
    # still batches and shards like an elementwise one
    p = Primitive(name, abstract_eval=_special_aval(name), impl=_in_float64(fn),
                  flops=lambda *avals, **p: max((a.size for a in avals), default=0),
                  sharding=_sr.elementwise)
    _DECLARED.append(p)
    return p


_DECLARED: list = []


# ---- implementations (float64 in, float64 out) ------------------------------------------

def _igamma_edges(a, x, out, at_zero_a, at_inf):
    """JAX's values where its series/continued fraction meet an edge (a, x >= 0):
    ``a == 0`` gives NaN below ``x = 1`` (and at x = 0) and ``at_zero_a`` from there;
    ``a = inf`` gives ``1 - at_inf`` below ``x = 1``, ``at_inf`` at ``x = inf`` and NaN
    between; negative or NaN operands give NaN."""
    out = np.where(a == 0, np.where(x < 1, np.nan, at_zero_a), out)
    out = np.where(a == np.inf, np.where(x < 1, 1 - at_inf,
                                         np.where(x == np.inf, at_inf, np.nan)), out)
    return np.where((a < 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)


def _igamma(a, x):
    out = _igamma_edges(a, x, _sp.gammainc(a, x), 1.0, 1.0)
    # XLA's igamma is NaN at a == 0 for every x < 1 but its complement is 0 there for x > 0
    return out


def _igammac(a, x):
    out = _igamma_edges(a, x, _sp.gammaincc(a, x), 0.0, 0.0)
    return np.where((a == 0) & (x > 0), 0.0, out)


def _igamma_dx(a, x):
    """d/dx P(a, x) = x**(a-1) e**-x / Gamma(a), in logs so large a and x do not overflow."""
    return np.exp(_sp.xlogy(a - 1, x) - x - _sp.gammaln(a))


def _igamma_grad_a(a, x):
    """d/da P(a, x): Richardson-extrapolated central differences in float64 (step a/1000;
    truncation error ~1e-12, rounding ~1e-13 relative), of P or of -Q, whichever is the
    smaller (so the tails, P near 1 or Q near 1e-30, keep their relative precision)."""
    h = np.abs(a) * 1e-3
    use_q = _sp.gammaincc(a, x) < 0.5

    def d(step):
        lo, hi = np.maximum(a - step, 0.0), a + step
        dp = _sp.gammainc(hi, x) - _sp.gammainc(lo, x)
        dq = _sp.gammaincc(lo, x) - _sp.gammaincc(hi, x)
        return np.where(use_q, dq, dp) / (hi - lo)
    out = (4 * d(h / 2) - d(h)) / 3
    out = np.where(x == 0, 0.0, out)
    out = np.where((x == np.inf) | ((a == np.inf) & (x != 0)), np.nan, out)
    return np.where((a <= 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)


def _rgg_lower_series(a, x, terms=400):
    """-(dP/da) / (dP/dx) from P's power series, for x below a (where both derivatives
    may underflow): -x sum_n x**n (log x - psi(a+n+1)) / (a (a+1) ... (a+n))."""
    total = np.zeros_like(x)
    c = 1.0 / a
    for n in range(terms):
        total = total + c * (np.log(x) - _sp.digamma(a + n + 1))
        c = c * x / (a + n + 1)
    return -x * total


def _rgg_upper_quadrature(a, x):
    """The same ratio from the upper tail, for x far above a: with t = x + s,
    integral_0^inf (1 + s/x)**(a-1) (log(x + s) - psi(a)) e**-s ds (Gauss-Laguerre)."""
    s, w = np.polynomial.laguerre.laggauss(60)
    s, w = s[:, None], w[:, None]
    xf, af = x.reshape(1, -1), a.reshape(1, -1)
    vals = np.exp((af - 1) * np.log1p(s / xf)) * (np.log(xf + s) - _sp.digamma(af))
    return (w * vals).sum(0).reshape(x.shape)


def _random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample ``x`` with respect to ``a`` at fixed
    quantile: -(dP/da) / (dP/dx); where both underflow, P's series (x < a) or an
    integral over the upper tail.  0 at x = 0, NaN at x = inf and for a <= 0, as JAX."""
    a, x = np.broadcast_arrays(a, x)
    out = np.array(-_igamma_grad_a(a, x) / _igamma_dx(a, x), np.float64)
    redo = ~np.isfinite(out) & (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    if redo.any():
        lo = redo & (x < a)
        hi = redo & ~lo
        if lo.any():
            out[lo] = _rgg_lower_series(a[lo], x[lo])
        if hi.any():
            out[hi] = _rgg_upper_quadrature(a[hi], x[hi])
    return np.where(x == 0, np.where(a > 0, 0.0, np.nan), out)


def _betainc(a, b, x):
    # SciPy gives NaN outside 0 <= x <= 1 and for non-positive a or b, as JAX
    return _sp.betainc(a, b, x)


def _is_int(v):
    return v == np.floor(v)


def _zeta(x, q):
    """SciPy's Hurwitz zeta with XLA's special values: at a pole of the terms (q a
    non-positive integer, -inf included) +inf for an even integer x and NaN otherwise;
    NaN for x < 1, for q <= 0 with a non-integer x, and at x or q = +inf; +inf at x = 1."""
    out = _sp.zeta(x, q)
    pole = (q <= 0) & _is_int(q)
    even = _is_int(x) & _is_int(x / 2) & np.isfinite(x)
    out = np.where((x < 1) | (x == np.inf) | (q == np.inf) | ((q <= 0) & ~_is_int(x)),
                   np.nan, out)
    out = np.where(pole, np.where(even, np.inf, np.nan), out)
    return np.where(x == 1, np.inf, out)


def _zeta_grad_x(x, q):
    """d/dx zeta(x, q): Richardson-extrapolated central differences of SciPy's zeta in
    float64 (step x/10**4), NaN wherever zeta itself is not finite."""
    h = np.maximum(np.abs(x), 1.0) * 1e-4

    def d(step):
        return (_sp.zeta(x + step, q) - _sp.zeta(x - step, q)) / (2 * step)
    out = (4 * d(h / 2) - d(h)) / 3
    return np.where(np.isfinite(_zeta(x, q)), out, np.nan)


def _polygamma(m, x):
    """SciPy's polygamma with JAX's special values: NaN for an order that is not a
    non-negative integer (SciPy needs integers); at the poles (x a non-positive integer,
    -inf included) +inf for odd orders and NaN for even ones; at x = +inf, +inf for the
    order 0 and NaN above."""
    ok = (m >= 0) & _is_int(m) & np.isfinite(m)
    mi = np.where(ok, m, 0).astype(np.int64)
    out = _sp.polygamma(mi, x)
    pole = (x <= 0) & _is_int(x)
    out = np.where(pole, np.where(mi % 2 == 1, np.inf, np.nan), out)
    out = np.where(x == np.inf, np.where(mi == 0, np.inf, np.nan), out)
    return np.where(ok, out, np.nan)


# ---- the table ----------------------------------------------------------------------------

erf_inv_p = special("erf_inv", lambda x: _sp.erfinv(x))
bessel_i0e_p = special("bessel_i0e", lambda x: _sp.i0e(x))
bessel_i1e_p = special("bessel_i1e", lambda x: _sp.i1e(x))
igamma_p = special("igamma", _igamma)
igammac_p = special("igammac", _igammac)
igamma_grad_a_p = special("igamma_grad_a", _igamma_grad_a)
random_gamma_grad_p = special("random_gamma_grad", _random_gamma_grad)
regularized_incomplete_beta_p = special("regularized_incomplete_beta", _betainc)
zeta_p = special("zeta", _zeta)
polygamma_p = special("polygamma", _polygamma)
# d/dx of zeta (JAX's lax.zeta has no derivative; jax.scipy.special.zeta's custom JVP
# has one in x too)
zeta_grad_x_p = special("zeta_grad_x", _zeta_grad_x)
# not lax primitives in JAX (jax.scipy.special composes them), opaque kernels here: the
# normal quantile and its cumulative's logarithm keep full precision in the tails that a
# composition of erf/erfc loses in float32
ndtri_p = special("ndtri", lambda p: _sp.ndtri(p))
# jax.scipy.special's functions without a lax primitive, opaque here too (JAX composes
# them from series and continued fractions); values at the edges are JAX's
erfcx_p = special("erfcx", lambda x: _sp.erfcx(x))
dawsn_p = special("dawsn", lambda x: _sp.dawsn(x))
# exp1: NaN at +inf and for x < 0 (SciPy: 0 and NaN)
exp1_p = special("exp1", lambda x: np.where(x == np.inf, np.nan, _sp.exp1(x)))
# expi: NaN at 0 and at +-inf (SciPy: -inf, +inf and -0.0)
expi_p = special("expi", lambda x: np.where((x == 0) | np.isinf(x), np.nan, _sp.expi(x)))
# spence: NaN at +inf (SciPy: -inf)
spence_p = special("spence", lambda x: np.where(x == np.inf, np.nan, _sp.spence(x)))


def _expn(n, x):
    """E_n(x) for integer orders n >= 0 (NaN for others); at x = 0 JAX's +-inf for n = 0
    (the sign of the zero) and SciPy's 1/(n-1) above; NaN at +inf, as JAX."""
    ok = (n >= 0) & _is_int(n) & np.isfinite(n)
    out = _sp.expn(np.where(ok, n, 0).astype(np.int64), x)
    out = np.where((n == 0) & (x == 0), np.copysign(np.inf, x), out)
    return np.where(ok & (x != np.inf), out, np.nan)


expn_p = special("expn", _expn)


def _richardson(fn, args, argnum):
    """d fn / d args[argnum] by Richardson-extrapolated central differences in float64
    (step 1e-4 relative; error ~1e-10 relative where fn is smooth)."""
    v = args[argnum]
    h = np.maximum(np.abs(v), 1.0) * 1e-4

    def d(step):
        hi = list(args)
        lo = list(args)
        hi[argnum], lo[argnum] = v + step, v - step
        return (fn(*hi) - fn(*lo)) / (2 * step)
    return (4 * d(h / 2) - d(h)) / 3


def _hyp2f1(a, b, c, x):
    # JAX's series: NaN from x = 1 on (SciPy: +-inf or a continuation)
    return np.where(x >= 1, np.nan, _sp.hyp2f1(a, b, c, x))


# the sine/cosine and Fresnel integrals, one primitive per output; the odd ones keep the
# zero's sign (JAX's si(-0.0) is -0.0, SciPy's +0.0)
sici_si_p = special("sici_si", lambda x: np.where(x == 0, x, _sp.sici(x)[0]))
sici_ci_p = special("sici_ci", lambda x: _sp.sici(x)[1])
fresnel_s_p = special("fresnel_s", lambda x: np.where(x == 0, x, _sp.fresnel(x)[0]))
fresnel_c_p = special("fresnel_c", lambda x: np.where(x == 0, x, _sp.fresnel(x)[1]))
hyp1f1_p = special("hyp1f1", lambda a, b, x: _sp.hyp1f1(a, b, x))
hyp2f1_p = special("hyp2f1", _hyp2f1)
# their derivatives in the parameters (no closed form): numerical, one primitive each,
# ``argnum`` naming the parameter
hyp1f1_grad_p = special("hyp1f1_grad",
                        lambda a, b, x, argnum: _richardson(_sp.hyp1f1, (a, b, x), argnum))
hyp2f1_grad_p = special("hyp2f1_grad",
                        lambda a, b, c, x, argnum: _richardson(_hyp2f1, (a, b, c, x), argnum))
# Owen's T: odd in a, so T(h, -0.0) is -0.0 as in JAX (SciPy gives +0.0)
owens_t_p = special("owens_t", lambda h, a: np.where(a == 0, a * 0.0, _sp.owens_t(h, a)))


# ---- JVP rules (binds only, so they differentiate again and work under every trace) -------

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402
from . import elementwise as _e  # noqa: E402


def _c(x, v):
    return np.array(v, get_aval(x).dtype)


def _shaped(v, *xs):
    """``v`` broadcast to the shape an elementwise op of ``xs`` has."""
    shape = broadcast_shapes_elementwise("rule", [get_aval(x) for x in xs])
    return _e._full_like(v, shape)


mul, add, sub, div, neg = _e.mul, _e.add, _e.sub, _e.div, _e.neg
exp, log = _e.exp_p.bind, _e.log_p.bind


def _no_derivative(name, arg, error=ValueError):
    def rule(g, *primals, **params):
        raise error(f"{name}: differentiation with respect to {arg} is not supported "
                    f"(as in JAX)")
    return rule


# erf_inv' = sqrt(pi)/2 * exp(erf_inv(x)**2)
ad.defjvp2(erf_inv_p, lambda g, ans, x: mul(_e._c(x, math.sqrt(math.pi) / 2),
                                            mul(g, exp(_e.square_p.bind(ans)))))
# i0e' = i1e - sign(x) i0e
ad.defjvp2(bessel_i0e_p, lambda g, ans, x: mul(g, sub(bessel_i1e_p.bind(x),
                                                      mul(_e.sign_p.bind(x), ans))))


def _i1e_jvp(g, ans, x):
    # i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2
    zero = _e.eq_p.bind(x, _c(x, 0))
    safe = _e.select_n_p.bind(zero, x, _shaped(_c(x, 1), x))
    d = sub(bessel_i0e_p.bind(x), mul(ans, add(_e.sign_p.bind(x), div(_c(x, 1), safe))))
    return mul(g, _e.select_n_p.bind(zero, d, _shaped(_c(x, 0.5), x)))


ad.defjvp2(bessel_i1e_p, _i1e_jvp)


def _igamma_dx_expr(a, x):
    lg = _e.lgamma_p.bind(a)
    # xlogy(a - 1, x): 0 where a == 1 (so x = 0 gives e**0 / Gamma(1) = 1, not NaN)
    am1 = sub(a, _c(a, 1))
    t = mul(am1, log(x))
    t = _e.select_n_p.bind(_e.eq_p.bind(_shaped(am1, a, x), _c(a, 0)), t,
                           _shaped(_c(x, 0), a, x))
    return exp(sub(sub(t, x), lg))


ad.defjvp(igamma_p, lambda g, a, x: mul(g, igamma_grad_a_p.bind(a, x)),
          lambda g, a, x: mul(g, _igamma_dx_expr(a, x)))
ad.defjvp(igammac_p, lambda g, a, x: neg(mul(g, igamma_grad_a_p.bind(a, x))),
          lambda g, a, x: neg(mul(g, _igamma_dx_expr(a, x))))
ad.defjvp(igamma_grad_a_p, _no_derivative("igamma_grad_a", "a", NotImplementedError),
          _no_derivative("igamma_grad_a", "x", NotImplementedError))
ad.defjvp(random_gamma_grad_p, _no_derivative("random_gamma_grad", "a"),
          _no_derivative("random_gamma_grad", "x"))


def _betainc_dx(g, a, b, x):
    # x**(a-1) (1-x)**(b-1) / B(a, b), in logs
    lbeta = sub(add(_e.lgamma_p.bind(a), _e.lgamma_p.bind(b)),
                _e.lgamma_p.bind(add(a, b)))
    t = add(mul(sub(a, _c(a, 1)), log(x)), mul(sub(b, _c(b, 1)), _e.log1p_p.bind(neg(x))))
    return mul(g, exp(sub(t, lbeta)))


ad.defjvp(regularized_incomplete_beta_p,
          _no_derivative("betainc", "a and b"), _no_derivative("betainc", "a and b"),
          _betainc_dx)
ad.defjvp(zeta_p, _no_derivative("zeta", "x", NotImplementedError),
          _no_derivative("zeta", "q", NotImplementedError))
ad.defjvp(zeta_grad_x_p, _no_derivative("zeta_grad_x", "x", NotImplementedError),
          _no_derivative("zeta_grad_x", "q", NotImplementedError))
ad.defjvp(polygamma_p, _no_derivative("polygamma", "m"),
          lambda g, m, x: mul(g, polygamma_p.bind(add(m, _c(m, 1)), x)))
# ndtri' = sqrt(2 pi) exp(ndtri(p)**2 / 2)
ad.defjvp2(ndtri_p, lambda g, ans, p: mul(g, mul(_c(p, math.sqrt(2 * math.pi)),
                                                exp(mul(_c(p, 0.5), mul(ans, ans))))))


# erfcx' = 2x erfcx(x) - 2/sqrt(pi); dawsn' = 1 - 2x dawsn(x); E1' = -e**-x / x;
# Ei' = e**x / x; spence(x)' = log(x) / (1 - x) (JAX's own derivative of spence is NaN)
ad.defjvp2(erfcx_p, lambda g, ans, x: mul(g, sub(mul(mul(_c(x, 2), x), ans),
                                                 _c(x, 2 / math.sqrt(math.pi)))))
ad.defjvp2(dawsn_p, lambda g, ans, x: mul(g, sub(_c(x, 1), mul(mul(_c(x, 2), x), ans))))
ad.defjvp(exp1_p, lambda g, x: mul(g, neg(div(exp(neg(x)), x))))
ad.defjvp(expi_p, lambda g, x: mul(g, div(exp(x), x)))
ad.defjvp(spence_p, lambda g, x: mul(g, div(log(x), sub(_c(x, 1), x))))


# dE_n/dx = -E_{n-1}; the order has a zero derivative (JAX's too)
ad.defjvp(expn_p, None, lambda g, n, x: mul(g, neg(expn_p.bind(sub(n, _c(n, 1)), x))))


def _owens_t_dh(g, h, a):
    # -phi(h) erf(a h / sqrt 2) / 2
    phi = mul(_c(h, 1 / math.sqrt(2 * math.pi)), exp(mul(_c(h, -0.5), mul(h, h))))
    return mul(g, mul(_c(h, -0.5), mul(phi, _e.erf_p.bind(mul(_c(h, 1 / math.sqrt(2)),
                                                              mul(a, h))))))


def _owens_t_da(g, h, a):
    # exp(-h**2 (1 + a**2) / 2) / (2 pi (1 + a**2))
    s1 = add(_c(a, 1), mul(a, a))
    return mul(g, div(exp(mul(_c(h, -0.5), mul(mul(h, h), s1))), mul(_c(a, 2 * math.pi), s1)))


ad.defjvp(owens_t_p, _owens_t_dh, _owens_t_da)


def _sinc_like(trig):
    def rule(g, x):
        # trig(x) / x, with the limit 1 (sin) at 0 where it is finite
        zero = _e.eq_p.bind(x, _c(x, 0))
        safe = _e.select_n_p.bind(zero, x, _shaped(_c(x, 1), x))
        d = div(trig(x), safe)
        if trig is _e.sin_p.bind:
            d = _e.select_n_p.bind(zero, d, _shaped(_c(x, 1), x))
        return mul(g, d)
    return rule


ad.defjvp(sici_si_p, _sinc_like(_e.sin_p.bind))
ad.defjvp(sici_ci_p, lambda g, x: mul(g, div(_e.cos_p.bind(x), x)))
ad.defjvp(fresnel_s_p, lambda g, x: mul(g, _e.sin_p.bind(mul(_c(x, math.pi / 2), mul(x, x)))))
ad.defjvp(fresnel_c_p, lambda g, x: mul(g, _e.cos_p.bind(mul(_c(x, math.pi / 2), mul(x, x)))))


# d/dx 1F1(a; b; x) = a/b 1F1(a+1; b+1; x); d/dx 2F1(a, b; c; x) = ab/c 2F1(a+1, b+1;
# c+1; x); the parameters' derivatives are numerical (hyp1f1_grad / hyp2f1_grad)
def _hyp_param(prim, i):
    return lambda g, *args: mul(g, prim.bind(*args, argnum=i))


def _hyp1f1_dx(g, a, b, x):
    one = _c(a, 1)
    return mul(g, mul(div(a, b), hyp1f1_p.bind(add(a, one), add(b, one), x)))


def _hyp2f1_dx(g, a, b, c, x):
    one = _c(a, 1)
    return mul(g, mul(div(mul(a, b), c), hyp2f1_p.bind(add(a, one), add(b, one),
                                                       add(c, one), x)))


ad.defjvp(hyp1f1_p, _hyp_param(hyp1f1_grad_p, 0), _hyp_param(hyp1f1_grad_p, 1), _hyp1f1_dx)
ad.defjvp(hyp2f1_p, _hyp_param(hyp2f1_grad_p, 0), _hyp_param(hyp2f1_grad_p, 1),
          _hyp_param(hyp2f1_grad_p, 2), _hyp2f1_dx)
for _gp in (hyp1f1_grad_p, hyp2f1_grad_p):
    ad.defjvp(_gp, *[_no_derivative(_gp.name, "its operands", NotImplementedError)] * 4)


for _p in _DECLARED:
    batching.elementwise_batcher(_p)


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# The functions CHLO has an operation for; XLA expands each into polynomial and series
# arithmetic when it compiles.  Some others are written below as jaxlite programs; the
# rest are not lowered (tests/test_pjrt_lowering.py lists them).

from . import _lowering as _lo  # noqa: E402

erf_inv_p.lowering = _lo.elementwise("chlo.erf_inv")
bessel_i1e_p.lowering = _lo.elementwise("chlo.bessel_i1e")
zeta_p.lowering = _lo.elementwise("chlo.zeta")
polygamma_p.lowering = _lo.elementwise("chlo.polygamma")


# bessel_i0e and ndtri written with jaxlite's primitives (no CHLO operation computes them),
# in the operand's precision, float16/bfloat16 in float32; lowered like any program.

def _i0e_program(x):
    """exp(-|x|) I0(x): the power series sum_k (x^2/4)^k / (k!)^2 in Horner form below
    |x| = 20, the asymptotic expansion exp(-x) I0(x) ~ (1 + 1/(8x) + 9/(2 (8x)^2) + ...)
    / sqrt(2 pi x) above."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype

    def c(v):
        return np.asarray(v, dt)
    ax = e.abs_p.bind(x)
    small = e.lt_p.bind(ax, c(20.0))
    xs = e.select_n_p.bind(small, c(1.0), ax)          # the series' operand (tame)
    y = e.mul_p.bind(e.mul_p.bind(xs, xs), c(0.25))
    t = c(1.0)
    for k in range(45, 0, -1):
        t = e.add_p.bind(c(1.0), e.mul_p.bind(t, e.div_p.bind(y, c(float(k * k)))))
    series = e.mul_p.bind(e.exp_p.bind(e.neg_p.bind(xs)), t)
    xl = e.select_n_p.bind(small, ax, c(20.0))          # the expansion's operand
    inv8x = e.div_p.bind(c(1.0), e.mul_p.bind(c(8.0), xl))
    term, acc = c(1.0), c(1.0)
    for k in range(1, 12):
        term = e.mul_p.bind(term, e.mul_p.bind(inv8x, c((2 * k - 1) ** 2 / k)))
        acc = e.add_p.bind(acc, term)
    asym = e.mul_p.bind(acc, e.rsqrt_p.bind(e.mul_p.bind(c(2 * math.pi), xl)))
    return e.select_n_p.bind(small, asym, series)


def _log_ndtr_program(x):
    """log Phi(x) for x <= 0: log(erfc(-x / sqrt 2) / 2) down to x = -5, below it
    -x^2/2 - log sqrt(2 pi) + log R(-x) with the Mills ratio R by its continued fraction
    (no underflow); and R(-x) = Phi(x) / phi(x) itself, for Newton's steps."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype

    def c(v):
        return np.asarray(v, dt)
    near = e.gt_p.bind(x, c(-5.0))
    xn = e.select_n_p.bind(near, c(-5.0), x)
    phi_c = e.mul_p.bind(c(0.5), e.erfc_p.bind(e.mul_p.bind(e.neg_p.bind(xn),
                                                             c(1 / math.sqrt(2)))))
    log_near = e.log_p.bind(phi_c)
    pdf_near = e.mul_p.bind(c(1 / math.sqrt(2 * math.pi)),
                            e.exp_p.bind(e.mul_p.bind(c(-0.5), e.mul_p.bind(xn, xn))))
    r_near = e.div_p.bind(phi_c, pdf_near)
    z = e.neg_p.bind(e.select_n_p.bind(near, x, c(-5.0)))         # z >= 5
    cf = z
    for k in range(40, 0, -1):
        cf = e.add_p.bind(z, e.div_p.bind(c(float(k)), cf))
    r_far = e.div_p.bind(c(1.0), cf)
    log_far = e.add_p.bind(e.sub_p.bind(e.mul_p.bind(c(-0.5), e.mul_p.bind(z, z)),
                                        c(0.5 * math.log(2 * math.pi))), e.log_p.bind(r_far))
    return (e.select_n_p.bind(near, log_far, log_near), e.select_n_p.bind(near, r_far, r_near))


def _ndtri_program(p):
    """The standard normal quantile: sqrt(2) erf_inv(2p - 1) for 0.075 <= p <= 0.925; in
    the tails x = -sqrt(-2 log q) for q = min(p, 1 - p), refined by Newton's method on
    log Phi(x) = log q (three steps), mirrored for p > 1/2."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(p).dtype

    def c(v):
        return np.asarray(v, dt)
    central = e.and_p.bind(e.ge_p.bind(p, c(0.075)), e.le_p.bind(p, c(0.925)))
    mid = e.mul_p.bind(c(math.sqrt(2)), erf_inv_p.bind(e.sub_p.bind(e.mul_p.bind(c(2.0), p),
                                                                      c(1.0))))
    upper = e.gt_p.bind(p, c(0.5))
    q = e.select_n_p.bind(upper, p, e.sub_p.bind(c(1.0), p))
    qs = e.select_n_p.bind(e.and_p.bind(e.gt_p.bind(q, c(0.0)), e.lt_p.bind(q, c(0.5))),
                           c(0.01), q)                       # a tame operand elsewhere
    logq = e.log_p.bind(qs)
    x = e.neg_p.bind(e.sqrt_p.bind(e.mul_p.bind(c(-2.0), logq)))
    for _ in range(4):
        lphi, ratio = _log_ndtr_program(x)
        x = e.sub_p.bind(x, e.mul_p.bind(e.sub_p.bind(lphi, logq), ratio))
    tail = e.select_n_p.bind(upper, x, e.neg_p.bind(x))
    out = e.select_n_p.bind(central, tail, mid)
    # the ends and outside: -inf at 0, +inf at 1, NaN beyond (NaN stays NaN)
    out = e.select_n_p.bind(e.eq_p.bind(p, c(0.0)), out, c(-np.inf))
    out = e.select_n_p.bind(e.eq_p.bind(p, c(1.0)), out, c(np.inf))
    bad = e.or_p.bind(e.or_p.bind(e.lt_p.bind(p, c(0.0)), e.gt_p.bind(p, c(1.0))),
                      e.ne_p.bind(p, p))
    return e.select_n_p.bind(bad, out, c(np.nan))


def _program_lowering(program):
    def rule(ctx, *xs):
        out = ctx.avals_out[0]
        xs = [ctx.broadcast(x, out.shape) for x in xs]
        if out.dtype in _HALF_TYPES:
            xs = [ctx.convert(x, np.float32) for x in xs]
        return ctx.convert(ctx.lower_fun(program, *xs), out.dtype)
    return rule


import ml_dtypes as _ml  # noqa: E402

_HALF_TYPES = (np.dtype(np.float16), np.dtype(_ml.bfloat16))
bessel_i0e_p.lowering = _program_lowering(_i0e_program)
ndtri_p.lowering = _program_lowering(_ndtri_program)


def _igamma_program(a, x, complement):
    """The regularized incomplete gamma function P(a, x) (or Q = 1 - P): the power series
    of P where x <= 1 or x <= a, the continued fraction of Q (Lentz's method) elsewhere,
    each a ``while`` loop until every element's next term is below the epsilon of the
    dtype (at most 2000 terms); both scaled by exp(a log x - x - lgamma(a)).  The
    implementation's values at the edges (a = 0 or inf, x = 0 or inf, negative or NaN)."""
    from . import elementwise as e
    from .reduction import reduce_or_p
    from .linalg import _while_loop
    from ..core.trace import get_aval
    av = get_aval(x)
    dt = av.dtype
    axes = tuple(range(av.ndim))
    eps = float(np.finfo(dt).eps)
    tiny = float(np.finfo(dt).tiny) * 1e4

    def c(v):
        return np.asarray(v, dt)

    def full(v):
        return np.full(av.shape, v, dt)

    def anyof(b):
        return reduce_or_p.bind(b, axes=axes) if axes else b

    series = e.or_p.bind(e.le_p.bind(x, c(1.0)), e.le_p.bind(x, a))
    # series: sum_n x^n / (a (a+1) ... (a+n)), tame operands where it is not used
    sa = e.select_n_p.bind(series, full(1.0), a)
    sx = e.select_n_p.bind(series, full(0.5), x)
    term0 = e.div_p.bind(c(1.0), sa)

    def s_more(n, term, total):
        big = e.gt_p.bind(e.abs_p.bind(term), e.mul_p.bind(e.abs_p.bind(total), c(eps)))
        return e.and_p.bind(e.lt_p.bind(n, np.int32(2000)), anyof(big))

    def s_step(n, term, total):
        nf = e.convert_element_type_p.bind(n, new_dtype=dt, weak_type=False)
        term = e.mul_p.bind(term, e.div_p.bind(sx, e.add_p.bind(sa, nf)))
        return [e.add_p.bind(n, np.int32(1)), term, e.add_p.bind(total, term)]

    _, _, ssum = _while_loop(s_more, s_step, [np.int32(1), term0, term0])
    # continued fraction of Q
    ca = e.select_n_p.bind(series, a, full(1.0))
    cx = e.select_n_p.bind(series, x, full(2.0))
    b0 = e.sub_p.bind(e.add_p.bind(cx, c(1.0)), ca)
    d0 = e.div_p.bind(c(1.0), b0)

    def clamp_small(v):
        return e.select_n_p.bind(e.lt_p.bind(e.abs_p.bind(v), c(tiny)), v, full(tiny))

    def c_more(i, b, cc, d, h, delta):
        off = e.gt_p.bind(e.abs_p.bind(e.sub_p.bind(delta, c(1.0))), c(eps))
        return e.and_p.bind(e.lt_p.bind(i, np.int32(2000)), anyof(off))

    def c_step(i, b, cc, d, h, delta):
        fi = e.convert_element_type_p.bind(i, new_dtype=dt, weak_type=False)
        an = e.neg_p.bind(e.mul_p.bind(fi, e.sub_p.bind(fi, ca)))
        b = e.add_p.bind(b, c(2.0))
        d = clamp_small(e.add_p.bind(e.mul_p.bind(an, d), b))
        cc = clamp_small(e.add_p.bind(b, e.div_p.bind(an, cc)))
        d = e.div_p.bind(c(1.0), d)
        delta = e.mul_p.bind(d, cc)
        return [e.add_p.bind(i, np.int32(1)), b, cc, d, e.mul_p.bind(h, delta), delta]

    outs = _while_loop(c_more, c_step, [np.int32(1), b0, full(1 / tiny), d0, d0, full(2.0)])
    cfrac = outs[4]
    logx = e.log_p.bind(x)
    scale = e.exp_p.bind(e.sub_p.bind(e.sub_p.bind(e.mul_p.bind(a, logx), x),
                                      lgamma_p.bind(a)))
    p_series = e.mul_p.bind(scale, ssum)
    q_frac = e.mul_p.bind(scale, cfrac)
    if complement:
        out = e.select_n_p.bind(series, q_frac, e.sub_p.bind(c(1.0), p_series))
        at_inf, at_zero_a = 0.0, 0.0
        at_x0 = 1.0
    else:
        out = e.select_n_p.bind(series, e.sub_p.bind(c(1.0), q_frac), p_series)
        at_inf, at_zero_a = 1.0, 1.0
        at_x0 = 0.0
    out = e.select_n_p.bind(e.eq_p.bind(x, c(0.0)), out, full(at_x0))
    out = e.select_n_p.bind(e.eq_p.bind(x, c(np.inf)), out, full(at_inf))
    # the implementation's edges: a == 0, a == inf, negative or NaN operands
    a0 = e.eq_p.bind(a, c(0.0))
    x_lt1 = e.lt_p.bind(x, c(1.0))
    zero_a = e.select_n_p.bind(x_lt1, full(at_zero_a), full(np.nan))
    if complement:      # its complement is 0 at a == 0 for every x > 0
        zero_a = e.select_n_p.bind(e.gt_p.bind(x, c(0.0)), zero_a, full(0.0))
    out = e.select_n_p.bind(a0, out, zero_a)
    inf_a = e.select_n_p.bind(x_lt1, e.select_n_p.bind(e.eq_p.bind(x, c(np.inf)), full(np.nan),
                                                       full(at_inf)), full(1.0 - at_inf))
    out = e.select_n_p.bind(e.eq_p.bind(a, c(np.inf)), out, inf_a)
    bad = e.or_p.bind(e.or_p.bind(e.lt_p.bind(a, c(0.0)), e.lt_p.bind(x, c(0.0))),
                      e.or_p.bind(e.ne_p.bind(a, a), e.ne_p.bind(x, x)))
    return e.select_n_p.bind(bad, out, full(np.nan))


from .elementwise import lgamma_p  # noqa: E402

igamma_p.lowering = _program_lowering(lambda a, x: _igamma_program(a, x, False))
igammac_p.lowering = _program_lowering(lambda a, x: _igamma_program(a, x, True))


def _betainc_program(a, b, x):
    """The regularized incomplete beta function I_x(a, b): its continued fraction
    (Lentz's method, a ``while`` loop until every element's factor is within the dtype's
    epsilon of 1, at most 2000 steps), on (b, a, 1 - x) with I = 1 - I' where x is past
    the mean (a + 1) / (a + b + 2), scaled by x^a (1 - x)^b / (a B(a, b)); 0 at x = 0, 1
    at x = 1, a step where a or b is 0, NaN outside 0 <= x <= 1, for negative a or b and
    for NaN, as the implementation (SciPy)."""
    from . import elementwise as e
    from .reduction import reduce_or_p
    from .linalg import _while_loop
    from ..core.trace import get_aval
    av = get_aval(x)
    dt = av.dtype
    axes = tuple(range(av.ndim))
    eps = float(np.finfo(dt).eps)
    tiny = float(np.finfo(dt).tiny) * 1e4

    def c(v):
        return np.asarray(v, dt)

    def full(v):
        return np.full(av.shape, v, dt)

    inside = e.and_p.bind(e.and_p.bind(e.gt_p.bind(x, c(0.0)), e.lt_p.bind(x, c(1.0))),
                          e.and_p.bind(e.gt_p.bind(a, c(0.0)), e.gt_p.bind(b, c(0.0))))
    inside = e.and_p.bind(inside, e.and_p.bind(e.lt_p.bind(a, c(np.inf)),
                                               e.lt_p.bind(b, c(np.inf))))
    a_ = e.select_n_p.bind(inside, full(1.0), a)          # tame operands elsewhere
    b_ = e.select_n_p.bind(inside, full(1.0), b)
    x_ = e.select_n_p.bind(inside, full(0.5), x)
    swap = e.gt_p.bind(x_, e.div_p.bind(e.add_p.bind(a_, c(1.0)),
                                        e.add_p.bind(e.add_p.bind(a_, b_), c(2.0))))
    pa = e.select_n_p.bind(swap, a_, b_)
    pb = e.select_n_p.bind(swap, b_, a_)
    px = e.select_n_p.bind(swap, x_, e.sub_p.bind(c(1.0), x_))
    lx, l1x = e.log_p.bind(x_), e.log1p_p.bind(e.neg_p.bind(x_))
    lpx = e.select_n_p.bind(swap, lx, l1x)
    lp1x = e.select_n_p.bind(swap, l1x, lx)
    lbeta = e.sub_p.bind(e.add_p.bind(lgamma_p.bind(pa), lgamma_p.bind(pb)),
                         lgamma_p.bind(e.add_p.bind(pa, pb)))
    front = e.div_p.bind(e.exp_p.bind(e.sub_p.bind(
        e.add_p.bind(e.mul_p.bind(pa, lpx), e.mul_p.bind(pb, lp1x)), lbeta)), pa)

    def clamp_small(v):
        return e.select_n_p.bind(e.lt_p.bind(e.abs_p.bind(v), c(tiny)), v, full(tiny))

    def lentz(aa, cc, d):
        d = clamp_small(e.add_p.bind(c(1.0), e.mul_p.bind(aa, d)))
        cc = clamp_small(e.add_p.bind(c(1.0), e.div_p.bind(aa, cc)))
        return cc, e.div_p.bind(c(1.0), d)

    apb = e.add_p.bind(pa, pb)
    d0 = e.div_p.bind(c(1.0), clamp_small(e.sub_p.bind(
        c(1.0), e.div_p.bind(e.mul_p.bind(apb, px), e.add_p.bind(pa, c(1.0))))))

    def more(m, cc, d, h, delta):
        off = e.gt_p.bind(e.abs_p.bind(e.sub_p.bind(delta, c(1.0))), c(eps))
        anyoff = reduce_or_p.bind(off, axes=axes) if axes else off
        return e.and_p.bind(e.lt_p.bind(m, np.int32(2000)), anyoff)

    def step(m, cc, d, h, delta):
        fm = e.convert_element_type_p.bind(m, new_dtype=dt, weak_type=False)
        m2 = e.mul_p.bind(c(2.0), fm)
        am2 = e.add_p.bind(pa, m2)
        even = e.div_p.bind(e.mul_p.bind(e.mul_p.bind(fm, e.sub_p.bind(pb, fm)), px),
                            e.mul_p.bind(e.sub_p.bind(am2, c(1.0)), am2))
        cc, d = lentz(even, cc, d)
        h = e.mul_p.bind(h, e.mul_p.bind(d, cc))
        odd = e.neg_p.bind(e.div_p.bind(
            e.mul_p.bind(e.mul_p.bind(e.add_p.bind(pa, fm), e.add_p.bind(apb, fm)), px),
            e.mul_p.bind(am2, e.add_p.bind(am2, c(1.0)))))
        cc, d = lentz(odd, cc, d)
        delta = e.mul_p.bind(d, cc)
        return [e.add_p.bind(m, np.int32(1)), cc, d, e.mul_p.bind(h, delta), delta]

    outs = _while_loop(more, step, [np.int32(1), full(1.0), d0, d0, full(2.0)])
    val = e.mul_p.bind(front, outs[3])
    val = e.select_n_p.bind(swap, val, e.sub_p.bind(c(1.0), val))
    ab_ok = e.and_p.bind(e.gt_p.bind(a, c(0.0)), e.gt_p.bind(b, c(0.0)))
    out = e.select_n_p.bind(inside, full(np.nan), val)
    out = e.select_n_p.bind(e.and_p.bind(ab_ok, e.eq_p.bind(x, c(0.0))), out, full(0.0))
    out = e.select_n_p.bind(e.and_p.bind(ab_ok, e.eq_p.bind(x, c(1.0))), out, full(1.0))
    # a point mass: at 0 when a == 0 < b (I is 1 for x > 0), at 1 when b == 0 < a
    in01 = e.and_p.bind(e.ge_p.bind(x, c(0.0)), e.le_p.bind(x, c(1.0)))
    at0 = e.and_p.bind(in01, e.and_p.bind(e.eq_p.bind(a, c(0.0)), e.gt_p.bind(b, c(0.0))))
    out = e.select_n_p.bind(at0, out, e.select_n_p.bind(e.eq_p.bind(x, c(0.0)), full(1.0),
                                                         full(0.0)))
    at1 = e.and_p.bind(in01, e.and_p.bind(e.eq_p.bind(b, c(0.0)), e.gt_p.bind(a, c(0.0))))
    return e.select_n_p.bind(at1, out, e.select_n_p.bind(e.eq_p.bind(x, c(1.0)), full(0.0),
                                                         full(1.0)))


regularized_incomplete_beta_p.lowering = _program_lowering(_betainc_program)


def _igamma_grad_a_program(a, x):
    """d/da P(a, x): forward-mode differentiation of the igamma program above (through
    its loops), the implementation's edges (0 at x = 0, NaN at x = inf or a = inf and for
    a <= 0, negative or NaN operands)."""
    from . import elementwise as e
    from ..core import ad
    from ..core.trace import get_aval
    dt = get_aval(x).dtype
    _, (dp,) = ad.jvp_flat(lambda v: [_igamma_program(v, x, False)], [a],
                           [np.ones(get_aval(a).shape, dt)])
    full = lambda v: np.full(get_aval(x).shape, v, dt)  # noqa: E731
    out = e.select_n_p.bind(e.eq_p.bind(x, np.asarray(0, dt)), dp, full(0.0))
    bad = e.or_p.bind(e.or_p.bind(e.le_p.bind(a, np.asarray(0, dt)),
                                  e.lt_p.bind(x, np.asarray(0, dt))),
                      e.or_p.bind(e.or_p.bind(e.ne_p.bind(a, a), e.ne_p.bind(x, x)),
                                  e.or_p.bind(e.eq_p.bind(x, np.asarray(np.inf, dt)),
                                              e.eq_p.bind(a, np.asarray(np.inf, dt)))))
    return e.select_n_p.bind(bad, out, full(np.nan))


def _random_gamma_grad_program(a, x):
    """The derivative of a Gamma(a, 1) sample at fixed quantile, -(dP/da) / (dP/dx), with
    dP/dx = x^(a-1) e^-x / Gamma(a) in logs; 0 at x = 0, NaN at x = inf and for a <= 0.
    (Where both derivatives underflow, deep in a tail, the implementation switches to
    series and quadrature the program does not have: NaN there.)"""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype

    def c(v):
        return np.asarray(v, dt)
    dpa = _igamma_grad_a_program(a, x)
    dpx = e.exp_p.bind(e.sub_p.bind(e.sub_p.bind(e.mul_p.bind(e.sub_p.bind(a, c(1.0)),
                                                              e.log_p.bind(x)), x),
                                    lgamma_p.bind(a)))
    out = e.neg_p.bind(e.div_p.bind(dpa, dpx))
    full = np.full(get_aval(x).shape, 0.0, dt)
    out = e.select_n_p.bind(e.eq_p.bind(x, c(0.0)), out, full)
    bad = e.or_p.bind(e.or_p.bind(e.le_p.bind(a, c(0.0)), e.eq_p.bind(x, c(np.inf))),
                      e.or_p.bind(e.ne_p.bind(a, a), e.ne_p.bind(x, x)))
    return e.select_n_p.bind(bad, out, np.full(get_aval(x).shape, np.nan, dt))


igamma_grad_a_p.lowering = _program_lowering(_igamma_grad_a_program)
random_gamma_grad_p.lowering = _program_lowering(_random_gamma_grad_program)


_EULER = 0.57721566490153286061


def _erfcx_program(x):
    """exp(x^2) erfc(x): for |x| < 4 the product (x^2 split into two exact parts so the
    exponential keeps its digits), from 4 on Laplace's continued fraction of erfc
    (30 levels), below -4 the reflection 2 exp(x^2) - erfcx(-x) (which overflows to inf
    as the function does); +inf -> 0, -inf -> inf, NaN -> NaN."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype

    def c(v):
        return np.asarray(v, dt)
    ax = e.abs_p.bind(x)
    near = e.lt_p.bind(ax, c(4.0))
    xn = e.select_n_p.bind(near, c(0.0), x)
    # x^2 = hi + lo exactly (Veltkamp's split of x)
    split = e.mul_p.bind(xn, c(4097.0 if dt == np.float32 else 134217729.0))
    xh = e.sub_p.bind(split, e.sub_p.bind(split, xn))
    xl = e.sub_p.bind(xn, xh)
    hi = e.mul_p.bind(xn, xn)
    lo = e.add_p.bind(e.add_p.bind(e.sub_p.bind(e.mul_p.bind(xh, xh), hi),
                                   e.mul_p.bind(c(2.0), e.mul_p.bind(xh, xl))),
                      e.mul_p.bind(xl, xl))
    ex2 = e.mul_p.bind(e.exp_p.bind(hi), e.add_p.bind(c(1.0), lo))
    val_near = e.mul_p.bind(ex2, erfc_p.bind(xn))
    z = e.select_n_p.bind(near, ax, c(4.0))                 # |x| >= 4
    cf = z
    for k in range(30, 0, -1):
        cf = e.add_p.bind(z, e.div_p.bind(c(k / 2), cf))
    val_far = e.div_p.bind(c(1 / math.sqrt(math.pi)), cf)   # erfcx(|x|)
    neg_far = e.sub_p.bind(e.mul_p.bind(c(2.0), e.exp_p.bind(e.mul_p.bind(z, z))), val_far)
    far = e.select_n_p.bind(e.lt_p.bind(x, c(0.0)), val_far, neg_far)
    out = e.select_n_p.bind(near, far, val_near)
    out = e.select_n_p.bind(e.eq_p.bind(x, c(np.inf)), out, c(0.0))
    return e.select_n_p.bind(e.ne_p.bind(x, x), out, c(np.nan))


def _e1_positive(x):
    """E1(x) for x > 0 (anything else gives a finite placeholder): the power series
    -gamma - log x - sum (-x)^k / (k k!) up to x = 1, the continued fraction
    e^-x / (x + 1 - 1 / (x + 3 - 4 / (x + 5 - ...))) above."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype

    def c(v):
        return np.asarray(v, dt)
    small = e.le_p.bind(x, c(1.0))
    xs = e.select_n_p.bind(small, c(0.5), x)
    term, acc = c(1.0), c(0.0)
    for k in range(1, 25):
        term = e.mul_p.bind(term, e.div_p.bind(e.neg_p.bind(xs), c(float(k))))
        acc = e.add_p.bind(acc, e.div_p.bind(term, c(float(k))))
    series = e.sub_p.bind(e.sub_p.bind(c(-_EULER), e.log_p.bind(xs)), acc)
    xl = e.select_n_p.bind(small, x, c(2.0))
    cf = e.add_p.bind(xl, c(2 * 40 + 1.0))
    for k in range(40, 0, -1):
        cf = e.sub_p.bind(e.add_p.bind(xl, c(2 * k - 1.0)), e.div_p.bind(c(float(k * k)), cf))
    frac = e.div_p.bind(e.exp_p.bind(e.neg_p.bind(xl)), cf)
    return e.select_n_p.bind(small, frac, series)


def _exp1_program(x):
    """E1(x): +inf at 0, NaN for x < 0, at +inf and NaN, as the implementation."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype
    c = lambda v: np.asarray(v, dt)  # noqa: E731
    pos = e.and_p.bind(e.gt_p.bind(x, c(0.0)), e.lt_p.bind(x, c(np.inf)))
    out = e.select_n_p.bind(pos, c(np.nan), _e1_positive(e.select_n_p.bind(pos, c(1.0), x)))
    return e.select_n_p.bind(e.eq_p.bind(x, c(0.0)), out, c(np.inf))


def _expi_program(x):
    """Ei(x): -E1(-x) for x < 0; for x > 0 the series gamma + log x + sum x^k / (k k!)
    up to x = 40 (its terms do not cancel), the asymptotic expansion e^x / x sum k! / x^k
    beyond; NaN at 0, at +-inf and NaN, as the implementation."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype
    c = lambda v: np.asarray(v, dt)  # noqa: E731
    negative = e.lt_p.bind(x, c(0.0))
    neg_val = e.neg_p.bind(_e1_positive(e.select_n_p.bind(negative, c(1.0),
                                                          e.neg_p.bind(x))))
    mid = e.and_p.bind(e.gt_p.bind(x, c(0.0)), e.le_p.bind(x, c(40.0)))
    xm = e.select_n_p.bind(mid, c(1.0), x)
    term, acc = c(1.0), c(0.0)
    for k in range(1, 90):
        term = e.mul_p.bind(term, e.div_p.bind(xm, c(float(k))))
        acc = e.add_p.bind(acc, e.div_p.bind(term, c(float(k))))
    series = e.add_p.bind(e.add_p.bind(c(_EULER), e.log_p.bind(xm)), acc)
    xb = e.select_n_p.bind(e.gt_p.bind(x, c(40.0)), c(50.0), x)
    term, acc = c(1.0), c(1.0)
    for k in range(1, 30):
        term = e.mul_p.bind(term, e.div_p.bind(c(float(k)), xb))
        acc = e.add_p.bind(acc, term)
    asym = e.mul_p.bind(e.div_p.bind(e.exp_p.bind(xb), xb), acc)
    out = e.select_n_p.bind(mid, e.select_n_p.bind(negative, asym, neg_val), series)
    bad = e.or_p.bind(e.or_p.bind(e.eq_p.bind(x, c(0.0)), e.ne_p.bind(x, x)),
                      e.eq_p.bind(e.abs_p.bind(x), c(np.inf)))
    return e.select_n_p.bind(bad, out, c(np.nan))


from .elementwise import erfc_p  # noqa: E402

erfcx_p.lowering = _program_lowering(_erfcx_program)
exp1_p.lowering = _program_lowering(_exp1_program)
expi_p.lowering = _program_lowering(_expi_program)


def _sici_program(x, want_si):
    """Si(x) or Ci(x): their power series up to |x| = 4, above it E1(i|x|) by its
    continued fraction in complex arithmetic (Ci = -Re E1(ix), Si = pi/2 + Im E1(ix));
    Si odd, Ci(-x) = Ci(x); the implementation's values at 0, +-inf and NaN."""
    from . import elementwise as e
    from ..core.trace import get_aval
    dt = get_aval(x).dtype
    cdt = np.dtype(np.complex128 if dt == np.float64 else np.complex64)
    c = lambda v: np.asarray(v, dt)  # noqa: E731
    cc = lambda v: np.asarray(v, cdt)  # noqa: E731
    ax = e.abs_p.bind(x)
    small = e.le_p.bind(ax, c(4.0))
    xs = e.select_n_p.bind(small, c(1.0), ax)
    x2 = e.mul_p.bind(xs, xs)
    if want_si:
        t, acc = xs, xs
        for k in range(1, 14):
            t = e.neg_p.bind(e.div_p.bind(e.mul_p.bind(t, x2), c(float((2 * k) * (2 * k + 1)))))
            acc = e.add_p.bind(acc, e.div_p.bind(t, c(float(2 * k + 1))))
        series = acc
    else:
        u, acc = c(1.0), c(0.0)
        for k in range(1, 14):
            u = e.neg_p.bind(e.div_p.bind(e.mul_p.bind(u, x2),
                                          c(float((2 * k - 1) * (2 * k)))))
            acc = e.add_p.bind(acc, e.div_p.bind(u, c(float(2 * k))))
        series = e.add_p.bind(e.add_p.bind(c(_EULER), e.log_p.bind(xs)), acc)
    xl = e.select_n_p.bind(small, ax, c(5.0))
    z = e.complex_p.bind(np.zeros(get_aval(x).shape, dt), xl)
    frac = e.add_p.bind(z, cc(2 * 80 + 1.0))
    for k in range(80, 0, -1):
        frac = e.sub_p.bind(e.add_p.bind(z, cc(2 * k - 1.0)), e.div_p.bind(cc(float(k * k)),
                                                                          frac))
    ez = e.complex_p.bind(e.cos_p.bind(xl), e.neg_p.bind(e.sin_p.bind(xl)))   # e^{-z}
    e1 = e.div_p.bind(ez, frac)
    if want_si:
        big = e.add_p.bind(c(math.pi / 2), e.imag_p.bind(e1))
    else:
        big = e.neg_p.bind(e.real_p.bind(e1))
    out = e.select_n_p.bind(small, big, series)
    inf = e.eq_p.bind(ax, c(np.inf))
    if want_si:
        out = e.select_n_p.bind(inf, out, c(math.pi / 2))
        out = e.select_n_p.bind(e.lt_p.bind(x, c(0.0)), out, e.neg_p.bind(out))
        out = e.select_n_p.bind(e.eq_p.bind(x, c(0.0)), out, x)
    else:
        out = e.select_n_p.bind(inf, out, e.select_n_p.bind(e.gt_p.bind(x, c(0.0)),
                                                            c(np.nan), c(0.0)))
        out = e.select_n_p.bind(e.eq_p.bind(x, c(0.0)), out, c(-np.inf))
    return e.select_n_p.bind(e.ne_p.bind(x, x), out, c(np.nan))


sici_si_p.lowering = _program_lowering(lambda x: _sici_program(x, True))
sici_ci_p.lowering = _program_lowering(lambda x: _sici_program(x, False))
