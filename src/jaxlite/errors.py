"""JAX's error classes (``jax.errors``), raised where JAX raises them.

Layer: bottom.  Each message says what went wrong and what to do instead.
"""
from __future__ import annotations


class JAXTypeError(TypeError):
    """Base of the tracer errors that are TypeErrors."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where a concrete Python value is needed."""

    def __init__(self, tracer, context: str = ""):
        super().__init__(
            f"Abstract tracer value encountered where concrete value is expected: {tracer}\n"
            f"{context}\n"
            "The value depends on the arguments of a jitted function, so it has no concrete value "
            "while tracing. Mark the argument static (static_argnums / static_argnames), or use "
            "jaxlite.lax.cond / jaxlite.numpy.where instead of Python control flow.")


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (an ``if``, ``while``, ``and``/``or``) on a traced value."""

    def __init__(self, tracer):
        JAXTypeError.__init__(
            self,
            f"Attempted boolean conversion of traced array with shape {tracer.aval.str_short()}.\n"
            "The value depends on a non-static argument of a jitted function, so Python cannot "
            "branch on it while tracing. Use jaxlite.lax.cond or jaxlite.numpy.where for a "
            "value-dependent branch, or mark the argument static with static_argnums/"
            "static_argnames.")


class TracerIntegerConversionError(JAXTypeError):
    """``int()``/``operator.index`` on a traced value."""

    def __init__(self, tracer):
        super().__init__(
            f"The __index__() / __int__() method was called on traced array with shape "
            f"{tracer.aval.str_short()}.\n"
            "A traced value cannot be used as a Python integer (e.g. a list index or a shape). "
            "Mark the argument static with static_argnums/static_argnames, or use "
            "jaxlite.lax.dynamic_slice / jaxlite.numpy.take for value-dependent indexing.")


class TracerArrayConversionError(JAXTypeError):
    """``numpy.asarray`` (``__array__``) on a traced value."""

    def __init__(self, tracer):
        super().__init__(
            f"The numpy.ndarray conversion method __array__() was called on traced array with "
            f"shape {tracer.aval.str_short()}.\n"
            "NumPy functions cannot run on traced values inside a jitted function: use the "
            "jaxlite.numpy equivalent (import jaxlite.numpy as jnp), or move the NumPy call "
            "outside the jitted function.")


class NonConcreteBooleanIndexError(IndexError):
    """Boolean-mask indexing under jit, whose result shape would depend on values."""

    def __init__(self, tracer):
        super().__init__(
            f"Array boolean indices must be concrete; got {tracer.aval.str_short()}.\n"
            "The number of selected elements would decide the output shape, which must be known "
            "while tracing. Use jaxlite.numpy.where(mask, x, fill) to keep the shape, or pass "
            "size= to jnp.nonzero / jnp.where.")


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the function transformation that created it (a side effect)."""

    def __init__(self, msg: str):
        super().__init__(
            msg + "\nA traced value was saved outside the function being traced (a global, a "
            "closure cell, a list, an attribute) and used after that trace had finished. Return "
            "the value from the function instead of storing it.")


class KeyReuseError(RuntimeError):
    """A PRNG key was used twice (kept for API parity)."""


class JaxRuntimeError(RuntimeError):
    """A failure while a program runs, such as a host callback that raised or returned
    values unlike its declared results, or a transfer the transfer guard refuses
    (mirrors ``jax.errors.JaxRuntimeError``)."""


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed: a variable read before it is defined or defined twice, a
    malformed literal, or an equation whose recorded output types differ from what its
    primitive derives (raised by ``jaxlite.ir.check_jaxpr``, ``jax.errors.JaxprTypeError``).
    """
