"""Products (``jax.numpy``): dot, matmul, vdot, inner, outer, tensordot."""
from __future__ import annotations

from .. import lax
from ._util import check_arraylike, ensure_array, promote_dtypes, public_names


def _operands(name, a, b):
    check_arraylike(name, a, b)
    a, b = promote_dtypes(a, b)
    return ensure_array(a), ensure_array(b)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's ``dot``: scalar product, matrix-vector, matrix product, or a sum over the
    last axis of ``a`` and second-to-last of ``b`` (``jax.numpy.dot``).

    Raises TypeError when the contracted dimensions differ, naming both shapes.
    """
    a, b = _operands("dot", a, b)
    if a.ndim == 0 or b.ndim == 0:
        from ._ufuncs import multiply
        return multiply(a, b)
    cb = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[cb]:
        raise TypeError(f"dot requires contracting dimensions to have the same shape, got "
                        f"shapes {a.shape} and {b.shape} (sizes {a.shape[-1]} and "
                        f"{b.shape[cb]}).")
    return lax.dot_general(a, b, (((a.ndim - 1,), (cb,)), ((), ())), precision,
                           preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with broadcasting over leading dimensions (``jax.numpy.matmul``,
    the ``@`` operator).  Raises ValueError for 0-d operands or mismatched inner sizes."""
    a, b = _operands("matmul", a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul operands must have at least one dimension, got shapes "
                         f"{a.shape} and {b.shape}")
    a2 = a if a.ndim > 1 else lax.reshape(a, (1,) + a.shape)
    b2 = b if b.ndim > 1 else lax.reshape(b, b.shape + (1,))
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} is "
                         f"different from {a2.shape[-1]}); shapes {a.shape} and {b.shape}")
    from ._util import broadcast_shapes, broadcast_to_shape
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = broadcast_to_shape(a2, batch + a2.shape[-2:])
    b2 = broadcast_to_shape(b2, batch + b2.shape[-2:])
    nb = len(batch)
    out = lax.dot_general(a2, b2, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                          precision, preferred_element_type)
    if a.ndim == 1:
        out = lax.squeeze(out, (out.ndim - 2,))
    if b.ndim == 1:
        out = lax.squeeze(out, (out.ndim - 1,))
    return out


__all__ = public_names(globals())
