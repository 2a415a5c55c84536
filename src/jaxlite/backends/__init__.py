"""Backends: each turns an optimised program into an executable.  One module each;
``register_backend`` makes one available to the compiler by name."""
from .base import Executable, register_backend, get_backend, backends
from . import interpreter  # noqa: F401  (registers itself)


def _cpu(closed, name):
    # tiered: interpreter first, native code from a background thread (_tiered.py);
    # Numba is imported there, on first use
    from ._tiered import compile_cpu
    return compile_cpu(closed, name)


register_backend("cpu", _cpu)
