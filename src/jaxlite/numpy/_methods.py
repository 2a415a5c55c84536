"""Installs operators and NumPy-style methods on ``Array`` and on tracers.

Both get the very same functions, so a function reads the same eagerly and under jit.
Operators return NotImplemented for operands that are not array-like, letting Python
raise its usual TypeError (or try the other operand's reflected method).
"""
from __future__ import annotations

from .. import dtypes, lax
from ..core.array import ArrayImpl
from ..core.trace import Tracer
from . import _indexing, _linalg, _reductions, _shape, _ufuncs
from ._util import is_arraylike


# array-like without asking isinstance (an ABC check on ArrayImpl costs more than ``x + 1``)
_ARRAYLIKE_TYPES = frozenset({ArrayImpl, bool, int, float, complex})


def _binop(fn, reflected=False):
    if reflected:
        def op(self, other):
            if type(other) not in _ARRAYLIKE_TYPES and not is_arraylike(other):
                return NotImplemented
            return fn(other, self)
    else:
        def op(self, other):
            if type(other) not in _ARRAYLIKE_TYPES and not is_arraylike(other):
                return NotImplemented
            return fn(self, other)
    return op


def _defer(name):
    """A method that calls ``jaxlite.numpy.<name>(self, ...)``, looked up at call time."""
    def method(self, *args, **kwargs):
        from .. import numpy as jnp
        return getattr(jnp, name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Same as ``jaxlite.numpy.{name}(self, ...)``."
    return method


def _astype(self, dtype, copy=False, device=None):
    """``self`` converted to ``dtype`` (canonicalised; never weakly typed)."""
    return lax.convert_element_type(self, dtypes.canonicalize_dtype(dtype))


def _reshape(self, *shape, order="C", **kw):
    if len(shape) == 1:
        shape = shape[0]
    if "shape" in kw:
        shape = kw.pop("shape")
    return _shape.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


_OPS = {
    "__add__": _binop(_ufuncs.add), "__radd__": _binop(_ufuncs.add, True),
    "__sub__": _binop(_ufuncs.subtract), "__rsub__": _binop(_ufuncs.subtract, True),
    "__mul__": _binop(_ufuncs.multiply), "__rmul__": _binop(_ufuncs.multiply, True),
    "__truediv__": _binop(_ufuncs.true_divide),
    "__rtruediv__": _binop(_ufuncs.true_divide, True),
    "__floordiv__": _binop(_ufuncs.floor_divide),
    "__rfloordiv__": _binop(_ufuncs.floor_divide, True),
    "__mod__": _binop(_ufuncs.remainder), "__rmod__": _binop(_ufuncs.remainder, True),
    "__divmod__": _binop(_ufuncs.divmod), "__rdivmod__": _binop(_ufuncs.divmod, True),
    "__pow__": _binop(_ufuncs.power), "__rpow__": _binop(_ufuncs.power, True),
    "__matmul__": _binop(_linalg.matmul), "__rmatmul__": _binop(_linalg.matmul, True),
    "__and__": _binop(_ufuncs.bitwise_and), "__rand__": _binop(_ufuncs.bitwise_and, True),
    "__or__": _binop(_ufuncs.bitwise_or), "__ror__": _binop(_ufuncs.bitwise_or, True),
    "__xor__": _binop(_ufuncs.bitwise_xor), "__rxor__": _binop(_ufuncs.bitwise_xor, True),
    "__lshift__": _binop(_ufuncs.left_shift), "__rlshift__": _binop(_ufuncs.left_shift, True),
    "__rshift__": _binop(_ufuncs.right_shift),
    "__rrshift__": _binop(_ufuncs.right_shift, True),
    "__eq__": _binop(_ufuncs.equal), "__ne__": _binop(_ufuncs.not_equal),
    "__lt__": _binop(_ufuncs.less), "__le__": _binop(_ufuncs.less_equal),
    "__gt__": _binop(_ufuncs.greater), "__ge__": _binop(_ufuncs.greater_equal),
    "__neg__": lambda self: _ufuncs.negative(self),
    "__pos__": lambda self: _ufuncs.positive(self),
    "__abs__": lambda self: _ufuncs.absolute(self),
    "__invert__": lambda self: _ufuncs.invert(self),
    "__getitem__": lambda self, idx: _indexing.getitem(self, idx),
}

_METHODS = {
    "astype": _astype,
    "reshape": _reshape,
    "transpose": _transpose,
    "T": property(lambda self: _shape.transpose(self)),
    "mT": property(lambda self: _shape.matrix_transpose(self)),
    "at": property(lambda self: _indexing.IndexUpdateHelper(self)),
    "real": property(lambda self: _ufuncs.real(self)),
    "imag": property(lambda self: _ufuncs.imag(self)),
    "flatten": lambda self, order="C": _shape.ravel(self, order),
    "ravel": lambda self, order="C": _shape.ravel(self, order),
    "squeeze": lambda self, axis=None: _shape.squeeze(self, axis),
    "dot": lambda self, b, **kw: _linalg.dot(self, b, **kw),
    "conj": lambda self: _ufuncs.conjugate(self),
    "conjugate": lambda self: _ufuncs.conjugate(self),
    "copy": lambda self: _creation_copy(self),
    "__array_namespace__": lambda self, api_version=None: _namespace(),
}

for _name in ("sum", "prod", "max", "min", "mean", "all", "any", "argmax", "argmin"):
    _METHODS[_name] = getattr(_reductions, _name)

for _name in ("var", "std", "cumsum", "cumprod", "clip", "round", "sort", "argsort", "take",
              "repeat", "swapaxes", "nonzero", "trace", "diagonal", "searchsorted", "ptp",
              "nansum", "nanmean", "compress", "choose"):
    _METHODS[_name] = _defer(_name)


def _creation_copy(x):
    from ._creation import array
    return array(x, copy=True)


def _namespace():
    from .. import numpy as jnp
    return jnp


def install():
    for cls in (ArrayImpl, Tracer):
        for name, fn in {**_OPS, **_METHODS}.items():
            setattr(cls, name, fn)
    # defining __eq__ would otherwise leave the classes hashable-by-identity
    ArrayImpl.__hash__ = _unhashable
    Tracer.__hash__ = _unhashable


def _unhashable(self):
    raise TypeError(f"unhashable type: 'jaxlite.Array' (shape {self.shape})")


install()
