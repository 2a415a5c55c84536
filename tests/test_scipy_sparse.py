"""jaxlite.scipy.sparse.linalg's cg, bicgstab and gmres against JAX's: the same iterations,
so the same solutions (to rounding) for matrices, functions, preconditioners, pytrees,
early stops (partial iterates) and jit; derivatives (implicit, through
lax.custom_linear_solve) against JAX's and against finite differences; vmap; errors."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.scipy.sparse.linalg  # noqa: F401

from oracle import assert_like_jax

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
        "bicgstab pytree": lambda: S.bicgstab(lambda t: {"a": 2 * t["a"], "b": 3 * t["b"]},
                                              {"a": jnp.ones(2), "b": jnp.ones(3)}),
        "cg complex": lambda: S.cg(SPD.astype(np.complex64), (B + 1j * B[::-1]).astype(
            np.complex64)),
        "gmres": lambda: S.gmres(GEN, B),
        "gmres incremental": lambda: S.gmres(GEN, B, solve_method="incremental"),
        # partial iterates: one restart of 2 Krylov vectors
        "gmres partial": lambda: S.gmres(GEN, B, restart=2, maxiter=1),
        "gmres partial incremental": lambda: S.gmres(GEN, B, restart=2, maxiter=1,
                                                     solve_method="incremental"),
        "gmres restarts": lambda: S.gmres(GEN, B, restart=2, maxiter=3, tol=1e-8),
        "gmres preconditioner": lambda: S.gmres(GEN, B, M=np.diag(1 / np.diag(GEN)),
                                                restart=3, maxiter=2),
        "gmres x0 atol": lambda: S.gmres(lambda x: GEN @ x, B, x0=np.ones(5, np.float32),
                                         atol=1e-3, tol=0.0),
        "gmres pytree": lambda: S.gmres(
            lambda t: {"a": 2 * t["a"], "b": 3 * t["b"] + t["b"][::-1]},
            {"a": jnp.ones(2), "b": jnp.arange(3.0)}, solve_method="incremental"),
        "gmres matrix b": lambda: S.gmres(lambda x: x * 2.0 + x.T,
                                          jnp.ones((2, 2)) + jnp.eye(2)),
        "gmres complex": lambda: S.gmres(GEN.astype(np.complex64) + 1j * np.eye(5, dtype=(
            np.complex64)), B.astype(np.complex64)),
        "gmres zero b": lambda: S.gmres(GEN, np.zeros(5, np.float32)),
        "gmres jit": lambda: j.jit(lambda b: S.gmres(GEN, b, restart=3))(B),
    }


# JAX retraces gmres at every call (~2 s each here): these run in make test-slow only
_SLOW = {"gmres restarts", "gmres zero b", "gmres x0 atol", "gmres matrix b",
         "gmres incremental", "gmres preconditioner", "gmres complex"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW
                                  else n for n in sorted(_cases(jaxlite, jaxlite.numpy))])
def test_iterative_solvers_like_jax(name, rjax):
    import jax.numpy as rjnp
    import jax.scipy.sparse.linalg  # noqa: F401
    got = _cases(jaxlite, jaxlite.numpy)[name]()
    want = _cases(rjax, rjnp)[name]()
    if want[1] is None:
        assert got[1] is None
    else:
        assert_like_jax(got[1], want[1])       # gmres's info: int32 0, weakly typed
    g, w = jaxlite.tree_util.tree_leaves(got[0]), rjax.tree_util.tree_leaves(want[0])
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def _grad_cases(j):
    S = j.scipy.sparse.linalg

    def loss(solver, sym=False, **kw):
        def f(A, b):
            A = A @ A.T + 5 * j.numpy.eye(5) if sym else A
            return (solver(A, b, **kw)[0] ** 2).sum()
        return f
    return {"cg": loss(S.cg, sym=True, tol=1e-6),
            "cg function": lambda A, b: (S.cg(lambda x: (A @ A.T) @ x + 5 * x, b,
                                              tol=1e-6)[0] ** 2).sum(),
            "bicgstab": loss(S.bicgstab, tol=1e-6),
            "gmres": loss(S.gmres, tol=1e-6),
            "gmres incremental": loss(S.gmres, tol=1e-6, solve_method="incremental")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n == "gmres incremental" else n
                                  for n in sorted(_grad_cases(jaxlite))])
def test_gradients_like_jax_and_finite_differences(name, rjax):
    import jax.scipy.sparse.linalg  # noqa: F401
    f, g = _grad_cases(jaxlite)[name], _grad_cases(rjax)[name]
    A = M if name.startswith("cg") else GEN
    got = jaxlite.grad(f, argnums=(0, 1))(A, B)
    want = rjax.grad(g, argnums=(0, 1))(A, B)
    for a, b in zip(got, want):
        assert_like_jax(a, b, rtol=2e-3, atol=2e-4)
    # forward mode, and both against central differences along a random direction
    rng = np.random.default_rng(7)
    tA = rng.standard_normal((5, 5)).astype(np.float32)
    tb = rng.standard_normal(5).astype(np.float32)
    _, t = jaxlite.jvp(f, (A, B), (tA, tb))
    _, tw = rjax.jvp(g, (A, B), (tA, tb))
    assert_like_jax(t, tw, rtol=2e-3, atol=2e-4)
    eps = 1e-3
    fd = (f(A.astype(np.float64) + eps * tA, B.astype(np.float64) + eps * tb) -
          f(A.astype(np.float64) - eps * tA, B.astype(np.float64) - eps * tb)) / (2 * eps)
    np.testing.assert_allclose(float(t), float(fd), rtol=2e-2, atol=1e-3)
    lin = float(np.sum(np.asarray(got[0]) * tA) + np.dot(np.asarray(got[1]), tb))
    np.testing.assert_allclose(lin, float(t), rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["cg", "bicgstab",
                                  pytest.param("gmres", marks=pytest.mark.slow)])
def test_vmap_like_jax(name, rjax):
    import jax.scipy.sparse.linalg  # noqa: F401
    Bs = np.stack([B, 2 * B, B[::-1]])
    Gs = np.stack([GEN, GEN + np.eye(5, dtype=np.float32), GEN.T])
    mine = getattr(jaxlite.scipy.sparse.linalg, name)
    theirs = getattr(jax.scipy.sparse.linalg, name)
    A = SPD if name == "cg" else GEN
    got = jaxlite.vmap(lambda b: mine(A, b)[0])(Bs)
    want = rjax.vmap(lambda b: theirs(A, b)[0])(Bs)
    assert_like_jax(got, want, rtol=1e-4, atol=1e-5)
    if name != "cg":
        got = jaxlite.vmap(lambda a: mine(a, B)[0])(Gs)
        want = rjax.vmap(lambda a: theirs(a, B)[0])(Gs)
        assert_like_jax(got, want, rtol=1e-4, atol=1e-5)
    # grad under vmap
    got = jaxlite.vmap(jaxlite.grad(lambda b: mine(A, b)[0].sum()))(Bs)
    want = rjax.vmap(rjax.grad(lambda b: theirs(A, b)[0].sum()))(Bs)
    assert_like_jax(got, want, rtol=1e-3, atol=1e-4)


def test_gmres_info_marks_nan_like_jax(rjax):
    import jax.scipy.sparse.linalg  # noqa: F401
    # a NaN start: its residual's norm counts as zero (safe normalisation), so x stays NaN
    bad = np.ones(5, np.float32)
    bad[0] = np.nan
    x, info = jaxlite.scipy.sparse.linalg.gmres(GEN, B, x0=bad, maxiter=2, restart=2)
    xw, infow = jax.scipy.sparse.linalg.gmres(GEN, B, x0=bad, maxiter=2, restart=2)
    assert_like_jax(info, infow)
    assert int(info) == -1
    np.testing.assert_array_equal(np.isnan(np.asarray(x)), np.isnan(np.asarray(xw)))


def test_bad_input_like_jax(rjax):
    import jax.numpy as rjnp
    import jax.scipy.sparse.linalg  # noqa: F401

    def cases(j, jnp_):
        S = j.scipy.sparse.linalg
        return {
            "x0 shape": lambda: S.cg(SPD, B, x0=np.ones(4, np.float32)),
            "x0 tree": lambda: S.bicgstab(GEN, B, x0=[np.ones(5, np.float32)]),
            "not square": lambda: S.cg(np.ones((5, 4), np.float32), B),
            "vector A": lambda: S.cg(np.ones(5, np.float32), B),
            "list A": lambda: S.gmres([[1.0]], np.ones(1, np.float32)),
            "solve_method": lambda: S.gmres(GEN, B, solve_method="qr"),
            "gmres x0 tree": lambda: S.gmres(GEN, B, x0=(np.ones(5, np.float32),)),
        }
    mine, theirs = cases(jaxlite, jaxlite.numpy), cases(rjax, rjnp)
    for name in mine:
        with pytest.raises(Exception) as want:
            theirs[name]()
        with pytest.raises(want.type):
            mine[name]()
