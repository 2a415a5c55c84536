"""Top-level names tutorials use (issue 10): jacobian, typeof, float0, named_call /
named_scope, ensure_compile_time_eval, print_environment_info, linear_transpose,
custom_gradient; each against real JAX."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from oracle import assert_like_jax


def _both(rjax, rjnp, fn):
    """``fn(jax, jnp)`` run on jaxlite and on real JAX: (result or exception type) each."""
    out = []
    for j, n in ((jax, jnp), (rjax, rjnp)):
        try:
            out.append(fn(j, n))
        except Exception as e:   # noqa: BLE001 -- compared by type
            out.append(type(e))
    return out


def _assert_tree_like(got, want):
    from jaxlite.tree_util import tree_flatten
    import jax as real
    g, gt = tree_flatten(got)
    w, wt = real.tree_util.tree_flatten(want)
    assert str(gt).replace("PyTreeSpec", "PyTreeDef") == str(wt)
    for a, b in zip(g, w):
        assert_like_jax(a, b, rtol=1e-5, atol=1e-6)


# ---- jacobian ----------------------------------------------------------------------------

def test_jacobian_is_jacrev(rjax, rjnp):
    def f(j, n):
        return j.jacobian(lambda x, y: n.sin(x) * y, argnums=(0, 1))(n.arange(3.), 2.)
    got, want = _both(rjax, rjnp, f)
    _assert_tree_like(got, want)
    got, want = _both(rjax, rjnp, lambda j, n: j.jacobian(
        lambda x: (x ** 2, n.sum(x)), has_aux=True)(n.arange(2.)))
    _assert_tree_like(got, want)
    got, want = _both(rjax, rjnp, lambda j, n: j.jacobian(lambda x: x)(n.arange(2)))
    assert got is want is TypeError   # integer input without allow_int


# ---- typeof / float0 ---------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda n: n.ones(3), lambda n: 1.0, lambda n: 1, lambda n: True, lambda n: 1j,
    lambda n: np.int64(3), lambda n: np.float64(2.0), lambda n: n.ones((2, 3), n.bfloat16),
    lambda n: n.zeros((0, 2), n.int8), lambda n: np.zeros((2,), np.uint16)])
def test_typeof_prints_like_jax(rjax, rjnp, make):
    got, want = jax.typeof(make(jnp)), rjax.typeof(make(rjnp))
    assert str(got) == str(want)
    assert repr(got) == repr(want)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


def test_typeof_key_and_tracers(rjax, rjnp):
    assert str(jax.typeof(jax.random.key(0))) == str(rjax.typeof(rjax.random.key(0)))
    assert repr(jax.typeof(jax.random.key(0))) == repr(rjax.typeof(rjax.random.key(0)))
    seen = []
    for j, n in ((jax, jnp), (rjax, rjnp)):
        got = []
        j.jit(lambda x: got.append(str(j.typeof(x))) or x)(1.0)
        j.grad(lambda x: got.append(str(j.typeof(x))) or x)(1.0)
        j.vmap(lambda x: got.append(str(j.typeof(x))) or x)(n.ones((4, 2), n.int32))
        seen.append(got)
    assert seen[0] == seen[1] == ["~float32[]", "~float32[]", "int32[2]"]


@pytest.mark.parametrize("bad", [[1, 2], (1,), None, "a"])
def test_typeof_rejects_non_arrays(rjax, bad):
    with pytest.raises(TypeError):
        rjax.typeof(bad)
    with pytest.raises(TypeError, match="not a valid JAX type"):
        jax.typeof(bad)


def test_float0(rjax):
    assert jax.float0 == rjax.float0
    assert repr(jax.float0) == repr(rjax.float0)
    g = jax.grad(lambda x, i: x * i, argnums=1, allow_int=True)(2.0, 3)
    w = rjax.grad(lambda x, i: x * i, argnums=1, allow_int=True)(2.0, 3)
    assert g.dtype == w.dtype == jax.float0


# ---- named_call / named_scope ------------------------------------------------------------

def test_named_call_and_scope(rjax, rjnp):
    def f(x):
        """doc"""
        return x * 2
    for j in (jax, rjax):
        g = j.named_call(f, name="double")
        assert g.__name__ == "f" and g.__doc__ == "doc"
        assert float(g(2.0)) == 4.0
        assert float(j.jit(g)(2.0)) == 4.0
        assert float(j.grad(g)(2.0)) == 2.0
        assert float(j.named_call(f)(1.5)) == 3.0
        with j.named_scope("outer"):
            assert float(j.jit(f)(1.0)) == 2.0
        with pytest.raises(TypeError, match="named_scope name argument must be a string"):
            with j.named_scope(3):
                pass
        with pytest.raises(AttributeError):
            j.named_call(3)
    # the printed program is unchanged by the names (JAX's jaxprs omit them too)
    assert str(jax.make_jaxpr(jax.named_call(f, name="d"))(1.0)) == \
        str(jax.make_jaxpr(f)(1.0))
    from jaxlite.transforms.scopes import current_name_stack
    seen = []
    with jax.named_scope("a"):
        with jax.named_scope("b") as stack:
            assert stack == current_name_stack() == ("a", "b")
        jax.named_call(lambda: seen.append(current_name_stack()), name="c")()
    assert seen == [("a", "c")]
    assert current_name_stack() == ()


# ---- ensure_compile_time_eval ------------------------------------------------------------

def _is_concrete(x) -> bool:
    try:
        bool(x > 0)
        return True
    except Exception:   # noqa: BLE001 -- each library's tracer error
        return False


def test_ensure_compile_time_eval_under_jit(rjax, rjnp):
    res = []
    for j, n in ((jax, jnp), (rjax, rjnp)):
        kinds = []

        @j.jit
        def f(x):
            with j.ensure_compile_time_eval():
                c = n.arange(3.0)
                y = n.sin(1.0) + c.sum()
                kinds.append(_is_concrete(y))
                scale = 2.0 if y > 3 else 5.0      # Python control flow on a concrete value
                z = x + 1                          # touches the traced x: still traced
                kinds.append(_is_concrete(z))
            return z * scale + c

        res.append(f(1.0))
        assert kinds == [True, False]
        jp = str(j.make_jaxpr(f)(1.0))
        assert "sin" not in jp and "reduce_sum" not in jp   # computed at trace time
    assert_like_jax(res[0], res[1])


def test_ensure_compile_time_eval_grad_vmap_and_nesting(rjax, rjnp):
    def g(j, n):
        def f(x):
            with j.ensure_compile_time_eval():
                k = n.float32(3.0) * 2
                assert float(k) == 6.0
                return x * k
        return (j.grad(f)(1.0), j.vmap(f)(n.arange(3.0)), j.jit(j.vmap(f))(n.ones(2)))
    got, want = _both(rjax, rjnp, g)
    _assert_tree_like(got, want)
    # a transformation started inside the block traces as usual, and the block ends cleanly
    with jax.ensure_compile_time_eval():
        jp = jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
    assert "sin" in str(jp)
    from jaxlite.core import trace as _t
    assert _t.get_state() is _t.BASE_STATE
    with pytest.raises(ValueError):
        with jax.ensure_compile_time_eval():
            raise ValueError("propagates")
    assert _t.get_state() is _t.BASE_STATE


# ---- print_environment_info --------------------------------------------------------------

def test_print_environment_info(rjax, capsys):
    text = jax.print_environment_info(return_string=True)
    want = rjax.print_environment_info(return_string=True)
    assert isinstance(text, str) and isinstance(want, str)
    keys = [ln.split(":")[0] for ln in text.splitlines() if ln]
    assert keys[0] == "jaxlite" and "numpy" in keys and "python" in keys
    for k in ("device info", "process_count", "platform"):   # JAX's last lines
        assert k in keys and k in [ln.split(":")[0] for ln in want.splitlines() if ln]
    assert f"{np.__version__}" in text
    assert jax.print_environment_info() is None
    assert capsys.readouterr().out.strip() == text.strip()


# ---- linear_transpose --------------------------------------------------------------------

LT_CASES = {
    "linear": (lambda j, n: (lambda x: 2 * x + x[::-1], (n.ones(3),), n.arange(3.0))),
    "affine": (lambda j, n: (lambda x: x + 1.0, (n.ones(3),), n.arange(3.0))),
    "int": (lambda j, n: (lambda x: x * 2, (n.ones(3, n.int32),), n.arange(3))),
    "tree": (lambda j, n: (lambda x, y: {"a": x + y, "b": x}, (1.0, 2.0),
                           {"a": 1.0, "b": 3.0})),
    "tuple_out": (lambda j, n: (lambda x: (x * 2, x), (n.ones(3),), (n.ones(3), n.ones(3)))),
    "weak_scalar": (lambda j, n: (lambda x: 3.0 * x, (1.0,), 2.0)),
    "unused_input": (lambda j, n: (lambda x, y: 3.0 * x, (1.0, n.ones(2)), 2.0)),
    "complex": (lambda j, n: (lambda x: (1 + 2j) * x, (n.ones(2, n.complex64),),
                              n.arange(2.0).astype(n.complex64))),
    "dot": (lambda j, n: (lambda x: n.array([[1.0, 2], [3, 4]]) @ x, (n.ones(2),),
                          n.array([1.0, 0.5]))),
    "float16": (lambda j, n: (lambda x: 2 * x, (n.ones(2, n.float16),),
                              n.ones(2, n.float16))),
    "shape_dtype_struct": (lambda j, n: (lambda x: x.T * 3,
                                         (j.ShapeDtypeStruct((2, 3), n.float32),),
                                         n.ones((3, 2)))),
    "reduction": (lambda j, n: (lambda x: n.sum(x, axis=0), (n.ones((2, 3)),), n.arange(3.))),
    "bad_ct_shape": (lambda j, n: (lambda x: x * 2, (n.ones(3),), n.ones(4))),
    "bad_ct_dtype": (lambda j, n: (lambda x: x * 2, (n.ones(3),), n.ones(3, n.float16))),
    "bad_ct_tree": (lambda j, n: (lambda x: x * 2, (n.ones(3),), (n.ones(3),))),
    "bad_ct_scalar": (lambda j, n: (lambda x: 2 * x, (n.ones(2),), 2.0)),
    "mixed_dtypes": (lambda j, n: (lambda x: x.astype(n.int32), (n.ones(3),), n.arange(3))),
    "nonlinear": (lambda j, n: (lambda x: n.sin(x), (n.ones(3),), n.ones(3))),
}


@pytest.mark.parametrize("case", sorted(LT_CASES))
def test_linear_transpose_like_jax(rjax, rjnp, case):
    def run(j, n):
        f, primals, ct = LT_CASES[case](j, n)
        return j.linear_transpose(f, *primals)(ct)
    got, want = _both(rjax, rjnp, run)
    if isinstance(want, type):
        assert got is want, (got, want)
    else:
        _assert_tree_like(got, want)


def test_linear_transpose_under_jit_and_errors(rjax, rjnp):
    got, want = _both(rjax, rjnp, lambda j, n: j.jit(
        j.linear_transpose(lambda x: 2 * x, n.ones(3)))(n.arange(3.0)))
    _assert_tree_like(got, want)
    with pytest.raises(TypeError, match="must be callable"):
        jax.linear_transpose(3, 1.0)
    with pytest.raises(NotImplementedError, match="sin"):
        jax.linear_transpose(jnp.sin, 1.0)(1.0)
    with pytest.raises(TypeError):   # JAX: an internal AssertionError; never a value
        jax.linear_transpose(lambda x: x * x, jnp.ones(3))(jnp.ones(3))
    # the transpose is the adjoint of the function for real inputs: <f(x), y> = <x, fT(y)>
    m = np.array([[1.0, -2, 0.5], [0.25, 3, 1]], np.float32)
    f = lambda x: jnp.asarray(m) @ x   # noqa: E731
    x, y = np.array([1.0, 2, -1], np.float32), np.array([0.5, -1], np.float32)
    (ft_y,) = jax.linear_transpose(f, jnp.ones(3))(jnp.asarray(y))
    np.testing.assert_allclose(np.dot(np.asarray(f(jnp.asarray(x))), y),
                               np.dot(x, np.asarray(ft_y)), rtol=1e-6)


# ---- custom_gradient ---------------------------------------------------------------------

def _cg_funcs(j, n):
    @j.custom_gradient
    def f(x):
        return x ** 2, lambda g: (g * n.cos(x),)

    @j.custom_gradient
    def single(x):
        return x ** 2, lambda g: g * x

    @j.custom_gradient
    def two(x, y):
        return x * y, lambda g: (g * y, g * x * 10)

    @j.custom_gradient
    def short(x, y):
        return x * y, lambda g: (g * y,)

    @j.custom_gradient
    def tree_in(d):
        return d["a"] * 2, lambda g: ({"a": g * 5},)

    @j.custom_gradient
    def tree_out(x):
        return (x, x * 2), lambda g: (g[0] + g[1] * 7,)

    @j.custom_gradient
    def clip_grad(x):     # the documented use: gradient clipping
        return x, lambda g: (n.clip(g, -0.5, 0.5),)
    return dict(f=f, single=single, two=two, short=short, tree_in=tree_in,
                tree_out=tree_out, clip_grad=clip_grad)


CG_CASES = {
    "value": lambda j, n, F: F["f"](3.0),
    "grad": lambda j, n, F: j.grad(F["f"])(3.0),
    "jit_grad": lambda j, n, F: j.jit(j.grad(F["f"]))(3.0),
    "vmap_grad": lambda j, n, F: j.vmap(j.grad(F["f"]))(n.arange(3.0)),
    "grad_grad": lambda j, n, F: j.grad(j.grad(F["f"]))(3.0),
    "jvp": lambda j, n, F: j.jvp(F["f"], (3.0,), (1.0,)),
    "single_not_tuple": lambda j, n, F: j.grad(F["single"])(3.0),
    "two_args": lambda j, n, F: j.grad(F["two"], argnums=(0, 1))(3.0, 4.0),
    "too_few_cotangents": lambda j, n, F: j.grad(F["short"])(3.0, 4.0),
    "tree_in": lambda j, n, F: j.grad(F["tree_in"])({"a": 1.0}),
    "tree_out": lambda j, n, F: j.grad(lambda x: F["tree_out"](x)[1])(1.0),
    "clip": lambda j, n, F: j.grad(lambda x: 10 * F["clip_grad"](x).sum())(n.ones(3)),
    "vjp": lambda j, n, F: j.vjp(F["f"], n.arange(2.0))[1](n.ones(2)),
    "not_a_pair": lambda j, n, F: j.grad(j.custom_gradient(lambda x: x))(1.0),
    "keyword_arg": lambda j, n, F: F["f"](x=1.0),
}


@pytest.mark.parametrize("case", sorted(CG_CASES))
def test_custom_gradient_like_jax(rjax, rjnp, case):
    got, want = _both(rjax, rjnp, lambda j, n: CG_CASES[case](j, n, _cg_funcs(j, n)))
    if isinstance(want, type):
        assert got is want, (got, want)
    elif isinstance(want, float):
        assert type(got) is float and got == want
    else:
        _assert_tree_like(got, want)


def test_custom_gradient_name(rjax):
    def f(x):
        return x, lambda g: (g,)
    assert jax.custom_gradient(f).__name__ == rjax.custom_gradient(f).__name__


# ---- smaller top-level names -------------------------------------------------------------

def test_effects_barrier_waits_for_io_callbacks(rjax):
    from jaxlite.experimental import io_callback
    seen = []
    big = jnp.ones((2000, 2000))       # big enough to run on the asynchronous worker
    f = jax.jit(lambda x: io_callback(lambda v: seen.append(float(v)), None, x.sum(),
                                      ordered=True) or x * 2)
    out = f(big)
    assert jax.effects_barrier() is None and rjax.effects_barrier() is None
    assert seen == [4e6]
    assert float(out[0, 0]) == 2.0


def test_copy_to_host_async_returns_its_argument(rjax, rjnp):
    for j, n in ((jax, jnp), (rjax, rjnp)):
        tree = {"a": n.ones(2), "b": 1.0, "c": (n.arange(3),)}
        assert j.copy_to_host_async(tree) is tree


def test_explain_cache_misses_context_manager(rjax, caplog):
    for j in (jax, rjax):
        assert not j.config.jax_explain_cache_misses
        with j.explain_cache_misses():
            assert j.config.jax_explain_cache_misses
            with j.explain_cache_misses(False):
                assert not j.config.jax_explain_cache_misses
        assert not j.config.jax_explain_cache_misses
    f = jax.jit(lambda x: x + 1)
    f(jnp.ones(3))
    with caplog.at_level("WARNING", logger="jaxlite"):
        with jax.explain_cache_misses():
            f(jnp.ones(4))
    assert "(3,)" in caplog.text and "(4,)" in caplog.text


def test_version_module(rjax):
    assert isinstance(jax.version.__version__, str) and jax.version.__version__ == \
        jax.__version__
    assert isinstance(rjax.version.__version__, str)
    assert jax.version._version_as_tuple == tuple(int(p) for p in jax.__version__.split("."))
