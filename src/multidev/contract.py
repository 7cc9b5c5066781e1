"""The backend contract: the few primitives that differ per framework.

An adapter is any object with these attributes (structural typing: it need not inherit).
``AdapterBase`` supplies defaults that suit most frameworks. The core has already
checked devices, matched dtypes and normalised arguments before it calls an op, so an
op receives native tensors of one dtype on one device and returns a native tensor that
stays on that device.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import operator
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np

from . import errors
from .device import Device
from .dtypes import DType, uint8
from .errors import DeviceError
from .op_specs import SPECS
from .registry import Framework

__all__ = [
    "CAPABILITIES",
    "Adapter",
    "AdapterBase",
    "ArrayLimits",
    "Autograd",
    "DLPack",
    "EagerAutograd",
    "Extension",
    "Framework",
    "NoKernel",
    "OpTable",
    "clip_bounds",
    "dtype_error",
    "dtype_lookup",
    "env_count",
    "find_native",
    "key_axes",
    "lazy_backend",
    "missing_members",
    "op_table",
    "reduction",
    "vector_matmul",
    "widening",
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


#: Capabilities an adapter may declare. Conformance tests needing a missing one are skipped.
CAPABILITIES = frozenset(
    {
        "autograd",  # records operations and computes gradients
        "implicit_grad",  # backward() without record(): recorded as in PyTorch
        "gpu",  # written against the framework's CUDA API (GPUs may still be absent)
        "multi_device",  # several devices of one kind (TensorFlow logical CPUs, MXNet cpu(i))
        "bfloat16",
        "float16",
        "float64",
        "complex",  # complex64 and complex128
        "dlpack",  # exchanges tensors zero-copy through DLPack
        "jit",  # compiles functions with the framework's compiler (md.jit, hybridize)
    }
)


#: native op signatures (native tensors in and out; Python scalars where the core passes them)
Unary = Callable[[Any], Any]
Binary = Callable[[Any, Any], Any]
Reduction = Callable[[Any, "tuple[int, ...] | None", bool], Any]
ArgReduction = Callable[[Any, "int | None"], Any]
Joining = Callable[[list, int], Any]


@runtime_checkable
class OpTable(Protocol):
    """Native operations. Every callable takes and returns native tensors."""

    # binary, elementwise (same dtype, same device): Python-operator semantics
    add: Binary
    subtract: Binary
    multiply: Binary
    divide: Binary
    floor_divide: Binary
    remainder: Binary
    pow: Binary
    matmul: Binary
    maximum: Binary
    minimum: Binary
    equal: Binary
    not_equal: Binary
    less: Binary
    less_equal: Binary
    greater: Binary
    greater_equal: Binary
    logical_and: Binary
    logical_or: Binary
    # unary
    negative: Unary
    abs: Unary
    exp: Unary
    log: Unary
    log1p: Unary
    sqrt: Unary
    sin: Unary
    cos: Unary
    tanh: Unary
    sigmoid: Unary
    relu: Unary
    floor: Unary
    logical_not: Unary
    copy: Unary  # a new tensor with equal values
    # ops with arguments
    sum: Reduction  # (x, axis, keepdims); axis None: every axis, (): none
    mean: Reduction
    max: Reduction
    min: Reduction
    prod: Reduction
    argmax: ArgReduction  # (x, axis); axis None: the flattened tensor
    argmin: ArgReduction
    reshape: Callable[[Any, tuple[int, ...]], Any]
    permute_dims: Callable[[Any, tuple[int, ...]], Any]
    concat: Joining  # (xs, axis)
    stack: Joining
    where: Callable[[Any, Any, Any], Any]  # (cond, a, b), cond bool
    clip: Callable[[Any, float | None, float | None], Any]  # (x, min, max)
    softmax: Callable[[Any, int], Any]  # (x, axis)
    log_softmax: Callable[[Any, int], Any]
    getitem: Binary  # (x, key): key holds ints, slices, None, Ellipsis, native tensors
    astype: Callable[[Any, DType], Any]  # (x, dtype)
    # optional: linear(x, weight (out, in), bias or None), the fused op behind nn.Linear
    # sequence ops (multidev.nn.sequence_functional); lowerings in each adapter's sequence_ops.py
    embedding: Binary  # (weight (n, d), int64 indices) -> rows
    one_hot: Callable[[Any, int], Any]  # (int64 indices, num_classes) -> int64
    stop_gradient: Unary  # the same values without a gradient path
    layer_norm: Callable[[Any, Any, Any, float], Any]  # (x, weight, bias, eps), last axis
    gelu: Callable[[Any, bool], Any]  # (x, tanh approximation?)
    # optional, fused kernels (else composed in the core):
    # scaled_dot_product_attention(q, k, v, additive float mask or None, scale) and
    # rnn(mode, x (T, N, I), h0, c0 or None, weights, num_layers, bidirectional) -> (y, h, c)
    # and rnn_projected(...), the same for an LSTM whose weights end with w_hr (h0 smaller than c0)
    # and cross_entropy(logits (N, C), int64 labels (N,), reduction): labels outside [0, C)
    # raise IndexError (eagerly) or the framework's error when the loss is read


class ArrayLimits(NamedTuple):
    """The largest arrays a backend can hold; an adapter declares its own as the class
    attribute ``array_limits`` where they are below NumPy's (the defaults here).

    ``ndim``: most dimensions; ``dim``: largest single dimension; ``elements``: largest
    product of the non-zero dimensions. Loading a checkpoint checks every tensor against
    these (and against NumPy's own byte limit) before reading any data."""

    ndim: int = 64
    dim: int = 2**63 - 1
    elements: int = 2**63 - 1


@runtime_checkable
class Adapter(Protocol):
    """What a backend provides. Names follow the framework's import name."""

    name: str
    framework: Framework  # import name, distributions, install extra
    capabilities: frozenset[str]
    ops: OpTable
    #: lowerings of the Array API extensions md.linalg and md.fft
    linalg: Extension
    fft: Extension
    tensor_types: tuple[type, ...]  # native tensor classes, for isinstance checks
    #: module holding the native reference ``OPS`` of the conformance suite, or None
    reference: str | None
    #: known conformance failures: {test name: reason}
    conformance_xfails: Mapping[str, str]
    #: the largest arrays the framework holds (checked when loading checkpoints)
    array_limits: ArrayLimits

    def version(self) -> str: ...

    # devices
    def list_devices(self) -> list[Device]: ...
    def devices(self) -> Sequence[Device]: ...
    def device_set(self) -> frozenset[Device]: ...
    def num_gpus(self) -> int: ...
    def default_device(self) -> Device: ...
    def native_device(self, dev: Device) -> Any: ...
    def parse_native_device(self, obj: Any) -> Device | None: ...
    def device_of(self, x: Any) -> Device: ...
    def scope(self, dev: Device) -> AbstractContextManager: ...

    #: devices whose ops must run inside ``scope(dev)`` to stay there (TensorFlow)
    scoped_devices: frozenset[Device]

    # tensors
    def dtype_of(self, x: Any) -> DType: ...
    def native_dtype(self, dt: DType) -> Any: ...
    def shape_of(self, x: Any) -> tuple[int, ...]: ...
    def from_numpy(self, arr: np.ndarray, dev: Device) -> Any: ...
    def to_numpy(self, x: Any) -> np.ndarray: ...
    def to_device(self, x: Any, dev: Device) -> Any: ...
    def full(self, shape: tuple[int, ...], value: Any, dt: DType, dev: Device) -> Any: ...
    def empty(self, shape: tuple[int, ...], dt: DType, dev: Device) -> Any: ...
    def setitem(self, x: Any, key: Any, value: Any) -> Any: ...
    def seed(self, seed: int) -> None: ...

    # parameters
    def make_variable(self, x: Any) -> Any: ...
    def variable_tensor(self, var: Any) -> Any: ...
    def detach(self, x: Any) -> Any: ...
    def add_scaled_(self, x: Any, y: Any, alpha: float) -> Any: ...
    def is_trainable_variable(self, var: Any) -> bool: ...


@runtime_checkable
class DLPack(Protocol):
    """What an adapter declaring the ``"dlpack"`` capability adds to ``Adapter``."""

    def from_dlpack(self, obj: Any) -> Any:
        """A native tensor sharing the memory of a DLPack-capable object."""
        ...


@runtime_checkable
class Autograd(Protocol):
    """What an adapter declaring the ``"autograd"`` capability adds to ``Adapter``.

    The core keeps the recording objects ``record()`` returns and hands the relevant one
    (the innermost active ``md.autograd.record()`` block of this backend, else the last one
    that ended) to ``backward``. Gradients live with the framework's variables (torch and
    paddle ``.grad``, MXNet's gradient buffers, a slot the TensorFlow adapter keeps), so
    native optimisers see what ``loss.backward()`` computed. An adapter without these
    methods (the NumPy backend) has no autograd and the core says so.
    """

    def record(self) -> AbstractContextManager:
        """A context manager that records operations for ``backward`` while it is entered
        (GradientTape, ``autograd.record()``; ``enable_grad`` where recording is eager)."""
        ...

    def no_grad(self, recordings: Sequence[Any]) -> AbstractContextManager:
        """A context manager inside which nothing is recorded, the active ``recordings``
        included."""
        ...

    def backward(self, loss: Any, gradient: Any, recording: Any, retain_graph: bool) -> bool:
        """Add d(sum(loss * gradient))/d(var) to the gradient of every trainable variable
        that ``loss`` was computed from (``gradient`` None means ones; ``recording`` may be
        None). Returns False, changing nothing, when ``loss`` was not recorded."""
        ...

    def grad(self, var: Any) -> Any:
        """The variable's accumulated gradient (a native tensor), or None."""
        ...

    def set_grad(self, var: Any, value: Any) -> None:
        """Replace the variable's gradient with ``value`` (a native tensor), or drop it (None)."""
        ...

    def native_module(self, block: Any) -> Any:
        """A native module (torch ``nn.Module``, ``tf.Module``, …) holding ``block``'s very
        variables, whose call runs ``block`` on native tensors (``multidev.nn.native.call``)."""
        ...


def _members(protocol: type) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    return names | {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}


def missing_members(adapter: Any) -> list[str]:
    """The members of the contract that ``adapter`` lacks: ``Adapter``'s, its op table's
    (``ops.<name>``), and those of ``Autograd`` and ``DLPack`` where it declares the
    capability."""
    missing = {n for n in _members(Adapter) if not hasattr(adapter, n)}
    ops = getattr(adapter, "ops", None)
    missing |= {f"ops.{n}" for n in _members(OpTable) if not hasattr(ops, n)}
    caps: frozenset[str] = getattr(adapter, "capabilities", frozenset())
    for cap, protocol in (("autograd", Autograd), ("dlpack", DLPack)):
        if cap in caps:
            missing |= {n for n in _members(protocol) if not hasattr(adapter, n)}
    return sorted(missing)


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


class Extension:
    """The lowerings of one Array API extension (``md.linalg``, ``md.fft``) on one framework.

    ``lowering(name)`` is ``lowerings[name]`` where the framework spells a function differently,
    else the function called ``name`` in the first of ``namespaces`` that has one (e.g.
    ``torch.linalg`` then ``torch``), else None: the framework lacks it. The core calls each
    lowering as its declaration in ``multidev.linalg`` / ``multidev.fft`` says."""

    def __init__(self, *namespaces: Any, **lowerings: Callable[..., Any] | None) -> None:
        self.namespaces = namespaces
        self.lowerings = lowerings

    def lowering(self, name: str) -> Callable[..., Any] | None:
        if name in self.lowerings:
            return self.lowerings[name]
        for namespace in self.namespaces:
            fn = getattr(namespace, name, None)
            if fn is not None:
                return cast(Callable[..., Any], fn)
        return None

    def require(self, extension: str, name: str, backend: str) -> Callable[..., Any]:
        """``lowering(name)``; UnsupportedOperationError naming ``extension.name`` and the
        backend where the framework lacks it."""
        fn = self.lowering(name)
        if fn is None:
            raise errors.UnsupportedOperationError(
                f"Expected a backend whose framework has {extension}.{name}. Received: the "
                f"{backend} backend, whose framework has none. Use another backend for "
                f"md.{extension}.{name}."
            )
        return fn


#: the class attributes ``AdapterBase`` takes from an adapter package's modules where the
#: ``Backend`` class does not set them: attribute -> (module of the package, its name there)
_LAYOUT = {
    "dtypes": ("dtypes", "NATIVE"),
    "ops": ("ops", "OPS"),
    "linalg": ("linalg", "LINALG"),
    "fft": ("linalg", "FFT"),
}


class AdapterBase:
    """Defaults an adapter may inherit: ops through Python operators, a single CPU device,
    creation through host NumPy arrays, the dtype table and its errors from ``dtypes``, and
    a cached ``device_of`` built on the one-line ``native_place`` hook."""

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


class EagerAutograd:
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
        loss.backward(gradient, retain_graph=retain_graph)
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


def op_table(
    *namespaces: Any,
    modules: Sequence[Any] = (),
    wrap: Callable[[Any, str], Any] | None = None,
    reduce: Callable[[Any], Any] | None = None,
    **lowerings: Any,
) -> OpTable:
    """An adapter's op table, over the ops declared in ``multidev.op_specs.SPECS``: for each,
    the adapter's lowering (``lowerings``, else the first of the adapter's lowering ``modules``
    that has one: an entry of the module's ``LOWERINGS`` dict where it has one, else a function
    of the op's name), else the first of the op's ``natives`` found on the framework's
    ``namespaces`` (a reduction's made into the ``(x, axis, keepdims)`` op by ``reduce(fn)``,
    and taken only where ``reduce`` is given), else Python's operator
    (``PythonOperatorOps``); the last two through ``wrap(fn, name)`` where given. An op found
    nowhere is absent: ``missing_members`` names it."""
    tables = [getattr(module, "LOWERINGS", module) for module in modules]
    table = {}
    for name, spec in SPECS.items():
        fn = lowerings.get(name)
        for found in tables:
            if fn is None:
                fn = found.get(name) if isinstance(found, Mapping) else getattr(found, name, None)
        if fn is None:
            reducing = spec.args == "(x, axis, keepdims)"
            fn = None if reducing and reduce is None else find_native(namespaces, spec.natives)
            fn = reduce(fn) if reducing and fn is not None and reduce is not None else fn
            if fn is None and wrap and isinstance(vars(PythonOperatorOps).get(name), staticmethod):
                fn = getattr(PythonOperatorOps, name)
            fn = fn if fn is None or wrap is None else wrap(fn, name)
        if fn is not None:
            table[name] = fn
    unknown = set(lowerings).union(*[t for t in tables if isinstance(t, Mapping)]) - set(SPECS)
    if unknown:
        raise TypeError(
            f"Expected lowerings of ops declared in multidev.op_specs. Received: "
            f"{sorted(unknown)}. Declare the op there first."
        )
    ops = type("Ops", (PythonOperatorOps,), {k: staticmethod(v) for k, v in table.items()})
    # the class is built from the declarations and the lowerings: the checker cannot see them
    return cast(OpTable, ops())


class NoKernel(NamedTuple):
    """How a framework says that it has no kernel for an operand's dtype, and how to compute in
    a wider dtype instead (``widening``). ``raised(error)``: whether an error the op raised
    means that; ``dtype(t)``: a native tensor's dtype as ``widening``'s ``wider`` keys it
    (default ``t.dtype``); ``is_tensor(a)`` (default: ``a`` has a ``dtype``); ``cast(t,
    dtype)`` to a native dtype (default ``t.astype(dtype)``); ``place(t)``: where given, which
    dtype widens is learned per (dtype, place) on the first failure, and later calls widen
    without trying the op first; ``refuse(t, name)``: the error for a dtype ``wider`` lacks
    (None: the framework's own error is raised again)."""

    raised: Callable[[BaseException], bool]
    dtype: Callable[[Any], Any] = operator.attrgetter("dtype")
    is_tensor: Callable[[Any], bool] = lambda a: hasattr(a, "dtype")
    cast: Callable[[Any, Any], Any] = lambda t, dtype: t.astype(dtype)
    place: Callable[[Any], Any] | None = None
    refuse: Callable[[Any, str], BaseException | None] | None = None


def widening(
    fn: Callable[..., Any],
    name: str,
    how: NoKernel,
    wider: Mapping[Any, Any],
    *,
    count: int | None = None,
    check: Callable[[tuple, Any], None] | None = None,
) -> Callable[..., Any]:
    """Op ``name`` as ``fn``, computed in the dtype ``wider`` names for the first tensor
    operand's dtype where the framework has no kernel for that dtype (``how``), with NumPy's
    results: the tensor arguments of that dtype among the first ``count`` (default all) are
    cast to the wider dtype, Python bool operands (of the first two) become ints, and the
    result goes back to the operand's dtype unless the op's declared result is bool or
    indices (``op_specs``).
    ``check(args, dtype)`` may raise a clearer error before a wider computation."""
    spec = SPECS.get(name)
    back = spec is None or spec.promotion not in ("bool", "index")
    is_tensor, dtype_of, cast, place = how.is_tensor, how.dtype, how.cast, how.place
    learned: dict[Any, dict[Any, Any]] = {}  # dtype -> {place: the dtype it widens to}

    def first_tensor(args: tuple) -> Any:
        return next((a for a in args[:2] if is_tensor(a)), None)

    def wide(args: tuple, t: Any, dt: Any, w: Any) -> Any:
        if check is not None:
            check(args, dt)
        n = len(args) if count is None else count
        out = fn(
            *[
                cast(a, w)
                if i < n and is_tensor(a) and dtype_of(a) == dt
                else (int(a) if i < n and i < 2 and type(a) is bool else a)
                for i, a in enumerate(args)
            ]
        )
        return cast(out, t.dtype) if back and dtype_of(out) != dt else out

    def op(*args: Any) -> Any:
        if learned and place is not None and (t := first_tensor(args)) is not None:
            dt = dtype_of(t)
            w = learned.get(dt, {}).get(place(t))
            if w is not None:
                return wide(args, t, dt, w)
        try:
            return fn(*args)
        except Exception as e:
            t = first_tensor(args)
            if not how.raised(e) or t is None:
                raise
            dt = dtype_of(t)
            w = wider.get(dt)
            if w is None:
                if check is not None:
                    check(args, dt)
                refused = None if how.refuse is None else how.refuse(t, name)
                if refused is None:
                    raise
                raise refused from None
            if place is not None:
                learned.setdefault(dt, {})[place(t)] = w
            return wide(args, t, dt, w)

    op.__name__ = name
    return op


def clip_bounds(lo: Any, hi: Any, dtype: np.dtype | None) -> tuple[Any, Any]:
    """NumPy's ``clip`` bounds for a tensor of the NumPy dtype ``dtype``, for frameworks whose
    clip wants bounds of the tensor's own kind: on bool and integer tensors an int within the
    dtype's range (a float bound truncated, as NumPy's cast back does; None, unbounded, the
    range's end), on others (``dtype`` None included) a float (None: -inf or inf). A lower
    bound above the upper one becomes the upper one: the result is ``hi`` everywhere."""
    if dtype is None or dtype.kind not in "biu":
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
    else:
        low, high = (
            (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        )
        lo = low if lo is None else int(min(max(lo, low), high))
        hi = high if hi is None else int(min(max(hi, low), high))
    return min(lo, hi), hi


def divisor_signed(
    remainder: Callable[[Any, Any], Any],
    copysign: Callable[[Any, Any], Any],
    floating: Callable[[Any], bool],
) -> Callable[[Any, Any], Any]:
    """An adapter's floating-point ``remainder(a, b)`` with the sign of ``b`` on every result,
    zeros included, as the Array API (and Python, and NumPy) has it: the frameworks' kernels
    give a zero result the sign of ``a`` (``-0.0 % 2`` is -0.0). A non-zero floored remainder
    already has ``b``'s sign, so ``copysign(r, b)`` changes only the zeros."""

    def op(a: Any, b: Any) -> Any:
        r = remainder(a, b)
        return copysign(r, b) if floating(r) else r

    return op


def reduction(
    fn: Callable[..., Any],
    copy: Callable[[Any], Any],
    *,
    axis: str = "axis",
    keepdims: str = "keepdims",
    axes: Callable[[Any], Any] = tuple,
    per_axis: bool = False,
) -> Reduction:
    """The ``(x, axis, keepdims)`` op of a framework's reduction ``fn``, called with its own
    keyword names (``axis``, ``keepdims``) and the axes as ``axes(...)``: axis None reduces
    every axis, ``()`` none (``copy(x)``, a new tensor). ``per_axis``: ``fn`` takes one axis
    at a time (``torch.prod``, ``torch.all``)."""

    def reduce(x: Any, ax: tuple[int, ...] | None, keep: bool) -> Any:
        if ax is None:
            if not keep:
                return fn(x)
            if per_axis:
                return fn(x).reshape((1,) * x.ndim)
            ax = tuple(range(x.ndim))
        elif not ax:
            return copy(x)
        if not per_axis:
            return fn(x, **{axis: axes(ax), keepdims: keep})
        for a in sorted(ax, reverse=True):
            x = fn(x, **{axis: a, keepdims: keep})
        return x

    return reduce


def key_axes(key: Any, ndim: int, mask_ndim: Callable[[Any], int | None]) -> list[tuple[Any, int]]:
    """Each item of an index key on an ``ndim``-d tensor with the first axis it indexes, as
    NumPy reads it: the Ellipsis (or, without one, the end of the key) stands for full slices
    of the axes no other item indexes; None and Python bools index none, a boolean mask as many
    as its rank (``mask_ndim(item)``, None for an item that is no mask), any other item one.
    IndexError for two Ellipses or more indexed axes than the tensor has."""
    items = key if type(key) is tuple else (key,)
    ellipses = sum(k is Ellipsis for k in items)
    if ellipses > 1:
        raise IndexError("Expected at most one Ellipsis (...) in an index. Received: several")

    def span(k: Any) -> int:
        if k is Ellipsis or k is None or type(k) is bool:
            return 0
        n = mask_ndim(k)
        return 1 if n is None else n

    spans = [span(k) for k in items]
    rest = ndim - sum(spans)
    if rest < 0:
        raise IndexError(
            f"Expected at most {ndim} indices for a {ndim}-d tensor. Received: {sum(spans)}"
        )
    out: list[tuple[Any, int]] = []
    dim = 0
    for k, n in zip(items, spans, strict=True):
        if k is Ellipsis:
            out.extend((slice(None), dim + i) for i in range(rest))
            dim += rest
        else:
            out.append((k, dim))
            dim += n
    if not ellipses:
        out.extend((slice(None), dim + i) for i in range(rest))
    return out


def vector_matmul(
    matrices: Callable[[Any, Any], Any],
    a: Any,
    b: Any,
    expand: Callable[[Any, int], Any],
    squeeze: Callable[[Any, int], Any],
) -> Any:
    """The Array API's ``a @ b`` from ``matrices``, a matmul of (stacks of) matrices: a 1-d
    ``a`` is a one-row matrix, a 1-d ``b`` a one-column one, and the result loses the axes
    they added. ``expand(x, axis)`` and ``squeeze(x, axis)`` are the framework's."""
    ra, rb = len(a.shape), len(b.shape)
    out = matrices(expand(a, 0) if ra == 1 else a, expand(b, -1) if rb == 1 else b)
    if rb == 1:
        out = squeeze(out, -1)
    return squeeze(out, -1 if rb == 1 else -2) if ra == 1 else out


def channel_fold(
    shape: Sequence[int], pads: Sequence[tuple[int, int]]
) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """How to run the core's ``pad(x, pads, mode)`` (one (before, after) pair per axis) on a
    reflect or replicate kernel that takes (N, C, *spatial): ``(first, lead, folded)``, where
    ``first`` is the first padded axis (at least 1), ``pads[first:]`` the kernel's spatial pads,
    ``folded`` the shape with the axes ``lead`` before ``first - 1`` made one N (the result is
    reshaped to ``(*lead, *y.shape[1:])``); None when no axis is padded (a copy of x)."""
    nonzero = [i for i, p in enumerate(pads) if p != (0, 0)]
    if not nonzero:
        return None
    first = max(nonzero[0], 1)
    lead = tuple(shape[: first - 1])
    return first, lead, (math.prod(lead), *shape[first - 1 :])


def find_native(namespaces: Sequence[Any], names: Sequence[str]) -> Any:
    """The first of ``names`` found on the first namespace that has one, or None."""
    for namespace in namespaces:
        for name in names:
            fn = getattr(namespace, name, None)
            if fn is not None:
                return fn
    return None


class PythonOperatorOps:
    """Op-table entries that every framework spells with Python operators, and the defaults
    composed from the table's own ops where a framework has no kernel (or an imprecise one)."""

    add = staticmethod(operator.add)
    subtract = staticmethod(operator.sub)
    multiply = staticmethod(operator.mul)
    divide = staticmethod(operator.truediv)
    floor_divide = staticmethod(operator.floordiv)
    remainder = staticmethod(operator.mod)
    pow = staticmethod(operator.pow)
    matmul = staticmethod(operator.matmul)
    equal = staticmethod(operator.eq)
    not_equal = staticmethod(operator.ne)
    less = staticmethod(operator.lt)
    less_equal = staticmethod(operator.le)
    greater = staticmethod(operator.gt)
    greater_equal = staticmethod(operator.ge)
    negative = staticmethod(operator.neg)
    getitem = staticmethod(operator.getitem)

    def log_softmax(self, x: Any, axis: int) -> Any:
        """log(softmax(x)) along ``axis`` as ``s - log(sum(exp(s)))`` with ``s = x - max(x)``
        (stable: no exp overflows)."""
        ops = cast(OpTable, self)  # the table this class is the base of
        axes = (axis,) if len(x.shape) else ()  # a 0-d tensor: its only element
        s = ops.subtract(x, ops.max(x, axes, True))
        return ops.subtract(s, ops.log(ops.sum(ops.exp(s), axes, True)))


def summed_matmul(
    a: Any,
    b: Any,
    expand: Callable[[Any, int], Any],
    squeeze: Callable[[Any, int], Any],
    cast: Callable[[Any, Any], Any],
    int64: Any,
    zeros: Callable[[tuple[int, ...], Any], Any] | None = None,
) -> Any:
    """The Array API's ``a @ b`` computed exactly for the dtypes a framework's matmul kernels
    lack (integers, bool): each row times each column summed over the inner axis in int64 and
    ``cast(x, dtype)`` back (integers wrap as in NumPy; bool: whether any product is true),
    batch dimensions broadcast, 1-d operands as ``vector_matmul`` has them. ``expand`` and
    ``squeeze`` are the framework's; ``zeros(shape, like)``, where given, makes the result of
    zero-size operands (for frameworks that cannot reduce zero-size arrays). ValueError for
    inner dimensions that differ."""

    def matrices(a: Any, b: Any) -> Any:
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(
                "Expected matmul operands with matching inner dimensions. "
                f"Received: shapes {tuple(a.shape)} and {tuple(b.shape)}"
            )
        if zeros is not None and (0 in a.shape or 0 in b.shape):
            batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
            return zeros((*batch, a.shape[-2], b.shape[-1]), a)
        out = (cast(expand(a, -1), int64) * cast(expand(b, -3), int64)).sum(-2)
        return cast(out, a.dtype)

    return vector_matmul(matrices, a, b, expand, squeeze)


#: the Python scalars the core hands an op as an operand
_PY_SCALARS = (bool, int, float, complex)


def as_tensors(a: Any, b: Any, full: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    """The operands ``a`` and ``b`` of a binary op for a framework function that takes
    tensors only: a Python scalar becomes a 0-d tensor like the other operand
    (``full(like, value)``, the framework's)."""
    if isinstance(a, _PY_SCALARS):
        return full(b, a), b
    if isinstance(b, _PY_SCALARS):
        return a, full(a, b)
    return a, b


def nan_first(ops: Any, floating: Callable[[Any], bool], *, ask: bool = False) -> None:
    """Make the op table ``ops``'s argmax and argmin give, where a NaN lies along the axis, the
    first NaN's place, as NumPy and PyTorch do, for frameworks whose kernels skip NaN: on input
    that ``floating(x)`` says is floating, composed from the table's own isnan, any, astype,
    argmax and where. ``ask``: first ask the device whether x holds a NaN at all (a NaN sum;
    so does inf - inf, which only costs the exact path) and skip the rest where it holds none;
    without it the composition runs on every floating input (no device sync: traceable)."""
    argmax = ops.argmax

    def first_nan(arg: ArgReduction) -> ArgReduction:
        def op(x: Any, axis: int | None) -> Any:
            out = arg(x, axis)
            if not floating(x) or (ask and not bool(ops.isnan(ops.sum(x, None, False)))):
                return out
            nan = ops.isnan(x)
            first = argmax(ops.astype(nan, uint8), axis)
            axes = None if axis is None or not len(x.shape) else (axis,)  # 0-d: its element
            return ops.where(ops.any(nan, axes, False), first, out)

        return op

    for name in ("argmax", "argmin"):
        setattr(type(ops), name, staticmethod(first_nan(getattr(ops, name))))


def native_astype(
    backend: str, table: Mapping[DType, Any], alternatives: Mapping[DType, str]
) -> Callable[[Any, DType], Any]:
    """The op table's ``astype`` for a framework whose tensors convert with
    ``x.astype(native_dtype)``: the dtype from ``table`` (the adapter's ``dtypes.NATIVE``);
    ``dtype_error`` (naming ``alternatives``) for a dtype the framework lacks."""

    def astype(x: Any, dt: DType) -> Any:
        try:
            native = table[dt]
        except KeyError:
            raise dtype_error(backend, table, dt, alternatives) from None
        return x.astype(native)

    return astype
