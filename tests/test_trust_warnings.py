"""Warnings point at the user's line: every user-facing warning jaxlite gives is attributed
to the first frame outside jaxlite (``_traceback.user_stacklevel``), however many of its
own frames (traceback boundaries, wrappers, helpers) lie between, as JAX's point at the
caller.  Each case gives the warning from this file and checks the warning's file and
line, and its category against real JAX where JAX warns too."""
from __future__ import annotations

import sys
import warnings

import jax as rjax
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import _traceback


def _caught(fn):
    """(category, filename, lineno) of the one warning ``fn`` gives, and the line of the
    call that gave it (``fn`` returns the line number it called from)."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        line = fn()
    ws = [w for w in ws if not issubclass(w.category, ResourceWarning)]
    assert len(ws) == 1, [str(w.message) for w in ws]
    return ws[0], line


def _here():
    return sys._getframe(1).f_lineno


def _device_call(m):
    x = m.numpy.ones(3)
    x.device(); return _here()      # noqa: E702  (the call and the line it is on)


def _mesh_context(m):
    mesh = m.make_mesh((1,), ("x",))
    with mesh: line = _here()       # noqa: E701
    return line


def _random_dtype(m):
    m.random.normal(m.random.key(0), (2,), dtype="float64"); return _here()  # noqa: E702


def _jit_device(m):
    m.jit(lambda x: x, device=m.devices()[0]); return _here()  # noqa: E702


def _donation(m):
    f = m.jit(lambda x: x.sum(), donate_argnums=0)
    f(m.numpy.ones(4)); return _here()  # noqa: E702


def _creation_dtype(m):
    m.numpy.zeros(3, dtype="float64"); return _here()  # noqa: E702


def _at_set(m):
    m.numpy.zeros(3, dtype="int32").at[0].set(1.5); return _here()  # noqa: E702


def _welch(m):
    m.scipy.signal.welch(m.numpy.ones(8), nperseg=16); return _here()  # noqa: E702


def _csd(m):
    x = m.numpy.ones(16) * (1 + 1j)
    m.scipy.signal.csd(x, x, nperseg=8); return _here()  # noqa: E702


def _shard_map_old(m):
    import importlib
    sm = importlib.import_module(m.__name__ + ".experimental.shard_map")
    mesh = m.make_mesh((1,), ("x",))
    P = m.sharding.PartitionSpec
    sm.shard_map(lambda x: x, mesh, P(), P()); return _here()  # noqa: E702


CASES = {
    "device_call": (_device_call, DeprecationWarning, False),
    "mesh_context": (_mesh_context, DeprecationWarning, True),
    "random_dtype": (_random_dtype, UserWarning, True),
    "jit_device": (_jit_device, DeprecationWarning, False),
    "donation": (_donation, UserWarning, False),
    "creation_dtype": (_creation_dtype, UserWarning, True),
    "at_set": (_at_set, FutureWarning, True),
    "welch": (_welch, UserWarning, True),
    "csd": (_csd, UserWarning, True),
    "shard_map_old": (_shard_map_old, DeprecationWarning, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_warning_points_at_the_users_line(case):
    fn, category, _ = CASES[case]
    w, line = _caught(lambda: fn(jaxlite))
    assert issubclass(w.category, category), (w.category, str(w.message))
    assert w.filename == __file__, (w.filename, str(w.message))
    assert w.lineno == line


@pytest.mark.parametrize("case", sorted(c for c, v in CASES.items() if v[2]))
def test_jax_warns_the_same_category_at_the_same_line(case):
    """Where JAX gives the same warning (on its CPU backend), it is of the same category.
    (JAX points some of them, .at[].set's and the spectral functions', into its own
    files; jaxlite points every one at the user's line.)"""
    fn, category, _ = CASES[case]
    w, _ = _caught(lambda: fn(rjax))
    assert issubclass(w.category, category), (w.category, str(w.message))


def test_no_user_frame_falls_back_to_the_warning_itself():
    """Called with only jaxlite's frames on the stack (a background build thread), the
    level is 1: the warning's own line, never a frame that is not there."""
    code = compile("from jaxlite import _traceback\nlevel = _traceback.user_stacklevel()\n",
                   _traceback.__file__, "exec")
    ns = {}
    exec(code, ns)
    # the exec'd module frame counts as jaxlite's (its file is _traceback.py); above it is
    # this test's frame, so the level reaches it: 2
    assert ns["level"] == 2
