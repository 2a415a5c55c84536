"""Files of the persistent compile cache: where it lives, and reading and writing its
entries safely.  Shared by the native CPU backend's kernel cache (backends/cpu/_cache.py)
and the PJRT platforms' executable cache (backends/pjrt/_cache.py).

Layer: runtime (imports only the base layer's config).

- ``cache_base()``: the cache's directory (config ``jax_compilation_cache_dir``, whose
  environment variables are ``JAXLITE_CACHE_DIR`` then JAX's ``JAX_COMPILATION_CACHE_DIR``;
  when unset ``$XDG_CACHE_HOME/jaxlite`` or ``~/.cache/jaxlite``), or None when the cache
  is off (an empty setting, or ``jax_enable_compilation_cache`` False).  Each user of the
  cache keeps its entries in a folder of its own there (``native/``, ``pjrt/``).
- Trust: a directory or file of the cache must belong to the user and be writable by
  nobody else (``trust_problem``; ``Untrusted`` when not): what the cache holds is machine
  code this process would load.  jaxlite creates directories with mode 0o700 and files
  0o600.
- Reading (``read_private``): only regular files, never through a symlink, a fifo never
  blocks; a size other than the one recorded, a directory or a symlink in a file's place
  raise ``BadEntry`` (the caller discards the entry and rebuilds it).
- Writing: ``replace`` puts bytes at a path atomically (a private temporary file renamed
  into place, replacing even a directory there); ``write_if_absent`` never replaces
  another process's file; ``dir_lock`` serialises writers and discarders of a folder's
  entries (``<folder>/.lock``).
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat

O_SAFE = (getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0))
MAX_FILE = 1 << 28


def cache_base() -> str | None:
    """The persistent cache's directory (see the module docstring), or None when off."""
    from ..config import config
    if not config.jax_enable_compilation_cache:
        return None
    d = config.jax_compilation_cache_dir
    if d is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        return os.path.join(base, "jaxlite")
    if not str(d).strip():
        return None
    return os.fspath(d)


class BadEntry(Exception):
    """An entry's file is not what its manifest records (or is no regular file): the entry
    is discarded and rebuilt."""


class Untrusted(Exception):
    """A directory or file of the cache that is not the user's own or that others may
    write: the cache is not used."""


def trust_problem(st, path: str) -> str | None:
    """Why ``path`` (its ``os.stat`` result ``st``) may not be trusted, or None."""
    if not hasattr(os, "getuid"):       # pragma: no cover - no POSIX owners (Windows)
        return None
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{path} belongs to uid {st.st_uid}, not to you (uid {uid})"
    if st.st_mode & 0o022:
        return (f"{path} has mode {oct(stat.S_IMODE(st.st_mode))}: group or others may "
                "write it")
    return None


def private_dir(path: str, create: bool) -> None:
    """Checks (creating it with mode 0o700 if asked) a directory of the cache.  Raises
    Untrusted, or OSError when it is no directory or cannot be made."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not create:
            raise
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path)
    why = trust_problem(st, path)
    if why:
        raise Untrusted(why)


def read_private(path: str, size: int | None = None, limit: int = MAX_FILE) -> bytes:
    """The bytes of the regular file ``path`` (not through a symlink; a fifo does not
    block), which must be the user's own and writable by nobody else.  Raises
    FileNotFoundError, Untrusted, or BadEntry (a symlink, directory, fifo, a size other
    than ``size``, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | O_SAFE)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise BadEntry(f"{path} is a symbolic link") from None
        raise BadEntry(f"{path} cannot be opened ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        why = trust_problem(st, path)
        if why:
            raise Untrusted(why)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise BadEntry(f"{path} is {kind}")
        if size is not None and st.st_size != size:
            raise BadEntry(f"{path} has {st.st_size} bytes, not the {size} recorded")
        if st.st_size > limit:
            raise BadEntry(f"{path} is too large ({st.st_size} bytes)")
        chunks, n = [], 0
        while n <= limit:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
            n += len(b)
        return b"".join(chunks)
    except OSError as e:
        raise BadEntry(f"{path} cannot be read ({e.strerror})") from None
    finally:
        os.close(fd)


def remove(path: str) -> None:
    """Removes whatever is at ``path`` (a directory with its contents; a symlink itself)."""
    import shutil
    try:
        st = os.lstat(path)
    except OSError:
        return
    # best effort: another process may have removed it first
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def new_file(path: str, data: bytes) -> str:
    """Writes ``data`` to a fresh private temporary file beside ``path``; its name."""
    import uuid
    tmp = f"{path}.tmp.{uuid.uuid4().hex[:12]}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_SAFE, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        remove(tmp)                 # a full disk: no half-written temporary left behind
        raise
    os.close(fd)
    return tmp


def replace(path: str, data: bytes) -> None:
    """Puts ``data`` at ``path`` atomically (temporary file, then rename), replacing what is
    there, even a directory."""
    tmp = new_file(path, data)
    try:
        try:
            os.replace(tmp, path)
        except OSError:             # a directory (or worse) in the file's place
            remove(path)
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            remove(tmp)


def write_if_absent(path: str, text: str) -> bool:
    """Writes ``text`` at ``path`` unless something is there already (atomically: a
    temporary file linked into place); whether it wrote."""
    tmp = new_file(path, text.encode("utf-8"))
    try:
        try:
            os.link(tmp, path)      # atomic, never replaces a file another process wrote
            return True
        except FileExistsError:
            return False
        except OSError:             # no hard links here
            if os.path.lexists(path):
                return False
            os.replace(tmp, path)
            return True
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def dir_lock(d: str):
    """Holds ``d/.lock`` exclusively (writers and discarders of entries take it)."""
    try:
        import fcntl
    except ImportError:             # pragma: no cover - no flock: manifests still decide
        yield
        return
    path = os.path.join(d, ".lock")
    fd = None
    for _ in (0, 1):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | O_SAFE, 0o600)
        except OSError:
            remove(path)            # a directory or a symlink in its place
            continue
        if stat.S_ISREG(os.fstat(fd).st_mode):
            break
        os.close(fd)
        fd = None
        remove(path)
    if fd is None:
        raise OSError(f"cannot lock {path}")
    try:
        # a file system without locks: the manifests still decide
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
