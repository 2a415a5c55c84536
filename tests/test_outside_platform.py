"""A platform defined entirely in this file, with nothing of it under src/.

``Accel`` is a Backend (jaxlite/runtime/backend.py) whose buffers are its own wrapper type
(``Mem``), which counts every allocation, copy and free, and runs each primitive by
unwrapping its operands and calling the primitive's NumPy reference implementation; its
programs run on the interpreter executor behind the same wrapping.  Registering it is all
it takes: the tests below run the whole primitive table eagerly on it (bit for bit as on
the CPU), ``jit``, ``grad`` and ``vmap`` on its arrays, ``device_put`` between it and the
CPU devices with exact transfer counts and ``memory_stats``, and the transfer guard.
"""
from __future__ import annotations

import collections
import gc

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.backends import get_backend
from jaxlite.runtime import backend as rb
from jaxlite.runtime.device import Device

from test_rules import CASES, CONTROL_CASES

# the heap of earlier modules is frozen for this one, so its gc.collect() calls (byte counts
# must not include dead arrays) scan only what this module made: ~3 s each otherwise, late
# in a full run
pytestmark = pytest.mark.usefixtures("_heap_frozen")


class Mem:
    """The platform's buffer: host storage inside a type no other code knows."""

    __slots__ = ("array", "device_id", "freed")

    def __init__(self, array, device_id):
        self.array = array
        self.device_id = device_id
        self.freed = False


class Accel(rb.Backend):
    platform = "testaccel"
    host_memory = False
    priority = -5            # registering it must not change the default platform
    bytes_limit = 1 << 30

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def make_devices(self):
        return [Device(i, self, device_kind="test accelerator") for i in range(2)]

    # allocator
    def _new(self, array, device):
        m = Mem(np.asarray(array, order="C"), device.id)
        self.counts["alloc"] += 1
        self.counts["alloc_bytes"] += m.array.nbytes
        return m

    def nbytes(self, m):
        return m.array.nbytes

    def from_host(self, array, device):
        self.counts["from_host"] += 1
        return self._new(np.array(array, copy=True), device)

    def to_host(self, m, device):
        assert type(m) is Mem and not m.freed and m.device_id == device.id
        self.counts["to_host"] += 1
        return m.array

    def copy(self, m, src, dst):
        assert not m.freed and m.device_id == src.id
        self.counts["copy"] += 1
        return self._new(m.array.copy(), dst)

    def allocate(self, shape, dtype, device):
        return self._new(np.empty(shape, dtype), device)

    def free(self, m, device):
        assert not m.freed, "freed twice"
        m.freed = True
        self.counts["free"] += 1
        self.counts["free_bytes"] += m.array.nbytes

    # execution
    def unwrap(self, v, device):
        if type(v) is Mem:
            assert not v.freed and v.device_id == device.id, "operand not on the device"
            return v.array
        # constants of the operation only: never another platform's storage
        assert isinstance(v, (np.ndarray, np.generic)) and (
            np.ndim(v) == 0 or type(v) is not np.ndarray), type(v)
        return v

    def result(self, o, aval, device):
        return self._new(np.array(np.asarray(o, dtype=aval.dtype), copy=True), device)

    def execute(self, prim, vals, params, device, out_aval):
        self.counts["execute"] += 1
        out = prim.impl(*[self.unwrap(v, device) for v in vals], **params)
        if prim.multiple_results:
            return [self.result(o, a, device) for o, a in zip(out, out_aval)]
        return self.result(out, out_aval, device)

    def compile(self, program, devices, name):
        self.counts["compile"] += 1
        return AccelExecutable(self, get_backend("interpreter")(program, name), devices[0])


class AccelExecutable:
    backend = "testaccel"

    def __init__(self, platform, inner, device):
        self.platform, self.inner, self.device = platform, inner, device
        self.in_avals, self.out_avals = inner.in_avals, inner.out_avals
        self.temp_bytes = inner.temp_bytes

    def run(self, vals, donated=None):
        outs = self.inner.run([self.platform.unwrap(v, self.device) for v in vals])
        return [self.platform.result(o, a, self.device) for o, a in zip(outs, self.out_avals)]

    def as_text(self):
        return "# test accelerator program\n" + self.inner.as_text()


@pytest.fixture(scope="module")
def accel():
    b = rb.register(Accel())
    try:
        yield b
    finally:
        rb.unregister("testaccel")


@pytest.fixture
def dev(accel):
    gc.collect()
    return accel.devices()[0]


def used(d):
    return d.memory_stats()["bytes_in_use"]


# ---- devices come from the registry ------------------------------------------------------------

def test_devices_and_default(accel):
    devs = jaxlite.devices("testaccel")
    assert [d.id for d in devs] == [0, 1] and devs == accel.devices()
    assert all(d.platform == "testaccel" and d.backend is accel for d in devs)
    assert str(devs[1]) == "testaccel:1" and devs[0].device_kind == "test accelerator"
    assert jaxlite.local_devices(backend="testaccel") == devs
    assert jaxlite.device_count("testaccel") == 2
    assert jaxlite.default_backend() == "cpu"          # priority below the CPU's
    assert jaxlite.devices()[0].platform == "cpu"
    # the list also names a PJRT platform that an earlier test of this process started
    with pytest.raises(RuntimeError,
                       match=r"Available backends are \['cpu', (?:'xla_cpu', )?'testaccel'\]"):
        jaxlite.devices("tpu")                         # the message lists what there is
    with pytest.raises(ValueError, match="registered already"):
        rb.register(Accel())
    with pytest.raises(TypeError):
        rb.register(object())


# ---- device_put: transfers and memory exact -------------------------------------------------

def test_device_put_host_to_accel_and_back(accel, dev):
    host = np.arange(1000, dtype=np.float32)
    jaxlite.transfer_stats(reset=True)
    c0, u0 = dict(accel.counts), used(dev)
    x = jaxlite.device_put(host, dev)
    assert type(x._buf.data) is Mem and x.device is dev and x.committed
    assert used(dev) - u0 == 4000
    assert accel.counts["from_host"] - c0.get("from_host", 0) == 1
    assert jaxlite.transfer_stats() == {("host", "testaccel:0"): {"count": 1, "bytes": 4000}}
    got = jaxlite.device_get(x)                        # explicit device-to-host
    np.testing.assert_array_equal(got, host)
    assert jaxlite.transfer_stats()[("testaccel:0", "host")] == {"count": 1, "bytes": 4000}
    assert x.dtype == np.float32 and x.shape == (1000,)
    frees = accel.counts["free"]
    del x
    gc.collect()
    assert used(dev) == u0 and accel.counts["free"] == frees + 1


def test_device_put_between_platforms_and_devices(accel, dev):
    cpu = jaxlite.devices("cpu")[0]
    other = accel.devices()[1]
    host = np.linspace(-1, 1, 256, dtype=np.float32)
    a = jaxlite.device_put(host, cpu)
    jaxlite.transfer_stats(reset=True)
    u_cpu, u0, u1 = used(cpu), used(dev), used(other)
    copies = accel.counts["copy"]
    b = jaxlite.device_put(a, dev)                      # cpu -> accel
    c = jaxlite.device_put(b, other)                    # accel:0 -> accel:1 (its copy)
    d = jaxlite.device_put(c, cpu)                      # accel:1 -> cpu
    assert accel.counts["copy"] == copies + 1
    assert (used(dev) - u0, used(other) - u1, used(cpu) - u_cpu) == (1024, 1024, 1024)
    assert jaxlite.transfer_stats() == {
        ("cpu:0", "testaccel:0"): {"count": 1, "bytes": 1024},
        ("testaccel:0", "testaccel:1"): {"count": 1, "bytes": 1024},
        ("testaccel:1", "cpu:0"): {"count": 1, "bytes": 1024}}
    for arr, where in ((b, dev), (c, other), (d, cpu)):
        assert arr.device is where
    np.testing.assert_array_equal(np.asarray(d), host)
    assert type(d._buf.data) is np.ndarray and type(c._buf.data) is Mem
    same = jaxlite.device_put(b, dev, may_alias=False)  # a copy on one device
    assert same._buf is not b._buf and used(dev) - u0 == 2048
    del b, c, d, same, arr
    gc.collect()
    assert (used(dev), used(other), used(cpu)) == (u0, u1, u_cpu)


def test_every_allocation_is_freed_once(accel, dev):
    gc.collect()
    a0, f0 = accel.counts["alloc"], accel.counts["free"]
    x = jaxlite.device_put(np.ones((8, 8), np.float32), dev)
    y = jnp.tanh(x) * 2 + jnp.ones(8)          # an uncommitted CPU operand: moved, freed
    z = jaxlite.jit(lambda v: (v @ v.T).sum(0))(y)
    np.testing.assert_allclose(np.asarray(z), np.full(8, 8 * 8 * (2 * np.tanh(1.0) + 1) ** 2),
                               rtol=1e-5)
    del x, y, z
    gc.collect()
    assert accel.counts["alloc"] - a0 == accel.counts["free"] - f0 > 0
    assert used(dev) == 0


def test_memory_stats_count_only_live_buffers(accel, dev):
    u0 = used(dev)
    xs = [jaxlite.device_put(np.zeros(n, np.int32), dev) for n in (10, 20, 30)]
    assert used(dev) - u0 == 240
    xs[1].delete()
    assert used(dev) - u0 == 160 and xs[1].is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(xs[1])
    stats = dev.memory_stats()
    assert stats["bytes_limit"] == 1 << 30 and stats["pool_bytes"] == 0
    assert {id(a) for a in jaxlite.live_arrays("testaccel")} >= {id(xs[0]), id(xs[2])}


# ---- the transfer guard -------------------------------------------------------------------------

def test_transfer_guard_applies_to_device_to_host_reads(dev):
    x = jaxlite.device_put(np.arange(4, dtype=np.float32), dev)
    with jaxlite.transfer_guard_device_to_host("disallow"):
        with pytest.raises(RuntimeError, match="Disallowed device-to-host"):
            np.asarray(x)                              # implicit: not host memory
        np.testing.assert_array_equal(jaxlite.device_get(x), [0, 1, 2, 3])   # explicit
    with jaxlite.transfer_guard("disallow_explicit"):
        with pytest.raises(RuntimeError, match="Disallowed"):
            jaxlite.device_get(x)
        with pytest.raises(RuntimeError, match="Disallowed host-to-device"):
            jaxlite.device_put(np.ones(3), dev)


def test_transfer_guard_on_implicit_moves(dev):
    x = jaxlite.device_put(np.arange(4, dtype=np.float32), dev)
    u = jnp.arange(4.0)                                 # uncommitted, on the CPU
    with jaxlite.transfer_guard_device_to_device("disallow"):
        with pytest.raises(RuntimeError, match="Disallowed device-to-device"):
            x + u
    with jaxlite.transfer_guard_host_to_device("disallow"):
        with pytest.raises(RuntimeError, match="Disallowed host-to-device"):
            x + np.ones(4, np.float32)
        assert float((x + 1.0).sum()) == 10.0          # scalars are constants
    jaxlite.transfer_stats(reset=True)
    y = x + u
    assert y.device is dev and jaxlite.transfer_stats() == {
        ("cpu:0", "testaccel:0"): {"count": 1, "bytes": 16}}


def test_a_dtype_the_platform_lacks_is_refused(accel, dev):
    accel.dtypes = frozenset(np.dtype(t) for t in ("float32", "int32", "bool"))
    try:
        x = jaxlite.device_put(np.ones(3, np.float32), dev)
        pos = x > 0
        u8 = jnp.ones(3, jnp.uint8)                  # uncommitted, on the CPU
        gc.collect()
        jaxlite.transfer_stats(reset=True)
        u0 = used(dev)
        with pytest.raises(TypeError, match="cannot hold arrays of dtype float16"):
            jaxlite.device_put(np.ones(3, np.float16), dev)
        with pytest.raises(TypeError, match="testaccel"):
            jaxlite.device_put(jnp.ones(3, jnp.int8), dev)
        with pytest.raises(TypeError, match="uint8"):
            jnp.where(pos, u8, u8)                   # an implicit move of a lacking dtype
        with jaxlite.default_device(dev), pytest.raises(TypeError, match="int8"):
            jnp.asarray(np.ones(3, np.int8))
        gc.collect()
        assert (used(dev), jaxlite.transfer_stats()) == (u0, {})    # nothing half-done
        assert float(jnp.where(pos, x, -x).sum()) == 3.0             # supported dtypes run
    finally:
        accel.dtypes = None


def test_committed_to_two_platforms_is_an_error(dev):
    x = jaxlite.device_put(np.ones(3, np.float32), dev)
    c = jaxlite.device_put(np.ones(3, np.float32), jaxlite.devices("cpu")[0])
    with pytest.raises(ValueError, match="different devices"):
        x + c


# ---- the primitive table, jit, grad, vmap -----------------------------------------------------

def _rows():
    rows = []
    for table in (CASES, CONTROL_CASES):
        for name in sorted(table):
            for k, case in enumerate(table[name]):
                rows.append(pytest.param(case, id=f"{name}-{k}"))
    return rows


def _put(args, d):
    return [jaxlite.device_put(a, d) if isinstance(a, np.ndarray) else a for a in args]


def _same(got, want, exact=True):
    gl, wl = jaxlite.tree_util.tree_leaves(got), jaxlite.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if exact:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        else:
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case", _rows())
def test_primitive_table_eager_and_jit(case, dev):
    want = case.fn(*_put(case.args, None))              # on the CPU
    got = case.fn(*_put(case.args, dev))
    for leaf in jaxlite.tree_util.tree_leaves(got):
        assert leaf.device is dev and type(leaf._buf.data) is Mem
    _same(got, want)                                    # the same reference code: bit for bit
    f = jaxlite.jit(case.fn)
    got_jit = f(*_put(case.args, dev))
    for leaf in jaxlite.tree_util.tree_leaves(got_jit):
        assert leaf.device is dev and type(leaf._buf.data) is Mem
    _same(got_jit, want, exact=False)


@pytest.mark.parametrize("case", _rows())
def test_primitive_table_grad_and_vmap(case, dev):
    args = case.args
    if case.order is not None:
        def loss(*a):
            return sum(jnp.sum(jnp.real(leaf)).astype(jnp.float32)
                       for leaf in jaxlite.tree_util.tree_leaves(case.fn(*a))
                       if jnp.issubdtype(leaf.dtype, jnp.inexact))
        argnums = tuple(i for i, a in enumerate(args)
                        if np.issubdtype(np.asarray(a).dtype, np.inexact))
        def d(where):
            a = _put(args, where)
            if case.rev:
                return jaxlite.grad(loss, argnums)(*a)
            # forward mode only (while; complex inputs): a JVP along ones

            def part(*diff):
                full = list(a)
                for i, v in zip(argnums, diff):
                    full[i] = v
                return loss(*full)
            prim = [a[i] for i in argnums]
            return jaxlite.jvp(part, prim, [jnp.ones_like(p) for p in prim])
        want = d(None)
        # (the gradient of a linear function lands on the default device, as in JAX)
        got = d(dev)
        _same(got, want, exact=False)
    axes = case.axes[0]
    stacked = [a if ax is None else np.stack([a, a[::-1] if np.ndim(a) else a], ax)
               for a, ax in zip(args, axes)]
    want = jaxlite.vmap(case.fn, in_axes=tuple(axes))(*_put(stacked, None))
    got = jaxlite.vmap(case.fn, in_axes=tuple(axes))(*_put(stacked, dev))
    _same(got, want, exact=False)


def test_compiled_program_is_the_platforms(accel, dev):
    f = jaxlite.jit(lambda a, b: jnp.dot(a, b) + jnp.sum(a))
    x = jaxlite.device_put(np.arange(3, dtype=np.float32), dev)
    n = accel.counts["compile"]
    assert float(f(x, x)) == 8.0
    assert float(f(x, x)) == 8.0                         # compiled once per program
    assert accel.counts["compile"] == n + 1
    cx = jnp.arange(3.0)                                # the same program on the CPU
    assert float(f(cx, cx)) == 8.0 and f(cx, cx).device.platform == "cpu"
    assert accel.counts["compile"] == n + 1


def test_cpu_backend_declares_what_it_supports():
    cpu = jaxlite.devices("cpu")[0].backend
    assert cpu.platform == "cpu" and cpu.host_memory and cpu.dtypes is None
    assert cpu.supports_dtype(np.float16) and cpu.supports_dtype(jnp.bfloat16)
    native = cpu.native_primitives
    assert {"add", "exp", "tanh", "reduce_sum", "reduce_max", "dot_general", "scan",
            "while"} <= native
    assert not {"sort", "cholesky", "fft", "pure_callback"} & native
    assert native <= set(jaxlite.core.primitives())      # names of real primitives
    assert cpu.executor in ("cpu", "interpreter")
    with jaxlite.config._override("jaxlite_backend", "interpreter"):
        assert cpu.executor == "interpreter"              # the flag sets the backend's own
        text = jaxlite.jit(lambda v: v + 1).lower(jnp.ones(2)).compile().as_text()
        assert "backend=interpreter" in text


def test_backend_contract_defaults_and_missing_methods(accel, dev):
    class Partial(rb.Backend):
        platform = "partial"

        def make_devices(self):
            return []
    with pytest.raises(TypeError, match="abstract"):
        Partial()                       # from_host, to_host, execute, compile missing
    # copy and allocate default to going through the host (to_host, then from_host)
    src = accel.from_host(np.arange(4, dtype=np.int32), dev)
    n = accel.counts["from_host"]
    c = rb.Backend.copy(accel, src, dev, accel.devices()[1])
    assert c.device_id == 1 and c.array.tolist() == [0, 1, 2, 3] and c.array is not src.array
    m = rb.Backend.allocate(accel, (2, 3), np.float16, dev)
    assert m.array.shape == (2, 3) and m.array.dtype == np.float16
    assert accel.counts["from_host"] == n + 2
