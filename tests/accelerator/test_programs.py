"""tests/accelerator/programs.py on a PJRT platform, against a reference.

The platform is ``JAXLITE_TEST_PLATFORM`` (default ``xla_cpu``, the XLA:CPU plugin the test
extra installs, so this runs in CI); ``make test-accelerator`` sets ``tpu``.  The reference
is the archive ``JAXLITE_ACCEL_REFERENCE`` names (real JAX's results on the same chip,
written by reference.py), else jaxlite's own CPU platform in this process.  Each program
runs with the platform's first device as the default device, its operands placed there;
every result must be an Array on that device, agree with the reference within the
program's tolerance, and have its shape and dtype.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
import jaxlite.scipy.linalg  # noqa: F401  (programs use jax.scipy.linalg)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import PROGRAMS, flat, mismatch  # noqa: E402

PLATFORM = os.environ.get("JAXLITE_TEST_PLATFORM", "xla_cpu")
REFERENCE = os.environ.get("JAXLITE_ACCEL_REFERENCE")


@pytest.fixture(scope="module")
def device():
    if PLATFORM == "xla_cpu":
        pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    return jaxlite.devices(PLATFORM)[0]


@pytest.fixture(scope="module")
def reference():
    if REFERENCE:
        with np.load(REFERENCE) as z:
            return {k: z[k] for k in z.files}
    return None


def _run(name, dev):
    fn, inputs, _ = PROGRAMS[name]
    with jaxlite.default_device(dev):
        args = [jnp.asarray(a) for a in inputs()]
        return fn(jaxlite, jnp, lax, *args)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program(name, device, reference):
    raw = _run(name, device)
    out = flat(raw)
    if reference is not None:
        if f"{name}/error" in reference:
            pytest.fail(f"the reference raised: {reference[f'{name}/error']}")
        want = [reference[f"{name}/{i}"] for i in range(len(out) + 1)
                if f"{name}/{i}" in reference]
    else:
        want = flat(_run(name, jaxlite.devices("cpu")[0]))
    assert len(out) == len(want), f"{len(out)} results where {len(want)} are expected"
    for i, a in enumerate(raw if isinstance(raw, (tuple, list)) else [raw]):
        for leaf in jaxlite.tree_util.tree_leaves(a):
            assert isinstance(leaf, jaxlite.Array), f"result {i} is a {type(leaf).__name__}"
            assert leaf.devices() == {device}, f"result {i} lives on {leaf.devices()}"
    for i, (g, w) in enumerate(zip(out, want)):
        why = mismatch(name, g, w)
        assert why is None, f"result {i}: {why}"
