"""The PaddlePaddle adapter: native tensors are ``paddle.Tensor``, variables Paddle parameters
(``EagerParamBase``, what ``paddle.create_parameter`` makes).

Devices are ``paddle.CPUPlace()`` and ``paddle.CUDAPlace(i)``. GPUs are counted once, on first
use, with ``paddle.device.cuda.device_count()`` and only when Paddle is compiled with CUDA; the
CUDA runtime honours ``CUDA_VISIBLE_DEVICES``. A CUDA build of Paddle already asks the CUDA
driver for its devices when it is imported, so in such a process a forked child cannot use the
GPU (use the ``spawn`` start method there); a CPU build is unaffected. GPU memory is taken on
demand by Paddle's default ``auto_growth`` allocator; the adapter changes no Paddle flag and no
global device. A CUDA build places new tensors on the GPU by default, so every tensor the adapter
creates is given its place explicitly.
"""

from __future__ import annotations

import operator
import re
import warnings
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any, ClassVar

import numpy as np

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="No ccache found")
    import paddle

from paddle import _C_ops
from paddle.base.framework import EagerParamBase, _current_expected_place_
from paddle.utils import dlpack as _dlpack

from multidev import dtypes as _dt
from multidev.contract import AdapterBase, ArrayLimits
from multidev.device import CPU0, Device
from multidev.indexing import bool_mask_ndim, key_items

from .autograd import Autograd
from .dtypes import ALTERNATIVES, dtype_name, md_dtype
from .jit import Jit
from .ops import FLOATS, native_key

__all__ = ["Backend"]

_INT16, _BF16 = paddle.int16, paddle.bfloat16
_BF16_NUMPY = _dt.bfloat16.numpy
_mask_ndim = bool_mask_ndim((paddle.Tensor, EagerParamBase, paddle.pir.Value), paddle.bool)
#: dtypes Paddle has no CPU kernel for ``add`` in
_NO_CPU_ADD = frozenset({paddle.float16, _BF16})
#: dtypes ``add_scaled_`` updates with Paddle's fused ``sgd_`` kernel
_SGD_DTYPES = frozenset({paddle.float32, paddle.float64})
#: the step sizes ``sgd_`` takes as tensors, by (value, place); a few at a time
_STEP_SIZES: dict[tuple[float, str], Any] = {}


def _step_size(lr: float, place: Any) -> Any:
    """``lr`` as the float32 tensor of shape [1] on ``place`` that Paddle's ``sgd_`` reads."""
    key = (lr, str(place))
    t = _STEP_SIZES.get(key)
    if t is None:
        if len(_STEP_SIZES) >= 64:  # a schedule's past rates are not needed again
            _STEP_SIZES.clear()
        t = _STEP_SIZES[key] = paddle.full([1], lr, paddle.float32).to(place)
    return t


def _imported_through_dlpack(arr: np.ndarray) -> bool:
    """Whether arr's memory came through DLPack (as ``to_numpy`` gives it). Paddle deadlocks
    when freeing a DLPack-imported tensor releases another one (its deleter lock is not
    reentrant), so such arrays are copied rather than imported again."""
    base = arr.base
    while base is not None:
        if type(base).__name__ == "PyCapsule":
            return True
        base = getattr(base, "base", None)
    return False


# Place(cpu), Place(gpu:0), Place(gpu_pinned): str() of every Paddle place
_PLACE_TEXT = re.compile(r"^Place\((?:cpu|gpu:(?P<gpu>\d+)|gpu_pinned)\)$")


class Backend(Jit, Autograd, AdapterBase):
    """PaddlePaddle: CPU and CUDA places, bfloat16, DLPack."""

    name = "paddle"
    capabilities = frozenset(
        {"autograd", "implicit_grad", "gpu", "bfloat16", "float16", "float64", "complex"}
        | {"dlpack", "jit"}
    )
    conformance_xfails: ClassVar[Mapping[str, str]] = {
        f"{test}[exp-complex128]": "Paddle's complex128 exp kernel is only float32-accurate"
        for test in ("test_matches_numpy", "test_matches_numpy_reference_backend")
    }
    tensor_types = (paddle.Tensor, EagerParamBase)
    dtype_alternatives = ALTERNATIVES
    from_dlpack = staticmethod(_dlpack.from_dlpack)
    native_full = staticmethod(lambda shape, v, dt, dev: paddle.full(shape, v, dt, device=dev))
    native_empty = staticmethod(lambda shape, dt, dev: paddle.empty(shape, dt, device=dev))
    convert_hint = "Convert it first, e.g. with tensor.astype('float32')."
    move_hint = "Move it first, e.g. with tensor.cpu()."
    array_limits = ArrayLimits(ndim=9)
    # the place paddle.get_device() names (a CUDA build with a GPU: gpu:0)
    native_default = staticmethod(_current_expected_place_)
    native_place = operator.attrgetter("place")

    # devices ---------------------------------------------------------------
    def count_gpus(self) -> int:
        return paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0

    def make_native_device(self, dev: Device):
        if dev is CPU0:
            return paddle.CPUPlace()
        if dev.type != "gpu" or dev.index >= self.num_gpus():
            return super().make_native_device(dev)
        return paddle.CUDAPlace(dev.index)

    def parse_native_device(self, obj: Any) -> Device | None:
        """A Paddle place (CPUPlace, CUDAPlace, CUDAPinnedPlace, Place) or its text
        ('Place(gpu:0)') as a Device; pinned host memory counts as the CPU."""
        if not isinstance(obj, (paddle.base.core.Place, str)):
            return None
        m = _PLACE_TEXT.match(str(obj).strip())
        if m is None:
            return None
        return CPU0 if m["gpu"] is None else Device("gpu", int(m["gpu"]))

    # tensors ---------------------------------------------------------------
    native_dtype_name = staticmethod(dtype_name)

    def from_numpy(self, arr: np.ndarray, dev: Device):
        """Zero-copy (DLPack) on the CPU; read-only, non-contiguous, misaligned or byte-swapped
        arrays, and arrays that are themselves imported through DLPack, are copied first.
        bfloat16 travels as int16 bits, viewed as bfloat16."""
        flags = arr.flags
        if not (
            flags.c_contiguous and flags.writeable and flags.aligned and arr.dtype.isnative
        ) or _imported_through_dlpack(arr):
            arr = np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C")
        bf16 = arr.dtype == _BF16_NUMPY
        if not paddle.in_dynamic_mode():  # inside a to_static trace: a constant of the program
            if bf16:
                return paddle.assign(arr.astype(np.float32)).astype(_BF16)
            return paddle.assign(arr)
        if dev is not CPU0:
            # Paddle reads uint16 data as bfloat16. Not paddle.to_tensor: it builds one-element
            # float32/float64/int32/int64 arrays with paddle.full without the place (gpu:0).
            return paddle.Tensor(
                value=arr.view(np.uint16) if bf16 else arr,
                place=self.native_device(dev),
                zero_copy=False,
                stop_gradient=True,
            )
        if bf16:
            return _dlpack.from_dlpack(arr.view(np.int16)).view(_BF16)
        return _dlpack.from_dlpack(arr)

    def to_numpy(self, x) -> np.ndarray:
        """The values on the host; shares memory with (contiguous) CPU tensors."""
        if x.place.is_cpu_place():
            if not x.stop_gradient:
                x = x.detach()
            if x.dtype is not _BF16 and md_dtype(x.dtype) is not _dt.bfloat16:
                return np.from_dlpack(x)
            if x.is_contiguous():
                return np.from_dlpack(x.view(_INT16)).view(_BF16_NUMPY)
        out = x.numpy()
        return out.view(_BF16_NUMPY) if md_dtype(x.dtype) is _dt.bfloat16 else out

    def to_device(self, x, dev: Device):
        if dev.type == "cpu":
            out = x.cpu()
        else:
            self.native_device(dev)  # a clear DeviceError for a GPU Paddle does not have
            out = x.cuda(dev.index)
        return x.clone() if out is x else out

    def setitem(self, x, key, value):
        """``x[key] = value`` in place; a leaf that requires grad is written under no_grad.
        Inside a to_static trace a program value cannot change: the written value is a new
        one, which Paddle's ``__setitem__`` returns (``x[key] = value`` would drop it)."""
        key = native_key(x, key)
        mask = _mask_ndim(key) == 0
        if x.ndim == 0 and (mask or all(k is Ellipsis for k in key_items(key))):
            if isinstance(x, paddle.pir.Value):
                if isinstance(value, (paddle.pir.Value, *self.tensor_types)):
                    new = paddle.cast(paddle.reshape(value, []), x.dtype)
                else:
                    new = paddle.full_like(x, value)
                return paddle.where(key, new, x) if mask else new
            # Paddle's set_value kernel rejects a 0-d target (rank 0 "should be less than 7"),
            # and its masked write a 0-d mask: x keeps its value where the mask is False
            if mask and not key.item():
                return x
            if not isinstance(value, self.tensor_types):
                value = paddle.to_tensor(value, dtype=x.dtype, place=x.place)
            paddle.assign(value.reshape([]).astype(x.dtype), output=x)
            return x
        if isinstance(x, paddle.pir.Value):
            return x.__setitem__(key, value)
        with paddle.no_grad() if not x.stop_gradient and x.is_leaf else nullcontext():
            x[key] = value
        return x

    seed = staticmethod(paddle.seed)

    # parameters --------------------------------------------------------------
    def is_trainable_variable(self, var: Any) -> bool:
        return isinstance(var, EagerParamBase) and not var.stop_gradient

    def make_variable(self, x) -> EagerParamBase:
        """A Paddle parameter holding a copy of x on x's place (trainable when floating point)."""
        return EagerParamBase.from_tensor(x.detach().clone(), trainable=md_dtype(x.dtype) in FLOATS)

    def add_scaled_(self, x, y, alpha: float):
        """``x += alpha * y`` in place (Paddle's in-place add, outside recording); float16 and
        bfloat16 on the CPU, where Paddle has no add kernel, compute in float32 and are written
        back into x's storage."""
        with paddle.no_grad():
            if x.dtype in _NO_CPU_ADD and x.place.is_cpu_place():
                wide = x.astype(paddle.float32) + y.astype(paddle.float32) * alpha
                paddle.assign(wide.astype(x.dtype), output=x)
            elif (
                x.dtype in _SGD_DTYPES
                and y.dtype == x.dtype
                and x.shape == y.shape
                and paddle.in_dynamic_mode()  # the cached step sizes are eager tensors
            ):
                # Paddle's fused SGD kernel (x -= lr * y), one pass and no temporary
                _C_ops.sgd_(x, _step_size(-alpha, x.place), y, None, False)
            else:
                x.add_(paddle.scale(y, alpha))
        return x
