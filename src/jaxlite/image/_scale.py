"""Separable resampling: per resampled axis, an ``(in, out)`` weight matrix from a kernel
evaluated at the distance between each output sample's position in the input and each input
index, normalised per output sample; then one ``einsum`` applies them all."""
from __future__ import annotations

import enum
import math
import string

import numpy as np

from .. import dtypes, errors, lax
from .. import numpy as jnp
from ..core.trace import Tracer
from ..numpy._util import canonicalize_axis, promote_dtypes_inexact

_EPS_F32 = float(np.finfo(np.float32).eps)


class ResizeMethod(enum.Enum):
    """The resampling kernels of ``resize`` and ``scale_and_translate``
    (``jax.image.ResizeMethod``)."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str):
        """The method named ``s`` (``"nearest"``, ``"linear"``/``"bilinear"``/
        ``"trilinear"``/``"triangle"``, ``"lanczos3"``, ``"lanczos5"``, ``"cubic"``/
        ``"bicubic"``/``"tricubic"``, ``"cubic-pytorch"``/``"bicubic-pytorch"``,
        ``"area"``); ValueError for anything else."""
        method = _NAMES.get(s)
        if method is None:
            raise ValueError(f'Unknown resize method "{s}"')
        return method


_NAMES = {"nearest": ResizeMethod.NEAREST,
          **dict.fromkeys(["linear", "bilinear", "trilinear", "triangle"], ResizeMethod.LINEAR),
          "lanczos3": ResizeMethod.LANCZOS3, "lanczos5": ResizeMethod.LANCZOS5,
          **dict.fromkeys(["cubic", "bicubic", "tricubic"], ResizeMethod.CUBIC),
          **dict.fromkeys(["cubic-pytorch", "bicubic-pytorch"], ResizeMethod.CUBIC_PYTORCH),
          "area": ResizeMethod.AREA}


# ---- kernels: functions of the (non-negative) distance x -------------------------------

def _lanczos(radius):
    def kernel(x):
        y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        # sinc(x) sinc(x / radius), with its limit 1 near 0
        out = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
        return jnp.where(x > radius, 0.0, out)
    return kernel


def _cubic(a):
    """Keys' cubic convolution kernel with parameter ``a`` (-0.5: Keys; -0.75: OpenCV and
    PyTorch)."""
    def kernel(x):
        near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))
    return kernel


def _keys_cubic(x):
    # the a = -0.5 case, in the evaluation order JAX uses (so rounding agrees)
    near = (1.5 * x - 2.5) * x * x + 1.0
    far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
    return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))


def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()   # box overlap, computed from interval ends rather than a kernel
_KERNELS = {ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
            ResizeMethod.LANCZOS5: (5, _lanczos(5.0)), ResizeMethod.CUBIC: (2, _keys_cubic),
            ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)), ResizeMethod.AREA: (1, _AREA)}


def _normalise(w):
    """Each column divided by its sum; columns summing to ~0 become 0."""
    total = jnp.sum(w, axis=0, keepdims=True)
    return jnp.where(jnp.abs(total) > 1000.0 * _EPS_F32,
                     jnp.divide(w, jnp.where(total != 0, total, 1)), 0)


def _weight_matrix(n_in, n_out, scale, translation, kernel, antialias, edge_padding, radius):
    """The ``(n_in, n_out)`` weights mapping one axis of the input to the output."""
    dtype = dtypes.result_type(scale, translation)
    inv_scale = 1.0 / scale
    # downsampling with antialiasing widens the kernel by the scale factor
    kernel_scale = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
    # each output sample's centre, in input coordinates
    sample = ((jnp.arange(n_out, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale
              - 0.5)
    pad = 0
    if edge_padding:
        if antialias:
            if isinstance(scale, Tracer):
                raise errors.ConcretizationTypeError(
                    scale, "Antialiasing with edge padding requires a static scale.")
            pad = math.ceil(radius * max(1.0 / float(scale), 1.0))
        else:
            pad = radius
    taps = jnp.arange(-pad, n_in + pad, dtype=dtype)
    if kernel is _AREA:
        left = jnp.arange(n_out, dtype=dtype) * inv_scale - translation * inv_scale
        right = left + inv_scale
        in_left = jnp.arange(n_in, dtype=dtype)
        in_right = in_left + 1.0
        w = jnp.maximum(0.0, jnp.minimum(right[None, :], in_right[:, None])
                        - jnp.maximum(left[None, :], in_left[:, None]))
    else:
        w = kernel(jnp.abs(sample[None, :] - taps[:, None]) / kernel_scale)
    if edge_padding:
        # taps outside the image take the edge pixel's value: fold their weights onto it
        rows = jnp.clip(taps.astype(np.int32), 0, n_in - 1)
        cols = lax.broadcast_in_dim(jnp.arange(n_out), (taps.shape[0], n_out), (1,))
        folded = jnp.zeros((n_in, n_out), dtype=dtype).at[rows[:, None], cols].add(w)
        return _normalise(folded)
    w = _normalise(w)
    inside = jnp.logical_and(sample >= -0.5, sample <= n_in - 0.5)
    return jnp.where(inside[None, :], w, 0)


def _apply(x, out_shape, spatial_dims, scales, translations, kernel, antialias, precision,
           edge_padding=False, radius=None):
    if not spatial_dims:
        return x
    letters = iter(string.ascii_letters)
    in_sub = [next(letters) for _ in range(x.ndim)]
    out_sub = list(in_sub)
    operands, subs = [x], ["".join(in_sub)]
    for i, d in enumerate(spatial_dims):
        d = canonicalize_axis(d, x.ndim)
        w = _weight_matrix(x.shape[d], out_shape[d], scales[i], translations[i], kernel,
                           antialias, edge_padding, radius).astype(x.dtype)
        new = next(letters)
        operands.append(w)
        subs.append(in_sub[d] + new)
        out_sub[d] = new
    spec = ",".join(subs) + "->" + "".join(out_sub)
    return jnp.einsum(spec, *operands, precision=precision)


def _method(method):
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(int(d) if isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                     else _bad_shape(shape) for d in shape)
    except TypeError:       # not iterable, or a bad entry: the one message, nothing chained
        raise _bad_shape_error(shape) from None


def _bad_shape_error(shape):
    return TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                     f"{shape}.")


def _bad_shape(shape):
    raise _bad_shape_error(shape)


def _check_rank(shape, image):
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have length equal to the number of dimensions of x;  "
                         f"{shape} vs {image.shape}")


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=lax.Precision.HIGHEST):
    """Resamples ``image`` to ``shape`` mapping output coordinates ``o`` of each spatial
    dim to input coordinates ``(o + 0.5 - translation) / scale - 0.5``
    (``jax.image.scale_and_translate``).

    Args:
      image: array; integer images are computed in float32.
      shape: the output shape (same rank as ``image``).
      spatial_dims: the resampled dims; ``scale``/``translation`` give one value each.
      method: a ``ResizeMethod`` or its name, except ``"nearest"``.
      antialias: when downsampling, widen the kernel (low-pass filter first).

    Returns:
      the resampled image, of the promoted inexact dtype; differentiable in the image,
      the scale and the translation.

    Raises:
      ValueError: ``shape`` of another rank, ``method="nearest"``, unknown methods.

    Example:
      >>> scale_and_translate(jnp.ones((4, 4)), (8, 8), (0, 1), jnp.array([2., 2.]),
      ...                     jnp.zeros(2), "linear").shape
      (8, 8)
    """
    shape = _shape(shape)
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    image, = promote_dtypes_inexact(image)
    scale, translation = promote_dtypes_inexact(scale, translation)
    return _apply(image, shape, tuple(spatial_dims), scale, translation, kernel, antialias,
                  precision, edge_padding=method == ResizeMethod.CUBIC_PYTORCH and not antialias,
                  radius=radius)


def _resize_nearest(x, out_shape):
    for d, (m, n) in enumerate(zip(x.shape, out_shape)):
        if m == n:
            continue
        # the input pixel whose cell holds the output pixel's centre (float32, as JAX)
        pos = (jnp.arange(n, dtype=np.float32) + 0.5) * m / n
        idx = jnp.floor(pos.astype(np.float32)).astype(np.int32)
        index = [slice(None)] * x.ndim
        index[d] = idx
        x = x[tuple(index)]
    return x


def _resize_impl(image, shape, method, antialias, precision):
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image, = promote_dtypes_inexact(image)
    dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _apply(image, shape, dims, scales, [0.0] * len(dims), kernel, antialias,
                  precision, edge_padding=method == ResizeMethod.CUBIC_PYTORCH and not antialias,
                  radius=radius)


_resize_jit = None


def resize(image, shape, method, antialias=True, precision=lax.Precision.HIGHEST):
    """Resizes ``image`` to ``shape`` (``jax.image.resize``): each dim whose size changes is
    resampled with ``method``, pixel centres aligned (``align_corners=False``).

    Args:
      image: array of any rank (batch and channel dims keep their sizes).
      shape: the output shape, same rank.
      method: ``"nearest"``, ``"linear"``, ``"cubic"``, ``"lanczos3"``, ``"lanczos5"``,
        ``"cubic-pytorch"``, ``"area"`` (or a ``ResizeMethod``).
      antialias: when downsampling, widen the kernel (no effect for ``"nearest"``).
      precision: of the contractions.

    Returns:
      the resized image; ``"nearest"`` keeps the dtype, the others compute in the
      promoted inexact dtype.

    Raises:
      ValueError: ``shape`` of another rank, an unknown method.
      TypeError: a shape that is not a sequence of ints.

    Example:
      >>> resize(jnp.arange(4.0).reshape(2, 2), (4, 4), "linear").shape
      (4, 4)
    """
    global _resize_jit
    if _resize_jit is None:
        from ..transforms import jit
        _resize_jit = jit(_resize_impl, static_argnums=(1, 2, 3, 4))
    return _resize_jit(image, _shape(shape), method, antialias, precision)
