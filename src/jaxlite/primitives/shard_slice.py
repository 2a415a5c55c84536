"""``shard_slice``: each device keeps its own block of a dimension (no communication).

Layer: primitives.  The SPMD partitioner (``compiler/passes/spmd_partition.py``) uses it
where a value needs a finer layout than it has: a dimension every device along mesh axis
``axis_name`` holds whole is cut into ``axis_size`` blocks, and the device at position
``i`` along that axis keeps block ``i``.  Like a collective it is defined over a named
axis, and its batching rule (the vmap, or the shard_map mesh axis, of that name) is its
meaning; with no enclosing axis of that name it raises NameError.  It moves no bytes
between devices, so cost analysis counts it as a local slice.

It is linear.  Its transpose puts each device's cotangent block at its own position in
a zero array of the operand's shape (device-varying); where the operand was one value
shared by the devices (inside a replication-checking shard_map), the shared-value rule of
core/batching.py sums those over the devices, which gives the all-gather of the blocks.
"""
from __future__ import annotations

import numpy as np

from ..core import ad, batching
from ..core.primitive import Primitive
from ..core.trace import get_aval


def _aval(x, *, axis_name, dimension, axis_size):
    shape = list(x.shape)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"shard_slice dimension {dimension} is out of range for an "
                         f"operand of shape {tuple(x.shape)}")
    if shape[dimension] % axis_size:
        raise ValueError(f"shard_slice cannot cut dimension {dimension} of shape "
                         f"{tuple(x.shape)} into {axis_size} equal blocks for mesh axis "
                         f"{axis_name!r}")
    shape[dimension] //= axis_size
    return x.update(shape=tuple(shape))


def _impl(x, *, axis_name, dimension, axis_size):
    raise NameError(f"unbound axis name: {axis_name}. shard_slice needs an enclosing "
                    f"shard_map or vmap with axis_name={axis_name!r}.")


shard_slice_p = Primitive("shard_slice", abstract_eval=_aval, impl=_impl,
                          flops=lambda x, **k: 0, kind="collective", foldable=False)


def _block(x, dim, k, blk):
    from .shape import slice_p
    shape = tuple(get_aval(x).shape)
    start = [0] * len(shape)
    limit = list(shape)
    start[dim], limit[dim] = k * blk, (k + 1) * blk
    return slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                        strides=None)


def _batch(args, dims, *, axis_name, dimension, axis_size):
    from .collectives import bind_named, _resolving
    from .shape import reshape_p, concatenate_p
    (x,), (d,) = args, dims
    params = dict(axis_name=axis_name, axis_size=axis_size)
    axis = _resolving(axis_name, axis_size)
    if axis is None:      # another axis: per example
        if d is None:
            return bind_named(shard_slice_p, x, dimension=dimension, **params), None
        dim = dimension + (d <= dimension)
        return bind_named(shard_slice_p, x, dimension=dim, **params), d
    n = axis_size
    if d is None:
        # every example holds the whole dimension: split it into (n, block) and map the n
        s = tuple(get_aval(x).shape)
        blk = s[dimension] // n
        y = reshape_p.bind(x, new_sizes=s[:dimension] + (n, blk) + s[dimension + 1:],
                           dimensions=None)
        if axis.split is not None:      # over several processes: this one's devices
            from .collectives import _own_block
            y = _own_block(axis, y, dimension)
        return y, dimension
    # each example its own value: example k keeps block k of its own dimension
    x = batching.moveaxis(x, d, 0)
    s = tuple(get_aval(x).shape)
    dim = dimension + 1
    blk = s[dim] // n
    first = 0 if axis.split is None else axis.split.offset     # this process's first
    parts = []
    for k in range(axis.size):
        row = _block(_block(x, 0, k, 1), dim, first + k, blk)
        parts.append(row)
    return concatenate_p.bind(*parts, dimension=0), 0


shard_slice_p.batch = _batch


def _jvp(primals, tangents, **params):
    from .collectives import bind_named
    (x,), (t,) = primals, tangents
    out = bind_named(shard_slice_p, x, **params)
    return out, (None if t is None else bind_named(shard_slice_p, t, **params))


def _transpose(ct, x, *, axis_name, dimension, axis_size):
    from .collectives import lift
    from .shape import dynamic_update_slice_p
    aval = x.aval if ad.is_undefined(x) else get_aval(x)
    blk = aval.shape[dimension] // axis_size
    main = batching.find_axis(axis_name)
    # this device's start along ``dimension``: its position on the axis times the block
    split = main.payload.split
    first = 0 if split is None else split.offset
    start = batching.BatchTracer(
        batching.BatchTrace(main),
        np.arange(first, first + main.payload.size, dtype=np.int32) * blk, 0)
    starts = [start if d == dimension else np.int32(0) for d in range(len(aval.shape))]
    zeros = ad.zeros(aval)
    return [dynamic_update_slice_p.bind(zeros, lift(ct, axis_name), *starts)]


shard_slice_p.jvp = _jvp
shard_slice_p.transpose = _transpose


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# In a shard_map lowered over a mesh each partition keeps the block at its position along
# ``axis_name`` (``ctx.axis_position``: from its partition id); anywhere else the
# equation names an unbound axis and ``ctx`` refuses it.

def _lowering(ctx, x, *, axis_name, dimension, axis_size):
    out = ctx.avals_out[0]
    pos = ctx.axis_position(axis_name)
    blk = out.shape[dimension]
    zero = ctx.constant(np.int32(0), np.int32)
    start = ctx.binary("multiply", pos, ctx.constant(np.int32(blk), np.int32))
    starts = [start if d == dimension else zero for d in range(len(out.shape))]
    return ctx.op("stablehlo.dynamic_slice", [x, *starts], ctx.aval(out.shape, out.dtype),
                  {"slice_sizes": ctx.i64s(out.shape)})


shard_slice_p.lowering = _lowering
