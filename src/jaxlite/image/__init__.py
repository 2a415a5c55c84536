"""``jaxlite.image``: image resampling (``jax.image``): ``resize`` and
``scale_and_translate`` with nearest, linear, cubic, Lanczos and area kernels.

Layer: public API over ``jaxlite.numpy``; each resampled axis is one contraction with a
weight matrix, so grad, vmap and jit follow from ``einsum``'s rules.
"""
from ._scale import ResizeMethod, resize, scale_and_translate  # noqa: F401

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
