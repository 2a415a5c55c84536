"""``vmap``: vectorise a function over a mapped axis of its inputs (``jax.vmap``).

Layer: transforms.  Runs the function under ``core.batching.BatchTrace``; each primitive's
batching rule handles the whole batch at once.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core import batching
from ..core.trace import get_aval, new_main
from ..tree_util import tree_flatten, tree_unflatten, tree_structure

__all__ = ["vmap"]


def _is_axis_spec(x):
    return x is None or isinstance(x, (int, np.integer))


def _broadcast_prefix(spec, tree_value, what):
    """Expands an axis specification (a tree prefix of ``tree_value``) to one entry per
    leaf of ``tree_value``.  Raises ValueError when it is not a prefix."""
    import optree
    from ..tree_util import NAMESPACE
    try:
        return optree.tree_broadcast_prefix(spec, tree_value, none_is_leaf=True,
                                            namespace=NAMESPACE)
    except (ValueError, TypeError):
        raise ValueError(f"vmap {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {spec!r} for value tree "
                         f"{tree_structure(tree_value)}.") from None


def _flat_axes(spec, value, what):
    import optree
    from ..tree_util import NAMESPACE
    full = _broadcast_prefix(spec, value, what)
    axes = optree.tree_leaves(full, none_is_leaf=True, namespace=NAMESPACE)
    return axes


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorising map (``jax.vmap``).

    Args:
      fun: function of arrays/pytrees.
      in_axes: int, None, or a pytree prefix of the positional arguments (a tuple with one
        entry per argument, or a single int/None for all); negative axes count from the
        end; None means the argument is not mapped.
      out_axes: same, for the outputs (None: the output must not be mapped).
      axis_name: a name for the mapped axis (for collectives).
      axis_size: the mapped size when no input is mapped.
    Returns:
      The vectorised function; each mapped output gains the mapped axis at ``out_axes``.
    Raises:
      ValueError: in_axes not a tree prefix of the arguments, an axis out of range,
        inconsistent mapped sizes (naming each argument and size), no mapped input and no
        ``axis_size``, a mapped output with out_axes None.
      TypeError: a non-array argument leaf is mapped.
    """
    if not callable(fun):
        raise TypeError(f"vmap requires a callable argument, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (_is_axis_spec(in_axes) or isinstance(in_axes, (tuple, dict))):
        import optree
        if not optree.tree_leaves(in_axes, none_is_leaf=True):
            raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries "
                            f"corresponding to the positional arguments passed to the "
                            f"function, but got {in_axes}.")
    for leaf in tree_flatten(in_axes, is_leaf=lambda x: x is None)[0]:
        if leaf is not None and not isinstance(leaf, (int, np.integer)):
            raise TypeError(f"vmap in_axes must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {in_axes}.")

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        spec = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        axes = _flat_axes(spec, tuple(args), "in_axes")
        leaves, in_tree = tree_flatten(tuple(args))
        k_leaves, k_tree = tree_flatten(kwargs)
        size = None
        sizes = []
        dims = []
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                dims.append(None)
                continue
            try:
                aval = get_aval(x)
            except TypeError:
                raise TypeError(f"vmap: argument {i} of type {type(x).__name__} is not a "
                                f"valid JAX type: {x!r}") from None
            nd = aval.ndim
            if not -nd <= ax < nd:
                raise ValueError(f"vmap was requested to map its argument along axis {ax}, "
                                 f"which implies that its rank should be at least "
                                 f"{(ax + 1) if ax >= 0 else -ax}, but is only {nd} (its "
                                 f"shape is {aval.shape})")
            d = int(ax) % nd
            dims.append(d)
            sizes.append((i, aval, d, aval.shape[d]))
        if sizes:
            distinct = sorted({s for *_, s in sizes})
            if len(distinct) > 1 or (axis_size is not None and distinct[0] != axis_size):
                lines = [f"  * one axis had size {s}: axis {d} of argument leaf {i} of type "
                         f"{a.str_short()}" for i, a, d, s in sizes]
                if axis_size is not None:
                    lines.insert(0, f"  * axis_size={axis_size} was given")
                raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                                 + "\n".join(lines))
            size = distinct[0]
        elif axis_size is not None:
            size = int(axis_size)
        else:
            raise ValueError("vmap must have at least one non-None value in in_axes")
        with new_main(batching.BatchTrace, batching.BatchAxis(size, axis_name)) as main:
            trace = batching.BatchTrace(main)
            ins = [batching.BatchTracer(trace, x, d) if d is not None else x
                   for x, d in zip(leaves, dims)]
            out = fun(*tree_unflatten(in_tree, ins), **kwargs)
            out_leaves, out_tree = tree_flatten(out)
            o_axes = _flat_axes(out_axes, out, "out_axes")
            res = []
            for o, ax in zip(out_leaves, o_axes):
                t = trace.full_raise(o)
                val, d = t.val, t.bdim
                if ax is None:
                    if d is not None:
                        raise ValueError("vmap has mapped output but out_axes is None")
                    res.append(val)
                    continue
                nd = get_aval(val).ndim + (1 if d is None else 0)
                ax = int(ax) % nd if nd else 0
                if d is None:
                    val = batching.broadcast_front(val, size)
                    d = 0
                res.append(batching.moveaxis(val, d, ax))
        from ..core.trace import full_lower
        return tree_unflatten(out_tree, [full_lower(r) for r in res])

    return batched
