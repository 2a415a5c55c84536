"""``jaxlite.lax.linalg`` (``jax.lax.linalg``): matrix decompositions as primitives.

Layer: lax (thin wrappers binding ``primitives.linalg``).
"""
from __future__ import annotations

from ..primitives import linalg as _l


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition of the matrices in the last two axes of ``x``
    (``jax.lax.linalg.svd``).

    Returns ``s`` (shape ``(..., min(m, n))``, real, descending) when ``compute_uv`` is
    False, else ``(u, s, vh)`` with ``x == u @ diag(s) @ vh`` (``u``: ``(..., m, m)`` or
    ``(..., m, k)`` when not ``full_matrices``).  Raises TypeError for non-float input and
    ValueError for rank < 2.
    """
    if subset_by_index is not None:
        raise NotImplementedError("svd subset_by_index is not supported")
    out = _l.svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return out[0] if not compute_uv else tuple(out)
