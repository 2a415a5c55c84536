"""``jaxlite.scipy.cluster`` (``jax.scipy.cluster``): ``vq``."""
from ... import _traceback
from . import vq  # noqa: F401

# the public functions are traceback boundaries (jaxlite/_traceback.py), as jaxlite.numpy's
_traceback.wrap_namespace(vq)
