"""Scopes around traced code: ``ensure_compile_time_eval`` (operations on concrete values
run now, even inside ``jit``), ``named_scope`` and ``named_call`` (names for a region of a
program).

Layer: transforms.  ``ensure_compile_time_eval`` makes eager evaluation the innermost
dynamic trace for the length of its block: a primitive whose operands are all concrete
runs at once (its result is a concrete Array that Python control flow may inspect), while
a primitive with a traced operand still goes to that operand's trace.  The name stack of
``named_scope``/``named_call`` is kept per thread (a context variable); ``current_name_stack``
reads it (the profiler tags its annotations with it).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools

from ..core import trace as _trace

__all__ = ["ensure_compile_time_eval", "named_scope", "named_call", "current_name_stack"]


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Context manager: inside it, operations on concrete values run eagerly, also while
    ``jit`` or another transformation traces the enclosing function
    (mirrors ``jax.ensure_compile_time_eval``).

    Use it to compute values that only depend on constants (a table, a shape-derived
    scale) once at trace time, and to branch on them in Python.  Operations that touch a
    traced value are still traced, so the block never makes a traced value concrete.

    Yields None; raises nothing itself.

    Example::

        @jax.jit
        def f(x):
            with jax.ensure_compile_time_eval():
                y = jnp.sin(1.0)         # a concrete Array, computed now
                assert y > 0             # Python control flow on it is fine
            return x + y                 # y is a constant of the traced program
    """
    with _trace.eval_context():
        yield


_name_stack: contextvars.ContextVar = contextvars.ContextVar("jaxlite_name_stack",
                                                             default=())


def current_name_stack() -> tuple:
    """The names of the ``named_scope``/``named_call`` regions the caller is inside,
    outermost first (a tuple of str)."""
    return _name_stack.get()


@contextlib.contextmanager
def named_scope(name: str):
    """Context manager naming the operations traced inside it (``jax.named_scope``).

    Scopes nest: the current stack of names is ``current_name_stack()``; the profiler
    (``jaxlite.profiler``) records it with its annotations.  The names do not change any
    result, the printed jaxpr (as in JAX, whose jaxprs also omit them) or what compiles.

    Args:
      name: a str.

    Yields the name stack inside the scope (a tuple of str, outermost first).

    Raises:
      TypeError: ``name`` is not a str.
    """
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    stack = _name_stack.get() + (name,)
    token = _name_stack.set(stack)
    try:
        yield stack
    finally:
        _name_stack.reset(token)


def named_call(fun, *, name: str | None = None):
    """``fun`` wrapped so that each call runs inside ``named_scope(name)`` (default: the
    function's ``__name__``), mirroring ``jax.named_call``.  Results are unchanged; the
    wrapper keeps ``fun``'s name and docstring.

    Raises:
      AttributeError: ``name`` is None and ``fun`` has no ``__name__`` (as JAX).
    """
    scope = fun.__name__ if name is None else str(name)

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)
    return named
