"""``jaxlite.stages``: the stages of ``jit`` (mirrors ``jax.stages``).

``jax.jit(f)`` is a ``Wrapped``; ``.trace(*args)`` gives a ``Traced`` (its ``jaxpr``),
``.lower(*args)`` a ``Lowered`` (``as_text()``, ``cost_analysis()``), and
``.compile()`` a ``Compiled`` executable.  Re-exports only.
"""
from .transforms.stages import (ArgInfo, Compiled, CompilerOptions, Lowered,  # noqa: F401
                                Traced, Wrapped)

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
