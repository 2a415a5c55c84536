"""Errors as JAX shows them (issue 33): no internal exception chained under a user-facing
one, jaxlite's own frames filtered from tracebacks (``jax_traceback_filtering``), messages
that name the shapes the user passed, JAX's error classes (``JaxRuntimeError`` for the
transfer guard, ``ConcretizationTypeError`` for a traced axis).  Each case is asked of real
JAX too: the same exception class, the same key content."""
from __future__ import annotations

import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as ljnp

HERE = os.path.abspath(__file__)
PKG = os.path.dirname(os.path.abspath(jaxlite.__file__)) + os.sep


class _Lib:
    """One library's names, so that a case is written once for jaxlite and JAX."""

    def __init__(self, jax):
        import importlib
        self.jax = jax
        self.jnp = importlib.import_module(jax.__name__ + ".numpy")
        self.lax = importlib.import_module(jax.__name__ + ".lax")
        self.nn = importlib.import_module(jax.__name__ + ".nn")


@pytest.fixture(scope="module")
def libs(rjax):
    return _Lib(jaxlite), _Lib(rjax)


def _raise(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the exception is what is compared
        return e
    raise AssertionError("no exception raised")


def _shown_chain(e):
    """The exceptions Python prints under ``e`` ("During handling of the above exception"
    and "The above exception was the direct cause"), outermost first."""
    out = []
    while True:
        nxt = e.__cause__ if e.__cause__ is not None else \
            (None if e.__suppress_context__ else e.__context__)
        if nxt is None:
            return out
        out.append(nxt)
        e = nxt


# ---- 1. no internal exception chained under the user's error ----------------------------

O3, O4 = np.ones(3, np.float32), np.ones(4, np.float32)
M23, M45 = np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)

USER_ERRORS = {
    "dot": lambda L: L.jnp.dot(L.jnp.asarray(O3), L.jnp.asarray(O4)),
    "matmul": lambda L: L.jnp.matmul(L.jnp.asarray(M23), L.jnp.asarray(M45)),
    "matmul_op": lambda L: L.jnp.asarray(M23) @ L.jnp.asarray(M45),
    "add": lambda L: L.jnp.add(L.jnp.asarray(O3), L.jnp.asarray(O4)),
    "add_op": lambda L: L.jnp.asarray(O3) + L.jnp.asarray(O4),
    "concatenate": lambda L: L.jnp.concatenate([L.jnp.asarray(O3), L.jnp.asarray(M23)]),
    "reshape": lambda L: L.jnp.reshape(L.jnp.asarray(O3), (2, 2)),
    "reshape_method": lambda L: L.jnp.asarray(O3).reshape(5),
    "bad_dtype": lambda L: L.jnp.ones(3, dtype="foo"),
    "lax_mixed_dtypes": lambda L: L.lax.add(L.jnp.asarray(O3),
                                            L.jnp.asarray(O3.astype(np.int32))),
    "bitwise_float": lambda L: L.jnp.bitwise_and(L.jnp.asarray(O3), L.jnp.asarray(O3)),
    "sum_axis": lambda L: L.jnp.sum(L.jnp.asarray(O3), axis=2),
    "index": lambda L: L.jnp.asarray(M23)[:, :, 0],
    "item_assignment": lambda L: L.jnp.asarray(O3).__setitem__(0, 1.0),
    "broadcast_to": lambda L: L.jnp.broadcast_to(L.jnp.asarray(O3), (4,)),
}

WRAPS = {
    "eager": lambda L, f: f(L),
    "jit": lambda L, f: L.jax.jit(lambda: f(L))(),
    "grad": lambda L, f: L.jax.grad(lambda s: (f(L), s)[1] * 1.0)(1.0),
    "vmap": lambda L, f: L.jax.vmap(lambda s: (f(L), s)[1])(L.jnp.ones(2)),
}


@pytest.mark.parametrize("wrap", sorted(WRAPS))
@pytest.mark.parametrize("case", sorted(USER_ERRORS))
def test_user_error_has_no_internal_exception_chained(libs, case, wrap):
    """The error a user gets for bad operands is JAX's class and has nothing chained under
    it: a memo miss (KeyError) or another internal lookup is no part of it."""
    lite, real = libs
    f = USER_ERRORS[case]
    e = _raise(lambda: WRAPS[wrap](lite, f))
    want = _raise(lambda: WRAPS[wrap](real, f))
    assert type(e).__name__ == type(want).__name__, (e, want)
    assert _shown_chain(e) == [], (case, wrap, [repr(c) for c in _shown_chain(e)])
    # an internal exception may only sit there hidden (``raise ... from None``)
    if e.__context__ is not None:
        assert e.__suppress_context__, repr(e.__context__)


def test_memo_miss_is_not_chained_under_a_rule_error():
    """The abstract-evaluation memo: the first (missing) lookup of a signature whose rule
    raises leaves no KeyError under the rule's error, eagerly and while tracing."""
    a = ljnp.ones(7)
    for call in (lambda: ljnp.dot(a, ljnp.ones(5)),
                 lambda: jaxlite.jit(lambda x: ljnp.dot(x, ljnp.ones(5)))(a)):
        e = _raise(call)
        assert isinstance(e, TypeError)
        assert e.__context__ is None and e.__cause__ is None, repr(e.__context__)


# ---- 2. tracebacks: the user's frames, not jaxlite's --------------------------------------

def _user(L, x):
    return L.jnp.dot(x, L.jnp.ones(4))


TB_CASES = {
    "eager": lambda L: _user(L, L.jnp.ones(3)),
    "jit": lambda L: L.jax.jit(lambda x: _user(L, x))(L.jnp.ones(3)),
    "grad": lambda L: L.jax.grad(lambda x: _user(L, x).sum())(L.jnp.ones(3)),
    "vmap": lambda L: L.jax.vmap(lambda x: _user(L, x))(L.jnp.ones((2, 3))),
    "method": lambda L: L.jnp.ones(3).reshape(4),
    "operator": lambda L: L.jnp.ones(3) + L.jnp.ones(4),
    "ufunc": lambda L: L.jnp.add(L.jnp.ones(3), L.jnp.ones(4)),
}


def _frames(e):
    return [(os.path.abspath(f.filename), f.name) for f in traceback.extract_tb(e.__traceback__)]


@pytest.mark.parametrize("case", sorted(TB_CASES))
def test_traceback_keeps_user_frames_and_drops_internal_ones(libs, case):
    """By default ('auto', which outside IPython removes frames quietly as JAX does) the
    traceback holds the user's frames -- the caller and the user's own traced function --
    plus at most the public entry frame of a jitted call; the user's frames are JAX's."""
    lite, real = libs
    assert jaxlite.config.jax_traceback_filtering == "auto"
    e = _raise(lambda: TB_CASES[case](lite))
    frames = _frames(e)
    internal = [f for f in frames if f[0].startswith(PKG)]
    assert len(internal) <= 1, frames
    if internal:
        assert internal == [(os.path.join(PKG, "transforms", "jit.py"), "__call__")], frames
    mine = [name for path, name in frames if path == HERE]
    want = _raise(lambda: TB_CASES[case](real))
    assert mine == [name for path, name in _frames(want) if path == HERE]
    assert any("JAX_TRACEBACK_FILTERING=off" in n for n in e.__notes__), e.__notes__
    assert _shown_chain(e) == []


@pytest.mark.parametrize("case", ["eager", "jit", "grad", "method", "operator"])
def test_traceback_filtering_off_keeps_every_frame(case):
    libs_lite = _Lib(jaxlite)
    with jaxlite.config._override("jax_traceback_filtering", "off"):
        e = _raise(lambda: TB_CASES[case](libs_lite))
    frames = _frames(e)
    assert sum(f[0].startswith(PKG) for f in frames) >= 3, frames
    assert not getattr(e, "__notes__", None)
    assert e.__cause__ is None


def test_traceback_filtering_remove_frames_keeps_the_whole_one_as_cause(libs):
    """'remove_frames', as JAX: the filtered traceback, and the whole one kept as the
    exception's ``__cause__`` (an ``UnfilteredStackTrace``)."""
    lite, real = libs
    for lib in (lite, real):
        old = lib.jax.config.jax_traceback_filtering
        lib.jax.config.update("jax_traceback_filtering", "remove_frames")
        try:
            e = _raise(lambda: TB_CASES["jit"](lib))
        finally:
            lib.jax.config.update("jax_traceback_filtering", old)
        assert type(e.__cause__).__name__ == "UnfilteredStackTrace"
        assert "dot_general" in str(e.__cause__)
    with jaxlite.config._override("jax_traceback_filtering", "remove_frames"):
        e = _raise(lambda: TB_CASES["jit"](lite))
    assert sum(f[0].startswith(PKG) for f in _frames(e)) <= 1
    whole = _frames(e.__cause__)
    assert sum(f[0].startswith(PKG) for f in whole) >= 3
    assert (HERE, "_user") in whole and (HERE, "_raise") in whole


def test_traceback_filtering_tracebackhide_marks_internal_frames():
    with jaxlite.config._override("jax_traceback_filtering", "tracebackhide"):
        e = _raise(lambda: TB_CASES["eager"](_Lib(jaxlite)))
    tb, hidden, shown = e.__traceback__, 0, 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(PKG):
            assert tb.tb_frame.f_locals.get("__tracebackhide__") is True
            hidden += 1
        else:
            assert "__tracebackhide__" not in tb.tb_frame.f_locals
            shown += 1
        tb = tb.tb_next
    assert hidden >= 3 and shown >= 2


def test_traceback_filtering_values_are_jaxs(rjax):
    """The flag takes JAX's five values; another raises ValueError naming it, from
    ``config.update`` (as JAX) and from the environment at import."""
    for v in ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto"):
        with jaxlite.config._override("jax_traceback_filtering", v):
            assert jaxlite.config.jax_traceback_filtering == v
    for lib in (jaxlite, rjax):
        with pytest.raises(ValueError, match="jax_traceback_filtering|new enum value"):
            lib.config.update("jax_traceback_filtering", "everything")
    assert jaxlite.config.jax_traceback_filtering == "auto"
    env = dict(os.environ, JAX_TRACEBACK_FILTERING="everything",
               PYTHONPATH=os.path.dirname(PKG.rstrip(os.sep)))
    r = subprocess.run([sys.executable, "-c", "import jaxlite"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "JAX_TRACEBACK_FILTERING" in r.stderr, r.stderr


def test_public_functions_keep_their_names_and_pickle():
    """A public function is its boundary wrapper: the same name, docstring, signature and
    public module as JAX's (``jax.numpy.dot.__module__`` is ``'jax.numpy'``); it pickles."""
    import inspect
    import pickle
    assert ljnp.dot.__name__ == "dot" and ljnp.dot.__module__ == "jaxlite.numpy"
    assert "dot" in ljnp.dot.__doc__.lower()
    assert list(inspect.signature(ljnp.dot).parameters)[:2] == ["a", "b"]
    assert pickle.loads(pickle.dumps(ljnp.dot)) is ljnp.dot
    assert pickle.loads(pickle.dumps(jaxlite.lax.add)) is jaxlite.lax.add


# ---- 3. messages name the shapes the user passed -----------------------------------------

SHAPE_CASES = {
    "dot": lambda L, x: L.jnp.dot(x, L.jnp.ones(4)),
    "dot_r": lambda L, x: L.jnp.dot(L.jnp.ones(4), x),
    "matmul": lambda L, x: L.jnp.matmul(x, L.jnp.ones(4)),
    "matmul_r": lambda L, x: L.jnp.matmul(L.jnp.ones(4), x),
    "matmul_2d": lambda L, x: L.jnp.matmul(x, L.jnp.ones((4, 2))),
    "vdot": lambda L, x: L.jnp.vdot(x, L.jnp.ones(4)),
    "inner": lambda L, x: L.jnp.inner(x, L.jnp.ones(4)),
    "tensordot": lambda L, x: L.jnp.tensordot(x, L.jnp.ones(4), 1),
    "tensordot_axes": lambda L, x: L.jnp.tensordot(x, L.jnp.ones(4), axes=([0], [0])),
}

SHAPE_WRAPS = {
    "eager": lambda L, f: f(L, L.jnp.ones(3)),
    "jit": lambda L, f: L.jax.jit(lambda x: f(L, x))(L.jnp.ones(3)),
    "grad": lambda L, f: L.jax.grad(lambda x: f(L, x).sum())(L.jnp.ones(3)),
    "vmap": lambda L, f: L.jax.vmap(lambda x: f(L, x))(L.jnp.ones((2, 3))),
}


@pytest.mark.parametrize("wrap", sorted(SHAPE_WRAPS))
@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_contraction_error_names_the_users_shapes(libs, case, wrap):
    """A 1-D operand whose size does not match: JAX's TypeError naming the sizes (3,) and
    (4,) -- never matmul's internal (1, 3) / (4, 1) reshapes nor vmap's batched (2, 3)."""
    lite, real = libs
    e = _raise(lambda: SHAPE_WRAPS[wrap](lite, SHAPE_CASES[case]))
    want = _raise(lambda: SHAPE_WRAPS[wrap](real, SHAPE_CASES[case]))
    assert type(e) is TypeError and type(want) is TypeError, (e, want)
    msg = str(e)
    for s in ("(3,)", "(4,)"):
        assert s in msg and s in str(want), (msg, str(want))
    for internal in ("(1, 3)", "(3, 1)", "(4, 1)", "(1, 4)", "(2, 3)", "(2, 1, 3)"):
        assert internal not in msg, msg


# ---- 4. the transfer guard raises JAX's JaxRuntimeError ----------------------------------

def test_jax_runtime_error_class_is_jaxs(rjax):
    assert [c.__name__ for c in jaxlite.errors.JaxRuntimeError.__mro__] == \
        [c.__name__ for c in rjax.errors.JaxRuntimeError.__mro__]


GUARDED = {
    "asarray": lambda L: L.jnp.asarray(np.ones(3, np.float32)),
    "jit_argument": lambda L: L.jax.jit(lambda a: a + 1)(np.ones(3, np.float32)),
}


@pytest.mark.parametrize("case", sorted(GUARDED))
def test_transfer_guard_raises_jax_runtime_error(rjax, case):
    lite, real = _Lib(jaxlite), _Lib(rjax)
    with jaxlite.transfer_guard("disallow"):
        e = _raise(lambda: GUARDED[case](lite))
    with rjax.transfer_guard("disallow"):
        want = _raise(lambda: GUARDED[case](real))
    assert type(e) is jaxlite.errors.JaxRuntimeError, type(e)
    assert type(want) is rjax.errors.JaxRuntimeError
    for text in (e, want):
        assert str(text).startswith("INVALID_ARGUMENT: Disallowed host-to-device transfer")
        assert "float32[3]" in str(text)
    assert "CpuDevice(id=0)" in str(e)


def test_explicit_transfer_refused_by_disallow_explicit(rjax):
    x = np.ones((2, 3), np.float32)
    with jaxlite.transfer_guard("disallow_explicit"):
        e = _raise(lambda: jaxlite.device_put(x))
    with rjax.transfer_guard("disallow_explicit"):
        want = _raise(lambda: rjax.device_put(x))
    assert type(e).__name__ == type(want).__name__ == "JaxRuntimeError"
    assert isinstance(e, RuntimeError)
    assert "explicit" in str(e) and "float32[2,3]" in str(e)


# ---- 5. a traced value where a static one is needed --------------------------------------

X23 = np.ones((2, 3), np.float32)
STATIC_CASES = {
    "min_method": (lambda L, x, a: x.min(a), 0),
    "sum": (lambda L, x, a: L.jnp.sum(x, a), 0),
    "max": (lambda L, x, a: L.jnp.max(x, axis=a), 0),
    "mean": (lambda L, x, a: x.mean(a), 0),
    "prod_tuple": (lambda L, x, a: L.jnp.prod(x, axis=(a,)), 0),
    "argmax": (lambda L, x, a: L.jnp.argmax(x, a), 0),
    "one_hot": (lambda L, x, a: L.nn.one_hot(x, a), 2),
    "expand_dims": (lambda L, x, a: L.jnp.expand_dims(x, a), 0),
    "flip": (lambda L, x, a: L.jnp.flip(x, a), 0),
    "transpose": (lambda L, x, a: L.jnp.transpose(x, (a, 0)), 0),
    "concatenate": (lambda L, x, a: L.jnp.concatenate([x, x], axis=a), 0),
    "reshape": (lambda L, x, a: x.reshape(a, 3), 2),
    "zeros": (lambda L, x, a: L.jnp.zeros(a), 2),
    "arange": (lambda L, x, a: L.jnp.arange(a), 2),
    "linspace": (lambda L, x, a: L.jnp.linspace(0, 1, a), 2),
    "int": (lambda L, x, a: int(a), 2),
    "range": (lambda L, x, a: range(a), 2),
    "softmax": (lambda L, x, a: L.nn.softmax(x, axis=a), 0),
}


@pytest.mark.parametrize("case", sorted(STATIC_CASES))
def test_traced_axis_or_size_raises_jaxs_error(libs, case):
    """An axis or size passed as a jit argument: the tracer error JAX raises for it
    (ConcretizationTypeError for a reduction's axis, TracerIntegerConversionError where
    the value is used as an index, TypeError for a shape), suggesting static arguments."""
    lite, real = libs
    f, v = STATIC_CASES[case]
    x = lite.jnp.asarray(X23)
    e = _raise(lambda: lite.jax.jit(lambda x, a: f(lite, x, a))(x, v))
    want = _raise(lambda: real.jax.jit(lambda x, a: f(real, x, a))(real.jnp.asarray(X23), v))
    assert type(e).__name__ == type(want).__name__, (e, want)
    assert isinstance(e, TypeError)
    if type(e).__name__ == "ConcretizationTypeError":
        assert isinstance(e, jaxlite.errors.ConcretizationTypeError)
        assert "static" in str(e)
    assert _shown_chain(e) == []


def test_static_axis_still_works():
    f = jaxlite.jit(lambda x, a: x.min(a), static_argnums=1)
    np.testing.assert_array_equal(np.asarray(f(ljnp.arange(6.0).reshape(2, 3), 1)), [0, 3])


# ---- 6. every public entry point is a traceback boundary ---------------------------------

def _sub(L, name):
    """``L``'s submodule ``name`` (``'scipy.linalg'``: ``jaxlite.scipy.linalg`` or
    ``jax.scipy.linalg``)."""
    import importlib
    return importlib.import_module(f"{L.jax.__name__}.{name}")


def _mesh1(L):
    return L.jax.make_mesh((1,), ("x",))


def _custom_jvp(L):
    @L.jax.custom_jvp
    def f(x):
        return _user(L, x)
    f.defjvp(lambda primals, tangents: (f(*primals), tangents[0]))
    return f


def _custom_vjp(L):
    @L.jax.custom_vjp
    def f(x):
        return _user(L, x)
    f.defvjp(lambda x: (f(x), None), lambda res, g: (g,))
    return f


def _old_shard_map(L, x):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        sm = _sub(L, "experimental.shard_map").shard_map(
            lambda v: v, _mesh1(L), (L.jax.sharding.PartitionSpec("y"),),
            L.jax.sharding.PartitionSpec())
    return sm(x)


def _interpolate(L):
    interp = _sub(L, "scipy.interpolate").RegularGridInterpolator(
        (L.jnp.arange(3.0),), L.jnp.ones(3))
    return interp(L.jnp.ones((2, 2)))


def _P(L, *spec):
    return L.jax.sharding.PartitionSpec(*spec)


# a user error raised through each entry point (the user's own function ``_user`` where the
# entry point calls one)
ENTRY_CASES = {
    "scipy.linalg.solve": lambda L: _sub(L, "scipy.linalg").solve(L.jnp.ones((3, 3)),
                                                                  L.jnp.ones(4)),
    "scipy.linalg.expm": lambda L: _sub(L, "scipy.linalg").expm(L.jnp.ones((2, 3))),
    "scipy.special.xlogy": lambda L: _sub(L, "scipy.special").xlogy(L.jnp.ones(3),
                                                                    L.jnp.ones(4)),
    "scipy.special.gammaln_dtype": lambda L: _sub(L, "scipy.special").gammaln(
        L.jnp.ones(3, "complex64")),
    "scipy.special.logsumexp": lambda L: _sub(L, "scipy.special").logsumexp(
        L.jnp.ones(3), axis=2),
    "scipy.stats.norm.logpdf": lambda L: _sub(L, "scipy.stats").norm.logpdf(
        L.jnp.ones(3), L.jnp.ones(4)),
    "scipy.stats.sem": lambda L: _sub(L, "scipy.stats").sem(L.jnp.ones(3), axis=2),
    "scipy.signal.convolve": lambda L: _sub(L, "scipy.signal").convolve(
        L.jnp.ones(3), L.jnp.ones((2, 2))),
    "scipy.fft.dct": lambda L: _sub(L, "scipy.fft").dct(L.jnp.ones(3), axis=2),
    "scipy.ndimage.map_coordinates": lambda L: _sub(L, "scipy.ndimage").map_coordinates(
        L.jnp.ones((3, 3)), [L.jnp.ones(2)], order=1),
    "scipy.integrate.trapezoid": lambda L: _sub(L, "scipy.integrate").trapezoid(
        L.jnp.ones(3), axis=2),
    "scipy.optimize.minimize": lambda L: _sub(L, "scipy.optimize").minimize(
        lambda x: _user(L, x).sum(), L.jnp.ones(3), method="BFGS"),
    "scipy.cluster.vq.vq": lambda L: _sub(L, "scipy.cluster.vq").vq(
        L.jnp.ones((4, 3)), L.jnp.ones((2, 2))),
    "scipy.sparse.linalg.cg": lambda L: _sub(L, "scipy.sparse.linalg").cg(
        lambda v: _user(L, v), L.jnp.ones(3)),
    "scipy.interpolate": _interpolate,
    "shard_map_spec": lambda L: L.jax.shard_map(
        lambda v: v, mesh=_mesh1(L), in_specs=_P(L, "y"), out_specs=_P(L))(L.jnp.ones(4)),
    "shard_map_body": lambda L: L.jax.shard_map(
        lambda v: _user(L, v), mesh=_mesh1(L), in_specs=_P(L), out_specs=_P(L))(
        L.jnp.ones(3)),
    "experimental_shard_map": lambda L: _old_shard_map(L, L.jnp.ones(4)),
    "pmap_axis_size": lambda L: L.jax.pmap(lambda v: v, axis_size=2)(L.jnp.ones((1, 3))),
    "pmap_body": lambda L: L.jax.pmap(lambda v: _user(L, v))(L.jnp.ones((1, 3))),
    "custom_jvp": lambda L: _custom_jvp(L)(L.jnp.ones(3)),
    "custom_vjp": lambda L: _custom_vjp(L)(L.jnp.ones(3)),
    "checkpoint": lambda L: L.jax.checkpoint(lambda v: _user(L, v))(L.jnp.ones(3)),
    "remat": lambda L: L.jax.remat(lambda v: _user(L, v))(L.jnp.ones(3)),
    "lax.scan_carry": lambda L: L.lax.scan(lambda c, v: (c[None], v), L.jnp.ones(()),
                                           L.jnp.ones(3)),
    "lax.scan_body": lambda L: L.lax.scan(lambda c, v: (c, _user(L, v)), 0.0,
                                          L.jnp.ones((2, 3))),
    "lax.cond": lambda L: L.lax.cond(True, lambda: L.jnp.ones(3), lambda: L.jnp.ones(4)),
    "lax.switch": lambda L: L.lax.switch(1, [lambda: L.jnp.ones(3), lambda: L.jnp.ones(4)]),
    "lax.while_loop": lambda L: L.lax.while_loop(lambda c: True, lambda c: c[None],
                                                 L.jnp.ones(())),
    "lax.fori_loop": lambda L: L.lax.fori_loop(0, 3, lambda i, c: _user(L, c), L.jnp.ones(3)),
    "lax.map": lambda L: L.lax.map(lambda v: _user(L, v), L.jnp.ones((2, 3))),
    "compiled_call": lambda L: L.jax.jit(lambda v: v * 2).lower(L.jnp.ones(3)).compile()(
        L.jnp.ones(4)),
    "linear_transpose": lambda L: L.jax.linear_transpose(lambda v: v * 2.0, L.jnp.ones(3))(
        L.jnp.ones(4)),
    "custom_gradient": lambda L: L.jax.custom_gradient(
        lambda v: (_user(L, v), lambda g: (g,)))(L.jnp.ones(3)),
    "operator_invert": lambda L: ~L.jnp.ones(3),
    "at_set": lambda L: L.jnp.ones(3).at[0].set(L.jnp.ones(2)),
    "at_add": lambda L: L.jnp.ones(3).at[1.5].add(1.0),
}


@pytest.mark.parametrize("case", sorted(ENTRY_CASES))
def test_entry_point_tracebacks_hold_the_users_frames(libs, case):
    """Through each public entry point (jaxlite.scipy, shard_map, pmap, custom_jvp/vjp,
    checkpoint, lax's control flow, a compiled executable, ...) the error is JAX's class
    and its traceback holds only the user's frames (this file's, the same ones as JAX's)
    plus at most one public entry frame, with the note saying jaxlite's were removed;
    under 'off' jaxlite's frames are all there."""
    lite, real = libs
    e = _raise(lambda: ENTRY_CASES[case](lite))
    want = _raise(lambda: ENTRY_CASES[case](real))
    assert type(e).__name__ == type(want).__name__, (e, want)
    frames = _frames(e)
    others = [f for f in frames if f[0] != HERE]      # at most the public entry frame
    assert len(others) <= 1 and all(path.startswith(PKG) for path, _ in others), frames
    assert any("JAX_TRACEBACK_FILTERING=off" in n for n in getattr(e, "__notes__", ())), \
        frames
    mine = [name for path, name in frames if path == HERE]
    assert mine == [name for path, name in _frames(want) if path == HERE], frames
    with jaxlite.config._override("jax_traceback_filtering", "off"):
        whole = _frames(_raise(lambda: ENTRY_CASES[case](lite)))
    assert sum(path.startswith(PKG) for path, _ in whole) >= 2, whole
    assert [name for path, name in whole if path == HERE] == mine


def test_entry_points_keep_names_signatures_and_pickle():
    """The boundary wrappers of the newly covered entry points keep the name, signature
    and public module of the function they wrap, and pickle to themselves."""
    import inspect
    import pickle
    import jaxlite.scipy.linalg as lsl
    import jaxlite.scipy.stats as lst
    import jaxlite.experimental.shard_map as lesm
    for fn, module, first in ((lsl.solve, "jaxlite.scipy.linalg", "a"),
                              (lst.norm.logpdf, "jaxlite.scipy.stats.norm", "x"),
                              (lst.sem, "jaxlite.scipy.stats", "a"),
                              (lesm.shard_map, "jaxlite.experimental.shard_map", "f")):
        assert fn.__module__ == module, fn.__module__
        assert list(inspect.signature(fn).parameters)[0] == first
        assert pickle.loads(pickle.dumps(fn)) is fn
    sig = inspect.signature(jaxlite.jit(lambda a, b: a).lower(1.0, 2.0).compile().__call__)
    assert list(sig.parameters) == ["args", "kwargs"]
    f = jaxlite.pmap(lambda a, b: a)
    assert list(inspect.signature(f).parameters) == ["a", "b"]
    assert f.__name__ == "<lambda>"


def test_experimental_shard_map_warns_at_the_callers_line():
    """Its DeprecationWarning names the caller's file (the boundary's frame is skipped)."""
    import jaxlite.experimental.shard_map as lesm
    with pytest.warns(DeprecationWarning) as rec:
        lesm.shard_map(lambda v: v, _mesh1(_Lib(jaxlite)), (_P(_Lib(jaxlite)),),
                       _P(_Lib(jaxlite)))
    assert [os.path.abspath(w.filename) for w in rec] == [HERE]
