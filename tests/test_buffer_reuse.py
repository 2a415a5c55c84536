"""Buffer reuse in the interpreter backend: an elementwise equation whose operand dies
there writes into that operand's buffer.  Results must be bit-identical to the reference
evaluator (``eval_jaxpr_impl``, which never reuses), arguments and constants are never
written, outputs never alias inputs, views of a buffer keep their values, and the peak
memory of a jitted elementwise chain is input + output."""
from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest
from _host_memory import host_peak_of_call
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite.backends.interpreter import InterpretedExecutable
from jaxlite.core.eager import fp_ignore_begin, fp_ignore_end
from jaxlite.ir.interpret import eval_jaxpr_impl

DEV = jaxlite.devices()[0]
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(autouse=True)
def _interpreter_backend():
    """Every jit here uses the interpreter backend, whose buffer reuse this file tests
    (the default cpu backend prints and plans its native program instead)."""
    with jaxlite.config._override("jaxlite_backend", "interpreter"):
        yield


def _bits(a):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}") if a.dtype.kind != "c" \
        else np.ascontiguousarray(a).view(f"u{a.dtype.itemsize // 2}")


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    x = rng.standard_normal(shape) * rng.choice([0.5, 3.0, 100.0], shape)
    flat = x.reshape(-1)
    if flat.size > 4:
        flat[::5] = np.nan
        flat[1::7] = np.inf
        flat[2::11] = -0.0
    return x.astype(dtype)


def run_both(f, *args):
    """``f`` traced once, then run by the interpreter executable and by the reference
    evaluator on copies of the arguments; returns (executable, results, reference)."""
    closed = jaxlite.make_jaxpr(f)(*args)
    ex = InterpretedExecutable(closed, "f")
    hosts = [np.asarray(a) for a in args]
    keep = [h.copy() for h in hosts]
    consts = [np.asarray(c).copy() for c in closed.consts]
    token = fp_ignore_begin()
    try:
        got = ex.run(hosts)
        want = eval_jaxpr_impl(closed.jaxpr, [np.asarray(c) for c in closed.consts], *keep)
    finally:
        fp_ignore_end(token)
    for h, k in zip(hosts, keep):      # arguments never written
        assert_same_bits(h, k)
    for c, k in zip(closed.consts, consts):    # constants never written
        assert_same_bits(np.asarray(c), k)
    # an output computed by an equation never aliases an argument or a constant (a
    # program returning its argument itself hands back that array; jit copies it)
    srcs = hosts + [np.asarray(c) for c in closed.consts]
    for g, v in zip(got, closed.jaxpr.outvars):
        if v in closed.jaxpr.invars or v in closed.jaxpr.constvars:
            continue
        for h in srcs:
            if isinstance(g, np.ndarray) and g.size and g.base is None:
                assert not np.shares_memory(g, h)
    return ex, got, want


def chain(x):
    """The W7 chain (10 equations in JAX's jaxpr)."""
    y = x * 1.5
    y = y + 0.5
    y = jnp.sin(y)
    y = y * y
    y = y - x
    y = jnp.exp(-y)
    y = y + x
    y = jnp.tanh(y)
    return y * 2.0


def int_chain(x):
    y = x * 3
    y = y + x
    y = y ^ (x | 5)
    y = -y
    y = jnp.maximum(y, x) & 0x7F
    return ~(y - 7)


# ---- chains: identical results, in place, text -----------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16, np.complex64])
def test_float_chain_is_bit_identical(dtype):
    rng = np.random.default_rng(0)
    f = chain if np.dtype(dtype).kind != "c" else (lambda x: (x * 1.5 + 0.5) * x - x)
    x = jnp.asarray(_values(rng, (257,), dtype))
    ex, got, want = run_both(f, x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    # half precision: only - / and negation run in place (NumPy's half + and * keep the
    # other NaN of two than the float32 path)
    assert ex.in_place >= (2 if np.dtype(dtype).itemsize == 2 else 3)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.uint32])
def test_integer_chain_is_bit_identical(dtype):
    rng = np.random.default_rng(1)
    x = jnp.asarray(_values(rng, (5, 9), dtype))   # extremes: wrap-around overflow
    ex, got, want = run_both(int_chain, x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    assert ex.in_place >= 5


def test_bool_chain_is_bit_identical():
    rng = np.random.default_rng(2)
    a, b = (jnp.asarray(_values(rng, (31,), np.bool_)) for _ in range(2))
    ex, got, want = run_both(lambda a, b: ~((a & b) | (a ^ b)) & a, a, b)
    assert_same_bits(got[0], want[0])
    assert ex.in_place >= 2


def test_text_marks_in_place_equations():
    x = jnp.ones(1000)
    text = jaxlite.jit(chain).lower(x).compile().as_text()
    assert text.count("in place") == 10       # nine ufuncs and the kernel's final copy
    assert "out=v" in text
    assert "temporaries peak 0 bytes" in text
    # the first operation reads the argument: it allocates (arguments are never written)
    first = next(line for line in text.splitlines() if "# mul" in line)
    assert "in place" not in first


def test_jitted_chain_matches_reference_and_leaves_argument():
    rng = np.random.default_rng(3)
    host = _values(rng, (1000,), np.float32)
    x = jnp.asarray(host)
    out = jaxlite.jit(chain)(x)
    closed = jaxlite.make_jaxpr(chain)(x)
    token = fp_ignore_begin()
    try:
        (want,) = eval_jaxpr_impl(closed.jaxpr, closed.consts, host.copy())
    finally:
        fp_ignore_end(token)
    assert_same_bits(out, want)
    assert_same_bits(x, host)
    assert not np.shares_memory(np.asarray(out), np.asarray(x))


# ---- what must not run in place -----------------------------------------------------

def test_arguments_and_constants_are_never_written():
    c = np.arange(6, dtype=np.float32)

    def f(x):
        return jnp.sin(x) + jnp.exp(c) * x, -x, x + c

    x = jnp.asarray(np.linspace(-1, 1, 6, dtype=np.float32))
    ex, got, want = run_both(f, x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    np.testing.assert_array_equal(c, np.arange(6, dtype=np.float32))


def test_views_of_a_buffer_keep_their_values():
    # y is viewed by reshape/rev/slice/transpose before it dies in sin: it must not be
    # overwritten while those views are alive
    def f(x):
        y = jnp.exp(x)
        r = lax.reshape(y, (12,))
        v = lax.rev(y, (0,))
        s = lax.slice(y, (0, 1), (2, 4))
        t = lax.transpose(y, (1, 0))
        z = jnp.sin(y)
        return r * 2.0, v + 1.0, s, t, z

    x = jnp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    ex, got, want = run_both(f, x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    assert "in place into" not in ex.as_text().split("# sin")[0].splitlines()[-1]


def test_program_outputs_are_not_overwritten():
    def f(x):
        y = jnp.exp(x)
        z = jnp.sin(y)          # y dies here but is an output
        return y, z, z * 2.0

    x = jnp.asarray(np.linspace(-1, 1, 9, dtype=np.float32))
    ex, got, want = run_both(f, x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    assert not np.shares_memory(got[0], got[1])


def test_no_reuse_across_a_dtype_change_or_a_shape_change():
    def f(x):
        y = jnp.exp(x)
        b = y > 1.0                              # bool result from a float buffer
        s = jnp.sum(y, axis=0)                   # smaller result
        h = (y * 2.0).astype(jnp.float16) + jnp.float16(1)
        return b, s, h

    x = jnp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    ex, got, want = run_both(f, x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)


def test_half_precision_transcendentals_do_not_run_in_place():
    # NumPy's own float16 exp/sin differ from float32-then-round: the implementation's
    # upcast path must run
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)    # all float16 values
    x = jnp.asarray(every)
    ex, got, want = run_both(lambda x: (jnp.sin(-x), jnp.cos(x * 1.5), jnp.exp(x * 0.5)), x)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    text = ex.as_text()
    for op in ("exp", "sin", "cos"):
        line = next(l for l in text.splitlines() if f"# {op}" in l)
        assert "in place" not in line


def test_inplace_ufuncs_match_half_upcast_path():
    """Every primitive whose in-place fact allows half precision: NumPy's half loop gives
    the same bits as the float32 computation rounded (what the implementation does)."""
    from jaxlite.core.primitive import primitives
    rows = [(p, p.inplace) for p in primitives().values()
            if p.inplace is not None and p.inplace.ufunc is not None and p.inplace.half]
    assert rows
    rng = np.random.default_rng(5)
    for dt in (np.dtype(np.float16), BF16):
        x = _values(rng, (4099,), dt)
        y = _values(rng, (4099,), dt)
        token = fp_ignore_begin()
        try:
            for p, (ufunc, kinds, half_ok) in rows:
                ops = (x, y)[:ufunc.nin]
                want = np.asarray(p.impl(*ops)).astype(dt)
                buf = x.copy()
                got = ufunc(buf, *ops[1:], out=buf)
                assert got is buf
                assert_same_bits(buf, want)
        finally:
            fp_ignore_end(token)


# ---- random elementwise programs -------------------------------------------------------

_FLOAT_OPS = [("add", 2), ("sub", 2), ("mul", 2), ("div", 2), ("neg", 1), ("exp", 1),
              ("sin", 1), ("cos", 1), ("tanh", 1), ("sqrt", 1), ("abs", 1), ("max", 2),
              ("min", 2), ("log1p", 1), ("square", 1), ("floor", 1), ("rev", 1),
              ("reshape", 1), ("integer_pow", 1), ("select", 2)]
_INT_OPS = [("add", 2), ("sub", 2), ("mul", 2), ("neg", 1), ("bitwise_and", 2),
            ("bitwise_or", 2), ("bitwise_xor", 2), ("bitwise_not", 1), ("max", 2),
            ("min", 2), ("div", 2), ("rem", 2), ("rev", 1), ("reshape", 1), ("select", 2),
            ("square", 1)]
_BOOL_OPS = [("bitwise_and", 2), ("bitwise_or", 2), ("bitwise_xor", 2),
             ("bitwise_not", 1), ("max", 2), ("min", 2), ("rev", 1), ("reshape", 1)]


def _apply(name, ops):
    if name == "rev":
        return lax.rev(ops[0], (0,))
    if name == "reshape":
        a = ops[0]
        return lax.reshape(lax.reshape(a, (a.size,)), a.shape)
    if name == "integer_pow":
        return lax.integer_pow(ops[0], 2)
    if name == "select":
        return lax.select_n(ops[0] > ops[1], ops[0], ops[1])
    return getattr(lax, name)(*ops)


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16, BF16, np.int32,
                                  np.uint8, np.int16, np.bool_]))
    dtype = np.dtype(dtype)
    table = _BOOL_OPS if dtype == np.bool_ else (
        _INT_OPS if dtype.kind in "iu" else _FLOAT_OPS)
    n_in = draw(st.integers(1, 3))
    steps = []
    for k in range(draw(st.integers(2, 12))):
        name, arity = draw(st.sampled_from(table))
        picks = [draw(st.integers(0, n_in + k - 1)) for _ in range(arity)]
        steps.append((name, picks))
    n_out = draw(st.integers(1, 3))
    outs = [draw(st.integers(0, n_in + len(steps) - 1)) for _ in range(n_out)]
    shape = draw(st.sampled_from([(7,), (3, 4), (1,)]))
    seed = draw(st.integers(0, 2 ** 16))
    return dtype, n_in, steps, outs, shape, seed


def test_half_nan_plus_negated_nan_keeps_the_first_operand():
    # NumPy's float16 and bfloat16 add/mul loops return the second NaN of two, XLA (and the
    # implementations' float32 path) the first: in place they gave -NaN for x + -x
    for dt in (np.float16, BF16):
        x = np.array([np.nan, 1.0, -np.inf], dt)
        for f in (lambda a: lax.add(a, lax.neg(a)), lambda a: lax.mul(a, lax.neg(a))):
            ex, got, want = run_both(f, jnp.asarray(x))
            assert_same_bits(got[0], want[0])
            assert_same_bits(jaxlite.jit(f)(x), f(x.astype(np.float32)).astype(dt))


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_elementwise_programs_match_reference(prog):
    dtype, n_in, steps, outs, shape, seed = prog

    def f(*xs):
        pool = list(xs)
        for name, picks in steps:
            pool.append(_apply(name, [pool[i] for i in picks]))
        return tuple(pool[i] for i in outs)

    rng = np.random.default_rng(seed)
    args = [jnp.asarray(_values(rng, shape, dtype)) for _ in range(n_in)]
    hosts = [np.asarray(a).copy() for a in args]
    ex, got, want = run_both(f, *args)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    # and the whole jit pipeline (fusion, kernels expanded, reuse) gives the same bits
    res = jaxlite.jit(f)(*args)
    for r, w, i in zip(res, want, outs):
        assert_same_bits(r, w)
        if i >= n_in and steps[i - n_in][0] not in ("rev", "reshape"):
            # a computed result (not an argument or a view of one, which arrays being
            # immutable may share) has its own memory
            for a in args:
                assert not np.shares_memory(np.asarray(r), np.asarray(a))
    for a, h in zip(args, hosts):
        assert_same_bits(a, h)


# ---- memory ------------------------------------------------------------------------

@pytest.fixture
def interpreter():
    with jaxlite.config._override("jaxlite_backend", "interpreter"):
        yield


@pytest.fixture
def unchunked(monkeypatch):
    # whole-array evaluation of every kernel (the interpreter runs kernels of at least
    # CHUNK_MIN elements in chunks: tests/test_interpreter_chunks.py)
    from jaxlite.backends import interpreter as interp_mod
    monkeypatch.setattr(interp_mod, "CHUNK_MIN", 1 << 40)


def test_jitted_chain_peak_is_input_plus_output(interpreter, no_gc, unchunked):
    x = jnp.asarray(np.linspace(-3, 3, 1_000_000, dtype=np.float32))
    compiled = jaxlite.jit(chain).lower(x).compile()
    assert compiled.memory_analysis()["temp_size_in_bytes"] == 0
    compiled(x).block_until_ready()
    base = DEV.memory_stats()["bytes_in_use"]          # the input is live already
    DEV.reset_peak_memory()
    out = compiled(x)
    peak = DEV.memory_stats()["peak_bytes_in_use"]
    assert peak - base == out.nbytes == x.nbytes       # input + output, no temporary
    del out


def test_jitted_chain_host_allocations_are_one_buffer(interpreter, no_gc, unchunked):
    # the host memory really allocated during a call (NumPy reports its buffers to
    # tracemalloc), not only what the accounting claims: the output and no temporary
    x = jnp.asarray(np.linspace(-3, 3, 1_000_000, dtype=np.float32))
    f = jaxlite.jit(chain)
    f(x).block_until_ready()
    _buffer.clear_buffer_pool()                        # no free buffer to recycle
    out, peak = host_peak_of_call(f, x)
    assert x.nbytes <= peak <= x.nbytes + 64 * 1024
    del out
    out, peak = host_peak_of_call(f, x)               # the output's buffer, recycled
    assert peak < 64 * 1024


def test_native_chain_allocates_no_host_memory_once_its_output_is_recycled(native, no_gc):
    # native: the first call allocates its output; once that output is dropped, the next
    # call writes into the same buffer (the pool) and allocates nothing of its size
    f = jaxlite.jit(chain)
    host = np.linspace(-3, 3, 1_000_000, dtype=np.float32)
    x = jnp.asarray(host)
    f(x).block_until_ready()
    out, peak = host_peak_of_call(f, x)
    assert peak < 64 * 1024
    with jaxlite.config._override("jaxlite_backend", "interpreter"):
        want = jaxlite.jit(chain)(x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=2e-6, atol=1e-6)


def test_temp_bytes_counts_a_buffer_once_when_reused():
    # two live buffers at most: exp(x) and sin(x), then a * b and + 1.0 in place (without
    # reuse a third buffer, a * b, would be live beside them)
    def f(x):
        a = jnp.exp(x)
        b = jnp.sin(x)
        return jnp.sum((a * b) + 1.0)

    x = jnp.ones(1000)
    ex = InterpretedExecutable(jaxlite.make_jaxpr(f)(x), "f")
    assert ex.in_place >= 2
    # temporaries + the 4-byte output the runtime charges beside them = the true peak
    assert ex.temp_bytes + 4 == 2 * 4000


# ---- the recycling buffer pool (runtime/buffer.py) and native outputs -----------------------

from jaxlite.runtime import buffer as _buffer  # noqa: E402
from jaxlite.runtime.buffer import BufferPool  # noqa: E402

POOL_N = 1 << 18     # 1 MiB of float32, above the pool's minimum size


@pytest.fixture
def native():
    with jaxlite.config._override("jaxlite_backend", "cpu"), \
            jaxlite.config._override("jaxlite_tiered", False):
        yield


def _pool_fn():
    # free buffers of the same size left by earlier tests (a chunked kernel's temporaries
    # are 1 MiB too) would be handed out first: start from an empty pool
    _buffer.clear_buffer_pool()
    return jaxlite.jit(lambda a: a * 2.0 + 1.0)


def test_pool_recycles_a_free_output_buffer(native, no_gc):
    f = _pool_fn()
    x = jnp.asarray(np.linspace(-1, 1, POOL_N, dtype=np.float32))
    want = np.linspace(-1, 1, POOL_N, dtype=np.float32) * 2 + 1
    y = f(x)
    p = y.unsafe_buffer_pointer()
    del y                                   # nothing references the output any more
    hits = _buffer.POOL.hits
    y2 = f(x)
    assert y2.unsafe_buffer_pointer() == p and _buffer.POOL.hits == hits + 1
    np.testing.assert_array_equal(np.asarray(y2), want)


@pytest.mark.parametrize("holder", ["array", "numpy_view", "numpy_slice", "memoryview"])
def test_pool_never_reuses_a_buffer_somebody_holds(native, holder, no_gc):
    f = _pool_fn()
    x = jnp.asarray(np.linspace(-1, 1, POOL_N, dtype=np.float32))
    want = np.linspace(-1, 1, POOL_N, dtype=np.float32) * 2 + 1
    y = f(x)
    p = y.unsafe_buffer_pointer()
    kept = {"array": lambda: y, "numpy_view": lambda: np.asarray(y),
            "numpy_slice": lambda: np.asarray(y)[::3],
            "memoryview": lambda: memoryview(np.asarray(y))}[holder]()
    del y
    outs = [f(x) for _ in range(3)]
    assert all(o.unsafe_buffer_pointer() != p for o in outs)
    np.testing.assert_array_equal(np.asarray(kept)[:3] if holder != "numpy_slice" else
                                  kept[:3], want[:9:3] if holder == "numpy_slice" else
                                  want[:3])
    np.testing.assert_array_equal(np.asarray(kept), want[::3] if holder == "numpy_slice"
                                  else want)


def test_pool_bytes_are_not_in_use_and_clear_releases_them(native, no_gc):
    f = _pool_fn()
    x = jnp.asarray(np.ones(POOL_N, np.float32))
    _buffer.clear_buffer_pool()
    base = DEV.memory_stats()
    y = f(x).block_until_ready()
    assert DEV.memory_stats()["bytes_in_use"] == base["bytes_in_use"] + y.nbytes
    assert DEV.memory_stats()["pool_bytes"] == base["pool_bytes"]   # y is in use
    del y
    st = DEV.memory_stats()
    assert st["bytes_in_use"] == base["bytes_in_use"]
    assert st["pool_bytes"] == base["pool_bytes"] + POOL_N * 4     # kept free for reuse
    assert _buffer.clear_buffer_pool() >= POOL_N * 4
    assert DEV.memory_stats()["pool_bytes"] == 0


def test_pool_limit_and_minimum_size():
    pool = BufferPool(limit=3 << 20, min_bytes=1 << 16)
    small = pool.empty((10,), np.float32)
    assert pool.stats()["tracked_bytes"] == 0 and small.shape == (10,)
    a = pool.empty((1 << 18,), np.float32)           # 1 MiB, tracked
    b = pool.empty((1 << 19,), np.float32)           # 2 MiB, tracked: 3 MiB in all
    c = pool.empty((1 << 18,), np.float32)           # over the limit, a is live: untracked
    assert pool.stats()["tracked_bytes"] == 3 << 20
    del a
    d = pool.empty((1 << 18,), np.float32)           # a's buffer again
    assert pool.stats() == {"free_bytes": 0, "tracked_bytes": 3 << 20, "limit": 3 << 20,
                            "hits": 1, "misses": 3}
    del b, d
    assert pool.stats()["free_bytes"] == 3 << 20
    e = pool.empty((1 << 20,), np.float32)           # 4 MiB: frees the others, too big
    assert pool.stats()["tracked_bytes"] == 0 and e.nbytes == 4 << 20
    assert c.flags.writeable and e.flags.writeable
    off = BufferPool(limit=0)
    off.empty((1 << 20,), np.float32)
    assert off.stats()["tracked_bytes"] == 0


def test_pool_hands_out_other_shapes_and_dtypes_as_views_of_one_buffer():
    pool = BufferPool(limit=1 << 30, min_bytes=1)
    a = pool.empty((4, 1024), np.float32)
    a[...] = 1
    a.setflags(write=False)                          # as a Buffer leaves it
    p = a.ctypes.data
    del a
    b = pool.empty((2048,), np.int64)
    assert b.ctypes.data == p and b.flags.writeable and b.flags.c_contiguous
    assert b.shape == (2048,) and b.dtype == np.int64
    c = pool.empty((2048,), np.int64)                # b's base is held by b: a new buffer
    assert c.ctypes.data != p


def test_native_outputs_of_a_program_are_not_aliased(native):
    # several outputs and temporaries of one program each get their own buffer
    def f(a):
        b = a * 2.0
        c = jnp.sum(b)
        return b + c, b - c, a + 1.0
    g = jaxlite.jit(f)
    host = (np.arange(POOL_N) % 7 - 2).astype(np.float32)     # sums exactly in float32
    x = jnp.asarray(host)
    s = np.float32(2 * host.sum(dtype=np.float64))
    for _ in range(3):
        outs = g(x)
        ptrs = {o.unsafe_buffer_pointer() for o in outs}
        assert len(ptrs) == 3 and x.unsafe_buffer_pointer() not in ptrs
        np.testing.assert_array_equal(np.asarray(outs[0]), host * 2 + s)
        np.testing.assert_array_equal(np.asarray(outs[1]), host * 2 - s)
        np.testing.assert_array_equal(np.asarray(outs[2]), host + 1)
        np.testing.assert_array_equal(np.asarray(x), host)


def test_native_kernel_writes_into_a_dying_temporary(native, no_gc):
    # softmax: the division reads exp(x - max) at the index it writes: it takes that
    # temporary's buffer, so the program needs the input and one buffer of its size
    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        return e / jnp.sum(e, axis=1, keepdims=True)
    host = np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32)
    x = jnp.asarray(host)
    compiled = jaxlite.jit(softmax).lower(x).compile()
    ex = compiled._program.executable
    assert "in place: v" in compiled.as_text()
    assert ex.temp_bytes == 2 * 256 * 4        # the row max and sum, not exp(x - max)
    y = compiled(x)
    del y
    base = DEV.memory_stats()["bytes_in_use"]
    DEV.reset_peak_memory()
    y = compiled(x)
    assert DEV.memory_stats()["peak_bytes_in_use"] - base == y.nbytes + ex.temp_bytes
    e = np.exp(host - host.max(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(y), e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(x), host)


def test_native_in_place_never_writes_a_temporary_still_read_later(native):
    # e is read by the kernel computing d (and its max) and again by the last kernel: d
    # must not be written into e's buffer (the last kernel may write into either)
    def f(x):
        e = jnp.exp(x * 0.5)
        d = e / jnp.sum(e)
        return d / jnp.max(d) * e
    host = np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64)
    compiled = jaxlite.jit(f).lower(jnp.asarray(host)).compile()
    assert compiled.as_text().count("native kernel fusion_") >= 3
    y = compiled(jnp.asarray(host))
    e = np.exp(host * np.float32(0.5))
    d = e / e.sum(dtype=np.float32)
    np.testing.assert_allclose(np.asarray(y), d / d.max() * e, rtol=1e-5)


# ---- views: transposes, reshapes, slices are not copied -------------------------------------

VIEW_CASES = [
    ("transpose", lambda a: a.T),
    ("reshape", lambda a: a.reshape(8, 3, 4)),
    ("slice", lambda a: a[1:5, ::3]),
    ("rev", lambda a: a[::-1]),
    ("squeeze", lambda a: a[None].squeeze(0)),
    ("broadcast", lambda a: jnp.broadcast_to(a, (2, 12, 8))),
]


@pytest.mark.parametrize("name,f", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_view_equations_return_views(backend, name, f):
    from jaxlite.backends.base import get_backend
    host = np.arange(96, dtype=np.float32).reshape(12, 8)
    closed = jaxlite.make_jaxpr(f)(host)
    with jaxlite.config._override("jaxlite_tiered", False):
        ex = get_backend(backend)(closed, "f")
    out = ex.run([host])[0]
    np.testing.assert_array_equal(out, np.asarray(f(host)))
    assert np.shares_memory(out, host)            # the program computed a view, no copy
    assert "a view of its operand" in ex.as_text() and "no copy" in ex.as_text()
    # a jitted result that views its argument is copied as it becomes an Array
    x = jnp.asarray(host)
    y = jaxlite.jit(f)(x)
    assert not np.shares_memory(np.asarray(y), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(f(host)))


@pytest.mark.parametrize("case", ["transpose2d", "transpose3d", "broadcast"])
def test_native_kernel_reads_a_transposed_view_without_copying(native, case):
    rng = np.random.default_rng(7)
    if case == "transpose3d":
        host = rng.standard_normal((6, 40, 30)).astype(np.float32)
        f = lambda a: jnp.transpose(a, (2, 0, 1)) * 2.0 + 1.0          # noqa: E731
    elif case == "broadcast":
        host = rng.standard_normal((64, 48)).astype(np.float32)
        f = lambda a: jnp.broadcast_to(a[:1], (64, 48)).T * 3.0       # noqa: E731
    else:
        host = rng.standard_normal((64, 48)).astype(np.float32)
        f = lambda a: a.T * 2.0 - 1.0                                  # noqa: E731
    x = jnp.asarray(host)
    compiled = jaxlite.jit(f).lower(x).compile()
    ex = compiled._program.executable
    assert "read through strides (no copy)" in compiled.as_text()
    seen = []
    nk = ex.kernels[0]
    fn = nk._fn

    def spy(*a):
        seen.extend(a)
        return fn(*a)
    nk._fn = spy
    try:
        y = compiled(x)
    finally:
        nk._fn = fn
    assert any(np.shares_memory(a, np.asarray(x)) for a in seen)   # read in place
    np.testing.assert_allclose(np.asarray(y), np.asarray(f(host)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_interpreter_large_fresh_results_come_from_the_pool(dtype):
    # the first equation of each branch has no dying operand: a pool buffer; values must
    # be bit-identical to the reference evaluator and the buffers recycled between runs
    n = (1 << 16) + 3         # >= 256 KiB at 4 bytes (float64 becomes float32, x64 off)
    host = _values(np.random.default_rng(5), (n,), dtype)

    def f(x):
        a = x * x
        b = x - x * x
        return a + b, x + 1
    x = jnp.asarray(host)
    ex, got, want = run_both(f, x)
    assert "into a pool buffer" in ex.as_text()
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    del got, g
    misses = _buffer.POOL.misses
    with np.errstate(all="ignore"):                     # inf - inf, as run_both allows
        again = ex.run([np.asarray(x)])
    assert _buffer.POOL.misses == misses               # every buffer recycled
    for g, w in zip(again, want):
        assert_same_bits(g, w)


def test_set_buffer_pool_limit_zero_turns_recycling_off(native, no_gc):
    f = _pool_fn()
    x = jnp.asarray(np.ones(POOL_N, np.float32))
    old = _buffer.POOL.limit
    try:
        _buffer.set_buffer_pool_limit(0)
        assert DEV.memory_stats()["pool_bytes"] == 0       # free buffers released at once
        hits, misses = _buffer.POOL.hits, _buffer.POOL.misses
        for _ in range(3):
            f(x).block_until_ready()
        assert (_buffer.POOL.hits, _buffer.POOL.misses) == (hits, misses)
    finally:
        _buffer.set_buffer_pool_limit(old)
    f(x).block_until_ready()
    assert DEV.memory_stats()["pool_bytes"] >= POOL_N * 4   # recycling again


def test_pool_allocates_without_leaving_numpys_huge_page_hint_changed():
    """A pool miss allocates with NumPy's huge-page hint off (slow first touches where the
    kernel compacts memory) and restores the process's setting, whatever it was, also
    when threads allocate at once."""
    import threading
    set_hint = _buffer._set_madvise
    if set_hint is None:
        pytest.skip("this NumPy has no huge-page switch")
    before = set_hint(True)
    try:
        for want in (True, False, True):
            set_hint(want)
            pool = BufferPool(limit=1 << 30, min_bytes=1)
            a = pool.empty((1 << 20,), np.float32)
            assert a.shape == (1 << 20,) and a.dtype == np.float32 and a.flags.writeable
            assert set_hint(want) is want            # unchanged by the allocation
        pool = BufferPool(limit=1 << 30, min_bytes=1)

        def grab():
            for _ in range(50):
                pool.empty((1 << 16,), np.float32)
        threads = [threading.Thread(target=grab) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert set_hint(True) is True
    finally:
        set_hint(before)


def test_kernel_outputs_of_one_value_need_no_copy_and_stay_apart():
    """An expanded fused kernel whose value is both a map output and a reduction operand
    (softmax's exp) names that value once: no copy equation, and the division writes into
    its buffer after the sum has read it; two program outputs of one value are still two
    buffers.  Values bit-identical to the reference evaluator."""
    from jaxlite.compiler import pipeline

    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        return e / jnp.sum(e, axis=1, keepdims=True)

    def twice(x):
        y = jnp.sin(x) * 2.0
        return y, y + 0.0, jnp.sum(y)
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((64, 300)).astype(np.float32))
    for f, n_out in ((softmax, 1), (twice, 3)):
        closed, _ = pipeline.optimize(jaxlite.make_jaxpr(f)(x), fusion=True)
        assert any(e.primitive.name == "kernel" for e in closed.jaxpr.eqns)
        ex = InterpretedExecutable(closed, f.__name__)
        token = fp_ignore_begin()
        try:
            got = ex.run([np.asarray(x)])
            want = eval_jaxpr_impl(jaxlite.make_jaxpr(f)(x).jaxpr, [], np.asarray(x))
        finally:
            fp_ignore_end(token)
        assert len(got) == n_out
        for g, w in zip(got, want):
            assert_same_bits(g, w)
        if f is softmax:
            copies = [ln for ln in ex.as_text().splitlines() if "# copy" in ln]
            assert all("renames" in ln for ln in copies), copies   # nothing copied
            assert "div, in place into" in ex.as_text()
        else:
            assert not np.shares_memory(np.asarray(got[0]), np.asarray(got[1]))
