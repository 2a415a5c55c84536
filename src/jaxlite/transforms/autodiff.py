"""Differentiation API: ``jvp``, ``linearize``, ``vjp``, ``grad``, ``value_and_grad``,
``jacfwd``, ``jacrev``, ``hessian``, ``custom_jvp``, ``custom_vjp``, ``checkpoint``.

Layer: transforms.  Forward mode runs ``core.ad.JVPTrace``; reverse mode linearises
(``core.ad.linearize_flat``: the tangent computation staged into a linear jaxpr whose
constants are the residuals) and transposes that jaxpr (``core.ad.backward_pass``).
"""
from __future__ import annotations

import functools
import inspect
import weakref

import numpy as np

from .. import dtypes, errors
from .._traceback import api_boundary as _api_boundary
from ..core import ad, batching
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.trace import EvalTrace, Tracer, find_top_trace, get_aval
from ..primitives.control import custom_jvp_call_p, custom_vjp_call_p
from ..tree_util import data_flatten as tree_flatten, data_map as tree_map, tree_unflatten

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev",
           "hessian", "custom_jvp", "custom_vjp", "checkpoint", "remat", "closure_convert"]


def _check_callable(fun, name):
    if not callable(fun):
        raise TypeError(f"{name} needs a callable as its function argument; "
                        f"{fun!r} is not callable")


def _check_leaf(x, what):
    if isinstance(x, np.ndarray) and x.dtype == dtypes.float0:
        return
    try:
        get_aval(x)
    except TypeError:
        raise TypeError(f"Argument {x!r} of type {type(x)} cannot be used as an array "
                        f"({what})") from None


def _leaf_aval(x):
    """Abstract value of a leaf; float0 NumPy arrays (tangents of integers) included."""
    if isinstance(x, np.ndarray) and x.dtype == dtypes.float0:
        return ShapedArray(x.shape, dtypes.float0)
    return get_aval(x)


def _to_array(x):
    """``x`` as an Array when it is a host value (NumPy or Python scalar)."""
    if x is None or isinstance(x, (Array, Tracer)) or \
            getattr(x, "dtype", None) == dtypes.float0:
        return x
    from ..core.eager import from_host
    aval = get_aval(x)
    return from_host(x, aval.dtype, aval.weak_type)


def _like_aval(x, aval):
    """``x`` (a tangent/cotangent of ``aval``'s dtype) given ``aval``'s weak type, as JAX
    returns derivatives typed like the values they belong to."""
    if x is None or not ad.is_differentiable(aval):
        return x
    xa = get_aval(x)
    if xa.dtype == aval.dtype and xa.weak_type == aval.weak_type:
        return x
    from ..primitives.elementwise import convert_element_type_p
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _check_aux_pair(out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"with has_aux=True the function has to return a pair (output, aux); "
                        f"it returned {type(out)}: {out!r}")


def _dtype_str(dt):
    return "float0" if dt == dtypes.float0 else np.dtype(dt).name


def _tangent_dtype(aval):
    return aval.dtype if ad.is_differentiable(aval) else dtypes.float0


def _zero_tangent(aval):
    if ad.is_differentiable(aval):
        if not aval.shape:
            # a scalar zero is a constant (a literal in a traced program, as JAX's),
            # typed like its primal
            from ..core.eager import from_host
            return from_host(np.zeros((), aval.dtype), aval.dtype, aval.weak_type)
        return ad.zeros(aval.strip_weak_type())
    return ad.float0_zeros(aval)


# A typed PRNG key array is a node around its uint32 key data in the data view of pytrees
# used here (tree_util.data_flatten); to users it is one leaf, whose tangent and cotangent
# are float0 zeros of the key array's shape (rebuilding a key node over float0 data gives
# that already: random/_keys.py).  The two helpers convert between the two forms where
# tangent trees meet the user.

def _may_hold_keys(leaves) -> bool:
    """Whether flat ``leaves`` may come from a key array (its data is uint32[..., 2])."""
    return any(getattr(x, "dtype", None) == np.uint32 and len(getattr(x, "shape", ())) > 0
               for x in leaves)


def _keys_as_float0(tree):
    """``tree`` (tangents or cotangents) with each key-array node, which wraps float0 zeros
    of its data's shape, replaced by float0 zeros of the key array's own shape (JAX)."""
    from ..tree_util import is_data_node as is_key
    return tree_map(lambda v: np.zeros(v.shape, dtypes.float0) if is_key(v) else v, tree,
                    is_leaf=is_key)


def _keys_from_float0(primals, tangents, what="jax.jvp"):
    """The inverse for a user's ``tangents`` of ``primals``: a float0 tangent of a key
    array becomes a node of the primal's structure, so the two trees flatten alike.
    A tangent of a key array of another dtype (TypeError) or shape (ValueError) is refused
    here, naming the key dtype and shape (JAX); anything else is left as it is (the
    caller's checks name a mismatch of structure or of other leaves)."""
    from ..tree_util import is_data_node as is_key
    refused = []
    noun = "cotangent" if "vjp" in what else "tangent"

    def fix(p, t):
        if not is_key(p) or is_key(t) or not hasattr(t, "dtype") or not hasattr(t, "shape"):
            return t
        shape = tuple(np.shape(t))
        if t.dtype != dtypes.float0:
            refused.append(TypeError(
                f"{what}: the {noun} of a key array (dtype {p.dtype}) must have dtype "
                f"float0, got a {noun} of dtype {_dtype_str(t.dtype)}"))
        elif shape != tuple(p.shape):
            refused.append(ValueError(
                f"{what}: the {noun} of a key array of shape {tuple(p.shape)} must have "
                f"that shape, got float0{list(shape)}"))
        else:
            # a node of the primal's implementation (its key data's trailing shape)
            return p._with_data(np.zeros(tuple(p._base.shape), dtypes.float0))
        return t
    try:
        fixed = tree_map(fix, primals, tangents, is_leaf=is_key)
    except (ValueError, TypeError):
        fixed = tangents
    if refused:
        raise refused[0]
    return fixed


def _flat_fun(fun, in_tree, out_store, has_aux=False):
    def flat(*leaves):
        args = tree_unflatten(in_tree, list(leaves))
        out = fun(*args)
        if has_aux:
            _check_aux_pair(out)
            out, aux = out
            out_store.append(("aux", (aux, _own_mains(leaves))))
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


def _own_mains(leaves) -> frozenset:
    """The main traces of the tracers a transformation made of its inputs ``leaves``."""
    return frozenset(x._trace.main for x in leaves if isinstance(x, ad.JVPTracer))


def _lower_aux(aux_mains):
    """Auxiliary outputs ``(aux, mains)`` leave the transformation as plain values: a
    value of this transformation's own traces (``mains``) gives its primal, while one of an
    enclosing transformation stays its tracer, so an outer ``grad`` still differentiates an
    aux that depends on its input (JAX)."""
    from ..core.trace import full_lower
    aux, mains = aux_mains

    def low(x):
        while isinstance(x, ad.JVPTracer) and x._trace.main in mains:
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
        raise TypeError(f"jax.jvp takes its primals and tangents as tuples or lists, not "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    keys = _may_hold_keys(p_leaves)
    if keys:
        tangents = _keys_from_float0(tuple(primals), tuple(tangents))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"jax.jvp: the tangents' pytree structure {t_tree} differs from "
                        f"the primals' structure {p_tree}.")
    for p, t in zip(p_leaves, t_leaves):
        _check_leaf(p, "jvp primal")
        _check_leaf(t, "jvp tangent")
        pa = get_aval(p)
        ta_dtype = _leaf_aval(t).dtype
        want = _tangent_dtype(pa)
        if ta_dtype != want and (ta_dtype == dtypes.float0 or
                                 dtypes.canonicalize_dtype(ta_dtype) != want):
            raise TypeError(f"jax.jvp: tangent dtype {_dtype_str(ta_dtype)} does not fit primal "
                            f"dtype {pa.dtype.name}; the tangent must have dtype "
                            f"{_dtype_str(want)} (a tangent has its primal's dtype, and "
                            f"int/bool primals take float0 tangents).")
        if tuple(np.shape(t)) != pa.shape:
            raise ValueError(f"jax.jvp: primal shape {pa.shape} and tangent shape "
                             f"{tuple(np.shape(t))} differ")
    # host values enter as Arrays (JAX places them first), so an output that is an input
    # unchanged (an identity) comes back as an Array, as in JAX
    p_leaves = [_to_array(p) for p in p_leaves]
    t_in = [_to_array(t) if ad.is_differentiable(get_aval(p)) else None
            for p, t in zip(p_leaves, t_leaves)]
    store = []
    flat = _flat_fun(fun, p_tree, store, has_aux)
    p_out, t_out = ad.jvp_flat(flat, p_leaves, t_in)
    out_tree = _store(store, "tree")
    t_out = [_like_aval(_zero_tangent(get_aval(p)) if t is None else t, get_aval(p))
             for p, t in zip(p_out, t_out)]
    t_res = tree_unflatten(out_tree, t_out)
    res = (tree_unflatten(out_tree, p_out),
           _keys_as_float0(t_res) if _may_hold_keys(p_out) else t_res)
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
    keys, out_keys = _may_hold_keys(p_leaves), _may_hold_keys(lin.primals_out)
    from ..ir.interpret import eval_jaxpr
    key_primals = tuple(primals) if keys else None      # only their structure
    prog = _program_of(lin)

    def f_jvp(consts, *tangents):
        lin = prog
        if keys:
            tangents = _keys_from_float0(key_primals, tuple(tangents),
                                         "the function returned by linearize")
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise TypeError(f"the function returned by linearize takes tangents with pytree "
                            f"structure {p_tree}, got {t_tree}")
        for t, a in zip(t_leaves, lin.in_avals):
            ta = _leaf_aval(t)
            if ta.shape != a.shape or (ta.dtype != _tangent_dtype(a) and (
                    ta.dtype == dtypes.float0 or
                    dtypes.canonicalize_dtype(ta.dtype) != _tangent_dtype(a))):
                raise ValueError(f"the function returned by linearize got a tangent that does not "
                                 f"fit its primal: tangent "
                                 f"{_dtype_str(ta.dtype)}{list(ta.shape)} for primal "
                                 f"{a.str_short()}, expected "
                                 f"{_dtype_str(_tangent_dtype(a))}{list(a.shape)}")
        ins = [_as_dtype(t, a.dtype) for t, a, m in zip(t_leaves, lin.in_avals, lin.in_mask)
               if m]
        outs = iter(eval_jaxpr(lin.jaxpr, consts, *ins))
        res = [_like_aval(_zero_tangent(a) if z else next(outs), a)
               for a, z in zip(lin.out_avals, lin.out_zero)]
        res = tree_unflatten(out_tree, res)
        return _keys_as_float0(res) if out_keys else res

    out = tree_unflatten(out_tree, lin.primals_out)
    f_jvp = _residual_partial(f_jvp, lin.consts)
    if has_aux:
        return out, f_jvp, _lower_aux(_store(store, "aux"))
    return out, f_jvp


def _residual_partial(fun, residuals):
    """``fun`` (which takes the residuals first) with ``residuals`` bound, as a
    ``tree_util.Partial``: the residuals are its pytree leaves, so the function that
    ``vjp``/``linearize``/``linear_transpose`` return can be passed into or returned from
    ``jit`` and mapped over by ``vmap``, as JAX's can."""
    from ..tree_util import Partial
    return Partial(_api_boundary(fun), list(residuals))


# ---- reverse mode ---------------------------------------------------------------------

def _program_of(lin):
    """``lin`` without its residuals and primal outputs: what the function ``vjp`` or
    ``linearize`` returns keeps in its closure, which a jit cache key may hold (the
    residuals travel as the function's pytree leaves instead)."""
    return ad.LinearizeResult((), lin.jaxpr, (), lin.in_mask, lin.in_avals, lin.out_avals,
                              lin.out_zero)


def _vjp_flat(flat, p_leaves):
    """Linearises ``flat`` at ``p_leaves``: ``(lin, pullback)``, where
    ``pullback(ct_leaves, consts)`` runs the transposed program on the residuals
    ``consts`` (``lin.consts``, or the same values traced)."""
    lin = ad.linearize_flat(flat, p_leaves)
    prog = _program_of(lin)

    def pullback(ct_leaves, consts):
        lin = prog
        cts = [c for c, z in zip(ct_leaves, lin.out_zero) if not z]
        args = [ad.UndefinedPrimal(a.strip_weak_type())
                for a, m in zip(lin.in_avals, lin.in_mask) if m]
        got = iter(ad.backward_pass(lin.jaxpr, consts, args, cts))
        out = []
        for p, a, m in zip(p_leaves, lin.in_avals, lin.in_mask):
            if m:
                c = next(got)
                if batching.spmd_levels:     # inside a shard_map: shared primals sum
                    c = batching.spmd_cotangent(p, c)
                out.append(_like_aval(_zero_tangent(a) if c is None else c, a))
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

    out = tree_unflatten(out_tree, lin.primals_out)
    keys = _may_hold_keys(p_leaves)
    key_outs = out if _may_hold_keys(lin.primals_out) else None   # only their structure
    prog = _program_of(lin)

    def f_vjp(consts, ct):
        lin = prog
        if key_outs is not None:
            ct = _keys_from_float0(key_outs, ct, "the function returned by vjp")
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise ValueError(f"unexpected tree structure of the cotangent passed to the VJP "
                             f"function: got {ct_tree}, but the differentiated function's "
                             f"output has structure {out_tree}")
        for i, (c, a) in enumerate(zip(ct_leaves, lin.out_avals)):
            _check_leaf(c, "vjp cotangent")
            ca = _leaf_aval(c)
            want = _tangent_dtype(a)
            if ad.is_differentiable(a):
                ok = dtypes.canonicalize_dtype(ca.dtype) == want if ca.dtype != \
                    dtypes.float0 else False
            else:
                ok = ca.dtype == dtypes.float0 or not dtypes.is_inexact(ca.dtype)
            if ca.shape != a.shape or not ok:
                raise ValueError(f"cotangent leaf {i} given to the VJP function is "
                                 f"{_dtype_str(ca.dtype)}{list(ca.shape)}; it has to be "
                                 f"{_dtype_str(want)}{list(a.shape)} to match output leaf "
                                 f"{i} of the differentiated function, of type "
                                 f"{a.str_short()}")
        ct_leaves = [_as_dtype(c, a.dtype) if ad.is_differentiable(a) else None
                     for c, a in zip(ct_leaves, lin.out_avals)]
        g = tree_unflatten(p_tree, pullback(ct_leaves, consts))
        return _keys_as_float0(g) if keys else g

    f_vjp = _residual_partial(f_vjp, lin.consts)
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
            raise TypeError(f"argnums={argnums} names positional argument {max(nums)}, so at "
                            f"least {max(nums) + 1} positional arguments are needed; the call "
                            f"passed {nargs}.")
    out = tuple(int(i) % nargs for i in nums)
    if len(set(out)) != len(out):
        # JAX fails here too (with an internal TypeError); a repeated argument would get
        # only part of its gradient
        raise TypeError(f"{name}: argnums={argnums} names an argument more than once")
    return out


def _real_output_error(name, dt):
    if dt.kind == "c":
        raise TypeError(f"{name} differentiates real (floating) outputs only; this output "
                        f"has dtype {dt.name}. Pass holomorphic=True if the function is "
                        f"holomorphic; otherwise call jax.vjp on it yourself.")
    raise TypeError(f"{name} differentiates real (floating) outputs only; this output "
                    f"has dtype {dt.name}. For an integer-valued output call jax.vjp "
                    f"yourself.")


def _check_grad_inputs(leaves, allow_int, holomorphic, name="grad", tree=None):
    """TypeError for an input ``grad`` cannot differentiate; ``leaves`` are the data view's
    of ``tree``, whose key arrays the message names by their key dtype (``key<fry>``)."""
    def shown(i, dt):
        if tree is None:
            return dt.name
        from ..tree_util import tree_leaves as public_leaves
        return str(getattr(public_leaves(tree)[i], "dtype", dt.name))

    for i, x in enumerate(leaves):
        dt = get_aval(x).dtype
        if holomorphic:
            if dt.kind != "c":
                raise TypeError(f"{name}(holomorphic=True) takes complex inputs only; got an "
                                f"input of dtype {shown(i, dt)}.")
        elif not dtypes.is_inexact(dt) and not allow_int:
            raise TypeError(f"{name} differentiates with respect to floating or complex "
                            f"inputs only; got an input of dtype {shown(i, dt)}. Set "
                            f"allow_int=True (or call vjp) to accept integer or boolean "
                            f"inputs.")


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """``(fun(*args), ∇fun(*args))`` with respect to ``argnums`` (``jax.value_and_grad``).

    ``fun`` must return a real scalar (or ``(scalar, aux)`` with ``has_aux``).
    Raises TypeError for a non-scalar or non-float output (naming its shape or dtype),
    and for integer inputs unless ``allow_int``.  A non-empty ``reduce_axes`` raises
    NotImplementedError (JAX dropped it).
    """
    _check_callable(fun, "value_and_grad")
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to grad is deprecated")
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
        _check_grad_inputs(d_leaves, allow_int, holomorphic, tree=dyn)
        store = []

        def flat(*leaves):
            new = list(args)
            for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
                new[i] = v
            out = fun(*new, **kwargs)
            if has_aux:
                _check_aux_pair(out)
                out, aux = out
                store.append((aux, _own_mains(leaves)))
            if isinstance(out, (tuple, list, dict)) or out is None:
                shown = tree_map(lambda x: x.primal if isinstance(x, ad.JVPTracer) else x,
                                 out)
                raise TypeError(f"Gradient only defined for scalar-output functions. "
                                f"Output was {shown}.")
            _check_leaf(out, "grad output")
            aval = get_aval(out)
            if aval.shape != ():
                raise TypeError(f"Gradient only defined for scalar-output functions. "
                                f"Output had shape: {aval.shape}.")
            if holomorphic:
                if aval.dtype.kind != "c":
                    raise TypeError(f"grad(holomorphic=True) takes complex outputs only; got "
                                    f"an output of dtype {aval.dtype.name}.")
            elif not dtypes.is_float(aval.dtype):
                _real_output_error("grad", aval.dtype)
            return [out]

        lin, pullback = _vjp_flat(flat, d_leaves)
        (out,) = lin.primals_out
        aval = lin.out_avals[0]
        # the seed has the output's weak type, as JAX's (so the gradient of a weakly typed
        # output needs no conversion at the end)
        from ..core.eager import from_host
        one = from_host(np.ones((), aval.dtype), aval.dtype, aval.weak_type)
        # a cotangent that passes straight through (grad of an identity) is the seed
        # itself: it comes back as an Array, as in JAX
        g = [_to_array(c) for c in pullback([None if lin.out_zero[0] else one],
                                            lin.consts)]
        g_tree = tree_unflatten(d_tree, g)
        if _may_hold_keys(d_leaves):
            g_tree = _keys_as_float0(g_tree)
        g_res = g_tree[0] if isinstance(argnums, int) else tuple(g_tree)
        if has_aux:
            return (out, _lower_aux(store[0])), g_res
        return out, g_res

    return _api_boundary(vg)


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of a scalar function (``jax.grad``): a function returning
    ``∇fun(*args)`` with respect to ``argnums`` (int: one pytree; tuple: a tuple), with
    each gradient leaf shaped and typed like its input; ``(grad, aux)`` with
    ``has_aux``.  Errors as ``value_and_grad``."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def g(*args, **kwargs):
        out, gr = vg(*args, **kwargs)
        if has_aux:
            return gr, out[1]
        return gr
    return _api_boundary(g)


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


def _with_dynamic(fun, args, kwargs, nums, d_tree):
    """``fun`` as a function of the leaves of the arguments at positions ``nums`` (the
    others, and ``kwargs``, fixed)."""
    def f_dyn(*leaves):
        new = list(args)
        for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
            new[i] = v
        return fun(*new, **kwargs)
    return f_dyn


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode, one JVP per input element batched with vmap
    (``jax.jacfwd``).  Output leaves have shape ``out.shape + in.shape``."""
    from .vmap import vmap

    def jac(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        dyn = tuple(args[i] for i in nums)
        d_leaves, d_tree = tree_flatten(dyn)
        for x in d_leaves:
            _check_leaf(x, "jacfwd")
            dt = get_aval(x).dtype
            if holomorphic and dt.kind != "c":
                raise TypeError(f"jacfwd(holomorphic=True) takes complex inputs only; got an "
                                f"input of dtype {dt.name}.")
            if not holomorphic and not dtypes.is_float(dt):
                raise TypeError(f"jacfwd differentiates with respect to real (floating) inputs "
                                f"only; got an input of dtype {dt.name}. Pass "
                                f"holomorphic=True for a holomorphic function; for other "
                                f"complex or integer inputs call jax.jvp yourself.")

        f_dyn = _with_dynamic(fun, args, kwargs, nums, d_tree)

        n, basis = _std_basis(d_leaves)

        def push(*ts):
            res = jvp(f_dyn, tuple(d_leaves), tuple(ts), has_aux=has_aux)
            # integer outputs: a zero Jacobian of the output's dtype (JAX), not float0
            jac = tree_map(lambda p, t: ad.zeros(get_aval(p).strip_weak_type())
                           if not ad.is_differentiable(get_aval(p)) else t, res[0], res[1])
            return (jac, res[2]) if has_aux else jac

        if has_aux:
            # one run of ``fun``; its aux is the same for every basis tangent
            y, aux = vmap(push, out_axes=(-1, None))(*basis)
        else:
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
            return jac_tree, aux
        return jac_tree
    return _api_boundary(jac)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian by reverse mode, one VJP per output element batched with vmap
    (``jax.jacrev``).  Output leaves have shape ``out.shape + in.shape``."""
    from .vmap import vmap

    def jac(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        dyn = tuple(args[i] for i in nums)
        d_leaves, d_tree = tree_flatten(dyn)
        for x in d_leaves:
            _check_leaf(x, "jacrev")
        _check_grad_inputs(d_leaves, allow_int, holomorphic, "jacrev", dyn)

        f_dyn = _with_dynamic(fun, args, kwargs, nums, d_tree)

        if has_aux:
            y, pull, aux = vjp(f_dyn, *d_leaves, has_aux=True)
        else:
            y, pull = vjp(f_dyn, *d_leaves)
        y_leaves, y_tree = tree_flatten(y)
        for yl in y_leaves:
            dt = get_aval(yl).dtype
            if holomorphic and dt.kind != "c":
                raise TypeError(f"jacrev(holomorphic=True) takes complex outputs only; got an "
                                f"output of dtype {dt.name}.")
            if not holomorphic and not dtypes.is_float(dt):
                _real_output_error("jacrev", dt)
        n, basis = _std_basis(y_leaves)

        def row_of(*b):
            # an integer input's (allow_int) float0 cotangent comes out as zeros of the
            # input's dtype, as JAX's batched float0 zeros do
            return [np.zeros(np.shape(x), get_aval(x).dtype)
                    if getattr(c, "dtype", None) == dtypes.float0 else c
                    for c, x in zip(pull(tree_unflatten(y_tree, list(b))), d_leaves)]
        cts = vmap(row_of)(*basis)
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
            return res, aux
        return res
    return _api_boundary(jac)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Hessian as ``jacfwd(jacrev(fun))`` (``jax.hessian``)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


# ---- custom derivatives -----------------------------------------------------------------

def _fun_name(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


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
        fun = self.fun
        # the primal output comes from the custom function itself (staged as its own call,
        # as JAX's defjvps rule computes it); held weakly: the rule may outlive it in a
        # cached equation, and then computes it with the plain function
        me = weakref.ref(self)

        def jvp(primals, tangents):     # (named as JAX's rule is: programs print it)
            custom = me()
            ans = (fun if custom is None else custom)(*primals)
            t = None
            for fn, g in zip(fns, tangents):
                if fn is not None:
                    c = fn(g, ans, *primals)
                    t = c if t is None else tree_map(lambda a, b: a + b, t, c)
            return ans, t
        self.jvp = jvp

    @_api_boundary      # a traceback boundary (_traceback.py), as the transformations
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
        diff_pos = [i for i in range(len(args)) if i not in nd]
        leaves, tree = tree_flatten([args[i] for i in diff_pos])
        top = find_top_trace(leaves)
        if isinstance(top, EvalTrace):
            return _call_eagerly(self.fun, args, "custom_jvp")
        nd_vals = [args[i] for i in sorted(nd)]
        user_jvp = self.jvp
        out_trees = []
        # the rule names the function, never holds it: an equation carrying the rule may
        # live in a cache kept by the function's identity (jit's), which must let it die
        fun_name = getattr(self.fun, '__name__', 'the function')

        def jvp_flat(primals, tangents):
            ps = tree_unflatten(tree, list(primals))
            ts = tree_unflatten(tree, list(tangents))
            if _may_hold_keys(primals):
                ts = _keys_as_float0(ts)
            got = user_jvp(*nd_vals, tuple(ps), tuple(ts))
            if not (isinstance(got, (tuple, list)) and len(got) == 2):
                raise TypeError(f"Custom JVP rule {getattr(user_jvp, '__name__', 'jvp')} for "
                                f"function {fun_name} must produce a pair (list or tuple of "
                                f"length two) representing primal and tangent outputs, but "
                                f"got {got}.")
            out, t_out = got
            o_leaves, o_tree = tree_flatten(out)
            if _may_hold_keys(o_leaves):
                t_out = _keys_from_float0(out, t_out, "a custom JVP rule's tangent output")
            t_leaves, t_tree = tree_flatten(t_out)
            out_trees.append(o_tree)
            if t_tree != o_tree:
                raise TypeError(f"Custom JVP rule {getattr(user_jvp, '__name__', 'jvp')} "
                                f"for function {fun_name} must produce primal and tangent "
                                f"outputs with equal container (pytree) structures, but got "
                                f"{o_tree} and {t_tree} respectively.")
            fixed = []
            for p, t in zip(o_leaves, t_leaves):
                pa = get_aval(p)
                ta = get_aval(t)
                want = _tangent_dtype(pa)
                if ta.shape != pa.shape or (ta.dtype != want and not (
                        ta.weak_type and ad.is_differentiable(pa) and
                        ad.is_differentiable(ta))):
                    want_t = ShapedArray(pa.shape, want)
                    raise TypeError(
                        f"Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {want_t._type_str()} "
                        f"(tangent type of {pa._type_str()}) but got {ta._type_str()}.")
                if ad.is_differentiable(pa) and (ta.dtype != pa.dtype or
                                                 not isinstance(t, (Tracer, Array))):
                    t = _as_dtype(t, pa.dtype)
                fixed.append(t)
            return o_leaves, fixed

        if isinstance(top, ad.JVPTrace):
            return _under_jvp(self, top, custom_jvp_call_p, dict(jvp=jvp_flat), args,
                              diff_pos, tree, leaves, out_trees)
        closed, consts, out_tree = _trace_call(self.fun, args, diff_pos, tree, leaves)
        # the equation names the function and its rule, as JAX prints them
        jvp_flat.__name__ = getattr(user_jvp, "__name__", "jvp")
        outs = custom_jvp_call_p.bind(*consts, *leaves, jaxpr=closed, num_consts=len(consts),
                                      jvp=jvp_flat, name=_fun_name(self.fun))
        return tree_unflatten(out_tree, outs)


def _call_eagerly(fun, args, what):
    """Runs a custom function whose operands are concrete outside any staging: its
    rule is not needed.  An output that carries a tangent means the function closed over
    a value being differentiated, which its rule could not see: an error, as in JAX."""
    out = fun(*args)
    for leaf in tree_flatten(out)[0]:
        if isinstance(leaf, ad.JVPTracer) and leaf.tangent is not None:
            raise errors.UnexpectedTracerError(
                f"a {what} function closes over a value that is being differentiated; its "
                f"rule cannot see that value's tangent. Pass the value as an explicit "
                f"argument of the function (or use jax.closure_convert).")
    return out


def _bwd_leaves(got, diff_args) -> list:
    """The flat cotangents a custom_vjp ``bwd`` rule returned for ``diff_args`` (None
    where it gave None for a whole argument or subtree), checked as JAX checks them: a
    tuple (or list) with the arguments' structure (TypeError naming both structures) and
    each cotangent of its primal's shape (ValueError naming the position)."""
    from ..tree_util import (keystr, data_flatten_with_path as tree_flatten_with_path,
                         data_structure as tree_structure)
    args = tuple(diff_args)
    if isinstance(got, list) and len(got) == len(args):
        got = tuple(got)
    flat = []

    def walk(g, a, path):
        if g is None:
            flat.extend((None, p, v) for p, v in tree_flatten_with_path(a)[0])
            return True
        g_tree, a_tree = tree_structure(g), tree_structure(a)
        if g_tree.num_leaves == 1 and g_tree.num_nodes == 1:
            if a_tree.num_leaves != 1:
                return False
            ((p, v),) = tree_flatten_with_path(a)[0]
            flat.append((g, path + p, v))
            return True
        g_kids, a_kids = g_tree.children(), a_tree.children()
        if (g_tree.node_data() != a_tree.node_data() or type(g) is not type(a)
                or len(g_kids) != len(a_kids)):
            return False
        g_items = tree_flatten_with_path(g, is_leaf=lambda x: x is not g)[0]
        a_items = tree_flatten_with_path(a, is_leaf=lambda x: x is not a)[0]
        return all(walk(gv, av, path + gp) for (gp, gv), (_, av) in zip(g_items, a_items))

    if not (isinstance(got, tuple) and walk(got, args, ())):
        raise TypeError(
            f"Custom VJP bwd rule must produce an output with the same container (pytree) "
            f"structure as the args tuple of the primal function, and in particular must "
            f"produce a tuple of length equal to the number of arguments to the primal "
            f"function, but got bwd output structure {tree_structure(got)} for primal input "
            f"structure {tree_structure(args)}.")
    for g, path, a in flat:
        if g is None:
            continue
        pa = get_aval(a)
        if not ad.is_differentiable(pa):       # (its cotangent may be float0 zeros)
            continue
        ga = get_aval(g)
        if ga.shape != pa.shape:
            raise ValueError(
                f"Custom VJP bwd rule must produce an output with the same type as the args "
                f"tuple of the primal function, but at output{keystr(path)} the bwd rule "
                f"produced an output of type {ga._type_str()} corresponding to an input of "
                f"type {pa._type_str()}, so the shapes do not match")
    return [g for g, _, _ in flat]


def _check_fwd_output(fun, fwd, o_tree, o_leaves, want_tree, want_avals):
    """TypeError when a custom_vjp ``fwd`` rule's primal output differs in structure,
    shape or dtype from the (traced) function's output, as JAX checks."""
    got = [get_aval(x) for x in o_leaves]
    if o_tree == want_tree and all(
            g.shape == w.shape and g.dtype == w.dtype for g, w in zip(got, want_avals)):
        return
    raise TypeError(
        f"custom_vjp fwd rule {getattr(fwd, '__name__', fwd)} of "
        f"{getattr(fun, '__name__', fun)} returned a primal output of structure {o_tree} "
        f"and types [{', '.join(a.str_short() for a in got)}]; the function itself returns "
        f"structure {want_tree} and types [{', '.join(a.str_short() for a in want_avals)}]. "
        f"fwd must return (output of the function, residuals).")


def _under_jvp(custom, top, primitive, rules, args, diff_pos, tree, leaves, out_trees):
    """A custom_jvp/custom_vjp call whose top trace is a JVP trace: with every tangent
    zero, the call on the primal values; otherwise the user's rule alone on them
    (``ad.process_custom_rule``).  ``out_trees`` receives the output structure from the
    rule."""
    tracers = [top.full_raise(x) for x in leaves]
    if all(t.tangent is None for t in tracers):
        return custom(*_replace_diff_args(args, diff_pos, tree, [t.primal for t in tracers]))
    what = "custom_jvp" if primitive is custom_jvp_call_p else "custom_vjp"
    outs = ad.process_custom_rule(top, primitive, tracers,
                                  dict(jaxpr=None, num_consts=0, **rules), what)
    return tree_unflatten(out_trees[-1], outs)


def _replace_diff_args(args, diff_pos, tree, leaves):
    """``args`` with its differentiable arguments rebuilt from ``leaves``."""
    full = list(args)
    for i, v in zip(diff_pos, tree_unflatten(tree, list(leaves))):
        full[i] = v
    return full


def _trace_call(fun, args, diff_pos, tree, leaves):
    """Traces ``fun`` as a function of the leaves of its differentiable arguments:
    ``(program with hoisted constants, constants, output tree)``."""
    from ..core.staging import trace_to_jaxpr
    from ..ir.jaxpr import hoist_consts
    store = []

    def flat(*xs):
        full = list(args)
        for i, v in zip(diff_pos, tree_unflatten(tree, list(xs))):
            full[i] = v
        out = fun(*full)
        o_leaves, o_tree = tree_flatten(out)
        store.append(o_tree)
        return o_leaves

    closed = trace_to_jaxpr(flat, [get_aval(x) for x in leaves])
    body, consts = hoist_consts(closed)
    return body, consts, store[0]


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

    @_api_boundary      # a traceback boundary (_traceback.py), as the transformations
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
        diff_args = [args[i] for i in diff_pos]
        leaves, tree = tree_flatten(diff_args)
        top = find_top_trace(leaves)
        if isinstance(top, EvalTrace):
            return _call_eagerly(self.fun, args, "custom_vjp")
        fwd, bwd, nd_vals = self.fwd, self.bwd, [args[i] for i in nd]
        fun = self.fun      # the rules hold the function, never this object (see custom_jvp)
        res_store = []
        out_trees = []
        out_keys = []       # whether the outputs hold key arrays (fwd's, for bwd's cts)
        traced_out = []     # (tree, avals) of the function, when it was traced

        def fwd_flat(primals):
            got = fwd(*_replace_diff_args(args, diff_pos, tree, primals))
            if not (isinstance(got, (tuple, list)) and len(got) == 2):
                f_name, r_name = _fun_name(fun), getattr(fwd, "__name__", "fwd")
                raise TypeError(
                    f"Custom VJP fwd rule {r_name} for function {f_name} must produce a pair "
                    f"(list or tuple of length two) where the first element represents the "
                    f"primal output (equal to those of the custom_vjp-decorated function "
                    f"{f_name}) and the second element represents residuals (i.e. values "
                    f"stored from the forward pass for use on the backward pass), but "
                    f"instead of a pair the fwd rule {r_name} produced {got}.")
            out, res = got
            res_leaves, res_tree = tree_flatten(res)
            res_store.append(res_tree)
            o_leaves, o_tree = tree_flatten(out)
            if traced_out:
                _check_fwd_output(fun, fwd, o_tree, o_leaves, *traced_out[0])
            out_trees.append(o_tree)
            out_keys.append(_may_hold_keys(o_leaves))
            return o_leaves, res_leaves

        def bwd_flat(res_vals, cts):
            r = tree_unflatten(res_store[-1], list(res_vals))
            ct = tree_unflatten(out_trees[-1], list(cts))
            if out_keys[-1]:
                ct = _keys_as_float0(ct)
            got = bwd(*nd_vals, r, ct) if nd_vals else bwd(r, ct)
            return _bwd_leaves(got, diff_args)

        if isinstance(top, ad.JVPTrace):
            return _under_jvp(self, top, custom_vjp_call_p, dict(fwd=fwd_flat, bwd=bwd_flat),
                              args, diff_pos, tree, leaves, out_trees)
        closed, consts, out_tree = _trace_call(self.fun, args, diff_pos, tree, leaves)
        traced_out.append((out_tree, closed.out_avals))
        # the equation names the function and its rules, as JAX prints them
        fwd_flat.__name__ = getattr(fwd, "__name__", "fwd")
        bwd_flat.__name__ = getattr(bwd, "__name__", "bwd")
        outs = custom_vjp_call_p.bind(*consts, *leaves, jaxpr=closed, num_consts=len(consts),
                                      fwd=fwd_flat, bwd=bwd_flat, name=_fun_name(self.fun))
        return tree_unflatten(out_tree, outs)


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """``fun`` whose reverse-mode residuals are only its inputs: the forward pass is
    recomputed during the backward pass (``jax.checkpoint`` / ``jax.remat``).

    The positional arguments named by ``static_argnums`` (an int or a tuple; negative
    counts from the end) are passed to ``fun`` as they are, not traced, so Python may
    branch on them.  ``policy`` is accepted; the whole forward pass is recomputed whatever
    it says (README, known differences)."""
    from ..core.staging import trace_to_jaxpr
    from ..primitives.control import remat_p
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        st = {i % len(args) for i in statics if -len(args) <= i < len(args)}
        fixed = {i: args[i] for i in st}
        dyn = tuple(a for i, a in enumerate(args) if i not in st)

        def call(*dyn_args, **kw):
            it = iter(dyn_args)
            return fun(*(fixed[i] if i in st else next(it) for i in range(len(args))), **kw)

        leaves, in_tree = tree_flatten((dyn, kwargs))
        store = []
        flat = _flat_fun(lambda d, kw: call(*d, **kw), in_tree, store)
        closed = trace_to_jaxpr(flat, [get_aval(x) for x in leaves])
        from ..ir.jaxpr import hoist_consts
        body, consts = hoist_consts(closed)
        outs = remat_p.bind(*consts, *leaves, jaxpr=body, prevent_cse=prevent_cse)
        return tree_unflatten(_store(store, "tree"), outs)
    return _api_boundary(wrapped)


remat = checkpoint


def closure_convert(fun, *example_args):
    """``(fun, [])``: closed-over values stay closed over (``jax.closure_convert``)."""
    return fun, []
