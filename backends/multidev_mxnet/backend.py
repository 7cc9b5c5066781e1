"""The MXNet adapter: native tensors are ``mxnet.numpy.ndarray``, variables gluon ``Parameter``s.

MXNet 1.9 is used through its NumPy-compatible interface (``from mxnet import np, npx``), the
one d2l uses. Building the adapter calls ``npx.set_np()`` once: NumPy array semantics for the
calling thread (gluon then makes ``mxnet.numpy`` arrays) and NumPy shape semantics (0-d and
zero-size arrays), which it turns on for every thread, since tensors may be used from worker
threads. These are the only framework-wide settings the adapter changes.

Devices are MXNet contexts: ``cpu:0`` … ``cpu:N-1`` are ``mx.cpu(i)``, N coming from the
environment variable ``MULTIDEV_MXNET_CPU_DEVICES`` (default 2); ``gpu:i`` is ``mx.gpu(i)``.
GPUs are counted once, on first use, through NVML, which leaves CUDA uninitialised (a later
``fork`` still works), honouring ``CUDA_VISIBLE_DEVICES``; a build of MXNet without CUDA has
none. GPU memory is taken on demand by MXNet's pooled allocator, never all at once.

MXNet runs operations asynchronously: a failure inside a kernel surfaces when the result is
read. NumPy arrays are wrapped without a copy on ``cpu:0`` where MXNet allows it (C-contiguous,
aligned, writable, not int8); as with MXNet's own ``from_numpy``, such a source array becomes
read-only, because writing to it would race with MXNet's engine. MXNet has no int16 and no
bfloat16: asking for them raises TypeError.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import np as mnp
from mxnet import npx

from multidev import dtypes as _dt
from multidev.checkpoint import ArrayLimits
from multidev.contract import AdapterBase, PythonOperatorOps
from multidev.device import Device
from multidev.errors import DeviceError

from .autograd import Autograd

__all__ = ["Backend"]

CPU_DEVICES_ENV = "MULTIDEV_MXNET_CPU_DEVICES"
_CPU = Device("cpu", 0)

_TO_MX: dict[_dt.DType, np.dtype] = {
    dt: np.dtype(dt.name)
    for dt in (
        _dt.bool,
        _dt.uint8,
        _dt.int8,
        _dt.int32,
        _dt.int64,
        _dt.float16,
        _dt.float32,
        _dt.float64,
    )
}
_FROM_MX: dict[np.dtype, _dt.DType] = {v: k for k, v in _TO_MX.items()}
_SUPPORTED = ", ".join(dt.name for dt in _TO_MX)
_INSTEAD = {_dt.int16: "md.int32", _dt.bfloat16: "md.float32 (or md.float16)"}

_BOOL = np.dtype(np.bool_)
_UINT8 = np.dtype(np.uint8)
_INT64 = np.dtype(np.int64)
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_FLOATS = frozenset({_F16, _F32, np.dtype(np.float64)})
#: dtypes MXNet's ``from_numpy`` can wrap without a copy
_GEMM = frozenset({_F32, np.dtype(np.float64)})  # what MXNet's CPU matmul kernels take
_GPU_TYPEID = mx.gpu(0).device_typeid
_SCALARS = (bool, int, float)
_EXACT_INT = 2**53  # Python ints beyond this lose digits on their way through a C double


def unsupported_dtype(dt: Any) -> TypeError:
    """The error for a dtype MXNet does not have."""
    name = getattr(dt, "name", str(dt))
    hint = _INSTEAD.get(dt, "one of those")
    return TypeError(
        f"Expected a dtype the mxnet backend supports ({_SUPPORTED}). Received: {name}, which "
        f"MXNet does not have. Use {hint} instead."
    )


def _mx_dtype(dt: _dt.DType) -> np.dtype:
    try:
        return _TO_MX[dt]
    except KeyError:
        raise unsupported_dtype(dt) from None


# ------------------------------------------------------------------------- ops


def _on_gpu(x) -> bool:
    return x.ctx.device_typeid == _GPU_TYPEID


def _like(x, value):
    """A 0-d array holding ``value`` with x's dtype and context."""
    return mnp.full((), value, dtype=x.dtype, ctx=x.ctx)


def _arrays(a, b):
    """Both operands as arrays (a Python scalar becomes a 0-d array like the other one)."""
    if isinstance(a, _SCALARS):
        a = _like(b, a)
    elif isinstance(b, _SCALARS):
        b = _like(a, b)
    return a, b


def _no_bool(name: str, x) -> None:
    if x.dtype == _BOOL:
        raise TypeError(
            f"Expected numeric tensors for {name}. Received: bool tensors. "
            "Cast them first, e.g. with .astype(md.int64)."
        )


def _where(cond, a, b):
    if 0 not in cond.shape and 0 not in a.shape and 0 not in b.shape:
        return mnp.where(cond, a, b)
    # MXNet's where aborts the process when it broadcasts zero-size arrays
    shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
    return mnp.zeros(shape, dtype=a.dtype, ctx=a.ctx)


def _trunc_divide(a, b):
    """Integer division rounding toward zero, computed exactly by MXNet's integer kernel."""
    return mx.nd.broadcast_div(a.as_nd_ndarray(), b.as_nd_ndarray()).as_np_ndarray()


def _int_divmod(a, b):
    """Exact floor division and remainder of integer arrays, as NumPy computes them (x // 0
    and x % 0 are 0; MXNet's own mod goes through float64 and loses digits beyond 2**53)."""
    zero = b == 0
    signed = a.dtype != _UINT8
    special = zero + (b == -1) if signed else zero  # bool + bool: logical or
    safe = _where(special, _like(b, 1), b)  # never divide by 0, nor INT_MIN by -1 (a trap)
    q = _trunc_divide(a, safe)
    r = a - q * safe
    if signed:
        q = _where(b == -1, -a, q)
        off = (r != 0) * ((r < 0) != (b < 0))  # bool * bool: logical and
        q = q - off.astype(q.dtype)
        r = r + b * off.astype(r.dtype)
    keep = mnp.logical_not(zero).astype(q.dtype)
    return q * keep, r


def _floor_divide(a, b):
    """NumPy's floor division: rounds toward minus infinity; x // 0 is ±inf/nan for floats
    and 0 for integers."""
    a, b = _arrays(a, b)
    _no_bool("//", a)
    if a.dtype in _FLOATS:
        m = mnp.mod(a, b)
        div = (a - m) / b
        q = mnp.floor(div)
        q = q + (div - q > 0.5).astype(q.dtype)
        return _where(b == 0, a / b, q)
    return _int_divmod(a, b)[0]


def _remainder(a, b):
    """NumPy's remainder: the sign of the divisor; x % 0 is nan for floats and 0 for integers."""
    a, b = _arrays(a, b)
    _no_bool("%", a)
    if a.dtype in _FLOATS:
        m = mnp.mod(a, b)
        return _where(b == 0, _like(m, np.nan), m)
    return _int_divmod(a, b)[1]


def _add(a, b):
    if type(a) is bool or type(b) is bool:  # MXNet gives int64 for bool + Python bool
        a, b = _arrays(a, b)
    return a + b


def _multiply(a, b):
    if type(a) is bool or type(b) is bool:
        a, b = _arrays(a, b)
    return a * b


def _pow(a, b):
    out = a**b
    like = b if isinstance(a, _SCALARS) else a
    if out.dtype != like.dtype:  # MXNet gives int64 for integer powers with a 0-d operand
        out = out.astype(like.dtype)
    return out


def _matmul_by_sum(a, b):
    """Exact matmul for dtypes MXNet's kernels lack (integers, bool), with the Array API's
    rules for 1-D operands and broadcast batch dimensions."""
    a2 = mnp.expand_dims(a, 0) if a.ndim == 1 else a
    b2 = mnp.expand_dims(b, -1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(
            f"Expected matmul operands with matching inner dimensions. "
            f"Received: shapes {a.shape} and {b.shape}"
        )
    if a2.size == 0 or b2.size == 0:  # MXNet cannot reduce zero-size arrays
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        out = mnp.zeros((*batch, a2.shape[-2], b2.shape[-1]), dtype=_INT64, ctx=a.ctx)
    else:
        out = (mnp.expand_dims(a2, -1) * mnp.expand_dims(b2, -3)).sum(axis=-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    if a.ndim == 1:
        out = out.squeeze(-1 if b.ndim == 1 else -2)
    return out.astype(a.dtype) if out.dtype != a.dtype else out


def _matmul(a, b):
    dt = a.dtype
    if dt in _GEMM or (dt == _F16 and _on_gpu(a)):
        return mnp.matmul(a, b)
    if dt == _F16:
        return mnp.matmul(a.astype(_F32), b.astype(_F32)).astype(_F16)
    return _matmul_by_sum(a, b)


def _linear(x, w, b):
    """``x @ w.T + b`` through MXNet's fused ``fully_connected`` where its kernels allow."""
    dt = x.dtype
    if (dt in _GEMM or (dt == _F16 and _on_gpu(x))) and 0 not in x.shape and 0 not in w.shape:
        if b is None:
            return npx.fully_connected(x, w, num_hidden=w.shape[0], no_bias=True, flatten=False)
        return npx.fully_connected(x, w, b, num_hidden=w.shape[0], flatten=False)
    y = _matmul(x, mnp.transpose(w))
    return y if b is None else y + b


def _maximum(a, b):
    if isinstance(a, _SCALARS):
        a, b = b, a
    if a.dtype == _BOOL:
        a, b = _arrays(a, b)
        return a + b  # logical or
    return mnp.maximum(a, b)


def _minimum(a, b):
    if isinstance(a, _SCALARS):
        a, b = b, a
    if a.dtype == _BOOL:
        a, b = _arrays(a, b)
        return a * b  # logical and
    return mnp.minimum(a, b)


def _logical_and(a, b):
    a, b = _arrays(a, b)
    return a * b


def _logical_or(a, b):
    a, b = _arrays(a, b)
    return a + b


def _negative(x):
    if x.dtype == _BOOL:
        raise TypeError(
            "Expected a numeric tensor for unary -. Received: a bool tensor. "
            "Use ~x for logical negation."
        )
    return -x


def _same_if_bool(fn: Callable) -> Callable:
    def op(x):
        return x.copy() if x.dtype == _BOOL else fn(x)

    return op


def _through_uint8(fn: Callable) -> Callable:
    """``fn`` computed on uint8 for bool input (MXNet's kernels for it lack bool), cast back."""

    def op(x, *args):
        if x.dtype == _BOOL:
            return fn(x.astype(_UINT8), *args).astype(_BOOL)
        return fn(x, *args)

    return op


def _reduced_shape(x, axis, keepdims) -> tuple[int, ...]:
    return np.sum(np.empty(x.shape, dtype=np.bool_), axis=axis, keepdims=keepdims).shape


def _reduction(fn: Callable, empty: float | None) -> Callable:
    """An (x, axis, keepdims) reduction; ``axis=()`` reduces nothing. Zero-size input is
    answered here (MXNet fails on it): ``empty`` is the result of reducing no elements (0 for
    sum, 1 for prod, nan for mean; None where that is an error, as for max)."""

    def reduce(x, axis, keepdims):
        if axis is not None:
            if not axis:
                return x.copy()
            if x.ndim == 0:
                axis = None
        if 0 in x.shape:
            shape = _reduced_shape(x, axis, keepdims)
            if empty is None and 0 not in shape:
                raise ValueError(
                    f"Expected a non-empty reduction for {fn.__name__}. Received: shape "
                    f"{x.shape} reduced over axis {axis}, which holds no elements."
                )
            return mnp.full(shape, 0 if empty is None else empty, dtype=x.dtype, ctx=x.ctx)
        return fn(x, axis=axis, keepdims=keepdims)

    return reduce


def _arg(fn: Callable) -> Callable:
    def arg(x, axis, keepdims):
        if x.dtype == _BOOL:
            x = x.astype(_UINT8)
        out = fn(x, axis=axis)
        if keepdims:
            out = out.reshape((1,) * x.ndim) if axis is None else mnp.expand_dims(out, axis)
        return out

    return arg


def _softmax(x, axis):
    if x.dtype == _F16:
        return npx.softmax(x.astype(_F32), axis=axis).astype(_F16)
    return npx.softmax(x, axis=axis)


def _log_softmax(x, axis):
    if 0 in x.shape:
        return x.copy()
    # MXNet's own log_softmax kernel loses about 1e-4 relative accuracy in float32
    s = x - mnp.max(x, axis=axis, keepdims=True)
    return s - mnp.log(mnp.sum(mnp.exp(s), axis=axis, keepdims=True))


def _clip(x, lo, hi):
    if x.dtype == _BOOL:
        return mnp.clip(x.astype(_F32), lo, hi).astype(_BOOL)
    return mnp.clip(x, lo, hi)


def _only_new_axes(key) -> bool:
    """Whether ``key`` only adds axes (None, Ellipsis, ()): all a 0-d array can take."""
    items = key if type(key) is tuple else (key,)
    return all(k is None or k is Ellipsis for k in items)


def _has_array(key) -> bool:
    if type(key) is tuple:
        return any(isinstance(k, mnp.ndarray) for k in key)
    return isinstance(key, mnp.ndarray)


def _host_key(key):
    if type(key) is tuple:
        return tuple(_host_key(k) for k in key)
    return key.asnumpy() if isinstance(key, mnp.ndarray) else key


def _getitem(x, key):
    if _has_array(key) and 0 in x.shape:
        # MXNet's gather kernels crash on zero-size arrays: the result holds no values anyway
        shape = np.empty(x.shape, dtype=np.bool_)[_host_key(key)].shape
        return mnp.zeros(shape, dtype=x.dtype, ctx=x.ctx)
    try:
        return x[key]
    except IndexError:
        if x.ndim != 0 or not _only_new_axes(key):
            raise
    items = key if type(key) is tuple else (key,)
    return x.reshape((1,) * sum(k is None for k in items))


def _key_dims(k) -> int:
    """How many dimensions of the indexed array a (non-Ellipsis) key item consumes."""
    if k is None or type(k) is bool:
        return 0
    if isinstance(k, mnp.ndarray) and k.dtype == _BOOL:
        return k.ndim
    return 1


def _checked_write_key(x, key):
    """``key`` for an assignment, with integer index arrays bounds-checked and made
    non-negative: MXNet's scatter kernels take them as they are, so a negative or too large
    index would write outside the array."""
    items = key if type(key) is tuple else (key,)
    if not any(isinstance(k, mnp.ndarray) for k in items):
        return key
    shape = x.shape
    rest = len(shape) - sum(_key_dims(k) for k in items if k is not Ellipsis)
    out, dim = [], 0
    for k in items:
        if k is Ellipsis:
            dim += rest
        elif isinstance(k, mnp.ndarray) and k.dtype != _BOOL:
            size = shape[dim]
            k = k.astype(_INT64) if k.dtype != _INT64 else k
            if k.size:
                lo, hi = int(k.min()), int(k.max())
                bad = hi if hi >= size else (lo if lo < -size else None)
                if bad is not None:
                    raise IndexError(
                        f"index {bad} is out of bounds for axis {dim} with size {size}"
                    )
                if lo < 0:
                    k = k + (k < 0).astype(_INT64) * size
            dim += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            size = shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {size}")
            k = int(k) % size
            dim += 1
        else:
            dim += _key_dims(k)
        out.append(k)
    return tuple(out)


def _write_zero_dim(x, key, value) -> None:
    """``x[key] = value`` for a 0-d x, whose only keys MXNet takes are ``()``: keys that only
    add axes (None, Ellipsis), or a 0-d bool mask."""
    items = key if type(key) is tuple else (key,)
    masks = [k for k in items if isinstance(k, mnp.ndarray)]
    if any(
        k is not None and k is not Ellipsis and not isinstance(k, mnp.ndarray) for k in items
    ) or (masks and (len(masks) > 1 or masks[0].dtype != _BOOL or masks[0].ndim != 0)):
        raise IndexError(f"Expected a key for a 0-d array. Received: {key!r}")
    scalar = isinstance(value, _SCALARS)
    if not scalar:
        if value.size == 0:
            return
        value = value.reshape(())
    if masks:
        value = mnp.where(masks[0], _like(x, value) if scalar else value, x)
    x[()] = value


def _astype(x, dt: _dt.DType):
    return x.astype(_mx_dtype(dt))


class Ops(PythonOperatorOps):
    add = staticmethod(_add)
    multiply = staticmethod(_multiply)
    pow = staticmethod(_pow)
    floor_divide = staticmethod(_floor_divide)
    remainder = staticmethod(_remainder)
    matmul = staticmethod(_matmul)
    linear = staticmethod(_linear)
    maximum = staticmethod(_maximum)
    minimum = staticmethod(_minimum)
    logical_and = staticmethod(_logical_and)
    logical_or = staticmethod(_logical_or)
    negative = staticmethod(_negative)
    abs = staticmethod(_same_if_bool(mnp.abs))
    exp = staticmethod(mnp.exp)
    log = staticmethod(mnp.log)
    sqrt = staticmethod(mnp.sqrt)
    sin = staticmethod(mnp.sin)
    cos = staticmethod(mnp.cos)
    tanh = staticmethod(mnp.tanh)
    sigmoid = staticmethod(npx.sigmoid)
    relu = staticmethod(_same_if_bool(npx.relu))
    floor = staticmethod(_same_if_bool(mnp.floor))
    logical_not = staticmethod(mnp.logical_not)
    sum = staticmethod(_reduction(mnp.sum, 0))
    mean = staticmethod(_reduction(mnp.mean, np.nan))
    max = staticmethod(_reduction(mnp.max, None))
    min = staticmethod(_reduction(mnp.min, None))
    prod = staticmethod(_reduction(mnp.prod, 1))
    argmax = staticmethod(_arg(mnp.argmax))
    argmin = staticmethod(_arg(mnp.argmin))
    reshape = staticmethod(mnp.reshape)
    permute_dims = staticmethod(_through_uint8(mnp.transpose))
    concat = staticmethod(lambda xs, axis: mnp.concatenate(xs, axis=axis))
    stack = staticmethod(lambda xs, axis: mnp.stack(xs, axis=axis))
    where = staticmethod(_where)
    clip = staticmethod(_clip)
    softmax = staticmethod(_softmax)
    log_softmax = staticmethod(_log_softmax)
    getitem = staticmethod(_getitem)
    astype = staticmethod(_astype)
    copy = staticmethod(lambda x: x.copy())


# ------------------------------------------------------------------------- GPUs


def _nvml_gpu_count() -> int | None:
    """Physical GPUs according to NVML (CUDA stays uninitialised), or None without NVML."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if nvml.nvmlInit_v2() != 0:
        return None
    try:
        count = ctypes.c_uint(0)
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return None
        return count.value
    finally:
        nvml.nvmlShutdown()


def visible_gpu_count(physical: int, visible: str | None) -> int:
    """How many of ``physical`` GPUs CUDA shows under ``CUDA_VISIBLE_DEVICES=visible``: the
    entries up to the first invalid or repeated one (indices, or ``GPU-``/``MIG-`` UUIDs)."""
    if visible is None:
        return physical
    seen: set[str] = set()
    for item in visible.split(","):
        item = item.strip()
        if item.startswith(("GPU-", "MIG-")):
            key = item
        else:
            try:
                index = int(item)
            except ValueError:
                break
            if not 0 <= index < physical:
                break
            key = str(index)
        if key in seen:
            break
        seen.add(key)
    return min(len(seen), physical) if physical else 0


def _count_gpus() -> int:
    if not mx.runtime.Features().is_enabled("CUDA"):
        return 0
    physical = _nvml_gpu_count()
    if physical is None:  # no NVML: ask CUDA itself (initialises it in this process)
        return mx.context.num_gpus()
    return visible_gpu_count(physical, os.environ.get("CUDA_VISIBLE_DEVICES"))


def _cpu_device_count() -> int:
    raw = os.environ.get(CPU_DEVICES_ENV, "2").strip()
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"Expected {CPU_DEVICES_ENV} to be a positive integer (the number of MXNet CPU "
            f"contexts multidev offers). Received: {raw!r}. Unset it for the default, 2."
        )
    return n


def _activate_numpy_semantics() -> None:
    npx.set_np()
    # MXSetIsNumpyShape: 1 turns NumPy shapes on for this thread, 2 for every thread
    mx.util.set_np_shape(2)


# ------------------------------------------------------------------------- adapter


class Backend(Autograd, AdapterBase):
    """MXNet: CPU contexts ``cpu(i)`` and CUDA GPUs; float16 and float64, no int16/bfloat16."""

    name = "mxnet"
    capabilities = frozenset({"autograd", "gpu", "multi_device", "float16", "float64"})
    tensor_types = (mnp.ndarray,)
    ops = Ops()
    reference = "multidev_mxnet.reference"
    array_limits = ArrayLimits(ndim=32, dim=2**31 - 1, elements=2**31 - 1)

    def __init__(self) -> None:
        super().__init__()
        _activate_numpy_semantics()
        self._num_cpus = _cpu_device_count()
        self._num_gpus: int | None = None
        self._to_ctx: dict[Device, mx.Context] = {}
        self._from_ctx: dict[mx.Context, Device] = {}
        for i in range(self._num_cpus):
            self._remember(Device("cpu", i), mx.cpu(i))

    def _remember(self, dev: Device, ctx: mx.Context) -> None:
        self._to_ctx[dev] = ctx
        self._from_ctx[ctx] = dev

    def version(self) -> str:
        return str(mx.__version__)

    # devices ---------------------------------------------------------------
    def num_gpus(self) -> int:
        """CUDA GPUs MXNet can use (counted once, through NVML where it is available)."""
        if self._num_gpus is None:
            self._num_gpus = _count_gpus()
            for i in range(self._num_gpus):
                self._remember(Device("gpu", i), mx.gpu(i))
        return self._num_gpus

    def list_devices(self) -> list[Device]:
        cpus = [Device("cpu", i) for i in range(self._num_cpus)]
        return cpus + [Device("gpu", i) for i in range(self.num_gpus())]

    def default_device(self) -> Device:
        """MXNet's current context (``with mx.cpu(1):``) when it is one of ours, else cpu:0."""
        dev = self._from_ctx.get(mx.context.current_context())
        return dev if dev is not None and dev in self.device_set() else _CPU

    def native_device(self, dev: Device) -> mx.Context:
        try:
            return self._to_ctx[dev]
        except KeyError:
            pass
        ctx = mx.Context(dev.type, dev.index)
        self._remember(dev, ctx)
        return ctx

    def parse_native_device(self, obj: Any) -> Device | None:
        if not isinstance(obj, mx.Context):
            return None
        kind = obj.device_type
        if kind == "gpu":
            return Device("gpu", obj.device_id)
        if kind == "cpu":
            return Device("cpu", obj.device_id)
        if kind in ("cpu_pinned", "cpu_shared"):  # host memory; the id names a GPU or process
            return _CPU
        return None

    def device_of(self, x) -> Device:
        ctx = x.ctx
        try:
            return self._from_ctx[ctx]
        except KeyError:
            pass
        dev = self.parse_native_device(ctx)
        if dev is None:
            raise DeviceError(
                f"Expected an array on a cpu or gpu context. Received: an array on {ctx}. "
                "Move it first, e.g. with x.copyto(mx.cpu())."
            )
        self._from_ctx[ctx] = dev
        return dev

    def scope(self, dev: Device) -> AbstractContextManager:
        """``with`` the device's context: MXNet's default placement inside."""
        return mx.Context(self.native_device(dev))  # a fresh one: a Context nests only once

    # tensors ---------------------------------------------------------------
    def dtype_of(self, x) -> _dt.DType:
        try:
            return _FROM_MX[x.dtype]
        except KeyError:
            raise TypeError(
                f"Expected an array of one of the dtypes the mxnet backend supports "
                f"({_SUPPORTED}). Received: {x.dtype}. Convert it first, e.g. with "
                "x.astype('float32')."
            ) from None

    def native_dtype(self, dt: _dt.DType) -> np.dtype:
        return _mx_dtype(dt)

    def shape_of(self, x) -> tuple[int, ...]:
        return x.shape

    def from_numpy(self, arr: np.ndarray, dev: Device) -> mnp.ndarray:
        """A copy on ``dev``. Never zero-copy: MXNet's zero-copy wrapper makes the caller's
        array read-only (its engine runs asynchronously), which would change user data."""
        dtype = arr.dtype
        if not dtype.isnative:
            dtype = dtype.newbyteorder("=")
            arr = arr.astype(dtype)
        if dtype not in _FROM_MX:
            raise unsupported_dtype(_dt.from_numpy_dtype(dtype))
        return mnp.array(arr, dtype=dtype, ctx=self.native_device(dev))

    def to_numpy(self, x) -> np.ndarray:
        """A host copy of the values (waits for pending operations on x)."""
        return x.asnumpy()

    def to_device(self, x, dev: Device) -> mnp.ndarray:
        return x.copyto(self.native_device(dev))

    def full(self, shape, value, dt, dev) -> mnp.ndarray:
        npdt = _mx_dtype(dt)
        if not isinstance(value, (*_SCALARS, np.generic)) or (
            dt.kind in "iu" and isinstance(value, int) and abs(value) > _EXACT_INT
        ):
            return self.from_numpy(np.full(shape, value, dtype=npdt), dev)
        return mnp.full(shape, value, dtype=npdt, ctx=self.native_device(dev))

    def setitem(self, x, key, value):
        """``x[key] = value`` in place; returns x."""
        if type(value) is int and abs(value) > _EXACT_INT:
            value = mnp.array(value, dtype=x.dtype, ctx=x.ctx)
        elif x.dtype == _BOOL and not isinstance(value, _SCALARS):
            # several of MXNet's assignment kernels lack bool: assign in uint8, copy back
            staged = x.astype(_UINT8)
            self.setitem(staged, key, value.astype(_UINT8))
            x[...] = staged.astype(_BOOL)
            return x
        if _has_array(key):
            if 0 in x.shape:  # nothing to write (MXNet's scatter kernels crash on it)
                return x
            key = _checked_write_key(x, key)
        try:
            x[key] = value
        except IndexError:
            if x.ndim != 0:
                raise
            _write_zero_dim(x, key, value)
        return x

    def seed(self, seed: int) -> None:
        mx.random.seed(seed)

    # parameters --------------------------------------------------------------
    def make_variable(self, x) -> mx.gluon.Parameter:
        """A gluon ``Parameter`` holding a copy of x on x's context, its gradient buffer attached
        (floating point only) in ``"add"`` mode: gradients add up until zeroed, as in PyTorch."""
        floating = x.dtype in _FLOATS
        with mx.util.np_array(True), mx.autograd.pause():
            var = mx.gluon.Parameter(
                "weight", grad_req="add" if floating else "null", shape=x.shape, dtype=x.dtype
            )
            if 0 in x.shape:
                # gluon takes a 0 in a shape for "unknown" and refuses to initialise it; this
                # loads the (empty) values directly, as loading a checkpoint does
                var._load_init(x, x.ctx)
            else:
                var.initialize(init=mx.init.Zero(), ctx=x.ctx)
                var.set_data(x)
        return var

    def variable_tensor(self, var):
        return var.data(var.list_ctx()[0])

    def add_scaled_(self, x, y, alpha: float):
        """``x += alpha * y`` in place: MXNet's fused ``sgd_update`` kernel (``w -= lr * g``
        with ``lr = -alpha``) on legacy views of the same memory, for floating point."""
        if x.dtype in _FLOATS and x.size:
            w = x.as_nd_ndarray()
            mx.nd.sgd_update(w, y.as_nd_ndarray(), lr=-alpha, wd=0.0, out=w)
        else:
            x += y * alpha
        return x
