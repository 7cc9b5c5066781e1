"""Tensor creation: every function takes ``dtype=`` and ``device=`` and honours ``with device:``."""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dtypes as _dt
from . import random as _random
from . import registry
from .device import Device
from .dispatch import asarray, device_for, from_host, new_tensor
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


#: more bytes than any device holds (128 TiB): the limit where the machine's memory is unknown
_MAX_BYTES = 1 << 47


def _machine_memory() -> int:
    """The machine's physical memory in bytes where the OS reports it, else ``_MAX_BYTES``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return _MAX_BYTES


#: bytes a tensor on a device of a kind can never exceed: the machine's physical memory for a
#: CPU, else ``_MAX_BYTES``. A plain dict read once at import, not a cached function: a
#: compiler that traces Python (torch.compile) reads it inside a compiled step, where a call
#: to ``os.sysconf`` would break the step's graph.
_MEMORY_LIMITS = {"cpu": _machine_memory()}


def _memory_limit(kind: str) -> int:
    """Bytes a tensor on a device of ``kind`` can never exceed (``_MEMORY_LIMITS``)."""
    return _MEMORY_LIMITS.get(kind, _MAX_BYTES)


def _check_bytes(shape: tuple[int, ...], dt: _dt.DType, dev: Device) -> None:
    """Raise ``MemoryError`` before the framework is called if ``shape`` of ``dt`` cannot fit.

    Zero-size dimensions are left out of the count, as the frameworks' own size arithmetic
    does: ``(0, 2**63)`` is as absurd as ``(2**63,)``."""
    count = 1
    for s in shape:
        if s:
            count *= s
    size = count * dt.numpy.itemsize
    limit = _memory_limit(dev.type)
    if size > limit:
        raise MemoryError(
            f"Expected a tensor that fits in the memory of {dev} ({limit:,} bytes). Received: "
            f"shape {shape} of {dt.name}, {count:,} elements, {size:,} bytes"
            + (" (non-zero dimensions)" if 0 in shape else "")
            + ". Use a smaller shape or a smaller dtype."
        )


def _dim(value: Any, shape: Any) -> int:
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(
            f"Expected a shape: an int or a sequence of ints. Received: {shape!r} "
            f"(a {type(value).__name__} where an int belongs). Pass e.g. md.zeros((2, 3))."
        )
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"Expected a shape: an int or a sequence of ints. Received: {shape!r} "
            f"(a {type(value).__name__} where an int belongs). Pass e.g. md.zeros((2, 3))."
        ) from None


def normalize_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints: ``TypeError`` for anything but an int or a
    sequence of ints (a string is not a shape), ``ValueError`` for a negative size."""
    if (
        isinstance(shape, (str, bytes))
        or getattr(shape, "ndim", None) == 0
        or not hasattr(shape, "__iter__")
    ):
        out: tuple[int, ...] = (_dim(shape, shape),)
    else:
        out = tuple(_dim(s, shape) for s in shape)
    if any(s < 0 for s in out):
        raise ValueError(
            f"Expected non-negative sizes. Received: shape {out}. Every dimension must be >= 0."
        )
    return out


def _varshape(shape: tuple, size: Any = None) -> tuple[int, ...]:
    """``rand(2, 3)``, ``rand((2, 3))`` and ``rand(size=(2, 3))`` all mean shape (2, 3)."""
    if size is not None:
        if shape:
            raise TypeError(
                f"Expected the shape either as arguments or as size=. Received: both "
                f"{shape!r} and size={size!r}"
            )
        return normalize_shape(size)
    if len(shape) == 1 and hasattr(shape[0], "__iter__"):
        return normalize_shape(shape[0])
    return normalize_shape(shape)


def as_leaf(t: Tensor, requires_grad: bool) -> Tensor:
    """``t`` itself, or as an ``nn.Parameter`` (a tensor whose gradient ``backward`` fills)
    when ``requires_grad``; only floating-point tensors can have one."""
    if not requires_grad:
        return t
    if t.dtype.kind != "f":
        raise TypeError(
            f"Expected a floating-point dtype for requires_grad=True. Received: {t.dtype}. "
            "Pass dtype=md.float32."
        )
    from .autograd import begin_implicit
    from .nn.parameter import Parameter

    begin_implicit()  # ops on it are recorded for backward(), as in PyTorch
    return Parameter(t)


def full(
    shape: Any,
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    *,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``."""
    bk = registry.current()
    dt = _dt.default_for(fill_value) if dtype is None else _dt.as_dtype(dtype)
    dev = device_for(bk, device)
    shape = normalize_shape(shape)
    _check_bytes(shape, dt, dev)
    return as_leaf(new_tensor(bk.full(shape, fill_value, dt, dev), bk, dev, dt), requires_grad)


def _shape_or_sizes(shape: Any, sizes: tuple, size: Any) -> tuple[int, ...]:
    """The shape of ``ones(shape)`` (the Array API's form: ``shape`` is a pos-or-keyword
    argument) and of ``ones(2, 3)`` (PyTorch's: the sizes as arguments) alike."""
    given = () if shape is None and not sizes else (shape, *sizes)
    return _varshape(given, size)


def zeros(
    shape: Any = None,
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Zeros of ``shape`` (float32 by default): ``zeros((2, 3))``, ``zeros(2, 3)``,
    ``zeros(shape=(2, 3))`` or ``zeros(size=(2, 3))``."""
    dt = _dt.float32 if dtype is None else dtype
    shape = _shape_or_sizes(shape, sizes, size)
    return full(shape, 0, dt, device, requires_grad=requires_grad)


def ones(
    shape: Any = None,
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Ones of ``shape`` (float32 by default): ``ones((2, 3))``, ``ones(2, 3)``,
    ``ones(shape=(2, 3))`` or ``ones(size=(2, 3))``."""
    dt = _dt.float32 if dtype is None else dtype
    shape = _shape_or_sizes(shape, sizes, size)
    return full(shape, 1, dt, device, requires_grad=requires_grad)


def empty(
    shape: Any = None, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None
) -> Tensor:
    """A new tensor of ``shape`` (``empty((2, 3))`` or ``empty(2, 3)``) whose values are
    unspecified (float32 by default): the framework's uninitialised allocation
    (``torch.empty``, ``paddle.empty``, ``mx.np.empty``, ``np.empty``); zeros on TensorFlow,
    which has none."""
    bk = registry.current()
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    dev = device_for(bk, device)
    shape = _shape_or_sizes(shape, sizes, size)
    _check_bytes(shape, dt, dev)
    return new_tensor(bk.empty(shape, dt, dev), bk, dev, dt)


def full_like(
    x: Tensor,
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    *,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ``x``'s shape filled with ``fill_value`` (dtype and device default to ``x``'s)."""
    return full(
        x.shape,
        fill_value,
        x.dtype if dtype is None else dtype,
        x.device if device is None else device,
        requires_grad=requires_grad,
    )


def zeros_like(
    x: Tensor, dtype: Any = None, device: Any = None, *, requires_grad: bool = False
) -> Tensor:
    """A tensor of zeros of ``x``'s shape (dtype and device default to ``x``'s)."""
    return full_like(x, 0, dtype, device, requires_grad=requires_grad)


def ones_like(
    x: Tensor, dtype: Any = None, device: Any = None, *, requires_grad: bool = False
) -> Tensor:
    """A tensor of ones of ``x``'s shape (dtype and device default to ``x``'s)."""
    return full_like(x, 1, dtype, device, requires_grad=requires_grad)


def arange(
    start,
    stop=None,
    step=1,
    dtype: Any = None,
    device: Any = None,
    *,
    requires_grad: bool = False,
) -> Tensor:
    """Values from ``start`` to ``stop`` (exclusive); ints give int64, floats float32."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dt = _dt.int64 if is_int else _dt.float32
    else:
        dt = _dt.as_dtype(dtype)
    bk = registry.current()
    dev = device_for(bk, device)
    if step == 0:
        raise ValueError("Expected a non-zero step for arange. Received: step=0")
    count = (stop - start) / step
    if not math.isfinite(count):
        raise ValueError(
            "Expected finite start, stop and step for arange. "
            f"Received: start={start!r}, stop={stop!r}, step={step!r}"
        )
    _check_bytes((max(0, math.ceil(count)),), dt, dev)
    arr = np.arange(start, stop, step, dtype=np.float64 if dt.kind == "f" else None)
    return as_leaf(from_host(bk, arr.astype(dt.numpy), dt, dev), requires_grad)


def eye(
    n_rows: int,
    n_cols: int | None = None,
    *,
    k: int = 0,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A 2-d tensor with ones on the ``k``-th diagonal and zeros elsewhere (``n_rows`` by ``n_cols``)."""
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    bk = registry.current()
    dev = device_for(bk, device)
    shape = normalize_shape((n_rows, n_rows if n_cols is None else n_cols))
    _check_bytes(shape, dt, dev)
    arr = np.eye(*shape, k=k, dtype=dt.numpy)
    return as_leaf(from_host(bk, arr, dt, dev), requires_grad)


def _random_tensor(
    draw: Callable[[tuple[int, ...]], np.ndarray], shape: tuple, dtype: Any, device: Any
) -> Tensor:
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"Expected a floating-point dtype for random values. Received: {dt}")
    bk = registry.current()
    dev = device_for(bk, device)
    shape = _varshape(shape)
    _check_bytes(shape, _dt.float32 if dt.numpy.itemsize < 4 else dt, dev)
    host = draw(shape)
    if dt is not _dt.float32:
        host = host.astype(dt.numpy)
    return from_host(bk, host, dt, dev)


def rand(
    *shape: int | Sequence[int],
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform values in [0, 1); identical on every backend for one ``md.manual_seed``."""
    t = _random_tensor(_random.host_uniform, _varshape(shape, size), dtype, device)
    return as_leaf(t, requires_grad)


def randn(
    *shape: int | Sequence[int],
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal values; identical on every backend for one ``md.manual_seed``."""
    t = _random_tensor(_random.host_normal, _varshape(shape, size), dtype, device)
    return as_leaf(t, requires_grad)
