"""``lax.Precision`` and the canonical form of the ``precision`` argument of ``dot_general``
and the convolutions (``jax.lax.Precision``).

Layer: lax.  jaxlite computes on the CPU in the operands' own precision (float32 products of
float32 operands), so every level gives the same numbers; the argument is checked and kept
in the program's parameters as JAX keeps it.
"""
from __future__ import annotations

import enum


class Precision(enum.Enum):
    """How precisely a contraction runs on accelerators (``jax.lax.Precision``):
    ``DEFAULT`` (fastest; bfloat16 passes on TPUs), ``HIGH`` (tensorfloat32-like, three
    bfloat16 passes) and ``HIGHEST`` (full float32).

    Also built from the names JAX accepts: ``Precision("highest")`` / ``"float32"`` is
    ``HIGHEST``, ``"high"`` / ``"bfloat16_3x"`` / ``"tensorfloat32"`` is ``HIGH``,
    ``"default"`` / ``"bfloat16"`` / ``"fastest"`` is ``DEFAULT``; anything else raises
    ValueError.  ``str()`` gives the member's name.

    Example::

        lax.dot(a, b, precision=lax.Precision.HIGHEST)
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        level = _ALIASES.get(value) if isinstance(value, str) else None
        return None if level is None else cls(level)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Precision.{self.name}"


_ALIASES = {"default": 0, "bfloat16": 0, "fastest": 0,
            "high": 1, "bfloat16_3x": 1, "tensorfloat32": 1,
            "highest": 2, "float32": 2}


class DotAlgorithmPreset(enum.Enum):
    """A named algorithm for a contraction (``jax.lax.DotAlgorithmPreset``): the operands'
    and the accumulation's types, such as ``F32_F32_F32`` or ``BF16_BF16_F32_X3``, given as
    ``precision=`` (the member or its name).  The result keeps the operands' dtype (or
    ``preferred_element_type``).  jaxlite computes every algorithm as its default one on
    the CPU (operands' precision, wider accumulation for half types); the preset is kept in
    the program's parameters and printed by name, as JAX prints it."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"


def canonicalize_precision(precision):
    """``None``, a pair ``(lhs_precision, rhs_precision)`` of ``Precision`` members, or a
    ``DotAlgorithmPreset``.

    Accepts None, a ``Precision``, one of the names above, a pair of ``Precision``
    members, a ``DotAlgorithmPreset`` or a preset's name (``"F32_F32_F32"``).  Raises
    ValueError for anything else (a misspelt name, an int, a pair holding strings or a
    longer sequence), as JAX.
    """
    if precision is None:
        return None
    if isinstance(precision, Precision):
        return (precision, precision)
    if isinstance(precision, DotAlgorithmPreset):
        return precision
    if isinstance(precision, str) and precision in _ALIASES:
        p = Precision(precision)
        return (p, p)
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    if (isinstance(precision, (tuple, list)) and len(precision) == 2
            and all(isinstance(p, Precision) for p in precision)):
        return tuple(precision)
    raise ValueError(f"precision={precision!r} is not understood: give None, a "
                     f"lax.Precision member, one of the names {sorted(_ALIASES)}, a pair "
                     f"(lhs, rhs) of lax.Precision members, or a lax.DotAlgorithmPreset or "
                     f"its name")


class AccuracyMode(enum.Enum):
    """The accuracy a transcendental function is asked for (``jax.lax.AccuracyMode``), given
    as ``accuracy=`` to ``exp``, ``log``, ``tanh`` and the like: ``HIGHEST`` or
    ``DEFAULT``.  jaxlite has one implementation of each function on the CPU, which serves
    every mode."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """An error bound a transcendental function is asked to meet (``jax.lax.Tolerance``):
    ``atol``, ``rtol`` and ``ulps``, each non-negative and at least one of them set.

    Raises ValueError for a negative bound or for none set, as JAX."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0 or rtol < 0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0 and rtol == 0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = float(atol), float(rtol), int(ulps)

    def __repr__(self) -> str:
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def check_accuracy(accuracy) -> None:
    """Accepts None, an ``AccuracyMode`` or a ``Tolerance``; anything else raises
    NotImplementedError, as JAX (``accuracy="highest"`` is not a mode)."""
    if accuracy is not None and not isinstance(accuracy, (AccuracyMode, Tolerance)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")
