"""Set routines on flattened arrays (``jax.numpy``): ``isin``, ``union1d``,
``intersect1d``, ``setdiff1d``, ``setxor1d``.

The result of a set routine has a data-dependent length: eagerly it is computed, under jit
it needs a static ``size=`` (ConcretizationTypeError otherwise, as in JAX); slots past the
count hold ``fill_value``. Every routine is built on sorting and masks of fixed shape, so
the same code serves both.

Layer: numpy (compositions of jaxlite.numpy and lax operations).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import errors, lax
from ..core.trace import Tracer
from ._util import check_arraylike, ensure_array, promote_dtypes, public_names


def _jnp():
    from .. import numpy as jnp
    return jnp


def _flat(name, *xs):
    check_arraylike(name, *xs)
    jnp = _jnp()
    return [jnp.ravel(ensure_array(x)) for x in xs]


def _first_of_runs(s):
    """For a sorted 1-d ``s``: True where an element differs from the one before it (NaNs
    count as one value, as unique's equal_nan)."""
    jnp = _jnp()
    if s.shape[0] == 0:
        return jnp.zeros((0,), bool)
    prev, cur = s[:-1], s[1:]
    differs = prev != cur
    if s.dtype.kind in "fc":
        differs = differs & ~(jnp.isnan(prev) & jnp.isnan(cur))
    return jnp.concatenate([jnp.ones((1,), bool), differs])


def _count_to_size(mask, size, name):
    """``size`` as a Python int: given, or the concrete count of ``mask``."""
    if size is not None:
        return operator.index(size)
    count = _jnp().sum(mask)
    if isinstance(count, Tracer):
        raise errors.ConcretizationTypeError(
            count, f"The error arose in {name}(). The size argument of jnp.{name} must be "
                   f"statically specified to use jnp.{name} within JAX transformations.")
    return int(count)


def _compact(values, mask, size, fill_value, default_fill):
    """The elements of ``values`` where ``mask`` holds, in order, in ``size`` slots; the rest
    hold ``fill_value`` (``default_fill(first_kept)`` when None)."""
    jnp = _jnp()
    n = values.shape[0]
    if n == 0:
        fill = 0 if fill_value is None else fill_value
        return jnp.full((size,), fill, values.dtype), jnp.zeros((size,), np.int32)
    (pos,) = jnp.nonzero(mask, size=size, fill_value=0)
    count = jnp.sum(mask)
    out = values[pos]
    if fill_value is None:
        fill = default_fill(out)
    else:
        fill = jnp.asarray(fill_value).astype(values.dtype)
    return jnp.where(jnp.arange(size) < count, out, fill), pos


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         method="auto"):
    """Whether each element of ``element`` occurs in ``test_elements`` (flattened)
    (``jax.numpy.isin``). Boolean array of ``element``'s shape; NaN never matches.
    ``method`` ('auto', 'compare_all', 'binary_search', 'sort') picks JAX's algorithm and
    does not change the result; another value is a ValueError, as in JAX."""
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         f"'binary_search', 'sort', and 'auto'")
    check_arraylike("isin", element, test_elements)
    jnp = _jnp()
    e, t = promote_dtypes(ensure_array(element), ensure_array(test_elements))
    t = jnp.ravel(t)
    if t.shape[0] == 0:
        out = jnp.zeros(e.shape, bool)
    else:
        out = jnp.any(e[..., None] == t, axis=-1)
    return ~out if invert else out


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` and ``ar2`` together (``jax.numpy.union1d``).
    Under jit ``size`` is required; the padding defaults to the smallest value."""
    a, b = _flat("union1d", ar1, ar2)
    jnp = _jnp()
    both = jnp.concatenate(promote_dtypes(a, b))
    if size is None and isinstance(both, Tracer):
        raise errors.ConcretizationTypeError(
            both, "The error arose in union1d(). The size argument of jnp.union1d must be "
                  "statically specified to use jnp.union1d within JAX transformations.")
    return jnp.unique(both, size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` that are not in ``ar2``
    (``jax.numpy.setdiff1d``). Under jit ``size`` is required; the padding defaults to 0."""
    a, b = _flat("setdiff1d", ar1, ar2)
    jnp = _jnp()
    s = jnp.sort(a)
    mask = _first_of_runs(s) & ~isin(s, b)
    size = _count_to_size(mask, size, "setdiff1d")
    out, _ = _compact(s, mask, size, 0 if fill_value is None else fill_value, None)
    return out


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size=None, fill_value=None):
    """The sorted unique values in both ``ar1`` and ``ar2`` (``jax.numpy.intersect1d``),
    in their promoted dtype. With ``return_indices``, also the index of each value's first
    occurrence in the flattened ``ar1`` and ``ar2`` (padding: their lengths). Under jit
    ``size`` is required; the padding defaults to the smallest common value."""
    a, b = _flat("intersect1d", ar1, ar2)
    jnp = _jnp()
    a, b = promote_dtypes(a, b)
    order_a = jnp.argsort(a, stable=True)
    s = a[order_a]
    mask = _first_of_runs(s) & isin(s, b)
    size = _count_to_size(mask, size, "intersect1d")
    out, pos = _compact(s, mask, size, fill_value, lambda v: v[0])
    if not return_indices:
        return out
    count = jnp.sum(mask)
    valid = jnp.arange(size) < count
    ia = jnp.where(valid, order_a[pos] if s.shape[0] else pos, a.shape[0])
    order_b = jnp.argsort(b, stable=True)
    sb = b[order_b]
    jb = jnp.clip(jnp.searchsorted(sb, out), 0, max(b.shape[0] - 1, 0))
    ib = jnp.where(valid, order_b[jb] if b.shape[0] else jb, b.shape[0])
    it = np.int32 if not _x64() else np.int64
    return out, ia.astype(it), ib.astype(it)


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """The sorted unique values in exactly one of ``ar1`` and ``ar2``
    (``jax.numpy.setxor1d``). Under jit ``size`` is required; the padding defaults to the
    smallest such value."""
    a, b = _flat("setxor1d", ar1, ar2)
    jnp = _jnp()
    a, b = promote_dtypes(a, b)
    sa, sb = jnp.sort(a), jnp.sort(b)
    keep = jnp.concatenate([_first_of_runs(sa) & ~isin(sa, b),
                            _first_of_runs(sb) & ~isin(sb, a)])
    vals = jnp.concatenate([sa, sb])
    # kept values first, in sorted order (NaN last); then the rest
    order = jnp.lexsort((vals, ~keep))
    vals, keep = vals[order], keep[order]
    size = _count_to_size(keep, size, "setxor1d")
    out, _ = _compact(vals, keep, size, fill_value, lambda v: v[0])
    return out


def _x64():
    from .. import dtypes
    return dtypes.x64_enabled()


__all__ = public_names(globals())
