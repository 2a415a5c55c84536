"""jaxlite doctor (tools/doctor.py) and jaxlite.experimental.pad_to_bucket."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import pad_to_bucket


# ---- pad_to_bucket ---------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis,buckets,bucket", [
    ((3,), 0, (4, 8), 4),
    ((5,), 0, (8, 4), 8),          # any order
    ((4,), 0, (4, 8), 4),          # exact fit: no padding
    ((2, 3), 1, (2, 16), 16),
    ((2, 3), -1, [3], 3),
    ((6, 2), 0, (2, 4, 8, 16), 8),
    ((0, 2), 0, (1,), 1),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_pad_to_bucket_values(shape, axis, buckets, bucket, dtype):
    x_np = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    padded, mask = pad_to_bucket(jnp.asarray(x_np), axis, buckets)
    ax = axis % len(shape)
    n = shape[ax]
    pad = [(0, 0)] * len(shape)
    pad[ax] = (0, bucket - n)
    np.testing.assert_array_equal(np.asarray(padded), np.pad(x_np, pad))
    assert padded.dtype == x_np.dtype and padded.shape[ax] == bucket
    assert mask.dtype == np.bool_ and mask.shape == (bucket,)
    np.testing.assert_array_equal(np.asarray(mask), np.arange(bucket) < n)


def test_pad_to_bucket_keeps_weak_type_and_fill_value():
    padded, _ = pad_to_bucket(jnp.asarray(np.arange(3.0, dtype=np.float32)), 0, (5,),
                              fill_value=-1)
    np.testing.assert_array_equal(np.asarray(padded), [0, 1, 2, -1, -1])
    weak = jnp.array([1.0, 2.0]) * 2.0   # strong f32 stays strong
    assert pad_to_bucket(weak, 0, (4,))[0].weak_type == weak.weak_type


def test_pad_to_bucket_under_jit_bounds_compiles():
    compiles = []

    @jax.jit
    def mean_sq(batch, mask):
        compiles.append(batch.shape)
        per = jnp.sum(batch ** 2, axis=1)
        return jnp.sum(jnp.where(mask, per, 0.0)) / jnp.sum(mask)

    outs = []
    for n in (37, 50, 64, 29, 3):
        batch = jnp.asarray(np.full((n, 4), 2.0, np.float32))
        outs.append(float(mean_sq(*pad_to_bucket(batch, 0, (32, 64)))))
    assert outs == [16.0] * 5
    assert compiles == [(64, 4), (32, 4)]
    # and inside a jit (shape static there)
    p, m = jax.jit(lambda x: pad_to_bucket(x, 0, (8,)))(jnp.ones(5))
    np.testing.assert_array_equal(np.asarray(p), [1, 1, 1, 1, 1, 0, 0, 0])
    assert int(jnp.sum(m)) == 5


@pytest.mark.parametrize("x,axis,buckets,match", [
    (np.ones(9, np.float32), 0, (4, 8), r"size 9.*\(4, 8\)"),
    (np.ones((2, 5), np.float32), 1, (3,), r"size 5.*\(3,\)"),
    (np.ones(3, np.float32), 0, (), "empty"),
    (np.ones(3, np.float32), 0, (4, 0), "positive"),
    (np.ones(3, np.float32), 0, (4.0,), "positive"),
    (np.ones(3, np.float32), 1, (4,), "out of bounds"),
])
def test_pad_to_bucket_errors(x, axis, buckets, match):
    with pytest.raises(ValueError, match=match):
        pad_to_bucket(jnp.asarray(x), axis, buckets)


def test_pad_to_bucket_rejects_list():
    with pytest.raises(TypeError):
        pad_to_bucket([1.0, 2.0], 0, (4,))
