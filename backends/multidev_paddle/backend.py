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

Paddle lacks many CPU kernels (float16 and bfloat16 arithmetic, small integers, bool). An op
that meets a dtype without a kernel on a place computes in a wider dtype (float32, int32) and
casts back, which gives NumPy's results, integer wrap-around included; it learns this on the
first failure, so later calls pay one dictionary lookup.
"""

from __future__ import annotations

import math
import operator
import re
import warnings
from typing import Any

import numpy as np

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="No ccache found")
    import paddle

import paddle.nn.functional as F
from paddle.base.framework import EagerParamBase
from paddle.utils import dlpack as _dlpack

from multidev import dtypes as _dt
from multidev.checkpoint import ArrayLimits
from multidev.contract import AdapterBase, PythonOperatorOps
from multidev.device import Device
from multidev.errors import DeviceError

from .autograd import Autograd

__all__ = ["Backend"]

_CPU = Device("cpu", 0)
_Tensor = paddle.Tensor
_UINT8, _INT16, _INT32, _INT64 = paddle.uint8, paddle.int16, paddle.int32, paddle.int64
_F32, _BF16 = paddle.float32, paddle.bfloat16
_BF16_NUMPY = _dt.bfloat16.numpy
_INF = math.inf

_TO_PADDLE: dict[_dt.DType, Any] = {
    _dt.bool: paddle.bool,
    _dt.uint8: paddle.uint8,
    _dt.int8: paddle.int8,
    _dt.int16: paddle.int16,
    _dt.int32: paddle.int32,
    _dt.int64: paddle.int64,
    _dt.float16: paddle.float16,
    _dt.bfloat16: paddle.bfloat16,
    _dt.float32: paddle.float32,
    _dt.float64: paddle.float64,
}
_FROM_PADDLE: dict[Any, _dt.DType] = {v: k for k, v in _TO_PADDLE.items()}
# Paddle's dtype objects are singletons whose hash and == are slow (~0.5 us): look them up by
# identity first (these objects live as long as Paddle, so their ids are never reused)
_FROM_ID: dict[int, _dt.DType] = {id(v): k for k, v in _TO_PADDLE.items()}
_FLOATS = frozenset({_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64})
_INT_RANGE = {
    _dt.bool: (0, 1),
    **{
        d: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max))
        for d in (_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64)
    },
}
_INDEX_DTYPES = frozenset({_dt.int64, _dt.int32, _dt.bool})
_PLAIN_KEYS = (int, slice)

#: the dtype an op computes in where Paddle has no kernel for the tensor's own dtype
_WIDER = {
    _dt.float16: _F32,
    _dt.bfloat16: _F32,
    _dt.uint8: _INT32,
    _dt.int8: _INT32,
    _dt.int16: _INT32,
    _dt.bool: _INT32,
}
#: the same for ops that NumPy and PyTorch do not define on bool (``-``, ``//``, ``%``, ``**``)
_NUMERIC_WIDER = {k: v for k, v in _WIDER.items() if k is not _dt.bool}


def _md_dtype(dt) -> _dt.DType | None:
    """multidev's dtype for a Paddle dtype, or None where multidev has none."""
    md = _FROM_ID.get(id(dt))
    return md if md is not None else _FROM_PADDLE.get(dt)


def _dtype_name(dt) -> str:
    md = _md_dtype(dt)
    return md.name if md is not None else str(dt).replace("paddle.", "")


# ------------------------------------------------------------------------- ops


def _wide(fn, name: str, *, back: bool = True, wider: dict = _WIDER, cast: int | None = None):
    """``fn`` that computes in a wider dtype where Paddle has no kernel for the input's dtype.

    The dtype is that of the first tensor argument; arguments of that dtype (among the first
    ``cast``) are widened, and with ``back`` the result is cast back to it.
    """
    widened: dict = {}  # md dtype -> {place: Paddle dtype to compute in}

    def first_tensor(args):
        return args[0] if isinstance(args[0], _Tensor) else args[1]

    def widen(args, dt, w):
        n = len(args) if cast is None else cast
        wide_args = [
            a.astype(w) if i < n and isinstance(a, _Tensor) and _md_dtype(a.dtype) is dt else a
            for i, a in enumerate(args)
        ]
        out = fn(*wide_args)
        return out.astype(_TO_PADDLE[dt]) if back and _md_dtype(out.dtype) is not dt else out

    def op(*args):
        if widened:  # some dtype needed widening: look this one up before calling
            t = first_tensor(args)
            dt = _md_dtype(t.dtype)
            w = widened.get(dt, {}).get(t.place)
            if w is not None:
                return widen(args, dt, w)
        try:
            return fn(*args)
        except RuntimeError as e:
            if "The kernel with key" not in str(e):
                raise
            t = first_tensor(args)
            dt = _md_dtype(t.dtype)
            w = wider.get(dt)
            if w is None:
                raise TypeError(
                    f"Expected a tensor dtype that Paddle's {name} supports. Received: "
                    f"{_dtype_name(t.dtype)} on {t.place}. Cast it first, e.g. with "
                    "md.astype(x, md.float32)."
                ) from None
            widened.setdefault(dt, {})[t.place] = w
            return widen(args, dt, w)

    op.__name__ = name
    return op


def _full0(value, like):
    """A 0-d tensor holding ``value`` with ``like``'s dtype and place."""
    return paddle.full([], value, dtype=like.dtype, device=like.place)


def _tensor_operands(fn):
    """``fn(a, b)`` for Paddle functions that take tensors only: a Python scalar becomes a 0-d
    tensor like the other operand."""

    def op(a, b):
        if not isinstance(a, _Tensor):
            a = _full0(a, b)
        elif not isinstance(b, _Tensor):
            b = _full0(b, a)
        return fn(a, b)

    return op


def _integer_division(fn):
    """Paddle reports an integer division by zero as an InvalidArgument error."""

    def op(a, b):
        try:
            return fn(a, b)
        except Exception as e:
            if "division by zero" not in str(e):
                raise
            raise ZeroDivisionError(
                "Expected non-zero divisors for integer // and %. Received: a zero divisor. "
                "Divide in floating point (x / y) or mask the zeros first."
            ) from None

    return op


def _clip(x, lo, hi):
    """NumPy's clip: None means unbounded; integer tensors keep their dtype (float bounds are
    truncated, as NumPy's cast back does); lo > hi gives hi everywhere."""
    dt = _md_dtype(x.dtype)
    if dt in _FLOATS:
        lo = -_INF if lo is None else float(lo)
        hi = _INF if hi is None else float(hi)
    else:
        low, high = _INT_RANGE[dt]
        lo = low if lo is None else int(min(max(lo, low), high))
        hi = high if hi is None else int(min(max(hi, low), high))
    if lo > hi:
        lo = hi
    return paddle.clip(x, lo, hi)


def _maximum(a, b):
    if isinstance(a, _Tensor) and isinstance(b, _Tensor):
        return paddle.maximum(a, b)
    return _clip(a, b, None) if isinstance(a, _Tensor) else _clip(b, a, None)


def _minimum(a, b):
    if isinstance(a, _Tensor) and isinstance(b, _Tensor):
        return paddle.minimum(a, b)
    return _clip(a, None, b) if isinstance(a, _Tensor) else _clip(b, None, a)


def _relu(x):
    """max(x, 0) keeping NaN (Paddle's relu turns NaN into 0)."""
    if _md_dtype(x.dtype) in _FLOATS:
        return F.hardtanh(x, 0.0, _INF)
    return _clip(x, 0, None)


def _negative(x):
    if x.dtype is paddle.bool or _md_dtype(x.dtype) is _dt.bool:
        raise TypeError(
            "Expected a numeric tensor for unary -. Received: bool. "
            "Invert a mask with ~x (logical_not) instead."
        )
    return -x


def _reduction(fn):
    """An (x, axis, keepdims) reduction; axis None reduces everything, () nothing (Paddle
    reads an empty axis list as 'everything')."""

    def reduce(x, axis, keepdims):
        if axis is None:
            return fn(x, axis=None, keepdim=keepdims)
        if not axis:
            return x.clone()
        return fn(x, axis=list(axis), keepdim=keepdims)

    return reduce


def _arg(fn):
    """argmax/argmin as NumPy: the first NaN wins (Paddle skips NaN)."""

    def arg(x, axis, keepdims):
        out = fn(x, axis=axis, keepdim=keepdims)
        # a NaN makes the sum NaN (so does inf - inf, which only costs the exact path)
        if _md_dtype(x.dtype) in _FLOATS and math.isnan(paddle.sum(x).item()):
            nan = paddle.isnan(x)
            first_nan = paddle.argmax(nan.astype(_UINT8), axis=axis, keepdim=keepdims)
            out = paddle.where(paddle.any(nan, axis=axis, keepdim=keepdims), first_nan, out)
        return out

    return arg


def _log_softmax(x, axis):
    """Paddle's log_softmax clips at -64 (log-probabilities below it come back as -64)."""
    shifted = x - paddle.max(x, axis=axis, keepdim=True).detach()
    return shifted - paddle.log(paddle.sum(paddle.exp(shifted), axis=axis, keepdim=True))


def _index(k):
    if isinstance(k, _Tensor) and _md_dtype(k.dtype) not in _INDEX_DTYPES:
        return k.astype(_INT64)  # NumPy reads small-integer arrays as positions; Paddle refuses
    return k


def _key(key):
    if type(key) is tuple:
        return tuple(_index(k) for k in key)
    return key if type(key) in _PLAIN_KEYS else _index(key)


def _getitem(x, key):
    return x[_key(key)]


def _where(a, b, cond):
    return paddle.where(cond, a, b)


_where_values = _wide(_where, "where", cast=2)


def _linear(x, weight, bias):
    """x @ weight.T + bias with PyTorch's (out_features, in_features) weight."""
    out = paddle.matmul(x, weight, transpose_y=True)
    return out if bias is None else out + bias


class Ops(PythonOperatorOps):
    add = staticmethod(_wide(operator.add, "add"))
    subtract = staticmethod(_wide(operator.sub, "subtract", wider=_NUMERIC_WIDER))
    multiply = staticmethod(_wide(operator.mul, "multiply"))
    divide = staticmethod(_wide(operator.truediv, "divide"))
    # Paddle's // with a Python scalar turns a 0-d tensor into shape (1,): divide by a tensor
    floor_divide = staticmethod(
        _wide(
            _integer_division(_tensor_operands(operator.floordiv)),
            "floor_divide",
            wider=_NUMERIC_WIDER,
        )
    )
    remainder = staticmethod(
        _wide(_integer_division(operator.mod), "remainder", wider=_NUMERIC_WIDER)
    )
    pow = staticmethod(_wide(operator.pow, "pow", wider=_NUMERIC_WIDER))
    matmul = staticmethod(_wide(paddle.matmul, "matmul"))
    maximum = staticmethod(_wide(_maximum, "maximum"))
    minimum = staticmethod(_wide(_minimum, "minimum"))
    equal = staticmethod(_wide(operator.eq, "equal", back=False))
    not_equal = staticmethod(_wide(operator.ne, "not_equal", back=False))
    less = staticmethod(_wide(operator.lt, "less", back=False))
    less_equal = staticmethod(_wide(operator.le, "less_equal", back=False))
    greater = staticmethod(_wide(operator.gt, "greater", back=False))
    greater_equal = staticmethod(_wide(operator.ge, "greater_equal", back=False))
    logical_and = staticmethod(_tensor_operands(paddle.logical_and))
    logical_or = staticmethod(_tensor_operands(paddle.logical_or))
    negative = staticmethod(_wide(_negative, "negative"))
    abs = staticmethod(_wide(paddle.abs, "abs"))
    exp = staticmethod(_wide(paddle.exp, "exp"))
    log = staticmethod(_wide(paddle.log, "log"))
    sqrt = staticmethod(_wide(paddle.sqrt, "sqrt"))
    sin = staticmethod(_wide(paddle.sin, "sin"))
    cos = staticmethod(_wide(paddle.cos, "cos"))
    tanh = staticmethod(_wide(paddle.tanh, "tanh"))
    sigmoid = staticmethod(_wide(F.sigmoid, "sigmoid"))
    relu = staticmethod(_wide(_relu, "relu"))
    floor = staticmethod(_wide(paddle.floor, "floor"))
    logical_not = staticmethod(paddle.logical_not)
    sum = staticmethod(_wide(_reduction(paddle.sum), "sum"))
    mean = staticmethod(_wide(_reduction(paddle.mean), "mean"))
    max = staticmethod(_wide(_reduction(paddle.max), "max"))
    min = staticmethod(_wide(_reduction(paddle.min), "min"))
    prod = staticmethod(_wide(_reduction(paddle.prod), "prod"))
    argmax = staticmethod(_wide(_arg(paddle.argmax), "argmax", back=False))
    argmin = staticmethod(_wide(_arg(paddle.argmin), "argmin", back=False))
    reshape = staticmethod(lambda x, shape: paddle.reshape(x, list(shape)))
    permute_dims = staticmethod(lambda x, axes: paddle.transpose(x, list(axes)))
    concat = staticmethod(lambda xs, axis: paddle.concat(xs, axis=axis))
    stack = staticmethod(lambda xs, axis: paddle.stack(xs, axis=axis))
    where = staticmethod(lambda cond, a, b: _where_values(a, b, cond))
    clip = staticmethod(_wide(_clip, "clip"))
    softmax = staticmethod(_wide(lambda x, axis: F.softmax(x, axis=axis), "softmax"))
    log_softmax = staticmethod(_wide(_log_softmax, "log_softmax"))
    getitem = staticmethod(_getitem)
    astype = staticmethod(lambda x, dt: x.astype(_TO_PADDLE[dt]))
    copy = staticmethod(lambda x: x.clone())
    linear = staticmethod(_wide(_linear, "linear"))


# ------------------------------------------------------------------------- adapter


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


class Backend(Autograd, AdapterBase):
    """PaddlePaddle: CPU and CUDA places, bfloat16, DLPack."""

    name = "paddle"
    capabilities = frozenset({"autograd", "gpu", "bfloat16", "float16", "float64", "dlpack"})
    tensor_types = (paddle.Tensor, EagerParamBase)
    ops = Ops()
    reference = "multidev_paddle.reference"
    array_limits = ArrayLimits(ndim=9)

    def __init__(self) -> None:
        super().__init__()
        self._num_gpus: int | None = None
        self._to_place: dict[Device, Any] = {_CPU: paddle.CPUPlace()}
        self._from_place: dict[Any, Device] = {paddle.CPUPlace(): _CPU}
        self._by_name: dict[str, Device] = {}

    def version(self) -> str:
        return str(paddle.__version__)

    # devices ---------------------------------------------------------------
    def num_gpus(self) -> int:
        """CUDA GPUs visible to Paddle (0 for a CPU build); counted once."""
        if self._num_gpus is None:
            self._num_gpus = (
                paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0
            )
        return self._num_gpus

    def list_devices(self) -> list[Device]:
        return [_CPU] + [Device("gpu", i) for i in range(self.num_gpus())]

    def default_device(self) -> Device:
        """What ``paddle.get_device()`` says (a CUDA build with a GPU says gpu:0), or the CPU
        where that is a device multidev does not place on."""
        name = paddle.get_device()
        dev = self._by_name.get(name)
        if dev is None:
            try:
                dev = Device.parse(name)
            except ValueError:
                dev = _CPU
            if dev not in self.device_set():
                dev = _CPU
            self._by_name[name] = dev
        return dev

    def native_device(self, dev: Device):
        try:
            return self._to_place[dev]
        except KeyError:
            pass
        if dev.type != "gpu" or dev.index >= self.num_gpus():
            have = ", ".join(str(d) for d in self.devices())
            raise DeviceError(
                f"Expected one of the devices the paddle backend has ({have}). Received: {dev}. "
                "Paddle has one CPU place; use md.try_gpu() to fall back to it."
            )
        place = self._to_place[dev] = paddle.CUDAPlace(dev.index)
        return place

    def parse_native_device(self, obj: Any) -> Device | None:
        """A Paddle place (CPUPlace, CUDAPlace, CUDAPinnedPlace, Place) or its text
        ('Place(gpu:0)') as a Device; pinned host memory counts as the CPU."""
        if isinstance(obj, paddle.base.core.Place):
            text = str(obj)
        elif isinstance(obj, str):
            text = obj.strip()
        else:
            return None
        m = _PLACE_TEXT.match(text)
        if m is None:
            return None
        gpu = m.group("gpu")
        return _CPU if gpu is None else Device("gpu", int(gpu))

    def device_of(self, x) -> Device:
        place = x.place
        try:
            return self._from_place[place]
        except KeyError:
            pass
        dev = self.parse_native_device(place)
        if dev is None:
            raise DeviceError(
                f"Expected a tensor on a CPU or CUDA place. Received: a tensor on {place}. "
                "Move it first, e.g. with tensor.cpu()."
            )
        self._from_place[place] = dev
        return dev

    # tensors ---------------------------------------------------------------
    def dtype_of(self, x) -> _dt.DType:
        md = _FROM_ID.get(id(x.dtype))
        if md is not None:
            return md
        try:
            return _FROM_PADDLE[x.dtype]
        except KeyError:
            raise TypeError(
                f"Expected a tensor of one of multidev's dtypes "
                f"({', '.join(d.name for d in _dt.ALL)}). Received: {_dtype_name(x.dtype)} on "
                "the paddle backend. Convert it first, e.g. with tensor.astype('float32')."
            ) from None

    def native_dtype(self, dt: _dt.DType):
        return _TO_PADDLE[dt]

    def shape_of(self, x) -> tuple[int, ...]:
        return tuple(x.shape)

    def from_numpy(self, arr: np.ndarray, dev: Device):
        """Zero-copy (DLPack) on the CPU; read-only, non-contiguous, misaligned or byte-swapped
        arrays, and arrays that are themselves imported through DLPack, are copied first.
        bfloat16 travels as int16 bits, viewed as bfloat16."""
        flags = arr.flags
        if not (
            flags.c_contiguous and flags.writeable and flags.aligned and arr.dtype.isnative
        ) or _imported_through_dlpack(arr):
            dtype = arr.dtype if arr.dtype.isnative else arr.dtype.newbyteorder("=")
            arr = np.array(arr, dtype=dtype, order="C")
        bf16 = arr.dtype == _BF16_NUMPY
        if dev is not _CPU:
            # to_tensor reads uint16 data as bfloat16
            return paddle.to_tensor(
                arr.view(np.uint16) if bf16 else arr, place=self.native_device(dev)
            )
        if bf16:
            return _dlpack.from_dlpack(arr.view(np.int16)).view(_BF16)
        return _dlpack.from_dlpack(arr)

    def to_numpy(self, x) -> np.ndarray:
        """The values on the host; shares memory with (contiguous) CPU tensors."""
        if x.place.is_cpu_place():
            if not x.stop_gradient:
                x = x.detach()
            if x.dtype is not _BF16 and _md_dtype(x.dtype) is not _dt.bfloat16:
                return np.from_dlpack(x)
            if x.is_contiguous():
                return np.from_dlpack(x.view(_INT16)).view(_BF16_NUMPY)
        out = x.numpy()
        return out.view(_BF16_NUMPY) if _md_dtype(x.dtype) is _dt.bfloat16 else out

    def to_device(self, x, dev: Device):
        if dev.type == "cpu":
            out = x.cpu()
        else:
            self.native_device(dev)  # a clear DeviceError for a GPU Paddle does not have
            out = x.cuda(dev.index)
        return x.clone() if out is x else out

    def full(self, shape, value, dt, dev):
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (int, float)):
            return super().full(shape, value, dt, dev)
        return paddle.full(list(shape), value, dtype=_TO_PADDLE[dt], device=self.native_device(dev))

    def setitem(self, x, key, value):
        """``x[key] = value`` in place; a leaf that requires grad is written under no_grad."""
        key = _key(key)
        if not x.stop_gradient and x.is_leaf:
            with paddle.no_grad():
                x[key] = value
        else:
            x[key] = value
        return x

    def seed(self, seed: int) -> None:
        paddle.seed(seed)

    # parameters --------------------------------------------------------------
    def make_variable(self, x) -> EagerParamBase:
        """A Paddle parameter holding a copy of x on x's place (trainable when floating point)."""
        return EagerParamBase.from_tensor(
            x.detach().clone(), trainable=_md_dtype(x.dtype) in _FLOATS
        )

    def variable_tensor(self, var):
        return var

    def detach(self, x):
        """The same storage outside autograd recording (what ``p.data`` wraps)."""
        return x.detach()

    def add_scaled_(self, x, y, alpha: float):
        """``x += alpha * y`` in place (Paddle's in-place add, outside recording)."""
        with paddle.no_grad():
            x.add_(paddle.scale(y, alpha))
        return x

    def from_dlpack(self, obj):
        return _dlpack.from_dlpack(obj)
