"""Programs holding host callbacks, run in pieces on a PJRT platform.

Layer: backends (pjrt).  A program compiled by XLA cannot stop on the device, hand values
to Python and resume, so a program whose equations (at any depth) hold a host-callback
primitive (``prim.host_callback``: ``jax.debug.print`` / ``debug_callback``,
``pure_callback``, ``io_callback``) is run in pieces (``PiecewiseExecutable``, what
``PjrtBackend.compile`` returns for it):

- its top-level equations are split into steps, in program order: each run of equations
  holding no callback is one *device piece*, lowered to StableHLO and compiled by the
  plugin once (when the program is compiled); its inputs and results stay on the device;
- a callback equation runs on the host: its operands are read from the device (each a
  counted device-to-host transfer), the primitive's implementation calls the user's
  function, and its results are put back on the device (counted host-to-device
  transfers).  These transfers belong to the program, as those of a compiled callback do
  in JAX, so the transfer guard does not refuse them;
- a control-flow equation whose body holds a callback is driven from the host: a
  ``cond``'s index and a ``while``'s predicate are read to the host (counted), a
  ``scan`` is stepped from Python (each step's slices of the scanned operands cut and its
  outputs written into the stacked results by two small compiled helpers, on the
  device), a call (``jit``, ``custom_jvp_call``, ``custom_vjp_call``, ``checkpoint``,
  ``custom_linear_solve``) runs its program (``checkpoint_jvp`` its JVP program); each
  body is itself run in pieces, and
  every body and helper is compiled once, with the program.

So every callback runs exactly when and as often as on the CPU platform: in program
order (ordered ``io_callback``s in order), once per call, per loop iteration, per taken
branch; the run is synchronous, so its effects have happened when the call returns (what
``jax.effects_barrier`` waits for).  A body holding a callback inside another primitive
(``shard_map``, a custom rule's program) is refused with NotImplementedError naming the
primitive and the platform.  Donated arguments are consumed (their Arrays deleted) but
not aliased: XLA never sees the whole program.
"""
from __future__ import annotations

import numpy as np

from ...core.avals import ShapedArray
from ...ir.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ...runtime import transfer as _transfer
from .client import PjrtBuffer
from .lowering import lower_function, lower_module

__all__ = ["holds_callback", "lowered_text", "PiecewiseExecutable"]

_I64 = ShapedArray((), np.dtype(np.int64))


def _programs(value):
    """The programs (ClosedJaxpr / Jaxpr) held by a parameter value, nested in tuples and
    lists (cond's branches, a linear solve's programs) included."""
    if isinstance(value, (ClosedJaxpr, Jaxpr)):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _programs(v)


def _jaxpr(p) -> Jaxpr:
    return p.jaxpr if isinstance(p, ClosedJaxpr) else p


def holds_callback(jaxpr: Jaxpr) -> bool:
    """Whether ``jaxpr`` holds a host-callback equation, at any depth."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.host_callback or _eqn_nests_callback(eqn):
            return True
    return False


def _eqn_nests_callback(eqn) -> bool:
    return any(holds_callback(_jaxpr(p)) for v in eqn.params.values() for p in _programs(v))


def _nbytes(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * aval.dtype.itemsize


class _Plan:
    """One program as steps (device pieces, callbacks, host-driven control flow), each
    compiled when the plan is made; ``run(vals)`` runs them in order on native values
    (PjrtBuffers on ``device``, or NumPy constants) and returns the outputs."""

    def __init__(self, top: "PiecewiseExecutable", closed: ClosedJaxpr):
        jaxpr = closed.jaxpr
        self.top = top
        self.invars = list(jaxpr.invars)
        self.outvars = list(jaxpr.outvars)
        self.in_avals = [v.aval for v in jaxpr.invars]
        self.out_avals = [v.aval for v in jaxpr.outvars]
        self.consts = dict(zip(jaxpr.constvars, closed.consts))
        groups, run = [], []
        for eqn in jaxpr.eqns:
            if eqn.primitive.host_callback:
                kind = "callback"
            elif _eqn_nests_callback(eqn):
                kind = "control"
            else:
                run.append(eqn)
                continue
            if run:
                groups.append(("device", run))
                run = []
            groups.append((kind, eqn))
        if run:
            groups.append(("device", run))
        # what each step must leave for the steps after it (and the outputs)
        needed = set(v for v in self.outvars if not isinstance(v, Literal))
        after = []
        for kind, payload in reversed(groups):
            after.append(set(needed))
            for eqn in (payload if kind == "device" else [payload]):
                needed.update(v for v in eqn.invars if not isinstance(v, Literal))
        after.reverse()
        self.steps, self.drop = [], []
        carried = 0
        for (kind, payload), keep in zip(groups, after):
            if kind == "device":
                step = _Segment(self, payload, keep)
                if not step.outvars:     # nothing it computes is used: nothing to run
                    continue
                carried += sum(_nbytes(v.aval) for v in step.outvars)
            elif kind == "callback":
                step = _Callback(self, payload)
            else:
                step = _control(self, payload)
            self.steps.append(step)
            # values no later step reads: dropped once this step has run
            self.drop.append([v for v in step.reads() + step.writes() if v not in keep])
        self.temp_bytes = carried + max([s.temp_bytes for s in self.steps] + [0])

    # ---- values ---------------------------------------------------------------------------
    def read(self, v, env):
        """The native value of ``v``: a Literal or a constant as a NumPy array."""
        if isinstance(v, Literal):
            return np.asarray(v.val, v.aval.dtype)
        if v in env:
            return env[v]
        return np.asarray(self.consts[v], v.aval.dtype)

    def run(self, vals) -> list:
        env = dict(zip(self.invars, vals))
        for step, drop in zip(self.steps, self.drop):
            step.run(env)
            for v in drop:
                env.pop(v, None)
        return [self.read(v, env) for v in self.outvars]

    def text(self) -> str:
        return "\n".join(s.text() for s in self.steps)


class _Segment:
    """A run of callback-free equations: one device program, compiled once."""

    def __init__(self, plan: _Plan, eqns, keep):
        defined, inputs, consts = set(), [], []
        for eqn in eqns:
            for v in eqn.invars:
                if isinstance(v, Literal) or v in defined or v in inputs or v in consts:
                    continue
                (consts if v in plan.consts else inputs).append(v)
            defined.update(eqn.outvars)
        self.plan = plan
        self.inputs = inputs
        self.outvars = [v for eqn in eqns for v in eqn.outvars if v in keep]
        if not self.outvars:
            return
        top = plan.top
        self.number = top.count()
        closed = ClosedJaxpr(Jaxpr(consts, inputs, eqns, self.outvars),
                             [plan.consts[v] for v in consts])
        name = f"{top.name}_piece{self.number}"
        self.ex = top.executable(lower_module(closed, name=name, platform=top.platform), name)
        self.temp_bytes = self.ex.temp_bytes
        prims = sorted({e.primitive.name for e in eqns})
        shown = ", ".join(prims[:6]) + (", ..." if len(prims) > 6 else "")
        self.what = f"{len(eqns)} equation{'s' if len(eqns) > 1 else ''} ({shown})"

    def reads(self):
        return self.inputs

    def writes(self):
        return self.outvars

    def run(self, env) -> None:
        read = self.plan.read
        outs = self.ex.run([read(v, env) for v in self.inputs])
        env.update(zip(self.outvars, outs))

    def text(self) -> str:
        return (f"// piece {self.number}: device program of {self.what}, compiled by XLA\n"
                f"{self.ex.as_text().rstrip()}")


class _Callback:
    """A host-callback equation: operands read to the host, the primitive's
    implementation (the user's function) called, results put on the device."""

    temp_bytes = 0

    def __init__(self, plan: _Plan, eqn):
        self.plan, self.eqn = plan, eqn
        self.number = plan.top.count()

    def reads(self):
        return [v for v in self.eqn.invars if not isinstance(v, Literal)]

    def writes(self):
        return list(self.eqn.outvars)

    def run(self, env) -> None:
        eqn, top = self.eqn, self.plan.top
        args = [top.to_host(self.plan.read(v, env), v.aval) for v in eqn.invars]
        outs = eqn.primitive.impl(*args, **eqn.params)
        env.update((v, top.to_device(o, v.aval)) for v, o in zip(eqn.outvars, outs))

    def text(self) -> str:
        where = f" at {self.eqn.source}" if self.eqn.source else ""
        return (f"// piece {self.number}: host callback {self.eqn.primitive.name}{where} "
                f"(operands read from the device, results put back)")


def _control(plan: _Plan, eqn):
    # the primitives themselves, not their names (facts live on primitives): checkpoint
    # runs its ``jaxpr`` on all its operands like a call
    from ...primitives.control import remat_jvp_p, remat_p
    from ...primitives.control_flow import cond_p, scan_p, while_p
    prim = eqn.primitive
    name = prim.name
    if prim is cond_p:
        return _Cond(plan, eqn)
    if prim is while_p:
        return _While(plan, eqn)
    if prim is scan_p:
        return _Scan(plan, eqn)
    if prim.kind == "call" or prim is remat_p:
        return _Call(plan, eqn)
    if prim is remat_jvp_p:
        return _CheckpointJvp(plan, eqn)
    where = f" (at {eqn.source})" if eqn.source else ""
    raise NotImplementedError(
        f"primitive '{name}' holds a host callback (jax.debug.print, pure_callback or "
        f"io_callback) in its program{where}, which platform {plan.top.platform} cannot run: "
        f"a program compiled by XLA runs in pieces around callbacks only through cond, "
        f"while, scan and calls; move the callback out of the {name}, or run the program "
        f"on the 'cpu' platform")


class _Control:
    """A control-flow equation whose body holds a callback, driven from the host."""

    def __init__(self, plan: _Plan, eqn):
        self.plan, self.eqn = plan, eqn
        self.number = plan.top.count()

    def reads(self):
        return [v for v in self.eqn.invars if not isinstance(v, Literal)]

    def writes(self):
        return list(self.eqn.outvars)

    def run(self, env) -> None:
        read = self.plan.read
        outs = self.step([read(v, env) for v in self.eqn.invars], **self.eqn.params)
        env.update(zip(self.eqn.outvars, outs))

    def head(self, what: str) -> str:
        where = f" at {self.eqn.source}" if self.eqn.source else ""
        return f"// piece {self.number}: {self.eqn.primitive.name}{where}, {what}"

    @staticmethod
    def sub(label: str, plan: _Plan) -> str:
        body = plan.text() or "// (nothing to run)"
        return f"//   {label}:\n" + "\n".join("  " + ln if ln else ln
                                           for ln in body.split("\n"))


class _Call(_Control):
    def __init__(self, plan, eqn):
        super().__init__(plan, eqn)
        self.body = _Plan(plan.top, eqn.params["jaxpr"])
        self.temp_bytes = self.body.temp_bytes

    def step(self, vals, **params):
        return self.body.run(vals)

    def text(self):
        return self.head("its program run in pieces") + "\n" + self.sub("program", self.body)


class _CheckpointJvp(_Control):
    """Forward-mode derivative of a checkpointed program: its JVP program run in pieces,
    the tangent outputs kept (as the primitive's implementation computes them)."""

    def __init__(self, plan, eqn):
        super().__init__(plan, eqn)
        from ...core.ad import jvp_jaxpr
        jaxpr = eqn.params["jaxpr"]
        jclosed, _ = jvp_jaxpr(jaxpr, [True] * len(jaxpr.in_avals), instantiate_out=True)
        self.primal_outs = len(jaxpr.out_avals)
        self.body = _Plan(plan.top, jclosed)
        self.temp_bytes = self.body.temp_bytes

    def step(self, vals, **params):
        return self.body.run(vals)[self.primal_outs:]

    def text(self):
        return self.head("its JVP program run in pieces") + "\n" + \
            self.sub("program", self.body)


class _Cond(_Control):
    def __init__(self, plan, eqn):
        super().__init__(plan, eqn)
        self.branches = [_Plan(plan.top, br) for br in eqn.params["branches"]]
        self.temp_bytes = max(b.temp_bytes for b in self.branches)

    def step(self, vals, branches):
        index = int(self.plan.top.to_host(vals[0], self.eqn.invars[0].aval))
        k = min(max(index, 0), len(self.branches) - 1)
        return self.branches[k].run(vals[1:])

    def text(self):
        return "\n".join([self.head("the branch index read to the host, the branch taken run "
                                    "in pieces")] +
                         [self.sub(f"branch {k}", b) for k, b in enumerate(self.branches)])


class _While(_Control):
    def __init__(self, plan, eqn):
        super().__init__(plan, eqn)
        self.cond = _Plan(plan.top, eqn.params["cond_jaxpr"])
        self.body = _Plan(plan.top, eqn.params["body_jaxpr"])
        self.temp_bytes = max(self.cond.temp_bytes, self.body.temp_bytes)

    def step(self, vals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
        cc = vals[:cond_nconsts]
        bc = vals[cond_nconsts:cond_nconsts + body_nconsts]
        carry = vals[cond_nconsts + body_nconsts:]
        to_host = self.plan.top.to_host
        pred_aval = cond_jaxpr.out_avals[0]
        while bool(to_host(self.cond.run(cc + carry)[0], pred_aval)):
            carry = self.body.run(bc + carry)
        return carry

    def text(self):
        return "\n".join([self.head("stepped from the host (its predicate read to the host "
                                    "each iteration)"),
                          self.sub("cond", self.cond), self.sub("body", self.body)])


class _Scan(_Control):
    def __init__(self, plan, eqn):
        super().__init__(plan, eqn)
        p = eqn.params
        top = plan.top
        self.body = _Plan(top, p["jaxpr"])
        n_fixed = p["num_consts"] + p["num_carry"]
        x_avals = [v.aval for v in eqn.invars[n_fixed:]]
        self.y_avals = [v.aval for v in eqn.outvars[p["num_carry"]:]]
        self.slicer = self.updater = None
        self.temp_bytes = self.body.temp_bytes
        if p["length"] and x_avals:
            name = f"{top.name}_piece{self.number}_slices"
            self.slicer = top.executable(lower_function(
                _slices, x_avals + [_I64], name=name, platform=top.platform), name)
        if p["length"] and self.y_avals:
            body_y = [ShapedArray(a.shape[1:], a.dtype) for a in self.y_avals]
            name = f"{top.name}_piece{self.number}_stack"
            self.updater = top.executable(lower_function(
                _update, self.y_avals + body_y + [_I64], name=name, platform=top.platform),
                name)

    def step(self, vals, jaxpr, num_consts, num_carry, length, reverse, unroll):
        top = self.plan.top
        consts = vals[:num_consts]
        carry = vals[num_consts:num_consts + num_carry]
        xs = vals[num_consts + num_carry:]
        ys = [top.to_device(np.zeros(a.shape, a.dtype), a, counted=False)
              for a in self.y_avals]
        donate = tuple(range(len(ys)))
        for step in range(length):
            i = np.int64(length - 1 - step if reverse else step)
            slices = self.slicer.run(xs + [i]) if xs else []
            outs = self.body.run(consts + carry + slices)
            carry = outs[:num_carry]
            if ys:      # written in place: the stacked results are donated to the helper
                ys = self.updater.run(ys + outs[num_carry:] + [i], donate)
        return carry + ys

    def text(self):
        return "\n".join([self.head(f"stepped from the host ({self.eqn.params['length']} "
                                    f"steps)"), self.sub("body", self.body)])


def _slices(ctx, *args):
    """Slice ``args[-1]`` (an int64 index) of each of ``args[:-1]`` along its first axis."""
    k, zero = args[-1], ctx.constant(0, np.int64)
    out = []
    for x in args[:-1]:
        shape = x.aval.shape
        s = ctx.op("stablehlo.dynamic_slice", [x, k] + [zero] * (len(shape) - 1),
                   ctx.aval((1,) + shape[1:], x.aval.dtype),
                   {"slice_sizes": ctx.i64s((1,) + shape[1:])})
        out.append(ctx.reshape(s, shape[1:]))
    return out


def _update(ctx, *args):
    """The stacked ``ys`` (first half of ``args[:-1]``) with their slice ``args[-1]``
    replaced by the step's outputs (second half)."""
    k, zero = args[-1], ctx.constant(0, np.int64)
    n = (len(args) - 1) // 2
    out = []
    for y, o in zip(args[:n], args[n:2 * n]):
        upd = ctx.reshape(o, (1,) + o.aval.shape)
        out.append(ctx.op("stablehlo.dynamic_update_slice", [y, upd, k] + [zero] * o.aval.ndim,
                          y.aval))
    return out


class PiecewiseExecutable:
    """A program holding host callbacks, compiled for one device of a PJRT platform as
    pieces (see the module docstring): the executable contract of ``PjrtExecutable``.

    Attributes: ``in_avals``, ``out_avals``, ``temp_bytes`` (the largest piece's
    temporaries plus every value carried between pieces: an upper bound), ``backend``
    (the platform name), ``name``, ``device``, ``pieces`` (how many steps, nested bodies
    included).  ``run(vals, donated=None)`` runs the pieces on native values and returns
    one PjrtBuffer per output (donated arguments are not aliased).  ``as_text()`` says how
    the program runs and shows each device piece's StableHLO; ``optimized_hlo_text()`` and
    ``cost_analysis()`` gather the device pieces' (each loop body counted once).

    Raises NotImplementedError (when made) for a callback inside a primitive it cannot
    drive from the host, and whatever lowering or compiling a piece raises.
    """

    def __init__(self, backend, closed: ClosedJaxpr, device, name: str):
        from .backend import PjrtExecutable
        self._make = PjrtExecutable
        self._backend = backend
        self.backend = self.platform = backend.platform
        self.device = device
        self.name = name
        self.pieces = 0
        self._executables = []
        self._plan = _Plan(self, closed)
        self.in_avals = list(self._plan.in_avals)
        self.out_avals = list(self._plan.out_avals)
        self.temp_bytes = self._plan.temp_bytes

    # ---- what the plan's steps use ---------------------------------------------------------
    def count(self) -> int:
        self.pieces += 1
        return self.pieces

    def executable(self, lowered, name: str):
        ex = self._make(self._backend, lowered, self.device, name)
        self._executables.append(ex)
        return ex

    def to_host(self, v, aval) -> np.ndarray:
        """``v``'s value on the host; reading a device buffer is a counted transfer."""
        if type(v) is PjrtBuffer:
            _transfer.count("device_to_host", False, _nbytes(aval), self.device, "host", aval)
            return self._backend.to_host(v, self.device)
        return np.asarray(v, aval.dtype)

    def to_device(self, value, aval, counted: bool = True) -> PjrtBuffer:
        """A device buffer holding host ``value`` as ``aval``'s dtype (a counted transfer
        unless it is the program's own allocation)."""
        a = np.asarray(value, aval.dtype, order="C")     # (0-d stays 0-d)
        if counted:
            _transfer.count("host_to_device", False, a.nbytes, "host", self.device, aval)
        return self._backend.from_host(a, self.device)

    # ---- the executable contract -----------------------------------------------------------
    def run(self, vals, donated=None) -> list:
        outs = self._plan.run(list(vals))
        return [o if type(o) is PjrtBuffer else self.to_device(o, a, counted=False)
                for o, a in zip(outs, self.out_avals)]

    def as_text(self) -> str:
        cbs = sorted({e.primitive.name for e in _callback_eqns(self._plan)})
        head = (f"// {self.name} holds host callbacks ({', '.join(cbs)}): on platform "
                f"{self.platform} it runs in {self.pieces} pieces; each device piece is "
                f"compiled by XLA, each callback runs on the host between them, its "
                f"operands read from the device and its results put back")
        return head + "\n" + self._plan.text() + "\n"

    def optimized_hlo_text(self) -> str | None:
        texts = [t for t in (ex.optimized_hlo_text() for ex in self._executables) if t]
        return "\n".join(texts) if texts else None

    def cost_analysis(self) -> dict | None:
        total: dict = {}
        for ex in self._executables:
            for k, v in (ex.cost_analysis() or {}).items():
                if isinstance(v, (int, float)):
                    total[k] = total.get(k, 0) + v
        return total or None

    def memory_analysis(self) -> dict | None:
        return None


def _callback_eqns(plan: _Plan):
    for s in plan.steps:
        if isinstance(s, _Callback):
            yield s.eqn
        for sub in ("body", "cond"):
            p = getattr(s, sub, None)
            if isinstance(p, _Plan):
                yield from _callback_eqns(p)
        for p in getattr(s, "branches", ()):
            yield from _callback_eqns(p)


def lowered_text(closed: ClosedJaxpr, *, name: str, platform: str) -> str:
    """What ``lower().as_text()`` can show for ``closed`` on a PJRT ``platform``, nothing
    compiled: its StableHLO module, or for a program holding host callbacks the note of
    ``PiecewiseExecutable.as_text`` with each device piece's StableHLO.  Raises as
    lowering does (NotImplementedError for a primitive without a rule, or a callback
    inside a primitive the pieces cannot drive)."""
    if not holds_callback(closed.jaxpr):
        return lower_module(closed, name=name, platform=platform).text
    return _Lowered(closed, name, platform).as_text()


class _Lowered(PiecewiseExecutable):
    """The pieces of a program lowered, not compiled (``lowered_text``)."""

    def __init__(self, closed, name, platform):
        self._backend = self.device = None
        self.backend = self.platform = platform
        self.name = name
        self.pieces = 0
        self._executables = []
        self._plan = _Plan(self, closed)

    def executable(self, lowered, name):
        return _LoweredPiece(lowered)


class _LoweredPiece:
    temp_bytes = 0

    def __init__(self, lowered):
        self.text = lowered.text

    def as_text(self) -> str:
        return self.text
