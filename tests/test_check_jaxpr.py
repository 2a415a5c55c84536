"""check_jaxpr (ir/check.py), jax_enable_checks in the compiler pipeline, and the settings
that are part of jit's cache key (config.py).

Valid programs of every kind pass, before and after each compiler pass; hand-broken ones
raise JaxprTypeError naming the equation (as real JAX's checker does for the same damage);
a deliberately broken pass is named.  Settings: read from the environment in config.py
only, and a change of jaxlite_fusion after the first call recompiles.
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.compiler import pipeline
from jaxlite.config import config
from jaxlite.core.avals import ShapedArray
from jaxlite.errors import JaxprTypeError
from jaxlite.ir import check_jaxpr
from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var

SRC = pathlib.Path(jax.__file__).parent


@pytest.fixture
def checks():
    with jax.enable_checks():
        yield


# ---- valid programs of every kind --------------------------------------------------------

@jax.custom_jvp
def _softplus(x):
    return jnp.log1p(jnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))


@jax.custom_vjp
def _clip_grad(x):
    return x * 1.0


_clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


def _scan(x):
    return lax.scan(lambda c, a: (c * 0.5 + a, jnp.sin(c)), jnp.zeros(()), x)


def _while(x):
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5),
                          (0, x))[1]


def _cond(x):
    return lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x)


def _switch(x):
    return lax.switch(2, [jnp.sin, jnp.cos, lambda v: v + 1.0], x)


def _fori(x):
    return lax.fori_loop(0, 3, lambda i, v: v + i, x)


def _nested_jit(x):
    inner = jax.jit(lambda v: jnp.tanh(v) @ v)
    return jax.jit(lambda v: inner(v) + inner(v * 2.0))(x)


def _mlp(x):
    w = jnp.ones((3, 4), jnp.float32) * 0.1
    return jax.nn.relu(x @ w).sum(axis=-1).mean()


def _indexing(x):
    y = x.at[1].set(7.0).at[::2].add(1.0)
    return y[jnp.array([0, 2])], jnp.take(x, jnp.array([2, 0])), jnp.argmax(x)


def _mixed_dtypes(x):
    i = x.astype(jnp.int32) + 3
    return (i // 2) % 5, x > 1.0, jnp.where(x > 0, x, 2), x * 2, jnp.float32(3) ** x


_X3 = np.array([0.5, -1.25, 2.0], np.float32)
_PROGRAMS = {
    "elementwise": (lambda x: jnp.sin(x) * 2 + jnp.exp(-x) / 3, _X3),
    "weak_scalars": (lambda x: (x + 1, 2 * x, x ** 2, jnp.maximum(x, 0)), _X3),
    "mixed_dtypes": (_mixed_dtypes, _X3),
    "reductions": (lambda x: (x.sum(), x.max(), jnp.prod(x), jnp.cumsum(x)), _X3),
    "shapes": (lambda x: jnp.concatenate([x, x[::-1]]).reshape(2, 3).T, _X3),
    "indexing": (_indexing, _X3),
    "mlp": (_mlp, np.ones((2, 3), np.float32)),
    "scan": (_scan, _X3),
    "while": (_while, _X3),
    "cond": (_cond, _X3),
    "switch": (_switch, _X3),
    "fori": (_fori, _X3),
    "nested_jit": (_nested_jit, np.ones((3, 3), np.float32)),
    "custom_jvp": (lambda x: _softplus(x).sum(), _X3),
    "custom_vjp": (lambda x: _clip_grad(x) * 3.0, _X3),
    "grad_custom_jvp": (jax.grad(lambda x: _softplus(x).sum()), _X3),
    "grad_custom_vjp": (jax.grad(lambda x: (_clip_grad(x) * 3.0).sum()), _X3),
    "grad_scan": (jax.grad(lambda x: _scan(x)[1].sum()), _X3),
    "grad_while_fori": (jax.grad(lambda x: _fori(x).sum()), _X3),
    "grad_cond": (jax.grad(lambda x: _cond(x).sum()), _X3),
    "grad_mlp": (jax.grad(_mlp), np.ones((2, 3), np.float32)),
    "vmap": (jax.vmap(lambda v: jnp.dot(v, v) + _cond(v).sum()), np.ones((4, 3), np.float32)),
    "vmap_scan": (jax.vmap(_scan), np.ones((2, 3), np.float32)),
    "jacfwd": (jax.jacfwd(lambda x: jnp.sin(x) * x), _X3),
    "checkpoint": (jax.grad(lambda x: jax.checkpoint(lambda v: jnp.sin(v) ** 2)(x).sum()),
                   _X3),
    "linear_solve": (lambda x: jnp.linalg.solve(jnp.eye(3) * 2.0 + 0.1, x), _X3),
}


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_valid_program_passes_before_and_after_every_pass(name, checks):
    f, x = _PROGRAMS[name]
    x = jnp.asarray(x)
    closed = jax.make_jaxpr(f)(x)
    assert check_jaxpr(closed) is None
    assert check_jaxpr(closed.jaxpr) is None
    # with checks on, optimize checks its input and every pass's output itself
    optimized, log = pipeline.optimize(closed, record=True)
    assert [n for n, *_ in log] == [n for n, _ in pipeline.PASSES]
    for _, _, after, _ in log:
        check_jaxpr(after)
    # and a jitted call compiles and runs under the checks, with the unjitted values
    want = f(x)
    got = jax.jit(f)(x)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
        assert g.dtype == w.dtype and g.shape == w.shape


def test_real_jax_accepts_the_same_programs(rjax):
    # the oracle: the programs sampled above are valid in JAX too (same functions)
    from jax.extend.core import check_jaxpr as jax_check
    import jax.numpy as rjnp
    for f in (lambda x: rjnp.sin(x) * 2 + rjnp.exp(-x) / 3,
              lambda x: rjax.lax.scan(lambda c, a: (c * 0.5 + a, rjnp.sin(c)), 0.0, x),
              rjax.grad(lambda x: rjax.lax.cond(x.sum() > 0, lambda v: v * 2.0,
                                                lambda v: -v, x).sum())):
        assert jax_check(rjax.make_jaxpr(f)(_X3).jaxpr) is None


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_programs_pass_every_pass(seed, checks):
    from fuzz_programs import make_program
    prog = make_program(seed, n_exprs=2)
    check_jaxpr(prog.closed)
    with config._override("jax_enable_x64", True):
        for fusion in (True, False):
            optimized, _ = pipeline.optimize(prog.closed, fusion=fusion)
            check_jaxpr(optimized)


def test_weak_types_inside_kernel_bodies(checks):
    # the fusion pass types a kernel's scalar body strongly; a weak conversion fused into
    # it is no error (JAX's checker ignores weak types everywhere; jaxlite compares them
    # outside kernel bodies, where they reach a jitted result)
    f = lambda x, n: jnp.sin(x) * (n * 1.5)
    closed = jax.make_jaxpr(f)(np.float32(1.0), 3)
    assert closed.jaxpr.invars[1].aval.weak_type
    fused, _ = pipeline.optimize(closed)
    assert [e.primitive.name for e in fused.eqns] == ["kernel"]
    check_jaxpr(fused)
    out = jax.jit(f)(np.float32(1.0), 3)
    assert out.dtype == np.float32 and not out.aval.weak_type
    np.testing.assert_allclose(out, np.sin(np.float32(1.0)) * 4.5, rtol=1e-6)
    # outside a kernel body, a lost weak type is an error
    closed.jaxpr.eqns[1].outvars[0].aval = ShapedArray((), np.float32)
    with pytest.raises(JaxprTypeError, match=r"equation 1 .* recorded as f32\[\], but "
                                             r"convert_element_type's .* f32\[\] \(weak"):
        check_jaxpr(closed)


def test_fused_kernel_bodies_are_checked(checks):
    closed = jax.make_jaxpr(lambda x: jnp.tanh(x * 2.0 + 1.0).sum())(_X3)
    fused, _ = pipeline.optimize(closed)
    kernels = [e for e in fused.eqns if e.primitive.name == "kernel"]
    assert kernels
    check_jaxpr(fused)
    # breaking the scalar body of the kernel is found inside it
    body = kernels[0].params["kernel"].body
    eqn = body.eqns[0]
    body.eqns[0] = eqn.replace(outvars=[Var(ShapedArray((), np.int32))])
    with pytest.raises(JaxprTypeError, match=r"in program kernel\.body of equation 0 "
                                             r"\(.*kernel.*\), equation 0 \("):
        check_jaxpr(fused)


# ---- hand-broken programs ----------------------------------------------------------------

def _f(x):
    return jnp.sin(x) * 2.0 + 1.0


def _jaxpr():
    return jax.make_jaxpr(_f)(_X3)


def test_use_before_definition_names_the_equation(rjax):
    closed = _jaxpr()
    j = closed.jaxpr
    j.eqns[0], j.eqns[1] = j.eqns[1], j.eqns[0]
    with pytest.raises(JaxprTypeError) as e:
        check_jaxpr(closed)
    msg = str(e.value)
    assert re.search(r"equation 0 \(\S+:f32\[3\] = mul \S+ 2\.0:f32\[\]\)", msg), msg
    assert "not defined before it" in msg and "operand 0" in msg
    assert isinstance(e.value, TypeError)
    # JAX rejects the same damage with the same error type
    from jax.extend.core import check_jaxpr as jax_check
    import jax.numpy as rjnp
    rj = rjax.make_jaxpr(lambda x: rjnp.sin(x) * 2.0 + 1.0)(_X3).jaxpr
    eqns = list(rj.eqns)
    with pytest.raises(rjax.errors.JaxprTypeError):
        jax_check(rj.replace(eqns=[eqns[1], eqns[0]] + eqns[2:]))


def test_wrong_output_aval_names_the_equation():
    for bad, word in ((ShapedArray((4,), np.float32), "f32[4]"),
                      (ShapedArray((3,), np.float16), "f16[3]"),
                      (ShapedArray((3,), np.float32, weak_type=True), "weak type")):
        closed = _jaxpr()
        j = closed.jaxpr
        v = Var(bad)
        j.eqns[1] = j.eqns[1].replace(outvars=[v])
        j.eqns[2] = j.eqns[2].replace(invars=[v, j.eqns[2].invars[1]])
        with pytest.raises(JaxprTypeError, match=r"equation 1 \(.* = mul .*\): output 0 is "
                                                 r"recorded as .*" + re.escape(word) + r".*mul's "
                                                 r"abstract-evaluation rule gives f32\[3\]"):
            check_jaxpr(closed)


def test_wrong_number_of_outputs_and_rejected_operands():
    closed = _jaxpr()
    j = closed.jaxpr
    j.eqns[0] = j.eqns[0].replace(outvars=j.eqns[0].outvars + [Var(ShapedArray((), "f4"))])
    with pytest.raises(JaxprTypeError, match=r"equation 0 .*sin gives 1 output\(s\) for these "
                                             r"operands; the equation binds 2"):
        check_jaxpr(closed)
    closed = _jaxpr()
    j = closed.jaxpr
    j.invars[0] = Var(ShapedArray((3,), np.int32))
    j.eqns[0] = j.eqns[0].replace(invars=[j.invars[0]])
    with pytest.raises(JaxprTypeError, match=r"equation 0 \(.*sin.*\): the abstract-evaluation "
                                             r"rule of sin rejects the operands \(i32\[3\]\)"):
        check_jaxpr(closed)


def test_duplicate_definition_names_the_equation():
    closed = _jaxpr()
    j = closed.jaxpr
    j.eqns[1] = j.eqns[1].replace(outvars=list(j.eqns[0].outvars))
    with pytest.raises(JaxprTypeError, match=r"equation 1 \(.*mul.*\): output 0 defines a "
                                             r"variable that is already defined"):
        check_jaxpr(closed)
    closed = _jaxpr()
    closed.jaxpr.invars.append(closed.jaxpr.invars[0])
    with pytest.raises(JaxprTypeError, match="invar 1 defines a variable that is already"):
        check_jaxpr(closed)


def test_undefined_outvar(rjax):
    closed = _jaxpr()
    closed.jaxpr.outvars[0] = Var(ShapedArray((3,), np.float32))
    with pytest.raises(JaxprTypeError, match=r"the program's output 0 reads a variable of "
                                             r"type f32\[3\] that is not defined"):
        check_jaxpr(closed)
    from jax.extend.core import check_jaxpr as jax_check, Var as RVar
    rj = rjax.make_jaxpr(lambda x: rjax.numpy.sin(x) * 2.0 + 1.0)(_X3).jaxpr
    with pytest.raises(rjax.errors.JaxprTypeError):
        jax_check(rj.replace(outvars=[RVar(rj.outvars[0].aval)]))


def test_malformed_literals_and_consts():
    closed = _jaxpr()
    j = closed.jaxpr
    lit = j.eqns[1].invars[1]
    assert isinstance(lit, Literal)
    for bad, msg in ((Literal(np.float64(2.0), lit.aval), "holds a float64 value"),
                     (Literal(np.ones(2, np.float32), lit.aval), r"shape \(2,\)"),
                     (Literal(np.float32(2), ShapedArray((2,), np.float32)),
                      "must be a scalar")):
        j.eqns[1] = j.eqns[1].replace(invars=[j.eqns[1].invars[0], bad])
        with pytest.raises(JaxprTypeError, match=r"equation 1 \(.*\): operand 1: .*" + msg):
            check_jaxpr(closed)
    with pytest.raises(JaxprTypeError, match="1 constants for 0 constvars"):
        check_jaxpr(ClosedJaxpr(_jaxpr().jaxpr, [np.float32(1)]))
    with pytest.raises(TypeError, match="Jaxpr or a ClosedJaxpr, got list"):
        check_jaxpr([])


def test_broken_nested_program_names_the_path():
    closed = jax.make_jaxpr(_scan)(_X3)
    scan_eqn = closed.jaxpr.eqns[-1]
    assert scan_eqn.primitive.name == "scan"
    body = scan_eqn.params["jaxpr"].jaxpr
    body.eqns.reverse()
    with pytest.raises(JaxprTypeError, match=r"in program jaxpr of equation 0 \(\S+:f32\[\] "
                                             r"\S+:f32\[3\] = scan\[\.\.\.\] \S+ \S+\), "
                                             r"equation 1 \(\S+:f32\[\] = add \S+ \S+\): "
                                             r"operand 0 reads a variable"):
        check_jaxpr(closed)
    # a sub-program has a scope of its own: reading the enclosing program's variable fails
    closed = jax.make_jaxpr(_cond)(_X3)
    cond_eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "cond")
    branch = cond_eqn.params["branches"][1].jaxpr
    branch.eqns[0] = branch.eqns[0].replace(invars=[closed.jaxpr.invars[0]])
    with pytest.raises(JaxprTypeError, match=r"in program branches\[1\] of equation"):
        check_jaxpr(closed)


# ---- the pipeline names a broken pass ----------------------------------------------------

def _retype_last_output(closed):
    """A broken pass: records the last equation's output as float16."""
    j = closed.jaxpr
    last = j.eqns[-1]
    v = Var(last.outvars[0].aval.update(dtype=np.float16))
    outvars = [v if o is last.outvars[0] else o for o in j.outvars]
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns[:-1] + [last.replace(outvars=[v])],
                             outvars), closed.consts)


def _drop_first_equation(closed):
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns[1:], j.outvars), closed.consts)


@pytest.mark.parametrize("bad_pass,msg", [
    (_retype_last_output, r"equation \d+ \(.*f16\[3\] = .*\): output 0 is recorded as f16"),
    (_drop_first_equation, r"equation 0 \(.*\): operand 0 reads a variable of type f32\[3\] "
                           r"that is not defined"),
])
def test_broken_pass_is_named(monkeypatch, bad_pass, msg):
    passes = list(pipeline.PASSES)
    passes.insert(3, ("broken", bad_pass))
    monkeypatch.setattr(pipeline, "PASSES", tuple(passes))
    f = jax.jit(lambda x: jnp.sin(x) * 2.0 + jnp.cos(x))
    with jax.enable_checks():
        with pytest.raises(JaxprTypeError, match=r"the output of compiler pass 'broken' is "
                                                 r"ill-typed: " + msg):
            f(_X3)
        # the failed compile left nothing in the cache
        assert f._cache_size() == 0
    # checks off: the pipeline does not look (the broken program goes on unchecked)
    with jax.enable_checks(False):
        optimized, _ = pipeline.optimize(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(_X3),
                                         fusion=False)
    with pytest.raises(JaxprTypeError):
        check_jaxpr(optimized)


def test_ill_typed_input_program_is_named(checks):
    closed = _jaxpr()
    closed.jaxpr.eqns.reverse()
    with pytest.raises(JaxprTypeError, match=r"the program given to the compiler \(before any "
                                             r"pass\) is ill-typed: equation 0"):
        pipeline.optimize(closed)


# ---- the flag ----------------------------------------------------------------------------

def test_enable_checks_flag_like_jax(rjax):
    # the suite runs with the checks on (conftest.py, as JAX's own tests do); JAX's default
    # is off, and so is jaxlite's without JAXLITE_ENABLE_CHECKS / JAX_ENABLE_CHECKS
    assert rjax.config.jax_enable_checks is False
    assert config.jax_enable_checks is (os.environ.get("JAXLITE_ENABLE_CHECKS") == "1")
    old = config.jax_enable_checks
    with jax.enable_checks():
        assert config.jax_enable_checks is True
        with jax.enable_checks(False):
            assert config.jax_enable_checks is False
        assert config.jax_enable_checks is True
    assert config.jax_enable_checks is old
    config.update("jax_enable_checks", not old)
    try:
        assert config.read("jax_enable_checks") is (not old)
    finally:
        config.update("jax_enable_checks", old)
    with pytest.raises(ValueError, match="jax_enable_checks: new bool config value"):
        config.update("jax_enable_checks", "yes")
    assert issubclass(JaxprTypeError, TypeError)
    assert issubclass(rjax.errors.JaxprTypeError, TypeError)
    assert jax.errors.JaxprTypeError is JaxprTypeError


# ---- configuration in one place; settings of compiled code in jit's key -----------------

def test_environment_is_read_in_config_only():
    pattern = re.compile(r"os\.environ|os\.getenv|environ\[|getenv\(")
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "config.py" and path.parent == SRC:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and re.search(r"JAX(LITE)?_", line):
                offenders.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert not offenders, offenders


def test_environment_variables_reach_config():
    env = dict(os.environ, JAXLITE_FUSION="0", JAXLITE_ENABLE_CHECKS="1",
               JAXLITE_BUFFER_POOL_BYTES="1e6")
    code = ("import jaxlite as j; from jaxlite.runtime import buffer as b; "
            "print(j.config.jaxlite_fusion, j.config.jax_enable_checks, "
            "j.config.jaxlite_buffer_pool_bytes, b.POOL.limit)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False", "True", "1000000", "1000000"]
    # unset: fusion on, checks off (JAX's default), the pool's own default
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAXLITE_FUSION", "JAXLITE_ENABLE_CHECKS", "JAX_ENABLE_CHECKS",
                        "JAXLITE_BUFFER_POOL_BYTES")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[:3] == ["True", "False", "None"] and int(out[3]) > 0
    env["JAXLITE_BUFFER_POOL_BYTES"] = "lots"
    bad = subprocess.run([sys.executable, "-c", "import jaxlite"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert "JAXLITE_BUFFER_POOL_BYTES must be a number of bytes, got 'lots'" in bad.stderr


def test_buffer_pool_flag_applies_at_once():
    from jaxlite.runtime import buffer
    old = buffer.POOL.limit
    try:
        config.update("jaxlite_buffer_pool_bytes", 12345)
        assert buffer.POOL.limit == 12345
        with pytest.raises(ValueError, match="jaxlite_buffer_pool_bytes takes a number"):
            config.update("jaxlite_buffer_pool_bytes", -1)
    finally:
        config.update("jaxlite_buffer_pool_bytes", None)
    assert buffer.POOL.limit == old


def _kernel_count(f, x):
    return sum(e.primitive.name == "kernel"
               for e in f.lower(x).compile()._program.optimized.eqns)


def test_changing_fusion_after_the_first_call_recompiles(caplog):
    f = jax.jit(lambda x: jnp.tanh(x * 2.0) + 1.0)
    x = jnp.asarray(_X3)
    want = np.tanh(_X3 * 2.0) + 1.0
    assert config.jaxlite_fusion is True
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)    # the fast path
    assert f._cache_size() == 1 and _kernel_count(f, x) == 1
    try:
        with jax.explain_cache_misses(), caplog.at_level("WARNING", logger="jaxlite"):
            config.update("jaxlite_fusion", False)
            got = f(x)
        assert f._cache_size() == 2
        assert "jaxlite_fusion True -> False" in caplog.text
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        assert got.dtype == np.float32 and got.shape == (3,)
        assert _kernel_count(f, x) == 0                    # compiled without fusion
        entry = f._cache[next(k for k in f._cache if k[5][0] is False)]
        assert not any(e.primitive.name == "kernel"
                       for e in entry.compiled._program.optimized.eqns)
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    finally:
        config.update("jaxlite_fusion", True)
    # back to the first setting: its program is still cached (no third compile)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    assert f._cache_size() == 2


def test_other_compile_settings_are_in_the_key():
    f = jax.jit(lambda x: x * 3.0)
    x = jnp.asarray(_X3)
    f(x)
    with config._override("jaxlite_tiered", not config.jaxlite_tiered):
        f(x)
        assert f._cache_size() == 2
    with config._override("jaxlite_tier_up_calls", config.jaxlite_tier_up_calls + 5):
        f(x)
        assert f._cache_size() == 3
    f(x)
    assert f._cache_size() == 3
    # a setting that does not change compiled code leaves the cache alone
    with jax.log_compiles(True):
        f(x)
    assert f._cache_size() == 3
