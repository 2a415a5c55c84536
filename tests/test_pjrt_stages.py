"""jit's stages on a PJRT platform (xla_cpu): ``lower().as_text()`` is the StableHLO module
the plugin compiles (as JAX shows it), the CPU platform still shows jaxlite's IR, and the
``dialect`` argument is honoured or refused, never ignored."""
from __future__ import annotations

import pytest

import jaxlite
import jaxlite.numpy as jnp

pytest.importorskip("xla_plugins.xla_cpu_pjrt")


@pytest.fixture(scope="module")
def xdev():
    return jaxlite.devices("xla_cpu")[0]


def _f(x):
    return jnp.sin(x) * 2.0


def test_lowered_text_is_stablehlo_on_a_pjrt_device(xdev):
    x = jaxlite.device_put(jnp.arange(3.0), xdev)
    low = jaxlite.jit(_f).lower(x)
    for text in (low.as_text(), low.as_text("stablehlo")):
        assert "func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>)" in text
        assert '"stablehlo.sine"' in text and '"stablehlo.multiply"' in text
    # the lowered program compiles and runs to the values the CPU gives
    out = low.compile()(x)
    assert out.devices() == {xdev}
    assert jnp.allclose(jaxlite.device_get(out), jnp.sin(jnp.arange(3.0)) * 2.0)


def test_default_device_picks_the_platform(xdev):
    with jaxlite.default_device(xdev):
        text = jaxlite.jit(_f).lower(jnp.ones((2, 2), jnp.int32)).as_text()
    assert "tensor<2x2xi32>" in text and "stablehlo" in text


def test_cpu_platform_shows_the_jaxpr_and_refuses_stablehlo():
    cpu = jaxlite.devices("cpu")[0]
    low = jaxlite.jit(_f).lower(jaxlite.device_put(jnp.arange(3.0), cpu))
    assert low.as_text().startswith("# jit(_f) lowered for (x: f32[3])")
    with pytest.raises(ValueError, match="compiles jaxlite's IR itself"):
        low.as_text("stablehlo")


@pytest.mark.parametrize("dialect", ["hlo", "mhlo", "STABLEHLO", 3])
def test_unknown_dialect_is_refused(xdev, dialect):
    low = jaxlite.jit(_f).lower(jaxlite.device_put(jnp.arange(3.0), xdev))
    with pytest.raises(ValueError, match="unknown dialect"):
        low.as_text(dialect)
