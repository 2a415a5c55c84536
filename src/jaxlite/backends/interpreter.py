"""The interpreter backend: the reference every other backend is tested against.

It "compiles" a program into straight-line Python source that calls each primitive's NumPy
implementation in order, deleting each intermediate right after its last use (so host
memory tracks the live set).  The source is the executable's text.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core.eager import host_value
from ..primitives.kernel import expand_kernels
from ..ir.interpret import exact
from ..ir.jaxpr import ClosedJaxpr, Literal
from .base import Executable, register_backend


def _nbytes(aval) -> int:
    return aval.size * aval.dtype.itemsize


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
        live_tmp, peak = 0, 0
        counter = 0
        for k, eqn in enumerate(jaxpr.eqns):
            fn = f"f{k}"
            glb[fn] = functools.partial(eqn.primitive.impl, **eqn.params) if eqn.params \
                else eqn.primitive.impl
            outn = []
            for v in eqn.outvars:
                names[v] = f"v{counter}"
                counter += 1
                outn.append(names[v])
            args = ", ".join(nm(v) for v in eqn.invars)
            call = f"{fn}({args})"
            comment = f"  # {eqn.primitive.name}"
            if "kernel" in eqn.params and eqn.primitive.kind == "kernel":
                comment += f" {eqn.params['kernel'].name} (see the fused kernels)"
            if eqn.primitive.multiple_results:
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
            live_tmp += sum(_nbytes(v.aval) for v in eqn.outvars)
            peak = max(peak, live_tmp)
            dead = [v for v in set(eqn.invars) if not isinstance(v, Literal)
                    and last.get(v) == k and v not in outs and names[v].startswith("v")]
            if dead:
                lines.append(f"    del {', '.join(sorted(names[v] for v in dead))}")
                live_tmp -= sum(_nbytes(v.aval) for v in dead)
        ret = ", ".join(nm(v) for v in jaxpr.outvars)
        params = ", ".join([f"c{i}" for i in range(len(jaxpr.constvars))] +
                           [names[v] for v in jaxpr.invars])
        # outputs are results, not temporaries: charge only what is freed before the end
        self.temp_bytes = max(0, peak - sum(_nbytes(v.aval) for v in outs))
        src = [f"def {_ident(name)}({params}):"] + (lines or ["    pass"]) + \
              [f"    return [{ret}]"]
        self.source = "\n".join(src)
        code = compile(self.source, f"<jaxlite {name}>", "exec")
        exec(code, glb)
        self._fn = glb[_ident(name)]

    def run(self, args):
        """Runs on NumPy values; results have the declared dtypes (NumPy scalars possible:
        callers wrap them)."""
        return self._fn(*self._consts, *args)

    def as_text(self) -> str:
        return self.source


def _ident(name: str) -> str:
    s = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "f"
    return s if not s[0].isdigit() else "f_" + s


register_backend("interpreter", InterpretedExecutable)
