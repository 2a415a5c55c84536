"""Differentiation API: ``jvp``, ``linearize``, ``vjp``, ``grad``, ``value_and_grad``,
``jacfwd``, ``jacrev``, ``hessian``, ``custom_jvp``, ``custom_vjp``, ``checkpoint``.

Layer: transforms.  Forward mode runs ``core.ad.JVPTrace``; reverse mode linearises
(``core.ad.linearize_flat``: the tangent computation staged into a linear jaxpr whose
constants are the residuals) and transposes that jaxpr (``core.ad.backward_pass``).
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import dtypes
from ..core import ad
from ..core.avals import ShapedArray
from ..core.trace import Tracer, find_top_trace, get_aval
from ..tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev",
           "hessian", "custom_jvp", "custom_vjp", "checkpoint", "remat", "closure_convert"]


def _check_callable(fun, name):
    if not callable(fun):
        raise TypeError(f"{name} requires a callable argument, got {fun!r}")


def _check_leaf(x, what):
    try:
        get_aval(x)
    except TypeError:
        raise TypeError(f"{what}: argument of type {type(x).__name__} is not a valid JAX "
                        f"type: {x!r}") from None


def _tangent_dtype(aval):
    return aval.dtype if ad.is_differentiable(aval) else dtypes.float0


def _zero_tangent(aval):
    if ad.is_differentiable(aval):
        return ad.zeros(aval.strip_weak_type())
    return ad.float0_zeros(aval)


def _flat_fun(fun, in_tree, out_store, has_aux=False):
    def flat(*leaves):
        args = tree_unflatten(in_tree, list(leaves))
        out = fun(*args)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair "
                                f"(output, auxiliary data), got {type(out).__name__}")
            out, aux = out
            out_store.append(("aux", aux))
        leaves_out, tree = tree_flatten(out)
        for x in leaves_out:
            _check_leaf(x, "differentiated function output")
        out_store.append(("tree", tree))
        return leaves_out
    return flat


def _store(out_store, kind):
    for k, v in out_store:
        if k == kind:
            return v
    return None


def _lower_aux(aux):
    """Auxiliary outputs leave the transformation as plain values."""
    from ..core.trace import full_lower

    def low(x):
        while isinstance(x, ad.JVPTracer):
            x = x.primal
        return full_lower(x)
    return tree_map(low, aux)


# ---- forward mode ---------------------------------------------------------------------

def jvp(fun, primals, tangents, has_aux=False):
    """Forward-mode derivative (``jax.jvp``): ``(fun(*primals), J·tangents)``.

    Args:
      fun: function of arrays/pytrees.  primals, tangents: tuples (or lists) with the same
        pytree structure; each tangent has its primal's shape and dtype (``float0`` for
        integer/bool primals).
    Returns:
      ``(primals_out, tangents_out)`` (plus ``aux`` when ``has_aux``).
    Raises:
      TypeError: primals/tangents are not tuples or lists, their trees or dtypes differ.
      ValueError: a tangent's shape differs from its primal's.
    """
    _check_callable(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"primal and tangent arguments to jax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents "
                        f"have tree structure {t_tree}.")
    for p, t in zip(p_leaves, t_leaves):
        _check_leaf(p, "jvp")
        pa = get_aval(p)
        ta_dtype = getattr(t, "dtype", None)
        ta_dtype = get_aval(t).dtype if ta_dtype is None else np.dtype(ta_dtype)
        want = _tangent_dtype(pa)
        if dtypes.canonicalize_dtype(ta_dtype) != want and ta_dtype != want:
            raise TypeError(f"primal and tangent arguments to jax.jvp do not match; dtypes "
                            f"must be equal, or in case of int/bool primal dtype the tangent "
                            f"dtype must be float0. Got primal dtype {pa.dtype.name} and so "
                            f"expected tangent dtype {np.dtype(want).name}, but got tangent "
                            f"dtype {np.dtype(ta_dtype).name} instead.")
        if tuple(np.shape(t)) != pa.shape:
            raise ValueError(f"jvp called with different primal and tangent shapes;Got primal "
                             f"shape {pa.shape} and tangent shape as {tuple(np.shape(t))}")
    t_in = [t if ad.is_differentiable(get_aval(p)) else None
            for p, t in zip(p_leaves, t_leaves)]
    store = []
    flat = _flat_fun(fun, p_tree, store, has_aux)
    p_out, t_out = ad.jvp_flat(flat, p_leaves, t_in)
    out_tree = _store(store, "tree")
    t_out = [_zero_tangent(get_aval(p)) if t is None else t for p, t in zip(p_out, t_out)]
    res = (tree_unflatten(out_tree, p_out), tree_unflatten(out_tree, t_out))
    if has_aux:
        return res + (_lower_aux(_store(store, "aux")),)
    return res


def linearize(fun, *primals, has_aux=False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the JVP at
    ``primals`` without re-running ``fun`` (``jax.linearize``)."""
    _check_callable(fun, "linearize")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    for p in p_leaves:
        _check_leaf(p, "linearize")
    store = []
    flat = _flat_fun(fun, p_tree, store, has_aux)
    lin = ad.linearize_flat(flat, p_leaves)
    out_tree = _store(store, "tree")
    from ..ir.interpret import eval_jaxpr

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise TypeError(f"linearized function called on tangents with tree structure "
                            f"{t_tree}, expected {p_tree}")
        ins = [t for t, m in zip(t_leaves, lin.in_mask) if m]
        outs = iter(eval_jaxpr(lin.jaxpr, lin.consts, *ins))
        res = [_zero_tangent(a) if z else next(outs) for a, z in zip(lin.out_avals,
                                                                       lin.out_zero)]
        return tree_unflatten(out_tree, res)

    out = tree_unflatten(out_tree, lin.primals_out)
    if has_aux:
        return out, f_jvp, _lower_aux(_store(store, "aux"))
    return out, f_jvp


# ---- reverse mode ---------------------------------------------------------------------

def _vjp_flat(flat, p_leaves):
    lin = ad.linearize_flat(flat, p_leaves)

    def pullback(ct_leaves):
        cts = [c for c, z in zip(ct_leaves, lin.out_zero) if not z]
        args = [ad.UndefinedPrimal(a.strip_weak_type())
                for a, m in zip(lin.in_avals, lin.in_mask) if m]
        got = iter(ad.backward_pass(lin.jaxpr, lin.consts, args, cts))
        out = []
        for a, m in zip(lin.in_avals, lin.in_mask):
            if m:
                c = next(got)
                out.append(_zero_tangent(a) if c is None else c)
            else:
                out.append(ad.float0_zeros(a))
        return out
    return lin, pullback


def vjp(fun, *primals, has_aux=False):
    """Reverse-mode derivative (``jax.vjp``): ``(fun(*primals), f_vjp)`` where
    ``f_vjp(cotangent)`` returns a tuple of cotangents, one per primal.

    The cotangent must match the output's pytree structure, shapes and dtypes
    (ValueError/TypeError otherwise)."""
    _check_callable(fun, "vjp")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    for p in p_leaves:
        _check_leaf(p, "vjp")
    store = []
    flat = _flat_fun(fun, p_tree, store, has_aux)
    lin, pullback = _vjp_flat(flat, p_leaves)
    out_tree = _store(store, "tree")

    def f_vjp(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"Tree structure of cotangent input {ct_tree}, does not match "
                            f"structure of primal output {out_tree}.")
        for c, a in zip(ct_leaves, lin.out_avals):
            ca = get_aval(c)
            if ca.shape != a.shape:
                raise ValueError(f"Shape of cotangent input to vjp pullback function "
                                 f"{ca.shape} must be the same as the shape of corresponding "
                                 f"primal input {a.shape}.")
            want = _tangent_dtype(a)
            if ca.dtype != want and not (ca.weak_type and ad.is_differentiable(a)):
                raise TypeError(f"Type of cotangent input to vjp pullback function "
                                f"({ca.dtype.name}) is not the expected tangent type "
                                f"({np.dtype(want).name}) of corresponding primal output "
                                f"with dtype {a.dtype.name}.")
        ct_leaves = [_as_dtype(c, a.dtype) if ad.is_differentiable(a) else None
                     for c, a in zip(ct_leaves, lin.out_avals)]
        return tree_unflatten(p_tree, pullback(ct_leaves))

    out = tree_unflatten(out_tree, lin.primals_out)
    if has_aux:
        return out, f_vjp, _lower_aux(_store(store, "aux"))
    return out, f_vjp


def _as_dtype(x, dt):
    from ..primitives.elementwise import convert_element_type_p
    if get_aval(x).dtype == dt and not get_aval(x).weak_type:
        return x
    if not isinstance(x, Tracer) and not hasattr(x, "_buf"):
        return np.asarray(x, dt)
    return convert_element_type_p.bind(x, new_dtype=dt, weak_type=False)


def _argnums_tuple(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"{name}: argnums must not be empty")
    for i in nums:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name}: argnums must be ints, got {argnums!r}")
        if not -nargs <= i < nargs:
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at "
                            f"least {max(nums) + 1} positional arguments to be passed by the "
                            f"caller, but got only {nargs} positional arguments.")
    return tuple(int(i) % nargs for i in nums)


def _check_grad_inputs(leaves, allow_int, holomorphic):
    for x in leaves:
        dt = get_aval(x).dtype
        if holomorphic:
            if dt.kind != "c":
                raise TypeError(f"grad with holomorphic=True requires inputs with complex "
                                f"dtype, but got {dt.name}.")
        elif not dtypes.is_inexact(dt) and not allow_int:
            raise TypeError(f"grad requires real- or complex-valued inputs (input dtype that "
                            f"is a sub-dtype of np.inexact), but got {dt.name}. If you want "
                            f"to use Boolean- or integer-valued inputs, use vjp or set "
                            f"allow_int to True.")


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """``(fun(*args), ∇fun(*args))`` with respect to ``argnums`` (``jax.value_and_grad``).

    ``fun`` must return a real scalar (or ``(scalar, aux)`` with ``has_aux``).
    Raises TypeError for a non-scalar or non-float output ("Gradient only defined for
    scalar-output functions"), and for integer inputs unless ``allow_int``.
    """
    _check_callable(fun, "value_and_grad")
    try:
        sig_params = inspect.signature(fun).parameters
        if isinstance(argnums, int) and not any(
                p.kind in (p.VAR_POSITIONAL,) for p in sig_params.values()):
            pass
    except (TypeError, ValueError):
        pass

    @functools.wraps(fun)
    def vg(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad")
        dyn = tuple(args[i] for i in nums)
        d_leaves, d_tree = tree_flatten(dyn)
        for x in d_leaves:
            _check_leaf(x, "grad")
        _check_grad_inputs(d_leaves, allow_int, holomorphic)
        store = []

        def flat(*leaves):
            new = list(args)
            for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
                new[i] = v
            out = fun(*new, **kwargs)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise TypeError("has_aux=True requires the function to return a pair "
                                    f"(output, auxiliary data), got {type(out).__name__}")
                out, aux = out
                store.append(aux)
            _check_leaf(out, "grad")
            aval = get_aval(out)
            if aval.shape != ():
                raise TypeError(f"Gradient only defined for scalar-output functions. Output "
                                f"had shape: {aval.shape}.")
            if holomorphic:
                if aval.dtype.kind != "c":
                    raise TypeError(f"grad with holomorphic=True requires outputs with "
                                    f"complex dtype, but got {aval.dtype.name}.")
            elif not dtypes.is_float(aval.dtype):
                raise TypeError(f"grad requires real-valued outputs (output dtype that is a "
                                f"sub-dtype of np.floating), but got {aval.dtype.name}. For "
                                f"holomorphic differentiation, pass holomorphic=True. For "
                                f"differentiation of non-holomorphic functions involving "
                                f"complex outputs, use jax.vjp directly.")
            return [out]

        lin, pullback = _vjp_flat(flat, d_leaves)
        (out,) = lin.primals_out
        aval = lin.out_avals[0]
        one = np.ones((), aval.dtype)
        g = pullback([None if lin.out_zero[0] else one])
        g_tree = tree_unflatten(d_tree, g)
        g_res = g_tree[0] if isinstance(argnums, int) else tuple(g_tree)
        if has_aux:
            return (out, _lower_aux(store[0])), g_res
        return out, g_res

    return vg


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of a scalar function (``jax.grad``): a function returning
    ``∇fun(*args)`` with respect to ``argnums`` (int: one pytree; tuple: a tuple), with
    each gradient leaf shaped and typed like its input; ``(grad, aux)`` with
    ``has_aux``.  Errors as ``value_and_grad``."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def g(*args, **kwargs):
        out, gr = vg(*args, **kwargs)
        if has_aux:
            return gr, out[1]
        return gr
    return g


# ---- Jacobians -----------------------------------------------------------------------

def _std_basis(leaves):
    """For flat inputs, the identity as a stack of tangents: returns (n, per-leaf basis
    arrays of shape (n,) + leaf.shape)."""
    from ..numpy import eye, reshape
    sizes = [int(np.prod(get_aval(x).shape, dtype=np.int64)) for x in leaves]
    n = sum(sizes)
    out, start = [], 0
    for x, s in zip(leaves, sizes):
        a = get_aval(x)
        dt = a.dtype if ad.is_differentiable(a) else np.dtype(np.float32)
        e = eye(n, dtype=dt)[:, start:start + s]
        out.append(reshape(e, (n,) + a.shape))
        start += s
    return n, out


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode, one JVP per input element batched with vmap
    (``jax.jacfwd``).  Output leaves have shape ``out.shape + in.shape``."""
    from .vmap import vmap

    def jac(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        dyn = tuple(args[i] for i in nums)
        d_leaves, d_tree = tree_flatten(dyn)
        if not holomorphic:
            for x in d_leaves:
                if not dtypes.is_float(get_aval(x).dtype):
                    raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is "
                                    f"a sub-dtype of np.floating), but got "
                                    f"{get_aval(x).dtype.name}. For holomorphic "
                                    f"differentiation, pass holomorphic=True.")

        def f_dyn(*leaves):
            new = list(args)
            for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
                new[i] = v
            return fun(*new, **kwargs)

        n, basis = _std_basis(d_leaves)

        def push(*ts):
            res = jvp(f_dyn, tuple(d_leaves), tuple(ts), has_aux=has_aux)
            return res[1:] if has_aux else res[1]

        if has_aux:
            out_p, aux = f_dyn(*d_leaves)
            y = vmap(lambda *ts: jvp(f_dyn, tuple(d_leaves), tuple(ts), has_aux=True)[1],
                     out_axes=-1)(*basis)
        else:
            out_p = None
            y = vmap(push, out_axes=-1)(*basis)
        in_shapes = [get_aval(x).shape for x in d_leaves]

        def split(t):
            # t: out.shape + (n,) -> per input leaf out.shape + in.shape
            outs, start = [], 0
            oshape = get_aval(t).shape[:-1]
            for s in in_shapes:
                k = int(np.prod(s, dtype=np.int64))
                piece = t[..., start:start + k].reshape(oshape + s)
                outs.append(piece)
                start += k
            per = tree_unflatten(d_tree, outs)
            return per[0] if isinstance(argnums, int) else tuple(per)

        jac_tree = tree_map(split, y)
        if has_aux:
            return jac_tree, _lower_aux(aux)
        return jac_tree
    return jac


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian by reverse mode, one VJP per output element batched with vmap
    (``jax.jacrev``).  Output leaves have shape ``out.shape + in.shape``."""
    from .vmap import vmap

    def jac(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        dyn = tuple(args[i] for i in nums)
        d_leaves, d_tree = tree_flatten(dyn)
        _check_grad_inputs(d_leaves, allow_int, holomorphic)

        def f_dyn(*leaves):
            new = list(args)
            for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
                new[i] = v
            return fun(*new, **kwargs)

        if has_aux:
            y, pull, aux = vjp(f_dyn, *d_leaves, has_aux=True)
        else:
            y, pull = vjp(f_dyn, *d_leaves)
        y_leaves, y_tree = tree_flatten(y)
        n, basis = _std_basis(y_leaves)
        cts = vmap(lambda *b: pull(tree_unflatten(y_tree, list(b))))(*basis)
        # cts: per input leaf, shape (n,) + in.shape -> per output leaf out.shape + in.shape
        per_out = []
        start = 0
        for yl in y_leaves:
            ys = get_aval(yl).shape
            k = int(np.prod(ys, dtype=np.int64))
            row = []
            for c in cts:
                cs = get_aval(c).shape[1:]
                row.append(c[start:start + k].reshape(ys + cs))
            start += k
            r = tree_unflatten(d_tree, row)
            per_out.append(r[0] if isinstance(argnums, int) else tuple(r))
        res = tree_unflatten(y_tree, per_out)
        if has_aux:
            return res, _lower_aux(aux)
        return res
    return jac


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Hessian as ``jacfwd(jacrev(fun))`` (``jax.hessian``)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


# ---- custom derivatives -----------------------------------------------------------------

def _top_jvp_trace(leaves):
    top = find_top_trace(leaves)
    return top if isinstance(top, ad.JVPTrace) else None


class custom_jvp:
    """A function with a user-given JVP rule (``jax.custom_jvp``).

    Decorate ``f``, then ``@f.defjvp`` a rule ``jvp(primals, tangents) -> (primal_out,
    tangent_out)``; ``nondiff_argnums`` are passed through unchanged (static Python
    values).  Under differentiation the rule replaces differentiating ``f``.
    """

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        functools.update_wrapper(self, fun)

    def defjvp(self, jvp, symbolic_zeros=False):
        self.jvp = jvp
        return jvp

    def defjvps(self, *fns):
        """One function per argument: ``fn(g, ans, *args) -> tangent contribution``."""
        def rule(primals, tangents):
            ans = self.fun(*primals)
            t = None
            for fn, g in zip(fns, tangents):
                if fn is not None:
                    c = fn(g, ans, *primals)
                    t = c if t is None else tree_map(lambda a, b: a + b, t, c)
            return ans, t
        self.jvp = rule

    def __call__(self, *args, **kwargs):
        if kwargs:
            sig = inspect.signature(self.fun)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using defjvp.")
        nd = set(i % len(args) for i in self.nondiff_argnums) if args else set()
        diff_args = [a for i, a in enumerate(args) if i not in nd]
        leaves, tree = tree_flatten(diff_args)
        trace = _top_jvp_trace(leaves) if leaves else None
        if trace is None:
            return self.fun(*args)

        def lift(x):
            return trace.full_raise(x)
        tracers = [lift(x) for x in leaves]
        primals = tree_unflatten(tree, [t.primal for t in tracers])
        tangents = tree_unflatten(tree, [
            t.tangent if t.tangent is not None else _zero_tangent(get_aval(t.primal))
            for t in tracers])

        nd_vals = [args[i] for i in sorted(nd)]
        out, t_out = self.jvp(*nd_vals, tuple(primals), tuple(tangents))
        o_leaves, o_tree = tree_flatten(out)
        t_leaves, t_tree = tree_flatten(t_out)
        if t_tree != o_tree:
            raise TypeError(f"Custom JVP rule must produce primal and tangent outputs with "
                            f"equal container (pytree) structures, but got {o_tree} and "
                            f"{t_tree}.")
        res = []
        for p, t in zip(o_leaves, t_leaves):
            pa = get_aval(p)
            if ad.is_differentiable(pa):
                t = _as_dtype(t, pa.dtype) if get_aval(t).dtype != pa.dtype else t
                res.append(ad.JVPTracer(trace, p, t))
            else:
                res.append(ad.JVPTracer(trace, p, None))
        return tree_unflatten(o_tree, res)


class custom_vjp:
    """A function with a user-given VJP (``jax.custom_vjp``).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals,
    cotangent) -> tuple of cotangents, one per (differentiable) argument``.  Forward-mode
    differentiation of such a function raises TypeError, as in JAX.
    """

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        if kwargs:
            sig = inspect.signature(self.fun)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using defvjp.")
        nd = sorted(set(i % len(args) for i in self.nondiff_argnums)) if args else []
        diff_pos = [i for i in range(len(args)) if i not in nd]
        leaves, tree = tree_flatten([args[i] for i in diff_pos])
        trace = _top_jvp_trace(leaves) if leaves else None
        if trace is None:
            return self.fun(*args)
        tracers = [trace.full_raise(x) for x in leaves]
        primal_args = list(args)
        for i, v in zip(diff_pos, tree_unflatten(tree, [t.primal for t in tracers])):
            primal_args[i] = v
        out, res = self.fwd(*primal_args)
        o_leaves, o_tree = tree_flatten(out)
        res_leaves, res_tree = tree_flatten(res)
        tangents = [t.tangent for t in tracers]
        if all(t is None for t in tangents):
            return tree_unflatten(o_tree, [ad.JVPTracer(trace, p, None) for p in o_leaves])
        in_avals = [get_aval(t.primal) for t in tracers]
        ts = [ad.instantiate(t, a.strip_weak_type()) if ad.is_differentiable(a) else
              ad.zeros(ShapedArray(a.shape, np.float32)) for t, a in zip(tangents, in_avals)]
        bwd, nd_vals = self.bwd, [args[i] for i in nd]

        def run_bwd(res_vals, cts):
            r = tree_unflatten(res_tree, list(res_vals))
            ct = tree_unflatten(o_tree, list(cts))
            got = bwd(*nd_vals, r, ct) if nd_vals else bwd(r, ct)
            if not isinstance(got, (tuple, list)):
                raise TypeError(f"Custom VJP bwd rule must produce a tuple, got "
                                f"{type(got).__name__}")
            if len(got) != len(diff_pos):
                raise TypeError(f"Custom VJP bwd rule must produce a tuple with one entry "
                                f"per differentiable argument ({len(diff_pos)}), got "
                                f"{len(got)}")
            g_leaves = []
            for g, a in zip(got, [args[i] for i in diff_pos]):
                a_leaves, _ = tree_flatten(a)
                g_leaves.extend([None] * len(a_leaves) if g is None else tree_flatten(g)[0])
            return g_leaves

        from ..primitives.control import custom_lin_p
        out_avals = tuple(get_aval(p) for p in o_leaves)
        t_out = custom_lin_p.bind(*res_leaves, *ts, num_res=len(res_leaves), bwd=run_bwd,
                                  out_avals=out_avals,
                                  in_avals=tuple(a.strip_weak_type() for a in in_avals))
        return tree_unflatten(o_tree, [ad.JVPTracer(trace, p, t if ad.is_differentiable(
            get_aval(p)) else None) for p, t in zip(o_leaves, t_out)])


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """``fun`` whose reverse-mode residuals are only its inputs: the forward pass is
    recomputed during the backward pass (``jax.checkpoint`` / ``jax.remat``)."""
    from ..core.staging import trace_to_jaxpr
    from ..primitives.control import remat_p

    @functools.wraps(fun)
    def wrapped(*args):
        leaves, in_tree = tree_flatten(args)
        store = []
        flat = _flat_fun(fun, in_tree, store)
        closed = trace_to_jaxpr(flat, [get_aval(x) for x in leaves])
        from ..ir.jaxpr import hoist_consts
        body, consts = hoist_consts(closed)
        outs = remat_p.bind(*consts, *leaves, jaxpr=body, prevent_cse=prevent_cse)
        return tree_unflatten(_store(store, "tree"), outs)
    return wrapped


remat = checkpoint


def closure_convert(fun, *example_args):
    """``(fun, [])``: closed-over values stay closed over (``jax.closure_convert``)."""
    return fun, []
