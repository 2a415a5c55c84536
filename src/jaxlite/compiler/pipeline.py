"""The compile pipeline: IR -> passes -> backend executable.

``optimize`` runs ``PASSES`` in order (each a pure ClosedJaxpr -> ClosedJaxpr function) and
can record every pass's program before and after; ``compile_jaxpr`` then hands the result
to a backend.  ``cost_analysis`` counts flops (each primitive's ``flops`` rule) and bytes
read and written by the program's equations.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..backends import get_backend
from ..backends.base import set_body_optimizer
from ..ir.jaxpr import ClosedJaxpr, Literal
from ..primitives import kernel as _kernel
from .passes import cse, dce, fold_constants, fuse, inline_calls

PASSES = (
    ("inline", inline_calls),
    ("fold", fold_constants),
    ("cse", cse),
    ("dce", dce),
    ("fuse", fuse),
)

# JAXLITE_FUSION=0 (or setting this to False) compiles without the fusion pass; jit's
# cache does not see this switch: set it before compiling.
FUSION = os.environ.get("JAXLITE_FUSION", "1").lower() not in ("0", "false", "off", "no")


def optimize(closed: ClosedJaxpr, record: bool = False, fusion: bool | None = None):
    """Runs every pass (``fuse`` only when ``fusion``, default ``FUSION``).  Returns
    ``(optimised, log)``; ``log`` lists ``(pass_name, text_before, text_after, seconds)``
    when ``record`` is True, else is empty."""
    log = []
    fusion = FUSION if fusion is None else fusion
    for name, fn in PASSES:
        if name == "fuse" and not fusion:
            continue
        t0 = time.perf_counter()
        before = str(closed) if record else None
        closed = fn(closed)
        if record:
            log.append((name, before, str(closed), time.perf_counter() - t0))
    return closed, log


set_body_optimizer(lambda closed: optimize(closed)[0])   # for backends' loop bodies


class CompiledProgram:
    """An optimised program and its executable (what ``Compiled`` wraps)."""

    def __init__(self, source: ClosedJaxpr, optimized: ClosedJaxpr, executable, pass_log,
                 compile_seconds: float):
        self.source = source
        self.optimized = optimized
        self.executable = executable
        self.pass_log = pass_log
        self.compile_seconds = compile_seconds

    def as_text(self) -> str:
        ex = self.executable
        text = ex.as_text()     # first: a tiered executable builds its native tier here
        return (f"# optimised program ({', '.join(n for n, _ in PASSES)})\n"
                f"{self.optimized}\n{_kernels_text(self.optimized)}\n# executable: "
                f"backend={ex.backend}, temporaries peak "
                f"{ex.temp_bytes} bytes\n{text}")


def _kernels_text(closed: ClosedJaxpr) -> str:
    ks = [e.params["kernel"] for e in closed.jaxpr.eqns if e.primitive is _kernel.kernel_p]
    if not ks:
        return ""
    return "\n# fused kernels\n" + "\n".join(k.pretty() for k in ks) + "\n"


def compile_jaxpr(closed: ClosedJaxpr, backend: str = "interpreter", name: str = "f",
                  record_passes: bool = False, fusion: bool | None = None) -> CompiledProgram:
    """Optimises ``closed`` and compiles it with ``backend`` (``fusion``: see
    ``optimize``)."""
    t0 = time.perf_counter()
    optimized, log = optimize(closed, record_passes, fusion)
    executable = get_backend(backend)(optimized, name)
    return CompiledProgram(closed, optimized, executable, log, time.perf_counter() - t0)


def cost_analysis(closed: ClosedJaxpr) -> dict:
    """``{'flops': F, 'bytes accessed': B, 'transcendentals': T}`` of ``closed``.

    Flops come from each primitive's cost rule; bytes are what each equation reads and
    writes (an upper bound once kernels are fused).
    """
    flops = 0
    nbytes = 0
    trans = 0
    transcendental = {"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin",
                      "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                      "atanh", "sqrt", "rsqrt", "cbrt", "pow", "erf", "erfc", "lgamma",
                      "atan2"}
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive is _kernel.kernel_p:
            k = eqn.params["kernel"]
            flops += k.flops()
            nbytes += k.bytes_accessed()
            n = int(np.prod(k.shape, dtype=np.int64))
            trans += n * sum(e.primitive.name in transcendental for e in k.body.eqns)
            continue
        avals = [v.aval for v in eqn.invars]
        if eqn.primitive.flops is not None:
            f = eqn.primitive.flops(*avals, **eqn.params)
            flops += f
            if eqn.primitive.name in transcendental:
                trans += f
        nbytes += sum(a.size * a.dtype.itemsize for v, a in zip(eqn.invars, avals)
                      if not isinstance(v, Literal))
        nbytes += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.outvars)
    return {"flops": float(flops), "bytes accessed": float(nbytes),
            "transcendentals": float(trans)}
