"""Primitive declarations, one family per module; importing this registers them all.

Implementations run under ``np.errstate(all="ignore")`` set by their callers (eager
execution, executables, constant folding): JAX computes inf/nan quietly, and NumPy's
floating-point warnings must not turn into errors in programs run with ``-W error``.
"""
from . import elementwise, shape, reduction, linalg, indexing, control  # noqa: F401
from . import control_flow  # noqa: F401
from . import conv  # noqa: F401
from . import collectives  # noqa: F401
from . import shard_slice  # noqa: F401  (the SPMD partitioner's local block)
from . import cross_process  # noqa: F401  (collectives over several processes)
from . import kernel  # noqa: F401  (fused kernels: made by the compiler's fusion pass)
from . import fft  # noqa: F401,E402  (opaque kernel: SciPy's FFT)
from . import rng  # noqa: F401,E402  (XLA's bit generator: rng_bit_generator)
