"""Issue 33, what a new user's trial of the trust work found: each compared with real JAX.

- A NumPy array a traced function closes over is a constant of the value it had at trace
  time (JAX copies it then); writing into the array afterwards changes nothing.
- ``astype`` to a 64-bit dtype while 64-bit types are off warns, as JAX does.
- ``JAXLITE_BACKEND`` / ``jaxlite_backend`` take a known compiler backend only.
- An error raised through a jitted function's call keeps no jaxlite frame.
"""
from __future__ import annotations

import os
import subprocess
import sys
import traceback
import warnings

import jax as rjax
import jax.numpy as rjnp
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.backends import base as _backends


def _closures(m, xnp):
    """What three jitted functions over NumPy arrays give before and after the arrays are
    written to (a closed-over vector, a 0-d array, a grad's), and make_jaxpr's constant
    after the write."""
    n = np.arange(4.0, dtype=np.float32)
    z = np.array(2.0, np.float32)
    w = np.ones(3, np.float32)
    f = m.jit(lambda y: y + n)
    h = m.jit(lambda y: y * z)
    g = m.jit(m.grad(lambda y: (y * w).sum()))
    first = (np.asarray(f(1.0)), np.asarray(h(1.0)), np.asarray(g(1.0)))
    closed = m.make_jaxpr(lambda y: y + n)(1.0)
    n[0], z[()], w[:] = 100.0, 7.0, 5.0
    again = (np.asarray(f(1.0)), np.asarray(h(1.0)), np.asarray(g(1.0)))
    return first, again, np.asarray(closed.consts[0])


def test_closed_over_numpy_arrays_are_copied_at_trace_time_like_jax():
    first, again, const = _closures(jaxlite, np)
    want_first, want_again, _ = _closures(rjax, np)
    for got, want in zip(first + again, want_first + want_again):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.shape == want.shape
    for a, b in zip(first, again):          # nothing changed
        np.testing.assert_array_equal(a, b)
    # jaxlite's jaxpr holds the trace-time copy (JAX's make_jaxpr holds the array itself,
    # so its printed constant changes; its jit computed with a copy, as above)
    np.testing.assert_array_equal(const, [0.0, 1.0, 2.0, 3.0])


def test_a_closed_over_array_is_one_constant_however_often_used():
    n = np.arange(3.0, dtype=np.float32)
    closed = jaxlite.make_jaxpr(lambda y: y * n + n)(1.0)
    assert len(closed.consts) == 1
    assert not closed.consts[0].flags.writeable


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint64", "complex128"])
@pytest.mark.parametrize("how", ["method", "function"])
def test_astype_to_an_unavailable_64_bit_dtype_warns_like_jax(dtype, how):
    def run(m, mnp):
        x = mnp.ones(3)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            out = x.astype(dtype) if how == "method" else mnp.astype(x, dtype)
        return out, [w for w in ws if issubclass(w.category, UserWarning)]
    got, gw = run(jaxlite, jnp)
    want, ww = run(rjax, rjnp)
    assert got.dtype == want.dtype
    assert len(ww) == 1 and len(gw) == 1, [str(w.message) for w in gw]
    assert dtype in str(gw[0].message) and str(want.dtype) in str(gw[0].message)
    assert gw[0].filename == __file__


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", float, int])
def test_astype_to_an_available_dtype_does_not_warn(dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jnp.ones(3).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = rjnp.ones(3).astype(dtype)
    assert out.dtype == want.dtype


def test_the_backend_option_lists_every_registered_compiler_backend():
    import importlib
    _config = importlib.import_module("jaxlite.config")
    assert sorted(_config._COMPILER_BACKENDS) == _backends.backends()


@pytest.mark.parametrize("value", ["banana", "CPU", "", 1, None])
def test_update_of_an_unknown_compiler_backend_refused(value):
    before = jaxlite.config.jaxlite_backend
    with pytest.raises(ValueError, match="jaxlite_backend"):
        jaxlite.config.update("jaxlite_backend", value)
    assert jaxlite.config.jaxlite_backend == before


@pytest.mark.parametrize("value", ["banana", ""])
def test_unknown_compiler_backend_variable_refused_at_import(value):
    env = dict(os.environ, JAXLITE_BACKEND=value)
    p = subprocess.run([sys.executable, "-c", "import jaxlite"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError") and "JAXLITE_BACKEND" in last and \
        repr(value).strip("'") in last, p.stderr


def _frames(m, mnp, warm):
    f = m.jit(lambda x: mnp.dot(x, mnp.ones(4)))
    if warm:
        f(mnp.ones(4))                 # the cached (fast) path runs first
    try:
        f(mnp.ones(3))
    except TypeError as e:
        return [(os.path.basename(fr.filename), fr.name)
                for fr in traceback.extract_tb(e.__traceback__)]
    raise AssertionError("no error")


@pytest.mark.parametrize("warm", [False, True])
def test_an_error_through_a_jitted_call_keeps_only_the_users_frames(warm):
    got = _frames(jaxlite, jnp, warm)
    assert all(f == os.path.basename(__file__) for f, _ in got), got
    assert [n for _, n in got] == ["_frames", "<lambda>"]
    want = _frames(rjax, rjnp, warm)
    assert [n for f, n in want if f == os.path.basename(__file__)] == ["_frames", "<lambda>"]


def test_jitted_call_frames_are_there_with_filtering_off():
    with jaxlite.config._override("jax_traceback_filtering", "off"):
        got = _frames(jaxlite, jnp, False)
    assert any(f == "jit.py" for f, _ in got), got
