"""Devices: one value type for every framework, one parser for every spelling."""

from __future__ import annotations

import builtins
import contextvars
import operator
import re
from typing import Any

import numpy as np

from .errors import DeviceError

__all__ = [
    "Device",
    "cpu",
    "default_device",
    "devices",
    "gpu",
    "num_gpus",
    "try_all_gpus",
    "try_gpu",
]

_TYPES = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}
# cpu, gpu:1, cuda:1, gpu(1), /GPU:1, /device:GPU:1, /job:localhost/replica:0/task:0/device:CPU:0
_PATTERN = re.compile(
    r"^(?:/job:[^/]+(?:/replica:\d+)?(?:/task:\d+)?)?/?(?:device:)?"
    r"(?P<type>cpu|gpu|cuda)(?::(?P<i1>\d+)|\((?P<i2>\d*)\))?$",
    re.IGNORECASE | re.ASCII,
)

_interned: dict[tuple[str, int], Device] = {}
_scope: contextvars.ContextVar[tuple[Device, ...]] = contextvars.ContextVar(
    "multidev_device_scope", default=()
)


def _index(type: Any, index: Any) -> int:
    """A device index that is an integer (``int``, ``np.int64``), never a float or a bool."""
    if not isinstance(index, (bool, np.bool_)):
        try:
            return operator.index(index)
        except TypeError:
            pass
    raise TypeError(
        "Expected an int device index, as in Device('gpu', 1). "
        f"Received: Device({type!r}, {index!r}), a {builtins.type(index).__name__}. "
        "Pass an int."
    )


class Device:
    """A place for tensors: ``Device("gpu", 1)``. Frozen, hashable, interned.

    Used as a context manager it becomes the default placement for tensors created inside.
    """

    __slots__ = ("index", "type")
    type: str
    index: int

    def __new__(cls, type: str = "cpu", index: int = 0) -> Device:
        # exact types first: 5.0 and True hash like 5 and 1, so the cache alone would take them
        if builtins.type(index) is not int:
            index = _index(type, index)
        if not isinstance(type, str):
            raise TypeError(
                "Expected a device type string, 'cpu' or 'gpu'. "
                f"Received: Device({type!r}, {index!r}). Use md.Device.parse() for other objects."
            )
        key = (type, index)
        try:
            return _interned[key]
        except KeyError:
            pass
        if type not in ("cpu", "gpu"):
            if isinstance(type, str) and type.lower() in _TYPES:
                return cls(_TYPES[type.lower()], index)  # Device("cuda", 1)
            if isinstance(type, str) and index == 0 and _PATTERN.match(type.strip()):
                return cls.parse(type)  # Device("cuda:1")
            raise ValueError(
                f"Expected a device like 'cpu' or 'gpu:0'. Received: Device({type!r}, {index!r})"
            )
        if index < 0:
            raise ValueError(
                "Expected a device like 'cpu' or 'gpu:0' with a non-negative integer index. "
                f"Received: Device({type!r}, {index!r})"
            )
        self = object.__new__(cls)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)
        _interned[key] = self
        return self

    def __setattr__(self, key, value):
        raise AttributeError("Device is immutable")

    def __reduce__(self):
        return (Device, (self.type, self.index))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # Devices are interned, so identity is equality: object's C-level __eq__ and __hash__ are
    # used as they are (sets and dicts of devices sit on every placement check).

    def __str__(self) -> str:
        if self.type == "cpu" and self.index == 0:
            return "cpu"
        return f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"Device({self.type!r}, {self.index})"

    @classmethod
    def parse(cls, obj: Any) -> Device:
        """A Device from a string ('cpu', 'gpu:1', 'cuda:1', '/GPU:1', 'gpu(1)', …),
        a Device, or a native device object of the active backend."""
        if isinstance(obj, Device):
            return obj
        if isinstance(obj, str):
            m = _PATTERN.match(obj.strip())
            if m is not None:
                idx = m.group("i1") or m.group("i2") or "0"
                return cls(_TYPES[m.group("type").lower()], int(idx))
        from . import registry

        # the active framework's own objects and spellings (e.g. paddle's "Place(gpu:0)")
        dev = registry.current().parse_native_device(obj)
        if dev is None:
            raise ValueError(f"Expected a device like 'cpu' or 'gpu:0'. Received: {obj!r}")
        return dev

    @property
    def native(self) -> Any:
        """The active framework's device object (torch.device, '/GPU:0', CUDAPlace, mx.gpu)."""
        from . import registry

        bk = registry.current()
        check_available(bk, self)
        return bk.native_device(self)

    def __enter__(self) -> Device:
        _scope.set((*_scope.get(), self))
        return self

    def __exit__(self, *exc) -> None:
        stack = _scope.get()
        _scope.set(stack[:-1])


def cpu(i: int = 0) -> Device:
    """The i-th CPU device (several exist on TensorFlow logical devices and MXNet contexts)."""
    return Device("cpu", i)


def gpu(i: int = 0) -> Device:
    """The i-th GPU."""
    return Device("gpu", i)


def as_device(obj: Any) -> Device:
    return obj if type(obj) is Device else Device.parse(obj)


def check_available(bk, dev: Device) -> None:
    """Raise DeviceError unless ``dev`` is one of the backend's devices."""
    if dev not in bk.device_set():
        have = ", ".join(str(d) for d in bk.devices())
        raise DeviceError(
            f"Expected one of the devices the {bk.name} backend has ({have}). Received: {dev}. "
            "Use md.try_gpu() to fall back to the CPU when a GPU is missing."
        )


def scoped_device() -> Device | None:
    """The innermost ``with device:`` scope, or None."""
    stack = _scope.get()
    return stack[-1] if stack else None


def num_gpus() -> int:
    """Number of GPUs the active backend can use."""
    from . import registry

    return registry.current().num_gpus()


def try_gpu(i: int = 0) -> Device:
    """``gpu(i)`` if it exists, else ``cpu()``."""
    return gpu(i) if num_gpus() >= i + 1 else cpu()


def try_all_gpus() -> list[Device]:
    """Every GPU, or ``[cpu()]`` when there is none."""
    n = num_gpus()
    return [gpu(i) for i in range(n)] if n else [cpu()]


def devices() -> list[Device]:
    """Every device the active backend can place tensors on."""
    from . import registry

    return list(registry.current().devices())


def default_device() -> Device:
    """Where new tensors go: the innermost ``with device:`` scope, else the backend's default."""
    dev = scoped_device()
    if dev is not None:
        return dev
    from . import registry

    return registry.current().default_device()


#: cpu:0, the device every backend has (devices are interned: ``dev is CPU0`` tests for it)
CPU0 = Device("cpu", 0)
