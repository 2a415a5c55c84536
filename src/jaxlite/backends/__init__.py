"""Backends: each platform's implementation, one folder (or module) each.

- ``interpreter.py``: the reference executor (a program as straight-line NumPy calls);
  every other backend is tested against it.
- ``cpu/``: the CPU platform (host memory, tiered native code); registers itself as the
  ``'cpu'`` platform's Backend (runtime/backend.py) when imported.
- ``pjrt/``: the platforms of XLA's PJRT plugins (``tpu``, ``gpu``, ``xla_cpu``),
  registered on demand.

A new platform is one folder here plus one ``jaxlite.runtime.backend.register(...)`` call
(a test can define one without touching this package, see tests/test_outside_platform.py).
``register_backend``/``get_backend`` name the executors the CPU backend chooses between
(``'cpu'``: tiered native code; ``'interpreter'``).
"""
from .base import Executable, register_backend, get_backend, backends
from . import interpreter  # noqa: F401  (registers the "interpreter" executor)
# the CPU platform, with the tiered front of its native executor: imported with jaxlite so
# that a program's first call does not pay for importing it and its persistent cache
# (hashlib among them); Numba itself is imported by the background build, on first use.
from . import cpu  # noqa: F401
# the PJRT platforms (tpu, gpu, xla_cpu): registered when first asked for, loading no
# plugin at import
from . import pjrt  # noqa: F401
