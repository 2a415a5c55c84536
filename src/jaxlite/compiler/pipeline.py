"""The compile pipeline: IR -> passes -> backend executable.

``optimize`` runs ``PASSES`` in order (each a pure ClosedJaxpr -> ClosedJaxpr function) and
can record every pass's program before and after; ``compile_jaxpr`` then hands the result
to a backend.  ``cost_analysis`` counts flops (each primitive's ``flops`` rule) and bytes
read and written by the program's equations.
"""
from __future__ import annotations

import time

import numpy as np

from ..backends import get_backend
from ..backends.base import set_body_optimizer
from ..config import config
from ..runtime import backend as _runtime_backend
from ..runtime.device import default_backend
from ..errors import JaxprTypeError
from ..ir.check import check_jaxpr
from ..ir.jaxpr import ClosedJaxpr, Literal
from ..primitives import control_flow as _control_flow
from ..primitives import kernel as _kernel
from .passes import (compose_broadcasts, cse, dce, expand_size1_broadcasts,
                     fold_batch_dot_sums, fold_constants, fuse, inline_calls,
                     swap_transposed_dots)

PASSES = (
    ("inline", inline_calls),
    ("expand_broadcasts", expand_size1_broadcasts),
    ("fold", fold_constants),
    ("cse", cse),
    ("batch_dot_sum", fold_batch_dot_sums),
    ("broadcasts", compose_broadcasts),
    ("dot_transpose", swap_transposed_dots),
    ("dce", dce),
    ("fuse", fuse),
)


def optimize(closed: ClosedJaxpr, record: bool = False, fusion: bool | None = None):
    """Runs every pass (``fuse`` only when ``fusion``, default config ``jaxlite_fusion``,
    which ``JAXLITE_FUSION=0`` turns off).  Returns ``(optimised, log)``; ``log`` lists
    ``(pass_name, program_before, program_after, seconds)`` when ``record`` is True, else
    is empty.  Passes are pure (IR -> new IR), so the log keeps the programs themselves and
    prints them only when asked.

    With ``jax_enable_checks`` on, the program received and each pass's output are checked
    with ``check_jaxpr``; raises JaxprTypeError naming the pass (or the traced program)
    and the ill-typed equation."""
    log = []
    fusion = config.jaxlite_fusion if fusion is None else fusion
    checks = config.jax_enable_checks
    if checks:
        _check_program(closed, "the program given to the compiler (before any pass)")
    for name, fn in PASSES:
        if name == "fuse" and not fusion:
            continue
        t0 = time.perf_counter()
        before = closed
        closed = fn(closed)
        if record:
            log.append((name, before, closed, time.perf_counter() - t0))
        if checks:
            _check_program(closed, f"the output of compiler pass {name!r}")
    return closed, log


def _check_program(closed: ClosedJaxpr, what: str) -> None:
    try:
        check_jaxpr(closed)
    except JaxprTypeError as e:
        raise JaxprTypeError(f"{what} is ill-typed: {e}") from None


set_body_optimizer(lambda closed: optimize(closed)[0])   # for backends' loop bodies


class CompiledProgram:
    """An optimised program and its executable (what ``Compiled`` wraps).

    ``executable`` was compiled by ``backend`` (the default platform's Backend, or None
    when an executor was named directly); ``executable_for(device)`` gives the one for a
    device of another platform, compiled by that device's backend from the same optimised
    program on first use (the passes do not depend on the platform)."""

    def __init__(self, source: ClosedJaxpr, optimized: ClosedJaxpr, executable, pass_log,
                 compile_seconds: float, backend=None, name: str = "f"):
        self.source = source
        self.optimized = optimized
        self.executable = executable
        self.pass_log = pass_log
        self.compile_seconds = compile_seconds
        self.backend = backend
        self.name = name
        # another Backend (host memory) or device (else) -> its executable of this program
        self._others: dict = {}

    def executable_for(self, device):
        """The executable that runs this program on ``device`` (its backend's)."""
        b = device.backend
        ex = self.executable
        # a host-memory platform's executable runs on any of its devices; another's (a
        # PJRT executable) on the one device it was compiled for
        if b is self.backend and (b.host_memory or getattr(ex, "device", device) is device):
            return ex
        key = b if b.host_memory else device
        ex = self._others.get(key)
        if ex is None:
            program = self.optimized
            if not getattr(b, "fusion", True) and _has_kernels(program):
                program = optimize(self.source, fusion=False)[0]   # its compiler fuses
            ex = self._others[key] = b.compile(program, [device], self.name)
        return ex

    def dispatch_cost(self) -> float:
        """The program's estimated work for the inline-or-worker decision (a platform's
        ``run_compiled``, runtime/dispatch.py): flops, transcendentals and bytes accessed
        from ``cost_analysis``, computed once."""
        c = self.__dict__.get("_dispatch_cost")
        if c is None:
            try:
                ca = cost_analysis(self.optimized)
                c = ca["flops"] + ca["transcendentals"] + ca["bytes accessed"]
            except Exception:   # noqa: BLE001 - no estimate: run inline, as always
                c = 0.0
            self._dispatch_cost = c
        return c

    def as_text(self) -> str:
        ex = self.executable
        text = ex.as_text()     # first: a tiered executable builds its native tier here
        hlo = getattr(ex, "optimized_hlo_text", None)
        hlo = hlo() if hlo is not None else None
        if hlo:     # a PJRT plugin's executable: the StableHLO it got, then XLA's program
            text += f"\n# optimised by {ex.backend}'s PJRT plugin (XLA HLO)\n{hlo}"
        return (f"# optimised program ({', '.join(n for n, _ in PASSES)})\n"
                f"{self.optimized}\n{_kernels_text(self.optimized)}\n# executable: "
                f"backend={ex.backend}, temporaries peak "
                f"{ex.temp_bytes} bytes\n{text}")


def _kernels_text(closed: ClosedJaxpr) -> str:
    ks = [e.params["kernel"] for e in closed.jaxpr.eqns if e.primitive is _kernel.kernel_p]
    if not ks:
        return ""
    return "\n# fused kernels\n" + "\n".join(k.pretty() for k in ks) + "\n"


def compile_jaxpr(closed: ClosedJaxpr, backend="interpreter", name: str = "f",
                  record_passes: bool = False, fusion: bool | None = None,
                  devices=None) -> CompiledProgram:
    """Optimises ``closed`` and compiles it (``fusion``: see ``optimize``).

    ``backend``: the name of an executor (``'interpreter'``, the default, or ``'cpu'``:
    backends/base.py), a Backend (runtime/backend.py), or None for the default
    platform's Backend (what jit uses).
    ``devices``: the devices the executable is for (default: the backend's first)."""
    t0 = time.perf_counter()
    if backend is None:
        backend = _runtime_backend.get(default_backend())
    if not isinstance(backend, str) and not getattr(backend, "fusion", True):
        fusion = False     # the platform's own compiler fuses (XLA through PJRT)
    optimized, log = optimize(closed, record_passes, fusion)
    if isinstance(backend, str):
        executable = get_backend(backend)(optimized, name)
        platform = None
    else:
        platform = backend if backend is not None else \
            _runtime_backend.get(default_backend())
        if devices is None:
            devices = platform.devices()[:1]
        executable = platform.compile(optimized, list(devices), name)
    return CompiledProgram(closed, optimized, executable, log, time.perf_counter() - t0,
                           platform, name)


def _has_kernels(closed: ClosedJaxpr) -> bool:
    return any(e.primitive is _kernel.kernel_p for e in closed.jaxpr.eqns)


def cost_analysis(closed: ClosedJaxpr) -> dict:
    """``{'flops': F, 'bytes accessed': B, 'transcendentals': T}`` of ``closed``.

    Flops come from each primitive's cost rule; a ``transcendental`` primitive (exp, tanh,
    sin, sqrt, pow, ...) counts one transcendental per element and no flop, as XLA's cost
    analysis does, plus its declared ``extra_flops`` per element (logistic, exp2).  Bytes
    are what each top-level equation reads and writes (an upper bound once kernels are
    fused).

    Control flow: a ``scan`` body counts ``length`` times (XLA counts a loop body once;
    the total work is the more useful estimate); a ``while`` body (and its condition)
    counts once, since the trip count is unknown before the run; a ``cond`` counts the
    most expensive branch (flops and transcendentals each their maximum over branches).
    Nested jit, checkpoint and custom_jvp/custom_vjp calls count their bodies once.
    """
    flops, trans = _work(closed.jaxpr)
    nbytes = 0
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive is _kernel.kernel_p:
            nbytes += eqn.params["kernel"].bytes_accessed()
            continue
        nbytes += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.invars
                      if not isinstance(v, Literal))
        nbytes += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.outvars)
    return {"flops": float(flops), "bytes accessed": float(nbytes),
            "transcendentals": float(trans)}


def _work(jaxpr) -> tuple:
    """(flops, transcendentals) of a jaxpr, control-flow bodies included (see
    ``cost_analysis``)."""
    flops = trans = 0
    for eqn in jaxpr.eqns:
        prim, params = eqn.primitive, eqn.params
        if prim is _kernel.kernel_p:
            k = params["kernel"]
            n = int(np.prod(k.shape, dtype=np.int64))
            t = sum(e.primitive.transcendental for e in k.body.eqns)
            extra = sum(e.primitive.extra_flops for e in k.body.eqns)
            flops += n * (max(len(k.body.eqns), 1) - t + extra)
            trans += n * t
        elif prim is _control_flow.scan_p:
            f, t = _work(params["jaxpr"].jaxpr)
            flops += params["length"] * f
            trans += params["length"] * t
        elif prim is _control_flow.while_p:
            for body in (params["cond_jaxpr"], params["body_jaxpr"]):
                f, t = _work(body.jaxpr)
                flops += f
                trans += t
        elif prim is _control_flow.cond_p:
            costs = [_work(b.jaxpr) for b in params["branches"]]
            flops += max(c[0] for c in costs)
            trans += max(c[1] for c in costs)
        elif isinstance(params.get("jaxpr"), ClosedJaxpr):
            f, t = _work(params["jaxpr"].jaxpr)     # jit, checkpoint, custom calls
            flops += f
            trans += t
        elif prim.flops is not None:
            f = prim.flops(*[v.aval for v in eqn.invars], **params)
            if prim.transcendental:
                trans += f
                flops += f * prim.extra_flops
            else:
                flops += f
    return flops, trans
