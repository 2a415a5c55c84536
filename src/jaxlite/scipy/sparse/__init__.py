"""``jaxlite.scipy.sparse`` (``jax.scipy.sparse``): ``linalg``, iterative solvers."""
from ... import _traceback
from . import linalg  # noqa: F401

# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(linalg)
