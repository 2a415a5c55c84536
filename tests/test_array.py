"""The Array object's Python API against real JAX: properties, printing (repr/str/format),
conversions and their errors, iteration, operators (installed by jaxlite.numpy), methods,
copying and pickling, NumPy interop (``__array__``, DLPack)."""
from __future__ import annotations

import copy
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from oracle import assert_like_jax


def pair(build):
    """(jaxlite value, real JAX value) built by the same code."""
    import jax.numpy as rjnp
    return build(jnp), build(rjnp)


# ---- printing ----------------------------------------------------------------------------

PRINT_CASES = {
    "int": lambda m: m.arange(5),
    "float": lambda m: m.arange(5.0) / 3,
    "bool": lambda m: m.array([True, False]),
    "bf16": lambda m: m.arange(4, dtype=m.bfloat16),
    "f16": lambda m: m.arange(4, dtype=m.float16) / 3,
    "complex": lambda m: m.array([1 + 2j, 3 - 4j], dtype=m.complex64),
    "0-d float32": lambda m: m.array(3.5, dtype=m.float32),
    "0-d int": lambda m: m.array(7),
    "0-d weak float": lambda m: m.array(1.0),
    "0-d bool": lambda m: m.array(True),
    "0-d complex weak": lambda m: m.array(1 + 2j),
    "0-d bf16": lambda m: m.array(2.5, dtype=m.bfloat16),
    "weak vector": lambda m: m.full((3,), 2.0),
    "weak int product": lambda m: m.array(3) * 2,
    "2-d": lambda m: m.arange(12.0).reshape(3, 4),
    "3-d": lambda m: m.arange(24).reshape(2, 3, 4),
    "column": lambda m: m.arange(5.0).reshape(5, 1),
    "empty": lambda m: m.zeros((0,)),
    "empty 2-d": lambda m: m.zeros((0, 3)),
    "empty int": lambda m: m.zeros((2, 0), m.int32),
    "large": lambda m: m.arange(2000.0),
    "large 2-d": lambda m: m.arange(4000).reshape(40, 100),
    "long row": lambda m: m.arange(30.0) * 1.2345,
    "long row int": lambda m: m.arange(40) * 1000,
    "long rows 2-d": lambda m: (m.arange(60.0) * 1.2345).reshape(2, 30),
    "fits on one line": lambda m: m.arange(13.0),
    "just wraps": lambda m: m.arange(14.0),
    "ints wrap": lambda m: m.arange(21),
    "nan inf": lambda m: m.array([m.nan, m.inf, -1.0]),
    "uint8": lambda m: m.arange(3, dtype=m.uint8),
    "int16": lambda m: m.arange(3, dtype=m.int16),
    "tiny and one": lambda m: m.array([1e-10, 1.0]),
    "huge and one": lambda m: m.array([1e10, 1.0]),
    "negative zero": lambda m: -m.arange(3.0),
    "bools 2-d": lambda m: m.arange(6).reshape(2, 3) % 2 == 0,
}


@pytest.mark.parametrize("case", list(PRINT_CASES))
def test_repr_and_str_like_jax(rjax, case):
    mine, theirs = pair(PRINT_CASES[case])
    assert repr(mine) == repr(theirs)
    assert str(mine) == str(theirs)
    assert f"{mine}" == f"{theirs}"


@pytest.mark.parametrize("case", ["long row", "2-d", "just wraps", "large"])
@pytest.mark.parametrize("linewidth", [40, 120])
def test_repr_follows_numpy_linewidth_like_jax(rjax, case, linewidth):
    mine, theirs = pair(PRINT_CASES[case])
    with np.printoptions(linewidth=linewidth):
        assert repr(mine) == repr(theirs)
        assert str(mine) == str(theirs)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 4), max_size=3),
       dtype=st.sampled_from(["float32", "int32", "bool", "int8", "float16"]),
       scale=st.sampled_from([1, 7, 1000, 0.001]))
def test_repr_property_like_jax(rjax, shape, dtype, scale):
    host = (np.arange(int(np.prod(shape))).reshape(shape) * scale).astype(dtype)
    mine, theirs = jaxlite.device_put(host), rjax.device_put(host)
    assert repr(mine) == repr(theirs)
    assert str(mine) == str(theirs)


@pytest.mark.parametrize("spec", [".2f", "8.3f", "e", "", ">10", "+.1%"])
def test_format_scalar_like_jax(rjax, spec):
    mine, theirs = pair(lambda m: m.array(3.14159, dtype=m.float32))
    assert format(mine, spec) == format(theirs, spec)
    mi, ti = pair(lambda m: m.array(5, dtype=m.int32))
    if spec in ("", ">10"):
        assert format(mi, spec) == format(ti, spec)
    assert f"{mi:03d}" == f"{ti:03d}" == "005"


def test_format_of_non_scalar_like_jax(rjax):
    mine, theirs = pair(lambda m: m.arange(3.0))
    assert f"{mine}" == f"{theirs}" == "[0. 1. 2.]"
    with pytest.raises(TypeError):
        f"{theirs:.2f}"
    with pytest.raises(TypeError):
        f"{mine:.2f}"


# ---- properties ------------------------------------------------------------------------

PROPERTY_CASES = {
    "2-d float": lambda m: m.ones((2, 3)),
    "0-d weak": lambda m: m.array(2.0),
    "int vector": lambda m: m.arange(4),
    "bf16 3-d": lambda m: m.zeros((2, 1, 3), m.bfloat16),
    "empty": lambda m: m.zeros((0, 2), m.uint8),
    "complex": lambda m: m.ones(2, m.complex64),
}


@pytest.mark.parametrize("case", list(PROPERTY_CASES))
def test_properties_like_jax(rjax, case):
    mine, theirs = pair(PROPERTY_CASES[case])
    for name in ("shape", "dtype", "ndim", "size", "itemsize", "nbytes", "weak_type",
                 "committed", "is_fully_addressable", "is_fully_replicated"):
        assert getattr(mine, name) == getattr(theirs, name), name
    assert type(mine.shape) is tuple and type(mine.size) is int
    assert repr(mine.sharding) == repr(theirs.sharding)
    assert {repr(d) for d in mine.devices()} == {repr(d) for d in theirs.devices()}
    assert repr(mine.device) == repr(theirs.device)
    assert len(mine.addressable_shards) == len(theirs.addressable_shards) == 1
    shard = mine.addressable_shards[0]
    assert shard.device is mine.device and shard.data is mine
    assert isinstance(mine, jaxlite.Array)
    if mine.ndim >= 1:
        assert_like_jax(mine.T, theirs.T)
    if mine.ndim >= 2:
        assert_like_jax(mine.mT, theirs.mT)


def test_tracers_are_arrays():
    seen = []
    jaxlite.jit(lambda a: seen.append(isinstance(a, jaxlite.Array)) or a)(jnp.ones(2))
    assert seen == [True]


def test_mT_needs_two_dimensions(rjax):
    mine, theirs = pair(lambda m: m.arange(3))
    with pytest.raises(ValueError):
        theirs.mT
    with pytest.raises(ValueError):
        mine.mT


# ---- conversions -------------------------------------------------------------------------

CONVERSION_VALUES = {
    "0-d float": lambda m: m.array(2.5, dtype=m.float32),
    "0-d int": lambda m: m.array(3, dtype=m.int32),
    "0-d bool": lambda m: m.array(True),
    "0-d complex": lambda m: m.array(1 + 2j, dtype=m.complex64),
    "0-d bf16": lambda m: m.array(1.5, dtype=m.bfloat16),
    "1-element vector": lambda m: m.arange(1.0),
    "1-element int vector": lambda m: m.arange(1),
    "vector": lambda m: m.arange(3),
    "matrix": lambda m: m.ones((2, 2)),
    "empty": lambda m: m.zeros(0),
}
CONVERSIONS = {"float": float, "int": int, "complex": complex, "bool": bool,
               "index": operator.index, "len": len, "list": list,
               "hash": hash, "item": lambda x: x.item(), "tolist": lambda x: x.tolist()}


def _outcome(fn, x):
    try:
        r = fn(x)
    except Exception as e:   # noqa: BLE001 -- the type is what is compared
        return type(e).__name__
    if isinstance(r, list):
        return ["Array" if isinstance(v, (jaxlite.Array,)) or hasattr(v, "aval") else v
                for v in r]
    return (type(r).__name__, r)


@pytest.mark.parametrize("value", list(CONVERSION_VALUES))
@pytest.mark.parametrize("conv", list(CONVERSIONS))
def test_conversions_like_jax(rjax, value, conv):
    mine, theirs = pair(CONVERSION_VALUES[value])
    got, want = _outcome(CONVERSIONS[conv], mine), _outcome(CONVERSIONS[conv], theirs)
    if conv == "item" and isinstance(want, tuple):
        # real JAX returns ml_dtypes' bfloat16 scalar, as NumPy does
        assert got[1] == want[1] and type(got[1]) is type(want[1])
    else:
        assert got == want


def test_conversion_error_messages():
    with pytest.raises(TypeError, match=r"shape \(2, 3\).*Python scalar"):
        float(jnp.ones((2, 3)))
    with pytest.raises(TypeError, match="float32.*index.*0-d integer"):
        operator.index(jnp.array(1.0))
    with pytest.raises(ValueError, match="empty array has no truth value"):
        bool(jnp.zeros(0))
    with pytest.raises(ValueError, match=r"shape \(2,\).*x\.any\(\)"):
        bool(jnp.ones(2))
    with pytest.raises(TypeError, match="0-d"):
        iter(jnp.array(1))
    with pytest.raises(TypeError, match="unsized"):
        len(jnp.array(1))
    with pytest.raises(TypeError, match="unhashable"):
        {jnp.ones(2): 1}


def test_index_works_where_python_wants_an_int():
    i = jnp.array(2, dtype=jnp.int32)
    assert [10, 20, 30, 40][i] == 30
    assert "abcdef"[i:] == "cdef"
    assert list(range(10))[jnp.array(1):jnp.array(4)] == [1, 2, 3]
    assert hex(jnp.array(255)) == "0xff"


def test_iteration_yields_rows_as_arrays(rjax):
    for build in (lambda m: m.arange(6.0).reshape(3, 2), lambda m: m.full((2, 2), 1.0),
                  lambda m: m.arange(4)):
        mine, theirs = pair(build)
        rows, rrows = list(mine), list(theirs)
        assert len(rows) == len(rrows)
        for r, rr in zip(rows, rrows):
            assert isinstance(r, jaxlite.Array)
            assert_like_jax(r, rr)
            assert r.device is mine.device and r.committed == mine.committed
    committed = jaxlite.device_put(jnp.ones((2, 2)), jaxlite.devices()[0])
    assert all(r.committed for r in committed)


# ---- NumPy interop -----------------------------------------------------------------------

def test_array_protocol_like_jax(rjax):
    mine, theirs = pair(lambda m: m.arange(6.0).reshape(2, 3))
    a, b = np.asarray(mine), np.asarray(theirs)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == b.dtype and a.flags.writeable == b.flags.writeable == False  # noqa
    assert np.asarray(mine, dtype=np.int64).dtype == np.int64
    c = np.array(mine, copy=True)
    assert c.flags.writeable
    c[0, 0] = 99.0                                  # a copy: the array is unchanged
    assert float(mine[0, 0]) == 0.0
    with pytest.raises(ValueError):
        np.asarray(theirs, dtype=np.int64, copy=False)
    with pytest.raises(ValueError):
        np.asarray(mine, dtype=np.int64, copy=False)
    assert np.asarray(mine, copy=False) is not None
    # NumPy functions accept arrays
    assert np.sum(mine) == 15.0 and np.mean(np.asarray(mine)) == 2.5


def test_dlpack(rjax):
    mine, theirs = pair(lambda m: m.arange(5, dtype=m.int32) * 3)
    a = np.from_dlpack(mine)
    np.testing.assert_array_equal(a, np.from_dlpack(theirs))
    assert a.dtype == np.int32
    dev_type, dev_id = mine.__dlpack_device__()
    assert (int(dev_type), dev_id) == (int(theirs.__dlpack_device__()[0]), 0) == (1, 0)
    assert dev_type.name == "kDLCPU"


def test_tobytes_and_buffer_pointer(rjax):
    mine, theirs = pair(lambda m: m.arange(4, dtype=m.int16))
    assert mine.tobytes() == theirs.tobytes()
    assert isinstance(mine.unsafe_buffer_pointer(), int)


# ---- copying and pickling ----------------------------------------------------------------

@pytest.mark.parametrize("case", ["0-d weak", "2-d float", "bf16 3-d", "empty", "complex"])
@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle", "method"])
def test_copies_keep_value_dtype_and_weak_type_like_jax(rjax, case, how):
    do = {"copy": copy.copy, "deepcopy": copy.deepcopy,
          "pickle": lambda x: pickle.loads(pickle.dumps(x)), "method": lambda x: x.copy()}[how]
    mine, theirs = pair(PROPERTY_CASES[case])
    c, rc = do(mine), do(theirs)
    assert type(c) is type(mine) and c is not mine
    assert_like_jax(c, rc)
    assert c.device is mine.device
    mine.delete()
    assert not c.is_deleted()         # its own buffer


def test_unpickled_array_lands_uncommitted_on_default_device():
    x = jaxlite.device_put(np.ones(3, np.float32), jaxlite.devices()[0])
    y = pickle.loads(pickle.dumps(x))
    assert not y.committed and y.device is jaxlite.devices()[0]


def test_immutable(rjax):
    mine, theirs = pair(lambda m: m.zeros(3))
    for x in (mine, theirs):
        with pytest.raises(TypeError, match="immutable"):
            x[0] = 1.0
    assert mine.at[0].set(1.0).tolist() == [1.0, 0.0, 0.0]


def test_block_until_ready_and_delete():
    x = jnp.ones(3)
    assert x.block_until_ready() is x
    assert jaxlite.block_until_ready([x, 1]) == [x, 1]
    assert not x.is_deleted()
    x.delete()
    assert x.is_deleted()


# ---- operators (installed by jaxlite.numpy._methods) --------------------------------------

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}
INT_ONLY = {"&": operator.and_, "|": operator.or_, "^": operator.xor,
            "<<": operator.lshift, ">>": operator.rshift}


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("other", ["array", "int", "float", "numpy", "numpy scalar"])
@pytest.mark.parametrize("reflected", [False, True])
def test_binary_operators_like_jax(rjax, op, other, reflected):
    import jax.numpy as rjnp
    fn = BINARY[op]
    x, rx = jnp.arange(1.0, 4.0), rjnp.arange(1.0, 4.0)
    o = {"array": (jnp.array([2.0, 1.0, 3.0]), rjnp.array([2.0, 1.0, 3.0])),
         "int": (2, 2), "float": (1.5, 1.5),
         "numpy": (np.array([2.0, 1.0, 3.0], np.float32),) * 2,
         "numpy scalar": (np.float32(2.0),) * 2}[other]
    got = fn(o[0], x) if reflected else fn(x, o[0])
    want = fn(o[1], rx) if reflected else fn(rx, o[1])
    assert_like_jax(got, want)


@pytest.mark.parametrize("op", list(INT_ONLY))
@pytest.mark.parametrize("reflected", [False, True])
def test_integer_operators_like_jax(rjax, op, reflected):
    import jax.numpy as rjnp
    fn = INT_ONLY[op]
    x, rx = jnp.arange(1, 5), rjnp.arange(1, 5)
    assert_like_jax(fn(3, x) if reflected else fn(x, 3), fn(3, rx) if reflected else fn(rx, 3))
    assert_like_jax(fn(x, x), fn(rx, rx))


@pytest.mark.parametrize("op", ["neg", "pos", "abs", "invert"])
def test_unary_operators_like_jax(rjax, op):
    import jax.numpy as rjnp
    fn = getattr(operator, op)
    if op == "invert":
        assert_like_jax(fn(jnp.arange(-2, 3)), fn(rjnp.arange(-2, 3)))
        assert_like_jax(fn(jnp.array([True, False])), fn(rjnp.array([True, False])))
    else:
        assert_like_jax(fn(jnp.arange(-2.0, 3.0)), fn(rjnp.arange(-2.0, 3.0)))


def test_matmul_operators_like_jax(rjax):
    import jax.numpy as rjnp
    a, ra = jnp.arange(6.0).reshape(2, 3), rjnp.arange(6.0).reshape(2, 3)
    assert_like_jax(a @ a.T, ra @ ra.T)
    assert_like_jax(np.ones((2, 2), np.float32) @ a, np.ones((2, 2), np.float32) @ ra)
    assert_like_jax(a @ np.ones(3, np.float32), ra @ np.ones(3, np.float32))
    with pytest.raises(TypeError):
        [[1.0, 2.0]] @ a
    for m, x in ((jaxlite, a), (rjax, ra)):
        with pytest.raises(ValueError, match="ndim"):
            x @ 2.0
        with pytest.raises(ValueError, match="ndim"):
            2.0 @ x


def test_operators_reject_non_arrays():
    x = jnp.arange(3)
    for bad in ("a", object(), None):
        with pytest.raises(TypeError):
            x + bad
        with pytest.raises(TypeError):
            bad * x
    assert (x == "a") is False and (x != None) is True  # noqa: E711 -- Python's fallback


def test_divmod_like_jax(rjax):
    import jax.numpy as rjnp
    for a, ra in ((jnp.arange(1, 7), rjnp.arange(1, 7)),
                  (jnp.arange(1.0, 7.0), rjnp.arange(1.0, 7.0))):
        for q, rq in zip(divmod(a, 4), divmod(ra, 4)):
            assert_like_jax(q, rq)
        for q, rq in zip(divmod(9, a), divmod(9, ra)):
            assert_like_jax(q, rq)


def test_round_like_jax(rjax):
    mine, theirs = pair(lambda m: m.array([1.26, 2.5, -0.5]))
    assert_like_jax(round(mine, 1), round(theirs, 1))
    s, rs = pair(lambda m: m.array(2.6))
    assert_like_jax(round(s), round(rs))


# ---- methods -----------------------------------------------------------------------------

METHODS = {
    "astype int": lambda x: x.astype("int32"),
    "astype bf16": lambda x: x.astype("bfloat16"),
    "reshape args": lambda x: x.reshape(3, 2),
    "reshape tuple": lambda x: x.reshape((6,)),
    "reshape -1": lambda x: x.reshape(-1, 2),
    "sum": lambda x: x.sum(),
    "sum axis": lambda x: x.sum(axis=1),
    "mean axis 0": lambda x: x.mean(axis=0),
    "max axis 1": lambda x: x.max(axis=1),
    "min": lambda x: x.min(),
    "prod": lambda x: x.prod(),
    "argmax": lambda x: x.argmax(),
    "argmin axis": lambda x: x.argmin(axis=0),
    "any": lambda x: x.any(),
    "all axis": lambda x: x.all(axis=1),
    "std": lambda x: x.std(),
    "var axis": lambda x: x.var(axis=0),
    "cumsum": lambda x: x.cumsum(),
    "transpose": lambda x: x.transpose(),
    "transpose axes": lambda x: x.transpose(1, 0),
    "flatten": lambda x: x.flatten(),
    "ravel": lambda x: x.ravel(),
    "squeeze": lambda x: x.reshape(1, 6).squeeze(),
    "clip": lambda x: x.clip(1, 4),
    "dot": lambda x: x.dot(x.T),
    "copy": lambda x: x.copy(),
    "conj": lambda x: x.conj(),
    "real": lambda x: x.real,
    "imag": lambda x: x.imag,
    "at set": lambda x: x.at[0, 1].set(9.0),
    "getitem": lambda x: x[1],
    "getitem slice": lambda x: x[:, ::2],
    "sort": lambda x: (-x).sort(axis=1),
    "round": lambda x: (x / 3).round(2),
    "nonzero": lambda x: x.nonzero()[1],
    "view": lambda x: x.view("int32"),
}


@pytest.mark.parametrize("method", list(METHODS))
def test_methods_like_jax(rjax, method):
    fn = METHODS[method]
    mine, theirs = pair(lambda m: m.arange(6.0).reshape(2, 3))
    assert_like_jax(fn(mine), fn(theirs))
