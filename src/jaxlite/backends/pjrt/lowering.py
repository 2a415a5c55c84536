"""Lowering jaxlite's IR to StableHLO, as MLIR text a PJRT plugin compiles.

Layer: backends (pjrt).  ``lower_module(closed_jaxpr)`` walks the program's equations in
order and asks each primitive's ``lowering`` rule (declared with the primitive's other
rules, ``primitives/*.py``) to emit the StableHLO operations computing it.  The text is in
MLIR's generic operation syntax (``%3 = "stablehlo.add"(%1, %2) : (tensor<3xf32>,
tensor<3xf32>) -> tensor<3xf32>``): one uniform form for every operation, which XLA's
parser accepts on every plugin.  A few ``chlo`` operations (erf, lgamma, next_after, the
inverse trigonometric functions, ...) are used where StableHLO has no operation; XLA
decomposes them when it compiles.

The module: one public function ``@main`` with one argument per invar of the program, in
order, and one result per outvar.  The program's constvars are not arguments: their values
are written into the text as constants (``dense<"0x...">``).  Sub-programs (jit calls,
custom derivatives, checkpoint, linear solves) are lowered inline; loop and branch bodies
become the regions of ``stablehlo.while`` and ``stablehlo.case``.  Each operation carries
a location ``loc("<primitive>")`` (``loc("<primitive> at <file:line>")`` when the
equation knows the user's source line), so an error XLA reports about an operation names
the primitive it came from.

Rules: ``rule(ctx, *operands, **params)`` returns one ``Value`` (a list of them for a
primitive with several results).  Operands are ``Value``s: an SSA name and the
``ShapedArray`` it holds.  ``ctx`` (``LoweringContext``) emits operations, constants and
regions, inlines a sub-program, and lowers a Python function traced to a program
(``ctx.lower_fun``): an algorithm written with jaxlite's primitives lowers like any
other program.  ``ctx.avals_in`` / ``ctx.avals_out`` are the equation's abstract values.

What does not lower, on any PJRT platform:
- a primitive whose ``lowering`` is None: NotImplementedError, JAX's message
  ("MLIR translation rule for primitive 'foo' not found for platform xla_cpu"), naming
  the user's source line when the equation knows it;
- host callbacks (``pure_callback``, ``io_callback``, ``jax.debug.print`` /
  ``debug_callback``): a compiled program cannot stop on the device, hand values to
  Python and resume, so ``lower_module`` refuses them (NotImplementedError naming the
  primitive and the platform).  jaxlite runs such a program in pieces instead
  (``PjrtBackend.compile`` -> ``pieces.PiecewiseExecutable``): each run of equations
  between callbacks is lowered here and compiled by XLA, each callback runs on the host
  between them with counted transfers, and loops and branches holding callbacks are
  stepped from the host; the callbacks run in order, as often as on the CPU platform;
- a rule's own refusal (``ctx.unsupported``): NotImplementedError naming the primitive,
  the platform and the reason (complex ``rem``; pivoted ``qr``; a collective outside a
  shard_map lowered over a mesh, where its axis is unbound).

Programs over several devices (backends/pjrt/_spmd.py): a jitted program over a mesh is
one module whose arguments and results carry ``mhlo.sharding`` (``hlo_sharding``: XLA's
HloSharding text), sharding constraints become ``custom_call @Sharding``, and XLA's SPMD
partitioner splits it; a shard_map's body is manual code (``SPMDFullToShardShape`` /
``SPMDShardToFullShape``) whose collectives lower to XLA's (``all_reduce``,
``all_gather``, ``reduce_scatter``, ``all_to_all``, ``collective_permute``) over the
partitions ``ctx.replica_groups`` names.
Linear algebra XLA has no operation for (``lu``, ``qr`` and its Householder primitives,
``eigh`` and ``svd`` by Jacobi rotations, ``hessenberg``, ``tridiagonal``,
``tridiagonal_solve``, ``cholesky_update``) and special functions CHLO lacks
(``bessel_i0e``, ``ndtri``, ``igamma``/``igammac`` and their derivatives,
``regularized_incomplete_beta``, ``erfcx``, ``exp1``, ``expi``, ``sici``) lower as
jaxlite-written programs (``primitives/linalg.py``, ``primitives/special.py``), never as
a platform's custom call.  Which primitives are not lowered at all, each with its reason:
``tests/test_pjrt_lowering.py`` ``NOT_LOWERED``.

Values equal the interpreter's (the primitives' NumPy implementations) bit for bit where
XLA computes exactly (integer arithmetic, comparisons, conversions, selects, shifts,
division and remainder by zero, max/min with NaN and signed zeros, which the rules spell
out); transcendental functions within a few units in the last place.  XLA:CPU flushes
subnormal floats to zero, as real JAX on the CPU does; the interpreter keeps them.
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np

from ...core.avals import ShapedArray
from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal

__all__ = ["LoweredModule", "LoweringContext", "Value", "lower_module", "lower_function",
           "mlir_type", "element_type"]


# ---- types --------------------------------------------------------------------------------

_ELEMENT_TYPES = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16", np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.complex64): "complex<f32>", np.dtype(np.complex128): "complex<f64>",
}
for _name, _mlir in (("int4", "i4"), ("uint4", "ui4"), ("int2", "i2"), ("uint2", "ui2"),
                     ("float8_e4m3fn", "f8E4M3FN"), ("float8_e5m2", "f8E5M2"),
                     ("float8_e4m3fnuz", "f8E4M3FNUZ"), ("float8_e5m2fnuz", "f8E5M2FNUZ"),
                     ("float8_e4m3b11fnuz", "f8E4M3B11FNUZ"), ("float8_e4m3", "f8E4M3"),
                     ("float8_e3m4", "f8E3M4"), ("float8_e8m0fnu", "f8E8M0FNU"),
                     ("float4_e2m1fn", "f4E2M1FN"), ("float6_e2m3fn", "f6E2M3FN"),
                     ("float6_e3m2fn", "f6E3M2FN")):
    if hasattr(ml_dtypes, _name):
        _ELEMENT_TYPES[np.dtype(getattr(ml_dtypes, _name))] = _mlir


def element_type(dtype) -> str:
    """The MLIR element type of ``dtype`` (``i1`` for bool, ``ui8`` for uint8, ``bf16``,
    ``f8E4M3FN``, ``complex<f32>``, ...).  TypeError for a dtype StableHLO has no type for."""
    dt = np.dtype(dtype)
    try:
        return _ELEMENT_TYPES[dt]
    except KeyError:
        raise TypeError(f"dtype {dt.name} has no StableHLO element type") from None


def mlir_type(aval) -> str:
    """``tensor<2x3xf32>`` for a ShapedArray of shape (2, 3) and dtype float32."""
    dims = "".join(f"{d}x" for d in aval.shape)
    return f"tensor<{dims}{element_type(aval.dtype)}>"


class Value:
    """An SSA value of the module being built: its name (``%4``, ``%7#1``), the
    ShapedArray it holds, and the operation that made it with that operation's operands
    (``producer``, ``inputs``: None and () for arguments), so a rule can see what XLA's
    simplifier will see."""

    __slots__ = ("name", "aval", "producer", "inputs")

    def __init__(self, name: str, aval: ShapedArray, producer: str | None = None,
                 inputs=()):
        self.name = name
        self.aval = aval
        self.producer = producer
        self.inputs = tuple(inputs)

    @property
    def type(self) -> str:
        return mlir_type(self.aval)

    def __repr__(self):
        return f"Value({self.name}: {self.aval.str_short()})"


# ---- constants ----------------------------------------------------------------------------

def _float_text(x) -> str:
    """A float as MLIR writes it: its bit pattern in hex (exact, NaN and inf included)."""
    arr = np.asarray(x)
    bits = arr.view(np.dtype(f"u{arr.dtype.itemsize}"))
    return f"0x{int(bits):0{arr.dtype.itemsize * 2}X}"


def _scalar_text(x, dt: np.dtype) -> str:
    if dt == np.bool_:
        return "true" if bool(x) else "false"
    kind = dt.kind
    if dt.itemsize * 8 != _bits(dt):            # sub-byte: written by value
        v = np.asarray(x, dt)
        if element_type(dt)[0] in "iu":
            return str(int(v.astype(np.int64)))
        return repr(float(v.astype(np.float64)))
    if kind == "c":
        return f"({_float_text(np.real(x))}, {_float_text(np.imag(x))})"
    if element_type(dt)[0] in "iu":
        return str(int(x))
    return _float_text(np.asarray(x, dt))


def _bits(dt: np.dtype) -> int:
    name = element_type(dt)
    m = re.match(r"u?i(\d+)$", name)
    if m:
        return int(m.group(1))
    if name.startswith("f4E"):       # f4E2M1FN
        return 4
    if name.startswith("f6E"):       # f6E2M3FN, f6E3M2FN
        return 6
    return dt.itemsize * 8


def dense_text(value, dtype) -> str:
    """The ``dense<...>`` attribute holding ``value`` (a NumPy array or scalar) as
    ``dtype``: a splat for a constant array, raw little-endian bytes in hex for whole-byte
    types, nested lists of literals for bool and sub-byte types."""
    dt = np.dtype(dtype)
    arr = np.asarray(value).astype(dt, copy=False)
    if arr.size == 0:
        return "dense<" + ("false" if dt == np.bool_ else "(0.0, 0.0)" if dt.kind == "c"
                           else "0" if element_type(dt)[0] in "iu" else "0.0") + ">"
    flat = np.ascontiguousarray(arr).reshape(-1)
    raw = flat.view(np.uint8).reshape(flat.size, -1)
    if (raw == raw[0]).all():
        return f"dense<{_scalar_text(flat[0], dt)}>"
    if dt == np.bool_ or dt.itemsize * 8 != _bits(dt):
        return f"dense<{_nested(arr, dt)}>"
    data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
    return f'dense<"0x{data.tobytes().hex().upper()}">'


def _nested(arr, dt) -> str:
    if arr.ndim == 0:
        return _scalar_text(arr[()], dt)
    return "[" + ", ".join(_nested(a, dt) for a in arr) + "]"


# ---- the lowering context -----------------------------------------------------------------

class LoweredModule:
    """A lowered program: ``text`` (the StableHLO module, entry ``@main``), ``in_avals``
    (one per argument of ``@main``: the program's invars) and ``out_avals`` (one per
    result)."""

    __slots__ = ("text", "in_avals", "out_avals")

    def __init__(self, text: str, in_avals, out_avals):
        self.text = text
        self.in_avals = tuple(in_avals)
        self.out_avals = tuple(out_avals)

    def __str__(self):
        return self.text


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


class LoweringContext:
    """What a lowering rule emits operations through (see the module docstring).

    Attributes a rule reads: ``platform`` (``"xla_cpu"``, ``"tpu"``, ``"gpu"``),
    ``num_partitions``, ``devices`` (over several partitions: the Devices partition
    ``0 .. num_partitions-1`` run on, which ``sharding_text`` numbers), ``mesh`` (the
    call's Mesh there), ``avals_in`` / ``avals_out`` (the ShapedArrays of the equation
    being lowered), ``eqn`` (the equation; None inside ``lower_fun``'s own program when
    no user equation is current), ``primitive`` (its primitive)."""

    def __init__(self, platform: str = "xla_cpu", num_partitions: int = 1, devices=None,
                 mesh=None):
        self.platform = platform
        self.num_partitions = num_partitions
        self.devices = None if devices is None else tuple(devices)
        self.mesh = mesh
        self.avals_in: tuple = ()
        self.avals_out: tuple = ()
        self.eqn = None
        self.primitive = None
        self._count = 0
        self._blocks: list[list[str]] = [[]]
        self._loc = ""
        self._scope = ""            # "lu/" inside the lu rule's own program
        self._scope_source = None

    # ---- values and types -------------------------------------------------------------

    @staticmethod
    def aval(shape, dtype, weak_type: bool = False) -> ShapedArray:
        """A ShapedArray (for the result types of operations a rule emits)."""
        return ShapedArray(tuple(shape), np.dtype(dtype), weak_type)

    type = staticmethod(mlir_type)
    element_type = staticmethod(element_type)

    def _fresh(self) -> str:
        self._count += 1
        return f"%{self._count}"

    def _emit(self, line: str) -> None:
        self._blocks[-1].append(line)

    # ---- attribute text ---------------------------------------------------------------

    @staticmethod
    def i64s(values) -> str:
        """``array<i64: 1, 2>``: a dense i64 array attribute."""
        vals = [int(v) for v in values]
        return "array<i64" + (": " + ", ".join(map(str, vals)) if vals else "") + ">"

    @staticmethod
    def i64(v) -> str:
        """``3 : i64``."""
        return f"{int(v)} : i64"

    @staticmethod
    def i32(v) -> str:
        return f"{int(v)} : i32"

    @staticmethod
    def dims(values) -> str:
        """``[1, 2]``: a list of dimensions inside a structured attribute."""
        return "[" + ", ".join(str(int(v)) for v in values) + "]"

    @staticmethod
    def dense_i64_2d(rows) -> str:
        """``dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`` (padding and window attributes)."""
        rows = [[int(v) for v in r] for r in rows]
        if not rows:            # a rank-0 operand's padding: no rows of two
            return "dense<> : tensor<0x2xi64>"
        body = "[" + ", ".join("[" + ", ".join(map(str, r)) + "]" for r in rows) + "]"
        return f"dense<{body}> : tensor<{len(rows)}x{len(rows[0])}xi64>"

    def sharding_text(self, sharding, ndim: int) -> str:
        """XLA's HloSharding text of ``sharding`` (a NamedSharding over some of
        ``devices``) for a value of rank ``ndim``: ``{replicated}``,
        ``{devices=[2,2]0,1,2,3}``, ``{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}``
        (``hlo_sharding``)."""
        if self.devices is None:
            raise self.unsupported("a sharding annotation outside a partitioned program")
        return hlo_sharding(sharding, ndim, self.devices, self.mesh)

    # ---- collectives over the mesh of a manually partitioned program (shard_map) --------

    def _manual_mesh(self):
        if self.mesh is None or self.devices is None or self.num_partitions == 1:
            raise self.unsupported(
                "a collective outside a shard_map lowered over a mesh (resolved while "
                "tracing: an equation left in a program names an unbound axis)")
        return self.mesh

    def replica_groups(self, axes) -> str:
        """``dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>``: the partitions that communicate
        over mesh ``axes`` (those sharing their positions along the other axes), each
        group ordered by position along ``axes`` (row-major, in their order)."""
        return self.dense_i64_2d(self.groups(axes))

    def groups(self, axes) -> list:
        """The groups of ``replica_groups`` as lists of partition numbers."""
        mesh = self._manual_mesh()
        names = list(mesh.axis_names)
        axes = [a for a in ((axes,) if isinstance(axes, str) else tuple(axes))]
        pos = {d: k for k, d in enumerate(self.devices)}
        ids = np.array([pos[d] for d in mesh.devices.flat]).reshape(mesh.devices.shape)
        rest = [a for a in names if a not in axes]
        ids = ids.transpose([names.index(a) for a in rest + axes])
        size = int(np.prod([dict(mesh.shape)[a] for a in axes], dtype=np.int64))
        return ids.reshape(-1, size).tolist()

    def channel_handle(self) -> str:
        """A fresh ``#stablehlo.channel_handle`` (device to device) for one collective."""
        self._channels = getattr(self, "_channels", 0) + 1
        return f"#stablehlo.channel_handle<handle = {self._channels}, type = 1>"

    def axis_position(self, axis) -> "Value":
        """This partition's position (an ``i32`` scalar) along mesh axis ``axis``:
        ``partition_id``'s coordinate in the mesh's row-major numbering."""
        mesh = self._manual_mesh()
        names = list(mesh.axis_names)
        if list(mesh.devices.flat) != list(self.devices):
            raise self.unsupported("a position along a mesh axis in a program whose "
                                   "partitions are not the mesh's devices in mesh order")
        sizes = dict(mesh.shape)
        stride = int(np.prod([sizes[a] for a in names[names.index(axis) + 1:]],
                             dtype=np.int64))
        pid = self.op("stablehlo.partition_id", [], self.aval((), np.uint32))
        pid = self.convert(pid, np.int32)
        if stride > 1:
            pid = self.binary("divide", pid, self.constant(np.int32(stride), np.int32))
        return self.binary("remainder", pid, self.constant(np.int32(sizes[axis]), np.int32))

    # ---- operations -------------------------------------------------------------------

    def op(self, name: str, operands, results, attrs: dict | None = None, regions=()):
        """Emits ``"name"(operands) (regions) {attrs}`` with result types ``results``.

        ``results``: one ShapedArray (returns one Value) or a list of them (returns a
        list of Values, even of one).  ``attrs``: attribute name -> its MLIR text.
        ``regions``: region texts from ``region``."""
        single = isinstance(results, ShapedArray)
        outs = [results] if single else list(results)
        operands = list(operands)
        for v in operands:
            if not isinstance(v, Value):
                raise TypeError(f"lowering {self._what()}: operand {v!r} of {name} is not a "
                                f"Value")
        res = self._fresh()
        n = len(outs)
        lhs = "" if n == 0 else f"{res} = " if n == 1 else f"{res}:{n} = "
        in_t = ", ".join(v.type for v in operands)
        out_t = ", ".join(mlir_type(a) for a in outs)
        if n != 1:
            out_t = f"({out_t})"
        text = f'{lhs}"{name}"({", ".join(v.name for v in operands)})'
        if regions:
            text += " (" + ", ".join(regions) + ")"
        if attrs:
            text += " {" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}"
        text += f" : ({in_t}) -> {out_t}{self._loc}"
        self._emit(text)
        if n == 1:
            vals = [Value(res, outs[0], name, operands)]
        else:
            vals = [Value(f"{res}#{i}", a, name, operands) for i, a in enumerate(outs)]
        return vals[0] if single else vals

    def constant(self, value, dtype=None, shape=None) -> Value:
        """A ``stablehlo.constant`` holding ``value`` as ``dtype`` (default: its own),
        broadcast to ``shape`` (default: its own)."""
        arr = np.asarray(value)
        dt = np.dtype(dtype) if dtype is not None else arr.dtype
        if arr.dtype != dt:
            with np.errstate(all="ignore"):
                arr = arr.astype(dt)
        if shape is not None and tuple(shape) != arr.shape:
            arr = np.broadcast_to(arr, tuple(shape))
        aval = ShapedArray(arr.shape, dt)
        return self.op("stablehlo.constant", [], aval,
                       {"value": f"{dense_text(arr, dt)} : {mlir_type(aval)}"})

    def full(self, value, aval_or_shape, dtype=None) -> Value:
        """A constant array of ``value`` with the shape (and dtype) of a ShapedArray, or
        of ``shape`` and ``dtype``."""
        if isinstance(aval_or_shape, ShapedArray):
            return self.constant(value, dtype or aval_or_shape.dtype, aval_or_shape.shape)
        return self.constant(value, dtype, aval_or_shape)

    def broadcast(self, x: Value, shape, dims=None) -> Value:
        """``x`` broadcast to ``shape``: rank-0 ``x`` everywhere, else its axes mapped to
        ``dims`` (default: the trailing axes)."""
        shape = tuple(shape)
        if x.aval.shape == shape:
            return x
        if dims is None:
            dims = range(len(shape) - x.aval.ndim, len(shape))
        return self.op("stablehlo.broadcast_in_dim", [x],
                       ShapedArray(shape, x.aval.dtype),
                       {"broadcast_dimensions": self.i64s(dims)})

    def convert(self, x: Value, dtype) -> Value:
        """``stablehlo.convert`` of ``x`` to ``dtype`` (itself when it has it)."""
        dt = np.dtype(dtype)
        if x.aval.dtype == dt:
            return x
        return self.op("stablehlo.convert", [x], ShapedArray(x.aval.shape, dt))

    def reshape(self, x: Value, shape) -> Value:
        shape = tuple(shape)
        if x.aval.shape == shape:
            return x
        return self.op("stablehlo.reshape", [x], ShapedArray(shape, x.aval.dtype))

    def compare(self, x: Value, y: Value, direction: str, compare_type: str | None = None):
        """``stablehlo.compare`` (direction EQ/NE/LT/LE/GT/GE) of two values of one shape;
        the comparison type follows the dtype (FLOAT, SIGNED, UNSIGNED) unless given
        (``TOTALORDER``)."""
        if compare_type is None:
            compare_type = _compare_type(x.aval.dtype)
        return self.op("stablehlo.compare", [x, y], ShapedArray(x.aval.shape, np.bool_),
                       {"comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                        "compare_type": f"#stablehlo<comparison_type {compare_type}>"})

    def select(self, pred: Value, on_true: Value, on_false: Value) -> Value:
        return self.op("stablehlo.select", [pred, on_true, on_false], on_true.aval)

    def binary(self, name: str, x: Value, y: Value) -> Value:
        """``stablehlo.<name>`` of two values of one shape and dtype (``add``,
        ``multiply``, ``and``, ...)."""
        return self.op(f"stablehlo.{name}", [x, y], x.aval)

    def unary(self, name: str, x: Value) -> Value:
        return self.op(f"stablehlo.{name}", [x], x.aval)

    # ---- regions ----------------------------------------------------------------------

    def region(self, arg_avals, body) -> str:
        """A region's text: a block with arguments of ``arg_avals``; ``body(*args)``
        emits its operations (through this context) and returns the values the region
        returns (``stablehlo.return``)."""
        args = [Value(self._fresh(), a) for a in arg_avals]
        self._blocks.append([])
        try:
            outs = body(*args)
            if isinstance(outs, Value):
                outs = [outs]
            outs = list(outs)
            self._emit(f'"stablehlo.return"({", ".join(v.name for v in outs)}) : '
                       f'({", ".join(v.type for v in outs)}) -> (){self._loc}')
        finally:
            lines = self._blocks.pop()
        head = ""
        if args:
            head = "^bb0(" + ", ".join(f"{a.name}: {a.type}" for a in args) + "):\n"
        return "{\n" + head + _indent("\n".join(lines)) + "\n}"

    def scalar_region(self, dtypes, body) -> str:
        """A reduction region over rank-0 values of ``dtypes``, each twice:
        ``body(*accumulated, *incoming)`` (a reduce's, reduce_window's or scatter's)."""
        avals = [ShapedArray((), np.dtype(d)) for d in dtypes]
        return self.region(avals + avals, body)

    # ---- sub-programs -----------------------------------------------------------------

    def lower_jaxpr(self, jaxpr: Jaxpr, consts, args) -> list:
        """Lowers ``jaxpr`` inline on ``args`` (Values) with its constvars bound to
        ``consts`` (values, written as constants, or Values); returns its outputs."""
        env = {}

        def read(v):
            if isinstance(v, Literal):
                return self.constant(v.val, v.aval.dtype, v.aval.shape)
            return env[v]

        for v, c in zip(jaxpr.constvars, consts):
            env[v] = c if isinstance(c, Value) else self.constant(_host(c), v.aval.dtype)
        if len(args) != len(jaxpr.invars):
            raise TypeError(f"lowering {self._what()}: a program of {len(jaxpr.invars)} "
                            f"inputs got {len(args)} operands")
        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            outs = self.lower_eqn(eqn, [read(v) for v in eqn.invars])
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        return [read(v) for v in jaxpr.outvars]

    def lower_closed(self, closed: ClosedJaxpr, *args) -> list:
        """Lowers a ClosedJaxpr inline (its consts as constants)."""
        return self.lower_jaxpr(closed.jaxpr, closed.consts, list(args))

    def lower_fun(self, fun, *args, multiple_results: bool = False):
        """Traces ``fun`` (written with jaxlite primitives' ``bind``) on the avals of
        ``args`` into a program and lowers it inline on ``args``: how a rule writes an
        algorithm XLA has no operation for.  Returns one Value, or a list when
        ``multiple_results``."""
        from ...core.staging import trace_to_jaxpr

        def flat(*xs):
            out = fun(*xs)
            return list(out) if multiple_results else [out]
        closed = trace_to_jaxpr(flat, [a.aval for a in args])
        # the program's operations are located as parts of the equation being lowered
        saved = self._scope, self._scope_source
        if self.primitive is not None:
            self._scope = f"{self._scope}{self.primitive.name}/"
            self._scope_source = self._source()
        try:
            outs = self.lower_closed(closed, *args)
        finally:
            self._scope, self._scope_source = saved
        return outs if multiple_results else outs[0]

    def lower_eqn(self, eqn, operands) -> list:
        """Lowers one equation on ``operands`` (Values) with its primitive's rule;
        returns the list of result Values."""
        prim = eqn.primitive
        saved = (self.avals_in, self.avals_out, self.eqn, self.primitive, self._loc)
        self.avals_in = tuple(v.aval for v in operands)
        self.avals_out = tuple(v.aval for v in eqn.outvars)
        self.eqn, self.primitive = eqn, prim
        where = self._scope + prim.name
        if self._source():
            where += f" at {self._source()}"
        self._loc = f" loc({_quote(where)})"
        try:
            rule = getattr(prim, "lowering", None)
            if rule is None and getattr(prim, "host_callback", False):
                raise NotImplementedError(
                    f"primitive '{prim.name}' calls back into Python on the host, which a "
                    f"program compiled for platform {self.platform} cannot do{self._at()}: "
                    f"the PJRT backend's compile runs such a program in pieces around its "
                    f"callbacks (backends/pjrt/pieces.py); lower only the pieces between "
                    f"them")
            if rule is None:
                raise NotImplementedError(
                    f"MLIR translation rule for primitive '{prim.name}' not found for "
                    f"platform {self.platform}" + self._at())
            try:
                out = rule(self, *operands, **eqn.params)
            except NotImplementedError as e:
                # a lowering error of this or a nested equation names its own primitive
                if f"for platform {self.platform}" in str(e):
                    raise
                raise NotImplementedError(f"lowering primitive '{prim.name}' for platform "
                                          f"{self.platform}{self._at()}: {e}") from None
            outs = list(out) if prim.multiple_results else [out]
            self._check_results(outs)
            return outs
        finally:
            (self.avals_in, self.avals_out, self.eqn, self.primitive, self._loc) = saved

    def _source(self):
        """The user's source line of the equation being lowered (of the enclosing user
        equation inside a rule's own program), or None."""
        if self.eqn is not None and self.eqn.source:
            return self.eqn.source
        return self._scope_source

    def _at(self) -> str:
        return f" (at {self._source()})" if self._source() else ""

    def _what(self) -> str:
        return f"'{self.primitive.name}'" if self.primitive is not None else "the program"

    def _check_results(self, outs) -> None:
        if len(outs) != len(self.avals_out):
            raise RuntimeError(f"lowering rule of '{self.primitive.name}' returned "
                               f"{len(outs)} values for {len(self.avals_out)} results")
        for o, a in zip(outs, self.avals_out):
            if not isinstance(o, Value) or o.aval.shape != a.shape or o.aval.dtype != a.dtype:
                got = o.aval.str_short() if isinstance(o, Value) else repr(o)
                raise RuntimeError(f"lowering rule of '{self.primitive.name}' returned {got} "
                                   f"for a result of type {a.str_short()}")

    def unsupported(self, reason: str):
        """The NotImplementedError a rule raises for a case it cannot lower (names the
        primitive, the platform and the source line)."""
        return NotImplementedError(f"primitive '{self.primitive.name}' cannot be lowered "
                                   f"for platform {self.platform}{self._at()}: {reason}")


def _compare_type(dt) -> str:
    dt = np.dtype(dt)
    et = element_type(dt)
    if dt == np.bool_ or et.startswith("ui"):
        return "UNSIGNED"
    if et.startswith("i"):
        return "SIGNED"
    return "FLOAT"


def _indent(text: str, n: int = 2) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.split("\n"))


def _host(c):
    """A program constant as a NumPy array (a jaxlite Array is read back)."""
    if isinstance(c, np.ndarray):
        return c
    return np.asarray(c)


_NAME_OK = re.compile(r"[^A-Za-z0-9_.$]")


def _device_grid(mesh, call_mesh):
    """The device array of ``mesh``; for an abstract mesh (a sharding type's, inside jit)
    the device array of ``call_mesh`` when it has the same axes and sizes.  ValueError
    otherwise."""
    try:
        devs = mesh.devices
    except (ValueError, AttributeError):
        devs = None
    if isinstance(devs, np.ndarray):
        return devs
    if call_mesh is not None and tuple(call_mesh.axis_names) == tuple(mesh.axis_names) \
            and dict(call_mesh.shape) == dict(mesh.shape):
        return call_mesh.devices
    raise ValueError(f"a sharding over the abstract mesh {mesh} in a program partitioned "
                     f"over {call_mesh}: their axes differ")


def hlo_sharding(sharding, ndim: int, devices, call_mesh=None) -> str:
    """XLA's HloSharding text for a value of rank ``ndim`` laid out by ``sharding`` (a
    NamedSharding; a sharding with no spec, a SingleDeviceSharding or a fully
    replicated one is ``{replicated}``) in a program partitioned over ``devices``
    (partition ``k`` runs on ``devices[k]``; the text names partitions; a sharding over
    an abstract mesh takes the devices of ``call_mesh``, the program's).  The tile
    assignment lists, for each block of the value in row-major block order, the
    partition holding it; mesh axes the spec leaves out make a last dimension of
    replicas (``last_tile_dim_replicate``).

    Raises ValueError when the sharding's mesh holds a device not in ``devices``."""
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is None or mesh is None:
        return "{replicated}"
    names = list(mesh.axis_names)
    sizes = dict(mesh.shape)
    parts = list(spec) + [None] * max(0, ndim - len(spec))
    entries = [() if e is None or not isinstance(e, (str, tuple)) else
               (e if isinstance(e, tuple) else (e,)) for e in parts[:ndim]]
    used = [a for e in entries for a in e if sizes[a] > 1]
    if not used:
        return "{replicated}"
    pos = {d: k for k, d in enumerate(devices)}
    grid = _device_grid(mesh, call_mesh)
    try:
        ids = np.array([pos[d] for d in grid.flat]).reshape(grid.shape)
    except KeyError:
        raise ValueError(f"the sharding {sharding} names devices outside the program's "
                         f"partitions {list(devices)}") from None
    rest = [a for a in names if a not in used]
    ids = ids.transpose([names.index(a) for a in used + rest])
    tile = [int(np.prod([sizes[a] for a in e if sizes[a] > 1], dtype=np.int64))
            for e in entries]
    reps = int(np.prod([sizes[a] for a in rest], dtype=np.int64))
    dims = tile + ([reps] if reps > 1 else [])
    flat = ",".join(str(int(i)) for i in ids.reshape(dims).flat)
    last = " last_tile_dim_replicate" if reps > 1 else ""
    return "{devices=[" + ",".join(map(str, dims)) + "]" + flat + last + "}"


def lower_module(closed_jaxpr: ClosedJaxpr, *, name: str = "main",
                 platform: str = "xla_cpu", num_partitions: int = 1, devices=None,
                 mesh=None, arg_shardings=None, result_shardings=None) -> LoweredModule:
    """Lowers ``closed_jaxpr`` to a StableHLO module (MLIR text).

    The entry function is ``@main``: one argument per invar of the program in order (the
    constvars are not arguments; their values become constants in the text) and one
    result per outvar.  ``name`` names the module (``module @jit_f``; characters MLIR
    symbol names do not allow become ``_``).  ``platform`` is named in errors and lets a
    rule choose a platform's own lowering; ``num_partitions`` is written as the module's
    ``mhlo.num_partitions``.  A program XLA partitions also gets ``devices`` (the Devices
    of its partitions, in order: sharding annotations inside name them by position),
    ``mesh`` (the call's Mesh: annotations over an abstract mesh use its devices) and
    ``arg_shardings`` / ``result_shardings``: one HloSharding text per argument / result
    (``hlo_sharding``), written as its ``mhlo.sharding`` attribute.

    Raises NotImplementedError for a primitive without a lowering rule, or one its rule
    cannot lower on this platform (host callbacks), naming the primitive, the platform and
    the equation's source line when known; TypeError for a dtype StableHLO has no type for.
    """
    if num_partitions < 1:
        raise ValueError(f"lower_module: num_partitions must be >= 1, got {num_partitions}")
    ctx = LoweringContext(platform, num_partitions, devices, mesh)
    jaxpr = closed_jaxpr.jaxpr
    args = [Value(f"%arg{i}", v.aval) for i, v in enumerate(jaxpr.invars)]
    outs = ctx.lower_jaxpr(jaxpr, closed_jaxpr.consts, args)
    return _module(ctx, name, args, outs, [v.aval for v in jaxpr.outvars], num_partitions,
                   arg_shardings, result_shardings)


def lower_function(fn, in_avals, *, name: str = "main",
                   platform: str = "xla_cpu") -> LoweredModule:
    """A StableHLO module whose ``@main`` takes arguments of ``in_avals`` and returns
    what ``fn(ctx, *args)`` emits through the LoweringContext ``ctx`` (a list of Values):
    the small helper programs the backend writes directly (pieces.py)."""
    ctx = LoweringContext(platform)
    args = [Value(f"%arg{i}", a) for i, a in enumerate(in_avals)]
    outs = list(fn(ctx, *args))
    return _module(ctx, name, args, outs, [o.aval for o in outs], 1)


def _sharding_attr(shardings, k) -> str:
    return "" if shardings is None else f" {{mhlo.sharding = {_quote(shardings[k])}}}"


def _module(ctx, name, args, outs, out_avals, num_partitions, arg_shardings=None,
            result_shardings=None) -> LoweredModule:
    ctx._emit(f'"func.return"({", ".join(o.name for o in outs)}) : '
              f'({", ".join(o.type for o in outs)}) -> ()')
    sig = ", ".join(f"{a.name}: {a.type}{_sharding_attr(arg_shardings, k)}"
                    for k, a in enumerate(args))
    res = ", ".join(f"{mlir_type(a)}{_sharding_attr(result_shardings, k)}"
                    for k, a in enumerate(out_avals))
    mod = _NAME_OK.sub("_", name) or "main"
    if not re.match(r"[A-Za-z_]", mod):
        mod = "_" + mod
    body = "\n".join(ctx._blocks[0])
    text = (f"module @{mod} attributes {{mhlo.num_partitions = {int(num_partitions)} : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{\n"
            f"  func.func public @main({sig}) -> ({res}) {{\n"
            f"{_indent(body, 4)}\n"
            f"  }}\n"
            f"}}\n")
    return LoweredModule(text, [a.aval for a in args], out_avals)
