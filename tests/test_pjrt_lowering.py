"""Lowering jaxlite's IR to StableHLO (backends/pjrt/lowering.py) and the primitives'
lowering rules.

- A table test: every primitive has a lowering rule or is listed in ``NOT_LOWERED`` with
  its reason; a new primitive without either fails it.
- A primitive without a rule fails at lowering with NotImplementedError naming the
  primitive, the platform and the equation's source line; host callbacks likewise.
- Differential: every program of the rule tables (tests/test_rules.py ``CASES`` and
  ``CONTROL_CASES``) and one-equation programs of each elementwise primitive on every
  dtype's edge values (signed zeros, infinities, NaN, integer extremes, division by zero,
  out-of-range shifts), plus hypothesis-drawn operands and programs at the edges of the
  structured primitives, are lowered, compiled and run on the XLA:CPU PJRT plugin (the
  binding's ``run_mlir``; a sample also through ``jit`` on an xla_cpu device) and
  compared with the interpreter (the primitives' NumPy implementations): bit for bit for
  integers and booleans and for the exactly rounded float operations, within a stated
  tolerance for each transcendental one and for the jaxlite-written algorithms.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.core import primitives
from jaxlite.core.avals import ShapedArray
from jaxlite.ir.interpret import eval_jaxpr_impl
from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from jaxlite.backends.pjrt.lowering import (LoweredModule, dense_text, element_type,
                                            lower_module, mlir_type)

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

BF16 = np.dtype(ml_dtypes.bfloat16)

# ---- running a lowered module on the XLA:CPU plugin ---------------------------------------
#
# The binding's ``run_mlir`` compiles a module text with the xla_cpu plugin's client and
# runs it on host arrays (one-equation programs and whole programs alike); whole programs
# also run through ``jit`` on an xla_cpu device (test_programs_through_jit).

def run_module(text, args):
    from jaxlite.backends.pjrt.client import run_mlir
    return run_mlir(text, [np.asarray(a) for a in args])


# ---- the table ----------------------------------------------------------------------------

_HOST = ("calls back into Python on the host: a compiled PJRT program cannot stop for it "
         "(lowering raises NotImplementedError naming the primitive and the platform; the "
         "backend runs such programs in pieces around it: tests/test_pjrt_pieces.py)")
_MPI = ("crosses MPI processes (jaxlite's CPU runtime); a PJRT program runs on one "
        "process's devices")
NOT_LOWERED = {
    "pure_callback": _HOST,
    "io_callback": _HOST,
    "debug_callback": _HOST,
    "cross_process_all_reduce": _MPI,
    "cross_process_all_gather": _MPI,
    "cross_process_reduce_scatter": _MPI,
    "cross_process_all_to_all": _MPI,
    "cross_process_permute": _MPI,
    "custom_lin": ("exists only between linearisation and transposition of a custom_vjp "
                   "function; evaluating it is a TypeError on every backend"),
    **{name: ("no StableHLO or CHLO operation computes it and jaxlite's implementation is "
              "SciPy's (float64); no jaxlite-written algorithm for it yet") for name in (
        "zeta_grad_x", "dawsn", "spence", "expn", "fresnel_s", "fresnel_c", "hyp1f1",
        "hyp2f1", "hyp1f1_grad", "hyp2f1_grad", "owens_t")},
    **{name: ("no XLA operation (JAX calls each platform's solver library through custom "
              "calls, which cannot be tested here) and no jaxlite-written algorithm yet: an "
              "iterative eigen/singular value solver whose eigenvector signs and order follow "
              "LAPACK's") for name in ("eig", "schur")},
    "kernel": ("the CPU backend's fused kernel, made by its own compiler passes after "
               "lowering would have run; it never appears in a program handed to PJRT"),
}


def test_every_primitive_lowers_or_is_listed():
    missing = [n for n, p in sorted(primitives().items())
               if p.lowering is None and n not in NOT_LOWERED]
    assert not missing, f"primitives with no lowering rule and no reason: {missing}"


def test_not_lowered_list_is_current():
    prims = primitives()
    stale = [n for n in NOT_LOWERED if n not in prims or prims[n].lowering is not None]
    assert not stale, f"NOT_LOWERED names primitives that lower or do not exist: {stale}"


# ---- errors -------------------------------------------------------------------------------

def _one_eqn(prim, avals, params, out_avals=None, source=None):
    """A ClosedJaxpr applying ``prim`` once to invars of ``avals``."""
    invars = [Var(a) for a in avals]
    if out_avals is None:
        out = prim.abstract_eval(*avals, **params)
        out_avals = out if prim.multiple_results else [out]
    outvars = [Var(a) for a in out_avals]
    eqn = JaxprEqn(prim, invars, outvars, params, source=source)
    return ClosedJaxpr(Jaxpr([], invars, [eqn], outvars), [])


def test_missing_rule_names_primitive_platform_and_source(monkeypatch):
    sin = primitives()["sin"]
    monkeypatch.setattr(sin, "lowering", None)
    a = ShapedArray((3,), np.float32)
    closed = _one_eqn(sin, [a], {}, source="model.py:12")
    with pytest.raises(NotImplementedError,
                       match=r"MLIR translation rule for primitive 'sin' not found for "
                             r"platform tpu \(at model.py:12\)"):
        lower_module(closed, platform="tpu")
    with pytest.raises(NotImplementedError, match="'sin' not found for platform xla_cpu"):
        lower_module(jaxlite.make_jaxpr(jnp.sin)(np.ones(3, np.float32)))


@pytest.mark.parametrize("fn", ["debug", "pure", "io"])
def test_host_callbacks_fail_clearly(fn):
    from test_rules import _debug_fn, _io_cb_fn, _pure_cb_fn
    f = {"debug": _debug_fn, "pure": _pure_cb_fn, "io": _io_cb_fn}[fn]
    closed = jaxlite.make_jaxpr(f)(np.ones(3, np.float32))
    name = {"debug": "debug_callback", "pure": "pure_callback", "io": "io_callback"}[fn]
    with pytest.raises(NotImplementedError, match=rf"'{name}'.*platform tpu"):
        lower_module(closed, platform="tpu")


def test_module_shape_and_text():
    f = lambda x, y: (jnp.sin(x) + y, x * 2.0)     # noqa: E731
    closed = jaxlite.make_jaxpr(f)(np.ones((2, 3), np.float32), np.float32(1.0))
    mod = lower_module(closed, name="jit_f")
    assert isinstance(mod, LoweredModule)
    assert mod.in_avals == (ShapedArray((2, 3), np.float32), ShapedArray((), np.float32))
    assert [a.shape for a in mod.out_avals] == [(2, 3), (2, 3)]
    assert mod.text.startswith("module @jit_f attributes {mhlo.num_partitions = 1 : i32")
    assert ("func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> "
            "(tensor<2x3xf32>, tensor<2x3xf32>)") in mod.text
    assert '"stablehlo.sine"' in mod.text and 'loc("sin")' in mod.text
    with pytest.raises(ValueError, match="num_partitions"):
        lower_module(closed, num_partitions=0)


def test_rule_programs_located_in_their_equation():
    """The operations of a rule's own program (lu's loop) are located as parts of the
    user's equation: ``loc("lu/while at model.py:3")``."""
    lu = primitives()["lu"]
    a = ShapedArray((3, 3), np.float32)
    closed = _one_eqn(lu, [a], {}, source="model.py:3")
    text = lower_module(closed).text
    assert 'loc("lu/while at model.py:3")' in text
    assert 'loc("lu/lu_pivots_to_permutation' not in text


def test_types_and_constants():
    assert element_type(np.bool_) == "i1"
    assert element_type(np.uint8) == "ui8"
    assert element_type(BF16) == "bf16"
    assert element_type(ml_dtypes.float8_e4m3fn) == "f8E4M3FN"
    assert element_type(np.complex64) == "complex<f32>"
    assert mlir_type(ShapedArray((2, 3), np.float32)) == "tensor<2x3xf32>"
    assert mlir_type(ShapedArray((), np.int64)) == "tensor<i64>"
    assert dense_text(np.float32(1.0), np.float32) == "dense<0x3F800000>"
    assert dense_text(np.array([1, 2], np.int32), np.int32) == 'dense<"0x0100000002000000">'
    assert dense_text(np.array([True, False]), np.bool_) == "dense<[true, false]>"
    assert dense_text(np.full((2, 2), np.nan, np.float32), np.float32) == "dense<0x7FC00000>"
    assert dense_text(np.zeros((0, 3), np.float32), np.float32) == "dense<0.0>"
    assert dense_text(np.float64(-np.inf), np.float64) == "dense<0xFFF0000000000000>"
    assert dense_text(np.array([1.5, -4.0], ml_dtypes.float4_e2m1fn),
                      ml_dtypes.float4_e2m1fn) == "dense<[1.5, -4.0]>"
    with pytest.raises(TypeError, match="no StableHLO element type"):
        element_type(np.dtype("U3"))


# ---- differential: the rule tables --------------------------------------------------------

# float tolerance (relative, and the same absolute near 0) of each primitive whose lowering
# is not exactly rounded like the implementation: XLA's own approximations of the
# transcendental functions (CHLO decompositions, vectorised polynomial kernels), and sums
# and products accumulated in another order
TOL = {
    "exp": 2e-6, "exp2": 2e-6, "log": 2e-6, "log1p": 2e-6, "expm1": 2e-6, "tanh": 2e-6,
    "logistic": 2e-6, "sin": 2e-6, "cos": 2e-6, "tan": 4e-6, "asin": 4e-6, "acos": 4e-6,
    "atan": 2e-6, "sinh": 4e-6, "cosh": 4e-6, "asinh": 4e-6, "acosh": 4e-6, "atanh": 4e-6,
    "sqrt": 0, "rsqrt": 2e-6, "cbrt": 2e-6, "erf": 4e-6, "erfc": 8e-6, "lgamma": 2e-5,
    "digamma": 2e-5, "pow": 4e-6, "atan2": 2e-6, "erf_inv": 2e-5, "bessel_i0e": 2e-5,
    "bessel_i1e": 2e-5, "zeta": 2e-5, "polygamma": 2e-5,
}
# programs (rows of the rule tables) compared with a tolerance, by the primitive they test
PROGRAM_TOL = 1e-5


def _rows():
    from test_rules import CASES, CONTROL_CASES
    out = []
    for table in (CASES, CONTROL_CASES):
        for name in sorted(table):
            for k, case in enumerate(table[name]):
                out.append(pytest.param(name, k, case, id=f"{name}-{k}"))
    return out


# rows whose lowering refuses a case of its primitive, with the reason it gives
UNSUPPORTED_ROWS = {}


def _compare(got, want, rtol, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    kind = want.dtype.kind
    if want.dtype == BF16 or kind in "fc" or want.dtype in _NARROW_FLOATS:
        g = got.astype(np.complex128 if kind == "c" else np.float64)
        w = want.astype(np.complex128 if kind == "c" else np.float64)
        if rtol == 0:
            same = (g == w) | (np.isnan(g) & np.isnan(w))
            assert same.all(), f"{what}: got {got[~same]} want {want[~same]}"
            if kind != "c":     # signed zeros too
                assert (np.signbit(g[g == 0]) == np.signbit(w[g == 0])).all(), \
                    f"{what}: signs of zeros differ: got {got} want {want}"
            return
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=what)
    else:
        assert np.array_equal(got, want), f"{what}: got {got} want {want}"


_NARROW_FLOATS = {np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e4m3b11fnuz")}


def run_closed(closed, args):
    """``closed`` on ``args``: lowered and run on xla_cpu, and by the interpreter."""
    mod = lower_module(closed)
    got = run_module(mod.text, args)
    want = eval_jaxpr_impl(closed.jaxpr, closed.consts, *[np.asarray(a) for a in args])
    return got, [np.asarray(w) for w in want]


@pytest.mark.parametrize("name, k, case", _rows())
def test_rule_table_programs(name, k, case):
    prim = primitives()[name]
    if prim.lowering is None:
        pytest.skip(f"{name} is not lowered: {NOT_LOWERED[name]}")
    args = [np.asarray(a) for a in case.args]
    closed = jaxlite.make_jaxpr(case.fn)(*args)
    if (name, k) in UNSUPPORTED_ROWS:
        with pytest.raises(NotImplementedError, match=rf"'{name}' cannot be lowered for "
                                                      rf"platform xla_cpu: "
                                                      rf"{UNSUPPORTED_ROWS[name, k]}"):
            lower_module(closed)
        return
    got, want = run_closed(closed, args)
    assert len(got) == len(want)
    if name == "svd" and len(got) == 3:
        # singular vectors up to sign (Jacobi's and LAPACK's differ; for complex vectors a
        # phase): singular values, and the product u s vh, compared
        (gu, gs, gvh), (wu, ws, wvh) = got, want
        np.testing.assert_allclose(gs, ws, rtol=1e-4, atol=1e-4, err_msg="svd program")
        k = gs.shape[-1]
        np.testing.assert_allclose((gu[..., :, :k] * gs[..., None, :]) @ gvh[..., :k, :],
                                   (wu[..., :, :k] * ws[..., None, :]) @ wvh[..., :k, :],
                                   atol=1e-4, err_msg="svd program")
        return
    for g, w in zip(got, want):
        _compare(g, w, PROGRAM_TOL, f"{name} program")


# ---- differential: elementwise primitives on every dtype's edge values -----------------------

_DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16",
           "bfloat16", "float32", "complex64"]


def _special(dt):
    from test_differential import special
    return special(dt)


def _grid(dt):
    from test_differential import grid
    return grid(dt)


_ELEMENTWISE = sorted(n for n, p in primitives().items()
                      if p.kind == "elementwise" and p.lowering is not None
                      and n not in ("select_n", "clamp", "convert_element_type", "copy",
                                    "integer_pow"))


_BINARY = {"add", "add_any", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
           "nextafter", "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge", "shift_left",
           "shift_right_logical", "shift_right_arithmetic", "complex"}


def _arity(name):
    return 2 if name in _BINARY else 1


# complex arithmetic XLA rounds differently from the implementations' formulas
COMPLEX_TOL = {"div": 1e-6, "sqrt": 2e-6, "rsqrt": 2e-6, "integer_pow": 1e-6}


def _tol(name, dt):
    base = TOL.get(name, 0)
    if np.dtype(dt).kind == "c":
        base = max(base, COMPLEX_TOL.get(name, 0))
    if base and (dt in (np.float16, BF16)):
        return max(base, 2 * float(ml_dtypes.finfo(dt).eps))
    return base


def _edge_rows():
    rows = []
    for name in _ELEMENTWISE:
        for dt in _DTYPES:
            rows.append(pytest.param(name, dt, id=f"{name}-{dt}"))
    return rows


@pytest.mark.parametrize("name, dt", _edge_rows())
def test_elementwise_edge_values(name, dt):
    prim = primitives()[name]
    n = _arity(name)
    args = [_special(dt)] if n == 1 else list(_grid(dt))
    if name == "pow" and dt.startswith("complex"):
        args = [a[:40] for a in args]        # fewer cases: complex pow is slow to compile
    avals = [ShapedArray(a.shape, a.dtype) for a in args]
    try:
        prim.abstract_eval(*avals)
    except TypeError:
        pytest.skip(f"{name} does not take {dt}")
    closed = _one_eqn(prim, avals, {})
    got, want = run_closed(closed, args)
    _compare(got[0], want[0], _tol(name, np.dtype(got[0].dtype)), f"{name} on {dt} {args}")


_CONVERT_TO = _DTYPES + ["float8_e4m3fn", "float8_e5m2"]


@pytest.mark.parametrize("src", _DTYPES)
@pytest.mark.parametrize("dst", _CONVERT_TO)
def test_convert_element_type_edge_values(src, dst):
    """Conversions bit for bit: float -> int saturating with NaN -> 0, -> bool as != 0,
    complex -> real keeping the real part, rounding to the narrow float types."""
    prim = primitives()["convert_element_type"]
    x = _special(src)
    new = np.dtype(getattr(ml_dtypes, dst)) if dst.startswith("float8") else (
        BF16 if dst == "bfloat16" else np.dtype(dst))
    closed = _one_eqn(prim, [ShapedArray(x.shape, x.dtype)],
                      {"new_dtype": new, "weak_type": False})
    got, want = run_closed(closed, [x])
    _compare(got[0], want[0], 0, f"convert {src} -> {dst} of {x}")


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, 8, -1, -2, -3])
@pytest.mark.parametrize("dt", ["int32", "uint8", "float32", "bfloat16", "complex64"])
def test_integer_pow_edge_values(dt, y):
    prim = primitives()["integer_pow"]
    x = _special(dt)
    aval = ShapedArray(x.shape, x.dtype)
    try:
        prim.abstract_eval(aval, y=y)
    except TypeError:
        pytest.skip("integers take no negative powers")
    got, want = run_closed(_one_eqn(prim, [aval], {"y": y}), [x])
    _compare(got[0], want[0], 1e-6 if dt == "complex64" else 0, f"integer_pow {dt} {y}")


@pytest.mark.parametrize("dt", ["int8", "uint32", "float16", "float32", "bool"])
def test_select_n_and_clamp_edge_values(dt):
    v = _special(dt)
    a, b = _grid(dt)
    which = np.arange(a.size) % 3
    sel = primitives()["select_n"]
    for w, cases in ((which.astype(np.int32), (a, b, a[::-1].copy())),
                     ((which > 0), (a, b)), (np.array(1, np.int32), (a, b))):
        closed = _one_eqn(sel, [ShapedArray(np.shape(w), w.dtype)] +
                          [ShapedArray(c.shape, c.dtype) for c in cases], {})
        got, want = run_closed(closed, [w, *cases])
        _compare(got[0], want[0], 0, f"select_n {dt}")
    if dt == "bool":
        return
    clamp = primitives()["clamp"]
    for lo, hi in ((v[:1], v[-1:]), (np.sort(v)[2:3], np.sort(v)[-3:-2])):
        lo, hi = lo.reshape(()), hi.reshape(())
        closed = _one_eqn(clamp, [ShapedArray((), v.dtype), ShapedArray(v.shape, v.dtype),
                                  ShapedArray((), v.dtype)], {})
        got, want = run_closed(closed, [lo, v, hi])
        _compare(got[0], want[0], 0, f"clamp {dt} [{lo}, {hi}] of {v}")


# ---- differential: programs at the edges of the structured primitives ------------------------

_R = np.random.default_rng(7)


def _rn(*shape, dtype=np.float32):
    return _R.standard_normal(shape).astype(dtype)


def _threefry(x):
    k = jaxlite.random.PRNGKey(42)
    k1, k2 = jaxlite.random.split(jaxlite.random.fold_in(k, 3))
    return (jaxlite.random.uniform(k1, (5,)) + x, jaxlite.random.normal(k2, (2, 3)),
            jaxlite.random.bits(k, (4,), np.uint32), jaxlite.random.randint(k2, (6,), -5, 9))


def _mlp_step(w1, b1, w2, x, y):
    def loss(w1, b1, w2):
        h = jnp.tanh(x @ w1 + b1)
        return jnp.mean((jaxlite.nn.softmax(h @ w2) - y) ** 2)
    g = jaxlite.grad(loss, argnums=(0, 1, 2))(w1, b1, w2)
    return [p - 0.1 * d for p, d in zip((w1, b1, w2), g)]


_NAN = np.float32(np.nan)
_XN = np.array([[1.0, np.nan, -0.0, 3.0], [0.0, -2.0, np.inf, -np.inf],
                [np.nan, np.nan, 1.0, 1.0]], np.float32)
_IDX = np.array([0, -1, 3, -4, 7, 2], np.int32)      # in range, negative, out of range
_A4 = _rn(4, 4) + 3 * np.eye(4, dtype=np.float32)

PROGRAMS = {
    "threefry": (_threefry, (np.float32(1.0),)),
    "mlp-step": (_mlp_step, (_rn(4, 8), _rn(8), _rn(8, 3), _rn(5, 4), _rn(5, 3))),
    # gather / scatter: every mode with indices in range, negative and out of range
    "gather-promise": (lambda x, i: x[i], (_rn(4, 3), _IDX)),
    "gather-clip": (lambda x, i: x.at[i].get(mode="clip"), (_rn(4, 3), _IDX)),
    "gather-fill": (lambda x, i: x.at[:, i].get(mode="fill", fill_value=-1.0), (_rn(3, 4), _IDX)),
    "gather-fill-nan": (lambda x, i: x.at[i].get(mode="fill"), (_rn(4), _IDX)),
    "gather-int-fill": (lambda x, i: x.at[i].get(mode="fill"),
                        (np.arange(4, dtype=np.int32), _IDX)),
    "gather-mixed": (lambda x, i: x[1:, i, ::-1][..., None], (_rn(3, 4, 5), _IDX[:3] % 4)),
    "gather-static": (lambda x: (x[1], x[:, ::-2], x[-1, None, 1:3], x[..., 4:0:-3], x[::2, 2]),
                      (_rn(4, 5),)),
    "gather-scalar-dynamic": (lambda x, i, j: (x[i], x[j, 1:3], x[:, i, None], x[i, ::-1, j],
                                                x.at[j].get(mode="clip")),
                              (_rn(4, 5, 6), np.int32(-2), np.int32(9))),
    "fori-row-gather": (lambda x: lax.fori_loop(0, 4, lambda i, c: c + x[i], jnp.zeros(3)),
                        (_rn(4, 3),)),
    "gather-static-oob": (lambda x: x.at[7].get(mode="fill", fill_value=2.0), (_rn(4, 3),)),
    "gather-advanced-apart": (lambda x, i: x[i, :, i], (_rn(4, 2, 4), np.array([1, 3], np.int32))),
    "scatter-drop": (lambda x, i, u: x.at[i].set(u), (_rn(4), _IDX, _rn(6))),
    "scatter-clip": (lambda x, i, u: x.at[i].add(u, mode="clip"), (_rn(4), _IDX, _rn(6))),
    "scatter-repeat-add": (lambda x, u: x.at[np.array([1, 1, 2, 1])].add(u),
                           (_rn(4, 2), _rn(4, 2))),
    "scatter-repeat-set": (lambda x, u: x.at[np.array([1, 1, 2, 1])].set(u), (_rn(4), _rn(4))),
    "scatter-max-nan": (lambda x, u: x.at[np.array([0, 1, 2, 0])].max(u), (_XN[0], _XN[1])),
    "scatter-apply": (lambda x: x.at[np.array([0, 2, 2])].apply(jnp.sin), (_rn(4),)),
    "scatter-slice": (lambda x, u: x.at[1:, ::2].multiply(u), (_rn(3, 4), _rn(2, 2))),
    # reductions and scans with NaN, infinities and signed zeros
    "reduce-max-nan": (lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0)), (_XN,)),
    "argmax-nan": (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), (_XN,)),
    "cummax-nan": (lambda x: (lax.cummax(x, 1), lax.cummin(x, 0, reverse=True)), (_XN,)),
    "cumsum-int": (lambda x: (jnp.cumsum(x), lax.cumprod(x, 0, reverse=True)),
                   (np.array([3, -7, 2**30, 2**30, 5], np.int32),)),
    "cumsum-bf16": (lambda x: lax.cumsum(x, 0), (_rn(40).astype(BF16),)),
    "sort-nan": (lambda x: (jnp.sort(x, axis=1), jnp.argsort(x[0])), (_XN,)),
    "sort-complex": (lambda x: jnp.sort(x),
                     (np.array([1 + 2j, 1 - 1j, -3 + 0j, np.nan, 1 + 2j, 0j], np.complex64),)),
    "top-k-ints": (lambda x: jnp.sort(x)[::-1][:3], (np.array([5, -1, 9, 9, 0], np.int8),)),
    # control flow
    "cond-index-clamped": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: -v], x),
                           (np.int32(7), _rn(3))),
    "cond-negative-index": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: -v], x),
                            (np.int32(-2), _rn(3))),
    "while-count": (lambda x: lax.while_loop(lambda c: c[0] < 10,
                                             lambda c: (c[0] + 1, c[1] * 1.5 + 1.0), (0, x)),
                    (_rn(3),)),
    "fori-nested": (lambda x: lax.fori_loop(0, 3, lambda i, c: lax.fori_loop(
        0, i + 1, lambda j, d: d + jnp.float32(j) * c, c), x), (_rn(2),)),
    "scan-reverse": (lambda x: lax.scan(lambda c, a: (c + a, c * a), jnp.zeros(3), x,
                                        reverse=True), (_rn(5, 3),)),
    "scan-empty": (lambda x: lax.scan(lambda c, a: (c + a, c), jnp.zeros(3), x), (_rn(0, 3),)),
    "jit-nested": (jaxlite.jit(lambda x: jaxlite.jit(jnp.exp)(x) * 2), (_rn(3),)),
    # shapes and windows
    "pad-negative": (lambda x: lax.pad(x, np.float32(9), ((-1, 2, 1), (1, -2, 0))), (_rn(3, 4),)),
    "dynamic-slice-oob": (lambda x, i: (lax.dynamic_slice(x, (i, i), (2, 2)),
                                        lax.dynamic_update_slice(x, jnp.ones((2, 2)), (i, -i))),
                          (_rn(4, 4), np.int32(9))),
    "conv-strided-dilated": (lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), ((1, 2), (0, 1)), lhs_dilation=(1, 2), rhs_dilation=(2, 1)),
        (_rn(2, 3, 7, 6), _rn(4, 3, 2, 3))),
    "conv-groups": (lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "SAME", feature_group_count=2), (_rn(1, 4, 9), _rn(6, 2, 3))),
    "conv-bf16": (lambda x, w: lax.conv(x, w, (1, 1), "SAME"),
                  (_rn(1, 2, 5, 5).astype(BF16), _rn(3, 2, 3, 3).astype(BF16))),
    "conv-int8-pref": (lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "VALID", preferred_element_type=np.int32),
        (np.full((1, 2, 30), 100, np.int8), np.full((2, 2, 3), 100, np.int8))),
    "conv-nhwc": (lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (_rn(2, 5, 5, 3), _rn(3, 3, 3, 4))),
    "pool-max-padded": (lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 3), (2, 1),
                                                    ((1, 1), (0, 2))), (_XN,)),
    "dot-int8-pref": (lambda a, b: lax.dot(a, b, preferred_element_type=np.int32),
                      (np.full((2, 40), 100, np.int8), np.full((40, 3), 100, np.int8))),
    "dot-bf16": (lambda a, b: a @ b, (_rn(3, 5).astype(BF16), _rn(5, 2).astype(BF16))),
    "fft-roundtrip": (lambda x: jnp.fft.irfft(jnp.fft.rfft(x)), (_rn(4, 8),)),
    # linear algebra
    "lu-pivoting": (lambda a: lax.linalg.lu(a), (_rn(5, 5),)),
    "lu-batched-wide": (lambda a: lax.linalg.lu(a), (_rn(2, 3, 5),)),
    "lu-singular": (lambda a: lax.linalg.lu(a), (np.array([[1, 2, 3], [2, 4, 6], [0, 0, 1]],
                                                          np.float32),)),
    "lu-complex": (lambda a: lax.linalg.lu(a), (_rn(3, 3) + 1j * _rn(3, 3),)),
    "solve": (lambda a, b: jnp.linalg.solve(a, b), (_A4, _rn(4, 2))),
    "qr-tall-full": (lambda a: lax.linalg.qr(a), (_rn(5, 3),)),
    "qr-wide-reduced": (lambda a: lax.linalg.qr(a, full_matrices=False), (_rn(2, 3, 5),)),
    "qr-complex": (lambda a: lax.linalg.qr(a), (_rn(4, 3) + 1j * _rn(4, 3),)),
    "qr-zero-column": (lambda a: lax.linalg.qr(a), (np.array([[0, 1], [0, 2], [0, 3]],
                                                             np.float32),)),
    "geqrf-householder": (lambda a: lax.linalg.householder_product(*lax.linalg._geqrf(a)),
                          (_rn(5, 3),)),
    "ormqr-all": (lambda a, c, d: [lax.linalg.ormqr(*lax.linalg._geqrf(a), x, left=l,
                                                    transpose=t)
                                   for x, l in ((c, True), (d, False)) for t in (False, True)],
                  (_rn(4, 3), _rn(4, 2), _rn(2, 4))),
    "ormqr-complex": (lambda a, c: [lax.linalg.ormqr(*lax.linalg._geqrf(a), c, transpose=t)
                                    for t in (False, True)],
                      (_rn(3, 3) + 1j * _rn(3, 3), _rn(3, 2) + 1j * _rn(3, 2))),
    "symmetric-product": (lambda a, c: [lax.linalg.symmetric_product(a, c, alpha=a0, beta=b0,
                                                                     symmetrize_output=sy)
                                        for a0, b0, sy in ((1.0, 0.0, False), (2.0, -0.5, True))],
                          (_rn(2, 3, 2), _rn(2, 3, 3))),
    "cholesky-update": (lambda r, w: lax.linalg.cholesky_update(r, w),
                        (np.triu(_rn(4, 4)) + 3 * np.eye(4, dtype=np.float32), _rn(4))),
    "tridiagonal-solve": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
                          (_rn(2, 5), _rn(2, 5), _rn(2, 5), _rn(2, 5, 3))),
    "tridiagonal-singular": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
                             (np.zeros(3, np.float32), np.array([1, 0, 1], np.float32),
                              np.zeros(3, np.float32), _rn(3, 2))),
    "tridiagonal-one": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
                        (_rn(1), np.array([0.0], np.float32), _rn(1), _rn(1, 2))),
    "hessenberg": (lambda a: lax.linalg.hessenberg(a), (_rn(2, 5, 5),)),
    "hessenberg-complex": (lambda a: lax.linalg.hessenberg(a), (_rn(4, 4) + 1j * _rn(4, 4),)),
    "tridiagonal-lower": (lambda a: lax.linalg.tridiagonal(a, lower=True), (_rn(2, 5, 5),)),
    "tridiagonal-upper": (lambda a: lax.linalg.tridiagonal(a, lower=False), (_rn(5, 5),)),
    "tridiagonal-complex": (lambda a: [lax.linalg.tridiagonal(a, lower=lo) for lo in (True, False)],
                            (_rn(4, 4) + 1j * _rn(4, 4),)),
    "cholesky-not-pd": (lambda a: lax.linalg.cholesky(a), (-np.eye(3, dtype=np.float32),)),
    "cholesky-batched": (lambda a: lax.linalg.cholesky(a @ jnp.swapaxes(a, -1, -2)
                                                       + 3 * jnp.eye(3)),
                         (_rn(2, 3, 3),)),
}


def _sign_fixed(v):
    """Eigen/singular vectors (columns of ``v``) with each column's largest-magnitude entry
    made positive: Jacobi's vectors may have the opposite sign of LAPACK's."""
    v = np.asarray(v, np.float64)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    return v * np.sign(np.take_along_axis(v, k, axis=-2))


@pytest.mark.parametrize("sym", [_rn(4, 4), _rn(2, 5, 5), np.diag([3.0, -1.0, 2.0, 2.0]).astype(
    np.float32), np.zeros((3, 3), np.float32), _rn(1, 1)], ids=["4x4", "batch", "diag-repeated",
                                                                "zero", "1x1"])
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_jacobi(sym, lower):
    a = np.asarray(sym)      # not symmetric: only the triangle ``lower`` names is read
    closed = jaxlite.make_jaxpr(lambda m: lax.linalg.eigh(m, lower=lower,
                                                          symmetrize_input=False))(a)
    (gv, gw), (wv, ww) = run_closed(closed, [a])
    np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-5 * max(1, np.abs(ww).max()))
    assert gv.dtype == wv.dtype and gv.shape == wv.shape
    # eigenvectors of distinct eigenvalues up to sign; every basis: A v = v diag(w)
    full = np.asarray(a, np.float64)
    sym_a = np.where(np.tril(np.ones(a.shape[-2:], bool)), full,
                     np.swapaxes(full, -1, -2)) if lower else np.where(
        np.triu(np.ones(a.shape[-2:], bool)), full, np.swapaxes(full, -1, -2))
    scale = max(1, np.abs(ww).max())
    np.testing.assert_allclose(sym_a @ gv, gv * gw[..., None, :], atol=2e-5 * scale)
    np.testing.assert_allclose(np.swapaxes(gv, -1, -2) @ gv, np.broadcast_to(np.eye(a.shape[-1]),
                                                                             gv.shape), atol=2e-6)
    if np.all(np.diff(ww, axis=-1) > 1e-3):
        np.testing.assert_allclose(_sign_fixed(gv), _sign_fixed(wv), atol=2e-5)


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("a", [_rn(4, 3), _rn(3, 5), _rn(2, 4, 4),
                               np.array([[1, 2], [2, 4], [0, 0]], np.float32),
                               np.zeros((2, 3), np.float32)],
                         ids=["tall", "wide", "batch", "rank-1", "zero"])
@pytest.mark.parametrize("full", [True, False])
def test_svd_jacobi(a, full):
    closed = jaxlite.make_jaxpr(lambda m: lax.linalg.svd(m, full_matrices=full))(a)
    (gu, gs, gvh), (wu, ws, wvh) = run_closed(closed, [a])
    for g, w in ((gu, wu), (gs, ws), (gvh, wvh)):
        assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(gs, ws, rtol=1e-5, atol=1e-5)
    k = min(a.shape[-2:])
    rebuilt = (gu[..., :, :k] * gs[..., None, :]) @ gvh[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, atol=3e-5)
    for q in (gu, np.swapaxes(gvh, -1, -2)):
        qtq = np.swapaxes(q, -1, -2) @ q
        np.testing.assert_allclose(qtq, np.broadcast_to(np.eye(q.shape[-1]), qtq.shape),
                                   atol=3e-6)
    closed = jaxlite.make_jaxpr(lambda m: lax.linalg.svd(m, compute_uv=False))(a)
    (gs2,), (ws2,) = run_closed(closed, [a])
    np.testing.assert_allclose(gs2, ws2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_edge_programs(name):
    fn, args = PROGRAMS[name]
    closed = jaxlite.make_jaxpr(fn)(*args)
    got, want = run_closed(closed, list(args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _compare(g, w, 1e-5 if name not in ("cumsum-bf16", "dot-bf16") else 1e-2,
                 f"{name}")


# ---- differential: hypothesis-drawn operands ------------------------------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_EXACT_F32 = ["add", "sub", "mul", "div", "max", "min", "rem", "nextafter", "sqrt", "floor",
              "ceil", "round", "sign", "abs", "neg", "eq", "lt", "ge", "is_finite"]
_INT32 = ["add", "sub", "mul", "div", "rem", "max", "min", "shift_left",
          "shift_right_logical", "shift_right_arithmetic", "and", "xor", "population_count",
          "not", "sign", "abs", "lt", "ne"]
_APPROX_F32 = ["exp", "log1p", "tanh", "sin", "atan2", "pow", "erf", "logistic"]

# no subnormal operands: XLA:CPU runs programs with subnormals flushed to zero (as real
# JAX on the CPU does), the interpreter keeps them (test_subnormals_flush_on_xla_cpu)
_f32 = hnp.arrays(np.float32, (6,), elements=st.floats(width=32, allow_nan=True,
                                                         allow_infinity=True,
                                                         allow_subnormal=False))
_i32 = hnp.arrays(np.int32, (6,), elements=st.integers(-2**31, 2**31 - 1)
                  | st.sampled_from([0, -1, 1, 31, 32, -2**31]))
_SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])


def _flushed(x):
    """``x`` with subnormal float32 values as XLA:CPU leaves them: signed zeros."""
    if x.dtype != np.float32:
        return x
    tiny = np.abs(x) < np.finfo(np.float32).tiny
    return np.where(tiny & (x != 0), np.copysign(np.float32(0), x), x).astype(x.dtype)


def _check_drawn(name, args, tol):
    prim = primitives()[name]
    args = args[:_arity(name)]
    closed = _one_eqn(prim, [ShapedArray(a.shape, a.dtype) for a in args], {})
    got, want = run_closed(closed, args)
    # (nextafter works on the bit patterns: its subnormal results are kept)
    want = want[0] if name == "nextafter" else _flushed(want[0])
    _compare(got[0], want, tol, f"{name} on {args}")


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("name", _EXACT_F32)
@_SETTINGS
@given(x=_f32, y=_f32)
def test_drawn_float32_exact(name, x, y):
    _check_drawn(name, [x, y], 0)


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("name", _INT32)
@_SETTINGS
@given(x=_i32, y=_i32)
def test_drawn_int32(name, x, y):
    _check_drawn(name, [x, y], 0)


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("name", _APPROX_F32)
@_SETTINGS
@given(x=hnp.arrays(np.float32, (6,), elements=st.floats(-30, 30, width=32)),
       y=hnp.arrays(np.float32, (6,), elements=st.floats(0.25, 4, width=32)))
def test_drawn_float32_transcendental(name, x, y):
    if name == "pow":
        x = np.abs(x) + np.float32(0.5)
    _check_drawn(name, [x, y], TOL[name])


def test_subnormals_flush_on_xla_cpu():
    """A known difference, stated: XLA:CPU flushes subnormal operands and results to zero
    (so does real JAX on the CPU); the interpreter computes them as NumPy does."""
    x = np.array([1e-45, -1e-42, 2e-38, 1.0], np.float32)
    closed = _one_eqn(primitives()["mul"], [ShapedArray((4,), np.float32)] * 2, {})
    got, want = run_closed(closed, [x, np.ones(4, np.float32)])
    np.testing.assert_array_equal(want[0], x)
    np.testing.assert_array_equal(got[0], np.array([0, -0.0, 2e-38, 1], np.float32))


_DT64 = ["int64", "uint64", "float64", "complex128"]
_OPS64 = ["add", "sub", "mul", "div", "rem", "max", "min", "shift_left",
          "shift_right_logical", "shift_right_arithmetic", "population_count", "eq", "lt",
          "sign", "abs", "neg", "floor", "round", "sqrt", "exp", "log", "nextafter",
          "is_finite", "xor", "not"]


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("dt", _DT64)
@pytest.mark.parametrize("name", _OPS64)
def test_elementwise_edge_values_x64(x64, name, dt):
    """The 64-bit types (i64, ui64, f64, complex<f64>) under jax_enable_x64."""
    prim = primitives()[name]
    args = [_special(dt)] if _arity(name) == 1 else list(_grid(dt))
    avals = [ShapedArray(a.shape, a.dtype) for a in args]
    try:
        prim.abstract_eval(*avals)
    except TypeError:
        pytest.skip(f"{name} does not take {dt}")
    closed = _one_eqn(prim, avals, {})
    got, want = run_closed(closed, args)
    tol = {"exp": 1e-15, "log": 1e-15}.get(name, 0)
    if dt == "complex128" and name in ("div", "sqrt", "exp", "log"):
        tol = 1e-14
    _compare(got[0], want[0], tol, f"{name} on {dt}")


def test_static_index_lowers_to_slice():
    """A static index (slices, new axes, in-range integers) is a slice, not a gather."""
    text = lower_module(jaxlite.make_jaxpr(lambda x: x[1, ::-2, None])(_rn(3, 5))).text
    assert '"stablehlo.slice"' in text and '"stablehlo.reverse"' in text
    assert "stablehlo.gather" not in text
    text = lower_module(jaxlite.make_jaxpr(lambda x, i: x[i])(_rn(3, 2), np.int32(1))).text
    assert "stablehlo.dynamic_slice" in text and "stablehlo.gather" not in text
    text = lower_module(jaxlite.make_jaxpr(lambda x, i: x[i])(_rn(3), _IDX)).text
    assert "stablehlo.gather" in text


@pytest.mark.parametrize("name, x, rtol", [
    ("bessel_i0e", np.concatenate([np.linspace(-40, 40, 161), [0, 1e-3, 19.99, 20.01, 1e4,
                                                              np.inf, -np.inf, np.nan]]),
     3e-6),
    ("ndtri", np.concatenate([np.linspace(0, 1, 201), [2e-38, 1e-30, 1e-20, 1e-10, 1e-5,
                                                       0.07, 0.08, 0.93, 1 - 1e-7, -0.5,
                                                       1.5, np.nan]]), 3e-6),
])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_special_programs(name, x, rtol, dt):
    """The special functions written as jaxlite programs, against the implementation
    (SciPy in float64), over their whole range."""
    x = np.asarray(x, dt)
    closed = _one_eqn(primitives()[name], [ShapedArray(x.shape, x.dtype)], {})
    got, want = run_closed(closed, [x])
    tol = rtol if dt == np.float32 else 2e-3
    _compare(got[0], want[0], tol, f"{name} on {x}")


_A = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0, 0.0, np.inf, -1.0, np.nan, 3.0, 3.0, 3.0],
              np.float32)
_X = np.array([0.0, 0.3, 1.0, 2.0, 50.0, 1.0, 2.0, 0.5, 4.0, 1.0, 0.0, np.inf, 3.0],
              np.float32)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_program(name):
    """igamma / igammac written as jaxlite programs (series and continued fraction in
    float32 with float32's lgamma): within 1e-4 of SciPy's float64 values, the edges as
    the implementation."""
    a, x = np.meshgrid(_A, _X)
    a, x = a.ravel(), x.ravel()
    closed = _one_eqn(primitives()[name], [ShapedArray(a.shape, a.dtype)] * 2, {})
    got, want = run_closed(closed, [a, x])
    _compare(got[0], want[0], 1e-4, f"{name} on {list(zip(a, x))}")


@pytest.mark.parametrize("lt, rt, pet", [
    (BF16, BF16, None), (np.float16, np.float16, np.float32), (BF16, BF16, np.float32),
    (np.int8, np.int8, np.int32), (np.int8, np.int8, None), (np.uint8, np.int8, None),
    (np.float32, np.float32, BF16), (np.bool_, np.bool_, None), (np.int32, np.int32, np.float32),
    (np.float32, np.float32, np.complex64), (np.int8, BF16, None)])
def test_dot_general_types(lt, rt, pet):
    """dot_general's operand and accumulation types as the implementation's, bit for bit
    (narrow operands go to XLA as they are, the result type wider)."""
    a = (_R.standard_normal((3, 40)) * 4).astype(lt)
    b = (_R.standard_normal((40, 2)) * 4).astype(rt)
    try:
        closed = jaxlite.make_jaxpr(lambda x, y: lax.dot(x, y, preferred_element_type=pet))(a, b)
    except TypeError:
        pytest.skip("not a valid combination")
    got, want = run_closed(closed, [a, b])
    kind = np.dtype(want[0].dtype).kind
    if kind in "iub":
        _compare(got[0], want[0], 0, "dot")
    elif kind == "c":
        # float32 operands asked for complex64: the sides may add the 40 products in another
        # order, so the bound is float32 ulps of the terms (|a| @ |b|), not of a cancelling
        # sum (off by 4e-6 at rtol 1e-6 for some input draws)
        assert got[0].dtype == want[0].dtype
        bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-6 * float(bound.max()))
    else:
        _compare(got[0], want[0], 1e-6, "dot")
    if lt == rt == BF16:
        assert "(tensor<3x40xbf16>, tensor<40x2xbf16>) -> tensor<3x2xf32>" in \
            lower_module(closed).text


def _herm(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eigh_svd_complex(shape):
    """Hermitian eigh and complex SVD: each pair's phase taken out, then the real rotation."""
    a = (_rn(*shape) + 1j * _rn(*shape)).astype(np.complex64)
    h = a + _herm(a)
    closed = jaxlite.make_jaxpr(lambda m: lax.linalg.eigh(m))(h)
    (gv, gw), (wv, ww) = run_closed(closed, [h])
    assert gv.dtype == np.complex64 and gw.dtype == np.float32
    np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h @ gv, gv * gw[..., None, :], atol=5e-5)
    np.testing.assert_allclose(_herm(gv) @ gv, np.broadcast_to(np.eye(shape[-1]), gv.shape),
                               atol=3e-6)
    b = a[..., :, :-1]                 # tall; its transpose wide
    for m in (b, np.swapaxes(b, -1, -2)):
        closed = jaxlite.make_jaxpr(lambda z: lax.linalg.svd(z, full_matrices=True))(m)
        (gu, gs, gvh), (wu, ws, wvh) = run_closed(closed, [m])
        np.testing.assert_allclose(gs, ws, rtol=1e-5, atol=1e-5)
        k = min(m.shape[-2:])
        np.testing.assert_allclose((gu[..., :, :k] * gs[..., None, :]) @ gvh[..., :k, :], m,
                                   atol=5e-5)
        for q in (gu, _herm(gvh)):
            qhq = _herm(q) @ q
            np.testing.assert_allclose(qhq, np.broadcast_to(np.eye(q.shape[-1]), qhq.shape),
                                       atol=3e-6)


def test_betainc_program():
    """regularized_incomplete_beta written as a jaxlite program (continued fraction in
    float32): within 1e-4 of SciPy's float64 values; its edges as SciPy's."""
    vals_a = np.array([0.5, 1.0, 2.5, 10.0, 0.0, -1.0, np.nan], np.float32)
    vals_x = np.array([0.0, 0.01, 0.3, 0.5, 0.9, 1.0, -0.1, 1.1, np.nan], np.float32)
    a, b, x = (v.ravel() for v in np.meshgrid(vals_a, vals_a[:5], vals_x))
    closed = _one_eqn(primitives()["regularized_incomplete_beta"],
                      [ShapedArray(a.shape, a.dtype)] * 3, {})
    got, want = run_closed(closed, [a, b, x])
    _compare(got[0], want[0], 1e-4, "betainc")


_PROGRAMS_X64 = {
    "lu": (lambda a: lax.linalg.lu(a), lambda: (_rn(4, 4, dtype=np.float64),)),
    "qr": (lambda a: lax.linalg.qr(a), lambda: (_rn(4, 3, dtype=np.float64),)),
    "solve": (lambda a, b: jnp.linalg.solve(a, b),
              lambda: (_A4.astype(np.float64), _rn(4, 2, dtype=np.float64))),
    "eigvalsh": (lambda a: jnp.linalg.eigvalsh(a + a.T), lambda: (_rn(5, 5, dtype=np.float64),)),
    "svdvals": (lambda a: jnp.linalg.svd(a, compute_uv=False),
                lambda: (_rn(5, 3, dtype=np.float64),)),
    "specials": (lambda p, x: (lax.igamma(x, p + 0.5), lax.bessel_i0e(x),
                               jaxlite.scipy.special.ndtri(p)),
                 lambda: (np.linspace(0.01, 0.99, 7), np.linspace(0.1, 30.0, 7))),
    "scan-i64": (lambda x: lax.scan(lambda c, a: (c + a, c * a), np.int64(0), x),
                 lambda: (np.arange(-3, 5, dtype=np.int64) * 2**40,)),
}


@pytest.mark.parametrize("name", sorted(_PROGRAMS_X64))
def test_programs_x64(x64, name):
    """The jaxlite-written algorithms and loops in float64/int64 (jax_enable_x64)."""
    fn, make = _PROGRAMS_X64[name]
    args = make()
    closed = jaxlite.make_jaxpr(fn)(*args)
    got, want = run_closed(closed, list(args))
    for g, w in zip(got, want):
        _compare(g, w, 1e-12 if name != "specials" else 1e-9, name)


@pytest.mark.parametrize("name", ["threefry", "mlp-step", "scatter-drop", "sort-nan",
                                  "while-count", "scan-reverse", "cond-index-clamped",
                                  "lu-pivoting", "qr-tall-full", "conv-groups", "solve"])
def test_programs_through_jit(name):
    """Programs run by ``jit`` on an xla_cpu device (their arguments placed there), the
    results left on it, against the interpreter."""
    fn, args = PROGRAMS[name]
    dev = jaxlite.devices("xla_cpu")[0]
    placed = [jaxlite.device_put(a, dev) for a in args]
    outs = jaxlite.jit(fn)(*placed)
    leaves = jaxlite.tree_util.tree_leaves(outs)
    assert all(o.devices() == {dev} for o in leaves)
    closed = jaxlite.make_jaxpr(fn)(*args)
    want = eval_jaxpr_impl(closed.jaxpr, closed.consts, *[np.asarray(a) for a in args])
    assert len(leaves) == len(want)
    for g, w in zip(leaves, want):
        _compare(np.asarray(g), np.asarray(w), 1e-5, name)


@pytest.mark.parametrize("name", ["igamma_grad_a", "random_gamma_grad"])
def test_gamma_derivative_programs(name):
    """d/da of igamma and the Gamma sample's derivative: forward-mode differentiation of
    the igamma program through its loops, within 2e-5 of the implementation (float64)."""
    a = np.array([0.5, 1.0, 2.5, 7.0, 30.0, 1.0, 3.0, 0.0, -1, np.nan, 2.0, 0.2], np.float32)
    x = np.array([0.3, 1.0, 2.0, 10.0, 25.0, 0.0, np.inf, 1.0, 1.0, 1.0, 1e-3, 4.0],
                 np.float32)
    closed = _one_eqn(primitives()[name], [ShapedArray(a.shape, a.dtype)] * 2, {})
    got, want = run_closed(closed, [a, x])
    _compare(got[0], want[0], 2e-5, name)


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
def test_gamma_sample_gradient_on_xla_cpu():
    """jax.random.gamma's reparameterised gradient, jitted on an xla_cpu device."""
    dev = jaxlite.devices("xla_cpu")[0]
    k = jaxlite.random.PRNGKey(5)
    f = jaxlite.jit(jaxlite.grad(lambda a: jnp.sum(jaxlite.random.gamma(k, a, (4,)))))
    a = np.float32(2.5)
    got = f(jaxlite.device_put(a, dev))
    want = jaxlite.jit(jaxlite.grad(lambda a: jnp.sum(jaxlite.random.gamma(k, a, (4,)))))(a)
    assert got.devices() == {dev}
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5)


_XS = np.concatenate([np.linspace(-12, 12, 97), np.geomspace(1e-6, 80, 60),
                      -np.geomspace(1e-6, 80, 30),
                      [0, np.inf, -np.inf, np.nan, 3.99, 4.01, 0.999, 1.001, 39.9, 40.1]])


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
@pytest.mark.parametrize("name", ["erfcx", "exp1", "expi", "sici_si", "sici_ci"])
def test_exponential_special_programs(name):
    """erfcx, E1, Ei, Si and Ci written as jaxlite programs (series, continued fractions
    and asymptotic expansions by range), against SciPy's float64 values, edges
    included."""
    x = _XS.astype(np.float32)
    closed = _one_eqn(primitives()[name], [ShapedArray(x.shape, x.dtype)], {})
    got, want = run_closed(closed, [x])
    _compare(got[0], want[0], 1e-5, name)


def test_accelerators_lower_float_max_min_to_xlas_own_ops():
    """On a TPU or GPU float max/min (elementwise, and in reductions: softmax, logsumexp)
    lower to XLA's own ``maximum``/``minimum``, as JAX emits them there; XLA:CPU keeps the
    compares and selects that fix its NaN and signed-zero results.  The accelerator module
    computes the same values (run here on XLA:CPU) wherever no zero ties."""
    def f(x, y):
        return jnp.maximum(x, y), jnp.minimum(x, y), jnp.max(x, axis=1), jnp.min(y, axis=0)
    x, y = _rn(4, 5), _rn(4, 5)
    closed = jaxlite.make_jaxpr(f)(x, y)
    tpu = lower_module(closed, platform="tpu").text
    cpu = lower_module(closed).text
    assert '"stablehlo.maximum"' in tpu and '"stablehlo.minimum"' in tpu
    assert "bitcast_convert" not in tpu and "select" not in tpu
    assert '"stablehlo.maximum"' not in cpu and "bitcast_convert" in cpu
    want = [np.maximum(x, y), np.minimum(x, y), x.max(1), y.min(0)]
    for text in (tpu, cpu):
        got = run_module(text, [x, y])
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    # integers and booleans lower the same way everywhere
    closed = jaxlite.make_jaxpr(lambda a, b: (jnp.maximum(a, b), a & b))(
        np.arange(3, dtype=np.int32), np.ones(3, np.bool_))
    assert lower_module(closed, platform="tpu").text.count("stablehlo.maximum") == 1


def test_gather_scatter_positions_int32_unless_an_index_needs_int64():
    """Index positions are int32, as JAX's (a TPU emulates 64-bit integers), when the
    index dtype and the dimensions allow; an int64 or uint32 index array keeps int64
    positions, so an index beyond int32 is clamped (or filled), never wrapped into range."""
    x = _rn(5, 7)
    i32 = np.array([[0], [4], [-1]], np.int32)
    closed = jaxlite.make_jaxpr(lambda a, i: jnp.take_along_axis(a, i, axis=0))(x, i32)
    text = lower_module(closed).text
    assert "tensor<3x7x2xi32>" in text and "xi64>" not in text
    np.testing.assert_array_equal(run_module(text, [x, i32])[0],
                                  np.take_along_axis(x, i32 % 5, axis=0))
    with jaxlite.enable_x64():
        big = np.array([2 ** 32 + 1, 3, -(2 ** 32)], np.int64)    # wrap to 1, 3, 0 in int32
        f = lambda a, i: (a.at[i].get(mode="fill", fill_value=-1.0),  # noqa: E731
                          a.at[i].get(mode="clip"), a.at[i].add(1.0, mode="drop"))
        closed = jaxlite.make_jaxpr(f)(x[0], big)
        text = lower_module(closed).text
        assert "xi64>" in text
        got = run_module(text, [x[0], big])
        want = [np.array([-1.0, x[0, 3], -1.0], np.float32),
                x[0][[6, 3, 0]], x[0] + np.isin(np.arange(7), [3])]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        u32 = np.array([2 ** 32 - 1, 2], np.uint32)
        closed = jaxlite.make_jaxpr(lambda a, i: a.at[i].get(mode="clip"))(x[0], u32)
        text = lower_module(closed).text
        assert "xi64>" in text
        np.testing.assert_array_equal(run_module(text, [x[0], u32])[0], x[0][[6, 2]])


@pytest.mark.parametrize("pads,ld", [(((-1, 1), (0, 0)), (1, 1)), (((1, -2), (-1, 2)), (1, 1)),
                                     (((-2, 1), (1, -1)), (2, 3)), (((0, 0), (0, 0)), (2, 1))])
def test_conv_with_negative_padding_cuts_as_on_the_cpu(pads, ld):
    """XLA:CPU's convolution reads outside its input for a negative padding (real JAX's
    jit of a conv with padding (-1, 1) returned 6.3e30): the rule pads and cuts the input
    first, so the result is the CPU platform's (the explicit pad-then-cut)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 2)).astype(np.float32)

    def f(a, b):
        return lax.conv_general_dilated(a, b, (1, 2), pads, lhs_dilation=ld)
    want = np.asarray(f(x, w))
    closed = jaxlite.make_jaxpr(f)(x, w)
    text = lower_module(closed).text
    got = run_module(text, [x, w])[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # the gradient's convolutions (their paddings are often negative) too
    g = jaxlite.grad(lambda a, b: jnp.sum(f(a, b) ** 2), argnums=(0, 1))
    gw = [np.asarray(v) for v in g(x, w)]
    gt = run_module(lower_module(jaxlite.make_jaxpr(g)(x, w)).text, [x, w])
    for a, b in zip(gt, gw):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
