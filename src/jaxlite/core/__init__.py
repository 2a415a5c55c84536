"""Core: primitives, abstract values, traces and tracers, the Array type, eager execution."""
from .avals import ShapedArray, aval_of_value
from .trace import (Trace, Tracer, MainTrace, EvalTrace, new_main, find_top_trace, full_lower,
                    get_aval, trace_stack, is_tracing)
from .primitive import Primitive, primitives
from .array import Array, ArrayImpl, live_arrays
from .sharding_types import ShardingTypeError
