"""The run seam: ``jit`` places a call and hands the compiled program to the backend of its
device (``Backend.run_compiled(compiled, args, placement)``, runtime/backend.py).

A platform defined here overrides ``run_compiled`` and records each call: jit must make
exactly one per call with the placement it decided (device, committed, donated positions,
the call's name), and the base class's default must run the program on one device of a
non-host platform.  On the CPU, its ``run_compiled`` is what a jitted call reaches past the
cached fast path (donation, committed devices), checked against NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.backends import get_backend
from jaxlite.backends.cpu import CpuBackend
from jaxlite.runtime import backend as rb
from jaxlite.runtime.device import Device


class Box:
    """The platform's buffer type."""

    __slots__ = ("a", "nbytes")

    def __init__(self, a):
        self.a, self.nbytes = a, a.nbytes


class Recording(rb.Backend):
    """A non-host platform whose ``run_compiled`` records its placements and then runs the
    base class's default."""

    platform = "seamtest"
    priority = -7            # never the default platform

    def __init__(self):
        super().__init__()
        self.placements = []

    def make_devices(self):
        return [Device(i, self, device_kind="seam test device") for i in range(2)]

    def from_host(self, array, device):
        return Box(np.array(array, copy=True))

    def to_host(self, m, device):
        return m.a

    def execute(self, prim, vals, params, device, out_aval):
        out = prim.impl(*[v.a if isinstance(v, Box) else v for v in vals], **params)
        if isinstance(out_aval, (list, tuple)):
            return [Box(np.asarray(o, a.dtype)) for o, a in zip(out, out_aval)]
        return Box(np.asarray(out, out_aval.dtype))

    def compile(self, program, devices, name):
        inner = get_backend("interpreter")(program, name)

        class Executable:
            in_avals, out_avals, temp_bytes = inner.in_avals, inner.out_avals, 0
            backend = "seamtest"

            def run(self, vals):
                outs = inner.run([v.a if isinstance(v, Box) else v for v in vals])
                return [Box(np.asarray(o, a.dtype)) for o, a in zip(outs, self.out_avals)]

            def as_text(self):
                return inner.as_text()
        return Executable()

    def run_compiled(self, compiled, args, placement):
        self.placements.append(placement)
        return super().run_compiled(compiled, args, placement)


@pytest.fixture(scope="module")
def backend():
    # registered for this module only: other modules see the platforms they expect
    b = rb.register(Recording())
    try:
        yield b
    finally:
        rb.unregister("seamtest")


@pytest.fixture
def devs(backend):
    backend.placements.clear()
    return jaxlite.devices("seamtest")


def test_one_call_per_jit_call_with_its_placement(backend, devs):
    _, d1 = devs
    x = jaxlite.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), d1)

    def scaled(v, w):
        return v * w + 1.0, jnp.sum(v, axis=0)
    f = jaxlite.jit(scaled)
    a, s = f(x, 2.0)
    assert len(backend.placements) == 1
    p = backend.placements[0]
    assert p.device is d1 and p.committed is True and p.donate is None
    assert p.what == "jit of scaled" and p.out_shardings is None and p.mesh is None
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(a), host * 2.0 + 1.0)
    np.testing.assert_array_equal(np.asarray(s), host.sum(axis=0))
    assert a.dtype == np.float32 and a.shape == (2, 3) and s.shape == (3,)
    assert a.device is d1 and s.device is d1 and a.committed
    f(x, 3.0)       # the same signature: compiled once, still one call into the backend
    assert len(backend.placements) == 2 and f._cache_size() == 1


def test_default_run_compiled_keeps_donated_arguments(backend, devs):
    d0, d1 = devs
    # the base class's default cannot alias: donation is accepted and the argument stays
    x = jaxlite.device_put(np.ones(4, np.float32), d0)
    out = jaxlite.jit(lambda v: v + 1, donate_argnums=0)(x)
    (p,) = backend.placements
    assert p.donate == (0,) and p.device is d0
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 2, np.float32))
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.ones(4, np.float32))


def test_compiled_stage_goes_through_the_seam_too(backend, devs):
    d0, _ = devs
    x = jaxlite.device_put(np.arange(3, dtype=np.int32), d0)
    c = jaxlite.jit(lambda v: v * v).lower(x).compile()
    out = c(x)
    assert len(backend.placements) == 1 and backend.placements[0].device is d0
    np.testing.assert_array_equal(np.asarray(out), np.array([0, 1, 4], np.int32))
    assert out.dtype == np.int32


def test_committed_arguments_on_two_devices_fail_before_the_backend(backend, devs):
    d0, d1 = devs
    x = jaxlite.device_put(np.ones(2, np.float32), d0)
    y = jaxlite.device_put(np.ones(2, np.float32), d1)
    with pytest.raises(ValueError, match="different devices|incompatible devices"):
        jaxlite.jit(lambda a, b: a + b)(x, y)
    assert backend.placements == []


class _Spy:
    """Records the placements the CPU backend's ``run_compiled`` receives."""

    def __init__(self, monkeypatch):
        self.placements = []
        real = CpuBackend.run_compiled

        def spy(backend, compiled, args, placement):
            self.placements.append(placement)
            return real(backend, compiled, args, placement)
        monkeypatch.setattr(CpuBackend, "run_compiled", spy)


def test_cpu_donation_reaches_the_cpu_backend(monkeypatch):
    spy = _Spy(monkeypatch)
    x = jnp.arange(8.0, dtype=jnp.float32)
    f = jaxlite.jit(lambda v: v * 3, donate_argnums=0)
    out = f(x)
    (p,) = spy.placements
    assert p.donate == (0,) and p.committed is False
    assert p.device is jaxlite.devices("cpu")[0] and p.what.startswith("jit of ")
    np.testing.assert_array_equal(np.asarray(out), np.arange(8, dtype=np.float32) * 3)
    assert x.is_deleted()           # the CPU aliases: the donated buffer became the output


def test_cpu_unused_donation_is_dropped_before_the_backend(monkeypatch):
    # as JAX: an argument the program does not read is not donated (it stays valid)
    spy = _Spy(monkeypatch)
    x, y = jnp.ones(3), jnp.ones(3)
    out = jaxlite.jit(lambda a, b: b + 1, donate_argnums=0)(x, y)
    (p,) = spy.placements
    assert p.donate is None
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), np.full(3, 2, np.float32))


def test_cpu_out_shardings_on_one_device_are_a_sharded_placement(monkeypatch):
    spy = _Spy(monkeypatch)
    cpu0 = jaxlite.devices("cpu")[0]
    sh = jaxlite.sharding.SingleDeviceSharding(cpu0)
    out = jaxlite.jit(lambda v: v - 1, out_shardings=sh)(np.arange(4, dtype=np.int32))
    outer = spy.placements[0]
    assert outer.out_shardings == [sh] and outer.mesh is None and outer.spmd is None
    # run once on one device, through the same call with a single-device placement
    assert len(spy.placements) == 2 and spy.placements[1].out_shardings is None
    np.testing.assert_array_equal(np.asarray(out), np.arange(4, dtype=np.int32) - 1)
    assert out.committed and out.device is cpu0


def test_placement_defaults_and_repr():
    cpu0 = jaxlite.devices("cpu")[0]
    p = rb.Placement(cpu0, True)
    assert (p.donate, p.what, p.check, p.out_shardings, p.mesh, p.across, p.spmd,
            p.cache, p.names, p.delete_after) == (None, "jit", None, None, None, False,
                                                  None, None, None, ())
    assert repr(p) == f"Placement(device={cpu0!r}, committed=True, donate=None, what='jit')"
