"""The float32 accuracy sweep of the transcendental functions: inputs, the reference,
ulp distances, and the README's table.

Each function gets ``n`` float32 inputs spread over its domain: a third uniform over the
interval where its values vary, a third log-uniform in magnitude (from the smallest
subnormal up, either sign where the domain has both), a third random bit patterns (the
whole float32 range, out-of-domain arguments and NaNs included), and the special values.
The reference is the correctly rounded value: NumPy's float64 function (``math.erf`` for
erf/erfc) rounded to float32.  "ulp" is the distance in float32 steps (adjacent floats
are 1 apart, -0.0 and +0.0 are 0 apart, NaN against NaN is 0, NaN against a number is
huge).

tests/test_float32_accuracy.py runs the sweep on every path (eager, the interpreter
backend, jit before tier-up, native kernels) and asserts the figures; run this file to
print the README's table (jaxlite beside real JAX's XLA, on the same inputs):

    PYTHONPATH=src python tests/float32_accuracy_table.py [--n 400000]
"""
from __future__ import annotations

import argparse
import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

# name -> (jax.numpy / jax.lax attribute path, float64 reference, interval where the
# function varies (uniform third), largest magnitude of the log-uniform third, whether
# negative arguments are in the domain)
FUNCTIONS = {
    "exp": ("numpy.exp", np.exp, (-104.0, 89.0), 104.0, True),
    "exp2": ("numpy.exp2", np.exp2, (-150.0, 128.0), 150.0, True),
    "expm1": ("numpy.expm1", np.expm1, (-20.0, 89.0), 89.0, True),
    "log": ("numpy.log", np.log, (0.0, 10.0), 3.4e38, False),
    "log1p": ("numpy.log1p", np.log1p, (-1.0, 10.0), 3.4e38, True),
    "log2": ("numpy.log2", np.log2, (0.0, 10.0), 3.4e38, False),
    "log10": ("numpy.log10", np.log10, (0.0, 10.0), 3.4e38, False),
    "sin": ("numpy.sin", np.sin, (-10.0, 10.0), 1e5, True),
    "cos": ("numpy.cos", np.cos, (-10.0, 10.0), 1e5, True),
    "tan": ("numpy.tan", np.tan, (-10.0, 10.0), 1e5, True),
    "tanh": ("numpy.tanh", np.tanh, (-10.0, 10.0), 20.0, True),
    "sinh": ("numpy.sinh", np.sinh, (-90.0, 90.0), 90.0, True),
    "cosh": ("numpy.cosh", np.cosh, (-90.0, 90.0), 90.0, True),
    "arcsin": ("numpy.arcsin", np.arcsin, (-1.0, 1.0), 1.0, True),
    "arccos": ("numpy.arccos", np.arccos, (-1.0, 1.0), 1.0, True),
    "arctan": ("numpy.arctan", np.arctan, (-10.0, 10.0), 3.4e38, True),
    "arcsinh": ("numpy.arcsinh", np.arcsinh, (-10.0, 10.0), 3.4e38, True),
    "arccosh": ("numpy.arccosh", np.arccosh, (1.0, 10.0), 3.4e38, False),
    "arctanh": ("numpy.arctanh", np.arctanh, (-1.0, 1.0), 1.0, True),
    "erf": ("scipy.special.erf", _erf, (-4.0, 4.0), 10.0, True),
    "erfc": ("scipy.special.erfc", _erfc, (-4.0, 11.0), 11.0, True),
    "logistic": ("nn.sigmoid", lambda x: 1 / (1 + np.exp(-x)), (-20.0, 20.0), 110.0, True),
}
"""Every float32 transcendental JAX has a primitive for, and jnp.log2/log10 (JAX defines
them as log(x) / log(2) and log(x) * log10(e): the composition, not a function of its
own, so their error is the composition's)."""

COMPOSED = frozenset({"log2", "log10"})

LAX = {"exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log1p": "log1p",
       "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "sinh": "sinh",
       "cosh": "cosh", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
       "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "erf": "erf",
       "erfc": "erfc", "logistic": "logistic"}
"""The lax counterpart of each function (the primitive's own name)."""

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38,
                    -1.1754942e-38, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0,
                    0.5, -0.5, 2.0, -2.0, 1e-8, -1e-8, 88.72283, 88.72284, 89.0, -87.33654,
                    -103.27893, -103.97208, -104.0, 127.99999, 128.0, -126.0, -149.0,
                    -150.0, 1.0000001, 0.99999994, -0.99999994, 1.5707964, 3.1415927,
                    65536.0, 65537.0, 1e30, -1e30, 710.0, 10.0, -10.0],
                   np.float32)


def inputs(name: str, n: int, seed: int = 0) -> np.ndarray:
    """``n`` float32 inputs for ``name`` (plus the special values; see the module text)."""
    _, _, (lo, hi), big, neg = FUNCTIONS[name]
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    k = n // 3
    uni = rng.uniform(lo, hi, k)
    mag = np.exp(rng.uniform(math.log(1.4e-45), math.log(big), k))
    if neg:
        mag = mag * rng.choice([-1.0, 1.0], k)
    bits = rng.integers(0, 2 ** 32, n - 2 * k, dtype=np.uint64).astype(np.uint32)
    with np.errstate(all="ignore"):
        return np.concatenate([uni.astype(np.float32), mag.astype(np.float32),
                               bits.view(np.float32), SPECIAL])


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """The correctly rounded float32 values of ``name`` at ``x``."""
    with np.errstate(all="ignore"):
        return np.asarray(FUNCTIONS[name][1](x.astype(np.float64))).astype(np.float32)


def _ordered(a):
    i = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulps(got, want) -> np.ndarray:
    """Per element, the distance in float32 steps (see the module text)."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    d = np.abs(_ordered(got) - _ordered(want))
    gn, wn = np.isnan(got), np.isnan(want)
    d = np.where(gn & wn, 0, d)
    return np.where(gn != wn, 1 << 40, d)


def normal(x: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where neither the argument nor the correctly rounded result is subnormal: XLA on
    CPU flushes subnormals to zero (jaxlite keeps them, see the README), so XLA's figures
    and the comparison with them are taken there."""
    tiny = np.float32(1.1754944e-38)
    with np.errstate(invalid="ignore"):
        sub = lambda v: (v != 0) & (np.abs(v) < tiny)
        return ~(sub(x) | sub(want))


def figures(got, want, where=None) -> tuple[int, float]:
    """(max ulp, percent correctly rounded) of ``got`` against ``want`` (at ``where``)."""
    u = ulps(got, want)
    if where is not None:
        u = u[where]
    return int(u.max()), 100.0 * float(np.mean(u == 0))


def attr(module, path: str):
    """``module.a.b`` for ``path`` "a.b" (``jax`` or ``jaxlite`` as ``module``)."""
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def xla_results(name: str, x: np.ndarray) -> np.ndarray:
    """Real JAX's (XLA on CPU) float32 results at ``x``."""
    import jax
    import jax.numpy    # noqa: F401  (attribute paths below)
    import jax.nn       # noqa: F401
    import jax.scipy.special    # noqa: F401
    return np.asarray(jax.jit(attr(jax, FUNCTIONS[name][0]))(x))


def _pct(p: float) -> str:
    return "100%" if p == 100.0 else f"{min(p, 99.999):.3f}%"


def table(n: int) -> str:
    """The README's Markdown table: per function, jaxlite's max ulp over all ``n`` inputs,
    then jaxlite's and XLA's max ulp and share of correctly rounded results where no
    subnormal is involved (jaxlite eager; every other path gives the same bits, see
    tests/test_float32_accuracy.py)."""
    import jaxlite
    import jaxlite.numpy    # noqa: F401
    import jaxlite.nn       # noqa: F401
    import jaxlite.scipy.special    # noqa: F401
    rows = ["| function | jaxlite max ulp, all inputs | jaxlite max ulp / correctly "
            "rounded | XLA max ulp / correctly rounded |", "|---|---|---|---|"]
    for name in FUNCTIONS:
        x = inputs(name, n)
        want = reference(name, x)
        got = np.asarray(attr(jaxlite, FUNCTIONS[name][0])(x))
        keep = normal(x, want)
        ours = figures(got, want, keep)
        xla = figures(xla_results(name, x), want, keep)
        label = f"`{name}`" + (" (composed)" if name in COMPOSED else "")
        rows.append(f"| {label} | {figures(got, want)[0]} | {ours[0]} / {_pct(ours[1])} | "
                    f"{xla[0]} / {_pct(xla[1])} |")
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=400_000, help="inputs per function")
    args = p.parse_args()
    import jax
    jax.config.update("jax_platforms", "cpu")
    print(table(args.n))


if __name__ == "__main__":
    main()
