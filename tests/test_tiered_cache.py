"""The native backend's persistent compile cache (backends/_cache.py) and tiered
compilation (backends/_tiered.py).

Numba compiles are slow: every program here is a tiny kernel, and each test uses its own
cache directory (``tmp_path``)."""
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.config import config

_cache = pytest.importorskip("jaxlite.backends._cache")
numba = pytest.importorskip("numba")
from jaxlite.backends import _tiered  # noqa: E402

SCRIPT = textwrap.dedent("""
    import json, logging, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(name)s %(levelname)s %(message)s")
    import numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends import _cache, _tiered

    def f(x, y):
        return jnp.sum(jnp.tanh(x) * 3.0 + y), (x * 7 - y) / 2

    x = jnp.asarray(np.linspace(-2, 2, 12, dtype=np.float32))
    y = jnp.asarray(np.arange(12, dtype=np.float32))
    g = jax.jit(f)
    first = g(x, y)
    _tiered.wait_all()
    second = g(x, y)
    ex = g.lower(x, y).compile()._program.executable
    text = ex.as_text()       # waits for the lowering's native tier
    print(json.dumps({"stats": _cache.stats(), "switches": _tiered.switches(),
                      "first": [np.asarray(a).tolist() for a in first],
                      "second": [np.asarray(a).tolist() for a in second],
                      "text": text}))
""")


def _run(tmp_path, tiered=True, log=False):
    script = tmp_path / "prog.py"
    if not script.exists():
        script.write_text(SCRIPT)
    env = dict(os.environ, JAXLITE_BACKEND="cpu", JAXLITE_CACHE_DIR=str(tmp_path / "cache"),
               JAXLITE_TIERED="1" if tiered else "0", JAX_LOG_COMPILES="1" if log else "0")
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _interp_reference():
    x = np.linspace(-2, 2, 12, dtype=np.float32)
    y = np.arange(12, dtype=np.float32)
    g = jax.jit(lambda x, y: (jnp.sum(jnp.tanh(x) * 3.0 + y), (x * 7 - y) / 2))
    return [np.asarray(a) for a in g(jnp.asarray(x), jnp.asarray(y))]


def test_second_process_compiles_nothing(tmp_path):
    want = _interp_reference()
    r1, _ = _result(_run(tmp_path, tiered=False))
    assert r1["stats"]["compiled"] >= 1 and r1["stats"]["loaded"] == 0
    assert "native kernel" in r1["text"] and "0 interpreter fallback(s)" in r1["text"]
    r2, err = _result(_run(tmp_path, tiered=True, log=True))
    assert r2["stats"]["compiled"] == 0, r2["stats"]
    assert r2["stats"]["loaded"] == r1["stats"]["compiled"]
    assert r2["switches"] == {"native": 2, "failed": 0}   # the jit call and the lowering
    assert "switched to native code" in err and "0 kernel(s) compiled" in err
    assert "discarding" not in err
    for r in (r1, r2):
        for part in ("first", "second"):
            for got, w in zip(r[part], want):
                np.testing.assert_allclose(np.asarray(got, np.float32), w, rtol=2e-6)
    # the tiered process's first result (interpreter) equals its native one
    np.testing.assert_array_equal(np.asarray(r2["first"][1]), np.asarray(r2["second"][1]))


def test_concurrent_processes_writing_the_same_entry(tmp_path):
    procs = [_run(tmp_path, tiered=False) for _ in range(3)]
    results = [_result(p) for p in procs]
    for r, err in results:
        assert "discarding" not in err and "Traceback" not in err
        assert r["first"] == results[0][0]["first"]
    mods = list((tmp_path / "cache" / "native").glob("jaxlite_kc_*.py"))
    assert mods and not list((tmp_path / "cache" / "native").glob("*.tmp.*"))
    r, _ = _result(_run(tmp_path, tiered=False))
    assert r["stats"]["compiled"] == 0 and r["stats"]["loaded"] >= 1


@pytest.fixture
def native_cfg(tmp_path):
    """cpu backend, no tiering, a private cache directory, nothing remembered in memory."""
    _cache.clear_memory()
    with config._override("jax_compilation_cache_dir", str(tmp_path / "c")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        yield tmp_path / "c" / "native"
    _cache.clear_memory()


def _prog(k):
    return lambda a: jnp.max((a * k + 3) // 5 - a)


def _compile_and_run(fn, a):
    g = jax.jit(fn)
    out = g(a)
    return g, np.asarray(out)


def _entry(d):
    (mod,) = d.glob("jaxlite_kc_*.py")
    return mod


def test_corrupt_module_file_is_rebuilt_with_warning(native_cfg):
    a = jnp.arange(40, dtype=jnp.int32)
    want = np.max((np.arange(40) * 11 + 3) // 5 - np.arange(40)).astype(np.int32)
    _, out = _compile_and_run(_prog(11), a)
    assert out == want
    mod = _entry(native_cfg)
    mod.write_text("def kern(:\n  garbage")
    _cache.clear_memory()
    s0 = _cache.stats()
    with pytest.warns(RuntimeWarning, match=str(mod).replace(".", r"\.")):
        _, out2 = _compile_and_run(_prog(11), a)
    s1 = _cache.stats()
    assert out2 == want and out2.dtype == np.int32
    assert s1["discarded"] - s0["discarded"] == 1 and s1["compiled"] - s0["compiled"] == 1
    assert "def kern(" in mod.read_text() and "garbage" not in mod.read_text()
    # the rebuilt entry loads cleanly afterwards
    _cache.clear_memory()
    _compile_and_run(_prog(11), a)
    assert _cache.stats()["loaded"] - s1["loaded"] == 1


@pytest.mark.parametrize("which", ["nbc", "nbi"])
def test_corrupt_numba_cache_file_is_rebuilt_with_warning(native_cfg, which):
    a = jnp.arange(40, dtype=jnp.int32)
    _, want = _compile_and_run(_prog(13), a)
    (f,) = (native_cfg / "__pycache__").glob(f"*.{which}")
    f.write_bytes(f.read_bytes()[:10] + b"\x00not a pickle" * 3)
    _cache.clear_memory()
    s0 = _cache.stats()
    with pytest.warns(RuntimeWarning, match="discarding the corrupt"):
        _, got = _compile_and_run(_prog(13), a)
    assert got == want
    s1 = _cache.stats()
    assert s1["discarded"] - s0["discarded"] == 1 and s1["compiled"] - s0["compiled"] == 1


def test_same_kernel_twice_in_one_process_compiles_once(native_cfg):
    a = jnp.arange(9, dtype=jnp.int32)
    s0 = _cache.stats()
    _compile_and_run(_prog(17), a)
    _compile_and_run(_prog(17), a)
    s1 = _cache.stats()
    assert s1["compiled"] - s0["compiled"] == 1 and s1["memory"] - s0["memory"] == 1
    # another constant is another kernel, another entry
    _compile_and_run(_prog(19), a)
    assert _cache.stats()["compiled"] - s1["compiled"] == 1
    assert len(list(native_cfg.glob("jaxlite_kc_*.py"))) == 2


def test_cache_off_and_default_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with config._override("jax_compilation_cache_dir", None):
        assert _cache.cache_dir() == str(tmp_path / "xdg" / "jaxlite" / "native")
    with config._override("jax_compilation_cache_dir", ""), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        assert _cache.cache_dir() is None
        s0 = _cache.stats()
        _, out = _compile_and_run(_prog(23), jnp.arange(5, dtype=jnp.int32))
        assert out == np.max((np.arange(5) * 23 + 3) // 5 - np.arange(5))
        assert _cache.stats() == s0       # compiled in memory, outside the cache
    assert not (tmp_path / "xdg").exists()


def test_write_if_absent_never_replaces(tmp_path):
    p = tmp_path / "m.py"
    _cache._write_if_absent(str(p), "first")
    _cache._write_if_absent(str(p), "second")
    assert p.read_text() == "first" and os.listdir(tmp_path) == ["m.py"]


def _exe(g):
    (entry,) = g._cache.values()
    return entry.compiled._program.executable


def test_tier_switch_same_results_and_log(tmp_path, caplog):
    gate = threading.Event()
    _tiered._submit(gate.wait)            # holds the worker: native code cannot start yet
    a = jnp.asarray(np.array([7, -3, 100, 2**30, -2**31], np.int32))
    b = jnp.asarray(np.array([2, 5, -7, 3, 3], np.int32))

    def f(a, b):
        return a // b + a % b * 3 - (a >> 1), jnp.sum(a * b)
    try:
        with config._override("jax_compilation_cache_dir", str(tmp_path / "c")), \
                config._override("jaxlite_backend", "cpu"), \
                config._override("jaxlite_tiered", True), \
                config._override("jax_log_compiles", True):
            g = jax.jit(f)
            before = g(a, b)
            ex = _exe(g)
            assert isinstance(ex, _tiered.TieredExecutable)
            assert ex.tier == "interpreter" and not ex.wait(0)
            before2 = g(a, b)       # the fast path, still on the interpreter
            gate.set()
            with caplog.at_level(logging.INFO, logger="jaxlite"):
                assert ex.wait(60)
            assert ex.tier == "native" and ex.native is not None and ex.error is None
            after = g(a, b)
    finally:
        gate.set()
    assert any("switched to native code" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    assert "native kernel" in ex.as_text() and ex.fallbacks == []
    want = jax.jit(f)(a, b)          # the interpreter backend
    for outs in (before, before2, after):
        for o, w in zip(outs, want):
            assert o.dtype == w.dtype and o.shape == w.shape
            np.testing.assert_array_equal(np.asarray(o), np.asarray(w))


def test_failed_native_build_stays_on_interpreter(tmp_path, monkeypatch, caplog):
    from jaxlite.backends import cpu

    class Broken:
        def __init__(self, *a, **k):
            raise RuntimeError("no native code today")
    monkeypatch.setattr(cpu, "CpuExecutable", Broken)
    with config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", True):
        g = jax.jit(lambda x: x * 2 + 1)
        x = jnp.arange(4.0)
        out = g(x)
        ex = _exe(g)
        with caplog.at_level(logging.INFO, logger="jaxlite"):
            assert ex.wait(60)
        assert ex.tier == "interpreter" and isinstance(ex.error, RuntimeError)
        np.testing.assert_array_equal(np.asarray(g(x)), np.asarray(out))
        np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2 + 1)
    assert "native compilation failed" in ex.as_text()
    assert any("stays on the interpreter" in r.getMessage() for r in caplog.records)
