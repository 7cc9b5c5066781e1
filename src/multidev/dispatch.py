"""The dispatch layer: every rule for running a native op on Tensors, written once.

It checks that operands share a backend and a device (``check_same``), turns other operands
into Tensors (``asarray``, ``coerce``), matches dtypes with PyTorch's promotion table
(``operands``), runs the native op so that its result stays on its inputs' device (``on``),
and wraps the result (``wrap``). ``tensors``, ``ops``, ``creation``, ``autograd`` and ``nn``
stand on it; ``multidev.methods`` attaches the operators built here to ``Tensor``.

The hot path (Python operators) checks backend and device by identity, and the device and
dtype of the result are known without asking the framework. Each adapter's tensors are one
subclass of ``Tensor`` (``tensor_class``, made by ``new_tensor``) whose operators have the
adapter's ops bound in: the class itself stands for the backend.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes as _dt
from . import registry
from .device import Device, as_device, check_available, scoped_device
from .errors import BackendError, DeviceMismatchError, ShapeError
from .tensors import Tensor

if TYPE_CHECKING:
    from .contract import DLPack

__all__ = [
    "ARITH",
    "CMP",
    "DIV",
    "LOGIC",
    "SCALARS",
    "as_tensor",
    "asarray",
    "binop",
    "call",
    "cast",
    "check_same",
    "check_shapes",
    "coerce",
    "device_for",
    "elementwise",
    "expand",
    "floating",
    "from_host",
    "getitem",
    "make_operator",
    "native_key",
    "new_tensor",
    "on",
    "operands",
    "rbinop",
    "recover",
    "setitem",
    "tensor_class",
    "to",
    "to_backend",
    "to_device",
    "unop",
    "wrap",
    "write_in_place",
]

SCALARS = (int, float, bool, complex)
#: operator kinds: arithmetic, true division (floating result), comparison, logical
ARITH, DIV, CMP, LOGIC = 0, 1, 2, 3


def device_for(bk: Any, device: Any) -> Device:
    """The device a new tensor goes to: ``device``, else the ``with device:`` scope, else the
    backend's default; DeviceError where the backend lacks it."""
    if device is None:
        dev = scoped_device()
        if dev is None:
            return bk.default_device()
    else:
        dev = as_device(device)
    check_available(bk, dev)
    return dev


def from_host(bk: Any, arr: np.ndarray, dt: _dt.DType, dev: Device) -> Tensor:
    """A Tensor of ``bk`` on ``dev`` holding the host array ``arr`` (of dtype ``dt``); the
    backend's dtype error where it lacks ``dt`` (Paddle would read uint16 data as bfloat16)."""
    if dt not in bk.dtypes:
        raise bk.unsupported_dtype(dt)
    return new_tensor(bk.from_numpy(arr, dev), bk, dev, dt)


def as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """``x`` as a Tensor (on ``like``'s device when it is not one yet)."""
    if isinstance(x, Tensor):
        return x
    return asarray(x) if like is None else asarray(x, device=like.device)


def wrap(x: Tensor, native: Any, dtype: _dt.DType | None = None) -> Tensor:
    """A native result of an op on ``x`` as a Tensor on x's backend and device."""
    bk = x._bk
    return new_tensor(native, bk, x._dev, bk.dtype_of(native) if dtype is None else dtype)


def call(x: Tensor, name: str, *args: Any) -> Any:
    """The adapter's op ``name`` run on native ``args`` so that its result stays on x's device."""
    bk = x._bk
    return on(bk, x._dev, getattr(bk.ops, name), *args)


def cast(x: Tensor, dt: _dt.DType) -> Tensor:
    """``x`` as dtype ``dt`` (a new tensor)."""
    return wrap(x, call(x, "astype", x._native, dt), dt)


def floating(x: Tensor) -> Tensor:
    """``x``, or ``x`` in float32 where it is bool or integer (complex stays complex)."""
    return x if x._dtype.kind in "fc" else cast(x, _dt.float32)


def asarray(obj: Any, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Tensor:
    """A Tensor from a Tensor, native tensor, NumPy array, scalar or nested list.

    Zero-copy where possible. Python floats become float32, complex numbers complex64 and
    ints int64, as in PyTorch.
    """
    bk = registry.current()
    dt = None if dtype is None else _dt.as_dtype(dtype)
    if isinstance(obj, Tensor):
        t = obj if obj._bk is bk else to_backend(obj, bk.name)
        if dt is not None and dt is not t._dtype:
            t = cast(t, dt)
            copy = False
        if device is not None:
            return to(t, device, copy=bool(copy))
        return to(t, t._dev, copy=True) if copy else t
    if bk.tensor_types and isinstance(obj, bk.tensor_types):
        native = obj
        dev = bk.device_of(native)
        t = new_tensor(native, bk, dev, bk.dtype_of(native))
        return asarray(t, dtype=dt, device=device, copy=copy)
    dev = device_for(bk, device)
    if isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        arr = np.asarray(obj)
        if arr.dtype.names is not None or (
            arr.dtype.kind in "OUSV" and arr.dtype != _dt.bfloat16.numpy
        ):
            raise TypeError(f"Expected numeric data. Received: NumPy array of dtype {arr.dtype}")
        src = _dt.from_numpy_dtype(arr.dtype)
        dt = dt or src
        if dt is not src:
            arr = arr.astype(dt.numpy)
        elif copy:
            arr = arr.copy()
        return from_host(bk, arr, dt, dev)
    if hasattr(obj, "__dlpack__") or hasattr(obj, "numpy"):
        try:
            return asarray(np.asarray(obj), dtype=dt, device=dev)
        except Exception:
            pass
    try:
        arr = np.asarray(obj)
    except Exception as e:
        raise TypeError(
            f"Expected a tensor, array, scalar or nested list of numbers. Received: "
            f"{type(obj).__name__} ({e})"
        ) from None
    if arr.dtype.kind not in "biufc":
        raise TypeError(
            "Expected a tensor, array, scalar or nested list of numbers. "
            f"Received: {type(obj).__name__} giving NumPy dtype {arr.dtype}"
        )
    if dt is None:
        dt = {"b": _dt.bool, "f": _dt.float32, "c": _dt.complex64}.get(arr.dtype.kind, _dt.int64)
    elif dt is _dt.uint64 and arr.dtype.kind == "f":
        # NumPy reads a list mixing ints of int64's range and ints beyond it as float64
        try:
            return from_host(bk, np.asarray(obj, dtype=dt.numpy), dt, dev)
        except (OverflowError, TypeError, ValueError):
            pass
    return from_host(bk, arr.astype(dt.numpy), dt, dev)


def to(self: Tensor, device: Any = None, dtype: Any = None, *, copy: bool = False) -> Tensor:
    """This tensor on ``device`` (and/or as ``dtype``).

    Returns the very same object when nothing changes and ``copy`` is false.
    """
    if isinstance(device, _dt.DType):
        device, dtype = None, device
    t = self
    if dtype is not None and _dt.as_dtype(dtype) is not self._dtype:
        t = cast(t, _dt.as_dtype(dtype))
        copy = False
    if device is None:
        return to(t, t._dev, copy=True) if copy else t
    dev = device if type(device) is Device else as_device(device)
    if dev is t._dev and not copy:
        return t
    bk = t._bk
    if dev is t._dev:  # a copy where the tensor already is
        return new_tensor(on(bk, dev, bk.ops.copy, t._native), bk, dev, t._dtype)
    check_available(bk, dev)
    return new_tensor(bk.to_device(t._native, dev), bk, dev, t._dtype)


def to_device(self: Tensor, device: Any, /, *, stream: Any = None) -> Tensor:
    """Array API spelling of ``to(device)``."""
    return to(self, device)


def to_backend(self: Tensor, name: str) -> Tensor:
    """This tensor on another backend (DLPack where both support it, else via host memory)."""
    target = registry.load(name)
    if target is self._bk:
        return self
    if "dlpack" in self._bk.capabilities and "dlpack" in target.capabilities:
        try:
            native = typing.cast(DLPack, target).from_dlpack(self._native)
            return new_tensor(native, target, target.device_of(native), self._dtype)
        except Exception:  # framework pair without a working DLPack path: go through host
            pass
    dev = self._dev if self._dev in target.device_set() else target.default_device()
    arr = np.ascontiguousarray(self.numpy())
    return new_tensor(target.from_numpy(arr, dev), target, dev, self._dtype)


def getitem(self: Tensor, key: Any) -> Tensor:
    bk = self._bk
    nkey = native_key(self, key)
    try:
        native = on(bk, self._dev, bk.ops.getitem, self._native, nkey)
    except Exception:
        check_index_count(self, key)
        raise
    return new_tensor(native, bk, self._dev, self._dtype)


def setitem(self: Tensor, key: Any, value: Any) -> None:
    bk = self._bk
    if isinstance(value, Tensor):
        check_same(self, value)
        v = value._native
        if value._dtype is not self._dtype:
            v = on(bk, self._dev, bk.ops.astype, v, self._dtype)
    elif type(value) in SCALARS:
        v = value
    else:
        v = coerce(self, value)._native
        v = on(bk, self._dev, bk.ops.astype, v, self._dtype)
    nkey = native_key(self, key)
    try:
        self._native = bk.setitem(self._native, nkey, v)
    except Exception as e:
        check_index_count(self, key)
        # an index out of bounds is not a shape problem, and reading x[key] to check the
        # shape would queue the same bad read on MXNet, whose error surfaces at a later sync
        if not isinstance(e, IndexError):
            _check_fits(self, key, v, e)
        raise


def write_in_place(x: Tensor, result: Tensor, op: str, other: Any = None) -> Tensor:
    """``x[...] = result`` for the in-place op ``op`` (``x += y``, ``x.add_(y)``), returning
    ``x``. Where ``result`` does not fit ``x`` (``y`` broadcast ``x`` to a larger shape):
    ShapeError naming ``op`` and the shapes, with ``x`` unchanged."""
    try:
        x[...] = result  # through the type's __setitem__: p.grad's write reaches the parameter
    except ShapeError as e:
        shapes = (x.shape, other.shape) if isinstance(other, Tensor) else (x.shape,)
        fix = f"x = x {op[:-1]} y" if op.endswith("=") else "the out-of-place form"
        raise ShapeError(
            f"Expected an operand that keeps the shape {x.shape} of the tensor written in place "
            f"by {op}. Received: shapes {' and '.join(map(str, shapes))}, whose result has "
            f"shape {result.shape}. Use {fix} for a new tensor of the result's shape.",
            op=op,
            shapes=shapes,
        ) from e
    return x


def _check_fits(x: Tensor, key: Any, value: Any, exc: Exception) -> None:
    """Called where writing ``value`` into ``x[key]`` failed with ``exc``: ShapeError where the
    value does not broadcast to the shape of ``x[key]``, else return (``exc`` stands)."""
    try:
        target = getitem(x, key).shape
        shape = _shape(x._bk, value)
    except Exception:  # a key the framework refuses to read as well: its error stands
        return
    fit = shape
    while len(fit) > len(target) and fit[0] == 1:  # NumPy writes (1, 3) into (3,) as well
        fit = fit[1:]
    if not _broadcasts(fit, target) or np.broadcast_shapes(fit, target) != target:
        raise ShapeError(
            f"Expected a value that broadcasts to the shape {target} of the indexed part "
            f"(x[{key!r}] of a tensor of shape {x.shape}). Received: a value of shape {shape}. "
            "Reshape the value, or index a part of its shape.",
            op="setitem",
            shapes=(x.shape, shape),
        ) from exc


def on(bk, dev, fn, *args):
    """Run a native op so that its result stays on ``dev``."""
    if bk.scoped_devices and dev in bk.scoped_devices:
        with bk.scope(dev):
            return fn(*args)
    return fn(*args)


def check_same(x: Tensor, y: Tensor) -> None:
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


#: the symbols of the binary operators, for the messages of ``check_shapes``
_SYMBOLS = {
    name: f"{name} ({symbol})"
    for name, symbol in (
        ("add", "+"),
        ("subtract", "-"),
        ("multiply", "*"),
        ("divide", "/"),
        ("floor_divide", "//"),
        ("remainder", "%"),
        ("pow", "**"),
        ("equal", "=="),
        ("not_equal", "!="),
        ("less", "<"),
        ("less_equal", "<="),
        ("greater", ">"),
        ("greater_equal", ">="),
    )
}


def _shape(bk: Any, v: Any) -> tuple[int, ...]:
    """The shape of an operand of a native op: a Tensor, a native tensor or a Python scalar."""
    if isinstance(v, Tensor):
        return v.shape
    if type(v) in SCALARS:
        return ()
    return tuple(bk.shape_of(v))


def _matmul_mismatch(s1: tuple[int, ...], s2: tuple[int, ...]) -> str | None:
    """Why ``s1 @ s2`` has no result under NumPy's rules, or None where it has one."""
    if not s1 or not s2:
        return "neither operand may be 0-d (multiply a scalar with * instead)"
    k1 = s1[-1]
    k2 = s2[0] if len(s2) == 1 else s2[-2]
    if k1 != k2:
        return (
            f"the last dimension of the first ({k1}) to equal the "
            f"{'only' if len(s2) == 1 else 'second-to-last'} dimension of the second ({k2})"
        )
    try:
        np.broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError:
        return f"batch dimensions that broadcast ({s1[:-2]} and {s2[:-2]} do not)"
    return None


def _broadcasts(*shapes: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


def check_shapes(bk: Any, name: str, operands: Sequence[Any], exc: BaseException) -> None:
    """Called where the native op ``name`` raised ``exc`` on ``operands`` (Tensors, native
    tensors or Python scalars): raise ``ShapeError`` naming the op and the shapes where they do
    not fit the op (NumPy's broadcasting; ``matmul``'s rules), else return so that the caller
    re-raises ``exc``. Only the failure path pays for it."""
    try:
        shapes = tuple(_shape(bk, v) for v in operands)
    except Exception:  # an operand whose shape cannot be read: the framework's error stands
        return
    op = _SYMBOLS.get(name, name)
    listed = " and ".join(str(s) for s in shapes)
    if name == "matmul" and len(shapes) == 2:
        why = _matmul_mismatch(*shapes)
        if why is not None:
            raise ShapeError(
                f"Expected shapes that fit matmul (@): {why}. Received: {shapes[0]} @ "
                f"{shapes[1]}. Transpose an operand (x.T, md.matrix_transpose) or reshape it.",
                op="matmul",
                shapes=shapes,
            ) from exc
        return
    if not _broadcasts(*shapes):
        raise ShapeError(
            f"Expected shapes that broadcast together for {op} (NumPy's rules: aligned from "
            f"the last dimension, each pair of sizes equal or one of them 1). Received: "
            f"{listed}. Reshape an operand (x.reshape, md.expand_dims) so that they broadcast.",
            op=name,
            shapes=shapes,
        ) from exc


def recover(bk: Any, dev: Any, name: str, fn: Any, operands: Sequence[Any], exc: Exception) -> Any:
    """Called where the elementwise native op ``fn`` (public name ``name``) raised ``exc`` on
    ``operands`` (Tensors, native tensors or Python scalars): ShapeError where the shapes do
    not fit (``check_shapes``). Where they broadcast but the framework's kernel could not
    (TensorFlow broadcasts at most five dimensions that do not merge, and selects in at most
    eight), ``fn`` runs again on the operands broadcast to the result's shape one dimension
    at a time and flattened, and the result takes that shape; else ``exc`` stands. Only the
    failure path pays for it."""
    check_shapes(bk, name, operands, exc)
    try:
        natives = [v._native if isinstance(v, Tensor) else v for v in operands]
        shapes = [_shape(bk, v) for v in natives]
        shape = np.broadcast_shapes(*shapes)
    except Exception:
        raise exc from None
    if name == "matmul" or len(shape) <= 1:  # not elementwise, or nothing to flatten
        raise exc
    try:
        flat = [
            v if not s else on(bk, dev, bk.ops.reshape, expand(bk, dev, v, s, shape), (-1,))
            for v, s in zip(natives, shapes, strict=True)
        ]
        return on(bk, dev, bk.ops.reshape, on(bk, dev, fn, *flat), shape)
    except Exception:
        raise exc from None


def expand(bk: Any, dev: Any, v: Any, have: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """The native ``v`` of shape ``have`` broadcast to ``shape`` one dimension at a time, each
    step a broadcast of three dimensions (the dimensions before, the one, those after), which
    every framework's kernel takes; its gradient is the matching sums."""
    ops = bk.ops
    if have == shape:
        return v
    have = (*(1,) * (len(shape) - len(have)), *have)
    v = on(bk, dev, ops.reshape, v, have)
    for i, n in enumerate(shape):
        if have[i] != n:
            before, after = int(np.prod(have[:i])), int(np.prod(have[i + 1 :]))
            v = on(bk, dev, ops.reshape, v, (before, 1, after))
            v = on(bk, dev, ops.broadcast_to, v, (before, n, after))
            have = (*have[:i], n, *have[i + 1 :])
    return on(bk, dev, ops.reshape, v, have)


def elementwise(x: Tensor, name: str, *args: Any, op: str | None = None) -> Any:
    """``call`` for a broadcasting native op of native operands ``args``: where the op raises
    on shapes that do not broadcast, ShapeError naming ``op`` (the public name, where the
    native op differs; ``name`` by default) instead of the framework's error."""
    bk = x._bk
    fn = getattr(bk.ops, name)
    try:
        return on(bk, x._dev, fn, *args)
    except Exception as e:
        return recover(bk, x._dev, op or name, fn, args, e)


def coerce(x: Tensor, value: Any) -> Tensor:
    """A non-Tensor operand (array, list, native tensor) as a Tensor on x's backend and device."""
    if isinstance(value, Tensor):
        return value
    if x._bk.tensor_types and isinstance(value, x._bk.tensor_types):
        t = asarray(value)
        if t._dev is not x._dev:
            check_same(x, t)
        return t
    return asarray(value, device=x._dev)


def operands(x: Tensor, y: Any, kind: int):
    """Native operands of one dtype, and the result dtype."""
    bk = x._bk
    xd = x._dtype
    a = x._native
    if type(y) in SCALARS:
        dt = _dt.scalar_result_type(xd, y)
        if kind == DIV and dt.kind not in "fc":
            dt = _dt.float32
        if dt is not xd:
            a = on(bk, x._dev, bk.ops.astype, a, dt)
        b = (
            y
            if (dt.kind == "b" or type(y) is not bool)
            else (float(y) if dt.kind in "fc" else int(y))
        )
        return a, b, dt
    if not isinstance(y, Tensor):
        y = coerce(x, y)
    if y._bk is not bk or y._dev is not x._dev:
        check_same(x, y)
    yd = y._dtype
    b = y._native
    dt = xd if xd is yd else _dt.result_type(xd, yd)
    if kind == DIV and dt.kind not in "fc":
        dt = _dt.float32
    if xd is not dt:
        a = on(bk, x._dev, bk.ops.astype, a, dt)
    if yd is not dt:
        b = on(bk, x._dev, bk.ops.astype, b, dt)
    return a, b, dt


def _result_dtype(dt: _dt.DType, kind: int) -> _dt.DType:
    return _dt.bool if kind == CMP else dt


def binop(x: Tensor, y: Any, name: str, kind: int) -> Tensor:
    bk = x._bk
    dev = x._dev
    tensor = type(y) is Tensor or type(y) is _CLASSES.get(bk)
    if tensor and y._dtype is x._dtype and y._bk is bk and y._dev is dev:
        dt = x._dtype  # fast path: same dtype, device and backend
        a, b = x._native, y._native
        if kind == DIV and dt.kind not in "fc":
            a, b, dt = operands(x, y, kind)
    else:
        a, b, dt = operands(x, y, kind)
    if kind == LOGIC:
        name, b = _logic(x, name, dt, b)
    fn = getattr(bk.ops, name)
    try:
        if bk.scoped_devices and dev in bk.scoped_devices:
            with bk.scope(dev):
                out = fn(a, b)
        else:
            out = fn(a, b)
    except Exception as e:
        out = recover(bk, dev, name, fn, (a, b), e)
    return new_tensor(out, bk, dev, _dt.bool if kind == CMP else dt)


#: the dtypes whose ``/`` (floating) and ``&``/``|`` (bool) need no promotion
_FAST_DTYPES = {
    DIV: frozenset(d for d in _dt.ALL if d.kind == "f"),
    LOGIC: frozenset({_dt.bool}),
}
_new = object.__new__
_ALL = frozenset(_dt.ALL)
#: (op name, adapter) -> the dtypes whose operands the bound operator hands to ``plain``; a
#: module global: torch.compile cannot wrap a frozenset held in a closure cell
_COVERED: dict[tuple[str, Any], frozenset] = {}
#: (op name, adapter) -> the adapter's native op, looked up once. A module global, not a
#: closure cell: torch.compile reads a global dict keyed by adapters, but cannot rebuild one
#: held in a closure once it has entries
_NATIVE_OPS: dict[tuple[str, Any], Any] = {}
_BOOL = _dt.bool


def _native_op(name: str, bk: Any) -> Any:
    fn = _NATIVE_OPS[name, bk] = getattr(bk.ops, name)
    return fn


#: the number of enabled ``md.autocast`` contexts open in any thread (``amp.ACTIVE``, kept here
#: by ``amp``): ``@`` reads it, one global, and casts its operands by the policy while it is set
AUTOCAST = 0
#: ``amp.cast``, given by ``amp`` with the count (it imports this module, not the reverse)
_AMP_CAST: Any = None


def set_autocast(active: int, amp_cast: Any) -> None:
    """Note ``amp.ACTIVE`` for ``@``, here and in the C fast paths (which leave ``@`` to the
    Python operator while an autocast is open), and ``amp.cast``, which ``@`` then calls."""
    global AUTOCAST, _AMP_CAST
    AUTOCAST = active
    _AMP_CAST = amp_cast
    if SPEEDUPS is not None:
        SPEEDUPS.set_autocast(active > 0)


def _autocast_operands(x: Any, y: Any) -> tuple[Any, Any]:
    """``x`` and ``y`` as ``md.matmul`` takes them under the autocast of this context."""
    if not isinstance(y, Tensor) and type(y) not in SCALARS:
        y = coerce(x, y)  # an array operand is cast like a tensor, as md.matmul casts it
    return _AMP_CAST("matmul", x, y)


def make_operator(name: str, kind: int):
    """The dunder for one binary operator, with the common case (same backend, device and
    dtype, no device scope needed) handled in its own frame: the operands are compared by
    identity, the native op is looked up once per adapter, and the result is made without
    calling ``Tensor.__init__``. The closures hold constants only (what they reach otherwise
    is a module global): torch.compile inlines them without a graph break."""
    lower = name == "matmul"  # the one operator md.autocast casts
    if kind in (ARITH, CMP):
        is_cmp = kind == CMP

        def operator(self, other):
            if lower and AUTOCAST:
                self, other = _autocast_operands(self, other)
            if type(other) is Tensor or type(other) is _CLASSES.get(self._bk):
                bk = self._bk
                dev = self._dev
                dt = self._dtype
                if (
                    other._bk is bk
                    and other._dev is dev
                    and other._dtype is dt
                    and dev not in bk.scoped_devices
                ):
                    out = _new(bk.md_tensor_class if bk in _CLASSES else tensor_class(bk))
                    fn = _NATIVE_OPS.get((name, bk)) or _native_op(name, bk)
                    try:
                        out._native = fn(self._native, other._native)
                    except Exception as e:
                        out._native = recover(bk, dev, name, fn, (self, other), e)
                    out._bk = bk
                    out._dev = dev
                    out._dtype = _BOOL if is_cmp else dt
                    return out
            return binop(self, other, name, kind)

    else:

        def operator(self, other):
            if lower and AUTOCAST:
                self, other = _autocast_operands(self, other)
            if type(other) is Tensor or type(other) is _CLASSES.get(self._bk):
                bk = self._bk
                dev = self._dev
                dt = self._dtype
                if (
                    other._bk is bk
                    and other._dev is dev
                    and other._dtype is dt
                    and dt in _FAST_DTYPES[kind]
                    and dev not in bk.scoped_devices
                ):
                    out = _new(bk.md_tensor_class if bk in _CLASSES else tensor_class(bk))
                    fn = _NATIVE_OPS.get((name, bk)) or _native_op(name, bk)
                    try:
                        out._native = fn(self._native, other._native)
                    except Exception as e:
                        out._native = recover(bk, dev, name, fn, (self, other), e)
                    out._bk = bk
                    out._dev = dev
                    out._dtype = dt
                    return out
            return binop(self, other, name, kind)

    def reflected(self, other):
        if lower and AUTOCAST:
            self, other = _autocast_operands(self, other)
        return rbinop(self, other, name, kind)

    operator.binary_op = (name, kind)  # type: ignore[attr-defined]  # read by tensor_class
    return operator, reflected


OPERATORS = {
    "add": ("add", ARITH),
    "sub": ("subtract", ARITH),
    "mul": ("multiply", ARITH),
    "truediv": ("divide", DIV),
    "floordiv": ("floor_divide", ARITH),
    "mod": ("remainder", ARITH),
    "pow": ("pow", ARITH),
    "matmul": ("matmul", ARITH),
    "and": ("logical_and", LOGIC),
    "or": ("logical_or", LOGIC),
}
COMPARISONS = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


# ---------------------------------------------------------------- per-backend Tensor classes
#: adapter -> its Tensor class (``tensor_class``); a module global, as ``_NATIVE_OPS``
_CLASSES: dict[Any, type[Tensor]] = {}


def _load_speedups() -> ModuleType | None:
    """The optional C accelerator ``multidev._speedups``, or None: where it was not built (no C
    compiler at install time) or ``MULTIDEV_SPEEDUPS=0``. Read once, at import."""
    flag = os.environ.get("MULTIDEV_SPEEDUPS", "1")
    if flag not in ("0", "1", ""):
        raise ValueError(
            f"Expected MULTIDEV_SPEEDUPS to be 0 (Python operators only) or 1 (the C fast "
            f"paths where built, the default). Received: {flag!r}. Set it to 0 or 1, or unset it."
        )
    if flag == "0":
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    return _speedups


#: the C fast paths installed into each class ``tensor_class`` makes, or None
SPEEDUPS = _load_speedups()


def new_tensor(native: Any, bk: Any, dev: Device, dtype: _dt.DType) -> Tensor:
    """A Tensor holding ``native`` of adapter ``bk``, made as ``bk``'s own class (whose
    operators have ``bk``'s ops bound in) without calling ``Tensor.__init__``. ``Tensor(...)``
    gives the same tensor as the plain class, whose operators look the op up per call."""
    try:
        cls = bk.md_tensor_class
    except AttributeError:
        cls = tensor_class(bk)
    out = _new(cls)
    out._native = native
    out._bk = bk
    out._dev = dev
    out._dtype = dtype
    return out


def _as_plain(self: Tensor) -> tuple[Any, tuple[Any, ...]]:
    """Pickle and copy a backend's Tensor as a plain ``Tensor`` (the backend classes are made
    at run time and cannot be imported by name)."""
    return Tensor, (self._native, self._bk, self._dev, self._dtype)


def tensor_class(bk: Any) -> type[Tensor]:
    """The subclass of ``Tensor`` that ``new_tensor`` makes for adapter ``bk`` (made on first
    use): its binary operators and comparisons have bk's native ops bound in, and
    ``type(other) is type(self)`` stands for the same-backend check."""
    cls = _CLASSES.get(bk) or vars(type(bk)).get("md_tensor_class")
    if cls is not None:
        _CLASSES[bk] = cls
        return cls
    body = {
        "__slots__": (),
        "__module__": Tensor.__module__,
        "__qualname__": Tensor.__qualname__,
        "__doc__": Tensor.__doc__,
        "__reduce__": _as_plain,
    }
    cls = typing.cast("type[Tensor]", type(Tensor.__name__, (Tensor,), body))
    # set after the class is made, as on Tensor: a class body holding __eq__ loses __hash__;
    # only the operators Tensor has from make_operator (array_api gives & and | its own)
    fast: dict[str, tuple[dict[_dt.DType, Any], bool, frozenset[Device]]] = {}
    for attr, fn in vars(Tensor).items():
        op = getattr(fn, "binary_op", None)
        if op is not None:
            bound = _bound_operator(cls, bk, attr, *op)
            setattr(cls, attr, bound)
            fast[attr] = bound.fast_path
    if SPEEDUPS is not None:
        # the same fast paths in the class's C slots; the Python operators stay in its dict
        SPEEDUPS.install(cls, Tensor, _BOOL, fast)
    # also an attribute of the adapter's class (not of the adapter, which then pickles as
    # before): torch.compile reconstructs a Tensor that leaves a compiled function from its
    # class's source, which a read through the adapter gives
    type(bk).md_tensor_class = cls
    _CLASSES[bk] = cls
    return cls


def _bound_operator(cls: type[Tensor], bk: Any, attr: str, name: str, kind: int):
    """``cls``'s dunder for one binary operator: for two tensors of ``cls`` (one backend) on
    one device with one dtype, the adapter's op runs directly and the result is made without
    ``Tensor.__init__``; everything else goes through ``binop``.

    An adapter op may carry ``plain`` and ``plain_dtypes``: the same op without the adapter's
    wrapper, valid for two operands of one of those dtypes (Paddle's ops widen dtypes that
    lack a kernel; float32 never needs it). The closures hold the class, the op and plain
    constants; the adapter is read from ``self`` (torch.compile cannot trace an adapter held
    in a closure cell), so that torch.compile inlines them without a graph break."""
    fn = getattr(bk.ops, name)
    plain = getattr(fn, "plain", None)
    dtypes = frozenset(_dt.EVERY if kind in (ARITH, CMP) else _FAST_DTYPES[kind])
    fns = {dt: fn for dt in dtypes}
    covered = dtypes
    if plain is not None:
        covered = dtypes & fn.plain_dtypes
        fns.update((dt, plain) for dt in covered)
    is_cmp = kind == CMP
    lower = name == "matmul"  # the one operator md.autocast casts
    scoped = bk.scoped_devices
    one = {id(f) for f in fns.values()}
    if len(dtypes) == len(_dt.EVERY) and len(one) == 1 and not scoped:
        fn = fns[_dt.float32]

        def operator(self, other):
            if lower and AUTOCAST:
                self, other = _autocast_operands(self, other)
            if type(other) is cls:
                dt = self._dtype
                dev = self._dev
                if other._dtype is dt and other._dev is dev:
                    out = _new(type(self))
                    try:
                        out._native = fn(self._native, other._native)
                    except Exception as e:
                        out._native = recover(self._bk, dev, name, fn, (self, other), e)
                    out._bk = self._bk
                    out._dev = dev
                    out._dtype = _BOOL if is_cmp else dt
                    return out
            return binop(self, other, name, kind)

    elif not scoped and (plain is None or covered >= _ALL):
        # ``/`` and ``&``/``|``: the dtypes that need no promotion, read as on Tensor; or an
        # op whose ``plain`` serves multidev's common dtypes (PyTorch's, not its unsigned
        # shell dtypes): ``covered``, the rest through ``binop``
        fn = fns[next(iter(covered))]
        _COVERED[name, bk] = covered

        def operator(self, other):
            if lower and AUTOCAST:
                self, other = _autocast_operands(self, other)
            if type(other) is cls:
                dt = self._dtype
                dev = self._dev
                if other._dtype is dt and other._dev is dev and dt in _COVERED[name, self._bk]:
                    out = _new(type(self))
                    try:
                        out._native = fn(self._native, other._native)
                    except Exception as e:
                        out._native = recover(self._bk, dev, name, fn, (self, other), e)
                    out._bk = self._bk
                    out._dev = dev
                    out._dtype = _BOOL if is_cmp else dt
                    return out
            return binop(self, other, name, kind)

    else:
        fast = fns.get

        def operator(self, other):
            if lower and AUTOCAST:
                self, other = _autocast_operands(self, other)
            if type(other) is cls:
                dt = self._dtype
                dev = self._dev
                f = fast(dt)
                if other._dtype is dt and other._dev is dev and f is not None and dev not in scoped:
                    out = _new(type(self))
                    try:
                        out._native = f(self._native, other._native)
                    except Exception as e:
                        out._native = recover(self._bk, dev, name, f, (self, other), e)
                    out._bk = self._bk
                    out._dev = dev
                    out._dtype = _BOOL if is_cmp else dt
                    return out
            return binop(self, other, name, kind)

    operator.__name__ = operator.__qualname__ = attr
    # what the fast path takes, for multidev._speedups: the op per dtype, whether the result
    # is bool, and the devices that need the Python operator (a device scope)
    operator.fast_path = (fns, is_cmp, scoped)  # type: ignore[attr-defined]
    return operator


def _logic(x: Tensor, name: str, dt: _dt.DType, other: Any) -> tuple[str, Any]:
    """The op of ``&`` or ``|`` on x's backend for ``dt``: logical for bool, bitwise for
    integers; a Python scalar operand becomes a 0-d tensor (not every framework's op takes
    one)."""
    if dt.kind not in "biu":
        raise TypeError(f"Expected bool or integer tensors for & and |. Received: {dt}")
    if type(other) in SCALARS:
        other = x._bk.full((), other, dt, x._dev)
    if dt.kind == "b":
        return name, other
    return ("bitwise_and" if name == "logical_and" else "bitwise_or"), other


def rbinop(x: Tensor, y: Any, name: str, kind: int) -> Tensor:
    if type(y) not in SCALARS:
        return binop(coerce(x, y), x, name, kind)
    a, b, dt = operands(x, y, kind)
    bk = x._bk
    if kind == LOGIC:
        name, b = _logic(x, name, dt, b)
    elif type(b) in SCALARS:
        # a 0-d tensor of the result dtype: a framework may type a leading Python scalar on
        # its own (TensorFlow makes 0 an int32 whatever the other operand is)
        b = bk.full((), b, dt, x._dev)
    fn = getattr(bk.ops, name)
    try:
        out = on(bk, x._dev, fn, b, a)
    except Exception as e:
        out = recover(bk, x._dev, name, fn, (b, a), e)
    return new_tensor(out, bk, x._dev, _result_dtype(dt, kind))


#: unary ops that are the identity on bool and unsigned input (``|x|``, ``max(x, 0)``): the
#: core answers them with a copy, so adapters need no kernel of theirs for those dtypes
_IDENTITY_ON_UNSIGNED = frozenset({"abs", "relu"})


def unop(x: Tensor, name: str) -> Tensor:
    """The adapter's elementwise op ``name`` on x, keeping x's dtype; TypeError for ``-`` on
    bool (as in NumPy and PyTorch)."""
    bk = x._bk
    if x._dtype.kind in "bu":
        if name in _IDENTITY_ON_UNSIGNED:
            name = "copy"
        elif name == "negative" and x._dtype is _dt.bool:
            raise TypeError(
                "Expected a numeric tensor for unary -. Received: a bool tensor. "
                "Invert a mask with ~x (logical_not) instead."
            )
    return new_tensor(on(bk, x._dev, getattr(bk.ops, name), x._native), bk, x._dev, x._dtype)


def native_key(x: Tensor, key: Any) -> Any:
    """Index key with Tensors replaced by native tensors (checked for backend and device)."""
    if type(key) is tuple:
        return tuple(_native_key_item(x, k) for k in key)
    return _native_key_item(x, key)


def check_index_count(x: Tensor, key: Any) -> None:
    """Raise IndexError if ``key`` indexes more dimensions than ``x`` has (NumPy's rule: None
    and ``...`` index none, a bool mask as many as it has, any other item one). Called only
    after the framework refused a key, so that every backend refuses this one alike."""
    key = key if type(key) is tuple else (key,)
    used = 0
    for k in key:
        if k is None or k is Ellipsis:
            continue
        mask = (isinstance(k, Tensor) and k._dtype is _dt.bool) or (
            isinstance(k, np.ndarray) and k.dtype == np.bool_
        )
        used += k.ndim if mask else 1
    if used > len(x.shape):
        raise IndexError(
            f"Expected at most {len(x.shape)} indices for a {len(x.shape)}-d tensor. "
            f"Received: {used} in {key!r}. Index with fewer items, or add axes with None."
        )


def _native_key_item(x: Tensor, k: Any) -> Any:
    if isinstance(k, Tensor):
        check_same(x, k)
        return k._native
    if isinstance(k, (list, np.ndarray)):
        return coerce(x, k)._native
    if type(k) is slice and any(isinstance(v, Tensor) for v in (k.start, k.stop, k.step)):
        # slice bounds are Python ints in every framework: 0-d integer tensors give theirs
        return slice(
            *(v.__index__() if isinstance(v, Tensor) else v for v in (k.start, k.stop, k.step))
        )
    return k


#: the binary ops that ``binop`` may hand a Python scalar operand (``x + 1``, ``x < 0.5``,
#: ``md.maximum(x, 0)``): the arithmetic operators but matmul, maximum, minimum and the
#: comparisons (``rbinop`` and ``&``/``|`` make a scalar a 0-d tensor first)
SCALAR_OPERAND_OPS = (
    *(op for op, kind in OPERATORS.values() if kind in (ARITH, DIV) and op != "matmul"),
    *("maximum", "minimum", *COMPARISONS.values()),
)
