"""Random programs (tests/fuzz_programs.py) on the XLA:CPU PJRT platform: ``jit`` on an
``xla_cpu`` device agrees with the interpreter.

A hypothesis property: for every seed it draws, the random program of that seed (one to
three independent expression DAGs over random shapes and every dtype: arithmetic,
comparisons, select/clamp, conversions, integer division and shifts at XLA's edge rules,
overflow, broadcasts and reductions; inputs carrying NaN, infinities, -0.0, subnormals and
integer extremes) is run by ``jaxlite.jit`` with its arguments on an xla_cpu device
(lowered to StableHLO and compiled by the plugin) and by the interpreter, and the outputs
compared with ``fuzz_programs.compare``: dtypes and shapes always, integers and booleans bit
for bit, floats bit for bit unless they went through a transcendental function (then
within a few ulps) or are float sums (against the sum of magnitudes).

XLA:CPU flushes float32 and float64 subnormals to zero, inputs and results of every
operation (the processor's DAZ/FTZ modes); the interpreter keeps them.  A mismatch is
accepted when the interpreter, rerun with every equation's float32/float64 operands and
results flushed the same way (``eval_flushed``), agrees with the platform: the deliberate
difference tests/test_differential_pjrt.py lists first.  ``test_subnormals_are_flushed``
shows that it exists.

A modest number of examples in ``make test``; more under the slow marker (``make
test-slow``).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jaxlite
from jaxlite.config import config
from jaxlite.ir.interpret import _evaluate, eval_jaxpr, eval_jaxpr_impl, exact

import fuzz_programs as fp

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

# dtypes XLA:CPU computes in directly (float16 and bfloat16 are computed in float32 and
# rounded back, so their subnormals survive)
_FLUSHED = (np.dtype(np.float32), np.dtype(np.float64))


def _flush(x):
    x = np.asarray(x)
    if x.dtype not in _FLUSHED:
        return x
    small = np.abs(x) < np.finfo(x.dtype).tiny
    if not small.any():
        return x
    return np.where(small, np.copysign(np.zeros((), x.dtype), x), x).astype(x.dtype)


# operations that move values without float arithmetic, which XLA leaves subnormals in
# alone: broadcasts, selects, and nextafter (integer arithmetic on the bit patterns:
# nextafter(0, -1) is the subnormal -5e-324 on both)
_MOVES = {"broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "select_n",
          "copy", "rev", "slice", "concatenate", "nextafter"}


def eval_flushed(closed, args):
    """The interpreter's outputs of ``closed`` on ``args`` with XLA:CPU's subnormal
    handling: every arithmetic equation's float32/float64 operands and results flushed to
    zero (values only moved, by broadcasts and selects, keep theirs)."""
    def apply(eqn, vals):
        if eqn.primitive.name in _MOVES:
            return exact(eqn.primitive.impl(*vals, **eqn.params), eqn.outvars[0].aval.dtype)
        out = eqn.primitive.impl(*[_flush(v) for v in vals], **eqn.params)
        return _flush(exact(out, eqn.outvars[0].aval.dtype))
    with np.errstate(all="ignore"):
        return [np.asarray(o) for o in _evaluate(closed.jaxpr, closed.consts,
                                                 [np.asarray(a) for a in args], apply)]


def run_pjrt(prog, inputs):
    """The outputs of ``prog`` on ``inputs`` run by ``jit`` on the first xla_cpu device,
    as NumPy arrays (each checked to live on that device first)."""
    dev = jaxlite.devices("xla_cpu")[0]
    closed = prog.closed
    with config._override("jax_enable_x64", True):
        placed = [jaxlite.device_put(a, dev) for a in inputs]
        outs = jaxlite.jit(lambda *a: eval_jaxpr(closed.jaxpr, closed.consts, *a))(*placed)
        assert all(o.devices() == {dev} for o in outs), [o.devices() for o in outs]
        return [np.asarray(o) for o in outs]


def run_interpreter(prog, inputs):
    """The outputs of ``prog`` on ``inputs`` by the interpreter (the primitives' NumPy
    implementations)."""
    with np.errstate(all="ignore"):
        return [np.asarray(o) for o in eval_jaxpr_impl(
            prog.closed.jaxpr, prog.closed.consts, *[np.asarray(a) for a in inputs])]


def mismatches(prog, want, got):
    """``fuzz_programs.check_program``'s comparison of ``got`` (the platform) against
    ``want`` (the interpreter): the list of mismatches."""
    if len(want) != len(got):
        return [f"{len(got)} outputs, want {len(want)}"]
    errs = []
    for i, (w, g, c) in enumerate(zip(want, got, prog.classes)):
        extra = None
        if c[0] == "scale":
            continue
        if c[0] == "sum":
            extra = (np.abs(want[c[1]]).astype(np.float64), c[2])
        elif c[0] == "approx":
            extra = c[1]
        e = fp.compare(w, g, c[0], extra)
        if e:
            errs.append(f"output {i}: {e}")
    return errs


def check_program_pjrt(prog):
    """The mismatches between the xla_cpu platform and the interpreter, those explained
    by subnormal flushing left out (empty: they agree).  Both run on the program's inputs
    with float32/float64 subnormals flushed: what XLA makes of a subnormal operand is not
    even consistent flushing (its atan2 of two equal subnormals is pi/2), a difference
    listed in tests/test_differential_pjrt.py, not what this test checks."""
    inputs = [_flush(a) for a in prog.inputs]
    got = run_pjrt(prog, inputs)
    errs = mismatches(prog, run_interpreter(prog, inputs), got)
    if errs:
        flushed = eval_flushed(prog.closed, inputs)
        if not mismatches(prog, flushed, got):
            return []
    return errs


def _report(prog, errs):
    return "\n".join(["xla_cpu platform != interpreter:"] + errs + [prog.describe()])


# what the interpreter rounds exactly and XLA:CPU does not: its rsqrt is its own
# approximation (within an ulp; the interpreter's is 1 / sqrt(x) rounded twice), and it
# contracts a float product and a following add or sub into a fused multiply-add (one
# rounding instead of two; its compiler always allows that)
APPROX = {"rsqrt", "fma"}

_settings = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
_seeds = st.integers(0, 2**31 - 1)


@settings(max_examples=15, **_settings)
@given(seed=_seeds, n_exprs=st.integers(1, 3))
def test_random_program_xla_cpu_equals_interpreter(seed, n_exprs):
    prog = fp.make_program(seed, n_exprs=n_exprs, approx=APPROX)
    errs = check_program_pjrt(prog)
    assert not errs, _report(prog, errs)


@pytest.mark.slow
@settings(max_examples=300, **_settings)
@given(seed=_seeds, n_exprs=st.integers(1, 3), n_ops=st.integers(4, 16))
def test_random_program_xla_cpu_equals_interpreter_more(seed, n_exprs, n_ops):
    prog = fp.make_program(seed, n_exprs=n_exprs, n_ops=n_ops, approx=APPROX)
    errs = check_program_pjrt(prog)
    assert not errs, _report(prog, errs)


@pytest.mark.parametrize("seed", [2166, 3257, 3356, 3588, 4205])
def test_fuzz_finds_fixed(seed):
    # 2166: f / (d / d) reassociated by XLA into (f * d) / d; 3257, 3356, 4205: abs(x * x)
    # of a wrapped-around signed product dropped; 3588: nextafter's subnormal result
    prog = fp.make_program(seed, n_exprs=2, approx=APPROX)
    errs = check_program_pjrt(prog)
    assert not errs, _report(prog, errs)


def _jit_xla(f, *args):
    dev = jaxlite.devices("xla_cpu")[0]
    return np.asarray(jaxlite.jit(f)(*[jaxlite.device_put(a, dev) for a in args]))


def test_integer_division_by_a_folded_zero_does_not_kill_the_process():
    # found by the fuzzer (seed 122 then): XLA folded v - v to 0 and divided by it
    from jaxlite import lax
    v = np.array([3, 5], np.int32)
    np.testing.assert_array_equal(_jit_xla(lambda v: lax.rem(np.int32(-184), v - v), v),
                                  [-184, -184])
    np.testing.assert_array_equal(_jit_xla(lambda v: lax.div(np.int32(-184), v - v), v),
                                  [-1, -1])
    np.testing.assert_array_equal(
        _jit_xla(lambda v: lax.div(np.int32(-2**31), v - v - 1), v), [-2**31, -2**31])


def test_false_times_inf_is_nan():
    # found by the fuzzer (seed 86 then): XLA made convert(p) * x a select, 0 for inf/NaN
    from jaxlite import lax
    p = np.array([False, False, False, True])
    x = np.array([-1.5, np.inf, np.nan, 2.0], np.float32)
    got = _jit_xla(lambda p, x: lax.mul(lax.convert_element_type(p, np.float32), x), p, x)
    np.testing.assert_array_equal(got, [-0.0, np.nan, np.nan, 2.0])
    assert np.signbit(got[0]) and not np.signbit(got[3])


def test_select_n_out_of_range_picks_the_nearest_case(rjax):
    # found by the fuzzer (seed 78 then): the interpreter took a negative index for case 1
    from jaxlite import lax
    which = np.array([-3, 0, 1, 2, 7], np.int32)
    cases = (np.zeros(5, np.float32), np.ones(5, np.float32), np.full(5, 2, np.float32))
    want3 = np.asarray(rjax.lax.select_n(which, *cases))
    want2 = np.asarray(rjax.lax.select_n(which.astype(np.int8), *cases[:2]))
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), want3)
    np.testing.assert_array_equal(_jit_xla(lax.select_n, which, *cases), want3)
    np.testing.assert_array_equal(np.asarray(lax.select_n(which.astype(np.int8),
                                                          *cases[:2])), want2)
    np.testing.assert_array_equal(_jit_xla(lax.select_n, which.astype(np.int8),
                                           *cases[:2]), want2)
