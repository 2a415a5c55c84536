"""``jaxlite.scipy.stats``: probability distributions (``jax.scipy.stats``).

Each distribution is a module of functions (``norm.logpdf(x, loc=0, scale=1)``, ...), as in
JAX: compositions of ``jaxlite.numpy`` / ``lax`` and ``jaxlite.scipy.special``, so they
differentiate, batch and jit.  Arguments are array-likes that promote to a common inexact
dtype (integers to the default float) and broadcast; values outside a distribution's
support give JAX's answers (-inf log densities, 0/1 probabilities, NaN quantiles).
``gaussian_kde`` is a class (a pytree), as JAX's.
"""
from . import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet,  # noqa: F401
               expon, gamma, gennorm, geom, gumbel_l, gumbel_r, laplace, logistic,
               multinomial, multivariate_normal, nbinom, norm, pareto, poisson, t,
               truncnorm, uniform, vonmises, wrapcauchy)
from ._sem import sem  # noqa: F401
from ._rankdata import rankdata  # noqa: F401
from ._mode import ModeResult, mode  # noqa: F401
from ._kde import gaussian_kde  # noqa: F401
