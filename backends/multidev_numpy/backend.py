"""The NumPy adapter: native tensors are ``np.ndarray``, on the one CPU device."""

from __future__ import annotations

from typing import Any

import numpy as np

from multidev.contract import AdapterBase
from multidev.device import CPU0, Device
from multidev.dtypes import DType, from_numpy_dtype

__all__ = ["Backend"]


class Backend(AdapterBase):
    """NumPy: the reference every other backend is compared with."""

    name = "numpy"
    capabilities = frozenset({"bfloat16", "float16", "float64", "complex"})
    tensor_types = (np.ndarray,)
    native_full = staticmethod(lambda shape, value, dt, dev: np.full(shape, value, dtype=dt))
    native_empty = staticmethod(lambda shape, dt, dev: np.empty(shape, dtype=dt))

    def native_device(self, dev: Device) -> str:
        return "cpu"

    def device_of(self, x: Any) -> Device:
        return CPU0

    def dtype_of(self, x: Any) -> DType:
        return from_numpy_dtype(x.dtype)

    def from_numpy(self, arr: np.ndarray, dev: Device) -> np.ndarray:
        return arr

    def to_numpy(self, x: Any) -> np.ndarray:
        return x

    def to_device(self, x: Any, dev: Device) -> np.ndarray:
        return np.array(x)

    def is_trainable_variable(self, var: Any) -> bool:
        return isinstance(var, np.ndarray)

    def setitem(self, x: Any, key: Any, value: Any) -> Any:
        if not x.flags.writeable:
            raise ValueError("Expected a writable array. Received: a read-only NumPy array")
        x[key] = value
        return x
