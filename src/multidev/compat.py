"""PyTorch spellings on multidev: the names PyTorch code reaches for (``md.tensor``, ``md.mm``,
``md.cat``, ``x.view``, ``x.cuda(1)``, ``x.sum(dim=1)``, …), each written once on top of
multidev's own functions, so every backend runs them with its own kernels.

The functions are exported by ``multidev``; the Tensor methods are attached here, in one
place, when multidev is imported. Where PyTorch and the Python Array API disagree on a name,
the Array API meaning stands: ``x.size`` is the number of elements (an int), so PyTorch's
``x.size()`` raises ``TypeError: 'int' object is not callable``; use ``x.shape`` or
``x.numel()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as _dt
from . import ops, registry
from . import random as _random
from .creation import as_leaf, asarray, normalize_shape, zeros
from .device import Device, as_device, cpu, gpu
from .dispatch import as_tensor, check_same, device_for, from_host, new_tensor
from .errors import ShapeError
from .tensors import Tensor

__all__ = [
    "FloatTensor",
    "allclose",
    "cat",
    "device",
    "mm",
    "randint",
    "randperm",
    "tensor",
]


def tensor(
    data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors).

    Python floats give float32 and ints int64, as in PyTorch. ``requires_grad=True`` gives an
    ``md.nn.Parameter`` (floating point only; TypeError otherwise).
    """
    return as_leaf(asarray(data, dtype=dtype, device=device, copy=True), requires_grad)


def device(type: Any, index: int | None = None) -> Device:
    """PyTorch's ``torch.device``: ``device("cuda:1")``, ``device("cuda", 1)``, ``device("cpu")``.

    Only names a device; using one the backend lacks raises ``md.DeviceError`` then.
    Raises ValueError for a malformed name.
    """
    if index is None:
        return as_device(type)
    return Device(type, index)


class _TensorType(type):
    dtype: _dt.DType

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


class FloatTensor(metaclass=_TensorType):
    """PyTorch's legacy constructor: ``FloatTensor([1, 2])`` is a float32 tensor of those values,
    ``FloatTensor(2, 3)`` a float32 tensor of shape (2, 3) (zeros here). ``isinstance(x,
    md.FloatTensor)`` is true for float32 tensors."""

    dtype = _dt.float32

    def __new__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[misc]
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return zeros(*args, dtype=cls.dtype, device=device)
        if len(args) == 1:
            return tensor(args[0], dtype=cls.dtype, device=device)
        raise TypeError(
            f"Expected FloatTensor(data) or FloatTensor(*sizes). Received: {len(args)} "
            f"arguments {args!r}"
        )


def matmul_of_rank(name: str, rank: int, input: Any, mat2: Any) -> Tensor:
    """``md.matmul`` of two tensors of ``rank`` dimensions (PyTorch's ``mm``, ``bmm``);
    ValueError naming ``name`` for other ranks."""
    a, b = as_tensor(input), as_tensor(mat2, like=as_tensor(input))
    if a.ndim != rank or b.ndim != rank:
        raise ShapeError(
            f"Expected two {rank}-D tensors for {name}. Received: shapes {a.shape} and "
            f"{b.shape}. Use md.matmul for other ranks.",
            op=name,
            shapes=(a.shape, b.shape),
        )
    return ops.matmul(a, b)


def mm(input: Any, mat2: Any) -> Tensor:
    """Matrix product of two 2-D tensors (``md.matmul`` for other ranks)."""
    return matmul_of_rank("mm", 2, input, mat2)


def cat(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along ``dim`` (PyTorch's name for ``md.concat``)."""
    return ops.concat(tensors, axis=dim if axis is None else axis)


def allclose(
    input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """True when ``|input - other| <= atol + rtol * |other|`` everywhere (broadcasting); equal
    infinities are close, NaNs only with ``equal_nan``. Computed on the tensors' device."""
    a = as_tensor(input)
    b = as_tensor(other, like=a)
    check_same(a, b)
    if a.shape != b.shape:  # else the error would name an op of the composition below
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise ShapeError(
                f"Expected shapes that broadcast together for allclose. Received: {a.shape} "
                f"and {b.shape}",
                op="allclose",
                shapes=(a.shape, b.shape),
            ) from None
    dt = _dt.result_type(a.dtype, b.dtype)
    dt = dt if dt.kind == "f" else _dt.float32
    a, b = ops.astype(a, dt, copy=False), ops.astype(b, dt, copy=False)
    inf = float("inf")
    finite = (abs(a) < inf) & (abs(b) < inf)
    fa, fb = ops.where(finite, a, 0.0), ops.where(finite, b, 0.0)  # no inf - inf below
    close = (a == b) | (finite & (abs(fa - fb) <= atol + rtol * abs(fb)))
    if equal_nan:
        close = close | ((a != a) & (b != b))
    if close.size == 0:
        return True
    return bool(ops.min(ops.astype(close, _dt.int32)).item())


def _int_tensor(host: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dt = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    bk = registry.current()
    return as_leaf(from_host(bk, host.astype(dt.numpy), dt, device_for(bk, device)), requires_grad)


def randint(
    low: int,
    high: Any = None,
    size: Any = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers uniform in [low, high), int64 by default: ``randint(10, (2, 3))``,
    ``randint(5, 10, (2, 3))`` or ``randint(10, size=(2, 3))``.

    Drawn by multidev's seeded generator, so identical on every backend for one
    ``md.manual_seed``. Raises ValueError when ``high <= low``.
    """
    if size is None and high is not None and not isinstance(high, (int, np.integer)):
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("Expected a size for randint, e.g. md.randint(10, (2, 3)). Received none")
    if int(high) <= int(low):
        raise ValueError(f"Expected low < high for randint. Received: low={low}, high={high}")
    host = _random.generator().integers(
        int(low), int(high), size=normalize_shape(size), dtype=np.int64
    )
    return _int_tensor(host, dtype, device, requires_grad)


def randperm(
    n: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A random permutation of ``0 … n-1`` (int64 by default), drawn by multidev's seeded
    generator (``random.host_permutation``, the same on every NumPy release), so identical
    on every backend for one ``md.manual_seed``."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"Expected a non-negative int for randperm. Received: {n!r}")
    host = _random.host_permutation(int(n), _random.draw_seed())
    return _int_tensor(host, dtype, device, requires_grad)


# ---------------------------------------------------------------- Tensor methods


def _cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """This tensor on a GPU: ``x.cuda()`` (GPU 0), ``x.cuda(1)``; the same object when it is
    already there. Raises ``md.DeviceError`` when the backend lacks that GPU."""
    if device is None:
        dev = gpu(0)
    elif isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        dev = gpu(int(device))
    else:
        dev = as_device(device)
        if dev.type != "gpu":
            raise ValueError(f"Expected a GPU for cuda(). Received: {dev}. Use .to({str(dev)!r})")
    return self.to(dev)


def _cpu(self: Tensor) -> Tensor:
    """This tensor on the CPU; the same object when it is already there."""
    return self.to(cpu())


def _t(self: Tensor) -> Tensor:
    """The transpose of a matrix; a tensor of fewer than two dimensions is returned as it is."""
    if self.ndim < 2:
        return self
    if self.ndim > 2:
        raise ShapeError(
            f"Expected a tensor of at most 2 dimensions for t(). Received: shape {self.shape}. "
            "Use md.permute_dims or x.transpose(d0, d1).",
            op="t",
            shapes=(self.shape,),
        )
    return ops.permute_dims(self, (1, 0))


def _view(self: Tensor, *shape: Any) -> Tensor:
    """The same values in ``shape`` (``x.view(2, 3)``, ``x.view((2, 3))``, ``x.view(-1)``), as
    ``reshape`` gives them."""
    return ops.reshape(self, shape[0] if len(shape) == 1 else shape)


def _detach(self: Tensor) -> Tensor:
    """This tensor's values outside gradient recording: no gradient flows back through it
    (sharing the storage where the framework's tensors are mutable)."""
    bk = self._bk
    return new_tensor(bk.stop_gradient(self._native), bk, self._dev, self._dtype)


def _clone(self: Tensor) -> Tensor:
    """A copy of this tensor on the same device."""
    return self.to(self._dev, copy=True)


def _cast(dtype: _dt.DType, name: str):
    def method(self: Tensor) -> Tensor:
        return self if self._dtype is dtype else ops.astype(self, dtype)

    method.__name__ = name
    method.__doc__ = f"This tensor as {dtype.name} (the same object when it already is)."
    return method


def _requires_grad(self: Tensor) -> bool:
    """Whether ``backward`` fills a gradient for this tensor: False except for parameters."""
    return False


def _reduction(fn: Any, name: str):
    def method(
        self: Tensor,
        dim: Any = None,
        keepdim: bool = False,
        *,
        axis: Any = None,
        keepdims: bool | None = None,
    ) -> Tensor:
        if dim is not None and axis is not None:
            raise TypeError(f"Expected dim or axis for {name}(). Received: both")
        keep = keepdim if keepdims is None else keepdims
        return fn(self, axis=dim if axis is None else axis, keepdims=keep)

    method.__name__ = name
    method.__doc__ = (
        f"``md.{name}`` over ``dim`` (PyTorch) or ``axis`` (Array API), with ``keepdim`` or "
        "``keepdims``."
    )
    return method


def tensor_methods() -> dict[str, Any]:
    """The PyTorch-spelled methods of ``md.Tensor`` by name (``multidev.methods`` attaches
    them with the rest)."""
    methods: dict[str, Any] = {
        "cuda": _cuda,
        "cpu": _cpu,
        "t": _t,
        "view": _view,
        "detach": _detach,
        "clone": _clone,
        "float": _cast(_dt.float32, "float"),
        "double": _cast(_dt.float64, "double"),
        "long": _cast(_dt.int64, "long"),
        "int": _cast(_dt.int32, "int"),
        "requires_grad": property(_requires_grad),
        "data": property(_detach, doc="A tensor sharing this one's storage (``x.detach()``)."),
    }
    for name in ("sum", "mean", "prod", "argmax", "argmin"):
        methods[name] = _reduction(getattr(ops, name), name)
    return methods
