"""jit: caching, static and donated arguments, stages, logging, tracer errors, pytrees."""
from __future__ import annotations

import functools
import logging

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import errors

from oracle import assert_like_jax


def chapter_f(x, y):
    return jnp.dot(x, y) + jnp.sum(x)


def test_chapter_function_value_is_38():
    f = jax.jit(chapter_f)
    out = f(jnp.array([1.0, 2.0, 3.0]), jnp.array([4.0, 5.0, 6.0]))
    assert out.shape == () and out.dtype == np.float32
    assert float(out) == 38.0


def test_matches_real_jax(rjax, rjnp):
    x, y = np.arange(3, dtype=np.float32), np.arange(3, 6, dtype=np.float32)
    want = rjax.jit(lambda a, b: rjnp.dot(a, b) + rjnp.sum(a))(x, y)
    got = jax.jit(chapter_f)(jnp.asarray(x), jnp.asarray(y))
    assert_like_jax(got, want)


def test_cache_hits_and_shape_miss():
    calls = []

    @jax.jit
    def g(x):
        calls.append(1)
        return jnp.sum(x)

    assert int(g(jnp.array([1, 2, 3]))) == 6
    assert int(g(jnp.array([4, 5, 6]))) == 15
    assert g._cache_size() == 1 and len(calls) == 1
    assert int(g(jnp.array([1, 2, 3, 4]))) == 10
    assert g._cache_size() == 2 and len(calls) == 2


@pytest.mark.parametrize("a,b", [
    (np.float32(1.0), np.int32(1)),               # dtype
    (1.0, np.float32(1.0)),                       # weak type
])
def test_cache_keyed_on_dtype_and_weak_type(a, b):
    f = jax.jit(lambda x: x * 2)
    f(a)
    f(b)
    assert f._cache_size() == 2


def test_python_scalar_args_are_weak():
    out = jax.jit(lambda x: x)(2.0)
    assert out.dtype == np.float32 and out.weak_type


def test_static_argnums_and_argnames():
    @functools.partial(jax.jit, static_argnums=(1,))
    def f(x, n):
        return x * n if n > 1 else x  # Python control flow on a static value

    x = jnp.ones(3)
    np.testing.assert_array_equal(f(x, 3), [3, 3, 3])
    np.testing.assert_array_equal(f(x, 1), [1, 1, 1])
    assert f._cache_size() == 2
    f(x, 3)
    assert f._cache_size() == 2

    g = jax.jit(lambda x, n: x + n, static_argnames="n")
    assert float(g(jnp.float32(1), n=2)[()]) == 3.0
    assert g._cache_size() == 1


def test_static_argnames_maps_to_position():
    def f(x, n):
        return x * n
    g = jax.jit(f, static_argnames=("n",))
    assert float(g(jnp.float32(2), 5)) == 10.0   # passed positionally, still static


def test_unhashable_static_raises_value_error_and_leaves_cache():
    f = jax.jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(ValueError, match="static argument .* is unhashable"):
        f(jnp.ones(2), [1, 2])
    assert f._cache_size() == 0


def test_failed_trace_leaves_cache_unchanged():
    @jax.jit
    def f(x):
        if x.shape[0] == 4:
            raise ValueError("boom")
        return x

    f(jnp.ones(3))
    with pytest.raises(ValueError, match="boom"):
        f(jnp.ones(4))
    assert f._cache_size() == 1


def test_invalid_argument_type_names_argument():
    f = jax.jit(lambda x, label: x)
    with pytest.raises(TypeError, match="label"):
        f(jnp.ones(2), "abc")


def test_print_at_trace_time_debug_print_every_call(capsys):
    @jax.jit
    def f(x):
        print("tracing")
        jax.debug.print("value {}", x)
        return x + 1

    f(jnp.array([1, 2]))
    f(jnp.array([3, 4]))
    out = capsys.readouterr().out
    assert out.count("tracing") == 1
    assert "value [1 2]" in out and "value [3 4]" in out


def test_log_compiles_and_explain_cache_misses(caplog):
    @jax.jit
    def g(x):
        return jnp.sum(x)

    jax.config.update("jax_log_compiles", True)
    jax.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="jaxlite"):
            g(jnp.array([1, 2, 3]))
            g(jnp.array([1, 2, 3, 4]))
    finally:
        jax.config.update("jax_log_compiles", False)
        jax.config.update("jax_explain_cache_misses", False)
    text = caplog.text
    assert text.count("Compiling g") == 2
    assert "argument x shape (3,) -> (4,)" in text


def test_compile_events_carry_reasons():
    @jax.jit
    def g(x, n):
        return x * n

    with jax.monitoring.record(["compile"]) as events:
        g(jnp.ones(3), 2)
        g(jnp.ones(3), 2)
        g(jnp.ones(3, dtype=jnp.int32), 2)
    reasons = [d["reason"] for _, d in events]
    assert reasons == ["first call", "argument x dtype float32 -> int32"]


def test_lower_compile_as_text_and_cost_analysis():
    x = jnp.array([1.0, 2.0, 3.0])
    lowered = jax.jit(chapter_f).lower(x, x)
    text = lowered.as_text()
    assert "dot_general" in text and "reduce_sum" in text
    compiled = lowered.compile()
    ctext = compiled.as_text()
    # the default cpu backend: the optimised program and its native kernels
    assert "# optimised program" in ctext and "add" in ctext
    assert "backend=cpu" in ctext and "native kernel" in ctext
    with jax.config._override("jaxlite_backend", "interpreter"):
        itext = jax.jit(chapter_f).lower(x, x).compile().as_text()
    assert "def chapter_f" in itext and "backend=interpreter" in itext
    cost = compiled.cost_analysis()
    # dot of 3-vectors: 2*3 flops; sum: 3; add: 1
    assert cost["flops"] == 10.0
    assert cost["bytes accessed"] > 0
    assert float(compiled(x, jnp.array([4.0, 5.0, 6.0]))) == 38.0
    with pytest.raises(TypeError, match="compiled for f32\\[3\\]"):
        compiled(jnp.ones(4), jnp.ones(4))


def test_donated_arguments_are_deleted():
    f = jax.jit(lambda x, y: x + y, donate_argnums=0)
    x, y = jnp.ones(3), jnp.ones(3)
    out = f(x, y)
    np.testing.assert_array_equal(out, [2, 2, 2])
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        f(x, y)


def test_pytrees_in_and_out():
    @jax.jit
    def f(d, pair):
        a, b = pair
        return {"s": d["x"] + a, "t": [b * 2, None]}

    out = f({"x": jnp.ones(2)}, (jnp.float32(3), 4))
    np.testing.assert_array_equal(out["s"], [4, 4])
    assert out["t"][1] is None and int(out["t"][0]) == 8


def test_kwargs_are_dynamic():
    f = jax.jit(lambda x, scale=1.0: x * scale)
    assert float(f(jnp.float32(2), scale=3.0)) == 6.0
    assert float(f(jnp.float32(2), scale=4.0)) == 8.0
    assert f._cache_size() == 1


def test_nested_jit_is_one_equation_then_inlined():
    inner = jax.jit(lambda x: x + 1)
    outer = jax.jit(lambda x: inner(x) * 2)
    jaxpr = jax.make_jaxpr(outer)(jnp.ones(2))
    assert [e.primitive.name for e in jaxpr.eqns] == ["jit"]
    compiled = outer.lower(jnp.ones(2)).compile()
    names = [e.primitive.name for e in compiled._program.optimized.eqns]
    assert names == ["kernel"]   # inlined, then fused into one kernel
    body = compiled._program.optimized.eqns[0].params["kernel"].body
    assert [e.primitive.name for e in body.eqns] == ["add", "mul"]
    np.testing.assert_array_equal(outer(jnp.ones(2)), [4, 4])


def test_decorator_forms():
    @jax.jit
    def a(x):
        return x

    @jax.jit(static_argnums=0)
    def b(n):
        return jnp.ones(n)

    @functools.partial(jax.jit, static_argnames="n")
    def c(n):
        return jnp.zeros(n)

    assert a(jnp.ones(1)).shape == (1,) and b(3).shape == (3,) and c(n=2).shape == (2,)


def test_disable_jit_runs_python():
    seen = []

    @jax.jit
    def f(x):
        seen.append(type(x).__name__)
        return x

    with jax.disable_jit():
        f(jnp.ones(2))
    assert seen == ["ArrayImpl"]


# ---- tracer errors --------------------------------------------------------------------

def test_python_if_on_traced_value():
    @jax.jit
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(errors.TracerBoolConversionError, match="lax.cond"):
        f(jnp.float32(1))
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.ConcretizationTypeError, TypeError)


def test_int_and_numpy_conversion_of_tracers(rjax):
    # int() of a traced value is a ConcretizationTypeError in JAX; __index__ (a list index)
    # is a TracerIntegerConversionError, and on a float value a plain TypeError
    with pytest.raises(errors.ConcretizationTypeError):
        jax.jit(lambda x: int(x))(jnp.int32(1))
    with pytest.raises(rjax.errors.ConcretizationTypeError):
        rjax.jit(lambda x: int(x))(1)
    with pytest.raises(TypeError, match="Only integer scalar arrays"):
        jax.jit(lambda x: [1, 2, 3][x])(jnp.float32(1))
    with pytest.raises(TypeError, match="Only integer scalar arrays"):
        rjax.jit(lambda x: [1, 2, 3][x])(1.0)
    with pytest.raises(errors.TracerIntegerConversionError):
        jax.jit(lambda x: [1, 2, 3][x])(jnp.int32(1))
    with pytest.raises(errors.TracerArrayConversionError):
        jax.jit(lambda x: np.sin(np.asarray(x)))(jnp.float32(1))
    with pytest.raises(errors.ConcretizationTypeError):
        jax.jit(lambda x: float(x))(jnp.float32(1))


def test_boolean_mask_under_jit():
    with pytest.raises(errors.NonConcreteBooleanIndexError):
        jax.jit(lambda x: x[x > 0])(jnp.arange(3.0))


def test_leaked_tracer_raises_unexpected_tracer_error():
    leaked = []

    @jax.jit
    def f(x):
        leaked.append(x)
        return x

    f(jnp.ones(2))
    with pytest.raises(errors.UnexpectedTracerError):
        leaked[0] + 1


def test_jit_of_non_callable():
    with pytest.raises(TypeError, match="callable"):
        jax.jit(3)


def test_committed_devices_in_jit_call():
    d0 = jax.devices()[0]
    x = jax.device_put(jnp.ones(2), d0)
    out = jax.jit(lambda a: a * 2)(x)
    assert out.devices() == {d0} and out.committed


def test_lower_and_eval_shape_from_shape_dtype_structs(rjax):
    spec = jax.ShapeDtypeStruct((2, 3), jnp.float32)
    lowered = jax.jit(lambda a: a.sum(axis=0)).lower(spec)
    assert "reduce_sum" in lowered.as_text()
    out = jax.eval_shape(lambda a, b: (a @ b.T, a.sum()), spec, spec)
    want = rjax.eval_shape(lambda a, b: (a @ b.T, a.sum()),
                           rjax.ShapeDtypeStruct((2, 3), np.float32),
                           rjax.ShapeDtypeStruct((2, 3), np.float32))
    assert [(o.shape, o.dtype) for o in out] == [(w.shape, w.dtype) for w in want]


def test_no_numpy_floating_point_warnings_escape():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a program run with -W error must not break
        x = jnp.array([1000.0, -1.0, 0.0])
        eager = [jnp.exp(x), jnp.log(x), x / 0.0, jnp.sum(jnp.array([3e38, 3e38])),
                 jnp.float16(60000) * 2]
        jitted = jax.jit(lambda a: (jnp.exp(a), jnp.log(a), a / 0.0))(x)
    assert np.isinf(np.asarray(eager[0])[0]) and np.isnan(np.asarray(eager[1])[1])
    np.testing.assert_array_equal(np.asarray(jitted[2]), np.asarray(eager[2]))


def test_compiled_takes_only_the_dynamic_arguments():
    # JAX: lower fixed the static arguments; passing them again is a pytree mismatch
    c = jax.jit(lambda x, n: x * n, static_argnums=1).lower(1.0, 3).compile()
    assert float(c(2.0)) == 6.0
    with pytest.raises(TypeError, match="static arguments"):
        c(2.0, 5)


def test_numpy_float64_scalar_arguments_are_strong(rjax):
    h = np.ones(1, np.float16)
    got = jax.jit(lambda a, b: a + b)(np.float64(1.5), jnp.asarray(h))
    want = rjax.jit(lambda a, b: a + b)(np.float64(1.5), h)
    assert_like_jax(got, want)
    out = jax.jit(lambda a: a)(np.float64(1.5))
    assert out.dtype == np.float32 and not out.weak_type


def test_static_argnums_out_of_range():
    with pytest.raises(ValueError, match="only accepts 2 positional arguments"):
        jax.jit(lambda x, n: x * n, static_argnums=5)


_TWO_DEVICES = """
import warnings
import jaxlite as jax, jaxlite.numpy as jnp
d1 = jax.devices()[1]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    r = jax.jit(lambda x: x + 1, device=d1)(jnp.ones(3))
print(r.devices() == {d1}, r.committed)
a1 = jax.device_put(jnp.arange(3.0), d1)
print(all(f(a1).devices() == {d1} and f(a1).committed
          for f in (jnp.zeros_like, jnp.ones_like, jnp.empty_like,
                    lambda a: jnp.full_like(a, 2.0))))
"""


def test_jit_device_and_like_functions_follow_devices():
    import os
    import subprocess
    import sys
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2")
    out = subprocess.run([sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "True", "True"]


def test_function_named_like_a_keyword_compiles():
    # the interpreter names its generated function after the jitted one: ``or`` (the
    # name of lax's bitwise_or case in tests/test_rules.py) was a SyntaxError there
    def f(x):
        return x + 1
    for name in ("or", "lambda", "1st", "<lambda>", ""):
        f.__name__ = name
        out = jax.jit(f)(jnp.ones(2, jnp.int32))
        assert out.dtype == np.int32 and out.tolist() == [2, 2]
