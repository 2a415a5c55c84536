"""Series and signals (``jax.numpy``): differences (``diff``, ``ediff1d``, ``gradient``),
integration (``trapezoid``), interpolation (``interp``), ``unwrap``, convolution
(``convolve``, ``correlate``), ``vander``, ``cov``/``corrcoef`` and the window functions
(``bartlett``, ``blackman``, ``hamming``, ``hanning``, ``kaiser``).

Layer: numpy (compositions of jaxlite.numpy and lax operations, so each is
differentiable, batchable and jit-able; convolution is ``lax.conv_general_dilated``).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes, errors, lax
from ..core.trace import Tracer
from ..transforms.autodiff import custom_jvp
from ._named_jit import named_jit
from ._util import (canonicalize_axis, check_arraylike, ensure_array, promote_dtypes,
                    promote_dtypes_inexact, public_names)


def _jnp():
    from .. import numpy as jnp
    return jnp


def _slice_along(x, axis, start, stop):
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(start, stop)
    return x[tuple(idx)]


# ---- differences -------------------------------------------------------------------------

@named_jit("diff", static_argnames=("n", "axis"))
def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (``jax.numpy.diff``).

    ``a`` of shape ``(..., k, ...)`` gives ``(..., k - n, ...)`` (empty once ``n >= k``) in
    ``a``'s dtype (booleans: ``!=`` of neighbours; unsigned integers wrap). ``prepend`` and
    ``append`` (scalars broadcast to size 1 along ``axis``) are joined first, promoting.
    Raises ValueError for ``n < 0`` and for a 0-d ``a``; TypeError for a list."""
    check_arraylike("diff", a)
    jnp = _jnp()
    x = ensure_array(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if x.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {x}")
    axis = canonicalize_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        check_arraylike("diff", extra)
        e = ensure_array(extra)
        if e.ndim == 0:
            shape = list(x.shape)
            shape[axis] = 1
            e = jnp.broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        seq = [p for p in (parts[0], x, parts[1]) if p is not None]
        x = jnp.concatenate(seq, axis=axis)
    for _ in range(n):
        k = x.shape[axis]
        if k == 0:
            break
        hi, lo = _slice_along(x, axis, 1, None), _slice_along(x, axis, None, k - 1)
        x = lax.ne(hi, lo) if x.dtype == np.bool_ else lax.sub(hi, lo)
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened ``ary``, with ``to_begin``/``to_end`` (flattened)
    joined at the ends (``jax.numpy.ediff1d``). The result has ``ary``'s dtype."""
    check_arraylike("ediff1d", ary)
    jnp = _jnp()
    x = jnp.ravel(ensure_array(ary))
    out = lax.sub(x[1:], x[:-1]) if x.shape[0] else x
    seq = [out]
    if to_begin is not None:
        check_arraylike("ediff1d", to_begin)
        seq.insert(0, jnp.ravel(ensure_array(to_begin)).astype(x.dtype))
    if to_end is not None:
        check_arraylike("ediff1d", to_end)
        seq.append(jnp.ravel(ensure_array(to_end)).astype(x.dtype))
    return seq[0] if len(seq) == 1 else jnp.concatenate(seq)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of sampled values ``f`` by second-order central differences inside and
    first-order ones at the edges (``jax.numpy.gradient``).

    ``varargs``: one spacing for all axes, or one per axis (a scalar step or the 1-d
    coordinates along that axis). Returns one array per axis (a list), or a single array
    when one axis is asked for. Inexact results. ``edge_order=2`` is not supported
    (NotImplementedError, as JAX). Raises ValueError for an axis shorter than 2."""
    check_arraylike("gradient", f)
    jnp = _jnp()
    if edge_order is not None and edge_order != 1:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not "
                                  "supported.")
    (y,) = promote_dtypes_inexact(ensure_array(f))
    if axis is None:
        axes = tuple(range(y.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, y.ndim) for a in axis)
    else:
        axes = (canonicalize_axis(axis, y.ndim),)
    if not varargs:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("Invalid number of spacing arguments to jnp.gradient: expected "
                        f"{len(axes)}, got {len(varargs)}")
    out = []
    for ax, h in zip(axes, spacing):
        if y.shape[ax] < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        if np.ndim(h) == 0:
            inner = (_slice_along(y, ax, 2, None) - _slice_along(y, ax, None, -2)) / (2 * h)
            first = (_slice_along(y, ax, 1, 2) - _slice_along(y, ax, 0, 1)) / h
            last = (_slice_along(y, ax, -1, None) - _slice_along(y, ax, -2, -1)) / h
        else:
            x = ensure_array(h)
            dx = lax.sub(x[1:], x[:-1])
            bshape = [1] * y.ndim
            bshape[ax] = -1
            a = dx[:-1].reshape(bshape)
            b = dx[1:].reshape(bshape)
            y0, y1, y2 = (_slice_along(y, ax, None, -2), _slice_along(y, ax, 1, -1),
                          _slice_along(y, ax, 2, None))
            inner = (a * a * y2 + (b * b - a * a) * y1 - b * b * y0) / (a * b * (a + b))
            first = (_slice_along(y, ax, 1, 2) - _slice_along(y, ax, 0, 1)) / dx[0]
            last = (_slice_along(y, ax, -1, None) - _slice_along(y, ax, -2, -1)) / dx[-1]
        out.append(jnp.concatenate([first, inner, last], axis=ax))
    return out[0] if len(out) == 1 else out


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of samples ``y`` along ``axis`` by the trapezoidal rule
    (``jax.numpy.trapezoid``), at coordinates ``x`` (1-d along ``axis``, or ``y``'s shape)
    or spacing ``dx``. Inexact result with ``axis`` removed. An empty axis raises
    IndexError (as JAX)."""
    jnp = _jnp()
    if x is None:
        check_arraylike("trapezoid", y)
        (yy,) = promote_dtypes_inexact(ensure_array(y))
        dxa = dx
    else:
        check_arraylike("trapezoid", y, x)
        yy, xx = promote_dtypes_inexact(ensure_array(y), ensure_array(x))
        if xx.ndim == 1:
            dxa = lax.sub(xx[1:], xx[:-1])
        else:
            xx = jnp.moveaxis(xx, axis, -1)
            dxa = lax.sub(xx[..., 1:], xx[..., :-1])
    yy = jnp.moveaxis(yy, axis, -1)
    if yy.shape[-1] == 0:
        raise IndexError("index is out of bounds for axis 0 with size 0")
    return 0.5 * jnp.sum(dxa * (yy[..., 1:] + yy[..., :-1]), axis=-1)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x``
    (``jax.numpy.interp``); ``xp`` increasing (not checked). Outside ``xp`` the result is
    ``left``/``right`` (default: ``fp``'s end values); with ``period`` the coordinates
    wrap. Result: ``x``'s shape, float (complex if ``fp`` is). Raises ValueError when
    ``xp``/``fp`` are not 1-d of one length, when ``x`` or ``xp`` is complex, or when
    ``period`` is 0."""
    check_arraylike("interp", x, xp, fp)
    jnp = _jnp()
    xa, xpa, fpa = ensure_array(x), ensure_array(xp), ensure_array(fp)
    if xpa.ndim != 1 or fpa.ndim != 1 or xpa.shape[0] != fpa.shape[0]:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    if xa.dtype.kind == "c" or xpa.dtype.kind == "c":
        # complex coordinates have no order to interpolate along (JAX refuses them too)
        raise ValueError(f"interp: complex x values not supported (x {xa.dtype.name}, xp "
                         f"{xpa.dtype.name}); only fp may be complex")
    xa, xpa = promote_dtypes_inexact(xa, xpa)
    (fpa,) = promote_dtypes_inexact(fpa)
    if period is not None:
        if not isinstance(period, Tracer) and np.ndim(period) == 0 and period == 0:
            raise ValueError("period must be a non-zero value; got 0")
        period = jnp.abs(period)
        xa = xa % period
        xpa = xpa % period
        order = jnp.argsort(xpa)
        xpa, fpa = xpa[order], fpa[order]
        xpa = jnp.concatenate([xpa[-1:] - period, xpa, xpa[:1] + period])
        fpa = jnp.concatenate([fpa[-1:], fpa, fpa[:1]])
    i = jnp.clip(jnp.searchsorted(xpa, xa, side="right"), 1, xpa.shape[0] - 1)
    x0, x1 = xpa[i - 1], xpa[i]
    f0, f1 = fpa[i - 1], fpa[i]
    dx = x1 - x0
    delta = xa - x0
    # a step below the spacing of eps counts as a repeated coordinate: take its left value
    small = jnp.abs(dx) <= float(np.spacing(dtypes.finfo(dx.dtype).eps))
    out = jnp.where(small, f0, f0 + (delta / jnp.where(small, 1, dx)) * (f1 - f0))
    if period is None:
        lo = fpa[0] if left is None else left
        hi = fpa[-1] if right is None else right
        out = jnp.where(xa < xpa[0], lo, out)
        out = jnp.where(xa > xpa[-1], hi, out)
    return out.astype(fpa.dtype)


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) along ``axis``
    replaced by their value modulo ``period`` (``jax.numpy.unwrap``). Result of ``p``'s
    shape in the promoted dtype of ``p`` and ``period`` (integer for integer ``p`` and
    ``period``). Raises ValueError for complex input."""
    check_arraylike("unwrap", p)
    jnp = _jnp()
    x, per = promote_dtypes(ensure_array(p), period)
    if x.dtype.kind == "c":
        raise ValueError("jnp.unwrap does not support complex inputs.")
    if x.dtype == np.bool_:
        x, per = promote_dtypes_inexact(x, per)
    if x.shape[axis] == 0:
        return x
    if x.dtype.kind in "iu":
        # an integer period: the half-interval rounds down and is ambiguous only when even
        half, ambiguous = per // 2, per % 2 == 0
    else:
        half, ambiguous = per / 2, True
    discont = per / 2 if discont is None else discont
    d = jnp.diff(x, axis=axis)
    dd = (d + half) % per - half
    dd = jnp.where(ambiguous & (dd == -half) & (d > 0), half, dd)
    corr = jnp.where(jnp.abs(d) < discont, 0, dd - d)
    cum = jnp.cumsum(corr, axis=axis)
    ax = canonicalize_axis(axis, x.ndim)
    zero = jnp.zeros_like(_slice_along(x, ax, 0, 1))
    return x + jnp.concatenate([zero, cum.astype(x.dtype)], axis=ax)


# ---- convolution -------------------------------------------------------------------------

_MODES = ["full", "same", "valid"]


def _conv1d(name, a, v, mode, precision, preferred_element_type, correlate_):
    check_arraylike(name, a, v)
    av, vv = ensure_array(a), ensure_array(v)
    if av.ndim != 1 or vv.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if av.shape[0] == 0 or vv.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {tuple(av.shape)} "
                         f"and {tuple(vv.shape)}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}")
    if preferred_element_type is None:
        # NumPy's convolutions are inexact; a preferred type keeps integer operands integer
        av, vv = promote_dtypes_inexact(av, vv)
    else:
        av, vv = promote_dtypes(av, vv)
    swapped = False
    if vv.shape[0] > av.shape[0]:
        av, vv, swapped = vv, av, True
    if correlate_:
        conj = _jnp().conj
        vv = conj(vv)
        if swapped:
            # correlate(v, a) reversed and conjugated is correlate(a, v)
            av, vv = conj(av), conj(vv)
    else:
        vv = lax.rev(vv, (0,))
    n, m = av.shape[0], vv.shape[0]
    if mode == "full":
        pad = (m - 1, m - 1)
    elif mode == "same":
        pad = (m // 2, m - m // 2 - 1)
    else:
        pad = (0, 0)
    out = lax.conv_general_dilated(av[None, None, :], vv[None, None, :], (1,), [pad],
                                   precision=precision,
                                   preferred_element_type=preferred_element_type)[0, 0]
    if correlate_ and swapped:
        out = lax.rev(out, (0,))
    return out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of two 1-d arrays (``jax.numpy.convolve``).

    ``mode``: 'full' (length ``n + m - 1``), 'same' (``max(n, m)``) or 'valid'
    (``max(n, m) - min(n, m) + 1``). Inexact result (integers promote to float). Raises
    ValueError for inputs that are not 1-d, empty inputs, or an unknown mode."""
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type, False)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation ``c[k] = sum_n a[n + k] * conj(v[n])`` of two 1-d arrays
    (``jax.numpy.correlate``); modes and errors as ``convolve`` (default 'valid')."""
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type, True)


# ---- matrices of series --------------------------------------------------------------------

def vander(x, N=None, increasing: bool = False):
    """The Vandermonde matrix of a 1-d ``x``: ``(len(x), N)`` with columns ``x**k``
    (powers decreasing unless ``increasing``) (``jax.numpy.vander``). ``x``'s dtype.
    Raises ValueError for ``x`` not 1-d or a negative ``N``."""
    check_arraylike("vander", x)
    jnp = _jnp()
    xa = ensure_array(x)
    if xa.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    if xa.dtype == np.bool_:
        raise TypeError("vander does not accept dtype bool.")
    N = xa.shape[0] if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    powers = jnp.arange(N, dtype=np.int32)
    if not increasing:
        powers = powers[::-1]
    return jnp.power(xa[:, None], powers.astype(xa.dtype))


def _inexact_dtype_arg(dtype, name):
    """``dtype`` (or None) as a NumPy dtype; ValueError unless float or complex."""
    if dtype is None:
        return None
    dt = np.dtype(dtype)
    if not dtypes.issubdtype(dt, np.inexact):
        raise ValueError(f"{name}: dtype must be a subclass of float or complex; got "
                         f"dtype={dt.name}")
    return dtypes.canonicalize_dtype(dt)


def _cov_weights(v, name, n_obs, integer):
    check_arraylike("cov", v)
    v = ensure_array(v)
    if v.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if v.shape[0] != n_obs:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if integer and not dtypes.issubdtype(v.dtype, np.integer):
        raise TypeError(f"fweights must be integer, got dtype {np.dtype(v.dtype).name}.")
    # NumPy refuses negative weights; JAX (and so jaxlite) takes their magnitudes
    return _jnp().abs(v)


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None,
        aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows (or, with ``rowvar=False``, the
    columns) of ``m`` (and ``y``) (``jax.numpy.cov``), with integer frequency weights
    ``fweights`` and observation weights ``aweights`` (their magnitudes, as JAX).

    ``m`` and ``y`` are promoted together to an inexact dtype (or computed in ``dtype``).
    A 1-D ``m`` is one variable whatever ``rowvar`` says; a 2-D ``m`` with
    ``rowvar=False`` is transposed even with one row (shape ``(1, 3)`` gives ``(3, 3)``, as
    NumPy >= 2.2).  Result: ``(k, k)`` for ``k`` variables, 0-d for one.  No variables:
    float32 ``(0, 0)``; no observations: all NaN; NaN or inf where the degrees of freedom
    are not positive.

    Raises:
      ValueError: ``m`` or ``y`` of rank above 2, a non-inexact ``dtype``.
      RuntimeError: weights that are not 1-D or not one per observation.
      TypeError: non-integer ``fweights``.
    """
    check_arraylike("cov", m)
    jnp = _jnp()
    if y is not None:
        check_arraylike("cov", y)
        ma, ya = promote_dtypes_inexact(ensure_array(m), ensure_array(y))
        if ya.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        (ma,) = promote_dtypes_inexact(ensure_array(m))
    if ma.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    dtype = _inexact_dtype_arg(dtype, "cov")
    X = jnp.atleast_2d(ma)
    if not rowvar and ma.ndim == 2:
        X = X.T
    if X.shape[0] == 0:
        return jnp.array([]).reshape(0, 0)
    if y is not None:
        Y = jnp.atleast_2d(ya)
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = jnp.concatenate([X, Y], axis=0)
    k, n_obs = X.shape
    if n_obs == 0:
        # no observations: every moment is 0/0
        return jnp.full(() if k == 1 else (k, k), np.nan, dtype=X.dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None if fweights is None else _cov_weights(fweights, "fweights", n_obs, True)
    aw = None if aweights is None else _cov_weights(aweights, "aweights", n_obs, False)
    if aw is not None:
        w = aw if w is None else w * aw
    if dtype is not None:
        X = X.astype(dtype)
        w = None if w is None else w.astype(dtype)
    avg, w_sum = jnp.average(X, axis=1, weights=w, returned=True)
    if w is None:
        fact = n_obs - ddof
    else:
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * jnp.sum(w * aw) / w_sum
    X = X - avg[:, None]
    X_T = X.T if w is None else (X * w[None, :]).T
    return jnp.squeeze(jnp.true_divide(jnp.dot(X, jnp.conj(X_T)), fact))


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
    """Pearson correlation coefficients (``jax.numpy.corrcoef``): ``cov(x, y, rowvar,
    dtype=dtype)`` normalised by the standard deviations, real (and imaginary) parts clipped
    to [-1, 1]. Shapes as ``cov``; one variable gives ``c / c`` (1, or NaN).

    Raises:
      ValueError: a non-inexact ``dtype``, and as ``cov``.
    """
    check_arraylike("corrcoef", x)
    jnp = _jnp()
    dtype = _inexact_dtype_arg(dtype, "corrcoef")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = jnp.diag(c)
    stddev = jnp.sqrt(jnp.real(d)).astype(c.dtype)
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if jnp.iscomplexobj(c):
        return lax.complex(jnp.clip(jnp.real(c), -1, 1), jnp.clip(jnp.imag(c), -1, 1))
    return jnp.clip(c, -1, 1)


# ---- window functions -----------------------------------------------------------------------

def _window_n(M, name):
    if isinstance(M, Tracer):
        raise errors.ConcretizationTypeError(M, f"It arose in the M argument of {name}.")
    M = int(M)
    if M < 0:
        # JAX's type for a negative length (its array creation's shape check)
        raise TypeError(f"{name}: the window length M must be nonnegative, got {M}.")
    return M


def _window(M, name, body):
    jnp = _jnp()
    M = _window_n(M, name)
    dt = dtypes.default_float_dtype()
    if M == 0:
        return jnp.zeros((0,), dt)
    if M == 1:
        return jnp.ones((1,), dt)
    n = jnp.arange(M, dtype=dt)
    return body(n, M).astype(dt)


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points (``jax.numpy.bartlett``),
    float32 (float64 under x64); empty for ``M < 1``."""
    jnp = _jnp()
    return _window(M, "bartlett", lambda n, M: 1 - jnp.abs(2 * n - M + 1) / (M - 1))


def blackman(M):
    """The Blackman window of ``M`` points (``jax.numpy.blackman``)."""
    jnp = _jnp()
    return _window(M, "blackman", lambda n, M: 0.42 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1))
                   + 0.08 * jnp.cos(4 * np.pi * n / (M - 1)))


def hamming(M):
    """The Hamming window of ``M`` points (``jax.numpy.hamming``)."""
    jnp = _jnp()
    return _window(M, "hamming", lambda n, M: 0.54 - 0.46 * jnp.cos(2 * np.pi * n / (M - 1)))


def hanning(M):
    """The Hann window of ``M`` points (``jax.numpy.hanning``)."""
    jnp = _jnp()
    return _window(M, "hanning", lambda n, M: 0.5 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1)))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points and shape ``beta`` (``jax.numpy.kaiser``):
    ``i0(beta * sqrt(1 - (2n/(M-1) - 1)**2)) / i0(beta)``."""
    jnp = _jnp()

    def body(n, M):
        alpha = (M - 1) / 2.0
        r = (n - alpha) / alpha
        b = jnp.asarray(beta, dtype=n.dtype)
        return i0(b * jnp.sqrt(1 - r * r)) / i0(b)
    return _window(M, "kaiser", body)


@custom_jvp
def _i0(x):
    jnp = _jnp()
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    jnp = _jnp()
    # i0' = i1 = exp(|x|) * i1e(x): 0 at 0, where exp(|x|)'s kink would give +-1
    return _i0(x), jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x) * t


def i0(x):
    """The modified Bessel function of the first kind, order 0 (``jax.numpy.i0``),
    as ``exp(|x|) * i0e(x)``, with derivative ``i1(x)``; inexact result. Complex input
    raises ValueError."""
    check_arraylike("i0", x)
    (xa,) = promote_dtypes_inexact(ensure_array(x))
    if xa.dtype.kind == "c":
        raise ValueError("i0 does not support complex-valued inputs.")
    return _i0(xa)


__all__ = public_names(globals())
