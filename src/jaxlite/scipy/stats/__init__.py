"""``jaxlite.scipy.stats``: probability distributions (``jax.scipy.stats``).

Each distribution is a module of functions (``norm.logpdf(x, loc=0, scale=1)``, ...), as in
JAX: compositions of ``jaxlite.numpy`` / ``lax`` and ``jaxlite.scipy.special``, so they
differentiate, batch and jit.  Arguments are array-likes that promote to a common inexact
dtype (integers to the default float) and broadcast; values outside a distribution's
support give JAX's answers (-inf log densities, 0/1 probabilities, NaN quantiles).
``gaussian_kde`` is a class (a pytree), as JAX's.
"""
import sys as _sys
import types as _types

from ... import _traceback
from . import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet,  # noqa: F401
               expon, gamma, gennorm, geom, gumbel_l, gumbel_r, laplace, logistic,
               multinomial, multivariate_normal, nbinom, norm, pareto, poisson, t,
               truncnorm, uniform, vonmises, wrapcauchy)
from ._sem import sem  # noqa: F401
from ._rankdata import rankdata  # noqa: F401
from ._mode import ModeResult, mode  # noqa: F401
from ._kde import gaussian_kde  # noqa: F401

# the public functions of this module and of each distribution's are traceback boundaries
# (jaxlite/_traceback.py), as jaxlite.numpy's; a distribution's ``__all__`` names its own
# functions, so that the helpers it imports (``_common.promote``) stay unwrapped
for _m in [m for n, m in list(globals().items())
           if isinstance(m, _types.ModuleType) and not n.startswith("_")
           and m.__name__.startswith(__name__ + ".")]:
    _m.__all__ = [n for n, v in vars(_m).items() if not n.startswith("_")
                  and getattr(v, "__module__", None) == _m.__name__]
    _traceback.wrap_namespace(_m)
_traceback.wrap_namespace(_sys.modules[__name__])
del _m
