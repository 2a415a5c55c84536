"""``jaxlite.nn``: activation functions, softmax and friends (``jax.nn``).

Layer: public API; every function is a composition of ``jaxlite.numpy``/``jaxlite.lax``
operations, so it works eagerly and under jit alike.
"""
from __future__ import annotations

from ._activations import (celu, elu, gelu, glu, hard_sigmoid, hard_silu,  # noqa: F401
                           hard_swish, hard_tanh, identity, leaky_relu, log1mexp,
                           log_sigmoid, mish, relu, relu6, selu, sigmoid, silu, soft_sign,
                           softplus, sparse_plus, sparse_sigmoid, squareplus, swish, tanh)
from ._normalize import (log_softmax, logmeanexp, logsumexp, one_hot, softmax,  # noqa: F401
                         standardize)
from . import initializers  # noqa: F401,E402
from ._attention import dot_product_attention  # noqa: F401,E402
