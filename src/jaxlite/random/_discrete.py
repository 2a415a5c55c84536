"""Counting samplers: ``jax.random.poisson``, ``binomial`` and ``multinomial``.

Layer: random (compositions of ``jaxlite.lax`` ops, ``while_loop`` and ``scan``).

The algorithms, key splits and loop structure are JAX 0.10's, so each element takes the
path JAX's takes: Poisson by Knuth's product of uniforms below ``lam = 10`` and by
Hormann's transformed rejection ("The transformed rejection method for generating Poisson
random variables", 1993) above; binomial by summing geometric waiting times where
``n * min(p, 1-p) <= 10`` and by Hormann's BTRS rejection ("The generation of binomial
random variates", 1993) elsewhere.  The whole array loops together until every element
has accepted; an element's draws do not depend on the others.  The tests compare with
XLA's rounding of ``log`` (exact in float32, ``_math.log``); the rejection steps also use
``lgamma``/Stirling terms whose last bits may differ from XLA's, which can flip a decision
that falls within an ulp of its bound (rare; see the docstrings).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ._continuous import result_shape
from ._distributions import _array, _dtype_arg, _is_float, _split2, _to, _uniform
from ._keys import _shape, is_threefry, key_at, key_split, split2, unpack_key
from ._math import log, log1p

_F32 = np.dtype(np.float32)


def _full(value, shape, dtype):
    return lax.broadcast_in_dim(np.dtype(dtype).type(value), tuple(shape), ())


def _split3(key):
    keys = key_split(key, (3,))
    return tuple(key_at(keys, i) for i in range(3))


def _any(x):
    return lax.reduce_or(x, tuple(range(x.ndim))) if x.ndim else x


# ---- poisson --------------------------------------------------------------------------

def _poisson_knuth(raw, lam, shape):
    """Counts of uniforms whose running log-product stays above ``-lam`` (lam < 10)."""
    neg_lam = lax.neg(lam)

    def cond(state):
        return _any(lax.gt(state[3], neg_lam))

    def body(state):
        i, k, key, log_prod = state
        key, sub = _split2(key)
        k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, _full(1, shape, k.dtype)), k)
        u = _uniform(sub, shape, _F32, 0.0, 1.0)
        return lax.add(i, np.int32(1)), k, key, lax.add(log_prod, log(u))

    init = (np.int32(0), _full(0, shape, np.int32), raw, _full(0, shape, _F32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _full(1, shape, np.int32))


def _poisson_rejection(raw, lam, shape):
    """Hormann's transformed rejection (lam >= 10); float32 counts."""
    f = np.float32
    log_lam = log(lam)
    b = lax.add(f(0.931), lax.mul(f(2.53), lax.sqrt(lam)))
    a = lax.add(f(-0.059), lax.mul(f(0.02483), b))
    inv_alpha = lax.add(f(1.1239), lax.div(f(1.1328), lax.sub(b, f(3.4))))
    v_r = lax.sub(f(0.9277), lax.div(f(3.6224), lax.sub(b, f(2))))

    def cond(state):
        return _any(lax.bitwise_not(state[2]))

    def body(state):
        i, k_out, accepted, key = state
        key, k0, k1 = _split3(key)
        u = lax.sub(_uniform(k0, shape, _F32, 0.0, 1.0), f(0.5))
        v = _uniform(k1, shape, _F32, 0.0, 1.0)
        us = lax.sub(f(0.5), lax.abs(u))
        k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(f(2), a), us), b), u),
                                      lam), f(0.43)))
        s = log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        t = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)),
                    lax.lgamma(lax.add(k, f(1))))
        accept1 = lax.bitwise_and(lax.ge(us, f(0.07)), lax.le(v, v_r))
        reject = lax.bitwise_or(lax.lt(k, f(0)),
                                lax.bitwise_and(lax.lt(us, f(0.013)), lax.gt(v, us)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject),
                                                         lax.le(s, t)))
        return (lax.add(i, np.int32(1)), lax.select(accept, k, k_out),
                lax.bitwise_or(accepted, accept), key)

    init = (np.int32(0), _full(-1, shape, _F32), _full(False, shape, np.bool_), raw)
    return lax.while_loop(cond, body, init)[1]


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(``lam``) counts (``jax.random.poisson``).

    Args:
      key: a typed key or raw ``uint32[2]`` key.
      lam: rates (broadcast to ``shape``; computed in float32 as JAX does).
      shape: result shape (default ``lam``'s).
      dtype: an integer dtype (default int32, int64 with x64).

    Returns:
      ``dtype[*shape]``; 0 where ``lam == 0``.  Below ``lam = 10`` JAX's counts exactly;
      above, JAX's counts except where an acceptance test falls within ``lgamma``'s last-bit
      difference of its bound (then that element is another valid Poisson draw; the tests
      allow 1 element in 200).

    Raises:
      ValueError: a non-integer dtype, ``lam`` not broadcastable to ``shape``, a batch of
      keys.

    Example::

        jax.random.poisson(jax.random.key(0), 3.0, (4,))            # int32[4]
    """
    raw, _ = unpack_key(key, "poisson")
    if not is_threefry(raw):
        raise NotImplementedError(f"`poisson` is only implemented for the threefry2x32 RNG, "
                                  f"not {raw._impl}")
    dt = _dtype_arg(dtype, dtypes.default_int_dtype(), "poisson",
                    lambda d: d.kind in "iu", "an integer dtype")
    lam = _array(lam)
    if shape is None:
        shape = tuple(lam.shape)
    else:
        shape = _shape(shape, "poisson")
        try:
            ok = tuple(np.broadcast_shapes(tuple(lam.shape), shape)) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"Incompatible types for broadcasting: input type="
                             f"{np.dtype(lam.dtype).name}{list(lam.shape)} and requested "
                             f"shape {list(shape)}")
    lam = lax.convert_element_type(_to(lam, shape), _F32)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, np.float32(10)))
    lam_knuth = lax.select(use_knuth, lam, _full(0.0, shape, _F32))
    # the rejection branch runs on every element; give Knuth's a harmless large rate
    lam_rej = lax.select(use_knuth, _full(1e5, shape, _F32), lam)
    knuth = lax.convert_element_type(_poisson_knuth(raw, lam_knuth, shape), dt)
    rej = lax.convert_element_type(_poisson_rejection(raw, lam_rej, shape), dt)
    out = lax.select(use_knuth, knuth, rej)
    return lax.select(lax.eq(lam, np.float32(0)), _full(0, shape, dt), out)


# ---- binomial ---------------------------------------------------------------------------

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """``log k! - (k + 1/2) log(k + 1) + (k + 1) - log(sqrt(2 pi))``: a table for
    ``k <= 9``, the asymptotic series above."""
    dt = np.dtype(k.dtype)
    f = dt.type
    small = lax.le(k, f(9))
    kc = lax.clamp(f(0), k, f(9))
    k1 = lax.add(k, f(1))
    k1sq = lax.mul(k1, k1)
    approx = lax.div(lax.sub(f(1.0 / 12), lax.div(lax.sub(f(1.0 / 360),
                                                          lax.div(f(1.0 / 1260), k1sq)),
                                                  k1sq)), k1)
    table = lax.convert_element_type(jnp.asarray(np.array(_STIRLING_TAIL)), dt)
    idx = lax.convert_element_type(lax.floor(kc), np.int32)
    return lax.select(small, jnp.take(table, idx), approx)


def _binomial_inversion(raw, count, prob, shape):
    dt = np.dtype(prob.dtype)
    f = dt.type
    log_q = log1p(lax.neg(prob))

    def cond(state):
        return _any(lax.le(state[2], count))

    def body(state):
        i, num, total, key = state
        sub, key = split2(key)
        num = lax.select(lax.le(total, count), lax.add(num, f(1)), num)
        u = _uniform(sub, shape, dt, 0.0, 1.0)
        geom = lax.ceil(lax.div(log(u), log_q))
        return lax.add(i, np.int32(1)), num, lax.add(total, geom), key

    init = (np.int32(0), _full(0, shape, dt), _full(0, shape, dt), raw)
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, f(1))


def _btrs(raw, count, prob, shape):
    dt = np.dtype(prob.dtype)
    f = dt.type
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), lax.sub(f(1), prob)))
    b = lax.add(f(1.15), lax.mul(f(2.53), stddev))
    a = lax.add(lax.add(f(-0.0873), lax.mul(f(0.0248), b)), lax.mul(f(0.01), prob))
    c = lax.add(lax.mul(count, prob), f(0.5))
    v_r = lax.sub(f(0.92), lax.div(f(4.2), b))
    r = lax.div(prob, lax.sub(f(1), prob))
    alpha = lax.mul(lax.add(f(2.83), lax.div(f(5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, f(1)), prob))

    def cond(state):
        return _any(lax.bitwise_not(state[2]))

    def body(state):
        i, k_out, accepted, key = state
        key, k0, k1 = _split3(key)
        u = lax.sub(_uniform(k0, shape, dt, 0.0, 1.0), f(0.5))
        v = _uniform(k1, shape, dt, 0.0, 1.0)
        us = lax.sub(f(0.5), lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, f(0.07)), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(f(2), a), us), b), u), c))
        reject = lax.bitwise_or(lax.lt(k, f(0)), lax.gt(k, count))
        lv = log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        nm1 = lax.add(lax.sub(count, m), f(1))
        nk1 = lax.add(lax.sub(count, k), f(1))
        ub = lax.mul(lax.add(m, f(0.5)), log(lax.div(lax.add(m, f(1)), lax.mul(r, nm1))))
        ub = lax.add(ub, lax.mul(lax.add(count, f(1)), log(lax.div(nm1, nk1))))
        ub = lax.add(ub, lax.mul(lax.add(k, f(0.5)),
                                 log(lax.div(lax.mul(r, nk1), lax.add(k, f(1))))))
        ub = lax.add(ub, _stirling_tail(m))
        ub = lax.add(ub, _stirling_tail(lax.sub(count, m)))
        ub = lax.sub(ub, _stirling_tail(k))
        ub = lax.sub(ub, _stirling_tail(lax.sub(count, k)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject),
                                                         lax.le(lv, ub)))
        return (lax.add(i, np.int32(1)), lax.select(accept, k, k_out),
                lax.bitwise_or(accepted, accept), key)

    init = (np.int32(0), _full(-1, shape, dt), _full(False, shape, np.bool_), raw)
    return lax.while_loop(cond, body, init)[1]


def _binomial(raw, count, prob, shape, dt):
    """Float counts; ``count``/``prob`` already broadcast to ``shape``, of ``prob``'s
    (inexact) dtype."""
    pdt = np.dtype(prob.dtype)
    f = pdt.type
    p_small = lax.lt(prob, f(0.5))
    q = lax.select(p_small, prob, lax.sub(f(1), prob))
    count_bad = lax.bitwise_or(lax.ne(count, count), lax.lt(count, f(0)))
    count_inf = lax.eq(lax.abs(count), f(np.inf))
    q_nan = lax.ne(q, q)
    q_neg = lax.lt(q, f(0))
    q = lax.select(lax.bitwise_or(q_nan, q_neg), _full(0.01, shape, pdt), q)
    use_inv = lax.bitwise_or(count_bad, lax.le(lax.mul(count, q), f(10)))
    count = lax.floor(count)
    count_inv = lax.select(use_inv, count, _full(0.0, shape, pdt))
    count_btrs = lax.select(use_inv, _full(1e4, shape, pdt), count)
    q_btrs = lax.select(use_inv, _full(0.5, shape, pdt), q)
    inv = lax.convert_element_type(_binomial_inversion(raw, count_inv, q, shape), dt)
    btrs = lax.convert_element_type(_btrs(raw, count_btrs, q_btrs, shape), dt)
    samples = lax.select(use_inv, inv, btrs)
    invalid = lax.bitwise_or(lax.bitwise_or(q_neg, q_nan), count_bad)
    samples = lax.select(invalid, _full(np.nan, shape, dt), samples)
    samples = lax.select(lax.bitwise_and(count_inf, lax.bitwise_not(invalid)),
                         _full(np.inf, shape, dt), samples)
    keep = lax.bitwise_or(lax.bitwise_or(p_small, count_bad), lax.bitwise_or(q_nan, count_inf))
    return lax.select(keep, samples, lax.sub(lax.convert_element_type(count, dt), samples))


def _inexact(x):
    x = _array(x)
    return lax.convert_element_type(x, dtypes.to_inexact_dtype(x.dtype)) \
        if not dtypes.issubdtype(x.dtype, np.inexact) else x


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(``n``, ``p``) counts as floats (``jax.random.binomial``).

    Args:
      key: a typed key or raw key.
      n: trial counts (floored; NaN or negative give NaN, +inf gives inf).
      p: success probabilities (NaN or negative give NaN).  The sampling dtype is ``p``'s
        inexact promotion.
      shape: result shape (default ``n`` and ``p`` broadcast).
      dtype: a float dtype for the result (default float32, float64 with x64).

    Returns:
      ``dtype[*shape]``.  Where ``n * min(p, 1-p) <= 10`` JAX's counts exactly; above, by
      rejection, JAX's counts except where a test lands within rounding of its bound.

    Raises:
      ValueError: a non-float dtype, shapes that do not broadcast to ``shape``, a batch of
      keys.  TypeError: a list argument.

    Example::

        jax.random.binomial(jax.random.key(0), 10, 0.3, (4,))       # float32[4]
    """
    raw, _ = unpack_key(key, "binomial")
    for name, x in (("n", n), ("p", p)):
        if isinstance(x, (list, tuple)):
            raise TypeError(f"binomial requires ndarray or scalar arguments, got "
                            f"{type(x)} for {name}.")
    dt = _dtype_arg(dtype, dtypes.default_float_dtype(), "binomial", _is_float,
                    "a float dtype")
    shape = result_shape("binomial", shape, n, p)
    prob = _inexact(p)
    count = lax.convert_element_type(_array(n), prob.dtype)
    return _binomial(raw, _to(count, shape), _to(prob, shape), shape, dt)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts: ``n`` trials over the categories of ``p``'s last axis, drawn as
    a chain of binomials (``jax.random.multinomial``).

    Args:
      key: a typed key or raw key.
      n: trial counts, broadcast to ``shape[:-1]``.
      p: category probabilities along the last axis (broadcast to ``shape``).
      shape: result shape (default ``p.shape``), last axis the categories.
      dtype: the result dtype (default float32, float64 with x64).
      unroll: accepted for JAX's signature (the scan's unrolling; results do not change).

    Returns:
      ``dtype[*shape]``: counts summing to ``n`` along the last axis; JAX's counts where
      each binomial step is (see ``binomial``).

    Raises:
      ValueError: a 0-d ``p``, shapes that do not broadcast.  TypeError: list arguments.

    Example::

        jax.random.multinomial(jax.random.key(0), 10.0, jnp.array([0.2, 0.3, 0.5]))
    """
    raw, _ = unpack_key(key, "multinomial")
    for x in (n, p):
        if isinstance(x, (list, tuple)):
            raise TypeError(f"multinomial requires ndarray or scalar arguments, got "
                            f"{type(x)}.")
    n, p = _array(n), _array(p)
    common = dtypes.to_inexact_dtype(dtypes.result_type(n, p))
    n = lax.convert_element_type(n, common)
    p = lax.convert_element_type(p, common)
    if shape is None:
        shape = tuple(p.shape)
    shape = _shape(shape, "multinomial")
    if not shape:
        raise ValueError("axis -1 is out of bounds for array of dimension 0")
    n = jnp.broadcast_to(n, shape[:-1])
    # The ratios depend on p alone: computed on p's own batch shape (each value as on the
    # broadcast one) and broadcast a category at a time in the loop, so no array of the
    # result's shape exists before the counts do.
    lead = len(shape) - p.ndim
    p_shape = (1,) * lead + tuple(p.shape)
    if lead < 0 or any(d not in (1, s) for d, s in zip(p_shape, shape)):
        jnp.broadcast_to(p, shape)          # raises broadcast_to's error, naming the shapes
    p = jnp.broadcast_to(lax.reshape(p, p_shape), p_shape[:-1] + shape[-1:])
    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = lax.div(p, lax.select(lax.eq(remaining, common.type(0)),
                                   _full(1, remaining.shape, common), remaining))
    keys = key_split(raw, (shape[-1],))

    def step(left, xs):
        ratio, k = xs
        ratio = _to(lax.clamp(common.type(0), ratio, common.type(1)), shape[:-1])
        count = _binomial(k, left, ratio, shape[:-1], common)
        return lax.sub(left, count), count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    out_dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(
        np.dtype(dtype))
    return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), out_dt)
