"""``jaxlite.test_util.check_grads`` / ``check_jvp`` / ``check_vjp`` against
``jax.test_util``: the same functions pass, the same wrong derivatives fail with an
AssertionError naming the same check."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
import jaxlite.test_util as ltu


def _cases(j, n, tu):
    @j.custom_jvp
    def wrong_jvp(x):
        return n.sin(x)
    wrong_jvp.defjvp(lambda p, t: (n.sin(p[0]), 2.0 * t[0]))

    @j.custom_vjp
    def wrong_vjp(x):
        return x * 3
    wrong_vjp.defvjp(lambda x: (x * 3, None), lambda r, g: (g * 2,))

    @j.custom_jvp
    def wrong_second(x):     # right first derivative, wrong second (stop_gradient)
        return x ** 3
    wrong_second.defjvp(lambda p, t: (p[0] ** 3, 3 * j.lax.stop_gradient(p[0]) ** 2 * t[0]))

    return {
        "sin_order2": lambda: tu.check_grads(n.sin, (1.0,), 2),
        "poly_order3_all_modes": lambda: tu.check_grads(
            lambda x: x ** 3 + 2 * x, (n.arange(3.0),), 3, modes=("fwd", "rev", "lin")),
        "pytree_args": lambda: tu.check_grads(
            lambda d: d["a"] * n.sum(d["b"] ** 2), ({"a": 2.0, "b": n.ones(2)},), 2),
        "two_args": lambda: tu.check_grads(
            lambda a, b: a @ b, (n.ones((2, 3)), n.arange(6.0).reshape(3, 2)), 2),
        "complex_rev": lambda: tu.check_grads(
            lambda z: n.sum(n.abs(z) ** 2), (n.array([1 + 2j, 3 - 1j], n.complex64),), 1,
            modes=("rev",)),
        "tolerance_dict": lambda: tu.check_grads(n.exp, (n.float32(2.0),), 1,
                                                 atol={np.float32: 1e-1}, rtol=1e-1),
        "wrong_jvp": lambda: tu.check_grads(wrong_jvp, (1.0,), 1, modes=("fwd",)),
        "wrong_jvp_seen_by_rev": lambda: tu.check_grads(wrong_jvp, (1.0,), 1,
                                                        modes=("rev",)),
        "wrong_vjp": lambda: tu.check_grads(wrong_vjp, (n.ones(2),), 1, modes=("rev",)),
        "wrong_second_order1": lambda: tu.check_grads(wrong_second, (1.5,), 1,
                                                      modes=("fwd",)),
        "wrong_second_order2": lambda: tu.check_grads(wrong_second, (1.5,), 2,
                                                      modes=("fwd",)),
        "wrong_second_rev2": lambda: tu.check_grads(wrong_second, (n.array([1.5]),), 2,
                                                    modes=("rev",)),
        "unknown_mode_ignored": lambda: tu.check_grads(wrong_jvp, (1.0,), 1,
                                                       modes=("sideways",)),
        "check_jvp": lambda: tu.check_jvp(n.tanh, lambda a, t: j.jvp(n.tanh, a, t),
                                          (n.array([0.5, -1.0]),)),
        "check_vjp_wrong": lambda: tu.check_vjp(wrong_vjp, lambda *a: j.vjp(wrong_vjp, *a),
                                                (n.ones(3),), err_msg="mine"),
    }


def _outcome(fn):
    try:
        fn()
        return "ok", ""
    except AssertionError as e:
        return "AssertionError", str(e)
    except Exception as e:   # noqa: BLE001 -- compared by type
        return type(e).__name__, str(e)


CASES = sorted(_cases(jax, jnp, ltu))


# the third-order case (about 7 s) runs in make test-slow (CI runs both tiers)
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow)
                                  if c == "poly_order3_all_modes" else c for c in CASES])
def test_check_grads_like_jax(rjax, rjnp, case):
    import jax.test_util as jtu
    got_kind, got_msg = _outcome(_cases(jax, jnp, ltu)[case])
    want_kind, want_msg = _outcome(_cases(rjax, rjnp, jtu)[case])
    assert got_kind == want_kind, (got_msg, want_msg)
    if want_kind == "AssertionError":
        # the same check is named: the line of numpy's message that holds err_msg
        def label(m):
            return [ln.strip() for ln in m.splitlines() if ln.strip()][1]
        assert label(got_msg) == label(want_msg), (got_msg, want_msg)


def test_numerical_jvp_values():
    f = lambda x, y: x * y ** 2   # noqa: E731
    got = ltu.numerical_jvp(f, (2.0, 3.0), (1.0, 0.5), eps=1e-3)
    assert abs(got - (3.0 ** 2 * 1.0 + 2 * 2.0 * 3.0 * 0.5)) < 1e-2
    # inf - inf counts as no change
    got = ltu.numerical_jvp(lambda x: jnp.array([np.inf]) + x, (np.zeros(1, np.float32),),
                            (np.ones(1, np.float32),))
    assert np.asarray(got).tolist() == [0.0]
