"""The SPMD partitioner (compiler/passes/spmd_partition.py): a jit over sharded arrays runs
as one per-device program plus explicit collectives.

Checked here: the per-device program's values on random programs and layouts against the
same program run on one device (and NumPy); the collectives it shows in
``lower().compile().as_text()`` and counts in ``cost_analysis()`` (hand-checked counts and
bytes, and the kind of collective real JAX 0.10.2's compiled program has for the same
program); equations run whole are reported.  Values and shardings of jit over sharded
arrays against JAX are checked by the propagation and constraint tests, which now run
through the partitioner too.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.sharding import NamedSharding, PartitionSpec as P

from _oracle import by_id


@pytest.fixture(scope="module")
def mesh():
    # Auto axes: on Explicit ones JAX (and jaxlite) refuse a sharded contraction
    auto = jaxlite.sharding.AxisType.Auto
    return jaxlite.make_mesh((2, 4), ("x", "y"), axis_types=(auto, auto))


def _put(mesh, a, spec):
    return jaxlite.device_put(a, NamedSharding(mesh, P(*spec)))


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _collectives(text):
    """{kind: count} of the collective lines of the partitioned program's listing."""
    out = {}
    for m in re.finditer(r"^#   (all-reduce \w+|all-gather) over", text, re.M):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


# ---- the program each device runs ----------------------------------------------------

def test_contracting_dimension_sharded_is_one_all_reduce(mesh):
    a, b = _rand((16, 8)), _rand((8, 4), 1)
    xa, xb = _put(mesh, a, (None, "y")), _put(mesh, b, ("y", None))
    f = jaxlite.jit(lambda a, b: a @ b)
    c = f.lower(xa, xb).compile()
    text = c.as_text()
    # the per-device program: a (16, 2) by (2, 4) product, then a psum over 'y'
    assert "a:f32[16,2] b:f32[2,4]" in text
    assert re.search(r"f32\[16,4\] = psum\[axes=\(y,\)\]", text)
    assert _collectives(text) == {"all-reduce add": 1}
    ca = c.cost_analysis()
    assert ca["collectives"] == 1.0
    assert ca["collective bytes"] == 16 * 4 * 4        # the float32[16, 4] partial
    r = f(xa, xb)
    np.testing.assert_allclose(np.asarray(r), a @ b, rtol=1e-5, atol=1e-6)
    assert r.sharding.spec == P(None, None) or r.sharding.is_fully_replicated


def test_elementwise_on_one_layout_has_no_collective(mesh):
    a = _rand((8, 8))
    xa = _put(mesh, a, ("x", "y"))
    f = jaxlite.jit(lambda a: jnp.sin(a) * 2 + a)
    c = f.lower(xa).compile()
    assert "a:f32[4,2]" in c.as_text()
    assert _collectives(c.as_text()) == {}
    assert c.cost_analysis()["collectives"] == 0.0
    r = f(xa)
    np.testing.assert_allclose(np.asarray(r), np.sin(a) * 2 + a, rtol=1e-6)
    assert by_id(r.sharding, r.shape) == by_id(xa.sharding, xa.shape)


def test_reductions_and_gathers(mesh):
    a = _rand((8, 8))
    xa = _put(mesh, a, ("x", "y"))

    def f(a):
        return a.sum(), a.max(axis=1), jnp.cumsum(a, axis=0)
    c = jaxlite.jit(f).lower(xa).compile()
    kinds = _collectives(c.as_text())
    # sum over both sharded dimensions: one all-reduce over (x, y); max over 'y'; cumsum
    # needs its dimension whole: one all-gather over 'x'
    assert kinds == {"all-reduce add": 1, "all-reduce max": 1, "all-gather": 1}, kinds
    # the gather is explained: the rule's reason, printed with the equation
    assert re.search(r"^# why: equation \d+ \(cumsum\): .*needs its axis whole", c.as_text(),
                     re.M), c.as_text()
    s, m, cs = jaxlite.jit(f)(xa)
    np.testing.assert_allclose(float(s), a.sum(), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(m), a.max(axis=1))
    np.testing.assert_allclose(np.asarray(cs), np.cumsum(a, axis=0), rtol=1e-5, atol=1e-5)


def test_in_and_out_shardings_reshard_at_the_ends(mesh):
    a = _rand((8, 8))
    f = jaxlite.jit(lambda a: a + 1, in_shardings=NamedSharding(mesh, P("x")),
                    out_shardings=NamedSharding(mesh, P(None, "y")))
    c = f.lower(a).compile()
    text = c.as_text()
    assert "a:f32[4,8]" in text
    # x-rows gathered, then each device keeps its y-columns (a local slice)
    assert _collectives(text) == {"all-gather": 1}
    assert "shard_slice[axis_name=y" in text
    r = f(a)
    np.testing.assert_allclose(np.asarray(r), a + 1)
    assert r.sharding.spec == P(None, "y")
    for s in r.addressable_shards:
        assert s.data.shape == (8, 2)


def test_control_flow_runs_whole_and_is_reported(mesh):
    a = _rand((8, 4))
    xa = _put(mesh, a, ("x", None))

    def f(a):
        return jaxlite.lax.fori_loop(0, 3, lambda i, c: c * 2 + 1, a)
    c = jaxlite.jit(f).lower(xa).compile()
    assert "# replicated: equation" in c.as_text()
    np.testing.assert_allclose(np.asarray(jaxlite.jit(f)(xa)), ((a * 2 + 1) * 2 + 1) * 2 + 1,
                               rtol=1e-6)


def test_one_device_program_has_no_partition():
    c = jaxlite.jit(lambda a: a + 1).lower(np.ones(3, np.float32)).compile()
    assert "SPMD" not in c.as_text()
    assert "collectives" not in c.cost_analysis()


def test_effects_run_once(mesh, capsys):
    a = _rand((8, 4))
    xa = _put(mesh, a, ("x", None))

    def f(a):
        jaxlite.debug.print("s={s}", s=a.sum())
        return a * 2
    r = jaxlite.jit(f)(xa)
    jaxlite.effects_barrier()
    assert capsys.readouterr().out.count("s=") == 1
    np.testing.assert_allclose(np.asarray(r), a * 2)


@pytest.mark.parametrize("case", ["matmul_contract", "sum_all", "cumsum", "elementwise"])
def test_collective_kinds_match_jax(case, mesh, rjax8):
    """The kind of collective in jaxlite's per-device program is the one in real JAX's
    compiled program for the same program and layouts."""
    jax = rjax8
    progs = {
        "matmul_contract": (lambda np_: (lambda a, b: a @ b), [(None, "y"), ("y", None)],
                            [(16, 8), (8, 4)], "all-reduce"),
        "sum_all": (lambda np_: (lambda a: a.sum()), [("x", "y")], [(8, 8)], "all-reduce"),
        "cumsum": (lambda np_: (lambda a: np_.cumsum(a, axis=0)), [("x", None)], [(8, 8)],
                   "all-gather"),
        "elementwise": (lambda np_: (lambda a: np_.exp(a) + a), [("x", "y")], [(8, 8)],
                        None),
    }
    make, specs, shapes, kind = progs[case]
    args = [_rand(s, i) for i, s in enumerate(shapes)]
    auto = jax.sharding.AxisType.Auto
    rmesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(auto, auto))
    rargs = [jax.device_put(x, jax.sharding.NamedSharding(rmesh, jax.P(*s)))
             for x, s in zip(args, specs)]
    rtext = jax.jit(make(jax.numpy)).lower(*rargs).compile().as_text()
    largs = [_put(mesh, x, s) for x, s in zip(args, specs)]
    ltext = jaxlite.jit(make(jnp)).lower(*largs).compile().as_text()
    lkinds = {k.split()[0] for k in _collectives(ltext)}
    rkinds = {k for k in ("all-reduce", "all-gather", "all-to-all", "collective-permute")
              if k + "(" in rtext or k + "-start" in rtext or f" {k}" in rtext}
    if kind is None:
        assert not lkinds and not rkinds, (lkinds, rkinds)
    else:
        assert kind in lkinds and kind in rkinds, (lkinds, rkinds)


# ---- random programs: the partitioned program agrees with one device ------------------

_UNARY = {
    "tanh": jnp.tanh,
    "neg_abs": lambda a: -jnp.abs(a),
    "T": lambda a: a.T,
    "sum0": lambda a: jnp.broadcast_to(a.sum(0, keepdims=True), a.shape),
    "max1": lambda a: a - a.max(1, keepdims=True),
    "cumsum0": lambda a: jnp.cumsum(a, 0),
    "cumsum1": lambda a: jnp.cumsum(a, 1),
    "sort1": lambda a: jnp.sort(a, 1),
    "rev0": lambda a: a[::-1],
    "reshape": lambda a: a.reshape(4, 16).reshape(8, 8),
    "roll": lambda a: jnp.concatenate([a[4:], a[:4]], 0),
    "softmax": lambda a: jaxlite.nn.softmax(a, axis=-1),
    "take": lambda a: a[jnp.array([3, 1, 0, 7, 2, 2, 5, 6])],
    "mean_all": lambda a: a - a.mean(),
}
_BINARY = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "matmul": lambda a, b: (a @ b) / 8,
    "matmul_T": lambda a, b: (a.T @ b) / 8,
    "where": lambda a, b: jnp.where(a > b, a, b),
}
_ENTRIES = [None, "x", "y", ("x", "y"), ("y", "x")]


@st.composite
def _specs(draw):
    s0 = draw(st.sampled_from(_ENTRIES))
    used = set() if s0 is None else set((s0,) if isinstance(s0, str) else s0)
    rest = [e for e in _ENTRIES if e is None or not used & set(
        (e,) if isinstance(e, str) else e)]
    return (s0, draw(st.sampled_from(rest)))


@st.composite
def _programs(draw):
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just(1), st.sampled_from(sorted(_UNARY)), st.integers(0, 3)),
        st.tuples(st.just(2), st.sampled_from(sorted(_BINARY)), st.integers(0, 3),
                  st.integers(0, 3))), min_size=1, max_size=6))
    specs = [draw(_specs()) for _ in range(2)]
    out = draw(st.one_of(st.none(), _specs()))
    return steps, specs, out


def _run_steps(steps, a, b):
    vals = [a, b]
    for step in steps:
        if step[0] == 1:
            vals.append(_UNARY[step[1]](vals[step[2] % len(vals)]))
        else:
            vals.append(_BINARY[step[1]](vals[step[2] % len(vals)],
                                         vals[step[3] % len(vals)]))
    return vals[-1], vals[-2]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(_programs())
def test_random_programs_agree_with_one_device(mesh, prog):
    steps, specs, out = prog
    a, b = _rand((8, 8), 1), _rand((8, 8), 2)
    want = [np.asarray(v) for v in jaxlite.jit(lambda a, b: _run_steps(steps, a, b))(a, b)]
    xa, xb = _put(mesh, a, specs[0]), _put(mesh, b, specs[1])
    kw = {} if out is None else {"out_shardings": NamedSharding(mesh, P(*out))}
    f = jaxlite.jit(lambda a, b: _run_steps(steps, a, b), **kw)
    got = f(xa, xb)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5)
        for s in g.addressable_shards:       # every shard is its slice of the value
            np.testing.assert_allclose(np.asarray(s.data), np.asarray(g)[s.index],
                                       rtol=0, atol=0)
    if out is not None:
        assert got[0].sharding.spec == P(*out)
    # the listing is the program that ran: its collectives are the ones counted
    c = f.lower(xa, xb).compile()
    assert c.cost_analysis()["collectives"] == float(sum(
        _collectives(c.as_text()).values()))


@pytest.mark.parametrize("axis_type", ["Auto", "Explicit"])
@pytest.mark.parametrize("case", ["same", "sum", "replicated", "transpose", "identity"])
def test_donated_sharded_arguments_are_deleted_as_jax(rjax8, axis_type, case):
    """JAX 0.10.2 deletes a donated sharded argument whatever its outputs' sizes, with no
    warning; the results stay readable, and the devices' bytes drop by its shards."""
    import warnings
    fns = {"same": lambda x: x + 1, "sum": lambda x: x.sum(0), "replicated": lambda x: x * 2,
           "transpose": lambda x: x.T, "identity": lambda x: x}
    specs = {"replicated": ()}

    def run(lib):
        t = getattr(lib.sharding.AxisType, axis_type)
        m = lib.make_mesh((8,), ("b",), axis_types=(t,))
        x = lib.device_put(np.arange(64, dtype=np.float32).reshape(8, 8),
                           lib.sharding.NamedSharding(m, lib.sharding.PartitionSpec(
                               *specs.get(case, ("b",)))))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = lib.jit(fns[case], donate_argnums=0)(x)
        return x.is_deleted(), len(w), np.asarray(r), r.sharding
    want, got = run(rjax8), run(jaxlite)
    assert got[:2] == want[:2]
    np.testing.assert_array_equal(got[2], want[2])
    assert by_id(got[3], got[2].shape) == by_id(want[3], want[2].shape)


def test_donated_sharded_argument_frees_its_device_bytes(mesh):
    devs = jaxlite.devices()
    x = _put(mesh, np.ones((8, 8), np.float32), ("x", None))
    import gc
    gc.collect()        # arrays earlier tests left to the collector must not go mid-way
    before = [d.memory_stats()["bytes_in_use"] for d in devs]
    r = jaxlite.jit(lambda a: a * 3, donate_argnums=0)(x)
    after = [d.memory_stats()["bytes_in_use"] for d in devs]
    # the result takes the argument's place: 4 rows x 8 floats on every device
    assert after == before and x.is_deleted()
    np.testing.assert_array_equal(np.asarray(r), np.full((8, 8), 3.0, np.float32))
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_a_value_is_resharded_once_for_all_its_readers(mesh):
    a = _rand((8, 4))
    xa = _put(mesh, a, ("x", None))
    f = jaxlite.jit(lambda a: a[0] + a[1] + a[5] + a[7])
    c = f.lower(xa).compile()
    # four slices need dimension 0 whole: ONE all-gather serves them all
    assert _collectives(c.as_text()) == {"all-gather": 1}, c.as_text()
    np.testing.assert_allclose(np.asarray(f(xa)), a[0] + a[1] + a[5] + a[7], rtol=1e-6)


@pytest.mark.own_partitioner
def test_jit_of_shard_map_is_not_partitioned_again(mesh):
    """A jitted shard_map is the per-device program already (manual, as in JAX): its
    collectives are the body's (counted: one all-reduce of one device's float32[4]), and
    the compiler adds none."""
    a = _rand((8, 4))
    xa = _put(mesh, a, ("x", None))
    f = jaxlite.jit(jaxlite.shard_map(lambda b: jaxlite.lax.psum(b.sum(0), "x"), mesh=mesh,
                                      in_specs=P("x"), out_specs=P()))
    c = f.lower(xa).compile()
    assert "SPMD partitioned" not in c.as_text()
    ca = c.cost_analysis()
    assert (ca["collectives"], ca["collective bytes"]) == (1.0, 16.0)
    np.testing.assert_allclose(np.asarray(f(xa)), a.sum(0), rtol=1e-5)


@pytest.mark.parametrize("case", ["elementwise", "matmul over replicated weights"])
def test_cost_analysis_counts_one_device_as_jax(rjax8, case):
    """A partitioned executable's flops are those of the program one device runs (JAX
    reports the per-device HLO's), not the whole computation's."""
    def run(lib):
        S = lib.sharding
        m = lib.make_mesh((4,), ("x",), axis_types=(S.AxisType.Explicit,),
                          devices=lib.devices()[:4])
        x = lib.device_put(_rand((8, 4)), S.NamedSharding(m, S.PartitionSpec("x")))
        w = lib.device_put(_rand((4, 16), 1), S.NamedSharding(m, S.PartitionSpec()))
        if case == "elementwise":
            c = lib.jit(lambda a: a * 2).lower(x).compile()
        else:
            c = lib.jit(lambda a, b: a @ b).lower(x, w).compile()
        ca = c.cost_analysis()
        return (ca[0] if isinstance(ca, list) else ca)["flops"]
    assert run(jaxlite) == run(rjax8)


@pytest.mark.parametrize("case", ["two axes over a size-4 dimension", "size 6 over 4"])
def test_indivisible_constraint_is_reported_and_placed_as_jax(rjax8, case):
    """Under jit a constraint whose axes do not divide its dimension keeps the leading
    axes that do (GSPMD's choice; none for 6 rows over 4), and the partitioned program
    says so in a "# why:" line: never a silent replication."""
    def run(lib):
        S = lib.sharding
        NS, Ps = S.NamedSharding, S.PartitionSpec
        m = lib.make_mesh((4, 2), ("x", "y"), axis_types=(S.AxisType.Auto,) * 2)
        if case.startswith("two"):
            x = lib.device_put(_rand((8, 4)), NS(m, Ps("x")))
            target = NS(m, Ps(None, ("x", "y")))
        else:
            x = lib.device_put(_rand((6, 4)), NS(m, Ps()))
            target = NS(m, Ps("x"))
        f = lib.jit(lambda a: lib.lax.with_sharding_constraint(a * 2, target))
        r = f(x)
        return np.asarray(r), repr(r.sharding), f.lower(x).compile()
    (gv, gs, c), (wv, ws, _) = run(jaxlite), run(rjax8)
    np.testing.assert_array_equal(gv, wv)
    assert gs == ws
    assert re.search(r"# why: .*not divisible by mesh axes", c.as_text()), c.as_text()


def test_in_shardings_on_a_like_mesh_of_other_devices_moves_the_argument(rjax8):
    """A committed argument laid out as in_shardings asks but on other devices (a mesh of
    the same axes) moves there, as in JAX; another spec still raises ValueError."""
    def run(lib):
        S = lib.sharding
        NS, Ps = S.NamedSharding, S.PartitionSpec
        d = lib.devices()
        m1 = lib.make_mesh((4,), ("x",), devices=d[:4], axis_types=(S.AxisType.Auto,))
        m2 = lib.make_mesh((4,), ("x",), devices=d[4:], axis_types=(S.AxisType.Auto,))
        a = lib.device_put(_rand((8, 4)), NS(m1, Ps("x")))
        r = lib.jit(lambda u: u * 2, in_shardings=NS(m2, Ps("x")))(a)
        with pytest.raises(ValueError, match="does not match"):
            lib.jit(lambda u: u * 2, in_shardings=NS(m1, Ps(None, "x")))(a)
        return np.asarray(r), sorted(x.id for x in r.sharding.device_set), repr(r.sharding)
    got, want = run(jaxlite), run(rjax8)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:]


@pytest.mark.own_partitioner
def test_jitted_shard_map_counts_its_collectives():
    """A jitted shard_map reports the collectives its body runs (hand-checked kinds and
    bytes: one device's operand): one per collective, none for a psum traced only for
    differentiation, none for a plain vmap's axis_name."""
    mesh = jaxlite.make_mesh((4,), ("b",), devices=jaxlite.devices()[:4])
    Ps = jaxlite.sharding.PartitionSpec
    lax = jaxlite.lax
    x = np.ones((16, 4), np.float32)
    cases = {
        "all-reduce add": lambda v: lax.psum(v, "b"),
        "all-gather": lambda v: lax.all_gather(v, "b", tiled=True),
        "reduce-scatter": lambda v: lax.psum_scatter(v, "b", tiled=True),
        "collective-permute": lambda v: lax.ppermute(v, "b", [(i, (i + 1) % 4)
                                                              for i in range(4)]),
        "all-to-all": lambda v: lax.all_to_all(v, "b", 0, 0, tiled=True),
    }
    for kind, body in cases.items():
        c = jaxlite.jit(jaxlite.shard_map(body, mesh=mesh, in_specs=Ps("b"),
                                          out_specs=Ps("b"), check_vma=False)
                        ).lower(x).compile()
        ca = c.cost_analysis()
        assert (ca["collectives"], ca["collective bytes"]) == (1.0, 4 * 4 * 4), kind
        assert f"#   {kind} over ('b',): float32[4, 4] (64 bytes)" in c.as_text(), kind

    def local(w, v):    # a data-parallel step: the loss's pmean and the gradient's psum
        loss, g = jaxlite.value_and_grad(
            lambda w: lax.pmean(((v @ w) ** 2).mean(), "b"))(w)
        return w - g, loss
    step = jaxlite.jit(jaxlite.shard_map(local, mesh=mesh, in_specs=(Ps(), Ps("b")),
                                         out_specs=(Ps(), Ps())))
    ca = step.lower(np.ones((4, 2), np.float32), x).compile().cost_analysis()
    assert (ca["collectives"], ca["collective bytes"]) == (2.0, 4 + 4 * 2 * 4)
    vm = jaxlite.jit(jaxlite.vmap(lambda v: lax.psum(v, "i"), axis_name="i"))
    assert "collectives" not in vm.lower(x).compile().cost_analysis()
