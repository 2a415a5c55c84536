"""jaxlite.scipy.optimize.minimize (BFGS) against jax.scipy.optimize.minimize: the same
iteration, so the same iterates (to rounding), counts, status and success, also on the
problems where JAX's line search gives up."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.scipy.optimize  # noqa: F401


def _problems(jnp):
    return {
        # gtol above float32's resolution here: with the default 1e-5 the last step sits
        # at the last ulp, where success or a failed line search is decided by rounding
        # (a CI machine's jaxlite converged where this machine's JAX and jaxlite did not)
        "quartic": (lambda x: jnp.sum((x - jnp.arange(3.)) ** 2) + jnp.sum(x ** 4),
                    np.zeros(3, np.float32), (), {"gtol": 1e-3}),
        # unbounded below: the line search gives up in its first iteration (status 5)
        "linear": (lambda x: jnp.sum(x), np.zeros(3, np.float32), (), None),
        "rosenbrock maxiter": (lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2,
                               np.array([-1., 2.], np.float32), (), {"maxiter": 100}),
        "quadratic": (lambda x: jnp.sum((x - 3.) ** 2), np.zeros(4, np.float32), (), None),
        "args": (lambda x, a: jnp.sum((x - a) ** 2) + jnp.sum(jnp.cos(x)),
                 np.ones(2, np.float32), (np.array([0.5, -0.5], np.float32),), None),
        "gtol": (lambda x: jnp.sum(jnp.cosh(x - 1.)), np.zeros(2, np.float32), (),
                 {"gtol": 1e-2}),
    }


@pytest.mark.parametrize("name", sorted(_problems(np)))
def test_minimize_bfgs_like_jax(name, rjax):
    import jax.scipy.optimize  # noqa: F401
    import jax.numpy as rjnp
    fun, x0, args, opts = _problems(jaxlite.numpy)[name]
    got = jaxlite.scipy.optimize.minimize(fun, x0, args, method="BFGS", options=opts)
    rfun = _problems(rjnp)[name][0]
    want = rjax.scipy.optimize.minimize(rfun, x0, args, method="BFGS", options=opts)
    assert type(got).__name__ == "OptimizeResults" and got._fields == want._fields
    for field in ("success", "status", "nfev", "njev", "nit"):
        assert int(getattr(got, field)) == int(getattr(want, field)), field
    for field in ("x", "fun", "jac", "hess_inv"):
        g, w = np.asarray(getattr(got, field)), np.asarray(getattr(want, field))
        assert g.shape == w.shape and g.dtype == w.dtype, field
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=field)


def test_minimize_under_jit_and_errors(rjax):
    jnp = jaxlite.numpy
    O = jaxlite.scipy.optimize

    def rosen(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    x0 = np.array([-1.2, 1.], np.float32)
    eager = O.minimize(rosen, x0, method="BFGS").x
    jitted = jaxlite.jit(lambda v: O.minimize(rosen, v, method="BFGS").x)(x0)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-5)
    with pytest.raises(ValueError):
        O.minimize(rosen, x0, method="Nelder-Mead")
    with pytest.raises(TypeError):
        O.minimize(lambda x, a: jnp.sum(x), x0, args=[1], method="BFGS")
