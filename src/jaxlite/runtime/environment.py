"""``print_environment_info`` (``jax.print_environment_info``, re-exported at the top
level): the versions, devices and platform a bug report needs.

Layer: runtime (the device list and process count).
"""
from __future__ import annotations

import platform
import sys

import numpy as np

from ..version import __version__
from .device import devices, process_count

__all__ = ["print_environment_info"]


def _versions() -> list:
    rows = [("jaxlite", __version__), ("numpy", np.__version__)]
    for mod in ("numba", "ml_dtypes", "optree"):
        m = sys.modules.get(mod)
        if m is None:
            try:
                m = __import__(mod)
            except ImportError:
                continue
        rows.append((mod, getattr(m, "__version__", "?")))
    return rows


def print_environment_info(return_string: bool = False) -> str | None:
    """Prints (or returns, with ``return_string=True``) the versions of jaxlite and its
    libraries, Python, the devices, the process count and the platform: the facts a bug
    report needs (mirrors ``jax.print_environment_info``, whose first lines name jax and
    jaxlib; here jaxlite, NumPy, Numba, ml_dtypes and optree).

    Returns None, or the text when ``return_string`` is true.
    """
    devs = devices()
    width = max(len(name) for name, _ in _versions()) + 2
    lines = [f"{name + ':':<{width}}{ver}" for name, ver in _versions()]
    lines.append(f"{'python:':<{width}}{sys.version}")
    lines.append(f"device info: {devs[0].platform}-{len(devs)}, {len(devs)} local devices")
    lines.append(f"process_count: {process_count()}")
    lines.append(f"platform: {platform.uname()}")
    text = "\n".join(lines) + "\n"
    if return_string:
        return text
    print(text)
    return None
