"""The compiler pass folding a sum over a dot_general's batch dimensions into its
contraction (compiler/passes/batch_dot_sum.py): on random programs (shapes, dtypes, batch
dimensions anywhere, a transpose between, reduce_sum or an add chain of slices in any
grouping) the rewritten program agrees with the program before the pass (the reference
interpreter), with jit, and with NumPy; programs that do not match stay unchanged."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.compiler import optimize
from jaxlite.compiler.passes import cse, dce, fold_batch_dot_sums
from jaxlite.ir import eval_jaxpr

DTYPES = (np.float32, np.float64, np.int32)


def names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def run(closed, *args):
    return [np.asarray(x) for x in eval_jaxpr(closed.jaxpr, closed.consts, *args)]


def folded(closed):
    return dce(fold_batch_dot_sums(closed))


def _chain(t, d, order, squeeze, lax=lax):
    """``t`` summed over ``d`` as the adds of its slices (``lax``: jaxlite's or JAX's):
    ``order`` is the slices' order, grouped pairwise (odd counts: the first two first)."""
    def piece(i):
        if squeeze:
            return lax.index_in_dim(t, i, d, keepdims=False)
        s = lax.slice_in_dim(t, i, i + 1, axis=d)
        return lax.reshape(s, t.shape[:d] + t.shape[d + 1:])
    ps = [piece(i) for i in order]
    while len(ps) > 1:
        if len(ps) % 2:
            ps = [ps[0] + ps[1]] + ps[2:]
        else:
            ps = [ps[k] + ps[k + 1] for k in range(0, len(ps), 2)]
    return ps[0]


@st.composite
def cases(draw):
    """A batched dot_general (roles of the dimensions shuffled in each operand), an
    optional transpose of its result, and a sum over some of its batch dimensions."""
    size = st.integers(0, 3) if draw(st.booleans()) else st.integers(1, 3)
    nb = draw(st.integers(1, 2))
    nc, nlf, nrf = (draw(st.integers(0, 2)) for _ in range(3))
    bs = [draw(st.integers(0, 4)) for _ in range(nb)]
    cs = [draw(size) for _ in range(nc)]
    lf = [draw(size) for _ in range(nlf)]
    rf = [draw(size) for _ in range(nrf)]
    lroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
        [("f", i) for i in range(nlf)]
    rroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
        [("f", i) for i in range(nrf)]
    lroles = draw(st.permutations(lroles))
    rroles = draw(st.permutations(rroles))
    out_nd = nb + nlf + nrf
    perm = tuple(draw(st.permutations(range(out_nd)))) if draw(st.booleans()) else None
    mode = draw(st.sampled_from(["reduce_sum", "chain", "chain_squeeze"]))
    if mode == "reduce_sum":
        summed = draw(st.lists(st.integers(0, nb - 1), min_size=1, max_size=nb,
                               unique=True))
    else:
        summed = [draw(st.integers(0, nb - 1))]
        bs[summed[0]] = draw(st.integers(2, 5))
    order = draw(st.permutations(range(bs[summed[0]]))) if mode != "reduce_sum" else None
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2 ** 16))

    def shape(roles, free):
        return tuple({"b": bs, "c": cs, "f": free}[r][i] for r, i in roles)
    return dict(lroles=lroles, rroles=rroles, lshape=shape(lroles, lf),
                rshape=shape(rroles, rf), nb=nb, perm=perm, mode=mode, summed=summed,
                order=order, dtype=dtype, seed=seed)


def build(c, lib=jax):
    """(function, lhs, rhs, NumPy float64 reference) of case ``c``; the function is
    written with ``lib`` (jaxlite, or JAX for the oracle)."""
    lax, jnp = lib.lax, lib.numpy
    lr, rr = c["lroles"], c["rroles"]
    lb = tuple(lr.index(("b", i)) for i in range(c["nb"]))
    rb = tuple(rr.index(("b", i)) for i in range(c["nb"]))
    nc = sum(1 for r, _ in lr if r == "c")
    lc = tuple(lr.index(("c", i)) for i in range(nc))
    rc = tuple(rr.index(("c", i)) for i in range(nc))
    dn = ((lc, rc), (lb, rb))
    perm = c["perm"]
    pos = [perm.index(j) if perm is not None else j for j in c["summed"]]

    def f(a, b):
        d = lax.dot_general(a, b, dn)
        if perm is not None:
            d = lax.transpose(d, perm)
        if c["mode"] == "reduce_sum":
            return jnp.sum(d, axis=tuple(pos), dtype=d.dtype)
        return _chain(d, pos[0], c["order"], c["mode"] == "chain_squeeze", lax)

    rng = np.random.default_rng(c["seed"])
    # small integers: every float sum is exact, so the results agree bit for bit
    a = rng.integers(-3, 4, c["lshape"]).astype(c["dtype"])
    b = rng.integers(-3, 4, c["rshape"]).astype(c["dtype"])
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sym = {}

    def key(side, role):
        return (side + role[0], role[1]) if role[0] == "f" else role

    def letter(k):
        if k not in sym:
            sym[k] = next(letters)
        return sym[k]
    ls = "".join(letter(key("l", r)) for r in lr)
    rs = "".join(letter(key("r", r)) for r in rr)
    out = "".join(sym[("b", i)] for i in range(c["nb"])) + \
        "".join(sym[key("l", r)] for r in lr if r[0] == "f") + \
        "".join(sym[key("r", r)] for r in rr if r[0] == "f")
    ref = np.einsum(f"{ls},{rs}->{out}", a.astype(np.float64), b.astype(np.float64))
    if perm is not None:
        ref = np.transpose(ref, perm)
    ref = ref.sum(axis=tuple(pos))
    return f, a, b, ref


@settings(max_examples=40, deadline=None)
@given(c=cases())
def test_fold_agrees_with_the_unrewritten_program(rjax, c):
    _fold_agrees(rjax, c)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(c=cases())
def test_fold_agrees_with_the_unrewritten_program_more_cases(rjax, c):
    """The same property on more random programs (make test-slow)."""
    _fold_agrees(rjax, c)


def _fold_agrees(rjax, c):
    with jax.config._override("jax_enable_x64", True):
        f, a, b, ref = build(c)
        closed = jax.make_jaxpr(f)(a, b)
        new = folded(closed)
        # the batched product and the sum are gone: one dot_general, no adds, no sums
        sum_gone = c["mode"] == "reduce_sum" or len(c["order"]) > 1
        if sum_gone:
            assert names(new).count("dot_general") == 1, new
            assert not {"reduce_sum", "add", "slice"} & set(names(new)), new
            (dot,) = [e for e in new.jaxpr.eqns if e.primitive.name == "dot_general"]
            assert len(dot.params["dimension_numbers"][1][0]) == \
                c["nb"] - len(c["summed"])
        (want,) = run(closed, a, b)
        (got,) = run(new, a, b)
        assert got.dtype == want.dtype == np.dtype(c["dtype"]) and got.shape == want.shape
        assert new.out_avals[0].weak_type == closed.out_avals[0].weak_type
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, ref.astype(c["dtype"]))
        # and through the whole pipeline and the default backend, and as JAX computes it
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), want)
        with rjax.enable_x64(True):
            fj = build(c, rjax)[0]
            wj = np.asarray(rjax.jit(fj)(a, b))
        assert wj.dtype == got.dtype and wj.shape == got.shape
        np.testing.assert_array_equal(got, wj)


def _vmap_psum(dn, in_axes):
    """What a data-parallel gradient is under jit(shard_map): a per-example dot_general,
    summed over the examples by psum's batching rule (an add chain over <= 8)."""
    return jax.vmap(lambda a, b: lax.psum(lax.dot_general(a, b, dn), "i"),
                    in_axes=in_axes, out_axes=None, axis_name="i")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 4, 8, 9])
@pytest.mark.parametrize("in_axes", [(0, 0), (1, 0), (2, 1)])
def test_vmap_psum_of_a_dot(dtype, n, in_axes):
    with jax.config._override("jax_enable_x64", True):
        rng = np.random.default_rng(n)
        ash, bsh = [5, 3], [5, 4]
        ash.insert(in_axes[0], n)
        bsh.insert(in_axes[1], n)
        a = rng.integers(-3, 4, ash).astype(dtype)
        b = rng.integers(-3, 4, bsh).astype(dtype)
        f = _vmap_psum((((0,), (0,)), ((), ())), in_axes)
        closed = jax.make_jaxpr(f)(a, b)
        new = folded(closed)
        if n > 1:      # over one device psum adds nothing; over 9 it is a reduce_sum
            assert names(new).count("dot_general") == 1
            (dot,) = [e for e in new.jaxpr.eqns if e.primitive.name == "dot_general"]
            assert dot.params["dimension_numbers"][1] == ((), ())
        want = np.einsum("nkm,nkp->mp", np.moveaxis(a, in_axes[0], 0).astype(np.float64),
                         np.moveaxis(b, in_axes[1], 0).astype(np.float64))
        (got,) = run(new, a, b)
        (old,) = run(closed, a, b)
        assert got.dtype == old.dtype == np.dtype(dtype) and got.shape == (3, 4)
        np.testing.assert_array_equal(got, old)
        np.testing.assert_array_equal(got, want.astype(dtype))
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), got)


def test_transposed_weight_gradient_swaps_the_operands():
    # sum_b (x_b^T g_b)^T, as reverse mode writes a weight gradient: the operands swap,
    # no transpose is left
    x = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)
    g = np.random.default_rng(1).standard_normal((4, 6, 3)).astype(np.float32)

    def f(x, g):
        d = lax.dot_general(g, x, (((1,), (1,)), ((0,), (0,))))     # (4, 3, 5)
        return _chain(lax.transpose(d, (0, 2, 1)), 0, range(4), False)    # (5, 3)
    closed = jax.make_jaxpr(f)(x, g)
    new = folded(closed)
    assert names(new) == ["dot_general"]
    (dot,) = new.jaxpr.eqns
    assert dot.invars == list(closed.jaxpr.invars)      # x first: its free dims lead
    assert dot.params["dimension_numbers"] == (((0, 1), (0, 1)), ((), ()))
    want = np.einsum("bkm,bkn->mn", x.astype(np.float64), g.astype(np.float64))
    (got,) = run(new, x, g)
    (old,) = run(closed, x, g)
    assert got.dtype == np.float32 and got.shape == (5, 3)
    np.testing.assert_allclose(got, old, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_weak_type_and_preferred_type_are_kept():
    with jax.config._override("jax_enable_x64", True):
        a = np.arange(24, dtype=np.int8).reshape(2, 3, 4) % 5
        f = lambda a: jnp.sum(lax.dot_general(a, a, (((2,), (2,)), ((0,), (0,))),  # noqa
                                              preferred_element_type=np.int32), 0,
                              dtype=np.int32)
        closed = jax.make_jaxpr(f)(a)
        new = folded(closed)
        assert names(new) == ["dot_general"]
        assert new.jaxpr.eqns[0].params["preferred_element_type"] == np.int32
        (got,) = run(new, a)
        (old,) = run(closed, a)
        assert got.dtype == old.dtype == np.int32
        np.testing.assert_array_equal(got, old)
        # weakly typed operands: the folded dot is typed as the sum was
        w = jnp.ones((3, 2, 2), dtype=float)
        c2 = jax.make_jaxpr(lambda s: jnp.sum(lax.dot_general(
            s * w, w, (((2,), (1,)), ((0,), (0,)))), 0))(2.0)
        n2 = folded(c2)
        assert n2.out_avals[0].weak_type == c2.out_avals[0].weak_type
        assert "reduce_sum" not in names(n2)
        np.testing.assert_array_equal(run(n2, 2.0)[0], run(c2, 2.0)[0])


def test_float_operands_agree_within_rounding():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 64, 33)).astype(np.float32)
    b = rng.standard_normal((8, 64, 17)).astype(np.float32)
    f = _vmap_psum((((0,), (0,)), ((), ())), (0, 0))
    closed = jax.make_jaxpr(f)(a, b)
    new = folded(closed)
    (got,) = run(new, a, b)
    (old,) = run(closed, a, b)
    want = np.einsum("nkm,nkp->mp", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got, old, rtol=1e-5, atol=1e-4)


def test_special_values_and_signed_zeros():
    # inf, nan, -0.0: the folded product gives what the per-example products and their
    # sum give, psum's "+ 0.0" (signed zeros as an all-reduce) is kept after the dot
    a = np.array([[[np.inf, 1.0]], [[2.0, -0.0]]], np.float32)        # (2, 1, 2)
    b = np.array([[[1.0, 0.0]], [[np.nan, -0.0]]], np.float32)
    c = np.array([[[-0.0, 1.0]], [[-0.0, 1.0]]], np.float32)
    f = _vmap_psum((((0,), (0,)), ((), ())), (0, 0))
    g = lambda x, y: jnp.sum(lax.dot_general(x, y, (((1,), (1,)), ((0,), (0,)))), 0)  # noqa
    for x, y in ((a, b), (a, c), (c, c), (-c, c), (c, -c)):
        for fun in (f, g):
            closed = jax.make_jaxpr(fun)(x, y)
            new = folded(closed)
            assert names(new).count("dot_general") == 1
            assert not {"reduce_sum", "slice"} & set(names(new))
            (got,) = run(new, x, y)
            (old,) = run(closed, x, y)
            np.testing.assert_array_equal(got, old)
            assert (np.signbit(got) == np.signbit(old)).all()


def test_zero_sizes():
    with jax.config._override("jax_enable_x64", True):
        for ash, bsh in (((0, 3, 2), (0, 3, 4)), ((2, 0, 2), (2, 0, 4)),
                         ((2, 3, 0), (2, 3, 4)), ((1, 3, 2), (1, 3, 4))):
            a, b = np.ones(ash, np.float64), np.ones(bsh, np.float64)
            f = lambda a, b: jnp.sum(jnp.matmul(jnp.swapaxes(a, 1, 2), b), 0)  # noqa
            closed = jax.make_jaxpr(f)(a, b)
            new = folded(closed)
            assert "reduce_sum" not in names(new)
            (got,) = run(new, a, b)
            (old,) = run(closed, a, b)
            assert got.shape == old.shape == (ash[2], 4) and got.dtype == np.float64
            np.testing.assert_array_equal(got, np.full((ash[2], 4), ash[0] * ash[1]))
            np.testing.assert_array_equal(got, old)


def test_programs_that_do_not_match_are_unchanged():
    x = np.ones((4, 3, 5), np.float32)
    dn = (((1,), (1,)), ((0,), (0,)))
    cases = {
        # a sum over a free dimension, not a batch one
        "free dim": lambda x: jnp.sum(lax.dot_general(x, x, dn), 1),
        # the batched product is also a result: it is computed anyway
        "product used": lambda x: (jnp.sum(lax.dot_general(x, x, dn), 0),
                                   lax.dot_general(x, x, dn)),
        # a slice missing, a slice twice
        "slice missing": lambda x: _chain(lax.dot_general(x, x, dn), 0, [0, 1, 2], False),
        "slice twice": lambda x: _chain(lax.dot_general(x, x, dn), 0, [0, 1, 2, 2], True),
        # a partial sum read elsewhere
        "partial read": lambda x: (lambda d: (d[0] + d[1] + d[2] + d[3], d[0] + d[1]))(
            lax.dot_general(x, x, dn)),
        # not a dot
        "no dot": lambda x: jnp.sum(jnp.sin(x), 0),
        # a max, not a sum
        "max": lambda x: jnp.max(lax.dot_general(x, x, dn), 0),
    }
    for name, f in cases.items():
        closed = jax.make_jaxpr(f)(x)
        closed = dce(cse(closed))       # as the pipeline has it before this pass
        assert fold_batch_dot_sums(closed) is closed, name


def test_registered_in_the_pipeline():
    x = np.ones((4, 3, 5), np.float32)
    closed = jax.make_jaxpr(lambda x: jnp.sum(jnp.einsum("bkm,bkn->bmn", x, x), 0))(x)
    opt, log = optimize(closed, record=True, fusion=False)
    assert "batch_dot_sum" in [n for n, *_ in log]
    assert names(opt) == ["dot_general"]
    np.testing.assert_array_equal(run(opt, x)[0], np.full((5, 5), 12, np.float32))
