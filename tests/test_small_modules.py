"""The small modules tutorials use, against real JAX: jaxlite.flatten_util.ravel_pytree,
jaxlite.nn.dot_product_attention, jaxlite.example_libraries (optimizers, stax) and
jaxlite.image; values, dtypes, weak types, grad, vmap, jit and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from _both import compare, run_both


def run_both_staged(case, rjax, **tol):
    """``run_both``, with real JAX's side under one jit: its eager ops each compile on first
    use (seconds on a busy 2-core machine); jaxlite's side runs as written."""
    import jax.numpy as rjnp
    got = case(jaxlite, jnp)
    want = rjax.jit(lambda: case(rjax, rjnp))()
    compare(got, want, rjax, **tol)


# ---- flatten_util.ravel_pytree ------------------------------------------------------------

def _ravel(m, n, tree):
    if m is jaxlite:
        from jaxlite.flatten_util import ravel_pytree
    else:
        from jax.flatten_util import ravel_pytree
    return ravel_pytree(tree(n))


RAVEL_TREES = [
    lambda n: {"a": 1.0, "b": n.ones(2, "int32")},            # weak float + int: float32
    lambda n: (1.0,),                                          # one weak leaf stays weak
    lambda n: (1, 2.0),                                        # Python int + float
    lambda n: (),                                              # empty: float32 [0]
    lambda n: {"a": np.ones(2), "b": True},                    # float64 canonicalised
    lambda n: (n.ones(2, "bfloat16"), n.ones(1, "float16")),   # -> float32
    lambda n: (n.ones(2, "uint8"), n.int8(3)),                 # -> int16
    lambda n: (1 + 2j, n.float32(2)),                          # -> complex64
    lambda n: (n.arange(4.0).reshape(2, 2), None, [n.zeros(())]),
]


@pytest.mark.parametrize("i", range(len(RAVEL_TREES)))
def test_ravel_pytree_dtypes_and_roundtrip(i, rjax):
    def case(m, n):
        flat, unravel = _ravel(m, n, RAVEL_TREES[i])
        return flat, unravel(flat)
    run_both(case, rjax)


def test_ravel_pytree_unravel_errors_and_hash(rjax):
    import jax.numpy as rjnp
    from jax.flatten_util import ravel_pytree as r_ravel
    from jaxlite.flatten_util import ravel_pytree
    for m, n, rav in [(rjax, rjnp, r_ravel), (jaxlite, jnp, ravel_pytree)]:
        _, unravel = rav((n.ones(2, "int32"), 1.5))
        with pytest.raises(TypeError, match="float16"):
            unravel(n.ones(3, "float16"))
        with pytest.raises(ValueError):
            unravel(n.ones(4))
        _, unravel = rav((n.ones(2),))
        with pytest.raises(ValueError):
            unravel(n.ones(4))
        # one dtype: no dtype check, the leaves take the flat array's dtype
        assert unravel(n.ones(2, "int32"))[0].dtype == np.int32
        assert hash(unravel) == hash(rav((n.ones(2),))[1])
        assert unravel == rav((n.zeros(2),))[1]
        assert unravel != rav((n.zeros(3),))[1]


def test_ravel_pytree_under_grad_vmap_jit(rjax):
    def case(m, n):
        params = {"w": n.arange(6.0).reshape(2, 3), "b": n.ones(3, "bfloat16")}
        flat, unravel = _ravel(m, n, lambda _: params)

        def loss(v):
            p = unravel(v)
            return n.sum(p["w"] ** 2) + n.sum(p["b"].astype("float32") * 3)
        g = m.grad(loss)(flat)
        batched = m.vmap(unravel)(n.stack([flat, flat * 2]))
        jitted = m.jit(lambda t: _ravel(m, n, lambda _: t)[0])(params)
        return g, batched, jitted
    run_both(case, rjax)


# ---- example_libraries.optimizers ------------------------------------------------------------

def _libs(m):
    if m is jaxlite:
        from jaxlite.example_libraries import optimizers, stax
    else:
        from jax.example_libraries import optimizers, stax
    return optimizers, stax


OPTIMIZERS = {
    "sgd": lambda O: O.sgd(0.1),
    "momentum": lambda O: O.momentum(0.1, 0.9),
    "nesterov": lambda O: O.nesterov(O.exponential_decay(0.1, 2, 0.5), 0.9),
    "adagrad": lambda O: O.adagrad(0.1),
    "rmsprop": lambda O: O.rmsprop(O.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
    "rmsprop_momentum": lambda O: O.rmsprop_momentum(0.01),
    "adam": lambda O: O.adam(O.polynomial_decay(0.1, 3, 0.01, power=2.0)),
    "adamax": lambda O: O.adamax(O.piecewise_constant([1, 2], [0.1, 0.05, 0.01])),
    "sm3": lambda O: O.sm3(0.1),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "sm3" else n
                                  for n in OPTIMIZERS])   # sm3 runs eagerly: slow in JAX
def test_optimizer_steps_like_jax(name, rjax):
    def case(m, n):
        O, _ = _libs(m)
        init, update, get_params = OPTIMIZERS[name](O)
        params = {"w": n.array([[1.0, -2.0], [0.5, 0.0]]), "b": (n.array([0.3, -0.1]),
                                                                  n.float32(2.0))}

        def loss(p):
            return n.sum(p["w"] ** 2 * n.array([1.0, 3.0])) + n.sum(n.sin(p["b"][0])) \
                + p["b"][1] ** 2
        state = init(params)
        # sm3 keeps each leaf's shape (Python ints) in its state, which jit would trace:
        # get_params then fails under jit in JAX too
        jit = (lambda f: f) if name == "sm3" else m.jit
        step = jit(lambda i, s: update(i, m.grad(loss)(get_params(s)), s))
        for i in range(3):
            state = step(i, state)
        return get_params(state)
    (run_both if name == "sm3" else run_both_staged)(case, rjax, rtol=2e-6, atol=1e-6)


def test_optimizer_state_pack_unpack_and_errors(rjax):
    for m in (rjax, jaxlite):
        O, _ = _libs(m)
        init, update, get_params = O.momentum(0.1, 0.9)
        state = init({"a": m.numpy.ones(2), "b": m.numpy.zeros(())})
        assert isinstance(state, O.OptimizerState)
        marked = O.unpack_optimizer_state(state)
        assert isinstance(marked["a"], O.JoinPoint)
        again = O.pack_optimizer_state(marked)
        assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
        # OptimizerState is a pytree: leaves are the per-leaf states
        assert len(m.tree_util.tree_leaves(state)) == 4
        with pytest.raises(TypeError, match="did not match the parameter tree"):
            update(0, {"a": m.numpy.ones(2)}, state)
        with pytest.raises(TypeError):
            O.make_schedule([0.1, 0.2])
        with pytest.raises(ValueError, match="one shorter"):
            O.piecewise_constant([1, 2], [0.1, 0.2])
        with pytest.raises(ValueError, match="sequences"):
            O.piecewise_constant(1, [0.1, 0.2])


def test_schedules_norms_and_clipping(rjax):
    def case(m, n):
        O, _ = _libs(m)
        steps = n.arange(6)
        scheds = [O.constant(0.5), O.exponential_decay(0.1, 2, 0.5),
                  O.inverse_time_decay(0.1, 2, 0.5), O.inverse_time_decay(0.1, 2, 0.5, True),
                  O.polynomial_decay(0.1, 3, 0.01, power=2.0)]
        piecewise = O.piecewise_constant([1, 3], [0.1, 0.05, 0.01])
        tree = {"a": n.array([3.0, 4.0]), "b": [n.array([[12.0]])]}
        return ([s(steps) for s in scheds[1:]], n.asarray(scheds[0](3)),
                [piecewise(i) for i in range(5)],
                m.vmap(piecewise)(steps), O.l2_norm(tree),
                O.clip_grads(tree, 1.0), O.clip_grads(tree, 100.0))
    run_both_staged(case, rjax)


# ---- example_libraries.stax: an MNIST-style tutorial, unchanged but for the import ---------

def _tutorial(jax, jnp, steps=3, conv=False):
    """JAX's stax/optimizers MNIST tutorial shape: an MLP (or a small conv net) on random
    'digits'."""
    optimizers, stax = _libs(jax)
    mlp = stax.serial(stax.Flatten, stax.Dense(32), stax.Relu, stax.Dense(10),
                      stax.LogSoftmax)
    init_random_params, predict = mlp if not conv else stax.serial(
        stax.Conv(4, (3, 3), padding="SAME"), stax.Relu,
        stax.Conv(4, (3, 3), strides=(2, 2)), stax.BatchNorm(), stax.Gelu,
        stax.MaxPool((2, 2), strides=(1, 1)), stax.AvgPool((2, 2), padding="SAME"),
        stax.Flatten,
        stax.FanOut(2), stax.parallel(stax.Dense(8), stax.serial(stax.Dense(8), stax.Tanh)),
        stax.FanInSum, stax.Dense(10), stax.LogSoftmax)

    def loss(params, batch):
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        return jnp.mean(jnp.argmax(targets, axis=1) == jnp.argmax(predict(params, inputs),
                                                                  axis=1))

    rng = jax.random.PRNGKey(0)
    out_shape, params = init_random_params(rng, (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        value, grads = jax.value_and_grad(loss)(params, batch)
        return value, opt_update(i, grads, opt_state)

    data = np.random.default_rng(1)
    images = jnp.asarray(data.standard_normal((16, 8, 8, 1), np.float32))
    labels = jax.nn.one_hot(jnp.asarray(data.integers(0, 10, 16)), 10)
    opt_state = opt_init(params)
    losses = []
    for i in range(steps):
        value, opt_state = update(i, opt_state, (images, labels))
        losses.append(value)
    return (jnp.asarray(out_shape), params, losses,
            jax.jit(accuracy)(get_params(opt_state), (images, labels)))


def test_stax_mnist_style_tutorial_like_jax(rjax):
    # jaxlite runs the tutorial as written; real JAX runs it staged (the same numbers)
    run_both_staged(_tutorial, rjax, rtol=2e-4, atol=2e-5)


@pytest.mark.slow   # real JAX compiles the conv net's gradient for ~30 s on 2 cores
def test_stax_conv_tutorial_like_jax(rjax):
    run_both(lambda m, n: _tutorial(m, n, conv=True), rjax, rtol=2e-4, atol=2e-5)


@pytest.mark.slow   # real JAX compiles each layer (~25 s on 2 cores)
def test_stax_other_layers_like_jax(rjax):
    def case(m, n):
        _, stax = _libs(m)
        key = m.random.PRNGKey(3)
        x = m.random.normal(m.random.PRNGKey(4), (2, 5, 5, 3))
        outs = []
        for layer in [stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME"),
                      stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (2, 2)),
                      stax.SumPool((2, 2), padding="SAME"),
                      stax.AvgPool((3, 3), strides=(2, 2), padding="SAME"),
                      stax.BatchNorm(axis=(0, 1, 2), center=False),
                      stax.serial(stax.FanOut(2), stax.parallel(stax.Identity, stax.Exp),
                                  stax.FanInConcat(axis=1)),
                      stax.Softplus, stax.Selu, stax.Elu, stax.LeakyRelu, stax.Sigmoid,
                      stax.Softmax]:
            init, apply = layer
            shape, params = init(key, x.shape)
            y = apply(params, x)
            assert tuple(shape) == y.shape
            outs.append((tuple(shape), params, y))
        x1 = m.random.normal(key, (2, 7, 3))
        init, apply = stax.Conv1DTranspose(2, (3,), strides=(2,))
        shape, params = init(key, x1.shape)
        outs.append((tuple(shape), apply(params, x1)))
        init, apply = stax.Dropout(0.75)
        outs.append(apply((), x, rng=key))
        outs.append(stax.Dropout(0.5, mode="test")[1]((), x, rng=key))
        # serial splits the rng into one key per layer
        init, apply = stax.serial(stax.Dense(5), stax.Dropout(0.6), stax.Relu)
        _, params = init(key, (-1, 3))
        outs.append(apply(params, x[0, 0], rng=m.random.PRNGKey(7)))
        return outs
    run_both(case, rjax, rtol=2e-5, atol=2e-6)
    for m in (rjax, jaxlite):
        with pytest.raises(ValueError, match="PRNG key"):
            _libs(m)[1].Dropout(0.5)[1]((), m.numpy.ones(2))


# ---- nn.dot_product_attention ------------------------------------------------------------------

def _qkv(n, B=2, T=3, S=4, N=4, K=2, H=8, dtype="float32"):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((B, T, N, H)).astype(np.float32)
    k = rng.standard_normal((B, S, K, H)).astype(np.float32)
    v = rng.standard_normal((B, S, K, H)).astype(np.float32)
    return [n.asarray(a).astype(dtype) for a in (q, k, v)]


ATTENTION_CASES = {
    "plain": lambda n: {},
    "causal_scale": lambda n: dict(is_causal=True, scale=0.3),
    "bias_one_head": lambda n: dict(bias=n.asarray(
        np.linspace(-1, 1, 2 * 3 * 4, dtype=np.float32).reshape(2, 1, 3, 4))),
    "mask_all_heads": lambda n: dict(mask=n.asarray(
        (np.arange(2 * 4 * 3 * 4).reshape(2, 4, 3, 4) % 3) != 0)),
    "seq_lengths": lambda n: dict(query_seq_lengths=n.asarray([2, 3], "int32"),
                                  key_value_seq_lengths=n.asarray([1, 4], "int32")),
    "window": lambda n: dict(local_window_size=(1, 0), implementation="xla"),
    "window_int_causal_mask": lambda n: dict(local_window_size=1, is_causal=True,
                                             mask=n.asarray(np.eye(3, 4, dtype=bool))),
}


@pytest.mark.parametrize("name", list(ATTENTION_CASES))
def test_dot_product_attention_like_jax(name, rjax):
    def case(m, n):
        q, k, v = _qkv(n)
        return m.nn.dot_product_attention(q, k, v, **ATTENTION_CASES[name](n))
    run_both_staged(case, rjax, rtol=1e-5, atol=1e-6)


def test_dot_product_attention_grad_residual_jit_vmap_dtypes(rjax):
    def case(m, n):
        q, k, v = _qkv(n)
        bias = n.ones((1, 1, 3, 4)) * 0.5

        def f(q, k, v, b):
            return n.sum(n.sin(m.nn.dot_product_attention(q, k, v, b, is_causal=True)))
        grads = m.grad(f, argnums=(0, 1, 2, 3))(q, k, v, bias)
        out, lse = m.jit(lambda q, k, v: m.nn.dot_product_attention(
            q, k, v, return_residual=True, key_value_seq_lengths=n.asarray([2, 3],
                                                                            "int32")))(q, k, v)
        # a 3-d (T, N, H) call, and vmap over a leading batch of those
        single = m.nn.dot_product_attention(q[0], k[0], v[0])
        mapped = m.vmap(m.nn.dot_product_attention)(q, k, v)
        qb, kb, vb = _qkv(n, dtype="bfloat16")
        low = m.nn.dot_product_attention(qb, kb, vb)
        return grads, out, lse, single, mapped, low
    run_both_staged(case, rjax, rtol=2e-2, atol=2e-3)   # bfloat16 sets the tolerance
    run_both_staged(lambda m, n: m.grad(lambda q: n.sum(m.nn.dot_product_attention(
        q, *_qkv(n)[1:], mask=n.asarray(np.tri(3, 4, dtype=bool)))))(_qkv(n)[0]), rjax,
        rtol=1e-5, atol=1e-6)


def test_dot_product_attention_bad_input(rjax):
    from _both import raises_like_jax

    def attn(**kw):
        def case(m, n):
            q, k, v = _qkv(n)
            args = dict(query=q, key=k, value=v)
            args.update({a: b(n) for a, b in kw.items()})
            return m.nn.dot_product_attention(**args)
        return case
    raises_like_jax(attn(value=lambda n: n.ones((2, 4, 2, 7))), rjax, "value shape")
    raises_like_jax(attn(query=lambda n: n.ones((2, 3, 3, 8))), rjax, "multiple")
    raises_like_jax(attn(key=lambda n: n.ones((2, 4, 2, 8), "bfloat16")), rjax, "dtype")
    raises_like_jax(attn(mask=lambda n: n.ones((2, 4, 3, 4))), rjax, "mask dtype")
    raises_like_jax(attn(query_seq_lengths=lambda n: n.ones(2, "int16")), rjax,
                    "query_seq_lengths")
    raises_like_jax(attn(implementation=lambda n: "fast"), rjax, "Unsupported")
    raises_like_jax(attn(implementation=lambda n: "cudnn"), rjax, "cuDNN is not detected")


# ---- image.resize / scale_and_translate --------------------------------------------------------

IMAGE = np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3) % 7 - 3
RESIZE_METHODS = ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch",
                  "area"]


@pytest.mark.parametrize("method", [  # cubic-pytorch (and lanczos3's grad) stand in for these
    pytest.param(n, marks=pytest.mark.slow) if n in ("lanczos3", "lanczos5", "cubic") else n
    for n in RESIZE_METHODS])
def test_resize_like_jax(method, rjax):
    def case(m, n):
        x = n.asarray(IMAGE)
        outs = []
        for shape in [(2, 9, 4, 3), (2, 2, 13, 3)]:    # up/down in each spatial dim
            outs.append(m.image.resize(x, shape, method))
            outs.append(m.image.resize(x, shape, method, antialias=False))
        return outs
    run_both_staged(case, rjax, rtol=1e-5, atol=2e-5)


def test_resize_dtypes_methods_enum_and_grad(rjax):
    def case(m, n):
        x = n.asarray(IMAGE)
        u8 = m.image.resize(x.astype("uint8"), (2, 7, 4, 3), "bilinear")
        near_u8 = m.image.resize(x.astype("uint8"), (2, 7, 4, 3), "nearest")
        bf = m.image.resize(x.astype("bfloat16"), (2, 3, 8, 3), m.image.ResizeMethod.CUBIC)
        g = m.grad(lambda v: n.sum(n.sin(m.image.resize(v, (2, 8, 3, 3), "lanczos3"))))(x)
        mapped = m.vmap(lambda v: m.image.resize(v, (3, 9, 3), "linear"))(x)
        return u8, near_u8, bf, g, mapped
    run_both_staged(case, rjax, rtol=1e-2, atol=2e-2)   # bfloat16 sets the tolerance


def test_scale_and_translate_like_jax(rjax):
    def case(m, n):
        x = n.asarray(IMAGE[0, :, :, 0])
        st = m.image.scale_and_translate

        def f(scale, trans):
            return n.sum(st(x, (7, 4), (0, 1), scale, trans, "cubic") ** 2)
        s, t = n.array([1.5, 0.6]), n.array([-0.7, 1.2])
        return (st(x, (7, 4), (0, 1), s, t, "linear"),
                st(x, (7, 4), (0, 1), s, t, "lanczos3", antialias=False),
                st(x, (5, 9), (1,), n.array([1.4]), n.array([0.5]), "area"),
                st(x, (7, 4), (0, 1), s, t, "cubic-pytorch", antialias=False),
                m.grad(f, argnums=(0, 1))(s, t))
    run_both_staged(case, rjax, rtol=1e-5, atol=2e-5)


def test_image_bad_input(rjax):
    from _both import raises_like_jax
    x = IMAGE[0]
    raises_like_jax(lambda m, n: m.image.resize(n.asarray(x), (4, 4), "linear"), rjax,
                    "length equal")
    raises_like_jax(lambda m, n: m.image.resize(n.asarray(x), (4, 4, 3), "fancy"), rjax,
                    "Unknown resize method")
    raises_like_jax(lambda m, n: m.image.scale_and_translate(
        n.asarray(x), (4, 4, 3), (0, 1), n.ones(2), n.zeros(2), "nearest"), rjax,
        "Nearest neighbor")
    raises_like_jax(lambda m, n: m.image.resize(n.asarray(x), (4, 4.0, 3), "linear"), rjax)
