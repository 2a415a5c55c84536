"""Small datasets for jaxlite's examples: the UCI handwritten digits, and a reader for a
user's own ``.npz`` of the same form.

Layer: data.  Plain NumPy in and out; it imports nothing else from jaxlite, so the examples
can hand the arrays to real JAX as well.  The bundled file and its licence are described
in ``README.md`` beside this module.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["load_digits", "load_npz", "DIGITS_PATH"]

#: The bundled copy of the UCI optical-recognition digits (1797 images of 8x8 pixels).
DIGITS_PATH = Path(__file__).resolve().parent / "digits.npz"


def load_npz(path) -> tuple[np.ndarray, np.ndarray]:
    """Reads a classification dataset stored as a ``.npz`` with arrays ``x`` and ``y``.

    Args:
      path: a path (``str`` or ``os.PathLike``) of a file written by ``np.savez`` or
        ``np.savez_compressed``.

    Returns:
      ``(x, y)`` as NumPy arrays: ``x`` of shape ``(n, d)`` (a real or integer dtype; an
      ``(n, h, w)`` stack of images is flattened to ``(n, h*w)``) and ``y`` of shape
      ``(n,)`` holding integer class labels ``>= 0`` (returned as ``int32``).

    Raises:
      FileNotFoundError: ``path`` does not exist.
      ValueError: the file is not a ``.npz`` archive, lacks ``x`` or ``y``, or they have
        the wrong rank, dtype or length; the message names what is wrong.

    Mirrors the role of ``sklearn.datasets.load_*`` for a user's own data (JAX itself has
    no dataset loaders).

    Example::

        np.savez("mine.npz", x=images, y=labels)
        x, y = load_npz("mine.npz")
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_npz: no such file: {path!r}")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise ValueError(f"load_npz: {path!r} is not a readable .npz archive ({e})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"load_npz: {path!r} holds a single array, not a .npz archive "
                         "with arrays 'x' and 'y' (write it with np.savez(path, x=..., y=...))")
    with archive:
        missing = [k for k in ("x", "y") if k not in archive.files]
        if missing:
            raise ValueError(f"load_npz: {path!r} lacks array(s) {missing}; it holds "
                             f"{sorted(archive.files)} (expected 'x' and 'y')")
        x, y = archive["x"], archive["y"]
    return _check_xy(x, y, path)


def _check_xy(x, y, where) -> tuple[np.ndarray, np.ndarray]:
    if x.ndim == 3:
        x = x.reshape(x.shape[0], -1)
    if x.ndim != 2:
        raise ValueError(f"load_npz: {where!r}: 'x' must have shape (n, d) or (n, h, w), "
                         f"got shape {x.shape}")
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)
            or x.dtype == np.bool_):
        raise ValueError(f"load_npz: {where!r}: 'x' must be numeric, got dtype {x.dtype}")
    if y.ndim != 1:
        raise ValueError(f"load_npz: {where!r}: 'y' must have shape (n,), got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"load_npz: {where!r}: 'y' must hold integer class labels, got "
                         f"dtype {y.dtype}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"load_npz: {where!r}: 'x' has {x.shape[0]} rows but 'y' has "
                         f"{y.shape[0]} labels")
    if x.shape[0] == 0:
        raise ValueError(f"load_npz: {where!r}: the dataset is empty (x shape {x.shape})")
    if y.min() < 0:
        raise ValueError(f"load_npz: {where!r}: 'y' holds negative label {int(y.min())}; "
                         "labels must be 0..num_classes-1")
    if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
        raise ValueError(f"load_npz: {where!r}: 'x' holds NaN or infinite values")
    return x, y.astype(np.int32)


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The UCI handwritten digits: 1797 grey-level 8x8 images of the digits 0-9.

    Returns:
      ``(x, y)``: ``x`` a ``uint8`` array of shape ``(1797, 64)`` (row-major 8x8 pixels,
      values 0..16) and ``y`` an ``int32`` array of shape ``(1797,)`` with labels 0..9
      (174 to 183 images per class).  Fresh arrays on every call.

    Raises:
      FileNotFoundError: the bundled ``digits.npz`` is missing from the installation.

    Mirrors ``sklearn.datasets.load_digits(return_X_y=True)`` (which returns float64
    pixels and int64 labels; cast as you need).

    Example::

        x, y = load_digits()
        x = x.astype(np.float32) / 16.0
    """
    if not DIGITS_PATH.exists():
        raise FileNotFoundError(f"load_digits: the bundled dataset {DIGITS_PATH} is missing "
                                "(is jaxlite installed with its package data?)")
    return load_npz(DIGITS_PATH)
