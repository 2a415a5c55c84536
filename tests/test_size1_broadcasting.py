"""Size-1 broadcasting inside the elementwise primitives, as JAX 0.10's.

JAX's elementwise primitives take operands of equal rank whose dimensions are equal or 1
(``sub f32[2,3] f32[2,1]``) and broadcast the size-1 ones themselves; ``jax.numpy`` only
brings operands to one rank.  Checked against real JAX:

- the printed programs (``make_jaxpr``) of everyday code that relies on it (softmax, a
  keepdims reduction subtracted, outer products, one_hot, layer-norm-like code, and their
  gradients, JVPs and vmaps): exact string equality;
- values, dtypes and shapes on every backend (the interpreter, the native cpu backend
  and the xla_cpu PJRT platform), jitted and eager, with size 1 on either side, on both,
  and broadcasting to size 0; gradients and vmap of the same programs;
- the errors for shapes that do not broadcast (JAX's TypeError and message);
- the machinery that keeps backends safe: the compiler pass making the broadcasts
  explicit before fusion and code generation, the fusion pass's internal check, the
  native loops' fallback, the sharding rule (a dimension broadcast from size 1 is whole).
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.config import config

from oracle import assert_like_jax

_M = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 3 - 1.5
_V3 = np.array([0.5, -1.0, 2.0], np.float32)
_V2 = np.array([1.5, -0.25], np.float32)
_C = np.array([[0.5], [-2.0], [3.0]], np.float32)          # (3, 1)
_R = np.array([[1.0, -0.5, 0.25, 4.0]], np.float32)         # (1, 4)


def _layer_norm(m):
    def f(x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / m.sqrt(var + 1e-5)
    return f


# name -> (make(jax, jnp, lax) -> function, arguments)
PROGRAMS = {
    "softmax": (lambda j, m, l: j.nn.softmax, (_M,)),
    "keepdims_max_subtracted": (lambda j, m, l: lambda x: x - x.max(1, keepdims=True), (_M,)),
    "keepdims_sum_divided": (lambda j, m, l: lambda x: x / x.sum(0, keepdims=True), (_M,)),
    "outer": (lambda j, m, l: m.outer, (_V3, _V2)),
    "one_hot": (lambda j, m, l: lambda i: j.nn.one_hot(i, 4), (np.array([0, 3, 5, -1],
                                                                         np.int32),)),
    "layer_norm": (lambda j, m, l: _layer_norm(m), (_M,)),
    "new_axes_product": (lambda j, m, l: lambda x, y: x[:, None] * y[None, :], (_V3, _V2)),
    "lax_add_column_row": (lambda j, m, l: l.add, (_C, _R)),
    "lax_ops_size1_both_sides": (lambda j, m, l: lambda a, b: (
        l.sub(a, b), l.max(b, a), l.atan2(a, b), l.lt(a, b), l.pow(b * b + 1, a)), (_C, _R)),
    "jnp_rank_promotion": (lambda j, m, l: lambda x, v: x + v, (_M, _R[0])),
    "where_size1": (lambda j, m, l: lambda c, x, y: m.where(c, x, y),
                    (np.array([[True], [False], [True]]), _M, _R)),
    "grad_sub": (lambda j, m, l: j.grad(lambda x, y: (x - y).sum(), argnums=(0, 1)),
                 (_M, _C)),
    "grad_mul": (lambda j, m, l: j.grad(lambda x, y: (x * y).sum(), argnums=(0, 1)),
                 (_R, _C)),
    "grad_outer": (lambda j, m, l: j.grad(lambda x, y: m.outer(x, y).sum(),
                                          argnums=(0, 1)), (_V3, _V2)),
    "jvp_mul": (lambda j, m, l: lambda x, y, t: j.jvp(lambda a, b: a * b, (x, y), (t, y)),
                (_M, _C, _M)),
    "grad_max_min": (lambda j, m, l: j.grad(lambda x, c: (l.max(x, c) + l.min(c, x)).sum(),
                                            argnums=(0, 1)), (_M, _C)),
    "jvp_add_one_tangent": (lambda j, m, l: lambda x, c: j.jvp(lambda a: (x + a, x - a),
                                                               (c,), (c,)), (_M, _C)),
    "jvp_rem_one_tangent": (lambda j, m, l: lambda x, c: j.jvp(lambda a: l.rem(a, x),
                                                               (c,), (c,)), (_M + 5, _C)),
    "vmap_softmax": (lambda j, m, l: j.vmap(j.nn.softmax), (np.stack([_M, -_M]),)),
    "vmap_unmapped_size1": (lambda j, m, l: j.vmap(l.sub, in_axes=(0, None)),
                            (np.stack([_M, _M]), _C)),
    "vmap_mapped_size1_other_axis": (lambda j, m, l: j.vmap(l.sub, in_axes=(1, 0)),
                                     (np.stack([_M, _M], 1), np.stack([_C, _C]))),
    "vmap_mapped_scalars": (lambda j, m, l: j.vmap(l.sub, in_axes=(None, 0)),
                            (_M, _V2)),
}


def _printed(j, m, l, name):
    make, args = PROGRAMS[name]
    return str(j.make_jaxpr(make(j, m, l))(*args))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_prints_as_jax(rjax, rjnp, name):
    assert _printed(jaxlite, jnp, lax, name) == _printed(rjax, rjnp, rjax.lax, name)


def test_printed_program_has_no_full_broadcast_of_a_keepdims_result():
    # the point of it: the f32[3,1] maximum meets the f32[3,4] operand as it is
    text = _printed(jaxlite, jnp, lax, "softmax")
    assert "f32[3,4] = sub a e" in text and "f32[3,4] = div g i" in text
    assert "f32[3,4] = broadcast_in_dim" not in text


# ---- values on every backend ---------------------------------------------------------------

def _xla_device():
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    return jaxlite.devices("xla_cpu")[0]


def _run(fn, args, backend, jit):
    """``fn(*args)`` run by jaxlite on ``backend`` ("interpreter", "cpu": the native
    backend without tiering, "xla_cpu": the PJRT platform), jitted or eagerly."""
    f = jaxlite.jit(fn) if jit else fn
    if backend == "xla_cpu":
        dev = _xla_device()
        with jaxlite.default_device(dev):
            out = f(*[jaxlite.device_put(a, dev) for a in args])
            return jaxlite.tree_util.tree_map(np.asarray, out), out
    with config._override("jaxlite_backend", backend), config._override("jaxlite_tiered",
                                                                           False):
        out = f(*[jnp.asarray(a) for a in args])
        return jaxlite.tree_util.tree_map(np.asarray, out), out


def _check(got_pair, want):
    _, got = got_pair
    gl, wl = jaxlite.tree_util.tree_leaves(got), jaxlite.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert_like_jax(g, w, rtol=2e-6, atol=1e-6)


_VALUE_PROGRAMS = ["softmax", "keepdims_max_subtracted", "keepdims_sum_divided", "outer",
                   "one_hot", "layer_norm", "new_axes_product", "lax_add_column_row",
                   "lax_ops_size1_both_sides", "jnp_rank_promotion", "where_size1",
                   "grad_sub", "grad_mul", "grad_outer", "jvp_mul", "vmap_softmax",
                   "grad_max_min", "jvp_add_one_tangent", "jvp_rem_one_tangent",
                   "vmap_unmapped_size1", "vmap_mapped_size1_other_axis",
                   "vmap_mapped_scalars"]
_BACKENDS = ["interpreter", "cpu", "xla_cpu"]


def _sampled(names, ids=None):
    """(name, backend) parameters: every name on the interpreter and the first two on the
    compiling backends in make test; the other compiling-backend cases in make test-slow
    (CI runs both)."""
    out = []
    for backend in _BACKENDS:
        for i, name in enumerate(names):
            fast = backend == "interpreter" or i < 2
            out.append(pytest.param(name, backend, marks=() if fast else pytest.mark.slow,
                                    id=f"{ids(name) if ids else name}-{backend}"))
    return out


@pytest.mark.parametrize("name,backend", _sampled(_VALUE_PROGRAMS))
def test_values_like_jax_on_every_backend(rjax, rjnp, backend, name, tmp_path):
    make, args = PROGRAMS[name]
    want = make(rjax, rjnp, rjax.lax)(*args)
    fn = make(jaxlite, jnp, lax)
    with config._override("jax_compilation_cache_dir", str(tmp_path)):
        _check(_run(fn, args, backend, jit=True), want)
        _check(_run(fn, args, backend, jit=False), want)


def _stat_programs(j, m):
    """Statistics and normalisations whose gradients go through size-1 broadcasts."""
    return {
        "var": lambda x: m.var(x, axis=1),
        "std": lambda x: m.std(x, axis=0, ddof=1),
        "softmax": lambda x: j.nn.softmax(x) * m.arange(4.0),
        "log_softmax": lambda x: j.nn.log_softmax(x, axis=0),
        "logsumexp": lambda x: j.nn.logsumexp(x, axis=1, keepdims=True),
        "layer_norm": _layer_norm(m),
        "standardize": lambda x: (x - x.mean(0)) / x.std(0),
    }


@pytest.mark.parametrize("name,backend", _sampled(list(_stat_programs(jaxlite, jnp))))
def test_gradients_and_vmap_like_jax(rjax, rjnp, backend, name, tmp_path):
    f = _stat_programs(jaxlite, jnp)[name]
    rf = _stat_programs(rjax, rjnp)[name]
    with config._override("jax_compilation_cache_dir", str(tmp_path)):
        want = rf(_M)
        _check(_run(f, (_M,), backend, jit=True), want)
        want_g = rjax.grad(lambda x: (rf(x) ** 2).sum())(_M)
        got_g = _run(jaxlite.grad(lambda x: (f(x) ** 2).sum()), (_M,), backend, jit=True)
        assert_like_jax(got_g[1], want_g, rtol=2e-5, atol=2e-5)
        stacked = np.stack([_M, _M[::-1] * 2, _M * -0.5])
        _check(_run(jaxlite.vmap(f), (stacked,), backend, jit=True), rjax.vmap(rf)(stacked))
        want_vg = rjax.vmap(rjax.grad(lambda x: (rf(x) ** 2).sum()))(stacked)
        got_vg = _run(jaxlite.vmap(jaxlite.grad(lambda x: (f(x) ** 2).sum())), (stacked,),
                      backend, jit=True)
        assert_like_jax(got_vg[1], want_vg, rtol=2e-5, atol=2e-5)


# shapes: size 1 on either side, on both, broadcasting to size 0, three dimensions
_SHAPES = [((3, 1), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((1, 1), (1, 1)),
           ((1, 1), (3, 4)), ((2, 1), (2, 0)), ((0, 1), (1, 4)), ((1, 0), (3, 1)),
           ((2, 1, 3), (1, 4, 1)), ((1,), (5,))]


def _operand(shape, k):
    size = int(np.prod(shape))
    return ((np.arange(size) * (k + 2) % 7) - 3).reshape(shape).astype(np.float32) + 0.5


@pytest.mark.parametrize("shapes,backend", _sampled(_SHAPES, ids=str))
def test_lax_binary_chain_like_jax(rjax, backend, shapes, tmp_path):
    # a chain of broadcasting ops (fused into one kernel on the native backend), a
    # reduction over the broadcast result, and the operands' gradients
    a, b = _operand(shapes[0], 0), _operand(shapes[1], 1)

    def f(lx):
        def g(x, y):
            s = lx.mul(lx.add(x, y), lx.sub(y, x))
            return s, lx.max(s, y), lx.exp(lx.min(x, y)), s.sum(0)
        return g

    want = f(rjax.lax)(a, b)
    with config._override("jax_compilation_cache_dir", str(tmp_path)):
        _check(_run(f(lax), (a, b), backend, jit=True), want)
        _check(_run(f(lax), (a, b), backend, jit=False), want)

        def loss(lx):
            return lambda x, y: (f(lx)(x, y)[1] * 1.5).sum()
        want_g = rjax.grad(loss(rjax.lax), (0, 1))(a, b)
        _check(_run(jaxlite.grad(loss(lax), (0, 1)), (a, b), backend, jit=True), want_g)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_integer_and_bool_operands_like_jax(rjax, dtype, tmp_path):
    a = (np.arange(3).reshape(3, 1) % 2 + 1).astype(dtype)
    b = (np.arange(4).reshape(1, 4) % 3).astype(dtype)

    def f(lx):
        if dtype == "bool":
            return lambda x, y: (lx.bitwise_and(x, y), lx.bitwise_xor(x, y), lx.eq(x, y))
        return lambda x, y: (lx.bitwise_or(x, y), lx.max(x, y), lx.div(y, x),
                             lx.rem(y, x), lx.shift_left(y, x), lx.ge(x, y))
    want = f(rjax.lax)(a, b)
    for backend in _BACKENDS:
        with config._override("jax_compilation_cache_dir", str(tmp_path)):
            _check(_run(f(lax), (a, b), backend, jit=True), want)


def test_special_functions_broadcast_size1(rjax):
    a = np.array([[0.5], [2.0], [7.0]], np.float32)
    x = np.array([[0.1, 1.0, 3.0, 20.0]], np.float32)
    for name in ("igamma", "igammac", "random_gamma_grad"):
        want = getattr(rjax.lax, name)(a, x)
        got = getattr(lax, name)(jnp.asarray(a), jnp.asarray(x))
        assert_like_jax(got, want, rtol=2e-5, atol=1e-6)
    want = rjax.lax.betainc(a, a.T[:, :3] + 0.5, np.full((3, 3), 0.25, np.float32))
    got = lax.betainc(jnp.asarray(a), jnp.asarray(a.T[:, :3] + 0.5),
                      jnp.full((3, 3), 0.25, np.float32))
    assert_like_jax(got, want, rtol=2e-5, atol=1e-6)
    # and the derivative in x of the lower incomplete gamma function
    want = rjax.grad(lambda x: rjax.lax.igamma(a, x).sum())(x)
    got = jaxlite.grad(lambda x: lax.igamma(jnp.asarray(a), x).sum())(jnp.asarray(x))
    assert_like_jax(got, want, rtol=1e-4, atol=1e-6)


# ---- shapes that do not broadcast ----------------------------------------------------------

@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((2, 3), (2, 4)), ((2, 3), (3, 2)),
                                    ((2, 0), (2, 3)), ((1, 2, 3), (2, 3))], ids=str)
def test_bad_shapes_raise_jaxs_type_error(rjax, shapes):
    sa, sb = shapes
    with pytest.raises(TypeError) as want:
        rjax.lax.add(rjax.numpy.ones(sa), rjax.numpy.ones(sb))
    with pytest.raises(TypeError) as got:
        lax.add(jnp.ones(sa), jnp.ones(sb))
    assert str(got.value) == str(want.value)
    with pytest.raises(TypeError) as got:
        jaxlite.jit(lax.mul)(jnp.ones(sa), jnp.ones(sb))
    assert str(got.value) == str(want.value).replace("add", "mul")


def test_select_n_and_clamp_take_no_size1_broadcasting(rjax):
    # JAX's select_n and clamp want equal shapes (or rank 0); jnp.where and jnp.clip
    # broadcast for them
    c, x, y = np.ones((3, 1), bool), np.ones((3, 4), np.float32), np.zeros((1, 4), np.float32)
    for fn in (lambda m, l: l.select_n(m.asarray(c), m.asarray(x), m.asarray(y)),
               lambda m, l: l.clamp(m.asarray(y), m.asarray(x), m.float32(2.0)),
               lambda m, l: l.clamp(m.float32(0.0), m.asarray(x), m.asarray(y))):
        with pytest.raises(TypeError) as want:
            fn(rjax.numpy, rjax.lax)
        with pytest.raises(TypeError) as got:
            fn(jnp, lax)
        if "clamp" in str(want.value):
            assert str(got.value) == str(want.value)
    assert_like_jax(jnp.clip(x, y, 0.5), rjax.numpy.clip(x, y, 0.5))


def test_jnp_shapes_that_do_not_broadcast_raise_like_jax(rjax, rjnp):
    for sa, sb, exc in (((2, 3), (2, 4), TypeError), ((2, 3), (4,), ValueError)):
        with pytest.raises(exc):
            rjnp.add(rjnp.ones(sa), rjnp.ones(sb))
        with pytest.raises(exc):
            jnp.add(jnp.ones(sa), jnp.ones(sb))


# ---- the machinery that keeps backends safe -------------------------------------------------

def _sub_program():
    return jaxlite.make_jaxpr(lambda x, c: lax.sub(x, c) * 2.0)(_M, _C)


def test_compiler_pass_makes_size1_broadcasts_explicit():
    from jaxlite.compiler.passes import expand_size1_broadcasts
    from jaxlite.primitives.shape import broadcast_in_dim_p
    closed = _sub_program()
    out = expand_size1_broadcasts(closed)
    eqns = out.jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["broadcast_in_dim", "sub", "mul"]
    assert eqns[0].primitive is broadcast_in_dim_p
    assert eqns[0].params["broadcast_dimensions"] == (0, 1)
    assert eqns[0].outvars[0].aval.shape == (3, 4) and eqns[1].invars[1] is eqns[0].outvars[0]
    for e in eqns:
        if e.primitive.elementwise:
            assert all(v.aval.shape in ((), e.outvars[0].aval.shape) for v in e.invars)
    # a program without such operands comes back as it is
    assert expand_size1_broadcasts(out) is out
    # and the optimised program of jit starts from it (the compiler's pass log)
    from jaxlite.compiler.pipeline import PASSES
    assert [n for n, _ in PASSES][:2] == ["inline", "expand_broadcasts"]


def test_fusion_refuses_an_implicit_size1_broadcast():
    from jaxlite.compiler.passes import fuse
    with pytest.raises(RuntimeError, match="implicit size-1 broadcasting"):
        fuse(_sub_program())


def test_native_loop_leaves_an_implicit_size1_broadcast_to_the_interpreter():
    from jaxlite.backends.cpu import _loop
    from jaxlite.backends.cpu._ops import Unsupported
    closed = _sub_program()
    gen = _loop._Gen.__new__(_loop._Gen)
    gen.code, gen.counter, gen.store = [], 0, {}
    gen.temp = lambda v: "o"
    with pytest.raises(Unsupported, match="sub of shapes"):
        gen.elementwise(closed.jaxpr.eqns[0])


def test_fused_program_reads_the_size1_operand_through_its_broadcast(native_cfg):
    f = jaxlite.jit(lambda x, c: jnp.exp(x - c) / (x - c).sum(1, keepdims=True))
    text = f.lower(_M, _C).compile().as_text()
    assert "f32[3,1]@[0, 1]" in text or "f32[3]@[0]" in text   # a broadcast kernel input
    want = np.exp(_M - _C) / (_M - _C).sum(1, keepdims=True)
    np.testing.assert_allclose(np.asarray(f(_M, _C)), want, rtol=1e-6)


def test_sharding_rule_keeps_a_size1_dimension_whole():
    from jaxlite.core import sharding_rules as sr
    from jaxlite.core.avals import ShapedArray
    x = ShapedArray((4, 6), np.dtype(np.float32))
    c = ShapedArray((4, 1), np.dtype(np.float32))
    rule = sr.elementwise([(("x",), ("y",)), (("x",), ("y",))], [x, c], {"x": 2, "y": 3})
    assert rule.outputs == [(("x",), ("y",))]
    # the broadcast dimension of the (4, 1) operand is whole, its other one follows x's
    assert rule.operands[0] == (("x",), ("y",)) and rule.operands[1] == (("x",), ())
    # a size-1 operand sharded where the result is not tells nothing of the result
    rule = sr.elementwise([((), ()), ((), ("y",))], [x, c], {"x": 2, "y": 3})
    assert rule.outputs == [((), ())] and rule.operands[1] == ((), ())


# ---- random programs ------------------------------------------------------------------------

_NP_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
           "min": np.minimum}


def _random_case(seed):
    """A random chain of binary ops over operands that broadcast size-1 dimensions against
    a random result shape (some of its dimensions 1 or 0), a keepdims sum re-entering the
    chain (softmax-like), and the NumPy value of it."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    shape = tuple(int(d) for d in rng.choice([1, 2, 3, 5], rank))
    if rng.random() < 0.15:
        shape = shape[:-1] + (0,)
    n_in = int(rng.integers(2, 4))
    shapes = [tuple(1 if rng.random() < 0.4 else d for d in shape) for _ in range(n_in)]
    shapes[0] = shape if rng.random() < 0.5 else shapes[0]
    ops = [str(rng.choice(list(_NP_OPS))) for _ in range(4)]
    picks = [int(rng.integers(0, n_in)) for _ in range(4)]
    axis = int(rng.integers(0, rank))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def program(lx, xs):
        acc = xs[0]
        for k, (op, i) in enumerate(zip(ops, picks)):
            acc = getattr(lx, op)(acc, xs[i])
            if k == 1:      # a keepdims reduction broadcast back by the next op
                acc = getattr(lx, "sub")(acc, acc.sum(axis, keepdims=True))
        return acc

    return args, program


@pytest.mark.parametrize("seed", [pytest.param(k, marks=() if k < 4 else pytest.mark.slow)
                                  for k in range(12)])
def test_random_size1_programs_agree_on_every_backend(seed, tmp_path):
    args, program = _random_case(seed)

    class _NpLax:      # the same program in NumPy (the reference)
        add, sub, mul, max, min = (staticmethod(_NP_OPS[k]) for k in
                                   ("add", "sub", "mul", "max", "min"))

    want = program(_NpLax, args)
    with config._override("jax_compilation_cache_dir", str(tmp_path)):
        for backend in _BACKENDS:
            for jit in (True, False):
                got, _ = _run(lambda *xs: program(lax, xs), args, backend, jit)
                assert got.shape == want.shape and got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6,
                                           err_msg=f"{backend} jit={jit}")


def test_eager_operator_fast_path_takes_size1_broadcasting(rjax):
    from jaxlite.numpy import _methods
    x, c = jnp.asarray(_M), jnp.asarray(_C)
    for _ in range(2):          # the second call runs the memoised plan
        got = x - c
    assert_like_jax(got, rjax.numpy.asarray(_M) - rjax.numpy.asarray(_C))
    op = _methods._OPS["__sub__"]
    memo = op.memo32 if hasattr(op, "memo32") else None
    if memo is not None:
        entry = memo.get((x.aval, c.aval))
        assert entry and entry[3].shape == (3, 4)
    # shapes that do not broadcast still raise JAX's TypeError, every time
    for _ in range(2):
        with pytest.raises(TypeError, match="incompatible shapes"):
            x - jnp.ones((3, 2))
