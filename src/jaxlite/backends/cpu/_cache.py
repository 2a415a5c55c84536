"""The persistent compile cache of the native CPU backend.

Layer: backends (used by native.py's ``NativeKernel``).

Each generated kernel is written as a small Python module in the cache directory, named by
a hash of everything its machine code depends on: the kernel's source (which encodes the
optimised program), the constants it reads, the Numba options and argument types, the
backend, the versions of jaxlite/Numba/llvmlite/NumPy/Python, the text of the code
generator's scalar-op and vector-maths modules, and the CPU (name and features).  The
module is imported and its ``kern`` compiled by Numba with ``cache=True``, so Numba keeps
the machine code beside it (``__pycache__``); another process importing the same module
file loads that machine code instead of compiling.

Directory: config ``jax_compilation_cache_dir`` (``JAXLITE_CACHE_DIR``, else JAX's
``JAX_COMPILATION_CACHE_DIR``); when unset, ``$XDG_CACHE_HOME/jaxlite`` or
``~/.cache/jaxlite``; an empty string turns the cache off.  Kernels live in its ``native/``
folder; ``native/programs/`` holds one empty marker per program whose native code was
built (_tiered.py: such a program starts loading it after its first call).

Safety: module files are written to a temporary file and linked into place only if absent
(so a file Numba already stamped is never touched by a racing writer); Numba writes its
own files the same way.  An entry whose module text is not the expected one, that does not
import, or whose Numba cache does not load, is discarded and rebuilt with a warning naming
the file.  ``stats()`` counts kernels compiled and loaded in this process.
"""
from __future__ import annotations

import glob
import hashlib
import os
import sys
import threading
import types
import uuid
import warnings

import numpy as np

_STATS = {"compiled": 0, "loaded": 0, "memory": 0, "discarded": 0}
_LOCK = threading.Lock()
_KEY_LOCKS: dict = {}
_MEMO: dict = {}          # key -> compiled dispatcher (this process)
_ENV_KEY = None


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


def cache_dir() -> str | None:
    """The cache directory in use, or None when the persistent cache is off."""
    from ...config import config
    d = config.jax_compilation_cache_dir
    if d is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        d = os.path.join(base, "jaxlite")
    elif not str(d).strip():
        return None
    return os.path.join(os.fspath(d), "native")


def _env_key() -> str:
    """Versions, code generator text and CPU: everything but the kernel itself."""
    global _ENV_KEY
    if _ENV_KEY is None:
        import llvmlite
        import llvmlite.binding as ll
        import numba
        from ... import __version__
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


def _write_if_absent(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{uuid.uuid4().hex[:12]}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    try:
        try:
            os.link(tmp, path)      # atomic, never replaces a file another process wrote
        except FileExistsError:
            pass
        except OSError:             # no hard links here: replace (still atomic)
            os.replace(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _discard(path: str, modname: str, why: str) -> None:
    warnings.warn(f"jaxlite: discarding the corrupt or stale compile cache entry {path} "
                  f"({why}); rebuilding it", RuntimeWarning, stacklevel=3)
    _count("discarded")
    files = [path] + glob.glob(os.path.join(os.path.dirname(path), "__pycache__",
                                            modname + ".*"))
    for f in files:
        try:
            os.unlink(f)
        except OSError:
            pass


def _load_module(path: str, modname: str, text: str):
    """Checks the module file's text, then executes it as module ``modname``."""
    with open(path, encoding="utf-8") as f:
        got = f.read()
    if got != text:
        raise ValueError("its text is not the kernel's generated module")
    mod = types.ModuleType(modname)
    mod.__file__ = path
    code = compile(text, path, "exec")
    sys.modules[modname] = mod
    exec(code, mod.__dict__)
    return mod


def compile_kernel(source: str, glb: dict, argtys: list, parallel: bool, opts: dict,
                   name: str):
    """The Numba dispatcher of one generated kernel, through the persistent cache.

    Returns None when the cache is off or the directory cannot be written (the caller
    compiles in memory).  Raises whatever Numba raises for a kernel it cannot compile.
    """
    d = cache_dir()
    if d is None:
        return None
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return None
    if not os.access(d, os.W_OK):
        return None
    from numba import njit, types as nbt
    sig = nbt.int64(*argtys)
    try:
        key, text = module_text(source, glb, str(sig), parallel, opts, name)
    except TypeError:
        return None
    with _LOCK:
        disp = _MEMO.get(key)
        klock = _KEY_LOCKS.setdefault(key, threading.Lock())
    if disp is not None:
        _count("memory")
        return disp
    with klock:
        disp = _MEMO.get(key)
        if disp is not None:
            _count("memory")
            return disp
        modname = f"jaxlite_kc_{key}"
        path = os.path.join(d, modname + ".py")
        copts = dict(opts, cache=True)
        for attempt in (0, 1):
            if not os.path.exists(path):
                _write_if_absent(path, text)
            try:
                mod = _load_module(path, modname, text)
            except FileNotFoundError:
                continue        # removed by another process meanwhile: write again
            except Exception as e:
                if attempt:
                    raise
                _discard(path, modname, f"{type(e).__name__}: {e}")
                continue
            try:
                disp = njit(sig, parallel=parallel, **copts)(mod.kern)
            except Exception as e:
                if attempt or not _is_cache_error(e, path, modname):
                    raise
                _discard(path, modname, f"Numba could not load its cache: "
                                        f"{type(e).__name__}: {e}")
                continue
            break
        else:                    # pragma: no cover - the entry vanished twice
            raise RuntimeError(f"compile cache entry {path} keeps disappearing")
        hits = sum(getattr(disp, "_cache_hits", {}).values())
        _count("loaded" if hits else "compiled")
        with _LOCK:
            _MEMO[key] = disp
        return disp


def _is_cache_error(e: Exception, path: str, modname: str) -> bool:
    """Whether Numba's failure ``e`` on the module at ``path`` came from its cache.

    Numba's typing/lowering errors are the kernel's.  So is any error when the module has
    no cache files yet: nothing was loaded, Numba compiled and failed (some of its passes
    raise plain ValueErrors, e.g. parfors rejecting a reduction variable).  Anything else
    (unpickling, truncated index or object files, ...) is taken for a damaged cache."""
    from numba.core import errors
    if isinstance(e, (errors.TypingError, errors.LoweringError,
                      errors.UnsupportedError, errors.NumbaError)):
        return False
    return bool(glob.glob(os.path.join(os.path.dirname(path), "__pycache__",
                                       modname + ".*")))
