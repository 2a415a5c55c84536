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
