"""The NumPy adapter: native tensors are ``np.ndarray``, on the one CPU device."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from multidev.contract import AdapterBase, Framework
from multidev.device import Device
from multidev.dtypes import DType, from_numpy_dtype

from . import FRAMEWORK
from .dtypes import NATIVE
from .linalg import FFT, LINALG
from .ops import OPS, writable

__all__ = ["Backend"]

_CPU = Device("cpu", 0)


class Backend(AdapterBase):
    """NumPy: the reference every other backend is compared with."""

    name = "numpy"
    framework: ClassVar[Framework] = FRAMEWORK
    capabilities = frozenset({"bfloat16", "float16", "float64", "complex"})
    tensor_types = (np.ndarray,)
    dtypes = NATIVE
    ops = OPS
    linalg = LINALG
    fft = FFT

    def native_device(self, dev: Device) -> str:
        return "cpu"

    def device_of(self, x: Any) -> Device:
        return _CPU

    def dtype_of(self, x: Any) -> DType:
        return from_numpy_dtype(x.dtype)

    def from_numpy(self, arr: np.ndarray, dev: Device) -> np.ndarray:
        return arr

    def to_numpy(self, x: Any) -> np.ndarray:
        return x

    def to_device(self, x: Any, dev: Device) -> np.ndarray:
        return np.array(x)

    def full(self, shape: tuple[int, ...], value: Any, dt: DType, dev: Device) -> np.ndarray:
        return np.full(shape, value, dtype=dt.numpy)

    def empty(self, shape: tuple[int, ...], dt: DType, dev: Device) -> np.ndarray:
        return np.empty(shape, dtype=dt.numpy)

    def is_trainable_variable(self, var: Any) -> bool:
        return isinstance(var, np.ndarray)

    def setitem(self, x: Any, key: Any, value: Any) -> Any:
        writable(x)[key] = value
        return x
