"""``vmap``: vectorise a function over a mapped axis of its inputs (``jax.vmap``).

Layer: transforms.  Runs the function under ``core.batching.BatchTrace``; each primitive's
batching rule handles the whole batch at once.  Keyword arguments are always mapped over
their leading axis (``in_axes`` covers the positional arguments only), as in JAX.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import dtypes
from .._traceback import api_boundary as _api_boundary
from ..core import batching
from ..config import config
from ..core.trace import check_leaks, full_lower, get_aval, new_main
from ..tree_util import tree_leaves as _public_leaves
from ..tree_util import (keystr, data_flatten as tree_flatten,
                         data_flatten_with_path as tree_flatten_with_path,
                         data_leaves as tree_leaves, data_structure as tree_structure,
                         tree_unflatten)

__all__ = ["vmap"]


def _is_axis(x):
    # Python ints only: JAX refuses NumPy integers (and bools) in in_axes/out_axes
    return isinstance(x, int) and not isinstance(x, bool)


def _prefix_subtrees(spec, value, what):
    """``(spec leaves, the subtree of value under each)`` for ``spec`` a tree prefix of
    ``value`` (None a leaf of ``spec``).  Only flattens: a registered node's unflatten
    function never sees axis numbers in place of its children (it may check them, as a
    class's constructor does).  Raises ValueError when ``spec`` is not a prefix."""
    import optree
    from ..tree_util import NAMESPACE
    spec_leaves, spec_tree = optree.tree_flatten(spec, none_is_leaf=True, namespace=NAMESPACE)
    try:
        subtrees = spec_tree.flatten_up_to(value)
    except (ValueError, TypeError):
        raise ValueError(f"vmap {what}={spec!r} does not fit the value it describes: the "
                         f"spec has to be a tree prefix of a value with pytree structure "
                         f"{tree_structure(value)}") from None
    return spec_leaves, spec_tree, subtrees


def _prefix_leaves(spec, value, what):
    """One axis spec per leaf of ``value`` (``spec`` a tree prefix of it, None a leaf).
    Raises ValueError naming the key path where the structures part."""
    spec_leaves, _, subtrees = _prefix_subtrees(spec, value, what)
    out = []
    for ax, sub in zip(spec_leaves, subtrees):
        out.extend([ax] * len(tree_leaves(sub)))
    return out


def _prefix_paths(spec, value):
    """Key path (string) of the spec entry governing each leaf of ``value``."""
    _, spec_tree, subtrees = _prefix_subtrees(spec, value, "out_axes")
    out = []
    for path, sub in zip(spec_tree.paths(), subtrees):
        out.extend(["".join(f"[{k!r}]" for k in path)] * len(tree_leaves(sub)))
    return out


def _key_words(tree, n: int) -> list:
    """For each of the ``n`` leaves of ``tree``: how many trailing dimensions of its data
    view are a typed key's words (0 for other leaves).  A key array is one leaf with its
    own shape: axes count over that shape, never into the words of its data."""
    from ..tree_util import is_data_node as is_key
    words = [x._base.ndim - x.ndim if is_key(x) else 0
             for x in _public_leaves(tree)]
    return words if len(words) == n else [0] * n


def _arg_names(fun, nargs):
    """Parameter names for the positional arguments (``args[i]`` where unknown)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(nargs):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(("argument ", params[i].name))
        else:
            names.append(("", f"args[{i}]"))
    return names


def _check_in_axes(in_axes):
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or _is_axis(in_axes) or isinstance(in_axes, tuple)):
        raise TypeError(f"vmap in_axes takes an int, None, or a tuple with one entry per "
                        f"positional argument of the function; got {in_axes!r}.")
    for leaf in tree_flatten(in_axes, is_leaf=lambda x: x is None)[0]:
        if leaf is not None and not _is_axis(leaf):
            raise TypeError(f"vmap in_axes={in_axes!r} has a leaf of type "
                            f"{type(leaf).__name__}; its leaves may only be ints or None.")
    return in_axes


def _check_out_axes(out_axes):
    for leaf in tree_flatten(out_axes, is_leaf=lambda x: x is None)[0]:
        if leaf is not None and not _is_axis(leaf):
            raise TypeError(f"vmap out_axes={out_axes!r} has a leaf of type "
                            f"{type(leaf).__name__}; its leaves may only be ints or None.")


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorising map (``jax.vmap``).

    Args:
      fun: function of arrays/pytrees.
      in_axes: int, None, or a tuple with one entry per positional argument, each entry a
        pytree prefix of that argument with int/None leaves (a list is read as a tuple).
        Negative axes count from the end; None means the argument is not mapped.
        Keyword arguments are always mapped over axis 0.
      out_axes: same, as a prefix of the output (None: that output must not be mapped;
        unmapped outputs with an int axis are broadcast along it).
      axis_name: a name for the mapped axis (kept for collectives).
      axis_size: the mapped size; required when no input is mapped.
    Returns:
      The vectorised function.  Each output leaf gains the mapped axis (of the common
      mapped size) at its ``out_axes`` position.
    Raises:
      TypeError: ``fun`` not callable; in_axes/out_axes not int/None/containers of them;
        a mapped argument leaf that is not an array.
      ValueError: in_axes not a tree prefix of the arguments (or of the wrong length); an
        axis out of range for an argument's rank (or an output's); inconsistent mapped
        sizes (each argument named with its size); no mapped input and no ``axis_size``;
        a mapped output whose out_axes entry is None.

    Example::

        vmap(lambda a, b: a @ b, in_axes=(0, None))(xs, w)   # xs: (n, k), w: (k, m)
    """
    if not callable(fun):
        raise TypeError(f"vmap needs a callable as its function argument; {fun!r} is not "
                        f"callable")
    in_axes = _check_in_axes(in_axes)
    _check_out_axes(out_axes)

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes as a tuple needs one entry per positional "
                             f"argument: len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        spec = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        axes = _prefix_leaves(spec, tuple(args), "in_axes")
        leaves_p, in_tree = tree_flatten_with_path(tuple(args))
        kw_p, kw_tree = tree_flatten_with_path(kwargs)
        names = _arg_names(fun, len(args))
        described = []
        for path, x in leaves_p:
            pre, nm = names[path[0].idx]
            described.append((x, pre + nm + keystr(path[1:])))
        for path, x in kw_p:
            described.append((x, f"kwargs{keystr(path)}"))
        axes = list(axes) + [0] * len(kw_p)
        words = _key_words((tuple(args), kwargs), len(described))
        sizes, dims = [], []
        for (x, what), ax, w in zip(described, axes, words):
            if ax is None:
                dims.append(None)
                continue
            try:
                aval = get_aval(x)
            except TypeError:
                raise TypeError(f"Argument {x!r} of type {type(x)} cannot be used as an array "
                                f"({what} of the vmapped function)") from None
            nd = aval.ndim - w
            if not -nd <= ax < nd:
                raise ValueError(f"vmap cannot map axis {ax} of an argument of rank {nd} "
                                 f"(shape {aval.shape[:nd]}; {what}): mapping that axis needs "
                                 f"rank at least {(ax + 1) if ax >= 0 else -ax}")
            d = int(ax) % nd
            dims.append(d)
            sizes.append((what, aval, d, aval.shape[d]))
        if sizes:
            distinct = sorted({s for *_, s in sizes})
            if len(distinct) > 1 or (axis_size is not None and distinct[0] != axis_size):
                lines = [f"  - {w} ({a.str_short()}): axis {d} has size {s}"
                         for w, a, d, s in sizes]
                if axis_size is not None:
                    lines.insert(0, f"  - axis_size={axis_size}")
                raise ValueError("vmap: the mapped axes have different sizes:\n"
                                 + "\n".join(lines))
            size = distinct[0]
        elif axis_size is not None:
            size = int(axis_size)
        else:
            raise ValueError("vmap has nothing to take the mapped size from: in_axes is None "
                             "for every argument, so pass axis_size")
        leaves = [x for x, _ in described]
        with new_main(batching.BatchTrace, batching.BatchAxis(size, axis_name)) as main:
            trace = batching.BatchTrace(main)
            ins = [batching.BatchTracer(trace, x, d) if d is not None else x
                   for x, d in zip(leaves, dims)]
            n_pos = len(leaves_p)
            pos = tree_unflatten(in_tree, ins[:n_pos])
            kws = tree_unflatten(kw_tree, ins[n_pos:])
            out = fun(*pos, **kws)
            out_leaves, out_tree = tree_flatten(out)
            o_axes = _prefix_leaves(out_axes, out, "out_axes")
            o_paths = _prefix_paths(out_axes, out)
            o_words = _key_words(out, len(out_leaves))
            res = []
            for o, ax, where, w in zip(out_leaves, o_axes, o_paths, o_words):
                if isinstance(o, np.ndarray) and o.dtype == dtypes.float0:
                    # the zero tangent of an integer or key value (grad's, with allow_int):
                    # no tracer carries float0, so it is the same zeros for every example
                    if ax is not None:
                        if not -(o.ndim + 1) <= ax <= o.ndim:
                            raise ValueError(f"vmap out_axes{where}={ax} is out of bounds for "
                                             f"an output of rank {o.ndim + 1} (with the "
                                             f"mapped axis)")
                        shape = list(o.shape)
                        shape.insert(int(ax) % (o.ndim + 1), size)
                        o = np.zeros(tuple(shape), dtypes.float0)
                    res.append(o)
                    continue
                try:
                    t = trace.full_raise(o)
                except TypeError:
                    raise TypeError(f"Value {o!r} of type {type(o)} cannot be used as an array "
                                    f"(an output of the vmapped function)") from None
                val, d = t.val, t.bdim
                if ax is None:
                    if d is not None:
                        raise ValueError(f"vmap out_axes{where} is None (unmapped), yet that "
                                         f"output is batched on axis {d}")
                    res.append(val)
                    continue
                nd = get_aval(val).ndim + (1 if d is None else 0) - w
                if not -nd <= ax < nd:
                    raise ValueError(f"vmap out_axes{where}={ax} is out of bounds for an "
                                     f"output of rank {nd} (with the mapped axis)")
                ax = int(ax) % nd
                if d is None:
                    val = batching.broadcast_front(val, size)
                    d = 0
                res.append(batching.moveaxis(val, d, ax))
        if config.jax_check_tracer_leaks:
            # this frame's own references go first: any tracer left is held from outside
            trace = ins = pos = kws = out = out_leaves = o = t = None
            check_leaks(main)
        return tree_unflatten(out_tree, [full_lower(r) for r in res])

    return _api_boundary(batched)
