"""The TensorFlow adapter: devices, tensor creation and conversion, variables.

Devices are TensorFlow's logical devices (``/CPU:0``, ``/CPU:1``, ``/GPU:0``). When this
adapter is built before TensorFlow has initialised its runtime, it splits the physical CPU
into ``MULTIDEV_TF_CPU_DEVICES`` logical CPUs (default 2; 1 disables) so that multi-device
code can be tested without a GPU, and turns memory growth on for every GPU so that
TensorFlow does not take all GPU memory. A runtime the user already initialised is used
as it is. Listing the devices starts TensorFlow's runtime, which on a CUDA build initialises
CUDA: a child forked later cannot use the GPU (use the ``spawn`` start method there).

TensorFlow eager places an op on its default device (GPU:0 if there is one, else CPU:0)
whatever its inputs' device, so the core runs ops on every other device inside
``scope(dev)`` (on every device when there is a GPU). Inside a GPU scope soft placement is
off, so an op or creation without a GPU kernel for its dtype raises TensorFlow's error
instead of running on the CPU under a tensor that says ``gpu:i``.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress

import numpy as np
import tensorflow as tf

from multidev.contract import AdapterBase, env_count
from multidev.device import CPU0, Device
from multidev.dtypes import DType

from . import array_api, indexing
from .autograd import Autograd
from .jit import Jit
from .ops import copy as _deep_copy

__all__ = ["CPU_DEVICES_ENV", "Backend", "has_fused_apply"]

#: Number of logical CPU devices to create when TensorFlow is not initialised yet.
CPU_DEVICES_ENV = "MULTIDEV_TF_CPU_DEVICES"

_NAME = re.compile(r"(?:^|[/:])(CPU|GPU):(\d+)$", re.IGNORECASE)
_DLPACK_KINDS = frozenset("biuf")
_from_dlpack = tf.experimental.dlpack.from_dlpack
#: dtypes TensorFlow's fused gradient-descent update has a GPU kernel for
_FUSED_GPU_DTYPES = frozenset({tf.float16, tf.float32, tf.float64})


def _configure_runtime() -> None:
    """Logical CPUs and GPU memory growth, only while TensorFlow is not initialised."""
    n = env_count(CPU_DEVICES_ENV, 2, "logical CPU devices to create")
    cpus = tf.config.list_physical_devices("CPU")
    with suppress(RuntimeError):  # the runtime is initialised already: use what exists
        if n > 1 and cpus and tf.config.get_logical_device_configuration(cpus[0]) is None:
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
            )
        for gpu in tf.config.list_physical_devices("GPU"):
            if tf.config.get_logical_device_configuration(gpu) is None:
                tf.config.experimental.set_memory_growth(gpu, True)


@functools.cache  # a few (dtype, device) pairs, each parsed once
def has_fused_apply(dtype: tf.DType, device: str) -> bool:
    """Whether ``ResourceApplyGradientDescent`` has a kernel for a variable of ``dtype`` on
    ``device`` (its TensorFlow name): every number type on the CPU, only half, float and double
    on a GPU (``training_ops_gpu.cu.cc``), so a bfloat16 variable on a GPU has none."""
    m = _NAME.search(device)
    return m is None or m.group(1).upper() == "CPU" or dtype in _FUSED_GPU_DTYPES


@functools.lru_cache(maxsize=64)
def _step_size(alpha: float, dtype: tf.DType, device: str) -> tf.Tensor:
    """``alpha`` as the fused update's tensor for a variable of ``dtype`` on ``device``, made
    once (a tf.constant per parameter cost an SGD step 6 us each), eager even in a trace."""
    with tf.init_scope(), tf.device(device):
        return tf.constant(alpha, dtype)


class _StrictPlacement:
    """Soft device placement off while at least one multidev GPU scope is open (TensorFlow
    has one setting for the whole process), then back to what it was when the backend was
    built."""

    def __init__(self) -> None:
        self._depth = 0
        self._lock = threading.Lock()
        self._before = tf.config.get_soft_device_placement()

    @contextmanager
    def on(self, name: str) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                tf.config.set_soft_device_placement(False)
            self._depth += 1
        try:
            with tf.device(name):
                yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    tf.config.set_soft_device_placement(self._before)


def _parse_name(place: str) -> Device | None:
    m = _NAME.search(place)
    return None if m is None else Device(m.group(1).lower(), int(m.group(2)))


class Backend(Jit, Autograd, AdapterBase):
    """TensorFlow 2 eager tensors; ``tf.Variable`` for parameters."""

    name = "tensorflow"
    tensor_types = (tf.Tensor, tf.Variable)
    convert_hint = (
        "Cast it first, e.g. with tf.cast(x, tf.float32), or use tf.math.real/tf.math.imag "
        "for complex values."
    )
    move_hint = "Copy it to '/CPU:0' with tf.identity first."

    def __init__(self) -> None:
        super().__init__()
        _configure_runtime()
        devices = self.devices()
        self._num_gpus = sum(d.type == "gpu" for d in devices)
        self._default = Device("gpu", 0) if self._num_gpus else CPU0
        self._natives.update({d: self.make_native_device(d) for d in devices})
        self._places[""] = self._default
        # with a GPU every device is scoped: eager puts an unscoped op on GPU:0 when it has a
        # kernel there, on the CPU otherwise, whatever its inputs' device
        self.scoped_devices = frozenset(devices) - (set() if self._num_gpus else {self._default})
        self._strict = _StrictPlacement()
        caps = {"autograd", "implicit_grad", "gpu", "bfloat16", "float16", "float64", "complex"}
        caps |= {"dlpack", "jit"}
        if sum(d.type == "cpu" for d in devices) > 1:
            caps.add("multi_device")
        self.capabilities = frozenset(caps)

    # ---------------------------------------------------------------- devices
    def list_devices(self) -> list[Device]:
        """TensorFlow's logical CPU and GPU devices, CPUs first, each by index."""
        named = (_parse_name(d.name) for d in tf.config.list_logical_devices())
        found = {d for d in named if d is not None} | {CPU0}
        return sorted(found, key=lambda d: (d.type != "cpu", d.index))

    def default_device(self) -> Device:
        return self._default

    def make_native_device(self, dev: Device) -> str:
        """TensorFlow's device string: '/CPU:0', '/GPU:1'."""
        return f"/{dev.type.upper()}:{dev.index}"

    def parse_native_device(self, obj) -> Device | None:
        """A Device from tf.config.LogicalDevice, tf.config.PhysicalDevice or tf.DeviceSpec."""
        if isinstance(obj, (tf.config.LogicalDevice, tf.config.PhysicalDevice)):
            return _parse_name(obj.name)
        if isinstance(obj, tf.DeviceSpec) and (obj.device_type or "").lower() in ("cpu", "gpu"):
            return Device(obj.device_type.lower(), obj.device_index or 0)
        return None

    place_device = staticmethod(_parse_name)

    def scope(self, dev: Device) -> AbstractContextManager:
        """``tf.device`` for ``dev``; on a GPU with soft placement off, so that an op TensorFlow
        has no GPU kernel for (for the dtype) raises rather than runs on the CPU."""
        if dev.type == "gpu":
            return self._strict.on(self._natives[dev])
        return tf.device(self._natives[dev])

    # ---------------------------------------------------------------- tensors
    def shape_of(self, x) -> tuple[int, ...]:
        return tuple(x.shape.as_list())

    def from_numpy(self, arr: np.ndarray, dev: Device):
        """A tensor on ``dev``; shares the array's memory on CPU:0 when TensorFlow can
        (writable, C-contiguous, aligned for its kernels), else copies."""
        if (
            dev is CPU0
            and arr.flags.c_contiguous
            and arr.flags.writeable
            and arr.size
            and arr.dtype.kind in _DLPACK_KINDS
            # TensorFlow's kernels assume buffers aligned like this (Eigen's largest packet)
            and arr.ctypes.data % array_api.ALIGNMENT == 0
        ):
            return _from_dlpack(arr.__dlpack__())
        with self.scope(dev):
            return tf.constant(arr)

    def to_numpy(self, x) -> np.ndarray:
        """The values on the host: a read-only view of a CPU tensor's buffer, else a copy."""
        try:
            return np.asarray(memoryview(x))
        except (TypeError, ValueError):
            return np.asarray(x.numpy(), dtype=x.dtype.as_numpy_dtype)

    def to_device(self, x, dev: Device):
        """A new tensor on ``dev`` with its own buffer."""
        with self.scope(dev):
            return _deep_copy(x) if dev.type == "cpu" else tf.identity(x)

    def full(self, shape, value, dt: DType, dev: Device):
        with self.scope(dev):
            return tf.fill(shape, np.asarray(value, dtype=dt.numpy))

    setitem = staticmethod(indexing.setitem)
    seed = staticmethod(tf.random.set_seed)
    from_dlpack = staticmethod(array_api.from_dlpack)

    # ---------------------------------------------------------------- variables
    def is_trainable_variable(self, var) -> bool:
        return isinstance(var, tf.Variable) and var.trainable

    def make_variable(self, x):
        """A trainable tf.Variable holding a copy of x's values, on x's device."""
        with tf.device(x.device):
            return tf.Variable(_deep_copy(x), trainable=True)

    def stop_gradient(self, x):
        """``tf.stop_gradient``: a tape records every read of a variable or tensor, so a
        detached value is a new tensor (``p.data`` stays the variable itself)."""
        return tf.stop_gradient(x)

    def add_scaled_(self, x, y, alpha: float):
        """``x += alpha * y``: one fused kernel on a variable where TensorFlow has it for the
        variable's dtype and device, a read, multiply-add and assign otherwise; a new tensor
        for a non-variable."""
        if isinstance(x, tf.Variable):
            if has_fused_apply(x.dtype, x.device):
                tf.raw_ops.ResourceApplyGradientDescent(
                    var=x.handle, alpha=_step_size(-alpha, x.dtype, x.device), delta=y
                )
            else:
                x.assign(x + y * alpha)
            return x
        return x + y * alpha
