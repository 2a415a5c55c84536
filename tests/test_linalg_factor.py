"""Decompositions and solvers of jnp.linalg and lax.linalg against real JAX: values (with
tolerances suited to each algorithm; eigenvectors compared up to sign or phase), dtypes
and shapes, singular and indefinite input (inf/nan, no error), bad input (JAX's exception
type, a message naming the shape), derivatives (against JAX and finite differences), vmap
and jit.  The fast tier keeps shapes and dtypes few (real JAX compiles each); the dtype
and shape sweeps are marked slow."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

from _transform_checks import check_grads, check_vmap
from oracle import assert_like_jax

R = np.random.default_rng(12)


def rnd(*shape, dtype=np.float32):
    x = R.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * R.standard_normal(shape)
    return x.astype(dtype)


def spd(n, dtype=np.float32, batch=()):
    """Well-conditioned Hermitian positive-definite matrices."""
    a = rnd(*batch, n, n, dtype=dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def wellcond(n, dtype=np.float32, batch=()):
    return (rnd(*batch, n, n, dtype=dtype) + 3 * np.eye(n)).astype(dtype)


SING = np.array([[1., 2], [2, 4]], np.float32)
SING4 = np.diag([1., -2, 3, 0]).astype(np.float32)
A3 = wellcond(3)
A4 = wellcond(4)
AB = wellcond(3, batch=(2,))
P3 = spd(3)
W43 = rnd(4, 3)
B3 = rnd(3)
B32 = rnd(3, 2)


def tol(dtype):
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


# ---- values, dtypes and shapes against JAX ---------------------------------------------------

VALUE_CASES = {
    "solve_vec": (lambda L: lambda a, b: L.linalg.solve(a, b), (A3, B3)),
    "solve_mat": (lambda L: lambda a, b: L.linalg.solve(a, b), (A3, B32)),
    "solve_bcast": (lambda L: lambda a, b: L.linalg.solve(a, b), (AB, B32)),
    "solve_bvec": (lambda L: lambda a, b: L.linalg.solve(a, b), (AB, B3)),
    "inv": (lambda L: L.linalg.inv, (AB,)),
    "det2": (lambda L: L.linalg.det, (rnd(2, 2),)),
    "det3": (lambda L: L.linalg.det, (AB,)),
    "det4": (lambda L: L.linalg.det, (A4,)),
    "slogdet": (lambda L: L.linalg.slogdet, (A4,)),
    "slogdet_neg": (lambda L: L.linalg.slogdet, (np.diag([1., -2, 3, 4]).astype(np.float32),)),
    "slogdet2": (lambda L: L.linalg.slogdet, (rnd(2, 2, 2),)),
    "slogdet_qr": (lambda L: lambda a: L.linalg.slogdet(a, method="qr"), (AB,)),
    "slogdet_qr_singular": (lambda L: lambda a: L.linalg.slogdet(a, method="qr"), (SING4,)),
    "cholesky": (lambda L: L.linalg.cholesky, (P3,)),
    "cholesky_upper": (lambda L: lambda a: L.linalg.cholesky(a, upper=True), (P3,)),
    "eigvalsh": (lambda L: L.linalg.eigvalsh, (P3,)),
    "eigvalsh_U": (lambda L: lambda a: L.linalg.eigvalsh(a, "U", symmetrize_input=False),
                   (A3,)),
    "qr_r": (lambda L: lambda a: L.linalg.qr(a, mode="r"), (W43,)),
    "qr": (lambda L: L.linalg.qr, (W43,)),
    "qr_complete": (lambda L: lambda a: L.linalg.qr(a, mode="complete"), (W43,)),
    "lstsq_vec": (lambda L: lambda a, b: L.linalg.lstsq(a, b), (W43, rnd(4))),
    "lstsq_mat": (lambda L: lambda a, b: L.linalg.lstsq(a, b), (W43, rnd(4, 2))),
    "lstsq_deficient": (lambda L: lambda a, b: L.linalg.lstsq(a, b)[1:3],
                        (np.ones((3, 2), np.float32), rnd(3))),
    "pinv": (lambda L: L.linalg.pinv, (W43,)),
    "pinv_wide": (lambda L: lambda a: L.linalg.pinv(a, rtol=0.1), (W43.T.copy(),)),
    "matrix_rank": (lambda L: L.linalg.matrix_rank,
                    (np.array([[1., 2], [2, 4]], np.float32),)),
    "matrix_rank_1d": (lambda L: L.linalg.matrix_rank, (np.zeros(3, np.float32),)),
    "cond": (lambda L: L.linalg.cond, (A3,)),
    "cond_1": (lambda L: lambda a: L.linalg.cond(a, 1), (A3,)),
    "cond_fro": (lambda L: lambda a: L.linalg.cond(a, "fro"), (AB,)),
    "cond_-2": (lambda L: lambda a: L.linalg.cond(a, -2), (W43,)),
    "eigvals_sym": (lambda L: lambda a: L.sort(L.real(L.linalg.eigvals(a))), (P3,)),
    "tensorinv": (lambda L: lambda a: L.linalg.tensorinv(a, 1),
                  (wellcond(4).reshape(4, 2, 2),)),
    "tensorsolve": (lambda L: L.linalg.tensorsolve,
                    (wellcond(6).reshape(2, 3, 6), rnd(2, 3))),
    "cross": (lambda L: L.linalg.cross, (rnd(2, 3), rnd(3))),
    "cross_axis": (lambda L: lambda a, b: L.linalg.cross(a, b, axis=0), (rnd(3, 2), rnd(3, 2))),
    "cross_int": (lambda L: L.linalg.cross, (np.arange(3), np.array([1, 0, 2]))),
    "matrix_power_neg": (lambda L: lambda a: L.linalg.matrix_power(a, -2), (A3,)),
    "int_promotes": (lambda L: L.linalg.inv, (np.array([[2, 1], [1, 3]], np.int32),)),
    "int_det": (lambda L: L.linalg.det, (np.array([[2, 1], [1, 3]], np.int32),)),
    # lax.linalg
    "lu": (lambda L: L.lax.linalg.lu, (A4,)),
    "lu_tall": (lambda L: L.lax.linalg.lu, (W43,)),
    "lu_wide": (lambda L: L.lax.linalg.lu, (W43.T.copy(),)),
    "lu_pivots": (lambda L: lambda p: L.lax.linalg.lu_pivots_to_permutation(p, 5),
                  (np.array([[2, 2, 3], [0, 4, 2]], np.int32),)),
    "triangular_solve_left": (lambda L: lambda a, b: L.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), (A3, B32)),
    "triangular_solve_right_t": (lambda L: lambda a, b: L.lax.linalg.triangular_solve(
        a, b, transpose_a=True, unit_diagonal=True), (A3, B32.T.copy())),
    "triangular_solve_vec": (lambda L: lambda a, b: L.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=False), (A3, B3)),
    "tridiagonal_solve": (lambda L: L.lax.linalg.tridiagonal_solve,
                          (rnd(4), rnd(4) + 4, rnd(4), rnd(4, 2))),
    "lax_cholesky_nosym": (lambda L: lambda a: L.lax.linalg.cholesky(
        a, symmetrize_input=False), (P3,)),
    "lax_qr_pivoting": (lambda L: lambda a: L.lax.linalg.qr(a, pivoting=True,
                                                             full_matrices=False), (W43,)),
    "lax_eigh_subset_all": (lambda L: lambda a: L.lax.linalg.eigh(a, subset_by_index=(0, 3))[1],
                            (P3,)),
    "hessenberg": (lambda L: L.lax.linalg.hessenberg, (A4,)),
    "schur": (lambda L: L.lax.linalg.schur, (A4,)),
    "schur_complex": (lambda L: lambda a: L.lax.linalg.schur(a, compute_schur_vectors=False),
                      (rnd(3, 3, dtype=np.complex64),)),
    "tridiagonal": (lambda L: L.lax.linalg.tridiagonal, (P3,)),
    "tridiagonal_upper": (lambda L: lambda a: L.lax.linalg.tridiagonal(a, lower=False),
                          (spd(3, np.complex64),)),
    "householder_product": (lambda L: L.lax.linalg.householder_product, (W43, rnd(2))),
    "ormqr": (lambda L: lambda a, t, c: L.lax.linalg.ormqr(a, t, c, left=False,
                                                          transpose=True),
              (A3, rnd(3), rnd(2, 3))),
    "symmetric_product": (lambda L: lambda a, c: L.lax.linalg.symmetric_product(
        a, c, alpha=2.0, beta=0.5, symmetrize_output=True), (W43, rnd(4, 4))),
    "cholesky_update": (lambda L: L.lax.linalg.cholesky_update,
                        (np.triu(A3) + 4 * np.eye(3, dtype=np.float32), B3)),
    "qr_raw": (lambda L: lambda a: L.linalg.qr(a, mode="raw"), (W43,)),
    "svd_subset_all": (lambda L: lambda a: L.lax.linalg.svd(a, full_matrices=False,
                                                             subset_by_index=(0, 3)), (W43,)),
    "svd_hermitian": (lambda L: lambda a: L.linalg.svd(a, hermitian=True),
                      (np.array([[2., 1], [1, -3]], np.float32),)),
    "svd_hermitian_s": (lambda L: lambda a: L.linalg.svd(a, hermitian=True, compute_uv=False),
                        (AB,)),
    "qdwh": (lambda L: L.lax.linalg.qdwh, (W43,)),
    "qdwh_capped": (lambda L: lambda a: L.lax.linalg.qdwh(a, max_iterations=2),
                    (np.diag([1e-6, 1., 2.]).astype(np.float32),)),
}

# where an algorithm's rounding differs more than a few ulp (float32 throughout)
LOOSE = {"cond": 1e-3, "cond_1": 1e-3, "cond_fro": 1e-3, "cond_-2": 1e-3, "tensorinv": 1e-3,
         "tensorsolve": 1e-3, "pinv_wide": 1e-3, "lstsq_deficient": 1e-3}


class _Lib:
    """``jnp``-like access to one library's numpy and lax (jaxlite's or JAX's)."""

    def __init__(self, np_mod, lax_mod):
        self._np, self.lax = np_mod, lax_mod

    def __getattr__(self, name):
        return getattr(self._np, name)


def _libs(rjax):
    return _Lib(jnp, lax), _Lib(rjax.numpy, rjax.lax)


def _compare(got, want, rtol, atol):
    import jax
    g = jaxlite.tree_util.tree_leaves(got)
    w = jax.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert_like_jax(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_like_jax(name, rjax):
    make, args = VALUE_CASES[name]
    lib, rlib = _libs(rjax)
    t = LOOSE.get(name, 1e-4)
    _compare(make(lib)(*args), make(rlib)(*args), t, t)


def _match_columns(v, w):
    """``v``'s columns rotated by the unit phase that best aligns each with ``w``'s (sign
    for real vectors): eigenvectors are unique only up to that factor."""
    v, w = np.asarray(v), np.asarray(w)
    dots = np.sum(np.conj(v) * w, axis=-2, keepdims=True)
    phase = dots / np.maximum(np.abs(dots), 1e-30)
    return v * phase


def test_eigh_like_jax(rjnp):
    a = spd(3, batch=(2,))
    w, v = jnp.linalg.eigh(a)
    rw, rv = rjnp.linalg.eigh(a)
    assert_like_jax(w, rw, rtol=1e-4, atol=1e-4)
    assert v.dtype == rv.dtype and v.shape == rv.shape
    np.testing.assert_allclose(_match_columns(v, rv), rv, atol=1e-4)
    np.testing.assert_allclose(np.asarray(a) @ np.asarray(v), np.asarray(v) * np.asarray(w)[
        ..., None, :], atol=1e-4)


def test_eig_like_jax(rjnp):
    a = rnd(3, 3)
    w, v = jnp.linalg.eig(a)
    rw, rv = rjnp.linalg.eig(a)
    assert w.dtype == rw.dtype == np.complex64 and v.shape == rv.shape
    order, rorder = np.argsort(np.asarray(w).round(4)), np.argsort(np.asarray(rw).round(4))
    np.testing.assert_allclose(np.asarray(w)[order], np.asarray(rw)[rorder], atol=1e-4)
    vv, rvv = np.asarray(v)[:, order], np.asarray(rv)[:, rorder]
    np.testing.assert_allclose(_match_columns(vv, rvv), rvv, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(vv, axis=0), 1, atol=1e-5)
    assert_like_jax(jnp.linalg.eigvals(np.eye(2, dtype=np.int32)),
                    rjnp.linalg.eigvals(np.eye(2, dtype=np.int32)))


def test_vectors_signs_exactly_like_jax(rjnp):
    # the same LAPACK (SciPy's, which JAX's CPU kernels call) gives the same signs and
    # phases, not merely the same vectors up to sign
    for _ in range(4):
        a = rnd(4, 4)
        s = a + a.T
        c = rnd(3, 3, dtype=np.complex64)
        assert_like_jax(jnp.linalg.eigh(s).eigenvectors, rjnp.linalg.eigh(s).eigenvectors,
                        rtol=1e-4, atol=1e-4)
        assert_like_jax(jnp.linalg.eig(a).eigenvectors, rjnp.linalg.eig(a).eigenvectors,
                        rtol=1e-4, atol=1e-4)
        assert_like_jax(jnp.linalg.svd(a).U, rjnp.linalg.svd(a).U, rtol=1e-4, atol=1e-4)
        assert_like_jax(jnp.linalg.svd(c).Vh, rjnp.linalg.svd(c).Vh, rtol=1e-4, atol=1e-4)


def test_nonfinite_input_gives_nan_like_jax(rjnp):
    a = np.array([[1, np.nan], [0, 1]], np.float32)
    for name in ("svd", "eigh", "eig", "eigvals", "svdvals"):
        got, want = getattr(jnp.linalg, name)(a), getattr(rjnp.linalg, name)(a)
        for g, w in zip(jaxlite.tree_util.tree_leaves(tuple(got) if isinstance(got, tuple)
                                                      else got),
                        [want] if not isinstance(want, tuple) else list(want)):
            assert_like_jax(g, w)


def test_eig_vector_derivatives_opt_in_like_jax(rjax):
    # with enable_eigvec_derivs, JAX's perturbation formula (distinct eigenvalues), checked
    # per column up to the sign freedom of real eigenvectors
    a = rnd(3, 3)
    t = rnd(3, 3)
    for kw in ({}, {"compute_left_eigenvectors": False}):
        got = jaxlite.jvp(lambda x: lax.linalg.eig(x, enable_eigvec_derivs=True, **kw),
                          (a,), (t,))
        want = rjax.jvp(lambda x: rjax.lax.linalg.eig(x, enable_eigvec_derivs=True, **kw),
                        (a,), (t,))
        for g, w in zip(list(got[0]) + list(got[1]), list(want[0]) + list(want[1])):
            assert_like_jax(g, w, rtol=2e-3, atol=2e-3)


def test_lax_eig_left_vectors():
    a = rnd(3, 3).astype(np.float64)
    w, vl, vr = lax.linalg.eig(a)
    w, vl, vr = map(np.asarray, (w, vl, vr))
    np.testing.assert_allclose(a @ vr, vr * w, atol=1e-4)
    np.testing.assert_allclose(np.conj(vl).T @ a, w[:, None] * np.conj(vl).T, atol=1e-4)
    assert len(lax.linalg.eig(a, compute_left_eigenvectors=False,
                              compute_right_eigenvectors=False)) == 1


def test_svd_and_qr_complex_like_jax(rjnp):
    a = rnd(3, 2, dtype=np.complex64)
    q, r = jnp.linalg.qr(a)
    rq, rr = rjnp.linalg.qr(a)
    assert_like_jax(q, rq, rtol=1e-4, atol=1e-4)
    assert_like_jax(r, rr, rtol=1e-4, atol=1e-4)
    c = spd(2, np.complex64)
    assert_like_jax(jnp.linalg.cholesky(c), rjnp.linalg.cholesky(c), rtol=1e-4, atol=1e-4)
    assert_like_jax(jnp.linalg.slogdet(c + 1j).sign, rjnp.linalg.slogdet(c + 1j).sign,
                    rtol=1e-4, atol=1e-4)


# ---- singular and indefinite input: inf/nan, as JAX ------------------------------------------



@pytest.mark.parametrize("name,make,args", [
    ("solve", lambda L: L.linalg.solve, (SING, np.ones(2, np.float32))),
    ("inv", lambda L: L.linalg.inv, (SING,)),
    ("det", lambda L: L.linalg.det, (SING,)),
    ("det4", lambda L: L.linalg.det, (SING4,)),
    ("slogdet", lambda L: L.linalg.slogdet, (SING4,)),
    ("cholesky_indefinite", lambda L: L.linalg.cholesky,
     (np.array([[1., 2], [2, -4]], np.float32),)),
    ("cond", lambda L: L.linalg.cond, (SING4,)),
    ("cond_1", lambda L: lambda a: L.linalg.cond(a, 1), (SING4,)),
    ("lu", lambda L: L.lax.linalg.lu, (np.zeros((3, 3), np.float32),)),
    ("triangular_solve", lambda L: lambda a, b: L.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), (SING4, np.ones((4, 1), np.float32))),
])
def test_singular_like_jax(name, make, args, rjax):
    lib, rlib = _libs(rjax)
    _compare(make(lib)(*args), make(rlib)(*args), 1e-5, 1e-5)


# ---- bad input --------------------------------------------------------------------------------

BAD = [
    ("solve_1d", lambda L: L.linalg.solve(np.ones(3), np.ones(3)), ValueError, r"\(3,\)"),
    ("solve_mismatch", lambda L: L.linalg.solve(np.ones((3, 3)), np.ones(2)), ValueError,
     "3"),
    ("solve_ambiguous", lambda L: L.linalg.solve(np.ones((4, 3, 3)), np.ones((4, 3))),
     ValueError, r"\(4, 3, 3\), \(4, 3\)"),
    ("inv_nonsquare", lambda L: L.linalg.inv(np.ones((2, 3))), ValueError, r"\(2, 3\)"),
    ("det_1d", lambda L: L.linalg.det(np.ones(3)), ValueError, r"\(3,\)"),
    ("slogdet_nonsquare", lambda L: L.linalg.slogdet(np.ones((2, 3))), ValueError,
     r"\(2, 3\)"),
    ("cholesky_nonsquare", lambda L: L.linalg.cholesky(np.ones((2, 3))), TypeError,
     r"\(2, 3\)"),
    ("eigh_nonsquare", lambda L: L.linalg.eigh(np.ones((2, 3))), TypeError, r"\(2, 3\)"),
    ("eigh_uplo", lambda L: L.linalg.eigh(np.eye(2), UPLO="X"), ValueError, "UPLO"),
    ("eig_nonsquare", lambda L: L.linalg.eig(np.ones((2, 3))), ValueError, r"\(2, 3\)"),
    ("qr_1d", lambda L: L.linalg.qr(np.ones(3)), TypeError, r"\(3,\)"),
    ("qr_mode", lambda L: L.linalg.qr(np.ones((2, 2)), mode="bad"), ValueError, "bad"),
    ("cross_2", lambda L: L.linalg.cross(np.ones(2), np.ones(2)), ValueError, "2"),
    ("lstsq_lead", lambda L: L.linalg.lstsq(np.ones((3, 2)), np.ones(4)), ValueError,
     "Leading"),
    ("cond_1d", lambda L: L.linalg.cond(np.ones(3)), ValueError, r"\(3,\)"),
    ("tensorinv", lambda L: L.linalg.tensorinv(np.ones((2, 3)), 1), ValueError, r"\(2, 3\)"),
    ("matrix_rank_both", lambda L: L.linalg.matrix_rank(np.eye(2), 0.1, tol=0.1), ValueError,
     "tol"),
    ("eigh_subset", lambda L: L.lax.linalg.eigh(np.eye(3, dtype=np.float32),
                                                 subset_by_index=(1, 3)), NotImplementedError,
     "subset_by_index"),
    ("schur_nonsquare", lambda L: L.lax.linalg.schur(np.ones((2, 3), np.float32)),
     ValueError, r"\(2, 3\)"),
    ("schur_sort", lambda L: L.lax.linalg.schur(np.eye(2, dtype=np.float32),
                                                sort_eig_vals=True), NotImplementedError,
     "sort"),
    ("hessenberg_nonsquare", lambda L: L.lax.linalg.hessenberg(np.ones((2, 3), np.float32)),
     ValueError, r"\(2, 3\)"),
    ("slogdet_method", lambda L: L.linalg.slogdet(np.eye(2), method="svd"), ValueError,
     "svd"),
    ("slogdet_qr_complex", lambda L: L.linalg.slogdet(np.eye(3, dtype=np.complex64),
                                                      method="qr"), NotImplementedError, "qr"),
    ("symmetric_product_complex", lambda L: L.lax.linalg.symmetric_product(
        np.ones((2, 2), np.complex64), np.ones((2, 2), np.complex64)), TypeError, "complex64"),
    ("qdwh_wide", lambda L: L.lax.linalg.qdwh(np.ones((2, 3), np.float32)), ValueError,
     "M >= N"),
    ("svd_subset", lambda L: L.lax.linalg.svd(np.ones((4, 3), np.float32),
                                              full_matrices=False, subset_by_index=(0, 2)),
     NotImplementedError, "subset_by_index"),
    ("svd_subset_full", lambda L: L.lax.linalg.svd(np.ones((4, 3), np.float32),
                                                   subset_by_index=(0, 2)),
     ValueError, "full_matrices"),
    ("lu_float16", lambda L: L.lax.linalg.lu(np.eye(2, dtype=np.float16)),
     NotImplementedError, "float16"),
    ("inv_float16", lambda L: L.linalg.inv(np.eye(2, dtype=np.float16)),
     NotImplementedError, "float16"),
    ("lu_int", lambda L: L.lax.linalg.lu(np.eye(2, dtype=np.int32)), TypeError, "int32"),
    ("triangular_solve_shapes", lambda L: L.lax.linalg.triangular_solve(
        np.eye(2, dtype=np.float32), np.ones((3, 2), np.float32), left_side=True), ValueError,
     r"\(3, 2\)"),
    ("tridiagonal_rank1", lambda L: L.lax.linalg.tridiagonal_solve(
        *(np.ones(3, np.float32),) * 4), TypeError, r"\(3,\)"),
    ("lu_pivots_size", lambda L: L.lax.linalg.lu_pivots_to_permutation(
        np.zeros(4, np.int32), 3), ValueError, "3"),
]


@pytest.mark.parametrize("name,call,exc,pattern", BAD, ids=[b[0] for b in BAD])
def test_bad_input_like_jax(name, call, exc, pattern, rjax):
    lib, rlib = _libs(rjax)
    with pytest.raises(exc):
        call(rlib)
    with pytest.raises(exc, match=pattern):
        call(lib)


# ---- derivatives: finite differences and JAX ---------------------------------------------------

GRAD_CASES = {
    "solve": (lambda L: lambda a, b: L.linalg.solve(a, b), (A3, B32)),
    "inv": (lambda L: L.linalg.inv, (A3,)),
    "det3": (lambda L: L.linalg.det, (A3,)),
    "det4": (lambda L: L.linalg.det, (A4,)),
    "slogdet": (lambda L: lambda a: L.linalg.slogdet(a)[1], (A4,)),
    "cholesky": (lambda L: L.linalg.cholesky, (P3,)),
    "eigh_w": (lambda L: lambda a: L.linalg.eigh(a)[0], (P3,)),
    "slogdet_qr": (lambda L: lambda a: L.linalg.slogdet(a, method="qr")[1], (A4,)),
    "eigh_v": (lambda L: lambda a: L.abs(L.linalg.eigh(a)[1]), (P3,)),
    "qr": (lambda L: L.linalg.qr, (W43,)),
    "pinv": (lambda L: L.linalg.pinv, (W43,)),
    "lstsq": (lambda L: lambda a, b: L.linalg.lstsq(a, b)[0], (W43, rnd(4))),
    "eigvals": (lambda L: lambda a: L.sort(L.real(L.linalg.eigvals(a))), (P3,)),
    "lu": (lambda L: lambda a: L.lax.linalg.lu(a)[0], (A4,)),
    "triangular_solve": (lambda L: lambda a, b: L.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), (A3, B32)),
    "tensorsolve": (lambda L: L.linalg.tensorsolve, (wellcond(4).reshape(2, 2, 4), rnd(2, 2))),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grads_finite_differences(name):
    make, args = GRAD_CASES[name]
    check_grads(make(_Lib(jnp, lax)), args, order=1, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["solve", "det4", "slogdet", "cholesky", "eigh_w", "pinv",
                                  "lu"])
def test_vjp_like_jax(name, rjax):
    make, args = GRAD_CASES[name]
    lib, rlib = _libs(rjax)
    f, rf = make(lib), make(rlib)
    argnums = tuple(range(len(args)))
    got = jaxlite.grad(lambda *a: jnp.sum(jnp.sin(f(*a))), argnums)(*args)
    want = rjax.grad(lambda *a: rjax.numpy.sum(rjax.numpy.sin(rf(*a))), argnums)(*args)
    _compare(got, want, 2e-3, 2e-3)


def test_det_grad_at_singular_matrices_like_jax(rjax):
    # rank n-1: the adjugate; rank n-2: zeros; a zero pivot before the last: zeros (JAX)
    for a in (SING4, np.diag([1., 0, 3, 0]).astype(np.float32),
              np.diag([1., 0, 3, 4]).astype(np.float32), SING):
        _compare(jaxlite.grad(jnp.linalg.det)(a), rjax.grad(rjax.numpy.linalg.det)(a),
                 1e-5, 1e-5)


def test_eig_vectors_not_differentiable_unless_asked():
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        jaxlite.jvp(lambda a: jnp.linalg.eig(a)[1], (A3,), (A3,))


def test_second_derivative_of_logdet():
    # d2 log det(A)[dA, dA] = -tr(A^-1 dA A^-1 dA)
    a = spd(3).astype(np.float64)
    with jaxlite.enable_x64(True):
        h = np.asarray(jaxlite.hessian(lambda m: jnp.linalg.slogdet(m)[1])(a))
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(h, -np.einsum("li,jk->ijkl", ai, ai), rtol=1e-6, atol=1e-8)


# ---- vmap and jit --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["solve", "inv", "det4", "slogdet", "cholesky", "qr", "pinv",
                                  "lu", "triangular_solve", "eigh_w"])
def test_vmap_and_jit(name):
    make, args = GRAD_CASES[name]
    f = make(_Lib(jnp, lax))
    stacked = [np.stack([a, a * 1.25, a + 0.5 * np.eye(*a.shape[-2:]) if a.ndim == 2
                         and a.shape[0] == a.shape[1] else a]) for a in args]
    check_vmap(f, stacked, 0, rtol=1e-4, atol=1e-5)
    if len(args) == 2:
        check_vmap(f, [stacked[0], args[1]], (0, None), rtol=1e-4, atol=1e-5)
    jaxlite.tree_util.tree_map(
        lambda g, w: np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5,
                                                atol=1e-6),
        jaxlite.jit(f)(*args), f(*args))


def test_tridiagonal_solve_vmap_grad():
    dl, d, du, b = rnd(4), rnd(4) + 4, rnd(4), rnd(4, 2)
    check_vmap(lax.linalg.tridiagonal_solve, [np.stack([dl, dl]), d, du, np.stack([b, -b])],
               (0, None, None, 0), rtol=1e-5)
    check_grads(lax.linalg.tridiagonal_solve, (dl, d, du, b), order=1, rtol=1e-4)


def test_jit_reports_lapack_fallback():
    # factorisations are opaque kernels: jit runs them through their NumPy/SciPy impls
    f = jaxlite.jit(lambda a, b: jnp.linalg.solve(a, b) + 1)
    np.testing.assert_allclose(f(A3, B3), np.linalg.solve(A3, B3) + 1, rtol=1e-5)


# ---- dtype and shape sweeps (slow tier) --------------------------------------------------------

SWEEP_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SWEEP_FUNCS = ["solve", "inv", "det", "slogdet", "cholesky", "eigvalsh", "qr", "pinv",
               "lu", "svd", "matrix_rank"]


def _sweep_call(L, name, a):
    if name == "solve":
        return L.linalg.solve(a, a[..., :1] * 2)
    if name == "lu":
        return L.lax.linalg.lu(a)
    if name == "svd":
        return L.linalg.svd(a, compute_uv=False)
    if name == "qr":
        return L.linalg.qr(a, mode="r")
    return getattr(L.linalg, name)(a)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", SWEEP_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (2, 3, 4, 4), (0, 0), (2, 0, 0)])
@pytest.mark.parametrize("name", SWEEP_FUNCS)
def test_sweep_like_jax(name, shape, dtype, rjax, x64):
    n = shape[-1]
    a = (rnd(*shape, dtype=dtype) @ np.conj(np.swapaxes(rnd(*shape, dtype=dtype), -1, -2))
         + n * np.eye(n)).astype(dtype) if n else np.zeros(shape, dtype)
    lib, rlib = _libs(rjax)
    t = 2e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9
    try:
        want = _sweep_call(rlib, name, a)
    except Exception as e:  # noqa: BLE001  (JAX's own error for this case)
        with pytest.raises(type(e)):
            _sweep_call(lib, name, a)
        return
    _compare(_sweep_call(lib, name, a), want, t, t)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["solve", "inv", "det4", "slogdet", "cholesky", "qr", "pinv",
                                  "lu"])
def test_sweep_grads_like_jax(name, dtype, rjax, x64):
    make, args = GRAD_CASES[name]
    args = tuple(np.asarray(a).astype(dtype) for a in args)
    lib, rlib = _libs(rjax)
    f, rf = make(lib), make(rlib)
    t = rnd(*args[0].shape, dtype=dtype)
    got = jaxlite.jvp(lambda x: f(x, *args[1:]), (args[0],), (t,))[1]
    want = rjax.jvp(lambda x: rf(x, *args[1:]), (args[0],), (t,))[1]
    _compare(got, want, 1e-7, 1e-8)
