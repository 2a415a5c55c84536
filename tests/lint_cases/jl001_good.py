"""JL001 fixed: every .at[] result is assigned, returned or used."""
import jaxlite as jax
import jaxlite.numpy as jnp

x = jnp.zeros(5)
for i in range(5):
    x = x.at[i].set(i)
x = x.at[0].add(1.0)
print(x.at[0].get())
head = x.at[:2].get()


def double_head(y):
    return y.at[:2].multiply(2.0)


@jax.jit
def clip_first(y):
    y = y.at[0].min(1.0)
    return y


params = {"w": jnp.ones(3)}
params["w"] = params["w"].at[1].set(0.0)
