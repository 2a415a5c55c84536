"""The persistent executable cache of the PJRT platforms (``tpu``, ``cuda``, ``xla_cpu``).

Layer: backends (pjrt; used by backend.py's ``PjrtExecutable``).  The directory, trust and
file rules are the native CPU kernel cache's (runtime/cache_files.py,
backends/cpu/_cache.py); this cache keeps its entries in the ``pjrt/`` folder of the
cache directory (config ``jax_compilation_cache_dir``, ``JAXLITE_CACHE_DIR``, else
``JAX_COMPILATION_CACHE_DIR``; by default ``~/.cache/jaxlite``; an empty setting or
``jax_enable_compilation_cache`` False turns it off).

An entry is one program compiled by one plugin for one device: the plugin's own
serialization of the executable (``PJRT_Executable_Serialize``), ``<module>-<key>.pjrt``,
and a manifest ``<module>-<key>.manifest`` (JSON: the key, the payload's size and sha256,
and what wrote it: plugin, platform and versions, device kind and id, jaxlite's version).
The key is the sha256 of the StableHLO text, the plugin (its file's real path, size and
modification time; its platform name and ``platform_version``; its PJRT C API version and
attributes), the compile options' bytes (which hold the device assignment), the device's
kind and id, and jaxlite's version.  Another process finds the entry and loads it
(``PJRT_Executable_DeserializeAndLoad``) instead of compiling.

Integrity: the manifest is read first and the payload checked against it (size, sha256,
key, writer) before the plugin sees a byte; only regular files of the user's own, writable
by nobody else, are read, never through a symlink.  A damaged, truncated or foreign entry
(another key, plugin version or device), a directory or symlink in a file's place, or one
the plugin cannot load, is discarded with a RuntimeWarning naming it, and the program is
compiled and the entry written again: the payload, then the manifest last, each to a
temporary file renamed into place, under the folder's lock (``pjrt/.lock``).  A cache
directory or folder that is not the user's own, or that others may write, is not used at
all (one RuntimeWarning with the fix).  One that cannot be made or read (a file in its
place) or written (a read-only disk) gives JAX's warning, a UserWarning "Error reading
(writing) persistent compilation cache entry for '<module>': <exception type>: <message>",
once per directory, and programs compile as without a cache; nothing raises.

What is written: an executable whose compile took at least
``jax_persistent_cache_min_compile_time_secs`` (jaxlite's default 0 s; JAX's is 1 s, see
config.py) and whose payload holds at least ``jax_persistent_cache_min_entry_size_bytes``.
A plugin that cannot serialize or deserialize (the function missing from its table, or
UNIMPLEMENTED) is not cached at all; ``unsupported(client)`` says why.  ``stats()`` counts
executables compiled and loaded in this process; with ``jax_log_compiles`` each load is
logged as JAX logs it ("Persistent compilation cache hit for 'jit_f' with key ...").
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
import warnings
import weakref

from ...runtime import cache_files as _files
from ._capi import UNIMPLEMENTED, PjrtError, PjrtOutOfMemory

logger = logging.getLogger("jaxlite")

_FORMAT = "jaxlite pjrt executable entry 1"
_MAX_MANIFEST = 1 << 16
_MAX_PAYLOAD = 1 << 31
_STATS = {"compiled": 0, "loaded": 0, "written": 0, "discarded": 0}
_LOCK = threading.Lock()
_OFF: dict = {}           # cache directory -> why this process does not use it
_NO_WRITE: dict = {}      # cache directory -> why this process does not write there
_UNSUPPORTED: dict = {}   # plugin path -> why its executables are not cached
_IDENTITY = weakref.WeakKeyDictionary()     # Client -> (identity text, writer dict)
_MODULE_RE = re.compile(r"^\s*module\s+@([\w.$-]+)", re.M)


def stats() -> dict:
    """Counters for this process: ``compiled`` (executables the plugins compiled),
    ``loaded`` (executables loaded from the persistent cache instead), ``written``
    (entries written), ``discarded`` (damaged or foreign entries removed)."""
    return dict(_STATS)


def _count(name: str) -> None:
    with _LOCK:
        _STATS[name] += 1


def cache_dir() -> str | None:
    """The folder of the PJRT executables in the persistent cache (``<dir>/pjrt``), or
    None when the cache is off."""
    base = _files.cache_base()
    return None if base is None else os.path.join(base, "pjrt")


def summary() -> str:
    """One line: executables compiled vs loaded from the persistent cache, and where."""
    st = stats()
    return (f"PJRT executables: {st['compiled']} compiled, {st['loaded']} loaded from the "
            f"persistent cache ({cache_dir() or 'off'})")


def unsupported(client) -> str | None:
    """Why ``client``'s plugin cannot use the persistent cache (it lacks
    ``PJRT_Executable_Serialize`` or ``PJRT_Executable_DeserializeAndLoad``, or answered
    UNIMPLEMENTED), or None when it can."""
    path = client.plugin.path
    why = _UNSUPPORTED.get(path)
    if why is None:
        for fn in ("Executable_Serialize", "Executable_DeserializeAndLoad"):
            if not client.api.has(fn):
                why = _UNSUPPORTED[path] = (f"the PJRT plugin {path} lacks PJRT_{fn} (C API "
                                            f"{client.api.version_text})")
                break
    return why


def module_name(text: str, name: str) -> str:
    """The module's name in StableHLO ``text`` (``jit_f``), else ``name``."""
    m = _MODULE_RE.search(text)
    return m.group(1) if m else name


def _identity(client) -> tuple:
    """``(text, writer)``: what of the plugin goes into every key, and the manifest's
    record of it (asked of the plugin once per client)."""
    got = _IDENTITY.get(client)
    if got is None:
        from ...version import __version__
        path = os.path.realpath(client.plugin.path)
        try:
            st = os.stat(path)
            file_id = f"{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            file_id = "?"
        try:
            attrs = sorted((k, repr(v)) for k, v in client.plugin.attributes().items())
        except (PjrtError, RuntimeError):
            attrs = []
        writer = {"plugin": path, "platform": client.platform_name,
                  "platform_version": client.platform_version,
                  "pjrt_api": client.api.version_text, "jaxlite": __version__}
        text = json.dumps([_FORMAT, writer, file_id, attrs], sort_keys=True)
        got = _IDENTITY[client] = (text, writer)
    return got


def entry_key(client, text: str, options: bytes, device) -> str:
    """The key of ``text`` compiled by ``client`` with ``options`` for ``device`` (a
    ``client.DeviceInfo``): 64 hex digits of sha256 (see the module docstring)."""
    ident, _ = _identity(client)
    h = hashlib.sha256()
    for part in (ident.encode(), f"{device.kind}\0{device.id}".encode(), options,
                 text.encode("utf-8")):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


# ---- the directory ---------------------------------------------------------------------------

def _usable_dir(module: str) -> str | None:
    """The ``pjrt/`` folder when this process may use it (created if missing), else None;
    warns once per directory when it cannot (see the module docstring)."""
    base = _files.cache_base()
    if base is None or base in _OFF:
        return None
    d = os.path.join(base, "pjrt")
    try:
        _files.private_dir(base, create=True)
        _files.private_dir(d, create=True)
    except _files.Untrusted as e:
        _off(base, str(e), RuntimeWarning, (
            f"jaxlite: not using the persistent compile cache {base}: {e}. Its files are "
            "executables the PJRT plugin would load, so they must be yours and writable by "
            f"you alone; programs are compiled instead. To use it: chown -R $USER {base} "
            f"&& chmod -R go-w {base}, or set JAXLITE_CACHE_DIR to a directory of your own"))
        return None
    except OSError as e:
        _off(base, str(e), UserWarning,
             f"Error reading persistent compilation cache entry for '{module}': "
             f"{type(e).__name__}: {e}")
        return None
    return d


def _off(base: str, why: str, category, message: str) -> None:
    with _LOCK:
        first = base not in _OFF
        _OFF.setdefault(base, why)
    if first:
        warnings.warn(message, category, stacklevel=5)


def _no_write(d: str, module: str, e: Exception) -> None:
    """Stops writing to ``d`` in this process (entries there are still read); warns once
    as JAX warns for a failed write."""
    with _LOCK:
        first = d not in _NO_WRITE
        _NO_WRITE.setdefault(d, str(e))
    if first:
        warnings.warn(f"Error writing persistent compilation cache entry for '{module}': "
                      f"{type(e).__name__}: {e}", UserWarning, stacklevel=5)


# ---- entries ---------------------------------------------------------------------------------

class _Entry:
    """The files of one executable's entry in folder ``d``."""

    def __init__(self, d: str, key: str, module: str, writer: dict):
        self.d, self.key, self.module, self.writer = d, key, module, writer
        stem = re.sub(r"[^\w.-]", "_", module)[:48] + "-" + key[:40]
        self.payload = os.path.join(d, stem + ".pjrt")
        self.manifest = os.path.join(d, stem + ".manifest")

    def read(self):
        """``(manifest bytes, payload bytes)`` checked against each other, or None when
        there is no entry.  Raises BadEntry (with ``seen``: the manifest read) or
        Untrusted; hands nothing to the plugin."""
        try:
            raw = _files.read_private(self.manifest, limit=_MAX_MANIFEST)
        except FileNotFoundError:
            return None
        except _files.BadEntry as e:
            e.seen = None
            raise
        try:
            return raw, self._check(raw)
        except _files.BadEntry as e:
            e.seen = raw
            raise

    def _check(self, raw: bytes) -> bytes:
        try:
            m = json.loads(raw.decode("utf-8"))
        except ValueError:      # (UnicodeDecodeError too)
            raise _files.BadEntry(f"its manifest {self.manifest} is not JSON") from None
        if not isinstance(m, dict) or m.get("format") != _FORMAT:
            raise _files.BadEntry(f"its manifest {self.manifest} is not a jaxlite PJRT "
                                  f"entry's")
        wrote = m.get("written_by")
        if wrote != self.writer:
            theirs = wrote if isinstance(wrote, dict) else {}
            diff = ", ".join(f"{k} {theirs.get(k)!r} (here {v!r})"
                             for k, v in self.writer.items() if theirs.get(k) != v)
            raise _files.BadEntry(f"it was written by another plugin or jaxlite: {diff}")
        if m.get("key") != self.key:
            raise _files.BadEntry(f"its manifest records the key {m.get('key')!r}, not "
                                  f"this program's {self.key!r} (another program, device "
                                  f"or compile options)")
        rec = m.get("payload")
        if not (isinstance(rec, dict) and isinstance(rec.get("size"), int)
                and isinstance(rec.get("sha256"), str)):
            raise _files.BadEntry(f"its manifest {self.manifest} records no payload")
        try:
            data = _files.read_private(self.payload, size=rec["size"], limit=_MAX_PAYLOAD)
        except FileNotFoundError:
            raise _files.BadEntry(f"{self.payload} is missing") from None
        if hashlib.sha256(data).hexdigest() != rec["sha256"]:
            raise _files.BadEntry(f"{self.payload} is not the file its manifest records "
                                  f"(sha256)")
        return data

    def write(self, payload: bytes, seconds: float, device) -> bool:
        """Persists the entry: the payload, then the manifest (unless another process
        wrote one meanwhile).  Whether it wrote.  Raises OSError."""
        with _files.dir_lock(self.d):
            if os.path.lexists(self.manifest):
                return False                # another process wrote the entry first
            _files.replace(self.payload, payload)
            manifest = {"format": _FORMAT, "key": self.key, "module": self.module,
                        "written_by": self.writer,
                        "device": {"kind": device.kind, "id": device.id},
                        "compile_seconds": round(seconds, 6),
                        "payload": {"size": len(payload),
                                    "sha256": hashlib.sha256(payload).hexdigest()}}
            _files.replace(self.manifest,
                           json.dumps(manifest, indent=1, sort_keys=True).encode())
        return True

    def discard(self, seen, why: str) -> bool:
        """Removes the entry whose manifest read ``seen`` (None: none readable), with a
        warning; False (nothing removed) when another process replaced the manifest
        meanwhile (read it again)."""
        with _files.dir_lock(self.d):
            try:
                now = _files.read_private(self.manifest, limit=_MAX_MANIFEST)
            except (OSError, _files.BadEntry, _files.Untrusted):
                now = None
            if now is not None and now != seen:
                return False
            warnings.warn(f"jaxlite: discarding the corrupt or stale compile cache entry "
                          f"{self.payload} ({why}); compiling '{self.module}' again and "
                          f"rewriting it", RuntimeWarning, stacklevel=5)
            _count("discarded")
            _files.remove(self.manifest)        # first: the entry is gone
            _files.remove(self.payload)
        return True


# ---- compiling through the cache -------------------------------------------------------------

def load_or_compile(client, text: str, device, name: str = "main"):
    """``client.compile(text, device)`` (a ``LoadedExecutable``) through the persistent
    cache: loaded from it when a sound entry is there, else compiled and written (see the
    module docstring for the rules).  ``name`` names the program in messages when the
    module has no name.  Raises what ``client.compile`` raises (a PjrtError when XLA
    rejects the module; nothing is written then); a cache that cannot be used only
    warns."""
    from .client import compile_options
    module = module_name(text, name)
    d = _usable_dir(module)
    if d is not None and unsupported(client) is None:
        options = compile_options(device.id)
        _, writer = _identity(client)
        key = entry_key(client, text, options, device)
        entry = _Entry(d, key, module, writer)
        ex = _load(client, entry, device)
        if ex is not None:
            return ex
    else:
        entry = None
    t0 = time.perf_counter()
    ex = client.compile(text, device)
    seconds = time.perf_counter() - t0
    _count("compiled")
    if entry is not None:
        _persist(client, entry, ex, seconds, device)
    return ex


def _load(client, entry: _Entry, device):
    """The executable of ``entry`` when it checks out and the plugin loads it, else None
    (a bad entry discarded on the way)."""
    for _ in range(3):
        try:
            found = entry.read()
        except _files.BadEntry as e:
            entry.discard(getattr(e, "seen", None), str(e))
            continue                    # look again: gone, or another process's
        except _files.Untrusted as e:
            base = os.path.dirname(entry.d)
            _off(base, str(e), RuntimeWarning,
                 f"jaxlite: not using the persistent compile cache {base}: {e}; programs "
                 f"are compiled instead (chown -R $USER {base} && chmod -R go-w {base})")
            return None
        except OSError as e:            # the folder cannot be locked or read
            _off(os.path.dirname(entry.d), str(e), UserWarning,
                 f"Error reading persistent compilation cache entry for '{entry.module}': "
                 f"{type(e).__name__}: {e}")
            return None
        if found is None:
            return None
        seen, payload = found
        try:
            ex = client.deserialize(payload, device)
        except PjrtOutOfMemory:
            return None                 # a sound entry, no room to load it: compile says
        except PjrtError as e:
            if e.code == UNIMPLEMENTED:
                _UNSUPPORTED.setdefault(client.plugin.path, f"the PJRT plugin "
                                        f"{client.plugin.path} cannot deserialize: {e}")
                return None
            entry.discard(seen, f"the plugin could not load it: {e}")
            continue
        _count("loaded")
        from ...config import config
        logger.log(logging.WARNING if config.jax_log_compiles else logging.DEBUG,
                   "Persistent compilation cache hit for '%s' with key '%s'",
                   entry.module, entry.key)
        return ex
    return None


def _persist(client, entry: _Entry, ex, seconds: float, device) -> None:
    """Writes ``ex`` (compiled in ``seconds``) as ``entry`` when the config thresholds
    allow (JAX's rules); a plugin that cannot serialize is remembered, a folder that
    cannot be written warns once."""
    from ...config import config
    min_s = config.jax_persistent_cache_min_compile_time_secs
    if client.plugin.path in _UNSUPPORTED:
        return
    if seconds < min_s or entry.d in _NO_WRITE:
        logger.debug("Not writing persistent cache entry for '%s': it took %.3f s to "
                     "compile, less than %s s, or its directory is not writable",
                     entry.module, seconds, min_s)
        return
    try:
        payload = ex.serialize()
    except PjrtError as e:
        if e.code == UNIMPLEMENTED:
            _UNSUPPORTED.setdefault(client.plugin.path, f"the PJRT plugin "
                                    f"{client.plugin.path} cannot serialize: {e}")
        else:
            warnings.warn(f"Error writing persistent compilation cache entry for "
                          f"'{entry.module}': {type(e).__name__}: {e}", UserWarning,
                          stacklevel=4)
        return
    if len(payload) < config.jax_persistent_cache_min_entry_size_bytes:
        return
    try:
        wrote = entry.write(payload, seconds, device)
    except OSError as e:                # a read-only or full disk: not written
        _no_write(entry.d, entry.module, e)
        return
    if wrote:
        _count("written")
