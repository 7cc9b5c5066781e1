"""The MXNet adapter: native tensors are ``mxnet.numpy.ndarray``, variables gluon ``Parameter``s.

MXNet 1.9 is used through its NumPy-compatible interface (``from mxnet import np, npx``), the
one d2l uses. Building the adapter calls ``npx.set_np()`` once: NumPy array semantics for the
calling thread (gluon then makes ``mxnet.numpy`` arrays) and NumPy shape semantics (0-d and
zero-size arrays), which it turns on for every thread, since tensors may be used from worker
threads. These are the only framework-wide settings the adapter changes.

Devices are MXNet contexts: ``cpu:0`` … ``cpu:N-1`` are ``mx.cpu(i)``, N coming from the
environment variable ``MULTIDEV_MXNET_CPU_DEVICES`` (default 2); ``gpu:i`` is ``mx.gpu(i)``.
GPUs are counted once, on first use, through NVML, which leaves CUDA uninitialised (a later
``fork`` still works), honouring ``CUDA_VISIBLE_DEVICES`` as CUDA reads it; a build of MXNet
without CUDA has none. GPU memory is taken on demand by MXNet's pooled allocator, never all at once.

MXNet runs operations asynchronously: a failure inside a kernel surfaces when the result is
read. NumPy arrays are wrapped without a copy on ``cpu:0`` where MXNet allows it (C-contiguous,
aligned, writable, not int8); as with MXNet's own ``from_numpy``, such a source array becomes
read-only, because writing to it would race with MXNet's engine. MXNet has no int16 and no
bfloat16: asking for them raises TypeError.
"""

from __future__ import annotations

import operator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import mxnet as mx
import numpy as np
from mxnet import np as mnp
from mxnet import npx

from multidev import dtypes as _dt
from multidev.contract import AdapterBase, ArrayLimits, env_count, wrapped_table
from multidev.device import CPU0, Device
from multidev.gpus import nvml_visible_gpu_count, visible_gpu_count
from multidev.tracing import tracing, untraceable

from . import fill, updates
from .arithmetic import FLOATS
from .autograd import Autograd
from .dtypes import ALTERNATIVES
from .indexing import recorded_setitem, setitem
from .jit import READS_VALUES, WRITES_IN_PLACE, Jit, trace_input, traced_write
from .linalg import FFT, LINALG
from .ops import OPS
from .recording import AUTO, recorded

__all__ = ["CPU_DEVICES_ENV", "Backend", "visible_gpu_count"]

CPU_DEVICES_ENV = "MULTIDEV_MXNET_CPU_DEVICES"
_CPU_CONTEXT = mx.cpu(0)
#: dtypes MXNet's ``from_numpy`` refuses
_NO_ZERO_COPY = frozenset({np.dtype("int8")})


_auto_recorded_setitem = recorded(recorded_setitem)


class Backend(Jit, Autograd, AdapterBase):
    """MXNet: CPU contexts ``cpu(i)`` and CUDA GPUs; float16 and float64, no int16/bfloat16."""

    name = "mxnet"
    # each op records itself where gradients are enabled (recording.py says why)
    ops = wrapped_table(OPS, recorded)
    linalg = LINALG.wrapped(recorded)
    fft = FFT.wrapped(recorded)
    capabilities = frozenset(
        {"autograd", "implicit_grad", "gpu", "multi_device", "float16", "float64", "jit"}
    )
    tensor_types = (mnp.ndarray,)
    dtype_alternatives = ALTERNATIVES
    # MXNet's current context (``with mx.cpu(1):``) when it is one of ours, else cpu:0
    native_default = staticmethod(mx.context.current_context)
    native_place = operator.attrgetter("ctx")
    native_full = staticmethod(fill.full)
    native_empty = staticmethod(lambda shape, dt, dev: mnp.empty(shape, dtype=dt, ctx=dev))
    conformance_xfails: ClassVar[dict[str, str]] = {
        "test_gradients_match_finite_differences[eigvalsh]": (
            "MXNet 1.9.1's eigvalsh/eigh backward gives zero gradients"
        ),
    }
    convert_hint = "Convert it first, e.g. with x.astype('float32')."
    move_hint = "Move it first, e.g. with x.copyto(mx.cpu())."
    # MXNet holds 32 dimensions, but its elementwise kernels broadcast over at most five that
    # do not merge, and fail at the next read (asynchronously), where the core cannot retry
    array_limits = ArrayLimits(ndim=32, dim=2**31 - 1, elements=2**31 - 1, broadcast_ndim=5)

    def __init__(self) -> None:
        super().__init__()
        npx.set_np()
        # MXSetIsNumpyShape: 1 turns NumPy shapes on for this thread, 2 for every thread
        mx.util.set_np_shape(2)
        self.cpu_count = env_count(CPU_DEVICES_ENV, 2, "MXNet CPU contexts multidev offers")

    # devices ---------------------------------------------------------------
    def count_gpus(self) -> int:
        n = nvml_visible_gpu_count() if mx.runtime.Features().is_enabled("CUDA") else 0
        if n is None:  # no NVML: ask CUDA itself (initialises it in this process)
            n = mx.context.num_gpus()
        return n

    def make_native_device(self, dev: Device) -> mx.Context:
        return mx.Context(dev.type, dev.index)

    def parse_native_device(self, obj: Any) -> Device | None:
        kind = obj.device_type if isinstance(obj, mx.Context) else None
        if kind in ("cpu_pinned", "cpu_shared"):  # host memory; the id names a GPU or process
            return CPU0
        return Device(kind, obj.device_id) if kind in ("cpu", "gpu") else None

    def scope(self, dev: Device) -> AbstractContextManager:
        """``with`` the device's context: MXNet's default placement inside."""
        return mx.Context(self.native_device(dev))  # a fresh one: a Context nests only once

    # tensors ---------------------------------------------------------------
    def from_numpy(self, arr: np.ndarray, dev: Device) -> mnp.ndarray:
        """A copy on ``dev``; the caller's array is left as it is (MXNet's zero-copy wrapper
        would make it read-only). On ``cpu:0`` the copy is made by NumPy and handed to MXNet
        without a further copy (``from_numpy``), so it does not wait for MXNet's queued
        operations as MXNet's own host copy does (a synchronisation point each call). Inside
        a graph trace (``md.jit``) the copy is an input of the graph that each run passes
        (``trace_input``): a constant the function makes from NumPy values."""
        dtype = self.native_dtype(_dt.from_numpy_dtype(arr.dtype))  # in native byte order
        ctx = self.native_device(dev)
        if ctx == _CPU_CONTEXT and dtype not in _NO_ZERO_COPY:
            own = np.array(arr, dtype=dtype, order="C")
            return trace_input(mx.nd.from_numpy(own, zero_copy=True).as_np_ndarray())
        return trace_input(mnp.array(arr, dtype=dtype, ctx=ctx))

    def to_numpy(self, x) -> np.ndarray:
        """A host copy of the values (waits for pending operations on x). Stops a graph
        trace (``md.jit``), which would replay the values as constants."""
        untraceable(READS_VALUES)
        try:
            return x.asnumpy()
        except mx.base.MXNetError as e:
            # MXNet runs ops asynchronously: an index or class label out of range fails where
            # the result is first read, here, as MXNet's own error
            if "out of bound" not in str(e):
                raise
            raise IndexError(
                "Expected indices (class labels included) within the size of the axis they "
                "index. Received: an index out of range in an operation that computed this "
                f"value ({str(e).strip().splitlines()[-1]}). MXNet runs operations "
                "asynchronously, so the error shows where the value is read: check the labels "
                "or indices given to the operations before this read."
            ) from e

    @recorded
    def to_device(self, x, dev: Device) -> mnp.ndarray:
        return x.copyto(self.native_device(dev))

    def full(self, shape, value, dt, dev) -> mnp.ndarray:
        # a Python int beyond 2**53 would lose digits on its way through a C double
        if dt.kind in "iu" and isinstance(value, int) and not fill.exact_float64(value):
            return self.from_numpy(np.full(shape, value, dtype=self.native_dtype(dt)), dev)
        return super().full(shape, value, dt, dev)

    def setitem(self, x, key, value):
        if tracing() and (new := traced_write(x, key, value)) is not None:
            return new  # a buffer written whole: the graph's new value (jit.traced_write)
        untraceable(WRITES_IN_PLACE)
        if mx.autograd.is_recording():
            return recorded_setitem(x, key, value)
        if AUTO[0]:  # recorded as the ops are
            return _auto_recorded_setitem(x, key, value)
        return setitem(x, key, value)

    seed = staticmethod(mx.random.seed)

    # parameters --------------------------------------------------------------
    def is_trainable_variable(self, var) -> bool:
        return isinstance(var, mx.gluon.Parameter) and var.grad_req != "null"

    def make_variable(self, x) -> mx.gluon.Parameter:
        """A gluon ``Parameter`` holding a copy of x on x's context, its gradient buffer attached
        (floating point only) in ``"add"`` mode: gradients add up until zeroed, as in PyTorch."""
        floating = x.dtype in FLOATS
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

    def detach(self, x):
        """MXNet's ``detach``: the same memory without the gradient buffer or the graph, so
        no gradient flows through it and a write into it (``p.data[0] = 1``) is an ordinary
        write, recorded or not."""
        return x.detach()

    def add_scaled_(self, x, y, alpha: float):
        """``x += alpha * y`` in place: MXNet's fused ``sgd_update`` kernel (``w -= lr * g``
        with ``lr = -alpha``) on legacy views of the same memory, for floating point."""
        untraceable(WRITES_IN_PLACE)
        if x.dtype in FLOATS and x.size:
            w = x.as_nd_ndarray()
            mx.nd.sgd_update(w, y.as_nd_ndarray(), lr=-alpha, wd=0.0, out=w)
        else:
            x += y * alpha
        return x

    def add_scaled_many_(self, xs, ys, alpha: float) -> list:
        """``x += alpha * y`` for each pair, in as few ``multi_sgd_update``/``sgd_update``
        engine operations as the tensors' sizes allow (``updates.add_scaled_many_``)."""
        untraceable(WRITES_IN_PLACE)
        return updates.add_scaled_many_(list(xs), list(ys), alpha)
