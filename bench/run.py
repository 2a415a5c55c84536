"""jaxlite's benchmark suite: jaxlite, real JAX and NumPy side by side in one run.

Usage:
    python bench/run.py                 # full sizes; writes bench/RESULTS.md
    python bench/run.py --quick         # smoke run: small sizes, few repeats, writes nothing
    python bench/run.py --quick --no-write --libs jaxlite,numpy

Each library runs in its own subprocess (``--worker LIB``, which prints one JSON line), one
after another, so that one library's threads, caches and imports do not disturb another's.
W6 (time to first result, cold and warm persistent cache) and W7 (peak memory) go further:
each of their samples is a fresh process of its own (bench/_workloads_fresh.py).
Every workload reports the median over its repeats; ratios are jaxlite's median divided by
the other library's, and the issue's targets are checked against jaxlite / JAX.  The
workloads are defined in bench/README.md: keep those definitions and this code in step.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _workloads_fresh import W6_SHAPE, W7_N  # noqa: E402  (W6/W7 sizes, one definition)
LIBS = ("jaxlite", "jax", "numpy")
LIB_LABEL = {"jaxlite": "jaxlite", "jax": "JAX", "numpy": "NumPy"}

# Sizes and repeats.  "inner" = calls per timed sample for the microsecond workloads.
FULL = {
    "w1_inner": 2000, "w1_repeats": 15,
    "w2_n": 10_000_000, "w2_repeats": 10,
    "w3_shape": (2048, 4096), "w3_repeats": 10,
    "w4_sizes": (784, 512, 512, 10), "w4_batch": 256, "w4_repeats": 20,
    "w5_steps": 1000, "w5_hidden": 64, "w5_repeats": 20,
    "w6_processes": 5, "w7_processes": 3, "first_processes": 5,
    "w8_inner": 2000, "w8_repeats": 15,
    "copy_n": 32 * 1024 * 1024, "copy_repeats": 10,
    "w12_n": 512, "w12_fft": 2 ** 20, "w12_repeats": 7,
    "warmup": 2,
}
QUICK = {
    "w1_inner": 50, "w1_repeats": 3,
    "w2_n": 100_000, "w2_repeats": 3,
    "w3_shape": (128, 256), "w3_repeats": 3,
    "w4_sizes": (64, 32, 32, 10), "w4_batch": 16, "w4_repeats": 3,
    "w5_steps": 50, "w5_hidden": 16, "w5_repeats": 3,
    "w6_processes": 1, "w7_processes": 1, "first_processes": 1,
    "w8_inner": 50, "w8_repeats": 3,
    "copy_n": 1024 * 1024, "copy_repeats": 3,
    "w12_n": 32, "w12_fft": 2 ** 10, "w12_repeats": 3,
    "warmup": 1,
}

# result key, row label, title, unit of the reported value (a time per call, or MB)
WORKLOADS = [
    ("W1", "W1", "jit dispatch: dot(x, y) + sum(x) on float32[3]", "us"),
    ("W2", "W2", "fused elementwise: tanh(x)*0.5 + exp(-x*x)*sin(x), float32[N]", "ms"),
    ("W3", "W3", "row softmax, float32[R, C], jitted", "ms"),
    ("W4", "W4", "MLP training step, jit(value_and_grad) + SGD", "ms"),
    ("W5", "W5", "lax.scan tanh RNN, jitted", "ms"),
    ("W6_cold", "W6 cold", "time to first result, 40-op function, fresh process, cold cache",
     "ms"),
    ("W6_warm", "W6 warm", "time to first result, 40-op function, fresh process, warm "
     "persistent cache", "ms"),
    ("W7", "W7", "peak memory, jitted 10-op elementwise chain, float32[N]", "MB"),
    ("W8", "W8", "eager op latency: x + 1 on float32[3], not jitted", "us"),
    ("W12_solve", "W12 solve", "jnp.linalg.solve, float32[n, n] and [n], jitted", "ms"),
    ("W12_cholesky", "W12 cholesky", "jnp.linalg.cholesky, float32[n, n] SPD, jitted", "ms"),
    ("W12_svd", "W12 svd", "jnp.linalg.svd, float32[n, n], jitted", "ms"),
    ("W12_eigh", "W12 eigh", "jnp.linalg.eigh, float32[n, n] symmetric, jitted", "ms"),
    ("W12_fft", "W12 fft", "jnp.fft.fft, complex64[N], jitted", "ms"),
    ("W13", "W13", "first 20 calls of fresh W2, W3, W4, W5 programs, total, fresh process",
     "ms"),
    ("W13_busy", "W13 busy", "W13 beside a process spinning on one core", "ms"),
    ("W14", "W14", "fresh 1000-step lax.scan, float32[256] state, called once", "ms"),
    ("W15", "W15", "pitfall-2 step, calls 2-21, right after a large jitted function started",
     "ms"),
]
W12 = ("W12_solve", "W12_cholesky", "W12_svd", "W12_eigh", "W12_fft")
UNIT_SCALE = {"us": 1e6, "ms": 1e3, "MB": 1e-6}
# The targets: jaxlite / JAX median ratio at most this, on the 2-core machine.
TARGETS = {"W1": 1.0, "W2": 0.5, "W3": 1.0, "W4": 1.0, "W5": 1.0, "W6_cold": 1.0,
           "W6_warm": 0.25, "W7": 1.1, "W8": 0.2, **{k: 1.1 for k in W12},
           "W13": 1.0, "W13_busy": 1.0, "W14": 0.1, "W15": 0.5}
FIRST = ("W13", "W13_busy", "W14", "W15")




def _profiled() -> set[str]:
    """The workloads (``W4``, ...) that ``bench/PROFILES.md`` has a section for: where a
    missed target's time goes and what would close it (``## W4 ...`` headings)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "PROFILES.md")
    try:
        with open(path) as f:
            return {line.split()[1] for line in f if line.startswith("## W")}
    except OSError:
        return set()


# ---- timing ---------------------------------------------------------------------------

def _samples(fn, repeats: int, warmup: int, inner: int = 1, settle=None) -> list[float]:
    """Seconds per call of ``fn`` for each of ``repeats`` samples of ``inner`` calls,
    after ``warmup`` untimed samples and then ``settle()`` (jaxlite: waiting for native
    code, see ``_settle``)."""
    for _ in range(warmup):
        for _ in range(inner):
            fn()
    if settle is not None:
        settle()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner)
    return out


def _result(samples, nbytes=None, first_call=None, check=None) -> dict:
    med = statistics.median(samples)
    r = {"median_s": med, "min_s": min(samples), "max_s": max(samples),
         "repeats": len(samples)}
    if nbytes is not None:
        r["bytes"] = nbytes
        r["gb_per_s"] = nbytes / med / 1e9
    if first_call is not None:
        r["first_call_s"] = first_call
    if check is not None:
        r["check"] = check
    return r


TIER_WAIT_S = 60.0
"""The longest the warm-up waits for a jaxlite program to switch to native code."""


class _Tier:
    """jaxlite's tiered compilation runs a program on the interpreter until it is hot and
    its native code is built in the background: after the warm-up, ``settle`` waits (at
    most ``TIER_WAIT_S``) until each of ``jitted``'s programs has switched tier, so the
    timed samples measure native code; ``tier`` is then recorded in the results (None for
    other libraries)."""

    def __init__(self, jax, jitted):
        self.jax, self.jitted, self.tier, self.wait_s = jax, jitted, None, None

    def settle(self):
        if getattr(self.jax, "__name__", "") != "jaxlite":
            return
        t0 = time.perf_counter()
        tiers = []
        for entry in list(getattr(self.jitted, "_cache", {}).values()):
            program = getattr(getattr(entry, "compiled", None), "_program", None)
            ex = getattr(program, "executable", None)
            if ex is None:
                continue
            if getattr(ex, "pays", True) is False:
                # jaxlite keeps it on the interpreter: native code would not pay
                tiers.append("interpreter (native does not pay)")
                continue
            if hasattr(ex, "wait"):
                ex.wait(TIER_WAIT_S)
            tiers.append(getattr(ex, "tier", getattr(ex, "backend", "?")))
        self.tier = ",".join(sorted(set(tiers))) or "unknown"
        self.wait_s = time.perf_counter() - t0

    def add_to(self, result: dict) -> dict:
        if self.tier is not None:
            result["tier"] = self.tier
            result["tier_wait_s"] = self.wait_s
        return result


def _first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---- inputs (the same for every library) -----------------------------------------------

def _inputs(cfg):
    import numpy as np
    n = cfg["w2_n"]
    w2 = np.linspace(-3.0, 3.0, n, dtype=np.float32)
    rows, cols = cfg["w3_shape"]
    w3 = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    return w2, w3


W4_LR = 0.1  # SGD learning rate of W4


def _w12_inputs(cfg):
    """W12's matrices and signal: a well-conditioned general matrix, a right-hand side,
    a symmetric positive-definite matrix, and a complex64 signal."""
    import numpy as np
    n = cfg["w12_n"]
    rng = np.random.default_rng(12)
    a = (rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    spd = (a @ a.T / n + np.eye(n)).astype(np.float32)
    sig = (rng.standard_normal(cfg["w12_fft"])
           + 1j * rng.standard_normal(cfg["w12_fft"])).astype(np.complex64)
    return a, b, spd, sig


def _w12_check(key, out) -> float:
    """A checksum of a W12 result that does not depend on sign or ordering conventions."""
    import numpy as np
    if key == "W12_svd":
        return float(np.sum(np.asarray(out[1])))
    if key == "W12_eigh":
        return float(np.sum(np.asarray(out[0])))
    return float(np.sum(np.abs(np.asarray(out))))


def _w4_inputs(cfg):
    """W4's parameters [(w, b), ...] (scaled normal weights, zero biases), a batch of
    standard-normal inputs and int32 class labels, seed 1."""
    import numpy as np
    rng = np.random.default_rng(1)
    sizes = cfg["w4_sizes"]
    params = [((rng.standard_normal((m, n), dtype=np.float32) / np.float32(np.sqrt(m))),
               np.zeros(n, dtype=np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((cfg["w4_batch"], sizes[0]), dtype=np.float32)
    y = rng.integers(0, sizes[-1], cfg["w4_batch"]).astype(np.int32)
    return params, x, y


def _w4_check(params_old, params_new, loss) -> float:
    """loss + squared norm of the gradient (recovered from the SGD update): a checksum that
    a wrong gradient cannot pass."""
    import numpy as np
    g2 = 0.0
    for old, new in zip(params_old, params_new):
        for a, b in zip(old, new):
            d = (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) / W4_LR
            g2 += float((d * d).sum())
    return float(loss) + g2


def _w5_inputs(cfg):
    """W5's initial state float32[H], inputs float32[T, H], weights (contractive: entries
    of scale 0.5/sqrt(H)) and bias, seed 2."""
    import numpy as np
    rng = np.random.default_rng(2)
    t, h = cfg["w5_steps"], cfg["w5_hidden"]
    scale = np.float32(0.5 / np.sqrt(h))
    xs = rng.standard_normal((t, h), dtype=np.float32)
    wx = rng.standard_normal((h, h), dtype=np.float32) * scale
    wh = rng.standard_normal((h, h), dtype=np.float32) * scale
    b = np.full(h, 0.1, dtype=np.float32)
    return np.zeros(h, dtype=np.float32), xs, wx, wh, b


def _w5_check(h, hs) -> float:
    import numpy as np
    hs = np.asarray(hs, dtype=np.float64)
    return float((hs * hs).sum() + np.asarray(h, dtype=np.float64).sum())


# ---- the programs of W2-W5, written once against a (jax, jax.numpy)-like pair -----------

def programs(jax, jnp) -> dict:
    """W2-W5's functions, not jitted: ``elementwise(x)``, ``softmax(x)``,
    ``train_step(params, x, y)`` and ``rnn(h0, xs, wx, wh, b)`` (W13 jits them afresh)."""
    def elementwise(x):
        return jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(x)

    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        return e / jnp.sum(e, axis=1, keepdims=True)

    def mlp_loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.maximum(jnp.dot(h, w) + b, 0.0)
        w, b = params[-1]
        logits = jnp.dot(h, w) + b
        logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - W4_LR * g, params, grads), loss

    def rnn(h0, xs, wx, wh, b):
        def cell(h, x_t):
            h = jnp.tanh(jnp.dot(h, wh) + jnp.dot(x_t, wx) + b)
            return h, h
        return jax.lax.scan(cell, h0, xs)

    return {"W2": elementwise, "W3": softmax, "W4": train_step, "W5": rnn}


def program_args(jax, cfg) -> dict:
    """W2-W5's arguments, placed on the default device."""
    w2_host, w3_host = _inputs(cfg)
    params, xb, yb = _w4_inputs(cfg)
    return {"W2": (jax.device_put(w2_host),), "W3": (jax.device_put(w3_host),),
            "W4": tuple(jax.device_put(a) for a in (params, xb, yb)),
            "W5": tuple(jax.device_put(a) for a in _w5_inputs(cfg))}


# ---- workers ---------------------------------------------------------------------------

def work_jax_like(jax, jnp, cfg) -> dict:
    """W1, W2, W3, W8 written once against a (jax, jax.numpy)-like pair: real JAX and
    jaxlite run exactly this code."""
    import numpy as np
    w2_host, w3_host = _inputs(cfg)
    res = {}

    # W1: jit dispatch of the chapter's section 3.3 function on 3-vectors
    @jax.jit
    def f(x, y):
        return jnp.dot(x, y) + jnp.sum(x)
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    y = jnp.array([4.0, 5.0, 6.0], dtype=jnp.float32)
    first = _first_call(lambda: f(x, y).block_until_ready())
    tier = _Tier(jax, f)
    s = _samples(lambda: f(x, y).block_until_ready(), cfg["w1_repeats"], cfg["warmup"],
                 cfg["w1_inner"], tier.settle)
    res["W1"] = tier.add_to(_result(s, first_call=first, check=float(f(x, y))))

    progs = programs(jax, jnp)

    # W2: fused elementwise chain over N float32
    elementwise = jax.jit(progs["W2"])
    xd = jax.device_put(w2_host)
    first = _first_call(lambda: elementwise(xd).block_until_ready())
    tier = _Tier(jax, elementwise)
    s = _samples(lambda: elementwise(xd).block_until_ready(), cfg["w2_repeats"],
                 cfg["warmup"], 1, tier.settle)
    out = np.asarray(elementwise(xd), dtype=np.float64)
    res["W2"] = tier.add_to(_result(s, nbytes=2 * w2_host.nbytes, first_call=first,
                                    check=float(out.sum())))

    # W3: numerically stable softmax over each row
    softmax = jax.jit(progs["W3"])
    xd = jax.device_put(w3_host)
    first = _first_call(lambda: softmax(xd).block_until_ready())
    tier = _Tier(jax, softmax)
    s = _samples(lambda: softmax(xd).block_until_ready(), cfg["w3_repeats"], cfg["warmup"],
                 1, tier.settle)
    out = np.asarray(softmax(xd), dtype=np.float64)
    res["W3"] = tier.add_to(_result(s, nbytes=2 * w3_host.nbytes, first_call=first,
                                    check=float((out * np.arange(out.shape[1])).sum())))

    # W4: one SGD training step of an MLP (ReLU hidden layers, softmax cross-entropy)
    params_host, xb_host, yb_host = _w4_inputs(cfg)
    train_step = jax.jit(progs["W4"])
    params = jax.device_put(params_host)
    xb, yb = jax.device_put(xb_host), jax.device_put(yb_host)
    first = _first_call(lambda: jax.block_until_ready(train_step(params, xb, yb)))
    tier = _Tier(jax, train_step)
    s = _samples(lambda: jax.block_until_ready(train_step(params, xb, yb)),
                 cfg["w4_repeats"], cfg["warmup"], 1, tier.settle)
    new_params, loss = train_step(params, xb, yb)
    res["W4"] = tier.add_to(_result(s, first_call=first,
                                    check=_w4_check(params_host, new_params, loss)))

    # W5: a tanh RNN over T steps with lax.scan
    h0_host, xs_host, wx_host, wh_host, b_host = _w5_inputs(cfg)
    rnn = jax.jit(progs["W5"])
    args = [jax.device_put(a) for a in (h0_host, xs_host, wx_host, wh_host, b_host)]
    first = _first_call(lambda: jax.block_until_ready(rnn(*args)))
    tier = _Tier(jax, rnn)
    s = _samples(lambda: jax.block_until_ready(rnn(*args)), cfg["w5_repeats"],
                 cfg["warmup"], 1, tier.settle)
    res["W5"] = tier.add_to(_result(s, first_call=first, check=_w5_check(*rnn(*args))))

    # W8: one eager (unjitted) op on a 3-vector
    x = jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)
    first = _first_call(lambda: (x + 1).block_until_ready())
    s = _samples(lambda: (x + 1).block_until_ready(), cfg["w8_repeats"], cfg["warmup"],
                 cfg["w8_inner"])
    res["W8"] = _result(s, first_call=first, check=float(np.asarray(x + 1).sum()))

    # W12: LAPACK-backed factorisations and the FFT, each jitted
    a, b, spd, sig = (jax.device_put(v) for v in _w12_inputs(cfg))
    fns = {"W12_solve": (jax.jit(jnp.linalg.solve), (a, b)),
           "W12_cholesky": (jax.jit(jnp.linalg.cholesky), (spd,)),
           "W12_svd": (jax.jit(jnp.linalg.svd), (a,)),
           "W12_eigh": (jax.jit(jnp.linalg.eigh), (spd,)),
           "W12_fft": (jax.jit(jnp.fft.fft), (sig,))}
    for key, (fn, args) in fns.items():
        first = _first_call(lambda: jax.block_until_ready(fn(*args)))
        # (jaxlite: timed once its native code is in, as W1-W5; a build in flight would
        # share the two cores with LAPACK's threads)
        tier = _Tier(jax, fn)
        s = _samples(lambda: jax.block_until_ready(fn(*args)), cfg["w12_repeats"],
                     cfg["warmup"], 1, tier.settle)
        res[key] = tier.add_to(_result(s, first_call=first, check=_w12_check(key, fn(*args))))
    return res


def work_numpy(cfg) -> dict:
    """The same workloads in plain NumPy (no jit, no fusion), plus the copy bandwidth."""
    import numpy as np
    w2_host, w3_host = _inputs(cfg)
    res = {}

    def f(x, y):
        return np.dot(x, y) + np.sum(x)
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    y = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    s = _samples(lambda: f(x, y), cfg["w1_repeats"], cfg["warmup"], cfg["w1_inner"])
    res["W1"] = _result(s, check=float(f(x, y)))

    def elementwise(x):
        return np.tanh(x) * 0.5 + np.exp(-x * x) * np.sin(x)
    s = _samples(lambda: elementwise(w2_host), cfg["w2_repeats"], cfg["warmup"])
    res["W2"] = _result(s, nbytes=2 * w2_host.nbytes,
                        check=float(elementwise(w2_host).astype(np.float64).sum()))

    def softmax(x):
        e = np.exp(x - np.max(x, axis=1, keepdims=True))
        return e / np.sum(e, axis=1, keepdims=True)
    s = _samples(lambda: softmax(w3_host), cfg["w3_repeats"], cfg["warmup"])
    out = softmax(w3_host).astype(np.float64)
    res["W3"] = _result(s, nbytes=2 * w3_host.nbytes,
                        check=float((out * np.arange(out.shape[1])).sum()))

    # W4: the same training step with the gradient written out by hand
    params, xb, yb = _w4_inputs(cfg)

    def train_step(params, x, y):
        acts, h = [x], x
        for w, b in params[:-1]:
            h = np.maximum(h @ w + b, np.float32(0))
            acts.append(h)
        w, b = params[-1]
        logits = h @ w + b
        m = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - m)
        s = e.sum(axis=1, keepdims=True)
        rows = np.arange(x.shape[0])
        loss = -np.mean((logits - m - np.log(s))[rows, y])
        d = e / s
        d[rows, y] -= 1
        d /= np.float32(x.shape[0])
        new = [None] * len(params)
        for i in range(len(params) - 1, -1, -1):
            w, b = params[i]
            a = acts[i]
            gw, gb = a.T @ d, d.sum(axis=0)
            if i:
                d = (d @ w.T) * (a > 0)
            new[i] = (w - np.float32(W4_LR) * gw, b - np.float32(W4_LR) * gb)
        return new, loss

    s = _samples(lambda: train_step(params, xb, yb), cfg["w4_repeats"], cfg["warmup"])
    res["W4"] = _result(s, check=_w4_check(params, *train_step(params, xb, yb)))

    # W5: the RNN as a Python loop
    h0, xs, wx, wh, b = _w5_inputs(cfg)

    def rnn(h, xs, wx, wh, b):
        hs = np.empty_like(xs)
        for t in range(xs.shape[0]):
            h = np.tanh(h @ wh + xs[t] @ wx + b)
            hs[t] = h
        return h, hs

    s = _samples(lambda: rnn(h0, xs, wx, wh, b), cfg["w5_repeats"], cfg["warmup"])
    res["W5"] = _result(s, check=_w5_check(*rnn(h0, xs, wx, wh, b)))

    s = _samples(lambda: x + 1, cfg["w8_repeats"], cfg["warmup"], cfg["w8_inner"])
    res["W8"] = _result(s, check=float((x + 1).sum()))

    a, b, spd, sig = _w12_inputs(cfg)
    fns = {"W12_solve": (np.linalg.solve, (a, b)),
           "W12_cholesky": (np.linalg.cholesky, (spd,)),
           "W12_svd": (np.linalg.svd, (a,)), "W12_eigh": (np.linalg.eigh, (spd,)),
           "W12_fft": (np.fft.fft, (sig,))}
    for key, (fn, args) in fns.items():
        s = _samples(lambda: fn(*args), cfg["w12_repeats"], cfg["warmup"])
        res[key] = _result(s, check=_w12_check(key, fn(*args)))

    # machine copy bandwidth: one large float32 copy, read + write bytes counted
    src = np.ones(cfg["copy_n"], dtype=np.float32)
    dst = np.empty_like(src)
    s = _samples(lambda: np.copyto(dst, src), cfg["copy_repeats"], cfg["warmup"])
    res["copy"] = _result(s, nbytes=2 * src.nbytes)
    return res


# ---- W6 and W7: one fresh process per sample (bench/_workloads_fresh.py) --------------

def _fresh(which: str, lib: str, quick: bool, cache_dir: str | None = None,
           env_extra: dict | None = None) -> dict:
    """Runs one W6/W7 sample for ``lib`` in a new interpreter (with ``env_extra`` in its
    environment); its JSON, or {"error"}."""
    cmd = [sys.executable, str(HERE / "_workloads_fresh.py"), which, lib]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("BENCH_CACHE_DIR", None)
    if cache_dir is not None:
        env["BENCH_CACHE_DIR"] = cache_dir
    env.update(env_extra or {})
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"{which} {lib}: timed out"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"{which} {lib}: exit status {p.returncode}: {tail[0]}"}
    return json.loads(lines[-1])


def _w6_result(samples: list[dict], **extra) -> dict:
    bad = [r["error"] for r in samples if "error" in r]
    if bad:
        return {"error": bad[0]}
    r = _result([r["first_result_s"] for r in samples], check=samples[0]["check"])
    r["import_s"] = statistics.median(r_["import_s"] for r_ in samples)
    r.update(extra)
    return r


def _files_under(path: str) -> int:
    return sum(len(files) for _, _, files in os.walk(path))


def work_fresh(lib: str, cfg: dict) -> dict:
    """W6 (cold, then warm persistent cache) and W7, each sample in a fresh process."""
    import tempfile
    quick = cfg is QUICK
    n6 = cfg["w6_processes"]
    res = {}
    with tempfile.TemporaryDirectory(prefix="bench-w6-") as tmp:
        cold, dirs = [], []
        for i in range(n6):
            d = os.path.join(tmp, f"cold{i}")
            os.mkdir(d)
            cold.append(_fresh("W6", lib, quick, d))
            dirs.append(d)
        entries = _files_under(dirs[0])
        res["W6_cold"] = _w6_result(cold, cache_files=entries)
        filled = None
        if lib == "jaxlite" and entries == 0:
            # a process that calls f40 once leaves nothing to cache (its native build
            # starts only when the program is hot): one more process, for which f40 is hot
            # at its first call, builds its native code and exits once the build is
            # written; the warm processes find it (their first call still runs on the
            # interpreter: Numba's set-up is not worth one call)
            fill = _fresh("W6", lib, quick, dirs[0], {"JAXLITE_TIER_UP_CALLS": "1",
                                                      "BENCH_FILL": "1"})
            if "error" in fill:
                res["W6_warm"] = {"error": fill["error"]}
            entries = _files_under(dirs[0])
            filled = "a process with JAXLITE_TIER_UP_CALLS=1"
        if lib == "numpy":
            # nothing is compiled: the warm row repeats the cold measurement, for reference
            res["W6_warm"] = dict(res["W6_cold"], note_reference="no compilation")
        elif "W6_warm" in res:
            pass
        elif entries == 0:
            res["W6_warm"] = {"note": "n/a (no persistent cache yet)" if lib == "jaxlite"
                              else "n/a (the cold run wrote no cache entry)"}
        else:
            warm = [_fresh("W6", lib, quick, dirs[0]) for _ in range(n6)]
            res["W6_warm"] = _w6_result(warm, cache_files=_files_under(dirs[0]))
            if filled:
                res["W6_warm"]["filled_by"] = filled

    runs = [_fresh("W7", lib, quick) for _ in range(cfg["w7_processes"])]
    bad = [r["error"] for r in runs if "error" in r]
    if bad:
        res["W7"] = {"error": bad[0]}
    else:
        runs.sort(key=lambda r: r["peak_bytes"])
        med = runs[len(runs) // 2]
        res["W7"] = dict(med, median_peak_bytes=med["peak_bytes"],
                         min_peak_bytes=runs[0]["peak_bytes"],
                         max_peak_bytes=runs[-1]["peak_bytes"], repeats=len(runs))
    return res


def _first(which: str, lib: str, quick: bool, busy: bool = False) -> dict:
    """One W13-W15 sample of ``lib`` in a new interpreter with an empty persistent-cache
    directory (bench/_workloads_first.py); ``busy``: beside a process spinning on one
    core.  Its JSON, or {"error"}."""
    import tempfile
    cmd = [sys.executable, str(HERE / "_workloads_first.py"), which, lib]
    if quick:
        cmd.append("--quick")
    spin = None
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
        env = dict(os.environ, JAX_PLATFORMS="cpu", BENCH_CACHE_DIR=tmp)
        if busy:
            spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"{which} {lib}: timed out"}
        finally:
            if spin is not None:
                spin.kill()
                spin.wait()
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"{which} {lib}: exit status {p.returncode}: {tail[0]}"}
    return json.loads(lines[-1])


def work_first(lib: str, cfg: dict) -> dict:
    """W13-W15, each sample a fresh process (``first_processes`` of them)."""
    quick = cfg is QUICK
    res = {}
    for key, which, busy in (("W13", "W13", False), ("W13_busy", "W13", True),
                             ("W14", "W14", False), ("W15", "W15", False)):
        runs = [_first(which, lib, quick, busy) for _ in range(cfg["first_processes"])]
        bad = [r["error"] for r in runs if "error" in r]
        if bad:
            res[key] = {"error": bad[0]}
            continue
        r = _result([r["seconds"] for r in runs], check=runs[0].get("check"))
        if "parts" in runs[0]:
            r["parts_s"] = {k: statistics.median(x["parts"][k] for x in runs)
                            for k in runs[0]["parts"]}
        res[key] = r
    return res


def worker(lib: str, cfg: dict) -> dict:
    """Runs every workload for ``lib``; returns ``{"lib", "version", "results"}``."""
    if lib == "numpy":
        import numpy as np
        return {"lib": lib, "version": np.__version__,
                "results": {**work_numpy(cfg), **work_fresh(lib, cfg)}}
    if lib == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        import jaxlib
        version = f"{jax.__version__} (jaxlib {jaxlib.__version__})"
        return {"lib": lib, "version": version,
                "results": {**work_jax_like(jax, jnp, cfg), **work_fresh(lib, cfg),
                            **work_first(lib, cfg)}}
    if lib == "jaxlite":
        sys.path.insert(0, str(ROOT / "src"))
        import jaxlite
        import jaxlite.numpy as jnp
        version = jaxlite.__version__ + _git_commit()
        return {"lib": lib, "version": version,
                "results": {**work_jax_like(jaxlite, jnp, cfg), **work_fresh(lib, cfg),
                            **work_first(lib, cfg)}}
    raise ValueError(f"unknown library {lib!r}; choose from {LIBS}")


# ---- the driver ------------------------------------------------------------------------

def _git_commit() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f" (git {rev}{', with local changes' if dirty else ''})" if rev else ""


def machine() -> dict:
    """CPU model, core counts, memory, OS and Python of this machine."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    mem = 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {"cpu": model, "logical_cores": os.cpu_count(), "usable_cores": usable,
            "memory_gb": mem / 1e9, "os": platform.platform(),
            "python": platform.python_version()}


def run_worker(lib: str, quick: bool, timeout: float) -> dict:
    """Runs one library's worker in a fresh interpreter; returns its JSON or an error."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", lib]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"lib": lib, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"lib": lib, "error": f"exit status {p.returncode}: {tail[0]}"}
    return json.loads(lines[-1])


def _fmt(x: float, digits: int = 3) -> str:
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def _check_agrees(a, b) -> bool:
    return abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b))


def _value(r: dict):
    """The reported value of one result: median seconds, or median peak bytes (W7)."""
    if "median_s" in r:
        return r["median_s"]
    return r.get("median_peak_bytes")


def _cell(r, scale: float) -> str:
    if r is None:
        return "n/a"
    if "note" in r:
        return r["note"]
    if "error" in r:
        return "failed"
    return _fmt(_value(r) * scale)


def _sizes(cfg: dict) -> dict:
    rows, cols = cfg["w3_shape"]
    r6, c6 = W6_SHAPE["quick" if cfg is QUICK else "full"]
    n7 = W7_N["quick" if cfg is QUICK else "full"]
    layers = "-".join(str(n) for n in cfg["w4_sizes"])
    return {"W2": f"N = {cfg['w2_n']:,}", "W3": f"R x C = {rows} x {cols}",
            "W4": f"{layers}, batch {cfg['w4_batch']}",
            "W5": f"{cfg['w5_steps']} steps, hidden {cfg['w5_hidden']}",
            "W6_cold": f"float32[{r6}, {c6}]", "W6_warm": f"float32[{r6}, {c6}]",
            "W7": f"N = {n7:,}, {4 * n7 / 1e6:.0f} MB in",
            "W13": "W2-W5 sizes above", "W15": "float32[1000], after float32[1024, 1024]",
            **{k: f"n = {cfg['w12_n']}" for k in W12[:4]},
            "W12_fft": f"N = {cfg['w12_fft']:,}"}


def report(runs: dict, mach: dict, cfg: dict, quick: bool, when: str) -> str:
    """The results as Markdown (also printed to the terminal)."""
    libs = [lib for lib in LIBS if lib in runs]
    ok = {lib: "results" in runs[lib] for lib in libs}
    res = {lib: runs[lib].get("results", {}) for lib in libs}
    out = ["# jaxlite benchmark results", ""]
    out.append(f"Generated by `python bench/run.py{' --quick' if quick else ''}` on {when}. "
               f"Workload definitions: `bench/README.md`.")
    if quick:
        out.append("")
        out.append("**QUICK smoke run: small sizes and few repeats; these numbers are not "
                   "comparable with a full run.**")
    out += ["", "## Machine", ""]
    out.append(f"- CPU: {mach['cpu']}; {mach['logical_cores']} logical cores, "
               f"{mach['usable_cores']} usable by this process")
    out.append(f"- Memory: {mach['memory_gb']:.1f} GB; OS: {mach['os']}")
    out.append(f"- Python {mach['python']}; " + "; ".join(
        f"{LIB_LABEL[lib]} {runs[lib].get('version', '?')}" for lib in libs))
    copy = res.get("numpy", {}).get("copy")
    if copy:
        out.append(f"- Copy bandwidth (NumPy copy of {copy['bytes'] // 2 / 1e6:.0f} MB, "
                   f"read + write counted): **{copy['gb_per_s']:.2f} GB/s**")
    for lib in libs:
        if not ok[lib]:
            out.append(f"- {LIB_LABEL[lib]}: NOT MEASURED ({runs[lib]['error']})")

    sizes = _sizes(cfg)
    out += ["", "## Results (median)", ""]
    head = "| workload | unit | " + " | ".join(LIB_LABEL[lib] for lib in libs)
    ratio_libs = [lib for lib in libs if lib != "jaxlite"] if "jaxlite" in libs else []
    head += "".join(f" | jaxlite / {LIB_LABEL[lib]}" for lib in ratio_libs) + " | agree |"
    out.append(head)
    out.append("|" + "---|" * (head.count("|") - 1))
    failures = []
    for key, label, title, unit in WORKLOADS:
        scale = UNIT_SCALE[unit]
        cells, checks, vals = [], [], {}
        for lib in libs:
            r = res[lib].get(key)
            cells.append(_cell(r, scale))
            if r is None or "note" in r:
                continue
            if "error" in r:
                failures.append(f"{label} {LIB_LABEL[lib]}: {r['error']}")
                continue
            vals[lib] = _value(r)
            if "check" in r:
                checks.append(r["check"])
        ratios = [f"{vals['jaxlite'] / vals[lib]:.2f}x"
                  if "jaxlite" in vals and lib in vals and vals[lib] else "n/a"
                  for lib in ratio_libs]
        agree = "yes" if all(_check_agrees(checks[0], c) for c in checks[1:]) else "NO"
        name = f"{label} {title}" + (f" ({sizes[key]})" if key in sizes else "")
        out.append(f"| {name} | {unit} | " + " | ".join(cells) +
                   "".join(f" | {r}" for r in ratios) + f" | {agree} |")
    out.append("")
    out.append("Times are per call (W6: one first call per fresh process); W7 is megabytes "
               "(10^6 bytes).  Ratios above 1 mean jaxlite is slower (W7: uses more "
               "memory).  \"agree\": every library computed the same checksum of its "
               "result (relative tolerance 1e-3).  NumPy compiles nothing: its W6 warm "
               "row repeats its cold measurement.")
    for f in failures:
        out.append(f"- FAILED {f}")

    if "jaxlite" in libs and "jax" in libs:
        out += ["", "## Targets (jaxlite / JAX median ratio, from the issue)", ""]
        out.append("| workload | target | measured | met |")
        out.append("|---|---|---|---|")
        profiled = _profiled()
        for key, label, _, _ in WORKLOADS:
            a, b = res["jaxlite"].get(key), res["jax"].get(key)
            if a is None or b is None or "note" in a or "error" in a or "note" in b \
                    or "error" in b or not _value(b):
                measured, met = "n/a", "not measured"
            else:
                ratio = _value(a) / _value(b)
                measured, met = f"{ratio:.2f}x", "yes" if ratio <= TARGETS[key] else "NO"
                if met == "NO" and key.split("_")[0] in profiled:
                    met += f" (profile: PROFILES.md, {key.split('_')[0]})"
            out.append(f"| {label} | <= {TARGETS[key]} | {measured} | {met} |")

    out += ["", "## Effective bandwidth (input read + output written, per call)", ""]
    head = "| workload | " + " | ".join(f"{LIB_LABEL[lib]} GB/s" for lib in libs)
    if copy:
        head += " | " + " | ".join(f"{LIB_LABEL[lib]} % of copy" for lib in libs)
    head += " |"
    out.append(head)
    out.append("|" + "---|" * (head.count("|") - 1))
    for name in ("W2", "W3"):
        gbs = [res[lib].get(name, {}).get("gb_per_s") for lib in libs]
        line = f"| {name} | " + " | ".join("n/a" if g is None else f"{g:.2f}" for g in gbs)
        if copy:
            line += " | " + " | ".join(
                "n/a" if g is None else f"{100 * g / copy['gb_per_s']:.0f}%" for g in gbs)
        out.append(line + " |")

    tiers = [(k, res["jaxlite"][k]) for k in ("W1", "W2", "W3", "W4", "W5") + W12
             if "jaxlite" in res and "tier" in res["jaxlite"].get(k, {})]
    if tiers:
        out += ["", "jaxlite's timed samples ran on (tier after the warm-up, which waited at "
                    f"most {TIER_WAIT_S:.0f} s for native code): " + ", ".join(
                        f"{k} {r['tier']} (waited {_fmt(r['tier_wait_s'] * 1e3)} ms)"
                        for k, r in tiers) + "."]

    w6w7 = [lib for lib in libs if any(k in res[lib] for k in ("W6_cold", "W7"))]
    if w6w7:
        out += ["", "## W6 and W7 details", ""]
        for lib in w6w7:
            parts = []
            c, w = res[lib].get("W6_cold", {}), res[lib].get("W6_warm", {})
            if "import_s" in c:
                s = f"W6: import {_fmt(c['import_s'] * 1e3)} ms before the timed call"
                if lib != "numpy":
                    s += f"; {c.get('cache_files', 0)} cache file(s) written by a cold process"
                parts.append(s)
                if "import_s" in w and "note_reference" not in w:
                    s = f"warm processes found {w.get('cache_files', 0)}"
                    if w.get("filled_by"):
                        s += f" (written by {w['filled_by']})"
                    parts.append(s)
            m = res[lib].get("W7", {})
            if "peak_bytes" in m:
                s = (f"W7 ({m['method']}): input {m['input_bytes'] / 1e6:.0f} MB + "
                     f"{m['added_bytes'] / 1e6:.0f} MB added by the call")
                if "rss_added_bytes" in m:
                    s += f" (process RSS grew {m['rss_added_bytes'] / 1e6:.0f} MB)"
                parts.append(s)
            if parts:
                out.append(f"- {LIB_LABEL[lib]}: " + "; ".join(parts) + ".")

    firsts = [lib for lib in libs if any(k in res[lib] for k in FIRST)]
    if firsts:
        out += ["", "## W13-W15 details (fresh processes, empty persistent cache)", ""]
        for lib in firsts:
            parts = []
            w13 = res[lib].get("W13", {})
            if "parts_s" in w13:
                parts.append("W13 per program: " + ", ".join(
                    f"{k} {_fmt(v * 1e3)} ms" for k, v in w13["parts_s"].items()))
            for key in FIRST:
                r = res[lib].get(key, {})
                if "max_s" in r:
                    parts.append(f"{key} slowest of {r['repeats']} runs "
                                 f"{_fmt(r['max_s'] * 1e3)} ms")
            out.append(f"- {LIB_LABEL[lib]}: " + "; ".join(parts) + ".")
        a, b = res.get("jaxlite", {}).get("W15", {}), res.get("jax", {}).get("W15", {})
        if "max_s" in a and "median_s" in b:
            out.append(f"- W15 in every run (the goal): jaxlite's slowest run / JAX's median "
                       f"= {a['max_s'] / b['median_s']:.2f}x.")

    jitted = [lib for lib in libs if lib != "numpy"]
    if jitted:
        out += ["", "## First call (trace + compile + run), for reference", ""]
        head = "| workload | " + " | ".join(f"{LIB_LABEL[lib]} ms" for lib in jitted) + " |"
        out.append(head)
        out.append("|" + "---|" * (head.count("|") - 1))
        for key, label, _, _ in WORKLOADS:
            vals = [res[lib].get(key, {}).get("first_call_s") for lib in jitted]
            if all(v is None for v in vals):
                continue
            out.append(f"| {label} | " + " | ".join(
                "n/a" if v is None else _fmt(v * 1e3) for v in vals) + " |")
    out += ["", f"Repeats: W1 {cfg['w1_repeats']} x {cfg['w1_inner']} calls, W2 "
                f"{cfg['w2_repeats']}, W3 {cfg['w3_repeats']}, W4 {cfg['w4_repeats']}, W5 "
                f"{cfg['w5_repeats']}, W8 {cfg['w8_repeats']} x {cfg['w8_inner']} calls, "
                f"after {cfg['warmup']} warm-up sample(s); W6 {cfg['w6_processes']} fresh "
                f"process(es) per cache state, W7 {cfg['w7_processes']}. Each library ran "
                f"in its own process, one after another.", ""]
    return "\n".join(out)


KEPT_SECTIONS = ("## Several devices", "## Accelerator")
"""Sections of RESULTS.md that other scripts write (bench/_workloads_multi.py,
bench/_workloads_tpu.py on an accelerator machine): a run of this suite keeps them."""


def _kept_sections(path: Path) -> str:
    """The sections of ``path`` named in ``KEPT_SECTIONS``, each with a blank line
    before it ("" when there is none or no file)."""
    try:
        old = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    kept = []
    for part in ("\n" + old).split("\n## ")[1:]:
        section = "## " + part
        if section.startswith(KEPT_SECTIONS):
            kept.append("\n" + section.rstrip("\n") + "\n")
    return "".join(kept)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: small sizes, few repeats; writes no file unless --out")
    ap.add_argument("--no-write", action="store_true", help="print the results only")
    ap.add_argument("--out", metavar="PATH",
                    help="where to write the Markdown (default bench/RESULTS.md for a full "
                         "run)")
    ap.add_argument("--libs", default=",".join(LIBS),
                    help=f"comma-separated subset of {','.join(LIBS)}")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds allowed per library (default 60 quick, 900 full)")
    ap.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL

    if args.worker:
        print(json.dumps(worker(args.worker, cfg)))
        return 0

    libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    bad = [lib for lib in libs if lib not in LIBS]
    if bad:
        ap.error(f"unknown --libs {bad}; choose from {LIBS}")
    timeout = args.timeout or (60.0 if args.quick else 900.0)
    runs = {}
    for lib in libs:
        print(f"measuring {LIB_LABEL[lib]} ...", file=sys.stderr, flush=True)
        runs[lib] = run_worker(lib, args.quick, timeout)
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = report(runs, machine(), cfg, args.quick, when)
    print(text)
    out = args.out or (None if args.quick else str(HERE / "RESULTS.md"))
    if out and not args.no_write:
        Path(out).write_text(text + _kept_sections(Path(out)), encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    failed = [lib for lib in libs if "error" in runs[lib]]
    # a library that is not installed is reported, not an error of the benchmark
    return 1 if any("No module named" not in runs[lib]["error"] for lib in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
