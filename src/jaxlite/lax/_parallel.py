"""Collectives over a named vmap axis (``jax.lax.psum`` & co.)."""
from __future__ import annotations

import operator

import numpy as np

from ..core import batching
from ..core.trace import Tracer, get_aval
from ..primitives import collectives as _col
from ..tree_util import tree_map


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _axis_size(names) -> int:
    n = 1
    for name in names:
        n *= batching.find_axis(name).payload.global_size
    return n


def _check(names):
    for name in names:
        batching.find_axis(name)      # NameError for an unbound name, as JAX


def _no_groups(fn, axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{fn}: axis_index_groups is not supported under vmap "
                                  f"(as in JAX); got axis_index_groups="
                                  f"{axis_index_groups!r}")


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` over every example of the vmap(s) named ``axis_name`` (a name or a
    tuple of names), the same for each example (``jax.lax.psum``); ``x`` may be a pytree.
    Raises NameError when no enclosing vmap has that name, NotImplementedError for
    ``axis_index_groups`` (as JAX under vmap)."""
    names = _names(axis_name)
    _check(names)
    _no_groups("psum", axis_index_groups)
    if not names:               # a sum over no axes: the value itself (as JAX)
        return x

    def one(v):
        if batching.manual_tracing.depth and not isinstance(v, Tracer) and \
                get_aval(v).dtype != np.bool_:
            # a value the per-device program does not trace (make_jaxpr's axis_env, a
            # shard_map body) is every device's: its sum is a constant, as JAX folds it
            # (a bool is first counted as int32, a traced conversion: not folded, as JAX)
            n = _axis_size(names)
            if isinstance(v, (int, float, complex)):
                return v * n
            a = np.asarray(v)
            return a * a.dtype.type(n)
        if get_aval(v).dtype == np.bool_ and not isinstance(v, Tracer) and np.ndim(v) == 0:
            v = np.int32(v)     # a count, as JAX: int32 (a scalar constant converted here)
        elif get_aval(v).dtype == np.bool_:       # a count, as JAX: int32
            from ..primitives.elementwise import convert_element_type_p
            v = convert_element_type_p.bind(v, new_dtype=np.dtype(np.int32),
                                            weak_type=False)
        return _col.bind_collective(_col.psum_p, v, names)
    return tree_map(one, x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean over the named axis (``jax.lax.pmean``)."""
    names = _names(axis_name)
    _no_groups("pmean", axis_index_groups)
    n = _axis_size(names)

    def mean(v):
        s = _col.bind_collective(_col.psum_p, v, names)
        dt = get_aval(s).dtype
        if dt.kind in "iub":
            from .. import numpy as jnp
            return jnp.true_divide(s, n)
        from ..primitives.elementwise import div_p
        return div_p.bind(s, np.array(n, dt))
    return tree_map(mean, x)


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum over the named axis (``jax.lax.pmax``)."""
    names = _names(axis_name)
    _check(names)
    _no_groups("pmax", axis_index_groups)
    return tree_map(lambda v: _col.bind_collective(_col.pmax_p, v, names), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum over the named axis (``jax.lax.pmin``)."""
    names = _names(axis_name)
    _check(names)
    _no_groups("pmin", axis_index_groups)
    return tree_map(lambda v: _col.bind_collective(_col.pmin_p, v, names), x)


def axis_index(axis_name):
    """This example's int32 position along the vmap named ``axis_name``
    (``jax.lax.axis_index``).  For a tuple of names, the row-major position over all of
    them (the first name varies slowest); ``()`` gives a weakly typed 0.  Raises NameError
    when no enclosing vmap has that name."""
    if isinstance(axis_name, (tuple, list)):
        names = tuple(axis_name)
        if not names:
            from .. import numpy as jnp
            return jnp.asarray(0)
        index, stride = None, 1
        for name in reversed(names):
            term = axis_index(name) if stride == 1 else axis_index(name) * stride
            index = term if index is None else term + index
            stride *= batching.find_axis(name).payload.global_size
        return index
    main = batching.find_axis(axis_name)
    if batching.manual_tracing.depth:
        # the per-device program of a shard_map lowered over a mesh (backends/pjrt): this
        # device's block of the positions, an equation the program keeps
        from ..primitives.shape import reshape_p
        from ..primitives.shard_slice import shard_slice_p
        n = main.payload.global_size
        block = shard_slice_p.bind(np.arange(n, dtype=np.int32), axis_name=axis_name,
                                   dimension=0, axis_size=n)
        return reshape_p.bind(block, new_sizes=(), dimensions=None)
    trace = batching.BatchTrace(main)
    split = main.payload.split
    start = 0 if split is None else split.offset     # this process's first device on it
    return batching.BatchTracer(
        trace, np.arange(start, start + main.payload.size, dtype=np.int32), 0)


def axis_size(axis_name) -> int:
    """The size (a Python int) of the vmap named ``axis_name``, or for a tuple of names the
    product of their sizes (``jax.lax.axis_size``).  Raises NameError when no enclosing
    vmap has that name."""
    return _axis_size(_names(axis_name))


def _leaf_ndim(v) -> int:
    return get_aval(v).ndim


def _canon(axis, ndim, what):
    from ..numpy._util import canonicalize_axis
    return canonicalize_axis(operator.index(axis), ndim, what)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False,
               to="varying"):
    """Every example's ``x`` gathered into each example (``jax.lax.all_gather``).

    Not tiled: a new dimension of the axis size at position ``axis`` of the result,
    indexed by the sender's ``axis_index``; tiled: the senders' arrays concatenated along
    the existing dimension ``axis``.  ``axis_name`` may be a tuple of names (the senders
    in row-major order of their positions).  Dtype and weak type are ``x``'s; ``x`` may
    be a pytree.  ``to``: 'varying' (the default) or 'invarying' (the same values here:
    jaxlite has no varying/invariant types); 'reduced' raises NotImplementedError.

    Raises NameError for an unbound name, ValueError for ``axis`` out of bounds or an
    unknown ``to``, NotImplementedError for ``axis_index_groups`` (as JAX under vmap).
    """
    allowed = {"varying", "reduced", "invarying"}
    if to not in allowed:
        raise ValueError(f"Got unexpected `to` value for `jax.lax.all_gather`. Allowed "
                         f"`to` values are: {allowed}")
    names = _names(axis_name)
    if not names:
        return x
    _check(names)
    _no_groups("all_gather", axis_index_groups)
    if to == "reduced":
        raise NotImplementedError("all_gather(to='reduced'): jaxlite has no reduced "
                                  "(unreduced-sum) array types")

    def leaf(v):
        nd = _leaf_ndim(v)
        dim = _canon(axis, nd if tiled else nd + 1, "axis")
        sizes = [batching.find_axis(n).payload.global_size for n in names]
        for k in range(len(names) - 1, -1, -1):     # the last name varies fastest
            one_tiled = tiled or k < len(names) - 1
            v = _col.bind_named(_col.all_gather_p, v, axis_name=names[k],
                                all_gather_dimension=dim, axis_size=sizes[k],
                                tiled=one_tiled)
        return v
    return tree_map(leaf, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None,
                 tiled=False):
    """The sum of ``x`` over the named axis, of which each example keeps its own part
    (``jax.lax.psum_scatter``): not tiled, dimension ``scatter_dimension`` (of the axis
    size) is indexed by ``axis_index`` and removed; tiled, it is split into axis-size
    chunks and example k keeps chunk k.  ``axis_name`` may be a tuple of names (row-major
    positions).  ``x`` may be a pytree; dtypes are numeric (bool: TypeError).

    Raises NameError for an unbound name; ValueError when the scatter dimension's size is
    not the axis size (tiled: not a multiple of it); IndexError for ``scatter_dimension``
    out of range; NotImplementedError for ``axis_index_groups``.
    """
    names = _names(axis_name)
    if not names:
        return x
    _check(names)
    _no_groups("psum_scatter", axis_index_groups)
    sizes = [batching.find_axis(n).payload.global_size for n in names]
    total = _axis_size(names)

    def leaf(v):
        aval = get_aval(v)
        sd = operator.index(scatter_dimension)
        if sd < 0:
            sd += aval.ndim
        if not 0 <= sd < aval.ndim:
            raise IndexError(f"psum_scatter scatter_dimension {scatter_dimension} is out "
                             f"of range for an operand of shape {tuple(aval.shape)}")
        n = aval.shape[sd]
        if tiled and n % total:
            raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} "
                             f"must be divisible by shard_count {total}")
        if not tiled and n != total:
            raise ValueError(f"reduce_scatter operand scatter dimension size {n} must "
                             f"match shard count {total}")
        for k, (name, size) in enumerate(zip(names, sizes)):   # first name: major chunks
            one_tiled = tiled or k < len(names) - 1
            v = _col.bind_named(_col.psum_scatter_p, v, axis_name=name,
                                scatter_dimension=sd, axis_size=size, tiled=one_tiled)
        return v
    return tree_map(leaf, x)


def _check_perm(perm, n, fn="ppermute"):
    """``perm`` as a tuple of (source, destination) pairs in [0, n) (negative indices
    count from the end)."""
    try:
        pairs = [tuple(p) for p in perm]
    except TypeError:
        raise TypeError(f"{fn} perm must be a sequence of (source, destination) pairs of "
                        f"ints, got {perm!r}") from None
    out = []
    for p in pairs:
        if len(p) != 2:
            raise TypeError(f"{fn} perm must be a sequence of (source, destination) pairs "
                            f"of ints, got the entry {p!r}")
        src, dst = (operator.index(i) for i in p)
        for i in (src, dst):
            if not -n <= i < n:
                raise IndexError(f"{fn} perm index {i} is out of bounds for the axis of "
                                 f"size {n}: perm={perm!r}")
        out.append((src % n, dst % n))
    srcs, dsts = [p[0] for p in out], [p[1] for p in out]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"{fn} sources and destinations must be unique, got {perm!r}.")
    return tuple(out)


def ppermute(x, axis_name, perm):
    """Sends each example's ``x`` along the named axis (``jax.lax.ppermute``): for every
    pair ``(src, dst)`` of ``perm`` the example at position ``dst`` receives the value of
    the one at ``src``; an example that is no destination gets zeros.  ``axis_name`` may
    be a tuple of names: a position then counts row-major over their vmaps in nesting
    order, outermost first, whatever the order of the names (as JAX's shard_map numbers a
    ppermute's devices in mesh order).  Same shape, dtype and weak type as ``x``; ``x``
    may be a pytree.

    Raises NameError for an unbound name; TypeError when ``perm`` is not a sequence of
    pairs; IndexError for a position outside the axis; ValueError when a source or a
    destination repeats.
    """
    names = _names(axis_name)
    _check(names)
    n = _axis_size(names)
    pairs = _check_perm(perm, n)
    from .. import numpy as jnp
    if len(names) == 1:
        return tree_map(lambda v: _col.bind_named(_col.ppermute_p, v, axis_name=names[0],
                                                  perm=pairs, axis_size=n), x)
    if not names:            # one example: it keeps its value if it sends to itself
        return tree_map(lambda v: v if pairs else jnp.zeros_like(v), x)
    # several names: positions count in the order the vmaps nest, outermost first (JAX's
    # shard_map numbers a ppermute's devices in mesh order whatever the order of the
    # names; shard_map nests one vmap per mesh axis in mesh order); gather every sender,
    # then pick this example's source
    names = tuple(sorted(names, key=lambda a: batching.find_axis(a).level))
    from . import dynamic_index_in_dim, select
    src_of = {dst: src for src, dst in pairs}
    table = np.array([src_of.get(k, 0) for k in range(n)], np.int32)
    got = np.array([k in src_of for k in range(n)])

    def leaf(v):
        me = axis_index(names)
        out = dynamic_index_in_dim(all_gather(v, names), jnp.asarray(table)[me], 0,
                                   keepdims=False)
        if got.all():
            return out
        return select(jnp.broadcast_to(jnp.asarray(got)[me], get_aval(out).shape),
                      out, jnp.zeros_like(out))
    return tree_map(leaf, x)


def pshuffle(x, axis_name, perm):
    """``ppermute`` with ``perm`` listing sources: position i receives from ``perm[i]``
    (``jax.lax.pshuffle``).  Raises ValueError when ``perm`` is not a permutation of
    ``range(len(perm))``."""
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pbroadcast(x, axis_name, source):
    """Every example receives the ``x`` of the example at position ``source``
    (``jax.lax.pbroadcast``).  Raises ValueError when ``source`` is outside the axis."""
    names = _names(axis_name)
    _check(names)
    n = _axis_size(names)
    source = operator.index(source)
    if not 0 <= source < n:
        raise ValueError(f"pbroadcast source {source} is outside the axis {axis_name!r} "
                         f"of size {n}")
    from . import index_in_dim
    return tree_map(lambda v: index_in_dim(all_gather(v, names), source, 0,
                                           keepdims=False), x)


def _all_to_all_tiled(v, names, split, concat):
    """The tiled all_to_all of one array over ``names`` (positions row-major)."""
    from . import reshape, transpose
    sizes = [batching.find_axis(n).payload.global_size for n in names]
    if len(names) == 1:
        return _col.bind_named(_col.all_to_all_p, v, axis_name=names[0], split_axis=split,
                               concat_axis=concat, axis_size=sizes[0])
    # split the split axis into one receiver axis per name and a chunk axis; each
    # name's all_to_all turns its receiver axis into a sender axis; the sender axes then
    # join the concat axis, major
    s = tuple(get_aval(v).shape)
    k, total = len(names), _axis_size(names)
    chunk = s[split] // total
    v = reshape(v, s[:split] + tuple(sizes) + (chunk,) + s[split + 1:])
    for m, (name, size) in enumerate(zip(names, sizes)):
        v = _col.bind_named(_col.all_to_all_p, v, axis_name=name, split_axis=split + m,
                            concat_axis=split + m, axis_size=size)
    senders = list(range(split, split + k))
    target = concat if concat < split else concat + k
    rest = [d for d in range(len(s) + k) if d not in senders]
    at = rest.index(target)
    perm = rest[:at] + senders + rest[at:]
    v = transpose(v, perm)
    shape = list(get_aval(v).shape)
    pos = perm.index(senders[0])
    merged = shape[:pos] + [int(np.prod(shape[pos:pos + k + 1]))] + shape[pos + k + 1:]
    return reshape(v, tuple(merged))


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None,
               tiled=False):
    """Exchanges chunks among the examples of the named axis (``jax.lax.all_to_all``):
    each example splits dimension ``split_axis`` into axis-size chunks and sends chunk k
    to the example at position k, which joins the chunks it receives, in the order of
    their senders, along ``concat_axis``.  Not tiled, ``x.shape[split_axis]`` must be the
    axis size; that dimension is removed and a new one of the axis size is inserted at
    ``concat_axis`` of the result.  Tiled, the split dimension shrinks and the concat
    dimension grows by the axis size.  ``axis_name`` may be a tuple of names (row-major
    positions); ``x`` may be a pytree.

    Raises NameError for an unbound name; ValueError when the sizes do not fit (JAX's
    messages) or ``concat_axis`` is out of bounds; IndexError for ``split_axis`` out of
    range; NotImplementedError for ``axis_index_groups``.
    """
    names = _names(axis_name)
    _check(names)
    _no_groups("all_to_all", axis_index_groups)
    from . import expand_dims, squeeze
    n = _axis_size(names)

    def leaf(v):
        aval = get_aval(v)
        nd = aval.ndim
        split = operator.index(split_axis)
        if split < 0:
            split += nd
        if not 0 <= split < nd:
            raise IndexError(f"all_to_all split_axis {split_axis} is out of range for an "
                             f"operand of shape {tuple(aval.shape)}")
        concat = _canon(concat_axis, nd, "concat_axis")
        if tiled:
            if aval.shape[split] % n:
                raise ValueError(f"The size of all_to_all split_axis "
                                 f"({aval.shape[split]}) has to be divisible by the size "
                                 f"of the named axis {axis_name} ({n})")
            return _all_to_all_tiled(v, names, split, concat)
        if aval.shape[split] != n:
            raise ValueError(f"all_to_all requires the size of the mapped axis axis_name "
                             f"to equal x.shape[split_axis], but they are {n} and "
                             f"{aval.shape[split]} respectively.")
        if split == concat:
            return _all_to_all_tiled(v, names, split, concat)
        if split < concat:
            concat += 1
            v = expand_dims(v, (concat,))
        else:
            v = expand_dims(v, (concat,))
            split += 1
        return squeeze(_all_to_all_tiled(v, names, split, concat), (split,))
    return tree_map(leaf, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """``all_to_all(x, axis_name, axis, axis)``: the named axis and dimension ``axis``
    (of the axis size) trade places (``jax.lax.pswapaxes``)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pcast(x, axis_name, *, to):
    """Casts ``x`` between JAX's manual-axis types (``jax.lax.pcast``).  jaxlite has no
    varying/invariant types, so ``to='varying'`` returns ``x`` unchanged once every name
    is bound; 'reduced' and 'unreduced' raise NotImplementedError.  Raises TypeError for a
    set of names, ValueError for an unknown ``to``, NameError for an unbound name."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got "
                        f"{axis_name}")
    names = _names(axis_name)
    if not names:
        return x
    allowed = {"unreduced", "reduced", "varying"}
    if to not in allowed:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {allowed}")
    _check(names)
    if to != "varying":
        raise NotImplementedError(f"pcast(to={to!r}): jaxlite has no reduced/unreduced "
                                  f"array types")
    return x


__all__ = ["psum", "pmean", "pmax", "pmin", "axis_index", "axis_size", "all_gather",
           "psum_scatter", "ppermute", "pshuffle", "pbroadcast", "all_to_all", "pswapaxes",
           "pcast"]
