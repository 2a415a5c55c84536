"""No public function accepts a parameter and ignores it (issue 33, parameters).

Walks every public function of jaxlite's public namespaces (the functions, the ``jnp``
ufuncs' methods and the Array methods) and checks, for each parameter, that the body reads
it: an AST scan of the function's source (through ``__wrapped__`` wrappers; a body calling
``locals()``/``vars()`` forwards everything).  The few parameters that are deliberately
left unread are in ``ALLOWED`` with their reason; ``ALLOWED`` may not hold an entry that
is read after all.

Where JAX refuses a parameter (``out=``, NumPy-only options, implementations the CPU lacks),
jaxlite refuses it too: ``REFUSED`` calls both with a non-default value and compares the
exception type, and checks that jaxlite's message names the parameter.  The parameters
this work implemented are checked by value against real JAX below.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from oracle import assert_like_jax

NAMESPACES = ["jaxlite", "jaxlite.numpy", "jaxlite.numpy.linalg", "jaxlite.numpy.fft",
              "jaxlite.lax", "jaxlite.lax.linalg", "jaxlite.nn", "jaxlite.nn.initializers",
              "jaxlite.random", "jaxlite.tree_util", "jaxlite.image", "jaxlite.scipy.special",
              "jaxlite.scipy.stats", "jaxlite.scipy.linalg", "jaxlite.scipy.signal",
              "jaxlite.scipy.integrate", "jaxlite.scipy.optimize", "jaxlite.scipy.ndimage",
              "jaxlite.scipy.interpolate", "jaxlite.scipy.cluster.vq", "jaxlite.scipy.fft",
              "jaxlite.scipy.sparse.linalg"]

_JAX_IGNORES = "real JAX accepts and ignores it too (a SciPy/NumPy option with no effect)"
_PROMISE = ("a promise about the input that only permits a faster algorithm: the result is "
            "the same while it holds (JAX: undefined when it does not)")

#: (function's module.qualname, parameter) -> why it is accepted and not read
ALLOWED = {
    # SciPy's memory/validation options: JAX `del`s them as well
    **{("jaxlite.scipy.linalg." + f, p): _JAX_IGNORES for f, ps in {
        "cho_factor": "overwrite_a check_finite", "cho_solve": "overwrite_b check_finite",
        "cholesky": "overwrite_a check_finite", "det": "overwrite_a check_finite",
        "eigh": "overwrite_a overwrite_b turbo check_finite",
        "hessenberg": "overwrite_a check_finite", "inv": "overwrite_a check_finite",
        "lu": "overwrite_a check_finite", "lu_factor": "overwrite_a check_finite",
        "lu_solve": "overwrite_b check_finite", "qr": "overwrite_a lwork check_finite",
        "qr_multiply": "overwrite_a overwrite_c", "rsf2csf": "check_finite",
        "solve": "overwrite_a overwrite_b debug check_finite",
        "solve_triangular": "overwrite_b debug check_finite",
        "svd": "overwrite_a check_finite lapack_driver",
        "expm_frechet": "method"}.items() for p in ps.split()},
    ("jaxlite.scipy.cluster.vq.vq", "check_finite"): _JAX_IGNORES,
    ("jaxlite.numpy._ufuncs.nan_to_num", "copy"): _JAX_IGNORES + " (`del copy`)",
    ("jaxlite.numpy._sorting.unique", "sorted"): _JAX_IGNORES + " (`del sorted`)",
    ("jaxlite.numpy._shape.reshape", "copy"):
        "arrays are immutable; JAX also returns the same array for copy=True",
    ("jaxlite.nn.initializers.zeros", "key"): "a constant initializer: JAX ignores the key",
    ("jaxlite.nn.initializers.ones", "key"): "a constant initializer: JAX ignores the key",
    ("jaxlite.lax.linalg.qr", "use_magma"): "a GPU (MAGMA) choice: JAX on CPU ignores it",
    ("jaxlite.lax.linalg.qdwh", "is_hermitian"):
        "JAX only requires it to be static; the iteration does not depend on it",
    ("jaxlite.transforms.shard_map.pmap", "donate_argnums"):
        "donation: JAX on CPU does not donate either (it warns)",
    ("jaxlite.core.placement.device_put", "donate"):
        "donation: JAX on CPU keeps the source valid too",
    ("jaxlite.core.placement.device_put", "src"):
        "the source's placement: the Array already knows it (one process)",
    ("jaxlite.lax._callback.pure_callback", "sharding"):
        "the callback's output sharding: jaxlite runs callbacks on the host, unsharded",
    ("jaxlite.transforms.autodiff.checkpoint", "policy"):
        "README, known differences: jaxlite's checkpoint recomputes everything whatever "
        "the policy; gradients are unchanged",
    # promises that only permit a faster algorithm
    ("jaxlite.numpy._shape.take", "unique_indices"): _PROMISE,
    ("jaxlite.numpy._shape.take", "indices_are_sorted"): _PROMISE,
    ("jaxlite.lax._gather_scatter.gather", "unique_indices"): _PROMISE,
    ("jaxlite.lax._gather_scatter.gather", "indices_are_sorted"): _PROMISE,
    ("jaxlite.numpy._setops.isin", "assume_unique"): _PROMISE,
    ("jaxlite.numpy._setops.intersect1d", "assume_unique"): _PROMISE,
    ("jaxlite.numpy._setops.setdiff1d", "assume_unique"): _PROMISE,
    ("jaxlite.numpy._setops.setxor1d", "assume_unique"): _PROMISE,
    ("jaxlite.scipy.linalg.expm", "upper_triangular"): _PROMISE,
    ("jaxlite.scipy.optimize.minimize", "tol"): _JAX_IGNORES + " (JAX never reads it)",
    ("jaxlite.scipy.linalg.polar", "max_iterations"):
        _JAX_IGNORES + " (JAX does not pass it to its QDWH iteration)",
    ("jaxlite.scipy.linalg.polar", "eps"):
        "the QDWH iteration's stopping tolerance: the factors here come from the SVD, exact "
        "to working precision (JAX 0.10.2 fails on any eps with method='qdwh', tracing it)",
    ("jaxlite.scipy.linalg.eigh_tridiagonal", "tol"):
        "a bound on JAX's bisection error: the eigenvalues here come from LAPACK's solver, "
        "accurate to working precision, so within any tol",
    ("jaxlite.scipy.linalg.eigh_tridiagonal", "key"):
        "seeds JAX's inverse iteration: the eigenvectors here come from LAPACK's solver and "
        "need no seed (eigenvectors are unique up to sign either way)",
    # the one parameter jaxlite lacks: listed so that it stays visible
    ("jaxlite.transforms.vmap.vmap", "spmd_axis_name"):
        "KNOWN GAP: in JAX it adds a mesh axis to the batch dimension of sharding "
        "constraints inside the vmapped function; jaxlite's batched constraints do not "
        "shard the batch dimension (values are the same; only the placement differs)",
}


# ---- the walk -----------------------------------------------------------------------------

def _unwrap(f):
    seen = set()
    while id(f) not in seen:
        seen.add(id(f))
        g = getattr(f, "__wrapped__", None)
        if g is None or not callable(g):
            break
        f = g
    return f


def _public_functions():
    """{module.qualname: function} for every public function, ufunc method and Array
    method of ``NAMESPACES``."""
    out = {}

    def add(f):
        f = _unwrap(f)
        if inspect.isfunction(f):
            out.setdefault(f"{f.__module__}.{f.__qualname__}", f)

    for name in NAMESPACES:
        mod = importlib.import_module(name)
        for attr in dir(mod):
            if attr.startswith("_"):
                continue
            obj = getattr(mod, attr)
            if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
                continue
            add(obj)
            if not inspect.isroutine(obj):      # a callable object such as a jnp.ufunc
                for meth in ("__call__", "reduce", "accumulate", "outer", "at", "reduceat"):
                    add(getattr(type(obj), meth, None))
    array_type = type(jnp.ones(1))
    for attr in dir(array_type):
        if not attr.startswith("_"):
            obj = inspect.getattr_static(array_type, attr)
            if not isinstance(obj, property):
                add(getattr(array_type, attr))
    return out


def _unread_params(fn) -> list:
    """Parameters of ``fn`` that its body never reads (``del x`` is not a read)."""
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return []
    if not isinstance(node, ast.FunctionDef):
        return []
    reads = set()
    for stmt in node.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Del):
                reads.add(n.id)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id in ("locals", "vars"):
                return []
    a = node.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    return [p for p in params if p not in reads and p not in ("self", "cls")
            and not p.startswith("_")]


def test_the_walk_sees_the_namespaces():
    fns = _public_functions()
    assert len(fns) > 800
    for name in ("jaxlite.numpy._reductions.sum", "jaxlite.numpy._functional.ufunc.__call__",
                 "jaxlite.numpy._methods._astype", "jaxlite.scipy.linalg.solve",
                 "jaxlite.transforms.autodiff.grad"):
        assert name in fns


def test_every_parameter_is_read_or_allowed():
    unread = {(q, p) for q, fn in _public_functions().items() for p in _unread_params(fn)}
    ignored = sorted(unread - ALLOWED.keys())
    assert not ignored, f"parameters accepted and never read: {ignored}"
    stale = sorted(ALLOWED.keys() - unread)
    assert not stale, f"ALLOWED entries that are read after all (delete them): {stale}"


def test_allowed_reasons():
    for key, why in ALLOWED.items():
        assert why and len(why) > 20, key


# ---- refused as JAX refuses ---------------------------------------------------------------

def _x(n):
    return n.arange(6.0).reshape(2, 3)


_OUT_FUNCS = ("sum prod max min amax amin ptp all any mean var std argmax argmin nansum "
              "nanprod nanmax nanmin nanargmax nanargmin nanmean nanvar nanstd cumsum cumprod "
              "nancumsum nancumprod").split()

REFUSED = {
    **{f"{f}-out": ("out", lambda j, n, f=f: getattr(n, f)(_x(n), out=n.zeros(())))
       for f in _OUT_FUNCS},
    **{f"{f}-{p}": (p, lambda j, n, f=f, p=p: getattr(n, f)(
        _x(n), *(() if f.endswith("median") else (0.5,)),
        **{p: n.zeros(()) if p == "out" else True}))
       for f in "quantile nanquantile percentile nanpercentile median nanmedian".split()
       for p in ("out", "overwrite_input")},
    "Array.sum-out": ("out", lambda j, n: _x(n).sum(out=n.zeros(()))),
    "einsum-out": ("out", lambda j, n: n.einsum("ij->", _x(n), out=n.zeros(()))),
    "outer-out": ("out", lambda j, n: n.outer(_x(n), _x(n), out=n.zeros((6, 6)))),
    "trace-out": ("out", lambda j, n: n.trace(_x(n), out=n.zeros(()))),
    "ufunc-out": ("out", lambda j, n: n.add(_x(n), 1.0, out=_x(n))),
    "ufunc-where": ("where", lambda j, n: n.multiply(_x(n), 2.0, where=_x(n) > 1)),
    "sort-kind": ("kind", lambda j, n: n.sort(_x(n), kind="stable")),
    "argsort-kind": ("kind", lambda j, n: n.argsort(_x(n), kind="quicksort")),
    "sort-order": ("order", lambda j, n: n.sort(_x(n), order="f0")),
    "argsort-order": ("order", lambda j, n: n.argsort(_x(n), order="f0")),
    "digitize-method": ("method", lambda j, n: n.digitize(_x(n), n.arange(3.0),
                                                          method="bogus")),
    "isin-method": ("method", lambda j, n: n.isin(_x(n), _x(n), method="bogus")),
    "grad-reduce_axes": ("reduce_axes", lambda j, n: j.grad(n.sum, reduce_axes=("i",))),
    "value_and_grad-reduce_axes": ("reduce_axes", lambda j, n: j.value_and_grad(
        n.sum, reduce_axes=("i",))),
    "process_index-backend": ("backend", lambda j, n: j.process_index(backend="bogus")),
    "process_count-backend": ("backend", lambda j, n: j.process_count(backend="bogus")),
    "pmap-backend": ("backend", lambda j, n: j.pmap(n.sum, backend="bogus")(_x(n)[:1])),
    "eig-implementation": ("implementation", lambda j, n: j.lax.linalg.eig(
        n.eye(2), implementation=j.lax.linalg.EigImplementation.CUSOLVER)),
    "eig-use_magma": ("use_magma", lambda j, n: j.lax.linalg.eig(n.eye(2), use_magma=True)),
    "eigh-implementation": ("implementation", lambda j, n: j.lax.linalg.eigh(
        n.eye(2), implementation=j.lax.linalg.EighImplementation.JACOBI)),
    "eigh-implementation-qdwh": ("implementation", lambda j, n: j.lax.linalg.eigh(
        n.eye(2), implementation=j.lax.linalg.EighImplementation.QDWH)),
    "svd-algorithm": ("algorithm", lambda j, n: j.lax.linalg.svd(
        n.eye(2), algorithm=j.lax.linalg.SvdAlgorithm.JACOBI)),
    "detrend-overwrite_data": ("overwrite_data", lambda j, n: j.scipy.signal.detrend(
        n.arange(4.0), overwrite_data=True)),
    "pmap-axis_size": ("axis_size", lambda j, n: j.pmap(n.sum, axis_size=2)(_x(n)[:1])),
    "reduce-out_sharding": ("out_sharding", lambda j, n: j.lax.reduce(
        n.arange(4.0), 0.0, j.lax.add, (0,),
        out_sharding=j.sharding.SingleDeviceSharding(j.devices()[0]))),
    "conv-out_sharding": ("out_sharding", lambda j, n: j.lax.conv_general_dilated(
        n.ones((1, 1, 3)), n.ones((1, 1, 2)), (1,), "VALID",
        out_sharding=j.sharding.SingleDeviceSharding(j.devices()[0]))),
    "ragged_dot-out_sharding": ("out_sharding", lambda j, n: j.lax.ragged_dot(
        n.ones((3, 2)), n.ones((2, 2, 2)), n.array([1, 2]),
        out_sharding=j.sharding.SingleDeviceSharding(j.devices()[0]))),
    "eigh_tridiagonal-select": ("select", lambda j, n: j.scipy.linalg.eigh_tridiagonal(
        n.ones(3), n.ones(2), eigvals_only=True, select="v", select_range=(0.0, 1.0))),
    "eigh_tridiagonal-select_range": ("select_range", lambda j, n: j.scipy.linalg
                                      .eigh_tridiagonal(n.ones(3), n.ones(2),
                                                        eigvals_only=True, select="i")),
    "svd-algorithm-polar": ("algorithm", lambda j, n: j.lax.linalg.svd(
        n.eye(2), algorithm=j.lax.linalg.SvdAlgorithm.POLAR)),
}


def _raised(call, j, n):
    try:
        call(j, n)
    except Exception as e:     # noqa: BLE001 -- compared by type
        return e
    return None


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_like_jax(rjax, rjnp, case):
    param, call = REFUSED[case]
    want = _raised(call, rjax, rjnp)
    assert want is not None, f"real JAX accepts {case}: not a refusal"
    got = _raised(call, jax, jnp)
    assert got is not None, f"jaxlite accepted {case} silently (JAX: {want!r})"
    assert type(got) is type(want), f"{case}: {type(got).__name__}: {got} != JAX's {want!r}"
    assert param in str(got), f"{case}: the message does not name {param!r}: {got}"


@pytest.mark.parametrize("f", _OUT_FUNCS)
def test_out_none_is_accepted(rjnp, f):
    assert_like_jax(getattr(jnp, f)(_x(jnp), out=None), getattr(rjnp, f)(_x(rjnp), out=None),
                    rtol=1e-6, atol=1e-6)


def test_refused_under_jit(rjnp):
    """The refusal happens while tracing too (before any result is made)."""
    with pytest.raises(NotImplementedError, match="'out'"):
        jax.jit(lambda v: jnp.sum(v, out=v))(_x(jnp))


# ---- parameters implemented here, by value against real JAX ---------------------------------

def test_matrix_rank_hermitian(rjnp):
    m = np.array([[0.0, 1.0], [-1.0, 0.0]], np.float32)    # rank 2, lower triangle: rank 0
    for herm in (False, True):
        assert_like_jax(jnp.linalg.matrix_rank(m, hermitian=herm),
                        rjnp.linalg.matrix_rank(m, hermitian=herm))
    batch = np.stack([m, np.eye(2, dtype=np.float32)])
    assert_like_jax(jnp.linalg.matrix_rank(batch, hermitian=True),
                    rjnp.linalg.matrix_rank(batch, hermitian=True))


@pytest.mark.parametrize("astype", [lambda n, x, **k: n.astype(x, x.dtype, **k),
                                    lambda n, x, **k: x.astype(x.dtype, **k)])
def test_astype_copy(rjnp, astype):
    for n in (jnp, rjnp):
        x = n.arange(3.0)
        y = astype(n, x, copy=True)
        assert y is not x
        x.delete()
        np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0])


def test_array_astype_device(rjax):
    dev = jax.devices()[-1]
    y = jnp.arange(3.0).astype(jnp.int32, device=dev)
    assert y.devices() == {dev} and y.committed
    r = rjax.numpy.arange(3.0).astype(rjax.numpy.int32, device=rjax.devices()[-1])
    assert_like_jax(y, r)


@pytest.mark.parametrize("method", [None, "scan", "scan_unrolled", "sort", "compare_all"])
@pytest.mark.parametrize("right", [False, True])
def test_digitize_method(rjnp, method, right):
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 9.0], np.float32)
    for bins in (np.array([0.0, 1.0, 2.5, 3.0], np.float32),
                 np.array([3.0, 2.5, 1.0, 0.0], np.float32)):
        assert_like_jax(jnp.digitize(x, bins, right, method=method),
                        rjnp.digitize(x, bins, right, method=method))


@pytest.mark.parametrize("method", ["auto", "compare_all", "binary_search", "sort"])
def test_isin_method(rjnp, method):
    e, t = np.array([[1, 5], [3, 7]], np.int32), np.array([7, 1, 2], np.int32)
    assert_like_jax(jnp.isin(e, t, method=method), rjnp.isin(e, t, method=method))


def test_backend_names(rjax):
    assert jax.process_count(backend="cpu") == rjax.process_count(backend="cpu") == 1
    assert jax.process_index(backend="cpu") == rjax.process_index(backend="cpu") == 0
    x = np.arange(3.0, dtype=np.float32)[None]
    assert_like_jax(jax.pmap(jnp.sum, backend="cpu")(x), rjax.pmap(rjax.numpy.sum,
                                                                   backend="cpu")(x))


@pytest.mark.parametrize("case", [
    lambda j, n: j.lax.linalg.eigh(n.array([[2.0, 1.0], [1.0, 3.0]]),
                                   implementation=j.lax.linalg.EighImplementation.QR)[1],
    lambda j, n: j.lax.linalg.svd(n.array([[2.0, 1.0], [0.0, 3.0]]), compute_uv=False,
                                  algorithm=j.lax.linalg.SvdAlgorithm.QR),
    lambda j, n: j.lax.linalg.svd(n.array([[2.0, 1.0], [0.0, 3.0]]), compute_uv=False,
                                  algorithm=j.lax.linalg.SvdAlgorithm.DIVIDE_AND_CONQUER),
    lambda j, n: j.lax.linalg.eig(n.array([[2.0, 0.0], [0.0, 3.0]]), use_magma=False,
                                  implementation=j.lax.linalg.EigImplementation.LAPACK)[0]])
def test_cpu_implementations_accepted(rjax, rjnp, case):
    assert_like_jax(case(jax, jnp), case(rjax, rjnp), rtol=1e-5, atol=1e-5)


# ---- allowed parameters: a non-default value gives JAX's result -------------------------------

_A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
_B = np.array([[1.0], [2.0], [3.0]], np.float32)


@pytest.mark.parametrize("case", [
    lambda j, n: j.scipy.linalg.solve(_A, _B, overwrite_a=True, overwrite_b=True, debug=True,
                                      check_finite=False),
    lambda j, n: j.scipy.linalg.inv(_A, overwrite_a=True, check_finite=False),
    lambda j, n: j.scipy.linalg.det(_A, overwrite_a=True, check_finite=False),
    lambda j, n: j.scipy.linalg.cholesky(_A, overwrite_a=True, check_finite=False),
    lambda j, n: j.scipy.linalg.eigh(_A, eigvals_only=True, overwrite_a=True, turbo=False,
                                     check_finite=False),
    lambda j, n: j.scipy.linalg.svd(_A, compute_uv=False, overwrite_a=True,
                                    check_finite=False, lapack_driver="gesvd"),
    lambda j, n: j.scipy.linalg.solve_triangular(_A, _B, lower=True, overwrite_b=True,
                                                 debug=True, check_finite=False),
    lambda j, n: n.nan_to_num(n.array([np.nan, 1.0]), copy=False),
    lambda j, n: n.unique(n.array([3, 1, 3]), sorted=False),
    lambda j, n: n.polyval(n.arange(3.0), _B[:, 0], unroll=2),
    lambda j, n: n.take(n.arange(5.0), n.array([0, 2, 4]), unique_indices=True,
                        indices_are_sorted=True),
    lambda j, n: n.setdiff1d(n.array([1, 2, 3]), n.array([2]), assume_unique=True),
    lambda j, n: n.intersect1d(n.array([1, 2, 3]), n.array([2, 3]), assume_unique=True),
    lambda j, n: n.isin(n.array([1, 2, 3]), n.array([2]), assume_unique=True),
    lambda j, n: j.scipy.linalg.expm(n.array([[1.0, 2.0], [0.0, 0.5]]), upper_triangular=True),
    lambda j, n: j.nn.initializers.ones(j.random.key(1), (2,), n.float32),
    lambda j, n: j.lax.linalg.qr(_A, use_magma=True)[1],
])
def test_allowed_values_match_jax(rjax, rjnp, case):
    got, want = case(jax, jnp), case(rjax, rjnp)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)


# ---- more parameters implemented here ---------------------------------------------------------

def _scipy_linalg():
    """(jaxlite.scipy.linalg, jax.scipy.linalg); skips without real JAX."""
    pytest.importorskip("jax")
    return (importlib.import_module("jaxlite.scipy.linalg"),
            importlib.import_module("jax.scipy.linalg"))


_D = np.array([2.0, 1.0, 3.0, 0.5], np.float32)
_E = np.array([0.3, 0.2, 0.1], np.float32)


@pytest.mark.parametrize("rng", [(0, 0), (1, 2), (0, 3), (3, 3)])
def test_eigh_tridiagonal_select_range(rng):
    lite, real = _scipy_linalg()
    got = lite.eigh_tridiagonal(_D, _E, eigvals_only=True, select="i", select_range=rng)
    want = real.eigh_tridiagonal(_D, _E, eigvals_only=True, select="i", select_range=rng)
    assert_like_jax(got, want, rtol=1e-5, atol=1e-5)
    v = lite.eigh_tridiagonal(_D, _E, select="i", select_range=rng)[1]
    t = np.diag(_D) + np.diag(_E, 1) + np.diag(_E, -1)
    np.testing.assert_allclose(t @ np.asarray(v), np.asarray(v) * np.asarray(got),
                               atol=1e-5)


@pytest.mark.parametrize("b00, tol", [(1.0, 1e-8), (1.0, 2.5), (-1.0 + 1e-4, 1e-3)])
def test_solve_sylvester_tol(b00, tol):
    """NaN where some eigenvalue sum is below ``tol`` (sums 2, 3, 4, 5 for b00=1; about
    1e-4 for b00=-1+1e-4)."""
    lite, real = _scipy_linalg()
    a = np.array([[1.0, 2.0], [0.0, 3.0]], np.float32)
    b = np.array([[b00, 0.0], [1.0, 2.0]], np.float32)
    c = np.ones((2, 2), np.float32)
    got = lite.solve_sylvester(a, b, c, tol=tol)
    want = real.solve_sylvester(a, b, c, tol=tol)
    assert_like_jax(got, want, rtol=1e-3, atol=1e-5)


def test_checkpoint_static_argnums(rjax):
    def f(v, n):
        return v * n if n > 0 else -v     # Python control flow on the static argument
    for argnums in ((1,), 1, -1):
        for j in (jax, rjax):
            assert float(j.grad(j.checkpoint(f, static_argnums=argnums))(2.0, 3)) == 3.0
            assert float(j.grad(j.checkpoint(f, static_argnums=argnums))(2.0, 0)) == -1.0
    g = jax.checkpoint(lambda v, n=1.0: v * n)
    assert float(jax.grad(g)(2.0, n=3.0)) == float(rjax.grad(
        rjax.checkpoint(lambda v, n=1.0: v * n))(2.0, n=3.0)) == 3.0


def test_pmap_axis_size(rjax):
    x = np.arange(3.0, dtype=np.float32)[None]
    assert_like_jax(jax.pmap(jnp.sum, axis_size=1)(x),
                    rjax.pmap(rjax.numpy.sum, axis_size=1)(x))


def _placement(a):
    return type(a.sharding).__name__, a.committed, {d.id for d in a.devices()}


@pytest.mark.parametrize("kind", ["named", "single"])
def test_lax_full_sharding(rjax, kind):
    def make(j):
        if kind == "single":
            return j.sharding.SingleDeviceSharding(j.devices()[-1])
        mesh = j.make_mesh((1,), ("x",), axis_types=(j.sharding.AxisType.Explicit,))
        return j.sharding.NamedSharding(mesh, j.sharding.PartitionSpec())
    for fn in (lambda j: j.lax.full((2, 3), 1.5, sharding=make(j)),
               lambda j: j.lax.full_like(j.numpy.ones(2, j.numpy.int32), 3,
                                         sharding=make(j))):
        got, want = fn(jax), fn(rjax)
        assert_like_jax(got, want)
        assert _placement(got) == _placement(want)


def test_out_sharding_values(rjax):
    """reduce/conv/ragged_dot with a NamedSharding: JAX's values; the result is placed on
    the mesh (a one-device mesh here)."""
    def run(j):
        mesh = j.make_mesh((1,), ("x",), axis_types=(j.sharding.AxisType.Explicit,))
        s = j.sharding.NamedSharding(mesh, j.sharding.PartitionSpec())
        n, lax = j.numpy, j.lax
        return (lax.reduce(n.arange(4.0), 0.0, lax.add, (0,), out_sharding=s),
                lax.conv_general_dilated(n.arange(6.0).reshape(1, 1, 6), n.ones((1, 1, 2)),
                                         (1,), "VALID", out_sharding=s),
                lax.ragged_dot(n.arange(6.0).reshape(3, 2), n.ones((2, 2, 2)),
                               n.array([1, 2]), out_sharding=s))
    for got, want in zip(run(jax), run(rjax)):
        assert_like_jax(got, want)
        assert {d.id for d in got.devices()} == {d.id for d in want.devices()}
