"""Linear-algebra primitives: ``dot_general`` (contraction over given dimensions with batch
dimensions, BLAS-backed) and ``svd`` (singular value decomposition of stacked matrices,
LAPACK through NumPy)."""
from __future__ import annotations

import functools
import math

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ._rules import check_dtypes, upcast_half
from .elementwise import _convert_impl


def _dims(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return tuple(lc), tuple(rc), tuple(lb), tuple(rb)


# (maximum exponent, mantissa bits) of the floating dtypes, for _precision_rank
_FLOAT_RANGE = {np.dtype(np.float16): (16, 10), np.dtype("bfloat16"): (128, 7),
                np.dtype(np.float32): (128, 23), np.dtype(np.float64): (1024, 52)}


def _bit_width(dt) -> int:
    """Bits of one element (of the real part for complex dtypes; 1 for bool)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return 1
    return dt.itemsize * 4 if dt.kind == "c" else dt.itemsize * 8


def _precision_rank(dt):
    """How precise ``dt`` is, as a sortable tuple: complex above real, then exponent range,
    mantissa bits, bit width, and signed above unsigned (XLA's order of types)."""
    dt = np.dtype(dt)
    real = {np.dtype(np.complex64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.float64)}.get(dt, dt)
    maxexp, nmant = _FLOAT_RANGE.get(real, (-1, -1))
    return (dt.kind == "c", maxexp, nmant, _bit_width(real), dt.kind != "u")


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
    if pet != out and out.kind != "f" and out != np.dtype("bfloat16") \
            and _bit_width(pet) < _bit_width(out):
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
            raise TypeError(f"dot_general: contracting dimension sizes "
                            f"{tuple(lhs.shape[i] for i in lc)} (lhs) and "
                            f"{tuple(rhs.shape[i] for i in rc)} (rhs) differ (lhs shape "
                            f"{lhs.shape}, rhs shape {rhs.shape}).")
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
    vector_dot = len(lshape) == len(rshape) == 1 and lc == (0,) and rc == (0,)
    return (list(lb) + lf + list(lc), list(rb) + list(rc) + rf, (nb, m, k), (nb, k, n), out,
            vector_dot)


def _dot_impl(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
              out_sharding=None):
    perm_a, perm_b, a_shape, b_shape, out_shape, vector_dot = \
        _dot_plan(lhs.shape, rhs.shape, dimension_numbers)
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    if lhs.dtype != rhs.dtype:
        # XLA on the CPU converts operands of two dtypes to the result dtype first
        target = dot_result_dtype(lhs.dtype, rhs.dtype, pet)
        lhs, rhs = _convert_impl(lhs, target), _convert_impl(rhs, target)
    elif pet is not None and pet != lhs.dtype and (
            lhs.dtype.kind in "biu" or pet.kind == "c"
            or (pet.kind == "f" and pet.itemsize >= lhs.dtype.itemsize)):
        # products accumulate in the wider preferred type (int8 x int8 -> int32 sums do
        # not wrap); a narrower or integer preferred type rounds the result instead
        lhs, rhs = _convert_impl(lhs, pet), _convert_impl(rhs, pet)
    if lhs.dtype in _HALF or rhs.dtype in _HALF:
        lhs, rhs = upcast_half(lhs, rhs)
    if lhs.dtype == np.bool_:
        lhs, rhs = lhs.astype(np.int32), rhs.astype(np.int32)
    if vector_dot:
        out = np.dot(lhs, rhs)
    else:
        a = np.transpose(lhs, perm_a).reshape(a_shape)
        b = np.transpose(rhs, perm_b).reshape(b_shape)
        out = np.matmul(a, b).reshape(out_shape)
    if pet is not None and np.asarray(out).dtype != pet:
        # XLA's conversion: float -> int saturates, complex -> real keeps the real part
        out = _convert_impl(np.asarray(out), pet)
    return out


_HALF = (np.dtype(np.float16), np.dtype("bfloat16"))


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
    """A 1-D . 1-D contraction of equal, non-half, non-bool dtypes with no wider
    accumulation type is NumPy's ``dot`` itself (what ``_dot_impl`` ends in)."""
    lhs, rhs = avals
    lc, rc, lb, rb = _dims(dimension_numbers)
    if (len(lhs.shape) == len(rhs.shape) == 1 and tuple(lc) == (0,) and tuple(rc) == (0,)
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


def _svd_aval(x, full_matrices=True, compute_uv=True):
    check_dtypes("svd", (x,), "fc")
    if x.ndim < 2:
        raise ValueError(f"svd requires an operand of rank >= 2 (a stack of matrices), got "
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
    if not compute_uv:
        return [np.linalg.svd(xx, compute_uv=False)]
    u, s, vh = np.linalg.svd(xx, full_matrices=full_matrices)
    return [u, s, vh]


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
    # out layout: batch (x's lb order), x free dims (in x order), then y's rc order which
    # corresponds to x's lc order
    src_order = list(lb) + x_kept + list(lc)
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
    if dx is not None:
        # x's mapped axis is a free dimension: it lands among x's free dims in the output
        x = batching.moveaxis(x, dx, get_aval(x).ndim - 1)
        out = _dot_bind(x, y, dimension_numbers, **params)
        x_nd = get_aval(x).ndim
        n_free_x = x_nd - len(lc) - len(lb)       # includes the mapped axis (last of x)
        return out, len(lb) + n_free_x - 1
    y = batching.moveaxis(y, dy, get_aval(y).ndim - 1)
    out = _dot_bind(x, y, dimension_numbers, **params)
    return out, get_aval(out).ndim - 1


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
