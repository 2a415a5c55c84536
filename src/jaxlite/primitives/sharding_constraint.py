"""``sharding_constraint`` and ``reshard``: identities that say how their result is sharded.

Layer: primitives.  ``lax.with_sharding_constraint`` and ``jax.sharding.reshard`` (and the
``out_sharding=`` argument of array creation and of the matrix products) bind them under
a transformation; eagerly (every operand concrete, no jit staging) binding one places the
operand there at once (``device_put``), so eager ``vmap``/``grad`` place their results too.

- value: the identity (the impl returns its operand; a rename of its buffer when compiled);
- derivatives: linear; the tangent gets the same constraint; the cotangent of a
  ``sharding_constraint`` gets the same constraint, that of a ``reshard`` is resharded back
  to the sharding of the primal operand, as JAX: the tangent goes through
  ``reshard_tangent(t, x)`` (``reshard`` of ``t``; ``x`` rides along, not differentiated)
  whose transpose is ``reshard_like(ct, x)``: ``ct`` with ``x``'s sharding (its rule
  gives the result ``x``'s spec; eagerly ``ct`` is placed like ``x``);
- batching: the new (batch) dimension is left unconstrained (``unconstrained_dims``, and
  ``P.UNCONSTRAINED`` in the spec on a mesh with an Auto axis, as JAX);
- sharding rule (``core.sharding_rules``): the operand is resharded to the constraint and
  the result has it.  Dimensions listed in ``unconstrained_dims`` (or ``P.UNCONSTRAINED``)
  keep the operand's mesh axes (those the constraint uses elsewhere dropped).  For
  ``sharding_constraint``, a dimension the named axes do not divide is left whole (JAX
  replicates it under jit), on a mesh mixing Explicit and Auto axes a dimension the
  constraint leaves whole keeps the operand's Explicit axes, and on a mesh whose axes are
  all Explicit the constraint is an assertion: AssertionError when the operand's spec
  differs (as JAX).

Params: ``sharding_constraint[sharding, layout, unconstrained_dims, context_mesh]`` (as
JAX's), ``reshard[dst_sharding, unconstrained_dims]``.
"""
from __future__ import annotations

import math

from ..core import ad
from ..core.primitive import Primitive
from ..core.sharding_rules import ShardingRule, fmt
from ..core.trace import Tracer, get_state
from ..sharding import AxisType, NamedSharding, P, UNCONSTRAINED

__all__ = ["sharding_constraint_p", "reshard_p", "reshard_tangent_p", "reshard_like_p",
           "constraint_mesh"]


class _ConstraintPrimitive(Primitive):
    """A primitive whose eager application places its operand (``device_put``) instead of
    running the identity on one device."""

    def __init__(self, name, **kwargs):
        super().__init__(name, constraint=True, **kwargs)

    def bind(self, *args, **params):
        st = get_state()
        if st.eager and not any(isinstance(a, Tracer) for a in args):
            if self is reshard_like_p:
                return _place_like(args[0], args[1])
            return _place_eager(_as_reshard(self), args[0], params)
        return super().bind(*args, **params)


def _identity_aval(x, **params):
    return x


def _identity(x, **params):
    return x


def _always(**params):
    return True


def _target(prim, params):
    return params["sharding"] if prim is sharding_constraint_p else params["dst_sharding"]


def _as_reshard(prim):
    return reshard_p if prim is reshard_tangent_p else prim


def _entries(spec, ndim: int) -> list:
    """The spec's entries padded with None to ``ndim`` (longer specs kept as they are)."""
    parts = list(spec.partitions)
    return parts + [None] * (ndim - len(parts))


def _names(entry) -> tuple:
    if entry is None or entry is UNCONSTRAINED:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


def constrained_spec(prim, sharding, in_spec, shape, axis_sizes, unconstrained_dims,
                     eager: bool = False, notes: list | None = None) -> tuple:
    """The result spec (one tuple of mesh axis names per dimension) of ``prim`` with target
    ``sharding`` on an operand of ``shape`` whose spec is ``in_spec``.  A constraint under
    jit on a dimension its axes do not divide keeps the longest leading part of them
    that divides it (as GSPMD), possibly none; each such case is appended to ``notes``
    (reported by the partitioner: never a silent replication).

    Raises AssertionError for a ``sharding_constraint`` on an all-Explicit mesh whose
    operand spec differs (JAX's message); ValueError when the constraint's mesh is not the
    one the operands live on."""
    ndim = len(shape)
    if not isinstance(sharding, NamedSharding):
        return ((),) * ndim
    mesh = sharding.mesh
    if dict(mesh.shape) != dict(axis_sizes):
        raise ValueError(
            f"{prim.name}: the sharding {sharding} is on a mesh of axes {dict(mesh.shape)}, "
            f"but the computation's operands are sharded over a mesh of axes "
            f"{dict(axis_sizes)}; put them on one mesh (device_put) first")
    parts = _entries(sharding.spec, ndim)[:ndim]
    free = set(unconstrained_dims) | {d for d, e in enumerate(parts) if e is UNCONSTRAINED}
    want = [_names(e) for e in parts]
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    if prim is sharding_constraint_p and mesh.axis_types and \
            all(t is AxisType.Explicit for t in mesh.axis_types) and not free:
        have = tuple(tuple(e) for e in in_spec)
        if have != tuple(want):
            raise AssertionError(
                "`with_sharding_constraint` acts as an assert when all axes of mesh are of "
                f"type `Explicit`. The array sharding: {_full_p(have)} did not match the "
                f"sharding provided: {_full_p(want)}. Please use `jax.sharding.reshard` to "
                f"shard your input to the sharding you want.")
    if prim is sharding_constraint_p and not eager and 0 in tuple(shape):
        return ((),) * ndim     # as JAX under jit: an empty array comes back replicated
    used = {a for d, e in enumerate(want) if d not in free for a in e}
    out = []
    for d in range(ndim):
        if d in free:
            e = tuple(a for a in in_spec[d] if a not in used)
        else:
            e = want[d]
            n = 1
            for a in e:
                n *= axis_sizes[a]
            if shape[d] % n and prim is sharding_constraint_p and not eager:
                # as JAX under jit: the axes that divide the dimension, or none (eagerly
                # the caller raised IndivisibleError; reshard's caller ValueError)
                asked = e
                while e and shape[d] % math.prod(axis_sizes[a] for a in e):
                    e = e[:-1]
                if notes is not None:
                    notes.append(
                        f"dimension {d} (size {shape[d]}) is not divisible by mesh axes "
                        f"{asked} ({n} shards): sharded over {e or 'none of them'} "
                        f"instead ({'partly ' if e else ''}replicated)")
            if not e and prim is sharding_constraint_p and not eager:
                e = tuple(a for a in in_spec[d] if types.get(a) is AxisType.Explicit
                          and a not in used)
        out.append(e)
    return tuple(out)


def _full_p(spec) -> P:
    return P(*[None if not e else (e[0] if len(e) == 1 else tuple(e)) for e in spec])


def _rule(prim):
    def rule(in_specs, in_avals, axis_sizes, **params):
        notes: list = []
        spec = constrained_spec(_as_reshard(prim), _target(prim, params), in_specs[0],
                                in_avals[0].shape, axis_sizes,
                                params.get("unconstrained_dims", ()), notes=notes)
        note = None
        if tuple(in_specs[0]) != spec:
            note = f"{prim.name}: the operand {fmt(in_specs[0])} is resharded to {fmt(spec)}"
        if notes:
            note = "; ".join(([note] if note else [f"{prim.name}:"]) + notes)
        return ShardingRule([spec] + list(in_specs[1:]), [spec], (), note)
    return rule


def _like_rule(in_specs, in_avals, axis_sizes, **params):
    ref = tuple(tuple(e) for e in in_specs[1])
    note = None
    if tuple(tuple(e) for e in in_specs[0]) != ref:
        note = f"reshard_like: the operand {fmt(in_specs[0])} is resharded to {fmt(ref)}"
    return ShardingRule([ref, ref], [ref], (), note)


def _batch(prim):
    key = "sharding" if prim is sharding_constraint_p else "dst_sharding"

    def rule(args, dims, **params):
        from ..core import batching
        from ..core.trace import get_aval
        if prim is reshard_tangent_p:       # both operands mapped at 0
            size = batching.size_of(args, dims)
            args = [batching.to_front(a, d, size) for a, d in zip(args, dims)]
            x, d = args, 0
        else:
            (x,), (d,) = args, dims
            if d is None:
                return prim.bind(x, **params), None
            x = [x]
        ndim = get_aval(x[0]).ndim - 1
        sh = params[key]
        params = dict(params)
        if isinstance(sh, NamedSharding):
            parts = _entries(sh.spec, ndim)
            # as JAX: P.UNCONSTRAINED where the mesh allows it (an Auto axis)
            parts.insert(d, UNCONSTRAINED if AxisType.Auto in sh.mesh.axis_types else None)
            params[key] = NamedSharding(sh.mesh, P(*parts, unreduced=sh.spec.unreduced,
                                                   reduced=sh.spec.reduced))
        free = {u + (u >= d) for u in params.get("unconstrained_dims", ())} | {d}
        params["unconstrained_dims"] = frozenset(free)
        return prim.bind(*x, **params), d
    return rule


def _batch_like(args, dims, **params):
    from ..core import batching
    size = batching.size_of(args, dims)
    v, ref = [batching.to_front(a, d, size) for a, d in zip(args, dims)]
    return reshard_like_p.bind(v, ref), 0


def _place_like(v, ref):
    """Eager ``reshard_like``: ``v`` placed as ``ref`` is when ``ref`` is sharded over
    several devices (``v`` itself otherwise)."""
    from ..core.placement import device_put
    from ..core.sharded import ShardedArray
    if type(ref) is ShardedArray and type(v) is not ShardedArray or (
            type(v) is ShardedArray and type(ref) is ShardedArray and
            v.sharding != ref.sharding):
        return device_put(v, ref.sharding)
    return v


def _place_eager(prim, x, params):
    """Eager application: ``x`` placed by the constraint (the operand itself when it
    already is sharded that way)."""
    from ..core.placement import device_put
    from ..core.avals import aval_of_value
    from ..core.sharded import ShardedArray, check_shardable, spec_tuple, to_pspec
    from ..core.trace import get_aval
    sharding = _target(prim, params)
    if not isinstance(sharding, NamedSharding):
        return device_put(x, sharding)
    try:
        aval = get_aval(x)
    except TypeError:
        aval = None
    if aval is None:        # outside the except block, so its error has no chained one
        aval = aval_of_value(x)
    ndim = aval.ndim
    mesh = sharding.mesh
    on_mesh = type(x) is ShardedArray and isinstance(x.sharding, NamedSharding) and \
        tuple(x.sharding._device_assignment) == tuple(mesh._flat)
    in_spec = spec_tuple(x.sharding, ndim) if on_mesh else ((),) * ndim
    free = params.get("unconstrained_dims", frozenset())
    if prim is sharding_constraint_p:
        plain = P(*[None if e is UNCONSTRAINED else e for e in sharding.spec.partitions])
        check_shardable(NamedSharding(mesh, plain), aval, "with_sharding_constraint arguments")
    spec = constrained_spec(prim, sharding, in_spec, aval.shape, dict(mesh.shape), free,
                            eager=True)
    has_free = bool(free) or UNCONSTRAINED in sharding.spec.partitions
    if prim is reshard_p:
        target = NamedSharding(mesh, _full_p(spec) if mesh.explicit_axes else to_pspec(spec))
    elif has_free or spec != tuple(_names(e) for e in _entries(sharding.spec, ndim)[:ndim]):
        target = NamedSharding(mesh, to_pspec(spec))
    else:
        target = sharding
    if on_mesh and prim is sharding_constraint_p and \
            spec_tuple(x.sharding, ndim) == spec and mesh.are_all_axes_explicit:
        return x        # an assertion that held: the operand itself, as JAX
    return device_put(x, target)


def _walk_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _walk_eqns(inner)


def constraint_mesh(closed):
    """The mesh of the first ``sharding_constraint``/``reshard`` in ``closed`` (a ClosedJaxpr
    or Jaxpr; nested programs searched too) with a NamedSharding; None when none has."""
    jaxpr = getattr(closed, "jaxpr", closed)
    for eqn in _walk_eqns(jaxpr):
        if eqn.primitive in (sharding_constraint_p, reshard_p, reshard_tangent_p):
            sh = _target(eqn.primitive, eqn.params)
            if isinstance(sh, NamedSharding) and hasattr(sh.mesh, "_flat"):
                return sh.mesh
    return None


sharding_constraint_p = _ConstraintPrimitive(
    "sharding_constraint", abstract_eval=_identity_aval, impl=_identity, kind="view",
    view=True, rename=_always, flops=lambda x, **p: 0)
reshard_p = _ConstraintPrimitive(
    "reshard", abstract_eval=_identity_aval, impl=_identity, kind="view", view=True,
    rename=_always, flops=lambda x, **p: 0)


def _first_aval(v, ref, **params):
    return v


def _first(v, ref, **params):
    return v


# not views: two operands (the second only says where the first goes)
reshard_tangent_p = _ConstraintPrimitive(
    "reshard_tangent", abstract_eval=_first_aval, impl=_first, flops=lambda *a, **p: 0)
reshard_like_p = _ConstraintPrimitive(
    "reshard_like", abstract_eval=_first_aval, impl=_first, flops=lambda *a, **p: 0)

for _p in (sharding_constraint_p, reshard_p, reshard_tangent_p):
    _p.sharding = _rule(_p)
    _p.batch = _batch(_p)
reshard_like_p.sharding = _like_rule
reshard_like_p.batch = _batch_like

ad.deflinear(sharding_constraint_p,
             lambda ct, x, **p: [sharding_constraint_p.bind(ct, **p)])


def _reshard_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = reshard_p.bind(x, **params)
    if t is None:
        return out, None
    return out, reshard_tangent_p.bind(t, x, **params)


reshard_p.jvp = _reshard_jvp
reshard_p.transpose = lambda ct, x, **p: [ct]      # reached only by linear_transpose


def _reshard_tangent_jvp(primals, tangents, **params):
    (t, x), (dt, _) = primals, tangents
    out = reshard_tangent_p.bind(t, x, **params)
    return out, None if dt is None else reshard_tangent_p.bind(dt, x, **params)


def _reshard_tangent_transpose(ct, t, x, **params):
    return [None if ct is None else reshard_like_p.bind(ct, x), None]


reshard_tangent_p.jvp = _reshard_tangent_jvp
reshard_tangent_p.transpose = _reshard_tangent_transpose


def _reshard_like_jvp(primals, tangents, **params):
    (v, ref), (dv, _) = primals, tangents
    out = reshard_like_p.bind(v, ref)
    return out, None if dv is None else reshard_like_p.bind(dv, ref)


def _reshard_like_transpose(ct, v, ref, **params):
    return [None if ct is None else ct, None]


reshard_like_p.jvp = _reshard_like_jvp
reshard_like_p.transpose = _reshard_like_transpose


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------
# On one partition a placement annotation is the identity.  In a program XLA partitions
# (jit over a mesh on a PJRT platform) it is XLA's own annotation: a custom call
# ``Sharding`` carrying the value's HloSharding, which XLA's partitioner honours; a
# constraint leaving dimensions to the propagation (UNCONSTRAINED), or one on another
# kind of sharding, leaves the value to XLA's propagation (the identity).

def _placement_lowering(ctx, x, *rest, **params):
    prim = ctx.primitive
    if ctx.num_partitions == 1 or prim is reshard_like_p:
        return x
    sharding = _target(_as_reshard(prim), params)
    spec = getattr(sharding, "spec", None)
    if not isinstance(sharding, NamedSharding) or spec is None or \
            any(e is UNCONSTRAINED for e in spec) or params.get("unconstrained_dims"):
        return x
    text = ctx.sharding_text(sharding, x.aval.ndim)
    return ctx.op("stablehlo.custom_call", [x], x.aval,
                  {"call_target_name": '"Sharding"', "mhlo.sharding": f'"{text}"'})


for _p in (sharding_constraint_p, reshard_p, reshard_tangent_p, reshard_like_p):
    _p.lowering = _placement_lowering
