"""``jaxlite.flatten_util``: a pytree of arrays as one flat vector and back
(``jax.flatten_util``).

Layer: public API over ``tree_util`` and ``lax``; works eagerly and under jit, grad and vmap.
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes, lax
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


class _Unravel:
    """The unravel function of ``ravel_pytree``: equal (and equally hashed) for equal
    structures, shapes and dtypes, so it can be a static argument of ``jit``."""

    __slots__ = ("treedef", "sizes", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef, sizes, shapes, from_dtypes, to_dtype):
        self.treedef = treedef
        self.sizes = sizes
        self.shapes = shapes
        self.from_dtypes = from_dtypes   # None when every leaf already has to_dtype
        self.to_dtype = to_dtype

    def _key(self):
        return (self.treedef, self.sizes, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other):
        return type(other) is _Unravel and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"<unravel function of {self.treedef}>"

    def __call__(self, flat):
        """The pytree whose ravelled form is ``flat`` (a 1-D array of the ravelled size).

        Raises TypeError when the leaves had mixed dtypes and ``flat`` is not of their
        promoted dtype; ValueError when ``flat``'s length is not the ravelled size.
        """
        if not self.sizes:
            return tree_unflatten(self.treedef, [])
        if self.from_dtypes is not None:
            got = dtypes.dtype_and_weak(flat)[0]
            if got != self.to_dtype:
                raise TypeError(f"unravel function given array of dtype {got}, but expected "
                                f"dtype {self.to_dtype}")
        shape = np.shape(flat)
        total = sum(self.sizes)
        if len(shape) != 1 or shape[0] != total:
            raise ValueError(f"unravel function expects a 1-D array of length {total} (the "
                             f"sum of the leaf sizes {list(self.sizes)}), got shape "
                             f"{tuple(shape)}")
        leaves, start = [], 0
        for i, (size, leaf_shape) in enumerate(zip(self.sizes, self.shapes)):
            chunk = lax.reshape(lax.slice(flat, (start,), (start + size,)), leaf_shape)
            if self.from_dtypes is not None:
                chunk = lax.convert_element_type(chunk, self.from_dtypes[i])
            leaves.append(chunk)
            start += size
        return tree_unflatten(self.treedef, leaves)


def ravel_pytree(pytree):
    """Flattens a pytree of arrays and scalars into one 1-D array
    (``jax.flatten_util.ravel_pytree``).

    The leaves are ravelled in ``tree_flatten`` order and concatenated.  The flat dtype is
    the promotion of the leaves' dtypes (their canonical dtypes: a Python float counts as
    float32, and weak types do not take part); when all leaves share one dtype it is kept,
    weak type included.  With no leaves the result is an empty float32 array.

    Args:
      pytree: a pytree whose leaves are arrays or scalars.

    Returns:
      ``(flat, unravel)``: ``flat`` a 1-D array; ``unravel(flat)`` rebuilds the pytree,
      each leaf with its original shape and dtype (mixed dtypes: ``unravel`` requires
      ``flat``'s dtype, TypeError otherwise; ValueError for a wrong length).

    Example:
      >>> flat, unravel = ravel_pytree({"w": jnp.ones((2, 2)), "b": jnp.zeros(2)})
      >>> flat.shape
      (6,)
    """
    leaves, treedef = tree_flatten(pytree)
    if not leaves:
        from .numpy import zeros
        return zeros((0,), np.float32), _Unravel(treedef, (), (), None, None)
    from_dtypes = tuple(dtypes.dtype_and_weak(x)[0] for x in leaves)
    to_dtype = dtypes.result_type(*from_dtypes)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    sizes = tuple(math.prod(s) for s in shapes)
    if all(dt == to_dtype for dt in from_dtypes):
        flat = lax.concatenate([lax.reshape(_as_operand(x), (n,))
                                for x, n in zip(leaves, sizes)], 0)
        return flat, _Unravel(treedef, sizes, shapes, None, to_dtype)
    flat = lax.concatenate(
        [lax.reshape(lax.convert_element_type(_as_operand(x), to_dtype), (n,))
         for x, n in zip(leaves, sizes)], 0)
    return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)


def _as_operand(x):
    from .numpy._util import ensure_array
    return ensure_array(x)
