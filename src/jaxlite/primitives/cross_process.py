"""The part of a collective that crosses processes (several processes, jaxlite.distributed).

Layer: primitives.  Over a mesh axis whose devices belong to several processes, each
process batches only its own devices along the axis (core/batching.py ``AxisSplit``); the
collective's batching rule (primitives/collectives.py) first combines this process's
devices, then binds one of these primitives on the combined NumPy buffer, which runs one
MPI call among the processes along the axis (runtime/mpi.py, checked and bounded there):

- ``cross_process_all_reduce[op, ranks]``: elementwise sum/max/min over the processes;
- ``cross_process_all_gather[axis, ranks]``: the processes' operands concatenated along
  ``axis``, in the order of ``ranks`` (the order of their blocks along the mesh axis).

Both are linear in the sense forward-mode needs (their JVP applies them to the tangent).
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


def _all_gather_batch(args, dims, *, axis, ranks, where):
    (x,), (d,) = args, dims
    if d is not None and d <= axis:
        return all_gather_p.bind(x, axis=axis + 1, ranks=ranks, where=where), d
    return all_gather_p.bind(x, axis=axis, ranks=ranks, where=where), d


def _all_gather_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = all_gather_p.bind(x, **params)
    return out, (None if t is None else all_gather_p.bind(t, **params))


all_gather_p = Primitive("cross_process_all_gather", abstract_eval=_all_gather_aval,
                         impl=_all_gather_impl, batch=_all_gather_batch,
                         jvp=_all_gather_jvp, foldable=False, flops=lambda x, **k: 0)
all_gather_p.transpose = _no_transpose("an all-gather across processes")
