"""vmap against real JAX: in_axes/out_axes forms, axis_size/axis_name, nesting, keyword
arguments, pytree outputs, unmapped outputs; JAX's exception types for bad uses."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp
from _both import raises_like_jax, run_both
from _transform_checks import check_vmap

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 3 - 0.5
V3 = np.array([1.0, -2.0, 0.5], np.float32)

CASES = {
    "basic": lambda m, n: m.vmap(lambda a: n.sin(a) * 2)(X),
    "in_axes_1": lambda m, n: m.vmap(lambda a: a * 2, in_axes=1)(X),
    "in_axes_neg": lambda m, n: m.vmap(lambda a: n.sum(a), in_axes=-1)(X),
    "out_axes_1": lambda m, n: m.vmap(lambda a: a * 2, out_axes=1)(X),
    "out_axes_neg": lambda m, n: m.vmap(lambda a: a * 2, out_axes=-1)(X),
    "in_axes_none": lambda m, n: m.vmap(lambda a, b: a * b, in_axes=(0, None))(X, V3),
    "in_axes_list": lambda m, n: m.vmap(lambda a, b: a + b, in_axes=[0, 1])(X, X.T),
    "unmapped_output": lambda m, n: m.vmap(lambda a, b: b * 2, in_axes=(0, None))(X, V3),
    "unmapped_out_axes_none": lambda m, n: m.vmap(
        lambda a, b: (a, b * 2), in_axes=(0, None), out_axes=(0, None))(X, V3),
    "unmapped_output_axis1": lambda m, n: m.vmap(lambda a, b: b * 2, in_axes=(0, None),
                                                 out_axes=1)(X, V3),
    "dict_in_axes": lambda m, n: m.vmap(lambda d: d["a"] + d["b"],
                                        in_axes=({"a": 0, "b": 1},))({"a": X, "b": X.T}),
    "dict_prefix": lambda m, n: m.vmap(lambda d, c: d["a"] * d["b"][0] + c,
                                       in_axes=(0, None))({"a": X, "b": [X]}, 1.5),
    "tuple_prefix_inner": lambda m, n: m.vmap(lambda p: p[0] * p[1],
                                              in_axes=((0, None),))((X, V3)),
    "pytree_out": lambda m, n: m.vmap(lambda a: {"p": a * 1, "q": (a.sum(), a[0])})(X),
    "pytree_out_axes": lambda m, n: m.vmap(lambda a: {"p": a * 1, "q": (a.sum(), a[0])},
                                           out_axes={"p": 1, "q": 0})(X),
    "axis_size": lambda m, n: m.vmap(lambda a: a * 2, in_axes=None, axis_size=4)(V3),
    "axis_size_no_args": lambda m, n: m.vmap(lambda: n.float32(1.0), axis_size=2)(),
    "axis_name": lambda m, n: m.vmap(lambda a: a * 2, axis_name="i")(X),
    "nested": lambda m, n: m.vmap(m.vmap(lambda a, b: a * b, in_axes=(0, None)),
                                  in_axes=(None, 0))(V3, X[:, 0]),
    "nested_axes": lambda m, n: m.vmap(m.vmap(lambda a: n.sum(a ** 2), in_axes=1),
                                       in_axes=0)(np.ones((2, 3, 4), np.float32)),
    "kwargs": lambda m, n: m.vmap(lambda a, b: a * b)(X, b=X),
    "kwargs_only": lambda m, n: m.vmap(lambda a, b: a - b)(a=X, b=X * 2),
    "const_output_weak": lambda m, n: m.vmap(lambda a: 1.0)(X),
    "int_output": lambda m, n: m.vmap(lambda a: n.argmax(a))(X),
    "empty_axis": lambda m, n: m.vmap(lambda a: a * 2)(np.ones((0, 3), np.float32)),
    "matmul_batch": lambda m, n: m.vmap(lambda a, w: a @ w, in_axes=(0, None))(
        X, X.T),
    "reduction_axis": lambda m, n: m.vmap(lambda a: n.max(a, axis=0), in_axes=1)(
        np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_jax(name, rjax):
    run_both(CASES[name], rjax)


@pytest.mark.parametrize("in_axes", [0, 1, (0, None), (1, 0), (None, 1)])
def test_matches_stacked_examples(in_axes):
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.arange(12, dtype=np.float32).reshape(4, 3)[:3, :3] / 5
    args = (a[:, :3], b)
    check_vmap(lambda x, y: ljnp.tanh(x) @ y + ljnp.sum(y * x, axis=0), args, in_axes)


ERRORS = {
    "out_axes_none_mapped": (lambda m, n: m.vmap(lambda a: a, out_axes=None)(X),
                             "out_axes.*None.*batched"),
    "out_axes_none_nested": (lambda m, n: m.vmap(lambda a: (a, a), out_axes=(0, None))(X),
                             r"out_axes\[1\]"),
    "mismatched_dict": (lambda m, n: m.vmap(lambda d: d["a"], in_axes=({"a": 0, "c": 0},))(
        {"a": X, "b": X}), "tree prefix"),
    "mismatched_list_tuple": (lambda m, n: m.vmap(lambda d: d, in_axes=([0, 0],))((X, X)),
                              "tree prefix"),
    "out_axes_tree": (lambda m, n: m.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(X),
                      "tree prefix"),
    "in_axes_len": (lambda m, n: m.vmap(lambda a, b: a, in_axes=(0, 0, 0))(X, X),
                    r"len\(in_axes\)=3, len\(args\)=2"),
    "in_axes_float": (lambda m, n: m.vmap(lambda a: a, in_axes=1.0)(X), "in_axes"),
    "in_axes_dict_top": (lambda m, n: m.vmap(lambda a: a, in_axes={"a": 0})(X), "in_axes"),
    "non_array_leaf": (lambda m, n: m.vmap(lambda a: a)("abc"), "cannot be used as an array"),
    "inconsistent_sizes": (lambda m, n: m.vmap(lambda a, b: a)(X, V3),
                           "different sizes(.|\n)*argument a(.|\n)*argument b"),
    "inconsistent_kwargs": (lambda m, n: m.vmap(lambda a, b: a)(X, b=V3),
                            r"kwargs\['b'\]"),
    "inconsistent_pytree": (lambda m, n: m.vmap(lambda p: p)([X, V3]),
                            r"p\[1\]"),
    "inconsistent_axis_size": (lambda m, n: m.vmap(lambda a: a, axis_size=3)(X), "axis_size"),
    "axis_out_of_range": (lambda m, n: m.vmap(lambda a: a, in_axes=2)(X),
                          "axis 2.*rank 2.*at least 3"),
    "axis_out_of_range_neg": (lambda m, n: m.vmap(lambda a: a, in_axes=-3)(X), "axis -3"),
    "scalar_mapped": (lambda m, n: m.vmap(lambda a: a)(3.0), "rank"),
    "out_axis_out_of_range": (lambda m, n: m.vmap(lambda a: a, out_axes=3)(X), "3"),
    "no_mapped_inputs": (lambda m, n: m.vmap(lambda a: a, in_axes=None)(X), "axis_size"),
    "not_callable": (lambda m, n: m.vmap(3), "callable"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_jax(name, rjax):
    case, match = ERRORS[name]
    raises_like_jax(case, rjax, match=match)


def test_dot_general_batching_at_any_axis_random_dimension_numbers():
    """vmap of lax.dot_general with the mapped axis anywhere in one operand or both, over
    random batch/free/contracting layouts and out_axes: equal to stacking the per-example
    products (the one-mapped rule keeps the mapped axis in place as a free dimension)."""
    from jaxlite import lax
    jax = jaxlite
    rng = np.random.default_rng(0)
    cases = 0
    cases = 0
    for trial in range(100):
        # random dims: lhs (b.., f.., c..) permuted, rhs (b.., c.., g..) permuted
        nb, nf, nc, ng = rng.integers(0, 2), rng.integers(0, 3), rng.integers(0, 3), rng.integers(0, 3)
        bs = list(rng.integers(1, 4, nb)); fs = list(rng.integers(1, 4, nf)); cs = list(rng.integers(1, 4, nc)); gs = list(rng.integers(1, 4, ng))
        lhs_dims = [("b", i) for i in range(nb)] + [("f", i) for i in range(nf)] + [("c", i) for i in range(nc)]
        rhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("g", i) for i in range(ng)]
        rng.shuffle(lhs_dims); rng.shuffle(rhs_dims)
        size = {"b": bs, "f": fs, "c": cs, "g": gs}
        lshape = [size[k][i] for k, i in lhs_dims]; rshape = [size[k][i] for k, i in rhs_dims]
        lc = tuple(lhs_dims.index(("c", i)) for i in range(nc)); rc = tuple(rhs_dims.index(("c", i)) for i in range(nc))
        lb = tuple(lhs_dims.index(("b", i)) for i in range(nb)); rb = tuple(rhs_dims.index(("b", i)) for i in range(nb))
        dn = ((lc, rc), (lb, rb))
        n = 3
        for which in ("l", "r", "both"):
            ax_l = int(rng.integers(0, len(lshape) + 1)); ax_r = int(rng.integers(0, len(rshape) + 1))
            L = rng.standard_normal(lshape[:ax_l] + [n] + lshape[ax_l:]).astype(np.float32) if which != "r" else rng.standard_normal(lshape).astype(np.float32)
            R = rng.standard_normal(rshape[:ax_r] + [n] + rshape[ax_r:]).astype(np.float32) if which != "l" else rng.standard_normal(rshape).astype(np.float32)
            ia = (ax_l if which != "r" else None, ax_r if which != "l" else None)
            out_ax = int(rng.integers(0, 1 + len(jax.eval_shape(lambda a, b: lax.dot_general(a, b, dn), np.take(L, 0, ia[0]) if ia[0] is not None else L, np.take(R, 0, ia[1]) if ia[1] is not None else R).shape)))
            got = np.asarray(jax.vmap(lambda a, b: lax.dot_general(a, b, dn), in_axes=ia, out_axes=out_ax)(L, R))
            want = np.stack([np.asarray(lax.dot_general(np.take(L, k, ia[0]) if ia[0] is not None else L, np.take(R, k, ia[1]) if ia[1] is not None else R, dn)) for k in range(n)], axis=out_ax)
            assert got.shape == want.shape, (dn, ia, got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            cases += 1
    assert cases == 300
