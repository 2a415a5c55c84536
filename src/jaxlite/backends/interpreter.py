"""The interpreter backend: the reference every other backend is tested against.

It "compiles" a program into straight-line Python source that calls each primitive's NumPy
implementation in order, deleting each intermediate right after its last use (so host
memory tracks the live set).  The source is the executable's text.

Loops and branches are generated too: a ``scan``/``while``/``cond`` equation becomes a
Python loop (or a branch call) in the text, each body a generated function of its own
(nested ones recursively), so a 1000-step scan costs its NumPy calls, not 1000 walks of the
body's equations through the primitives' implementations (see ``_Source``).

Large kernels: a fused kernel of at least ``CHUNK_MIN`` elements whose results depend on
one leading index each (no reduction over its leading axis) is not expanded into
whole-array equations: its body is generated for a chunk of leading indices (about
``CHUNK`` elements), and ``_run_chunked`` runs the chunks on the calling thread and a pool
of the host's other cores (NumPy drops the interpreter lock in its loops).  The body's
temporaries then stay in the cache; the values are those of the whole-array evaluation,
bit for bit (see ``chunk_axes``).

Buffer reuse: an elementwise equation whose operand dies there writes its result into that
operand's buffer (``ufunc(..., out=buffer)``) when the buffer is one this program allocated
itself and nothing else can see (see ``_Reuse``), with the result's exact shape and dtype,
and when the in-place form computes bit-for-bit what the implementation computes (the
primitive's declared ``inplace`` fact says which ufunc, for which dtypes).  A ``copy`` of a
dying owned buffer becomes a rename.  The text marks each such equation
"in place".  A chain of elementwise operations so needs one buffer, not one per operation.
Such an equation with no dying operand and a large result writes into a buffer of the
recycling pool (runtime/buffer.py) instead of a fresh allocation ("into a pool buffer").
"""
from __future__ import annotations

import contextvars
import itertools
import keyword
import os
import threading

import numpy as np

from .. import dtypes
from ..core.eager import host_value
from ..primitives.control_flow import cond_p, scan_p, while_p
from ..primitives.kernel import Kernel, KernelInput, KernelOutput, expand_kernels, kernel_p
from ..ir.interpret import exact, last_uses
from ..core.avals import ShapedArray
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from ..runtime.buffer import POOL, pool_empty
from .base import Executable, register_backend


def _nbytes(aval) -> int:
    return aval.size * aval.dtype.itemsize


_HALF = (np.dtype(np.float16), np.dtype(dtypes._BF16))
# Which primitives run in place, with which ufunc, for which dtypes: each primitive's
# ``inplace`` fact (core/primitive.py ``InPlace``; declared in primitives/elementwise.py).
# Half precision: the implementations compute in float32 and round; NumPy's own half loops
# do the same for - / and negation, but not for exp/sin/cos, nor for + and * of two NaNs
# (they keep the second operand's, the float32 path the first), so only those three
# declare ``half`` (checked against the float32 path; tests/test_buffer_reuse.py).
# A primitive's ``view`` fact: its implementation returns a NumPy view of its operand (no
# copy); a result that views an argument is copied only when it leaves the program as an
# Array (``wrap``).


class _Reuse:
    """Which equations of ``jaxpr`` may write into a dying operand's buffer.

    A variable is *owned* when the equation producing it is an operation with an
    ``inplace`` fact (an in-place ufunc, or ``copy``) and an array result (rank >= 1):
    their implementations always return a fresh array (a ufunc's new output, or a cast
    copy of it), never an argument, a constant, a literal, a view or a broadcast; and
    when every equation using it is one of those too, so that no view of its buffer can
    exist.  A monoid reduction (``reduce_sum``, ``reduce_max``, ...: the primitives with a
    ``reduction`` fact) may use it too: it reads its operand and returns a new array,
    never a view of it.  A donated argument whose every use is such an equation is owned
    too.  Program outputs are never written (they must survive the program).
    """

    def __init__(self, jaxpr, last, outs, donated=()):
        self.last, self.outs = last, outs
        self.owned = set()
        uses = {}
        for e in jaxpr.eqns:
            for v in e.invars:
                if not isinstance(v, Literal):
                    uses.setdefault(v, []).append(e)
        for e in jaxpr.eqns:
            if self._fresh(e):
                v = e.outvars[0]
                if all(self._safe_use(u) for u in uses.get(v, ())):
                    self.owned.add(v)
        # a donated argument (the caller gave up its buffer, see run) is owned likewise
        self.donated = set()
        for i in donated:
            v = jaxpr.invars[i]
            if v.aval.ndim >= 1 and all(self._safe_use(u) for u in uses.get(v, ())):
                self.owned.add(v)
                self.donated.add(v)

    @staticmethod
    def _fresh_op(e):
        return e.primitive.inplace is not None and \
            not e.primitive.multiple_results and len(e.outvars) == 1

    @classmethod
    def _safe_use(cls, e):
        """``e`` may read an owned variable: it keeps no view of its operands (a kernel
        equation left in a program is a chunked one: it writes fresh arrays or, in place,
        the owned operand it chooses, see ``_Source.kernel``)."""
        return cls._fresh_op(e) or getattr(e.primitive, "reduction", None) is not None \
            or e.primitive is kernel_p

    def _fresh(self, e):
        return self._fresh_op(e) and e.outvars[0].aval.ndim >= 1

    def buffer(self, k, e):
        """The dying owned operand equation ``k`` can write its result into, or None."""
        if not self._fresh(e):
            return None
        out = e.outvars[0].aval
        # a dying donated argument first: the result lands in the buffer the caller gave
        for v in sorted(e.invars, key=lambda v: v not in self.donated):
            if not isinstance(v, Literal) and v in self.owned and self.last.get(v) == k \
                    and v not in self.outs and v.aval.shape == out.shape \
                    and v.aval.dtype == out.dtype:
                return v
        return None

    @staticmethod
    def ufunc(e):
        """The ufunc computing ``e`` bit-for-bit in place, or None."""
        row = e.primitive.inplace
        if row is None or row.ufunc is None or e.params:
            return None
        ufunc, kinds, half_ok = row
        dt = e.outvars[0].aval.dtype
        if dt in _HALF:
            if not half_ok:
                return None
        elif dt.kind not in kinds:
            return None
        for v in e.invars:    # one loop, no promotion: every operand has the result dtype
            d = np.asarray(v.val).dtype if isinstance(v, Literal) else v.aval.dtype
            if d != dt:
                return None
        return ufunc


def _own(x, dtype, inputs):
    """A loop's or branch's result ``x`` as an ndarray of exactly ``dtype`` that owns its
    memory: copied when it is a NumPy scalar, has another dtype, views another array, or
    is one of ``inputs`` (the loop's operands: a carry a body passes through unchanged,
    or a loop that runs no step)."""
    if type(x) is not np.ndarray or x.dtype != dtype:
        return np.array(x, dtype=dtype)
    if x.base is not None or not x.flags.owndata:
        return x.copy()
    for y in inputs:
        if x is y:
            return x.copy()
    return x


class _Source:
    """The generated source of one program: its functions (``defs``, callees first, the
    program's own function last) and the globals they share (``glb``).

    ``function`` generates one jaxpr as one function.  An equation of a control-flow
    primitive does not call the primitive's implementation (which would interpret the
    body equation by equation at every step): its body becomes a generated function of
    its own (recursively, so nested loops too), and the calling function gets the loop in
    its text:

    - ``scan``: the carries are locals, each stacked output is allocated once
      (``numpy.empty``) and step ``i`` writes its slice; the body gets ``xs[i]`` (a view
      of the operand: bodies never write into their parameters, see below);
      ``reverse`` runs ``i`` downwards; ``unroll`` changes nothing (same values).
    - ``while``: ``while cond(...): carry = body(...)``.
    - ``cond``: the branch the clamped index selects is called.

    A body's generated function has the program's guarantees: each result is cast to its
    declared dtype when an implementation widened it, and in-place buffer reuse
    (``_Reuse``) writes only into buffers the body itself allocated and nothing else sees:
    a body's parameters (carries, slices of the scanned operands, constants) are never
    owned, and neither are its results, so step ``i + 1`` never writes into what step
    ``i`` returned.  The final carries and branch results pass through ``_own``: fresh
    ndarrays of the declared dtypes (scalars included), never an operand of the loop nor
    a view of one.  Globals of a body are prefixed with where it sits (``s3_`` for the
    body of the scan at equation 3, ``w3c_``/``w3b_`` for a while's condition and body,
    ``b3_1_`` for branch 1 of a cond), so every function shares one namespace.
    """

    def __init__(self):
        self.glb = {"_exact": exact, "_np": np, "_own": _own}
        self.defs = []          # function sources, each after the functions it calls
        self.def_names = []

    def function(self, jaxpr, fname, pre, *, donated=(), consts=None, single=False,
                 doc=None):
        """Generates ``jaxpr`` as the function ``fname``; returns (in-place equation
        count, temporaries' peak bytes).  ``pre`` prefixes its globals.  ``consts``: None
        for the program (its constants are the leading parameters ``c0, c1, ...``), else
        the values of a body's constants (globals).  ``single``: return the one output
        itself (a while's condition), not a tuple."""
        glb = self.glb
        names = {}
        lines = []

        def nm(v):
            if isinstance(v, Literal):
                key = f"lit{len(glb)}"
                glb[key] = np.asarray(v.val)
                return key
            return names[v]

        if consts is None:
            for i, v in enumerate(jaxpr.constvars):
                names[v] = f"c{i}"
        else:
            for i, (v, c) in enumerate(zip(jaxpr.constvars, consts)):
                names[v] = f"{pre}k{i}"
                glb[names[v]] = c
        for i, v in enumerate(jaxpr.invars):
            names.setdefault(v, f"a{i}")
        # last use of every variable, for `del` and for the temporaries' peak
        last = last_uses(jaxpr)
        outs = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
        reuse = _Reuse(jaxpr, last, outs, donated)
        in_place = 0     # equations that write into a dying operand's buffer
        live_tmp, peak = 0, 0
        counter = 0
        for k, eqn in enumerate(jaxpr.eqns):
            fn = f"{pre}f{k}"
            outn = []
            for v in eqn.outvars:
                names[v] = f"v{counter}"
                counter += 1
                outn.append(names[v])
            control = _CONTROL.get(eqn.primitive)
            buf = None
            if control is not None:
                # a loop or branch: its bodies as generated functions, the loop here (a
                # chunked kernel reads this function's reuse plan: set it per equation, a
                # body generated before has replaced it)
                self._reuse = reuse
                in_place += control(self, eqn, k, fname, pre, [nm(v) for v in eqn.invars],
                                    outn, lines) or 0
            else:
                glb[fn] = eqn.primitive.impl_for([v.aval for v in eqn.invars], eqn.params)
                args = ", ".join(nm(v) for v in eqn.invars)
                call = f"{fn}({args})"
                op = _scalar_operator(glb[fn], eqn)
                if op is not None:
                    call = f" {op} ".join(nm(v) for v in eqn.invars)
                comment = f"  # {eqn.primitive.name}"
                if eqn.primitive.view:
                    comment += " (a view of its operand: no copy)"
                if "kernel" in eqn.params and eqn.primitive.kind == "kernel":
                    comment += f" {eqn.params['kernel'].name} (see the fused kernels)"
                buf = reuse.buffer(k, eqn)
                ufunc = None
                if buf is not None and eqn.primitive.inplace.ufunc is not None:
                    ufunc = reuse.ufunc(eqn)
                    buf = buf if ufunc is not None else None
                if buf is not None:
                    # the result takes over the dying operand's buffer: nothing allocated
                    in_place += 1
                    if ufunc is None:     # copy of a buffer nobody else sees: a rename
                        lines.append(f"    {outn[0]} = {names[buf]}{comment}, in place "
                                     f"(renames {names[buf]})")
                    else:
                        glb[f"{pre}u{k}"] = ufunc
                        lines.append(f"    {outn[0]} = {pre}u{k}({args}, out={names[buf]})"
                                     f"{comment}, in place into {names[buf]}")
                elif reuse._fresh(eqn) and \
                        _nbytes(eqn.outvars[0].aval) >= POOL.min_bytes and \
                        reuse.ufunc(eqn) is not None:
                    # a large fresh result: into a recycled buffer of the pool
                    n, aval = outn[0], eqn.outvars[0].aval
                    glb[f"{pre}u{k}"], glb["_pool"] = reuse.ufunc(eqn), pool_empty
                    glb[f"{pre}sh_{n}"], glb[f"{pre}dt_{n}"] = aval.shape, aval.dtype
                    lines.append(f"    {n} = {pre}u{k}({args}, out=_pool({pre}sh_{n}, "
                                 f"{pre}dt_{n})){comment}, into a pool buffer")
                elif eqn.primitive.multiple_results:
                    if outn:
                        lines.append(f"    _r = {call}{comment}")
                        for j, (n, v) in enumerate(zip(outn, eqn.outvars)):
                            glb[f"{pre}dt_{n}"] = v.aval.dtype
                            lines.append(f"    {n} = _exact(_r[{j}], {pre}dt_{n})")
                    else:
                        lines.append(f"    {call}{comment}")
                else:
                    # implementations may widen (NumPy promotion): keep the declared dtype
                    n = outn[0]
                    glb[f"{pre}dt_{n}"] = eqn.outvars[0].aval.dtype
                    lines.append(f"    {n} = {call}{comment}")
                    lines.append(f"    if {n}.dtype != {pre}dt_{n}: "
                                 f"{n} = _exact({n}, {pre}dt_{n})")
            if buf is None:
                live_tmp += sum(_nbytes(v.aval) for v in eqn.outvars)
            peak = max(peak, live_tmp)
            dead = [v for v in set(eqn.invars) if not isinstance(v, Literal)
                    and last.get(v) == k and v not in outs and names[v].startswith("v")]
            if dead:
                lines.append(f"    del {', '.join(sorted(names[v] for v in dead))}")
                live_tmp -= sum(_nbytes(v.aval) for v in dead if v is not buf)
        if consts is None:
            ret = f"[{', '.join(nm(v) for v in jaxpr.outvars)}]"
            params = [f"c{i}" for i in range(len(jaxpr.constvars))]
        else:
            # a body returns fresh literals: a literal result may become a stacked slice
            # or a carry, never the shared literal itself
            rets = [f"{nm(v)}.copy()" if isinstance(v, Literal) else nm(v)
                    for v in jaxpr.outvars]
            ret = rets[0] if single else _tuple(rets)
            params = []
        params = ", ".join(params + [names[v] for v in jaxpr.invars])
        # outputs are results, not temporaries: charge only what is freed before the end
        temp_bytes = max(0, peak - sum(_nbytes(v.aval) for v in outs))
        src = [f"def {fname}({params}):"] + ([doc] if doc else []) + \
            (lines or ["    pass"]) + [f"    return {ret}"]
        if donated:
            src.insert(1, f"    # arguments {', '.join(f'a{i}' for i in sorted(donated))} "
                          f"are donated: their buffers may be written in place")
        self.defs.append("\n".join(src))
        self.def_names.append(fname)
        return in_place, temp_bytes

    def body(self, closed, fname, pre, what, single=False, chunk=False):
        """Generates the body ``closed`` (a ClosedJaxpr) as the function ``fname``;
        returns the names of the globals holding its constants.  ``chunk``: a chunk of a
        kernel (``kernel``), whose results the caller copies (see ``expand_kernels``)."""
        closed = expand_kernels(closed, keep=chunkable, outputs_copied=chunk)
        self.function(closed.jaxpr, fname, pre, single=single,
                      consts=[host_value(c) for c in closed.consts],
                      doc=f"    # {what}")
        return [f"{pre}k{i}" for i in range(len(closed.jaxpr.constvars))]

    def scan(self, eqn, k, fname, pre, ins, outn, lines):
        p = eqn.params
        nc, ncar, length = p["num_consts"], p["num_carry"], p["length"]
        body = f"{fname}_scan{k}"
        kept = self.body(p["jaxpr"], body, f"{pre}s{k}_", f"the body of the scan at equation {k} "
                  f"of {fname}: consts, carries, x slices -> carries, y slices")
        consts, init, xs = ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:]
        car = [f"_c{k}_{j}" for j in range(ncar)]
        ys = outn[ncar:]
        i = f"_i{k}"
        steps = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
        lines.append(f"    # scan: {length} steps{', reversed' if p['reverse'] else ''}, "
                     f"body {body}")
        if car:
            lines.append(f"    {_assign(car, init)}")
        for n, v in zip(ys, eqn.outvars[ncar:]):
            self.glb[f"{pre}sh_{n}"] = v.aval.shape
            self.glb[f"{pre}dt_{n}"] = v.aval.dtype
            lines.append(f"    {n} = _np.empty({pre}sh_{n}, {pre}dt_{n})")
        ytmp = [f"_y{k}_{j}" for j in range(len(ys))]
        targets = car + ytmp
        call = f"{body}({', '.join(consts + car + [f'{x}[{i}]' for x in xs])})"
        lines.append(f"    for {i} in {steps}:")
        lines.append(f"        {_tuple(targets, '_')} = {call}")
        for n, y in zip(ys, ytmp):
            lines.append(f"        {n}[{i}] = {y}")
        self._finish(eqn, pre, car, outn[:ncar], consts + init + kept, lines)

    def while_(self, eqn, k, fname, pre, ins, outn, lines):
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cond, body = f"{fname}_while{k}_cond", f"{fname}_while{k}_body"
        kept = self.body(p["cond_jaxpr"], cond, f"{pre}w{k}c_", f"the condition of the while at "
                  f"equation {k} of {fname}: consts, carries -> bool", single=True)
        kept += self.body(p["body_jaxpr"], body, f"{pre}w{k}b_", f"the body of the while at "
                  f"equation {k} of {fname}: consts, carries -> carries")
        cconsts, bconsts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
        car = [f"_c{k}_{j}" for j in range(len(init))]
        lines.append(f"    # while: condition {cond}, body {body}")
        if car:
            lines.append(f"    {_assign(car, init)}")
        lines.append(f"    while {cond}({', '.join(cconsts + car)}):")
        lines.append(f"        {_tuple(car, '_')} = "
                     f"{body}({', '.join(bconsts + car)})")
        self._finish(eqn, pre, car, outn, cconsts + bconsts + init + kept, lines)

    def cond(self, eqn, k, fname, pre, ins, outn, lines):
        branches = eqn.params["branches"]
        names, kept = [], []
        for b, br in enumerate(branches):
            names.append(f"{fname}_cond{k}_{b}")
            kept += self.body(br, names[-1], f"{pre}b{k}_{b}_", f"branch {b} of the cond at "
                      f"equation {k} of {fname}")
        idx, ops = ins[0], ins[1:]
        pick = f"min(max(int({idx}), 0), {len(branches) - 1})"
        lines.append(f"    # cond: {len(branches)} branches")
        res = [f"_r{k}_{j}" for j in range(len(outn))]
        lines.append(f"    {_tuple(res, '_')} = "
                     f"({', '.join(names)},)[{pick}]({', '.join(ops)})")
        self._finish(eqn, pre, res, outn, ops + kept, lines)

    def kernel(self, eqn, k, fname, pre, ins, outn, lines):
        """A large kernel run in chunks of its leading axis (``chunk_axes``): its body
        generated once for a chunk of ``rows`` leading indices (about ``CHUNK`` elements;
        once more for the last, shorter chunk), and ``_run_chunked`` runs the chunks over
        the host's cores."""
        kern = eqn.params["kernel"]
        shape = kern.shape
        axes = chunk_axes(kern)
        inner = int(np.prod(shape[1:]))
        rows = max(1, CHUNK // max(inner, 1))
        # an output may take over a dying owned operand of its shape and dtype read along
        # the leading axis: each chunk is read whole before its results are written to the
        # same rows, and chunks never overlap
        reuse, into, taken = self._reuse, [], set()
        for v in eqn.outvars:
            buf = None
            for j, x in enumerate(eqn.invars):
                if not isinstance(x, Literal) and axes[j] == 0 and x in reuse.owned and \
                        reuse.last.get(x) == k and x not in reuse.outs and j not in taken \
                        and x.aval.shape == v.aval.shape and x.aval.dtype == v.aval.dtype:
                    buf = j
                    taken.add(j)
                    break
            into.append(buf)
        fns = []
        for r in sorted({rows, shape[0] % rows} - {0}, reverse=True):
            body = f"{fname}_kernel{k}_{r}"

            def cut(s_, ax):
                return s_ if ax is None else s_[:ax] + (r,) + s_[ax + 1:]
            inputs = [KernelInput(ShapedArray(cut(i.aval.shape, ax), i.aval.dtype), i.dims)
                      for i, ax in zip(kern.inputs, axes)]
            outputs = [KernelOutput(o.kind, ShapedArray(cut(o.aval.shape, 0), o.aval.dtype),
                                    o.monoid, o.axes) for o in kern.outputs]
            chunk = Kernel(cut(shape, 0), inputs, kern.body, outputs, name=f"{kern.name}_{r}")
            invars = [Var(i.aval) for i in inputs]
            outvars = [Var(o.aval) for o in outputs]
            closed = ClosedJaxpr(Jaxpr([], invars, [JaxprEqn(kernel_p, invars, outvars,
                                                             {"kernel": chunk})], outvars), [])
            # (_run_chunked copies each result into its rows: no copy equation in here)
            self.body(closed, body, f"{pre}kc{k}_{r}_", f"{r} of the {shape[0]} leading "
                      f"indices of the kernel {kern.name} at equation {k} of {fname}",
                      chunk=True)
            fns.append(body)
        fn_rem = fns[-1] if shape[0] % rows else "None"
        self.glb["_run_chunked"] = _run_chunked
        self.glb[f"{pre}sh_k{k}"] = tuple(o.aval.shape for o in kern.outputs)
        self.glb[f"{pre}dt_k{k}"] = tuple(o.aval.dtype for o in kern.outputs)
        dest = [ins[j] if j is not None else "None" for j in into]
        lines.append(f"    # kernel {kern.name} over {list(shape)}: {fns[0]} on chunks of "
                     f"{rows} leading indices, over the host's cores" +
                     "".join(f"; {o} in place into {ins[j]}" for o, j in zip(outn, into)
                             if j is not None))
        lines.append(f"    {_tuple(outn, '_')} = _run_chunked({fns[0]}, {fn_rem}, {rows}, "
                     f"{shape[0]}, ({_tuple(ins)}), {axes}, {pre}sh_k{k}, {pre}dt_k{k}, "
                     f"({_tuple(dest)}))")
        return sum(j is not None for j in into)

    def _finish(self, eqn, pre, tmp, outn, inputs, lines):
        """The loop's or branch's results: fresh arrays of the declared dtypes."""
        ins = f"({_tuple(inputs)})"
        for n, t, v in zip(outn, tmp, eqn.outvars):
            self.glb[f"{pre}dt_{n}"] = v.aval.dtype
            lines.append(f"    {n} = _own({t}, {pre}dt_{n}, {ins})")


def _tuple(items, empty="()"):
    """``items`` as the text of a Python tuple (a target list too); ``empty`` for none."""
    if not items:
        return empty
    return items[0] + "," if len(items) == 1 else ", ".join(items)


def _assign(targets, values):
    """The text of the statement assigning ``values`` to ``targets`` (names)."""
    if len(targets) == 1:
        return f"{targets[0]} = {values[0]}"
    return f"{_tuple(targets)} = {_tuple(values)}"


_CONTROL = {scan_p: _Source.scan, while_p: _Source.while_, cond_p: _Source.cond,
            kernel_p: _Source.kernel}


# ---- large kernels in chunks of their leading axis, over the host's cores ---------------
# An expanded kernel makes one pass over memory per body operation, each writing a result
# as large as the kernel (W2's 10-million-element kernel: 8 passes over 40 MB arrays).
# Run over chunks of about CHUNK elements (a run of leading indices) instead, the body's
# temporaries stay in the core's cache, and NumPy, which releases the interpreter lock
# inside its loops, runs chunks on several threads at once.  Only kernels whose every
# result element depends on one leading index qualify (``chunk_axes``): each chunk then
# computes its rows exactly as the whole-array evaluation does (the same NumPy functions,
# a reduction over the same other axes in the same order).

CHUNK = 1 << 18
"""Elements per chunk (at least one leading index): a float32 chunk is 1 MB.  Measured on
W2 and W3 (2 cores): 2**16 elements costs W3's three kernels more in per-chunk Python than
the cache saves (22.6 ms a call against 11.7 ms at 2**18); W2 12.3-13.7 ms at any size."""
CHUNK_MIN = 1 << 19
"""The smallest kernel (in elements) run in chunks."""


def chunk_axes(kern):
    """How the interpreter runs kernel ``kern`` in chunks of its leading iteration axis:
    per input, the input axis read along that iteration axis (sliced per chunk), or None
    (an input that does not vary along it, passed whole).  None when the kernel is not run
    in chunks: fewer than ``CHUNK_MIN`` elements (or at most one chunk), a leading axis
    under 2, or an output reduced over the leading axis (or not leading with it)."""
    shape = kern.shape
    n = int(np.prod(shape)) if shape else 0
    if not shape or shape[0] < 2 or n < CHUNK_MIN or n <= CHUNK:
        return None
    for o in kern.outputs:
        if o.kind == "reduce" and (0 in o.axes or not o.aval.shape or
                                   o.aval.shape[0] != shape[0]):
            return None
    axes = []
    for inp in kern.inputs:
        ax = None
        for j, (size, d) in enumerate(zip(inp.aval.shape, inp.dims)):
            if d == 0 and size != 1:
                ax = j
        axes.append(ax)
    return tuple(axes)


def chunkable(kern) -> bool:
    """Whether the interpreter runs kernel ``kern`` in chunks (``chunk_axes``)."""
    return chunk_axes(kern) is not None


_POOL_LOCK = threading.Lock()
_pool = (None, None, 1)   # (process id, ThreadPoolExecutor or None, threads): per process


def _threads() -> int:
    """The cores this process may run on (its CPU affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _workers():
    """(executor of (cores - 1) threads or None, cores), made once per process (a forked
    child makes its own)."""
    pool = _pool
    if pool[0] != os.getpid():
        pool = _make_workers()
    return pool[1], pool[2]


def _make_workers():
    global _pool
    with _POOL_LOCK:
        if _pool[0] != os.getpid():
            n = _threads()
            ex = None
            if n > 1:
                from concurrent.futures import ThreadPoolExecutor
                ex = ThreadPoolExecutor(n - 1, thread_name_prefix="jaxlite-chunks")
            _pool = (os.getpid(), ex, n)
        return _pool


def _run_chunked(fn, fn_rem, rows, total, ins, axes, shapes, dtypes_, into=None):
    """Runs a kernel in chunks (``chunk_axes``): ``fn`` (``fn_rem`` for a last chunk of
    fewer than ``rows`` leading indices) maps the chunk's slice of every input (along its
    axis in ``axes``; None: the whole input) to the chunk's outputs, which land in the
    same rows of fresh arrays of ``shapes`` and ``dtypes_`` (or, where ``into`` names one,
    of that operand's buffer: an owned operand dying here).  Chunks are taken in turn by
    the calling thread and up to (cores - 1) pool threads, each running in a copy of the
    caller's context (NumPy's error state included)."""
    outs = [pool_empty(sh, dt) if d is None else d
            for sh, dt, d in zip(shapes, dtypes_, into or (None,) * len(shapes))]
    heads = [None if ax is None else (slice(None),) * ax for ax in axes]
    chunks = -(-total // rows)
    nxt = itertools.count().__next__     # shared by the threads: next() holds the GIL

    def work():
        while True:
            c = nxt()
            if c >= chunks:
                return
            lo = c * rows
            hi = min(lo + rows, total)
            res = (fn if hi - lo == rows else fn_rem)(
                *[x if h is None else x[h + (slice(lo, hi),)] for x, h in zip(ins, heads)])
            for o, r in zip(outs, res):
                o[lo:hi] = r

    ex, threads = _workers()
    futures = [ex.submit(contextvars.copy_context().run, work)
               for _ in range(min(threads, chunks) - 1)]
    try:
        work()
    finally:
        for f in futures:
            f.result()
    return outs


# NumPy scalars' own arithmetic (about 0.06 us) for these ufuncs (0.5 us on two scalars,
# which they turn into arrays and back): the same loops' results, dtypes and warnings
# (both follow np.errstate); on 0-d arrays the operator calls the ufunc itself
_SCALAR_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*"}


def _scalar_operator(impl, eqn) -> str | None:
    """The Python operator that computes ``eqn`` exactly as its implementation ``impl``
    does, when that is one of ``_SCALAR_OPERATORS`` on two rank-0 operands and a result
    of their dtype (a reduction's or a dot's scalar result, say); else None."""
    op = _SCALAR_OPERATORS.get(impl) if type(impl) is np.ufunc else None
    if op is None or len(eqn.invars) != 2 or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0].aval
    if out.shape or any(isinstance(v, Literal) or v.aval.shape or v.aval.dtype != out.dtype
                        for v in eqn.invars):
        return None
    return op


class InterpretedExecutable(Executable):
    """Generated Python over NumPy; ``source`` is what ``as_text`` shows."""

    backend = "interpreter"

    def __init__(self, closed: ClosedJaxpr, name: str):
        # fused kernels run as the array operations they stand for (no code generator
        # here): the same NumPy calls as the unfused program, without interpreting bodies;
        # a large elementwise one runs in chunks over the host's cores (``chunkable``)
        closed = expand_kernels(closed, keep=chunkable)
        jaxpr = closed.jaxpr
        self.name = name
        self.in_avals = [v.aval for v in jaxpr.invars]
        self.out_avals = [v.aval for v in jaxpr.outvars]
        self._consts = [host_value(c) for c in closed.consts]
        self._jaxpr = jaxpr
        self.source, self._fn, self.in_place, self.temp_bytes = self._generate(jaxpr, ())
        self._donated_fns = {}     # frozenset of donated positions -> generated function

    def _generate(self, jaxpr, donated):
        """(source, function, in-place equation count, temporaries' peak bytes) of the
        program when the arguments at positions ``donated`` may be overwritten.

        The program is one generated function; each loop or branch body in it (``scan``,
        ``while``, ``cond``, nested ones too) is a generated function of its own, defined
        above the function that calls it (see ``_Source``)."""
        fname = _ident(self.name)
        while True:
            gen = _Source()
            in_place, temp_bytes = gen.function(jaxpr, fname, "", donated=donated)
            # a function named like one of the generated globals (``f0``, ``lit3``, ...)
            # would replace it: rename the generated functions
            if not any(d in gen.glb for d in gen.def_names):
                break
            fname += "_"
        source = "\n\n".join(gen.defs)
        code = compile(source, f"<jaxlite {self.name}>", "exec")
        glb = gen.glb
        exec(code, glb)
        return source, glb[fname], in_place, temp_bytes

    def run(self, args, donated=None):
        """Runs on NumPy values; results have the declared dtypes (NumPy scalars possible:
        callers wrap them).  ``donated``: positions of arguments whose arrays the caller
        gave up (writable, referenced by nobody else): an elementwise equation where such
        an argument dies may write its result into it."""
        if donated:
            fn = self._donated_fns.get(donated)
            if fn is None:
                fn = self._donated_fns[donated] = self._generate(self._jaxpr, donated)[1]
            return fn(*self._consts, *args)
        return self._fn(*self._consts, *args)

    def donated_text(self, donated) -> str:
        """The generated source when the arguments at positions ``donated`` are donated."""
        return self._generate(self._jaxpr, frozenset(donated))[0]

    def as_text(self) -> str:
        return self.source


def _ident(name: str) -> str:
    """``name`` made a Python identifier for the generated function (a jitted function
    may be called ``or``, ``lambda`` or ``<lambda>``)."""
    s = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "f"
    if s[0].isdigit():
        s = "f_" + s
    return s + "_" if keyword.iskeyword(s) else s


register_backend("interpreter", InterpretedExecutable)
