"""JL004: jit(...) called inside a loop builds a new wrapper (and cache) every iteration."""
import jax
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2


xs = [jnp.ones(3) * i for i in range(4)]
for x in xs:
    y = jax.jit(f)(x)  # expect: JL004 col 9

i = 0
while i < 3:
    g = jax.jit(lambda v: v + i)  # expect: JL004 col 9
    g(xs[0])
    i += 1

for scale in (1.0, 2.0):
    @jax.jit  # expect: JL004 col 6
    def scaled(v):
        return v * scale
    scaled(xs[0])

ys = [jax.jit(f)(x) for x in xs]  # expect: JL004 col 7
