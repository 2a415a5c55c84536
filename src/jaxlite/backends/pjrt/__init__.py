"""The PJRT platforms: XLA's compilers for TPUs, GPUs and the CPU, reached through the
PJRT C API (one plugin library per platform; ``pip install jaxlite[tpu]``, ``[cuda]``,
``[xla-cpu]``).

Layer: backends.  This folder is the whole of it:

- ``_capi.py``: the ctypes binding of ``pjrt_c_api.h``;
- ``client.py``: plugin, client, devices, buffers, executables as Python objects;
- ``plugins.py``: finding the installed plugins (libtpu, entry points, environment,
  config ``jaxlite_pjrt_plugin``), loading none;
- ``backend.py``: ``PjrtBackend``, one runtime Backend per plugin (platforms ``tpu``,
  ``cuda`` (devices say ``gpu``), ``xla_cpu``), registered when first asked for;
- ``lowering.py``: jaxlite's IR to StableHLO text;
- ``pieces.py``: programs holding host callbacks (``jax.debug.print``, ``pure_callback``,
  ``io_callback``), run in compiled pieces around them;
- ``_run.py``: a jitted call with donated arguments, through PJRT's donation.

Importing this package registers the provider of these platforms with the runtime
(``runtime.backend.add_provider``) and nothing else: no plugin is loaded and no chip
opened until a platform is asked for (``jax.devices('tpu')``, ``JAX_PLATFORMS``, or the
first ``default_backend()`` on a machine with an accelerator plugin installed).
"""
from ...runtime import backend as _runtime_backend


class _LazyProvider:
    """The provider protocol (runtime/backend.py), importing ``backend.py`` (ctypes, the
    binding) only when a platform is first asked for."""

    def _real(self):
        from .backend import PROVIDER
        return PROVIDER

    def provide(self, name):
        from . import plugins
        if name == "cpu" or (name not in plugins.INSTALL_HINTS and
                             plugins.find(name) is None):
            return None
        return self._real().provide(name)

    def hint(self, name):
        from . import plugins
        if name in plugins.INSTALL_HINTS and plugins.find(name) is None:
            return self._real().hint(name)
        return None

    def autodetect(self):
        from . import plugins
        if any(p.platform in ("tpu", "cuda", "rocm") for p in plugins.discover()):
            self._real().autodetect()


_runtime_backend.add_provider(_LazyProvider())
