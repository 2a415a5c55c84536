"""``jaxlite.debug``: printing that happens on every run, also inside jit
(``jax.debug.print``)."""
from __future__ import annotations

import builtins

import numpy as np

from .core.array import ArrayImpl
from .core.trace import Tracer
from .lax import debug_callback
from .tree_util import tree_flatten, tree_unflatten


def callback(fn, *args, ordered: bool = False, **kwargs) -> None:
    """Calls ``fn(*args, **kwargs)`` with the runtime values (arrays as NumPy arrays) on
    every run of the enclosing function, also under jit (``jax.debug.callback``)."""
    leaves, tree = tree_flatten((args, kwargs))
    dyn = [i for i, x in enumerate(leaves) if isinstance(x, (ArrayImpl, Tracer))]

    def cb(*vals):
        full = list(leaves)
        for i, v in zip(dyn, vals):
            full[i] = np.asarray(v)
        a, k = tree_unflatten(tree, full)
        fn(*a, **k)

    debug_callback(cb, *[leaves[i] for i in dyn])


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Formats ``fmt`` with the runtime values of ``args``/``kwargs`` and prints it, each
    time the (possibly jitted) function runs (``jax.debug.print``).

    ``fmt`` uses ``str.format`` fields; array arguments print as NumPy arrays.
    """
    callback(lambda *a, **k: builtins.print(fmt.format(*a, **k)), *args, ordered=ordered,
             **kwargs)
