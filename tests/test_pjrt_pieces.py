"""Host callbacks inside jitted programs on a PJRT platform (backends/pjrt/pieces.py): the
program runs in pieces around them, with the values, the order and the number of callback
calls of the CPU platform (the oracle: the same function jitted on jaxlite's ``cpu``).
The platform is ``JAXLITE_TEST_PLATFORM`` (default ``xla_cpu``; ``tpu`` runs the same on
the chip)."""
from __future__ import annotations

import os

import numpy as np
import pytest

PLATFORM = os.environ.get("JAXLITE_TEST_PLATFORM", "xla_cpu")
if PLATFORM == "xla_cpu":
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")

import jaxlite as jax  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite.backends.pjrt import client as pjrt_client  # noqa: E402
from jaxlite.backends.pjrt.pieces import PiecewiseExecutable  # noqa: E402
from jaxlite.errors import JaxRuntimeError  # noqa: E402
from jaxlite.experimental import io_callback  # noqa: E402


@pytest.fixture(scope="module")
def xla():
    return jax.devices(PLATFORM)[0]


@pytest.fixture(scope="module")
def cpu():
    return jax.devices("cpu")[0]


def on_both(fn, args, xla, cpu, capsys):
    """``jit(fn)`` run on ``args`` committed to the CPU platform, then to PLATFORM: the
    outputs (as NumPy) and the printed lines of each."""
    got = []
    for dev in (cpu, xla):
        placed = [jax.device_put(a, dev) for a in args]
        outs = jax.jit(fn)(*placed)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for o in outs:
            assert o.device == dev
        jax.effects_barrier()
        got.append(([np.asarray(o) for o in outs], capsys.readouterr().out.splitlines()))
    return got


def assert_same(got):
    (cpu_outs, cpu_lines), (xla_outs, xla_lines) = got
    assert xla_lines == cpu_lines
    assert len(xla_outs) == len(cpu_outs)
    for a, b in zip(xla_outs, cpu_outs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_debug_print_in_jit_prints_every_call(xla, cpu, capsys):
    def f(x):
        jax.debug.print("x = {x}", x=x)
        return x * 2
    got = on_both(f, [jnp.array([1.0, 2.0, 3.0])], xla, cpu, capsys)
    assert got[1][1] == ["x = [1. 2. 3.]"]
    assert_same(got)
    x = jax.device_put(jnp.array([1.0, 2.0, 3.0]), xla)
    g = jax.jit(f)
    for _ in range(3):
        y = g(x)
    assert capsys.readouterr().out.splitlines() == ["x = [1. 2. 3.]"] * 3
    assert y.dtype == np.float32 and np.asarray(y).tolist() == [2.0, 4.0, 6.0]


def test_loops_and_branches_call_back_once_per_iteration(xla, cpu, capsys):
    def f(x, n):
        def body(i, c):
            jax.debug.print("fori i={i} c={c}", i=i, c=c)
            return c * 2 + i
        c = jax.lax.fori_loop(0, 3, body, x)

        def wbody(s):
            jax.debug.print("while {k}", k=s[0])
            return s[0] + 1, s[1] * 1.5
        k, c = jax.lax.while_loop(lambda s: s[0] < n, wbody, (jnp.int32(0), c))

        def sbody(carry, xi):
            jax.debug.print("scan {c} {xi}", c=carry, xi=xi)
            return carry + xi, carry * xi
        c2, ys = jax.lax.scan(sbody, c, jnp.arange(4.0), reverse=True)
        r = jax.lax.cond(c2 > 5, lambda v: (jax.debug.print("big {v}", v=v), v + 1)[1],
                         lambda v: (jax.debug.print("small {v}", v=v), v - 1)[1], c2)
        return r, ys, k
    got = on_both(f, [jnp.float32(1.0), jnp.int32(2)], xla, cpu, capsys)
    lines = got[1][1]
    assert [ln.split()[0] for ln in lines] == ["fori"] * 3 + ["while"] * 2 + ["scan"] * 4 + \
        ["big"]
    assert lines[0] == "fori i=0 c=1.0" and lines[3] == "while 0"
    assert_same(got)
    assert got[1][0][1].shape == (4,) and got[1][0][2].dtype == np.int32


def test_scan_with_no_steps_and_no_scanned_operands(xla, cpu, capsys):
    def f(x):
        def body(c, _):
            jax.debug.print("step {c}", c=c)
            return c + 1.0, c * 2.0
        a, ys = jax.lax.scan(body, x, None, length=3)
        b, zs = jax.lax.scan(body, x, None, length=0)
        return a, ys, b, zs
    got = on_both(f, [jnp.float32(2.0)], xla, cpu, capsys)
    assert got[1][1] == ["step 2.0", "step 3.0", "step 4.0"]
    assert got[1][0][3].shape == (0,)
    assert_same(got)


def test_pure_and_ordered_io_callbacks_values_and_order(xla, cpu, capsys):
    calls = []

    def record(tag):
        def cb(v):
            calls.append((tag, np.asarray(v).tolist()))
            return np.asarray(v, np.float32) + 1
        return cb

    def f(x):
        y = jax.pure_callback(lambda a: np.asarray(a) * 10, jax.ShapeDtypeStruct((2,),
                              np.float32), x)
        a = io_callback(record("first"), jax.ShapeDtypeStruct((2,), np.float32), y,
                        ordered=True)
        b = io_callback(record("second"), jax.ShapeDtypeStruct((2,), np.float32), a * 2,
                        ordered=True)
        return jnp.sum(b) + x
    got = on_both(f, [jnp.array([1.0, 2.0])], xla, cpu, capsys)
    assert calls == [("first", [10.0, 20.0]), ("second", [22.0, 42.0])] * 2
    np.testing.assert_array_equal(got[1][0][0], np.array([67.0, 68.0], np.float32))
    assert_same(got)


def test_callback_inside_nested_jit_and_checkpoint(xla, cpu, capsys):
    @jax.jit
    def inner(v):
        jax.debug.print("inner {v}", v=v)
        return jnp.sin(v)

    def f(x):
        def body(c, _):
            return jax.checkpoint(inner)(c), c
        c, ys = jax.lax.scan(body, x, None, length=2)
        return inner(c) + 1, ys
    got = on_both(f, [jnp.float32(0.5)], xla, cpu, capsys)
    assert len(got[1][1]) == 3 and got[1][1][0] == "inner 0.5"
    (c_cpu, ys_cpu), (c_xla, ys_xla) = got[0][0], got[1][0]
    assert got[0][1] == got[1][1]
    np.testing.assert_allclose(c_xla, c_cpu, rtol=1e-6)
    np.testing.assert_allclose(ys_xla, ys_cpu, rtol=1e-6)


def test_transfers_are_counted_and_the_guard_does_not_refuse_them(xla, capsys):
    x = jax.device_put(jnp.arange(4.0, dtype=jnp.float32), xla)
    f = jax.jit(lambda v: jax.pure_callback(lambda a: np.asarray(a) + 1,
                                            jax.ShapeDtypeStruct((4,), np.float32), v * 2))
    f(x).block_until_ready()
    jax.transfer_stats(reset=True)
    with jax.transfer_guard("disallow"):
        y = f(x)
    stats = jax.transfer_stats()
    assert stats[(str(xla), "host")] == {"count": 1, "bytes": 16}
    assert stats[("host", str(xla))] == {"count": 1, "bytes": 16}
    assert np.asarray(y).tolist() == [1.0, 3.0, 5.0, 7.0]


def test_pieces_compile_once_per_signature(xla, capsys, monkeypatch):
    compiles = []
    real = pjrt_client.Client.compile

    def counting(self, *a, **k):
        compiles.append(1)
        return real(self, *a, **k)
    monkeypatch.setattr(pjrt_client.Client, "compile", counting)
    # with a warm persistent cache the pieces are loaded instead: counted the same
    load = pjrt_client.Client.deserialize
    monkeypatch.setattr(pjrt_client.Client, "deserialize",
                        lambda self, *a, **k: (compiles.append(1), load(self, *a, **k))[1])

    def f(x):
        x = jnp.cos(x)
        jax.debug.print("{x}", x=x)
        return x + 1
    g = jax.jit(f)
    # from NumPy: an eager jnp.zeros would compile on the default device (a TPU machine's)
    x = jax.device_put(np.zeros(3, np.float32), xla)
    g(x)
    first = len(compiles)
    assert first == 2          # the piece before the callback and the piece after it
    for _ in range(3):
        g(x)
    assert len(compiles) == first
    g(jax.device_put(np.zeros(5, np.float32), xla))     # a new signature: its own pieces
    assert len(compiles) == 2 * first
    assert capsys.readouterr().out.splitlines() == ["[1. 1. 1.]"] * 4 + ["[1. 1. 1. 1. 1.]"]


def test_compiled_text_describes_the_pieces(xla, capsys):
    def f(x):
        y = x * 3
        jax.debug.print("{y}", y=y)
        return jax.lax.fori_loop(0, 2, lambda i, c: (jax.debug.print("{c}", c=c), c + 1)[1],
                                 y)
    x = jax.device_put(jnp.ones(2), xla)
    compiled = jax.jit(f).lower(x).compile()
    ex = compiled._program.executable_for(xla)
    assert isinstance(ex, PiecewiseExecutable)
    text = ex.as_text()
    assert text.startswith(f"// jit_f holds host callbacks (debug_callback): on platform "
                           f"{PLATFORM} it runs in ")
    assert "host callback debug_callback" in text and "stablehlo.multiply" in text
    assert "scan" in text and "stepped from the host (2 steps)" in text
    assert ex.out_avals[0].shape == (2,) and ex.in_avals[0].shape == (2,)
    assert (ex.cost_analysis() or {}).get("flops", 0) >= 2


def test_callback_errors_surface_as_on_the_cpu(xla, cpu):
    def bad(a):
        raise ValueError("boom")

    def f(x):
        return jax.pure_callback(bad, jax.ShapeDtypeStruct((), np.float32), x)
    for dev in (cpu, xla):
        with pytest.raises(JaxRuntimeError, match="boom"):
            jax.jit(f)(jax.device_put(jnp.float32(1.0), dev)).block_until_ready()

    def wrong_shape(x):
        return jax.pure_callback(lambda a: np.zeros(3, np.float32),
                                 jax.ShapeDtypeStruct((), np.float32), x)
    with pytest.raises(JaxRuntimeError, match="incorrect output shape"):
        jax.jit(wrong_shape)(jax.device_put(jnp.float32(1.0), xla))


def test_eager_debug_print_of_a_device_array(xla, capsys):
    x = jax.device_put(jnp.array([1, 2], dtype=jnp.int32), xla)
    jax.debug.print("eager {x}", x=x)
    assert capsys.readouterr().out == "eager [1 2]\n"


def test_vmap_of_debug_print_under_jit(xla, cpu, capsys):
    def f(x):
        def row(r):
            jax.debug.print("row {r}", r=r)
            return r.sum()
        return jax.vmap(row)(x)
    got = on_both(f, [jnp.arange(6.0).reshape(3, 2)], xla, cpu, capsys)
    assert got[1][1] == ["row [0. 1.]", "row [2. 3.]", "row [4. 5.]"]
    assert_same(got)


def test_forward_derivative_of_a_checkpointed_callback(xla, cpu, capsys):
    def f(x):
        jax.debug.print("in f {x}", x=x)
        return jnp.sin(x) * x

    def g(x, t):
        return jax.jvp(jax.checkpoint(f), (x,), (t,))
    got = on_both(g, [jnp.array([0.5, 1.0]), jnp.ones(2)], xla, cpu, capsys)
    # the checkpointed primal, then its JVP program, each calls back once
    assert got[1][1] == ["in f [0.5 1. ]"] * 2 == got[0][1]
    for a, b in zip(got[1][0], got[0][0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert a.dtype == np.float32


def test_a_callback_inside_a_primitive_it_cannot_drive_is_refused(xla):
    import types
    from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
    inner = jax.make_jaxpr(lambda x: (jax.debug.print("{x}", x=x), x * 2)[1])(
        np.ones(2, np.float32))
    holder = types.SimpleNamespace(name="holder", host_callback=False, kind="other",
                                   multiple_results=True)
    v, o = Var(inner.in_avals[0]), Var(inner.out_avals[0])
    eqn = JaxprEqn(holder, [v], [o], {"jaxpr": inner}, source="model.py:3")
    closed = ClosedJaxpr(Jaxpr([], [v], [eqn], [o]), [])
    with pytest.raises(NotImplementedError,
                       match=r"primitive 'holder' holds a host callback .*\(at model.py:3\), "
                             rf"which platform {PLATFORM} cannot run"):
        xla.backend.compile(closed, [xla], "f")


def test_lowered_text_of_a_program_with_and_without_callbacks():
    from jaxlite.backends.pjrt.pieces import lowered_text

    def f(x):
        y = jnp.exp(x)
        jax.debug.print("{y}", y=y)
        return jax.lax.cond(y.sum() > 1, lambda v: v * 2, lambda v: v, y)
    closed = jax.make_jaxpr(f)(np.ones(3, np.float32))
    text = lowered_text(closed, name="f", platform="tpu")      # lowered only: no chip needed
    assert text.startswith("// f holds host callbacks (debug_callback): on platform tpu it "
                           "runs in 3 pieces")
    assert "// piece 1: device program of 1 equation (exp)" in text
    assert "stablehlo.exponential" in text and "// piece 2: host callback debug_callback" in text
    assert "stablehlo.case" in text        # the cond holds no callback: one device piece
    plain = lowered_text(jax.make_jaxpr(jnp.sin)(np.ones(3, np.float32)), name="g",
                         platform="tpu")
    assert plain.startswith("module @g") and "stablehlo.sine" in plain


def test_lower_as_text_of_a_jitted_callback_program(xla):
    def f(x):
        jax.debug.print("{x}", x=x)
        return x + 1
    text = jax.jit(f).lower(jax.device_put(jnp.ones(2), xla)).as_text()
    assert text.startswith(f"// jit_f holds host callbacks (debug_callback): on platform "
                           f"{PLATFORM} it runs in 2 pieces")
    assert "// piece 1: host callback debug_callback" in text and "stablehlo.add" in text


def test_eager_control_flow_with_different_callbacks_calls_each(xla, capsys):
    """An eager cond on device arrays is compiled once per signature and program, but a
    program's text names a callback, not the function it calls: each runs its own."""
    x = jax.device_put(jnp.float32(1.0), xla)
    for tag in ("a", "b"):
        jax.lax.cond(x > 0, lambda v, t=tag: (jax.debug.print(t + " {v}", v=v), v)[1],
                     lambda v: v, x)
    assert capsys.readouterr().out.splitlines() == ["a 1.0", "b 1.0"]
    outs = [jax.lax.cond(x > 0, lambda v, k=k: jax.pure_callback(
        lambda a: np.asarray(a) * 0 + k, jax.ShapeDtypeStruct((), np.float32), v),
        lambda v: v, x) for k in (2.0, 3.0)]
    assert [float(o) for o in outs] == [2.0, 3.0] and outs[0].device == xla


def test_callback_operands_are_cpu_arrays_with_the_platform_as_default(xla, cpu):
    # as in JAX: a callback's operands are put on the CPU device and the callback runs with
    # it as the default device, whatever platform the program runs on (on a TPU machine
    # the chip is the default device; an operand wrapped on it crashed the callback)
    seen = []

    def cb(a):
        seen.append((a.devices(), (a * 2).devices(), jnp.ones(2).devices()))
        return np.asarray(a) * 10

    f = jax.jit(lambda x: jax.pure_callback(cb, jax.ShapeDtypeStruct((2,), np.float32), x))
    with jax.default_device(xla):
        out = f(jnp.array([1.0, 2.0], np.float32))
    assert out.devices() == {xla}
    np.testing.assert_array_equal(jax.device_get(out), np.array([10.0, 20.0], np.float32))
    assert seen == [({cpu}, {cpu}, {cpu})]
