"""Builds jaxlite's C extensions: the eager operators' fast path
(src/jaxlite/core/_eager_ops.c) and the reference float32 transcendental functions
(src/jaxlite/primitives/_f32math.c).  Both are optional: without a C compiler the install
still succeeds and jaxlite runs the same operators in Python (numpy/_methods.py) and
computes float32 transcendentals with NumPy in float64 (primitives/_f32.py)."""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("jaxlite.core._eager_ops", ["src/jaxlite/core/_eager_ops.c"],
              extra_compile_args=["-O2"], optional=True),
    # no contraction of a * b + c into a fused multiply-add but where the source says fma():
    # the bits must be those of the native backend's _vecmath; no FP traps assumed, so the
    # loops' selects vectorise; sqrt() need not set errno, so it vectorises (its results
    # are IEEE's correctly rounded square roots either way)
    Extension("jaxlite.primitives._f32math", ["src/jaxlite/primitives/_f32math.c"],
              extra_compile_args=["-O3", "-ffp-contract=off", "-fno-trapping-math",
                                  "-fno-math-errno"],
              optional=True),
])
