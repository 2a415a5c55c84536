"""jaxlite.distributed and multihost_utils in one process (no MPI launch): what a script
written for several processes does when run alone, checked against JAX 0.10.2 where JAX
defines it (tests/multiprocess runs them over 2 processes)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jaxlite
from jaxlite.experimental import multihost_utils as mh


def test_single_process_facts(rjax):
    assert jaxlite.process_index() == rjax.process_index() == 0
    assert jaxlite.process_count() == rjax.process_count() == 1
    assert jaxlite.process_indices() == rjax.process_indices() == [0]
    assert jaxlite.distributed.is_initialized() is False
    jaxlite.distributed.shutdown()          # nothing to leave: no error
    assert [d.process_index for d in jaxlite.devices()] == [0] * len(jaxlite.devices())


def test_initialize_without_an_mpi_launch_says_how_to_start(tmp_path):
    code = ("import jaxlite\n"
            "try:\n    jaxlite.distributed.initialize()\n"
            "except ValueError as e:\n    print('ValueError', e)\n"
            "print(jaxlite.distributed.is_initialized(), jaxlite.process_count())\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "OMPI_", "MPI_", "HYDRA_"))}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert "ValueError" in p.stdout and "python -m jaxlite launch -n 2" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == "False 1"


def test_initialize_after_devices_exist_raises(tmp_path):
    code = ("import os\nos.environ['PMI_RANK'] = '0'\nimport jaxlite\njaxlite.devices()\n"
            "try:\n    jaxlite.distributed.initialize()\n"
            "except RuntimeError as e:\n    print('RuntimeError', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("RuntimeError") and "before any" in p.stdout


def test_multihost_utils_alone(rjax):
    from jax.experimental import multihost_utils as rmh
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for tiled in (False, True):
        got, want = mh.process_allgather(x, tiled=tiled), rmh.process_allgather(x, tiled=tiled)
        np.testing.assert_array_equal(got, want)
        assert got.shape == want.shape and got.dtype == want.dtype
    got = mh.broadcast_one_to_all({"a": x, "b": 3})
    want = rmh.broadcast_one_to_all({"a": x, "b": 3})
    np.testing.assert_array_equal(got["a"], want["a"])
    assert np.asarray(got["b"]) == np.asarray(want["b"])
    assert mh.sync_global_devices("x") is None
    mh.assert_equal(x)


def test_process_local_data_alone_is_device_put():
    from jaxlite.sharding import NamedSharding, PartitionSpec as P
    mesh = jaxlite.make_mesh((1,), ("x",))
    a = jaxlite.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                                   np.arange(4.0))
    assert a.shape == (4,) and a.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(a), np.arange(4.0))
    with pytest.raises(ValueError, match="global_shape"):
        jaxlite.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                                   np.arange(4.0), global_shape=(8,))
    with pytest.raises(TypeError):
        jaxlite.make_array_from_process_local_data(None, np.arange(4.0))
