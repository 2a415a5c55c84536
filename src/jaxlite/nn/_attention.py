"""``jaxlite.nn.dot_product_attention`` (``jax.nn.dot_product_attention``, its XLA path).

Layer: public API; a composition of ``einsum``, masks and ``softmax``, so grad, vmap and jit
come from those operations' rules.  Grouped-query attention keeps the key/value heads as
their own axis (query heads grouped ``K x G``) instead of repeating keys and values.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ._normalize import logsumexp, softmax


def _ensure_4d(t):
    t = jnp.asarray(t)
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check(t, shape, dtype, name):
    """ValueError naming ``name`` when ``t``'s rank, dtype or sizes (-1: any) differ."""
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    if any(want != -1 and got != want for got, want in zip(t.shape, shape)):
        raise ValueError(f"{name} shape should be {list(shape)}: but got {t.shape}")


def _grouped(t, K, G):
    """A (B, N, T, S) bias or mask as (B, K, G, T, S); a single head broadcasts."""
    if t is None:
        return None
    b, n, tt, s = t.shape
    if n == 1:
        return t[:, :, None]
    if n != K * G:
        raise ValueError(f"bias/mask with {n} heads for {K * G} query heads: the head axis "
                         f"must be 1 or the number of query heads")
    return jnp.reshape(t, (b, K, G, tt, s))


def _large_negative(dtype):
    # finite even after the float32 softmax, so fully masked rows stay finite (uniform)
    big = min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * big, dtype=dtype)


def _mask_logits(logits, mask, is_causal, q_len, kv_len, window):
    """``logits`` (B, K, G, T, S) with masked-out positions set to a large negative."""
    T, S = logits.shape[-2:]
    keep = None

    def both(a, b):
        return b if a is None else jnp.logical_and(a, b)
    if mask is not None:
        keep = both(keep, mask)
    q_pos = jnp.arange(T)[:, None]
    k_pos = jnp.arange(S)[None, :]
    if is_causal:
        keep = both(keep, k_pos <= q_pos)
    if window is not None:
        left, right = window
        keep = both(keep, jnp.logical_and(q_pos <= k_pos + left, q_pos >= k_pos - right))
    if q_len is not None:
        keep = both(keep, (jnp.arange(T)[None, :, None] < q_len[:, None, None])
                    [:, None, None])
    if kv_len is not None:
        keep = both(keep, (jnp.arange(S)[None, None, :] < kv_len[:, None, None])
                    [:, None, None])
    if keep is None:
        return logits
    return jnp.where(keep, logits, _large_negative(logits.dtype))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
    """Scaled dot-product attention (``jax.nn.dot_product_attention``).

    ``softmax(query @ key^T * scale + bias, masked) @ value`` per head, with the logits
    and softmax in float32 (or wider), the probabilities cast to ``key``'s dtype.

    Args:
      query: ``(B, T, N, H)`` (or fewer leading dims: ``(T, N, H)``...).
      key, value: ``(B, S, K, H)``, the query's dtype; ``N`` a multiple of ``K`` (grouped-
        query attention: each key/value head serves ``N // K`` query heads).
      bias: added to the logits, broadcastable to ``(B, N, T, S)`` (head axis 1 or N).
      mask: bool, broadcastable like ``bias``; False positions are excluded.
      scale: the logits' factor, default ``1 / sqrt(H)``.
      is_causal: query ``t`` sees keys ``s <= t``.
      query_seq_lengths, key_value_seq_lengths: int32 ``(B,)``; positions past them are
        excluded (padded query rows give 0).
      local_window_size: ``w`` or ``(left, right)``: query ``t`` sees keys in
        ``[t - left, t + right]``.
      implementation: ``None`` or ``"xla"`` (``"cudnn"`` needs a GPU JAX build).
      return_residual: also return the logsumexp of each row, shape ``(B, T, N)``.

    Returns:
      the query's shape and ``value``'s dtype (and the residual, if asked).

    Raises:
      ValueError: mismatched ranks, shapes or dtypes (naming the argument), query heads
        not a multiple of key heads, an unknown ``implementation``.
      RuntimeError: ``implementation="cudnn"`` (no cuDNN here, as JAX on CPU).

    Example:
      >>> q = k = v = jnp.ones((1, 4, 2, 8))
      >>> dot_product_attention(q, k, v, is_causal=True).shape
      (1, 4, 2, 8)
    """
    out_shape = jnp.shape(query)
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, (B, S, K, H), k.dtype, "value")
    _check(q, (B, -1, -1, H), k.dtype, "query")
    _check(mask, (-1,) * 4, np.dtype(bool), "mask")
    _check(bias, (-1,) * 4, None, "bias")
    _check(q_len, (B,), np.dtype("int32"), "query_seq_lengths")
    _check(kv_len, (B,), np.dtype("int32"), "key_value_seq_lengths")
    if q.shape[-2] % K:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {q.shape[-2]} vs {K}")
    if implementation == "cudnn":
        # RuntimeError, as JAX raises where no cuDNN is found (on CPU)
        raise RuntimeError("cuDNN is not detected: dot_product_attention's "
                           "implementation='cudnn' needs an NVIDIA GPU with cuDNN; use "
                           "implementation=None or 'xla'")
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}")
    scale = 1.0 / np.sqrt(H) if scale is None else scale

    T, N = q.shape[1], q.shape[2]
    G = N // K
    qg = jnp.reshape(q, (B, T, K, G, H))
    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", qg, k, preferred_element_type=logits_dtype)
    logits = logits * jnp.array(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)
    logits = _mask_logits(logits, _grouped(mask, K, G), is_causal, q_len, kv_len,
                          local_window_size)
    logits = logits.astype(np.float32)   # the softmax runs in float32, as in JAX
    probs = softmax(logits, axis=-1).astype(k.dtype)
    encoded = jnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    if q_len is not None:
        rows = jnp.arange(T)[None, :] < q_len[:, None]
        encoded = encoded * rows[:, :, None, None, None].astype(encoded.dtype)
    out = jnp.reshape(encoded, out_shape)
    if not return_residual:
        return out
    lse = logsumexp(logits, axis=-1).astype(k.dtype)            # (B, K, G, T)
    lse = jnp.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return out, lax.stop_gradient(jnp.reshape(lse, out_shape[:-1]))
