"""``AdapterBase``, the defaults an adapter inherits (and how it finds its package's parts),
``EagerAutograd`` for frameworks that record eagerly, and small helpers of adapter classes."""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..device import Device
from ..dtypes import DType
from ..errors import DeviceError
from ..registry import Framework
from .hooks import AutogradHooks, ExportHooks, JitHooks, UpdateHooks
from .interfaces import ArrayLimits, Extension, OpTable

__all__ = [
    "AdapterBase",
    "EagerAutograd",
    "dtype_error",
    "dtype_lookup",
    "env_count",
    "lazy_backend",
]


def lazy_backend(package: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for an adapter package that imports ``Backend`` (and the
    framework with it) on first use, so that reading the package's ``FRAMEWORK`` is cheap:
    ``__getattr__ = lazy_backend(__name__)``."""

    def __getattr__(name: str) -> Any:
        if name == "Backend":
            return importlib.import_module(f"{package}.backend").Backend
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def dtype_lookup(native: Mapping[DType, Any]) -> Callable[[Any], DType | None]:
    """multidev's dtype for a framework dtype of the table ``native`` (an adapter's
    ``dtypes.NATIVE``), or None where multidev has none. Framework dtype objects live as long
    as the framework, so they are looked up by identity first (a dictionary lookup by hash
    and == is slow for some of them: ~0.5 us for Paddle's)."""
    by_id = {id(v): k for k, v in native.items()}
    by_value = {v: k for k, v in native.items()}

    def md_dtype(dt: Any) -> DType | None:
        found = by_id.get(id(dt))
        return found if found is not None else by_value.get(dt)

    return md_dtype


def dtype_error(
    backend: str, table: Mapping[DType, Any], dt: DType, alternatives: Mapping[DType, str]
) -> TypeError:
    """The error for a multidev dtype that backend's framework lacks (not a key of ``table``),
    naming what to use instead (and, for a complex dtype, the capability it needs)."""
    if dt.kind == "c":
        return TypeError(
            f"Expected a dtype the {backend} backend supports ({', '.join(d.name for d in table)}). "
            f"Received: {dt.name}; complex dtypes need the 'complex' capability, which the "
            f"{backend} backend lacks. Use {alternatives.get(dt, 'a backend that has it')} "
            "instead, or another backend (md.set_backend('torch'))."
        )
    return TypeError(
        f"Expected a dtype the {backend} backend supports ({', '.join(d.name for d in table)}). "
        f"Received: {dt.name}, which the framework does not have. Use "
        f"{alternatives.get(dt, 'one of those')} instead."
    )


#: the class attributes ``AdapterBase`` takes from an adapter package's modules where the
#: ``Backend`` class does not set them: attribute -> (module of the package, its name there)
_LAYOUT = {
    "dtypes": ("dtypes", "NATIVE"),
    "ops": ("ops", "OPS"),
    "linalg": ("linalg", "LINALG"),
    "fft": ("linalg", "FFT"),
}


class AdapterBase(AutogradHooks, JitHooks, ExportHooks, UpdateHooks):
    """Defaults an adapter may inherit: ops through Python operators, a single CPU device,
    creation through host NumPy arrays, the dtype table and its errors from ``dtypes``, a
    cached ``device_of`` built on the one-line ``native_place`` hook, and the defaults of
    every optional hook (``hooks``: no autograd, no compiler, no exporter)."""

    name = "base"
    #: the framework's names; by default the adapter package's ``FRAMEWORK``
    framework: ClassVar[Framework] = Framework("base")
    #: the module holding the native reference ``OPS``; by default the adapter package's
    #: ``reference`` module, None where there is none
    reference: ClassVar[str | None] = None
    conformance_xfails: ClassVar[Mapping[str, str]] = {}
    #: NumPy's limits unless the framework's are lower
    array_limits: ClassVar[ArrayLimits] = ArrayLimits()
    #: how many CPU devices the backend offers (``cpu:0`` … ``cpu:N-1``)
    cpu_count = 1
    capabilities: frozenset[str] = frozenset()
    scoped_devices: frozenset[Device] = frozenset()
    tensor_types: tuple[type, ...] = ()
    #: multidev dtype -> the framework's dtype, for every dtype the framework has; by default
    #: the adapter package's ``dtypes.NATIVE``
    dtypes: ClassVar[Mapping[DType, Any]] = {}
    #: what to use instead of a multidev dtype the framework lacks (``{md.int16: "md.int32"}``)
    dtype_alternatives: ClassVar[Mapping[DType, str]] = {}
    #: how to convert a native tensor of a foreign dtype, for the error message
    convert_hint = "Convert it to one of those first."
    #: how to move a native tensor off a place multidev does not know, for the error message
    move_hint = "Move it to the CPU first."
    #: the op table (``op_table(...)``); by default the adapter package's ``ops.OPS``
    ops: OpTable
    #: the framework's creation functions ``full(shape, value, dtype, device)`` and
    #: ``empty(shape, dtype, device)``, called with its own dtype and device (None: through
    #: a host NumPy array)
    native_full: ClassVar[Callable[..., Any] | None] = None
    native_empty: ClassVar[Callable[..., Any] | None] = None
    #: the framework's current default device or place, what ``parse_native_device`` reads
    #: (``torch.get_default_device``), for ``default_device``; None: cpu:0 always
    native_default: ClassVar[Callable[..., Any] | None] = None
    #: the framework's own place of a native tensor, which ``device_of`` maps to a Device
    #: through a cache: the Array API's ``x.device`` unless the adapter names another
    #: attribute (``attrgetter("place")``); a C-level getter, cheaper than a method
    native_place: ClassVar[Callable[..., Any]] = operator.attrgetter("device")

    if TYPE_CHECKING:  # supplied by every adapter

        def from_numpy(self, arr: np.ndarray, dev: Device) -> Any: ...
        def setitem(self, x: Any, key: Any, value: Any) -> Any: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        package, _, module = cls.__module__.rpartition(".")
        if module == "backend" and package:  # an adapter package laid out as docs/adapters.md says
            names = getattr(sys.modules.get(package), "FRAMEWORK", None)
            if "framework" not in cls.__dict__ and isinstance(names, Framework):
                cls.framework = names
            if "reference" not in cls.__dict__:
                cls.reference = f"{package}.reference"
            for attr, (sibling, name) in _LAYOUT.items():
                if attr not in cls.__dict__ and importlib.util.find_spec(f"{package}.{sibling}"):
                    found = getattr(importlib.import_module(f"{package}.{sibling}"), name, None)
                    if found is not None:
                        setattr(cls, attr, found)
        if "dtypes" in cls.__dict__:
            cls._md_dtypes = {v: k for k, v in cls.dtypes.items()}
            # framework dtype objects live as long as the framework: look them up by identity
            # first (a dictionary lookup by hash is slow for some of them)
            cls._md_dtype_ids = {id(v): k for k, v in cls.dtypes.items()}

    _md_dtypes: ClassVar[dict[Any, DType]] = {}
    #: lowerings of the Array API's ``linalg`` and ``fft`` extensions: by default the adapter
    #: package's ``linalg.LINALG`` and ``linalg.FFT``, else none
    linalg: ClassVar[Extension] = Extension()
    fft: ClassVar[Extension] = Extension()
    _md_dtype_ids: ClassVar[dict[int, DType]] = {}

    def __init__(self) -> None:
        self._devices: list[Device] | None = None
        self._device_set: frozenset[Device] | None = None
        self._num_gpus: int | None = None
        #: native place -> Device (device_of) and Device -> native device (native_device)
        self._places: dict[Any, Device] = {}
        self._natives: dict[Device, Any] = {}
        #: the last ``native_default()`` object and the Device it gave (default_device)
        self._last_default: tuple[Any, Device] | None = None

    def version(self) -> str:
        """The framework's version: its module's ``__version__`` (the module ``framework``
        names)."""
        return str(sys.modules[self.framework.name].__version__)

    # dtypes ----------------------------------------------------------------
    def dtype_of(self, x: Any) -> DType:
        """multidev's dtype of the native tensor ``x``; TypeError for a dtype it lacks."""
        dt = self._md_dtype_ids.get(id(x.dtype))
        if dt is None:
            dt = self.md_dtype(x.dtype)
            if dt is None:
                raise self.unsupported_dtype(x.dtype, native=True)
        return dt

    def md_dtype(self, native: Any) -> DType | None:
        """multidev's dtype for a framework dtype, or None where multidev has none."""
        dt = self._md_dtype_ids.get(id(native))
        return dt if dt is not None else self._md_dtypes.get(native)

    def native_dtype(self, dt: DType) -> Any:
        """The framework's dtype for ``dt``; TypeError where the framework lacks it."""
        try:
            return self.dtypes[dt]
        except KeyError:
            raise self.unsupported_dtype(dt) from None

    def native_dtype_name(self, native: Any) -> str:
        """How the framework writes one of its dtypes, for messages."""
        return getattr(native, "name", None) or str(native)

    def unsupported_dtype(self, dt: Any, native: bool = False) -> TypeError:
        """The error for a dtype this backend cannot hold (a multidev dtype or, with
        ``native``, the dtype of a framework tensor)."""
        if native:
            md = self.md_dtype(dt)
            received = md.name if md is not None else self.native_dtype_name(dt)
            return TypeError(
                f"Expected a tensor of one of the dtypes the {self.name} backend supports "
                f"({', '.join(d.name for d in self.dtypes)}). Received: dtype {received} on "
                f"the {self.name} backend. {self.convert_hint}"
            )
        return dtype_error(self.name, self.dtypes, dt, self.dtype_alternatives)

    def shape_of(self, x: Any) -> tuple[int, ...]:
        """The shape of the native tensor ``x`` as a tuple of ints."""
        return tuple(x.shape)

    # devices ---------------------------------------------------------------
    def list_devices(self) -> list[Device]:
        """Discover devices once; adapters override this, not ``devices``."""
        cpus = [Device("cpu", i) for i in range(self.cpu_count)]
        return cpus + [Device("gpu", i) for i in range(self.num_gpus())]

    def devices(self) -> Sequence[Device]:
        if self._devices is None:
            self._devices = self.list_devices()
            self._device_set = frozenset(self._devices)
        return self._devices

    def device_set(self) -> frozenset[Device]:
        if self._device_set is None:
            self.devices()
        return self._device_set  # type: ignore[return-value]

    def num_gpus(self) -> int:
        """GPUs the backend can use, counted once (``count_gpus``)."""
        if self._num_gpus is None:
            self._num_gpus = self.count_gpus()
        return self._num_gpus

    def count_gpus(self) -> int:
        """Count the GPUs (called once); adapters override this, not ``num_gpus``."""
        return 0

    def native_device(self, dev: Device) -> Any:
        """The framework's device object for ``dev``, made once (``make_native_device``)."""
        try:
            return self._natives[dev]
        except KeyError:
            pass
        native = self._natives[dev] = self.make_native_device(dev)
        return native

    def make_native_device(self, dev: Device) -> Any:
        """Build the framework's device object for ``dev``; DeviceError for one it lacks."""
        raise DeviceError(
            f"Expected one of the devices the {self.name} backend has "
            f"({', '.join(str(d) for d in self.devices())}). Received: {dev}."
        )

    def default_device(self) -> Device:
        """The framework's current default device (``native_default``) where it is one of this
        backend's devices, else cpu:0."""
        if self.native_default is None:
            return Device("cpu", 0)
        native = self.native_default()
        last = self._last_default
        if last is not None and last[0] is native:  # Paddle and MXNet return the same object
            return last[1]  # until the default changes (hashing a Paddle place costs 1.6 us)
        dev = self._places.get(native)  # the places of tensors seen (device_of)
        if dev is None:
            dev = self.parse_native_device(native)
        if dev is None or dev not in self.device_set():
            dev = Device("cpu", 0)
        self._last_default = (native, dev)  # held, so its id cannot be reused
        return dev

    def scope(self, dev: Device) -> AbstractContextManager:
        return nullcontext()

    def parse_native_device(self, obj: Any) -> Device | None:
        return None

    def device_of(self, x: Any) -> Device:
        """The Device of the native tensor ``x``, from ``native_place`` through a cache."""
        place = self.native_place(x)
        try:
            return self._places[place]
        except KeyError:
            pass
        dev = self.place_device(place)
        if dev is None:
            raise DeviceError(
                f"Expected a tensor on a device of the {self.name} backend. Received: a tensor "
                f"on {place}. {self.move_hint}"
            )
        self._places[place] = dev
        return dev

    def place_device(self, place: Any) -> Device | None:
        """The Device of a place ``native_place`` gave, or None for one multidev lacks."""
        return self.parse_native_device(place)

    def is_trainable_variable(self, var: Any) -> bool:
        """Whether ``var`` is the framework's own trainable variable (what ``make_variable``
        gives for floating-point values)."""
        return False

    def seed(self, seed: int) -> None:
        """Seed the framework's own generator (dropout, native initialisers)."""

    def full(self, shape: tuple[int, ...], value: Any, dt: DType, dev: Device) -> Any:
        """A new tensor of ``shape`` filled with ``value``: ``native_full`` for a Python or
        NumPy scalar where the adapter names one, else through a host NumPy array."""
        if isinstance(value, np.generic):
            value = value.item()  # a Python number, which every framework's full takes
        if self.native_full is None or not isinstance(value, (int, float)):
            return self.from_numpy(np.full(shape, value, dtype=dt.numpy), dev)
        return self.native_full(shape, value, self.native_dtype(dt), self.native_device(dev))

    def empty(self, shape: tuple[int, ...], dt: DType, dev: Device) -> Any:
        """A new tensor whose values are unspecified: the framework's uninitialised allocation
        (``native_empty``) where it has one; zeros otherwise (TensorFlow has none)."""
        if self.native_empty is None:
            return self.full(shape, 0, dt, dev)
        return self.native_empty(shape, self.native_dtype(dt), self.native_device(dev))

    def make_variable(self, x: Any) -> Any:
        """A trainable framework variable with its own storage, holding x's values, on x's device."""
        return self.ops.copy(x)

    def variable_tensor(self, var: Any) -> Any:
        """A native tensor for ops that shares the variable's storage (the variable itself where
        the framework's ops take variables)."""
        return var

    def detach(self, x: Any) -> Any:
        """The same storage outside autograd recording (what ``p.data`` wraps); identity where
        writes into a variable are never recorded."""
        return x

    def stop_gradient(self, x: Any) -> Any:
        """x's values as a native that no gradient flows through (``x.detach()``): ``detach``
        where that leaves the graph (torch, Paddle, MXNet); adapters whose ``detach`` is the
        variable itself, so that ``p.data`` writes into it, override this."""
        return self.detach(x)

    def add_scaled_(self, x: Any, y: Any, alpha: float) -> Any:
        """``x += alpha * y`` in place (the optimisers' update); returns x, or the replacement
        where the framework's tensors are immutable. Adapters override it with a fused op."""
        return self.setitem(x, Ellipsis, self.ops.add(x, self.ops.multiply(y, alpha)))

    def add_scaled_many_(self, xs: Sequence[Any], ys: Sequence[Any], alpha: float) -> list[Any]:
        """``x += alpha * y`` in place for each pair (the optimisers' update of a parameter
        group; the tensors share one device and dtype); returns the xs as ``add_scaled_``
        does. Optional: this default runs ``add_scaled_`` per pair; adapters whose framework
        has a multi-tensor kernel override it to update every pair in a few launches."""
        return [self.add_scaled_(x, y, alpha) for x, y in zip(xs, ys, strict=True)]


class EagerAutograd(AutogradHooks):
    """The ``Autograd`` primitives of a framework that records eagerly and keeps a variable's
    gradient in ``var.grad`` (PyTorch, Paddle). The adapter names its grad-mode context
    managers (``grad_modes = (enable_grad, no_grad)``), its native module class, and how a
    tensor says that it was recorded (``recorded(loss)``: torch's ``requires_grad``)."""

    grad_modes: ClassVar[tuple[Callable[[], AbstractContextManager], ...]]
    native_block: ClassVar[type]
    recorded: ClassVar[Callable[..., bool]]

    def record(self) -> AbstractContextManager:
        return self.grad_modes[0]()

    def no_grad(self, recordings: Sequence[Any]) -> AbstractContextManager:
        return self.grad_modes[1]()

    def grad(self, var: Any) -> Any:
        return var.grad

    def set_grad(self, var: Any, value: Any) -> None:
        var.grad = value

    def native_module(self, block: Any) -> Any:
        return self.native_block(block)

    def detach(self, x: Any) -> Any:
        """The same storage outside autograd recording (what ``p.data`` wraps)."""
        return x.detach()

    def backward(self, loss: Any, gradient: Any, recording: Any, retain_graph: bool) -> bool:
        """The framework's own backward of ``loss`` (gradients add up in ``var.grad``); False
        for a loss that was not recorded."""
        if not self.recorded(loss):
            return False
        try:
            loss.backward(gradient, retain_graph=retain_graph)
        except (RuntimeError, SystemError) as e:
            # a recording an earlier backward() freed: torch's RuntimeError and Paddle's
            # SystemError both advise retain_graph=True; the core's AutogradError says so on
            # every backend
            if "retain_graph=True" in str(e):
                return False
            raise
        return True


def env_count(name: str, default: int, what: str) -> int:
    """A positive integer from the environment variable ``name`` (``default`` when unset);
    ValueError naming the variable and what it counts otherwise."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"Expected {name} to be a positive integer (the number of {what}). Received: "
            f"{raw!r}. Unset it for the default, {default}."
        )
    return n
