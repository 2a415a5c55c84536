"""Collectives over a named mapped axis: ``psum``, ``pmax``, ``pmin`` (and, built on them,
``lax.pmean`` and ``lax.axis_index``).

Layer: primitives.  Inside ``vmap(..., axis_name=name)`` a collective over ``name``
combines the values of every example of that vmap; the batching trace of that vmap
resolves it (its rule receives the ``BatchAxis`` being batched).  With no enclosing vmap of
that name, evaluating one raises JAX's NameError ("unbound axis name").  Several devices
(pmap/shard_map) will resolve the same primitives later.
"""
from __future__ import annotations

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
                     flops=lambda x, **k: x.size, kind="collective")

    def rule(args, dims, axes):
        from . import reduction, elementwise
        (x,), (d,) = args, dims
        axis = batching.current_axis()
        if axis is None or axis.name not in axes:
            # another axis: each example reduces independently over it
            return prim.bind(x, axes=axes), d
        if d is None:
            out = elementwise.mul_p.bind(x, _const(x, axis.size)) if reduce_name == "sum" \
                else x
        else:
            red = getattr(reduction, f"reduce_{reduce_name}_p")
            out = red.bind(x, axes=(d,), **({"out_sharding": None} if reduce_name == "sum"
                                            else {}))
        rest = tuple(a for a in axes if a != axis.name)
        if rest:
            out = bind_collective(prim, out, rest)
        return out, None

    prim.batch = rule
    return prim


def bind_collective(prim, x, axes):
    """Binds ``prim`` on ``x`` over the named ``axes``: ``x`` is first lifted into the
    innermost of those vmaps (unmapped), so that a value every example shares (a constant)
    still reaches the batching rule that resolves the axis."""
    from ..core.trace import Tracer
    mains = [batching.find_axis(a) for a in axes]
    main = max(mains, key=lambda m: m.level)
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

# psum is linear; its transpose sums the cotangents over the same axis
ad.deflinear(psum_p, lambda ct, x, axes: [psum_p.bind(ct, axes=axes)])


def _chooser_jvp(prim):
    def rule(primals, tangents, axes):
        from .elementwise import convert_element_type_p, div_p, eq_p, mul_p
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        if t is None:
            return out, None
        hit = convert_element_type_p.bind(eq_p.bind(x, out), new_dtype=get_aval(t).dtype,
                                          weak_type=False)
        num = psum_p.bind(mul_p.bind(t, hit), axes=axes)
        return out, div_p.bind(num, psum_p.bind(hit, axes=axes))
    prim.jvp = rule


_chooser_jvp(pmax_p)
_chooser_jvp(pmin_p)
