"""Functions of functions (``jax.numpy``): ``apply_along_axis``, ``apply_over_axes``,
``vectorize``, ``frompyfunc``, and ``ufunc`` objects with their ``reduce``,
``accumulate``, ``at``, ``reduceat`` and ``outer`` methods. ``jnp.add``, ``jnp.multiply``
and the other binary elementwise functions JAX exposes as ufuncs are ``ufunc`` objects
here too (the array operators call the plain functions underneath).

Layer: numpy (built on ``vmap`` and ``lax.scan``: a user function is applied to traced
slices, so everything stays differentiable and jit-able).
"""
from __future__ import annotations

import functools
import inspect
import operator
import sys

import numpy as np

from .. import _traceback, lax
from ..primitives import reduction as _red_p
from ._util import canonicalize_axis, check_arraylike, ensure_array


def _cum_bind(p, x, axis):
    """A running max/min: the primitive itself, which (unlike ``lax.cummax``) takes bools,
    as ``jnp.maximum.accumulate`` does."""
    return p.bind(x, axis=axis, reverse=False)


def _jnp():
    from .. import numpy as jnp
    return jnp


def _vmap():
    from ..transforms.vmap import vmap
    return vmap


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to every 1-d slice of ``arr`` along ``axis``
    (``jax.numpy.apply_along_axis``, by vmap over the other axes); the slice's axis is
    replaced by the axes of ``func1d``'s result."""
    check_arraylike("apply_along_axis", arr)
    a = ensure_array(arr)
    axis = canonicalize_axis(axis, a.ndim)
    vmap = _vmap()
    f = lambda x: func1d(x, *args, **kwargs)  # noqa: E731
    # vmap over the axes after ``axis`` (innermost first), then those before it
    for i in range(a.ndim - 1, axis, -1):
        f = vmap(f, in_axes=-1, out_axes=-1)
    for _ in range(axis):
        f = vmap(f, in_axes=0, out_axes=0)
    return f(a)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each axis in turn, the result keeping its rank
    (``jax.numpy.apply_over_axes``: a reduced axis is re-inserted with size 1). Raises
    ValueError when ``func`` changes the rank otherwise."""
    check_arraylike("apply_over_axes", a)
    jnp = _jnp()
    x = ensure_array(a)
    for ax in ([axes] if np.ndim(axes) == 0 else axes):
        ax = canonicalize_axis(ax, x.ndim)
        y = func(x, ax)
        if y.ndim == x.ndim - 1:
            y = jnp.expand_dims(y, ax)
        elif y.ndim != x.ndim:
            raise ValueError("function is not returning an array of the correct shape")
        x = y
    return x


def _parse_signature(signature):
    """``'(m,n),(n)->(m)'`` as (input core dims, output core dims)."""
    def dims(part):
        part = part.strip()
        out = []
        for grp in part.split("),"):
            grp = grp.strip().lstrip("(").rstrip(")")
            out.append(tuple(d.strip() for d in grp.split(",") if d.strip()))
        return out
    try:
        ins, outs = signature.split("->")
    except ValueError:
        raise ValueError(f"not a valid gufunc signature: {signature}") from None
    return dims(ins), dims(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """``pyfunc`` (written for scalars, or for the core shapes of a gufunc ``signature``
    such as ``'(n),(n)->()'``) made to broadcast over leading dimensions
    (``jax.numpy.vectorize``, by vmap). ``excluded``: positions or names of arguments passed
    through unchanged. Raises ValueError for core dimensions that disagree or arguments of
    too low a rank."""
    excluded = frozenset(excluded)
    core_in = core_out = None
    if signature is not None:
        core_in, core_out = _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        jnp = _jnp()
        vmap = _vmap()
        pos = [i for i in range(len(args)) if i not in excluded]
        names = [k for k in kwargs if k not in excluded]
        vals = [jnp.asarray(args[i]) for i in pos] + [jnp.asarray(kwargs[k]) for k in names]
        cores = core_in if core_in is not None else [()] * len(vals)
        if len(cores) != len(vals):
            raise TypeError(f"wrong number of positional arguments: expected {len(cores)}, "
                            f"got {len(vals)}")
        sizes = {}
        for v, core in zip(vals, cores):
            if v.ndim < len(core):
                raise ValueError(f"input with shape {tuple(v.shape)} does not have enough "
                                 f"dimensions for all core dimensions {core}")
            for name, d in zip(core, v.shape[v.ndim - len(core):]):
                if sizes.setdefault(name, d) != d:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: "
                                     f"{d} vs {sizes[name]}")
        loops = [v.shape[:v.ndim - len(c)] for v, c in zip(vals, cores)]
        batch = tuple(np.broadcast_shapes(*loops)) if loops else ()
        vals = [jnp.broadcast_to(v, batch + tuple(v.shape[v.ndim - len(c):]))
                for v, c in zip(vals, cores)]

        def call(*vs):
            a = list(args)
            kw = dict(kwargs)
            for i, v in zip(pos, vs[:len(pos)]):
                a[i] = v
            for k, v in zip(names, vs[len(pos):]):
                kw[k] = v
            return pyfunc(*a, **kw)
        f = call
        for _ in batch:
            f = vmap(f)
        return f(*vals)
    return wrapped


_NOT_INPLACE = ("Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace "
                "like np.ufunc.at(). Instead, you can pass inplace=False and capture the "
                "result; e.g. >>> arr = jnp.add.at(arr, ind, val, inplace=False)")


class ufunc:
    """A universal function (``jax.numpy.ufunc``): a function of ``nin`` arrays with
    broadcasting, and the methods ``reduce``, ``accumulate``, ``at``, ``reduceat`` and
    ``outer``, computed from the function itself (a scan or a vmap) unless faster versions
    are given (``call``, ``reduce``, ...). ``identity`` is the value of an empty
    reduction."""

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
                 call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else nargs
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", repr(func))
        self._call = call
        self._reduce, self._accumulate, self._at, self._reduceat = (reduce, accumulate, at,
                                                                    reduceat)
        self.__doc__ = getattr(call or func, "__doc__", None)
        self.__wrapped__ = call or func

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    @_traceback.register_boundary
    def __call__(self, *args, out=None, where=None, **kwargs):
        # a traceback boundary (jaxlite/_traceback.py), filtering in place: no wrapper
        # call on the success path of jnp.add(x, y) and the other ufuncs
        try:
            # NumPy's ufunc options, refused as JAX refuses them (arrays are immutable)
            if out is not None:
                raise NotImplementedError(f"out argument of {self}")
            if where is not None:
                raise NotImplementedError(f"where argument of {self}")
            if self._call is not None:
                return self._call(*args, **kwargs)
            if len(args) != self.nin:
                raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments "
                                f"but {len(args)} were given")
            check_arraylike(self.__name__, *args)
            jnp = _jnp()
            vals = jnp.broadcast_arrays(*[jnp.asarray(a) for a in args])
            f = self._func
            for _ in range(vals[0].ndim if vals else 0):
                f = _vmap()(f)
            return f(*vals)
        except Exception as e:
            _traceback.filter_exception(e, sys._getframe())
            raise

    def _binary_only(self, what):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{what} only supported for binary ufuncs")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """``a`` reduced along ``axis`` (an int, a tuple, or None for all axes) by the
        function (``numpy.ufunc.reduce``), starting from ``initial``; ``where`` masks
        elements out (needs ``initial`` or an identity). ValueError for an empty axis
        without identity and for a function that is not binary."""
        self._binary_only("reduce")
        if out is not None:
            try:
                hash(out)
            except TypeError:
                # JAX's reduce takes ``out`` as a static argument of its jit: an array
                # there fails the hashing first
                raise ValueError(f"Non-hashable static arguments are not supported: out of "
                                 f"{self.__name__}.reduce() is a {type(out).__name__}; "
                                 f"JAX arrays are immutable, so out= is not supported."
                                 ) from None
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        check_arraylike(f"{self.__name__}.reduce", a)
        if self._reduce is not None and where is None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims,
                                initial=initial)
        jnp = _jnp()
        x = ensure_array(a)
        if dtype is not None:
            x = x.astype(dtype)
        if initial is None and self._reduce is None:
            # as JAX's reduction by a loop: it starts from the identity when there is one
            # (NumPy starts from the first element: another value for a function that
            # does not keep its identity, as frompyfunc's may not)
            initial = self.identity
        if self.__name__.startswith("bitwise_") and x.dtype.kind not in "biu":
            # as JAX, whose reduction asks for an integer identity (even of an empty axis)
            raise ValueError(f"{self.__name__}.reduce: integer argument required; got "
                             f"dtype={x.dtype.name}")
        axes = tuple(range(x.ndim)) if axis is None else \
            tuple(canonicalize_axis(ax, x.ndim) for ax in
                  (axis if isinstance(axis, tuple) else (axis,)))
        if where is not None:
            init = initial if initial is not None else self.identity
            if init is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 f"identity, so to use a where mask one has to specify "
                                 f"'initial'.")
            x = jnp.where(where, x, jnp.asarray(init, dtype=x.dtype))
        keep = [d for d in range(x.ndim) if d not in axes]
        moved = jnp.transpose(x, tuple(axes) + tuple(keep))
        flat = moved.reshape((-1,) + tuple(x.shape[d] for d in keep))
        if initial is not None:
            flat = jnp.concatenate([jnp.full((1,) + flat.shape[1:], initial, flat.dtype),
                                    flat])
        if flat.shape[0] == 0:
            if self.identity is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 f"which has no identity")
            res = jnp.full(flat.shape[1:], self.identity, x.dtype)
        else:
            res, _ = lax.scan(lambda c, e: (self(c, e).astype(c.dtype), None), flat[0],
                              flat[1:])
        if keepdims:
            res = jnp.expand_dims(res, axes)
        return res

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """Running reductions along ``axis`` (``numpy.ufunc.accumulate``)."""
        self._binary_only("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        check_arraylike(f"{self.__name__}.accumulate", a)
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        jnp = _jnp()
        x = ensure_array(a)
        if dtype is not None:
            x = x.astype(dtype)
        axis = canonicalize_axis(axis, x.ndim)
        m = jnp.moveaxis(x, axis, 0)
        if m.shape[0] == 0:
            return x

        def step(c, e):
            nxt = self(c, e).astype(c.dtype)
            return nxt, nxt
        _, rest = lax.scan(step, m[0], m[1:])
        return jnp.moveaxis(jnp.concatenate([m[:1], rest]), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """``a`` with the function applied at ``indices`` (repeated indices apply
        repeatedly) (``numpy.ufunc.at``); needs ``inplace=False`` (NotImplementedError
        otherwise: arrays are immutable)."""
        if inplace:
            raise NotImplementedError(_NOT_INPLACE)
        check_arraylike(f"{self.__name__}.at", a)
        if self._at is not None:
            return self._at(a, indices, b)
        jnp = _jnp()
        x = ensure_array(a)
        idx = jnp.ravel(jnp.asarray(indices))
        if self.nin == 2:
            if b is None:
                raise TypeError(f"{self.__name__}.at() needs the operand b")
            vals = jnp.broadcast_to(jnp.asarray(b, dtype=x.dtype), idx.shape + x.shape[1:])

            def step(arr, iv):
                i, v = iv
                return arr.at[i].set(self(arr[i], v).astype(arr.dtype)), None
            out, _ = lax.scan(step, x, (idx, vals))
        else:
            def step(arr, i):
                return arr.at[i].set(self(arr[i]).astype(arr.dtype)), None
            out, _ = lax.scan(step, x, idx)
        return out

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions over the slices ``a[indices[i]:indices[i+1]]`` along ``axis``
        (``numpy.ufunc.reduceat``): where ``indices[i] >= indices[i+1]`` the element
        ``a[indices[i]]``; the last slice runs to the end. Needs concrete indices."""
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        check_arraylike(f"{self.__name__}.reduceat", a)
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        jnp = _jnp()
        x = ensure_array(a)
        if dtype is not None:
            x = x.astype(dtype)
        axis = canonicalize_axis(axis, x.ndim)
        ind = np.asarray(indices).ravel()
        n = x.shape[axis]
        parts = []
        for k, i in enumerate(ind):
            j = int(ind[k + 1]) if k + 1 < len(ind) else n
            i = int(i)
            sl = [slice(None)] * x.ndim
            if i < j:
                sl[axis] = slice(i, j)
                parts.append(self.reduce(x[tuple(sl)], axis=axis, keepdims=True))
            else:
                sl[axis] = slice(i, i + 1)
                parts.append(x[tuple(sl)])
        return jnp.concatenate(parts, axis=axis)

    def outer(self, A, B, /):
        """``f(A[i...], B[j...])`` for every pair: shape ``A.shape + B.shape``
        (``numpy.ufunc.outer``)."""
        self._binary_only("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        x, y = ensure_array(A), ensure_array(B)
        return self(x.reshape(tuple(x.shape) + (1,) * y.ndim), y)


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ``ufunc`` from a Python function of ``nin`` arguments and ``nout`` results
    (``jax.numpy.frompyfunc``), applied elementwise by vmap."""
    return ufunc(func, nin, nout, identity=identity)


def _method(fn, **fixed):
    def m(a, *args, **kwargs):
        return fn(a, *args, **{**kwargs, **fixed})
    return m


def wrap_ufuncs(ns: dict) -> dict:
    """The ``ufunc`` objects for the binary (and ``negative``) elementwise functions of the
    namespace ``ns`` that JAX exposes as ufuncs, with fast reductions where jnp has them."""
    jnp = _jnp()

    def _red(name):
        f = getattr(jnp, name)

        logical = name in ("all", "any")

        def red(a, axis=0, dtype=None, keepdims=False, initial=None):
            kw = {} if initial is None or logical else {"initial": initial}
            if dtype is not None:
                if name in ("sum", "prod"):
                    kw["dtype"] = dtype
                else:
                    a = ensure_array(a).astype(dtype)
            r = f(a, axis=axis, keepdims=keepdims, **kw)
            if initial is not None and logical:
                # jnp.all/any take no initial: it joins the result as one more element
                from ._reductions import _check_initial
                _check_initial(f"logical_{'and' if name == 'all' else 'or'}.reduce",
                               initial)
                r = (jnp.logical_and if name == "all" else jnp.logical_or)(r, initial)
            return r
        return red

    def _acc(fn):
        def acc(a, axis=0, dtype=None):
            x = ensure_array(a)
            if dtype is not None:
                x = x.astype(dtype)
            return fn(x, axis=canonicalize_axis(axis, x.ndim))
        return acc

    def _at(method):
        def at(a, indices, b):
            return getattr(ensure_array(a).at[indices], method)(b)
        return at
    spec = {
        "add": dict(identity=0, reduce=_red("sum"), accumulate=_acc(jnp.cumsum),
                    at=_at("add")),
        "multiply": dict(identity=1, reduce=_red("prod"), accumulate=_acc(jnp.cumprod),
                         at=_at("multiply")),
        "maximum": dict(identity=None, reduce=_red("max"),
                        accumulate=_acc(lambda x, axis: _cum_bind(_red_p.cummax_p, x, axis)),
                        at=_at("max")),
        "minimum": dict(identity=None, reduce=_red("min"),
                        accumulate=_acc(lambda x, axis: _cum_bind(_red_p.cummin_p, x, axis)),
                        at=_at("min")),
        "logical_and": dict(identity=True, reduce=_red("all")),
        "logical_or": dict(identity=False, reduce=_red("any")),
        "logical_xor": dict(identity=False),
        "bitwise_and": dict(identity=-1),
        "bitwise_or": dict(identity=0),
        "bitwise_xor": dict(identity=0),
        "logaddexp": dict(identity=-np.inf),
        "logaddexp2": dict(identity=-np.inf),
        "subtract": dict(identity=None),
        "negative": dict(identity=None),
    }
    out = {}
    for name, kw in spec.items():
        fn = ns[name]
        nin = len(inspect.signature(fn).parameters)
        out[name] = ufunc(fn, nin, 1, name=name, call=fn, **kw)
    return out
