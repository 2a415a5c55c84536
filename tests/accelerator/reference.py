"""Runs tests/accelerator/programs.py under one implementation and saves every result.

    python tests/accelerator/reference.py --impl jax --out ref.npz

``--impl jax`` runs real JAX (on whatever platform it picks: the chip on a TPU machine),
``--impl jaxlite`` runs jaxlite.  The archive holds ``NAME/i`` for result ``i`` of program
``NAME``, and ``NAME/error`` (the exception's text) for a program that raised, so one
failing program does not hide the others.  make test-accelerator runs it with real JAX
first, alone on the chip, then compares jaxlite's results with these (test_programs.py).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import PROGRAMS, flat  # noqa: E402


def run_all(impl: str) -> dict:
    """Every program's results under ``impl`` ("jax" or "jaxlite"), as a flat dict."""
    jax = importlib.import_module(impl)
    jnp = importlib.import_module(impl + ".numpy")
    lax = importlib.import_module(impl + ".lax")
    importlib.import_module(impl + ".scipy.linalg")
    out = {"platform": np.array(str(jax.devices()[0].platform))}
    for name, (fn, inputs, _) in PROGRAMS.items():
        try:
            args = [jnp.asarray(a) for a in inputs()]
            for i, a in enumerate(flat(fn(jax, jnp, lax, *args))):
                out[f"{name}/{i}"] = a
        except Exception as e:     # recorded: the comparison names the program that raised
            out[f"{name}/error"] = np.array(f"{type(e).__name__}: {e}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", choices=("jax", "jaxlite"), default="jax")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    res = run_all(args.impl)
    np.savez(args.out, **res)
    errors = [k for k in res if k.endswith("/error")]
    print(f"{args.impl} on {res['platform']}: {len(PROGRAMS) - len(errors)} of "
          f"{len(PROGRAMS)} programs ran" + "".join(f"\n  {k}: {res[k]}" for k in errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
