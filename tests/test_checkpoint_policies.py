"""``jax.checkpoint_policies``: every policy decides as JAX's does, asked about the same
equations of the same programs (jaxlite's make_jaxpr and JAX's), and ``jax.checkpoint``
accepts each one with unchanged gradients."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from oracle import assert_like_jax

POLICIES = {
    "everything_saveable": lambda cp: cp.everything_saveable,
    "nothing_saveable": lambda cp: cp.nothing_saveable,
    "dots_saveable": lambda cp: cp.dots_saveable,
    "checkpoint_dots": lambda cp: cp.checkpoint_dots,
    "dots_with_no_batch_dims_saveable": lambda cp: cp.dots_with_no_batch_dims_saveable,
    "checkpoint_dots_with_no_batch_dims": lambda cp: cp.checkpoint_dots_with_no_batch_dims,
    "save_only_these_names": lambda cp: cp.save_only_these_names("a", "b"),
    "save_any_names_but_these": lambda cp: cp.save_any_names_but_these("a"),
    "save_anything_except_these_names": lambda cp: cp.save_anything_except_these_names("a"),
    "both": lambda cp: cp.save_from_both_policies(cp.dots_with_no_batch_dims_saveable,
                                                  cp.nothing_saveable),
    "offload_dots": lambda cp: cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
}

PROGRAMS = {
    "matmul_sin": (lambda n: (lambda a, b: n.sin(a @ b)),
                   lambda n: (n.ones((2, 3)), n.ones((3, 4)))),
    "batched_dot": (lambda n: (lambda a, b: _lax(n).dot_general(
        a, b, (((2,), (1,)), ((0,), (0,))))),
                    lambda n: (n.ones((2, 2, 3)), n.ones((2, 3, 2)))),
    "conv": (lambda n: (lambda x, w: _conv(n)(x, w)),
             lambda n: (n.ones((1, 1, 5, 5)), n.ones((1, 1, 3, 3)))),
    "elementwise": (lambda n: (lambda x: n.tanh(x) * 2 + 1), lambda n: (n.ones(3),)),
}


def _lax(n):
    import importlib
    return importlib.import_module(n.__name__.replace("numpy", "lax"))


def _conv(n):
    return lambda x, w: _lax(n).conv_general_dilated(x, w, (1, 1), "SAME")


def _decisions(j, n, policy, prog):
    make_f, make_args = PROGRAMS[prog]
    closed = j.make_jaxpr(make_f(n))(*make_args(n))
    out = []
    for eqn in closed.jaxpr.eqns:
        avals = [v.aval for v in eqn.invars]
        d = policy(eqn.primitive, *avals, **eqn.params)
        out.append((eqn.primitive.name, d if isinstance(d, bool) else repr(d)))
    return out


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_decides_like_jax(rjax, rjnp, name, prog):
    got = _decisions(jax, jnp, POLICIES[name](jax.checkpoint_policies), prog)
    want = _decisions(rjax, rjnp, POLICIES[name](rjax.checkpoint_policies), prog)
    # the same equations in both programs (jaxlite's make_jaxpr mirrors JAX's)
    assert [g[0] for g in got] == [w[0] for w in want]
    if name == "offload_dots":   # JAX answers Offloadable(...) or Recompute (a falsy value)
        assert [isinstance(g[1], str) for g in got] == [w[1].startswith("Offloadable")
                                                         for w in want]
    else:
        assert got == want


def test_policy_reprs_and_errors(rjax):
    for name in ("dots_saveable", "dots_with_no_batch_dims_saveable"):
        assert repr(getattr(jax.checkpoint_policies, name)) == \
            repr(getattr(rjax.checkpoint_policies, name))
    assert repr(jax.checkpoint_policies.save_only_these_names("a")) == \
        repr(rjax.checkpoint_policies.save_only_these_names("a"))
    assert sorted(vars(jax.checkpoint_policies)) == sorted(vars(rjax.checkpoint_policies))
    for cp in (jax.checkpoint_policies, rjax.checkpoint_policies):
        with pytest.raises(ValueError):
            cp.save_and_offload_only_these_names(
                names_which_can_be_saved=["a"], names_which_can_be_offloaded=["a", "b"],
                offload_src="device", offload_dst="pinned_host")
        bad = cp.save_from_both_policies(lambda *a, **k: 1, cp.nothing_saveable)
        with pytest.raises(ValueError):
            bad(None)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_checkpoint_accepts_policy(rjax, rjnp, name):
    res = []
    for j, n in ((jax, jnp), (rjax, rjnp)):
        f = j.checkpoint(lambda x, w: n.sum(n.tanh(x @ w) ** 2),
                         policy=POLICIES[name](j.checkpoint_policies))
        x = n.arange(6.0).reshape(2, 3) / 10
        w = n.ones((3, 2)) / 3
        res.append((j.grad(f, argnums=(0, 1))(x, w), j.jit(j.grad(f))(x, w)))
    for a, b in zip(jax.tree_util.tree_leaves(res[0]), rjax.tree_util.tree_leaves(res[1])):
        assert_like_jax(a, b, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(res[0][1]), np.asarray(res[0][0][0]), rtol=1e-6)
