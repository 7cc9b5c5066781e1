"""The PyTorch adapter: native tensors are ``torch.Tensor``, variables ``torch.nn.Parameter``.

Devices are ``torch.device("cpu")`` and ``torch.device("cuda", i)``. GPUs are counted with
``torch.cuda.device_count()``, which asks NVML and leaves CUDA uninitialised, so a later
``fork`` still works and ``CUDA_VISIBLE_DEVICES`` is honoured. Where NVML cannot be loaded,
PyTorch falls back to the CUDA runtime, which initialises the driver in this process: a
forked child then cannot use CUDA (use the ``spawn`` start method there). The count is read
once, on first use. Memory is taken on demand by PyTorch's caching allocator.
"""

from __future__ import annotations

import operator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import torch

from multidev import dtypes as _dt
from multidev.contract import AdapterBase, PythonOperatorOps
from multidev.device import Device
from multidev.errors import DeviceError

from .autograd import Autograd

__all__ = ["Backend"]

_CPU = Device("cpu", 0)
_BOOL = torch.bool
_LONG = torch.int64
_INDEX_DTYPES = frozenset({torch.int64, torch.int32, torch.bool})
_BF16_NUMPY = _dt.bfloat16.numpy

_TO_TORCH: dict[_dt.DType, torch.dtype] = {
    _dt.bool: torch.bool,
    _dt.uint8: torch.uint8,
    _dt.int8: torch.int8,
    _dt.int16: torch.int16,
    _dt.int32: torch.int32,
    _dt.int64: torch.int64,
    _dt.float16: torch.float16,
    _dt.bfloat16: torch.bfloat16,
    _dt.float32: torch.float32,
    _dt.float64: torch.float64,
}
_FROM_TORCH: dict[torch.dtype, _dt.DType] = {v: k for k, v in _TO_TORCH.items()}


# ------------------------------------------------------------------------- ops


def _relu(x):
    return torch.relu(x) if x.dtype is not _BOOL else x.clone()


def _abs(x):
    return torch.abs(x) if x.dtype is not _BOOL else x.clone()


def _reduction(fn):
    """An (x, axis, keepdims) reduction; axis None reduces everything, () nothing."""

    def reduce(x, axis, keepdims):
        if axis is None:
            return fn(x, dim=tuple(range(x.dim())), keepdim=True) if keepdims else fn(x)
        if not axis:
            return x.clone()
        return fn(x, dim=axis, keepdim=keepdims)

    return reduce


def _prod(x, axis, keepdims):
    if axis is None:
        out = torch.prod(x)
        return out.reshape((1,) * x.dim()) if keepdims else out
    if not axis:
        return x.clone()
    for a in sorted(axis, reverse=True):
        x = torch.prod(x, dim=a, keepdim=keepdims)
    return x


def _arg(fn):
    def arg(x, axis, keepdims):
        if x.dtype is _BOOL:
            x = x.to(torch.uint8)
        return fn(x, dim=axis, keepdim=keepdims)

    return arg


def _matmul_by_sum(a, b):
    """Exact matmul for dtypes PyTorch's kernels lack (bool; integers on CUDA)."""
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise RuntimeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not match")
    out = (a2.unsqueeze(-1).to(_LONG) * b2.unsqueeze(-3).to(_LONG)).sum(-2)
    if b.dim() == 1:
        out = out.squeeze(-1)
    if a.dim() == 1:
        out = out.squeeze(-1 if b.dim() == 1 else -2)
    return out != 0 if a.dtype is _BOOL else out.to(a.dtype)


def _matmul(a, b):
    try:
        return torch.matmul(a, b)
    except RuntimeError as e:
        if a.dtype.is_floating_point or a.dim() == 0 or b.dim() == 0:
            raise
        try:
            return _matmul_by_sum(a, b)
        except RuntimeError:
            raise e from None


def _clip(x, lo, hi):
    out = torch.clamp(x, lo, hi)
    return out if out.dtype is x.dtype else out.to(x.dtype)


def _plain_key(items: tuple) -> bool:
    """Whether PyTorch indexes with these items exactly as NumPy does."""
    for k in items:
        if type(k) is slice:
            if k.step is not None and k.step < 0:
                return False
        elif isinstance(k, torch.Tensor) and k.dtype not in _INDEX_DTYPES:
            return False
    return True


def _key_dims(k) -> int:
    """How many dimensions of the indexed tensor a (non-Ellipsis) key item consumes."""
    if k is None or type(k) is bool:
        return 0
    if isinstance(k, torch.Tensor) and k.dtype is _BOOL:
        return k.dim()
    return 1


def _positive_steps(x, items: tuple):
    """``x`` flipped and the key rewritten so that every slice has a positive step and every
    index tensor is int64 (NumPy reads uint8 arrays as integer indices, PyTorch as masks)."""
    n_ellipsis = x.dim() - sum(_key_dims(k) for k in items if k is not Ellipsis)
    out, flips, dim = [], [], 0
    for k in items:
        if k is Ellipsis:
            dim += n_ellipsis
        elif type(k) is slice and k.step is not None and k.step < 0:
            size = x.shape[dim]
            r = range(*k.indices(size))
            if len(r):
                flips.append(dim)
                k = slice(size - 1 - r[0], size - r[-1], -r.step)
            else:
                k = slice(0, 0)
            dim += 1
        else:
            if isinstance(k, torch.Tensor) and k.dtype not in _INDEX_DTYPES:
                k = k.to(_LONG)
            dim += _key_dims(k)
        out.append(k)
    return (x.flip(flips) if flips else x), tuple(out)


def _getitem(x, key):
    items = key if type(key) is tuple else (key,)
    if _plain_key(items):
        return x[key]
    x, items = _positive_steps(x, items)
    return x[items]


def _write(x, key, value) -> None:
    items = key if type(key) is tuple else (key,)
    if _plain_key(items):
        x[key] = value
        return
    if not any(type(k) is slice and k.step is not None and k.step < 0 for k in items):
        x[_positive_steps(x, items)[1]] = value
        return
    # PyTorch has no negative strides: select the flat positions, then write through them
    positions = torch.arange(x.numel(), device=x.device).reshape(x.shape)
    x[torch.unravel_index(_getitem(positions, key), x.shape)] = value


class Ops(PythonOperatorOps):
    matmul = staticmethod(_matmul)
    maximum = staticmethod(torch.maximum)
    minimum = staticmethod(torch.minimum)
    logical_and = staticmethod(torch.logical_and)
    logical_or = staticmethod(torch.logical_or)
    abs = staticmethod(_abs)
    exp = staticmethod(torch.exp)
    log = staticmethod(torch.log)
    sqrt = staticmethod(torch.sqrt)
    sin = staticmethod(torch.sin)
    cos = staticmethod(torch.cos)
    tanh = staticmethod(torch.tanh)
    sigmoid = staticmethod(torch.sigmoid)
    relu = staticmethod(_relu)
    floor = staticmethod(torch.floor)
    logical_not = staticmethod(torch.logical_not)
    sum = staticmethod(_reduction(torch.sum))
    mean = staticmethod(_reduction(torch.mean))
    max = staticmethod(_reduction(torch.amax))
    min = staticmethod(_reduction(torch.amin))
    prod = staticmethod(_prod)
    argmax = staticmethod(_arg(torch.argmax))
    argmin = staticmethod(_arg(torch.argmin))
    reshape = staticmethod(torch.reshape)
    permute_dims = staticmethod(torch.permute)
    concat = staticmethod(lambda xs, axis: torch.cat(xs, dim=axis))
    stack = staticmethod(lambda xs, axis: torch.stack(xs, dim=axis))
    where = staticmethod(torch.where)
    clip = staticmethod(_clip)
    softmax = staticmethod(lambda x, axis: torch.softmax(x, dim=axis))
    log_softmax = staticmethod(lambda x, axis: torch.log_softmax(x, dim=axis))
    getitem = staticmethod(_getitem)
    astype = staticmethod(lambda x, dt: x.to(_TO_TORCH[dt]))
    copy = staticmethod(torch.clone)
    # (x, weight (out, in), bias or None): the fused layer op behind nn.Linear
    linear = staticmethod(torch.nn.functional.linear)
    # floor division and remainder through Python operators: PyTorch floors, as NumPy does
    floor_divide = staticmethod(operator.floordiv)
    remainder = staticmethod(operator.mod)


# ------------------------------------------------------------------------- adapter


class Backend(Autograd, AdapterBase):
    """PyTorch: CPU and CUDA devices, autograd, bfloat16, DLPack."""

    name = "torch"
    capabilities = frozenset({"autograd", "gpu", "bfloat16", "float16", "float64", "dlpack"})
    tensor_types = (torch.Tensor, torch.nn.Parameter)
    ops = Ops()
    reference = "multidev_torch.reference"

    def __init__(self) -> None:
        super().__init__()
        self._num_gpus: int | None = None
        self._to_native: dict[Device, torch.device] = {_CPU: torch.device("cpu")}
        self._from_native: dict[torch.device, Device] = {
            torch.device("cpu"): _CPU,
            torch.device("cpu", 0): _CPU,
        }

    def version(self) -> str:
        return str(torch.__version__)

    # devices ---------------------------------------------------------------
    def num_gpus(self) -> int:
        """CUDA GPUs visible to PyTorch (NVML-based: CUDA stays uninitialised)."""
        if self._num_gpus is None:
            # not torch.cuda.is_available(): without PYTORCH_NVML_BASED_CUDA_CHECK=1 it
            # initialises the CUDA driver, and a forked child could no longer use CUDA
            self._num_gpus = torch.cuda.device_count()
        return self._num_gpus

    def list_devices(self) -> list[Device]:
        return [_CPU] + [Device("gpu", i) for i in range(self.num_gpus())]

    def default_device(self) -> Device:
        """``torch.get_default_device()`` when it is one of ours, else the CPU."""
        native = torch.get_default_device()
        dev = self._from_native.get(native)
        if dev is None:
            dev = self.parse_native_device(native)
            if dev is None or dev not in self.device_set():
                return _CPU
        return dev

    def native_device(self, dev: Device) -> torch.device:
        try:
            return self._to_native[dev]
        except KeyError:
            pass
        if dev.type != "gpu":
            raise DeviceError(
                f"Expected cpu or a gpu:i device for the torch backend. Received: {dev}. "
                "PyTorch has a single CPU device: use md.cpu()."
            )
        native = self._to_native[dev] = torch.device("cuda", dev.index)
        return native

    def parse_native_device(self, obj: Any) -> Device | None:
        if not isinstance(obj, torch.device):
            return None
        if obj.type == "cpu":
            return Device("cpu", obj.index or 0)
        if obj.type == "cuda":
            index = obj.index
            if index is None:  # "the current CUDA device"; asking for it would initialise CUDA
                index = torch.cuda.current_device() if torch.cuda.is_initialized() else 0
            return Device("gpu", index)
        return None

    def device_of(self, x) -> Device:
        native = x.device
        try:
            return self._from_native[native]
        except KeyError:
            pass
        dev = self.parse_native_device(native)
        if dev is None:
            raise DeviceError(
                f"Expected a tensor on a cpu or cuda device. Received: a tensor on {native}. "
                "Move it first, e.g. with tensor.to('cpu')."
            )
        self._from_native[native] = dev
        return dev

    def scope(self, dev: Device) -> AbstractContextManager:
        if dev.type == "gpu":
            return torch.cuda.device(dev.index)
        return nullcontext()

    # tensors ---------------------------------------------------------------
    def dtype_of(self, x) -> _dt.DType:
        try:
            return _FROM_TORCH[x.dtype]
        except KeyError:
            raise TypeError(
                f"Expected a tensor of one of multidev's dtypes "
                f"({', '.join(d.name for d in _dt.ALL)}). Received: {x.dtype} on the torch "
                "backend. Convert it first, e.g. with tensor.to(torch.float32)."
            ) from None

    def native_dtype(self, dt: _dt.DType) -> torch.dtype:
        return _TO_TORCH[dt]

    def shape_of(self, x) -> tuple[int, ...]:
        return tuple(x.shape)

    def from_numpy(self, arr: np.ndarray, dev: Device) -> torch.Tensor:
        """Zero-copy on the CPU, except for read-only, negatively strided or byte-swapped
        arrays, which PyTorch cannot alias: those are copied."""
        bf16 = arr.dtype == _BF16_NUMPY
        if bf16:
            arr = arr.view(np.uint16)
        if not arr.flags.writeable:
            arr = arr.copy()
        try:
            t = torch.from_numpy(arr)
        except ValueError:  # negative strides or non-native byte order
            t = torch.from_numpy(np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("=")))
        if bf16:
            t = t.view(torch.bfloat16)
        if dev is not _CPU:
            t = t.to(self.native_device(dev))
        return t

    def to_numpy(self, x) -> np.ndarray:
        """The values on the host; shares memory with CPU tensors."""
        if x.dtype is torch.bfloat16:
            return x.detach().view(torch.int16).numpy(force=True).view(_BF16_NUMPY)
        return x.numpy(force=True)

    def to_device(self, x, dev: Device) -> torch.Tensor:
        return x.to(self.native_device(dev), copy=True)

    def full(self, shape, value, dt, dev) -> torch.Tensor:
        if not isinstance(value, (int, float, np.generic)):
            return super().full(shape, value, dt, dev)
        return torch.full(shape, value, dtype=_TO_TORCH[dt], device=self.native_device(dev))

    def setitem(self, x, key, value):
        """``x[key] = value`` in place; leaves that require grad are written under no_grad."""
        if x.requires_grad and x.is_leaf:
            with torch.no_grad():
                _write(x, key, value)
        else:
            _write(x, key, value)
        return x

    def seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    # parameters --------------------------------------------------------------
    def make_variable(self, x) -> torch.nn.Parameter:
        """A ``torch.nn.Parameter`` holding a copy of x (trainable when floating point)."""
        data = x.detach().clone(memory_format=torch.contiguous_format)
        return torch.nn.Parameter(data, requires_grad=data.is_floating_point())

    def variable_tensor(self, var):
        return var

    def detach(self, x) -> torch.Tensor:
        """The same storage outside autograd recording (what ``p.data`` wraps)."""
        return x.detach()

    def add_scaled_(self, x, y, alpha: float) -> torch.Tensor:
        """``x += alpha * y`` in one fused in-place kernel."""
        with torch.no_grad():
            return x.add_(y, alpha=alpha)

    def from_dlpack(self, obj) -> torch.Tensor:
        return torch.from_dlpack(obj)
