"""``jaxlite.numpy``: the NumPy API on immutable jaxlite arrays (``jax.numpy``).

Every function is a composition of primitives (through ``jaxlite.lax``), so it runs
eagerly, under jit, and (later) under grad and vmap alike.  Submodules group the functions;
this module re-exports their ``__all__``.
"""
from __future__ import annotations

import numpy as _np

from .. import dtypes as _dtypes
from ..core.array import Array as ndarray  # noqa: F401
from ..dtypes import (bfloat16, bool_, complex64, complex128, finfo, float16, float32,  # noqa
                      float64, iinfo, int8, int16, int32, int64, issubdtype, promote_types,
                      result_type, uint8, uint16, uint32, uint64)
from ..dtypes import (float8_e3m4, float8_e4m3, float8_e4m3b11fnuz,  # noqa: F401
                      float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
                      float8_e8m0fnu, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, int4,
                      uint4, int2, uint2)
try:     # int1/uint1 need an ml_dtypes newer than 0.5.4 (JAX likewise defines them then)
    from ..dtypes import int1, uint1  # noqa: F401
except ImportError:
    pass
from ._creation import *  # noqa: F401,F403
from ._linalg import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._shape import *  # noqa: F401,F403
from ._ufuncs import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._misc import *  # noqa: F401,F403
from ._index_tricks import *  # noqa: F401,F403
from ._signal import *  # noqa: F401,F403
from ._setops import *  # noqa: F401,F403
from ._editing import *  # noqa: F401,F403
from ._histogram import *  # noqa: F401,F403
from ._polynomial import *  # noqa: F401,F403
from ._construct import *  # noqa: F401,F403
from ._io import *  # noqa: F401,F403
from ..dlpack import numpy_from_dlpack as from_dlpack  # noqa: F401
from ._functional import (apply_along_axis, apply_over_axes, frompyfunc, ufunc,  # noqa: F401
                          vectorize)
from . import linalg  # noqa: F401
from . import fft  # noqa: F401
from ._array_api import ARRAY_API_VERSION as __array_api_version__  # noqa: F401
from ._array_api import __array_namespace_info__  # noqa: F401
from . import _methods  # noqa: F401  (installs operators and methods on Array and tracers)


def _add_out_sharding():
    # JAX's ``out_sharding=`` of these layout functions: the result resharded there, its
    # operands made whole first (``_sharding_constraints.with_out_sharding``); the module's
    # own code calls the plain functions
    from ..lax._sharding_constraints import with_out_sharding
    g = globals()
    for name in ("reshape", "ravel", "repeat", "broadcast_to", "bincount", "percentile"):
        g[name] = with_out_sharding(g[name], f"jnp.{name}", creation=False)


_add_out_sharding()
from ._functional import wrap_ufuncs as _wrap_ufuncs

# jnp.add, jnp.multiply, ... are ufunc objects (with .reduce, .at, ...), as in JAX
globals().update(_wrap_ufuncs(globals()))

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
bool = _np.bool_  # noqa: A001
float_ = _np.float64
complex_ = _np.complex128
int_ = _np.int64
uint = _np.uint64
dtype = _np.dtype
generic = _np.generic
number = _np.number
inexact = _np.inexact
floating = _np.floating
complexfloating = _np.complexfloating
integer = _np.integer
signedinteger = _np.signedinteger
unsignedinteger = _np.unsignedinteger
character = _np.character
double = float64
single = float32
cdouble = complex128
csingle = complex64
object_ = _np.object_
flexible = _np.flexible
ComplexWarning = _np.exceptions.ComplexWarning
