"""Issue 10 fidelity edges, each against real JAX: Python control flow on concrete values
under differentiation, tracer conversions and error types, custom_jvp/custom_vjp call
order, dtype comparisons, tracers' printed forms and their Array attributes."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import errors

from oracle import assert_like_jax


def _abs_py(x):
    return x if x > 0 else -x


def _halve_until_small(x):
    while x > 1.0:
        x = x * 0.5
    return x


def _piecewise_cube(x):
    return x ** 3 if x > 0 else -x


# ---- Python control flow on concrete values under grad/jvp/vjp/linearize ----------------

CONTROL_FLOW = {
    "grad abs": lambda J, jn: J.grad(_abs_py)(-2.0),
    "grad abs positive": lambda J, jn: J.grad(_abs_py)(3.0),
    "grad python while": lambda J, jn: J.grad(_halve_until_small)(3.0),
    "jvp abs": lambda J, jn: J.jvp(_abs_py, (-2.0,), (1.0,))[1],
    "linearize abs": lambda J, jn: J.linearize(_abs_py, -2.0)[1](1.0),
    "vjp abs": lambda J, jn: J.vjp(_abs_py, -2.0)[1](1.0)[0],
    "hessian piecewise": lambda J, jn: J.hessian(_piecewise_cube)(2.0),
    "jacfwd row test": lambda J, jn: J.jacfwd(lambda x: x if x[0] > 0 else -x)(jn.ones(2)),
    "jacrev row test": lambda J, jn: J.jacrev(lambda x: x if x[0] > 0 else -x)(-jn.ones(2)),
    "grad int()": lambda J, jn: J.grad(lambda x: x * int(x))(2.5),
    "grad item()": lambda J, jn: J.grad(lambda x: x * x.item())(2.5),
    "grad round()": lambda J, jn: J.grad(lambda x: x * round(x))(2.7),
    "grad list index": lambda J, jn: J.grad(
        lambda x, i: x * [1.0, 2.0, 3.0][i], allow_int=True)(2.0, jn.int32(2)),
}


@pytest.mark.parametrize("name", sorted(CONTROL_FLOW))
def test_python_control_flow_under_differentiation(name, rjax, rjnp):
    case = CONTROL_FLOW[name]
    assert_like_jax(case(jax, jnp), case(rjax, rjnp))


STILL_TRACED = {
    # under jit and vmap there is no concrete value, in JAX as here
    "jit(grad)": lambda J, jn: J.jit(J.grad(_abs_py))(1.0),
    "grad(jit)": lambda J, jn: J.grad(J.jit(_abs_py))(1.0),
    "vmap(grad)": lambda J, jn: J.vmap(J.grad(_abs_py))(jn.ones(2)),
}


@pytest.mark.parametrize("name", sorted(STILL_TRACED))
def test_python_control_flow_under_jit_or_vmap_still_raises(name, rjax, rjnp):
    with pytest.raises(rjax.errors.TracerBoolConversionError):
        STILL_TRACED[name](rjax, rjnp)
    with pytest.raises(errors.TracerBoolConversionError):
        STILL_TRACED[name](jax, jnp)


CONVERSIONS = {
    "int": int, "float": float, "complex": complex, "index": operator.index, "bool": bool,
    "item": lambda v: v.item(), "tolist": lambda v: v.tolist(), "asarray": np.asarray,
    "hex": hex,
}


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception's type is what is compared
        return type(e).__name__
    return "ok"


@pytest.mark.parametrize("conv", sorted(CONVERSIONS))
@pytest.mark.parametrize("where", ["jvp float", "jit float", "jit int"])
def test_tracer_conversions_raise_what_jax_raises(conv, where, rjax):
    fn = CONVERSIONS[conv]

    def run(J):
        if where == "jvp float":
            return J.jvp(lambda x: (fn(x), x)[1], (2.0,), (1.0,))
        arg = 2.0 if where == "jit float" else 2
        return J.jit(lambda x: (fn(x), x)[1])(arg)

    assert _outcome(lambda: run(jax)) == _outcome(lambda: run(rjax))


def test_error_classes_are_typeerrors_as_in_jax(rjax):
    assert issubclass(errors.UnexpectedTracerError, TypeError)
    assert issubclass(rjax.errors.UnexpectedTracerError, TypeError)
    leaked = []
    jax.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(TypeError):
        jnp.sin(leaked[0])


# ---- custom_jvp / custom_vjp ----------------------------------------------------------------

def _custom_abs(J, jn):
    @J.custom_jvp
    def g(x):
        if x > 0:
            return x
        return -x

    g.defjvp(lambda p, t: (g(p[0]), jn.sign(p[0]) * t[0]))
    return g


def test_custom_jvp_with_python_if_under_grad(rjax, rjnp):
    assert_like_jax(jax.grad(_custom_abs(jax, jnp))(-3.0),
                    rjax.grad(_custom_abs(rjax, rjnp))(-3.0))
    with pytest.raises(rjax.errors.TracerBoolConversionError):
        rjax.jit(rjax.grad(_custom_abs(rjax, rjnp)))(-3.0)
    with pytest.raises(errors.TracerBoolConversionError):
        jax.jit(jax.grad(_custom_abs(jax, jnp)))(-3.0)


def _logged_sin(J, jn, log):
    @J.custom_vjp
    def h(x):
        log.append("primal")
        return jn.sin(x)

    def fwd(x):
        log.append("fwd")
        return jn.sin(x), x

    def bwd(r, g):
        log.append("bwd")
        return (g * jn.cos(r),)

    h.defvjp(fwd, bwd)
    return h


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "vmap(grad)", "vjp"])
def test_custom_vjp_runs_only_fwd_and_bwd(how, rjax, rjnp):
    def run(J, jn):
        log = []
        h = _logged_sin(J, jn, log)
        if how == "grad":
            out = J.grad(h)(1.0)
        elif how == "jit(grad)":
            out = J.jit(J.grad(h))(1.0)
        elif how == "vmap(grad)":
            out = J.vmap(J.grad(h))(jn.ones(2))
        else:
            out = J.vjp(h, 1.0)[1](1.0)[0]
        return out, log

    got, got_log = run(jax, jnp)
    want, want_log = run(rjax, rjnp)
    assert_like_jax(got, want)
    assert got_log == want_log == ["fwd", "bwd"]


def test_custom_vjp_fwd_output_structure_is_what_grad_sees(rjax, rjnp):
    # fwd returning a pair as the output: grad then refuses a non-scalar output
    def build(J, jn):
        @J.custom_vjp
        def h(x):
            return jn.sin(x)
        h.defvjp(lambda x: ((jn.sin(x), jn.sin(x)), x), lambda r, g: (g,))
        return h
    with pytest.raises(TypeError):
        rjax.grad(build(rjax, rjnp))(1.0)
    with pytest.raises(TypeError):
        jax.grad(build(jax, jnp))(1.0)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_custom_function_closing_over_differentiated_value_raises(kind, rjax, rjnp):
    def outer(J):
        def f_of(y):
            if kind == "custom_jvp":
                @J.custom_jvp
                def f(x):
                    return x * y
                f.defjvp(lambda p, t: (f(p[0]), t[0] * y))
            else:
                @J.custom_vjp
                def f(x):
                    return x * y
                f.defvjp(lambda x: (f(x), None), lambda r, g: (g * y,))
            return f(2.0)
        return f_of

    with pytest.raises(rjax.errors.UnexpectedTracerError):
        rjax.grad(outer(rjax))(3.0)
    with pytest.raises(errors.UnexpectedTracerError):
        jax.grad(outer(jax))(3.0)


# ---- dtypes compare both ways --------------------------------------------------------------

@pytest.mark.parametrize("other", [np.dtype("int32"), np.int32, "int32", np.dtype("int64"),
                                   int, float, None], ids=repr)
def test_scalar_type_equality_both_ways(other, rjnp):
    assert (jnp.int32 == other) == (rjnp.int32 == other)
    assert (other == jnp.int32) == (other == rjnp.int32)
    assert (jnp.int32 != other) == (rjnp.int32 != other)


def test_dtype_membership_test(rjnp):
    x = jnp.zeros(2, jnp.int32)
    assert x.dtype in (jnp.int32, jnp.int64)
    assert jnp.int32 == x.dtype and x.dtype == jnp.int32
    assert jnp.float32 == np.float32(1).dtype
    assert (jnp.float32 in (np.dtype("float32"),)) == (rjnp.float32 in (np.dtype("float32"),))


# ---- jax.debug.print's argument check ------------------------------------------------------

@pytest.mark.parametrize("case", ["fstring+kw", "fstring+arg", "missing name", "missing index",
                                  "ok kw", "ok positional"])
def test_debug_print_argument_check(case, rjax, capsys):
    def run(J):
        x = J.numpy.float32(1.5)
        if case == "fstring+kw":
            J.debug.print(f"x={x}", y=x)
        elif case == "fstring+arg":
            J.debug.print(f"x={x}", x)
        elif case == "missing name":
            J.debug.print("x={y}", z=x)
        elif case == "missing index":
            J.debug.print("x={} {}", x)
        elif case == "ok kw":
            J.jit(lambda v: J.debug.print("x={v:.2f}", v=v))(x)
        else:
            J.debug.print("{} {}", x, 2)
    assert _outcome(lambda: run(jax)) == _outcome(lambda: run(rjax))
    capsys.readouterr()


# ---- printed forms of tracers and avals ------------------------------------------------

def _reprs(J, jn):
    seen = []

    def show(x):
        seen.append(repr(x))
        seen.append(str(x))
        return x

    J.jit(show)(1.0)
    J.jit(show)(jn.ones((2, 3), jn.int32))
    J.jit(lambda x: show(x.astype(jn.bfloat16)))(1.0)
    J.jit(lambda x: show(jn.zeros((0, 2), jn.complex64)))(1.0)
    J.grad(show)(1.0)
    J.grad(lambda x: show(jn.ones(3) * x).sum())(1.0)
    J.jvp(show, (1.0,), (1.0,))
    J.jvp(lambda x: show(jn.ones(3) * x), (1.0,), (1.0,))
    J.vmap(show)(jn.ones(3))
    J.vmap(show, in_axes=1)(jn.ones((2, 3)))
    J.jit(J.grad(show))(1.0)
    J.vmap(J.grad(show))(jn.ones(2))
    J.linearize(show, 1.0)
    return seen


def test_tracer_reprs_match_jax(rjax, rjnp):
    assert _reprs(jax, jnp) == _reprs(rjax, rjnp)


def test_tracer_type_names_match_jax(rjax, rjnp):
    def names(J, jn):
        got = []
        J.jit(lambda x: got.append(type(x).__name__) or x)(1.0)
        J.grad(lambda x: got.append(type(x).__name__) or x)(1.0)
        J.jvp(lambda x: got.append(type(x).__name__) or x, (1.0,), (1.0,))
        J.vmap(lambda x: got.append(type(x).__name__) or x)(jn.ones(2))
        return got
    assert names(jax, jnp) == names(rjax, rjnp)


def test_shaped_array_str_and_repr(rjax, rjnp):
    for shape, dt, weak in [((2,), np.float32, True), ((), np.int32, False),
                            ((0, 3), np.complex64, False)]:
        got = jax.core.ShapedArray(shape, np.dtype(dt), weak_type=weak)
        want = rjax.core.ShapedArray(shape, np.dtype(dt), weak_type=weak)
        assert str(got) == str(want)
        assert repr(got) == repr(want)


# ---- every public Array member on tracers (jit, grad, vmap) ------------------------------

ARRAY_MEMBERS = {
    "T": lambda x, jn: x.T,
    "mT": lambda x, jn: x.mT,
    "all": lambda x, jn: (x > 1).all(),
    "any": lambda x, jn: (x > 1).any(axis=-1),
    "argmax": lambda x, jn: x.argmax(),
    "argmin": lambda x, jn: x.argmin(axis=-1),
    "argpartition": lambda x, jn: x.argpartition(1),
    "argsort": lambda x, jn: x.argsort(),
    "astype": lambda x, jn: x.astype(jn.int32),
    "at": lambda x, jn: x.at[0].set(7.0),
    "byteswap": lambda x, jn: x.byteswap(),
    "choose": lambda x, jn: (x > 2).astype(jn.int32).choose([x, -x]),
    "clip": lambda x, jn: x.clip(0.5, 2.0),
    "compress": lambda x, jn: x.compress(jn.array([True, False, True]), axis=-1),
    "conj": lambda x, jn: x.conj(),
    "conjugate": lambda x, jn: x.conjugate(),
    "copy": lambda x, jn: x.copy(),
    "cumprod": lambda x, jn: x.cumprod(axis=-1),
    "cumsum": lambda x, jn: x.cumsum(),
    "diagonal": lambda x, jn: x.diagonal(),
    "dot": lambda x, jn: x.dot(jn.arange(3.0)),
    "dtype": lambda x, jn: x.dtype,
    "flat": lambda x, jn: x.flat,
    "flatten": lambda x, jn: x.flatten(),
    "imag": lambda x, jn: x.imag,
    "item": lambda x, jn: x.item(),
    "itemsize": lambda x, jn: x.itemsize,
    "max": lambda x, jn: x.max(axis=-1),
    "mean": lambda x, jn: x.mean(),
    "min": lambda x, jn: x.min(),
    "nbytes": lambda x, jn: x.nbytes,
    "ndim": lambda x, jn: x.ndim,
    "nonzero": lambda x, jn: x.nonzero(size=2)[0],
    "prod": lambda x, jn: x.prod(axis=0),
    "ptp": lambda x, jn: x.ptp(),
    "ravel": lambda x, jn: x.ravel(),
    "real": lambda x, jn: x.real,
    "repeat": lambda x, jn: x.repeat(2, axis=-1),
    "reshape": lambda x, jn: x.reshape(-1, 1),
    "round": lambda x, jn: (x / 4).round(),
    "searchsorted": lambda x, jn: x.searchsorted(2.5),
    "shape": lambda x, jn: x.shape,
    "size": lambda x, jn: x.size,
    "sort": lambda x, jn: (-x).sort(),
    "squeeze": lambda x, jn: x[None].squeeze(0),
    "std": lambda x, jn: x.std(ddof=1),
    "sum": lambda x, jn: x.sum(axis=-1, keepdims=True),
    "swapaxes": lambda x, jn: x.swapaxes(0, -1),
    "take": lambda x, jn: x.take(jn.array([0, 2])),
    "to_device": lambda x, jn: x.to_device(_top_module(jn).devices()[0]),
    "trace": lambda x, jn: x.trace(),
    "transpose": lambda x, jn: x.transpose(),
    "var": lambda x, jn: x.var(axis=-1),
    "view": lambda x, jn: x.view(jn.int32),
    # members that need a concrete array: ConcretizationTypeError or AttributeError
    "addressable_data": lambda x, jn: x.addressable_data(0),
    "addressable_shards": lambda x, jn: x.addressable_shards,
    "committed": lambda x, jn: x.committed,
    "copy_to_host_async": lambda x, jn: x.copy_to_host_async(),
    "device": lambda x, jn: x.device,
    "global_shards": lambda x, jn: x.global_shards,
    "is_fully_addressable": lambda x, jn: x.is_fully_addressable,
    "is_fully_replicated": lambda x, jn: x.is_fully_replicated,
    "sharding": lambda x, jn: x.sharding,
    "tolist": lambda x, jn: x.tolist(),
    "block_until_ready": lambda x, jn: x.block_until_ready(),
    "devices": lambda x, jn: x.devices(),
    "is_deleted": lambda x, jn: x.is_deleted(),
    "delete": lambda x, jn: x.delete(),
    "tobytes": lambda x, jn: x.tobytes(),
    "on_device_size_in_bytes": lambda x, jn: x.on_device_size_in_bytes(),
    "unsafe_buffer_pointer": lambda x, jn: x.unsafe_buffer_pointer(),
}


def _top_module(jn):
    import importlib
    return importlib.import_module(jn.__name__.split(".")[0])


def test_array_member_table_covers_jax_array(rjax):
    public = {n for n in dir(rjax.Array) if not n.startswith("_")}
    assert public <= set(ARRAY_MEMBERS), sorted(public - set(ARRAY_MEMBERS))


def _member_outcome(J, jn, mode, member):
    side = []

    def body(x):
        out = member(x, jn)
        if hasattr(out, "aval"):
            return out
        side.append(out)
        return x

    x = jn.arange(6.0).reshape(2, 3)
    try:
        if mode == "jit":
            out = J.jit(body)(x)
        elif mode == "vmap":
            out = J.vmap(body)(x)
        else:
            out = J.grad(lambda v: jn.sum(body(v).astype(jn.float32)))(x)
    except Exception as e:  # noqa: BLE001 - the exception's type is what is compared
        return type(e).__name__
    return (np.asarray(out).tolist(), str(out.dtype), out.shape, side)


@pytest.mark.parametrize("mode", ["jit", "grad", "vmap"])
@pytest.mark.parametrize("name", sorted(ARRAY_MEMBERS))
def test_array_members_on_tracers_match_jax(name, mode, rjax, rjnp):
    member = ARRAY_MEMBERS[name]
    assert _member_outcome(jax, jnp, mode, member) == \
        _member_outcome(rjax, rjnp, mode, member)


# ---- Array methods added for the table: view, byteswap, compress, choose, round ----------

def _x(jn):
    return jn.arange(6.0).reshape(2, 3)


METHOD_EDGES = {
    "view u8": lambda J, jn: _x(jn).view(jn.uint8),
    "view f16": lambda J, jn: _x(jn).view(jn.float16),
    "view int16->int32": lambda J, jn: jn.arange(4, dtype=jn.int16).view(jn.int32),
    "view as bool": lambda J, jn: jn.array([0, 1, 2], jn.uint8).view(bool),
    "view from bool": lambda J, jn: jn.array([True, False]).view(jn.uint8),
    "view 0-d other size": lambda J, jn: jn.float32(1).view(jn.uint8),
    "view 0-d same size": lambda J, jn: jn.float32(1).view(jn.int32),
    "view ragged": lambda J, jn: jn.arange(3, dtype=jn.int16).view(jn.int32),
    "view jit": lambda J, jn: J.jit(lambda v: v.view(jn.int32))(_x(jn)),
    "byteswap int32": lambda J, jn: jn.arange(3, dtype=jn.int32).byteswap(),
    "byteswap uint8": lambda J, jn: jn.arange(3, dtype=jn.uint8).byteswap(),
    "byteswap float32": lambda J, jn: _x(jn).byteswap(),
    "byteswap inplace": lambda J, jn: _x(jn).byteswap(inplace=True),
    "flat": lambda J, jn: _x(jn).flat,
    "compress flattened": lambda J, jn: jn.compress(jn.array([1, 0, 1, 1]), _x(jn)),
    "compress size": lambda J, jn: jn.compress(jn.array([1, 0, 1]), _x(jn), axis=1, size=3,
                                               fill_value=-1),
    "compress long true": lambda J, jn: jn.compress(jn.array([1, 0, 1, 1]), _x(jn), axis=1),
    "compress long false": lambda J, jn: jn.compress(jn.array([1, 0, 1, 0]), _x(jn), axis=1),
    "compress short": lambda J, jn: jn.compress(jn.array([1]), _x(jn), axis=1),
    "compress method": lambda J, jn: _x(jn).compress(jn.array([False, True]), axis=0),
    "choose": lambda J, jn: jn.choose(jn.array([0, 1, 2]), [jn.zeros(3), jn.ones(3),
                                                             2 * jn.ones(3, jn.int32)]),
    "choose out of range": lambda J, jn: jn.choose(jn.array([0, 1, 3]),
                                                   [jn.zeros(3), jn.ones(3)]),
    "choose wrap": lambda J, jn: jn.choose(jn.array([0, 1, 3, -1]),
                                           [jn.zeros(4), jn.ones(4)], mode="wrap"),
    "choose clip": lambda J, jn: jn.choose(jn.array([0, 1, 3, -1]),
                                           [jn.zeros(4), jn.ones(4)], mode="clip"),
    "choose jit wrap": lambda J, jn: J.jit(lambda a: jn.choose(
        a, [jn.zeros(4), jn.ones(4)], mode="wrap"))(jn.array([0, 1, 3, -1])),
    "choose jit raise": lambda J, jn: J.jit(lambda a: jn.choose(
        a, [jn.zeros(4), jn.ones(4)]))(jn.array([0, 1, 3, -1])),
    "choose broadcast": lambda J, jn: jn.choose(jn.array([[0], [1]]),
                                                [jn.zeros(3), jn.arange(3)]),
    "argpartition": lambda J, jn: jn.array([3, 1, 2, 0]).argpartition(2),
    "round()": lambda J, jn: round(jn.float32(2.5)),
    "round(, 1)": lambda J, jn: round(jn.float32(2.25), 1),
    "round() int": lambda J, jn: round(jn.int32(7)),
    "round() jit": lambda J, jn: J.jit(lambda v: round(v))(2.7),
    "round() grad": lambda J, jn: J.grad(lambda v: v * round(v))(2.7),
}


@pytest.mark.parametrize("name", sorted(METHOD_EDGES))
def test_array_method_edges_match_jax(name, rjax, rjnp):
    def outcome(J, jn):
        try:
            out = METHOD_EDGES[name](J, jn)
        except Exception as e:  # noqa: BLE001 - the exception's type is what is compared
            return type(e).__name__
        return np.asarray(out).tolist(), str(out.dtype), out.shape, out.weak_type

    assert outcome(jax, jnp) == outcome(rjax, rjnp)


# ---- jit wrappers of one function share its traces ---------------------------------------

def _trace_counts(J, jn):
    n = [0]

    def f(x):
        n[0] += 1
        return x * 2

    counts = []
    a, b = J.jit(f), J.jit(f)
    a(1.0)
    b(1.0)
    counts += [n[0], a._cache_size(), b._cache_size()]
    J.jit(f, static_argnums=())(1.0)            # same options as the default
    counts.append(n[0])
    J.jit(f, donate_argnums=0)(jn.ones(2))      # other options: a trace of its own
    J.jit(f, donate_argnums=0)(jn.ones(2))
    counts.append(n[0])
    a.clear_cache()                             # clears what b shares
    b(1.0)
    counts.append(n[0])

    class Holder:
        def m(self, x):
            n[0] += 1
            return x

    h = Holder()
    J.jit(h.m)(1.0)                             # each bound method is a new callable
    J.jit(h.m)(1.0)
    counts.append(n[0])
    return counts


def test_jit_wrappers_of_one_function_share_traces(rjax, rjnp):
    assert _trace_counts(jax, jnp) == _trace_counts(rjax, rjnp) == [1, 1, 1, 1, 2, 3, 5]


@pytest.mark.parametrize("case", ["pair for a scalar", "one for a pair", "wrong dtype",
                                  "wrong shape"])
def test_custom_vjp_fwd_output_checked_against_traced_function(case, rjax, rjnp):
    # once the function is traced (here under jit), fwd's output must match its output
    def build(J, jn):
        if case == "pair for a scalar":
            @J.custom_vjp
            def h(x):
                return jn.sin(x)
            h.defvjp(lambda x: ((jn.sin(x), jn.sin(x)), x), lambda r, g: (g,))
            return lambda x: J.jit(h)(x)
        outs = {"one for a pair": lambda x: (jn.sin(x),),
                "wrong dtype": lambda x: (jn.sin(x), jn.asarray(x).astype(jn.float16)),
                "wrong shape": lambda x: (jn.sin(x), jn.ones(3))}[case]

        @J.custom_vjp
        def h2(x):
            return jn.sin(x), x
        h2.defvjp(lambda x: (outs(x), x), lambda r, g: (g[0],))
        return lambda x: J.jit(h2)(x)[0]

    with pytest.raises(TypeError):
        rjax.grad(build(rjax, rjnp))(1.0)
    with pytest.raises(TypeError, match="fwd rule"):
        jax.grad(build(jax, jnp))(1.0)
