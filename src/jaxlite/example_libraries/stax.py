"""``jaxlite.example_libraries.stax``: a tiny neural-network layer library
(``jax.example_libraries.stax``).

A layer is a pair ``(init_fun, apply_fun)``:

- ``init_fun(rng, input_shape) -> (output_shape, params)``; shapes are tuples whose batch
  entry may be ``-1`` (unknown), as in JAX's tutorials;
- ``apply_fun(params, inputs, **kwargs) -> outputs``; ``rng=key`` reaches layers that need
  randomness (``Dropout``).

``serial`` and ``parallel`` combine layers.  Parameters are drawn with the same keys and
initializers as JAX's stax, so ``init_fun`` gives JAX's numbers.

Layer: public API over ``jaxlite.numpy``, ``lax``, ``random`` and ``nn``.
"""
from __future__ import annotations

import functools
import math

from .. import lax, random
from .. import numpy as jnp
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid,  # noqa: F401
                  softmax, softplus, standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros  # noqa: F401

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# ---- shape arithmetic (the batch entry may be -1) ------------------------------------------

def _conv_specs(lhs_shape, rhs_shape, dimension_numbers):
    dn = lax.conv_dimension_numbers(tuple(abs(d) for d in lhs_shape),
                                    tuple(abs(d) for d in rhs_shape), dimension_numbers)
    return dn.lhs_spec, dn.rhs_spec, dn.out_spec


def _conv_general_shape(lhs_shape, rhs_shape, strides, padding, dimension_numbers):
    """The output shape of ``conv_general_dilated`` (no dilation)."""
    lspec, rspec, ospec = _conv_specs(lhs_shape, rhs_shape, dimension_numbers)
    ins = [lhs_shape[d] for d in lspec[2:]]
    ks = [rhs_shape[d] for d in rspec[2:]]
    pads = (lax.padtype_to_pads(ins, ks, strides, padding) if isinstance(padding, str)
            else padding)
    spatial = [(i + lo + hi - k) // s + 1 for i, k, s, (lo, hi) in zip(ins, ks, strides, pads)]
    out = [0] * len(lhs_shape)
    out[ospec[0]], out[ospec[1]] = lhs_shape[lspec[0]], rhs_shape[rspec[0]]
    for d, n in zip(ospec[2:], spatial):
        out[d] = n
    return tuple(out)


def _conv_transpose_shape(lhs_shape, rhs_shape, strides, padding, dimension_numbers):
    """The output shape of ``conv_transpose`` (the strided input dilated, then padded)."""
    from ..lax._conv import _transpose_pads
    lspec, rspec, ospec = _conv_specs(lhs_shape, rhs_shape, dimension_numbers)
    ins = [lhs_shape[d] for d in lspec[2:]]
    ks = [rhs_shape[d] for d in rspec[2:]]
    if isinstance(padding, str):
        pads = [sum(_transpose_pads(k, s, padding)) for k, s in zip(ks, strides)]
    else:
        pads = [lo + hi for lo, hi in padding]
    spatial = [(i - 1) * s - k + 2 + p for i, k, s, p in zip(ins, ks, strides, pads)]
    out = [0] * len(lhs_shape)
    out[ospec[0]], out[ospec[1]] = lhs_shape[lspec[0]], rhs_shape[rspec[0]]
    for d, n in zip(ospec[2:], spatial):
        out[d] = n
    return tuple(out)


def _kernel_shape(specs, out_chan, filter_shape, input_shape):
    lhs_spec, rhs_spec, _ = specs
    sizes = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
            else next(sizes) for c in rhs_spec]


# ---- layers ----------------------------------------------------------------------------------

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully connected layer ``inputs @ W + b`` with ``W`` of shape ``(in, out_dim)``
    (``jax.example_libraries.stax.Dense``)."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))
        return tuple(input_shape[:-1]) + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """A convolution with the layouts ``dimension_numbers = (lhs, rhs, out)`` (strings such
    as ``("NHWC", "HWIO", "NHWC")``) plus a bias per output channel
    (``jax.example_libraries.stax.GeneralConv``)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
        out_shape = _conv_general_shape(input_shape, kernel_shape, strides, padding,
                                        dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return out_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A transposed convolution plus bias (``jax.example_libraries.stax``'s
    ``GeneralConvTranspose``)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
        out_shape = _conv_transpose_shape(input_shape, kernel_shape, strides, padding,
                                          dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return out_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_transpose(inputs, W, strides, padding,
                                  dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalises over ``axis`` with the batch's own statistics, then scales by ``gamma``
    and shifts by ``beta`` (``jax.example_libraries.stax.BatchNorm``; no running
    averages)."""
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``
    (``jax.example_libraries.stax.elementwise``)."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = ((0, len(window_shape) + 1) if spec is None
                       else (spec.index("N"), spec.index("C")))
        window, stride = tuple(window_shape), tuple(strides)
        for i in sorted(non_spatial):   # a window of 1, stride 1 on batch and channels
            window = window[:i] + (1,) + window[i:]
            stride = stride[:i] + (1,) + stride[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window, stride, padding)
            # clamped at 0 as JAX's shape rule does: an unknown (-1) batch comes out as 0
            out = tuple(max(0, (n + lo + hi - w) // s + 1)
                        for n, w, s, (lo, hi) in zip(input_shape, window, stride, pads))
            return out, ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window, stride, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
MaxPool.__doc__ = ("Max pooling over ``window_shape`` (spatial dims; ``spec`` names the "
                   "layout, default batch first, channels last) "
                   "(``jax.example_libraries.stax.MaxPool``).")
SumPool = _pooling_layer(lax.add, 0.0)
SumPool.__doc__ = "Sum pooling (``jax.example_libraries.stax.SumPool``)."


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        non_spatial = ((0, inputs.ndim - 1) if spec is None
                       else (spec.index("N"), spec.index("C")))
        spatial = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in non_spatial)
        # how many (unpadded) inputs each window covers
        counts = lax.reduce_window(jnp.ones(spatial, dtype=inputs.dtype), 0.0, lax.add,
                                   dims, strides, padding)
        for i in sorted(non_spatial):
            counts = jnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)
AvgPool.__doc__ = ("Average pooling; padded positions do not count "
                   "(``jax.example_libraries.stax.AvgPool``).")


def _flatten():
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()   # a layer (not a factory), as in JAX


def _identity():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs
    return init_fun, apply_fun


Identity = _identity()


def FanOut(num):
    """A layer returning ``num`` copies of its input (``jax.example_libraries.stax.FanOut``)."""
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs)
    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
    """A layer concatenating its list of inputs along ``axis``
    (``jax.example_libraries.stax.FanInConcat``)."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(s[ax] for s in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """In ``"train"`` mode keeps each input with probability ``rate`` (scaled by
    ``1 / rate``; note JAX's stax's meaning of ``rate``), else the identity
    (``jax.example_libraries.stax.Dropout``).  ``apply_fun`` needs ``rng=key``: ValueError
    without it."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument: call apply_fun(params, inputs, rng=key) with a key "
                             "from jaxlite.random.key.")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return init_fun, apply_fun


def serial(*layers):
    """The layers applied one after another (``jax.example_libraries.stax.serial``); each
    layer's ``init_fun`` gets a key split off the previous one, ``apply_fun`` splits
    ``rng`` (when given) into one key per layer."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The layers applied side by side to a list of inputs, one each
    (``jax.example_libraries.stax.parallel``); combine with ``FanOut`` and ``FanInSum``
    or ``FanInConcat``."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs,
                                                                rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` when the input shape is known
    (``jax.example_libraries.stax.shape_dependent``)."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
