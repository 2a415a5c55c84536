"""``jaxlite.example_libraries.optimizers``: first-order optimizers as triples of pure
functions (``jax.example_libraries.optimizers``).

An optimizer is ``(init_fun, update_fun, get_params)``::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)                      # params: any pytree of arrays
    state = opt_update(step, grads, state)        # grads: the same structure as params
    params = get_params(state)

Each optimizer is written for one array (``init(x0) -> leaf state``, ``update(i, g, state)``,
``get_params(state)``); the ``optimizer`` decorator lifts it to pytrees, keeping the
per-leaf states flat in an ``OptimizerState`` (a pytree, so the state passes through jit).
Step sizes are numbers or schedules ``step -> step size``.  The arithmetic follows JAX's
formula by formula, so results agree to rounding.

Layer: public API over ``jaxlite.numpy`` and ``tree_util``.
"""
from __future__ import annotations

import functools
import warnings
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from .. import numpy as jnp
from ..tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

Array = Any
Params = Any
State = Any
Updates = Params
Step = int
Schedule = Callable[[Step], float]
InitFn = Callable[[Params], Any]
UpdateFn = Callable[[Step, Updates, Any], Any]
ParamsFn = Callable[[Any], Params]

# the flat per-leaf states, the parameters' tree structure and each leaf state's structure
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
with warnings.catch_warnings():
    # a namedtuple is a pytree of all its fields; the structures must be auxiliary data
    # instead, which is what overriding the namedtuple registration means (optree warns)
    warnings.simplefilter("ignore", UserWarning)
    register_pytree_node(
        OptimizerState,
        lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
        lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
    """The ``(init_fn, update_fn, params_fn)`` triple an optimizer factory returns."""
    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _flatten_all(trees):
    """(tuple of leaf lists, tuple of treedefs) for a list of pytrees."""
    pairs = [tree_flatten(t) for t in trees]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def optimizer(opt_maker):
    """Lifts an optimizer written for single arrays to one over pytrees of arrays
    (``jax.example_libraries.optimizers.optimizer``).

    ``opt_maker(*args)`` returns ``(init, update, get_params)`` for one array; the result
    takes the same arguments and returns an ``Optimizer`` whose functions take pytrees.
    ``update_fun`` raises TypeError when the gradient tree's structure differs from the
    parameters', or when ``update`` changes a leaf state's structure.
    """
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_all([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(f"optimizer update function was passed a gradient tree that "
                                f"did not match the parameter tree structure with which it "
                                f"was initialized: parameter tree {tree} and grad tree "
                                f"{grad_tree_def}.")
            states = [tree_unflatten(s, leaves) for s, leaves in zip(subtrees, states_flat)]
            new_flat, new_subtrees = _flatten_all(
                [update(i, g, s) for g, s in zip(grad_flat, states)])
            for old, new in zip(subtrees, new_subtrees):
                if old != new:
                    raise TypeError(f"optimizer update function produced an output structure "
                                    f"that did not match its input structure: input {old} "
                                    f"and output {new}.")
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            return tree_unflatten(tree, [get_params(tree_unflatten(s, leaves))
                                         for s, leaves in zip(subtrees, states_flat)])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def _first(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x - step_size(i) * g``
    (``jax.example_libraries.optimizers.sgd``).  Example: ``sgd(0.1)``."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass):
    """Heavy-ball momentum: ``v = mass * v + g; x -= step_size(i) * v``
    (``jax.example_libraries.optimizers.momentum``)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def nesterov(step_size, mass):
    """Nesterov momentum: ``v = mass * v + g; x -= step_size(i) * (mass * v + g)``
    (``jax.example_libraries.optimizers.nesterov``)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the scaled gradient
    (``jax.example_libraries.optimizers.adagrad``); a zero squared-gradient sum scales by
    0."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: a running mean of squared gradients scales each step
    (``jax.example_libraries.optimizers.rmsprop``)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled step
    (``jax.example_libraries.optimizers.rmsprop_momentum``)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq, mom = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
        return x - mom, avg_sq, mom
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam with bias-corrected moment estimates
    (``jax.example_libraries.optimizers.adam``).  Example: ``adam(1e-3)``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax, Adam's infinity-norm variant
    (``jax.example_libraries.optimizers.adamax``)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1)) * m / (u + eps)
        return x, m, u
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3: Adagrad with one accumulator per index of each axis (memory linear in the
    sum of the dimensions, not their product) (``jax.example_libraries.optimizers.sm3``)."""
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):
        # v (one value per index of `axis`) broadcastable against the full array
        return v[tuple(slice(None) if d == axis else None for d in range(ndim))]

    def init(x0):
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

    def update(i, g, state):
        x, m, vs, shape = state
        accum = functools.reduce(jnp.minimum, [along(g.ndim, v, a)
                                               for a, v in enumerate(vs)]) + jnp.square(g)
        inv = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(tuple(d for d in range(x.ndim) if d != a)) for a in range(x.ndim)]
        return x, m, vs, shape

    def get_params(state):
        return state[0].reshape(state[3])
    return init, update, get_params


# ---- learning-rate schedules ---------------------------------------------------------------

def constant(step_size) -> Schedule:
    """The schedule ``i -> step_size`` (``jax.example_libraries.optimizers.constant``)."""
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """``i -> step_size * decay_rate ** (i / decay_steps)``
    (``jax.example_libraries.optimizers.exponential_decay``)."""
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``i -> step_size / (1 + decay_rate * i / decay_steps)``, with ``i / decay_steps``
    floored when ``staircase`` (``jax.example_libraries.optimizers.inverse_time_decay``)."""
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From ``step_size`` to ``final_step_size`` along ``(1 - i / decay_steps) ** power``,
    then constant (``jax.example_libraries.optimizers.polynomial_decay``)."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        mult = (1 - step_num / decay_steps) ** power
        return mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """``values[k]`` for steps in ``(boundaries[k-1], boundaries[k]]``
    (``jax.example_libraries.optimizers.piecewise_constant``).

    Raises ValueError unless both are 1-D with ``len(values) == len(boundaries) + 1``.
    """
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[jnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule as it is, a scalar as a constant schedule; TypeError (naming the type)
    for anything else (``jax.example_libraries.optimizers.make_schedule``)."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ---- utilities -----------------------------------------------------------------------------

def l2_norm(tree):
    """The Euclidean norm of all the leaves of ``tree`` together
    (``jax.example_libraries.optimizers.l2_norm``)."""
    leaves, _ = tree_flatten(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """``grad_tree`` scaled down to global norm ``max_norm`` when its norm is larger
    (``jax.example_libraries.optimizers.clip_grads``)."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                    grad_tree)


class JoinPoint:
    """Marks where a parameter's optimizer state sits inside ``unpack_optimizer_state``'s
    pytree (``jax.example_libraries.optimizers.JoinPoint``)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An ``OptimizerState`` as a pytree of the parameters' structure whose leaves are
    ``JoinPoint``s holding each parameter's state (for saving, e.g. with pickle)
    (``jax.example_libraries.optimizers.unpack_optimizer_state``)."""
    states_flat, tree_def, subtree_defs = opt_state
    return tree_unflatten(tree_def, [JoinPoint(tree_unflatten(s, leaves))
                                     for s, leaves in zip(subtree_defs, states_flat)])


def pack_optimizer_state(marked_pytree):
    """The inverse of ``unpack_optimizer_state``
    (``jax.example_libraries.optimizers.pack_optimizer_state``); AssertionError when a
    leaf is not a ``JoinPoint``."""
    sentinels, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        # AssertionError, as JAX's assert raises
        raise AssertionError("pack_optimizer_state expects a pytree whose leaves are JoinPoints "
                        "(from unpack_optimizer_state)")
    states_flat, subtree_defs = _flatten_all([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
