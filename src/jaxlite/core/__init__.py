"""Core: primitives, abstract values, traces and tracers, the Array type, eager execution."""
from .avals import ShapedArray, aval_of_value
from .trace import (Trace, Tracer, MainTrace, EvalTrace, new_main, find_top_trace, full_lower,
                    get_aval, trace_stack, is_tracing)
from .primitive import Primitive, primitives
from .array import Array, ArrayImpl, live_arrays
from .sharding_types import ShardingTypeError


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
    """Evaluates ``jaxpr`` (a Jaxpr, or a ClosedJaxpr whose program is used) on
    ``consts`` (one value per constvar) and ``args`` (one per invar) by binding each
    equation's primitive, so it runs eagerly, or is traced by whatever transformation
    (``jit``, ``grad``, ``vmap``) the arguments belong to; returns the list of outputs.
    Mirrors ``jax.core.eval_jaxpr``.

    ``propagate_source_info`` must be a bool: JAX copies each equation's source location
    onto the equations it re-traces; jaxlite's equations carry none, so both values give
    the same program.  Raises ValueError when ``consts`` or ``args`` do not have one value
    per constvar / invar, naming the counts."""
    from ..ir.interpret import eval_jaxpr as _eval
    if not isinstance(propagate_source_info, bool):
        raise TypeError(f"eval_jaxpr: propagate_source_info must be a bool; got "
                        f"{propagate_source_info!r}")
    program = getattr(jaxpr, "jaxpr", jaxpr)     # a ClosedJaxpr gives its program
    consts = list(consts)
    if len(consts) != len(program.constvars):
        raise ValueError(f"eval_jaxpr: the jaxpr has {len(program.constvars)} constvars but "
                         f"{len(consts)} consts were given")
    if len(args) != len(program.invars):
        raise ValueError(f"eval_jaxpr: the jaxpr has {len(program.invars)} invars but "
                         f"{len(args)} args were given")
    return _eval(program, consts, *args)
