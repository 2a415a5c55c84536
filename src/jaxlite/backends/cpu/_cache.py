"""The persistent compile cache of the native CPU backend.

Layer: backends (used by native.py's ``NativeKernel``).

Each generated kernel is an entry in the cache directory, named by a hash of everything its
machine code depends on: the kernel's source (which encodes the optimised program), the
constants it reads, the Numba options and argument types, the backend, the versions of
jaxlite/Numba/llvmlite/NumPy/Python, the text of the code generator's scalar-op and
vector-maths modules, and the CPU (name and features).  An entry is four files: the kernel
as a small Python module (``jaxlite_kc_<key>.py``), Numba's index and data files of its
compiled machine code (``__pycache__/jaxlite_kc_<key>.kern-<line>.pyXY.nbi`` and
``.1.nbc``, Numba's own format), and a manifest (``jaxlite_kc_<key>.manifest``, JSON) that
records the key, the signature and each file's size and sha256.  Another process finds the
entry and loads the machine code instead of compiling.

Directory: config ``jax_compilation_cache_dir`` (``JAXLITE_CACHE_DIR``, else JAX's
``JAX_COMPILATION_CACHE_DIR``); when unset, ``$XDG_CACHE_HOME/jaxlite`` or
``~/.cache/jaxlite``; an empty string (or config ``jax_enable_compilation_cache`` False)
turns the cache off.  Kernels live in its ``native/``
folder; ``native/programs/`` holds one empty marker per program whose native code was
built (_tiered.py: such a program starts loading it after its first call).

Safety: Numba's data files are pickles, so loading one runs code.  The cache directory,
``native/``, ``native/__pycache__/`` and every file of an entry must belong to the user
(``os.getuid()``) and be writable by nobody else; jaxlite creates its directories with mode
0o700 and its files 0o600.  Otherwise the cache is not used at all in this process
(kernels compile in memory) and one RuntimeWarning names the path, its owner or mode and
the fix.  Before anything is unpickled, an entry's files are read (never through a
symlink, only regular files) and checked against the manifest: sizes, sha256, key,
signature, the module's text; Numba then unpickles exactly the bytes that were checked
(it never opens the files itself).  A mismatch (a swapped, truncated or edited file, a
directory, fifo or symlink in a file's place), or an entry Numba cannot load, is discarded
with a warning naming it and rebuilt: the new files, then the manifest last, are written
to temporary files and renamed into place under a lock (``native/.lock``), so the next
process loads the rebuilt entry.  ``stats()`` counts kernels compiled and loaded in this
process.

What is written: a program's native build (``program_build``, around the construction of
its native executable) writes its kernels' entries when it ends, all of them or none:
none when the build took less than config ``jax_persistent_cache_min_compile_time_secs``
or their files hold fewer than ``jax_persistent_cache_min_entry_size_bytes`` bytes (JAX's
rules for one compiled program).  A kernel compiled outside a program build is judged
alone (its own compile time and size).  A kernel compiled but not written stays in this
process's memory, with its files' bytes (``ProgramBuild.unwritten``: what the build
process sends back to the user's process, which loads them with ``load_only``).
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import os
import pickle
import stat
import sys
import threading
import time
import types
import warnings

import numpy as np

from ...runtime import cache_files as _files
from ._paths import cache_dir  # noqa: F401  (one definition, re-exported)

_STATS = {"compiled": 0, "loaded": 0, "memory": 0, "discarded": 0}
_LOCK = threading.Lock()
_KEY_LOCKS: dict = {}
_MEMO: dict = {}          # key -> compiled dispatcher (this process)
_ENV_KEY = None
_UNTRUSTED: dict = {}     # cache directory -> why this process does not use it
# key -> (entry, index, data): kernels compiled (or received) in this process whose entry
# is not in the cache; a later program build that uses one writes it with its own
_UNWRITTEN: dict = {}
_BUILD = threading.local()  # the program build in progress in this thread
_FORMAT = "jaxlite native kernel entry 1"
_MAX_MANIFEST = 1 << 16
_MAX_FILE = _files.MAX_FILE


def stats() -> dict:
    """Counters for this process: ``compiled`` (kernels Numba compiled), ``loaded``
    (machine code read from the persistent cache), ``memory`` (reused in this process),
    ``discarded`` (corrupt or stale entries rebuilt)."""
    return dict(_STATS)


def _count(name, n=1):
    with _LOCK:
        _STATS[name] += n


def clear_memory() -> None:
    """Forgets the kernels compiled in this process (the disk cache stays)."""
    with _LOCK:
        _MEMO.clear()
        _UNWRITTEN.clear()


def _env_key() -> str:
    """Versions, code generator text and CPU: everything but the kernel itself."""
    global _ENV_KEY
    if _ENV_KEY is None:
        import llvmlite
        import llvmlite.binding as ll
        import numba
        from ...version import __version__
        from . import _ops as _cpu_ops, _vecmath
        h = hashlib.sha256()
        parts = ["cpu", __version__, numba.__version__, llvmlite.__version__,
                 np.__version__, sys.version, sys.platform]
        try:
            parts += [ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten()]
        except Exception:   # pragma: no cover - llvmlite without host queries
            parts.append("unknown-cpu")
        parts.append(str(numba.config.CPU_NAME) + str(numba.config.CPU_FEATURES))
        for mod in (_cpu_ops, _vecmath, sys.modules[__name__]):
            with open(mod.__file__, "rb") as f:
                h.update(f.read())
        h.update("\0".join(parts).encode())
        _ENV_KEY = h.hexdigest()
    return _ENV_KEY


def _const_line(name, value) -> str:
    if isinstance(value, np.generic):
        dt = value.dtype
        return (f"{name} = _np.frombuffer(bytes.fromhex({value.tobytes().hex()!r}), "
                f"dtype={dt.str!r})[0]")
    if isinstance(value, (bool, int, float)) or value is None:
        return f"{name} = {value!r}"
    raise TypeError(f"cannot write constant {name} of type {type(value).__name__}")


def module_text(source: str, glb: dict, signature: str, parallel: bool, opts: dict,
                name: str) -> tuple:
    """``(key, text)`` of the cache module for one generated kernel."""
    from ._ops import GLOBALS
    consts = sorted(k for k in glb if k not in GLOBALS and k not in ("prange", "kern")
                    and not k.startswith("__"))
    lines = [_const_line(k, glb[k]) for k in consts]
    body = "\n".join(lines) + "\n\n" + source + "\n"
    h = hashlib.sha256()
    for part in (_env_key(), body, signature, repr(bool(parallel)),
                 repr(sorted(opts.items()))):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:32]
    # no kernel name in the text: the key does not include it, and the same kernel under
    # another name (another program, another process) must find the same text
    del name
    header = ("# jaxlite native kernel (generated; safe to delete)\n"
              f"# signature {signature}, parallel={bool(parallel)}\n"
              "import numpy as _np\nfrom numba import prange\n"
              "from jaxlite.backends.cpu._ops import GLOBALS as _G\n"
              "globals().update(_G)\n")
    return key, header + body


# ---- files: private, checked, written atomically -----------------------------------------

# the shared file helpers (runtime/cache_files.py), under this module's old names
_Bad = _files.BadEntry
_Untrusted = _files.Untrusted
_trust_problem = _files.trust_problem
_private_dir = _files.private_dir
_read_private = _files.read_private
_remove = _files.remove
_new_file = _files.new_file
_replace = _files.replace
_write_if_absent = _files.write_if_absent
_dir_lock = _files.dir_lock


def _refuse(base: str, why: str) -> None:
    """Stops using the cache at ``base`` in this process; warns once."""
    with _LOCK:
        first = base not in _UNTRUSTED
        _UNTRUSTED.setdefault(base, why)
    if first:
        warnings.warn(
            f"jaxlite: not using the persistent compile cache {base}: {why}. Its files "
            "are machine code and pickles this process would load, so they must be yours "
            "and writable by you alone; native kernels are compiled in memory instead. "
            f"To use it: chown -R $USER {base} && chmod -R go-w {base}, or set "
            "JAXLITE_CACHE_DIR to a directory of your own", RuntimeWarning, stacklevel=4)


# ---- entries ------------------------------------------------------------------------------

class _Entry:
    """Names and expected contents of one kernel's entry in the directory ``d``."""

    def __init__(self, d, key, text, signature, parallel, lineno):
        self.d, self.key, self.text = d, key, text
        self.signature, self.parallel = signature, bool(parallel)
        self.modname = f"jaxlite_kc_{key}"
        self.path = os.path.join(d, self.modname + ".py")
        self.manifest = os.path.join(d, self.modname + ".manifest")
        self.pycache = os.path.join(d, "__pycache__")
        # Numba's own names for the index and data files of ``kern`` in this module
        abi = getattr(sys, "abiflags", "")
        self.base = (f"{self.modname}.kern-{lineno}.py{sys.version_info[0]}"
                     f"{sys.version_info[1]}{abi}")
        self.files = {self.modname + ".py": self.path,
                      f"__pycache__/{self.base}.nbi": os.path.join(self.pycache,
                                                                  self.base + ".nbi"),
                      f"__pycache__/{self.base}.1.nbc": os.path.join(self.pycache,
                                                                    self.base + ".1.nbc")}

    def read(self):
        """``(manifest bytes, {file name: checked bytes})``, or None when there is no
        entry.  Raises _Bad or _Untrusted; unpickles nothing."""
        try:
            raw = _read_private(self.manifest, limit=_MAX_MANIFEST)
        except FileNotFoundError:
            return None
        try:
            return raw, self._check(raw)
        except _Bad as e:
            e.seen = raw
            raise

    def _check(self, raw: bytes) -> dict:
        try:
            m = json.loads(raw.decode("utf-8"))
        except ValueError:      # (UnicodeDecodeError too)
            raise _Bad(f"its manifest {self.manifest} is not JSON") from None
        if not isinstance(m, dict) or m.get("format") != _FORMAT or m.get("key") != self.key:
            raise _Bad(f"its manifest {self.manifest} is not this entry's")
        if m.get("signature") != self.signature or m.get("parallel") != self.parallel:
            raise _Bad(f"its manifest records the signature {m.get('signature')!r} "
                       f"(parallel={m.get('parallel')!r}), not the kernel's "
                       f"{self.signature!r} (parallel={self.parallel})")
        files = m.get("files")
        if not isinstance(files, dict) or set(files) != set(self.files):
            raise _Bad(f"its manifest {self.manifest} lists other files")
        try:
            st = os.lstat(self.pycache)
        except FileNotFoundError:
            raise _Bad(f"{self.pycache} is missing") from None
        if not stat.S_ISDIR(st.st_mode):        # a symlink or a file: not Numba's folder
            raise _Bad(f"{self.pycache} is not a directory")
        why = _trust_problem(st, self.pycache)
        if why:
            raise _Untrusted(why)
        blobs = {}
        for rel, path in self.files.items():
            rec = files[rel]
            if not (isinstance(rec, dict) and isinstance(rec.get("size"), int)
                    and isinstance(rec.get("sha256"), str)):
                raise _Bad(f"its manifest {self.manifest} is not this entry's")
            try:
                data = _read_private(path, size=rec["size"])
            except FileNotFoundError:
                raise _Bad(f"{path} is missing") from None
            if hashlib.sha256(data).hexdigest() != rec["sha256"]:
                raise _Bad(f"{path} is not the file its manifest records (sha256)")
            blobs[os.path.basename(path)] = data
        if blobs[self.modname + ".py"] != self.text.encode("utf-8"):
            raise _Bad("its module text is not the kernel's generated module")
        return blobs

    def blobs(self, index: bytes, data: bytes) -> dict:
        """``{file name: bytes}`` of the entry's files (what ``read`` returns)."""
        return {os.path.basename(self.path): self.text.encode("utf-8"),
                os.path.basename(self.files[f"__pycache__/{self.base}.nbi"]): index,
                os.path.basename(self.files[f"__pycache__/{self.base}.1.nbc"]): data}

    def write(self, index: bytes, data: bytes) -> None:
        """Persists the entry: its files, then its manifest (unless another process wrote
        one meanwhile).  Raises OSError, _Untrusted."""
        contents = dict(zip(self.files, (self.text.encode("utf-8"), index, data)))
        with _dir_lock(self.d):
            if os.path.lexists(self.manifest):
                return                      # another process wrote the entry first
            try:
                st = os.lstat(self.pycache)
            except FileNotFoundError:
                os.mkdir(self.pycache, 0o700)
            else:
                if not stat.S_ISDIR(st.st_mode):
                    _remove(self.pycache)
                    os.mkdir(self.pycache, 0o700)
                else:
                    why = _trust_problem(st, self.pycache)
                    if why:
                        raise _Untrusted(why)
            for rel, b in contents.items():
                _replace(self.files[rel], b)
            manifest = {"format": _FORMAT, "key": self.key, "signature": self.signature,
                        "parallel": self.parallel,
                        "files": {rel: {"size": len(b),
                                        "sha256": hashlib.sha256(b).hexdigest()}
                                  for rel, b in contents.items()}}
            _replace(self.manifest, json.dumps(manifest, indent=1, sort_keys=True).encode())

    def discard(self, seen, why: str) -> bool:
        """Removes the entry whose manifest read ``seen`` (None: none readable), with a
        warning; False (nothing removed) when another process replaced the manifest
        meanwhile (read it again)."""
        with _dir_lock(self.d):
            try:
                now = _read_private(self.manifest, limit=_MAX_MANIFEST)
            except (OSError, _Bad, _Untrusted):
                now = None
            if now is not None and now != seen:
                return False
            warnings.warn(f"jaxlite: discarding the corrupt or stale compile cache entry "
                          f"{self.path} ({why}); rebuilding it", RuntimeWarning,
                          stacklevel=4)
            _count("discarded")
            _remove(self.manifest)          # first: the entry is gone
            for f in (glob.glob(os.path.join(glob.escape(self.d), self.modname + ".*"))
                      + glob.glob(os.path.join(glob.escape(self.pycache),
                                               self.modname + ".*"))):
                _remove(f)
        return True


_NUMBA_CLASSES = None


def _numba_classes():
    """``EntryCache``: a Numba cache whose index and data files are the bytes already
    checked against the manifest (Numba opens no file), and whose saves are kept in
    memory for ``_Entry.write``.  Made on first use (Numba is imported lazily)."""
    global _NUMBA_CLASSES
    if _NUMBA_CLASSES is not None:
        return _NUMBA_CLASSES
    from numba.core import caching, compiler

    class EntryFile(caching.IndexDataCacheFile):
        def __init__(self, cache_path, filename_base, source_stamp, blobs):
            super().__init__(cache_path, filename_base, source_stamp)
            self.blobs = blobs
            self.written: dict = {}

        def _load_index(self):
            if not self.blobs:
                return {}
            f = io.BytesIO(self.blobs[self._index_name])
            version = pickle.load(f)
            if version != self._version:
                raise ValueError(f"an index of Numba {version!r}")
            stamp, overloads = pickle.loads(f.read())
            if stamp != self._source_stamp:
                raise ValueError("an index of another module text")
            return overloads

        def _load_data(self, name):
            return pickle.loads(self.blobs[name])

        def _save_index(self, overloads):
            buf = io.BytesIO()
            pickle.dump(self._version, buf, protocol=-1)
            buf.write(self._dump((self._source_stamp, overloads)))
            self.written[self._index_name] = buf.getvalue()

        def _save_data(self, name, data):
            self.written[name] = self._dump(data)

    class EntryCache(caching.Cache):
        def __init__(self, py_func, cache_path, filename_base, source_stamp, blobs):
            # no locator: the paths are the entry's, whatever NUMBA_CACHE_DIR says
            self._name = repr(py_func)
            self._py_func = py_func
            self._cache_path = cache_path
            self._cache_file = EntryFile(cache_path, filename_base, source_stamp, blobs)
            self.load_error = None
            self.load_only = False
            self.hit = False
            self.enable()

        def load_overload(self, sig, target_context):
            target_context.refresh()
            if not self._cache_file.blobs:
                return None
            try:
                data = self._cache_file.load(self._index_key(sig, target_context.codegen()))
                if data is None:
                    raise ValueError("its index holds no code for this signature and CPU")
                cres = compiler.CompileResult._rebuild(target_context, *data)
            except Exception as e:     # compile instead; the caller discards the entry
                self.load_error = e
                self._cache_file.blobs = {}
                if self.load_only:
                    raise _not_built(f"Numba could not load its machine code from the "
                                   f"persistent cache ({type(e).__name__}: {e})") from None
                return None
            self.hit = True
            return cres

        def save_overload(self, sig, cres):
            if any(not x.can_cache for x in cres.lifted) or cres.library.has_dynamic_globals:
                return
            self._cache_file.save(self._index_key(sig, cres.codegen), cres._reduce())

        def saved(self, entry):
            """``(index, data)`` bytes of the compiled kernel, or None."""
            w = self._cache_file.written
            index, data = w.get(entry.base + ".nbi"), w.get(entry.base + ".1.nbc")
            return None if index is None or data is None else (index, data)

    _NUMBA_CLASSES = EntryCache
    return EntryCache


def _exec_module(path: str, modname: str, text: str):
    """Runs the generated text (never the file's) as module ``modname``."""
    mod = types.ModuleType(modname)
    mod.__file__ = path
    code = compile(text, path, "exec")
    sys.modules[modname] = mod
    exec(code, mod.__dict__)
    return mod


class NotBuilt(Exception):
    """Under ``load_only()``: the kernel's machine code is not in the persistent cache (or
    Numba cannot load it), and this thread may not compile it."""


_LOAD_ONLY = threading.local()


@contextlib.contextmanager
def load_only(received: dict | None = None):
    """In this thread, ``compile_kernel`` only loads machine code from the persistent cache
    or from ``received`` (``{key: {file name: bytes}}``: the kernels the build process
    compiled but did not write, ``ProgramBuild.unwritten``): a kernel in neither raises
    ``NotBuilt`` instead of compiling (the native build process compiled the program's
    kernels; this process only loads them)."""
    before = getattr(_LOAD_ONLY, "on", None)
    _LOAD_ONLY.on = seen = LoadOnly()
    seen.received = received or {}
    try:
        yield seen
    finally:
        _LOAD_ONLY.on = before


class LoadOnly:
    """What ``load_only()`` saw: ``missing`` counts the kernels not in the cache."""

    def __init__(self):
        self.missing = 0
        self.received: dict = {}


class ProgramBuild:
    """One program's native build (``program_build``): ``seconds`` it took; ``persisted``:
    whether every kernel it compiled or reused is in the persistent cache after it (its
    "built before" marker may be written); ``unwritten``: ``{key: {file name: bytes}}``
    of those that are not; ``why``: why they were not written (None when they were)."""

    def __init__(self):
        self.pending: dict = {}     # key -> (entry, index, data), written at the end
        self.seconds = 0.0
        self.persisted = False
        self.unwritten: dict = {}
        self.why = None

    def finish(self) -> None:
        """Writes the pending entries, or none of them when the build was too quick or
        they are too small (config thresholds, see the module docstring)."""
        from ...config import config
        min_s = config.jax_persistent_cache_min_compile_time_secs
        min_bytes = config.jax_persistent_cache_min_entry_size_bytes
        size = sum(len(e.text.encode("utf-8")) + len(i) + len(d)
                   for e, i, d in self.pending.values())
        if self.pending and self.seconds < min_s:
            self.why = (f"its build took {self.seconds:.2f} s, less than "
                        f"jax_persistent_cache_min_compile_time_secs ({min_s} s)")
        elif self.pending and size < min_bytes:
            self.why = (f"its kernels' files hold {size} bytes, fewer than "
                        f"jax_persistent_cache_min_entry_size_bytes ({min_bytes})")
        for key, (entry, index, data) in self.pending.items():
            if self.why is None:
                try:
                    # a full or read-only disk (OSError): this process goes without the entry
                    with contextlib.suppress(OSError):
                        entry.write(index, data)
                except _Untrusted as e:
                    _refuse(os.path.dirname(entry.d), str(e))
                else:
                    with _LOCK:
                        _UNWRITTEN.pop(key, None)
                    continue
            with _LOCK:
                _UNWRITTEN[key] = (entry, index, data)
            self.unwritten[key] = entry.blobs(index, data)
        self.persisted = not self.unwritten


@contextlib.contextmanager
def program_build():
    """Around the construction of one program's native executable in this thread: the
    kernels it compiles are written to the persistent cache when it ends, if its time and
    their size reach the config thresholds (see the module docstring).  Yields the
    ``ProgramBuild``; nothing is written when the construction raises (a later build that
    reuses one of its kernels writes it)."""
    before = getattr(_BUILD, "on", None)
    _BUILD.on = b = ProgramBuild()
    t0 = time.perf_counter()
    try:
        yield b
    except BaseException:
        with _LOCK:
            _UNWRITTEN.update(b.pending)
        raise
    finally:
        _BUILD.on = before
    b.seconds = time.perf_counter() - t0
    b.finish()


def _to_write(entry, index: bytes, data: bytes, seconds: float) -> None:
    """A kernel compiled (in ``seconds``) or reused from memory whose entry is not in the
    cache: written with the program build in progress, or judged alone."""
    b = getattr(_BUILD, "on", None)
    if b is not None:
        b.pending[entry.key] = (entry, index, data)
        return
    b = ProgramBuild()
    b.pending[entry.key] = (entry, index, data)
    b.seconds = seconds
    b.finish()


def _not_built(msg: str) -> NotBuilt:
    _LOAD_ONLY.on.missing += 1
    return NotBuilt(msg)


def usable_dir() -> str | None:
    """The cache's kernel directory when this process may read and write it (created if
    missing; ``_refuse`` warns once when it is not the user's own), else None."""
    d = cache_dir()
    if d is None:
        return None
    base = os.path.dirname(d)
    if base in _UNTRUSTED:
        return None
    try:
        _private_dir(base, create=True)
        _private_dir(d, create=True)
        pycache = os.path.join(d, "__pycache__")
        if os.path.isdir(pycache) and not os.path.islink(pycache):
            _private_dir(pycache, create=False)
    except _Untrusted as e:
        _refuse(base, str(e))
        return None
    except OSError:
        return None
    if not os.access(d, os.W_OK):
        return None
    return d


def compile_kernel(source: str, glb: dict, argtys: list, parallel: bool, opts: dict,
                   name: str):
    """The Numba dispatcher of one generated kernel, through the persistent cache.

    Returns None when the cache is off, its directory cannot be written, or it is not the
    user's own (the caller compiles in memory).  Raises whatever Numba raises for a kernel
    it cannot compile, and ``NotBuilt`` under ``load_only()`` when the kernel is not in the
    cache.
    """
    d = usable_dir()
    if d is None:
        return None
    base = os.path.dirname(d)
    from numba import types as nbt
    sig = nbt.int64(*argtys)
    try:
        key, text = module_text(source, glb, str(sig), parallel, opts, name)
    except TypeError:
        return None
    with _LOCK:
        disp = _MEMO.get(key)
        klock = _KEY_LOCKS.setdefault(key, threading.Lock())
    if disp is not None:
        return _reused(key, disp)
    with klock:
        disp = _MEMO.get(key)
        if disp is not None:
            return _reused(key, disp)
        modname = f"jaxlite_kc_{key}"
        mod = _exec_module(os.path.join(d, modname + ".py"), modname, text)
        entry = _Entry(d, key, text, str(sig), parallel, mod.kern.__code__.co_firstlineno)
        stamp = hashlib.sha256(text.encode("utf-8")).digest()   # Numba's: the source hash
        EntryCache = _numba_classes()
        try:
            disp = _load_or_compile(entry, mod.kern, sig, parallel, opts, stamp, EntryCache)
        except _Untrusted as e:
            _refuse(base, str(e))
            return None
        except OSError:             # the directory cannot be read or locked: memory only
            return None
        if disp is None:            # pragma: no cover - rewritten under us three times
            return None
        with _LOCK:
            _MEMO[key] = disp
        return disp


def _reused(key, disp):
    """A kernel already in this process's memory; one not in the cache is written with
    the program build in progress."""
    _count("memory")
    unwritten = _UNWRITTEN.get(key)
    if unwritten is not None and getattr(_BUILD, "on", None) is not None:
        _to_write(*unwritten, 0.0)
    return disp


def _load_or_compile(entry, kern, sig, parallel, opts, stamp, EntryCache):
    """The dispatcher of ``kern``: its entry's machine code when the entry checks out,
    else compiled now and persisted.  None when the entry kept changing under us."""
    from numba import njit
    from numba.core import typeinfer
    for _ in range(3):
        try:
            found = entry.read()
        except _Bad as e:
            entry.discard(getattr(e, "seen", None), str(e))
            continue                        # look again: gone, or another process's
        seen, blobs = found if found is not None else (None, {})
        on = getattr(_LOAD_ONLY, "on", None)
        received = None
        if found is None and on is not None:
            received = on.received.get(entry.key)
            if received is None or \
                    received.get(entry.modname + ".py") != entry.text.encode("utf-8"):
                raise _not_built("its machine code is not in the persistent cache (the "
                                 "native build process did not compile it)")
            blobs = received
        cache = EntryCache(kern, entry.pycache, entry.base, stamp, blobs)
        cache.load_only = getattr(_LOAD_ONLY, "on", None) is not None
        disp = njit(parallel=parallel, **dict(opts, cache=False))(kern)
        disp._cache = cache                 # Numba's cache of this function: the entry
        t0 = time.perf_counter()
        with typeinfer.register_dispatcher(disp):
            disp.compile(sig)
        disp.disable_compile()
        if cache.hit:
            _count("loaded")
            if received is not None:    # not in the cache: written by a later build
                files = [received[os.path.basename(entry.files[rel])]
                         for rel in list(entry.files)[1:]]
                with _LOCK:
                    _UNWRITTEN[entry.key] = (entry, *files)
            return disp
        seconds = time.perf_counter() - t0
        _count("compiled")
        if cache.load_error is not None:
            entry.discard(seen, f"Numba could not load it: "
                                f"{type(cache.load_error).__name__}: {cache.load_error}")
        saved = cache.saved(entry)
        if saved is not None:
            _to_write(entry, *saved, seconds)
        return disp
    return None
