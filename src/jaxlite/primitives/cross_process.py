"""The part of a collective that crosses processes (several processes, jaxlite.distributed).

Layer: primitives.  Over a mesh axis whose devices belong to several processes, each
process batches only its own devices along the axis (core/batching.py ``AxisSplit``); the
collective's batching rule (primitives/collectives.py) first combines this process's
devices, then binds one of these primitives on the combined NumPy buffer, which runs one
MPI call among the processes along the axis (runtime/mpi.py, checked and bounded there):

- ``cross_process_all_reduce[op, ranks]``: elementwise sum/max/min over the processes;
- ``cross_process_all_gather[axis, ranks]``: the processes' operands concatenated along
  ``axis``, in the order of ``ranks`` (the order of their blocks along the mesh axis);
- ``cross_process_reduce_scatter[axis, ranks]``: the sum, each process keeping its block
  of ``axis`` (psum_scatter);
- ``cross_process_all_to_all[axis, ranks]``: block k of ``axis`` to process k (all_to_all);
- ``cross_process_permute[pairs, block, ranks]``: each (src, dst) pair of devices in
  different processes moves its one value (ppermute).

Each has a ``where`` parameter naming the program and the Python line, for the errors of
runtime/mpi.py.  All are linear in the sense forward-mode needs (the JVP of a sum applies
it to the tangent; max/min are refused there).
Reverse mode through them is refused (NotImplementedError): taking ``grad`` OUTSIDE a
shard_map over several processes would need, for every value the devices share, to know
whether its cotangent is already complete on each process or a partial sum; take the
gradient inside the shard_map body (then psum it), or of a jitted function over sharded
arrays, where the compiler partitions the differentiated program.
"""
from __future__ import annotations

import numpy as np

from ..core.primitive import Primitive


def _same_aval(x, **params):
    return x


def _all_reduce_impl(x, *, op, ranks, where):
    from ..runtime import mpi
    return mpi.allreduce(np.asarray(x), op, ranks, where)


def _all_reduce_batch(args, dims, *, op, ranks, where):
    (x,), (d,) = args, dims
    return all_reduce_p.bind(x, op=op, ranks=ranks, where=where), d


def _all_reduce_jvp(primals, tangents, *, op, ranks, where):
    (x,), (t,) = primals, tangents
    out = all_reduce_p.bind(x, op=op, ranks=ranks, where=where)
    if t is None:
        return out, None
    if op != "sum":
        raise NotImplementedError(f"differentiating a max/min over a mesh axis that spans "
                                  f"processes ({where}) is not supported")
    return out, all_reduce_p.bind(t, op=op, ranks=ranks, where=where)


def _no_transpose(name):
    def transpose(ct, x, **params):
        raise NotImplementedError(
            f"reverse-mode differentiation through {name} ({params['where']}): grad of a "
            f"shard_map or pmap whose mesh axis spans several processes is not supported. "
            f"Take the gradient inside the shard_map body and psum it there, or jit a "
            f"function of arrays sharded over the mesh and differentiate that.")
    return transpose


all_reduce_p = Primitive("cross_process_all_reduce", abstract_eval=_same_aval,
                         impl=_all_reduce_impl, batch=_all_reduce_batch,
                         jvp=_all_reduce_jvp, foldable=False,
                         flops=lambda x, **k: x.size)
all_reduce_p.transpose = _no_transpose("an all-reduce across processes")


def _all_gather_aval(x, *, axis, ranks, where):
    shape = list(x.shape)
    shape[axis] *= len(ranks)
    return x.update(shape=tuple(shape))


def _all_gather_impl(x, *, axis, ranks, where):
    from ..runtime import mpi
    x = np.asarray(x)
    parts = mpi.allgather(np.moveaxis(x, axis, 0), ranks, where)   # (procs, n_axis, ...)
    merged = parts.reshape((-1,) + parts.shape[2:])
    return np.ascontiguousarray(np.moveaxis(merged, 0, axis))


def _along_axis_batch(prim):
    """The batching rule of a primitive whose ``axis`` names a dimension of its operand:
    applied to the whole batched operand, ``axis`` moved past the mapped dimension."""
    def rule(args, dims, *, axis, **params):
        (x,), (d,) = args, dims
        if d is not None and d <= axis:
            return prim.bind(x, axis=axis + 1, **params), d
        return prim.bind(x, axis=axis, **params), d
    return rule


def _linear_jvp(prim):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        return out, (None if t is None else prim.bind(t, **params))
    return jvp


all_gather_p = Primitive("cross_process_all_gather", abstract_eval=_all_gather_aval,
                         impl=_all_gather_impl, foldable=False, flops=lambda x, **k: 0)
all_gather_p.batch = _along_axis_batch(all_gather_p)
all_gather_p.jvp = _linear_jvp(all_gather_p)
all_gather_p.transpose = _no_transpose("an all-gather across processes")


def _scatter_aval(x, *, axis, ranks, where):
    shape = list(x.shape)
    shape[axis] //= len(ranks)
    return x.update(shape=tuple(shape))


def _scatter_impl(x, *, axis, ranks, where):
    from ..runtime import mpi
    return mpi.reduce_scatter(np.asarray(x), axis, ranks, where)


# the sum over the processes along a mesh axis, each keeping its block of ``axis``
reduce_scatter_p = Primitive("cross_process_reduce_scatter", abstract_eval=_scatter_aval,
                             impl=_scatter_impl, foldable=False,
                             flops=lambda x, **k: x.size)
reduce_scatter_p.batch = _along_axis_batch(reduce_scatter_p)
reduce_scatter_p.jvp = _linear_jvp(reduce_scatter_p)
reduce_scatter_p.transpose = _no_transpose("a reduce-scatter across processes")


def _a2a_impl(x, *, axis, ranks, where):
    from ..runtime import mpi
    return mpi.all_to_all(np.asarray(x), axis, ranks, where)


# MPI's all-to-all along ``axis``: its block k goes to the k-th process along the mesh
# axis, and the result's block k is what that process sent
all_to_all_p = Primitive("cross_process_all_to_all", abstract_eval=_same_aval,
                         impl=_a2a_impl, foldable=False, flops=lambda x, **k: 0)
all_to_all_p.batch = _along_axis_batch(all_to_all_p)
all_to_all_p.jvp = _linear_jvp(all_to_all_p)
all_to_all_p.transpose = _no_transpose("an all-to-all across processes")


def _permute_impl(x, *, pairs, block, ranks, where):
    from ..runtime import mpi
    return mpi.permute(np.asarray(x), pairs, ranks, block, where)


def _permute_batch(args, dims, **params):
    (x,), (d,) = args, dims
    from ..core.batching import moveaxis
    # the operand's leading axis is this process's devices along the mesh axis
    if d is None:
        return permute_p.bind(x, **params), None
    if d == 0:      # another vmap's examples in front: each permuted on its own
        x = moveaxis(x, 0, 1)
        return moveaxis(permute_p.bind(x, **params), 1, 0), 0
    return permute_p.bind(x, **params), d


# ppermute across processes: the operand's leading axis holds this process's ``block``
# devices along the mesh axis; each pair (src, dst) of devices moves one value
permute_p = Primitive("cross_process_permute", abstract_eval=_same_aval,
                      impl=_permute_impl, foldable=False, flops=lambda x, **k: 0)
permute_p.batch = _permute_batch
permute_p.jvp = _linear_jvp(permute_p)
permute_p.transpose = _no_transpose("a collective-permute across processes")
