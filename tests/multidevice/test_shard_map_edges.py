"""shard_map edges a fresh user's programs hit, against real JAX on 8 devices: jit and
grad around and inside shard_map on a mesh of Explicit axes (make_mesh's default), a
jitted gradient inside shard_map (the replicated input's gradient summed over devices),
shard_map closing over traced values, psum of bools and over no axes, pmap out_axes out
of range; and where jaxlite deliberately raises (in_specs inferred from a traced value,
reverse mode inside a loop body inside shard_map) instead of guessing."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite


def _setup(lib):
    mesh = lib.make_mesh((8,), ("i",))
    P, NS = lib.sharding.PartitionSpec, lib.sharding.NamedSharding
    xs = lib.device_put(np.arange(8.0, dtype=np.float32), NS(mesh, P("i")))
    w = lib.device_put(np.ones((), np.float32), NS(mesh, P()))
    return mesh, P, xs, w


def _cases(lib):
    mesh, P, xs, w = _setup(lib)
    lax, jnp = lib.lax, lib.numpy
    inner = lib.jit(lib.grad(lambda w, b: (w * b).sum()))
    ring = [(j, (j + 1) % 8) for j in range(8)]

    def J(body):
        return lib.jit(lib.shard_map(body, mesh=mesh, in_specs=P("i"),
                                     out_specs=P("i")))(xs)
    sm = lib.shard_map(lambda b: lax.psum(b.sum(), "i"), mesh=mesh, in_specs=P("i"),
                       out_specs=P())
    return {
        "jitted grad inside": lambda: lib.shard_map(
            lambda w, b: lax.pmean(inner(w, b), "i"), mesh=mesh,
            in_specs=(P(), P("i")), out_specs=P())(w, xs),
        "jitted grad of psum inside": lambda: lib.shard_map(
            lambda w, b: lib.jit(lib.grad(lambda w: lax.psum((w * b).sum(), "i")))(w),
            mesh=mesh, in_specs=(P(), P("i")), out_specs=P())(w, xs),
        "jit ppermute, explicit mesh": lambda: J(lambda b: lax.ppermute(b, "i", ring)),
        "jit zeros_like, explicit mesh": lambda: J(lambda b: jnp.zeros_like(b)),
        "jit grad of shard_map": lambda: lib.jit(lib.grad(sm))(xs),
        "closure over a jit tracer": lambda: lib.jit(lambda c: lib.shard_map(
            lambda b: lax.psum(b * c, "i"), mesh=mesh, in_specs=P("i"),
            out_specs=P())(xs))(np.float32(2.0)),
        "psum of bools": lambda: lib.shard_map(lambda b: lax.psum(b > 3, "i"), mesh=mesh,
                                               in_specs=P("i"), out_specs=P())(xs),
        "psum over no axes": lambda: lib.shard_map(lambda b: lax.psum(b, ()), mesh=mesh,
                                                   in_specs=P("i"), out_specs=P("i"))(xs),
        "in_specs inferred, eager": lambda: lib.shard_map(
            lambda b: lax.psum((b ** 2).sum(), "i"), mesh=mesh, out_specs=P())(xs),
    }


@pytest.mark.parametrize("name", sorted(_cases(jaxlite)))
def test_matches_jax(rjax8, name):
    want = np.asarray(_cases(rjax8)[name]())
    got = np.asarray(_cases(jaxlite)[name]())
    assert got.shape == want.shape and got.dtype == want.dtype, (name, got, want)
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)


def test_pmap_out_axes_out_of_range_raises(rjax8):
    for lib in (rjax8, jaxlite):
        with pytest.raises(ValueError, match="out of bounds"):
            lib.pmap(lambda a: a * 2, out_axes=3)(np.ones((8, 2), np.float32))


def test_inferred_in_specs_of_a_traced_argument_raise():
    """JAX reads the sharding from the tracer's type; jaxlite's tracers carry none, so it
    says so instead of treating the argument as replicated (8x the values)."""
    mesh, P, xs, _ = _setup(jaxlite)
    f = jaxlite.shard_map(lambda b: jaxlite.lax.psum((b ** 2).sum(), "i"), mesh=mesh,
                          out_specs=P())
    for call in (lambda: jaxlite.vjp(f, xs), lambda: jaxlite.jit(f)(xs),
                 lambda: jaxlite.vmap(f)(np.stack([np.asarray(xs)] * 2))):
        with pytest.raises(ValueError, match="pass in_specs"):
            call()


def test_reverse_mode_inside_a_loop_body_inside_shard_map_raises(rjax8):
    """JAX sums a replicated input's gradient over the devices there (56 here); jaxlite
    cannot see the replication inside a staged body and raises rather than return one
    device's part."""
    def run(lib):
        mesh, P, xs, w = _setup(lib)
        body = lambda c, _, w, b: (c + lib.grad(lambda w: (w * b).sum())(w), None)  # noqa
        return lib.shard_map(lambda w, b: lib.lax.scan(
            lambda c, x: body(c, x, w, b), np.float32(0), None, length=2)[0],
            mesh=mesh, in_specs=(P(), P("i")), out_specs=P())(w, xs)
    assert float(run(rjax8)) == 56.0
    with pytest.raises(NotImplementedError, match="staged body"):
        run(jaxlite)
    mesh, P, xs, w = _setup(jaxlite)      # with check_vma=False: each device's own part
    out = jaxlite.shard_map(lambda w, b: jaxlite.lax.scan(
        lambda c, _: (c + jaxlite.grad(lambda w: (w * b).sum())(w), None),
        np.float32(0), None, length=2)[0][None], mesh=mesh, in_specs=(P(), P("i")),
        out_specs=P("i"), check_vma=False)(w, xs)
    # one element per device: each device's gradient of w is its b, twice over the loop
    np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(8.0, dtype=np.float32))


@pytest.mark.parametrize("case", ["host to P('i')", "host to P()", "sharded to P()"])
def test_device_put_under_jit_on_an_explicit_mesh_reshards(rjax8, case):
    """Inside jit, device_put to a NamedSharding over Explicit axes is a reshard (as JAX):
    the result is placed there (on Auto axes jaxlite leaves it to propagation)."""
    res = []
    for lib in (jaxlite, rjax8):
        mesh = lib.make_mesh((8,), ("i",))
        P, NS = lib.sharding.PartitionSpec, lib.sharding.NamedSharding
        x = np.arange(8.0, dtype=np.float32)
        if case.startswith("sharded"):
            x = lib.device_put(x, NS(mesh, P("i")))
        target = NS(mesh, P("i") if case.endswith("P('i')") else P())
        res.append(lib.jit(lambda a, t=target, lib=lib: lib.device_put(a, t) * 2)(x))
    got, want = res
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert repr(got.sharding) == repr(want.sharding), (got.sharding, want.sharding)
