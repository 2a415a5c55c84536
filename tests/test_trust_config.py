"""Issue 33, configuration: every ``JAX_*``/``JAXLITE_*`` variable and ``config.update``
value is parsed strictly and refused naming the variable and the value; platforms that are
not present raise at first use; ``jax_num_cpu_devices`` < 1 is refused; tracer-leak
checking and ``jax_check_static_indices`` behave as in JAX; every JAX 0.10 config option
exists (acting) or is refused with a message saying jaxlite does not support it.

Each case is compared with real JAX 0.10.2 (the oracle).  Environment variables are read at
import, so those cases run in a child process (``sys.executable -c``) that imports jaxlite
and JAX one after the other under the same environment and reports what each did.
"""
from __future__ import annotations

import enum
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.config import _env_bool
from jaxlite._unsupported_options import JAX_DEFAULTS

# ---- environment variables, in a child process -------------------------------------------

_CHILD = r"""
import json, sys
out = {}
for name in ("jaxlite", "jax"):
    r = {}
    try:
        mod = __import__(name)
        jnp = __import__(name + ".numpy", fromlist=["ones"])
        r["import"] = "ok"
    except Exception as e:
        r["import"] = f"{type(e).__name__}: {e}"
        out[name] = r
        continue
    for what, fn in (("devices", lambda: [str(d) for d in mod.devices()]),
                     ("ones", lambda: jnp.ones(2).tolist())):
        try:
            r[what] = fn()
        except Exception as e:
            r[what] = f"{type(e).__name__}: {e}"
    r["config"] = {k: repr(getattr(mod.config, k)) for k in sys.argv[1:]}
    out[name] = r
print(json.dumps(out))
"""


def _child(env: dict, *read) -> dict:
    """What importing jaxlite and JAX does under ``env`` (JAX_*/JAXLITE_* variables of this
    process removed first; JAX_PLATFORMS=cpu unless ``env`` says otherwise)."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("JAX_", "JAXLITE_"))}
    full["JAX_PLATFORMS"] = "cpu"
    full.update(env)
    p = subprocess.run([sys.executable, "-c", _CHILD, *read], env=full, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("var,value", [
    ("JAX_ENABLE_X64", "maybe"), ("JAX_ENABLE_X64", ""), ("JAX_ENABLE_X64", " true"),
    ("JAX_DEBUG_NANS", "banana"), ("JAX_LOG_COMPILES", "2"),
])
def test_bad_boolean_variable_refused_at_import_like_jax(var, value):
    r = _child({var: value})
    for name in ("jaxlite", "jax"):
        msg = r[name]["import"]
        assert msg.startswith("ValueError: invalid truth value"), (name, msg)
        assert repr(var) in msg and repr(value.lower()) in msg, (name, msg)


@pytest.mark.parametrize("var", ["JAXLITE_FUSION", "JAXLITE_TIERED", "JAXLITE_ASYNC",
                                 "JAXLITE_NATIVE_OPS", "JAXLITE_ENABLE_CHECKS"])
def test_bad_jaxlite_boolean_variable_refused_at_import(var):
    # no JAX counterpart: refused at import as JAX refuses its own, naming the variable
    msg = _child({var: "banana"})["jaxlite"]["import"]
    assert msg.startswith("ValueError: invalid truth value 'banana'") and repr(var) in msg


def test_boolean_spellings_match_jax(monkeypatch, rjax):
    from jax._src.config import bool_env
    for text in ["1", "0", "true", "TRUE", "True", "false", "t", "F", "y", "Yes", "no", "N",
                 "on", "OFF", "maybe", "", " 1", "2", "-1", "yes ", "nope", "enabled"]:
        monkeypatch.setenv("JAX_TRUST_PROBE", text)
        for default in (False, True):
            try:
                want = bool_env("JAX_TRUST_PROBE", default)
            except ValueError as e:
                with pytest.raises(ValueError) as mine:
                    _env_bool("JAX_TRUST_PROBE", default)
                assert str(mine.value).startswith(str(e)), (text, str(mine.value), str(e))
            else:
                assert _env_bool("JAX_TRUST_PROBE", default) is want, text


@pytest.mark.parametrize("var,value,flag", [
    ("JAX_NUM_CPU_DEVICES", "abc", "jax_num_cpu_devices"),
    ("JAX_NUM_CPU_DEVICES", "", "jax_num_cpu_devices"),
    ("JAX_NUM_CPU_DEVICES", "1.5", "jax_num_cpu_devices"),
    ("JAX_TRANSFER_GUARD", "banana", "jax_transfer_guard"),
    ("JAX_TRANSFER_GUARD", "", "jax_transfer_guard"),
    ("JAX_TRANSFER_GUARD_HOST_TO_DEVICE", "Allow", "jax_transfer_guard_host_to_device"),
    ("JAX_DEFAULT_MATMUL_PRECISION", "banana", "jax_default_matmul_precision"),
    ("JAX_NUMPY_RANK_PROMOTION", "banana", "jax_numpy_rank_promotion"),
    ("JAX_TRACEBACK_FILTERING", "banana", "jax_traceback_filtering"),
])
def test_bad_int_or_enum_variable_refused_at_import_like_jax(var, value, flag):
    r = _child({var: value})
    want = f'ValueError: Invalid value "{value}" for JAX flag {flag}'
    assert r["jax"]["import"].startswith(want), r["jax"]
    assert r["jaxlite"]["import"].startswith(want), r["jaxlite"]
    assert var in r["jaxlite"]["import"]


@pytest.mark.parametrize("var,value", [
    ("JAXLITE_TIER_UP_CALLS", "abc"), ("JAXLITE_TIER_UP_CALLS", "0"),
    ("JAXLITE_ASYNC_MIN_COST", "lots"), ("JAXLITE_COLLECTIVE_TIMEOUT", "soon"),
    ("JAXLITE_COLLECTIVE_TIMEOUT", "-1"), ("JAXLITE_BUFFER_POOL_BYTES", "-5"),
])
def test_bad_jaxlite_number_variable_refused_at_import(var, value):
    msg = _child({var: value})["jaxlite"]["import"]
    assert msg.startswith("ValueError") and var in msg and repr(value)[1:-1] in msg, msg


@pytest.mark.parametrize("value", ["0", "-3"])
def test_num_cpu_devices_below_one_refused(value):
    r = _child({"JAX_NUM_CPU_DEVICES": value})
    msg = r["jaxlite"]["import"]
    assert msg.startswith(f'ValueError: Invalid value "{value}" for JAX flag '
                          f'jax_num_cpu_devices'), msg
    assert "JAX_NUM_CPU_DEVICES" in msg
    # JAX: 0 devices fail at first use; -3 is read as its default (-1).  jaxlite refuses
    # both up front (README, Known differences).
    if value == "0":
        assert r["jax"]["devices"].startswith("RuntimeError"), r["jax"]


def test_variables_jax_accepts_are_read_alike():
    read = ("jax_enable_x64", "jax_num_cpu_devices", "jax_transfer_guard",
            "jax_default_matmul_precision", "jax_debug_nans")
    r = _child({"JAX_ENABLE_X64": "Yes", "JAX_NUM_CPU_DEVICES": " 2",
                "JAX_TRANSFER_GUARD": "log", "JAX_DEFAULT_MATMUL_PRECISION": "highest",
                "JAX_DEBUG_NANS": "off"}, *read)
    assert r["jaxlite"]["config"] == r["jax"]["config"]
    assert len(r["jaxlite"]["devices"]) == len(r["jax"]["devices"]) == 2


@pytest.mark.parametrize("platforms", ["tpu", "banana", "tpu,cpu", "cpu,tpu", "CPU",
                                       "cpu, tpu", "gpu", "cuda", "rocm"])
def test_absent_platform_raises_at_first_use_like_jax(platforms):
    r = _child({"JAX_PLATFORMS": platforms}, "jax_platforms")
    for name in ("jaxlite", "jax"):
        assert r[name]["import"] == "ok", r[name]          # the import itself works
        assert r[name]["config"]["jax_platforms"] == repr(platforms)
    mine = r["jaxlite"]
    for what in ("devices", "ones"):                        # both first uses raise
        assert mine[what].startswith("RuntimeError: Unable to initialize backend '"), mine
        assert "(set JAX_PLATFORMS='' to automatically choose an available backend)" \
            in mine[what]
        if what == "ones" and platforms.startswith("cpu,"):
            continue    # JAX: once cpu came up before the failure, later uses go on with it
        theirs = r["jax"][what]
        assert isinstance(theirs, str) and theirs.split(":")[0] in ("RuntimeError",
                                                                    "AssertionError"), theirs
        if theirs.startswith("RuntimeError: Unable to initialize backend '") and \
                platforms not in ("gpu",):
            # the same platform named (JAX's 'gpu' names its last candidate, rocm)
            assert mine[what].split(":")[1] == theirs.split(":")[1], (mine, theirs)


@pytest.mark.parametrize("platforms", ["cpu", ""])
def test_present_platforms_work(platforms):
    r = _child({"JAX_PLATFORMS": platforms})
    for name in ("jaxlite", "jax"):
        assert r[name]["ones"] == [1.0, 1.0] and len(r[name]["devices"]) == 1, r[name]


def test_unsupported_option_variable():
    r = _child({"JAX_SCAN3": "1"})
    msg = r["jaxlite"]["import"]
    assert msg.startswith("ValueError: jaxlite does not support the config option "
                          "jax_scan3 (environment variable JAX_SCAN3)"), msg
    assert r["jax"]["import"] == "ok"
    r = _child({"JAX_SCAN3": "0", "JAX_THREEFRY_PARTITIONABLE": "true"}, "jax_scan3",
               "jax_threefry_partitionable")          # JAX's defaults: accepted
    assert r["jaxlite"]["import"] == "ok" and r["jaxlite"]["config"] == r["jax"]["config"]


# ---- config.update ------------------------------------------------------------------------

@pytest.fixture
def restore():
    """Puts back every jaxlite and JAX option a test changed."""
    import jax
    mine, theirs = dict(jaxlite.config.values()), {
        n: h.value for n, h in jax.config._value_holders.items()}
    yield
    for n, v in mine.items():
        if jaxlite.config.read(n) != v:
            jaxlite.config._set(n, v)
    for n, v in theirs.items():
        if jax.config._value_holders[n].value != v:
            jax.config.update(n, v)


def _outcome(cfg, name, value):
    try:
        cfg.update(name, value)
    except Exception as e:   # noqa: BLE001 - the type is what is compared
        return type(e), str(e)
    return None, getattr(cfg, name)


@pytest.mark.parametrize("name,value", [
    ("jax_num_cpu_devices", "2"), ("jax_num_cpu_devices", 2.0),
    ("jax_num_cpu_devices", np.int64(2)), ("jax_transfer_guard", "banana"),
    ("jax_transfer_guard", 1), ("jax_default_matmul_precision", "HIGHEST"),
    ("jax_default_matmul_precision", "fastest"), ("jax_numpy_rank_promotion", None),
    ("jax_numpy_rank_promotion", "banana"), ("jax_traceback_filtering", "banana"),
    ("jax_platforms", 3), ("jax_compilation_cache_dir", 3), ("jax_default_device", 3),
])
def test_update_refuses_like_jax(rjax, restore, name, value):
    mine, theirs = _outcome(jaxlite.config, name, value), _outcome(rjax.config, name, value)
    assert theirs[0] is ValueError, theirs
    assert mine[0] is ValueError, mine
    assert name in mine[1] and str(value) in mine[1], mine


@pytest.mark.parametrize("name,value,want", [
    ("jax_enable_x64", True, True), ("jax_enable_x64", 1, True), ("jax_enable_x64", 0, False),
    ("jax_enable_x64", np.bool_(True), True), ("jax_debug_nans", False, False),
    ("jax_transfer_guard", "log", "log"), ("jax_transfer_guard", None, None),
    ("jax_default_matmul_precision", "highest", "highest"),
    ("jax_default_matmul_precision", "bfloat16", "bfloat16"),
    ("jax_default_matmul_precision", None, None),
    ("jax_numpy_rank_promotion", "allow", "allow"),
    ("jax_traceback_filtering", "off", "off"), ("jax_check_static_indices", True, True),
    ("jax_check_tracer_leaks", True, True), ("jax_compilation_cache_dir", None, None),
])
def test_update_accepts_like_jax(rjax, restore, name, value, want):
    assert _outcome(rjax.config, name, value) == (None, want)
    assert _outcome(jaxlite.config, name, value) == (None, want)


@pytest.mark.parametrize("value", ["false", "maybe", "True", 2, 1.5, None, [], -1])
def test_update_bool_refuses_what_is_not_a_boolean(rjax, restore, value):
    # JAX stores bool(value): "false" would read as True.  jaxlite takes True/False/0/1 only
    # (README, Known differences) and says which option and which value it refused.
    old = jaxlite.config.jax_debug_infs
    with pytest.raises(ValueError) as e:
        jaxlite.config.update("jax_debug_infs", value)
    assert "jax_debug_infs" in str(e.value) and repr(value) in str(e.value)
    assert jaxlite.config.jax_debug_infs is old        # left as it was


@pytest.mark.parametrize("value", [0, -3, -1000])
def test_update_num_cpu_devices_below_one_refused(restore, value):
    with pytest.raises(ValueError, match=f"jax_num_cpu_devices.*got {value}"):
        jaxlite.config.update("jax_num_cpu_devices", value)


def test_num_cpu_devices_after_devices_exist_like_jax(rjax, restore):
    jaxlite.devices()
    rjax.devices()
    for mod in (jaxlite, rjax):
        with pytest.raises(RuntimeError, match="jax_num_cpu_devices config should be updated "
                                               "before backends are initialized"):
            mod.config.update("jax_num_cpu_devices", 4)
        mod.config.update("jax_num_cpu_devices", mod.config.jax_num_cpu_devices)  # same: ok


def test_update_platforms_then_first_use_raises(restore):
    # a fresh jaxlite process: set after import, before any operation
    code = ("import jaxlite as jax, jaxlite.numpy as jnp\n"
            "jax.config.update('jax_platforms', 'tpu')\n"
            "try:\n    jnp.ones(2)\nexcept RuntimeError as e:\n    print('RE', e)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "JAXLITE_"))}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.stdout.startswith("RE Unable to initialize backend 'tpu'"), p.stdout + p.stderr


@pytest.mark.parametrize("backend,want", [
    ("gpu", "Unknown backend: 'gpu' requested, but no platforms that are instances of gpu "
            "are present. Platforms present are: cpu"),
    ("tpu", "Unknown backend 'tpu'. Available backends are ['cpu']"),
    ("banana", "Unknown backend 'banana'. Available backends are ['cpu']"),
])
def test_devices_of_absent_platform(rjax, backend, want):
    with pytest.raises(RuntimeError) as mine:
        jaxlite.devices(backend)
    # the platforms present are those of this process: a PJRT platform (xla_cpu) started
    # by an earlier test of the same process is one of them, after the CPU
    from jaxlite.runtime.backend import registered
    names = [b.platform for b in registered()]
    want = want.replace("are: cpu", "are: " + ",".join(names)).replace(
        "['cpu']", repr(names))
    with pytest.raises(RuntimeError) as theirs:
        rjax.devices(backend)
    # JAX's words, then (for a platform a PJRT plugin provides) the package to install
    hint = {"gpu": ". No GPU PJRT plugin is installed: install it with `pip install "
                   "jaxlite[cuda]` (the jax-cuda12-pjrt package).",
            "tpu": ". No TPU PJRT plugin is installed: install it with `pip install "
                   "jaxlite[tpu]` (the libtpu package), or set TPU_LIBRARY_PATH to "
                   "libtpu.so."}.get(backend, "")
    assert str(mine.value) == want + hint
    assert str(theirs.value).replace("'", "").startswith(want.replace("'", "")[:30])


# ---- every JAX option: accepted and acting, or refused as unsupported ---------------------

def _jax_options():
    import jax
    return dict(jax.config._value_holders)


def _plain(v):
    return v.name.lower() if isinstance(v, enum.Enum) else v


def _other_value(d):
    if isinstance(d, bool):
        return not d
    if isinstance(d, (int, float)):
        return d + 1
    return "x" if d is None else d + "x"


def test_every_jax_option_is_covered(rjax):
    implemented = {n for n in jaxlite.config.values() if not n.startswith("jaxlite_")}
    jax_names = set(_jax_options())
    assert implemented <= jax_names, implemented - jax_names
    assert set(JAX_DEFAULTS) == jax_names - implemented
    for name, holder in _jax_options().items():
        if name in JAX_DEFAULTS:
            assert JAX_DEFAULTS[name] == _plain(holder.value), name


@pytest.mark.parametrize("name", sorted(JAX_DEFAULTS))
def test_unsupported_option_accepts_its_default_only(rjax, restore, name):
    d = JAX_DEFAULTS[name]
    jaxlite.config.update(name, d)                       # JAX's default: what jaxlite does
    assert jaxlite.config.read(name) == d
    assert getattr(jaxlite.config, name) == d
    with pytest.raises(ValueError, match=f"jaxlite does not support the config option "
                                         f"{name}"):
        jaxlite.config.update(name, _other_value(d))
    assert jaxlite.config.read(name) == d


@pytest.mark.parametrize("name", sorted(n for n in jaxlite.config.values()
                                        if not n.startswith("jaxlite_")))
def test_implemented_option_round_trips_jax_default(rjax, restore, name):
    holder = _jax_options()[name]
    d = _plain(holder.value)
    if name == "jax_num_cpu_devices":
        d = jaxlite.config.jax_num_cpu_devices           # fixed once devices exist
    if name in ("jax_platforms", "jax_compilation_cache_dir"):
        d = jaxlite.config.read(name)                   # set by this test run
    jaxlite.config.update(name, d)
    assert jaxlite.config.read(name) == d


@pytest.mark.parametrize("value", ["warn", "raise"])
def test_rank_promotion_other_than_allow_refused(restore, value):
    with pytest.raises(ValueError, match="jaxlite does not support jax_numpy_rank_promotion"):
        jaxlite.config.update("jax_numpy_rank_promotion", value)
    assert jaxlite.config.jax_numpy_rank_promotion == "allow"


def test_unknown_option(rjax):
    for cfg in (jaxlite.config, rjax.config):
        with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such"):
            cfg.update("jax_no_such", 1)


# ---- tracer leaks ---------------------------------------------------------------------------

def _leak_outcome(mod, np_mod, how, checking=True):
    leak = []

    def f(x):
        leak.append(x)
        return x + 1

    def run():
        if how == "jit":
            mod.jit(f)(1.0)
        elif how == "make_jaxpr":
            mod.make_jaxpr(f)(1.0)
        elif how == "vmap":
            mod.vmap(f)(np_mod.ones(3))
        else:
            mod.grad(f)(1.0)
    try:
        if checking:
            with mod.checking_leaks():
                run()
        else:
            run()
    except Exception as e:   # noqa: BLE001 - JAX raises a bare Exception
        return type(e), str(e)
    return None, ""


@pytest.mark.parametrize("how", ["jit", "make_jaxpr", "vmap", "grad"])
def test_leaked_tracer_reported_like_jax(rjax, rjnp, how):
    theirs = _leak_outcome(rjax, rjnp, how)
    mine = _leak_outcome(jaxlite, jnp, how)
    assert mine[0] is theirs[0], (mine, theirs)
    if theirs[0] is not None:
        assert mine[0] is Exception
        assert mine[1].startswith("Leaked trace ") and "Leaked tracer(s):" in mine[1]
        assert "is referred to by" in mine[1] and "f32[]" in mine[1]


@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_leak_not_reported_when_off(rjax, rjnp, how):
    assert _leak_outcome(jaxlite, jnp, how, checking=False) == (None, "")
    assert _leak_outcome(rjax, rjnp, how, checking=False) == (None, "")


def test_no_leak_no_report(rjax, restore):
    jaxlite.config.update("jax_check_tracer_leaks", True)
    keep = []

    def f(x):
        y = x * 2
        keep.append(y.shape)            # static data: no tracer kept
        return jnp.sin(y) + x

    np.testing.assert_allclose(jaxlite.jit(f)(1.0), np.sin(2.0) + 1, rtol=1e-6)
    np.testing.assert_allclose(jaxlite.vmap(f)(jnp.ones(2)), [np.sin(2.0) + 1] * 2, rtol=1e-6)
    jaxlite.make_jaxpr(f)(1.0)
    assert keep == [(), (), ()]


def test_check_tracer_leaks_flag(rjax, restore):
    for mod in (jaxlite, rjax):
        mod.config.update("jax_check_tracer_leaks", True)
        leak = []
        with pytest.raises(Exception, match="Leaked trace"):
            mod.jit(lambda x: leak.append(x) or x)(3.0)


# ---- jax_check_static_indices --------------------------------------------------------------

_X = np.arange(12.0, dtype=np.float32).reshape(3, 4)
_INDEX_CASES = {
    "x[5]": lambda m, x: x[5], "x[-4]": lambda m, x: x[-4], "x[-3]": lambda m, x: x[-3],
    "x[1,7]": lambda m, x: x[1, 7], "x[:,4]": lambda m, x: x[:, 4],
    "x[:,-5]": lambda m, x: x[:, -5], "x[1:10]": lambda m, x: x[1:10],
    "x[np.int32(5)]": lambda m, x: x[np.int32(5)], "x[np.array(5)]": lambda m, x: x[np.array(5)],
    "x[None,5]": lambda m, x: x[None, 5], "x[...,4]": lambda m, x: x[..., 4],
    "x[0][4]": lambda m, x: x[0][4], "x[2,3]": lambda m, x: x[2, 3],
    "jit x[5]": lambda m, x: m.jit(lambda a: a[5])(x),
    "jit x[i] traced": lambda m, x: m.jit(lambda a, i: a[i])(x, 5),
    "at[5].get()": lambda m, x: x.at[5].get(),
    "at[5].get(mode=fill)": lambda m, x: x.at[5].get(mode="fill"),
    "at[5].get(mode=clip)": lambda m, x: x.at[5].get(mode="clip"),
    "at[5].set": lambda m, x: x.at[5].set(0.0), "at[5].add": lambda m, x: x.at[5].add(1.0),
}


def _index_outcome(mod, np_mod, case):
    try:
        return None, np.asarray(_INDEX_CASES[case](mod, np_mod.asarray(_X)))
    except IndexError as e:
        return IndexError, str(e)


@pytest.mark.parametrize("on", [False, True])
@pytest.mark.parametrize("case", sorted(_INDEX_CASES))
def test_check_static_indices_like_jax(rjax, rjnp, restore, case, on):
    jaxlite.config.update("jax_check_static_indices", on)
    rjax.config.update("jax_check_static_indices", on)
    mine, theirs = _index_outcome(jaxlite, jnp, case), _index_outcome(rjax, rjnp, case)
    assert mine[0] is theirs[0], (case, mine, theirs)
    if theirs[0] is IndexError:
        # "index 5 out of bounds for axis 0 with size 3": the index, its axis and size
        assert mine[1].startswith(theirs[1].split(" (")[0]), (mine[1], theirs[1])
    else:
        np.testing.assert_array_equal(mine[1], theirs[1])


def test_check_static_indices_changes_the_jit_cache_key(rjax, restore):
    f = jaxlite.jit(lambda a: a[7])
    x = jnp.arange(3.0)
    assert float(f(x)) == 2.0                        # clamped, as JAX without the check
    jaxlite.config.update("jax_check_static_indices", True)
    with pytest.raises(IndexError, match="index 7 out of bounds for axis 0 with size 3"):
        f(x)                                         # traced again, not the cached program
