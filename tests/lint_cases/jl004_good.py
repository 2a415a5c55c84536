"""JL004 fixed: jit once, outside the loop; call the jitted function inside."""
import jax
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2


f_jit = jax.jit(f)
xs = [jnp.ones(3) * i for i in range(4)]
for x in xs:
    y = f_jit(x)

ys = [f_jit(x) for x in xs]


def make_scaled(scale):
    # a factory called in a loop is not flagged: the jit call is in its body
    return jax.jit(lambda v: v * scale)


scaled = {s: make_scaled(s) for s in (1.0, 2.0)}
