"""The primitive-facts table test (core/primitive.py).

Every fact a compiler pass or a backend asks of a primitive (view, elementwise, reduction
monoid and identity, transcendental, foldable, in place, cost) is a typed field of the
primitive's declaration.  These tests fail when a primitive lacks a fact that a pass or a
backend asks for, when facts contradict each other or the primitive's own implementation,
when a reduction's identity differs from what JAX returns for an empty reduction, and when
a name-keyed table of primitives comes back under compiler/ or backends/.
"""
from __future__ import annotations

import ast
import inspect
import pathlib

import jax
import ml_dtypes
import numpy as np
import pytest

import jaxlite  # noqa: F401  (declares every primitive)
from jaxlite.backends.cpu import _ops as _cpu_ops
from jaxlite.core.avals import ShapedArray
from jaxlite.core.primitive import InPlace, Reduction, primitives
from jaxlite.ir.interpret import exact
from jaxlite.primitives import _f32
from jaxlite.primitives.kernel import MONOIDS

PRIMS = primitives()
SRC = pathlib.Path(jaxlite.__file__).parent

# ---- every fact is there, with its type ----------------------------------------------


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_every_primitive_declares_every_fact_with_its_type(name):
    p = PRIMS[name]
    assert isinstance(p.view, bool) and isinstance(p.strided_view, bool), name
    assert isinstance(p.elementwise, bool), name
    assert p.rename is None or callable(p.rename), name
    assert p.reduction is None or (isinstance(p.reduction, Reduction) and
                                   isinstance(p.reduction.monoid, str) and
                                   callable(p.reduction.identity)), name
    assert isinstance(p.transcendental, bool), name
    assert isinstance(p.extra_flops, int) and p.extra_flops >= 0, name
    assert isinstance(p.foldable, bool), name
    assert p.inplace is None or isinstance(p.inplace, InPlace), name
    assert p.local_params is None or callable(p.local_params), name
    assert isinstance(p.constraint, bool) and isinstance(p.host_callback, bool), name
    # the cost analysis asks every primitive for its flops
    assert callable(p.flops), f"{name} has no cost rule (flops)"


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_facts_are_consistent(name):
    p = PRIMS[name]
    if p.strided_view:
        assert p.view, f"{name}: a strided view is a view"
    if p.view or p.rename is not None:
        assert not p.multiple_results and not p.effectful, name
    if p.transcendental or p.extra_flops:
        assert p.elementwise and p.scalar_op, f"{name}: only elementwise ops are transcendental"
    if p.extra_flops:
        assert p.transcendental, f"{name}: extra flops are on top of a transcendental"
    if p.foldable:
        assert not p.effectful and p.kind not in ("call", "control"), \
            f"{name}: constant folding would run an effect, a call or control flow"
    if p.inplace is not None:
        assert not p.multiple_results and not p.effectful, name
        assert set(p.inplace.kinds) <= set("fciub"), name
        if p.inplace.ufunc is None:
            # a copy: a fresh array holding its operand's elements
            assert p.renames({}) and not p.view, name
        else:
            # a ufunc, or one of the float32 transcendentals (ufunc-like: ``nin``, ``out=``)
            assert isinstance(p.inplace.ufunc, np.ufunc) or \
                p.inplace.ufunc in _f32.FUNCTIONS.values(), name
            assert p.elementwise, name
    if p.reduction is not None:
        assert p.kind == "reduction" and not p.multiple_results, name
        assert "axes" in inspect.signature(p.impl).parameters, name
    if p.constraint:
        assert p.sharding is not None and not p.multiple_results, \
            f"{name}: a constraint says where its operand goes (a sharding rule)"
    if p.host_callback:
        assert not p.foldable, f"{name}: constant folding would call the host"
    if p.kind == "view":
        assert p.view, f"{name} is of kind 'view' but does not declare the view fact"
    if p.kind == "broadcast":
        assert p.strided_view, f"{name} broadcasts but does not declare a strided view"


# reductions of kind "reduction" that are not a monoid folded over ``axes``
NOT_MONOID = {
    "argmax": "returns an index, not a fold of the values",
    "argmin": "returns an index, not a fold of the values",
    "reduce_window_sum": "folds windows, not whole axes",
    "reduce_window_max": "folds windows, not whole axes",
    "reduce_window_min": "folds windows, not whole axes",
}


@pytest.mark.parametrize("name", sorted(n for n, p in PRIMS.items() if p.kind == "reduction"))
def test_every_reduction_declares_its_monoid(name):
    p = PRIMS[name]
    if name in NOT_MONOID:
        assert p.reduction is None, name
    else:
        assert p.reduction is not None, f"{name} lacks its reduction fact (monoid, identity)"


def test_the_fusable_reductions_are_the_kernel_monoids():
    fusable = {n: p.reduction.monoid for n, p in PRIMS.items()
               if p.reduction is not None and p.reduction.monoid in MONOIDS}
    assert fusable == {"reduce_sum": "add", "reduce_prod": "mul", "reduce_max": "max",
                       "reduce_min": "min"}


# ---- reductions: the monoid and its identity --------------------------------------------

_MONOID_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
                 "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
_JAX_REDUCE = {"reduce_sum": jax.lax.reduce_sum, "reduce_prod": jax.lax.reduce_prod,
               "reduce_max": jax.lax.reduce_max, "reduce_min": jax.lax.reduce_min,
               "reduce_and": jax.lax.reduce_and, "reduce_or": jax.lax.reduce_or,
               "reduce_xor": jax.lax.reduce_xor}
_DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int32,
           np.int64, np.uint8, np.uint32, np.bool_]


def _allowed(p, dt):
    try:
        p.abstract_eval(ShapedArray((0,), np.dtype(dt), False), axes=(0,))
    except TypeError:
        return False
    return True


def _reduction_cases():
    return [(n, np.dtype(dt)) for n, p in sorted(PRIMS.items()) if p.reduction is not None
            for dt in _DTYPES if _allowed(p, dt)]


@pytest.mark.parametrize("name,dt", _reduction_cases(), ids=str)
def test_reduction_identity_is_jax_empty_reduction(name, dt):
    p = PRIMS[name]
    ident = p.reduction.identity(dt)
    assert np.asarray(ident).dtype == dt
    # our own reduction of nothing returns it
    got = exact(p.impl(np.zeros((0,), dt), axes=(0,)), dt)    # as the interpreter keeps it
    assert np.asarray(got).tobytes() == np.asarray(ident).tobytes(), (name, dt, got, ident)
    if dt.itemsize == 8:
        return      # the oracle runs without x64: 64-bit types become 32-bit there
    want = np.asarray(_JAX_REDUCE[name](np.zeros((0,), dt), (0,)))
    assert want.dtype == dt
    assert np.asarray(ident).tobytes() == want.tobytes(), (name, dt, ident, want)


@pytest.mark.parametrize("name,dt", _reduction_cases(), ids=str)
def test_reduction_folds_with_its_monoid(name, dt):
    p = PRIMS[name]
    rng = np.random.default_rng(0)
    x = (rng.integers(0, 2, 5) if dt == np.bool_ else rng.integers(1, 4, 5)).astype(dt)
    op = _MONOID_UFUNC[p.reduction.monoid]
    # folding the identity in first changes nothing
    assert np.asarray(op(p.reduction.identity(dt), x[0])).astype(dt) == x[0], name
    # the reduction is the monoid folded over the values, starting at the identity
    want = p.reduction.identity(dt)
    for v in x:
        want = np.asarray(op(want, v)).astype(dt)
    assert exact(p.impl(x, axes=(0,)), dt) == want, name


@pytest.mark.parametrize("name,dt", [(n, d) for n, d in _reduction_cases()
                                     if d in _cpu_ops.SUPPORTED_DTYPES and
                                     PRIMS[n].reduction.monoid in MONOIDS], ids=str)
def test_native_backend_identity_agrees_with_the_declared_one(name, dt):
    p = PRIMS[name]
    assert _cpu_ops.identity(p.reduction.monoid, dt) == p.reduction.identity(dt)


# ---- views and renames: checked against the implementation ------------------------------

_X = np.arange(6, dtype=np.float32).reshape(2, 3)
# one sample equation per view / rename primitive: (params, renames it?)
SAMPLES = {
    "reshape": [(dict(new_sizes=(3, 2), dimensions=None), True),
                (dict(new_sizes=(3, 2), dimensions=(1, 0)), False)],
    "transpose": [(dict(permutation=(1, 0)), False)],
    "squeeze": [(dict(dimensions=()), True)],
    "slice": [(dict(start_indices=(0, 1), limit_indices=(2, 3), strides=None), False)],
    "rev": [(dict(dimensions=(1,)), False)],
    "broadcast_in_dim": [(dict(shape=(4, 2, 3), broadcast_dimensions=(1, 2)), False)],
    "stop_gradient": [({}, True)],
    "copy": [({}, True)],
    # sharding annotations: identities (a mesh of the one device of a plain test process)
    "sharding_constraint": [(dict(sharding=jaxlite.NamedSharding(
        jaxlite.make_mesh((1,), ("x",)), jaxlite.P("x")), layout=None,
        unconstrained_dims=frozenset(), context_mesh=None), True)],
    "reshard": [(dict(dst_sharding=jaxlite.NamedSharding(
        jaxlite.make_mesh((1,), ("x",)), jaxlite.P("x")), unconstrained_dims=frozenset()),
        True)],
}


def test_every_view_or_rename_primitive_has_a_sample_here():
    needing = {n for n, p in PRIMS.items() if p.view or p.rename is not None}
    assert needing == set(SAMPLES), "add a SAMPLES row for each view/rename primitive"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_view_and_rename_facts_match_the_implementation(name):
    p = PRIMS[name]
    for params, renames in SAMPLES[name]:
        # a view op has exactly one operand: its rule and implementation take one array
        aval = p.abstract_eval(ShapedArray(_X.shape, _X.dtype, False), **params)
        out = p.impl(_X, **params)
        assert out.shape == aval.shape and out.dtype == aval.dtype, name
        if p.view and (name != "reshape" or params["dimensions"] is None):
            assert np.shares_memory(out, _X), f"{name} declares a view but copies"
        if not p.view:
            assert not np.shares_memory(out, _X), f"{name} shares memory but is no view"
        if p.strided_view:
            assert not out.flags.c_contiguous, f"{name}: a strided view is not contiguous"
        assert p.renames(params) == renames, (name, params)
        if renames:
            assert out.dtype == _X.dtype and np.array_equal(out.ravel(), _X.ravel()), name


# ---- in place: the declared ufunc computes exactly what the implementation does ----------

def _inplace_cases():
    cases = []
    for n, p in sorted(PRIMS.items()):
        if p.inplace is None or p.inplace.ufunc is None:
            continue
        for dt in map(np.dtype, _DTYPES + [np.complex64]):
            half = dt in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
            if (p.inplace.half if half else dt.kind in p.inplace.kinds):
                cases.append((n, dt))
    return cases


@pytest.mark.parametrize("name,dt", _inplace_cases(), ids=str)
def test_inplace_ufunc_is_bit_exact(name, dt):
    p = PRIMS[name]
    ufunc = p.inplace.ufunc
    rng = np.random.default_rng(1)
    xs = []
    for _ in range(ufunc.nin):
        if dt.kind == "b":
            x = rng.integers(0, 2, 64).astype(dt)
        elif dt.kind in "iu":
            x = rng.integers(1, 100, 64).astype(dt)
        elif dt.kind == "c":
            x = (rng.uniform(-3, 3, 64) + 1j * rng.uniform(-3, 3, 64)).astype(dt)
        else:
            x = rng.uniform(-3, 3, 64).astype(dt)
        xs.append(x)
    with np.errstate(all="ignore"):
        want = exact(p.impl(*xs), dt)       # the result as the interpreter keeps it
        buf = np.empty(want.shape, dt)
        got = ufunc(*xs, out=buf)
    assert got is buf
    assert got.tobytes() == want.tobytes(), name


def test_inplace_table_matches_the_interpreter_rules():
    # what the interpreter's buffer reuse relies on, stated once: comparisons (bool result)
    # never run in place, float max/min never (signed zeros), integer division never
    assert PRIMS["div"].inplace.kinds == "f"
    assert "f" not in PRIMS["max"].inplace.kinds and "f" not in PRIMS["min"].inplace.kinds
    assert all(PRIMS[n].inplace is None for n in ("eq", "ne", "lt", "le", "gt", "ge"))
    assert PRIMS["copy"].inplace == InPlace(None)


# ---- constant folding and cost facts ----------------------------------------------------

def test_generators_and_copies_are_not_folded():
    assert not any(PRIMS[n].foldable for n in ("iota", "broadcast_in_dim", "copy"))
    assert all(not p.foldable for p in PRIMS.values()
               if p.effectful or p.kind in ("call", "control"))
    assert PRIMS["add"].foldable and PRIMS["reduce_sum"].foldable


def test_transcendentals_are_counted_as_jax_counts_them():
    # XLA's cost analysis counts one transcendental per element of each of these
    import jaxlite as jl
    import jaxlite.numpy as jnp
    x = np.linspace(0.1, 0.9, 8, dtype=np.float32)
    for name, f, jf in [("exp", jnp.exp, jax.numpy.exp), ("tanh", jnp.tanh, jax.numpy.tanh),
                        ("log", jnp.log, jax.numpy.log),
                        ("logistic", jl.nn.sigmoid, jax.nn.sigmoid)]:
        assert PRIMS[name].transcendental
        ours = jl.jit(f).lower(x).compile().cost_analysis()
        theirs = jax.jit(jf).lower(x).compile().cost_analysis()
        if isinstance(theirs, list):
            theirs = theirs[0]
        assert ours["transcendentals"] == theirs["transcendentals"] == 8.0, name
    assert not PRIMS["add"].transcendental and not PRIMS["mul"].transcendental


# ---- no name-keyed table of primitives under compiler/ or backends/ ---------------------

# modules whose tables are keyed by a primitive's declared scalar op (``scalar_op``) or a
# reduction's declared monoid, never by primitive name: the native backend's scalar code
_SCALAR_OP_MODULES = {"backends/cpu/_ops.py", "backends/cpu/_vecmath.py"}


def _sources():
    for sub in ("compiler", "backends"):
        for path in sorted((SRC / sub).rglob("*.py")):
            rel = path.relative_to(SRC).as_posix()
            if rel not in _SCALAR_OP_MODULES:
                yield rel, ast.parse(path.read_text())


def _strs(node):
    """Primitive names among the keys or elements of a literal collection in ``node`` (a
    dict's values are what it maps to, not what it is keyed by)."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) and node.value in PRIMS else []
    if isinstance(node, ast.Dict):
        return [s for k in node.keys if k is not None for s in _strs(k)]
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return [s for e in node.elts for s in _strs(e)]
    if isinstance(node, ast.Call):
        return [s for a in node.args for s in _strs(a)]
    return []


def test_no_name_keyed_primitive_table_under_compiler_or_backends():
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            # module-level tables: a dict/set/list/tuple keyed by primitive names
            if isinstance(node, ast.Module):
                for stmt in node.body:
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _strs(stmt.value):
                        found.append(f"{rel}:{stmt.lineno} table of primitive names")
            # comparisons of a name against primitive names (``prim.name == "scan"``) or
            # membership of a name in a table (``prim.name in _TABLE``)
            if isinstance(node, ast.Compare):
                sides = [node.left] + node.comparators
                if any(isinstance(s, ast.Attribute) and s.attr == "name" for s in sides) \
                        and (any(_strs(s) for s in sides) or
                             any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)):
                    found.append(f"{rel}:{node.lineno} compares a primitive's name")
            # lookups by name: ``TABLE[prim.name]`` / ``TABLE.get(prim.name)``
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Attribute) \
                    and node.slice.attr == "name":
                found.append(f"{rel}:{node.lineno} looks a table up by name")
    assert not found, "\n".join(found)


def test_the_partitioners_facts_are_set_where_declared():
    # the SPMD partitioner runs a program holding a host callback once (not per device),
    # moves a constraint's operand instead of running it, and rewrites the sizes in the
    # parameters of the shape primitives for the shards: each from a declared fact
    assert {n for n, p in PRIMS.items() if p.host_callback} == \
        {"pure_callback", "io_callback", "debug_callback"}
    assert {n for n, p in PRIMS.items() if p.constraint} == \
        {"sharding_constraint", "reshard", "reshard_tangent", "reshard_like"}
    assert {n for n, p in PRIMS.items() if p.local_params is not None} >= \
        {"reshape", "broadcast_in_dim", "slice", "dynamic_slice", "gather", "scatter"}
    # a reshape of f32[8,4] split 2 ways along its rows into f32[4,2,4]: the local one
    # reshapes f32[4,4] into f32[2,2,4]
    got = PRIMS["reshape"].local_params({"new_sizes": (4, 2, 4), "dimensions": None},
                                        [(("x",), ())], [(4, 4)], [(2, 2, 4)])
    assert got == {"new_sizes": (2, 2, 4), "dimensions": None}
    # a slice that keeps the sharded rows whole and cuts the columns
    got = PRIMS["slice"].local_params(
        {"start_indices": (0, 1), "limit_indices": (8, 3), "strides": None},
        [(("x",), ())], [(4, 4)], [(4, 2)])
    assert got["limit_indices"] == (4, 3) and got["start_indices"] == (0, 1)
