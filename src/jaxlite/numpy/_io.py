"""Arrays from and to bytes, text and files, and their printed forms (``jax.numpy``):
``frombuffer``, ``fromstring``, ``load``, ``save``, ``savez``, ``array_repr``,
``array_str``, the print options; ``fromfile`` and ``fromiter`` raise as in JAX.

Layer: numpy (host NumPy reads and writes; results become arrays on the default device).
"""
from __future__ import annotations

import numpy as np

from ._util import public_names


def _asarray(x):
    from .. import numpy as jnp
    return jnp.asarray(x)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """A 1-d array of the bytes of ``buffer`` read as ``dtype`` (``jax.numpy.frombuffer``;
    NumPy's reading, then the canonical dtype). Raises ValueError when the size is not a
    multiple of the element size."""
    return _asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """A 1-d array of the numbers in the text ``string`` separated by ``sep``
    (``jax.numpy.fromstring``)."""
    return _asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(*args, **kwargs):
    """Not available (``jax.numpy.fromfile`` raises too): reading a file is a side effect
    a transformed function must not have. Read with NumPy, then ``jnp.asarray``."""
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromfile(...)) instead.")


def fromiter(*args, **kwargs):
    """Not available (``jax.numpy.fromiter`` raises too): consuming an iterator is a side
    effect. Use ``jnp.asarray(np.fromiter(...))``."""
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromiter(...)) instead.")


def load(file, *args, **kwargs):
    """An array saved by ``save`` (``jax.numpy.load``: NumPy's ``load``, the result
    converted to an Array of the canonical dtype; ``.npz`` archives are returned as
    NumPy's NpzFile)."""
    out = np.load(file, *args, **kwargs)
    return _asarray(out) if isinstance(out, np.ndarray) and out.dtype != object else out


save = np.save
savez = np.savez


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The ``repr`` text of ``arr`` with NumPy's options (``jax.numpy.array_repr``)."""
    return np.array_repr(arr, max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """The ``str`` text of ``a`` with NumPy's options (``jax.numpy.array_str``)."""
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def printoptions(*args, **kwargs):
    """Context manager for the print options (``jax.numpy.printoptions``: NumPy's, which
    arrays' printing uses)."""
    return np.printoptions(*args, **kwargs)


def get_printoptions():
    """The current print options (``jax.numpy.get_printoptions``)."""
    return np.get_printoptions()


def set_printoptions(*args, **kwargs):
    """Sets the print options (``jax.numpy.set_printoptions``)."""
    return np.set_printoptions(*args, **kwargs)


__all__ = public_names(globals()) + ["save", "savez"]
