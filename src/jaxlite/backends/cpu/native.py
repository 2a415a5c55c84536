"""The native CPU backend: fused kernels compiled to machine code with Numba/LLVM.

Layer: backends.  ``compile(closed_jaxpr, name) -> CpuExecutable`` (the backend contract,
see base.py).  Each equation of the program becomes one step:

- ``kernel`` equations (primitives/kernel.py) become a generated loop nest over the kernel's
  iteration space, compiled by Numba (``error_model='numpy'`` so a float division has no
  zero check, no fast-math flags; ``parallel=True`` with ``prange`` over the outer axis
  when the kernel has at least ``PARALLEL_MIN_ELEMENTS`` elements).  The scalar body is
  written through the one scalar-op table (``_cpu_ops.emit``); float32 exp/log/tanh/
  logistic/sin/cos use the vectorisable functions of ``_vecmath``.
- ``dot_general`` runs its NumPy implementation (a batched ``matmul``: BLAS).
- every other equation, and any kernel the generator cannot handle (an op, a dtype such as
  float16/bfloat16/complex, ...), runs through its interpreter implementation; the
  executable's text lists each such fallback with its reason.

Loop nest: axes of size 1 are dropped and adjacent axes that every input and every
reduction treat alike are merged (an all-contiguous map kernel is one flat loop, which LLVM
vectorises).  A reduction over a suffix of the axes keeps a scalar accumulator (a float sum
accumulates with a reassociable add, so it vectorises too); any other reduction
accumulates in its output array, initialised with the monoid's identity.  float32 sums
and products accumulate in float64 (a float64 local, or a float64 scratch array rounded
into the output at the end), as exact as the interpreter's pairwise sums.  Outputs come
from the recycling buffer pool (runtime/buffer.py): a large output reuses the memory of one
nobody references any more instead of faulting in fresh pages.
"""
from __future__ import annotations

import numpy as np

from ...core.eager import host_value
from ...ir.interpret import exact
from ...ir.jaxpr import ClosedJaxpr, Literal
from ...runtime.buffer import POOL, pool_empty
from . import _ops as _cpu_ops
from ._ops import Unsupported, type_name
from ..base import Executable

PARALLEL_MIN_ELEMENTS = 1 << 20
"""Kernels with at least this many iterations run their outer loop on every core.  Below
this, thread start-up (tens of microseconds) and Numba's longer parallel compile (about 3x)
cost more than the second core gives."""

# A primitive's ``view`` fact: its interpreter implementation returns a view of its operand
# (no copy).  Of those, a ``strided_view`` is read by a kernel through its strides rather
# than copied first: a transposed or broadcast view's copy is itself a strided pass
# (measured on a 2048^2 transpose feeding a kernel: 24 ms strided against 29 ms copy +
# contiguous loop); a reversed or sliced view copies at streaming speed and keeps the
# kernel's loop contiguous (vectorised: exp of a reversed 2048^2 view 10 ms copied, 36 ms
# strided).

# no fast-math flags at all: FMA contraction alone changes a*b + c by many ulps where it
# cancels, and the interpreter (NumPy) rounds every operation
_NUMBA_OPTS = dict(error_model="numpy", fastmath=False, cache=False, nogil=True,
                   boundscheck=False)


def _nbytes(aval) -> int:
    return aval.size * aval.dtype.itemsize


# ---- one kernel ------------------------------------------------------------------------

class NativeKernel:
    """A ``Kernel`` compiled to a Numba function; call it with NumPy arrays.

    Raises (from the constructor) ``Unsupported`` when the kernel uses an op or dtype the
    generator does not handle; Numba's typing errors are reported the same way.
    """

    def __init__(self, kernel, parallel: bool | None = None, compile: bool = True,
                 strided=()):
        # compile=False: source only (the scan loop generator, _loop.py, inlines it)
        # strided: input positions read through their strides as they come (a transposed
        # or broadcast view: a primitive's ``strided_view``), not copied contiguous first
        from ...primitives.kernel import run_reference
        self.kernel = kernel
        self.strided = frozenset(strided)
        self._reference = run_reference
        self.size = int(np.prod(kernel.shape, dtype=np.int64))
        for a in [i.aval for i in kernel.inputs] + kernel.out_avals:
            if a.dtype not in _cpu_ops.SUPPORTED_DTYPES:
                raise Unsupported(f"dtype {a.dtype}")
        if kernel.body.constvars:
            raise Unsupported("kernel body with constants")
        self._plan()
        if parallel is None:
            parallel = (self.size >= PARALLEL_MIN_ELEMENTS and len(self.cshape) >= 1 and
                        self.cshape[0] > 1 and
                        not any(r is not None and 0 in r for r in self.red_axes))
        self.parallel = bool(parallel)
        self.source, self.globals = self._generate()
        self._fn = self._compile(self.globals) if compile else None

    # collapse the iteration space
    def _plan(self):
        k = self.kernel
        shape = k.shape
        nd = len(shape)
        present = []
        self.in_perm = []
        for inp in k.inputs:
            p = [False] * nd
            for ax, d in zip(inp.aval.shape, inp.dims):
                if ax == shape[d] and ax != 1:
                    p[d] = True
            present.append(p)
            order = tuple(int(i) for i in np.argsort(inp.dims, kind="stable"))
            self.in_perm.append(order if order != tuple(range(len(order))) else None)
        reds = [set(o.axes) if o.kind == "reduce" else set() for o in k.outputs]
        groups = []          # each: [size, signature]
        for d in range(nd):
            if shape[d] == 1:
                continue
            sig = tuple(p[d] for p in present) + tuple(d in r for r in reds)
            # a strided input's axes stay apart (its strides need not merge)
            if groups and groups[-1][1] == sig and \
                    not any(present[j][d] for j in self.strided):
                groups[-1][0] *= shape[d]
            else:
                groups.append([shape[d], sig])
        self.cshape = tuple(g[0] for g in groups)
        nin = len(k.inputs)
        self.in_present = [tuple(g[1][j] for g in groups) for j in range(nin)]
        self.red_axes = [frozenset(a for a, g in enumerate(groups) if g[1][nin + i])
                         if o.kind == "reduce" else None
                         for i, o in enumerate(k.outputs)]
        self.in_cshape = [tuple(c if p else 1 for c, p in zip(self.cshape, pres))
                          for pres in self.in_present]
        self.out_cshape = [self.cshape if r is None else
                           tuple(1 if a in r else c for a, c in enumerate(self.cshape))
                           for r in self.red_axes]

    def _generate(self):
        k = self.kernel
        q = len(self.cshape)
        glb = dict(_cpu_ops.GLOBALS)
        ins = [f"a{j}" for j in range(len(k.inputs))]
        outs = [f"o{j}" for j in range(len(k.outputs))]
        idx_vars = [f"i{d}" for d in range(q)]

        def index(present):
            if not q:
                return "0"
            return ", ".join(v if p else "0" for v, p in zip(idx_vars, present))

        lines = [f"def kern({', '.join(ins + outs)}):", "    flag = 0"]
        # loads of fully broadcast inputs are hoisted out of the loops
        names = {}
        inner_loads = []
        for j, (v, pres) in enumerate(zip(k.body.invars, self.in_present)):
            names[v] = f"x{j}"
            load = f"x{j} = a{j}[{index(pres)}]"
            (inner_loads if any(pres) else lines).append(load if any(pres) else "    " + load)
        # the scalar body
        body = []
        trig_args = []      # float32 sin/cos operands (large arguments flag a rerun)
        counter = [0]

        def name_of(v):
            if isinstance(v, Literal):
                key = f"k{len(glb)}"
                glb[key] = np.asarray(v.val, v.aval.dtype)[()]
                return key
            return names[v]

        for eqn in k.body.eqns:
            op = eqn.primitive.scalar_op
            if op is None or eqn.primitive.multiple_results:
                raise Unsupported(f"{eqn.primitive.name} (no scalar op)")
            args = [name_of(v) for v in eqn.invars]
            dts = [v.aval.dtype for v in eqn.invars]
            out_dt = eqn.outvars[0].aval.dtype
            expr = _cpu_ops.emit(op, args, dts, out_dt, eqn.params)
            if op in _cpu_ops.TRIG_OPS and dts[0] == np.float32:
                trig_args.append(args[0])
            n = f"t{counter[0]}"
            counter[0] += 1
            body.append(f"{n} = {type_name(out_dt)}({expr})")
            names[eqn.outvars[0]] = n
        if trig_args:
            # ONE update of the flag per iteration: Numba's parfor accepts a reduction
            # variable only when the prange body updates it once
            body.append("flag += " + " + ".join(f"_vm_oor({a})" for a in trig_args))
        results = [name_of(v) for v in k.body.outvars]

        # reductions: a scalar accumulator when the reduced axes are a suffix
        acc_depth = {}
        for i, (o, r) in enumerate(zip(k.outputs, self.red_axes)):
            if r is None:
                continue
            if r and r == frozenset(range(min(r), q)):
                acc_depth[i] = min(r)
            elif not r:
                acc_depth[i] = q     # nothing left to reduce (size-1 axes only)
        # float32 sums and products accumulate in float64 (one float32 accumulator
        # loses digits: 4e8 ones summed gave 394092864); the output takes the rounded value
        wide = {i for i, (o, r) in enumerate(zip(k.outputs, self.red_axes))
                if r is not None and o.monoid in ("add", "mul") and
                o.aval.dtype.kind == "f" and o.aval.dtype.itemsize < 8}
        F64 = type_name(np.float64)

        def acc_dtype(i):
            return np.dtype(np.float64) if i in wide else k.outputs[i].aval.dtype

        pre, post = [], []
        for i, (o, r) in enumerate(zip(k.outputs, self.red_axes)):
            if r is not None and i not in acc_depth:
                key = f"id{i}"
                glb[key] = _cpu_ops.identity(o.monoid, acc_dtype(i))
                if i not in wide:
                    pre.append(f"    o{i}[...] = {key}")
                    continue
                # accumulated in a float64 scratch array of the output's loop shape,
                # rounded into the output at the end
                shp = self.out_cshape[i] or (1,)
                pre.append(f"    w{i} = np.empty(({', '.join(map(str, shp))},), {F64})")
                pre.append(f"    w{i}[...] = {key}")
                ix = ", ".join(f"j{d}" for d in range(len(shp)))
                for d, n in enumerate(shp):
                    post.append(f"{'    ' * (d + 1)}for j{d} in range({n}):")
                post.append(f"{'    ' * (len(shp) + 1)}o{i}[{ix}] = "
                            f"{type_name(o.aval.dtype)}(w{i}[{ix}])")
        lines += pre

        def emit_level(depth, indent):
            pad = "    " * indent
            out = []
            for i, dd in acc_depth.items():
                if dd == depth:
                    key = f"id{i}"
                    glb[key] = _cpu_ops.identity(k.outputs[i].monoid, acc_dtype(i))
                    out.append(f"{pad}acc{i} = {key}")
            if depth == q:
                out += [pad + s for s in inner_loads + body]
                for i, (o, r) in enumerate(zip(k.outputs, self.red_axes)):
                    T = type_name(o.aval.dtype)
                    res = results[i]
                    if i in wide:
                        T, res = F64, f"{F64}({res})"
                    if r is None:
                        out.append(f"{pad}o{i}[{index([True] * q)}] = {results[i]}")
                    elif i in acc_depth:
                        if o.monoid in ("max", "min") and o.aval.dtype.kind == "f":
                            # the same values as _fmax/_fmin, as an LLVM intrinsic the loop
                            # vectoriser reduces (row max of 2048x4096 float32, one thread:
                            # 2.8 ms scalar, 0.8 ms vectorised)
                            e = f"_vm_{o.monoid}imum(acc{i}, {T}({results[i]}))"
                        else:
                            e = _cpu_ops.accumulate(o.monoid, f"acc{i}", res, acc_dtype(i))
                        out.append(f"{pad}acc{i} = {T}({e})")
                    else:
                        ix = index([a not in r for a in range(q)])
                        dst = f"w{i}" if i in wide else f"o{i}"
                        e = _cpu_ops.accumulate(o.monoid, f"{dst}[{ix}]", res,
                                                acc_dtype(i))
                        out.append(f"{pad}{dst}[{ix}] = {T}({e})")
            else:
                rng = "prange" if (self.parallel and depth == 0) else "range"
                out.append(f"{pad}for i{depth} in {rng}({self.cshape[depth]}):")
                out += emit_level(depth + 1, indent + 1)
            for i, dd in acc_depth.items():
                if dd == depth:
                    r = self.red_axes[i]
                    ix = index([a not in r for a in range(q)])
                    T = type_name(k.outputs[i].aval.dtype)
                    out.append(f"{pad}o{i}[{ix}] = {T}(acc{i})" if i in wide else
                               f"{pad}o{i}[{ix}] = acc{i}")
            return out

        lines += emit_level(0, 1)
        lines += post
        lines.append("    return flag")
        return "\n".join(lines), glb

    def _compile(self, glb):
        import numba
        from numba import njit, prange, types
        glb["prange"] = prange
        try:
            exec(compile(self.source, f"<jaxlite kernel {self.kernel.name}>", "exec"), glb)
        except SyntaxError as e:     # a bug of the generator: say so, fall back
            raise Unsupported(f"generated source does not parse: {e}") from None
        # inputs typed read-only (jaxlite's buffers are; writable arrays convert)
        argtys = [types.Array(numba.from_dtype(i.aval.dtype), max(len(shp), 1),
                              "A" if j in self.strided else "C", readonly=True)
                  for j, (shp, i) in enumerate(zip(self.in_cshape, self.kernel.inputs))]
        argtys += [types.Array(numba.from_dtype(o.aval.dtype), max(len(shp), 1), "C")
                   for shp, o in zip(self.out_cshape, self.kernel.outputs)]
        try:
            from ._cache import compile_kernel   # the persistent cache (None: off)
            fn = compile_kernel(self.source, glb, argtys, self.parallel, _NUMBA_OPTS,
                                self.kernel.name)
            return fn if fn is not None else njit(types.int64(*argtys),
                                                  parallel=self.parallel,
                                                  **_NUMBA_OPTS)(glb["kern"])
        except Exception as e:   # Numba's typing/lowering errors: fall back, visibly
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise Unsupported(f"numba: {first[:200]}") from None

    def __call__(self, *args, out=None):
        """Runs the kernel; ``out``: per output, an array of its exact shape and dtype to
        write into (a donated argument or a dying temporary, see ``CpuExecutable.run``)
        or None."""
        plan = self.__dict__.get("_call_plan")
        if plan is None:
            plan = self._call_plan = self._make_call_plan()
        if plan is False:           # an empty iteration space: nothing to loop over
            return self._reference(self.kernel, *args)
        ins, allocs = plan
        xs = []
        for x, (perm, cs, contiguous) in zip(args, ins):
            if type(x) is not np.ndarray:
                x = np.asarray(x)
            if perm is not None:
                x = np.transpose(x, perm)
            if contiguous and not x.flags.c_contiguous:
                x = np.ascontiguousarray(x)
            xs.append(x if x.shape == cs else x.reshape(cs))   # strided: a view if it can
        # outputs from the recycling pool (a fresh large buffer costs page faults; small
        # ones come from numpy.empty directly), in their final shape: the kernel writes
        # through a reshaped view of each
        if out is None:
            outs = [alloc(shape, dt) for alloc, shape, dt, cs in allocs]
        else:
            outs = [alloc(shape, dt) if o is None else o
                    for (alloc, shape, dt, cs), o in zip(allocs, out)]
        flag = self._fn(*xs, *[o if o.shape == a[3] else o.reshape(a[3])
                               for o, a in zip(outs, allocs)])
        if flag:
            # a float32 sin/cos argument beyond the vectorised reduction's range: exact rerun
            return self._reference(self.kernel, *args)
        return outs

    def _make_call_plan(self):
        """Per input (permutation, loop-nest shape, copy to contiguous first?) and per
        output (allocator, shape, dtype, loop-nest shape): computed on the first call."""
        if self.size == 0:
            return False
        q = max(len(self.cshape), 1)
        ins = [(perm, tuple(cs) or (1,) * q, j not in self.strided)
               for j, (perm, cs) in enumerate(zip(self.in_perm, self.in_cshape))]
        allocs = [(pool_empty if _nbytes(o.aval) >= POOL.min_bytes else np.empty,
                   o.aval.shape, o.aval.dtype, tuple(cs) or (1,) * q)
                  for o, cs in zip(self.kernel.outputs, self.out_cshape)]
        return ins, allocs

    @property
    def fresh_outputs(self) -> bool:
        """Whether every call returns new buffers (never a view of an input: the exact
        rerun of a kernel flagging an out-of-range sine may, through the reference)."""
        return self.size > 0 and "_vm_oor(" not in self.source

    def reads_in_place(self, invars, v) -> bool:
        """Whether every operand of ``invars`` (the kernel equation's) that is ``v`` is read
        over the whole iteration space at the index a map output is written (no
        broadcast, no transposition): writing that output into ``v``'s buffer is safe.
        Never for a kernel that may rerun on its inputs (float32 sin/cos beyond the
        vectorised range reduction): the rerun would read overwritten inputs."""
        if "_vm_oor(" in self.source:
            return False
        return all(p is None and all(pres) and cs == self.cshape
                   for x, p, pres, cs in zip(invars, self.in_perm, self.in_present,
                                             self.in_cshape) if x is v)

    def describe(self) -> str:
        strided = (f", inputs {sorted(self.strided)} read through strides (no copy)"
                   if self.strided else "")
        return (f"native kernel {self.kernel.name}: iteration {list(self.kernel.shape)} -> "
                f"loops {list(self.cshape)}, parallel={self.parallel}{strided}")


# ---- the executable --------------------------------------------------------------------

class CpuExecutable(Executable):
    """A program whose kernels run as native code (see the module docstring)."""

    backend = "cpu"

    def __init__(self, closed: ClosedJaxpr, name: str, parallel: bool | None = None):
        from ...primitives.control_flow import scan_p, while_p
        from ...primitives.kernel import kernel_p
        from ...primitives.linalg import dot_general_p
        jaxpr = closed.jaxpr
        self.name = name
        self.in_avals = [v.aval for v in jaxpr.invars]
        self.out_avals = [v.aval for v in jaxpr.outvars]
        slots = {}

        def slot(v):
            if isinstance(v, Literal):
                s = len(init_slots)
                init_slots.append(np.asarray(v.val, v.aval.dtype))
                return s
            return slots[v]

        init_slots: list = []
        for c, v in zip(closed.consts, jaxpr.constvars):
            slots[v] = len(init_slots)
            init_slots.append(host_value(c))
        self._n_fixed = len(init_slots)
        self._arg_slots = []
        for v in jaxpr.invars:
            slots[v] = None   # assigned below, after literals are known
        steps = []
        self.report = []     # (kind, text) per equation, for as_text
        pending = []
        for eqn in jaxpr.eqns:
            pending.append(eqn)
        # literals get fixed slots first, so argument slots follow them
        lit_slots = {}
        for eqn in pending:
            for v in eqn.invars:
                if isinstance(v, Literal) and id(v) not in lit_slots:
                    lit_slots[id(v)] = slot(v)
        for v in jaxpr.outvars:
            if isinstance(v, Literal) and id(v) not in lit_slots:
                lit_slots[id(v)] = slot(v)
        nfixed = len(init_slots)
        for i, v in enumerate(jaxpr.invars):
            if slots[v] is None:
                slots[v] = nfixed + i
            self._arg_slots.append(slots[v])
        nslots = nfixed + len(jaxpr.invars)

        def sl(v):
            return lit_slots[id(v)] if isinstance(v, Literal) else slots[v]

        last = {}
        for k_, eqn in enumerate(pending):
            for v in eqn.invars:
                if not isinstance(v, Literal):
                    last[v] = k_
        outset = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
        live, peak = 0, 0
        self.kernels = []
        views = {}    # variables a kernel reads through strides (``strided_view`` results)
        for k_, eqn in enumerate(pending):
            in_slots = [sl(v) for v in eqn.invars]
            out_slots = []
            for v in eqn.outvars:
                slots[v] = nslots
                out_slots.append(nslots)
                nslots += 1
            prim = eqn.primitive
            fn, kind, text = None, "fallback", ""
            if prim is kernel_p:
                try:
                    nk = NativeKernel(eqn.params["kernel"], parallel, strided=[
                        j for j, v in enumerate(eqn.invars)
                        if not isinstance(v, Literal) and views.get(v, False)])
                    fn, kind, text = nk, "native", nk.describe()
                    self.kernels.append(nk)
                except Unsupported as e:
                    text = f"kernel {eqn.params['kernel'].name}: interpreter fallback ({e})"
            elif prim is dot_general_p:
                kind, text = "blas", "dot_general: NumPy matmul (BLAS)"
            elif prim is scan_p or prim is while_p:
                from ._loop import NATIVE_LOOPS    # the whole loop as one native step
                try:
                    ns = NATIVE_LOOPS[prim](eqn)
                    fn, kind, text = ns, "native", ns.describe()
                    self.kernels.append(ns)
                except Unsupported as e:
                    text = f"{prim.name}: interpreter fallback ({e})"
            else:
                text = f"{prim.name}: interpreter fallback (no native code generator)"
                if prim.view:
                    text = f"{prim.name}: interpreter, a view of its operand (no copy)"
                if prim.strided_view:
                    text = text[:-1] + "; kernels read it through its strides)"
                    views.update((v, True) for v in eqn.outvars)
            if fn is None:
                impl = prim.impl
                params = eqn.params
                fn = (lambda *a, _i=impl, _p=params: _i(*a, **_p))
            dtypes = [v.aval.dtype for v in eqn.outvars]
            live += sum(_nbytes(v.aval) for v in eqn.outvars)
            peak = max(peak, live)
            dead = [slots[v] for v in set(eqn.invars) if not isinstance(v, Literal)
                    and last.get(v) == k_ and v not in outset and slots[v] >= nfixed +
                    len(jaxpr.invars)]
            live -= sum(_nbytes(v.aval) for v in set(eqn.invars) if not isinstance(v, Literal)
                        and last.get(v) == k_ and v not in outset and
                        slots[v] >= nfixed + len(jaxpr.invars))
            steps.append((fn, in_slots, out_slots, prim.multiple_results, dtypes, dead))
            self.report.append((kind, f"{', '.join(f'v{s}' for s in out_slots)} = "
                                      f"{prim.name}  # {text}"))
        self.temp_bytes = max(0, peak - sum(_nbytes(v.aval) for v in outset))
        self._steps = steps
        self._init = init_slots
        self._nslots = nslots
        self._out_slots = [sl(v) for v in jaxpr.outvars]
        self._fixed = nfixed
        # for donation plans (run with ``donated``)
        self._eqns, self._invars, self._last, self._outset = \
            pending, list(jaxpr.invars), last, outset
        self._donation_plans = {}
        self._plan = self._donation_plan(frozenset())   # temporaries written in place
        if self._plan:
            self.temp_bytes = self._temp_peak(self._plan, slots, nfixed + len(jaxpr.invars))
        self.run_source, self._run_fn = self._generate_run(len(jaxpr.invars))

    def _donation_plan(self, donated) -> dict:
        """{step: [slot or None per output]}: where each native kernel writes an output
        into an existing buffer instead of a new one.

        Candidates are the donated arguments (positions ``donated``) and the program's own
        temporaries made by native kernels (always fresh buffers).  One qualifies when
        every use of it is a native kernel (so no view of it exists) and it is not a
        program output.  A kernel takes it for an output of its exact shape and dtype at
        its last use when the kernel reads it in full at the index it writes (a map
        output: the write then also needs no read-for-ownership of new memory); a donated
        argument is also taken by a later kernel once it is dead (a dead temporary's
        buffer goes back to the pool instead)."""
        plan = self._donation_plans.get(donated)
        if plan is not None:
            return plan
        uses = {}
        for k, e in enumerate(self._eqns):
            for v in e.invars:
                if not isinstance(v, Literal):
                    uses.setdefault(v, []).append(k)

        def only_kernels(v):
            return v not in self._outset and \
                all(isinstance(self._steps[k][0], NativeKernel) for k in uses.get(v, ()))
        free = {}          # candidate var -> its slot
        for pos in sorted(donated):
            v = self._invars[pos]
            if v not in free and only_kernels(v):
                free[v] = self._arg_slots[pos]
        args = set(free)
        plan = {}
        for k, e in enumerate(self._eqns):
            nk = self._steps[k][0]
            if not isinstance(nk, NativeKernel):
                continue
            if free:
                assign = [None] * len(e.outvars)
                for j, (ov, o) in enumerate(zip(e.outvars, nk.kernel.outputs)):
                    for v, s in free.items():
                        if v.aval.shape != ov.aval.shape or v.aval.dtype != ov.aval.dtype:
                            continue
                        last = self._last.get(v, -1)
                        if (last < k and v in args) or (
                                last == k and o.kind != "reduce" and
                                nk.reads_in_place(e.invars, v)):
                            assign[j] = s
                            del free[v]
                            break
                if any(s is not None for s in assign):
                    plan[k] = assign
            if nk.fresh_outputs:
                for ov, s in zip(e.outvars, self._steps[k][2]):
                    if ov.aval.ndim >= 1 and only_kernels(ov):
                        free[ov] = s
            for v in [v for v in free if v not in args and self._last.get(v, -1) <= k]:
                del free[v]        # a dead temporary: its buffer returns to the pool
        self._donation_plans[donated] = plan
        return plan

    def _temp_peak(self, plan, slots, first_temp) -> int:
        """Peak bytes of temporaries when the kernels of ``plan`` write into existing
        buffers (an output taking a dying temporary's buffer allocates nothing)."""
        live = peak = 0
        for k, e in enumerate(self._eqns):
            taken = set(s for s in plan.get(k, ()) if s is not None)
            live += sum(_nbytes(ov.aval) for ov, s in
                        zip(e.outvars, plan.get(k, [None] * len(e.outvars))) if s is None)
            peak = max(peak, live)
            for v in set(e.invars):
                if not isinstance(v, Literal) and self._last.get(v) == k and \
                        v not in self._outset and slots[v] >= first_temp and \
                        slots[v] not in taken:
                    live -= _nbytes(v.aval)
        return max(0, peak - sum(_nbytes(v.aval) for v in self._outset))

    def _in_place_note(self, k) -> str:
        outs = self._plan.get(k)
        if not outs:
            return ""
        return "; in place: " + ", ".join(
            f"v{o} into v{s}'s buffer" for o, s in zip(self._steps[k][2], outs)
            if s is not None)

    @property
    def fallbacks(self) -> list:
        """The equations that run on the interpreter, with the reason."""
        return [t for k, t in self.report if k == "fallback"]

    def _generate_run(self, nargs):
        """The program as straight-line Python (``run_source``): one call per step, the
        declared dtype enforced only where an implementation widened, temporaries
        deleted after their last use, in-place steps given their ``out`` buffers."""
        glb = {"_nd": np.ndarray, "_asarray": np.asarray}
        for i, c in enumerate(self._init):
            glb[f"s{i}"] = c
        from ..interpreter import _ident
        params = [f"s{self._fixed + i}" for i in range(nargs)]
        fname = _ident(self.name)
        lines = [f"def {fname}({', '.join(params)}):"]
        for k, ((fn, ins, outs, multi, dtypes, dead), e) in enumerate(
                zip(self._steps, self._eqns)):
            if self.report[k][0] in ("fallback", "blas"):
                fn = e.primitive.impl_for([v.aval for v in e.invars], e.params)
            glb[f"f{k}"] = fn
            args = ", ".join(f"s{i}" for i in ins)
            if k in self._plan:
                args += (", " if args else "") + "out=[" + ", ".join(
                    "None" if s is None else f"s{s}" for s in self._plan[k]) + "]"
            for s, dt in zip(outs, dtypes):
                glb[f"dt{s}"] = dt
            if multi:
                lines.append(f"    _r = f{k}({args})  # {e.primitive.name}")
                for j, s in enumerate(outs):
                    lines.append(f"    s{s} = _r[{j}]")
            else:
                lines.append(f"    s{outs[0]} = f{k}({args})  # {e.primitive.name}")
            for s in outs:
                lines.append(f"    if type(s{s}) is not _nd or s{s}.dtype != dt{s}: "
                             f"s{s} = _asarray(s{s}, dtype=dt{s})")
            if dead:
                lines.append(f"    del {', '.join(f's{d}' for d in sorted(set(dead)))}")
        lines.append(f"    return [{', '.join(f's{s}' for s in self._out_slots)}]")
        src = "\n".join(lines)
        exec(compile(src, f"<jaxlite native program {self.name}>", "exec"), glb)
        return src, glb[fname]

    def run(self, args, donated=None):
        """Runs on NumPy values.  ``donated``: positions of arguments whose arrays the
        caller gave up (writable, referenced by nobody else): a native kernel writes an
        output of the same shape and dtype into such an argument once the argument is
        dead, or where it dies when the kernel reads it at the very index it writes."""
        if not donated:
            return self._run_fn(*args)
        plan = self._donation_plan(donated)
        env = self._init + list(args) + [None] * (self._nslots - self._fixed - len(args))
        for k, (fn, ins, outs, multi, dtypes, dead) in enumerate(self._steps):
            if plan and k in plan:
                r = fn(*[env[i] for i in ins], out=[None if s is None else env[s]
                                                    for s in plan[k]])
            else:
                r = fn(*[env[i] for i in ins])
            if multi:
                for s, x, dt in zip(outs, r, dtypes):
                    env[s] = exact(x, dt)
            else:
                env[outs[0]] = exact(r, dtypes[0])
            for s in dead:
                env[s] = None
        return [env[s] for s in self._out_slots]

    def as_text(self) -> str:
        lines = [f"# native CPU program {self.name}: "
                 f"{sum(k == 'native' for k, _ in self.report)} native kernel(s), "
                 f"{sum(k == 'blas' for k, _ in self.report)} BLAS call(s), "
                 f"{len(self.fallbacks)} interpreter fallback(s)"]
        lines += [t + self._in_place_note(k) for k, (_, t) in enumerate(self.report)]
        for nk in self.kernels:
            lines.append(f"\n# {nk.describe()}\n{nk.kernel.pretty()}\n# generated loop nest:")
            lines.append(nk.source)
        lines.append(f"\n# the program's Python driver (one call per step; fN is step N)\n"
                     f"{self.run_source}")
        return "\n".join(lines)


__all__ = ["CpuExecutable", "NativeKernel", "PARALLEL_MIN_ELEMENTS"]
