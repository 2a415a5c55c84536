"""Donation on a PJRT platform (backends/pjrt/_run.py): ``jit(f, donate_argnums=...)`` on
xla_cpu arrays hands the donated buffers to PJRT's donation; the donated Array is deleted,
the device's bytes stay exact, the results are right."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("xla_plugins.xla_cpu_pjrt")

import jaxlite as jax  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402


@pytest.fixture(scope="module")
def xla():
    return jax.devices("xla_cpu")[1]     # not the default device of its platform either


def in_use(dev) -> int:
    return dev.memory_stats()["bytes_in_use"]


def test_donated_array_is_consumed_through_pjrt(xla):
    x = jax.device_put(jnp.arange(1024, dtype=jnp.float32), xla)
    native = x._buf.data
    base = in_use(xla)
    f = jax.jit(lambda a: a * 2 + 1, donate_argnums=0)
    y = f(x)
    assert x.is_deleted() and not y.is_deleted()
    assert native.is_deleted()       # PJRT consumed the buffer (its memory is y's now)
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="deleted"):
        x + 1
    np.testing.assert_array_equal(np.asarray(y), np.arange(1024, dtype=np.float32) * 2 + 1)
    assert y.dtype == np.float32 and y.shape == (1024,) and y.device == xla
    assert in_use(xla) == base         # x's 4096 bytes went, y's 4096 came
    del y
    assert in_use(xla) == base - 4096


def test_donation_in_a_loop_keeps_memory_flat(xla):
    step = jax.jit(lambda s, g: s - 0.5 * g, donate_argnums=0)
    s = jax.device_put(jnp.ones((64, 64), jnp.float32), xla)
    g = jax.device_put(jnp.full((64, 64), 2.0, jnp.float32), xla)
    s = step(s, g)
    base = in_use(xla)
    for _ in range(5):
        old = s
        s = step(s, g)
        assert old.is_deleted()
    assert in_use(xla) == base
    np.testing.assert_array_equal(np.asarray(s), np.full((64, 64), -5.0, np.float32))
    assert not g.is_deleted()          # not donated: still there


def test_donation_no_output_can_take_warns_and_keeps_the_array(xla):
    z = jax.device_put(jnp.ones(3, jnp.float32), xla)
    g = jax.jit(lambda a: a.sum(), donate_argnums=0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = g(z)
    assert any("donated buffers were not usable" in str(m.message) for m in w)
    assert not z.is_deleted() and float(r) == 3.0
    np.testing.assert_array_equal(np.asarray(z), np.ones(3, np.float32))


def test_donated_buffer_passed_twice_raises_and_deletes_nothing(xla):
    y = jax.device_put(jnp.ones(4, jnp.float32), xla)
    base = in_use(xla)
    with pytest.raises(RuntimeError, match="also passed as argument 1"):
        jax.jit(lambda a, b: a + b, donate_argnums=0)(y, y)
    assert not y.is_deleted() and in_use(xla) == base


def test_donated_argument_on_another_device_is_copied_not_deleted(xla):
    cpu_x = jnp.arange(4.0, dtype=jnp.float32)           # uncommitted, on the CPU
    f = jax.jit(lambda a, b: a + b, donate_argnums=0)
    b = jax.device_put(jnp.ones(4, jnp.float32), xla)    # committed: the call runs there
    out = f(cpu_x, b)
    assert out.device == xla and not cpu_x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0, dtype=np.float32) + 1)


def test_donation_of_a_program_run_in_pieces(xla, capsys):
    def f(a):
        jax.debug.print("{a}", a=a)
        return a + 1
    x = jax.device_put(jnp.zeros(2, jnp.float32), xla)
    base = in_use(xla)
    y = jax.jit(f, donate_argnums=0)(x)
    assert x.is_deleted() and in_use(xla) == base
    assert np.asarray(y).tolist() == [1.0, 1.0]
    assert capsys.readouterr().out == "[0. 0.]\n"
