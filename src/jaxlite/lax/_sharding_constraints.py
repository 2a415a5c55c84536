"""Sharding annotations inside programs: ``lax.with_sharding_constraint``,
``jax.sharding.reshard`` (also top-level ``reshard``) and the ``out_sharding=`` argument
of array creation and of the matrix products.

Layer: public ops (lax; above primitives/sharding_constraint.py and sharding.py).
Under a transformation each binds the ``sharding_constraint`` / ``reshard`` primitive,
whose sharding rule the propagation pass (and so ``jit``'s output placement) follows;
eagerly the operand is placed there (``device_put``).  Every check that JAX makes when
tracing is made here, before anything is bound or placed.
"""
from __future__ import annotations

import math

from ..core.trace import Tracer, get_aval
from ..primitives.sharding_constraint import reshard_p, sharding_constraint_p
from ..sharding import (AxisType, NamedSharding, P, Sharding, UNCONSTRAINED, _entry_names,
                       _state)
from ..tree_util import data_flatten as tree_flatten, tree_unflatten

__all__ = ["with_sharding_constraint", "reshard", "out_sharding_of", "apply_out_sharding"]


def _leaf_count(tree) -> int:
    return len(tree_flatten(tree)[0])


def _broadcast_prefix(prefix, tree, who: str) -> list:
    """One entry of ``prefix`` (a pytree prefix of ``tree`` whose leaves are shardings,
    PartitionSpecs or None) per leaf of ``tree``.  ValueError when it is no prefix."""
    out: list = []

    def fail():
        raise ValueError(f"{who} shardings specification must be a tree prefix of the "
                         f"corresponding value; got shardings {prefix!r} for a value of "
                         f"structure {tree_flatten(tree)[1]}")

    def walk(p, t):
        if isinstance(p, (tuple, list)) and not isinstance(p, P):
            if not isinstance(t, (tuple, list)) or len(p) != len(t) or \
                    _is_namedtuple(p) != _is_namedtuple(t):
                fail()
            for a, b in zip(p, t):
                walk(a, b)
        elif isinstance(p, dict):
            if not isinstance(t, dict) or set(p) != set(t):
                fail()
            for k in t:
                walk(p[k], t[k])
        else:
            out.extend([p] * _leaf_count(t))
    walk(prefix, tree)
    return out


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _context_mesh():
    return _state().mesh


def _padded(spec: P, ndim: int) -> P:
    parts = list(spec.partitions) + [None] * (ndim - len(spec.partitions))
    return P(*parts, unreduced=spec.unreduced, reduced=spec.reduced)


def _aval(x):
    try:
        return get_aval(x)
    except TypeError:
        pass
    # outside the except block: aval_of_value's own error for a non-array reaches the user
    # without get_aval's chained under it
    from ..core.avals import aval_of_value
    return aval_of_value(x)


def _without_unconstrained(sh: NamedSharding) -> NamedSharding:
    if UNCONSTRAINED not in sh.spec.partitions:
        return sh
    parts = [None if e is UNCONSTRAINED else e for e in sh.spec.partitions]
    return NamedSharding(sh.mesh, P(*parts))


# ---- with_sharding_constraint ------------------------------------------------------------

def _wsc_sharding(s):
    """The Sharding of one ``shardings`` leaf (a P becomes a NamedSharding over the
    current mesh)."""
    if s is None:
        raise ValueError("One of with_sharding_constraint arguments got sharding None which "
                         "is not allowed. Please only pass `jax.sharding.Sharding` "
                         "instances.")
    if isinstance(s, P):
        mesh = _context_mesh()
        if mesh.empty:
            raise RuntimeError(
                "with_sharding_constraint requires a non-empty mesh in context if you are "
                "passing `PartitionSpec`s to shardings. You can define a context mesh via "
                "`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to shardings and "
                "then the mesh context manager is not required.")
        abstract = _state().abstract
        if abstract.axis_types != mesh.axis_types and not abstract.manual_axes and \
                abstract.axis_names == mesh.axis_names:
            # inside auto_axes: the spec is over the mesh with the region's axis types
            mesh = mesh.update(axis_types=abstract.axis_types)
        return NamedSharding(mesh, s)
    if isinstance(s, Sharding):
        return s
    raise TypeError(f"shardings leaf specifications are expected to be PartitionSpec "
                    f"instances or None, but got {s}")


def with_sharding_constraint(x, shardings):
    """Says how ``x`` is to be sharded (``jax.lax.with_sharding_constraint``).

    Args:
      x: an array or a pytree of arrays (Python scalars and NumPy arrays too).
      shardings: a ``Sharding``, a ``PartitionSpec`` (over the mesh of ``set_mesh``), or a
        pytree prefix of ``x`` of these.  ``P.UNCONSTRAINED`` leaves a dimension to the
        compiler.
    Returns:
      ``x`` with the same values, dtypes (weak types kept) and shapes.  Eagerly each leaf
      is placed by its sharding (``device_put``; a committed Array); under ``jit`` a
      ``sharding_constraint`` equation, which the sharding propagation and so the placement
      of the jitted function's results follow (a dimension the mesh axes do not divide
      stays whole there, as in JAX).  Under a current mesh whose axes are all Explicit it
      asserts that ``x`` already is sharded so.
    Raises:
      ValueError: a None sharding; a spec axis the mesh lacks; a spec longer than a leaf's
        rank; shardings that are no prefix of ``x``; a spec naming an Explicit axis,
        unless the current mesh (``set_mesh``) has only Explicit axes (the message
        suggests ``reshard``).
      IndivisibleError (a ValueError): eagerly, a dimension its axes do not divide.
      RuntimeError: a PartitionSpec without a current mesh.
      TypeError: a shardings leaf of another type; eagerly, a PartitionSpec for an Array
        on one device (as JAX).
      AssertionError: under a current mesh whose axes are all Explicit, ``x`` sharded
        otherwise.
    """
    leaves, treedef = tree_flatten(x)
    if isinstance(shardings, (Sharding, P)) or shardings is None:
        flat = [shardings] * len(leaves)
    else:
        flat = _broadcast_prefix(shardings, x, "with_sharding_constraint")
    from ..core.array import ArrayImpl
    plans = []
    for leaf, given in zip(leaves, flat):
        sh = _wsc_sharding(given)
        aval = _aval(leaf)
        if isinstance(sh, NamedSharding):
            mesh = sh.mesh
            # as JAX: only under a current mesh whose axes are all Explicit is the
            # constraint an assertion (see primitives/sharding_constraint.py); elsewhere
            # it may name Auto axes only (an Explicit axis is moved with reshard)
            if mesh.explicit_axes and not _state().abstract.are_all_axes_explicit:
                types = dict(zip(mesh.axis_names, mesh.axis_types))
                if any(types[n] is not AxisType.Auto for e in sh.spec.partitions
                       for n in _entry_names(e)):
                    raise ValueError(
                        f"The spec of NamedSharding passed to with_sharding_constraint can "
                        f"only refer to Auto axes of the mesh. Got spec={sh.spec} and "
                        f"mesh={mesh.abstract_mesh}. You probably meant to use `reshard` "
                        f"API?")
            if len(sh.spec) > aval.ndim and any(
                    _entry_names(e) for e in sh.spec.partitions[aval.ndim:]):
                extra = " For scalars the PartitionSpec should be P()" if not aval.ndim \
                    else ""
                raise ValueError(
                    f"One of with_sharding_constraint arguments is incompatible with its "
                    f"sharding annotation {sh}: Sharding {sh} is only valid for values of "
                    f"rank at least {len(sh.spec)}, but was applied to a value of rank "
                    f"{aval.ndim}.{extra}")
            if not isinstance(leaf, Tracer):
                if isinstance(given, P) and type(leaf) is ArrayImpl and \
                        not mesh.are_all_axes_explicit:
                    raise TypeError(
                        f"The sharding on the input must be a `NamedSharding` since the "
                        f"target sharding has an `AbstractMesh` in it. Got sharding type "
                        f"{type(leaf.sharding)} for shape {aval.str_short()}")
                from ..core.sharded import check_shardable
                check_shardable(_without_unconstrained(sh), aval,
                                "with_sharding_constraint arguments")
            free = frozenset(d for d, e in enumerate(sh.spec.partitions)
                             if e is UNCONSTRAINED)
        else:
            free = frozenset()
        plans.append((leaf, sh, free))
    ctx = _context_mesh()
    outs = [sharding_constraint_p.bind(leaf, sharding=sh, layout=None,
                                       unconstrained_dims=free, context_mesh=ctx)
            for leaf, sh, free in plans]
    return tree_unflatten(treedef, outs)


# ---- reshard and out_sharding --------------------------------------------------------------

def _named_out(s, who: str, arg: str = "out_sharding") -> NamedSharding:
    """``s`` (a NamedSharding or a PartitionSpec over the current mesh) checked as JAX
    checks the ``out_sharding`` of ``who``: only Explicit mesh axes may be named."""
    if isinstance(s, P):
        mesh = _context_mesh()
        if mesh.empty:
            raise ValueError(
                f"Using PartitionSpec when you are not under a mesh context is not allowed. "
                f"Please pass a NamedSharding instance or enter into a mesh context via "
                f"`jax.set_mesh`. Got {s}")
        s = NamedSharding(mesh, s)
    elif not isinstance(s, NamedSharding):
        raise TypeError(f"`{arg}` argument of {who} only supports instances of "
                        f"`NamedSharding` or `PartitionSpec`. Got {s} of type: {type(s)}")
    else:
        ctx = _state().abstract
        if not ctx.empty and s.mesh.abstract_mesh is not ctx:
            raise ValueError(f"Context mesh {ctx} should match the mesh of sharding "
                             f"{s.mesh.abstract_mesh} passed to {who}.")
    types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
    for e in s.spec.partitions:
        for n in _entry_names(e):
            if types[n] is not AxisType.Explicit:
                raise ValueError(
                    f"PartitionSpec passed to {who} cannot contain axis names that are of "
                    f"type Auto or Manual. Got PartitionSpec: {s.spec} with axis name: {n} "
                    f"of type: {types[n]!s}.")
    return s


def _check_fits(s: NamedSharding, shape) -> NamedSharding:
    """``s`` with its spec padded to the rank of ``shape`` (trailing Nones dropped on a
    mesh without Explicit axes, as JAX prints them); AssertionError for a spec
    longer than the rank (as JAX), ValueError for a dimension its axes do not divide."""
    ndim = len(shape)
    if any(_entry_names(e) for e in s.spec.partitions[ndim:]):
        raise AssertionError(f"({ndim}, {s.spec}): the spec shards more dimensions than the "
                             f"rank {ndim} of the array")
    full = _padded(s.spec, ndim) if len(s.spec) <= ndim else \
        P(*s.spec.partitions[:ndim], unreduced=s.spec.unreduced, reduced=s.spec.reduced)
    sizes = s.mesh.shape
    for d, (e, n) in enumerate(zip(full.partitions, shape)):
        k = math.prod(sizes[a] for a in _entry_names(e))
        if n % k:
            raise ValueError(
                f"Sharding spec {_entry_names(e)} implies that array axis {d} is "
                f"partitioned {k} times, but does not evenly divide the dimension size {n}. "
                f"Got shape: {tuple(shape)} and sharding "
                f"{NamedSharding(s.mesh.abstract_mesh, full)}")
    if not s.mesh.explicit_axes:      # as JAX: trailing Nones dropped on an Auto mesh
        parts = list(full.partitions)
        while parts and parts[-1] is None:
            parts.pop()
        full = P(*parts, unreduced=full.unreduced, reduced=full.reduced)
    return NamedSharding(s.mesh, full)


def reshard(xs, out_shardings):
    """Moves ``xs`` to ``out_shardings`` (``jax.sharding.reshard``, also ``jax.reshard``).

    Args:
      xs: an array or a pytree of arrays (NumPy arrays and Python scalars too).
      out_shardings: a ``NamedSharding`` or ``PartitionSpec`` (over the mesh of
        ``set_mesh``), or a pytree prefix of ``xs`` of these; only Explicit mesh axes may
        be named.
    Returns:
      ``xs`` with the same values, dtypes and shapes, each leaf sharded so (its spec padded
      with None to the leaf's rank); under ``jit`` a ``reshard`` equation that the output
      placement follows.
    Raises:
      ValueError: a None sharding; a PartitionSpec without a current mesh; a spec naming an
        Auto or Manual axis, or an axis the mesh lacks; a dimension its axes do not
        divide; out_shardings that are no prefix of ``xs``.
      TypeError: a sharding that is no NamedSharding or PartitionSpec.
      AssertionError: a spec longer than a leaf's rank (as JAX).
    """
    leaves, treedef = tree_flatten(xs)
    if isinstance(out_shardings, (Sharding, P)) or out_shardings is None:
        flat = [out_shardings] * len(leaves)
    else:
        flat = _broadcast_prefix(out_shardings, xs, "reshard")
    plans = []
    for leaf, s in zip(leaves, flat):
        if s is None:
            raise ValueError("Reshard should only be used with out_shardings which are "
                             "non-None and have a non-empty mesh. Got sharding None.")
        s = _check_fits(_named_out(s, "reshard"), _aval(leaf).shape)
        plans.append((leaf, s))
    outs = [reshard_p.bind(leaf, dst_sharding=s, unconstrained_dims=frozenset())
            for leaf, s in plans]
    return tree_unflatten(treedef, outs)


def out_sharding_of(out_sharding, who: str, device=None):
    """The checked NamedSharding of an ``out_sharding=`` argument of ``who`` (None stays
    None).  ValueError with ``device`` also given; the rest as ``reshard``."""
    if out_sharding is None:
        return None
    if device is not None:
        raise ValueError(f"Only one of `device` or `out_sharding` can be set. Got "
                         f"device={device} and out_sharding={out_sharding}")
    return _named_out(out_sharding, who)


def out_sharded(x, out_sharding, who: str, creation: bool = False):
    """``x`` (an Array or tracer: the result of ``who``) placed by an ``out_sharding=``
    argument as JAX places it: resharded there (a ``reshard`` under jit), the spec padded
    to the rank; ``x`` itself for None.  ``creation``: ``who`` makes a new array (a random
    sampler, an iota), refused outside ``set_mesh`` and ``jit`` as ``jnp.zeros`` is.
    Raises as ``out_sharding_of`` and ``apply_out_sharding``."""
    if out_sharding is None:
        return x
    return apply_out_sharding(x, out_sharding_of(out_sharding, who),
                              who if creation else None)


def _whole_on(x, mesh):
    """``x`` resharded whole (``P()``) on ``mesh`` when it is sharded or traced."""
    from ..core.sharded import ShardedArray
    if type(x) is ShardedArray or isinstance(x, Tracer):
        return reshard_p.bind(x, dst_sharding=NamedSharding(mesh, P()),
                              unconstrained_dims=frozenset())
    return x


def call_with_out_sharding(fn, args, kwargs, out_sharding, who: str, creation: bool):
    """``fn(*args, **kwargs)`` placed by ``out_sharding`` as ``with_out_sharding``
    describes (the argument checked first; a layout operation's operands made whole)."""
    sh = out_sharding_of(out_sharding, who)     # bad input raises before any work
    if not creation:
        args = [_whole_on(a, sh.mesh) for a in args]
        kwargs = {k: _whole_on(v, sh.mesh) for k, v in kwargs.items()}
    return out_sharded(fn(*args, **kwargs), sh, who, creation=creation)


def with_out_sharding(fn, who: str, creation: bool = True):
    """``fn`` with JAX's keyword ``out_sharding=`` added (keyword-only, default None): its
    result placed by ``out_sharded``, the argument checked before ``fn`` runs.  For
    functions whose values do not depend on the layout: random samplers (``creation``;
    counter-based bits, as JAX's partitionable threefry), and layout operations
    (``creation=False``: ``jnp.reshape``, ``repeat``...), whose sharded operands are first
    made whole on the mesh, so the result's sharding is exactly ``out_sharding`` whatever
    theirs (JAX types the result by it and moves the data as needed)."""
    import functools
    import inspect

    @functools.wraps(fn)
    def wrapper(*args, out_sharding=None, **kwargs):
        if out_sharding is None:
            return fn(*args, **kwargs)
        return call_with_out_sharding(fn, args, kwargs, out_sharding, who, creation)
    # the signature shows the keyword, as JAX's (``fn`` is always a Python function)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    k = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params.insert(k, inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                       default=None))
    wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper


def _staged_over_devices(x, n: int) -> bool:
    """Whether ``x`` is being staged by a jit whose arguments lie on a mesh of ``n``
    devices (its program then runs there), or by another transformation (not checked)."""
    if not isinstance(x, Tracer):
        return False
    from ..core.staging import DynamicJaxprTracer
    if type(x) is not DynamicJaxprTracer:
        return True
    mt = getattr(x._trace.main.payload, "mesh_types", None)
    return callable(mt) or (mt is not None and mt[0].size == n)


def apply_out_sharding(x, sharding, who: str | None = None):
    """``x`` (an Array or tracer) resharded to ``sharding`` (from ``out_sharding_of``;
    None: ``x`` itself): its spec padded to the rank, checked as ``reshard`` checks it.
    For array creation (``who`` names the function) outside ``set_mesh`` and outside
    ``jit`` a sharding over several devices is then refused with JAX's ValueError (JAX
    cannot place it there; under ``jit`` the program's devices hold it, as with
    ``out_sharding=jax.typeof(x).sharding`` of a sharded argument)."""
    if sharding is None:
        return x
    s = _check_fits(sharding, _aval(x).shape)
    if who is not None and _context_mesh().empty and s.mesh.size != 1 and \
            not _staged_over_devices(x, s.mesh.size):
        raise ValueError(
            f"Length of device assignment 1 is not equal to the size of the mesh "
            f"{s.mesh.size} of the result of {who} with sharding {s}. Please enter your "
            f"`jit` into a mesh context via `jax.set_mesh`.")
    return reshard_p.bind(x, dst_sharding=s, unconstrained_dims=frozenset())
