"""Backends: each turns an optimised program into an executable.  One module each;
``register_backend`` makes one available to the compiler by name."""
from .base import Executable, register_backend, get_backend, backends
from . import interpreter  # noqa: F401  (registers itself)
# the default backend's front: tiered (interpreter first, native code from a background
# thread).  Imported here, with jaxlite, so that a program's first call does not pay for
# importing it and its persistent cache (hashlib among them); Numba itself is imported by
# the background build, on first use.
from ._tiered import compile_cpu as _compile_cpu

register_backend("cpu", _compile_cpu)
