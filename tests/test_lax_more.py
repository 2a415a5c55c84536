"""The rest of jax.lax against real JAX 0.10: XLA-style gather/scatter with dimension
numbers and modes (values, out-of-bounds windows, batching dims, gradients, jit, vmap), the
creation/shape helpers, clz/mulhi, reduce_precision, reduce with any computation,
approx_max_k/approx_min_k, ragged_dot and the shape-tuple helpers."""
from __future__ import annotations

import numpy as np
import pytest

from _both import raises_like_jax, run_both

F32 = np.float32


def _op(shape, dtype=F32):
    return (np.arange(int(np.prod(shape))) % 11 - 4).reshape(shape).astype(dtype)


# ---- gather ---------------------------------------------------------------------------

_GATHERS = [
    # operand shape, indices, GatherDimensionNumbers fields, slice_sizes
    ((10,), [[0], [8], [9], [-1], [20]], ((1,), (), (0,)), (2,)),
    ((10,), [[0], [8], [9], [-1], [20]], ((), (0,), (0,)), (1,)),
    ((6, 6), [[1, 2], [4, 5], [0, 0], [-3, 2]], ((1, 2), (), (0, 1)), (2, 3)),
    ((6, 6), [[1, 2], [4, 5], [0, 0]], ((0,), (0,), (0, 1)), (1, 3)),
    ((6, 6), [[1], [5]], ((1,), (0,), (0,)), (1, 6)),          # rows, as x[idx]
    ((6, 6), [[1], [5]], ((0,), (1,), (1,)), (6, 1)),          # columns
    ((4, 5), np.zeros((2, 3, 0), int), ((2, 3), (), ()), (2, 2)),   # no index vector
    ((3, 4, 5), [[[1, 0]], [[2, 3]]], ((2,), (0, 1), (0, 1)), (1, 1, 5)),
    ((4,), np.zeros((0, 1), int), ((1,), (), (0,)), (2,)),    # empty batch
]


@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("case", _GATHERS, ids=lambda c: f"{c[0]}-{c[3]}")
def test_gather_against_jax(rjax, case, mode):
    shape, idx, dn, sizes = case
    idx = np.asarray(idx, np.int32)
    run_both(lambda m, n: m.lax.gather(_op(shape), idx, m.lax.GatherDimensionNumbers(*dn),
                                       sizes, mode=mode), rjax)


@pytest.mark.parametrize("mode", [None, "clip", "fill"])
def test_gather_gradient_at_out_of_bounds_windows(rjax, mode):
    """JAX's default (promise_in_bounds) clamps going forward but its transpose drops the
    windows that did not fit; clip sends their cotangent to the clamped window."""
    idx = np.array([[1, 2], [4, 5], [0, 0]], np.int32)

    def case(m, n):
        dn = m.lax.GatherDimensionNumbers((1, 2), (), (0, 1))
        return m.grad(lambda o: (m.lax.gather(o, idx, dn, (2, 3), mode=mode) ** 2)
                      .sum())(_op((6, 6)))
    run_both(case, rjax)


def test_gather_batching_dims_jit_vmap(rjax):
    op = _op((2, 5, 3))
    idx = np.array([[[1], [4]], [[0], [7]]], np.int32)

    def case(m, n):
        dn = m.lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,),
                                          start_index_map=(1,), operand_batching_dims=(0,),
                                          start_indices_batching_dims=(0,))
        f = lambda o: m.lax.gather(o, idx, dn, (1, 1, 3), mode="fill", fill_value=-1.0)
        return f(op), m.jit(f)(op), m.vmap(f)(n.stack([op, op + 1]))
    run_both(case, rjax)


def test_gather_fill_values_by_dtype(rjax):
    for dt in (np.int32, np.uint8, np.bool_, F32):
        run_both(lambda m, n: m.lax.gather(_op((5,), dt), np.array([[4], [-1]], np.int32),
                                           m.lax.GatherDimensionNumbers((1,), (), (0,)), (2,),
                                           mode="fill"), rjax)


def test_gather_bad_input(rjax):
    op, idx = _op((6, 6)), np.array([[1, 2]], np.int32)
    raises_like_jax(lambda m, n: m.lax.gather(op, idx.astype(F32),
                                              m.lax.GatherDimensionNumbers((1, 2), (), (0, 1)),
                                              (2, 3)), rjax)
    raises_like_jax(lambda m, n: m.lax.gather(op, idx,
                                              m.lax.GatherDimensionNumbers((1, 2), (), (0, 1)),
                                              (7, 3)), rjax)
    raises_like_jax(lambda m, n: m.lax.gather(op, idx,
                                              m.lax.GatherDimensionNumbers((1,), (0,), (0, 1)),
                                              (2, 3)), rjax)


# ---- scatter --------------------------------------------------------------------------

_SCATTERS = [
    ((10,), [[0], [8], [9], [-1], [20], [3]], ((1,), (), (0,)), (6, 2)),
    ((10,), [[0], [8], [0], [-1]], ((), (0,), (0,)), (4,)),
    ((6, 6), [[1, 2], [4, 5], [0, 0], [1, 2]], ((1, 2), (), (0, 1)), (4, 2, 3)),
    ((6, 6), [[1], [5], [1]], ((1,), (0,), (0,)), (3, 6)),
]


@pytest.mark.parametrize("fn", ["scatter", "scatter_add", "scatter_sub", "scatter_mul",
                                "scatter_min", "scatter_max"])
@pytest.mark.parametrize("mode", [None, "clip", "promise_in_bounds"])
@pytest.mark.parametrize("case", _SCATTERS, ids=lambda c: f"{c[0]}-{c[3]}")
def test_scatter_against_jax(rjax, case, mode, fn):
    shape, idx, dn, ushape = case
    if fn == "scatter" and mode != "clip" and len(idx) != len({tuple(i) for i in idx}):
        pytest.skip("repeated windows: XLA leaves the surviving update unspecified")
    if fn == "scatter" and case is _SCATTERS[0]:
        pytest.skip("overlapping windows: XLA leaves the surviving update unspecified")
    idx = np.asarray(idx, np.int32)
    upd = _op(ushape) * 2 + 1
    run_both(lambda m, n: getattr(m.lax, fn)(_op(shape), idx, upd,
                                             m.lax.ScatterDimensionNumbers(*dn), mode=mode),
             rjax)


def test_scatter_add_gradients_jit_vmap(rjax):
    idx = np.array([[1, 2], [4, 5], [0, 0]], np.int32)
    upd = _op((3, 2, 3))

    def case(m, n):
        dn = m.lax.ScatterDimensionNumbers((1, 2), (), (0, 1))
        f = lambda o, u: (m.lax.scatter_add(o, idx, u, dn) ** 2).sum()
        g = m.grad(f, argnums=(0, 1))(_op((6, 6)), upd)
        h = m.jit(lambda o, u: m.lax.scatter_mul(o, idx, u, dn, mode="clip"))(_op((6, 6)), upd)
        v = m.vmap(lambda u: m.lax.scatter_add(_op((6, 6)), idx, u, dn))(n.stack([upd, -upd]))
        return g, h, v
    run_both(case, rjax)


def test_scatter_apply_and_index_take(rjax):
    idx = np.array([[1, 2], [4, 5], [1, 2]], np.int32)
    run_both(lambda m, n: m.lax.scatter_apply(
        _op((6, 6)), idx, lambda v: v * 3 + 1, m.lax.ScatterDimensionNumbers((1, 2), (), (0, 1)),
        update_shape=(3, 2, 3)), rjax)
    run_both(lambda m, n: m.lax.index_take(_op((6, 5, 4)), (np.array([1, 7, -1]),
                                                           np.array([0, 2, 3])), (0, 2)), rjax)


def test_scatter_bad_input(rjax):
    raises_like_jax(lambda m, n: m.lax.scatter_add(
        _op((6,)), np.array([[1]], np.int32), _op((1, 7)),
        m.lax.ScatterDimensionNumbers((1,), (), (0,))), rjax)
    raises_like_jax(lambda m, n: m.lax.scatter_add(
        _op((6,)), np.array([[1.0]], F32), _op((1, 2)),
        m.lax.ScatterDimensionNumbers((1,), (), (0,))), rjax)


def test_gather_scatter_mode_enum(rjax):
    import jaxlite
    for s in ("clip", "fill", "drop", None, "promise_in_bounds"):
        assert (jaxlite.lax.GatherScatterMode.from_any(s).name
                == rjax.lax.GatherScatterMode.from_any(s).name)
    assert (jaxlite.lax.GatherDimensionNumbers._fields
            == rjax.lax.GatherDimensionNumbers._fields)
    assert (jaxlite.lax.ScatterDimensionNumbers._fields
            == rjax.lax.ScatterDimensionNumbers._fields)


# ---- creation and shapes --------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "m.lax.full((2, 3), 1.0)", "m.lax.full((2,), 1)", "m.lax.full((2,), n.float32(2))",
    "m.lax.full((), 3, n.int8)", "m.lax.full((0, 2), 1.5, n.int32)",
    "m.lax.empty((2,), n.float32)",
    "m.lax.tile(n.arange(3), (2,))", "m.lax.tile(n.ones((2, 3)), (2, 1))",
    "m.lax.stack([n.ones(2), n.zeros(2)], axis=1)", "m.lax.stack([n.ones(2)], axis=-1)",
    "m.lax.unstack(n.arange(6).reshape(2, 3), axis=1)", "m.lax.unstack(n.zeros((0, 2)))",
    "m.lax.split(n.arange(6), (2, 4))", "m.lax.split(n.ones((2, 5)), (0, 5), axis=1)",
    "m.lax.reciprocal(2.0)", "m.lax.reciprocal(n.arange(1, 4.0))",
    "m.lax.collapse(n.ones((2, 3, 4)), 1)", "m.lax.collapse(n.ones((2, 3, 4)), 0, 2)",
    "m.lax.collapse(n.ones((2, 3, 4)), -2)",
    "m.lax.broadcast_like(1.0, n.ones((2, 3)))",
    "m.lax.broadcast_like(n.ones(3, n.int8), n.ones((2, 3)))",
    "m.lax.broadcast_to_rank(n.ones(3), 3)", "m.lax.broadcast_to_rank(n.ones((2, 3)), 1)",
    "m.lax.batch_matmul(n.ones((2, 3, 4)), n.ones((2, 4, 5)))",
])
def test_helpers(rjax, expr):
    run_both(lambda m, n: eval(expr), rjax)


@pytest.mark.parametrize("expr", [
    "m.lax.full((2,), n.ones(2))", "m.lax.tile(n.ones((2, 3)), (2,))",
    "m.lax.split(n.arange(6), (2, 3))", "m.lax.reciprocal(n.arange(1, 3))",
    "m.lax.batch_matmul(n.ones((3, 4)), n.ones((2, 4, 5)))",
    "m.lax.batch_matmul(n.ones((2, 3, 4)), n.ones((3, 4, 5)))",
])
def test_helpers_bad_input(rjax, expr):
    raises_like_jax(lambda m, n: eval(expr), rjax)


def test_dtype_and_broadcast_shapes(rjax):
    import jaxlite
    import jaxlite.numpy as jnp
    for v in (1.0, 1, True, np.float64(1), jnp.ones(2, jnp.int8), np.float16(1), "int32"):
        want = rjax.lax.dtype(v if not isinstance(v, jaxlite.Array) else np.asarray(v))
        assert jaxlite.lax.dtype(v) == want, v
    assert jaxlite.lax.broadcast_shapes((2, 1), (3,)) == rjax.lax.broadcast_shapes((2, 1), (3,))
    assert jaxlite.lax.broadcast_shapes((0, 1), ()) == rjax.lax.broadcast_shapes((0, 1), ())
    with pytest.raises(ValueError):
        jaxlite.lax.broadcast_shapes((2,), (3,))


# ---- bits -----------------------------------------------------------------------------

_INTS = {
    "int8": [0, 1, -1, 127, -128, 5, 64, -7], "uint8": [0, 1, 255, 128, 7, 64, 3, 200],
    "int16": [0, 1, -1, 32767, -32768, 300, 4096, -9],
    "uint16": [0, 1, 65535, 32768, 300, 4096, 2, 77],
    "int32": [0, 1, -1, 2**31 - 1, -2**31, 2**30, 12345, -99999],
    "uint32": [0, 1, 2**32 - 1, 2**31, 2**30, 12345, 7, 65536],
}


@pytest.mark.parametrize("dt", list(_INTS))
def test_clz_mulhi(rjax, dt):
    x = np.array(_INTS[dt], dt)
    y = np.roll(x, 3)
    run_both(lambda m, n: (m.lax.clz(x), m.lax.mulhi(x, y), m.lax.mulhi(x, x),
                           m.jit(m.lax.mulhi)(y, x)), rjax)


def test_clz_mulhi_x64(rjax, x64):
    x = np.array([0, 1, -1, 2**63 - 1, -2**63, 2**40 + 3, -12345678901, 99], np.int64)
    for v in (x, x.astype(np.uint64)):
        run_both(lambda m, n: (m.lax.clz(v), m.lax.mulhi(v, np.roll(v, 2))), rjax)


def test_bits_bad_input(rjax):
    raises_like_jax(lambda m, n: m.lax.clz(n.ones(2)), rjax)
    raises_like_jax(lambda m, n: m.lax.mulhi(n.ones(2, n.int32), n.ones(2, n.int8)), rjax)


_RP_VALUES = np.array([0.0, -0.0, 1.0, -1.0, 1.5, 3.14159, 65504.0, 65520.0, 1e5, -1e10,
                       1e-5, 6e-5, 6.1e-5, 1e-8, 1e-40, 3.4e38, np.inf, -np.inf, np.nan,
                       1.00048828125, 1.0009765625, 2.0 ** -14, 0.333333, -7.77e-3], F32)


@pytest.mark.parametrize("bits", [(5, 10), (8, 7), (4, 3), (5, 2), (2, 1), (1, 0), (8, 23),
                                  (11, 52), (3, 0)])
def test_reduce_precision(rjax, bits):
    run_both(lambda m, n: m.lax.reduce_precision(_RP_VALUES, *bits), rjax, rtol=0, atol=0)


def test_reduce_precision_dtypes_and_grad(rjax):
    for dt in (np.float16, "bfloat16"):
        run_both(lambda m, n: m.lax.reduce_precision(n.asarray(_RP_VALUES).astype(dt), 4, 3),
                 rjax, rtol=0, atol=0)
    run_both(lambda m, n: m.lax.reduce_precision(2.7, 5, 10), rjax)
    run_both(lambda m, n: m.grad(lambda x: m.lax.reduce_precision(x, 5, 10) * 2)(1.3), rjax)
    raises_like_jax(lambda m, n: m.lax.reduce_precision(n.ones(2, n.int32), 5, 10), rjax)


def test_reduce_precision_x64(rjax, x64):
    v = np.concatenate([_RP_VALUES.astype(np.float64), [1 + 2.0 ** -40, 1e300, 1e-310]])
    for bits in ((8, 23), (11, 20), (5, 10)):
        run_both(lambda m, n: m.lax.reduce_precision(v, *bits), rjax, rtol=0, atol=0)


# ---- reduce ---------------------------------------------------------------------------

def test_reduce_monoids(rjax):
    x = _op((3, 4, 5))
    for comp, init in (("add", 0.0), ("mul", 1.0), ("max", -np.inf), ("min", np.inf),
                       ("add", 2.0)):
        run_both(lambda m, n: m.lax.reduce(x, F32(init), getattr(m.lax, comp), (0, 2)),
                 rjax)
    b = x > 0
    run_both(lambda m, n: (m.lax.reduce(b, True, m.lax.bitwise_and, (1,)),
                           m.lax.reduce(b, False, m.lax.bitwise_or, (0, 1, 2))), rjax)


def test_reduce_general_computation(rjax):
    x = _op((4, 7))
    # a pytree reduction: the maximum and its index (an associative, commutative pair op)
    idx = np.broadcast_to(np.arange(7, dtype=np.int32), (4, 7))

    def argmax_comp(m):
        def comp(a, b):
            take_b = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
            return (m.numpy.where(take_b, b[0], a[0]), m.numpy.where(take_b, b[1], a[1]))
        return comp
    run_both(lambda m, n: m.lax.reduce((x, idx), (F32(-np.inf), np.int32(2**30)),
                                       argmax_comp(m), (1,)), rjax)
    run_both(lambda m, n: m.jit(lambda v: m.lax.reduce(v, F32(0), lambda a, b: a + 2 * b * 0 + b,
                                                        (0,)))(x), rjax)
    run_both(lambda m, n: m.grad(lambda v: m.lax.reduce(v, F32(0), m.lax.add, (0, 1)))(x), rjax)
    run_both(lambda m, n: m.lax.reduce(np.zeros((0, 3), F32), F32(5), m.lax.add, (0,)), rjax)


# ---- approx top-k, ragged dot ---------------------------------------------------------

def test_approx_k(rjax):
    x = np.array([[3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 8, 9, 7, 9, 3]], F32)
    run_both(lambda m, n: (m.lax.approx_max_k(x, 3), m.lax.approx_min_k(x, 3),
                           m.lax.approx_max_k(x, 2, reduction_dimension=0),
                           m.lax.approx_min_k(x.astype(np.float16), 4)), rjax)
    raises_like_jax(lambda m, n: m.lax.approx_min_k(x.astype(np.int32), 4), rjax)


def test_ragged_dot(rjax):
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((7, 4)).astype(F32)
    rhs = rng.standard_normal((3, 4, 5)).astype(F32)
    for gs in ([2, 3, 2], [0, 7, 0], [1, 1, 1], [4, 0, 1]):
        g = np.array(gs, np.int32)
        run_both(lambda m, n: m.lax.ragged_dot(lhs, rhs, g), rjax)
    g = np.array([2, 3, 2], np.int32)
    run_both(lambda m, n: m.grad(lambda a, b: m.lax.ragged_dot(a, b, g).sum() ** 2,
                                 argnums=(0, 1))(lhs, rhs), rjax, rtol=1e-4, atol=1e-4)


# ---- shape tuples ---------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "m.lax.conv_shape_tuple((1, 3, 10, 10), (8, 3, 3, 3), (1, 2), [(1, 1), (0, 0)])",
    "m.lax.conv_shape_tuple((4, 3, 10, 10), (8, 3, 3, 3), (1, 2), 'SAME', batch_group_count=2)",
    "m.lax.conv_shape_tuple((1, 3, 2), (8, 3, 5), (1,), 'VALID')",
    "m.lax.conv_general_shape_tuple((1, 10, 10, 3), (3, 3, 3, 8), (1, 1), 'SAME', "
    "('NHWC', 'HWIO', 'NHWC'))",
    "m.lax.conv_general_shape_tuple((1, 10, 9, 3), (3, 2, 3, 8), (2, 3), 'VALID', "
    "('NHWC', 'HWIO', 'NCHW'))",
    "m.lax.conv_general_permutations(('NHWC', 'HWIO', 'NHWC'))",
    "m.lax.conv_general_permutations(('NCHW', 'OIHW', 'NHWC'))",
    "m.lax.conv_transpose_shape_tuple((1, 10, 10, 3), (3, 3, 3, 8), (2, 2), 'SAME', "
    "('NHWC', 'HWIO', 'NHWC'))",
    "m.lax.conv_transpose_shape_tuple((1, 10, 10, 3), (3, 3, 3, 8), (2, 2), 'VALID', "
    "('NHWC', 'HWIO', 'NHWC'))",
    "m.lax.conv_transpose_shape_tuple((1, 10, 10, 3), (3, 3, 3, 8), (2, 2), [(1, 2), (0, 0)], "
    "('NHWC', 'HWIO', 'NHWC'))",
    "m.lax.conv_transpose_shape_tuple((1, 7, 3), (4, 3, 8), (3,), 'SAME', ('NWC', 'WIO', 'NWC'))",
    "m.lax.reduce_window_shape_tuple((10, 10), (3, 3), (2, 2), [(1, 1), (0, 0)])",
    "m.lax.reduce_window_shape_tuple((10, 10), (3, 3), (2, 2), [(1, 1), (0, 0)], (2, 1), (1, 2))",
    "m.lax.reduce_window_shape_tuple((2,), (5,), (1,), [(0, 0)])",
])
def test_shape_tuples(rjax, expr):
    import jaxlite
    got = eval(expr, {"m": jaxlite})
    want = eval(expr, {"m": rjax})
    assert tuple(np.array(got, dtype=object).tolist()) == \
        tuple(np.array(want, dtype=object).tolist())


def test_conv_permutations_bad_input(rjax):
    import jaxlite
    with pytest.raises(TypeError):
        rjax.lax.conv_general_permutations(("NHW", "HWIO", "NHWC"))
    with pytest.raises(TypeError):
        jaxlite.lax.conv_general_permutations(("NHW", "HWIO", "NHWC"))


# ---- convolution patches, locally connected convolutions --------------------------------

_X = (np.arange(2 * 3 * 6 * 5, dtype=F32).reshape(2, 3, 6, 5) / 10)


@pytest.mark.parametrize("args", [
    ((2, 2), (1, 1), "VALID", None, None, None),
    ((3, 2), (2, 1), "SAME", None, None, None),
    ((2, 3), (1, 2), [(1, 0), (2, 1)], (1, 2), (2, 1), None),
    ((2, 2), (1, 1), "VALID", None, None, ("NHWC", "OIHW", "NHWC")),
    ((1, 1), (1, 1), "VALID", None, None, None),
])
def test_conv_general_dilated_patches(rjax, args):
    fs, st, pad, ld, rd, dn = args
    x = _X if dn is None else _X.transpose(0, 2, 3, 1)
    run_both(lambda m, n: m.lax.conv_general_dilated_patches(x, fs, st, pad, ld, rd, dn), rjax)
    run_both(lambda m, n: m.lax.conv_general_dilated_patches(x.astype(np.int32), fs, st, pad,
                                                             ld, rd, dn), rjax)


def test_conv_general_dilated_local(rjax):
    rng = np.random.default_rng(0)
    rhs = rng.standard_normal((4, 12, 5, 4)).astype(F32)
    rhs_hwio = rng.standard_normal((5, 4, 12, 4)).astype(F32)
    xt = _X.transpose(0, 2, 3, 1)
    run_both(lambda m, n: m.lax.conv_general_dilated_local(_X, rhs, (1, 1), "VALID", (2, 2)),
             rjax, rtol=1e-4, atol=1e-4)
    run_both(lambda m, n: m.lax.conv_general_dilated_local(
        xt, rhs_hwio, (1, 1), "VALID", (2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC")),
        rjax, rtol=1e-4, atol=1e-4)
    run_both(lambda m, n: m.grad(lambda x, r: (m.lax.conv_general_dilated_local(
        x, r, (1, 1), "VALID", (2, 2)) ** 2).sum(), argnums=(0, 1))(_X, rhs),
        rjax, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError):
        import jaxlite
        jaxlite.lax.conv_general_dilated_local(_X, rhs[:, :11], (1, 1), "VALID", (2, 2))
