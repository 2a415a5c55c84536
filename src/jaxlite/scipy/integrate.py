"""``jaxlite.scipy.integrate`` (``jax.scipy.integrate``): the trapezoidal rule."""
from __future__ import annotations

import sys

from .. import _traceback
from .. import numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, with sample points
    ``x`` (broadcast against ``y``) or a constant spacing ``dx``
    (``jax.scipy.integrate.trapezoid``; the same computation as ``jnp.trapezoid``).
    The result drops ``axis``; integer ``y`` gives the default float dtype.  Raises
    ValueError for an ``axis`` out of range."""
    return jnp.trapezoid(y, x=x, dx=dx, axis=axis)


# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(sys.modules[__name__])
