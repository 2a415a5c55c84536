"""jaxlite.scipy.linalg against jax.scipy.linalg: each case run on both and compared
(value with a tolerance suited to LAPACK, shape, dtype, weak type; or the exception type);
factorisations whose factors are not unique are compared through what they reconstruct."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.scipy.linalg  # noqa: F401
from oracle import assert_like_jax
from test_numpy_breadth import check

A = np.array
RNG = np.random.default_rng(0)
M3 = RNG.standard_normal((3, 3)).astype(np.float32)
SPD = (M3 @ M3.T + 3 * np.eye(3)).astype(np.float32)
B3 = RNG.standard_normal((3, 2)).astype(np.float32)
V3 = RNG.standard_normal(3).astype(np.float32)
C3 = (M3 + 1j * RNG.standard_normal((3, 3))).astype(np.complex64)
BATCH = np.stack([SPD, SPD + np.eye(3, dtype=np.float32)])


def S(lib):
    return lib.scipy.linalg


CASES = {
    "cholesky upper": lambda j, n: S(j).cholesky(SPD),
    "cholesky lower": lambda j, n: S(j).cholesky(SPD, lower=True),
    "cholesky batched": lambda j, n: S(j).cholesky(BATCH, lower=True),
    "cholesky not positive": lambda j, n: S(j).cholesky(-SPD),
    "cho_solve": lambda j, n: S(j).cho_solve(S(j).cho_factor(SPD), B3),
    "cho_solve lower vector": lambda j, n: S(j).cho_solve(S(j).cho_factor(SPD, lower=True),
                                                          V3),
    "cho_solve grad": lambda j, n: j.grad(lambda m: S(j).cho_solve((m, True), V3).sum())(
        np.linalg.cholesky(SPD).astype(np.float32)),
    "solve_triangular": lambda j, n: S(j).solve_triangular(np.triu(M3) + 3 * np.eye(3,
                                                           dtype=np.float32), B3),
    "solve_triangular lower T": lambda j, n: S(j).solve_triangular(
        np.tril(M3) + 3 * np.eye(3, dtype=np.float32), V3, trans="T", lower=True),
    "solve_triangular unit": lambda j, n: S(j).solve_triangular(M3, B3, unit_diagonal=True),
    "solve_triangular complex C": lambda j, n: S(j).solve_triangular(
        np.triu(C3) + 3 * np.eye(3), C3[:, :1], trans=2),
    "solve_triangular bad trans": lambda j, n: S(j).solve_triangular(M3, B3, trans=3),
    "solve_triangular grad": lambda j, n: j.grad(
        lambda b: S(j).solve_triangular(np.triu(M3) + 3 * np.eye(3, dtype=np.float32),
                                        b).sum())(V3),
    "lu_solve": lambda j, n: S(j).lu_solve(S(j).lu_factor(M3), B3),
    "lu_solve vector": lambda j, n: S(j).lu_solve(S(j).lu_factor(M3), V3),
    "lu_solve trans 1": lambda j, n: S(j).lu_solve(S(j).lu_factor(M3), B3, trans=1),
    "lu_solve complex trans 2": lambda j, n: S(j).lu_solve(S(j).lu_factor(C3), C3[:, :2],
                                                           trans=2),
    "lu_solve bad trans": lambda j, n: S(j).lu_solve(S(j).lu_factor(M3), B3, trans=5),
    "lu_factor pivots": lambda j, n: S(j).lu_factor(M3)[1],
    "lu": lambda j, n: S(j).lu(M3),
    "lu permute_l": lambda j, n: S(j).lu(M3, permute_l=True),
    "lu wide": lambda j, n: S(j).lu(M3[:2]),
    "lu tall": lambda j, n: S(j).lu(B3),
    "solve": lambda j, n: S(j).solve(M3, B3),
    "solve pos": lambda j, n: S(j).solve(SPD, V3, assume_a="pos"),
    "solve pos lower": lambda j, n: S(j).solve(np.tril(SPD), V3, assume_a="pos", lower=True),
    "solve bad assume": lambda j, n: S(j).solve(SPD, V3, assume_a="banded"),
    "solve grad": lambda j, n: j.grad(lambda m: S(j).solve(m, V3).sum())(M3),
    "inv": lambda j, n: S(j).inv(M3),
    "inv singular": lambda j, n: S(j).inv(np.ones((2, 2), np.float32)),
    "det": lambda j, n: S(j).det(M3),
    "det ints": lambda j, n: S(j).det(A([[1, 2], [3, 4]])),
    "svd values": lambda j, n: S(j).svd(M3, compute_uv=False),
    "eigh values": lambda j, n: S(j).eigh(SPD, eigvals_only=True),
    "eigh values upper": lambda j, n: S(j).eigh(np.triu(SPD), lower=False,
                                                eigvals_only=True),
    "eigh b": lambda j, n: S(j).eigh(SPD, SPD),
    "qr r": lambda j, n: n.abs(S(j).qr(M3, mode="r")[0]),
    "qr bad mode": lambda j, n: S(j).qr(M3, mode="bad"),
    "qr raw": lambda j, n: S(j).qr(M3, mode="raw"),
    "schur bad output": lambda j, n: S(j).schur(M3, output="x"),
    "expm": lambda j, n: S(j).expm(M3),
    "expm zero": lambda j, n: S(j).expm(np.zeros((3, 3), np.float32)),
    "expm large": lambda j, n: S(j).expm(10 * SPD),
    "expm batched": lambda j, n: S(j).expm(BATCH / 10),
    "expm complex": lambda j, n: S(j).expm(C3 / 3),
    "expm grad": lambda j, n: j.grad(lambda m: S(j).expm(m).sum())(M3 / 2),
    "expm ints": lambda j, n: S(j).expm(A([[0, 1], [0, 0]])),
    "block_diag": lambda j, n: S(j).block_diag(A([[1, 2]]), A(3.), A([4, 5])),
    "block_diag none": lambda j, n: S(j).block_diag(),
    "block_diag 3-d": lambda j, n: S(j).block_diag(np.ones((1, 1, 1))),
    "toeplitz": lambda j, n: S(j).toeplitz(A([1, 2, 3]), A([1, 4, 5, 6])),
    "toeplitz c only": lambda j, n: S(j).toeplitz(A([1., 2j, 3])),
    "hankel": lambda j, n: S(j).hankel(A([1, 2, 3]), A([3, 4, 5, 6])),
    "hankel c only": lambda j, n: S(j).hankel(A([1, 2, 3])),
    "circulant": lambda j, n: S(j).circulant(A([1, 2, 3])),
    "companion": lambda j, n: S(j).companion(A([1., -3, 2])),
    "companion ints": lambda j, n: S(j).companion(A([2, -3, 2])),
    "companion short": lambda j, n: S(j).companion(A([1.])),
    "hilbert": lambda j, n: S(j).hilbert(3),
    "pascal": lambda j, n: S(j).pascal(4),
    "pascal lower": lambda j, n: S(j).pascal(4, kind="lower"),
    "pascal upper": lambda j, n: S(j).pascal(3, kind="upper"),
    "dft": lambda j, n: S(j).dft(4),
    "dft sqrtn": lambda j, n: S(j).dft(3, scale="sqrtn"),
    "sqrtm": lambda j, n: S(j).sqrtm(SPD),
    "polar unitary": lambda j, n: S(j).polar(M3)[0] @ S(j).polar(M3)[0].T,
    "polar p": lambda j, n: S(j).polar(M3)[1],
    "polar left p": lambda j, n: S(j).polar(M3, side="left", method="svd")[1],
    "polar left qdwh square": lambda j, n: S(j).polar(M3, side="left"),
    "polar bad side": lambda j, n: S(j).polar(M3, side="up"),
    "convolution_matrix": lambda j, n: S(j).convolution_matrix(A([1., 2, 3]), 4),
    "convolution_matrix same": lambda j, n: S(j).convolution_matrix(A([1., 2, 3]), 4, "same"),
    "convolution_matrix valid": lambda j, n: S(j).convolution_matrix(A([1., 2, 3]), 4,
                                                                     "valid"),
    "convolution_matrix ints": lambda j, n: S(j).convolution_matrix(A([1, 2]), 3),
    "fiedler": lambda j, n: S(j).fiedler(A([1., 4, 12])),
    "fiedler ints": lambda j, n: S(j).fiedler(A([1, 4, 12])),
    "fiedler_companion": lambda j, n: S(j).fiedler_companion(A([1., 2, 3, 4])),
    "fiedler_companion scaled": lambda j, n: S(j).fiedler_companion(A([2., 2, 3, 4, 5, 6])),
    "hadamard": lambda j, n: S(j).hadamard(4),
    "hadamard 3": lambda j, n: S(j).hadamard(3),
    "hadamard float": lambda j, n: S(j).hadamard(2, dtype=np.float32),
    "helmert": lambda j, n: S(j).helmert(3),
    "helmert full": lambda j, n: S(j).helmert(4, full=True),
    "invhilbert": lambda j, n: S(j).invhilbert(4),
    "invpascal": lambda j, n: S(j).invpascal(3),
    "invpascal lower": lambda j, n: S(j).invpascal(4, kind="lower"),
    "leslie": lambda j, n: S(j).leslie(A([0.1, 2.0, 1.0, 0.1]), A([0.2, 0.8, 0.7])),
    "leslie bad": lambda j, n: S(j).leslie(A([0.1, 2.0]), A([0.2, 0.8, 0.7])),
    "solve_sylvester": lambda j, n: S(j).solve_sylvester(A([[1., 2], [0, 3]]),
                                                         A([[4., 0], [1, 5]]),
                                                         A([[1., 2], [3, 4]])),
    "solve_sylvester rectangular": lambda j, n: S(j).solve_sylvester(
        SPD, A([[4., 0], [1, 5]]), B3),
    "eigh_tridiagonal values": lambda j, n: S(j).eigh_tridiagonal(A([1., 2, 3]),
                                                                  A([0.5, 0.5]),
                                                                  eigvals_only=True),
    "expm_frechet": lambda j, n: S(j).expm_frechet(A([[1., 2], [0, 3]]), A([[0., 1], [1, 0]])),
    "expm_frechet only": lambda j, n: S(j).expm_frechet(A([[1., 2], [0, 3]]),
                                                        A([[0., 1], [1, 0]]),
                                                        compute_expm=False),
    "qr_multiply": lambda j, n: n.abs(S(j).qr_multiply(A([[1., 2], [3, 4], [5, 6]]),
                                                       A([1., 1, 1]))[0]),
    "rsf2csf": lambda j, n: n.abs(S(j).rsf2csf(A([[1., 2], [-3, 1]]), np.eye(2))[0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scipy_linalg(name, rjax):
    import jax.scipy.linalg  # noqa: F401
    check(CASES[name], rjax, rtol=2e-4, atol=2e-4)


def test_factorisations_reconstruct(rjax):
    """Factors that are unique only up to signs or phases, checked by what they rebuild."""
    L = jaxlite.scipy.linalg
    q, r = L.qr(M3)
    np.testing.assert_allclose(np.asarray(q @ r), M3, atol=1e-5)
    t, z = L.schur(M3)
    np.testing.assert_allclose(np.asarray(z @ t @ z.T), M3, atol=1e-5)
    assert np.allclose(np.tril(np.asarray(t), -2), 0)
    t, z = L.schur(M3, output="complex")
    assert t.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(z @ t @ z.conj().T), M3, atol=1e-5)
    h, q = L.hessenberg(M3, calc_q=True)
    np.testing.assert_allclose(np.asarray(q @ h @ q.T), M3, atol=1e-5)
    assert np.allclose(np.tril(np.asarray(h), -2), 0)
    w, v = L.eigh(SPD)
    np.testing.assert_allclose(np.asarray(v @ np.diag(w) @ v.T), SPD, atol=1e-4)
    u, s, vh = L.svd(M3)
    np.testing.assert_allclose(np.asarray((u * s) @ vh), M3, atol=1e-5)
    f = L.funm(M3, jaxlite.numpy.exp)
    np.testing.assert_allclose(np.asarray(f), np.asarray(L.expm(M3)), rtol=1e-3, atol=1e-3)
    r = L.sqrtm(SPD)
    np.testing.assert_allclose(np.asarray(r @ r).real, SPD, rtol=1e-4, atol=1e-4)
