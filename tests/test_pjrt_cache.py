"""The PJRT platforms' persistent executable cache (backends/pjrt/_cache.py) on the XLA:CPU
plugin.

The binding's serialize and deserialize-and-load round trip; a second process that loads
every executable instead of compiling it and computes the same bits; each kind of damage
(a truncated payload, an edited byte, a swapped or edited manifest, an entry from another
device or plugin version, bytes the plugin cannot load, a directory or symlink in a
file's place) warned about, discarded, recompiled, rewritten and never run; the cache off
by config; a directory that cannot be used (JAX's warning, checked against real JAX) or
written; an untrusted directory; the minimum compile time and entry size.  Every test has
its own cache directory.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

import jaxlite  # noqa: E402
from jaxlite.backends.pjrt import _cache, _capi  # noqa: E402
from jaxlite.backends.pjrt._capi import PjrtError  # noqa: E402
from jaxlite.config import config  # noqa: E402
from jaxlite.runtime import backend as rb  # noqa: E402
from jaxlite.runtime import cache_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(os.path.dirname(__import__("xla_plugins.xla_cpu_pjrt").xla_cpu_pjrt
                                      .__file__), "include", "pjrt_c_api.h")

TEXT = """module @cache_probe {
  func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %c = stablehlo.constant dense<2.5> : tensor<3xf32>
    %y = stablehlo.multiply %x, %c : tensor<3xf32>
    %z = stablehlo.sine %y : tensor<3xf32>
    return %z : tensor<3xf32>
  }
}
"""
X = np.array([0.5, -1.25, 3.0], np.float32)
OUT = [((3,), np.dtype(np.float32))]


@pytest.fixture(scope="module")
def devs():
    d = jaxlite.devices("xla_cpu")
    yield d
    # other modules list the registered platforms: leave the registry as it was found
    if rb.get("xla_cpu") is not None:
        rb.unregister("xla_cpu")


@pytest.fixture
def client(devs):
    c = devs[0].backend.client
    why = _cache.unsupported(c)
    if why is not None:
        pytest.skip(f"the XLA:CPU plugin cannot use the persistent cache: {why}")
    return c


@pytest.fixture
def cdir(tmp_path):
    """A private cache directory for the test, its warnings-once memory reset; yields the
    ``pjrt/`` folder."""
    base = tmp_path / "cache"
    with config._override("jax_compilation_cache_dir", str(base)), \
            config._override("jax_persistent_cache_min_compile_time_secs", 0.0), \
            config._override("jax_persistent_cache_min_entry_size_bytes", 0), \
            config._override("jax_enable_compilation_cache", True):
        yield base / "pjrt"
    _cache._OFF.clear()
    _cache._NO_WRITE.clear()


def run(client, ex, info):
    return ex.execute([client.buffer_from_numpy(X, info)], OUT)[0].to_numpy()


def fresh(client, info, text=TEXT):
    """What the program computes, compiled without the cache."""
    return run(client, client.compile(text, info), info)


def entry_of(client, info, d, text=TEXT):
    """(payload path, manifest path) of the entry of ``text`` for ``info`` in ``d``."""
    key = _cache.entry_key(client, text, _options(info), info)
    e = _cache._Entry(str(d), key, _cache.module_name(text, "main"), _cache._identity(client)[1])
    return e.payload, e.manifest


def _options(info):
    from jaxlite.backends.pjrt.client import compile_options
    return compile_options(info.id)


def counts(before):
    now = _cache.stats()
    return {k: now[k] - before[k] for k in now}


def compile_counted(client, info, text=TEXT):
    s0 = _cache.stats()
    ex = _cache.load_or_compile(client, text, info)
    return ex, counts(s0)


# ---- the binding ---------------------------------------------------------------------------

def test_serialize_and_deserialize_round_trip(devs, client):
    want = fresh(client, devs[0].info)
    np.testing.assert_allclose(want, np.sin(X * np.float32(2.5)), rtol=1e-6)
    data = client.compile(TEXT, devs[1].info).serialize()
    assert isinstance(data, bytes) and len(data) > 100
    # loaded for either device (its compile options travel with the call), same bits
    for d in (devs[0], devs[2]):
        ex = client.deserialize(data, d.info)
        out = ex.execute([client.buffer_from_numpy(X, d.info)], OUT)[0]
        assert out.device_handle() == d.info.handle
        np.testing.assert_array_equal(out.to_numpy(), want)
        assert ex.num_outputs == 1
    with pytest.raises(PjrtError, match="INTERNAL: .*[Dd]eserializ"):
        client.deserialize(data[:len(data) // 2], devs[0].info)
    with pytest.raises(PjrtError):
        client.deserialize(b"not an executable", devs[0].info)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_new_structs_are_the_headers(tmp_path):
    structs = {"ExecutableSerializeArgs": "PJRT_Executable_Serialize_Args",
               "DeserializeAndLoadArgs": "PJRT_Executable_DeserializeAndLoad_Args"}
    src = tmp_path / "sizes.c"
    body = "".join(f'  printf("%s %zu\\n", "{ours}", (size_t){theirs}_STRUCT_SIZE);\n'
                   for ours, theirs in structs.items())
    src.write_text(f'#include <stdio.h>\n#include "{HEADER}"\nint main(void) {{\n{body}'
                   f'  return 0;\n}}\n')
    exe = tmp_path / "sizes"
    subprocess.run(["cc", "-o", str(exe), str(src)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    sizes = dict(line.split() for line in out.splitlines())
    for ours in structs:
        assert getattr(_capi, ours).SIZE == int(sizes[ours]), ours


# ---- the key -------------------------------------------------------------------------------

def test_key_covers_text_device_and_options(devs, client):
    i0, i1 = devs[0].info, devs[1].info
    k = _cache.entry_key(client, TEXT, _options(i0), i0)
    assert k == _cache.entry_key(client, TEXT, _options(i0), i0) and len(k) == 64
    others = {_cache.entry_key(client, TEXT.replace("2.5", "2.25"), _options(i0), i0),
              _cache.entry_key(client, TEXT, _options(i1), i1),
              _cache.entry_key(client, TEXT, _options(i1), i0),
              _cache.entry_key(client, TEXT, _options(i0), i1)}
    assert k not in others and len(others) == 4
    _, writer = _cache._identity(client)
    assert writer["platform"] == client.platform_name == "cpu"
    assert writer["pjrt_api"] == "0.81" and writer["plugin"] == os.path.realpath(
        client.plugin.path)


# ---- a second process loads instead of compiling -------------------------------------------

WORKER = textwrap.dedent("""
    import json, sys, time, logging, warnings
    import numpy as np
    import jaxlite as jax
    import jaxlite.numpy as jnp
    from jaxlite.backends.pjrt import _cache
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    jax.config.update("jax_log_compiles", True)
    dev = jax.devices("xla_cpu")[0]          # the plugin is open before the clock starts
    x = jax.device_put(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), dev)
    w = jax.device_put(np.arange(20, dtype=np.float32).reshape(4, 5) / 7, dev)
    t0 = time.perf_counter()
    y = jax.jit(lambda a, b: jnp.tanh(a @ b).sum(axis=0) + 1)(x, w)
    first = np.asarray(y)
    first_s = time.perf_counter() - t0
    eager = np.asarray(jnp.exp(x) * 3)            # eager operations: executables too
    donated = np.asarray(jax.jit(lambda a: a * 2, donate_argnums=0)(jnp.ones(4) + x[0]))
    print(json.dumps({"first": first.tolist(), "eager": eager.tolist(),
                      "donated": donated.tolist(), "first_s": first_s,
                      "stats": _cache.stats()}))
""")


def _worker(tmp_path, cache, extra_env=None):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), JAXLITE_CACHE_DIR=str(cache),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", **(extra_env or {}))
    env.pop("JAX_PLATFORMS", None)
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.splitlines()[-1]), p.stderr


def test_a_second_process_loads_every_executable(tmp_path):
    cache = tmp_path / "cache"
    cold, log1 = _worker(tmp_path, cache)
    warm, log2 = _worker(tmp_path, cache)
    s1, s2 = cold["stats"], warm["stats"]
    assert s1["loaded"] == 0 and s1["compiled"] >= 4 and s1["written"] == s1["compiled"]
    # the second process compiles nothing: the jitted programs, the donating one and the
    # eager operations all come from the cache
    assert s2 == {"compiled": 0, "loaded": s1["compiled"], "written": 0, "discarded": 0}
    for k in ("first", "eager", "donated"):
        assert np.array_equal(np.asarray(cold[k]), np.asarray(warm[k])), k
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    b = np.arange(20, dtype=np.float32).reshape(4, 5) / 7
    np.testing.assert_allclose(warm["first"], np.tanh(a @ b).sum(0) + 1, rtol=1e-5)
    np.testing.assert_allclose(warm["donated"], (1 + a[0]) * 2, rtol=1e-6)
    # jax_log_compiles: each load is logged as JAX logs a persistent-cache hit
    assert "Persistent compilation cache hit for 'jit__lambda' with key '" in log2
    assert "Persistent compilation cache hit" not in log1
    files = sorted(os.listdir(cache / "pjrt"))
    assert sum(f.endswith(".pjrt") for f in files) == s1["written"]
    assert sum(f.endswith(".manifest") for f in files) == s1["written"]
    print(f"\nfirst result of a fresh jitted function on xla_cpu: cold cache "
          f"{cold['first_s'] * 1e3:.1f} ms, warm cache {warm['first_s'] * 1e3:.1f} ms")


def test_a_process_with_the_cache_off_writes_nothing(tmp_path):
    cache = tmp_path / "cache"
    out, _ = _worker(tmp_path, cache, {"JAX_ENABLE_COMPILATION_CACHE": "false"})
    assert out["stats"]["loaded"] == out["stats"]["written"] == 0
    assert out["stats"]["compiled"] >= 4
    assert not cache.exists()


# ---- damage: warned, discarded, recompiled, rewritten, never run ---------------------------

def _edit_manifest(path, fn):
    m = json.loads(open(path).read())
    fn(m)
    os.unlink(path)
    with open(path, "w") as f:
        json.dump(m, f)
    os.chmod(path, 0o600)


def _truncate(payload, manifest, ctx):
    data = open(payload, "rb").read()
    os.truncate(payload, len(data) // 2)


def _edit_byte(payload, manifest, ctx):
    data = bytearray(open(payload, "rb").read())
    data[len(data) // 2] ^= 0x01                 # same size: only the sha256 tells
    open(payload, "wb").write(bytes(data))


def _truncate_and_fix_size(payload, manifest, ctx):
    # a payload cut short whose manifest records its new size: the sha256 tells
    os.truncate(payload, 200)
    _edit_manifest(manifest, lambda m: m["payload"].update(size=200))


def _swap_key(payload, manifest, ctx):
    _edit_manifest(manifest, lambda m: m.update(key="0" * 64))


def _swap_manifests(payload, manifest, ctx):
    # the manifest (and payload) of another program copied over this one's
    other_p, other_m = ctx["other"]
    shutil.copyfile(other_m, manifest)
    shutil.copyfile(other_p, payload)


def _other_device(payload, manifest, ctx):
    # device 1's entry under device 0's names: a consistent entry, of another key
    p1, m1 = ctx["device1"]
    shutil.copyfile(m1, manifest)
    shutil.copyfile(p1, payload)


def _other_plugin_version(payload, manifest, ctx):
    _edit_manifest(manifest, lambda m: m["written_by"].update(platform_version="0.0-old"))


def _undeserializable(payload, manifest, ctx):
    # bytes the plugin cannot load, with a manifest that records them exactly
    junk = b"\x0a\x05junk!" * 40
    open(payload, "wb").write(junk)
    import hashlib
    _edit_manifest(manifest, lambda m: m["payload"].update(
        size=len(junk), sha256=hashlib.sha256(junk).hexdigest()))


def _manifest_not_json(payload, manifest, ctx):
    open(manifest, "wb").write(b"\xff{not json")


def _payload_missing(payload, manifest, ctx):
    os.unlink(payload)


def _payload_is_directory(payload, manifest, ctx):
    os.unlink(payload)
    os.mkdir(payload)
    (open(os.path.join(payload, "inside"), "w")).write("x")


def _manifest_is_directory(payload, manifest, ctx):
    os.unlink(manifest)
    os.mkdir(manifest)


def _payload_is_symlink(payload, manifest, ctx):
    # a link to the very bytes the manifest records: still never read through
    target = ctx["tmp"] / "elsewhere.pjrt"
    shutil.copyfile(payload, target)
    os.unlink(payload)
    os.symlink(target, payload)


def _manifest_is_symlink(payload, manifest, ctx):
    target = ctx["tmp"] / "elsewhere.manifest"
    shutil.copyfile(manifest, target)
    os.unlink(manifest)
    os.symlink(target, manifest)


DAMAGE = {
    "truncated payload": (_truncate, "has .* bytes, not the .* recorded"),
    "edited byte": (_edit_byte, r"not the file its manifest records \(sha256\)"),
    "truncated, size fixed": (_truncate_and_fix_size, r"\(sha256\)"),
    "swapped key": (_swap_key, "records the key '0000"),
    "swapped manifests": (_swap_manifests, "records the key"),
    "another device's entry": (_other_device, "records the key"),
    "another plugin version": (_other_plugin_version,
                               "written by another plugin or jaxlite: platform_version "
                               "'0.0-old'"),
    "undeserializable": (_undeserializable, "the plugin could not load it: INTERNAL"),
    "manifest not JSON": (_manifest_not_json, "is not JSON"),
    "payload missing": (_payload_missing, r"\.pjrt is missing"),
    "payload a directory": (_payload_is_directory, r"\.pjrt is a directory"),
    "manifest a directory": (_manifest_is_directory, r"\.manifest is a directory"),
    "payload a symlink": (_payload_is_symlink, r"\.pjrt is a symbolic link"),
    "manifest a symlink": (_manifest_is_symlink, r"\.manifest is a symbolic link"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_entry_is_discarded_and_rebuilt(kind, devs, client, cdir, tmp_path):
    damage, why = DAMAGE[kind]
    i0 = devs[0].info
    want = fresh(client, i0)
    ex, n = compile_counted(client, i0)
    assert n == {"compiled": 1, "loaded": 0, "written": 1, "discarded": 0}
    np.testing.assert_array_equal(run(client, ex, i0), want)
    payload, manifest = entry_of(client, i0, cdir)
    good = open(payload, "rb").read()
    ctx = {"tmp": tmp_path}
    other = TEXT.replace("2.5", "0.75").replace("@cache_probe", "@other_probe")
    _cache.load_or_compile(client, other, i0)
    ctx["other"] = entry_of(client, i0, cdir, other)
    _cache.load_or_compile(client, TEXT, devs[1].info)
    ctx["device1"] = entry_of(client, devs[1].info, cdir)
    damage(payload, manifest, ctx)

    with pytest.warns(RuntimeWarning, match="discarding the corrupt or stale compile cache "
                                            "entry .*cache_probe-.*" + why):
        ex, n = compile_counted(client, i0)
    assert n == {"compiled": 1, "loaded": 0, "written": 1, "discarded": 1}
    out = ex.execute([client.buffer_from_numpy(X, i0)], OUT)[0]
    assert out.device_handle() == i0.handle
    np.testing.assert_array_equal(out.to_numpy(), want)
    # rebuilt: regular files again, the next compile loads them without a word
    assert os.path.isfile(payload) and not os.path.islink(payload)
    assert os.path.isfile(manifest) and not os.path.islink(manifest)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex, n = compile_counted(client, i0)
    assert n == {"compiled": 0, "loaded": 1, "written": 0, "discarded": 0}
    np.testing.assert_array_equal(run(client, ex, i0), want)
    if kind in ("payload a symlink", "manifest a symlink"):
        assert os.path.isfile(tmp_path / ("elsewhere." + ("pjrt" if "payload" in kind
                                                          else "manifest")))
    # the rebuilt payload is whole: its manifest's size and a serialized executable's
    # length (which may differ from the first by a few bytes: XLA numbers the modules it
    # compiles in a process, and the serialized form holds that number)
    size = json.loads(open(manifest, encoding="utf-8").read())["payload"]["size"]
    assert os.path.getsize(payload) == size and abs(size - len(good)) <= 16


def test_the_jit_path_rebuilds_a_damaged_entry(devs, cdir):
    import jaxlite.numpy as jnp
    x = jaxlite.device_put(np.arange(5, dtype=np.float32), devs[0])

    def make():
        def f(v):               # a new function each time: traced and compiled again
            return jnp.cos(v) * 3 - v
        return f

    want = np.cos(np.arange(5, dtype=np.float32)) * 3 - np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(make())(x)), want, rtol=1e-6)
    (payload,) = [p for p in cdir.iterdir() if p.name.startswith("jit_f-") and
                  p.suffix == ".pjrt"]
    data = bytearray(payload.read_bytes())
    data[-1] ^= 0xFF
    payload.write_bytes(bytes(data))
    s0 = _cache.stats()
    with pytest.warns(RuntimeWarning, match=f"discarding .*{payload.name}.*sha256"):
        got = jaxlite.jit(make())(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert counts(s0) == {"compiled": 1, "loaded": 0, "written": 1, "discarded": 1}
    s0 = _cache.stats()
    np.testing.assert_allclose(np.asarray(jaxlite.jit(make())(x)), want, rtol=1e-6)
    assert counts(s0) == {"compiled": 0, "loaded": 1, "written": 0, "discarded": 0}


# ---- the cache off, unusable, unwritable, untrusted ----------------------------------------

@pytest.mark.parametrize("how", ["disabled", "empty dir"])
def test_cache_off_by_config(how, devs, client, tmp_path):
    base = tmp_path / "c"
    enable = how != "disabled"
    where = str(base) if how == "disabled" else ""
    with config._override("jax_compilation_cache_dir", where), \
            config._override("jax_enable_compilation_cache", enable), \
            config._override("jax_persistent_cache_min_compile_time_secs", 0.0):
        assert _cache.cache_dir() is None
        for _ in range(2):
            ex, n = compile_counted(client, devs[0].info)
            assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
            np.testing.assert_array_equal(run(client, ex, devs[0].info),
                                          fresh(client, devs[0].info))
    assert not base.exists()


def _jax_warning(cache_dir: str) -> str:
    """The warning real JAX gives when its cache directory cannot be used."""
    code = textwrap.dedent(f"""
        import warnings
        warnings.simplefilter("always")
        import jax, jax.numpy as jnp
        jax.config.update("jax_compilation_cache_dir", {cache_dir!r})
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = jax.jit(lambda x: x * 2 + 1)(jnp.arange(3.0))
        assert y.tolist() == [1.0, 3.0, 5.0]
        print(w[0].category.__name__ + "|" + str(w[0].message))
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.strip().splitlines()[-1]


def test_a_directory_that_cannot_be_made_warns_as_jax_does(devs, client, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    where = str(blocker / "sub")
    jax_cat, jax_msg = _jax_warning(where).split("|", 1)
    assert jax_cat == "UserWarning"
    head = "Error reading persistent compilation cache entry for "
    assert jax_msg.startswith(head + "'jit_")
    jax_error = jax_msg.split("': ", 1)[1]
    assert jax_error.startswith("NotADirectoryError: ")
    with config._override("jax_compilation_cache_dir", where), \
            config._override("jax_persistent_cache_min_compile_time_secs", 0.0):
        try:
            with pytest.warns(UserWarning) as rec:
                ex, n = compile_counted(client, devs[0].info)
            (w,) = [r for r in rec if "persistent compilation cache" in str(r.message)]
            assert w.category is UserWarning
            # JAX's text, its exception's type and message, naming the module
            assert str(w.message) == head + "'cache_probe': " + jax_error
            assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
            np.testing.assert_array_equal(run(client, ex, devs[0].info),
                                          fresh(client, devs[0].info))
            # once per directory: the next compile says nothing
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                _cache.load_or_compile(client, TEXT, devs[0].info)
        finally:
            _cache._OFF.clear()
    assert blocker.read_text() == "not a directory"


def test_a_failed_write_warns_once_and_results_stay_right(devs, client, cdir, monkeypatch):
    def refuse(path, data):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(cache_files, "replace", refuse)
    with pytest.warns(UserWarning, match="Error writing persistent compilation cache entry "
                                         "for 'cache_probe': PermissionError: .*denied"):
        ex, n = compile_counted(client, devs[0].info)
    assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
    np.testing.assert_array_equal(run(client, ex, devs[0].info), fresh(client, devs[0].info))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex, n = compile_counted(client, devs[0].info)
    assert n["compiled"] == 1 and n["written"] == 0
    assert [p for p in cdir.iterdir() if p.suffix in (".pjrt", ".manifest")] == []


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0,
                    reason="root writes into a read-only directory")
def test_a_read_only_directory_warns_and_results_stay_right(devs, client, cdir):
    cdir.mkdir(parents=True)
    os.chmod(cdir, 0o500)
    try:
        with pytest.warns(UserWarning, match="Error writing persistent compilation cache "
                                             "entry for 'cache_probe': PermissionError"):
            ex, n = compile_counted(client, devs[0].info)
        assert n["compiled"] == 1 and n["written"] == 0
        np.testing.assert_array_equal(run(client, ex, devs[0].info),
                                      fresh(client, devs[0].info))
    finally:
        os.chmod(cdir, 0o700)


@pytest.mark.parametrize("how", ["others may write", "another owner"])
def test_an_untrusted_directory_is_not_used(how, devs, client, cdir):
    if how == "another owner" and (not hasattr(os, "getuid") or os.getuid() != 0):
        pytest.skip("only root can give a directory to another user")
    _cache.load_or_compile(client, TEXT, devs[0].info)     # a sound entry is there
    if how == "others may write":
        os.chmod(cdir, 0o777)
        match = "has mode 0o777: group or others may write it"
    else:
        os.chown(cdir, 12345, -1)
        match = "belongs to uid 12345"
    try:
        with pytest.warns(RuntimeWarning, match="not using the persistent compile cache .*"
                                                + match):
            ex, n = compile_counted(client, devs[0].info)
        assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
        np.testing.assert_array_equal(run(client, ex, devs[0].info),
                                      fresh(client, devs[0].info))
    finally:
        os.chmod(cdir, 0o700)
        if how == "another owner":
            os.chown(cdir, os.getuid(), -1)


# ---- what is written ----------------------------------------------------------------------

def test_min_compile_time_and_entry_size(devs, client, cdir):
    i0 = devs[0].info
    with config._override("jax_persistent_cache_min_compile_time_secs", 1e6):
        ex, n = compile_counted(client, i0)
    assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
    assert not os.path.exists(entry_of(client, i0, cdir)[1])
    with config._override("jax_persistent_cache_min_entry_size_bytes", 1 << 30):
        ex, n = compile_counted(client, i0)
    assert n["written"] == 0
    ex, n = compile_counted(client, i0)          # the test's threshold: 0 s
    assert n == {"compiled": 1, "loaded": 0, "written": 1, "discarded": 0}
    m = json.loads(open(entry_of(client, i0, cdir)[1]).read())
    assert m["module"] == "cache_probe" and m["device"] == {"kind": i0.kind, "id": 0}
    assert m["compile_seconds"] >= 0 and m["payload"]["size"] == os.path.getsize(
        entry_of(client, i0, cdir)[0])
    assert stat_mode(cdir) == 0o700 and stat_mode(entry_of(client, i0, cdir)[0]) == 0o600


def stat_mode(p):
    return os.stat(p).st_mode & 0o777


def test_a_plugin_that_cannot_serialize_is_not_cached(devs, client, cdir, monkeypatch):
    real = client.api.has
    monkeypatch.setattr(client.api, "has",
                        lambda name: name != "Executable_Serialize" and real(name))
    monkeypatch.setattr(_cache, "_UNSUPPORTED", {})
    why = _cache.unsupported(client)
    assert why is not None and "lacks PJRT_Executable_Serialize" in why
    ex, n = compile_counted(client, devs[0].info)
    assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
    np.testing.assert_array_equal(run(client, ex, devs[0].info), fresh(client, devs[0].info))
    assert not cdir.exists() or not any(p.suffix == ".pjrt" for p in cdir.iterdir())


def test_log_compiles_names_the_hit(devs, client, cdir, caplog):
    _cache.load_or_compile(client, TEXT, devs[0].info)
    with caplog.at_level("DEBUG", logger="jaxlite"):
        _cache.load_or_compile(client, TEXT, devs[0].info)
    quiet = [r for r in caplog.records if "Persistent compilation cache hit" in r.message]
    assert [r.levelname for r in quiet] == ["DEBUG"]
    caplog.clear()
    with config._override("jax_log_compiles", True), caplog.at_level("WARNING",
                                                                     logger="jaxlite"):
        _cache.load_or_compile(client, TEXT, devs[0].info)
    (r,) = [r for r in caplog.records if "Persistent compilation cache hit" in r.message]
    key = _cache.entry_key(client, TEXT, _options(devs[0].info), devs[0].info)
    assert r.levelname == "WARNING"
    assert r.getMessage() == f"Persistent compilation cache hit for 'cache_probe' with " \
                             f"key '{key}'"


def test_summary_line(devs, client, cdir, monkeypatch):
    monkeypatch.setattr(_cache, "_STATS", dict.fromkeys(_cache._STATS, 0))
    _cache.load_or_compile(client, TEXT, devs[0].info)
    _cache.load_or_compile(client, TEXT, devs[0].info)
    _cache.load_or_compile(client, TEXT, devs[1].info)
    assert _cache.summary() == (f"PJRT executables: 2 compiled, 1 loaded from the "
                                f"persistent cache ({cdir})")
    with config._override("jax_enable_compilation_cache", False):
        assert _cache.summary().endswith("loaded from the persistent cache (off)")


def test_no_room_to_load_keeps_the_entry(devs, client, cdir, monkeypatch):
    # the device cannot hold the executable now: the entry is sound, so it is kept (the
    # compile that follows reports the device's state), not discarded
    _cache.load_or_compile(client, TEXT, devs[0].info)

    def full(self, data, device=None):
        raise _capi.PjrtOutOfMemory(_capi.RESOURCE_EXHAUSTED, "out of device memory")

    with monkeypatch.context() as m:
        m.setattr(type(client), "deserialize", full)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ex, n = compile_counted(client, devs[0].info)
    assert n == {"compiled": 1, "loaded": 0, "written": 0, "discarded": 0}
    np.testing.assert_array_equal(run(client, ex, devs[0].info), fresh(client, devs[0].info))
    ex, n = compile_counted(client, devs[0].info)
    assert n == {"compiled": 0, "loaded": 1, "written": 0, "discarded": 0}
