"""jaxlite.lax wrappers against real jax.lax: strict dtypes/shapes, JAX's errors."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax

from oracle import assert_like_jax


def test_convert_element_type_of_python_scalars(rjax):
    for v, dt in [(1.7, np.int32), (3, np.float32), (-2.5, np.uint8), (True, np.float32)]:
        assert_like_jax(lax.convert_element_type(v, dt), rjax.lax.convert_element_type(v, dt))


def test_binary_ops_require_equal_dtypes():
    with pytest.raises(TypeError, match="int32.*float32|float32.*int32"):
        lax.add(jnp.ones(3, jnp.int32), jnp.ones(3, jnp.float32))


def test_python_scalars_have_their_default_dtype(rjax):
    # a Python int is a weak int32 operand: it matches an int32 array, not an int8 one
    x = np.arange(3, dtype=np.int32)
    assert_like_jax(lax.add(jnp.asarray(x), 2), rjax.lax.add(x, 2))
    with pytest.raises(TypeError):
        rjax.lax.add(x.astype(np.int8), 2)
    with pytest.raises(TypeError):
        lax.add(jnp.asarray(x, np.int8), 2)


def test_broadcast_in_dim_checks_shapes():
    with pytest.raises(TypeError, match="broadcast_in_dim"):
        lax.broadcast_in_dim(jnp.ones(3), (4,), (0,))
    out = lax.broadcast_in_dim(jnp.arange(3.0), (2, 3), (1,))
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(3.0), (2, 3)))


@pytest.mark.parametrize("start", [-5, 0, 2, 9])
def test_dynamic_slice_clamps_like_jax(rjax, start):
    x = np.arange(10, dtype=np.float32)
    got = lax.dynamic_slice(jnp.asarray(x), (start,), (4,))
    assert_like_jax(got, rjax.lax.dynamic_slice(x, (start,), (4,)))
    under_jit = jax.jit(lambda a, s: lax.dynamic_slice(a, (s,), (4,)))(jnp.asarray(x), start)
    np.testing.assert_array_equal(under_jit, got)


@pytest.mark.parametrize("start", [-3, 1, 8])
def test_dynamic_update_slice_clamps_like_jax(rjax, start):
    x, u = np.zeros(10, np.float32), np.ones(3, np.float32)
    got = lax.dynamic_update_slice(jnp.asarray(x), jnp.asarray(u), (start,))
    assert_like_jax(got, rjax.lax.dynamic_update_slice(x, u, (start,)))


def test_multi_operand_sort_and_top_k(rjax):
    k = np.array([3, 1, 2, 1], np.int32)
    v = np.array([10, 20, 30, 40], np.float32)
    for got, want in zip(lax.sort((jnp.asarray(k), jnp.asarray(v)), num_keys=1),
                         rjax.lax.sort((k, v), num_keys=1)):
        assert_like_jax(got, want)
    x = np.array([1.0, 5.0, 3.0, 5.0], np.float32)
    for got, want in zip(lax.top_k(jnp.asarray(x), 2), rjax.lax.top_k(x, 2)):
        assert_like_jax(got, want)


def test_dot_general_batch_dims(rjax):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))
    assert_like_jax(lax.dot_general(jnp.asarray(a), jnp.asarray(b), dn),
                    rjax.lax.dot_general(a, b, dn), rtol=1e-5)
    with pytest.raises(TypeError, match="contracting"):
        lax.dot_general(jnp.asarray(a), jnp.asarray(a), dn)
