"""Shared helpers for primitive declarations: error messages and dtype-class checks."""
from __future__ import annotations

import numpy as np

from .. import dtypes

_F16S = dtypes.UPCAST


def dtype_class_ok(dt: np.dtype, allowed: str) -> bool:
    """allowed is a string of classes: f float, c complex, i signed, u unsigned, b bool."""
    if dt == np.bool_:
        return "b" in allowed
    return dtypes.kind(dt) in allowed


_CLASS_NAMES = {"f": "floating", "c": "complexfloating", "i": "signedinteger",
                "u": "unsignedinteger", "b": "bool"}


def check_dtypes(name: str, avals, allowed: str) -> None:
    for a in avals:
        if not dtype_class_ok(a.dtype, allowed):
            ok = ", ".join(_CLASS_NAMES[c] for c in allowed)
            raise TypeError(f"{name} does not accept dtype {_dtype_name(a.dtype)}. "
                            f"Accepted dtypes are subtypes of {ok}.")


def _dtype_name(dt) -> str:
    return "bfloat16" if np.dtype(dt) == dtypes._BF16 else np.dtype(dt).name


def check_same_dtypes(name: str, avals) -> None:
    dts = {a.dtype for a in avals}
    if len(dts) > 1:
        got = ", ".join(_dtype_name(a.dtype) for a in avals)
        raise TypeError(f"{name}: all operands must share one dtype, but they are {got}; "
                        f"jaxlite.numpy functions promote for you, lax functions do not (convert "
                        f"with .astype or lax.convert_element_type first).")


def broadcast_shapes_elementwise(name: str, avals) -> tuple:
    """The result shape of an elementwise primitive of ``avals``, as JAX's broadcasting
    shape rule: rank-0 operands broadcast; the others must have one rank, and per dimension
    their sizes must agree except that size 1 broadcasts (to any size, 0 included).
    Raises TypeError: naming the ranks (``add: arrays must have the same number of
    dimensions, got {1, 2}``) or the shapes of the non-scalar operands."""
    shapes = [tuple(a.shape) for a in avals if a.shape]
    if not shapes:
        return ()
    first = shapes[0]
    if all(s == first for s in shapes[1:]):
        return first
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        got = "{" + ", ".join(str(r) for r in sorted(ranks)) + "}"
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {got}")
    out = []
    for ds in zip(*shapes):
        big = {d for d in ds if d != 1}
        if len(big) > 1:
            got = ", ".join(str(s) for s in shapes)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {got}.")
        out.append(big.pop() if big else 1)
    return tuple(out)


def same_shapes_elementwise(name: str, avals) -> tuple:
    """The result shape of an elementwise primitive that takes no size-1 broadcasting
    (``select_n``): operands of one shape, except rank-0 operands, which broadcast.
    Returns that shape or raises TypeError naming all shapes."""
    shape = None
    for a in avals:
        if a.shape == ():
            continue
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            got = ", ".join(str(a.shape) for a in avals)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {got}.")
    return shape if shape is not None else ()


def upcast_half(*xs):
    """float16/bfloat16/narrow float inputs computed in float32, narrow integers in a byte
    (``dtypes.compute_dtype``; the result is rounded back by the caller's output dtype),
    as XLA does on CPU."""
    return [x.astype(dtypes.compute_dtype(x.dtype)) if x.dtype in _F16S else x for x in xs]


def normalize_axes(axes, ndim: int, name: str) -> tuple:
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: duplicate value in 'axes': {tuple(axes)}")
    return tuple(out)
