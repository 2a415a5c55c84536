"""jit's cached-call fast path on a PJRT device (runtime/backend.py ``fast_launcher``,
backends/pjrt/backend.py): after a signature's first call, later calls with Arrays on the
same device skip the full path, and give exactly what the full path gives: values,
dtypes, shapes, devices, committedness, memory accounting, and the full path's errors and
checks whenever the call needs them (another device, a deleted argument, debug_nans)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

import jaxlite as jax  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite.backends.pjrt import backend as pjrt_backend  # noqa: E402


@pytest.fixture(autouse=True)
def _collected():
    """Arrays held by a caught error's traceback go with their test, not in a later
    test's byte counts."""
    yield
    gc.collect()


@pytest.fixture(scope="module")
def devs():
    return jax.devices("xla_cpu")


@pytest.fixture
def launches(monkeypatch):
    """Counts the fast launchers' calls (the launchers built while it is installed)."""
    count = []
    made = pjrt_backend.PjrtBackend.fast_launcher

    def counting(self, program, device, committed):
        launch = made(self, program, device, committed)
        if launch is None:
            return None

        def counted(args):
            out = launch(args)
            count.append(out is not None)
            return out
        return counted
    monkeypatch.setattr(pjrt_backend.PjrtBackend, "fast_launcher", counting)
    return count


def test_committed_calls_take_the_fast_path_with_the_same_results(devs, launches):
    d = devs[2]
    f = jax.jit(lambda x, y: (jnp.dot(x, y) + jnp.sum(x), x * 2))
    x = jax.device_put(np.arange(3, dtype=np.float32), d)
    y = jax.device_put(np.array([4, 5, 6], np.float32), d)
    first = f(x, y)
    assert launches == []                     # the first call took the full path
    for _ in range(3):
        s, t = f(x, y)
    assert launches == [True, True, True]
    assert float(s) == float(first[0]) == 20.0 and s.dtype == np.float32 and s.shape == ()
    np.testing.assert_array_equal(np.asarray(t), [0, 2, 4])
    assert s.device == d and t.device == d
    assert s.committed and t.committed        # committed inputs: committed results
    assert f._cache_size() == 1


def test_uncommitted_calls_follow_the_default_device(devs, launches):
    f = jax.jit(lambda a: a + 1)
    with jax.default_device(devs[1]):
        x = jnp.arange(4.0)
        assert x.device == devs[1] and not x.committed
        f(x)
        out = f(x)
        assert launches == [True] and out.device == devs[1] and not out.committed
        np.testing.assert_array_equal(np.asarray(out), [1, 2, 3, 4])
    # under another default device the same signature is not launched there blindly
    with jax.default_device(devs[3]):
        out = f(x)
        assert launches == [True]     # the full path placed it
        np.testing.assert_array_equal(np.asarray(out), [1, 2, 3, 4])
        # (the full path compiles the program for that device: a PJRT executable runs on
        # the one device it was compiled for, which the plugin checks)
        assert out.device == devs[3]


def test_full_path_errors_are_kept(devs, launches):
    f = jax.jit(lambda a, b: a * b)
    a = jax.device_put(np.ones(3, np.float32), devs[0])
    b = jax.device_put(np.ones(3, np.float32), devs[0])
    f(a, b)
    f(a, b)
    assert launches == [True]
    # a committed argument on another device: the full path's ValueError naming both
    c = jax.device_put(np.ones(3, np.float32), devs[1])
    with pytest.raises(ValueError, match="different devices|committed"):
        f(a, c)
    # a deleted argument: the full path's RuntimeError
    b.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        f(a, b)
    assert launches == [True, False]          # declined, nothing launched


def test_debug_nans_still_checked(devs, launches):
    f = jax.jit(lambda a: jnp.log(a))
    x = jax.device_put(np.array([1.0, -1.0], np.float32), devs[0])
    f(x)
    f(x)
    assert launches == [True]
    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            f(x)


def test_memory_accounting_is_exact(devs, launches):
    d = devs[3]
    f = jax.jit(lambda a: a * 3)
    x = jax.device_put(np.ones(1024, np.float32), d)
    f(x)
    base = d.memory_stats()["bytes_in_use"]
    outs = [f(x) for _ in range(5)]
    assert launches == [True] * 5
    assert d.memory_stats()["bytes_in_use"] == base + 5 * 4096
    del outs
    assert d.memory_stats()["bytes_in_use"] == base


def test_debug_nans_checks_eager_and_jitted_results_on_the_device(devs):
    """jax_debug_nans reads a PJRT result back to check it (it used to skip any buffer
    not in host memory: no error at all)."""
    x = jax.device_put(np.array([1.0, -1.0], np.float32), devs[0])
    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered "
                                                     r"in log"):
            jnp.log(x)
        with pytest.raises(FloatingPointError, match="log"):
            jax.jit(jnp.log)(x)
        np.testing.assert_array_equal(np.asarray(jnp.sqrt(jnp.abs(x))), [1, 1])
    with jax.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\)"):
            x / jnp.zeros(2, jnp.float32)


def test_default_platform_program_on_each_of_its_devices():
    """With xla_cpu the default platform, one jitted program called on Arrays of each of
    its 4 devices runs on each (compiled once per device), results committed there."""
    import subprocess
    import sys
    code = """
import numpy as np, jaxlite as jax
f = jax.jit(lambda a: a * 2 + 1)
for d in jax.devices():
    x = jax.device_put(np.arange(3, dtype=np.float32), d)
    for _ in range(2):
        y = f(x)
    assert y.device == d and y.committed, (y.device, d)
    assert np.asarray(y).tolist() == [1.0, 3.0, 5.0]
print("ok", len(jax.devices()), jax.default_backend())
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=dict(__import__("os").environ,
                                             JAX_PLATFORMS="xla_cpu,cpu"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["ok", "4", "xla_cpu"]


def test_outputs_of_one_execution_share_its_completion_event(devs):
    """A program of several outputs asks for its execution's completion event: waiting
    for one output awaits it once for all (the others then return at once), the values
    are the program's, and an output deleted first does not stop the others."""
    from jaxlite.backends.pjrt.client import _Completion
    f = jax.jit(lambda a, b: (a + b, a * b, jnp.sum(a - b)))
    x = jax.device_put(np.arange(6, dtype=np.float32), devs[0])
    y = jax.device_put(np.full(6, 2.0, np.float32), devs[0])
    for _ in range(2):          # the full path, then the fast path
        s, p, t = f(x, y)
        done = s._buf.data._done
        assert type(done) is _Completion and p._buf.data._done is done
        assert t._buf.data._done is done
        p.delete()
        t.block_until_ready()
        assert done.event == 0 and done.error is None     # awaited and destroyed
        s.block_until_ready()
        np.testing.assert_array_equal(np.asarray(s), np.arange(6) + 2.0)
        assert float(t) == 3.0 and t.dtype == np.float32
        with pytest.raises(RuntimeError, match="deleted"):
            p.block_until_ready()
    # one output: its own ready event, no completion requested
    g = jax.jit(lambda a: a * 2)
    assert g(x)._buf.data._done is None
    # never waited: the completion (and its event) goes with the outputs
    import weakref
    outs = f(x, y)
    done = weakref.ref(outs[0]._buf.data._done)
    del outs
    gc.collect()
    assert done() is None


def test_clear_caches_drops_the_platforms_eager_executables_and_constants(devs):
    """``jaxlite.clear_caches`` reaches each platform (``Backend.clear_caches``): the PJRT
    backend's eager executables and device constants go; results stay right."""
    from jaxlite.backends.pjrt import backend as pb
    x = jax.device_put(np.arange(3, dtype=np.float32), devs[0])
    y = x + 1.0
    backend = devs[0].backend
    assert len(backend._eager) > 0
    assert any(k[0] == "xla_cpu" for k in pb._CONSTANTS)
    jax.clear_caches()
    assert len(backend._eager) == 0
    assert not any(k[0] == "xla_cpu" for k in pb._CONSTANTS)
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(x + 1.0), [1, 2, 3])
    assert len(backend._eager) > 0
