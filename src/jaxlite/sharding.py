"""Shardings: which devices hold an array, and which part of it each holds.

``jax.sharding``: ``Mesh`` (a named grid of devices), ``PartitionSpec`` (``P``: which mesh
axes split each array dimension), ``NamedSharding`` (the two together),
``SingleDeviceSharding``, ``AbstractMesh``, ``AxisType``, and the thread-local current
mesh (``set_mesh``/``get_mesh``/``get_abstract_mesh``/``use_abstract_mesh``), and the
regions that switch mesh axis types (``auto_axes``; ``explicit_axes`` only where nothing
switches) with ``ManualAxisType``, shard_map's varying/reduced axes of a value.

As in JAX, ``PartitionSpec``, ``Mesh`` and ``AbstractMesh`` are interned: equal arguments
give the very same object, and equality is identity (``P('x', None) != P('x')``).

Layer: runtime-adjacent (imports nothing of jaxlite at module level; the trace state is
imported inside the two functions that need it), used by ``Array.sharding``,
``device_put`` and the sharded arrays of ``core/sharded.py``.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import math
import threading
import warnings
import weakref

import numpy as np


# ---- interning ---------------------------------------------------------------------------

_intern_lock = threading.Lock()


def _interned(table: weakref.WeakValueDictionary, key, make):
    """The live object of ``table`` under ``key``, made by ``make()`` when there is none."""
    with _intern_lock:
        obj = table.get(key)
        if obj is None:
            obj = make()
            table[key] = obj
        return obj


class _Immutable:
    """Attributes are set once, by the constructor (JAX's interned classes refuse
    assignment with AttributeError ``cannot assign to field``)."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}")


def _set(obj, **attrs):
    for k, v in attrs.items():
        object.__setattr__(obj, k, v)


# ---- AxisType ----------------------------------------------------------------------------

class AxisType(enum.Enum):
    """How the compiler may use a mesh axis (``jax.sharding.AxisType``).

    ``Auto``: the compiler chooses shardings along it; ``Explicit``: shardings along it are
    part of the array's type; ``Manual``: the program handles it itself (inside
    ``shard_map``).  ``repr`` is the bare name (``Explicit``), as JAX prints it in mesh
    reprs; ``str`` is ``AxisType.Explicit``.
    """

    Auto = 1
    Explicit = 2
    Manual = 3

    def __repr__(self):
        return self.name


def _normalize_axis_types(axis_names: tuple, axis_types, who: str) -> tuple:
    if axis_types is None:
        axis_types = (AxisType.Auto,) * len(axis_names)
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,)
    if not all(isinstance(t, AxisType) for t in axis_types):
        raise TypeError(
            f"axis_types passed to {who} must be of type `jax.sharding.AxisType`. Got "
            f"{axis_types} of type {tuple(type(t) for t in axis_types)}")
    if len(axis_types) != len(axis_names):
        raise ValueError(
            f"Number of axis names should match the number of axis_types. Got "
            f"axis_names={axis_names} and axis_types={axis_types}")
    return axis_types


# ---- PartitionSpec -----------------------------------------------------------------------

class _Unconstrained:
    """``P.UNCONSTRAINED``: the compiler may shard this dimension as it likes."""

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_unconstrained, ())


UNCONSTRAINED = _Unconstrained()


def _unconstrained():
    return UNCONSTRAINED


def _canonical_entry(entry):
    """One spec entry in canonical form: lists become tuples, ``()`` and ``(None,)``
    become None, a one-name tuple becomes the name; a nested tuple is refused."""
    if isinstance(entry, (tuple, list)):
        for e in entry:
            if isinstance(e, (tuple, list)):
                raise ValueError(
                    f"A tuple inside PartitionSpec cannot contain a nested tuple. Got "
                    f"partition: {entry} and the nested tuple: {e}")
        entry = tuple(entry)
        if len(entry) == 0:
            return None
        if len(entry) == 1:
            return entry[0]
    return entry


def _entry_names(entry) -> tuple:
    """The mesh axis names of one canonical spec entry (``()`` for None/UNCONSTRAINED)."""
    if entry is None or entry is UNCONSTRAINED:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


def _as_frozenset(value, name: str) -> frozenset:
    if isinstance(value, frozenset):
        return value
    if isinstance(value, set):
        return frozenset(value)
    raise TypeError(f"{name} argument of PartitionSpec should of type `frozenset` or `set`. "
                    f"Got type {value}")


def _check_reduced(partitions, unreduced, reduced):
    for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if None in axes:
            raise ValueError(f"{what} cannot contain None. All elements in {what} should "
                             f"refer to the mesh axes.")
    if unreduced & reduced:
        raise ValueError(
            f"`unreduced` and `reduced` argument to PartitionSpec cannot overlap. Got "
            f"unreduced: {unreduced} and reduced: {reduced}")
    for entry in partitions:
        for name in (entry if isinstance(entry, tuple) else (entry,)):
            for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
                if name in axes:
                    raise ValueError(
                        f"partitions cannot overlap with {what} axes passed to "
                        f"PartitionSpec. Got partitions: {partitions} and {what} axes: "
                        f"{axes}")


_P_TABLE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class P(_Immutable):
    """How an array's dimensions split over the axes of a mesh (``jax.sharding.
    PartitionSpec``, alias ``jax.P``).

    ``P(e0, e1, ...)``: entry ``i`` says how dimension ``i`` is split: ``None`` (not
    split: every device along the mesh holds all of it), a mesh axis name (split in as
    many blocks as that axis is long), or a tuple of names (split over their product, the
    first name major).  Dimensions past the last entry are not split.  Entries are
    canonicalised: ``('x',)`` is ``'x'``, ``()`` is None, lists become tuples.

    Not a tuple (so that pytree functions treat it as a leaf) but it has ``len``,
    iteration, indexing, ``index``, ``count`` and ``+`` with tuples.  Interned: equal
    arguments give the same object, and equality is identity, as in JAX:
    ``P('x') == P(('x',))`` but ``P('x', None) != P('x')`` and ``P('x') != ('x',)``.

    Args:
      *partitions: the entries.
      unreduced, reduced: sets of mesh axis names over which the array holds unreduced
        partial sums / reduced values (JAX's explicit-sharding annotations); carried,
        printed and checked, not otherwise used by jaxlite.
    Raises:
      ValueError: a tuple entry holding a tuple; ``None`` in ``unreduced``/``reduced``; a
        name both partitioning and in ``unreduced``/``reduced``, or in both sets.
      TypeError: ``unreduced``/``reduced`` not a set or frozenset.
    """

    __slots__ = ("_partitions", "unreduced", "reduced", "__weakref__")

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        partitions = tuple(_canonical_entry(e) for e in partitions)
        unreduced = _as_frozenset(unreduced, "unreduced")
        reduced = _as_frozenset(reduced, "reduced")

        def make():
            if unreduced or reduced:
                _check_reduced(partitions, unreduced, reduced)
            obj = object.__new__(P)
            _set(obj, _partitions=partitions, unreduced=unreduced, reduced=reduced)
            return obj

        return _interned(_P_TABLE, (partitions, unreduced, reduced), make)

    def __init_subclass__(cls, *args, **kwargs):
        raise TypeError("Subclassing `jax.P` is prohibited.")

    @property
    def partitions(self) -> tuple:
        """The canonical entries, as a tuple."""
        return self._partitions

    def _check_plain(self, what: str):
        if self.unreduced or self.reduced:
            raise ValueError(f"Using {what} is dangerous when PartitionSpec has non-empty "
                             f"unreduced/reduced set. Please use "
                             f"{'*spec.partitions' if what == '*pspec' else 'spec.partitions[...]'}")

    def __getitem__(self, i):
        self._check_plain("pspec[...]")
        return self._partitions[i]

    def __iter__(self):
        self._check_plain("*pspec")
        return iter(self._partitions)

    def __len__(self):
        return len(self._partitions)

    def __repr__(self):
        inner = repr(self._partitions)[1:-1]
        if not self.unreduced and not self.reduced:
            return f"P({inner})"
        extra = []
        if self.unreduced:
            extra.append(f"unreduced={set(self.unreduced)!r}")
        if self.reduced:
            extra.append(f"reduced={set(self.reduced)!r}")
        if inner:
            inner = inner + (" " if inner.endswith(",") else ", ")
        return f"P({inner}{', '.join(extra)})"

    def __reduce__(self):
        return (_make_p, (self._partitions, self.unreduced, self.reduced))

    def __add__(self, other):
        if isinstance(other, P):
            return P(*self._partitions, *other._partitions,
                     unreduced=self.unreduced | other.unreduced,
                     reduced=self.reduced | other.reduced)
        if isinstance(other, tuple):
            self._no_sets_with_tuple(other, "__add__")
            return P(*self._partitions, *other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            self._no_sets_with_tuple(other, "__radd__")
            return P(*other, *self._partitions)
        return NotImplemented

    def _no_sets_with_tuple(self, other, op):
        for what in ("unreduced", "reduced"):
            if getattr(self, what):
                raise TypeError(f"other {other} cannot be of instance `tuple` when self "
                                f"{self} has {what} in `{op}` of PartitionSpec.")

    def index(self, value) -> int:
        """Position of the entry ``value`` (canonicalised first); ValueError if absent."""
        return self._partitions.index(_canonical_entry(value))

    def count(self, value) -> int:
        """How many entries equal ``value`` (canonicalised first)."""
        return self._partitions.count(_canonical_entry(value))

    def update(self, partitions=None, unreduced=None, reduced=None) -> "P":
        """A spec with the given parts replaced (``PartitionSpec.update``)."""
        return P(*(self._partitions if partitions is None else partitions),
                 unreduced=self.unreduced if unreduced is None else unreduced,
                 reduced=self.reduced if reduced is None else reduced)

    def _normalized(self, ndim: int) -> tuple[tuple[str, ...], ...]:
        """For an array of rank ``ndim``: one tuple of mesh axis names per dimension
        (``()`` for a dimension not split, which includes ``UNCONSTRAINED``; the first name
        of a tuple is the major one).  Raises ValueError when the spec has more entries
        than ``ndim``."""
        if len(self._partitions) > ndim:
            extra = " For scalars the PartitionSpec should be P()" if ndim == 0 else ""
            raise ValueError(
                f"PartitionSpec {self} is only valid for values of rank at least "
                f"{len(self._partitions)}, but was applied to a value of rank {ndim}.{extra}")
        names = tuple(_entry_names(e) for e in self._partitions)
        return names + ((),) * (ndim - len(names))


def _make_p(partitions, unreduced, reduced):
    return P(*partitions, unreduced=unreduced, reduced=reduced)


P.__module__ = "jaxlite"
PartitionSpec = P


# ---- meshes ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class AbstractDevice:
    """The kind of device an ``AbstractMesh`` stands for (``jax.sharding.AbstractDevice``).
    """

    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self):
        return f"AbstractDevice({self._repr()})"

    def _repr(self):
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")


class _MeshBase(_Immutable):
    """What ``Mesh`` and ``AbstractMesh`` share: names, sizes and types of the axes."""

    __slots__ = ()

    @property
    def shape(self) -> collections.OrderedDict:
        """``OrderedDict`` axis name -> size, in axis order."""
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def empty(self) -> bool:
        return self.size == 0

    def _axes_of(self, ty):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is ty)

    @property
    def auto_axes(self) -> tuple:
        return self._axes_of(AxisType.Auto)

    @property
    def explicit_axes(self) -> tuple:
        return self._axes_of(AxisType.Explicit)

    @property
    def manual_axes(self) -> tuple:
        return self._axes_of(AxisType.Manual)

    def _all(self, ty) -> bool:
        return bool(self.axis_types) and all(t is ty for t in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return self._all(AxisType.Auto)

    @property
    def are_all_axes_explicit(self) -> bool:
        return self._all(AxisType.Explicit)

    @property
    def are_all_axes_manual(self) -> bool:
        return self._all(AxisType.Manual)


_MESH_TABLE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class Mesh(_MeshBase, contextlib.ContextDecorator):
    """A grid of devices with named axes (``jax.sharding.Mesh``).

    Args:
      devices: an ndarray (or nested sequence) of Devices; its shape is the mesh's shape.
      axis_names: one name per dimension of ``devices`` (a single string for a 1-D mesh).
      axis_types: an ``AxisType`` or a tuple of one per axis; default all ``Auto``.
    Raises:
      ValueError: a None axis name; ``devices.ndim != len(axis_names)``; as many axis
        types as names missing.
      TypeError: an axis type that is not an ``AxisType``.

    Interned (equal arguments give the same object; ``==`` is identity).  ``repr`` is
    ``Mesh(axis_sizes=(4, 2), axis_names=('x', 'y'), axis_types=(Auto, Auto))``; ``str``
    is the short form ``Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto))``.  ``with mesh:``
    is JAX's deprecated legacy context (it warns); use ``set_mesh``.
    """

    __slots__ = ("devices", "axis_names", "axis_types", "size", "_flat")

    def __new__(cls, devices, axis_names, axis_types=None):
        if not isinstance(devices, np.ndarray):
            devices = np.array(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if any(n is None for n in axis_names):
            raise ValueError(f"Mesh axis names cannot be None. Got: {axis_names}")
        if devices.ndim != len(axis_names):
            raise ValueError(
                f"Mesh requires the ndim of its first argument (`devices`) to equal the "
                f"length of its second argument (`axis_names`), but got devices.ndim == "
                f"{devices.ndim} and len(axis_names) == {len(axis_names)}.")
        axis_types = _normalize_axis_types(axis_names, axis_types, "Mesh")
        flat = tuple(devices.flat)
        shape = tuple(devices.shape)
        if not axis_names and flat and flat[0] is None:
            size = 0
        else:
            size = math.prod(shape)

        def make():
            arr = np.empty(shape, dtype=object)
            if size:
                arr.reshape(-1)[:] = flat
            elif not axis_names:
                arr[()] = None
            arr.flags.writeable = False
            obj = object.__new__(Mesh)
            _set(obj, devices=arr, axis_names=axis_names, axis_types=axis_types, size=size,
                 _flat=flat)
            return obj

        key = (flat, shape, axis_names, axis_types, size)
        return _interned(_MESH_TABLE, key, make)

    def __reduce__(self):
        return (Mesh, (self.devices, self.axis_names, self.axis_types))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def is_scalar(self) -> bool:
        return self.size == 1 and not self.axis_names

    @property
    def device_ids(self) -> np.ndarray:
        """The ids of the devices, in the mesh's shape (an int ndarray)."""
        ids = np.array([d.id for d in self._flat], dtype=int)
        return ids.reshape(self.devices.shape)

    @property
    def local_devices(self) -> list:
        """The devices of this process, in mesh order."""
        from .runtime import process_index
        here = process_index()
        return [d for d in self._flat if d.process_index == here]

    @property
    def local_mesh(self) -> "Mesh":
        """The mesh of this process's devices (all of them: jaxlite runs one process).
        As in JAX, its axis types are the default ones (Auto)."""
        if len(self.local_devices) != len(self._flat):
            raise ValueError("local_mesh of a mesh spanning several processes: jaxlite "
                             "runs one process")
        return Mesh(self.devices, self.axis_names)

    @property
    def is_multi_process(self) -> bool:
        return len(self.local_devices) != self.devices.size

    @property
    def _flat_devices_tuple(self) -> tuple:
        return self._flat

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        """The ``AbstractMesh`` of the same axes, with the kind of its devices."""
        if not self.axis_names:
            return _EMPTY_ABSTRACT_MESH
        d = self._flat[0] if self._flat else None
        device = (None if d is None else
                  AbstractDevice(device_kind=d.device_kind, num_cores=None,
                                 platform=d.platform))
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=device)

    def update(self, devices=None, axis_names=None, axis_types=None) -> "Mesh":
        """A mesh with the given parts replaced."""
        return Mesh(self.devices if devices is None else devices,
                    self.axis_names if axis_names is None else axis_names,
                    self.axis_types if axis_types is None else axis_types)

    def __str__(self):
        if self.empty:
            return "Mesh()"
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({axes}, axis_types={self.axis_types})"

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types})")

    def __enter__(self):
        from ._traceback import user_stacklevel as _user_stacklevel
        warnings.warn("`with mesh:` context manager has been deprecated. Please use "
                      "`with jax.set_mesh(mesh):` instead.", DeprecationWarning,
                      stacklevel=_user_stacklevel())
        _state().legacy.append(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _state().legacy.pop()
        return False


_ABSTRACT_MESH_TABLE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _abstract_only(name):
    raise ValueError(f"AbstractMesh does not implement {name}")


class AbstractMesh(_MeshBase):
    """Axis names, sizes and types without devices (``jax.sharding.AbstractMesh``).

    Args:
      axis_sizes: a tuple of ints.
      axis_names: a tuple of names, as many.
      axis_types: as for ``Mesh`` (default all ``Auto``).
      abstract_device: an ``AbstractDevice`` or None.
    Raises:
      ValueError / TypeError: as ``Mesh`` for the axis types.  ``devices``,
      ``device_ids``, ``local_devices``, ``local_mesh`` and ``with`` raise ValueError.

    Interned.  ``repr``: ``AbstractMesh('x': 4, 'y': 2, axis_types=(Auto, Auto))``, with
    the abstract device's fields appended when there is one.
    """

    __slots__ = ("axis_sizes", "axis_names", "axis_types", "abstract_device", "size",
                 "__weakref__")

    def __new__(cls, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        axis_types = _normalize_axis_types(axis_names, axis_types, "AbstractMesh")
        if len(axis_sizes) != len(axis_names):
            raise ValueError(f"AbstractMesh: {len(axis_sizes)} axis sizes {axis_sizes} for "
                             f"{len(axis_names)} axis names {axis_names}")

        def make():
            obj = object.__new__(AbstractMesh)
            _set(obj, axis_sizes=axis_sizes, axis_names=axis_names, axis_types=axis_types,
                 abstract_device=abstract_device,
                 size=math.prod(axis_sizes) if axis_sizes else 0)
            return obj

        return _interned(_ABSTRACT_MESH_TABLE,
                         (axis_sizes, axis_names, axis_types, abstract_device), make)

    def __reduce__(self):
        return (_make_abstract_mesh, (self.axis_sizes, self.axis_names, self.axis_types,
                                      self.abstract_device))

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return self

    def update(self, axis_sizes=None, axis_names=None, axis_types=None,
               **kwargs) -> "AbstractMesh":
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, **kwargs)

    def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
        return self.update(axis_types=tuple(name_to_type.get(n, t) for n, t in
                                            zip(self.axis_names, self.axis_types)))

    def __repr__(self):
        axes = (", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)
                if self.axis_names else "()")
        dev = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({axes}, axis_types={self.axis_types}{dev})"

    devices = property(lambda self: _abstract_only("devices"))
    device_ids = property(lambda self: _abstract_only("device_ids"))
    local_devices = property(lambda self: _abstract_only("local_devices"))
    local_mesh = property(lambda self: _abstract_only("local_mesh"))
    is_multi_process = property(lambda self: _abstract_only("is_multi_process"))

    def __enter__(self):
        _abstract_only("__enter__")

    def __exit__(self, exc_type, exc_value, traceback):
        _abstract_only("__exit__")


def _make_abstract_mesh(axis_sizes, axis_names, axis_types, abstract_device):
    return AbstractMesh(axis_sizes, axis_names, axis_types, abstract_device=abstract_device)


_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())
_EMPTY_MESH = Mesh(np.empty((), dtype=object), ())


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of the given shape over the first devices (``jax.make_mesh``).

    Args:
      axis_shapes: the mesh's shape, a sequence of ints, e.g. ``(4, 2)``.
      axis_names: one name per axis, e.g. ``('x', 'y')``.
      axis_types: an ``AxisType`` or a tuple of them; default all ``Explicit``.
      devices: the devices to use (default ``jaxlite.devices()``); the first
        ``prod(axis_shapes)`` of them fill the mesh in row-major order (JAX's order on
        CPU).
    Returns:
      A ``Mesh``.
    Raises:
      ValueError: ``axis_shapes`` not a sequence of ints; more devices needed than
        given; as many names (or types) as axes missing.

    >>> make_mesh((4, 2), ('x', 'y'))   # with 8 devices
    Mesh(axis_sizes=(4, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))
    """
    if devices is None:
        from .runtime import devices as all_devices
        devices = all_devices()
    try:
        shape = tuple(int(s) for s in axis_shapes)
    except (TypeError, ValueError):
        raise ValueError(f"`axis_shapes` passed to `make_mesh` should be a sequence of "
                         f"ints. Got {axis_shapes}") from None
    devices = list(devices)
    n = math.prod(shape)
    if n > len(devices):
        raise ValueError(f"Number of devices {len(devices)} must be >= the product of "
                         f"mesh_shape {shape}")
    grid = np.empty(n, dtype=object)
    grid[:] = devices[:n]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(shape)
    return Mesh(grid.reshape(shape), axis_names, axis_types=axis_types)


# ---- the current mesh --------------------------------------------------------------------

class _State(threading.local):
    def __init__(self):
        self.mesh = _EMPTY_MESH
        self.abstract = _EMPTY_ABSTRACT_MESH
        self.legacy = []


_local = _State()


def _state() -> _State:
    return _local


def _tracing() -> bool:
    from .core.trace import is_tracing
    return is_tracing()


class set_mesh:
    """Sets the current mesh of this thread (``jax.set_mesh``): as a plain call it stays
    set; as ``with set_mesh(mesh):`` the previous one comes back at the end (``as``
    binds None, as in JAX).  ``set_mesh(None)`` clears it.

    Args:
      mesh: a ``Mesh`` (not an ``AbstractMesh``) or None.
    Raises:
      ValueError: anything else; a mesh with ``Manual`` axes; called under a
        transformation (``jit``...).
    """

    __slots__ = ("prev_abstract_mesh", "prev_mesh")

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        if _tracing():
            raise ValueError("`set_mesh` can only be used outside of `jax.jit`.")
        if mesh is not None and mesh.manual_axes:
            raise ValueError(
                f"mesh {mesh} contains manual axes which is not allowed when using "
                f"`jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` mode "
                f"instead.")
        st = _state()
        self.prev_abstract_mesh, self.prev_mesh = st.abstract, st.mesh
        st.abstract = _EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh
        st.mesh = _EMPTY_MESH if mesh is None else mesh
        from .core.sharded import mesh_context
        mesh_context.mesh = None if mesh is None or mesh.empty else mesh

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        st = _state()
        st.abstract, st.mesh = self.prev_abstract_mesh, self.prev_mesh
        from .core.sharded import mesh_context
        mesh_context.mesh = None if st.mesh.empty else st.mesh


def get_mesh() -> Mesh:
    """The mesh ``set_mesh`` set in this thread; the empty ``Mesh()`` when none
    (``jax.sharding.get_mesh``).  Raises ValueError under a transformation."""
    if _tracing():
        raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                         "`jax.sharding.get_abstract_mesh()`?")
    return _state().mesh


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh of this thread (set by ``set_mesh`` or ``use_abstract_mesh``);
    the empty one when none (``jax.sharding.get_abstract_mesh``)."""
    return _state().abstract


class use_abstract_mesh:
    """``with use_abstract_mesh(abstract_mesh):`` sets this thread's abstract mesh
    (``jax.sharding.use_abstract_mesh``).  Raises ValueError for anything but an
    ``AbstractMesh``, and on entry when it changes the size of a non-empty current one."""

    __slots__ = ("mesh", "prev")

    def __init__(self, mesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                             f"{type(mesh)}")
        self.mesh = mesh

    def __enter__(self):
        st = _state()
        prev = st.abstract
        if not prev.empty and not self.mesh.empty and prev.size != self.mesh.size:
            raise ValueError(
                f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                f"{self.mesh} with size={self.mesh.size} and prev mesh: {prev} with "
                f"size={prev.size}")
        self.prev = prev
        st.abstract = self.mesh

    def __exit__(self, exc_type, exc_value, traceback):
        _state().abstract = self.prev


# ---- shardings ---------------------------------------------------------------------------

class IndivisibleError(ValueError):
    """A dimension that the mesh axes splitting it do not divide evenly."""


class DuplicateSpecError(Exception):
    """A mesh axis used by more than one dimension of a PartitionSpec (an ``Exception``,
    not a ValueError, as in JAX)."""

    def __init__(self, message, mesh=None, pspec=None):
        super().__init__(message)
        self.message = message
        self.mesh = mesh
        self.pspec = pspec

    def __str__(self):
        return self.message


def _shape_tuple(global_shape) -> tuple:
    return tuple(int(s) for s in global_shape)


class Sharding:
    """Base of all shardings (``jax.sharding.Sharding``).

    A subclass gives ``device_set``, ``_device_assignment`` (its devices in order) and
    ``_tiling(ndim)``: the number of blocks of each dimension and, per device of
    ``_device_assignment``, the block index along each dimension; the rest is derived.
    """

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError

    def _tiling(self, ndim: int) -> tuple:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        return self.device_set

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def memory_kind(self):
        return None

    def shard_shape(self, global_shape) -> tuple:
        """The shape of the block each device holds of an array of ``global_shape``.

        Raises:
          IndivisibleError (a ValueError): a dimension its blocks do not divide evenly.
          ValueError: a spec with more entries than ``len(global_shape)``.
        """
        shape = _shape_tuple(global_shape)
        counts, _ = self._tiling(len(shape))
        out = []
        for dim, (s, c) in enumerate(zip(shape, counts)):
            q, r = divmod(s, c)
            if r:
                raise IndivisibleError(
                    f"Sharding {self} implies that array axis {dim} is partitioned {c} "
                    f"times, but the dimension size is {s} (full shape: {shape}, "
                    f"per-dimension tiling factors: {list(counts)} should evenly divide the "
                    f"shape)")
            out.append(q)
        return tuple(out)

    def devices_indices_map(self, global_shape) -> dict:
        """``{device: index}`` for an array of ``global_shape``: the tuple of slices of the
        global array each device holds (``slice(None)`` for a dimension not split), in
        ``_device_assignment`` order.  Raises as ``shard_shape``."""
        shape = _shape_tuple(global_shape)
        block = self.shard_shape(shape)
        counts, coords = self._tiling(len(shape))
        out = {}
        for dev, coord in zip(self._device_assignment, coords):
            out[dev] = tuple(slice(None) if c == 1 else slice(k * b, (k + 1) * b)
                             for c, k, b in zip(counts, coord, block))
        return out

    def addressable_devices_indices_map(self, global_shape) -> dict:
        """``devices_indices_map`` restricted to this process's devices (all of them)."""
        addressable = self.addressable_devices
        return {d: i for d, i in self.devices_indices_map(global_shape).items()
                if d in addressable}

    def is_equivalent_to(self, other, ndim: int) -> bool:
        """Whether ``self`` and ``other`` place the same blocks of an array of rank ``ndim``
        on the same devices, with the same memory kind and device order."""
        same_blocks = self._tiling(ndim) == other._tiling(ndim)
        return (same_blocks and self.memory_kind == other.memory_kind
                and tuple(self._device_assignment) == tuple(other._device_assignment))


class SingleDeviceSharding(Sharding):
    """The whole array on one device (``jax.sharding.SingleDeviceSharding``).

    Args:
      device: the Device.
      memory_kind: the memory space; ``'device'`` (the default, and the only one).
    Raises:
      ValueError: an unknown memory kind.
    """

    def __init__(self, device, *, memory_kind: str | None = None):
        if memory_kind not in (None, "device"):
            raise ValueError(f"Could not find memory addressable by device {device!r}: "
                             f"memory_kind={memory_kind!r}; the only memory kind is 'device'.")
        self._device = device
        self._memory_kind = "device"

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def _device_assignment(self) -> tuple:
        return (self._device,)

    def _tiling(self, ndim: int) -> tuple:
        return (1,) * ndim, ((0,) * ndim,)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def with_memory_kind(self, kind: str) -> "SingleDeviceSharding":
        return SingleDeviceSharding(self._device, memory_kind=kind)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(self._device)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    """``SingleDeviceSharding(device, memory_kind=memory_kind)``
    (``jax.sharding.make_single_device_sharding``)."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def _check_spec(mesh, spec: P) -> None:
    """JAX's checks of a NamedSharding's spec against its mesh, in JAX's order."""
    counts: dict = {}
    for entry in spec.partitions:
        for name in _entry_names(entry):
            counts[name] = counts.get(name, 0) + 1
    dups = [n for n, c in counts.items() if c > 1]
    if dups:
        shown = ", ".join(f"`{n}`" for n in dups)
        raise DuplicateSpecError(
            f"A single NamedSharding spec specification can map every mesh axis to at most "
            f"one positional dimension, but {spec} has duplicate entries for {shown}",
            mesh=mesh, pspec=spec)
    for entry in spec.partitions:
        for name in _entry_names(entry):
            if name not in mesh.axis_names:
                raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                                 f"{tuple(mesh.shape.keys())}.")
    if AxisType.Auto not in mesh.axis_types and UNCONSTRAINED in spec.partitions:
        raise ValueError(f"{spec} cannot contain `P.UNCONSTRAINED` when no mesh axis_types "
                         f"are `Auto`. Got mesh axis_types: {mesh.axis_types}")
    for what, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
        for name in axes:
            if name not in mesh.axis_names:
                raise ValueError(f"{what} axes {name} is not found in "
                                 f"mesh.axis_names={mesh.axis_names}. Got pspec={spec}")
            if dict(zip(mesh.axis_names, mesh.axis_types))[name] is not AxisType.Explicit:
                raise ValueError(
                    f"{what} axes can only refer to mesh axes that is of type `Explicit`. "
                    f"Got {what.lower()} axes: {axes} and mesh: {mesh}")


class NamedSharding(Sharding):
    """An array split over a mesh by a PartitionSpec (``jax.sharding.NamedSharding``).

    Dimension ``i`` of an array is cut into as many equal blocks as the product of the
    sizes of the mesh axes named by ``spec[i]`` (the first name major); the device at
    mesh coordinate ``c`` holds, along that dimension, the block numbered by ``c`` over
    those axes.  Mesh axes no entry names replicate the blocks.

    Args:
      mesh: a ``Mesh`` (or an ``AbstractMesh``: then nothing about devices is known).
      spec: a ``PartitionSpec``.
      memory_kind: None or ``'device'`` (jaxlite devices have one memory); a concrete
        mesh's sharding reports ``'device'``, an abstract one's None.
    Raises:
      DuplicateSpecError (an Exception): a mesh axis named by two entries.
      ValueError: a name not in the mesh; ``P.UNCONSTRAINED`` with no ``Auto`` axis;
        unreduced/reduced axes not in the mesh or not ``Explicit``; another memory kind.
      AttributeError: ``spec`` not a PartitionSpec (a plain tuple: as JAX).
      TypeError: ``spec`` None.

    Equal (and hashing alike) when mesh, spec and memory kind are the same.
    ``repr``: ``NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit)),
    spec=P('x', None), memory_kind=device)``.
    """

    def __init__(self, mesh, spec, *, memory_kind: str | None = None):
        if spec is None:
            raise TypeError("NamedSharding: spec must be a jax.sharding.PartitionSpec, got "
                            "None")
        if not isinstance(spec, P):
            raise AttributeError(
                f"'{type(spec).__name__}' object has no attribute 'partitions': "
                f"NamedSharding's spec must be a jax.sharding.PartitionSpec (P(...)), got "
                f"{spec!r}")
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise AttributeError(
                f"'{type(mesh).__name__}' object has no attribute 'size': NamedSharding's "
                f"mesh must be a jax.sharding.Mesh or AbstractMesh, got {mesh!r}")
        concrete = isinstance(mesh, Mesh)
        if memory_kind not in (None, "device"):
            where = f"device {mesh._flat[0].platform}" if concrete and mesh._flat else "mesh"
            raise ValueError(
                f"Could not find memory addressable by {where}. jaxlite devices have one "
                f"memory kind: device. Got memory kind: {memory_kind}")
        _check_spec(mesh, spec)
        self._mesh = mesh
        self._spec = spec
        self._memory_kind = "device" if concrete else memory_kind
        self._hash = None

    mesh = property(lambda self: self._mesh, doc="The Mesh (or AbstractMesh).")
    spec = property(lambda self: self._spec, doc="The PartitionSpec.")

    @property
    def memory_kind(self):
        return self._memory_kind

    def _concrete(self, what: str) -> Mesh:
        if isinstance(self._mesh, AbstractMesh):
            raise ValueError(f"{what} is not implemented for `jax.sharding.AbstractMesh`.")
        return self._mesh

    @property
    def num_devices(self) -> int:
        return self._mesh.size

    @property
    def device_set(self) -> set:
        return set(self._concrete("device_set")._flat)

    @property
    def _device_assignment(self) -> tuple:
        """The mesh's devices in row-major mesh order (``tuple(mesh.devices.flat)``)."""
        return self._concrete("_device_assignment")._flat

    @property
    def addressable_devices(self) -> set:
        return set(self._concrete("addressable_devices").local_devices)

    @property
    def is_fully_addressable(self) -> bool:
        mesh = self._concrete("is_fully_addressable")
        return len(mesh.local_devices) == len(mesh._flat)

    @property
    def is_fully_replicated(self) -> bool:
        """True when every device holds the whole array."""
        if self._mesh.size == 1:
            return True
        if self._spec.unreduced:
            return False
        sizes = self._mesh.shape
        return math.prod(sizes[n] for e in self._spec.partitions
                         for n in _entry_names(e)) == 1

    def check_compatible_aval(self, aval_shape) -> None:
        """Raises ValueError when the spec has more entries than ``len(aval_shape)``."""
        if len(aval_shape) < len(self._spec):
            extra = " For scalars the PartitionSpec should be P()" if not aval_shape else ""
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least "
                f"{len(self._spec)}, but was applied to a value of rank "
                f"{len(aval_shape)}.{extra}")

    def _tiling(self, ndim: int) -> tuple:
        sizes = self._mesh.shape
        names = [_entry_names(e) for e in self._spec.partitions]
        # as JAX, entries past the rank are allowed when they split nothing
        if any(math.prod(sizes[n] for n in dim) != 1 for dim in names[ndim:]):
            self.check_compatible_aval((0,) * ndim)
        names = tuple(names[:ndim]) + ((),) * (ndim - len(names))
        counts = tuple(math.prod(sizes[n] for n in dim) for dim in names)
        if isinstance(self._mesh, AbstractMesh):
            return counts, ()
        pos = {n: i for i, n in enumerate(self._mesh.axis_names)}
        coords = []
        for c in np.ndindex(*self._mesh.axis_sizes):
            coord = []
            for dim in names:
                k = 0
                for n in dim:       # the first name of an entry is the major digit
                    k = k * sizes[n] + c[pos[n]]
                coord.append(k)
            coords.append(tuple(coord))
        return counts, tuple(coords)

    def devices_indices_map(self, global_shape) -> dict:
        self._concrete("_device_assignment")
        if self._spec.unreduced:
            self.shard_shape(global_shape)
            raise NotImplementedError("device_indices_map doesn't work with unreduced.")
        return super().devices_indices_map(global_shape)

    def is_equivalent_to(self, other, ndim: int) -> bool:
        if isinstance(self._mesh, AbstractMesh) and isinstance(
                getattr(other, "mesh", None), AbstractMesh):
            return (self.memory_kind == other.memory_kind
                    and self._tiling(ndim)[0] == other._tiling(ndim)[0]
                    and self._mesh.axis_sizes == other.mesh.axis_sizes
                    and self._spec._normalized(ndim) == other.spec._normalized(ndim))
        return super().is_equivalent_to(other, ndim)

    def update(self, **kwargs) -> "NamedSharding":
        """A NamedSharding with ``mesh``, ``spec`` (a P or a tuple of entries) or
        ``memory_kind`` replaced."""
        spec = kwargs.pop("spec", self._spec)
        if not isinstance(spec, P):
            spec = P(*spec)
        mesh = kwargs.pop("mesh", self._mesh)
        memory_kind = kwargs.pop("memory_kind", self._memory_kind)
        if kwargs:
            raise TypeError(f"NamedSharding.update: unexpected arguments {sorted(kwargs)}")
        return NamedSharding(mesh, spec, memory_kind=memory_kind)

    def with_memory_kind(self, kind: str) -> "NamedSharding":
        """The same sharding in memory ``kind`` (only ``'device'`` exists)."""
        return self.update(memory_kind=kind)

    def __eq__(self, other):
        if not isinstance(other, NamedSharding):
            return False
        return (self is other or
                (self._spec is other._spec and self._memory_kind == other._memory_kind
                 and self._mesh is other._mesh))

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self._mesh, self._memory_kind, self._spec))
        return self._hash

    def __reduce__(self):
        return (_make_named_sharding, (self._mesh, self._spec, self._memory_kind))

    def __repr__(self):
        mem = "" if self._memory_kind is None else f", memory_kind={self._memory_kind}"
        return f"NamedSharding(mesh={self._mesh}, spec={self._spec}{mem})"


def _make_named_sharding(mesh, spec, memory_kind):
    return NamedSharding(mesh, spec, memory_kind=memory_kind)


NamedSharding.__module__ = "jaxlite.sharding"


def reshard(xs, out_shardings):
    """Moves ``xs`` to ``out_shardings`` (``jax.sharding.reshard``); see
    ``jaxlite.lax._sharding_constraints.reshard`` for the arguments and errors."""
    from .lax._sharding_constraints import reshard as _reshard
    return _reshard(xs, out_shardings)


# ---- switching the axis types of a region: auto_axes / explicit_axes -------------------

class ManualAxisType:
    """How a value inside ``shard_map`` relates to its Manual mesh axes
    (``jax.sharding.ManualAxisType``): the axes along which it ``varying`` (differs from
    device to device), ``unreduced`` (holds partial sums still to be added up) or
    ``reduced`` (was summed over).  Interned and immutable: equal arguments give the very
    same object.

    Args (keyword-only): ``varying``, ``unreduced``, ``reduced``: sets of axis names.
    Raises:
      ValueError: ``varying`` sharing an axis with ``unreduced`` or ``reduced``.
    """

    __slots__ = ("varying", "unreduced", "reduced", "__weakref__")
    _table: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        varying, unreduced, reduced = map(frozenset, (varying, unreduced, reduced))
        for name, other in (("unreduced", unreduced), ("reduced", reduced)):
            if varying & other:
                raise ValueError(f"varying and {name} cannot have common mesh axes. Got "
                                 f"varying={varying} and {name}={other}")

        def make():
            obj = object.__new__(cls)
            for k, v in (("varying", varying), ("unreduced", unreduced),
                         ("reduced", reduced)):
                object.__setattr__(obj, k, v)
            return obj
        return _interned(cls._table, (varying, unreduced, reduced), make)

    def __setattr__(self, name, value):
        raise AttributeError(f"ManualAxisType is immutable; cannot set {name!r}")

    def __reduce__(self):
        return (_make_manual_axis_type, (self.varying, self.unreduced, self.reduced))

    def __repr__(self):
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")

    def update(self, **kwargs) -> "ManualAxisType":
        """This type with the given fields (``varying``/``unreduced``/``reduced``)
        replaced."""
        fields = {"varying": self.varying, "unreduced": self.unreduced,
                  "reduced": self.reduced}
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"ManualAxisType.update: unexpected arguments {sorted(unknown)}")
        fields.update(kwargs)
        return ManualAxisType(**fields)

    def to_ct_mat(self) -> "ManualAxisType":
        """The type of a cotangent of a value of this type: unreduced and reduced swap."""
        return self.update(unreduced=self.reduced, reduced=self.unreduced)

    @property
    def empty(self) -> bool:
        """Whether no axis is varying, unreduced or reduced."""
        return not (self.varying or self.unreduced or self.reduced)

    @property
    def vur(self) -> frozenset:
        """The axes that are varying, unreduced or reduced."""
        return self.varying | self.unreduced | self.reduced

    def invarying(self, mesh) -> frozenset:
        """The Manual axes of ``mesh`` along which the value is the same everywhere."""
        return frozenset(mesh.manual_axes) - self.vur


def _make_manual_axis_type(varying, unreduced, reduced):
    return ManualAxisType(varying=varying, unreduced=unreduced, reduced=reduced)


def _region_mesh(axes, axis_type, who: str, shardings=None):
    """``(mesh, switched axes)`` for running a region of
    ``who`` with ``axes`` (None: all) switched to ``axis_type``: the mesh of the
    NamedShardings in ``shardings`` or else the current one (``set_mesh``); None when
    there is neither.  Raises ValueError for shardings on several meshes or on another
    mesh than the current one, KeyError for an axis the mesh lacks, NotImplementedError
    for a Manual axis."""
    from .tree_util import tree_leaves
    cur = _state().abstract
    own = None
    for s in tree_leaves(shardings):
        if isinstance(s, NamedSharding):
            if own is not None and own.abstract_mesh is not s.mesh.abstract_mesh:
                raise ValueError(f"Shardings passed to {who} should have the same mesh. "
                                 f"Got one mesh {own.abstract_mesh} and another {s.mesh}")
            own = s.mesh
    if own is None and cur.empty:
        return None
    if own is not None and not cur.empty and own.abstract_mesh is not cur:
        raise ValueError(f"Context mesh {cur} must match the mesh passed to shardings "
                         f"{own.abstract_mesh}. Recommended approach is to use "
                         f"`jax.set_mesh` context manager.")
    mesh = own if own is not None else (_state().mesh if not _state().mesh.empty else cur)
    axes = mesh.axis_names if axes is None else (axes if isinstance(axes, tuple)
                                                 else (axes,))
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    for a in axes:
        if a not in types:
            raise KeyError(a)
        if types[a] is AxisType.Manual:
            raise NotImplementedError(
                f"{who}: going from a `Manual` axis ({a!r}) to `{axis_type}` is not "
                f"allowed (as in JAX).")
    return mesh, tuple(axes)


def _without_axes(spec: "P", drop) -> "P":
    """``spec`` with the mesh axes ``drop`` removed from every entry."""
    parts = []
    for e in spec.partitions:
        kept = tuple(n for n in _entry_names(e) if n not in drop)
        parts.append(None if not kept else (kept[0] if len(kept) == 1 else kept))
    return P(*parts, unreduced=spec.unreduced - set(drop), reduced=spec.reduced - set(drop))


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """Runs ``f`` with mesh ``axes`` (a name, a tuple of names, or None: all) of Auto type
    (``jax.sharding.auto_axes``): inside it the arguments are not sharded along them (as
    typed by JAX: each argument is first resharded with those axes dropped from its spec)
    and ``get_abstract_mesh()`` shows them Auto, so operations that Explicit sharding
    refuses (an ambiguous reshape, a constraint naming them) can run there; the result is
    then resharded to ``out_sharding``.  Usable as ``auto_axes(f, out_sharding=...)`` or
    as a decorator (``@auto_axes``, ``@auto_axes(axes='x', out_sharding=...)``); without
    ``out_sharding`` here, each call must pass ``out_sharding=`` as a keyword.

    Args:
      f: the function (positional only).
      axes: the mesh axes to switch; None for every axis of the mesh.
      out_sharding: a NamedSharding or PartitionSpec (over the mesh of ``set_mesh``), or
        a pytree prefix of ``f``'s result of these.
    Returns:
      the wrapped function; its results have ``f``'s values, dtypes and shapes, placed by
      ``out_sharding``.  With no mesh anywhere (no ``set_mesh``, no NamedSharding in
      ``out_sharding``) it just calls ``f``.
    Raises (when called):
      TypeError: no ``out_sharding`` given.
      ValueError: ``out_sharding`` on another mesh than the current one or on several;
        those of ``reshard`` (an Auto or Manual axis named in ``out_sharding``...).
      KeyError: an axis the mesh lacks.
      NotImplementedError: a Manual axis in ``axes`` (as JAX).
    """
    if f is None:
        return lambda g: _auto_axes(g, axes, out_sharding)
    return _auto_axes(f, axes, out_sharding)


def _region_sharding(given, kwargs: dict, name: str):
    """The sharding of an ``auto_axes``/``explicit_axes`` region: the one given when it
    was made, else the call's keyword ``name`` (taken out of ``kwargs``); TypeError when
    neither is."""
    if given is not None:
        return given
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def _auto_axes(fun, axes, out_sharding):
    import functools

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        target = _region_sharding(out_sharding, kwargs, "out_sharding")
        info = _region_mesh(axes, AxisType.Auto, "auto_axes", target)
        if info is None:
            return fun(*args, **kwargs)
        mesh, names = info
        if set(mesh.auto_axes) == set(names):       # nothing to switch
            return fun(*args, **kwargs)
        args = _drop_axes(args, mesh, names)
        inside = mesh.abstract_mesh.update_axis_types(
            {n: AxisType.Auto for n in names})
        with use_abstract_mesh(inside):
            out = fun(*args, **kwargs)
        return reshard(out, target)
    return wrapper


def _drop_axes(tree, mesh, names):
    """Each array leaf of ``tree`` sharded over ``mesh`` resharded with the mesh axes
    ``names`` dropped from its sharding type (others returned as they are)."""
    from .lax._introspect import typeof
    from .tree_util import tree_map

    def drop(x):
        try:
            sh = getattr(typeof(x), "sharding", None)
        except TypeError:
            return x
        if not isinstance(sh, NamedSharding) or sh.mesh.abstract_mesh is not \
                mesh.abstract_mesh or not any(n in names for e in sh.spec.partitions
                                              for n in _entry_names(e)):
            return x
        return reshard(x, NamedSharding(mesh, _without_axes(sh.spec, names)))
    return tree_map(drop, tree)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """Runs ``f`` with mesh ``axes`` (a name, a tuple of names, or None: all) of Explicit
    type (``jax.sharding.explicit_axes``), its arguments resharded to ``in_sharding``.
    Usable as ``explicit_axes(f, in_sharding=...)`` or as a decorator; without
    ``in_sharding`` here, each call must pass ``in_sharding=`` as a keyword.

    Only the checks JAX makes before switching are implemented: switching axes to
    Explicit inside a program whose mesh has them Auto needs JAX's typing of a region
    (jaxlite types a whole program by its mesh), so a call that would switch raises
    NotImplementedError; where every axis to switch already is Explicit, ``f`` runs on
    its arguments resharded to ``in_sharding``.

    Raises (when called):
      TypeError: no ``in_sharding`` given.
      ValueError: no current mesh (``set_mesh``).
      KeyError: an axis the mesh lacks.
      NotImplementedError: an axis to switch is Auto (see above) or Manual.
    """
    if f is None:
        return lambda g: _explicit_axes(g, axes, in_sharding)
    return _explicit_axes(f, axes, in_sharding)


def _explicit_axes(fun, axes, in_sharding):
    import functools

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        target = _region_sharding(in_sharding, kwargs, "in_sharding")
        info = _region_mesh(axes, AxisType.Explicit, "explicit_axes")
        if info is None:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API "
                             "to enter into a mesh context when using `explicit_axes` API.")
        mesh, names = info
        types = dict(zip(mesh.axis_names, mesh.axis_types))
        auto = [n for n in names if types[n] is not AxisType.Explicit]
        if auto:
            raise NotImplementedError(
                f"explicit_axes: switching the Auto mesh axes {auto} to Explicit inside a "
                f"program is not implemented in jaxlite (it types a whole program by its "
                f"mesh's axis types); make the mesh Explicit (make_mesh(..., axis_types="
                f"(AxisType.Explicit, ...))) and use reshard instead.")
        return fun(*reshard(args, target), **kwargs)
    return wrapper
