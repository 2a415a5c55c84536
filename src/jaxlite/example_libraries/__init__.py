"""``jaxlite.example_libraries``: the small optimizer and neural-network libraries JAX ships
as examples (``jax.example_libraries.optimizers`` and ``.stax``), which tutorials use.

Layer: public API over ``jaxlite.numpy``, ``lax``, ``random`` and ``nn``; import the
submodules explicitly (``from jaxlite.example_libraries import optimizers, stax``).
"""
