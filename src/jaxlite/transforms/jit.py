"""``jit``: trace once per input signature, compile, cache, run.

Layer: transforms.  The cache key of a call is (pytree structure of the dynamic arguments,
each leaf's abstract value and committed device, the static arguments' values, the
config flags that change tracing or compiled code: ``jax_enable_x64`` and config's
``_JIT_KEY_FLAGS``, such as ``jaxlite_fusion``).  A miss traces the function with tracers
into a jaxpr,
compiles it through the compiler pipeline, and stores the executable only if all of that
succeeded.  Inside another trace a jitted function stages a single ``jit`` equation
carrying its program (so transformations compose); the compiler inlines it.

jit chooses where a call runs (its committed arguments' device, ``device=``, else the
default; over a mesh, the shardings of its arguments and results) and hands the program
with that placement to the device's backend (``Backend.run_compiled``, runtime/backend.py):
on the CPU it runs inline or, when its estimated work (``cost_analysis`` flops + bytes)
reaches ``jaxlite_async_min_cost``, on the device's worker thread, returning pending
Arrays at once (backends/cpu/_run.py, runtime/dispatch.py).  The cached fast path of a
call (``_FastEntry.launch``) runs a CPU program itself, with no call in between.
"""
from __future__ import annotations

import functools
import inspect
import logging
import sys
import time
import warnings
import weakref

import numpy as np
import optree

from .. import monitoring
from .. import _traceback
from .._traceback import api_boundary as _api_boundary
from .._traceback import user_stacklevel as _user_stacklevel
from ..config import _JIT_KEY_FLAGS, config
from ..core import batching as _batching
from ..core import trace as _trace
from ..core.array import ArrayImpl
from ..core import sharded as _sharded_core
from ..core.sharded import ShardedArray, mesh_context as _mesh_context, on_mesh
from ..sharding import NamedSharding
from ..core.avals import ShapedArray, aval_of_value
from ..core import eager as _eager
from ..core.eager import dispatch_program, fp_ignore_begin, fp_ignore_end, wrap
from ..core.staging import DynamicJaxprTracer, trace_to_jaxpr
from ..core.trace import Tracer
from ..ir.jaxpr import hoist_consts
from ..primitives.control import jit_p
from ..runtime import devices, get_default_device
from ..runtime import buffer as _buffer
from ..runtime.backend import Placement
from ..core.run import run_device
from ..runtime import dispatch as _dispatch
from .. import tree_util as _tree_util
from ..dtypes import ExtendedDType
from ..tree_util import (NAMESPACE, keystr, data_flatten as tree_flatten,
                         data_flatten_with_path as tree_flatten_with_path, tree_unflatten)
from .stages import (Compiled, Lowered, ShapeDtypeStruct, Traced, Wrapped,
                     traced_mesh_types, typed_avals)

logger = logging.getLogger("jaxlite")

_PY_SCALARS = (bool, int, float, complex)
_ndarray = np.ndarray
_fp_state = _eager._fp_state
_get_trace_state = _trace.get_state      # this thread's trace state (a context variable)
_BASE_STATE = _trace.BASE_STATE            # ... when it traces nothing
_NO_STATICS: frozenset = frozenset()
_NOT_TRACED = object()      # _call_traced's answer when the call can run compiled


def _flatten(tree):
    return optree.tree_flatten(tree, none_is_leaf=False, namespace=NAMESPACE)


def _leaf_key(x):
    """(aval, committed device or None) of one dynamic argument leaf."""
    t = type(x)
    if t is ArrayImpl:
        k = x._key
        if k is None:
            k = x._key = (x.aval, x._buf.device if x._committed else None)
        return k
    if t in _PY_SCALARS or isinstance(x, (np.ndarray, np.generic) + _PY_SCALARS):
        return (aval_of_value(x), None)
    if t is ShardedArray:
        x._check_alive()
        return (x.aval, x.sharding)
    raise TypeError(f"Argument {x!r} of type {type(x).__name__} cannot be used as an array")


def _abstract_leaf_key(x):
    """Like ``_leaf_key`` but also takes abstract descriptions (``ShapeDtypeStruct``,
    ``ShapedArray``): lowering needs only shapes and dtypes."""
    if isinstance(x, ShapedArray):
        return (x, None)
    if isinstance(x, ShapeDtypeStruct):
        return (x.aval, None)
    return _leaf_key(x)


def _keys_of_structs(tree):
    """``tree`` with each ShapeDtypeStruct of a typed key dtype (``key<fry>``) replaced by
    key arrays over abstract key data, which the trace takes as the keys' data (JAX traces
    such a ShapeDtypeStruct as keys); ``tree`` itself when it holds none."""
    leaves, treedef = _tree_util.tree_flatten(tree)
    if not any(type(x) is ShapeDtypeStruct and isinstance(x.dtype, ExtendedDType)
               for x in leaves):
        return tree
    return treedef.unflatten([
        x.dtype._struct_keys(x)
        if type(x) is ShapeDtypeStruct and isinstance(x.dtype, ExtendedDType) else x
        for x in leaves])


def _resolve_static(fun, static_argnums, static_argnames, sig):
    nums = () if static_argnums is None else (
        (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
    names = () if static_argnames is None else (
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    if sig is not None:
        params = list(sig.parameters.values())
        positional = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if static_argnames is None:
            names = tuple(positional[i] for i in nums if -len(positional) <= i < len(positional))
        if static_argnums is None:
            nums = tuple(positional.index(n) for n in names if n in positional)
        if not any(p.kind == p.VAR_POSITIONAL for p in params):
            for i in nums:
                if not -len(positional) <= i < len(positional):
                    raise ValueError(f"Jitted function has static_argnums={tuple(nums)}, but "
                                     f"only accepts {len(positional)} positional arguments.")
        for n in names:
            if n not in sig.parameters and not any(p.kind == p.VAR_KEYWORD for p in params):
                raise ValueError(f"jit: static_argnames {n!r} is not a parameter of "
                                 f"{getattr(fun, '__name__', fun)}")
    return tuple(nums), tuple(names)


def _check_donated(fun, sig, nums, names):
    """ValueError for a donate_argnums index past the function's positional parameters
    (any index is accepted with ``*args``) or a donate_argnames entry that names no
    parameter (any name is accepted with ``**kwargs``)."""
    params = list(sig.parameters.values())
    fname = getattr(fun, "__name__", repr(fun))
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind == p.VAR_POSITIONAL for p in params):
        bad = tuple(i for i in nums if not -len(positional) <= i < len(positional))
        if bad:
            raise ValueError(f"jit({fname}): donate_argnums={bad} is out of range; the "
                             f"function takes {len(positional)} positional argument(s)")
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        bad = [n for n in names if n not in sig.parameters
               or sig.parameters[n].kind in (inspect.Parameter.VAR_POSITIONAL,
                                             inspect.Parameter.POSITIONAL_ONLY)]
        if bad:
            raise ValueError(f"jit({fname}): donate_argnames {bad} name no parameter of "
                             f"the function (it takes {list(sig.parameters)})")


class _CacheEntry:
    """One compiled signature: the executable stage and the output pytree structure."""

    __slots__ = ("compiled", "out_tree", "placements", "constraint_mesh", "partitions")

    def __init__(self, compiled, out_tree):
        self.compiled = compiled
        self.out_tree = out_tree
        self.placements = None      # sharded calls: (leaf shardings) -> output shardings
        self.partitions = None      # sharded calls: (layouts) -> SPMD-partitioned runner
        # the mesh of the program's first sharding_constraint/reshard (None: it has none):
        # its outputs are then placed by the propagation even over unsharded arguments
        from ..primitives.sharding_constraint import constraint_mesh
        self.constraint_mesh = constraint_mesh(compiled._lowered.closed_jaxpr)


class _FastEntry:
    """A compiled signature of Array-only positional arguments, ready to launch: the call's
    fast path finds it by the arguments' cached keys and runs it with no other work.

    ``device`` is where the committed arguments live (None: none is committed, the
    computation runs on the default device).  ``launch`` returns None when the call needs
    the full path (a deleted argument, an argument to transfer): that path raises or
    transfers exactly as always.
    """

    __slots__ = ("program", "device", "committed", "out_tree", "single", "out_aval",
                 "cost", "remote")

    def __init__(self, entry, device, remote=None):
        # the program, not its executable: a later tier may replace the executable
        self.program = entry.compiled._program
        self.device = device
        self.committed = device is not None
        self.out_tree = entry.out_tree
        self.single = entry.out_tree.num_nodes == 1 and entry.out_tree.num_leaves == 1
        self.out_aval = self.program.executable.out_avals[0] if self.single else None
        self.cost = self.program.dispatch_cost()
        # on a device whose memory is not host memory: (that device, its backend's
        # launcher: runtime/backend.py ``Backend.fast_launcher``)
        self.remote = remote

    def launch(self, args):
        device = self.device
        remote = self.remote
        if remote is not None:
            if remote[0] is not (device or get_default_device()):
                return None
            res = remote[1](args)
            if res is None or self.single:
                return res and res[0]
            return tree_unflatten(self.out_tree, res)
        if device is None:
            device = get_default_device()
            if not device._host_memory:
                return None     # another platform's memory: the full path
        if self.cost >= _dispatch._min_cost:
            # big work: on the device's worker (pending arguments passed as futures)
            vals = []
            for x in args:
                buf = x._buf
                if buf.device is not device:
                    return None
                v = _dispatch.pending_or_value(buf)
                if v is None:
                    return None
                vals.append(v)
            res = dispatch_program(self.program, vals, device, self.committed,
                                   self.program.executable.out_avals)
            return res[0] if self.single else tree_unflatten(self.out_tree, res)
        vals = []
        for x in args:
            buf = x._buf
            data = buf.data
            if data is None or buf.device is not device:
                return None
            vals.append(data)
        ex = self.program.executable
        tmp = ex.temp_bytes
        if tmp:     # the temporaries, charged while the program runs (Device._alloc, inlined)
            before = device._peak, device._largest
            used = device._bytes_in_use = device._bytes_in_use + tmp
            device._num_allocs += 1
            if used > device._peak:
                device._peak = used
            if tmp > device._largest:
                device._largest = tmp
        pair = _eager._fp_pair      # fp_ignore_begin, inlined: JAX computes inf/nan (and
        if _fp_state is not None and pair[0] is _fp_state.get():   # casts) without warnings
            token = _fp_state.set(pair[1])
        else:
            token = fp_ignore_begin()
        try:
            outs = ex.run(vals)
            if self.single:
                return wrap(outs[0], self.out_aval, device, self.committed, vals)
            committed = self.committed
            res = [wrap(o, a, device, committed, vals) for o, a in zip(outs, ex.out_avals)]
        except BaseException as e:
            if tmp:     # the temporaries were never all allocated: no peak from them
                device._charge_failed(tmp, *before)
                tmp = 0
            if isinstance(e, MemoryError):   # JAX's RESOURCE_EXHAUSTED, nothing counted
                raise _buffer.memory_error(e, device, f"jit of {ex.name}"
                                           if hasattr(ex, "name") else "jit") from e
            raise
        finally:
            fp_ignore_end(token)
            if tmp:
                device._bytes_in_use -= tmp     # Device._free, inlined
        return tree_unflatten(self.out_tree, res)


_ALL_JITTED: "weakref.WeakSet" = weakref.WeakSet()   # every live JitWrapped

# id(fun) -> (weak reference to fun, {jit options: caches}): two jit wrappers of one
# function object with the same options share their traces and compiled programs, as in
# JAX.  Keyed by identity (a freshly bound method or a new lambda gets caches of its own);
# the entry goes when the function does, which nothing in it may prevent: a cached program
# holds the function only weakly (JitWrapped._cache_view).
_SHARED: dict = {}


def _shared_caches(fun, options) -> tuple:
    """``(cache, history, fast, fast64)`` for ``fun`` jitted with ``options``: the ones
    of an earlier wrapper with equal options, or new ones."""
    fresh = ({}, [], {}, {})
    key = id(fun)
    hit = _SHARED.get(key)
    if hit is None or hit[0]() is not fun:
        try:
            ref = weakref.ref(fun, lambda _, k=key: _SHARED.pop(k, None))
        except TypeError:      # not weakly referenceable: caches of its own
            return fresh
        hit = _SHARED[key] = (ref, {})
    try:
        return hit[1].setdefault(options, fresh)
    except TypeError:          # unhashable options
        return fresh


def _on_config(name, value):
    # the fast paths of __call__ look a program up by the arguments alone: drop them when a
    # flag of the cache key changes, so the next call looks again under the full key
    if name in _JIT_KEY_FLAGS:
        for f in list(_ALL_JITTED):
            f._fast.clear()
            f._fast64.clear()
            f._last = (None, None, None)


config._on_change(_on_config)


def clear_all_caches() -> None:
    """Empties the compiled-signature caches of every live jitted function and those kept
    for functions whose wrappers are gone (``jit(f)(x)`` again finds them while ``f``
    lives)."""
    for f in list(_ALL_JITTED):
        f.clear_cache()
    for hit in list(_SHARED.values()):
        for caches in list(hit[1].values()):
            for c in caches:
                c.clear()


class JitWrapped:
    """The function returned by ``jit``: call it, ``lower`` it, inspect its cache."""

    def __init__(self, fun, static_argnums=None, static_argnames=None, donate_argnums=None,
                 donate_argnames=None, keep_unused=False, device=None, backend=None,
                 inline=False, in_shardings=None, out_shardings=None):
        if not callable(fun):
            raise TypeError(f"jit needs a callable as its function argument; {fun!r} is not "
                            f"callable")
        self.fun = fun
        self._keep_unused = bool(keep_unused)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self.static_argnums, self.static_argnames = _resolve_static(
            fun, static_argnums, static_argnames, self._sig)
        dn = () if donate_argnums is None else (
            (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums))
        dnames = () if donate_argnames is None else (
            (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames))
        if self._sig is not None:
            _check_donated(fun, self._sig, dn, dnames)
        if self._sig is not None and dnames:
            positional = [p.name for p in self._sig.parameters.values()]
            dn = dn + tuple(positional.index(n) for n in dnames if n in positional)
        self.donate_argnums = tuple(sorted(set(dn)))
        self.donate_argnames = dnames
        if set(self.donate_argnums) & set(self.static_argnums):
            raise ValueError("jit: an argument cannot be both static and donated")
        self._plain = not (self.static_argnums or self.static_argnames or self.donate_argnums
                           or self.donate_argnames)
        # cache: signature -> _CacheEntry; history: signatures compiled so far, for
        # explaining misses; fast/fast64: argument keys -> _FastEntry (see __call__), with
        # jax_enable_x64 off and on.  Shared with other wrappers of fun (_shared_caches).
        self._cache, self._history, self._fast, self._fast64 = _shared_caches(fun, (
            self.static_argnums, self.static_argnames, self.donate_argnums,
            self.donate_argnames, bool(keep_unused), device, backend, bool(inline)))
        self._last: tuple = (None, None, None)    # (x64, keys, _FastEntry) of the last hit
        _ALL_JITTED.add(self)      # for clear_all_caches, once its caches exist
        if device is not None or backend not in (None, "cpu"):
            warnings.warn("jit's device= and backend= arguments are deprecated (as in JAX): "
                          "place the inputs with device_put instead.", DeprecationWarning,
                          stacklevel=_user_stacklevel())
        if backend not in (None, "cpu"):
            devices(backend)  # raises RuntimeError for a platform that is not present
        self._device = device          # the computation runs there and commits its result
        # (in_shardings, out_shardings) when either is given: calls place by them
        self._shardings = None if in_shardings is None and out_shardings is None else \
            (in_shardings, out_shardings)
        if self._shardings is not None:
            self._plain = False
        self.__name__ = getattr(fun, "__name__", "fun")
        self.__qualname__ = getattr(fun, "__qualname__", self.__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun

    def __repr__(self):
        # JAX's text (its jitted functions are PjitFunction objects), which programs print
        return f"<PjitFunction of {self.__wrapped__!r}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    # ---- argument handling -------------------------------------------------------------
    def _split(self, args, kwargs):
        n = len(args)
        static_pos = {i % n for i in self.static_argnums if -n <= i < n} if n else set()
        statics = tuple((i, args[i]) for i in sorted(static_pos))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items()
                                 if k in self.static_argnames))
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        for where, v in statics + static_kw:
            try:
                hash(v)
            except TypeError as e:
                raise ValueError(
                    f"static argument {where!r} of {self.__name__} is unhashable: hashing "
                    f"{v!r} of type {type(v)} raised TypeError: {e}. Static arguments "
                    f"key the compilation cache, so they have to be hashable."
                ) from None
        return statics, static_kw, dyn_args, dyn_kw, static_pos

    def _arg_names(self, dyn_args, dyn_kw, static_pos, n_args):
        """Human names of the dynamic leaves: ``x``, ``params['w']``, ``args[2]``."""
        pnames = []
        if self._sig is not None:
            pnames = [p.name for p in self._sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        pos_names = [pnames[i] if i < len(pnames) else f"args[{i}]"
                     for i in range(n_args) if i not in static_pos]
        out = []
        for name, a in list(zip(pos_names, dyn_args)) + list(dyn_kw.items()):
            leaves, _ = tree_flatten_with_path(a)
            out.extend(name + keystr(p) for p, _ in leaves)
        return out

    def _flat_fun(self, statics, static_kw, in_tree, n_args, static_pos, out_store):
        fun = self.fun

        def flat(*leaves):
            dyn_args, dyn_kw = tree_unflatten(in_tree, leaves)
            args, it = [], iter(dyn_args)
            static_map = dict(statics)
            for i in range(n_args):
                args.append(static_map[i] if i in static_pos else next(it))
            out = fun(*args, **dyn_kw, **dict(static_kw))
            out_leaves, out_tree = tree_flatten(out)
            out_store.append(out_tree)
            return out_leaves
        return flat

    # ---- tracing and compiling -----------------------------------------------------------
    def _trace(self, args, kwargs):
        statics, static_kw, dyn_args, dyn_kw, static_pos = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kw))
        return statics, static_kw, dyn_args, dyn_kw, static_pos, leaves, in_tree

    def _make_jaxpr(self, statics, static_kw, in_tree, n_args, static_pos, in_avals,
                    mesh_types=None):
        out_store = []
        flat = self._flat_fun(statics, static_kw, in_tree, n_args, static_pos, out_store)
        t0 = time.perf_counter()
        closed = trace_to_jaxpr(flat, in_avals, mesh_types)
        return closed, out_store[0], time.perf_counter() - t0

    def _compile(self, key, leaves, statics, static_kw, in_tree, n_args, static_pos, names):
        reason = self._explain(key, names)
        in_avals = [k[0] for k in key[1]]
        closed, out_tree, trace_s = self._make_jaxpr(statics, static_kw, in_tree, n_args,
                                                     static_pos, in_avals,
                                                     _staging_types(leaves))
        # the cache keeps a view of this wrapper that holds fun weakly: the caches are
        # kept by fun's identity (_SHARED) and so must not keep fun alive themselves
        lowered = Lowered(self._cache_view(), closed, in_tree, out_tree, key, names)
        compiled = lowered.compile()
        entry = _CacheEntry(compiled, out_tree)
        self._cache[key] = entry
        self._history.append((key, names))
        sig = ", ".join(f"{n}: {a.str_short()}" for n, a in zip(names, in_avals))
        if config.jax_log_compiles:
            logger.warning("Compiling %s for args (%s): %s; traced in %.1f ms, compiled in "
                           "%.1f ms", self.__name__, sig, reason, trace_s * 1e3,
                           compiled._program.compile_seconds * 1e3)
        if monitoring.active():
            # fun_id and key match the program's "jit_call" events; collectives: the
            # (kind, bytes per device) a shard_map body calls, each run on every call
            monitoring.emit("compile", fun=self.__name__, signature=sig, reason=reason,
                            trace_seconds=trace_s,
                            compile_seconds=compiled._program.compile_seconds,
                            statics=repr([v for _, v in statics + static_kw]),
                            fun_id=id(self), key=key,
                            collectives=[(c.kind, c.bytes) for c in closed.collectives])
        return entry

    def _cache_view(self) -> "_CachedView":
        """This wrapper's options without its function and caches, the function held
        weakly (strongly only when it cannot be weakly referenced: the caches are then
        this wrapper's own, and die with it)."""
        view = object.__new__(_CachedView)
        view.__dict__.update({k: v for k, v in self.__dict__.items() if k not in (
            "fun", "__wrapped__", "_cache", "_history", "_fast", "_fast64", "_last")})
        fun = self.fun
        try:
            view._fun_ref = weakref.ref(fun)
        except TypeError:
            view._fun_ref = lambda: fun
        return view

    def _param_names(self) -> list:
        """Names of the positional parameters (empty when the signature is unknown)."""
        if self._sig is None:
            return []
        return [p.name for p in self._sig.parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def _explain(self, key, names) -> str:
        """Why this signature missed the cache: 'first call' or what changed."""
        if not self._history:
            reason = "first call"
        else:
            reason = _diff_keys(self._history, key, names, self._param_names())
        if config.jax_explain_cache_misses and self._history:
            logger.warning("TRACING CACHE MISS for %s: %s", self.__name__, reason)
        return reason

    # ---- calling -----------------------------------------------------------------------
    @_traceback.register_boundary
    def __call__(self, *args, **kwargs):
        # a traceback boundary (_traceback.py) filtering in place: a try block costs
        # nothing on the success path, so the cached call gains no wrapper call
        try:
            if config.jax_disable_jit:
                return self.fun(*args, **kwargs)
            if not kwargs and self._plain and _get_trace_state() is _BASE_STATE and \
                    not monitoring._listeners and _mesh_context.mesh is None:
                # fastest path: Arrays only, a signature that ran before (see _FastEntry)
                sig = []
                for x in args:
                    if type(x) is not ArrayImpl:
                        break
                    k = x._key
                    if k is None:
                        k = x._key = (x.aval, x._buf.device if x._committed else None)
                    sig.append(k)
                else:
                    sig = tuple(sig)
                    x64 = config.jax_enable_x64
                    last = self._last
                    # the previous call's signature first: the same argument keys compare by
                    # identity, no hashing
                    if last[1] == sig and last[0] == x64:
                        fe = last[2]
                    else:
                        fe = (self._fast64 if x64 else self._fast).get(sig)
                        if fe is not None:
                            self._last = (x64, sig, fe)
                    if fe is not None:
                        out = fe.launch(args)
                        if out is not None:
                            return out
                if args and type(args[0]) is ShardedArray and \
                        _sharded_core._mpi._world is not None:
                    # a jitted shard_map over several processes, these shardings seen before
                    runner = self._across_runner(args)
                    if runner is not None:
                        return runner(args)
            return self._call_slow(args, kwargs)
        except Exception as e:
            _traceback.filter_exception(e, sys._getframe())
            raise

    def _call_slow(self, args, kwargs):
        """``__call__`` past its fast path: flatten, look up or trace and compile, run."""
        if self._plain and not kwargs:
            # fast path: no static or donated arguments, no keywords
            statics = static_kw = ()
            static_pos, dyn_args, dyn_kw = _NO_STATICS, args, {}
            leaves, in_tree = _flatten((args, dyn_kw))
        else:
            statics, static_kw, dyn_args, dyn_kw, static_pos, leaves, in_tree = \
                self._trace(args, kwargs)
        sigs = []
        for x in leaves:
            if type(x) is ArrayImpl:
                k = x._key
                if k is None:
                    k = x._key = (x.aval, x._buf.device if x._committed else None)
                sigs.append(k)
            elif isinstance(x, Tracer):
                break
            else:
                try:
                    sigs.append(_leaf_key(x))
                except TypeError:
                    names = self._arg_names(dyn_args, dyn_kw, static_pos, len(args))
                    raise TypeError(f"Argument '{names[len(sigs)]}' of type {type(x)} cannot be "
                                    f"used as an array (jit of {self.__name__}).") from None
        env = ()
        if len(sigs) != len(leaves) or _get_trace_state() is not _BASE_STATE:
            if _batching.spmd_levels:
                # inside a shard_map checking replication: traced inline, so that reverse
                # mode inside it still sees which values the devices share (a staged
                # program would hide that: core/batching.py spmd_cotangent)
                return self.fun(*args, **kwargs)
            # under a transformation (or with traced arguments): one jit equation
            out = self._call_traced(statics, static_kw, static_pos, leaves, in_tree,
                                    len(args), dyn_args, dyn_kw)
            if out is not _NOT_TRACED:
                return out
            # the program may read the enclosing named vmaps' sizes (lax.axis_size): one
            # compiled under other sizes, or under none, would silently give stale values
            env = _batching.axis_env()
        key = (in_tree, tuple(sigs), statics, static_kw, config.jax_enable_x64,
               config._jit_key, _mesh_context.mesh, env)   # (a trace may read set_mesh's mesh)
        entry = self._cache.get(key)
        if entry is None:
            names = self._arg_names(dyn_args, dyn_kw, static_pos, len(args))
            entry = self._compile(key, leaves, statics, static_kw, in_tree, len(args),
                                  static_pos, names)
        if monitoring._listeners:
            monitoring.emit("jit_call", fun=self.__name__, fun_id=id(self), key=key,
                            code=getattr(self.fun, "__code__", None),
                            arg_ids=[id(x) for x in leaves])
        names_fn = lambda: self._arg_names(dyn_args, dyn_kw, static_pos, len(args))  # noqa
        if self._shardings is not None or entry.constraint_mesh is not None or \
                _mesh_context.mesh is not None or \
                any(type(k[1]) is NamedSharding for k in key[1]):
            outs = _run_sharded(entry, leaves, names_fn, self._shardings,
                                self._donated(args, kwargs, leaves))
            if entry.partitions and self._plain and not kwargs and \
                    len(leaves) == len(args) and _sharded_core._mpi._world is not None:
                self._add_across(args, entry)
            return tree_unflatten(entry.out_tree, outs)
        outs = _run_compiled(entry.compiled, leaves, names_fn,
                             self._donated(args, kwargs, leaves) if not self._plain else None)
        if self._plain and not kwargs and self._device is None and not env and \
                len(leaves) == len(args) and all(type(x) is ArrayImpl for x in args):
            self._add_fast(key, entry)
        return tree_unflatten(entry.out_tree, outs)

    def _across_key(self, args):
        if not all(type(x) is ShardedArray for x in args):
            return None
        return ("across", config.jax_enable_x64) + tuple((x.aval, x._sharding) for x in args)

    def _across_runner(self, args):
        """The runner kept for a jitted shard_map over several processes called on
        ShardedArrays ``args`` with these avals and shardings (``_add_across``), or
        None."""
        key = self._across_key(args)
        return None if key is None else self._fast.get(key)

    def _add_across(self, args, entry):
        """Keeps the runner ``_run_sharded`` made for a jitted shard_map over several
        processes (``entry.partitions``), for the fastest path of ``__call__``."""
        key = self._across_key(args)
        runner = key and entry.partitions.get(("across",) + tuple(x.sharding for x in args))
        if runner is not None and len(self._fast) < 4096:
            self._fast[key] = runner

    def _add_fast(self, key, entry):
        """Registers a signature that just ran for the fast path of ``__call__``."""
        committed = {d for _, d in key[1] if d is not None}
        fast = self._fast64 if key[4] else self._fast
        if len(committed) > 1 or len(fast) >= 4096:
            return
        device = committed.pop() if committed else None
        run_on = device or get_default_device()
        remote = None
        if not run_on._host_memory:
            launcher = run_on.backend.fast_launcher(entry.compiled._program, run_on,
                                                    device is not None)
            if launcher is None:
                return
            remote = (run_on, launcher)
        fast[key[1]] = _FastEntry(entry, device, remote)

    def _donated(self, args, kwargs, leaves):
        """Flat positions of the donated Array leaves (``donate_argnums`` and
        ``donate_argnames``), each buffer once; the run consumes those an output can take
        (runtime/buffer.py ``take_donated``)."""
        if not (self.donate_argnums or self.donate_argnames):
            return None
        pnames = self._param_names()
        trees = [args[i] for i in self.donate_argnums if -len(args) <= i < len(args)]
        trees += [kwargs[n] for n in self.donate_argnames if n in kwargs]
        trees += [args[pnames.index(n)] for n in self.donate_argnames
                  if n in pnames and pnames.index(n) < len(args)]
        ids = {id(x) for t in trees for x in tree_flatten(t)[0]
               if type(x) in (ArrayImpl, ShardedArray)}
        pos, seen = [], set()
        for k, x in enumerate(leaves):
            # a sharded Array's _buf is a fresh global view: the array itself identifies it
            buf = id(x) if type(x) is ShardedArray else id(getattr(x, "_buf", x))
            if id(x) in ids and buf not in seen:
                seen.add(buf)
                pos.append(k)
        return tuple(pos)

    def _call_traced(self, statics, static_kw, static_pos, leaves, in_tree, n_args,
                     dyn_args, dyn_kw):
        """Inside another trace: stage one ``jit`` equation carrying this program."""
        in_avals = [x.aval if isinstance(x, Tracer) else _leaf_key(x)[0] for x in leaves]
        # the enclosing named vmaps are part of the key: a collective's program depends
        # on their sizes (pmean divides by one)
        key = ("traced", in_tree, tuple(in_avals), statics, static_kw,
               config.jax_enable_x64, _batching.axis_env())
        hit = self._cache.get(key)
        if hit is None:
            # inside a jit over arguments on a mesh: typeof in this program derives its
            # arguments' sharding types from the enclosing trace's, when asked
            outer = next((x for x in leaves if type(x) is DynamicJaxprTracer), None)
            mesh_types = None
            if outer is not None and outer._trace.main.payload.mesh_types is not None:
                mesh_types = functools.partial(traced_mesh_types, leaves)
            closed, out_tree, _ = self._make_jaxpr(statics, static_kw, in_tree, n_args,
                                                   static_pos, in_avals, mesh_types)
            if any(isinstance(c, Tracer) for c in closed.consts):
                # the function closes over values of an enclosing transformation: they
                # become leading operands of this call (and the program is not cached)
                body, consts = hoist_consts(closed)
                outs = jit_p.bind(*consts, *leaves, jaxpr=body, name=self.__name__)
                return tree_unflatten(out_tree, outs)
            hit = self._cache[key] = (closed, out_tree)
        closed, out_tree = hit
        if _get_trace_state().eager and not any(isinstance(x, Tracer) for x in leaves) \
                and not (key[-1] and _batching._has_collective({"jaxpr": closed})):
            return _NOT_TRACED        # concrete operands, nothing closed over: compile
        # (a collective over an enclosing vmap's axis: jit_p's bind batches it over that)
        outs = jit_p.bind(*leaves, jaxpr=closed, name=self.__name__)
        return tree_unflatten(out_tree, outs)

    # ---- introspection ---------------------------------------------------------------
    @_api_boundary
    def lower(self, *args, **kwargs) -> Lowered:
        """Traces for these arguments and returns the Lowered stage
        (``jax.jit(f).lower(*args)``): ``.as_text()`` and ``.compile()``."""
        args, kwargs = _keys_of_structs((args, kwargs))
        statics, static_kw, dyn_args, dyn_kw, static_pos, leaves, in_tree = \
            self._trace(args, kwargs)
        key = (in_tree, tuple(_abstract_leaf_key(x) for x in leaves), statics, static_kw,
               config.jax_enable_x64, config._jit_key)
        names = self._arg_names(dyn_args, dyn_kw, static_pos, len(args))
        mesh_types = _staging_types(leaves)
        closed, out_tree, _ = self._make_jaxpr(statics, static_kw, in_tree, len(args),
                                               static_pos, [k[0] for k in key[1]],
                                               mesh_types)
        low = Lowered(self, closed, in_tree, out_tree, key, names)
        low._mesh_types = mesh_types
        # what a call partitions by (the SPMD program shown by compile().as_text())
        low._arg_shardings = [x.sharding if type(x) is ShardedArray else None
                              for x in leaves]
        # the device a call off any mesh runs on (Compiled.input_shardings)
        committed = [x._buf.device for x in leaves if type(x) is ArrayImpl and x._committed]
        low._device = self._device or (committed[0] if committed else get_default_device())
        return low

    @_api_boundary
    def trace(self, *args, **kwargs) -> Traced:
        """Traces for these arguments and returns the Traced stage
        (``jax.jit(f).trace(*args)``): ``.jaxpr``, ``.out_info``, ``.lower()``."""
        return Traced(self.lower(*args, **kwargs))

    @_api_boundary
    def eval_shape(self, *args, **kwargs):
        """Output shapes and dtypes (ShapeDtypeStructs), computing nothing; over arguments
        on a mesh with Explicit axes with their sharding types (over the abstract mesh)."""
        return self.lower(*args, **kwargs)._out_info(concrete=False)

    def _cache_size(self) -> int:
        """Number of compiled signatures (``jax.jit(f)._cache_size()``)."""
        return sum(1 for k in self._cache if k[0] != "traced")

    def clear_cache(self) -> None:
        """Forgets every traced and compiled signature, also those of the other wrappers
        of the same function with the same options (they share them)."""
        self._cache.clear()
        self._fast.clear()
        self._fast64.clear()
        self._history.clear()
        for other in list(_ALL_JITTED):
            if other._cache is self._cache:
                other._last = (None, None, None)


class _CachedView(JitWrapped):
    """What a cached program keeps of the wrapper that compiled it (``_cache_view``): its
    options and names, its function through a weak reference."""

    @property
    def fun(self):
        return self._fun_ref()


def _diff_keys(history, key, names, param_names=()) -> str:
    """Explains the difference between ``key`` and the closest previous signature."""
    best, best_score = None, None
    for old, old_names in history:
        score = (old[0] != key[0]) * 100 + sum(a != b for a, b in zip(old[1], key[1])) + \
            (old[2] != key[2]) + (old[3] != key[3])
        if best_score is None or score < best_score:
            best, best_score = (old, old_names), score
    (old, old_names) = best
    if old[0] != key[0]:
        return f"the pytree structure of the arguments changed: {old[0]} -> {key[0]}"
    diffs = []
    for name, (a_old, d_old), (a_new, d_new) in zip(names, old[1], key[1]):
        if a_old.shape != a_new.shape:
            diffs.append(f"argument {name} shape {a_old.shape} -> {a_new.shape}")
        if a_old.dtype != a_new.dtype:
            diffs.append(f"argument {name} dtype {a_old.dtype} -> {a_new.dtype}")
        if a_old.weak_type != a_new.weak_type:
            diffs.append(f"argument {name} weak_type {a_old.weak_type} -> {a_new.weak_type}")
        if d_old is not d_new:
            diffs.append(f"argument {name} committed device {d_old} -> {d_new}")
    for (i, v_old), (_, v_new) in zip(old[2], key[2]):
        if v_old != v_new:
            label = param_names[i] if i < len(param_names) else i
            diffs.append(f"static argument {label} value {v_old!r} -> {v_new!r}")
    for (k, v_old), (_, v_new) in zip(old[3], key[3]):
        if v_old != v_new:
            diffs.append(f"static argument {k} value {v_old!r} -> {v_new!r}")
    if old[4] != key[4]:
        diffs.append(f"jax_enable_x64 {old[4]} -> {key[4]}")
    for flag, v_old, v_new in zip(_JIT_KEY_FLAGS, old[5], key[5]):
        if v_old != v_new:
            diffs.append(f"{flag} {v_old!r} -> {v_new!r}")
    if old[6:7] != key[6:7]:
        diffs.append(f"the mesh of set_mesh {old[6:] and old[6]} -> {key[6:] and key[6]}")
    if old[7:] != key[7:]:
        diffs.append(f"the enclosing named axes (name, size) {old[7:] and old[7]} -> "
                     f"{key[7:] and key[7]}")
    return "; ".join(diffs) or "a new signature"


Wrapped.register(JitWrapped)


def jit(fun=None, *, static_argnums=None, static_argnames=None, donate_argnums=None,
        donate_argnames=None, keep_unused=False, device=None, backend=None, inline=False,
        in_shardings=None, out_shardings=None, compiler_options=None):
    """Compiles ``fun`` on first call per input signature and caches it (``jax.jit``).

    Args:
      fun: the function; its arguments are arrays/scalars or pytrees of them, except the
        static ones.
      static_argnums / static_argnames: arguments that are compile-time constants (hashable;
        part of the cache key).
      donate_argnums / donate_argnames: arguments whose buffers the call may reuse; they
        are deleted after the call.
      in_shardings: None, a Sharding or PartitionSpec (over the mesh of ``set_mesh``), or
        a pytree prefix of the positional arguments of these (None entries: as the
        argument is): uncommitted arguments are placed there first; a committed one
        sharded otherwise is a ValueError; keyword arguments are then refused
        (ValueError), as in JAX.
      out_shardings: the same for the outputs: each is placed there; outputs without one
        are placed by the sharding propagation of the program (sharded arguments,
        ``with_sharding_constraint``/``reshard`` inside), replicated on the mesh otherwise.
      compiler_options: XLA's compiler flags; jaxlite's compilers have none of them, so
        only None or an empty dict is taken.
    Returns:
      A callable with ``lower``, ``_cache_size`` and ``clear_cache``.
    Raises:
      TypeError: ``fun`` is not callable, or an argument cannot be used as an array.
      ValueError: an unhashable static argument (naming it), static and donated overlap.
      NotImplementedError: non-empty ``compiler_options`` (never silently ignored).
    Usable as ``@jit``, ``@jit(static_argnums=0)`` or
    ``@functools.partial(jit, static_argnums=0)``.
    """
    if compiler_options:
        raise NotImplementedError(
            f"jit(compiler_options={dict(compiler_options)!r}): these are XLA's compiler "
            f"flags, and jaxlite's compilers take none of them.")
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 keep_unused=keep_unused, device=device, backend=backend,
                                 inline=inline, in_shardings=in_shardings,
                                 out_shardings=out_shardings)
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                      keep_unused, device, backend, inline, in_shardings, out_shardings)


def eval_shape(fun, *args, **kwargs):
    """Shapes and dtypes of ``fun(*args, **kwargs)`` as a pytree of ShapeDtypeStruct,
    without computing anything (``jax.eval_shape``).  Arguments may be arrays or
    ShapeDtypeStructs."""
    return JitWrapped(fun).eval_shape(*args, **kwargs)


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
    """Returns a function that traces ``fun`` and gives its ClosedJaxpr, printable in
    JAX's notation (``jax.make_jaxpr``).

    ``axis_env``: a sequence of ``(axis_name, size)`` pairs binding named axes while
    tracing, so ``fun`` may use the collectives (``lax.psum(x, 'i')``, ``all_gather``,
    ``ppermute``, ``axis_size``, ...): they stay equations of the program, as in JAX, and
    ``psum`` of a constant is folded (``psum(1., 'i')`` is the axis size).  Raises
    ValueError for an entry that is not a pair, TypeError/ValueError for a size that is
    not a non-negative int (JAX does not check it).
    """
    wrapped = JitWrapped(fun, static_argnums=static_argnums)
    env = _axis_env(axis_env)

    def make(*args, **kwargs):
        lowered = _under_axis_env(env, lambda: wrapped.lower(*args, **kwargs))
        # over arguments on a mesh with Explicit axes the variables print with their
        # sharding types (f32[8@x,4]); this trace is make_jaxpr's own, not a cached one
        for v, typed in typed_avals(lowered.closed_jaxpr, lowered._mesh_types).items():
            v.aval = typed
        if return_shape:
            return lowered.closed_jaxpr, lowered.out_info
        return lowered.closed_jaxpr
    make.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    return _api_boundary(make)


def _axis_env(axis_env) -> list:
    """``make_jaxpr``'s ``axis_env`` checked: ``[(name, size), ...]``."""
    if axis_env is None:
        return []
    env = []
    for entry in axis_env:
        name, size = entry          # ValueError for an entry that is not a pair (JAX's)
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"make_jaxpr: the size of axis {name!r} in axis_env must be an "
                            f"int, got {size!r}")
        if size < 0:
            raise ValueError(f"make_jaxpr: the size of axis {name!r} in axis_env must be "
                             f"non-negative, got {size}")
        env.append((name, int(size)))
    return env


def _under_axis_env(env, thunk):
    """``thunk()`` with the named axes of ``env`` bound: each is an enclosing vmap (of its
    size) over nothing but a placeholder, and the trace inside is a per-device program
    (``manual_tracing``, as a shard_map body's), so its collectives over those names stay
    equations instead of being computed over examples."""
    if not env:
        return thunk()
    from ..core import batching
    from .vmap import vmap
    box = {}

    def innermost(dummy):
        state = batching.manual_tracing
        state.depth += 1
        try:
            box["out"] = thunk()
        finally:
            state.depth -= 1
        return dummy
    fn = innermost
    for name, _ in reversed(env):
        fn = vmap(fn, axis_name=name)
    fn(np.zeros(tuple(size for _, size in env), np.float32))
    return box["out"]


def _staging_types(leaves):
    """``(mesh, in_specs, meshed)`` for tracing a call on ``leaves`` whose arrays lie on a
    mesh (ShardedArrays, ShapeDtypeStructs with a NamedSharding, or any argument under
    ``set_mesh``), else None: what ``typeof`` inside the trace types values by (JAX's
    sharding types; ``core/staging.py`` ``JaxprBuilder``)."""
    mesh = None
    for x in leaves:
        sh = getattr(x, "sharding", None) if type(x) is not ArrayImpl else None
        if type(sh) is NamedSharding and (type(x) is not ShardedArray or on_mesh(x)):
            mesh = sh.mesh
            break
    if mesh is None:
        mesh = _mesh_context.mesh
        if mesh is None:
            return None
        return mesh, [None] * len(leaves), [False] * len(leaves)
    from ..core.sharded import spec_tuple
    specs, meshed = [], []
    for x in leaves:
        sh = getattr(x, "sharding", None) if type(x) is not ArrayImpl else None
        on = type(sh) is NamedSharding and sh.mesh.abstract_mesh == mesh.abstract_mesh \
            and (type(x) is not ShardedArray or on_mesh(x))
        specs.append(spec_tuple(sh, len(x.shape)) if on else None)
        meshed.append(on)
    return mesh, specs, meshed


def _used_donations(compiled: Compiled, donate):
    """The donated flat positions whose inputs the program uses (all of them with
    ``keep_unused=True``): as JAX, jit drops an argument the program does not use before
    donation, so a donated argument it ignores stays alive."""
    if not donate or getattr(compiled._lowered._wrapped, "_keep_unused", False):
        return donate
    used = compiled.__dict__.get("_used_inputs")
    if used is None:
        jaxpr = compiled._lowered.closed_jaxpr.jaxpr
        seen = {id(v) for e in jaxpr.eqns for v in e.invars}
        seen |= {id(v) for v in jaxpr.outvars}
        used = compiled._used_inputs = frozenset(
            k for k, v in enumerate(jaxpr.invars) if id(v) in seen)
    kept = tuple(k for k in donate if k in used)
    return kept or None


def _run_compiled(compiled: Compiled, leaves, names_fn, donate=None):
    """Runs a compiled program on concrete leaves: the device it runs on chosen here (its
    committed arguments', ``jit(device=)``'s, else the default), the run itself by that
    device's backend (``Backend.run_compiled``: transfers, execution, temporaries'
    accounting, the outputs as Arrays).  ``donate``: flat positions of donated Array
    leaves (``JitWrapped._donated``)."""
    what = f"jit of {compiled._fun_name}"
    donate = _used_donations(compiled, donate)
    device = compiled._lowered._wrapped._device
    if device is None:
        device, committed = run_device(leaves, what, names_fn)
    else:           # jit(..., device=d): run on d, commit the results
        committed = True
    return device.backend.run_compiled(compiled, leaves, Placement(
        device, committed, donate, what,
        None if _eager._fp_checks is None else _fp_check(compiled)))


def _fp_check(compiled):
    """The output check of a run of ``compiled`` (``Placement.check``): None unless
    ``jax_debug_nans`` / ``jax_debug_infs`` is on."""
    if _eager._fp_checks is None:
        return None
    from .fp_checks import check_jit_outputs
    return functools.partial(check_jit_outputs, compiled)


def _prefix_shardings(shardings, tree_of, n: int, what: str) -> list:
    """One sharding (or None) per flat leaf from ``shardings``, a pytree prefix of the
    arguments (``tree_of``: the pytree); a single sharding applies to every leaf.
    ValueError when it is no prefix (naming ``what``).  A PartitionSpec means a
    NamedSharding over the current mesh (``set_mesh``; RuntimeError without one, as JAX);
    a leaf of another type is a TypeError."""
    from ..sharding import P, Sharding
    if shardings is None or isinstance(shardings, (Sharding, P)):
        return [_named_of(shardings, what)] * n
    if not isinstance(shardings, (tuple, list, dict)):
        raise TypeError(f"{what} leaf specifications are expected to be PartitionSpec "
                        f"instances or None, but got {shardings}")
    try:
        return [_named_of(s, what) for s in optree.tree_flatten(
            tree_of, none_is_leaf=False, namespace=NAMESPACE)[1].flatten_up_to(shardings)]
    except (ValueError, TypeError):
        pass
    out: list = []

    def walk(sh, t):
        if sh is None or isinstance(sh, (Sharding, P)):
            sh = _named_of(sh, what)
            out.extend([sh] * len(_flatten(t)[0]))
            return
        if isinstance(sh, (tuple, list)) and isinstance(t, (tuple, list)) and \
                len(sh) == len(t):
            for a, b in zip(sh, t):
                walk(a, b)
            return
        if isinstance(sh, dict) and isinstance(t, dict) and set(sh) == set(t):
            for k in t:
                walk(sh[k], t[k])
            return
        raise ValueError(f"jit {what} must be a sharding or a pytree prefix of the "
                         f"{'arguments' if what == 'in_shardings' else 'outputs'}: got "
                         f"{shardings!r}")
    walk(shardings, tree_of)
    return out


def _named_of(s, what: str):
    """A ``shardings`` leaf as a Sharding (a PartitionSpec over the current mesh) or None."""
    from ..sharding import P, Sharding, _state
    if s is None or isinstance(s, Sharding):
        return s
    if isinstance(s, P):
        mesh = _state().mesh
        if mesh.empty:
            raise RuntimeError(
                f"jit requires a non-empty mesh in context if you are passing "
                f"`PartitionSpec`s to {what}. You can define a context mesh via "
                f"`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to {what} and "
                f"then the mesh context manager is not required.")
        return NamedSharding(mesh, s)
    raise TypeError(f"{what} leaf specifications are expected to be PartitionSpec "
                    f"instances or None, but got {s}")


def _run_sharded(entry, leaves, names_fn, shardings, donate=None):
    """A call whose arguments include Arrays sharded over several devices, or that gives
    ``in_shardings``/``out_shardings``: the program runs on the arguments' global values
    and each output is placed by ``out_shardings``, else by the sharding propagation of
    its program (the primitives' sharding rules), else replicated over the mesh.  Decided
    here: the arguments placed by ``in_shardings``, the mesh, the outputs' shardings; run
    by the backend of the mesh's devices (``Backend.run_compiled`` with that Placement;
    core/run.py for the CPU: the partitioned program, across processes as well).

    Donated sharded arguments (``donate``: their flat positions) are deleted once the
    results exist, as JAX deletes them whatever their outputs' sizes.

    Raises ValueError for arguments on different meshes, or a committed argument whose
    sharding differs from its ``in_shardings`` entry (naming both)."""
    if entry.partitions and shardings is None and _mesh_context.mesh is None and \
            _sharded_core._mpi._world is not None:
        # a jitted shard_map over several processes called again with the same shardings
        runner = entry.partitions.get(("across",) + tuple(
            x.sharding if type(x) is ShardedArray else None for x in leaves))
        if runner is not None:
            from ..tree_util import data_flatten as tree_flatten
            return tree_flatten(runner(leaves))[0]
    from ..core.sharded import mesh_devices_check
    from ..sharding import NamedSharding
    what = f"jit of {entry.compiled._fun_name}"
    donate = _used_donations(entry.compiled, donate)
    given = leaves
    in_sh, out_sh = shardings if shardings is not None else (None, None)
    # as JAX: results of arguments sharded on an Explicit mesh (or of a constraint there)
    # have specs as long as their rank; arguments placed by in_shardings are not typed so
    typed = any(type(x) is ShardedArray for x in leaves) or \
        bool(entry.constraint_mesh is not None and entry.constraint_mesh.explicit_axes)
    if in_sh is not None:
        names = names_fn()
        args_tree, kw_tree = entry.compiled._lowered.in_tree.unflatten(
            list(range(len(leaves))))
        if kw_tree:
            raise ValueError("pjit does not support kwargs when in_shardings is specified.")
        wanted = _prefix_shardings(in_sh, args_tree, len(leaves), "in_shardings")
        placed = []
        for k, (x, w) in enumerate(zip(leaves, wanted)):
            if w is not None:
                have = x.sharding if type(x) in (ArrayImpl, ShardedArray) and \
                    x._committed else None
                if have is not None and _same_layout_elsewhere(have, w, x.aval.ndim):
                    have = None     # as JAX: the same layout on other devices moves there
                if have is not None and not _same_sharding(have, w, x.aval.ndim):
                    raise ValueError(
                        f"Sharding passed to jit does not match the sharding on the "
                        f"respective arg. Got jit sharding: {w} and arg sharding: {have} "
                        f"for argument {names[k]} of {what} with shape "
                        f"{x.aval.str_short()}. Move it with jaxlite.device_put(x, {w}) "
                        f"first.")
                if have is None:
                    from ..core.placement import device_put
                    shape = np.shape(x)
                    if isinstance(w, NamedSharding) and len(w.spec) <= len(shape):
                        # as JAX: jit reports a dimension its in_sharding does not divide
                        # as IndivisibleError, ahead of device_put's typed ValueError
                        _sharded_core.check_shardable(w, ShapedArray(shape, np.float32),
                                                      what)
                    x = device_put(x, w)
            placed.append(x)
        leaves = placed
    sharded = [x for x in leaves if type(x) is ShardedArray]
    sharding0 = mesh_devices_check(leaves, what) if sharded else None
    ctx = _mesh_context.mesh
    if ctx is not None:
        # under set_mesh (as JAX): arguments off its devices raise; results of arguments
        # on no mesh live on it, typed there over Explicit axes
        from ..core.sharded import context_devices_check
        from ..sharding import P
        context_devices_check(ctx, leaves, what, names_fn())
        if sharding0 is None:
            sharding0 = NamedSharding(ctx, P())
        typed = typed or bool(ctx.explicit_axes)
    if sharding0 is None and entry.constraint_mesh is not None:
        from ..sharding import P
        sharding0 = NamedSharding(entry.constraint_mesh, P())
    from ..core.sharded import spans_processes
    across = sharding0 is not None and spans_processes(sharding0.mesh)
    if across and _is_manual(entry.compiled._lowered._wrapped):
        # a jitted shard_map over several processes: run as the shard_map runs there
        # (its runner for these shardings kept, so later calls skip its checks)
        from ..tree_util import data_flatten as tree_flatten
        from .shard_map import _context as _sm_context
        if entry.partitions is None:
            entry.partitions = {}
        key = ("across",) + tuple(x.sharding if type(x) is ShardedArray else None
                                  for x in leaves)
        args, kwargs = entry.compiled._lowered.in_tree.unflatten(leaves)
        _sm_context.across_last = None
        out = entry.compiled._lowered._wrapped.fun(*args, **kwargs)
        if _sm_context.across_last is not None and not kwargs and \
                _mesh_context.mesh is None and shardings is None:
            entry.partitions[key] = _sm_context.across_last
        return tree_flatten(out)[0]
    closed = entry.compiled._lowered.closed_jaxpr
    out_avals = [v.aval for v in closed.jaxpr.outvars]
    n_out = len(out_avals)
    if out_sh is not None:
        targets = _prefix_shardings(out_sh, entry.out_tree.unflatten(
            list(range(n_out))), n_out, "out_shardings")
    else:
        targets = [None] * n_out
    if sharding0 is None and any(isinstance(t, NamedSharding) for t in targets):
        # unsharded arguments: the other outputs land on the mesh of out_shardings
        from ..sharding import P
        sharding0 = NamedSharding(next(t for t in targets if isinstance(t, NamedSharding))
                                  .mesh, P())
    pkey = tuple(x.sharding if type(x) is ShardedArray else None for x in leaves) + \
        (typed,)
    if any(t is None for t in targets) and sharding0 is not None:
        if entry.placements is None:
            entry.placements = {}
        guessed = entry.placements.get(pkey)
        if guessed is None:
            from ..core.sharded import as_input_shardings
            guessed = entry.placements[pkey] = as_input_shardings(_propagated_shardings(
                closed, _leaf_specs(leaves, sharding0.mesh), sharding0.mesh, typed,
                [on_mesh(x) for x in leaves]), leaves, out_avals)
        targets = [g if t is None else t for t, g in zip(targets, guessed)]
    spmd = None
    if sharding0 is not None and not _is_manual(entry.compiled._lowered._wrapped):
        if entry.partitions is None:
            entry.partitions = {}
        # the partitioned program, built once per placement by the backend (core/run.py)
        spmd = functools.partial(_spmd_of_leaves, closed, leaves, targets, sharding0.mesh,
                                 entry.compiled._fun_name, across)
    manual = None
    if sharding0 is not None and _is_manual(entry.compiled._lowered._wrapped):
        # a jitted shard_map: its per-device program, for a platform lowering it as such
        low = entry.compiled._lowered
        if entry.partitions is None:
            entry.partitions = {}
        manual = functools.partial(low._wrapped.fun.per_device, low.in_tree,
                                   [v.aval for v in closed.jaxpr.invars], sharding0.mesh)
    dead = [given[k] for k in donate or () if type(given[k]) is ShardedArray]
    mesh = sharding0.mesh if sharding0 is not None else None
    backend = (mesh.devices.flat[0] if mesh is not None else get_default_device()).backend
    return backend.run_compiled(entry.compiled, leaves, Placement.sharded(
        entry.compiled._lowered._wrapped._device, what, _fp_check(entry.compiled),
        out_shardings=targets, mesh=mesh, across=across, spmd=spmd,
        key=pkey + tuple(targets), cache=entry.partitions, names=names_fn,
        delete_after=dead, manual=manual))


def _partition_for(closed, in_specs, targets, mesh):
    """The SPMD partition (``compiler/passes/spmd_partition.py``) of ``closed`` over
    ``mesh`` for arguments laid out by ``in_specs`` and outputs by ``targets`` (those on
    ``mesh``; any other output replicated, placed by the caller); None when the program
    must run once (an effect or a host callback in it)."""
    from ..compiler.passes.spmd_partition import partition, partitionable
    from ..core.sharded import spec_tuple
    if partitionable(closed) is not None:
        return None
    out_specs = [spec_tuple(t, v.aval.ndim) if isinstance(t, NamedSharding) and
                 t.mesh == mesh else ((),) * v.aval.ndim
                 for t, v in zip(targets, closed.jaxpr.outvars)]
    # the compiler's rewrites that change what communicates run first: a sum over a
    # batched product's batch dimension (shard_map's data-parallel gradient, expanded)
    # becomes one product contracting over it, partitioned as ONE all-reduce
    from ..compiler.passes import cse, dce, fold_batch_dot_sums, inline_calls
    closed = dce(fold_batch_dot_sums(cse(inline_calls(closed))))
    return partition(closed, in_specs, out_specs, dict(mesh.shape))


def _spmd_of_leaves(closed, leaves, targets, mesh, name, across):
    """``_spmd_runner`` for arguments ``leaves`` (their specs over ``mesh``)."""
    return _spmd_runner(closed, _leaf_specs(leaves, mesh), targets, mesh, name, across)


def _spmd_runner(closed, in_specs, targets, mesh, name, across=False):
    """A jitted function of the arguments' global values that runs ``closed`` as the
    partitioner's per-device program (``_partition_for``) over ``mesh``: each device's
    shards from its input shards plus explicit collectives, batched over the mesh axes as
    ``shard_map`` runs its body.  None when the program must run once.

    ``across``: the mesh spans several processes; the function then takes and returns
    this process's shards stacked (core/sharded.py ``local_stack``)."""
    from ..core.sharded import to_pspec
    from ..tree_util import data_flatten as tree_flatten
    from .shard_map import _ShardMapped
    part = _partition_for(closed, in_specs, targets, mesh)
    if part is None:
        return None
    sm = _ShardMapped(part.per_device, mesh, None, [to_pspec(s) for s in part.out_specs],
                      frozenset(), False)
    in_tree = tree_flatten(tuple(range(len(in_specs))))[1]
    box = None
    if across:
        from ..core.sharded import process_box
        box = process_box(mesh)
    args = ", ".join(v.aval.str_short() for v in closed.jaxpr.invars)
    expand = sm._expanded(mesh, frozenset(mesh.axis_names), in_tree, list(in_specs), {},
                          frozenset(), box=box, where=f"jit of {name} on ({args})")

    def spmd(*xs):
        return expand(*xs)[0]
    spmd.__name__ = f"spmd_{name}"
    staged = []

    def runner(*vals):
        # compiled once and run as a plain program (its own sharding constraints, from
        # equations run whole, must not send it back through _run_sharded)
        if not staged:
            staged.append(jit(spmd).lower(*vals).compile())
        return _run_compiled(staged[0], list(vals), lambda: None)
    runner._partition = part
    return runner


def _is_manual(wrapped) -> bool:
    """Whether the jitted function is a ``shard_map``: its program is already the
    per-device program (its collectives written by the user, expanded over the mesh), so
    it is not partitioned again (as JAX leaves manual code alone)."""
    from .shard_map import _ShardMapped
    return isinstance(getattr(wrapped, "fun", None), _ShardMapped)


def _lowered_partition(compiled):
    """The SPMD partition a call of ``compiled`` (``jit(f).lower(args).compile()``) runs,
    from the arguments' shardings recorded at lowering, ``in_shardings``/``out_shardings``
    and the program's sharding constraints; None for a program on one device."""
    if _is_manual(compiled._lowered._wrapped):
        return None
    layout = _lowered_shardings(compiled)
    if layout is None:
        return None
    mesh, _, in_specs, targets = layout
    return _partition_for(compiled._lowered.closed_jaxpr, in_specs, targets, mesh)


def _lowered_shardings(compiled):
    """``(mesh, arg_shardings, in_specs, out_shardings)`` of a call of ``compiled`` over
    a mesh: per flat argument its Sharding (recorded at lowering or given by
    ``in_shardings``; None for one on no mesh) and spec, per flat output its Sharding
    (``out_shardings``, else the sharding propagation's).  None for a program on one
    device (no sharded argument, mesh sharding or sharding constraint)."""
    from ..primitives.sharding_constraint import constraint_mesh
    low = compiled._lowered
    closed = low.closed_jaxpr
    avals = closed.in_avals
    shs = list(getattr(low, "_arg_shardings", None) or [None] * len(avals))
    typed = any(isinstance(s, NamedSharding) for s in shs)
    in_sh, out_sh = low._wrapped._shardings or (None, None)
    if in_sh is not None:
        args_tree, _ = low.in_tree.unflatten(list(range(len(avals))))
        wanted = _prefix_shardings(in_sh, args_tree, len(avals), "in_shardings")
        shs = [w if isinstance(w, NamedSharding) else s for s, w in zip(shs, wanted)]
    n_out = len(closed.jaxpr.outvars)
    targets = [None] * n_out
    if out_sh is not None:
        targets = _prefix_shardings(out_sh, low.out_tree.unflatten(list(range(n_out))),
                                    n_out, "out_shardings")
    cm = constraint_mesh(closed)
    named = [s for s in shs + targets if isinstance(s, NamedSharding)]
    mesh = named[0].mesh if named else cm
    if mesh is None:
        return None
    typed = typed or bool(cm is not None and cm.explicit_axes)
    from ..core.sharded import spec_tuple
    in_specs = []
    for s, a in zip(shs, avals):
        sp = spec_tuple(s, a.ndim) if isinstance(s, NamedSharding) else ((),) * a.ndim
        in_specs.append(sp if all(x in mesh.shape for e in sp for x in e)
                        else ((),) * a.ndim)
    if any(t is None for t in targets):
        guessed = _propagated_shardings(closed, in_specs, mesh, typed,
                                        [isinstance(s, NamedSharding) for s in shs])
        targets = [g if t is None else t for t, g in zip(targets, guessed)]
    return mesh, shs, in_specs, targets


def _leaf_specs(leaves, mesh) -> list:
    """The spec (a tuple of mesh-axis tuples per dimension) of each argument of a sharded
    call: a sharded Array's own over ``mesh``'s axes; anything else replicated (the
    partitioned program reads every argument as its global value)."""
    from ..core.sharded import spec_tuple
    out = []
    for x in leaves:
        sh = getattr(x, "sharding", None) if type(x) is ShardedArray else None
        nd = x.aval.ndim if isinstance(x, ArrayImpl) else np.ndim(x)
        sp = spec_tuple(sh, nd) if sh is not None else ((),) * nd
        if any(a not in mesh.shape for e in sp for a in e):
            sp = ((),) * nd
        out.append(sp)
    return out


def _propagated_shardings(closed, in_specs, mesh, typed: bool = False,
                          meshed=None) -> list:
    """The output shardings of program ``closed`` over arguments laid out by ``in_specs``
    on ``mesh``, from the sharding propagation pass (each primitive's sharding rule).
    On a mesh with Explicit axes (``typed``) the program is first checked by JAX's typing
    rules (raises ShardingTypeError; ``meshed``: per argument, whether it lives on the
    mesh, see ``compiler/passes/sharding_types.py``), whose result types then win."""
    from ..compiler.passes.sharding_propagation import propagate
    specs, _ = propagate(closed, in_specs, dict(mesh.shape))
    if typed:       # as JAX: on an Explicit mesh a result's spec is as long as its rank
        from ..compiler.passes.sharding_types import typed_out_specs
        specs = typed_out_specs(closed, in_specs, mesh, specs, meshed=meshed)
        from ..core.sharded import result_pspec
        return [NamedSharding(mesh, result_pspec(mesh, sp)) for sp in specs]
    from ..core.sharded import to_pspec
    return [NamedSharding(mesh, to_pspec(sp)) for sp in specs]


def _same_layout_elsewhere(have, want, ndim: int) -> bool:
    """Whether NamedShardings ``have`` and ``want`` lay an array of rank ``ndim`` out
    alike (meshes of the same axes, sizes and types, the same spec) over other devices:
    jit then moves a committed argument to ``want`` instead of refusing it (as JAX)."""
    if not (isinstance(have, NamedSharding) and isinstance(want, NamedSharding)):
        return False
    hm, wm = have.mesh, want.mesh
    if hm is wm or getattr(hm, "abstract_mesh", None) is not \
            getattr(wm, "abstract_mesh", None):
        return False
    from ..core.sharded import spec_tuple
    return spec_tuple(have, ndim) == spec_tuple(want, ndim) and \
        set(have._device_assignment) != set(want._device_assignment)


def _same_sharding(a, b, ndim: int) -> bool:
    try:
        return a == b or a.is_equivalent_to(b, ndim)
    except (AttributeError, TypeError, ValueError):
        return False


def _run_staged(compiled: Compiled, leaves, names_fn, donate=None):
    """A call of ``jit(f).lower(...).compile()``: as the jitted function's own call, placed
    by its ``in_shardings``/``out_shardings``, sharded arguments and sharding constraints
    when it has any (``_run_sharded``), else ``_run_compiled``."""
    shardings = compiled._lowered._wrapped._shardings
    recorded = getattr(compiled._lowered, "_arg_shardings", None)
    if shardings is None and recorded is not None and (
            any(s is not None for s in recorded) or
            any(type(x) is ShardedArray for x in leaves)):
        leaves = _check_compiled_shardings(compiled, leaves, recorded, names_fn)
    entry = compiled.__dict__.get("_sharded_entry")
    if entry is None:
        entry = compiled._sharded_entry = _CacheEntry(compiled, compiled._lowered.out_tree)
    if shardings is not None or entry.constraint_mesh is not None or \
            any(type(x) is ShardedArray for x in leaves):
        return _run_sharded(entry, leaves, names_fn, shardings)
    return _run_compiled(compiled, leaves, names_fn, donate)


def _check_compiled_shardings(compiled, leaves, recorded, names_fn) -> list:
    """The arguments of a call of ``compiled`` (lowered for arguments whose shardings were
    ``recorded``), host and uncommitted ones placed by those shardings.

    Raises ValueError (JAX's message, listing every mismatch) for a sharded or committed
    argument whose sharding differs from the one it was compiled for."""
    from ..sharding import SingleDeviceSharding
    from ..core.placement import device_put
    out, bad = [], []
    for k, (x, want) in enumerate(zip(leaves, recorded)):
        sharded = type(x) is ShardedArray
        have = x.sharding if sharded or (type(x) is ArrayImpl and x._committed) else None
        if want is None:
            if sharded:
                bad.append((k, x, have, SingleDeviceSharding(get_default_device())))
        elif have is None:
            x = device_put(x, want)
        elif not _same_sharding(have, want, x.aval.ndim):
            bad.append((k, x, have, want))
        out.append(x)
    if bad:
        names = names_fn() or [f"args[{k}]" for k in range(len(leaves))]
        lines = [f"Computation was compiled for input shardings that disagree with the "
                 f"shardings of arguments passed to it. Here are the {len(bad)} mismatches:"]
        for k, x, have, want in bad:
            shape = ",".join(str(n) for n in x.aval.shape)
            lines.append(f"Argument {names[k]} with shape {np.dtype(x.aval.dtype).name}"
                         f"[{shape}]:\n"
                         f"  Passed sharding: {have}\n  Required sharding: {want}")
        raise ValueError("\n".join(lines))
    return out


Compiled._run_impl = staticmethod(_run_staged)
Compiled._partition_impl = staticmethod(_lowered_partition)


def _jitted_across(fun, out_shardings):
    return jit(fun) if out_shardings is None else jit(fun, out_shardings=out_shardings)


_sharded_core.jitted = _jitted_across
