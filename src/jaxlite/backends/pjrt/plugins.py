"""Finding PJRT plugins the way the ecosystem installs them.

Layer: backends (pjrt).  Pure Python: nothing is loaded here (a plugin is a 260-700 MB
shared library; loading one is ``client.Plugin.load``'s job, on first use).

Where a plugin is found, first match wins for each platform:

1. config ``jaxlite_pjrt_plugin`` (``JAXLITE_PJRT_PLUGIN``): ``"PATH"`` or
   ``"PLATFORM:PATH"`` (the platform is read from the file name when not given:
   ``libtpu*.so`` is ``tpu``, a name holding ``cuda`` is ``cuda``, ``rocm`` is ``rocm``,
   ``cpu`` is ``xla_cpu``);
2. ``PJRT_NAMES_AND_LIBRARY_PATHS``: ``"name:path,name:path"``, as JAX reads it;
3. ``TPU_LIBRARY_PATH``: the path of ``libtpu.so`` (JAX honours it before the package);
4. the ``libtpu`` package: ``libtpu.so`` in its folder;
5. the ``jax_plugins`` entry-point group (the CUDA plugin ``jax-cuda12-pjrt``: its module
   folder holds ``xla_cuda_plugin.so``) and the ``xla_plugins`` group (``xla-cpu-pjrt``:
   module ``xla_plugins.xla_cpu_pjrt``, whose folder holds ``xla_cpu_pjrt.so``).  The
   modules are located, never imported (JAX's plugin modules import jax); their library
   is ``<module name>.so`` in the module's folder, else the one ``.so`` there whose name
   says plugin or pjrt.

Each plugin maps to a platform name: ``tpu``, ``cuda`` (``jax.devices('gpu')`` finds it,
as JAX's alias), ``rocm``, ``xla_cpu`` for XLA:CPU (jaxlite's own ``cpu`` platform keeps
its name), or the name given.  Entry points are read from the installed distributions'
``entry_points.txt`` files directly: ``importlib.metadata`` costs tens of milliseconds
to import, paid by every process at its first operation.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys

from ...config import config

PLATFORMS_OF_NAMES = (("tpu", "tpu"), ("cuda", "cuda"), ("rocm", "rocm"), ("cpu", "xla_cpu"))

INSTALL_HINTS = {
    "tpu": "install it with `pip install jaxlite[tpu]` (the libtpu package), or set "
           "TPU_LIBRARY_PATH to libtpu.so",
    "cuda": "install it with `pip install jaxlite[cuda]` (the jax-cuda12-pjrt package)",
    "gpu": "install it with `pip install jaxlite[cuda]` (the jax-cuda12-pjrt package)",
    "xla_cpu": "install it with `pip install jaxlite[xla-cpu]` (the xla-cpu-pjrt package)",
}


class PluginInfo:
    """A plugin found: ``platform`` (``'tpu'``, ``'cuda'``, ``'xla_cpu'`` ...), ``path``
    of its library, ``source`` (how it was found, for messages) and ``error`` (None, or
    why the entry cannot be used: a file that does not exist, a module without a
    library)."""

    __slots__ = ("platform", "path", "source", "error")

    def __init__(self, platform: str, path: str | None, source: str, error: str | None = None):
        self.platform = platform
        self.path = path
        self.source = source
        self.error = error

    def __eq__(self, other):
        return isinstance(other, PluginInfo) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self.platform, self.path, self.source, self.error)

    def __repr__(self):
        bad = f", error={self.error!r}" if self.error else ""
        return f"PluginInfo({self.platform!r}, {self.path!r}, from {self.source}{bad})"


def platform_of(name: str) -> str:
    """The platform a plugin's name (or library file name) stands for."""
    low = name.lower()
    if os.path.basename(low).startswith("libtpu"):
        return "tpu"
    for key, platform in PLATFORMS_OF_NAMES:
        if key in low:
            return platform
    return re.sub(r"[^a-z0-9_]", "_", low)


_SPEC_RE = re.compile(r"^([a-z][a-z0-9_]*):(.+)$")


def parse_plugin_option(value: str) -> tuple:
    """``(platform, path)`` of a ``jaxlite_pjrt_plugin`` value (``"PATH"`` or
    ``"PLATFORM:PATH"``).

    Raises ValueError for an empty value, or a path whose platform cannot be read from its
    file name (write ``"PLATFORM:PATH"``)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"jaxlite_pjrt_plugin: a plugin path (\"PATH\" or "
                         f"\"PLATFORM:PATH\") is expected, got {value!r}")
    m = _SPEC_RE.match(value)
    if m and "/" not in m.group(1):
        return m.group(1), m.group(2)
    base = os.path.basename(value)
    platform = platform_of(base)
    if platform == re.sub(r"[^a-z0-9_]", "_", base.lower()):
        raise ValueError(f"jaxlite_pjrt_plugin: cannot tell the platform of plugin "
                         f"{value!r} from its file name: write \"PLATFORM:PATH\" (e.g. "
                         f"\"tpu:{value}\")")
    return platform, value


def _names_and_paths(value: str) -> list:
    """``PJRT_NAMES_AND_LIBRARY_PATHS`` entries as PluginInfo (malformed ones carry an
    error)."""
    out = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, path = item.partition(":")
        src = f"PJRT_NAMES_AND_LIBRARY_PATHS entry {item!r}"
        if not sep or not name or not path:
            out.append(PluginInfo(platform_of(name or item), None, src,
                                  "an entry must be NAME:PATH"))
            continue
        out.append(_checked(PluginInfo(platform_of(name), path, src)))
    return out


def _checked(info: PluginInfo) -> PluginInfo:
    if info.error is None and not os.path.isfile(info.path):
        info.error = f"{info.path!r} does not exist or is not a file"
    return info


def entry_points(group: str) -> list:
    """``[(name, value)]`` of the entry points of ``group`` that the installed
    distributions on ``sys.path`` declare (their ``entry_points.txt``), first found
    first."""
    out, seen = [], set()
    for root in sys.path:
        try:
            names = os.listdir(root or ".")
        except OSError:
            continue
        for d in names:
            if not (d.endswith(".dist-info") or d.endswith(".egg-info")):
                continue
            dist = d.rsplit("-", 1)[0] if d.endswith(".dist-info") else d[:-9]
            dist = dist.split("-")[0].lower().replace("-", "_")
            if dist in seen:      # an earlier path entry shadows this distribution
                continue
            try:
                with open(os.path.join(root or ".", d, "entry_points.txt"),
                          encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            seen.add(dist)
            section = None
            for line in lines:
                line = line.strip()
                if not line or line[0] in "#;":
                    continue
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == group and "=" in line:
                    name, _, value = line.partition("=")
                    out.append((name.strip(), value.strip()))
    return out


def _module_library(group: str, name: str, value: str) -> PluginInfo:
    """The plugin library of entry point ``name = value`` of ``group``, found next to its
    module without importing it."""
    module = value.split(":")[0].strip()
    src = f"entry point {name!r} of group {group!r} (module {module})"
    platform = platform_of(name)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as e:
        return PluginInfo(platform, None, src, f"module {module} cannot be found: {e}")
    if spec is None:
        return PluginInfo(platform, None, src, f"module {module} is not installed")
    if spec.submodule_search_locations:
        folder = list(spec.submodule_search_locations)[0]
    elif spec.origin:
        folder = os.path.dirname(spec.origin)
    else:
        return PluginInfo(platform, None, src, f"module {module} has no folder")
    last = module.rsplit(".", 1)[-1]
    try:
        sos = sorted(f for f in os.listdir(folder) if f.endswith(".so"))
    except OSError as e:
        return PluginInfo(platform, None, src, f"cannot list {folder!r}: {e}")
    pick = None
    if last + ".so" in sos:
        pick = last + ".so"
    else:
        named = [f for f in sos if "plugin" in f or "pjrt" in f]
        if len(named) == 1:
            pick = named[0]
        elif len(sos) == 1:
            pick = sos[0]
    if pick is None:
        return PluginInfo(platform, None, src,
                          f"no PJRT plugin library (.so) found in {folder!r}")
    return PluginInfo(platform, os.path.join(folder, pick), src)


def discover() -> list:
    """Every plugin found (``PluginInfo``, in the order of precedence above; entries that
    cannot be used carry their ``error``).  Reads the configuration and the environment
    each time; loads nothing."""
    found = []
    opt = config.jaxlite_pjrt_plugin
    if opt:
        platform, path = parse_plugin_option(opt)
        found.append(_checked(PluginInfo(platform, path,
                                         "config jaxlite_pjrt_plugin (JAXLITE_PJRT_PLUGIN)")))
    env = os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS")
    if env:
        found.extend(_names_and_paths(env))
    tpu = os.environ.get("TPU_LIBRARY_PATH")
    if tpu:
        found.append(_checked(PluginInfo("tpu", tpu, "TPU_LIBRARY_PATH")))
    try:
        spec = importlib.util.find_spec("libtpu")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and (spec.submodule_search_locations or spec.origin):
        folder = list(spec.submodule_search_locations or [])[:1] or \
            [os.path.dirname(spec.origin)]
        found.append(_checked(PluginInfo("tpu", os.path.join(folder[0], "libtpu.so"),
                                         "the libtpu package")))
    for group in ("jax_plugins", "xla_plugins"):
        for name, value in entry_points(group):
            found.append(_module_library(group, name, value))
    return found


def find(platform: str, found: list | None = None) -> PluginInfo | None:
    """The plugin of ``platform`` that wins (see the module docstring), or None: the first
    usable entry, else the first entry with its error (so that the error is reported).
    ``found``: the result of ``discover()`` when the caller has it."""
    entries = [p for p in (discover() if found is None else found) if p.platform == platform]
    for p in entries:
        if p.error is None:
            return p
    return entries[0] if entries else None


def not_found_message(platform: str) -> str:
    """Why ``platform`` has no plugin, and what to install."""
    hint = INSTALL_HINTS.get(platform)
    what = {"tpu": "TPU", "cuda": "CUDA", "gpu": "GPU", "xla_cpu": "XLA:CPU"}.get(
        platform, repr(platform))
    msg = f"no {what} PJRT plugin is installed"
    return f"{msg}: {hint}" if hint else msg
