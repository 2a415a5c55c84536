"""float32 accuracy of the transcendental functions, on every path, beside XLA's.

Every float32 transcendental (exp, exp2, expm1, log, log1p, sin, cos, tan, tanh, sinh,
cosh, the inverse ones, erf, erfc, logistic; jnp.log2/log10 are JAX's compositions) is
swept over its domain (tests/float32_accuracy_table.py says how the inputs are drawn and
what the reference is):

- every path gives the same bits: eager (jax.numpy and jax.lax), the interpreter backend,
  a jitted program before it tiers up, and native kernels (C kernels in
  primitives/_f32math.c and the generated code's backends/cpu/_vecmath.py agree);
- the results are at most 1 ulp from the correctly rounded value, correctly rounded at
  least as often as real JAX's (XLA on CPU) on the same inputs, and the special values
  (infinities, NaN, signed zeros, log of 0 and of negatives, overflow) are JAX's;
- float16/bfloat16 compute in float32 and round, as XLA does.

The fast tier sweeps 200,000 inputs per function; the slow tier (make test-slow) 1.5 million.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as jlax
import jaxlite.nn        # noqa: F401  (attribute paths of the table)
import jaxlite.numpy as jnp
import jaxlite.scipy.special    # noqa: F401
from jaxlite import config
from jaxlite.primitives import _f32

import float32_accuracy_table as sweep

NAMES = list(sweep.FUNCTIONS)
PRIMITIVE = [n for n in NAMES if n not in sweep.COMPOSED]


def _fn(name):
    return sweep.attr(jaxlite, sweep.FUNCTIONS[name][0])


def _same_bits(a, b):
    """Equal bit for bit (any NaN equals any NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    same = (a.view(np.uint8).reshape(a.size, -1) == b.view(np.uint8).reshape(b.size, -1))
    same = same.all(axis=1) | (np.isnan(a) & np.isnan(b)).ravel()
    return bool(same.all()), np.nonzero(~same)[0]


def _program(names):
    fns = [_fn(n) for n in names]
    return lambda *xs: tuple(f(x) for f, x in zip(fns, xs))


def _run_paths(names, xs, tmp_path):
    """{path: [result per name]} for one program computing every name on its inputs."""
    out = {"eager": [np.asarray(_fn(n)(x)) for n, x in zip(names, xs)]}
    out["eager lax"] = [np.asarray(getattr(jlax, sweep.LAX[n])(x)) if n in sweep.LAX
                        else out["eager"][i] for i, (n, x) in enumerate(zip(names, xs))]
    prog = _program(names)
    with config._override("jaxlite_backend", "interpreter"):
        out["interpreter"] = [np.asarray(r) for r in jaxlite.jit(prog)(*xs)]
    with config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", True), \
            config._override("jaxlite_tier_up_calls", 1000):
        out["before tier-up"] = [np.asarray(r) for r in jaxlite.jit(prog)(*xs)]
    with config._override("jax_compilation_cache_dir", str(tmp_path / "cache")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        f = jaxlite.jit(prog)
        text = f.lower(*xs).compile().as_text()
        summary = next(ln for ln in text.splitlines() if ln.startswith("# native CPU"))
        assert "0 interpreter fallback(s)" in summary, summary
        out["native"] = [np.asarray(r) for r in f(*xs)]
    return out


def _native_trig(xs, tmp_path):
    """sin and cos of the arguments in ``xs`` that native kernels reduce themselves
    (abs(x) <= 65536: a kernel seeing a larger one reruns on the reference, so the sweep's
    program above checks those)."""
    trig = ["sin", "cos"]
    with config._override("jax_compilation_cache_dir", str(tmp_path / "cache")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        return [np.asarray(r) for r in jaxlite.jit(_program(trig))(xs, xs)]


def _sweep(n, tmp_path, rjax):
    xs = [sweep.inputs(name, n) for name in NAMES]
    results = _run_paths(NAMES, xs, tmp_path)
    for path, rs in results.items():
        for name, r, x in zip(NAMES, rs, xs):
            assert r.dtype == np.float32 and r.shape == x.shape, (path, name)
            ok, bad = _same_bits(r, results["eager"][NAMES.index(name)])
            assert ok, (f"{name}: {path} differs from eager at x={x[bad[:5]]}: "
                        f"{r[bad[:5]]} vs {results['eager'][NAMES.index(name)][bad[:5]]}")
    for name in ("sin", "cos"):
        x = xs[NAMES.index(name)]
        near = np.abs(x) <= 65536
        assert near.mean() > 0.5
        got = _native_trig(x[near], tmp_path)[("sin", "cos").index(name)]
        ok, bad = _same_bits(got, results["eager"][NAMES.index(name)][near])
        assert ok, (name, x[near][bad[:5]])
    figures = {}
    for name, x, got in zip(NAMES, xs, results["eager"]):
        want = sweep.reference(name, x)
        keep = sweep.normal(x, want)
        ours_all = sweep.figures(got, want)
        ours = sweep.figures(got, want, keep)
        xla = sweep.figures(sweep.xla_results(name, x), want, keep)
        figures[name] = (ours_all, ours, xla)
        if name in sweep.COMPOSED:
            # JAX's composition (log, then a division or a product): its two roundings
            assert ours_all[0] <= max(2, xla[0]), (name, ours_all, xla)
        else:
            u = sweep.ulps(got, want)
            assert ours_all[0] <= 1, (name, x[u > 1][:5], got[u > 1][:5], want[u > 1][:5])
        assert ours[1] >= xla[1], (name, ours, xla)
    return figures


def test_every_path_same_bits_within_one_ulp_and_beside_xla(tmp_path, rjax):
    figures = _sweep(200_000, tmp_path, rjax)
    # the vectorised functions and the C library's are correctly rounded but for rare
    # near-ties (none among these inputs)
    for name in PRIMITIVE:
        assert figures[name][0][1] >= 99.9, (name, figures[name])


@pytest.mark.slow
def test_every_path_big_sweep(tmp_path, rjax):
    figures = _sweep(1_500_000, tmp_path, rjax)
    for name in PRIMITIVE:
        assert figures[name][0][1] >= 99.99, (name, figures[name])


def test_special_values_are_jaxs(rjax, rjnp):
    x = sweep.SPECIAL
    for name in NAMES:
        got = np.asarray(_fn(name)(x))
        want = sweep.xla_results(name, x)
        ref = sweep.reference(name, x)
        # (and not where the result is the smallest normals: XLA's less accurate values
        # there fall below them and are flushed, exp2(-126) is 0)
        with np.errstate(invalid="ignore"):
            keep = sweep.normal(x, ref) & ~((ref != 0) & (np.abs(ref) < 2.0 ** -125))
        # NaN where JAX gives NaN, the same infinity, the same signed zero; both ways
        for a, b in ((got, want), (want, got)):
            cls = keep & (np.isnan(a) | np.isinf(a) | (a == 0))
            ok, bad = _same_bits(a[cls], b[cls])
            assert ok, (name, x[cls][bad], got[cls][bad], want[cls][bad])
        assert sweep.ulps(got, ref).max() <= (2 if name in sweep.COMPOSED else 1), name


def test_subnormals_are_kept_not_flushed():
    # XLA on CPU flushes subnormal arguments and results to zero; jaxlite keeps them
    # (README: known differences): the correctly rounded values
    tiny = np.array([1e-45, -1e-45, 1.1754942e-38, -3e-39], np.float32)
    for name in ("expm1", "log1p", "sin", "tan", "tanh", "sinh", "arcsin", "arctan",
                 "arcsinh", "arctanh", "erf"):
        got = np.asarray(_fn(name)(tiny))
        np.testing.assert_array_equal(got, sweep.reference(name, tiny), err_msg=name)
    np.testing.assert_array_equal(np.asarray(jnp.exp(np.float32(-100.0))),
                                  np.float32(3.783506e-44))
    np.testing.assert_array_equal(np.asarray(jnp.log(np.float32(1e-45))),
                                  np.float32(-103.27893))


def test_tiering_up_keeps_the_bits_of_a_fused_program(tmp_path):
    # the W2 expression, fused into one kernel: the first call (before tier-up), the
    # native kernel afterwards and eager evaluation give the same bits
    def f(x):
        return jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(x)
    x = np.linspace(-3, 3, 200_001, dtype=np.float32)
    eager = np.asarray(f(x))
    with config._override("jax_compilation_cache_dir", str(tmp_path / "cache")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", True), \
            config._override("jaxlite_tier_up_calls", 2):
        g = jaxlite.jit(f)
        first = np.asarray(g(x))
    with config._override("jax_compilation_cache_dir", str(tmp_path / "cache")), \
            config._override("jaxlite_backend", "cpu"), \
            config._override("jaxlite_tiered", False):
        native = np.asarray(jaxlite.jit(f)(x))
    assert eager.tobytes() == first.tobytes() == native.tobytes()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["exp", "log", "log1p", "sin", "tanh", "sinh", "erf",
                                  "arctan"])
def test_half_precision_computes_in_float32_and_rounds(name, dtype, rjax):
    # every half-precision value: the float32 result rounded once more, as XLA computes
    # these functions; jit (the interpreter: native kernels take no half types) gives the
    # same bits.  (XLA expands some others, float16 logistic, expm1, exp2 and the inverse
    # hyperbolic ones, into half-precision steps, each rounded: jaxlite does not.)
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else dtype)
    x = np.arange(2 ** 16, dtype=np.uint16).view(dt)
    got = np.asarray(_fn(name)(x))
    assert got.dtype == dt
    want = sweep.reference(name, x.astype(np.float32))
    with np.errstate(all="ignore"):
        want = want.astype(dt)
    ok, bad = _same_bits(got, want)
    assert ok, (name, x[bad][:5], got[bad][:5], want[bad][:5])
    jitted = np.asarray(jaxlite.jit(_fn(name))(x))
    assert _same_bits(jitted, got)[0]
    xla = np.asarray(rjax.jit(sweep.attr(rjax, sweep.FUNCTIONS[name][0]))(x))
    f32 = x.astype(np.float32)
    keep = sweep.normal(f32, sweep.reference(name, f32)) & ~np.isnan(f32)
    agree = np.mean((got == xla)[keep] | (np.isnan(got) & np.isnan(xla))[keep])
    assert agree >= 0.99, (name, dtype, agree)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_logistic_is_xlas_steps(dtype, rjax):
    # XLA expands half-precision logistic into 1 / (1 + exp(-x)), each step rounded to
    # the operand's type: every value gives JAX's bits (but subnormals, flushed there)
    import ml_dtypes
    dt = np.dtype(np.float16 if dtype == "float16" else ml_dtypes.bfloat16)
    x = np.arange(2 ** 16, dtype=np.uint16).view(dt)
    got = np.asarray(jaxlite.nn.sigmoid(x))
    assert got.dtype == dt
    assert _same_bits(np.asarray(jaxlite.jit(jaxlite.nn.sigmoid)(x)), got)[0]
    want = np.asarray(rjax.jit(rjax.nn.sigmoid)(x))
    f32 = x.astype(np.float32)
    keep = sweep.normal(f32, sweep.reference("logistic", f32)) & sweep.normal(
        got.astype(np.float32), got.astype(np.float32))
    ok, bad = _same_bits(got[keep], want[keep])
    assert ok, (x[keep][bad][:5], got[keep][bad][:5], want[keep][bad][:5])


def test_the_c_kernels_are_built_and_match_vecmath_constants():
    # the native backend's polynomials and the C kernels' are the same numbers
    from jaxlite.backends.cpu import _vecmath
    assert _f32.NATIVE_BITS, "the C extension jaxlite.primitives._f32math is not built"
    from jaxlite.primitives import _f32math
    for k, v in _f32math.CONSTANTS.items():
        assert float(getattr(_vecmath, k)) == v, k


def test_every_instruction_set_gives_the_same_bits():
    # the C loops exist for AVX-512, for AVX2 with FMA and for any CPU (fma() from the C
    # library): the same bits, those of the native backend
    from jaxlite.primitives import _f32math
    names = ["exp", "expm1", "log", "tanh", "logistic", "sin", "cos"]
    xs = {n: sweep.inputs(n, 60_000) for n in names}
    xs["sin"] = xs["sin"][np.abs(xs["sin"]) <= 65536]
    xs["cos"] = xs["cos"][np.abs(xs["cos"]) <= 65536]
    top = _f32math._use_isa(0)
    try:
        for level in range(top + 1):
            _f32math._use_isa(level)
            for n in names:
                out = np.empty_like(xs[n])
                getattr(_f32math, n)(xs[n], out)
                if level == 0:
                    xs[n + " want"] = out
                assert _same_bits(out, xs[n + " want"])[0], (n, level)
    finally:
        _f32math._use_isa(top)
    with pytest.raises(ValueError, match="not in"):
        _f32math._use_isa(top + 1)


def test_kernels_take_any_layout_and_write_out():
    x = np.linspace(-5, 5, 24, dtype=np.float32).reshape(4, 6)
    want = _f32.exp(np.ascontiguousarray(x))
    t = _f32.exp(x.T)                          # a transposed (non-contiguous) view
    np.testing.assert_array_equal(t, want.T)
    out = np.empty((6, 4), np.float32).T       # a non-contiguous out
    assert _f32.exp(x, out=out) is out
    np.testing.assert_array_equal(out, want)
    y = x.copy()
    assert _f32.exp(y, out=y) is y             # in place
    np.testing.assert_array_equal(y, want)
    s = _f32.exp(np.float32(1.0))              # a scalar in, a scalar out (as a ufunc)
    assert type(s) is np.float32 and s == np.float32(2.7182817)
    d = _f32.exp(np.array([1.0]))              # float64: NumPy's own
    assert d.dtype == np.float64 and d[0] == np.exp(1.0)


@pytest.mark.parametrize("n", [(1 << 18) - 1, 1 << 19, (1 << 19) + 1, (1 << 20) + 17])
def test_large_arrays_split_over_cpus_give_the_same_bits(n):
    # the kernels split a large array over the CPUs: every element is computed, and as
    # in small pieces (far sin arguments in one part only included)
    x = np.random.default_rng(n).uniform(-50, 50, n).astype(np.float32)
    x[-1], x[n // 3] = 0.5, 1e30
    for fn in (_f32.exp, _f32.sin, _f32.tan):
        whole = fn(x)
        pieces = np.concatenate([fn(x[i:i + 4096]) for i in range(0, n, 4096)])
        assert whole.tobytes() == pieces.tobytes(), (fn.__name__, n)
        assert whole[-1] == fn(np.float32(0.5))


def test_without_the_c_extension_float64_rounded_once(monkeypatch):
    # an install without a C compiler: NumPy's float64 function rounded to float32 (as
    # accurate; it may differ from a native kernel at a near-tie), same shapes and types
    monkeypatch.setattr(_f32, "_C", None)
    x = sweep.inputs("exp", 30_000)
    for name, np_name in (("exp", "exp"), ("log", "log"), ("sin", "sin"), ("erf", "erf"),
                          ("logistic", "logistic")):
        fn = _f32._function(name, getattr(np, np_name, None) or
                            {"erf": _f32._erf64, "logistic": _f32._logistic64}[name])
        with np.errstate(all="ignore"):     # (callers run implementations under one)
            got = fn(x)
            out = np.empty_like(x)
            assert fn(x, out=out) is out and out.tobytes() == got.tobytes()
        assert got.dtype == np.float32 and got.shape == x.shape
        assert sweep.ulps(got, sweep.reference(name, x)).max() <= 1, name
        s = fn(np.float32(0.5))
        assert type(s) is np.float32
