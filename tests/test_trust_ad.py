"""Issue 33 (trust), transformations: values that were silently wrong, each asked of real
JAX at the same point -- the gradient through an inner ``grad(has_aux=True)``'s aux, a
jitted function reading an enclosing vmap's axis size, ``grad(jit(x ** n))`` at
``x = n = 0``, the gradient of ``vmap(cond)`` with a NaN in the branch not taken, and the
tangent of a typed PRNG key (float0, not the key's dtype)."""
from __future__ import annotations

import types

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp
from jaxlite import lax as llax

from oracle import assert_like_jax


@pytest.fixture(scope="module")
def libs(rjax):
    """Both libraries as ``(jaxlite namespace, jax namespace)``, each with ``jax``, ``jnp``
    and ``lax``: a test writes its program once and runs it on both."""
    import jax.numpy as jnp
    from jax import lax
    return (types.SimpleNamespace(jax=jaxlite, jnp=ljnp, lax=llax),
            types.SimpleNamespace(jax=rjax, jnp=jnp, lax=lax))


def _same(got, want, check_weak=True):
    """Two pytrees of results agree leaf by leaf (value, shape, dtype, weak type)."""
    g_leaves = jaxlite.tree_util.tree_leaves(
        got, is_leaf=lambda x: hasattr(x, "dtype"))
    import jax
    w_leaves = jax.tree_util.tree_leaves(want)
    assert len(g_leaves) == len(w_leaves), (got, want)
    for g, w in zip(g_leaves, w_leaves):
        if not hasattr(w, "dtype"):           # a Python number (x ** n of two of them)
            assert type(g) is type(w) and (g == w or (g != g and w != w)), (g, w)
            continue
        if w.dtype == jax.dtypes.float0:
            assert g.dtype == jaxlite.dtypes.float0, (g, w)
            assert np.shape(g) == np.shape(w), (g, w)
            continue
        assert_like_jax(g, w, check_weak=check_weak)


def _on_both(libs, program, check_weak=True):
    """Runs ``program(namespace)`` on jaxlite and JAX and compares the results."""
    lite, real = libs
    _same(program(lite), program(real), check_weak)


# ---- the aux output of an inner has_aux transformation is differentiable --------------

def _aux_programs():
    def aux_of_the_inner_input(L):
        # the aux is computed from the inner grad's own input, which is the outer's
        # (JAX: 3 * 4 ** 2 = 48 by grad, jacfwd and jacrev alike)
        def via(t):
            return lambda x: t(lambda x: (x ** 3, [x ** 3]), has_aux=True)(x)[1][0]
        return [L.jax.grad(via(t))(4.0) for t in (L.jax.grad, L.jax.jacfwd, L.jax.jacrev)] \
            + [L.jax.jit(L.jax.grad(via(L.jax.grad)))(4.0),
               L.jax.jacfwd(via(L.jax.jacrev))(4.0)]

    def grad_aux(L):
        def outer(x):
            def g(y):
                return y * x, x ** 3 * y      # aux depends on the outer x and on y
            _, aux = L.jax.grad(g, has_aux=True)(2.0)
            return aux
        return L.jax.grad(outer)(2.0)

    def grad_aux_outer_only(L):
        def outer(x):
            _, aux = L.jax.grad(lambda y: (y * x, x ** 3), has_aux=True)(2.0)
            return aux
        return L.jax.grad(outer)(2.0)

    def value_and_grad_aux(L):
        def outer(x):
            (_, aux), _ = L.jax.value_and_grad(lambda y: (y * x, x ** 3), has_aux=True)(2.0)
            return aux
        return L.jax.grad(outer)(2.0)

    def jacfwd_aux(L):
        def outer(x):
            j, aux = L.jax.jacfwd(lambda y: (y * x, x ** 2 * y), has_aux=True)(
                L.jnp.array([1.0, 3.0]))
            return aux.sum() + j.sum()
        return L.jax.grad(outer)(2.0)

    def jacrev_aux(L):
        def outer(x):
            j, aux = L.jax.jacrev(lambda y: (y * x, x ** 2 * y), has_aux=True)(
                L.jnp.array([1.0, 3.0]))
            return aux.sum() + j.sum()
        return L.jax.grad(outer)(2.0)

    def jvp_aux(L):
        def outer(x):
            _, _, aux = L.jax.jvp(lambda y: (y * x, x * y * y), (3.0,), (1.0,), has_aux=True)
            return aux
        return L.jax.grad(outer)(2.0)

    def vjp_aux(L):
        def outer(x):
            _, _, aux = L.jax.vjp(lambda y: (y * x, L.jnp.sin(x) * y), 3.0, has_aux=True)
            return aux
        return L.jax.grad(outer)(2.0)

    def linearize_aux(L):
        def outer(x):
            _, _, aux = L.jax.linearize(lambda y: (y * x, L.jnp.sin(x) * y), 3.0,
                                        has_aux=True)
            return aux
        return L.jax.grad(outer)(2.0)

    def hessian_aux(L):
        def outer(x):
            h, aux = L.jax.hessian(lambda y: (y ** 3 * x, x ** 2 * y), has_aux=True)(3.0)
            return aux + h
        return L.jax.grad(outer)(2.0)

    def pytree_aux_forward(L):
        def outer(x):
            gr, aux = L.jax.grad(lambda y: (y * x, {"p": x ** 3 * y, "q": x * 2}),
                                 has_aux=True)(2.0)
            return aux["p"] + aux["q"] + gr
        return L.jax.jvp(outer, (2.0,), (1.0,))

    def grad_of_vmap_aux(L):
        def outer(x):
            gr, aux = L.jax.grad(lambda y: (y * x, x ** 3 * y), has_aux=True)(2.0)
            return aux + gr
        return L.jax.grad(lambda xs: L.jax.vmap(outer)(xs).sum())(L.jnp.array([1.0, 2.0]))

    def nested_three(L):
        def g2(x):
            gr, aux = L.jax.grad(lambda y: (L.jnp.sin(y * x), L.jnp.cos(y * x)),
                                 has_aux=True)(x)
            return gr * aux
        return L.jax.grad(L.jax.grad(g2))(0.7)

    def jit_outer(L):
        def outer(x):
            _, aux = L.jax.grad(lambda y: (y * x, x ** 3 * y), has_aux=True)(2.0)
            return aux
        return L.jax.jit(L.jax.grad(outer))(2.0), L.jax.grad(L.jax.jit(outer))(2.0)

    def aux_value_unchanged(L):
        # the aux itself (no outer transformation): a plain value, not a tracer
        return L.jax.grad(lambda y: (y * 2.0, {"a": y ** 2, "n": L.jnp.int32(3)}),
                          has_aux=True)(3.0)

    return [aux_of_the_inner_input, grad_aux, grad_aux_outer_only, value_and_grad_aux,
            jacfwd_aux, jacrev_aux, jvp_aux, vjp_aux, linearize_aux, hessian_aux,
            pytree_aux_forward, grad_of_vmap_aux, nested_three, jit_outer,
            aux_value_unchanged]


@pytest.mark.parametrize("program", _aux_programs(), ids=lambda f: f.__name__)
def test_aux_of_inner_transformation_is_differentiable(libs, program):
    _on_both(libs, program)


def test_jacfwd_runs_the_function_once_for_its_aux():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2, x.sum()

    jac, aux = jaxlite.jacfwd(f, has_aux=True)(ljnp.arange(3.0))
    assert len(calls) == 1
    np.testing.assert_array_equal(np.asarray(jac), 2 * np.eye(3, dtype=np.float32))
    assert float(aux) == 3.0


# ---- jit under vmap: the compiled program is kept per enclosing axis size ---------------

def _axis_programs():
    def no_args(L):
        f = L.jax.jit(lambda: L.lax.axis_size("i"))
        return [L.jax.vmap(f, axis_name="i", axis_size=n)() for n in (2, 3, 2)]

    def closed_constant(L):
        f = L.jax.jit(lambda c: c * L.lax.axis_size("i"))
        c = L.jnp.ones(())
        return [L.jax.vmap(lambda x: f(c) + x, axis_name="i")(L.jnp.zeros(n))
                for n in (2, 3)]

    def psum_of_constant(L):
        f = L.jax.jit(lambda c: c * L.lax.psum(1, "i"))
        c = L.jnp.ones(())
        return [L.jax.vmap(lambda x: f(c) + x, axis_name="i")(L.jnp.zeros(n))
                for n in (2, 3)]

    def traced_argument(L):
        f = L.jax.jit(lambda x: x * L.lax.axis_size("i"))
        return [L.jax.vmap(f, axis_name="i")(L.jnp.ones(n)) for n in (2, 3)]

    def axis_index(L):
        f = L.jax.jit(lambda c: c + L.lax.axis_index("i"))
        c = L.jnp.ones(())
        return [L.jax.vmap(lambda x: f(c) + x, axis_name="i")(L.jnp.zeros(n))
                for n in (2, 3)]

    def nested_axes(L):
        f = L.jax.jit(lambda c: c * L.lax.axis_size("i") * 10 + L.lax.axis_size("j"))
        c = L.jnp.ones(())
        inner = L.jax.vmap(lambda x: f(c) + x, axis_name="j")
        return [L.jax.vmap(inner, axis_name="i")(L.jnp.zeros(s)) for s in ((2, 3), (3, 2))]

    def axis_tuple(L):
        f = L.jax.jit(lambda c: c * L.lax.axis_size(("i", "j")))
        c = L.jnp.ones(())
        inner = L.jax.vmap(lambda x: f(c) + x, axis_name="j")
        return [L.jax.vmap(inner, axis_name="i")(L.jnp.zeros(s)) for s in ((2, 3), (2, 4))]

    return [no_args, closed_constant, psum_of_constant, traced_argument, axis_index,
            nested_axes, axis_tuple]


@pytest.mark.parametrize("program", _axis_programs(), ids=lambda f: f.__name__)
def test_jit_under_vmap_sees_the_current_axis_size(libs, program):
    _on_both(libs, program)


@pytest.mark.parametrize("lib_index", [0, 1], ids=["jaxlite", "jax"])
def test_program_compiled_under_a_vmap_does_not_leak_out_of_it(libs, lib_index):
    # JAX: outside the vmap the axis name is unbound (NameError), even after the same
    # function ran inside one (with and without arguments)
    L = libs[lib_index]
    f = L.jax.jit(lambda: L.lax.axis_size("i"))
    L.jax.vmap(f, axis_name="i", axis_size=2)()
    with pytest.raises(NameError, match="unbound axis name: i"):
        f()
    g = L.jax.jit(lambda c: c * L.lax.axis_size("i"))
    c = L.jnp.ones(())
    L.jax.vmap(lambda x: g(c) + x, axis_name="i")(L.jnp.zeros(2))
    with pytest.raises(NameError, match="unbound axis name: i"):
        g(c)


def test_axis_size_change_is_explained(caplog):
    f = jaxlite.jit(lambda c: c * llax.axis_size("i"))
    c = ljnp.ones(())
    jaxlite.config.update("jax_explain_cache_misses", True)
    try:
        jaxlite.vmap(lambda x: f(c) + x, axis_name="i")(ljnp.zeros(2))
        with caplog.at_level("WARNING"):
            jaxlite.vmap(lambda x: f(c) + x, axis_name="i")(ljnp.zeros(3))
    finally:
        jaxlite.config.update("jax_explain_cache_misses", False)
    assert "(('i', 2),) -> (('i', 3),)" in caplog.text


# ---- x ** n with a traced integer exponent -----------------------------------------------

POW_POINTS = [(x, n) for x in (0.0, 1.0, -2.0) for n in (0, 1, 2, 3, -1)]


@pytest.mark.parametrize("x,n", POW_POINTS)
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_grad_of_power_with_integer_exponent(libs, x, n, jitted):
    def program(L):
        f = lambda x, n: x ** n       # noqa: E731
        f = L.jax.jit(f) if jitted else f
        return L.jax.grad(f)(x, n), f(L.jnp.asarray(x), n)
    # the weak type of a jitted pow's gradient differs (README: jaxlite types a
    # derivative like its primal); the values and dtypes agree
    _on_both(libs, program, check_weak=not jitted)


def _power_programs():
    def arrays(L):
        x = L.jnp.array([0.0, 2.0, -2.0, 0.0, 0.0, 0.0, np.nan])
        n = L.jnp.array([0, 2, -3, 1, -1, 2, 0])
        f = L.jax.jit(lambda x, n: x ** n)
        return (f(x, n), L.jax.jvp(lambda x: f(x, n), (x,), (L.jnp.ones(7),)),
                L.jax.grad(lambda x: f(x, n).sum())(x))

    def dtypes_and_weak_types(L):
        f = L.jax.jit(lambda x, n: x ** n)
        out = [f(L.jnp.ones(2, d) * 2, L.jnp.array([3, 1], nd))
               for d in ("float32", "float16", "bfloat16", "complex64")
               for nd in ("int32", "int8", "uint32", "bool")]
        return out + [f(2.0, L.jnp.array([3, -1], "int8")), f(L.jnp.float32(2), 3),
                      f(2.0, 3), L.jnp.power(2.0, L.jnp.array([3, -1]))]

    def broadcasting(L):
        f = L.jax.jit(lambda x, n: x ** n)
        x = L.jnp.array([[0.0], [2.0]])
        n = L.jnp.array([0, 1, 2])
        return f(x, n), L.jax.grad(lambda x: f(x, n).sum())(x)

    def integer_bases(L):
        f = L.jax.jit(lambda x, n: x ** n)
        return f(L.jnp.array([2, 3]), L.jnp.array([3, 2])), \
            f(L.jnp.array([2, 3]), L.jnp.array([3.0, 2.0]))

    def second_derivative(L):
        p = L.jax.jit(lambda x, n: x ** n)
        return [L.jax.hessian(p)(x, n) for x in (0.0, 1.5) for n in (0, 1, 2, 3)]

    def under_vmap(L):
        p = L.jax.jit(lambda x, n: x ** n)
        return L.jax.vmap(L.jax.grad(p))(L.jnp.array([0.0, 0.0, 2.0]), L.jnp.array([0, 1, 2]))

    return [arrays, dtypes_and_weak_types, broadcasting, integer_bases, second_derivative,
            under_vmap]


@pytest.mark.parametrize("program", _power_programs(), ids=lambda f: f.__name__)
def test_power_with_traced_integer_exponent(libs, program):
    _on_both(libs, program)


# ---- vmap of cond: a NaN in the branch not taken stays out of the gradient -------------

def _cond_programs():
    def sqrt_of_negative(L):
        def h(x):
            return L.lax.cond(x > 0, L.jnp.sqrt, lambda x: x, x)
        xs = L.jnp.array([-1.0, 4.0, 0.0, -0.0])
        return (L.jax.vmap(h)(xs), L.jax.grad(lambda xs: L.jax.vmap(h)(xs).sum())(xs),
                L.jax.jvp(L.jax.vmap(h), (xs,), (L.jnp.ones(4),)))

    def log_of_zero_taken(L):
        # here the NaN/inf is in the branch taken: it stays (JAX: inf)
        def h(x):
            return L.lax.cond(x > 0, lambda x: x, L.jnp.log, x)
        return L.jax.grad(lambda xs: L.jax.vmap(h)(xs).sum())(L.jnp.array([0.0, 4.0]))

    def switch_three_branches(L):
        def h(i, x):
            return L.lax.switch(i, [L.jnp.sqrt, L.jnp.log, lambda x: 1.0 / x], x)
        i = L.jnp.array([0, 1, 2, 5, -1])
        xs = L.jnp.array([4.0, 2.0, 0.5, -1.0, -4.0])
        return (L.jax.vmap(h)(i, xs),
                L.jax.grad(lambda xs: L.jax.vmap(h)(i, xs).sum())(xs))

    def unbatched_operand(L):
        # the predicate is batched, the operand is a closed-over scalar of the grad
        def f(y, ps):
            return L.jax.vmap(lambda p: L.lax.cond(p, L.jnp.sqrt, lambda v: v * 2.0, y))(
                ps).sum()
        ps = [L.jnp.array(p) for p in ([False, False], [True, False], [False, True])]
        return [L.jax.grad(f)(L.jnp.float32(y), p) for y in (-1.0, 0.0, 4.0) for p in ps]

    def matrix_operands_and_ints(L):
        def h(x, k):
            return L.lax.cond(x.sum() > 0, lambda x, k: (L.jnp.sqrt(x) * k, k + 1),
                              lambda x, k: (x * 3.0, k - 1), x, k)
        xs = L.jnp.array([[[1.0, 4.0]], [[-1.0, -4.0]]])
        ks = L.jnp.array([2, 3])

        def loss(xs):
            y, k = L.jax.vmap(h)(xs, ks)
            return (y * k).sum()
        return L.jax.vmap(h)(xs, ks), L.jax.grad(loss)(xs)

    def under_jit(L):
        def h(x):
            return L.lax.cond(x > 0, L.jnp.sqrt, lambda x: x, x)
        xs = L.jnp.array([-1.0, 4.0])
        loss = L.jax.jit(lambda xs: L.jax.vmap(h)(xs).sum())
        return L.jax.grad(loss)(xs), L.jax.jit(L.jax.grad(loss))(xs)

    def second_order(L):
        def h(x):
            return L.lax.cond(x > 0, L.jnp.sqrt, lambda x: x ** 3, x)
        xs = L.jnp.array([-1.0, 2.0])
        g = L.jax.grad(lambda xs: L.jax.vmap(h)(xs).sum())
        return L.jax.jacfwd(g)(xs)

    return [sqrt_of_negative, log_of_zero_taken, switch_three_branches, unbatched_operand,
            matrix_operands_and_ints, under_jit, second_order]


@pytest.mark.parametrize("program", _cond_programs(), ids=lambda f: f.__name__)
def test_gradient_of_vmap_of_cond(libs, program):
    _on_both(libs, program)


# ---- typed PRNG keys (and integers) have float0 tangents and cotangents ----------------

def _key_programs():
    def custom_jvp_rule_sees_float0(L):
        seen = []

        @L.jax.custom_jvp
        def f(k, x):
            return x * 2

        @f.defjvp
        def f_jvp(p, t):
            seen.append(t[0])
            return f(*p), t[1] * 2
        keys = L.jax.random.split(L.jax.random.key(0), 3)
        g = L.jax.grad(lambda k, x: f(k, x).sum(), argnums=(0, 1), allow_int=True)(
            keys, L.jnp.ones(3))
        g0 = L.jax.grad(f, argnums=(0, 1), allow_int=True)(L.jax.random.key(1), 1.0)
        return g, g0, seen

    def custom_jvp_integer_argument(L):
        seen = []

        @L.jax.custom_jvp
        def f(n, x):
            return x * n

        @f.defjvp
        def f_jvp(p, t):
            seen.append(t[0])
            return f(*p), t[1] * p[0]
        return L.jax.grad(f, argnums=(0, 1), allow_int=True)(3, 1.0), seen

    def custom_vjp_bwd_returns_none_or_float0(L):
        out = []
        for ct in (None, np.zeros((), L.jax.dtypes.float0)):
            @L.jax.custom_vjp
            def f(k, x):
                return x * 2

            f.defvjp(lambda k, x: (x * 2, None), lambda r, g, ct=ct: (ct, g * 2))
            out.append(L.jax.grad(f, argnums=(0, 1), allow_int=True)(
                L.jax.random.key(0), 1.0))
        return out

    def custom_vjp_integer_and_key_outputs(L):
        seen = []

        @L.jax.custom_vjp
        def f(x):
            return x * 2, L.jnp.int32(3), L.jax.random.key(1)

        def f_bwd(res, ct):
            seen.extend(ct[1:])     # the integer output's and the key output's
            return (ct[0] * 2,)
        f.defvjp(lambda x: (f(x), None), f_bwd)
        return L.jax.grad(lambda x: f(x)[0])(1.0), seen

    def plain_grad(L):
        k, k3 = L.jax.random.key(0), L.jax.random.split(L.jax.random.key(0), 3)
        g = L.jax.grad(lambda k, x: x, argnums=(0, 1), allow_int=True)
        return (g(k, 1.0), g(k3, 1.0),
                L.jax.grad(lambda d: d["x"] * 2, allow_int=True)({"k": k, "x": 1.0}),
                L.jax.grad(lambda k, x: L.jax.random.uniform(k) * x, argnums=(0, 1),
                           allow_int=True)(k, 1.0))

    def jvp_vjp_linearize(L):
        k = L.jax.random.key(0)
        z = np.zeros((), L.jax.dtypes.float0)

        def f(k, x):
            return L.jax.random.split(k), x * 2
        return (L.jax.jvp(f, (k, 1.0), (z, 1.0))[1],
                L.jax.vjp(lambda k, x: (k, x * 2), k, 1.0)[1]((z, 1.0)),
                L.jax.linearize(lambda k, x: (k, x * 2), k, 1.0)[1](z, 1.0))

    def vmap_of_grad(L):
        keys = L.jax.random.split(L.jax.random.key(0), 3)
        g = L.jax.grad(lambda k, x: x * 2, argnums=(0, 1), allow_int=True)
        return (L.jax.vmap(g)(keys, L.jnp.ones(3)),
                L.jax.vmap(L.jax.grad(lambda n, x: x * n, argnums=(0, 1), allow_int=True))(
                    L.jnp.arange(3), L.jnp.ones(3)))

    return [custom_jvp_rule_sees_float0, custom_jvp_integer_argument,
            custom_vjp_bwd_returns_none_or_float0, custom_vjp_integer_and_key_outputs,
            plain_grad, jvp_vjp_linearize, vmap_of_grad]


@pytest.mark.parametrize("program", _key_programs(), ids=lambda f: f.__name__)
def test_key_and_integer_tangents_are_float0(libs, program):
    _on_both(libs, program)
