"""Installs operators and NumPy-style methods on ``Array`` and on tracers.

Both get the very same functions, so a function reads the same eagerly and under jit.
Operators return NotImplemented for operands that are not array-like, letting Python
raise its usual TypeError (or try the other operand's reflected method).
"""
from __future__ import annotations

import sys
import types

import numpy as np

from .. import _traceback, dtypes, lax, monitoring
from ..config import config
from ..core import eager as _eager
from ..core.array import ArrayImpl
from ..core.sharded import mesh_context as _mesh_context
from ..core.trace import Tracer, get_state as _trace_state
from ..runtime import Buffer, get_default_device
from ..runtime import dispatch as _dispatch
from . import _indexing, _linalg, _reductions, _shape, _ufuncs
from ._util import is_arraylike

_wrap = _eager.wrap


# array-like without asking isinstance (an ABC check on ArrayImpl costs more than ``x + 1``)
_ARRAYLIKE_TYPES = frozenset({ArrayImpl, bool, int, float, complex})
_SCALAR_TYPES = frozenset({bool, int, float, complex})
_ndarray = np.ndarray
_ufunc = np.ufunc


# ---- the operators' eager fast path ------------------------------------------------------
# ``x + 1`` / ``x * y`` on concrete Arrays outside any transformation.  numpy/_ufuncs.py
# decides what such a call does (its plans: common dtype, weak type, primitive, the
# constant's NumPy value, the output aval); the operator memoises that decision per
# (operand aval, scalar type, scalar value) or (aval, aval), for plans whose
# implementation is a NumPy ufunc (a fresh result array of the declared dtype), and then
# only checks liveness and placement, runs the ufunc and wraps the result.  Everything
# else (tracing, listeners, conversions, rank promotion, other devices, deleted operands,
# rank-0 results, errors) goes through the ufunc function itself; operands of one rank
# whose size-1 dimensions broadcast take the fast path (the primitive broadcasts them).

_OP_CACHE_MAX = 4096
_OP_CACHES: list = []     # every operator's memo, cleared when the async threshold changes


def _on_config(name, value):
    if name in ("jaxlite_async", "jaxlite_async_min_cost"):
        for c in _OP_CACHES:
            c.clear()
    elif name == "jaxlite_native_ops" and _native is not None:
        _native.set_enabled(bool(value))


config._on_change(_on_config)


def _op_entry(fn, spec, x1, x2):
    """(ufunc, constant or None, constant first?, output aval) for ``fn(x1, x2)`` on the
    fast path, or False when the function itself must run (see above)."""
    prim_for, kind = spec
    plan = _ufuncs._fast_plan(prim_for, kind, x1, x2)
    if plan is False or type(plan.impl) is not _ufunc:
        return False
    t1, t2 = type(x1), type(x2)
    if t1 is ArrayImpl and t2 is ArrayImpl:
        if x1.aval.ndim != x2.aval.ndim:
            return False    # rank promotion: the full path stages it
        # (equal ranks: the primitive broadcasts size-1 dimensions, as the ufunc does; its
        # shape rule below decides the output aval or sends the full path to raise)
        const, const_first, avals = None, False, (x1.aval, x2.aval)
    else:
        s = x2 if t1 is ArrayImpl else x1
        c = _ufuncs._fast_const(plan, s)
        if c is None:
            return False
        const, const_first = c[0], t1 is not ArrayImpl
        arr = x1 if t1 is ArrayImpl else x2
        avals = (c[1], arr.aval) if const_first else (arr.aval, c[1])
    try:
        out_aval = plan.prim.abstract_eval_cached(avals, {})
    except Exception:   # the full path raises it
        return False
    if not out_aval.shape:
        return False    # a ufunc returns a NumPy scalar there: the full path wraps it
    if all(tuple(a.shape) != tuple(out_aval.shape) for a in avals):
        # both operands broadcast (an outer product's shape): a result that may be far
        # larger than its operands, so the full path checks that it fits the device first
        return False
    if out_aval.size * out_aval.dtype.itemsize * 3 >= _dispatch.min_cost():
        return False    # big work: the full path dispatches it to the worker (run_impl)
    return plan.impl, const, const_first, out_aval


def _fast_binop(fn, reflected, rejected=()):
    """The operator for ufunc function ``fn`` (``reflected``: ``other OP self``) with the
    eager fast path described above; operands of a type in ``rejected`` raise TypeError
    (see ``_reject``)."""
    spec = fn._fast_spec
    c32, c64 = {}, {}        # by jax_enable_x64
    _OP_CACHES.extend((c32, c64))
    fp_state = _eager._fp_state
    if fp_state is None:     # another NumPy layout: the ufunc function does everything
        return _plain_binop(fn, reflected, rejected)

    def op(self, other):
        t = type(other)
        if type(self) is ArrayImpl and _trace_state().eager and not monitoring._listeners \
                and _mesh_context.mesh is None:
            if t is ArrayImpl:
                key = (self.aval, other.aval)
            elif t in _SCALAR_TYPES and (other or t is int or t is bool):
                # 0.0 == -0.0 (and 0j == -0j) as keys: signed zeros must not share one
                key = (self.aval, t, other)
            else:
                key = None
            if key is not None:
                cache = c64 if config.jax_enable_x64 else c32
                e = cache.get(key)
                if e is None:
                    a, b = (other, self) if reflected else (self, other)
                    e = _op_entry(fn, spec, a, b)
                    if len(cache) < _OP_CACHE_MAX:
                        cache[key] = e
                if e and type(self._buf) is Buffer and (t is not ArrayImpl or
                                                        type(other._buf) is Buffer):
                    # (a pending operand takes the full path, which passes it on)
                    buf = self._buf
                    v = buf.data
                    device = buf.device
                    committed = self._committed
                    if t is ArrayImpl:
                        buf2 = other._buf
                        v2 = buf2.data
                        if v2 is None or buf2.device is not device:
                            v = None
                        committed = committed or other._committed
                    if v is not None and (committed or device is get_default_device()):
                        impl, c, c_first, out_aval = e
                        if c is not None:
                            a, b = (c, v) if c_first else (v, c)
                        else:
                            a, b = (v2, v) if reflected else (v, v2)
                        pair = _eager._fp_pair      # fp_ignore_begin, inlined
                        if pair[0] is fp_state.get():
                            token = fp_state.set(pair[1])
                        else:
                            token = _eager.fp_ignore_begin()
                        try:
                            out = impl(a, b)
                        finally:
                            fp_state.reset(token)
                        if type(out) is _ndarray and out.dtype is out_aval.dtype:
                            # a fresh ufunc result of the exact dtype needs none of wrap's
                            # work: wrap's own first case, written here because W8 (x + 1)
                            # is 6% slower for the call (measured 2026-12-03)
                            return ArrayImpl(Buffer(out, device), out_aval, committed)
                        return _finish(out, out_aval, device, committed, a, b)
        if t not in _ARRAYLIKE_TYPES and not is_arraylike(other):
            if t in rejected:
                raise _reject(fn, self, other, reflected)
            return NotImplemented
        try:        # a traceback boundary off the fast path (_traceback.py): free in 3.11
            return fn(other, self) if reflected else fn(self, other)
        except Exception as e:
            _traceback.filter_exception(e, sys._getframe())
            raise

    _traceback.register_boundary(op)
    if _native is None:
        return op
    # the same operator with its memoised case in C (core/_eager_ops.c): it reads the
    # memos above and calls ``op`` for everything else, a memo miss included
    return _native.Operator(op, c32, c64, reflected)


def _finish(out, out_aval, device, committed, a, b):
    """The fast path's result when the ufunc's is not a fresh array of the output dtype:
    ``wrap`` (which may cast) under the ignored floating-point error state."""
    token = _eager.fp_ignore_begin()
    try:
        return _wrap(out, out_aval, device, committed, (a, b))
    finally:
        _eager.fp_ignore_end(token)


def _load_native():
    """core/_eager_ops (the operators' fast path in C), configured and switched on or off
    by ``jaxlite_native_ops``; None where it was not built (no C compiler at install)."""
    if _eager._fp_state is None:
        return None
    try:
        from ..core import _eager_ops
    except ImportError:
        return None
    from ..core import trace as _trace
    _eager_ops.configure(
        array_type=ArrayImpl, buffer_type=Buffer, ndarray_type=_ndarray,
        trace_var=_trace._state, monitoring=monitoring, mesh_context=_mesh_context,
        config=config, eager=_eager, fp_var=_eager._fp_state,
        get_default_device=get_default_device, finish=_finish)
    _eager_ops.set_enabled(bool(config.jaxlite_native_ops))
    return _eager_ops


_native = _load_native()


# ``x == (1, 2)`` and ``x != [1, 2]`` raise TypeError in JAX rather than falling back to
# Python's identity comparison (False/True), which would hide a missing ``jnp.array``
_CONTAINERS = frozenset({list, tuple, dict, set})
# ``+`` and ``*`` refuse lists and tuples outright, as JAX's: deferring to them would let
# ``[1, 2] * jnp.array(3)`` repeat the list (through ``__index__``) instead of failing
_SEQUENCES = frozenset({list, tuple})
_SYMBOLS = {"add": "+", "multiply": "*", "equal": "==", "not_equal": "!="}


def _reject(fn, self, other, reflected=False):
    """JAX's TypeError for an operator given a Python container, the operands named in the
    expression's order."""
    names = [f"'{type(self).__name__}'", f"'{type(other).__name__}'"]
    if reflected:
        names.reverse()
    return TypeError(f"unsupported operand type(s) for {_SYMBOLS.get(fn.__name__, fn.__name__)}"
                     f": {names[0]} and {names[1]} (convert the {type(other).__name__} "
                     f"first, e.g. with jnp.array(...))")


def _binop(fn, reflected=False, rejected=()):
    if getattr(fn, "_fast_spec", None) is not None:
        return _fast_binop(fn, reflected, rejected)
    return _plain_binop(fn, reflected, rejected)


def _getitem(self, idx):
    try:        # a traceback boundary (_traceback.py), filtering in place: free on success
        return _indexing.getitem(self, idx)
    except Exception as e:
        _traceback.filter_exception(e, sys._getframe())
        raise


_traceback.register_boundary(_getitem)


def _plain_binop(fn, reflected, rejected=()):
    if reflected:
        def op(self, other):
            if type(other) not in _ARRAYLIKE_TYPES and not is_arraylike(other):
                if type(other) in rejected:
                    raise _reject(fn, self, other, reflected=True)
                return NotImplemented
            return fn(other, self)
    else:
        def op(self, other):
            if type(other) not in _ARRAYLIKE_TYPES and not is_arraylike(other):
                if type(other) in rejected:
                    raise _reject(fn, self, other)
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
    """``self`` converted to ``dtype`` (canonicalised; never weakly typed); ``copy`` and
    ``device`` as ``jaxlite.numpy.astype``."""
    from ._construct import astype
    return astype(self, dtype, copy=copy, device=device)


def _reshape(self, *shape, order="C", **kw):
    if len(shape) == 1:
        shape = shape[0]
    if "shape" in kw:
        shape = kw.pop("shape")
    return _shape.reshape(self, shape, order=order)


def _unop(fn):
    """The unary operator ``fn(self)`` (``-x``, ``abs(x)``, ``~x``) as a traceback boundary
    (_traceback.py) that filters in place, as the binary operators do: no wrapper, nothing
    on success."""
    def op(self):
        try:
            return fn(self)
        except Exception as e:
            _traceback.filter_exception(e, sys._getframe())
            raise
    return op


_traceback.register_boundary(_unop(len))     # every operator _unop makes runs this code


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


_OPS = {
    "__add__": _binop(_ufuncs.add, rejected=_SEQUENCES),
    "__radd__": _binop(_ufuncs.add, True, rejected=_SEQUENCES),
    "__sub__": _binop(_ufuncs.subtract), "__rsub__": _binop(_ufuncs.subtract, True),
    "__mul__": _binop(_ufuncs.multiply, rejected=_SEQUENCES),
    "__rmul__": _binop(_ufuncs.multiply, True, rejected=_SEQUENCES),
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
    "__eq__": _binop(_ufuncs.equal, rejected=_CONTAINERS),
    "__ne__": _binop(_ufuncs.not_equal, rejected=_CONTAINERS),
    "__lt__": _binop(_ufuncs.less), "__le__": _binop(_ufuncs.less_equal),
    "__gt__": _binop(_ufuncs.greater), "__ge__": _binop(_ufuncs.greater_equal),
    "__neg__": _unop(_ufuncs.negative), "__pos__": _unop(_ufuncs.positive),
    "__abs__": _unop(_ufuncs.absolute), "__invert__": _unop(_ufuncs.invert),
    "__getitem__": _getitem,
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
              "choose", "argpartition"):
    _METHODS[_name] = _defer(_name)


def _view(self, dtype=None, type=None):
    """The same bytes read as ``dtype`` (``jax.Array.view``): with a different item size
    the last axis is rescaled, as NumPy's ``ndarray.view`` does.

    Raises:
      NotImplementedError: ``type`` is given.
      ValueError: the last axis's bytes do not divide into the new item size.
    """
    if type is not None:
        raise NotImplementedError("the `type` argument of Array.view() is not supported")
    if dtype is None:
        return self
    new = np.dtype(dtypes.canonicalize_dtype(dtype))
    old = np.dtype(self.dtype)
    x = self
    if old == np.bool_:
        x, old = lax.convert_element_type(x, np.uint8), np.dtype(np.uint8)
    if new == np.bool_:
        return _view(x, np.uint8) != 0
    # sizes in bits: an int8 holds two int4 (JAX's packed sizes, dtypes.itemsize_bits)
    old_bits, new_bits = dtypes.itemsize_bits(old), dtypes.itemsize_bits(new)
    if old_bits == new_bits:
        return _bitcast(x, new)
    if not x.ndim:
        raise ValueError(f"a 0-d {old.name} array cannot be viewed as {new.name}: the item "
                         f"sizes differ")
    if old_bits > new_bits:
        out = _bitcast(x, new)    # adds a trailing axis of the ratio
        return _shape.reshape(out, x.shape[:-1] + (-1,))
    ratio = new_bits // old_bits
    if x.shape[-1] % ratio:
        raise ValueError(f"the last axis of shape {tuple(x.shape)} ({old.name}) does not hold a "
                         f"whole number of {new.name} items")
    grouped = _shape.reshape(x, x.shape[:-1] + (x.shape[-1] // ratio, ratio))
    return _bitcast(grouped, new)


def _pyround(self, ndigits=None):
    """Python's ``round(x[, ndigits])``: ties to even; without ``ndigits`` the result is
    of the default integer dtype, as ``round`` of a JAX array.  A traceback boundary
    (_traceback.py), filtering in place as the other operators."""
    try:
        r = _ufuncs.round(self, 0 if ndigits is None else ndigits)
        if ndigits is None:
            return lax.convert_element_type(r, dtypes.canonicalize_dtype(np.int64))
        return r
    except Exception as e:
        _traceback.filter_exception(e, sys._getframe())
        raise


_traceback.register_boundary(_pyround)
_OPS["__round__"] = _pyround


def _bitcast(x, new):
    """The bitcast primitive itself: ``Array.view`` and ``byteswap`` reread complex values
    too, which ``lax.bitcast_convert_type`` refuses (as JAX's does)."""
    from ..primitives.elementwise import bitcast_convert_type_p
    return bitcast_convert_type_p.bind(x, new_dtype=np.dtype(new))


def _byteswap(self):
    """Each element with its bytes in reverse order (``jax.Array.byteswap``; arrays are
    immutable, so there is no ``inplace``)."""
    size = np.dtype(self.dtype).itemsize
    if size == 1:
        return self
    as_bytes = _bitcast(self, np.uint8)
    return _bitcast(as_bytes[..., ::-1], self.dtype)


def _to_device(self, device, *, stream=None):
    """``self`` placed on ``device`` (``jax.Array.to_device``, the Array API's name for
    ``jax.device_put``)."""
    if stream is not None:
        raise NotImplementedError("to_device() does not take a stream")
    from ..core.placement import device_put
    return device_put(self, device)


def _no_flat(self):
    raise NotImplementedError("jaxlite Arrays have no .flat iterator (nor have JAX's): use "
                              "x.flatten() or x.ravel() instead")


def _compress(self, condition, axis=None, *, size=None, fill_value=0, out=None):
    """Same as ``jaxlite.numpy.compress(condition, self, ...)``."""
    from . import _misc
    return _misc.compress(condition, self, axis, size=size, fill_value=fill_value, out=out)


_METHODS.update({"compress": _compress, "view": _view, "byteswap": _byteswap, "to_device": _to_device,
                 "flat": property(_no_flat)})


def _creation_copy(x):
    from ._creation import array
    return array(x, copy=True)


def _namespace():
    from .. import numpy as jnp
    return jnp


def install():
    # the named methods (x.reshape, x.sum, ...) are traceback boundaries, as the functions
    # of jaxlite.numpy are (_traceback.py); the operators filter in place (op, _getitem)
    methods = {name: _traceback.api_boundary(fn) if type(fn) is types.FunctionType else fn
               for name, fn in _METHODS.items()}
    for cls in (ArrayImpl, Tracer):
        for name, fn in {**_OPS, **methods}.items():
            setattr(cls, name, fn)
    # defining __eq__ would otherwise leave the classes hashable-by-identity
    ArrayImpl.__hash__ = _unhashable
    Tracer.__hash__ = _unhashable


def _unhashable(self):
    raise TypeError(f"unhashable type: 'jaxlite.Array' (shape {self.shape})")


install()
