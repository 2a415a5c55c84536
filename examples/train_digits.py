"""Train a small MLP on the handwritten digits: grad + jit end to end

A complete training program written only with the JAX API (``import jaxlite as jax``,
``import jaxlite.numpy as jnp``): parameters are a pytree (a dict of arrays) initialised
with ``jax.random``; ONE jitted training step computes the loss and its gradient with
``jax.value_and_grad`` and applies SGD with momentum through ``jax.tree_util.tree_map``.
The step compiles once (every batch has the same shape and dtype) and is then reused:
the program counts the compiles and prints the median time per step.

Data: the UCI handwritten digits bundled with jaxlite (1797 8x8 images, 10 classes; see
``jaxlite/data/README.md``), split into train and held-out test sets with a fixed seed.
Bring your own with ``--data mine.npz`` (arrays ``x`` of shape (n, d) or (n, h, w) and
integer labels ``y`` of shape (n,)).

Run it: ``python examples/train_digits.py [--epochs N] [--seed S] [--data PATH]``;
``--backend jax`` runs the very same code on real JAX (if installed) as a reference.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.data import load_digits, load_npz

HIDDEN = 128
BATCH = 32
TEST_FRACTION = 0.2
LEARNING_RATE = 0.05
MOMENTUM = 0.9


# ---- the model: a 2-layer MLP, d -> HIDDEN (tanh) -> classes ----------------------------

def init_params(key, n_in, n_hidden, n_out):
    """A dict pytree of float32 weights (scaled normal init) and zero biases."""
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (n_in, n_hidden), jnp.float32) * n_in ** -0.5,
        "b1": jnp.zeros((n_hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (n_hidden, n_out), jnp.float32) * n_hidden ** -0.5,
        "b2": jnp.zeros((n_out,), jnp.float32),
    }


def forward(params, x):
    """Logits, float32[batch, classes], for inputs float32[batch, d]."""
    h = jnp.tanh(jnp.dot(x, params["w1"]) + params["b1"])
    return jnp.dot(h, params["w2"]) + params["b2"]


def loss_fn(params, x, y):
    """Mean softmax cross-entropy of the integer labels ``y`` (int32[batch])."""
    logits = forward(params, x)
    log_probs = jax.nn.log_softmax(logits)
    one_hot = jax.nn.one_hot(y, logits.shape[-1], dtype=log_probs.dtype)
    return -jnp.mean(jnp.sum(one_hot * log_probs, axis=-1))


def make_train_step(lr, momentum):
    """The one jitted step: (params, velocity, x, y) -> (params, velocity, loss)."""
    def train_step(params, velocity, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        velocity = jax.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
        return params, velocity, loss
    return jax.jit(train_step)


def make_accuracy():
    def accuracy(params, x, y):
        return jnp.mean(jnp.argmax(forward(params, x), axis=-1) == y)
    return jax.jit(accuracy)


# ---- data and reporting ----------------------------------------------------------------

def load_data(path, seed):
    """(x_train, y_train, x_test, y_test) as NumPy float32/int32, pixels scaled to [0, 1]
    by the training set's maximum; a stratification-free split with a fixed seed."""
    x, y = load_digits() if path is None else load_npz(path)
    x = x.astype(np.float32)
    perm = np.random.default_rng(seed).permutation(len(x))
    n_test = max(1, int(round(len(x) * TEST_FRACTION)))
    test, train = perm[:n_test], perm[n_test:]
    scale = float(np.abs(x[train]).max()) or 1.0
    return x[train] / scale, y[train], x[test] / scale, y[test]


def progress_line(epoch, epochs, done, total, loss, width=24):
    filled = int(width * done / total)
    bar = "#" * filled + "." * (width - filled)
    return f"epoch {epoch:>3}/{epochs} [{bar}] {done:>3}/{total} loss {loss:.4f}"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    p.add_argument("--seed", type=int, default=0, help="seed of the split, init, shuffling")
    p.add_argument("--data", metavar="PATH", help="your own .npz with arrays x and y "
                                                 "(default: the bundled digits)")
    p.add_argument("--backend", choices=("jaxlite", "jax"), default="jaxlite",
                   help="run on jaxlite (default) or on real JAX, as a reference")
    p.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error(f"--epochs must be >= 1, got {args.epochs}")
    return args


def use_backend(name):
    """Rebinds this module's ``jax``/``jnp`` (the only names the code above uses)."""
    global jax, jnp
    if name == "jax":
        import jax as real_jax
        import jax.numpy as real_jnp
        jax, jnp = real_jax, real_jnp
    else:
        import jaxlite
        import jaxlite.numpy
        jax, jnp = jaxlite, jaxlite.numpy


def main(argv=None):
    """Trains; prints progress and results; returns a dict of the results (for tests)."""
    args = parse_args(argv)
    use_backend(args.backend)
    x_train, y_train, x_test, y_test = load_data(args.data, args.seed)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    if len(x_train) < BATCH:
        raise SystemExit(f"train_digits: need at least {BATCH} training rows, got "
                         f"{len(x_train)}")
    steps_per_epoch = len(x_train) // BATCH  # drop the ragged last batch: one shape, one compile
    print(f"{args.backend}: {len(x_train)} training / {len(x_test)} test examples, "
          f"{x_train.shape[1]} features, {n_classes} classes; MLP {x_train.shape[1]}-{HIDDEN}-"
          f"{n_classes}, batch {BATCH}, {steps_per_epoch} steps per epoch")

    key = jax.random.PRNGKey(args.seed)
    params = init_params(key, x_train.shape[1], HIDDEN, n_classes)
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    train_step = make_train_step(LEARNING_RATE, MOMENTUM)
    accuracy = make_accuracy()
    x_test_dev, y_test_dev = jax.device_put(x_test), jax.device_put(y_test)

    compiles = []
    listener = None
    if args.backend == "jaxlite":
        from jaxlite import monitoring

        def on_compile(kind, data):
            if kind == "compile" and data.get("fun") == "train_step":
                compiles.append(data)
        listener = on_compile
        monitoring.register_listener(listener)

    rng = np.random.default_rng(args.seed + 1)
    tty = sys.stdout.isatty() and not args.quiet
    step_seconds = []
    try:
        for epoch in range(1, args.epochs + 1):
            order = rng.permutation(len(x_train))
            losses = []
            for i in range(steps_per_epoch):
                idx = order[i * BATCH:(i + 1) * BATCH]
                xb, yb = jax.device_put(x_train[idx]), jax.device_put(y_train[idx])
                t0 = time.perf_counter()
                params, velocity, loss = train_step(params, velocity, xb, yb)
                loss = float(loss)  # waits for the step: the time below is the whole step
                step_seconds.append(time.perf_counter() - t0)
                losses.append(loss)
                if tty:
                    print("\r" + progress_line(epoch, args.epochs, i + 1, steps_per_epoch,
                                               float(np.mean(losses))), end="", flush=True)
            acc = float(accuracy(params, x_test_dev, y_test_dev))
            line = progress_line(epoch, args.epochs, steps_per_epoch, steps_per_epoch,
                                 float(np.mean(losses))) + f", test accuracy {acc:.1%}"
            if tty:
                print("\r" + line, flush=True)
            elif not args.quiet:
                print(line, flush=True)
    finally:
        if listener is not None:
            monitoring.unregister_listener(listener)

    # the first step includes tracing and compiling; the median is of the steady state
    steady = step_seconds[1:] or step_seconds
    median_us = float(np.median(steady)) * 1e6
    cache_size = train_step._cache_size()
    n_compiles = len(compiles) if args.backend == "jaxlite" else cache_size
    print(f"train_step compiled {n_compiles} time(s) for {len(step_seconds)} steps "
          f"(cache size {cache_size}); first step {step_seconds[0] * 1e3:.1f} ms "
          f"(trace + compile), median {median_us:.0f} us/step")
    print(f"final held-out test accuracy: {acc:.2%} ({len(x_test)} examples)")
    return {"test_accuracy": acc, "median_us_per_step": median_us, "compiles": n_compiles,
            "cache_size": cache_size, "steps": len(step_seconds),
            "final_loss": float(np.mean(losses))}


if __name__ == "__main__":
    main()
