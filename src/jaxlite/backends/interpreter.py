"""The interpreter backend: the reference every other backend is tested against.

It "compiles" a program into straight-line Python source that calls each primitive's NumPy
implementation in order, deleting each intermediate right after its last use (so host
memory tracks the live set).  The source is the executable's text.

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

import keyword

import numpy as np

from .. import dtypes
from ..core.eager import host_value
from ..primitives.kernel import expand_kernels
from ..ir.interpret import exact
from ..ir.jaxpr import ClosedJaxpr, Literal
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
    exist.  A donated argument whose every use is such an equation is owned too.  Program
    outputs are never written (they must survive the program).
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
                if all(self._fresh_op(u) for u in uses.get(v, ())):
                    self.owned.add(v)
        # a donated argument (the caller gave up its buffer, see run) is owned likewise
        self.donated = set()
        for i in donated:
            v = jaxpr.invars[i]
            if v.aval.ndim >= 1 and all(self._fresh_op(u) for u in uses.get(v, ())):
                self.owned.add(v)
                self.donated.add(v)

    @staticmethod
    def _fresh_op(e):
        return e.primitive.inplace is not None and \
            not e.primitive.multiple_results and len(e.outvars) == 1

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


class InterpretedExecutable(Executable):
    """Generated Python over NumPy; ``source`` is what ``as_text`` shows."""

    backend = "interpreter"

    def __init__(self, closed: ClosedJaxpr, name: str):
        # fused kernels run as the array operations they stand for (no code generator
        # here): the same NumPy calls as the unfused program, without interpreting bodies
        closed = expand_kernels(closed)
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
        program when the arguments at positions ``donated`` may be overwritten."""
        name = self.name
        names, glb = {}, {"_exact": exact, "_np": np}
        lines = []

        def nm(v):
            if isinstance(v, Literal):
                key = f"lit{len(glb)}"
                glb[key] = np.asarray(v.val)
                return key
            return names[v]

        for i, v in enumerate(jaxpr.constvars):
            names[v] = f"c{i}"
        for i, v in enumerate(jaxpr.invars):
            names.setdefault(v, f"a{i}")
        # last use of every variable, for `del` and for the temporaries' peak
        last = {}
        for k, eqn in enumerate(jaxpr.eqns):
            for v in eqn.invars:
                if not isinstance(v, Literal):
                    last[v] = k
        outs = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
        reuse = _Reuse(jaxpr, last, outs, donated)
        in_place = 0     # equations that write into a dying operand's buffer
        live_tmp, peak = 0, 0
        counter = 0
        for k, eqn in enumerate(jaxpr.eqns):
            fn = f"f{k}"
            glb[fn] = eqn.primitive.impl_for([v.aval for v in eqn.invars], eqn.params)
            outn = []
            for v in eqn.outvars:
                names[v] = f"v{counter}"
                counter += 1
                outn.append(names[v])
            args = ", ".join(nm(v) for v in eqn.invars)
            call = f"{fn}({args})"
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
                    glb[f"u{k}"] = ufunc
                    lines.append(f"    {outn[0]} = u{k}({args}, out={names[buf]})"
                                 f"{comment}, in place into {names[buf]}")
            elif reuse._fresh(eqn) and \
                    _nbytes(eqn.outvars[0].aval) >= POOL.min_bytes and \
                    reuse.ufunc(eqn) is not None:
                # a large fresh result: into a recycled buffer of the pool (no page faults)
                n, aval = outn[0], eqn.outvars[0].aval
                glb[f"u{k}"], glb["_pool"] = reuse.ufunc(eqn), pool_empty
                glb[f"sh_{n}"], glb[f"dt_{n}"] = aval.shape, aval.dtype
                lines.append(f"    {n} = u{k}({args}, out=_pool(sh_{n}, dt_{n})){comment}, "
                             f"into a pool buffer")
            elif eqn.primitive.multiple_results:
                if outn:
                    lines.append(f"    _r = {call}{comment}")
                    for j, (n, v) in enumerate(zip(outn, eqn.outvars)):
                        glb[f"dt_{n}"] = v.aval.dtype
                        lines.append(f"    {n} = _exact(_r[{j}], dt_{n})")
                else:
                    lines.append(f"    {call}{comment}")
            else:
                # implementations may widen (NumPy promotion): keep the declared dtype
                n = outn[0]
                glb[f"dt_{n}"] = eqn.outvars[0].aval.dtype
                lines.append(f"    {n} = {call}{comment}")
                lines.append(f"    if {n}.dtype != dt_{n}: {n} = _exact({n}, dt_{n})")
            if buf is None:
                live_tmp += sum(_nbytes(v.aval) for v in eqn.outvars)
            peak = max(peak, live_tmp)
            dead = [v for v in set(eqn.invars) if not isinstance(v, Literal)
                    and last.get(v) == k and v not in outs and names[v].startswith("v")]
            if dead:
                lines.append(f"    del {', '.join(sorted(names[v] for v in dead))}")
                live_tmp -= sum(_nbytes(v.aval) for v in dead if v is not buf)
        ret = ", ".join(nm(v) for v in jaxpr.outvars)
        params = ", ".join([f"c{i}" for i in range(len(jaxpr.constvars))] +
                           [names[v] for v in jaxpr.invars])
        # outputs are results, not temporaries: charge only what is freed before the end
        temp_bytes = max(0, peak - sum(_nbytes(v.aval) for v in outs))
        src = [f"def {_ident(name)}({params}):"] + (lines or ["    pass"]) + \
              [f"    return [{ret}]"]
        if donated:
            src.insert(1, f"    # arguments {', '.join(f'a{i}' for i in sorted(donated))} "
                          f"are donated: their buffers may be written in place")
        source = "\n".join(src)
        code = compile(source, f"<jaxlite {name}>", "exec")
        exec(code, glb)
        return source, glb[_ident(name)], in_place, temp_bytes

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
