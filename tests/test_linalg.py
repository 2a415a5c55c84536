"""Products and linear algebra of jaxlite.numpy against real JAX (values, shape, dtype, weak
type), eagerly and under jit: dot, matmul, vdot, vecdot, matvec, vecmat, inner, outer,
tensordot, kron, trace, einsum, linalg.norm / vector_norm / matrix_norm / svd."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxlite
import jaxlite.numpy as jnp
from oracle import assert_like_jax

rng = np.random.default_rng(2)


def r(*shape, dt=np.float32):
    return rng.normal(size=shape).astype(dt)


A, Bm, v3, T = r(2, 3), r(3, 4), r(3), r(2, 3, 4)
Bt = r(5, 3, 4)
I8 = rng.integers(-3, 3, (3, 3)).astype(np.int8)
I32 = rng.integers(-9, 9, (3, 4)).astype(np.int32)
BOOL = rng.random((3, 3)) > 0.5
F16 = r(3, 4, dt=np.float16)
C = (r(3, 3) + 1j * r(3, 3)).astype(np.complex64)
C3 = (r(3) + 1j * r(3)).astype(np.complex64)


def _compare(got, want, rtol, atol):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, rtol, atol)
        return
    assert_like_jax(got, want, rtol=rtol, atol=atol)


def check(fn_j, fn_r, args, *, rtol=1e-5, atol=1e-5, jit=True):
    want = fn_r(*args)
    _compare(fn_j(*args), want, rtol, atol)
    if jit:
        _compare(jaxlite.jit(fn_j)(*args), want, rtol, atol)


PRODUCT_CASES = [
    ("dot", (A, Bm)), ("dot", (A, v3)), ("dot", (v3, v3)), ("dot", (T, r(5, 4, 3))),
    ("dot", (2.0, A)), ("dot", (A, np.float32(3))), ("dot", (I8, I8)), ("dot", (BOOL, BOOL)),
    ("dot", (I32, r(4, 2))), ("dot", (C, C3)),
    ("dot", (I8, v3)),
    ("matmul", (A, Bm)), ("matmul", (v3, Bm)), ("matmul", (A, v3)), ("matmul", (Bt, r(4, 2))),
    ("matmul", (r(2, 4), Bt.transpose(0, 2, 1))), ("matmul", (r(2, 1, 3, 4), r(5, 4, 2))),
    ("matmul", (v3, Bt)), ("matmul", (Bt, r(4))), ("matmul", (Bt, r(5, 4, 1))),
    ("matmul", (I8, BOOL)), ("matmul", (F16, r(4, 2, dt=np.float16))), ("matmul", (C, C)),
    ("matmul", (I32, r(4, 2))),
    ("vdot", (A, A)), ("vdot", (C3, C3)), ("vdot", (I8, I8)),
    ("vecdot", (A, r(5, 1, 3))), ("vecdot", (C, C3)),
    ("inner", (A, r(4, 3))), ("inner", (v3, v3)), ("inner", (3, A)),
    ("outer", (A, v3)), ("outer", (I8, BOOL)), ("outer", (v3, 2)),
    ("kron", (A, r(2, 2))), ("kron", (v3, A)), ("kron", (I8, BOOL[0])),
    ("matvec", (T, r(4))), ("vecmat", (v3, r(2, 3, 4))), ("vecmat", (C3, C)),
]


@pytest.mark.parametrize("name,args", PRODUCT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(PRODUCT_CASES)])
def test_products_like_jax(rjnp, name, args):
    tol = 2e-2 if any(getattr(a, "dtype", None) == np.float16 for a in args) else 1e-5
    check(getattr(jnp, name), getattr(rjnp, name), args, rtol=tol, atol=tol)


TENSORDOT_CASES = [
    (T, r(3, 4, 2), 2), (T, r(4, 2, 3), ((1, 2), (2, 0))), (A, Bm, 0), (A, Bm, (1, 0)),
    (A, Bm, [[1], [0]]), (T, r(4, 3), (-1, 0)), (I8, I8, 1), (T, T, 3),
]


@pytest.mark.parametrize("a,b,axes", TENSORDOT_CASES)
def test_tensordot_like_jax(rjnp, a, b, axes):
    check(lambda x, y: jnp.tensordot(x, y, axes), lambda x, y: rjnp.tensordot(x, y, axes),
          (a, b))


TRACE_CASES = [
    (I8, {}), (T, dict(offset=1, axis1=2, axis2=0)), (A, dict(offset=-1)), (A, dict(offset=5)),
    (BOOL, {}), (T, dict(axis1=-1, axis2=-2)), (Bm, dict(dtype=np.float16)), (C, {}),
]


@pytest.mark.parametrize("a,kw", TRACE_CASES)
def test_trace_like_jax(rjnp, a, kw):
    tol = 3e-3 if kw.get("dtype") == np.float16 else 1e-5   # f16 summation order
    check(lambda x: jnp.trace(x, **kw), lambda x: rjnp.trace(x, **kw), (a,), rtol=tol)


EINSUM_CASES = [
    ("ij,jk->ik", (A, Bm)), ("ij,jk", (A, Bm)), ("ii", (r(3, 3),)), ("ii->i", (r(3, 3),)),
    ("bij,bjk->bki", (Bt, r(5, 4, 2))), ("...ij,...j->...i", (T, r(4))),
    ("ij,kl->ijkl", (A, Bm)), ("ijk,jil->kl", (T, r(3, 2, 5))),
    ("ij,jk,kl->il", (A, Bm, r(4, 2))), ("i,i,i->", (v3, v3, v3)), ("iij->j", (r(3, 3, 2),)),
    ("ij,ij->", (I8, I8)), ("ij->ji", (A,)), ("ij,j->i", (A, r(1))), ("i...->...", (T,)),
    ("ijk", (T,)), ("i,j", (v3, v3)), ("ii,ij->j", (r(3, 3), r(3, 2))),
    ("ab,bc,cd,de->ae", (r(2, 3), r(3, 4), r(4, 5), r(5, 6))), ("ij,jk", (I8, BOOL)),
    ("i->", (BOOL[0],)), ("ij,ij->ij", (C, C)), ("iji->j", (r(3, 2, 3),)),
    ("...,...->...", (A, np.float32(2))), ("bhqd,bhkd->bhqk", (r(2, 3, 4, 5), r(2, 3, 6, 5))),
    ("ij,jk->", (I32, r(4, 2))), ("ijj->i", (r(2, 3, 3),)),
]


@pytest.mark.parametrize("spec,args", EINSUM_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(EINSUM_CASES)])
def test_einsum_like_jax(rjnp, spec, args):
    check(lambda *a: jnp.einsum(spec, *a), lambda *a: rjnp.einsum(spec, *a), args,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("optimize", [True, False, "greedy", "optimal"])
def test_einsum_optimize_options(rjnp, optimize):
    args = (r(2, 3), r(3, 4), r(4, 5))
    check(lambda *a: jnp.einsum("ij,jk,kl->il", *a, optimize=optimize),
          lambda *a: rjnp.einsum("ij,jk,kl->il", *a, optimize=optimize), args, rtol=1e-4)


def test_einsum_interleaved_and_preferred_type(rjnp):
    assert_like_jax(jnp.einsum(A, [0, 1], Bm, [1, 2], [2, 0]),
                    rjnp.einsum(A, [0, 1], Bm, [1, 2], [2, 0]), rtol=1e-5)
    assert_like_jax(jnp.einsum(T, [0, Ellipsis], [Ellipsis]),
                    rjnp.einsum(T, [0, Ellipsis], [Ellipsis]), rtol=1e-5)
    for spec, args in (("ij->", (I8,)), ("ij,jk", (I8, I8)), ("i,i", (v3, v3))):
        for pet in (np.int32, np.float32):
            want = rjnp.einsum(spec, *args, preferred_element_type=pet)
            assert_like_jax(jnp.einsum(spec, *args, preferred_element_type=pet), want)
    big = np.full((2, 64), 100, np.int8)
    assert_like_jax(jnp.einsum("ij,kj->ik", big, big, preferred_element_type=np.int32),
                    rjnp.einsum("ij,kj->ik", big, big, preferred_element_type=np.int32))


def test_einsum_path_matches_opt_einsum(rjnp):
    path, _ = jnp.einsum_path("ij,jk,kl->il", r(2, 30), r(30, 4), r(4, 50))
    want, _ = rjnp.einsum_path("ij,jk,kl->il", r(2, 30), r(30, 4), r(4, 50))
    assert list(path) == list(want)


def test_weak_types(rjax, rjnp):
    def weak(lib, laxm, shape):
        return laxm.broadcast(lib.asarray(2.0), shape)
    wj, wr = weak(jnp, jaxlite.lax, (3,)), weak(rjnp, rjax.lax, (3,))
    mj, mr = weak(jnp, jaxlite.lax, (3, 3)), weak(rjnp, rjax.lax, (3, 3))
    for name in ("dot", "matmul", "vdot", "inner", "outer", "kron"):
        assert_like_jax(getattr(jnp, name)(wj, wj), getattr(rjnp, name)(wr, wr))
        assert_like_jax(getattr(jnp, name)(mj, mj), getattr(rjnp, name)(mr, mr))
        assert_like_jax(getattr(jnp, name)(wj, v3), getattr(rjnp, name)(wr, v3))
        assert_like_jax(getattr(jnp, name)(wj, v3.astype(np.float16)),
                        getattr(rjnp, name)(wr, v3.astype(np.float16)), rtol=1e-3)
    for spec, args_j, args_r in (("i,i", (wj, wj), (wr, wr)), ("ij->i", (mj,), (mr,)),
                                 ("ii", (mj,), (mr,)), ("ij->ji", (mj,), (mr,))):
        assert_like_jax(jnp.einsum(spec, *args_j), rjnp.einsum(spec, *args_r))
    assert_like_jax(jnp.tensordot(mj, mj), rjnp.tensordot(mr, mr))
    assert_like_jax(jnp.dot(2.0, wj), rjnp.dot(2.0, wr))
    assert_like_jax(jnp.trace(mj), rjnp.trace(mr))
    assert_like_jax(jnp.linalg.norm(wj), rjnp.linalg.norm(wr))


def test_matmul_operator_and_method(rjnp):
    a = jnp.asarray(A)
    assert_like_jax(a @ Bm, rjnp.asarray(A) @ Bm, rtol=1e-5)
    assert_like_jax(A @ jnp.asarray(Bm), A @ rjnp.asarray(Bm), rtol=1e-5)
    assert_like_jax(a.dot(Bm), rjnp.asarray(A).dot(Bm), rtol=1e-5)
    assert_like_jax(jnp.asarray(T).trace(), rjnp.asarray(T).trace(), rtol=1e-5)


def test_matmul_is_one_dot_general_without_broadcast_copies():
    """(batch, m, k) @ (k, n) stages one dot_general and no broadcast_in_dim."""
    text = str(jaxlite.make_jaxpr(jnp.matmul)(Bt, r(4, 2)))
    assert text.count("dot_general") == 1 and "broadcast_in_dim" not in text


ERRORS = [
    ("dot", (np.ones(3), np.ones(4)), TypeError),
    ("dot", (np.ones((2, 3)), np.ones((4, 5))), TypeError),
    ("matmul", (np.ones(3), np.ones(4)), TypeError),
    ("matmul", (np.ones((2, 2, 3)), np.ones((3, 3, 4))), ValueError),
    ("matmul", (np.float32(2), np.ones(3)), ValueError),
    ("vdot", (np.ones((2, 3)), np.ones(5)), TypeError),
    ("inner", (np.ones((2, 3)), np.ones(5)), TypeError),
    ("vecdot", (np.ones((2, 3)), np.ones((2, 4))), ValueError),
    ("vecdot", (np.ones((2, 3)), np.ones((5, 3))), ValueError),
    ("trace", (np.ones(3),), ValueError),
    ("outer", ([1, 2], np.ones(2)), TypeError),
]


@pytest.mark.parametrize("name,args,exc", ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_like_jax(rjnp, name, args, exc):
    with pytest.raises(exc):
        getattr(rjnp, name)(*args)
    with pytest.raises(exc):
        getattr(jnp, name)(*args)


def test_contraction_error_names_both_shapes():
    with pytest.raises(TypeError, match=r"\(3,\) \(lhs\) and \(4,\) \(rhs\)"):
        jnp.dot(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(4, 5\)"):
        jnp.matmul(np.ones((2, 3)), np.ones((4, 5)))


TENSORDOT_ERRORS = [
    (np.ones((2, 3)), np.ones((3, 4)), 3, TypeError),
    (np.ones((2, 3)), np.ones((3, 4)), ((1, 0), (0,)), TypeError),
    (np.ones((2, 3)), np.ones((3, 4)), "a", TypeError),
    (np.ones((2, 3)), np.ones((3, 4)), 1.5, TypeError),
    (np.ones((2, 3)), np.ones((3, 4)), (1, 5), ValueError),
    (np.ones((2, 3)), np.ones((2, 4)), 1, TypeError),
]


@pytest.mark.parametrize("a,b,axes,exc", TENSORDOT_ERRORS)
def test_tensordot_errors_like_jax(rjnp, a, b, axes, exc):
    with pytest.raises(exc):
        rjnp.tensordot(a, b, axes)
    with pytest.raises(exc):
        jnp.tensordot(a, b, axes)


EINSUM_ERRORS = [
    ("ij,jk", (np.ones((2, 3)), np.ones((4, 5)))),
    ("ij,jk->ii", (np.ones((2, 3)), np.ones((3, 5)))),
    ("ij->k", (np.ones((2, 3)),)),
    ("ijk", (np.ones((2, 3)),)),
    ("ij,jk", (np.ones((2, 3)), np.ones((3, 4)), np.ones(3))),
    ("i$j", (np.ones((2, 3)),)),
    ("ij->i->j", (np.ones((2, 3)),)),
]


@pytest.mark.parametrize("spec,args", EINSUM_ERRORS)
def test_einsum_errors_like_jax(rjnp, spec, args):
    with pytest.raises(ValueError) as want:
        rjnp.einsum(spec, *args)
    with pytest.raises(ValueError) as got:
        jnp.einsum(spec, *args)
    assert str(got.value) == str(want.value)


# ---- norms and svd ------------------------------------------------------------------------

X3 = r(2, 3, 4)
M = r(3, 4)
VEC = r(5)
VI = np.array([0, 3, -4, 0], np.int32)
NORM_CASES = [
    (X3, {}), (X3, dict(keepdims=True)), (M, dict(ord=1)), (M, dict(ord=-1)),
    (M, dict(ord=np.inf)), (M, dict(ord=-np.inf)), (M, dict(ord="fro")), (M, dict(ord="nuc")),
    (M, dict(ord=2)), (M, dict(ord=-2)), (X3, dict(ord=1, axis=(2, 0))),
    (X3, dict(ord=2, axis=(0, 1), keepdims=True)), (X3, dict(ord=np.inf, axis=(1, 2),
                                                             keepdims=True)),
    (X3, dict(ord="nuc", axis=(0, 2))),
    (VEC, dict(ord=1)), (VEC, dict(ord=0)), (VI, dict(ord=0)), (VI, {}),
    (VEC, dict(ord=np.inf)), (VEC, dict(ord=-np.inf)), (VEC, dict(ord=3)), (VEC, dict(ord=-1)),
    (VEC, dict(ord=0.5)), (X3, dict(axis=1, ord=3, keepdims=True)), (X3, dict(axis=-1)),
    (C, {}), (C, dict(ord=1)), (C, dict(ord="nuc")), (C, dict(axis=0, ord=np.inf)),
    (VEC.astype(np.float16), dict(ord=3)), (VEC.astype(np.float16), {}),
]


@pytest.mark.parametrize("x,kw", NORM_CASES)
def test_norm_like_jax(rjnp, x, kw):
    check(lambda a: jnp.linalg.norm(a, **kw), lambda a: rjnp.linalg.norm(a, **kw), (x,),
          rtol=3e-3 if x.dtype == np.float16 else 1e-5, atol=1e-5)


@pytest.mark.parametrize("name,args,kw", [
    ("vector_norm", (X3,), dict(ord=1)), ("vector_norm", (X3,), dict(axis=(0, 2),
                                                                    keepdims=True)),
    ("vector_norm", (X3,), dict(keepdims=True, ord=np.inf)), ("vector_norm", (VI,), {}),
    ("matrix_norm", (X3,), dict(ord="nuc")), ("matrix_norm", (X3,), dict(keepdims=True)),
    ("matrix_norm", (X3,), dict(ord=-np.inf)),
    ("svd", (M,), dict(compute_uv=False)), ("svd", (X3,), dict(compute_uv=False)),
    ("trace", (X3,), dict(offset=1)), ("outer", (VEC, VEC), {}),
    ("tensordot", (M, M.T), dict(axes=1)), ("vecdot", (M, M), {}), ("matmul", (M, M.T), {}),
    ("matrix_transpose", (X3,), {}), ("diagonal", (X3,), dict(offset=1)),
])
def test_linalg_namespace_like_jax(rjnp, name, args, kw):
    check(lambda *a: getattr(jnp.linalg, name)(*a, **kw),
          lambda *a: getattr(rjnp.linalg, name)(*a, **kw), args, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x", [M, M.T, X3, C, np.arange(6).reshape(2, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_reconstructs(rjnp, x, full):
    u, s, vh = jnp.linalg.svd(x, full_matrices=full)
    wu, ws, wvh = rjnp.linalg.svd(x, full_matrices=full)
    for g, w in ((u, wu), (s, ws), (vh, wvh)):
        assert g.shape == w.shape and g.dtype == w.dtype
    assert_like_jax(s, ws, rtol=1e-4, atol=1e-5)
    k = s.shape[-1]
    rec = np.asarray(u)[..., :, :k] * np.asarray(s)[..., None, :] @ np.asarray(vh)[..., :k, :]
    np.testing.assert_allclose(rec, x, rtol=1e-4, atol=1e-4)


NORM_ERRORS = [
    (X3, dict(ord=1)), (X3, dict(axis=(0, 1, 2))), (VEC, dict(ord="fro")),
    (X3, dict(ord=3, axis=(0, 1))), (X3, dict(axis=(1, 1))), (X3, dict(axis=3)),
]


@pytest.mark.parametrize("x,kw", NORM_ERRORS)
def test_norm_errors_like_jax(rjnp, x, kw):
    with pytest.raises(ValueError):
        rjnp.linalg.norm(x, **kw)
    with pytest.raises(ValueError):
        jnp.linalg.norm(x, **kw)


# ---- property tests -----------------------------------------------------------------------

@st.composite
def matmul_shapes(draw):
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    ba = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, 2)):]
    bb = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, 2)):]
    sa = ba + (m, k) if draw(st.integers(0, 3)) else (k,)
    sb = bb + (k, n) if draw(st.integers(0, 3)) else (k,)
    return sa, sb


@settings(max_examples=40, deadline=None)
@given(matmul_shapes(), st.sampled_from(["float32", "int32"]))
def test_property_matmul_matches_numpy(shapes, dt):
    sa, sb = shapes
    a = rng.integers(-4, 4, sa).astype(dt)
    b = rng.integers(-4, 4, sb).astype(dt)
    got = np.asarray(jnp.matmul(a, b))
    want = np.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4),
       st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(0, 2**16))
def test_property_einsum_pair_matches_numpy(dims_a, dims_b, seed):
    """Random two-operand einsums over shared letters (contractions, batch dims, outer
    products, implicit outputs) against numpy.einsum."""
    r2 = np.random.default_rng(seed)
    letters = "abcd"
    sa = "".join(letters[i] for i in range(len(dims_a)))
    pick = r2.permutation(len(letters))[:len(dims_b)]
    sb = "".join(letters[i] for i in pick)
    size = {c: d for c, d in zip(sa, dims_a)}
    for c, d in zip(sb, dims_b):
        size.setdefault(c, d)
    out = "".join(c for c in sorted(set(sa + sb)) if r2.random() < 0.5)
    spec = f"{sa},{sb}->{out}"
    a = r2.normal(size=[size[c] for c in sa]).astype(np.float32)
    b = r2.normal(size=[size[c] for c in sb]).astype(np.float32)
    got = np.asarray(jnp.einsum(spec, a, b))
    np.testing.assert_allclose(got, np.einsum(spec, a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
@pytest.mark.parametrize("x", [r(3, 3), rng.integers(-2, 3, (2, 3, 3)).astype(np.int32)])
def test_matrix_power_like_jax(rjnp, x, n):
    check(lambda a: jnp.linalg.matrix_power(a, n), lambda a: rjnp.linalg.matrix_power(a, n),
          (x,), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shapes", [[(3,), (3, 4), (4, 2)], [(2, 3), (3, 4), (4,)],
                                    [(3,), (3,)], [(2, 3), (3, 4), (4, 5), (5, 2)]])
def test_multi_dot_like_jax(rjnp, shapes):
    arrays = [r(*s) for s in shapes]
    assert_like_jax(jnp.linalg.multi_dot(arrays), rjnp.linalg.multi_dot(arrays), rtol=1e-4,
                    atol=1e-5)


def test_svdvals_and_linalg_errors(rjnp):
    assert_like_jax(jnp.linalg.svdvals(M), rjnp.linalg.svdvals(M), rtol=1e-5)
    for lib in (jnp, rjnp):  # JAX 0.10.2: TypeError for a non-square matrix
        with pytest.raises(TypeError):
            lib.linalg.matrix_power(r(2, 3), 2)
    with pytest.raises(TypeError):
        jnp.linalg.matrix_power(r(2, 2), 1.5)
    for lib in (jnp, rjnp):  # JAX 0.10.2: TypeError for an operand of rank < 2
        with pytest.raises(TypeError):
            lib.linalg.svd(r(3))
    with pytest.raises(TypeError):
        jaxlite.lax.linalg.svd(np.ones((2, 2), np.int32))


def _dot_params(jaxpr):
    """(precision names, preferred dtype name) of each dot_general, in program order."""
    out = []
    for e in jaxpr.eqns:
        if e.primitive.name == "dot_general":
            prec = e.params.get("precision")
            if prec is not None and not isinstance(prec, tuple):
                prec = (prec, prec)
            names = None if prec is None else tuple(
                None if p is None else str(p).split(".")[-1] for p in prec)
            pet = e.params.get("preferred_element_type")
            out.append((names, None if pet is None else np.dtype(pet).name))
    return out


@pytest.mark.parametrize("kw", [
    dict(precision="highest"),
    dict(precision=("high", "default")),
    dict(precision="high", preferred_element_type=np.float32),
    dict(preferred_element_type=np.float32),
])
def test_backward_dot_keeps_precision(rjax, kw):
    """The transposed dot_generals of reverse mode carry the forward one's precision (in
    its order) and preferred_element_type, as JAX's (they were dropped: a HIGHEST-precision
    product ran at default precision in the backward pass)."""
    import jax.lax as rlax
    a, b = r(2, 3), r(3, 4)

    def f(L, N):
        def g(x, y):
            prec = kw.get("precision")
            if isinstance(prec, tuple):
                prec = tuple(getattr(L.Precision, p.upper()) for p in prec)
            return N.sum(L.dot_general(x, y, (((1,), (0,)), ((), ())), precision=prec,
                                       preferred_element_type=kw.get(
                                           "preferred_element_type")))
        return g
    got = _dot_params(jaxlite.make_jaxpr(jaxlite.grad(f(jaxlite.lax, jnp), (0, 1)))(a, b).jaxpr)
    want = _dot_params(rjax.make_jaxpr(rjax.grad(f(rlax, rjax.numpy), (0, 1)))(a, b).jaxpr)
    assert len(got) == 3 and got == want
    g = jaxlite.grad(f(jaxlite.lax, jnp), (0, 1))(a, b)
    w = rjax.grad(f(rlax, rjax.numpy), (0, 1))(a, b)
    for x, y in zip(g, w):
        assert_like_jax(x, y, rtol=1e-5)
