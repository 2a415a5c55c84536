"""Indexing: ``x[idx]`` and ``x.at[idx].set/add/...`` with ``jax.numpy``'s semantics.

Layer: numpy.  An index (ints, slices, None, Ellipsis, integer arrays, boolean masks, lists
inside a tuple) is parsed into the static ``indexer`` of the gather/scatter primitives plus
the list of integer index operands (see ``primitives/indexing.py``).  Boolean masks need
concrete values, since they decide the result's shape: under jit they raise
NonConcreteBooleanIndexError.  An index of only ints, slices, None and Ellipsis lowers to
``slice``/``rev``/``squeeze``/``expand_dims`` as in JAX; anything else is one ``gather``.

Out-of-bounds rules (JAX's): ``x[idx]`` clamps indices into range, static Python ints too
(with ``jax_check_static_indices`` on, a static int out of range raises IndexError instead);
``x.at[idx].set/add/...`` drop out-of-bounds updates; ``mode=`` changes that.  Negative
indices count from the end once.
"""
from __future__ import annotations

import collections.abc
import math
import warnings
import weakref

import numpy as np

from .. import _traceback, dtypes, errors, lax, monitoring
from .._traceback import user_stacklevel as _user_stacklevel
from ..config import config
from ..core.array import ArrayImpl
from ..core.avals import ShapedArray
from ..core.staging import JaxprBuilder, JaxprTrace, DynamicJaxprTracer
from ..core.trace import Tracer, new_main
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Var
from ..primitives.indexing import expand_indexer, indexed_shape
from . import _creation, _ufuncs
from ._util import PY_SCALARS, broadcast_to_shape, convert, ensure_array, shape_of

_ARRAYS = (ArrayImpl, Tracer, np.ndarray)
_INTS = (int, np.integer)
_BOOLS = (bool, np.bool_)


# ---- parsing an index -----------------------------------------------------------------

def _show(idx) -> str:
    s = repr(idx)
    return s if len(s) <= 120 else s[:117] + "..."


def _where(idx, shape) -> str:
    return f" (index {_show(idx)} into an array of shape {tuple(shape)})"


def _classify(item, raw, shape):
    """``(kind, value)`` of one index item; kinds: none ellipsis slice int bool mask array.

    Raises TypeError (floats, strings, non-integer arrays) or IndexError (other objects)."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, _BOOLS):
        return "bool", bool(item)
    if isinstance(item, _INTS):
        return "int", int(item)
    if isinstance(item, _ARRAYS):
        dt = np.dtype(item.dtype)
        if dt == np.bool_:
            return ("bool" if np.ndim(item) == 0 else "mask"), item
        if dt.kind in "iu":
            return "array", item
        raise TypeError(f"index arrays must hold integers or booleans, not {dt.name}"
                        + _where(raw, shape))
    if isinstance(item, str):
        raise TypeError(f"strings cannot be used as indices (idx={item!r})"
                        + _where(raw, shape))
    if isinstance(item, collections.abc.Sequence):
        if len(item) == 0:
            return "array", np.zeros((0,), np.int32)
        arr = _creation.asarray(item)
        if arr.dtype == np.bool_:
            return ("bool" if arr.ndim == 0 else "mask"), arr
        if np.dtype(arr.dtype).kind in "iu":
            return "array", arr
        raise TypeError(f"index arrays must hold integers or booleans, not "
                        f"{np.dtype(arr.dtype).name}" + _where(raw, shape))
    if isinstance(item, (float, complex, np.generic)):
        raise TypeError(f"indices must be integers or booleans, not "
                        f"{np.dtype(type(item)).name}" + _where(raw, shape))
    raise IndexError(f"{_show(item)} cannot be used as an index; indices are integers, "
                     "slices, `...`, None (newaxis) and integer or boolean arrays"
                     + _where(raw, shape))


def _static_slice_value(v, pos, s, raw, shape):
    if v is None or isinstance(v, _INTS + _BOOLS):
        return v
    if isinstance(v, Tracer):
        raise IndexError(f"Slice entries must be static integers. Got {s} at position {pos}"
                         + _where(raw, shape) + ". Use lax.dynamic_slice for a slice that "
                         "starts at a traced index.")
    if isinstance(v, (ArrayImpl, np.ndarray)) and np.ndim(v) == 0 and \
            np.dtype(v.dtype).kind in "iu":
        return int(v)
    raise TypeError(f"Slice entries must be integers or None, got {_show(v)} of type "
                    f"{type(v).__name__} in {s} at position {pos}" + _where(raw, shape))


class _Parsed:
    """A parsed index: ``indexer`` (static), ``arrays`` (integer index operands), the
    positions where scalar booleans insert an axis into x, and for each user-given index
    array the size of the axis it indexes (for ``wrap_negative_indices=False``)."""

    __slots__ = ("indexer", "arrays", "bool_dims", "user_arrays")

    def __init__(self, indexer, arrays, bool_dims, user_arrays):
        self.indexer = indexer
        self.arrays = arrays
        self.bool_dims = bool_dims
        self.user_arrays = user_arrays


def parse_index(shape, idx, wrap_negative_indices=True, check_static=False) -> _Parsed:
    """Parses ``idx`` for an array of ``shape`` (``x[idx]``'s rules, as in JAX).

    ``check_static``: a static int index (Python or NumPy scalar) out of range raises
    IndexError naming the index, the axis and its size (``jax_check_static_indices``).

    Raises TypeError for a non-tuple sequence (``x[[0, 1]]``), float/string/non-integer
    indices; IndexError for too many indices, several ellipses, an int into a size-0 axis, a
    boolean mask of the wrong shape, traced slice bounds; NonConcreteBooleanIndexError for a
    traced boolean mask.
    """
    raw = idx
    if not isinstance(idx, tuple):
        if isinstance(idx, collections.abc.Sequence) and not isinstance(idx, str):
            nested = any(isinstance(i, (collections.abc.Sequence, slice)) and not
                         isinstance(i, str) or i is None or i is Ellipsis or
                         isinstance(i, _ARRAYS) and np.ndim(i) for i in idx)
            hint = "arr[tuple(seq)]" if nested else "arr[jnp.array(seq)]"
            raise TypeError("a list (or other non-tuple sequence) is not accepted as an index; "
                            f"write `{hint}` rather than `arr[seq]`"
                            + _where(raw, shape) + ".")
        idx = (idx,)
    items = [_classify(item, raw, shape) for item in idx]
    if sum(k == "ellipsis" for k, _ in items) > 1:
        raise IndexError("at most one ellipsis ('...') may appear in an index"
                         + _where(raw, shape))
    used = sum(np.ndim(v) if k == "mask" else k in ("slice", "int", "array") for k, v in items)
    if used > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {used} "
                         f"were indexed" + _where(raw, shape))
    fill = len(shape) - used
    indexer, arrays, bool_dims, user_arrays = [], [], [], []
    dim = 0       # next axis of x
    new_dim = 0   # next axis of x once the scalar-boolean axes are inserted
    for pos, (kind, v) in enumerate(items):
        if kind == "none":
            indexer.append(("none",))
        elif kind == "ellipsis":
            indexer.append(("ellipsis",))
            dim += fill
            new_dim += fill
        elif kind == "slice":
            parts = [_static_slice_value(p, pos, v, raw, shape) for p in (v.start, v.stop, v.step)]
            if parts[2] == 0:
                raise ValueError("slice step cannot be zero" + _where(raw, shape))
            indexer.append(("slice",) + slice(*parts).indices(shape[dim]))
            dim += 1
            new_dim += 1
        elif kind == "int":
            n = shape[dim]
            if n == 0:
                raise IndexError(f"index {v} is out of bounds for axis {dim} with size 0"
                                 + _where(raw, shape))
            if check_static and not (-n if wrap_negative_indices else 0) <= v < n:
                raise IndexError(f"index {v} out of bounds for axis {dim} with size {n} "
                                 f"(jax_check_static_indices is on)" + _where(raw, shape))
            indexer.append(("int", v + n if v < 0 and wrap_negative_indices else v))
            dim += 1
            new_dim += 1
        elif kind == "array":
            indexer.append(("array", len(arrays)))
            user_arrays.append((len(arrays), shape[dim]))
            arrays.append(v)
            dim += 1
            new_dim += 1
        elif kind == "mask":
            mask = _concrete_mask(v)
            want = tuple(shape[dim:dim + mask.ndim])
            if not all(a in (0, b) for a, b in zip(mask.shape, want)):
                raise IndexError(f"boolean mask at index position {pos} has the wrong shape "
                                 f"for the axes it covers: got {mask.shape}, expected {want}"
                                 + _where(raw, shape))
            for nz in np.nonzero(mask):
                indexer.append(("array", len(arrays)))
                arrays.append(nz.astype(np.int32))
            dim += mask.ndim
            new_dim += mask.ndim
        else:  # scalar boolean: a new axis of size 1 (True) or 0 (False), indexed by arange
            b = bool(_concrete_mask(v))
            bool_dims.append(new_dim)
            indexer.append(("array", len(arrays)))
            arrays.append(np.arange(int(b), dtype=np.int32))
            new_dim += 1
    return _Parsed(tuple(indexer), arrays, bool_dims, user_arrays)


def _concrete_mask(v):
    if isinstance(v, Tracer):
        # a mask computed under forward-mode differentiation (grad of eager code) has a
        # concrete value, so the selection's shape is known: allowed, as in JAX
        c = v.to_concrete_value()
        if c is None:
            raise errors.NonConcreteBooleanIndexError(v)
        return np.asarray(c)
    return np.asarray(v)


def _index_operands(parsed, wrap_negative_indices):
    """The index arrays as Arrays/tracers; with ``wrap_negative_indices=False`` negative
    entries are moved below ``-size`` so that they stay out of bounds after the primitive
    wraps them once."""
    arrays = [a if isinstance(a, (ArrayImpl, Tracer)) else ensure_array(a)
              for a in parsed.arrays]
    if not wrap_negative_indices:
        for k, n in parsed.user_arrays:
            a = arrays[k]
            if np.dtype(a.dtype).kind == "i":
                a = lax.convert_element_type(a, dtypes.default_int_dtype())
                arrays[k] = _ufuncs.where(_ufuncs.less(a, 0), -n - 1, a)
    return arrays


def _gather_mode(mode) -> str:
    m = _mode_name(mode)
    if m is None:
        return "promise_in_bounds"
    if m in ("fill", "drop"):
        return "fill"
    if m in ("clip", "promise_in_bounds"):
        return m
    raise ValueError(f'Unknown gather mode "{mode}"; expected one of "promise_in_bounds", '
                     f'"clip", "fill" (or "drop")')


def _scatter_mode(mode) -> str:
    m = _mode_name(mode)
    if m is None or m in ("fill", "drop"):
        return "drop"
    if m in ("clip", "promise_in_bounds"):
        return m
    raise ValueError(f'Unknown scatter mode "{mode}"; expected one of "promise_in_bounds", '
                     f'"clip", "drop" (or "fill")')


def _mode_name(mode):
    """Mode strings, and enum-like objects whose ``name`` is a mode (JAX's
    GatherScatterMode)."""
    if mode is None or isinstance(mode, str):
        return mode
    name = getattr(mode, "name", None)
    if isinstance(name, str):
        return {"CLIP": "clip", "FILL_OR_DROP": "fill",
                "PROMISE_IN_BOUNDS": "promise_in_bounds"}.get(name, name)
    return mode


# ---- x[idx] ----------------------------------------------------------------------------

def _basic(x, indexer):
    """``x[idx]`` for an index of static ints, slices, None and Ellipsis: ``slice`` then
    ``rev`` (negative steps), ``squeeze`` (ints) and ``expand_dims`` (None), as JAX does.
    Static ints out of range are clamped."""
    entries, _ = expand_indexer(x.shape, indexer)
    start, limit, strides, rev, squeeze, newaxis = [], [], [], [], [], []
    dim, out_dim = 0, 0
    for e in entries:
        if e[0] == "none":
            newaxis.append(out_dim)
            out_dim += 1
            continue
        n = x.shape[dim]
        if e[0] == "int":
            i = min(max(e[1], 0), n - 1)
            start.append(i)
            limit.append(i + 1)
            strides.append(1)
            squeeze.append(dim)
        else:
            r = range(*e[1:])
            step = e[3]
            if step > 0:
                start.append(r.start)
                limit.append(max(r.start, r.stop))
            elif len(r):
                start.append(r[-1])
                limit.append(r[0] + 1)
                rev.append(dim)
            else:
                start.append(0)
                limit.append(0)
            strides.append(abs(step))
            out_dim += 1
        dim += 1
    y = x
    if any(s != 0 or lim != n or st != 1
           for s, lim, st, n in zip(start, limit, strides, x.shape)):
        y = lax.slice(y, start, limit, None if all(s == 1 for s in strides) else strides)
    if rev:
        y = lax.rev(y, rev)
    if squeeze:
        y = lax.squeeze(y, squeeze)
    if newaxis:
        y = lax.expand_dims(y, newaxis)
    return y


def _as_operand(x):
    if isinstance(x, (ArrayImpl, Tracer)):
        return x
    return ensure_array(x)


def _fill_scalar(fill_value, dtype):
    if fill_value is None:
        return None
    if isinstance(fill_value, Tracer):
        raise errors.ConcretizationTypeError(
            fill_value, "x.at[...].get(mode='fill') needs fill_value as a concrete scalar, "
            "known before tracing.")
    if np.ndim(fill_value) != 0:
        raise ValueError(f"x.at[...].get(mode='fill'): fill_value must be a scalar, but its "
                         f"shape is {np.shape(fill_value)}")
    with np.errstate(all="ignore"):
        return np.asarray(fill_value).astype(dtype).item()


def _dynamic_index(x, idx):
    """``x[idx]`` for an index of integer scalars, at least one of them traced, and full
    slices ``:``, written as JAX writes it: each start counted from the end when negative
    (``lt``, ``add``, ``select_n``, also for the static ones), one ``dynamic_slice`` (which
    clamps, as the default gather mode does) and a ``squeeze`` of the integer dimensions.
    None for any other index (the general path takes it)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if len(items) > x.ndim:
        return None
    int_dt = np.dtype(np.int32)
    starts, sizes, squeeze, traced = [], [], [], False
    for d, it in enumerate(items):
        if isinstance(it, (Tracer, int, np.integer)) and x.shape[d] == 0:
            return None             # the general path's IndexError
        if isinstance(it, Tracer):
            a = it.aval
            if a.shape != () or a.dtype != int_dt:
                return None
            traced = True
            starts.append(it)
            sizes.append(1)
            squeeze.append(d)
        elif isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_)):
            if not -x.shape[d] <= int(it) < x.shape[d]:
                return None         # the general path's error or clamping
            starts.append(np.int32(it))
            sizes.append(1)
            squeeze.append(d)
        elif isinstance(it, slice) and it == slice(None):
            starts.append(np.int32(0))
            sizes.append(x.shape[d])
        else:
            return None
    if not traced:
        return None
    for n in x.shape[len(items):]:
        starts.append(np.int32(0))
        sizes.append(n)
    zero = np.int32(0)

    def strong(i):
        return lax.convert_element_type(i, int_dt) if getattr(i, "weak_type", False) else i

    # a weakly typed index (a Python-int argument, a loop counter) is made strong where
    # JAX's program does: of a vector, for the addition only; otherwise first of all
    if x.ndim == 1:
        starts = [lax.select(lax.lt(i, zero), lax.add(strong(i), np.int32(n)), i)
                  for i, n in zip(starts, x.shape)]
    else:
        starts = [strong(i) for i in starts]
        starts = [lax.select(lax.lt(i, zero), lax.add(i, np.int32(n)), i)
                  for i, n in zip(starts, x.shape)]
    from ..primitives.shape import dynamic_slice_p
    y = dynamic_slice_p.bind(x, *starts, slice_sizes=tuple(sizes))
    return lax.squeeze(y, tuple(squeeze)) if squeeze else y


def getitem(x, idx, *, mode=None, fill_value=None, wrap_negative_indices=True):
    """``x[idx]``: NumPy's basic and advanced indexing with ``jax.numpy``'s rules.

    Args:
      x: an Array (any shape and dtype).
      idx: ints, slices, None, Ellipsis, integer arrays (jaxlite or NumPy; advanced
        indexing), boolean masks (concrete only), lists inside a tuple, or a tuple of these.
      mode: out-of-bounds rule: None / ``"promise_in_bounds"`` / ``"clip"`` clamp,
        ``"fill"`` (or ``"drop"``) returns ``fill_value``.
      fill_value: concrete scalar for ``mode="fill"`` (default NaN for inexact dtypes, the
        dtype's minimum (signed) or maximum (unsigned), True for bool).
      wrap_negative_indices: count negative indices from the end (default); when False they
        are out of bounds.

    Returns:
      an Array of ``x``'s dtype and weak type; its shape follows NumPy.

    Raises:
      TypeError, IndexError, NonConcreteBooleanIndexError: see ``parse_index``.
      IndexError: with ``jax_check_static_indices`` on and ``mode`` None, a static int
        index out of bounds ("index 5 out of bounds for axis 0 with size 3").
      ValueError: index arrays that do not broadcast together; unknown ``mode``.

    Mirrors ``jax.numpy.ndarray.__getitem__`` and ``x.at[idx].get()``.  Example:
    ``jnp.arange(6).reshape(2, 3)[:, jnp.array([2, 0])]`` -> ``[[2, 0], [5, 3]]``.
    """
    x = _as_operand(x)
    if mode is None and wrap_negative_indices:
        out = _dynamic_index(x, idx)
        if out is not None:
            return out
    # as JAX: only the default mode checks static indices (an explicit mode says what an
    # out-of-bounds index does)
    parsed = parse_index(x.shape, idx, wrap_negative_indices,
                         mode is None and config.jax_check_static_indices)
    gmode = _gather_mode(mode)
    if not parsed.arrays and gmode != "fill":
        return _basic(x, parsed.indexer)
    fv = _fill_scalar(fill_value, x.dtype) if gmode == "fill" else None
    arrays = _index_operands(parsed, wrap_negative_indices)
    xb = lax.expand_dims(x, parsed.bool_dims) if parsed.bool_dims else x
    return lax.gather_indexed(xb, parsed.indexer, arrays, mode=gmode, fill_value=fv)


# ---- x.at[idx].op(values) --------------------------------------------------------------

def _as_values(values, x, method):
    """Update values as JAX reads them: a Python int that fits x's integer dtype takes that
    dtype; other Python scalars stay weakly typed; sequences become arrays."""
    if isinstance(values, (ArrayImpl, Tracer, np.ndarray, np.generic)):
        if isinstance(values, (np.ndarray, np.generic)) and not dtypes.issubdtype(
                values.dtype, np.bool_) and dtypes.kind(values.dtype) not in "biufc":
            raise TypeError(f"x.at[...].{method}: values of dtype {values.dtype} are not a valid "
                            f"JAX array type")
        return values
    if isinstance(values, int) and not isinstance(values, bool):
        dt = np.dtype(x.dtype)
        if dt.kind in "iu" and np.iinfo(dt).min <= values <= np.iinfo(dt).max:
            return np.asarray(values, dt)
        return values
    if isinstance(values, PY_SCALARS):
        return values
    if isinstance(values, (list, tuple)):
        return _creation.asarray(values)
    raise TypeError(f"x.at[...].{method}: values must be an array or a scalar, got "
                    f"{_show(values)} of type {type(values).__name__}")


def _safe_to_cast(values, dt) -> bool:
    vdt = dtypes.dtype_and_weak(values)[0]
    return vdt == dt or dtypes.result_type(values, dt) == dt


def _broadcast_updates(values, shape, idx, x_shape, method):
    vshape = shape_of(values)
    if len(vshape) > len(shape):
        raise ValueError(f"x.at[...].{method}: values of shape {vshape} have more dimensions "
                         f"than the indexed shape {shape}"
                         + _where(idx, x_shape))
    if any(a not in (1, b) for a, b in zip(vshape[::-1], shape[::-1])):
        raise ValueError(f"Incompatible shapes for broadcasting: x.at[...].{method} got values "
                         f"of shape {vshape} for the indexed shape {shape}"
                         + _where(idx, x_shape))
    if vshape == ():
        return lax.broadcast_in_dim(values, shape, ()) if shape else values
    return broadcast_to_shape(_as_operand(values), shape)


def _update(x, idx, values, op, method, mode, wrap_negative_indices, update_jaxpr=None,
            unique_indices=False):
    """``x`` with ``values`` combined by scatter ``op`` at ``idx`` (JAX's ``.at`` rules:
    updates are computed in the promoted dtype and cast back to ``x``'s dtype and weak
    type, with a FutureWarning when that cast is unsafe)."""
    x = _as_operand(x)
    smode = _scatter_mode(mode)
    values = _as_values(values, x, method)
    if not _safe_to_cast(values, np.dtype(x.dtype)):
        warnings.warn(
            f"x.at[...].{method}: values of dtype {dtypes.dtype_and_weak(values)[0]} do not "
            f"convert safely to the array's dtype {np.dtype(x.dtype)}; they are cast (JAX "
            f"warns the same and plans to make this an error). Cast the values with .astype "
            f"first.", FutureWarning, stacklevel=_user_stacklevel())
    parsed = parse_index(x.shape, idx, wrap_negative_indices)
    arrays = _index_operands(parsed, wrap_negative_indices)
    xb = lax.expand_dims(x, parsed.bool_dims) if parsed.bool_dims else x
    shape = indexed_shape(xb.shape, parsed.indexer, [a.shape for a in arrays])
    if not math.prod(shape):
        return x
    dt, _ = dtypes.result_type_and_weak(x, values)
    if dt != x.dtype:
        xb = lax.convert_element_type(xb, dt)
    try:
        vals = convert(values, dt)
    except OverflowError:   # a Python int beyond dt: cast as an array, wrapping like JAX
        vals = None
    if vals is None:
        vals = convert(ensure_array(values), dt)
    vals = _broadcast_updates(vals, shape, idx, x.shape, method)
    out = lax.scatter_indexed(xb, vals, parsed.indexer, arrays, op=op, mode=smode,
                              update_jaxpr=update_jaxpr,
                              unique_indices=bool(unique_indices) and op == "mul")
    if parsed.bool_dims:
        out = lax.squeeze(out, parsed.bool_dims)
    if dt != x.dtype or out.weak_type != x.weak_type:
        out = lax._convert(out, x.dtype, x.weak_type)
    if monitoring._listeners and type(out) is ArrayImpl:   # jaxlite doctor (R5.1)
        monitoring.emit("at_update", result=weakref.ref(out), method=method)
    return out


class _ApplyTrace(JaxprTrace):
    """Stages the function of ``.at[].apply``; a traced value of an enclosing
    transformation cannot be closed over (as in JAX)."""

    def pure(self, val):
        if isinstance(val, Tracer):
            raise NotImplementedError(
                "x.at[...].apply: the function closes over a traced value of an enclosing "
                "transformation, which the scatter's update program cannot capture (JAX has "
                "the same limit). Compute the update with x.at[...].set(func(x[...])) instead "
                "(the same for indices without repeats).")
        return JaxprTrace.pure(self, val)

    lift = pure


def _trace_scalar_fn(func, dtype) -> ClosedJaxpr:
    builder = JaxprBuilder()
    with new_main(_ApplyTrace, builder, dynamic=True) as main:
        trace = _ApplyTrace(main)
        aval = ShapedArray((), dtype)
        arg = DynamicJaxprTracer(trace, aval, Var(aval))
        out = trace.full_raise(func(arg))
    consts = builder.const_values()
    constvars = builder.constvars()
    return ClosedJaxpr(Jaxpr(constvars, [arg._var], builder.eqns, [out._var]), consts)


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates of ``x`` at ``idx``.  Every method returns a NEW
    array and leaves ``x`` unchanged (``jax.numpy.ndarray.at``).

    Out-of-bounds indices: ``get`` clamps (``mode="fill"`` gives ``fill_value``); the update
    methods drop them (``mode="clip"`` clamps).  Repeated indices: ``add``/``subtract``/
    ``multiply``/``divide``/``power``/``min``/``max``/``apply`` apply every occurrence in
    turn; ``set`` keeps one of them.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None, out_sharding=None, wrap_negative_indices=True):
        """``x[idx]``; ``mode="fill"`` returns ``fill_value`` for out-of-bounds indices
        (``jax.numpy.ndarray.at[].get``)."""
        return _placed(lambda a: getitem(a, self.index, mode=mode, fill_value=fill_value,
                                         wrap_negative_indices=wrap_negative_indices),
                       out_sharding, "at[].get", self.array)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x[idx] = values`` as a new array; ``values`` broadcast to ``x[idx].shape`` and
        are cast to ``x.dtype`` (ValueError when they do not broadcast)."""
        return _placed(lambda a, v: _update(a, self.index, v, "set", "set", mode,
                                           wrap_negative_indices),
                       out_sharding, "at[].set", self.array, values)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x[idx] += values``; repeated indices accumulate.  TypeError for bool arrays."""
        return _placed(lambda a, v: _update(a, self.index, v, "add", "add", mode,
                                           wrap_negative_indices),
                       out_sharding, "at[].add", self.array, values)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 out_sharding=None, wrap_negative_indices=True):
        """``x[idx] -= values``; repeated indices accumulate.  TypeError for bool arrays."""
        return _placed(lambda a, v: _update(a, self.index, v, "sub", "subtract", mode,
                                           wrap_negative_indices),
                       out_sharding, "at[].subtract", self.array, values)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 out_sharding=None, wrap_negative_indices=True):
        """``x[idx] *= values``; repeated indices accumulate.  TypeError for bool arrays.
        With ``unique_indices=True`` (a promise that no index repeats) the result is also
        differentiable with respect to ``values`` for index arrays, as in JAX."""
        return _placed(lambda a, v: _update(a, self.index, v, "mul", "multiply", mode,
                                           wrap_negative_indices,
                                           unique_indices=unique_indices),
                       out_sharding, "at[].multiply", self.array, values)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
        """``x[idx] /= values``: ``x / ones.at[idx].multiply(values)`` as in JAX, so repeated
        indices divide repeatedly and the result has ``jnp.divide``'s (inexact) dtype."""
        def run(a, v):
            return _ufuncs.divide(a, _update(_creation.ones_like(a), self.index, v, "mul",
                                             "divide", mode, wrap_negative_indices,
                                             unique_indices=unique_indices))
        return _placed(run, out_sharding, "at[].divide", self.array, values)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
              out_sharding=None, wrap_negative_indices=True):
        """``x[idx] **= values``: ``x ** ones.at[idx].multiply(values)`` as in JAX, so
        repeated indices multiply their exponents."""
        def run(a, v):
            return _ufuncs.power(a, _update(_creation.ones_like(a), self.index, v, "mul",
                                            "power", mode, wrap_negative_indices,
                                            unique_indices=unique_indices))
        return _placed(run, out_sharding, "at[].power", self.array, values)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x[idx] = minimum(x[idx], values)``; repeated indices accumulate."""
        return _placed(lambda a, v: _update(a, self.index, v, "min", "min", mode,
                                           wrap_negative_indices),
                       out_sharding, "at[].min", self.array, values)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x[idx] = maximum(x[idx], values)``; repeated indices accumulate."""
        return _placed(lambda a, v: _update(a, self.index, v, "max", "max", mode,
                                           wrap_negative_indices),
                       out_sharding, "at[].max", self.array, values)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """``x[idx] = func(x[idx])`` for a unary scalar function ``func`` (traced once on a
        scalar of ``x.dtype``), applied once per occurrence of an index, like NumPy's
        ``ufunc.at``.  ValueError when ``func`` changes the dtype or shape;
        NotImplementedError when it closes over a traced value of an enclosing jit."""
        x = _as_operand(self.array)
        jaxpr = _trace_scalar_fn(func, np.dtype(x.dtype))
        return _update(x, self.index, np.zeros((), x.dtype), "apply", "apply", mode,
                       wrap_negative_indices, update_jaxpr=jaxpr)


def _placed(fn, out_sharding, who, *operands):
    """``fn(*operands)``; with JAX's ``out_sharding`` the result is resharded there, the
    operands made whole on its mesh first (``with_out_sharding``), so an index along a
    sharded dimension is allowed, as in JAX."""
    if out_sharding is None:
        return fn(*operands)
    from ..lax._sharding_constraints import with_out_sharding
    return with_out_sharding(fn, who, creation=False)(*operands, out_sharding=out_sharding)


# the update methods (``x.at[i].set(v)``, ...) are traceback boundaries (_traceback.py), as
# the Array methods are
for _name in ("get", "set", "add", "subtract", "multiply", "divide", "power", "min", "max",
              "apply"):
    setattr(_IndexUpdateRef, _name, _traceback.api_boundary(vars(_IndexUpdateRef)[_name]))
del _name


class IndexUpdateHelper:
    """The ``x.at`` property: ``x.at[idx]`` gives the update reference."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"
