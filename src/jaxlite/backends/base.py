"""The backend contract and registry.

A backend is ``compile(closed_jaxpr, name) -> Executable``.  An Executable runs on NumPy
values (``run(args) -> outputs``), prints itself (``as_text``), and reports the peak bytes
of temporaries its plan needs (``temp_bytes``), which the runtime charges to the device
while it runs.  A backend that compiles sub-programs itself (the native loops) gets them
optimised through ``optimize_body``, which the compiler registers (``set_body_optimizer``):
the arrow points from the compiler down to the backends, never back.
"""
from __future__ import annotations

_BACKENDS: dict = {}
_BODY_OPTIMIZER = None


def set_body_optimizer(fn) -> None:
    """Registers ``fn(closed_jaxpr) -> closed_jaxpr``, the optimiser a backend applies to
    the sub-programs it compiles itself (loop bodies).  The compiler layer registers its
    pass pipeline here when it is imported, so backends never import the compiler."""
    global _BODY_OPTIMIZER
    _BODY_OPTIMIZER = fn


def optimize_body(closed):
    """``closed`` run through the registered optimiser (unchanged when none is)."""
    return closed if _BODY_OPTIMIZER is None else _BODY_OPTIMIZER(closed)


class Executable:
    """A compiled program: ``run(list_of_ndarrays) -> list_of_ndarrays``."""

    backend: str = "?"
    temp_bytes: int = 0

    def run(self, args):
        raise NotImplementedError

    def as_text(self) -> str:
        raise NotImplementedError


def register_backend(name: str, compile_fn) -> None:
    """Makes ``compile_fn(closed_jaxpr, name) -> Executable`` available as ``name``."""
    _BACKENDS[name] = compile_fn


def get_backend(name: str):
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown compiler backend {name!r}; available: "
                         f"{sorted(_BACKENDS)}") from None


def backends() -> list:
    return sorted(_BACKENDS)
