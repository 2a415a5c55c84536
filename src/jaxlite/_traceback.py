"""Tracebacks as the user should read them: jaxlite's internal frames left out.

Layer: bottom (reads ``config``; imports nothing else of jaxlite).

An error raised deep inside jaxlite (a shape check in an abstract-evaluation rule, a
transformation's tracing machinery) would otherwise reach the user under a dozen frames of
jaxlite's own code.  The public entry points (the functions of ``jaxlite``,
``jaxlite.numpy``, ``jaxlite.lax``, ... and the functions that ``jit``, ``grad``, ``vmap``
and the other transformations return) are *boundaries*: when an exception leaves one, the
frames of files inside the jaxlite package are dropped from its ``__traceback__``; the
user's own frames (the caller, and the user's function that a transformation traced) stay.
The work happens only on that error path: on success a boundary costs one Python call
(and a jitted function's cached call, nothing).

``config.jax_traceback_filtering`` (environment ``JAX_TRACEBACK_FILTERING``) chooses how,
with JAX's values:

    'off'                  tracebacks are left whole
    'tracebackhide'        frames stay, but jaxlite's get a ``__tracebackhide__`` local,
                           which IPython and pytest honour by not printing them
    'remove_frames'        jaxlite's frames are removed; the whole traceback is kept as
                           the exception's ``__cause__`` (an ``UnfilteredStackTrace``)
    'quiet_remove_frames'  jaxlite's frames are removed, and a note on the exception
                           says so and how to see them
    'auto' (the default)   'tracebackhide' inside IPython, else 'quiet_remove_frames'

Only the outermost boundary on the stack filters (``jnp.dot`` called inside a function
being ``grad``-ed leaves the filtering to ``grad``), so an exception is filtered once.
"""
from __future__ import annotations

import functools
import os
import sys
import types

from .config import config

# files under this folder are jaxlite's own: their frames are the ones filtered out
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# code objects of the boundaries (``api_boundary``'s wrapper, and the functions that filter
# in place, ``register_boundary``): an exception under one of these is left to that outer
# boundary
_BOUNDARY_CODES: set = set()

_NOTE = ("jaxlite removed its internal frames from this traceback (the frames of the "
         "user's code remain). Set JAX_TRACEBACK_FILTERING=off, or "
         "jaxlite.config.update('jax_traceback_filtering', 'off'), to see them.")


class UnfilteredStackTrace(Exception):
    """The whole traceback of an exception whose traceback jaxlite filtered (mode
    ``'remove_frames'``): attached as that exception's ``__cause__``."""


def _internal(frame) -> bool:
    return frame.f_code.co_filename.startswith(_PACKAGE_DIR)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` call, made by the function that
    calls this one, point at the first frame outside jaxlite: the user's line, however
    many jaxlite frames (boundaries, wrappers, helpers) lie between.  1 (the warning's own
    line) when no frame outside jaxlite is on the stack."""
    f = sys._getframe(1)
    level = 1
    while f is not None and _internal(f):
        f = f.f_back
        level += 1
    return level if f is not None else 1


def _mode() -> str:
    mode = config.jax_traceback_filtering
    if mode is None or mode == "auto":
        ipython = sys.modules.get("IPython")
        shell = getattr(ipython, "get_ipython", None) if ipython is not None else None
        return "tracebackhide" if shell is not None and shell() is not None \
            else "quiet_remove_frames"
    return mode


def _entries(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def filter_traceback(tb):
    """``tb`` rebuilt without the entries of frames in jaxlite's own files (None when
    every entry is one)."""
    out = None
    for t in reversed(list(_entries(tb))):
        if not _internal(t.tb_frame):
            out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _under_boundary(frame) -> bool:
    """Whether a boundary is running further up the stack than ``frame``."""
    f = frame.f_back
    while f is not None:
        if f.f_code in _BOUNDARY_CODES:
            return True
        f = f.f_back
    return False


def _with_callers(tb, frame):
    """``tb`` with the frames above ``frame`` (its callers, outermost first) put in front:
    the whole stack at the point where the exception left the boundary."""
    out = tb
    f = frame
    while f is not None:
        out = types.TracebackType(out, f, f.f_lasti, f.f_lineno)
        f = f.f_back
    return out


def filter_exception(e: BaseException, boundary_frame) -> None:
    """Filters ``e``'s traceback in place as ``jax_traceback_filtering`` says, unless a
    boundary above ``boundary_frame`` (the boundary ``e`` is leaving) will."""
    mode = _mode()
    if mode == "off" or e.__traceback__ is None or _under_boundary(boundary_frame):
        return
    tb = e.__traceback__
    if mode == "tracebackhide":
        for t in _entries(tb):
            if _internal(t.tb_frame):
                t.tb_frame.f_locals["__tracebackhide__"] = True
        return
    e.__traceback__ = filter_traceback(tb)
    if mode == "remove_frames":
        whole = UnfilteredStackTrace(
            f"{type(e).__name__}: {e}\n\nThe traceback of this exception leaves out "
            f"jaxlite's internal frames; this is the exception with its whole traceback.")
        whole.__traceback__ = _with_callers(tb, boundary_frame.f_back)
        whole.__cause__ = e.__cause__
        whole.__context__ = e.__context__
        whole.__suppress_context__ = e.__suppress_context__
        e.__cause__ = whole
        e.__context__ = None
    elif _NOTE not in getattr(e, "__notes__", ()):
        e.add_note(_NOTE)


def api_boundary(fun):
    """``fun`` as a boundary: an exception leaving it has jaxlite's internal frames
    filtered from its traceback (see the module docstring); results and other exceptions
    pass unchanged.  The wrapper keeps ``fun``'s name, docstring and signature."""
    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            filter_exception(e, sys._getframe())
            raise
    return boundary


# every wrapper api_boundary makes runs this one code object
_BOUNDARY_CODES.add(api_boundary(len).__code__)


def register_boundary(fun):
    """Marks ``fun`` (a function that filters its own exceptions with
    ``filter_exception``) as a boundary for ``_under_boundary``; returns ``fun``."""
    _BOUNDARY_CODES.add(fun.__code__)
    return fun


def wrap_namespace(module, public_name: str | None = None) -> None:
    """Makes every public function of ``module`` defined in jaxlite a boundary, in place.

    The wrapper's ``__module__`` becomes ``public_name`` (default ``module.__name__``), as
    JAX's public functions name their public module (``jax.numpy.dot.__module__`` is
    ``'jax.numpy'``), so that pickling finds the wrapper there.
    """
    name = public_name or module.__name__
    for attr in getattr(module, "__all__", None) or dir(module):
        if attr.startswith("_"):
            continue
        fn = module.__dict__.get(attr)
        owner = getattr(fn, "__module__", "") or ""
        if type(fn) is not types.FunctionType or fn.__code__ in _BOUNDARY_CODES or \
                not owner.startswith("jaxlite") or owner.startswith(_CORE_LAYERS):
            continue
        wrapped = _WRAPPERS.get(fn)
        if wrapped is None:     # one wrapper per function: namespaces sharing it still do
            wrapped = _WRAPPERS[fn] = api_boundary(fn)
            wrapped.__module__ = name
            wrapped.__qualname__ = attr
        setattr(module, attr, wrapped)


_WRAPPERS: dict = {}

# A helper of the core layers that a namespace imports (``get_aval`` in ``jaxlite.lax``) is
# no public function: it stays unwrapped.  ``share_wrappers`` leaves jaxlite's internal
# packages alone.  Both because their hot paths (eager dispatch, tracing, a jitted call)
# must not run a wrapper.
_CORE_LAYERS = ("jaxlite.core", "jaxlite.primitives", "jaxlite.ir")
_INTERNAL = _CORE_LAYERS + ("jaxlite.compiler", "jaxlite.backends", "jaxlite.runtime",
                            "jaxlite.transforms")


def share_wrappers() -> None:
    """In every loaded public jaxlite module, replaces a function that ``wrap_namespace``
    wrapped by its wrapper, so that names exported twice stay one object
    (``jaxlite.make_mesh is jaxlite.sharding.make_mesh``, as in JAX)."""
    for mod_name, module in list(sys.modules.items()):
        if module is None or not mod_name.startswith("jaxlite") or \
                mod_name.startswith(_INTERNAL) or \
                any(part.startswith("_") for part in mod_name.split(".")):
            continue
        for attr, value in list(vars(module).items()):
            if not attr.startswith("_") and type(value) is types.FunctionType:
                wrapped = _WRAPPERS.get(value)
                if wrapped is not None:
                    setattr(module, attr, wrapped)
