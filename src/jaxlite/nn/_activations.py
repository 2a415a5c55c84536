"""Elementwise activation functions of ``jaxlite.nn`` (``jax.nn``).

Layer: public API (compositions of ``jaxlite.numpy`` and ``jaxlite.lax``).  Each function
has JAX's promotion (weak Python scalars stay weak), works eagerly and under jit, and is
written to stay finite where the naive formula overflows.
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._named_jit import named_jit
from ..numpy._util import check_arraylike
from ..transforms.autodiff import custom_jvp
from ._normalize import _inexact

def _arr(name, x):
    """``x`` as an Array (Python scalars stay weakly typed); TypeError naming ``name`` for
    non-array arguments."""
    check_arraylike(name, x)
    return jnp.asarray(x)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_SQRT_2 = math.sqrt(2)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def identity(x):
    """``x`` itself (``jax.nn.identity``).  Raises TypeError for non-array arguments."""
    return _arr("identity", x)


def relu(x):
    """``max(x, 0)`` elementwise (``jax.nn.relu``); keeps x's dtype (integers too).

    Its derivative is 1 where ``x > 0`` and 0 elsewhere, also at 0 (a custom JVP, as in
    JAX).  Example: ``relu(jnp.array([-1.0, 2.0]))`` is ``[0., 2.]``.
    """
    x = _arr("relu", x)
    return _relu(x)


def _relu_impl(x):
    return jnp.maximum(x, 0)


# JAX's structure, which its programs print: a custom_jvp function around a jitted one,
# both named relu, its rule given by defjvps
_relu_impl.__name__ = _relu_impl.__qualname__ = "relu"
_relu = custom_jvp(named_jit("relu")(_relu_impl))
_relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


def relu6(x):
    """``min(max(x, 0), 6)`` elementwise (``jax.nn.relu6``); derivative 1 strictly
    between 0 and 6 and 0 elsewhere (a custom JVP, as in JAX)."""
    x = _arr("relu6", x)
    return _relu6(x)


def _relu6_impl(x):
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


# as relu: JAX's structure and names
_relu6_impl.__name__ = _relu6_impl.__qualname__ = "relu6"
_relu6 = custom_jvp(named_jit("relu6")(_relu6_impl))
_relu6.defjvps(lambda g, ans, x: lax.select(lax.bitwise_and(x > 0, x < 6), g,
                                            lax.full_like(g, 0)))


def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))`` (``jax.nn.sigmoid``).

    Raises TypeError for integer inputs (as ``lax.logistic``)."""
    x = _arr("sigmoid", x)
    return lax.logistic(x)


@named_jit("softplus")
def softplus(x):
    """``log(1 + exp(x))`` without overflow (``jax.nn.softplus``); integers promote to
    the default float."""
    x = _arr("softplus", x)
    return jnp.logaddexp(x, 0)


def soft_sign(x):
    """``x / (|x| + 1)`` (``jax.nn.soft_sign``)."""
    x = _arr("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@named_jit("silu")
def silu(x):
    """``x * sigmoid(x)``, the SiLU / swish activation (``jax.nn.silu``)."""
    x = _arr("silu", x)
    return x * sigmoid(x)


def swish(x):
    """Same as ``silu`` (``jax.nn.swish``)."""
    return silu(x)


@named_jit("log_sigmoid")
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)`` without underflow (``jax.nn.log_sigmoid``)."""
    x = _arr("log_sigmoid", x)
    return -softplus(-x)


@named_jit("leaky_relu")
def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x >= 0`` else ``negative_slope * x`` (``jax.nn.leaky_relu``)."""
    x = _arr("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@named_jit("hard_tanh")
def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]`` (``jax.nn.hard_tanh``)."""
    x = _arr("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def elu(x, alpha=1.0):
    """``x`` where ``x > 0`` else ``alpha * (exp(x) - 1)`` (``jax.nn.elu``); the negative
    branch never sees large positive values, so it cannot overflow."""
    x = _arr("elu", x)
    safe = jnp.where(x > 0, 0.0, x)
    neg = jnp.expm1(safe)
    # JAX's compiled elu drops a multiplication by the constant alpha = 1 (XLA simplifies
    # it away), which matters for complex NaN/inf parts: 1 * (nan + 0j) is NaN + NaN*i
    return jnp.where(x > 0, x, neg if _is_one(alpha) else alpha * neg)


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)`` (``jax.nn.celu``)."""
    x = _arr("celu", x)
    if _is_one(alpha):      # as elu: XLA drops the division and product by a constant 1
        return jnp.maximum(x, 0.0) + jnp.expm1(jnp.minimum(x, 0.0))
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def _is_one(v):
    return type(v) in (int, float) and v == 1


def selu(x):
    """Scaled ELU with the self-normalising constants (``jax.nn.selu``)."""
    x = _arr("selu", x)
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit (``jax.nn.gelu``).

    ``approximate=True`` (the default) is the tanh form
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``; ``approximate=False`` is the
    exact ``x/2 * (1 + erf(x / sqrt(2)))``.  Integers promote to the default float; a Python
    int is converted to it directly (2**40 is accepted with x64 off, as in JAX).
    """
    (x,) = _inexact("gelu", x, big_ints=True)
    if approximate:
        # the constant is typed like x, so the result is never weakly typed (as in JAX)
        c = np.asarray(_SQRT_2_OVER_PI, x.dtype)
        return x * (0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3)))))
    return (x * (lax.erf(x / _SQRT_2) + 1) / 2).astype(x.dtype)


def glu(x, axis: int = -1):
    """Gated linear unit: the first half of ``x`` along ``axis`` times the sigmoid of the
    second half (``jax.nn.glu``).  Raises AssertionError (as JAX) when that axis has odd
    size."""
    x = _arr("glu", x)
    size = x.shape[axis]
    if size % 2:
        raise AssertionError(f"axis size must be divisible by 2, got axis {axis} of size {size} "
                         f"(shape {x.shape})")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6`` (``jax.nn.hard_sigmoid``)."""
    x = _arr("hard_sigmoid", x)
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (``jax.nn.hard_silu``)."""
    x = _arr("hard_silu", x)
    return x * hard_sigmoid(x)


def hard_swish(x):
    """Same as ``hard_silu`` (``jax.nn.hard_swish``)."""
    x = _arr("hard_swish", x)
    return x * hard_sigmoid(x)


def mish(x):
    """``x * tanh(softplus(x))`` (``jax.nn.mish``)."""
    x = _arr("mish", x)
    return x * jnp.tanh(softplus(x))


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU (``jax.nn.squareplus``)."""
    x = _arr("squareplus", x)
    # times 0.5, not / 2: JAX's compiled squareplus divides by the constant 2 as XLA
    # rewrites it, a product with its reciprocal (complex NaN/inf parts differ)
    return (x + jnp.sqrt(jnp.square(x) + b)) * 0.5


def sparse_plus(x):
    """0 for ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1)**2 / 4`` between
    (``jax.nn.sparse_plus``)."""
    x = _arr("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)`` (``jax.nn.sparse_sigmoid``)."""
    x = _arr("sparse_sigmoid", x)
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate near 0 and for large x
    (``jax.nn.log1mexp``)."""
    x = _arr("log1mexp", x)
    return _log1mexp(x)


@custom_jvp
def _log1mexp(x):
    c = math.log(2.0)
    return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


@_log1mexp.defjvp
def _log1mexp_jvp(primals, tangents):
    # the derivative 1 / expm1(x), as JAX defines it: inf at 0, where differentiating the
    # branch formula gives 0 * inf = NaN
    (x,), (t,) = primals, tangents
    return _log1mexp(x), t / jnp.expm1(x)


def tanh(x, /):
    """Hyperbolic tangent (``jax.nn.tanh``, the same as ``jax.numpy.tanh``)."""
    return jnp.tanh(x)
