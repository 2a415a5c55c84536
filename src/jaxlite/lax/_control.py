"""Structured control flow (``jax.lax.scan``, ``fori_loop``, ``while_loop``, ``cond``,
``switch``, ``map``, ``associative_scan``).

Layer: lax.  The loop and branch functions are traced once into jaxprs (whatever the trip
count) and staged as one ``scan`` / ``while`` / ``cond`` equation; called outside any
transformation they run the primitive's implementation at once.  Bodies may close over
arrays and over tracers of an enclosing ``jit``: those become leading operands.
``associative_scan`` is a composition of slicing and concatenation (no primitive).
"""
from __future__ import annotations

import inspect
import operator
from types import SimpleNamespace

import numpy as np

from .. import dtypes, errors
from ..core.avals import ShapedArray
from ..core.staging import trace_to_jaxpr
from ..core.trace import Tracer, get_aval
from ..ir.jaxpr import ClosedJaxpr, Jaxpr, Var
from ..primitives import elementwise as _e
from ..ir.jaxpr import hoist_consts
from ..primitives.control_flow import cond_p, scan_p, while_p
from ..tree_util import (keystr, data_flatten as tree_flatten,
                         data_flatten_with_path as tree_flatten_with_path, tree_unflatten)

__all__ = ["scan", "fori_loop", "while_loop", "cond", "switch", "map", "associative_scan"]

_builtin_map = map
_NO_OPERAND = object()   # cond/switch called without ``operand=``


# ---- helpers ----------------------------------------------------------------------------

class _Star:
    def __repr__(self):
        return "*"


def _tree_str(treedef) -> str:
    """A pytree structure with its leaves drawn as ``*``, e.g. ``{'a': *, 'b': (*, *)}``;
    the treedef's own form where a node cannot be shown over stars (a typed key array's
    repr reads its data)."""
    try:
        return repr(tree_unflatten(treedef, [_Star()] * treedef.num_leaves))
    except Exception:  # noqa: BLE001 - only a message is being built
        return str(treedef)


def _leaf_paths(tree, prefix: str):
    try:
        pairs, _ = tree_flatten_with_path(tree)
        return [prefix + keystr(p) for p, _ in pairs]
    except Exception:  # noqa: BLE001 - paths are only for messages
        n = len(tree_flatten(tree)[0])
        return [f"{prefix}[{i}]" for i in range(n)]


def _avals_of(leaves, what: str):
    out = []
    for x in leaves:
        try:
            out.append(get_aval(x))
        except TypeError:
            raise TypeError(f"{what}: value {x!r} of type {type(x).__name__} is not a valid "
                            f"JAX type") from None
    return out


def _ty(a: ShapedArray) -> str:
    """JAX's spelling of a type in control-flow errors: ``float32[3,4]``."""
    name = "bfloat16" if a.dtype == dtypes._BF16 else a.dtype.name
    return f"{name}[{','.join(_builtin_map(str, a.shape))}]"


def _difference(a: ShapedArray, b: ShapedArray) -> str:
    if a.shape != b.shape:
        return "the shapes do not match"
    if a.dtype != b.dtype:
        return "the dtypes do not match"
    return "the weak types do not match"


def _carry_name(f, default: str) -> str:
    """The name of ``f``'s first parameter (how the user calls the carry), for messages."""
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return default
    return params[0] if params else default


def _fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


class _Out:
    """Where a traced function leaves the pytree structure of its output."""
    tree = None


def _trace(fun, in_tree, in_avals, out: _Out, check_out=None):
    """Traces ``fun`` (taking one pytree ``in_tree`` of ``in_avals``) into a jaxpr.
    ``check_out(out_pytree)`` may validate/rearrange the output.  Returns
    ``(closed, consts)`` with the consts hoisted into leading operands."""
    def flat_fun(*args):
        res = fun(tree_unflatten(in_tree, args))
        if check_out is not None:
            res = check_out(res)
        leaves, out.tree = tree_flatten(res)
        return leaves
    closed = trace_to_jaxpr(flat_fun, in_avals)
    return hoist_consts(closed)


def _strong(x, dtype):
    """``x`` converted to ``dtype`` with a strong type (JAX's weak-type promotion of loop
    carries and branch outputs)."""
    aval = get_aval(x)
    if aval.dtype == dtype and not aval.weak_type:
        return x
    if type(x) in (bool, int, float, complex):
        return np.asarray(x, dtype)[()]   # a strong scalar constant, not an equation
    return _e.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _promoted_carry(in_avals, out_avals):
    """Carry leaves that go in weakly typed and come out as another type are promoted (as
    JAX does): returns the new in avals, or None when nothing changes."""
    new, changed = [], False
    for a, b in zip(in_avals, out_avals):
        if a.weak_type and (a.shape != b.shape or a.dtype != b.dtype):
            dt = dtypes.result_type(SimpleNamespace(aval=a), SimpleNamespace(aval=b))
            new.append(ShapedArray(a.shape, dt, False))
            changed = True
        else:
            new.append(a)
    return new if changed else None


def _check_tree(out_tree, in_tree, what):
    if out_tree != in_tree:
        raise TypeError(
            f"{what}: the carry has to keep its pytree structure from input to output, "
            f"but it goes in as {_tree_str(in_tree)} and comes out as "
            f"{_tree_str(out_tree)}.")


def _check_carry(what, names, in_tree, out_tree, in_avals, out_avals):
    _check_tree(out_tree, in_tree, what)
    for name, a, b in zip(names, in_avals, out_avals):
        if not (a.shape == b.shape and a.dtype == b.dtype):
            raise TypeError(
                f"{what}: the carry has to keep its types from input to output, but "
                f"the input carry {name} has type {_ty(a)} and comes back as "
                f"{_ty(b)}, so {_difference(a, b)}.")


def _to_strong_values(leaves, in_avals):
    out = []
    for x, a in zip(leaves, in_avals):
        if get_aval(x) != a:
            x = _strong(x, a.dtype)
        out.append(x)
    return out


# ---- scan -------------------------------------------------------------------------------

def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loops ``f`` over the leading axis of ``xs`` carrying state (``jax.lax.scan``).

    Semantics (one traced body, one ``scan`` equation)::

        carry = init
        for i in range(length):          # reversed when reverse=True
            carry, y_i = f(carry, tree_map(lambda x: x[i], xs))
        return carry, tree_map(stack, ys)

    Args:
      f: ``f(carry, x) -> (carry, y)``; ``carry`` keeps its pytree structure, shapes and
        dtypes (a weakly typed initial leaf is promoted to the body's output type);
        ``y`` may be any pytree of arrays (or None).
      init: pytree of arrays/scalars, the initial carry.
      xs: pytree of arrays sharing a leading axis of size ``length``, or None.
      length: number of steps; required when ``xs`` is None or has no leaves.
      reverse: iterate from the end (outputs still stored at their own index).
      unroll: int >= 0 or bool; accepted for compatibility (the interpreter does not
        unroll; it does not change results).

    Returns:
      ``(final_carry, stacked_ys)``: each y leaf gains a leading axis of ``length``.

    Raises:
      TypeError: ``f`` not callable, body output not a pair, or a carry whose structure,
        shape or dtype changes (naming the carry leaf and both types).
      ValueError: xs leaves with different leading sizes, ``length`` disagreeing with
        them, neither xs nor length, or a bad ``unroll``.

    Example::

        >>> scan(lambda c, x: (c + x, c), 0., jnp.arange(3.))
        (Array(3., dtype=float32), Array([0., 0., 1.], dtype=float32))
    """
    if not callable(f):
        raise TypeError(f"lax.scan needs a callable f, got {f!r}.")
    xs_flat, xs_tree = tree_flatten(xs)
    xs_avals = _avals_of(xs_flat, "scan xs")
    for a, name in zip(xs_avals, _leaf_paths(xs, "xs")):
        if a.ndim == 0:
            raise ValueError(f"scan got a scalar in xs ({name} of type {_ty(a)}): every "
                             f"xs leaf needs a leading axis to scan over.")
    sizes = [a.shape[0] for a in xs_avals]
    if length is not None:
        if isinstance(length, Tracer):
            raise errors.ConcretizationTypeError(
                length, "scan needs a concrete int `length` (a number of steps known while "
                "tracing); a data-dependent step count calls for `while_loop` or `fori_loop`.")
        try:
            length = int(length)
        except TypeError:
            raise TypeError(f"scan: length must be a Python int, got {length!r}") from None
        if any(s != length for s in sizes):
            raise ValueError(f"scan: length={length} does not match the leading axis sizes "
                             f"of xs, {sizes}.")
        if length < 0:
            raise ValueError(f"scan: length={length} is negative.")
    elif sizes:
        if len(set(sizes)) > 1:
            raise ValueError(f"scan: the xs leaves have different leading axis sizes: "
                             f"{', '.join(_builtin_map(str, sizes))}.")
        length = sizes[0]
    else:
        raise ValueError("scan: xs is empty, so the number of steps has to come from "
                         "`length`, which was not given.")
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(length, 1) if unroll else 1
    else:
        unroll = operator.index(unroll)     # TypeError for a float, as JAX
        if unroll < 0:
            raise ValueError(f"scan: unroll={unroll!r}; it takes a bool or an int >= 0.")
        unroll = max(unroll, 1)

    init_flat, init_tree = tree_flatten(init)
    carry_avals = _avals_of(init_flat, "scan init")
    x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in xs_avals]
    n_carry = len(init_flat)
    in_tree = tree_flatten((init, xs))[1]

    def pair(res):
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"scan body has to return a (carry, y) pair; it returned "
                            f"{_describe(res)}.")
        c, y = res
        out_parts["carry"] = tree_flatten(c)[1]
        return (c, y)

    out_parts: dict = {}
    out = _Out()
    names = _leaf_paths(init, _carry_name(f, "carry"))
    for _ in range(2):
        closed, consts = _trace(lambda t: f(*t), in_tree, carry_avals + x_avals, out,
                                pair)
        body_out = closed.out_avals
        _check_tree(out_parts["carry"], init_tree, "scan body")
        new = _promoted_carry(carry_avals, body_out[:n_carry])
        if new is None:
            break
        carry_avals = new
    _check_carry("scan body", names, init_tree, out_parts["carry"], carry_avals,
                 closed.out_avals[:n_carry])
    init_flat = _to_strong_values(init_flat, carry_avals)
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=closed, num_consts=len(consts),
                       num_carry=n_carry, length=length, reverse=bool(reverse), unroll=unroll)
    # the output tree is (carry, ys): rebuild both halves from the flat outputs
    full = tree_unflatten(out.tree, outs)
    return full[0], full[1]


def _describe(x) -> str:
    aval = getattr(x, "aval", None)
    if aval is not None:
        return _ty(aval)
    return f"{type(x).__name__} {x!r}"[:80]


# ---- fori_loop / while_loop -------------------------------------------------------------

def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)`` (``jax.lax.fori_loop``).

    With concrete bounds (Python ints or concrete arrays) this is a ``scan`` of
    ``upper - lower`` steps (so reverse-mode differentiation works) and ``i`` is a weakly
    typed int; with traced bounds it is a ``while_loop`` and ``i`` has the bounds' dtype.

    Args:
      lower, upper: integer scalars of one dtype (a Python int adopts the other's dtype).
      body_fun: ``(i, val) -> val`` keeping val's structure and types.
      init_val: pytree, the initial value.
      unroll: only with concrete bounds (see ``scan``).

    Returns:
      The final ``val``.

    Raises:
      TypeError: body_fun not callable, bounds of different dtypes, carry type changes.
      ValueError: ``unroll`` with traced bounds.
    """
    if not callable(body_fun):
        raise TypeError(f"lax.fori_loop needs a callable body_fun, got {body_fun!r}.")
    la, ua = get_aval(lower), get_aval(upper)
    if la.dtype == ua.dtype:
        dtype = la.dtype
    else:
        dtype = None
        if dtypes.issubdtype(la.dtype, np.signedinteger) and \
                dtypes.issubdtype(ua.dtype, np.signedinteger):
            if la.weak_type and not ua.weak_type:
                dtype = ua.dtype
            elif ua.weak_type and not la.weak_type:
                dtype = la.dtype
        if dtype is None:
            raise TypeError(f"fori_loop: lower ({la.dtype.name}) and upper ({ua.dtype.name}) "
                            f"have to share one dtype")
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, x = carry
            return (i + 1, body_fun(i, x)), None
        if unroll is None or (not isinstance(unroll, (bool, np.bool_)) and unroll == 1):
            unroll = False      # a float 1.0 too: JAX's fori_loop takes it as "no unroll"
        (_, result), _ = scan(step, (lo, init_val), None, length=max(hi - lo, 0),
                              unroll=unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("fori_loop: `unroll` needs loop bounds that are statically known "
                         "(Python ints or concrete values), not traced ones.")
    if la.dtype != dtype:
        lower = _strong(lower, dtype)
    if ua.dtype != dtype:
        upper = _strong(upper, dtype)

    def cond_fn(carry):
        return _e.lt_p.bind(carry[0], carry[1])

    def body_fn(carry):
        i, hi, x = carry
        return (_e.add_p.bind(i, _one_like(i)), hi, body_fun(i, x))
    return while_loop(cond_fn, body_fn, (lower, upper, init_val))[2]


def _one_like(i):
    a = get_aval(i)
    return np.ones((), a.dtype) if not a.weak_type else 1


def while_loop(cond_fun, body_fun, init_val):
    """``while cond_fun(val): val = body_fun(val)`` (``jax.lax.while_loop``).

    Args:
      cond_fun: ``val -> bool[]`` (a boolean scalar).
      body_fun: ``val -> val`` keeping val's pytree structure, shapes and dtypes (weakly
        typed initial leaves are promoted to the body's output type, as in JAX).
      init_val: pytree of arrays/scalars.

    Returns:
      The final ``val``.

    Raises:
      TypeError: non-callable arguments, cond_fun not returning a boolean scalar, a body
        changing the carry's structure, shapes or dtypes (naming the leaf and types).
    """
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError(f"lax.while_loop needs callables for cond_fun and body_fun, got "
                        f"{cond_fun!r} and {body_fun!r}.")
    init_flat, in_tree = tree_flatten(init_val)
    avals = _avals_of(init_flat, "while_loop init_val")
    names = _leaf_paths(init_val, _carry_name(body_fun, "val"))
    cond_out, body_out = _Out(), _Out()
    for _ in range(2):
        body_closed, body_consts = _trace(body_fun, in_tree, avals, body_out)
        _check_tree(body_out.tree, in_tree, "while_loop body")
        new = _promoted_carry(avals, body_closed.out_avals)
        if new is None:
            break
        avals = new
    _check_carry("while_loop body", names, in_tree, body_out.tree, avals,
                 body_closed.out_avals)
    cond_closed, cond_consts = _trace(cond_fun, in_tree, avals, cond_out)
    c_avals = cond_closed.out_avals
    if cond_out.tree.num_leaves != 1 or cond_out.tree.num_nodes != 1:
        raise TypeError(f"while_loop: cond_fun has to return one boolean scalar; it "
                        f"returned the pytree {_tree_str(cond_out.tree)}.")
    if c_avals[0].shape != () or c_avals[0].dtype != np.bool_:
        raise TypeError(f"while_loop: cond_fun has to return one boolean scalar; it "
                        f"returned {[a for a in c_avals]}.")
    init_flat = _to_strong_values(init_flat, avals)
    outs = while_p.bind(*cond_consts, *body_consts, *init_flat, cond_jaxpr=cond_closed,
                        body_jaxpr=body_closed, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    return tree_unflatten(in_tree, outs)


# ---- cond / switch ----------------------------------------------------------------------

def _splat(fn):
    return lambda ops: fn(*ops)


def _branches(funs, labels, ops, what, order=None):
    """Traces every branch on the flat operands (the outputs may differ in weak type only:
    the equation's have branch 0's, as JAX's); returns
    ``(branch jaxprs taking all consts + operands, all consts, flat operands, out_tree)``.
    ``order``: the branches' order in messages (cond names true_fun first)."""
    ops_flat, ops_tree = tree_flatten(tuple(ops))
    avals = _avals_of(ops_flat, f"{what} operands")
    traced = []
    for fn in funs:
        out = _Out()
        closed, consts = _trace(_splat(fn), ops_tree, avals, out)
        traced.append([closed, consts, out])
    order = list(range(len(funs))) if order is None else order
    ref = order[0]
    tree0 = traced[ref][2].tree
    for k in order[1:]:
        tree = traced[k][2].tree
        if tree != tree0:
            raise TypeError(
                f"{what}: every branch has to return the same pytree structure, yet "
                f"{labels[ref]} returns {_tree_str(tree0)} and {labels[k]} returns "
                f"{_tree_str(tree)}.")
    out0 = traced[ref][0].out_avals
    out_paths = _leaf_paths(tree_unflatten(tree0, [0] * tree0.num_leaves), "output")
    for k in order[1:]:
        for name, a, b in zip(out_paths, out0, traced[k][0].out_avals):
            if a.shape != b.shape or a.dtype != b.dtype:
                where = "" if tree0.num_leaves == 1 and tree0.num_nodes == 1 else f" {name}"
                raise TypeError(
                    f"{what}: every branch has to return the same types, yet the "
                    f"output{where} of {labels[ref]} has type {_ty(a)} and the same "
                    f"output of {labels[k]} has type {_ty(b)}, so "
                    f"{_difference(a, b)}.")
    # every branch takes the consts of all branches (deduplicated) before the operands
    slots, all_consts = {}, []
    for _, consts, _ in traced:
        for c in consts:
            if id(c) not in slots:
                slots[id(c)] = len(all_consts)
                all_consts.append(c)
    jaxprs = []
    for closed, consts, _ in traced:
        jaxpr = closed.jaxpr
        n_own = len(consts)
        own = {slots[id(c)]: v for c, v in zip(consts, jaxpr.invars[:n_own])}
        const_vars = [own.get(j) or Var(get_aval(c)) for j, c in enumerate(all_consts)]
        new = Jaxpr([], const_vars + jaxpr.invars[n_own:], jaxpr.eqns, jaxpr.outvars)
        jaxprs.append(ClosedJaxpr(new, []))
    return tuple(jaxprs), all_consts, ops_flat, tree0


def _index_check(index, name_err):
    if isinstance(index, (str, bytes)) or isinstance(index, (list, tuple)):
        raise TypeError(f"{name_err} must be a scalar, got {index!r} of type "
                        f"{type(index)}")
    try:
        aval = get_aval(index)
    except TypeError:
        raise TypeError(f"{name_err} must be a scalar, got {index!r} of type "
                        f"{type(index)}") from None
    if aval.shape != ():
        raise TypeError(f"{name_err} must be a scalar, got {_val_str(index)} of shape "
                        f"{aval.shape}.")
    return aval


def _val_str(x):
    if isinstance(x, Tracer):
        return repr(x)
    return str(np.asarray(x))


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands) if pred else false_fun(*operands)``, staged as one ``cond``
    equation (``jax.lax.cond``).

    Both branches are traced; their outputs must have the same pytree structure, shapes
    and dtypes (an output has the false branch's weak type, as in JAX).  JAX's old
    form ``cond(pred, true_operand, true_fun, false_operand, false_fun)`` is accepted.

    Args:
      pred: boolean or numeric scalar (nonzero is true).
      true_fun, false_fun: callables taking ``*operands``.
      operands: pytrees passed to the chosen branch (or ``operand=`` for one operand).

    Returns:
      The chosen branch's output pytree.

    Raises:
      TypeError: pred not a scalar or a complex/non-numeric type; branches not callable;
        branch outputs differing in structure or type (naming both).
    """
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("lax.cond: give the operands either positionally or as the "
                            "'operand' keyword, not both")
        operands = (operand,)
    if not (callable(true_fun) and callable(false_fun)):
        # JAX's old signature: cond(pred, true_operand, true_fun, false_operand, false_fun)
        if len(operands) == 2 and callable(false_fun) and callable(operands[1]):
            t_op, t_fun, f_op, f_fun = true_fun, false_fun, operands[0], operands[1]
            return cond(pred, lambda ops: t_fun(ops[0]), lambda ops: f_fun(ops[1]),
                        (t_op, f_op))
        raise TypeError(f"lax.cond needs callables for true_fun and false_fun, got "
                        f"{true_fun!r} and {false_fun!r}.")
    aval = _index_check(pred, "Pred")
    if not (aval.dtype == np.bool_ or aval.dtype.kind in "iu" or dtypes.is_float(aval.dtype)):
        raise TypeError(f"lax.cond: pred has dtype {aval.dtype.name}; it has to be a "
                        f"boolean or a number.")
    if aval.dtype != np.bool_:
        pred = _e.ne_p.bind(pred, _zero_like(aval))
    index = _e.convert_element_type_p.bind(pred, new_dtype=np.dtype(np.int32),
                                           weak_type=False)
    branches, consts, ops_flat, out_tree = _branches(
        (false_fun, true_fun), (f"false_fun ({_fun_name(false_fun)})",
                                f"true_fun ({_fun_name(true_fun)})"),
        operands, "cond", order=[1, 0])
    outs = cond_p.bind(index, *consts, *ops_flat, branches=branches)
    return tree_unflatten(out_tree, outs)


def _zero_like(aval):
    return 0 if aval.weak_type and aval.dtype.kind in "iu" else \
        0.0 if aval.weak_type else np.zeros((), aval.dtype)


def switch(index, branches, *operands, operand=_NO_OPERAND):
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)`` (``jax.lax.switch``).

    Args:
      index: integer scalar (out-of-range values are clamped into range).
      branches: non-empty sequence of callables with matching output types.
      operands: pytrees passed to the chosen branch (or ``operand=``).

    Returns:
      The chosen branch's output.

    Raises:
      TypeError: index not an integer scalar, branches not callables, outputs differing
        in structure or type.
      ValueError: no branches.
    """
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("lax.switch: give the operands either positionally or as the "
                            "'operand' keyword, not both")
        operands = (operand,)
    try:
        branches = list(branches)
    except TypeError:
        raise TypeError(f"lax.switch takes a sequence of callables as branches, got "
                        f"{branches!r}.") from None
    if not branches:
        raise ValueError("Empty branch sequence")
    if not all(callable(b) for b in branches):
        raise TypeError(f"lax.switch takes a sequence of callables as branches, got "
                        f"{branches!r}.")
    aval = _index_check(index, "Branch index")
    if not (aval.dtype.kind in "iu"):
        raise TypeError(f"lax.switch: index {_val_str(index)} has dtype "
                        f"{aval.dtype.name}; it has to be an integer")
    if len(branches) == 1:
        return branches[0](*operands)
    idx = index
    if aval.dtype != np.int32 or aval.weak_type:
        idx = _e.convert_element_type_p.bind(index, new_dtype=np.dtype(np.int32),
                                             weak_type=False)
    idx = _e.clamp_p.bind(np.int32(0), idx, np.int32(len(branches) - 1))
    labels = [f"branch {k} ({_fun_name(b)})" for k, b in enumerate(branches)]
    jaxprs, consts, ops_flat, out_tree = _branches(branches, labels, operands, "switch")
    outs = cond_p.bind(idx, *consts, *ops_flat, branches=jaxprs)
    return tree_unflatten(out_tree, outs)


# ---- map --------------------------------------------------------------------------------

def map(f, xs, *, batch_size=None):  # noqa: A001 - JAX's name
    """``stack([f(x) for x in xs])`` over the leading axis of the pytree ``xs``, as one
    ``scan`` (``jax.lax.map``).

    ``batch_size`` is accepted and checked; the elements are computed one at a time
    either way (the results are the same as JAX's batched evaluation).

    Raises:
      ValueError: xs leaves with different leading sizes, or no leaves.
      TypeError: f not callable.
    """
    if not callable(f):
        raise TypeError(f"lax.map needs a callable f, got {f!r}.")
    if batch_size is not None:
        batch_size = int(batch_size)
    _, ys = scan(lambda c, x: (c, f(x)), None, xs)
    return ys


# ---- associative_scan -------------------------------------------------------------------

def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix combination ``fn(...fn(fn(e0, e1), e2)..., ei)`` along ``axis``
    (``jax.lax.associative_scan``), by the parallel (odd/even) prefix algorithm: O(log n)
    rounds of vectorised ``fn`` calls on strided slices.

    Args:
      fn: associative ``fn(a, b) -> c``, elementwise over pytrees of arrays shaped like
        ``elems`` slices (it is called on whole strided slices, so it must be vectorised).
      elems: pytree of arrays, all with the same size along ``axis``.
      reverse: combine from the end instead (the result is reversed back).
      axis: the scanned axis (negative counts from the end).

    Returns:
      A pytree like ``elems``.

    Raises:
      TypeError: ``fn`` is not callable.
      ValueError: ``axis`` out of bounds or leaves of different sizes along it.
    """
    from . import concatenate, expand_dims, reshape, rev, slice_in_dim
    if not callable(fn):
        raise TypeError(f"lax.associative_scan: fn argument should be callable, got "
                        f"{type(fn).__name__}.")
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    avals = _avals_of(leaves, "associative_scan elems")
    ndim = avals[0].ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis = axis % ndim
    if any(a.ndim <= axis for a in avals):
        bad = next(a for a in avals if a.ndim <= axis)
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {bad.ndim}")
    sizes = [a.shape[axis] for a in avals]
    if len(set(sizes)) > 1:
        raise ValueError(f"associative_scan: the elems leaves disagree in the length of "
                         f"the scanned axis (shapes {[a.shape for a in avals]})")
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn must return the structure of its inputs "
                            f"{_tree_str(tree)}, got {_tree_str(out_tree)}")
        return out_leaves

    def sl(xs, start, stop, stride=1):
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(even, odd, n):
        # even holds positions 0, 2, ...; odd 1, 3, ...; len(even) - len(odd) is 0 or 1
        out = []
        for e, o in zip(even, odd):
            ne = get_aval(e).shape[axis]
            if get_aval(o).shape[axis] < ne:
                o = concatenate([o, slice_in_dim(e, ne - 1, ne, 1, axis)], axis)
            both = concatenate([expand_dims(e, (axis + 1,)), expand_dims(o, (axis + 1,))],
                               axis + 1)
            shape = list(get_aval(e).shape)
            shape[axis] = 2 * ne
            out.append(slice_in_dim(reshape(both, tuple(shape)), 0, n, 1, axis))
        return out

    def prefix(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        odd = prefix(combine(sl(xs, 0, n - 1, 2), sl(xs, 1, n, 2)))
        n_tail = (n - 1) // 2          # even positions 2, 4, ... below n
        if n_tail:
            tail = combine(sl(odd, 0, n_tail), sl(xs, 2, n, 2))
            even = [concatenate([h, t], axis) for h, t in zip(sl(xs, 0, 1), tail)]
        else:
            even = sl(xs, 0, 1)
        return interleave(even, odd, n)

    out = prefix(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)
