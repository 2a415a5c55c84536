"""``jaxlite.scipy.stats``: probability distributions (``jax.scipy.stats``).

Each distribution is a module of functions (``norm.logpdf(x, loc=0, scale=1)``, ...), as in
JAX: compositions of ``jaxlite.numpy`` / ``lax`` and ``jaxlite.scipy.special``, so they
differentiate, batch and jit.  Arguments are array-likes that promote to a common inexact
dtype (integers to the default float) and broadcast; values outside a distribution's
support give JAX's answers (-inf log densities, 0/1 probabilities, NaN quantiles).
"""
from . import (bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma,  # noqa: F401
               geom, laplace, logistic, multivariate_normal, norm, pareto, poisson, t,
               truncnorm, uniform)
