"""``str(make_jaxpr(f)(x))`` against real JAX 0.10.2's printed text.

Where jaxlite stages the same equations as JAX the printed text must be identical: the
80-column layout (short programs on one line, long parameter lists broken one per line),
sorted parameters (a jit's ``name`` first), variables named continuously into nested
programs, a nested jit's program named after its operands and results, ``_`` for outputs
nobody reads, and programs used twice or longer than 10 equations printed once up front.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax

_X = np.ones(3, np.float32)
_M = np.ones((2, 3), np.float32)
_S = np.float32(2.0)
_C = np.arange(3.0, dtype=np.float32)
_BIG = np.arange(100.0, dtype=np.float32)


def _nested(j):
    @j.jit
    def inner(y):
        return y * 2

    return lambda x: inner(x) + 1


def _twice(j):
    inner = j.jit(lambda y: y * 2 + 1)
    return lambda x: inner(inner(x))


def _long_inner(j):
    @j.jit
    def long(y):
        for _ in range(11):
            y = y + 1.0
        return y

    return lambda x: long(x) * 2


def _custom_jvp(j, closed_over=False):
    c = j.numpy.arange(3.0)

    @j.custom_jvp
    def f(x):
        return x * c if closed_over else j.numpy.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), tangents[0] * 2

    return lambda x: f(x) * 2


def _custom_vjp(j):
    @j.custom_vjp
    def g(x):
        return j.numpy.sin(x)

    def g_fwd(x):
        return g(x), x

    def g_bwd(res, ct):
        return (ct * res,)

    g.defvjp(g_fwd, g_bwd)
    return lambda x: g(x) * 2


def _wide(j, m):
    return lambda *xs: m.sin(xs[0]) * xs[-1] + sum(xs[1:-1])


# name -> (make(jax_module, numpy_module, lax_module) -> function, arguments)
SAME = {
    "elementwise": (lambda j, m, l: lambda x: m.sin(x) * 2 + x, (_X,)),
    "one_line": (lambda j, m, l: lambda x: m.log(m.exp(x)), (_X,)),
    "unused_argument": (lambda j, m, l: lambda x, y: x + 1, (_X, _X)),
    "exactly_80_columns": (lambda j, m, l: lambda x: x.T, (_M,)),
    "reduce_sum": (lambda j, m, l: lambda x: m.sum(x, axis=1), (_M,)),
    "reshape": (lambda j, m, l: lambda x: x.reshape(3, 2), (_M,)),
    "convert": (lambda j, m, l: lambda x: x.astype(m.int32), (_X,)),
    "integer_literals": (lambda j, m, l: lambda x: x * 2 + 1, (np.int32(3),)),
    "integer_pow": (lambda j, m, l: lambda x: x ** 2, (_X,)),
    "slice": (lambda j, m, l: lambda x: x[1:], (_X,)),
    "concatenate": (lambda j, m, l: lambda x: m.concatenate([x, x]), (_X,)),
    "argmax": (lambda j, m, l: lambda x: m.argmax(x), (_X,)),
    "iota_constant": (lambda j, m, l: lambda x: x + m.arange(3), (_X,)),
    "cond": (lambda j, m, l: lambda p, x: l.cond(p > 0, lambda x: x + 1, lambda x: x - 1, x),
             (_S, _X)),
    "while_loop": (lambda j, m, l: lambda x: l.while_loop(
        lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, x)), (_X,)),
    "fori_loop_unused_counter": (lambda j, m, l: lambda x: l.fori_loop(
        0, 3, lambda i, c: c + i, x), (_X,)),
    "scan": (lambda j, m, l: lambda x: l.scan(lambda c, y: (c + y, c * y), 0.0, x), (_X,)),
    "nested_jit": (lambda j, m, l: _nested(j), (_X,)),
    "jit_of_jit": (lambda j, m, l: j.jit(lambda x: x + 1), (_X,)),
    "jit_used_twice": (lambda j, m, l: _twice(j), (_X,)),
    "jit_longer_than_10": (lambda j, m, l: _long_inner(j), (_X,)),
    "many_arguments_wrap": (lambda j, m, l: _wide(j, m), (_M,) * 12),
    "weak_typed_argument": (lambda j, m, l: lambda x: x * 2, (3.0,)),
    "closure_constant": (lambda j, m, l: lambda x: x + _C, (_X,)),
    "closure_constvar": (lambda j, m, l: lambda x: x[0] + _BIG, (_X,)),
    "special_literals": (lambda j, m, l: lambda x: m.minimum(x * -1.5, m.inf) + m.nan,
                         (_X,)),
    "bool_literal": (lambda j, m, l: lambda x: m.logical_and(x > 0, True), (_X,)),
    "scan_with_consts": (lambda j, m, l: lambda x: l.scan(
        lambda c, y: (c + y * x[0], None), 0.0, x)[0], (_X,)),
    "switch_three_branches": (lambda j, m, l: lambda i, x: l.switch(
        i, [lambda x: x, lambda x: x * 2, lambda x: -x], x), (1, _X)),
    "nested_outputs": (lambda j, m, l: lambda x: (x, x + 1, (x * 2,)), (_X,)),
    "outputs_are_arguments": (lambda j, m, l: lambda x, y: (y, x), (_X, _S)),
    "jit_with_literal_operand": (lambda j, m, l: lambda x: j.jit(lambda a, b: a * b)(x, 2.0),
                                 (_X,)),
    "jit_same_operand_twice": (lambda j, m, l: lambda x: j.jit(lambda a, b: a * b)(x, x),
                               (_X,)),
    "stop_gradient": (lambda j, m, l: lambda x: l.stop_gradient(x) + 1, (_X,)),
    "jvp": (lambda j, m, l: lambda x: j.jvp(m.sin, (x,), (x,)), (_X,)),
    "pow_abs_sign_erf": (lambda j, m, l: lambda x: x ** x + m.abs(x) * m.sign(x) + l.erf(x),
                         (_X,)),
    "clamp_pad_rev": (lambda j, m, l: lambda x: l.rev(l.pad(l.clamp(0.0, x, 1.0), 0.0,
                                                          [(1, 2, 0)]), (0,)), (_X,)),
    "dynamic_slice": (lambda j, m, l: lambda x: l.dynamic_slice(x, (1,), (2,)), (_X,)),
    # parameters JAX leaves out (at their defaults, or implied by the result's type) or
    # spells its own way
    "broadcast_to": (lambda j, m, l: lambda x: m.broadcast_to(x, (2, 3)), (_X,)),
    "broadcast_in_dim_of_scalar": (lambda j, m, l: lambda x: m.full((3,), x), (_S,)),
    "lax_broadcast_in_dim": (lambda j, m, l: lambda x: l.broadcast_in_dim(x, (2, 3), (1,)),
                             (_X,)),
    "matmul": (lambda j, m, l: lambda a, b: a @ b, (_M, _M.T.copy())),
    "vector_dot": (lambda j, m, l: lambda a, b: m.dot(a, b), (_X, _X)),
    "lax_dot_precision": (lambda j, m, l: lambda a, b: l.dot(
        a, b, precision=l.Precision.HIGHEST), (_M, _M.T.copy())),
    "lax_dot_preferred_type": (lambda j, m, l: lambda a, b: l.dot(
        a, b, preferred_element_type=m.float32), (_M, _M.T.copy())),
    "dot_general_batch_dims": (lambda j, m, l: lambda a, b: l.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,)))), (np.ones((2, 3, 4), np.float32),
                                              np.ones((2, 4, 5), np.float32))),
    "grad_of_dot": (lambda j, m, l: j.grad(lambda w: m.sum(m.dot(_M, w))), (_X,)),
    "value_and_grad": (lambda j, m, l: j.value_and_grad(lambda x: m.sum(x ** 2)), (_X,)),
    "reduce_max": (lambda j, m, l: lambda x: m.max(x), (_M,)),
    "reduce_min_prod": (lambda j, m, l: lambda x: (m.min(x, axis=0), m.prod(x)), (_M,)),
    "reduce_and_or_xor": (lambda j, m, l: lambda x: (
        m.all(x > 0), l.reduce_or(x > 0, (0,)), l.reduce_xor(x > 0, (1,))), (_M,)),
    # derivatives accumulate with add_any
    "grad": (lambda j, m, l: j.grad(lambda x: m.sin(x) * x), (_S,)),
    "jvp_of_product": (lambda j, m, l: lambda x, y: j.jvp(lambda a, b: a * b, (x, y),
                                                          (y, x)), (_X, _X)),
    # jax.numpy functions JAX defines under jit: a named nested jit
    "cumsum": (lambda j, m, l: lambda x: m.cumsum(x) * 2, (_X,)),
    "cumsum_axis_cumprod": (lambda j, m, l: lambda x: (m.cumsum(x, axis=1), m.cumprod(x)),
                            (_M,)),
    "cumsum_of_bool": (lambda j, m, l: lambda x: m.cumsum(x > 0), (_X,)),
    "where_scalar_operand": (lambda j, m, l: lambda x: m.where(x > 0, x, 0.0), (_X,)),
    "where_broadcasts": (lambda j, m, l: lambda x, y: m.where(x > 0, x, y), (_M, _X)),
    "where_scalar_condition": (lambda j, m, l: lambda x: m.where(True, x, 1.0), (_X,)),
    "where_int_condition": (lambda j, m, l: lambda x: m.where(x.astype(m.int32), x, 2),
                            (_X,)),
    "where_under_jit": (lambda j, m, l: j.jit(lambda x: m.where(x > 1, x, 0.0)), (_X,)),
    "sort_argsort": (lambda j, m, l: lambda x: (m.sort(x, axis=0), m.argsort(x)), (_M,)),
    "sort_argsort_descending": (lambda j, m, l: lambda x: (
        m.sort(x, descending=True), m.argsort(x, descending=True)), (_X,)),
    "floor_divide_float": (lambda j, m, l: lambda x: x // 2, (_X,)),
    "floor_divide_int": (lambda j, m, l: lambda x: x // 3, (np.arange(3, dtype=np.int32),)),
    "floor_divide_arrays": (lambda j, m, l: lambda x, y: m.floor_divide(x, y), (_X, _X)),
    "remainder_float": (lambda j, m, l: lambda x: (x % 2, m.mod(x, 3.0)), (_X,)),
    "remainder_int": (lambda j, m, l: lambda x: x % 3, (np.arange(3, dtype=np.int32),)),
    "clip": (lambda j, m, l: lambda x: (m.clip(x, 0.0, 1.0), m.clip(x, max=2)), (_X,)),
    "clip_int_and_array_bound": (lambda j, m, l: lambda x, y: (
        m.clip(x.astype(m.int32), 0, 1), m.clip(x, y, 3.0)), (_X, _X)),
    "round": (lambda j, m, l: lambda x: (m.round(x), m.round(x, 2), m.round(x, decimals=1)),
              (_X,)),
    "isinf_trunc_rint": (lambda j, m, l: lambda x: (m.isinf(x), m.trunc(x), m.rint(x),
                                                    m.trunc(x.astype(m.int32))), (_X,)),
    "fmod_divmod_modf": (lambda j, m, l: lambda x: (m.fmod(x, 2.0), m.divmod(x, 2.0),
                                                    m.modf(x)), (_X,)),
    "fmax_fmin_heaviside": (lambda j, m, l: lambda x, y: (m.fmax(x, y), m.fmin(x, y),
                                                          m.heaviside(x, 0.5)), (_X, _C)),
    "nan_to_num": (lambda j, m, l: lambda x: (m.nan_to_num(x),
                                              m.nan_to_num(x, nan=1.0, posinf=5.0)), (_X,)),
    "count_nonzero_nansum_nanprod": (lambda j, m, l: lambda x: (
        m.count_nonzero(x, axis=1), m.count_nonzero(x), m.nansum(x, axis=0), m.nanprod(x)),
        (np.array([[1, 0, np.nan], [0, 2, 3]], np.float32),)),
    "signbit_copysign": (lambda j, m, l: lambda x, y: (m.signbit(x), m.copysign(x, -1.0),
                                                       m.copysign(x, y)), (_X, _C)),
    # custom derivatives: the function's and its rules' names, call_jaxpr, symbolic_zeros
    "custom_jvp": (lambda j, m, l: _custom_jvp(j), (_X,)),
    "custom_jvp_closing_over_a_constant": (lambda j, m, l: _custom_jvp(j, True), (_X,)),
    "custom_vjp": (lambda j, m, l: _custom_vjp(j), (_X,)),
    "grad_of_custom_jvp": (lambda j, m, l: j.grad(lambda x: _custom_jvp(j)(x).sum()), (_X,)),
    # conj keeps its operand's dtype as a parameter, and takes real operands
    "lax_conj_of_real_and_complex": (lambda j, m, l: lambda x: (
        l.conj(x), l.conj(x.astype(m.complex64)), m.conj(x.astype(m.complex64))), (_X,)),
    "lax_conj_of_python_float": (lambda j, m, l: lambda x: l.conj(x), (3.0,)),
    "vmap_of_conj": (lambda j, m, l: j.vmap(l.conj), (_M.astype(np.complex64),)),
    # more everyday programs whose equations agree
    "unary_functions": (lambda j, m, l: lambda x: (m.tanh(x), m.exp2(x), m.sqrt(m.abs(x)),
                                                   l.rsqrt(x), m.floor(x), m.isnan(x)), (_X,)),
    "power_square_divide": (lambda j, m, l: lambda x: (m.power(x, 3), m.square(x), x / 2),
                            (_X,)),
    "int_minimum_true_divide": (lambda j, m, l: lambda x: (m.minimum(x, 2), x / 2),
                                (np.arange(3, dtype=np.int32),)),
    "maximum_sigmoid": (lambda j, m, l: lambda x: j.nn.sigmoid(m.maximum(x, 0.0)), (_X,)),
    "mean_any_argmin": (lambda j, m, l: lambda x: (m.mean(x, axis=0), m.any(x > 0),
                                                   m.argmin(x, axis=1)), (_M,)),
    "select_lax_max_cummax": (lambda j, m, l: lambda x: (l.select(x > 0, x, -x),
                                                          l.max(x, 0.0), l.cummax(x)), (_X,)),
    "index_squeeze_expand": (lambda j, m, l: lambda x: (x[1], m.squeeze(x[:1]), x[None],
                                                        m.transpose(x)), (_M,)),
    "complex_abs_exp_real": (lambda j, m, l: lambda x: (m.abs(x), m.exp(x), m.real(x)),
                             (_X.astype(np.complex64),)),
    # JAX's batching leaves NumPy integers in the reduction's axes (printed np.int64(1))
    "vmap_of_a_reduction": (lambda j, m, l: j.vmap(lambda x: m.sum(x * 2)), (_M,)),
    "ones_full_zeros_like": (lambda j, m, l: lambda x: m.ones(3) + m.full((3,), 2.0)
                             + m.zeros_like(x), (_X,)),
    # a nested jit (here jnp.where's) differentiated into jits of its primal part and of
    # its transposed tangent part
    "grad_through_where": (
        lambda j, m, l: j.grad(lambda x: m.sum(m.where(x > 0, x, 0.0))), (_X,)),
    # the elementwise primitives broadcast size-1 dimensions themselves (one add of
    # f32[3,1] and f32[1,4]); jnp only adds leading size-1 dimensions
    "lax_add_size1_broadcasting": (lambda j, m, l: lambda a, b: l.add(a, b),
                                   (np.ones((3, 1), np.float32), np.ones((1, 4), np.float32))),
    "jnp_add_broadcasting": (lambda j, m, l: lambda a, b: a + b, (_M, _X)),
}


def _printed(mod, np_mod, lax_mod, make, args):
    return str(mod.make_jaxpr(make(mod, np_mod, lax_mod))(*[np_mod.asarray(a) for a in args]))


@pytest.mark.parametrize("name", list(SAME))
def test_printed_jaxpr_is_jaxs(rjax, rjnp, name):
    make, args = SAME[name]
    want = _printed(rjax, rjnp, rjax.lax, make, args)
    got = _printed(jax, jnp, lax, make, args)
    assert got == want


def test_parameters_sorted_and_broken_one_per_line():
    # dot_general's parameters do not fit on the equation's line: one per line, sorted.
    text = str(jax.make_jaxpr(lambda a, b: lax.dot_general(
        a, b, (((1,), (0,)), ((), ())), precision=lax.Precision.HIGH,
        preferred_element_type=jnp.float32))(jnp.ones((2, 3)), jnp.ones((3, 2))))
    lines = text.split("\n")
    start = next(i for i, s in enumerate(lines) if s.endswith("dot_general["))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("    ] "))
    keys = [s.strip().split("=")[0] for s in lines[start + 1:end]]
    assert keys == sorted(keys) and len(keys) >= 2
    assert all(s.startswith("      ") for s in lines[start + 1:end])


def test_continuous_names_into_sub_jaxprs():
    text = str(jax.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x))(_X))
    binders = re.findall(r"\b([a-z]+):", text)
    first = {}
    for b in binders:
        first.setdefault(b, len(first))
    # every name a, b, c, ... is introduced once, in order, across the nested program
    assert list(first) == [chr(ord("a") + i) for i in range(len(first))]


def test_printer_still_prints_eqns_without_outputs():
    def f(x):
        jax.debug.print("x={x}", x=x)
        return x + 1

    text = str(jax.make_jaxpr(f)(_X))
    assert "\n    debug_callback[" in text or "let debug_callback[" in text
    assert "_ = debug_callback" not in text


def test_grad_through_a_jit_applied_to_tangents(rjax):
    # a custom_jvp rule that applies jit to its tangents (as a rule using jnp.where does
    # under make_jaxpr): reverse mode transposes the jit's program (it raised "jit has no
    # transpose rule")
    def make(j):
        double = j.jit(lambda t: t * 2.0)

        @j.custom_jvp
        def f(x):
            return j.numpy.sin(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            return f(primals[0]), double(tangents[0])

        return lambda x: f(x).sum()

    x = np.arange(3.0, dtype=np.float32)
    want = rjax.grad(make(rjax))(x)
    for got in (jax.grad(make(jax))(x), jax.jit(jax.grad(make(jax)))(x)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert got.dtype == want.dtype
    text = str(jax.make_jaxpr(jax.grad(make(jax)))(x))
    assert "jvp=f_jvp" in text and "mul e 2.0:f32[]" in text


def test_nested_jit_with_a_python_scalar_operand_evaluated_again(rjax, rjnp):
    # a staged jit whose operand is a Python scalar (a weakly typed literal), in a program
    # that is evaluated again (custom_gradient's rule): the literal comes back strongly
    # typed, which the call accepts (it raised "operand types do not match")
    def make(j, m):
        scale = j.jit(lambda g, c: g * c)

        @j.custom_gradient
        def f(x):
            return x, lambda g: (m.clip(scale(g, 0.5), -0.25, 0.25),)

        return j.grad(lambda x: 10 * f(x).sum())

    x = np.ones(3, np.float32)
    got, want = make(jax, jnp)(x), make(rjax, rjnp)(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == want.dtype
