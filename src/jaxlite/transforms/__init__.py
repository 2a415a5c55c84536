"""Transformations: jit (cache, static arguments, lower/compile); grad and vmap later."""
from .jit import jit, make_jaxpr, eval_shape
