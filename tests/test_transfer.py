"""Transfers: counted per device pair (``transfer_stats``), and the transfer guard (levels,
context managers, config flags, implicit vs explicit) checked operation by operation
against real JAX's guard."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp

LEVELS = ["allow", "log", "disallow", "log_explicit", "disallow_explicit"]
HOST, CPU0 = "host", "cpu:0"


@pytest.fixture(autouse=True)
def _fresh_stats():
    jaxlite.transfer_stats(reset=True)
    yield


def _ops(mod, np_):
    """Operations by name -> (setup() -> state, run(state)).  The setup runs outside the
    guard (as a user's data would exist before it)."""
    f = mod.jit(lambda a: a * 2)

    def arr():
        x = np_.arange(3.0)
        f(x)
        f(np.ones(3, np.float32))
        return x
    return {
        # implicit host-to-device
        "jnp.asarray(numpy)": (lambda: np.ones(3), lambda n: np_.asarray(n)),
        "jnp.array(numpy)": (lambda: np.ones(3), lambda n: np_.array(n)),
        "jnp.array(list)": (lambda: [1.0, 2.0], lambda n: np_.array(n)),
        "array + numpy": (lambda: (arr(), np.ones(3, np.float32)), lambda s: s[0] + s[1]),
        "jnp.sin(numpy)": (lambda: np.ones(3, np.float32), lambda n: np_.sin(n)),
        "jit(numpy)": (lambda: np.ones(3, np.float32), lambda n: f(n)),
        # explicit host-to-device
        "device_put(numpy)": (lambda: np.ones(3), lambda n: mod.device_put(n)),
        "device_put(numpy, dev)": (lambda: np.ones(3),
                                   lambda n: mod.device_put(n, mod.devices()[0])),
        "device_put(list)": (lambda: [1.0, 2.0], lambda n: mod.device_put(n)),
        # no host-to-device transfer
        "array * array": (arr, lambda x: x * x),
        "jit(array)": (arr, lambda x: f(x)),
        "device_put(array)": (arr, lambda x: mod.device_put(x)),
        "device_put(array, same dev)": (arr, lambda x: mod.device_put(x, mod.devices()[0])),
        "jnp.array(array)": (arr, lambda x: np_.array(x)),
        # reads to the host: CPU memory is host memory, so never guarded (as JAX on CPU)
        "np.asarray": (arr, np.asarray),
        "tolist": (arr, lambda x: x.tolist()),
        "float": (lambda: arr()[1], float),
        "int": (lambda: arr().astype(np_.int32)[1], int),
        "bool": (lambda: arr()[1] > 0, bool),
        "item": (lambda: arr()[1], lambda s: s.item()),
        "str": (arr, str),
        "repr": (arr, repr),
        "format": (lambda: arr()[1], lambda s: f"{s:.2f}"),
        "operator.index": (lambda: arr().astype(np_.int32)[1], lambda i: [5, 6, 7][i]),
        "device_get": (arr, mod.device_get),
        "dlpack": (arr, np.from_dlpack),
        "iterate": (arr, list),
    }


GUARDS = ["transfer_guard", "transfer_guard_host_to_device", "transfer_guard_device_to_host",
          "transfer_guard_device_to_device"]


def _outcome(mod, np_, op, guard, level):
    setup, run = _ops(mod, np_)[op]
    state = setup()
    try:
        with getattr(mod, guard)(level):
            run(state)
        return "ok"
    except RuntimeError as e:
        assert "Disallowed" in str(e), e
        return "disallowed"


@pytest.mark.parametrize("guard", GUARDS)
@pytest.mark.parametrize("level", ["disallow", "disallow_explicit", "allow"])
def test_guard_outcomes_match_jax(rjax, rjnp, guard, level):
    mine = {op: _outcome(jaxlite, jnp, op, guard, level) for op in _ops(jaxlite, jnp)}
    theirs = {op: _outcome(rjax, rjnp, op, guard, level) for op in _ops(rjax, rjnp)}
    assert mine == theirs


def test_guard_table_spelled_out():
    # the table test_guard_outcomes_match_jax checks, for the record
    implicit_h2d = ["jnp.asarray(numpy)", "jnp.array(numpy)", "jnp.array(list)",
                    "array + numpy", "jnp.sin(numpy)", "jit(numpy)"]
    explicit_h2d = ["device_put(numpy)", "device_put(numpy, dev)", "device_put(list)"]
    for op in implicit_h2d:
        assert _outcome(jaxlite, jnp, op, "transfer_guard", "disallow") == "disallowed", op
        assert _outcome(jaxlite, jnp, op, "transfer_guard", "allow") == "ok", op
    for op in explicit_h2d:
        assert _outcome(jaxlite, jnp, op, "transfer_guard", "disallow") == "ok", op
        assert _outcome(jaxlite, jnp, op, "transfer_guard", "disallow_explicit") \
            == "disallowed", op
    for op in ("np.asarray", "float", "str", "device_get", "array * array", "jit(array)"):
        assert _outcome(jaxlite, jnp, op, "transfer_guard", "disallow_explicit") == "ok", op


def test_python_scalars_are_constants_not_transfers():
    # Documented difference: real JAX transfers each Python scalar of an eager operation
    # (``x + 1`` fails under 'disallow' there); jaxlite treats scalars as constants of the
    # operation, as both do inside jit, so the guard never fires for them.
    x = jnp.arange(3.0)
    f = jaxlite.jit(lambda a, b: a * b)
    f(x, 2.0)
    jaxlite.transfer_stats(reset=True)
    with jaxlite.transfer_guard("disallow_explicit"):
        y = x + 1
        z = f(x, 2.0)
        w = x * np.float32(3)
    assert jaxlite.transfer_stats() == {}
    assert y.tolist() == [1.0, 2.0, 3.0] and z.tolist() == [0.0, 2.0, 4.0]
    assert w.tolist() == [0.0, 3.0, 6.0]


@pytest.mark.parametrize("level", LEVELS)
def test_log_levels(caplog, level):
    x = jnp.arange(3.0)
    with caplog.at_level(logging.WARNING, logger="jaxlite"):
        with jaxlite.transfer_guard(level):
            try:
                jnp.asarray(np.ones(2))                 # implicit
            except RuntimeError:
                pass
            try:
                jaxlite.device_put(np.ones(2))          # explicit
            except RuntimeError:
                pass
            x * x                                       # no transfer
    msgs = [r.getMessage() for r in caplog.records]
    implicit = [m for m in msgs if m.startswith("implicit")]
    explicit = [m for m in msgs if m.startswith("explicit")]
    assert len(implicit) == (1 if level in ("log", "log_explicit") else 0)
    assert len(explicit) == (1 if level == "log_explicit" else 0)
    for m in msgs:
        assert "host-to-device" in m and "float32[2]" in m


@pytest.mark.parametrize("guard", GUARDS)
def test_unknown_level_raises_value_error(rjax, guard):
    with pytest.raises(ValueError, match="'sometimes'"):
        with getattr(jaxlite, guard)("sometimes"):
            pass
    with pytest.raises(ValueError):
        with getattr(rjax, guard)("sometimes"):
            pass
    jnp.asarray(np.ones(2))   # nothing left behind


@pytest.fixture
def restore_guard_flags(rjax):
    names = ["jax_transfer_guard", "jax_transfer_guard_host_to_device",
             "jax_transfer_guard_device_to_host", "jax_transfer_guard_device_to_device"]
    yield
    for n in names:
        jaxlite.config.update(n, None)
        rjax.config.update(n, None)


def _h2d_allowed(mod, np_):
    try:
        np_.asarray(np.ones(2))
        return True
    except RuntimeError:
        return False


@pytest.mark.parametrize("steps", [
    [("cfg", "jax_transfer_guard", "disallow")],
    [("cfg", "jax_transfer_guard_host_to_device", "disallow")],
    [("cfg", "jax_transfer_guard_device_to_host", "disallow")],
    [("cfg", "jax_transfer_guard", "disallow"), ("cm", "transfer_guard", "allow")],
    [("cfg", "jax_transfer_guard", "disallow"),
     ("cfg", "jax_transfer_guard_host_to_device", "allow")],
    [("cfg", "jax_transfer_guard_host_to_device", "disallow"),
     ("cm", "transfer_guard", "allow")],
    [("cfg", "jax_transfer_guard", "allow"),
     ("cm", "transfer_guard_host_to_device", "disallow")],
    [("cm", "transfer_guard", "disallow"), ("cm", "transfer_guard_device_to_host", "allow")],
    [("cm", "transfer_guard", "disallow"), ("cm", "transfer_guard", "allow")],
])
def test_config_flags_and_precedence_match_jax(rjax, rjnp, restore_guard_flags, steps):
    def outcome(mod, np_):
        import contextlib
        with contextlib.ExitStack() as stack:
            for kind, name, level in steps:
                if kind == "cfg":
                    mod.config.update(name, level)
                else:
                    stack.enter_context(getattr(mod, name)(level))
            return _h2d_allowed(mod, np_)
    assert outcome(jaxlite, jnp) == outcome(rjax, rjnp)
    for n in ("jax_transfer_guard", "jax_transfer_guard_host_to_device"):
        jaxlite.config.update(n, None)
    assert _h2d_allowed(jaxlite, jnp)


def test_guard_blocks_restore_on_exit_and_on_error():
    with pytest.raises(KeyError):
        with jaxlite.transfer_guard("disallow"):
            raise KeyError
    assert _h2d_allowed(jaxlite, jnp)
    with jaxlite.transfer_guard("disallow"):
        with jaxlite.transfer_guard("allow"):
            assert _h2d_allowed(jaxlite, jnp)
        assert not _h2d_allowed(jaxlite, jnp)
    assert _h2d_allowed(jaxlite, jnp)


def test_guard_is_per_thread():
    seen = {}

    def other():
        seen["other"] = _h2d_allowed(jaxlite, jnp)
    with jaxlite.transfer_guard("disallow"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        seen["main"] = _h2d_allowed(jaxlite, jnp)
    assert seen == {"other": True, "main": False}


# ---- counting --------------------------------------------------------------------------

def test_stats_count_bytes_per_pair():
    x = jaxlite.device_put(np.ones(10, np.float32))             # explicit h2d, 40 B
    y = jnp.asarray(np.ones((2, 3), np.int32))                  # implicit h2d, 24 B
    f = jaxlite.jit(lambda a: a + 1)
    f(np.zeros(5, np.float32))                                  # implicit h2d, 20 B
    assert jaxlite.transfer_stats() == {(HOST, CPU0): {"count": 3, "bytes": 84}}
    np.asarray(x)                                               # d2h read, 40 B
    jaxlite.device_get({"a": y, "b": 1})                        # d2h, 24 B
    x * x, f(x), y.sum()                                        # on the device: nothing
    assert jaxlite.transfer_stats(reset=True) == {
        (HOST, CPU0): {"count": 3, "bytes": 84},
        (CPU0, HOST): {"count": 2, "bytes": 64}}
    assert jaxlite.transfer_stats() == {}


def test_float64_host_data_counts_the_canonical_bytes():
    jaxlite.device_put(np.ones(8, np.float64))   # becomes float32 (x64 off): 32 bytes
    assert jaxlite.transfer_stats() == {(HOST, CPU0): {"count": 1, "bytes": 32}}


def test_transfer_events_are_emitted():
    with jaxlite.monitoring.record(["transfer"]) as events:
        jaxlite.device_put(np.ones(4, np.float32))
        jnp.asarray(np.ones(2, np.float32))
    data = [d for _, d in events]
    assert [(d["kind"], d["explicit"], d["nbytes"]) for d in data] == \
        [("host_to_device", True, 16), ("host_to_device", False, 8)]


# ---- a refused transfer changes nothing ------------------------------------------------

def test_refused_transfer_leaves_everything_as_it_was():
    dev = jaxlite.devices()[0]
    x = jnp.arange(4.0)
    host = np.arange(4, dtype=np.float32)
    tree = {"a": x, "b": host, "c": [np.ones(2), 3.0]}
    used, allocs = dev.memory_stats()["bytes_in_use"], dev.memory_stats()["num_allocs"]
    live = len(jaxlite.live_arrays())
    with jaxlite.transfer_guard("disallow_explicit"):
        with pytest.raises(RuntimeError, match="host-to-device"):
            jaxlite.device_put(tree, dev)
        with pytest.raises(RuntimeError):
            jnp.asarray(host)
        with pytest.raises(RuntimeError):
            x + host
    assert dev.memory_stats()["bytes_in_use"] == used
    assert dev.memory_stats()["num_allocs"] == allocs
    assert len(jaxlite.live_arrays()) == live
    assert jaxlite.transfer_stats() == {}
    assert not x.is_deleted() and x.tolist() == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(host, np.arange(4, dtype=np.float32))
    out = jaxlite.device_put(tree, dev)            # and it works once allowed
    assert out["b"].committed and out["c"][1].weak_type


def test_error_message_names_the_transfer():
    with jaxlite.transfer_guard("disallow"):
        with pytest.raises(RuntimeError) as e:
            jnp.asarray(np.ones((2, 3)))
    msg = str(e.value)
    assert "host-to-device" in msg and "float32[2,3]" in msg and "CpuDevice(id=0)" in msg
    assert "implicit" in msg and "'disallow'" in msg


# ---- several devices: device-to-device, in a subprocess --------------------------------

D2D_SCRIPT = """
d0, d1 = jax.devices()
x = jnp.arange(4.0)                       # uncommitted on d0
y = jax.device_put(jnp.arange(4.0), d1)   # committed on d1
jax.jit(lambda a, b: a + b)(x, y)

def outcome(level, fn):
    try:
        with jax.transfer_guard(level):
            fn()
        return "ok"
    except RuntimeError:
        return "disallowed"

ops = {
    "put y->d0": lambda: jax.device_put(y, d0),
    "put x->d1": lambda: jax.device_put(x, d1),
    "put y->d1": lambda: jax.device_put(y, d1),
    "x + y (x follows y)": lambda: x + y,
    "jit(x, y)": lambda: jax.jit(lambda a, b: a + b)(x, y),
}
for level in ("disallow", "disallow_explicit"):
    for guard in ("transfer_guard", "transfer_guard_device_to_device",
                  "transfer_guard_host_to_device"):
        for name, fn in ops.items():
            def run(fn=fn, guard=guard, level=level):
                with getattr(jax, guard)(level):
                    fn()
            out[f"{level} {guard} {name}"] = outcome("allow", run)
if hasattr(jax, "transfer_stats"):
    jax.transfer_stats(reset=True)
    z = jax.device_put(y, d0)
    x + y
    out["stats"] = {f"{s}->{d}": v for (s, d), v in jax.transfer_stats().items()}
"""


def _run(module, code, env):
    head = (f"import json, numpy as np\nimport {module} as jax\nimport {module}.numpy as jnp\n"
            f"out = {{}}\n")
    full_env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    full_env.update(env, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", head + textwrap.dedent(code) +
                        "\nprint('@@' + json.dumps(out))\n"],
                       env=full_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("@@")][-1][2:])


def test_device_to_device_guard_and_counts_like_jax():
    pytest.importorskip("jax")
    env = {"JAX_NUM_CPU_DEVICES": "2"}
    mine, theirs = _run("jaxlite", D2D_SCRIPT, env), _run("jax", D2D_SCRIPT, env)
    stats = mine.pop("stats")
    assert mine == theirs
    assert mine["disallow_explicit transfer_guard put y->d0"] == "disallowed"
    assert mine["disallow transfer_guard put y->d0"] == "ok"
    # moving an uncommitted operand to a committed one's device is an implicit transfer
    assert mine["disallow transfer_guard x + y (x follows y)"] == "disallowed"
    assert mine["disallow transfer_guard_host_to_device jit(x, y)"] == "ok"
    # the explicit copy and the implicit move of the uncommitted operand, 16 bytes each
    assert stats == {"cpu:1->cpu:0": {"count": 1, "bytes": 16},
                     "cpu:0->cpu:1": {"count": 1, "bytes": 16}}
