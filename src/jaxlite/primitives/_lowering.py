"""Small factories of lowering rules (``Primitive(lowering=...)``), shared by the primitive
declarations.

A rule is ``rule(ctx, *operands, **params)``; ``ctx`` is the PJRT backend's lowering
context (``backends/pjrt/lowering.py``), of which rules use only the methods, so nothing
here imports a backend.  Operands are the context's Values (``.aval``: the ShapedArray).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes


def _operands_to(ctx, xs, shape):
    """Elementwise operands broadcast to the result's ``shape`` (rank-0 operands of
    jaxlite's elementwise primitives broadcast; StableHLO's operations do not)."""
    return [ctx.broadcast(x, shape) for x in xs]


def elementwise(op: str):
    """The rule of an elementwise primitive computed by one StableHLO/CHLO operation
    ``op`` (``"stablehlo.add"``, ``"chlo.erf"``) on its operands broadcast to the result's
    shape; the result type is the equation's."""
    def rule(ctx, *xs, **params):
        out = ctx.avals_out[0]
        return ctx.op(op, _operands_to(ctx, xs, out.shape), out)
    rule.__name__ = f"lower_{op.split('.')[-1]}"
    return rule


def compare(direction: str):
    """The rule of a comparison primitive: ``stablehlo.compare`` in ``direction`` (EQ, NE,
    LT, LE, GT, GE), of the operands' comparison type (FLOAT, SIGNED, UNSIGNED)."""
    def rule(ctx, x, y):
        shape = ctx.avals_out[0].shape
        x, y = _operands_to(ctx, (x, y), shape)
        return ctx.compare(x, y, direction)
    rule.__name__ = f"lower_compare_{direction.lower()}"
    return rule


def identity(ctx, x, **params):
    """The rule of a primitive whose result is its operand (copy, stop_gradient, a
    sharding constraint on one partition)."""
    return x


def _is_float(dt) -> bool:
    return dtypes.kind(np.dtype(dt)) == "f"


def maximum(ctx, x, y):
    """``max(x, y)`` with the implementations' float semantics: a NaN operand wins (the
    first of two), and of two zeros +0.0 unless both are -0.0.  On XLA:CPU spelled out
    with compares and selects: its own ``maximum`` may be the processor's, which returns
    the second operand for a NaN and keeps the first of two zeros.  On an accelerator
    (``tpu``, ``gpu``) XLA's own ``maximum``, as JAX emits it there: NaN-propagating, and
    four selects per element inside a reduction would cost a TPU's row reductions (softmax,
    logsumexp) about 15% (bench T3); the sign of a max of two zeros is then the chip's, as
    in JAX."""
    return _minmax(ctx, x, y, True)


def minimum(ctx, x, y):
    """``min(x, y)``: as ``maximum``, the smaller; of two zeros -0.0 unless both are +0.0."""
    return _minmax(ctx, x, y, False)


_SAME_WIDTH_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# platforms whose float max/min lower to XLA's own ops (see ``maximum``)
_NATIVE_MINMAX = frozenset({"tpu", "gpu"})


def _minmax(ctx, x, y, is_max):
    dt = x.aval.dtype
    if not _is_float(dt) or ctx.platform in _NATIVE_MINMAX:
        if dt == np.bool_:
            return ctx.binary("or" if is_max else "and", x, y)
        return ctx.binary("maximum" if is_max else "minimum", x, y)
    r = ctx.select(ctx.compare(x, y, "GT" if is_max else "LT"), x, y)
    # Of two equal operands, the AND (max) or OR (min) of their bits: the operand itself
    # unless they are zeros of opposite signs, then +0.0 (max) or -0.0 (min).  Bit
    # operations, not x + y: XLA simplifies ``x + 0.0`` to ``x``, which keeps a -0.0.
    bits = ctx.aval(x.aval.shape, _SAME_WIDTH_UINT[np.dtype(dt).itemsize])
    bx, by = (ctx.op("stablehlo.bitcast_convert", [v], bits) for v in (x, y))
    same = ctx.op("stablehlo.bitcast_convert",
                  [ctx.binary("and" if is_max else "or", bx, by)], x.aval)
    r = ctx.select(ctx.compare(x, y, "EQ"), same, r)
    r = ctx.select(ctx.compare(y, y, "NE"), y, r)
    return ctx.select(ctx.compare(x, x, "NE"), x, r)
