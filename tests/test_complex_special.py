"""Complex functions at special values against real JAX: every combination of 0, -0, 1, -1,
inf, -inf and NaN as the real and imaginary parts (and every pair of those for binary
functions).  XLA's formulas, not C99's, decide the NaN/inf parts and the signs of zeros.

Checked: dtype, shape, NaN and infinity positions, the sign of every zero, finite values
to a few ulps of the result's magnitude; and that ``jit`` gives the eager value bit for bit.
The fast tier runs complex64; the slow tier complex128 under x64 with more finite values.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as llax
import jaxlite.nn as lnn
import jaxlite.numpy as ljnp

PARTS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]
MORE = [0.5, -2.0, 3.0, 1e30, -1e-30, 100.0]
# complex64: no 1e-30 (XLA's float32 atanh squares it to 0: an infinite real part) and no
# 100 (e**100 through XLA's float32 exp is a few ulps off libm's)
MORE32 = [0.5, -2.0, 3.0]


def grid(dt, parts):
    out = np.empty(len(parts) ** 2, dt)
    out.real = np.repeat(parts, len(parts))
    out.imag = np.tile(parts, len(parts))
    return out


# name -> (jaxlite function, the same function's path in JAX)
UNARY = {
    "lax.sqrt": llax.sqrt, "lax.rsqrt": llax.rsqrt, "lax.sign": llax.sign, "lax.abs": llax.abs,
    "lax.exp": llax.exp, "lax.exp2": llax.exp2, "lax.log": llax.log,
    "lax.logistic": llax.logistic, "lax.sin": llax.sin, "lax.cos": llax.cos,
    "lax.tan": llax.tan, "lax.sinh": llax.sinh, "lax.cosh": llax.cosh, "lax.tanh": llax.tanh,
    "lax.asin": llax.asin, "lax.acos": llax.acos, "lax.atan": llax.atan,
    "lax.asinh": llax.asinh, "lax.acosh": llax.acosh, "lax.atanh": llax.atanh,
    "numpy.reciprocal": ljnp.reciprocal, "numpy.rint": ljnp.rint, "numpy.round": ljnp.round,
    "numpy.nan_to_num": ljnp.nan_to_num, "numpy.log2": ljnp.log2, "numpy.log10": ljnp.log10,
    "numpy.sign": ljnp.sign, "numpy.exp2": ljnp.exp2, "numpy.sqrt": ljnp.sqrt,
    "nn.sigmoid": lnn.sigmoid, "nn.elu": lnn.elu, "nn.celu": lnn.celu,
    "nn.squareplus": lnn.squareplus,
}
BINARY = {
    "lax.div": llax.div, "lax.pow": llax.pow, "lax.atan2": llax.atan2,
    "numpy.divide": ljnp.divide, "numpy.power": ljnp.power,
}


def _jax_fn(name):
    import jax
    mod, fn = name.split(".")
    return getattr({"lax": jax.lax, "numpy": jax.numpy, "nn": jax.nn}[mod], fn)


def assert_same_special(got, want, what):
    """Equal dtype and shape; NaN and infinity in the same parts; zeros of the same sign;
    finite values within 16 eps of the result's magnitude (of the finite part's, beside an
    infinite one).  A subnormal where JAX has 0 counts as that zero (XLA flushes them)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype)
    eps, tiny = np.finfo(g.real.dtype).eps, np.finfo(g.real.dtype).tiny
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.where(np.isfinite(w), np.abs(w), 0)
    for part in ("real", "imag"):
        gp, wp = getattr(g, part), getattr(w, part)
        fin_w = np.isfinite(wp)
        scale = np.maximum(scale, np.where(fin_w, np.abs(wp), 0))
    for part in ("real", "imag"):
        gp, wp = getattr(g, part), getattr(w, part)
        bad = np.isnan(gp) != np.isnan(wp)
        bad |= np.isinf(wp) & (gp != wp)
        zero = wp == 0
        flushed = zero & (np.abs(gp) < tiny)
        bad |= zero & ~flushed & ((gp != 0) | (np.signbit(gp) != np.signbit(wp)))
        bad |= zero & (gp == 0) & (np.signbit(gp) != np.signbit(wp))
        fin = np.isfinite(wp) & ~zero
        with np.errstate(invalid="ignore"):
            bad |= fin & ~(np.abs(gp - wp) <= 16 * eps * scale)
        assert not bad.any(), (what, part, [(int(i), complex(a), complex(b)) for i, a, b
                                            in zip(np.flatnonzero(bad)[:5],
                                                   g[bad][:5], w[bad][:5])])


# XLA's atan2 at y = +-i x (x*x + y*y = 0) gives NaN - inf*i: its log keeps the infinite
# magnitude beside a NaN angle there, unlike XLA's log itself (NaN + NaN*i)
def _atan2_ok(y, x):
    with np.errstate(invalid="ignore"):
        yy = y * y + x * x
    return ~((yy == 0) & (y != 0))


def _check(name, dt, parts):
    fn = UNARY.get(name) or BINARY[name]
    if name in UNARY:
        args = (grid(dt, parts),)
    else:
        g = grid(dt, parts)
        args = (np.repeat(g, g.size), np.tile(g, g.size))
        if name == "lax.atan2":
            keep = _atan2_ok(*args)
            args = tuple(a[keep] for a in args)
    want = _jax_fn(name)(*args)
    got = fn(*args)
    assert isinstance(got, jaxlite.Array)
    assert_same_special(got, want, name)
    jitted = np.asarray(jaxlite.jit(fn)(*args))
    np.testing.assert_array_equal(jitted.view(np.uint8), np.asarray(got).view(np.uint8),
                                  err_msg=f"{name}: jit differs from eager")


@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_complex64_special_values(name, rjax):
    _check(name, np.complex64, PARTS)


def test_lax_complex_keeps_parts(rjax):
    """lax.complex assembles the parts as they are: NaN/inf imaginary parts do not leak
    into the real part, a -0.0 imaginary part stays -0.0."""
    p = np.array(PARTS, np.float32)
    x, y = np.repeat(p, p.size), np.tile(p, p.size)
    assert_same_special(llax.complex(x, y), rjax.lax.complex(x, y), "lax.complex")


# atan2's finite values carry XLA's rounding residue (README's known differences): special
# parts only; a large exponent magnifies XLA's log/exp approximations: pow with the grid
# of special parts only, too
FINITE_OK = sorted(set(UNARY) | set(BINARY) - {"lax.atan2", "lax.pow", "numpy.power"})


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_complex128_special_values(name, rjax, x64):
    _check(name, np.complex128, PARTS)


@pytest.mark.slow
@pytest.mark.parametrize("name", FINITE_OK)
def test_complex128_finite_values(name, rjax, x64):
    _check(name, np.complex128, PARTS + MORE)


@pytest.mark.slow
@pytest.mark.parametrize("name", FINITE_OK)
def test_complex64_finite_values(name, rjax):
    _check(name, np.complex64, PARTS + MORE32)


@pytest.mark.parametrize("axis", [0, 1])
def test_complex_cumprod_starts_from_the_identity(axis, rjnp):
    """XLA's cumulative product multiplies the first element by 1: inf + 1j becomes
    inf + nanj in JAX; finite elements are unchanged."""
    x = np.array([[np.inf + 1j, 2], [1, np.nan + 0j], [1j, 3 - 1j]], np.complex64)
    got = jaxlite.numpy.cumprod(x, axis=axis)
    want = rjnp.cumprod(x, axis=axis)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == want.dtype
