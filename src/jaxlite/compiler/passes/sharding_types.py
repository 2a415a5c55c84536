"""Sharding type checking: JAX's ShardingTypeError for programs over Explicit mesh axes.

Layer: compiler.  ``check_explicit(closed_jaxpr, in_specs, axis_sizes, explicit_axes)``
walks a program whose inputs are sharded over a mesh with Explicit axes and raises
``ShardingTypeError`` at the first equation that JAX's typing rules refuse (an ambiguous
result sharding, or one that needs a collective the program does not ask for); otherwise
it returns each result's sharding type.  The rules themselves live in
``core.sharding_types`` (eager operations check them one primitive at a time there); this
pass is what jit calls on a whole program.  Auto axes are never checked.
"""
from __future__ import annotations

import math

from ...core.sharding_types import ShardingTypeError, Ty, check_jaxpr, project

__all__ = ["check_explicit", "check_call", "typed_out_specs", "ShardingTypeError"]


def check_explicit(closed_jaxpr, in_specs, axis_sizes, explicit_axes, *, meshed=None,
                   mesh_context: bool = False, env: dict | None = None) -> list:
    """Checks ``closed_jaxpr`` (a ClosedJaxpr or Jaxpr) against JAX's typing rules of
    Explicit sharding.

    Args:
      closed_jaxpr: the program.
      in_specs: one entry per program input: a spec (one entry per dimension, each None,
        a mesh axis name or a tuple of names; a ``PartitionSpec`` is accepted) for an input
        placed on the mesh, or None for an input that carries no mesh (a host or
        one-device array, a Python scalar): JAX reads those as whole and leaves them out of
        the checks that compare operands' shardings.
      axis_sizes: ``{axis name: size}`` of the mesh.
      explicit_axes: the names of its Explicit axes (Auto axes are not part of the type).
      meshed: optional, one bool per input: whether it is placed on the mesh (a
        ShardedArray).  By default an input is when its spec shards a dimension over an
        Explicit axis; a whole one is then read as carrying no mesh, which can only leave
        a check undone (an Explicit ``P()`` array concatenated with a ``P('x')`` one),
        never raise a false error.
      env: optional dict that receives each top-level variable's ``Ty`` (or None).
      mesh_context: True: constants and literals carry the mesh (replicated), as in JAX
        under ``set_mesh``.  Off by default, also under ``set_mesh``: JAX's library
        functions build their constants with the sharding of their operands, jaxlite's
        do not, so a typed constant would raise where JAX does not (jnp.where(x > 0, x,
        0.), argsort's iota).

    Returns:
      One entry per program output: its spec over the Explicit axes (a tuple of tuples),
      or None where the checker has no typing rule that decides it.

    Raises:
      ShardingTypeError: where JAX 0.10.2 raises it for this program (e.g. ``x @ y`` over a
        contracting dimension sharded on both sides, ``a + b`` over ``P('x')`` and
        ``P('y')``, a result sharded twice over one axis, a reshape that cannot keep a
        sharded dimension, a cumulative op or sort along a sharded dimension); the message
        names the primitive, the operands' shapes with their mesh axes and the axis.
      ValueError: ``in_specs`` has the wrong length.
    """
    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    in_specs = list(in_specs)
    if len(in_specs) != len(jaxpr.invars):
        raise ValueError(f"got {len(in_specs)} input specs for a program of "
                         f"{len(jaxpr.invars)} inputs")
    explicit = frozenset(explicit_axes)
    if not explicit:
        return [None] * len(jaxpr.outvars)
    tys = []
    for k, (v, s) in enumerate(zip(jaxpr.invars, in_specs)):
        ndim = len(v.aval.shape)
        if s is None:
            tys.append(Ty(((),) * ndim, bool(mesh_context)))
            continue
        entries = tuple(s) + (None,) * (ndim - len(tuple(s)))
        spec = project(entries, explicit)
        on_mesh = any(spec) if meshed is None else bool(meshed[k])
        tys.append(Ty(spec, on_mesh or bool(mesh_context)))
    outs = check_jaxpr(closed_jaxpr, tys, axis_sizes, explicit, mesh_context=mesh_context,
                       env=env)
    return [None if t is None else t.spec for t in outs]


def check_call(closed_jaxpr, leaves, mesh) -> list:
    """``check_explicit`` for a jit call on ``leaves`` (its flat arguments) whose sharded
    ones live on ``mesh``: a ShardedArray over Explicit axes gives its spec and is on the
    mesh; any other argument carries no mesh.  Does nothing (returns Nones) when ``mesh``
    has no Explicit axis.  Raises ShardingTypeError as ``check_explicit``."""
    from ...core.sharded import ShardedArray, spec_tuple
    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    if not getattr(mesh, "explicit_axes", ()):
        return [None] * len(jaxpr.outvars)
    on = [type(x) is ShardedArray and bool(x.sharding.mesh.explicit_axes) for x in leaves]
    specs = [spec_tuple(x.sharding, x.aval.ndim) if o else None for x, o in zip(leaves, on)]
    return check_explicit(closed_jaxpr, specs, dict(mesh.shape), mesh.explicit_axes,
                          meshed=on)


def typed_out_specs(closed_jaxpr, in_specs, mesh, specs, meshed=None) -> list:
    """The result specs of a jit call over arguments laid out by ``in_specs`` (full specs,
    one per input) on ``mesh``, given ``specs`` from the sharding propagation: checked by
    ``check_explicit`` (raises ShardingTypeError where JAX does), and where every mesh
    axis is Explicit each result whose type the checker decides takes that spec (JAX's
    result sharding is its type there); the others keep ``specs``.  ``meshed``: one bool
    per argument, True for an Array placed on the mesh (``type(x) is ShardedArray``); by
    default whole arguments are read as carrying no mesh (see ``check_explicit``)."""
    if not getattr(mesh, "explicit_axes", ()):
        return list(specs)
    typed = check_explicit(closed_jaxpr, in_specs, dict(mesh.shape), mesh.explicit_axes,
                           meshed=meshed)
    if mesh.auto_axes or mesh.manual_axes:
        return list(specs)
    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    sizes = dict(mesh.shape)
    out = []
    for t, s, v in zip(typed, specs, jaxpr.outvars):
        fits = t is not None and len(t) == len(v.aval.shape) and all(
            n % math.prod(sizes[a] for a in e) == 0 for n, e in zip(v.aval.shape, t))
        out.append(t if fits else s)
    return out
