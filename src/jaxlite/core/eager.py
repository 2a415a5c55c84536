"""Eager execution: run one primitive now, on the device its operands live on.

Layer: core (uses runtime for placement, transfers and buffers).  Placement follows JAX:
a result goes where its *committed* operands are (committed = placed by ``device_put``
with an explicit device); operands committed to different devices raise ValueError; with
no committed operand the result is uncommitted, on the default device.
"""
from __future__ import annotations

from math import prod as _prod

import numpy as np

from .. import monitoring
from ..config import config
from ..runtime import Buffer, check_transfer, get_default_device
from ..runtime.buffer import (HOST_BYTES, DeviceBuffer, check_dtype, host_view,
                              memory_error, native_operand, out_of_memory)
from ..runtime.buffer import bytes_limit as _bytes_limit, check_fits as _check_fits
from ..runtime import dispatch as _dispatch
from .array import ArrayImpl, deleted_error
from .trace import get_aval


_SCALARS = (bool, int, float, complex)
_ndarray = np.ndarray

# Every eager op and jit call runs its NumPy code with floating-point errors ignored (JAX
# computes inf/nan without warnings).  ``np.errstate(all="ignore")`` costs about a
# microsecond per entry, more than a small op itself, so the hot paths set NumPy's
# error-state context variable directly: the state inside is the caller's state (its
# ``errcall`` and buffer size too) with every error ignored, as errstate would make it.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _fp_state
except ImportError:      # another NumPy layout: use np.errstate itself
    _fp_state = None
_fp_pair = (None, None)  # (the caller's error state, the same with every error ignored)


def fp_ignore_begin():
    """Starts ignoring NumPy floating-point errors (``np.errstate(all="ignore")``);
    returns the token ``fp_ignore_end`` takes."""
    global _fp_pair
    if _fp_state is None:
        es = np.errstate(all="ignore")
        es.__enter__()
        return es
    cur = _fp_state.get()
    pair = _fp_pair
    if pair[0] is not cur:
        with np.errstate(all="ignore"):
            pair = _fp_pair = (cur, _fp_state.get())
    return _fp_state.set(pair[1])


def fp_ignore_end(token) -> None:
    """Restores the error state ``fp_ignore_begin`` replaced."""
    if _fp_state is None:
        token.__exit__(None, None, None)
    else:
        _fp_state.reset(token)


def placement(args, what: str = "computation", names=None):
    """(device, committed) for a computation over ``args``.

    Raises ValueError naming both devices when committed operands disagree.
    """
    committed_dev = None
    for a in args:   # runs on every eager op: no enumerate, no tuples
        if type(a) is ArrayImpl and a._committed:
            d = a._buf.device
            if committed_dev is None:
                committed_dev = d
            elif d is not committed_dev:
                _incompatible_devices(args, what, names)
    if committed_dev is not None:
        return committed_dev, True
    return get_default_device(), False


def _incompatible_devices(args, what, names):
    committed = [(i, a) for i, a in enumerate(args) if type(a) is ArrayImpl and a._committed]
    i0, a0 = committed[0]
    i1, a1 = next((i, a) for i, a in committed if a._buf.device is not a0._buf.device)
    n0 = names[i0] if names else f"argument {i0}"
    n1 = names[i1] if names else f"argument {i1}"
    raise ValueError(
        f"the inputs of {what} live on different devices: {n0} with shape "
        f"{a0.aval.str_short()} is on {a0._buf.device!r}, {n1} with shape "
        f"{a1.aval.str_short()} is on {a1._buf.device!r}. Move one of them with "
        f"jaxlite.device_put(x, device) so that both live on the same device.")


def value_on(x, device):
    """The value of operand ``x`` for a computation on ``device``: a native value of the
    device's backend (a NumPy array for host memory), transferring if needed; a Python or
    NumPy scalar becomes a NumPy scalar of its canonical dtype (a constant of the
    computation, not a transfer).

    Raises RuntimeError if ``x`` was deleted or the transfer guard forbids the move, and
    TypeError for a value that is no array.
    """
    if type(x) is ArrayImpl:
        buf = x._buf
        if buf.data is None:
            raise deleted_error(x.aval)
        if buf.device is not device:
            # an uncommitted operand follows the committed ones: an implicit transfer
            if not device._host_memory:
                check_dtype(device, x.aval.dtype)     # before anything is counted
            check_transfer("device_to_device", False, buf.nbytes, buf.device, device, x.aval)
            return native_operand(buf, device)
        return buf.data
    if type(x) in _SCALARS:
        return get_aval(x).dtype.type(x)   # a NumPy scalar of the canonical dtype
    if isinstance(x, (np.ndarray, np.generic)):
        aval = get_aval(x)
        if x.ndim:  # scalars are constants of the program, not transfers
            if not device._host_memory:
                check_dtype(device, aval.dtype)     # before anything is counted
            check_transfer("host_to_device", False, x.nbytes, "host", device, aval)
            if not device._host_memory:
                return device.backend.from_host(np.asarray(x, aval.dtype, order="C"),
                                                device)
        return np.asarray(x, aval.dtype)
    raise TypeError(f"Value {x!r} of type {type(x).__name__} cannot be used as an array")


def backend_operands(args, device, temps: list) -> list:
    """``value_on`` for every operand of a computation on ``device`` (memory that is not
    host memory).  A value copied onto the device for it (an implicit transfer) is held
    in a counted DeviceBuffer appended to ``temps``: the caller deletes those when the
    computation is done, so the backend frees every temporary it allocated and
    ``memory_stats`` counts them while they live."""
    vals = []
    for a in args:
        v = value_on(a, device)
        if not (type(a) is ArrayImpl and a._buf.device is device) and \
                not isinstance(v, (np.ndarray, np.generic)):
            temps.append(DeviceBuffer(v, device))
        vals.append(v)
    return vals


def wrap(val, aval, device, committed: bool, inputs=()) -> ArrayImpl:
    """Wraps a computation's result as an Array of ``aval`` on ``device``: the one place
    where a result becomes counted storage (every eager operation, fast path, jit call
    and dispatched job ends here).

    ``val`` is a native value of the device's backend.  On host memory it is a NumPy
    array (or scalar): cast when the implementation returned another dtype, and copied
    when it is a view into one of ``inputs``, so that every Array's bytes are its own to
    account.  (An owning array that *is* an input stays shared: buffers are read-only,
    and a donated input returned as the output is the point of donation.)  On another
    platform the value is taken as the backend made it (copied with the backend's
    ``copy`` when it is one of ``inputs``, so that each native value is freed once).
    The bytes are charged to ``device`` by the buffer (runtime/buffer.py).

    Raises AssertionError when a host result has another shape than ``aval`` (a broken
    implementation).
    """
    if type(val) is _ndarray and device._host_memory and val.base is None and \
            val.dtype is aval.dtype and val.shape == aval.shape:
        return ArrayImpl(Buffer(val, device), aval, committed)
    return _wrap_other(val, aval, device, committed, inputs)


def _wrap_other(val, aval, device, committed, inputs) -> ArrayImpl:
    if not device._host_memory:
        for v in inputs:
            if v is val:
                val = device.backend.copy(val, device, device)
                break
        return ArrayImpl(DeviceBuffer(val, device), aval, committed)
    if type(val) is not np.ndarray or val.dtype != aval.dtype:
        val = np.asarray(val, dtype=aval.dtype)
    if val.shape != aval.shape:
        raise AssertionError(f"implementation returned shape {val.shape}, expected {aval}")
    if val.base is not None:
        if val.nbytes > HOST_BYTES > 0:   # a broadcast view no device could hold
            raise out_of_memory(val.nbytes, val.shape, val.dtype, device)
        for v in inputs:     # a view of an operand: copy it
            if type(v) is np.ndarray and np.may_share_memory(val, v):
                val = val.copy()
                break
    return ArrayImpl(Buffer(val, device), aval, committed)


def apply_primitive(prim, args, params):
    """Runs ``prim`` eagerly on concrete operands; returns Array(s).

    This is the path of every eager operation: it is kept to one pass over the operands
    for their abstract values, then placement, values, the implementation and wrapping.
    With ``jax_debug_nans``/``jax_debug_infs`` on, a NaN/infinity in a result raises
    FloatingPointError naming ``prim`` (``check_fp``; the operation then never runs on
    the asynchronous worker, see ``_fp_checks``).
    """
    avals = []
    for a in args:
        if type(a) is ArrayImpl:
            avals.append(a.aval)
        elif type(a) is _ShardedArray:    # operands on several devices
            return _apply_sharded(prim, args, params)
        else:
            avals.append(get_aval(a))
    if _mesh_context.mesh is not None:    # under set_mesh: results live on its mesh
        return _apply_in_mesh(prim, args, params, _mesh_context.mesh)
    out_aval = prim.abstract_eval_cached(tuple(avals), params)
    device, committed = placement(args, prim.name)
    if not device._host_memory:
        return _apply_on_backend(prim, args, params, out_aval, device, committed)
    vals = []
    pending = False
    for a in args:   # value_on, with its common case (an Array on ``device``) inlined
        if type(a) is ArrayImpl:
            buf = a._buf
            if buf.device is device:
                if type(buf) is not Buffer and _dispatch.is_pending(buf) and \
                        _dispatch._min_cost != _INF:
                    vals.append(buf)   # still being computed: passed on as a future
                    pending = True
                    continue
                data = buf.data
                if data is not None:
                    vals.append(data)
                    continue
        vals.append(value_on(a, device))
    if pending and not monitoring._listeners:
        # an operand is still being computed: queue this operation after it (waiting
        # here would stall the caller), whatever its size
        return _apply_async(prim, vals, params, out_aval, device, committed)
    if pending:
        vals = [v.data if type(v) is _dispatch.PendingBuffer else v for v in vals]
    mc = _dispatch._min_cost
    if mc != _INF:     # the work estimate: operand and result bytes (see _eager_cost)
        n = _eager_cost(vals, out_aval, True) if prim.multiple_results else \
            _prod(out_aval.shape) * out_aval.dtype.itemsize
        for v in vals:
            n += v.nbytes
        if n >= mc and not monitoring._listeners:
            return _apply_async(prim, vals, params, out_aval, device, committed)
    if monitoring._listeners:
        monitoring.emit("eager_op", primitive=prim.name, device=str(device),
                        arg_ids=[id(a) for a in args])
    token = fp_ignore_begin()   # JAX computes inf/nan (and casts) without warnings
    try:
        out = prim.impl(*vals, **params)
        if prim.multiple_results:
            res = [wrap(v, a, device, committed, vals) for v, a in zip(out, out_aval)]
            if _fp_checks is not None:
                check_fp(prim.name, res)
            return res
        res = wrap(out, out_aval, device, committed, vals)
        if _fp_checks is not None:     # checked as stored (after the cast to its dtype)
            check_fp(prim.name, (res,))
        return res
    except MemoryError as e:   # an allocation failed: JAX's RESOURCE_EXHAUSTED, nothing counted
        raise memory_error(e, device, prim.name, out_aval) from e
    finally:
        fp_ignore_end(token)


def _apply_on_backend(prim, args, params, out_aval, device, committed):
    """``apply_primitive`` on a device whose memory is not host memory: the operands as
    the backend's native values, the primitive run by the backend's ``execute``, the
    results wrapped (synchronously: no asynchronous dispatch for such devices)."""
    temps = []
    vals = backend_operands(args, device, temps)
    if monitoring._listeners:
        monitoring.emit("eager_op", primitive=prim.name, device=str(device),
                        arg_ids=[id(a) for a in args])
    try:
        out = device.backend.execute(prim, vals, params, device, out_aval)
        if prim.multiple_results:
            res = [wrap(v, a, device, committed, vals) for v, a in zip(out, out_aval)]
        else:
            res = [wrap(out, out_aval, device, committed, vals)]
    except MemoryError as e:   # an allocation failed: JAX's RESOURCE_EXHAUSTED
        raise memory_error(e, device, prim.name, out_aval) from e
    finally:
        for t in temps:     # after wrapping: a result that is an operand gets copied
            t.delete()
    if _fp_checks is not None:
        check_fp(prim.name, res)
    return res if prim.multiple_results else res[0]


_INF = float("inf")

# ---- jax_debug_nans / jax_debug_infs -----------------------------------------------------
# (check NaN, check inf) while either flag is on, else None: one global test per eager op.
# While on, a no-op monitoring listener is registered: every fast path (operators, jit's
# launch, asynchronous dispatch) steps aside for listeners, so each eager operation and
# each jit call runs synchronously on the checked path.
_fp_checks = None


def _checked_path_listener(kind, data):
    return None


def _update_fp_checks(name=None, value=None) -> None:
    global _fp_checks
    if name is not None and name not in ("jax_debug_nans", "jax_debug_infs"):
        return
    nans, infs = bool(config.jax_debug_nans), bool(config.jax_debug_infs)
    _fp_checks = (nans, infs) if nans or infs else None
    on = _checked_path_listener in monitoring._listeners
    if _fp_checks is not None and not on:
        monitoring.register_listener(_checked_path_listener)
    elif _fp_checks is None and on:
        monitoring.unregister_listener(_checked_path_listener)


def fp_problem(values):
    """``"nan"`` or ``"inf"`` when one of ``values`` (Arrays or NumPy values) holds a value
    the enabled checks forbid (NaN first, as JAX), else None."""
    checks = _fp_checks
    if checks is None:
        return None
    nans, infs = checks
    for v in values:
        if type(v) is ArrayImpl:
            if v.aval.dtype.kind not in "fc":
                continue
            buf = v._buf
            v = buf.data
            if v is None:
                continue
            if not buf.device._host_memory:
                # an accelerator's buffer: read to the host for the check, as JAX's
                # checks do (an internal read, not a user's transfer)
                v = buf.device.backend.to_host(v, buf.device)
        if not isinstance(v, (np.ndarray, np.generic)) or v.dtype.kind not in "fc":
            continue
        if nans and np.isnan(v).any():
            return "nan"
        if infs and np.isinf(v).any():
            return "inf"
    return None


def check_fp(name: str, values) -> None:
    """Raises FloatingPointError("invalid value (nan) encountered in NAME"), as JAX does,
    when ``values`` hold a NaN (``jax_debug_nans``) or an infinity (``jax_debug_infs``)."""
    what = fp_problem(values)
    if what is not None:
        raise FloatingPointError(f"invalid value ({what}) encountered in {name}")


def _eager_cost(vals, out_aval, multiple: bool) -> int:
    """An eager operation's estimated work for the inline-or-worker decision
    (runtime/dispatch.py) is the bytes of its operands (NumPy values) and results; this
    is the results' part."""
    n = 0
    for a in (out_aval if multiple else (out_aval,)):
        n += _prod(a.shape) * a.dtype.itemsize
    return n


def _apply_async(prim, vals, params, out_aval, device, committed):
    """``apply_primitive`` on the device's worker: the result Array(s) at once, pending
    until computed (``vals`` may hold PendingBuffers, resolved on the worker)."""
    outs = list(out_aval) if prim.multiple_results else [out_aval]
    bufs = _dispatch.new_job(device, len(outs), prim.name)
    arrays = [ArrayImpl(b, a, committed) for b, a in zip(bufs, outs)]

    def job(vals):
        out = prim.impl(*vals, **params)
        res = out if prim.multiple_results else [out]
        return [wrap(v, a, device, committed, vals)._buf for v, a in zip(res, outs)]
    _dispatch.submit(device, job, vals, prim.name, arrays)
    return arrays if prim.multiple_results else arrays[0]


def run_impl(impl, vals, out_aval, device, committed: bool) -> ArrayImpl:
    """The end of ``apply_primitive`` for callers that already checked the operands
    (fast paths): runs a primitive's implementation ``impl`` on NumPy ``vals`` (no params,
    one result of ``out_aval``) and wraps the result on ``device`` (on the device's worker
    when the work is big, see runtime/dispatch.py)."""
    if _dispatch._min_cost != _INF:
        n = _prod(out_aval.shape) * out_aval.dtype.itemsize
        if n * (1 + len(vals)) >= _dispatch._min_cost:
            bufs = _dispatch.new_job(device, 1, getattr(impl, "__name__", "operation"))
            arr = ArrayImpl(bufs[0], out_aval, committed)

            def job(vals):
                return [wrap(impl(*vals), out_aval, device, committed, vals)._buf]
            _dispatch.submit(device, job, list(vals), bufs[0]._job.what, [arr])
            return arr
    pair = _fp_pair
    if _fp_state is not None and pair[0] is _fp_state.get():   # fp_ignore_begin, inlined
        token = _fp_state.set(pair[1])
    else:
        token = fp_ignore_begin()
    try:
        return wrap(impl(*vals), out_aval, device, committed, vals)   # (wrap may cast)
    except MemoryError as e:   # an allocation failed: JAX's RESOURCE_EXHAUSTED
        raise memory_error(e, device, getattr(impl, "__name__", ""), out_aval) from e
    finally:
        fp_ignore_end(token)


def from_host(val, dtype=None, weak_type: bool = False, device=None, committed: bool = False,
              explicit: bool = False) -> ArrayImpl:
    """A new Array holding a copy of host data ``val`` (a NumPy array, scalar or nested
    list) on ``device`` (default device when None), counted as a host-to-device transfer
    (implicit unless ``explicit``, i.e. unless it comes from ``device_put``).

    Raises TypeError for data JAX cannot hold (strings, objects) and RuntimeError when the
    transfer guard forbids the copy (nothing is created then).
    """
    from .. import dtypes
    from .avals import ShapedArray
    arr = np.asarray(val)
    if dtypes.kind(arr.dtype) in "OUSMmV":
        raise TypeError(f"JAX arrays cannot hold values of dtype {arr.dtype} (got "
                        f"{type(val).__name__}); only numbers and bools are supported.")
    dt = dtypes.canonicalize_dtype(arr.dtype if dtype is None else dtype)
    device = device if device is not None else get_default_device()
    aval = ShapedArray(arr.shape, dt, weak_type)
    if not device._host_memory:
        check_dtype(device, dt)     # before anything is counted
    check_transfer("host_to_device", explicit, arr.size * dt.itemsize, "host", device, aval)
    return ArrayImpl(put_host(arr, dt, device), aval, committed)


def put_host(arr, dtype, device):
    """A new counted buffer on ``device`` holding a copy of host data ``arr`` cast to
    ``dtype`` (floating-point warnings of the cast ignored, as JAX); through the device's
    backend (``from_host``) unless its memory is host memory.  Counts no transfer.
    Raises TypeError for a dtype the device's platform does not hold; when the copy cannot
    be allocated, JaxRuntimeError (RESOURCE_EXHAUSTED), or NumPy's MemoryError when it is
    the cast to ``dtype`` on the host that fails (as JAX)."""
    if not device._host_memory:
        check_dtype(device, dtype)
    try:
        with np.errstate(all="ignore"):
            # another platform's from_host copies the values itself: cast/contiguous only
            data = np.array(arr, dtype=dtype, copy=True, order="C") if device._host_memory \
                else np.asarray(arr, dtype=dtype, order="C")
    except MemoryError as e:
        if np.asarray(arr).dtype != dtype:
            raise    # the cast on the host failed: NumPy's MemoryError, as in JAX
        raise memory_error(e, device, "a transfer to the device") from e   # the device's copy
    if device._host_memory:
        return Buffer(data, device)
    return DeviceBuffer(device.backend.from_host(data, device), device)


def host_value(x):
    """NumPy value of a concrete operand without counting a transfer (for compiled-code
    constants and implementations that need the raw buffer; an array of another platform
    is read through its backend's ``to_host``; a sharded Array as its global value)."""
    if type(x) is ArrayImpl or type(x) is _ShardedArray:
        buf = x._buf
        if buf.data is None:
            raise deleted_error(x.aval)
        return host_view(buf)
    return x


def dispatch_program(program, vals, device, committed: bool, out_avals) -> list:
    """Queues compiled ``program`` on ``device``'s worker (a device of host memory);
    returns its output Arrays at once (each pending until the worker has computed it;
    see runtime/dispatch.py).  Raises JaxRuntimeError (RESOURCE_EXHAUSTED) at once when
    its outputs (``_dispatch.submit``) or its temporaries have more bytes than the device
    can hold."""
    tmp = program.executable.temp_bytes
    if tmp and tmp > _bytes_limit(device) > 0:
        what = f"jit of {getattr(program.executable, 'name', 'a program')}"
        _check_fits(out_avals, device, what)      # the outputs named first
        raise out_of_memory(tmp, device=device, what=f"the temporaries of {what}")
    bufs = _dispatch.new_job(device, len(out_avals), "")
    outs = [ArrayImpl(b, a, committed) for b, a in zip(bufs, out_avals)]

    def job(vals):
        ex = program.executable      # the tier current when the job runs

        def run():
            res = ex.run(vals)
            return [wrap(o, a, device, committed, vals)._buf for o, a in zip(res, out_avals)]
        return device._run_charged(ex.temp_bytes, run)
    _dispatch.submit(device, job, vals, f"jit of {program.executable.name}"
                     if hasattr(program.executable, "name") else "jit program", outs)
    return outs


config._on_change(_update_fp_checks)
_update_fp_checks()

from .sharded import ShardedArray as _ShardedArray, apply_sharded as _apply_sharded  # noqa: E402,I001
from .sharded import apply_in_mesh as _apply_in_mesh, mesh_context as _mesh_context  # noqa: E402
from . import run as _run  # noqa: E402,F401  (registers Backend.run_compiled's default)
