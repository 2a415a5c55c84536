"""jaxlite.ops.segment_{sum,prod,max,min} against real jax.ops: values, dtypes, empty
segments' identities, dropped and clamped ids, buckets, grad, vmap, jit and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
from _both import compare, raises_like_jax, run_both

OPS = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
# ids with a repeat, an empty segment (2), a negative id and one past the end
IDS = np.array([0, 3, 0, -1, 1, 5, 3], np.int32)


def _data(dt):
    if dt == "bool":
        return np.array([True, False, False, True, False, True, True])
    return np.array([3, -2, 5, 7, 1, 4, -6]).astype(dt)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", ["float32", "int32", "uint8", "bool",
                                pytest.param("int8", marks=pytest.mark.slow)])
def test_values_dtypes_and_empty_segments(op, dt, rjax):
    if dt == "bool" and op in ("segment_sum", "segment_prod"):
        # JAX's scatter-add/mul reject bool operands: the same error type
        raises_like_jax(lambda m, n: getattr(m.ops, op)(n.asarray(_data(dt)), IDS, 5), rjax)
        return
    run_both(lambda m, n: getattr(m.ops, op)(n.asarray(_data(dt)), n.asarray(IDS), 5), rjax)


@pytest.mark.parametrize("op", OPS)
def test_trailing_dims_buckets_clip_and_default_count(op, rjax):
    data = np.arange(14, dtype=np.float32).reshape(7, 2) - 6
    for kw in [dict(num_segments=4), dict(num_segments=4, bucket_size=3),
               dict(num_segments=4, mode="clip"), dict(), dict(num_segments=0),
               dict(num_segments=4, indices_are_sorted=True)]:
        run_both(lambda m, n: getattr(m.ops, op)(n.asarray(data), n.asarray(IDS), **kw), rjax)


def test_python_scalar_and_weak_data(rjax):
    run_both(lambda m, n: m.ops.segment_sum(n.ones(3) * 2, np.array([0, 0, 1]), 2), rjax)
    run_both(lambda m, n: m.ops.segment_max(n.asarray([1.5, 2.5]), n.asarray([1, 1]), 3),
             rjax)
    # a scalar row with a scalar id; no rows at all
    run_both(lambda m, n: (m.ops.segment_sum(2.0, n.asarray(1), 3),
                           m.ops.segment_sum(n.ones(0), n.zeros(0, "int32"), 3)), rjax)


@pytest.mark.parametrize("op", ["segment_sum", "segment_max", "segment_min"])
def test_grad_with_ties(op, rjax):
    # ties inside a segment share the gradient (max/min), dropped rows get zero
    data = np.array([1., 4., 4., 2., -3., 9.], np.float32)
    ids = np.array([0, 0, 0, 2, 2, 7])

    def case(m, n):
        w = n.arange(3.0) + 1
        return m.grad(lambda d: n.sum(getattr(m.ops, op)(d, ids, 3) * w))(n.asarray(data))
    run_both(case, rjax)


def test_prod_grad_needs_unique_indices(rjax):
    data = np.array([0., 3., 2., 5.], np.float32)

    def case(m, n):
        return m.grad(lambda d: n.sum(m.ops.segment_prod(d, np.array([1, 0, 3, 4]), 4,
                                                           unique_indices=True) ** 2))(
            n.asarray(data))
    run_both(case, rjax)
    raises_like_jax(lambda m, n: m.grad(lambda d: n.sum(m.ops.segment_prod(
        d, np.array([0, 0, 1, 1]), 2)))(n.asarray(data)), rjax)


def test_vmap_and_jit(rjax):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    ids = np.array([[0, 1, 1, 2], [2, 2, 0, -1], [0, 0, 0, 0]])

    def case(m, n):
        f = m.jit(m.vmap(lambda d, i: m.ops.segment_max(d, i, num_segments=3)))
        g = m.jit(m.ops.segment_sum, static_argnums=2)
        return f(n.asarray(data), n.asarray(ids)), g(n.asarray(data[0]), n.asarray(ids[1]), 3)
    run_both(case, rjax)


def test_bad_input(rjax):
    ids = np.array([0, 1])
    raises_like_jax(lambda m, n: m.ops.segment_sum([1.0, 2.0], ids, 2), rjax)
    raises_like_jax(lambda m, n: m.ops.segment_sum(n.ones(2), ids, -1), rjax, "non-negative")
    raises_like_jax(lambda m, n: m.ops.segment_sum(n.ones(3), n.asarray([0., 1, 1]), 2), rjax,
                    "integer")
    raises_like_jax(lambda m, n: m.ops.segment_sum(n.ones(3), n.asarray(ids), 2), rjax,
                    "broadcasting")
    # traced ids without num_segments, or a traced num_segments: ConcretizationTypeError
    # (jaxlite's own class of that name, a TypeError as in JAX)
    for case in [lambda m, n: m.jit(lambda d, i: m.ops.segment_sum(d, i))(
                     n.ones(2), n.asarray(ids)),
                 lambda m, n: m.jit(lambda d, k: m.ops.segment_sum(d, ids, k))(n.ones(2), 2)]:
        with pytest.raises(rjax.errors.ConcretizationTypeError):
            case(rjax, rjax.numpy)
        with pytest.raises(jaxlite.errors.ConcretizationTypeError, match="num_segments"):
            case(jaxlite, jaxlite.numpy)


def test_mode_enum_name_accepted():
    out = jaxlite.ops.segment_sum(jaxlite.numpy.ones(3), np.array([0, 4, -1]), 2, mode="drop")
    np.testing.assert_array_equal(np.asarray(out), [1.0, 0.0])
