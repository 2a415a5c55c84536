"""Test-tier helpers shared by oracle test files (see conftest.py for the file-level
sampling; ``make test-slow`` runs what these move out of the fast tier)."""
from __future__ import annotations

import pytest


def half_slow(cases):
    """Every other case of an oracle table runs only in the slow tier (make test-slow):
    real JAX compiles each case afresh, which is most of such a file's time.  ``cases``:
    a list of parametrize values (tuples for several argnames, or single values)."""
    return [c if i % 2 == 0 else pytest.param(*(c if isinstance(c, tuple) else (c,)),
                                               marks=pytest.mark.slow)
            for i, c in enumerate(cases)]
