"""The Backend contract: what a platform provides, and the registry of platforms.

Layer: runtime.  Each platform (``'cpu'``, a GPU, a test's simulated device) registers one
``Backend`` object with ``register``; its devices hold it (``device.backend``), and every
layer above reaches the platform through the device it works on:

- the allocator: ``from_host``, ``to_host``, ``copy`` (between two of its devices),
  ``allocate`` and ``free``.  A backend's buffers are its own objects (*native* values:
  host NumPy arrays for the CPU, anything for another platform); the runtime wraps each
  in a ``Buffer`` that charges its bytes (``nbytes``) to the device's ``memory_stats``
  when it is created and gives them back when it is freed, so every byte a live Array
  holds is reported, whatever the platform;
- ``execute(prim, vals, params, device, out_aval)``: eager execution of one primitive on
  native values;
- ``compile(program, devices, name)``: an executable whose ``run`` takes and returns
  native values (the program is the compiler's optimised ClosedJaxpr; the runtime never
  looks inside it);
- ``run_compiled(compiled, args, placement)``: one call of a jitted program on its
  arguments, placed as ``jit`` decided (a ``Placement``): operands to native values, the
  run, the temporaries' accounting and the outputs as Arrays.  ``jit`` traces, caches,
  chooses the placement and makes this one call; how the program runs (a worker thread,
  donation into outputs, several devices) is the platform's.  The default (core/run.py)
  covers one device of a platform whose memory is not host memory, and calls over a mesh
  run as the compiler's SPMD partition expanded over its devices;
- what it supports: ``dtypes`` (None: every dtype) and ``native_primitives`` (the
  primitives it has native code for; the others it runs another way, e.g. through their
  NumPy reference implementation).

``host_memory = True`` declares that the native values are host NumPy arrays the host
reads directly (the CPU): reading them to the host copies nothing, the device-to-host
transfer guard does not apply, and the eager hot paths run a primitive's reference
implementation on them without a call into the backend (``execute`` of such a backend
must be exactly that).  Any other backend is reached through its methods only.

Registering is the whole of adding a platform: ``jaxlite.devices('name')``,
``jaxlite.local_devices``, ``device_put`` onto its devices, eager operations, ``jit``,
``grad`` and ``vmap`` on its arrays then work.  ``default_backend()`` is the first platform
of ``jax_platforms``, else the registered one of highest ``priority``; every platform
``jax_platforms`` names must be registered (``requested_platforms``).
"""
from __future__ import annotations

import abc

import numpy as np


class Backend(abc.ABC):
    """One platform's implementation (subclass it; mirrors the role of an XLA client).

    Class attributes:
      platform: the platform's name (``'cpu'``); ``Device.platform`` of its devices.
      host_memory: True when native values are host NumPy arrays (see module docstring).
      priority: higher wins ``default_backend()`` (the CPU has 0).
      dtypes: frozenset of NumPy dtypes it can hold, or None for all.
      native_primitives: frozenset of primitive names it has native code for.

    A subclass must provide ``make_devices``, ``from_host``, ``to_host``, ``execute`` and
    ``compile`` (instantiating one that lacks any raises TypeError naming it); ``copy``
    and ``allocate`` default to going through the host, ``free`` to nothing.
    """

    platform = "?"
    host_memory = False
    priority = -1
    dtypes = None
    native_primitives = frozenset()
    # whether programs given to ``compile`` may hold the compiler's fused kernels (False:
    # the platform's own compiler fuses, e.g. XLA through PJRT)
    fusion = True
    # whether ``to_host`` returns a new array nobody else holds (a copy out of device
    # memory), which a reader may keep without copying it again
    to_host_is_fresh = False

    def __init__(self):
        self._devices = None

    # ---- devices --------------------------------------------------------------------------
    @abc.abstractmethod
    def make_devices(self) -> list:
        """Creates this platform's Device objects (called once, on first use); each must
        be a ``runtime.device.Device`` whose ``backend`` is ``self``."""

    def devices(self) -> list:
        """This platform's devices, ordered by id (created on the first call)."""
        devs = self._devices
        if devs is None:
            devs = self._devices = list(self.make_devices())
            for d in devs:
                if d.backend is not self:
                    raise ValueError(f"{type(self).__name__}.make_devices returned {d!r}, "
                                     f"whose backend is not this backend")
        return devs

    # ---- allocator --------------------------------------------------------------------------
    def nbytes(self, native) -> int:
        """Bytes ``native`` occupies on its device (charged to ``memory_stats``)."""
        return native.nbytes

    @abc.abstractmethod
    def from_host(self, array: np.ndarray, device):
        """A native copy of the C-contiguous host array ``array`` on ``device``
        (``array`` may be the caller's own: keep no reference to it once returned)."""

    @abc.abstractmethod
    def to_host(self, native, device) -> np.ndarray:
        """The values of ``native`` (on ``device``) as a host NumPy array; may be a view
        the caller must not write to."""

    def copy(self, native, src, dst):
        """A native copy of ``native`` (on device ``src``) on device ``dst``, both of this
        platform (``src is dst`` for a copy on one device).  Default: through the host
        (``to_host`` then ``from_host``); a platform with a direct copy overrides it."""
        return self.from_host(np.asarray(self.to_host(native, src), order="C"), dst)

    def allocate(self, shape: tuple, dtype, device):
        """A native buffer of ``shape``/``dtype`` on ``device`` with arbitrary contents.
        Default: ``from_host`` of an uninitialised host array."""
        return self.from_host(np.empty(shape, dtype), device)

    def free(self, native, device) -> None:
        """Called once when the Buffer holding ``native`` is deleted or collected (after
        its bytes left the device's accounting).  Default: nothing to do."""

    def block_until_ready(self, native, device) -> None:
        """Waits until ``native``'s values (on ``device``) are computed (a platform whose
        results come back before they are computed raises the computation's error here).
        Default: nothing to wait for."""

    # ---- execution --------------------------------------------------------------------------
    @abc.abstractmethod
    def execute(self, prim, vals: list, params: dict, device, out_aval):
        """Runs primitive ``prim`` on native values ``vals`` with ``params`` on ``device``;
        returns a native value of abstract value ``out_aval`` (shape, dtype; for a
        multiple-results primitive ``out_aval`` is a list and so is the result).  The
        operands live on ``device``; a Python or NumPy scalar operand arrives as a NumPy
        scalar of its canonical dtype, a 0-d NumPy array as itself (constants of the
        operation).  Primitives carrying programs (scan, while, cond, jit ...) have their
        NumPy reference implementation (``prim.impl``) like every other."""

    @abc.abstractmethod
    def compile(self, program, devices: list, name: str):
        """An executable for the optimised ClosedJaxpr ``program`` on ``devices``: it has
        ``run(native_values) -> native_values`` (operands as for ``execute``),
        ``in_avals``, ``out_avals``,
        ``temp_bytes`` (bytes of temporaries, charged while it runs), ``as_text()`` and
        ``backend`` (a name for printing)."""

    def run_compiled(self, compiled, args: list, placement: "Placement") -> list:
        """Runs the jitted program ``compiled`` once on ``args`` (the call's flat
        arguments: Arrays, NumPy values, Python scalars) as ``placement`` says, and returns
        its flat outputs as Arrays (on ``placement.device``, or sharded as
        ``placement.out_shardings`` says).

        ``compiled`` is jit's compiled stage: ``compiled._program`` holds the compiler's
        program (``executable``, the default platform's executable, and
        ``executable_for(device)``), ``compiled._fun_name`` names it; a platform may keep
        per-program facts in ``compiled.__dict__``.

        Default, on one device whose memory is not host memory: the operands as the
        backend's native values (arguments elsewhere copied as counted implicit
        transfers, freed after the run), the executable run synchronously with its
        temporaries charged to the device, each output wrapped as an Array.  Donation is
        accepted and ignored there (the arguments stay valid, as JAX does where a
        platform cannot alias); a platform that aliases overrides this.  Over a mesh (a
        placement with ``out_shardings``): the partitioned program ``placement.spmd``
        builds, run on the arguments' global values (or on this process's shards when
        the mesh spans several processes), or the program run once on one device, its
        outputs placed by their shardings.  A platform that partitions programs itself
        (XLA through PJRT) overrides this for such placements.

        Raises JaxRuntimeError (RESOURCE_EXHAUSTED) naming ``placement.what`` when an
        allocation fails, and whatever the executable raises.
        """
        return _DEFAULT_RUN(self, compiled, args, placement)

    def clear_caches(self) -> None:
        """Drops what this platform compiled and keeps in memory for reuse (eager
        operations' executables, constants on its devices): ``jaxlite.clear_caches``
        calls it.  Default: nothing kept."""
        return None

    def fast_launcher(self, program, device, committed: bool):
        """A launcher for jit's cached-call fast path on ``device``, a device of this
        platform whose memory is not host memory (host-memory platforms have theirs in
        jit), or None (the default: every call takes ``run_compiled``).

        ``program`` is a compiled program (``compiled._program``) that just ran on
        ``device`` with Array arguments only, no donation and no sharding; the launcher
        is ``launch(args) -> list | None``: ``args`` are the call's Arrays (the same
        avals, committed as before), its result the outputs as Arrays, placed and
        committed as ``run_compiled`` would.  It returns None, having done nothing, when
        the call needs the full path (an argument on another device or deleted, a check
        to run): that path then raises or transfers exactly as always."""
        return None

    def lowered_text(self, program, name: str):
        """The traced ClosedJaxpr ``program`` in the form this platform's compiler takes
        (StableHLO text for a PJRT platform), for ``jit(f).lower(x).as_text()``; None: the
        platform compiles jaxlite's IR itself (the CPU), which then is what is shown."""
        return None

    def supports_dtype(self, dtype) -> bool:
        """Whether this platform can hold arrays of ``dtype``."""
        return self.dtypes is None or np.dtype(dtype) in self.dtypes

    def __repr__(self):
        return f"<{type(self).__name__} platform={self.platform!r}>"


class Placement:
    """How ``jit`` places one run of a compiled program (``Backend.run_compiled``).

    A call on one device fills the first five (``Placement(device, committed, ...)``); a
    call over a mesh, or with ``out_shardings``, also ``out_shardings`` (which marks it)
    and the rest (``Placement.sharded``).

    Attributes:
      device: the Device it runs on (its committed arguments', ``jit(device=)``, else the
        default device); for a sharded call, ``jit(device=)`` or None.
      committed: whether its outputs are committed to ``device``.
      donate: the flat positions of donated arguments the program reads, or None.
      what: the call, for error messages (``'jit of f'``).
      check: None, or ``check(args, outputs)``, called once a synchronous run has made
        its output Arrays (``jax_debug_nans`` / ``jax_debug_infs``; outputs still being
        computed on a worker are not checked).
      out_shardings: per output, the Sharding it is placed by (None: where it is made).
      mesh: the Mesh the call's arguments and results live on, or None.
      across: whether ``mesh`` spans several processes (each runs on its own shards).
      spmd: None (run the program as it is), or a function of no arguments returning
        the program partitioned for this placement (a callable of the arguments' global
        values) or None when it must run once: what a platform without a partitioner of
        its own runs (the compiler's SPMD partition expanded over the mesh).
      key, cache: a platform keeps what it builds for this placement in dict ``cache``
        (owned by jit's compiled signature) under ``key``.
      names: a function of no arguments giving the arguments' names (for errors), or
        None.
      delete_after: the donated sharded arguments, deleted once the results exist.
      manual: None, or (a jitted ``shard_map``) a function of no arguments returning its
        per-device program ``(closed, in_axes, out_axes)`` (transforms/shard_map.py
        ``per_device``; NotImplementedError where it has none), for a platform that
        lowers it as manually partitioned code.
    """

    # a sharded call's fields default here, so that a call on one device (every jitted
    # call past the cached fast path) sets five attributes only
    out_shardings = mesh = spmd = key = cache = names = manual = None
    across = False
    delete_after = ()

    def __init__(self, device, committed: bool, donate=None, what: str = "jit",
                 check=None):
        self.device = device
        self.committed = committed
        self.donate = donate
        self.what = what
        self.check = check

    @classmethod
    def sharded(cls, device, what: str, check, *, out_shardings, mesh, across: bool,
                spmd, key, cache, names, delete_after, manual=None) -> "Placement":
        """The placement of a call over a mesh or with ``out_shardings`` (see the class
        docstring); ``device`` is ``jit(device=)`` or None."""
        p = cls(device, False, None, what, check)
        p.out_shardings, p.mesh, p.across, p.spmd = out_shardings, mesh, across, spmd
        p.key, p.cache, p.names, p.delete_after = key, cache, names, delete_after
        p.manual = manual
        return p

    def __repr__(self):
        mesh = "" if self.out_shardings is None else \
            f", mesh={self.mesh!r}, out_shardings={self.out_shardings!r}"
        return (f"Placement(device={self.device!r}, committed={self.committed}, "
                f"donate={self.donate}, what={self.what!r}{mesh})")


# Backend.run_compiled's default: it wraps outputs as Arrays, which are core's, so core
# registers it (core/run.py run_compiled) and the runtime imports nothing above it.
_DEFAULT_RUN = None


def set_default_run(fn) -> None:
    """Registers ``fn(backend, compiled, args, placement) -> outputs``, the default
    ``Backend.run_compiled`` (called once, by core/run.py, when it is imported)."""
    global _DEFAULT_RUN
    _DEFAULT_RUN = fn


_BACKENDS: dict = {}   # platform name -> Backend, in registration order


def register(backend: Backend) -> Backend:
    """Makes ``backend`` (a Backend instance) the implementation of its platform.

    Raises:
      TypeError: ``backend`` is not a Backend.
      ValueError: its platform is registered already, or its devices were created.
    """
    if not isinstance(backend, Backend):
        raise TypeError(f"register takes a jaxlite.runtime.backend.Backend instance; got "
                        f"{backend!r} of type {type(backend).__name__}")
    if backend.platform in _BACKENDS:
        raise ValueError(f"a backend for platform {backend.platform!r} is registered "
                         f"already ({_BACKENDS[backend.platform]!r})")
    _BACKENDS[backend.platform] = backend
    from . import device as _device
    _device._forget_default()
    return backend


def unregister(platform: str) -> None:
    """Removes ``platform`` from the registry (tests that define a platform of their own
    clean up with it).  Its devices and arrays keep working; ``devices(platform)`` raises
    afterwards.  Raises ValueError for the default platform of the process."""
    from . import device as _device
    if platform == _device.default_backend():
        raise ValueError(f"the default platform {platform!r} cannot be unregistered")
    _BACKENDS.pop(platform, None)
    _device._forget_default()


def get(platform: str) -> Backend | None:
    """The Backend registered for ``platform``, or None."""
    return _BACKENDS.get(platform)


# Sources of platforms registered on demand (backends/pjrt: one per PJRT plugin found), so
# that importing jaxlite loads no plugin and opens no chip.
_PROVIDERS: list = []


def add_provider(provider) -> None:
    """Adds a source of platforms registered when first asked for.

    ``provider.provide(name)`` registers (``register``) and returns the Backend of platform
    ``name`` when it has one, returns None when it has none, and raises RuntimeError
    naming the cause when it has the platform but cannot start it (the chip held by
    another process, a plugin too old).  ``provider.hint(name)`` is None, or what to
    install to get platform ``name`` (added to the "Unknown backend" error).
    ``provider.autodetect()`` registers the platforms that become the default without
    being named (accelerators whose client starts), warning for those that fail;
    ``default_backend()`` calls it once, when ``jax_platforms`` is unset.
    """
    _PROVIDERS.append(provider)


def provide(name: str) -> Backend | None:
    """The Backend of platform ``name``: the registered one, else one a provider registers
    now (``add_provider``), else None.  Raises the provider's RuntimeError when the
    platform is known but cannot start."""
    b = _BACKENDS.get(name)
    if b is None:
        for p in _PROVIDERS:
            b = p.provide(name)
            if b is not None:
                break
    return b


def missing_hint(name: str) -> str:
    """`` <what to install>`` for an absent platform ``name`` (from the providers), or
    the empty string."""
    for p in _PROVIDERS:
        h = p.hint(name)
        if h:
            return f" {h}"
    return ""


_autodetected = False


def autodetect() -> None:
    """Lets every provider register its default-worthy platforms (once per process)."""
    global _autodetected
    if not _autodetected:
        _autodetected = True
        for p in _PROVIDERS:
            p.autodetect()


def registered() -> list:
    """Every registered Backend, in registration order."""
    return list(_BACKENDS.values())


# Names that stand for whichever of several platforms is present (JAX's aliases).
ALIASES = {"gpu": ("cuda", "rocm", "oneapi")}


def requested_platforms(spec: str) -> list:
    """The platforms a ``jax_platforms`` value (``"cpu"``, ``"tpu,cpu"``) asks for, in its
    order (the first is the default).  As in JAX, every entry must be present: a list does
    not fall back past a missing platform, and entries are taken as written (``"CPU"``,
    ``" cpu"`` name no platform).  ``gpu`` stands for whichever of cuda, rocm, oneapi is
    registered.

    Raises:
      RuntimeError: an entry names no registered platform ("Unable to initialize backend
        'tpu': ...", as JAX words it).
    """
    out = []
    for p in spec.split(","):
        cause = None
        for a in ALIASES.get(p, (p,)):
            try:
                provide(a)
            except RuntimeError as e:     # known, but it cannot start: say why
                cause = cause or str(e)
        names = [a for a in ALIASES.get(p, (p,)) if a in _BACKENDS]
        if not names and cause is not None:
            raise RuntimeError(f"Unable to initialize backend '{p}': {cause} (set "
                               f"JAX_PLATFORMS='' to automatically choose an available "
                               f"backend)")
        if not names:
            have = list(_BACKENDS)
            if p in ALIASES:
                why = (f"no platform that is an instance of {p} "
                       f"({', '.join(ALIASES[p])}) is present; platforms present: {have}")
            else:
                why = f"Backend '{p}' is not in the list of known backends: {have}."
            why += missing_hint(p)
            raise RuntimeError(f"Unable to initialize backend '{p}': {why} (set "
                               f"JAX_PLATFORMS='' to automatically choose an available "
                               f"backend)")
        out.extend(n for n in names if n not in out)
    return out
