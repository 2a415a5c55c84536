"""Tests over several CPU devices: jaxlite and real JAX (the oracle) both with 8.

The device count of a process is fixed when its first device is made, so these tests run
in a pytest process of their own started with ``JAX_NUM_CPU_DEVICES=8`` (``make test``
does).  Collected in a process with another device count (a plain ``pytest tests``), they
are skipped with that reason.

``JAXLITE_MULTIDEVICE_PLATFORM=xla_cpu`` runs the same tests on the XLA:CPU PJRT plugin's
devices (jaxlite's default platform becomes ``xla_cpu``, which ``JAX_NUM_CPU_DEVICES``
gives 8 devices; real JAX stays on its CPU): the sharded programs are then partitioned by
XLA (tests/test_pjrt_sharding.py runs it).
"""
from __future__ import annotations

import os

import pytest

import jaxlite

N_DEVICES = 8
PLATFORM = os.environ.get("JAXLITE_MULTIDEVICE_PLATFORM", "")
if PLATFORM:
    jaxlite.config.update("jax_platforms", f"{PLATFORM},cpu")
    if PLATFORM == "xla_cpu":
        # the oracle's devices are CPU devices (``CpuDevice(id=k)``, platform ``cpu``, in
        # shardings' and meshes' reprs, transfer counters, visualize_array_sharding): the
        # XLA:CPU plugin's devices are CPU devices too, and here they say so as the plugin
        # names them (jaxlite says XlaCpuDevice / xla_cpu elsewhere to tell them apart
        # from its own CPU platform's, which the tests here do not use)
        from jaxlite.backends.pjrt import backend as _pjrt_backend
        _pjrt_backend.DEVICE_CLASS["xla_cpu"] = "CpuDevice"
        _pjrt_backend.DEVICE_PLATFORM["xla_cpu"] = "cpu"


def _have_devices() -> bool:
    return len(jaxlite.devices()) == N_DEVICES


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "own_partitioner: checks jaxlite's own SPMD partitioner (the CPU "
                   "platform's compiled text and counted collectives); skipped on a PJRT "
                   "platform, whose sharded programs XLA partitions")


def pytest_collection_modifyitems(config, items):
    if PLATFORM:
        skip = pytest.mark.skip(reason=f"jaxlite's own SPMD partitioner: on {PLATFORM} "
                                       f"XLA partitions sharded programs")
        for item in items:
            if item.get_closest_marker("own_partitioner"):
                item.add_marker(skip)
    if _have_devices():
        return
    skip = pytest.mark.skip(reason=f"needs {N_DEVICES} CPU devices: run with "
                                   f"JAX_NUM_CPU_DEVICES={N_DEVICES} (make test does)")
    for item in items:
        if "multidevice" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def rjax8():
    """Real JAX with the same 8 CPU devices (the oracle)."""
    jax = pytest.importorskip("jax")
    assert len(jax.devices()) == N_DEVICES, "real JAX must see JAX_NUM_CPU_DEVICES=8"
    return jax
