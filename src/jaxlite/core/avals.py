"""Abstract values: what tracing knows of an array (shape, dtype, weak type).

Layer: core (a leaf module; the IR's typed variables use it too).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..config import config


class ShapedArray:
    """Abstract array: ``shape`` (tuple of ints), canonical ``dtype``, ``weak_type``.

    Mirrors ``jax.core.ShapedArray``.  Hashable and compared by value; it is the cache key
    of a traced argument.
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def sharding(self):
        """JAX's sharding type of a value on no mesh: a NamedSharding over the empty
        AbstractMesh with a whole spec, ``P(None, ...)`` (``jax.typeof(x).sharding``).
        Values typed on a mesh have a ShardedShapedArray."""
        from ..sharding import _EMPTY_ABSTRACT_MESH, NamedSharding, PartitionSpec
        return NamedSharding(_EMPTY_ABSTRACT_MESH, PartitionSpec(*[None] * len(self.shape)))

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> "ShapedArray":
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return self._hash

    def str_short(self) -> str:
        """``f32[3,4]``, the notation of the IR printer."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def _type_str(self) -> str:
        name = "bfloat16" if self.dtype == dtypes._BF16 else self.dtype.name
        return f"{name}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        w = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self._type_str()}{w})"

    def __str__(self):
        # JAX's short form (what ``print(jax.typeof(x))`` shows): ``~`` marks a weak type
        return ("~" if self.weak_type else "") + self._type_str()


class ShardedShapedArray(ShapedArray):
    """``typeof`` of a sharded Array: a ShapedArray that also carries ``sharding``, a
    NamedSharding over the abstract mesh whose spec keeps the mesh axes of Explicit type
    (as JAX's).  Prints them after each dimension they split: ``float32[8@x,4]``,
    ``float32[8@(x,y)]``; with Auto axes only it prints as a plain ShapedArray."""

    __slots__ = ("sharding", "_explicit")

    def __init__(self, shape, dtype, weak_type, sharding, explicit):
        super().__init__(shape, dtype, weak_type)
        self.sharding = sharding
        self._explicit = explicit

    def _type_str(self) -> str:
        base = super()._type_str()
        name = base[:base.index("[")]
        dims = []
        for d, names in zip(self.shape, self._explicit):
            if not names:
                dims.append(str(d))
            elif len(names) == 1:
                dims.append(f"{d}@{names[0]}")
            else:
                dims.append(f"{d}@({','.join(names)})")
        return f"{name}[{','.join(dims)}]"

    def str_short(self) -> str:
        """``f32[8@x,4]``: the IR printer's notation with the Explicit mesh axes."""
        short = dtypes.short_name(self.dtype)
        return short + self._type_str()[self._type_str().index("["):]

    def __eq__(self, other):
        if not isinstance(other, ShapedArray):
            return False
        return (self.shape == other.shape and self.dtype == other.dtype
                and self.weak_type == other.weak_type
                and self._explicit == getattr(other, "_explicit",
                                              ((),) * len(other.shape)))

    def __hash__(self):
        return self._hash


_scalar_avals: dict = {}


def scalar_aval(x) -> ShapedArray:
    """Abstract value of a Python scalar: rank 0, default dtype of its kind, weak (bool is
    strong).  Raises OverflowError for an int outside the default int dtype's range."""
    t = type(x)
    if t is int and not -0x80000000 <= x <= 0x7FFFFFFF:
        _check_int_range(x)
    key = (t, config.jax_enable_x64)
    aval = _scalar_avals.get(key)
    if aval is None:
        aval = _scalar_avals[key] = ShapedArray((), dtypes.python_scalar_dtype(x),
                                                t is not bool)
    return aval


_np_scalar_avals: dict = {}


def aval_of_value(x) -> ShapedArray:
    """Abstract value of a concrete operand: a Python scalar (weak), NumPy value or array."""
    if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
        # first: np.float64 / np.complex128 subclass Python float / complex but are strong
        key = (x.dtype, config.jax_enable_x64)
        aval = _np_scalar_avals.get(key)
        if aval is None:
            aval = _np_scalar_avals[key] = ShapedArray((), dtypes.canonicalize_dtype(x.dtype))
        return aval
    if isinstance(x, (bool, int, float, complex)):
        return scalar_aval(x)
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)


def _check_int_range(x: int) -> None:
    dt = dtypes.default_int_dtype()
    info = np.iinfo(dt)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
