"""JAX 0.10's ``stack``, ``unstack`` and ``split`` primitives (``jnp.stack``, ``jnp.unstack``,
``jnp.split`` and its variants, ``lax.stack/unstack/split``), against real JAX 0.10.2:
values, shapes, dtypes and weak types eagerly, under jit (the CPU platform's compiled
programs) and on the xla_cpu PJRT platform; their derivatives (jvp, grad, second order)
and batching (vmap over each axis, operands unbatched); the errors of bad operands; and
the one equation each prints as."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax

from oracle import assert_like_jax

_A = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) - 7.5
_B = np.linspace(-2, 3, 24).astype(np.float32).reshape(2, 3, 4)
_I = np.arange(12, dtype=np.int32).reshape(3, 4)


def _programs(j, m, l):
    return {
        "stack_axis0": (lambda a, b: m.stack([a, b]), (_A, _B)),
        "stack_axis_last": (lambda a, b: m.stack([a, b, a], axis=-1), (_A, _B)),
        "stack_middle_ints": (lambda a: m.stack([a, a * 2], axis=1), (_I,)),
        "stack_mixed_dtypes": (lambda a, i: m.stack([a[0], i]), (_A, _I)),
        "stack_weak_scalars": (lambda x: m.stack([x, 2.0, x * 3]), (1.5,)),
        "lax_stack": (lambda a, b: l.stack([a, b], 2), (_A, _B)),
        "unstack": (lambda a: m.unstack(a, axis=1), (_A,)),
        "unstack_ints": (lambda i: m.unstack(i), (_I,)),
        "lax_unstack_last": (lambda a: l.unstack(a, -1), (_A,)),
        "split_sections": (lambda a: m.split(a, 3, axis=1), (_A,)),
        "split_indices": (lambda a: m.split(a, [1, 3], axis=2), (_A,)),
        "split_empty_pieces": (lambda a: m.split(a, [0, 4, 4], axis=-1), (_A,)),
        "array_split": (lambda a: m.array_split(a, 3, axis=2), (_A,)),
        "hsplit_vsplit_dsplit": (lambda a: (m.hsplit(a, 3), m.vsplit(a, 2), m.dsplit(a, 2)),
                                 (_A,)),
        "lax_split": (lambda a: l.split(a, (1, 0, 2), axis=1), (_A,)),
        "split_ints": (lambda i: m.split(i, 2, axis=1), (_I,)),
    }


NAMES = list(_programs(jax, jnp, lax))


def _check_tree(got, want, **kw):
    gl, wl = jax.tree_util.tree_leaves(got), [w for w in _leaves(want)]
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert_like_jax(g, w, **kw)


def _leaves(tree):
    import jax as rj
    return rj.tree_util.tree_leaves(tree)


@pytest.mark.parametrize("name", NAMES)
def test_values_eager_jit_and_xla_cpu(rjax, rjnp, name):
    fn, args = _programs(jax, jnp, lax)[name]
    rfn, _ = _programs(rjax, rjnp, rjax.lax)[name]
    want = rfn(*args)
    _check_tree(fn(*args), want)
    _check_tree(jax.jit(fn)(*args), want)
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    dev = jax.devices("xla_cpu")[0]
    on = [jax.device_put(a, dev) if isinstance(a, np.ndarray) else a for a in args]
    _check_tree(jax.jit(fn)(*on), want)


@pytest.mark.parametrize("name", NAMES)
def test_printed_as_jax(rjax, rjnp, name):
    fn, args = _programs(jax, jnp, lax)[name]
    rfn, _ = _programs(rjax, rjnp, rjax.lax)[name]
    assert str(jax.make_jaxpr(fn)(*args)) == str(rjax.make_jaxpr(rfn)(*args))


def _scalar_loss(j, m, l):
    # every piece weighted differently, so a cotangent sent to the wrong place shows
    def loss(a, b):
        s = m.stack([m.sin(a), b * a], axis=1)                   # (2, 2, 3, 4)
        parts = m.split(s, [1, 3], axis=3)
        u = l.unstack(parts[1], axis=2)
        w = m.arange(1.0, 1.0 + s.size, dtype=a.dtype).reshape(s.shape)
        return (s * w).sum() + (parts[0] ** 2).sum() + sum(
            (k + 1.0) * (x ** 3).sum() for k, x in enumerate(u)) + parts[2].prod()
    return loss


def test_derivatives_against_jax(rjax, rjnp):
    f, rf = _scalar_loss(jax, jnp, lax), _scalar_loss(rjax, rjnp, rjax.lax)
    a, b = _A * 0.1, _B * 0.1
    for make in (lambda j: j.grad(f if j is jax else rf, argnums=(0, 1)),
                 lambda j: lambda a, b: j.jvp(f if j is jax else rf, (a, b), (b, a)),
                 lambda j: j.jit(j.grad(f if j is jax else rf)),
                 lambda j: lambda a, b: j.grad(lambda a: j.grad(
                     f if j is jax else rf)(a, b).sum())(a),
                 lambda j: lambda a, b: j.vjp(lambda a: (j.numpy if j is not jax else jnp)
                                              .split(a, 2, axis=2), a)[1](
                     [b[:, :, :2], b[:, :, 2:]])):
        _check_tree(make(jax)(a, b), make(rjax)(a, b), rtol=2e-5, atol=1e-4)


def _batched(j, m, l):
    return {
        "stack": lambda a, b: m.stack([a, b], axis=1),
        "stack_last": lambda a, b: l.stack([a, b * 2], 2),
        "unstack": lambda a, b: m.unstack(a * b, axis=1),
        "unstack_first": lambda a, b: l.unstack(a + b),
        "split": lambda a, b: m.split(a - b, [1, 3], axis=1),
        "split_first": lambda a, b: l.split(a, (2, 1), axis=0),
    }


@pytest.mark.parametrize("name", list(_batched(jax, jnp, lax)))
@pytest.mark.parametrize("axes", [(0, 0), (1, 1), (2, None), (None, 0), (0, 2)])
def test_vmap_against_jax(rjax, rjnp, name, axes):
    f, rf = _batched(jax, jnp, lax)[name], _batched(rjax, rjnp, rjax.lax)[name]
    a = np.moveaxis(_A, 0, axes[0]) if axes[0] is not None else _A[0]
    b = np.moveaxis(_B, 0, axes[1]) if axes[1] is not None else _B[0]
    _check_tree(jax.vmap(f, in_axes=axes)(a, b), rjax.vmap(rf, in_axes=axes)(a, b))
    if None in axes:
        # an unbatched operand of an elementwise op: JAX broadcasts it to a size-1 batch
        # dimension (README, known differences); the batching of the primitives prints
        # alike where both operands are batched
        return
    assert str(jax.make_jaxpr(jax.vmap(f, in_axes=axes))(a, b)) == \
        str(rjax.make_jaxpr(rjax.vmap(rf, in_axes=axes))(a, b))


def _bad(j, m, l):
    return {
        "stack_of_two_shapes": lambda: l.stack([_A, _B[0]]),
        "stack_of_two_ranks_traced": lambda: j.jit(lambda a, b: l.stack([a, b]))(_A, _B[0]),
        "unstack_of_a_scalar": lambda: l.unstack(np.float32(1)),
        "split_sizes_not_adding_up": lambda: l.split(_A, (1, 1), axis=1),
        "split_negative_size": lambda: l.split(_A, (4, -1), axis=1),
        "jnp_split_unequal": lambda: m.split(_A, 5, axis=2),
    }


@pytest.mark.parametrize("name", list(_bad(jax, jnp, lax)))
def test_errors_as_jax(rjax, rjnp, name):
    with pytest.raises(Exception) as want:
        _bad(rjax, rjnp, rjax.lax)[name]()
    with pytest.raises(type(want.value)) as got:
        _bad(jax, jnp, lax)[name]()
    # the message names the offending shapes or sizes
    for token in ("(2, 3, 4)", "[2, 3, 4]", "-1", "(3, 4)"):
        if token in str(want.value):
            assert token in str(got.value), (str(got.value), str(want.value))
