"""More of the differentiation API: ``jacobian`` (``jacrev``'s other name),
``linear_transpose`` and ``custom_gradient``.

Layer: transforms.  ``linear_transpose`` stages the (linear) function into a jaxpr and
transposes it with ``core.ad.backward_pass``, the same transposition reverse mode uses.
``custom_gradient`` is a ``custom_vjp`` whose forward rule is the user's function; the
gradient rule it returns is closure-converted (traced into a jaxpr whose closed-over
values become the residuals), so a second derivative differentiates through it.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from .._traceback import api_boundary as _api_boundary
from ..core import ad
from ..core.avals import ShapedArray
from ..core.staging import trace_to_jaxpr
from ..core.trace import get_aval
from ..ir.interpret import eval_jaxpr
from ..ir.jaxpr import hoist_consts
from ..tree_util import (register_pytree_node, data_flatten as tree_flatten,
                         data_structure as tree_structure, tree_unflatten)
from .autodiff import _residual_partial, custom_vjp, jacrev

__all__ = ["jacobian", "linear_transpose", "custom_gradient"]


def jacobian(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian of ``fun`` by reverse mode: the same as ``jacrev`` (mirrors
    ``jax.jacobian``).  Output leaves have shape ``out.shape + in.shape``; the errors are
    ``jacrev``'s."""
    return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                  allow_int=allow_int)


def _example_aval(x) -> ShapedArray:
    """The abstract value of an example primal: an array, a scalar or anything with
    ``shape`` and ``dtype`` (a ``ShapeDtypeStruct``)."""
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if not hasattr(x, "__jax_array__") and hasattr(x, "shape") and hasattr(x, "dtype") \
            and not isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(x.dtype),
                           bool(getattr(x, "weak_type", False)))
    return get_aval(x)


def _kind(dt) -> str:
    return "inexact" if dtypes.is_inexact(dt) else ("int" if np.dtype(dt).kind in "iu"
                                                      else "other")


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function ``fun`` (mirrors ``jax.linear_transpose``).

    ``primals`` only give the input pytree, shapes and dtypes (arrays, scalars or
    ``ShapeDtypeStruct``s); their values are not used.  The returned function takes a
    cotangent shaped like ``fun``'s output and returns a tuple with one cotangent per
    primal, typed like the primal (dtype and weak type); an input ``fun`` ignores gets
    zeros.  This is the transpose, not the adjoint: complex coefficients are not
    conjugated.  ``fun`` may be affine: an added constant does not change the transpose.

    Raises:
      TypeError: ``fun`` is not callable; the inputs and outputs are not all inexact (or
        all integer); the cotangent's pytree structure, shapes or dtypes differ from
        ``fun``'s output (when the transpose is called).
      NotImplementedError: ``fun`` applies a non-linear primitive (``sin``) to its input,
        naming it; TypeError when a primitive multiplies two linear values (JAX fails
        there with an internal AssertionError).
    """
    if not callable(fun):
        raise TypeError("the first argument must be callable")
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    p_leaves, in_tree = tree_flatten(primals)
    in_avals = [_example_aval(x) for x in p_leaves]
    out_store = []

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        leaves, tree = tree_flatten(out)
        out_store.append(tree)
        return leaves

    closed = trace_to_jaxpr(flat, in_avals)
    out_tree = out_store[0]
    out_avals = closed.out_avals
    in_dts = [a.dtype for a in in_avals]
    out_dts = [a.dtype for a in out_avals]
    kinds = {_kind(d) for d in in_dts + out_dts}
    if not (kinds <= {"inexact"} or kinds <= {"int"}):
        raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                        f"complex], and integer -> integer functions, but got {in_dts} -> "
                        f"{out_dts}.")

    jaxpr = closed.jaxpr    # the closure keeps the program; its constants are the leaves

    def transposed(consts, out_cotangent):
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected "
                            f"{out_tree} but got {ct_tree}")
        ok = len(ct_leaves) == len(out_avals)
        for c, a in zip(ct_leaves, out_avals):
            try:
                ca = get_aval(c)
            except TypeError:
                ok = False
                break
            if ca.shape != a.shape or ca.dtype != a.dtype:
                ok = False
        if not ok:
            raise TypeError(f"cotangent type does not match function output, expected "
                            f"{tuple(out_avals)} but got {ct_leaves}")
        args = [ad.UndefinedPrimal(a) for a in in_avals]
        cts = ad.backward_pass(jaxpr, consts, args, list(ct_leaves))
        out = []
        for c, a in zip(cts, in_avals):
            if c is None:
                c = ad.zeros(a)
            out.append(_retype(c, a))
        return tuple(tree_unflatten(in_tree, out))

    # a Partial over the constants, as vjp's function (passes into and out of jit)
    return _residual_partial(transposed, closed.consts)


def _retype(x, aval):
    """``x`` with ``aval``'s dtype and weak type (a transpose rule may return a value of
    another weak type, or a NumPy value)."""
    from ..primitives.elementwise import convert_element_type_p
    xa = get_aval(x)
    if xa.dtype == aval.dtype and xa.weak_type == aval.weak_type and hasattr(x, "aval"):
        return x
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


class _Static:
    """A pytree node without children: the traced gradient rule travels with the
    residuals as static data (not as operands)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


register_pytree_node(_Static, lambda s: ((), s.value), lambda value, _: _Static(value))


def custom_gradient(fun):
    """A function with a gradient rule given by the function itself (mirrors
    ``jax.custom_gradient``).

    ``fun(*args)`` returns ``(value, vjp)``: ``vjp(cotangent)`` returns a tuple with one
    cotangent per positional argument (a single value is accepted when there is one
    argument).  Called normally, the wrapper returns ``value``; reverse mode (``grad``,
    ``vjp``, ``jacrev``) uses ``vjp``, and a higher derivative differentiates through it
    (values it closes over are residuals).  It is a ``custom_vjp`` function: forward mode
    raises TypeError, keyword arguments raise TypeError.

    Raises:
      TypeError: ``vjp`` returns a tuple whose length differs from the number of
        arguments; ``fun`` does not return a pair.
    """
    # named ``wrapped_fun``, whatever ``fun``'s name, as in JAX
    def wrapped_fun(*args, **kwargs):
        if kwargs:
            raise TypeError(f"The input arguments to the custom_vjp-decorated function "
                            f"wrapped_fun could not be resolved to positional-only "
                            f"arguments: keyword arguments {sorted(kwargs)} are not "
                            f"supported by custom_gradient.")
        return _primal(*args)

    def _split(out):
        try:
            value, rule = out
        except (TypeError, ValueError):
            raise TypeError(f"a custom_gradient function has to return a pair (value, "
                            f"vjp function); it returned {type(out).__name__}") from None
        return value, rule

    @custom_vjp
    def _primal(*args):
        return _split(fun(*args))[0]

    def fwd(*args):
        value, rule = _split(fun(*args))
        v_leaves, v_tree = tree_flatten(value)
        ct_avals = [get_aval(v).strip_weak_type() for v in v_leaves]
        n_args = len(args)

        def rule_flat(*cts):
            got = rule(tree_unflatten(v_tree, list(cts)))
            if n_args == 1 and not isinstance(got, tuple):
                got = (got,)
            if not isinstance(got, (tuple, list)) or len(got) != n_args:
                raise TypeError(
                    f"Custom VJP bwd rule must produce an output with the same container "
                    f"(pytree) structure as the args tuple of the primal function: a tuple "
                    f"of {n_args} entries, one per argument, but got "
                    f"{tree_structure(tuple(got) if isinstance(got, list) else got)}.")
            leaves, tree = tree_flatten(tuple(got))
            store.append(tree)
            return leaves

        store = []
        # closure conversion: values the rule closes over become the residuals
        body, consts = hoist_consts(trace_to_jaxpr(rule_flat, ct_avals))
        return value, (consts, _Static((body, store[0])))

    def bwd(res, ct):
        consts, static = res
        body, g_tree = static.value
        ct_leaves, _ = tree_flatten(ct)
        outs = eval_jaxpr(body.jaxpr, body.consts, *consts, *ct_leaves)
        return tree_unflatten(g_tree, outs)

    _primal.defvjp(fwd, bwd)
    return _api_boundary(wrapped_fun)
