"""Shape primitives: broadcast, reshape, transpose, squeeze, concatenate, pad, rev, slices,
iota.  Every rule checks its operands and names the offending shapes in its error."""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import check_same_dtypes, normalize_axes

_zero = lambda *a, **k: 0  # noqa: E731  (shape ops do no arithmetic)


def _shape_prim(name, aval, impl, kind="shape"):
    return Primitive(name, abstract_eval=aval, impl=impl, flops=_zero, kind=kind)


# broadcast_in_dim ------------------------------------------------------------------------

def _bid_aval(x, shape, broadcast_dimensions, sharding=None):
    shape, bd = tuple(shape), tuple(broadcast_dimensions)
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{shape}.")
    if len(bd) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                        f"operand ndim; got broadcast_dimensions {bd} for operand ndim "
                        f"{x.ndim}.")
    for i, d in enumerate(bd):
        if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                            f"equal to their corresponding dimensions in the target broadcast "
                            f"shape; got operand of shape {x.shape}, target broadcast shape "
                            f"{shape}, broadcast_dimensions {bd}")
    if list(bd) != sorted(bd) or len(set(bd)) != len(bd):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing; "
                        f"got broadcast_dimensions {bd}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _bid_impl(x, shape, broadcast_dimensions, sharding=None):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = _shape_prim("broadcast_in_dim", _bid_aval, _bid_impl, kind="broadcast")


# reshape -------------------------------------------------------------------------------

def _reshape_aval(x, new_sizes, dimensions=None, sharding=None):
    new_sizes = tuple(int(d) for d in new_sizes)
    if any(d < 0 for d in new_sizes) or int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} "
                        f"(size {int(np.prod(new_sizes))}) for shape {x.shape} "
                        f"(size {x.size}).")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, new_sizes, dimensions=None, sharding=None):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


reshape_p = _shape_prim("reshape", _reshape_aval, _reshape_impl, kind="view")


# transpose -----------------------------------------------------------------------------

def _transpose_aval(x, permutation):
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {perm} for operand shape {x.shape}.")
    return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype, x.weak_type)


transpose_p = _shape_prim("transpose", _transpose_aval,
                          lambda x, permutation: np.transpose(x, permutation), kind="view")


# squeeze -------------------------------------------------------------------------------

def _squeeze_aval(x, dimensions):
    if len(set(dimensions)) != len(tuple(dimensions)):
        raise ValueError(f"dimensions are not unique: {tuple(dimensions)}")
    dims = normalize_axes(dimensions, x.ndim, "squeeze")
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one, got shape={x.shape} and dimensions={tuple(dimensions)}")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dims), x.dtype,
                       x.weak_type)


squeeze_p = _shape_prim("squeeze", _squeeze_aval,
                        lambda x, dimensions: np.squeeze(x, tuple(dimensions)), kind="view")


# concatenate ---------------------------------------------------------------------------

def _concat_aval(*xs, dimension):
    if not xs:
        raise ValueError("concatenate requires at least one operand")
    check_same_dtypes("concatenate", xs)
    nd = xs[0].ndim
    if any(x.ndim != nd for x in xs):
        raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                        f"{', '.join(str(x.shape) for x in xs)}.")
    if not 0 <= dimension < max(nd, 1):
        raise ValueError(f"concatenate dimension out of bounds: dimension {dimension} for "
                         f"shapes {', '.join(str(x.shape) for x in xs)}")
    for x in xs:
        if x.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape))
                               if i != dimension):
            raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions "
                            f"other than the one being concatenated: concatenating along "
                            f"dimension {dimension} for shapes "
                            f"{', '.join(str(x.shape) for x in xs)}.")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


concatenate_p = _shape_prim("concatenate", _concat_aval,
                            lambda *xs, dimension: np.concatenate(xs, axis=dimension))


# pad -----------------------------------------------------------------------------------

def _pad_aval(x, padding_value, padding_config):
    check_same_dtypes("pad", (x, padding_value))
    if padding_value.shape != ():
        raise TypeError(f"pad padding_value must be a scalar, got shape {padding_value.shape}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad: padding_config has {len(padding_config)} entries for operand "
                         f"of shape {x.shape}")
    shape = []
    for n, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"pad: interior padding must be >= 0, got {padding_config}")
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise ValueError(f"pad: resulting dimension would be negative for operand shape "
                             f"{x.shape} and padding_config {padding_config}")
        shape.append(size)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, padding_value, padding_config):
    shape = [lo + hi + n + max(n - 1, 0) * it for n, (lo, hi, it) in zip(x.shape, padding_config)]
    out = np.full(shape, padding_value, dtype=x.dtype)
    # place x's elements with interior strides, cutting negative low/high padding
    big = [n + max(n - 1, 0) * it for n, (_, _, it) in zip(x.shape, padding_config)]
    tmp = np.full(big, padding_value, dtype=x.dtype)
    tmp[tuple(slice(None, None, it + 1) for (_, _, it) in padding_config)] = x
    src, dst = [], []
    for n, (lo, hi, _), size in zip(big, padding_config, shape):
        s0 = max(-lo, 0)
        d0 = max(lo, 0)
        length = min(n - s0, size - d0)
        src.append(slice(s0, s0 + max(length, 0)))
        dst.append(slice(d0, d0 + max(length, 0)))
    out[tuple(dst)] = tmp[tuple(src)]
    return out


pad_p = _shape_prim("pad", _pad_aval, _pad_impl)


# rev -----------------------------------------------------------------------------------

def _rev_aval(x, dimensions):
    normalize_axes(dimensions, x.ndim, "rev")
    return x


rev_p = _shape_prim("rev", _rev_aval, lambda x, dimensions: np.flip(x, tuple(dimensions)),
                    kind="view")


# slice ---------------------------------------------------------------------------------

def _slice_aval(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice: start_indices {start_indices}, limit_indices "
                        f"{limit_indices} and strides {strides} must each have one entry per "
                        f"dimension of operand shape {x.shape}")
    shape = []
    for n, s, l, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= s <= l <= n or st < 1:
            raise TypeError(f"slice indices out of bounds: start_indices {start_indices}, "
                            f"limit_indices {limit_indices}, strides {strides} for operand "
                            f"shape {x.shape}")
        shape.append(max(0, -(-(l - s) // st)))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


slice_p = _shape_prim("slice", _slice_aval, _slice_impl, kind="view")


# dynamic_slice / dynamic_update_slice --------------------------------------------------

def _check_index_operands(name, x, idxs):
    if len(idxs) != x.ndim:
        raise TypeError(f"{name}: got {len(idxs)} start indices for operand of shape {x.shape}; "
                        f"give one per dimension")
    for i in idxs:
        if i.shape != () or i.dtype.kind not in "iu":
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{i.str_short()}")


def _dyn_slice_aval(x, *idxs, slice_sizes):
    _check_index_operands("dynamic_slice", x, idxs)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= n for s, n in zip(slice_sizes, x.shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must fit in operand "
                        f"shape {x.shape}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _clamped_starts(shape, idxs, sizes):
    # XLA clamps start indices so the whole slice stays in bounds.
    return [int(min(max(int(i), 0), n - s)) for i, n, s in zip(idxs, shape, sizes)]


def _dyn_slice_impl(x, *idxs, slice_sizes):
    st = _clamped_starts(x.shape, idxs, slice_sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(st, slice_sizes))]


dynamic_slice_p = _shape_prim("dynamic_slice", _dyn_slice_aval, _dyn_slice_impl)


def _dus_aval(x, update, *idxs):
    _check_index_operands("dynamic_update_slice", x, idxs)
    check_same_dtypes("dynamic_update_slice", (x, update))
    if update.ndim != x.ndim or any(u > n for u, n in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update shape {update.shape} must fit in operand "
                        f"shape {x.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dus_impl(x, update, *idxs):
    st = _clamped_starts(x.shape, idxs, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + n) for s, n in zip(st, update.shape))] = update
    return out


dynamic_update_slice_p = _shape_prim("dynamic_update_slice", _dus_aval, _dus_impl)


# iota ----------------------------------------------------------------------------------

def _iota_aval(*, dtype, shape, dimension, sharding=None):
    if any(d < 0 for d in shape):
        raise TypeError(f"iota shape must have every element be nonnegative, got "
                        f"{tuple(shape)}.")
    if np.dtype(dtype) == np.bool_:
        raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype, shape, dimension, sharding=None):
    r = np.arange(shape[dimension], dtype=dtype)
    bshape = [1] * len(shape)
    bshape[dimension] = shape[dimension]
    return np.broadcast_to(r.reshape(bshape), shape)


iota_p = _shape_prim("iota", _iota_aval, _iota_impl, kind="other")


def _copy_aval(x):
    return x


copy_p = _shape_prim("copy", _copy_aval, lambda x: np.array(x, copy=True), kind="elementwise")
copy_p.scalar_op = "copy"
