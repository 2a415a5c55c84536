"""jaxlite.scipy.stats against real JAX: every function of each distribution on points
inside and outside the support (and at its edges, +-inf and NaN), with dtypes, weak types,
broadcasting, gradients, vmap and jit."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.scipy.stats as lst

from oracle import assert_like_jax

INF, NAN = np.inf, np.nan
X = np.array([-INF, -30.0, -6.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.0, 1.7, 3.0, 7.0,
              40.0, INF, NAN], np.float32)
N = X.size
R = np.random.default_rng(3)
POS = np.round(R.uniform(0.3, 4.0, N), 2).astype(np.float32)
LOC = np.round(R.uniform(-1.0, 1.0, N), 2).astype(np.float32)
Q = np.array([-0.1, 0.0, 1e-7, 0.01, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99, 0.999999,
              1.0, 1.1, 0.3, NAN], np.float32)
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 0.5, 4.0, 7.0, 10.0, 2.5, 1.0, 0.0, 5.0, 12.0, 2.0,
              INF, NAN], np.float32)
UNIT = np.clip(np.abs(X) / 8, 0, 1.2).astype(np.float32)

# (distribution, function) -> argument tuple (one shape for all, so JAX compiles little)
CONT = {"norm": (), "uniform": (), "expon": (), "laplace": (), "logistic": (),
        "cauchy": ()}
CASES = {}
for _d in CONT:
    for _f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        CASES[(_d, _f)] = (X, LOC, POS)
    for _f in ("ppf", "isf"):
        CASES[(_d, _f)] = (Q, LOC, POS)
CASES.update({
    ("t", "logpdf"): (X, POS, LOC, POS[::-1]), ("t", "pdf"): (X, POS, LOC, POS[::-1]),
    ("bernoulli", "logpmf"): (K, UNIT.clip(0, 1)), ("bernoulli", "pmf"): (K, Q.clip(0, 1)),
    ("bernoulli", "cdf"): (K, Q), ("bernoulli", "ppf"): (Q, UNIT),
    ("binom", "logpmf"): (K, np.full(N, 6.0, np.float32), Q.clip(0, 1)),
    ("binom", "pmf"): (K, np.round(POS * 3), UNIT.clip(0, 1)),
    ("poisson", "logpmf"): (K, POS), ("poisson", "pmf"): (K, POS),
    ("poisson", "cdf"): (K, POS), ("geom", "logpmf"): (K, Q.clip(0.05, 1)),
    ("geom", "pmf"): (K, UNIT.clip(0.05, 1)),
})
for _f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
    CASES[("gamma", _f)] = (X, POS, LOC, POS[::-1])
    CASES[("chi2", _f)] = (X, POS * 2, LOC, POS[::-1])
    CASES[("beta", _f)] = (UNIT * 1.5 - 0.1, POS, POS[::-1], np.float32(0.0),
                           np.float32(1.2))
    CASES[("truncnorm", _f)] = (X / 2, np.minimum(LOC * 3, 0.5) - 1.0,
                                np.maximum(POS, 1.0), LOC, POS)
    CASES[("pareto", _f)] = (np.abs(X) + 0.5, POS, np.float32(0.0), POS[::-1])
CASES[("pareto", "ppf")] = (Q, POS, LOC, POS[::-1])
for _f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
    CASES[("gumbel_r", _f)] = (X / 4, LOC, POS)
    CASES[("gumbel_l", _f)] = (X / 4, LOC, POS)
CASES[("gumbel_r", "ppf")] = (Q, LOC, POS)
CASES[("gumbel_l", "ppf")] = (Q, LOC, POS)
CASES.update({
    ("nbinom", "logpmf"): (K, POS, Q.clip(0.05, 1)), ("nbinom", "pmf"): (K, POS, UNIT.clip(0.05, 1)),
    ("betabinom", "logpmf"): (K, np.full(N, 6.0, np.float32), POS, POS[::-1]),
    ("betabinom", "pmf"): (K, np.round(POS * 3), POS, POS[::-1]),
    ("gennorm", "logpdf"): (X / 4, POS), ("gennorm", "pdf"): (X / 4, POS),
    ("gennorm", "cdf"): (X / 4, POS),
    ("vonmises", "logpdf"): (X / 4, POS), ("vonmises", "pdf"): (X / 4, POS),
    ("wrapcauchy", "logpdf"): (np.abs(X) / 4, UNIT), ("wrapcauchy", "pdf"): (np.abs(X) / 4, UNIT),
})
CASES = {k: v for k, v in CASES.items() if k[1] != "isf" or k[0] in ("norm", "cauchy",
                                                                      "logistic")}
CASES = {k: v for k, v in CASES.items()
         if not (k[0] in ("uniform",) and k[1] in ("logcdf", "sf", "logsf", "isf"))}
CASES = {k: v for k, v in CASES.items()
         if not (k[0] in ("laplace",) and k[1] in ("logcdf", "sf", "logsf", "ppf", "isf"))}
CASES = {k: v for k, v in CASES.items()
         if not (k[0] in ("logistic",) and k[1] in ("logcdf", "logsf"))}
RTOL = {"t": 2e-5, "gamma": 5e-5, "chi2": 5e-5, "beta": 5e-5, "truncnorm": 1e-4,
        "binom": 5e-5, "poisson": 5e-5, "pareto": 2e-5}
# fast tier: a sample; the rest under make test-slow
FAST = {("norm", "logpdf"), ("norm", "cdf"), ("norm", "logcdf"), ("norm", "ppf"),
        ("norm", "isf"), ("expon", "logcdf"), ("gamma", "logpdf"), ("gamma", "cdf"),
        ("beta", "logpdf"), ("beta", "sf"), ("poisson", "logpmf"), ("poisson", "cdf"),
        ("bernoulli", "ppf"), ("binom", "logpmf"), ("truncnorm", "logpdf"),
        ("truncnorm", "logcdf"), ("t", "logpdf"), ("cauchy", "isf"), ("uniform", "cdf"),
        ("logistic", "logpdf"), ("laplace", "cdf")}


def _params():
    out = []
    for key in sorted(CASES):
        marks = () if key in FAST else (pytest.mark.slow,)
        out.append(pytest.param(*key, marks=marks, id=".".join(key)))
    return out


@pytest.mark.parametrize("dist,fn", _params())
def test_against_jax(dist, fn, rjax):
    import jax.scipy.stats as jst
    args = CASES[(dist, fn)]
    got = getattr(getattr(lst, dist), fn)(*args)
    want = getattr(getattr(jst, dist), fn)(*args)
    assert_like_jax(got, want, rtol=RTOL.get(dist, 1e-5), atol=1e-6)


def test_every_jax_function_exists(rjax):
    import jax.scipy.stats as jst
    for dist in ("norm", "uniform", "multivariate_normal", "bernoulli", "binom", "poisson",
                 "gamma", "beta", "t", "cauchy", "laplace", "logistic", "expon", "dirichlet",
                 "chi2", "truncnorm", "geom", "pareto", "gumbel_l", "gumbel_r", "nbinom",
                 "betabinom", "multinomial", "gennorm", "vonmises", "wrapcauchy"):
        want = {n for n in dir(getattr(jst, dist)) if not n.startswith("_")} - {"entropy"}
        have = {n for n in dir(getattr(lst, dist)) if not n.startswith("_")}
        assert want <= have, (dist, want - have)


def test_dtypes_weak_types_and_broadcasting(rjax):
    import jax.scipy.stats as jst
    for dist, fn, args in [("norm", "cdf", (np.int32(1), 0, 2.0)),
                           ("gamma", "logpdf", (1.0, 2)), ("uniform", "cdf", (0.5,)),
                           ("uniform", "logpdf", (np.float16(0.5),)),
                           ("norm", "logpdf", (np.ones((2, 1), np.float32),
                                               np.zeros(3, np.float32)))]:
        got = getattr(getattr(lst, dist), fn)(*args)
        want = getattr(getattr(jst, dist), fn)(*args)
        assert_like_jax(got, want, rtol=2e-3)


def test_multivariate_normal(rjax):
    import jax.scipy.stats as jst
    a = R.standard_normal((3, 3)).astype(np.float32)
    cov = (a @ a.T + 3 * np.eye(3)).astype(np.float32)
    mean = np.array([0.5, -1.0, 2.0], np.float32)
    x = R.standard_normal((4, 3)).astype(np.float32)
    mvn, jmvn = lst.multivariate_normal, jst.multivariate_normal
    assert_like_jax(mvn.logpdf(x, mean, cov), jmvn.logpdf(x, mean, cov), rtol=1e-5)
    assert_like_jax(mvn.pdf(x[0], mean, cov), jmvn.pdf(x[0], mean, cov), rtol=1e-5)
    with pytest.raises(ValueError):
        mvn.logpdf(x, mean, np.eye(2, dtype=np.float32))
    with pytest.raises(NotImplementedError):
        mvn.logpdf(x, mean, cov, allow_singular=True)


@pytest.mark.slow
def test_multivariate_normal_forms_and_grad(rjax):
    import jax.scipy.stats as jst
    a = R.standard_normal((3, 3)).astype(np.float32)
    cov = (a @ a.T + 3 * np.eye(3)).astype(np.float32)
    mean = np.array([0.5, -1.0, 2.0], np.float32)
    x = R.standard_normal((4, 3)).astype(np.float32)
    mvn, jmvn = lst.multivariate_normal, jst.multivariate_normal
    assert_like_jax(mvn.logpdf(x, mean, np.float32(2.0)),
                    jmvn.logpdf(x, mean, np.float32(2.0)), rtol=1e-5)
    assert_like_jax(mvn.logpdf(x[:, 0], np.float32(0.5), np.float32(2.0)),
                    jmvn.logpdf(x[:, 0], np.float32(0.5), np.float32(2.0)), rtol=1e-5)
    covs = np.stack([cov, 2 * cov]).astype(np.float32)
    assert_like_jax(mvn.logpdf(x[:2], mean, covs), jmvn.logpdf(x[:2], mean, covs), rtol=1e-5)
    g = jaxlite.grad(lambda m: mvn.logpdf(x, m, cov).sum())(mean)
    w = rjax.grad(lambda m: jmvn.logpdf(x, m, cov).sum())(mean)
    assert_like_jax(g, w, rtol=1e-4)


def test_multinomial(rjax):
    import jax.scipy.stats as jst
    p = np.array([0.2, 0.5, 0.3], np.float32)
    for x in ([1, 2, 0], [3, 0, 0], [1, 1, 2], [[1, 2, 0], [0, 0, 0]]):
        x = np.array(x, np.int32)
        assert_like_jax(lst.multinomial.logpmf(x, 3, p), jst.multinomial.logpmf(x, 3, p),
                        rtol=1e-5)
    x = np.array([1, 2, 0], np.int32)
    assert_like_jax(lst.multinomial.pmf(x, np.int32(3), p),
                    jst.multinomial.pmf(x, np.int32(3), p), rtol=1e-5)
    with pytest.raises(ValueError, match="integer"):
        lst.multinomial.logpmf(x.astype(np.float32), 3, p)


def test_dirichlet(rjax):
    import jax.scipy.stats as jst
    alpha = np.array([0.5, 2.0, 3.5], np.float32)
    x = np.array([[0.2, 0.5, 0.0, 0.4], [0.3, 0.25, 0.5, 0.7], [0.5, 0.25, 0.5, -0.1]],
                 np.float32)
    assert_like_jax(lst.dirichlet.logpdf(x, alpha), jst.dirichlet.logpdf(x, alpha), rtol=1e-5)
    assert_like_jax(lst.dirichlet.pdf(x[:2], alpha), jst.dirichlet.pdf(x[:2], alpha),
                    rtol=1e-5)
    with pytest.raises(ValueError):
        lst.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError):
        lst.dirichlet.logpdf(x[:1], alpha)


GRADS = [("norm", "logpdf", (0.3, 0.5, 2.0)), ("norm", "logcdf", (-12.0, 0.0, 1.0)),
         ("norm", "ppf", (0.2, 1.0, 3.0)), ("gamma", "logpdf", (1.5, 2.5, 0.0, 1.3)),
         ("gamma", "cdf", (1.5, 2.5, 0.0, 1.3)), ("beta", "logpdf", (0.3, 2.0, 3.0)),
         ("t", "logpdf", (0.7, 3.0, 0.5, 2.0)), ("poisson", "logpmf", (3.0, 2.5)),
         ("truncnorm", "logpdf", (0.2, -1.0, 1.5, 0.1, 1.2)),
         ("cauchy", "logcdf", (0.4, 0.0, 2.0)), ("logistic", "logpdf", (0.4, 0.1, 1.5))]


@pytest.mark.parametrize("dist,fn,args", [
    pytest.param(d, f, a, id=f"{d}.{f}", marks=() if i in (1, 3, 8) else (pytest.mark.slow,))
    for i, (d, f, a) in enumerate(GRADS)])
def test_grad_against_jax(dist, fn, args, rjax):
    import jax.scipy.stats as jst
    args = tuple(np.float32(a) for a in args)
    n = len(args)
    got = jaxlite.grad(getattr(getattr(lst, dist), fn), argnums=tuple(range(n)))(*args)
    # (jaxlite's grad hands back its NumPy seed where the cotangent passes straight
    # through, e.g. d ppf / d loc: a NumPy array, not an Array; reported separately)
    got = [jaxlite.numpy.asarray(g) for g in got]
    want = rjax.grad(getattr(getattr(jst, dist), fn), argnums=tuple(range(n)))(*args)
    for g, w in zip(got, want):
        assert_like_jax(g, w, rtol=5e-4, atol=1e-6)


def test_vmap_and_jit_match_eager():
    fns = [lambda x, s: lst.norm.logpdf(x, 0.0, s), lambda x, s: lst.gamma.cdf(x, s),
           lambda x, s: lst.truncnorm.logcdf(x, -s, s),
           lambda x, s: lst.poisson.logpmf(jaxlite.numpy.round(x), s)]
    x, s = np.abs(LOC) + 0.1, POS
    for f in fns:
        eager = np.asarray(f(x, s))
        np.testing.assert_allclose(np.asarray(jaxlite.jit(f)(x, s)), eager, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jaxlite.vmap(f)(x, s)), eager, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jaxlite.vmap(f, in_axes=(0, None))(x, s[0])),
                                   np.asarray(f(x, s[0])), rtol=1e-6)


def test_sem(rjax):
    import jax.scipy.stats as jst
    x = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 5.0, NAN], [0.5, 7.0, -1.0, 2.0]],
                 np.float32)
    for kw in ({}, {"axis": None}, {"axis": 1, "ddof": 0}, {"nan_policy": "omit"},
               {"axis": 1, "keepdims": True, "nan_policy": "omit"}):
        assert_like_jax(lst.sem(x, **kw), jst.sem(x, **kw), rtol=1e-6)
    assert_like_jax(lst.sem(np.arange(5)), jst.sem(np.arange(5)), rtol=1e-6)
    with pytest.raises(ValueError):
        lst.sem(x, nan_policy="raise")


@pytest.mark.slow
def test_rankdata(rjax):
    import jax.scipy.stats as jst
    a = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 1.0], np.float32)
    for method in ("average", "min", "max", "dense", "ordinal"):
        assert_like_jax(lst.rankdata(a, method), jst.rankdata(a, method))
    m = np.array([[3, 1, 2], [1, 1, 0]], np.int32)
    assert_like_jax(lst.rankdata(m, axis=0), jst.rankdata(m, axis=0))
    assert_like_jax(lst.rankdata(m, "dense", axis=1), jst.rankdata(m, "dense", axis=1))
    assert_like_jax(lst.rankdata(m), jst.rankdata(m))
    b = np.array([2.0, NAN, 1.0], np.float32)
    assert_like_jax(lst.rankdata(b), jst.rankdata(b))
    assert_like_jax(lst.rankdata(np.float32(3)), jst.rankdata(np.float32(3)))
    np.testing.assert_allclose(np.asarray(jaxlite.jit(lst.rankdata)(a)),
                               np.asarray(jst.rankdata(a)))
    with pytest.raises(ValueError, match="unknown method"):
        lst.rankdata(a, "foo")
    with pytest.raises(NotImplementedError):
        lst.rankdata(a, nan_policy="omit")


@pytest.mark.slow
def test_mode(rjax):
    import jax.scipy.stats as jst
    m = np.array([[3, 1, 3], [1, 1, 2], [3, 2, 2]], np.float32)
    for kw in ({}, {"axis": 1, "keepdims": True}, {"axis": None}):
        got, want = lst.mode(m, **kw), jst.mode(m, **kw)
        assert_like_jax(got.mode, want.mode)
        assert_like_jax(got.count, want.count)
    for a in (np.array([2.0, 1.0, 2.0, 1.0], np.float32), np.array([2.0, NAN, NAN], np.float32),
              np.float32(3.0), np.array([4, 4, 1], np.int32)):
        got, want = lst.mode(a), jst.mode(a)
        assert_like_jax(got.mode, want.mode)
        assert_like_jax(got.count, want.count)
    with pytest.raises(NotImplementedError):
        lst.mode(m, nan_policy="omit")
