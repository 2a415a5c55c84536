"""Collectives over a named mapped axis: ``psum``, ``pmax``, ``pmin`` (and, built on them,
``lax.pmean``), ``all_gather``, ``psum_scatter``, ``ppermute`` and ``all_to_all`` (and, in
``lax``, ``pshuffle``, ``pbroadcast``, ``pswapaxes``).

Layer: primitives.  Inside ``vmap(..., axis_name=name)`` a collective over ``name``
combines the values of every example of that vmap; the batching trace of that vmap
resolves it (its rule receives the ``BatchAxis`` being batched).  With no enclosing vmap of
that name, evaluating one raises JAX's NameError ("unbound axis name").  ``shard_map`` and
``pmap`` run their per-device program as nested vmaps over the mesh axes, so these rules
are also the collectives' semantics across devices.  A collective's value depends on the
examples of its axis, not on its operand alone: none is constant-folded (foldable=False).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import ad, batching
from ..core.primitive import Primitive
from ..core.trace import get_aval




def _aval(x, axes):
    return x


def _unbound(name):
    def impl(x, axes):
        raise NameError(f"unbound axis name: {axes[0]}. {name} needs an enclosing "
                        f"vmap(..., axis_name={axes[0]!r}).")
    return impl


def _collective(name, reduce_name):
    prim = Primitive(name, abstract_eval=_aval, impl=_unbound(name),
                     flops=lambda x, **k: x.size, kind="collective", foldable=False)

    def rule(args, dims, axes):
        from . import reduction, elementwise
        (x,), (d,) = args, dims
        axis = batching.current_axis()
        if axis is None or axis.name not in axes:
            # another axis: each example reduces independently over it (an operand not
            # mapped by the named vmaps is lifted into them first)
            return bind_collective(prim, x, axes), d
        if d is None:
            out = elementwise.mul_p.bind(x, _const(x, axis.global_size)) \
                if reduce_name == "sum" else x
        else:
            if axis.size == 1:          # one device along it (here): its own value
                from .shape import reshape_p
                s = get_aval(x).shape
                out = reshape_p.bind(x, new_sizes=s[:d] + s[d + 1:], dimensions=None,
                                     sharding=None)
            elif reduce_name == "sum" and axis.size <= _ADD_CHAIN and \
                    get_aval(x).dtype.kind in "fciu":
                out = _add_chain(x, d, axis.size)
            else:
                red = getattr(reduction, f"reduce_{reduce_name}_p")
                out = red.bind(x, axes=(d,), **({"out_sharding": None}
                                                if reduce_name == "sum" else {}))
            if axis.split is not None:      # then across the processes along the axis
                out = _across(axis, out, reduce_name)
        rest = tuple(a for a in axes if a != axis.name)
        if rest:
            out = bind_collective(prim, out, rest)
        return out, None

    prim.batch = rule
    return prim


# psum over at most this many devices adds their values one after another, in the
# operand's own precision, as an all-reduce does (reduce_sum would accumulate a float32
# sum over a leading axis in float64: 5x slower for 4 devices' 64 MiB, bench W10)
_ADD_CHAIN = 8


def _across(axis, x, op):
    """``x`` (this process's devices along ``axis`` already combined) combined over the
    processes along the axis: one MPI all-reduce (primitives/cross_process.py)."""
    from .cross_process import all_reduce_p
    sp = axis.split
    return all_reduce_p.bind(x, op=op, ranks=sp.ranks, where=f"over mesh axis "
                             f"{axis.name!r} in {sp.where}, {_user_line()}")


def _gather_across(axis, x, dim):
    """``x``, batched along ``dim`` over this process's devices of ``axis``, gathered
    from every process along the axis: ``dim`` grows to the whole axis."""
    from .cross_process import all_gather_p
    sp = axis.split
    return all_gather_p.bind(x, axis=dim, ranks=sp.ranks, where=f"over mesh axis "
                             f"{axis.name!r} in {sp.where}, {_user_line()}")


def _user_line() -> str:
    """``file:line`` of the innermost caller outside jaxlite (the user's code that asked
    for the collective), for the errors of collectives across processes."""
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(root):
        f = f.f_back
    if f is None:
        return "called from jaxlite"
    return f"called at {f.f_code.co_filename}:{f.f_lineno}"


def _own_block(axis, x, dim):
    """This process's devices' part of ``x``'s ``dim``, which runs over the whole axis."""
    from .shape import slice_p
    sp = axis.split
    shape = get_aval(x).shape
    start = tuple(sp.offset if k == dim else 0 for k in range(len(shape)))
    limit = tuple(sp.offset + axis.size if k == dim else n for k, n in enumerate(shape))
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=None)


def _add_chain(x, d: int, n: int):
    """``x`` summed over its axis ``d`` (of size ``n``) as ``x[0] + x[1] + ...``."""
    from .elementwise import add_p
    from .shape import reshape_p, slice_p
    shape = get_aval(x).shape
    out_shape = shape[:d] + shape[d + 1:]

    def piece(i):
        start = tuple(i if k == d else 0 for k in range(len(shape)))
        limit = tuple(i + 1 if k == d else m for k, m in enumerate(shape))
        v = slice_p.bind(x, start_indices=start, limit_indices=limit, strides=None)
        return reshape_p.bind(v, new_sizes=out_shape, dimensions=None, sharding=None)
    out = piece(0)
    for i in range(1, n):
        out = add_p.bind(out, piece(i))
    if n > 1 and get_aval(x).dtype.kind in "fc":
        # as XLA's all-reduce, whose sum starts from +0.0: -0.0 from every device sums to
        # +0.0 (checked against JAX 0.10.2; over one device the value stays as it is)
        out = add_p.bind(out, _const(out, 0.0))
    return out


class CollectiveOp(NamedTuple):
    """One communication of a program over a mesh: ``kind`` ("all-reduce add",
    "all-gather", ...), the mesh ``axes``, the local operand ``shape`` and ``dtype``,
    ``bytes`` (of the buffer each device contributes) and ``where`` (the equation it
    serves, or the shard_map collective it is).  Made by the SPMD partitioner, and by
    ``note_manual`` for the collectives a shard_map body calls."""
    kind: str
    axes: tuple
    shape: tuple
    dtype: str
    bytes: int
    where: str


_KINDS = {"psum": "all-reduce add", "pmax": "all-reduce max", "pmin": "all-reduce min",
          "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
          "ppermute": "collective-permute", "all_to_all": "all-to-all"}


def note_manual(prim, name, params, vals, dims) -> None:
    """Records collective ``prim``, which the vmap level of axis ``name`` is resolving on
    operands ``vals`` (batched along ``dims``), in the program being staged (the innermost
    jit trace's builder, ``collectives``) when ``name`` is a Manual axis of the current
    abstract mesh (a shard_map body) the collective is over: its kind, one device's
    operand and the bytes it contributes, as the partitioner records its own (so
    ``cost_analysis`` and ``as_text`` of a jitted shard_map count them).  Recorded where
    it runs, so a collective traced only for differentiation and transposed away is not.
    A collective over a plain vmap's ``axis_name`` moves nothing between devices."""
    from ..core.staging import JaxprTrace
    from ..core.trace import get_aval, trace_stack
    from ..sharding import get_abstract_mesh
    over = params.get("axes", params.get("axis_name"))
    over = over if isinstance(over, tuple) else (over,)
    if name not in over or name not in get_abstract_mesh().manual_axes or not vals:
        return
    for m in reversed(trace_stack()):
        if m.trace_type is JaxprTrace:
            a, d = get_aval(vals[0]), dims[0]
            shape = a.shape if d is None else a.shape[:d] + a.shape[d + 1:]
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(a.dtype).itemsize
            m.payload.collectives.append(CollectiveOp(
                _KINDS.get(prim.name, prim.name), (name,), tuple(shape),
                str(np.dtype(a.dtype)), nbytes, f"{prim.name} in a shard_map body"))
            return


def bind_collective(prim, x, axes):
    """Binds ``prim`` on ``x`` over the named ``axes``: ``x`` is first lifted into the
    innermost of those vmaps (unmapped), so that a value every example shares (a constant)
    still reaches the batching rule that resolves the axis."""
    from ..core.trace import Tracer
    mains = [batching.find_axis(a) for a in axes]
    main = max(mains, key=lambda m: m.level)
    if batching.manual_tracing.depth:
        return prim.bind(x, axes=tuple(axes))   # a per-device program's equation
    if not (isinstance(x, Tracer) and x._trace.main.level >= main.level):
        x = batching.BatchTracer(batching.BatchTrace(main), x, None)
    return prim.bind(x, axes=tuple(axes))


def _const(x, v):
    """``v`` typed like ``x`` (weakly when ``x`` is weak, so psum(1) stays weak)."""
    import numpy as np
    from .elementwise import convert_element_type_p
    aval = get_aval(x)
    return convert_element_type_p.bind(np.array(v, aval.dtype), new_dtype=aval.dtype,
                                       weak_type=aval.weak_type)


psum_p = _collective("psum", "sum")
pmax_p = _collective("pmax", "max")
pmin_p = _collective("pmin", "min")

# psum is linear (its JVP and transpose are declared with the other linear collectives
# below); the transpose sums the cotangents over the same axis


def _chooser_jvp(prim):
    def rule(primals, tangents, axes):
        from .elementwise import convert_element_type_p, div_p, eq_p, mul_p
        (x,), (t,) = primals, tangents
        out = bind_collective(prim, x, axes)
        if t is None:
            return out, None
        hit = convert_element_type_p.bind(eq_p.bind(x, out), new_dtype=get_aval(t).dtype,
                                          weak_type=False)
        num = bind_collective(psum_p, mul_p.bind(t, hit), axes)
        return out, div_p.bind(num, bind_collective(psum_p, hit, axes))
    prim.jvp = rule


_chooser_jvp(pmax_p)
_chooser_jvp(pmin_p)


# ---- gathering, scattering and permuting collectives ------------------------------------
#
# Each of these names ONE axis (``axis_name``, a single name); ``lax`` splits a tuple of
# names into one primitive per name.  The batching rule of the vmap named ``axis_name``
# resolves the collective into ordinary array operations on its mapped dimension (what
# every example would receive); any other vmap applies the collective per example, with
# its dimension parameters moved past the mapped dimension.

def lift(x, name):
    """``x`` as a value of the innermost vmap named ``name`` (unmapped there when it is
    not already at that vmap's level or above), so that binding a collective on it reaches
    the batching rule that resolves ``name`` (NameError when no vmap has that name)."""
    from ..core.trace import Tracer
    main = batching.find_axis(name)
    if batching.manual_tracing.depth:
        return x        # a per-device program: the collective is an equation of it
    if not (isinstance(x, Tracer) and x._trace.main.level >= main.level):
        x = batching.BatchTracer(batching.BatchTrace(main), x, None)
    return x


def bind_named(prim, x, **params):
    """Binds the one-name collective ``prim`` on ``x`` after lifting ``x`` into the vmap
    named ``params['axis_name']``."""
    return prim.bind(lift(x, params["axis_name"]), **params)


def _resolving(axis_name, axis_size):
    """The BatchAxis whose rule is running when it is the one named ``axis_name`` (the
    collective resolves there), else None (the collective applies per example)."""
    axis = batching.current_axis()
    if axis is None or axis.name != axis_name:
        return None
    if axis.global_size != axis_size:
        raise ValueError(f"collective over axis {axis_name!r} was built for an axis of "
                         f"size {axis_size}, but that vmap has size {axis.global_size}")
    return axis


def _one_name_impl(name):
    def impl(x, *, axis_name, **params):
        raise NameError(f"unbound axis name: {axis_name}. {name} needs an enclosing "
                        f"vmap(..., axis_name={axis_name!r}).")
    return impl


def _merge(x, dim):
    """``x`` with dimensions ``dim`` and ``dim + 1`` merged into one (row-major)."""
    from .shape import reshape_p
    s = tuple(get_aval(x).shape)
    return reshape_p.bind(x, new_sizes=s[:dim] + (s[dim] * s[dim + 1],) + s[dim + 2:],
                          dimensions=None)


def _split(x, dim, major):
    """``x`` with dimension ``dim`` split into ``(major, size // major)`` (row-major)."""
    from .shape import reshape_p
    s = tuple(get_aval(x).shape)
    return reshape_p.bind(x, new_sizes=s[:dim] + (major, s[dim] // major) + s[dim + 1:],
                          dimensions=None)


def _insert_broadcast(x, dim, size):
    """``x`` (unmapped) with a new dimension of ``size`` at ``dim``, every slice ``x``."""
    from .shape import broadcast_in_dim_p
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(dim, size)
    return broadcast_in_dim_p.bind(
        x, shape=tuple(shape),
        broadcast_dimensions=tuple(i for i in range(len(shape)) if i != dim))


# all_gather: every example receives the operands of all examples, stacked (or, tiled,
# concatenated) along ``all_gather_dimension`` in the order of the axis index.

def _all_gather_aval(x, *, axis_name, all_gather_dimension, axis_size, tiled):
    shape = list(x.shape)
    nd = len(shape) if tiled else len(shape) + 1
    if not 0 <= all_gather_dimension < nd:
        raise ValueError(f"all_gather axis {all_gather_dimension} is out of bounds for "
                         f"array of dimension {nd}")
    if tiled:
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return x.update(shape=tuple(shape))


all_gather_p = Primitive("all_gather", abstract_eval=_all_gather_aval,
                         impl=_one_name_impl("all_gather"), flops=lambda x, **k: 0,
                         kind="collective", foldable=False)


def _all_gather_batch(args, dims, *, axis_name, all_gather_dimension, axis_size, tiled):
    (x,), (d,) = args, dims
    dim = all_gather_dimension
    params = dict(axis_name=axis_name, axis_size=axis_size, tiled=tiled)
    axis = _resolving(axis_name, axis_size)
    if axis is None:
        if d is None:
            return bind_named(all_gather_p, x, all_gather_dimension=dim, **params), None
        if d <= dim:
            return bind_named(all_gather_p, x, all_gather_dimension=dim + 1, **params), d
        return (bind_named(all_gather_p, x, all_gather_dimension=dim, **params),
                d if tiled else d + 1)
    # the named axis: the stacked examples, their axis moved to where they are gathered
    y = _insert_broadcast(x, dim, axis_size) if d is None else batching.moveaxis(x, d, dim)
    if d is not None and axis.split is not None:
        y = _gather_across(axis, y, dim)
    if tiled:
        y = _merge(y, dim)
    return y, None


all_gather_p.batch = _all_gather_batch


# psum_scatter: the sum over the axis, of which example k keeps slice k (tiled: chunk k)
# of ``scatter_dimension``.

def _psum_scatter_aval(x, *, axis_name, scatter_dimension, axis_size, tiled):
    from .. import dtypes as _dt
    if x.dtype == np.bool_ or not (_dt.is_inexact(x.dtype) or
                                   np.issubdtype(x.dtype, np.integer)):
        raise TypeError(f"psum_scatter does not accept dtype {x.dtype}. Accepted dtypes "
                        f"are subtypes of number.")
    shape = list(x.shape)
    if not 0 <= scatter_dimension < len(shape):
        raise IndexError(f"psum_scatter scatter_dimension {scatter_dimension} is out of "
                         f"range for an operand of shape {tuple(x.shape)}")
    n = shape[scatter_dimension]
    if tiled:
        if n % axis_size:
            raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} "
                             f"must be divisible by shard_count {axis_size}")
        shape[scatter_dimension] = n // axis_size
    else:
        if n != axis_size:
            raise ValueError(f"reduce_scatter operand scatter dimension size {n} must "
                             f"match shard count {axis_size}")
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


# named "reduce_scatter" as JAX's (what make_jaxpr prints)
psum_scatter_p = Primitive("reduce_scatter", abstract_eval=_psum_scatter_aval,
                           impl=_one_name_impl("psum_scatter"),
                           flops=lambda x, **k: x.size, kind="collective", foldable=False)


def _psum_scatter_batch(args, dims, *, axis_name, scatter_dimension, axis_size, tiled):
    from . import reduction
    from .elementwise import mul_p
    (x,), (d,) = args, dims
    sd = scatter_dimension
    params = dict(axis_name=axis_name, axis_size=axis_size, tiled=tiled)
    axis = _resolving(axis_name, axis_size)
    if axis is None:
        if d is None:
            return bind_named(psum_scatter_p, x, scatter_dimension=sd, **params), None
        if d <= sd:
            return bind_named(psum_scatter_p, x, scatter_dimension=sd + 1, **params), d
        return (bind_named(psum_scatter_p, x, scatter_dimension=sd, **params),
                d if tiled else d - 1)
    _psum_scatter_aval(get_aval(x) if d is None else _unmapped_aval(x, d),
                       scatter_dimension=sd, **params)
    if d is None:
        y = mul_p.bind(x, _const(x, axis_size))
    else:
        y = reduction.reduce_sum_p.bind(x, axes=(d,), out_sharding=None)
        if axis.split is not None:
            # summed over the processes, each keeping its devices' part: one MPI
            # reduce-scatter, then this process's devices' parts as the mapped axis
            from .cross_process import reduce_scatter_p
            sp = axis.split
            y = reduce_scatter_p.bind(y, axis=sd, ranks=sp.ranks, where=f"over mesh axis "
                                      f"{axis.name!r} in {sp.where}, {_user_line()}")
            return (_split(y, sd, axis.size) if tiled else y), sd
    if tiled:
        y = _split(y, sd, axis_size)
    if axis.split is not None:      # each device keeps its part: here, this process's
        y = _own_block(axis, y, sd)
    return y, sd


psum_scatter_p.batch = _psum_scatter_batch


def _unmapped_aval(x, d):
    aval = get_aval(x)
    return aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])


# ppermute: example ``dst`` receives the operand of example ``src`` for each pair of
# ``perm``; an example that receives nothing gets zeros.

def _ppermute_aval(x, *, axis_name, perm, axis_size):
    return x


ppermute_p = Primitive("ppermute", abstract_eval=_ppermute_aval,
                       impl=_one_name_impl("ppermute"), flops=lambda x, **k: 0,
                       kind="collective", foldable=False)


def _ppermute_batch(args, dims, *, axis_name, perm, axis_size):
    from .. import numpy as jnp
    from .elementwise import select_n_p
    (x,), (d,) = args, dims
    params = dict(axis_name=axis_name, perm=perm, axis_size=axis_size)
    axis = _resolving(axis_name, axis_size)
    if axis is None:
        if d is None:
            return bind_named(ppermute_p, x, **params), None
        return bind_named(ppermute_p, x, **params), d
    src_of = {dst: src for src, dst in perm}
    full = len(src_of) == axis_size
    if d is None:
        if full:
            return x, None          # every example receives the same value
        x, d = batching.broadcast_front(x, axis_size), 0
    elif axis.split is not None:
        # over several processes: each pair of devices in different processes moves
        # its one value (MPI sends and receives), within a process it is copied
        from .cross_process import permute_p
        sp = axis.split
        pairs = tuple((src, dst) for src, dst in perm)
        return permute_p.bind(batching.moveaxis(x, d, 0), pairs=pairs, block=axis.size,
                              ranks=sp.ranks, where=f"over mesh axis {axis.name!r} in "
                              f"{sp.where}, {_user_line()}"), 0
    if axis.split is not None:
        out, d = _permuted(x, d, src_of, full, axis_size)
        return _own_block(axis, out, d), d
    return _permuted(x, d, src_of, full, axis_size)


def _permuted(x, d, src_of, full, axis_size):
    """``x`` batched along ``d`` over the whole axis, each example replaced by the one its
    source in ``src_of`` sends (zeros where none does)."""
    from .. import numpy as jnp
    from .elementwise import select_n_p
    idx = np.array([src_of.get(k, 0) for k in range(axis_size)], np.int32)
    if not np.array_equal(idx, np.arange(axis_size)):
        x = jnp.take(x, idx, axis=d, mode="clip")     # in bounds: no fill needed
    if not full:
        shape = tuple(get_aval(x).shape)
        from .shape import broadcast_in_dim_p
        got = np.array([k in src_of for k in range(axis_size)])
        mask = broadcast_in_dim_p.bind(got, shape=shape, broadcast_dimensions=(d,))
        x = select_n_p.bind(mask, ad.zeros(get_aval(x)), x)
    return x, d


ppermute_p.batch = _ppermute_batch


# all_to_all (the primitive's form is tiled): each example splits ``split_axis`` into
# ``axis_size`` chunks and sends chunk k to example k, which concatenates the chunks it
# receives, in the order of their senders, along ``concat_axis``.

def _all_to_all_aval(x, *, axis_name, split_axis, concat_axis, axis_size):
    shape = list(x.shape)
    for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
        if not 0 <= a < len(shape):
            raise ValueError(f"all_to_all {what} {a} is out of bounds for array of "
                             f"dimension {len(shape)}")
    if shape[split_axis] % axis_size:
        raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has "
                         f"to be divisible by the size of the named axis {axis_name} "
                         f"({axis_size})")
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return x.update(shape=tuple(shape))


all_to_all_p = Primitive("all_to_all", abstract_eval=_all_to_all_aval,
                         impl=_one_name_impl("all_to_all"), flops=lambda x, **k: 0,
                         kind="collective", foldable=False)


def _all_to_all_batch(args, dims, *, axis_name, split_axis, concat_axis, axis_size):
    (x,), (d,) = args, dims
    params = dict(axis_name=axis_name, axis_size=axis_size)
    axis = _resolving(axis_name, axis_size)
    if axis is None:
        if d is None:
            return bind_named(all_to_all_p, x, split_axis=split_axis,
                              concat_axis=concat_axis, **params), None
        return bind_named(all_to_all_p, x, split_axis=split_axis + (d <= split_axis),
                                 concat_axis=concat_axis + (d <= concat_axis),
                                 **params), d
    n = axis_size
    if axis.split is not None and d is not None:
        return _all_to_all_across(axis, batching.moveaxis(x, d, 0), split_axis,
                                  concat_axis, n), 0
    out = _all_to_all_stacked(batching.to_front(x, d, n), axis_name, split_axis,
                              concat_axis, n)
    if axis.split is not None:      # every sender the same: this process's receivers
        out = _own_block(axis, out, 0)
    return out, 0


def _all_to_all_stacked(x, axis_name, split_axis, concat_axis, n):
    """all_to_all of ``x``, which holds every one of the axis's ``n`` senders in front:
    the ``n`` receivers' values, in front."""
    from .shape import reshape_p, transpose_p
    s = tuple(get_aval(x).shape[1:])                # (sender e, *per-example shape)
    out_aval = _all_to_all_aval(get_aval(x).update(shape=s), axis_name=axis_name,
                                split_axis=split_axis, concat_axis=concat_axis,
                                axis_size=n)
    # split the split axis into (receiver k, chunk c); labels name the dimensions
    x = reshape_p.bind(x, new_sizes=(n,) + s[:split_axis] + (n, s[split_axis] // n) +
                       s[split_axis + 1:], dimensions=None)
    labels = ["e"] + [("s", i) for i in range(split_axis)] + ["k", "c"] + \
        [("s", i) for i in range(split_axis + 1, len(s))]
    target = ["k"]
    for i in range(len(s)):
        part = ["c"] if i == split_axis else [("s", i)]
        target += (["e"] + part) if i == concat_axis else part
    x = transpose_p.bind(x, permutation=tuple(labels.index(t) for t in target))
    return reshape_p.bind(x, new_sizes=(n,) + tuple(out_aval.shape), dimensions=None)


all_to_all_p.batch = _all_to_all_batch


def _all_to_all_across(axis, x, split_axis, concat_axis, n):
    """all_to_all over a mesh axis spanning processes: ``x`` holds this process's
    senders in front (l of them); each splits ``split_axis`` into ``n`` chunks, chunk k
    for receiver k.  The chunks for each process's receivers go there in one MPI
    all-to-all; each receiver concatenates what it gets, in sender order, along
    ``concat_axis``.  Returns this process's receivers in front."""
    from .cross_process import all_to_all_p
    from .shape import reshape_p, transpose_p
    sp = axis.split
    l, p = axis.size, len(sp.ranks)
    s = tuple(get_aval(x).shape[1:])
    out_aval = _all_to_all_aval(get_aval(x).update(shape=s), axis_name=axis.name,
                                split_axis=split_axis, concat_axis=concat_axis,
                                axis_size=n)
    # (sender e, s before, receiver k, chunk c, s after)
    x = reshape_p.bind(x, new_sizes=(l,) + s[:split_axis] + (n, s[split_axis] // n) +
                       s[split_axis + 1:], dimensions=None)
    rest = [("c" if i == split_axis else ("s", i)) for i in range(len(s))]
    labels = ["e"] + [("s", i) for i in range(split_axis)] + ["k", "c"] + \
        [("s", i) for i in range(split_axis + 1, len(s))]
    order = ["k", "e"] + rest
    x = transpose_p.bind(x, permutation=tuple(labels.index(t) for t in order))
    # the receivers by process: (process q, its receiver j, e, rest); one all-to-all
    rest_shape = tuple(get_aval(x).shape[2:])
    x = reshape_p.bind(x, new_sizes=(p, l, l) + rest_shape, dimensions=None)
    x = all_to_all_p.bind(x, axis=0, ranks=sp.ranks, where=f"over mesh axis "
                          f"{axis.name!r} in {sp.where}, {_user_line()}")
    # now (sending process q, my receiver j, its sender e): senders in global order
    x = transpose_p.bind(x, permutation=(1, 0, 2) + tuple(range(3, 3 + len(rest_shape))))
    x = reshape_p.bind(x, new_sizes=(l, n) + rest_shape, dimensions=None)
    have = ["k", "e"] + rest
    target = ["k"]
    for i in range(len(s)):
        part = ["c"] if i == split_axis else [("s", i)]
        target += (["e"] + part) if i == concat_axis else part
    x = transpose_p.bind(x, permutation=tuple(have.index(t) for t in target))
    return reshape_p.bind(x, new_sizes=(l,) + tuple(out_aval.shape), dimensions=None)


# all four are linear; their transposes
def _all_gather_transpose(ct, x, *, axis_name, all_gather_dimension, axis_size, tiled):
    return [bind_named(psum_scatter_p, ct, axis_name=axis_name,
                       scatter_dimension=all_gather_dimension, axis_size=axis_size,
                       tiled=tiled)]


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension, axis_size, tiled):
    return [bind_named(all_gather_p, ct, axis_name=axis_name,
                       all_gather_dimension=scatter_dimension, axis_size=axis_size,
                       tiled=tiled)]


def _ppermute_transpose(ct, x, *, axis_name, perm, axis_size):
    inverse = tuple((dst, src) for src, dst in perm)
    return [bind_named(ppermute_p, ct, axis_name=axis_name, perm=inverse,
                       axis_size=axis_size)]


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis, axis_size):
    return [bind_named(all_to_all_p, ct, axis_name=axis_name, split_axis=concat_axis,
                       concat_axis=split_axis, axis_size=axis_size)]


def _linear(prim, transpose, bind):
    """``prim`` is linear: its JVP applies it to the tangent.  Both binds lift their
    operand into the named vmap (``bind``), since under nested derivatives a primal or a
    tangent can be a constant that no vmap has seen."""
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = bind(prim, x, **params)
        return out, (None if t is None else bind(prim, t, **params))
    prim.jvp = jvp
    prim.transpose = transpose


for _p, _t in [(all_gather_p, _all_gather_transpose), (psum_scatter_p, _psum_scatter_transpose),
               (ppermute_p, _ppermute_transpose), (all_to_all_p, _all_to_all_transpose)]:
    _linear(_p, _t, bind_named)
_linear(psum_p, lambda ct, x, axes: [bind_collective(psum_p, ct, axes)],
        lambda prim, x, axes: bind_collective(prim, x, axes))


# Inside a shard_map that checks replication (check_vma; its mesh axes are BatchAxis with
# ``spmd`` set), psum differentiates as JAX's does there, where every value is typed
# varying or invariant along each mesh axis.  psum makes a varying operand invariant; its
# transpose hands the (invariant) cotangent to every device as it is, not summed again:
# d/dx_i of psum(x) is 1.  A cotangent that still varies along the axis (the result was
# used in a varying computation) is summed first, as JAX's implicit broadcast of the
# result transposes.  An operand that is already invariant is n copies of one value, so
# its psum is n * x, and so is its tangent.  Plain vmap axes keep the rules above.

def _spmd_axes(axes) -> tuple:
    if not batching.spmd_levels:
        return ()
    return tuple(a for a in axes if batching.find_axis(a).payload.spmd)


def _psum_jvp(primals, tangents, axes):
    (x,), (t,) = primals, tangents
    out = bind_collective(psum_p, x, axes)
    if t is None:
        return out, None
    shared = [a for a in _spmd_axes(axes)
              if not batching.batched_along(x, a) and not batching.batched_along(t, a)]
    rest = tuple(a for a in axes if a not in shared)
    if shared:
        from .elementwise import mul_p
        n = 1
        for a in shared:
            n *= batching.find_axis(a).payload.global_size
        t = mul_p.bind(t, _const(t, n))
    return out, (bind_collective(psum_p, t, rest) if rest else t)


def _psum_transpose(ct, x, axes):
    spmd = _spmd_axes(axes)
    over = tuple(a for a in axes if a not in spmd or batching.batched_along(ct, a))
    out = bind_collective(psum_p, ct, over) if over else ct
    for a in spmd:      # the operand varied along ``a``: so does its cotangent
        out = _pvary(out, a)
    return [out]


def _pvary(x, name):
    """``x`` as a value that varies along the mesh axis ``name`` (JAX's pvary: the same
    numbers, held once per device), so that a shared value it reaches in the backward pass
    sums it over the devices (core/batching.py ``spmd_cotangent``)."""
    import numpy as np
    from .elementwise import add_p
    from .shape import broadcast_in_dim_p
    if batching.batched_along(x, name):
        return x
    main = batching.find_axis(name)
    aval = get_aval(x)
    zero = batching.BatchTracer(batching.BatchTrace(main),
                                np.zeros(main.payload.size, aval.dtype), 0)
    zero = broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=())
    return add_p.bind(x, zero)


psum_p.jvp = _psum_jvp
psum_p.transpose = _psum_transpose


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# In a shard_map lowered over a mesh (its body manual: each partition runs it on its
# shards, XLA partitions nothing) each collective is XLA's own, over the partitions
# sharing their positions along the other mesh axes (``ctx.replica_groups``), with a
# channel and global device ids (partition numbers).  Anywhere else an equation of one
# names an unbound axis: ``ctx`` refuses it.

def _manual_attrs(ctx, axes) -> dict:
    return {"replica_groups": ctx.replica_groups(axes),
            "channel_handle": ctx.channel_handle(), "use_global_device_ids": "unit"}


def _reducer(ctx, kind, dt):
    if np.dtype(dt) == np.bool_:
        op = {"sum": "or", "max": "or", "min": "and"}[kind]
    else:
        op = {"sum": "add", "max": "maximum", "min": "minimum"}[kind]
    return ctx.scalar_region([dt], lambda a, b: ctx.binary(op, a, b))


def _all_reduce_lowering(kind):
    def rule(ctx, x, *, axes):
        return ctx.op("stablehlo.all_reduce", [x], x.aval, _manual_attrs(ctx, axes),
                      regions=[_reducer(ctx, kind, x.aval.dtype)])
    return rule


psum_p.lowering = _all_reduce_lowering("sum")
pmax_p.lowering = _all_reduce_lowering("max")
pmin_p.lowering = _all_reduce_lowering("min")


def _all_gather_lowering(ctx, x, *, axis_name, all_gather_dimension, axis_size, tiled):
    dim = all_gather_dimension
    if not tiled:       # a new dimension of one, gathered into axis_size
        shape = list(x.aval.shape)
        shape.insert(dim, 1)
        x = ctx.reshape(x, shape)
    out = ctx.avals_out[0]
    attrs = {"all_gather_dim": ctx.i64(dim), **_manual_attrs(ctx, axis_name)}
    return ctx.op("stablehlo.all_gather", [x], ctx.aval(out.shape, out.dtype), attrs)


all_gather_p.lowering = _all_gather_lowering


def _reduce_scatter_lowering(ctx, x, *, axis_name, scatter_dimension, axis_size, tiled):
    out = ctx.avals_out[0]
    shape = list(x.aval.shape)
    shape[scatter_dimension] //= axis_size
    attrs = {"scatter_dimension": ctx.i64(scatter_dimension),
             **_manual_attrs(ctx, axis_name)}
    r = ctx.op("stablehlo.reduce_scatter", [x], ctx.aval(shape, x.aval.dtype), attrs,
               regions=[_reducer(ctx, "sum", x.aval.dtype)])
    return r if tiled else ctx.reshape(r, out.shape)


psum_scatter_p.lowering = _reduce_scatter_lowering


def _ppermute_lowering(ctx, x, *, axis_name, perm, axis_size):
    pairs = [[g[i], g[j]] for g in ctx.groups(axis_name) for i, j in perm]
    if not pairs:       # nothing is sent: every partition receives zeros
        return ctx.full(0, x.aval)
    return ctx.op("stablehlo.collective_permute", [x], x.aval,
                  {"source_target_pairs": ctx.dense_i64_2d(pairs),
                   "channel_handle": ctx.channel_handle()})


ppermute_p.lowering = _ppermute_lowering


def _all_to_all_lowering(ctx, x, *, axis_name, split_axis, concat_axis, axis_size):
    out = ctx.avals_out[0]
    attrs = {"split_dimension": ctx.i64(split_axis),
             "concat_dimension": ctx.i64(concat_axis), "split_count": ctx.i64(axis_size),
             "replica_groups": ctx.replica_groups(axis_name),
             "channel_handle": ctx.channel_handle()}
    return ctx.op("stablehlo.all_to_all", [x], ctx.aval(out.shape, out.dtype), attrs)


all_to_all_p.lowering = _all_to_all_lowering
