"""The PJRT binding (backends/pjrt: _capi, client, backend) on the XLA:CPU plugin.

Everything here runs on the ``xla_cpu`` platform (the ``xla-cpu-pjrt`` plugin, four
devices): the C API declarations against the header the plugin ships, buffers of every
dtype there and back, transfers between its devices and jaxlite's CPU with exact counts
and memory, the transfer guard, deletion, readiness, hand-written StableHLO compiled and
run, XLA's errors, the plugin's optimised HLO and cost analysis, eager operations and jit
on its arrays against the CPU platform, and an allocation no device can hold.
"""
from __future__ import annotations

import ctypes
import gc
import os
import re
import shutil
import subprocess
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

import jaxlite  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite.backends.pjrt import _capi, client as pc, plugins  # noqa: E402
from jaxlite.backends.pjrt import backend as pb  # noqa: E402
from jaxlite.errors import JaxRuntimeError  # noqa: E402
from jaxlite.runtime import backend as rb  # noqa: E402

HEADER = os.path.join(os.path.dirname(__import__("xla_plugins.xla_cpu_pjrt").xla_cpu_pjrt
                                      .__file__), "include", "pjrt_c_api.h")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY = """module @tiny {
  func.func public @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
    %s = stablehlo.add %x, %y : tensor<3xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %r = stablehlo.reduce(%s init: %z) across dimensions = [0]
         : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      reducer(%a: tensor<f32>, %b: tensor<f32>) {
        %t = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %t : tensor<f32>
      }
    return %s, %r : tensor<3xf32>, tensor<f32>
  }
}
"""


@pytest.fixture(scope="module")
def devs():
    d = jaxlite.devices("xla_cpu")
    yield d
    # other modules list the registered platforms: leave the registry as it was found
    if rb.get("xla_cpu") is not None:
        rb.unregister("xla_cpu")


@pytest.fixture
def client(devs):
    return devs[0].backend.client


def used(d):
    return d.memory_stats()["bytes_in_use"]


# ---- the declarations agree with the header ---------------------------------------------

def test_function_table_is_the_headers():
    names = re.findall(r"_PJRT_API_STRUCT_FIELD\(PJRT_(\w+)\)", open(HEADER).read())
    assert list(_capi.API_FUNCTIONS) == names[:len(_capi.API_FUNCTIONS)]
    assert len(names) == len(_capi.API_FUNCTIONS)


STRUCTS = {  # our struct -> the header's struct
    "ErrorMessageArgs": "PJRT_Error_Message_Args", "ErrorGetCodeArgs": "PJRT_Error_GetCode_Args",
    "NamedValue": "PJRT_NamedValue", "ClientCreateArgs": "PJRT_Client_Create_Args",
    "ClientDevicesArgs": "PJRT_Client_AddressableDevices_Args",
    "Program": "PJRT_Program", "ClientCompileArgs": "PJRT_Client_Compile_Args",
    "BufferFromHostArgs": "PJRT_Client_BufferFromHostBuffer_Args",
    "DescriptionAttributesArgs": "PJRT_DeviceDescription_Attributes_Args",
    "DeviceMemoryStatsArgs": "PJRT_Device_MemoryStats_Args",
    "CostAnalysisArgs": "PJRT_Executable_GetCostAnalysis_Args",
    "CompiledMemoryStatsArgs": "PJRT_Executable_GetCompiledMemoryStats_Args",
    "ExecuteOptions": "PJRT_ExecuteOptions", "ExecuteArgs": "PJRT_LoadedExecutable_Execute_Args",
    "BufferDimensionsArgs": "PJRT_Buffer_Dimensions_Args",
    "MemoryLayout": "PJRT_Buffer_MemoryLayout",
    "LayoutTiled": "PJRT_Buffer_MemoryLayout_Tiled", "ToHostArgs": "PJRT_Buffer_ToHostBuffer_Args",
    "CreateUninitializedArgs": "PJRT_Client_CreateUninitializedBuffer_Args",
    "OptimizedProgramArgs": "PJRT_Executable_OptimizedProgram_Args",
    "EventIsReadyArgs": "PJRT_Event_IsReady_Args",
}


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_struct_sizes_are_the_headers(tmp_path):
    # the header's own PJRT_STRUCT_SIZE of each struct, compiled and printed by C
    src = tmp_path / "sizes.c"
    body = "".join(f'  printf("%s %zu\\n", "{ours}", (size_t){theirs}_STRUCT_SIZE);\n'
                   for ours, theirs in STRUCTS.items())
    src.write_text(f'#include <stdio.h>\n#include "{HEADER}"\nint main(void) {{\n{body}'
                   f'  return 0;\n}}\n')
    exe = tmp_path / "sizes"
    subprocess.run(["cc", "-o", str(exe), str(src)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    sizes = dict(line.split() for line in out.splitlines())
    for ours in STRUCTS:
        assert getattr(_capi, ours).SIZE == int(sizes[ours]), ours


def _fake_api(real: _capi.Api, n_functions: int, version=(0, 5)):
    """A PJRT_Api struct of an older plugin: its table holds the first ``n_functions``
    entries of the real one."""
    size = _capi.API_TABLE_OFFSET + 8 * n_functions
    buf = ctypes.create_string_buffer(size)
    ctypes.memmove(buf, real.address, size)
    ctypes.c_size_t.from_buffer(buf, 0).value = size
    ctypes.c_int.from_buffer(buf, 32).value = version[0]
    ctypes.c_int.from_buffer(buf, 36).value = version[1]
    return buf


def test_an_older_plugins_shorter_table_is_a_clear_error(client):
    buf = _fake_api(client.api, 10)
    api = _capi.Api(ctypes.addressof(buf), "the PJRT plugin 'old.so'")
    assert api.version == (0, 5) and api.has("Event_Await") and not api.has("Client_Create")
    with pytest.raises(RuntimeError, match=r"'old.so' implements PJRT C API version 0\.5, "
                                           r"whose function table lacks PJRT_Client_Create"):
        api.fn("Client_Create")
    buf2 = _fake_api(client.api, 10, version=(1, 0))
    with pytest.raises(RuntimeError, match="API version 1.0; jaxlite speaks major version 0"):
        _capi.Api(ctypes.addressof(buf2), "the PJRT plugin 'new.so'")


# ---- the plugin, its client and devices --------------------------------------------------

def test_plugin_client_and_devices(devs, client):
    assert client.plugin.version == (0, 81) and client.platform_name == "cpu"
    attrs = client.plugin.attributes()
    assert attrs["stablehlo_current_version"] >= (1, 0, 0)
    assert pc.Plugin.load(client.plugin.path) is client.plugin          # loaded once
    assert [d.id for d in devs] == [0, 1, 2, 3]
    assert repr(devs) == "[XlaCpuDevice(id=0), XlaCpuDevice(id=1), XlaCpuDevice(id=2), " \
                         "XlaCpuDevice(id=3)]"
    assert str(devs[2]) == "xla_cpu:2" and devs[0].platform == "xla_cpu"
    assert devs[0].device_kind == "cpu" and devs[1].process_index == 0
    assert jaxlite.devices("xla_cpu") == devs and jaxlite.device_count("xla_cpu") == 4
    assert jaxlite.default_backend() == "cpu"        # never the default unless named
    assert client.memory_stats(devs[0].info) is None     # the CPU plugin has none


# ---- buffers ----------------------------------------------------------------------------

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.complex64,
          np.complex128, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4,
          ml_dtypes.uint4]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4), (3, 0, 2)])
def test_buffer_round_trip(client, dtype, shape):
    rng = np.random.default_rng(0)
    a = (rng.integers(0, 3, size=shape) * (1 if np.dtype(dtype).kind != "c" else 1 - 1j))
    a = np.asarray(a).astype(dtype)
    for dev in (client.devices[0], client.devices[3]):
        b = client.buffer_from_numpy(a, dev)
        assert b.shape == shape and b.dtype == np.dtype(dtype)
        got = b.to_numpy()
        assert got.dtype == np.dtype(dtype) and got.shape == shape
        np.testing.assert_array_equal(got, a)
        assert b.device_handle() == dev.handle
        b.delete()
        assert b.is_deleted()
        b.delete()                        # idempotent


@pytest.mark.parametrize("view", ["transposed", "strided", "reversed", "column",
                                  "broadcast", "int4_transposed"])
def test_non_contiguous_host_arrays(client, view):
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    a = {"transposed": base.T, "strided": base[::2, 1::3], "reversed": base[::-1, ::-2],
         "column": base[:, 3], "broadcast": np.broadcast_to(base[:1], (4, 10)),
         "int4_transposed": (base % 7).astype(ml_dtypes.int4).T}[view]
    assert not a.flags.c_contiguous
    got = client.buffer_from_numpy(a, client.devices[1]).to_numpy()
    np.testing.assert_array_equal(got, a)
    assert got.flags.c_contiguous and got.dtype == a.dtype and got.shape == a.shape


def test_results_come_back_at_once_and_block_until_ready_waits(client):
    ex = client.compile(TINY)
    x = client.buffer_from_numpy(np.array([1, 2, 3], np.float32), client.devices[0])
    s, r = ex.execute([x, x], [((3,), np.dtype(np.float32)), ((), np.dtype(np.float32))])
    assert s.block_until_ready() is s and s.is_ready() and r.is_ready()
    np.testing.assert_array_equal(s.to_numpy(), [2, 4, 6])
    assert r.to_numpy() == np.float32(12) and r.to_numpy().shape == ()
    assert x.to_numpy().tolist() == [1, 2, 3]      # not donated: still there
    assert ex.num_outputs == 2


def test_compile_on_another_device_runs_there(client):
    dev = client.devices[2]
    ex = client.compile(TINY, dev)
    x = client.buffer_from_numpy(np.ones(3, np.float32), dev)
    s, _ = ex.execute([x, x], [((3,), np.dtype(np.float32)), ((), np.dtype(np.float32))])
    assert s.device_handle() == dev.handle and s.to_numpy().tolist() == [2, 2, 2]
    assert pc.compile_options(0) == b"\x1a\x04\x20\x01\x28\x01"
    assert pc.compile_options(2) == b"\x1a\x0e\x20\x01\x28\x01\x4a\x08\x08\x01\x10\x01" \
                                    b"\x1a\x02\x08\x02"
    assert pc.compile_options(300)[-3:] == b"\x08\xac\x02"      # a two-byte varint


def test_xla_rejecting_a_module_keeps_its_message(client):
    with pytest.raises(_capi.PjrtError) as e:
        client.compile("module { func.func @main( }")
    assert isinstance(e.value, JaxRuntimeError) and e.value.code_name == "UNKNOWN"
    assert "expected non-function type" in str(e.value) and str(e.value).startswith("UNKNOWN:")
    bad = TINY.replace("-> (tensor<3xf32>, tensor<f32>)", "-> (tensor<4xf32>, tensor<f32>)")
    with pytest.raises(_capi.PjrtError, match="tensor<4xf32>"):
        client.compile(bad)


def test_the_executable_describes_itself(client):
    ex = client.compile(TINY)
    cost = ex.cost_analysis()
    assert cost["flops"] > 0 and cost["bytes accessed"] > 0
    mem = ex.compiled_memory_stats()
    assert mem["argument_size_in_bytes"] == 24 and mem["output_size_in_bytes"] >= 16
    from jaxlite.backends.pjrt._hlo import module_text
    text = module_text(ex.optimized_program()[1], ex.optimized_program()[0])
    assert "ENTRY %main" in text and "parameter(0)" in text and "f32[3]{0}" in text
    assert "ROOT %tuple" in text and "reduce(" in text


def test_run_mlir(client):
    outs = pc.run_mlir(TINY, [np.ones(3, np.float32), np.arange(3, dtype=np.float32)])
    assert [o.tolist() for o in outs] == [[1, 2, 3], 6.0]


# ---- arrays on the platform: transfers, memory, the guard ---------------------------------

def test_device_put_onto_between_and_off_the_platform(devs):
    cpu = jaxlite.devices("cpu")[0]
    host = np.linspace(-1, 1, 256, dtype=np.float32)
    gc.collect()
    u0, u1, uc = used(devs[0]), used(devs[1]), used(cpu)
    jaxlite.transfer_stats(reset=True)
    a = jaxlite.device_put(host, devs[0])
    b = jaxlite.device_put(a, devs[1])
    c = jaxlite.device_put(b, cpu)
    assert type(a._buf.data) is pc.PjrtBuffer and a.device is devs[0] and b.device is devs[1]
    assert (used(devs[0]) - u0, used(devs[1]) - u1, used(cpu) - uc) == (1024, 1024, 1024)
    assert jaxlite.transfer_stats() == {
        ("host", "xla_cpu:0"): {"count": 1, "bytes": 1024},
        ("xla_cpu:0", "xla_cpu:1"): {"count": 1, "bytes": 1024},
        ("xla_cpu:1", "cpu:0"): {"count": 1, "bytes": 1024}}
    np.testing.assert_array_equal(np.asarray(c), host)
    np.testing.assert_array_equal(jaxlite.device_get(b), host)
    assert jaxlite.transfer_stats()[("xla_cpu:1", "host")] == {"count": 1, "bytes": 1024}
    d = jaxlite.device_put(c, devs[3])           # cpu -> xla_cpu
    assert d.device is devs[3] and np.asarray(d).tolist() == host.tolist()
    live = {id(x) for x in jaxlite.live_arrays("xla_cpu")}
    assert {id(a), id(b), id(d)} <= live and id(c) not in live
    del a, b, c, d
    gc.collect()
    assert (used(devs[0]), used(devs[1]), used(cpu)) == (u0, u1, uc)


def test_delete_frees_the_device_buffer(devs):
    x = jaxlite.device_put(np.zeros(1000, np.int32), devs[2])
    native = weakref.ref(x._buf.data)
    u = used(devs[2])
    x.delete()
    assert x.is_deleted() and used(devs[2]) == u - 4000
    assert native() is None                   # the PJRT buffer is gone with it
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="deleted"):
        x.block_until_ready()


def test_transfer_guard_on_device_to_host_reads(devs):
    x = jaxlite.device_put(np.arange(4, dtype=np.float32), devs[0])
    with jaxlite.transfer_guard_device_to_host("disallow"):
        with pytest.raises(RuntimeError, match="Disallowed device-to-host"):
            np.asarray(x)
        with pytest.raises(RuntimeError, match="Disallowed device-to-host"):
            float(x[0])
        np.testing.assert_array_equal(jaxlite.device_get(x), [0, 1, 2, 3])    # explicit
    with jaxlite.transfer_guard("disallow_explicit"):
        with pytest.raises(RuntimeError, match="Disallowed host-to-device"):
            jaxlite.device_put(np.ones(3), devs[0])


def test_a_dtype_pjrt_lacks_is_refused(devs):
    gc.collect()
    u = used(devs[0])
    jaxlite.transfer_stats(reset=True)
    with pytest.raises(TypeError, match="cannot hold arrays of dtype float6_e2m3fn"):
        jaxlite.device_put(np.zeros(3, ml_dtypes.float6_e2m3fn), devs[0])
    assert used(devs[0]) == u and jaxlite.transfer_stats() == {}


def test_block_until_ready_and_results_of_operations(devs):
    with jaxlite.default_device(devs[1]):
        x = jnp.arange(8.0)
        y = jnp.sin(x) * 2 + 1
    assert y.device is devs[1] and type(y._buf.data) is pc.PjrtBuffer
    assert jaxlite.block_until_ready(y) is y
    np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(8.0)) * 2 + 1, rtol=1e-6)
    assert y.dtype == np.float32 and y.shape == (8,)


# ---- eager operations and jit against the CPU platform ----------------------------------

def _both(fn, *args):
    cpu = fn(*[jaxlite.device_put(a, jaxlite.devices("cpu")[0]) for a in args])
    dev = jaxlite.devices("xla_cpu")[0]
    got = fn(*[jaxlite.device_put(a, dev) for a in args])
    return got, cpu


@pytest.mark.parametrize("name,fn", [
    ("add_scalar", lambda x, y: x + 1.5),
    ("matmul", lambda x, y: x @ y.T),
    ("reduce", lambda x, y: (jnp.exp(x) * y).sum(axis=0)),
    ("where", lambda x, y: jnp.where(x > y, x, -y)),
    ("cast", lambda x, y: (x * 100).astype(jnp.int32) // 7),
    ("bf16", lambda x, y: (x.astype(jnp.bfloat16) * y.astype(jnp.bfloat16))),
    ("jit", lambda x, y: jaxlite.jit(lambda a, b: jnp.tanh(a @ b.T).mean(0))(x, y)),
])
def test_eager_and_jit_match_the_cpu(devs, name, fn):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    got, want = _both(fn, x, y)
    assert got.device is devs[0] and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got).astype(np.float64),
                               np.asarray(want).astype(np.float64), rtol=2e-2 if
                               name == "bf16" else 1e-5, atol=1e-6)


def test_eager_executables_are_cached_per_signature(devs):
    b = devs[0].backend
    x = jaxlite.device_put(np.ones(7, np.float32), devs[0])
    x + x
    n = len(b._eager)
    for _ in range(3):
        x + x
    assert len(b._eager) == n                       # compiled once
    x2 = jaxlite.device_put(np.ones(9, np.float32), devs[0])
    x2 + x2
    assert len(b._eager) == n + 1                   # a new shape: one more
    ref = weakref.ref(x2._buf.data)
    del x2
    gc.collect()
    assert ref() is None                            # the cache keeps no operand alive


def test_donation_through_pjrt(devs):
    from jaxlite.backends.pjrt.backend import mark_donors
    sig = ("module { func.func public @main(%arg0: tensor<3xcomplex<f32>>, %arg1: "
           "tensor<f32> {mhlo.x = 1}, %arg2: tensor<2x3xf32>) -> tensor<3xf32> {")
    assert mark_donors(sig, [1, 2]) == (
        "module { func.func public @main(%arg0: tensor<3xcomplex<f32>>, %arg1: "
        "tensor<f32> {mhlo.x = 1, jax.buffer_donor = true}, %arg2: tensor<2x3xf32> "
        "{jax.buffer_donor = true}) -> tensor<3xf32> {")
    d = devs[0]
    ex = d.backend.compile(jaxlite.make_jaxpr(lambda x, y: x * 2 + y)(jnp.ones(3), jnp.ones(3)),
                           [d], "f")
    x = jaxlite.device_put(np.ones(3, np.float32), d)
    y = jaxlite.device_put(np.arange(3, dtype=np.float32), d)
    nx, ny = x._buf.data, y._buf.data
    (out,) = ex.run([nx, ny])                        # nothing donated: both stay
    assert out.to_numpy().tolist() == [2, 3, 4] and not nx.is_deleted()
    (out,) = ex.run([nx, ny], frozenset({0}))        # x consumed by the program
    assert out.to_numpy().tolist() == [2, 3, 4]
    assert nx.is_deleted() and not ny.is_deleted()
    assert ex.run([ny, ny])[0].to_numpy().tolist() == [0, 3, 6] and not ny.is_deleted()


def test_jit_on_the_platform_shows_xlas_program_and_figures(devs):
    def f(a, b):
        return jnp.tanh(a @ b).sum()
    x = jaxlite.device_put(np.ones((8, 8), np.float32), devs[0])
    # compiled for the platform of the arguments (the default is the CPU here)
    assert float(jaxlite.jit(f)(x, x)) == pytest.approx(64 * np.tanh(8.0), rel=1e-6)
    code = ("import jaxlite as jax, jaxlite.numpy as jnp, numpy as np\n"
            "f = jax.jit(lambda a, b: jnp.tanh(a @ b).sum())\n"
            "x = jnp.ones((8, 8))\n"
            "c = f.lower(x, x).compile()\n"
            "print('DEV', x.device, jax.default_backend())\n"
            "print('COST', sorted(c.cost_analysis()))\n"
            "print(c.as_text())\n"
            "print('VAL', float(f(x, x)))\n")
    p = _child(code, JAX_PLATFORMS="xla_cpu")
    assert p.returncode == 0 and "DEV xla_cpu:0 xla_cpu" in p.stdout, p.stdout + p.stderr
    assert "'flops'" in p.stdout and "'bytes accessed'" in p.stdout
    assert "stablehlo.dot_general" in p.stdout                   # the StableHLO given
    assert "HloModule" in p.stdout and "ENTRY %main" in p.stdout   # XLA's optimised HLO
    val = float(re.search(r"VAL (\S+)", p.stdout).group(1))
    assert val == pytest.approx(64 * np.tanh(8.0), rel=1e-5)


def _child(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "JAXLITE_"))}
    e.update(env)
    e["PYTHONPATH"] = os.path.join(ROOT, "src")
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True,
                          text=True, timeout=300)


def test_import_loads_no_plugin_and_the_cpu_stays_the_default():
    code = ("import sys, jaxlite as jax, jaxlite.numpy as jnp\n"
            "x = jnp.ones(3) + 1\n"
            "print('DEFAULT', jax.default_backend(), x.device)\n"
            "print('LOADED', 'jaxlite.backends.pjrt.client' in sys.modules)\n"
            "print(jax.devices('xla_cpu')[1], jax.default_backend())\n")
    p = _child(code)
    assert p.returncode == 0, p.stdout + p.stderr          # exits cleanly, buffers alive
    assert "DEFAULT cpu cpu:0" in p.stdout and "LOADED False" in p.stdout, p.stdout + p.stderr
    assert "xla_cpu:1 cpu" in p.stdout


# ---- memory: an allocation the device cannot hold ----------------------------------------

def test_an_allocation_beyond_the_device_is_resource_exhausted(devs):
    gc.collect()
    u = used(devs[0])
    n = devs[0].backend.bytes_limit // 4 + 1024
    with jaxlite.default_device(devs[0]):
        with pytest.raises(JaxRuntimeError) as e:
            jnp.zeros((n,), jnp.float32)
    msg = str(e.value)
    assert msg.startswith("RESOURCE_EXHAUSTED") and str(n * 4) in msg
    assert f"shape ({n},)" in msg and "xla_cpu:0" in msg
    gc.collect()
    assert used(devs[0]) == u and jaxlite.devices("xla_cpu")[0] is devs[0]


# ---- discovery ---------------------------------------------------------------------------

@pytest.fixture
def clean_env(monkeypatch):
    for var in ("PJRT_NAMES_AND_LIBRARY_PATHS", "TPU_LIBRARY_PATH"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_discovery_finds_the_xla_cpu_entry_point(clean_env):
    found = plugins.discover()
    cpu = [p for p in found if p.platform == "xla_cpu"]
    assert cpu and cpu[0].path.endswith(os.path.join("xla_cpu_pjrt", "xla_cpu_pjrt.so"))
    assert cpu[0].error is None and "xla_plugins" in cpu[0].source
    assert ("xla_cpu_pjrt", "xla_plugins.xla_cpu_pjrt") in plugins.entry_points("xla_plugins")


def test_discovery_precedence_and_bad_entries(clean_env, tmp_path):
    so = tmp_path / "libtpu.so"
    so.write_bytes(b"not a library")
    clean_env.setenv("TPU_LIBRARY_PATH", str(so))
    assert plugins.find("tpu").path == str(so) and plugins.find("tpu").source == \
        "TPU_LIBRARY_PATH"
    other = tmp_path / "other_tpu.so"
    other.write_bytes(b"x")
    clean_env.setenv("PJRT_NAMES_AND_LIBRARY_PATHS", f"tpu:{other},cuda:/no/such.so,broken")
    assert plugins.find("tpu").path == str(other)              # before TPU_LIBRARY_PATH
    cuda = plugins.find("cuda")
    assert cuda.error == "'/no/such.so' does not exist or is not a file"
    assert [p.error for p in plugins.discover() if "broken" in p.source] == \
        ["an entry must be NAME:PATH"]
    with jaxlite.config._override("jaxlite_pjrt_plugin", f"tpu:{so}"):
        assert plugins.find("tpu").source.startswith("config jaxlite_pjrt_plugin")
    assert plugins.parse_plugin_option("/opt/lib/libtpu.so") == ("tpu", "/opt/lib/libtpu.so")
    assert plugins.parse_plugin_option("xla_cpu:/a/b.so") == ("xla_cpu", "/a/b.so")
    with pytest.raises(ValueError, match="cannot tell the platform"):
        plugins.parse_plugin_option("/opt/lib/mystery.so")
    with pytest.raises(ValueError, match="jaxlite_pjrt_plugin"):
        jaxlite.config.update("jaxlite_pjrt_plugin", "  ")
    with pytest.raises(ValueError, match="jaxlite_pjrt_plugin"):
        jaxlite.config.update("jaxlite_pjrt_plugin", 3)


def test_entry_points_of_a_plugin_package_are_found_without_importing_it(clean_env,
                                                                         tmp_path):
    pkg = tmp_path / "fakeplug_ns" / "fake_rocm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    (pkg / "fake_rocm.so").write_bytes(b"x")
    info = tmp_path / "fake_rocm_pjrt-1.0.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[jax_plugins]\nxla_rocm = fakeplug_ns.fake_rocm\n")
    clean_env.syspath_prepend(str(tmp_path))
    p = plugins.find("rocm")
    assert p.path == str(pkg / "fake_rocm.so") and p.error is None
    assert "fakeplug_ns.fake_rocm" not in sys.modules


@pytest.fixture
def fresh_provider(monkeypatch, clean_env):
    """A provider that knows no backend yet (each test's plugins are its own)."""
    monkeypatch.setattr(pb, "PROVIDER", pb._Provider())
    yield monkeypatch
    for name in ("tpu", "cuda"):
        if rb.get(name) is not None:
            rb.unregister(name)


def test_no_plugin_installed_names_the_package(fresh_provider):
    fresh_provider.setattr(plugins, "discover", lambda: [])
    with pytest.raises(RuntimeError) as e:
        jaxlite.devices("tpu")
    msg = str(e.value)
    assert msg.startswith("Unknown backend 'tpu'. Available backends are [")
    assert "pip install jaxlite[tpu]" in msg and "libtpu" in msg
    with pytest.raises(RuntimeError, match=r"pip install jaxlite\[cuda\]"):
        jaxlite.devices("gpu")


@pytest.mark.parametrize("what", ["text file", "libc", "missing"])
def test_a_plugin_that_is_not_one_fails_clearly(fresh_provider, tmp_path, what):
    if what == "text file":
        path = tmp_path / "libtpu.so"
        path.write_text("hello")
        cause = "could not be loaded as a PJRT plugin"
    elif what == "libc":
        path = "/lib/x86_64-linux-gnu/libc.so.6"
        if not os.path.exists(path):
            pytest.skip("no libc at the usual path")
        cause = "is not a PJRT plugin: it has no GetPjrtApi"
    else:
        path = tmp_path / "nothing" / "libtpu.so"
        cause = "does not exist"
    fresh_provider.setenv("TPU_LIBRARY_PATH", str(path))
    with pytest.raises(RuntimeError) as e:
        jaxlite.devices("tpu")
    msg = str(e.value)
    assert msg.startswith("Backend 'tpu' failed to initialize: ") or \
        msg.startswith("Unknown backend 'tpu'"), msg
    assert cause in msg and str(path) in msg, msg
    with pytest.raises(RuntimeError, match=re.escape(cause)):   # remembered: no retry
        jaxlite.devices("tpu")
    assert rb.get("tpu") is None


def test_a_platform_that_cannot_start_falls_back_to_the_cpu(tmp_path):
    bad = tmp_path / "libtpu.so"
    bad.write_text("not a library")
    code = ("import warnings, jaxlite as jax, jaxlite.numpy as jnp\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    print('DEFAULT', jax.default_backend(), (jnp.ones(2) + 1).device)\n"
            "print('WARN', [str(x.message) for x in w])\n")
    p = _child(code, TPU_LIBRARY_PATH=str(bad))
    assert "DEFAULT cpu cpu:0" in p.stdout, p.stdout + p.stderr
    assert "Unable to initialize backend 'tpu'" in p.stdout and "Falling back" in p.stdout
    p = _child("import jaxlite as jax\ntry:\n    jax.devices()\nexcept RuntimeError as e:\n"
               "    print('RE', e)\n", TPU_LIBRARY_PATH=str(bad), JAX_PLATFORMS="tpu")
    assert p.stdout.startswith("RE Unable to initialize backend 'tpu': ") and \
        "could not be loaded as a PJRT plugin" in p.stdout, p.stdout + p.stderr


def test_a_plugin_that_hangs_is_reported_not_waited_for(fresh_provider, tmp_path):
    import threading
    release = threading.Event()

    class Stuck:                      # a client whose creation never returns on its own
        def __init__(self, *a, **k):
            release.wait(30)
            raise RuntimeError("released")
    so = tmp_path / "libtpu.so"
    so.write_bytes(b"x")
    fresh_provider.setenv("TPU_LIBRARY_PATH", str(so))
    fresh_provider.setattr(pb, "Client", Stuck)
    fresh_provider.setattr(pb.Plugin, "load", classmethod(lambda cls, path: None))
    fresh_provider.setattr(pb, "START_TIMEOUT", 0.5)
    try:
        with pytest.raises(RuntimeError, match=r"did not start within 0.5 s"):
            jaxlite.devices("tpu")
    finally:
        release.set()
    assert rb.get("tpu") is None


def test_an_accelerator_whose_client_starts_becomes_the_default(devs):
    # the XLA:CPU plugin standing in for libtpu: found through TPU_LIBRARY_PATH, started by
    # the first operation, and its first device is the default device
    so = devs[0].backend.info.path
    code = ("import sys, jaxlite as jax, jaxlite.numpy as jnp\n"
            "print('LOADED', 'jaxlite.backends.pjrt.client' in sys.modules)\n"
            "x = jnp.arange(3.0) * 2\n"
            "print('DEFAULT', jax.default_backend(), x.device.platform, x.device.id,\n"
            "      type(x._buf.data).__name__, x.tolist())\n"
            "print('CPU', jax.devices('cpu'))\n")
    p = _child(code, TPU_LIBRARY_PATH=so)
    assert "LOADED False" in p.stdout, p.stdout + p.stderr
    assert "DEFAULT tpu tpu 0 PjrtBuffer [0.0, 2.0, 4.0]" in p.stdout, p.stdout + p.stderr
    assert "CPU [CpuDevice(id=0)]" in p.stdout
    p = _child(code, TPU_LIBRARY_PATH=so, JAX_PLATFORMS="cpu")     # not asked for: unused
    assert "DEFAULT cpu cpu 0 ndarray" in p.stdout, p.stdout + p.stderr


def test_client_create_options_reach_the_plugin(client):
    two = pc.Client(client.plugin, {"cpu_device_count": 2})     # the XLA:CPU plugin's option
    assert [d.id for d in two.devices] == [0, 1]
    b = two.buffer_from_numpy(np.arange(4, dtype=np.int32), two.devices[1])
    assert b.to_numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="PJRT client option 'x'"):
        pc.Client(client.plugin, {"x": object()})


def test_resource_exhausted_is_a_memory_error_the_runtime_words_as_jax():
    from jaxlite.runtime.buffer import memory_error
    e = _capi.error_class(8)(8, "Out of memory while trying to allocate 4.00G")
    assert isinstance(e, MemoryError) and isinstance(e, JaxRuntimeError)
    assert str(e) == "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.00G"
    e.shape, e.dtype = (2, 3), np.dtype(np.float32)
    dev = jaxlite.devices("cpu")[0]
    err = memory_error(e, dev, "add")
    assert str(err).startswith("RESOURCE_EXHAUSTED: Out of memory allocating 24 bytes for an "
                               "array of shape (2, 3) and dtype float32 on cpu:0 in add")
    assert type(_capi.error_class(3)(3, "bad")) is _capi.PjrtError


def test_a_module_xla_rejects_shows_the_lines_it_names(devs, monkeypatch):
    class Lowered:
        in_avals = out_avals = ()
        text = ('module @f {\n  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n'
                '    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> '
                'tensor<4xf32> loc("add")\n'
                '    "func.return"(%0) : (tensor<4xf32>) -> ()\n  }\n}\n')
    monkeypatch.setattr(pb, "_lower_module", lambda program, name, platform: Lowered())
    with pytest.raises(_capi.PjrtError) as e:
        devs[0].backend.compile(None, [devs[0]], "f")
    msg = str(e.value)
    assert msg.startswith("UNKNOWN: XLA rejected the program 'f': ") and "error:" in msg
    assert "The StableHLO lines it names:" in msg
    assert '3 |     %0 = "stablehlo.add"' in msg and 'loc("add")' in msg


def test_placement_rules_on_the_platform(devs):
    a = jaxlite.device_put(np.ones(3, np.float32), devs[0])
    b = jaxlite.device_put(np.ones(3, np.float32), devs[1])
    with pytest.raises(ValueError, match="different devices"):
        a + b
    u = jnp.arange(3.0)                                 # uncommitted, on the CPU
    jaxlite.transfer_stats(reset=True)
    c = a + u                                           # follows the committed one
    assert c.device is devs[0] and c.tolist() == [1.0, 2.0, 3.0]
    assert jaxlite.transfer_stats()[("cpu:0", "xla_cpu:0")] == {"count": 1, "bytes": 12}
