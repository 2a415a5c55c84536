"""The native backend's persistent compile cache (backends/cpu/_cache.py) and tiered
compilation (backends/cpu/_tiered.py).

Numba compiles are slow: every program here is a tiny kernel, and each test uses its own
cache directory (``tmp_path``)."""
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.config import config

_cache = pytest.importorskip("jaxlite.backends.cpu._cache")
numba = pytest.importorskip("numba")
from jaxlite.backends.cpu import _tiered  # noqa: E402

# the fewest elements with which a fused kernel of several operations tiers up
# (``native_pays``): the programs here that must tier up use this many
N = _tiered.NATIVE_FUSED_MIN_ELEMENTS

SCRIPT = textwrap.dedent("""
    import json, logging, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(name)s %(levelname)s %(message)s")
    import numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _cache, _tiered
    N = _tiered.NATIVE_FUSED_MIN_ELEMENTS

    def f(x, y):
        return jnp.sum(jnp.tanh(x) * 3.0 + y), (x * 7 - y) / 2

    x = jnp.asarray(np.linspace(-2, 2, N, dtype=np.float32))
    y = jnp.asarray(np.arange(N, dtype=np.float32))
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
    x = np.linspace(-2, 2, N, dtype=np.float32)
    y = np.arange(N, dtype=np.float32)
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
    # the jit call and the lowering (the cached program's build starts after one call)
    assert r2["switches"] == {"native": 2, "failed": 0, "dropped": 0}
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
    with config._override("jaxlite_backend", "interpreter"):
        want = jax.jit(f)(a, b)
    for outs in (before, before2, after):
        for o, w in zip(outs, want):
            assert o.dtype == w.dtype and o.shape == w.shape
            np.testing.assert_array_equal(np.asarray(o), np.asarray(w))


def test_failed_native_build_stays_on_interpreter(tmp_path, monkeypatch, caplog):
    from jaxlite.backends.cpu import native as cpu

    class Broken:
        def __init__(self, *a, **k):
            raise RuntimeError("no native code today")
    monkeypatch.setattr(cpu, "CpuExecutable", Broken)
    with config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", True), \
            config._override("jax_compilation_cache_dir", str(tmp_path / "c")):
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


# ---- the tier-up policy -------------------------------------------------------------------

@pytest.fixture
def tiered_cfg(tmp_path):
    """cpu backend, tiered with the default tier-up call, a private cache directory,
    nothing remembered in memory."""
    _cache.clear_memory()
    with config._override("jax_compilation_cache_dir", str(tmp_path / "c")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", True), \
            config._override("jaxlite_tier_up_calls", 2):
        yield tmp_path / "c" / "native"
    _cache.clear_memory()


@pytest.mark.parametrize("n", [1, 3])
def test_build_starts_at_the_nth_call(tiered_cfg, n):
    a = jnp.arange(N, dtype=jnp.int32)
    want = np.max((np.arange(N) * (29 + n) + 3) // 5 - np.arange(N)).astype(np.int32)
    with config._override("jaxlite_tier_up_calls", n):
        g = jax.jit(_prog(29 + n))
        outs = []
        for i in range(n):
            ex = _exe(g) if i else None
            if ex is not None:
                assert not ex.started and ex.tier == "interpreter" and ex.calls == i
            outs.append(g(a))
        ex = _exe(g)
        assert ex.tier_up_at == n and not ex.cached
        assert ex.started and ex.calls == n
        assert ex.wait(60) and ex.tier == "native" and ex.error is None
        outs.append(g(a))
    assert ex.calls == n            # native calls are not counted
    for o in outs:
        assert o.dtype == np.int32 and o.shape == () and int(o) == want
    # a finished native build leaves its marker: the next program like it starts at once
    assert (tiered_cfg / "programs").is_dir()


def test_one_call_builds_nothing_until_asked(tiered_cfg):
    a = jnp.linspace(0.0, 3.0, N)
    g = jax.jit(lambda x: jnp.sum(jnp.sin(x) * 4.0))
    out = g(a)
    ex = _exe(g)
    assert ex.calls == 1 and not ex.started and ex.tier == "interpreter"
    assert _tiered.NATIVE_ATTRIBUTES >= {"fallbacks"}
    assert getattr(ex, "not_an_attribute", None) is None and not ex.started
    # native attributes and the text start the build and wait for it
    assert ex.fallbacks == [] and ex.started and ex.tier == "native"
    text = jax.jit(lambda x: jnp.sum(jnp.sin(x) * 4.0)).lower(a).compile().as_text()
    assert "backend=cpu" in text and "native kernel" in text
    # the header's temporaries are the native plan's (the text builds the tier first)
    compiled = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 2) + 1).lower(a).compile()
    text = compiled.as_text()
    native = compiled._program.executable.native
    assert native is not None and f"temporaries peak {native.temp_bytes} bytes" in text
    # (a float32 sum of N terms: the native kernel accumulates in double precision)
    np.testing.assert_allclose(np.asarray(g(a)), np.asarray(out), rtol=1e-5)


def test_program_built_before_starts_after_its_first_call(tiered_cfg):
    a = jnp.arange(N, dtype=jnp.int32)
    with config._override("jaxlite_tiered", False):
        want = np.asarray(jax.jit(_prog(37))(a))       # native at once; writes the marker
    g = jax.jit(_prog(37))
    g(a)
    ex = _exe(g)
    assert ex.cached and ex.tier_up_at == 1 and ex.started
    s0 = _cache.stats()
    assert ex.wait(60) and ex.tier == "native"
    assert _cache.stats()["compiled"] == s0["compiled"]   # found in memory or on disk
    assert np.asarray(g(a)) == want
    # another program is not taken for it
    h = jax.jit(_prog(41))
    h(a)
    assert not _exe(h).cached and not _exe(h).started


def test_program_key_sees_kernels_and_constants():
    from jaxlite.compiler.pipeline import optimize

    def key(f, x):
        return _tiered.program_key(optimize(jax.make_jaxpr(f)(x))[0])
    x = jnp.arange(6.0)
    c1, c2 = np.arange(6.0), np.arange(6.0) + 1
    assert key(lambda x: jnp.sin(x) * 2, x) == key(lambda x: jnp.sin(x) * 2, x)
    assert key(lambda x: jnp.sin(x) * 2, x) != key(lambda x: jnp.cos(x) * 2, x)
    assert key(lambda x: x * c1, x) != key(lambda x: x * c2, x)


def test_tier_up_calls_config_checks():
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="jaxlite_tier_up_calls"):
            config.update("jaxlite_tier_up_calls", bad)


# ---- processes: defaults, environment, exit --------------------------------------------

def _python(tmp_path, code, **env):
    full = dict(os.environ, JAXLITE_CACHE_DIR=str(tmp_path / "cache"))
    for k in ("JAXLITE_BACKEND", "JAXLITE_TIERED", "JAXLITE_TIER_UP_CALLS",
              "JAX_LOG_COMPILES", "JAX_COMPILATION_CACHE_DIR"):
        full.pop(k, None)
    full.update(env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


ONE_CALL = """
    import json, sys
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _tiered
    from jaxlite.config import config
    out = jax.jit(lambda x: jnp.sum(jnp.tanh(x) * 2.0))(jnp.arange(5.0))
    print(json.dumps({"numba": "numba" in sys.modules, "worker": _tiered._WORKER is not None,
                      "out": float(out), "backend": config.jaxlite_backend,
                      "tiered": config.jaxlite_tiered, "calls": config.jaxlite_tier_up_calls,
                      "cache": config.jax_compilation_cache_dir}))
"""


def test_defaults_and_a_program_called_once_never_touches_numba(tmp_path):
    r, _ = _python(tmp_path, ONE_CALL)
    assert r == {"numba": False, "worker": False, "backend": "cpu", "tiered": True,
                 "calls": 2, "cache": str(tmp_path / "cache"),
                 "out": pytest.approx(float(np.sum(np.tanh(np.arange(5.0)) * 2)), 1e-6)}
    r, _ = _python(tmp_path, ONE_CALL, JAXLITE_BACKEND="interpreter",
                   JAXLITE_TIER_UP_CALLS="5", JAXLITE_CACHE_DIR="",
                   JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jaxdir"))
    assert (r["backend"], r["calls"], r["cache"]) == ("interpreter", 5, "")
    r, _ = _python(tmp_path, ONE_CALL, JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jaxdir"),
                   JAXLITE_CACHE_DIR=str(tmp_path / "j2"))
    assert r["cache"] == str(tmp_path / "j2")
    env = dict(JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jaxdir"))
    full = dict(os.environ, **env)
    full.pop("JAXLITE_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(ONE_CALL)], env=full,
                       capture_output=True, text=True, timeout=120)
    assert json.loads(p.stdout.strip().splitlines()[-1])["cache"] == str(tmp_path / "jaxdir")


HOT_THEN_EXIT = """
    import json, logging, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(name)s %(levelname)s %(message)s")
    import numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _cache, _tiered
    N = _tiered.NATIVE_FUSED_MIN_ELEMENTS
    x = jnp.asarray(np.linspace(-1, 1, N, dtype=np.float32))
    f = jax.jit(lambda x: jnp.max(jnp.exp(x) * 3.0 - x))
    outs = [float(f(x)) for _ in range(3)]
    ex = next(iter(f._cache.values())).compiled._program.executable
    import time
    from jaxlite.backends.cpu import _build_process
    t = time.monotonic()      # the worker thread starts the build process
    while _build_process.pid() is None and time.monotonic() - t < 30:
        time.sleep(0.01)
    print(json.dumps({"started": ex.started, "outs": outs, "pid": _build_process.pid()}))
"""


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
def test_second_default_process_loads_what_the_first_compiled(tmp_path):
    # defaults (tiered, tier-up at the 2nd call): the first process exits while its hot
    # program builds in the build process, which finishes it: the second process compiles
    # nothing
    r1, err1 = _python(tmp_path, HOT_THEN_EXIT)
    assert r1["pid"] is not None
    # the first process does not wait for its build: the build process finishes it
    from test_build_process import _finishes
    assert _finishes(r1["pid"])
    r2, err2 = _python(tmp_path, HOT_THEN_EXIT)
    assert "build started after the persistent-cache lookup at call 2" in err2, err2
    assert "0 kernel(s) compiled here, 1 loaded from the persistent cache" in err2, err2
    # the second process's first call runs on the interpreter (Numba is not set up in it
    # yet: the first result does not wait for that), the second loads the native code
    assert r2["outs"][0] == r1["outs"][0]
    np.testing.assert_allclose(r2["outs"], r1["outs"], rtol=2e-6)


MARKER_LOOKUPS = """
    import json, sys
    import numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _tiered
    N = _tiered.NATIVE_FUSED_MIN_ELEMENTS
    keys = []
    key = _tiered.program_key
    _tiered.program_key = lambda closed: keys.append(1) or key(closed)
    x = jnp.asarray(np.linspace(-1, 1, N, dtype=np.float32))
    f = jax.jit(lambda x: jnp.max(jnp.exp(x) * 3.0 - x))
    ex = None
    seen = []
    for i in range(3):
        out = float(f(x))
        ex = ex or next(iter(f._cache.values())).compiled._program.executable
        seen.append({"keys": len(keys), "cached": ex.cached, "started": ex.started,
                     "tier": ex.tier, "out": out})
    assert _tiered.wait_all(120)
    print(json.dumps(seen))
"""


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
def test_the_first_call_of_a_fresh_process_looks_up_no_marker(tmp_path):
    """The first call of a process's first program runs on the interpreter whatever the
    persistent cache holds (Numba is not set up yet), so the program's key (which prints
    the program: 1-2 ms) is computed by its second call, not its first.  Cold, that call
    sends the build; warm (a second process), it loads the native code."""
    cold = _python(tmp_path, MARKER_LOOKUPS)[0]
    assert [c["keys"] for c in cold] == [0, 1, 1]
    assert [c["started"] for c in cold] == [False, True, True]
    assert not any(c["cached"] for c in cold)
    warm, err = _python(tmp_path, MARKER_LOOKUPS)
    assert [c["keys"] for c in warm] == [0, 1, 1]
    assert [c["cached"] for c in warm] == [False, True, True]
    assert [c["tier"] for c in warm] == ["interpreter", "native", "native"], err
    np.testing.assert_allclose([c["out"] for c in warm], [c["out"] for c in cold],
                               rtol=2e-6)


def test_a_program_built_at_once_or_after_numba_looks_its_marker_up_first(tiered_cfg):
    """With Numba set up in this process (as here, once a kernel is loaded), a program's
    first call may load it: the marker is looked up when the program is compiled."""
    from jaxlite.backends.cpu import _cache as cache
    a = jnp.arange(N, dtype=jnp.int32)
    with config._override("jaxlite_tiered", False):
        jax.jit(_prog(43))(a)                      # native at once: Numba is set up
    assert _tiered.numba_ready() and cache.stats()["compiled"] + \
        cache.stats()["loaded"] + cache.stats()["memory"] > 0
    g = jax.jit(_prog(47))
    ex = g.lower(a).compile()._program.executable
    assert ex._resolved and not ex.cached and ex._marker is not None


EXIT_DROPS = """
    import json, threading, time
    import numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _tiered
    N = _tiered.NATIVE_FUSED_MIN_ELEMENTS
    gate = threading.Event()
    _tiered._submit(gate.wait)          # the worker is busy: the builds below queue up
    fs = [jax.jit(lambda x, k=k: x * k + 1.0) for k in range(3)]
    for f in fs:
        f(jnp.arange(float(N))); f(jnp.arange(float(N)))
    exs = [next(iter(f._cache.values())).compiled._program.executable for f in fs]
    assert all(e.started for e in exs)
    threading.Timer(0.2, gate.set).start()
    t0 = time.perf_counter()
    _tiered._at_exit()                  # what the interpreter runs at exit
    waited = time.perf_counter() - t0
    print(json.dumps({"switches": _tiered.switches(), "tiers": [e.tier for e in exs],
                      "waited": waited, "errors": [str(e.error) for e in exs]}))
"""


def test_exit_waits_for_the_running_build_only(tmp_path):
    r, _ = _python(tmp_path, EXIT_DROPS)
    assert r["switches"] == {"native": 0, "failed": 0, "dropped": 3}, r
    assert r["tiers"] == ["interpreter"] * 3
    assert all("exited before the native build" in e for e in r["errors"])
    assert r["waited"] < 20


def test_program_where_native_code_cannot_pay_stays_on_the_interpreter(tiered_cfg):
    # W1's program: a vector dot (BLAS) plus a 3-element sum, a kernel standing for one
    # array operation: a native kernel call would cost more than the NumPy call
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    y = jnp.array([4.0, 5.0, 6.0], dtype=jnp.float32)
    g = jax.jit(lambda a, b: jnp.dot(a, b) + jnp.sum(a))
    outs = [g(x, y) for _ in range(6)]
    ex = _exe(g)
    assert ex.pays is False and ex.tier_up_at is None
    assert ex.calls == 0 and not ex.started and ex.tier == "interpreter"
    for o in outs:
        assert o.dtype == np.float32 and o.shape == () and float(o) == 38.0
    assert "too small for native code to pay" in _tiered.summary(0)
    # an explicit request still builds it
    assert ex.wait(60) and ex.tier == "native" and float(g(x, y)) == 38.0


@pytest.mark.parametrize("case", ["two_ops", "big", "scan"])
def test_programs_where_native_code_pays_tier_up(tiered_cfg, case):
    from jaxlite.compiler.pipeline import optimize
    small = jnp.arange(5.0)
    if case == "two_ops":            # fusion saves a pass over memory and a NumPy call
        f, args = (lambda a: jnp.sum(a * 2.0)), (jnp.zeros(N),)
    elif case == "big":              # one op over many elements: vectorised maths
        f, args = jnp.exp, (jnp.zeros(_tiered.NATIVE_MIN_ELEMENTS),)
    else:                            # a loop: the native step loop saves the dispatch
        f, args = (lambda a: jax.lax.scan(lambda c, x: (c + x, c), 0.0, a)), (small,)
    closed = optimize(jax.make_jaxpr(f)(*args))[0]
    assert _tiered.native_pays(closed)
    small_closed = optimize(jax.make_jaxpr(jnp.sum)(small))[0]
    assert not _tiered.native_pays(small_closed)
    if case == "two_ops":            # ... but not below N: a kernel call costs as much
        below = optimize(jax.make_jaxpr(f)(jnp.zeros(N - 1)))[0]
        assert not _tiered.native_pays(below)
