"""Implicitly differentiated solvers: ``jax.lax.custom_linear_solve`` and
``jax.lax.custom_root``.

Layer: lax.  The user's functions are traced once into programs (closed-over values become
operands) and staged as one ``custom_linear_solve`` equation
(primitives/linear_solve.py), or, for ``custom_root``, as a ``custom_jvp`` call whose rule
applies the implicit function theorem.  The solver itself is never differentiated, so it
may be any loop (``while_loop`` included).
"""
from __future__ import annotations

import numpy as np

from ..core import ad
from ..core.staging import trace_to_jaxpr
from ..core.trace import get_aval
from ..ir.interpret import eval_jaxpr
from ..ir.jaxpr import hoist_consts
from ..primitives.elementwise import convert_element_type_p, neg_p
from ..primitives.linear_solve import SolveJaxprs, bind_linear_solve
from ..tree_util import data_flatten as tree_flatten, tree_unflatten
from ._control import _avals_of

__all__ = ["custom_linear_solve", "custom_root"]


def _check_shapes(fun_name, expected_name, actual, expected_avals):
    got = [tuple(np.shape(x)) for x in actual]
    want = [tuple(a.shape) for a in expected_avals]
    if got != want:
        raise ValueError(f"{fun_name}() output shapes must match {expected_name}, got {got} "
                         f"and {want}")


def _trace(fun, fun_name, expected_name, in_tree, in_avals, has_aux=False, root=False):
    """Traces ``fun`` (one pytree argument of ``in_tree``) into a program whose output
    (the solution, before any auxiliary output) has the argument's structure and shapes.
    ``root``: custom_root's order of checks (structure first; JAX checks custom_linear_solve's
    shapes first).  Returns ``(closed program without constants, constants, output
    tree)``."""
    store = []

    def flat(*leaves):
        out = fun(tree_unflatten(in_tree, list(leaves)))
        if has_aux and root:
            kids = tree_flatten(out)[1].children()
            if len(kids) != 2:
                raise ValueError(f"{fun_name}() produced a pytree with structure "
                                 f"{tree_flatten(out)[1]}, but a (solution, aux) pair was "
                                 f"expected because has_aux=True.")
            x = tree_unflatten(kids[0], tree_flatten(out)[0][:kids[0].num_leaves])
        elif has_aux:
            x, _ = out          # a (solution, aux) pair; anything else raises here
        else:
            x = out
        x_leaves, x_tree = tree_flatten(x)
        if not root:
            _check_shapes(fun_name, expected_name, x_leaves, in_avals)
        if x_tree != in_tree:
            raise TypeError(f"{fun_name}() output pytree structure must match "
                            f"{expected_name}, got {x_tree} and {in_tree}.")
        if root:
            _check_shapes(fun_name, expected_name, x_leaves, in_avals)
        out_leaves, out_tree = tree_flatten(out)
        store.append(out_tree)
        return out_leaves

    closed, consts = hoist_consts(trace_to_jaxpr(flat, list(in_avals)))
    return closed, list(consts), store[0]


def _transpose_of(matvec_closed, matvec_consts, b_tree, b_avals):
    """``y -> A^T y`` for the linear ``matvec`` (its transpose, not its adjoint)."""
    nc = len(matvec_consts)
    t_closed = ad.transpose_jaxpr(matvec_closed, [False] * nc + [True] * len(b_avals))

    def vecmat(y):
        leaves, _ = tree_flatten(y)
        outs = eval_jaxpr(t_closed.jaxpr, t_closed.consts, *matvec_consts, *leaves)
        return tree_unflatten(b_tree, outs)
    return vecmat


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """``x`` with ``matvec(x) == b``, found by ``solve(matvec, b)`` and differentiated
    implicitly (``jax.lax.custom_linear_solve``).

    Args:
      matvec: the linear map ``A``: a function of one pytree with ``b``'s structure and
        shapes, returning the same.
      b: the right-hand side: an array or a pytree of arrays.
      solve: ``solve(matvec, b) -> x`` (``(x, aux)`` with ``has_aux``), ``x`` of ``b``'s
        structure and shapes.  Any algorithm: it is never differentiated.
      transpose_solve: ``transpose_solve(vecmat, b) -> x`` solving ``A^T x = b`` (given
        ``vecmat``, the transpose of ``matvec``); needed for reverse mode (grad, vjp).
      symmetric: ``A`` is symmetric, so ``solve`` is its own transpose solve and ``matvec``
        its own transpose.
      has_aux: ``solve`` (and ``transpose_solve``) return ``(x, aux)``; aux is returned
        unchanged and is not differentiated.

    Returns:
      ``x`` (or ``(x, aux)``), of the dtypes ``solve`` returns.  Derivatives: forward mode
      solves ``A dx = db - dA x``; reverse mode solves the transposed system with
      ``transpose_solve``.  Works under jit and vmap.

    Raises:
      ValueError: ``matvec``/``solve`` outputs whose shapes differ from ``b``'s.
      TypeError: outputs of another pytree structure than ``b``; reverse-mode
        differentiation without ``transpose_solve`` (and ``symmetric=False``).

    Example::

        A = jnp.array([[2., 1.], [1., 3.]])
        x = lax.custom_linear_solve(lambda v: A @ v, jnp.ones(2),
                                    lambda mv, b: jnp.linalg.solve(A, b), symmetric=True)
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, b_tree = tree_flatten(b)
    b_avals = _avals_of(b_leaves, "custom_linear_solve b")
    mv_j, mv_c, _ = _trace(matvec, "matvec", "b", b_tree, b_avals)
    s_j, s_c, out_tree = _trace(lambda x: solve(matvec, x), "solve", "b", b_tree, b_avals,
                                has_aux)
    if transpose_solve is None:
        vm_j = ts_j = None
        vm_c, ts_c = [], []
    else:
        vecmat = matvec if symmetric else _transpose_of(mv_j, mv_c, b_tree, b_avals)
        vm_j, vm_c, _ = _trace(vecmat, "vecmat", "b", b_tree, b_avals)
        ts_j, ts_c, _ = _trace(lambda x: transpose_solve(vecmat, x), "transpose_solve", "b",
                               b_tree, b_avals, has_aux)
    outs = bind_linear_solve(SolveJaxprs(mv_c, vm_c, s_c, ts_c), b_leaves,
                             SolveJaxprs(mv_j, vm_j, s_j, ts_j))
    return tree_unflatten(out_tree, outs)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root ``x`` of ``f`` (``f(x) == 0``) found by ``solve(f, initial_guess)``, with
    derivatives from the implicit function theorem (``jax.lax.custom_root``).

    Args:
      f: a function of one pytree returning a pytree of the same structure and shapes.
      initial_guess: the starting point, an array or pytree.
      solve: ``solve(f, initial_guess) -> x`` (``(x, aux)`` with ``has_aux``).  Never
        differentiated.
      tangent_solve: ``tangent_solve(g, y) -> z`` solving the linear system ``g(z) = y``,
        ``g`` the linearisation of ``f`` at the root (e.g. ``lambda g, y: y / g(1.0)`` for
        a scalar).  It must be linear in ``y`` for reverse mode.
      has_aux: ``solve`` returns ``(x, aux)``; aux is not differentiated.

    Returns:
      The root (``(root, aux)`` with ``has_aux``).  Its derivative with respect to values
      ``f`` closes over is ``-tangent_solve(df/dx, df/dparams . dparams)``.

    Raises:
      ValueError: outputs whose shapes differ from ``initial_guess``'s.
      TypeError: outputs of another pytree structure.

    Example::

        def sqrt(a):
            newton = lambda f, x0: lax.fori_loop(0, 20, lambda i, x: x - f(x) / (2 * x), x0)
            return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton,
                                   lambda g, y: y / g(1.0))
    """
    from ..transforms.autodiff import custom_jvp, linearize
    g_leaves, g_tree = tree_flatten(initial_guess)
    g_avals = _avals_of(g_leaves, "custom_root initial_guess")
    f_j, f_c, _ = _trace(f, "f", "initial_guess", g_tree, g_avals, root=True)
    s_j, s_c, sol_tree = _trace(lambda x: solve(f, x), "solve", "initial_guess", g_tree,
                                g_avals, has_aux, root=True)
    ng = len(g_leaves)
    pair_tree = tree_flatten((initial_guess, initial_guess))[1]

    def linearize_and_solve(xb):
        x, rhs = xb
        _, f_jvp = linearize(f, x)
        return tangent_solve(f_jvp, rhs)

    store = []

    def ls_flat(*leaves):
        out = linearize_and_solve(tree_unflatten(pair_tree, list(leaves)))
        o_leaves, o_tree = tree_flatten(out)
        if o_tree != g_tree:
            raise TypeError(f"tangent_solve() output pytree structure must match x, got "
                            f"{o_tree} and {g_tree}.")
        _check_shapes("tangent_solve", "x", o_leaves, g_avals)
        store.append(o_tree)
        return o_leaves

    ls_j, ls_c = hoist_consts(trace_to_jaxpr(ls_flat, list(g_avals) * 2))
    ls_c = list(ls_c)
    nf, ns = len(f_c), len(s_c)

    def run(*args):
        s_consts, guess = args[nf:nf + ns], args[nf + ns + len(ls_c):]
        outs = eval_jaxpr(s_j.jaxpr, [], *s_consts, *guess)
        # evaluating a program reads its literals strongly typed: keep the traced types
        return [convert_element_type_p.bind(o, new_dtype=a.dtype, weak_type=True)
                if a.weak_type and not get_aval(o).weak_type else o
                for o, a in zip(outs, s_j.out_avals)]

    root = custom_jvp(run)

    @root.defjvp
    def _root_jvp(primals, tangents):
        out = root(*primals)
        sol, aux = list(out[:ng]), list(out[ng:])
        f_consts = list(primals[:nf])
        ls_consts = list(primals[nf + ns:nf + ns + len(ls_c)])
        df = [t if ad.is_differentiable(get_aval(p)) else None
              for p, t in zip(f_consts, tangents[:nf])]
        # d/dparams f(params, root) = -(d/dx f) d root: rhs = the JVP of f in its constants
        _, rhs = ad.jvp_flat(lambda *cs: eval_jaxpr(f_j.jaxpr, [], *cs, *sol), f_consts, df)
        rhs = [ad.instantiate(t, get_aval(s).strip_weak_type()) for t, s in zip(rhs, sol)]
        dsol = eval_jaxpr(ls_j.jaxpr, [], *ls_consts, *sol, *rhs)
        dsol = [neg_p.bind(t) for t in dsol]
        daux = [ad.zeros(get_aval(a).strip_weak_type()) if ad.is_differentiable(get_aval(a))
                else ad.float0_zeros(get_aval(a)) for a in aux]
        return out, dsol + daux

    outs = root(*f_c, *s_c, *ls_c, *g_leaves)
    return tree_unflatten(sol_tree, list(outs))
