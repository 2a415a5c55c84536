"""The float32 transcendental functions of the reference implementations.

Layer: primitives.  Every path that computes a float32 ``exp``, ``sin``, ``erf``, ... on
the host gives the same bits: the eager operations, the interpreter backend and a jitted
program before it tiers up call the functions here, the native CPU backend's generated
code calls ``backends/cpu/_vecmath.py`` (exp, expm1, log, tanh, logistic, sin, cos) or the
C library's float64 function (the others), and the C extension ``_f32math`` performs
exactly those float64 operations, rounding once to float32 (see _f32math.c).  The results
are at most 1 ulp from the correctly rounded value and correctly rounded but for rare
near-ties; NumPy's own float32 loops are up to 2-3 ulps off (exp, log, tan, arcsin), so a
program's bits would change when it tiered up to native code.

Without the C extension (an install without a C compiler) each function computes NumPy's
float64 function and rounds it to float32: as accurate, but it may differ from a native
kernel's result by 1 ulp at a near-tie.

Other dtypes take NumPy's function itself (float64, complex) unchanged.
"""
from __future__ import annotations

import math

import numpy as np

try:
    from . import _f32math as _C
except ImportError:     # pragma: no cover - built without a C compiler
    _C = None

_F32 = np.dtype(np.float32)

_erf64 = np.vectorize(math.erf, otypes=[np.float64])
_erfc64 = np.vectorize(math.erfc, otypes=[np.float64])


def _logistic64(x):
    return 1 / (1 + np.exp(-x))


def _function(name, numpy_fn):
    """The ufunc-like ``f(x, out=None)``: float32 ``x`` through ``_f32math.<name>`` (or,
    without the extension, ``numpy_fn`` in float64 rounded once), any other dtype through
    ``numpy_fn``.  ``out``: a float32 array of ``x``'s shape for float32 ``x`` (it may be
    ``x`` itself), as a ufunc's ``out``; a 0-d ``x`` without ``out`` gives a NumPy scalar,
    as a ufunc does."""
    kernel = getattr(_C, name) if _C is not None else None

    def fn(x, out=None):
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if x.dtype != _F32:
            return numpy_fn(x) if out is None else numpy_fn(x, out=out)
        if kernel is None:
            r = np.asarray(numpy_fn(x.astype(np.float64))).astype(np.float32)
            if out is None:
                return r if r.ndim else r[()]
            out[...] = r
            return out
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        if out is None:
            dst = np.empty(x.shape, _F32)
            kernel(x, dst)
            return dst if dst.ndim else dst[()]
        if out.flags.c_contiguous:
            kernel(x, out)
        else:
            dst = np.empty(x.shape, _F32)
            kernel(x, dst)
            out[...] = dst
        return out
    fn.__name__ = name
    fn.__qualname__ = name
    fn.nin = fn.nout = 1        # as a unary ufunc (what an ``InPlace`` row is asked)
    fn.__doc__ = (f"{name} of an array; float32 through the shared kernel (see "
                  f"primitives/_f32.py), other dtypes through NumPy.")
    return fn


exp = _function("exp", np.exp)
exp2 = _function("exp2", np.exp2)
expm1 = _function("expm1", np.expm1)
log = _function("log", np.log)
log1p = _function("log1p", np.log1p)
tanh = _function("tanh", np.tanh)
logistic = _function("logistic", _logistic64)
sin = _function("sin", np.sin)
cos = _function("cos", np.cos)
tan = _function("tan", np.tan)
arcsin = _function("asin", np.arcsin)
arccos = _function("acos", np.arccos)
arctan = _function("atan", np.arctan)
sinh = _function("sinh", np.sinh)
cosh = _function("cosh", np.cosh)
arcsinh = _function("asinh", np.arcsinh)
arccosh = _function("acosh", np.arccosh)
arctanh = _function("atanh", np.arctanh)
erf = _function("erf", _erf64)
erfc = _function("erfc", _erfc64)

FUNCTIONS = {f.__name__: f for f in (exp, exp2, expm1, log, log1p, tanh, logistic, sin, cos,
                                     tan, arcsin, arccos, arctan, sinh, cosh, arcsinh,
                                     arccosh, arctanh, erf, erfc)}
"""The functions above by their ``_f32math`` names."""

NATIVE_BITS = _C is not None
"""Whether the functions here give the native backend's bits (the C extension is built)."""
