"""``jaxlite.scipy.sparse`` (``jax.scipy.sparse``): ``linalg``, iterative solvers."""
from . import linalg  # noqa: F401
