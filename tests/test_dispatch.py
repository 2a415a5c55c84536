"""The dispatch fast paths: eager binary operators (``x + 1``) and repeated ``jit`` calls.

Each fast path must be invisible: the same values, dtypes, weak types, devices,
committed-ness, memory accounting, transfer accounting and errors as the full path.  The
full path is forced by registering a monitoring listener (the fast paths step aside when
one is registered, since they emit no events), so every case is run both ways and
compared, and against real JAX where JAX has the same notion.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import monitoring
from oracle import assert_like_jax

DEV = jaxlite.devices()[0]


def _full_path(fn):
    """Runs ``fn`` with a listener registered: every fast path steps aside."""
    with monitoring.record():
        return fn()


def _outcome(fn):
    """What a call gives, comparably: the result's description or the error's."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return ("raises", type(e), str(e))
    return _describe(r)


def _describe(r):
    if isinstance(r, (list, tuple)):
        return type(r), [_describe(v) for v in r]
    if isinstance(r, dict):
        return {k: _describe(v) for k, v in r.items()}
    if r is None:
        return None
    v = np.asarray(r)
    return (r.shape, r.dtype, r.weak_type, r.committed, r.device,
            v.tobytes(), r.on_device_size_in_bytes())


def _same_both_ways(fn):
    """``fn`` through the fast path (warm) and the full path give the same outcome."""
    fn_outcome_first = _outcome(fn)          # fills the caches
    fast = _outcome(fn)
    full = _outcome(lambda: _full_path(fn))
    assert fast == full
    assert fn_outcome_first == full
    return fast


# ---- eager binary operators -------------------------------------------------------------

ARRAYS = {
    "f32": lambda: jnp.array([1.5, -2.0, 3.25], "float32"),
    "weak scalar": lambda: jnp.asarray(1.5) * 1,     # weak rank 0
    "i32": lambda: jnp.array([1, -2, 7], "int32"),
    "u8": lambda: jnp.array([1, 2, 250], "uint8"),
    "i8": lambda: jnp.array([1, -2, 100], "int8"),
    "bool": lambda: jnp.array([True, False, True]),
    "f16": lambda: jnp.array([1.5, -2.0, 3.25], "float16"),
    "bf16": lambda: jnp.array([1.5, -2.0, 3.25], "bfloat16"),
    "c64": lambda: jnp.array([1 + 2j, -2.0, 3j], "complex64"),
    "f32 rank0": lambda: jnp.array(2.5, "float32"),
}
SCALARS = [1, 0, -3, 300, 2 ** 31, 1.5, 0.0, -0.0, float("nan"), float("inf"), True, False,
           1 + 2j, complex(1.0, -0.0)]
OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "maximum": jnp.maximum, "minimum": jnp.minimum,
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("arr", ARRAYS)
def test_array_scalar_both_ways(op, arr):
    x = ARRAYS[arr]()
    fn = OPS[op]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no NumPy warning leaks out of either path
        for s in SCALARS:
            _same_both_ways(lambda: fn(x, s))
            _same_both_ways(lambda: fn(s, x))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("a,b", [("f32", "f32"), ("f32", "i32"), ("i32", "i32"),
                                 ("bool", "bool"), ("u8", "i8"), ("f16", "f16"),
                                 ("bf16", "f32"), ("c64", "c64"), ("f32", "f32 rank0"),
                                 ("weak scalar", "f32"), ("weak scalar", "weak scalar")])
def test_array_array_both_ways(op, a, b):
    x, y = ARRAYS[a](), ARRAYS[b]()
    _same_both_ways(lambda: OPS[op](x, y))
    _same_both_ways(lambda: OPS[op](y, x))


@pytest.mark.parametrize("arr", ["f32", "i32", "u8", "weak scalar", "bool", "f16", "c64"])
@pytest.mark.parametrize("s", [1, 1.5, True, -0.0, 1 + 2j])
@pytest.mark.parametrize("op", ["+", "*", "<", "/"])
def test_against_jax(rjnp, arr, s, op):
    if op == "/" and s == 0:
        pytest.skip("division by zero: XLA's own edge values (convert(False) / 0.0 is 0, "
                    "complex / -0.0); the full path decides them, compared above")
    x = ARRAYS[arr]()
    rx = rjnp.asarray(np.asarray(x), dtype=x.dtype)
    if x.weak_type:
        rx = rjnp.asarray(np.asarray(x).item()) * 1
    fn = OPS[op]
    for got_fn, want_fn in ((lambda: fn(x, s), lambda: fn(rx, s)),
                            (lambda: fn(s, x), lambda: fn(s, rx))):
        try:
            want = want_fn()
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                got_fn()
            continue
        got_fn()                                # warm the fast path
        assert_like_jax(got_fn(), want)


def test_signed_zero_constants_are_not_confused():
    x = jnp.array([1.0, -1.0], "float32")
    for _ in range(2):
        assert np.signbit(np.asarray(x * 0.0)).tolist() == [False, True]
        assert np.signbit(np.asarray(x * -0.0)).tolist() == [True, False]
        c = jnp.array([1 + 1j], "complex64")
        assert np.signbit(np.asarray(c * complex(1.0, -0.0)).imag).tolist() == [False]


def test_python_int_out_of_range_raises_every_time():
    x = jnp.array([1, 2], "int32")
    for _ in range(3):
        with pytest.raises(OverflowError):
            x + 2 ** 40
    assert (x + 5).tolist() == [6, 7]


def test_x64_switch_changes_the_result_type(x64):
    x = jnp.array([1, 2], "int32")
    assert (x + 1).dtype == np.int32
    y = jnp.array([1, 2])
    assert (y + 1).dtype == np.int64
    assert (y + 2 ** 40).tolist() == [2 ** 40 + 1, 2 ** 40 + 2]


def test_memory_accounting_exact():
    x = jnp.array(np.arange(1000, dtype=np.float32))
    x + 1
    x + 1
    before = DEV.memory_stats()
    y = x + 1
    z = 2.0 * x
    after = DEV.memory_stats()
    assert after["bytes_in_use"] - before["bytes_in_use"] == 8000
    assert after["num_allocs"] - before["num_allocs"] == 2
    del y, z
    assert DEV.memory_stats()["bytes_in_use"] == before["bytes_in_use"]


def test_deleted_operand_raises_like_the_full_path():
    x = jnp.array([1.0, 2.0])
    y = jnp.array([1.0, 2.0])
    x + 1, x + y
    x.delete()
    for fn in (lambda: x + 1, lambda: 1 + x, lambda: x + y, lambda: y * x):
        fast = _outcome(fn)
        assert fast[:2] == ("raises", RuntimeError)
        assert fast == _outcome(lambda: _full_path(fn))


def test_results_are_read_only_and_committed_follows_operands():
    x = jaxlite.device_put(np.array([1.0, 2.0], np.float32), DEV)
    u = jnp.array([1.0, 2.0])
    for _ in range(2):
        assert (x + 1).committed and (1 + x).committed and (x + u).committed
        assert not (u + 1).committed
        with pytest.raises(ValueError):
            np.asarray(u + 1)[0] = 5      # the result's buffer is read-only


def test_listener_sees_every_eager_op():
    x = jnp.array([1.0, 2.0])
    x + 1
    with monitoring.record(["eager_op"]) as events:
        x + 1
        x * x
    assert [d["primitive"] for _, d in events] == ["add", "mul"]


def test_under_jit_the_operator_is_staged():
    f = jaxlite.jit(lambda a: a + 1)
    x = jnp.array([1.0, 2.0])
    x + 1
    assert "add" in str(jaxlite.make_jaxpr(lambda a: a + 1)(x))
    assert f(x).tolist() == [2.0, 3.0]


def test_floating_point_state_is_restored():
    x = jnp.array([1.0, 0.0], "float32")
    calls = []
    old = np.geterr()
    with np.errstate(all="raise"):
        r = x / 0.0                            # JAX semantics: inf/nan, no error
        assert np.isinf(np.asarray(r)[0]) and np.isnan(np.asarray(r)[1])
        with pytest.raises(FloatingPointError):
            np.float32(1) / np.float32(0)      # the caller's state is back
    with np.errstate(call=lambda *a: calls.append(a), all="call"):
        x / 0.0
        np.float32(1) / np.float32(0)
    assert len(calls) == 1                     # only the caller's own division
    assert np.geterr() == old
    f = jaxlite.jit(lambda a: a / 0.0)
    f(x)
    with np.errstate(all="raise"):
        f(x)
        with pytest.raises(FloatingPointError):
            np.float32(1) / np.float32(0)


def test_non_array_operands_still_raise():
    x = jnp.array([1.0, 2.0])
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x + None
    with pytest.raises(TypeError):
        x + [1, 2]                             # lists are not arrays (as in JAX)
    assert (x + np.float32(1)).tolist() == [2.0, 3.0]
    assert (x + np.ones(2, np.float32)).tolist() == [2.0, 3.0]


# ---- jit calls --------------------------------------------------------------------------

def _w1(x, y):
    return jnp.dot(x, y) + jnp.sum(x)


def test_jit_repeated_calls_same_as_full_path():
    f = jaxlite.jit(_w1)
    x = jnp.array([1.0, 2.0, 3.0])
    y = jaxlite.device_put(np.array([4.0, 5.0, 6.0], np.float32), DEV)
    for args in ((x, x), (x, y), (y, y)):
        _same_both_ways(lambda: f(*args))
    assert f._cache_size() == 3


@pytest.mark.parametrize("fun", [
    lambda a, b: (a, b),                       # outputs that are the inputs
    lambda a, b: {"s": a + b, "t": (a * 2, b.sum())},
    lambda a, b: a,
    lambda a, b: [a.reshape(3, 1), b[1:]],     # views
    lambda a, b: None,
    lambda a, b: 3.0,
])
def test_jit_output_structures(fun):
    f = jaxlite.jit(fun)
    x = jnp.array([1.0, 2.0, 3.0])
    y = jnp.array([1, 2, 3])
    _same_both_ways(lambda: f(x, y))
    before = DEV.memory_stats()["bytes_in_use"]
    out = f(x, y)
    leaves = jaxlite.tree_util.tree_leaves(out)
    assert DEV.memory_stats()["bytes_in_use"] - before == sum(
        v.on_device_size_in_bytes() for v in leaves)


def test_jit_matches_jax(rjax, rjnp):
    f = jaxlite.jit(_w1)
    g = rjax.jit(lambda x, y: rjnp.dot(x, y) + rjnp.sum(x))
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([4.0, 5.0, 6.0], np.float32)
    x, y = jaxlite.device_put(a), jaxlite.device_put(b)
    for _ in range(3):
        assert_like_jax(f(x, y), g(rjax.device_put(a), rjax.device_put(b)))


def test_jit_deleted_argument_raises_every_call():
    f = jaxlite.jit(lambda a: a * 2)
    x = jnp.array([1.0, 2.0])
    f(x)
    f(x)
    x.delete()
    for _ in range(2):
        fast = _outcome(lambda: f(x))
        assert fast[:2] == ("raises", RuntimeError)
        assert fast == _outcome(lambda: _full_path(lambda: f(x)))


def test_jit_temporaries_and_peak_accounting():
    # pinned to the interpreter: a tiered program's temporaries change when it switches
    # to native code in the background, between two of the measured calls
    from jaxlite.config import config
    with config._override("jaxlite_backend", "interpreter"):
        f = jaxlite.jit(lambda a: jnp.sin(a) * jnp.cos(a) + jnp.exp(a)[::-1])
        x = jnp.array(np.linspace(0, 1, 1000, dtype=np.float32))
        f(x)
        for path in (lambda fn: fn(), _full_path):
            DEV.reset_peak_memory()
            base = DEV.memory_stats()
            out = path(lambda: f(x))
            st = DEV.memory_stats()
            assert st["bytes_in_use"] - base["bytes_in_use"] == 4000
            peaks = st["peak_bytes_in_use"] - base["bytes_in_use"]
            del out
            if path is _full_path:
                assert peaks == fast_peak
            fast_peak = peaks
        assert fast_peak > 4000      # the temporaries were charged
    assert DEV.memory_stats()["bytes_in_use"] == base["bytes_in_use"]


def test_jit_listener_sees_every_call():
    f = jaxlite.jit(lambda a: a + 1)
    x = jnp.array([1.0])
    f(x)
    f(x)
    with monitoring.record(["jit_call"]) as events:
        f(x)
        f(x)
    assert len(events) == 2


def test_jit_cache_follows_x64_and_clear_cache():
    f = jaxlite.jit(lambda a: a + 1)
    x = jnp.array([1, 2])
    assert f(x).dtype == np.int32
    f(x)
    with jaxlite.enable_x64():
        assert f(x).dtype == np.int32      # the argument is int32; the key still differs
        assert f._cache_size() == 2
    f.clear_cache()
    assert f._cache_size() == 0
    assert f(x).tolist() == [2, 3]
    assert f._cache_size() == 1


def test_jit_disable_jit_and_tracing_bypass_the_fast_path():
    calls = []

    def fun(a):
        calls.append(type(a).__name__)
        return a * 3
    f = jaxlite.jit(fun)
    x = jnp.array([1.0, 2.0])
    f(x)
    f(x)
    assert len(calls) == 1
    with jaxlite.disable_jit():
        assert f(x).tolist() == [3.0, 6.0]
    assert calls[-1] == "ArrayImpl"
    assert jaxlite.grad(lambda a: f(a).sum())(x).tolist() == [3.0, 3.0]
    assert jaxlite.vmap(f)(x).tolist() == [3.0, 6.0]


def test_jit_donation_and_statics_unchanged():
    f = jaxlite.jit(lambda a, n: a * n, static_argnums=1)
    x = jnp.array([1.0, 2.0])
    assert f(x, 2).tolist() == f(x, 2).tolist() == [2.0, 4.0]
    g = jaxlite.jit(lambda a: a + 1, donate_argnums=0)
    for _ in range(2):
        x = jnp.array([1.0, 2.0])
        g(x)
        assert x.is_deleted()


def test_jit_transfer_guard_with_local_arrays():
    f = jaxlite.jit(lambda a, b: a - b)
    x = jnp.array([1.0, 2.0])
    y = jaxlite.device_put(np.array([1.0, 1.0], np.float32), DEV)
    f(x, y)
    jaxlite.transfer_stats(reset=True)
    with jaxlite.transfer_guard("disallow"):
        r, s = f(x, y), x + 1
    assert jaxlite.transfer_stats() == {}
    assert r.tolist() == [0.0, 1.0] and s.tolist() == [2.0, 3.0]


# ---- several devices: placement, transfers and errors, in a subprocess ------------------

MULTI = r"""
import numpy as np
import jaxlite, jaxlite.numpy as jnp
from jaxlite import monitoring
d0, d1 = jaxlite.devices()

def describe(r):
    if isinstance(r, (list, tuple)):
        return [describe(v) for v in r]
    return (r.dtype.name, r.weak_type, r.committed, str(r.device), np.asarray(r).tolist())

def outcome(fn):
    jaxlite.transfer_stats(reset=True)
    m = d0.memory_stats()["bytes_in_use"], d1.memory_stats()["bytes_in_use"]
    try:
        r = fn()
        res = describe(r)
        del r
    except Exception as e:
        res = (type(e).__name__, str(e))
    m2 = d0.memory_stats()["bytes_in_use"], d1.memory_stats()["bytes_in_use"]
    return res, jaxlite.transfer_stats(), (m2[0] - m[0], m2[1] - m[1])

u0 = jnp.array([1.0, 2.0])                                    # uncommitted on d0
with jaxlite.default_device(d1):
    u1 = jnp.array([3.0, 4.0])                                # uncommitted on d1
c0 = jaxlite.device_put(np.array([5.0, 6.0], np.float32), d0)  # committed
c1 = jaxlite.device_put(np.array([7.0, 8.0], np.float32), d1)
f = jaxlite.jit(lambda a, b: (a + b, a * 2))
cases = {
    "u1 + 1": lambda: u1 + 1, "u1 + u0": lambda: u1 + u0, "c1 + u0": lambda: c1 + u0,
    "c1 + 2": lambda: 2 + c1, "c0 + c1": lambda: c0 + c1, "u1 + c1": lambda: u1 + c1,
    "f(u1, u0)": lambda: f(u1, u0), "f(c1, u0)": lambda: f(c1, u0),
    "f(c0, c1)": lambda: f(c0, c1), "f(u1, c1)": lambda: f(u1, c1),
    "f(c1, c1)": lambda: f(c1, c1), "f(u1, u1)": lambda: f(u1, u1),
}
bad = []
for level in ("allow", "disallow"):
    for name, fn in cases.items():
        def run(fn=fn):
            with jaxlite.transfer_guard(level):
                return fn()
        first, fast = outcome(run), outcome(run)
        with monitoring.record():
            full = outcome(run)
        if not (first == fast == full):
            bad.append((level, name, first, fast, full))
        with jaxlite.default_device(d1):
            fast, fast2 = outcome(run), outcome(run)
            with monitoring.record():
                full = outcome(run)
        if not (fast == fast2 == full):
            bad.append(("default d1", level, name, fast, fast2, full))
print("BAD", bad)
"""


def test_several_devices_fast_equals_full_path():
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(MULTI)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "BAD []" in out.stdout, out.stdout


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_fused_kernels_repeat_exactly(dtype):
    # the interpreter runs kernels through run_reference, whose per-kernel plan is built on
    # the first call: later calls (direct inputs, broadcast inputs, reductions) must agree
    def f(a, b):
        return (jnp.sum(a * 2, axis=1), a - jnp.max(a, axis=1, keepdims=True),
                jnp.sum(a) + b, a * b)
    g = jaxlite.jit(f)
    x = jnp.array(np.arange(12).reshape(3, 4) % 5, dtype)
    y = jnp.array(3, dtype)
    eager = _describe(list(f(x, y)))
    for _ in range(3):
        assert _describe(list(g(x, y))) == eager
