"""Shared test setup: real JAX (CPU) as the oracle, and value/dtype comparison helpers."""
from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaxlite  # noqa: E402


@pytest.fixture(scope="session")
def rjax():
    """The real JAX package (test-only oracle)."""
    return pytest.importorskip("jax")


@pytest.fixture(scope="session")
def rjnp(rjax):
    import jax.numpy as jnp
    return jnp


@pytest.fixture
def x64():
    """Turns 64-bit types on in jaxlite (and real JAX) for one test."""
    import jax
    old_r = jax.config.jax_enable_x64
    jaxlite.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jaxlite.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", old_r)


@pytest.fixture
def no_gc():
    """Collect earlier tests' garbage first, then keep the collector off for the test, so
    byte counts do not change because an unrelated cycle was collected mid-test."""
    import gc
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# ---- test tiers ------------------------------------------------------------------------
# The big oracle tables run in full under `make test-slow` (CI runs both tiers); `make test`
# keeps a fixed 1-in-N sample of their cases (chosen by a hash of the test id, so the same
# ones every run), which keeps it within its time budget on a 2-core machine.
_SAMPLED_IN_FAST_TIER = {
    "test_special_point_float64": 8,
    "test_special_point_float32": 5,
    "test_second_derivative_special_point": 4,
    "test_complex_special_point": 4,
    "test_high_order_reciprocal": 3,
    "test_dot_mixed_dtypes_like_jax": 16,
    "test_lax_dtype_table_like_jax": 8,
    "test_binary_size1_broadcasting": 5,
    "test_categorical_mode": 6,
    "test_array_members_on_tracers_match_jax": 3,
    "test_debug_flags_like_jax": 2,
    "test_index_tricks": 5,
    "test_signal": 5,
    "test_sets_and_selection": 5,
    "test_counts_and_polynomials": 5,
    "test_functional_and_construction": 5,
    "test_scipy_linalg": 3,
    "test_scipy_signal": 3,
    "test_scipy_misc": 3,
}


def pytest_collection_modifyitems(config, items):
    import zlib
    for item in items:
        n = _SAMPLED_IN_FAST_TIER.get(getattr(item, "originalname", None))
        if n and zlib.crc32(item.nodeid.encode()) % n:
            item.add_marker(pytest.mark.slow)
