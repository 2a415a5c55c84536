"""``jaxlite.test_util``: numerical checks of derivatives (mirrors ``jax.test_util``).

Layer: top (uses the differentiation API; works on any function jaxlite can transform).

``check_grads(f, args, order)`` compares jaxlite's forward-mode (``jvp``), reverse-mode
(``vjp``) and linearised (``linearize``) derivatives of ``f`` with central finite
differences along one random direction (a fixed seed, so a check is repeatable), and
repeats the comparison on the derivative functions themselves up to ``order``.  A
mismatch raises AssertionError whose message says which check failed (``JVP tangent``,
``VJP cotangent projection``, ``JVP of VJP ...``), as JAX's does.
"""
from __future__ import annotations

import functools

import numpy as np

from . import dtypes
from .tree_util import tree_leaves, tree_map, tree_structure

__all__ = ["check_grads", "check_jvp", "check_vjp"]

#: the finite-difference step used when none is given
EPS = 1e-4

# Absolute and relative tolerance per dtype of the derivative checks (JAX's values): the
# central difference of a float32 function is only good to a few digits.
_GRADIENT_TOL = {
    np.dtype(dtypes._BF16): 1e-1,
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
}

# Tolerance for dtypes the table above lacks: exact for integers, bools and float0.
_EXACT_TOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6,
              np.dtype(np.float64): 1e-15, np.dtype(np.complex64): 1e-6,
              np.dtype(np.complex128): 1e-15, np.dtype(dtypes._BF16): 1e-2}


def _is_py_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _dtype_of(x) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if _is_py_scalar(x):
        return dtypes.python_scalar_dtype(x)
    return np.asarray(x).dtype


def _tol_for(dt, tol) -> float:
    """The tolerance of ``tol`` (a number, a {dtype: number} dict or None) for ``dt``."""
    if tol is not None and not isinstance(tol, dict):
        return tol
    table = dict(_GRADIENT_TOL)
    if tol:
        table.update({np.dtype(k): v for k, v in tol.items()})
    dt = dtypes.canonicalize_dtype(np.dtype(dt)) if np.dtype(dt) != dtypes.float0 else dt
    if dt in table:
        return table[dt]
    return _EXACT_TOL.get(dt, 0)


def _assert_close(a, b, atol, rtol, what: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise AssertionError(f"{what}: shapes differ, {a.shape} vs {b.shape}")
    if a.dtype == dtypes.float0 or b.dtype == dtypes.float0:
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    # a check over many elements allows proportionally more accumulated error
    at = max(_tol_for(a.dtype, atol), _tol_for(b.dtype, atol)) * a.size
    rt = max(_tol_for(a.dtype, rtol), _tol_for(b.dtype, rtol)) * b.size
    if a.dtype == dtypes._BF16:
        a = a.astype(np.float32)
    if b.dtype == dtypes._BF16:
        b = b.astype(np.float32)
    kw = {}
    if at:
        kw["atol"] = at
    if rt:
        kw["rtol"] = rt
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, err_msg=what, **kw)


def _check_close(xs, ys, atol, rtol, what: str) -> None:
    if tree_structure(xs) != tree_structure(ys):
        raise AssertionError(f"{what}: pytree structures differ, {tree_structure(xs)} vs "
                             f"{tree_structure(ys)}")
    for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
        _assert_close(x, y, atol, rtol, what)


def _check_same_dtypes(xs, ys, what: str) -> None:
    for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
        dx = dtypes.canonicalize_dtype(_dtype_of(x)) if _dtype_of(x) != dtypes.float0 \
            else dtypes.float0
        dy = dtypes.canonicalize_dtype(_dtype_of(y)) if _dtype_of(y) != dtypes.float0 \
            else dtypes.float0
        if dx != dy:
            raise AssertionError(f"{what}: dtypes differ, {dx} vs {dy}")


def _keep_type(fn):
    """An elementwise NumPy step on leaves that keeps the first leaf's dtype (and a Python
    scalar stays a Python scalar, so weak typing is unchanged)."""
    def step(*xs):
        out = np.array(fn(*xs), dtype=_dtype_of(xs[0]))
        return out.item() if all(_is_py_scalar(x) for x in xs) else out
    return step


def _tree_add(xs, ys):
    return tree_map(_keep_type(lambda x, y: np.asarray(x) + np.asarray(y)), xs, ys)


def _tree_sub(xs, ys):
    return tree_map(_keep_type(lambda x, y: np.asarray(x) - np.asarray(y)), xs, ys)


def _tree_conj(xs):
    return tree_map(_keep_type(lambda x: np.conj(np.asarray(x))), xs)


def _tree_scale(xs, a):
    def scale(x):
        dt = _dtype_of(x)
        out = np.multiply(np.asarray(x), np.array(a, dtype=dt), dtype=dt)
        return out.item() if _is_py_scalar(x) else out
    return tree_map(scale, xs)


def _difference(x, y):
    """``x - y`` in ``x``'s dtype, where equal values (``inf`` and ``inf`` too) give 0."""
    dt = _dtype_of(x)
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(invalid="ignore"):
        return np.where(x == y, np.array(0, dt), np.subtract(x, y, dtype=dt))


def _random_like(rng, x):
    dt = _dtype_of(x)
    shape = np.shape(x)
    out = np.asarray(rng.randn(*shape), dtype=dt)
    if dt.kind == "c":
        out = out + dt.type(1j) * np.asarray(rng.randn(*shape), dtype=dt)
    return out.item() if _is_py_scalar(x) else out


def _inner(xs, ys) -> float:
    total = 0.0
    for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
        x, y = np.asarray(x), np.asarray(y)
        total = np.add(total, np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1))))
    return total


def numerical_jvp(f, primals, tangents, eps=EPS):
    """The central finite difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` of
    ``f`` at ``primals`` along ``tangents`` (pytrees of the same structure), computed in
    each output's dtype."""
    step = _tree_scale(tangents, eps)
    ahead = f(*_tree_add(primals, step))
    behind = f(*_tree_sub(primals, step))
    return _tree_scale(tree_map(_difference, ahead, behind), 0.5 / eps)


def _merge(tol):
    if tol is None or not isinstance(tol, dict):
        return tol
    return {np.dtype(k): v for k, v in tol.items()}


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Checks ``f_jvp(args, tangents) -> (f(*args), tangent_out)`` (typically
    ``functools.partial(jax.jvp, f)``) against the finite difference of ``f`` along one
    random direction (mirrors ``jax.test_util.check_jvp``).

    Args:
      f: the function, called as ``f(*args)``.
      f_jvp: computes the JVP as ``f_jvp(args, tangents)``.
      args: tuple of arguments (pytrees of arrays or Python scalars).
      atol, rtol: tolerances: a number, or a dict from dtype to number (default: 2e-3
        for float32, 1e-5 for float64, 1e-2 for float16, 1e-1 for bfloat16), multiplied by
        the number of elements compared.
      eps: the finite-difference step.
      err_msg: prefix of the failure message.

    Raises:
      AssertionError: the primal output or the tangent differ beyond the tolerance, or
        the tangent's dtype differs from the output's.
    """
    atol, rtol = _merge(atol), _merge(rtol)
    rng = np.random.RandomState(0)
    tangents = tree_map(functools.partial(_random_like, rng), args)
    v_out, t_out = f_jvp(args, tangents)
    _check_same_dtypes(v_out, t_out, f"{err_msg} tangent dtype".strip())
    v_want = f(*args)
    _check_same_dtypes(v_out, v_want, f"{err_msg} primal dtype".strip())
    t_want = numerical_jvp(f, args, tangents, eps=eps)
    _check_close(v_out, v_want, atol, rtol, f"{err_msg} primal".strip())
    _check_close(t_out, t_want, atol, rtol, f"{err_msg} tangent".strip())


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Checks ``f_vjp(*args) -> (f(*args), vjp_fun)`` (typically
    ``functools.partial(jax.vjp, f)``): for random ``t`` and ``c``, the inner product of
    ``t`` with ``vjp_fun(c)`` must equal that of the finite-difference JVP along ``t``
    with ``c`` (mirrors ``jax.test_util.check_vjp``).  Arguments as ``check_jvp``.

    Raises:
      AssertionError: the primal output or the two inner products differ beyond the
        tolerance (message ``cotangent projection``).
    """
    atol, rtol = _merge(atol), _merge(rtol)
    rng = np.random.RandomState(0)
    v_out, vjp_fun = f_vjp(*args)
    v_want = f(*args)
    _check_close(v_out, v_want, atol, rtol, f"{err_msg} primal".strip())
    tangents = tree_map(functools.partial(_random_like, rng), args)
    t_out = numerical_jvp(f, args, tangents, eps=eps)
    cotangents = tree_map(functools.partial(_random_like, rng), v_out)
    ct_out = _tree_conj(vjp_fun(_tree_conj(cotangents)))
    _check_close(_inner(tangents, ct_out), _inner(t_out, cotangents), atol, rtol,
                 f"{err_msg} cotangent projection".strip())


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Checks the derivatives of ``f`` at ``args`` up to ``order`` against finite
    differences, along one random direction per check (mirrors
    ``jax.test_util.check_grads``).

    Args:
      f: the function, called as ``f(*args)``.
      args: tuple (or list) of arguments: pytrees of arrays or Python scalars.
      order: the highest derivative order checked (1: first derivatives).
      modes: which derivatives: ``"fwd"`` (``jvp``), ``"rev"`` (``vjp``), ``"lin"``
        (``linearize``); others are ignored.  Higher orders check the derivative
        functions of the same mode (the JVP of the JVP, the VJP of the VJP).
      atol, rtol: tolerances, as in ``check_jvp``.
      eps: the finite-difference step (default 1e-4).

    Raises:
      AssertionError: a derivative differs from its finite difference; the message
        names the check, e.g. ``JVP of VJP tangent``.
    """
    from .transforms.autodiff import jvp, linearize, vjp
    args = tuple(args)
    eps = eps or EPS

    def jvp_by_linearize(fun, primals, tangents):
        out, f_lin = linearize(fun, *primals)
        return out, f_lin(*tangents)

    def recurse(fun, args, order, what):
        if "fwd" in modes:
            msg = f"JVP of {what}" if what else "JVP"
            check_jvp(fun, functools.partial(jvp, fun), args, atol, rtol, eps, msg)
            if order > 1:
                recurse(functools.partial(jvp, fun), (args, args), order - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {what}" if what else "VJP"
            check_vjp(fun, functools.partial(vjp, fun), args, atol, rtol, eps, msg)
            if order > 1:
                def pulled_back(*xs):
                    out, pull = vjp(fun, *xs)
                    return pull(out)
                recurse(pulled_back, args, order - 1, msg)
        if "lin" in modes:
            msg = f"LIN of {what}" if what else "LIN"
            check_jvp(fun, functools.partial(jvp_by_linearize, fun), args, atol, rtol, eps,
                      msg)
            if order > 1:
                recurse(functools.partial(jvp_by_linearize, fun), (args, args), order - 1,
                        msg)

    recurse(f, args, order, "")
