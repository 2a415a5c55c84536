"""A 64-bit ``preferred_element_type`` with 64-bit types off, against real JAX 0.10.2: the
product is computed and returned in the 32-bit type, with JAX's UserWarning (class and
text, naming the function JAX names), once per call; Python's ``float``/``int`` and the
32-bit types do not warn."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp

DN = (((1,), (0,)), ((), ()))


def _text(requested, got, name):
    return (f"Explicitly requested dtype {requested} requested in {name} is not available, "
            f"and will be truncated to dtype {got}. To enable more dtypes, set the "
            f"jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
            f"variable. See https://github.com/jax-ml/jax#current-gotchas for more.")


def _run(fn):
    """(result, [(warning class name, text), ...]) of ``fn()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category.__name__, str(w.message)) for w in caught]


def _cases(m):
    """(name JAX's warning gives, function of (library, lax, preferred type))."""
    a = np.ones((2, 3), np.float32)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    x = np.ones((1, 1, 5, 5), np.float32)
    k = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    return [
        ("dot", lambda j, l, p: l.dot_general(a, b, DN, preferred_element_type=p)),
        ("dot", lambda j, l, p: l.dot(a, b, preferred_element_type=p)),
        ("dot", lambda j, l, p: j.dot(a, b, preferred_element_type=p)),
        ("dot", lambda j, l, p: j.vdot(a, a, preferred_element_type=p)),
        ("matmul", lambda j, l, p: j.matmul(a, b, preferred_element_type=p)),
        ("einsum", lambda j, l, p: j.einsum("ij,jk->ik", a, b, preferred_element_type=p)),
        ("tensordot", lambda j, l, p: j.tensordot(a, b, 1, preferred_element_type=p)),
        ("tensordot", lambda j, l, p: j.inner(a, a, preferred_element_type=p)),
        ("conv_general_dilated",
         lambda j, l, p: l.conv(x, k, (1, 1), "SAME", preferred_element_type=p)),
        ("conv_general_dilated",
         lambda j, l, p: l.conv_general_dilated(x, k, (1, 1), "VALID",
                                                preferred_element_type=p)),
        ("conv_general_dilated",
         lambda j, l, p: j.convolve(a[0], a[0], preferred_element_type=p)),
    ][m]


@pytest.mark.parametrize("m", range(11))
@pytest.mark.parametrize("pet", [np.float64, "float64", np.complex128])
def test_64_bit_preferred_type_truncates_with_jax_warning(rjax, m, pet):
    import jax.numpy as rjnp
    from jax import lax as rlax
    name, fn = _cases(m)
    if name == "conv_general_dilated" and np.dtype(pet).kind == "c":
        # float operands cannot convolve into a complex type: TypeError in both
        with pytest.raises(TypeError):
            _run(lambda: fn(rjnp, rlax, pet))
        with pytest.raises(TypeError, match="preferred_element_type"):
            _run(lambda: fn(jnp, lax, pet))
        return
    got, gw = _run(lambda: fn(jnp, lax, pet))
    want, ww = _run(lambda: fn(rjnp, rlax, pet))
    want_dt = np.dtype(np.complex64 if np.dtype(pet).kind == "c" else np.float32)
    assert got.dtype == want.dtype == want_dt
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    text = _text(np.dtype(pet).name, want_dt.name, name)
    assert ww == [("UserWarning", text)]
    assert gw == ww


@pytest.mark.parametrize("pet", [np.int64, np.uint64])
def test_64_bit_integer_preferred_type(rjax, pet):
    from jax import lax as rlax
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got, gw = _run(lambda: lax.dot_general(a, a.T, DN, preferred_element_type=pet))
    want, ww = _run(lambda: rlax.dot_general(a, a.T, DN, preferred_element_type=pet))
    assert got.dtype == want.dtype == np.dtype(pet).name.replace("64", "32")
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert gw == ww == [("UserWarning", _text(np.dtype(pet).name, want.dtype.name, "dot"))]


@pytest.mark.parametrize("pet", [float, int, np.float32, np.float16, None])
def test_no_warning_without_truncation(rjax, pet):
    from jax import lax as rlax
    a = np.ones((2, 2), np.float32)
    got, gw = _run(lambda: lax.dot_general(a, a, DN, preferred_element_type=pet))
    want, ww = _run(lambda: rlax.dot_general(a, a, DN, preferred_element_type=pet))
    assert gw == ww == []
    assert got.dtype == want.dtype


def test_jit_warns_at_trace_and_x64_does_not_warn(rjax):
    a = np.ones((2, 2), np.float32)
    f = jaxlite.jit(lambda x: lax.dot_general(x, x, DN, preferred_element_type=np.float64))
    got, gw = _run(lambda: f(a))
    assert got.dtype == np.float32 and [c for c, _ in gw] == ["UserWarning"]
    with jaxlite.enable_x64(True):
        got, gw = _run(lambda: lax.dot_general(a, a, DN, preferred_element_type=np.float64))
    assert got.dtype == np.float64 and gw == []
