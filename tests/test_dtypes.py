"""jaxlite.dtypes against real JAX and JAX's published promotion table: promote_types and
result_type for every pair of types (x64 off and on), weak types, canonicalisation,
finfo/iinfo, issubdtype and the scalar types."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import dtypes

pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype")

BF16 = ml_dtypes.bfloat16
TYPES = [np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32,
         np.int64, BF16, np.float16, np.float32, np.float64, np.complex64, np.complex128,
         int, float, complex]
CODES = ["b1", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "bf", "f2", "f4", "f8", "c8",
         "c16", "i*", "f*", "c*"]

# JAX's binary promotion table ("Type promotion semantics" in JAX's documentation): the
# join of each pair on the lattice, rows and columns in the order of CODES; i*, f*, c* are
# the weak types.
PUBLISHED = """
b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c8 c16 i* f* c*
u1 u1 u2 u4 u8 i2 i2 i4 i8 bf f2 f4 f8 c8 c16 u1 f* c*
u2 u2 u2 u4 u8 i4 i4 i4 i8 bf f2 f4 f8 c8 c16 u2 f* c*
u4 u4 u4 u4 u8 i8 i8 i8 i8 bf f2 f4 f8 c8 c16 u4 f* c*
u8 u8 u8 u8 u8 f* f* f* f* bf f2 f4 f8 c8 c16 u8 f* c*
i1 i2 i4 i8 f* i1 i2 i4 i8 bf f2 f4 f8 c8 c16 i1 f* c*
i2 i2 i4 i8 f* i2 i2 i4 i8 bf f2 f4 f8 c8 c16 i2 f* c*
i4 i4 i4 i8 f* i4 i4 i4 i8 bf f2 f4 f8 c8 c16 i4 f* c*
i8 i8 i8 i8 f* i8 i8 i8 i8 bf f2 f4 f8 c8 c16 i8 f* c*
bf bf bf bf bf bf bf bf bf bf f4 f4 f8 c8 c16 bf bf c8
f2 f2 f2 f2 f2 f2 f2 f2 f2 f4 f2 f4 f8 c8 c16 f2 f2 c8
f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 c8 c16 f4 f4 c8
f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c16 c16 f8 f8 c16
c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c16 c8 c16 c8 c8 c8
c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
i* u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c8 c16 i* f* c*
f* f* f* f* f* f* f* f* f* bf f2 f4 f8 c8 c16 f* f* c*
c* c* c* c* c* c* c* c* c* c8 c8 c8 c16 c8 c16 c* c* c*
"""


def code_of(dt, weak):
    dt = np.dtype(dt)
    if weak:
        return {"i": "i*", "u": "i*", "f": "f*", "c": "c*"}[dt.kind]
    if dt == BF16:
        return "bf"
    return "b1" if dt == np.bool_ else f"{dt.kind}{dt.itemsize}"


def _name(t):
    return t.__name__


def test_published_table(x64):
    rows = [r.split() for r in PUBLISHED.strip().splitlines()]
    assert len(rows) == len(TYPES) and all(len(r) == len(TYPES) for r in rows)
    # the first row is the b1 row: b1 joined with everything is that thing
    for i, a in enumerate(TYPES):
        for j, b in enumerate(TYPES):
            dt, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
            assert code_of(dt, weak) == rows[i][j], (CODES[i], CODES[j])


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request, rjax):
    import jax
    old = jax.config.jax_enable_x64
    jaxlite.config.update("jax_enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    yield request.param
    jaxlite.config.update("jax_enable_x64", False)
    jax.config.update("jax_enable_x64", old)


def _jax(fn, *args):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # "float64 is not available" with x64 off
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - the oracle's error type is the spec
            return type(e)


def _lite(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        return type(e)


@pytest.mark.parametrize("a", TYPES, ids=_name)
def test_promote_types_all_pairs(rjnp, mode, a):
    for b in TYPES:
        assert _lite(jnp.promote_types, a, b) == _jax(rjnp.promote_types, a, b), (a, b)


@pytest.mark.parametrize("a", TYPES, ids=_name)
def test_result_type_all_pairs(rjax, mode, a):
    from jax import dtypes as rdt
    for b in TYPES:
        want = _jax(lambda x, y: rdt.result_type(x, y, return_weak_type_flag=True), a, b)
        got = _lite(lambda x, y: dtypes.result_type(x, y, return_weak_type_flag=True), a, b)
        assert got == want, (a, b)
        assert _lite(jnp.result_type, a, b) == _jax(rjax.numpy.result_type, a, b)


def _values(m):
    """Operands of every kind: Python scalars, NumPy values, strong and weak arrays."""
    return [True, 3, 2.5, 1j, np.int8(1), np.float16(1), np.float64(1), np.uint32(3),
            np.array([1, 2], np.int16), np.array(2.0), m.asarray(2), m.asarray(2.5),
            m.ones(2, np.uint8), m.ones(2, m.bfloat16), m.ones(2, np.complex64),
            m.arange(3) + 0.5, np.dtype("int16"), "float16", m.float32, np.float64]


@pytest.mark.parametrize("i", range(20))
def test_result_type_of_values(rjax, rjnp, mode, i):
    from jax import dtypes as rdt
    lite, real = _values(jnp), _values(rjnp)
    for j in range(len(lite)):
        for k in (None, 4, 9):
            la = (lite[i], lite[j]) + (() if k is None else (lite[k],))
            ra = (real[i], real[j]) + (() if k is None else (real[k],))
            got = _lite(lambda *a: dtypes.result_type(*a, return_weak_type_flag=True), *la)
            want = _jax(lambda *a: rdt.result_type(*a, return_weak_type_flag=True), *ra)
            assert got == want, (i, j, k)


def test_result_type_errors(rjnp):
    with pytest.raises(ValueError):
        rjnp.result_type()
    with pytest.raises(ValueError, match="at least one"):
        jnp.result_type()
    for bad in ("foo", np.dtype("U3"), object, [1, 2]):
        with pytest.raises(TypeError):
            jnp.result_type(bad)
    with pytest.raises(TypeError):
        jnp.promote_types("U3", "int32")


@pytest.mark.parametrize("t", TYPES[:15], ids=_name)
def test_canonicalize_dtype(rjax, mode, t):
    from jax import dtypes as rdt
    assert dtypes.canonicalize_dtype(t) == _jax(rdt.canonicalize_dtype, t)
    assert dtypes.canonicalize_dtype(np.dtype(t)) == _jax(rdt.canonicalize_dtype, np.dtype(t))
    name = "bfloat16" if t is BF16 else np.dtype(t).name
    assert dtypes.canonicalize_dtype(name) == _jax(rdt.canonicalize_dtype, name)


def test_canonicalize_rejects_unsupported():
    for bad in ("U3", object, "datetime64[s]", "V4"):
        with pytest.raises(TypeError):
            dtypes.canonicalize_dtype(bad)


def test_x64_off_narrows_arrays():
    assert jnp.asarray(np.ones(2, np.float64)).dtype == np.float32
    assert jnp.asarray(np.ones(2, np.int64)).dtype == np.int32
    assert jnp.asarray(np.ones(2, np.uint64)).dtype == np.uint32
    assert jnp.asarray(np.ones(2, np.complex128)).dtype == np.complex64
    assert (jnp.ones(2, np.int32) + np.float64(1)).dtype == np.float32


FLOATS = [BF16, np.float16, np.float32, np.float64]
INFO = ["bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal",
        "smallest_subnormal", "resolution", "nmant", "nexp", "maxexp", "minexp", "precision"]


@pytest.mark.parametrize("t", FLOATS + [np.complex64, np.complex128], ids=_name)
def test_finfo(rjnp, t):
    got, want = jnp.finfo(t), rjnp.finfo(t)
    assert got.dtype == want.dtype
    for attr in INFO:
        assert getattr(got, attr) == getattr(want, attr), attr
    assert jnp.finfo(jnp.ones(2, t)).dtype == rjnp.finfo(rjnp.ones(2, t)).dtype


@pytest.mark.parametrize("t", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                               np.uint32, np.uint64], ids=_name)
def test_iinfo(rjnp, t):
    got, want = jnp.iinfo(t), rjnp.iinfo(t)
    assert (got.min, got.max, got.bits, got.dtype) == (want.min, want.max, want.bits,
                                                       want.dtype)
    assert jnp.iinfo(jnp.ones(2, t)).bits == rjnp.iinfo(rjnp.ones(2, t)).bits


def test_info_errors(rjnp):
    for fn, arg in ((jnp.finfo, np.int32), (jnp.finfo, np.bool_), (jnp.iinfo, np.float32),
                    (jnp.iinfo, np.bool_)):
        rfn = getattr(rjnp, fn.__name__)
        with pytest.raises(ValueError):
            rfn(arg)
        with pytest.raises(ValueError):
            fn(arg)


_CLASSES = [np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer,
            np.signedinteger, np.unsignedinteger, np.bool_]


@pytest.mark.parametrize("a", TYPES + ["float32", "bfloat16", np.dtype("int8")], ids=str)
def test_issubdtype(rjnp, a):
    others = _CLASSES + TYPES[:15] + ["bfloat16"]
    for b in others:
        ra = rjnp.bfloat16 if a is BF16 else a
        rb = rjnp.bfloat16 if b is BF16 else b
        assert jnp.issubdtype(a, b) == rjnp.issubdtype(ra, rb), (a, b)
    for name in ("float16", "bfloat16", "int8", "bool_", "complex64"):
        ja, ra = getattr(jnp, name), getattr(rjnp, name)
        for b in _CLASSES + [jnp.bfloat16]:
            rb = rjnp.bfloat16 if b is jnp.bfloat16 else b
            assert jnp.issubdtype(ja, b) == rjnp.issubdtype(ra, rb), (name, b)


def test_scalar_types_are_dtypes(rjnp):
    for name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                 "complex128"):
        t, rt = getattr(jnp, name), getattr(rjnp, name)
        assert np.dtype(t) == np.dtype(rt)
        assert t == rt.dtype.type and hash(t) == hash(rt.dtype.type)
        assert jnp.dtype(t) == np.dtype(rt)
        assert np.zeros(1, t).dtype == np.dtype(rt)
        assert jnp.zeros(2, t).dtype == dtypes.canonicalize_dtype(rt.dtype)
        assert repr(t).endswith(f".{name}'>")
    assert jnp.float32 != jnp.float16
    for v in (np.float32(1), jnp.float32(1), 1.0, np.float64(1)):
        assert isinstance(v, jnp.float32) == isinstance(v if not isinstance(v, jaxlite.Array)
                                                        else rjnp.float32(1), rjnp.float32)
        assert isinstance(v, jnp.float64) == isinstance(v if not isinstance(v, jaxlite.Array)
                                                        else rjnp.float64(1), rjnp.float64)
    assert jnp.promote_types(jnp.bfloat16, jnp.float16) == np.float32


def test_weak_types_of_scalar_conversions(rjnp):
    for make in (lambda m: m.asarray(2), lambda m: m.asarray(2.0), lambda m: m.asarray(1j),
                 lambda m: m.asarray(True), lambda m: m.asarray(2, dtype=np.int32),
                 lambda m: m.float32(2), lambda m: m.int8(2) * 2.5,
                 lambda m: m.asarray(np.float32(2)), lambda m: m.uint8(3) + 300 * 0 + 2):
        got, want = make(jnp), make(rjnp)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)


def test_short_names():
    assert [dtypes.short_name(t) for t in (np.float32, BF16, np.bool_, np.uint8,
                                           np.complex64, np.int64)] == \
        ["f32", "bf16", "bool", "u8", "c64", "i64"]
