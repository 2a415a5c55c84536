"""Comparing jaxlite's results with real JAX's over several devices: values, dtype, weak
type, shape, and where they live (the sharding's repr and its device -> index map)."""
from __future__ import annotations

import numpy as np

import jaxlite


def by_id(sharding, shape) -> dict:
    """``devices_indices_map`` keyed by device id (comparable across the two libraries)."""
    return {d.id: idx for d, idx in sharding.devices_indices_map(shape).items()}


def same_array(a, b, *, placed=True, rtol=1e-6):
    """jaxlite's ``a`` is JAX's ``b``: value, dtype, weak type, shape, and (placed) its
    sharding."""
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.aval.weak_type == b.aval.weak_type, (a.aval.weak_type, b.aval.weak_type)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-6)
    if placed:
        assert repr(a.sharding) == repr(b.sharding), (a.sharding, b.sharding)
        assert by_id(a.sharding, a.shape) == by_id(b.sharding, b.shape)


def same_tree(a, b, **kw):
    """``same_array`` leaf by leaf, the two pytrees of one structure."""
    import jax
    la, ta = jaxlite.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert str(ta).replace("PyTreeDef", "") == str(tb).replace("PyTreeDef", ""), (ta, tb)
    for x, y in zip(la, lb):
        same_array(x, y, **kw)
