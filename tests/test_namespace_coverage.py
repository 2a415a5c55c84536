"""Name coverage of jaxlite against real JAX 0.10.2: for the top-level namespace, ``lax``,
``nn``, ``random``, ``tree_util``, ``numpy`` and the numerics modules (``numpy.linalg``,
``numpy.fft``, ``lax.linalg``, ``ops``, ``nn.initializers``, ``flatten_util``, ``image``,
``example_libraries``, every ``scipy`` submodule), every public name of JAX's module is
either present in jaxlite's or listed below with the reason it is missing.

The test fails when
- a JAX name is missing from jaxlite without a reason here (add it, or give its reason);
- a name listed here is present in jaxlite after all (it was added: delete it from the
  list, so the list stays the truth);
- a name listed here is not in JAX's module (a typo, or JAX dropped it).

Both namespaces are read in a fresh interpreter (``dir()`` of a package also lists the
submodules imported so far, which would depend on the tests that ran before).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import jaxlite

MODULES = ["", ".lax", ".nn", ".random", ".tree_util", ".numpy",
           # the numerics issue (12)
           ".numpy.linalg", ".numpy.fft", ".lax.linalg", ".ops", ".nn.initializers",
           ".flatten_util", ".image", ".example_libraries.optimizers",
           ".example_libraries.stax", ".scipy", ".scipy.special", ".scipy.stats",
           ".scipy.linalg", ".scipy.signal", ".scipy.integrate", ".scipy.optimize",
           ".scipy.ndimage", ".scipy.interpolate", ".scipy.cluster.vq", ".scipy.fft",
           ".scipy.sparse.linalg"]

# Modules whose namespace also holds what they import (typing names, jax, functools...):
# only the names they define count.
OWN_NAMES_ONLY = {".example_libraries.optimizers", ".example_libraries.stax"}

_LISTER = """
import importlib, inspect, json, sys
out = {}
own_only = %r
for lib in ("jax", "jaxlite"):
    for mod in %r:
        try:
            m = importlib.import_module(lib + mod)
        except ImportError:
            out[lib + mod] = []
            continue
        names = [n for n in dir(m) if not n.startswith("_")]
        if mod in own_only:
            names = [n for n in names if not inspect.ismodule(getattr(m, n))
                     and getattr(getattr(m, n), "__module__", m.__name__) == m.__name__]
        out[lib + mod] = sorted(names)
json.dump(out, sys.stdout)
""" % (OWN_NAMES_ONLY, MODULES)


def _group(reason: str, names: str) -> dict:
    return {n: reason for n in names.split()}


# ---- reasons, by group ----------------------------------------------------------------------

SHARDING = ("sharding, meshes and SPMD partitioning: the sharding issue (14); jaxlite runs "
            "each program on one device")
MULTI_PROCESS = ("several processes: host_count/host_id/host_ids are JAX's deprecated "
                 "aliases of the process_* functions")
REFS = ("mutable array references (jax.ref, Pallas-style slices): not implemented; jaxlite "
        "arrays are immutable values")
INTERNALS = ("JAX's internal modules (its AD/batching/partial-eval interpreters, jaxlib, "
             "api_util); jaxlite's own internals live in jaxlite.core and "
             "jaxlite.transforms")
XLA_ONLY = ("XLA/StableHLO machinery with no counterpart without XLA: the C FFI, StableHLO "
            "export and serialisation, memory kinds (a jaxlite device has one memory)")
UNIMPLEMENTED_FLAGS = (
    "context managers of config flags jaxlite does not implement (one that silently did "
    "nothing would mislead): PRNG implementations, key-reuse checking, "
    "matmul precision (no effect on CPU, not modelled), dtype-promotion strictness, "
    "no_tracing/no_execution, thread guards, float16 reductions, jax2tf; "
    "jax_numpy_rank_promotion's 'warn' and 'raise' are refused by config, not yet enforced "
    "by jaxlite.numpy (issue 12)")
NOT_BUILT_API = ("transformation APIs not built yet: custom_vmap (jax.custom_batching), "
                 "the custom_derivatives module of custom-rule internals (SymbolicZero, "
                 "linear_call; custom_jvp/custom_vjp/custom_gradient/closure_convert are "
                 "top-level), fwd_and_bwd, make_user_context (jit cache contexts)")

TOP = {
    **_group(SHARDING, "Shard smap "
                       "auto_pcast remove_size_one_mesh_axis_from_type"),
    **_group(MULTI_PROCESS, "host_count host_id host_ids"),
    **_group(REFS, "Ref empty_ref free_ref freeze new_ref ref ds"),
    **_group(INTERNALS, "ad api_util interpreters lib"),
    **_group(XLA_ONLY, "ffi export memory"),
    **_group(UNIMPLEMENTED_FLAGS,
             "allow_f16_reductions array_garbage_collection_guard "
             "debug_key_reuse default_matmul_precision "
             "enable_custom_prng jax2tf_associative_scan_reductions "
             "legacy_prng_key no_execution no_tracing numpy_dtype_promotion "
             "numpy_rank_promotion softmax_custom_jvp thread_guard threefry_partitionable"),
    **_group(NOT_BUILT_API, "custom_batching custom_derivatives fwd_and_bwd "
                            "make_user_context"),
}

LAX_PRIMITIVE_OBJECTS = (
    "JAX's primitive objects: jaxlite declares its own primitives (jaxlite.primitives, "
    "listed by jaxlite.core.primitives()), each with its rules; code that binds or matches "
    "JAX's primitive objects is JAX-internal")
LAX_COLLECTIVES = "collectives and sharding constraints: the sharding issue (14)"
LAX_XLA_TYPES = ("XLA's option and dimension-number types (dot algorithms, accuracy, "
                 "RNG kinds): jaxlite's lax takes the plain "
                 "tuples and strings (GatherDimensionNumbers, ScatterDimensionNumbers and "
                 "GatherScatterMode exist: lax.gather/scatter take them)")
LAX_XLA_OPS = ("XLA-specific operations: ordering tokens, optimisation barriers, "
               "platform-dependent dispatch, composites, dynamic-shape staging")
LAX_XLA_RNG = ("XLA's RngUniform (the deprecated rng_uniform): its values are XLA's "
               "implementation on each platform; rng_bit_generator (XLA:CPU's bits) and "
               "jax.random's keys are implemented bit for bit")
LAX_FP8 = "scaled (fp8/mxfp) matmuls: XLA/GPU-specific"

LAX = {
    **_group(LAX_PRIMITIVE_OBJECTS, """
        abs_p acos_p acosh_p add_p after_all_p all_gather_p all_to_all_p and_p
        approx_top_k_p argmax_p argmin_p asin_p asinh_p atan2_p atan_p atanh_p axis_index_p
        bessel_i0e_p bessel_i1e_p bitcast_convert_type_p broadcast_in_dim_p cbrt_p ceil_p
        clamp_p clz_p complex_p concatenate_p cond_p conj_p conv_general_dilated_p
        convert_element_type_p copy_p cos_p cosh_p create_token_p cumlogsumexp_p cummax_p
        cummin_p cumprod_p cumsum_p dce_sink_p device_put_p digamma_p div_p dot_general_p
        dynamic_slice_p dynamic_update_slice_p eq_p eq_to_p erf_inv_p erf_p erfc_p exp2_p
        exp_p expm1_p fft_p floor_p gather_p ge_p gt_p igamma_grad_a_p igamma_p igammac_p
        imag_p integer_pow_p iota_p is_finite_p le_p le_to_p lgamma_p linear_solve_p
        log1p_p log_p logistic_p lt_p lt_to_p max_p min_p mul_p mulhi_p ne_p neg_p
        nextafter_p not_p optimization_barrier_p or_p pad_p pmax_p pmin_p polygamma_p
        population_count_p pow_p ppermute_p psum_p ragged_all_to_all_p real_p reduce_and_p
        reduce_max_p reduce_min_p reduce_or_p reduce_p reduce_precision_p reduce_prod_p
        reduce_sum_p reduce_window_max_p reduce_window_min_p reduce_window_p
        reduce_window_sum_p reduce_xor_p regularized_incomplete_beta_p rem_p reshape_p
        rev_p rng_bit_generator_p rng_uniform_p round_p rsqrt_p scan_p scatter_add_p
        scatter_max_p scatter_min_p scatter_mul_p scatter_p scatter_sub_p
        select_and_gather_add_p select_and_scatter_add_p select_and_scatter_p select_n_p
        sharding_constraint_p shift_left_p shift_right_arithmetic_p shift_right_logical_p
        sign_p sin_p sinh_p slice_p sort_p split_p sqrt_p square_p squeeze_p stack_p
        stage_p stop_gradient_p sub_p tan_p tanh_p tile_p top_k_p transpose_p unstack_p
        while_p xor_p zeta_p"""),
    **_group(LAX_COLLECTIVES, "precv psend ragged_all_to_all"),
    **_group(LAX_XLA_TYPES, "ConvGeneralDilatedDimensionNumbers DotAlgorithm "
                            "DotDimensionNumbers PrecisionLike"),
    **_group(LAX_XLA_OPS, "after_all create_token dce_sink optimization_barrier "
                          "platform_dependent composite stage shape_as_value"),
    **_group(LAX_XLA_RNG, "rng_uniform"),
    **_group(LAX_FP8, "scaled_dot"),
}

NN = {
    **_group("block-scaled (fp8/mxfp) matmuls: XLA/GPU-specific kernels (jaxlite has the "
             "fp8 dtypes, not these scaled-dot kernels)",
             "get_scaled_dot_general_config scaled_dot_general scaled_matmul"),
}

RANDOM = {
    **_group(LAX_PRIMITIVE_OBJECTS, "random_gamma_p"),
}


TREE_UTIL = {
    **_group("JAX's pytree registry object (jaxlite registers nodes in an optree namespace, "
             "jaxlite.tree_util.NAMESPACE)", "default_registry"),
}

NUMPY: dict = {}

MISSING = {"": TOP, ".lax": LAX, ".nn": NN, ".random": RANDOM, ".tree_util": TREE_UTIL,
           ".numpy": NUMPY}


@pytest.fixture(scope="module")
def namespaces():
    pytest.importorskip("jax")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    src = os.path.dirname(os.path.dirname(os.path.abspath(jaxlite.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in [env.get("PYTHONPATH")] if p])
    out = subprocess.run([sys.executable, "-c", _LISTER], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return {k: set(v) for k, v in json.loads(out.stdout).items()}


@pytest.mark.parametrize("mod", MODULES)
def test_every_missing_name_has_a_reason(namespaces, mod):
    jax_names, ours = namespaces["jax" + mod], namespaces["jaxlite" + mod]
    listed = MISSING.get(mod, {})
    unexplained = sorted(jax_names - ours - set(listed))
    assert not unexplained, (f"jax{mod} names missing from jaxlite{mod} with no reason in "
                             f"tests/test_namespace_coverage.py: {unexplained}")
    now_present = sorted(set(listed) & ours)
    assert not now_present, (f"jaxlite{mod} now has {now_present}: delete them from the "
                             f"missing list in tests/test_namespace_coverage.py")
    not_in_jax = sorted(set(listed) - jax_names)
    assert not not_in_jax, f"listed as missing but not in jax{mod}: {not_in_jax}"
    assert all(reason.strip() for reason in listed.values())


def test_top_level_names_this_issue_added_are_present(namespaces):
    """The names issue 10 asked for (tutorials use them) stay present."""
    want = {"jacobian", "pure_callback", "ensure_compile_time_eval", "linear_transpose",
            "custom_gradient", "named_call", "named_scope", "typeof", "float0",
            "checkpoint_policies", "print_environment_info", "debug_nans", "debug_infs",
            "stages", "profiler", "effects_barrier", "copy_to_host_async",
            "explain_cache_misses", "experimental", "typing", "version"}
    assert want <= namespaces["jaxlite"], sorted(want - namespaces["jaxlite"])
    assert want <= namespaces["jax"] | {"experimental"}
    import jaxlite.experimental
    import jaxlite.test_util
    assert callable(jaxlite.experimental.io_callback)
    assert callable(jaxlite.test_util.check_grads)
