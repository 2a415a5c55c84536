"""The small modules tutorials use, against real JAX: jaxlite.flatten_util.ravel_pytree,
jaxlite.nn.dot_product_attention, jaxlite.example_libraries (optimizers, stax) and
jaxlite.image; values, dtypes, weak types, grad, vmap, jit and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from _both import compare, run_both


# ---- flatten_util.ravel_pytree ------------------------------------------------------------

def _ravel(m, n, tree):
    if m is jaxlite:
        from jaxlite.flatten_util import ravel_pytree
    else:
        from jax.flatten_util import ravel_pytree
    return ravel_pytree(tree(n))


RAVEL_TREES = [
    lambda n: {"a": 1.0, "b": n.ones(2, "int32")},            # weak float + int: float32
    lambda n: (1.0,),                                          # one weak leaf stays weak
    lambda n: (1, 2.0),                                        # Python int + float
    lambda n: (),                                              # empty: float32 [0]
    lambda n: {"a": np.ones(2), "b": True},                    # float64 canonicalised
    lambda n: (n.ones(2, "bfloat16"), n.ones(1, "float16")),   # -> float32
    lambda n: (n.ones(2, "uint8"), n.int8(3)),                 # -> int16
    lambda n: (1 + 2j, n.float32(2)),                          # -> complex64
    lambda n: (n.arange(4.0).reshape(2, 2), None, [n.zeros(())]),
]


@pytest.mark.parametrize("i", range(len(RAVEL_TREES)))
def test_ravel_pytree_dtypes_and_roundtrip(i, rjax):
    def case(m, n):
        flat, unravel = _ravel(m, n, RAVEL_TREES[i])
        return flat, unravel(flat)
    run_both(case, rjax)


def test_ravel_pytree_unravel_errors_and_hash(rjax):
    import jax.numpy as rjnp
    from jax.flatten_util import ravel_pytree as r_ravel
    from jaxlite.flatten_util import ravel_pytree
    for m, n, rav in [(rjax, rjnp, r_ravel), (jaxlite, jnp, ravel_pytree)]:
        _, unravel = rav((n.ones(2, "int32"), 1.5))
        with pytest.raises(TypeError, match="float16"):
            unravel(n.ones(3, "float16"))
        with pytest.raises(ValueError):
            unravel(n.ones(4))
        _, unravel = rav((n.ones(2),))
        with pytest.raises(ValueError):
            unravel(n.ones(4))
        # one dtype: no dtype check, the leaves take the flat array's dtype
        assert unravel(n.ones(2, "int32"))[0].dtype == np.int32
        assert hash(unravel) == hash(rav((n.ones(2),))[1])
        assert unravel == rav((n.zeros(2),))[1]
        assert unravel != rav((n.zeros(3),))[1]


def test_ravel_pytree_under_grad_vmap_jit(rjax):
    def case(m, n):
        params = {"w": n.arange(6.0).reshape(2, 3), "b": n.ones(3, "bfloat16")}
        flat, unravel = _ravel(m, n, lambda _: params)

        def loss(v):
            p = unravel(v)
            return n.sum(p["w"] ** 2) + n.sum(p["b"].astype("float32") * 3)
        g = m.grad(loss)(flat)
        batched = m.vmap(unravel)(n.stack([flat, flat * 2]))
        jitted = m.jit(lambda t: _ravel(m, n, lambda _: t)[0])(params)
        return g, batched, jitted
    run_both(case, rjax)
