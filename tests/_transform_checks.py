"""Checks for transformation rules, shared by the test files.

- ``check_grads(f, args)``: the JVP agrees with central finite differences along random
  directions, and the VJP is the JVP's transpose (<vjp(ct), t> == <ct, jvp(t)>), run in
  float64; ``order=2`` checks the derivative of the derivative as well.
- ``check_vmap(f, args, in_axes)``: vmap's result equals the per-example results stacked.
- ``check_vs_jax(jl_fn, jax_fn, args)``: same values (and dtype/shape) as real JAX.
"""
from __future__ import annotations

import numpy as np

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.tree_util import tree_flatten, tree_map, tree_unflatten


def _inexact(x):
    return np.issubdtype(np.asarray(x).dtype, np.inexact)


def _rand_like(rng, x):
    x = np.asarray(x)
    if not _inexact(x):
        return None
    t = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
        t = t + 1j * rng.standard_normal(x.shape)
    return t.astype(x.dtype)


def _to64(x):
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return x.astype(np.float64)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x


def _vdot(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.real(np.sum(np.conj(a) * b)) if a.size else 0.0


def check_grads(f, args, order=1, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0, modes=("fwd", "rev")):
    """Checks ``f``'s derivatives at ``args`` (a tuple of arrays).  Raises AssertionError."""
    rng = np.random.default_rng(seed)
    with jaxlite.enable_x64(True):
        args = tuple(_to64(a) for a in args)
        tangents = [_rand_like(rng, a) for a in args]
        diff = [i for i, t in enumerate(tangents) if t is not None]

        def f_diff(*xs):
            full = list(args)
            for i, x in zip(diff, xs):
                full[i] = x
            return f(*full)

        primals = tuple(jnp.asarray(args[i]) for i in diff)
        ts = tuple(jnp.asarray(tangents[i]) for i in diff)
        out, t_out = jaxlite.jvp(f_diff, primals, ts)
        out_l, _ = tree_flatten(out)
        t_l, _ = tree_flatten(t_out)
        if "fwd" in modes:
            plus = tree_flatten(f_diff(*[p + eps * t for p, t in zip(primals, ts)]))[0]
            minus = tree_flatten(f_diff(*[p - eps * t for p, t in zip(primals, ts)]))[0]
            for tl, p_, m_ in zip(t_l, plus, minus):
                if not _inexact(p_):
                    continue
                num = (np.asarray(p_) - np.asarray(m_)) / (2 * eps)
                np.testing.assert_allclose(np.asarray(tl), num, rtol=rtol * 100,
                                           atol=atol * 100, err_msg="JVP vs finite differences")
        if "rev" in modes:
            _, pull = jaxlite.vjp(f_diff, *primals)
            cts = [(_rand_like(rng, o) if _inexact(o) else
                    np.zeros(np.shape(o), jaxlite.dtypes.float0)) for o in out_l]
            # complex values: the pullback takes and returns conjugated cotangents (JAX's
            # convention), so <t, conj(vjp(conj(ct)))> == <jvp(t), ct>
            ct_tree = tree_unflatten(tree_flatten(out)[1], [jnp.asarray(np.conj(c)) if
                                                            c.dtype != jaxlite.dtypes.float0
                                                            else c for c in cts])
            g = pull(ct_tree)
            lhs = sum(_vdot(ti, np.conj(np.asarray(gi))) for gi, ti in zip(g, ts))
            rhs = sum(_vdot(tl, c) for c, tl, o in zip(cts, t_l, out_l) if _inexact(o))
            np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=atol,
                                       err_msg="VJP is not the transpose of the JVP")
        if order > 1:
            def jvp_fn(*xs):
                return jaxlite.jvp(f_diff, xs, ts)[1]
            check_grads(jvp_fn, primals, order=order - 1, eps=eps, rtol=rtol, atol=atol,
                        seed=seed + 1, modes=modes)


def _take(x, i, ax):
    return np.take(np.asarray(x), i, axis=ax)


def check_vmap(f, args, in_axes=0, rtol=1e-6, atol=1e-6):
    """``vmap(f, in_axes)(*args)`` equals the stacked per-example ``f`` results."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    sizes = {np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None}
    assert len(sizes) == 1, sizes
    (n,) = sizes
    got = jaxlite.vmap(f, in_axes=tuple(axes))(*args)
    per = [f(*[a if ax is None else jnp.asarray(_take(a, i, ax)) for a, ax in zip(args, axes)])
           for i in range(n)]
    want = tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *per)
    g_l, g_t = tree_flatten(got)
    w_l, w_t = tree_flatten(want)
    assert g_t == w_t, (g_t, w_t)
    for g, w in zip(g_l, w_l):
        g = np.asarray(g)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def check_vs_jax(got, want, rtol=1e-5, atol=1e-6):
    """Pytree ``got`` (jaxlite) equals ``want`` (real JAX): values, shapes and dtypes."""
    g_l, _ = tree_flatten(got)
    import jax
    w_l = jax.tree_util.tree_leaves(want)
    assert len(g_l) == len(w_l), (len(g_l), len(w_l))
    for g, w in zip(g_l, w_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        elif g.dtype.kind != "V":
            np.testing.assert_array_equal(g, w)
