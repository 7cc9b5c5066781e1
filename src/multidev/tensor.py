"""``md.Tensor``: a thin wrapper around a native tensor that remembers backend, device and dtype.

The hot path (Python operators) checks backend and device by identity, matches dtypes
with PyTorch's promotion table, calls the native operator, and wraps the result; the
device and dtype of the result are known without asking the framework.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes as _dt
from .device import Device, as_device, check_available
from .errors import BackendError, DeviceMismatchError

__all__ = ["Tensor"]

_SCALARS = (int, float, bool)
_ARITH, _DIV, _CMP, _LOGIC = 0, 1, 2, 3


class Tensor:
    """A native tensor with its backend, device and dtype. Create one with ``md.asarray``."""

    __slots__ = ("__weakref__", "_bk", "_dev", "_dtype", "_native")

    def __init__(self, native: Any, bk: Any, dev: Device, dtype: _dt.DType) -> None:
        self._native = native
        self._bk = bk
        self._dev = dev
        self._dtype = dtype

    # ---------------------------------------------------------------- properties
    @property
    def native(self) -> Any:
        """The framework's own tensor (no copy)."""
        return self._native

    @property
    def backend(self) -> str:
        return self._bk.name

    @property
    def device(self) -> Device:
        return self._dev

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._bk.shape_of(self._native)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def numel(self) -> int:
        return self.size

    @property
    def T(self) -> Tensor:
        from . import ops

        return ops.permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    # ---------------------------------------------------------------- host access
    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (shares memory where the framework allows it)."""
        return self._bk.to_numpy(self._native)

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self) -> Any:
        """The single value of a one-element tensor, as a Python scalar."""
        if self.size != 1:
            raise ValueError(
                f"Expected a tensor with exactly one element for item(). "
                f"Received: shape {self.shape}. Index it or reduce it first (e.g. md.sum)."
            )
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self._dtype}")
        return int(self.item())

    def __repr__(self) -> str:
        try:
            body = np.array2string(
                np.asarray(self.numpy()), separator=", ", prefix="tensor(", threshold=100
            )
        except Exception as e:  # a tensor whose values cannot be read still gets a repr
            body = f"<unreadable: {e}>"
        return (
            f"tensor({body}, dtype={self._dtype.name}, device={self._dev}, backend={self._bk.name})"
        )

    __hash__ = object.__hash__  # __eq__ is elementwise: identity hashing, as in PyTorch

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A copy with its own storage on the same device, made by the backend's copy op
        (nothing framework-specific is pickled)."""
        bk = self._bk
        return Tensor(_on(bk, self._dev, bk.ops.copy, self._native), bk, self._dev, self._dtype)

    # ---------------------------------------------------------------- placement
    def to(self, device: Any = None, dtype: Any = None, *, copy: bool = False) -> Tensor:
        """This tensor on ``device`` (and/or as ``dtype``).

        Returns the very same object when nothing changes and ``copy`` is false.
        """
        if isinstance(device, _dt.DType):
            device, dtype = None, device
        t = self
        if dtype is not None and _dt.as_dtype(dtype) is not self._dtype:
            from .ops import astype

            t = astype(t, dtype)
            copy = False
        if device is None:
            return t.to(t._dev, copy=True) if copy else t
        dev = device if type(device) is Device else as_device(device)
        if dev is t._dev and not copy:
            return t
        bk = t._bk
        check_available(bk, dev)
        if dev is t._dev:
            native = _on(bk, dev, bk.ops.copy, t._native)
        else:
            native = bk.to_device(t._native, dev)
        return Tensor(native, bk, dev, t._dtype)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """Array API spelling of ``to(device)``."""
        return self.to(device)

    def to_backend(self, name: str) -> Tensor:
        """This tensor on another backend (DLPack where both support it, else via host memory)."""
        from . import registry

        target = registry.load(name)
        if target is self._bk:
            return self
        if "dlpack" in self._bk.capabilities and "dlpack" in target.capabilities:
            try:
                native = target.from_dlpack(self._native)
                return Tensor(native, target, target.device_of(native), self._dtype)
            except Exception:  # framework pair without a working DLPack path: go through host
                pass
        dev = self._dev if self._dev in target.device_set() else target.default_device()
        arr = np.ascontiguousarray(self.numpy())
        return Tensor(target.from_numpy(arr, dev), target, dev, self._dtype)

    # ---------------------------------------------------------------- indexing
    def __getitem__(self, key: Any) -> Tensor:
        bk = self._bk
        native = _on(bk, self._dev, bk.ops.getitem, self._native, _native_key(self, key))
        return Tensor(native, bk, self._dev, self._dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        bk = self._bk
        if isinstance(value, Tensor):
            _check_same(self, value)
            v = value._native
            if value._dtype is not self._dtype:
                v = _on(bk, self._dev, bk.ops.astype, v, self._dtype)
        elif type(value) in _SCALARS:
            v = value
        else:
            v = _coerce(self, value)._native
            v = _on(bk, self._dev, bk.ops.astype, v, self._dtype)
        self._native = bk.setitem(self._native, _native_key(self, key), v)

    def _assign(self, result: Tensor) -> Tensor:
        """Write ``result`` into this tensor's storage (in-place operators)."""
        self[...] = result
        return self

    # ---------------------------------------------------------------- methods
    def astype(self, dtype: Any) -> Tensor:
        from .ops import astype

        return astype(self, dtype)

    def reshape(self, *shape: Any) -> Tensor:
        from .ops import reshape

        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def sum(self, axis=None, keepdims=False) -> Tensor:
        from .ops import sum as _sum

        return _sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False) -> Tensor:
        from .ops import mean

        return mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False) -> Tensor:
        from .ops import max as _max

        return _max(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None, keepdims=False) -> Tensor:
        from .ops import argmax

        return argmax(self, axis=axis, keepdims=keepdims)

    def abs(self) -> Tensor:
        return self.__abs__()

    def exp(self) -> Tensor:
        from .ops import exp

        return exp(self)

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Add the gradient of this tensor to ``p.grad`` of every parameter it was computed
        from (inside ``md.autograd.record()``); gradients add up until ``zero_grad``.

        ``gradient`` (this tensor's shape) is required unless the tensor has one element.
        The recording is freed afterwards unless ``retain_graph``. Raises
        ``md.AutogradError`` on a tensor that was not recorded or on a backend without
        autograd (NumPy).
        """
        from .autograd import backward

        backward(self, gradient, retain_graph)

    # ---------------------------------------------------------------- operators
    # (the binary operators are installed below the class by _install_operators)

    def __invert__(self):
        if self._dtype is not _dt.bool:
            raise TypeError(f"Expected a bool tensor for ~. Received: {self._dtype}")
        return _unop(self, "logical_not")

    def __neg__(self):
        return _unop(self, "negative")

    def __pos__(self):
        return self

    def __abs__(self):
        return _unop(self, "abs")

    def __iadd__(self, other):
        return self._assign(self + other)

    def __isub__(self, other):
        return self._assign(self - other)

    def __imul__(self, other):
        return self._assign(self * other)

    def __itruediv__(self, other):
        return self._assign(self / other)

    def __ifloordiv__(self, other):
        return self._assign(self // other)

    def __imod__(self, other):
        return self._assign(self % other)

    def __ipow__(self, other):
        return self._assign(self**other)


# -------------------------------------------------------------------- helpers


def _on(bk, dev, fn, *args):
    """Run a native op so that its result stays on ``dev``."""
    if bk.scoped_devices and dev in bk.scoped_devices:
        with bk.scope(dev):
            return fn(*args)
    return fn(*args)


def _check_same(x: Tensor, y: Tensor) -> None:
    if y._bk is not x._bk:
        raise BackendError(
            f"Expected tensors of one backend. Received: {x._bk.name} and {y._bk.name}. "
            f"Convert one with .to_backend({x._bk.name!r})."
        )
    if y._dev is not x._dev:
        raise DeviceMismatchError(
            f"Expected tensors on one device. Received: {x._dev} and {y._dev}. "
            f"Move one with .to({str(x._dev)!r}) first; multidev never copies silently."
        )


def _coerce(x: Tensor, value: Any) -> Tensor:
    """A non-Tensor operand (array, list, native tensor) as a Tensor on x's backend and device."""
    from .creation import asarray

    if isinstance(value, Tensor):
        return value
    if x._bk.tensor_types and isinstance(value, x._bk.tensor_types):
        t = asarray(value)
        if t._dev is not x._dev:
            _check_same(x, t)
        return t
    return asarray(value, device=x._dev)


def _operands(x: Tensor, y: Any, kind: int):
    """Native operands of one dtype, and the result dtype."""
    bk = x._bk
    xd = x._dtype
    a = x._native
    if type(y) in _SCALARS:
        dt = _dt.scalar_result_type(xd, y)
        if kind == _DIV and dt.kind != "f":
            dt = _dt.float32
        if dt is not xd:
            a = _on(bk, x._dev, bk.ops.astype, a, dt)
        b = (
            y
            if (dt.kind == "b" or type(y) is not bool)
            else (float(y) if dt.kind == "f" else int(y))
        )
        return a, b, dt
    if not isinstance(y, Tensor):
        y = _coerce(x, y)
    if y._bk is not bk or y._dev is not x._dev:
        _check_same(x, y)
    yd = y._dtype
    b = y._native
    dt = xd if xd is yd else _dt.result_type(xd, yd)
    if kind == _DIV and dt.kind != "f":
        dt = _dt.float32
    if xd is not dt:
        a = _on(bk, x._dev, bk.ops.astype, a, dt)
    if yd is not dt:
        b = _on(bk, x._dev, bk.ops.astype, b, dt)
    return a, b, dt


def _result_dtype(dt: _dt.DType, kind: int) -> _dt.DType:
    return _dt.bool if kind == _CMP else dt


def _binop(x: Tensor, y: Any, name: str, kind: int) -> Tensor:
    bk = x._bk
    dev = x._dev
    if type(y) is Tensor and y._dtype is x._dtype and y._bk is bk and y._dev is dev:
        dt = x._dtype  # fast path: same dtype, device and backend
        a, b = x._native, y._native
        if kind == _DIV and dt.kind != "f":
            a, b, dt = _operands(x, y, kind)
    else:
        a, b, dt = _operands(x, y, kind)
    if kind == _LOGIC and dt is not _dt.bool:
        raise TypeError(f"Expected bool tensors for & and |. Received: {dt}")
    fn = getattr(bk.ops, name)
    if bk.scoped_devices and dev in bk.scoped_devices:
        with bk.scope(dev):
            out = fn(a, b)
    else:
        out = fn(a, b)
    return Tensor(out, bk, dev, _dt.bool if kind == _CMP else dt)


def _make_operator(name: str, kind: int):
    """The dunder for one binary operator, with the common case (same backend, device and
    dtype, no device scope needed) handled without further calls. The native op is looked
    up once per adapter."""
    fns: dict[Any, Any] = {}

    def native_op(bk):
        fn = fns[bk] = getattr(bk.ops, name)
        return fn

    if kind in (_ARITH, _CMP):
        is_cmp = kind == _CMP
        bool_dt = _dt.bool

        def operator(self, other):
            if type(other) is Tensor:
                bk = self._bk
                dev = self._dev
                dt = self._dtype
                if other._bk is bk and other._dev is dev and other._dtype is dt:
                    scoped = bk.scoped_devices
                    if not scoped or dev not in scoped:
                        fn = fns.get(bk) or native_op(bk)
                        return Tensor(
                            fn(self._native, other._native), bk, dev, bool_dt if is_cmp else dt
                        )
            return _binop(self, other, name, kind)

    else:
        fast_dtypes = (
            frozenset(d for d in _dt.ALL if d.kind == "f")
            if kind == _DIV
            else frozenset({_dt.bool})
        )

        def operator(self, other):
            if type(other) is Tensor:
                bk = self._bk
                dev = self._dev
                dt = self._dtype
                if (
                    other._bk is bk
                    and other._dev is dev
                    and other._dtype is dt
                    and dt in fast_dtypes
                    and (not bk.scoped_devices or dev not in bk.scoped_devices)
                ):
                    fn = fns.get(bk) or native_op(bk)
                    return Tensor(fn(self._native, other._native), bk, dev, dt)
            return _binop(self, other, name, kind)

    def reflected(self, other):
        return _rbinop(self, other, name, kind)

    return operator, reflected


_OPERATORS = {
    "add": ("add", _ARITH),
    "sub": ("subtract", _ARITH),
    "mul": ("multiply", _ARITH),
    "truediv": ("divide", _DIV),
    "floordiv": ("floor_divide", _ARITH),
    "mod": ("remainder", _ARITH),
    "pow": ("pow", _ARITH),
    "matmul": ("matmul", _ARITH),
    "and": ("logical_and", _LOGIC),
    "or": ("logical_or", _LOGIC),
}
_COMPARISONS = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


def _install_operators() -> None:
    for dunder, (name, kind) in _OPERATORS.items():
        fwd, rev = _make_operator(name, kind)
        fwd.__name__, rev.__name__ = f"__{dunder}__", f"__r{dunder}__"
        setattr(Tensor, fwd.__name__, fwd)
        setattr(Tensor, rev.__name__, rev)
    for dunder, name in _COMPARISONS.items():
        fwd, _ = _make_operator(name, _CMP)
        fwd.__name__ = f"__{dunder}__"
        setattr(Tensor, fwd.__name__, fwd)


def _rbinop(x: Tensor, y: Any, name: str, kind: int) -> Tensor:
    if type(y) not in _SCALARS:
        return _binop(_coerce(x, y), x, name, kind)
    a, b, dt = _operands(x, y, kind)
    if kind == _LOGIC and dt is not _dt.bool:
        raise TypeError(f"Expected bool tensors for & and |. Received: {dt}")
    bk = x._bk
    out = _on(bk, x._dev, getattr(bk.ops, name), b, a)
    return Tensor(out, bk, x._dev, _result_dtype(dt, kind))


def _unop(x: Tensor, name: str) -> Tensor:
    bk = x._bk
    return Tensor(_on(bk, x._dev, getattr(bk.ops, name), x._native), bk, x._dev, x._dtype)


def _native_key(x: Tensor, key: Any) -> Any:
    """Index key with Tensors replaced by native tensors (checked for backend and device)."""
    if type(key) is tuple:
        return tuple(_native_key_item(x, k) for k in key)
    return _native_key_item(x, key)


def _native_key_item(x: Tensor, k: Any) -> Any:
    if isinstance(k, Tensor):
        _check_same(x, k)
        return k._native
    if isinstance(k, (list, np.ndarray)):
        return _coerce(x, k)._native
    return k


_install_operators()
