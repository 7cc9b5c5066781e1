"""The JAX adapter: native tensors are ``jax.Array``, parameters ``autograd.Variable``.

Devices are ``jax.devices()``: the CPU devices, and the GPUs where a CUDA jaxlib is installed.
When this adapter is built before JAX has started its runtime, it asks JAX for
``MULTIDEV_JAX_CPU_DEVICES`` CPU devices (default 2; 1 disables: ``jax_num_cpu_devices``), so
that multi-device code can be tested without a GPU, and it turns GPU memory preallocation off
(``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set), so that JAX does not take most of a
GPU's memory as it otherwise does. A runtime already started is used as it is.

JAX computes in 32 bits unless ``jax_enable_x64`` is on; multidev has float64 and int64 on
every backend, so the adapter turns it on when it is loaded (a process-wide JAX setting:
``jnp.array(1.0)`` is then float64 in the user's own JAX code too; multidev always passes
dtypes explicitly).

JAX arrays are immutable: an in-place write (``x[0] = 1``, an optimiser step) makes a new
array, which the core rebinds (``setitem`` returns it); a Parameter's ``Variable`` holds the
current array, so every user of the Parameter sees the write.
"""

from __future__ import annotations

import importlib.util
import os
from contextlib import suppress
from typing import Any

if "jax" not in __import__("sys").modules:  # before JAX starts: no preallocation of GPU memory
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import xla_bridge

from multidev.contract import AdapterBase, env_count
from multidev.device import CPU0, Device
from multidev.errors import DeviceError
from multidev.gpus import nvml_visible_gpu_count

from . import indexing
from .autograd import Autograd, Variable, recorded, watch
from .jit import Jit

__all__ = ["CPU_DEVICES_ENV", "Backend"]

#: Number of CPU devices to ask JAX for when its runtime has not started yet.
CPU_DEVICES_ENV = "MULTIDEV_JAX_CPU_DEVICES"

jax.config.update("jax_enable_x64", True)


def _configure_runtime() -> None:
    """CPU device count, only while JAX's backends are not initialised."""
    n = env_count(CPU_DEVICES_ENV, 2, "CPU devices to ask JAX for")
    with suppress(RuntimeError):  # the runtime has started already: use what exists
        if n > 1 and jax.config.jax_num_cpu_devices in (-1, 1):
            jax.config.update("jax_num_cpu_devices", n)


#: the place of a value being traced by ``jax.jit`` (``native_place``)
_TRACED = object()


def _platform(d: Any) -> str | None:
    return {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu", "rocm": "gpu"}.get(d.platform)


#: JAX's CUDA plugins (a CUDA jaxlib is jaxlib plus one of these)
_CUDA_PLUGINS = ("jax_cuda12_plugin", "jax_cuda13_plugin")


def _runtime_started() -> bool:
    return bool(xla_bridge.backends_are_initialized())


def _count_gpus() -> int:
    """JAX's GPUs, counted without starting its runtime where it has not started: none without
    a CUDA plugin, else NVML's count (``multidev.gpus``), so a later ``fork`` still works."""
    if not _runtime_started():
        if not any(importlib.util.find_spec(m) for m in _CUDA_PLUGINS):
            return 0
        n = nvml_visible_gpu_count()
        if n is not None:
            return n
    try:
        return len(jax.local_devices(backend="gpu"))
    except RuntimeError:  # no GPU backend in this jaxlib (the CPU wheel)
        return 0


def _copy_to(x: Any, dev: Any) -> Any:
    return jax.device_put(jnp.array(x, copy=True), dev)


_COPY_TO = recorded(_copy_to)


class Backend(Jit, Autograd, AdapterBase):
    """JAX: CPU (and CUDA) devices, autograd through a tape of ``jax.vjp``, bfloat16, DLPack."""

    name = "jax"
    tensor_types = (jax.Array, Variable)
    convert_hint = "Convert it first, e.g. with x.astype(jnp.float32)."
    move_hint = "Move it first, e.g. with jax.device_put(x, jax.devices('cpu')[0])."

    def __init__(self) -> None:
        super().__init__()
        _configure_runtime()
        devices = self.devices()
        self._num_gpus = sum(d.type == "gpu" for d in devices)
        self._default = Device("gpu", 0) if self._num_gpus else CPU0
        caps = {
            "autograd",
            "implicit_grad",
            "gpu",
            "bfloat16",
            "float16",
            "float64",
            "complex",
            "dlpack",
            "jit",
        }
        if sum(d.type == "cpu" for d in devices) > 1:
            caps.add("multi_device")
        self.capabilities = frozenset(caps)

    @staticmethod
    def native_place(x: Any) -> Any:
        """``x.device``; a tracer of ``md.jit`` (which has none) is on the default device."""
        try:
            return x.device
        except AttributeError:
            return _TRACED

    def place_device(self, place: Any) -> Device | None:
        return self._default if place is _TRACED else self.parse_native_device(place)

    # devices ---------------------------------------------------------------
    def list_devices(self) -> list[Device]:
        """JAX's CPU devices, then its GPUs, each by its index within its platform; read from
        JAX's configuration where its runtime has not started (listing its devices would start
        it, and a child forked later could not use JAX)."""
        if not _runtime_started():
            cpus = max(1, int(jax.config.jax_num_cpu_devices))
            found = [Device("cpu", i) for i in range(cpus)]
            return found + [Device("gpu", i) for i in range(_count_gpus())]
        found = [CPU0]
        for platform in ("cpu", "gpu"):
            with suppress(RuntimeError):
                found += [
                    Device(platform, i) for i in range(len(jax.local_devices(backend=platform)))
                ]
        return sorted(set(found), key=lambda d: (d.type != "cpu", d.index))

    count_gpus = staticmethod(_count_gpus)

    def default_device(self) -> Device:
        return self._default

    def make_native_device(self, dev: Device) -> Any:
        """``jax.local_devices(backend=platform)[index]``: this process's devices (in a
        ``jax.distributed`` job ``jax.devices()`` lists every process's)."""
        if dev in self.device_set():
            return jax.local_devices(backend=dev.type)[dev.index]
        raise DeviceError(
            f"Expected one of the devices the jax backend has "
            f"({', '.join(str(d) for d in self.devices())}). Received: {dev}."
        )

    def parse_native_device(self, obj: Any) -> Device | None:
        """A Device from a ``jax.Device`` (its platform and its index within the platform)."""
        kind = _platform(obj) if hasattr(obj, "platform") else None
        if kind is None:
            return None
        with suppress(RuntimeError, ValueError):
            return Device(kind, jax.local_devices(backend=obj.platform).index(obj))
        return None

    # tensors ---------------------------------------------------------------
    def from_numpy(self, arr: np.ndarray, dev: Device) -> Any:
        """A new array on ``dev`` holding ``arr``'s values (JAX copies host memory)."""
        return jax.device_put(arr, self.native_device(dev))

    def to_numpy(self, x: Any) -> np.ndarray:
        """The values on the host (read-only: JAX arrays are immutable)."""
        if type(x) is Variable:
            x = x.value
        return np.asarray(x)

    def to_device(self, x: Any, dev: Device) -> Any:
        """A new array on ``dev``; recorded (the gradient flows back to x's device), as
        ``DataParallel``'s copies of the parameters need."""
        return _COPY_TO(x, self.native_device(dev))

    def full(self, shape, value, dt, dev):
        native = self.native_device(dev)
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (int, float, bool)):
            return self.from_numpy(np.full(shape, value, dtype=dt.numpy), dev)
        return jnp.full(shape, value, dtype=self.native_dtype(dt), device=native)

    def empty(self, shape, dt, dev):
        return jnp.zeros(shape, dtype=self.native_dtype(dt), device=self.native_device(dev))

    def shape_of(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def setitem(self, x: Any, key: Any, value: Any) -> Any:
        """``x[key] = value``: the new array (a Variable keeps it and is returned)."""
        if type(x) is Variable:
            watch((x,))
            x.value = _SETITEM(x.value, key, value)
            return x
        return _SETITEM(x, key, value)

    @staticmethod
    def seed(seed: int) -> None:
        """JAX has no global generator: multidev's own generator gives its random values."""

    from_dlpack = staticmethod(jnp.from_dlpack)

    # parameters --------------------------------------------------------------
    def is_trainable_variable(self, var: Any) -> bool:
        return type(var) is Variable and var.trainable

    def make_variable(self, x: Any) -> Variable:
        """A Variable holding a copy of x's values (trainable where floating point)."""
        value = jnp.array(x.value if type(x) is Variable else x, copy=True)
        return Variable(value, trainable=bool(jnp.issubdtype(value.dtype, jnp.inexact)))

    def detach(self, x: Any) -> Any:
        """A Variable itself (``p.data`` writes into the Parameter); an array outside recording
        (a new array object: the tape knows arrays by identity)."""
        if type(x) is Variable:
            return x
        return jnp.array(x, copy=True)

    def stop_gradient(self, x: Any) -> Any:
        """A new array of the values, a Variable's too (the tape knows arrays and Variables
        by identity, so it never reaches the Variable through it)."""
        return jnp.array(x.value if type(x) is Variable else x, copy=True)

    def add_scaled_(self, x: Any, y: Any, alpha: float) -> Any:
        """``x += alpha * y``: a Variable gets the new array; a plain array is replaced."""
        if type(x) is Variable:
            watch((x,))
            x.value = _ADD_SCALED(x.value, y, alpha)
            return x
        return _ADD_SCALED(x, y, alpha)


_SETITEM = recorded(indexing.setitem)


@jax.jit
def _add_scaled(x: Any, y: Any, alpha: Any) -> Any:
    return (x + y * alpha).astype(x.dtype)


def _ADD_SCALED(x: Any, y: Any, alpha: float) -> Any:
    if type(y) is Variable:
        y = y.value
    return _add_scaled(x, y, alpha)
