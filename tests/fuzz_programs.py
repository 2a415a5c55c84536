"""Random IR programs for differential testing: the native CPU backend against the
interpreter (the reference).

``make_program(seed, n_exprs)`` builds, from a seed alone, a ``ClosedJaxpr`` of
``n_exprs`` independent random expression DAGs (each over its own iteration space and
inputs: elementwise arithmetic, comparisons, select/clamp, conversions between every
dtype, integer division/remainder/shifts by amounts that hit XLA's edge rules, integer
overflow, ``broadcast_in_dim`` and reductions over random axes) and its random inputs
(float inputs carry NaN, +-inf, -0.0, subnormals and large values; integer inputs their
type's extremes).  ``check_program(prog)`` compiles it with the interpreter and with the
"cpu" backend (untiered, so the native code runs), runs both on the same inputs and
returns the mismatches: dtype and shape always; integers and booleans bit for bit; floats
bit for bit (NaN positions equal, the sign of zero kept) unless the value went through an
operation whose rounding may differ between the backends, then within a few ulps.

Which values may differ in rounding: the native backend computes float32 exp/log/tanh/
logistic/sin/cos/expm1 with its own polynomials (<= 1 ulp from the correctly rounded
value, NumPy's are not correctly rounded either), other transcendental functions through
libm, and float sums/products in another order.  Such an "approximate" value only flows
into operations that keep a relative error small (mul, div, neg, abs, max/min, select's
cases, float conversions, max/min reductions); everything that could magnify a rounding
difference into a different answer (sub/add cancellation, comparisons, floor, conversion
to integers, remainders, transcendentals) reads exact values only.  A float sum or product
reduction is an output only, compared against the interpreter's sum of magnitudes.

Run ``python tests/run_fuzz.py --help`` for the long run.
"""
from __future__ import annotations

import numpy as np

import jaxlite as jax
from jaxlite import lax
from jaxlite.config import config

DTYPES = [np.float32, np.float64, np.int32, np.int8, np.uint8, np.int16, np.uint32,
          np.int64, np.uint64, np.uint16, np.bool_, np.float16]
DTYPE_WEIGHTS = np.array([6, 3, 5, 2, 2, 1, 2, 2, 1, 1, 3, 0.5])
DIMS = [1, 2, 3, 4, 5]
BIG_SPACES = [(1 << 20,), (1024, 1025), (3, 512, 700), (1100, 1, 1000)]
"""Iteration spaces of ``big`` programs: kernels at least ``PARALLEL_MIN_ELEMENTS`` large
run their outer loop on every core (prange)."""

_F_EXACT_UNARY = ["neg", "abs", "floor", "ceil", "round0", "round1", "sign", "square",
                  "sqrt", "ipow", "rsqrt", "is_finite"]
_F_APPROX_UNARY = ["exp", "log", "tanh", "logistic", "sin", "cos", "expm1", "log1p",
                   "exp2", "tan", "atan", "sinh", "cosh", "asinh", "erf", "cbrt", "atan2",
                   "pow"]
_F_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "nextafter"]
_I_UNARY = ["neg", "abs", "sign", "bitwise_not", "square", "ipow", "population_count"]
_I_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "bitwise_and", "bitwise_or",
             "bitwise_xor", "shift_left", "shift_right_logical", "shift_right_arithmetic"]
_B_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "max", "min"]
_COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
# approximate values may flow into these (relative error stays a few ulps)
_KEEPS_APPROX = {"mul", "div", "max", "min", "neg", "abs", "square"}


class Val:
    """A traced value and how its two computations may differ."""

    def __init__(self, x, cls="exact", eps=0.0, product=False):
        self.x = x
        self.cls = cls        # "exact" | "approx"
        self.product = product    # a float product (or its negation): an FMA operand
        # an approximate value's rounding differences are relative to the coarsest float
        # type on its path (a float32 exp converted to float64 keeps float32's error)
        self.eps = 0.0
        if cls == "approx":
            dt = np.dtype(x.dtype)
            self.eps = max(eps, float(np.finfo(dt).eps) if dt.kind == "f" else 0.0)

    @property
    def dtype(self):
        return np.dtype(self.x.dtype)

    @property
    def shape(self):
        return tuple(self.x.shape)


def random_values(rng, shape, dtype):
    """Inputs that hit edge cases: NaN, +-inf, -0.0, subnormals, huge values; integer
    extremes, 0, +-1."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -200), min(info.max, 200) + 1, n).astype(dt)
        edges = np.array([info.min, info.max, 0, 1, info.max - 1] +
                         ([-1, info.min + 1] if dt.kind == "i" else [2]), dtype=dt)
        m = rng.random(n) < 0.25
        v[m] = rng.choice(edges, int(m.sum()))
        big = rng.random(n) < 0.1
        v[big] = rng.integers(info.min, info.max, int(big.sum()), dtype=dt, endpoint=True)
        return v.reshape(shape)
    fi = np.finfo(dt)
    v = rng.standard_normal(n) * rng.choice([1.0, 4.0, 100.0])
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5,
                      float(fi.tiny) / 4, -float(fi.tiny) * 3, float(fi.max) / 2,
                      -float(fi.max), 1e4, 88.5, -104.0], dtype=dt)
    m = rng.random(n) < 0.2
    v[m] = rng.choice(edges, int(m.sum()))
    return v.astype(dt).reshape(shape)


class _Builder:
    def __init__(self, rng, inputs, host, outputs, big=False, approx=frozenset()):
        self.big = big
        self.approx = approx          # exact-listed ops a backend computes approximately
        self.rng = rng
        self.inputs = inputs          # list of (shape, dtype) appended while building
        self.host = host
        self.outputs = outputs        # list of (Val, cls) ; cls "exact"/"approx"/"sum"

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def dtype(self):
        p = DTYPE_WEIGHTS / DTYPE_WEIGHTS.sum()
        return np.dtype(DTYPES[int(self.rng.choice(len(DTYPES), p=p))])


def _const(v, dt):
    return np.asarray(v, dtype=dt)


def _expr(b: _Builder, args, arg_iter, n_ops):
    """One random DAG over iteration space S drawn here; returns nothing (adds outputs)."""
    rng = b.rng
    if b.big:
        S = BIG_SPACES[int(rng.integers(len(BIG_SPACES)))]
        rank = len(S)
    else:
        rank = int(rng.integers(0, 4))
        S = tuple(int(rng.choice(DIMS)) for _ in range(rank))
    pool: list[Val] = []

    def new_input(dt=None):
        dt = b.dtype() if dt is None else dt
        shp = tuple(d if rng.random() < 0.7 else 1 for d in S)
        shp = shp[int(rng.integers(0, len(shp) + 1)) if rng.random() < 0.3 else 0:]
        b.inputs.append((shp, dt))
        b.host.append(random_values(rng, shp, dt))
        x = next(arg_iter)
        if shp != S and (shp != () or rng.random() < 0.5):
            x = lax.broadcast_in_dim(x, S, tuple(range(rank - len(shp), rank)))
        return Val(x)

    for _ in range(int(rng.integers(1, 4))):
        pool.append(new_input())

    def pick(pred=lambda v: True, exact=False, dtype=None):
        cands = [v for v in pool if pred(v) and (not exact or v.cls == "exact") and
                 (dtype is None or v.dtype == dtype)]
        if not cands:
            v = new_input(dtype)
            pool.append(v)
            return v
        # prefer recent values: deeper DAGs
        w = np.arange(1, len(cands) + 1, dtype=float) ** 2
        return cands[int(rng.choice(len(cands), p=w / w.sum()))]

    def as_dtype(v, dt):
        if v.dtype == dt:
            return v
        if v.cls != "exact" and (dt.kind != "f" or v.dtype.kind != "f"):
            return None
        return Val(lax.convert_element_type(v.x, dt), v.cls, v.eps)

    def second(a, exact):
        """An operand for a binary op with ``a``: a pool value converted, or a constant."""
        r = rng.random()
        if r < 0.2:
            return Val(_const(random_values(rng, (), a.dtype), a.dtype))
        v = pick(exact=exact)
        return as_dtype(v, a.dtype) or Val(_const(random_values(rng, (), a.dtype), a.dtype))

    for _ in range(n_ops):
        kind = rng.random()
        try:
            if kind < 0.35:                           # unary
                a = pick()
                k = a.dtype.kind
                if k == "f":
                    ops = _F_EXACT_UNARY + (_F_APPROX_UNARY if a.cls == "exact" else [])
                    if a.cls != "exact":
                        ops = [o for o in ops if o in _KEEPS_APPROX]
                    op = b.choice(ops)
                    if a.dtype == np.float16 and op in _F_APPROX_UNARY:
                        op = "neg"
                    cls = "approx" if (op in _F_APPROX_UNARY or op in b.approx or
                                       a.cls != "exact") else "exact"
                    if op in ("atan2", "pow"):
                        c = second(a, True)
                        x = getattr(lax, op)(a.x, c.x)
                    elif op.startswith("round"):
                        x = lax.round(a.x, int(op[-1]))
                    elif op == "ipow":
                        x = lax.integer_pow(a.x, int(rng.integers(-3, 6)))
                    else:
                        x = getattr(lax, op)(a.x)
                    if op == "is_finite":
                        cls = "exact"
                    prod = k == "f" and (op in ("square", "ipow") or
                                         (op == "neg" and a.product))
                    pool.append(Val(x, cls, a.eps, prod))
                elif k in "iu":
                    op = b.choice(_I_UNARY)
                    if op == "ipow":
                        x = lax.integer_pow(a.x, int(rng.integers(0, 6)))
                    elif op == "neg" and k == "u":
                        x = lax.neg(a.x)
                    else:
                        x = getattr(lax, op)(a.x)
                    pool.append(Val(x))
                else:
                    pool.append(Val(lax.bitwise_not(a.x)))
            elif kind < 0.65:                         # binary
                a = pick()
                k = a.dtype.kind
                if k == "f":
                    ops = _F_BINARY if a.cls == "exact" else [o for o in _F_BINARY
                                                             if o in _KEEPS_APPROX]
                elif k in "iu":
                    ops = _I_BINARY
                else:
                    ops = _B_BINARY
                op = b.choice(ops)
                exact = op not in _KEEPS_APPROX or k != "f"
                if op.startswith("shift") and rng.random() < 0.5:
                    bits = a.dtype.itemsize * 8
                    amt = b.choice([0, 1, bits - 1, bits, bits + 1, 2 * bits, -1, -bits])
                    if k == "u" and amt < 0:
                        amt = bits
                    c = Val(_const(amt, a.dtype))
                elif k == "f" and op in ("mul", "div"):
                    # an approximate value is only scaled by a moderate exact constant: a
                    # value that underflowed in one backend only (0 against a subnormal)
                    # must not become 0/0 or be multiplied back up
                    c = Val(_const(b.choice([0.5, 2.0, -3.0, 0.25]), a.dtype)) \
                        if a.cls != "exact" else second(a, True)
                else:
                    c = second(a, exact)
                if rng.random() < 0.5 and not (op == "div" and a.cls != "exact"):
                    a, c = c, a
                x = getattr(lax, op)(a.x, c.x)
                cls = "approx" if "approx" in (a.cls, c.cls) else "exact"
                if "fma" in b.approx and op in ("add", "sub") and k == "f" and (
                        a.product or c.product):
                    cls = "approx"    # the backend may fuse the product into an FMA
                pool.append(Val(x, cls, max(a.eps, c.eps), k == "f" and op == "mul"))
            elif kind < 0.72:                         # comparison
                a = pick(exact=True)
                c = second(a, True)
                pool.append(Val(getattr(lax, b.choice(_COMPARE))(a.x, c.x)))
            elif kind < 0.80:                         # conversion
                a = pick()
                dt = b.dtype()
                v = as_dtype(a, dt)
                if v is not None:
                    pool.append(v)
            elif kind < 0.87:                         # select_n / clamp
                if rng.random() < 0.7:
                    p = pick(lambda v: v.dtype == np.bool_, exact=True)
                    ncase = 2
                    if rng.random() < 0.3:
                        ncase = int(rng.integers(1, 4))
                        q = pick(lambda v: v.dtype.kind in "iu", exact=True)
                        q = as_dtype(q, np.dtype(np.int32))
                        p = Val(lax.clamp(_const(0, np.int32), q.x,
                                          _const(ncase - 1, np.int32)))
                    a = pick()
                    cases = [a] + [as_dtype(pick(), a.dtype) or a for _ in range(ncase - 1)]
                    x = lax.select_n(p.x, *[c.x for c in cases])
                    pool.append(Val(x, "approx" if any(c.cls != "exact" for c in cases)
                                    else "exact", max(c.eps for c in cases)))
                else:
                    a = pick(lambda v: v.dtype != np.bool_, exact=True)
                    lo = second(a, True)
                    hi = second(a, True)
                    if rng.random() < 0.5:
                        lo = Val(_const(random_values(rng, (), a.dtype), a.dtype))
                    pool.append(Val(lax.clamp(lo.x, a.x, hi.x)))
            else:                                      # reduction
                a = pick(lambda v: v.x.ndim > 0)
                if a.x.ndim == 0:
                    continue
                nd = a.x.ndim
                axes = tuple(sorted(int(i) for i in rng.choice(
                    nd, int(rng.integers(0 if rng.random() < 0.1 else 1, nd + 1)),
                    replace=False)))
                which = b.choice(["sum", "max", "min", "prod"])
                src = a
                if a.dtype == np.bool_ and which in ("sum", "prod"):
                    src = as_dtype(a, np.dtype(np.int32))
                if src.dtype.kind == "f" and which in ("sum", "prod"):
                    if src.cls != "exact":
                        continue
                    r = getattr(lax, f"reduce_{which}")(src.x, axes)
                    scale = lax.reduce_sum(lax.abs(src.x), axes) if which == "sum" else \
                        getattr(lax, f"reduce_{which}")(lax.abs(src.x), axes)
                    b.outputs.append((Val(r, "sum"), ("sum", len(b.outputs) + 1,
                                                      int(np.prod([S[i] for i in axes])))))
                    b.outputs.append((Val(scale), ("scale",)))
                    continue
                r = getattr(lax, f"reduce_{which}")(src.x, axes)
                kept = tuple(i for i in range(nd) if i not in axes)
                if rng.random() < 0.7:                # broadcast back (softmax-like)
                    r = lax.broadcast_in_dim(r, S, kept)
                    pool.append(Val(r, src.cls, src.eps))
                else:
                    b.outputs.append((Val(r, src.cls, src.eps), (src.cls, src.eps)))
        except (TypeError, ValueError):
            continue    # an op the random choice got wrong for these dtypes: skip it

    # outputs: the last values and a few random ones
    n_out = min(len(pool), int(rng.integers(1, 4)))
    chosen = pool[-n_out:] + [pool[int(rng.integers(len(pool)))]]
    for v in chosen:
        b.outputs.append((v, (v.cls, v.eps)))


class Program:
    """A random program: ``closed`` (ClosedJaxpr), ``inputs`` (NumPy arrays) and the
    comparison class of each output."""

    def __init__(self, seed, closed, inputs, classes, big=False):
        self.seed = seed
        self.big = big
        self.closed = closed
        self.inputs = inputs
        self.classes = classes

    def describe(self) -> str:
        ins = "\n".join(f"  in{i}: {a.dtype}{list(a.shape)} = "
                        f"{a.tolist() if a.size <= 64 else '(seeded, see make_program)'}"
                        for i, a in enumerate(self.inputs))
        return f"program seed={self.seed} big={self.big}\n{self.closed}\ninputs:\n{ins}"


def make_program(seed: int, n_exprs: int = 1, n_ops: int = 8, big: bool = False,
                 approx=frozenset()) -> Program:
    """The random program of ``seed``: ``n_exprs`` independent DAGs of about ``n_ops``
    operations each (same seed, same program); ``big``: over iteration spaces of about a
    million elements (``BIG_SPACES``).  ``approx``: what the backend under test rounds
    differently from the interpreter, classified approximate like the transcendental
    functions: names of ``_F_EXACT_UNARY`` operations (XLA's ``rsqrt``), and ``"fma"``: a
    float add or sub of a product (XLA:CPU contracts it into a fused multiply-add, one
    rounding instead of two).  The classes steer the random choices, so a program made
    with ``approx`` is not the default one of its seed."""
    # first pass: learn the inputs (shapes/dtypes/values) with a throwaway trace
    specs: list = []
    host: list = []
    outputs: list = []

    def make_f(inputs_known):
        def f(*args):
            rng = np.random.default_rng(seed)
            b = _Builder(rng, [], [], [], big, frozenset(approx))
            it = iter(args) if inputs_known else _Feeder(b)
            for _ in range(n_exprs):
                _expr(b, args, it, int(rng.integers(1, n_ops + 1)))
            specs[:] = b.inputs
            host[:] = b.host
            outputs[:] = b.outputs
            return [v.x for v, _ in b.outputs]
        return f

    with config._override("jax_enable_x64", True):
        make_f(False)()
        inputs = list(host)
        closed = jax.make_jaxpr(make_f(True))(*inputs)
    classes = [c for _, c in outputs]
    return Program(seed, closed, inputs, classes, big)


class _Feeder:
    """Eager stand-in for the arguments on the first pass: the value just generated."""

    def __init__(self, b):
        self.b = b

    def __iter__(self):
        return self

    def __next__(self):
        return jax.numpy.asarray(self.b.host[-1])


# ---- running and comparing --------------------------------------------------------------

def run_both(prog: Program):
    """(interpreter outputs, native outputs, native executable)."""
    from jaxlite.compiler.pipeline import compile_jaxpr
    with config._override("jaxlite_tiered", False), np.errstate(all="ignore"):
        ref_ex = compile_jaxpr(prog.closed, backend="interpreter").executable
        nat_ex = compile_jaxpr(prog.closed, backend="cpu").executable
        host = [np.asarray(a) for a in prog.inputs]
        want = [np.asarray(w) for w in ref_ex.run(list(host))]
        got = [np.asarray(g) for g in nat_ex.run(list(host))]
    return want, got, nat_ex


def _ulp_tol(dt):
    return {2: 2.0 ** -7, 4: 2.0 ** -17, 8: 2.0 ** -45}[np.dtype(dt).itemsize]


def compare(want, got, cls, extra=None) -> str | None:
    """None when ``got`` matches ``want`` under comparison class ``cls``; else why not."""
    if want.dtype != got.dtype or want.shape != got.shape:
        return f"dtype/shape {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    if want.dtype.kind != "f":
        if not np.array_equal(want, got):
            bad = np.argwhere(want != got)[:5].tolist()
            return f"integer mismatch at {bad}: got {got[tuple(np.array(bad).T)].tolist()} " \
                   f"want {want[tuple(np.array(bad).T)].tolist()}"
        return None
    nw, ng = np.isnan(want), np.isnan(got)
    if not np.array_equal(nw, ng):
        return f"NaN positions differ at {np.argwhere(nw != ng)[:5].tolist()}"
    w = np.where(nw, 0, want).astype(np.float64)
    g = np.where(ng, 0, got).astype(np.float64)
    if cls == "exact":
        same = (w == g) & (np.signbit(w) == np.signbit(g))
    else:
        tiny = float(np.finfo(want.dtype).tiny)
        tol = _ulp_tol(want.dtype)
        with np.errstate(all="ignore"):
            if cls == "sum":
                scale, n = extra
                bound = tol * max(n, 1) * np.where(np.isfinite(scale), scale, 0) + tiny * 4
            else:
                tol = max(tol, 64 * float(extra or 0.0))
                bound = tol * np.maximum(np.abs(w), np.abs(g)) + tiny * 4
            same = (w == g) | (np.abs(w - g) <= bound)
    if not same.all():
        bad = np.argwhere(~same)[:5]
        idx = tuple(bad.T)
        return (f"float ({cls}) mismatch at {bad.tolist()}: got {got[idx].tolist()} "
                f"want {want[idx].tolist()}")
    return None


def check_program(prog: Program, info: dict | None = None) -> list[str]:
    """The mismatches between the native backend and the interpreter (empty: agree).
    ``info``, when given, receives the native executable (``info["executable"]``)."""
    want, got, ex = run_both(prog)
    if info is not None:
        info["executable"] = ex
    errs = []
    if len(want) != len(got):
        return [f"{len(got)} outputs, want {len(want)}"]
    for i, (w, g, c) in enumerate(zip(want, got, prog.classes)):
        extra = None
        if c[0] == "scale":
            continue
        if c[0] == "sum":
            extra = (np.abs(want[c[1]]).astype(np.float64), c[2])
        elif c[0] == "approx":
            extra = c[1]
        e = compare(w, g, c[0], extra)
        if e:
            errs.append(f"output {i}: {e}")
    return errs


def failure_report(prog: Program, errs) -> str:
    return "\n".join(["native backend != interpreter:"] + errs + [prog.describe()])
