"""Allocations that cannot be satisfied (issue 13, item 2): the operation that asks for the
memory raises ``jaxlite.errors.JaxRuntimeError`` (a RuntimeError) at the call, eagerly or at
dispatch, naming RESOURCE_EXHAUSTED and the bytes, as real JAX does; the device's
``memory_stats`` never counts those bytes, and the process keeps working afterwards.

Every size here fails at once (tens of TB); nothing big is ever allocated."""
from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.config import config
from jaxlite.errors import JaxRuntimeError

# the heap of earlier modules is frozen for this one, so its gc.collect() calls (byte counts
# must not include dead arrays) scan only what this module made: ~3 s each otherwise, late
# in a full run
pytestmark = pytest.mark.usefixtures("_heap_frozen")

N = 10**13          # elements: 40 TB of float32, more than any host holds

DEV = jaxlite.devices()[0]


def _in_use() -> int:
    gc.collect()
    return DEV.memory_stats()["bytes_in_use"]


def _assert_oom(fn, nbytes):
    """``fn()`` raises JaxRuntimeError at the call (it never reads a result), naming
    RESOURCE_EXHAUSTED and ``nbytes`` (None: any number over a TB); the device's bytes in
    use are unchanged and a normal operation still gives the right value afterwards."""
    before = _in_use()
    msg = None
    try:
        out = fn()
    except JaxRuntimeError as e:
        assert isinstance(e, RuntimeError)
        assert type(e) is jaxlite.errors.JaxRuntimeError
        msg = str(e)
    else:
        pytest.fail(f"no error at the call; returned {type(out).__name__} "
                    f"{getattr(out, 'shape', '')}")
    assert "RESOURCE_EXHAUSTED" in msg, msg
    if nbytes is None:     # some number of bytes, more than any host holds
        m = re.search(r"allocating (\d+) bytes", msg)
        assert m and int(m.group(1)) >= 10**12, msg
    else:
        assert f"allocating {nbytes} bytes" in msg, msg
    assert _in_use() == before
    _assert_still_works()


def _assert_still_works():
    import jax.numpy as rjnp
    got = jnp.arange(5.0) * 2 + 1
    want = rjnp.arange(5.0) * 2 + 1
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _assert_jax_oom(fn):
    """Real JAX raises its JaxRuntimeError (RESOURCE_EXHAUSTED) for the same call (at the
    call, or where the result is read)."""
    import jax
    with pytest.raises(jax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED") as info:
        jax.block_until_ready(fn())
    assert isinstance(info.value, RuntimeError)


@pytest.fixture(params=["async", "inline"])
def dispatch_mode(request):
    """Asynchronous dispatch on (big work goes to the device's worker) or off (all inline)."""
    with config._override("jaxlite_async", request.param == "async"):
        yield request.param


# (name, call on a numpy module, bytes JAX names)
_CREATION = [
    ("zeros", lambda np_: np_.zeros((N,)), 4 * N),
    ("ones", lambda np_: np_.ones((N,)), 4 * N),
    ("empty", lambda np_: np_.empty((N,)), 4 * N),
    ("full", lambda np_: np_.full((N,), 3.0), 4 * N),
    ("full_int8", lambda np_: np_.full((N,), 7, np_.int8), N),
    ("zeros_2d_int32", lambda np_: np_.zeros((10**7, 10**6), np_.int32), 4 * N),
    ("arange_int", lambda np_: np_.arange(N), 4 * N),
    ("arange_float", lambda np_: np_.arange(float(N)), 4 * N),
    ("zeros_like_shape", lambda np_: np_.zeros_like(np_.zeros(3), shape=(N,)), 4 * N),
]


@pytest.mark.parametrize("name,call,nbytes", _CREATION, ids=[c[0] for c in _CREATION])
def test_creation_raises_at_the_call(name, call, nbytes, dispatch_mode):
    import jax.numpy as rjnp
    _assert_jax_oom(lambda: call(rjnp))
    _assert_oom(lambda: call(jnp), nbytes)


def test_broadcast_tile_and_elementwise_results_raise_at_the_call(dispatch_mode):
    import jax.numpy as rjnp
    x = jnp.zeros((10**6,))
    col, row = x[:, None], jnp.zeros((10**7,))[None, :]
    rx = rjnp.zeros((10**6,))
    rcol, rrow = rx[:, None], rjnp.zeros((10**7,))[None, :]
    cases = [
        (lambda: jnp.broadcast_to(x, (10**7, 10**6)),
         lambda: rjnp.broadcast_to(rx, (10**7, 10**6))),
        (lambda: jnp.tile(x, 10**7), lambda: rjnp.tile(rx, 10**7)),
        # the elementwise result is 10**6 x 10**7 float32 (JAX raises where it is read)
        (lambda: col + row, lambda: rcol + rrow),
        (lambda: jnp.multiply(col, row), lambda: rjnp.multiply(rcol, rrow)),
        (lambda: jnp.outer(x, row[0]), lambda: rjnp.outer(rx, rrow[0])),
    ]
    for ours, theirs in cases:
        _assert_jax_oom(theirs)
        _assert_oom(ours, 4 * N)
    # a reshape is no allocation of its own; a normal broadcast still works
    y = jnp.zeros((10,)).reshape(2, 5) + jnp.broadcast_to(jnp.arange(5.0), (2, 5))
    np.testing.assert_array_equal(np.asarray(y), np.broadcast_to(np.arange(5.0), (2, 5)))


def test_async_dispatched_op_raises_at_dispatch_not_at_read():
    # the eager add is big work: with asynchronous dispatch on, it would go to the device's
    # worker (and fail there, surfacing only where it is read); it must fail at the call
    from jaxlite.runtime import dispatch
    col, row = jnp.zeros((10**6, 1)), jnp.zeros((1, 10**7))
    with config._override("jaxlite_async", True):
        assert 4 * N >= dispatch.min_cost()
        _assert_oom(lambda: col + row, 4 * N)
        _assert_oom(lambda: jnp.add(col, row), 4 * N)
        _assert_oom(lambda: col * 2.0 + row, 4 * N)


def test_failed_allocation_on_the_worker_surfaces_as_jax_runtime_error():
    # an allocation that fails while a dispatched job runs (here a job that asks NumPy for
    # 80 TB) surfaces where the result is read, as JaxRuntimeError, and counts nothing
    from jaxlite.core.array import ArrayImpl
    from jaxlite.core.avals import ShapedArray
    from jaxlite.runtime import dispatch
    before = _in_use()
    (pb,) = dispatch.new_job(DEV, 1, "probe")
    arr = ArrayImpl(pb, ShapedArray((4,), np.dtype(np.float32)), False)
    dispatch.submit(DEV, lambda vals: [np.empty(N, np.float64)], [], "probe", [arr])
    with pytest.raises(JaxRuntimeError, match="RESOURCE_EXHAUSTED") as info:
        arr.block_until_ready()
    assert str(8 * N) in str(info.value) and "probe" in str(info.value)
    del info, arr, pb
    assert _in_use() == before
    _assert_still_works()


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_jit_raises_at_the_call(backend, dispatch_mode):
    import jax
    import jax.numpy as rjnp
    x, y = jnp.zeros((10**6,)), jnp.zeros((10**7,))
    rx, ry = rjnp.zeros((10**6,)), rjnp.zeros((10**7,))
    programs = [
        (lambda: jnp.zeros((N,)), lambda: rjnp.zeros((N,)), ()),
        (lambda a: a + jnp.zeros((N,)), lambda a: a + rjnp.zeros((N,)), (1.0,)),
        (lambda a, b: a[:, None] + b[None, :], lambda a, b: a[:, None] + b[None, :], (x, y)),
        (lambda a: jnp.broadcast_to(a, (10**7, 10**6)) * 2,
         lambda a: rjnp.broadcast_to(a, (10**7, 10**6)) * 2, (x,)),
    ]
    with config._override("jaxlite_backend", backend), \
            config._override("jaxlite_tiered", False):
        for ours, theirs, args in programs:
            rargs = tuple(rx if a is x else ry if a is y else a for a in args)
            _assert_jax_oom(lambda: jax.jit(theirs)(*rargs))
            f = jaxlite.jit(ours)
            _assert_oom(lambda: f(*args), 4 * N)     # the first call (compiles)
            _assert_oom(lambda: f(*args), 4 * N)     # the cached call's fast path
        # the jitted process keeps working
        g = jaxlite.jit(lambda a: a * 2 + 1)
        np.testing.assert_array_equal(np.asarray(g(jnp.arange(4.0))),
                                      np.asarray(jax.jit(lambda a: a * 2 + 1)(
                                          rjnp.arange(4.0))))


def test_jit_temporaries_that_cannot_fit_raise_at_the_call(dispatch_mode):
    # an outer product as a temporary of a reduction (3.6 TB of float32) in the
    # interpreter's plan: the program fails at the call, its temporaries never counted
    x = jnp.ones(10**6)
    with config._override("jaxlite_backend", "interpreter"):
        f = jaxlite.jit(lambda v: (v[:, None] * jnp.ones((1, 10**6))).sum())
        DEV.reset_peak_memory()
        _assert_oom(lambda: f(x), None)
    stats = DEV.memory_stats()
    assert stats["peak_bytes_in_use"] < 10**9 and stats["largest_alloc_size"] < 10**9


def test_device_put_of_a_normal_array_is_fine_and_counted():
    import jax
    before = _in_use()
    a = jaxlite.device_put(np.ones(10, np.float32))
    assert _in_use() == before + 40
    np.testing.assert_array_equal(np.asarray(a), np.asarray(jax.device_put(
        np.ones(10, np.float32))))
    del a
    assert _in_use() == before


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float64, np.int64])
@pytest.mark.parametrize("how", ["device_put", "asarray", "array"])
def test_transfer_of_a_huge_numpy_view_raises_like_jax(dtype, how):
    # a broadcast NumPy view of N elements: when its dtype is the array's, JAX's copy onto
    # the device fails (JaxRuntimeError); a 64-bit view (x64 off) is cast on the host first,
    # and NumPy's MemoryError is raised there.  Either way nothing is counted.
    import jax
    import jax.numpy as rjnp
    view = np.broadcast_to(np.zeros(1, dtype), (N,))
    theirs = {"device_put": jax.device_put, "asarray": rjnp.asarray, "array": rjnp.array}[how]
    ours = {"device_put": jaxlite.device_put, "asarray": jnp.asarray, "array": jnp.array}[how]
    with pytest.raises(MemoryError if np.dtype(dtype).itemsize == 8 else
                       jax.errors.JaxRuntimeError) as want:
        theirs(view)
    if isinstance(want.value, jax.errors.JaxRuntimeError):
        _assert_oom(lambda: ours(view), N * np.dtype(dtype).itemsize)
    else:
        before = _in_use()
        with pytest.raises(MemoryError):
            ours(view)
        assert _in_use() == before
        _assert_still_works()
