"""Tensor creation: every function takes ``dtype=`` and ``device=`` and honours ``with device:``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as _dt
from . import random as _random
from . import registry
from .dispatch import asarray, device_for, from_host
from .tensors import Tensor

__all__ = [
    "arange",
    "asarray",
    "eye",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "zeros",
    "zeros_like",
]


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(
            f"Expected a shape: an int or a tuple of ints. Received: {shape!r}"
        ) from None
    if any(s < 0 for s in out):
        raise ValueError(f"Expected non-negative dimensions. Received: shape {out}")
    return out


def _varshape(shape: tuple) -> tuple[int, ...]:
    """``rand(2, 3)`` and ``rand((2, 3))`` both mean shape (2, 3)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return _shape(shape[0])
    return _shape(shape)


def full(shape: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``."""
    bk = registry.current()
    dt = _dt.default_for(fill_value) if dtype is None else _dt.as_dtype(dtype)
    dev = device_for(bk, device)
    return Tensor(bk.full(_shape(shape), fill_value, dt, dev), bk, dev, dt)


def zeros(shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
    return full(shape, 0, _dt.float32 if dtype is None else dtype, device)


def ones(shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
    return full(shape, 1, _dt.float32 if dtype is None else dtype, device)


def full_like(x: Tensor, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    return full(
        x.shape,
        fill_value,
        x.dtype if dtype is None else dtype,
        x.device if device is None else device,
    )


def zeros_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    return full_like(x, 0, dtype, device)


def ones_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    return full_like(x, 1, dtype, device)


def arange(start, stop=None, step=1, dtype: Any = None, device: Any = None) -> Tensor:
    """Values from ``start`` to ``stop`` (exclusive); ints give int64, floats float32."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dt = _dt.int64 if is_int else _dt.float32
    else:
        dt = _dt.as_dtype(dtype)
    arr = np.arange(start, stop, step, dtype=np.float64 if dt.kind == "f" else None)
    bk = registry.current()
    return from_host(bk, arr.astype(dt.numpy), dt, device_for(bk, device))


def eye(
    n_rows: int, n_cols: int | None = None, *, k: int = 0, dtype: Any = None, device: Any = None
) -> Tensor:
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    bk = registry.current()
    arr = np.eye(n_rows, n_cols, k=k, dtype=dt.numpy)
    return from_host(bk, arr, dt, device_for(bk, device))


def _random_tensor(host: np.ndarray, dtype: Any, device: Any) -> Tensor:
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"Expected a floating-point dtype for random values. Received: {dt}")
    if dt is not _dt.float32:
        host = host.astype(dt.numpy)
    bk = registry.current()
    return from_host(bk, host, dt, device_for(bk, device))


def rand(*shape: int | Sequence[int], dtype: Any = None, device: Any = None) -> Tensor:
    """Uniform values in [0, 1); identical on every backend for one ``md.manual_seed``."""
    return _random_tensor(_random.host_uniform(_varshape(shape)), dtype, device)


def randn(*shape: int | Sequence[int], dtype: Any = None, device: Any = None) -> Tensor:
    """Standard normal values; identical on every backend for one ``md.manual_seed``."""
    return _random_tensor(_random.host_normal(_varshape(shape)), dtype, device)
