"""lax.conv_general_dilated (and conv, conv_with_general_padding, conv_transpose,
conv_dimension_numbers, padtype_to_pads) and lax.reduce_window against real JAX: values,
shapes, dtypes, errors, eager and under jit."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax

from oracle import assert_like_jax

RNG = np.random.default_rng(0)


def _rand(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        return RNG.integers(-3 if dtype.kind == "i" else 0, 4, shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _error_type(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e)
    return None


def _same_error(f_lite, f_jax):
    want = _error_type(f_jax)
    assert want is not None, "real JAX accepted the input"
    got = _error_type(f_lite)
    assert got is want, f"jaxlite raised {got}, JAX raised {want}"
    with pytest.raises(want):
        f_lite()


# ---- conv_general_dilated ------------------------------------------------------------------

CONV_CASES = [
    # lhs shape, rhs shape, kwargs
    ((2, 3, 9), (4, 3, 3), dict(window_strides=(1,), padding="SAME")),
    ((2, 3, 9), (4, 3, 2), dict(window_strides=(2,), padding="VALID", rhs_dilation=(3,))),
    ((1, 2, 7), (2, 2, 3), dict(window_strides=(1,), padding=((2, -1),), lhs_dilation=(2,))),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ((2, 3, 9, 8), (4, 3, 2, 3), dict(window_strides=(2, 3), padding="SAME")),
    ((2, 3, 9, 8), (4, 3, 2, 2), dict(window_strides=(2, 2), padding="SAME_LOWER")),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(1, 2), padding="same")),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID",
                                      rhs_dilation=(2, 1))),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 2), padding=((1, 2), (0, -1)),
                                      lhs_dilation=(2, 3), rhs_dilation=(1, 2))),
    ((2, 6, 7, 7), (6, 1, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      feature_group_count=6)),
    ((2, 6, 7, 7), (9, 2, 3, 3), dict(window_strides=(2, 1), padding="VALID",
                                      feature_group_count=3)),
    ((4, 3, 6, 6), (6, 3, 2, 2), dict(window_strides=(1, 1), padding="VALID",
                                      batch_group_count=2)),
    ((2, 8, 8, 3), (3, 3, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((8, 2, 3, 8), (3, 4, 2, 3), dict(window_strides=(2, 1), padding="SAME",
                                      dimension_numbers=("HNCW", "WOHI", "CWNH"))),
    ((2, 8, 8, 6), (3, 3, 2, 6), dict(window_strides=(1, 1), padding="SAME",
                                      feature_group_count=3,
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(window_strides=(1, 2, 1), padding="SAME")),
    ((1, 5, 6, 4, 2), (2, 3, 2, 2, 3), dict(window_strides=(2, 1, 1), padding="VALID",
                                            dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    ((2, 3, 2, 2), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID")),  # empty out
    ((0, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME")),   # empty batch
]


@pytest.mark.parametrize("lshape,rshape,kw", CONV_CASES)
def test_conv_general_dilated_matches_jax(rjax, lshape, rshape, kw):
    x, w = _rand(lshape), _rand(rshape)
    want = rjax.lax.conv_general_dilated(x, w, **kw)
    got = lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), **kw)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)
    jitted = jax.jit(lambda a, b: lax.conv_general_dilated(a, b, **kw))(x, w)
    assert_like_jax(jitted, want, rtol=1e-5, atol=1e-5)


def test_conv_dimension_numbers_object_and_jaxpr(rjax):
    x, w = _rand((2, 7, 7, 3)), _rand((3, 3, 3, 5))
    dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC"))
    assert isinstance(dn, lax.ConvDimensionNumbers) and isinstance(dn, tuple)
    assert tuple(dn) == tuple(rjax.lax.conv_dimension_numbers(x.shape, w.shape,
                                                              ("NHWC", "HWIO", "NHWC")))
    assert dn.lhs_spec == (0, 3, 1, 2) and dn.rhs_spec == (3, 2, 0, 1)
    got = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    want = rjax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                         dimension_numbers=rjax.lax.ConvDimensionNumbers(*dn))
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)
    text = str(jax.make_jaxpr(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                                    dimension_numbers=dn))(x, w))
    assert "conv_general_dilated" in text and "padding=((1, 1), (1, 1))" in text


@pytest.mark.parametrize("shapes,dn", [
    (((2, 3, 4, 5), (6, 3, 1, 1)), None),
    (((2, 4, 5, 3), (1, 1, 3, 6)), ("NHWC", "HWIO", "NHWC")),
    (((2, 4, 3), (1, 3, 6)), ("NWC", "WIO", "NCW")),
    (((4, 2, 5, 3), (3, 1, 6, 1)), ("HNWC", "WHOI", "CNHW")),
])
def test_conv_dimension_numbers_match_jax(rjax, shapes, dn):
    assert tuple(lax.conv_dimension_numbers(*shapes, dn)) == \
        tuple(rjax.lax.conv_dimension_numbers(*shapes, dn))


@pytest.mark.parametrize("dtype,pet", [
    (np.float16, None), ("bfloat16", None), (np.int32, None), (np.int8, np.int32),
    (np.bool_, None), (np.complex64, None), ("bfloat16", np.float32), (np.float32, np.float32),
])
def test_conv_dtypes_match_jax(rjax, dtype, pet):
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = _rand((2, 3, 6, 5), np.float32 if dt.kind == "V" else dt).astype(dt)
    w = _rand((4, 3, 3, 2), np.float32 if dt.kind == "V" else dt).astype(dt)
    kw = dict(window_strides=(1, 1), padding="SAME", preferred_element_type=pet)
    want = rjax.lax.conv_general_dilated(x, w, **kw)
    got = lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), **kw)
    tol = 2e-2 if dt.itemsize == 2 and dt.kind in "fV" and pet is None else 1e-5
    assert_like_jax(got, want, rtol=tol, atol=tol)


def test_conv_of_numpy_inputs_and_precision_argument(rjax):
    x, w = _rand((1, 2, 5, 5)), _rand((3, 2, 3, 3))
    got = lax.conv_general_dilated(x, w, (1, 1), "VALID", precision="highest")
    assert_like_jax(got, rjax.lax.conv_general_dilated(x, w, (1, 1), "VALID"), rtol=1e-5,
                    atol=1e-5)


def test_conv_and_conv_with_general_padding(rjax):
    x, w = _rand((2, 3, 8, 7)), _rand((4, 3, 3, 2))
    assert_like_jax(lax.conv(x, w, (2, 1), "SAME"), rjax.lax.conv(x, w, (2, 1), "SAME"),
                    rtol=1e-5, atol=1e-5)
    args = ((1, 2), ((1, 0), (2, 2)), (2, 1), (1, 2))
    assert_like_jax(lax.conv_with_general_padding(x, w, *args),
                    rjax.lax.conv_with_general_padding(x, w, *args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [
    dict(strides=(2, 2), padding="SAME"),
    dict(strides=(2, 1), padding="VALID"),
    dict(strides=(3, 2), padding="SAME", transpose_kernel=True),
    dict(strides=(2, 2), padding=((1, 2), (0, 1))),
    dict(strides=(2, 2), padding=((1, 1), (0, 1)), use_consistent_padding=True),
    dict(strides=(2, 2), padding="VALID", rhs_dilation=(2, 1)),
    dict(strides=(2, 1), padding="SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")),
])
def test_conv_transpose_matches_jax(rjax, kw):
    if kw.get("dimension_numbers"):
        x, w = _rand((2, 3, 5, 4)), _rand((4, 3, 3, 2))
    elif kw.get("transpose_kernel"):   # the kernel's out features meet the lhs features
        x, w = _rand((2, 5, 4, 3)), _rand((3, 2, 4, 3))
    else:
        x, w = _rand((2, 5, 4, 3)), _rand((3, 2, 3, 4))
    assert_like_jax(lax.conv_transpose(x, w, **kw), rjax.lax.conv_transpose(x, w, **kw),
                    rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("args", [
    ((9, 8), (3, 2), (2, 3), "SAME"), ((9, 8), (3, 2), (2, 3), "SAME_LOWER"),
    ((4,), (6,), (1,), "same"), ((5, 5), (2, 2), (1, 1), "VALID"),
])
def test_padtype_to_pads_matches_jax(rjax, args):
    assert [tuple(p) for p in lax.padtype_to_pads(*args)] == \
        [tuple(int(v) for v in p) for p in rjax.lax.padtype_to_pads(*args)]


_X, _W = _rand((2, 3, 8, 8)), _rand((4, 3, 3, 3))
CONV_ERRORS = [
    ("feature mismatch", (_X, _rand((4, 2, 3, 3))), dict(window_strides=(1, 1), padding="SAME")),
    ("bad padding string", (_X, _W), dict(window_strides=(1, 1), padding="FOO")),
    ("wrong number of pads", (_X, _W), dict(window_strides=(1, 1), padding=((1, 1),))),
    ("wrong number of strides", (_X, _W), dict(window_strides=(1,), padding="SAME")),
    ("zero stride", (_X, _W), dict(window_strides=(0, 1), padding="VALID")),
    ("rank mismatch", (_X, _W[0]), dict(window_strides=(1, 1), padding="SAME")),
    ("dtype mismatch", (_X, _W.astype(np.float16)), dict(window_strides=(1, 1), padding="SAME")),
    ("spatial letters", (_X, _W), dict(window_strides=(1, 1), padding="SAME",
                                       dimension_numbers=("NCHW", "OIHX", "NCHW"))),
    ("spec length", (_X, _W), dict(window_strides=(1, 1), padding="SAME",
                                   dimension_numbers=("NCH", "OIHW", "NCHW"))),
    ("missing N", (_X, _W), dict(window_strides=(1, 1), padding="SAME",
                                 dimension_numbers=("XCHW", "OIHW", "NCHW"))),
    ("duplicate letter", (_X, _W), dict(window_strides=(1, 1), padding="SAME",
                                        dimension_numbers=("NCHH", "OIHW", "NCHW"))),
    ("two specs", (_X, _W), dict(window_strides=(1, 1), padding="SAME",
                                 dimension_numbers=("NCHW", "OIHW"))),
    ("groups do not divide", (_X, _W), dict(window_strides=(1, 1), padding="SAME",
                                            feature_group_count=2)),
    ("out features not multiple", (_rand((2, 6, 8, 8)), _rand((4, 2, 3, 3))),
     dict(window_strides=(1, 1), padding="SAME", feature_group_count=3)),
    ("batch groups do not divide", (_rand((3, 6, 5, 5)), _rand((6, 6, 3, 3))),
     dict(window_strides=(1, 1), padding="SAME", batch_group_count=2)),
    ("both groups", (_rand((4, 6, 5, 5)), _rand((6, 3, 3, 3))),
     dict(window_strides=(1, 1), padding="SAME", batch_group_count=2, feature_group_count=2)),
    ("string padding with lhs dilation", (_X, _W),
     dict(window_strides=(1, 1), padding="SAME", lhs_dilation=(2, 2))),
    ("negative padding too large", (_X, _W),
     dict(window_strides=(1, 1), padding=((-9, 0), (0, 0)))),
]


@pytest.mark.parametrize("what,args,kw", CONV_ERRORS, ids=[c[0] for c in CONV_ERRORS])
def test_conv_errors_have_jax_types(rjax, what, args, kw):
    _same_error(lambda: lax.conv_general_dilated(*[jnp.asarray(a) for a in args], **kw),
                lambda: rjax.lax.conv_general_dilated(*args, **kw))


def test_conv_error_messages_name_the_sizes():
    with pytest.raises(ValueError, match=r"3 // 1 != 2"):
        lax.conv_general_dilated(_X, _rand((4, 2, 3, 3)), (1, 1), "SAME")
    with pytest.raises(TypeError, match="float32, float16"):
        lax.conv_general_dilated(_X, _W.astype(np.float16), (1, 1), "SAME")


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_conv_random_configs_match_jax(rjax, data):
    nsp = data.draw(st.integers(1, 2))
    fgc = data.draw(st.sampled_from([1, 2]))
    n = data.draw(st.integers(1, 2))
    cin = fgc * data.draw(st.integers(1, 2))
    cout = fgc * data.draw(st.integers(1, 2))
    sizes = [data.draw(st.integers(1, 7)) for _ in range(nsp)]
    ks = [data.draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = tuple(data.draw(st.integers(1, 3)) for _ in range(nsp))
    ld = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    rd = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    pads = tuple((data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2)))
                 for _ in range(nsp))
    x, w = _rand((n, cin, *sizes)), _rand((cout, cin // fgc, *ks))
    kw = dict(window_strides=strides, padding=pads, lhs_dilation=ld, rhs_dilation=rd,
              feature_group_count=fgc)
    try:
        want = rjax.lax.conv_general_dilated(x, w, **kw)
    except ValueError:   # negative padding larger than the dimension
        with pytest.raises(ValueError):
            lax.conv_general_dilated(x, w, **kw)
        return
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        # XLA:CPU's convolution reads outside the input for a negative padding (real JAX
        # 0.10.2: jit(conv) with padding (-1, 1) returned 6.3e30 for x of shape
        # (1, 1, 3, 5)); the oracle is then JAX's conv of the input dilated and padded
        # (cut) by lax.pad, which XLA computes right
        cfg = [(0, 0, 0)] * 2 + [(lo, hi, d - 1) for (lo, hi), d in zip(pads, ld)]
        want = rjax.lax.conv_general_dilated(
            rjax.lax.pad(x, np.float32(0), cfg), w, window_strides=strides,
            padding=[(0, 0)] * nsp, rhs_dilation=rd, feature_group_count=fgc)
    assert_like_jax(lax.conv_general_dilated(x, w, **kw), want, rtol=1e-5, atol=1e-5)


# ---- reduce_window -------------------------------------------------------------------------

def _pool_cases(rjax):
    return [
        # name, computation (jaxlite, jax), init, window, strides, padding, base, window dil
        ("max 2x2", (lax.max, rjax.lax.max), -np.inf, (1, 1, 2, 2), (1, 1, 2, 2), "VALID",
         None, None),
        ("max 3x3 SAME", (lax.max, rjax.lax.max), -np.inf, (1, 1, 3, 3), (1, 1, 2, 2),
         "SAME", None, None),
        ("sum avg", (lax.add, rjax.lax.add), 0.0, (1, 1, 2, 2), (1, 1, 2, 2), "VALID", None,
         None),
        ("sum SAME_LOWER", (lax.add, rjax.lax.add), 0.0, (1, 1, 2, 3), (1, 1, 1, 2),
         "SAME_LOWER", None, None),
        ("min pads", (lax.min, rjax.lax.min), np.inf, (1, 2, 2, 2), (1, 1, 1, 3),
         ((0, 0), (1, 0), (2, 1), (0, -1)), None, None),
        ("sum dilated", (lax.add, rjax.lax.add), 0.0, (1, 1, 2, 2), (1, 1, 1, 1), "SAME",
         (1, 1, 2, 1), (1, 1, 1, 2)),
        ("max dilated", (lax.max, rjax.lax.max), -np.inf, (2, 1, 2, 2), (1, 2, 1, 2),
         ((1, 0), (0, 0), (1, 1), (0, 0)), (1, 2, 1, 3), (2, 1, 2, 1)),
        ("sum init 1", (lax.add, rjax.lax.add), 1.0, (1, 1, 2, 2), (1, 1, 1, 1),
         ((0, 0), (0, 0), (1, 1), (1, 1)), None, None),
        ("max init 0.5", (lax.max, rjax.lax.max), 0.5, (1, 1, 3, 2), (1, 1, 1, 2), "SAME",
         None, None),
    ]


@pytest.mark.parametrize("idx", range(9))
def test_reduce_window_matches_jax(rjax, idx):
    name, (fl, fj), init, wd, ws, pad, bd, wdil = _pool_cases(rjax)[idx]
    x = _rand((2, 3, 7, 6))
    want = rjax.lax.reduce_window(x, init, fj, wd, ws, pad, bd, wdil)
    got = lax.reduce_window(jnp.asarray(x), init, fl, wd, ws, pad, bd, wdil)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)
    jitted = jax.jit(lambda a: lax.reduce_window(a, init, fl, wd, ws, pad, bd, wdil))(x)
    assert_like_jax(jitted, want, rtol=1e-5, atol=1e-5)


def test_average_pooling_pattern(rjax):
    x = _rand((4, 8, 8, 3))
    def avg(lx, a):
        s = lx.reduce_window(a, 0.0, lx.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return s / 4.0
    assert_like_jax(avg(lax, jnp.asarray(x)), avg(rjax.lax, x), rtol=1e-6)


@pytest.mark.parametrize("dtype,comp,init", [
    (np.int32, "max", None), (np.int32, "add", 0), (np.int8, "min", None),
    (np.uint8, "max", np.uint8(1)), (np.float32, "add", 0), (np.bool_, "max", False),
    (np.bool_, "min", True),
    (np.float16, "add", 0.0), ("bfloat16", "max", None), (np.int32, "max", -np.inf),
])
def test_reduce_window_dtypes(rjax, dtype, comp, init):
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = _rand((5, 6), np.float32 if dt.kind == "V" else dt).astype(dt)
    if init is None:   # the identity, typed as the operand
        init = np.array(-np.inf if comp == "max" else np.inf, np.float32).astype(dt)[()] \
            if dt.kind in "fV" else dt.type(np.iinfo(dt).min if comp == "max" else
                                            np.iinfo(dt).max)
    want = rjax.lax.reduce_window(x, init, getattr(rjax.lax, comp), (2, 3), (1, 2), "SAME")
    got = lax.reduce_window(jnp.asarray(x), init, getattr(lax, comp), (2, 3), (1, 2), "SAME")
    assert_like_jax(got, want, rtol=1e-2, atol=1e-2)


def test_reduce_window_weak_operand_and_traced_init(rjax):
    assert_like_jax(lax.reduce_window(jnp.asarray(2.0), 0.0, lax.add, (), ()),
                    rjax.lax.reduce_window(rjax.numpy.asarray(2.0), 0.0, rjax.lax.add, (), ()))
    x = _rand((4, 5))
    want = rjax.jit(lambda a, i: rjax.lax.reduce_window(a, i, rjax.lax.max, (2, 2), (1, 1),
                                                        "SAME"))(x, 0.3)
    got = jax.jit(lambda a, i: lax.reduce_window(a, i, lax.max, (2, 2), (1, 1), "SAME"))(x, 0.3)
    assert_like_jax(got, want)


def test_reduce_window_recognises_equivalent_computations(rjax):
    x = _rand((6, 5))
    want = rjax.lax.reduce_window(x, -np.inf, rjax.lax.max, (2, 2), (1, 1), "VALID")
    for comp in (jnp.maximum, lambda a, b: lax.max(a, b), lambda a, b: jnp.maximum(b, a)):
        assert_like_jax(lax.reduce_window(x, -np.inf, comp, (2, 2), (1, 1), "VALID"), want)
    want = rjax.lax.reduce_window(x, 0.0, rjax.lax.add, (3, 2), (2, 1), "VALID")
    assert_like_jax(lax.reduce_window(x, 0.0, lambda a, b: a + b, (3, 2), (2, 1), "VALID"),
                    want, rtol=1e-6)


@pytest.mark.parametrize("name", ["mul", "affine", "first", "custom"])
@pytest.mark.parametrize("padding", ["VALID", "SAME", ((1, 0), (0, 2))])
def test_reduce_window_other_computations_match_jax(rjax, name, padding):
    # computations that are not add/max/min fold over the window offsets by composition;
    # for a non-associative one the order XLA applies it in is unspecified (it differs
    # from ours where padding is involved), so those are compared without padding
    if name in ("affine", "first") and padding != "VALID":
        pytest.skip("order of a non-associative reduction is unspecified with padding")
    comps = {"mul": (lax.mul, rjax.lax.mul),
             "affine": (lambda a, b: a * 0.5 + b, lambda a, b: a * 0.5 + b),
             "first": (lambda a, b: a, lambda a, b: a),
             "custom": (lambda a, b: jnp.maximum(a, b) * 1.0 + jnp.minimum(a, b) * 0.0,
                        lambda a, b: rjax.numpy.maximum(a, b))}
    x = (np.arange(20, dtype=np.float32).reshape(4, 5) - 7) / 5
    mine, theirs = comps[name]
    want = rjax.lax.reduce_window(x, 1.0, theirs, (2, 3), (1, 2), padding)
    got = lax.reduce_window(x, 1.0, mine, (2, 3), (1, 2), padding)
    assert_like_jax(got, want, rtol=1e-6)


def test_reduce_window_generic_computation_differentiates():
    # (real JAX cannot differentiate a generic reduce_window; here it is a composition)
    from _transform_checks import check_grads
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) + 1) / 4
    check_grads(lambda v: lax.reduce_window(v, 1.0, lax.mul, (2, 2), (1, 1), "SAME"), (x,))


RW_ERRORS = [
    ("window rank", dict(window_dimensions=(2,), window_strides=(1,))),
    ("stride rank", dict(window_dimensions=(2, 2), window_strides=(1,))),
    ("bad padding string", dict(window_dimensions=(2, 2), window_strides=(1, 1),
                                padding="FOO")),
    ("wrong number of pads", dict(window_dimensions=(2, 2), window_strides=(1, 1),
                                  padding=((1, 1),))),
    ("zero window", dict(window_dimensions=(0, 2), window_strides=(1, 1))),
    ("init dtype", dict(window_dimensions=(2, 2), init=np.float16(1))),
    ("init shape", dict(window_dimensions=(2, 2), init=np.ones(2, np.float32))),
]


@pytest.mark.parametrize("what,kw", RW_ERRORS, ids=[c[0] for c in RW_ERRORS])
def test_reduce_window_errors_have_jax_types(rjax, what, kw):
    x = _rand((4, 4))
    kw = dict(kw)
    init = kw.pop("init", 0.0)
    _same_error(lambda: lax.reduce_window(jnp.asarray(x), init, lax.add, **kw),
                lambda: rjax.lax.reduce_window(x, init, rjax.lax.add, **kw))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_reduce_window_random_configs_match_jax(rjax, data):
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(nd))
    wd = tuple(data.draw(st.integers(1, 3)) for _ in range(nd))
    ws = tuple(data.draw(st.integers(1, 3)) for _ in range(nd))
    bd = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    wdil = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    pads = tuple((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in range(nd))
    comp = data.draw(st.sampled_from(["add", "max", "min"]))
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[comp]
    x = _rand(shape)
    want = rjax.lax.reduce_window(x, init, getattr(rjax.lax, comp), wd, ws, pads, bd, wdil)
    got = lax.reduce_window(x, init, getattr(lax, comp), wd, ws, pads, bd, wdil)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)


# ---- transformations: jvp / vjp / vmap -----------------------------------------------------

from _transform_checks import check_grads, check_vmap, check_vs_jax  # noqa: E402

GRAD_CASES = [c for c in CONV_CASES if 0 not in c[0] and c[0] != (2, 3, 2, 2)]


@pytest.mark.parametrize("lshape,rshape,kw", GRAD_CASES)
def test_conv_jvp_and_vjp_match_jax(rjax, lshape, rshape, kw):
    x, w = _rand(lshape), _rand(rshape)
    tx, tw = _rand(lshape), _rand(rshape)
    f = lambda a, b: lax.conv_general_dilated(a, b, **kw)  # noqa: E731
    g = lambda a, b: rjax.lax.conv_general_dilated(a, b, **kw)  # noqa: E731
    check_vs_jax(jax.jvp(f, (x, w), (tx, tw)), rjax.jvp(g, (x, w), (tx, tw)), rtol=1e-4,
                 atol=1e-4)
    out, pull = jax.vjp(f, x, w)
    _, rpull = rjax.vjp(g, x, w)
    ct = _rand(out.shape)
    check_vs_jax(pull(ct), rpull(ct), rtol=1e-4, atol=1e-4)
    check_vs_jax(jax.jit(jax.grad(lambda a, b: (f(a, b) * ct).sum(), argnums=(0, 1)))(x, w),
                 rpull(ct), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("idx", [3, 8, 11, 14])
def test_conv_grads_numerically_second_order(idx):
    lshape, rshape, kw = GRAD_CASES[idx]
    check_grads(lambda a, b: lax.conv_general_dilated(a, b, **kw),
                (_rand(lshape), _rand(rshape)), order=2)


@pytest.mark.parametrize("idx", range(len(GRAD_CASES)))
@pytest.mark.parametrize("axes", [(0, 0), (1, None), (None, 2), (3, 1)])
def test_conv_vmap(idx, axes):
    lshape, rshape, kw = GRAD_CASES[idx]
    b = 3
    args = []
    for shape, ax in zip((lshape, rshape), axes):
        if ax is None:
            args.append(_rand(shape))
        else:
            ax = min(ax, len(shape))
            args.append(np.moveaxis(_rand((b,) + shape), 0, ax))
    axes = tuple(None if a is None else min(a, len(s)) for a, s in zip(axes, (lshape, rshape)))
    check_vmap(lambda a, c: lax.conv_general_dilated(a, c, **kw), args, axes, rtol=1e-5,
               atol=1e-5)


def test_conv_per_example_gradients_match_jax(rjax):
    x, w = _rand((4, 2, 6, 6)), _rand((3, 2, 3, 3))

    def loss(lx, a, k):
        y = lx.conv_general_dilated(a[None], k, (1, 1), "SAME")
        return (y * y).sum()
    got = jax.vmap(jax.grad(lambda k, a: loss(lax, a, k)), (None, 0))(w, x)
    want = rjax.vmap(rjax.grad(lambda k, a: loss(rjax.lax, a, k)), (None, 0))(w, x)
    check_vs_jax(got, want, rtol=1e-4, atol=1e-4)


POOLS = [
    ("max", (1, 1, 2, 2), (1, 1, 2, 2), "VALID", None),
    ("max", (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None),
    ("min", (1, 2, 2, 3), (1, 1, 1, 2), ((0, 0), (1, 0), (2, 1), (0, 1)), None),
    ("add", (1, 1, 2, 2), (1, 1, 2, 2), "VALID", None),
    ("add", (1, 1, 3, 2), (1, 1, 2, 1), ((0, 0), (0, 0), (2, -1), (1, 1)), (1, 1, 2, 3)),
    ("max", (2, 1, 2, 2), (1, 2, 1, 2), ((1, 0), (0, 0), (1, 1), (0, 0)), (1, 2, 1, 3)),
]


@pytest.mark.parametrize("comp,wd,ws,pad,bd", POOLS)
def test_reduce_window_jvp_vjp_match_jax(rjax, comp, wd, ws, pad, bd):
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[comp]
    x, t = _rand((2, 3, 7, 6)), _rand((2, 3, 7, 6))
    f = lambda a: lax.reduce_window(a, init, getattr(lax, comp), wd, ws, pad, bd)  # noqa
    g = lambda a: rjax.lax.reduce_window(a, init, getattr(rjax.lax, comp), wd, ws, pad, bd)  # noqa
    check_vs_jax(jax.jvp(f, (x,), (t,)), rjax.jvp(g, (x,), (t,)))
    out, pull = jax.vjp(f, x)
    ct = _rand(out.shape)
    check_vs_jax(pull(ct), rjax.vjp(g, x)[1](ct))
    check_vmap(f, [np.moveaxis(_rand((3, 2, 3, 7, 6)), 0, 2)], 2)


@pytest.mark.parametrize("comp", ["max", "min", "add"])
def test_reduce_window_grads_with_window_dilation(comp):
    # real JAX has no VJP for max/min pooling with window dilation; check numerically
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[comp]
    # (base dilation only for the sum: a max window of holes alone would be -inf)
    bd = (2, 1) if comp == "add" else (1, 1)
    check_grads(lambda a: lax.reduce_window(a, init, getattr(lax, comp), (2, 2), (1, 2), "SAME",
                                            bd, (2, 2)), (_rand((5, 6)),))


def test_max_pool_gradient_ties_and_nan_pick_what_jax_picks(rjax):
    for x in (np.ones((4, 5), np.float32), np.array([[1, np.nan], [2, 3]], np.float32)):
        f = lambda lx, a: lx.reduce_window(a, -np.inf, lx.max, (2, 2), (1, 1), "SAME").sum()  # noqa
        check_vs_jax(jax.grad(lambda a: f(lax, a))(x), rjax.grad(lambda a: f(rjax.lax, a))(x))


def test_small_cnn_loss_gradient_matches_jax(rjax):
    dn = ("NHWC", "HWIO", "NHWC")
    x = _rand((8, 12, 12, 1))
    params = [_rand((3, 3, 1, 4)) * 0.5, _rand((3, 3, 4, 6)) * 0.3, _rand((6 * 9, 5)) * 0.2]

    def loss(lx, np_, ps, a):
        k1, k2, dense = ps
        y = lx.conv_general_dilated(a, k1, (1, 1), "SAME", dimension_numbers=dn)
        y = lx.max(y, 0.0 * y)
        y = lx.reduce_window(y, -np.inf, lx.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = lx.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn,
                                    feature_group_count=1)
        y = lx.reduce_window(y, 0.0, lx.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        logits = y.reshape(y.shape[0], -1) @ dense
        return np_.mean(logits ** 2)
    got = jax.jit(jax.value_and_grad(lambda ps: loss(lax, jnp, ps, x)))(params)
    want = rjax.value_and_grad(lambda ps: loss(rjax.lax, rjax.numpy, ps, x))(params)
    check_vs_jax(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("g, bg", [(2, 1), (4, 1), (1, 2)])
@pytest.mark.parametrize("axes", [(0, 0), (0, None), (None, 0)])
def test_grouped_conv_vmap_and_jacobians_match_jax(rjax, g, bg, axes):
    """vmap (either or both operands mapped) and jacrev/jacfwd (vmapped transposes) of
    feature- and batch-grouped convolutions, against JAX."""
    x, w = _rand((3, 2, 4, 5, 5)), _rand((3, 8, 4 // g, 3, 3))
    xs = x if axes[0] == 0 else x[0]
    ws = w if axes[1] == 0 else w[0]

    def run(J):
        def f(a, k):
            return J.lax.conv_general_dilated(a, k, (1, 2), "SAME", feature_group_count=g,
                                              batch_group_count=bg)
        return [J.jit(J.vmap(f, axes))(xs, ws), J.jacrev(f, (0, 1))(x[0, :, :, :3, :3],
                                                                    w[0]),
                J.jacfwd(f, 1)(x[0, :, :, :3, :3], w[0])]
    check_vs_jax(run(jax), run(rjax), rtol=1e-4, atol=1e-4)
