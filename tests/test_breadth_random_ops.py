"""Valid calls that crashed and bad calls that raised another exception type than JAX's
(issue 30, items 2 and 3), of the kinds JAX's own random, random_lax, jnp operator and
einsum test files make, each against real JAX 0.10.2: samplers and key functions (values,
dtypes, shapes, weak types, eager and jitted), ``jnp`` operators and operator overloads,
and ``jnp.einsum``'s options."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import jaxlite

from oracle import assert_like_jax

jax = pytest.importorskip("jax")


def _leaves(tree):
    return jax.tree_util.tree_leaves(tree)


def _same(fn, rtol=2e-6, atol=1e-6, check_weak=True):
    """``fn(jax)`` and ``fn(jaxlite)`` agree leaf by leaf: values, shapes, dtypes and weak
    types; plain Python leaves (names, counts) compare equal."""
    want, got = _leaves(fn(jax)), jaxlite.tree_util.tree_leaves(fn(jaxlite))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if not hasattr(w, "dtype"):
            assert g == w
            continue
        assert_like_jax(g, w, rtol=rtol, atol=atol, check_weak=check_weak)


def _same_error(fn, match=None):
    """Both raise, and jaxlite's exception is of the type JAX raises (a builtin type, or
    JAX's own error class by name: ``jax.errors.X`` is ``jaxlite.errors.X``); ``match`` (a
    regex) is looked for in jaxlite's message."""
    with pytest.raises(Exception) as want:
        fn(jax)
    wt = type(want.value)
    expected = getattr(jaxlite.errors, wt.__name__, wt) if wt.__module__.startswith("jax") \
        else wt
    with pytest.raises(expected, match=match) as got:
        fn(jaxlite)
    return got.value


# ---- jnp.einsum ------------------------------------------------------------------------

_NUMERIC = ["int8", "int16", "int32", "uint8", "uint32", "bfloat16", "float16", "float32",
            "complex64", "bool"]


@pytest.mark.parametrize("lhs", _NUMERIC)
@pytest.mark.parametrize("rhs", ["int8", "uint8", "float16", "float32", "complex64", "bool"])
def test_einsum_mixed_dtypes_one_dot_general(lhs, rhs):
    # JAX's einsum hands operands of mixed dtypes to one dot_general naming the promoted
    # dtype (no convert_element_type first); the result and the equations match JAX's
    x = (np.arange(10) % 3).astype(lhs)
    y = (np.arange(10) % 4 + 1).astype(rhs)

    def fn(m):
        f = partial(m.numpy.einsum, "a,a->a")
        eqns = m.make_jaxpr(f)(x, y).eqns
        return [f(x, y), [e.primitive.name for e in eqns],
                str(eqns[-1].params.get("preferred_element_type"))]
    _same(fn)


@pytest.mark.parametrize("spec,shapes,dtypes", [
    ("ij,jk->ik", [(2, 3), (3, 2)], ["int8", "uint8"]),
    ("ii,j->ij", [(3, 3), (2,)], ["int16", "float32"]),
    ("i,->i", [(3,), ()], ["bfloat16", "float32"]),
    ("ij,j->i", [(2, 3), (3,)], ["bool", "int8"]),
    ("ab,b,bc->ac", [(2, 3), (3,), (3, 4)], ["float16", "int32", "bfloat16"])])
def test_einsum_mixed_dtypes_values(spec, shapes, dtypes):
    ops = [(np.arange(int(np.prod(s))).reshape(s) % 5).astype(d)
           for s, d in zip(shapes, dtypes)]
    _same(lambda m: m.numpy.einsum(spec, *ops))
    _same(lambda m: m.jit(partial(m.numpy.einsum, spec))(*ops))


def test_einsum_mixed_dtypes_weak_and_preferred():
    # a weak int scalar with an int8 array: the dot_general's int8 preferred type is
    # narrower than its operands' promotion, which JAX refuses with a TypeError
    _same_error(lambda m: m.numpy.einsum("i,->i", m.numpy.ones(3, "int8"), 2))
    _same(lambda m: m.numpy.einsum("i,->i", m.numpy.ones(3, "bfloat16"), 2.0))
    _same(lambda m: m.numpy.einsum(",->", 2.0, 3))
    _same(lambda m: m.numpy.einsum("ij,jk->ik", np.ones((2, 3), "int8"),
                                   np.ones((3, 2), "uint8"), preferred_element_type="int32"))


def test_einsum_mixed_dtypes_under_grad_and_vmap():
    _same(lambda m: m.grad(lambda x: m.numpy.einsum(
        "ij,jk->", x, m.numpy.ones((3, 2), "bfloat16")))(m.numpy.ones((2, 3), "float32")))
    _same(lambda m: m.vmap(lambda x: m.numpy.einsum(
        "j,jk->k", x, m.numpy.ones((3, 2), "int8")))(m.numpy.ones((4, 3), "float16")))


def test_einsum_path_step_over_three_operands_is_refused():
    arrs = [np.ones(s, np.float32) for s in [(2, 3), (2, 4), (2, 5)]]
    _same_error(lambda m: m.numpy.einsum("ij,ik,il->jkl", *arrs, optimize=[(0, 1, 2)]),
                match="3 or more")


# ---- jax.random ------------------------------------------------------------------------

def _key(m, seed=0):
    return m.random.PRNGKey(seed)


@pytest.mark.parametrize("dtype", ["float32", "float16",
                                   pytest.param("bfloat16", marks=pytest.mark.slow)])
def test_gumbel_highest_mode(dtype):
    # float32: one 64-bit uniform per sample, both tails at full resolution; other dtypes
    # take the "high" path.  Agreement to a few float32 ulp (the logs are jaxlite's)
    rtol = 1e-5 if dtype == "float32" else 1e-2
    _same(lambda m: m.random.gumbel(_key(m), (4000,), dtype, mode="highest"), rtol=rtol)
    _same(lambda m: m.jit(lambda k: m.random.gumbel(k, (3, 5), dtype, mode="highest"))(
        _key(m)), rtol=rtol)


def test_gumbel_highest_reaches_far_tails():
    # the largest of 2**16 float32 samples lies far beyond "low" mode's ~16 cap
    _same(lambda m: m.numpy.max(m.random.gumbel(m.random.key(3), (1 << 16,), mode="highest")),
          rtol=1e-5)


@pytest.mark.parametrize("axis,p", [(-1, [.1, .2, .3, .4]), (0, [[.5, .1], [.5, .9]])])
def test_categorical_and_choice_take_highest_mode(axis, p):
    logits = np.log(np.array(p, np.float32)) - 42
    shape = (500,) + tuple(np.delete(logits.shape, axis))
    _same(lambda m: m.random.categorical(_key(m), logits, axis=axis, shape=shape,
                                         mode="highest"))
    _same(lambda m: m.jit(partial(m.random.categorical, axis=axis, shape=shape,
                                  mode="highest"))(_key(m), logits))
    _same(lambda m: m.random.choice(_key(m), 10, (5,), replace=False,
                                    p=np.arange(10.) / 45, mode="highest"))


def test_gumbel_and_bernoulli_mode_errors():
    _same_error(lambda m: m.random.gumbel(_key(m), (5,), mode="hi"), match="mode")
    _same_error(lambda m: m.random.bernoulli(_key(m), 0.5, (5,), mode="highest"))


def test_permutation_range_axis_is_checked():
    _same_error(lambda m: m.random.permutation(_key(m), 10, axis=3), match="axis 3")
    _same(lambda m: m.random.permutation(_key(m), 10, axis=-1))


def test_permutation_and_choice_of_traced_range_raise_concretization_error():
    err = _same_error(lambda m: m.jit(m.random.permutation)(_key(m), 10),
                      match="permutation")
    assert isinstance(err, jaxlite.errors.ConcretizationTypeError)
    _same_error(lambda m: m.jit(m.random.choice)(_key(m), 10), match="choice")
    # a traced array to permute is fine
    _same(lambda m: m.jit(m.random.permutation)(_key(m), np.arange(6.)))


# make test: the edges and one shape of each kind; make test-slow: the rest (CI runs both)
@pytest.mark.parametrize("dtype", ["complex64", "float32"])
@pytest.mark.parametrize("n,m", [(0, None), pytest.param(1, None, marks=pytest.mark.slow),
                                 (3, None), (2, 4), pytest.param(4, 2, marks=pytest.mark.slow),
                                 (3, 0)])
def test_orthogonal_complex_and_edges(dtype, n, m):
    # complex draws give unitary columns (JAX transposes, it does not conjugate, for n < m)
    _same(lambda k: k.random.orthogonal(_key(k), n, (2,), dtype, m), rtol=1e-4, atol=1e-5)
    _same(lambda k: k.jit(lambda key: k.random.orthogonal(key, n, (), dtype, m))(_key(k)),
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n,m", [(0, None), (1, 0), (3, 0)])
def test_orthogonal_empty_half_precision(dtype, n, m):
    # no LAPACK call for an empty QR, so JAX answers in half precision on the CPU
    _same(lambda k: k.random.orthogonal(_key(k), n, (2,), dtype, m))


def test_orthogonal_errors():
    _same_error(lambda m: m.random.orthogonal(_key(m), 3, (), "int32"), match="dtype")
    _same_error(lambda m: m.jit(lambda n: m.random.orthogonal(_key(m), n))(3))
    _same_error(lambda m: m.random.orthogonal(_key(m), 2.5))
    # a non-empty half-precision QR still has no kernel, as in JAX on the CPU
    _same_error(lambda m: m.random.orthogonal(_key(m), 2, (), "float16"))


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (2, 0), (0, 3)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_empty_half_precision_qr_and_svd(shape, dtype):
    x = np.zeros(shape, dtype)
    _same(lambda m: m.numpy.linalg.qr(x))
    _same(lambda m: m.jit(partial(m.numpy.linalg.qr, mode="r"))(x))
    _same(lambda m: m.numpy.linalg.svd(x))
    _same(lambda m: m.jit(partial(m.numpy.linalg.svd, compute_uv=False))(x))
    _same_error(lambda m: m.numpy.linalg.cholesky(np.zeros((0, 0), dtype)))


# ---- jnp operators -----------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (3,), "python", "numpy"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int8", "complex64",
                                   "bool"])
@pytest.mark.parametrize("deg", [False, True])
def test_angle_dtypes(shape, dtype, deg):
    # a 0-d real float of any width comes out in the default float dtype, as JAX's
    def fn(m):
        if shape == "python":
            x = -1.5
        elif shape == "numpy":
            x = np.asarray(m.numpy.full((), -1.5, dtype))[()]
        else:
            x = m.numpy.full(shape, -1.5, dtype)
        return [m.numpy.angle(x, deg=deg), m.jit(partial(m.numpy.angle, deg=deg))(x)]
    _same(fn)


@pytest.mark.parametrize("name", ["__add__", "__radd__", "__mul__", "__rmul__", "__eq__",
                                  "__ne__"])
@pytest.mark.parametrize("other", [list, tuple])
def test_operators_refuse_lists_and_tuples(name, other):
    # JAX raises (naming the operands in the expression's order) instead of deferring
    arg = other([(1, 2), (2, 3)])
    right = name.startswith("__r")
    err = _same_error(lambda m: getattr(m.numpy.array([(1, 2), (2, 3)]), name)(arg))
    order = f"'{other.__name__}' and 'ArrayImpl'" if right else \
        f"'ArrayImpl' and '{other.__name__}'"
    assert "unsupported operand type" in str(err) and order in str(err)


def test_list_times_int_array_is_an_error_not_a_repetition():
    _same_error(lambda m: m.numpy.array(3) * [1, 2])
    _same_error(lambda m: [1, 2] * m.numpy.array(3))
    _same_error(lambda m: (1, 2) + m.numpy.array(3))
    _same_error(lambda m: m.jit(lambda x: x * [1, 2])(3))
    # other operators still defer to the other operand (a NotImplemented for set/dict)
    _same(lambda m: [m.numpy.array([1, 2]).__sub__(v) is NotImplemented
                     for v in ([1], (1,), {1: 2}, {1})])


def _shape_dtype(r):
    return (tuple(r.shape), str(r.dtype))


@pytest.mark.parametrize("fn", [
    lambda m: m.eval_shape(lambda x: m.random.normal(m.random.PRNGKey(x), (int(1e12),)), 0),
    lambda m: m.eval_shape(lambda k: m.random.uniform(k, (308000000, 128), dtype="bfloat16"),
                           m.random.key(3)),
    lambda m: m.eval_shape(lambda k: m.random.bits(k, (2 ** 32 + 2,)), m.random.key(3)),
    lambda m: m.eval_shape(lambda k: m.random.split(k, 2 ** 32 + 2), m.random.key(3))])
def test_random_arrays_of_2_32_elements_or_more_trace(fn):
    # JAX's test traces (does not run) a 10**12-element normal draw
    _same(lambda m: _shape_dtype(fn(m)))


@pytest.mark.parametrize("inner", [1, 4, 65535, 65536, 65537, 123456789, 2 ** 31 + 5,
                                   2 ** 32 - 1])
def test_wide_counter_words_are_the_64_bit_index(inner):
    from jaxlite.random._threefry import index_words
    rs = np.random.RandomState(inner % 1000)
    i = np.concatenate([rs.randint(0, 2 ** 32, 100, dtype=np.uint64),
                        [0, 1, 2 ** 32 - 1, 2 ** 16, 2 ** 16 - 1]]).astype(np.uint32)
    j = np.concatenate([rs.randint(0, inner, 100, dtype=np.uint64),
                        [0, inner - 1, inner - 1, 0, inner - 1]]).astype(np.uint32)
    hi, lo = index_words(i, j, inner)
    want = [int(a) * inner + int(b) for a, b in zip(i, j)]
    assert np.asarray(hi).dtype == np.uint32 and np.asarray(lo).dtype == np.uint32
    assert [int(h) << 32 | int(v) for h, v in zip(np.asarray(hi), np.asarray(lo))] == want


@pytest.mark.parametrize("outer,inner", [(3, 4), (7, 65537)])
def test_wide_counters_match_the_narrow_layout(outer, inner):
    # the split (outer, inner) grid numbers elements as the one-word iota does
    from jaxlite.random._threefry import wide_counters
    hi, lo = wide_counters(outer, inner)
    np.testing.assert_array_equal(np.asarray(hi), np.zeros((outer, inner), np.uint32))
    np.testing.assert_array_equal(np.asarray(lo),
                                  np.arange(outer * inner, dtype=np.uint32).reshape(
                                      outer, inner))
