"""3.3 jit: make code fly (compiled once per input signature, then reused)

The chapter's programs with the imports changed to jaxlite (``import jaxlite as jax``,
``import jaxlite.numpy as jnp``; for real JAX write ``import jax`` / ``import jax.numpy as
jnp``).  Lines marked "(added)" are not in the chapter; they print what it only describes.

Run it: ``python examples/section_3_3_jit.py`` (or ``python -m jaxlite demo``, which also
shows each compile and why it happened).
"""
import jaxlite as jax
import jaxlite.numpy as jnp


@jax.jit
def f(x, y):
    return jnp.dot(x, y) + jnp.sum(x)


x = jnp.array([1.0, 2.0, 3.0])
y = jnp.array([4.0, 5.0, 6.0])

result = f(x, y)
print(result)  # 38.0
# The chapter prints 37.0: an arithmetic slip.  dot(x, y) = 4 + 10 + 18 = 32 and
# sum(x) = 6, so the result is 38.0 (real JAX prints 38.0 too).

# (added) the second call has the same shapes and dtypes: the compiled version is reused
print(f(x, y))  # 38.0, no compile

# Tip: compile by hand and read the compiled program.  jaxlite shows its optimised
# program and the generated executable; real JAX shows XLA's HLO text.
compiled = jax.jit(f).lower(x, y).compile()
print(compiled.as_text())


# (added) jit needs pure functions: a Python print runs while tracing (once per
# compile), not when the compiled function runs.  jax.debug.print runs on every call.
@jax.jit
def noisy(x):
    print("Python print: runs while tracing, x has shape", x.shape)  # noqa: JL002
    jax.debug.print("jax.debug.print: runs on every call, x = {}", x)
    return x * 2


print(noisy(x))  # traces: both lines print
print(noisy(x))  # cached: only jax.debug.print prints


# Dynamic shapes: a new input shape means a new compilation
@jax.jit
def g(x):
    return jnp.sum(x)


# first call, shape (3,)
print(g(jnp.array([1, 2, 3])))  # compiles.  (added: print) 6
print("compiled versions of g:", g._cache_size())  # (added) 1

# second call, shape (4,)
print(g(jnp.array([1, 2, 3, 4])))  # compiles again!  slow!  (added: print) 10
print("compiled versions of g:", g._cache_size())  # (added) 2
# (``python -m jaxlite demo`` shows why: argument x shape (3,) -> (4,).  So does
# jax.config.update("jax_explain_cache_misses", True).)
