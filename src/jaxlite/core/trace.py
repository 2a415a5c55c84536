"""Traces and tracers: how ``bind`` decides what a primitive application means.

Layer: core.  Each thread has its own stack of *main traces*; level 0 is eager evaluation.
A transformation (staging for jit, JVP, batching) pushes a main trace, wraps its inputs in
tracers of that trace, and runs the user function.  ``bind`` sends each primitive to the
highest-level trace among its operands (or the dynamic trace of an enclosing jit), lifting
lower-level operands into it.  A tracer used after its trace was popped, or in another
thread than its trace's, raises UnexpectedTracerError.

The stack lives in a context variable holding an immutable ``TraceState``: its ``top`` is
the innermost main trace, whose ``parent`` links lead down to level 0.  A new thread starts
at ``BASE_STATE`` (nothing traced), so threads tracing at once never see each other's
traces; the hot paths read the state once per operation (``get_state() is BASE_STATE``, or
``get_state().eager`` where only a staging trace matters).
"""
from __future__ import annotations

import contextlib
import contextvars
import gc
import itertools
import operator
import sys

import numpy as np

from .. import errors
from .avals import ShapedArray, aval_of_value, scalar_aval


class MainTrace:
    """One entry of a thread's trace stack: ``level``, the Trace subclass, its shared state
    (``payload``) and the main trace below it (``parent``; None for level 0)."""

    __slots__ = ("level", "trace_type", "payload", "alive", "parent")

    def __init__(self, level, trace_type, payload, parent=None):
        self.level = level
        self.trace_type = trace_type
        self.payload = payload
        self.alive = True
        self.parent = parent       # the main trace below this one on its thread's stack

    def __repr__(self):
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class Trace:
    """Interprets primitives for one main trace.  Subclasses override the process_* hooks."""

    __slots__ = ("main",)

    def __init__(self, main: MainTrace):
        self.main = main

    def pure(self, val):
        raise NotImplementedError(type(self).__name__)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        raise NotImplementedError(type(self).__name__)

    def full_raise(self, val):
        if not isinstance(val, Tracer):
            return self.pure(val)
        main = val._trace.main
        if main is self.main:
            return val
        if not main.alive:
            raise errors.UnexpectedTracerError(
                f"a tracer {val.aval.str_short()} outlived its trace "
                f"({main.trace_type.__name__}, already finished); it leaked out of a "
                f"transformed function.")
        if main.level < self.main.level:
            return self.lift(val)
        raise errors.UnexpectedTracerError(
            f"Tracer {val.aval.str_short()} belongs to a transformation nested inside the one "
            f"now running ({main.trace_type.__name__} level {main.level}).")


class Tracer:
    """A value inside a transformation: it has an abstract value ``aval`` and a trace.

    Array-like methods (operators, ``.at``, reductions) are installed by
    ``jaxlite.numpy``, the same ones ``Array`` gets, so user code cannot tell them apart
    except where a concrete value is needed: ``bool()``, ``int()``, ``np.asarray()`` raise
    the tracer errors of ``jaxlite.errors``.
    """

    __array_priority__ = 1000
    __slots__ = ("_trace", "__weakref__")

    aval: ShapedArray

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return self.aval.ndim

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    @property
    def itemsize(self):
        return self.aval.dtype.itemsize

    @property
    def nbytes(self):
        return self.aval.size * self.aval.dtype.itemsize

    # An Array's placement and buffers exist only for a concrete value: a tracer has the
    # members (as in JAX), and they raise ConcretizationTypeError.
    def _no_placement(self, what):
        raise errors.ConcretizationTypeError(
            self, f"{what} needs a concrete array; a traced value has no buffers or "
                  f"placement.")

    committed = property(lambda self: self._no_placement("committed"))
    addressable_shards = property(lambda self: self._no_placement("addressable_shards"))
    global_shards = property(lambda self: self._no_placement("global_shards"))
    is_fully_addressable = property(lambda self: self._no_placement("is_fully_addressable"))
    is_fully_replicated = property(lambda self: self._no_placement("is_fully_replicated"))

    def addressable_data(self, index):
        self._no_placement("addressable_data()")

    def devices(self):
        self._no_placement("devices()")

    def is_deleted(self):
        self._no_placement("is_deleted()")

    def delete(self):
        self._no_placement("delete()")

    def tobytes(self, order="C"):
        self._no_placement("tobytes()")

    def on_device_size_in_bytes(self):
        self._no_placement("on_device_size_in_bytes()")

    def unsafe_buffer_pointer(self):
        self._no_placement("unsafe_buffer_pointer()")

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def to_concrete_value(self):
        """The concrete value this tracer stands for, or None when it has none.

        Forward-mode differentiation carries the primal value alongside the tangent, so a
        JVP tracer over a concrete primal is concrete (as in JAX, Python control flow on it
        works under ``grad``); a staged or batched value is not."""
        return None

    def __bool__(self):
        c = self.to_concrete_value()
        if c is None:
            raise errors.TracerBoolConversionError(self)
        return bool(c)

    def __int__(self):
        c = self.to_concrete_value()
        if c is None:
            raise errors.ConcretizationTypeError(self, "int() needs a concrete value.")
        return int(c)

    def __index__(self):
        if self.aval.dtype.kind not in "iu" or self.aval.shape:
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        c = self.to_concrete_value()
        if c is None:
            raise errors.TracerIntegerConversionError(self)
        return operator.index(c)

    def __float__(self):
        # JAX refuses float() and complex() even on a concrete JVP tracer
        raise errors.ConcretizationTypeError(self, "float() needs a concrete value.")

    def __complex__(self):
        raise errors.ConcretizationTypeError(self, "complex() needs a concrete value.")

    def __array__(self, *args, **kwargs):
        raise errors.TracerArrayConversionError(self)

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__}")

    def __setitem__(self, idx, value):
        from .array import immutable_error
        raise immutable_error(idx)

    def tolist(self):
        raise errors.ConcretizationTypeError(self, "tolist() needs a concrete value.")

    def item(self, *args):
        c = self.to_concrete_value()
        if c is None:
            raise errors.ConcretizationTypeError(self, "item() needs a concrete value.")
        return np.asarray(c).item(*args)

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __repr__(self):
        return f"Traced<{self.aval!r}>with<{type(self._trace).__name__}>"

    def full_lower(self):
        return self


# ---- the trace stack --------------------------------------------------------------------

class EvalTrace(Trace):
    """Level 0: primitives run now on concrete values (installed by ``core.eager``)."""

    def pure(self, val):
        return val

    lift = pure

    def process_primitive(self, primitive, values, params):
        from .eager import apply_primitive
        return apply_primitive(primitive, values, params)


class TraceState:
    """The trace state of one thread at one moment (immutable): ``top`` is the innermost
    main trace (its ``parent`` chain is the whole stack, down to level 0), ``dynamic`` the
    innermost main trace that catches every bind (a jit staging one; level 0 when none),
    ``eager`` says that ``dynamic`` is level 0, and ``parent`` is the state that was current
    before this one was entered."""

    __slots__ = ("top", "dynamic", "eager", "parent")

    def __init__(self, top, dynamic, parent):
        self.top = top
        self.dynamic = dynamic
        self.eager = dynamic.level == 0
        self.parent = parent

    def __repr__(self):
        return f"TraceState(top={self.top!r}, dynamic={self.dynamic!r})"


EVAL_MAIN = MainTrace(0, EvalTrace, None, None)
# The state of a thread that traces nothing.  Hot paths test ``get_state() is BASE_STATE``:
# one context-variable read in the common case.
BASE_STATE = TraceState(EVAL_MAIN, EVAL_MAIN, None)

# Per thread (and per asyncio task): a new thread starts with BASE_STATE, whatever the
# thread that started it is tracing.
_state: contextvars.ContextVar = contextvars.ContextVar("jaxlite_trace_state",
                                                        default=BASE_STATE)
get_state = _state.get       # bound once: the hot paths call it without attribute lookups
set_state = _state.set


def trace_stack() -> list:
    """The current thread's main traces, outermost (level 0, eager) first."""
    out = []
    m = _state.get().top
    while m is not None:
        out.append(m)
        m = m.parent
    out.reverse()
    return out


def current_main() -> MainTrace:
    """The current thread's innermost main trace (level 0 when nothing is traced)."""
    return _state.get().top


@contextlib.contextmanager
def new_main(trace_type, payload=None, dynamic: bool = False):
    """Pushes a main trace of ``trace_type`` on this thread's stack; ``dynamic`` makes it
    catch every bind."""
    prev = _state.get()
    main = MainTrace(prev.top.level + 1, trace_type, payload, prev.top)
    set_state(TraceState(main, main if dynamic else prev.dynamic, prev))
    try:
        yield main
    finally:
        set_state(prev)
        main.alive = False


def _referrer(obj, target) -> str:
    """Says how ``obj`` refers to ``target``: a list index, a dict key, a module global."""
    if isinstance(obj, (list, tuple)):
        where = next((f"[{i}]" for i, x in enumerate(obj) if x is target), "")
        return f"<{type(obj).__name__} {id(obj)}>{where}"
    if isinstance(obj, dict):
        key = next((k for k, v in obj.items() if v is target), None)
        for name, mod in list(sys.modules.items()):
            if getattr(mod, "__dict__", None) is obj:
                return f"{name}.{key}"
        return f"<dict {id(obj)}>[{key!r}]"
    return f"<{type(obj).__name__} {id(obj)}>"


def check_leaks(main: MainTrace) -> None:
    """Raises Exception when a tracer of the finished main trace ``main`` is still
    referenced (``jax_check_tracer_leaks``): stored in a global, an outer list, an
    attribute.  Called by the transformations once their own references are gone.

    The message names each leaked tracer and what refers to it, two steps back (e.g. a
    list, then the module global holding the list), as JAX's "Leaked trace" error does."""
    gc.collect()
    leaked = [o for o in gc.get_objects()
              if isinstance(o, Tracer) and getattr(o, "_trace", None) is not None
              and o._trace.main is main]
    if not leaked:
        return
    here = sys._getframe()
    lines = []
    for t in leaked:
        lines.append(f"{type(t).__name__}({t.aval.str_short()})")
        refs = gc.get_referrers(t)
        for r in refs:
            if r is leaked or r is here:
                continue
            lines.append(f"<{type(t).__name__} {id(t)}> is referred to by {_referrer(r, t)}")
            if isinstance(r, (list, tuple, dict)):
                for r2 in gc.get_referrers(r):
                    if isinstance(r2, (dict, list, tuple)) and r2 is not refs:
                        lines.append(f"{_referrer(r, t).split('[')[0]} is referred to by "
                                     f"{_referrer(r2, r)}")
    del leaked
    raise Exception(f"Leaked trace {main.trace_type.__name__}. Leaked tracer(s):\n\n"
                    + "\n".join(lines) + "\n")


@contextlib.contextmanager
def eval_context():
    """Makes level 0 (eager evaluation) the dynamic trace of this thread while the block
    runs: binds without tracer operands run now.  Used by ``ensure_compile_time_eval``."""
    prev = _state.get()
    if prev.eager:           # already eager (at top level, or under JVP/vmap only)
        yield
        return
    set_state(TraceState(prev.top, EVAL_MAIN, prev))
    try:
        yield
    finally:
        set_state(prev)


def find_top_trace(args, state=None) -> Trace:
    """The trace a bind of ``args`` goes to: the highest-level one among the tracer
    operands and the dynamic trace of ``state`` (this thread's, read here when not given).

    Raises UnexpectedTracerError for a tracer whose trace has finished, or that belongs to
    a trace of another thread (as JAX does)."""
    st = _state.get() if state is None else state
    top = st.dynamic
    inner = st.top           # this thread's innermost main: its tracers need no check
    checked = None           # the last other main found on this thread's stack
    for a in args:
        if isinstance(a, Tracer):
            m = a._trace.main
            if m is not checked and m is not inner:
                _check_on_stack(a, m, inner)
                checked = m
            if m.level > top.level:
                top = m
    return top.trace_type(top)


def _check_on_stack(tracer, main, top):
    if main.alive:
        m = top.parent
        while m is not None:
            if m is main:
                return
            m = m.parent
        where = "a transformation running in another thread"
    else:
        where = f"{main.trace_type.__name__}, already finished"
    raise errors.UnexpectedTracerError(
        f"a tracer {tracer.aval.str_short()} outlived its trace ({where}); it leaked out "
        f"of a transformed function.")


def full_lower(x):
    return x.full_lower() if isinstance(x, Tracer) else x


_SCALAR_TYPES = (bool, int, float, complex)


def get_aval(x) -> ShapedArray:
    """Abstract value of any operand: tracer, Array, NumPy value or Python scalar."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    if type(x) in _SCALAR_TYPES:
        return scalar_aval(x)
    if isinstance(x, (bool, int, float, complex)) or hasattr(x, "dtype"):
        return aval_of_value(x)
    raise TypeError(f"Value {x!r} of type {type(x).__name__} cannot be used as an array")


_counter = itertools.count()


def is_tracing() -> bool:
    """Whether the current thread is inside a transformation (jit, grad, vmap, ...)."""
    return _state.get().top is not EVAL_MAIN
