"""The native backend's persistent compile cache cannot run the wrong code
(backends/cpu/_cache.py).

Every entry's files (the kernel module, Numba's index and data files) are checked against
the sha256 its manifest records before anything is unpickled; a mismatch, a swapped or
truncated file, a directory, fifo or symlink in a file's place is discarded and rebuilt,
and the rebuilt entry is what the next process loads.  A cache directory or file that is
not the user's own, or that group/others may write, is not used at all (one warning).

Each test uses its own cache directory (``tmp_path``); results are compared with real JAX.
"""
import hashlib
import json
import os
import pickle
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.config import config

_cache = pytest.importorskip("jaxlite.backends.cpu._cache")
pytest.importorskip("numba")
real_jax = pytest.importorskip("jax")

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")

X = np.arange(8, dtype=np.float32) - 3.5
Y = np.linspace(-2, 2, 8, dtype=np.float32)


def _fn(name):
    """A fresh function each call (a fresh jit, so the kernel is looked up again)."""
    return {"add1": lambda x: x + 1, "mul2": lambda x: x * 2,
            "fma": lambda x, y: x * y + 3}[name]


def _args(name):
    return (X, Y) if name == "fma" else (X,)


_ORACLE: dict = {}


def _want(name):
    if name not in _ORACLE:
        _ORACLE[name] = np.asarray(real_jax.jit(_fn(name))(*_args(name)))
    return _ORACLE[name]


def _check(name, got):
    want = _want(name)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape)
    np.testing.assert_array_equal(got, want, err_msg=name)


def _run(name):
    out = jax.jit(_fn(name))(*[jnp.asarray(a) for a in _args(name)])
    _check(name, out)
    return out


def _entries(d):
    """``{module stem: {"py", "nbi", "nbc", "manifest": path}}`` of the cache in ``d``."""
    out = {}
    for mod in sorted(d.glob("jaxlite_kc_*.py")):
        e = out[mod.stem] = {"py": mod}
        for f in (d / "__pycache__").glob(mod.stem + ".*"):
            if f.name.endswith(".nbi"):
                e["nbi"] = f
            elif f.name.endswith(".nbc"):
                e["nbc"] = f
        e["manifest"] = d / (mod.stem + ".manifest")
    return out


def _compile_entry(d, name):
    """Runs ``name`` (compiling its kernel into the cache at ``d``); its entry's files."""
    before = set(_entries(d))
    s0 = _cache.stats()
    _run(name)
    assert _cache.stats()["compiled"] - s0["compiled"] == 1
    (stem,) = set(_entries(d)) - before
    e = _entries(d)[stem]
    assert {"py", "nbi", "nbc"} <= set(e), e
    return e


def _delta(s0):
    s1 = _cache.stats()
    return {k: s1[k] - s0[k] for k in s1}


def _swap(p, q):
    a, b = p.read_bytes(), q.read_bytes()
    p.write_bytes(b)
    q.write_bytes(a)


def _jaxlite_warnings(record):
    return [str(w.message) for w in record if "jaxlite" in str(w.message)]


def _rerun_loads(names):
    """A fresh look-up of each kernel loads it from disk: nothing compiled, no warning."""
    _cache.clear_memory()
    s0 = _cache.stats()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for n in names:
            _run(n)
    assert _jaxlite_warnings(rec) == []
    d = _delta(s0)
    assert d["compiled"] == 0 and d["loaded"] == len(names) and d["discarded"] == 0, d


class _Evil:
    """Unpickling it makes a directory: proof that the bytes were unpickled."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _plant(path, data, manifest):
    """Writes ``data`` at ``path`` and, where there is a manifest, records its hash there
    (what someone allowed to write into the cache could do)."""
    path.write_bytes(data)
    if manifest.exists():
        m = json.loads(manifest.read_text())
        for rel, rec in m["files"].items():
            if os.path.basename(rel) == path.name:
                rec.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
        manifest.write_text(json.dumps(m))


# ---- finding 1: the compiled files are checked, not only the module text ------------------

@pytest.mark.parametrize("what", ["nbc", "nbi+nbc"])
def test_swapped_compiled_files_each_kernel_runs_its_own_code(native_cfg, what):
    ea = _compile_entry(native_cfg, "add1")
    eb = _compile_entry(native_cfg, "mul2")
    for kind in what.split("+"):
        _swap(ea[kind], eb[kind])
    _cache.clear_memory()
    s0 = _cache.stats()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _run("add1")
        _run("mul2")
    msgs = _jaxlite_warnings(rec)
    assert len(msgs) == 2 and all("discarding" in m for m in msgs), msgs
    assert _delta(s0)["discarded"] == 2 and _delta(s0)["compiled"] == 2
    _rerun_loads(["add1", "mul2"])      # rebuilt and persisted


def test_swapped_compiled_files_of_another_signature(native_cfg):
    ea = _compile_entry(native_cfg, "add1")
    eb = _compile_entry(native_cfg, "fma")
    _swap(ea["nbc"], eb["nbc"])
    _cache.clear_memory()
    with pytest.warns(RuntimeWarning, match="discarding"):
        _run("fma")
        _run("add1")
    _rerun_loads(["fma", "add1"])


# (a truncated module file: test_tiered_cache.py's corrupt module test)
@pytest.mark.parametrize("kind", ["nbi", "nbc", "manifest"])
def test_truncated_file_is_never_unpickled_and_rebuilt(native_cfg, kind, monkeypatch):
    e = _compile_entry(native_cfg, "add1")
    data = e[kind].read_bytes()
    e[kind].write_bytes(data[: len(data) // 2])
    bad = e[kind].read_bytes()
    seen = []
    real_loads, real_load = pickle.loads, pickle.load

    def loads(b, *a, **k):
        seen.append(bytes(b))
        return real_loads(b, *a, **k)

    def load(f, *a, **k):
        seen.append(getattr(f, "name", None) or (f.getvalue() if hasattr(f, "getvalue")
                                                 else None))
        return real_load(f, *a, **k)
    monkeypatch.setattr(pickle, "loads", loads)
    monkeypatch.setattr(pickle, "load", load)
    _cache.clear_memory()
    s0 = _cache.stats()
    with pytest.warns(RuntimeWarning, match="discarding the corrupt"):
        _run("add1")
    monkeypatch.undo()
    assert bad not in seen and str(e[kind]) not in seen
    assert _delta(s0)["discarded"] == 1 and _delta(s0)["compiled"] == 1
    assert e[kind].is_file() and e[kind].read_bytes() != bad
    _rerun_loads(["add1"])


def test_tampered_data_file_is_never_unpickled(native_cfg, tmp_path):
    e = _compile_entry(native_cfg, "mul2")
    marker = tmp_path / "unpickled"
    e["nbc"].write_bytes(pickle.dumps(_Evil(marker)))
    _cache.clear_memory()
    with pytest.warns(RuntimeWarning, match="discarding"):
        _run("mul2")
    assert not marker.exists()
    _rerun_loads(["mul2"])


def test_entry_numba_cannot_load_is_rebuilt(native_cfg):
    # files that match their manifest (written by this user) but do not unpickle
    e = _compile_entry(native_cfg, "add1")
    _plant(e["nbc"], b"\x80\x04not a pickle", e["manifest"])
    _cache.clear_memory()
    s0 = _cache.stats()
    with pytest.warns(RuntimeWarning, match="could not load"):
        _run("add1")
    assert _delta(s0)["discarded"] == 1 and _delta(s0)["compiled"] == 1
    m = json.loads(e["manifest"].read_text())
    rec = m["files"]["__pycache__/" + e["nbc"].name]
    assert rec["sha256"] == hashlib.sha256(e["nbc"].read_bytes()).hexdigest()
    _rerun_loads(["add1"])


def test_wrong_signature_in_the_manifest_is_rebuilt(native_cfg):
    e = _compile_entry(native_cfg, "add1")
    m = json.loads(e["manifest"].read_text())
    m["signature"] = m["signature"].replace("float32", "float64")
    e["manifest"].write_text(json.dumps(m))
    _cache.clear_memory()
    with pytest.warns(RuntimeWarning, match="signature"):
        _run("add1")
    _rerun_loads(["add1"])


# ---- finding 2: an odd file in a file's place is discarded and really rebuilt -------------

@pytest.mark.parametrize("odd", ["dir", "symlink"])
@pytest.mark.parametrize("kind", ["py", "nbi", "nbc", "manifest"])
def test_odd_file_in_an_entry_is_rebuilt(native_cfg, tmp_path, kind, odd):
    e = _compile_entry(native_cfg, "add1")
    p = e[kind]
    assert p.is_file()
    if odd == "dir":
        p.unlink()
        p.mkdir()
        (p / "inside").write_text("x")
    else:                       # a link to a file of the right content, outside the cache
        (tmp_path / "elsewhere").write_bytes(p.read_bytes())
        p.unlink()
        p.symlink_to(tmp_path / "elsewhere")
    _cache.clear_memory()
    s0 = _cache.stats()
    with pytest.warns(RuntimeWarning, match="discarding"):
        _run("add1")
    assert _delta(s0)["discarded"] == 1 and _delta(s0)["compiled"] == 1
    st = os.lstat(p)
    assert stat.S_ISREG(st.st_mode), f"{p} not rebuilt"
    _rerun_loads(["add1"])


FIFO_SCRIPT = """
    import json, numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _cache
    out = jax.jit(lambda x: x + 1)(jnp.asarray(np.arange(8, dtype=np.float32) - 3.5))
    print(json.dumps({"out": np.asarray(out).tolist(), "stats": _cache.stats()}))
"""


def _python(code, cache, timeout=60):
    env = dict(os.environ, JAXLITE_CACHE_DIR=str(cache), JAXLITE_BACKEND="cpu",
               JAXLITE_TIERED="0")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


@pytest.mark.parametrize("kind", ["nbc", pytest.param("py", marks=pytest.mark.slow)])
def test_fifo_in_an_entry_neither_hangs_nor_stays(tmp_path, kind):
    cache = tmp_path / "cache"
    r, _ = _python(FIFO_SCRIPT, cache)
    (e,) = _entries(cache / "native").values()
    e[kind].unlink()
    os.mkfifo(e[kind])
    r, err = _python(FIFO_SCRIPT, cache)
    np.testing.assert_array_equal(np.asarray(r["out"], np.float32), _want("add1"))
    assert "discarding" in err and r["stats"]["compiled"] == 1, (r, err)
    assert stat.S_ISREG(os.lstat(e[kind]).st_mode)
    r, err = _python(FIFO_SCRIPT, cache)
    assert r["stats"] == {"compiled": 0, "loaded": 1, "memory": 0, "discarded": 0}, err


# ---- finding 3: nobody else's files, nobody else may write --------------------------------

def _expect_cache_unused(native_cfg, names, path_in_message):
    s0 = _cache.stats()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for n in names:
            _run(n)
        _cache.clear_memory()
        for n in names:             # asked again: still one warning in this process
            _run(n)
    msgs = _jaxlite_warnings(rec)
    assert len(msgs) == 1, msgs
    (msg,) = msgs
    assert str(path_in_message) in msg and "chmod" in msg and "JAXLITE_CACHE_DIR" in msg, msg
    d = _delta(s0)
    assert d["compiled"] == 0 and d["loaded"] == 0, d
    return msg


@pytest.mark.parametrize("where,mode", [("cache dir", 0o775), ("native dir", 0o707),
                                        ("__pycache__", 0o770)])
def test_writable_by_others_cache_directory_is_not_used(native_cfg, where, mode):
    if where == "cache dir":
        native_cfg.parent.mkdir(mode=0o700)
        target = native_cfg.parent
    else:
        _compile_entry(native_cfg, "fma")
        _cache.clear_memory()
        target = native_cfg if where == "native dir" else native_cfg / "__pycache__"
    files_before = sorted(native_cfg.rglob("*")) if native_cfg.exists() else []
    os.chmod(target, mode)
    msg = _expect_cache_unused(native_cfg, ["add1", "mul2"], target)
    assert oct(mode) in msg
    files_after = sorted(native_cfg.rglob("*")) if native_cfg.exists() else []
    assert [f for f in files_after if "jaxlite_kc_" in f.name] == \
        [f for f in files_before if "jaxlite_kc_" in f.name]


@pytest.mark.parametrize("kind", ["nbc", "nbi", "manifest"])
def test_writable_by_others_entry_is_never_unpickled(native_cfg, tmp_path, kind):
    e = _compile_entry(native_cfg, "add1")
    marker = tmp_path / "unpickled"
    if kind != "manifest":      # what another user allowed to write there could leave
        _plant(e[kind], pickle.dumps(_Evil(marker)), e["manifest"])
    os.chmod(e[kind], 0o622 if kind == "nbc" else 0o646)
    _cache.clear_memory()
    _expect_cache_unused(native_cfg, ["add1"], e[kind])
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="giving a file to another user needs root")
@pytest.mark.parametrize("where", ["nbc", "cache dir"])
def test_cache_of_another_owner_is_not_used(native_cfg, tmp_path, where):
    e = _compile_entry(native_cfg, "mul2")
    marker = tmp_path / "unpickled"
    _plant(e["nbc"], pickle.dumps(_Evil(marker)), e["manifest"])
    target = e["nbc"] if where == "nbc" else native_cfg.parent
    os.chown(target, 65534, 65534)
    _cache.clear_memory()
    msg = _expect_cache_unused(native_cfg, ["mul2"], target)
    assert "65534" in msg and "chown" in msg
    assert not marker.exists()


def test_cache_written_under_a_loose_umask_is_private_and_used(native_cfg):
    old = os.umask(0o002)
    try:
        _compile_entry(native_cfg, "add1")
    finally:
        os.umask(old)
    for p in [native_cfg.parent, native_cfg] + sorted(native_cfg.rglob("*")):
        if "programs" in p.parts:       # empty tier-up markers, no code (_tiered.py)
            continue
        st = os.lstat(p)
        assert st.st_uid == os.getuid() and not st.st_mode & 0o022, (p, oct(st.st_mode))
    assert stat.S_IMODE(os.stat(native_cfg.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(native_cfg).st_mode) == 0o700
    _rerun_loads(["add1"])


# ---- processes -----------------------------------------------------------------------------

PROCS_SCRIPT = """
    import json, numpy as np
    import jaxlite as jax, jaxlite.numpy as jnp
    from jaxlite.backends.cpu import _cache
    x = jnp.asarray(np.arange(8, dtype=np.float32) - 3.5)
    y = jnp.asarray(np.linspace(-2, 2, 8, dtype=np.float32))
    outs = {"add1": jax.jit(lambda x: x + 1)(x), "mul2": jax.jit(lambda x: x * 2)(x),
            "fma": jax.jit(lambda x, y: x * y + 3)(x, y)}
    print(json.dumps({"outs": {k: np.asarray(v).tolist() for k, v in outs.items()},
                      "stats": _cache.stats()}))
"""


def _procs(cache, n):
    env = dict(os.environ, JAXLITE_CACHE_DIR=str(cache), JAXLITE_BACKEND="cpu",
               JAXLITE_TIERED="0")
    ps = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(PROCS_SCRIPT)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
          for _ in range(n)]
    results = []
    for p in ps:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0 and "Traceback" not in err, err
        r = json.loads(out.strip().splitlines()[-1])
        for name, got in r["outs"].items():
            _check(name, np.asarray(got, np.float32))
        results.append((r, err))
    return results


def _stem_of(name, probe):
    """The entry name of ``name``'s kernel (the same in every cache directory)."""
    _cache.clear_memory()
    with config._override("jax_compilation_cache_dir", str(probe)), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        e = _compile_entry(probe / "native", name)
    _cache.clear_memory()
    return e["py"].stem


@pytest.mark.slow
def test_three_processes_on_one_empty_cache_then_on_swapped_files(tmp_path):
    cache = tmp_path / "cache"
    for r, err in _procs(cache, 3):
        assert "discarding" not in err, err
    ((r, err),) = _procs(cache, 1)
    assert r["stats"]["compiled"] == 0 and r["stats"]["loaded"] == 3, (r, err)
    entries = _entries(cache / "native")
    a = entries[_stem_of("add1", tmp_path / "probe")]
    b = entries[_stem_of("mul2", tmp_path / "probe")]
    _swap(a["nbc"], b["nbc"])
    _procs(cache, 3)            # every result right, whoever rebuilds
    ((r, err),) = _procs(cache, 1)
    assert "discarding" not in err
    assert r["stats"]["compiled"] == 0 and r["stats"]["loaded"] == 3, (r, err)
