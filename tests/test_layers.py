"""The package's layers: no module imports a layer above its own.

Every module of ``src/jaxlite`` is parsed (``ast``; imports inside functions count as much
as those at the top of a file) and assigned to a layer by its package; an import of a
jaxlite module in a higher layer fails the test, naming both modules and the line, unless
it is one of the few deliberate exceptions listed in ``EXCEPTIONS`` with its reason.

The layers, highest first, in the sense of imports (a layer uses the ones below it):

- ``api``: the ``jax`` surface: ``jaxlite/__init__.py``, the public top-level modules that
  are re-export or convenience modules (``debug``, ``stages``, ``dlpack`` ...), and the
  public subpackages beyond the core ops (``scipy``, ``experimental``, ``tools`` ...).
- ``ops``: ``numpy``, ``lax``, ``nn``, ``random`` (and ``dlpack``, which ``numpy``
  re-exports): compositions of primitives.
- ``transforms``: ``jit``, ``grad``, ``vmap``, ``shard_map``, the stages.
- ``compiler``: passes over programs, the SPMD partitioner.
- ``backends``: the platforms (the interpreter, ``cpu/``, ``pjrt/``).
- ``core``: the program model: ``core/`` (Primitive, abstract values, tracers, Array,
  eager execution, placement, the AD and batching machinery), ``primitives/`` (each
  primitive's one declaration with all its rules: DESIGN.md lists them in core), ``ir/``
  (the program) and ``sharding.py`` (meshes and shardings, the vocabulary arrays and
  programs are placed with).  AD builds zeros and sums from primitives while the
  primitives' rules use core's tracers, so these are one layer.
- ``runtime``: devices, buffers, memory accounting, transfers, dispatch, MPI, and the
  ``Backend`` contract every platform implements.
- ``base``: configuration, errors, dtypes, pytrees, monitoring events, traceback
  filtering: imported by every layer, importing none.

This is DESIGN.md's list read as imports: the data of a call flows from the public ops
through core to the runtime, while the modules that handle it import the vocabulary
below them (a transform imports core's tracers, a backend core's primitives and the
runtime's devices), so ``core`` sits below the stages that consume programs, and the
runtime at the bottom knows nothing of tracing.  Running a compiled program belongs to the
backend of its devices: ``jit`` reaches it through the runtime's ``Backend`` contract
(``device.backend``), never by importing ``backends``.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "jaxlite"

LAYERS = ["api", "ops", "transforms", "compiler", "backends", "core", "runtime", "base"]

#: the layer of each subpackage, and of each top-level module that is not in ``api``
PACKAGE_LAYER = {
    "numpy": "ops", "lax": "ops", "nn": "ops", "random": "ops",
    "transforms": "transforms", "compiler": "compiler", "backends": "backends",
    "dlpack": "ops",
    "primitives": "core", "core": "core", "ir": "core", "sharding": "core",
    "runtime": "runtime",
    "config": "base", "errors": "base", "dtypes": "base", "tree_util": "base",
    "monitoring": "base", "version": "base", "_traceback": "base",
    "_unsupported_options": "base",
}

#: (importing module, imported module) -> why this upward import is deliberate.  Each side
#: names a module or a package (then covering every module in it).
EXCEPTIONS: dict = {
    ("jaxlite.primitives", "jaxlite.compiler.passes.sharding_propagation"):
        "the sharding rule of a primitive carrying a program (scan, while, cond, jit, "
        "custom_linear_solve) is the propagation pass run over its body",
    ("jaxlite.primitives.collectives", "jaxlite.numpy"):
        "ppermute's batching rule gathers and masks the permuted examples with jnp",
    ("jaxlite.core.placement", "jaxlite.lax._sharding_constraints"):
        "device_put of a traced value stages lax's reshard / with_sharding_constraint",
    ("jaxlite.sharding", "jaxlite.lax"):
        "jax.sharding is one public module: beside the mesh vocabulary core uses it holds "
        "reshard and auto_axes, public ops built on lax (reshard, typeof)",
    ("jaxlite.transforms.autodiff", "jaxlite.numpy"):
        "jacfwd/jacrev build their standard basis with jnp.eye",
    ("jaxlite.transforms.shard_map", "jaxlite.lax"):
        "an unreplicated check_vma=False output (device 0's value) has the mean over the "
        "devices as its derivative, written with lax.div / reduce_sum",
}


def _covers(key: str, name: str) -> bool:
    return name == key or name.startswith(key + ".")


def _excepted(a: str, b: str) -> bool:
    return any(_covers(ka, a) and _covers(kb, b) for ka, kb in EXCEPTIONS)


def _modules() -> dict:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def layer_of(name: str) -> str:
    parts = name.split(".")
    return PACKAGE_LAYER.get(parts[1], "api") if len(parts) > 1 else "api"


def imports_of(name: str, path: pathlib.Path) -> list:
    """``(line, imported module)`` for each jaxlite module ``name`` imports, anywhere in
    its file; ``from pkg import sub`` counts as an import of ``pkg.sub`` when ``sub`` is a
    module."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names
                    if a.name.split(".")[0] == "jaxlite"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "jaxlite":
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((node.lineno, sub if sub in MODULES else mod))
    return out


def violations() -> list:
    rank = {name: k for k, name in enumerate(LAYERS)}
    out = []
    for name, path in MODULES.items():
        mine = rank[layer_of(name)]
        for line, target in imports_of(name, path):
            if rank[layer_of(target)] < mine:
                out.append((name, target, line))
    return out


def test_the_top_level_holds_public_modules_only():
    # a private top-level module must be one of the base layer's (listed in PACKAGE_LAYER)
    tops = {n.split(".")[1] for n in MODULES if "." in n}
    private = sorted(t for t in tops if t.startswith("_") and t != "__main__")
    assert private == ["_traceback", "_unsupported_options"]
    assert all(layer_of(f"jaxlite.{t}") == "base" for t in private)


def test_no_module_imports_a_layer_above_its_own():
    found = violations()
    bad = [f"{a} (layer {layer_of(a)}, line {line}) imports {b} (layer {layer_of(b)})"
           for a, b, line in found if not _excepted(a, b)]
    assert not bad, "imports pointing up:\n  " + "\n  ".join(bad)


def test_every_exception_is_still_needed():
    found = violations()
    stale = sorted(k for k in EXCEPTIONS
                   if not any(_covers(k[0], a) and _covers(k[1], b) for a, b, _ in found))
    assert not stale, f"exceptions no module needs any more (remove them): {stale}"


@pytest.mark.parametrize("name", ["jaxlite.core.eager", "jaxlite.core.trace",
                                  "jaxlite.transforms.jit", "jaxlite.sharding"])
def test_the_walk_sees_function_local_imports(name):
    # the checker must see imports inside functions (most upward ones hide there)
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    local = [n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for n in ast.walk(f) if isinstance(n, ast.ImportFrom) and n.level]
    assert local, f"{name} has no function-local import to check the walk with"
    lines = {line for line, _ in imports_of(name, path)}
    assert all(n.lineno in lines for n in local)


def test_an_upward_import_inside_a_function_is_found(tmp_path):
    src = tmp_path / "fake.py"
    src.write_text("from ..config import config\n\n"
                   "def f():\n    from ..transforms import jit\n    from .. import numpy\n")
    found = imports_of("jaxlite.runtime.fake", src)
    assert found == [(1, "jaxlite.config"), (4, "jaxlite.transforms.jit"), (5, "jaxlite.numpy")]
    rank = {name: k for k, name in enumerate(LAYERS)}
    up = [t for _, t in found if rank[layer_of(t)] < rank[layer_of("jaxlite.runtime.fake")]]
    assert up == ["jaxlite.transforms.jit", "jaxlite.numpy"]
