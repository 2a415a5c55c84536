"""``named_jit``: a jax.numpy function that is staged as a named nested ``jit`` equation, as
JAX stages the functions it defines under ``jit``.

Layer: numpy.  ``make_jaxpr(f)`` (and the program ``jit(f)`` traces) then shows
``jit[name=cumsum jaxpr={ ... }]`` where JAX does.  The compiler inlines nested jits, so a
compiled program runs the same code as before; outside a staging trace (eager calls, or
grad/vmap run eagerly) the function runs directly, so eager calls cost one check more.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..core.array import ArrayImpl
from ..core.staging import JaxprTrace
from ..core.trace import Tracer, get_state as _trace_state

_LEAF = (ArrayImpl, Tracer, np.ndarray, np.generic, bool, int, float, complex, type(None))


def staging() -> bool:
    """True while a program is being traced (make_jaxpr, jit's tracing); not during the
    special-purpose stagings (linearize's linear program, ``.at[].apply``), which keep
    their equations plain."""
    return _trace_state().dynamic.trace_type is JaxprTrace


def named_jit(name, static_argnames=()):
    """Decorator: ``fun`` staged as ``jit[name=name]`` when called while a program is being
    traced (arguments named in ``static_argnames`` are static, as in JAX's definition).
    An unhashable static value (a list, an ndarray) is JAX's ValueError on every call, as
    for JAX's jitted definitions.  Arguments of other kinds (lists, strings) leave the
    call unstaged, so ``fun`` itself checks them and raises its own error."""
    def wrap(fun):
        jitted = []
        params = list(inspect.signature(fun).parameters)
        # (position, name) of each static parameter: it may come positionally too
        statics = tuple((params.index(k) if k in params else None, k)
                        for k in static_argnames)

        @functools.wraps(fun)
        def call(*args, **kwargs):
            for pos, k in statics:
                v = args[pos] if pos is not None and pos < len(args) else kwargs.get(k)
                if isinstance(v, (list, dict, set, bytearray, np.ndarray)):
                    _unhashable(name, k, v)
            if _trace_state().dynamic.trace_type is not JaxprTrace:   # staging(), inlined
                return fun(*args, **kwargs)
            if not all(isinstance(a, _LEAF) for a in args) or not all(
                    isinstance(v, _LEAF) for k, v in kwargs.items()
                    if k not in static_argnames) or not _hashable(kwargs, static_argnames):
                return fun(*args, **kwargs)
            if not jitted:
                from ..transforms.jit import jit
                jitted.append(jit(_renamed(fun, name), static_argnames=static_argnames))
            return jitted[0](*args, **kwargs)
        return call
    return wrap


def _unhashable(name, arg, value):
    """JAX's ValueError for an unhashable value of a static parameter (``axis=[0, 1]``,
    an ndarray): its jitted definition cannot key its cache on it, eager calls included."""
    raise ValueError(f"jnp.{name}: non-hashable static arguments are not supported; "
                     f"{arg}={value!r} is a {type(value).__name__} (pass a tuple or an int)")


def _hashable(kwargs, static_argnames):
    # an unhashable static value (axis=[0, 1]) cannot key a jit: the call stays unstaged
    try:
        hash(tuple(kwargs.get(k) for k in static_argnames))
        return True
    except TypeError:
        return False


def _renamed(fun, name):
    @functools.wraps(fun)
    def f(*args, **kwargs):
        return fun(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    return f
