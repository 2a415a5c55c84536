"""The fusion pass (compiler/passes/fuse.py): which equations become kernels, the score
that chooses them, and that every fused program computes what the unfused one does
(bit-for-bit for integers, within float tolerance otherwise)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.primitives.kernel import kernel_p
from jaxlite.compiler.passes import fuse, fusion_score
from jaxlite.compiler.passes.fuse import Group
from jaxlite.compiler.pipeline import compile_jaxpr, cost_analysis, optimize


def w2(x):
    return jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(x)


def softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _kernels(closed):
    return [e.params["kernel"] for e in closed.jaxpr.eqns if e.primitive is kernel_p]


def _body_ops(k):
    return [e.primitive.name for e in k.body.eqns]


def _optimized(f, *args, fusion=True):
    return optimize(jax.make_jaxpr(f)(*args), fusion=fusion)[0]


def _run_both(f, *args):
    """Outputs of ``f`` compiled without and with fusion (interpreter backend)."""
    closed = jax.make_jaxpr(f)(*args)
    host = [np.asarray(a) for a in args]
    plain = compile_jaxpr(closed, fusion=False).executable.run(host)
    fused = compile_jaxpr(closed, fusion=True).executable.run(host)
    return [np.asarray(p) for p in plain], [np.asarray(q) for q in fused]


def _assert_same(plain, fused):
    assert len(plain) == len(fused)
    for p, q in zip(plain, fused):
        assert p.dtype == q.dtype and p.shape == q.shape
        if p.dtype.kind in "biu":
            np.testing.assert_array_equal(q, p)
        else:
            tol = 2e-2 if p.dtype.itemsize <= 2 else 1e-5
            np.testing.assert_allclose(q.astype(np.complex128 if p.dtype.kind == "c"
                                                else np.float64),
                                       p.astype(np.complex128 if p.dtype.kind == "c"
                                                else np.float64),
                                       rtol=tol, atol=tol, equal_nan=True)


# ---- what fuses ---------------------------------------------------------------------------

def test_w2_is_one_kernel():
    x = jnp.linspace(-3, 3, 1000, dtype=jnp.float32)
    opt = _optimized(w2, x)
    assert [e.primitive for e in opt.jaxpr.eqns] == [kernel_p]
    (k,) = _kernels(opt)
    assert k.shape == (1000,)
    assert sorted(_body_ops(k)) == sorted(["tanh", "mul", "neg", "mul", "exp", "sin", "mul",
                                           "add"])
    assert [o.kind for o in k.outputs] == ["map"] and len(k.inputs) == 1
    assert all(v.aval.shape == () for v in k.body.invars)
    _assert_same(*_run_both(w2, x))
    np.testing.assert_allclose(np.asarray(jax.jit(w2)(x)), np.asarray(w2(x)), rtol=1e-6)


def test_softmax_kernels():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((6, 7)).astype(np.float32))
    opt = _optimized(softmax, x)
    ks = _kernels(opt)
    assert len(ks) == 3
    k_max, k_exp, k_div = ks
    assert _body_ops(k_max) == [] and [(o.kind, o.monoid, o.axes) for o in k_max.outputs] \
        == [("reduce", "max", (1,))]
    assert _body_ops(k_exp) == ["sub", "exp"]
    assert [(o.kind, o.monoid) for o in k_exp.outputs] == [("map", None), ("reduce", "add")]
    # the row maximum is read through a broadcast, never materialised
    assert sorted(i.dims for i in k_exp.inputs) == [(0,), (0, 1)]
    assert _body_ops(k_div) == ["div"] and [o.kind for o in k_div.outputs] == ["map"]
    # nothing of the size of x besides the kernels' own results
    assert not any(e.primitive.name == "broadcast_in_dim" for e in opt.jaxpr.eqns)
    _assert_same(*_run_both(softmax, x))
    np.testing.assert_allclose(np.asarray(jax.jit(softmax)(x)), np.asarray(softmax(x)),
                               rtol=1e-6)


def test_nn_softmax_fuses_its_exp_sum():
    x = jnp.asarray(np.random.default_rng(1).standard_normal((4, 9)).astype(np.float32))
    f = lambda x: jax.nn.softmax(x, axis=-1)  # noqa: E731
    ks = _kernels(_optimized(f, x))
    assert any(_body_ops(k) == ["sub", "exp"] and
               [o.kind for o in k.outputs] == ["map", "reduce"] for k in ks)
    _assert_same(*_run_both(f, x))


def test_value_read_outside_is_an_extra_map_output():
    def f(x):
        y = jnp.sin(x) * 3
        return y + 1, jnp.cumsum(y)     # y is read by cumsum, outside the kernel
    x = jnp.arange(5.0)
    opt = _optimized(f, x)
    k = _kernels(opt)[0]
    assert [o.kind for o in k.outputs] == ["map", "map"]
    assert "cumsum" in [e.primitive.name for e in opt.jaxpr.eqns]
    _assert_same(*_run_both(f, x))


def test_scalars_literals_and_constants_in_the_body():
    c = np.float32(2.5)

    def f(x, s):
        return (x * c + s) * 2.0 - jnp.float32(1)
    x, s = jnp.arange(4.0), jnp.float32(3)
    k = _kernels(_optimized(f, x, s))
    assert len(k) == 1
    (k,) = k
    dims = sorted(i.dims for i in k.inputs)
    assert dims == [(), (0,)]            # the scalar operand is a broadcast input
    _assert_same(*_run_both(f, x, s))


def test_reduction_prologue_and_multiple_reductions():
    def f(x):
        y = jnp.abs(x) + 1
        return jnp.sum(y * y, axis=0), jnp.max(y, axis=1), jnp.prod(y, axis=(0, 1))
    x = jnp.asarray(np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32))
    ks = _kernels(_optimized(f, x))
    assert len(ks) == 1
    assert sorted((o.monoid, o.axes) for o in ks[0].outputs) == \
        [("add", (0,)), ("max", (1,)), ("mul", (0, 1))]
    _assert_same(*_run_both(f, x))


def test_integers_bit_for_bit_with_conversions_select_clamp_pow():
    def f(x, y):
        a = x * y + 7
        b = jnp.where(a > 0, a, -a)
        c = lax.integer_pow(jnp.clip(b, 0, 1000), 3)
        d = c.astype(jnp.int8).astype(jnp.int32) << 2
        return d, jnp.sum(d, axis=0), jnp.min(a, axis=1), (a % 5).astype(jnp.float32) / 3
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.integers(-2**20, 2**20, (5, 6)).astype(np.int32))
    y = jnp.asarray(rng.integers(-2**12, 2**12, (5, 6)).astype(np.int32))
    assert len(_kernels(_optimized(f, x, y))) >= 1
    _assert_same(*_run_both(f, x, y))


def test_no_cycle_through_an_unfused_equation():
    def f(x):
        a = jnp.sin(x)
        b = jnp.cumsum(a)          # reads a, not fusable
        return a * 2 + b           # reads a and b: must not join a's kernel
    x = jnp.arange(6.0)
    opt = _optimized(f, x)
    assert [e.primitive.name for e in opt.jaxpr.eqns] == ["kernel", "cumsum", "kernel"]
    _assert_same(*_run_both(f, x))


def test_reduced_value_is_not_read_in_its_own_kernel():
    def f(x):
        return x - jnp.mean(x, axis=0)
    x = jnp.asarray(np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32))
    opt = _optimized(f, x)
    for k in _kernels(opt):
        assert not ("reduce" in [o.kind for o in k.outputs] and "sub" in _body_ops(k))
    _assert_same(*_run_both(f, x))


# ---- what never fuses ---------------------------------------------------------------------

def test_effects_split_kernels_and_keep_their_order():
    seen = []

    def f(x):
        a = jnp.sin(x) * 2
        jax.debug.callback(lambda v: seen.append(("first", np.asarray(v).copy())), a)
        b = jnp.exp(a) + 1
        jax.debug.callback(lambda v: seen.append(("second", np.asarray(v).copy())), b)
        return b * 3
    x = jnp.arange(3.0)
    opt = _optimized(f, x)
    names = [e.primitive.name for e in opt.jaxpr.eqns]
    assert names == ["kernel", "debug_callback", "kernel", "debug_callback", "kernel"]
    out = jax.jit(f)(x)
    assert [s for s, _ in seen] == ["first", "second"]
    np.testing.assert_allclose(seen[0][1], np.sin(np.arange(3.0)) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out), (np.exp(np.sin(np.arange(3.0)) * 2) + 1) * 3,
                               rtol=1e-6)


def test_control_flow_dot_and_gather_are_not_fused():
    def f(x, w, i):
        h = jnp.tanh(x @ w) + 1
        g = h[i] * 2
        s = lax.fori_loop(0, 3, lambda _, c: c * 2 + 1, g)
        r = lax.cond(s.sum() > 0, lambda v: v + 1, lambda v: v - 1, s)
        return r * r
    x, w = jnp.ones((3, 4)), jnp.ones((4, 5))
    i = jnp.array([0, 2])
    opt = _optimized(f, x, w, i)
    names = [e.primitive.name for e in opt.jaxpr.eqns]
    for n in ("dot_general", "gather", "scan", "cond"):
        assert n in names
    for k in _kernels(opt):
        assert not {"dot_general", "gather", "scan", "cond"} & set(_body_ops(k))
    _assert_same(*_run_both(f, x, w, i))


def test_make_jaxpr_is_unchanged_fusion_happens_in_compile():
    x = jnp.ones(8)
    jaxpr = jax.make_jaxpr(w2)(x)
    assert "kernel" not in [e.primitive.name for e in jaxpr.eqns]
    assert "kernel" not in jax.jit(w2).lower(x).as_text()
    text = jax.jit(w2).lower(x).compile().as_text()
    assert "# fused kernels" in text and "kernel fusion_0 over [8]" in text
    assert "sin" in text and "tanh" in text


def test_fuse_is_pure_and_off_switch():
    closed = jax.make_jaxpr(w2)(jnp.ones(4))
    before = str(closed)
    fused = fuse(closed)
    assert str(closed) == before and fused is not closed
    assert "kernel" not in [e.primitive.name for e in optimize(closed, fusion=False)[0].eqns]


# ---- the score ----------------------------------------------------------------------------

def test_fusion_score_counts_bytes_saved():
    n = 1000
    closed = jax.make_jaxpr(w2)(jnp.ones(n))
    eqns = closed.jaxpr.eqns
    group = Group.of(eqns, closed.jaxpr)
    # one by one: 11 array reads + 8 writes; fused: 1 read + 1 write (float32)
    assert group.unfused_bytes() == 19 * 4 * n
    assert group.fused_bytes() == 2 * 4 * n
    assert fusion_score(group) == 17 * 4 * n
    # a single equation saves nothing
    assert fusion_score(Group.of(eqns[:1], closed.jaxpr)) == 0
    # a value also read outside the group is still written: it saves only its read
    two = Group.of(eqns[:2], closed.jaxpr)     # tanh, mul(., 0.5): tanh's result internal
    assert fusion_score(two) == 2 * 4 * n


def test_fusion_score_of_a_broadcast_and_a_reduction():
    closed = jax.make_jaxpr(
        lambda x, r: lax.reduce_sum(x + lax.broadcast_in_dim(r, (10, 20), (0,)), (1,)))(
        jnp.ones((10, 20)), jnp.ones(10))
    eqns = closed.jaxpr.eqns
    names = [e.primitive.name for e in eqns]
    assert names == ["broadcast_in_dim", "add", "reduce_sum"]
    g = Group.of(eqns, closed.jaxpr)
    big, small = 4 * 200, 4 * 10
    # broadcast: read small, write big; add: read 2 big, write big; sum: read big, write small
    assert g.unfused_bytes() == small + big + 3 * big + big + small
    assert g.fused_bytes() == big + small + small       # x, r read; the sums written
    assert fusion_score(g) == 4 * big
    opt = optimize(closed, fusion=True)[0]
    assert [e.primitive.name for e in opt.eqns].count("kernel") == 1


def test_cost_analysis_counts_kernels():
    n = 1000
    x = jnp.ones(n)
    cost = jax.jit(w2).lower(x).compile().cost_analysis()
    assert cost["bytes accessed"] == 2 * 4 * n
    assert cost["flops"] == 5 * n      # as XLA: tanh, exp, sin are transcendentals only
    assert cost["transcendentals"] == 3 * n
    unfused = cost_analysis(jax.make_jaxpr(w2)(x))
    assert unfused["bytes accessed"] == 19 * 4 * n


# ---- property: random programs, fused == unfused ----------------------------------------

_DTYPES = [np.float32, np.int32, np.float16, np.int8, np.uint8, np.bool_]
_SHAPES = [(), (3,), (2, 3), (2, 1, 4), (4, 5)]
_UNARY = [jnp.sin, jnp.exp, jnp.tanh, jnp.abs, jnp.negative, jnp.square, jnp.floor,
          lambda a: a * 2, lambda a: a + 1, lambda a: a.astype(jnp.float32),
          lambda a: a.astype(jnp.int32), lambda a: -a if a.dtype != jnp.bool_ else ~a,
          lambda a: jnp.cumsum(a, axis=-1) if a.ndim else a]      # not fusable
_BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.minimum,
           lambda a, b: jnp.where(a > b, a, b), lambda a, b: (a == b).astype(jnp.int32),
           lambda a, b: jnp.clip(a, b, b + 2)]
_REDUCE = [jnp.sum, jnp.max, jnp.min, jnp.prod]


def _value(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100) + 1, shape).astype(dtype)
    v = rng.standard_normal(shape) * 3
    if v.size > 2:
        v.flat[0], v.flat[1] = np.nan if rng.random() < 0.3 else v.flat[0], \
            np.inf if rng.random() < 0.3 else v.flat[1]
    return v.astype(dtype)


@st.composite
def programs(draw):
    shape = draw(st.sampled_from(_SHAPES))
    dtype = draw(st.sampled_from(_DTYPES))
    # y broadcasts against x: some of x's axes set to 1, or a trailing suffix
    ys = tuple(1 if draw(st.booleans()) else d for d in shape)
    ys = ys[draw(st.integers(0, len(ys))):]
    ops = []
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from("uubbr"))
        if kind == "u":
            ops.append(("u", draw(st.integers(0, len(_UNARY) - 1)), draw(st.integers(0, 99))))
        elif kind == "b":
            ops.append(("b", draw(st.integers(0, len(_BINARY) - 1)), draw(st.integers(0, 99)),
                        draw(st.integers(0, 99))))
        else:
            ops.append(("r", draw(st.integers(0, len(_REDUCE) - 1)), draw(st.integers(0, 99)),
                        draw(st.integers(0, 3)), draw(st.booleans())))
    n_out = draw(st.integers(1, 3))
    return shape, ys, dtype, ops, n_out, draw(st.integers(0, 2**16))


def _program(ops, n_out):
    def f(x, y, s):
        vals = [x, y, s]
        for op in ops:
            if op[0] == "u":
                a = vals[op[2] % len(vals)]
                if a.dtype == jnp.bool_ and op[1] not in (9, 10, 11):
                    a = a.astype(jnp.int32)
                vals.append(_UNARY[op[1]](a))
            elif op[0] == "b":
                a, b = vals[op[2] % len(vals)], vals[op[3] % len(vals)]
                try:
                    np.broadcast_shapes(a.shape, b.shape)
                except ValueError:      # a reduction dropped an axis: pair a with itself
                    b = a
                if jnp.bool_ in (a.dtype, b.dtype) and op[1] in (1, 2, 7):
                    a, b = a.astype(jnp.int32), b.astype(jnp.int32)
                vals.append(_BINARY[op[1]](a, b))
            else:
                a = vals[op[2] % len(vals)]
                if a.dtype == jnp.bool_ and op[1] in (0, 3):
                    a = a.astype(jnp.int32)
                axis = None if a.ndim == 0 else op[3] % a.ndim
                r = _REDUCE[op[1]](a, axis=axis, keepdims=op[4])
                vals.append(r)
        return vals[-n_out:] + [vals[len(vals) // 2]]
    return f


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_fused_equal_unfused(prog):
    shape, ys, dtype, ops, n_out, seed = prog
    rng = np.random.default_rng(seed)
    x = jnp.asarray(_value(rng, shape, dtype))
    y = jnp.asarray(_value(rng, ys, dtype))
    s = jnp.asarray(_value(rng, (), dtype))
    f = _program(ops, n_out)
    with np.errstate(all="ignore"):
        plain, fused = _run_both(f, x, y, s)
    _assert_same(plain, fused)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_jit_with_fusion_matches_eager(dtype):
    rng = np.random.default_rng(5)
    x = jnp.asarray(_value(rng, (4, 5), dtype))

    def f(x):
        y = x * 2 + 1
        return y - jnp.max(y, axis=1, keepdims=True), jnp.sum(jnp.abs(y), axis=0)
    with np.errstate(all="ignore"):
        a, b = jax.jit(f)(x)
        ea, eb = f(x)
    assert a.dtype == ea.dtype and b.dtype == eb.dtype
    _assert_same([np.asarray(ea), np.asarray(eb)], [np.asarray(a), np.asarray(b)])


@pytest.mark.parametrize("which", range(5))
def test_expanded_kernels_equal_the_kernel_reference(which):
    # the interpreter runs each kernel as the array equations it stands for
    from jaxlite.primitives.kernel import expand_kernels, kernel_p
    from jaxlite.compiler.pipeline import optimize
    from jaxlite.ir.interpret import eval_jaxpr_impl
    fs = [lambda x: jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(x),
          lambda x: jax.nn.softmax(x, axis=-1),
          lambda x: jnp.sum(x, axis=0, keepdims=True) * 2 + x,
          lambda x: (x.T * 3 + jnp.max(x)).astype(jnp.int32),
          lambda x: jnp.dot(x, x.T) + jnp.sum(x)]
    x = np.random.default_rng(which).standard_normal((3, 4)).astype(np.float32)
    opt, _ = optimize(jax.make_jaxpr(fs[which])(x))
    assert any(e.primitive is kernel_p for e in opt.jaxpr.eqns)
    exp = expand_kernels(opt)
    assert not any(e.primitive is kernel_p for e in exp.jaxpr.eqns)
    consts = [np.asarray(c) for c in opt.consts]
    want = eval_jaxpr_impl(opt.jaxpr, consts, x)
    got = eval_jaxpr_impl(exp.jaxpr, consts, x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _literal_outputs(closed):
    from jaxlite.ir.jaxpr import Literal
    return [k.name for k in _kernels(closed)
            if any(isinstance(o, Literal) for o in k.body.outvars)]


def test_a_shared_scalar_broadcast_is_read_in_each_kernel_not_written_out():
    """A broadcast scalar read by several kernels (a ReLU's derivative: 1.0, 0.5 and 0.0
    over the activations) is private to each reader: no kernel writes a constant array out
    for another to read back; values as without fusion."""
    w = jnp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    x = jnp.asarray(np.linspace(-2, 2, 20, dtype=np.float32).reshape(5, 4))

    def loss(w, x):
        h = jax.nn.relu(x @ w)
        return jnp.sum(jax.nn.relu(h @ w.T) ** 2)
    g = jax.grad(loss)
    opt = _optimized(g, w, x)
    assert _kernels(opt)
    assert _literal_outputs(opt) == []
    _assert_same(*_run_both(g, w, x))

    def shared(x):
        one = jnp.ones_like(x)
        y = jnp.cumsum(jnp.sin(x) + one)          # the cumsum splits the kernels
        return y * one - one, one                  # ... and the broadcast is an output
    v = jnp.asarray(np.linspace(-1, 1, 6, dtype=np.float32))
    opt = _optimized(shared, v)
    assert _literal_outputs(opt) == []
    assert opt.jaxpr.outvars[1] in {e.outvars[0] for e in opt.jaxpr.eqns
                                    if e.primitive.name == "broadcast_in_dim"}
    plain, fused = _run_both(shared, v)
    _assert_same(plain, fused)
    np.testing.assert_array_equal(fused[1], np.ones(6, np.float32))
