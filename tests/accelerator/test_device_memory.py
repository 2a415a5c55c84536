"""Device memory on a PJRT platform (``JAXLITE_TEST_PLATFORM``, default ``xla_cpu``; ``tpu``
under make test-accelerator): the plugin's ``memory_stats`` and jaxlite's own per-array
accounting agree on what an array holds, ``delete()`` gives the bytes back, and an
allocation beyond the device's memory raises JAX's RESOURCE_EXHAUSTED error naming bytes,
shape and device while the arrays already there stay intact."""
from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.errors import JaxRuntimeError
from jaxlite.runtime.device import Device

PLATFORM = os.environ.get("JAXLITE_TEST_PLATFORM", "xla_cpu")
MiB = 1 << 20


@pytest.fixture(scope="module")
def dev():
    if PLATFORM == "xla_cpu":
        pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    return jaxlite.devices(PLATFORM)[0]


def _own(d):
    """jaxlite's own accounting of ``d`` (the bytes of its live buffers)."""
    return Device.memory_stats(d)["bytes_in_use"]


def test_stats_agree_on_an_array_and_on_delete(dev):
    gc.collect()
    before, own_before = dev.memory_stats()["bytes_in_use"], _own(dev)
    x = jaxlite.device_put(np.ones((64, MiB // 4), np.float32), dev)     # 64 MiB
    x.block_until_ready()
    grown, own_grown = dev.memory_stats()["bytes_in_use"] - before, _own(dev) - own_before
    assert own_grown == 64 * MiB
    # the plugin's figure (a TPU's allocator rounds up to its blocks)
    assert 64 * MiB <= grown <= 64 * MiB + 4 * MiB, grown
    stats = dev.memory_stats()
    assert stats["peak_bytes_in_use"] >= stats["bytes_in_use"] and stats["bytes_limit"] > 0
    x.delete()
    assert _own(dev) == own_before
    assert dev.memory_stats()["bytes_in_use"] - before <= 4 * MiB


def test_allocation_beyond_the_device_raises_and_loses_nothing(dev):
    keep = jaxlite.device_put(np.arange(1000, dtype=np.float32), dev)
    limit = dev.memory_stats()["bytes_limit"]
    if PLATFORM == "xla_cpu":
        pytest.skip("the XLA:CPU plugin's limit is the host's memory")
    n = limit // 4 + (1 << 28)            # float32 elements: 1 GiB past the limit
    own = _own(dev)
    with pytest.raises(JaxRuntimeError, match="RESOURCE_EXHAUSTED") as e:
        jnp.zeros((n,), jnp.float32, device=dev).block_until_ready()
    msg = str(e.value)
    assert str(n) in msg.replace(",", "") and "float32" in msg and PLATFORM in msg.lower()
    assert _own(dev) == own
    np.testing.assert_array_equal(np.asarray(keep), np.arange(1000, dtype=np.float32))
