"""Reverse mode inside and around shard_map, against real JAX on the same devices: with
check_vma a replicated (invariant) input's gradient is summed over the devices, psum of a
varying value transposes to the cotangent itself, psum of an invariant one scales it;
with check_vma=False and under a plain named vmap the older rules hold."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite

X4 = np.arange(4.0, dtype=np.float32)
X8 = (np.arange(8.0, dtype=np.float32) - 3) / 2


def _mesh(lib, n=4):
    return lib.sharding.Mesh(np.array(lib.devices()[:n]), ("i",))


def _cases(lib):
    """name -> thunk computing a value with ``lib`` (jax or jaxlite)."""
    P, lax = lib.sharding.PartitionSpec, lib.lax
    m = _mesh(lib)

    def sm(f, ins, out, cv=True):
        return lib.shard_map(f, mesh=m, in_specs=ins, out_specs=out, check_vma=cv)
    p = np.float32(2.0)
    return {
        "grad psum varying": lambda: sm(lambda v: lib.grad(
            lambda v: lax.psum(v.sum(), "i"))(v), P("i"), P("i"))(X4),
        "grad psum varying, no check": lambda: sm(lambda v: lib.grad(
            lambda v: lax.psum(v.sum(), "i"))(v), P("i"), P("i"), False)(X4),
        "grad invariant p of pmean": lambda: sm(lambda p, v: lib.grad(
            lambda p: lax.pmean((p * v).sum(), "i"))(p), (P(), P("i")), P())(p, X4),
        "grad invariant p, local loss": lambda: sm(lambda p, v: lib.grad(
            lambda p: (p * v).sum())(p), (P(), P("i")), P())(p, X4),
        "grad invariant p, local loss, no check": lambda: sm(lambda p, v: lib.grad(
            lambda p: (p * v).sum())(p)[None], (P(), P("i")), P("i"), False)(p, X4),
        "grad psum of invariant": lambda: sm(lambda p, v: lib.grad(
            lambda p: lax.psum(p * p, "i"))(p) + 0 * lax.psum(v.sum(), "i"),
            (P(), P("i")), P())(p, X4),
        "psum result used with varying": lambda: sm(lambda v: lib.grad(
            lambda v: (lax.psum(v, "i") * v).sum())(v), P("i"), P("i"))(X8),
        "outer grad": lambda: lib.grad(lambda p: sm(
            lambda p, v: lax.psum((p * v).sum(), "i"), (P(), P("i")), P())(p, X4))(p),
        "outer grad, no check": lambda: lib.grad(lambda p: sm(
            lambda p, v: lax.psum((p * v).sum(), "i"), (P(), P("i")), P(), False)(p, X4))(p),
        "value_and_grad tree": lambda: sm(lambda w, v: lib.value_and_grad(
            lambda w: lax.pmean(((v[:, None] * w["a"]) ** 2).sum() + w["b"], "i"))(w),
            ({"a": P(), "b": P()}, P("i")), (P(), {"a": P(), "b": P()}))(
            {"a": np.ones(3, np.float32), "b": np.float32(1.0)}, X8),
        "vmap grad psum": lambda: lib.vmap(lib.grad(lambda v: lax.psum(v, "i")),
                                           axis_name="i")(X4),
        "vmap grad unmapped p": lambda: lib.vmap(lambda v: lib.grad(
            lambda q: lax.psum(q * v, "i"))(2.0), axis_name="i")(X4),
    }


@pytest.mark.parametrize("name", sorted(_cases(jaxlite)))
def test_reverse_mode_matches_jax(rjax8, name):
    want = _cases(rjax8)[name]()
    got = _cases(jaxlite)[name]()
    wl, wt = rjax8.tree_util.tree_flatten(want)
    gl, gt = jaxlite.tree_util.tree_flatten(got)
    assert len(wl) == len(gl)
    for w, g in zip(wl, gl):
        w, g = np.asarray(w), np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g, w)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=name)


def test_pmax_gradient_goes_to_the_device_holding_the_maximum(rjax8):
    """JAX 0.10.2 has no derivative for pmax (NotImplementedError); jaxlite gives the
    maximum's device the whole cotangent (ties share it), as for jnp.max."""
    def run(lib):
        P, lax = lib.sharding.PartitionSpec, lib.lax
        return lib.shard_map(lambda v: lib.grad(lambda v: lax.pmax(v, "i").sum())(v),
                             mesh=_mesh(lib), in_specs=P("i"), out_specs=P("i"))(X8)
    with pytest.raises(NotImplementedError):
        run(rjax8)
    got = np.asarray(run(jaxlite))
    np.testing.assert_array_equal(got, [0, 0, 0, 0, 0, 0, 1, 1])
    assert got.dtype == np.float32


@pytest.mark.parametrize("axis_type", ["Explicit", "Auto"])
def test_eager_grad_of_shard_map_is_placed_as_jax(rjax8, axis_type):
    """grad of a shard_map outside jit: each cotangent lives where its primal's in_spec
    puts it (x's rows over the devices, the replicated w's gradient on every device)."""
    from _oracle import by_id

    def run(lib):
        P = lib.sharding.PartitionSpec
        t = getattr(lib.sharding.AxisType, axis_type)
        mesh = lib.make_mesh((8,), ("b",), axis_types=(t,))
        x = lib.device_put(X8.reshape(4, 2).repeat(2, 0),
                           lib.sharding.NamedSharding(mesh, P("b")))
        w = lib.device_put(np.array([1.0, -2.0], np.float32),
                           lib.sharding.NamedSharding(mesh, P()))
        f = lib.shard_map(lambda x, w: lib.lax.psum((x * w).sum(), "b"), mesh=mesh,
                          in_specs=(P("b"), P()), out_specs=P())
        with lib.set_mesh(mesh):
            return lib.grad(f, argnums=(0, 1))(x, w)
    want, got = run(rjax8), run(jaxlite)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert g.dtype == w.dtype
        assert by_id(g.sharding, g.shape) == by_id(w.sharding, w.shape)
        assert repr(g.sharding) == repr(w.sharding), (g.sharding, w.sharding)


@pytest.mark.parametrize("axis_type", ["Explicit", "Auto"])
def test_eager_grad_of_jitted_shard_map_as_jax(rjax8, axis_type):
    """grad (outside jit) of a jit around a shard_map on a mesh with Explicit axes: the
    differentiation evaluates the jit's program, shard_map's expansion included, which the
    per-operation sharding type check must not read as user operations (it raised
    ShardingTypeError on a slice of the stacked devices).  Values, dtype and placement
    against JAX (the README's snippet)."""
    from _oracle import by_id

    def run(lib):
        P = lib.sharding.PartitionSpec
        t = getattr(lib.sharding.AxisType, axis_type)
        mesh = lib.make_mesh((8,), ("b",), axis_types=(t,))
        x = lib.device_put(np.arange(32.0, dtype=np.float32).reshape(16, 2),
                           lib.sharding.NamedSharding(mesh, P("b")))
        f = lib.jit(lib.shard_map(lambda v: lib.lax.psum((v * v).sum(0), "b"), mesh=mesh,
                                  in_specs=P("b"), out_specs=P()))
        with lib.set_mesh(mesh):
            return lib.grad(lambda x: (f(x) * np.float32([1.0, -3.0])).sum())(x)
    want, got = run(rjax8), run(jaxlite)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert by_id(got.sharding, got.shape) == by_id(want.sharding, want.shape)


def test_jit_under_grad_is_type_checked_whole_as_jax(rjax8):
    """Differentiating a jit evaluates its program equation by equation; the program is
    checked whole first, so a sharding type error JAX's jit raises is still raised (a
    P() array concatenated with a P('b') one along the sharded dimension), and a program
    JAX accepts runs."""
    def run(lib, fn):
        P, NS = lib.sharding.PartitionSpec, lib.sharding.NamedSharding
        mesh = lib.make_mesh((8,), ("b",))
        x = lib.device_put(np.arange(16.0, dtype=np.float32), NS(mesh, P("b")))
        y = lib.device_put(np.ones(16, np.float32), NS(mesh, P()))
        with lib.set_mesh(mesh):
            return lib.grad(lambda x, y: lib.jit(fn(lib))(x, y).sum())(x, y)

    def concat(lib):
        return lambda x, y: lib.numpy.concatenate([x, y])

    def product(lib):
        return lambda x, y: x * lib.numpy.sin(y)

    with pytest.raises(Exception) as e:
        run(rjax8, concat)
    assert type(e.value).__name__ == "ShardingTypeError"
    with pytest.raises(jaxlite.core.ShardingTypeError):
        run(jaxlite, concat)
    want, got = run(rjax8, product), run(jaxlite, product)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_unchecked_output_that_varies_differentiates_as_jax(rjax8, jitted):
    """check_vma=False with out_specs P() on a per-device loss that misses its psum (an
    invalid program whose value is device 0's): reverse mode gives JAX's gradients (the
    mean over the devices: every device gets the cotangent over the axis size), for the
    replicated and the sharded argument, also under vmap; a valid program (with psum)
    is unchanged."""
    def run(lib):
        S, jnp = lib.sharding, lib.numpy
        P = S.PartitionSpec
        m = lib.make_mesh((4,), ("x",), axis_types=(S.AxisType.Auto,),
                          devices=lib.devices()[:4])
        b = jnp.arange(8.)
        out = []
        with lib.set_mesh(m):
            for body in (lambda w, v: ((v * w) ** 2).sum(),
                         lambda w, v: lib.lax.psum(((v * w) ** 2).sum(), "x")):
                g = lib.shard_map(body, mesh=m, in_specs=(P(), P("x")), out_specs=P(),
                                  check_vma=False)
                grad = lib.grad(g, argnums=(0, 1))
                grad = lib.jit(grad) if jitted else grad
                gw, gb = grad(2.0, b)
                out += [float(g(2.0, b)), float(gw), np.asarray(gb)]
                out.append(np.asarray(lib.vmap(lambda w: lib.grad(g)(w, b))(
                    jnp.array([1., 2.]))))
        return out
    got, want = run(jaxlite), run(rjax8)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
