"""``jax.scipy.stats.gaussian_kde``: a Gaussian kernel density estimate.

Layer: public API over ``jaxlite.numpy``, ``jaxlite.scipy.linalg``/``special`` and
``jaxlite.random``, so every method jits, vmaps and differentiates.  The estimator is a
frozen dataclass registered as a pytree (leaves ``neff, dataset, weights, covariance,
inv_cov``, as JAX's), so it passes through ``jit`` and ``vmap`` as an argument.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ... import random
from ...numpy._util import check_arraylike, promote_dtypes_inexact
from ...tree_util import register_pytree_node_class
from .. import linalg
from .. import special


@register_pytree_node_class
@dataclasses.dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:
    """A Gaussian kernel density estimate (``jax.scipy.stats.gaussian_kde``).

    Args:
      dataset: real array-like of shape ``(n,)`` (one dimension) or ``(d, n)``; integers
        promote to the default float dtype.
      bw_method: ``None`` or ``"scott"`` (factor ``neff**(-1/(d+4))``), ``"silverman"``
        (``(neff (d+2)/4)**(-1/(d+4))``), a scalar factor, or a callable taking the
        estimator (with ``dataset``, ``weights``, ``neff`` set) and returning the factor.
      weights: optional array-like of length ``n``; normalised to sum 1 and promoted with
        ``dataset`` to their common inexact dtype.  Without it every point weighs ``1/n``.

    Attributes:
      dataset ``(d, n)``, weights ``(n,)``, neff (``1 / sum(weights**2)``), covariance and
      inv_cov ``(d, d)`` (the weighted data covariance times ``factor**2`` and its
      inverse), d and n.  The instance is immutable (``dataclasses.FrozenInstanceError``).

    Raises:
      TypeError for a list dataset or weights; NotImplementedError for complex data;
      ValueError for fewer than two elements, weights that are not one-dimensional or not
      of length n, or an unknown ``bw_method``.

    Example::

        kde = gaussian_kde(jnp.array([0.1, 0.5, 1.3, 2.2]))
        kde.evaluate(jnp.array([0.0, 1.0]))      # float32[2]
    """
    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset, bw_method=None, weights=None):
        check_arraylike("gaussian_kde", dataset)
        dataset = jnp.atleast_2d(dataset)
        if jnp.issubdtype(dataset.dtype, jnp.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        if dataset.ndim != 2:
            raise ValueError(f"`dataset` must have at most 2 dimensions, got shape "
                             f"{dataset.shape}.")
        d, n = dataset.shape
        if weights is not None:
            check_arraylike("gaussian_kde", weights)
            dataset, weights = promote_dtypes_inexact(dataset, weights)
            weights = jnp.atleast_1d(weights)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = promote_dtypes_inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / jnp.sum(weights ** 2))

        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            factor = jnp.power(neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif not isinstance(bw_method, str) and jnp.isscalar(bw_method):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError(
                "`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

        data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False,
                                          aweights=weights))
        data_inv = jnp.linalg.inv(data_cov)
        self._set("covariance", data_cov * factor ** 2)
        self._set("inv_cov", data_inv / factor ** 2)

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    # ---- pytree ------------------------------------------------------------------------

    def tree_flatten(self):
        """The five arrays (``neff, dataset, weights, covariance, inv_cov``), no aux data."""
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        """An estimator holding ``children`` as its arrays (no recomputation)."""
        del aux_data
        kde = cls.__new__(cls)
        for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"),
                               children):
            kde._set(name, value)
        return kde

    @property
    def d(self):
        """The number of dimensions (``dataset.shape[0]``)."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points (``dataset.shape[1]``)."""
        return self.dataset.shape[1]

    # ---- densities ---------------------------------------------------------------------

    def evaluate(self, points):
        """The density at ``points``: shape ``(d, m)``, or ``(m,)``/scalar when d = 1, or
        ``(d,)`` for one point; returns shape ``(m,)`` in the promoted inexact dtype of the
        points and the estimator.  Raises TypeError for a list, NotImplementedError for
        complex points, ValueError for a dimension other than d."""
        check_arraylike("evaluate", points)
        return self._kernel_sum(self._reshape_points(points), log=False)

    def __call__(self, points):
        """``evaluate(points)``."""
        return self.evaluate(points)

    def pdf(self, x):
        """``evaluate(x)``: the probability density."""
        return self.evaluate(x)

    def logpdf(self, x):
        """The log density at ``x`` (shapes as ``evaluate``), by a log-sum-exp over the
        data points, so it stays finite far in the tails where ``pdf`` underflows."""
        check_arraylike("logpdf", x)
        return self._kernel_sum(self._reshape_points(x), log=True)

    def _kernel_sum(self, xi, log):
        data, w, xi, prec = promote_dtypes_inexact(self.dataset, self.weights, xi,
                                                   self.inv_cov)
        d = data.shape[0]
        # whiten by the lower Cholesky factor L of the precision (L L^T = inv_cov), so the
        # kernel's exponent is half the squared Euclidean distance of the whitened points
        chol = linalg.cholesky(prec, lower=True)
        train = jnp.dot(data.T, chol)                 # (n, d)
        test = jnp.dot(xi.T, chol)                    # (m, d)
        log_norm = jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * d * math.log(2 * math.pi)
        sq = jnp.sum(jnp.square(train[None, :, :] - test[:, None, :]), axis=-1)  # (m, n)
        arg = log_norm - 0.5 * sq
        if log:
            return special.logsumexp(jnp.log(w)[None, :] + arg, axis=1)
        return jnp.sum(w[None, :] * jnp.exp(arg), axis=1)

    def _reshape_points(self, points):
        if jnp.issubdtype(jnp.result_type(points), jnp.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = jnp.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension "
                                 f"{self.d}")
        return points

    # ---- integrals ---------------------------------------------------------------------

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times the normal density ``N(mean, cov)``:
        ``mean`` of d values (any shape that squeezes to it), ``cov`` of shape (d, d) (a
        scalar when d = 1).  Returns a scalar.  Raises ValueError for other shapes."""
        mean = jnp.atleast_1d(jnp.squeeze(mean))
        cov = jnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        return _convolve(chol, self.d, self.dataset - mean[:, None], self.weights)

    def integrate_box_1d(self, low, high):
        """The probability mass between the scalars ``low`` and ``high`` (one-dimensional
        estimators only): ``sum_j w_j (ndtr((high - x_j)/s) - ndtr((low - x_j)/s))``.
        Raises ValueError when d != 1 or a limit is not a scalar."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_kde(self, other):
        """The integral of the product of this density and ``other``'s (a gaussian_kde of
        the same dimension; ValueError otherwise).  Returns a scalar."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        small, large = (self, other) if self.n < other.n else (other, self)
        # every pair (large point j, small point i): diff[:, j, i] = x_j - y_i
        diff = large.dataset[:, :, None] - small.dataset[:, None, :]
        per_point = _convolve(chol, self.d, diff, large.weights[:, None], axis=0)
        return jnp.sum(per_point * small.weights)

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not offered, as in JAX: raises NotImplementedError (use integrate_box_1d)."""
        del low_bounds, high_bounds, maxpts
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not offered, as in JAX (the estimator is immutable): raises
        NotImplementedError; build a new gaussian_kde with the bandwidth instead."""
        del bw_method
        raise NotImplementedError(
            "dynamically changing the bandwidth method is not supported")

    # ---- sampling ----------------------------------------------------------------------

    def resample(self, key, shape=()):
        """Draws from the estimated density with the PRNG ``key``: a data point chosen by
        weight plus ``N(0, covariance)`` noise.  ``shape`` is a tuple of non-negative
        integers; the result has shape ``(d,) + shape`` (for multi-axis shapes the noise's
        axes come reversed, as JAX's) in the dataset's dtype.  Same draws as JAX for the
        same key."""
        shape = tuple(shape)
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(eps_key, jnp.zeros(self.d, self.covariance.dtype),
                                         self.covariance, shape=shape,
                                         dtype=self.dataset.dtype)
        eps = jnp.transpose(eps)
        return self.dataset[:, ind] + eps


def _convolve(chol, d, diff, weights, axis=None):
    """``sum_j w_j N(diff_j; 0, S)`` for ``S = c^T c`` given as ``cho_factor``'s
    ``(c, lower)``; ``diff`` has the d coordinates on its first axis.  Summed over the
    second axis of ``diff`` (``axis=0`` of the remaining ones for a 3-d ``diff``)."""
    c = chol[0]
    norm = 1.0 / (jnp.sqrt(2 * np.pi) ** d * jnp.prod(jnp.diag(c)))
    flat = jnp.reshape(diff, (d, -1))
    alpha = jnp.reshape(linalg.cho_solve(chol, flat), diff.shape)
    quad = 0.5 * jnp.sum(diff * alpha, axis=0)
    return norm * jnp.sum(jnp.exp(-quad) * weights, axis=axis)
