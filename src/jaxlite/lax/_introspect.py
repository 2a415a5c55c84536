"""``typeof`` (``jax.typeof``, re-exported at the top level): the abstract value of a value.

Layer: public ops (lax): typed keys come from ``random``, a traced value's sharding type
from the staged program (transforms/stages.py), a sharded array's from
transforms/sharded_api.py.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.trace import Tracer, get_aval

__all__ = ["typeof"]


def typeof(x):
    """The abstract value of ``x`` (mirrors ``jax.typeof``): its shape, dtype and weak type,
    as a ``ShapedArray``.

    Works on Arrays, NumPy values, Python scalars (weakly typed: ``typeof(1.0)`` prints
    ``~float32[]``), typed PRNG keys (a ``KeyAval``, ``key<fry>[]``) and traced values
    inside ``jit``/``grad``/``vmap``.  ``str()`` of the
    result is JAX's short form (``float32[3]``, ``~`` marking a weak type), ``repr()`` the
    long one (``ShapedArray(float32[3])``).

    Raises:
      TypeError: ``x`` is not an array-like value (a list, a tuple, None, a str).
    """
    from ..random._keys import PRNGKeyArray
    if isinstance(x, PRNGKeyArray):
        return KeyAval(x.shape, x.dtype)
    if isinstance(x, (list, tuple, dict, str, bytes, type(None))) or \
            (isinstance(x, np.ndarray) and x.dtype.kind in "OUSV"):
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type")
    from ..core.sharded import ShardedArray
    if type(x) is ShardedArray:
        from ..transforms.sharded_api import sharded_typeof
        return sharded_typeof(x)    # float32[8@x,4]: the Explicit mesh axes it uses
    from ..core.staging import DynamicJaxprTracer
    while isinstance(x, Tracer) and type(x) is not DynamicJaxprTracer and \
            hasattr(x, "primal"):   # differentiated inside jit: the primal's type
        x = x.primal
    if type(x) is DynamicJaxprTracer:
        typed = _staged_typeof(x)
        if typed is not None:
            return typed
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type") \
            from None


def _staged_typeof(x):
    """``typeof`` of a value being staged by ``jit`` over arguments on a mesh: its
    abstract value with JAX's sharding type (``float32[8@x,4]`` and ``.sharding``, see
    ``transforms/stages.py`` ``staged_tys``); None when the trace has no mesh."""
    from ..core.avals import ShardedShapedArray
    from ..sharding import NamedSharding, PartitionSpec
    from ..transforms.stages import staged_tys
    res = staged_tys([x])
    if res is None:
        return None
    mesh, (ty,) = res
    aval = x.aval
    spec = ((),) * aval.ndim if ty is None or len(ty.spec) != aval.ndim else ty.spec
    entries = [None if not e else (e[0] if len(e) == 1 else tuple(e)) for e in spec]
    return ShardedShapedArray(aval.shape, aval.dtype, aval.weak_type,
                              NamedSharding(mesh.abstract_mesh, PartitionSpec(*entries)),
                              tuple(tuple(e) for e in spec))


class KeyAval:
    """The abstract value of a typed PRNG key array (``typeof(jax.random.key(0))``): its
    ``shape`` and key ``dtype`` (``key<fry>``); prints as JAX's (``key<fry>[]``)."""

    __slots__ = ("shape", "dtype")
    weak_type = False

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __eq__(self, other):
        return type(other) is KeyAval and (self.shape, self.dtype) == (other.shape,
                                                                       other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __str__(self):
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        return f"ShapedArray({self})"
