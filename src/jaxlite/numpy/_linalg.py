"""Products of ``jax.numpy``: dot, matmul, vdot, vecdot, matvec, vecmat, inner, outer,
tensordot, einsum, trace, kron.

Layer: numpy.  Every contraction lowers to the ``dot_general`` primitive (one BLAS call per
contraction: operands are arranged as (batch, m, k) @ (batch, k, n)), plus transposes,
reshapes and reductions.  Operands are promoted to one dtype (JAX's lattice); the result is
weakly typed only when every operand is.  Mismatched contraction sizes raise TypeError
naming both shapes (from ``dot_general``, as JAX's lax does).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from ..core.trace import Tracer
from ._named_jit import named_jit
from ._util import (broadcast_shapes, broadcast_to_shape, canonicalize_axis, check_arraylike,
                    check_out, convert, ensure_array, promote_dtypes, public_names)


def _operands(name, *args):
    check_arraylike(name, *args)
    args = promote_dtypes(*[ensure_array(a) for a in args])
    return [ensure_array(a) for a in args]


def _pet(preferred_element_type, name="dot"):
    """The canonical preferred element type; a 64-bit one with 64-bit types off warns
    (JAX's UserWarning naming ``name``), once: the public functions canonicalise theirs
    first, so the products they call see a canonical dtype."""
    if preferred_element_type is None:
        return None
    return dtypes.explicit_dtype(preferred_element_type, name)


def _dot_general(a, b, contract, batch, precision=None, preferred_element_type=None):
    # jax.numpy's products name their result dtype as the preferred element type (the
    # same numbers: the operands share that dtype), as make_jaxpr shows in JAX
    pet = _pet(preferred_element_type)
    out = lax.dot_general(a, b, (contract, batch), precision,
                          a.dtype if pet is None else pet)
    return _as_preferred(out, pet)


def _as_preferred(out, pet):
    """``out`` as jax.numpy's products return it: of the preferred type when one is given,
    and then never weakly typed (a product of weak scalars asked for float32 is a strong
    float32)."""
    return out if pet is None else lax.convert_element_type(out, pet)


def _mul(a, b):
    from ._ufuncs import multiply
    return multiply(a, b)


def _conj(x):
    return lax.conj(x) if x.dtype.kind == "c" else x


def _flatten(x):
    return lax.reshape(x, (x.size,))


def _out_sharding(out_sharding, who):
    """The checked NamedSharding of an ``out_sharding=`` argument, None for None (see
    ``jaxlite.lax._sharding_constraints.out_sharding_of``: JAX's errors)."""
    if out_sharding is None:
        return None
    from ..lax._sharding_constraints import out_sharding_of
    return out_sharding_of(out_sharding, who)


def _sharded(out, sharding):
    """``out`` resharded to ``sharding`` (a ``reshard`` under jit); ``out`` for None."""
    if sharding is None:
        return out
    from ..lax._sharding_constraints import apply_out_sharding
    return apply_out_sharding(out, sharding)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's ``dot`` (``jax.numpy.dot``): a product with a scalar, a vector dot product,
    matrix-vector / matrix products, and for N-D operands a sum over the last axis of ``a``
    and the second-to-last of ``b`` (result shape ``a.shape[:-1] + b.shape[:-2] +
    b.shape[-1:]``).

    Raises TypeError when the contracted sizes differ, naming both shapes.
    ``out_sharding`` (a NamedSharding, or a PartitionSpec over the mesh of ``set_mesh``;
    only Explicit mesh axes): the result is resharded there, with JAX's errors
    (ValueError/TypeError) for a bad one.

    >>> import jaxlite.numpy as jnp
    >>> jnp.dot(jnp.ones((2, 3)), jnp.ones(3))
    Array([3., 3.], dtype=float32)
    """
    sh = _out_sharding(out_sharding, "dot_general")
    a, b = _operands("dot", a, b)
    preferred_element_type = _pet(preferred_element_type, "dot")    # JAX's name
    if a.ndim == 0 or b.ndim == 0:
        return _sharded(_as_preferred(_mul(a, b), _pet(preferred_element_type)), sh)
    cb = 0 if b.ndim == 1 else b.ndim - 2
    return _sharded(_dot_general(a, b, ((a.ndim - 1,), (cb,)), ((), ()), precision,
                                 preferred_element_type), sh)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy broadcasting over leading (batch) dimensions
    (``jax.numpy.matmul``, the ``@`` operator).  1-D operands are promoted to matrices and
    the added dimension removed from the result.

    Raises ValueError for 0-d operands or batch shapes that do not broadcast, TypeError for
    mismatched inner sizes (naming both shapes).  ``out_sharding``: as ``dot``'s.
    """
    sh = _out_sharding(out_sharding, "dot_general")
    a, b = _operands("matmul", a, b)
    preferred_element_type = _pet(preferred_element_type, "matmul")    # JAX's name
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                             f"ndim 0")
    ka, kb = a.shape[-1], b.shape[0 if b.ndim == 1 else -2]
    if ka != kb:        # named before 1-D operands are reshaped to matrices
        raise TypeError(f"matmul: contracting dimension sizes ({ka},) (lhs) and ({kb},) "
                        f"(rhs) differ (operand shapes {a.shape} and {b.shape}).")
    if a.ndim == 1 or b.ndim == 1:
        # a vector operand is contracted as it is (JAX's program: one dot_general, no
        # reshapes)
        return _sharded(_dot_general(a, b, ((a.ndim - 1,), (max(b.ndim - 2, 0),)),
                                     ((), ()), precision, preferred_element_type), sh)
    a2 = a if a.ndim > 1 else lax.reshape(a, (1,) + a.shape)
    b2 = b if b.ndim > 1 else lax.reshape(b, b.shape + (1,))
    ba, bb = a2.shape[:-2], b2.shape[:-2]
    try:
        batch = broadcast_shapes(ba, bb)
    except ValueError:
        raise ValueError(f"Incompatible types for matmul arguments: {a.dtype}{list(a.shape)} "
                         f"and {b.dtype}{list(b.shape)}") from None
    na = a2.ndim
    if not bb:
        # (batch..., m, k) @ (k, n): one contraction, no broadcast copy of b
        out = _dot_general(a2, b2, ((na - 1,), (0,)), ((), ()), precision,
                           preferred_element_type)
    elif not ba:
        # (m, k) @ (batch..., k, n) gives (m, batch..., n): move m next to n
        out = _dot_general(a2, b2, ((1,), (b2.ndim - 2,)), ((), ()), precision,
                           preferred_element_type)
        nb = len(bb)
        out = lax.transpose(out, list(range(1, nb + 1)) + [0, nb + 1])
    else:
        a2 = broadcast_to_shape(a2, batch + a2.shape[-2:])
        b2 = broadcast_to_shape(b2, batch + b2.shape[-2:])
        nb = len(batch)
        out = _dot_general(a2, b2, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                           precision, preferred_element_type)
    if a.ndim == 1:
        out = lax.squeeze(out, (out.ndim - 2,))
    if b.ndim == 1:
        out = lax.squeeze(out, (out.ndim - 1,))
    return _sharded(out, sh)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened operands, conjugating ``a`` (``jax.numpy.vdot``).
    Raises TypeError when the sizes differ."""
    a, b = _operands("vdot", a, b)
    return dot(_conj(_flatten(a)), _flatten(b), precision=precision,
               preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``sum(conj(x1) * x2, axis)`` with broadcasting of the other dimensions
    (``jax.numpy.vecdot``).  Raises ValueError when the sizes along ``axis`` differ or the
    other dimensions do not broadcast."""
    a, b = _operands("vecdot", x1, x2)
    preferred_element_type = _pet(preferred_element_type, "dot")    # JAX's name
    ax_a = canonicalize_axis(axis, a.ndim)
    ax_b = canonicalize_axis(axis, b.ndim)
    if a.shape[ax_a] != b.shape[ax_b]:
        raise ValueError(f"axes must match; got shapes {a.shape} and {b.shape} with "
                         f"axis={axis}")
    a = _move_last(a, ax_a)
    b = _move_last(b, ax_b)
    batch = broadcast_shapes(a.shape[:-1], b.shape[:-1])
    k = a.shape[-1]
    a = broadcast_to_shape(a, batch + (k,))
    b = broadcast_to_shape(b, batch + (k,))
    nb = len(batch)
    return _dot_general(_conj(a), b, ((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                        precision, preferred_element_type)


def _move_last(x, ax):
    if ax == x.ndim - 1:
        return x
    return lax.transpose(x, [i for i in range(x.ndim) if i != ax] + [ax])


def matvec(x1, x2, /):
    """Matrix-vector product ``x1 @ x2`` over the last axes, broadcasting the rest
    (``jax.numpy.matvec``): ``(..., m, n), (..., n) -> (..., m)``."""
    a, b = _operands("matvec", x1, x2)
    if a.ndim < 2 or b.ndim < 1:
        raise ValueError(f"matvec requires x1 of rank >= 2 and x2 of rank >= 1, got shapes "
                         f"{a.shape} and {b.shape}")
    out = matmul(a, lax.reshape(b, b.shape + (1,)))
    return lax.squeeze(out, (out.ndim - 1,))


def vecmat(x1, x2, /):
    """Vector-matrix product ``conj(x1) @ x2`` over the last axes, broadcasting the rest
    (``jax.numpy.vecmat``): ``(..., n), (..., n, m) -> (..., m)``."""
    a, b = _operands("vecmat", x1, x2)
    if a.ndim < 1 or b.ndim < 2:
        raise ValueError(f"vecmat requires x1 of rank >= 1 and x2 of rank >= 2, got shapes "
                         f"{a.shape} and {b.shape}")
    out = matmul(lax.reshape(_conj(a), a.shape[:-1] + (1,) + a.shape[-1:]), b)
    return lax.squeeze(out, (out.ndim - 2,))


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum over the last axes of ``a`` and ``b`` (``jax.numpy.inner``): result shape
    ``a.shape[:-1] + b.shape[:-1]``; a product when either is a scalar.  Raises TypeError
    when the last sizes differ."""
    a, b = _operands("inner", a, b)
    preferred_element_type = _pet(preferred_element_type, "tensordot")    # JAX's name
    if a.ndim == 0 or b.ndim == 0:
        return _as_preferred(_mul(a, b), _pet(preferred_element_type))
    return _dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)), ((), ()), precision,
                        preferred_element_type)


def outer(a, b, out=None):
    """Outer product of the flattened operands, shape ``(a.size, b.size)``
    (``jax.numpy.outer``)."""
    check_out("outer", out)
    a, b = _operands("outer", a, b)
    # ravel(a)[:, None] * ravel(b)[None, :], as JAX: the product broadcasts the size-1
    # dimensions
    a = lax.broadcast_in_dim(lax.reshape(a, (a.size,)), (a.size, 1), (0,))
    b = lax.broadcast_in_dim(lax.reshape(b, (b.size,)), (1, b.size), (1,))
    return _mul(a, b)


def _tensordot_axes(axes, a, b):
    bad = TypeError(f"tensordot: axes={axes!r} is not understood; give an int, a pair of "
                    f"ints, or a pair of int sequences.")
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0:
            raise ValueError(f"tensordot requires a non-negative number of axes, got {n}")
        if n > min(a.ndim, b.ndim):
            raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                            f"({a.shape} and {b.shape})")
        return tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax_a, ax_b = axes
        if isinstance(ax_a, (int, np.integer)) and isinstance(ax_b, (int, np.integer)):
            ax_a, ax_b = (ax_a,), (ax_b,)
        elif not (isinstance(ax_a, (tuple, list)) and isinstance(ax_b, (tuple, list))):
            raise bad
        if len(ax_a) != len(ax_b):
            raise TypeError(f"tensordot: the two axes lists pair up, so they need one length; "
                            f"got {tuple(ax_a)} and {tuple(ax_b)}")
        ca = tuple(canonicalize_axis(i, a.ndim) for i in ax_a)
        cb = tuple(canonicalize_axis(i, b.ndim) for i in ax_b)
        if len(set(ca)) != len(ca) or len(set(cb)) != len(cb):
            raise ValueError(f"tensordot: repeated axis in axes {axes}")
        return ca, cb
    raise bad


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
    """Tensor contraction (``jax.numpy.tensordot``).

    ``axes`` is an int ``n`` (the last ``n`` axes of ``a`` with the first ``n`` of ``b``) or
    a pair ``(axes_a, axes_b)`` of ints or equal-length sequences.  Result shape: the
    uncontracted axes of ``a`` then of ``b``.  Raises TypeError for a malformed ``axes``,
    too many axes or mismatched sizes; ValueError for an out-of-range axis.
    ``out_sharding``: as ``dot``'s.
    """
    sh = _out_sharding(out_sharding, "dot_general")
    a, b = _operands("tensordot", a, b)
    preferred_element_type = _pet(preferred_element_type, "tensordot")    # JAX's name
    ca, cb = _tensordot_axes(axes, a, b)
    return _sharded(_dot_general(a, b, (ca, cb), ((), ()), precision,
                                 preferred_element_type), sh)


def kron(a, b):
    """Kronecker product (``jax.numpy.kron``): block ``i`` of the result is ``a[i] * b``;
    shape ``a.shape * b.shape`` elementwise (ranks padded with leading 1s)."""
    a, b = _operands("kron", a, b)
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    a2 = lax.reshape(a, [d for s in sa for d in (s, 1)])
    b2 = lax.reshape(b, [d for s in sb for d in (1, s)])
    shape = [x * y for x, y in zip(sa, sb)]
    prod = _mul(broadcast_to_shape(a2, [d for p in zip(sa, sb) for d in p]), b2)
    return lax.reshape(prod, shape)


def _diag_mask(shape, ax1, ax2, offset):
    """Bool array of ``shape``: True where index[ax2] - index[ax1] == offset."""
    it = dtypes.default_int_dtype()
    i = lax.broadcasted_iota(it, shape, ax1)
    j = lax.broadcasted_iota(it, shape, ax2)
    if offset:
        i = lax.add(i, lax.broadcast_in_dim(lax.scalar_as(offset, it, False), shape, ()))
    return lax.eq(i, j)


def _zeros_like(x):
    z = lax.scalar_as(0, x.dtype, x.weak_type)
    return lax.broadcast_in_dim(z, x.shape, ()) if x.shape else z


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along the diagonal ``a[..., i, ..., i + offset, ...]`` of axes ``axis1`` and
    ``axis2`` (``jax.numpy.trace``); the other axes are kept in order.  Dtype as ``sum``
    (bool/narrow ints give the default int) unless ``dtype`` is given.  Raises ValueError
    for bad or equal axes."""
    check_out("trace", out)
    check_arraylike("trace", a)
    a = ensure_array(a)
    ax1 = canonicalize_axis(axis1, a.ndim)
    ax2 = canonicalize_axis(axis2, a.ndim)
    if ax1 == ax2:
        raise ValueError(f"axis1 and axis2 can not be the same, got axis1={axis1}, "
                         f"axis2={axis2}")
    # the offset is an operand of JAX's jit (it may be traced); a Python 0, the default,
    # is a constant of the program
    if not isinstance(offset, Tracer):
        off = np.asarray(offset)
        if off.ndim or off.dtype.kind not in "iub":
            # JAX's error (its diagonal mask's) for the offset
            raise ValueError(f"k must be a scalar integer; got {offset!r}")
    plain = type(offset) is int and offset == 0
    return _trace(a, None if plain else offset, axis1=ax1, axis2=ax2, dtype=dtype)


@named_jit("trace", static_argnames=("axis1", "axis2", "dtype"))
def _trace(a, offset, axis1, axis2, dtype):
    # JAX's equations: the diagonal mask (both iotas, then the offset added, even 0), a
    # where against zeros, a sum
    from ._reductions import sum as _sum
    from ._ufuncs import where
    it = dtypes.default_int_dtype()
    i = lax.broadcasted_iota(it, a.shape, axis1)
    j = lax.broadcasted_iota(it, a.shape, axis2)
    k = lax.scalar_as(0, it, False) if offset is None else \
        lax.convert_element_type(offset, it)
    mask = lax.eq(lax.add(i, k), j)
    return _sum(where(mask, a, _zeros_like(a)), axis=(axis1, axis2), dtype=dtype)


# ---- einsum -------------------------------------------------------------------------------

def _interleaved_to_str(args):
    """``einsum(op0, sub0, op1, sub1, ..., [out])`` as a subscripts string and operands."""
    import opt_einsum
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out = ops.pop()     # a trailing output sublist
        out_given = True
    else:
        out_given = False

    def letters(sub):
        s = []
        for item in sub:
            if item is Ellipsis:
                s.append("...")
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                s.append(opt_einsum.get_symbol(int(item)))
            else:
                raise TypeError(f"einsum: a subscript list holds {item!r}; its entries have to be "
                                f"ints or Ellipsis.")
        return "".join(s)
    text = ",".join(letters(s) for s in subs)
    if out_given:
        text += "->" + letters(out)
    return text, ops


def _einsum_path(subscripts, operands, optimize):
    import opt_einsum
    if optimize is True or optimize is None:
        optimize = "auto"
    elif optimize is False:
        optimize = "greedy"
    shapes = [tuple(o.shape) for o in operands]
    _, contractions = opt_einsum.contract_path(subscripts, *shapes, shapes=True,
                                               einsum_call=True, use_blas=True,
                                               optimize=optimize)
    return contractions


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, out_sharding=None, _dot_general=None):
    """Einstein summation (``jax.numpy.einsum``), e.g. ``einsum('bij,bjk->bik', x, y)``.

    Supports implicit and explicit (``->``) outputs, ``...`` broadcasting, repeated indices
    within an operand (diagonals, traces), size-1 broadcasting, and the interleaved form
    ``einsum(x, [0, 1], y, [1, 2], [0, 2])``.  The contraction order comes from opt_einsum;
    each pairwise step is one ``dot_general``, named the promoted dtype as its
    preferred element type (operands of mixed dtypes are not converted first, as JAX's).

    Raises ValueError for malformed subscripts, a wrong number of operands or mismatched
    index sizes (opt_einsum's messages, as JAX); NotImplementedError for an explicit
    ``optimize`` path with a step over three or more operands.  ``out_sharding``: as
    ``dot``'s.
    """
    check_out("einsum", out)
    sh = _out_sharding(out_sharding, "einsum")
    preferred_element_type = _pet(preferred_element_type, "einsum")    # JAX's name
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_str((subscripts,) + operands)
    check_arraylike("einsum", *operands)
    # operands keep their dtypes: each dot_general takes mixed operands and names the
    # promoted dtype as its preferred element type, as JAX's (no convert_element_type first)
    ops = [ensure_array(a) for a in operands]
    contractions = _einsum_path(subscripts, ops, optimize)
    pet = _pet(preferred_element_type)
    widen = pet         # an explicit preferred type: sums within one operand are taken in it
    weak = False
    if pet is None and ops:
        pet, weak = dtypes.result_type_and_weak(*ops)
    for step in contractions:
        inds, spec = step[0], step[2]
        args = [ops.pop(i) for i in inds]
        ins, res = spec.split("->")
        in_specs = ins.split(",")
        if len(args) == 1:
            r = _einsum_unary(args[0], in_specs[0], res, res, widen)[0]
        elif len(args) == 2:
            r = _einsum_pair(args[0], in_specs[0], args[1], in_specs[1], res, precision, pet,
                             widen)
        else:   # an explicit path step over three or more operands: JAX refuses it
            raise NotImplementedError(
                f"jax.numpy.einsum does not support simultaneous contraction of 3 or more "
                f"operands (the path step {tuple(inds)} contracts {len(args)})")
        ops.append(r)
    (result,) = ops
    if preferred_element_type is not None:
        result = _as_preferred(result, pet)
    elif pet is not None and (result.dtype != pet or result.weak_type != weak):
        result = convert(result, pet, weak)
    return _sharded(result, sh)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order einsum would use and opt_einsum's report
    (``jax.numpy.einsum_path``): ``(path, info)``."""
    import opt_einsum
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_str((subscripts,) + operands)
    if optimize is True or optimize is None:
        optimize = "auto"
    elif optimize is False:
        optimize = "greedy"
    shapes = [tuple(np.shape(o)) if not hasattr(o, "shape") else tuple(o.shape)
              for o in operands]
    return opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize=optimize)


def _reduce_sum(x, axes):
    if not axes:
        return x
    if x.dtype == np.bool_:
        return lax.reduce_or(x, axes)
    return lax.reduce_sum(x, axes)


def _take_diagonals(x, spec):
    """Removes repeated letters of ``spec`` by taking diagonals; returns (x, spec)."""
    while True:
        for i, c in enumerate(spec):
            j = spec.find(c, i + 1)
            if j >= 0:
                break
        else:
            return x, spec
        masked = lax.select(_diag_mask(x.shape, i, j, 0), x, _zeros_like(x))
        x = _reduce_sum(masked, (j,))
        spec = spec[:j] + spec[j + 1:]


def _einsum_unary(x, spec, keep, order=None, widen=None):
    """Takes diagonals, then sums over the letters not in ``keep``; returns (x, spec).  With
    ``order`` (a permutation of the remaining letters), transposes into that order.  With
    ``widen`` (an explicit preferred_element_type), a sum is taken in that dtype, as JAX's
    (an int8 row summed into int32 does not wrap in int8)."""
    sums = len(set(spec)) < len(spec) or any(c not in keep for c in spec)
    if widen is not None and sums and x.dtype != widen:
        x = convert(x, widen)
    x, spec = _take_diagonals(x, spec)
    drop = tuple(i for i, c in enumerate(spec) if c not in keep)
    x = _reduce_sum(x, drop)
    spec = "".join(c for c in spec if c in keep)
    if order is not None:
        x = lax.transpose(x, [spec.index(c) for c in order])
        spec = order
    return x, spec


def _squeeze_broadcast(x, spec, other, ospec):
    """Drops size-1 dimensions of ``x`` whose letter has a larger size in ``other`` (NumPy
    einsum broadcasting)."""
    drop = [i for i, c in enumerate(spec)
            if x.shape[i] == 1 and c in ospec and other.shape[ospec.index(c)] != 1]
    if not drop:
        return x, spec
    x = lax.reshape(x, [d for i, d in enumerate(x.shape) if i not in drop])
    return x, "".join(c for i, c in enumerate(spec) if i not in drop)


def _einsum_pair(x, sx, y, sy, out, precision, pet, widen=None):
    x, sx = _squeeze_broadcast(x, sx, y, sy)
    y, sy = _squeeze_broadcast(y, sy, x, sx)
    # diagonals, and sums over letters found only in one operand and not in the output
    x, sx = _einsum_unary(x, sx, sy + out, widen=widen)
    y, sy = _einsum_unary(y, sy, sx + out, widen=widen)
    common = [c for c in sx if c in sy]
    # batch letters in the output's order, contracted ones sorted, as JAX's dimension
    # numbers list them
    batch = [c for c in out if c in common]
    contract = sorted(c for c in common if c not in out)
    rest_x = "".join(c for c in sx if c not in common)
    rest_y = "".join(c for c in sy if c not in common)
    if "".join(batch) + rest_y + rest_x == out:
        # the operands swapped give the output's order with no transpose (JAX tries this
        # order first: the path contracts from right to left)
        x, sx, y, sy, rest_x, rest_y = y, sy, x, sx, rest_y, rest_x
    dn = ((tuple(sx.index(c) for c in contract), tuple(sy.index(c) for c in contract)),
          (tuple(sx.index(c) for c in batch), tuple(sy.index(c) for c in batch)))
    r = lax.dot_general(x, y, dn, precision, pet)
    rspec = "".join(batch) + rest_x + rest_y
    if rspec == out:
        return r
    return lax.transpose(r, [rspec.index(c) for c in out])


__all__ = public_names(globals())
