"""The interpreter runs a large elementwise kernel in chunks over the host's cores
(backends/interpreter.py ``chunkable``, ``_run_chunked``): the values must be bit-for-bit
those of the whole-array evaluation, NumPy's error state must hold in every thread, and the
memory a call allocates must not grow with the kernel beyond its output."""
import warnings

import numpy as np
import pytest
from _host_memory import host_peak_of_call

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.backends import interpreter as interp_mod

MIN = interp_mod.CHUNK_MIN
CHUNK = interp_mod.CHUNK


@pytest.fixture(autouse=True)
def interpreter():
    with jaxlite.config._override("jaxlite_backend", "interpreter"):
        yield


def _text(f, *args):
    return jaxlite.jit(f).lower(*args).compile().as_text()


def _run(f, args, chunk_min):
    """``f``'s results (a list of NumPy arrays) with kernels of at least ``chunk_min``
    elements chunked, and whether the program text chunks one."""
    old = interp_mod.CHUNK_MIN
    interp_mod.CHUNK_MIN = chunk_min
    try:
        g = jaxlite.jit(f)       # a new jit: compiled under this threshold
        out = jaxlite.tree_util.tree_leaves(g(*args))
        chunked = "_run_chunked" in g.lower(*args).compile().as_text()
    finally:
        interp_mod.CHUNK_MIN = old
    return [np.asarray(o) for o in out], chunked


def _chunked_equals_whole(f, args):
    """``f(*args)`` with kernels chunked, after checking that the program chunks one and
    that every result equals the whole-array evaluation's bit for bit."""
    whole, chunked_w = _run(f, args, 1 << 40)
    part, chunked_p = _run(f, args, MIN)
    assert not chunked_w and chunked_p
    assert len(whole) == len(part)
    for w, p in zip(whole, part):
        _same_bits(w, p)
    return part


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                          np.ascontiguousarray(b).view(np.uint8))


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 88.7,
                     -88.7, 1.0, -1.0, 0.5])


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 20).astype(dtype)
    flat = x.reshape(-1)
    if np.dtype(dtype).kind == "f":
        # special values spread over the chunks (the last, shorter one too)
        idx = rng.choice(flat.size, size=64, replace=False)
        with np.errstate(over="ignore"):
            flat[idx] = np.resize(SPECIALS, 64).astype(dtype)
        flat[-len(SPECIALS):] = SPECIALS.astype(dtype)
    return x


PROGRAMS = {
    "w2": lambda a, b: jnp.tanh(a) * 0.5 + jnp.exp(-a * a) * jnp.sin(a),
    "two_outputs": lambda a, b: (jnp.log1p(jnp.abs(a)) / (b + 2.0),
                                 jnp.where(a > b, a, b) ** 2),
    "trig": lambda a, b: jnp.cos(a) - jnp.arctan2(a, b) + jnp.sqrt(jnp.abs(b)),
    "casts": lambda a, b: (a.astype(jnp.float32) * 3).astype(jnp.int32) + 1,
    "compare": lambda a, b: (a > 0) & (b < a * 2),
    "minmax": lambda a, b: jnp.maximum(a, 0.0) * b - jnp.minimum(jnp.expm1(b), 5.0) / 3,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("shape", [(MIN,), (MIN + 1,), (3 * CHUNK + 7, 2),
                                   (MIN // 301 + 50, 301), (3, MIN // 3 + 1)])
def test_chunked_equals_whole_array_bit_for_bit(name, shape):
    f = PROGRAMS[name]
    a, b = _data(shape, np.float32, 0), _data(shape, np.float32, 1)
    for p in _chunked_equals_whole(f, (a, b)):
        assert p.shape == shape


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8, np.float16])
def test_chunked_other_dtypes(dtype):
    shape = (MIN + 5,)
    a = _data(shape, np.float64, 2)
    if np.dtype(dtype).kind != "f":
        a = np.nan_to_num(a, posinf=7, neginf=-7)
    with np.errstate(all="ignore"):
        a = a.astype(dtype)

    def f(x):
        return x * 3 + 1, -x
    with jaxlite.config._override("jax_enable_x64", True):
        whole, _ = _run(f, (a,), 1 << 40)
        part, chunked = _run(f, (a,), MIN)
    assert chunked
    for w, p in zip(whole, part):
        _same_bits(w, p)
    # and against NumPy itself (integer wrap-around included)
    with np.errstate(all="ignore"):
        want = (a * dtype(3) + dtype(1)).astype(dtype)
    _same_bits(part[0], want)


def test_scalar_operands_pass_whole():
    a = _data((MIN + 3,), np.float32, 3)
    s = jnp.float32(2.5)        # a rank-0 argument beside the literal
    f = lambda x, y: x * y + 1.0     # noqa: E731
    whole, _ = _run(f, (a, s), 1 << 40)
    part, chunked = _run(f, (a, s), MIN)
    assert chunked
    _same_bits(whole[0], part[0])
    with np.errstate(all="ignore"):
        want = (a * np.float32(2.5) + np.float32(1.0)).astype(np.float32)
    _same_bits(part[0], want)


ROWS = {
    # reductions over the other axes, broadcast and transposed reads, keepdims
    "softmax": lambda a, b: jaxlite.nn.softmax(a, axis=-1),
    "row_sum": lambda a, b: jnp.sum(jnp.exp(a * 0.01) * b, axis=1),
    "row_max_keepdims": lambda a, b: (jnp.max(a, axis=1, keepdims=True),
                                      jnp.min(b * 2, axis=-1)),
    "bias_relu": lambda a, b: jnp.maximum(a + b[0], 0.0) * 1.5,
    "column_bias": lambda a, b: jnp.tanh(a - b[:, :1]),
    "prod_mean": lambda a, b: (jnp.prod(jnp.tanh(a), axis=1), jnp.mean(b, axis=-1)),
}


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("shape", [(2 * MIN // 4096 + 3, 4096), (MIN // 100 + 1, 100)])
def test_chunked_rows_equal_whole_array_bit_for_bit(name, shape):
    f = ROWS[name]
    a, b = _data(shape, np.float32, 5), _data(shape, np.float32, 6)
    _chunked_equals_whole(f, (a, b))


def test_chunked_3d_reduction_over_a_middle_axis():
    a = _data((MIN // 512 + 9, 32, 16), np.float32, 7)
    f = lambda x: (jnp.sum(x * x, axis=1), jnp.max(x, axis=(1, 2)))   # noqa: E731
    _chunked_equals_whole(f, (a,))


def test_chunked_transposed_reads():
    # an input read along its second axis for the kernel's leading one, and one whose
    # trailing axes are swapped
    a = _data((64, MIN // 64), np.float32, 8)
    b = _data((MIN // 64, 64), np.float32, 9)
    _chunked_equals_whole(lambda x, y: jnp.sin(x) * jnp.cos(y.T) + 1, (a, b))
    c = _data((MIN // 64 + 3, 8, 8), np.float32, 10)
    d = _data((MIN // 64 + 3, 8, 8), np.float32, 11)
    _chunked_equals_whole(lambda x, y: jnp.tanh(x - jnp.swapaxes(y, 1, 2)), (c, d))


def test_second_chunked_kernel_writes_into_a_donated_operand():
    # the plan of which operand a kernel's output may take over is the program's own,
    # for every chunked kernel of it (not the last generated chunk body's)
    rows, cols = MIN // 1024 + 5, 1024
    x = jnp.asarray(_data((rows, cols), np.float32, 12))
    y_host = _data((rows, cols), np.float32, 13)
    f = jaxlite.jit(lambda x, y: jnp.exp(y * 0.01) - jnp.max(x, axis=1, keepdims=True),
                    donate_argnums=1)
    text = f.lower(x, jnp.asarray(y_host)).compile().as_text()
    assert text.count("_run_chunked(") == 2        # two chunked kernels
    y = jnp.asarray(y_host)
    p = y.unsafe_buffer_pointer()
    out = f(x, y)
    assert y.is_deleted() and out.unsafe_buffer_pointer() == p
    with np.errstate(all="ignore"):
        want = np.exp(y_host * np.float32(0.01)) - np.asarray(x).max(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def test_what_is_not_chunked():
    big = jnp.ones((1024, 1024), jnp.float32)
    # a reduction over the leading axis (every chunk would hold part of each result), a
    # kernel below the threshold, a leading axis of 1: whole arrays
    assert "_run_chunked" not in _text(lambda x: jnp.sum(jnp.exp(x), axis=0), big)
    assert "_run_chunked" not in _text(lambda x: jnp.sum(jnp.exp(x)), big)
    small = jnp.ones((MIN - 1,), jnp.float32)
    assert "_run_chunked" not in _text(lambda x: jnp.sin(x) * 2 + 1, small)
    assert "_run_chunked" not in _text(lambda x: jnp.sin(x) * 2 + 1, big.reshape(1, -1))
    assert "_run_chunked" in _text(lambda x: jnp.sin(x) * 2 + 1, big)
    assert "_run_chunked" in _text(lambda x: jnp.sum(jnp.sin(x), axis=1), big)


def test_no_warnings_from_any_thread_and_error_state_kept():
    z = np.full((8 * CHUNK + 1,), 3e38, np.float32)     # overflows in every chunk
    f = jaxlite.jit(lambda x: x * x * 4 - x * x)
    assert "_run_chunked" in f.lower(z).compile().as_text()
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(10):
            r = np.asarray(f(z))
    assert np.geterr() == before
    assert np.isnan(r).all()          # inf - inf, computed without a warning


def test_error_in_a_chunk_propagates(monkeypatch):
    # a failing chunk raises from the call (whichever thread ran it), nothing half-done
    calls = []
    real = interp_mod._run_chunked

    def failing(fn, fn_rem, *rest):
        def bad(*xs):
            calls.append(1)
            if len(calls) == 3:
                raise FloatingPointError("chunk 3")
            return fn(*xs)
        return real(bad, fn_rem, *rest)
    monkeypatch.setattr(interp_mod, "_run_chunked", failing)
    x = _data((6 * CHUNK,), np.float32, 4)
    with pytest.raises(FloatingPointError, match="chunk 3"):
        jaxlite.jit(lambda v: jnp.sin(v) + 1)(x).block_until_ready()


def test_temporaries_do_not_grow_with_the_kernel():
    # whole-array evaluation needs a buffer the size of the kernel per live temporary;
    # in chunks, a few chunk-sized ones per thread, whatever the kernel's size
    from jaxlite.runtime import buffer as _buffer
    f = jaxlite.jit(lambda x: jnp.exp(-x * x) * jnp.sin(x) + jnp.tanh(x) * 0.5)
    extra = []
    for n in (1 << 21, 1 << 23):
        x = jnp.asarray(np.linspace(-3, 3, n, dtype=np.float32))
        f(x).block_until_ready()
        _buffer.clear_buffer_pool()
        out, peak = host_peak_of_call(f, x)
        assert peak >= out.nbytes
        extra.append(peak - out.nbytes)
        del out
    bound = interp_mod._threads() * 5 * CHUNK * 4
    assert extra[0] <= bound and extra[1] <= bound, (extra, bound)
