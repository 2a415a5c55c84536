"""``pmap`` over 8 CPU devices, against real JAX 0.10.2 (the oracle).

JAX 0.10.2 builds pmap on shard_map, as jaxlite does: its results are Arrays with a
``NamedSharding`` over a one-axis mesh (Auto) of the first devices, the axis named
``axis_name`` or ``_internal_pmap_axis_name``.  So values, dtypes, weak types, shapes and
the result's sharding (repr and ``devices_indices_map`` by device id) are compared.
Where JAX 0.10.2 fails on a valid call (a negative ``in_axes``/``out_axes`` or
``static_broadcasted_argnums``), jaxlite's result is compared with JAX's for the same
positive index.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
from _oracle import by_id, same_array, same_tree

X = np.arange(24, dtype=np.float32).reshape(4, 6) - 7


_by_id, _same, _same_tree = by_id, same_array, same_tree


def _both(rjax, program, *args, **kw):
    """``program(lib)`` is a pmapped function; run it with both on ``args``."""
    return [program(lib)(*args, **kw) for lib in (jaxlite, rjax)]


CASES = {
    "plain": (lambda lib: lib.pmap(lambda a: a * 2 + 1), (X,)),
    "axis_name psum": (lambda lib: lib.pmap(lambda a: lib.lax.psum(a, "i"), "i"), (X,)),
    "collectives": (lambda lib: lib.pmap(
        lambda a: (lib.lax.pmean(a, "i"), lib.lax.pmax(a, "i"), lib.lax.pmin(a, "i"),
                   a + lib.lax.axis_index("i"), lib.lax.psum(1, "i")), axis_name="i"),
        (X,)),
    "moving collectives": (lambda lib: lib.pmap(
        lambda a: (lib.lax.all_gather(a, "i"), lib.lax.all_gather(a, "i", tiled=True),
                   lib.lax.ppermute(a, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                   lib.lax.psum_scatter(a[:4].reshape(4, 1), "i", tiled=True),
                   lib.lax.all_to_all(a[:4].reshape(4, 1), "i", 0, 0)), axis_name="i"),
        (X,)),
    "in_axes 1": (lambda lib: lib.pmap(lambda a: a * 2, in_axes=1), (X.T.copy()[:, :4],)),
    "in_axes tuple with None": (lambda lib: lib.pmap(lambda a, b: a * b, in_axes=(0, None)),
                                (X, np.float32(3))),
    "in_axes None scalar python": (lambda lib: lib.pmap(lambda a, b: a * b,
                                                        in_axes=(0, None)), (X, 3.0)),
    "in_axes pytree": (lambda lib: lib.pmap(
        lambda d: {"a": d["a"] * 2, "b": d["b"].sum()}, in_axes=({"a": 0, "b": 1},)),
        ({"a": X, "b": X.T.copy()},)),
    "out_axes 1": (lambda lib: lib.pmap(lambda a: a * 2, out_axes=1), (X,)),
    "out_axes None": (lambda lib: lib.pmap(lambda a: lib.lax.psum(a, "i"), "i",
                                           out_axes=None), (X,)),
    "out_axes tuple": (lambda lib: lib.pmap(lambda a: (a, a.sum()), out_axes=(1, 0)), (X,)),
    "static int": (lambda lib: lib.pmap(lambda a, n: a * n, static_broadcasted_argnums=1),
                   (X, 3)),
    "static tuple": (lambda lib: lib.pmap(lambda n, a, s: a * n + len(s),
                                          static_broadcasted_argnums=(0, 2)),
                     (2, X, "abc")),
    "devices": (lambda lib: lib.pmap(lambda a: a * 2, devices=lib.devices()[4:8]), (X,)),
    "all 8 devices": (lambda lib: lib.pmap(lambda a: lib.lax.psum(a, "i") * a, "i"),
                      (np.arange(16, dtype=np.float32).reshape(8, 2),)),
    "one device": (lambda lib: lib.pmap(lambda a: a + 1), (X[:1],)),
    "int32": (lambda lib: lib.pmap(lambda a: a + 1), (np.arange(4, dtype=np.int32),)),
    "bool": (lambda lib: lib.pmap(lambda a: ~a), (np.array([True, False, True]),)),
    "python scalar output": (lambda lib: lib.pmap(lambda a: 1.0), (X,)),
    "pmap of vmap": (lambda lib: lib.pmap(lib.vmap(lambda a: lib.lax.psum(a, "v"),
                                                   axis_name="v")), (X,)),
    "pmap of jit": (lambda lib: lib.pmap(lib.jit(lambda a: a * 2)), (X,)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pmap_like_jax(rjax8, case):
    program, args = CASES[case]
    got, want = _both(rjax8, program, *args)
    _same_tree(got, want)


def test_keyword_arguments_are_mapped(rjax8):
    got, want = _both(rjax8, lambda lib: lib.pmap(lambda a, b: a * b), X, b=X)
    _same(got, want)


def test_negative_axes(rjax8):
    """JAX 0.10.2 mis-handles negative in_axes/out_axes/static argnums (it fails, or
    maps the wrong axis); jaxlite's result equals JAX's for the same positive index."""
    got = jaxlite.pmap(lambda a: a * 2, in_axes=-1)(X.T.copy()[:, :4])
    want = rjax8.pmap(lambda a: a * 2, in_axes=1)(X.T.copy()[:, :4])
    _same(got, want)
    got = jaxlite.pmap(lambda a: a * 2, out_axes=-1)(X)
    want = rjax8.pmap(lambda a: a * 2, out_axes=1)(X)
    _same(got, want)
    got = jaxlite.pmap(lambda a, n: a * n, static_broadcasted_argnums=-1)(X, 3)
    want = rjax8.pmap(lambda a, n: a * n, static_broadcasted_argnums=1)(X, 3)
    _same(got, want)


def test_out_axes_none_of_a_varying_value_is_device_0s(rjax8):
    got, want = _both(rjax8, lambda lib: lib.pmap(lambda a: a, out_axes=None), X)
    _same(got, want)


def test_grad_of_pmap(rjax8):
    res = []
    for lib in (jaxlite, rjax8):
        jnp = lib.numpy

        def loss(a, lib=lib, jnp=jnp):
            f = lib.pmap(lambda b: jnp.sin(b) * lib.lax.psum(b, "i"), axis_name="i")
            return f(a).sum()
        res.append(lib.grad(loss)(X))
        res.append(lib.value_and_grad(loss)(X)[0])
        res.append(lib.jvp(lambda a, lib=lib: lib.pmap(jnp.cos)(a), (X,), (X + 1,))[1])
        res.append(lib.jit(lib.grad(loss))(X))
    # eager grad/jvp: jaxlite's results are not placed (README: known differences)
    for a, b in zip(res[:3], res[4:7]):
        _same(a, b, placed=False, rtol=2e-5)
    _same(res[3], res[7], rtol=2e-5)


def test_jit_and_vmap_of_pmap(rjax8):
    res = []
    y = np.ones((3, 4, 2), np.float32) * np.arange(3, dtype=np.float32)[:, None, None]
    for lib in (jaxlite, rjax8):
        res.append(lib.jit(lib.pmap(lambda a: a * 2))(X))
        res.append(lib.vmap(lib.pmap(lambda a, lib=lib: lib.lax.psum(a, "i"), "i"))(y))
    # under jit/vmap jaxlite's results are not placed (README: known differences)
    _same(res[0], res[2])
    _same(res[1], res[3])


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- compared with JAX's
        return e
    return None


ERRORS = {
    # name: (call(lib), jaxlite key part)
    "inconsistent sizes": (lambda lib: lib.pmap(lambda a, b: a + b)(
        np.ones((4, 2)), np.ones((2, 2))), "inconsistent sizes"),
    "in_axes beyond the rank": (lambda lib: lib.pmap(lambda a: a, in_axes=2)(
        np.ones((4, 2))), "rank"),
    "scalar mapped": (lambda lib: lib.pmap(lambda a: a)(np.float32(2)), "rank"),
    "nothing mapped": (lambda lib: lib.pmap(lambda a: a * 2, in_axes=None)(
        np.float32(2)), "mapped axis"),
    "nothing mapped, axis_size": (lambda lib: lib.pmap(lambda a: a * 2, in_axes=None,
                                                       axis_size=4)(np.float32(2)),
                                  "mapped axis"),
    "in_axes a list": (lambda lib: lib.pmap(lambda a, b: a * b, in_axes=[0, None])(
        X, np.float32(3)), "in_axes"),
    "in_axes too long": (lambda lib: lib.pmap(lambda a: a, in_axes=(0, 0))(X), "in_axes"),
    "static not hashable": (lambda lib: lib.pmap(lambda a, n: a,
                                                 static_broadcasted_argnums=1)(X, [3]),
                            "hashable"),
    "size 0": (lambda lib: lib.pmap(lambda a: a)(np.ones((0, 3))), "size 0"),
    "unbound axis name": (lambda lib: lib.pmap(lambda a: lib.lax.psum(a, "q"), "i")(X),
                          "unbound axis name: q"),
    "nested pmap": (lambda lib: lib.pmap(lib.pmap(lambda a: lib.lax.psum(a, ("i", "j")),
                                                  axis_name="j"), axis_name="i")(
        np.ones((2, 4))), "context mesh"),
    "pmap under set_mesh": (lambda lib: _under_mesh(lib, lambda: lib.pmap(
        lambda a: a * 2)(np.ones((8, 2)))), "context mesh"),
    "more slices than devices": (lambda lib: lib.pmap(lambda a: a * 2)(np.ones((9, 2))),
                                 "only 8 devices"),
    "a Python scalar alone": (lambda lib: lib.pmap(lambda a: a * 2)(1.0), "mapped axis"),
    "a list of Python scalars": (lambda lib: lib.pmap(lambda a: a)([1, 2]),
                                 "mapped axis"),
    "a Python scalar mapped beside an array": (lambda lib: lib.pmap(lambda a, b: a + b)(
        X, 1.0), "Python scalar"),
}


def _under_mesh(lib, fn):
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        return fn()


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_like_jax(rjax8, case):
    call, part = ERRORS[case]
    e_jl, e_jx = _err(lambda: call(jaxlite)), _err(lambda: call(rjax8))
    assert e_jx is not None and e_jl is not None, (e_jl, e_jx)
    assert type(e_jl).__name__ == type(e_jx).__name__, (e_jl, e_jx)
    assert part in str(e_jl), str(e_jl)


def test_more_slices_than_devices(rjax8):
    """9 slices on 8 devices, or 4 on the 2 given: ValueError in both (JAX's comes from
    its shard_map lowering: IndivisibleError, a ValueError, or a squeeze error)."""
    for lib in (jaxlite, rjax8):
        with pytest.raises(ValueError):
            lib.pmap(lambda a: a * 2)(np.ones((9, 2)))
        with pytest.raises(ValueError):
            lib.pmap(lambda a: a * 2, devices=lib.devices()[4:6])(X)
    with pytest.raises(ValueError, match="requires 4 logical devices"):
        jaxlite.pmap(lambda a: a * 2, devices=jaxlite.devices()[4:6])(X)


def test_memory_per_device(rjax8):
    x = np.ones((8, 5), np.float32)
    f = jaxlite.pmap(lambda a: a * 2)
    devs = jaxlite.devices()
    f(x)
    before = {d.id: d.memory_stats()["bytes_in_use"] for d in devs}
    out = f(x)
    after = {d.id: d.memory_stats()["bytes_in_use"] for d in devs}
    assert {i: after[i] - before[i] for i in after} == {d.id: 5 * 4 for d in devs}
    del out
    assert {d.id: d.memory_stats()["bytes_in_use"] for d in devs} == before


def _committed_cases(lib):
    P, NS = lib.P, lib.sharding.NamedSharding
    devs = lib.devices()
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    m1 = lib.sharding.Mesh(np.array(devs), ("a",))
    r4 = lib.pmap(lambda a: a)(x[:4])
    return {
        "split as pmap splits": lambda: lib.pmap(lambda a: a * 2)(
            lib.device_put(x, NS(m1, P("a")))),
        "replicated, mapped": lambda: lib.pmap(lambda a: a * 2)(
            lib.device_put(x, NS(m1, P()))),
        "committed to one device": lambda: lib.pmap(lambda a: a * 2)(
            lib.device_put(x, devs[3])),
        "uncommitted": lambda: lib.pmap(lambda a: a * 2)(lib.numpy.asarray(x)),
        "split along another axis": lambda: lib.pmap(lambda a: a * 2, in_axes=1)(
            lib.pmap(lambda a: a + 1)(x)),
        "split, unmapped": lambda: lib.pmap(lambda a, b: a * b, in_axes=(0, None))(
            x, lib.device_put(x[0], NS(m1, P("a")))),
        "replicated, unmapped": lambda: lib.pmap(lambda a, b: a * b, in_axes=(0, None))(
            x, lib.device_put(x[0], NS(m1, P()))),
        "moved to other devices": lambda: lib.pmap(lambda a: a * 2, devices=devs[4:8])(r4),
        "moved to reversed devices": lambda: lib.pmap(lambda a: a * 2,
                                                      devices=devs[3::-1])(r4),
    }


def test_committed_arguments(rjax8):
    """A committed argument must already be split as pmap splits it (its blocks then
    move to pmap's devices); otherwise ValueError, as JAX 0.10.2."""
    jl, jx = _committed_cases(jaxlite), _committed_cases(rjax8)
    for name in jl:
        e_jl, e_jx = _err(jl[name]), _err(jx[name])
        assert type(e_jl).__name__ == type(e_jx).__name__, (name, e_jl, e_jx)
        if e_jx is None:
            _same(jl[name](), jx[name]())
