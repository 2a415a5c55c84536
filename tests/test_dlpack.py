"""jaxlite.dlpack and jnp.from_dlpack against real JAX: dtypes (canonicalised as JAX),
shapes, committed results, the producers NumPy/JAX/jaxlite, copy semantics, devices and
the errors for things that are not DLPack producers; is_supported_dtype; and the
Array.__dlpack__/__dlpack_device__ export."""
from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import dlpack

HOST = [np.arange(3.0), np.arange(3, dtype=np.float32), np.arange(3),
        np.arange(3, dtype=np.uint64), np.arange(3, dtype=np.complex128),
        np.array([True, False]), np.arange(3, dtype=np.float16),
        np.arange(6, dtype=np.int8).reshape(2, 3), np.arange(6, dtype=np.uint16).reshape(3, 2),
        np.arange(6, dtype=np.float32).reshape(2, 3).T, np.array(3.5, np.float32),
        np.zeros((0, 3), np.float32), np.array([np.nan, -np.inf, -0.0], np.float32)]


def _same(got, want):
    assert isinstance(got, jaxlite.Array)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.weak_type == want.weak_type and got.committed == want.committed
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("k", range(len(HOST)))
def test_from_numpy(k, rjax, rjnp):
    x = HOST[k]
    _same(jnp.from_dlpack(x), rjnp.from_dlpack(x))
    _same(dlpack.from_dlpack(x), rjax.dlpack.from_dlpack(x))
    _same(jnp.from_dlpack(x, copy=True), rjnp.from_dlpack(x, copy=True))


def test_from_numpy_x64(x64, rjnp):
    for x in HOST[:5]:
        _same(jnp.from_dlpack(x), rjnp.from_dlpack(x))
        assert jnp.from_dlpack(x).dtype == x.dtype


def test_from_arrays(rjax, rjnp):
    """jaxlite reads JAX's and its own Arrays; JAX reads jaxlite's."""
    _same(jnp.from_dlpack(rjnp.arange(4.0)), rjnp.from_dlpack(rjnp.arange(4.0)))
    _same(jnp.from_dlpack(jnp.arange(4, dtype=np.int16)),
          rjnp.from_dlpack(rjnp.arange(4, dtype=np.int16)))
    back = rjnp.from_dlpack(jnp.arange(5.0) * 2)
    assert back.dtype == np.float32 and back.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    np.testing.assert_array_equal(np.from_dlpack(jnp.arange(3)), np.arange(3))


def test_signatures(rjax, rjnp):
    assert str(inspect.signature(jnp.from_dlpack)) == \
        str(inspect.signature(rjnp.from_dlpack)).replace(
            "device: 'xc.Device | Sharding | None' = None, copy: 'bool | None' = None",
            "device=None, copy=None").replace("x: 'Any'", "x").replace(" -> 'Array'", "")
    assert list(inspect.signature(dlpack.from_dlpack).parameters) == \
        list(inspect.signature(rjax.dlpack.from_dlpack).parameters)
    with pytest.raises(TypeError):
        jnp.from_dlpack(x=np.arange(3))
    d = jaxlite.devices()[0]
    got = dlpack.from_dlpack(np.arange(3, dtype=np.float32), d)     # device positionally
    assert got.device is d and got.committed
    names = {n for n in dir(rjax.dlpack) if not n.startswith("_")}
    assert names <= set(dir(dlpack))


def test_copy_semantics():
    """copy=None shares the producer's memory when no copy is needed (JAX's documented
    behaviour), copy=True never does, copy=False never copies and raises ValueError
    where a copy is needed."""
    b = np.arange(4, dtype=np.float32)
    shared, copied = jnp.from_dlpack(b), jnp.from_dlpack(b, copy=True)
    strict = jnp.from_dlpack(b, copy=False)
    b[0] = 100
    assert shared.tolist()[0] == 100 and strict.tolist()[0] == 100
    assert copied.tolist()[0] == 0
    with pytest.raises(ValueError, match="copy=False"):
        jnp.from_dlpack(np.arange(3.0), copy=False)        # float64 -> float32
    with pytest.raises(ValueError, match="copy=False"):
        jnp.from_dlpack(np.arange(6.0, dtype=np.float32)[::2], copy=False)
    strided = jnp.from_dlpack(np.arange(6.0, dtype=np.float32)[::2])
    assert strided.tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(ValueError):
        jnp.from_dlpack(b, copy="yes")


def test_imported_memory_is_not_overwritten():
    """A donated import is never written through: the producer keeps its values."""
    b = np.arange(1 << 16, dtype=np.float32)
    x = jnp.from_dlpack(b)
    y = jaxlite.jit(lambda a: a * 2 + 1, donate_argnums=0)(x)
    np.testing.assert_array_equal(b[:3], [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(y)[:3], [1, 3, 5])
    z = jnp.from_dlpack(np.arange(3, dtype=np.float32))
    with pytest.raises(ValueError):
        np.asarray(z)[0] = 5            # the Array's view is read-only


def test_devices_and_jit(rjax, rjnp):
    d = jaxlite.devices()[0]
    got = jnp.from_dlpack(np.arange(3, dtype=np.float32), device=d)
    want = rjnp.from_dlpack(np.arange(3, dtype=np.float32), device=rjax.devices()[0])
    _same(got, want)
    assert got.device is d
    s = jaxlite.sharding.SingleDeviceSharding(d)
    assert jnp.from_dlpack(np.arange(3), device=s).device is d
    with pytest.raises(ValueError):
        jnp.from_dlpack(np.arange(3), device="cpu")
    f = jaxlite.jit(lambda y: jnp.from_dlpack(np.arange(3, dtype=np.float32)) + y)
    rf = rjax.jit(lambda y: rjnp.from_dlpack(np.arange(3, dtype=np.float32)) + y)
    _same(f(1.0), rf(1.0))


class _Producer:
    def __init__(self, dev_type, dev_id=0):
        self.dev = (dev_type, dev_id)

    def __dlpack__(self, **kwargs):
        return np.arange(3.0).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.dev


@pytest.mark.parametrize("bad", [[1, 2], np.float32(3), 3.0, np.arange(3.0).__dlpack__(),
                                 _Producer(2), _Producer(10), _Producer(7), _Producer(1, 5)],
                         ids=["list", "np scalar", "float", "capsule", "cuda", "rocm",
                              "device type 7", "cpu 5"])
def test_errors(bad, rjnp):
    with pytest.raises(Exception) as want:
        rjnp.from_dlpack(bad)
    if isinstance(bad, _Producer) and bad.dev == (1, 5):
        expected = ValueError      # JAX: its runtime error for a missing device id
    else:
        expected = type(want.value)
    with pytest.raises(expected):
        jnp.from_dlpack(bad)


def test_bfloat16_and_narrow_types_do_not_travel(rjnp):
    """NumPy's DLPack has no bfloat16 (README: differences) nor narrow types."""
    with pytest.raises(BufferError):
        jnp.from_dlpack(np.arange(3).astype(ml_dtypes.bfloat16))
    with pytest.raises(BufferError):
        np.from_dlpack(jnp.arange(3, dtype=jnp.float8_e4m3fn))
    with pytest.raises(BufferError):
        np.from_dlpack(jnp.arange(3, dtype=jnp.bfloat16))


@pytest.mark.parametrize("dt", ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64",
                                "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
                                "float4_e2m1fn", "int4", "uint2"])
def test_is_supported_dtype(dt, rjax, rjnp):
    want = rjax.dlpack.is_supported_dtype(getattr(rjnp, dt))
    assert dlpack.is_supported_dtype(getattr(jnp, dt)) is want
    assert dlpack.is_supported_dtype(np.dtype(getattr(jnp, dt))) is want
    if not dt.endswith("_"):
        assert dlpack.is_supported_dtype(dt) is want


def test_is_supported_dtype_edges(rjax):
    for d in (object, np.str_, jaxlite.dtypes.float0):
        assert dlpack.is_supported_dtype(d) is rjax.dlpack.is_supported_dtype(d)
    with pytest.raises(TypeError):
        dlpack.is_supported_dtype(None)
    with pytest.raises(TypeError):
        rjax.dlpack.is_supported_dtype(None)
    assert dlpack.is_supported_dtype(jnp.bfloat16) is False   # JAX: True (README)


def test_export(rjnp):
    x = jnp.arange(6.0).reshape(2, 3)
    assert tuple(x.__dlpack_device__()) == tuple(rjnp.arange(3.0).__dlpack_device__())
    assert int(x.__dlpack_device__()[0]) == 1
    # (copy=False needs a consumer of DLPack 1.0, which can be told the memory is
    # read-only; an older one gets a copy, which copy=False forbids)
    for kwargs in ({}, {"max_version": (1, 0)}, {"dl_device": (1, 0)}, {"copy": True},
                   {"copy": False, "max_version": (1, 0)}):
        cap = x.__dlpack__(**kwargs)
        assert type(cap).__name__ == "PyCapsule"
    np.testing.assert_array_equal(np.from_dlpack(x), np.arange(6.0).reshape(2, 3))
    y = np.from_dlpack(x)
    with pytest.raises(ValueError):
        y[0, 0] = 5          # read-only consumers share the memory, writers cannot
