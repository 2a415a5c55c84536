"""Primitive declarations, one family per module; importing this registers them all.

NumPy's floating-point RuntimeWarnings (overflow, invalid value, divide by zero) are
silenced for warnings raised from jaxlite's own modules: JAX computes inf/nan quietly, and
an ``np.errstate`` block around every operation would cost more than the operation.
"""
import warnings

warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"jaxlite(\.|$)")

from . import elementwise, shape, reduction, linalg, indexing, control  # noqa: F401,E402
