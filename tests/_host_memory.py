"""Host memory a call really allocates (NumPy reports its buffers to tracemalloc)."""
from __future__ import annotations

import tracemalloc


def host_peak_of_call(f, x):
    """``(f(x), peak)``: the result, waited for, and the peak bytes of host memory
    allocated during the call above what was allocated before it."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = f(x).block_until_ready()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return out, peak
