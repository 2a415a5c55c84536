"""Linear algebra at work: PCA of the digits, a Gaussian-process regression, least squares

Three small programs written only with the JAX API (``import jaxlite as jax``,
``import jaxlite.numpy as jnp``):

1. PCA of the handwritten digits bundled with jaxlite: the eigen-decomposition of the
   pixel covariance (``jnp.linalg.eigh``) against the singular values of the centred data
   (``jnp.linalg.svd``), the share of variance of the leading components, and the
   reconstruction error from the first 10.
2. Gaussian-process regression of a noisy sine: an RBF kernel, its Cholesky factor
   (``jnp.linalg.cholesky``) and triangular solves (``jax.lax.linalg.triangular_solve``)
   give the posterior mean and the log marginal likelihood; ``jax.grad`` of that
   likelihood fits the kernel's length scale and noise by gradient ascent under ``jit``.
3. Least squares: a quadratic fitted to noisy points by ``jnp.linalg.lstsq`` and by
   ``jnp.polyfit``, which agree.

Run it: ``python examples/numerics.py``; ``--backend jax`` runs the same code on real JAX
(if installed) for comparison.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.data import load_digits


def pca_digits():
    x, _ = load_digits()
    x = jnp.asarray(x, dtype=jnp.float32) / 16.0
    xc = x - x.mean(axis=0)
    n = x.shape[0]
    cov = xc.T @ xc / (n - 1)
    evals, evecs = jnp.linalg.eigh(cov)                 # ascending
    evals, evecs = evals[::-1], evecs[:, ::-1]
    s = jnp.linalg.svd(xc, compute_uv=False)
    ratio = evals / evals.sum()
    top = evecs[:, :10]
    recon = (xc @ top) @ top.T
    err = jnp.sqrt(jnp.mean((recon - xc) ** 2))
    print("PCA of the digits (1797 images of 8x8 pixels)")
    print("  variance share of the first 5 components:",
          " ".join(f"{float(r):.4f}" for r in ratio[:5]))
    print(f"  first 10 components explain {float(ratio[:10].sum()):.4f} of the variance")
    print(f"  eigh and svd agree: max |lambda - s^2/(n-1)| = "
          f"{float(jnp.max(jnp.abs(evals - s ** 2 / (n - 1)))):.2e}")
    print(f"  RMS reconstruction error from 10 components: {float(err):.4f}")


def _rbf(a, b, log_scale):
    d = a[:, None] - b[None, :]
    return jnp.exp(-0.5 * d ** 2 / jnp.exp(2 * log_scale))


def _solve_chol(L, y):
    tri = jax.lax.linalg.triangular_solve
    z = tri(L, y[:, None], left_side=True, lower=True)
    return tri(L, z, left_side=True, lower=True, transpose_a=True)[:, 0]


def gaussian_process():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3, 3, 40)).astype(np.float32)
    y = (np.sin(2 * x) + 0.1 * rng.standard_normal(40)).astype(np.float32)
    xs = np.linspace(-3, 3, 101, dtype=np.float32)

    def neg_lml(params):
        log_scale, log_noise = params
        K = _rbf(x, x, log_scale) + (jnp.exp(2 * log_noise) + 1e-5) * jnp.eye(x.shape[0])
        L = jnp.linalg.cholesky(K)
        alpha = _solve_chol(L, y)
        return (0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L)))
                + 0.5 * x.shape[0] * np.log(2 * np.pi))

    @jax.jit
    def step(params):
        value, g = jax.value_and_grad(neg_lml)(params)
        return params - 0.01 * g, value

    params = jnp.array([0.5, -1.0], dtype=jnp.float32)
    first = float(neg_lml(params))
    for _ in range(300):
        params, value = step(params)
    log_scale, log_noise = params
    K = _rbf(x, x, log_scale) + (jnp.exp(2 * log_noise) + 1e-5) * jnp.eye(x.shape[0])
    alpha = _solve_chol(jnp.linalg.cholesky(K), y)
    mean = _rbf(xs, x, log_scale) @ alpha
    rmse = jnp.sqrt(jnp.mean((mean - np.sin(2 * xs)) ** 2))
    print("Gaussian-process regression of sin(2x) from 40 noisy points")
    print(f"  negative log marginal likelihood: {first:.3f} -> {float(neg_lml(params)):.3f}")
    print(f"  fitted length scale {float(jnp.exp(log_scale)):.3f}, "
          f"noise {float(jnp.exp(log_noise)):.3f}")
    print(f"  RMS error of the posterior mean against sin(2x): {float(rmse):.3f}")


def least_squares():
    rng = np.random.default_rng(1)
    x = np.linspace(-1, 1, 50, dtype=np.float32)
    y = (1.5 * x ** 2 - 0.5 * x + 0.25 + 0.05 * rng.standard_normal(50)).astype(np.float32)
    A = jnp.stack([x ** 2, x, jnp.ones_like(x)], axis=1)
    coef, resid, rank, sv = jnp.linalg.lstsq(A, y)
    fit = jnp.polyfit(x, y, 2)
    print("Least squares: a quadratic through 50 noisy points (true 1.5, -0.5, 0.25)")
    print("  lstsq  :", " ".join(f"{float(c):.4f}" for c in coef), f"(rank {int(rank)})")
    print("  polyfit:", " ".join(f"{float(c):.4f}" for c in fit))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["jaxlite", "jax"], default="jaxlite")
    args = ap.parse_args(argv)
    if args.backend == "jax":
        global jax, jnp
        import jax as _jax
        import jax.numpy as _jnp
        jax, jnp = _jax, _jnp
    pca_digits()
    print()
    gaussian_process()
    print()
    least_squares()
    return 0


if __name__ == "__main__":
    sys.exit(main())
