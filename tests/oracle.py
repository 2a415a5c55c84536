"""Comparison helpers: a jaxlite result against real JAX's (or NumPy's), including shape,
dtype and weak type."""
from __future__ import annotations

import numpy as np


def to_np(x):
    return np.asarray(x)


def assert_like_jax(got, want, *, rtol=1e-6, atol=1e-6, check_weak=True, equal_nan=True):
    """``got`` (jaxlite) equals ``want`` (real JAX): values, shape, dtype and weak type."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"shape {g.shape} != jax {w.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != jax {want.dtype}"
    if check_weak and hasattr(want, "weak_type"):
        assert got.weak_type == want.weak_type, \
            f"weak_type {got.weak_type} != jax {want.weak_type}"
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g.astype(np.complex128 if g.dtype.kind == "c" else
                                            np.float64),
                                   w.astype(np.complex128 if w.dtype.kind == "c" else
                                            np.float64),
                                   rtol=rtol, atol=atol, equal_nan=equal_nan)
