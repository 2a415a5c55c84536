"""JL005: a Python loop that grows an array, or refills a fresh copy, every iteration."""
import jaxlite as jax
import jaxlite.numpy as jnp


def step(x):
    return jnp.tanh(x) * 0.9


def trajectory_concat(x, steps):
    xs = x[None]
    for _ in range(steps):
        x = step(x)
        xs = jnp.concatenate([xs, x[None]])  # expect: JL005 col 14
    return xs


def trajectory_list(x, steps):
    history = []
    for _ in range(steps):
        x = step(x)
        history.append(x)  # expect: JL005 col 9
    return jnp.stack(history)


def collect(x, steps):
    out = jnp.zeros(0)
    n = 0
    while n < steps:
        out = jnp.append(out, jnp.sum(x))  # expect: JL005 col 15
        n += 1
    return out


def rowwise(batch):
    out = jnp.zeros(batch.shape[0])
    for i in range(batch.shape[0]):
        out = out.at[i].set(jnp.sum(step(batch[i])))  # expect: JL005 col 15
    return out
