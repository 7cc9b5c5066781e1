"""The PyTorch adapter: native tensors are ``torch.Tensor``, variables ``torch.nn.Parameter``.

Devices are ``torch.device("cpu")`` and ``torch.device("cuda", i)``. GPUs are counted with
``torch.cuda.device_count()``, which asks NVML and leaves CUDA uninitialised, so a later
``fork`` still works and ``CUDA_VISIBLE_DEVICES`` is honoured. Where NVML cannot be loaded,
PyTorch falls back to the CUDA runtime, which initialises the driver in this process: a
forked child then cannot use CUDA (use the ``spawn`` start method there). The count is read
once, on first use. Memory is taken on demand by PyTorch's caching allocator.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import torch

from multidev import dtypes as _dt
from multidev.contract import AdapterBase
from multidev.device import CPU0, Device
from multidev.errors import DeviceError

from .autograd import Autograd
from .indexing import write
from .jit import Jit
from .unsigned import SAME_WIDTH

__all__ = ["Backend"]

_BF16_NUMPY = _dt.bfloat16.numpy


class Backend(Jit, Autograd, AdapterBase):
    """PyTorch: CPU and CUDA devices, autograd, bfloat16, DLPack."""

    name = "torch"
    capabilities = frozenset(
        {"autograd", "implicit_grad", "gpu", "bfloat16", "float16", "float64", "complex"}
        | {"dlpack", "jit"}
    )
    tensor_types = (torch.Tensor, torch.nn.Parameter)
    from_dlpack = staticmethod(torch.from_dlpack)
    native_full = staticmethod(lambda shape, v, dt, dev: torch.full(shape, v, dtype=dt, device=dev))
    native_empty = staticmethod(lambda shape, dt, dev: torch.empty(shape, dtype=dt, device=dev))
    convert_hint = "Convert it first, e.g. with tensor.to(torch.float32)."
    move_hint = "Move it first, e.g. with tensor.to('cpu')."
    native_default = staticmethod(torch.get_default_device)

    # devices ---------------------------------------------------------------
    # CUDA GPUs visible to PyTorch (NVML-based: CUDA stays uninitialised); not
    # torch.cuda.is_available(): without PYTORCH_NVML_BASED_CUDA_CHECK=1 it initialises the
    # CUDA driver, and a forked child could no longer use CUDA
    count_gpus = staticmethod(torch.cuda.device_count)

    def default_device(self) -> Device:
        """``torch.get_default_device()`` when it is one of ours, else the CPU. Without a torch
        function mode (``with torch.device(...)`` and ``torch.set_default_device`` push one)
        that is the CPU, found without ``get_default_device``'s 15 us a call."""
        if not torch._C._len_torch_function_stack() and not torch.compiler.is_compiling():
            return CPU0
        return super().default_device()

    def make_native_device(self, dev: Device) -> torch.device:
        if dev.type == "gpu":
            return torch.device("cuda", dev.index)
        if dev is CPU0:
            return torch.device("cpu")
        raise DeviceError(
            f"Expected cpu or a gpu:i device for the torch backend. Received: {dev}. "
            "PyTorch has a single CPU device: use md.cpu()."
        )

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

    def scope(self, dev: Device) -> AbstractContextManager:
        return torch.cuda.device(dev.index) if dev.type == "gpu" else nullcontext()

    # tensors ---------------------------------------------------------------
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
        if dev is not CPU0:
            t = t.to(self.native_device(dev))
        return t

    def to_numpy(self, x) -> np.ndarray:
        """The values on the host; shares memory with CPU tensors."""
        if x.dtype is torch.bfloat16:
            return x.detach().view(torch.int16).numpy(force=True).view(_BF16_NUMPY)
        return x.numpy(force=True)

    def to_device(self, x, dev: Device) -> torch.Tensor:
        return x.to(self.native_device(dev), copy=True)

    def setitem(self, x, key, value):
        """``x[key] = value`` in place; leaves that require grad are written under no_grad."""
        with torch.no_grad() if x.requires_grad and x.is_leaf else nullcontext():
            signed = SAME_WIDTH.get(x.dtype)
            if signed is None:
                write(x, key, value)
            else:  # PyTorch's unsigned shell dtypes lack the writing kernels: the same bits
                if isinstance(value, torch.Tensor):
                    value = value.view(signed)
                elif not isinstance(value, bool):
                    value = torch.tensor(value, dtype=x.dtype).view(signed)
                write(x.view(signed), key, value)
        return x

    seed = staticmethod(torch.manual_seed)

    # parameters --------------------------------------------------------------
    def is_trainable_variable(self, var: Any) -> bool:
        return isinstance(var, torch.nn.Parameter) and var.requires_grad

    def make_variable(self, x) -> torch.nn.Parameter:
        data = x.detach().clone(memory_format=torch.contiguous_format)
        return torch.nn.Parameter(data, requires_grad=data.is_floating_point())

    def add_scaled_(self, x, y, alpha: float) -> torch.Tensor:
        """``x += alpha * y`` in one fused in-place kernel."""
        with torch.no_grad():
            return x.add_(y, alpha=alpha)

    def add_scaled_many_(self, xs, ys, alpha: float) -> list[torch.Tensor]:
        """``x += alpha * y`` for each pair in one multi-tensor kernel launch group
        (``torch._foreach_add_``, what ``torch.optim.SGD(foreach=True)`` applies its step
        with)."""
        with torch.no_grad():
            torch._foreach_add_(list(xs), list(ys), alpha=alpha)
        return list(xs)
