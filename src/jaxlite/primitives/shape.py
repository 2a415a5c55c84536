"""Shape primitives: broadcast, reshape, transpose, squeeze, concatenate, stack, unstack,
split, pad, rev, slices, iota.  Every rule checks its operands and names the offending
shapes in its error."""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core import sharding_rules as _sr
from ..core.primitive import InPlace, Primitive
from ._rules import check_same_dtypes, normalize_axes

_zero = lambda *a, **k: 0  # noqa: E731  (shape ops do no arithmetic)
_always = lambda **params: True  # noqa: E731  (a rename whatever the parameters)


def _shape_prim(name, aval, impl, kind="shape", **facts):
    return Primitive(name, abstract_eval=aval, impl=impl, flops=_zero, kind=kind, **facts)


# broadcast_in_dim ------------------------------------------------------------------------

def _bid_aval(x, shape, broadcast_dimensions, sharding=None):
    shape, bd = tuple(shape), tuple(broadcast_dimensions)
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim: target shape {shape} has a negative "
                        f"dimension.")
    if len(bd) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bd} has {len(bd)} "
                        f"entries but the operand has ndim {x.ndim}; it needs one entry "
                        f"per operand axis.")
    if any(d < 0 for d in bd):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bd} has a negative "
                        f"entry; each has to be a target axis in [0, {len(shape)})")
    if any(d >= len(shape) for d in bd):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bd} names an axis "
                        f"outside the target shape {shape} (operand shape {x.shape})")
    if len(set(bd)) != len(bd):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bd} repeats an axis")
    for i, d in enumerate(bd):
        if x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot broadcast to "
                            f"{shape} with broadcast_dimensions {bd}: each operand axis "
                            f"has to be size 1 or the size of the target axis it maps to")
    # the primitive keeps its dimensions ascending (its implementations, transpose rule and
    # lowerings rely on it); lax.broadcast_in_dim transposes the operand for other orders
    if list(bd) != sorted(bd):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bd} is not strictly "
                        f"increasing")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _bid_impl(x, shape, broadcast_dimensions, sharding=None):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


def _bid_pp_params(params):
    # as JAX prints it: the shape (and sharding) are implied by the result's type, and the
    # broadcast of a scalar shows no (empty) broadcast_dimensions
    shown = {k: v for k, v in params.items() if k not in ("shape", "sharding")}
    if not shown.get("broadcast_dimensions", True):
        del shown["broadcast_dimensions"]
    return shown


# a broadcast view repeats elements (kernels read it through its strides); folding it would
# only materialise it
broadcast_in_dim_p = _shape_prim("broadcast_in_dim", _bid_aval, _bid_impl, kind="broadcast",
                                 strided_view=True, foldable=False,
                                 sharding=_sr.broadcast_in_dim,
                                 local_params=_sr.sized_by_result("shape"))
broadcast_in_dim_p.pp_params = _bid_pp_params


# reshape -------------------------------------------------------------------------------

def _reshape_aval(x, new_sizes, dimensions=None, sharding=None):
    new_sizes = tuple(int(d) for d in new_sizes)
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape new_sizes must all be non-negative, got {new_sizes}.")
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(f"reshape: dimensions {tuple(dimensions)} must be a permutation of "
                        f"the operand's dimensions (shape {x.shape})")
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        # ValueError, as JAX 0.10 (whose lowering, not its shape rule, refuses the sizes)
        raise ValueError(f"reshape total size must be unchanged, got new_sizes {new_sizes} "
                         f"(size {int(np.prod(new_sizes))}) for shape {x.shape} "
                         f"(size {x.size}).")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, new_sizes, dimensions=None, sharding=None):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


# without ``dimensions`` the elements keep their row-major order
reshape_p = _shape_prim("reshape", _reshape_aval, _reshape_impl, kind="view", view=True,
                        rename=lambda dimensions=None, **_: dimensions is None,
                        sharding=_sr.reshape,
                        local_params=_sr.sized_by_result("new_sizes"))


# transpose -----------------------------------------------------------------------------

def _transpose_aval(x, permutation):
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise TypeError(f"transpose: {perm} does not reorder the axes of an operand of "
                        f"shape {x.shape} (it has to list each of 0..{x.ndim - 1} once).")
    return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype, x.weak_type)


transpose_p = _shape_prim("transpose", _transpose_aval,
                          lambda x, permutation: np.transpose(x, permutation), kind="view",
                          strided_view=True, sharding=_sr.transpose)


# squeeze -------------------------------------------------------------------------------

def _squeeze_aval(x, dimensions):
    if len(set(dimensions)) != len(tuple(dimensions)):
        raise ValueError(f"dimensions are not unique: {tuple(dimensions)}")
    dims = normalize_axes(dimensions, x.ndim, "squeeze")
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(f"squeeze: dimensions={tuple(dimensions)} includes an axis whose "
                             f"size is not 1 (shape={x.shape})")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dims), x.dtype,
                       x.weak_type)


squeeze_p = _shape_prim("squeeze", _squeeze_aval,
                        lambda x, dimensions: np.squeeze(x, tuple(dimensions)), kind="view",
                        view=True, rename=_always, sharding=_sr.squeeze)


# concatenate ---------------------------------------------------------------------------

def _concat_aval(*xs, dimension):
    if not xs:
        raise ValueError("concatenate got no operands")
    check_same_dtypes("concatenate", xs)
    nd = xs[0].ndim
    if any(x.ndim != nd for x in xs):
        raise TypeError(f"concatenate: the operands differ in rank (shapes "
                        f"{', '.join(str(x.shape) for x in xs)}).")
    if not 0 <= dimension < nd:
        raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for "
                        f"shapes {', '.join(str(x.shape) for x in xs)}.")
    for x in xs:
        if x.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape))
                               if i != dimension):
            raise TypeError(f"concatenate along dimension {dimension}: shapes "
                            f"{', '.join(str(x.shape) for x in xs)} also differ in another "
                            f"dimension; only the joined one may differ.")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


concatenate_p = _shape_prim(
    "concatenate", _concat_aval, lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    sharding=_sr.whole_along(lambda avals, dimension: (dimension,),
                             "concatenate needs its joined dimension whole"))


# stack / unstack / split (JAX 0.10's primitives: ``jnp.stack``, ``jnp.unstack`` and
# ``jnp.split`` print as one equation each) ------------------------------------------------

def _stack_aval(*xs, axis):
    if not xs:
        raise ValueError("stack expects at least one operand, got 0.")
    if len({x.ndim for x in xs}) != 1:
        raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                         f"{', '.join(str(x.shape) for x in xs)}.")
    if len({tuple(x.shape) for x in xs}) != 1:
        raise ValueError(f"All input arrays must have the same shape. Got "
                         f"{', '.join(str(x.shape) for x in xs)}.")
    check_same_dtypes("stack", xs)
    nd = xs[0].ndim
    if not 0 <= axis <= nd:
        raise ValueError(f"stack: axis {axis} is out of bounds for a result of rank "
                         f"{nd + 1}")
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


def _stack_sharding(in_specs, in_avals, axis_sizes, *, axis):
    # the operands share one spec; the new dimension is whole
    nd = in_avals[0].ndim
    common = _sr.merge(in_specs, nd, axis_sizes)
    out = list(common)
    out.insert(axis, ())
    notes = _sr.reshard_notes(in_specs, [common] * len(in_avals),
                              "the stacked operands share one sharding")
    return _sr.ShardingRule([common] * len(in_avals), [tuple(out)], (), _sr.describe(notes))


stack_p = _shape_prim("stack", _stack_aval, lambda *xs, axis: np.stack(xs, axis=axis),
                      sharding=_stack_sharding)


def _unstack_aval(x, axis):
    if x.ndim == 0:
        raise ValueError(f"unstack requires arrays with rank > 0, however a scalar array of "
                         f"shape {x.shape} was passed.")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"unstack: axis {axis} is out of bounds for an operand of shape "
                         f"{x.shape}")
    shape = list(x.shape)
    n = shape.pop(axis)
    return [ShapedArray(shape, x.dtype, x.weak_type)] * n


def _unstack_sharding(in_specs, in_avals, axis_sizes, *, axis):
    # each result is one index along ``axis``: that dimension is read whole
    s = _sr.gather_dims(tuple(in_specs[0]), (axis,))
    out = tuple(e for d, e in enumerate(s) if d != axis)
    notes = _sr.reshard_notes(in_specs, [s], "unstack reads its axis whole")
    return _sr.ShardingRule([s], [out] * in_avals[0].shape[axis], (), _sr.describe(notes))


unstack_p = _shape_prim("unstack", _unstack_aval, lambda x, axis: [
    np.take(x, i, axis=axis) for i in range(x.shape[axis])], multiple_results=True,
    sharding=_unstack_sharding)


def _split_aval(x, sizes, axis):
    if any(n < 0 for n in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for an operand of shape "
                         f"{x.shape}")
    if x.shape[axis] != sum(sizes):
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of "
                         f"the operand shape {list(x.shape)}")
    out = []
    for n in sizes:
        shape = list(x.shape)
        shape[axis] = int(n)
        out.append(ShapedArray(shape, x.dtype, x.weak_type))
    return out


def _split_impl(x, sizes, axis):
    out, start = [], 0
    for n in sizes:
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(start, start + int(n))
        out.append(x[tuple(idx)].copy())
        start += int(n)
    return out


def _split_sharding(in_specs, in_avals, axis_sizes, *, sizes, axis):
    s = _sr.gather_dims(tuple(in_specs[0]), (axis,))
    notes = _sr.reshard_notes(in_specs, [s], "split cuts its axis whole")
    return _sr.ShardingRule([s], [s] * len(sizes), (), _sr.describe(notes))


split_p = _shape_prim("split", _split_aval, _split_impl, multiple_results=True,
                      sharding=_split_sharding)


# pad -----------------------------------------------------------------------------------

def _pad_aval(x, padding_value, padding_config):
    check_same_dtypes("pad", (x, padding_value))
    if padding_value.shape != ():
        raise ValueError(f"pad: padding_value must be a scalar, got shape "
                         f"{padding_value.shape}")
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


pad_p = _shape_prim("pad", _pad_aval, _pad_impl, sharding=_sr.whole_along(
    lambda avals, padding_config: [d for d, c in enumerate(padding_config)
                                   if tuple(c) != (0, 0, 0)],
    "pad needs a padded dimension whole"))


# rev -----------------------------------------------------------------------------------

def _rev_aval(x, dimensions):
    # TypeError and no negative dimensions, as JAX's rev (jnp.flip normalises its axes)
    dims = tuple(int(d) for d in dimensions)
    if any(d < 0 for d in dims):
        raise TypeError(f"rev dimensions must all be non-negative, got {dims}.")
    if any(d >= x.ndim for d in dims):
        raise TypeError(f"rev dimensions must all be less than the operand's rank {x.ndim}, "
                        f"got {dims}.")
    if len(set(dims)) != len(dims):
        raise TypeError(f"rev dimensions must be unique, got {dims}.")
    return x


rev_p = _shape_prim("rev", _rev_aval, lambda x, dimensions: np.flip(x, tuple(dimensions)),
                    kind="view", view=True, sharding=_sr.whole_along(
                        lambda avals, dimensions: dimensions,
                        "rev needs a reversed dimension whole"))


# slice ---------------------------------------------------------------------------------

def _slice_aval(x, start_indices, limit_indices, strides=None):
    # a start or limit count that differs is JAX's ValueError, a strides count its TypeError
    if not len(start_indices) == len(limit_indices) == x.ndim:
        raise ValueError(f"slice: start_indices {start_indices} and limit_indices "
                         f"{limit_indices} must each have one entry per dimension of "
                         f"operand shape {x.shape}")
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


def _sliced_dims(avals, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return [d for d, (n, s, l, st) in enumerate(zip(avals[0].shape, start_indices,
                                                   limit_indices, strides))
            if (s, l, st) != (0, n, 1)]


slice_p = _shape_prim("slice", _slice_aval, _slice_impl, kind="view", view=True,
                      sharding=_sr.whole_along(_sliced_dims,
                                               "slice needs a cut dimension whole"),
                      local_params=_sr.cut_to_operand("limit_indices"))


# dynamic_slice / dynamic_update_slice --------------------------------------------------

def _check_index_operands(name, x, idxs):
    if len(idxs) != x.ndim:
        raise ValueError(f"{name}: got {len(idxs)} start indices for operand of shape "
                         f"{x.shape}; give one per dimension")
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


dynamic_slice_p = _shape_prim("dynamic_slice", _dyn_slice_aval, _dyn_slice_impl,
                              sharding=_sr.whole_along(
                                  lambda avals, slice_sizes: [
                                      d for d, (n, k) in enumerate(zip(avals[0].shape,
                                                                       slice_sizes)) if n != k],
                                  "dynamic_slice needs a cut dimension whole"),
                              local_params=_sr.cut_to_operand("slice_sizes"))


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


dynamic_update_slice_p = _shape_prim(
    "dynamic_update_slice", _dus_aval, _dus_impl, sharding=_sr.whole_along(
        lambda avals: [d for d, (n, k) in enumerate(zip(avals[0].shape, avals[1].shape))
                       if n != k],
        "dynamic_update_slice needs a dimension the update does not cover whole"))


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


iota_p = _shape_prim("iota", _iota_aval, _iota_impl, kind="other", foldable=False,
                     sharding=_sr.creation)


def _copy_aval(x):
    return x


# always a fresh array: it may take over its operand's dying buffer (a rename); never
# folded (a constant's copy would only double it)
copy_p = _shape_prim("copy", _copy_aval, lambda x: np.array(x, copy=True), kind="elementwise",
                     rename=_always, inplace=InPlace(None), foldable=False,
                     sharding=_sr.elementwise)
copy_p.scalar_op = "copy"


# ---- transformation rules ---------------------------------------------------------------

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402


def _zeros_of(aval):
    return ad.zeros(aval)


def _bid_transpose(ct, x, shape, broadcast_dimensions, sharding=None):
    from .reduction import reduce_sum_p
    bd = tuple(broadcast_dimensions)
    in_shape = x.aval.shape
    summed = tuple(i for i in range(len(shape)) if i not in bd)
    ones = tuple(d for i, d in enumerate(bd) if in_shape[i] == 1 and shape[d] != 1)
    out = ct
    if summed or ones:
        out = reduce_sum_p.bind(ct, axes=tuple(sorted(summed + ones)), out_sharding=None)
    if get_aval(out).shape != tuple(in_shape):
        out = reshape_p.bind(out, new_sizes=tuple(in_shape), dimensions=None, sharding=None)
    return [out]


ad.deflinear(broadcast_in_dim_p, _bid_transpose)


def _bid_batch(args, dims, shape, broadcast_dimensions, sharding=None):
    (x,), (d,) = args, dims
    x = batching.moveaxis(x, d, 0)
    size = get_aval(x).shape[0]
    # (NumPy integers for the shifted dimensions: JAX's rule prints them so)
    return broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                   broadcast_dimensions=(0,) + tuple(
                                       np.int64(b) + 1 for b in broadcast_dimensions)), 0


broadcast_in_dim_p.batch = _bid_batch

def _reshape_transpose(ct, x, new_sizes, dimensions=None, sharding=None):
    shape = tuple(x.aval.shape)
    if dimensions is None:
        return [reshape_p.bind(ct, new_sizes=shape, dimensions=None, sharding=None)]
    # the operand was transposed by ``dimensions`` before the reshape: reshape back to the
    # transposed shape, then undo the transposition (dropping it sent each cotangent to
    # the wrong element: the VJP of a JVP through lax.reshape(..., dimensions=) was wrong)
    permuted = reshape_p.bind(ct, new_sizes=tuple(shape[d] for d in dimensions),
                              dimensions=None)
    inv = [0] * len(dimensions)
    for i, d in enumerate(dimensions):
        inv[d] = i
    return [transpose_p.bind(permuted, permutation=tuple(inv))]


ad.deflinear(reshape_p, _reshape_transpose)


def _reshape_batch(args, dims, new_sizes, dimensions=None, sharding=None):
    x = batching.moveaxis(args[0], dims[0], 0)
    if dimensions is not None:
        x = transpose_p.bind(x, permutation=(0,) + tuple(p + 1 for p in dimensions))
    size = get_aval(x).shape[0]
    return reshape_p.bind(x, new_sizes=(size,) + tuple(new_sizes), dimensions=None), 0


reshape_p.batch = _reshape_batch


def _transpose_transpose(ct, x, permutation):
    inv = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inv[p] = i
    return [transpose_p.bind(ct, permutation=tuple(inv))]


ad.deflinear(transpose_p, _transpose_transpose)
transpose_p.batch = lambda args, dims, permutation: (transpose_p.bind(
    batching.moveaxis(args[0], dims[0], 0),
    permutation=(0,) + tuple(p + 1 for p in permutation)), 0)

def _squeeze_transpose(ct, x, dimensions):
    # the size-1 dimensions put back by a broadcast, as JAX's transpose writes it
    nd = len(x.aval.shape)
    gone = {d % nd for d in dimensions}
    return [broadcast_in_dim_p.bind(ct, shape=tuple(x.aval.shape), broadcast_dimensions=tuple(
        i for i in range(nd) if i not in gone))]


ad.deflinear(squeeze_p, _squeeze_transpose)


def _squeeze_batch(args, dims, dimensions):
    x = batching.moveaxis(args[0], dims[0], 0)
    nd = get_aval(x).ndim - 1
    return squeeze_p.bind(x, dimensions=tuple((d % nd) + 1 for d in dimensions)), 0


squeeze_p.batch = _squeeze_batch


def _concat_transpose(ct, *xs, dimension):
    # one split of the cotangent into every operand's piece (JAX's transpose); the pieces
    # of defined operands are dropped
    sizes = tuple((x.aval if ad.is_undefined(x) else get_aval(x)).shape[dimension]
                  for x in xs)
    pieces = split_p.bind(ct, sizes=sizes, axis=dimension)
    return [p if ad.is_undefined(x) else None for p, x in zip(pieces, xs)]


ad.deflinear(concatenate_p, _concat_transpose)


def _concat_batch(args, dims, dimension):
    size = batching.size_of(args, dims)
    xs = [batching.to_front(x, d, size) for x, d in zip(args, dims)]
    return concatenate_p.bind(*xs, dimension=dimension + 1), 0


concatenate_p.batch = _concat_batch


def _stack_transpose(ct, *xs, axis):
    if ct is None:
        return [None] * len(xs)
    cts = unstack_p.bind(ct, axis=axis)
    return [c if ad.is_undefined(x) else None for c, x in zip(cts, xs)]


ad.deflinear(stack_p, _stack_transpose)


def _stack_batch(args, dims, axis):
    d = dims[0]
    if d is not None and all(b == d for b in dims):
        # every operand batched along the same dimension: stacked where they are
        if axis <= d:
            return stack_p.bind(*args, axis=axis), d + 1
        return stack_p.bind(*args, axis=axis + 1), d
    size = batching.size_of(args, dims)
    xs = [batching.to_front(x, b, size) for x, b in zip(args, dims)]
    return stack_p.bind(*xs, axis=axis + 1), 0


stack_p.batch = _stack_batch


def _unstack_transpose(cts, x, axis):
    if all(c is None for c in cts):
        return [None]
    aval = x.aval
    shape = list(aval.shape)
    shape.pop(axis)
    part = ShapedArray(shape, aval.dtype).strip_weak_type()
    return [stack_p.bind(*[ad.instantiate(c, part) for c in cts], axis=axis)]


ad.deflinear(unstack_p, _unstack_transpose)


def _unstack_batch(args, dims, axis):
    (x,), (d,) = args, dims
    if axis < d:
        outs = unstack_p.bind(x, axis=axis)
        return outs, [d - 1] * len(outs)
    outs = unstack_p.bind(x, axis=axis + 1)
    return outs, [d] * len(outs)


unstack_p.batch = _unstack_batch


def _split_transpose(cts, x, sizes, axis):
    if all(c is None for c in cts):
        return [None]
    aval = x.aval
    parts = []
    for c, n in zip(cts, sizes):
        shape = list(aval.shape)
        shape[axis] = int(n)
        parts.append(ad.instantiate(c, ShapedArray(shape, aval.dtype).strip_weak_type()))
    return [concatenate_p.bind(*parts, dimension=axis)]


ad.deflinear(split_p, _split_transpose)


def _split_batch(args, dims, sizes, axis):
    (x,), (d,) = args, dims
    outs = split_p.bind(x, sizes=sizes, axis=axis + 1 if axis >= d else axis)
    return outs, [d] * len(outs)


split_p.batch = _split_batch


def _pad_transpose(ct, x, padding_value, padding_config):
    from .reduction import reduce_sum_p
    from .elementwise import sub_p
    out = [None, None]
    zero = np.zeros((), get_aval(ct).dtype)
    unpadded = pad_p.bind(ct, zero, padding_config=tuple((-lo, -hi, 0) for lo, hi, _ in
                                                         padding_config))
    shape = get_aval(unpadded).shape
    t_x = slice_p.bind(unpadded, start_indices=(0,) * len(shape), limit_indices=tuple(shape),
                       strides=tuple(it + 1 for _, _, it in padding_config))
    if ad.is_undefined(x):
        out[0] = t_x
    if ad.is_undefined(padding_value):
        all_ax = tuple(range(len(shape)))
        total = reduce_sum_p.bind(ct, axes=tuple(range(get_aval(ct).ndim)))
        out[1] = sub_p.bind(total, reduce_sum_p.bind(t_x, axes=all_ax))
    return out


ad.deflinear(pad_p, _pad_transpose)


def _pad_batch(args, dims, padding_config):
    from .elementwise import select_n_p
    (x, pv), (dx, dpv) = args, dims
    size = batching.size_of(args, dims)
    x = batching.to_front(x, dx, size)
    cfg = ((0, 0, 0),) + tuple(padding_config)
    if dpv is None:
        return pad_p.bind(x, pv, padding_config=cfg), 0
    # a per-example padding value: pad with zeros, then select it where the padding is
    xa = get_aval(x)
    zero = np.zeros((), xa.dtype)
    padded = pad_p.bind(x, zero, padding_config=cfg)
    mask = pad_p.bind(broadcast_in_dim_p.bind(np.array(True), shape=xa.shape,
                                              broadcast_dimensions=()),
                      np.array(False), padding_config=cfg)
    out_shape = get_aval(padded).shape
    pv = broadcast_in_dim_p.bind(batching.moveaxis(pv, dpv, 0), shape=out_shape,
                                 broadcast_dimensions=(0,))
    return select_n_p.bind(mask, pv, padded), 0


pad_p.batch = _pad_batch

ad.deflinear(rev_p, lambda ct, x, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
rev_p.batch = lambda args, dims, dimensions: (rev_p.bind(
    batching.moveaxis(args[0], dims[0], 0),
    dimensions=tuple(d % (get_aval(args[0]).ndim - 1) + 1 for d in dimensions)), 0)


def _slice_transpose(ct, x, start_indices, limit_indices, strides=None):
    # a pad of the cotangent by zeros (JAX's transpose; its high, and when strided its
    # interior, padding computed with NumPy, so they print as ``np.int64(1)``)
    shape = x.aval.shape
    out_shape = get_aval(ct).shape
    if strides is None or all(st == 1 for st in strides):
        cfg = [(s, np.int64(n - l), 0) for s, n, l in zip(start_indices, shape, limit_indices)]
    else:
        cfg = []
        for n, s, st, m in zip(shape, start_indices, strides, out_shape):
            last = s + (1 + (m - 1) * st if m else 0)
            cfg.append((s, np.int64(n - last), np.int64(st - 1)))
    zero = np.zeros((), get_aval(ct).dtype)
    return [pad_p.bind(ct, zero, padding_config=tuple(cfg))]


ad.deflinear(slice_p, _slice_transpose)


def _slice_batch(args, dims, start_indices, limit_indices, strides=None):
    x = batching.moveaxis(args[0], dims[0], 0)
    size = get_aval(x).shape[0]
    st = None if strides is None else (1,) + tuple(strides)
    return slice_p.bind(x, start_indices=(0,) + tuple(start_indices),
                        limit_indices=(size,) + tuple(limit_indices), strides=st), 0


slice_p.batch = _slice_batch


# dynamic_slice / dynamic_update_slice: linear in the operand (and the update) ----------

def _dyn_slice_jvp(primals, tangents, slice_sizes):
    x, *idxs = primals
    out = dynamic_slice_p.bind(x, *idxs, slice_sizes=slice_sizes)
    if tangents[0] is None:
        return out, None
    return out, dynamic_slice_p.bind(tangents[0], *idxs, slice_sizes=slice_sizes)


def _dyn_slice_transpose(ct, x, *idxs, slice_sizes):
    zeros = ad.zeros(x.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *idxs)] + [None] * len(idxs)


dynamic_slice_p.jvp = _dyn_slice_jvp
dynamic_slice_p.transpose = _dyn_slice_transpose


def _dus_jvp(primals, tangents):
    x, u, *idxs = primals
    out = dynamic_update_slice_p.bind(x, u, *idxs)
    tx, tu = tangents[:2]
    if tx is None and tu is None:
        return out, None
    tx = ad.instantiate(tx, get_aval(x))
    tu = ad.instantiate(tu, get_aval(u))
    return out, dynamic_update_slice_p.bind(tx, tu, *idxs)


def _dus_transpose(ct, x, u, *idxs):
    u_aval = u.aval if ad.is_undefined(u) else get_aval(u)
    out = [None, None] + [None] * len(idxs)
    if ad.is_undefined(x):
        out[0] = dynamic_update_slice_p.bind(ct, ad.zeros(u_aval), *idxs)
    if ad.is_undefined(u):
        out[1] = dynamic_slice_p.bind(ct, *idxs, slice_sizes=tuple(u_aval.shape))
    return out


dynamic_update_slice_p.jvp = _dus_jvp
dynamic_update_slice_p.transpose = _dus_transpose


def _window_indices(shape, idxs, idx_dims, sizes, size):
    """Per-dimension gather index arrays (broadcastable to (batch,) + sizes) selecting the
    clamped window at per-example start indices, plus the batch index."""
    from .elementwise import add_p, clamp_p, convert_element_type_p
    nd = len(shape)
    out = []
    bshape = [1] * (nd + 1)
    bshape[0] = size
    out.append(iota_p.bind(dtype=np.dtype(np.int32), shape=(size,) + (1,) * nd, dimension=0))
    for i, (n, s) in enumerate(zip(shape, sizes)):
        st = idxs[i]
        st = convert_element_type_p.bind(st, new_dtype=np.dtype(np.int32), weak_type=False)
        if idx_dims[i] is None:
            st = broadcast_in_dim_p.bind(st, shape=(size,), broadcast_dimensions=())
        st = clamp_p.bind(np.array(0, np.int32), st, np.array(n - s, np.int32))
        sh = [1] * (nd + 1)
        sh[0] = size
        st = broadcast_in_dim_p.bind(st, shape=tuple(sh), broadcast_dimensions=(0,))
        sh2 = [1] * (nd + 1)
        sh2[i + 1] = s
        io = iota_p.bind(dtype=np.dtype(np.int32), shape=tuple(sh2), dimension=i + 1)
        full = [size] + [1] * nd
        full[i + 1] = s
        out.append(add_p.bind(broadcast_in_dim_p.bind(st, shape=tuple(full),
                                                      broadcast_dimensions=tuple(range(nd + 1))),
                              broadcast_in_dim_p.bind(io, shape=tuple(full),
                                                      broadcast_dimensions=tuple(range(nd + 1)))))
    return out


def _dyn_slice_batch(args, dims, slice_sizes):
    from .indexing import gather_p
    x, *idxs = args
    dx, *didx = dims
    size = batching.size_of(args, dims)
    if all(d is None for d in didx):
        x = batching.moveaxis(x, dx, 0)
        zero = np.zeros((), get_aval(idxs[0]).dtype) if idxs else None
        return dynamic_slice_p.bind(x, zero, *idxs, slice_sizes=(size,) + tuple(slice_sizes)), 0
    x = batching.to_front(x, dx, size)
    shape = get_aval(x).shape[1:]
    idxs = [batching.moveaxis(i, d, 0) if d is not None else i for i, d in zip(idxs, didx)]
    arrays = _window_indices(shape, idxs, didx, slice_sizes, size)
    indexer = tuple(("array", k) for k in range(len(arrays)))
    return gather_p.bind(x, *arrays, indexer=indexer, mode="clip", fill_value=None), 0


dynamic_slice_p.batch = _dyn_slice_batch


def _dus_batch(args, dims):
    from .indexing import scatter_p
    x, u, *idxs = args
    dx, du, *didx = dims
    size = batching.size_of(args, dims)
    x = batching.to_front(x, dx, size)
    u = batching.to_front(u, du, size)
    if all(d is None for d in didx):
        zero = np.zeros((), get_aval(idxs[0]).dtype) if idxs else None
        return dynamic_update_slice_p.bind(x, u, zero, *idxs), 0
    shape = get_aval(x).shape[1:]
    idxs = [batching.moveaxis(i, d, 0) if d is not None else i for i, d in zip(idxs, didx)]
    arrays = _window_indices(shape, idxs, didx, get_aval(u).shape[1:], size)
    indexer = tuple(("array", k) for k in range(len(arrays)))
    return scatter_p.bind(x, u, *arrays, indexer=indexer, op="set", mode="clip"), 0


dynamic_update_slice_p.batch = _dus_batch

ad.deflinear(copy_p, lambda ct, x: [ct])
batching.vectorized_batcher(copy_p)


# stop_gradient: the identity whose tangent is zero -------------------------------------

stop_gradient_p = _shape_prim("stop_gradient", _copy_aval, lambda x: x, kind="view",
                              view=True, rename=_always, sharding=_sr.unary_same)
stop_gradient_p.jvp = lambda primals, tangents: (stop_gradient_p.bind(*primals), None)
batching.vectorized_batcher(stop_gradient_p)


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------

from .. import dtypes as _dtypes  # noqa: E402
from . import _lowering as _lo  # noqa: E402


def _bid_lower(ctx, x, shape, broadcast_dimensions, sharding=None):
    return ctx.op("stablehlo.broadcast_in_dim", [x], ctx.avals_out[0],
                  {"broadcast_dimensions": ctx.i64s(broadcast_dimensions)})


def _reshape_lower(ctx, x, new_sizes, dimensions=None, sharding=None):
    if dimensions is not None and tuple(dimensions) != tuple(range(x.aval.ndim)):
        x = _transpose_lower(ctx, x, dimensions)
    return ctx.reshape(x, ctx.avals_out[0].shape)


def _transpose_lower(ctx, x, permutation):
    perm = tuple(int(p) for p in permutation)
    if perm == tuple(range(len(perm))):
        return x
    shape = tuple(x.aval.shape[p] for p in perm)
    return ctx.op("stablehlo.transpose", [x], ctx.aval(shape, x.aval.dtype),
                  {"permutation": ctx.i64s(perm)})


def _squeeze_lower(ctx, x, dimensions):
    return ctx.reshape(x, ctx.avals_out[0].shape)


def _concat_lower(ctx, *xs, dimension):
    return ctx.op("stablehlo.concatenate", list(xs), ctx.avals_out[0],
                  {"dimension": ctx.i64(dimension)})


def _stack_lower(ctx, *xs, axis):
    shape = list(xs[0].aval.shape)
    shape.insert(axis, 1)
    dims = [i for i in range(len(shape)) if i != axis]
    parts = [ctx.op("stablehlo.broadcast_in_dim", [x], ctx.aval(shape, x.aval.dtype),
                    {"broadcast_dimensions": ctx.i64s(dims)}) for x in xs]
    return ctx.op("stablehlo.concatenate", parts, ctx.avals_out[0],
                  {"dimension": ctx.i64(axis)})


def _pieces_lower(ctx, x, axis, counts, squeeze):
    """The consecutive slices of ``x`` along ``axis`` of ``counts`` elements each, one per
    result (reshaped to the result's shape when ``squeeze``)."""
    nd = x.aval.ndim
    outs, start = [], 0
    for aval, n in zip(ctx.avals_out, counts):
        lo, hi = [0] * nd, list(x.aval.shape)
        lo[axis], hi[axis] = start, start + n
        shape = list(x.aval.shape)
        shape[axis] = n
        piece = ctx.op("stablehlo.slice", [x], ctx.aval(shape, x.aval.dtype),
                       {"start_indices": ctx.i64s(lo), "limit_indices": ctx.i64s(hi),
                        "strides": ctx.i64s((1,) * nd)})
        outs.append(ctx.reshape(piece, aval.shape) if squeeze else piece)
        start += n
    return outs


def _unstack_lower(ctx, x, axis):
    return _pieces_lower(ctx, x, axis, [1] * x.aval.shape[axis], True)


def _split_lower(ctx, x, sizes, axis):
    return _pieces_lower(ctx, x, axis, [int(n) for n in sizes], False)


def _pad_lower(ctx, x, padding_value, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    return ctx.op("stablehlo.pad", [x, padding_value], ctx.avals_out[0],
                  {"edge_padding_low": ctx.i64s(lo), "edge_padding_high": ctx.i64s(hi),
                   "interior_padding": ctx.i64s(interior)})


def _rev_lower(ctx, x, dimensions):
    if not dimensions:
        return x
    return ctx.op("stablehlo.reverse", [x], x.aval, {"dimensions": ctx.i64s(dimensions)})


def _slice_lower(ctx, x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.aval.ndim
    return ctx.op("stablehlo.slice", [x], ctx.avals_out[0],
                  {"start_indices": ctx.i64s(start_indices),
                   "limit_indices": ctx.i64s(limit_indices), "strides": ctx.i64s(strides)})


def _dynamic_starts(ctx, idxs, shape):
    """Start indices as int64 scalars for dynamic_slice/dynamic_update_slice (StableHLO
    wants one index type; XLA clamps them into range, as the implementations do): an
    unsigned index is first capped at its dimension so that int64 cannot wrap it."""
    out = []
    for i, n in zip(idxs, shape):
        if _dtypes.kind(i.aval.dtype) == "u" and i.aval.dtype.itemsize >= 8:
            cap = ctx.full(min(n, np.iinfo(i.aval.dtype).max), i.aval)
            i = ctx.binary("minimum", i, cap)
        out.append(ctx.convert(i, np.int64))
    return out


def _dyn_slice_lower(ctx, x, *idxs, slice_sizes):
    return ctx.op("stablehlo.dynamic_slice", [x] + _dynamic_starts(ctx, idxs, x.aval.shape),
                  ctx.avals_out[0], {"slice_sizes": ctx.i64s(slice_sizes)})


def _dus_lower(ctx, x, update, *idxs):
    return ctx.op("stablehlo.dynamic_update_slice",
                  [x, update] + _dynamic_starts(ctx, idxs, x.aval.shape), ctx.avals_out[0])


_IOTA_NATIVE = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, _dtypes._BF16))


def _iota_lower(ctx, *, dtype, shape, dimension, sharding=None):
    dt = np.dtype(dtype)
    attrs = {"iota_dimension": ctx.i64(dimension)}
    if dt in _IOTA_NATIVE:
        return ctx.op("stablehlo.iota", [], ctx.avals_out[0], attrs)
    # complex and narrow types: counted in a standard type and converted, as the
    # implementation's arange
    wide = (np.float64 if dt == np.complex128 else np.int64 if _dtypes.kind(dt) in "iu"
            else np.float32)
    return ctx.convert(ctx.op("stablehlo.iota", [], ctx.aval(shape, wide), attrs), dt)


broadcast_in_dim_p.lowering = _bid_lower
reshape_p.lowering = _reshape_lower
transpose_p.lowering = _transpose_lower
squeeze_p.lowering = _squeeze_lower
concatenate_p.lowering = _concat_lower
stack_p.lowering = _stack_lower
unstack_p.lowering = _unstack_lower
split_p.lowering = _split_lower
pad_p.lowering = _pad_lower
rev_p.lowering = _rev_lower
slice_p.lowering = _slice_lower
dynamic_slice_p.lowering = _dyn_slice_lower
dynamic_update_slice_p.lowering = _dus_lower
iota_p.lowering = _iota_lower
copy_p.lowering = _lo.identity
stop_gradient_p.lowering = _lo.identity
