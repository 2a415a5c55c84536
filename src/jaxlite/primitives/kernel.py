"""Fused kernels: the unit the fusion pass produces and native code generators compile.

Layer: primitives (the kernel primitive's declaration, shared by the compiler's fusion pass
that makes kernels and the backends that run them).  A ``Kernel`` is one loop nest over an *iteration space* (a shape): each
input is read through a broadcast (``dims`` maps every input axis to an iteration axis),
a scalar program (``body``: a jaxpr over rank-0 values, one invar per input) computes the
per-element results, and each output either keeps the whole iteration space ("map") or
is reduced over some of its axes with a monoid ("reduce": add, max, min or mul).

A program holds a kernel as one equation of ``kernel_p`` (``kernel=Kernel``): its
reference implementation evaluates the scalar body on broadcast NumPy arrays (the
elementwise primitives' implementations work on arrays), so the interpreter runs any
fused program, and every code generator is checked against it.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..ir.interpret import eval_jaxpr_impl, exact
from ..ir.jaxpr import Jaxpr, pp_jaxpr
from .reduction import _max, _min, _sum

MONOIDS = ("add", "max", "min", "mul")


class KernelInput:
    """An input of a kernel: its abstract value and, for each of its axes, the iteration
    axis it runs along (an input axis of size 1 broadcasts)."""

    __slots__ = ("aval", "dims")

    def __init__(self, aval: ShapedArray, dims):
        self.aval = aval
        self.dims = tuple(dims)

    def __repr__(self):
        return f"{self.aval.str_short()}@{list(self.dims)}"


class KernelOutput:
    """An output: ``kind`` "map" (the whole iteration space) or "reduce" (``monoid`` over
    iteration ``axes``); ``aval`` is the output's abstract value."""

    __slots__ = ("kind", "aval", "monoid", "axes")

    def __init__(self, kind: str, aval: ShapedArray, monoid: str | None = None, axes=()):
        if kind not in ("map", "reduce"):
            raise ValueError(f"kernel output kind must be 'map' or 'reduce', got {kind!r}")
        if kind == "reduce" and monoid not in MONOIDS:
            raise ValueError(f"kernel reduction monoid must be one of {MONOIDS}, got "
                             f"{monoid!r}")
        self.kind = kind
        self.aval = aval
        self.monoid = monoid
        self.axes = tuple(axes)

    def __repr__(self):
        if self.kind == "map":
            return f"map {self.aval.str_short()}"
        return f"reduce-{self.monoid}{list(self.axes)} {self.aval.str_short()}"


class Kernel:
    """One fused loop nest (see the module docstring).  Hashable by identity."""

    def __init__(self, shape, inputs, body: Jaxpr, outputs, name: str = "kernel"):
        self.shape = tuple(shape)
        self.inputs = list(inputs)
        self.body = body
        self.outputs = list(outputs)
        self.name = name
        self._check()

    def _check(self):
        nd = len(self.shape)
        if len(self.body.invars) != len(self.inputs):
            raise ValueError(f"kernel {self.name}: body takes {len(self.body.invars)} scalars "
                             f"for {len(self.inputs)} inputs")
        if len(self.body.outvars) != len(self.outputs):
            raise ValueError(f"kernel {self.name}: body gives {len(self.body.outvars)} "
                             f"scalars for {len(self.outputs)} outputs")
        for inp in self.inputs:
            if len(inp.dims) != inp.aval.ndim or any(not 0 <= d < nd for d in inp.dims):
                raise ValueError(f"kernel {self.name}: input {inp} does not map into "
                                 f"iteration space {self.shape}")
            for ax, d in zip(inp.aval.shape, inp.dims):
                if ax not in (1, self.shape[d]):
                    raise ValueError(f"kernel {self.name}: input {inp} axis of size {ax} "
                                     f"cannot broadcast to {self.shape[d]}")

    @property
    def out_avals(self):
        return [o.aval for o in self.outputs]

    def flops(self) -> int:
        n = int(np.prod(self.shape, dtype=np.int64))
        return n * max(len(self.body.eqns), 1)

    def bytes_accessed(self) -> int:
        ins = sum(i.aval.size * i.aval.dtype.itemsize for i in self.inputs)
        return ins + sum(o.aval.size * o.aval.dtype.itemsize for o in self.outputs)

    def __repr__(self):
        return f"Kernel({self.name}, {list(self.shape)})"

    def pretty(self) -> str:
        """The kernel's text: iteration space, inputs, outputs, scalar body."""
        lines = [f"kernel {self.name} over {list(self.shape)}:",
                 "  inputs  " + ", ".join(map(repr, self.inputs)),
                 "  outputs " + ", ".join(map(repr, self.outputs)),
                 "  body    " + pp_jaxpr(self.body).replace("\n", "\n          ")]
        return "\n".join(lines)


def _broadcast_input(x, inp: KernelInput, shape):
    expanded = [1] * len(shape)
    for ax, d in zip(inp.aval.shape, inp.dims):
        expanded[d] = ax
    order = np.argsort(inp.dims, kind="stable")
    x = np.transpose(x, order) if inp.aval.ndim > 1 else x
    return np.broadcast_to(np.reshape(x, expanded), shape)


# each monoid's reduction, exactly as its reduce_* primitive computes it (float32 sums off
# the inner axis in float64; max/min order -0.0 and 0.0 as XLA does)
_REDUCE = {"add": _sum, "max": _max, "min": _min, "mul": np.multiply.reduce}


def _reference_plan(kernel: Kernel):
    """What ``run_reference`` decides per kernel rather than per call (the interpreter runs
    small kernels on every jit call): which inputs already span the iteration space in
    order (no broadcast view needed), and per output (reduction ufunc or None, axes,
    whether to reduce in float32, aval)."""
    order = tuple(range(len(kernel.shape)))
    direct = [inp.aval.shape == kernel.shape and inp.dims == order for inp in kernel.inputs]
    outs = []
    for o in kernel.outputs:
        half = o.aval.dtype in (np.dtype(np.float16),) or o.aval.dtype.name == "bfloat16"
        outs.append((_REDUCE[o.monoid] if o.kind == "reduce" else None, o.axes, half, o.aval))
    return direct, outs


def run_reference(kernel: Kernel, *args):
    """Evaluates ``kernel`` with NumPy (the semantics every code generator must match)."""
    plan = kernel.__dict__.get("_reference_plan")
    if plan is None:
        plan = kernel._reference_plan = _reference_plan(kernel)
    direct, out_plan = plan
    shape = kernel.shape
    full = [np.asarray(a) if d else _broadcast_input(np.asarray(a), inp, shape)
            for a, inp, d in zip(args, kernel.inputs, direct)]
    results = eval_jaxpr_impl(kernel.body, [], *full)
    outs = []
    for r, (monoid, axes, half, aval) in zip(results, out_plan):
        r = np.asarray(r)
        if r.shape != shape:
            r = np.broadcast_to(r, shape)
        if monoid is not None:
            if half:
                r = r.astype(np.float32)
            if axes:    # as the reduce_* primitive computes it (see _REDUCE)
                r = monoid(r, tuple(axes))
        outs.append(exact(r if r.shape == aval.shape else np.reshape(r, aval.shape),
                          aval.dtype))
    return outs


def _kernel_aval(*avals, kernel):
    for a, inp in zip(avals, kernel.inputs):
        if a.shape != inp.aval.shape or a.dtype != inp.aval.dtype:
            raise TypeError(f"kernel {kernel.name}: operand {a.str_short()} does not match "
                            f"input {inp}")
    return kernel.out_avals


def _kernel_impl(*args, kernel):
    return run_reference(kernel, *args)


kernel_p = Primitive("kernel", abstract_eval=_kernel_aval, impl=_kernel_impl,
                     multiple_results=True,
                     flops=lambda *avals, kernel: kernel.flops(), kind="kernel")


# ---- expanding kernels back into array equations ---------------------------------------
# A backend without a code generator for kernels (the interpreter) runs each kernel as the
# array equations it stands for: one NumPy call per body operation on the broadcast
# inputs, the same work as the unfused program, with no per-call interpretation of the
# body.

_REDUCE_PRIMS = {"add": "reduce_sum", "max": "reduce_max", "min": "reduce_min",
                 "mul": "reduce_prod"}


def _expand_kernel(eqn, out_eqns, renames=None, keep=frozenset()):
    from ..core.primitive import primitives
    from ..ir.jaxpr import JaxprEqn, Literal, Var
    k: Kernel = eqn.params["kernel"]
    prims = primitives()
    shape = k.shape
    full = {}                          # body var -> array-level var or literal
    for bv, inp, x in zip(k.body.invars, k.inputs, eqn.invars):
        if inp.aval.ndim == 0 or (inp.aval.shape == shape and inp.dims == tuple(range(len(shape)))):
            full[bv] = x
            continue
        src = x
        order = sorted(range(inp.aval.ndim), key=lambda i: inp.dims[i])
        if order != list(range(inp.aval.ndim)):
            t_aval = ShapedArray(tuple(inp.aval.shape[i] for i in order), inp.aval.dtype)
            tv = Var(t_aval)
            out_eqns.append(JaxprEqn(prims["transpose"], [src], [tv],
                                     {"permutation": tuple(order)}))
            src = tv
        bv_full = Var(ShapedArray(shape, inp.aval.dtype))
        out_eqns.append(JaxprEqn(prims["broadcast_in_dim"], [src], [bv_full],
                                 {"shape": shape, "broadcast_dimensions":
                                  tuple(sorted(inp.dims)), "sharding": None}))
        full[bv] = bv_full

    def read(v):
        return v if isinstance(v, Literal) else full[v]

    def rank(v):
        return v.aval.ndim if not isinstance(v, Literal) else 0

    for be in k.body.eqns:
        ins = [read(v) for v in be.invars]
        is_full = any(rank(v) > 0 for v in ins)
        outs = []
        for ov in be.outvars:
            nv = Var(ShapedArray(shape if is_full else (), ov.aval.dtype))
            full[ov] = nv
            outs.append(nv)
        out_eqns.append(be.replace(invars=ins, outvars=outs))
    inputs = {x for x in eqn.invars if not isinstance(x, Literal)}
    renamed = set()
    for bo, o, target in zip(k.body.outvars, k.outputs, eqn.outvars):
        v = read(bo)
        if rank(v) == 0 and shape:
            bv_full = Var(ShapedArray(shape, o.aval.dtype))
            out_eqns.append(JaxprEqn(prims["broadcast_in_dim"], [v], [bv_full],
                                     {"shape": shape, "broadcast_dimensions": (),
                                      "sharding": None}))
            v = bv_full
        if o.kind == "reduce" and o.axes:
            kept = tuple(n for i, n in enumerate(shape) if i not in o.axes)
            rv = Var(ShapedArray(kept, o.aval.dtype)) if kept != o.aval.shape else target
            out_eqns.append(JaxprEqn(prims[_REDUCE_PRIMS[o.monoid]], [v], [rv],
                                     {"axes": tuple(o.axes),
                                      **({"out_sharding": None} if o.monoid == "add"
                                         else {})}))
            v = rv
        if v is target:
            continue
        if not isinstance(v, Literal) and v.aval.shape == o.aval.shape:
            if renames is not None and target not in keep and v not in inputs and \
                    v not in renamed:
                # the value computed here, under the output's name: no copy (a second
                # output of the same value, a program output or a kernel operand passed
                # through keeps its own buffer: a copy)
                renames[target] = v
                renamed.add(v)
                continue
            out_eqns.append(JaxprEqn(prims["copy"], [v], [target], {}))
        else:
            out_eqns.append(JaxprEqn(prims["reshape"], [v], [target],
                                     {"new_sizes": tuple(o.aval.shape), "dimensions": None,
                                      "sharding": None}))


def expand_kernels(closed, keep=None, outputs_copied=False):
    """``closed`` with every kernel equation replaced by the array equations it stands for
    (same results; what a backend without a kernel code generator runs); a kernel for
    which ``keep(kernel)`` is true stays a kernel equation.  ``outputs_copied``: the
    caller copies the program's outputs, so an output may name a value another output or
    a later equation uses too (no copy equation for it)."""
    from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Literal
    j = closed.jaxpr
    expand = [e.primitive is kernel_p and not (keep and keep(e.params["kernel"]))
              for e in j.eqns]
    if not any(expand):
        return closed
    eqns, renames = [], {}
    kept = set() if outputs_copied else {v for v in j.outvars if not isinstance(v, Literal)}
    for e, ex in zip(j.eqns, expand):
        if renames and any(v in renames for v in e.invars if not isinstance(v, Literal)):
            e = e.replace(invars=[renames.get(v, v) if not isinstance(v, Literal) else v
                                  for v in e.invars])
        if ex:
            _expand_kernel(e, eqns, renames, kept)
        else:
            eqns.append(e)
    outvars = [v if isinstance(v, Literal) else renames.get(v, v) for v in j.outvars]
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, eqns, outvars), closed.consts)
