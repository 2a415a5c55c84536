"""``shard_map`` and ``pmap``: one per-device program over the devices of a mesh.

Layer: transforms.  ``shard_map(f, mesh=, in_specs=, out_specs=)`` runs ``f`` once per
device on that device's shard of each argument; collectives inside (``lax.psum`` over a
mesh axis name, ``all_gather``, ``ppermute`` ...) combine the devices along that axis.

How it runs: the per-device program is executed for all devices of the mesh at once, as
one program batched over the mesh axes (nested ``vmap`` with ``axis_name`` set to each
manual mesh axis, outermost first).  Each argument is viewed as a stack of its shards
(reshape and transpose of the global value: the stacked axes come first, in mesh order),
and each collective is resolved by its batching rule into ordinary array operations over
the stacked axis: that batching rule *is* the collective's semantics across devices.  The
results are unstacked the same way and placed on the mesh's devices by ``out_specs``.
So ``shard_map`` is deterministic, cannot deadlock whatever the number of devices, and is
differentiable and batchable exactly as the batched program is.  Under ``jit``, ``grad``
or ``vmap`` the expansion is traced inline.

``pmap(f, axis_name)`` is ``shard_map`` over a one-axis mesh of the first ``n`` devices,
``f`` seeing each device's slice without the mapped axis.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..core.array import ArrayImpl
from ..core.sharded import ShardedArray, from_global
from ..core.trace import Tracer
from ..tree_util import tree_flatten, tree_unflatten


class _InferType:
    def __repr__(self):
        return "Infer"


Infer = _InferType()


def _entry_axes(entry) -> tuple:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _spec_axes(spec, ndim: int, what: str) -> tuple:
    """The spec as one tuple of mesh axis names per dimension; ValueError for a spec
    longer than the rank."""
    entries = tuple(spec)
    if len(entries) > ndim:
        raise ValueError(f"shard_map {what} has spec {spec} of length {len(entries)}, but "
                         f"the array has rank {ndim}: a spec may have at most one entry per "
                         f"dimension.")
    return tuple(_entry_axes(e) for e in entries) + ((),) * (ndim - len(entries))


def _prefix_leaves(specs, tree, what: str) -> list:
    """One spec per leaf of ``tree``: ``specs`` is a pytree prefix of it (a spec at a node
    applies to every leaf below).  ValueError naming ``what`` when it is no prefix."""
    from ..sharding import PartitionSpec
    from ..tree_util import tree_structure
    leaves, treedef = tree_flatten(tree)
    if isinstance(specs, PartitionSpec) or specs is None:
        return [specs] * len(leaves)
    # walk specs and tree together: a PartitionSpec (or None) covers a whole subtree
    out: list = []

    def walk(s, t):
        if isinstance(s, PartitionSpec) or s is None:
            out.extend([s] * len(tree_flatten(t)[0]))
            return
        if isinstance(s, (tuple, list)) and isinstance(t, (tuple, list)) and \
                len(s) == len(t):
            for a, b in zip(s, t):
                walk(a, b)
            return
        if isinstance(s, dict) and isinstance(t, dict) and set(s) == set(t):
            for k in t:
                walk(s[k], t[k])
            return
        raise ValueError(f"shard_map {what} must be a pytree prefix of the arguments: got "
                         f"{specs!r} for arguments of structure {tree_structure(tree)}")
    walk(specs, tree)
    return out


def _check_spec(spec_axes, shape, mesh, manual, what: str, argname: str):
    sizes = mesh.shape
    seen = set()
    for d, axes in enumerate(spec_axes):
        n = 1
        for a in axes:
            if a not in sizes:
                raise ValueError(f"shard_map {what} for {argname} names the mesh axis {a!r}, "
                                 f"which is not in the mesh {tuple(mesh.axis_names)}.")
            if a not in manual:
                raise ValueError(f"shard_map {what} for {argname} names the mesh axis {a!r}, "
                                 f"which is not in axis_names {sorted(manual)}.")
            if a in seen:
                raise ValueError(f"shard_map {what} for {argname} uses the mesh axis {a!r} "
                                 f"twice.")
            seen.add(a)
            n *= sizes[a]
        if shape is not None and shape[d] % n:
            raise ValueError(
                f"shard_map applied to the function with {what} {argname} of shape "
                f"{tuple(shape)}: dimension {d} of size {shape[d]} is not divisible by "
                f"{n}, the total size of the mesh axes {axes} it is sharded over.")


def _to_stack(x, spec_axes, mesh_axes, sizes):
    """The global value ``x`` viewed as its shards stacked in front, one axis per mesh
    axis the spec names (in mesh order), then the local shape."""
    shape = _aval_of(x).shape
    if not any(spec_axes):
        return x
    split_shape, labels = [], []
    for d, axes in enumerate(spec_axes):
        n = 1
        for a in axes:
            split_shape.append(sizes[a])
            labels.append(a)
            n *= sizes[a]
        split_shape.append(shape[d] // n)
        labels.append(d)
    y = _reshape(x, tuple(split_shape))
    front = [labels.index(a) for a in mesh_axes if a in labels]
    rest = [i for i, lab in enumerate(labels) if not isinstance(lab, str)]
    perm = tuple(front + rest)
    return y if perm == tuple(range(len(perm))) else _transpose(y, perm)


def _from_stack(y, spec_axes, mesh_axes, sizes, local_ndim):
    """Inverse of ``_to_stack``: ``y`` has one leading axis per mesh axis the spec names (in
    mesh order), then the local shape; returns the global value."""
    if not any(spec_axes):
        return y
    named = [a for a in mesh_axes if any(a in axes for axes in spec_axes)]
    local = _aval_of(y).shape[len(named):]
    order, split_shape = [], []
    for d, axes in enumerate(spec_axes):
        for a in axes:
            order.append(named.index(a))
            split_shape.append(sizes[a])
        order.append(len(named) + d)
        split_shape.append(local[d])
    if tuple(order) != tuple(range(len(order))):
        y = _transpose(y, tuple(order))
    glob = []
    for d, axes in enumerate(spec_axes):
        n = 1
        for a in axes:
            n *= sizes[a]
        glob.append(local[d] * n)
    return _reshape(y, tuple(glob))


class _ShardMapped:
    """The callable ``shard_map`` returns (see ``shard_map``)."""

    def __init__(self, f, mesh, in_specs, out_specs, axis_names, check_vma):
        self.f = f
        self.mesh = mesh
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.axis_names = frozenset(axis_names)
        self.check_vma = check_vma
        functools.update_wrapper(self, f, updated=())
        self._jitted = {}

    def _mesh(self):
        mesh = self.mesh
        if mesh is None:
            from ..sharding import get_mesh
            mesh = get_mesh()
        if mesh is None or getattr(mesh, "empty", False):
            raise ValueError("shard_map needs a mesh: pass mesh=..., or call it inside "
                             "jaxlite.set_mesh(mesh).")
        return mesh

    def __call__(self, *args):
        from ..sharding import NamedSharding, PartitionSpec
        mesh = self._mesh()
        mesh_axes = tuple(mesh.axis_names)
        manual = self.axis_names or frozenset(mesh_axes)
        leaves, in_tree = tree_flatten(args)
        if self.in_specs is Infer:
            specs = [x.sharding.spec if type(x) is ShardedArray else PartitionSpec()
                     for x in leaves]
        else:
            specs = _prefix_leaves(self.in_specs, args, "in_specs")
        in_axes = []
        for k, (x, s) in enumerate(zip(leaves, specs)):
            shape = np.shape(x) if not isinstance(x, Tracer) else x.aval.shape
            sa = _spec_axes(PartitionSpec() if s is None else s, len(shape), "in_specs")
            _check_spec(sa, shape, mesh, manual, "in_specs", f"argument {k}")
            in_axes.append(sa)
        traced = any(isinstance(x, Tracer) for x in leaves)
        key = (in_tree, tuple(in_axes), mesh)
        if traced:
            outs, out_tree, out_axes = self._expanded(mesh, manual, in_tree, in_axes)(*leaves)
            return tree_unflatten(out_tree, outs)
        # eager: one jitted expansion per signature; the operands are read as global
        # values, the results placed on the mesh by out_specs
        vals = [ArrayImpl(x._buf, x.aval, False) if type(x) is ShardedArray else x
                for x in leaves]
        fn = self._jitted.get(key)
        if fn is None:
            from .jit import jit
            store = {}
            expand = self._expanded(mesh, manual, in_tree, in_axes)

            def run(*xs):
                outs, out_tree, out_axes = expand(*xs)
                store["tree"], store["axes"] = out_tree, out_axes
                return outs
            fn = self._jitted[key] = (jit(run), store)
        jitted, store = fn
        outs = jitted(*vals)
        out_tree, out_axes = store["tree"], store["axes"]
        placed = []
        for o, spec in zip(outs, out_axes):
            placed.append(from_global(o._buf.data, o.aval, NamedSharding(mesh, spec)))
        return tree_unflatten(out_tree, placed)

    def _expanded(self, mesh, manual, in_tree, in_axes):
        """``fn(*leaves) -> (out leaves, out tree, out spec axes)``: the global computation
        (shards stacked, the per-device program batched over the manual mesh axes)."""
        from ..sharding import PartitionSpec
        from .vmap import vmap
        mesh_axes = [a for a in mesh.axis_names if a in manual]
        sizes = dict(mesh.shape)
        f, out_specs, check_vma = self.f, self.out_specs, self.check_vma

        def fn(*leaves):
            stacks = [_to_stack(x, sa, mesh_axes, sizes) for x, sa in zip(leaves, in_axes)]
            info = {}

            def body(*local):
                outs = f(*tree_unflatten(in_tree, list(local)))
                o_leaves, o_tree = tree_flatten(outs)
                info["tree"] = o_tree
                info["leaves"] = [_aval_of(o) for o in o_leaves]
                o_specs = _prefix_leaves(out_specs, outs, "out_specs")
                for k, (o, sp) in enumerate(zip(o_leaves, o_specs)):
                    named = set(a for e in (sp or ()) for a in _entry_axes(e))
                    for a in mesh_axes:
                        if check_vma and a not in named and _batched_along(o, a):
                            raise ValueError(
                                f"shard_map out_specs for output {k} ({sp}) does not name "
                                f"the mesh axis {a!r}, but the output varies along it. "
                                f"Name {a!r} in that out_spec, reduce over it (lax.psum), "
                                f"or pass check_vma=False.")
                return o_leaves

            # nested vmaps, outermost = first mesh axis: each consumes the leading stacked
            # axis of the operands sharded along it
            present = [[a for a in mesh_axes if any(a in e for e in sa)] for sa in in_axes]
            out_present: list = []

            def nest(level):
                if level == len(mesh_axes):
                    return body
                a = mesh_axes[level]
                inner = nest(level + 1)
                ia = [0 if a in p else None for p in present]

                def call(*xs):
                    return inner(*xs)
                return _VmapLevel(call, a, ia, sizes[a], out_present, level, vmap)
            runner = nest(0)
            outs = runner(*stacks)
            o_tree = info["tree"]
            o_specs = _prefix_leaves(out_specs, tree_unflatten(o_tree, info["leaves"]),
                                     "out_specs")
            result, out_axes = [], []
            for k, (o, s) in enumerate(zip(outs, o_specs)):
                local_nd = info["leaves"][k].ndim
                sa = _spec_axes(PartitionSpec() if s is None else s, local_nd, "out_specs")
                _check_spec(sa, None, mesh, manual, "out_specs", f"output {k}")
                # o has one leading axis per manual mesh axis (all mapped out): keep those
                # the spec names, take device 0's value along the others (the same on
                # every device when check_vma holds)
                named = set(a for e in sa for a in e)
                for lvl in reversed(range(len(mesh_axes))):
                    if mesh_axes[lvl] not in named:
                        o = _index0(o, lvl)
                result.append(_from_stack(o, sa, mesh_axes, sizes, local_nd))
                out_axes.append(PartitionSpec() if s is None else s)
            return result, o_tree, out_axes
        return fn


class _VmapLevel:
    """One level of the nested vmap over a mesh axis (outputs always mapped at 0)."""

    def __init__(self, inner, name, in_axes, size, out_present, level, vmap):
        self.fn = vmap(inner, in_axes=tuple(in_axes), out_axes=0, axis_name=name,
                       axis_size=size)

    def __call__(self, *xs):
        return self.fn(*xs)


def _aval_of(x):
    from ..core.trace import get_aval
    return get_aval(x)


def _reshape(x, shape):
    from ..primitives.shape import reshape_p
    if _aval_of(x).shape == tuple(shape):
        return x
    return reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _transpose(x, perm):
    from ..primitives.shape import transpose_p
    return transpose_p.bind(x, permutation=tuple(perm))


def _index0(o, axis):
    """``o`` at index 0 of ``axis``, that axis removed."""
    from ..primitives.shape import slice_p
    shape = _aval_of(o).shape
    start = (0,) * len(shape)
    limit = tuple(1 if d == axis else n for d, n in enumerate(shape))
    piece = slice_p.bind(o, start_indices=start, limit_indices=limit, strides=None)
    return _reshape(piece, shape[:axis] + shape[axis + 1:])


def _batched_along(x, name) -> bool:
    """Whether traced value ``x`` varies along the vmap named ``name`` (its batching
    tracer at that level has a mapped axis)."""
    from ..core.batching import BatchTracer
    while isinstance(x, BatchTracer):
        if x._trace.main.payload.name == name:
            return x.bdim is not None
        x = x.val
    return False


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
    """Maps ``f`` over the shards of its arguments, one call per device (``jax.shard_map``).

    Args:
      f: the per-device function: it receives each argument's shard (the global shape
        divided along the dimensions its spec shards) and may call collectives
        (``lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
        ``ppermute``, ``all_to_all``, ``axis_index``) over the mesh's axis names.
      out_specs: a PartitionSpec per output (a pytree prefix of the outputs): how the
        per-device results form the global result; a mesh axis it does not name must be one
        the result does not vary along.
      in_specs: a PartitionSpec per argument (a pytree prefix of the arguments; ``P()``
        replicated); default: each argument's own sharding.
      mesh: the Mesh (default: the one set by ``jaxlite.set_mesh``).
      axis_names: the mesh axes ``f`` is manual over (default: all).
      check_vma: check that outputs are invariant along mesh axes their out_spec omits.
    Returns:
      the mapped function; called eagerly it returns Arrays sharded over the mesh by
      ``out_specs``.
    Raises:
      ValueError: no mesh, a spec naming an axis not in the mesh, a dimension its mesh axes
        do not divide, specs that are no pytree prefix, an output varying along an axis
        its out_spec omits.
      NameError: a collective over an axis name that is not a mesh axis.
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs,
                                 mesh=mesh, axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map needs a callable as its first argument, got {f!r}")
    return _ShardMapped(f, mesh, in_specs, out_specs, axis_names, check_vma)


def experimental_shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset()):
    """The old spelling ``jax.experimental.shard_map.shard_map`` (deprecated, as in JAX):
    ``shard_map`` with positional mesh/specs and ``check_rep`` for ``check_vma``."""
    warnings.warn("jaxlite.experimental.shard_map is deprecated: use jaxlite.shard_map "
                  "instead.", DeprecationWarning, stacklevel=2)
    names = frozenset(mesh.axis_names) - frozenset(auto)
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                     axis_names=names, check_vma=check_rep)


_pmap_names = iter(range(1 << 62))


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
    """Maps ``fun`` over the leading (or ``in_axes``) axis of its arguments, one slice per
    device (``jax.pmap``).

    Built on ``shard_map``: a one-axis mesh of the first ``n`` devices (``devices``, else
    ``jaxlite.local_devices()``), each device's program seeing its slice without the mapped
    axis; collectives over ``axis_name`` combine the devices.

    Args:
      fun: the per-device function.
      axis_name: the name collectives use for the mapped axis.
      in_axes: an int, None (broadcast) or a pytree prefix of the positional arguments.
      out_axes: where the mapped axis goes in each output (int or None: the same value on
        every device, returned once).
      static_broadcasted_argnums: positional arguments passed as they are (hashable).
      devices: the devices to run on (at least ``n``).
      axis_size: the mapped size when no argument is mapped.
      backend, donate_argnums: accepted; the CPU platform is the one backend, and buffers
        are not donated.
    Returns:
      the mapped function; its results are Arrays sharded over the devices along the
      mapped axis.
    Raises:
      ValueError: mapped sizes that differ, more slices than devices, an in_axes entry out
        of range, no mapped argument and no ``axis_size``.
    """
    del backend, donate_argnums
    if not callable(fun):
        raise TypeError(f"pmap needs a callable as its first argument, got {fun!r}")
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    name = axis_name if axis_name is not None else f"_pmap{next(_pmap_names)}"
    mapped_cache: dict = {}

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        from ..sharding import Mesh, PartitionSpec
        from ..runtime import local_devices
        if kwargs:
            raise TypeError("jaxlite.pmap: pass the mapped function's arguments "
                            "positionally (keyword arguments are not mapped here)")
        n_args = len(args)
        st = tuple(i % n_args for i in statics if -n_args <= i < n_args)
        static_vals = {i: args[i] for i in st}
        for i, v in static_vals.items():
            try:
                hash(v)
            except TypeError:
                raise ValueError(f"pmap: static_broadcasted_argnums entry {i} must be "
                                 f"hashable, got {type(v).__name__}") from None
        dyn = tuple(a for i, a in enumerate(args) if i not in static_vals)
        if isinstance(in_axes, (list, tuple)) and not isinstance(in_axes, PartitionSpec):
            ia = tuple(in_axes)
            if len(ia) != n_args and len(ia) != len(dyn):
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries "
                                 f"corresponding to the positional arguments passed to the "
                                 f"function, but got len(in_axes)={len(ia)}, "
                                 f"len(args)={n_args}")
            if len(ia) == n_args:
                ia = tuple(a for i, a in enumerate(ia) if i not in static_vals)
        else:
            ia = in_axes
        leaves, tree = tree_flatten(dyn)
        axes = _axes_leaves(ia, dyn)
        n = None
        for x, ax in zip(leaves, axes):
            if ax is None:
                continue
            shape = _aval_of(x).shape
            if not -len(shape) <= ax < len(shape):
                raise ValueError(f"pmap was requested to map its argument along axis {ax}, "
                                 f"which implies that its rank should be at least "
                                 f"{ax + 1 if ax >= 0 else -ax}, but is only {len(shape)} "
                                 f"(its shape is {shape})")
            size = shape[ax]
            if n is None:
                n = size
            elif size != n:
                raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                                 f"{n} and {size}")
        if n is None:
            if axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis, "
                                 "or axis_size=")
            n = int(axis_size)
        devs = list(devices) if devices is not None else local_devices()
        if n > len(devs):
            raise ValueError(f"compiling computation that requires {n} logical devices, "
                             f"but only {len(devs)} XLA devices are available "
                             f"(num_replicas={n})")
        mesh = Mesh(np.array(devs[:n], dtype=object), (name,))
        moved = [x if ax is None else _move_front(x, ax % _aval_of(x).ndim)
                 for x, ax in zip(leaves, axes)]
        specs = tuple(PartitionSpec() if ax is None else PartitionSpec(name) for ax in axes)
        key = (mesh, tree, tuple(a is None for a in axes), tuple(sorted(static_vals.items(),
                                                                          key=lambda t: t[0])))
        sm = mapped_cache.get(key)
        if sm is None:
            def body(*local):
                xs = [x if ax is None else _reshape(x, _aval_of(x).shape[1:])
                      for x, ax in zip(local, axes)]
                d = list(tree_unflatten(tree, xs))
                full = []
                for i in range(n_args):
                    full.append(static_vals[i] if i in static_vals else d.pop(0))
                out = fun(*full)
                o_leaves, o_tree = tree_flatten(out)
                return tree_unflatten(o_tree, [_reshape(o, (1,) + _aval_of(o).shape)
                                               for o in o_leaves])
            sm = mapped_cache[key] = shard_map(body, mesh=mesh, in_specs=specs,
                                               out_specs=PartitionSpec(name),
                                               check_vma=False)
        out = sm(*moved)
        if out_axes == 0:
            return out
        o_leaves, o_tree = tree_flatten(out)
        oa = _axes_leaves(out_axes, out)
        res = []
        for o, ax in zip(o_leaves, oa):
            if ax is None:
                res.append(_index0(o, 0))
            elif ax % _aval_of(o).ndim != 0:
                res.append(_move_to(o, ax % _aval_of(o).ndim))
            else:
                res.append(o)
        return tree_unflatten(o_tree, res)
    return mapped


def _axes_leaves(axes, tree) -> list:
    """One axis (int or None) per leaf of ``tree`` from ``axes``, an int/None or a pytree
    prefix of it."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_flatten(tree)[0])
    out: list = []

    def walk(a, t):
        if a is None or isinstance(a, int):
            out.extend([a] * len(tree_flatten(t)[0]))
        elif isinstance(a, (tuple, list)) and isinstance(t, (tuple, list)) and \
                len(a) == len(t):
            for x, y in zip(a, t):
                walk(x, y)
        elif isinstance(a, dict) and isinstance(t, dict) and set(a) == set(t):
            for k in t:
                walk(a[k], t[k])
        else:
            raise ValueError(f"pmap in_axes/out_axes specification must be a tree prefix "
                             f"of the corresponding value, got {axes!r}")
    walk(axes, tree)
    return out


def _move_front(x, ax: int):
    if ax == 0:
        return x
    nd = _aval_of(x).ndim
    perm = [ax] + [i for i in range(nd) if i != ax]
    return _transpose(x, perm)


def _move_to(x, ax: int):
    nd = _aval_of(x).ndim
    perm = list(range(1, nd))
    perm.insert(ax, 0)
    return _transpose(x, perm)
