"""``jaxlite.debug``: printing that happens on every run, also inside jit
(``jax.debug.print``)."""
from __future__ import annotations

import builtins
import string

import numpy as np

from .core.array import ArrayImpl
from .core.trace import Tracer
from .lax import debug_callback
from .tree_util import data_flatten as tree_flatten, tree_unflatten
from .transforms.sharded_api import (  # noqa: F401
    inspect_array_sharding, visualize_array_sharding, visualize_sharding)


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

    Raises:
      ValueError: an argument that no field of ``fmt`` uses (often an f-string passed
        as ``fmt``, already formatted with the tracers), as in JAX.
    """
    _check_all_used(fmt, args, kwargs)
    callback(lambda *a, **k: builtins.print(fmt.format(*a, **k)), *args, ordered=ordered,
             **kwargs)


def _check_all_used(fmt: str, args, kwargs) -> None:
    """KeyError/IndexError for a field of ``fmt`` that names no argument (as ``str.format``);
    ValueError naming the arguments no field refers to."""
    auto, indices, names = 0, set(), set()
    for _, field, _, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        head = field.split(".", 1)[0].split("[", 1)[0]
        if head == "":
            auto += 1
        elif head.isdigit():
            indices.add(int(head))
        else:
            names.add(head)
    for name in names:
        if name not in kwargs:
            raise KeyError(name)
    need = max([auto] + [i + 1 for i in indices])
    if need > len(args):
        raise IndexError(f"Replacement index {need - 1} out of range for positional args "
                         f"tuple")
    unused_kw = [k for k in kwargs if k not in names]
    if unused_kw:
        raise ValueError(f"jax.debug.print got keyword arguments that its format string "
                         f"never uses: {unused_kw}. Pass a plain format string such as "
                         f"'x={{x}}', not an f-string, which is formatted before the values "
                         f"are known.")
    unused = [a for i, a in enumerate(args) if i >= auto and i not in indices]
    if unused:
        raise ValueError(f"jax.debug.print got positional arguments that its format string "
                         f"never uses: {unused}.")
