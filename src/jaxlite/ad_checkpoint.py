"""``jaxlite.ad_checkpoint``: ``checkpoint`` (``remat``) and its rematerialisation policies
(mirrors ``jax.ad_checkpoint`` and ``jax.checkpoint_policies``).

Layer: top.  A policy is a function ``policy(prim, *avals, **params) -> bool`` telling
reverse mode whether the output of one primitive application inside a checkpointed
function may be saved (True) or must be recomputed (False).  The policies here decide
exactly as JAX's do, on jaxlite's primitives; ``jax.checkpoint(f, policy=...)`` accepts
any of them.  jaxlite's checkpoint recomputes the whole forward pass of ``f`` whatever the
policy says (README, known differences): the results are the same, only the memory/time
trade-off differs.
"""
from __future__ import annotations

import types

from .transforms.autodiff import checkpoint, remat

__all__ = ["checkpoint", "remat", "checkpoint_policies", "everything_saveable",
           "nothing_saveable", "dots_saveable", "checkpoint_dots",
           "dots_with_no_batch_dims_saveable", "save_anything_except_these_names",
           "save_any_names_but_these", "save_only_these_names", "save_from_both_policies",
           "offload_dot_with_no_batch_dims", "save_and_offload_only_these_names"]

#: the primitive JAX's ``checkpoint_name`` binds; jaxlite has none, so name-based
#: policies never match a jaxlite primitive (they save nothing by name)
_NAME_PRIMITIVE = "name"


def everything_saveable(*_, **__) -> bool:
    """Saves every value: reverse mode as if the function were not checkpointed."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Saves nothing: everything is recomputed (``checkpoint``'s default)."""
    return False


def _no_batch_dims(params) -> bool:
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


class DotsSaveable:
    """Saves the results of matrix products (``dot_general``, and convolutions unless
    ``only_if_no_batch_dims``, which saves only ``dot_general``s without batch
    dimensions)."""

    __slots__ = ("only_if_no_batch_dims",)

    def __init__(self, only_if_no_batch_dims: bool):
        object.__setattr__(self, "only_if_no_batch_dims", bool(only_if_no_batch_dims))

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __call__(self, prim, *args, **params) -> bool:
        name = getattr(prim, "name", None)
        if self.only_if_no_batch_dims:
            return name == "dot_general" and _no_batch_dims(params)
        return name in ("dot_general", "conv_general_dilated")

    def __eq__(self, other):
        return isinstance(other, DotsSaveable) and \
            other.only_if_no_batch_dims == self.only_if_no_batch_dims

    def __hash__(self):
        return hash((DotsSaveable, self.only_if_no_batch_dims))

    def __repr__(self):
        return f"DotsSaveable(only_if_no_batch_dims={self.only_if_no_batch_dims})"


dots_saveable = checkpoint_dots = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


class _NamePolicy:
    """A policy deciding by the name ``checkpoint_name`` gave a value."""

    __slots__ = ("names", "allow")

    def __init__(self, names, allow: bool):
        object.__setattr__(self, "names", frozenset(names))
        object.__setattr__(self, "allow", allow)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __call__(self, prim, *_, **params) -> bool:
        if getattr(prim, "name", None) != _NAME_PRIMITIVE:
            return False             # only named values can be saved
        return (params.get("name") in self.names) == self.allow

    def __eq__(self, other):
        return type(other) is type(self) and (other.names, other.allow) == (self.names,
                                                                           self.allow)

    def __hash__(self):
        return hash((type(self), self.names, self.allow))

    def __repr__(self):
        if self.allow:
            return f"SaveOnlyTheseNames(saveable_names={self.names!r})"
        return f"SaveAnyNamesButThese(names={self.names!r})"


def save_only_these_names(*names_which_can_be_saved):
    """Saves only values named (``checkpoint_name``) with one of the given names."""
    return _NamePolicy(names_which_can_be_saved, True)


def save_any_names_but_these(*names_not_to_save):
    """Saves only named values, except those with the given names."""
    return _NamePolicy(names_not_to_save, False)


def save_anything_except_these_names(*names_not_to_save):
    """Meant to save any value except the named ones; JAX 0.10's version saves every value
    (the names are ignored), and so does this one."""
    return everything_saveable


def save_from_both_policies(policy_1, policy_2):
    """A value is saved when either policy saves it (both must answer with a bool).

    Raises (when the policy is consulted):
      ValueError: a policy answered something other than a bool.
    """
    def policy(prim, *args, **params):
        a = policy_1(prim, *args, **params)
        b = policy_2(prim, *args, **params)
        if not (isinstance(a, bool) and isinstance(b, bool)):
            raise ValueError(f"save_from_both_policies combines policies that answer True or "
                             f"False; they answered {a!r} and {b!r}. Write the combined "
                             f"policy as a function of its own instead.")
        return a or b
    return policy


class Offloadable:
    """The answer of an offloading policy: keep the value, in the ``dst`` memory."""

    __slots__ = ("src", "dst")

    def __init__(self, src, dst):
        self.src, self.dst = src, dst

    def __eq__(self, other):
        return isinstance(other, Offloadable) and (other.src, other.dst) == (self.src,
                                                                             self.dst)

    def __hash__(self):
        return hash((Offloadable, self.src, self.dst))

    def __repr__(self):
        return f"Offloadable(src={self.src!r}, dst={self.dst!r})"


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
    """As ``dots_with_no_batch_dims_saveable``, but the kept values are moved to another
    memory (``Offloadable(src, dst)``) instead of staying; others: False (recompute).
    jaxlite's devices have one memory, so offloading keeps the value where it is."""
    def policy(prim, *_, **params):
        if getattr(prim, "name", None) == "dot_general" and _no_batch_dims(params):
            return Offloadable(offload_src, offload_dst)
        return False
    return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                      names_which_can_be_offloaded, offload_src,
                                      offload_dst):
    """As ``save_only_these_names`` for the first names; values with the second names are
    kept in another memory (``Offloadable``).

    Raises:
      ValueError: a name is in both lists.
    """
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    both = saved & offloaded
    if both:
        raise ValueError(f"names_which_can_be_saved and names_which_can_be_offloaded must not "
                         f"share names; both hold {both} (saved={saved}, "
                         f"offloaded={offloaded}).")

    def policy(prim, *_, **params):
        if getattr(prim, "name", None) == _NAME_PRIMITIVE:
            if params.get("name") in saved:
                return True
            if params.get("name") in offloaded:
                return Offloadable(offload_src, offload_dst)
        return False
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)
