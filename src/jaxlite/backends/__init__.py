"""Backends: each turns an optimised program into an executable.  One module each;
``register_backend`` makes one available to the compiler by name."""
from .base import Executable, register_backend, get_backend, backends
from . import interpreter  # noqa: F401  (registers itself)


def _cpu(closed, name):
    # imported on first use: Numba takes a while to import
    from .cpu import CpuExecutable
    return CpuExecutable(closed, name)


register_backend("cpu", _cpu)
