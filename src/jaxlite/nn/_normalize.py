"""Reductions of ``jaxlite.nn``: logsumexp, softmax, log_softmax, standardize, one_hot.

Layer: public API (compositions of ``jaxlite.numpy`` and ``jaxlite.lax``).  Softmax-like
functions subtract the maximum first, so large logits do not overflow and rows of -inf
give -inf (logsumexp) rather than NaN.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import dtypes, errors, lax
from .. import numpy as jnp
from ..numpy._named_jit import named_jit
from ..numpy._ufuncs import _promote
from ..numpy._util import canonicalize_axes, check_arraylike


def _inexact(name, *xs, big_ints=False):
    """``xs`` promoted together to an inexact dtype (JAX's rules), as Arrays.

    ``big_ints``: a Python int goes straight to that float dtype, never through the default
    int, as JAX's un-jitted gelu and logsumexp do (they accept 2**40 with x64 off and
    raise OverflowError only past the float range; its jitted functions raise for any int
    outside the default int).
    """
    ints = [big_ints and type(x) is int for x in xs]
    if not builtins.any(ints):
        xs, _ = _promote(name, xs, "inexact")
        return [jnp.asarray(x) for x in xs]
    # the dtype and weak type from a small int of the same kind, then the value converted
    probe, _ = _promote(name, [0 if i else x for i, x in zip(ints, xs)], "inexact")
    out = []
    for i, x, p in zip(ints, xs, probe):
        p = jnp.asarray(p)
        out.append(jnp.asarray(lax.scalar_as(x, p.dtype, p.weak_type)) if i else p)
    return out


def _refuse_bool(name, x):
    """JAX's softmax subtracts the maximum before promoting, and subtraction refuses
    booleans: TypeError, as there."""
    check_arraylike(name, x)
    if dtypes.dtype_and_weak(x)[0] == np.bool_:
        raise TypeError(f"{name} does not accept dtype bool (subtracting the maximum is "
                        f"undefined for booleans); convert to a float dtype first.")


def _axes(axis, ndim):
    return canonicalize_axes(axis, ndim)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a), axis))`` without overflow (``jax.nn.logsumexp``, also
    ``jax.scipy.special.logsumexp``).

    Args:
      a: array; integers promote to the default float.
      axis: int, tuple of ints or None (all axes).
      b: optional weights broadcastable to ``a``; where ``b == 0`` the term is dropped.
      keepdims: keep the reduced axes as size 1.
      return_sign: also return the sign of the sum (then the result is ``log|sum|``).
      where: optional boolean mask of the elements to include.

    Returns the reduced array (``a``'s inexact dtype); a slice that is all -inf (or all
    masked) gives -inf, a negative weighted sum gives NaN unless ``return_sign``.

    Example: ``logsumexp(jnp.array([1000.0, 1000.0]))`` is ``1000.6931``.
    """
    if b is not None:
        a, b = _inexact("logsumexp", a, b, big_ints=True)
    else:
        (a,) = _inexact("logsumexp", a, big_ints=True)
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a = jnp.where(b != 0, a, -np.inf)
    dims = _axes(axis, a.ndim)
    # shift by the largest real part: the imaginary part of a complex result stays the
    # principal one
    amax = jnp.max(jnp.real(a), axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, 0))
    amax_b = amax if keepdims else jnp.expand_dims(amax, dims)
    exp_a = jnp.exp(a - amax_b.astype(a.dtype))
    if b is not None:
        exp_a = exp_a * b
    sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = jnp.sign(sumexp)
    complex_out = np.dtype(sumexp.dtype).kind == "c"
    if return_sign or not complex_out:
        sumexp = jnp.abs(sumexp)
    out = jnp.log(sumexp) + amax.astype(sumexp.dtype)
    if return_sign:
        return out, sign
    if b is not None and not complex_out:
        out = jnp.where(sign < 0, np.asarray(np.nan, out.dtype), out)
    return out


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x), axis))`` without overflow (``jax.nn.logmeanexp``)."""
    (x,) = _inexact("logmeanexp", x)
    dims = _axes(axis, x.ndim)
    if where is None:
        n = 1
        for d in dims:
            n *= x.shape[d]
        count = jnp.asarray(float(n), dtype=x.dtype)
    else:
        count = jnp.sum(jnp.broadcast_to(where, x.shape), axis=dims, keepdims=keepdims,
                        dtype=x.dtype)
    return logsumexp(x, axis=dims, keepdims=keepdims, where=where) - jnp.log(count)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x), axis)``, computed from ``x - max(x)`` so large values do not
    overflow (``jax.nn.softmax``).

    ``where`` masks elements out: they get 0 and do not count in the sum.  Integers
    promote to the default float.  Example: ``softmax(jnp.array([1000.0, 1000.0]))`` is
    ``[0.5, 0.5]``.
    """
    _refuse_bool("softmax", x)
    (x,) = _inexact("softmax", x)
    dims = _axes(axis, x.ndim)
    xmax = jnp.max(x, axis=dims, keepdims=True, where=where, initial=-np.inf)
    unnormalized = jnp.exp(x - lax.stop_gradient(xmax))
    total = jnp.sum(unnormalized, axis=dims, keepdims=True, where=where)
    out = unnormalized / total
    if where is not None:
        out = jnp.where(where, out, 0)
    return out


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x, axis, keepdims=True)`` (``jax.nn.log_softmax``); masked-out
    elements (``where``) get -inf."""
    _refuse_bool("log_softmax", x)
    (x,) = _inexact("log_softmax", x)
    dims = _axes(axis, x.ndim)
    xmax = jnp.max(x, axis=dims, keepdims=True, where=where, initial=-np.inf)
    shifted = x - lax.stop_gradient(xmax)
    total = jnp.sum(jnp.exp(shifted), axis=dims, keepdims=True, where=where)
    out = shifted - jnp.log(total)
    if where is not None:
        out = jnp.where(where, out, -np.inf)
    return out


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis`` (``jax.nn.standardize``).

    ``mean``/``variance`` default to the statistics of ``x`` (``algorithm="fast"``:
    ``E[x^2] - E[x]^2`` clipped at 0; ``"stable"``: ``E[(x - E[x])^2]``).  Raises
    ValueError for another algorithm, and for complex ``x`` with the fast algorithm.
    """
    (x,) = _inexact("standardize", x)
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm {algorithm!r}. Expected 'fast' or 'stable'.")
    # axis goes to jnp.mean unchanged, so a bad axis raises what jnp.mean raises (JAX's rule)
    if mean is None:
        mean = jnp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis=axis, keepdims=True,
                                where=where) - jnp.square(mean)
            # E[x^2] - E[x]^2 can round below zero (a constant row): clipped to 0 as JAX
            # does, else rsqrt(variance + epsilon) grows or is NaN.  clip refuses complex
            # values (ValueError), as JAX's standardize does.
            variance = jnp.clip(variance, 0)
        else:
            variance = jnp.mean(jnp.square(x - mean), axis=axis, keepdims=True, where=where)
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot encoding: a new axis of size ``num_classes`` at ``axis`` that is 1 where
    its index equals ``x`` (``jax.nn.one_hot``).

    ``x`` holds integer class indices (out-of-range and negative ones give all zeros);
    the result has ``x.shape`` with ``num_classes`` inserted at ``axis`` and ``dtype``
    (default: the default float).  Raises TypeError when ``num_classes`` is not a concrete
    integer, ConcretizationTypeError when it is traced.
    """
    check_arraylike("one_hot", x)
    try:
        num_classes = operator.index(num_classes)
    except errors.TracerIntegerConversionError:
        # as JAX: the class count is the new axis's size, which must be known when tracing
        raise errors.ConcretizationTypeError(
            num_classes, "It arose in the num_classes argument of jax.nn.one_hot: it must "
                         "be static.") from None
    except TypeError:
        raise TypeError(f"one_hot: num_classes must be a concrete Python int, got "
                        f"{num_classes!r}; under jit pass it as a static argument.") from None
    dt = dtypes.canonicalize_dtype(np.float64 if dtype is None else dtype)
    x = jnp.asarray(x)
    canonicalize_axes(axis, x.ndim + 1)
    return _one_hot(x, num_classes, dtype=dt, axis=operator.index(axis))


@named_jit("_one_hot", static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
    # as JAX: x with the new axis (size 1) compared with the class indices along it (size 1
    # elsewhere); the comparison broadcasts both.  The indices have x's dtype when it can
    # count them (JAX's choice), else the default integer
    out_axis = canonicalize_axes(axis, x.ndim + 1)[0]
    shape = [1] * x.ndim
    shape.insert(out_axis, num_classes)
    idt = x.dtype if (x.dtype.kind == "f" or (x.dtype.kind in "iu" and x.dtype.itemsize >= 4)) \
        else dtypes.default_int_dtype()
    lhs = lax.expand_dims(x, (out_axis,))
    return jnp.asarray(jnp.equal(lhs, lax.broadcasted_iota(idt, shape, out_axis)),
                       dtype=dtype)
