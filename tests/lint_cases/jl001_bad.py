"""JL001: an .at[] update whose result is thrown away changes nothing."""
import jaxlite as jax
import jaxlite.numpy as jnp

x = jnp.zeros(5)
for i in range(5):
    x.at[i].set(i)  # expect: JL001 col 5
x.at[0].add(1.0)  # expect: JL001 col 1


def double_head(y):
    y.at[:2].multiply(2.0)  # expect: JL001 col 5
    return y


@jax.jit
def clip_first(y):
    y.at[0].min(1.0)  # expect: JL001 col 5
    return y


params = {"w": jnp.ones(3)}
params["w"].at[1].set(0.0)  # expect: JL001 col 1
