"""Builds jaxlite's one C extension, the eager operators' fast path
(src/jaxlite/core/_eager_ops.c).  It is optional: without a C compiler the install still
succeeds and jaxlite runs the same operators in Python (numpy/_methods.py)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("jaxlite.core._eager_ops", ["src/jaxlite/core/_eager_ops.c"],
                             extra_compile_args=["-O2"], optional=True)])
