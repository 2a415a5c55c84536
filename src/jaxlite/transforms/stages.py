"""The stages of ``jit`` a user can hold, as ``jax.stages``: ``Wrapped`` (what ``jit``
returns), ``Traced`` (the program traced for one signature), ``Lowered`` (the program as
handed to the compiler) and ``Compiled`` (optimised program + executable).

``jit(f).lower(x).as_text()`` prints the traced program; ``.compile().as_text()`` the
optimised one and the executable's source; ``.cost_analysis()`` flops and bytes.
"""
from __future__ import annotations

import abc

from .._traceback import api_boundary as _api_boundary
from ..compiler.pipeline import compile_jaxpr, cost_analysis
from ..core.avals import ShapedArray
from ..dtypes import ExtendedDType
from ..ir.jaxpr import ClosedJaxpr
from ..tree_util import data_flatten as tree_flatten, tree_unflatten


class ShapeDtypeStruct:
    """Shape and dtype of an array without data (``jax.ShapeDtypeStruct``); the dtype may
    be a typed key dtype (``jax.random.key(0).dtype``), which ``eval_shape`` and ``lower``
    trace as key arrays."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type=False, sharding=None):
        import numpy as np
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, ExtendedDType) else np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding    # a Sharding (what lower/eval_shape lay it out by) or None

    @classmethod
    def like(cls, x) -> "ShapeDtypeStruct":
        """The ShapeDtypeStruct of ``x`` (mirrors ``jax.ShapeDtypeStruct.like``): its
        shape, dtype and weak type.  ``x`` is an Array, a traced value, a NumPy value, a
        Python scalar (weakly typed), an abstract value or a ShapeDtypeStruct.

        Raises:
          TypeError: ``x`` has no shape and dtype (a list, a str, None).
        """
        import numpy as np
        from ..core.trace import get_aval
        aval = getattr(x, "aval", None)
        if isinstance(aval, ShapedArray):
            return cls(aval.shape, aval.dtype, weak_type=aval.weak_type)
        if isinstance(x, (ShapedArray, ShapeDtypeStruct)):
            return cls(x.shape, x.dtype, weak_type=x.weak_type)
        if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
            a = get_aval(x)
            return cls(a.shape, a.dtype, weak_type=a.weak_type)
        if isinstance(x, str) or x is None:
            raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")
        if not hasattr(x, "dtype"):
            raise TypeError(f"Cannot interpret value of type {type(x)} as an abstract "
                            f"array; it does not have a dtype attribute")
        return cls(np.shape(x), x.dtype, weak_type=bool(getattr(x, "weak_type", False)))

    @property
    def aval(self):
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (
            other.shape, other.dtype) and self.sharding == other.sharding

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        sh = "" if self.sharding is None else f", sharding={self.sharding!r}"
        w = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sh}{w})"


def _resolved_mesh_types(builder):
    mt = getattr(builder, "mesh_types", None)
    if callable(mt):        # a nested trace's types, derived on first use
        mt = builder.mesh_types = mt()
    return mt


def staged_tys(tracers) -> tuple | None:
    """``(mesh, [Ty or None per tracer])``: JAX's sharding types of values being staged
    (DynamicJaxprTracers of one trace whose arguments lie on a mesh), from the typing
    rules of Explicit sharding over the equations staged so far; None when the trace has
    no mesh.  One walk of the program for all of them.  Raises ShardingTypeError where
    those equations are ill-typed."""
    builder = tracers[0]._trace.main.payload
    mt = _resolved_mesh_types(builder)
    if mt is None:
        return None
    mesh, in_specs, meshed = mt
    if not mesh.explicit_axes:
        return mesh, [None] * len(tracers)
    from ..compiler.passes.sharding_types import check_explicit
    from ..ir.jaxpr import Jaxpr
    jaxpr = Jaxpr(builder.constvars(), builder.invars, builder.eqns,
                  [])
    env: dict = {}
    check_explicit(ClosedJaxpr(jaxpr, builder.const_values()), in_specs,
                   dict(mesh.shape), mesh.explicit_axes, meshed=meshed, env=env)
    return mesh, [env.get(t._var) for t in tracers]


def traced_mesh_types(leaves):
    """``(mesh, in_specs, meshed)`` for tracing a nested program (a jit inside a jit) on
    ``leaves``, from the sharding types of the enclosing trace's values (``staged_tys``),
    or None when they are on no mesh."""
    from ..core.staging import DynamicJaxprTracer
    staged = [x for x in leaves if type(x) is DynamicJaxprTracer]
    if not staged:
        return None
    res = staged_tys(staged)
    if res is None:
        return None
    mesh, tys = res
    by_id = {id(x): t for x, t in zip(staged, tys)}
    specs, meshed = [], []
    for x in leaves:
        t = by_id.get(id(x))
        specs.append(None if t is None else t.spec)
        meshed.append(bool(t is not None and t.meshed))
    return mesh, specs, meshed


def typed_avals(closed: ClosedJaxpr, mesh_types, concrete: bool = True) -> dict:
    """``{var: ShardedShapedArray}`` for the top-level variables of ``closed`` traced over
    arguments on a mesh with Explicit axes (``mesh_types``: ``(mesh, in_specs, meshed)``,
    see ``core/staging.py``): each one's JAX sharding type, where the typing rules decide
    it (over the mesh itself, or its abstract mesh unless ``concrete``).  Empty otherwise.
    Raises ShardingTypeError for an ill-typed program."""
    if mesh_types is None or not mesh_types[0].explicit_axes:
        return {}
    from ..compiler.passes.sharding_types import check_explicit
    from ..core.avals import ShardedShapedArray
    from ..sharding import NamedSharding, PartitionSpec
    mesh, in_specs, meshed = mesh_types
    env: dict = {}
    check_explicit(closed, in_specs, dict(mesh.shape), mesh.explicit_axes, meshed=meshed,
                   env=env)
    out = {}
    for v, t in env.items():
        a = getattr(v, "aval", None)
        if t is None or a is None or len(t.spec) != len(a.shape):
            continue
        entries = [None if not e else (e[0] if len(e) == 1 else tuple(e)) for e in t.spec]
        out[v] = ShardedShapedArray(a.shape, a.dtype, a.weak_type, NamedSharding(
            mesh if concrete else mesh.abstract_mesh, PartitionSpec(*entries)),
            tuple(tuple(e) for e in t.spec))
    return out


class Wrapped(abc.ABC):
    """A function wrapped by ``jit`` (``jax.stages.Wrapped``): call it, or stage it with
    ``trace``/``lower``.  ``isinstance(jax.jit(f), Wrapped)`` is True; other transformed
    functions (``grad(f)``) are not Wrapped, as in JAX."""

    @abc.abstractmethod
    def __call__(self, *args, **kwargs):
        """Runs the function (compiling it for new signatures)."""

    @abc.abstractmethod
    def trace(self, *args, **kwargs) -> "Traced":
        """Traces it for these arguments."""

    @abc.abstractmethod
    def lower(self, *args, **kwargs) -> "Lowered":
        """Traces and lowers it for these arguments."""


class ArgInfo:
    """The abstract value of one argument of a staged function and whether it is donated
    (``jax.stages.ArgInfo``): ``shape``, ``dtype``, ``donated``."""

    __slots__ = ("_aval", "donated")

    def __init__(self, _aval, donated: bool):
        self._aval = _aval
        self.donated = bool(donated)

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    def __eq__(self, other):
        return isinstance(other, ArgInfo) and (self._aval, self.donated) == (other._aval,
                                                                            other.donated)

    def __hash__(self):
        return hash((self._aval, self.donated))

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


#: options for ``Lowered.compile(compiler_options=...)``: a dict of option name to value
CompilerOptions = dict


def _args_info(lowered):
    """The pytree ``(args, kwargs)`` of ArgInfo of a staged call's dynamic arguments
    (donated: named by the wrapper's ``donate_argnums``/``donate_argnames``)."""
    wrapped = lowered._wrapped
    nums = set(getattr(wrapped, "donate_argnums", ()) or ())
    names = set(getattr(wrapped, "donate_argnames", ()) or ())
    avals = iter(lowered.closed_jaxpr.in_avals)
    marks = [object() for _ in range(lowered.in_tree.num_leaves)]
    dyn_args, dyn_kw = tree_unflatten(lowered.in_tree, marks)
    static_pos = {i for i, _ in lowered._key[2]}
    positions = [i for i in range(len(dyn_args) + len(static_pos)) if i not in static_pos]

    def info(sub, donated):
        from ..tree_util import data_structure as tree_structure
        tree = tree_structure(sub)
        return tree_unflatten(tree, [ArgInfo(next(avals), donated)
                                     for _ in range(tree.num_leaves)])
    args = tuple(info(a, p in nums) for a, p in zip(dyn_args, positions))
    kw = {k: info(v, k in names) for k, v in dyn_kw.items()}
    return args, kw


class Traced:
    """A function traced for one input signature (``jax.stages.Traced``, what
    ``jax.jit(f).trace(*args)`` returns): its program ``jaxpr`` (a ClosedJaxpr),
    ``in_avals``/``args_info`` (pytrees ``(args, kwargs)``), ``out_avals``/``out_info``,
    and ``lower()`` for the next stage."""

    def __init__(self, lowered: "Lowered"):
        self._lowered = lowered

    @property
    def jaxpr(self):
        return self._lowered.closed_jaxpr

    @property
    def fun_name(self) -> str:
        return self._lowered._wrapped.__name__

    @property
    def in_tree(self):
        return self._lowered.in_tree

    @property
    def out_tree(self):
        return self._lowered.out_tree

    @property
    def in_avals(self):
        return tree_unflatten(self._lowered.in_tree, list(self.jaxpr.in_avals))

    @property
    def out_avals(self):
        return tree_unflatten(self._lowered.out_tree, list(self.jaxpr.out_avals))

    @property
    def out_info(self):
        return self._lowered.out_info

    @property
    def args_info(self):
        return _args_info(self._lowered)

    def lower(self, *, lowering_platforms=None) -> "Lowered":
        """The Lowered stage of this trace (no new tracing)."""
        return self._lowered


class Lowered:
    """A traced program for one input signature (``jax.stages.Lowered``)."""

    _mesh_types = None      # (mesh, in_specs, meshed) of arguments on a mesh (jit.lower)
    _device = None          # the device a call off any mesh runs on (jit.lower)

    def __init__(self, wrapped, closed: ClosedJaxpr, in_tree, out_tree, key, arg_names):
        self._wrapped = wrapped
        self.closed_jaxpr = closed
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._key = key
        self._arg_names = arg_names

    @property
    def out_info(self):
        """Pytree of ShapeDtypeStruct of the outputs; over arguments on a mesh with
        Explicit axes each carries its sharding type (a NamedSharding over the abstract
        mesh), as JAX's ``eval_shape``."""
        return self._out_info(concrete=True)

    def _out_info(self, concrete: bool):
        outvars = self.closed_jaxpr.jaxpr.outvars
        typed = typed_avals(self.closed_jaxpr, self._mesh_types, concrete)
        return tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, a.weak_type,
                             getattr(typed.get(v), "sharding", None))
            for v, a in zip(outvars, self.closed_jaxpr.out_avals)])

    @property
    def in_avals(self):
        return self.closed_jaxpr.in_avals

    @property
    def args_info(self):
        """Pytree ``(args, kwargs)`` of ArgInfo (shape, dtype, donated) of the dynamic
        arguments."""
        return _args_info(self)

    def as_text(self, dialect: str | None = None) -> str:
        """The traced program (``jax.stages.Lowered.as_text``): on a PJRT platform (a
        TPU, ``xla_cpu``) the StableHLO module its plugin compiles, as JAX shows; on the
        CPU platform, which compiles jaxlite's IR itself, the program in jaxpr notation
        with the argument names.

        ``dialect``: None (the platform's form) or ``"stablehlo"``.  Raises ValueError for
        ``"stablehlo"`` on the CPU platform and for any other dialect (JAX's ``"hlo"``:
        ``compile().as_text()`` shows XLA's HLO on a PJRT platform)."""
        device = self._device
        name = self._wrapped.__name__
        text = None if device is None else device.backend.lowered_text(self.closed_jaxpr,
                                                                       name)
        if dialect not in (None, "stablehlo"):
            raise ValueError(f"Lowered.as_text: unknown dialect {dialect!r}; jaxlite shows "
                             f"'stablehlo' on PJRT platforms (compile().as_text() shows "
                             f"XLA's optimised HLO there)")
        if dialect == "stablehlo" and text is None:
            raise ValueError(f"Lowered.as_text(dialect='stablehlo'): the program is lowered "
                             f"for {device}, whose platform compiles jaxlite's IR itself, "
                             f"not StableHLO; lower it for a PJRT platform's device")
        if text is not None:
            return text
        args = ", ".join(f"{n}: {a.str_short()}" for n, a in
                         zip(self._arg_names, self.closed_jaxpr.in_avals))
        return (f"# jit({name}) lowered for ({args})\n"
                f"{self.closed_jaxpr}")

    @_api_boundary      # a traceback boundary (_traceback.py), as jit's own methods
    def compile(self, compiler_options=None) -> "Compiled":
        """Optimises and compiles the program (``Lowered.compile``)."""
        program = compile_jaxpr(self.closed_jaxpr, backend=None,
                                name=self._wrapped.__name__, record_passes=True)
        return Compiled(self, program)

    def cost_analysis(self) -> dict:
        return cost_analysis(self.closed_jaxpr)


class Compiled:
    """An executable for one input signature (``jax.stages.Compiled``): call it with
    arguments of that signature."""

    _run_impl = None  # installed by transforms.jit (placement; the backend runs it)
    _partition_impl = None  # installed by transforms.jit: the SPMD partition of a call

    def _partition(self):
        """The SPMD partition a call over sharded arguments runs (None on one device)."""
        if "_spmd" not in self.__dict__:
            impl = Compiled._partition_impl
            self._spmd = impl(self) if impl is not None else None
        return self._spmd

    def __init__(self, lowered: Lowered, program):
        self._lowered = lowered
        self._program = program
        self._fun_name = lowered._wrapped.__name__

    def as_text(self) -> str:
        """The optimised program and the executable's source; for a call over sharded
        arguments (or with in/out shardings or sharding constraints) then the program
        every device runs on its shards, with every collective and its bytes."""
        text = self._program.as_text()
        part = self._partition()
        if part is not None:
            return text + "\n" + part.as_text()
        manual = self._lowered.closed_jaxpr.collectives
        if manual:      # a jitted shard_map: the collectives its body calls
            lines = [f"# shard_map collectives: {len(manual)}, "
                     f"{sum(c.bytes for c in manual)} bytes per device"]
            lines += [f"#   {c.kind} over {c.axes}: {c.dtype}{list(c.shape)} "
                      f"({c.bytes} bytes) ({c.where})" for c in manual]
            text += "\n" + "\n".join(lines)
        return text

    def pass_log(self) -> str:
        """Every compiler pass with the program before and after it."""
        out = []
        for name, before, after, secs in self._program.pass_log:
            out.append(f"== pass {name} ({secs * 1e3:.2f} ms)\n-- before\n{before}\n"
                       f"-- after\n{after}")
        return "\n".join(out)

    def cost_analysis(self) -> dict:
        """``{'flops', 'bytes accessed', 'transcendentals'}`` of the optimised program;
        over sharded arguments those of the program each device runs on its shards (as
        JAX reports a partitioned executable), and also ``'collectives'`` (how many it
        has) and ``'collective bytes'`` (the bytes each device contributes to them), which
        a jitted ``shard_map`` reports too (the collectives its body calls; its flops are
        the whole computation's)."""
        part = self._partition()
        plugin = getattr(self._program.executable, "cost_analysis", None)
        plugin = plugin() if part is None and plugin is not None else None
        if plugin is not None:
            return plugin       # compiled by a PJRT plugin: XLA's own figures
        if part is None:
            out = cost_analysis(self._program.optimized)
            manual = self._lowered.closed_jaxpr.collectives
            if manual:      # a jitted shard_map: the collectives its body calls
                out = dict(out, collectives=float(len(manual)))
                out["collective bytes"] = float(sum(c.bytes for c in manual))
            return out
        out = dict(cost_analysis(part.per_device_jaxpr()))
        out.update(part.summary())
        return out

    def memory_analysis(self) -> dict:
        return {"temp_size_in_bytes": self._program.executable.temp_bytes}

    @property
    def out_info(self):
        return self._lowered.out_info

    def _flat_shardings(self) -> tuple:
        """``([Sharding or None per argument leaf], [Sharding per output leaf])`` of a
        call, computed once: over a mesh (sharded arguments, ``in_shardings``/
        ``out_shardings``, sharding constraints) the arguments' NamedShardings (``P()``
        for one on no mesh) and the outputs' from ``out_shardings`` or the sharding
        propagation, as a call places them; else each a SingleDeviceSharding of the
        device the call runs on.  An argument the program does not use (and
        ``keep_unused`` is off) has None, as JAX drops it."""
        if "_shardings_flat" in self.__dict__:
            return self._shardings_flat
        from ..compiler.passes import dce
        from ..runtime import get_default_device
        from ..sharding import NamedSharding, PartitionSpec, SingleDeviceSharding
        from .jit import _lowered_shardings, _prefix_shardings
        low = self._lowered
        layout = _lowered_shardings(self)
        n_in, n_out = len(low.closed_jaxpr.in_avals), len(low.closed_jaxpr.out_avals)
        if layout is not None:
            mesh, ins, _, outs = layout
            ins = [NamedSharding(mesh, PartitionSpec()) if s is None else s for s in ins]
        else:
            one = SingleDeviceSharding(getattr(low, "_device", None) or get_default_device())
            in_sh, out_sh = low._wrapped._shardings or (None, None)
            ins = [one] * n_in
            if in_sh is not None:
                args_tree, _ = low.in_tree.unflatten(list(range(n_in)))
                ins = [one if w is None else w for w in
                       _prefix_shardings(in_sh, args_tree, n_in, "in_shardings")]
            outs = [one] * n_out
            if out_sh is not None:
                outs = [one if w is None else w for w in _prefix_shardings(
                    out_sh, low.out_tree.unflatten(list(range(n_out))), n_out,
                    "out_shardings")]
        if not getattr(low._wrapped, "_keep_unused", False):
            jaxpr = dce(low.closed_jaxpr).jaxpr
            used = {id(v) for e in jaxpr.eqns for v in e.invars}
            used |= {id(v) for v in jaxpr.outvars}
            ins = [s if id(v) in used else None for s, v in zip(ins, jaxpr.invars)]
        self._shardings_flat = (ins, outs)
        return self._shardings_flat

    @property
    def input_shardings(self):
        """The argument shardings the executable was compiled for
        (``jax.stages.Compiled.input_shardings``): a pytree ``(args, kwargs)`` like the
        dynamic arguments, one Sharding per array leaf.  Arguments sharded over a mesh
        keep their NamedSharding (or the one ``in_shardings`` gives); other arguments
        of a call over a mesh are replicated there (``NamedSharding(mesh, P())``); off
        any mesh each is a SingleDeviceSharding of the device the call runs on (a
        committed argument's, else the default device).  An argument the program does
        not use is None (unless ``keep_unused=True``), as JAX prunes it.

        Raises:
          ValueError / TypeError / RuntimeError: ``in_shardings``/``out_shardings`` that
            are no prefix of the arguments/outputs, or a PartitionSpec with no mesh set,
            as a call raises.
        """
        return tree_unflatten(self._lowered.in_tree, self._flat_shardings()[0])

    @property
    def output_shardings(self):
        """The shardings of the executable's outputs
        (``jax.stages.Compiled.output_shardings``): a pytree like the function's result,
        one Sharding per leaf, the shardings a call's results have: over a mesh
        ``out_shardings`` or else the sharding propagation's NamedShardings (JAX's
        typing rules on a mesh with Explicit axes); off any mesh a SingleDeviceSharding
        of the device the call runs on.  Raises as ``input_shardings``."""
        return tree_unflatten(self._lowered.out_tree, self._flat_shardings()[1])

    def _run_flat(self, leaves, names_fn=lambda: None, donate=None):
        return Compiled._run_impl(self, leaves, names_fn, donate)

    @_api_boundary      # a traceback boundary (_traceback.py), as jit's own methods
    def __call__(self, *args, **kwargs):
        """Runs on the dynamic arguments of the compiled signature: the static ones
        (``static_argnums``/``static_argnames``) were fixed by ``lower`` and are left out,
        as in JAX.  Raises TypeError when the arguments' pytree structure or their
        shapes/dtypes differ from the compiled ones (naming the argument)."""
        wrapped = self._lowered._wrapped
        want = self._lowered._key
        leaves, in_tree = tree_flatten((tuple(args), dict(kwargs)))
        from .jit import _leaf_key
        if in_tree != want[0]:
            extra = ""
            if want[2] or want[3]:
                extra = (f" (the static arguments "
                         f"{[v for _, v in want[2] + want[3]]!r} were fixed by lower and "
                         f"are not passed again)")
            raise TypeError(f"this executable takes inputs with pytree structure {want[0]}, "
                            f"got {in_tree}{extra}")
        names = self._lowered._arg_names
        for name, x, (aval, _) in zip(names, leaves, want[1]):
            got = _leaf_key(x)[0]
            if got.strip_weak_type() != aval.strip_weak_type():
                raise TypeError(f"argument {name} is {got.str_short()}, but this executable "
                                f"was compiled for {aval.str_short()}.")
        # the whole call, statics put back, for the donated arguments' positions and names
        full = list(args)
        for i, v in want[2]:
            full.insert(i, v)
        kwargs = {**kwargs, **dict(want[3])}
        args = tuple(full)
        outs = self._run_flat(leaves, lambda: names, wrapped._donated(args, kwargs, leaves))
        return tree_unflatten(self._lowered.out_tree, outs)


