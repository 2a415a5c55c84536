"""Runs one case on jaxlite and on real JAX and compares the results (values, shapes,
dtypes, weak types, tree structure) or the exception types."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp


def run_both(case, rjax, rtol=1e-5, atol=1e-6):
    """``case(m, n)`` with (m, n) = (jaxlite, jaxlite.numpy) and (jax, jax.numpy)."""
    import jax.numpy as jnp
    got = case(jaxlite, ljnp)
    want = case(rjax, jnp)
    compare(got, want, rjax, rtol, atol)
    return got, want


def compare(got, want, rjax, rtol=1e-5, atol=1e-6):
    g_l, g_t = jaxlite.tree_util.tree_flatten(got)
    w_l, w_t = rjax.tree_util.tree_flatten(want)
    assert len(g_l) == len(w_l), (g_t, w_t)
    assert str(g_t) == str(w_t), (g_t, w_t)
    for g, w in zip(g_l, w_l):
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.shape == wa.shape, (ga.shape, wa.shape)
        assert ga.dtype == wa.dtype, (ga.dtype, wa.dtype)
        if isinstance(w, rjax.Array) and hasattr(g, "weak_type"):
            assert g.weak_type == w.weak_type, ("weak_type", g.weak_type, w.weak_type)
        if ga.dtype.kind in "fc":
            np.testing.assert_allclose(ga, wa, rtol=rtol, atol=atol)
        elif ga.dtype.kind != "V":
            np.testing.assert_array_equal(ga, wa)


def raises_like_jax(case, rjax, match=None):
    """Both raise; jaxlite's exception has JAX's type; ``match`` (regex) in its message."""
    import jax.numpy as jnp
    with pytest.raises(Exception) as want:
        case(rjax, jnp)
    with pytest.raises(want.type, match=match):
        case(jaxlite, ljnp)
