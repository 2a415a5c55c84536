"""NumPy-style indexing as two primitives: ``gather`` (``x[idx]``) and ``scatter``
(``x.at[idx].set/add/mul/min/max``).

The static structure of an index is the ``indexer`` param, a tuple with one entry per
indexed dimension (Ellipsis already expanded by the caller):

- ``("int", i)``: a static integer;  ``("slice", start, stop, step)``: a static slice
  (already normalised to the dimension);  ``("none",)``: a new axis;
- ``("array", k)``: the k-th integer index operand (dynamic; any shape, broadcast together).

Out-of-bounds indices follow ``mode``: ``"clip"`` clamps (gather's default, as in JAX),
``"fill"`` yields ``fill_value`` (gather) / ``"drop"`` skips the update (scatter's default),
``"promise_in_bounds"`` trusts the caller (clamped here).  Negative array indices count from
the end.  Scatter-add/mul/min/max accumulate over duplicate indices.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import check_same_dtypes

MODES = ("clip", "fill", "drop", "promise_in_bounds")


def _consumes(entry) -> int:
    return 0 if entry[0] == "none" else 1


def _slice_len(start, stop, step) -> int:
    return len(range(start, stop, step))


def indexed_shape(shape, indexer, idx_shapes) -> tuple:
    """Result shape of ``x[index]`` under NumPy's rules (advanced indices broadcast; their
    dimensions go where they stand if adjacent, else first)."""
    n_used = sum(_consumes(e) for e in indexer)
    if n_used > len(shape):
        raise IndexError(f"Too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{n_used} were indexed")
    has_adv = any(e[0] == "array" for e in indexer)
    adv_shapes = [idx_shapes[e[1]] for e in indexer if e[0] == "array"]
    try:
        bshape = tuple(np.broadcast_shapes(*adv_shapes)) if adv_shapes else ()
    except ValueError:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(str(s) for s in adv_shapes)}") from None
    out, adv_pos, dim, positions = [], None, 0, []
    for e in indexer:
        kind = e[0]
        if kind == "none":
            out.append(1)
        elif kind == "slice":
            out.append(_slice_len(*e[1:]))
            dim += 1
        else:  # int or array
            if has_adv:
                positions.append(len(out))
                if adv_pos is None:
                    adv_pos = len(out)
            dim += 1
    out.extend(shape[dim:])
    if has_adv:
        # advanced entries occupy no slot in ``out``; check they were adjacent
        adv_idx = [i for i, e in enumerate(indexer) if e[0] in ("array", "int")]
        contiguous = adv_idx == list(range(adv_idx[0], adv_idx[-1] + 1))
        pos = adv_pos if contiguous else 0
        out = out[:pos] + list(bshape) + out[pos:]
    return tuple(out)


def _check_index_dtypes(name, idxs):
    for i in idxs:
        if i.dtype.kind not in "iu":
            raise IndexError(f"{name}: index arrays must be integers, got {i.str_short()}")


def _gather_aval(x, *idxs, indexer, mode, fill_value=None):
    _check_index_dtypes("gather", idxs)
    if mode not in MODES:
        raise ValueError(f"gather mode must be one of {MODES}, got {mode!r}")
    return ShapedArray(indexed_shape(x.shape, indexer, [i.shape for i in idxs]), x.dtype,
                       x.weak_type)


def _np_index(shape, indexer, idxs, mode):
    """NumPy index tuple; out-of-bounds entries point at ``shape[d]`` (one past the end) in
    fill/drop mode, where the caller has padded one extra element."""
    pad = mode in ("fill", "drop")
    out, dim = [], 0
    for e in indexer:
        kind = e[0]
        if kind == "none":
            out.append(None)
            continue
        n = shape[dim]
        if kind == "slice":
            out.append(slice(*e[1:]))
        else:
            i = np.asarray(e[1] if kind == "int" else idxs[e[1]]).astype(np.int64)
            i = np.where(i < 0, i + n, i)
            if pad:
                i = np.where((i < 0) | (i >= n), n, i)
            else:
                i = np.clip(i, 0, max(n - 1, 0))
            out.append(i if kind == "array" else int(i))
        dim += 1
    return tuple(out)


def _padded(x, indexer, fill):
    """``x`` with one extra trailing element (``fill``) on every dimension an int/array entry
    indexes."""
    widths, dim = [], 0
    for e in indexer:
        if e[0] == "none":
            continue
        widths.append((0, 1 if e[0] in ("int", "array") else 0))
        dim += 1
    widths += [(0, 0)] * (x.ndim - dim)
    out = np.empty([s + w[1] for s, w in zip(x.shape, widths)], x.dtype)
    out[...] = fill
    out[tuple(slice(0, s) for s in x.shape)] = x
    return out


def _default_fill(dt):
    if dtypes.is_inexact(dt):
        return np.nan
    if dt == np.bool_:
        return True
    return np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max


def _gather_impl(x, *idxs, indexer, mode, fill_value=None):
    index = _np_index(x.shape, indexer, idxs, mode)
    if mode == "fill":
        x = _padded(x, indexer, _default_fill(x.dtype) if fill_value is None else fill_value)
    return x[index]


gather_p = Primitive("gather", abstract_eval=_gather_aval, impl=_gather_impl,
                     flops=lambda *a, **k: 0, kind="gather")


SCATTER_OPS = {"set": None, "add": np.add, "mul": np.multiply, "min": np.minimum,
               "max": np.maximum}


def _scatter_aval(x, updates, *idxs, indexer, op, mode):
    _check_index_dtypes("scatter", idxs)
    if op not in SCATTER_OPS:
        raise ValueError(f"scatter op must be one of {tuple(SCATTER_OPS)}, got {op!r}")
    if mode not in MODES:
        raise ValueError(f"scatter mode must be one of {MODES}, got {mode!r}")
    check_same_dtypes(f"scatter-{op}", (x, updates))
    want = indexed_shape(x.shape, indexer, [i.shape for i in idxs])
    if updates.shape != want:
        raise ValueError(f"scatter-{op}: updates of shape {updates.shape} do not match the "
                         f"indexed shape {want} of operand {x.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _scatter_impl(x, updates, *idxs, indexer, op, mode):
    drop = mode in ("drop", "fill")
    m = "drop" if drop else "clip"
    base = _padded(x, indexer, 0) if drop else x.copy()
    index = _np_index(x.shape, indexer, idxs, m)
    ufunc = SCATTER_OPS[op]
    with np.errstate(all="ignore"):
        if ufunc is None:
            base[index] = updates
        else:
            ufunc.at(base, index, updates)
    if drop:
        base = base[tuple(slice(0, s) for s in x.shape)]
    return base


scatter_p = Primitive("scatter", abstract_eval=_scatter_aval, impl=_scatter_impl,
                      flops=lambda x, u, *a, **k: u.size, kind="scatter")
