"""Whole-array comparisons and small utilities (``jax.numpy``): ``isclose``/``allclose``,
``array_equal``/``array_equiv``, ``iscomplex``/``isreal``,
``iscomplexobj``/``isrealobj``, ``isscalar``, ``can_cast``, ``isdtype``.

Layer: numpy (compositions of lax ops; the predicates on dtypes are plain Python).
``count_nonzero`` lives with the reductions.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from ..core.array import ArrayImpl
from ..core.trace import Tracer
from ._util import check_arraylike, ensure_array, promote_dtypes, promote_dtypes_inexact
from ._util import public_names

_JAX_TYPES = (ArrayImpl, Tracer)


def _arr(x):
    return x if isinstance(x, _JAX_TYPES) else ensure_array(x)


def _shape(x):
    return tuple(x.shape) if isinstance(x, _JAX_TYPES) else np.shape(x)


def _check_broadcast(name, *xs):
    """The broadcast shape of ``xs``.  Shapes that do not broadcast raise as JAX's do:
    ValueError when the ranks differ (its shape broadcasting), TypeError when they are
    equal (its elementwise op's shape check)."""
    shapes = [_shape(x) for x in xs]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        err = TypeError if len({len(s) for s in shapes}) == 1 else ValueError
        raise err(f"{name} got incompatible shapes for broadcasting: "
                  f"{', '.join(str(s) for s in shapes)}.") from None


def _check_python_ints(*xs):
    """A Python int outside the default integer dtype raises OverflowError, as when JAX
    passes it to its jitted implementation (``isclose(x, 2**40)`` with x64 off)."""
    for x in xs:
        if type(x) is int:
            lax.scalar_as(x, dtypes.default_int_dtype(), True)


def _bcast(x, shape):
    x = _arr(x)
    if x.shape == shape or x.ndim == 0:
        return x
    from ._shape import broadcast_to
    return broadcast_to(x, shape)


def _isnan(x):
    return lax.ne(x, x)


def _isfinite(x):
    if x.dtype.kind == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|``, with equal infinities close and NaNs
    close only with ``equal_nan`` (``jax.numpy.isclose``).

    Operands promote to an inexact dtype and broadcast; the tolerances are cast to its
    real dtype.  Returns a bool array.  Raises TypeError for list arguments, TypeError or
    ValueError (as JAX) for shapes that do not broadcast, OverflowError for a Python int
    outside the default integer dtype.

    Example::

      >>> jnp.isclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.1])).tolist()
      [True, False]
    """
    check_arraylike("isclose", a, b)
    _check_python_ints(a, b)
    shape = _check_broadcast("isclose", a, b)
    a, b = (_arr(x) for x in promote_dtypes_inexact(a, b))
    a, b = _bcast(a, shape), _bcast(b, shape)
    real = np.dtype(np.finfo(a.dtype).dtype) if a.dtype.kind == "c" else a.dtype
    with np.errstate(all="ignore"):
        rtol_c = np.asarray(rtol).astype(real)
        atol_c = np.asarray(atol).astype(real)
    in_range = lax.le(lax.abs(lax.sub(a, b)),
                      lax.add(atol_c, lax.mul(rtol_c, lax._convert(lax.abs(b), real, False))))
    out = lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(_isfinite(b), in_range))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(_isnan(a), _isnan(b)))
    return _arr(out)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of ``a`` is close to ``b`` (see ``isclose``), as a 0-d bool
    array (``jax.numpy.allclose``)."""
    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def _all(x):
    """All of a bool array, as a strongly typed 0-d bool (JAX's all() drops weak types)."""
    if x.ndim:
        x = lax.reduce_and(x, tuple(range(x.ndim)))
    return _arr(lax._convert(x, np.dtype(np.bool_), False))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether ``a1`` and ``a2`` have one shape and equal elements (after promotion), as a
    0-d bool array (``jax.numpy.array_equal``).  Different shapes give False; NaNs are
    equal only with ``equal_nan``.  Lists are accepted."""
    from ._creation import asarray
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return ensure_array(np.asarray(False))
    x, y = (_arr(v) for v in promote_dtypes(a1, a2))
    eq = lax.eq(x, y)
    if equal_nan and dtypes.is_inexact(x.dtype):
        eq = lax.bitwise_or(eq, lax.bitwise_and(_isnan(x), _isnan(y)))
    return _all(eq)


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` are equal after broadcasting, as a 0-d bool array
    (``jax.numpy.array_equiv``).  Shapes of different ranks that do not broadcast give
    False; equal ranks that do not broadcast raise TypeError, as in JAX."""
    from ._creation import asarray
    a1, a2 = asarray(a1), asarray(a2)
    try:
        shape = _check_broadcast("eq", a1, a2)
    except ValueError:
        return ensure_array(np.asarray(False))
    x, y = (_bcast(v, shape) for v in promote_dtypes(a1, a2))
    return _all(lax.eq(x, y))


def _imag_zero_test(name, x, cmp):
    """``cmp(imag(x), 0)``: the result is weakly typed when ``x`` is, as in JAX."""
    check_arraylike(name, x)
    x = _arr(x)
    im = lax.imag(x) if x.dtype.kind == "c" else \
        lax._convert(lax.full_like(x, 0), x.dtype, x.weak_type)
    return cmp(im, lax.scalar_as(0, im.dtype, im.weak_type))


def iscomplex(x):
    """Elementwise: is the imaginary part non-zero (``jax.numpy.iscomplex``).

    Returns a bool array of ``x``'s shape, weakly typed when ``x`` is (a Python scalar).
    Raises TypeError for a non-array argument (a list, a string)."""
    return _imag_zero_test("iscomplex", x, lax.ne)


def isreal(x):
    """Elementwise: is the imaginary part zero (``jax.numpy.isreal``); as ``iscomplex``."""
    return _imag_zero_test("isreal", x, lax.eq)


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (or holds complex Python numbers)
    (``jax.numpy.iscomplexobj``).

    None, strings and real Python or NumPy scalars are False; another object without a
    dtype is converted as ``jnp.asarray`` would, so a list holding a string raises TypeError,
    as in JAX."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:
        from ._creation import asarray
        dt = asarray(x).dtype
    return np.dtype(dt).kind == "c"


def isrealobj(x) -> bool:
    """``not iscomplexobj(x)`` (``jax.numpy.isrealobj``)."""
    return not iscomplexobj(x)


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d array
    (``jax.numpy.isscalar``)."""
    if isinstance(element, _JAX_TYPES + (np.ndarray,)):
        return element.ndim == 0
    return bool(np.isscalar(element))


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether a value of dtype ``from_`` (a dtype or an array) can be cast to ``to`` under
    ``casting`` ('no', 'equiv', 'safe', 'same_kind', 'unsafe') (``jax.numpy.can_cast``).

    Raises ValueError for an unknown ``casting``, TypeError for Python scalars (NumPy 2's
    rule: their dtype depends on the value).
    """
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of {', '.join(repr(c) for c in _CASTINGS)} "
                         f"(got {casting!r})")
    if isinstance(from_, (bool, int, float, complex)) and not isinstance(from_, np.generic):
        raise TypeError("can_cast() does not support Python ints, floats, and complex because "
                        "the result used to depend on the value.")
    return bool(np.can_cast(_np_dtype(from_), _np_dtype(to), casting))


def _np_dtype(x) -> np.dtype:
    """np.dtype of a dtype, a type (NumPy's or jaxlite's scalar types) or an array."""
    if isinstance(x, np.dtype):
        return x
    if isinstance(x, type) and issubclass(x, np.generic):
        return np.dtype(x)
    dt = getattr(x, "dtype", None)
    return np.dtype(dt if dt is not None else x)


_KINDS = {
    "bool": lambda d: d == np.bool_,
    "signed integer": lambda d: dtypes.kind(d) == "i",      # int4 and kin included
    "unsigned integer": lambda d: dtypes.kind(d) == "u",
    "integral": dtypes.is_int,
    "real floating": dtypes.is_float,
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d != np.bool_,
}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a kind name ('bool', 'signed integer', 'unsigned
    integer', 'integral', 'real floating', 'complex floating', 'numeric'), a dtype, or a
    tuple of these (``jax.numpy.isdtype``).  Raises ValueError for an unknown name."""
    dt = _np_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_KINDS)}, or "
                                 f"a dtype, or a tuple of these")
            if _KINDS[k](dt):
                return True
        elif dt == _np_dtype(k):
            return True
    return False


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` where ``condition`` is true
    (``jax.numpy.compress``; ``axis=None`` works on the flattened array).

    ``condition`` is 1-D; entries past ``a.shape[axis]`` must be false.  Without ``size``
    the result's length depends on the values, so ``condition`` must be concrete (under
    jit it raises a tracer error); with ``size`` the result has exactly ``size`` slices,
    padded with ``fill_value``.

    Raises:
      ValueError: ``condition`` is not 1-D, or is true past the end of the axis.
      NotImplementedError: ``out`` is given.
    """
    from ._creation import arange, asarray
    from ._reductions import any as any_, count_nonzero
    from ._shape import moveaxis, ravel
    from ._sorting import nonzero
    from ._ufuncs import where
    if out is not None:
        raise NotImplementedError("jnp.compress: out= is unsupported (arrays are immutable)")
    cond = asarray(condition)
    if cond.ndim != 1:
        raise ValueError(f"compress: condition must be a 1-D array, got shape {cond.shape}")
    cond = cond.astype(bool)
    arr = ravel(a) if axis is None else asarray(a)
    axis = 0 if axis is None else _normalize_axis(axis, arr.ndim)
    arr = moveaxis(arr, axis, 0)
    n = arr.shape[0]
    # like JAX, this needs a concrete condition unless ``size`` fixes the result's length
    # and the condition is no longer than the axis
    if (size is None or cond.shape[0] > n) and bool(any_(cond[n:])):
        raise ValueError("compress: condition has true entries past the end of the axis")
    cond = cond[:n]
    arr = arr[:cond.shape[0]]
    if size is None:
        picked = arr[cond]
    else:
        idx = nonzero(cond, size=size, fill_value=0)[0]
        keep = arange(size) < count_nonzero(cond)
        keep = keep.reshape((size,) + (1,) * (arr.ndim - 1))
        picked = where(keep, arr[idx], asarray(fill_value, dtype=arr.dtype))
    return moveaxis(picked, 0, axis)


def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]`` elementwise, all operands broadcast together
    (``jax.numpy.choose``).

    ``mode``: ``'raise'`` checks every index is in ``[0, len(choices))`` (so ``a`` must be
    concrete: under jit it raises ConcretizationTypeError), ``'wrap'`` takes indices modulo
    ``len(choices)``, ``'clip'`` clamps them.  The result's dtype is the choices' common dtype.

    Raises:
      ValueError: an index is out of range with ``mode='raise'``, or an unknown mode.
      NotImplementedError: ``out`` is given.
    """
    from ._creation import asarray
    from ._shape import broadcast_arrays, stack, take_along_axis
    from ._ufuncs import clip, remainder
    if out is not None:
        raise NotImplementedError("jnp.choose: out= is unsupported (arrays are immutable)")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"jnp.choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    idx = asarray(a)
    if idx.dtype.kind not in "iub":
        raise TypeError(f"jnp.choose: the index array must be integer, got {idx.dtype}")
    n = len(choices)
    if mode == "raise":
        if isinstance(idx, Tracer) and idx.to_concrete_value() is None:
            from ..errors import ConcretizationTypeError
            raise ConcretizationTypeError(
                idx, "jnp.choose(mode='raise') checks its indices, which needs concrete "
                     "values; pass mode='wrap' or mode='clip' under jit.")
        if bool(((idx < 0) | (idx >= n)).any()):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = remainder(idx, n)
    else:
        idx = clip(idx, 0, n - 1)
    idx, *cs = broadcast_arrays(idx, *choices)
    stacked = stack(cs)
    return take_along_axis(stacked, idx[None].astype(np.int32), axis=0)[0]


def _normalize_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


__all__ = public_names(globals())
