"""Counting and binning (``jax.numpy``): ``bincount``, ``digitize``, ``histogram``,
``histogram_bin_edges``, ``histogram2d``, ``histogramdd``.

Every count is a scatter-add into a fixed number of bins, so these run under jit once the
number of bins is static (``bincount``'s ``length=``).

Layer: numpy (compositions of jaxlite.numpy and lax operations).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import errors
from ..core.trace import Tracer
from ._util import check_arraylike, ensure_array, promote_dtypes_inexact, public_names


def _jnp():
    from .. import numpy as jnp
    return jnp


def bincount(x, weights=None, minlength: int = 0, *, length=None):
    """The number of occurrences (or the summed ``weights``) of each value ``0..n-1`` in the
    1-d non-negative integer array ``x`` (``jax.numpy.bincount``).

    ``n`` is ``length`` when given (values at or past it are dropped; required under jit),
    else ``max(max(x) + 1, minlength)``. As in JAX, negative values count in bin 0. The
    result is int32 without weights, else the weights' dtype. Raises TypeError for a
    non-integer ``x``, ValueError for ``x`` not 1-d."""
    check_arraylike("bincount", x)
    jnp = _jnp()
    xa = ensure_array(x)
    if xa.dtype.kind not in "iub":
        raise TypeError(f"x argument to bincount must have an integer type; got {xa.dtype}")
    if xa.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(minlength)
    if length is None:
        if isinstance(xa, Tracer) and xa.to_concrete_value() is None:
            raise errors.ConcretizationTypeError(
                xa, "The error occurred because of argument 'length' of jnp.bincount: it "
                    "must be given (a static int) to use jnp.bincount under jit.")
        v = np.asarray(xa.to_concrete_value() if isinstance(xa, Tracer) else xa)
        length = max(minlength, int(v.max()) + 1 if v.size else 0)
    else:
        length = operator.index(length)
    if weights is None:
        w = jnp.ones(xa.shape, np.int32)
    else:
        check_arraylike("bincount", weights)
        w = jnp.broadcast_to(ensure_array(weights), xa.shape)
    idx = jnp.clip(xa.astype(np.int32), 0, None)
    return jnp.zeros((length,), w.dtype).at[idx].add(w, mode="drop")


def digitize(x, bins, right: bool = False, *, method=None):
    """The index of the bin of ``bins`` (1-d, increasing or decreasing) each element of
    ``x`` falls in (``jax.numpy.digitize``): ``bins[i-1] <= x < bins[i]`` for increasing
    bins (``<`` and ``<=`` swapped with ``right``). int32, ``x``'s shape. ``method`` is
    ``searchsorted``'s (None: its default). Raises ValueError for ``bins`` not 1-d and for
    an unknown ``method``."""
    check_arraylike("digitize", x, bins)
    jnp = _jnp()
    xa, b = ensure_array(x), ensure_array(bins)
    if b.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={b}")
    if b.shape[0] == 0:
        return jnp.zeros(xa.shape, np.int32)
    side = "left" if right else "right"
    how = {} if method is None else {"method": method}
    up = jnp.searchsorted(b, xa, side=side, **how)
    down = b.shape[0] - jnp.searchsorted(b[::-1], xa, side=side, **how)
    return jnp.where(b[-1] >= b[0], up, down).astype(np.int32)


def _edges(name, a, bins, range, weights):
    """The bin edges of ``histogram``: a 1-d array of edges as given, or ``bins`` equal
    bins over ``range`` (default ``[min(a), max(a)]``, widened by 0.5 each way when the
    two are equal)."""
    jnp = _jnp()
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    if np.ndim(bins) == 1:
        (e,) = promote_dtypes_inexact(ensure_array(bins))
        return e
    bins = operator.index(bins)
    if bins < 1:
        raise ValueError(f"`bins` must be positive, when an integer; got {bins}")
    (aa,) = promote_dtypes_inexact(a)
    if range is None:
        if aa.size == 0:
            raise ValueError("zero-size array to reduction operation min which has no "
                             "identity")
        lo, hi = jnp.min(aa), jnp.max(aa)
    else:
        lo, hi = (jnp.asarray(r, dtype=aa.dtype) for r in range)
    same = lo == hi
    lo = jnp.where(same, lo - 0.5, lo)
    hi = jnp.where(same, hi + 0.5, hi)
    return jnp.linspace(lo, hi, bins + 1).astype(aa.dtype)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges ``histogram`` uses (``jax.numpy.histogram_bin_edges``): ``bins + 1``
    values, inexact. String ``bins`` raise NotImplementedError (as JAX)."""
    check_arraylike("histogram_bin_edges", a)
    return _edges("histogram_bin_edges", ensure_array(a), bins, range, weights)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """The histogram of the flattened ``a`` (``jax.numpy.histogram``): ``(counts, edges)``
    with float counts (summed ``weights`` when given) and ``len(edges) - 1`` bins, each
    half-open except the last, which includes its right edge; values outside are dropped.
    ``density`` divides by the total and the bin widths."""
    check_arraylike("histogram", a)
    jnp = _jnp()
    aa = jnp.ravel(ensure_array(a))
    edges = _edges("histogram", aa, bins, range, weights)
    (aa,) = promote_dtypes_inexact(aa)
    if weights is None:
        w = jnp.ones(aa.shape, edges.dtype)
    else:
        check_arraylike("histogram", weights)
        w = jnp.ravel(ensure_array(weights))
        (w,) = promote_dtypes_inexact(w)
    idx = jnp.searchsorted(edges, aa, side="right")
    idx = jnp.where(aa == edges[-1], edges.shape[0] - 1, idx)
    counts = jnp.zeros((edges.shape[0] + 1,), w.dtype).at[idx].add(w)[1:-1]
    if density:
        widths = jnp.diff(edges)
        counts = counts / widths / counts.sum()
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """The ``D``-dimensional histogram of ``sample`` of shape ``(N, D)``
    (``jax.numpy.histogramdd``): ``(counts, [edges_0, ..., edges_{D-1}])``; ``bins`` and
    ``range`` per dimension or shared. Counts are int32 (float with weights or
    ``density``); bins as in ``histogram``."""
    check_arraylike("histogramdd", sample)
    jnp = _jnp()
    s = ensure_array(sample)
    if s.ndim != 2:
        raise ValueError(f"histogramdd: sample must be 2-d (N, D); got shape "
                         f"{tuple(s.shape)}")
    n, d = s.shape
    bins_list = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    ranges = list(range) if range is not None else [None] * d
    if len(bins_list) != d or len(ranges) != d:
        raise ValueError(f"histogramdd: bins and range need one entry per dimension ({d})")
    edges, flat, shape = [], None, []
    for k in builtins.range(d):
        col = s[:, k]
        e = _edges("histogramdd", col, bins_list[k], ranges[k], None)
        edges.append(e)
        (c,) = promote_dtypes_inexact(col)
        i = jnp.searchsorted(e, c, side="right")
        i = jnp.where(c == e[-1], e.shape[0] - 1, i)
        shape.append(e.shape[0] + 1)
        flat = i if flat is None else flat * (e.shape[0] + 1) + i
    if weights is None:
        w = jnp.ones((n,), np.float32 if density else np.int32)
    else:
        check_arraylike("histogramdd", weights)
        w = ensure_array(weights)
    total = int(np.prod(shape))
    counts = jnp.zeros((total,), w.dtype).at[flat].add(w).reshape(tuple(shape))
    counts = counts[tuple(slice(1, -1) for _ in builtins.range(d))]
    if density:
        (counts,) = promote_dtypes_inexact(counts)
        counts = counts / counts.sum()
        for k, e in enumerate(edges):
            shape_k = [1] * d
            shape_k[k] = -1
            counts = counts / jnp.diff(e).reshape(shape_k)
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """The 2-d histogram of points ``(x[i], y[i])`` (``jax.numpy.histogram2d``):
    ``(counts, x_edges, y_edges)``; ``bins`` an int, a pair, an edge array or a pair of
    them."""
    check_arraylike("histogram2d", x, y)
    jnp = _jnp()
    xa, ya = ensure_array(x), ensure_array(y)
    if np.ndim(bins) == 1 and not isinstance(bins, (list, tuple)):
        bins = [bins, bins]
    elif isinstance(bins, (list, tuple)) and len(bins) != 2:
        bins = [jnp.asarray(bins), jnp.asarray(bins)]
    counts, (ex, ey) = histogramdd(jnp.stack([xa, ya], axis=1), bins, range, weights,
                                   density)
    return counts, ex, ey


__all__ = public_names(globals())
