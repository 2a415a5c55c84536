"""The interpreter's generated code computes add/sub/mul of two rank-0 values with the
NumPy scalars' own operators (backends/interpreter.py ``_scalar_operator``): the values,
dtypes and wrap-around of the ufunc it replaces, bit for bit, at the edges (overflow,
nan, inf, signed zeros), and no warning.  (Booleans never reach it: their + and * are
``or`` and ``and`` in a program.)"""
import warnings

import ml_dtypes
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.config import config

_INF, _NAN = float("inf"), float("nan")
_CASES = {
    "int8": [(127, 1), (-128, -1), (-128, 127), (0, 0), (100, 100)],
    "uint8": [(0, 1), (255, 1), (200, 200), (7, 0)],
    "int32": [(2**31 - 1, 1), (-2**31, -1), (46341, 46341), (-5, 3)],
    "float16": [(65504.0, 65504.0), (_INF, -_INF), (_NAN, 1.0), (-0.0, 0.0), (-0.0, -0.0),
                (6e-8, 0.5), (1.0, 3.0)],
    "bfloat16": [(3e38, 3e38), (_INF, _INF), (-0.0, 0.0), (1.0, 2.0**-9), (_NAN, -_INF)],
    "float32": [(3.4e38, 3.4e38), (_INF, -_INF), (_NAN, 0.0), (-0.0, 0.0), (-0.0, -0.0),
                (1e-45, 0.5), (0.1, 0.2), (_INF, 0.0)],
    "complex64": [(1 + 2j, 3 - 4j), (complex(_INF, 0), complex(_INF, 0)),
                  (complex(-0.0, -0.0), 0j), (complex(_NAN, 1), 1j)],
}
_OPS = {"add": (np.add, lambda a, b: a + b), "sub": (np.subtract, lambda a, b: a - b),
        "mul": (np.multiply, lambda a, b: a * b)}


def _bits(v):
    a = np.asarray(v)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fc" or \
        a.dtype == ml_dtypes.bfloat16 else a


def _params():
    for dt, pairs in _CASES.items():
        for op in _OPS:
            for a, b in pairs:
                yield pytest.param(dt, op, a, b, id=f"{dt}-{op}-{a}-{b}")


@pytest.mark.parametrize("dt,op,a,b", list(_params()))
def test_scalar_operands_match_the_ufunc(dt, op, a, b):
    ufunc, pyop = _OPS[op]
    dtype = np.dtype(dt)
    x = np.array([a], dtype)
    y = np.array([b], dtype)
    with np.errstate(all="ignore"):
        want = ufunc(x[0], y[0])
    # two reductions give NumPy scalars: the add/sub/mul between them is the operator
    f = jax.jit(lambda u, v: pyop(jnp.max(u), jnp.max(v)))
    with config._override("jaxlite_backend", "interpreter"), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = f(jnp.asarray(x), jnp.asarray(y))
        ex = next(iter(f._cache.values())).compiled._program.executable
        src = getattr(ex, "interpreter", ex).source
    # (half precision binds a wrapper that computes in float32, as XLA does: not the
    # ufunc, so it keeps its call)
    half = dt in ("float16", "bfloat16")
    assert (f" {'+-*'[list(_OPS).index(op)]} " in src) is not half, src
    assert got.dtype == dtype and got.shape == ()
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dt", ["int8", "uint8", "float32"])
def test_rank0_array_arguments_and_literals(dt):
    """0-d array arguments take the operator too (it calls the ufunc); a literal operand
    keeps the ufunc call; both give the ufunc's values and dtype."""
    dtype = np.dtype(dt)
    a = np.array({"int8": 127, "uint8": 255}.get(dt, 3.4e38), dtype)
    b = np.array(3, dtype)
    with config._override("jaxlite_backend", "interpreter"), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jax.jit(lambda u, v: u * v - u)(jnp.asarray(a), jnp.asarray(b))
        lit = jax.jit(lambda u: u * 2)(jnp.asarray(a))
    with np.errstate(all="ignore"):
        want = np.subtract(np.multiply(a, b), a)
        want_lit = np.multiply(a, np.array(2, dtype))
    assert got.dtype == dtype and lit.dtype == dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))
    np.testing.assert_array_equal(_bits(lit), _bits(want_lit))


def test_arrays_and_mixed_ranks_keep_the_ufunc_call():
    from jaxlite.backends.interpreter import _scalar_operator
    from jaxlite.ir.jaxpr import Literal

    def eqns(f, *args):
        return jax.make_jaxpr(f)(*args).jaxpr.eqns
    v = jnp.ones(3, jnp.float32)
    s = jnp.float32(2)
    (vec,) = eqns(lambda a, b: a + b, v, v)
    assert _scalar_operator(np.add, vec) is None          # arrays
    mixed = eqns(lambda a, b: a + b, v, s)[-1]
    assert _scalar_operator(np.add, mixed) is None        # a vector and a scalar
    (sc,) = eqns(lambda a, b: a * b, s, s)
    assert _scalar_operator(np.multiply, sc) == "*"
    assert _scalar_operator(np.maximum, sc) is None       # not one of the three
    assert _scalar_operator(lambda a, b: a * b, sc) is None   # not the ufunc itself
    assert not any(isinstance(x, Literal) for x in sc.invars)
