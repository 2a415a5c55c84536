"""``jax.lax``'s special functions: thin wrappers over the primitives of
``primitives/special.py`` (floating operands of one dtype, a Python float being a weakly
typed operand of the default float dtype; equal-rank operands broadcast their size-1
dimensions, as JAX's lax does).
"""
from __future__ import annotations

from ..primitives import special as _sp


def _wrap(p, names, doc):
    def fn(*args):
        if len(args) != len(names):
            raise TypeError(f"{p.name}() takes {len(names)} positional arguments "
                            f"({', '.join(names)}) but {len(args)} were given")
        return p.bind(*args)      # size-1 dimensions broadcast in the primitive
    fn.__name__ = fn.__qualname__ = p.name
    fn.__doc__ = (doc + "\n\nMirrors ``jax.lax." + p.name + "``.  Operands: floating, of one "
                  "dtype and one shape (rank-0 operands and size-1 dimensions broadcast); the "
                  "result has that dtype and shape.  Raises TypeError for integer operands or "
                  "mixed dtypes.")
    return fn


erf_inv = _wrap(_sp.erf_inv_p, ("x",), "The inverse error function ``erf_inv(x)``: NaN "
                "outside [-1, 1], +-inf at +-1.")
bessel_i0e = _wrap(_sp.bessel_i0e_p, ("x",), "The exponentially scaled modified Bessel "
                   "function of order 0, ``exp(-|x|) I0(x)``.")
bessel_i1e = _wrap(_sp.bessel_i1e_p, ("x",), "The exponentially scaled modified Bessel "
                   "function of order 1, ``exp(-|x|) I1(x)``.")
igamma = _wrap(_sp.igamma_p, ("a", "x"), "The regularized lower incomplete gamma function "
               "``P(a, x)``; NaN for negative ``a`` or ``x``.")
igammac = _wrap(_sp.igammac_p, ("a", "x"), "The regularized upper incomplete gamma function "
                "``Q(a, x) = 1 - P(a, x)``.")
igamma_grad_a = _wrap(_sp.igamma_grad_a_p, ("a", "x"), "The derivative of ``igamma(a, x)`` "
                      "with respect to ``a`` (not itself differentiable).")
random_gamma_grad = _wrap(_sp.random_gamma_grad_p, ("a", "x"), "The derivative of a "
                          "Gamma(a, 1) sample ``x`` with respect to ``a`` at a fixed quantile "
                          "(implicit reparameterisation).")
betainc = _wrap(_sp.regularized_incomplete_beta_p, ("a", "b", "x"), "The regularized "
                "incomplete beta function ``I_x(a, b)``; differentiable in ``x`` only.")
zeta = _wrap(_sp.zeta_p, ("x", "q"), "The Hurwitz zeta function ``sum_n (n + q)**-x`` (not "
             "differentiable here, as in JAX's lax).")
polygamma = _wrap(_sp.polygamma_p, ("m", "x"), "The polygamma function of order ``m`` (a "
                  "non-negative integer value, else NaN); differentiable in ``x``.")
