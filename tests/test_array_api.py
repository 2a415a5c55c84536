"""The Array API standard's namespace metadata of jaxlite.numpy against jax.numpy's
(``__array_api_version__``, ``__array_namespace_info__()``, ``Array.__array_namespace__``)."""
from __future__ import annotations

import pytest

import jaxlite
import jaxlite.numpy as jnp

KINDS = [None, "bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric", ("bool", "complex floating"),
         ("signed integer", "real floating")]


def _info(rjnp):
    return jnp.__array_namespace_info__(), rjnp.__array_namespace_info__()


def test_version(rjnp):
    assert jnp.__array_api_version__ == rjnp.__array_api_version__
    assert isinstance(jnp.__array_api_version__, str)


def test_array_namespace_is_jaxlite_numpy():
    assert jnp.ones(3).__array_namespace__() is jnp


@pytest.mark.parametrize("x64_on", [False, True])
def test_dtypes_and_defaults(rjnp, request, x64_on):
    if x64_on:
        request.getfixturevalue("x64")
    ours, theirs = _info(rjnp)
    for kind in KINDS:
        assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind), kind
    assert ours.default_dtypes() == theirs.default_dtypes()
    dev = jaxlite.devices()[0]
    assert ours.default_dtypes(device=dev) == ours.default_dtypes()
    assert ours.dtypes(device=dev) == ours.dtypes()


def test_capabilities_and_devices(rjnp):
    ours, theirs = _info(rjnp)
    assert ours.capabilities() == theirs.capabilities()
    assert ours.default_device() is None and theirs.default_device() is None
    assert ours.devices() == [None, *jaxlite.devices()]
    assert [str(d) for d in ours.devices()] == [str(d) for d in theirs.devices()]


@pytest.mark.parametrize("kind", ["foo", 3, ("bool", "floats")])
def test_unknown_kind_raises_key_error(rjnp, kind):
    ours, theirs = _info(rjnp)
    with pytest.raises(KeyError):
        theirs.dtypes(kind=kind)
    with pytest.raises(KeyError):
        ours.dtypes(kind=kind)
