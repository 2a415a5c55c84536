"""Path checks shared by the command-line tools: what kind of file a path names (asked with
``os.stat``, never by opening it: opening a named pipe for reading waits for a writer), and
whether an output path can be written, so that a command fails at once with a message
naming the path instead of hanging or failing after its work is done.

Layer: tools.
"""
from __future__ import annotations

import os
import stat


_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def kind(st: os.stat_result) -> str:
    """What ``st`` (from ``os.stat``) describes, in words: ``"a regular file"``,
    ``"a directory"``, ``"a named pipe (FIFO)"``, ``"a character device"``, ...."""
    for test, name in _KINDS:
        if test(st.st_mode):
            return name
    return "not a regular file"


def stat_or_error(path) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed), with an error message naming ``path``.

    Raises:
      FileNotFoundError: nothing exists at ``path`` (or it is a dangling symlink).
      OSError: ``path`` cannot be examined (permission denied on a parent, a symlink loop).
    """
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise FileNotFoundError(f"{path} is a symbolic link to a missing file") from None
        raise FileNotFoundError(f"no such file or directory: {path}") from None
    except OSError as e:
        raise OSError(f"cannot examine {path}: {e.strerror or e}") from None


def check_readable_file(path) -> None:
    """Checks that ``path`` is a regular file this process may read, without opening it.

    Raises:
      FileNotFoundError: ``path`` does not exist.
      IsADirectoryError: ``path`` is a directory.
      ValueError: ``path`` is a named pipe, a device, a socket: not a regular file.
      PermissionError: ``path`` is not readable.
    """
    st = stat_or_error(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is {kind(st)}, not a regular file")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{path} is not readable (permission denied)")


def check_output_path(path, option: str) -> str:
    """Checks, before any work is done, that a report can be written to ``path``: it is not
    a directory; an existing file is writable (an existing pipe or device, e.g.
    ``/dev/stdout``, is written as given); a new file's parent directory exists and is
    writable.  A regular file is opened for writing (appending nothing) and a new one
    created and removed again, so that what the permission bits do not say (a read-only
    file system, ``/proc``, root's permissions) is found too.  ``option`` (e.g.
    ``"--json"``) names the option in the message.

    Returns ``path`` made absolute, so that a program that changes its working directory
    does not move the report.

    Raises:
      ValueError: one of the above does not hold; the message names ``option`` and ``path``.
    """
    if path is None or path == "":
        raise ValueError(f"{option}: empty output path")
    absolute = os.path.abspath(path)
    where = f"{option} {path}"
    try:
        st = os.stat(absolute)
    except (FileNotFoundError, NotADirectoryError):   # the parent is looked at below
        st = None
    except OSError as e:
        raise ValueError(f"{where}: cannot examine the path: {e.strerror or e}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{where}: the path is a directory; give a file name")
        if not os.access(absolute, os.W_OK):
            raise ValueError(f"{where}: the file exists and is not writable")
        if stat.S_ISREG(st.st_mode):
            _try_open(absolute, os.O_WRONLY | os.O_APPEND, where)   # the content is kept
        return absolute
    if os.path.islink(absolute):
        raise ValueError(f"{where}: the path is a symbolic link to a missing file")
    parent = os.path.dirname(absolute)
    try:
        pst = os.stat(parent)
    except FileNotFoundError:
        raise ValueError(f"{where}: the directory {os.path.dirname(path) or parent} does "
                         f"not exist") from None
    except OSError as e:
        raise ValueError(f"{where}: cannot examine the directory {parent}: "
                         f"{e.strerror or e}") from None
    if not stat.S_ISDIR(pst.st_mode):
        raise ValueError(f"{where}: {os.path.dirname(path) or parent} is {kind(pst)}, not a "
                         f"directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{where}: the directory {os.path.dirname(path) or parent} is not "
                         f"writable")
    # os.access answers from the permission bits (always yes for root): creating the file
    # is the real test (a read-only or special file system such as /proc or /sys)
    _try_open(absolute, os.O_WRONLY | os.O_CREAT | os.O_EXCL, where)
    os.unlink(absolute)
    return absolute


def _try_open(path: str, flags: int, where: str) -> None:
    """Opens ``path`` for writing with ``flags`` and closes it again, or raises
    ValueError naming ``where`` and the reason."""
    try:
        os.close(os.open(path, flags, 0o666))
    except OSError as e:
        raise ValueError(f"{where}: the file cannot be written: {e.strerror or e}") from None
