"""Transformation rules of every primitive: a table test (each primitive has the JVP,
transpose and batching rules it needs), then for every primitive a gradient check (JVP and
VJP against finite differences) where it is differentiable and a vmap check (against the
stacked per-example results, with in_axes 0, 1 and None on some operands), all through
the public lax/jnp functions; a sample compared with real JAX's jvp/vjp."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.core import primitives

from _transform_checks import check_grads, check_vmap, check_vs_jax

# ---- the table test ----------------------------------------------------------------------

# primitives whose outputs are integer/boolean only: zero tangents, no JVP rule needed
INTEGER_OUTPUT = {"is_finite", "not", "population_count", "and", "or", "xor", "eq", "ne",
                  "lt", "le", "gt", "ge", "shift_left", "shift_right_logical",
                  "shift_right_arithmetic", "reduce_and", "reduce_or", "reduce_xor",
                  "argmax", "argmin", "rng_bit_generator"}
# intentional exceptions, each with its reason
NO_JVP = {
    "iota": "takes no operands, so no tangent ever reaches it",
    "custom_lin": "the linear stand-in of a custom_vjp function: only ever transposed",
    "nextafter": "JAX defines no derivative for it (NotImplementedError), nor do we",
    **{p: "LAPACK's packed factorisation forms: JAX defines no derivative for them, nor do "
          "we" for p in ("geqrf", "householder_product", "ormqr", "hessenberg", "schur",
                         "tridiagonal", "cholesky_update", "symmetric_product")},
    "kernel": "compiler-internal: made by the fusion pass after tracing, never transformed",
}
NO_BATCH = {"iota": "takes no operands, so it is never batched",
            "kernel": "compiler-internal: made by the fusion pass after tracing, never "
                      "transformed"}
# primitives linear in (some of) their operands, which reverse mode must transpose
LINEAR = {"neg", "real", "imag", "conj", "add", "add_any", "sub", "mul", "div", "complex",
          "select_n",
          "convert_element_type", "broadcast_in_dim", "reshape", "transpose", "squeeze",
          "concatenate", "stack", "unstack", "split", "pad", "rev", "slice", "dynamic_slice",
          "dynamic_update_slice",
          "copy", "reduce_sum", "cumsum", "dot_general", "gather", "scatter", "jit",
          "conv_general_dilated", "reduce_window_sum", "custom_lin", "checkpoint_jvp",
          "fft", "reduce_precision", "psum", "all_gather", "reduce_scatter", "ppermute",
          "all_to_all", "shard_slice", "sharding_constraint", "reshard", "reshard_tangent", "reshard_like"}

ALL = sorted(primitives())


@pytest.mark.parametrize("name", ALL)
def test_primitive_has_rules(name):
    p = primitives()[name]
    if name not in NO_BATCH:
        assert p.batch is not None, f"{name}: no batching rule"
    if name not in INTEGER_OUTPUT and name not in NO_JVP:
        assert p.jvp is not None, f"{name}: no JVP rule"
    if name in LINEAR:
        assert p.transpose is not None, f"{name}: linear but no transpose rule"


def test_allow_lists_name_real_primitives():
    for names in (INTEGER_OUTPUT, set(NO_JVP), set(NO_BATCH), LINEAR):
        assert not names - set(ALL), names - set(ALL)


# ---- inputs -------------------------------------------------------------------------------

R = np.random.default_rng(0)


def rnd(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return R.uniform(lo, hi, shape).astype(dtype)


def ints(*shape, lo=0, hi=4, dtype=np.int32):
    return R.integers(lo, hi, shape).astype(dtype)


def cplx(*shape):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(np.complex64)


def away_from_ints(*shape):
    x = rnd(*shape, lo=-3, hi=3)
    return np.floor(x) + R.uniform(0.2, 0.8, shape).astype(np.float32)


class Case:
    """One row: ``fn(*args)`` through public functions; ``order`` of the gradient check
    (None: not differentiable); ``axes``: the in_axes of each vmap check; ``rev``: whether
    the reverse-mode check applies (the harness pairs real inner products, so complex
    inputs are checked forward only and against JAX)."""

    def __init__(self, fn, args, order=1, axes=None, rev=True, rtol=1e-5):
        self.fn, self.args, self.order, self.rev, self.rtol = fn, args, order, rev, rtol
        n = len(args)
        self.axes = axes if axes is not None else \
            [(0,) * n] + ([(1,) + (None,) * (n - 1)] if np.ndim(args[0]) >= 1 else [])


def unary(fn, x, order=2, **kw):
    return Case(fn, (x,), order, **kw)


def binary(fn, x, y, order=2, **kw):
    return Case(fn, (x, y), order, axes=[(0, 0), (1, None), (None, 1)], **kw)


X = rnd(3, 4)
POS = rnd(3, 4, lo=0.5, hi=2.5)
UNIT = rnd(3, 4, lo=-0.9, hi=0.9)
XI = ints(3, 4, lo=-8, hi=8)
I3 = np.array([2, 0, 1], np.int32)
U24 = rnd(2, 4)

_MESH1 = jaxlite.make_mesh((1,), ("x",))     # Explicit: reshard may name it
_AUTO1 = jaxlite.make_mesh((1,), ("x",), axis_types=(jaxlite.sharding.AxisType.Auto,))

CASES = {
    # elementwise, unary
    "neg": [unary(lax.neg, X)],
    "sign": [unary(lax.sign, X, order=1)],
    "floor": [unary(lax.floor, away_from_ints(3, 4), order=1)],
    "ceil": [unary(lax.ceil, away_from_ints(3, 4), order=1)],
    "round": [unary(lax.round, away_from_ints(3, 4), order=1)],
    "is_finite": [unary(lax.is_finite, np.array([[1, np.inf, np.nan]], np.float32), None)],
    "exp": [unary(lax.exp, X)],
    "exp2": [unary(lax.exp2, X)],
    "log": [unary(lax.log, POS)],
    "log1p": [unary(lax.log1p, POS)],
    "expm1": [unary(lax.expm1, X)],
    "tanh": [unary(lax.tanh, X)],
    "logistic": [unary(lax.logistic, X)],
    "sin": [unary(lax.sin, X)],
    "cos": [unary(lax.cos, X)],
    "tan": [unary(lax.tan, UNIT)],
    "asin": [unary(lax.asin, UNIT)],
    "acos": [unary(lax.acos, UNIT)],
    "atan": [unary(lax.atan, X)],
    "sinh": [unary(lax.sinh, X)],
    "cosh": [unary(lax.cosh, X)],
    "asinh": [unary(lax.asinh, X)],
    "acosh": [unary(lax.acosh, POS + 1.2)],
    "atanh": [unary(lax.atanh, UNIT)],
    "sqrt": [unary(lax.sqrt, POS)],
    "rsqrt": [unary(lax.rsqrt, POS)],
    "cbrt": [unary(lax.cbrt, POS)],
    "abs": [unary(lax.abs, X, order=1), unary(lax.abs, cplx(3, 4), order=1, rev=False)],
    "not": [unary(lax.bitwise_not, XI, None)],
    "real": [unary(lax.real, cplx(3, 4), rev=False)],
    "imag": [unary(lax.imag, cplx(3, 4), rev=False)],
    "conj": [unary(lax.conj, cplx(3, 4), rev=False)],
    "square": [unary(lax.square, X)],
    "integer_pow": [unary(lambda x: lax.integer_pow(x, 3), X),
                    unary(lambda x: lax.integer_pow(x, -2), POS)],
    "erf": [unary(lax.erf, X)],
    "erfc": [unary(lax.erfc, X)],
    "lgamma": [unary(lax.lgamma, POS), unary(lax.lgamma, away_from_ints(3, 4))],
    "digamma": [unary(lax.digamma, POS), unary(lax.digamma, away_from_ints(3, 4))],
    # special functions (primitives/special.py; values and edges: tests/test_scipy_special.py)
    "erf_inv": [unary(lax.erf_inv, UNIT)],
    # the checker runs in float64: 45 mantissa bits keep finite differences exact enough
    "reduce_precision": [unary(lambda x: lax.reduce_precision(x, 11, 45), X)],
    "bessel_i0e": [unary(lax.bessel_i0e, X)],
    "bessel_i1e": [unary(lax.bessel_i1e, X)],
    "igamma": [binary(lax.igamma, POS, POS, order=1, rtol=1e-3)],
    "igammac": [binary(lax.igammac, POS, POS, order=1, rtol=1e-3)],
    "igamma_grad_a": [binary(lax.igamma_grad_a, POS, POS, order=None)],
    "random_gamma_grad": [binary(lax.random_gamma_grad, POS, POS, order=None)],
    "regularized_incomplete_beta": [
        Case(lambda x: lax.betainc(jnp.full_like(x, 1.5), jnp.full_like(x, 2.5), x),
             (rnd(3, 4, lo=0.1, hi=0.9),), 2)],
    "zeta": [binary(lax.zeta, POS + 1.5, POS, order=None)],
    "polygamma": [Case(lambda x: lax.polygamma(jnp.ones_like(x), x), (POS,), 2)],
    "ndtri": [unary(lambda p: jaxlite.scipy.special.ndtri(p),
                    rnd(3, 4, lo=0.1, hi=0.9))],
    "erfcx": [unary(lambda x: jaxlite.scipy.special.erfcx(x), X)],
    "dawsn": [unary(lambda x: jaxlite.scipy.special.dawsn(x), X)],
    "exp1": [unary(lambda x: jaxlite.scipy.special.exp1(x), POS)],
    "expi": [unary(lambda x: jaxlite.scipy.special.expi(x), POS)],
    "spence": [unary(lambda x: jaxlite.scipy.special.spence(x), POS)],
    "expn": [Case(lambda x: jaxlite.scipy.special.expn(jnp.full_like(x, 2.0), x), (POS,), 2)],
    "owens_t": [binary(lambda h, a: jaxlite.scipy.special.owens_t(h, a), X, UNIT, order=1)],
    "hyp1f1": [Case(lambda a, x: jaxlite.scipy.special.hyp1f1(a, jnp.full_like(x, 2.5), x),
                    (POS, UNIT), 1, axes=[(0, 0), (None, 1)], rtol=1e-3)],
    "hyp2f1": [Case(lambda a, x: jaxlite.scipy.special.hyp2f1(a, jnp.full_like(x, 1.5),
                                                              jnp.full_like(x, 3.0), x),
                    (POS, UNIT), 1, axes=[(0, 0), (None, 1)], rtol=1e-3)],
    "hyp1f1_grad": [Case(lambda a, x: jaxlite.jvp(
        lambda v: jaxlite.scipy.special.hyp1f1(v, jnp.full_like(x, 2.5), x), (a,),
        (jnp.ones_like(a),))[1], (POS, UNIT), None, axes=[(0, 0)])],
    "hyp2f1_grad": [Case(lambda a, x: jaxlite.jvp(
        lambda v: jaxlite.scipy.special.hyp2f1(v, jnp.full_like(x, 1.5),
                                               jnp.full_like(x, 3.0), x), (a,),
        (jnp.ones_like(a),))[1], (POS, UNIT), None, axes=[(0, 0)])],
    "sici_si": [unary(lambda x: jaxlite.scipy.special.sici(x)[0], X)],
    "sici_ci": [unary(lambda x: jaxlite.scipy.special.sici(x)[1], POS)],
    "fresnel_s": [unary(lambda x: jaxlite.scipy.special.fresnel(x)[0], X)],
    "fresnel_c": [unary(lambda x: jaxlite.scipy.special.fresnel(x)[1], X)],
    "zeta_grad_x": [binary(lambda x, q: jaxlite.jvp(
        lambda v: jaxlite.scipy.special.zeta(v, q), (x,), (jnp.ones_like(x),))[1],
        POS + 1.5, POS, order=None)],
    "population_count": [unary(lax.population_count, XI, None)],
    # elementwise, binary
    "add": [binary(lax.add, X, rnd(3, 4)), Case(lambda x: lax.add(x, 2.0), (X,))],
    # no public function binds add_any: the differentiation machinery sums with it
    "add_any": [binary(primitives()["add_any"].bind, X, rnd(3, 4))],
    "sub": [binary(lax.sub, X, rnd(3, 4))],
    "mul": [binary(lax.mul, X, rnd(3, 4))],
    "div": [binary(lax.div, X, POS)],
    "rem": [binary(lax.rem, rnd(3, 4, lo=0.1, hi=0.9) + 3, POS * 0 + 1.7, order=1)],
    "pow": [binary(lax.pow, POS, X)],
    "max": [binary(lax.max, X, rnd(3, 4), order=1)],
    "min": [binary(lax.min, X, rnd(3, 4), order=1)],
    "atan2": [binary(lax.atan2, X, rnd(3, 4))],
    "nextafter": [binary(lax.nextafter, X, rnd(3, 4), order=None)],
    "and": [binary(lax.bitwise_and, XI, ints(3, 4), order=None)],
    "or": [binary(lax.bitwise_or, XI, ints(3, 4), order=None)],
    "xor": [binary(lax.bitwise_xor, XI, ints(3, 4), order=None)],
    "eq": [binary(lax.eq, XI, ints(3, 4), order=None)],
    "ne": [binary(lax.ne, XI, ints(3, 4), order=None)],
    "lt": [binary(lax.lt, X, rnd(3, 4), order=None)],
    "le": [binary(lax.le, X, rnd(3, 4), order=None)],
    "gt": [binary(lax.gt, X, rnd(3, 4), order=None)],
    "ge": [binary(lax.ge, X, rnd(3, 4), order=None)],
    "shift_left": [binary(lax.shift_left, XI, ints(3, 4), order=None)],
    "shift_right_logical": [binary(lax.shift_right_logical, XI, ints(3, 4), order=None)],
    "shift_right_arithmetic": [binary(lax.shift_right_arithmetic, XI, ints(3, 4), order=None)],
    "complex": [binary(lax.complex, X, rnd(3, 4), rev=False)],
    "select_n": [Case(lambda p, a, b: lax.select_n(p, a, b), (X > 0, X, rnd(3, 4)), 2,
                      axes=[(0, 0, 0), (1, None, 1), (None, 0, None)])],
    "clamp": [Case(lambda lo, x, hi: lax.clamp(lo, x, hi),
                   (rnd(3, 4, lo=-1.5, hi=-0.5), X, rnd(3, 4, lo=0.5, hi=1.5)), 1,
                   axes=[(0, 0, 0), (None, 1, None)])],
    "convert_element_type": [unary(lambda x: lax.convert_element_type(
        x, np.complex128 if x.dtype == np.float64 else np.complex64), X, order=1),
        unary(lambda x: x * lax.convert_element_type(x > 0, x.dtype), X, order=1)],
    "bitcast_convert_type": [unary(lambda x: lax.bitcast_convert_type(x, np.int32), X, None)],
    # shape
    "broadcast_in_dim": [unary(lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), X)],
    "reshape": [unary(lambda x: lax.reshape(x, (2, 6)), X)],
    "transpose": [unary(lambda x: lax.transpose(x, (1, 0)), X)],
    "squeeze": [unary(lambda x: lax.squeeze(x, (1,)), rnd(3, 1, 4))],
    "concatenate": [binary(lambda x, y: lax.concatenate([x, y], 1), X, rnd(3, 2))],
    "top_k": [unary(lambda x: lax.top_k(x, 2)[0] * 3, X),
              unary(lambda x: lax.top_k(x, 2, axis=0)[0], X, order=1)],
    "stack": [binary(lambda x, y: lax.stack([x, y], 1), X, rnd(3, 4)),
              unary(lambda x: lax.stack([x, x * 2, x], 2), X)],
    "unstack": [unary(lambda x: lax.concatenate(lax.unstack(x, 1)[::-1], 0), X),
                unary(lambda x: lax.unstack(x)[1] * 3, X)],
    "split": [unary(lambda x: lax.concatenate(lax.split(x, (1, 0, 3), 1)[::-1], 1), X),
              unary(lambda x: lax.split(x, (2, 1))[0] * 2, X)],
    "pad": [Case(lambda x, v: lax.pad(x, v, ((1, 0, 1), (0, 2, 0))), (X, np.float32(0.5)),
                 1, axes=[(0, 0), (1, None)])],
    "rev": [unary(lambda x: lax.rev(x, (0, 1)), X)],
    "slice": [unary(lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), X)],
    "dynamic_slice": [Case(lambda x, i: lax.dynamic_slice(x, (i, np.int32(1)), (2, 2)),
                           (X, np.int32(1)), 1, axes=[(0, None), (1, None), (0, 0)])],
    "dynamic_update_slice": [Case(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, np.int32(0))),
                                  (X, rnd(2, 3), np.int32(1)), 1,
                                  axes=[(0, None, None), (None, 1, None), (1, 0, 0)])],
    "iota": [unary(lambda x: x * lax.iota(np.float32, 4), X)],
    "copy": [unary(lambda x: jnp.array(x, copy=True), X)],
    "stop_gradient": [unary(lambda x: x * lax.stop_gradient(x), X, order=None)],
    # reductions
    "reduce_sum": [unary(lambda x: lax.reduce_sum(x, (1,)), X)],
    "reduce_prod": [unary(lambda x: lax.reduce_prod(x, (0,)), X),
                    unary(lambda x: jnp.prod(x.at[1, 2].set(0.0)), X)],
    "reduce_max": [unary(lambda x: lax.reduce_max(x, (1,)), X, order=1)],
    "reduce_min": [unary(lambda x: lax.reduce_min(x, (0,)), X, order=1)],
    "reduce_and": [unary(lambda x: lax.reduce_and(x > 0, (1,)), X, None)],
    "reduce_or": [unary(lambda x: lax.reduce_or(x > 0, (0,)), X, None)],
    "reduce_xor": [unary(lambda x: lax.reduce_xor(x, (1,)), XI, None)],
    "argmax": [unary(lambda x: lax.argmax(x, 1, np.int32), X, None)],
    "argmin": [unary(lambda x: lax.argmin(x, 0, np.int32), X, None)],
    "cumsum": [unary(lambda x: lax.cumsum(x, 1), X),
               unary(lambda x: lax.cumsum(x, 0, reverse=True), X)],
    "cumprod": [unary(lambda x: lax.cumprod(x, 1), X),
                unary(lambda x: lax.cumprod(x.at[0, 1].set(0.0), 1, reverse=True), X),
                unary(lambda x: lax.cumprod(x, 0), rnd(7, 2))],
    "cummax": [unary(lambda x: lax.cummax(x, 1), X, order=1),
               unary(lambda x: lax.cummax(x, 0, reverse=True), X, order=1)],
    "cummin": [unary(lambda x: lax.cummin(x, 0), X, order=1),
               unary(lambda x: lax.cummin(x, 1, reverse=True), X, order=1)],
    "sort": [unary(lambda x: jnp.sort(x, axis=1), X, order=1),
             binary(lambda k, v: lax.sort_key_val(k, v, 0), X, rnd(3, 4), order=1),
             unary(lambda x: lax.sort((jnp.round(x[0]), x[1]), num_keys=2), X, order=1)],
    # linear algebra
    "dot_general": [binary(lambda a, b: lax.dot(a, b), X, rnd(4, 2)),
                    binary(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                           rnd(2, 3, 4), rnd(2, 4, 3))],
    "svd": [unary(lambda a: jnp.linalg.svd(a, compute_uv=False), rnd(4, 3), order=2),
            unary(lambda a: jnp.linalg.svd(a, full_matrices=False), rnd(3, 5), order=1),
            unary(lambda a: jnp.linalg.svd(a), rnd(2, 3, 3), order=1),
            unary(lambda a: jnp.linalg.svd(a, full_matrices=False)[1], cplx(4, 3), order=1,
                  rev=False)],
    # factorisations (operands made well conditioned inside, so rolled vmap examples are too)
    "cholesky": [unary(lambda a: lax.linalg.cholesky(a @ a.T + 4 * jnp.eye(3)), rnd(3, 3),
                       order=1)],
    "triangular_solve": [binary(lambda a, b: lax.linalg.triangular_solve(
        a + 4 * jnp.eye(3), b, left_side=True, lower=True), rnd(3, 3), rnd(3, 2), order=1),
        binary(lambda a, b: lax.linalg.triangular_solve(
            a + 4 * jnp.eye(3), b, transpose_a=True, unit_diagonal=True), rnd(3, 3),
            rnd(2, 3), order=1)],
    "lu": [unary(lambda a: lax.linalg.lu(a + 4 * jnp.eye(3))[0], rnd(3, 3), order=1),
           unary(lambda a: lax.linalg.lu(a)[0], rnd(4, 2) + np.eye(4, 2, dtype=np.float32) * 4,
                 order=1)],
    "lu_pivots_to_permutation": [unary(lambda p: lax.linalg.lu_pivots_to_permutation(p, 4),
                                       np.array([2, 2, 3], np.int32), None)],
    "qr": [unary(lambda a: lax.linalg.qr(a, full_matrices=False), rnd(4, 3), order=1)],
    "eigh": [unary(lambda a: lax.linalg.eigh(a)[1], rnd(3, 3), order=1),
             unary(lambda a: jnp.abs(lax.linalg.eigh(a)[0][:, 0]), rnd(3, 3), order=1)],
    "eig": [unary(lambda a: jnp.sort(jnp.real(lax.linalg.eig(
        a @ a.T, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0])),
        rnd(3, 3), order=1)],
    # LAPACK's packed forms: no derivatives (as JAX); batching checked
    "geqrf": [unary(lambda a: lax.linalg._geqrf(a), rnd(4, 3), None)],
    "householder_product": [binary(lambda a, t: lax.linalg.householder_product(a, t),
                                   rnd(4, 3), rnd(2), None)],
    "ormqr": [Case(lambda a, t, c: lax.linalg.ormqr(a, t, c), (rnd(3, 3), rnd(2), rnd(3, 2)),
                   None, axes=[(0, 0, 0), (None, None, 1)])],
    "hessenberg": [unary(lax.linalg.hessenberg, rnd(3, 3), None)],
    "schur": [unary(lambda a: lax.linalg.schur(a @ a.T), rnd(3, 3), None)],
    "tridiagonal": [unary(lambda a: lax.linalg.tridiagonal(a + a.T), rnd(3, 3), None)],
    "symmetric_product": [binary(lambda a, c: lax.linalg.symmetric_product(
        a, c, alpha=2.0, beta=0.5, symmetrize_output=True), rnd(3, 2), rnd(3, 3), None)],
    "cholesky_update": [binary(lambda r, w: lax.linalg.cholesky_update(
        jnp.triu(r) + 4 * jnp.eye(3), w), rnd(3, 3), rnd(3), None)],
    "tridiagonal_solve": [Case(lambda dl, d, du, b: lax.linalg.tridiagonal_solve(
        dl, d + 4, du, b), (rnd(3), rnd(3), rnd(3), rnd(3, 2)), 1,
        axes=[(0, 0, 0, 0), (None, 0, None, 1)])],
    # indexing
    "gather": [unary(lambda x: x[1], X), unary(lambda x: x[:, 2], X),
               unary(lambda x: x[..., ::-2], X),
               Case(lambda x, i: jnp.asarray(x)[i], (X, I3), 2, axes=[(0, None), (None, 0), (1, 0)]),
               Case(lambda x, i: jnp.asarray(x)[:, i], (X, I3), 1, axes=[(1, 0), (None, 0)]),
               Case(lambda x, i: jnp.asarray(x).at[i].get(mode="fill", fill_value=1.0), (X, I3 + 1), 1,
                    axes=[(0, 0), (None, 0)])],
    "scatter": [Case(lambda x, u: jnp.asarray(x).at[1:3].set(u), (X, rnd(2, 4)), 1,
                     axes=[(0, 0), (1, None), (None, 1)]),
                Case(lambda x, u: jnp.asarray(x).at[np.array([0, 2, 0])].set(u), (X, rnd(3, 4)), 1,
                     axes=[(1, 1), (None, 0)]),
                Case(lambda x, u: jnp.asarray(x).at[:, np.array([0, 2, 0])].add(u), (X, rnd(3, 3)), 2,
                     axes=[(0, 0), (None, 1)]),
                Case(lambda x: x.at[np.array([1, 1])].multiply(U24), (X,), 1),
                Case(lambda x, u: jnp.asarray(x).at[np.array([1, 1])].multiply(u),
                     (X, rnd(2, 4)), None, axes=[(0, 0), (None, 1)]),
                Case(lambda x, u: jnp.asarray(x).at[np.array([1, 2, 1])].min(u), (X, rnd(3, 4)), 1,
                     axes=[(0, 0), (None, 1)]),
                Case(lambda x, u: jnp.asarray(x).at[np.array([1, 2, 1])].max(u), (X, rnd(3, 4)), 1,
                     axes=[(1, 0)])],
}



@jaxlite.custom_vjp
def _cv(x):
    return jnp.sin(x)


_cv.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (g * c,))


@jaxlite.custom_jvp
def _cj(x):
    return jnp.sin(x)


_cj.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))


def _scan_fn(x):
    return lax.scan(lambda c, a: (c * a + 1.0, jnp.sin(c)), x[0], x[1:])


def _solve_fn(x):
    # the matrix depends on x too, so both of the rule's terms (db and dA x) are checked
    d = 2.0 + jnp.sin(x) ** 2
    return lax.custom_linear_solve(lambda v: d * v, jnp.cos(x), lambda mv, r: r / d,
                                   symmetric=True)


def _while_fn(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * jnp.cos(c[1])),
                          (0, x))[1]


def _cond_fn(p, x):
    return lax.cond(p > 0, lambda v: jnp.sin(v) * 2.0, lambda v: v * v, x)


def _debug_fn(x):
    jaxlite.debug.callback(lambda v: None, x)
    return x * 2.0


def _pure_cb_fn(x):
    out = jaxlite.ShapeDtypeStruct(x.shape, x.dtype)
    return jaxlite.pure_callback(lambda v: np.sin(v), out, x, vmap_method="sequential") * x


def _io_cb_fn(x):
    from jaxlite.experimental import io_callback
    out = jaxlite.ShapeDtypeStruct(x.shape, x.dtype)
    return io_callback(lambda v: np.cos(v), out, x) + x


# rows for primitives defined outside the rule modules (control flow, calls, conv)
CONTROL_CASES = {
    "jit": [unary(jaxlite.jit(lambda x: jnp.sin(x) * x), X)],
    "debug_callback": [unary(_debug_fn, X)],
    # host callbacks have no derivative (grad raises, as in JAX): batching only
    "pure_callback": [unary(_pure_cb_fn, X, order=None)],
    "io_callback": [unary(_io_cb_fn, X, order=None)],
    "custom_lin": [unary(_cv, X, order=None)],       # reverse mode: test_custom_vjp_grad
    "custom_vjp_call": [unary(_cv, X, order=None)],
    "custom_jvp_call": [unary(_cj, X, order=1)],
    "checkpoint": [unary(jaxlite.checkpoint(lambda x: jnp.sin(jnp.sin(x))), X, order=1)],
    "checkpoint_jvp": [unary(jaxlite.checkpoint(lambda x: jnp.exp(x) * x), X, order=2)],
    "scan": [unary(_scan_fn, rnd(4, 3), order=1)],
    "while": [Case(_while_fn, (X,), 1, rev=False)],
    "custom_linear_solve": [unary(_solve_fn, X, order=1)],
    "cond": [Case(_cond_fn, (np.float32(1.0), X), 1, axes=[(None, 0), (0, 1)]),
             Case(_cond_fn, (np.float32(-1.0), X), 1, axes=[(None, 1)])],
    "conv_general_dilated": [binary(lambda x, w: lax.conv(x, w, (1, 1), "SAME"),
                                    rnd(2, 2, 5, 5), rnd(3, 2, 3, 3), order=1)],
    "reduce_window_sum": [unary(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1),
                                                            "VALID"), X)],
    "reduce_window_max": [unary(lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2),
                                                            (1, 1), "VALID"), X, order=1)],
    "reduce_window_min": [unary(lambda x: lax.reduce_window(x, np.inf, lax.min, (1, 2),
                                                            (1, 2), "VALID"), X, order=1)],
    # the FFT: real results of each transform type (complex ones checked in test_fft.py)
    "fft": [unary(lambda x: jnp.real(jnp.fft.rfft(x)) * jnp.fft.fft(x).imag[
        ..., :x.shape[-1] // 2 + 1], X),
            unary(lambda x: jnp.fft.irfft(jnp.fft.ifftn(x), n=5), X, order=1)],
    # XLA's bit generator with a shared key: its batching rule over keys is JAX's (all of a
    # batch's bits from the first key), not per example; tests/test_prng_impls.py checks
    # batched keys against real JAX
    "rng_bit_generator": [Case(lambda x, k: lax.rng_bit_generator(k, (4,))[1] ^ x,
                               (ints(4, hi=100, dtype=np.uint32),
                                np.array([1, 2, 3, 4], np.uint32)), order=None,
                               axes=[(0, None)])],
    # collectives: inside a named vmap over the leading axis
    "psum": [unary(jaxlite.vmap(lambda v: v * lax.psum(v, "i"), axis_name="i"), X)],
    "pmax": [unary(jaxlite.vmap(lambda v: v * lax.pmax(v, "i"), axis_name="i"), X, order=1)],
    "pmin": [unary(jaxlite.vmap(lambda v: v + lax.pmin(v, "i"), axis_name="i"), X, order=1)],
    "all_gather": [unary(jaxlite.vmap(lambda v: v * lax.all_gather(v, "i", axis=0),
                                      axis_name="i"), X)],
    "reduce_scatter": [unary(jaxlite.vmap(lambda v: lax.psum_scatter(v * v, "i",
                                                                      tiled=True),
                                          axis_name="i"), np.tile(X, (1, 2))[:, :6])],
    "ppermute": [unary(jaxlite.vmap(lambda v: v * lax.ppermute(v, "i", [(0, 2), (2, 1)]),
                                    axis_name="i"), X)],
    "all_to_all": [unary(jaxlite.vmap(lambda v: v[:3] * lax.all_to_all(v[:3], "i", 0, 0),
                                      axis_name="i"), X)],
    # the SPMD partitioner's local cut: example k keeps block k of a shared (unbatched)
    # operand, and block k of its own one
    "shard_slice": [Case(jaxlite.vmap(
        lambda v, w: v * _shard_slice(w, "i", 0, 3) + _shard_slice(v[:3], "i", 0, 3),
        in_axes=(0, None), axis_name="i"), (X, np.tile(X[0], 3)), order=1,
        axes=[(0, None), (None, 0)])],
}


# Sharding annotations on a mesh of this process's one device (several devices:
# tests/multidevice/test_sharding_constraints.py); reshard's derivatives go through
# reshard_tangent and reshard_like
# (under jit, and forward mode only for reshard's tangent pair: linearising stages the
# placed primal as a constant, which core/staging.py does not take yet for an array on
# a mesh; reverse mode is checked under jit in tests/multidevice).  Kept out of CASES:
# tests/test_outside_platform.py runs CASES on another platform, and these place on the CPU.
MESH_CASES = {
    "sharding_constraint": [unary(jaxlite.jit(lambda x: lax.with_sharding_constraint(
        x * x, jaxlite.NamedSharding(_AUTO1, jaxlite.P("x")))), X)],
    "reshard": [unary(jaxlite.jit(lambda x: jaxlite.reshard(x * x, jaxlite.NamedSharding(
        _MESH1, jaxlite.P(None, "x")))), X)],
    "reshard_tangent": [unary(jaxlite.jit(lambda x: jnp.sin(jaxlite.reshard(
        x, jaxlite.NamedSharding(_MESH1, jaxlite.P("x"))))), X, rev=False)],
    "reshard_like": [unary(jaxlite.jit(lambda x: jaxlite.reshard(x, jaxlite.NamedSharding(
        _MESH1, jaxlite.P("x"))) ** 3), X, rev=False)],
}


def _shard_slice(x, axis_name, dimension, axis_size):
    from jaxlite.primitives.collectives import bind_named
    from jaxlite.primitives.shard_slice import shard_slice_p
    return bind_named(shard_slice_p, x, axis_name=axis_name, dimension=dimension,
                      axis_size=axis_size)


def _need(name):
    if name not in primitives():
        pytest.skip(f"no primitive {name!r} in this build")


def _rows():
    rows = [(name, k, case) for table in (CASES, CONTROL_CASES, MESH_CASES)
            for name in sorted(table) for k, case in enumerate(table[name])]
    return [pytest.param(name, case, id=f"{name}-{k}") for name, k, case in rows]


# primitives that only run inside a program spanning several MPI processes: one process
# cannot make them, so their rows live in tests/multiprocess (values against NumPy and one
# process with the same devices, grad through psum, vmap and control flow in the body)
ACROSS_PROCESSES = {p: "runs only between processes; checked under mpiexec in "
                       "tests/multiprocess" for p in (
    "cross_process_all_reduce", "cross_process_all_gather", "cross_process_reduce_scatter",
    "cross_process_all_to_all", "cross_process_permute")}


def test_every_primitive_has_a_case():
    assert not set(ACROSS_PROCESSES) - set(ALL), set(ACROSS_PROCESSES) - set(ALL)
    covered = (set(CASES) | set(CONTROL_CASES) | set(MESH_CASES)
               | set(ACROSS_PROCESSES))
    missing = sorted(set(ALL) - covered - set(NO_BATCH))
    assert not missing, f"primitives without a check row: {missing}"


@pytest.mark.parametrize("name,case", _rows())
def test_grads(name, case):
    _need(name)
    if case.order is None:
        pytest.skip("integer/boolean output: not differentiable")
    diff = [a for a in case.args if np.issubdtype(np.asarray(a).dtype, np.inexact)]
    assert diff, "a differentiable case needs an inexact operand"
    modes = ("fwd", "rev") if case.rev else ("fwd",)
    check_grads(case.fn, case.args, order=case.order, modes=modes, rtol=case.rtol)


def _stack(x, ax, n=3):
    """``n`` different examples of ``x`` (values rolled) stacked along ``ax``."""
    x = np.asarray(x)
    ex = [np.roll(x.ravel(), k).reshape(x.shape) for k in range(n)]
    return np.stack(ex, ax)


@pytest.mark.parametrize("name,case", _rows())
def test_vmap(name, case):
    _need(name)
    for axes in case.axes:
        args = [a if ax is None else _stack(a, ax) for a, ax in zip(case.args, axes)]
        check_vmap(case.fn, args, axes, rtol=1e-5, atol=1e-5)


# ---- rules the finite-difference check cannot see -----------------------------------------

def test_stop_gradient_and_custom_vjp_grads():
    x = jnp.asarray(X)
    g = jaxlite.grad(lambda x: jnp.sum(x * lax.stop_gradient(x)))(x)
    np.testing.assert_allclose(np.asarray(g), X, rtol=1e-6)
    g = jaxlite.grad(lambda x: jnp.sum(_cv(x)))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(X), rtol=1e-6)
    g = jaxlite.vmap(jaxlite.grad(lambda x: jnp.sum(_cv(x))))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(X), rtol=1e-6)


@pytest.mark.parametrize("fn,args", [
    (lambda x: lax.nextafter(x, x + 1.0), (X,)),
    (lambda x, u: x.at[np.array([0, 0])].multiply(u), (X, rnd(2, 4))),
    (lambda x: x.at[np.array([0, 0])].apply(jnp.sin), (X,)),
    (lambda x: jnp.linalg.svd(x)[0], (rnd(4, 3),)),
], ids=["nextafter", "scatter-mul-updates", "scatter-apply", "svd-full-matrices"])
def test_not_differentiable_as_in_jax(fn, args):
    with pytest.raises(NotImplementedError):
        jaxlite.jvp(fn, tuple(jnp.asarray(a) for a in args),
                    tuple(jnp.ones_like(jnp.asarray(a)) for a in args))


# ---- indexing under vmap: every index form against per-example results ------------------

C = rnd(4, 4, 4, 4)
IX = np.array([[0, 2, 1], [3, 1, 1], [2, 0, 2], [1, 1, -1]], np.int32)
MASK = np.array([True, False, True, True])
A = jnp.asarray

GATHER_VMAP = [
    (lambda x, i: A(x)[i], (C, IX), (None, 0)),
    (lambda x, i: x[:, i], (C, IX), (0, 0)),
    (lambda x, i: x[i, :, i], (C, IX[:, :2]), (2, 0)),
    (lambda x, i: A(x)[..., i], (C, IX), (None, 0)),
    (lambda x, i: x[i, 1:3, i], (C, IX), (2, 0)),
    (lambda x, i: x[None, i, 0], (C, IX), (1, 0)),
    (lambda x, i: x[None, 0, i], (C, IX), (2, 0)),
    (lambda x, i: x[i, None, i], (C, IX), (3, 0)),
    (lambda x, i: x[1, i], (C, IX[:, :1]), (2, 0)),
    (lambda x, i: x[1, :, i], (C, IX[:, :2].T), (0, 1)),
    (lambda x, i: x[i[0], ..., i[1]], (C, IX[:, :2].T), (1, 1)),
    (lambda x, i: A(x).at[i].get(mode="fill", fill_value=-2.0), (C, IX + 2), (None, 0)),
    (lambda x, i: x.at[i].get(mode="clip"), (C, IX + 2), (1, 0)),
    (lambda x: x[MASK], (C,), (1,)),
    (lambda x: x[:, MASK, 1:], (C,), (3,)),
    (lambda x, i: x[i, ..., 2], (C, IX), (0, 0)),
    (lambda x, i: x[..., i, 2], (C, IX), (0, 0)),
    (lambda x, i: x[i, 1, i], (C, IX), (3, 0)),
    (lambda x, i: x[::2, i, ::-1], (C, IX), (3, 0)),
    (lambda x: x[1, :, 3], (C,), (2,)),
    (lambda x: x[..., 2], (C,), (0,)),
    (lambda x: x[np.array([0, 2]), :, np.array([1, 1])], (C,), (1,)),
    (lambda x: x[:, np.array([0, 2]), np.array([1, 1])], (C,), (3,)),
]


@pytest.mark.parametrize("k", range(len(GATHER_VMAP)))
def test_gather_vmap_forms(k):
    fn, args, axes = GATHER_VMAP[k]
    check_vmap(fn, args, axes)


@pytest.mark.parametrize("op", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("axes", [(0, None, None), (None, 0, None), (1, 1, None),
                                  (0, 2, None), (None, None, 0), (1, 0, 0), (None, 1, 0)])
def test_scatter_vmap_forms(op, axes):
    u = rnd(2, 2, 4, 4, 4)
    x = _stack(C, axes[0]) if axes[0] is not None else C
    u = np.stack([u * k for k in range(3)], axes[1]) if axes[1] is not None else u
    i = (np.stack([np.array([[0, 2], [k, 0]], np.int32) for k in range(3)], axes[2])
         if axes[2] is not None else np.array([[0, 2], [0, 0]], np.int32))
    check_vmap(lambda x, u, i: getattr(A(x).at[i], op)(u), (x, u, i), axes)


@pytest.mark.parametrize("mode", ["drop", "clip", "promise_in_bounds"])
def test_scatter_vmap_modes_and_middle_index(mode):
    x, u, i = C[0], rnd(4, 4, 3), np.array([[0, 5, 1], [3, -1, 7], [2, 2, 9], [1, 1, 1]],
                                          np.int32)
    check_vmap(lambda x, u, i: A(x).at[:, i, 1].add(u, mode=mode), (_stack(x, 1, n=4), u, i),
               (1, 0, 0))


# ---- gradients of scatter/gather details -------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x, u: x.at[np.array([0, 2, 0, 0])].set(u),            # repeated: last wins
    lambda x, u: x.at[np.array([0, 5, 1, 9])].set(u, mode="drop"),
    lambda x, u: x.at[np.array([0, 5, 1, 9])].set(u, mode="clip"),
    lambda x, u: x.at[np.array([0, 5, 1, 5])].add(u, mode="clip"),
    lambda x, u: x.at[np.array([0, 5, 1, 0])].add(u, mode="drop"),
    lambda x, u: x.at[np.array([0, 5, 1, 0])].subtract(u),
    lambda x, u: x.at[np.array([0, 5, 1, 0])].max(u, mode="drop"),
    lambda x, u: x.at[np.array([3, 3, 1, 0])].min(u, mode="clip"),
], ids=["set-dup", "set-drop", "set-clip", "add-clip", "add-drop", "sub", "max-drop",
        "min-clip"])
def test_scatter_grads(fn):
    check_grads(fn, (rnd(4, 3), rnd(4, 3)))


def test_gather_fill_grad_is_zero_out_of_bounds():
    f = lambda x: A(x).at[np.array([0, 7, -9])].get(mode="fill", fill_value=5.0)  # noqa
    check_grads(f, (rnd(4),))
    g = jaxlite.grad(lambda x: jnp.sum(f(x)))(A(rnd(4)))
    np.testing.assert_array_equal(np.asarray(g), [1, 0, 0, 0])


def test_vmap_of_grad_and_grad_of_vmap_through_indexing():
    x, i = rnd(3, 5), np.array([[0, 1], [4, 4], [2, 0]], np.int32)
    f = lambda x, i: jnp.sum(jnp.sin(x[i]) * x.at[i].add(1.0)[i])  # noqa: E731
    check_vmap(jaxlite.grad(f), (x, i), (0, 0))
    check_grads(lambda x: jaxlite.vmap(f)(x, i), (x,), order=2)


# ---- against real JAX ------------------------------------------------------------------------

def _vs_jax(jl_fn, jx_fn, args, rjax, rtol=1e-5):
    jl_args = tuple(A(a) for a in args)
    jx_args = tuple(rjax.numpy.asarray(a) for a in args)
    ts = tuple(np.asarray(a) * 0.5 + 0.25 for a in args)
    check_vs_jax(jaxlite.jvp(jl_fn, jl_args, tuple(A(t) for t in ts)),
                 rjax.jvp(jx_fn, jx_args, tuple(rjax.numpy.asarray(t) for t in ts)),
                 rtol=rtol, atol=1e-5)
    out, pull = jaxlite.vjp(jl_fn, *jl_args)
    out_j, pull_j = rjax.vjp(jx_fn, *jx_args)
    ct = np.cos(np.arange(np.size(out)).reshape(np.shape(out))).astype(np.asarray(out).dtype)
    check_vs_jax(pull(A(ct)), pull_j(rjax.numpy.asarray(ct)), rtol=rtol, atol=1e-5)


VS_JAX = [
    ("gather", lambda np_: lambda x: x[np.array([2, 0, 2]), 1:], (X,)),
    ("scatter-set", lambda np_: lambda x, u: x.at[np.array([0, 2, 0])].set(u),
     (X, rnd(3, 4))),
    ("scatter-max", lambda np_: lambda x, u: x.at[np.array([0, 2, 0])].max(u),
     (X, rnd(3, 4))),
    ("scatter-mul", lambda np_: lambda x: x.at[1].multiply(3.0), (X,)),
    ("sort", lambda np_: lambda x: np_.sort(x, axis=0), (X,)),
    ("cumprod", lambda np_: lambda x: np_.cumprod(x, axis=1), (X,)),
    ("cummax", lambda np_: lambda x: np_.maximum.accumulate(x, axis=1)
     if np_ is not jnp else lax.cummax(x, 1), (X,)),
    ("svd", lambda np_: lambda x: np_.linalg.svd(x, compute_uv=False), (rnd(4, 3),)),
    ("svd-complex-s", lambda np_: lambda x: np_.linalg.svd(x, compute_uv=False),
     (cplx(3, 4),)),
    ("lgamma", lambda np_: lambda x: np_.sin(x) * 0 + (lax.lgamma(x) if np_ is jnp else
                                                       __import__("jax").lax.lgamma(x)),
     (POS,)),
    ("digamma", lambda np_: lambda x: (lax.digamma(x) if np_ is jnp else
                                       __import__("jax").lax.digamma(x)), (POS,)),
    ("complex-mul", lambda np_: lambda z: z * (1 + 2j) + np_.conj(z) * z, (cplx(3),)),
]


@pytest.mark.parametrize("k", range(len(VS_JAX)), ids=[v[0] for v in VS_JAX])
def test_jvp_vjp_vs_jax(k, rjax, rjnp):
    _, make, args = VS_JAX[k]
    _vs_jax(make(jnp), make(rjnp), args, rjax)
