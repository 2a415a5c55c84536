"""Devices, device counts, the default device, and committed/uncommitted placement, against
real JAX.

Several CPU devices exist only when asked before the first use, so those cases run in
subprocesses (``JAX_NUM_CPU_DEVICES``, ``XLA_FLAGS``, ``jax_num_cpu_devices``), each script
once with jaxlite and once with real JAX, and their observations are compared.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp


def run_script(module: str, code: str, env: dict | None = None) -> dict:
    """Runs ``code`` in a fresh interpreter with ``jax``/``jnp`` bound to ``module``
    (``'jaxlite'`` or ``'jax'``); the script sets ``out`` (a JSON-able dict), returned."""
    head = (f"import json, numpy as np\nimport {module} as jax\nimport {module}.numpy as jnp\n"
            f"out = {{}}\n")
    tail = "\nprint('@@' + json.dumps(out))\n"
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES", "JAX_TRANSFER_GUARD")}
    full_env["JAX_PLATFORMS"] = "cpu"
    full_env.update(env or {})
    r = subprocess.run([sys.executable, "-c", head + textwrap.dedent(code) + tail],
                       env=full_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{module} script failed:\n{r.stderr[-3000:]}"
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("@@")][-1]
    return json.loads(line[2:])


def both(code: str, env: dict | None = None):
    """(jaxlite's observations, real JAX's observations) of the same script."""
    pytest.importorskip("jax")
    return run_script("jaxlite", code, env), run_script("jax", code, env)


# ---- one device, in process -----------------------------------------------------------

def test_device_attributes_like_jax(rjax):
    d, rd = jaxlite.devices()[0], rjax.devices()[0]
    assert repr(d) == repr(rd) == "CpuDevice(id=0)"
    assert str(d) == str(rd) == "cpu:0"
    for attr in ("id", "platform", "device_kind", "process_index", "host_id"):
        assert getattr(d, attr) == getattr(rd, attr), attr
    assert repr(jaxlite.devices()) == repr(rjax.devices())


@pytest.mark.parametrize("fn", ["device_count", "local_device_count", "default_backend",
                                "process_index", "process_count"])
def test_counts_like_jax(rjax, fn):
    assert getattr(jaxlite, fn)() == getattr(rjax, fn)()


def test_devices_are_singletons():
    d = jaxlite.devices()[0]
    assert jaxlite.devices()[0] is d
    assert jaxlite.local_devices()[0] is d
    assert jaxlite.devices("cpu") == jaxlite.devices()
    x = jnp.arange(3)
    assert x.device is d and x.device == d
    assert {d: 1}[jaxlite.devices()[0]] == 1   # hashable
    assert d != 0 and d != "cpu:0"
    assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("backend", ["gpu", "tpu", "cuda", "rocm", "foo"])
def test_absent_backend_raises_like_jax(rjax, backend):
    with pytest.raises(RuntimeError) as mine:
        jaxlite.devices(backend)
    assert f"'{backend}'" in str(mine.value)   # names the backend asked for
    with pytest.raises(RuntimeError):
        rjax.devices(backend)
    with pytest.raises(RuntimeError):
        jaxlite.device_count(backend)
    with pytest.raises(RuntimeError):
        jaxlite.local_devices(backend=backend)


def test_device_call_form_warns_and_returns_device():
    x = jnp.ones(2)
    with pytest.warns(DeprecationWarning, match="x.device"):
        d = x.device()
    assert d is x.device is jaxlite.devices()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.device is jaxlite.devices()[0]   # the property form does not warn


def test_sharding_like_jax(rjax, rjnp):
    s, rs = jnp.arange(3).sharding, rjnp.arange(3).sharding
    assert repr(s) == repr(rs)
    assert s.device_set == {jaxlite.devices()[0]}
    assert s.memory_kind == rs.memory_kind == "device"
    assert s.num_devices == rs.num_devices == 1
    assert s.is_fully_replicated and s.is_fully_addressable
    assert s == jaxlite.sharding.SingleDeviceSharding(jaxlite.devices()[0])
    assert hash(s) == hash(jaxlite.sharding.SingleDeviceSharding(jaxlite.devices()[0]))


@pytest.mark.parametrize("bad", ["cpu", 0, [0], object()])
def test_device_put_to_a_non_device(bad):
    x = jnp.arange(3)
    with pytest.raises(ValueError, match="Device"):   # JAX's type
        jaxlite.device_put(x, bad)
    with pytest.raises(TypeError):                    # and a TypeError too
        jaxlite.device_put(np.ones(2), bad)


def test_device_put_accepts_sharding():
    d = jaxlite.devices()[0]
    y = jaxlite.device_put(np.ones(3), jaxlite.sharding.SingleDeviceSharding(d))
    assert y.device is d and y.committed


# ---- config ------------------------------------------------------------------------------

def test_config_defaults_like_jax(rjax):
    for name in ("jax_default_device", "jax_transfer_guard", "jax_enable_x64",
                 "jax_transfer_guard_host_to_device"):
        assert getattr(jaxlite.config, name) == getattr(rjax.config, name), name


def test_config_unknown_flag(rjax):
    with pytest.raises(AttributeError, match="jax_no_such_flag"):
        jaxlite.config.update("jax_no_such_flag", 1)
    with pytest.raises(AttributeError):
        rjax.config.update("jax_no_such_flag", 1)
    with pytest.raises(AttributeError):
        jaxlite.config.jax_no_such_flag
    with pytest.raises(AttributeError):
        jaxlite.config.jax_enable_x64 = True   # only through update


@pytest.mark.parametrize("name,value", [("jax_transfer_guard", "bogus"),
                                        ("jax_transfer_guard_device_to_host", "never"),
                                        ("jax_default_device", 5)])
def test_config_bad_values_raise_value_error(rjax, name, value):
    with pytest.raises(ValueError, match=repr(value) if isinstance(value, str) else "5"):
        jaxlite.config.update(name, value)
    with pytest.raises(ValueError):
        rjax.config.update(name, value)
    assert getattr(jaxlite.config, name) is None   # left unchanged


def test_num_cpu_devices_frozen_once_devices_exist(rjax):
    jaxlite.devices()
    rjax.devices()
    for mod in (jaxlite, rjax):
        with pytest.raises(RuntimeError, match="jax_num_cpu_devices"):
            mod.config.update("jax_num_cpu_devices", 4)
    assert jaxlite.device_count() == 1


def test_default_device_rejects_non_devices():
    with pytest.raises(ValueError, match="Device"):
        with jaxlite.default_device(3):
            pass


# ---- several devices, in subprocesses ----------------------------------------------------

COUNT_SCRIPT = """
out["count"] = jax.device_count()
out["local"] = jax.local_device_count()
out["repr"] = repr(jax.devices())
out["str"] = [str(d) for d in jax.devices()]
out["ids"] = [d.id for d in jax.local_devices()]
try:
    jax.config.update("jax_num_cpu_devices", 2)
    out["late_update"] = "ok"
except RuntimeError:
    out["late_update"] = "RuntimeError"
"""


@pytest.mark.parametrize("env,n", [
    ({"JAX_NUM_CPU_DEVICES": "3"}, 3),
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, 2),
    ({"JAX_NUM_CPU_DEVICES": "3", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, 3),
    ({}, 1),
])
def test_cpu_device_count_from_environment(env, n):
    mine, theirs = both(COUNT_SCRIPT, env)
    assert mine == theirs
    assert mine["count"] == n and mine["ids"] == list(range(n))
    assert mine["late_update"] == "RuntimeError"


def test_cpu_device_count_from_config():
    code = """
    jax.config.update("jax_num_cpu_devices", 4)
    out["count"] = jax.device_count()
    out["last"] = repr(jax.devices()[-1])
    """
    mine, theirs = both(code, {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert mine == theirs == {"count": 4, "last": "CpuDevice(id=3)"}


PLACEMENT_SCRIPT = """
d0, d1 = jax.devices()
f = jax.jit(lambda a, b: a + b)
x = jnp.arange(3.0)                  # uncommitted, on d0
y = jax.device_put(x, d1)            # committed to d1
z = jax.device_put(x, d0)            # committed to d0
out["x"] = [x.device.id, x.committed]
out["y"] = [y.device.id, y.committed, y.tolist()]
out["z"] = [z.device.id, z.committed]

def where(name, fn):
    try:
        r = fn()
        out[name] = [r.device.id, r.committed, np.round(np.asarray(r, float), 5).tolist()]
    except Exception as e:
        out[name] = type(e).__name__

where("x+x", lambda: x + x)
where("x+y", lambda: x + y)
where("y+x", lambda: y + x)
where("y+1", lambda: y + 1)
where("y*y", lambda: y * y)
where("sin(y)", lambda: jnp.sin(y))
where("sum(y)", lambda: jnp.sum(y))
where("y.sum()", lambda: y.sum())
where("y[1:]", lambda: y[1:])
where("y.reshape", lambda: y.reshape(3, 1))
where("np+y", lambda: np.ones(3, np.float32) + y)
where("z+y", lambda: z + y)
where("jit x,x", lambda: f(x, x))
where("jit x,y", lambda: f(x, y))
where("jit y,x", lambda: f(y, x))
where("jit z,y", lambda: f(z, y))
where("jit np,y", lambda: f(np.ones(3, np.float32), y))
where("put y d0", lambda: jax.device_put(y, d0))
where("put y", lambda: jax.device_put(y))
where("put x d1", lambda: jax.device_put(x, d1))
where("put np d1", lambda: jax.device_put(np.ones(2), d1))
where("put 1.0", lambda: jax.device_put(1.0))
where("put 2 d1", lambda: jax.device_put(2, d1))

with jax.default_device(d1):
    where("dd arange", lambda: jnp.arange(2.0))
    where("dd x+x", lambda: x + x)
    where("dd jit x,x", lambda: f(x, x))
    where("dd z+z", lambda: z + z)
    where("dd put np", lambda: jax.device_put(np.ones(2)))
    with jax.default_device(d0):
        where("dd nested", lambda: jnp.ones(2) * 2)
    where("dd after nested", lambda: jnp.ones(2) * 2)
where("after dd", lambda: jnp.ones(2) * 2)
jax.config.update("jax_default_device", d1)
where("cfg ones", lambda: jnp.ones(2) * 2)
where("cfg put", lambda: jax.device_put(3.0))
with jax.default_device(d0):
    where("cfg+dd", lambda: jnp.ones(2) * 2)
jax.config.update("jax_default_device", None)
where("cfg reset", lambda: jnp.ones(2) * 2)

tree = jax.device_put({"a": np.ones(2), "b": (3, x)}, d1)
out["tree"] = {k: [v.device.id, v.committed, v.dtype.name, v.weak_type]
               for k, v in [("a", tree["a"]), ("b0", tree["b"][0]), ("b1", tree["b"][1])]}
pair = jax.device_put([1.0, 2.0], [d0, d1])
out["pair"] = [[p.device.id, p.committed] for p in pair]
for bad in ("cpu", 0):
    try:
        jax.device_put(x, bad)
        out["bad " + str(bad)] = "ok"
    except ValueError:
        out["bad " + str(bad)] = "ValueError"
"""


def test_placement_follows_committed_operands_like_jax():
    mine, theirs = both(PLACEMENT_SCRIPT,
                        {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert mine.keys() == theirs.keys()
    for k in theirs:
        assert mine[k] == theirs[k], k
    # the essentials, spelled out
    assert mine["x+y"][:2] == [1, True] and mine["jit x,y"][:2] == [1, True]
    assert mine["z+y"] == "ValueError" and mine["jit z,y"] == "ValueError"
    assert mine["dd x+x"][:2] == [1, False]


def test_incompatible_devices_error_names_both_devices():
    code = """
    d0, d1 = jax.devices()
    a = jax.device_put(jnp.ones(3), d0)
    b = jax.device_put(jnp.ones(3), d1)
    for name, fn in [("eager", lambda: a * b),
                     ("jit", lambda: jax.jit(lambda p, q: p - q)(a, b)),
                     ("numpy", lambda: jnp.dot(a, b))]:
        try:
            fn()
            out[name] = "no error"
        except ValueError as e:
            out[name] = str(e)
    """
    mine = run_script("jaxlite", code, {"JAX_NUM_CPU_DEVICES": "2"})
    for name, msg in mine.items():
        assert "CpuDevice(id=0)" in msg and "CpuDevice(id=1)" in msg, (name, msg)
        assert "float32[3]" in msg or "f32[3]" in msg, (name, msg)
    assert " p " in mine["jit"] and " q " in mine["jit"]   # jit names its arguments


def test_device_stats_are_per_device():
    code = """
    d0, d1 = jax.devices()
    before = [d.memory_stats()["bytes_in_use"] for d in (d0, d1)]
    y = jax.device_put(np.zeros(1000, np.float32), d1)
    after = [d.memory_stats()["bytes_in_use"] for d in (d0, d1)]
    out["delta"] = [a - b for a, b in zip(after, before)]
    out["live_on_d1"] = [a.device.id for a in jax.live_arrays()].count(1)
    """
    mine = run_script("jaxlite", code, {"JAX_NUM_CPU_DEVICES": "2"})
    assert mine == {"delta": [0, 4000], "live_on_d1": 1}


def test_default_device_is_thread_local():
    code = """
    import threading
    d0, d1 = jax.devices()
    seen = {}
    def other():
        seen["other"] = (jnp.ones(2) + 1).device.id
    with jax.default_device(d1):
        t = threading.Thread(target=other)
        t.start(); t.join()
        seen["main"] = (jnp.ones(2) + 1).device.id
    out.update(seen)
    """
    mine, theirs = both(code, {"JAX_NUM_CPU_DEVICES": "2"})
    assert mine == theirs == {"other": 0, "main": 1}
