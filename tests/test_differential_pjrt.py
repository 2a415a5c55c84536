"""The differential harness (tests/test_differential.py) run on the XLA:CPU PJRT platform:
every case of its fixed family of inputs (all dtypes, weak types, 0-d and empty arrays,
size-1 broadcasting, signed zeros, infinities, NaN, extremes, subnormals, out-of-bounds
indices), run by jaxlite with an ``xla_cpu`` device as the default device and compared
with jaxlite on its own ``cpu`` platform (the interpreter: the primitives' NumPy
implementations), twice:

- eager: the case's array operands are placed on the device (``device_put``) and the
  function runs there operation by operation (each primitive lowered alone and compiled by
  the plugin: ``PjrtBackend.execute``); the reference is the same call with the operands
  on jaxlite's cpu device;
- jit: the same call under ``jaxlite.jit`` (the operands its arguments, everything else
  static), compiled whole by the plugin, against ``jit`` on the cpu device with the
  interpreter as jit's backend (the same traced program, run by NumPy).

What must agree: the result's structure, shape, dtype and weak type; where the cpu raises,
the same exception type (the most derived built-in class); the platform's results live on
the xla_cpu device; values bit for bit (NaN positions and the sign of zero included) for
integers, booleans and every float result of exactly rounded operations, and within
``ULPS`` units in the last place for functions that go through a transcendental function
(XLA evaluates exp, log, sin, tanh... with its own polynomials, NumPy with the C library;
both are within a few ulps of the exact value, not bit for bit equal) or a product
followed by an add (XLA:CPU contracts them into a fused multiply-add).

XLA:CPU flushes subnormal inputs and results of float operations to zero (the processor's
FTZ/DAZ modes, set while a program runs); jaxlite's interpreter keeps IEEE arithmetic.  A
difference that disappears when the reference is rerun on inputs with subnormals flushed
and both results are flushed too is of category "subnormal" and accepted everywhere (as in
the harness; ``test_subnormals_are_flushed`` shows it exists).  Every other difference is
fixed in the lowering rules or listed in ``KNOWN_DIFFERENCES`` with its reason; a listed
entry that no longer differs fails too.

``make test`` runs a seeded sample (``FRACTION`` of the cases, plus each known difference's
first case); ``JAXLITE_DIFF_FULL=1`` runs all of them (``make test-slow``).
"""
from __future__ import annotations

import collections
import os
import random as _pyrandom
import warnings
import zlib

import numpy as np
import pytest

import jaxlite
from jaxlite.config import config

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

from test_differential import (  # noqa: E402
    BIGINT_UNSTABLE, L, Case, _builtin_base, _flush, _fnm, _lookup, _tokens, build_cases,
    compare)

FULL = bool(os.environ.get("JAXLITE_DIFF_FULL"))


def _xla():
    return jaxlite.devices("xla_cpu")[0]


def _cpu():
    return jaxlite.devices("cpu")[0]


# ---- running one case on one platform -----------------------------------------------------

def _place(x, dev):
    """``x`` with every NumPy array (lists, tuples and dicts walked) put on ``dev``."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufcV" and \
            not isinstance(x, np.dtype):
        return jaxlite.device_put(x, dev)
    if isinstance(x, list):
        return [_place(e, dev) for e in x]
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_place(e, dev) for e in x)
    if isinstance(x, dict):
        return {k: _place(e, dev) for k, e in x.items()}
    return x


def _leaves(x, out):
    """Appends the jaxlite Arrays of ``x`` (lists, tuples, dicts) to ``out``; returns a
    rebuild function of a list of replacements."""
    if isinstance(x, jaxlite.Array):
        i = len(out)
        out.append(x)
        return lambda vals: vals[i]
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        subs = [_leaves(e, out) for e in x]
        kind = type(x)
        return lambda vals: kind(s(vals) for s in subs)
    if isinstance(x, dict):
        subs = {k: _leaves(e, out) for k, e in x.items()}
        return lambda vals: {k: s(vals) for k, s in subs.items()}
    return lambda vals: x


def _call(case, dev, jit, flush=False):
    """(ok, result or exception) of ``case`` run with ``dev`` the default device and its
    array operands placed there; ``jit``: the call traced by ``jaxlite.jit`` with the
    operands as its arguments.  ``flush``: subnormal operands replaced by zeros."""
    with warnings.catch_warnings(), jaxlite.default_device(dev), \
            config._override("jaxlite_backend", "interpreter"), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            made = case.make(L)
            args, kwargs = made[:2]
            post = made[2] if len(made) > 2 else (lambda r: r)
            if flush:
                args = tuple(_flush(a) for a in args)
            args, kwargs = _place(args, dev), _place(kwargs, dev)
            f = _lookup(L, case.fn)
            if not jit:
                res = post(f(*args, **kwargs))
            else:
                ops = []
                rebuild = _leaves((args, kwargs), ops)

                def g(*vals):
                    a, k = rebuild(list(vals))
                    return post(f(*a, **k))
                res = jaxlite.jit(g)(*ops)
            jaxlite.block_until_ready(res)
            return True, res
        except Exception as e:  # noqa: BLE001 - the exception's type is the result
            return False, e


def _devices(x, out):
    if isinstance(x, jaxlite.Array):
        out |= set(x.devices())
    elif isinstance(x, (list, tuple)):
        for e in x:
            _devices(e, out)
    elif isinstance(x, dict):
        for e in x.values():
            _devices(e, out)
    return out


def _ulps_of(fn, ref):
    """The ulps a float result of ``fn`` may differ by (``ULPS``; complex results at least
    ``COMPLEX_ULPS``)."""
    n = 0
    for pats, u in ULPS.items():
        if any(_fnm(fn, p) for p in pats.split()):
            n = u
            break
    if any(_is_complex(x) for x in _flat(ref)):
        n = max(n, COMPLEX_ULPS)
    return n


def _is_complex(x):
    try:
        return np.dtype(getattr(x, "dtype", np.float32)).kind == "c"
    except TypeError:       # a key array's dtype
        return False


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in _flat(e)]
    if isinstance(x, dict):
        return [y for e in x.values() for y in _flat(e)]
    return [x]


def diff_case(case, jit):
    """Runs ``case`` on the xla_cpu platform and on the cpu: None when they agree, else
    'category: detail'."""
    if case.family == "py-bigint" and case.fn in BIGINT_UNSTABLE:
        return None
    rok, ref = _call(case, _cpu(), jit)
    gok, got = _call(case, _xla(), jit)
    if not rok and not gok:
        rb, gb = _builtin_base(ref), _builtin_base(got)
        if rb != gb:
            return f"exception-type: {type(got).__name__} != cpu {type(ref).__name__}: " \
                   f"{str(got)[:300]}"
        return None
    if not rok:
        return f"accepts: xla_cpu returned, cpu raised {type(ref).__name__}: {str(ref)[:200]}"
    if not gok:
        return f"raises: xla_cpu {type(got).__name__}: {str(got)[:300]}"
    devs = _devices(got, set())
    if devs - {_xla()}:
        return f"device: results on {sorted(map(str, devs))}"
    d = _cmp(got, ref, case)
    if d and _explained_by_flushing(case, jit, got):
        return "subnormal: " + d
    return d


def _cmp(got, ref, case, flush=False):
    d = compare(got, ref, flush=flush, ulps=_ulps_of(case.fn, ref))
    return d.replace("jax", "cpu") if d else d


def _explained_by_flushing(case, jit, got):
    ok, ref = _call(case, _cpu(), jit, flush=True)
    return ok and _cmp(got, ref, case, flush=True) is None


def _category(diff):
    return diff.split(":", 1)[0].split("[", 1)[0].split(".", 1)[0]


# ---- tolerances and known differences ---------------------------------------------------

# Units in the last place a real float result may differ by, per function (space-separated
# fnmatch patterns -> ulps); a function not named here must agree bit for bit.  XLA
# evaluates the transcendental functions with its own polynomials, the interpreter with
# NumPy's (the C library); each is within an ulp or so of the exact value, so the two
# differ by up to 2.  XLA:CPU also contracts a product and a following add into a fused
# multiply-add (one rounding instead of two: its compiler always allows it), which moves a
# result built of several operations by an ulp or two (hypot, var, the nn functions).
_ONE_FUNCTION = " ".join(
    ["numpy." + n for n in (
        "exp exp2 expm1 log log1p log2 log10 sin cos tan sinh cosh tanh arcsin asin arccos "
        "acos arctan atan arctan2 atan2 arcsinh asinh arccosh acosh arctanh atanh cbrt pow "
        "power float_power sinc hypot logaddexp logaddexp2 angle").split()] +
    ["lax." + n for n in (
        "exp exp2 expm1 log log1p sin cos tan sinh cosh tanh asin acos atan atan2 asinh "
        "acosh atanh cbrt rsqrt erf erfc logistic pow cumlogsumexp").split()])
ULPS: dict[str, int] = {
    # XLA's float32 cbrt: up to 9 ulps off (cbrt(1e30) is 1.0000007e10)
    "numpy.cbrt lax.cbrt": 12,
    _ONE_FUNCTION: 2,
    "numpy.var numpy.nanvar numpy.std numpy.nanstd": 2,
    # composites of three transcendental functions: tanh(softplus(x)) * x
    "nn.mish": 4,
    # XLA's digamma series against the interpreter's (asymptotic series after recurrence)
    "lax.digamma": 16,
    # LAPACK's SVD against the jaxlite-written one-sided Jacobi SVD
    "numpy.linalg.svd numpy.linalg.svdvals": 8,
    # the first pattern a function matches counts: this one last
    "nn.*": 2,
}
# Complex results, any function: XLA's complex division (Smith's algorithm), sqrt, exp,
# log, pow and atan2 are formulas of its own, not NumPy's, composed of its real
# approximations; each part may differ by this many ulps (complex pow and atan2: 20).
COMPLEX_ULPS = 24

ULPS_MAGNIFIED = ("XLA's transcendental function differs from NumPy's by an ulp or two "
                  "(ULPS); a cancellation after it magnifies that here")
FLUSHED_TINY = ("XLA:CPU flushes a subnormal intermediate of its {} approximation to zero "
                "(normal inputs near 1.2e-38 included: 0 for erf and asin, 8.9e-16 for "
                "cbrt, mantissa 0.5 for frexp); the interpreter computes NumPy's value")

SIGNED_ZERO_TRIG = ("XLA's complex sin and cos (sin x cosh y + i cos x sinh y) give a zero "
                    "imaginary part the other sign from NumPy's at some arguments")
CBRT64 = ("XLA's float64 cbrt is its own approximation, up to 66 ulps off for large "
          "arguments (cbrt(1e300) is 9.999999999999872e+99); the interpreter's is the C "
          "library's")

# (function patterns, family patterns, category pattern) -> reason, as in
# test_differential.py; a family under jit is prefixed "jit:" and under x64 "x64:" (in
# that order), so "*f32-tiny" names a family in both modes.  Every entry is a deliberate
# difference of the platform (XLA's own numerics), not a defect: a defect is fixed in the
# lowering rules.  The category "subnormal" (XLA:CPU flushes subnormal operands and
# results to zero; the interpreter keeps IEEE arithmetic) is accepted everywhere.
KNOWN_DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("numpy.arcsin numpy.asin lax.asin", "*f32-tiny", "value"): FLUSHED_TINY.format("asin"),
    ("numpy.cbrt lax.cbrt", "*f32-tiny *f64-tiny", "value"): FLUSHED_TINY.format("cbrt"),
    ("numpy.frexp", "*f32-tiny *f64-tiny", "value"): FLUSHED_TINY.format("frexp"),
    ("lax.lgamma", "*bf16 f32 jit:f32 *f32-range *f32-2d *f32-0d py-float *x64:f64", "value"):
        "XLA's lgamma (a Lanczos approximation) is off by ~5e-7 absolute near its zeros "
        "(lgamma(1) is 4.8e-7, not 0) and by up to 50 ulps elsewhere in float32; the "
        "interpreter's is the C library's",
    ("nn.gelu", "*i8 *i32 *py-negint *f32-range *f32-2d *x64:i64 *x64:f64", "value"):
        ULPS_MAGNIFIED + " (1 + tanh(...) near -1 for x near -4)",
    ("nn.log1mexp", "*x64:f64 *x64:i64", "value"): ULPS_MAGNIFIED +
        " (log(-expm1(x)) for x near 0)",
    ("numpy.logaddexp2", "*f16 *i8 *i16 *i32 jit:f32 *x64:f64 *x64:i64", "value"):
        ULPS_MAGNIFIED + " (at equal arguments the result is exact: 0 against a residue)",
    ("numpy.cbrt lax.cbrt", "*x64:f64", "value"): CBRT64,
    ("numpy.cosh numpy.sinh lax.cosh lax.sinh", "*x64:f64", "value"):
        "XLA's float64 sinh and cosh of a large argument are exp(x) / 2 composed of its "
        "own exp: 10 ulps from the C library's at x = 100",
    ("numpy.sin numpy.cos lax.sin lax.cos", "*c64 *x64:c128", "signed-zero"):
        SIGNED_ZERO_TRIG,
    ("numpy.cos lax.cos", "*py-complex", "signed-zero"): SIGNED_ZERO_TRIG,
    ("numpy.arctan2 numpy.atan2 lax.atan2", "*c64 *x64:c128", "value"):
        "the complex atan2 is a composition of complex operations whose zeros carry the "
        "rounding residue of XLA's own log and atan2 (1.2e-7 or -1.4e-16 for 0.0), as "
        "against JAX (tests/test_differential.py)",
    ("numpy.logaddexp", "*x64:c128", "value"): ULPS_MAGNIFIED +
        " (XLA's complex exp and log formulas, float64: 25 ulps)",
    ("lax.digamma", "*f32-range *f32-2d", "value"): ULPS_MAGNIFIED +
        " (digamma near its zero at 1.4616: 0.03649 is 29 ulps off)",
    ("numpy.linalg.svd numpy.linalg.svdvals", "*t-ok *t-vals", "value"):
        "the platform's SVD and LAPACK's agree to a few ulps of the matrix's norm, not of "
        "each element: a zero singular value is 6.7e-8 in one and 3.9e-7 in the other, and "
        "the singular vectors follow",
}


def _known(case, key, diff):
    cat = _category(diff)
    for entry in KNOWN_DIFFERENCES:
        for f, k in _tokens(entry):
            if _fnm(case.fn, f) and _fnm(key, k) and _fnm(cat, entry[2]):
                return entry, (f, k)
    return None


def select(cases, fraction, seed):
    """A seeded sample of ``cases`` plus each known difference's first case (all of them
    under ``JAXLITE_DIFF_FULL``)."""
    if FULL:
        return list(cases)
    fraction = float(os.environ.get("JAXLITE_DIFF_FRACTION", fraction))
    rng = _pyrandom.Random(seed)
    forced = set()
    for entry in KNOWN_DIFFERENCES:
        for f, k in _tokens(entry):
            for i, c in enumerate(cases):
                if _fnm(c.fn, f) and (_fnm(c.key, k) or _fnm("jit:" + c.key, k)):
                    forced.add(i)
                    break
    return [c for i, c in enumerate(cases) if rng.random() < fraction or i in forced]


def run_group(cases):
    """(cases run, unexpected differences, stale (entry, token) pairs)."""
    unexpected, seen, differed, n = [], set(), set(), 0
    for case in cases:
        if _lookup(L, case.fn) is None:
            continue
        for jit in (False, True):
            key = ("jit:" if jit else "") + case.key
            n += 1
            d = diff_case(case, jit)
            for entry in KNOWN_DIFFERENCES:
                for f, k in _tokens(entry):
                    if _fnm(case.fn, f) and _fnm(key, k):
                        seen.add((entry, (f, k)))
            if d is None or _category(d) == "subnormal":
                continue
            k = _known(case, key, d)
            if k:
                differed.add(k)
            else:
                unexpected.append(f"{case.fn} [{key}] {d}")
    return n, unexpected, sorted(seen - differed)


def _report(unexpected, stale):
    lines = []
    if unexpected:
        lines.append(f"{len(unexpected)} difference(s) from the cpu not in KNOWN_DIFFERENCES:")
        lines += ["  " + u for u in unexpected]
    if stale:
        lines.append("KNOWN_DIFFERENCES entries that no longer differ (delete them):")
        lines += [f"  {key[:3]}: {tok[0]} [{tok[1]}]" for key, tok in stale]
    return "\n".join(lines)


FRACTION = {"numpy": 0.02, "lax": 0.02, "nn": 0.05, "random": 0.5, "top": 0.5}
MODULES = list(FRACTION)
COUNTS: dict = {}


@pytest.fixture(scope="module")
def x32_cases():
    return build_cases(False)


@pytest.mark.parametrize("module", MODULES)
def test_differential_pjrt(module, x32_cases):
    cases = [c for c in x32_cases if c.fn.startswith(module + ".")]
    n, unexpected, stale = run_group(select(cases, FRACTION[module],
                                            seed=zlib.crc32(b"pjrt:" + module.encode())))
    COUNTS[module] = n
    assert not unexpected and not stale, _report(unexpected, stale)


@pytest.mark.parametrize("module", ["numpy", "lax", "nn"])
def test_differential_pjrt_x64(module, x64):
    cases = [c for c in build_cases(True) if c.fn.startswith(module + ".")]
    n, unexpected, stale = run_group(select(cases, FRACTION[module],
                                            seed=zlib.crc32(b"pjrt64:" + module.encode())))
    COUNTS["x64:" + module] = n
    assert not unexpected and not stale, _report(unexpected, stale)


def test_subnormals_are_flushed():
    """The difference accepted everywhere exists: the interpreter keeps a subnormal
    operand (ceil(1e-40) is 1), XLA:CPU flushes it (0), eagerly and under jit."""
    case = next(c for c in build_cases(False) if c.fn == "numpy.ceil" and
                c.family == "f32-tiny")
    for jit in (False, True):
        assert diff_case(case, jit).startswith("subnormal: value"), jit


def test_known_differences_name_cases():
    """Every KNOWN_DIFFERENCES entry and ULPS pattern matches some case (a typo would
    never be checked)."""
    cases = build_cases(False) + build_cases(True)
    keys = {c.key for c in cases} | {"jit:" + c.key for c in cases}
    unmatched = [(e, (f, k)) for e in KNOWN_DIFFERENCES for f, k in _tokens(e)
                 if not any(_fnm(c.fn, f) for c in cases) or
                 not any(_fnm(key, k) for key in keys)]
    assert not unmatched, f"entries that match no case: {unmatched}"
    names = {c.fn for c in cases}
    bad = [p for pats in ULPS for p in pats.split() if not any(_fnm(n, p) for n in names)]
    assert not bad, f"ULPS patterns that match no function: {bad}"


def test_a_wrong_lowering_is_caught(monkeypatch):
    """The harness notices a lowering rule that computes the wrong thing: add lowered as
    subtract."""
    from jaxlite.core import primitives
    from jaxlite.primitives import _lowering as lo
    monkeypatch.setattr(primitives()["add"], "lowering", lo.elementwise("stablehlo.subtract"))
    # eager executables compiled before (with the right rule) are not reused
    monkeypatch.setattr(_xla().backend, "_eager", collections.OrderedDict())
    case = next(c for c in build_cases(False) if c.fn == "lax.add" and c.family == "i32")
    assert diff_case(case, False).startswith("value")
    assert diff_case(case, True).startswith("value")
