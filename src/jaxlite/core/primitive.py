"""Primitives: the operations every higher-level function is built from, and ``bind``.

Layer: core.  A primitive is declared once, with all of its rules:
- ``abstract_eval(*avals, **params)``: output abstract value(s); checks the operands and
  raises the JAX-type error (TypeError / ValueError) naming the offending shapes/dtypes;
- ``impl(*ndarrays, **params)``: the NumPy reference implementation (the interpreter and
  eager execution both run it: one semantics);
- ``jvp``, ``transpose`` (linear primitives), ``batch``: the transformation rules, filled in
  as the transformations land; a table test lists which ones each primitive has;
- ``scalar_op``: the name in the compiler's scalar-op table, for fusable elementwise ops;
- ``flops``: cost-model rule ``flops(*avals, **params) -> int``.

Facts the compiler passes and backends ask of a primitive (never a table of names), each a
typed field set where the primitive is declared:
- ``kind``: its family ("elementwise", "reduction", "view", "control", "call", ...);
  ``elementwise`` is ``kind == "elementwise"``;
- ``view``: ``impl`` returns a NumPy view of its single operand (no copy); ``strided_view``:
  such a view that reorders or repeats the operand's elements (a transpose, a broadcast),
  which a consumer reads through its strides as cheaply as it would copy it;
- ``rename``: ``rename(**params) -> bool``, true when the result holds the operand's
  elements in the same row-major order (a backend may alias the operand's buffer);
- ``reduction``: a ``Reduction`` (its monoid and the monoid's identity per dtype) for a
  reduction over ``axes`` with an associative, commutative monoid;
- ``transcendental`` (cost analysis counts one per element, not a flop) and
  ``extra_flops`` (flops per element on top of it, as XLA expands the op);
- ``foldable``: constant folding may run it at compile time (default: pure and neither a
  call nor control flow);
- ``inplace``: an ``InPlace`` when the result can be written into an operand's buffer;
- ``sharding``: ``sharding(in_specs, in_avals, axis_sizes, **params) -> ShardingRule``,
  how the primitive runs on the shards of operands sharded over a device mesh (the spec
  each operand needs, the results' specs, the all-reductions of partial results; see
  ``core.sharding_rules``); None: the sharding propagation pass gathers every operand and
  replicates the results (its fallback);
- ``local_params``: ``local_params(params, operand_specs, local_in_shapes,
  local_out_shapes) -> params``, the parameters of the equation run on one device's
  shards, for a primitive whose parameters hold sizes of dimensions its sharding rule
  keeps sharded (a reshape's ``new_sizes``); None: the parameters hold no such sizes;
- ``constraint``: the primitive only says where its first operand lives (a sharding
  constraint, a reshard): the SPMD partitioner moves the operand instead of running it;
- ``host_callback``: the primitive calls back into Python on the host (a callback), so a
  program holding it must run once, not once per device;
- ``lowering``: ``lowering(ctx, *operands, **params)``, the StableHLO operations computing
  the primitive, emitted through the PJRT backend's lowering context
  (``backends/pjrt/lowering.py``); None: the primitive does not lower (compiling a program
  holding it for a PJRT platform raises NotImplementedError naming it).
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

from .eager import apply_primitive
from .trace import Tracer, find_top_trace, full_lower, get_state

_registry: dict[str, "Primitive"] = {}
_MISS = object()        # a memo miss (abstract-evaluation results are never this object)


_VALUE_TYPES = (int, float, complex, bool, str, bytes, type(None), type)


def _by_value(values) -> bool:
    """Whether ``values`` (parameters, nested in tuples and frozensets) compare by value,
    so a memo keyed by them may keep them.  A program (jaxpr), a function or any other
    object hashed by identity does not: as a key it would keep a user's function and the
    arrays its program closes over alive while the memo lives, and never hit again once
    the user dropped them."""
    for v in values:
        t = type(v)
        if t in _VALUE_TYPES:
            continue
        if isinstance(v, (tuple, frozenset)):     # named tuples included
            if not _by_value(v):
                return False
        elif t.__hash__ is object.__hash__ or callable(v):
            return False
    return True


class Reduction(NamedTuple):
    """A reduction's monoid: ``monoid`` names the binary operation ("add", "mul", "max",
    "min", "and", "or", "xor"; the scalar op a fused kernel folds with) and
    ``identity(dtype)`` is its identity element as a NumPy scalar of ``dtype`` (what a
    reduction over an empty axis returns)."""
    monoid: str
    identity: Callable


class InPlace(NamedTuple):
    """How a primitive computes in place: ``ufunc(*operands, out=buffer)`` gives exactly the
    bits of ``impl`` when every operand has the result's dtype, that dtype's kind is in
    ``kinds`` and, for float16/bfloat16, when ``half`` is true.  ``ufunc`` None: the result
    equals the operand (a copy), so it may take over the operand's dying buffer."""
    ufunc: object
    kinds: str = "fciub"
    half: bool = False


class Primitive:
    """A primitive operation with its rules and facts (see module docstring)."""

    def __init__(self, name: str, *, abstract_eval, impl, multiple_results: bool = False,
                 effectful: bool = False, jvp=None, transpose=None, batch=None,
                 scalar_op: str | None = None, flops=None, kind: str = "other",
                 view: bool = False, strided_view: bool = False, rename=None,
                 reduction: Reduction | None = None, transcendental: bool = False,
                 extra_flops: int = 0, foldable: bool | None = None,
                 inplace: InPlace | None = None, sharding=None, local_params=None,
                 constraint: bool = False, host_callback: bool = False, lowering=None):
        self.name = name
        self.abstract_eval = abstract_eval
        self.impl = impl
        self.multiple_results = multiple_results
        self.effectful = effectful
        self.jvp = jvp
        self.transpose = transpose
        self.batch = batch
        self.scalar_op = scalar_op
        self.flops = flops
        self.kind = kind
        self.view = view or strided_view
        self.strided_view = strided_view
        self.rename = rename
        self.reduction = reduction
        self.transcendental = transcendental
        self.extra_flops = extra_flops
        self.foldable = (not effectful and kind not in ("call", "control")
                         if foldable is None else foldable)
        self.inplace = inplace
        self.sharding = sharding
        self.local_params = local_params
        self.constraint = constraint
        self.host_callback = host_callback
        self.lowering = lowering
        self.specialize = None    # (avals, **params) -> callable or None, see impl_for
        self._aval_cache: dict = {}
        if name in _registry:
            raise ValueError(f"primitive {name!r} declared twice")
        _registry[name] = self

    def __repr__(self):
        return self.name

    def __reduce__(self):
        # pickled by name: a program sent to another process (the native build process,
        # backends/cpu/_build_process.py) finds the same primitive in its registry
        return (_primitive_named, (self.name,))

    @property
    def elementwise(self) -> bool:
        """Whether the primitive maps operands to a result element by element."""
        return self.kind == "elementwise"

    def renames(self, params: dict) -> bool:
        """Whether an equation with ``params`` returns its operand's elements in the same
        row-major order (see ``rename`` in the module docstring)."""
        return self.rename is not None and bool(self.rename(**params))

    def impl_for(self, avals, params: dict):
        """The implementation as a callable of the operands alone, for a compiled program
        whose operand avals are static: the primitive's ``specialize`` rule may return a
        cheaper callable for these avals (e.g. no float16 check when no operand is half
        precision), otherwise ``impl`` with ``params`` bound.  Same results either way."""
        if self.specialize is not None:
            fn = self.specialize(avals, **params)
            if fn is not None:
                return fn
        return functools.partial(self.impl, **params) if params else self.impl

    def abstract_eval_cached(self, avals: tuple, params: dict):
        """``abstract_eval`` memoised on (avals, params) when the params are hashable."""
        # The rule runs outside any ``except`` block: a miss is no error, and the rule's own
        # error for bad operands must reach the user without an internal KeyError chained
        # under it.
        key = (avals, tuple(params.items()))
        try:
            out = self._aval_cache.get(key, _MISS)
        except TypeError:       # unhashable params: no memo
            key = out = _MISS
        if out is _MISS:
            out = self.abstract_eval(*avals, **params)
            if (key is not _MISS and len(self._aval_cache) < 4096
                    and _by_value(params.values())):
                self._aval_cache[key] = out
        return out

    def bind(self, *args, **params):
        """Applies the primitive under the current trace (eager when none)."""
        st = get_state()        # this thread's trace state: read once per bind
        if st.eager:            # no jit staging on this thread: eager unless a tracer
            for a in args:
                if isinstance(a, Tracer):
                    break
            else:
                if self.kind not in _PROGRAM_KINDS:
                    return apply_primitive(self, args, params)
                from .batching import lift_for_collectives
                lifted = lift_for_collectives(args, params)
                if lifted is None:
                    return apply_primitive(self, args, params)
                args = lifted
        trace = find_top_trace(args, st)
        tracers = [trace.full_raise(a) for a in args]
        out = trace.process_primitive(self, tracers, params)
        if self.multiple_results:
            return [full_lower(o) for o in out]
        return full_lower(out)


# kinds of primitives that run programs: on raw operands inside a named vmap whose axis
# their program's collectives name, they are batched, not run once (batching.py)
_PROGRAM_KINDS = ("call", "control")


def _primitive_named(name: str) -> "Primitive":
    """The declared primitive called ``name`` (unpickling); KeyError when this process has
    not declared it (its module not imported)."""
    if name not in _registry:
        import importlib
        importlib.import_module("jaxlite")      # declares every primitive of jaxlite
    return _registry[name]


def primitives() -> dict:
    """Every declared primitive by name."""
    return dict(_registry)
