"""Running a compiled program as ``jit`` placed it: ``Backend.run_compiled``'s default.

Layer: core.  ``jit`` (transforms/jit.py) decides where a call runs and hands the program
and a ``Placement`` (runtime/backend.py) to the backend of its devices; a platform runs
the calls it knows how to run (the CPU's single-device calls: backends/cpu/_run.py) and
leaves the others to the default here, registered with the runtime when core is imported
(the runtime imports nothing above it):

- one device of a platform whose memory is not host memory (``run_on_device``);
- a call over a mesh, or with ``out_shardings`` (``run_sharded``): the program partitioned
  for the mesh (the partitioned program for this placement, built once by
  ``placement.spmd`` and kept in ``placement.cache``) or run once on one device when it
  must (an effect, a host callback), each output placed by its sharding; over a mesh
  spanning several processes each process runs the partitioned program on its own shards
  stacked and keeps its shards of the results (the MPI crossing, core/sharded.py).
"""
from __future__ import annotations

import numpy as np

from ..runtime import backend as _backend_contract
from ..runtime import buffer as _buffer
from ..runtime.backend import Placement
from ..sharding import NamedSharding, SingleDeviceSharding
from .array import ArrayImpl
from .eager import backend_operands, host_value, placement as _placement, wrap
from .sharded import ShardedArray, check_shardable, from_global


def run_compiled(backend, compiled, args, placement) -> list:
    """``Backend.run_compiled``'s default: ``run_sharded`` for a call placed over a mesh
    or by ``out_shardings``, else ``run_on_device``."""
    if placement.out_shardings is not None:
        return run_sharded(backend, compiled, args, placement)
    return run_on_device(backend, compiled, args, placement)


def run_device(leaves, what: str, names_fn, device=None) -> tuple:
    """``(device, committed)``: where a computation on ``leaves`` runs: ``device`` (jit's
    ``device=``) committing its outputs, else the committed arguments' device, else the
    default device (core/eager.py ``placement``).

    Raises ValueError for committed arguments on different devices, naming them
    (``names_fn()``: the arguments' names, or None)."""
    if device is not None:          # jit(..., device=d): run on d, commit the results
        return device, True
    try:
        device, committed = _placement(leaves, what)
    except ValueError as e:
        device = e
    if isinstance(device, ValueError):
        # outside the except block, so the second error has the first not chained
        _placement(leaves, what, names_fn())  # raises again, naming the arguments
        raise device
    return device, committed


def run_on_device(backend, compiled, leaves, placement) -> list:
    """``Backend.run_compiled``'s default (runtime/backend.py): jitted program
    ``compiled`` run once on ``placement.device``, a device whose memory is not host
    memory: the arguments as the backend's native values, the backend's executable run
    synchronously, its outputs wrapped.  Donation is accepted and ignored there (the
    arguments stay valid, as JAX does where a platform cannot alias)."""
    device, committed = placement.device, placement.committed
    program = compiled._program
    ex = program.executable_for(device)
    temps = []
    vals = backend_operands(leaves, device, temps)
    try:
        outs = device._run_charged(ex.temp_bytes, lambda: ex.run(vals))
        outs = [wrap(o, a, device, committed, vals) for o, a in zip(outs, ex.out_avals)]
    except MemoryError as e:   # an allocation failed: JAX's RESOURCE_EXHAUSTED
        raise _buffer.memory_error(e, device, placement.what) from e
    finally:
        for t in temps:     # after wrapping: an output that is an operand gets copied
            t.delete()
    if placement.check is not None:     # jax_debug_nans / jax_debug_infs
        placement.check(leaves, outs)
    return outs


def run_sharded(backend, compiled, leaves, placement) -> list:
    """A call placed over a mesh (``placement.mesh``) or by output shardings alone: the
    partitioned program for this placement when there is one (``placement.spmd`` builds
    it, ``placement.cache`` keeps it under ``placement.key``; built as False when the
    program must run once), else the program run once on one device; then each output
    placed by ``placement.out_shardings`` and the donated sharded arguments
    (``placement.delete_after``) deleted."""
    what, mesh = placement.what, placement.mesh
    closed = compiled._lowered.closed_jaxpr
    out_avals = [v.aval for v in closed.jaxpr.outvars]
    targets = placement.out_shardings
    runner = None
    if placement.spmd is not None:
        runner = placement.cache.get(placement.key)
        if runner is None:
            for t, a in zip(targets, out_avals):
                if isinstance(t, NamedSharding):
                    check_shardable(t, a, f"the outputs of {what}")
            runner = placement.cache[placement.key] = placement.spmd() or False
    if placement.across:
        result = _run_across(runner, leaves, out_avals, targets, mesh, what)
        for x in placement.delete_after:
            x.delete()
        return result
    vals = [ArrayImpl(x._buf, x.aval, False) if type(x) is ShardedArray else x
            for x in leaves]
    if runner:
        outs = runner(*vals)
    else:       # no mesh, or a program that must run once (effects, host callbacks)
        device, committed = run_device(vals, what, placement.names, placement.device)
        outs = device.backend.run_compiled(compiled, vals, Placement(
            device, committed, None, what, placement.check))
    result = place_outputs(outs, out_avals, targets, what)
    for x in placement.delete_after:
        x.delete()
    return result


def place_outputs(outs, out_avals, targets, what: str) -> list:
    """Each of ``outs`` placed by its entry of ``targets``: None leaves it where it is, a
    SingleDeviceSharding moves it there (``device_put``), a NamedSharding splits its
    global value into shards.  TypeError for an entry that is no Sharding."""
    result = []
    for o, a, t in zip(outs, out_avals, targets):
        if t is None:
            result.append(o)
        elif isinstance(t, SingleDeviceSharding):
            from .placement import device_put
            result.append(device_put(o, t))
        elif isinstance(t, NamedSharding):
            check_shardable(t, a, f"the outputs of {what}")
            o.block_until_ready()
            result.append(from_global(host_value(o), a, t))
        else:
            raise TypeError(f"{what}: out_shardings entries must be Shardings, got {t!r}")
    return result


def _run_across(runner, leaves, out_avals, targets, mesh, what) -> list:
    """A call of a jitted function on arrays over a mesh spanning several processes:
    each process runs the partitioned program (``runner``, made with ``across``) on its
    own shards stacked (``local_stack``) and keeps its own shards of the results.

    Raises NotImplementedError for a program that must run once (a host callback or an
    effect) or a result placed off the mesh."""
    from .sharded import from_local_stack, local_stack, process_box
    if not runner:
        raise NotImplementedError(f"{what}: a program with a host callback or an effect "
                                  f"(debug.print, io_callback ...) over arrays on a mesh "
                                  f"spanning several processes; it must run once, but "
                                  f"each process holds only its shards.")
    box = process_box(mesh)
    axes = list(mesh.axis_names)
    part = runner._partition
    stacks = [local_stack(x, sp, mesh, box, axes) for x, sp in zip(leaves, part.in_specs)]
    outs = runner(*stacks)
    result = []
    for o, a, t, spec in zip(outs, out_avals, targets, part.out_specs):
        if not (isinstance(t, NamedSharding) and t.mesh == mesh):
            raise NotImplementedError(f"{what}: an output placed by {t} off the mesh of its "
                                      f"arguments, which spans several processes")
        val = o._buf.data if isinstance(o, ArrayImpl) else np.asarray(o)
        result.append(from_local_stack(val, spec, a, t, box, axes))
    return result


_backend_contract.set_default_run(run_compiled)
