"""Native loops for the CPU backend: one ``scan`` or ``while`` equation becomes one Numba
function.

Layer: backends (native.py's ``CpuExecutable`` builds a ``NativeScan`` / ``NativeWhile`` for
each such equation, see ``NATIVE_LOOPS``; ``Unsupported`` keeps the equation on the
interpreter, visibly).  The body (and a while's condition) is optimised by the compile
pipeline (fusion included, so its elementwise chains become kernels; the compiler registers
its passes with ``base.set_body_optimizer``, so this module does not import it), then written as straight-line code
inside a native step loop (``for step in range(length)``; ``while True`` with the
condition and a ``break`` for a while):

- ``kernel`` equations: ``NativeKernel``'s own loop nest (native.py, generated with
  ``compile=False``), its local names prefixed so that several kernels share one function;
- ``dot_general``: a loop nest over static shapes.  The output's last axis is the innermost
  loop and the contraction runs just outside it (``out[j] += a[k] * b[k, j]``: contiguous,
  independent lanes, so LLVM vectorises it without reassociating a sum), unrolled by
  ``DOT_UNROLL`` terms added in order; an output with no free axis (a vector dot) keeps a
  scalar accumulator folded like a sum reduction;
- elementwise equations left unfused (rank-0 or empty operands) as one flat loop;
  ``broadcast_in_dim``, ``transpose``, ``slice``, ``rev``, ``iota``, ``concatenate``,
  ``dynamic_slice`` and ``dynamic_update_slice`` (start indices clamped like XLA) as loop
  nests; ``reshape`` (no ``dimensions``), ``squeeze``, ``copy`` and ``stop_gradient`` are
  renames of their operand's buffer; ``reduce_sum/max/min/prod`` left unfused (fusion off)
  as loop nests folding into the result.

An equation whose operands are all loop-invariant (consts, literals, values computed from
them) runs once, before the loop.  In a scan, an equation that reads x slices but no carry
(an RNN's input projection ``x_t @ W``) runs in a prepass loop over every step before the
step loop, its results kept in (length, size) buffers (at most ``PREPASS_MAX_BYTES``): the
steps of the prepass are independent, so they overlap, and the step loop's chain of
dependent operations gets shorter.  Every other intermediate has its own buffer, allocated
once per call before the loop; the carries live in the result arrays (copied from the
initial values first), x slices are views of the scanned operands, y slices are copied
into the stacked results.  Carry updates that read another carry go through a staging
buffer, so a permutation of the carries is exact.  Copies are written as loops (Numba's
array slice assignment costs seconds of compilation on first use).  A float32 sin/cos
argument beyond ``_vecmath.SIN_COS_LIMIT`` makes the function return a flag and the whole
loop reruns on the interpreter (exact, slow).

``cond`` becomes an ``if``/``elif`` chain over the clamped branch index (each arm its
branch's equations and copies into the shared results).

A nested ``scan`` or ``while`` becomes an inner loop (its carries in its result buffers, its
x slices views made at each inner step).

What is not handled raises ``Unsupported`` naming the first offending equation: other primitives, dtypes outside ``_cpu_ops.SUPPORTED_DTYPES``, a kernel
reading a transposed input, a ``dot_general`` of more than ``DOT_MAX_MACS`` multiply-adds
per step (BLAS on the interpreter is faster there than a plain loop nest).

The function goes through the persistent compile cache (_cache.py), so a second process
loads the loop instead of compiling it.
"""
from __future__ import annotations

import re

import numpy as np

from ...core.eager import host_value
from ...ir.jaxpr import Literal
from ...primitives import shape as _shape
from ...primitives.control_flow import cond_p, scan_p, while_p
from ...primitives.kernel import MONOIDS, kernel_p
from ...primitives.linalg import dot_general_p
from . import _ops as _cpu_ops
from ._ops import Unsupported, type_name

DOT_MAX_MACS = 1 << 20
"""A ``dot_general`` with more multiply-adds than this per step is not written as a loop
nest (a plain vectorised loop reaches a fraction of BLAS's speed on big operands, and the
interpreter's per-step overhead is small against such a step)."""

DOT_UNROLL = 8
"""The contraction loop of a ``dot_general`` is unrolled this many times (measured on the
64 x 64 float32 matrix-vector product: 2.7x faster than one term per pass)."""

PREPASS_MAX_BYTES = 1 << 24
"""An equation of a scan body whose results over all steps take more bytes than this stays
in the step loop (the prepass keeps its results for every step)."""

# the shape primitives this generator writes as loop nests: which primitives the backend
# has code for (keyed by the primitive itself, never its name), and its method writing each.
# Reductions left unfused (JAXLITE_FUSION=0) are written from their ``reduction`` fact
# (monoid loops), renames (same elements, same order) from their ``rename`` fact.
_SHAPE_LOOPS = {_shape.broadcast_in_dim_p: "broadcast", _shape.transpose_p: "transpose",
                _shape.slice_p: "slice", _shape.rev_p: "rev", _shape.iota_p: "iota",
                _shape.concatenate_p: "concatenate", _shape.dynamic_slice_p: "dynamic_slice",
                _shape.dynamic_update_slice_p: "dynamic_update_slice"}
# the local names NativeKernel's generated source uses (arrays a/o, loads x, temporaries t,
# loop indices i and j, accumulators acc, float64 scratch arrays w, constants k and id);
# attributes (np.int8) never match
_KERNEL_LOCAL = re.compile(r"(?<![\w.])((?:acc|id|a|o|x|t|i|j|k|w)\d+)\b")


def _optimise(closed):
    from ..base import optimize_body      # the compiler's passes, registered by the compiler
    return optimize_body(closed)


def _size(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64))


def _check_dtype(aval, what):
    if aval.dtype not in _cpu_ops.SUPPORTED_DTYPES:
        raise Unsupported(f"{what} of dtype {aval.dtype}")


class _Gen:
    """Writes the source of one scan's function (see ``NativeScan``)."""

    def __init__(self, body, num_consts, num_carry, length, reverse):
        self.body = body
        self.nc, self.ncar, self.length, self.reverse = num_consts, num_carry, length, reverse
        self.glb = dict(_cpu_ops.GLOBALS)
        self.pre = []            # before the step loop (one indent)
        self.step = []           # inside it (two indents)
        self.code = self.step    # where the equation being written goes
        self.step_head = []      # per-step views of the x slices
        self.invariant = set()   # body values that are the same at every step
        self.n_hoisted = 0
        self.store = {}          # body var -> ("flat", name) | ("xs", 2-d array) | ("row", name)
        # the prepass (scan only): equations that read x slices but no carry run for every
        # step in a loop of their own before the step loop; their results are read back
        # from (length, size) buffers, so the step loop's dependency chain is shorter
        self.prepass = []
        self.prepass_ok = False
        self.prepassed = set()   # values computed in the prepass
        self.main_only = set()   # values that exist only inside the step loop
        self.stacked = {}        # prepass buffer name -> its (length, size) array
        self.xs_arrays = []      # 2-d arrays read one row per step
        self.n_prepass = 0
        self.counter = 0
        self.views = {}          # (storage, shape) -> expression
        self.n_kernels = self.n_dots = 0

    def fresh(self, stem):
        self.counter += 1
        return f"{stem}{self.counter}"

    def const(self, value, dtype):
        name = self.fresh("kc")
        self.glb[name] = np.asarray(value, dtype)[()]
        return name

    # access to values -------------------------------------------------------------------
    def flat(self, v) -> str:
        """A name of a 1-d contiguous array holding ``v``'s elements (valid in the step)."""
        if isinstance(v, Literal):
            return self.literal_array(v)
        kind, ref = self.store[v]
        return f"{ref}r" if kind == "xs" else ref

    def literal_array(self, v):
        key = ("lit", id(v))
        if key not in self.views:
            name = self.fresh("lit")
            k = self.const(v.val, v.aval.dtype)
            self.pre += [f"{name} = np.empty(1, {type_name(v.aval.dtype)})", f"{name}[0] = {k}"]
            self.views[key] = name
        return self.views[key]

    def scalar(self, v, index="0") -> str:
        """An expression for element ``index`` (flat) of ``v``; a literal is a constant."""
        if isinstance(v, Literal):
            return self.const(v.val, v.aval.dtype)
        return f"{self.flat(v)}[{index}]"

    def shaped(self, v, shape) -> str:
        """An expression for ``v``'s elements as a C-contiguous array of ``shape``."""
        shape = tuple(int(d) for d in shape)
        if isinstance(v, Literal):
            base = ("flat", self.literal_array(v))
        else:
            base = self.store[v]
        key = (base, shape)
        if key in self.views:
            return self.views[key]
        kind, ref = base
        if kind == "xs" and len(shape) == 1:
            expr = f"{ref}r"
        elif kind == "row":          # a nested loop's x slice: a view made at each step
            expr = ref if len(shape) == 1 else f"{ref}.reshape({shape!r})"
        elif kind == "flat":
            if len(shape) == 1:
                expr = ref
            else:
                name = self.fresh("w")
                self.pre.append(f"{name} = {ref}.reshape({shape!r})")
                expr = name
        else:
            name = self.fresh("w")
            self.pre.append(f"{name} = {ref}.reshape({(self.length,) + shape!r})")
            self.step_head.append(f"{name}r = {name}[ix]")
            expr = f"{name}r"
        self.views[key] = expr
        return expr

    def copy(self, dst, src, n, scalar=False, row=None):
        """Lines copying ``n`` elements of flat ``src`` (a scalar when ``scalar``) into flat
        ``dst`` (its row ``row`` when given).  A loop: Numba's array slice assignment costs
        about 2 s of compilation the first time a process uses it."""
        e = self.fresh("e")
        d = f"{dst}[{row}, {e}]" if row else f"{dst}[{e}]"
        return [f"for {e} in range({n}):", f"    {d} = {src if scalar else f'{src}[{e}]'}"]

    def temp(self, v):
        _check_dtype(v.aval, "a scan body value")
        name = self.fresh("b")
        self.pre.append(f"{name} = np.empty({_size(v.aval)}, {type_name(v.aval.dtype)})")
        self.store[v] = ("flat", name)
        return name

    # equations ------------------------------------------------------------------------
    def equation(self, eqn, top=False):
        # an equation of loop-invariant operands only runs once, before the loop
        hoist = not eqn.primitive.effectful and all(
            isinstance(v, Literal) or v in self.invariant for v in eqn.invars)
        prepass = (top and self.prepass_ok and not hoist and not eqn.primitive.effectful and
                   not any(v in self.main_only for v in eqn.invars
                           if not isinstance(v, Literal)) and
                   sum(self.length * _size(v.aval) * v.aval.dtype.itemsize
                       for v in eqn.outvars) <= PREPASS_MAX_BYTES)
        if top and not hoist and not prepass:
            self.restack(eqn.invars)
        self.code = self.pre if hoist else (self.prepass if prepass else self.step)
        self._equation(eqn)
        if hoist:
            self.n_hoisted += 1
            self.invariant.update(eqn.outvars)
        elif prepass:
            self.n_prepass += 1
            self.prepassed.update(eqn.outvars)
        elif top:
            self.main_only.update(eqn.outvars)

    def restack(self, vs):
        """Values computed in the prepass that the step loop reads: the prepass copies each
        into a row of a (length, size) buffer, the step loop reads that row."""
        for v in vs:
            if isinstance(v, Literal) or v not in self.prepassed:
                continue
            kind, ref = self.store[v]
            if kind != "flat":
                continue                # a view of a scanned operand already
            if ref not in self.stacked:
                name = self.fresh("p")
                n = _size(v.aval)
                self.pre.append(f"{name} = np.empty(({self.length}, {n}), "
                                f"{type_name(v.aval.dtype)})")
                self.prepass += self.copy(name, ref, n, row="ix")
                self.stacked[ref] = name
                self.xs_arrays.append(name)
            self.store[v] = ("xs", self.stacked[ref])

    def _equation(self, eqn):
        prim = eqn.primitive
        if prim is kernel_p:
            return self.kernel(eqn)
        if prim is dot_general_p:
            return self.dot(eqn)
        if prim.renames(eqn.params) and not isinstance(eqn.invars[0], Literal) and \
                eqn.invars[0].aval.dtype == eqn.outvars[0].aval.dtype:
            self.store[eqn.outvars[0]] = self.store[eqn.invars[0]]
            return
        if prim is cond_p:
            return self.cond(eqn)
        if prim.reduction is not None and prim.reduction.monoid in MONOIDS:
            return self.reduction(eqn, prim.reduction.monoid)
        if prim is scan_p:
            return self.nested_scan(eqn)
        if prim is while_p:
            return self.nested_while(eqn)
        if prim in _SHAPE_LOOPS:
            if any(not isinstance(v, Literal) and v.aval.dtype not in _cpu_ops.SUPPORTED_DTYPES
                   for v in list(eqn.invars) + list(eqn.outvars)):
                raise Unsupported(f"{prim.name} of dtype "
                                  f"{[v.aval.dtype.name for v in eqn.invars]}")
            return getattr(self, _SHAPE_LOOPS[prim])(eqn)
        if prim.elementwise and prim.scalar_op and not prim.multiple_results:
            return self.elementwise(eqn)
        raise Unsupported(f"{prim.name} in the scan body (no loop code generator)")

    def kernel(self, eqn):
        from .native import NativeKernel
        k = eqn.params["kernel"]
        nk = NativeKernel(k, parallel=False, compile=False)
        if nk.size == 0:
            raise Unsupported(f"kernel {k.name} over an empty iteration space")
        if any(p is not None for p in nk.in_perm):
            raise Unsupported(f"kernel {k.name} reads an input transposed")
        self.n_kernels += 1
        prefix = self.fresh("q") + "_"
        q = max(len(nk.cshape), 1)
        for v in eqn.outvars:
            self.temp(v)
        for j, (v, cs) in enumerate(zip(eqn.invars, nk.in_cshape)):
            self.code.append(f"{prefix}a{j} = {self.shaped(v, cs or (1,) * q)}")
        for j, (v, cs) in enumerate(zip(eqn.outvars, nk.out_cshape)):
            self.code.append(f"{prefix}o{j} = {self.shaped(v, cs or (1,) * q)}")
        for name, val in nk.globals.items():
            if name not in _cpu_ops.GLOBALS:
                self.glb[prefix + name] = val
        lines = nk.source.splitlines()
        if not (lines[0].startswith("def kern(") and lines[1] == "    flag = 0" and
                lines[-1] == "    return flag"):
            raise Unsupported(f"kernel {k.name}: NativeKernel's source layout is not the one "
                              f"this generator inlines")
        for line in lines[2:-1]:
            self.code.append(_KERNEL_LOCAL.sub(lambda m: prefix + m.group(1), line[4:]))

    def dot(self, eqn):
        lhs, rhs = eqn.invars
        out = eqn.outvars[0]
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        la, ra = lhs.aval, rhs.aval
        for a in (la, ra, out.aval):
            _check_dtype(a, "dot_general operand")
        dt, odt = la.dtype, out.aval.dtype
        if dt == np.bool_ or ra.dtype != dt:
            raise Unsupported(f"dot_general of {dt} and {ra.dtype}")
        if odt != dt and np.result_type(dt, odt) != odt:
            raise Unsupported(f"dot_general of {dt} with preferred type {odt}")
        k = int(np.prod([la.shape[a] for a in lc], dtype=np.int64))
        if _size(out.aval) * k > DOT_MAX_MACS:
            raise Unsupported(f"dot_general of {_size(out.aval) * k} multiply-adds per step "
                              f"(more than {DOT_MAX_MACS}: BLAS is faster)")
        self.n_dots += 1
        o = self.temp(out)
        if _size(out.aval) == 0:
            return
        tag = self.fresh("d")
        lf = [a for a in range(la.ndim) if a not in lc and a not in lb]
        rf = [a for a in range(ra.ndim) if a not in rc and a not in rb]
        bv = [f"{tag}b{p}" for p in range(len(lb))]
        cv = [f"{tag}c{p}" for p in range(len(lc))]
        lv = [f"{tag}l{p}" for p in range(len(lf))]
        rv = [f"{tag}r{p}" for p in range(len(rf))]
        sizes = dict(zip(bv, [la.shape[a] for a in lb]))
        sizes.update(zip(cv, [la.shape[a] for a in lc]))
        sizes.update(zip(lv, [la.shape[a] for a in lf]))
        sizes.update(zip(rv, [ra.shape[a] for a in rf]))

        def index_of(ndim, batch, contract, free, free_vars):
            ix = [None] * ndim
            for vars_, axes in ((bv, batch), (cv, contract), (free_vars, free)):
                for var, a in zip(vars_, axes):
                    ix[a] = var
            return ix

        lix = index_of(la.ndim, lb, lc, lf, lv)
        rix = index_of(ra.ndim, rb, rc, rf, rv)
        T = type_name(odt)
        zero = self.const(0, odt)
        last_c = cv[-1] if cv else None

        def operand(v, aval, ix, u):
            """``v``'s element at ``ix`` with the last contraction index moved by ``u``."""
            if aval.ndim == 0:
                e = self.scalar(v)
            else:
                ix = [f"{x} + {u}" if (x == last_c and u) else x for x in ix]
                e = f"{self.shaped(v, aval.shape)}[{', '.join(ix)}]"
            return e if odt == dt else f"{T}({e})"

        oref = (f"{self.shaped(out, out.aval.shape)}[{', '.join(bv + lv + rv)}]"
                if out.aval.ndim else f"{o}[0]")
        lines, pad = [], ""

        def loop(var, start=0, stop=None, step=1):
            nonlocal pad
            stop = sizes[var] if stop is None else stop
            rng = f"{stop}" if (start, step) == (0, 1) else f"{start}, {stop}, {step}"
            lines.append(f"{pad}for {var} in range({rng}):")
            pad += "    "

        free = lv + rv
        if not free:
            # a dot product per output element: a scalar accumulator (folded like a sum
            # reduction: reassociable, so LLVM vectorises it)
            for var in bv:
                loop(var)
            lines.append(f"{pad}acc = {zero}")
            for var in cv:
                loop(var)
            prod = _cpu_ops.emit("mul", [operand(lhs, la, lix, 0), operand(rhs, ra, rix, 0)],
                                 [odt, odt], odt, {})
            lines.append(f"{pad}acc = {T}({_cpu_ops.accumulate('add', 'acc', prod, odt)})")
            pad = pad[:4 * len(bv)]
            lines.append(f"{pad}{oref} = acc")
        else:
            # out[..., j] += a[..., k] * b[..., k, j], j innermost; the last contraction
            # loop is unrolled by DOT_UNROLL (the partial sum stays in a register for that
            # many terms, added in order: the same rounding as one term at a time)
            inner = free[-1]
            lines += self.copy(o, zero, _size(out.aval), scalar=True)
            for var in bv + free[:-1] + cv[:-1]:
                loop(var)
            base = pad
            kl = sizes[last_c] if cv else 1
            main = kl - kl % DOT_UNROLL if kl >= DOT_UNROLL else 0
            for start, stop, un in ((0, main, DOT_UNROLL), (main, kl, 1)):
                if start >= stop:
                    continue
                pad = base
                if cv:
                    loop(last_c, start, stop, un)
                loads, inner_loads = [], []
                for u in range(un):
                    for nm, v, aval, ix in (("av", lhs, la, lix), ("bv", rhs, ra, rix)):
                        (inner_loads if inner in ix else loads).append(
                            f"{nm}{u} = {operand(v, aval, ix, u)}")
                lines += [pad + s for s in loads]
                loop(inner)
                lines += [pad + s for s in inner_loads]
                s = oref
                for u in range(un):
                    prod = _cpu_ops.emit("mul", [f"av{u}", f"bv{u}"], [odt, odt], odt, {})
                    s = f"{T}({_cpu_ops.emit('add', [s, prod], [odt, odt], odt, {})})"
                lines.append(f"{pad}{oref} = {s}")
        # the scalar names are shared by every dot: prefix them
        self.code += [re.sub(r"\b(acc|av\d*|bv\d*)\b", lambda m: tag + m.group(1), ln)
                      for ln in lines]

    def elementwise(self, eqn):
        out = eqn.outvars[0]
        o = self.temp(out)
        n = _size(out.aval)
        if n == 0:
            return
        tag = self.fresh("e")
        names = []
        for v in eqn.invars:
            # one flat index for every operand of rank >= 1: only where it has the result's
            # shape (an implicit size-1 broadcast, which the compile pipeline makes
            # explicit, stays on the interpreter)
            if not isinstance(v, Literal) and v.aval.ndim and v.aval.shape != out.aval.shape:
                raise Unsupported(f"{eqn.primitive.name} of shapes "
                                  f"{[getattr(u.aval, 'shape', ()) for u in eqn.invars]}")
        for v in eqn.invars:
            full = not isinstance(v, Literal) and v.aval.ndim > 0
            names.append(self.scalar(v, tag if full else "0"))
        dts = [v.aval.dtype for v in eqn.invars]
        op = eqn.primitive.scalar_op
        expr = _cpu_ops.emit(op, names, dts, out.aval.dtype, eqn.params)
        self.code.append(f"for {tag} in range({n}):")
        if op in _cpu_ops.TRIG_OPS and dts[0] == np.float32:
            self.code.append(f"    flag += _vm_oor({names[0]})")
        self.code.append(f"    {o}[{tag}] = {type_name(out.aval.dtype)}({expr})")

    def cond(self, eqn):
        """``lax.cond``/``switch``: the clamped branch index picks one ``if`` arm; each arm
        is its branch's (optimised) equations, then copies into the shared results."""
        index, *ops = eqn.invars
        target = self.code
        outs = [self.temp(v) for v in eqn.outvars]
        arms = []
        for br in eqn.params["branches"]:
            br = _optimise(br)
            j = br.jaxpr
            if j.constvars:
                raise Unsupported("cond branch with constants")
            for bv, op in zip(j.invars, ops):
                self.store[bv] = (("flat", self.literal_array(op)) if isinstance(op, Literal)
                                  else self.store[op])
                if isinstance(op, Literal) or op in self.invariant:
                    self.invariant.add(bv)
            saved, self.step = self.step, []
            try:
                for e in j.eqns:
                    self.equation(e)
                for o, v in zip(outs, j.outvars):
                    lit = isinstance(v, Literal)
                    src = self.const(v.val, v.aval.dtype) if lit else self.flat(v)
                    self.step += self.copy(o, src, _size(v.aval), scalar=lit)
                arms.append(self.step or ["pass"])
            finally:
                self.step = saved
        k = self.fresh("br")
        lines = [f"{k} = min(max(np.int64({self.scalar(index)}), 0), {len(arms) - 1})"]
        for i, arm in enumerate(arms):
            lines.append(f"{'if' if i == 0 else 'elif'} {k} == {i}:" if i < len(arms) - 1
                         else ("else:" if i else "if True:"))
            lines += ["    " + ln for ln in arm]
        target += lines

    def _alias_operands(self, invars, ops):
        """Body variables ``invars`` read the buffers of the equation's operands ``ops``."""
        for bv, op in zip(invars, ops):
            self.store[bv] = (("flat", self.literal_array(op)) if isinstance(op, Literal)
                              else self.store[op])
            if isinstance(op, Literal) or op in self.invariant:
                self.invariant.add(bv)

    def _init_carries(self, names, ops):
        lines = []
        for name, op in zip(names, ops):
            lit = isinstance(op, Literal)
            src = self.const(op.val, op.aval.dtype) if lit else self.flat(op)
            lines += self.copy(name, src, _size(op.aval), scalar=lit)
        return lines

    def _body_lines(self, eqns, after=()):
        """The lines of ``eqns`` (and then of the callable ``after``, which returns more
        lines) written as a nested loop's body."""
        saved, self.step = self.step, []
        try:
            for e in eqns:
                self.equation(e)
            self.step += after()
            return self.step
        finally:
            self.step = saved

    def nested_scan(self, eqn):
        """A scan inside a loop body: an inner ``for`` loop; its carries live in its result
        buffers, its x slices are views of the operands' buffers made at each inner step,
        its y slices are copied into the stacked result buffers."""
        p = eqn.params
        body = _optimise(p["jaxpr"])
        j = body.jaxpr
        if j.constvars:
            raise Unsupported("nested scan body with constants")
        nc, ncar, L = p["num_consts"], p["num_carry"], int(p["length"])
        ops = eqn.invars
        target = self.code
        outs = [self.temp(v) for v in eqn.outvars]
        lines = self._init_carries(outs[:ncar], ops[nc:nc + ncar])
        self._alias_operands(j.invars[:nc], ops[:nc])
        for bv, name in zip(j.invars[nc:nc + ncar], outs[:ncar]):
            self.store[bv] = ("flat", name)
        tag = self.fresh("s")
        ixv = f"{tag}ix"
        head = []
        for bv, op in zip(j.invars[nc + ncar:], ops[nc + ncar:]):
            n, r = _size(bv.aval), self.fresh("r")
            head.append(f"{r} = {self.flat(op)}[{ixv} * {n}:{ixv} * {n} + {n}]")
            self.store[bv] = ("row", r)

        def results():
            out = []
            for y, v in zip(outs[ncar:], j.outvars[ncar:]):
                n, lit = _size(v.aval), isinstance(v, Literal)
                src = self.const(v.val, v.aval.dtype) if lit else self.flat(v)
                e = self.fresh("e")
                out += [f"for {e} in range({n}):",
                        f"    {y}[{ixv} * {n} + {e}] = {src if lit else f'{src}[{e}]'}"]
            return out + self.carry_update(j.outvars[:ncar], outs[:ncar])
        inner = self._body_lines(j.eqns, results)
        lines.append(f"for {tag} in range({L}):")
        lines.append(f"    {ixv} = {L - 1} - {tag}" if p["reverse"] else f"    {ixv} = {tag}")
        lines += ["    " + ln for ln in head + inner]
        target += lines

    def nested_while(self, eqn):
        """A while inside a loop body: an inner ``while True`` loop over its result
        buffers (the carries)."""
        p = eqn.params
        cond, body = _optimise(p["cond_jaxpr"]), _optimise(p["body_jaxpr"])
        cj, bj = cond.jaxpr, body.jaxpr
        if cj.constvars or bj.constvars:
            raise Unsupported("nested while with constants")
        ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
        ops = eqn.invars
        target = self.code
        outs = [self.temp(v) for v in eqn.outvars]
        lines = self._init_carries(outs, ops[ncc + nbc:])
        self._alias_operands(cj.invars[:ncc], ops[:ncc])
        self._alias_operands(bj.invars[:nbc], ops[ncc:ncc + nbc])
        for bv, cv, name in zip(bj.invars[nbc:], cj.invars[ncc:], outs):
            self.store[bv] = self.store[cv] = ("flat", name)
        test = self._body_lines(cj.eqns, lambda: [f"if not {self.scalar(cj.outvars[0])}:",
                                                  "    break"])
        inner = self._body_lines(bj.eqns, lambda: self.carry_update(bj.outvars, outs) +
                                 ["if flag:", "    return flag"])
        lines.append("while True:")
        lines += ["    " + ln for ln in test + inner]
        target += lines

    def reduction(self, eqn, monoid):
        """``reduce_*`` over ``axes``: the result starts at the monoid's identity and each
        element of the operand is folded into its slot (the scalar-op table's rule)."""
        x, out = eqn.invars[0], eqn.outvars[0]
        if isinstance(x, Literal):
            raise Unsupported(f"{eqn.primitive.name} of a literal")
        axes = set(eqn.params["axes"])
        dt = out.aval.dtype
        o = self.temp(out)
        _check_dtype(x.aval, eqn.primitive.name)
        ident = self.const(_cpu_ops.identity(monoid, dt), dt)
        self.code += self.copy(o, ident, _size(out.aval), scalar=True)
        T = type_name(dt)

        def line(vs):
            dst = self.at(out, [v for a, v in enumerate(vs) if a not in axes])
            return f"{dst} = {T}({_cpu_ops.accumulate(monoid, dst, self.at(x, vs), dt)})"
        self._nest(x.aval.shape, line)

    def _nest(self, shape, line_of):
        """A loop nest over ``shape`` (in the step) whose body is ``line_of(loop vars)``."""
        if any(n == 0 for n in shape):
            return
        tag = self.fresh("n")
        vs = [f"{tag}_{d}" for d in range(len(shape))]
        body = line_of(vs)       # first: it may add views to self.pre (where this may go)
        pad = ""
        for var, n in zip(vs, shape):
            self.code.append(f"{pad}for {var} in range({n}):")
            pad += "    "
        self.code.append(pad + body)

    def at(self, v, ix) -> str:
        """Element ``ix`` (index expressions, one per axis) of ``v``."""
        if isinstance(v, Literal) or v.aval.ndim == 0:
            return self.scalar(v)
        return f"{self.shaped(v, v.aval.shape)}[{', '.join(ix)}]"

    def _index_copy(self, out, src_expr_of):
        """``out[i...] = <src_expr_of(loop vars)>`` as a loop nest over ``out``'s shape."""
        self.temp(out)
        self._nest(out.aval.shape, lambda vs: f"{self.at(out, vs)} = {src_expr_of(vs)}")

    def _clamped_starts(self, idxs, shape, sizes):
        """Per-step start indices clamped like XLA (the slice stays in bounds)."""
        names = []
        for i, n, s in zip(idxs, shape, sizes):
            d = self.fresh("ds")
            x = self.scalar(i)
            if i.aval.dtype.kind == "u":     # no negative starts; no int64 wrap-around
                self.code.append(f"{d} = np.int64(min({x}, {type_name(i.aval.dtype)}({n - s})))")
            else:
                self.code.append(f"{d} = min(max(np.int64({x}), 0), {n - s})")
            names.append(d)
        return names

    def broadcast(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        dims = eqn.params["broadcast_dimensions"]
        xshape = () if isinstance(x, Literal) else x.aval.shape
        self._index_copy(out, lambda vs: self.at(x, [
            vs[d] if xshape[a] == out.aval.shape[d] else "0" for a, d in enumerate(dims)]))

    def transpose(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        perm = eqn.params["permutation"]

        def src(vs):
            ix = [None] * len(perm)
            for k, a in enumerate(perm):
                ix[a] = vs[k]
            return self.at(x, ix)
        self._index_copy(out, src)

    def slice(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        p = eqn.params
        strides = p.get("strides") or (1,) * len(p["start_indices"])
        self._index_copy(out, lambda vs: self.at(x, [
            f"{s} + {st} * {v}" for v, s, st in zip(vs, p["start_indices"], strides)]))

    def rev(self, eqn):
        x, out = eqn.invars[0], eqn.outvars[0]
        dims = set(eqn.params["dimensions"])
        self._index_copy(out, lambda vs: self.at(x, [
            f"{n - 1} - {v}" if a in dims else v
            for a, (v, n) in enumerate(zip(vs, out.aval.shape))]))

    def iota(self, eqn):
        out = eqn.outvars[0]
        d = eqn.params["dimension"]
        T = type_name(out.aval.dtype)
        self._index_copy(out, lambda vs: f"{T}({vs[d]})")

    def concatenate(self, eqn):
        out = eqn.outvars[0]
        d = eqn.params["dimension"]
        self.temp(out)
        offset = 0
        for x in eqn.invars:
            if isinstance(x, Literal):
                raise Unsupported("concatenate of a literal")

            def line(vs, x=x, offset=offset):
                dst = [f"{v} + {offset}" if a == d else v for a, v in enumerate(vs)]
                return f"{self.at(out, dst)} = {self.at(x, vs)}"
            self._nest(x.aval.shape, line)
            offset += x.aval.shape[d]

    def dynamic_slice(self, eqn):
        x, *idxs = eqn.invars
        out = eqn.outvars[0]
        starts = self._clamped_starts(idxs, x.aval.shape, out.aval.shape)
        self._index_copy(out, lambda vs: self.at(x, [f"{v} + {s}" for v, s in
                                                     zip(vs, starts)]))

    def dynamic_update_slice(self, eqn):
        x, upd, *idxs = eqn.invars
        out = eqn.outvars[0]
        o = self.temp(out)
        if _size(out.aval):
            self.code += self.copy(o, self.flat(x), _size(out.aval))
        starts = self._clamped_starts(idxs, x.aval.shape, upd.aval.shape)
        self._nest(upd.aval.shape, lambda vs: (
            f"{self.at(out, [f'{v} + {s}' for v, s in zip(vs, starts)])} = "
            f"{self.at(upd, vs)}"))

    # the whole function ---------------------------------------------------------------
    def generate(self):
        body = self.body.jaxpr
        nc, ncar = self.nc, self.ncar
        nxs = len(body.invars) - nc - ncar
        nbc = len(body.constvars)
        outs = body.outvars
        nys = len(outs) - ncar
        for v in list(body.invars) + list(body.constvars):
            _check_dtype(v.aval, "a scan operand")
        for v in outs:
            _check_dtype(v.aval, "a scan result")
        for j, v in enumerate(body.constvars):
            self.store[v] = ("flat", f"bc{j}")
        self.invariant.update(body.constvars)
        self.invariant.update(body.invars[:nc])
        for j, v in enumerate(body.invars):
            self.store[v] = (("flat", f"c{j}") if j < nc else
                             ("flat", f"co{j - nc}") if j < nc + ncar else
                             ("xs", f"x{j - nc - ncar}"))
        self.xs_arrays = [f"x{j}" for j in range(nxs)]
        self.main_only.update(body.invars[nc:nc + ncar])
        self.prepass_ok = True
        for eqn in body.eqns:
            self.equation(eqn, top=True)
        self.prepass_ok = False
        self.restack(outs)

        # results: y slices first (they may read the old carries), then the carries
        tail = []
        for j, v in enumerate(outs[ncar:]):
            if _size(v.aval):
                lit = isinstance(v, Literal)
                src = self.const(v.val, v.aval.dtype) if lit else self.flat(v)
                tail += self.copy(f"y{j}", src, _size(v.aval), scalar=lit, row="ix")
        tail += self.carry_update(outs[:ncar])

        args = ([f"c{j}" for j in range(nc)] + [f"bc{j}" for j in range(nbc)] +
                [f"ci{j}" for j in range(ncar)] + [f"x{j}" for j in range(nxs)] +
                [f"co{j}" for j in range(ncar)] + [f"y{j}" for j in range(nys)])
        lines = [f"def kern({', '.join(args)}):", "    flag = 0"]
        lines += self.carry_init(body.invars[nc:nc + ncar])
        lines += ["    " + s for s in self.pre]
        L = self.length
        for code in ([self.prepass] if self.prepass else []) + [self.step + tail]:
            lines.append(f"    for step in range({L}):")
            lines.append(f"        ix = {L - 1} - step" if self.reverse else "        ix = step")
            lines += [f"        {a}r = {a}[ix]" for a in self.xs_arrays]
            lines += ["        " + s for s in self.step_head + code]
        lines.append("    return flag")
        return "\n".join(lines)

    def carry_init(self, carry_invars):
        lines = []
        for j, v in enumerate(carry_invars):
            lines += ["    " + ln for ln in self.copy(f"co{j}", f"ci{j}", _size(v.aval))]
        return lines

    def carry_update(self, outs, names=None):
        """Lines writing the new carries ``outs`` into their buffers ``names`` (default
        ``co0, co1, ...``); a carry that reads another carry is staged first, so the update
        is simultaneous."""
        names = names or [f"co{j}" for j in range(len(outs))]
        staged, direct = [], []
        for name, v in zip(names, outs):
            if not _size(v.aval):
                continue
            if isinstance(v, Literal):
                direct += self.copy(name, self.const(v.val, v.aval.dtype), _size(v.aval),
                                    scalar=True)
                continue
            kind, ref = self.store[v]
            if ref == name:
                continue              # unchanged
            if kind == "flat" and ref in names:
                s = self.fresh("s")
                self.pre.append(f"{s} = np.empty({_size(v.aval)}, "
                                f"{type_name(v.aval.dtype)})")
                staged += self.copy(s, ref, _size(v.aval))
                direct += self.copy(name, s, _size(v.aval))
            else:
                direct += self.copy(name, self.flat(v), _size(v.aval))
        return staged + direct

    def generate_while(self, cond, body, cond_nconsts, body_nconsts):
        """The function of a ``while``: ``kern(cond consts, cond's own constants, body
        consts, body's own constants, initial carries, carry results) -> flag``."""
        cj, bj = cond.jaxpr, body.jaxpr
        ncar = len(bj.outvars)
        for v in list(cj.invars) + list(cj.constvars) + list(bj.invars) + list(bj.constvars):
            _check_dtype(v.aval, "a while operand")
        for jaxpr, pre, nconst, cname in ((cj, "ccb", cond_nconsts, "cc"),
                                          (bj, "bc", body_nconsts, "c")):
            for j, v in enumerate(jaxpr.constvars):
                self.store[v] = ("flat", f"{pre}{j}")
            for j, v in enumerate(jaxpr.invars):
                self.store[v] = ("flat", f"{cname}{j}" if j < nconst else f"co{j - nconst}")
            self.invariant.update(jaxpr.constvars)
            self.invariant.update(jaxpr.invars[:nconst])
        for eqn in cj.eqns:
            self.equation(eqn)
        self.step += [f"if not {self.scalar(cj.outvars[0])}:", "    break"]
        for eqn in bj.eqns:
            self.equation(eqn)
        tail = self.carry_update(bj.outvars)
        args = ([f"cc{j}" for j in range(cond_nconsts)] +
                [f"ccb{j}" for j in range(len(cj.constvars))] +
                [f"c{j}" for j in range(body_nconsts)] +
                [f"bc{j}" for j in range(len(bj.constvars))] +
                [f"ci{j}" for j in range(ncar)] + [f"co{j}" for j in range(ncar)])
        lines = [f"def kern({', '.join(args)}):", "    flag = 0"]
        lines += self.carry_init(bj.invars[body_nconsts:])
        lines += ["    " + s for s in self.pre]
        # a flagged (inexact) sin/cos could make the condition wrong: stop at once, the
        # caller reruns the loop on the interpreter
        lines += ["    if flag:", "        return flag", "    while True:"]
        lines += ["        " + s for s in self.step + tail]
        lines += ["        if flag:", "            return flag", "    return flag"]
        return "\n".join(lines)


class NativeScan:
    """A ``scan`` equation compiled to one native function; call it with the scan's
    operands (NumPy arrays: consts, initial carries, scanned operands), it returns the
    final carries and the stacked ys like ``scan_p``'s implementation.

    Raises (from the constructor) ``Unsupported`` when the body holds something the loop
    generator does not handle (the message names it), or Numba cannot compile the source.
    """

    def __init__(self, eqn):
        from numba import types
        import numba
        p = eqn.params
        self.params = p
        self.prim = eqn.primitive
        self.nc, self.ncar = p["num_consts"], p["num_carry"]
        self.length, self.reverse = int(p["length"]), bool(p["reverse"])
        self.body = _optimise(p["jaxpr"])
        self.out_avals = [v.aval for v in eqn.outvars]
        self.in_avals = [v.aval for v in eqn.invars]
        self._slice_sizes = [int(np.prod(a.shape[1:], dtype=np.int64))
                             for a in self.in_avals[p["num_consts"] + p["num_carry"]:]]
        # the flat carries and the (length, slice size) stacked ys the function writes
        self._out_alloc = [((_size(a),) if i < p["num_carry"] else
                            (self.length, int(np.prod(a.shape[1:], dtype=np.int64))), a.dtype)
                           for i, a in enumerate(self.out_avals)]
        gen = _Gen(self.body, self.nc, self.ncar, self.length, self.reverse)
        try:
            self.source = gen.generate()
        except Unsupported:
            raise
        except Exception as e:     # a bug of the generator: fall back visibly, not fail
            raise Unsupported(f"loop generator error {type(e).__name__}: {e}") from e
        self.n_kernels, self.n_dots, self.n_hoisted = gen.n_kernels, gen.n_dots, gen.n_hoisted
        self.n_prepass = gen.n_prepass
        self._body_consts = [np.ascontiguousarray(host_value(c)).reshape(-1)
                             for c in self.body.consts]
        j = self.body.jaxpr
        nc, ncar = self.nc, self.ncar

        def arr(aval, nd, readonly):
            return types.Array(numba.from_dtype(aval.dtype), nd, "C", readonly=readonly)
        argtys = ([arr(v.aval, 1, True) for v in j.invars[:nc]] +
                  [arr(v.aval, 1, True) for v in j.constvars] +
                  [arr(v.aval, 1, True) for v in j.invars[nc:nc + ncar]] +
                  [arr(v.aval, 2, True) for v in j.invars[nc + ncar:]] +
                  [arr(v.aval, 1, False) for v in j.outvars[:ncar]] +
                  [arr(v.aval, 2, False) for v in j.outvars[ncar:]])
        self._fn = _compile(self.source, gen.glb, argtys)

    def __call__(self, *args):
        nc, ncar, L = self.nc, self.ncar, self.length
        flat = [np.ascontiguousarray(a).reshape(-1) for a in args[:nc + ncar]]
        xs = [np.ascontiguousarray(a).reshape(L, n) for a, n in zip(args[nc + ncar:],
                                                                     self._slice_sizes)]
        outs = [np.empty(shape, dt) for shape, dt in self._out_alloc]
        flag = self._fn(*flat[:nc], *self._body_consts, *flat[nc:], *xs, *outs)
        if flag:
            # a float32 sin/cos argument beyond the vectorised reduction's range: exact rerun
            return self.prim.impl(*args, **self.params)
        return [o.reshape(a.shape) for o, a in zip(outs, self.out_avals)]

    # what CpuExecutable.as_text prints for each native step: describe, kernel.pretty, source
    @property
    def kernel(self):
        return self

    def pretty(self) -> str:
        return "scan body (optimised):\n" + str(self.body)

    def describe(self) -> str:
        return (f"native scan loop: {self.length} steps{' reversed' if self.reverse else ''}"
                f", body of {len(self.body.jaxpr.eqns)} equation(s): {self.n_kernels} "
                f"kernel(s), {self.n_dots} dot loop nest(s), {self.n_hoisted} hoisted out of "
                f"the loop, {self.n_prepass} in the prepass")


class NativeWhile:
    """A ``while`` equation (``lax.while_loop``, ``fori_loop`` with traced bounds) compiled
    to one native function: the condition and the body (each optimised) are written into
    one ``while True`` loop.  Called with the equation's operands (cond consts, body
    consts, initial carries), returns the final carries.

    Raises (from the constructor) ``Unsupported`` as ``NativeScan``.
    """

    def __init__(self, eqn):
        from numba import types
        import numba
        p = eqn.params
        self.params = p
        self.prim = eqn.primitive
        self.cond = _optimise(p["cond_jaxpr"])
        self.body = _optimise(p["body_jaxpr"])
        self.ncc, self.nbc = p["cond_nconsts"], p["body_nconsts"]
        self.out_avals = [v.aval for v in eqn.outvars]
        self._out_alloc = [((_size(a),), a.dtype) for a in self.out_avals]
        gen = _Gen(None, 0, len(self.out_avals), 0, False)
        try:
            self.source = gen.generate_while(self.cond, self.body, self.ncc, self.nbc)
        except Unsupported:
            raise
        except Exception as e:     # a bug of the generator: fall back visibly, not fail
            raise Unsupported(f"loop generator error {type(e).__name__}: {e}") from e
        self.n_kernels, self.n_dots, self.n_hoisted = gen.n_kernels, gen.n_dots, gen.n_hoisted
        self._cond_consts = [np.ascontiguousarray(host_value(c)).reshape(-1)
                             for c in self.cond.consts]
        self._body_consts = [np.ascontiguousarray(host_value(c)).reshape(-1)
                             for c in self.body.consts]
        cj, bj = self.cond.jaxpr, self.body.jaxpr

        def arr(aval, readonly):
            return types.Array(numba.from_dtype(aval.dtype), 1, "C", readonly=readonly)
        argtys = ([arr(v.aval, True) for v in cj.invars[:self.ncc]] +
                  [arr(v.aval, True) for v in cj.constvars] +
                  [arr(v.aval, True) for v in bj.invars[:self.nbc]] +
                  [arr(v.aval, True) for v in bj.constvars] +
                  [arr(v.aval, True) for v in bj.invars[self.nbc:]] +
                  [arr(a, False) for a in self.out_avals])
        self._fn = _compile(self.source, gen.glb, argtys)

    def __call__(self, *args):
        flat = [np.ascontiguousarray(a).reshape(-1) for a in args]
        ncc, nbc = self.ncc, self.nbc
        outs = [np.empty(shape, dt) for shape, dt in self._out_alloc]
        flag = self._fn(*flat[:ncc], *self._cond_consts, *flat[ncc:ncc + nbc],
                        *self._body_consts, *flat[ncc + nbc:], *outs)
        if flag:
            return self.prim.impl(*args, **self.params)
        return [o.reshape(a.shape) for o, a in zip(outs, self.out_avals)]

    @property
    def kernel(self):
        return self

    def pretty(self) -> str:
        return (f"while cond (optimised):\n{self.cond}\nwhile body (optimised):\n"
                f"{self.body}")

    def describe(self) -> str:
        return (f"native while loop: cond of {len(self.cond.jaxpr.eqns)} and body of "
                f"{len(self.body.jaxpr.eqns)} equation(s): {self.n_kernels} kernel(s), "
                f"{self.n_dots} dot loop nest(s), {self.n_hoisted} hoisted out of the loop")


NATIVE_LOOPS = {scan_p: NativeScan, while_p: NativeWhile}
"""Loop primitive -> the class compiling such an equation (what native.py's hook looks up)."""


def _compile(source, glb, argtys):
    from numba import njit, types
    from .native import _NUMBA_OPTS
    try:
        exec(compile(source, "<jaxlite scan loop>", "exec"), glb)
    except SyntaxError as e:      # a bug of the generator: say so, fall back
        raise Unsupported(f"generated source does not parse: {e}") from None
    try:
        from ._cache import compile_kernel
        fn = compile_kernel(source, glb, argtys, False, _NUMBA_OPTS, "scan")
        return fn if fn is not None else njit(types.int64(*argtys),
                                              **_NUMBA_OPTS)(glb["kern"])
    except Exception as e:       # Numba's typing/lowering errors: fall back, visibly
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise Unsupported(f"numba: {first[:200]}") from None


__all__ = ["NativeScan", "NativeWhile", "NATIVE_LOOPS", "DOT_MAX_MACS", "DOT_UNROLL"]
