"""PyTorch's padding layers (``nn.ZeroPad2d``, ``nn.ReflectionPad1d``, ...): ``F.pad`` of the
last one, two or three dimensions, with PyTorch's arguments and printing."""

from __future__ import annotations

from typing import Any

from ..tensors import Tensor
from . import functional as F
from .module import Block

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]


class _Pad(Block):
    """``F.pad(x, padding, mode)`` over the last ``dims`` dimensions; ``padding`` is one int
    for every side or the (before, after) pairs from the last dimension back."""

    dims = 1
    mode = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        n = 2 * self.dims
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (padding,) * n
        if not isinstance(padding, (tuple, list)) or len(padding) != n:
            raise ValueError(
                f"Expected an int or {n} ints for the padding of {type(self).__name__}. "
                f"Received: {padding!r}"
            )
        self.padding = tuple(padding)

    def forward(self, X: Any) -> Tensor:
        return F.pad(X, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_Pad):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, X: Any) -> Tensor:
        return F.pad(X, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad):
    """Pad the last dimension with ``value``."""


class ConstantPad2d(_ConstantPad):
    """Pad the last two dimensions with ``value``."""

    dims = 2


class ConstantPad3d(_ConstantPad):
    """Pad the last three dimensions with ``value``."""

    dims = 3


class _ZeroPad(_ConstantPad):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad):
    """Pad the last dimension with zeros."""


class ZeroPad2d(_ZeroPad):
    """Pad the last two dimensions with zeros."""

    dims = 2


class ZeroPad3d(_ZeroPad):
    """Pad the last three dimensions with zeros."""

    dims = 3


class ReflectionPad1d(_Pad):
    """Pad the last dimension with its reflection (the edge not repeated)."""

    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pad the last two dimensions with their reflection."""

    dims = 2


class ReflectionPad3d(ReflectionPad1d):
    """Pad the last three dimensions with their reflection."""

    dims = 3


class ReplicationPad1d(_Pad):
    """Pad the last dimension with copies of its edge."""

    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pad the last two dimensions with copies of their edges."""

    dims = 2


class ReplicationPad3d(ReplicationPad1d):
    """Pad the last three dimensions with copies of their edges."""

    dims = 3


class CircularPad1d(_Pad):
    """Pad the last dimension by wrapping around."""

    mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pad the last two dimensions by wrapping around."""

    dims = 2


class CircularPad3d(CircularPad1d):
    """Pad the last three dimensions by wrapping around."""

    dims = 3
