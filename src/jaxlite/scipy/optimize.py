"""``jaxlite.scipy.optimize`` (``jax.scipy.optimize``): ``minimize`` with BFGS.

BFGS (Nocedal and Wright, Numerical Optimization, algorithm 6.1) with an inexact line
search for the strong Wolfe conditions (their algorithms 3.5 and 3.6: doubling steps, then
a zoom by cubic or quadratic interpolation or bisection), the same iteration JAX runs, so
the iterates, counts and status codes agree with JAX's up to rounding. Written with
``lax.while_loop`` on a state of arrays, so ``minimize`` also runs under ``jit``.

Layer: scipy (compositions of lax control flow, ``value_and_grad`` and jaxlite.numpy).
"""
from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from .. import _traceback
from .. import lax
from .. import numpy as jnp
from ..transforms.autodiff import value_and_grad

_C1, _C2 = 1e-4, 0.9          # the Wolfe constants (sufficient decrease, curvature)
_DELTA_CUBIC, _DELTA_QUAD = 0.2, 0.1
_ZOOM_MAX_STEPS = 30


class OptimizeResults(NamedTuple):
    """The result of ``minimize`` (``jax.scipy.optimize.OptimizeResults``): ``x``,
    ``success``, ``status`` (0 converged, 1 iteration limit, 3 zoom failed, 5 line-search
    limit, -1 undefined), ``fun``, ``jac`` (the gradient), ``hess_inv`` (the inverse Hessian
    estimate), ``nfev``, ``njev``, ``nit``."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _pick(flag, new: dict, old: dict) -> dict:
    """``old`` with each entry of ``new`` taken where ``flag`` holds."""
    out = dict(old)
    for k, v in new.items():
        out[k] = jnp.where(flag, v, old[k])
    return out


def _cubic_min(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    r1 = fb - fa - fpa * db
    r2 = fc - fa - fpa * dc
    A = (dc ** 2 * r1 - db ** 2 * r2) / denom
    B = (-dc ** 3 * r1 + db ** 3 * r2) / denom
    return a + (-B + jnp.sqrt(B * B - 3. * A * fpa)) / (3. * A)


def _quad_min(a, fa, fpa, b, fb):
    """The minimiser of the parabola through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    B = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2. * B)


def _zoom(phi_dphi, wolfe1, wolfe2, lo, hi, g0, skip):
    """Algorithm 3.6: shrink the bracket [lo, hi] (each ``(a, phi, dphi)``) until a step
    meets the strong Wolfe conditions; nothing runs when ``skip``."""
    dt = lo[1].dtype
    st = dict(done=jnp.asarray(False), failed=jnp.asarray(False), j=jnp.asarray(0),
              a_lo=lo[0], phi_lo=lo[1], dphi_lo=lo[2], a_hi=hi[0], phi_hi=hi[1],
              dphi_hi=hi[2], a_rec=(lo[0] + hi[0]) / 2., phi_rec=(lo[1] + hi[1]) / 2.,
              a_star=jnp.asarray(1., dt), phi_star=lo[1], dphi_star=lo[2], g_star=g0,
              nfev=jnp.asarray(0), ngev=jnp.asarray(0))
    threshold = 1e-5 if np.dtype(dt).itemsize < 8 else 1e-10

    def body(st):
        width = st["a_hi"] - st["a_lo"]
        a = jnp.minimum(st["a_hi"], st["a_lo"])
        b = jnp.maximum(st["a_hi"], st["a_lo"])
        st = dict(st, failed=st["failed"] | (width <= threshold))
        cubic = _cubic_min(st["a_lo"], st["phi_lo"], st["dphi_lo"], st["a_hi"],
                           st["phi_hi"], st["a_rec"], st["phi_rec"])
        use_cubic = (st["j"] > 0) & (cubic > a + _DELTA_CUBIC * width) & \
            (cubic < b - _DELTA_CUBIC * width)
        quad = _quad_min(st["a_lo"], st["phi_lo"], st["dphi_lo"], st["a_hi"], st["phi_hi"])
        use_quad = ~use_cubic & (quad > a + _DELTA_QUAD * width) & \
            (quad < b - _DELTA_QUAD * width)
        a_j = jnp.where(use_cubic, cubic, st["a_rec"])
        a_j = jnp.where(use_quad, quad, a_j)
        a_j = jnp.where(~use_cubic & ~use_quad, (st["a_lo"] + st["a_hi"]) / 2., a_j)
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        phi_j, dphi_j = phi_j.astype(dt), dphi_j.astype(dt)
        st = dict(st, nfev=st["nfev"] + 1, ngev=st["ngev"] + 1)
        to_hi = wolfe1(a_j, phi_j) | (phi_j >= st["phi_lo"])
        found = wolfe2(dphi_j) & ~to_hi
        flip = (dphi_j * (st["a_hi"] - st["a_lo"]) >= 0.) & ~to_hi & ~found
        to_lo = ~to_hi & ~found
        st = _pick(to_hi, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=st["a_hi"],
                               phi_rec=st["phi_hi"]), st)
        st = _pick(found, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j),
                   st)
        st["done"] = st["done"] | found
        st = _pick(flip, dict(a_hi=st["a_lo"], phi_hi=st["phi_lo"], dphi_hi=st["dphi_lo"],
                              a_rec=st["a_hi"], phi_rec=st["phi_hi"]), st)
        st = _pick(to_lo & ~flip, dict(a_rec=st["a_lo"], phi_rec=st["phi_lo"]), st)
        st = _pick(to_lo, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j), st)
        j = st["j"] + 1
        return dict(st, j=j, failed=st["failed"] | (j >= _ZOOM_MAX_STEPS))

    return lax.while_loop(lambda st: ~st["done"] & ~skip & ~st["failed"], body, st)


def _line_search(fun, xk, pk, f0, old_old_f, g0, maxiter):
    """Algorithm 3.5: a step along ``pk`` from ``xk`` meeting the strong Wolfe conditions:
    ``(failed, a, f, g, nfev, ngev, status)``."""
    dt = pk.dtype

    def phi_dphi(t):
        t = jnp.asarray(t, dtype=dt)
        phi, g = value_and_grad(fun)(xk + t * pk)
        return phi, jnp.real(jnp.dot(g, pk)), g
    dphi0 = jnp.real(jnp.dot(g0, pk))
    guess = 1.01 * 2 * (f0 - old_old_f) / dphi0
    start = jnp.where(guess > 1, 1.0, guess)

    def wolfe1(a, phi):
        return phi > f0 + _C1 * a * dphi0

    def wolfe2(dphi):
        return jnp.abs(dphi) <= -_C2 * dphi0
    zero = jnp.asarray(0., dt)
    st = dict(done=jnp.asarray(False), failed=jnp.asarray(False), i=jnp.asarray(1),
              a_prev=zero, phi_prev=f0, dphi_prev=dphi0, nfev=jnp.asarray(0),
              ngev=jnp.asarray(0), a_star=zero, phi_star=f0, dphi_star=dphi0, g_star=g0)

    def body(st):
        a_i = jnp.where(st["i"] == 1, start, st["a_prev"] * 2.).astype(dt)
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        st = dict(st, nfev=st["nfev"] + 1, ngev=st["ngev"] + 1)
        zoom_back = wolfe1(a_i, phi_i) | ((phi_i >= st["phi_prev"]) & (st["i"] > 1))
        found = wolfe2(dphi_i) & ~zoom_back
        zoom_fwd = (dphi_i >= 0.) & ~zoom_back & ~found
        prev = (st["a_prev"], st["phi_prev"], st["dphi_prev"])
        cur = (a_i, phi_i, dphi_i)
        z1 = _zoom(phi_dphi, wolfe1, wolfe2, prev, cur, g0, ~zoom_back)
        z2 = _zoom(phi_dphi, wolfe1, wolfe2, cur, prev, g0, ~zoom_fwd)
        st = dict(st, nfev=st["nfev"] + z1["nfev"] + z2["nfev"],
                  ngev=st["ngev"] + z1["ngev"] + z2["ngev"])
        keys = ("a_star", "phi_star", "dphi_star", "g_star")
        st = _pick(zoom_back, {k: z1[k] for k in keys}, st)
        st["failed"] = st["failed"] | (zoom_back & z1["failed"])
        st = _pick(found, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i),
                   st)
        st = _pick(zoom_fwd, {k: z2[k] for k in keys}, st)
        st["failed"] = st["failed"] | (zoom_fwd & z2["failed"])
        st["done"] = st["done"] | zoom_back | found | zoom_fwd
        return dict(st, i=st["i"] + 1, a_prev=a_i, phi_prev=phi_i, dphi_prev=dphi_i)

    st = lax.while_loop(lambda st: ~st["done"] & (st["i"] <= maxiter) & ~st["failed"],
                        body, st)
    status = jnp.where(st["failed"], 1, jnp.where(st["i"] > maxiter, 3, 0))
    a = st["a_star"]
    if np.dtype(dt).itemsize < 8:
        # single precision: a vanishing step is kept at 1e-8 so the iteration moves
        a = jnp.where(jnp.abs(a) < 1e-8, jnp.sign(a) * 1e-8, a)
    return (st["failed"] | ~st["done"], a, st["phi_star"], st["g_star"], st["nfev"],
            st["ngev"], status)


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    if maxiter is None:
        maxiter = int(np.size(x0)) * 200
    d = x0.shape[0]
    f0, g0 = value_and_grad(fun)(x0)
    st = dict(converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=jnp.asarray(False),
              k=jnp.asarray(0), nfev=jnp.asarray(1), ngev=jnp.asarray(1), x=x0, f=f0, g=g0,
              H=jnp.eye(d, dtype=x0.dtype), old_f=f0 + jnp.linalg.norm(g0) / 2,
              ls_status=jnp.asarray(0))

    def body(st):
        p = -jnp.dot(st["H"], st["g"])
        failed, a, f1, g1, nfev, ngev, ls_status = _line_search(
            fun, st["x"], p, st["f"], st["old_f"], st["g"], line_search_maxiter)
        s = a * p
        y = g1 - st["g"]
        rho = jnp.reciprocal(jnp.dot(y, s))
        w = jnp.eye(d, dtype=rho.dtype) - rho * s[:, None] * y[None, :]
        H1 = w @ st["H"] @ w.T + rho * s[:, None] * s[None, :]
        H1 = jnp.where(jnp.isfinite(rho), H1, st["H"])
        return dict(converged=jnp.linalg.norm(g1, ord=norm) < gtol, failed=failed,
                    k=st["k"] + 1, nfev=st["nfev"] + nfev, ngev=st["ngev"] + ngev,
                    x=st["x"] + s, f=f1, g=g1, H=H1, old_f=st["f"], ls_status=ls_status)

    st = lax.while_loop(lambda st: ~st["converged"] & ~st["failed"] & (st["k"] < maxiter),
                        body, st)
    status = jnp.where(st["converged"], 0, jnp.where(
        st["k"] == maxiter, 1, jnp.where(st["failed"], 2 + st["ls_status"], -1)))
    return st, status


def minimize(fun, x0, args: tuple = (), *, method: str, tol=None, options=None):
    """The minimum of ``fun(x, *args)`` over a 1-d ``x`` from ``x0``
    (``jax.scipy.optimize.minimize``): ``method`` 'BFGS' (options ``maxiter``, ``norm``,
    ``gtol``, ``line_search_maxiter``; ``tol`` is accepted and, as in JAX, unused).
    Gradients come from ``value_and_grad``. Returns an ``OptimizeResults``. Raises
    TypeError when ``args`` is not a tuple and ValueError for another method."""
    options = {} if options is None else dict(options)
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got "
                        f"{args}")
    if method.lower() != "bfgs":
        raise ValueError(f"Method {method} not recognized")
    x0 = jnp.asarray(x0)
    if x0.dtype.kind not in "fc":
        x0 = x0.astype(jnp.result_type(x0.dtype, float))

    def f(x):
        return fun(x, *args)
    st, status = _bfgs(f, x0, **options)
    return OptimizeResults(x=st["x"], success=st["converged"] & ~st["failed"], status=status,
                           fun=st["f"], jac=st["g"], hess_inv=st["H"], nfev=st["nfev"],
                           njev=st["ngev"], nit=st["k"])


__all__ = ["minimize", "OptimizeResults"]


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
