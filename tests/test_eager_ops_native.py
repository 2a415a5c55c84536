"""The eager operators' fast path in C (core/_eager_ops.c) against the Python operator it
wraps (numpy/_methods.py ``_fast_binop``): the same results, dtypes, weak types,
placement, device accounting, errors and NumPy error state, and the cases the C side must
leave to the Python operator."""
import gc
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import monitoring
from jaxlite.core.array import ArrayImpl
from jaxlite.numpy import _methods

native = _methods._native
needs_native = pytest.mark.skipif(native is None, reason="the C extension is not built")

OPERATORS = sorted(name for name, op in _methods._OPS.items()
                   if type(op).__name__ == "Operator")
DTYPES = [np.float32, np.int32, np.uint8, np.bool_, np.float16, ml_dtypes.bfloat16,
          np.complex64, np.int8]
SCALARS = [0, 1, -3, 2 ** 40, True, False, 0.0, -0.0, 1.5, -2.25, float("nan"),
           float("inf"), float("-inf"), 1e300, 2j, 1 + 0j, 0j]


def test_the_extension_is_built_where_a_compiler_is():
    """make installs it; an install without it would fall back silently (optional build)"""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        pytest.skip("no Python headers here")
    assert native is not None, "core/_eager_ops was not built (pip install -e . compiles it)"
    assert OPERATORS and "__add__" in OPERATORS and "__radd__" in OPERATORS
    assert type(ArrayImpl.__add__) is native.Operator


def _probe(op):
    """An Operator sharing ``op``'s memo whose fallback records that it was called."""
    calls = []

    def fallback(self, other):
        calls.append((self, other))
        return op.__wrapped__(self, other)
    return native.Operator(fallback, op.memo32, op.memo64, bool(op.reflected)), calls


def _same(r_native, r_python):
    if r_python is NotImplemented:
        assert r_native is NotImplemented
        return
    assert type(r_native) is type(r_python)
    outs_n = r_native if isinstance(r_native, tuple) else (r_native,)
    outs_p = r_python if isinstance(r_python, tuple) else (r_python,)
    for a, b in zip(outs_n, outs_p, strict=True):
        assert a.aval == b.aval            # shape, dtype and weak type
        assert a.dtype == b.dtype and a.shape == b.shape and a.weak_type == b.weak_type
        assert a.committed == b.committed and a.device == b.device
        va, vb = np.asarray(a), np.asarray(b)
        assert va.tobytes() == vb.tobytes(), (va, vb)
        assert not va.flags.writeable


def _outcome(f, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return "ok", f(*args)
    except Exception as e:      # the same error type and text on both paths
        return "error", (type(e), str(e))


def _check(name, a, b):
    op = getattr(ArrayImpl, name)
    want = _outcome(op.__wrapped__, a, b)       # also fills the memo
    probe, calls = _probe(op)
    got = _outcome(probe, a, b)
    assert got[0] == want[0], (name, a, b, got, want)
    if want[0] == "error":
        assert got[1] == want[1]
    else:
        _same(got[1], want[1])
    return calls


@needs_native
@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_array_and_scalar_agree(name, dtype):
    x = jnp.asarray(np.array([0, 1, 2, 7], dtype=np.float64).astype(dtype))
    for s in SCALARS:
        _check(name, x, s)


@needs_native
@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_two_arrays_agree(name, dtype):
    x = jnp.asarray(np.array([[0, 1, 2], [3, -4, 5]], dtype=np.float64).astype(dtype))
    y = jnp.asarray(np.array([[1, 1, 0], [2, 9, -5]], dtype=np.float64).astype(dtype))
    _check(name, x, y)
    _check(name, x, x)
    _check(name, x, y[0])            # broadcasting: left to the Python operator
    _check(name, x, y[:1, :1])       # size-1 broadcasting, both ways
    _check(name, y[:1, :1], x)
    one = jnp.asarray(np.array([3], np.float64).astype(dtype))
    _check(name, one, one)           # size-1 operands of one shape: the C path
    _check(name, one, x)
    _check(name, x, jnp.float32(2))   # rank 0 operand
    e = jnp.zeros((0,), dtype)
    _check(name, e, e)
    _check(name, e, 1)


@needs_native
def test_the_memoised_case_runs_in_c():
    """no call of the Python operator once the memo holds the plan"""
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    for name, other in [("__add__", 1), ("__radd__", 2.5), ("__mul__", x), ("__lt__", True),
                        ("__ne__", x), ("__rsub__", -7), ("__sub__", 2j),
                        ("__truediv__", 3.0)]:
        calls = _check(name, x, other)
        if name in ("__sub__", "__truediv__"):
            # a complex constant promotes; division's plan is not a bare ufunc: neither
            # is memoised as a fast-path plan
            assert calls, name
        else:
            assert calls == [], name
    # a memo miss: the Python operator decides (and fills the memo)
    probe, calls = _probe(ArrayImpl.__add__)
    y = jnp.array([1, 2], jnp.int16)
    r = probe(y, 12345)
    assert len(calls) == 1 and r.dtype == np.int16 and r.tolist() == [12346, 12347]
    r = probe(y, 12345)
    assert len(calls) == 1 and r.tolist() == [12346, 12347]


@needs_native
def test_what_the_c_side_leaves_to_python():
    probe, calls = _probe(ArrayImpl.__add__)
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    ArrayImpl.__add__.__wrapped__(x, 1.0)            # the plan is memoised
    n = 0

    def falls_back(a, b, value):
        nonlocal n
        r = probe(a, b)
        n += 1
        assert len(calls) == n
        if value is NotImplemented:
            assert r is NotImplemented
        else:
            np.testing.assert_array_equal(np.asarray(r), value)

    falls_back(x, 0.0, [1, 2, 3])                    # zero: 0.0 and -0.0 share a key
    falls_back(x, np.float32(1), [2, 3, 4])          # a NumPy scalar
    # a list: JAX's TypeError from the operator itself (returning NotImplemented would let
    # list.__mul__ repeat the list through the array's __index__)
    with pytest.raises(TypeError, match="unsupported operand type"):
        probe(x, [1, 1, 1])
    n += 1
    assert len(calls) == n
    # under a transformation: the tracer's own operators
    jax.jit(lambda v: probe(v, 1.0))(x)
    assert len(calls) == n + 1
    n += 1
    # a monitoring listener sees the full path's events
    with monitoring.record() as events:
        falls_back(x, 1.0, [2, 3, 4])
    assert any(kind == "alloc" for kind, _ in events)
    # a deleted operand raises from the full path
    z = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    z.delete()
    with pytest.raises(RuntimeError):
        probe(z, 1.0)
    assert len(calls) == n + 1


@needs_native
def test_committed_operands_and_other_devices():
    devs = jax.devices()
    x = jax.device_put(jnp.array([1.0, 2.0], jnp.float32), devs[0])   # committed
    _check("__add__", x, 1.0)
    r = x + 1.0
    assert r.committed and r.device == devs[0]
    u = jnp.array([1.0, 2.0], jnp.float32)
    r = u + 1.0
    assert not r.committed and r.device == jax.devices()[0]
    r = x + u
    assert r.committed
    _check("__add__", x, u)
    _check("__add__", u, x)


@needs_native
def test_device_accounting_is_the_python_paths():
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    d = x.device
    y = x + 1.0                                  # memoised
    del y
    gc.collect()
    before = (d._bytes_in_use, d._num_allocs)
    ys = [x + 1.0 for _ in range(10)]
    assert d._bytes_in_use == before[0] + 10 * 12
    assert d._num_allocs == before[1] + 10
    assert d._peak >= d._bytes_in_use and d._largest >= 12
    assert all(type(y._buf).__name__ == "Buffer" and y._buf.nbytes == 12 for y in ys)
    del ys
    gc.collect()
    assert d._bytes_in_use == before[0]
    ws = [ArrayImpl.__add__.__wrapped__(x, 1.0) for _ in range(10)]
    assert d._bytes_in_use == before[0] + 10 * 12
    del ws
    gc.collect()
    assert d._bytes_in_use == before[0]


@needs_native
def test_no_references_leak():
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    y = jnp.array([4.0, 5.0, 6.0], dtype=jnp.float32)
    out_aval = (x + 1.0).aval
    d = x.device
    for _ in range(10):
        x + 1.0, 1.0 - x, x * y, x == y
    gc.collect()
    entries = [e for name in ("__add__", "__rsub__", "__mul__", "__eq__")
               for e in getattr(ArrayImpl, name).memo32.values()]
    objs = (x, y, x._buf, x._buf.data, out_aval, d, x.aval, *entries)
    counts = [sys.getrefcount(o) for o in objs]
    for _ in range(1000):
        x + 1.0, 1.0 - x, x * y, x == y
    gc.collect()
    assert [sys.getrefcount(o) for o in objs] == counts


@needs_native
def test_numpy_error_state_is_the_users():
    x = jnp.array([1.0, 0.0, -1.0], dtype=jnp.float32)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = x / 0.5
        r0 = x / 1e-45                      # overflow: no warning
        with np.errstate(all="raise"):       # the user's own state is kept
            r1 = x * 1e38 * 1e38
            assert np.geterr()["over"] == "raise"
            with pytest.raises(FloatingPointError):
                np.float32(1e38) * np.float32(1e38)
    assert np.geterr() == before
    np.testing.assert_array_equal(np.asarray(r), [2, 0, -2])
    assert np.isinf(np.asarray(r0)[0]) and np.isinf(np.asarray(r1)[0])


@needs_native
def test_operator_object_behaves_like_a_method():
    x = jnp.array([1, 2, 3], jnp.int32)
    op = ArrayImpl.__add__
    assert op.__get__(None, ArrayImpl) is op
    assert x.__add__(1).tolist() == [2, 3, 4]
    assert ArrayImpl.__add__(x, 1).tolist() == [2, 3, 4]
    assert x.__radd__(1).tolist() == [2, 3, 4]
    assert x.__add__("a") is NotImplemented
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError, match="unsupported operand type"):
        x == (1, 2, 3)
    assert callable(op.__wrapped__) and "native" in repr(op)
    with pytest.raises(TypeError):
        op(x)                               # the fallback's own arity error
    assert op(x, other=1).tolist() == [2, 3, 4]   # keywords go to the fallback


@needs_native
def test_threads_agree():
    x = jnp.array(np.arange(5, dtype=np.float32))
    want = np.arange(5, dtype=np.float32) * 2 + 1
    errors = []

    def work():
        try:
            for _ in range(2000):
                r = x * 2.0 + 1.0
                if np.asarray(r).tobytes() != want.tobytes():
                    errors.append(np.asarray(r))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


@needs_native
@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(OPERATORS), dtype=st.sampled_from(DTYPES),
       values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32),
                       min_size=1, max_size=4),
       scalar=st.one_of(st.integers(-300, 300), st.floats(width=32), st.booleans()))
def test_random_operands_agree(name, dtype, values, scalar):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = np.array(values, np.float64)
        if np.dtype(dtype).kind in "iub":
            v = np.nan_to_num(v, nan=0, posinf=7, neginf=-7).clip(-100, 100)
        x = jnp.asarray(v.astype(dtype))
    _check(name, x, scalar)
    _check(name, x, x)


@needs_native
def test_switched_off_by_config():
    x = jnp.array([1.0, 2.0], jnp.float32)
    _check("__add__", x, 3.0)
    probe, calls = _probe(ArrayImpl.__add__)
    jax.config.update("jaxlite_native_ops", False)
    try:
        assert (probe(x, 3.0)).tolist() == [4.0, 5.0]
        assert len(calls) == 1
    finally:
        jax.config.update("jaxlite_native_ops", True)
    assert (probe(x, 3.0)).tolist() == [4.0, 5.0]
    assert len(calls) == 1


@needs_native
def test_switched_off_by_the_environment():
    code = ("import jaxlite, jaxlite.numpy as jnp\n"
            "from jaxlite.core.array import ArrayImpl\n"
            "assert jaxlite.config.jaxlite_native_ops is False\n"
            "calls = []\n"
            "op = ArrayImpl.__add__\n"
            "probe = type(op)(lambda a, b: calls.append(1) or op.__wrapped__(a, b),\n"
            "                 op.memo32, op.memo64, False)\n"
            "x = jnp.array([1.0])\n"
            "x + 1.0\n"
            "print(probe(x, 1.0).tolist(), len(calls))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "JAXLITE_NATIVE_OPS": "0"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0] 1"
