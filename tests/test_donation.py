"""Buffer donation (``jit(..., donate_argnums=/donate_argnames=)``): a donated argument an
output can take is consumed (deleted; later use raises RuntimeError as in JAX) and its
buffer receives an output in place (interpreter and native backends); a donated argument
no output can take stays valid with a warning; values never change; the device's bytes
never count an extra output.  Real JAX decides which donations are usable."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.config import config
from jaxlite.runtime import buffer as _buffer

DEV = jaxlite.devices()[0]
N = 1 << 18          # 1 MiB of float32: above the pool's minimum, small enough to be quick


@pytest.fixture(params=["interpreter", "native"])
def backend(request):
    """Builds jit functions on the interpreter or on the native backend (no tiering)."""
    if request.param == "interpreter":
        with config._override("jaxlite_backend", "interpreter"):
            yield request.param
    else:
        with config._override("jaxlite_backend", "cpu"), \
                config._override("jaxlite_tiered", False):
            yield request.param


def _fresh(n=N, dtype=np.float32, scale=1.0):
    host = (np.arange(n, dtype=np.float64) / n * scale).astype(dtype)
    return host, jaxlite.device_put(host.copy())


def _ptr(x):
    return x.unsafe_buffer_pointer()


def _chain(a):        # elementwise, no sin/cos: native kernels may write in place
    return jnp.exp(a * 0.5 - 1.0) * 3.0 + a


def _chain_np(a):
    with np.errstate(all="ignore"):
        return (np.exp(a * np.float32(0.5) - np.float32(1.0)) * np.float32(3.0) +
                a).astype(np.float32)


def test_donated_argument_receives_the_output_and_is_deleted(backend, no_gc):
    f = jaxlite.jit(_chain, donate_argnums=0)
    for _ in range(2):        # the second call runs the cached donation plan
        host, x = _fresh()
        p = _ptr(x)
        before = DEV.memory_stats()
        DEV.reset_peak_memory()
        y = f(x)
        after = DEV.memory_stats()
        np.testing.assert_allclose(np.asarray(y), _chain_np(host), rtol=2e-6)
        assert y.dtype == np.float32 and y.shape == (N,)
        assert x.is_deleted() and not y.is_deleted()
        assert _ptr(y) == p                       # written into the donated buffer
        # no extra output allocation: bytes in use and the peak stay where they were
        assert after["bytes_in_use"] == before["bytes_in_use"]
        assert after["peak_bytes_in_use"] == before["bytes_in_use"]
        with pytest.raises(RuntimeError, match="deleted"):
            x + 1
        with pytest.raises(RuntimeError, match="deleted"):
            f(x)
        del y


def test_without_donation_the_output_is_new(backend):
    f = jaxlite.jit(_chain)
    host, x = _fresh()
    y = f(x)
    assert not x.is_deleted() and _ptr(y) != _ptr(x)
    np.testing.assert_array_equal(np.asarray(x), host)


def test_donated_argument_dead_before_a_later_kernel(backend):
    # a is read by a reduction only; the elementwise output comes later and takes its buffer
    def f(a, b):
        return jnp.sum(a) * b + 1.0
    g = jaxlite.jit(f, donate_argnums=0)
    ha, a = _fresh()
    hb, b = _fresh(scale=2.0)
    p = _ptr(a)
    y = g(a, b)
    np.testing.assert_allclose(np.asarray(y), np.float32(ha.sum(dtype=np.float64)) * hb + 1,
                               rtol=1e-5)
    assert a.is_deleted() and not b.is_deleted()
    np.testing.assert_array_equal(np.asarray(b), hb)      # never written
    if backend == "native":
        # (the interpreter writes only into an operand dying at that very equation)
        assert _ptr(y) == p


@pytest.mark.parametrize("case", ["broadcast", "transpose", "reduce", "sin"])
def test_unsafe_in_place_reads_fall_back_to_a_new_buffer(backend, case):
    # the kernel reads the donated operand at other indices than it writes (or may rerun
    # on its inputs): values must be right whatever buffer the output lands in
    m = 512
    host = ((np.arange(m * m, dtype=np.float64) % 997) / 10.0).astype(np.float32)
    host = host.reshape(m, m)
    fns = {
        "broadcast": (lambda a: a * a[:1, :], lambda a: a * a[:1, :]),
        "transpose": (lambda a: a.T + a, lambda a: a.T + a),
        "reduce": (lambda a: a - jnp.max(a, axis=1, keepdims=True),
                   lambda a: a - a.max(axis=1, keepdims=True)),
        "sin": (lambda a: jnp.sin(a * 1e5), lambda a: np.sin(a * np.float32(1e5))),
    }
    fj, fn = fns[case]
    x = jaxlite.device_put(host.copy())
    y = jaxlite.jit(fj, donate_argnums=0)(x)
    assert x.is_deleted()
    np.testing.assert_allclose(np.asarray(y), fn(host).astype(np.float32), rtol=2e-6,
                               atol=2e-6)


def test_identity_output_consumes_the_donation(backend):
    host, x = _fresh()
    y = jaxlite.jit(lambda a: a, donate_argnums=0)(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), host)


def test_a_numpy_view_held_by_the_user_keeps_its_values(backend):
    host, x = _fresh()
    view = np.asarray(x)
    y = jaxlite.jit(_chain, donate_argnums=0)(x)
    assert x.is_deleted()                  # consumed all the same
    np.testing.assert_array_equal(view, host)
    assert _ptr(y) != view.ctypes.data
    np.testing.assert_allclose(np.asarray(y), _chain_np(host), rtol=2e-6)


def test_an_array_sharing_the_buffer_keeps_its_values(backend):
    host, x = _fresh()
    alias = jaxlite.jit(lambda a: a)(x)        # the identity output shares x's memory
    y = jaxlite.jit(_chain, donate_argnums=0)(alias)
    assert alias.is_deleted() and not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), host)
    np.testing.assert_allclose(np.asarray(y), _chain_np(host), rtol=2e-6)


def test_interpreter_text_of_a_donated_program():
    with config._override("jaxlite_backend", "interpreter"):
        x = jnp.ones(8)
        ex = jaxlite.jit(_chain, donate_argnums=0).lower(x).compile()._program.executable
    text = ex.donated_text([0])
    assert "are donated" in text and "in place into a0" in text
    assert "into a0" not in ex.as_text()


def _donation_outcome(mod, np_, fn, args, **kw):
    """(is_deleted per argument, warning categories) of one call of jit(fn, **kw)."""
    arrs = [np_.asarray(a) for a in args]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mod.jit(fn, **kw)(*arrs)
    return [a.is_deleted() for a in arrs], [x.category for x in w]


CASES = [
    ("sum", lambda a: a.sum(), [np.arange(3.0, dtype=np.float32)], dict(donate_argnums=0)),
    ("mul", lambda a: a * 2, [np.arange(3.0, dtype=np.float32)], dict(donate_argnums=0)),
    ("cast", lambda a: a.astype(np.int32), [np.arange(3.0, dtype=np.float32)],
     dict(donate_argnums=0)),
    ("reshape", lambda a: a.reshape(3, 1), [np.arange(3.0, dtype=np.float32)],
     dict(donate_argnums=0)),
    ("slice", lambda a: a[:2], [np.arange(3.0, dtype=np.float32)], dict(donate_argnums=0)),
    ("two_for_one", lambda a, b: a + b, [np.ones(3, np.float32)] * 2,
     dict(donate_argnums=(0, 1))),
    ("two_outputs", lambda a, b: (b * 2, a * 3), [np.ones(3, np.float32)] * 2,
     dict(donate_argnums=0)),
    ("argname_positional", lambda a, b: a * b, [np.ones(3, np.float32)] * 2,
     dict(donate_argnames="a")),
    ("second_only", lambda a, b: a * b, [np.ones(3, np.float32)] * 2,
     dict(donate_argnums=1)),
]


@pytest.mark.parametrize("name,fn,args,kw", CASES, ids=[c[0] for c in CASES])
def test_which_donations_are_consumed_like_jax(rjax, rjnp, name, fn, args, kw):
    assert _donation_outcome(jaxlite, jnp, fn, args, **kw) == \
        _donation_outcome(rjax, rjnp, fn, args, **kw)


def test_pytree_and_keyword_donation_like_jax(rjax, rjnp):
    for mod, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        d = {"a": np_.ones(3), "b": np_.zeros(3)}
        mod.jit(lambda t: {k: v + 1 for k, v in t.items()}, donate_argnums=0)(d)
        assert d["a"].is_deleted() and d["b"].is_deleted()
        x, s = np_.ones(3), np_.ones(3)
        mod.jit(lambda a, b: a * b, donate_argnames="a")(a=x, b=s)
        assert x.is_deleted() and not s.is_deleted()


def test_unusable_donation_warns_once_per_signature_in_our_words():
    f = jaxlite.jit(lambda a: a.sum(), donate_argnums=0)
    x = jnp.ones(3)
    with pytest.warns(UserWarning, match=r"donated buffers were not usable.*f32\[3\]"):
        f(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(x)                                   # same signature: no second warning
    assert not x.is_deleted() and x.tolist() == [1.0, 1.0, 1.0]
    with pytest.warns(UserWarning, match=r"f32\[4\]"):
        f(jnp.ones(4))                         # a new signature warns again


def test_donating_a_buffer_passed_twice_raises_like_jax(rjax, rjnp):
    for mod, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        x = np_.arange(3.0)
        with pytest.raises(RuntimeError):
            mod.jit(lambda a, b: a + b, donate_argnums=0)(x, x)
    x = jnp.arange(3.0)
    with pytest.raises(RuntimeError, match="also passed as argument 1"):
        jaxlite.jit(lambda a, b: a + b, donate_argnums=0)(x, x)
    assert not x.is_deleted() and x.tolist() == [0.0, 1.0, 2.0]
    # an unusable donation of a repeated buffer is no error (as in JAX)
    with pytest.warns(UserWarning):
        assert float(jaxlite.jit(lambda a, b: a.sum() + b.sum(), donate_argnums=0)(x, x)) \
            == 6.0


def test_numpy_arguments_are_not_donated():
    host = np.ones(3, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = jaxlite.jit(lambda a: a + 1, donate_argnums=0)(host)
    assert y.tolist() == [2.0, 2.0, 2.0] and host.tolist() == [1.0, 1.0, 1.0]


def test_plan_donation_matches_by_size_in_order():
    from jaxlite.core.avals import ShapedArray
    f32 = lambda *s: ShapedArray(s, np.dtype(np.float32))   # noqa: E731
    i32 = lambda *s: ShapedArray(s, np.dtype(np.int32))     # noqa: E731
    ins = [f32(3), f32(3), f32(2, 2), i32(4)]
    outs = [i32(3), f32(4), f32(1)]
    assert _buffer.plan_donation(ins, outs, (0, 1, 2, 3)) == ((0, 2), (1, 3))
    assert _buffer.plan_donation(ins, outs, ()) == ((), ())


def test_donated_chain_peak_is_the_input_alone(backend, no_gc):
    # the W7 chain, donated: input and output share one buffer
    def chain10(x):
        y = x * 1.5
        y = y + 0.5
        y = jnp.exp(-y)
        y = y * y
        y = y - x
        y = jnp.tanh(y)
        y = y + x
        y = jnp.exp(-y)
        return y * 2.0
    f = jaxlite.jit(chain10, donate_argnums=0)
    g = jaxlite.jit(chain10)
    host, x = _fresh(scale=3.0)
    want = np.asarray(g(jaxlite.device_put(host)))
    base = DEV.memory_stats()["bytes_in_use"]
    DEV.reset_peak_memory()
    y = f(x)
    assert DEV.memory_stats()["peak_bytes_in_use"] == base
    assert DEV.memory_stats()["bytes_in_use"] == base
    np.testing.assert_array_equal(np.asarray(y), want)


def _one_kernel_program(kernel, nargs):
    """A program of one kernel equation over ``nargs`` fresh arguments, operands in the
    order ``kernel_operands`` gives (indices into the arguments)."""
    from jaxlite.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
    from jaxlite.primitives.kernel import kernel_p
    args = [Var(i.aval) for i in kernel.inputs[:nargs]]
    operands = [args[j] for j in kernel._operands]
    outs = [Var(o.aval) for o in kernel.outputs]
    return ClosedJaxpr(Jaxpr([], args, [JaxprEqn(kernel_p, operands, outs,
                                                  {"kernel": kernel})], outs), [])


@pytest.mark.parametrize("case", ["same_index", "transposed", "reduce", "sin"])
def test_native_kernel_writes_in_place_only_where_reads_allow(case):
    """Hand-built kernels reading the donated operand at other indices than they write
    (a transposed read) or that may rerun on their inputs (sin) must not write into it;
    a kernel reading it only at the index it writes must (its map output, also beside a
    reduction)."""
    from jaxlite import lax
    from jaxlite.backends.cpu.native import CpuExecutable
    from jaxlite.core.avals import ShapedArray
    from jaxlite.primitives.kernel import Kernel, KernelInput, KernelOutput, run_reference
    m = 64
    sq = ShapedArray((m, m), np.dtype(np.float32))
    with config._override("jax_enable_x64", False):
        if case == "sin":
            body = jaxlite.make_jaxpr(lambda x: lax.sin(x) * 2.0)(np.float32(0)).jaxpr
            ins, ops, outs = [KernelInput(sq, (0, 1))], [0], [KernelOutput("map", sq)]
        elif case == "reduce":
            body = jaxlite.make_jaxpr(lambda x: (x + 1.0, x))(np.float32(0)).jaxpr
            col = ShapedArray((m, 1), np.dtype(np.float32))
            ins, ops = [KernelInput(sq, (0, 1))], [0]
            outs = [KernelOutput("map", sq), KernelOutput("reduce", col, "add", (1,))]
        else:
            body = jaxlite.make_jaxpr(lambda x, y: x * 3.0 - y)(np.float32(0),
                                                               np.float32(0)).jaxpr
            ins = [KernelInput(sq, (0, 1)),
                   KernelInput(sq, (1, 0) if case == "transposed" else (0, 1))]
            ops, outs = [0, 0], [KernelOutput("map", sq)]
    k = Kernel((m, m), ins, body, outs, name=case)
    k._operands = ops
    ex = CpuExecutable(_one_kernel_program(k, 1), case)
    host = ((np.arange(m * m) % 101) * 1e4).astype(np.float32).reshape(m, m)
    want = run_reference(k, *[host for _ in ops])
    x = host.copy()
    got = ex.run([x], frozenset([0]))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
    in_place = np.shares_memory(got[0], x)
    assert in_place == (case in ("same_index", "reduce"))   # a map output beside a sum


def test_compiled_stage_honours_donation_like_jax(rjax, rjnp):
    for mod, np_ in ((jaxlite, jnp), (rjax, rjnp)):
        x = np_.arange(4.0)
        c = mod.jit(lambda a: a * 2, donate_argnums=0).lower(x).compile()
        y = c(x)
        assert x.is_deleted() and y.tolist() == [0.0, 2.0, 4.0, 6.0]
