"""3.1 jnp.array: not just a copy of NumPy (immutable; updates go through .at[])

The chapter's program with one change: the import names jaxlite (``import jaxlite.numpy as
jnp``; for real JAX write ``import jax.numpy as jnp``).  Lines marked "(added)" are not in
the chapter; they print what the chapter only states in comments.

Run it: ``python examples/section_3_1_arrays.py`` (or ``python -m jaxlite demo``).
"""
import jaxlite.numpy as jnp
import numpy as np

# NumPy style (mutable)
x_np = np.array([1, 2, 3])
x_np[0] = 100  # fine
print(x_np)  # (added) [100   2   3]

# JAX style (immutable)
x_jax = jnp.array([1, 2, 3])
# x_jax[0] = 100  # raises! TypeError: ... does not support item assignment
# (added) run the commented-out line to show the error it raises:
try:
    x_jax[0] = 100
except TypeError as e:
    print(f"TypeError: {e}")

# The right way: the indexed-update function
x_jax_new = x_jax.at[0].set(100)
print(x_jax_new)  # [100   2   3]   (the chapter writes [100, 2, 3]; arrays print without commas)

# (added) .at[] returns a NEW array: the original is unchanged
print(x_jax)  # [1 2 3]
# (added) the other update methods work the same way
print(x_jax.at[1].add(10))       # [ 1 12  3]
print(x_jax.at[2].multiply(5))   # [ 1  2 15]
print(x_jax.at[0].get())         # 1
