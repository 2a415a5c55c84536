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
        raise IndexError("at most one ellipsis ('...') may appear in an index")
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
    info = dtypes.iinfo(dt)      # int4 and kin included
    return info.min if dtypes.kind(dt) == "i" else info.max


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


def _scatter_aval(x, updates, *idxs, indexer, op, mode, update_jaxpr=None,
                 unique_indices=False):
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


def _scatter_impl(x, updates, *idxs, indexer, op, mode, update_jaxpr=None,
                  unique_indices=False):
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


# ---- transformation rules ---------------------------------------------------------------
# gather is linear in its operand (transpose: scatter-add into zeros); scatter-add/sub are
# linear in operand and updates.  scatter-set differentiates by locating which update won
# each written location; scatter-min/max by locating the winners (ties share the tangent).
# Batching adds the mapped axis to the indexer: a leading full slice when no index array is
# mapped, else an iota index array placed just before the first int/array entry (so NumPy's
# adjacency rule for the advanced dimensions is unchanged), broadcast against the mapped
# index arrays.

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402


def _gather_bind(x, idxs, indexer, mode, fill_value=None):
    return gather_p.bind(x, *idxs, indexer=tuple(indexer), mode=mode, fill_value=fill_value)


def _scatter_bind(x, u, idxs, indexer, op, mode, update_jaxpr=None, unique_indices=False):
    extra = {} if update_jaxpr is None else {"update_jaxpr": update_jaxpr}
    if unique_indices:
        # the caller's promise that no location is hit twice (JAX's unique_indices):
        # scatter-mul is then differentiable in its updates
        extra["unique_indices"] = True
    return scatter_p.bind(x, u, *idxs, indexer=tuple(indexer), op=op, mode=mode, **extra)


def _gather_mode_for_scatter(mode):
    """The gather that reads what a scatter of ``mode`` wrote: clamped, or (for dropped
    out-of-bounds updates) filled."""
    return "clip" if mode == "clip" else "fill"


def _scatter_mode_for_gather(mode):
    return "drop" if mode == "fill" else "clip"


# gather ------------------------------------------------------------------------------------

def _gather_jvp(primals, tangents, indexer, mode, fill_value=None):
    x, *idxs = primals
    out = _gather_bind(x, idxs, indexer, mode, fill_value)
    t = tangents[0]
    if t is None:
        return out, None
    # out-of-bounds elements of a fill-mode gather are constants: zero tangent there
    return out, _gather_bind(t, idxs, indexer, mode, 0 if mode == "fill" else fill_value)


def _gather_transpose(ct, x, *idxs, indexer, mode, fill_value=None):
    if any(ad.is_undefined(i) for i in idxs):
        raise ValueError("gather is not linear in its indices")
    if not ad.is_undefined(x):
        return [None] * (1 + len(idxs))
    zeros = ad.zeros(x.aval.strip_weak_type())
    if mode == "promise_in_bounds":
        # as JAX: a static out-of-bounds integer index was clamped (its cotangent goes to
        # the clamped element); an out-of-bounds index array entry drops its cotangent
        indexer = _clamp_static_ints(x.aval.shape, indexer)
        ct_x = _scatter_bind(zeros, ct, idxs, indexer, "add", "promise_in_bounds")
    else:
        ct_x = _scatter_bind(zeros, ct, idxs, indexer, "add", _scatter_mode_for_gather(mode))
    return [ct_x] + [None] * len(idxs)


def _clamp_static_ints(shape, indexer):
    """``indexer`` with each static integer entry clamped into its dimension."""
    out, dim = [], 0
    fill = len(shape) - sum(_consumes(e) for e in indexer)
    for e in indexer:
        if e[0] == "ellipsis":
            dim += fill
        elif e[0] == "int":
            out.append(("int", min(max(int(e[1]), 0), max(shape[dim] - 1, 0))))
            dim += 1
            continue
        elif e[0] != "none":
            dim += 1
        out.append(e)
    return tuple(out)


gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose


# scatter -----------------------------------------------------------------------------------

def _c(x, v):
    return np.array(v, get_aval(x).dtype)


def _full(v, shape, dtype):
    from .shape import broadcast_in_dim_p
    return broadcast_in_dim_p.bind(np.array(v, dtype), shape=tuple(shape),
                                   broadcast_dimensions=())


def _scatter_set_jvp(x, u, idxs, tx, tu, indexer, mode):
    """Tangent of ``x.at[idx].set(u)``: each written location takes the tangent of the
    update that won it (the last one for repeated indices), found by scattering update ids."""
    from .elementwise import add_p, gt_p, select_n_p, sub_p
    from .shape import iota_p, reshape_p
    xa, ua = get_aval(x), get_aval(u)
    n = ua.size
    ids = iota_p.bind(dtype=np.dtype(np.int32), shape=(n,), dimension=0)
    ids = add_p.bind(ids, np.array(1, np.int32))
    ids = reshape_p.bind(ids, new_sizes=tuple(ua.shape), dimensions=None) if ua.shape != (n,) \
        else ids
    won = _scatter_bind(_full(0, xa.shape, np.int32), ids, idxs, indexer, "set", mode)
    written = gt_p.bind(won, np.array(0, np.int32))
    t = None
    if tx is not None:
        t = select_n_p.bind(written, tx, _full(0, xa.shape, get_aval(tx).dtype))
    if tu is not None and n:
        flat = reshape_p.bind(tu, new_sizes=(n,), dimensions=None) if ua.ndim != 1 else tu
        pos = sub_p.bind(won, np.array(1, np.int32))
        picked = _gather_bind(flat, [pos], (("array", 0),), "clip")
        t = ad.add_tangents(t, select_n_p.bind(written, _full(0, xa.shape, get_aval(tu).dtype),
                                               picked))
    return t


def _scatter_chooser_jvp(x, u, out, idxs, tx, tu, indexer, mode):
    """Tangent of scatter-min/max: the tangent of whichever of ``x`` and the updates attains
    each result, averaged over ties."""
    from .elementwise import add_p, convert_element_type_p, div_p, eq_p, mul_p
    dt = get_aval(x).dtype
    rd = np.dtype(dt)
    x_hit = convert_element_type_p.bind(eq_p.bind(x, out), new_dtype=rd, weak_type=False)
    reached = _gather_bind(out, idxs, indexer, _gather_mode_for_scatter(mode))
    u_hit = convert_element_type_p.bind(eq_p.bind(u, reached), new_dtype=rd, weak_type=False)
    zeros = _full(0, get_aval(x).shape, rd)
    count = add_p.bind(x_hit, _scatter_bind(zeros, u_hit, idxs, indexer, "add", mode))
    t = None
    if tx is not None:
        t = mul_p.bind(tx, x_hit)
    if tu is not None:
        t = ad.add_tangents(t, _scatter_bind(zeros, mul_p.bind(tu, u_hit), idxs, indexer,
                                             "add", mode))
    return div_p.bind(t, count)


def _scatter_jvp(primals, tangents, indexer, op, mode, update_jaxpr=None,
                 unique_indices=False):
    x, u, *idxs = primals
    tx, tu = tangents[0], tangents[1]
    out = _scatter_bind(x, u, idxs, indexer, op, mode, update_jaxpr, unique_indices)
    if tx is None and tu is None:
        return out, None
    if op in ("add", "sub"):
        tx = ad.instantiate(tx, get_aval(x).strip_weak_type())
        tu = ad.instantiate(tu, get_aval(u).strip_weak_type())
        return out, _scatter_bind(tx, tu, idxs, indexer, op, mode)
    if op == "set":
        return out, _scatter_set_jvp(x, u, idxs, tx, tu, indexer, mode)
    if op == "mul":
        t = None if tx is None else _scatter_bind(tx, u, idxs, indexer, "mul", mode)
        if tu is not None:
            if any(e[0] == "array" for e in indexer) and not unique_indices:
                raise NotImplementedError(
                    "scatter-mul is differentiable with respect to the updates only when "
                    "the indices are unique: static integers and slices, or index arrays "
                    "declared unique (x.at[idx].multiply(u, unique_indices=True)), as in "
                    "JAX")
            # unique locations: d(x * u) / du = x there, 0 elsewhere
            from .elementwise import mul_p
            x_at = _gather_bind(x, idxs, indexer, "clip", None)
            zeros = ad.zeros(get_aval(x).strip_weak_type())
            # each location is hit once: adding into zeros places the values (and add has
            # a transpose, the gather)
            t = ad.add_tangents(t, _scatter_bind(zeros, mul_p.bind(x_at, tu), idxs, indexer,
                                                 "add", mode))
        return out, t
    if op in ("min", "max"):
        return out, _scatter_chooser_jvp(x, u, out, idxs, tx, tu, indexer, mode)
    raise NotImplementedError("Differentiation rule for scatter-apply (x.at[idx].apply) is "
                              "not implemented")


def _scatter_transpose(ct, x, u, *idxs, indexer, op, mode, update_jaxpr=None,
                       unique_indices=False):
    from .elementwise import neg_p
    if any(ad.is_undefined(i) for i in idxs):
        raise ValueError("scatter is not linear in its indices")
    rest = [None] * len(idxs)
    if op == "mul":
        if ad.is_undefined(u):
            raise ValueError("scatter-mul is not linear in its updates")
        # a per-element scaling of the operand: its own transpose
        return [_scatter_bind(ct, u, idxs, indexer, "mul", mode) if ad.is_undefined(x)
                else None, None] + rest
    if op == "set" and not any(e[0] == "array" for e in indexer):
        # unique locations (static integers and slices): the written part of ct goes to
        # the updates, the rest to the operand
        u_aval = u.aval if ad.is_undefined(u) else get_aval(u)
        ct_x = _scatter_bind(ct, ad.zeros(u_aval.strip_weak_type()), idxs, indexer, "set",
                             mode) if ad.is_undefined(x) else None
        ct_u = _gather_bind(ct, idxs, indexer, _gather_mode_for_scatter(mode), 0) \
            if ad.is_undefined(u) else None
        return [ct_x, ct_u] + rest
    if op not in ("add", "sub"):
        raise NotImplementedError(f"Transpose rule for scatter-{op} not implemented "
                                  f"(it is not linear)")
    ct_x = ct if ad.is_undefined(x) else None
    ct_u = None
    if ad.is_undefined(u):
        ct_u = _gather_bind(ct, idxs, indexer, _gather_mode_for_scatter(mode), 0)
        if op == "sub":
            ct_u = neg_p.bind(ct_u)
    return [ct_x, ct_u] + rest


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose


# batching ----------------------------------------------------------------------------------

def _first_advanced(shape, indexer):
    """``(position in indexer, operand dimension)`` of the first int/array entry."""
    fill = len(shape) - sum(_consumes(e) for e in indexer)
    dim = 0
    for p, e in enumerate(indexer):
        if e[0] in ("int", "array"):
            return p, dim
        dim += fill if e[0] == "ellipsis" else _consumes(e)
    return None, None


def _advanced_out_dim(shape, indexer):
    """Output dimension where the advanced (int/array) dimensions start in ``x[indexer]``."""
    entries, advanced_first = expand_indexer(shape, indexer)
    if advanced_first:
        return 0
    at = 0
    for e in entries:
        if e[0] in ("int", "array"):
            return at
        at += 1     # slice and none entries each give one output dimension
    return at


def _unmapped_shape(x, d):
    s = tuple(get_aval(x).shape)
    return s if d is None else s[:d] + s[d + 1:]


def _batch_indexer(x, dx, idxs, didx, indexer, size):
    """The batched operand (mapped axis placed for the new indexer), index arrays, indexer
    and the mapped axis of ``x[indexer]``'s result."""
    from .shape import broadcast_in_dim_p, iota_p
    shape = _unmapped_shape(x, dx)
    idx_shapes = [_unmapped_shape(i, d) for i, d in zip(idxs, didx)]
    if all(d is None for d in didx):
        # a leading full slice over the mapped axis
        x = batching.to_front(x, dx, size)
        new = (("slice", 0, size, 1),) + tuple(indexer)
        _, advanced_first = expand_indexer(shape, indexer)
        out_dim = 0
        if advanced_first:
            adv = [idx_shapes[e[1]] for e in indexer if e[0] == "array"]
            out_dim = len(np.broadcast_shapes(*adv))
        return x, list(idxs), new, out_dim
    adv = [idx_shapes[e[1]] for e in indexer if e[0] == "array"]
    bshape = tuple(np.broadcast_shapes(*adv))
    r = len(bshape)
    p, dim = _first_advanced(shape, indexer)
    x = batching.moveaxis(batching.broadcast_front(x, size), 0, dim) if dx is None else \
        batching.moveaxis(x, dx, dim)
    new_idxs = []
    for i, d, s in zip(idxs, didx, idx_shapes):
        if d is not None:
            i = batching.moveaxis(i, d, 0)
            i = broadcast_in_dim_p.bind(i, shape=(size,) + bshape,
                                        broadcast_dimensions=(0,) + tuple(
                                            range(1 + r - len(s), 1 + r)))
        new_idxs.append(i)
    iota = iota_p.bind(dtype=np.dtype(np.int32), shape=(size,) + (1,) * r, dimension=0)
    new_idxs.append(iota)
    new = tuple(indexer[:p]) + (("array", len(idxs)),) + tuple(indexer[p:])
    new_shape = shape[:dim] + (size,) + shape[dim:]
    return x, new_idxs, new, _advanced_out_dim(new_shape, new)


def _gather_batch(args, dims, indexer, mode, fill_value=None):
    x, *idxs = args
    dx, *didx = dims
    size = batching.size_of(args, dims)
    x, idxs, new, out_dim = _batch_indexer(x, dx, idxs, didx, indexer, size)
    return _gather_bind(x, idxs, new, mode, fill_value), out_dim


def _scatter_batch(args, dims, indexer, op, mode, update_jaxpr=None, unique_indices=False):
    x, u, *idxs = args
    dx, du, *didx = dims
    size = batching.size_of(args, dims)
    if all(d is None for d in didx):
        x_dim = 0
        x = batching.to_front(x, dx, size)
    else:
        x_dim = _first_advanced(_unmapped_shape(x, dx), indexer)[1]
    xb, idxs, new, u_dim = _batch_indexer(x, 0 if all(d is None for d in didx) else dx, idxs,
                                          didx, indexer, size)
    u = batching.moveaxis(batching.to_front(u, du, size), 0, u_dim)
    return _scatter_bind(xb, u, idxs, new, op, mode, update_jaxpr, unique_indices), x_dim


gather_p.batch = _gather_batch
scatter_p.batch = _scatter_batch


# ---- sharding rules ----------------------------------------------------------------------
# A dimension the indexer takes whole (a full slice) maps to one result dimension and keeps
# its sharding; an indexed or cut dimension is gathered (an index may point anywhere in
# it).  gather: the index arrays' sharding carries over to the advanced result dimensions
# they make (each device gathers for its own indices).  scatter: the updates share the
# operand's kept sharding; their advanced dimensions and the index arrays are whole (every
# device applies every update to its part of the operand); its result is sliced back to
# the operand's sharding.

from ..core import sharding_rules as _sr  # noqa: E402


def _index_layout(shape, indexer, idx_shapes):
    """``(kept, adv_dims, bshape)``: the pairs (operand dimension, result dimension) of the
    full-slice entries, the result dimensions of the broadcast index arrays, and their
    broadcast shape."""
    entries, advanced_first = expand_indexer(shape, indexer)
    adv = [tuple(idx_shapes[e[1]]) for e in entries if e[0] == "array"]
    bshape = tuple(np.broadcast_shapes(*adv)) if adv else ()
    slots, adv_at, dim = [], None, 0        # result dims before the advanced block
    for e in entries:
        if e[0] == "none":
            slots.append(None)
            continue
        if e[0] == "slice":
            full = tuple(e[1:]) == (0, shape[dim], 1)
            slots.append(dim if full else None)
        elif adv and adv_at is None:
            adv_at = len(slots)
        dim += 1
    at = 0 if advanced_first else (adv_at if adv else len(slots))
    kept = []
    for i, d in enumerate(slots):
        pos = i + (len(bshape) if adv and i >= at else 0)
        if d is not None:
            kept.append((d, pos))
    adv_dims = list(range(at, at + len(bshape))) if adv else []
    return kept, adv_dims, bshape


def _gather_sharding(in_specs, in_avals, axis_sizes, *, indexer, mode, fill_value=None):
    x = in_avals[0]
    idx_avals = in_avals[1:]
    kept, adv_dims, bshape = _index_layout(x.shape, indexer, [a.shape for a in idx_avals])
    out_nd = len(indexed_shape(x.shape, indexer, [a.shape for a in idx_avals]))
    claim = _sr.Claim(out_nd)
    for d, pos in kept:
        claim.offer(pos, tuple(in_specs[0][d]))
    nb = len(bshape)
    for s, a in zip(in_specs[1:], idx_avals):
        off = nb - a.ndim
        for k in range(a.ndim):
            if a.shape[k] == bshape[off + k]:
                claim.offer(adv_dims[off + k], tuple(s[k]))
    out = claim.result()
    xop = [()] * x.ndim
    for d, pos in kept:
        xop[d] = out[pos]
    ops = [tuple(xop)]
    for a in idx_avals:
        off = nb - a.ndim
        ops.append(tuple(out[adv_dims[off + k]] if a.shape[k] == bshape[off + k] else ()
                         for k in range(a.ndim)))
    notes = _sr.reshard_notes(in_specs, ops, "gather needs an indexed or cut dimension "
                                              "whole")
    return _sr.ShardingRule(ops, [out], (), _sr.describe(notes))


def _scatter_sharding(in_specs, in_avals, axis_sizes, *, indexer, **params):
    x, u = in_avals[0], in_avals[1]
    idx_avals = in_avals[2:]
    kept, _, _ = _index_layout(x.shape, indexer, [a.shape for a in idx_avals])
    claim = _sr.Claim(x.ndim)
    for d, pos in kept:
        claim.offer(d, tuple(in_specs[0][d]))
    for d, pos in kept:
        claim.offer(d, tuple(in_specs[1][pos]))
    xop = claim.result()
    uop = [()] * u.ndim
    for d, pos in kept:
        uop[pos] = xop[d]
    ops = [xop, tuple(uop)] + [_sr.replicated(a.ndim) for a in idx_avals]
    notes = _sr.reshard_notes(in_specs, ops, "scatter needs an indexed or cut dimension, "
                                              "and the updates' indexed part, whole")
    # the result is sliced back to the operand's sharding (as GSPMD)
    first = tuple(tuple(e) for e in in_specs[0])
    return _sr.ShardingRule(ops, [xop], (), _sr.describe(notes),
                            reslice=[first] if first != xop else None)


def _indexer_local_params(params, operand_specs, local_in_shapes, local_out_shapes):
    # a slice entry over a dimension kept sharded (the rule keeps only whole slices
    # sharded) covers the local shard; an ellipsis stands for the dimensions no other
    # entry consumes
    local, spec = local_in_shapes[0], operand_specs[0]
    indexer = params["indexer"]
    fill = len(local) - sum(e[0] not in ("none", "ellipsis") for e in indexer)
    ix, d = [], 0
    for e in indexer:
        if e[0] == "ellipsis":
            d += fill
        elif e[0] != "none":
            if e[0] == "slice" and spec[d]:
                e = ("slice", 0, local[d], 1)
            d += 1
        ix.append(e)
    return {**params, "indexer": tuple(ix)}


gather_p.sharding = _gather_sharding
scatter_p.sharding = _scatter_sharding
gather_p.local_params = scatter_p.local_params = _indexer_local_params


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# An index becomes, for every element of the indexed part (its shape without the new axes),
# the operand position it reads or writes: per dimension of the operand, an int32 array
# (int64 where a dimension or index needs it: ``_position_dtype``) of that shape (a slice's ``start + step * iota``, an index array broadcast NumPy's way, a
# static integer), stacked on a last axis.  One element-wise ``stablehlo.gather`` /
# ``stablehlo.scatter`` then moves the elements.  Negative index-array entries wrap once;
# out-of-bounds positions are clamped (mode "clip", gather's "promise_in_bounds"), filled
# after a clamped gather (gather "fill"), or left out of range, where XLA's scatter skips
# the update (scatter "drop" and "promise_in_bounds"): the implementations' semantics.

def _positions(ctx, shape, indexer, idxs):
    """``(positions, in_bounds, s_shape)``: the operand positions (int32 or int64), shape
    ``s_shape + (ndim,)`` (``s_shape``: the indexed shape without new axes); ``in_bounds``:
    a bool array of ``s_shape`` (None when every position is in bounds by construction);
    positions are not clamped."""
    entries, advanced_first = expand_indexer(shape, indexer)
    adv_shapes = [tuple(idxs[e[1]].aval.shape) for e in entries if e[0] == "array"]
    bshape = tuple(np.broadcast_shapes(*adv_shapes)) if adv_shapes else ()
    # the positions of the output axes: slices in order, the broadcast advanced axes at
    # the first int/array entry (or first of all)
    s_shape, slice_pos, adv_at, n_slices = [], {}, None, 0
    dim = 0
    for e in entries:
        if e[0] == "none":
            continue
        if e[0] == "slice":
            slice_pos[dim] = n_slices
            n_slices += 1
        elif adv_at is None:
            adv_at = n_slices
        dim += 1
    b0 = 0 if (advanced_first or adv_at is None) else adv_at
    slice_lens = [len(range(*e[1:])) for e in entries if e[0] == "slice"]
    s_shape = slice_lens[:b0] + list(bshape) + slice_lens[b0:]
    s_shape = tuple(s_shape)
    i64 = _position_dtype(shape, s_shape, entries, idxs)
    cols, ok = [], None
    dim = 0
    for e in entries:
        if e[0] == "none":
            continue
        n = shape[dim]
        if e[0] == "slice":
            start, _, step = e[1:]
            q = slice_pos[dim]
            q = q if q < b0 else q + len(bshape)
            it = ctx.op("stablehlo.iota", [], ctx.aval(s_shape, i64),
                        {"iota_dimension": ctx.i64(q)})
            col = ctx.binary("add", ctx.full(start, it.aval),
                             ctx.binary("multiply", ctx.full(step, it.aval), it))
        else:
            if e[0] == "int":
                v = ctx.constant(int(e[1]), i64)
            else:
                v = ctx.convert(idxs[e[1]], i64)
                # negative entries count from the end, once
                neg = ctx.compare(v, ctx.full(0, v.aval), "LT")
                v = ctx.select(neg, ctx.binary("add", v, ctx.full(n, v.aval)), v)
            nd = v.aval.ndim
            col = ctx.broadcast(v, s_shape, range(b0 + len(bshape) - nd, b0 + len(bshape)))
            inside = ctx.binary("and", ctx.compare(col, ctx.full(0, col.aval), "GE"),
                                ctx.compare(col, ctx.full(n, col.aval), "LT"))
            ok = inside if ok is None else ctx.binary("and", ok, inside)
        cols.append((col, n))
        dim += 1
    return cols, ok, s_shape


_I32_MAX = 2 ** 31 - 1


def _position_dtype(shape, s_shape, entries, idxs) -> np.dtype:
    """The integer type of the positions: int32, as JAX's (a TPU emulates 64-bit integers
    with pairs of 32-bit ones), when every dimension, static index and index-array value
    fits it (index arrays of at most 32-bit signed or 16-bit unsigned integers: converting
    a wider one could wrap an out-of-range index into range); else int64."""
    if max(shape + s_shape, default=0) >= _I32_MAX:
        return np.dtype(np.int64)
    for e in entries:
        if e[0] == "int" and not -_I32_MAX <= int(e[1]) < _I32_MAX:
            return np.dtype(np.int64)
        if e[0] == "array":
            dt = np.dtype(idxs[e[1]].aval.dtype)
            if not (dt.kind == "i" and dt.itemsize <= 4 or dt.kind in "ub" and
                    dt.itemsize <= 2):
                return np.dtype(np.int64)
    return np.dtype(np.int32)


def _stack(ctx, cols, s_shape):
    parts = [ctx.reshape(c, s_shape + (1,)) for c in cols]
    if len(parts) == 1:
        return parts[0]
    return ctx.op("stablehlo.concatenate", parts,
                  ctx.aval(s_shape + (len(parts),), parts[0].aval.dtype),
                  {"dimension": ctx.i64(len(s_shape))})


def _clamped(ctx, cols):
    return [ctx.op("stablehlo.clamp", [ctx.constant(0, c.aval.dtype), c,
                                       ctx.constant(max(n - 1, 0), c.aval.dtype)], c.aval)
            for c, n in cols]


def _dnums(ctx, kind, nd, ivd):
    dims = ctx.dims(range(nd))
    if kind == "gather":
        return (f"#stablehlo.gather<collapsed_slice_dims = {dims}, start_index_map = {dims}, "
                f"index_vector_dim = {ivd}>")
    return (f"#stablehlo.scatter<inserted_window_dims = {dims}, "
            f"scatter_dims_to_operand_dims = {dims}, index_vector_dim = {ivd}>")


def _static_slice(ctx, x, indexer, out_shape):
    """``x[indexer]`` for an indexer of slices, new axes and in-bounds static integers
    only: a ``stablehlo.slice`` (after reversing the axes of negative steps) and a
    reshape; None when the indexer has anything else."""
    shape = x.aval.shape
    entries, _ = expand_indexer(shape, indexer)
    starts, limits, strides, rev = [], [], [], []
    dim = 0
    for e in entries:
        if e[0] == "none":
            continue
        n = shape[dim]
        if e[0] == "int":
            if not 0 <= int(e[1]) < n:
                return None
            starts.append(int(e[1]))
            limits.append(int(e[1]) + 1)
            strides.append(1)
        elif e[0] == "slice":
            rg = range(*e[1:])
            if rg.step < 0:         # the reversed axis, read forwards
                rev.append(dim)
                rg = range(n - 1 - rg.start, n - 1 - rg.stop, -rg.step)
            starts.append(rg.start)
            limits.append(rg[-1] + 1 if len(rg) else rg.start)
            strides.append(rg.step)
        else:
            return None
        dim += 1
    if rev:
        x = ctx.op("stablehlo.reverse", [x], x.aval, {"dimensions": ctx.i64s(rev)})
    sizes = [max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(starts, limits, strides)]
    r = ctx.op("stablehlo.slice", [x], ctx.aval(sizes, x.aval.dtype),
               {"start_indices": ctx.i64s(starts), "limit_indices": ctx.i64s(limits),
                "strides": ctx.i64s(strides)})
    return ctx.reshape(r, out_shape)


def _scalar_index(ctx, x, idxs, indexer, out_shape):
    """``x[indexer]`` with rank-0 index operands, clamped: a ``dynamic_slice`` of one
    element along each indexed dimension (its start wrapped once when negative; XLA
    clamps it into range, as mode "clip"), then the indexer's slices on the rest."""
    shape = x.aval.shape
    entries, _ = expand_indexer(shape, indexer)
    starts, sizes, rest = [], [], []
    zero = ctx.constant(0, np.int64)
    dim = 0
    for e in entries:
        if e[0] == "none":
            rest.append(e)
            continue
        n = shape[dim]
        if e[0] == "slice":
            starts.append(zero)
            sizes.append(n)
            rest.append(e)
        else:
            if e[0] == "int":
                v = ctx.constant(min(max(int(e[1]), 0), max(n - 1, 0)), np.int64)
            else:
                v = ctx.convert(idxs[e[1]], np.int64)
                neg = ctx.compare(v, ctx.full(0, v.aval), "LT")
                v = ctx.select(neg, ctx.binary("add", v, ctx.full(n, v.aval)), v)
            starts.append(v)
            sizes.append(1)
            rest.append(("int", 0))
        dim += 1
    piece = ctx.op("stablehlo.dynamic_slice", [x] + starts, ctx.aval(sizes, x.aval.dtype),
                   {"slice_sizes": ctx.i64s(sizes)})
    return _static_slice(ctx, piece, tuple(rest), out_shape)


def _gather_lower(ctx, x, *idxs, indexer, mode, fill_value=None):
    out = ctx.avals_out[0]
    if math.prod(out.shape) == 0:
        return ctx.full(0, out)
    shape = x.aval.shape
    if not shape:
        return ctx.reshape(x, out.shape)
    if not idxs:
        r = _static_slice(ctx, x, indexer, out.shape)
        if r is not None:
            return r
    elif mode != "fill" and all(i.aval.ndim == 0 for i in idxs):
        return _scalar_index(ctx, x, idxs, indexer, out.shape)
    cols, ok, s_shape = _positions(ctx, shape, indexer, idxs)
    pos = _stack(ctx, _clamped(ctx, cols), s_shape)
    nd = len(shape)
    g = ctx.op("stablehlo.gather", [x, pos], ctx.aval(s_shape, x.aval.dtype),
               {"dimension_numbers": _dnums(ctx, "gather", nd, len(s_shape)),
                "slice_sizes": ctx.i64s([1] * nd), "indices_are_sorted": "false"})
    if mode == "fill" and ok is not None:
        fv = default_fill_value(x.aval.dtype) if fill_value is None else fill_value
        with np.errstate(all="ignore"):
            fill = ctx.full(np.asarray(fv).astype(x.aval.dtype), g.aval)
        g = ctx.select(ok, g, fill)
    return ctx.reshape(g, out.shape)


from . import _lowering as _lo  # noqa: E402

_SCATTER_COMBINE = {"add": "add", "sub": "subtract", "mul": "multiply", "min": "minimum",
                    "max": "maximum"}


def _scatter_lower(ctx, x, updates, *idxs, indexer, op, mode, update_jaxpr=None,
                   unique_indices=False):
    shape = x.aval.shape
    if not math.prod(shape) or not math.prod(updates.aval.shape):
        return x
    dt = x.aval.dtype
    if not shape:
        u = ctx.reshape(updates, ())
        return _combine_scalar(ctx, op, x, u, update_jaxpr)
    cols, ok, s_shape = _positions(ctx, shape, indexer, idxs)
    if mode == "clip":
        cols = _clamped(ctx, cols)
    else:
        cols = [c for c, _ in cols]
    pos = _stack(ctx, cols, s_shape)
    u = ctx.reshape(updates, s_shape)
    region = ctx.scalar_region([dt], lambda a, b: _combine_scalar(ctx, op, a, b,
                                                                  update_jaxpr))
    return ctx.op("stablehlo.scatter", [x, pos, u], x.aval,
                  {"scatter_dimension_numbers": _dnums(ctx, "scatter", len(shape),
                                                       len(s_shape)),
                   "indices_are_sorted": "false", "unique_indices": "false"},
                  regions=[region])


def _combine_scalar(ctx, op, a, b, update_jaxpr):
    if op == "set":
        return b
    if op == "apply":
        return ctx.lower_closed(update_jaxpr, a)[0]
    if op == "min":
        return _lo.minimum(ctx, a, b)
    if op == "max":
        return _lo.maximum(ctx, a, b)
    return ctx.binary(_SCATTER_COMBINE[op], a, b)


gather_p.lowering = _gather_lower
scatter_p.lowering = _scatter_lower
