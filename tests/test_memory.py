"""Device memory: exact accounting in ``Device.memory_stats()``, ``live_arrays()``, and the
life of an Array (``delete``, ``is_deleted``, garbage collection), against real JAX where
JAX has the behaviour (what a deleted array does)."""
from __future__ import annotations

import copy
import gc
import pickle

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp

# the heap of earlier modules is frozen for this one, so its gc.collect() calls (byte counts
# must not include dead arrays) scan only what this module made: ~3 s each otherwise, late
# in a full run
pytestmark = pytest.mark.usefixtures("_heap_frozen")

DEV = jaxlite.devices()[0]


@pytest.fixture(autouse=True)
def _no_stray_collection(no_gc):
    """Every test here runs with the collector off (conftest's ``no_gc``)."""
    yield


def in_use() -> int:
    return DEV.memory_stats()["bytes_in_use"]


def stats() -> dict:
    return DEV.memory_stats()


@pytest.mark.parametrize("shape,dtype", [((1000,), np.float32), ((3, 5), np.int32),
                                         ((7,), np.uint8), ((2, 2), np.complex64),
                                         ((), np.float32), ((0, 4), np.float32),
                                         ((4,), np.bool_), ((6,), "bfloat16")])
def test_creating_and_deleting_changes_bytes_by_nbytes(shape, dtype):
    host = np.zeros(shape, dtype)
    before = stats()
    x = jaxlite.device_put(host)
    after = stats()
    assert x.nbytes == host.nbytes == int(np.prod(shape)) * np.dtype(dtype).itemsize
    assert after["bytes_in_use"] - before["bytes_in_use"] == x.nbytes
    assert after["num_allocs"] == before["num_allocs"] + 1
    assert after["peak_bytes_in_use"] >= after["bytes_in_use"]
    x.delete()
    assert in_use() == before["bytes_in_use"]
    x.delete()   # twice: a no-op
    assert in_use() == before["bytes_in_use"]


def test_results_of_operations_are_counted_exactly():
    x = jaxlite.device_put(np.ones(256, np.float32))
    base = in_use()
    y = x * 2 + 1            # the temporary x * 2 is freed at once
    assert in_use() - base == 1024
    z = jnp.sum(y)
    assert in_use() - base == 1024 + 4
    f = jaxlite.jit(lambda a: jnp.sin(a) * a + 1)
    w = f(x)
    assert in_use() - base == 1024 + 4 + 1024
    del y, z, w
    assert in_use() == base


def test_garbage_collected_arrays_free_their_bytes():
    base = in_use()
    x = jnp.zeros(500, jnp.float32) + 1
    assert in_use() - base == 2000
    del x
    assert in_use() == base

    class Holder:
        pass
    a, b = Holder(), Holder()
    a.other, b.other = b, a             # a reference cycle keeps the array alive...
    a.array = jnp.ones(100, jnp.float32) * 3
    del a, b
    assert in_use() - base == 400
    gc.collect()                        # ...until the collector breaks it
    assert in_use() == base


def test_peak_and_largest_allocation():
    DEV.reset_peak_memory()
    base = stats()
    assert base["peak_bytes_in_use"] == base["bytes_in_use"]
    x = jaxlite.device_put(np.zeros(10_000, np.float64).astype(np.float32))   # 40 kB
    y = jaxlite.device_put(np.zeros(30_000, np.int8))                          # 30 kB
    x.delete()
    s = stats()
    assert s["peak_bytes_in_use"] == base["bytes_in_use"] + 70_000
    assert s["bytes_in_use"] == base["bytes_in_use"] + 30_000
    assert s["largest_alloc_size"] >= 40_000
    assert s["bytes_limit"] > 0
    DEV.reset_peak_memory()
    assert stats()["peak_bytes_in_use"] == stats()["bytes_in_use"]
    del y


def test_jit_temporaries_count_in_peak_but_not_after():
    x = jaxlite.device_put(np.ones(10_000, np.float32))
    f = jaxlite.jit(lambda a: jnp.sum(jnp.exp(a) * a))
    f(x)                                   # compile once
    base = in_use()
    DEV.reset_peak_memory()
    out = f(x)
    assert in_use() - base == 4
    assert stats()["peak_bytes_in_use"] >= base + 4
    del out


def test_live_arrays_tracks_creation_deletion_and_gc():
    assert jaxlite.live_arrays is jaxlite.core.array.live_arrays
    x = jnp.arange(17)
    y = x + 1
    live = jaxlite.live_arrays()
    assert any(a is x for a in live) and any(a is y for a in live)
    assert all(isinstance(a, jaxlite.Array) and not a.is_deleted() for a in live)
    x.delete()
    assert not any(a is x for a in jaxlite.live_arrays())
    del live
    n = len(jaxlite.live_arrays())
    del y
    assert len(jaxlite.live_arrays()) == n - 1
    assert jaxlite.live_arrays("gpu") == []


def test_live_arrays_like_jax(rjax, rjnp):
    # the same program leaves the same new arrays alive in both
    def program(mod, np_):
        a = mod.device_put(np.arange(6.0, dtype=np.float32))
        b = np_.ones((2, 3))
        c = a.reshape(2, 3) + b
        b.delete()
        return a, c
    for mod, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        gc.collect()
        before = {id(a) for a in mod.live_arrays()}
        keep = program(mod, np_)
        new = sorted(a.shape for a in mod.live_arrays() if id(a) not in before)
        assert new == [(2, 3), (6,)], mod.__name__
        del keep


def test_sum_of_live_arrays_matches_bytes_in_use():
    gc.collect()
    base = in_use() - sum(a.nbytes for a in jaxlite.live_arrays())
    xs = [jnp.ones(n, jnp.float32) * 2 for n in (3, 50, 700)]
    assert in_use() - sum(a.nbytes for a in jaxlite.live_arrays()) == base
    del xs


# ---- deleted arrays ------------------------------------------------------------------------

def _uses(mod, np_):
    """Every use of a (deleted) array ``x``, by name; each must raise RuntimeError."""
    return {
        "add": lambda x: x + 1,
        "binop with live array": lambda x: np_.ones((2, 3)) * x,
        "sin": lambda x: np_.sin(x),
        "sum method": lambda x: x.sum(),
        "getitem": lambda x: x[0],
        "repr": repr,
        "str": str,
        "print format": lambda x: f"{x}",
        "np.asarray": np.asarray,
        "np.array": np.array,
        "tolist": lambda x: x.tolist(),
        "item": lambda x: x.item(0),
        "jit argument": lambda x: mod.jit(lambda a: a * 2)(x),
        "device_put": lambda x: mod.device_put(x),
        "device_put to device": lambda x: mod.device_put(x, mod.devices()[0]),
        "device_get": lambda x: mod.device_get(x),
        "block_until_ready": lambda x: x.block_until_ready(),
        "jnp.array": lambda x: np_.array(x),
        "pickle": pickle.dumps,
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "dlpack": np.from_dlpack,
        "iterate": list,
    }


@pytest.mark.parametrize("use", list(_uses(jaxlite, jnp)))
def test_any_use_after_delete_raises_like_jax(rjax, rjnp, use):
    x = jnp.arange(6.0).reshape(2, 3)
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError) as mine:
        _uses(jaxlite, jnp)[use](x)
    assert "deleted" in str(mine.value) and "float32[2,3]" in str(mine.value)
    if use == "device_put":
        return   # JAX returns a deleted array as it is when no device is given
    rx = rjnp.arange(6.0).reshape(2, 3)
    rx.delete()
    with pytest.raises(RuntimeError):
        _uses(rjax, rjnp)[use](rx)


def test_metadata_survives_delete():
    x = jnp.ones((2, 3), jnp.int32)
    x.delete()
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes, len(x)) == \
        ((2, 3), np.dtype(np.int32), 2, 6, 24, 2)
    assert x.device is DEV and x.is_deleted()


def test_delete_frees_at_once_and_live_views_stay_valid():
    x = jaxlite.device_put(np.arange(1000, dtype=np.float32))
    host = np.asarray(x)           # a read-only view, like JAX's
    assert not host.flags.writeable
    base = in_use()
    x.delete()
    assert in_use() == base - 4000
    assert host[999] == 999.0      # the NumPy view keeps its own reference


def test_alias_from_device_put_shares_the_buffer_like_jax(rjax, rjnp):
    for mod, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        x = np_.arange(4.0)
        before = mod.devices()[0].memory_stats()
        y = mod.device_put(x, mod.devices()[0])      # commit: no copy
        assert y is not x and y.committed and not x.committed
        if before is not None:
            assert mod.devices()[0].memory_stats()["bytes_in_use"] == before["bytes_in_use"]
        x.delete()
        assert y.is_deleted()                        # one buffer, two handles
        z = np_.arange(4.0)
        w = mod.device_put(z, mod.devices()[0], may_alias=False)
        z.delete()
        assert not w.is_deleted()


def test_donate_keeps_source_on_cpu_like_jax(rjax, rjnp):
    for mod, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        x = np_.arange(4.0)
        y = mod.device_put(x, mod.devices()[0], donate=True)
        assert not x.is_deleted() and y.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_failed_creation_allocates_nothing():
    base, allocs = in_use(), stats()["num_allocs"]
    with pytest.raises(TypeError):
        jaxlite.device_put(["a", np.ones(3)])
    with pytest.raises(TypeError):
        jnp.array(["a", "b"])
    with pytest.raises(OverflowError):
        jaxlite.device_put((np.ones(2), 2 ** 40))
    assert in_use() == base and stats()["num_allocs"] == allocs
