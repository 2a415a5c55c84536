"""Typed PRNG key arrays in the shape and selection functions of ``lax`` and ``numpy``.

Layer: lax (imported by numpy; knows nothing of the random module).  A typed key array
(``jax.random.key``) holds ``uint32[*shape, words]`` key data (2 words a key for
threefry2x32, 4 for the rbg implementations).  The functions that only move, select or copy
elements (reshape, transpose, concatenate, stack, tile, where, take, ...) accept key arrays
in JAX; here they run once on each 32-bit word of the keys (every word sees the same
indices and shapes) and the results are joined back into keys.  Functions that compute with
values (arithmetic, reductions, sorting) still refuse keys, and so does combining keys of
two implementations (JAX's ValueError: key dtypes take part in no type promotion).

The random module registers its key class with ``register_key_type``; a key array has its
data as ``_base``, its dtype as ``dtype``, and ``_with_data(data)`` rebuilds keys of its
implementation over new data.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

_key_types: tuple = ()


def register_key_type(cls) -> None:
    """Makes instances of ``cls`` (random's ``PRNGKeyArray``) typed key arrays here."""
    global _key_types
    if cls not in _key_types:
        _key_types = _key_types + (cls,)


def is_key(x) -> bool:
    return type(x) in _key_types


def _holds_key(v) -> bool:
    t = type(v)
    if t in _key_types:
        return True
    if t is list or t is tuple:
        for e in v:
            if type(e) in _key_types:
                return True
    return False


def _word(v, i, name, dtype):
    """Word ``i`` of the key data of element argument ``v`` (a key array or a sequence of
    them); ValueError for numbers mixed with keys, or keys of another dtype than ``dtype``
    (JAX refuses to promote keys)."""
    if type(v) in _key_types:
        if v.dtype != dtype:
            raise ValueError(f"dtype={v.dtype} is not a valid dtype for JAX type promotion.")
        return v._base[..., i]
    if type(v) in (list, tuple):
        return type(v)(_word(e, i, name, dtype) for e in v)
    raise ValueError(f"{name}: typed PRNG key arrays cannot be combined with "
                     f"{type(v).__name__} values (keys take part in no dtype promotion); "
                     f"all of these operands must be key arrays")


def _join(like, results):
    """Key arrays of ``like``'s implementation from the results for each word."""
    from ..primitives import shape as _s
    from ..core.trace import get_aval
    r0 = results[0]
    if isinstance(r0, (list, tuple)):
        return type(r0)(_join(like, rs) for rs in zip(*results))
    if not hasattr(r0, "dtype"):       # a shape, a size: the same for every word
        return r0
    nd = get_aval(r0).ndim
    shape = tuple(get_aval(r0).shape) + (1,)
    dims = tuple(range(nd))
    parts = [_s.broadcast_in_dim_p.bind(r, shape=shape, broadcast_dimensions=dims,
                                        sharding=None) for r in results]
    return like._with_data(_s.concatenate_p.bind(*parts, dimension=nd))


def _given_dtype(args, kwargs, at):
    return kwargs["dtype"] if "dtype" in kwargs else (args[at] if at < len(args) else None)


def _numeric_dtype(args, kwargs, at, key) -> bool:
    given = _given_dtype(args, kwargs, at)
    return given is not None and given != key.dtype


def _keys_keep_dtype(key, args, kwargs, at):
    """``args``/``kwargs`` with a ``dtype`` argument (position ``at``) that names the key's
    own dtype removed; any other dtype is JAX's ValueError (key data is never converted to
    numbers: ``jnp.asarray(key, dtype=jnp.float32)`` silently gave a key of float data)."""
    given = _given_dtype(args, kwargs, at)
    if given is None:
        return args, kwargs
    if given != key.dtype:
        try:
            shown = np.dtype(given).name
        except TypeError:
            shown = given
        raise ValueError(f"Cannot convert_element_type from {key.dtype} to {shown}")
    if "dtype" in kwargs:
        kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    else:
        args = args[:at] + (None,) + args[at + 1:]
    return args, kwargs


def key_aware(*elements: str):
    """Decorator: the function also takes typed key arrays in the parameters named in
    ``elements`` (``"*"`` for ``*args``), each a key array or a sequence of them, and then
    returns key arrays.  Other parameters pass through unchanged.  Calls without key arrays
    cost a type check of the element arguments."""
    def wrap(fn):
        sig = inspect.signature(fn)
        params = list(sig.parameters)
        star = "*" in elements
        positions = [i for i, p in enumerate(params) if p in elements]
        name = fn.__name__
        dtype_at = params.index("dtype") if "dtype" in params else None

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            # the common case, no keys, costs a type check of the element arguments only
            which = range(len(args)) if star else [i for i in positions if i < len(args)]
            keys = [args[i] for i in which if _holds_key(args[i])]
            if kwargs:
                keys += [v for k, v in kwargs.items() if k in elements and _holds_key(v)]
            if not keys:
                return fn(*args, **kwargs)     # (a key elsewhere: fn refuses it)
            first = keys[0] if type(keys[0]) in _key_types else \
                next(e for e in keys[0] if type(e) in _key_types)
            if dtype_at is not None:
                if name.endswith("_like") and _numeric_dtype(args, kwargs, dtype_at, first):
                    # zeros_like(key, dtype=float32): numbers of the key array's shape
                    proto = np.zeros(first.shape, np.bool_)
                    return fn(proto, *args[1:], **kwargs)
                args, kwargs = _keys_keep_dtype(first, args, kwargs, dtype_at)
            which = set(which)
            outs = []
            for i in range(first._base.shape[-1]):
                a = [_word(v, i, name, first.dtype) if j in which and v is not None else v
                     for j, v in enumerate(args)]
                kw = {k: (_word(v, i, name, first.dtype) if k in elements and v is not None
                          else v)
                      for k, v in kwargs.items()}
                outs.append(fn(*a, **kw))
            return _join(first, outs)
        return wrapper
    return wrap
