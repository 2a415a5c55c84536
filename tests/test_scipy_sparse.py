"""jaxlite.scipy.sparse.linalg's cg and bicgstab against JAX's: the same iteration, so the
same solutions (to rounding) for matrices, functions, preconditioners, pytrees, early
stops and jit."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.scipy.sparse.linalg  # noqa: F401

RNG = np.random.default_rng(0)
M = RNG.standard_normal((5, 5)).astype(np.float32)
SPD = M @ M.T + 5 * np.eye(5, dtype=np.float32)
GEN = M + 5 * np.eye(5, dtype=np.float32)
B = RNG.standard_normal(5).astype(np.float32)


def _cases(j, jnp):
    S = j.scipy.sparse.linalg
    return {
        "cg": lambda: S.cg(SPD, B),
        "cg function": lambda: S.cg(lambda x: SPD @ x, B, tol=1e-3),
        "cg maxiter": lambda: S.cg(SPD, B, maxiter=2),
        "cg x0": lambda: S.cg(SPD, B, x0=np.ones(5, np.float32), maxiter=1),
        "cg preconditioner": lambda: S.cg(SPD, B, M=np.diag(1 / np.diag(SPD))),
        "cg pytree": lambda: S.cg(lambda t: {"a": 2 * t["a"], "b": 3 * t["b"]},
                                  {"a": jnp.ones(2), "b": jnp.ones(3)}),
        "cg jit": lambda: j.jit(lambda b: S.cg(SPD, b))(B),
        "bicgstab": lambda: S.bicgstab(GEN, B),
        "bicgstab atol": lambda: S.bicgstab(GEN, B, atol=1e-2, tol=0.0),
    }


@pytest.mark.parametrize("name", sorted(_cases(jaxlite, jaxlite.numpy)))
def test_iterative_solvers_like_jax(name, rjax):
    import jax.numpy as rjnp
    import jax.scipy.sparse.linalg  # noqa: F401
    got = _cases(jaxlite, jaxlite.numpy)[name]()
    want = _cases(rjax, rjnp)[name]()
    assert got[1] is None and want[1] is None
    g, w = jaxlite.tree_util.tree_leaves(got[0]), rjax.tree_util.tree_leaves(want[0])
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_bad_input_and_no_silent_gradient():
    S = jaxlite.scipy.sparse.linalg
    with pytest.raises(ValueError):
        S.cg(SPD, B, x0=np.ones(4, np.float32))
    with pytest.raises(ValueError):
        S.cg(np.ones(5, np.float32), B)
    # differentiating through the solve is refused, not answered wrongly
    with pytest.raises(Exception):
        jaxlite.grad(lambda b: S.cg(SPD, b)[0].sum())(B)
