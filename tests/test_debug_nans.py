"""``jax_debug_nans`` / ``jax_debug_infs`` (config flags and the ``jax.debug_nans`` /
``jax.debug_infs`` context managers) against real JAX: which operations raise
FloatingPointError and the primitive the message names, eagerly, under jit (re-run op by
op), under grad and vmap; nothing changes while the flags are off."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import monitoring


@pytest.fixture
def both_flags(rjax):
    """Restores both libraries' flags after the test.  JAX's caches are emptied first:
    programs it compiled before a flag changed can keep the old checking behaviour."""
    rjax.clear_caches()
    yield
    for j in (jax, rjax):
        j.config.update("jax_debug_nans", False)
        j.config.update("jax_debug_infs", False)


def _outcome(fn):
    try:
        out = fn()
        return "ok", np.asarray(out).tolist()
    except FloatingPointError as e:
        return "FloatingPointError", str(e).splitlines()[0]


CASES = {
    "div_0_0": lambda j, n: n.array(0.0) / n.array(0.0),
    "log_neg": lambda j, n: n.log(n.array(-1.0)),
    "sqrt_neg_vec": lambda j, n: n.sqrt(n.array([1.0, -1.0])),
    "inf_only": lambda j, n: n.array(1.0) / n.array(0.0),
    "exp_overflow": lambda j, n: n.exp(n.array(1000.0)),
    "int_div": lambda j, n: n.array(1) // n.array(0),
    "clean": lambda j, n: n.sin(n.arange(3.0)),
    "jit_log": lambda j, n: j.jit(lambda x: n.log(x) * 2)(n.array(-1.0)),
    "jit_second_op": lambda j, n: j.jit(lambda x: n.sin(x) + n.sqrt(x - 5))(n.array(1.0)),
    "jit_nested": lambda j, n: j.jit(lambda x: n.cos(x) * j.jit(n.log)(x - 3))(n.array(1.0)),
    "jit_exp": lambda j, n: j.jit(lambda x: n.exp(x) * 2)(n.array(1000.0)),
    "jit_clean": lambda j, n: j.jit(lambda x: n.log(x) * 2)(n.array(2.0)),
    "jit_nan_input": lambda j, n: j.jit(lambda x: x * 2)(n.array(np.nan)),
    "grad_sqrt_0": lambda j, n: j.grad(n.sqrt)(0.0),
    "grad_log_neg": lambda j, n: j.grad(n.log)(-1.0),
    "vmap_log": lambda j, n: j.vmap(n.log)(n.array([1.0, -1.0])),
    "where_hides_nothing": lambda j, n: n.where(n.array([True]), 1.0, n.log(-1.0)),
    "complex_log0": lambda j, n: n.log(n.array([0j, 1j])),
    "complex_log0_times0": lambda j, n: n.log(n.array([0j, 1j])) * 0,
}


# A NaN that comes from host data: JAX raises when the array is created (naming an internal
# step), jaxlite at the first operation whose output holds it (README, known differences).
NAN_FROM_HOST = {"jit_nan_input"}


@pytest.mark.parametrize("flag", ["jax_debug_nans", "jax_debug_infs"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_debug_flags_like_jax(rjax, rjnp, both_flags, flag, case):
    got_off = _outcome(lambda: CASES[case](jax, jnp))
    for j in (jax, rjax):
        j.config.update(flag, True)
    got = _outcome(lambda: CASES[case](jax, jnp))
    want = _outcome(lambda: CASES[case](rjax, rjnp))
    assert got[0] == want[0], (got, want)
    if got[0] == "FloatingPointError":
        assert got[1] == want[1] or case in NAN_FROM_HOST
    else:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    # the flag off: every case computes (NaN/inf as values)
    assert got_off[0] == "ok"


def test_context_managers_and_config(rjax, both_flags):
    for j in (jax, rjax):
        with j.debug_nans(True):
            assert j.config.jax_debug_nans
            with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) "
                                                          r"encountered in log"):
                j.numpy.log(j.numpy.array(-1.0))
            with j.debug_nans(False):
                assert not j.config.jax_debug_nans
                assert np.isnan(float(j.numpy.log(j.numpy.array(-1.0))))
        assert not j.config.jax_debug_nans
        with j.debug_infs():
            assert j.config.jax_debug_infs
        assert not j.config.jax_debug_infs
    with pytest.raises(ValueError):
        jax.config.update("jax_debug_infs", "yes")
    # the checked path is left when both flags go off (fast paths come back)
    assert not monitoring._listeners


def test_debug_nans_keeps_working_values_and_types(both_flags):
    jax.config.update("jax_debug_nans", True)
    x = jnp.arange(4.0)
    f = jax.jit(lambda x: jnp.sum(jnp.sin(x) ** 2))
    np.testing.assert_allclose(float(f(x)), float(np.sum(np.sin(np.arange(4.0)) ** 2)),
                               rtol=1e-6)
    y = x * 2 + 1          # operators take the checked path and still compute
    assert y.dtype == jnp.float32 and np.asarray(y).tolist() == [1.0, 3.0, 5.0, 7.0]
    with pytest.raises(FloatingPointError, match="encountered in div"):
        x / 0 * 0


def test_jit_reruns_op_by_op_only_on_invalid_output(both_flags, caplog):
    jax.config.update("jax_debug_nans", True)
    calls = []

    def f(x):
        calls.append(1)
        return jnp.log(x)
    g = jax.jit(f)
    g(jnp.array(2.0))
    with caplog.at_level("WARNING", logger="jaxlite"):
        with pytest.raises(FloatingPointError, match="encountered in log"):
            g(jnp.array(-2.0))
    assert "Invalid nan value encountered in the output of jit(f)" in caplog.text
    assert len(calls) == 1     # the re-run evaluates the traced program, no new trace


def test_jit_nan_only_in_compiled_program_names_the_function(both_flags):
    """When the op-by-op run is clean, the error names the jitted function."""
    from jaxlite.transforms import fp_checks

    class FakeCompiled:
        _fun_name = "f"

        class _lowered:
            closed_jaxpr = jax.make_jaxpr(lambda x: x + 1)(1.0)
    jax.config.update("jax_debug_nans", True)
    with pytest.raises(FloatingPointError, match=r"encountered in jit\(f\).*no invalid"):
        fp_checks.check_jit_outputs(FakeCompiled, [1.0], [jnp.array(np.nan)])
