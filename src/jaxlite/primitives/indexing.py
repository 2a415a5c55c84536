"""NumPy-style indexing as two primitives: ``gather`` (``x[idx]``) and ``scatter``
(``x.at[idx].set/add/sub/mul/min/max/apply``).

Layer: primitives.  The static structure of an index is the ``indexer`` param, a tuple with
one entry per index item (boolean masks and lists already turned into integer arrays by
``jaxlite.numpy``):

- ``("int", i)``: a static integer (negative values already wrapped once by the caller;
  what is still out of bounds follows ``mode``);
- ``("slice", start, stop, step)``: ``range(start, stop, step)`` over the dimension, as
  ``slice.indices`` returns it;
- ``("none",)``: a new axis of size 1;  ``("ellipsis",)``: as many full slices as needed;
- ``("array", k)``: the k-th integer index operand (dynamic, any shape; negative entries
  count from the end).  Array indices broadcast together (NumPy's advanced indexing); their
  dimensions replace the indexed ones where they stand if the int/array entries are
  adjacent, else they go first.

Out-of-bounds indices follow ``mode``.  gather: ``"promise_in_bounds"`` (the default of
``x[idx]``) and ``"clip"`` clamp, ``"fill"`` yields ``fill_value`` (None: NaN for inexact
dtypes, the minimum for signed, the maximum for unsigned integers, True for bool).
scatter: ``"clip"`` clamps, ``"drop"`` (the default of ``x.at[idx].set``) and
``"promise_in_bounds"`` skip the update.  Scatter ``add/sub/mul/min/max`` combine repeated
indices one after another; ``set`` keeps the last; ``apply`` runs its unary program
(``update_jaxpr``, traced on a scalar) once per occurrence of an index.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import _dtype_name, dtype_class_ok

GATHER_MODES = ("promise_in_bounds", "clip", "fill")
SCATTER_MODES = ("promise_in_bounds", "clip", "drop")
SCATTER_OPS = ("set", "add", "sub", "mul", "min", "max", "apply")


# ---- the indexer ----------------------------------------------------------------------

def _consumes(entry) -> int:
    return 0 if entry[0] in ("none", "ellipsis") else 1


def expand_indexer(shape, indexer) -> tuple:
    """``(entries, advanced_first)``: the indexer with its ellipsis replaced by full slices
    and trailing full slices added, and whether the advanced dimensions go first (NumPy:
    when the int/array entries are not adjacent; an ellipsis or a new axis separates)."""
    n_used = sum(_consumes(e) for e in indexer)
    n_ell = sum(e[0] == "ellipsis" for e in indexer)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_used > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but "
                         f"{n_used} were indexed (shape {tuple(shape)}, indexer {indexer})")
    fill = len(shape) - n_used
    entries, dim = [], 0
    for e in indexer:
        if e[0] == "ellipsis":
            entries += [("slice", 0, shape[dim + j], 1) for j in range(fill)]
            dim += fill
            continue
        entries.append(e)
        dim += _consumes(e)
    entries += [("slice", 0, shape[d], 1) for d in range(dim, len(shape))]
    has_array = any(e[0] == "array" for e in indexer)
    pos = [i for i, e in enumerate(indexer) if e[0] in ("int", "array")]
    advanced_first = has_array and pos != list(range(pos[0], pos[0] + len(pos)))
    return entries, advanced_first


def _check_entries(name, shape, entries, n_idx):
    seen, dim = [], 0
    for e in entries:
        kind = e[0]
        if kind == "none":
            continue
        n = shape[dim]
        if kind == "slice":
            if len(e) != 4 or e[3] == 0:
                raise ValueError(f"{name}: bad slice entry {e} (want (slice, start, stop, step)"
                                 f" with step != 0)")
            r = range(*e[1:])
            if len(r) and not (0 <= r[0] < n and 0 <= r[-1] < n):
                raise ValueError(f"{name}: slice entry {e} reaches outside axis {dim} of size "
                                 f"{n} (operand shape {tuple(shape)})")
        elif kind == "int":
            if n == 0:
                raise IndexError(f"index {e[1]} is out of bounds for axis {dim} with size 0 "
                                 f"(operand shape {tuple(shape)})")
        elif kind == "array":
            seen.append(e[1])
        else:
            raise ValueError(f"{name}: unknown indexer entry {e!r}")
        dim += 1
    if sorted(seen) != list(range(n_idx)):
        raise ValueError(f"{name}: the indexer uses index operands {seen} but {n_idx} were "
                         f"given")


def indexed_shape(shape, indexer, idx_shapes) -> tuple:
    """Shape of ``x[index]`` for ``x`` of ``shape`` (NumPy's rules).

    Raises IndexError for too many indices, ValueError when the index arrays do not
    broadcast together (as JAX does)."""
    entries, advanced_first = expand_indexer(shape, indexer)
    adv = [tuple(idx_shapes[e[1]]) for e in entries if e[0] == "array"]
    try:
        bshape = tuple(np.broadcast_shapes(*adv)) if adv else ()
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: index arrays of shapes "
                         f"{', '.join(str(s) for s in adv)} do not broadcast together "
                         f"(indexing an array of shape {tuple(shape)})") from None
    out, adv_at, dim = [], None, 0
    for e in entries:
        if e[0] == "none":
            out.append(1)
            continue
        if e[0] == "slice":
            out.append(len(range(*e[1:])))
        elif adv and adv_at is None:
            adv_at = len(out)
        dim += 1
    if adv:
        at = 0 if advanced_first else adv_at
        out[at:at] = bshape
    return tuple(out)


def _check_indices(name, x, idxs, indexer):
    for i in idxs:
        if i.dtype.kind not in "iu":
            raise TypeError(f"{name}: index arrays must have an integer dtype, got "
                            f"{i.str_short()}")
    entries, _ = expand_indexer(x.shape, indexer)
    _check_entries(name, x.shape, entries, len(idxs))
    return entries


# ---- the NumPy reference implementation ----------------------------------------------

def _numpy_index(shape, indexer, idxs, oob):
    """The NumPy index tuple for ``indexer`` over an array of ``shape`` (the ellipsis kept,
    so NumPy places the advanced dimensions as the user wrote them), and the dimensions the
    int/array entries index.  ``oob="clip"`` clamps out-of-bounds indices; ``"pad"`` points
    them one past the end (the caller pads that element).  Array entries wrap negative values
    once; int entries come wrapped already."""
    fill = len(shape) - sum(_consumes(e) for e in indexer)
    out, dims, dim = [], [], 0
    for e in indexer:
        kind = e[0]
        if kind == "none":
            out.append(None)
            continue
        if kind == "ellipsis":
            out.append(Ellipsis)
            dim += fill
            continue
        n = shape[dim]
        if kind == "slice":
            start, stop, step = e[1:]
            out.append(slice(start, stop if stop >= 0 else None, step))
        else:
            if kind == "int":
                i = np.int64(e[1])
            else:
                i = np.asarray(idxs[e[1]]).astype(np.int64)
                i = np.where(i < 0, i + n, i)
            if oob == "clip":
                i = np.clip(i, 0, max(n - 1, 0))
            else:
                i = np.where((i < 0) | (i >= n), n, i)
            out.append(int(i) if kind == "int" else i)
            dims.append(dim)
        dim += 1
    return tuple(out), dims


def _padded(x, dims, fill):
    """``x`` with one extra trailing element (``fill``) along each of ``dims``."""
    shape = list(x.shape)
    for d in dims:
        shape[d] += 1
    out = np.empty(shape, x.dtype)
    out[...] = fill
    out[tuple(slice(0, s) for s in x.shape)] = x
    return out


def default_fill_value(dt):
    """gather's fill for out-of-bounds indices when none is given (as JAX)."""
    dt = np.dtype(dt)
    if dtypes.is_inexact(dt):
        return np.nan
    if dt == np.bool_:
        return True
    return np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max


# ---- gather ----------------------------------------------------------------------------

def _gather_aval(x, *idxs, indexer, mode, fill_value=None):
    if mode not in GATHER_MODES:
        raise ValueError(f"gather: unknown mode {mode!r}; expected one of {GATHER_MODES}")
    entries = _check_indices("gather", x, idxs, indexer)
    shape = indexed_shape(x.shape, indexer, [i.shape for i in idxs])
    if math.prod(shape):
        dim = 0
        for e in entries:
            if e[0] == "array" and x.shape[dim] == 0:
                if not idxs[e[1]].shape:   # a scalar index, as JAX words it
                    raise IndexError(f"index is out of bounds for axis {dim} with size 0 "
                                     f"(operand shape {x.shape})")
                raise TypeError(f"gather: cannot take elements at index array operand {e[1]} "
                                f"from axis {dim} of size 0 (operand shape {x.shape})")
            dim += _consumes(e)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _gather_impl(x, *idxs, indexer, mode, fill_value=None):
    out_shape = indexed_shape(x.shape, indexer, [np.shape(i) for i in idxs])
    if not math.prod(out_shape):
        return np.zeros(out_shape, x.dtype)
    fill = mode == "fill"
    index, dims = _numpy_index(x.shape, indexer, idxs, "pad" if fill else "clip")
    if fill:
        fv = default_fill_value(x.dtype) if fill_value is None else fill_value
        with np.errstate(all="ignore"):
            x = _padded(x, dims, np.asarray(fv).astype(x.dtype))
    return np.asarray(x[index])


gather_p = Primitive("gather", abstract_eval=_gather_aval, impl=_gather_impl,
                     flops=lambda *a, **k: 0, kind="gather")


# ---- scatter ---------------------------------------------------------------------------

_NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
              "max": np.maximum}


def _scatter_aval(x, updates, *idxs, indexer, op, mode, update_jaxpr=None):
    if op not in SCATTER_OPS:
        raise ValueError(f"scatter: unknown op {op!r}; expected one of {SCATTER_OPS}")
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter: unknown mode {mode!r}; expected one of {SCATTER_MODES}")
    if x.dtype != updates.dtype:
        raise TypeError(f"scatter-{op} requires the operand and the updates to have the same "
                        f"dtype, got {_dtype_name(x.dtype)} and {_dtype_name(updates.dtype)}")
    if op in ("add", "sub", "mul") and not dtype_class_ok(x.dtype, "fciu"):
        raise TypeError(f"scatter-{op} does not accept dtype {_dtype_name(x.dtype)}. Accepted "
                        f"dtypes are subtypes of integer, floating, complexfloating.")
    if (op == "apply") != (update_jaxpr is not None):
        raise ValueError("scatter: update_jaxpr is required by op='apply' and only by it")
    if update_jaxpr is not None:
        scalar = ShapedArray((), x.dtype)
        ins = list(update_jaxpr.in_avals)
        outs = list(update_jaxpr.out_avals)
        if len(ins) != 1 or ins[0].shape != () or ins[0].dtype != x.dtype or len(outs) != 1 \
                or outs[0].shape != () or outs[0].dtype != x.dtype:
            raise ValueError(f"scatter-apply: the update function must map a scalar of dtype "
                             f"{scalar.str_short()} to one of the same dtype, got "
                             f"{[a.str_short() for a in ins]} -> "
                             f"{[a.str_short() for a in outs]}")
    _check_indices("scatter", x, idxs, indexer)
    want = indexed_shape(x.shape, indexer, [i.shape for i in idxs])
    if updates.shape != want:
        raise ValueError(f"scatter-{op}: updates of shape {updates.shape} do not match the "
                         f"shape {want} of the indexed part of operand {x.str_short()}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _scatter_impl(x, updates, *idxs, indexer, op, mode, update_jaxpr=None):
    if not x.size or not updates.size:
        return x
    drop = mode != "clip"
    index, dims = _numpy_index(x.shape, indexer, idxs, "pad" if drop else "clip")
    base = _padded(x, dims, 0) if drop else x.copy()
    with np.errstate(all="ignore"):
        if op == "set":
            base[index] = updates
        elif op == "apply":
            _apply_at(base, index, update_jaxpr)
        else:
            _NUMPY_OPS[op].at(base, index, updates)
    if drop:
        base = base[tuple(slice(0, s) for s in x.shape)]
    return base


def _apply_at(base, index, closed):
    """Applies the scalar program ``closed`` to ``base`` in place, once per occurrence of
    each location in ``index``."""
    from ..core.eager import host_value
    from ..ir.interpret import eval_jaxpr_impl
    counts = np.zeros(base.shape, np.int64)
    np.add.at(counts, index, 1)
    consts = [host_value(c) for c in closed.consts]
    elementwise = all(eqn.primitive.kind == "elementwise" for eqn in closed.jaxpr.eqns)
    for r in range(int(counts.max(initial=0))):
        where = counts > r
        vals = base[where]
        if elementwise:
            new = eval_jaxpr_impl(closed.jaxpr, consts, vals)[0]
        else:
            new = [eval_jaxpr_impl(closed.jaxpr, consts, v)[0] for v in vals]
        base[where] = np.broadcast_to(np.asarray(new, base.dtype), vals.shape)


scatter_p = Primitive("scatter", abstract_eval=_scatter_aval, impl=_scatter_impl,
                      flops=lambda x, u, *a, **k: u.size, kind="scatter")
