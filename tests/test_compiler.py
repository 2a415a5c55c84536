"""Compiler passes (inline, fold, cse, dce) and the interpreter backend."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.compiler import optimize
from jaxlite.compiler.passes import cse, dce, fold_constants, inline_calls
from jaxlite.core.primitive import primitives
from jaxlite.ir import eval_jaxpr


def names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def test_dce_removes_unused_but_keeps_effects():
    def f(x):
        unused = jnp.sin(x) * 3  # noqa: F841
        jax.debug.print("x={}", x)
        return x + 1

    closed = jax.make_jaxpr(f)(jnp.ones(2))
    assert "sin" in names(closed)
    out = dce(closed)
    assert names(out) == ["debug_callback", "add"]


def test_cse_merges_identical_equations():
    closed = jax.make_jaxpr(lambda x: jnp.sin(x) + jnp.sin(x))(jnp.ones(2))
    assert names(closed).count("sin") == 2
    out = cse(closed)
    assert names(out).count("sin") == 1
    add = out.jaxpr.eqns[-1]
    assert add.invars[0] is add.invars[1]


def test_cse_keeps_effects_apart():
    def f(x):
        jax.debug.print("a {}", x)
        jax.debug.print("a {}", x)
        return x
    assert names(cse(jax.make_jaxpr(f)(jnp.ones(1)))).count("debug_callback") == 2


def test_fold_constants_evaluates_small_constant_subexpressions():
    c = np.arange(4, dtype=np.float32)

    def f(x):
        k = jnp.asarray(c) * 2 + 1      # constant subexpression
        return x + k

    closed = jax.make_jaxpr(f)(jnp.ones(4))
    assert names(closed) == ["mul", "add", "add"]
    out = fold_constants(closed)
    assert names(out) == ["add"]
    opt, _ = optimize(closed)
    (res,) = eval_jaxpr(opt.jaxpr, opt.consts, jnp.ones(4))
    np.testing.assert_array_equal(res, c * 2 + 2)


def test_fold_scalar_literals():
    closed = jax.make_jaxpr(lambda x: x * (lax.exp(np.float32(0.0)) + 1.0))(jnp.ones(3))
    out = fold_constants(closed)
    assert names(out) == ["mul"]
    lit = out.jaxpr.eqns[0].invars[1]
    assert float(lit.val) == 2.0


def test_inline_nested_calls():
    a = jax.jit(lambda x: x + 1)
    b = jax.jit(lambda x: a(x) * 2)
    c = jax.jit(lambda x: b(x) - a(x))
    closed = jax.make_jaxpr(c)(jnp.ones(2))
    assert names(closed) == ["jit"]
    out = inline_calls(closed)
    assert names(out) == ["add", "mul", "add", "sub"]
    np.testing.assert_array_equal(c(jnp.ones(2)), [2, 2])


def test_pass_log_prints_each_pass():
    compiled = jax.jit(lambda x: jnp.sin(x) + jnp.sin(x)).lower(jnp.ones(2)).compile()
    log = compiled.pass_log()
    for p in ("inline", "fold", "cse", "dce"):
        assert f"== pass {p}" in log


def test_interpreter_frees_dead_intermediates():
    # cumsum does not fuse: the kernel before it leaves an intermediate to free
    with jax.config._override("jaxlite_backend", "interpreter"):
        f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 2) + 1)
        src = f.lower(jnp.ones(8)).compile().as_text()
    assert "del v0" in src


def test_jit_peak_memory_counts_temporaries():
    dev = jax.devices()[0]
    x = jnp.ones(1 << 16)                       # 256 KiB
    f = jax.jit(lambda x: ((x * 2) + 1) * 3)
    f(x).block_until_ready()
    dev.reset_peak_memory()
    base = dev.memory_stats()["bytes_in_use"]
    out = f(x)
    peak = dev.memory_stats()["peak_bytes_in_use"]
    # input is live already; temporaries and the output add at most 2 more buffers
    assert peak - base <= 2 * x.nbytes + 64
    assert peak - base >= x.nbytes
    del out


# ---- every primitive declares its rules ----------------------------------------------

def test_every_primitive_has_its_rules():
    prims = primitives()
    assert len(prims) > 60
    for name, p in prims.items():
        assert callable(p.abstract_eval), name
        assert callable(p.impl), name
        assert p.flops is not None, name
        if p.kind == "elementwise":
            assert p.scalar_op, name


# ---- property: jit (interpreter after passes) agrees with eager -----------------------

_UNARY = [jnp.sin, jnp.cos, jnp.exp, jnp.tanh, jnp.abs, jnp.negative, jnp.square]
_BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.minimum]


@st.composite
def programs(draw):
    n_ops = draw(st.integers(1, 8))
    ops = []
    for _ in range(n_ops):
        if draw(st.booleans()):
            ops.append(("u", draw(st.sampled_from(range(len(_UNARY)))),
                        draw(st.integers(0, 10))))
        else:
            ops.append(("b", draw(st.sampled_from(range(len(_BINARY)))),
                        draw(st.integers(0, 10)), draw(st.integers(0, 10))))
    shape = draw(st.sampled_from([(), (3,), (2, 3)]))
    return ops, shape


def _run_program(ops, x, y):
    vals = [x, y]
    for op in ops:
        if op[0] == "u":
            vals.append(_UNARY[op[1]](vals[op[2] % len(vals)]))
        else:
            vals.append(_BINARY[op[1]](vals[op[2] % len(vals)], vals[op[3] % len(vals)]))
    return vals[-1] + vals[len(vals) // 2]


@settings(max_examples=40, deadline=None)
@given(programs())
def test_jit_agrees_with_eager_on_random_programs(prog):
    ops, shape = prog
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(shape).astype(np.float32))
    y = jnp.asarray(rng.standard_normal(shape).astype(np.float32))
    eager = _run_program(ops, x, y)
    jitted = jax.jit(lambda a, b: _run_program(ops, a, b))(x, y)
    assert jitted.dtype == eager.dtype and jitted.shape == eager.shape
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-6, atol=1e-6)


