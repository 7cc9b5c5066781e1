"""The one place where ``Tensor`` gets its operators and the methods that forward to
functions: the binary operators built by the dispatch layer, the unary and in-place ones,
indexing, placement, and the Array-API-named methods of ``multidev.ops``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import autograd, compat, dispatch, ops
from . import dtypes as _dt
from .tensors import Tensor

__all__ = ["in_place", "install"]

#: the operators whose in-place form writes into the tensor's storage
_IN_PLACE = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow"})
#: their symbols, for the messages of errors
_SYMBOLS = {
    "add": "+=",
    "sub": "-=",
    "mul": "*=",
    "truediv": "/=",
    "floordiv": "//=",
    "mod": "%=",
    "pow": "**=",
}


def _invert(self: Tensor) -> Tensor:
    if self._dtype.kind in "iu":
        return dispatch.unop(self, "bitwise_invert")
    if self._dtype is not _dt.bool:
        raise TypeError(f"Expected a bool or integer tensor for ~. Received: {self._dtype}")
    return dispatch.unop(self, "logical_not")


def in_place(op: Callable[[Any, Any], Tensor], symbol: str) -> Callable[[Tensor, Any], Tensor]:
    """An in-place operator (``symbol``, e.g. ``+=``): the result written into the tensor's own
    storage."""

    def iop(self: Tensor, other: Any) -> Tensor:
        return dispatch.write_in_place(self, op(self, other), symbol, other)

    return iop


def _reshape(self: Tensor, *shape: Any) -> Tensor:
    return ops.reshape(self, shape[0] if len(shape) == 1 else shape)


def _transposed(self: Tensor) -> Tensor:
    return ops.permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))


def _deepcopy(self: Tensor, memo: dict[int, Any]) -> Tensor:
    """A copy with its own storage on the same device, made by the backend's copy op
    (nothing framework-specific is pickled)."""
    bk = self._bk
    native = dispatch.on(bk, self._dev, bk.ops.copy, self._native)
    out = dispatch.new_tensor(native, bk, self._dev, self._dtype)
    memo[id(self)] = out
    return out


def install() -> None:
    """Attach every operator and forwarding method to ``Tensor``."""
    for dunder, (name, kind) in dispatch.OPERATORS.items():
        fwd, rev = dispatch.make_operator(name, kind)
        fwd.__name__, rev.__name__ = f"__{dunder}__", f"__r{dunder}__"
        setattr(Tensor, fwd.__name__, fwd)
        setattr(Tensor, rev.__name__, rev)
        if dunder in _IN_PLACE:
            setattr(Tensor, f"__i{dunder}__", in_place(fwd, _SYMBOLS[dunder]))
    for dunder, name in dispatch.COMPARISONS.items():
        fwd, _ = dispatch.make_operator(name, dispatch.CMP)
        fwd.__name__ = f"__{dunder}__"
        setattr(Tensor, fwd.__name__, fwd)
    methods: dict[str, Any] = {
        "__invert__": _invert,
        "__neg__": lambda self: dispatch.unop(self, "negative"),
        "__abs__": ops.abs,
        "__getitem__": dispatch.getitem,
        "__setitem__": dispatch.setitem,
        "to": dispatch.to,
        "to_device": dispatch.to_device,
        "to_backend": dispatch.to_backend,
        "T": property(_transposed),
        "astype": lambda self, dtype: ops.astype(self, dtype),
        "reshape": _reshape,
        "sum": ops.sum,
        "mean": ops.mean,
        "max": ops.max,
        "argmax": ops.argmax,
        "abs": ops.abs,
        "exp": ops.exp,
        "backward": autograd.backward,
        "__deepcopy__": _deepcopy,
        **compat.tensor_methods(),
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)


install()
