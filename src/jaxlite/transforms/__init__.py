"""Transformations: jit (cache, static arguments, lower/compile), differentiation
(jvp/vjp/grad and friends), vmap."""
from .jit import jit, make_jaxpr, eval_shape
from .autodiff import (jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev, hessian,
                       custom_jvp, custom_vjp, checkpoint, remat, closure_convert)
from .vmap import vmap
