"""Linear-algebra primitives: ``dot_general`` (contraction over given dimensions with batch
dimensions, BLAS-backed) and ``svd`` (singular value decomposition of stacked matrices,
LAPACK through NumPy)."""
from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

from .. import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import check_dtypes, upcast_half
from .elementwise import _convert_impl


def _dims(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return tuple(lc), tuple(rc), tuple(lb), tuple(rb)


def _bit_width(dt) -> int:
    """Bits of one element (of the real part for complex dtypes; 1 for bool; 4 for int4 and
    float4_e2m1fn, as their ``iinfo``/``finfo`` say)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return 1
    if dt.kind == "c":
        return dt.itemsize * 4
    if dtypes.is_int(dt):
        return ml_dtypes.iinfo(dt).bits
    return ml_dtypes.finfo(dt).bits


def _precision_rank(dt):
    """How precise ``dt`` is, as a sortable tuple: complex above real, then exponent range,
    mantissa bits, bit width, and signed above unsigned (XLA's order of types)."""
    dt = np.dtype(dt)
    real = {np.dtype(np.complex64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.float64)}.get(dt, dt)
    maxexp, nmant = ((ml_dtypes.finfo(real).maxexp, ml_dtypes.finfo(real).nmant)
                     if dtypes.is_float(real) else (-1, -1))
    return (dt.kind == "c", maxexp, nmant, _bit_width(real), dtypes.kind(dt) != "u")


def dot_result_dtype(lhs_dtype, rhs_dtype, preferred_element_type=None):
    """The dtype of ``dot_general`` of operands of these dtypes: the more precise operand
    dtype (see ``_precision_rank``: ``int8 x float32 -> float32``, ``float16 x bfloat16 ->
    bfloat16``, ``int8 x uint8 -> int8``), or ``preferred_element_type`` when given.

    Raises TypeError for two different dtypes of equal rank, and for a preferred integer
    or floating type narrower than a non-floating result (``int32`` operands with
    ``preferred_element_type=int8`` or ``bfloat16``), as JAX.
    """
    lhs_dtype, rhs_dtype = np.dtype(lhs_dtype), np.dtype(rhs_dtype)
    lr, rr = _precision_rank(lhs_dtype), _precision_rank(rhs_dtype)
    if lr == rr and lhs_dtype != rhs_dtype:
        raise TypeError(f"dot_general: operand dtypes {lhs_dtype.name} and {rhs_dtype.name} "
                        f"have no common precision; convert one of them first")
    out = lhs_dtype if lr >= rr else rhs_dtype
    if preferred_element_type is None:
        return out
    pet = np.dtype(preferred_element_type)
    if pet != out and not dtypes.is_float(out) and _bit_width(pet) < _bit_width(out):
        raise TypeError(f"dot_general: preferred_element_type {pet.name} is narrower than "
                        f"the operands' result type {out.name}")
    return pet


def _dot_aval(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
              out_sharding=None):
    lc, rc, lb, rb = _dims(dimension_numbers)
    check_dtypes("dot_general", (lhs, rhs), "fciub")
    out_dtype = dot_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    for name, ax, nd in (("lhs contracting", lc, lhs.ndim), ("rhs contracting", rc, rhs.ndim),
                         ("lhs batch", lb, lhs.ndim), ("rhs batch", rb, rhs.ndim)):
        if any(not 0 <= a < nd for a in ax) or len(set(ax)) != len(ax):
            raise TypeError(f"dot_general {name} dimensions {ax} out of range for operand of "
                            f"rank {nd}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: dimension_numbers {dimension_numbers} pair up "
                        f"unequal numbers of lhs and rhs dimensions (contracting and batch "
                        f"lists have to match in length)")
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            # only the contracting sizes, as JAX names them: the operands' full shapes here
            # may be a transform's (vmap's batch axis) or jnp's internal reshapes, not the
            # shapes the user passed
            raise TypeError(f"dot_general: contracting dimension sizes "
                            f"{tuple(lhs.shape[i] for i in lc)} (lhs) and "
                            f"{tuple(rhs.shape[i] for i in rc)} (rhs) differ.")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general: batch dimensions {lb} of lhs shape {lhs.shape} and "
                            f"{rb} of rhs shape {rhs.shape} differ in size.")
    batch = tuple(lhs.shape[a] for a in lb)
    lfree = tuple(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb)
    return ShapedArray(batch + lfree + rfree, out_dtype, lhs.weak_type and rhs.weak_type)


@functools.lru_cache(maxsize=1024)
def _dot_plan(lshape, rshape, dimension_numbers):
    """How to run one dot_general as a batched matmul: the operand permutations, the
    (batch, m, k) @ (batch, k, n) shapes and the result shape (cached per signature)."""
    lc, rc, lb, rb = _dims(dimension_numbers)
    lf = [i for i in range(len(lshape)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rshape)) if i not in rc and i not in rb]
    nb = math.prod(lshape[i] for i in lb)
    m = math.prod(lshape[i] for i in lf)
    k = math.prod(lshape[i] for i in lc)
    n = math.prod(rshape[i] for i in rf)
    out = tuple(lshape[i] for i in lb) + tuple(lshape[i] for i in lf) + \
        tuple(rshape[i] for i in rf)
    # NumPy's ``dot`` itself: 1-D or 2-D operands, no batch, the last axis of ``lhs``
    # against the first of ``rhs`` (vector . vector, matrix . vector, vector . matrix,
    # matrix . matrix: one BLAS call, no reshapes)
    plain = not lb and len(lc) == 1 and len(lshape) in (1, 2) and len(rshape) in (1, 2) \
        and lc[0] == len(lshape) - 1 and rc[0] == 0
    return (list(lb) + lf + list(lc), list(rb) + list(rc) + rf, (nb, m, k), (nb, k, n), out,
            plain)


def _dot_impl(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
              out_sharding=None):
    perm_a, perm_b, a_shape, b_shape, out_shape, plain = \
        _dot_plan(lhs.shape, rhs.shape, dimension_numbers)
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    if lhs.dtype != rhs.dtype:
        # XLA on the CPU converts operands of two dtypes to the result dtype first
        target = dot_result_dtype(lhs.dtype, rhs.dtype, pet)
        lhs, rhs = _convert_impl(lhs, target), _convert_impl(rhs, target)
    elif pet is not None and pet != lhs.dtype and _computes_in_preferred(lhs.dtype, pet):
        # products accumulate in the wider preferred type (int8 x int8 -> int32 sums do
        # not wrap); a narrower or integer preferred type rounds the result instead
        lhs, rhs = _convert_impl(lhs, pet), _convert_impl(rhs, pet)
    elif pet is not None and pet != lhs.dtype and lhs.dtype in _HALF:
        # computed in float32, rounded to the operands' type, then converted: XLA on the
        # CPU rounds twice here (bfloat16 x bfloat16 -> float16 is a bfloat16 result)
        out = _dot_impl(lhs, rhs, dimension_numbers, precision)
        return _convert_impl(np.asarray(out).astype(lhs.dtype), pet)
    # XLA:CPU computes a float8/float6/float4 product as a float16 one: the float32 sum is
    # rounded to float16 before the narrow type (twice, as its elementwise operations)
    via_f16 = lhs.dtype in dtypes.VIA_FLOAT16 and (pet is None or pet == lhs.dtype)
    if lhs.dtype in _HALF or rhs.dtype in _HALF:
        lhs, rhs = upcast_half(lhs, rhs)
    if lhs.dtype == np.bool_:
        lhs, rhs = lhs.astype(np.int32), rhs.astype(np.int32)
    if plain:
        out = np.dot(lhs, rhs)
    else:
        a = np.transpose(lhs, perm_a).reshape(a_shape)
        b = np.transpose(rhs, perm_b).reshape(b_shape)
        out = np.matmul(a, b).reshape(out_shape)
    if via_f16:
        out = np.asarray(out).astype(np.float16)
    if pet is not None and np.asarray(out).dtype != pet:
        # XLA's conversion: float -> int saturates, complex -> real keeps the real part
        out = _convert_impl(np.asarray(out), pet)
    return out


# the floats NumPy's BLAS cannot multiply: computed in float32 (``upcast_half``)
_HALF = frozenset({np.dtype(np.float16), np.dtype("bfloat16"),
                   np.dtype(ml_dtypes.float8_e8m0fnu)} | dtypes.VIA_FLOAT16)


def _computes_in_preferred(dt, pet) -> bool:
    """Whether a dot of two ``dt`` operands with ``preferred_element_type=pet`` converts
    the operands to ``pet`` first (else it computes in ``dt`` and converts the result), as
    XLA on the CPU does: integer and bool operands, complex results, and a floating ``pet``
    wider than ``dt``, or as wide with fewer mantissa bits (float16 -> bfloat16,
    float8_e4m3fn -> float8_e5m2)."""
    if dtypes.kind(dt) in "biu" or pet.kind == "c":
        return True
    if not dtypes.is_float(pet) or not dtypes.is_float(dt):
        return False
    wp, wd = _bit_width(pet), _bit_width(dt)
    return wp > wd or (wp == wd and ml_dtypes.finfo(pet).nmant < ml_dtypes.finfo(dt).nmant)


def _dot_flops(lhs, rhs, dimension_numbers, **kw):
    lc, rc, lb, rb = _dims(dimension_numbers)
    k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    out = _dot_aval(lhs, rhs, dimension_numbers).size
    return 2 * out * k


def _dot_pp_params(params):
    # as JAX prints it: parameters at None (and the sharding, implied by the result's type)
    # left out, and the dimension numbers as lists, which read shorter
    shown = {k: v for k, v in params.items() if v is not None and k != "out_sharding"}
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    shown["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return shown


dot_general_p = Primitive("dot_general", abstract_eval=_dot_aval, impl=_dot_impl,
                          flops=_dot_flops, kind="dot")
dot_general_p.pp_params = _dot_pp_params


def _dot_specialize(avals, dimension_numbers, precision=None,
                    preferred_element_type=None, out_sharding=None):
    """A plain contraction (``_dot_plan``: 1-D or 2-D operands, the last axis of ``lhs``
    against the first of ``rhs``) of equal, non-half, non-bool dtypes with no wider
    accumulation type is NumPy's ``dot`` itself (what ``_dot_impl`` ends in)."""
    lhs, rhs = avals
    if (_dot_plan(tuple(lhs.shape), tuple(rhs.shape), dimension_numbers)[5]
            and lhs.dtype == rhs.dtype and lhs.dtype not in _HALF
            and lhs.dtype != np.bool_
            and (preferred_element_type is None
                 or np.dtype(preferred_element_type) == lhs.dtype)):
        return np.dot
    return None


dot_general_p.specialize = _dot_specialize


# ---- svd ------------------------------------------------------------------------------------

def _real_of(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    return dt


def _lapack_dtype(name, x, empty_ok=False):
    """LAPACK has no half-precision kernels: like JAX on the CPU, a factorisation of
    float16/bfloat16 fails when it runs (tracing it is fine).  ``empty_ok``: the
    factorisations JAX's CPU lowering answers without a kernel call when the operand has
    no elements (qr, svd) accept an empty half-precision operand."""
    if empty_ok and math.prod(x.shape) == 0:
        return
    if np.dtype(x.dtype) in _HALF:
        raise NotImplementedError(f"{name}: unsupported dtype {np.dtype(x.dtype).name} "
                                  f"(LAPACK has no half-precision kernels, as in JAX on the "
                                  f"CPU); convert to float32 first")


def _check_rank2(name, x):
    """TypeError, as JAX's shape rules, for an operand that is not a stack of matrices
    (a non-square one is the caller's ValueError)."""
    if x.ndim < 2:
        raise TypeError(f"{name} requires an operand of rank >= 2 (a stack of matrices), got "
                        f"shape {x.shape}")


def _svd_aval(x, full_matrices=True, compute_uv=True):
    check_dtypes("svd", (x,), "fc")
    if x.ndim < 2:
        raise TypeError(f"svd requires an operand of rank >= 2 (a stack of matrices), got "
                        f"shape {x.shape}")
    *batch, m, n = x.shape
    k = min(m, n)
    batch = tuple(batch)
    s = ShapedArray(batch + (k,), _real_of(x.dtype))
    if not compute_uv:
        return [s]
    um, vn = (m, n) if full_matrices else (k, k)
    return [ShapedArray(batch + (m, um), x.dtype), s, ShapedArray(batch + (vn, n), x.dtype)]


def _svd_impl(x, full_matrices=True, compute_uv=True):
    _lapack_dtype("svd", x, empty_ok=True)
    (xx,) = upcast_half(x)
    if xx.size == 0:
        *batch, m, n = x.shape
        k = min(m, n)
        s = np.zeros(tuple(batch) + (k,), _real_of(x.dtype))
        if not compute_uv:
            return [s]
        um, vn = (m, n) if full_matrices else (k, k)
        eye = np.zeros(tuple(batch) + (m, um), x.dtype)
        return [eye + np.eye(m, um, dtype=x.dtype), s,
                np.zeros(tuple(batch) + (vn, n), x.dtype) + np.eye(vn, n, dtype=x.dtype)]
    # SciPy's LAPACK is the one JAX's CPU kernels call: the same gesdd gives the same
    # signs of the singular vectors (NumPy's bundled LAPACK can flip some)
    if not compute_uv:
        return [_per_matrix(lambda a: _gesdd(a, False, False)[1], _batch_of(xx), xx)]
    u, s, vh = _per_matrix(lambda a: _gesdd(a, full_matrices, True), _batch_of(xx), xx)
    return [u, s, vh]


def _nan_unless_ok(*out):
    """LAPACK's outputs (all but the trailing ``info``), or NaNs when ``info`` reports a
    failure, as JAX's kernels do."""
    *vals, info = out
    if info != 0:
        vals = [np.full(v.shape, np.nan, v.dtype) for v in vals]
    return tuple(vals)


def _gesdd(a, full_matrices, compute_uv):
    """LAPACK's divide-and-conquer SVD of one matrix, its output taken as it is (NaN input
    gives LAPACK's own mix of NaN and zeros, exactly as JAX's kernel returns it)."""
    gesdd, gesdd_lwork = _scipy_linalg().lapack.get_lapack_funcs(("gesdd", "gesdd_lwork"), (a,))
    m, n = a.shape
    work, _ = gesdd_lwork(m, n, compute_uv=int(compute_uv),
                          full_matrices=int(full_matrices))
    u, s, vt, info = gesdd(a, compute_uv=int(compute_uv), full_matrices=int(full_matrices),
                           lwork=max(int(np.real(work)), 1))
    if info != 0:
        # no convergence (NaN input): NaN throughout, as JAX's kernel reports it
        u, s, vt = (np.full(v.shape, np.nan, v.dtype) for v in (u, s, vt))
    return u, s, vt


def _lapack_or_nan(fn, a, shapes, dtypes):
    """``fn()``, or NaNs of the given shapes and dtypes when the matrix ``a`` holds inf/nan
    or LAPACK does not converge: JAX returns NaNs there rather than raising (and LAPACK
    is not handed non-finite input, which some of its routines report on stderr)."""
    def nans(sh, dt):
        dt = np.dtype(dt)
        return np.full(sh, complex(np.nan, np.nan) if dt.kind == "c" else np.nan, dt)
    multi = isinstance(dtypes, tuple)
    try:
        if np.isfinite(a).all():
            return fn()
    except (np.linalg.LinAlgError, ValueError):
        pass
    if multi:
        return tuple(nans(sh, dt) for sh, dt in zip(shapes, dtypes))
    return nans(shapes, dtypes)


svd_p = Primitive("svd", abstract_eval=_svd_aval, impl=_svd_impl, multiple_results=True,
                  flops=lambda x, **k: 4 * x.size * min(x.shape[-2:]) if x.ndim >= 2 else 0,
                  kind="other")


# ---- transformation rules ---------------------------------------------------------------

from ..core import ad, batching  # noqa: E402
from ..core.trace import get_aval  # noqa: E402


def _dot_transpose_lhs(ct, x_aval, y, dimension_numbers, swap=False, precision=None,
                       preferred_element_type=None):
    """Cotangent of the lhs of ``dot_general(x, y)``: a dot of ``ct`` with ``y`` over y's
    free dimensions, batched over the batch dimensions, then permuted into x's layout.
    The backward dot keeps the forward one's ``precision`` (in its order, as JAX) and
    ``preferred_element_type``: a HIGHEST-precision product stays HIGHEST in reverse mode."""
    from .shape import transpose_p
    from .elementwise import convert_element_type_p
    lc, rc, lb, rb = _dims(dimension_numbers)
    x_nd, y_nd = x_aval.ndim, get_aval(y).ndim
    x_kept = [i for i in range(x_nd) if i not in lc and i not in lb]
    y_kept = [i for i in range(y_nd) if i not in rc and i not in rb]
    nb = len(lb)
    # where y's free dimensions sit in the result: after x's (or first when swapped)
    first_y = nb if swap else nb + len(x_kept)
    ans_y = list(range(first_y, first_y + len(y_kept)))
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(range(nb)), tuple(rb)))
    out = dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                             preferred_element_type=preferred_element_type,
                             out_sharding=None)
    # out layout: batch (x's lb order), x free dims (in x order), then y's contracting
    # dims in y's own axis order, each standing for its partner in lc
    src_order = list(lb) + x_kept + [lc[list(rc).index(j)] for j in sorted(rc)]
    perm = [src_order.index(i) for i in range(x_nd)]
    if perm != list(range(x_nd)):
        out = transpose_p.bind(out, permutation=tuple(perm))
    if get_aval(out).dtype != x_aval.dtype:
        out = convert_element_type_p.bind(out, new_dtype=x_aval.dtype, weak_type=False)
    return out


def _dot_transpose_rhs(ct, x, y_aval, dimension_numbers, **params):
    lc, rc, lb, rb = _dims(dimension_numbers)
    swapped = ((rc, lc), (rb, lb))
    return _dot_transpose_lhs(ct, y_aval, x, swapped, swap=True, **params)


def _dot_transpose(ct, x, y, dimension_numbers, precision=None, preferred_element_type=None,
                   out_sharding=None):
    if ad.is_undefined(x) and ad.is_undefined(y):
        raise ValueError("dot_general is bilinear, not linear in both operands at once")
    params = dict(precision=precision, preferred_element_type=preferred_element_type)
    if ad.is_undefined(x):
        return [_dot_transpose_lhs(ct, x.aval, y, dimension_numbers, **params), None]
    return [None, _dot_transpose_rhs(ct, x, y.aval, dimension_numbers, **params)]


def _dot_bind(x, y, dimension_numbers, precision=None, preferred_element_type=None,
              out_sharding=None):
    return dot_general_p.bind(x, y, dimension_numbers=dimension_numbers, precision=precision,
                              preferred_element_type=preferred_element_type,
                              out_sharding=out_sharding)


ad.defjvp(dot_general_p, lambda g, x, y, **p: _dot_bind(g, y, **p),
          lambda g, x, y, **p: _dot_bind(x, g, **p))
dot_general_p.transpose = _dot_transpose


def _dot_batch(args, dims, dimension_numbers, **params):
    """Mapped operands get their mapped axis as a new leading batch dimension (both
    mapped), or as a free dimension (one mapped) whose position in the result is known."""
    (x, y), (dx, dy) = args, dims
    lc, rc, lb, rb = _dims(dimension_numbers)
    if dx is not None and dy is not None:
        x = batching.moveaxis(x, dx, 0)
        y = batching.moveaxis(y, dy, 0)
        sh = lambda t: tuple(i + 1 for i in t)  # noqa: E731
        dn = ((sh(lc), sh(rc)), ((0,) + sh(lb), (0,) + sh(rb)))
        return _dot_bind(x, y, dn, **params), 0
    # one operand mapped: its mapped axis stays where it is, as one more free dimension
    # (no transposed copy); in the result it comes after the batch dimensions and that
    # operand's free dimensions before it (the rhs's after all of the lhs's)
    if dx is not None:
        sh = lambda t: tuple(i + 1 if i >= dx else i for i in t)  # noqa: E731
        lc2, lb2 = sh(lc), sh(lb)
        out = _dot_bind(x, y, ((lc2, rc), (lb2, rb)), **params)
        before = sum(1 for i in range(dx) if i not in lc2 and i not in lb2)
        return out, len(lb) + before
    sh = lambda t: tuple(i + 1 if i >= dy else i for i in t)  # noqa: E731
    rc2, rb2 = sh(rc), sh(rb)
    out = _dot_bind(x, y, ((lc, rc2), (lb, rb2)), **params)
    n_free_x = get_aval(x).ndim - len(lc) - len(lb)
    before = sum(1 for i in range(dy) if i not in rc2 and i not in rb2)
    return out, len(lb) + n_free_x + before


dot_general_p.batch = _dot_batch


def _svd_batch(args, dims, **params):
    x = batching.moveaxis(args[0], dims[0], 0)
    outs = svd_p.bind(x, **params)
    return outs, [0] * len(outs)


svd_p.batch = _svd_batch


# svd JVP ------------------------------------------------------------------------------------
# With A = U diag(s) V^H (thin factors, k = min(m, n)) and dP = U^H dA V:
#   ds = Re diag(dP)
#   dU = U (F o (dP S + S dP^H) + i Im diag(dP) / s) + (I - U U^H) dA V S^-1     (m > k)
#   dV = V (F o (S dP + dP^H S)) + (I - V V^H) dA^H U S^-1                       (n > k)
# where F_ij = 1 / (s_j^2 - s_i^2) off the diagonal and 0 on it (distinct singular values).

def _mm(a, b):
    """Matrix product over the last two axes, batched over the leading ones."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general_p.bind(a, b, dimension_numbers=(((nd - 1,), (nd - 2,)), (batch, batch)),
                              precision=None, preferred_element_type=None, out_sharding=None)


def _mT(a):
    from .shape import transpose_p
    nd = get_aval(a).ndim
    return transpose_p.bind(a, permutation=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(a):
    from .elementwise import conj_p
    dt = get_aval(a).dtype
    return conj_p.bind(a, input_dtype=dt) if dt.kind == "c" else a


def _H(a):
    return _conj(_mT(a))


def _svd_jvp(primals, tangents, full_matrices=True, compute_uv=True):
    from .elementwise import (add_p, complex_p, convert_element_type_p, div_p, eq_p, imag_p,
                              mul_p, real_p, select_n_p, sub_p)
    from .reduction import reduce_sum_p
    from .shape import broadcast_in_dim_p, iota_p
    (a,), (da,) = primals, tangents
    aval = get_aval(a)
    *batch, m, n = aval.shape
    k = min(m, n)
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("svd: forward-mode derivatives need full_matrices=False "
                                  "when the operand is not square (full_matrices=True "
                                  "was requested)")
    u, s, vh = svd_p.bind(a, full_matrices=False, compute_uv=True)
    outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv)
    if da is None:
        return outs, [None] * len(outs)
    dt, rdt = aval.dtype, get_aval(s).dtype
    cplx = dt.kind == "c"
    kk = tuple(batch) + (k, k)
    nb = len(batch)

    def to_dt(x):
        return convert_element_type_p.bind(x, new_dtype=dt, weak_type=False) if cplx else x

    v = _H(vh)
    dp = _mm(_mm(_H(u), da), v)                         # (..., k, k)
    rows = iota_p.bind(dtype=np.dtype(np.int32), shape=kk, dimension=nb)
    cols = iota_p.bind(dtype=np.dtype(np.int32), shape=kk, dimension=nb + 1)
    eye_b = eq_p.bind(rows, cols)
    eye = convert_element_type_p.bind(eye_b, new_dtype=rdt, weak_type=False)
    diag_dp = reduce_sum_p.bind(mul_p.bind(dp, to_dt(eye)), axes=(nb + 1,), out_sharding=None)
    ds = real_p.bind(diag_dp) if cplx else diag_dp
    if not compute_uv:
        return outs, [ds]
    s_j = broadcast_in_dim_p.bind(s, shape=kk, broadcast_dimensions=tuple(range(nb)) + (nb + 1,))
    s_i = broadcast_in_dim_p.bind(s, shape=kk, broadcast_dimensions=tuple(range(nb + 1)))
    diff = sub_p.bind(mul_p.bind(s_j, s_j), mul_p.bind(s_i, s_i))
    zero = broadcast_in_dim_p.bind(np.array(0, rdt), shape=kk, broadcast_dimensions=())
    f = select_n_p.bind(eye_b, div_p.bind(np.array(1, rdt), add_p.bind(diff, eye)), zero)
    f = to_dt(f)
    dps = mul_p.bind(dp, to_dt(s_j))                    # dP diag(s)
    sdp = mul_p.bind(to_dt(s_i), dp)                    # diag(s) dP
    inner_u = mul_p.bind(f, add_p.bind(dps, _H(dps)))
    if cplx:
        # the phase freedom of each singular pair: the standard choice puts i Im(dP_ii)/s_i
        # on the diagonal of U's rotation
        im = div_p.bind(imag_p.bind(diag_dp), s)
        im_mat = mul_p.bind(eye, broadcast_in_dim_p.bind(im, shape=kk, broadcast_dimensions=tuple(
            range(nb)) + (nb + 1,)))
        inner_u = add_p.bind(inner_u, complex_p.bind(zero, im_mat))
    du = _mm(u, inner_u)
    dv = _mm(v, mul_p.bind(f, add_p.bind(sdp, _H(sdp))))
    s_row_m = broadcast_in_dim_p.bind(s, shape=tuple(batch) + (m, k),
                                      broadcast_dimensions=tuple(range(nb)) + (nb + 1,))
    s_row_n = broadcast_in_dim_p.bind(s, shape=tuple(batch) + (n, k),
                                      broadcast_dimensions=tuple(range(nb)) + (nb + 1,))
    if m > k:
        dav = _mm(da, v)
        du = add_p.bind(du, div_p.bind(sub_p.bind(dav, _mm(u, dp)), to_dt(s_row_m)))
    if n > k:
        dahu = _mm(_H(da), u)
        dv = add_p.bind(dv, div_p.bind(sub_p.bind(dahu, _mm(v, _H(dp))), to_dt(s_row_n)))
    return outs, [du, ds, _H(dv)]


svd_p.jvp = _svd_jvp


# ---- factorisations: opaque LAPACK kernels ----------------------------------------------
# Each impl runs one LAPACK routine (through NumPy or SciPy) per matrix of the stack, in
# the operand's precision (float32 stays float32), and never raises for a singular or
# indefinite matrix: as in JAX, such matrices give inf/nan entries instead.

import warnings  # noqa: E402


def _scipy_linalg():
    """SciPy's linalg, imported on first use: the LAPACK kernels are needed only when a
    factorisation runs, and importing SciPy costs a tenth of a second."""
    import scipy.linalg
    import scipy.linalg.blas  # noqa: F401
    import scipy.linalg.lapack  # noqa: F401
    return scipy.linalg


def _square_aval(name, x):
    check_dtypes(name, (x,), "fc")
    _check_rank2(name, x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} requires a stack of square matrices (shape [..., n, n]), "
                         f"got shape {x.shape}")


def _per_matrix(fn, batch, *arrays):
    """``fn`` applied to each element ``a[idx]`` of stacks whose leading shape is ``batch``,
    the results stacked back; ``fn`` returns one array or a tuple of arrays."""
    outs = []
    for idx in np.ndindex(*batch):
        r = fn(*(a[idx] for a in arrays))
        outs.append(r if isinstance(r, tuple) else (r,))
    res = tuple(np.stack([o[i] for o in outs]).reshape(tuple(batch) + np.shape(outs[0][i]))
                for i in range(len(outs[0])))
    return res if len(res) > 1 else res[0]


def _batch_of(x, core=2):
    return x.shape[:x.ndim - core]


# cholesky -----------------------------------------------------------------------------------

def _cholesky_aval(x):
    _square_aval("cholesky", x)
    return ShapedArray(x.shape, x.dtype)


def _cholesky_one(a):
    """The lower Cholesky factor of one matrix by LAPACK's potrf (SciPy's, which JAX's CPU
    kernel calls; NumPy's bundled one is 3-6x slower): the upper factor of the transpose,
    which for a row-major matrix is a column-major view, so nothing is copied. Not positive
    definite: NaN below the diagonal and 0 above, as JAX's kernel."""
    potrf = _scipy_linalg().lapack.get_lapack_funcs("potrf", dtype=a.dtype)
    u, info = potrf(a.T, lower=0, clean=1, overwrite_a=0)
    if info != 0:
        return np.tril(np.full(a.shape, np.nan, a.dtype))
    return u.T


def _cholesky_impl(x):
    _lapack_dtype("cholesky", x)
    (xx,) = upcast_half(x)
    if xx.size == 0:
        return np.zeros(x.shape, x.dtype)
    out = _per_matrix(_cholesky_one, _batch_of(xx), xx)
    return out.astype(x.dtype, copy=False)


cholesky_p = Primitive("cholesky", abstract_eval=_cholesky_aval, impl=_cholesky_impl,
                       flops=lambda x: x.size * x.shape[-1] // 3 if x.ndim >= 2 else 0)


# triangular_solve ---------------------------------------------------------------------------

def _triangular_solve_aval(a, b, left_side=False, lower=False, transpose_a=False,
                           conjugate_a=False, unit_diagonal=False):
    check_dtypes("triangular_solve", (a,), "fc")
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires operands of one dtype, got {a.dtype.name} "
                        f"and {b.dtype.name}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.ndim != a.ndim:
        raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} "
                         f"and {b.shape} (a must be [..., m, m] and b of the same rank).")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[:-2] != b.shape[:-2] or common != a.shape[-1]:
        raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} "
                         f"and {b.shape}.")
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_impl(a, b, left_side=False, lower=False, transpose_a=False,
                           conjugate_a=False, unit_diagonal=False):
    aa, bb = upcast_half(a, b)
    if bb.size == 0:
        return np.zeros(b.shape, b.dtype)
    if conjugate_a and not transpose_a:
        aa = np.conj(aa)
    trsm = _scipy_linalg().blas.get_blas_funcs("trsm", dtype=aa.dtype)
    trans = (2 if conjugate_a else 1) if transpose_a else 0
    # trsm does not stop at a zero pivot: a singular matrix gives inf/nan, as in JAX
    out = _per_matrix(lambda m, r: trsm(1.0, m, r, side=0 if left_side else 1,
                                        lower=int(lower), trans_a=trans,
                                        diag=int(unit_diagonal)), _batch_of(bb), aa, bb)
    return np.asarray(out).astype(b.dtype, copy=False)


triangular_solve_p = Primitive(
    "triangular_solve", abstract_eval=_triangular_solve_aval, impl=_triangular_solve_impl,
    flops=lambda a, b, **k: a.shape[-1] * b.size if a.ndim >= 2 else 0)


# lu -------------------------------------------------------------------------------------------

def _lu_aval(x):
    check_dtypes("lu", (x,), "fc")
    if x.ndim < 2:
        raise TypeError(f"lu requires an operand of rank >= 2 (a stack of matrices), got "
                        f"shape {x.shape}")
    *batch, m, n = x.shape
    i32 = np.dtype(np.int32)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(tuple(batch) + (min(m, n),), i32),
            ShapedArray(tuple(batch) + (m,), i32)]


def _pivots_to_permutation(piv, size):
    perm = np.broadcast_to(np.arange(size, dtype=np.int32), piv.shape[:-1] + (size,)).copy()
    flat_perm = perm.reshape(-1, size)
    flat_piv = piv.reshape(-1, piv.shape[-1])
    for p, v in zip(flat_perm, flat_piv):
        for i, j in enumerate(v):
            if 0 <= j < size and i < size:
                p[i], p[j] = p[j], p[i]
    return perm


def _lu_impl(x):
    _lapack_dtype("lu", x)
    (xx,) = upcast_half(x)
    *batch, m, n = x.shape
    k = min(m, n)
    if xx.size == 0:
        return [np.zeros(x.shape, x.dtype), np.zeros(tuple(batch) + (k,), np.int32),
                np.broadcast_to(np.arange(m, dtype=np.int32), tuple(batch) + (m,)).copy()]
    getrf = _scipy_linalg().lapack.get_lapack_funcs("getrf", dtype=xx.dtype)
    lu, piv = _per_matrix(lambda a: getrf(a)[:2], _batch_of(xx), xx)
    piv = piv.astype(np.int32)
    return [lu.astype(x.dtype, copy=False), piv, _pivots_to_permutation(piv, m)]


lu_p = Primitive("lu", abstract_eval=_lu_aval, impl=_lu_impl, multiple_results=True,
                 flops=lambda x: 2 * x.size * min(x.shape[-2:]) // 3 if x.ndim >= 2 else 0)


def _lu_pivots_aval(pivots, permutation_size):
    check_dtypes("lu_pivots_to_permutation", (pivots,), "iu")
    if pivots.ndim < 1:
        raise ValueError(f"lu_pivots_to_permutation requires pivots of rank >= 1, got shape "
                         f"{pivots.shape}")
    if pivots.shape[-1] > permutation_size:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                         f"trailing dimension of the pivots. Got pivots shape "
                         f"{pivots.shape}")
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.dtype(np.int32))


lu_pivots_to_permutation_p = Primitive(
    "lu_pivots_to_permutation", abstract_eval=_lu_pivots_aval,
    impl=lambda pivots, permutation_size: _pivots_to_permutation(
        np.asarray(pivots).astype(np.int32), permutation_size),
    # one swap per pivot, for each batch element
    flops=lambda pivots, permutation_size: pivots.size)


# qr -------------------------------------------------------------------------------------------

def _qr_aval(x, pivoting=False, full_matrices=True):
    check_dtypes("qr", (x,), "fc")
    if x.ndim < 2:
        raise TypeError(f"Input 0 to qr must have rank at least 2, but got shape={x.shape}")
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = m if full_matrices else min(m, n)
    out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), np.dtype(np.int32)))
    return out


def _qr_impl(x, pivoting=False, full_matrices=True):
    _lapack_dtype("qr", x, empty_ok=True)
    (xx,) = upcast_half(x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = m if full_matrices else min(m, n)
    if xx.size == 0:
        q = np.zeros(batch + (m, k), x.dtype) + np.eye(m, k, dtype=x.dtype)
        out = [q, np.zeros(batch + (k, n), x.dtype)]
        if pivoting:
            out.append(np.broadcast_to(np.arange(n, dtype=np.int32), batch + (n,)).copy())
        return out
    mode = "full" if full_matrices else "economic"
    if pivoting:
        q, r, p = _per_matrix(lambda a: _scipy_linalg().qr(a, mode=mode, pivoting=True,
                                                        check_finite=False),
                            _batch_of(xx), xx)
        return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False),
                p.astype(np.int32)]
    q, r = np.linalg.qr(xx, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


qr_p = Primitive("qr", abstract_eval=_qr_aval, impl=_qr_impl, multiple_results=True,
                 flops=lambda x, **k: 4 * x.size * min(x.shape[-2:]) if x.ndim >= 2 else 0)


# eigh -----------------------------------------------------------------------------------------

def _eigh_aval(x, lower=True, sort_eigenvalues=True, subset_by_index=None):
    _square_aval("eigh", x)
    n = x.shape[-1]
    k = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    return [ShapedArray(x.shape[:-1] + (k,), x.dtype),
            ShapedArray(x.shape[:-2] + (k,), _real_of(x.dtype))]


def _eigh_impl(x, lower=True, sort_eigenvalues=True, subset_by_index=None):
    _lapack_dtype("eigh", x)
    (xx,) = upcast_half(x)
    if xx.size == 0:
        return [np.zeros(x.shape, x.dtype), np.zeros(x.shape[:-1], _real_of(x.dtype))]
    evd = _scipy_linalg().lapack.get_lapack_funcs("heevd" if xx.dtype.kind == "c" else "syevd", (xx,))
    # LAPACK's output as it is (NaN input included), NaN where it reports a failure
    w, v = _per_matrix(lambda a: _nan_unless_ok(*evd(a, compute_v=1, lower=int(lower))),
                       _batch_of(xx), xx)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., lo:hi]
    return [v.astype(x.dtype, copy=False), w.astype(_real_of(x.dtype), copy=False)]


eigh_p = Primitive("eigh", abstract_eval=_eigh_aval, impl=_eigh_impl, multiple_results=True,
                   flops=lambda x, **k: 9 * x.size * x.shape[-1] if x.ndim >= 2 else 0)


# eig ------------------------------------------------------------------------------------------

def _complex_of(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    return np.dtype(np.complex128) if dt == np.float64 else np.dtype(np.complex64)


def _eig_aval(x, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
              enable_eigvec_derivs=False):
    _square_aval("eig", x)
    c = _complex_of(x.dtype)
    out = [ShapedArray(x.shape[:-1], c)]
    out += [ShapedArray(x.shape, c)] * (int(compute_left_eigenvectors)
                                        + int(compute_right_eigenvectors))
    return out


def _eig_impl(x, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
              enable_eigvec_derivs=False):
    _lapack_dtype("eig", x)
    (xx,) = upcast_half(x)
    c = _complex_of(x.dtype)
    n = x.shape[-1]
    nvec = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    if xx.size == 0:
        return [np.zeros(x.shape[:-1], c)] + [np.zeros(x.shape, c)] * nvec
    # SciPy's geev is the one JAX's CPU kernel calls (unit-norm vectors whose largest
    # entry is real, with the same signs); NumPy's bundled LAPACK can flip signs
    shapes, dts = ((n,), (n, n), (n, n)), (c, c, c)
    w, vl, vr = _per_matrix(lambda a: _lapack_or_nan(
        lambda: _scipy_linalg().eig(a, left=True, right=True, check_finite=False), a, shapes,
        dts),
        _batch_of(xx), xx)
    out = [w.astype(c, copy=False)]
    if compute_left_eigenvectors:
        out.append(vl.astype(c, copy=False))
    if compute_right_eigenvectors:
        out.append(vr.astype(c, copy=False))
    return out


eig_p = Primitive("eig", abstract_eval=_eig_aval, impl=_eig_impl, multiple_results=True,
                  flops=lambda x, **k: 10 * x.size * x.shape[-1] if x.ndim >= 2 else 0)


# tridiagonal_solve ------------------------------------------------------------------------------

def _tridiagonal_solve_aval(dl, d, du, b, perturb_singular=False):
    check_dtypes("tridiagonal_solve", (dl, d, du, b), "fc")
    if len({dl.dtype, d.dtype, du.dtype, b.dtype}) != 1:
        raise TypeError(f"tridiagonal_solve requires operands of one dtype, got "
                        f"{[t.dtype.name for t in (dl, d, du, b)]}")
    if b.ndim < 2:
        raise TypeError(f"Input 3 to tridiagonal_solve must have rank at least 2, but got "
                        f"shape={b.shape}")
    if not (dl.shape == d.shape == du.shape) or d.shape != b.shape[:-1]:
        raise TypeError(f"tridiagonal_solve: dl, d and du must have shape [..., m] and b "
                        f"[..., m, n]; got dl {dl.shape}, d {d.shape}, du {du.shape}, "
                        f"b {b.shape}")
    return ShapedArray(b.shape, b.dtype)


def _tridiagonal_one(dl, d, du, b):
    m = d.shape[0]
    if m == 1:
        return b / d[0]
    gtsv = _scipy_linalg().lapack.get_lapack_funcs("gtsv", dtype=b.dtype)
    x, info = gtsv(dl[1:], d, du[:-1], b)[3:5]
    if info > 0:
        # an exactly singular system: inf/nan, as a division by the zero pivot gives
        return np.full(b.shape, np.nan, b.dtype)
    return x


def _tridiagonal_solve_impl(dl, d, du, b, perturb_singular=False):
    _lapack_dtype("tridiagonal_solve", dl)
    arrs = upcast_half(dl, d, du, b)
    if arrs[3].size == 0:
        return np.zeros(b.shape, b.dtype)
    out = _per_matrix(_tridiagonal_one, _batch_of(b), *arrs)
    return np.asarray(out).astype(b.dtype, copy=False)


tridiagonal_solve_p = Primitive(
    "tridiagonal_solve", abstract_eval=_tridiagonal_solve_aval, impl=_tridiagonal_solve_impl,
    flops=lambda dl, d, du, b, **k: 8 * b.size)


# ---- factorisations: batching and JVP rules ---------------------------------------------

def _front_batch(prim):
    """Batching rule of a primitive whose operands are stacks with one leading batch
    shape: each mapped axis moves to the front (unmapped operands are broadcast)."""
    def rule(args, dims, **params):
        size = batching.size_of(args, dims)
        new = [batching.to_front(x, d, size) for x, d in zip(args, dims)]
        out = prim.bind(*new, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    prim.batch = rule
    return rule


for _p in (cholesky_p, triangular_solve_p, lu_p, lu_pivots_to_permutation_p, qr_p, eigh_p,
           eig_p, tridiagonal_solve_p):
    _front_batch(_p)


# small array helpers for the rules below (primitive binds, batched over leading axes)

def _ew(name):
    from . import elementwise
    return getattr(elementwise, name + "_p")


def _add(a, b):
    return _ew("add").bind(a, b)


def _sub(a, b):
    return _ew("sub").bind(a, b)


def _mul(a, b):
    return _ew("mul").bind(a, b)


def _neg(a):
    return _ew("neg").bind(a)


def _to(x, dt):
    if get_aval(x).dtype == np.dtype(dt):
        return x
    return _ew("convert_element_type").bind(x, new_dtype=np.dtype(dt), weak_type=False)


def _tri_mask(shape, k, lower):
    """Boolean mask of the lower (``j <= i + k``) or upper (``j >= i + k``) triangle."""
    from .shape import iota_p
    nd = len(shape)
    i32 = np.dtype(np.int32)
    rows = iota_p.bind(dtype=i32, shape=tuple(shape), dimension=nd - 2)
    cols = iota_p.bind(dtype=i32, shape=tuple(shape), dimension=nd - 1)
    if k:
        rows = _add(rows, np.array(k, i32))
    return _ew("ge").bind(rows, cols) if lower else _ew("le").bind(rows, cols)


def _zeros(aval_like):
    from .shape import broadcast_in_dim_p
    av = get_aval(aval_like)
    return broadcast_in_dim_p.bind(np.array(0, av.dtype), shape=tuple(av.shape),
                                   broadcast_dimensions=())


def _tril(x, k=0):
    return _ew("select_n").bind(_tri_mask(get_aval(x).shape, k, True), _zeros(x), x)


def _triu(x, k=0):
    return _ew("select_n").bind(_tri_mask(get_aval(x).shape, k, False), _zeros(x), x)


def _eye_like(x):
    av = get_aval(x)
    return _to(_ew("eq").bind(_tri_mask(av.shape, 0, True), _tri_mask(av.shape, 0, False)),
               av.dtype)


def _diag_part(x):
    from .reduction import reduce_sum_p
    nd = get_aval(x).ndim
    return reduce_sum_p.bind(_mul(x, _eye_like(x)), axes=(nd - 1,), out_sharding=None)


def _bcast_last(v, shape, axis):
    """A (..., n) stack ``v`` broadcast to ``shape`` (..., n, n) along row (``axis=-2``,
    ``out[i, j] = v[i]``) or column (``axis=-1``, ``out[i, j] = v[j]``) positions."""
    from .shape import broadcast_in_dim_p
    nd = len(shape)
    keep = nd - 2 if axis == -2 else nd - 1
    return broadcast_in_dim_p.bind(v, shape=tuple(shape),
                                   broadcast_dimensions=tuple(range(nd - 2)) + (keep,))


def _tsolve(a, b, **params):
    p = dict(left_side=False, lower=False, transpose_a=False, conjugate_a=False,
             unit_diagonal=False)
    p.update(params)
    return triangular_solve_p.bind(a, b, **p)


# cholesky: with L = chol(A) and tangent dA (Hermitian),
#   dL = L Phi(L^-1 dA L^-H), Phi = the lower triangle with its diagonal halved.

def _cholesky_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    L = cholesky_p.bind(x)
    if dx is None:
        return L, None
    tmp = _tsolve(L, dx, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    inner = _tsolve(L, tmp, left_side=True, lower=True)
    half = _add(_tril(inner, -1), _mul(_half(inner), _mul(inner, _eye_like(inner))))
    return L, _mm(L, half)


def _half(x):
    return np.array(0.5, get_aval(x).dtype)


cholesky_p.jvp = _cholesky_jvp


# triangular_solve: linear in b; in a, d(op(A)^-1 B) = -op(A)^-1 op(dA) X (left side)

def _op(x, transpose_a, conjugate_a):
    if transpose_a:
        x = _mT(x)
    return _conj(x) if conjugate_a else x


def _triangular_solve_jvp(primals, tangents, **params):
    (a, b), (da, db) = primals, tangents
    out = triangular_solve_p.bind(a, b, **params)
    total = None
    if db is not None:
        total = triangular_solve_p.bind(a, db, **params)
    if da is not None:
        da = _tril(da) if params["lower"] else _triu(da)
        if params["unit_diagonal"]:
            da = _sub(da, _mul(da, _eye_like(da)))
        opd = _op(da, params["transpose_a"], params["conjugate_a"])
        if params["left_side"]:
            ta = _neg(triangular_solve_p.bind(a, _mm(opd, out), **params))
        else:
            ta = _neg(triangular_solve_p.bind(a, _mm(out, opd), **params))
        total = ta if total is None else _add(total, ta)
    return out, total


def _triangular_solve_transpose(ct, a, b, **params):
    if ad.is_undefined(a):
        raise ValueError("triangular_solve is linear only in its right-hand side b")
    if ct is None:
        return [None, None]
    p = dict(params)
    p["transpose_a"] = not params["transpose_a"]
    return [None, triangular_solve_p.bind(a, ct, **p)]


triangular_solve_p.jvp = _triangular_solve_jvp
triangular_solve_p.transpose = _triangular_solve_transpose


# lu: P A = L U; with X = L^-1 P dA U^-1, dL = L tril(X, -1) and dU = triu(X) U
# (rectangular operands: L is padded to m x m and U to n x n with identity blocks)

def _lu_jvp(primals, tangents):
    from .shape import iota_p, pad_p, slice_p
    (a,), (da,) = primals, tangents
    lu, piv, perm = lu_p.bind(a)
    if da is None:
        return [lu, piv, perm], [None, None, None]
    av = get_aval(a)
    *batch, m, n = av.shape
    batch = tuple(batch)
    k = min(m, n)
    nb = len(batch)
    dt = av.dtype
    # P dA as a product with the one-hot permutation matrix
    cols = iota_p.bind(dtype=np.dtype(np.int32), shape=batch + (m, m), dimension=nb + 1)
    pmat = _to(_ew("eq").bind(_bcast_last(perm, batch + (m, m), -2), cols), dt)
    x = _mm(pmat, da)
    zero = np.array(0, dt)
    nopad = [(0, 0, 0)] * nb

    def sl(v, rows, ncols):
        return slice_p.bind(v, start_indices=(0,) * (nb + 2), limit_indices=batch + (rows,
                            ncols), strides=None)

    lk = sl(lu, m, k)
    l_mat = _tril(lk, -1)
    if m > k:
        l_mat = pad_p.bind(l_mat, zero, padding_config=tuple(nopad + [(0, 0, 0),
                                                                      (0, m - k, 0)]))
    l_mat = _add(l_mat, _eye_like(l_mat))
    u_mat = _triu(sl(lu, k, n))
    if n > k:
        u_mat = pad_p.bind(u_mat, zero, padding_config=tuple(nopad + [(0, n - k, 0),
                                                                      (0, 0, 0)]))
        u_mat = _add(u_mat, _lower_block(_eye_like(u_mat), k))
    la = _tsolve(l_mat, x, left_side=True, lower=True, unit_diagonal=True)
    lau = _tsolve(u_mat, la, left_side=False, lower=False)
    dlu = _add(_mm(l_mat, _tril(lau, -1)), _mm(_triu(lau), u_mat))
    return [lu, piv, perm], [dlu, None, None]


def _lower_block(ident, k):
    """The identity's diagonal entries from row ``k`` on (zero before)."""
    from .shape import iota_p
    av = get_aval(ident)
    rows = iota_p.bind(dtype=np.dtype(np.int32), shape=tuple(av.shape), dimension=av.ndim - 2)
    keep = _ew("ge").bind(rows, np.array(k, np.int32))
    return _ew("select_n").bind(keep, _zeros(ident), ident)


lu_p.jvp = _lu_jvp
lu_pivots_to_permutation_p.jvp = lambda primals, tangents, **p: (
    lu_pivots_to_permutation_p.bind(*primals, **p), None)


# qr (m >= n, reduced or square): with dX R^-1 = Y and Q^H Y = C,
#   dQ = Q (Omega - C) + Y and dR = (C - Omega) R, Omega = skew part of C built from its
#   strictly lower triangle (plus the imaginary diagonal for complex inputs).

def _qr_jvp(primals, tangents, pivoting=False, full_matrices=True):
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
    if dx is None:
        return outs, [None] * len(outs)
    *_, m, n = get_aval(x).shape
    if pivoting:
        # x[..., p] = Q R: the unpivoted rule along the tangent's permuted columns; the
        # integer permutation has no tangent
        *qr_outs, perm = outs
        tans = _qr_tangents(_permute_columns(x, perm), _permute_columns(dx, perm), *qr_outs,
                            m, n, full_matrices)
        return outs, tans + [None]
    return outs, _qr_tangents(x, dx, *outs, m, n, full_matrices)


def _permute_columns(a, perm):
    """``a[..., :, perm]`` for a (..., n) integer stack ``perm``: ``a`` times the
    permutation matrix ``P[i, j] = (perm[j] == i)``."""
    from .shape import iota_p
    shape = get_aval(a).shape
    sq = tuple(shape[:-2]) + (shape[-1], shape[-1])
    rows = iota_p.bind(dtype=get_aval(perm).dtype, shape=sq, dimension=len(sq) - 2)
    pmat = _to(_ew("eq").bind(_bcast_last(perm, sq, -1), rows), get_aval(a).dtype)
    return _mm(a, pmat)


def _qr_tangents(x, dx, q, r, m, n, full_matrices):
    """``[dQ, dR]`` of ``x = Q R`` (unpivoted) along ``dx``."""
    if m > n and full_matrices:
        return _qr_jvp_tall_complete(dx, q, r, m, n)
    if m < n:
        return _qr_jvp_wide(x, dx, q, r, m)
    return list(_qr_jvp_tall(q, r, dx))


def _qr_jvp_tall(q, r, dx):
    """``(dQ, dR)`` of the QR decomposition of a (..., m, n) matrix, m >= n, with reduced
    (or square) factors ``q``, ``r``, along ``dx``."""
    y = _tsolve(r, dx, left_side=False, lower=False)
    c = _mm(_H(q), y)
    low = _tril(c, -1)
    omega = _sub(low, _H(low))
    if get_aval(dx).dtype.kind == "c":
        from .elementwise import imag_p, complex_p
        im = _mul(_ew("complex").bind(_zeros(imag_p.bind(c)), imag_p.bind(c)), _eye_like(c))
        omega = _add(omega, im)
    dq = _add(_mm(q, _sub(omega, c)), y)
    dr = _mm(_sub(c, omega), r)
    return dq, dr


def _qr_jvp_tall_complete(dx, q, r, m, n):
    """``[dQ, dR]`` of a tall (..., m, n) matrix, m > n, with the complete (m, m) ``q``
    and (m, n) ``r``.  The first n columns of Q and the top n rows of R are the reduced
    factors (the tall rule).  The other p = m - n columns Q_mp are fixed by the
    Householder construction LAPACK uses: with Q_mn = [Q_nn; Q_pn] split after row n and
    Z = Q_pn (Q_nn - I)^-1, their tangent is
    ``dQ_mp = dQ_mn Z^H - (Q_mn + Q_mp Z) (dQ_pn - Z dQ_nn)^H`` (Roberts and Roberts, 2024,
    arXiv:2409.13374, eqs. 32-33; the same as JAX's).  dR's last p rows are zero."""
    from .shape import concatenate_p, pad_p, slice_p
    shape = get_aval(q).shape
    nb = len(shape) - 2
    batch = tuple(shape[:-2])

    def block(a, r0, r1, c0, c1):   # a[..., r0:r1, c0:c1]
        return slice_p.bind(a, start_indices=(0,) * nb + (r0, c0),
                            limit_indices=batch + (r1, c1), strides=None)
    q_mn, q_mp = block(q, 0, m, 0, n), block(q, 0, m, n, m)
    dq_mn, dr_nn = _qr_jvp_tall(q_mn, block(r, 0, n, 0, n), dx)
    z = _right_solve(_sub(block(q_mn, 0, n, 0, n), _eye_like(dr_nn)), block(q_mn, n, m, 0, n))
    dq_nn, dq_pn = block(dq_mn, 0, n, 0, n), block(dq_mn, n, m, 0, n)
    dq_mp = _sub(_mm(dq_mn, _H(z)),
                 _mm(_add(q_mn, _mm(q_mp, z)), _H(_sub(dq_pn, _mm(z, dq_nn)))))
    dq = concatenate_p.bind(dq_mn, dq_mp, dimension=nb + 1)
    zero = np.array(0, get_aval(dr_nn).dtype)
    dr = pad_p.bind(dr_nn, zero, padding_config=((0, 0, 0),) * nb + ((0, m - n, 0),
                                                                       (0, 0, 0)))
    return [dq, dr]


def _right_solve(a, b):
    """``b a^-1`` for square ``a`` (..., n, n) and ``b`` (..., p, n), by LU with partial
    pivoting: ``a[perm] = L U``, so with ``P[i, j] = (perm[i] == j)``, ``b a^-1 =
    ((b U^-1) L^-1) P``."""
    from .shape import iota_p
    lu, _, perm = lu_p.bind(a)
    av = get_aval(a)
    lower = _add(_tril(lu, -1), _eye_like(lu))
    w = _tsolve(_triu(lu), b, left_side=False, lower=False)
    v = _tsolve(lower, w, left_side=False, lower=True, unit_diagonal=True)
    cols = iota_p.bind(dtype=get_aval(perm).dtype, shape=tuple(av.shape),
                       dimension=av.ndim - 1)
    pmat = _to(_ew("eq").bind(_bcast_last(perm, av.shape, -2), cols), av.dtype)
    return _mm(v, pmat)


def _qr_jvp_wide(x, dx, q, r, m):
    """``[dQ, dR]`` of a wide (..., m, n) matrix, m < n: with ``x = [X | Y]`` (X its first
    m columns), ``X = Q R_X`` is square and ``R = [R_X | Q^H Y]``, so the square rule gives
    dQ and dR_X, and ``dR_Y = dQ^H Y + Q^H dY``."""
    from .shape import concatenate_p, slice_p
    shape = get_aval(x).shape
    nd = len(shape)

    def cols(a, lo, hi):    # columns lo:hi of a (..., m, n) stack
        return slice_p.bind(a, start_indices=(0,) * (nd - 1) + (lo,),
                            limit_indices=tuple(shape[:-1]) + (hi,), strides=None)
    n = shape[-1]
    dq, dr_x = _qr_jvp_tall(q, cols(r, 0, m), cols(dx, 0, m))
    dr_y = _add(_mm(_H(dq), cols(x, m, n)), _mm(_H(q), cols(dx, m, n)))
    return [dq, concatenate_p.bind(dr_x, dr_y, dimension=nd - 1)]


qr_p.jvp = _qr_jvp


# eigh: with A V = V diag(w) and C = V^H dA V,
#   dw = Re diag(C), dV = V (F o C), F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it.

def _eigh_jvp(primals, tangents, lower=True, sort_eigenvalues=True, subset_by_index=None):
    (x,), (dx,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues,
                       subset_by_index=subset_by_index)
    if dx is None:
        return [v, w], [None, None]
    n = get_aval(x).shape[-1]
    if subset_by_index is not None and subset_by_index != (0, n):
        raise NotImplementedError("eigh: derivatives with subset_by_index are not "
                                  "implemented (as in JAX)")
    dt = get_aval(x).dtype
    shape = get_aval(x).shape
    eye = _eye_like(x)
    wr = _to(w, dt)
    diff = _sub(_bcast_last(wr, shape, -1), _bcast_last(wr, shape, -2))
    f = _sub(_ew("div").bind(np.array(1, dt), _add(diff, eye)), eye)
    c = _mm(_mm(_H(v), dx), v)
    dv = _mm(v, _mul(f, c))
    dw = _diag_part(c)
    if dt.kind == "c":
        dw = _ew("real").bind(dw)
    return [v, w], [dv, dw]


eigh_p.jvp = _eigh_jvp


# eig: dw = diag(VR^-1 dA VR).  Eigenvector derivatives (only when asked for, as JAX: they
# assume distinct eigenvalues) follow non-degenerate perturbation theory, with the free
# multiple of each v_j fixed by LAPACK's normalisation (unit 2-norm, real largest entry).

def _solve_square(a, b):
    """``a^-1 b`` for stacks of square matrices, through ``a``'s LU factors."""
    from .shape import iota_p
    lu, _, perm = lu_p.bind(a)
    shape = get_aval(a).shape
    cols = iota_p.bind(dtype=np.dtype(np.int32), shape=tuple(shape), dimension=len(shape) - 1)
    pmat = _to(_ew("eq").bind(_bcast_last(perm, tuple(shape), -2), cols), get_aval(a).dtype)
    y = _tsolve(lu, _mm(pmat, b), left_side=True, lower=True, unit_diagonal=True)
    return _tsolve(lu, y, left_side=True, lower=False)


def _eig_vec_tangent(w, v, da):
    from .reduction import argmax_p, reduce_sum_p
    from .shape import iota_p
    shape = get_aval(v).shape
    nd = len(shape)
    eye = _eye_like(v)
    diff = _sub(_bcast_last(w, shape, -1), _bcast_last(w, shape, -2))
    f = _sub(_ew("div").bind(np.array(1, get_aval(v).dtype), _add(diff, eye)), eye)
    p = _solve_square(v, _mm(da, v))
    u = _mm(v, _mul(f, p))
    absv = _ew("abs").bind(v)
    k = argmax_p.bind(absv, axes=(nd - 2,), index_dtype=np.dtype(np.int32))
    rows = iota_p.bind(dtype=np.dtype(np.int32), shape=tuple(shape), dimension=nd - 2)
    mask = _to(_ew("eq").bind(rows, _bcast_last(k, shape, -1)), get_aval(v).dtype)

    def colsum(x):
        return reduce_sum_p.bind(x, axes=(nd - 2,), out_sharding=None)
    re, im = _ew("real"), _ew("imag")
    c = _ew("complex").bind(_neg(re.bind(colsum(_mul(_conj(v), u)))),
                            _ew("div").bind(_neg(im.bind(colsum(_mul(mask, u)))),
                                            re.bind(colsum(_mul(mask, v)))))
    return _diag_part(p), _add(u, _mul(v, _bcast_last(c, shape, -1)))


def _eig_jvp(primals, tangents, compute_left_eigenvectors=True,
             compute_right_eigenvectors=True, enable_eigvec_derivs=False):
    (x,), (dx,) = primals, tangents
    params = dict(compute_left_eigenvectors=compute_left_eigenvectors,
                  compute_right_eigenvectors=compute_right_eigenvectors,
                  enable_eigvec_derivs=enable_eigvec_derivs)
    outs = eig_p.bind(x, **params)
    if dx is None:
        return outs, [None] * len(outs)
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that jaxlite cannot check (distinct eigenvalues); pass "
            "enable_eigvec_derivs=True to jaxlite.lax.linalg.eig to opt in, or "
            "differentiate eigenvalues only (jaxlite.numpy.linalg.eigvals)")
    full = eig_p.bind(x, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs)
    w, vr = full[0], full[-1]
    dxc = _to(dx, get_aval(vr).dtype)
    if not vectors:
        return outs, [_diag_part(_solve_square(vr, _mm(dxc, vr)))]
    dw, dvr = _eig_vec_tangent(w, vr, dxc)
    tangents_out = [dw]
    if compute_left_eigenvectors:
        tangents_out.append(_eig_vec_tangent(_conj(w), full[1], _H(dxc))[1])
    if compute_right_eigenvectors:
        tangents_out.append(dvr)
    return outs, tangents_out


eig_p.jvp = _eig_jvp


# tridiagonal_solve: x = A^-1 b, dx = A^-1 (db - dA x); linear in b, and its transpose
# solves with A^T (whose sub-diagonal is A's super-diagonal shifted down by one).

def _shift(v, down):
    """``v`` (..., m) moved one place along its last axis, zero filled."""
    from .shape import pad_p
    nd = get_aval(v).ndim
    cfg = [(0, 0, 0)] * (nd - 1) + [(1, -1, 0) if down else (-1, 1, 0)]
    return pad_p.bind(v, np.array(0, get_aval(v).dtype), padding_config=tuple(cfg))


def _tridiagonal_matmul(dl, d, du, x):
    """A x for the tridiagonal A = (dl, d, du), x of shape (..., m, n)."""
    from .shape import pad_p
    nd = get_aval(x).ndim
    zero = np.array(0, get_aval(x).dtype)

    def col(v):
        return _bcast_last(v, get_aval(x).shape, -2)

    up = pad_p.bind(x, zero, padding_config=tuple([(0, 0, 0)] * (nd - 2) + [(-1, 1, 0),
                                                                             (0, 0, 0)]))
    down = pad_p.bind(x, zero, padding_config=tuple([(0, 0, 0)] * (nd - 2) + [(1, -1, 0),
                                                                               (0, 0, 0)]))
    return _add(_add(_mul(col(d), x), _mul(col(du), up)), _mul(col(dl), down))


def _tridiagonal_solve_jvp(primals, tangents, perturb_singular=False):
    (dl, d, du, b), (ddl, dd, ddu, db) = primals, tangents
    out = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    rhs = db
    if any(t is not None for t in (ddl, dd, ddu)):
        z = [t if t is not None else _zeros(p) for t, p in zip((ddl, dd, ddu), (dl, d, du))]
        ax = _tridiagonal_matmul(*z, out)
        rhs = _neg(ax) if rhs is None else _sub(rhs, ax)
    if rhs is None:
        return out, None
    return out, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, perturb_singular=False):
    if any(ad.is_undefined(v) for v in (dl, d, du)):
        raise ValueError("tridiagonal_solve is linear only in its right-hand side b")
    if ct is None:
        return [None] * 4
    # A^T: sub-diagonal dl'[i] = du[i-1], super-diagonal du'[i] = dl[i+1]
    out = tridiagonal_solve_p.bind(_shift(du, True), d, _shift(dl, False), ct,
                                   perturb_singular=perturb_singular)
    return [None, None, None, out]


tridiagonal_solve_p.jvp = _tridiagonal_solve_jvp
tridiagonal_solve_p.transpose = _tridiagonal_solve_transpose


# ---- Householder forms, Hessenberg, Schur, tridiagonal, Cholesky update ------------------
# LAPACK's packed outputs (reflectors below the diagonal plus their scale factors ``taus``),
# exactly as JAX's CPU kernels return them.  JAX defines no derivatives for these.

def _lapack_fn(name, dt):
    return _scipy_linalg().lapack.get_lapack_funcs(name, dtype=dt)


def _work(m, n):
    return max(1, 64 * max(m, n))


def _geqrf_aval(a):
    check_dtypes("geqrf", (a,), "fc")
    if a.ndim < 2:
        raise ValueError(f"Argument to QR decomposition must have ndims >= 2, got shape "
                         f"{a.shape}")
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (min(a.shape[-2:]),),
                                                       a.dtype)]


def _geqrf_impl(a):
    _lapack_dtype("geqrf", a)
    (aa,) = upcast_half(a)
    *batch, m, n = a.shape
    if aa.size == 0:
        return [np.zeros(a.shape, a.dtype), np.zeros(tuple(batch) + (min(m, n),), a.dtype)]
    f = _lapack_fn("geqrf", aa.dtype)
    qr, tau = _per_matrix(lambda x: f(x, lwork=_work(m, n))[:2], tuple(batch), aa)
    return [qr.astype(a.dtype, copy=False), tau.astype(a.dtype, copy=False)]


def _cubic_flops(x, *rest, **params):
    """A dense factorisation's cost: about n^3 per matrix (n its larger side), for each
    matrix of the batch."""
    if getattr(x, "ndim", 0) < 2:
        return getattr(x, "size", 0)
    n = max(x.shape[-2:])
    return (x.size // (x.shape[-1] * x.shape[-2])) * n ** 3


geqrf_p = Primitive("geqrf", abstract_eval=_geqrf_aval, impl=_geqrf_impl,
                    multiple_results=True,
                    flops=_cubic_flops)


def _householder_product_aval(a, taus):
    check_dtypes("householder_product", (a, taus), "fc")
    if a.ndim < 2 or taus.ndim != a.ndim - 1 or a.dtype != taus.dtype:
        raise ValueError(f"householder_product: a must have shape [..., m, n] and taus "
                         f"[..., k] of the same dtype; got a {a.shape} {a.dtype.name}, taus "
                         f"{taus.shape} {taus.dtype.name}")
    m, n = a.shape[-2:]
    if not m >= n >= taus.shape[-1] or a.shape[:-2] != taus.shape[:-1]:
        raise ValueError(f"householder_product: need m >= n >= k and equal batch shapes; "
                         f"got a {a.shape} and taus {taus.shape}")
    return ShapedArray(a.shape, a.dtype)


def _householder_product_impl(a, taus):
    _lapack_dtype("householder_product", a)
    aa, tt = upcast_half(a, taus)
    if aa.size == 0:
        return np.zeros(a.shape, a.dtype) + np.eye(*a.shape[-2:], dtype=a.dtype)
    m, n = a.shape[-2:]
    f = _lapack_fn("ungqr" if aa.dtype.kind == "c" else "orgqr", aa.dtype)
    out = _per_matrix(lambda x, t: f(x, t, lwork=_work(m, n))[0], _batch_of(aa), aa, tt)
    return out.astype(a.dtype, copy=False)


householder_product_p = Primitive("householder_product",
                                  abstract_eval=_householder_product_aval,
                                  impl=_householder_product_impl,
                                  flops=_cubic_flops)


def _ormqr_aval(a, taus, c, left=True, transpose=False):
    check_dtypes("ormqr", (a, taus, c), "fc")
    if len({a.dtype, taus.dtype, c.dtype}) != 1 or a.ndim < 2 or c.ndim != a.ndim \
            or taus.ndim != a.ndim - 1:
        raise ValueError(f"ormqr: a [..., m, k], taus [..., k] and c [..., m, n] of one dtype "
                         f"expected; got {a.shape}, {taus.shape}, {c.shape}")
    rows = c.shape[-2] if left else c.shape[-1]
    if a.shape[-2] != rows or a.shape[:-2] != c.shape[:-2]:
        raise ValueError(f"ormqr: the reflectors of a {a.shape} do not fit c {c.shape} "
                         f"(left={left})")
    return ShapedArray(c.shape, c.dtype)


def _ormqr_impl(a, taus, c, left=True, transpose=False):
    _lapack_dtype("ormqr", a)
    aa, tt, cc = upcast_half(a, taus, c)
    if cc.size == 0:
        return np.zeros(c.shape, c.dtype)
    cplx = aa.dtype.kind == "c"
    f = _lapack_fn("unmqr" if cplx else "ormqr", aa.dtype)
    trans = ("C" if cplx else "T") if transpose else "N"
    side = "L" if left else "R"
    # LAPACK wants the reflector block to have as many columns as there are taus
    k = taus.shape[-1]
    out = _per_matrix(lambda x, t, y: f(side, trans, x[:, :k], t, y,
                                        lwork=_work(*y.shape))[0], _batch_of(cc), aa, tt, cc)
    return out.astype(c.dtype, copy=False)


ormqr_p = Primitive("ormqr", abstract_eval=_ormqr_aval, impl=_ormqr_impl,
                   flops=_cubic_flops)


def _hessenberg_aval(a):
    check_dtypes("hessenberg", (a,), "fc")
    _check_rank2("hessenberg", a)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got "
                         f"shape {a.shape}")
    return [ShapedArray(a.shape, a.dtype),
            ShapedArray(a.shape[:-2] + (max(a.shape[-1] - 1, 0),), a.dtype)]


def _hessenberg_impl(a):
    _lapack_dtype("hessenberg", a)
    (aa,) = upcast_half(a)
    n = a.shape[-1]
    if aa.size == 0 or n == 1:
        return [aa.astype(a.dtype, copy=True), np.zeros(a.shape[:-2] + (max(n - 1, 0),),
                                                        a.dtype)]
    f = _lapack_fn("gehrd", aa.dtype)
    h, tau = _per_matrix(lambda x: tuple(f(x, lwork=_work(n, n))[:2]), _batch_of(aa), aa)
    return [h.astype(a.dtype, copy=False), tau[..., :n - 1].astype(a.dtype, copy=False)]


hessenberg_p = Primitive("hessenberg", abstract_eval=_hessenberg_aval, impl=_hessenberg_impl,
                         multiple_results=True,
                         flops=_cubic_flops)


def _schur_aval(x, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    check_dtypes("schur", (x,), "fc")
    _check_rank2("schur", x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape}.")
    out = [ShapedArray(x.shape, x.dtype)]
    return out + [ShapedArray(x.shape, x.dtype)] if compute_schur_vectors else out


def _schur_impl(x, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    _lapack_dtype("schur", x)
    (xx,) = upcast_half(x)
    if xx.size == 0:
        z = np.zeros(x.shape, x.dtype)
        return [z, z.copy()] if compute_schur_vectors else [z]
    out = "complex" if xx.dtype.kind == "c" else "real"
    t, z = _per_matrix(lambda a: tuple(_scipy_linalg().schur(a, output=out, check_finite=False)),
                       _batch_of(xx), xx)
    t, z = t.astype(x.dtype, copy=False), z.astype(x.dtype, copy=False)
    return [t, z] if compute_schur_vectors else [t]


schur_p = Primitive("schur", abstract_eval=_schur_aval, impl=_schur_impl,
                    multiple_results=True,
                    flops=_cubic_flops)


def _tridiagonal_aval(a, lower=True):
    check_dtypes("tridiagonal", (a,), "fc")
    _check_rank2("tridiagonal", a)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to tridiagonal must be a square matrix; got shape "
                         f"{a.shape}")
    n = a.shape[-1]
    b = a.shape[:-2]
    r = _real_of(a.dtype)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(b + (n,), r),
            ShapedArray(b + (max(n - 1, 0),), r), ShapedArray(b + (max(n - 1, 0),), a.dtype)]


def _tridiagonal_impl(a, lower=True):
    _lapack_dtype("tridiagonal", a)
    (aa,) = upcast_half(a)
    n = a.shape[-1]
    b = a.shape[:-2]
    r = _real_of(a.dtype)
    if aa.size == 0 or n == 1:
        d = np.real(aa[..., 0, :]) if n == 1 else np.zeros(b + (n,), r)
        e = np.zeros(b + (max(n - 1, 0),), r)
        return [aa.astype(a.dtype, copy=True), d.astype(r), e,
                np.zeros(b + (max(n - 1, 0),), a.dtype)]
    f = _lapack_fn("hetrd" if aa.dtype.kind == "c" else "sytrd", aa.dtype)
    c, d, e, tau = _per_matrix(lambda x: tuple(f(x, lower=int(lower),
                                                 lwork=_work(n, n))[:4]), b, aa)
    return [c.astype(a.dtype, copy=False), d.astype(r, copy=False), e.astype(r, copy=False),
            tau.astype(a.dtype, copy=False)]


tridiagonal_p = Primitive("tridiagonal", abstract_eval=_tridiagonal_aval,
                          impl=_tridiagonal_impl, multiple_results=True,
                          flops=_cubic_flops)


def _cholesky_update_aval(r, w):
    check_dtypes("cholesky_update", (r, w), "f")
    if r.ndim < 2 or r.shape[-1] != r.shape[-2] or w.shape != r.shape[:-1] \
            or r.dtype != w.dtype:
        raise ValueError(f"cholesky_update: r_matrix must be an n x n matrix and w_vector "
                         f"of shape (n,) and the same dtype; got {r.shape} {r.dtype.name} and "
                         f"{w.shape} {w.dtype.name}")
    return ShapedArray(r.shape, r.dtype)


def _cholesky_update_one(r, w):
    # rank-one update R'^T R' = R^T R + w w^T by a sweep of Givens rotations
    rr, ww = np.array(r, dtype=np.float64), np.array(w, dtype=np.float64)
    for k in range(rr.shape[0]):
        rad = np.hypot(rr[k, k], ww[k])
        c, s = (1.0, 0.0) if rad == 0 else (rr[k, k] / rad, ww[k] / rad)
        row, rest = rr[k, k:].copy(), ww[k:].copy()
        rr[k, k:] = c * row + s * rest
        ww[k:] = -s * row + c * rest
    return rr


def _cholesky_update_impl(r, w):
    if r.size == 0:
        return np.zeros(r.shape, r.dtype)
    return _per_matrix(_cholesky_update_one, _batch_of(r), r, w).astype(r.dtype)


cholesky_update_p = Primitive("cholesky_update", abstract_eval=_cholesky_update_aval,
                              impl=_cholesky_update_impl,
                              flops=_cubic_flops)

for _p in (geqrf_p, householder_product_p, ormqr_p, hessenberg_p, schur_p, tridiagonal_p,
           cholesky_update_p):
    _front_batch(_p)


# symmetric_product: alpha * A A^T + beta * C (BLAS syrk); with symmetrize_output the
# lower triangle is mirrored into the upper one.

def _symmetric_product_aval(a, c, alpha=1.0, beta=0.0, symmetrize_output=False):
    check_dtypes("symmetric_product", (a, c), "f")
    if a.dtype != c.dtype:
        raise TypeError(f"symmetric_product requires operands of one dtype, got "
                        f"{a.dtype.name} and {c.dtype.name}")
    if a.ndim < 2 or c.shape != a.shape[:-1] + a.shape[-2:-1]:
        raise ValueError(f"symmetric_product: a_matrix must be [..., m, k] and c_matrix "
                         f"[..., m, m]; got {a.shape} and {c.shape}")
    return ShapedArray(c.shape, c.dtype)


def _mirror_lower(x):
    low = np.tril(x)
    return low + np.swapaxes(np.tril(x, -1), -1, -2)


def _symmetric_product_impl(a, c, alpha=1.0, beta=0.0, symmetrize_output=False):
    aa, cc = upcast_half(a, c)
    out = alpha * np.matmul(aa, np.swapaxes(aa, -1, -2)) + beta * cc
    if symmetrize_output:
        out = _mirror_lower(out)
    return np.asarray(out).astype(c.dtype, copy=False)


symmetric_product_p = Primitive("symmetric_product", abstract_eval=_symmetric_product_aval,
                                impl=_symmetric_product_impl,
                                flops=lambda a, c, **k: a.size * a.shape[-2] if a.ndim >= 2
                                else 0)
_front_batch(symmetric_product_p)


# ---- sharding rules ----------------------------------------------------------------------
# dot_general: batch dimensions keep their sharding, contracting ones sharded alike on both
# sides give partial sums (an all-reduce), free ones keep theirs (core.sharding_rules).
# The factorizations and solves compute their trailing matrix (or vector) dimensions whole
# and keep the sharding of the leading batch dimensions, which lead every result too.

from ..core import sharding_rules as _sr  # noqa: E402

dot_general_p.sharding = _sr.dot_general
for _p in (svd_p, cholesky_p, triangular_solve_p, lu_p, qr_p, eigh_p, eig_p, geqrf_p,
           householder_product_p, ormqr_p, hessenberg_p, schur_p, tridiagonal_p,
           cholesky_update_p, symmetric_product_p):
    _p.sharding = _sr.batched_core(_p, 2)
for _p in (tridiagonal_solve_p, lu_pivots_to_permutation_p):
    _p.sharding = _sr.batched_core(_p, 1)


# ---- lowering to StableHLO (backends/pjrt) ----------------------------------------------

from .elementwise import _convert_lower  # noqa: E402


def _precision_attr(precision):
    # a DotAlgorithmPreset (not a pair) lowers as the default precision
    names = ["DEFAULT", "DEFAULT"] if precision is None or not isinstance(
        precision, (tuple, list)) else [getattr(p, "name", str(p)).upper() for p in precision]
    return "[" + ", ".join(f"#stablehlo<precision {n}>" for n in names) + "]"


def dot_general_text(ctx, dimension_numbers) -> str:
    """The ``#stablehlo.dot<...>`` attribute of ``dimension_numbers``."""
    lc, rc, lb, rb = _dims(dimension_numbers)
    return (f"#stablehlo.dot<lhs_batching_dimensions = {ctx.dims(lb)}, "
            f"rhs_batching_dimensions = {ctx.dims(rb)}, "
            f"lhs_contracting_dimensions = {ctx.dims(lc)}, "
            f"rhs_contracting_dimensions = {ctx.dims(rc)}>")


def _dot_lower(ctx, lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
               out_sharding=None):
    # the implementation's arithmetic: two dtypes meet in the result's, a wider preferred
    # type accumulates, half precision accumulates in float32, bool in int32.  The
    # operands keep their narrow type where the wider accumulation is exact anyway (the
    # products of two bfloat16/float16/int8 values fit the accumulating type): a TPU's
    # matrix unit then takes them as they are, as JAX's preferred_element_type does.
    out = ctx.avals_out[0]
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    ldt, rdt = lhs.aval.dtype, rhs.aval.dtype
    if ldt != rdt:
        target = dot_result_dtype(ldt, rdt, pet)
        lhs = _convert_lower(ctx, lhs, target)
        rhs = _convert_lower(ctx, rhs, target)
    acc = lhs.aval.dtype
    round_to = None
    if pet is not None and pet != acc and _computes_in_preferred(acc, pet):
        if (pet.kind == "c" and acc.kind != "c" or acc == np.bool_
                or _bit_width(pet) == _bit_width(acc)):
            # (a same-width preferred type rounds the operands: float16 -> bfloat16)
            lhs, rhs = _convert_lower(ctx, lhs, pet), _convert_lower(ctx, rhs, pet)
        acc = pet
    elif pet is not None and pet != acc and acc in _HALF:
        round_to = acc        # rounded to the operands' type first, as the implementation
    if acc in (np.dtype(np.float16), np.dtype("bfloat16")):
        # (a narrower float accumulates in its own type: XLA:CPU computes it in float32
        # and rounds once, and fails to compile float4/float6 operands with a wider result)
        acc = np.dtype(np.float32)
    elif acc == np.bool_:
        acc = np.dtype(np.int32)
    if lhs.aval.dtype == np.bool_:
        lhs, rhs = ctx.convert(lhs, acc), ctx.convert(rhs, acc)
    r = ctx.op("stablehlo.dot_general", [lhs, rhs], ctx.aval(out.shape, acc),
               {"dot_dimension_numbers": dot_general_text(ctx, dimension_numbers),
                "precision_config": _precision_attr(precision)})
    if round_to is not None:
        r = _convert_lower(ctx, r, round_to)
    return _convert_lower(ctx, r, out.dtype)


dot_general_p.lowering = _dot_lower


def _tril_mask(ctx, shape, k=0):
    """A bool array of ``shape`` (..., m, n): True on and below diagonal ``k``."""
    nd = len(shape)
    i64 = np.dtype(np.int64)
    rows = ctx.op("stablehlo.iota", [], ctx.aval(shape, i64), {"iota_dimension": ctx.i64(nd - 2)})
    cols = ctx.op("stablehlo.iota", [], ctx.aval(shape, i64), {"iota_dimension": ctx.i64(nd - 1)})
    return ctx.compare(ctx.binary("add", rows, ctx.full(k, rows.aval)), cols, "GE")


def _cholesky_lower(ctx, x):
    # XLA's factor leaves the upper triangle unspecified: zeroed, as LAPACK's; a matrix
    # that is not positive definite gives NaN below the diagonal (the implementation's)
    dt = x.aval.dtype
    if x.aval.size == 0:
        return x
    cdt = np.dtype(np.float32) if dt in _HALF else dt
    a = ctx.convert(x, cdt)
    low = ctx.op("stablehlo.cholesky", [a], a.aval, {"lower": "true"})
    mask = _tril_mask(ctx, a.aval.shape)
    low = ctx.select(mask, low, ctx.full(0, a.aval))
    nan = ctx.compare(low, low, "NE")
    nd = a.aval.ndim
    batch = a.aval.shape[:-2]
    bad = ctx.op("stablehlo.reduce", [nan, ctx.constant(False)],
                 ctx.aval(batch, np.bool_), {"dimensions": ctx.i64s([nd - 2, nd - 1])},
                 regions=[ctx.scalar_region([np.bool_], lambda p, q: ctx.binary("or", p, q))])
    bad = ctx.broadcast(bad, a.aval.shape, range(nd - 2))
    nans = ctx.select(mask, ctx.full(np.nan, a.aval), ctx.full(0, a.aval))
    return ctx.convert(ctx.select(bad, nans, low), dt)


def _triangular_solve_lower(ctx, a, b, left_side=False, lower=False, transpose_a=False,
                            conjugate_a=False, unit_diagonal=False):
    dt = b.aval.dtype
    if b.aval.size == 0:
        return b
    cdt = np.dtype(np.float32) if dt in _HALF else dt
    a, b = ctx.convert(a, cdt), ctx.convert(b, cdt)
    if conjugate_a and not transpose_a and cdt.kind == "c":
        from .elementwise import _conj_lower
        a = _conj_lower(ctx, a)
    trans = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
    r = ctx.op("stablehlo.triangular_solve", [a, b], b.aval,
               {"left_side": "true" if left_side else "false",
                "lower": "true" if lower else "false",
                "unit_diagonal": "true" if unit_diagonal else "false",
                "transpose_a": f"#stablehlo<transpose {trans}>"})
    return ctx.convert(r, dt)


cholesky_p.lowering = _cholesky_lower
triangular_solve_p.lowering = _triangular_solve_lower


# LU with partial pivoting, written with jaxlite's primitives and lowered like any program
# (XLA has no LU operation; JAX calls a platform's library).  Column by column, as LAPACK's
# unblocked getf2: the pivot is the first row of largest magnitude (|re| + |im| for complex
# numbers) on or below the diagonal, rows are swapped by selects (exactly), a zero pivot
# leaves its column unscaled.  One ``while`` loop over the columns; positions are chosen by
# comparing iotas with the loop counter, so the body's shapes are static.

def _fori(n, body, init):
    """The carry after ``body(i, *carry)`` for ``i`` in ``0..n-1`` (int32), bound as one
    ``while`` equation under the current trace."""
    from ..core.staging import trace_to_jaxpr
    from ..ir.jaxpr import hoist_consts
    from .control_flow import while_p
    from .elementwise import add_p, lt_p
    i32 = ShapedArray((), np.int32)
    avals = [i32] + [get_aval(c).strip_weak_type() for c in init]

    def step(i, *carry):
        return [add_p.bind(i, np.int32(1))] + list(body(i, *carry))

    body_closed, body_consts = hoist_consts(trace_to_jaxpr(step, avals))
    cond_closed, cond_consts = hoist_consts(
        trace_to_jaxpr(lambda i, *carry: [lt_p.bind(i, np.int32(n))], avals))
    outs = while_p.bind(*cond_consts, *body_consts, np.int32(0), *init,
                        cond_jaxpr=cond_closed, body_jaxpr=body_closed,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return outs[1:]


def _lu_program(x, m, n):
    from .elementwise import (abs_p, add_p, and_p, div_p, eq_p, ge_p, gt_p, imag_p, mul_p,
                              real_p, select_n_p, sub_p)
    from .reduction import argmax_p, reduce_sum_p
    from .shape import broadcast_in_dim_p, iota_p
    shape = get_aval(x).shape
    dt = get_aval(x).dtype
    nb = len(shape) - 2
    batch = shape[:nb]
    k = min(m, n)
    i32 = np.dtype(np.int32)

    def bcast(v, to, dims):
        return broadcast_in_dim_p.bind(v, shape=tuple(to), broadcast_dimensions=tuple(dims))

    rows = iota_p.bind(dtype=i32, shape=shape, dimension=nb)
    cols = iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)
    rows_v = iota_p.bind(dtype=i32, shape=batch + (m,), dimension=nb)
    piv_idx = iota_p.bind(dtype=i32, shape=batch + (k,), dimension=nb)
    zero = np.zeros((), dt)
    lead = tuple(range(nb))

    def pick_rows(a, mask):             # the row of ``a`` where ``mask`` (B, m, n) holds
        return reduce_sum_p.bind(select_n_p.bind(mask, np.zeros(shape, dt), a), axes=(nb,))

    def body(j, a, piv):
        colmask = eq_p.bind(cols, j)
        col = reduce_sum_p.bind(select_n_p.bind(colmask, np.zeros(shape, dt), a), axes=(nb + 1,))
        if dt.kind == "c":
            mag = add_p.bind(abs_p.bind(real_p.bind(col)), abs_p.bind(imag_p.bind(col)))
        else:
            mag = abs_p.bind(col)
        below_eq = ge_p.bind(rows_v, j)
        cand = select_n_p.bind(below_eq, np.full(batch + (m,), -1, mag.aval.dtype), mag)
        p = argmax_p.bind(cand, axes=(nb,), index_dtype=i32)
        at_j = eq_p.bind(rows, j)
        at_p = eq_p.bind(rows, bcast(p, shape, lead))
        row_j, row_p = pick_rows(a, at_j), pick_rows(a, at_p)
        full_j = bcast(row_j, shape, lead + (nb + 1,))
        full_p = bcast(row_p, shape, lead + (nb + 1,))
        a = select_n_p.bind(at_j, select_n_p.bind(at_p, a, full_j), full_p)
        d = reduce_sum_p.bind(select_n_p.bind(and_p.bind(at_j, colmask), np.zeros(shape, dt),
                                              a), axes=(nb, nb + 1))
        col = reduce_sum_p.bind(select_n_p.bind(colmask, np.zeros(shape, dt), a), axes=(nb + 1,))
        below = gt_p.bind(rows_v, j)
        d_v = bcast(d, batch + (m,), lead)
        scaled = select_n_p.bind(eq_p.bind(d_v, zero), div_p.bind(col, d_v), col)
        low = select_n_p.bind(below, np.zeros(batch + (m,), dt), scaled)
        below_s = gt_p.bind(rows, j)
        right = and_p.bind(gt_p.bind(cols, j), below_s)
        upd = mul_p.bind(bcast(low, shape, lead + (nb,)), full_p)
        a = select_n_p.bind(right, a, sub_p.bind(a, upd))
        a = select_n_p.bind(and_p.bind(colmask, below_s), a, bcast(low, shape, lead + (nb,)))
        piv = select_n_p.bind(eq_p.bind(piv_idx, j), piv, bcast(p, batch + (k,), lead))
        return a, piv

    a, piv = _fori(k, body, [x, np.zeros(batch + (k,), i32)])
    return a, piv


def _permutation_program(piv, size):
    from .elementwise import and_p, eq_p, ge_p, lt_p, select_n_p
    from .reduction import reduce_sum_p
    from .shape import broadcast_in_dim_p, iota_p
    shape = get_aval(piv).shape
    nb = len(shape) - 1
    batch, k = shape[:nb], shape[-1]
    i32 = np.dtype(np.int32)
    lead = tuple(range(nb))
    idx = iota_p.bind(dtype=i32, shape=batch + (size,), dimension=nb)
    pidx = iota_p.bind(dtype=i32, shape=batch + (k,), dimension=nb)
    zeros_p = np.zeros(batch + (k,), i32)
    zeros_s = np.zeros(batch + (size,), i32)

    def body(i, perm):
        p = reduce_sum_p.bind(select_n_p.bind(eq_p.bind(pidx, i), zeros_p, piv), axes=(nb,))
        pb = broadcast_in_dim_p.bind(p, shape=batch + (size,), broadcast_dimensions=lead)
        at_i, at_p = eq_p.bind(idx, i), eq_p.bind(idx, pb)
        vi = reduce_sum_p.bind(select_n_p.bind(at_i, zeros_s, perm), axes=(nb,))
        vp = reduce_sum_p.bind(select_n_p.bind(at_p, zeros_s, perm), axes=(nb,))
        vib = broadcast_in_dim_p.bind(vi, shape=batch + (size,), broadcast_dimensions=lead)
        vpb = broadcast_in_dim_p.bind(vp, shape=batch + (size,), broadcast_dimensions=lead)
        swapped = select_n_p.bind(at_i, select_n_p.bind(at_p, perm, vib), vpb)
        # a pivot outside 0..size-1 (or a step past the permutation) swaps nothing
        ok = and_p.bind(and_p.bind(ge_p.bind(pb, np.int32(0)), lt_p.bind(pb, np.int32(size))),
                        lt_p.bind(i, np.int32(size)))
        return [select_n_p.bind(ok, perm, swapped)]

    (perm,) = _fori(k, body, [idx])
    return perm


def _lu_lower(ctx, x):
    dt = x.aval.dtype
    *batch, m, n = x.aval.shape
    out_lu, out_piv, out_perm = ctx.avals_out
    if x.aval.size == 0:
        perm = ctx.op("stablehlo.iota", [], out_perm, {"iota_dimension": ctx.i64(len(batch))})
        return [ctx.full(0, out_lu), ctx.full(0, out_piv), perm]
    cdt = np.dtype(np.float32) if dt in _HALF else dt
    a = ctx.convert(x, cdt)
    lu, piv = ctx.lower_fun(lambda v: _lu_program(v, m, n), a, multiple_results=True)
    perm = ctx.lower_fun(lambda p: _permutation_program(p, m), piv)
    return [ctx.convert(lu, dt), piv, perm]


def _lu_pivots_lower(ctx, pivots, permutation_size):
    piv = ctx.convert(pivots, np.int32)
    if ctx.avals_out[0].size == 0 or pivots.aval.shape[-1] == 0:
        return ctx.op("stablehlo.iota", [], ctx.avals_out[0],
                      {"iota_dimension": ctx.i64(pivots.aval.ndim - 1)})
    return ctx.lower_fun(lambda p: _permutation_program(p, permutation_size), piv)


lu_p.lowering = _lu_lower
lu_pivots_to_permutation_p.lowering = _lu_pivots_lower


# Householder QR (LAPACK's geqr2 / org2r / orm2r, unblocked), as jaxlite programs: reflector
# j is H_j = I - tau_j v_j v_j^H with v_j[j] = 1 and v_j below the diagonal stored in the
# packed factor; geqrf applies H_j^H to the trailing columns (LAPACK's larfg conventions:
# beta = -sign(Re alpha) |(alpha, x)|, tau = 0 when there is nothing to reflect).

def _ops():
    from . import elementwise as e, reduction as r, shape as s
    return e, r, s


def _col_of(a, j, nb):
    """Column ``j`` (a traced scalar) of the stack of matrices ``a``: shape (..., m)."""
    e, r, s = _ops()
    shape = get_aval(a).shape
    cols = s.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=nb + 1)
    return r.reduce_sum_p.bind(e.select_n_p.bind(e.eq_p.bind(cols, j),
                                                 np.zeros(shape, get_aval(a).dtype), a),
                               axes=(nb + 1,))


def _reflector(packed, j, nb):
    """v_j (..., m) from the packed factor: 0 above row j, 1 at j, the stored entries below."""
    e, r, s = _ops()
    col = _col_of(packed, j, nb)
    av = get_aval(col)
    rows = s.iota_p.bind(dtype=np.dtype(np.int32), shape=av.shape, dimension=nb)
    v = e.select_n_p.bind(e.gt_p.bind(rows, j), np.zeros(av.shape, av.dtype), col)
    return e.select_n_p.bind(e.eq_p.bind(rows, j), v, np.ones(av.shape, av.dtype))


def _apply_left(c, v, tau, nb, conj_tau):
    """(I - t v v^H) c for the stack ``c`` (..., m, n), v (..., m), tau (...,); t is tau or
    its conjugate."""
    e, r, s = _ops()
    shape = get_aval(c).shape
    lead = tuple(range(nb))
    vb = s.broadcast_in_dim_p.bind(v, shape=shape, broadcast_dimensions=lead + (nb,))
    w = r.reduce_sum_p.bind(e.mul_p.bind(_conj(vb), c), axes=(nb,))          # (..., n)
    t = _conj(tau) if conj_tau else tau
    tw = e.mul_p.bind(s.broadcast_in_dim_p.bind(t, shape=get_aval(w).shape,
                                                broadcast_dimensions=lead), w)
    upd = e.mul_p.bind(vb, s.broadcast_in_dim_p.bind(tw, shape=shape,
                                                     broadcast_dimensions=lead + (nb + 1,)))
    return e.sub_p.bind(c, upd)


def _apply_right(c, v, tau, nb, conj_tau):
    """c (I - t v v^H) for the stack ``c`` (..., p, m)."""
    e, r, s = _ops()
    shape = get_aval(c).shape
    lead = tuple(range(nb))
    vb = s.broadcast_in_dim_p.bind(v, shape=shape, broadcast_dimensions=lead + (nb + 1,))
    w = r.reduce_sum_p.bind(e.mul_p.bind(c, vb), axes=(nb + 1,))             # (..., p)
    t = _conj(tau) if conj_tau else tau
    tw = e.mul_p.bind(s.broadcast_in_dim_p.bind(t, shape=get_aval(w).shape,
                                                broadcast_dimensions=lead), w)
    upd = e.mul_p.bind(s.broadcast_in_dim_p.bind(tw, shape=shape,
                                                 broadcast_dimensions=lead + (nb,)), _conj(vb))
    return e.sub_p.bind(c, upd)


def _tau_at(taus, j, nb):
    e, r, s = _ops()
    av = get_aval(taus)
    idx = s.iota_p.bind(dtype=np.dtype(np.int32), shape=av.shape, dimension=nb)
    return r.reduce_sum_p.bind(e.select_n_p.bind(e.eq_p.bind(idx, j),
                                                 np.zeros(av.shape, av.dtype), taus),
                               axes=(nb,))


def _geqrf_program(a):
    m, n = get_aval(a).shape[-2:]
    return _householder_reduce(a, 0, False, min(m, n))


def _householder_reduce(a, offset, two_sided, k):
    """Reflectors H_0 .. H_{k-1}, H_j zeroing column j below row j + offset (the packed
    factor: R or the Hessenberg/tridiagonal band above, the reflectors below; and the
    taus).  One-sided (geqrf): H_j^H applied to the columns right of j; two-sided
    (gehrd, hetrd): A <- H_j^H A H_j."""
    e, r, s = _ops()
    shape = get_aval(a).shape
    dt = get_aval(a).dtype
    nb = len(shape) - 2
    batch, (m, n) = shape[:nb], shape[nb:]
    lead = tuple(range(nb))
    rdt = np.dtype(np.float64) if dt == np.complex128 else (
        np.dtype(np.float32) if dt.kind == "c" else dt)
    i32 = np.dtype(np.int32)
    rows_v = s.iota_p.bind(dtype=i32, shape=batch + (m,), dimension=nb)
    rows = s.iota_p.bind(dtype=i32, shape=shape, dimension=nb)
    cols = s.iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)
    tidx = s.iota_p.bind(dtype=i32, shape=batch + (k,), dimension=nb)

    def real(x):
        return e.real_p.bind(x) if dt.kind == "c" else x

    def body(j, a, taus):
        col = _col_of(a, j, nb)
        piv = e.add_p.bind(j, np.int32(offset))
        at_j = e.eq_p.bind(rows_v, piv)
        below = e.gt_p.bind(rows_v, piv)
        zeros_v = np.zeros(batch + (m,), dt)
        alpha = r.reduce_sum_p.bind(e.select_n_p.bind(at_j, zeros_v, col), axes=(nb,))
        x = e.select_n_p.bind(below, zeros_v, col)
        ax = e.abs_p.bind(x)
        xnorm = e.sqrt_p.bind(r.reduce_sum_p.bind(e.mul_p.bind(ax, ax), axes=(nb,)))
        ar = real(alpha)
        norm = e.sqrt_p.bind(e.add_p.bind(e.mul_p.bind(e.abs_p.bind(alpha),
                                                       e.abs_p.bind(alpha)),
                                          e.mul_p.bind(xnorm, xnorm)))
        sgn = e.select_n_p.bind(e.lt_p.bind(ar, np.zeros((), rdt)), np.ones((), rdt),
                                -np.ones((), rdt))
        beta = e.mul_p.bind(e.neg_p.bind(sgn), norm)                 # -sign(Re a) |(a, x)|
        trivial = e.eq_p.bind(xnorm, np.zeros((), rdt))
        if dt.kind == "c":
            trivial = e.and_p.bind(trivial, e.eq_p.bind(e.imag_p.bind(alpha),
                                                        np.zeros((), rdt)))
            beta_c = e.convert_element_type_p.bind(beta, new_dtype=dt, weak_type=False)
        else:
            beta_c = beta
        safe_beta = e.select_n_p.bind(trivial, beta_c, np.ones(get_aval(beta_c).shape, dt))
        tau = e.div_p.bind(e.sub_p.bind(safe_beta, alpha), safe_beta)
        tau = e.select_n_p.bind(trivial, tau, np.zeros(get_aval(tau).shape, dt))
        denom = e.select_n_p.bind(trivial, e.sub_p.bind(alpha, beta_c),
                                  np.ones(get_aval(alpha).shape, dt))
        v = e.div_p.bind(x, s.broadcast_in_dim_p.bind(denom, shape=batch + (m,),
                                                      broadcast_dimensions=lead))
        v = e.select_n_p.bind(at_j, v, np.ones(batch + (m,), dt))
        if two_sided:       # H applied from the right first (it leaves columns <= j)
            a = _apply_right(a, v, tau, nb, False)
        # H^H applied to the columns right of j
        applied = _apply_left(a, v, tau, nb, True)
        right = e.gt_p.bind(cols, j)
        a = e.select_n_p.bind(right, a, applied)
        new_diag = e.select_n_p.bind(trivial, beta_c, alpha)
        colmask = e.eq_p.bind(cols, j)
        vb = s.broadcast_in_dim_p.bind(v, shape=shape, broadcast_dimensions=lead + (nb,))
        db = s.broadcast_in_dim_p.bind(new_diag, shape=shape, broadcast_dimensions=lead)
        newcol = e.select_n_p.bind(e.eq_p.bind(rows, piv), vb, db)
        a = e.select_n_p.bind(e.and_p.bind(colmask, e.ge_p.bind(rows, piv)), a, newcol)
        taus = e.select_n_p.bind(e.eq_p.bind(tidx, j), taus,
                                 s.broadcast_in_dim_p.bind(tau, shape=batch + (k,),
                                                           broadcast_dimensions=lead))
        return a, taus

    return _fori(k, body, [a, np.zeros(batch + (k,), dt)])


def _householder_program(a, taus):
    """Q (..., m, n): the first n columns of H_0 ... H_{k-1}."""
    e, r, s = _ops()
    shape = get_aval(a).shape
    dt = get_aval(a).dtype
    nb = len(shape) - 2
    m, n = shape[nb:]
    k = get_aval(taus).shape[-1]
    eye = np.broadcast_to(np.eye(m, n, dtype=dt), shape)

    def body(i, q):
        j = e.sub_p.bind(np.int32(k - 1), i)
        v = _reflector(a, j, nb)
        return [_apply_left(q, v, _tau_at(taus, j, nb), nb, False)]

    (q,) = _fori(k, body, [np.array(eye)])
    return q


def _ormqr_program(a, taus, c, left, transpose):
    e, r, s = _ops()
    nb = get_aval(a).ndim - 2
    k = get_aval(taus).shape[-1]
    # Q = H_0 ... H_{k-1}: Q c applies H_{k-1} first; Q^H c applies H_0^H first; c Q applies
    # H_0 first; c Q^H applies H_{k-1}^H first
    backwards = left != transpose

    def body(i, c):
        j = e.sub_p.bind(np.int32(k - 1), i) if backwards else i
        v = _reflector(a, j, nb)
        t = _tau_at(taus, j, nb)
        if left:
            return [_apply_left(c, v, t, nb, transpose)]
        return [_apply_right(c, v, t, nb, transpose)]

    (out,) = _fori(k, body, [c])
    return out


def _upcast(ctx, *xs):
    dt = xs[0].aval.dtype
    cdt = np.dtype(np.float32) if dt in _HALF else dt
    return [ctx.convert(x, cdt) for x in xs]


def _geqrf_lower(ctx, a):
    out_a, out_t = ctx.avals_out
    if a.aval.size == 0:
        return [ctx.full(0, out_a), ctx.full(0, out_t)]
    (aa,) = _upcast(ctx, a)
    packed, taus = ctx.lower_fun(_geqrf_program, aa, multiple_results=True)
    return [ctx.convert(packed, out_a.dtype), ctx.convert(taus, out_t.dtype)]


def _householder_product_lower(ctx, a, taus):
    out = ctx.avals_out[0]
    if a.aval.size == 0 or taus.aval.shape[-1] == 0:
        m, n = out.shape[-2:]
        return ctx.constant(np.broadcast_to(np.eye(m, n, dtype=out.dtype), out.shape))
    aa, tt = _upcast(ctx, a, taus)
    return ctx.convert(ctx.lower_fun(_householder_program, aa, tt), out.dtype)


def _ormqr_lower(ctx, a, taus, c, left=True, transpose=False):
    out = ctx.avals_out[0]
    if c.aval.size == 0 or taus.aval.shape[-1] == 0:
        return c if c.aval.size else ctx.full(0, out)
    aa, tt, cc = _upcast(ctx, a, taus, c)
    return ctx.convert(ctx.lower_fun(
        lambda x, t, y: _ormqr_program(x, t, y, left, transpose), aa, tt, cc), out.dtype)


def _qr_lower(ctx, x, pivoting=False, full_matrices=True):
    if pivoting:
        raise ctx.unsupported("QR with column pivoting has no jaxlite-written algorithm yet")
    q_aval, r_aval = ctx.avals_out
    *batch, m, n = x.aval.shape
    kq = q_aval.shape[-1]
    if x.aval.size == 0:
        return [ctx.constant(np.broadcast_to(np.eye(m, kq, dtype=q_aval.dtype), q_aval.shape)),
                ctx.full(0, r_aval)]
    (xx,) = _upcast(ctx, x)
    cdt = xx.aval.dtype
    nb = len(batch)

    def program(v):
        e, r, s = _ops()
        packed, taus = _geqrf_program(v)
        # Q's columns: the reflectors' block padded (or cut) to kq columns
        if n >= kq:
            block = s.slice_p.bind(packed, start_indices=(0,) * (nb + 2),
                                   limit_indices=tuple(batch) + (m, kq), strides=None)
        else:
            block = s.pad_p.bind(packed, np.zeros((), cdt),
                                 padding_config=((0, 0, 0),) * (nb + 1) + ((0, kq - n, 0),))
        k = get_aval(taus).shape[-1]
        if k > kq:
            taus = s.slice_p.bind(taus, start_indices=(0,) * (nb + 1),
                                  limit_indices=tuple(batch) + (kq,), strides=None)
        q = _householder_program(block, taus)
        rr = s.slice_p.bind(packed, start_indices=(0,) * (nb + 2),
                            limit_indices=tuple(batch) + (r_aval.shape[-2], n), strides=None)
        shape = get_aval(rr).shape
        rows = s.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=nb)
        cols = s.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=nb + 1)
        rr = e.select_n_p.bind(e.le_p.bind(rows, cols), np.zeros(shape, cdt), rr)
        return q, rr

    q, rr = ctx.lower_fun(program, xx, multiple_results=True)
    return [ctx.convert(q, q_aval.dtype), ctx.convert(rr, r_aval.dtype)]


geqrf_p.lowering = _geqrf_lower
householder_product_p.lowering = _householder_product_lower
ormqr_p.lowering = _ormqr_lower
qr_p.lowering = _qr_lower


def _symmetric_product_lower(ctx, a, c, alpha=1.0, beta=0.0, symmetrize_output=False):
    out = ctx.avals_out[0]
    aa, cc = _upcast(ctx, a, c)
    nb = aa.aval.ndim - 2
    lead = list(range(nb))
    dims = ((aa.aval.ndim - 1,), (aa.aval.ndim - 1,)), (tuple(lead), tuple(lead))
    prod = ctx.op("stablehlo.dot_general", [aa, aa], cc.aval,
                  {"dot_dimension_numbers": dot_general_text(ctx, dims),
                   "precision_config": _precision_attr(None)})
    r = ctx.binary("add", ctx.binary("multiply", ctx.full(alpha, prod.aval), prod),
                   ctx.binary("multiply", ctx.full(beta, cc.aval), cc))
    if symmetrize_output:
        perm = lead + [nb + 1, nb]
        t = ctx.op("stablehlo.transpose", [r], r.aval, {"permutation": ctx.i64s(perm)})
        r = ctx.select(_tril_mask(ctx, r.aval.shape), r, t)
    return ctx.convert(r, out.dtype)


def _cholesky_update_program(r, w):
    # the implementation's sweep of Givens rotations, row k against the running vector
    e, red, s = _ops()
    shape = get_aval(r).shape
    dt = get_aval(r).dtype
    nb = len(shape) - 2
    lead = tuple(range(nb))
    batch, n = shape[:nb], shape[-1]
    i32 = np.dtype(np.int32)
    rows = s.iota_p.bind(dtype=i32, shape=shape, dimension=nb)
    cols = s.iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)
    idx = s.iota_p.bind(dtype=i32, shape=batch + (n,), dimension=nb)
    zeros_v = np.zeros(batch + (n,), dt)

    def body(k, r, w):
        at_k = e.eq_p.bind(rows, k)
        row = red.reduce_sum_p.bind(e.select_n_p.bind(at_k, np.zeros(shape, dt), r),
                                    axes=(nb,))
        rkk = red.reduce_sum_p.bind(e.select_n_p.bind(e.eq_p.bind(idx, k), zeros_v, row),
                                    axes=(nb,))
        wk = red.reduce_sum_p.bind(e.select_n_p.bind(e.eq_p.bind(idx, k), zeros_v, w),
                                   axes=(nb,))
        rad = e.sqrt_p.bind(e.add_p.bind(e.mul_p.bind(rkk, rkk), e.mul_p.bind(wk, wk)))
        zero = e.eq_p.bind(rad, np.zeros((), dt))
        safe = e.select_n_p.bind(zero, rad, np.ones(get_aval(rad).shape, dt))
        c = e.select_n_p.bind(zero, e.div_p.bind(rkk, safe), np.ones(get_aval(rad).shape, dt))
        sn = e.select_n_p.bind(zero, e.div_p.bind(wk, safe), np.zeros(get_aval(rad).shape, dt))
        cb = s.broadcast_in_dim_p.bind(c, shape=batch + (n,), broadcast_dimensions=lead)
        sb = s.broadcast_in_dim_p.bind(sn, shape=batch + (n,), broadcast_dimensions=lead)
        tail = e.ge_p.bind(idx, k)
        new_row = e.add_p.bind(e.mul_p.bind(cb, row), e.mul_p.bind(sb, w))
        new_w = e.add_p.bind(e.neg_p.bind(e.mul_p.bind(sb, row)), e.mul_p.bind(cb, w))
        new_row = e.select_n_p.bind(tail, row, new_row)
        w = e.select_n_p.bind(tail, w, new_w)
        full = s.broadcast_in_dim_p.bind(new_row, shape=shape,
                                         broadcast_dimensions=lead + (nb + 1,))
        r = e.select_n_p.bind(e.and_p.bind(at_k, e.ge_p.bind(cols, k)), r, full)
        return r, w

    r, _ = _fori(n, body, [r, w])
    return r


def _cholesky_update_lower(ctx, r, w):
    # in the operands' precision (the implementation rotates in float64 and rounds once)
    out = ctx.avals_out[0]
    if r.aval.size == 0:
        return ctx.full(0, out)
    rr, ww = _upcast(ctx, r, w)
    return ctx.convert(ctx.lower_fun(_cholesky_update_program, rr, ww), out.dtype)


symmetric_product_p.lowering = _symmetric_product_lower
cholesky_update_p.lowering = _cholesky_update_lower


# Symmetric eigenvalues (eigh) and singular values (svd) by Jacobi rotations, as jaxlite
# programs: cyclic sweeps over the pairs (p, q), each rotation chosen to zero one
# off-diagonal element (two-sided for eigh; one-sided on the columns for svd, whose
# singular values are then the column norms), until the off-diagonal part is below the
# dtype's epsilon relative to the matrix (at most 30 sweeps).  Values come sorted as
# LAPACK's (ascending eigenvalues, descending singular values); the vectors span the same
# spaces as LAPACK's but each may have the opposite sign.  Real operands only.

def _while_loop(cond, body, init):
    """``while cond(*carry): carry = body(*carry)``, bound as one ``while`` equation."""
    from ..core.staging import trace_to_jaxpr
    from ..ir.jaxpr import hoist_consts
    from .control_flow import while_p
    avals = [get_aval(c).strip_weak_type() for c in init]
    body_closed, body_consts = hoist_consts(trace_to_jaxpr(lambda *c: list(body(*c)), avals))
    cond_closed, cond_consts = hoist_consts(trace_to_jaxpr(lambda *c: [cond(*c)], avals))
    return while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=cond_closed,
                        body_jaxpr=body_closed, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))


_MAX_SWEEPS = 30


def _pick(x, mask, axes):
    """The sum of ``x`` where ``mask`` holds, over ``axes`` (one element, exactly)."""
    e, r, _ = _ops()
    av = get_aval(x)
    return r.reduce_sum_p.bind(e.select_n_p.bind(mask, np.zeros(av.shape, av.dtype), x),
                               axes=tuple(axes))


def _re(x):
    e, _, _ = _ops()
    return e.real_p.bind(x) if get_aval(x).dtype.kind == "c" else x


def _scale_col(x, q, phase, nb):
    """``x`` with column ``q`` multiplied by ``phase`` (one scalar per matrix)."""
    e, _, sh = _ops()
    shape = get_aval(x).shape
    cols = sh.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=nb + 1)
    pb = sh.broadcast_in_dim_p.bind(phase, shape=shape, broadcast_dimensions=tuple(range(nb)))
    return e.select_n_p.bind(e.eq_p.bind(cols, q), x, e.mul_p.bind(x, pb))


def _rotation(app, aqq, apq):
    """(c, s, u) of the Jacobi rotation zeroing apq (Golub & Van Loan's sym.schur2), in
    apq's dtype; for a complex apq, u = apq / |apq| (1 at 0) is the phase taken out of it
    first (None for a real one)."""
    e, _, _ = _ops()
    u = None
    cdt = get_aval(apq).dtype
    if cdt.kind == "c":
        mag = e.abs_p.bind(apq)
        nz = e.ne_p.bind(mag, np.zeros((), get_aval(mag).dtype))
        safe = e.select_n_p.bind(nz, np.ones(get_aval(mag).shape, get_aval(mag).dtype), mag)
        u = e.select_n_p.bind(nz, np.ones(get_aval(apq).shape, cdt), e.div_p.bind(
            apq, e.convert_element_type_p.bind(safe, new_dtype=cdt, weak_type=False)))
        c, s = _real_rotation(app, aqq, mag)

        def cx(v):
            return e.convert_element_type_p.bind(v, new_dtype=cdt, weak_type=False)
        return cx(c), cx(s), u
    c, s = _real_rotation(app, aqq, apq)
    return c, s, u


def _real_rotation(app, aqq, apq):
    e, _, _ = _ops()
    dt = get_aval(app).dtype
    shape = get_aval(app).shape
    one, zero = np.ones(shape, dt), np.zeros(shape, dt)
    nz = e.ne_p.bind(apq, zero)
    safe = e.select_n_p.bind(nz, one, apq)
    tau = e.div_p.bind(e.sub_p.bind(aqq, app), e.mul_p.bind(np.asarray(2, dt), safe))
    sgn = e.select_n_p.bind(e.lt_p.bind(tau, zero), one, -one)
    t = e.div_p.bind(sgn, e.add_p.bind(e.abs_p.bind(tau),
                                       e.sqrt_p.bind(e.add_p.bind(one, e.mul_p.bind(tau, tau)))))
    c = e.rsqrt_p.bind(e.add_p.bind(one, e.mul_p.bind(t, t)))
    s = e.mul_p.bind(t, c)
    return e.select_n_p.bind(nz, one, c), e.select_n_p.bind(nz, zero, s)


def _rotate_cols(x, p, q, c, s, nb):
    """x J on columns p, q: x[:, p] <- c x_p - s x_q, x[:, q] <- s x_p + c x_q."""
    e, _, sh = _ops()
    shape = get_aval(x).shape
    lead = tuple(range(nb))
    cols = sh.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=nb + 1)
    at_p, at_q = e.eq_p.bind(cols, p), e.eq_p.bind(cols, q)
    xp, xq = _pick(x, at_p, (nb + 1,)), _pick(x, at_q, (nb + 1,))
    vshape = get_aval(xp).shape
    cb = sh.broadcast_in_dim_p.bind(c, shape=vshape, broadcast_dimensions=lead)
    sb = sh.broadcast_in_dim_p.bind(s, shape=vshape, broadcast_dimensions=lead)
    new_p = e.sub_p.bind(e.mul_p.bind(cb, xp), e.mul_p.bind(sb, xq))
    new_q = e.add_p.bind(e.mul_p.bind(sb, xp), e.mul_p.bind(cb, xq))
    dims = lead + (nb,)
    return e.select_n_p.bind(at_p, e.select_n_p.bind(
        at_q, x, sh.broadcast_in_dim_p.bind(new_q, shape=shape, broadcast_dimensions=dims)),
        sh.broadcast_in_dim_p.bind(new_p, shape=shape, broadcast_dimensions=dims))


def _transpose_last(x, nb):
    _, _, sh = _ops()
    return sh.transpose_p.bind(x, permutation=tuple(range(nb)) + (nb + 1, nb))


def _pair_tables(n):
    pairs = [(p, q) for p in range(n) for q in range(p + 1, n)]
    return (np.array([p for p, _ in pairs], np.int32), np.array([q for _, q in pairs], np.int32))


def _jacobi_sweeps(x, v, nb, two_sided, converged):
    """Cyclic Jacobi sweeps on ``x`` (and the accumulated rotations ``v``) until
    ``converged(x)`` or ``_MAX_SWEEPS``."""
    e, r, sh = _ops()
    n = get_aval(x).shape[-1]
    ptab, qtab = _pair_tables(n)
    npairs = len(ptab)
    shape = get_aval(x).shape
    i32 = np.dtype(np.int32)

    def rotate(t, x, v):
        pidx = sh.iota_p.bind(dtype=i32, shape=(npairs,), dimension=0)
        p = r.reduce_sum_p.bind(e.select_n_p.bind(e.eq_p.bind(pidx, t),
                                                  np.zeros(npairs, i32), ptab), axes=(0,))
        q = r.reduce_sum_p.bind(e.select_n_p.bind(e.eq_p.bind(pidx, t),
                                                  np.zeros(npairs, i32), qtab), axes=(0,))
        rows = sh.iota_p.bind(dtype=i32, shape=shape, dimension=nb)
        cols = sh.iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)
        # complex entries: column q is first turned by the phase that makes the pair's
        # off-diagonal entry real (a diagonal unitary), then the real rotation applies
        if two_sided:
            def el(i, j):
                return _pick(x, e.and_p.bind(e.eq_p.bind(rows, i), e.eq_p.bind(cols, j)),
                             (nb, nb + 1))
            apq = el(p, q)
            c, s, u = _rotation(_re(el(p, p)), _re(el(q, q)), apq)
            if u is not None:
                x = _scale_col(x, q, _conj(u), nb)
                x = _transpose_last(_scale_col(_transpose_last(x, nb), q, u, nb), nb)
            x = _rotate_cols(x, p, q, c, s, nb)
            x = _transpose_last(_rotate_cols(_transpose_last(x, nb), p, q, c, s, nb), nb)
            off = e.or_p.bind(e.and_p.bind(e.eq_p.bind(rows, p), e.eq_p.bind(cols, q)),
                              e.and_p.bind(e.eq_p.bind(rows, q), e.eq_p.bind(cols, p)))
            x = e.select_n_p.bind(off, x, np.zeros(shape, get_aval(x).dtype))
        else:
            # the Gram matrix's entries of columns p and q
            xp = _pick(x, e.eq_p.bind(cols, p), (nb + 1,))
            xq = _pick(x, e.eq_p.bind(cols, q), (nb + 1,))
            dot = lambda a, b: r.reduce_sum_p.bind(e.mul_p.bind(_conj(a), b),  # noqa
                                                   axes=(nb,))
            c, s, u = _rotation(_re(dot(xp, xp)), _re(dot(xq, xq)), dot(xp, xq))
            if u is not None:
                x = _scale_col(x, q, _conj(u), nb)
            x = _rotate_cols(x, p, q, c, s, nb)
        if u is not None:
            v = _scale_col(v, q, _conj(u), nb)
        v = _rotate_cols(v, p, q, c, s, nb)
        return x, v

    def sweep(k, x, v):
        x, v = _fori(npairs, rotate, [x, v])
        return [e.add_p.bind(k, np.int32(1)), x, v]

    def more(k, x, v):
        return e.and_p.bind(e.lt_p.bind(k, np.int32(_MAX_SWEEPS)), e.not_p.bind(converged(x)))

    if npairs == 0:
        return x, v
    _, x, v = _while_loop(more, sweep, [np.int32(0), x, v])
    return x, v


def _eye_stack(shape, dt):
    return np.array(np.broadcast_to(np.eye(shape[-2], shape[-1], dtype=dt), shape))


def _sorted_by(keys, vecs, nb, descending):
    """``keys`` (..., k) sorted (ascending, or descending) and the columns of ``vecs``
    (..., m, k; or a list of such stacks) in that order (a product with the permutation
    matrix: exact)."""
    e, r, sh = _ops()
    kshape = get_aval(keys).shape
    i32 = np.dtype(np.int32)
    idx = sh.iota_p.bind(dtype=i32, shape=kshape, dimension=nb)
    sk = e.neg_p.bind(keys) if descending else keys
    sk, perm = r.sort_p.bind(sk, idx, dimension=nb, is_stable=True, num_keys=1)
    out = e.neg_p.bind(sk) if descending else sk
    if vecs is None:
        return out, None
    k = kshape[-1]
    pshape = kshape[:nb] + (k, k)
    rowsk = sh.iota_p.bind(dtype=i32, shape=pshape, dimension=nb)
    permb = sh.broadcast_in_dim_p.bind(perm, shape=pshape,
                                       broadcast_dimensions=tuple(range(nb)) + (nb + 1,))
    lead = tuple(range(nb))

    def move(vv):
        pm = e.convert_element_type_p.bind(e.eq_p.bind(rowsk, permb),
                                           new_dtype=get_aval(vv).dtype, weak_type=False)
        return dot_general_p.bind(vv, pm, dimension_numbers=(((nb + 1,), (nb,)), (lead, lead)),
                                  precision=None, preferred_element_type=None)
    if isinstance(vecs, list):
        return out, [move(vv) for vv in vecs]
    return out, move(vecs)


def _sq_norm(x, axes):
    e, r, _ = _ops()
    if get_aval(x).dtype.kind == "c":
        x = e.abs_p.bind(x)
    return r.reduce_sum_p.bind(e.mul_p.bind(x, x), axes=tuple(axes))


def _eigh_program(a, lower):
    e, r, sh = _ops()
    shape = get_aval(a).shape
    dt = get_aval(a).dtype
    nb = len(shape) - 2
    i32 = np.dtype(np.int32)
    rows = sh.iota_p.bind(dtype=i32, shape=shape, dimension=nb)
    cols = sh.iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)
    # the symmetric matrix of the triangle LAPACK reads
    keep = e.ge_p.bind(rows, cols) if lower else e.le_p.bind(rows, cols)
    a = e.select_n_p.bind(keep, _conj(_transpose_last(a, nb)), a)
    diag = e.eq_p.bind(rows, cols)
    if dt.kind == "c":      # the diagonal of a Hermitian matrix is real
        a = e.select_n_p.bind(diag, a, e.convert_element_type_p.bind(
            e.real_p.bind(a), new_dtype=dt, weak_type=False))
    rdt = np.dtype(np.float64) if dt == np.complex128 else (
        np.dtype(np.float32) if dt.kind == "c" else dt)
    eps2 = np.asarray(float(np.finfo(rdt).eps) ** 2, rdt)
    total = _sq_norm(a, (nb, nb + 1))

    def converged(x):
        off = _sq_norm(e.select_n_p.bind(diag, x, np.zeros(shape, dt)), (nb, nb + 1))
        done = e.le_p.bind(off, e.mul_p.bind(eps2, total))
        return r.reduce_and_p.bind(done, axes=tuple(range(nb))) if nb else done

    x, v = _jacobi_sweeps(a, _eye_stack(shape, dt), nb, True, converged)
    w = _re(_pick(x, diag, (nb + 1,)))
    return _sorted_by(w, v, nb, False)


def _eigh_lower(ctx, x, lower=True, sort_eigenvalues=True, subset_by_index=None):
    v_aval, w_aval = ctx.avals_out
    if x.aval.size == 0:
        return [ctx.full(0, v_aval), ctx.full(0, w_aval)]
    (xx,) = _upcast(ctx, x)
    w, v = ctx.lower_fun(lambda m: _eigh_program(m, lower), xx, multiple_results=True)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        nd = xx.aval.ndim
        w = ctx.op("stablehlo.slice", [w], ctx.aval(w.aval.shape[:-1] + (hi - lo,), w.aval.dtype),
                   {"start_indices": ctx.i64s([0] * (nd - 2) + [lo]),
                    "limit_indices": ctx.i64s(list(w.aval.shape[:-1]) + [hi]),
                    "strides": ctx.i64s([1] * (nd - 1))})
        v = ctx.op("stablehlo.slice", [v], ctx.aval(v.aval.shape[:-1] + (hi - lo,), v.aval.dtype),
                   {"start_indices": ctx.i64s([0] * (nd - 1) + [lo]),
                    "limit_indices": ctx.i64s(list(v.aval.shape[:-1]) + [hi]),
                    "strides": ctx.i64s([1] * nd)})
    return [ctx.convert(v, v_aval.dtype), ctx.convert(w, w_aval.dtype)]


eigh_p.lowering = _eigh_lower


def _svd_program(a, full_matrices, compute_uv):
    """One-sided Jacobi on the columns of ``a`` (..., m, n), m >= n: singular values the
    column norms, V the accumulated rotations, U the normalised columns completed to an
    orthonormal basis by a Householder QR (signs fixed so that U's columns of nonzero
    singular values are the normalised columns themselves)."""
    e, r, sh = _ops()
    shape = get_aval(a).shape
    dt = get_aval(a).dtype
    nb = len(shape) - 2
    batch, (m, n) = shape[:nb], shape[nb:]
    lead = tuple(range(nb))
    rdt = np.dtype(np.float64) if dt == np.complex128 else (
        np.dtype(np.float32) if dt.kind == "c" else dt)
    eps2 = np.asarray(float(np.finfo(rdt).eps) ** 2, rdt)
    i32 = np.dtype(np.int32)
    gshape = batch + (n, n)
    grows = sh.iota_p.bind(dtype=i32, shape=gshape, dimension=nb)
    gcols = sh.iota_p.bind(dtype=i32, shape=gshape, dimension=nb + 1)
    gdiag = e.eq_p.bind(grows, gcols)

    def gram(x):
        return dot_general_p.bind(_conj(x), x, dimension_numbers=(((nb,), (nb,)), (lead, lead)),
                                  precision=None, preferred_element_type=None)

    def converged(x):
        g = gram(x)
        off = _sq_norm(e.select_n_p.bind(gdiag, g, np.zeros(gshape, dt)), (nb, nb + 1))
        total = _sq_norm(g, (nb, nb + 1))
        done = e.le_p.bind(off, e.mul_p.bind(eps2, total))
        return r.reduce_and_p.bind(done, axes=lead) if nb else done

    x, v = _jacobi_sweeps(a, _eye_stack(gshape, dt), nb, False, converged)
    s = e.sqrt_p.bind(_sq_norm(x, (nb,)))
    if not compute_uv:
        return [_sorted_by(s, None, nb, True)[0]]
    s, (x, v) = _sorted_by(s, [x, v], nb, True)
    zero = e.eq_p.bind(s, np.zeros((), rdt))
    safe = e.select_n_p.bind(zero, s, np.ones(get_aval(s).shape, rdt))
    if dt.kind == "c":
        safe = e.convert_element_type_p.bind(safe, new_dtype=dt, weak_type=False)
    u0 = e.div_p.bind(x, sh.broadcast_in_dim_p.bind(safe, shape=shape,
                                                    broadcast_dimensions=lead + (nb + 1,)))
    kq = m if full_matrices else n
    block = u0 if kq == n else sh.pad_p.bind(
        u0, np.zeros((), dt), padding_config=((0, 0, 0),) * (nb + 1) + ((0, kq - n, 0),))
    packed, taus = _geqrf_program(block)
    q = _householder_program(packed, taus)
    # Q's column j is ±u0's: the sign of R's diagonal (which is ±1 there, 0 for a zero column)
    rdiag = _pick(packed, e.eq_p.bind(sh.iota_p.bind(dtype=i32, shape=get_aval(packed).shape,
                                                     dimension=nb),
                                      sh.iota_p.bind(dtype=i32, shape=get_aval(packed).shape,
                                                     dimension=nb + 1)), (nb,))
    sgn = e.select_n_p.bind(e.lt_p.bind(_re(rdiag), np.zeros((), rdt)),
                            np.ones(batch + (kq,), dt),
                            -np.ones(batch + (kq,), dt))
    u = e.mul_p.bind(q, sh.broadcast_in_dim_p.bind(sgn, shape=get_aval(q).shape,
                                                   broadcast_dimensions=lead + (nb + 1,)))
    return [u, s, _conj(_transpose_last(v, nb))]

def _svd_lower(ctx, x, full_matrices=True, compute_uv=True):
    outs = ctx.avals_out
    *batch, m, n = x.aval.shape
    nb = len(batch)
    if x.aval.size == 0:
        if not compute_uv:
            return [ctx.full(0, outs[0])]
        u, s, vh = outs
        return [ctx.constant(np.broadcast_to(np.eye(*u.shape[-2:], dtype=u.dtype), u.shape)),
                ctx.full(0, s),
                ctx.constant(np.broadcast_to(np.eye(*vh.shape[-2:], dtype=vh.dtype), vh.shape))]
    (xx,) = _upcast(ctx, x)
    wide = m < n
    if wide:        # the SVD of the transpose, its factors swapped back
        xx = ctx.op("stablehlo.transpose", [xx],
                    ctx.aval(tuple(batch) + (n, m), xx.aval.dtype),
                    {"permutation": ctx.i64s(list(range(nb)) + [nb + 1, nb])})
    res = ctx.lower_fun(lambda a: _svd_program(a, full_matrices, compute_uv), xx,
                        multiple_results=True)
    if not compute_uv:
        return [ctx.convert(res[0], outs[0].dtype)]
    u, s, vh = res
    if wide:
        perm = ctx.i64s(list(range(nb)) + [nb + 1, nb])

        def tr(v):
            sh = v.aval.shape
            return ctx.op("stablehlo.transpose", [v],
                          ctx.aval(sh[:-2] + (sh[-1], sh[-2]), v.aval.dtype),
                          {"permutation": perm})
        u, vh = tr(vh), tr(u)
    return [ctx.convert(u, outs[0].dtype), ctx.convert(s, outs[1].dtype),
            ctx.convert(vh, outs[2].dtype)]


svd_p.lowering = _svd_lower


def _tridiagonal_solve_program(dl, d, du, b):
    """The tridiagonal system as a dense matrix, solved by the LU program with partial
    pivoting (the row exchanges LAPACK's gtsv makes: the larger of the two candidate rows,
    the diagonal one on a tie) and two triangular solves; NaN for an exactly singular
    system, as the implementation."""
    e, r, sh = _ops()
    bshape = get_aval(b).shape
    nb = len(bshape) - 2
    m = bshape[-2]
    dt = get_aval(b).dtype
    lead = tuple(range(nb))
    shape = bshape[:nb] + (m, m)
    i32 = np.dtype(np.int32)
    rows = sh.iota_p.bind(dtype=i32, shape=shape, dimension=nb)
    cols = sh.iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)

    def along_rows(v):
        return sh.broadcast_in_dim_p.bind(v, shape=shape, broadcast_dimensions=lead + (nb,))

    a = np.zeros(shape, dt)
    a = e.select_n_p.bind(e.eq_p.bind(rows, cols), a, along_rows(d))
    a = e.select_n_p.bind(e.eq_p.bind(rows, e.add_p.bind(cols, np.int32(1))), a, along_rows(dl))
    a = e.select_n_p.bind(e.eq_p.bind(e.add_p.bind(rows, np.int32(1)), cols), a, along_rows(du))
    lu, piv = _lu_program(a, m, m)
    perm = _permutation_program(piv, m)
    pmat = e.convert_element_type_p.bind(
        e.eq_p.bind(sh.broadcast_in_dim_p.bind(perm, shape=shape,
                                               broadcast_dimensions=lead + (nb,)), cols),
        new_dtype=dt, weak_type=False)
    pb = dot_general_p.bind(pmat, b, dimension_numbers=(((nb + 1,), (nb,)), (lead, lead)),
                            precision=None, preferred_element_type=None)
    y = triangular_solve_p.bind(lu, pb, left_side=True, lower=True, transpose_a=False,
                                conjugate_a=False, unit_diagonal=True)
    x = triangular_solve_p.bind(lu, y, left_side=True, lower=False, transpose_a=False,
                                conjugate_a=False, unit_diagonal=False)
    udiag = _pick(lu, e.eq_p.bind(rows, cols), (nb + 1,))
    singular = r.reduce_or_p.bind(e.eq_p.bind(udiag, np.zeros((), dt)), axes=(nb,))
    bad = sh.broadcast_in_dim_p.bind(singular, shape=bshape, broadcast_dimensions=lead)
    return e.select_n_p.bind(bad, x, np.full(bshape, np.nan, dt))


def _tridiagonal_solve_lower(ctx, dl, d, du, b, perturb_singular=False):
    out = ctx.avals_out[0]
    if b.aval.size == 0:
        return ctx.full(0, out)
    # (perturb_singular computes as the implementation does, which takes the system as it is)
    dl, d, du, b = _upcast(ctx, dl, d, du, b)
    if b.aval.shape[-2] == 1:           # one equation: b / d, as the implementation
        dd = ctx.broadcast(d, b.aval.shape, range(d.aval.ndim))
        return ctx.convert(ctx.binary("divide", b, dd), out.dtype)
    return ctx.convert(ctx.lower_fun(_tridiagonal_solve_program, dl, d, du, b), out.dtype)


tridiagonal_solve_p.lowering = _tridiagonal_solve_lower


def _hessenberg_lower(ctx, a):
    h_aval, t_aval = ctx.avals_out
    n = a.aval.shape[-1]
    if a.aval.size == 0 or n == 1:
        return [a, ctx.full(0, t_aval)]
    (aa,) = _upcast(ctx, a)
    h, taus = ctx.lower_fun(lambda x: _householder_reduce(x, 1, True, n - 1), aa,
                            multiple_results=True)
    return [ctx.convert(h, h_aval.dtype), ctx.convert(taus, t_aval.dtype)]


def _tridiagonal_program(a, lower):
    """LAPACK's hetrd/sytrd: the Hermitian matrix of the triangle ``lower`` names reduced
    by reflectors from the top (lower; the upper case is the lower one of the matrix with
    both axes reversed, its results reversed back); the other triangle of the packed
    result keeps the operand's entries, the diagonal is real."""
    e, r, s = _ops()
    shape = get_aval(a).shape
    dt = get_aval(a).dtype
    nb = len(shape) - 2
    n = shape[-1]
    if not lower:
        a = s.rev_p.bind(a, dimensions=(nb, nb + 1))
    i32 = np.dtype(np.int32)
    rows = s.iota_p.bind(dtype=i32, shape=shape, dimension=nb)
    cols = s.iota_p.bind(dtype=i32, shape=shape, dimension=nb + 1)
    herm = e.select_n_p.bind(e.ge_p.bind(rows, cols), _conj(_transpose_last(a, nb)), a)
    diag = e.eq_p.bind(rows, cols)
    if dt.kind == "c":
        herm = e.select_n_p.bind(diag, herm, e.convert_element_type_p.bind(
            e.real_p.bind(herm), new_dtype=dt, weak_type=False))
    packed, taus = _householder_reduce(herm, 1, True, n - 1)
    if dt.kind == "c":
        packed = e.select_n_p.bind(diag, packed, e.convert_element_type_p.bind(
            e.real_p.bind(packed), new_dtype=dt, weak_type=False))
    c = e.select_n_p.bind(e.lt_p.bind(rows, cols), packed, a)    # upper: the operand's
    d = _re(_pick(packed, diag, (nb + 1,)))
    sub = e.eq_p.bind(rows, e.add_p.bind(cols, np.int32(1)))
    off = _re(_pick(packed, sub, (nb,)))                           # (..., n): last is 0
    off = s.slice_p.bind(off, start_indices=(0,) * (nb + 1),
                         limit_indices=shape[:nb] + (n - 1,), strides=None)
    if not lower:
        c = s.rev_p.bind(c, dimensions=(nb, nb + 1))
        d, off, taus = (s.rev_p.bind(v, dimensions=(nb,)) for v in (d, off, taus))
    return c, d, off, taus


def _tridiagonal_lower(ctx, a, lower=True):
    outs = ctx.avals_out
    n = a.aval.shape[-1]
    if a.aval.size == 0 or n == 1:
        d = (ctx.convert(ctx.reshape(a, a.aval.shape[:-1]), outs[1].dtype)
             if a.aval.size and a.aval.dtype.kind != "c" else None)
        if a.aval.size and a.aval.dtype.kind == "c":
            d = ctx.op("stablehlo.real", [ctx.reshape(a, a.aval.shape[:-1])], outs[1])
        return [a, d if d is not None else ctx.full(0, outs[1]), ctx.full(0, outs[2]),
                ctx.full(0, outs[3])]
    (aa,) = _upcast(ctx, a)
    res = ctx.lower_fun(lambda x: _tridiagonal_program(x, lower), aa, multiple_results=True)
    return [ctx.convert(v, o.dtype) for v, o in zip(res, outs)]


hessenberg_p.lowering = _hessenberg_lower
tridiagonal_p.lowering = _tridiagonal_lower
