"""JL006: a jitted function mutating a global or closed-over container."""
import jaxlite as jax
import jaxlite.numpy as jnp

seen = []
stats = {}
counter = 0


@jax.jit
def record(x):
    seen.append(x)  # expect: JL006 col 5
    stats["last"] = x  # expect: JL006 col 5
    return x * 2


@jax.jit
def count_calls(x):
    global counter
    counter += 1  # expect: JL006 col 5
    return x


def make_logged():
    log = []

    def body(x):
        log.extend([x, x])  # expect: JL006 col 9
        return x + 1

    return jax.jit(body), log


def make_counter():
    calls = 0

    @jax.jit
    def f(x):
        nonlocal calls
        calls += 1  # expect: JL006 col 9
        return x

    return f
