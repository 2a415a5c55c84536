"""examples/sharded_training.py (the demo's several-device section): its data-parallel
losses against real JAX running the very same code on the same 4 devices, its printed
per-device bytes against arithmetic, and the program as `make demo` runs it."""
from __future__ import annotations

import importlib.util
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sharded_training.py"
_counter = itertools.count()


def load_example():
    spec = importlib.util.spec_from_file_location(f"_sharded_example_{next(_counter)}",
                                                  EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_data_parallel_losses_match_real_jax(rjax8, capsys):
    lite = load_example()
    lite_losses = lite.data_parallel()
    out = capsys.readouterr().out
    real = load_example()
    import jax.numpy as rjnp
    from jax import sharding as rs
    real.jax, real.jnp, real.lax = rjax8, rjnp, rjax8.lax
    real.Mesh, real.NamedSharding, real.P = rs.Mesh, rs.NamedSharding, rs.PartitionSpec
    real.device_bytes = lambda devs: [0] * len(devs)     # JAX's CPU memory_stats is None
    real_losses = real.data_parallel()
    capsys.readouterr()
    assert len(lite_losses) == real.STEPS
    np.testing.assert_allclose(lite_losses, real_losses, rtol=2e-5, atol=2e-6)
    assert lite_losses[-1] < lite_losses[0]
    # replicated parameters: every device holds all of them; a batch: a quarter each
    n_params = 64 * 128 + 128 + 128 * 10 + 10
    assert re.search(r"parameters \(replicated\)\s+" + ", ".join(
        [rf"cpu:{i}:\s+{n_params * 4:,d} B" for i in range(4)]), out), out
    assert re.search(r"one batch \(256, 64\) \(sharded\)\s+" + ", ".join(
        [rf"cpu:{i}:\s+{256 * 64 * 4 // 4:,d} B" for i in range(4)]), out), out


def test_tensor_parallel_prints_exact_bytes_and_errors(capsys):
    load_example().tensor_parallel()
    out = capsys.readouterr().out
    x_shard, w_shard, out_block = 256 * 256 * 4, 256 * 64 * 4, 256 * 64 * 4
    assert re.search(r"x rows over 'x', w cols over 'y'\s+" + ", ".join(
        [rf"cpu:{i}:\s+{x_shard + w_shard:,d} B" for i in range(4)]), out), out
    assert re.search(r"x @ w, blocks over 'x' and 'y'\s+" + ", ".join(
        [rf"cpu:{i}:\s+{out_block:,d} B" for i in range(4)]), out), out
    errs = [float(e) for e in re.findall(r"max error ([0-9.e+-]+)", out)]
    assert len(errs) == 3 and errs[0] == 0.0 and errs[1] < 1e-3 and errs[2] < 1e-3, out
    # the plain jit: the partitioner's one psum of the (256, 128) float32 partial products
    assert f"inserts 1 collective of {256 * 128 * 4:,d} B per device" in out, out


def test_restarts_itself_with_four_devices_from_a_one_device_process():
    env = dict(os.environ)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    p = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("4 CPU devices"), p.stdout
    assert "largest difference" in p.stdout and "k sharded over 'y'" in p.stdout
