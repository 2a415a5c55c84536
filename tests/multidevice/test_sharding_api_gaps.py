"""Small sharding APIs against real JAX 0.10.2 with 8 CPU devices:
``Compiled.input_shardings``/``output_shardings``, ``jax.sharding.auto_axes``/
``explicit_axes``/``ManualAxisType``, ``with_sharding_constraint`` naming an Explicit axis,
and ``device_put`` with a spec longer than the rank or a pytree prefix mixing shardings
and devices.

Every case is one function of a namespace ``L`` (jaxlite's or JAX's: ``L.jax``, ``L.jnp``,
``L.P``, ``L.NS``, the (4, 2) meshes ``L.auto``/``L.expl``/``L.mixed`` over ('x', 'y')
with Auto, Explicit, and (Explicit, Auto) axes), run on both; results are compared by
repr (shardings and their pytrees), or leaf by leaf (values, dtype, shape, committed,
sharding repr), errors by their builtin exception type and a fragment of JAX's message.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp


def _ns(lib, jnp):
    S = lib.sharding
    A = S.AxisType
    L = types.SimpleNamespace(jax=lib, jnp=jnp, S=S, P=S.PartitionSpec, NS=S.NamedSharding,
                              lax=lib.lax, A=A)
    L.auto = lib.make_mesh((4, 2), ("x", "y"), axis_types=(A.Auto, A.Auto))
    L.expl = lib.make_mesh((4, 2), ("x", "y"), axis_types=(A.Explicit, A.Explicit))
    L.mixed = lib.make_mesh((4, 2), ("x", "y"), axis_types=(A.Explicit, A.Auto))
    L.a = np.arange(32, dtype=np.float32).reshape(8, 4)
    L.v = np.arange(8, dtype=np.float32)
    L.i = np.arange(4, dtype=np.int32)
    L.xa = lib.device_put(L.a, L.NS(L.auto, L.P("x", "y")))       # Auto mesh, 2-D split
    L.xe = lib.device_put(L.a, L.NS(L.expl, L.P("x", None)))      # Explicit mesh
    L.ye = lib.device_put(L.a, L.NS(L.expl, L.P(None, "y")))
    L.one = jnp.ones((8,), jnp.float32)                            # uncommitted, device 0
    return L


@pytest.fixture(scope="module")
def libs(rjax8):
    import jax.numpy as rjnp
    return _ns(jaxlite, ljnp), _ns(rjax8, rjnp)


def _builtin(e):
    return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def _run(libs, case):
    """(jaxlite's result or exception, JAX's)."""
    out = []
    for L in libs:
        try:
            out.append(case(L))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
    return out


def _same_error(libs, case, fragment=None):
    got, want = _run(libs, case)
    assert isinstance(want, Exception), f"JAX did not raise: {want!r}"
    assert isinstance(got, Exception), f"jaxlite did not raise; JAX raised {want!r}"
    assert _builtin(got) is _builtin(want), (got, want)
    if fragment is not None:
        assert fragment in str(want), str(want)
        assert fragment in str(got), str(got)
    return got, want


def _same_repr(libs, case):
    got, want = _run(libs, case)
    if isinstance(want, Exception):
        raise want
    if isinstance(got, Exception):
        raise got
    assert repr(got) == repr(want)
    return got


def _same_arrays(libs, case):
    """The pytrees of Arrays ``case`` returns agree leaf by leaf."""
    import jax
    got, want = _run(libs, case)
    if isinstance(want, Exception):
        raise want
    if isinstance(got, Exception):
        raise got
    la, ta = jaxlite.tree_util.tree_flatten(got)
    lb, tb = jax.tree_util.tree_flatten(want)
    assert str(ta).replace("PyTreeDef", "") == str(tb).replace("PyTreeDef", "")
    for x, y in zip(la, lb):
        assert x.shape == y.shape and np.dtype(x.dtype) == np.dtype(y.dtype), (x, y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert repr(x.sharding) == repr(y.sharding), (x.sharding, y.sharding)
        assert x.committed == y.committed
    return got


# ---- Compiled.input_shardings / output_shardings ------------------------------------------

def _f(a, b):
    return a * 2, b.sum()


def _kw(a, b=None, *, k):
    return {"s": a + k, "t": (b,)}


COMPILED = {
    "sharded+uncommitted": lambda L: L.jax.jit(_f).lower(L.xa, L.one),
    "one device": lambda L: L.jax.jit(_f).lower(L.a, L.one),
    "committed device 3": lambda L: L.jax.jit(lambda t: t + 1).lower(
        L.jax.device_put(L.one, L.jax.devices()[3])),
    "committed + numpy": lambda L: L.jax.jit(lambda t, u: (t, t + u)).lower(
        L.jax.device_put(L.one, L.jax.devices()[5]), np.float32(2)),
    "python scalar": lambda L: L.jax.jit(lambda t, s: t * s).lower(L.one, 2.0),
    "in/out shardings": lambda L: L.jax.jit(
        _f, in_shardings=(L.NS(L.auto, L.P("x")), L.NS(L.auto, L.P())),
        out_shardings=(L.NS(L.auto, L.P(None, "y")), None)).lower(L.a, L.one),
    "in_shardings prefix": lambda L: L.jax.jit(
        _f, in_shardings=L.NS(L.auto, L.P("x"))).lower(L.a, L.one),
    "kwargs and pytrees": lambda L: L.jax.jit(_kw).lower(L.xa, b=L.one, k=L.xa),
    "matmul propagation": lambda L: L.jax.jit(lambda t: t.T @ t).lower(L.xa),
    "reductions, reshape, slice": lambda L: L.jax.jit(
        lambda t: (t.sum(1), t.max(0), t.reshape(32), t[::2])).lower(L.xa),
    "static argument": lambda L: L.jax.jit(lambda t, n: t * n, static_argnums=1).lower(
        L.xa, 3),
    "explicit mesh": lambda L: L.jax.jit(lambda t: (t * 2, t.sum(0), t.T)).lower(L.xe),
    "unused, one device": lambda L: L.jax.jit(lambda t, u: t + 1).lower(L.one, L.one),
    "unused, kept": lambda L: L.jax.jit(lambda t, u: t + 1, keep_unused=True).lower(
        L.one, L.one),
    "unused, sharded": lambda L: L.jax.jit(lambda t, u: t + 1).lower(L.xa, L.xa),
    "unused, sharded, kept": lambda L: L.jax.jit(lambda t, u: t + 1,
                                                 keep_unused=True).lower(L.xa, L.xa),
    "identity": lambda L: L.jax.jit(lambda t: t).lower(L.xa),
    "no arguments": lambda L: L.jax.jit(lambda: L.jnp.ones(3)).lower(),
    "no outputs": lambda L: L.jax.jit(lambda t: None).lower(L.one),
    "nested pytrees": lambda L: L.jax.jit(lambda t: [t, {"z": t}]).lower([L.one, (L.one,)]),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_shardings_match_jax(libs, name):
    _same_repr(libs, lambda L: COMPILED[name](L).compile().input_shardings)
    _same_repr(libs, lambda L: COMPILED[name](L).compile().output_shardings)


@pytest.mark.parametrize("name", ["sharded+uncommitted", "in/out shardings",
                                  "matmul propagation", "reductions, reshape, slice",
                                  "explicit mesh", "committed device 3", "one device"])
def test_output_shardings_are_what_a_call_returns(libs, name):
    """jaxlite's output_shardings is the sharding of the compiled call's results (and
    those are JAX's)."""
    def case(L):
        c = COMPILED[name](L).compile()
        args = {"sharded+uncommitted": (L.xa, L.one), "one device": (L.a, L.one),
                "in/out shardings": (L.a, L.one), "matmul propagation": (L.xa,),
                "reductions, reshape, slice": (L.xa,), "explicit mesh": (L.xe,),
                "committed device 3": (L.jax.device_put(L.one, L.jax.devices()[3]),)}[name]
        out = c(*args)
        shardings = L.jax.tree_util.tree_map(lambda r: r.sharding, out)
        assert repr(shardings) == repr(c.output_shardings)
        return out
    _same_arrays(libs, case)


def test_input_shardings_structure(libs):
    got = _same_repr(libs, lambda L: L.jax.jit(_kw).lower(L.xa, b=L.one, k=L.xa)
                     .compile().input_shardings)
    args, kwargs = got
    assert type(args) is tuple and len(args) == 1 and sorted(kwargs) == ["b", "k"]
    assert repr(kwargs["b"].spec) == "P()"


def test_compiled_shardings_errors(libs):
    # a PartitionSpec in in_shardings with no mesh set: JAX raises at lower
    _same_error(libs, lambda L: L.jax.jit(_f, in_shardings=L.P("x")).lower(L.a, L.one)
                .compile().input_shardings, "non-empty mesh")


# ---- auto_axes / explicit_axes / ManualAxisType --------------------------------------------

def test_names_exist(rjax8):
    for name in ["auto_axes", "explicit_axes", "ManualAxisType"]:
        assert hasattr(rjax8.sharding, name)
        assert hasattr(jaxlite.sharding, name), name


def _auto_case(build):
    """Runs ``build(L, body)`` with ``body(u, v) = u + v`` recording what it sees (the
    abstract mesh and the types of its arguments); returns (the result, those records)."""
    def case(L):
        seen = []

        def body(u, v):
            seen.append((str(L.S.get_abstract_mesh()), str(L.jax.typeof(u)),
                         str(L.jax.typeof(v))))
            return u + v
        return build(L, body), seen
    return case


AUTO = {
    "jit, NamedSharding out, no set_mesh": lambda L, body: L.jax.jit(
        lambda u, v: L.S.auto_axes(body, out_sharding=L.NS(L.expl, L.P("x", "y")))(u, v))(
        L.xe, L.ye),
    "eager, out_sharding at the call": lambda L, body: _under(
        L, lambda: L.S.auto_axes(body)(L.xe, L.ye, out_sharding=L.P("x", None))),
    "jit under set_mesh": lambda L, body: _under(L, lambda: L.jax.jit(
        lambda u, v: L.S.auto_axes(body, out_sharding=L.P(None, "y"))(u, v))(L.xe, L.ye)),
    "axes='x'": lambda L, body: _under(L, lambda: L.jax.jit(
        lambda u, v: L.S.auto_axes(body, axes="x", out_sharding=L.P("y"))(u, v))(
        L.xe, L.ye)),
    "axes=('y',)": lambda L, body: _under(L, lambda: L.jax.jit(
        lambda u, v: L.S.auto_axes(body, axes=("y",), out_sharding=L.P("x"))(u, v))(
        L.xe, L.ye)),
    "decorator": lambda L, body: _under(
        L, lambda: L.S.auto_axes(out_sharding=L.P("x"))(body)(L.xe, L.ye)),
}


def _under(L, fn):
    with L.jax.set_mesh(L.expl):
        return fn()


@pytest.mark.parametrize("name", sorted(AUTO))
def test_auto_axes_matches_jax(libs, name):
    (got, got_seen), (want, want_seen) = _run(libs, _auto_case(AUTO[name]))
    _same_arrays(libs, lambda L: _auto_case(AUTO[name])(L)[0])
    assert got_seen[-1] == want_seen[-1]          # abstract mesh and argument types inside


AUTO_OPS = {
    # refused on an Explicit mesh, allowed inside auto_axes
    "ambiguous reshape": lambda L: L.jax.jit(lambda u: L.S.auto_axes(
        lambda t: t.T.reshape(32), out_sharding=L.P("x"))(u))(L.xe),
    "constraint naming the axes": lambda L: L.jax.jit(lambda u: L.S.auto_axes(
        lambda t: L.lax.with_sharding_constraint(t * 2, L.P("y", "x")),
        out_sharding=L.P("x"))(u))(L.xe),
    "matmul": lambda L: L.jax.jit(lambda u, v: L.S.auto_axes(
        lambda s, t: s @ t.T, out_sharding=L.P("x", "y"))(u, v))(L.xe, L.ye),
    "pytree out_sharding": lambda L: L.jax.jit(lambda u, v: L.S.auto_axes(
        lambda s, t: {"a": s + 1, "b": (t * 2,)},
        out_sharding={"a": L.P("x"), "b": (L.P(None, "y"),)})(u, v))(L.xe, L.ye),
    "out_sharding a prefix": lambda L: L.jax.jit(lambda u, v: L.S.auto_axes(
        lambda s, t: (s + 1, t), out_sharding=L.P("y"))(u, v))(L.xe, L.ye),
    "under grad": lambda L: L.jax.jit(L.jax.grad(lambda u: L.S.auto_axes(
        lambda t: (t * t).sum(), out_sharding=L.P())(u)))(L.xe),
    "all axes Auto already": lambda L: L.jax.jit(lambda u: L.S.auto_axes(
        lambda t: t + 1, out_sharding=L.P("x"))(u))(
        L.jax.device_put(L.a, L.NS(L.auto, L.P("x")))),
}


@pytest.mark.parametrize("name", sorted(AUTO_OPS))
def test_auto_axes_ops(libs, name):
    def case(L):
        mesh = L.auto if name == "all axes Auto already" else L.expl
        with L.jax.set_mesh(mesh):
            return AUTO_OPS[name](L)
    _same_arrays(libs, case)


def test_auto_axes_reshape_needs_it(libs):
    """The reshape of ``test_auto_axes_ops`` is refused outside auto_axes (so the test
    above shows auto_axes at work)."""
    def case(L):
        with L.jax.set_mesh(L.expl):
            return L.jax.jit(lambda u: u.T.reshape(32))(L.xe)
    got, want = _same_error(libs, case)
    assert type(got).__name__ == type(want).__name__ == "ShardingTypeError"


def test_auto_axes_without_a_mesh_just_calls(libs):
    got, want = _run(libs, lambda L: L.S.auto_axes(lambda t: t + 1, out_sharding=L.P("x"))(
        L.a))
    assert type(got) is type(want) is np.ndarray
    np.testing.assert_array_equal(got, want)


AUTO_ERRORS = {
    "no out_sharding": (lambda L: _under(L, lambda: L.S.auto_axes(lambda t: t)(L.xe)),
                        "Missing required keyword argument: 'out_sharding'"),
    "other mesh": (lambda L: _under(L, lambda: L.jax.jit(lambda u: L.S.auto_axes(
        lambda t: t, out_sharding=L.NS(L.auto, L.P("x")))(u))(L.xe)), "must match"),
    "unknown axis": (lambda L: _under(L, lambda: L.jax.jit(lambda u: L.S.auto_axes(
        lambda t: t, axes="z", out_sharding=L.P("x"))(u))(L.xe)), "z"),
}


@pytest.mark.parametrize("name", sorted(AUTO_ERRORS))
def test_auto_axes_errors(libs, name):
    case, fragment = AUTO_ERRORS[name]
    _same_error(libs, case, fragment)


def test_explicit_axes_on_explicit_axes(libs):
    """Every axis already Explicit: f runs on its arguments resharded to in_sharding."""
    _same_arrays(libs, lambda L: _under(L, lambda: L.jax.jit(lambda u: L.S.explicit_axes(
        lambda t: t * 2, in_sharding=L.P("x"))(u))(L.xe)))


EXPLICIT_ERRORS = {
    "no in_sharding": (lambda L: _with(L, L.auto, lambda: L.jax.jit(
        lambda u: L.S.explicit_axes(lambda t: t * 2)(u))(L.xa)),
        "Missing required keyword argument: 'in_sharding'"),
    "no mesh": (lambda L: L.S.explicit_axes(lambda t: t * 2, in_sharding=L.P("x"))(L.a),
                "Context mesh cannot be empty"),
    "no mesh, under jit": (lambda L: L.jax.jit(lambda u: L.S.explicit_axes(
        lambda t: t * 2, in_sharding=L.P("x"))(u))(L.xe), "Context mesh cannot be empty"),
}


def _with(L, mesh, fn):
    with L.jax.set_mesh(mesh):
        return fn()


@pytest.mark.parametrize("name", sorted(EXPLICIT_ERRORS))
def test_explicit_axes_errors(libs, name):
    case, fragment = EXPLICIT_ERRORS[name]
    _same_error(libs, case, fragment)


def test_explicit_axes_switching_auto_axes_is_not_implemented(libs):
    lj, _ = libs
    with lj.jax.set_mesh(lj.auto):
        with pytest.raises(NotImplementedError, match="explicit_axes"):
            lj.jax.jit(lambda u: lj.S.explicit_axes(lambda t: t * 2,
                                                    in_sharding=lj.P("x"))(u))(lj.xa)


def test_manual_axis_type(libs):
    def case(L):
        M = L.S.ManualAxisType
        t = M(varying={"x"}, reduced={"y"})
        u = t.update(varying=frozenset())
        same = M(varying={"x"}, reduced=frozenset({"y"}))
        return (repr(t), repr(M()), repr(u), repr(t.to_ct_mat()), t is same, M().empty,
                t.empty, sorted(t.vur), t == same, t != u, hash(t) == hash(same))
    got = _same_repr(libs, case)
    assert got[4] is True and got[5] is True and got[6] is False
    _same_error(libs, lambda L: L.S.ManualAxisType(varying={"x"}, unreduced={"x"}),
                "varying and unreduced cannot have common mesh axes")
    _same_error(libs, lambda L: L.S.ManualAxisType(varying={"x"}, reduced={"x", "y"}),
                "varying and reduced cannot have common mesh axes")
    _same_error(libs, lambda L: L.S.ManualAxisType(frozenset()))


# ---- with_sharding_constraint naming an Explicit axis --------------------------------------

WSC = {
    "jit, same spec": lambda L: L.jax.jit(lambda u: L.lax.with_sharding_constraint(
        u * 2, L.NS(L.expl, L.P("x", None))))(L.xe),
    "jit, other spec": lambda L: L.jax.jit(lambda u: L.lax.with_sharding_constraint(
        u * 2, L.NS(L.expl, L.P("y", None))))(L.xe),
    "jit, second dim": lambda L: L.jax.jit(lambda u: L.lax.with_sharding_constraint(
        u * 2, L.NS(L.expl, L.P(None, "y"))))(L.xe),
    "eager": lambda L: L.lax.with_sharding_constraint(L.xe, L.NS(L.expl, L.P("x", None))),
    "eager, numpy": lambda L: L.lax.with_sharding_constraint(L.a, L.NS(L.expl, L.P("y"))),
    "mixed mesh": lambda L: L.jax.jit(lambda u: L.lax.with_sharding_constraint(
        u * 2, L.NS(L.mixed, L.P("x"))))(L.a),
}


@pytest.mark.parametrize("name", sorted(WSC))
def test_constraint_naming_explicit_axis_is_value_error(libs, name):
    got, _ = _same_error(libs, WSC[name], "can only refer to Auto axes of the mesh")
    assert type(got) is ValueError and "reshard" in str(got)


def test_constraint_under_explicit_set_mesh_still_asserts(libs):
    """Under set_mesh of an all-Explicit mesh the constraint stays an assertion (as
    JAX), passing when the spec is the operand's."""
    def bad(L):
        with L.jax.set_mesh(L.expl):
            return L.jax.jit(lambda u: L.lax.with_sharding_constraint(u * 2, L.P("y")))(
                L.xe)

    def good(L):
        with L.jax.set_mesh(L.expl):
            return L.jax.jit(lambda u: L.lax.with_sharding_constraint(u * 2, L.P("x")))(
                L.xe)
    _same_error(libs, bad, "acts as an assert")
    _same_arrays(libs, good)


# ---- device_put: spec longer than the rank; pytree prefixes mixing devices and shardings --

LONG = {
    "auto mesh": lambda L: L.jax.device_put(L.v, L.NS(L.auto, L.P("x", "y"))),
    "auto mesh, None past the rank": lambda L: L.jax.device_put(
        L.v, L.NS(L.auto, L.P("x", None))),
    "auto mesh, scalar": lambda L: L.jax.device_put(np.float32(1), L.NS(L.auto, L.P("x"))),
    "auto mesh, Array": lambda L: L.jax.device_put(L.jnp.ones(8), L.NS(L.auto,
                                                                       L.P("x", "y"))),
    "auto mesh, PartitionSpec": lambda L: _with(L, L.auto, lambda: L.jax.device_put(
        L.v, L.P("x", "y"))),
    "auto mesh, under jit": lambda L: L.jax.jit(lambda t: L.jax.device_put(
        t, L.NS(L.auto, L.P("x", "y"))))(L.jax.device_put(L.v, L.NS(L.auto, L.P("x")))),
    "explicit mesh": lambda L: L.jax.device_put(L.v, L.NS(L.expl, L.P("x", "y"))),
    "explicit mesh, None past the rank": lambda L: L.jax.device_put(
        L.v, L.NS(L.expl, L.P("x", None))),
    "explicit mesh, scalar": lambda L: L.jax.device_put(np.float32(1),
                                                        L.NS(L.expl, L.P("x"))),
    "explicit mesh, scalar, None": lambda L: L.jax.device_put(np.float32(1),
                                                              L.NS(L.expl, L.P(None))),
    "explicit mesh, sharded Array": lambda L: L.jax.device_put(
        L.jax.device_put(L.v, L.NS(L.expl, L.P("x"))), L.NS(L.expl, L.P("x", "y"))),
    "explicit mesh, under jit": lambda L: L.jax.jit(lambda t: L.jax.device_put(
        t, L.NS(L.expl, L.P("x", "y"))))(L.v),
    "explicit mesh, PartitionSpec": lambda L: _with(L, L.expl, lambda: L.jax.device_put(
        L.v, L.P("x", "y"))),
    "explicit mesh, PartitionSpec under jit": lambda L: _with(L, L.expl, lambda: L.jax.jit(
        lambda t: L.jax.device_put(t, L.P("x", "y")))(L.v)),
    "mixed mesh, Auto axis past the rank": lambda L: L.jax.device_put(
        L.v, L.NS(L.mixed, L.P(None, "y"))),
    "mixed mesh, Explicit axis past the rank": lambda L: L.jax.device_put(
        L.v, L.NS(L.mixed, L.P("y", "x"))),
}


@pytest.mark.parametrize("name", sorted(LONG))
def test_device_put_spec_longer_than_rank(libs, name):
    got, want = _same_error(libs, LONG[name])
    if isinstance(want, AssertionError):    # JAX's message: (rank, spec of Explicit axes)
        assert str(got).startswith(str(want)), (str(got), str(want))
    else:
        assert "is only valid for values of rank at least" in str(got)


PREFIX = {
    "sharding, device": lambda L: L.jax.device_put(
        (L.v, L.i), (L.NS(L.auto, L.P("x")), L.jax.devices()[1])),
    "device, sharding": lambda L: L.jax.device_put(
        (L.v, L.i), (L.jax.devices()[2], L.NS(L.auto, L.P()))),
    "device, None": lambda L: L.jax.device_put((L.v, L.i), (L.jax.devices()[2], None)),
    "sharding for a sharded Array, device": lambda L: L.jax.device_put(
        (L.xa, L.jnp.asarray(L.i)), (L.NS(L.auto, L.P()), L.jax.devices()[1])),
    "a device for a subtree": lambda L: L.jax.device_put(
        (L.v, (L.i, L.i)), (L.NS(L.auto, L.P("x")), L.jax.devices()[1])),
    "nested mix": lambda L: L.jax.device_put(
        (L.v, (L.i, L.i)), (L.NS(L.auto, L.P("x")),
                            (L.jax.devices()[1], L.NS(L.expl, L.P()))),),
    "list": lambda L: L.jax.device_put([L.v, L.i], [L.NS(L.auto, L.P("x")),
                                                    L.jax.devices()[1]]),
    "dict": lambda L: L.jax.device_put({"p": L.v, "q": L.i},
                                       {"p": L.NS(L.auto, L.P("x")),
                                        "q": L.jax.devices()[1]}),
    "under jit": lambda L: L.jax.jit(lambda t, u: L.jax.device_put(
        (t, u), (L.NS(L.auto, L.P("x")), L.jax.devices()[1])))(L.v, L.i),
    "PartitionSpec under set_mesh, device": lambda L: _with(
        L, L.auto, lambda: L.jax.device_put((L.v, L.i), (L.P("x"), L.jax.devices()[4]))),
}


@pytest.mark.parametrize("name", sorted(PREFIX))
def test_device_put_prefix_mixing_shardings_and_devices(libs, name):
    _same_arrays(libs, PREFIX[name])


def test_device_put_partition_spec_under_jit(libs):
    """A PartitionSpec under set_mesh inside jit (it read get_mesh, which refuses)."""
    for spec in [("x",), ()]:
        _same_arrays(libs, lambda L: _with(L, L.expl, lambda: L.jax.jit(
            lambda t: L.jax.device_put(t, L.P(*spec)))(L.jax.device_put(
                L.v, L.NS(L.expl, L.P("x"))))))


@pytest.mark.parametrize("device", [
    lambda L: (L.jax.devices()[0],) * 3,
    lambda L: [L.jax.devices()[0]] * 2,
    lambda L: {"k": L.jax.devices()[0]},
])
def test_device_put_no_prefix(libs, device):
    _same_error(libs, lambda L: L.jax.device_put((L.v, L.i), device(L)), "prefix")
