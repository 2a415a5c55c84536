"""lax control flow (scan, fori_loop, while_loop, cond, switch, map, associative_scan)
against real JAX: values, shapes, dtypes and weak types, eagerly and under jit; the IR
stays one equation per loop; bad input raises JAX's exception types."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.tree_util import tree_flatten

from oracle import assert_like_jax

F32 = np.float32


def assert_tree_like_jax(got, want):
    g, gt = tree_flatten(got)
    w, wt = tree_flatten(want)
    assert gt == wt, f"structure {gt} != jax {wt}"
    for a, b in zip(g, w):
        if isinstance(b, (bool, int, float, complex)):   # JAX returned a Python scalar
            assert type(a) is type(b) and a == b, (a, b)
        else:
            assert_like_jax(a, b)


def _affine(a, b):
    # composition of x -> a0 * x + a1 then b: associative, not commutative
    return (a[0] * b[0], a[1] * b[0] + b[1])


xs5 = np.arange(5, dtype=F32)
xs23 = np.arange(6, dtype=F32).reshape(2, 3)

# name -> (make(lax, jnp) -> function of the args, args)
CASES = {
    # scan
    "scan_cumsum": (lambda L, N: lambda xs: L.scan(lambda c, x: (c + x, c * 2), 0., xs),
                    [xs5]),
    "scan_pytree": (lambda L, N: lambda xs, ys: L.scan(
        lambda c, x: ({"s": c["s"] + x[0], "p": (c["p"][0] * x[1][0], c["p"][1] + 1)},
                      (x[0] - 1, {"y": x[1] * 2})),
        {"s": F32(0), "p": (N.ones(3), 7)}, (xs, ys)), [xs5, np.ones((5, 3), F32) * 1.5]),
    "scan_reverse": (lambda L, N: lambda xs: L.scan(lambda c, x: (c * 2 + x, c), 1., xs,
                                                    reverse=True), [xs5]),
    "scan_length_only": (lambda L, N: lambda: L.scan(lambda c, x: (c + 1, c * c), 0, None,
                                                     length=4), []),
    "scan_unroll": (lambda L, N: lambda xs: L.scan(lambda c, x: (c + x, c), F32(0), xs,
                                                   unroll=2), [xs5]),
    "scan_unroll_true": (lambda L, N: lambda xs: L.scan(lambda c, x: (c + x, None), F32(0),
                                                        xs, unroll=True), [xs5]),
    "scan_ys_none": (lambda L, N: lambda xs: L.scan(lambda c, x: (c + x, None), F32(0), xs),
                     [xs5]),
    "scan_weak_int_init": (lambda L, N: lambda xs: L.scan(lambda c, x: (c + x, c), 0, xs),
                           [xs5]),
    "scan_weak_stays": (lambda L, N: lambda: L.scan(lambda c, x: (c * 2, 2.0), 1.0, None,
                                                    length=3), []),
    "scan_strong_in_weak_out": (lambda L, N: lambda: L.scan(lambda c, x: (2.0, c), F32(1),
                                                            None, length=3), []),
    "scan_2d_xs": (lambda L, N: lambda xs: L.scan(lambda c, x: (c + x.sum(), x[::-1]),
                                                  F32(0), xs), [xs23]),
    "scan_matrix_carry": (lambda L, N: lambda m, xs: L.scan(
        lambda c, x: (c @ m + x, N.trace(c)), N.eye(3, dtype=N.float32), xs),
        [np.full((3, 3), 0.5, F32), np.ones((4, 3, 3), F32)]),
    "scan_closure": (lambda L, N: lambda w, xs: L.scan(lambda c, x: (c + w * x, c.sum()),
                                                       N.zeros(3), xs)[0],
                     [np.array([1., 2., 3.], F32), xs5]),
    "scan_length0": (lambda L, N: lambda: L.scan(lambda c, x: (c + x, x * 2), np.ones(2, F32),
                                                 np.zeros((0, 2), F32)), []),
    "scan_int_carry": (lambda L, N: lambda xs: L.scan(lambda c, x: (c * 3 % 7 + x, c),
                                                      np.int32(1), xs),
                       [np.arange(6, dtype=np.int32)]),
    "scan_nested": (lambda L, N: lambda xs: L.scan(
        lambda c, row: (c + L.scan(lambda d, v: (d * v + 1, None), F32(0), row)[0], c),
        F32(0), xs), [xs23]),
    # fori_loop
    "fori_static": (lambda L, N: lambda: L.fori_loop(0, 5, lambda i, x: x + i, 0.), []),
    "fori_static_int": (lambda L, N: lambda: L.fori_loop(2, 6, lambda i, x: x * i, 1), []),
    "fori_tuple": (lambda L, N: lambda v: L.fori_loop(
        0, 4, lambda i, c: (c[0] + v * i, c[1] * 2), (N.zeros(2), F32(1))),
        [np.array([1., -1.], F32)]),
    "fori_empty": (lambda L, N: lambda: L.fori_loop(5, 2, lambda i, x: x + i, 0.), []),
    "fori_array_bounds": (lambda L, N: lambda lo, hi: L.fori_loop(lo, hi,
                                                                  lambda i, x: x + i, 0.),
                          [np.int32(1), np.int32(6)]),
    "fori_mixed_bounds": (lambda L, N: lambda hi: L.fori_loop(0, hi, lambda i, x: x + i, 0),
                          [np.int16(4)]),
    "fori_unroll": (lambda L, N: lambda: L.fori_loop(0, 5, lambda i, x: x * 2 + i, 1.,
                                                     unroll=2), []),
    "fori_body_promotes": (lambda L, N: lambda: L.fori_loop(0, 3, lambda i, x: x + 1.5, 0),
                           []),
    # while_loop
    "while_simple": (lambda L, N: lambda: L.while_loop(lambda x: x < 100, lambda x: x * 3,
                                                       1), []),
    "while_tuple": (lambda L, N: lambda n: L.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + c[0] * 0.5), (0, F32(0))),
        [np.int32(7)]),
    "while_weak_promote": (lambda L, N: lambda: L.while_loop(lambda x: x < 10,
                                                             lambda x: x * np.int32(2), 1),
                           []),
    "while_closure": (lambda L, N: lambda v: L.while_loop(lambda x: x.sum() < 20,
                                                          lambda x: x + v, N.zeros(2)),
                      [np.array([1., 2.], F32)]),
    "while_zero_trips": (lambda L, N: lambda: L.while_loop(lambda x: x > 5, lambda x: x - 1,
                                                           F32(3)), []),
    # cond
    "cond_true": (lambda L, N: lambda x: L.cond(True, lambda x: x + 1, lambda x: x * 2, x),
                  [xs5]),
    "cond_false_arr": (lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1,
                                                        lambda x: x * 2, x),
                       [np.bool_(False), xs5]),
    "cond_int_pred": (lambda L, N: lambda p: L.cond(p, lambda: 1., lambda: 2.),
                      [np.int32(2)]),
    "cond_float_pred": (lambda L, N: lambda p: L.cond(p, lambda: 1., lambda: 2.),
                        [F32(0.5)]),
    "cond_float_pred0": (lambda L, N: lambda p: L.cond(p, lambda: 1., lambda: 2.),
                         [F32(0.0)]),
    "cond_pytree": (lambda L, N: lambda x, y: L.cond(
        x.sum() > 3, lambda a, b: {"u": a * 2, "v": (b, a[0])},
        lambda a, b: {"u": a - 1, "v": (b * b, a[1])}, x, y), [xs5, np.int32(3)]),
    "cond_weak_join": (lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1,
                                                        lambda x: N.float32(x), x),
                       [np.bool_(True), 1.0]),
    "cond_weak_both": (lambda L, N: lambda p: L.cond(p, lambda: 1.0, lambda: 2.0),
                       [np.bool_(False)]),
    "cond_closure": (lambda L, N: lambda p, w, z: L.cond(p, lambda x: x * w,
                                                         lambda x: x + z, F32(2)),
                     [np.bool_(True), np.array([1., 2.], F32), np.array([3., 4.], F32)]),
    "cond_operand_kw": (lambda L, N: lambda: L.cond(False, lambda x: x + 1, lambda x: x - 1,
                                                    operand=1.0), []),
    "cond_old_form": (lambda L, N: lambda: L.cond(True, 1.0, lambda x: x + 1, 2.0,
                                                  lambda x: x - 1), []),
    "cond_none_out": (lambda L, N: lambda: L.cond(True, lambda: None, lambda: None), []),
    "cond_in_scan": (lambda L, N: lambda xs: L.scan(
        lambda c, x: (L.cond(x > 2, lambda: c + x, lambda: c - x), c), F32(0), xs), [xs5]),
    # switch
    "switch_in_range": (lambda L, N: lambda i, x: L.switch(
        i, [lambda x: x + 1, lambda x: x * 10, lambda x: -x], x), [np.int32(1), xs5]),
    "switch_clamp_hi": (lambda L, N: lambda i, x: L.switch(
        i, [lambda x: x + 1, lambda x: x * 10, lambda x: -x], x), [np.int32(7), xs5]),
    "switch_clamp_lo": (lambda L, N: lambda i, x: L.switch(
        i, [lambda x: x + 1, lambda x: x * 10, lambda x: -x], x), [np.int32(-3), xs5]),
    "switch_py_index": (lambda L, N: lambda: L.switch(5, [lambda: 1., lambda: 2.]), []),
    "switch_uint8": (lambda L, N: lambda i: L.switch(i, [lambda: 1., lambda: 2.]),
                     [np.uint8(200)]),
    "switch_one": (lambda L, N: lambda: L.switch(3, [lambda x: x + 1], 1.0), []),
    # map
    "map_basic": (lambda L, N: lambda xs: L.map(lambda x: x * 2, xs),
                  [np.arange(5, dtype=np.int32)]),
    "map_pytree": (lambda L, N: lambda a, b: L.map(lambda x: (x[0] * 2, x[1].sum()), (a, b)),
                   [xs5, np.ones((5, 3), F32)]),
    "map_batch_size": (lambda L, N: lambda xs: L.map(lambda x: x * x, xs, batch_size=2),
                       [xs5]),
    "map_none": (lambda L, N: lambda xs: L.map(lambda x: None, xs), [xs5]),
    # associative_scan
    "as_cumsum": (lambda L, N: lambda x: L.associative_scan(N.add, x),
                  [np.arange(7, dtype=np.int32)]),
    "as_cumprod": (lambda L, N: lambda x: L.associative_scan(N.multiply, x),
                   [np.linspace(0.5, 1.5, 9).astype(F32)]),
    "as_max": (lambda L, N: lambda x: L.associative_scan(N.maximum, x),
               [np.array([3., 1., 4., 1., 5., 9., 2., 6.], F32)]),
    "as_affine": (lambda L, N: lambda a, b: L.associative_scan(_affine, (a, b)),
                  [np.arange(1., 7., dtype=F32), np.arange(6, dtype=F32) + 0.5]),
    "as_affine_reverse": (lambda L, N: lambda a, b: L.associative_scan(_affine, (a, b),
                                                                       reverse=True),
                          [np.arange(1., 6., dtype=F32), np.arange(5, dtype=F32) + 0.5]),
    "as_axis1": (lambda L, N: lambda x: L.associative_scan(N.add, x, axis=1),
                 [np.arange(15, dtype=F32).reshape(3, 5)]),
    "as_axis_neg": (lambda L, N: lambda x: L.associative_scan(N.add, x, axis=-2),
                    [np.arange(24, dtype=F32).reshape(2, 3, 4)]),
    "as_dict": (lambda L, N: lambda x: L.associative_scan(
        lambda a, b: {"s": a["s"] + b["s"], "m": N.minimum(a["m"], b["m"])},
        {"s": x, "m": -x}), [np.array([2., 7., 1., 8.], F32)]),
    "as_len1": (lambda L, N: lambda x: L.associative_scan(N.add, x), [np.ones(1, F32)]),
    "as_empty": (lambda L, N: lambda x: L.associative_scan(N.add, x), [np.ones(0, F32)]),
}


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_jax(name, mode, rjax):
    make, args = CASES[name]
    f, g = make(lax, jnp), make(rjax.lax, rjax.numpy)
    if mode == "jit":   # traced bounds/predicates can change the result type (fori_loop)
        f, g = jax.jit(f), rjax.jit(g)
    want = g(*args)
    assert_tree_like_jax(f(*args), want)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 33), reverse=st.booleans())
def test_associative_scan_lengths(n, reverse):
    """Every length (odd/even splits at every recursion depth) matches NumPy's cumsum and
    a sequential composition of a non-commutative operator."""
    x = np.arange(1, n + 1, dtype=np.int32)
    got = lax.associative_scan(jnp.add, x, reverse=reverse)
    want = np.cumsum(x[::-1])[::-1] if reverse else np.cumsum(x)
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.int32))
    a = np.linspace(0.5, 1.5, n).astype(np.float64)
    b = np.linspace(-1, 1, n).astype(np.float64)
    ga, gb = lax.associative_scan(_affine, (jnp.asarray(a, jnp.float32),
                                            jnp.asarray(b, jnp.float32)), reverse=reverse)
    acc, wa, wb = None, [], []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        acc = (a[i], b[i]) if acc is None else _affine(acc, (a[i], b[i]))
        wa.append(acc[0])
        wb.append(acc[1])
    if reverse:
        wa, wb = wa[::-1], wb[::-1]
    np.testing.assert_allclose(np.asarray(ga), np.array(wa), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), np.array(wb), rtol=1e-5, atol=1e-5)


# ---- the IR -------------------------------------------------------------------------------

def _count_eqns(jaxpr):
    return len(jaxpr.jaxpr.eqns if hasattr(jaxpr, "jaxpr") else jaxpr.eqns)


@pytest.mark.parametrize("loop", ["scan", "fori", "fori_traced"])
def test_ir_size_independent_of_steps(loop):
    def make(n):
        if loop == "scan":
            return lambda x: lax.scan(lambda c, _: (c * 1.01 + 1, c), x, None, length=n)
        if loop == "fori":
            return lambda x: lax.fori_loop(0, n, lambda i, c: c * 1.01 + i, x)
        return lambda x, m: lax.fori_loop(0, m * n, lambda i, c: c * 1.01 + i, x)
    args = (F32(1),) if loop != "fori_traced" else (F32(1), np.int32(1))
    small = jax.make_jaxpr(make(10))(*args)
    big = jax.make_jaxpr(make(1000))(*args)
    assert _count_eqns(small) == _count_eqns(big)
    prim = {"scan": "scan", "fori": "scan", "fori_traced": "while"}[loop]
    names = [e.primitive.name for e in big.jaxpr.eqns]
    assert names.count(prim) == 1
    if prim == "scan":
        eqn = next(e for e in big.jaxpr.eqns if e.primitive.name == "scan")
        assert eqn.params["length"] == 1000
        assert len(eqn.params["jaxpr"].jaxpr.eqns) <= 4


def test_closed_over_tracer_becomes_operand():
    """A jit argument used inside the body is an operand of the scan equation (the body's
    jaxpr has no constants)."""
    def f(w, xs):
        return lax.scan(lambda c, x: (c + w * x, None), jnp.zeros(3), xs)[0]
    closed = jax.make_jaxpr(f)(np.ones(3, F32), xs5)
    eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "scan")
    assert eqn.params["num_consts"] == 1
    assert eqn.invars[0] is closed.jaxpr.invars[0]
    assert eqn.params["jaxpr"].consts == []


def test_jit_keeps_loop_with_constant_inputs():
    """Constant folding does not run a loop at compile time."""
    f = jax.jit(lambda: lax.scan(lambda c, _: (c + 1., None), F32(0), None, length=50)[0])
    text = f.lower().compile().as_text()
    assert "scan" in text
    assert float(f()) == 50.0


def test_scan_output_does_not_alias_input():
    x = jnp.arange(3.)
    c, ys = lax.scan(lambda c, x: (c, c), x, None, length=2)
    np.testing.assert_array_equal(np.asarray(c), [0., 1., 2.])
    np.testing.assert_array_equal(np.asarray(ys), [[0., 1., 2.]] * 2)


# ---- errors -------------------------------------------------------------------------------

ERRORS = {
    "scan_carry_shape": lambda L, N: L.scan(lambda c, x: (N.stack([c, c]), None), 0.,
                                            N.arange(3.)),
    "scan_carry_dtype": lambda L, N: L.scan(lambda c, x: ({"a": c["a"].astype(N.int32)}, None),
                                            {"a": N.float32(1)}, N.arange(3.)),
    "scan_carry_tree": lambda L, N: L.scan(lambda c, x: ((c, c), None), 0., N.arange(3.)),
    "scan_xs_sizes": lambda L, N: L.scan(lambda c, x: (c, None), 0.,
                                         (N.arange(3.), N.arange(4.))),
    "scan_wrong_length": lambda L, N: L.scan(lambda c, x: (c, None), 0., N.arange(3.),
                                             length=4),
    "scan_no_length": lambda L, N: L.scan(lambda c, x: (c, None), 0., None),
    "scan_not_pair": lambda L, N: L.scan(lambda c, x: c, 0., N.arange(3.)),
    "scan_not_callable": lambda L, N: L.scan(1, 0., N.arange(3.)),
    "scan_bad_unroll": lambda L, N: L.scan(lambda c, x: (c, None), 0., N.arange(3.),
                                           unroll=-1),
    "fori_bound_types": lambda L, N: L.fori_loop(N.int16(0), N.int8(3), lambda i, x: x, 0),
    "fori_float_int_bounds": lambda L, N: L.fori_loop(0., 3, lambda i, x: x, 0),
    "fori_body_tree": lambda L, N: L.fori_loop(0, 2, lambda i, x: (x,), 0.),
    "while_cond_int": lambda L, N: L.while_loop(lambda x: x, lambda x: x - 1, 3),
    "while_cond_vector": lambda L, N: L.while_loop(lambda x: x > 0, lambda x: x - 1,
                                                   N.arange(3)),
    "while_body_dtype": lambda L, N: L.while_loop(lambda x: x["a"] < 3,
                                                  lambda x: {"a": x["a"] + 1.0},
                                                  {"a": N.int32(0)}),
    "while_body_tree": lambda L, N: L.while_loop(lambda x: x[0] < 10, lambda x: (x[0],),
                                                 (1, 2)),
    "while_not_callable": lambda L, N: L.while_loop(1, lambda x: x, 0.),
    "cond_dtype": lambda L, N: L.cond(True, lambda: N.int32(1), lambda: N.float32(2)),
    "cond_weak_int_vs_float": lambda L, N: L.cond(True, lambda: 1, lambda: N.float32(2)),
    "cond_shape": lambda L, N: L.cond(True, lambda: N.zeros(2), lambda: N.zeros(3)),
    "cond_tree": lambda L, N: L.cond(True, lambda: (1., 2.), lambda: 1.),
    "cond_pred_vector": lambda L, N: L.cond(N.array([True]), lambda: 1., lambda: 2.),
    "cond_pred_complex": lambda L, N: L.cond(1j, lambda: 1., lambda: 2.),
    "cond_pred_str": lambda L, N: L.cond("a", lambda: 1., lambda: 2.),
    "cond_not_callable": lambda L, N: L.cond(True, 1, lambda: 1),
    "switch_float_index": lambda L, N: L.switch(1.0, [lambda: 1., lambda: 2.]),
    "switch_bool_index": lambda L, N: L.switch(True, [lambda: 1., lambda: 2.]),
    "switch_vector_index": lambda L, N: L.switch(N.array([1]), [lambda: 1., lambda: 2.]),
    "switch_empty": lambda L, N: L.switch(0, [], 1.0),
    "switch_not_callable": lambda L, N: L.switch(0, [1, 2], 0.),
    "switch_tree": lambda L, N: L.switch(0, [lambda x: x + 1, lambda x: (x, x)], 1.0),
    "switch_dtype": lambda L, N: L.switch(0, [lambda x: x, lambda x: x.astype(N.int32)],
                                          N.float32(1)),
    "map_sizes": lambda L, N: L.map(lambda x: x, (N.arange(5), N.ones((4, 3)))),
    "as_sizes": lambda L, N: L.associative_scan(N.add, (N.arange(7), N.arange(6))),
    "as_axis": lambda L, N: L.associative_scan(N.add, N.ones((2, 5)), axis=2),
    "as_scalar": lambda L, N: L.associative_scan(N.add, N.float32(1)),
}


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_jax(name, rjax):
    want = _raised(lambda: ERRORS[name](rjax.lax, rjax.numpy))
    assert want is not None, "JAX accepts this: the test case is wrong"
    got = _raised(lambda: ERRORS[name](lax, jnp))
    assert got is not None, f"jaxlite accepted input JAX rejects with {want!r}"
    assert type(got) is type(want) or isinstance(got, type(want)), (got, want)


def test_error_messages_name_the_culprit():
    with pytest.raises(TypeError, match=r"carry c\['a'\] has type float32\[\].*int32\[\]"):
        ERRORS["scan_carry_dtype"](lax, jnp)
    with pytest.raises(TypeError,
                       match=r"input carry c has type float32\[\].*float32\[2\].*shapes"):
        ERRORS["scan_carry_shape"](lax, jnp)
    with pytest.raises(TypeError, match=r"\*.*\(\*, \*\)"):
        ERRORS["scan_carry_tree"](lax, jnp)
    with pytest.raises(TypeError, match=r"true_fun.*int32\[\].*false_fun.*float32\[\].*dtypes"):
        ERRORS["cond_dtype"](lax, jnp)
    with pytest.raises(TypeError, match=r"branch 0.*branch 1"):
        ERRORS["switch_tree"](lax, jnp)
    with pytest.raises(ValueError, match=r"3, 4"):
        ERRORS["scan_xs_sizes"](lax, jnp)
    with pytest.raises(TypeError, match=r"bool\[3\]"):
        ERRORS["while_cond_vector"](lax, jnp)
    with pytest.raises(jax.errors.ConcretizationTypeError, match="length"):
        jax.jit(lambda n: lax.scan(lambda c, x: (c, None), 0., None, length=n))(3)
    with pytest.raises(ValueError, match="statically known"):
        jax.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0., unroll=2))(3)


def test_errors_under_jit():
    """Type errors in bodies are raised while tracing an enclosing jit as well."""
    with pytest.raises(TypeError):
        jax.jit(lambda p: lax.cond(p, lambda: jnp.zeros(2), lambda: jnp.zeros(3)))(True)
    with pytest.raises(TypeError):
        jax.jit(lambda x: lax.scan(lambda c, _: (c.astype(jnp.int32), None), x, None,
                                   length=2))(F32(1))
    with pytest.raises(TypeError):
        jax.jit(lambda i: lax.switch(i, [lambda: 1., lambda: 2.]))(F32(1))


def test_effects_in_bodies_survive_jit():
    """A loop or branch whose body has an effect is kept by dead-code elimination and not
    merged by CSE, even when its outputs are unused."""
    seen = []

    def f(xs):
        def body(c, x):
            lax.debug_callback(lambda v: seen.append(float(v)), x)
            return c + x, None
        lax.scan(body, F32(0), xs)
        lax.scan(body, F32(0), xs)
        lax.cond(xs[0] > -1, lambda: lax.debug_callback(lambda: seen.append(-1.0)),
                 lambda: None)
        return xs.sum()
    jax.jit(f)(np.arange(3, dtype=F32))
    assert seen == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, -1.0]


@pytest.mark.parametrize("name", ["scan_cumsum", "fori_static", "fori_array_bounds",
                                  "while_tuple", "switch_in_range", "cond_float_pred"])
def test_against_jax_x64(name, rjax, x64):
    make, args = CASES[name]
    args = [a.astype(np.float64) if a.dtype == F32 else a.astype(np.int64)
            if a.dtype == np.int32 else a for a in args]
    assert_tree_like_jax(jax.jit(make(lax, jnp))(*args),
                         rjax.jit(make(rjax.lax, rjax.numpy))(*args))
    assert_tree_like_jax(make(lax, jnp)(*args), make(rjax.lax, rjax.numpy)(*args))


# ---- forward mode through while_loop: jvp and linearize (issue 10) ---------------------

def _while_fn(L, N):
    def f(x, y):
        def body(c):
            i, a, b = c
            return i + 1, a * 1.5 + N.sin(b), b * y
        return L.while_loop(lambda c: c[0] < 5, body, (0, x, x))[1]
    return f


@pytest.mark.parametrize("form", ["linearize", "linearize_jit", "linearize_vmap", "jacfwd",
                                  "linearize_const_tangent"])
def test_linearize_through_while(form, rjax):
    """jax.linearize works through lax.while_loop, as in JAX (it was refused with the
    reverse-mode error): the loop carrying primals and tangents is staged whole."""
    x = np.array([0.3, -1.2], F32)
    y = np.array([0.9, 1.1], F32)
    t = np.array([1.0, 0.5], F32)

    def run(J):
        f = _while_fn(J.lax, J.numpy)
        if form == "linearize":
            out, lin = J.linearize(f, x, y)
            return [out, lin(t, t), lin(2 * t, 0 * t)]
        if form == "linearize_jit":
            return [J.jit(lambda a, b: J.linearize(f, a, b)[1](t, t))(x, y)]
        if form == "linearize_vmap":
            _, lin = J.linearize(f, x, y)
            return [J.vmap(lin)(np.stack([t, 2 * t]), np.stack([t, t]))]
        if form == "jacfwd":
            return [J.jacfwd(f, (0, 1))(x, y)]
        _, lin = J.linearize(lambda a: f(a, y), x)       # y's tangent is a symbolic zero
        return [lin(t)]
    for g, w in zip(tree_flatten(run(jax))[0], tree_flatten(run(rjax))[0]):
        assert_like_jax(g, w, rtol=1e-5)


def test_grad_through_while_refused(rjax):
    """Reverse mode through while_loop is refused with ValueError (as JAX), when the VJP
    is applied (jax.vjp itself and linearize succeed)."""
    f = _while_fn(lax, jnp)
    x = np.array([0.3, -1.2], F32)
    with pytest.raises(ValueError, match="reverse mode"):
        jax.grad(lambda a: f(a, a).sum())(x)
    _, pullback = jax.vjp(lambda a: f(a, a), x)
    with pytest.raises(ValueError, match="reverse mode"):
        pullback(x)
    rf = _while_fn(rjax.lax, rjax.numpy)
    with pytest.raises(ValueError):
        rjax.grad(lambda a: rf(a, a).sum())(x)
