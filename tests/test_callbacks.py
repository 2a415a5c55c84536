"""``jax.pure_callback`` and ``jax.experimental.io_callback`` against real JAX: values,
what the callback receives, vmap methods, errors, effects under jit."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import io_callback
from oracle import assert_like_jax


def _mods(rjax, rjnp):
    import jax.experimental as rexp
    return ((jax, jnp, io_callback), (rjax, rjnp, rexp.io_callback))


def _outcome(fn):
    try:
        return fn()
    except Exception as e:   # noqa: BLE001 -- compared by type
        return type(e)


def _same(got, want):
    if isinstance(want, type):
        if want.__name__ == "JaxRuntimeError":
            assert got is jax.errors.JaxRuntimeError, got
            assert issubclass(want, RuntimeError) and issubclass(got, RuntimeError)
        else:
            assert got is want, (got, want)
        return
    from jaxlite.tree_util import tree_leaves
    import jax as real
    g, w = tree_leaves(got), real.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert_like_jax(a, b)


S3 = lambda j, n: j.ShapeDtypeStruct((3,), n.float32)   # noqa: E731
S0 = lambda j, n: j.ShapeDtypeStruct((), n.float32)     # noqa: E731

PURE = {
    "eager": lambda j, n, io: j.pure_callback(np.sin, S3(j, n), n.arange(3.0)),
    "jit": lambda j, n, io: j.jit(lambda x: j.pure_callback(np.sin, S3(j, n), x) * 2)(
        n.arange(3.0)),
    "pytree": lambda j, n, io: j.pure_callback(
        lambda d: {"a": d["x"] * 2, "b": (np.sum(d["x"]),)},
        {"a": S3(j, n), "b": (S0(j, n),)}, {"x": n.arange(3.0)}),
    "kwargs": lambda j, n, io: j.pure_callback(lambda x, y=1: x * y, S3(j, n), n.arange(3.0),
                                               y=n.float32(2)),
    "array_as_spec": lambda j, n, io: j.pure_callback(lambda x: x, n.ones(3), n.arange(3.0)),
    "float64_narrowed": lambda j, n, io: j.pure_callback(
        lambda x: np.ones(3, np.float64), S3(j, n), n.arange(3.0)),
    "scalar_result": lambda j, n, io: j.pure_callback(lambda x: 1.0, S0(j, n), 1.0),
    "int_result": lambda j, n, io: j.pure_callback(
        lambda x: np.asarray(x).astype(np.int32) + 1, j.ShapeDtypeStruct((2,), n.int32),
        n.array([1.5, 2.5])),
    "none_result": lambda j, n, io: j.pure_callback(lambda x: None, None, 1.0),
    "wrong_shape": lambda j, n, io: j.pure_callback(lambda x: np.ones(4, np.float32), S3(j, n),
                                                    n.arange(3.0)),
    "wrong_dtype": lambda j, n, io: j.pure_callback(lambda x: np.ones(3, np.int32), S3(j, n),
                                                    n.arange(3.0)),
    "wrong_count": lambda j, n, io: j.pure_callback(lambda x: (x, x), S3(j, n), n.arange(3.0)),
    "list_result": lambda j, n, io: j.pure_callback(lambda x: [1.0, 2.0, 3.0], S3(j, n),
                                                    n.arange(3.0)),
    "raises": lambda j, n, io: j.pure_callback(lambda x: 1 / 0, S0(j, n), 1.0),
    "jit_raises": lambda j, n, io: j.jit(lambda x: j.pure_callback(lambda x: 1 / 0, S0(j, n),
                                                                   x))(1.0),
    "x64_spec": lambda j, n, io: j.pure_callback(lambda x: x, j.ShapeDtypeStruct((), np.float64),
                                                 1.0),
    "bad_vmap_method": lambda j, n, io: j.pure_callback(lambda x: x, S0(j, n), 1.0,
                                                        vmap_method="bogus"),
    "grad": lambda j, n, io: j.grad(lambda x: j.pure_callback(np.sin, S0(j, n), x))(1.0),
    "jvp": lambda j, n, io: j.jvp(lambda x: j.pure_callback(np.sin, S0(j, n), x), (1.0,),
                                  (1.0,)),
    "jit_grad": lambda j, n, io: j.jit(j.grad(lambda x: j.pure_callback(np.sin, S0(j, n), x)))(
        1.0),
    "grad_other_arg": lambda j, n, io: j.grad(
        lambda x, y: x * j.pure_callback(np.cos, S0(j, n), y), argnums=0)(2.0, 0.5),
    "vmap_default": lambda j, n, io: j.vmap(lambda x: j.pure_callback(np.sin, S0(j, n), x))(
        n.arange(3.0)),
    "custom_jvp_wrapper": lambda j, n, io: j.grad(_sin_with_rule(j, n))(0.5),
    "in_scan": lambda j, n, io: j.lax.scan(
        lambda c, x: (c + j.pure_callback(np.square, S0(j, n), x), c), 0.0, n.arange(4.0)),
}


def _sin_with_rule(j, n):
    @j.custom_jvp
    def f(x):
        return j.pure_callback(np.sin, j.ShapeDtypeStruct((), n.float32), x)
    f.defjvp(lambda p, t: (f(p[0]), j.pure_callback(np.cos, j.ShapeDtypeStruct(
        (), n.float32), p[0]) * t[0]))
    return f


@pytest.mark.parametrize("case", sorted(PURE))
def test_pure_callback_like_jax(rjax, rjnp, case):
    (lj, ln, lio), (rj, rn, rio) = _mods(rjax, rjnp)
    _same(_outcome(lambda: PURE[case](lj, ln, lio)), _outcome(lambda: PURE[case](rj, rn, rio)))


def test_callback_receives_arrays(rjax, rjnp):
    for j, n, _ in _mods(rjax, rjnp):
        seen = []

        def cb(x, y):
            seen.append((isinstance(x, j.Array), np.shape(x), x.dtype,
                         isinstance(y, j.Array), y.dtype))
            return np.asarray(x) + np.asarray(y)
        j.pure_callback(cb, S3(j, n), n.arange(3.0), 1.0)
        j.jit(lambda x: j.pure_callback(cb, S3(j, n), x, 2))(n.arange(3.0))
        assert seen == [(True, (3,), np.float32, True, np.float32),
                        (True, (3,), np.float32, True, np.int32)]


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_pure_callback_vmap_methods(rjax, rjnp, method):
    shapes = []
    for j, n, _ in _mods(rjax, rjnp):
        seen = []

        def cb(a, b):
            seen.append((np.shape(a), np.shape(b)))
            return np.asarray(a) * np.asarray(b)
        f = lambda x, y: j.pure_callback(cb, S0(j, n), x, y, vmap_method=method)  # noqa
        out = j.vmap(f, in_axes=(0, None))(n.arange(3.0), n.float32(2))
        out2 = j.jit(j.vmap(f, in_axes=(None, 0)))(n.float32(3), n.arange(2.0))
        shapes.append((seen, np.asarray(out).tolist(), np.asarray(out2).tolist()))
    assert shapes[0] == shapes[1]


def test_pure_callback_nested_vmap_and_axes(rjax, rjnp):
    res = []
    for j, n, _ in _mods(rjax, rjnp):
        seen = []

        def cb(a):
            seen.append(np.shape(a))
            return np.asarray(a) * 2

        f = lambda x: j.pure_callback(cb, S0(j, n), x, vmap_method="expand_dims")  # noqa
        o1 = j.vmap(j.vmap(f))(n.ones((2, 3)))
        g = lambda x: j.pure_callback(cb, j.ShapeDtypeStruct((2,), n.float32), x,  # noqa
                                      vmap_method="expand_dims")
        o2 = j.vmap(g, in_axes=1)(n.arange(6.0).reshape(2, 3))
        o3 = j.vmap(lambda x: j.pure_callback(lambda a: a[0], S0(j, n), x,
                                              vmap_method="expand_dims"))
        res.append((seen, np.asarray(o1).tolist(), np.asarray(o2).tolist(),
                    _outcome(lambda: o3(n.ones(3)))))
    assert res[0][:3] == res[1][:3]
    _same(res[0][3], res[1][3])     # a result without the batch axis: a runtime error


IO = {
    "eager": lambda j, n, io: io(lambda x: np.asarray(x) + 1, S3(j, n), n.arange(3.0)),
    "jit": lambda j, n, io: j.jit(lambda x: io(lambda x: np.asarray(x) + 1, S3(j, n), x))(
        n.arange(3.0)),
    "none": lambda j, n, io: io(lambda x: None, None, 1.0),
    "vmap_unordered": lambda j, n, io: j.vmap(
        lambda x: io(lambda x: np.asarray(x) + 1, S0(j, n), x))(n.arange(3.0)),
    "vmap_ordered": lambda j, n, io: j.vmap(
        lambda x: io(lambda x: x, S0(j, n), x, ordered=True))(n.arange(3.0)),
    "grad": lambda j, n, io: j.grad(lambda x: io(lambda x: x, S0(j, n), x))(1.0),
    "wrong_shape": lambda j, n, io: io(lambda x: np.ones(2, np.float32), S3(j, n),
                                       n.arange(3.0)),
}


@pytest.mark.parametrize("case", sorted(IO))
def test_io_callback_like_jax(rjax, rjnp, case):
    (lj, ln, lio), (rj, rn, rio) = _mods(rjax, rjnp)
    _same(_outcome(lambda: IO[case](lj, ln, lio)), _outcome(lambda: IO[case](rj, rn, rio)))


def test_io_callback_effects_are_kept_and_ordered(rjax, rjnp):
    logs = []
    for j, n, io in _mods(rjax, rjnp):
        log = []

        @j.jit
        def f(x):
            io(lambda v: log.append(("a", float(v))), None, x, ordered=True)
            y = x * 2                      # the result of the next call is unused
            io(lambda v: log.append(("b", float(v))) or np.float32(0), S0(j, n), y,
               ordered=True)
            return x + 1
        f(1.0)
        f(5.0)
        logs.append(log)
        # under make_jaxpr the unused io_callback stays in the program
        assert "io_callback" in str(j.make_jaxpr(f)(1.0))
    assert logs[0] == logs[1] == [("a", 1.0), ("b", 2.0), ("a", 5.0), ("b", 10.0)]


def test_vmap_of_unordered_io_callback_runs_once_per_example(rjax, rjnp):
    calls = []
    for j, n, io in _mods(rjax, rjnp):
        seen = []
        j.vmap(lambda x: io(lambda v: seen.append(np.shape(v)) or np.asarray(v),
                            S0(j, n), x))(n.arange(3.0))
        calls.append(seen)
    assert calls[0] == calls[1] == [(), (), ()]


def test_callback_error_is_chained():
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.pure_callback(lambda x: 1 / 0, jax.ShapeDtypeStruct((), jnp.float32), 1.0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "ZeroDivisionError" in str(info.value)
