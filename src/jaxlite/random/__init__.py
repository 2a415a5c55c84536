"""``jaxlite.random``: JAX's counter-based PRNG (``jax.random``): Threefry-2x32 by default,
and the ``rbg``/``unsafe_rbg`` implementations built on XLA's bit generator
(``key(seed, impl="rbg")``, or ``jax_default_prng_impl``).

Layer: random (compositions of ``jaxlite.lax`` / ``jaxlite.numpy`` ops, so every function
runs eagerly and under ``jit``).  Keys are explicit values: ``key(seed)`` gives a typed key
(dtype ``key<fry>``), ``PRNGKey(seed)`` a raw ``uint32[2]`` key; ``split``/``fold_in`` derive
new keys, and each sampler turns one key into numbers.  For the same key the results are
JAX 0.10's on CPU (``jax_threefry_partitionable`` on, its default): the key splits, bits,
float conversion and each distribution's algorithm are JAX's, rounded as XLA rounds them,
so most float32 samplers agree bit for bit.  Those going through ``exp``/``tan``/``pow``,
the gamma family, float32 ``truncated_normal``, float64 and the LAPACK-based ones are
within the ulp bounds their docstrings state.  Rejection samplers (gamma, poisson,
binomial) take JAX's accept/reject path.

Example::

    import jaxlite as jax
    k = jax.random.key(42)
    k, sub = jax.random.split(k)
    x = jax.random.normal(sub, (3,))
"""
from __future__ import annotations

from ._keys import (PRNGKey, PRNGKeyArray, clone, fold_in, key, key_data, key_dtype,  # noqa
                    key_impl, split, wrap_key_data)
from ._distributions import (bernoulli, bits, categorical, choice, gumbel, normal,  # noqa
                             permutation, randint, truncated_normal, uniform)
from ._continuous import (cauchy, double_sided_maxwell, exponential, geometric,  # noqa
                          laplace, logistic, lognormal, maxwell, pareto, rademacher, rayleigh,
                          triangular, wald, weibull_min)
from ._gamma import (ball, beta, chisquare, dirichlet, f, gamma, generalized_normal,  # noqa
                     loggamma, t)
from ._discrete import binomial, multinomial, poisson  # noqa
from ._multivariate import multivariate_normal, orthogonal  # noqa


def _add_out_sharding():
    # the samplers that take JAX's ``out_sharding=`` (their values do not depend on it)
    from ..lax._sharding_constraints import with_out_sharding
    g = globals()
    for name in ("ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
                 "dirichlet", "exponential", "f", "gamma", "generalized_normal",
                 "geometric", "gumbel", "laplace", "loggamma", "logistic", "lognormal",
                 "maxwell", "multivariate_normal", "normal", "orthogonal", "pareto",
                 "permutation", "poisson", "rademacher", "randint", "rayleigh", "t",
                 "triangular", "truncated_normal", "uniform", "wald"):
        g[name] = with_out_sharding(g[name], f"jax.random.{name}")


_add_out_sharding()

__all__ = ["ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare",
           "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential", "f", "fold_in",
           "gamma", "generalized_normal", "geometric", "gumbel", "key", "key_data", "key_dtype",
           "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
           "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
           "PRNGKey", "rademacher", "randint", "rayleigh", "split", "t", "triangular",
           "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data"]
